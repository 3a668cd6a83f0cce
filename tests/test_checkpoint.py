"""Checkpoints and failures: Young/Daly pinned by hand, overhead model, reference scenario, Run report."""

from __future__ import annotations

import math

import pytest

from mfu_toolkit.analysis import (
    LLAMA3_405B,
    REFERENCE_SCENARIOS,
    checkpoint_overhead,
    checkpoint_report,
    daly_interval,
    interval_table,
    job_mtbf,
    reference_scenarios,
    young_interval,
)
from mfu_toolkit.simulate import SimConfig, simulate


def test_young_by_hand():
    # δ = 60 s, M = 3 h = 10,800 s: √(2·60·10800) = √1,296,000 = 1138.4199577 s
    assert young_interval(checkpoint_s=60, mtbf_s=10_800) == pytest.approx(1138.4199577, rel=1e-10)
    # δ = 2 s, M = 100 s: √400 = 20
    assert young_interval(checkpoint_s=2, mtbf_s=100) == 20.0


def test_daly_by_hand():
    # δ = 60, M = 10,800: r = δ/2M = 1/360; √r = 0.05270463; 1 + √r/3 + r/9 = 1.01787685
    # τ = 1138.4199577 × 1.01787685 − 60 = 1098.77132
    assert daly_interval(checkpoint_s=60, mtbf_s=10_800) == pytest.approx(1098.77132, rel=1e-7)
    # δ = 2, M = 100: r = 0.01; 20 × (1 + 0.1/3 + 0.01/9) − 2 = 18.6888889
    assert daly_interval(checkpoint_s=2, mtbf_s=100) == pytest.approx(18.6888889, rel=1e-7)
    # δ >= 2M: the job fails before a checkpoint completes on average; τ = M
    assert daly_interval(checkpoint_s=100, mtbf_s=40) == 40.0
    assert daly_interval(checkpoint_s=80, mtbf_s=40) == 40.0


def test_interval_errors_name_the_parameter():
    with pytest.raises(ValueError, match=r"checkpoint_s must be a finite number > 0 \(seconds\); got 0"):
        young_interval(checkpoint_s=0, mtbf_s=10)
    with pytest.raises(ValueError, match=r"mtbf_s must be .*got -5"):
        daly_interval(checkpoint_s=1, mtbf_s=-5)


def test_job_mtbf():
    assert job_mtbf(n_accelerators=16_384, accelerator_mtbf_s=16_384 * 3600.0) == pytest.approx(3600.0)
    # 1000 accelerators at 8 per node → 125 nodes
    assert job_mtbf(n_accelerators=1000, node_mtbf_s=125 * 10.0) == pytest.approx(10.0)
    with pytest.raises(ValueError, match="exactly one of"):
        job_mtbf(n_accelerators=8)
    with pytest.raises(ValueError, match="n_accelerators must be an integer >= 1; got 0"):
        job_mtbf(n_accelerators=0, accelerator_mtbf_s=1.0)


def test_overhead_by_hand_and_young_is_near_optimal():
    # τ = 1000, δ = 10, M = 10,000, R = 100 (blocking):
    # checkpoint 10/1010; lost (1010/2)/10000 = 0.0505; restart 100/10000 = 0.01
    o = checkpoint_overhead(interval_s=1000, checkpoint_s=10, mtbf_s=10_000, restart_s=100)
    assert o["checkpoint"] == pytest.approx(10 / 1010)
    assert o["lost_work"] == pytest.approx(0.0505)
    assert o["restart"] == pytest.approx(0.01)
    assert o["total"] == pytest.approx(10 / 1010 + 0.0505 + 0.01)
    assert o["useful"] == pytest.approx(1 - o["total"])
    # async: snapshot stall 1 s, background write 30 s; lost = τ/2 + write
    a = checkpoint_overhead(interval_s=1000, checkpoint_s=1, mtbf_s=10_000, mode="async", write_s=30)
    assert a["lost_work"] == pytest.approx((500 + 30) / 10_000)
    y = young_interval(checkpoint_s=10, mtbf_s=10_000)
    at = lambda t: checkpoint_overhead(interval_s=t, checkpoint_s=10, mtbf_s=10_000)["total"]  # noqa: E731
    assert at(y) < at(y / 2) and at(y) < at(2 * y)
    tab = interval_table(checkpoint_s=10, mtbf_s=10_000)
    assert set(tab["marker"]) == {"", "young", "daly"}
    best = tab.loc[tab["total"].idxmin()]
    assert best["interval_s"] == pytest.approx(y, rel=0.15)
    with pytest.raises(ValueError, match="mode must be one of blocking, async; got 'lazy'"):
        checkpoint_overhead(interval_s=1, checkpoint_s=1, mtbf_s=1, mode="lazy")


def test_llama3_reference_scenario_with_provenance():
    s = LLAMA3_405B
    assert (s.interruptions, s.unexpected_interruptions, s.period_days, s.n_accelerators) == (466, 419, 54.0, 16_384)
    assert "2407.21783" in s.source and "3.3.4" in s.source
    # 54 days / 466 interruptions = 2.781 h; / 419 = 3.093 h
    assert s.job_mtbf_s / 3600 == pytest.approx(54 * 24 / 466)
    assert s.unexpected_mtbf_s / 3600 == pytest.approx(3.0931, abs=1e-4)
    assert REFERENCE_SCENARIOS["llama3-405b-pretraining"] is s
    df = reference_scenarios()
    assert df.loc[0, "job_mtbf_h"] == pytest.approx(2.7811, abs=1e-4)
    # Young for a 60 s checkpoint at this MTBF: √(2·60·10012) ≈ 1096 s
    assert young_interval(checkpoint_s=60, mtbf_s=s.job_mtbf_s) == pytest.approx(math.sqrt(120 * 54 * 86400 / 466))


def test_report_from_a_simulated_run():
    run = simulate(SimConfig(n_ranks=4, n_steps=60, checkpoint_every=10, checkpoint_s=2.0,
                             fail_at_steps=(25, 47), restart_s=20.0, checkpoint_load_s=3.0))
    r = checkpoint_report(run)
    inj = run.meta.extra["injected"]
    assert r.failures == 2 and r.restarts == 2
    assert r.checkpoint_s_median == pytest.approx(2.0)
    assert r.interval_steps_median == 10
    assert r.interval_s_median == pytest.approx(12.0)  # 10 steps of 1 s + the 2 s write
    assert r.lost_work_s == pytest.approx(inj["lost_work_s"])
    assert r.failure_downtime_s == pytest.approx(40.0)
    assert r.mean_time_to_recover_s == pytest.approx((40.0 + 6.0) / 2)
    assert r.mtbf_s == pytest.approx((run.wall_seconds - 40.0) / 2)
    assert r.daly_interval_s == pytest.approx(daly_interval(checkpoint_s=2.0, mtbf_s=r.mtbf_s))
    assert r.interval_vs_daly == pytest.approx(10.0 / r.daly_interval_s)
    assert 0 < r.observed_overhead < 1
    assert any("Daly" in line for line in r.lines())
    assert set(r.to_frame()["metric"]) >= {"failures", "lost_work_s"}


def test_report_without_failures_needs_an_mtbf():
    run = simulate(SimConfig(n_ranks=2, n_steps=30, checkpoint_every=10, checkpoint_s=1.0))
    r = checkpoint_report(run)
    assert r.mtbf_s is None and "pass mtbf_s" in r.mtbf_source and r.daly_interval_s is None
    r = checkpoint_report(run, mtbf_s=3600.0)
    assert r.young_interval_s == pytest.approx(math.sqrt(2 * 3600.0))
