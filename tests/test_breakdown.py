"""Breakdown: the timeline sweep, the steady-state window, MFU summary and the waterfall table."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, reject, settings
from hypothesis import strategies as st

from mfu_toolkit.analysis import CATEGORIES, account, breakdown, mfu_summary, steady_state_window
from mfu_toolkit.formulas import MFUAbove100Error
from mfu_toolkit.run import EVENT_KINDS, Run, RunMeta
from mfu_toolkit.simulate import SimConfig, SimConfigError, simulate


def _sec(df: pd.DataFrame) -> dict[str, float]:
    return dict(zip(df["category"], df["seconds"], strict=True))


def _assert_sums(run: Run) -> pd.DataFrame:
    df = breakdown(run)
    w = run.wall_seconds
    acc = account(run)
    assert set(acc.seconds) == set(CATEGORIES)
    # stall is listed only where a flagged outlier booked some, exposed_comm only where the run states it
    # (exposed_comm_s per step); every other category always
    listed = (set(CATEGORIES) - ({"stall"} if acc.seconds["stall"] == 0 else set())
              - (set() if acc.exposed_comm_basis else {"exposed_comm"}))
    assert set(df["category"]) == listed
    assert math.isclose(df["seconds"].sum(), w, rel_tol=1e-9, abs_tol=1e-9 * max(w, 1.0))
    sec = _sec(df)
    for c, v in sec.items():
        assert v >= -1e-9 * max(w, 1.0), (c, v)  # jitter too: the ideal is capped at the mean step
    return df


# --------------------------------------------------------------------------------------------
# hand-computed timelines


def test_hand_timeline_events_carve_steps_and_background_work_ranks_below():
    # init 0-10; five job-level steps of 2 s except a 3 s one; an eval between steps 3 and 4;
    # an async checkpoint write 21-25 overlapping step 4 (21-22): only 22-25 holds the job up.
    steps = {"step": [1, 2, 3, 4, 5], "start_s": [10, 12, 14, 20, 25], "end_s": [12, 14, 17, 22, 27]}
    events = [
        {"kind": "init", "start_s": 0, "end_s": 10},
        {"kind": "eval", "start_s": 17, "end_s": 20},
        {"kind": "checkpoint_save", "start_s": 21, "end_s": 25, "detail": "async write"},
    ]
    run = Run.build(steps, events, RunMeta())
    sec = _sec(_assert_sums(run))
    assert run.wall_seconds == 27
    assert sec["init"] == 10
    assert sec["eval"] == 3
    assert sec["checkpoint_save"] == 3  # 22..25, not the 1 s hidden under step 4
    # ideal step = median clean time = 2 s; 5 steps → 10 s; the 3 s step adds 1 s of jitter
    assert sec["ideal_compute"] == pytest.approx(10)
    assert sec["jitter"] == pytest.approx(1)
    assert sec["unaccounted"] == 0


def test_eval_logged_inside_a_coarse_block_is_carved_out():
    run = Run.build({"step": [0], "start_s": [0.0], "end_s": [10.0]}, [{"kind": "eval", "start_s": 4, "end_s": 6}])
    acc = account(run)
    assert acc.seconds["eval"] == 2
    assert acc.steps["labelled_s"].iloc[0] == 8
    assert acc.seconds["ideal_compute"] == pytest.approx(8)


def test_per_rank_steps_split_stragglers_and_data_waits():
    # 3 ranks, 4 steps; rank 2 takes 1.5 s of compute, the others 1.0 s; each step waits 0.25 s for data
    rows = []
    for k in range(4):
        t = k * 1.75
        for r, c in enumerate([1.0, 1.0, 1.5]):
            rows.append({"step": k, "rank": r, "start_s": t, "end_s": t + 0.25 + c, "data_wait_s": 0.25,
                         "compute_s": c})
    run = Run.build(pd.DataFrame(rows))
    sec = _sec(_assert_sums(run))
    assert run.wall_seconds == pytest.approx(7.0)
    assert sec["stragglers"] == pytest.approx(4 * 0.5)
    assert sec["data_stall"] == pytest.approx(4 * 0.25)
    assert sec["ideal_compute"] == pytest.approx(4 * 1.0)
    assert sec["jitter"] == pytest.approx(0.0, abs=1e-12)


def test_lost_steps_and_gap_between_attempts():
    steps = {
        "attempt": [0, 0, 0, 1, 1],
        "step": [1, 2, 3, 3, 4],
        "start_s": [0, 1, 2, 10, 11],
        "end_s": [1, 2, 3, 11, 12],
    }
    run = Run.build(steps, [{"kind": "failure", "start_s": 3, "end_s": 3, "attempt": 0}])
    sec = _sec(_assert_sums(run))
    assert sec["lost_work"] == 1  # attempt 0's step 3 was redone
    assert sec["failure_downtime"] == 7  # 3..10, from the failure to the next attempt
    assert sec["ideal_compute"] == 4


def test_unlogged_steps_between_logged_ones_are_inferred():
    # steps 1, 2 logged, then 3..9 not, then 10 logged: the gap carries 7 steps of work
    run = Run.build({"step": [1, 2, 10], "start_s": [0, 1, 9], "end_s": [1, 2, 10]})
    acc = account(run)
    assert acc.seconds["unaccounted"] == 0
    assert acc.useful_steps == 10
    assert acc.seconds["ideal_compute"] == pytest.approx(10)
    assert acc.steps["inferred"].sum() == 1


def test_untimed_zero_span_rows_carry_no_work():
    run = Run.build({"step": [3, 4, 5], "start_s": [0.0, 0.0, 0.5], "end_s": [0.0, 0.5, 1.0]})
    acc = account(run)
    assert acc.useful_steps == 2
    assert acc.seconds["ideal_compute"] == pytest.approx(1.0)


def test_left_skewed_window_never_books_negative_jitter():
    # Three job-level steps of 0.20, 0.23 and 0.23 s (the shape of the real A100 Kineto trace):
    # the median (0.23 s) exceeds the mean (0.22 s), so an ideal of median × 3 = 0.69 s would
    # exceed the 0.66 s the steps took: goodput 104.5 %, jitter -0.03 s. The ideal is capped at
    # the mean: ideal_compute = the steps' sum, jitter 0, goodput 100 %.
    run = Run.build({"step": [1, 2, 3], "start_s": [0.0, 0.20, 0.43], "end_s": [0.20, 0.43, 0.66]})
    acc = account(run)
    assert acc.ideal_step_s == pytest.approx(0.22)
    assert acc.seconds["ideal_compute"] == pytest.approx(0.66)
    assert acc.seconds["jitter"] >= -1e-12
    assert acc.goodput <= 1.0 + 1e-12


def test_window_mfu_never_exceeds_the_ideal_step_mfu():
    # steps 1.0, 2.0, 2.0, 2.0 s: the window's median clean step is 2.0 s, its mean 1.75 s;
    # with 1 FLOP per step on one 1 FLOP/s accelerator the mean step gives 1/1.75 = 57.1 %.
    run = Run.build({"step": [1, 2, 3, 4], "start_s": [0.0, 1.0, 3.0, 5.0], "end_s": [1.0, 3.0, 5.0, 7.0]},
                    meta=RunMeta(model_flops_per_step=1.0, n_accelerators=1, peak_flops_per_accelerator=1.0))
    s = mfu_summary(run, warmup_steps=0)
    assert s.window_mfu == pytest.approx(1 / 1.75)
    assert s.steady_state_mfu == pytest.approx(1 / 1.75)
    assert s.window_mfu <= s.steady_state_mfu + 1e-12


def test_run_with_only_events_and_empty_run():
    run = Run.build(None, [{"kind": "init", "start_s": 0, "end_s": 5}, {"kind": "queue", "start_s": 5, "end_s": 6}])
    sec = _sec(_assert_sums(run))
    assert sec["init"] == 5 and sec["other_events"] == 1
    s = mfu_summary(run)
    assert s.steady_state_mfu is None and "no steady-state step time" in s.reasons["steady_state_mfu"]
    empty = breakdown(Run.build())
    assert empty["seconds"].sum() == 0


# --------------------------------------------------------------------------------------------
# MFU


def _job(n_steps: int = 20, step: float = 2.0, **meta) -> Run:
    t = np.arange(n_steps) * step
    return Run.build({"step": np.arange(n_steps), "start_s": t, "end_s": t + step},
                     [{"kind": "init", "start_s": -10.0, "end_s": 0.0}], RunMeta(**meta))


def test_mfu_summary_by_hand():
    # 8 accelerators × 100 TFLOP/s; 400 TFLOP per step in 2 s → 200 TFLOP/s of 800 → 25 %
    run = _job(model_flops_per_step=4e14, n_accelerators=8, peak_flops_per_accelerator=1e14,
               hardware_flops_per_step=5e14, global_batch=64)
    s = mfu_summary(run)
    assert s.steady_state_mfu == pytest.approx(0.25)
    assert s.window_mfu == pytest.approx(0.25)
    # end to end: 20 steps of work in 40 s of steps + 10 s of init
    assert s.end_to_end_mfu == pytest.approx(0.25 * 40 / 50)
    assert s.steady_state_hfu == pytest.approx(0.25 * 5 / 4)
    assert s.end_to_end_hfu == pytest.approx(0.25 * 5 / 4 * 40 / 50)
    assert s.cluster_peak_flops == 8e14
    assert s.steady.samples_per_second == pytest.approx(32.0)
    assert "Steady-state MFU: 25.00%" in "\n".join(s.lines())
    df = breakdown(run)
    assert df["category"].iloc[0] == "ideal_compute"
    assert df["mfu_after"].iloc[0] == pytest.approx(s.end_to_end_mfu)
    assert df["mfu_after"].iloc[-1] == pytest.approx(s.steady_state_mfu)
    losses = df["seconds"].iloc[1:].to_numpy()
    assert np.all(np.diff(losses) <= 0)  # sorted by share
    assert df.attrs["steady_state_mfu"] == pytest.approx(0.25)


def test_mfu_unknown_flops_or_peak_says_why():
    s = mfu_summary(_job(n_accelerators=8, peak_flops_per_accelerator=1e14))
    assert s.steady_state_mfu is None and s.end_to_end_mfu is None
    assert "model FLOPs" in s.reasons["steady_state_mfu"]
    s = mfu_summary(_job(model_flops_per_step=1e14))
    assert "n_accelerators" in s.reasons["end_to_end_mfu"] and "peak" in s.reasons["end_to_end_mfu"]
    assert s.goodput == pytest.approx(40 / 50)
    df = breakdown(_job())
    assert df["mfu_after"].isna().all() and df["efficiency_after"].iloc[-1] == 1.0


def test_mfu_above_100_is_an_error():
    with pytest.raises(MFUAbove100Error, match="above 100%"):
        mfu_summary(_job(model_flops_per_step=4e18, n_accelerators=8, peak_flops_per_accelerator=1e14))


def test_flops_per_sample_with_samples_column():
    t = np.arange(4) * 2.0
    run = Run.build({"step": range(4), "start_s": t, "end_s": t + 2, "samples": [10, 10, 20, 20]},
                    meta=RunMeta(model_flops_per_sample=1e12, n_accelerators=1, peak_flops_per_accelerator=1e13))
    acc = account(run)
    assert acc.work_unit == "sample"
    s = mfu_summary(acc)
    assert s.useful_model_flops == pytest.approx(60e12)
    assert s.end_to_end_mfu == pytest.approx(60e12 / 8 / 1e13)


# --------------------------------------------------------------------------------------------
# steady-state window


def test_window_detects_warmup_and_excludes_event_steps():
    run = simulate(SimConfig(n_ranks=4, n_steps=60, warmup_steps=10, warmup_factor=5.0,
                             checkpoint_every=20, checkpoint_s=3.0, eval_every=30, eval_s=2.0))
    w = steady_state_window(run)
    assert w.warmup_steps == {0: 10}
    assert w.first_step == 11 and w.last_step == 60
    assert "detected" in w.reason and "warm-up" in w.rule
    why = w.steps.set_index("step")["why"]
    assert why[5] == "warm-up"
    assert (w.steps["why"] == "in window").sum() == w.n_steps
    acc = account(run)
    assert acc.rho == pytest.approx(1.0)


def test_window_overrides_and_errors():
    run = simulate(SimConfig(n_ranks=2, n_steps=30, warmup_steps=5, warmup_factor=3.0))
    assert steady_state_window(run, warmup_steps=2).warmup_steps == {0: 2}
    w = steady_state_window(run, step_range=(20, 25))
    assert (w.first_step, w.last_step, w.n_steps) == (20, 25, 6)
    assert "override" in w.reason
    with pytest.raises(ValueError, match=r"warmup_steps must be an integer >= 0; got -1"):
        steady_state_window(run, warmup_steps=-1)
    with pytest.raises(ValueError, match=r"step_range must be a pair .* got \(5, 1\)"):
        steady_state_window(run, step_range=(5, 1))
    with pytest.raises(TypeError, match="run must be"):
        breakdown("run.parquet")


def test_window_falls_back_when_every_step_overlaps_an_event():
    run = Run.build({"step": [0, 1], "start_s": [0.0, 10.0], "end_s": [10.0, 20.0]},
                    [{"kind": "eval", "start_s": 4, "end_s": 6}, {"kind": "eval", "start_s": 14, "end_s": 15}])
    w = steady_state_window(run)
    assert w.fallback and w.n_steps == 2 and "falls back" in w.reason


# --------------------------------------------------------------------------------------------
# property: the categories sum to W for any run


@st.composite
def sim_configs(draw) -> SimConfig:
    n_steps = draw(st.integers(3, 25))
    n_ranks = draw(st.integers(1, 5))
    ck = draw(st.integers(0, 6))
    fails = draw(st.lists(st.integers(1, n_steps), max_size=2, unique=True))
    return SimConfig(
        n_ranks=n_ranks,
        n_steps=n_steps,
        step_time_s=draw(st.floats(0.05, 5.0)),
        jitter=draw(st.floats(0.0, 0.5)),
        slow_ranks=tuple(draw(st.lists(st.integers(0, n_ranks - 1), max_size=2))),
        slow_factor=draw(st.floats(1.0, 3.0)),
        transient_prob=draw(st.floats(0.0, 0.3)),
        data_stall_prob=draw(st.floats(0.0, 1.0)),
        data_stall_s=draw(st.floats(0.0, 2.0)),
        warmup_steps=draw(st.integers(0, 5)),
        warmup_factor=draw(st.floats(1.0, 6.0)),
        init_s=draw(st.floats(0.0, 20.0)),
        eval_every=draw(st.integers(0, 8)),
        eval_s=draw(st.floats(0.0, 5.0)),
        checkpoint_every=ck,
        checkpoint_s=draw(st.floats(0.0, 5.0)),
        checkpoint_mode=draw(st.sampled_from(["blocking", "async"])),
        async_stall_s=draw(st.floats(0.0, 1.0)),
        checkpoint_load_s=draw(st.floats(0.0, 5.0)),
        mtbf_s=draw(st.one_of(st.none(), st.floats(20.0, 500.0))),
        fail_at_steps=tuple(fails),
        fail_fraction=draw(st.floats(0.0, 1.0)),
        restart_s=draw(st.floats(0.0, 30.0)),
        per_rank=draw(st.booleans()),
        max_attempts=10_000,
        seed=draw(st.integers(0, 2**16)),
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sim_configs())
def test_property_breakdown_sums_to_wall_time_on_simulated_runs(cfg):
    try:
        run = simulate(cfg)
    except SimConfigError:  # a job that can never finish (failures faster than progress)
        reject()
    df = _assert_sums(run)
    sec = _sec(df)
    inj = run.meta.extra["injected"]
    assert sec["lost_work"] == pytest.approx(inj["lost_work_s"], rel=1e-9, abs=1e-9)
    assert sec["failure_downtime"] == pytest.approx(inj["failure_downtime_s"], rel=1e-9, abs=1e-9)


@st.composite
def arbitrary_runs(draw) -> Run:
    """Runs no simulator makes: overlapping per-rank spans, attempts, events of every kind."""
    n_att = draw(st.integers(1, 3))
    rows = []
    t = 0.0
    for a in range(n_att):
        first = draw(st.integers(0, 5))
        for k in range(first, first + draw(st.integers(1, 6))):
            for r in draw(st.sets(st.integers(-1, 3), min_size=1, max_size=3)):
                s = t + draw(st.floats(-1.0, 3.0))
                d = draw(st.floats(0.0, 4.0))
                row = {"attempt": a, "step": k, "rank": r, "start_s": s, "end_s": s + d}
                if draw(st.booleans()):
                    row["data_wait_s"] = draw(st.floats(0.0, 1.0))
                    row["compute_s"] = draw(st.floats(0.0, 5.0))
                rows.append(row)
            t += draw(st.floats(0.0, 3.0))
        t += draw(st.floats(0.0, 10.0))
    events = []
    for _ in range(draw(st.integers(0, 6))):
        s = draw(st.floats(-5.0, t + 5.0))
        events.append({
            "kind": draw(st.sampled_from(EVENT_KINDS)),
            "start_s": s, "end_s": s + draw(st.floats(0.0, 8.0)),
            "attempt": draw(st.integers(0, n_att - 1)),
            "detail": draw(st.sampled_from(["", "async write", "blocking", "background flush"])),
        })
    steps = pd.DataFrame(rows) if rows else None
    if steps is not None:
        steps = steps.drop_duplicates(["attempt", "step", "rank"])
        for c in ("data_wait_s", "compute_s"):
            if c in steps:
                steps[c] = steps[c].astype(float)
    return Run.build(steps, events or None)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(arbitrary_runs())
def test_property_breakdown_sums_to_wall_time_on_arbitrary_runs(run):
    _assert_sums(run)
