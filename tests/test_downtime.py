"""Downtime by cause: each restart episode split into detection, teardown, restart, checkpoint load,
recomputation and unattributed time, read off the accounting's timeline, summing to the waterfall."""

from __future__ import annotations

import bisect
import json
import math
import subprocess
import sys
from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (fixture)

from mfu_toolkit.analysis import account, breakdown, build_answer, downtime_by_cause, downtime_totals
from mfu_toolkit.analysis import downtime as downtime_module
from mfu_toolkit.analysis.accounting import CATEGORIES
from mfu_toolkit.analysis.downtime import DOWNTIME_CATEGORIES, DOWNTIME_COLUMNS, PARTS
from mfu_toolkit.io import load_run
from mfu_toolkit.render import answer_dict, answer_sections, answer_text
from mfu_toolkit.run import Run, RunMeta
from mfu_toolkit.simulate import SimConfig, simulate

NEMO_RESTART = "NVIDIA_NeMo_resiliency-demo_cell22_crash_and_injob_restart.extracted.log"
LLAMAFACTORY = "rameyjm7_SFT-Training-LLM_trainer_log.jsonl"
GOODPUT = "AI-Hypercomputer_resiliency_goodput_event_log.log"


def _steps(attempt: int, numbers: list[int], t0: float, step_s: float = 2.0) -> list[dict[str, float]]:
    """Job-level steps back to back from ``t0``, ``step_s`` each."""
    return [{"attempt": attempt, "step": n, "start_s": t0 + i * step_s, "end_s": t0 + (i + 1) * step_s}
            for i, n in enumerate(numbers)]


def _run(steps: list[dict[str, float]], events: list[dict[str, object]]) -> Run:
    return Run.build(pd.DataFrame(steps), events, RunMeta())


def _waterfall(run: Run) -> dict[str, float]:
    bd = breakdown(run)
    return dict(zip(bd["category"], bd["seconds"], strict=True))


def _parts(row: pd.Series) -> dict[str, float]:
    return {c: row[c] for c in PARTS}


def _same(got: dict[str, float], want: dict[str, float]) -> None:
    assert set(got) == set(want)
    for k, v in want.items():
        if math.isnan(v):
            assert math.isnan(got[k]), (k, got[k])
        else:
            assert got[k] == pytest.approx(v, abs=1e-9), (k, got[k], v)


# --------------------------------------------------------------------------------------------
# hand-built runs


def _full_episode() -> Run:
    """Attempt 0: init 0-5, steps 1-6 of 2 s from 5 (step 3 ends at 11), a checkpoint save 11-12
    (steps 4-6 then run 12-18), a failure event 21-24 (the failure noticed at 21, torn down by 24).
    Attempt 1 after a 6 s gap: restart 30-31, init 31-35, checkpoint load 35-38, steps 4-8 from 38
    (steps 4, 5, 6 redone)."""
    steps = _steps(0, [1, 2, 3], 5) + _steps(0, [4, 5, 6], 12) + _steps(1, [4, 5, 6, 7, 8], 38)
    events = [{"kind": "init", "start_s": 0, "end_s": 5}, {"kind": "checkpoint_save", "start_s": 11, "end_s": 12},
              {"kind": "failure", "start_s": 21, "end_s": 24, "detail": "rank 3: NCCL timeout"},
              {"kind": "restart", "start_s": 30, "end_s": 31, "attempt": 1},
              {"kind": "init", "start_s": 31, "end_s": 35, "attempt": 1},
              {"kind": "checkpoint_load", "start_s": 35, "end_s": 38, "attempt": 1}]
    return _run(steps, events)


def test_one_episode_every_part_observed():
    run = _full_episode()
    df = downtime_by_cause(run)
    assert list(df.columns) == list(DOWNTIME_COLUMNS) and len(df) == 1
    row = df.iloc[0]
    # the episode runs from the last surviving progress (step 3 ends at 11) to attempt 1's first step (38)
    assert (row["attempt"], row["next_attempt"], row["start_s"], row["end_s"]) == (0, 1, 11, 38)
    _same(_parts(row), {
        "detection_s": 21 - 18,  # last step (6) ends at 18, the failure event starts at 21
        "teardown_s": 24 - 21,  # failure start → attempt 0's last record (the failure event's end)
        "restart_s": (30 - 24) + (31 - 30) + (35 - 31),  # the gap, the restart event, attempt 1's init
        "checkpoint_load_s": 38 - 35,
        "recomputation_s": 3 * 2.0,  # steps 4, 5, 6 of attempt 0 (12-18), redone by attempt 1
        "unattributed_s": 0.0,
    })
    assert row["total_s"] == pytest.approx(3 + 3 + 11 + 3 + 6)  # 26: the window's 27 s less the 1 s save
    for words in ("last progress: step 6 of attempt 0", "failure event (rank 3: NCCL timeout)",
                  "gap between attempts", "1 restart event of attempt 1", "1 init event of attempt 1",
                  "1 checkpoint_load event of attempt 1", "3 redone steps (4-6)"):
        assert words in row["observed"]
    # the waterfall: failure_downtime = failure 3 + gap 6 + restart 1 = 10, lost_work 6, init 5 + 4,
    # checkpoint_load 3, unaccounted 3 (18-21, before the failure event)
    w = _waterfall(run)
    assert (w["failure_downtime"], w["lost_work"], w["init"], w["checkpoint_load"], w["unaccounted"]) == (
        pytest.approx(10), pytest.approx(6), pytest.approx(9), pytest.approx(3), pytest.approx(3))
    # identity: 10 + 6 + the init (4), load (3) and unaccounted (3) seconds inside the episode
    assert df["total_s"].sum() == pytest.approx(w["failure_downtime"] + w["lost_work"] + 4 + 3 + 3)
    assert df.attrs["inside_s"] == pytest.approx(
        {"failure_downtime": 10, "lost_work": 6, "checkpoint_load": 3, "init": 4, "unaccounted": 3})
    assert df.attrs["failure_slice_s"] == pytest.approx(16) and df.attrs["outside_s"] == 0


def test_no_failure_event_leaves_detection_and_teardown_unknown():
    # attempt 0: steps 1-4 from 0 (2 s each, to 8); a checkpoint save logged without a start at 10
    # (its end only: an instant); attempt 1 starts at 12 with steps 3-6: steps 3, 4 redone
    steps = _steps(0, [1, 2, 3, 4], 0) + _steps(1, [3, 4, 5, 6], 12)
    run = _run(steps, [{"kind": "checkpoint_save", "start_s": 10, "end_s": 10, "detail": "step 4 saved"}])
    df = downtime_by_cause(run)
    row = df.iloc[0]
    assert (row["start_s"], row["end_s"]) == (4, 12)  # step 2 ends at 4; attempt 1's first step at 12
    _same(_parts(row), {
        "detection_s": math.nan,  # no failure event: unknown, never guessed
        "teardown_s": math.nan,
        "restart_s": 12 - 10,  # attempt 0's last record (the save at 10) → attempt 1's first (12)
        "checkpoint_load_s": math.nan,  # none logged
        "recomputation_s": 2 * 2.0,  # steps 3, 4 of attempt 0 (4-8)
        "unattributed_s": 10 - 8,  # last step end → last record: no event says what happened
    })
    assert row["total_s"] == pytest.approx(8)
    assert "no failure event in attempt 0: detection and teardown unknown" in row["observed"]
    assert "unattributed: time no logged event explains" in row["observed"]
    w = _waterfall(run)
    assert df["total_s"].sum() == pytest.approx(w["failure_downtime"] + w["lost_work"] + w["unaccounted"])  # 2+4+2
    t = downtime_totals(df)
    assert math.isnan(t["detection_s"]) and math.isnan(t["share"]["teardown_s"])
    assert t["share"]["unattributed_s"] == pytest.approx(2 / 8) and t["restarts"] == 1


def _two_episodes() -> Run:
    """Attempt 0: steps 1-3 (0-6), failure 7-8. Attempt 1: restart 10-11, load 11-12, steps 3-5
    (12-18), failure 18-19. Attempt 2: init 21-23, load 23-24, steps 5, 6 (24-28)."""
    steps = _steps(0, [1, 2, 3], 0) + _steps(1, [3, 4, 5], 12) + _steps(2, [5, 6], 24)
    events = [{"kind": "failure", "start_s": 7, "end_s": 8},
              {"kind": "restart", "start_s": 10, "end_s": 11, "attempt": 1},
              {"kind": "checkpoint_load", "start_s": 11, "end_s": 12, "attempt": 1},
              {"kind": "failure", "start_s": 18, "end_s": 19, "attempt": 1},
              {"kind": "init", "start_s": 21, "end_s": 23, "attempt": 2},
              {"kind": "checkpoint_load", "start_s": 23, "end_s": 24, "attempt": 2}]
    return _run(steps, events)


def test_two_episodes():
    run = _two_episodes()
    df = downtime_by_cause(run)
    assert df["attempt"].tolist() == [0, 1] and df["next_attempt"].tolist() == [1, 2]
    assert df[["start_s", "end_s"]].to_numpy().tolist() == [[4, 12], [16, 24]]
    _same(_parts(df.iloc[0]), {"detection_s": 7 - 6, "teardown_s": 8 - 7, "restart_s": (10 - 8) + (11 - 10),
                               "checkpoint_load_s": 1.0, "recomputation_s": 2.0, "unattributed_s": 0.0})
    _same(_parts(df.iloc[1]), {"detection_s": 0.0,  # the failure starts as step 5 ends (18)
                               "teardown_s": 19 - 18, "restart_s": (21 - 19) + (23 - 21),  # gap + init
                               "checkpoint_load_s": 1.0, "recomputation_s": 2.0, "unattributed_s": 0.0})
    assert df["total_s"].tolist() == pytest.approx([8, 8])
    # waterfall: failure_downtime = failures 1 + 1, restart 1, gaps 2 + 2 = 7; lost_work 2 + 2;
    # init 2 and checkpoint_load 1 + 1, all inside; unaccounted 1 (6-7)
    w = _waterfall(run)
    assert (w["failure_downtime"], w["lost_work"], w["init"], w["checkpoint_load"], w["unaccounted"]) == (
        pytest.approx(7), pytest.approx(4), pytest.approx(2), pytest.approx(2), pytest.approx(1))
    assert df["total_s"].sum() == pytest.approx(sum(w[c] for c in DOWNTIME_CATEGORIES))  # 16: all inside


@pytest.mark.parametrize("make", [_full_episode, _two_episodes])
def test_identity_against_the_waterfall(make):
    run = make()
    acc = account(run)
    df = downtime_by_cause(acc)
    w = _waterfall(run)
    inside = df.attrs["inside_s"]
    assert inside["failure_downtime"] == pytest.approx(w["failure_downtime"])
    assert inside["lost_work"] == pytest.approx(w["lost_work"])
    assert np.nansum(df[list(PARTS)].to_numpy(float)) == pytest.approx(sum(inside.values()), abs=1e-9)
    assert df["total_s"].to_numpy() == pytest.approx(np.nansum(df[list(PARTS)].to_numpy(float), axis=1))


def test_timeline_pieces_sum_to_the_accounting():
    for run in (_full_episode(), _two_episodes(), simulate(SimConfig(n_ranks=4, n_steps=60, fail_at_steps=(25,),
                                                                     checkpoint_every=10, restart_s=5))):
        acc = account(run)
        tl = acc.timeline
        assert list(tl.columns) == ["category", "source", "start_s", "end_s"]
        assert (np.diff(tl["start_s"].to_numpy()) >= 0).all() and (tl["end_s"] > tl["start_s"]).all()
        by = (tl["end_s"] - tl["start_s"]).groupby(tl["category"]).sum()
        assert by.sum() == pytest.approx(acc.wall_s)  # disjoint pieces tiling the wall time
        for c in set(by.index) & set(CATEGORIES) - {"data_stall"}:  # data_stall adds the data waits in steps
            assert by[c] == pytest.approx(acc.seconds[c], abs=1e-9), c


def test_a_broken_identity_raises(monkeypatch):
    real = downtime_module._episode

    def off_by_one(*args: object) -> dict[str, float]:
        p = real(*args)
        return {**p, "restart_s": p["restart_s"] + 1.0}

    monkeypatch.setattr(downtime_module, "_episode", off_by_one)
    with pytest.raises(RuntimeError, match="downtime identity broken: the parts sum to"):
        downtime_by_cause(_full_episode())


def test_no_restart_no_episode_and_no_section():
    run = _run(_steps(0, [1, 2, 3, 4], 0), [])
    assert len(downtime_by_cause(run)) == 0
    answer = build_answer(run)
    assert answer.downtime == ()
    assert "Downtime by cause" not in [h for h, _ in answer_sections(answer)]
    assert answer_dict(answer)["downtime"] == []


def test_answer_section_text_and_json():
    answer = build_answer(_full_episode())
    *episodes, total = answer.downtime
    assert len(episodes) == 1 and episodes[0]["episode"] == 1 and total["episode"] == "total"
    assert total["total_s"] == pytest.approx(26) and total["share"]["restart_s"] == pytest.approx(11 / 26)
    heads = [h for h, _ in answer_sections(answer)]
    assert heads.index("Stragglers") < heads.index("Downtime by cause") < heads.index("Checks")
    text = answer_text(answer)
    assert ("1 restart cost 26.000 s: detection 11.54%, teardown 11.54%, restart 42.31%, checkpoint load 11.54%, "
            "recomputation 23.08%, unattributed 0.00%.") in " ".join(text.split())
    assert "0 → 1" in text and "all" in text
    doc = json.loads(json.dumps(answer_dict(answer)))  # JSON-able
    assert doc["downtime"][0]["detection_s"] == pytest.approx(3) and doc["downtime"][-1]["episode"] == "total"
    unknown = answer_dict(build_answer(_run(_steps(0, [1, 2], 0) + _steps(1, [2, 3], 6), [])))["downtime"]
    assert unknown[0]["detection_s"] is None and unknown[-1]["checkpoint_load_s"] is None  # NaN → null


# --------------------------------------------------------------------------------------------
# simulated runs


def test_simulated_failures_parts_match_the_injected_costs():
    cfg = SimConfig(n_ranks=8, n_steps=100, fail_at_steps=(30, 70), checkpoint_every=20, checkpoint_s=2,
                    init_s=5, checkpoint_load_s=3, restart_s=7, eval_every=25, eval_s=1, jitter=0.05)
    run = simulate(cfg)
    df = downtime_by_cause(run)
    assert len(df) == 2 == run.n_attempts - 1
    # the failing step ends at the failure; its failure event covers restart_s up to the next attempt,
    # which starts with its init and its checkpoint load
    assert df["detection_s"].tolist() == pytest.approx([0, 0])
    assert df["teardown_s"].tolist() == pytest.approx([cfg.restart_s] * 2)
    assert df["restart_s"].tolist() == pytest.approx([cfg.init_s] * 2)
    assert df["checkpoint_load_s"].tolist() == pytest.approx([cfg.checkpoint_load_s] * 2)
    assert df["unattributed_s"].tolist() == pytest.approx([0, 0], abs=1e-9)
    acc = account(run)
    lost = acc.steps[acc.steps["lost"]]
    assert df["recomputation_s"].tolist() == pytest.approx(
        [float(lost.loc[lost["attempt"] == a, "labelled_s"].sum()) for a in (0, 1)])
    w = _waterfall(run)
    # every failure and every lost step is inside an episode; the first attempt's init is not
    assert df["total_s"].sum() == pytest.approx(
        w["failure_downtime"] + w["lost_work"] + w["checkpoint_load"] + w["init"] - cfg.init_s)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_simulated_random_failures_sum_to_the_waterfall(seed):
    run = simulate(SimConfig(n_ranks=4, n_steps=120, mtbf_s=40, checkpoint_every=10, checkpoint_s=1,
                             checkpoint_mode="async", async_stall_s=0.2, init_s=2, checkpoint_load_s=1.5,
                             restart_s=4, seed=seed))
    df = downtime_by_cause(run)
    assert len(df) == run.n_attempts - 1
    w = _waterfall(run)
    inside = df.attrs["inside_s"]
    assert inside["lost_work"] == pytest.approx(w["lost_work"])
    assert inside["failure_downtime"] + df.attrs["outside_s"] == pytest.approx(w["failure_downtime"])
    assert df["total_s"].sum() == pytest.approx(sum(inside.values()))
    assert (df[list(PARTS)].fillna(0) >= -1e-9).all().all()


# --------------------------------------------------------------------------------------------
# real logs


def test_nemo_crash_and_in_job_restart(realdata):  # noqa: F811
    path = realdata / "nemo" / NEMO_RESTART
    times = {}  # (attempt, step) → train_step_timing in s, steps placed back to back by the loader
    attempt, prev = 0, -1
    for line in path.read_text().splitlines():
        if "global_step: " in line and "train_step_timing in s: " in line:
            step = int(line.split("global_step: ")[1].split(" ")[0])
            attempt += step < prev
            prev = step
            times[(attempt, step)] = float(line.split("train_step_timing in s: ")[1].split(" ")[0].rstrip("|"))
    assert sorted(s for a, s in times if a == 1) == list(range(10, 20))
    df = downtime_by_cause(load_run(path))
    assert len(df) == 1
    row = df.iloc[0]
    # the crash is logged as the last step (15) ends and the restart follows at once (no wall clock
    # between them in this log): detection, teardown and restart are 0; no checkpoint load is logged
    _same(_parts(row), {"detection_s": 0.0, "teardown_s": 0.0, "restart_s": 0.0, "checkpoint_load_s": math.nan,
                        "recomputation_s": sum(times[(0, s)] for s in range(10, 16)),  # steps 10-15, redone
                        "unattributed_s": 0.0})
    assert row["recomputation_s"] == pytest.approx(45.575)
    assert "6 redone steps (10-15)" in row["observed"] and "Simulating a crash at step 17" in row["observed"]
    assert row["total_s"] == pytest.approx(_waterfall(load_run(path))["lost_work"])


def test_nemo_restart_in_mfu_analyze(realdata):  # noqa: F811
    path = realdata / "nemo" / NEMO_RESTART
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(path)], capture_output=True,
                         text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "Downtime by cause" in out.stdout
    assert ("1 restart cost 45.575 s: detection 0.00%, teardown 0.00%, restart 0.00%, checkpoint load not logged, "
            "recomputation 100.00%, unattributed 0.00%.") in text


def _hms(text: str) -> int:
    h, m, s = (int(x) for x in text.split(":"))
    return h * 3600 + m * 60 + s


def test_llamafactory_resume(realdata):  # noqa: F811
    path = realdata / "llamafactory" / LLAMAFACTORY
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    elapsed = [_hms(r["elapsed_time"]) for r in lines]
    cut = next(i for i in range(1, len(lines)) if elapsed[i] < elapsed[i - 1] - 3600)  # the clock starts again
    first, second = lines[:cut], lines[cut:]
    last_step = max(r["current_steps"] for r in first)  # 5240
    every = 10  # the log prints every 10th step; the new launch prints 5010 first: it resumed from 5000
    resumed = min(r["current_steps"] for r in second) - every
    end_last = min(_hms(r["elapsed_time"]) for r in first if r["current_steps"] == last_step)
    # step 5000 is printed twice (two writers' lines interleave): its first line is when it ended
    end_resumed = min(_hms(r["elapsed_time"]) for r in first if r["current_steps"] == resumed)
    df = downtime_by_cause(load_run(path))
    assert len(df) == 1
    row = df.iloc[0]
    # no wall clock across the restart: the new launch is placed where the old one's log stops, so the
    # log shows detection (its last step to its last line) and nothing between the two launches
    _same(_parts(row), {"detection_s": max(elapsed[:cut]) - end_last, "teardown_s": 0.0, "restart_s": 0.0,
                        "checkpoint_load_s": math.nan, "recomputation_s": end_last - end_resumed,
                        "unattributed_s": 0.0})
    assert (row["detection_s"], row["recomputation_s"]) == (pytest.approx(106), pytest.approx(3632))
    assert f"{last_step - resumed} redone steps (5001-5240)" in row["observed"] and last_step - resumed == 240
    w = _waterfall(load_run(path))
    # the 106 s before the failure event is unaccounted in the waterfall: the episode holds it
    assert row["total_s"] == pytest.approx(w["lost_work"] + w["unaccounted"]) == pytest.approx(3738)


def test_goodput_resiliency_log(realdata):  # noqa: F811
    path = realdata / "gpu_goodput" / GOODPUT
    records = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]

    def t(r: dict[str, object]) -> float:
        return datetime.fromisoformat(str(r["timestamp"])).timestamp()

    started = sorted(t(r) for r in records if r["event_type"] == "job_started")
    loads = [t(r) for r in records if r["event_type"] == "checkpoint_loaded"]
    # a load is timed from the latest job_started line before it; the first load precedes the first step
    load_s = sum(x - started[bisect.bisect_right(started, x) - 1] for x in loads[1:])
    bursts: list[list[float]] = []  # runs of job_terminated lines; the last one is the job's end
    for i, r in enumerate(records):
        if r["event_type"] == "job_terminated":
            if i == 0 or records[i - 1]["event_type"] != "job_terminated":
                bursts.append([])
            bursts[-1].append(t(r))
    run = load_run(path, "gpu_goodput", reference_step_s=8)
    df = downtime_by_cause(run)
    tot = downtime_totals(df)
    assert len(df) == 47  # the library's 48 job starts
    assert df["detection_s"].isna().all()  # no failure event follows a step: detection never shown
    assert tot["recomputation_s"] == 0  # every attempt resumes at its loaded step: nothing redone
    assert tot["checkpoint_load_s"] == pytest.approx(load_s, abs=1e-5) == pytest.approx(5638.346127, abs=1e-5)
    assert df["teardown_s"].notna().sum() == len(bursts) - 1 == 3
    assert tot["teardown_s"] == pytest.approx(sum(max(b) - min(b) for b in bursts[:-1]), abs=1e-5)
    w = _waterfall(run)
    assert tot["teardown_s"] + tot["restart_s"] == pytest.approx(w["failure_downtime"])  # 11,415.176 s
    assert w["failure_downtime"] == pytest.approx(11415.175971, abs=1e-5)
    # the rest: time between a load's end and the first step the loader lays out at 8 s per step
    assert tot["unattributed_s"] == pytest.approx(df.attrs["inside_s"]["unaccounted"])
    assert tot["total_s"] == pytest.approx(w["failure_downtime"] + load_s + tot["unattributed_s"])
