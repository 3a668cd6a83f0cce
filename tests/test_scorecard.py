"""Scorecard: the four families, values consistent with the other analyses, unknowns explained."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfu_toolkit.analysis import (
    account,
    checkpoint_report,
    gpu_idle_share,
    mfu_summary,
    scaling_from_runs,
    scorecard,
)
from mfu_toolkit.analysis.scorecard import FAMILIES
from mfu_toolkit.run import Run
from mfu_toolkit.simulate import SimConfig, simulate


def _val(sc: pd.DataFrame, metric: str) -> float:
    return float(sc.set_index("metric").loc[metric, "value"])


@pytest.fixture(scope="module")
def run() -> Run:
    return simulate(SimConfig(n_ranks=8, n_steps=80, jitter=0.05, seq_len=2048, samples_per_step=256,
                              checkpoint_every=20, checkpoint_s=3.0, fail_at_steps=(33,), restart_s=15.0,
                              eval_every=40, eval_s=4.0, warmup_steps=3, warmup_factor=3.0))


def test_families_and_columns(run):
    sc = scorecard(run)
    assert list(sc.columns) == ["family", "metric", "value", "unit", "note"]
    assert list(dict.fromkeys(sc["family"])) == list(FAMILIES)


def test_values_agree_with_the_analyses(run):
    sc = scorecard(run)
    s = mfu_summary(run)
    ck = checkpoint_report(run)
    acc = account(run)
    assert _val(sc, "steady_state_mfu") == pytest.approx(s.steady_state_mfu)
    assert _val(sc, "end_to_end_mfu") == pytest.approx(s.end_to_end_mfu)
    assert _val(sc, "failures") == 1 and _val(sc, "restarts") == 1
    assert _val(sc, "lost_work_s") == pytest.approx(ck.lost_work_s)
    assert _val(sc, "checkpoint_s_median") == pytest.approx(3.0)
    assert _val(sc, "straggler_share") == pytest.approx(acc.seconds["stragglers"] / acc.wall_s)
    # throughput: 256 samples per ideal step; tokens = × 2048; end to end scaled by goodput
    assert _val(sc, "samples_per_s_steady") == pytest.approx(256 / acc.ideal_step_s)
    assert _val(sc, "tokens_per_s_steady") == pytest.approx(256 * 2048 / acc.ideal_step_s)
    assert _val(sc, "samples_per_s_end_to_end") == pytest.approx(_val(sc, "samples_per_s_steady") * s.goodput)
    assert _val(sc, "model_flops_per_s_end_to_end") == pytest.approx(
        s.end_to_end_mfu * s.cluster_peak_flops)
    assert _val(sc, "straggler_tail_p99_p50") >= 1.0


def test_unknowns_carry_a_note():
    run = Run.build({"step": [0, 1, 2], "start_s": [0, 1, 2], "end_s": [1, 2, 3]})
    sc = scorecard(run).set_index("metric")
    assert np.isnan(sc.loc["steady_state_mfu", "value"]) and "FLOPs" in sc.loc["steady_state_mfu", "note"]
    assert (np.isnan(sc.loc["samples_per_s_steady", "value"])
            and "global_batch" in sc.loc["samples_per_s_steady", "note"])
    assert "others=" in sc.loc["scaling_efficiency", "note"]
    assert "others=" in sc.loc["scaling_efficiency_actual", "note"]
    assert "no accelerator utilisation trace" in sc.loc["gpu_idle_share", "note"]


def test_scaling_family_with_other_runs_and_gpu_idle_share(run):
    small = simulate(SimConfig(n_ranks=4, n_steps=40, seq_len=2048, samples_per_step=128))
    sc = scorecard(run, others=[small])
    assert 0.5 < _val(sc, "scaling_efficiency") <= 1.01
    # the same comparison on the mean actual step (stragglers' waits included): what the
    # scaling table gives with step_time="actual", never above the ideal-step figure here
    actual = scaling_from_runs([run, small], names=["big", "small"], step_time="actual")
    assert _val(sc, "scaling_efficiency_actual") == pytest.approx(
        actual.set_index("run").loc["big", "scaling_efficiency"], rel=1e-12)
    assert _val(sc, "scaling_efficiency_actual") <= _val(sc, "scaling_efficiency")
    util = pd.DataFrame({"t": [0, 30, 60, 90], "gpu_utilization_pct": [90.0, 80.0, 70.0, 60.0]})
    with_trace = run.replace(tables={"gpu_util": util})
    idle, why = gpu_idle_share(with_trace)
    assert idle == pytest.approx(0.25) and "gpu_util" in why
    assert _val(scorecard(with_trace), "gpu_idle_share") == pytest.approx(0.25)
    # a profiler trace: per-step busy and idle GPU time
    st = run.steps.copy()
    st["gpu_busy_s"], st["gpu_idle_s"] = 0.6, 0.2
    idle, why = gpu_idle_share(run.replace(steps=st))
    assert idle == pytest.approx(0.25) and "gpu_busy_s" in why
