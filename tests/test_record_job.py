"""A real distributed job records itself, and the analysis recovers what was injected into it.

Four CPU processes under ``torchrun`` (gloo) train a small MLP (``mfu_toolkit.record.demo``):
gradients all-reduced inside ``rec.comm()``, rank 1 sleeping ``SLEEP_S`` in every step, a
checkpoint every 10 steps with a ``CKPT_SLEEP_S`` sleep inside the recorded save, rank 2 killed
(SIGKILL) at step 33 of the first launch, then a second launch into the same folder, started
``PAUSE_S`` after the first ended, that resumes from the last checkpoint (after step 29).

Every expected value below comes from those injected quantities or from the test's own clock
(``time.time()`` around the launches, and the job's marker notes of when it was killed, finished a
checkpoint and became ready), never from the recorder's output. Tolerances are derived from the
injected quantities and stated where they are used; they hold on a loaded two-core machine
because the model's own compute per step (a 32→64→1 MLP on 16 samples, well under 10 ms even
with four processes on two cores) is small against the 50 ms sleep.
"""

from __future__ import annotations

import json
import math
import time

import pytest
from _gloo import require_gloo_torch

pytestmark = pytest.mark.torch

STEPS, SLOW, SLEEP_S = 50, 1, 0.05
EVERY, CKPT_SLEEP_S = 10, 0.2
DIE_RANK, DIE_AT = 2, 33
PAUSE_S = 1.5
JOB = {"steps": STEPS, "slow_rank": SLOW, "sleep_s": SLEEP_S, "checkpoint_every": EVERY,
       "checkpoint_sleep_s": CKPT_SLEEP_S, "die_rank": DIE_RANK, "die_at_step": DIE_AT}


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """Run the job twice (a failed launch, then the relaunch); the test's own clock around both."""
    require_gloo_torch()
    from mfu_toolkit.record.demo import launch

    work = tmp_path_factory.mktemp("job")
    folder, ckpt, markers, log = work / "record", work / "ckpt.pt", work / "markers", work / "torchrun.log"
    clock = {"start1": time.time()}
    rc1 = launch(folder, ckpt, markers=markers, log=log, timeout_s=300, **JOB)
    clock["exit1"] = time.time()
    time.sleep(PAUSE_S)
    clock["start2"] = time.time()
    rc2 = launch(folder, ckpt, markers=markers, log=log, timeout_s=300, **JOB)
    clock["exit2"] = time.time()
    tail = log.read_text(errors="replace")[-3000:]
    assert rc1 != 0, f"the first launch should fail (rank {DIE_RANK} is killed): {tail}"
    assert rc2 == 0, f"the relaunch failed: {tail}"
    marks = [json.loads(line) for p in sorted(markers.glob("rank*.jsonl")) for line in p.read_text().splitlines()]
    return folder, clock, marks


@pytest.fixture(scope="module")
def analysed(job):
    from mfu_toolkit.analysis import account, breakdown, straggler_summary
    from mfu_toolkit.io import load_run

    folder, clock, marks = job
    run = load_run(folder)
    acc = account(run)
    return run, acc, breakdown(acc), straggler_summary(acc), clock, marks


def _first(marks, key, **where):
    return [m for m in marks if key in m and all(m.get(k) == v for k, v in where.items())]


def test_the_folder_reads_back_as_two_attempts_of_four_ranks(analysed):
    run, acc, *_ = analysed
    assert run.meta.source_format == "recorded"
    assert run.n_attempts == 2  # a failed launch and the relaunch
    assert sorted(run.steps["rank"].unique()) == [0, 1, 2, 3]
    assert run.meta.n_accelerators == 4  # torchrun --nproc-per-node=4
    assert run.meta.global_batch == 4 * 16  # 16 samples per rank per step (JOB_DEFAULTS' batch)
    # useful: steps 0..29 of the first launch (kept: the checkpoint after step 29 resumed them)
    # and 30..49 of the relaunch
    assert acc.useful_steps == STEPS
    assert any("attempt 0" in n and "without a close record" in n for n in run.meta.report.notes)
    assert run.meta.report.total_skipped == 0  # SIGKILL between writes leaves whole lines


def test_the_slow_rank_is_named_and_its_wait_is_the_injected_sleep(analysed):
    from mfu_toolkit.analysis import straggler_summary

    run, acc, bd, ss, *_ = analysed
    assert SLOW in ss.persistent_ranks
    assert ss.most_often_slowest == SLOW
    assert ss.most_often_slowest_share >= 0.9  # the sleep makes rank 1 the slowest in (nearly) every step
    # The sleep is ~50x the step's own compute (about 1 ms), so the slow rank's median compute is
    # more than double the fastest rank's; scheduling noise on a loaded machine moves a fast
    # rank's median by a fraction of a millisecond (enough to pass the default 5 % at times), never
    # by 100 %. With that threshold the slow rank is the only persistent straggler.
    assert straggler_summary(acc, threshold=1.0).persistent_ranks == [SLOW]
    scores = ss.scores.set_index("rank")["score"]
    assert scores.idxmax() == SLOW and scores.drop(SLOW).max() < 1.0 < scores[SLOW]
    injected = STEPS * SLEEP_S  # the sleep in every useful step
    # Each useful step's straggler time is the slow rank's busy time minus the median rank's:
    # the sleep plus the compute difference between ranks (< 20 % of the sleep, see the module
    # docstring) and time.sleep's oversleep (>= 0).
    assert 0.8 * injected <= ss.straggler_s <= 1.3 * injected
    assert ss.straggler_s == pytest.approx(acc.seconds["stragglers"])
    # why comm matters: the slow rank's own compute holds the sleep, the fast ranks wait in the
    # all-reduce instead (median over steps, so a hiccup of the loaded machine cannot decide it)
    s = run.steps
    slow_compute = s.loc[s["rank"] == SLOW, "compute_s"].median()
    fast_compute = s.loc[s["rank"] != SLOW, "compute_s"].median()
    fast_comm = s.loc[s["rank"] != SLOW, "comm_s"].median()
    assert slow_compute - fast_compute >= 0.8 * SLEEP_S
    assert fast_comm >= 0.8 * SLEEP_S


def test_checkpoints_hold_at_least_their_sleeps(analysed):
    run, acc, *_ , marks = analysed
    saves = sorted(m["checkpoint"] for m in _first(marks, "checkpoint") if m.get("checkpoint") is not None)
    # every rank notes each save after it: steps 9, 19, 29 (first launch), 39, 49 (relaunch)
    assert sorted(set(saves)) == [9, 19, 29, 39, 49]
    n_saves = 5
    assert acc.seconds["checkpoint_save"] >= n_saves * CKPT_SLEEP_S
    # a torch.save of a 4.5 KB model and a barrier take well under 1 s each, even when loaded
    assert acc.seconds["checkpoint_save"] <= n_saves * (CKPT_SLEEP_S + 1.0)
    ev = run.events
    assert (ev["kind"] == "checkpoint_save").sum() == n_saves  # one job-level event per save
    # the relaunch: every rank loads the checkpoint itself (rank by rank, so possibly apart)
    per_rank = run.tables["rank_events"]
    loads = per_rank[per_rank["kind"] == "checkpoint_load"]
    assert sorted(loads["rank"]) == [0, 1, 2, 3] and set(loads["attempt"]) == {1}
    assert ((ev["kind"] == "checkpoint_load") & (ev["attempt"] == 0)).sum() == 0


def test_lost_work_is_the_steps_after_the_last_checkpoint(analysed):
    run, acc, *_, marks = analysed
    lost = acc.steps[acc.steps["lost"]]
    # killed at step 33 after the checkpoint that followed step 29: steps 30, 31, 32 were done
    # in the first launch and redone in the relaunch
    assert sorted(lost["step"]) == [30, 31, 32]
    assert set(lost["attempt"]) == {0}
    kill = _first(marks, "kill")
    assert [m["kill"] for m in kill] == [DIE_AT]
    ckpt29 = max(m["t"] for m in _first(marks, "checkpoint", checkpoint=29))
    # each lost step holds at least the slow rank's sleep; all three lie between the end of the
    # last checkpoint and the kill (the job's own wall-clock notes; 50 ms for clock rounding)
    assert acc.seconds["lost_work"] >= 3 * SLEEP_S
    assert acc.seconds["lost_work"] <= kill[0]["t"] - ckpt29 + 0.05


def test_downtime_lies_between_the_launches(analysed):
    run, acc, bd, ss, clock, marks = analysed
    down = acc.seconds["failure_downtime"]
    kill_t = _first(marks, "kill")[0]["t"]
    ready2 = min(m["t"] for m in _first(marks, "ready", ready=1))  # first rank of the relaunch
    # at least the pause the test made between the launches (its own clock around the relaunch)
    assert down >= clock["start2"] - clock["exit1"] >= PAUSE_S
    # at most from the kill (inside step 33, just after step 32 ended) to the relaunch's first
    # rank recording; 0.25 s covers step 33's data wait before the kill and clock rounding
    assert down <= ready2 - kill_t + 0.25
    assert down >= ready2 - kill_t - 0.25


def test_the_parts_sum_to_the_wall_time(analysed):
    run, acc, bd, ss, clock, marks = analysed
    assert sum(acc.seconds.values()) == pytest.approx(acc.wall_s, rel=1e-9)
    assert bd["seconds"].sum() == pytest.approx(acc.wall_s, rel=1e-9)
    # the record lies inside the test's clock around both launches, and holds at least the pause
    # plus every useful step's sleep
    assert acc.wall_s <= clock["exit2"] - clock["start1"]
    assert acc.wall_s >= (clock["start2"] - clock["exit1"]) + STEPS * SLEEP_S
    assert math.isfinite(acc.seconds["unaccounted"]) and acc.seconds["unaccounted"] >= -1e-9


def test_mfu_analyze_names_the_straggler(job, capsys):
    from mfu_toolkit.cli import main

    folder, *_ = job
    assert main(["analyze", str(folder)]) == 0
    out = capsys.readouterr().out
    culprit = next(line for line in out.splitlines() if line.startswith("Culprit:"))
    # the slow rank is named first (the default 5 % threshold may add a fast rank within noise)
    assert culprit.startswith((f"Culprit: rank {SLOW}", f"Culprit: ranks {SLOW}")), culprit
    assert "the categories sum to the wall time" in out
