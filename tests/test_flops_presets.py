"""Presets: published parameter counts, sources, look-up, and the one-call API."""

from __future__ import annotations

import pytest

from mfu_toolkit.flops import (
    PRESETS,
    FlopsConfigError,
    ModelFlops,
    TransformerConfig,
    UnknownPresetError,
    flops_per_unit,
    get_preset,
    list_presets,
    model_flops,
    transformer_params,
)

REQUIRED = {
    "gpt3-175b",
    "palm-8b",
    "palm-62b",
    "palm-540b",
    "llama3-8b",
    "llama3-70b",
    "llama3-405b",
    "llama3.1-8b",
    "mixtral-8x7b",
    "mistral-7b",
    "gemma-2-9b",
    "deepseek-v3",
    "dlrm-dcnv2",
    "hstu-ml-20m-large",
}


def test_required_presets_exist_and_cite_sources():
    assert REQUIRED <= set(list_presets())
    for name, preset in PRESETS.items():
        assert preset.name == name == preset.config.name
        # every preset names a paper (arXiv) or a config file URL
        assert "arXiv:" in preset.source or "https://" in preset.source, name
    assert set(list_presets("dlrm")) == {"dlrm-dcnv2", "dlrm-criteo-kaggle", "dlrm-criteo-terabyte",
                                         "dlrm-criteo-terabyte-mlperf"}
    assert "hstu-ml-20m-large" in list_presets("hstu")


def test_gpt3_175b_parameter_count():
    # Brown et al. 2020, Table 2.1 config (96 layers, d_model 12288, 2048 context, 50257 vocab):
    # counting every weight, bias, norm and the learned position table gives 174.6e9 ("175B").
    r = model_flops("gpt3-175b")
    assert round(r.params.total / 1e9, 1) == 174.6


@pytest.mark.parametrize(
    "preset, published",
    [
        # The Llama 3 Herd of Models (arXiv:2407.21783) / model cards: 8.03B, 70.6B, 405.9B.
        ("llama3-8b", 8.03e9),
        ("llama3-70b", 70.6e9),
        ("llama3-405b", 405.9e9),
        ("llama3.1-8b", 8.03e9),
    ],
)
def test_llama3_parameter_counts_within_one_percent(preset, published):
    r = model_flops(preset)
    assert r.params.total == pytest.approx(published, rel=0.01)
    assert get_preset(preset).published["params"] == published


def test_mixtral_total_and_active_parameters():
    # Mistral AI, "Mixtral of experts" (https://mistral.ai/news/mixtral-of-experts/):
    # 46.7B total parameters, 12.9B used per token. Parameter counts need no sequence length.
    p = transformer_params(get_preset("mixtral-8x7b").config)
    assert round(p.total / 1e9, 1) == 46.7
    assert round(p.active / 1e9, 1) == 12.9
    assert model_flops("mixtral-8x7b", seq_len=4096).params == p


# The training sequence length each source states, quoted in the preset's source text. Presets
# whose source gives only a context window (Mixtral 32768, Mistral 7B 8192, Gemma 2 8192) have
# none, and counting their FLOPs without seq_len is an error.
STATED_SEQ_LEN = {
    "gpt3-175b": (2048, "always train on sequences of the full n_ctx = 2048"),  # App. B
    "palm-8b": (2048, "a sequence length of 2048 was used for all models"),  # Sec 5
    "palm-62b": (2048, "a sequence length of 2048 was used for all models"),
    "palm-540b": (2048, "a sequence length of 2048 was used for all models"),
    "llama3-8b": (8192, "We trained the models on sequences of 8,192 tokens"),  # Meta blog
    "llama3-70b": (8192, "We trained the models on sequences of 8,192 tokens"),
    "llama3-405b": (8192, "a batch size of 8M sequences of 8,192 tokens"),  # Sec 3.4.1
    # Sec 3.4: "We use similar recipes to pre-train the 8B and 70B models".
    "llama3.1-8b": (8192, "a batch size of 8M sequences of 8,192 tokens"),
    "deepseek-v3": (4096, "maximum sequence length to 4K during pre-training"),  # Sec 4.2
}
STATED_SEQ_LEN.update(
    {
        "llama2-7b": (4096, "'Context Length' 4k"),  # Llama 2 paper, Table 1
        "llama2-13b": (4096, "'Context Length' 4k"),
        "llama2-70b": (4096, "'Context Length' 4k"),
        "bert-large": (512, "max_seq_length=512"),  # MLPerf Training BERT reference
        "gpt-neox-20b": (2048, "sequence length 2048"),
        "qwen3-8b": (4096, "a sequence length of 4,096 tokens"),  # Qwen3 report, Sec 3.2
        "qwen3-32b": (4096, "a sequence length of 4,096 tokens"),
        "qwen3-30b-a3b": (4096, "a sequence length of 4,096 tokens"),
        "qwen3-235b-a22b": (4096, "a sequence length of 4,096 tokens"),
    }
)
NO_SEQ_LEN = {
    "mixtral-8x7b",
    "mistral-7b",
    "gemma-2-9b",
    "gpt-oss-20b",
    "gpt-oss-120b",
    "mixtral-8x22b",
}


def test_every_transformer_preset_states_its_training_length_or_has_none():
    transformers = set(list_presets("transformer"))
    assert transformers == set(STATED_SEQ_LEN) | NO_SEQ_LEN
    for name, (seq_len, quote) in STATED_SEQ_LEN.items():
        preset = get_preset(name)
        assert preset.config.seq_len == seq_len, name
        assert quote in preset.source, name
    for name in NO_SEQ_LEN:
        preset = get_preset(name)
        assert preset.config.seq_len is None, name
        assert "pass seq_len" in preset.source, name


@pytest.mark.parametrize("name", sorted(NO_SEQ_LEN))
def test_flops_without_a_sequence_length_is_an_error_naming_both_spellings(name):
    with pytest.raises(FlopsConfigError) as err:
        model_flops(name)
    msg = str(err.value)
    assert msg.startswith("seq_len must be given for " + name)
    assert "seq_len=" in msg and "--seq-len" in msg
    with pytest.raises(FlopsConfigError, match="--seq-len"):
        flops_per_unit(name)
    assert model_flops(name, seq_len=4096).tokens_per_sample == 4096


def test_a_config_without_seq_len_counts_parameters_but_not_flops():
    cfg = TransformerConfig(n_layers=2, d_model=64, n_heads=4, vocab_size=100)
    assert cfg.seq_len is None
    assert transformer_params(cfg).total > 0
    with pytest.raises(FlopsConfigError, match="seq_len="):
        model_flops(cfg)
    with pytest.raises(FlopsConfigError, match="max_seq_len"):
        TransformerConfig(n_layers=2, d_model=64, n_heads=4, pos_embedding="learned")


def test_palm_parameter_counts():
    # PaLM Table 1 (arXiv:2204.02311): 8.63B, 62.50B, 540.35B.
    for name, published in (("palm-8b", 8.63e9), ("palm-62b", 62.50e9), ("palm-540b", 540.35e9)):
        assert model_flops(name).params.total == pytest.approx(published, rel=2e-3)


@pytest.mark.parametrize("spelling", ["LLAMA3-8B", "llama3_8b", " Llama3 8B ", "llama-3-8b"])
def test_lookup_is_case_and_separator_insensitive(spelling):
    assert get_preset(spelling).name == "llama3-8b"


def test_aliases():
    assert get_preset("Mixtral").name == "mixtral-8x7b"
    assert get_preset("HSTU").name == "hstu-ml-20m-large"
    assert get_preset("mlperf-dlrm-dcnv2").name == "dlrm-dcnv2"


def test_unknown_preset_suggests_close_names_and_lists_all():
    with pytest.raises(UnknownPresetError) as err:
        get_preset("lama3-8b")
    msg = str(err.value)
    assert "Did you mean 'llama3-8b'" in msg
    assert "Available:" in msg and "dlrm-dcnv2" in msg
    assert isinstance(err.value, ValueError) and isinstance(err.value, LookupError)
    with pytest.raises(UnknownPresetError, match="non-empty"):
        get_preset("")


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_computes(name):
    seq_len = 1024 if name in NO_SEQ_LEN else None
    r = model_flops(name, batch=2, seq_len=seq_len)
    assert isinstance(r, ModelFlops)
    assert 0 < r.forward_per_sample < r.training_per_sample <= r.hardware_per_sample
    assert r.source == PRESETS[name].source
    assert r.params.total >= r.params.embedding >= 0
    assert r.conventions.flops_per_mac == 2


def test_model_flops_accepts_config_objects_and_presets():
    cfg = TransformerConfig(n_layers=2, d_model=64, n_heads=4, vocab_size=100, seq_len=16)
    r = model_flops(cfg, batch=3)
    assert r.source == "user config" and r.batch == 3 and r.tokens_per_sample == 16
    assert model_flops(get_preset("palm-8b")) == model_flops("palm-8b")
    with pytest.raises(FlopsConfigError, match="model must be a preset name"):
        model_flops(42)  # type: ignore[arg-type]
    with pytest.raises(FlopsConfigError, match="lengths applies to HSTU"):
        model_flops(cfg, lengths=[3])


def test_model_flops_seq_len_and_causal_options():
    base = model_flops("llama3-8b")
    assert base.tokens_per_sample == 8192 and base.conventions.causal is False
    short = model_flops("llama3-8b", seq_len=2048, causal=True)
    assert short.tokens_per_sample == 2048 and short.conventions.causal is True
    assert short.forward_per_token < base.forward_per_token
    assert model_flops("hstu").conventions.causal is True  # HSTU is causal by design
    assert model_flops("hstu", causal=False).conventions.causal is False


def test_flops_per_unit_for_the_calc_command():
    r = flops_per_unit("palm-540b", recompute="full")
    assert r.unit == "token" and r.tokens_per_sample == 2048
    assert r.training_per_unit == r.training_per_token
    # Full recomputation (Megatron): one more forward of the layers, not of the logits
    # (2 * d_model * vocab = 2 * 18432 * 256000 per token).
    logits_per_sample = 2 * 18432 * 256_000 * 2048
    assert r.hardware_per_sample == pytest.approx(
        4 / 3 * r.training_per_sample - logits_per_sample, rel=1e-12
    )
    d = flops_per_unit(preset="dlrm-dcnv2")
    assert d.unit == "sample" and d.tokens_per_sample is None
    # This project's count of the MLPerf reference configuration (tests/test_flops_recsys.py).
    assert d.training_per_unit == d.training_per_sample == 3 * 32_060_928
    c = flops_per_unit("llama3-8b", seq_len=2048, causal=True)
    assert c.conventions.causal is True and c.tokens_per_sample == 2048
    with pytest.raises(FlopsConfigError, match="exactly one of preset and config_path"):
        flops_per_unit()
    with pytest.raises(FlopsConfigError, match="exactly one"):
        flops_per_unit("palm-8b", "x.toml")
