"""MFU arithmetic pinned to independent numbers (hand computations, the PaLM paper)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mfu_toolkit import formulas as f
from mfu_toolkit.formulas import MFUAbove100Error, compute_mfu, hfu, mfu, mfu_from_tokens

SEED_ARGS = dict(step_s=1.2, n_accelerators=128, peak_flops_per_accelerator=80e12, samples_per_step=8192)


def test_seed_example_corrected_reproduces_its_four_lines():
    # Hand computation: 2.4e15 FLOP / 1.2 s = 2.0e15 FLOP/s = 2,000 TFLOP/s;
    # 128 x 80 TFLOP/s = 10,240 TFLOP/s; 2,000 / 10,240 = 19.53125 %; 8192 / 1.2 = 6,826.67/s.
    r = compute_mfu(model_flops_per_step=2.4e15, **SEED_ARGS)
    assert r.lines() == [
        "Model throughput: 2,000.00 TFLOP/s",
        "Cluster peak: 10,240.00 TFLOP/s",
        "MFU: 19.53%",
        "Sample throughput: 6,826.67 samples/s",
    ]
    assert r.mfu == pytest.approx(2000 / 10240)


def test_seed_example_as_printed_is_refused_with_the_numbers():
    # The seed's 2.4e18 FLOPs per step give 2,000,000 TFLOP/s against 10,240: 19,531.25 %.
    with pytest.raises(MFUAbove100Error) as exc:
        compute_mfu(model_flops_per_step=2.4e18, **SEED_ARGS)
    msg = str(exc.value)
    assert "19531.25%" in msg and "2,000,000.00 TFLOP/s" in msg and "10,240.00 TFLOP/s" in msg
    assert "1000x" in msg and "sparse" in msg and "recomputation" in msg
    assert exc.value.value == pytest.approx(195.3125)
    assert isinstance(exc.value, ValueError)


def test_palm_540b_mfu_from_published_throughput():
    # PaLM (Chowdhery et al. 2022), Appendix B: 238.3K tokens/s on 6144 TPU v4 chips at
    # 275 TFLOP/s (bf16). 6N with N = 540e9 gives 45.7 %; adding 12*L*H*Q*T with L=118, H=48,
    # Q=256, T=2048 and N = 540.35e9 gives 46.2 %.
    six_n = 6 * 540e9
    assert mfu_from_tokens(flops_per_token=six_n, tokens_per_second=238.3e3, n_accelerators=6144,
                           peak_flops_per_accelerator=275e12) == pytest.approx(0.457, abs=5e-4)
    with_attn = 6 * 540.35e9 + 12 * 118 * 48 * 256 * 2048
    assert mfu_from_tokens(flops_per_token=with_attn, tokens_per_second=238.3e3, n_accelerators=6144,
                           peak_flops_per_accelerator=275e12) == pytest.approx(0.462, abs=5e-4)
    # With rematerialisation the hardware executes 4.10 TFLOP per token: HFU 57.8 %.
    tokens_per_step = 238.3e3  # one second of the job as a "step"
    h = hfu(hardware_flops_per_step=4.10e12 * tokens_per_step, step_s=1.0, n_accelerators=6144,
            peak_flops_per_accelerator=275e12)
    assert h == pytest.approx(0.578, abs=5e-4)


def test_compute_mfu_carries_every_denominator_and_hfu():
    r = compute_mfu(model_flops_per_step=1e15, hardware_flops_per_step=1.25e15, step_s=2.0,
                    n_accelerators=4, peak_flops_per_accelerator=500e12, tokens_per_step=4096,
                    accelerator="X", dtype="bf16", peak_source="https://example.com")
    d = r.to_dict()
    assert d["achieved_flops_per_second"] == 5e14
    assert d["cluster_peak_flops"] == 2e15
    assert d["mfu"] == 0.25 and d["hfu"] == 0.3125
    assert d["tokens_per_second"] == 2048
    assert d["peak_source"] == "https://example.com"
    assert "HFU: 31.25%" in r.lines()


def test_hardware_flops_below_model_flops_is_refused():
    with pytest.raises(ValueError, match="hardware_flops_per_step"):
        compute_mfu(model_flops_per_step=2e15, hardware_flops_per_step=1e15, step_s=1,
                    n_accelerators=8, peak_flops_per_accelerator=1e15)


@pytest.mark.parametrize(
    "kwargs, name",
    [
        (dict(model_flops_per_step=-1.0), "model_flops_per_step"),
        (dict(step_s=0.0), "step_s"),
        (dict(step_s=float("nan")), "step_s"),
        (dict(n_accelerators=0), "n_accelerators"),
        (dict(n_accelerators=2.5), "n_accelerators"),
        (dict(peak_flops_per_accelerator=float("inf")), "peak_flops_per_accelerator"),
    ],
)
def test_invalid_inputs_name_the_parameter(kwargs, name):
    base = dict(model_flops_per_step=1e15, step_s=1.0, n_accelerators=8, peak_flops_per_accelerator=1e15)
    base.update(kwargs)
    with pytest.raises(ValueError, match=name):
        mfu(**base)


def test_non_numbers_are_type_errors():
    with pytest.raises(TypeError, match="step_s"):
        mfu(model_flops_per_step=1e15, step_s="fast", n_accelerators=8, peak_flops_per_accelerator=1e15)
    with pytest.raises(TypeError, match="n_accelerators"):
        mfu(model_flops_per_step=1e15, step_s=1, n_accelerators=True, peak_flops_per_accelerator=1e15)


def test_arrays_broadcast_and_above_100_in_an_array_is_caught():
    steps = np.array([1.0, 2.0, 4.0])
    got = mfu(model_flops_per_step=1e15, step_s=steps, n_accelerators=8, peak_flops_per_accelerator=1e15)
    np.testing.assert_allclose(got, [0.125, 0.0625, 0.03125])
    with pytest.raises(MFUAbove100Error):
        mfu(model_flops_per_step=1e16, step_s=np.array([100.0, 1.0]), n_accelerators=8,
            peak_flops_per_accelerator=1e15)


def test_scaling_efficiency_hand_computed():
    # 8 -> 64 GPUs (8x) while throughput grows 1000 -> 6000 (6x): 6/8 = 75 %.
    assert f.scaling_efficiency(throughput=6000, n_accelerators=64, base_throughput=1000,
                                base_n_accelerators=8) == pytest.approx(0.75)


pos = st.floats(min_value=1e-3, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(flops=st.floats(min_value=1e9, max_value=1e18), t=pos, n=st.integers(1, 100_000), k=pos)
def test_mfu_is_linear_in_flops_and_inverse_in_time_and_n(flops, t, n, k):
    peak = 1e30  # far above anything, so the 100 % guard never trips here
    base = mfu(model_flops_per_step=flops, step_s=t, n_accelerators=n, peak_flops_per_accelerator=peak)
    assert math.isclose(mfu(model_flops_per_step=flops * k, step_s=t, n_accelerators=n,
                            peak_flops_per_accelerator=peak), base * k, rel_tol=1e-9)
    assert math.isclose(mfu(model_flops_per_step=flops, step_s=t * k, n_accelerators=n,
                            peak_flops_per_accelerator=peak), base / k, rel_tol=1e-9)
    assert math.isclose(mfu(model_flops_per_step=flops, step_s=t, n_accelerators=2 * n,
                            peak_flops_per_accelerator=peak), base / 2, rel_tol=1e-9)


@given(model=st.floats(min_value=1e9, max_value=1e15), extra=st.floats(min_value=0, max_value=1.0),
       t=pos, n=st.integers(1, 4096))
def test_hfu_never_below_mfu(model, extra, t, n):
    peak = 1e30
    r = compute_mfu(model_flops_per_step=model, hardware_flops_per_step=model * (1 + extra), step_s=t,
                    n_accelerators=n, peak_flops_per_accelerator=peak)
    assert r.hfu >= r.mfu
    assert 0 < r.mfu <= 1


@given(value=st.floats(min_value=1.0000001, max_value=1e6))
def test_anything_above_100_percent_raises(value):
    with pytest.raises(MFUAbove100Error):
        mfu(model_flops_per_step=value * 1e15, step_s=1.0, n_accelerators=1, peak_flops_per_accelerator=1e15)


def test_the_old_keyword_step_seconds_works_for_one_release_with_a_warning():
    """Public signatures say ``*_s`` for seconds; ``step_seconds=`` is still accepted, said so."""
    new = mfu(model_flops_per_step=1e15, step_s=2.0, n_accelerators=8, peak_flops_per_accelerator=1e15)
    with pytest.warns(DeprecationWarning, match=r"mfu\(step_seconds=\.\.\.\) is renamed step_s="):
        old = mfu(model_flops_per_step=1e15, step_seconds=2.0, n_accelerators=8, peak_flops_per_accelerator=1e15)
    assert old == new == pytest.approx(1e15 / 2.0 / 8e15)
    with pytest.raises(TypeError, match="got both step_seconds= .* and step_s="):
        mfu(model_flops_per_step=1e15, step_s=2.0, step_seconds=2.0, n_accelerators=8, peak_flops_per_accelerator=1e15)
    # the result keeps its field name: saved results and JSON read the same
    assert compute_mfu(model_flops_per_step=1e15, step_s=2.0, n_accelerators=8,
                       peak_flops_per_accelerator=1e15).step_seconds == 2.0
