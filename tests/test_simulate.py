"""Simulator: validation, determinism, schema, and that the analyses recover what was injected."""

from __future__ import annotations

import numpy as np
import pytest

from mfu_toolkit.analysis import account, breakdown, mfu_summary, rank_scores
from mfu_toolkit.run import Run, read_run, save_run
from mfu_toolkit.simulate import SimConfig, SimConfigError, simulate


def _sec(run: Run) -> dict[str, float]:
    df = breakdown(run)
    return dict(zip(df["category"], df["seconds"], strict=True))


@pytest.mark.parametrize(
    ("kw", "pattern"),
    [
        ({"n_ranks": 0}, r"SimConfig\.n_ranks must be an integer >= 1; got 0"),
        ({"step_time_s": -1.0}, r"SimConfig\.step_time_s must be a finite number > 0.*got -1\.0"),
        ({"checkpoint_mode": "lazy"}, r"SimConfig\.checkpoint_mode must be one of blocking, async; got 'lazy'"),
        ({"slow_ranks": (9,), "n_ranks": 4},
         r"SimConfig\.slow_ranks must be a tuple of integers in \[0, 3\]; got \(9,\)"),
        ({"fail_at_steps": (0,)}, r"SimConfig\.fail_at_steps must be .* in \[1, 200\]"),
        ({"transient_prob": 1.5}, r"SimConfig\.transient_prob must be .*<= 1"),
        ({"target_mfu": 0.0}, r"SimConfig\.target_mfu"),
        ({"per_rank": "yes"}, r"SimConfig\.per_rank must be True or False"),
    ],
)
def test_config_errors_name_parameter_allowed_values_and_value(kw, pattern):
    with pytest.raises(SimConfigError, match=pattern):
        SimConfig(**kw)


def test_deterministic_and_seeded():
    cfg = SimConfig(n_ranks=8, n_steps=40, jitter=0.1, transient_prob=0.05, mtbf_s=30.0,
                    checkpoint_every=5, checkpoint_s=1.0, restart_s=5.0, seed=3)
    a, b = simulate(cfg), simulate(cfg)
    assert a == b
    assert simulate(cfg.replace(seed=4)) != a
    assert simulate(cfg, seed=4) == simulate(cfg.replace(seed=4))
    assert simulate(cfg, validate=False) == a  # the unchecked fast path builds the same Run


def test_schema_matches_run_build_and_round_trips(tmp_path):
    run = simulate(SimConfig(n_ranks=3, n_steps=12, jitter=0.05, eval_every=4, eval_s=1.0,
                             checkpoint_every=5, checkpoint_s=0.5, fail_at_steps=(8,), restart_s=2.0))
    assert Run.build(run.steps, run.events, run.meta) == run
    assert read_run(save_run(run, tmp_path / "sim.parquet")) == run
    assert list(run.steps.columns) == ["attempt", "step", "rank", "start_s", "end_s", "data_wait_s", "compute_s"]
    m = run.meta
    assert m.n_accelerators == 3 and m.peak_flops_per_accelerator and m.model_flops_per_step and m.global_batch
    job = simulate(SimConfig(n_ranks=3, n_steps=12, per_rank=False))
    assert (job.steps["rank"] == -1).all() and len(job.steps) == 12


def test_clean_run_gives_the_target_mfu():
    run = simulate(SimConfig(n_ranks=16, n_steps=30, target_mfu=0.37))
    s = mfu_summary(run)
    assert s.steady_state_mfu == pytest.approx(0.37)
    assert s.end_to_end_mfu == pytest.approx(0.37)


def test_only_checkpoints_shows_only_checkpoint_cost():
    run = simulate(SimConfig(n_ranks=4, n_steps=50, checkpoint_every=10, checkpoint_s=2.5))
    sec = _sec(run)
    assert sec["checkpoint_save"] == pytest.approx(4 * 2.5)  # after steps 10, 20, 30, 40
    assert sec["ideal_compute"] == pytest.approx(50.0)
    others = {k: v for k, v in sec.items() if k not in ("checkpoint_save", "ideal_compute")}
    assert all(abs(v) < 1e-9 for v in others.values()), others


def test_async_checkpoints_count_only_the_blocking_snapshot():
    run = simulate(SimConfig(n_ranks=2, n_steps=50, checkpoint_every=10, checkpoint_s=4.0,
                             checkpoint_mode="async", async_stall_s=0.2))
    sec = _sec(run)
    assert sec["checkpoint_save"] == pytest.approx(4 * 0.2)
    assert len(run.events) == 8  # a snapshot and a background write per checkpoint


def test_injected_failures_and_lost_work_counted_exactly():
    # checkpoints after steps 5, 10, ...; failures half-way through step 7 and step 15.
    run = simulate(SimConfig(n_ranks=4, n_steps=20, checkpoint_every=5, checkpoint_s=1.0,
                             fail_at_steps=(7, 15), restart_s=30.0, checkpoint_load_s=2.0))
    inj = run.meta.extra["injected"]
    assert inj["failures"] == 2 and run.n_attempts == 3
    # lost: steps 6 and half of 7 (1.5 s), then steps 11-14 and half of 15 (4.5 s)
    assert inj["lost_work_s"] == pytest.approx(6.0)
    sec = _sec(run)
    assert sec["lost_work"] == pytest.approx(6.0, rel=1e-12)
    assert sec["failure_downtime"] == pytest.approx(60.0)
    assert sec["checkpoint_load"] == pytest.approx(4.0)
    assert sec["ideal_compute"] == pytest.approx(20.0)
    assert (run.events["kind"] == "failure").sum() == 2


def test_random_failures_from_mtbf_are_recovered():
    run = simulate(SimConfig(n_ranks=4, n_steps=200, mtbf_s=60.0, checkpoint_every=10,
                             checkpoint_s=1.0, restart_s=10.0, jitter=0.05, seed=11))
    inj = run.meta.extra["injected"]
    assert inj["failures"] >= 2
    sec = _sec(run)
    assert sec["lost_work"] == pytest.approx(inj["lost_work_s"], rel=1e-9)
    assert sec["failure_downtime"] == pytest.approx(inj["failure_downtime_s"], rel=1e-9)
    assert account(run).useful_steps == 200


def test_injected_slow_rank_is_found():
    run = simulate(SimConfig(n_ranks=32, n_steps=40, jitter=0.03, slow_ranks=(13,), slow_factor=1.25, seed=1))
    scores = rank_scores(run)
    assert int(scores["rank"].iloc[0]) == 13
    assert scores["kind"].iloc[0] == "persistent"
    assert (scores["kind"] == "persistent").sum() == 1
    sec = _sec(run)
    assert sec["stragglers"] / run.wall_seconds > 0.15


def test_data_stalls_are_counted():
    run = simulate(SimConfig(n_ranks=2, n_steps=40, data_stall_prob=0.25, data_stall_s=0.5, seed=2))
    n_stalled = int((run.steps.groupby("step")["data_wait_s"].max() > 0).sum())
    assert n_stalled > 0
    assert _sec(run)["data_stall"] == pytest.approx(0.5 * n_stalled)


def test_unfinishable_job_is_an_error():
    with pytest.raises(SimConfigError, match="max_attempts"):
        simulate(SimConfig(n_ranks=1, n_steps=100, mtbf_s=1.0, max_attempts=20))


def test_vectorised_size_is_reasonable():
    run = simulate(SimConfig(n_ranks=256, n_steps=100, jitter=0.05, transient_prob=0.01))
    assert len(run.steps) == 25_600
    assert np.isfinite(run.steps["end_s"]).all()
