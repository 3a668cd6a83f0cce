"""The explorers' pure functions (mfu_toolkit.scenarios.whatif), checked against hand computations."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mfu_toolkit.analysis import expected_max
from mfu_toolkit.analysis.checkpoint import LLAMA3_405B
from mfu_toolkit.hardware import RegistryError
from mfu_toolkit.scenarios.whatif import (
    ASYNC_STALL_FRACTION,
    LLAMA3_FAILURES_PER_GPU_YEAR,
    YEAR_S,
    checkpoint_scenario,
    expected_sync_step,
    format_duration,
    gap_scenario,
    gem_scenario,
    straggler_scenario,
)

H100_BF16 = 989.4e12  # FLOP/s, NVIDIA H100 SXM datasheet, dense BF16 Tensor Core

QUIET = dict(jitter=0.0, stragglers=0, data_stall=0.0, eval_every=0, checkpoint_every=0,
             mtbf_hours=None, init_s=0.0)

# --------------------------------------------------------------------------------------------
# gap


def test_gap_defaults_are_small_and_account_for_all_wall_time():
    r = gap_scenario()
    assert r.config.n_ranks * r.config.n_steps <= 16 * 300  # small enough for a live widget
    assert r.table["seconds"].sum() == pytest.approx(r.wall_s, rel=1e-9)
    assert r.end_to_end_mfu == pytest.approx(r.steady_state_mfu * r.goodput, rel=1e-9)
    assert r.end_to_end_mfu < r.steady_state_mfu
    assert r.steady_state_mfu == pytest.approx(0.4, rel=0.01)  # target_mfu
    cat, share = r.largest_loss
    assert share == r.table["share"].iloc[1:].max()
    assert f"End-to-end MFU {r.end_to_end_mfu:.2%}" in r.headline and cat.replace("_", " ") in r.headline


def test_gap_is_deterministic_for_a_seed():
    a, b = gap_scenario(seed=3), gap_scenario(seed=3)
    assert a.headline == b.headline and a.table.equals(b.table)


def test_gap_without_losses_is_steady_state():
    r = gap_scenario(**QUIET)
    assert r.goodput == pytest.approx(1.0, abs=1e-9)
    assert r.end_to_end_mfu == pytest.approx(r.steady_state_mfu, rel=1e-9)
    assert r.failures == 0


def test_gap_one_straggler_costs_its_slowdown():
    # No jitter: every step lasts slowdown × step_s, of which (slowdown − 1) × step_s is waiting.
    r = gap_scenario(**{**QUIET, "stragglers": 1, "slowdown": 1.5}, ranks=8, steps=100, step_s=2.0)
    sec = r.table.set_index("category")["seconds"]
    assert sec["stragglers"] == pytest.approx(100 * 0.5 * 2.0, rel=1e-9)
    assert r.goodput == pytest.approx(1 / 1.5, rel=1e-9)


def test_gap_checkpoints_blocking_vs_async():
    # 300 steps, a checkpoint every 60 steps and none after the last: steps 60, 120, 180, 240.
    kw = {**QUIET, "checkpoint_every": 60, "checkpoint_s": 15.0}
    blocking = gap_scenario(**kw).table.set_index("category")["seconds"]
    asynchronous = gap_scenario(**kw, async_checkpoint=True).table.set_index("category")["seconds"]
    assert blocking["checkpoint_save"] == pytest.approx(4 * 15.0)
    assert asynchronous["checkpoint_save"] == pytest.approx(4 * ASYNC_STALL_FRACTION * 15.0)


def test_gap_failures_cost_downtime_and_lost_work():
    r = gap_scenario(**{**QUIET, "checkpoint_every": 50, "checkpoint_s": 5.0, "mtbf_hours": 0.1}, restart_s=30.0)
    sec = r.table.set_index("category")["seconds"]
    assert r.failures >= 1
    assert sec["failure_downtime"] == pytest.approx(30.0 * r.failures)
    assert sec["lost_work"] > 0


def test_gap_rejects_bad_knobs():
    with pytest.raises(ValueError, match="stragglers"):
        gap_scenario(ranks=4, stragglers=5)
    with pytest.raises(ValueError, match="mtbf_hours"):
        gap_scenario(mtbf_hours=0)
    with pytest.raises(ValueError, match="jitter"):
        gap_scenario(jitter=-1.0)


# --------------------------------------------------------------------------------------------
# stragglers


def test_one_rank_waits_for_nobody():
    r = straggler_scenario(ranks=1, jitter_cv=0.2)
    assert r.expected_step_s == 1.0 and r.lost_share == 0.0
    assert expected_sync_step(1, jitter_cv=0.3, slow_ranks=1, slowdown=1.5, base_step_s=2.0)[0] == 3.0


def test_matches_exact_lognormal_order_statistics_without_slow_ranks():
    sizes = [2, 8, 64, 1024, 16384]
    got = expected_sync_step(sizes, jitter_cv=0.05)
    want = [expected_max(n, dist="lognormal", mean=1.0, std=0.05) for n in sizes]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def test_two_ranks_normal_limit_by_hand():
    # Small CV: a lognormal is nearly normal, and E[max of 2 iid N(μ, σ²)] = μ + σ/√π.
    cv = 0.01
    assert expected_sync_step(2, jitter_cv=cv)[0] == pytest.approx(1 + cv / math.sqrt(math.pi), rel=2e-5)


def test_slow_ranks_against_monte_carlo():
    n, k, s, cv = 64, 3, 1.15, 0.08
    rng = np.random.default_rng(7)
    sig2 = math.log1p(cv**2)
    x = rng.lognormal(-sig2 / 2, math.sqrt(sig2), size=(40000, n))
    x[:, :k] *= s
    m = x.max(axis=1)
    got = expected_sync_step(n, jitter_cv=cv, slow_ranks=k, slowdown=s)[0]
    assert abs(got - m.mean()) < 4 * m.std() / math.sqrt(len(m))


def test_no_jitter_slow_rank_sets_the_pace():
    r = straggler_scenario(ranks=512, jitter_cv=0.0, slow_ranks=2, slowdown=1.25)
    assert r.expected_step_s == 1.25
    assert r.lost_share == pytest.approx(1 - 1 / 1.25)
    assert r.jitter_lost_share == 0.0


def test_lost_share_grows_with_ranks_and_is_one_minus_base_over_expected():
    r = straggler_scenario(ranks=3000, jitter_cv=0.05, slow_ranks=1, slowdown=1.1, base_step_s=2.0)
    t = r.table
    assert list(t["n_ranks"]) == sorted({2**k for k in range(15)} | {3000})
    assert (np.diff(t["lost_share"]) > 0).all()
    np.testing.assert_allclose(t["lost_share"], 1 - 2.0 / t["expected_step_s"], rtol=1e-12)
    assert (t["expected_step_s"] >= t["jitter_only_step_s"] - 1e-12).all()
    row = t[t["n_ranks"] == 3000].iloc[0]
    assert r.expected_step_s == row["expected_step_s"]
    assert r.slow_rank_lost_share == pytest.approx(r.lost_share - r.jitter_lost_share)
    assert f"{r.expected_step_s:.3f} s at 3,000 ranks" in r.headline


def test_straggler_rejects_bad_inputs():
    with pytest.raises(ValueError, match="ranks"):
        straggler_scenario(ranks=0)
    with pytest.raises(ValueError, match="slowdown"):
        straggler_scenario(slowdown=0.5)
    with pytest.raises(ValueError, match="jitter_cv"):
        straggler_scenario(jitter_cv=float("nan"))


# --------------------------------------------------------------------------------------------
# checkpoints


def test_checkpoint_blocking_by_hand():
    gpus, rate, d, restart, tau = 4096, 0.5, 120.0, 900.0, 1800.0
    r = checkpoint_scenario(n_accelerators=gpus, failures_per_accelerator_per_year=rate, checkpoint_s=d,
                            restart_s=restart, interval_s=tau)
    m = YEAR_S / rate / gpus  # failure rates add over GPUs
    assert r.mtbf_s == pytest.approx(m, rel=1e-12)
    assert r.young_s == pytest.approx(math.sqrt(2 * d * m), rel=1e-12)  # Young 1974
    x = d / (2 * m)
    daly = math.sqrt(2 * d * m) * (1 + math.sqrt(x) / 3 + x / 9) - d  # Daly 2006
    assert r.daly_s == pytest.approx(daly, rel=1e-12) and r.optimum_s == r.daly_s
    # first order: checkpoint cost δ/(τ+δ), half a segment lost per failure, plus the restart
    want = d / (tau + d) + (tau + d) / 2 / m + restart / m
    assert r.overhead == pytest.approx(want, rel=1e-12)
    opt = r.daly_s
    assert r.optimum_overhead == pytest.approx(d / (opt + d) + (opt + d) / 2 / m + restart / m, rel=1e-12)
    assert r.optimum_overhead <= r.table["total"].min() * 1.01
    marks = set(r.table["marker"])
    assert {"young", "daly", "chosen"} <= marks
    assert r.table["interval_s"].is_monotonic_increasing
    assert "Daly" in r.headline and f"{r.overhead:.2%}" in r.headline


def test_checkpoint_node_mtbf_and_default_interval():
    r = checkpoint_scenario(n_accelerators=1000, node_mtbf_hours=5000.0, checkpoint_s=30.0)
    assert r.mtbf_s == pytest.approx(5000.0 * 3600 / 125)  # ceil(1000 / 8) = 125 nodes
    assert r.interval_s == r.optimum_s and r.overhead == r.optimum_overhead


def test_checkpoint_default_rate_is_llama3():
    r = checkpoint_scenario(n_accelerators=16384)
    assert LLAMA3_FAILURES_PER_GPU_YEAR == pytest.approx(419 / (54 * 16384) * 365.25, rel=1e-12)
    assert r.mtbf_s == pytest.approx(LLAMA3_405B.unexpected_mtbf_s, rel=1e-12)


def test_checkpoint_async_by_hand_and_write_floor():
    gpus, rate, w, stall, restart, tau = 16384, 0.2, 600.0, 6.0, 600.0, 1200.0
    r = checkpoint_scenario(n_accelerators=gpus, failures_per_accelerator_per_year=rate, checkpoint_s=w,
                            blocking=False, async_stall_s=stall, restart_s=restart, interval_s=tau)
    m = YEAR_S / rate / gpus
    assert r.blocking_s == stall and r.mode == "async"
    # async: only the snapshot blocks; the work since the last durable checkpoint is τ/2 + write
    assert r.overhead == pytest.approx(stall / (tau + stall) + (tau / 2 + w) / m + restart / m, rel=1e-12)
    assert r.young_s == pytest.approx(math.sqrt(2 * stall * m))
    assert r.daly_s < w and r.optimum_s == w  # at most one background write in flight
    assert "optimum" in set(r.table["marker"])
    default_stall = checkpoint_scenario(checkpoint_s=100.0, blocking=False)
    assert default_stall.blocking_s == pytest.approx(ASYNC_STALL_FRACTION * 100.0)


def test_checkpoint_rejects_two_rates_and_bad_values():
    with pytest.raises(ValueError, match="at most one"):
        checkpoint_scenario(failures_per_accelerator_per_year=0.1, node_mtbf_hours=100.0)
    with pytest.raises(ValueError, match="checkpoint_s"):
        checkpoint_scenario(checkpoint_s=0)
    with pytest.raises(ValueError, match="interval_s"):
        checkpoint_scenario(interval_s=-5.0)


def test_format_duration():
    assert format_duration(45) == "45.0 s"
    assert format_duration(750) == "12.5 min"
    assert format_duration(3.2 * 3600) == "3.20 h"
    assert format_duration(3 * 86400) == "3.0 d"


# --------------------------------------------------------------------------------------------
# GEM


def test_gem_four_x_flops_at_two_x_efficiency_costs_two_x_gpu_hours():
    f, g, e = 1e24, 4096, 0.10
    r = gem_scenario(base_flops=f, n_accelerators=g, mfu=0.225, base_end_to_end_efficiency=e)
    assert r.gpu_hours_ratio == 2.0 and r.days_ratio == 2.0
    # GPU-hours = FLOPs / (gpus × peak × end-to-end MFU) / 3600 × gpus
    assert r.base_gpu_hours == pytest.approx(f / (g * H100_BF16 * e) / 3600 * g, rel=1e-12)
    assert r.scaled_gpu_hours == pytest.approx(4 * f / (g * H100_BF16 * 2 * e) / 3600 * g, rel=1e-12)
    assert r.base_days == pytest.approx(f / (g * H100_BF16 * e) / 86400, rel=1e-12)
    assert r.base_idle_share == pytest.approx(0.90) and r.scaled_idle_share == pytest.approx(0.80)
    assert "2.00× GPU-hours" in r.headline and "90.0% → 80.0%" in r.headline


def test_gem_idle_split_sums_and_goodput():
    r = gem_scenario(mfu=0.25, base_end_to_end_efficiency=0.1, efficiency_multiplier=2.0)
    t = r.table.set_index("job")
    np.testing.assert_allclose(t["idle_in_steps_share"] + t["idle_outside_steps_share"], t["idle_share"])
    np.testing.assert_allclose(t["useful_gpu_hours"] + t["idle_gpu_hours"], t["gpu_hours"])
    assert t.loc["baseline", "goodput"] == pytest.approx(0.4)  # 10 % end to end of a 25 % steady state
    assert t.loc["scaled", "goodput"] == pytest.approx(0.8)
    assert t.loc["scaled", "idle_in_steps_share"] == pytest.approx(0.8 * 0.75)


def test_gem_without_efficiency_gain_costs_four_x():
    r = gem_scenario(efficiency_multiplier=1.0)
    assert r.gpu_hours_ratio == 4.0


def test_gem_refuses_end_to_end_above_steady_state_and_unknown_peak():
    with pytest.raises(ValueError, match="exceeds the steady-state mfu"):
        gem_scenario(mfu=0.2, base_end_to_end_efficiency=0.15, efficiency_multiplier=2.0)
    with pytest.raises(ValueError, match="must not exceed"):
        gem_scenario(mfu=0.2, base_end_to_end_efficiency=0.3)
    with pytest.raises(RegistryError):
        gem_scenario(accelerator="H1OO")


def test_old_keyword_names_work_for_one_release_with_a_warning():
    """Public signatures count accelerators as ``n_accelerators``; ``gpus=`` and its kin still
    work, each with a DeprecationWarning naming the new keyword."""
    new = checkpoint_scenario(n_accelerators=1000, failures_per_accelerator_per_year=0.5, checkpoint_s=30.0)
    with pytest.warns(DeprecationWarning, match=r"checkpoint_scenario\(gpus=\.\.\.\) is renamed n_accelerators="):
        old = checkpoint_scenario(gpus=1000, failures_per_accelerator_per_year=0.5, checkpoint_s=30.0)
    assert old.mtbf_s == new.mtbf_s == pytest.approx(365 * 86400 / (1000 * 0.5), rel=0.01)
    with pytest.warns(DeprecationWarning, match="gpus_per_node"):
        by_node = checkpoint_scenario(n_accelerators=1000, node_mtbf_hours=5000.0, gpus_per_node=4)
    assert by_node.mtbf_s == pytest.approx(5000.0 * 3600 / 250)  # 250 nodes of 4
    with pytest.raises(TypeError, match="got both gpus= .* and n_accelerators="):
        gem_scenario(gpus=8, n_accelerators=8)
