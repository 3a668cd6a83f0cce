"""Today's architectures: sliding-window attention, MLA, MTP, shared experts, custom blocks.

Every number is a hand count written out here from the published configuration, or a published
parameter count (paper table, model card, the authors' README).
"""

from __future__ import annotations

import pytest

from mfu_toolkit.flops import (
    FlopsConfigError,
    TransformerConfig,
    config_from_dict,
    custom_block,
    get_preset,
    linear,
    model_flops,
    transformer_flops,
    transformer_params,
)


def parts(result) -> dict[str, float]:
    return {c.name: c.forward_flops for c in result.breakdown}


# --- causal or not, at 128K context ---------------------------------------------------------


def test_llama3_405b_non_causal_is_1_40x_causal_at_128k():
    # Llama 3.1 405B config.json: 126 layers, d 16384, 128 heads of 128 (H * Q = d), 8 KV heads,
    # FFN 53248 (SwiGLU), vocabulary 128256, untied. Matmul weights N (the untied head
    # included, the lookup table not), then per token (PaLM App. B): non-causal 6N + 12*L*d*T,
    # causal with attention halved 6N + 6*L*d*T.
    L, d, T = 126, 16384, 131072
    N = L * (2 * d * d + 2 * d * 1024 + 3 * d * 53248) + d * 128256
    non_causal = 6 * N + 12 * L * d * T
    causal_half = 6 * N + 6 * L * d * T
    assert round(non_causal / causal_half, 2) == 1.40
    off = model_flops("llama3-405b", seq_len=T)
    on = model_flops("llama3-405b", seq_len=T, causal=True)
    assert off.training_per_token == pytest.approx(non_causal, rel=1e-12)
    # The exact mask keeps (T + 1) / 2 keys per query (MaxText halves to T / 2).
    assert on.training_per_token == pytest.approx(6 * N + 6 * L * d * (T + 1), rel=1e-12)
    assert round(off.training_per_token / on.training_per_token, 2) == 1.40
    assert (off.conventions.causal, on.conventions.causal) == (False, True)
    assert any(line.startswith("causal: on") for line in on.conventions.describe())
    assert any(line.startswith("causal: off") for line in off.conventions.describe())


# --- sliding-window / local attention -------------------------------------------------------


def test_mistral_7b_parameter_count_is_7_24_b():
    # https://huggingface.co/mistralai/Mistral-7B-v0.1: 7.24B params. By hand from arXiv:2310.06825
    # Table 1: 32 x (q, o 4096^2 each; k, v 4096 x 1024 each; SwiGLU 3 x 4096 x 14336; 2 norms)
    # + final norm + untied 32000 x 4096 embedding and head.
    layer = 2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    hand = 32 * layer + 4096 + 2 * 32000 * 4096
    assert hand == 7_241_732_096
    p = transformer_params(get_preset("mistral-7b").config)
    assert p.total == hand
    assert p.total == pytest.approx(7.24e9, rel=0.01)
    assert round(p.total / 1e9, 2) == get_preset("mistral-7b").published["params"] / 1e9


def test_mistral_7b_window_bounds_the_attended_keys():
    # Window W = 4096 (Table 1): each query sees at most the last 4096 keys (itself included).
    W, T, L, H, Q = 4096, 16384, 32, 32, 128
    off = parts(model_flops("mistral-7b", seq_len=T))
    assert off["attn_scores"] == 2 * W * H * Q * L
    assert off["attn_values"] == 2 * W * H * Q * L
    on = parts(model_flops("mistral-7b", seq_len=T, causal=True))
    # Causal: query i (1-based) sees min(i, W) keys; the mean counted one query at a time.
    mean_keys = sum(min(i, W) for i in range(1, T + 1)) / T
    assert on["attn_scores"] == pytest.approx(2 * mean_keys * H * Q * L, rel=1e-12)
    # Within the window the window changes nothing: the full (T + 1) / 2 mean of a causal mask.
    short = parts(model_flops("mistral-7b", seq_len=W, causal=True))
    assert short["attn_scores"] == pytest.approx(2 * (W + 1) / 2 * H * Q * L, rel=1e-12)
    note = "\n".join(model_flops("mistral-7b", seq_len=T).conventions.describe())
    assert "32 of 32 layers" in note and "4096 keys" in note


def test_gemma_2_9b_parameters_match_table_2_exactly():
    # Gemma 2 (arXiv:2408.00118) Table 2: 917,962,752 embedding, 8,324,201,984 non-embedding.
    # By hand: 42 x (q, o 3584 x 4096; k, v 3584 x 2048; GeGLU 3 x 3584 x 14336; 4 norms) + final
    # norm; tied embedding 256128 x 3584.
    layer = 2 * 3584 * 4096 + 2 * 3584 * 2048 + 3 * 3584 * 14336 + 4 * 3584
    assert 42 * layer + 3584 == 8_324_201_984
    assert 256128 * 3584 == 917_962_752
    p = transformer_params(get_preset("gemma-2-9b").config)
    published = get_preset("gemma-2-9b").published
    assert p.embedding == published["embedding_params"] == 917_962_752
    assert p.non_embedding == published["non_embedding_params"] == 8_324_201_984


def test_gemma_2_alternating_local_and_global_layers():
    # Sec 2: local (4096-token window) and global layers alternate: 21 of each in 42 layers.
    # At T = 8192 non-causal: 21 x 4096 + 21 x 8192 keys per query, 16 heads of 256.
    r = model_flops("gemma-2-9b", seq_len=8192)
    assert parts(r)["attn_scores"] == 2 * (21 * 4096 + 21 * 8192) * 16 * 256
    cfg = get_preset("gemma-2-9b").config
    assert cfg.layer_windows()[:4] == (4096, None, 4096, None)
    assert sum(w is None for w in cfg.layer_windows()) == 21


def test_window_patterns_of_gpt_oss_and_gemma_3():
    # gpt-oss: layers alternate a 128-token banded window and full attention; Gemma 3: five
    # local layers (window 1024) to one global. Small hand-made shapes with those patterns.
    base = dict(n_layers=6, d_model=64, n_heads=4, vocab_size=100, seq_len=4096)
    oss = TransformerConfig(attention_window=[128, 0], **base)  # a TOML array works too
    assert oss.attention_window == (128, 0)
    assert oss.layer_windows() == (128, None) * 3
    T, Q, H = 4096, 16, 4
    banded = sum(min(i, 128) for i in range(1, T + 1)) / T  # causal mean for a 128 window
    full = (T + 1) / 2
    got = parts(transformer_flops(oss, causal=True))["attn_scores"]
    assert got == pytest.approx(2 * H * Q * 3 * (banded + full), rel=1e-12)
    gemma3 = TransformerConfig(attention_window=(1024,) * 5 + (0,), **base)
    assert gemma3.layer_windows() == (1024,) * 5 + (None,)
    assert parts(transformer_flops(gemma3))["attn_scores"] == 2 * H * Q * (5 * 1024 + 4096)


@pytest.mark.parametrize(
    "window, fragment",
    [(0, "attention_window must be an integer >= 1"), ((), "non-empty"), ((64, -1), "[1]")],
)
def test_invalid_windows_name_the_parameter(window, fragment):
    with pytest.raises(FlopsConfigError, match="attention_window") as err:
        TransformerConfig(n_layers=2, d_model=64, n_heads=4, seq_len=8, attention_window=window)
    assert fragment in str(err.value)


# --- DeepSeek-V3: MLA, shared + routed experts, dense first layers, MTP --------------------

D, H, V = 7168, 128, 129280
# MLA per layer (arXiv:2412.19437 Sec 4.2; config.json): q 7168 -> 1536 -> 128 x (128 + 64),
# kv 7168 -> 512 + 64 and 512 -> 128 x (128 + 128), out 128 x 128 -> 7168; two latent RMSNorms.
MLA_WEIGHTS = D * 1536 + 1536 * H * 192 + D * 576 + 512 * H * 256 + H * 128 * D
MLA = MLA_WEIGHTS + 1536 + 512
EXPERT = 3 * D * 2048  # SwiGLU expert of width 2048 (routed and shared alike)
DENSE_FFN = 3 * D * 18432  # first 3 layers
ROUTER = D * 256


def test_deepseek_v3_total_and_activated_parameters():
    assert MLA == 187_107_328
    dense_layer = MLA + DENSE_FFN + 2 * D
    moe_total = MLA + ROUTER + (1 + 256) * EXPERT + 2 * D
    moe_active = MLA + ROUTER + (1 + 8) * EXPERT + 2 * D
    embed = head = V * D
    total = 3 * dense_layer + 58 * moe_total + embed + head + D
    active = 3 * dense_layer + 58 * moe_active + embed + head + D
    p = transformer_params(get_preset("deepseek-v3").config)
    assert (p.total, p.active) == (total, active)
    # Paper Sec 4.2 and README: 671B total, excluding the MTP module.
    assert p.total == pytest.approx(671e9, rel=0.01)
    assert round(p.total / 1e9) == 671
    # README_WEIGHTS.md: "Activation parameters: 36.6B (including 0.9B for the output Head)",
    # i.e. without the input embedding, a lookup; that is the paper's "37B activated".
    activated = p.active - embed
    assert activated == pytest.approx(36.6e9, rel=0.01)
    assert round(activated / 1e9) == 37
    published = get_preset("deepseek-v3").published
    assert published["params"] == 671e9 and published["active_params"] == 37e9


def test_deepseek_v3_as_plain_attention_overcounts():
    # The same model with 128 plain heads of 128 instead of MLA: 4 x 7168 x 16384 attention
    # weights per layer, 61 layers. That gives 688B total / 54.8B active, not 671B / 37B.
    cfg = get_preset("deepseek-v3").config
    plain = cfg.with_(
        kv_lora_rank=None,
        q_lora_rank=None,
        qk_nope_head_dim=None,
        qk_rope_head_dim=None,
        v_head_dim=None,
        head_dim=128,
        n_mtp_modules=0,
    )
    mla, mha = transformer_params(cfg), transformer_params(plain)
    extra = 61 * (4 * D * 16384 - MLA)
    assert mha.total - mla.total == extra
    assert round(mha.total / 1e9) == 688 and round(mha.active / 1e9, 1) == 54.8


def test_deepseek_v3_mtp_module_parameters():
    # README_WEIGHTS.md: MTP "11.5B unique parameters (excluding the shared 0.9B Embedding and
    # 0.9B output Head)". By hand: one MoE layer, eh_proj 2d x d, enorm/hnorm/head norm; the
    # README's figure matches the module without its 0.1B eh_proj (11.507B).
    moe_total = MLA + ROUTER + (1 + 256) * EXPERT + 2 * D
    mtp = moe_total + 2 * D * D + 3 * D
    p = transformer_params(get_preset("deepseek-v3").config)
    assert p.mtp == mtp
    assert p.mtp == pytest.approx(11.5e9, rel=0.01)
    assert p.mtp not in (0, p.total) and "mtp" in p.to_dict()


def test_deepseek_v3_forward_flops_by_hand():
    # Per token at T = 4096 (Sec 4.2: "maximum sequence length to 4K during pre-training"),
    # non-causal: 2 x every matmul weight a token uses + attention 2 * T * H * (192 + 128) per
    # layer, + the MTP module (its projection, one MoE layer, attention, the shared head).
    T = 4096
    moe_active_matmuls = MLA_WEIGHTS + ROUTER + 9 * EXPERT
    layers = 3 * (MLA_WEIGHTS + DENSE_FFN) + 58 * moe_active_matmuls
    attention = 61 * 2 * T * H * (192 + 128)
    main = 2 * layers + attention + 2 * D * V
    mtp = 2 * (2 * D * D + moe_active_matmuls) + 2 * T * H * (192 + 128) + 2 * D * V
    r = model_flops("deepseek-v3")
    assert r.tokens_per_sample == 4096
    assert r.forward_per_token == pytest.approx(main + mtp, rel=1e-12)
    # MTP is trained, so its FLOPs are model FLOPs (training = 3 x forward includes them).
    without = transformer_flops(get_preset("deepseek-v3").config.with_(n_mtp_modules=0))
    assert r.training_per_token - without.training_per_token == pytest.approx(3 * mtp, rel=1e-12)
    text = "\n".join(r.conventions.describe())
    assert "MTP module(s) counted in model FLOPs (they are trained)" in text
    assert "multi-head latent attention" in text


def test_mla_scores_use_nope_plus_rope_and_values_v_head_dim():
    # DeepSeek-V2 (arXiv:2405.04434) Sec 2.1: q and k of 128 + 64 per head, v of 128.
    r = parts(model_flops("deepseek-v3", causal=True))
    keys = (4096 + 1) / 2
    assert r["attn_scores"] == pytest.approx(61 * 2 * keys * H * 192, rel=1e-12)
    assert r["attn_values"] == pytest.approx(61 * 2 * keys * H * 128, rel=1e-12)


def test_mla_fields_need_kv_lora_rank():
    base = dict(n_layers=2, d_model=64, n_heads=4, seq_len=8)
    with pytest.raises(FlopsConfigError, match="^q_lora_rank must be None unless kv_lora_rank"):
        TransformerConfig(q_lora_rank=16, **base)
    with pytest.raises(FlopsConfigError, match="^qk_rope_head_dim must be an integer when"):
        TransformerConfig(kv_lora_rank=16, qk_nope_head_dim=8, v_head_dim=8, **base)
    # Without q_lora_rank the query projection comes straight from d (DeepSeek-V2-Lite).
    lite = TransformerConfig(
        kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, **base
    )
    rows = parts(transformer_flops(lite))
    assert rows["q_proj"] == 2 * 64 * 4 * 12 * 2
    assert "q_down_proj" not in rows


# --- shared experts of their own width, custom blocks ---------------------------------------


def test_shared_experts_have_their_own_width():
    # Hand count: 2 MoE layers, d 64, SwiGLU; 8 routed experts of width 32 (top-2) and
    # 2 shared experts of width 96 (Qwen-MoE style: the shared expert wider than the routed).
    cfg = TransformerConfig(
        n_layers=2,
        d_model=64,
        n_heads=4,
        ffn_type="swiglu",
        vocab_size=100,
        seq_len=16,
        n_experts=8,
        top_k=2,
        d_ff_expert=32,
        n_shared_experts=2,
        d_ff_shared=96,
    )
    r = parts(transformer_flops(cfg))
    assert r["moe_routed_experts"] == 2 * 2 * 3 * 64 * 32 * 2
    assert r["moe_shared_experts"] == 2 * 2 * 3 * 64 * 96 * 2
    narrow = transformer_params(cfg.with_(d_ff_shared=32))
    assert transformer_params(cfg).total - narrow.total == 2 * 2 * 3 * 64 * (96 - 32)


def test_custom_blocks_in_a_transformer():
    # A 64 -> 16 adapter (2 * 64 * 16 per token) and a measured block of 1000 FLOPs per token
    # that selective recomputation re-runs.
    blocks = (linear("adapter", 64, 16), custom_block("sparse_attn", 1000, attention=True))
    base = TransformerConfig(n_layers=2, d_model=64, n_heads=4, vocab_size=100, seq_len=32)
    plain, extra = transformer_flops(base), transformer_flops(base.with_(extra_blocks=blocks))
    assert extra.forward_per_token - plain.forward_per_token == 2 * 64 * 16 + 1000
    assert extra.params.total - plain.params.total == 64 * 16
    sel = transformer_flops(base.with_(extra_blocks=blocks), recompute="selective")
    assert sel.hardware_per_token - extra.training_per_token == pytest.approx(
        plain_attention(plain) + 1000
    )
    assert "custom blocks as given" in "\n".join(extra.conventions.describe())


def plain_attention(result) -> float:
    return sum(c.forward_flops for c in result.breakdown if c.attention)


def test_toml_dict_takes_windows_mla_and_custom_blocks():
    cfg = config_from_dict(
        {
            "kind": "transformer",
            "n_layers": 2,
            "d_model": 64,
            "n_heads": 4,
            "seq_len": 64,
            "attention_window": [16, 0],
            "kv_lora_rank": 8,
            "q_lora_rank": 8,
            "qk_nope_head_dim": 8,
            "qk_rope_head_dim": 4,
            "v_head_dim": 8,
            "n_mtp_modules": 1,
            "extra_blocks": [{"name": "head2", "forward_flops": 512, "output_layer": True}],
        }
    )
    assert cfg.attention_window == (16, 0) and cfg.is_mla and cfg.n_mtp_modules == 1
    r = transformer_flops(cfg, recompute="full")
    # Full recomputation re-runs neither the logits, the MTP head nor an output-layer block.
    heads = sum(c.forward_flops for c in r.breakdown if c.output_layer)
    assert heads == 2 * 64 * 50257 * 2 + 512
    assert r.hardware_per_token == pytest.approx(4 * r.forward_per_token - heads)
