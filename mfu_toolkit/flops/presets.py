"""Published model configurations, each with the source its numbers come from.

Look-ups are case-insensitive and ignore ``-``, ``_`` and spaces (``Llama3_8B`` finds
``llama3-8b``); an unknown name raises ``UnknownPresetError`` listing close matches.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from .recsys import DLRMConfig, HSTUConfig, MLPConfig
from .transformer import Component, FlopsConfigError, TransformerConfig

__all__ = ["Preset", "UnknownPresetError", "PRESETS", "get_preset", "list_presets"]

ModelConfig = TransformerConfig | DLRMConfig | HSTUConfig | MLPConfig


class UnknownPresetError(FlopsConfigError, LookupError):
    """No preset of that name; the message lists close matches and the available names."""


@dataclass(frozen=True)
class Preset:
    """A named, sourced configuration.

    ``published`` holds numbers the source states (e.g. ``{"params": 8.03e9}``) so tests and
    notebooks can compare the estimate against them. ``derived`` holds numbers this project
    derived from the source's configuration and no source states (kept apart so nobody cites
    them as published). A preset has a ``seq_len`` only where its source states the training
    sequence length; the others need ``seq_len=`` / ``--seq-len`` for every FLOPs count.
    """

    name: str
    config: ModelConfig
    source: str
    description: str = ""
    aliases: tuple[str, ...] = ()
    published: dict[str, float] = field(default_factory=dict, compare=False)
    derived: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def kind(self) -> str:
        if isinstance(self.config, TransformerConfig):
            return "transformer"
        if isinstance(self.config, DLRMConfig):
            return "dlrm"
        if isinstance(self.config, HSTUConfig):
            return "hstu"
        return "mlp"


# --------------------------------------------------------------------------------------------
# sources

_HF = "https://huggingface.co/{}/blob/main/config.json"
_GPT3 = (
    "Brown et al. 2020, 'Language Models are Few-Shot Learners', arXiv:2005.14165, Table 2.1; "
    "seq_len 2048 from Appendix B ('we always train on sequences of the full n_ctx = 2048 token "
    "context window')"
)
_PALM = (
    "Chowdhery et al. 2022, 'PaLM: Scaling Language Modeling with Pathways', arXiv:2204.02311, "
    "Table 1 and Sec 2 (SwiGLU with d_ff = 4 d_model, multi-query attention, head dim 256, "
    "shared input/output embeddings, 256k vocabulary, no biases); seq_len 2048 from Sec 5 "
    "('a sequence length of 2048 was used for all models')"
)
_LLAMA3 = (
    "Llama Team 2024, 'The Llama 3 Herd of Models', arXiv:2407.21783, Table 3; vocabulary "
    "128256 and untied embeddings from https://huggingface.co/meta-llama/{repo}/blob/main/"
    "config.json; seq_len 8192, the main pre-training length: {seq_source}"
)
_LLAMA3_BLOG = (
    "https://ai.meta.com/blog/meta-llama-3/ ('We trained the models on sequences of 8,192 tokens')"
)
_LLAMA3_PAPER = (
    "Sec 3.4.1 ('a batch size of 8M sequences of 8,192 tokens' after the first 252M tokens; "
    "Sec 3.4: 'We use similar recipes to pre-train the 8B and 70B models')"
)
_MIXTRAL = (
    "Jiang et al. 2024, 'Mixtral of Experts', arXiv:2401.04088, Table 1 (dim 4096, "
    "32 layers, head_dim 128, hidden_dim 14336, 32 heads, 8 KV heads, context 32768, "
    "vocab 32000, 8 experts, top-2); 46.7B total / 12.9B active from "
    "https://mistral.ai/news/mixtral-of-experts/. No training sequence length is "
    "published (32768 is the context window): pass seq_len"
)
_MISTRAL7B = (
    "Jiang et al. 2023, 'Mistral 7B', arXiv:2310.06825, Table 1 (dim 4096, n_layers 32, "
    "head_dim 128, hidden_dim 14336, n_heads 32, n_kv_heads 8, window_size 4096, context_len "
    "8192, vocab_size 32000); untied embeddings and 7.24B parameters from "
    "https://huggingface.co/mistralai/Mistral-7B-v0.1. No training sequence length is published "
    "(context_len is a context window): pass seq_len"
)
_GEMMA2 = (
    "Gemma Team 2024, 'Gemma 2: Improving Open Language Models at a Practical Size', "
    "arXiv:2408.00118, Table 1 (9B: d_model 3584, 42 layers, GeGLU, feedforward dim 28672 = "
    "gate + up of 14336 each as in https://huggingface.co/google/gemma-2-9b/blob/main/"
    "config.json, 16 heads, 8 KV heads, head size 256, sliding window 4096, global span 8192, "
    "vocab 256128, tied embeddings), Sec 2 (local and global attention alternate: 21 layers "
    "each; pre- and post-norms, 4 per layer), Table 2 (917,962,752 embedding and 8,324,201,984 "
    "non-embedding parameters). No training sequence length is published (8192 is the context "
    "length): pass seq_len"
)
_DEEPSEEK_V3 = (
    "DeepSeek-AI 2024, 'DeepSeek-V3 Technical Report', arXiv:2412.19437, Sec 4.2 (61 layers, "
    "hidden 7168, 128 heads of 128, KV compression 512, query compression 1536, decoupled RoPE "
    "head dim 64, all FFNs but the first three MoE with 1 shared + 256 routed experts of width "
    "2048, 8 routed per token, MTP depth 1; 'we set the maximum sequence length to 4K during "
    "pre-training'; '671B total parameters, of which 37B are activated for each token'); dense "
    "d_ff 18432, vocabulary 129280 and untied embeddings from https://huggingface.co/deepseek-ai/"
    "DeepSeek-V3/blob/main/config.json; https://github.com/deepseek-ai/DeepSeek-V3 README: "
    "'685B, which includes 671B of the Main Model weights and 14B of the Multi-Token Prediction "
    "(MTP) Module weights'; README_WEIGHTS.md: main model 'Activation parameters: 36.6B "
    "(including 0.9B for the output Head)', MTP '11.5B unique parameters (excluding the shared "
    "0.9B Embedding and 0.9B output Head)'. Context later extended to 32K and 128K (Sec 4.3: "
    "pass seq_len for those phases)"
)
_LLAMA2 = (
    "Touvron et al. 2023, 'Llama 2: Open Foundation and Fine-Tuned Chat Models', "
    "arXiv:2307.09288, Table 1 (sizes 7B, 13B, 70B; pretraining 'Context Length' 4k; GQA for "
    "70B); shapes from " + _HF
)
_BERT = (
    "Devlin et al. 2019, 'BERT', arXiv:1810.04805, Sec 3 (L=24, H=1024, A=16, 'Total "
    "Parameters=340M'); vocabulary 30522, 512 positions, 2 token types from "
    + _HF.format("google-bert/bert-large-uncased")
    + "; seq_len 512 from the MLPerf Training reference "
    "(https://github.com/mlcommons/training/tree/master/language_model/tensorflow/bert, "
    "max_seq_length=512). Bidirectional: keep causal off. The MLM head runs here on "
    "every position (the MLPerf run predicts at most 76 per sequence)"
)
_NEOX = (
    "Black et al. 2022, 'GPT-NeoX-20B', arXiv:2204.06745, Table 1 (44 layers, d_model "
    "6144, 64 heads, sequence length 2048) and "
    + _HF.format("EleutherAI/gpt-neox-20b")
    + " (vocab 50432, intermediate 24576, untied embed_out without bias); parameter "
    "count 20,554,567,680 from https://huggingface.co/EleutherAI/gpt-neox-20b"
)
_QWEN3 = (
    "Qwen Team 2025, 'Qwen3 Technical Report', arXiv:2505.09388, Sec 3.2 (general stage: 'a "
    "sequence length of 4,096 tokens'; the long-context stage uses 32,768: pass seq_len for it); "
    "shapes from https://huggingface.co/{0}/blob/main/config.json; parameter counts from the "
    "model card https://huggingface.co/{0}"
)
_GPT_OSS = (
    "OpenAI 2025, 'gpt-oss-120b & gpt-oss-20b Model Card', arXiv:2508.10925, Table 1 (total and "
    "active parameters; the active count leaves out the input embedding); shapes from "
    + _HF
    + " (sliding window 128 on every other layer starting with the first, attention biases and "
    "sinks, router and expert biases, untied unembedding). No training sequence length is "
    "published: pass seq_len"
)
_MIXTRAL_8X22B = (
    "shapes from " + _HF.format("mistralai/Mixtral-8x22B-v0.1") + " (hidden 6144, 56 "
    "layers, 48 heads, 8 KV heads, intermediate 16384, 8 experts, top-2, vocab 32768); "
    "'141B parameters', '39B active' from https://mistral.ai/news/mixtral-8x22b/. No "
    "training sequence length is published (65536 is the context window): pass seq_len"
)

# --------------------------------------------------------------------------------------------
# transformers: what a family's sizes share, then one row per model

# fmt: off
_PALM_SHAPE = dict(n_kv_heads=1, head_dim=256, ffn_type="swiglu", vocab_size=256_000,
                   tied_embeddings=True, seq_len=2048)
_LLAMA3_SHAPE = dict(n_kv_heads=8, ffn_type="swiglu", vocab_size=128_256, tied_embeddings=False,
                     seq_len=8192)
_LLAMA2_SHAPE = dict(ffn_type="swiglu", vocab_size=32000, tied_embeddings=False, seq_len=4096)
_QWEN3_SHAPE = dict(head_dim=128, ffn_type="swiglu", vocab_size=151_936, tied_embeddings=False,
                    seq_len=4096, qk_norm=True)
_QWEN3_MOE = dict(n_experts=128, top_k=8)
_GPT_OSS_SHAPE = dict(d_model=2880, n_heads=64, n_kv_heads=8, head_dim=64, d_ff=2880,
                      ffn_type="swiglu", vocab_size=201_088, tied_embeddings=False, top_k=4,
                      attention_window=(128, 0), bias=True, norm_bias=False, output_bias=False,
                      router_bias=True, attention_sinks=True)
_LLAMA3_DESCRIPTION = "Llama 3 dense decoder with grouped-query attention (8 KV heads)"
_MIXTRAL_DESCRIPTION = "Sparse mixture of experts: 8 SwiGLU experts per layer, 2 per token"
_QWEN3_DENSE_DESCRIPTION = "Qwen3 dense decoder with query/key norms"
_QWEN3_MOE_DESCRIPTION = "Qwen3 mixture of experts (128 experts, top-8) with query/key norms"
# fmt: on
_BERT_D, _BERT_SEQ = 1024, 512
_BERT_BLOCKS = (
    Component("token_type_embedding", 0.0, params=2 * _BERT_D, note="lookup: 0 FLOPs"),
    Component(
        "pooler_and_nsp",
        2.0 * _BERT_D * (_BERT_D + 2) / _BERT_SEQ,
        params=_BERT_D * _BERT_D + _BERT_D + 2 * _BERT_D + 2,
        note="on the [CLS] token only: 2 d (d + 2) per sequence of 512",
    ),
    Component(
        "mlm_transform",
        2.0 * _BERT_D * _BERT_D,
        params=_BERT_D * _BERT_D + _BERT_D + 2 * _BERT_D + 30522,
        note="dense + LayerNorm before the tied decoder (and its bias), every position",
    ),
)

_Row = tuple[str, dict[str, Any], str, str, dict[str, Any]]

# (name, config fields, source, description, the Preset's other fields: aliases, published, derived)
# PaLM's training_flops_per_token is its Table 22 figure (6N + 12LHQT) for each size.
# fmt: off
_TRANSFORMER_ROWS: list[_Row] = [
    ("gpt3-175b",
     dict(n_layers=96, d_model=12288, n_heads=96, head_dim=128, d_ff=4 * 12288, ffn_type="gelu",
          vocab_size=50257,  # GPT-2 byte-level BPE (Radford et al. 2019)
          tied_embeddings=True, seq_len=2048, max_seq_len=2048, pos_embedding="learned", bias=True),
     _GPT3, "GPT-3 175B dense decoder (learned positions, biases, tied embeddings)",
     dict(aliases=("gpt-3", "gpt3"), published={"params": 175.0e9})),
    ("palm-8b", dict(_PALM_SHAPE, n_layers=32, d_model=4096, n_heads=16, d_ff=4 * 4096),
     _PALM, "PaLM 8B dense decoder",
     dict(published={"params": 8.63e9, "training_flops_per_token": 0.0550e12})),
    ("palm-62b", dict(_PALM_SHAPE, n_layers=64, d_model=8192, n_heads=32, d_ff=4 * 8192),
     _PALM, "PaLM 62B dense decoder",
     dict(published={"params": 62.50e9, "training_flops_per_token": 0.388e12})),
    ("palm-540b", dict(_PALM_SHAPE, n_layers=118, d_model=18432, n_heads=48, d_ff=4 * 18432),
     _PALM, "PaLM 540B dense decoder",
     dict(published={"params": 540.35e9, "training_flops_per_token": 3.28e12})),
    ("llama3-8b", dict(_LLAMA3_SHAPE, n_layers=32, d_model=4096, n_heads=32, d_ff=14336),
     _LLAMA3.format(repo="Meta-Llama-3-8B", seq_source=_LLAMA3_BLOG), _LLAMA3_DESCRIPTION,
     dict(published={"params": 8.03e9})),
    ("llama3-70b", dict(_LLAMA3_SHAPE, n_layers=80, d_model=8192, n_heads=64, d_ff=28672),
     _LLAMA3.format(repo="Meta-Llama-3-70B", seq_source=_LLAMA3_BLOG), _LLAMA3_DESCRIPTION,
     dict(published={"params": 70.6e9})),
    ("llama3-405b", dict(_LLAMA3_SHAPE, n_layers=126, d_model=16384, n_heads=128, d_ff=53248),
     _LLAMA3.format(repo="Llama-3.1-405B", seq_source=_LLAMA3_PAPER), _LLAMA3_DESCRIPTION,
     dict(published={"params": 405.9e9})),
    ("llama3.1-8b", dict(_LLAMA3_SHAPE, n_layers=32, d_model=4096, n_heads=32, d_ff=14336),
     _LLAMA3.format(repo="Llama-3.1-8B", seq_source=_LLAMA3_PAPER)
     + "; context later extended to 131072 (Sec 3.4.2: pass seq_len for those stages)",
     "Llama 3.1 8B: the Llama 3 8B architecture with a 128K context",
     dict(published={"params": 8.03e9})),
    ("mixtral-8x7b",
     dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128, d_ff=14336,
          ffn_type="swiglu", vocab_size=32000, tied_embeddings=False, n_experts=8, top_k=2,
          d_ff_expert=14336),
     _MIXTRAL, _MIXTRAL_DESCRIPTION,
     dict(aliases=("mixtral",), published={"params": 46.7e9, "active_params": 12.9e9})),
    ("mistral-7b",
     dict(n_layers=32, d_model=4096, n_heads=32, n_kv_heads=8, head_dim=128, d_ff=14336,
          ffn_type="swiglu", vocab_size=32000, tied_embeddings=False, attention_window=4096),
     _MISTRAL7B, "Mistral 7B dense decoder: GQA and a 4096-token sliding window in every layer",
     dict(aliases=("mistral",), published={"params": 7.24e9})),
    ("gemma-2-9b",
     dict(n_layers=42, d_model=3584, n_heads=16, n_kv_heads=8, head_dim=256, d_ff=14336,
          ffn_type="geglu", vocab_size=256_128, tied_embeddings=True, attention_window=(4096, 0),
          norms_per_layer=4),
     _GEMMA2, "Gemma 2 9B: local (4096-token window) and global attention layers alternate",
     dict(published={"embedding_params": 917_962_752, "non_embedding_params": 8_324_201_984})),
    ("deepseek-v3",
     dict(n_layers=61, d_model=7168, n_heads=128, d_ff=18432, ffn_type="swiglu",
          vocab_size=129_280, tied_embeddings=False, seq_len=4096, n_experts=256, top_k=8,
          n_shared_experts=1, d_ff_expert=2048, d_ff_shared=2048, n_dense_layers=3,
          q_lora_rank=1536, kv_lora_rank=512, qk_nope_head_dim=128, qk_rope_head_dim=64,
          v_head_dim=128, n_mtp_modules=1),
     _DEEPSEEK_V3, "DeepSeek-V3: MLA, 1 shared + 256 routed experts (top-8), 1 MTP module",
     dict(aliases=("deepseek-v3-base",),
          published={"params": 671e9, "active_params": 37e9,
                     "active_params_without_input_embedding": 36.6e9, "mtp_params": 11.5e9})),
    ("llama2-7b",
     dict(_LLAMA2_SHAPE, n_layers=32, d_model=4096, n_heads=32, n_kv_heads=32, d_ff=11008),
     _LLAMA2.format("meta-llama/Llama-2-7b-hf"), "Llama 2 dense decoder",
     dict(published={"params": 7e9})),
    ("llama2-13b",
     dict(_LLAMA2_SHAPE, n_layers=40, d_model=5120, n_heads=40, n_kv_heads=40, d_ff=13824),
     _LLAMA2.format("meta-llama/Llama-2-13b-hf"), "Llama 2 dense decoder",
     dict(published={"params": 13e9})),
    ("llama2-70b",
     dict(_LLAMA2_SHAPE, n_layers=80, d_model=8192, n_heads=64, n_kv_heads=8, d_ff=28672),
     _LLAMA2.format("meta-llama/Llama-2-70b-hf"),
     "Llama 2 dense decoder with grouped-query attention",
     dict(published={"params": 70e9})),
    ("bert-large",
     dict(n_layers=24, d_model=_BERT_D, n_heads=16, d_ff=4096, ffn_type="gelu", vocab_size=30522,
          tied_embeddings=True, seq_len=_BERT_SEQ, max_seq_len=512, pos_embedding="learned",
          bias=True, extra_blocks=_BERT_BLOCKS),
     _BERT, "BERT-large encoder (bidirectional) with its pre-training heads",
     dict(aliases=("bert", "mlperf-bert"), published={"params": 340e6})),
    ("gpt-neox-20b",
     dict(n_layers=44, d_model=6144, n_heads=64, d_ff=24576, ffn_type="gelu", vocab_size=50432,
          tied_embeddings=False, seq_len=2048, bias=True, output_bias=False),
     _NEOX, "GPT-NeoX-20B dense decoder (biases, LayerNorm, partial rotary)",
     dict(published={"params": 20_554_567_680})),
    ("qwen3-8b",
     dict(_QWEN3_SHAPE, n_layers=36, d_model=4096, n_heads=32, n_kv_heads=8, d_ff=12288),
     _QWEN3.format("Qwen/Qwen3-8B"), _QWEN3_DENSE_DESCRIPTION,
     dict(published={"params": 8.2e9, "non_embedding_params": 6.95e9})),
    ("qwen3-32b",
     dict(_QWEN3_SHAPE, n_layers=64, d_model=5120, n_heads=64, n_kv_heads=8, d_ff=25600),
     _QWEN3.format("Qwen/Qwen3-32B"), _QWEN3_DENSE_DESCRIPTION,
     dict(published={"params": 32.8e9, "non_embedding_params": 31.2e9})),
    ("qwen3-30b-a3b",
     dict(_QWEN3_SHAPE, **_QWEN3_MOE, n_layers=48, d_model=2048, n_heads=32, n_kv_heads=4,
          d_ff=6144, d_ff_expert=768),
     _QWEN3.format("Qwen/Qwen3-30B-A3B"), _QWEN3_MOE_DESCRIPTION,
     dict(published={"params": 30.5e9, "active_params": 3.3e9, "non_embedding_params": 29.9e9})),
    ("qwen3-235b-a22b",
     dict(_QWEN3_SHAPE, **_QWEN3_MOE, n_layers=94, d_model=4096, n_heads=64, n_kv_heads=4,
          d_ff=12288, d_ff_expert=1536),
     _QWEN3.format("Qwen/Qwen3-235B-A22B"), _QWEN3_MOE_DESCRIPTION,
     dict(published={"params": 235e9, "active_params": 22e9, "non_embedding_params": 234e9})),
    ("gpt-oss-20b", dict(_GPT_OSS_SHAPE, n_layers=24, n_experts=32),
     _GPT_OSS.format("openai/gpt-oss-20b"),
     "gpt-oss MoE (32 experts, top-4), alternating 128-token windows",
     dict(published={"params": 20.91e9, "active_params_without_input_embedding": 3.61e9})),
    ("gpt-oss-120b", dict(_GPT_OSS_SHAPE, n_layers=36, n_experts=128),
     _GPT_OSS.format("openai/gpt-oss-120b"),
     "gpt-oss MoE (128 experts, top-4), alternating 128-token windows",
     dict(published={"params": 116.83e9, "active_params_without_input_embedding": 5.13e9})),
    ("mixtral-8x22b",
     dict(n_layers=56, d_model=6144, n_heads=48, n_kv_heads=8, head_dim=128, d_ff=16384,
          ffn_type="swiglu", vocab_size=32768, tied_embeddings=False, n_experts=8, top_k=2),
     _MIXTRAL_8X22B, _MIXTRAL_DESCRIPTION,
     dict(published={"params": 141e9, "active_params": 39e9})),
]
# fmt: on

# --------------------------------------------------------------------------------------------
# recommendation models

_MLPERF_DCNV2 = (
    "MLPerf Training reference recommendation_v2/torchrec_dlrm "
    "(https://github.com/mlcommons/training/tree/master/recommendation_v2/torchrec_dlrm, "
    "README.MD): --embedding_dim 128 --dense_arch_layer_sizes 512,256,128 "
    "--over_arch_layer_sizes 1024,1024,512,256,1 --interaction_type=dcn --dcn_num_layers=3 "
    "--dcn_low_rank_dim=512, --num_embeddings_per_feature and --multi_hot_sizes as below; "
    "13 dense + 26 sparse Criteo 1TB features. The 32,060,928 forward FLOPs per sample is this "
    "project's count of that configuration's weight matmuls (see recsys.py), not a number any "
    "MLPerf document states. Read at mlcommons/training@aa344c7fb900e82ed19fb94aebfed50c63ab2204: "
    "README.MD lines 150-170 (the MLPerf run: --num_embeddings_per_feature, --adagrad) and 200 "
    "(--multi_hot_sizes); dlrm_main.py lines 786-789 (--adagrad: torch.optim.Adagrad on the "
    "tables, 'TorchRec will use the FBGEMM implementation of EXACT_ADAGRAD', one accumulator per "
    "element) and lines 731-739 (EmbeddingBagConfig without a data_type: TorchRec's "
    "torchrec/modules/embedding_configs.py default DataType.FP32)"
)

_HSTU = (
    "Zhai et al. 2024, 'Actions Speak Louder than Words: Trillion-Parameter Sequential "
    "Transducers for Generative Recommendations', arXiv:2402.17152 (HSTU-large); config "
    "https://github.com/facebookresearch/generative-recommenders/blob/main/configs/{path}"
)

# --num_embeddings_per_feature and --multi_hot_sizes of the MLPerf reference (README.MD).
# fmt: off
_MLPERF_ROWS = (
    40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
    11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36,
)
_MLPERF_MULTI_HOT = (
    3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1,
)
# fmt: on


def _hstu(name: str, path: str, numbers: tuple[int, ...], aliases: tuple[str, ...] = ()) -> _Row:
    """An HSTU row: the config fields and a source that quotes them from the gin file at ``path``."""
    layers, d, heads, dqk, seq, neg = numbers
    source = (
        _HSTU.format(path=path)
        + f" (num_blocks {layers}, num_heads {heads}, dqk = dv = {dqk}, item_embedding_dim "
        f"{d}, max_sequence_length {seq}, num_negatives {neg}); seq_len is the maximum, pass "
        "the real lengths for exact attention FLOPs"
    )
    fields = dict(n_layers=layers, d_model=d, n_heads=heads, dqk=dqk, dv=dqk, seq_len=seq)
    fields.update(causal=True, n_negatives=neg)
    description = "HSTU-large sequential recommender (causal pointwise attention)"
    return name, fields, source, description, {"aliases": aliases}


# fmt: off
_DLRM_ROWS: list[_Row] = [
    ("dlrm-dcnv2",
     dict(n_dense=13, bottom_mlp=(512, 256, 128), n_sparse=26, embedding_dim=128,
          top_mlp=(1024, 1024, 512, 256, 1), interaction="dcnv2", cross_layers=3, cross_rank=512,
          embedding_rows=_MLPERF_ROWS, pooling_factors=_MLPERF_MULTI_HOT, embedding_bytes=4,
          optimizer="adagrad"),
     _MLPERF_DCNV2, "MLPerf Training DLRM-DCNv2 on Criteo 1TB multi-hot",
     dict(aliases=("mlperf-dlrm-dcnv2", "dlrmv2", "dlrm-v2"),
          derived={"forward_flops_per_sample": 32_060_928,
                   # embedding_traffic(): 214 lookups x 128 x 4 B x (read + update read/write + Adagrad
                   # state read/write) = 214 x 512 x 5
                   "embedding_bytes_per_sample": 547_840})),
]

# name, gin file under configs/, (num_blocks, item_embedding_dim, num_heads, dqk = dv,
# max_sequence_length, num_negatives), aliases
_HSTU_ROWS: list[_Row] = [
    _hstu("hstu-ml-20m-large", "ml-20m/hstu-sampled-softmax-n128-large-final.gin",
          (16, 256, 8, 32, 200, 128), ("hstu", "hstu-large")),  # the largest public configuration
    _hstu("hstu-ml-1m-large", "ml-1m/hstu-sampled-softmax-n128-large-final.gin",
          (8, 50, 2, 25, 200, 128)),
    _hstu("hstu-amzn-books-large", "amzn-books/hstu-sampled-softmax-n512-large-final.gin",
          (16, 64, 8, 8, 50, 512)),
]
# fmt: on

# --- the original DLRM reference (facebookresearch/dlrm) and the Generative Recommenders configs --------------

_DLRM_REPO = "https://github.com/facebookresearch/dlrm/blob/090956ee2319ddd349a42232958aefccfe3f7b0a/"
_DLRM_REF = (
    "Naumov et al. 2019, 'Deep Learning Recommendation Model for Personalization and Recommendation Systems', "
    "arXiv:1906.00091; configuration from the reference's run script " + _DLRM_REPO + "{script} line {line}: "
    "{flags}. Read at that commit: dlrm_s_pytorch.py lines 1150-1170 (dot interaction without "
    "--arch-interaction-itself: the top MLP's input, num_fea * (num_fea - 1) // 2 + the bottom output, is "
    "prepended to --arch-mlp-top), line 972 (--optimizer default 'sgd'; the script passes none), line 277 "
    "(nn.EmbeddingBag(n, m, mode='sum', sparse=True): fp32 rows), lines 1108-1123 (the table sizes are the "
    "dataset's category counts{cap}, so no row counts are stated; the dense count, 13 in --arch-mlp-bot, is "
    "the data's m_den); dlrm_data_pytorch.py lines 334-335 (one index per sparse feature per sample: "
    "pooling factor 1). {batch}"
)


def _dlrm_reference(name: str, where: tuple[str, int, str], arch: tuple, notes: tuple[str, str, str],
                    derived: dict[str, float] | None = None) -> _Row:
    """A row of the DLRM reference (26 sparse and 13 dense Criteo features, dot interaction, SGD).

    ``where`` = (run script, line, its flags); ``arch`` = (bottom MLP sizes after the 13 inputs, embedding
    dim, top MLP sizes after the interaction), from ``--arch-mlp-bot``, ``--arch-sparse-feature-size`` and
    ``--arch-mlp-top``; ``notes`` = (the row cap, the batch, the description)."""
    (script, line, flags), (bottom, dim, top), (cap, batch, description) = where, arch, notes
    fields = dict(n_dense=13, bottom_mlp=bottom, n_sparse=26, embedding_dim=dim, top_mlp=top, interaction="dot",
                  embedding_bytes=4, optimizer="sgd")
    source = _DLRM_REF.format(script=script, line=line, flags=flags, cap=cap, batch=batch)
    return name, fields, source, description, {"derived": dict(derived or {})}


_GR_REPO = "https://github.com/meta-recsys/generative-recommenders/blob/db1bf8f2e8f6a92a738dafd52a245eafb25a222b/"


def _gr_hstu(name: str, path: str, numbers: tuple[int, ...], lines: str, large: bool) -> _Row:
    """An HSTU row from a Generative Recommenders gin file (``configs/<path>``) read at a fixed commit;
    ``numbers`` as in ``_hstu`` and ``lines`` the file's lines that state them."""
    layers, d, heads, dqk, seq, neg = numbers
    source = (
        "Zhai et al. 2024, 'Actions Speak Louder than Words: Trillion-Parameter Sequential Transducers for "
        f"Generative Recommendations', arXiv:2402.17152; config {_GR_REPO}configs/{path} ({lines}: "
        f"train_fn.max_sequence_length = {seq}, train_fn.item_embedding_dim = {d}, hstu_encoder.num_blocks = "
        f"{layers}, hstu_encoder.num_heads = {heads}, hstu_encoder.dqk = hstu_encoder.dv = {dqk}, "
        f"train_fn.num_negatives = {neg}); seq_len is the maximum, pass the real lengths for exact attention "
        "FLOPs; the file states no item count and no sparse optimizer"
    )
    fields = dict(n_layers=layers, d_model=d, n_heads=heads, dqk=dqk, dv=dqk, seq_len=seq, causal=True,
                  n_negatives=neg)
    description = ("HSTU-large sequential recommender (causal pointwise attention)" if large else
                   "HSTU sequential recommender in the SASRec baseline's configuration (causal pointwise attention)")
    return name, fields, source, description, {}


# fmt: off
_DLRM_ROWS += [
    _dlrm_reference(
        "dlrm-criteo-kaggle",
        ("bench/dlrm_s_criteo_kaggle.sh", 24,
         '--arch-sparse-feature-size=16 --arch-mlp-bot="13-512-256-64-16" --arch-mlp-top="512-256-1"'),
        ((512, 256, 64, 16), 16, (512, 256, 1)),
        ("", "The script trains with --mini-batch-size=128.",
         "DLRM reference on the Criteo Kaggle (Display Advertising Challenge) data"),
        # this project's count (tests/test_recsys_presets.py): bottom 2 x 155,136 + dot 2 x 27^2 x 16 + top
        # 2 x 319,232; embedding bytes: 26 lookups x 16 x 4 B x (lookup read + update read + update write),
        # plain SGD keeps no state
        derived={"forward_flops_per_sample": 972_064, "embedding_bytes_per_sample": 4_992}),
    _dlrm_reference(
        "dlrm-criteo-terabyte",
        ("bench/dlrm_s_criteo_terabyte.sh", 24,
         '--arch-sparse-feature-size=64 --arch-mlp-bot="13-512-256-64" --arch-mlp-top="512-512-256-1" '
         "--max-ind-range=10000000"),
        ((512, 256, 64), 64, (512, 512, 256, 1)),
        (", capped at --max-ind-range", "The script trains with --mini-batch-size=2048.",
         "DLRM reference on the Criteo Terabyte click logs")),
    _dlrm_reference(
        "dlrm-criteo-terabyte-mlperf",
        ("bench/run_and_time.sh", 17,
         '--arch-sparse-feature-size=128 --arch-mlp-bot="13-512-256-128" --arch-mlp-top="1024-1024-512-256-1" '
         "--max-ind-range=40000000 --mlperf-logging"),
        ((512, 256, 128), 128, (1024, 1024, 512, 256, 1)),
        (", capped at --max-ind-range", "The script trains with --mini-batch-size=2048.",
         "DLRM reference in the MLPerf configuration that preceded DLRM-DCNv2 (Criteo Terabyte)")),
]
_HSTU_ROWS += [
    _gr_hstu("hstu-ml-3b-large", "ml-3b/hstu-sampled-softmax-n96-seqlen500-large-final.gin",
             (16, 256, 8, 32, 500, 128), "lines 8, 16, 18-21, 32", large=True),
    _gr_hstu("hstu-ml-3b", "ml-3b/hstu-sampled-softmax-n96-seqlen500-final.gin",
             (4, 256, 4, 64, 500, 128), "lines 8, 16, 18-21, 32", large=False),
    _gr_hstu("hstu-ml-20m", "ml-20m/hstu-sampled-softmax-n128-final.gin",
             (4, 256, 4, 64, 200, 128), "lines 12, 19, 21-24, 35", large=False),
    _gr_hstu("hstu-ml-1m", "ml-1m/hstu-sampled-softmax-n128-final.gin",
             (2, 50, 1, 50, 200, 128), "lines 12, 19, 21-24, 35", large=False),
    _gr_hstu("hstu-amzn-books", "amzn-books/hstu-sampled-softmax-n512-final.gin",
             (4, 64, 4, 16, 50, 512), "lines 12, 19, 21-24, 37", large=False),
]
# fmt: on


def _preset(kind: type[ModelConfig], row: _Row) -> Preset:
    """One table row as a Preset whose ``kind`` config carries the preset's name."""
    name, fields, source, description, extra = row
    config = kind(**fields, name=name)
    return Preset(name=name, config=config, source=source, description=description, **extra)


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        *(_preset(TransformerConfig, row) for row in _TRANSFORMER_ROWS),
        *(_preset(DLRMConfig, row) for row in _DLRM_ROWS),
        *(_preset(HSTUConfig, row) for row in _HSTU_ROWS),
    )
}


def _key(name: str) -> str:
    return re.sub(r"[\s_\-]+", "", name.strip().lower())


_INDEX: dict[str, str] = {}
for _p in PRESETS.values():
    for _alias in (_p.name, *_p.aliases):
        _INDEX[_key(_alias)] = _p.name


def list_presets(kind: str | None = None) -> list[str]:
    """Preset names (optionally only one ``kind``: transformer, dlrm, hstu, mlp)."""
    return [n for n, p in PRESETS.items() if kind is None or p.kind == kind]


def get_preset(name: str) -> Preset:
    """Find a preset by name or alias, case-insensitively; unknown names suggest close ones."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownPresetError(
            f"preset must be a non-empty name; got {name!r}. Available: {', '.join(PRESETS)}"
        )
    hit = _INDEX.get(_key(name))
    if hit is not None:
        return PRESETS[hit]
    close = difflib.get_close_matches(_key(name), list(_INDEX), n=3, cutoff=0.5)
    names = list(dict.fromkeys(_INDEX[c] for c in close))
    hint = f" Did you mean {' or '.join(repr(n) for n in names)}?" if names else ""
    raise UnknownPresetError(f"unknown preset {name!r}.{hint} Available: {', '.join(PRESETS)}")


def preset_family(name: str | None) -> str | None:
    """The published-MFU family of a preset (``dense-transformer``/``moe-transformer``), else None."""
    if not name:
        return None
    try:
        config = get_preset(name).config
    except FlopsConfigError:
        return None
    if not isinstance(config, TransformerConfig):
        return None
    return "moe-transformer" if config.n_experts else "dense-transformer"

