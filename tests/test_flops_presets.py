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
    "dlrm-dcnv2",
    "hstu-ml-20m-large",
}


def test_required_presets_exist_and_cite_sources():
    assert REQUIRED <= set(list_presets())
    for name, preset in PRESETS.items():
        assert preset.name == name == preset.config.name
        # every preset names a paper (arXiv) or a config file URL
        assert "arXiv:" in preset.source or "https://" in preset.source, name
    assert set(list_presets("dlrm")) == {"dlrm-dcnv2"}
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
    # 46.7B total parameters, 12.9B used per token.
    r = model_flops("mixtral-8x7b")
    assert round(r.params.total / 1e9, 1) == 46.7
    assert round(r.params.active / 1e9, 1) == 12.9


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
    r = model_flops(name, batch=2)
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
    assert r.hardware_per_sample == pytest.approx(4 / 3 * r.training_per_sample)
    d = flops_per_unit(preset="dlrm-dcnv2")
    assert d.unit == "sample" and d.tokens_per_sample is None
    assert d.training_per_unit == d.training_per_sample == 3 * 32_060_928
    with pytest.raises(FlopsConfigError, match="exactly one of preset and config_path"):
        flops_per_unit()
    with pytest.raises(FlopsConfigError, match="exactly one"):
        flops_per_unit("palm-8b", "x.toml")
