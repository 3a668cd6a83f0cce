"""Scaling efficiency from a table and from runs of different sizes."""

from __future__ import annotations

import pandas as pd
import pytest

from mfu_toolkit.analysis import account, run_throughput, scaling_from_runs, scaling_table
from mfu_toolkit.run import Run
from mfu_toolkit.simulate import SimConfig, simulate


def test_scaling_table_by_hand():
    # 8 → 100 samples/s; 64 → 720 (ideal 800: 90 %); 16 → 190 (ideal 200: 95 %)
    df = pd.DataFrame({"n_accelerators": [64, 8, 16], "throughput": [720.0, 100.0, 190.0]})
    out = scaling_table(df)
    assert list(out["n_accelerators"]) == [8, 16, 64]
    assert list(out["ideal_throughput"]) == [100.0, 200.0, 800.0]
    assert out["scaling_efficiency"].tolist() == pytest.approx([1.0, 0.95, 0.9])
    assert out["per_accelerator"].tolist() == pytest.approx([12.5, 11.875, 11.25])
    out16 = scaling_table(df, base_n=16)
    assert out16["scaling_efficiency"].iloc[2] == pytest.approx((720 / 190) / 4)


def test_scaling_table_errors():
    df = pd.DataFrame({"gpus": [8], "tput": [1.0]})
    with pytest.raises(ValueError, match=r"n='n_accelerators' is not a column of data; columns: \['gpus', 'tput'\]"):
        scaling_table(df)
    out = scaling_table(df, n="gpus", throughput="tput")
    assert out["scaling_efficiency"].iloc[0] == 1.0
    with pytest.raises(ValueError, match=r"base_n must be one of the N values in data \[8\]; got 4"):
        scaling_table(df, n="gpus", throughput="tput", base_n=4)


def test_scaling_from_simulated_runs():
    # weak scaling: the global batch grows with N; a slower step at 64 ranks costs efficiency
    small = simulate(SimConfig(n_ranks=8, n_steps=20, samples_per_step=8 * 16))
    big = simulate(SimConfig(n_ranks=64, n_steps=20, samples_per_step=64 * 16, step_time_s=1.25))
    out = scaling_from_runs([big, small], names=["big", "small"])
    assert list(out["run"]) == ["small", "big"]
    assert out["scaling_efficiency"].iloc[1] == pytest.approx(1 / 1.25)
    tp, why = run_throughput(small, metric="samples_per_s")
    assert tp == pytest.approx(128.0) and why == ""
    tp, why = run_throughput(small, metric="tokens_per_s")
    assert tp is None and "seq_len" in why
    with pytest.raises(ValueError,
                       match=r"metric must be one of samples_per_s, tokens_per_s, flops_per_s, steps_per_s; got 'mfu'"):
        run_throughput(small, metric="mfu")
    with pytest.raises(ValueError, match="has no meta.n_accelerators"):
        scaling_from_runs([Run.build({"step": [0, 1], "start_s": [0, 1], "end_s": [1, 2]})])


def _mean_synchronous_step(run: Run) -> float:
    """By hand from the steps table: per window step, last end minus first start over ranks."""
    window = account(run).steps
    in_window = set(window.loc[window["in_window"], "step"])
    s = run.steps[run.steps["step"].isin(in_window)]
    per_step = s.groupby("step").agg(start=("start_s", "min"), end=("end_s", "max"))
    assert len(per_step) == len(in_window)
    return float((per_step["end"] - per_step["start"]).mean())


def test_scaling_actual_step_time_includes_the_wait_for_the_slowest():
    # weak scaling, same per-GPU step; the bigger job has more jitter and 8x the ranks to wait for
    small = simulate(SimConfig(n_ranks=8, n_steps=40, samples_per_step=8 * 16, jitter=0.01, seed=1))
    big = simulate(SimConfig(n_ranks=64, n_steps=40, samples_per_step=64 * 16, jitter=0.08, seed=2))
    typical = scaling_from_runs([small, big], names=["small", "big"])
    actual = scaling_from_runs([small, big], names=["small", "big"], step_time="actual")
    assert typical.attrs["step_time"] == "typical" and actual.attrs["step_time"] == "actual"
    assert list(actual["run"]) == ["small", "big"]
    eff_typical = typical["scaling_efficiency"].iloc[1]
    eff_actual = actual["scaling_efficiency"].iloc[1]
    assert eff_typical == pytest.approx(1.0, abs=0.02)  # the typical GPU is as fast at 64 as at 8
    assert eff_actual < eff_typical - 0.05

    tp_small = small.meta.global_batch / _mean_synchronous_step(small)
    tp_big = big.meta.global_batch / _mean_synchronous_step(big)
    assert actual["throughput"].tolist() == pytest.approx([tp_small, tp_big], rel=1e-9)
    assert eff_actual == pytest.approx((tp_big / tp_small) / (64 / 8), rel=1e-9)
    tp, why = run_throughput(big, metric="steps_per_s", step_time="actual")
    assert tp == pytest.approx(1.0 / _mean_synchronous_step(big), rel=1e-9) and why == ""
    # the synchronous step is never shorter than the typical GPU's step
    for r in (small, big):
        assert run_throughput(r, step_time="actual")[0] <= run_throughput(r)[0]


def test_scaling_step_time_option_errors():
    run = simulate(SimConfig(n_ranks=8, n_steps=10))
    with pytest.raises(ValueError, match=r"step_time must be one of typical, actual; got 'median'"):
        scaling_from_runs([run], step_time="median")
    with pytest.raises(ValueError, match=r"step_time must be one of typical, actual; got 'max'"):
        run_throughput(run, step_time="max")
