"""Recomputation conventions against the papers' own formulas, for GPT-3 175B.

Setup of Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large Transformer
Models", arXiv:2205.05198), Table 3: GPT-3 175B, 96 layers, h = 12288, 96 heads, s = 2048,
V = 51200 (the GPT-2 vocabulary padded), global batch B = 64 on 64 A100s (312 TFLOP/s bf16).
Table 5: 13.75 s per iteration with selective recomputation and sequence parallelism, model
FLOPs utilization 51.4 %, hardware FLOPs utilization 52.8 %.
"""

from __future__ import annotations

import pytest

from mfu_toolkit import formulas
from mfu_toolkit.flops import RECOMPUTE_MODES, get_preset, model_flops

B, s, L, h, V = 64, 2048, 96, 12288, 51200
A100_BF16 = 312e12
GPUS = 64


def gpt3(recompute: str):
    cfg = get_preset("gpt3-175b").config.with_(vocab_size=V)  # Megatron pads to 51200
    return model_flops(cfg, batch=B, recompute=recompute)


# Narayanan et al. 2021 (arXiv:2104.04473) / Korthikanti et al. eq. 7: model FLOPs per
# iteration, 72 B s L h^2 (1 + s/6h + V/12hL).
MODEL = 72 * B * s * L * h**2 * (1 + s / (6 * h) + V / (12 * h * L))
# Narayanan et al. 2021, eq. 3: full recomputation, 96 B s L h^2 (1 + s/6h + V/16Lh): the
# transformer layers 4 x forward, the logits layer 3 x.
FULL = 96 * B * s * L * h**2 * (1 + s / (6 * h) + V / (16 * L * h))
# Korthikanti et al. Sec 5 (text): selective recomputation re-runs QK^T and attention over V,
# 2 B s^2 h + 2 B s^2 h per layer, once.
SELECTIVE_TEXT = MODEL + 4 * B * s**2 * h * L
# Korthikanti et al. eq. 8: 72 B s L h^2 (1 + s/3h + V/12hL), three times the text's addition.
EQ8 = 72 * B * s * L * h**2 * (1 + s / (3 * h) + V / (12 * h * L))


def test_the_modes():
    assert RECOMPUTE_MODES == ("none", "selective", "selective-eq8", "full")
    assert EQ8 - MODEL == pytest.approx(3 * (SELECTIVE_TEXT - MODEL))


def test_model_flops_are_the_papers_eq_7_whatever_the_recomputation():
    for mode in RECOMPUTE_MODES:
        assert gpt3(mode).training_per_step == pytest.approx(MODEL, rel=1e-12)
    assert gpt3("none").hardware_per_step == pytest.approx(MODEL, rel=1e-12)


def test_full_recomputation_is_megatron_eq_3_logits_counted_3x():
    r = gpt3("full")
    assert r.hardware_per_step == pytest.approx(FULL, rel=1e-12)
    # The old convention (a whole extra forward, logits 4 x) is higher by one logits forward.
    logits_forward = 2 * B * s * h * V
    assert 4 / 3 * MODEL - r.hardware_per_step == pytest.approx(logits_forward, rel=1e-9)
    text = "\n".join(r.conventions.describe())
    assert "logits (output) layer not" in text and "arXiv:2104.04473, eq. 3" in text


def test_selective_follows_the_text_and_eq8_is_an_explicit_option():
    assert gpt3("selective").hardware_per_step == pytest.approx(SELECTIVE_TEXT, rel=1e-12)
    assert gpt3("selective-eq8").hardware_per_step == pytest.approx(EQ8, rel=1e-12)
    eq8 = "\n".join(gpt3("selective-eq8").conventions.describe())
    assert "eq. 8" in eq8 and "arXiv:2205.05198" in "\n".join(
        gpt3("selective").conventions.describe()
    )


def test_korthikanti_table_5_mfu_and_hfu_of_gpt3_175b():
    # 13.75 s per iteration on 64 A100s: MFU 51.4 % and HFU 52.8 % (Table 5). The published
    # HFU needs eq. 8; the text's selective recomputation gives 51.8 %.
    def util(flops: float) -> float:
        return formulas.mfu(
            model_flops_per_step=flops,
            step_s=13.75,
            n_accelerators=GPUS,
            peak_flops_per_accelerator=A100_BF16,
        )

    assert round(100 * util(gpt3("none").training_per_step), 1) == 51.4
    assert round(100 * util(gpt3("selective-eq8").hardware_per_step), 1) == 52.8
    assert round(100 * util(gpt3("selective").hardware_per_step), 1) == 51.8


def test_ratio_hfu_over_mfu_eq_9():
    # Korthikanti et al. eq. 9: hardware / model FLOPs ~ 1 + s/6h under eq. 8 (3h >> s, 12hL >> V).
    ratio = gpt3("selective-eq8").hardware_per_step / gpt3("none").training_per_step
    assert ratio == pytest.approx(1 + s / (6 * h), rel=2e-3)
