"""GPU goodput event logs of Google's AI-Hypercomputer resiliency library (``gpu_goodput``), and the library's
goodput reproduced (``analysis.goodput_like_library``) beside the waterfall.

The library's own numbers are pinned from its test, ``tests/resiliency/goodput_measure/test_calculator.py`` at
AI-Hypercomputer/resiliency@ef69c85 (``test_calculate_goodput_with_local_logfile``: 48 job starts, 44 loaded,
96 saved, min loaded step 40, max saved step 1960, step diff 1920, effective computation 15,360 s, total runtime
35,364.285491 s, goodput 43.43365004195837 %; ``test_calculate_goodput_with_reference_time``: 800 s of 900 s).
The raw-file counts are computed here from the lines with json and plain arithmetic, not by the loader.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401
from _samples import write_goodput_log

from mfu_toolkit.analysis import breakdown, goodput_like_library
from mfu_toolkit.facts import LoaderArgumentError
from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.io.formats import goodput, gpu_goodput
from mfu_toolkit.run import LoadError, LoadWarning

LOG = "AI-Hypercomputer_resiliency_goodput_event_log.log"
JOB = "test-040104-goodput-n112-70b-a3m"
BASE = datetime(2025, 4, 1, 12, 0, 0)


def stamp(seconds: float, zone: str = "") -> str:
    return (BASE + timedelta(seconds=seconds)).isoformat() + zone


def line(kind: str, t: float, rng: random.Random | None = None, zone: str = "", **fields: object) -> str:
    """One event line as the library writes it, keys shuffled (the real log's keys come in any order)."""
    d = {"timestamp": stamp(t, zone), "job_name": "job", "event_type": kind, **fields}
    items = list(d.items())
    (rng or random.Random(len(items))).shuffle(items)
    return json.dumps(dict(items))


def burst(kind: str, t: float, nodes: int, spread: float = 1.0) -> list[str]:
    """Per-node job_started (or job_terminated) lines, node_rank a float as in the real log."""
    return [line(kind, t + spread * i / max(nodes, 1), node_rank=float(i)) for i in range(nodes)]


def write(tmp_path: Path, lines: list[str], name: str = "events.log") -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


def two_attempts(older: bool = False) -> list[str]:
    """Start, load 0, saves 10 and 20 (10 s per step), a failure; start again, load 20 (or 10: an older one)."""
    return [*burst("job_started", 0, 3), line("checkpoint_loaded", 20, step=0.0),
            line("checkpoint_saved", 130, step=10.0), line("checkpoint_saved", 240, step=20.0),
            *burst("job_terminated", 300, 3, 0.0), *burst("job_started", 400, 3),
            line("checkpoint_loaded", 430, step=10.0 if older else 20.0), line("checkpoint_saved", 640, step=30.0),
            *burst("job_terminated", 700, 3, 0.0)]


# --- the real 112-node log ------------------------------------------------------------------------


def _raw(path: Path) -> list[dict]:
    return [json.loads(s) for s in path.read_text().splitlines() if s.strip()]


def _library_starts(raw: list[dict]) -> tuple[int, int]:
    """Job starts and events after the library's collapsing, computed from the raw lines with strings only."""
    order = {"job_started": 1, "checkpoint_loaded": 2, "checkpoint_saved": 3, "job_terminated": 5}
    kinds = [e["event_type"] for e in sorted(raw, key=lambda e: (e["timestamp"], order[e["event_type"]]))]
    runs = [k for i, k in enumerate(kinds) if i == 0 or k not in ("job_started", "job_terminated") or kinds[i - 1] != k]
    return runs.count("job_started"), len(runs) + 1  # + the proxy user_scheduled event


def test_real_log_counts_from_the_raw_lines(realdata):  # noqa: F811
    path = realdata / "gpu_goodput" / LOG
    raw = _raw(path)
    counts = Counter(e["event_type"] for e in raw)
    assert counts == {"job_started": 7340, "job_terminated": 318, "checkpoint_saved": 96, "checkpoint_loaded": 44}
    assert _library_starts(raw) == (48, 193)  # the library test's job_started_count and total_events
    run = load_run(path)
    rep = run.meta.report
    assert (rep.lines_read, rep.total_skipped, run.meta.source_format) == (len(raw), 0, "gpu_goodput")
    assert detect_format(path) == "gpu_goodput" and goodput.sniff(path, path.read_bytes()[:8192]) == 0.0
    starts, ck = run.tables["starts"], run.tables["checkpoints"]
    assert (len(starts), starts["lines"].sum(), starts["terminated"].sum()) == (48, 7340, 318)
    assert ck["kind"].value_counts().to_dict() == {"save": 96, "load": 44}
    assert sorted(ck["step"]) == sorted(int(e["step"]) for e in raw if "step" in e)
    nodes = {int(e["node_rank"]) for e in raw if e["event_type"] == "job_started"}
    assert len(nodes) == 112 and {f["name"]: f["value"] for f in run.meta.facts} == {"n_nodes": 112}
    assert run.meta.name == JOB and run.n_attempts == 48 and len(run.steps) == 0
    ev = run.events["kind"].value_counts().to_dict()
    assert ev == {"checkpoint_save": 96, "restart": 47, "checkpoint_load": 44, "failure": 3, "init": 1, "other": 1}
    assert starts["launches"].sum() == 68  # a node_rank seen again: the next launch inside one start


def test_real_log_reproduces_the_library_figure(realdata):  # noqa: F811
    run = load_run(realdata / "gpu_goodput" / LOG)
    g = goodput_like_library(run, 8)
    assert (g.job_starts, g.checkpoints_loaded, g.checkpoints_saved) == (48, 44, 96)
    assert (g.min_loaded_step, g.max_saved_step, g.step_diff) == (40, 1960, 1920)
    assert g.effective_s == 15360.0 and g.total_runtime_s == 35364.285491
    assert g.goodput_pct == 43.43365004195837 and not g.reason
    assert "goodput 43.43365 %" in g.lines()[0]


def test_real_log_waterfall_at_the_reference_step(realdata):  # noqa: F811
    run = load_run(realdata / "gpu_goodput" / LOG, reference_step_s=8)
    assert len(run.steps) == 1920 and run.meta.timing == "duration_only"
    assert run.steps["step"].min() == 41 and run.steps["step"].max() == 1960
    assert ((run.steps["end_s"] - run.steps["start_s"]) - 8).abs().max() < 1e-9
    saved = run.steps.merge(run.tables["checkpoints"].query("kind == 'save'"), on=["attempt", "step"])
    assert len(saved) == 96 and (saved["end_s"] <= saved["time_s"] + 1e-9).all()  # a step ends before its save
    b = breakdown(run).set_index("category")["seconds"]
    assert b.sum() == pytest.approx(35364.285491, abs=1e-6)
    assert b["ideal_compute"] == pytest.approx(15360.0, abs=1e-6)
    assert b["ideal_compute"] / b.sum() * 100 == pytest.approx(goodput_like_library(run, 8).goodput_pct, rel=1e-12)
    expected = {"failure_downtime": 11415.18, "checkpoint_load": 5734.94, "unaccounted": 2842.11, "init": 12.06}
    assert {k: round(b[k], 2) for k in expected} == expected
    assert b["lost_work"] == b["checkpoint_save"] == b["other_events"] == 0.0  # saves are instants; no old load


# --- the library's unit-test job, and variants --------------------------------------------------------------


def library_unit_job(user_events: bool = True) -> list[str]:
    """The events of the library's test_calculator.py (3 nodes; load 100 at 5 min, save 200 at 10 min)."""
    lines = [line("job_started", 60 * (i + 1), node_rank=i) for i in range(3)]
    lines += [line("checkpoint_loaded", 300, step=100), line("checkpoint_saved", 600, step=200)]
    lines += [line("job_terminated", 60 * (13 + i), node_rank=i) for i in range(3)]
    if user_events:
        lines += [line("user_scheduled", 0), line("user_terminated", 720)]
    return lines


def test_the_library_unit_test_job(tmp_path):
    run = load_run(write(tmp_path, library_unit_job()), reference_step_s=3)  # 100 steps in the 300 s given
    g = goodput_like_library(run, 8.0)
    assert (g.min_loaded_step, g.max_saved_step, g.step_diff, g.total_runtime_s) == (100, 200, 100, 900.0)
    assert g.effective_s == 800.0 and abs(g.goodput_pct - 800 / 900 * 100) < 0.001
    ev = run.events.set_index("kind")
    assert (ev.loc["queue", "start_s"], ev.loc["queue", "end_s"]) == (0.0, 60.0)  # user_scheduled to the start
    assert (ev.loc["init", "start_s"], ev.loc["init", "end_s"]) == (60.0, 180.0)
    assert (ev.loc["checkpoint_load", "start_s"], ev.loc["checkpoint_load", "end_s"]) == (180.0, 300.0)
    assert ev.loc["other"]["detail"].str.contains("user_terminated|the job's end").all()
    assert "restart" not in ev.index and "failure" not in ev.index  # a single start
    assert run.n_attempts == 1 and run.steps["end_s"].max() == 600.0 and len(run.steps) == 100
    b = breakdown(run).set_index("category")["seconds"]
    assert b["ideal_compute"] == pytest.approx(300.0) and b.sum() == pytest.approx(900.0)
    without = goodput_like_library(load_run(write(tmp_path, library_unit_job(False), "b.log")), 8)
    assert without.total_runtime_s == 840.0  # from the first job_started, as the library's proxy event


def test_timezone_suffixed_timestamps(tmp_path):
    naive = load_run(write(tmp_path, two_attempts(), "naive.log"))
    zoned_lines = [json.dumps({**json.loads(s), "timestamp": json.loads(s)["timestamp"] + "+00:00"})
                   for s in two_attempts()]
    zoned = load_run(write(tmp_path, zoned_lines, "zoned.log"))
    cols = ["kind", "start_s", "end_s", "attempt"]
    assert zoned.events[cols].equals(naive.events[cols]) and not any("UTC offset" in n for n in zoned.meta.report.notes)
    shifted = [*two_attempts()[:-1], line("job_terminated", 700 + 2 * 3600, zone="+02:00", node_rank=2.0)]
    run = load_run(write(tmp_path, shifted, "shifted.log"))
    assert run.t1 == naive.t1 == 700.0  # +02:00 converted to UTC; the lines without an offset read as UTC
    assert any("1 timestamps carry a UTC offset" in n for n in run.meta.report.notes)
    mixed = load_run(write(tmp_path, [*zoned_lines[:-1], two_attempts()[-1]], "mixed.log"))
    assert mixed.t1 == naive.t1 and any("and 1 do not" in n for n in mixed.meta.report.notes)


def test_float_and_bad_steps(tmp_path):
    lines = two_attempts()
    lines[4] = line("checkpoint_saved", 130, step="10")  # text: still a whole step
    lines.append(line("checkpoint_saved", 690, step=35.5))
    with pytest.warns(LoadWarning):
        run = load_run(write(tmp_path, lines))
    assert run.meta.report.skipped == {"step is not a non-negative integer": 1}
    assert run.tables["checkpoints"]["step"].tolist() == [0, 10, 20, 20, 30]


def test_garbled_lines_are_counted_with_their_line(tmp_path):
    lines = two_attempts()
    lines[3:3] = ['{"timestamp": "2025-04-01T12:00:05", "event_type": "job_sta', "[1, 2]",
                  line("preemption", 6), line("job_started", 7, node_rank="n7"),
                  json.dumps({"job_name": "job", "event_type": "checkpoint_saved", "timestamp": "today", "step": 1}),
                  json.dumps({"event_type": "checkpoint_saved", "timestamp": stamp(8), "step": 1}), ""]
    with pytest.warns(LoadWarning):
        run = load_run(write(tmp_path, lines))
    rep = run.meta.report
    assert rep.lines_read == len(lines) - 1  # the blank line is no record
    assert sum(v for k, v in rep.skipped.items() if k.startswith("malformed JSON")) == 1
    assert [rep.skipped[k] for k in ("record is not a JSON object", "unknown event_type",
                                     "non-numeric value (left missing, record kept)",
                                     "required field missing")] == [1, 1, 1, 1]
    assert rep.examples["required field missing"] == "job_name"
    assert any(k.startswith("time is missing") for k in rep.skipped)
    assert rep.first_lines["record is not a JSON object"] == [5]
    assert run.tables["starts"]["lines"].tolist() == [4, 3]  # the node_rank "n7" line is kept
    with pytest.raises(LoadError, match="malformed JSON"):
        load_run(write(tmp_path, lines, "strict.log"), strict=True)


def test_a_job_with_no_checkpoint_load(tmp_path):
    lines = [s for s in two_attempts() if "checkpoint_loaded" not in s]
    run = load_run(write(tmp_path, lines), reference_step_s=10)
    g = goodput_like_library(run, 10)
    assert (g.goodput_pct, g.min_loaded_step, g.max_saved_step, g.reason) == (0.0, None, 30, "no checkpoint was loaded")
    assert run.steps["step"].tolist() == list(range(11, 21))  # only between two saves of one attempt
    assert any("save before any checkpoint load" in n for n in run.meta.report.notes)


def test_restart_from_an_older_checkpoint_is_lost_work(tmp_path):
    run = load_run(write(tmp_path, two_attempts(older=True)), reference_step_s=10)
    assert run.n_attempts == 2 and run.tables["starts"]["attempt"].tolist() == [0, 1]
    assert run.events.query("kind == 'failure'")["attempt"].tolist() == [0]  # terminated, then started again
    assert run.events.query("kind == 'other'")["detail"].str.contains("the job's end").all()
    b = breakdown(run).set_index("category")["seconds"]
    assert b["lost_work"] == pytest.approx(100.0)  # steps 11-20 ran in attempt 0, again in attempt 1
    assert b["ideal_compute"] == pytest.approx(300.0) and b.sum() == pytest.approx(run.t1 - run.t0)
    g = goodput_like_library(run, 10)
    assert (g.min_loaded_step, g.max_saved_step, g.effective_s, g.job_starts) == (0, 30, 300.0, 2)


def test_steps_that_do_not_fit_are_spread_between_checkpoints(tmp_path):
    run = load_run(write(tmp_path, two_attempts()), reference_step_s=20)
    assert any("do not fit" in n for n in run.meta.report.notes)
    a0 = run.steps[run.steps["attempt"] == 0]
    assert a0["start_s"].min() >= 20.0 - 1e-9 and a0["end_s"].max() == pytest.approx(240.0)


def test_start_gap_splits_relaunches_and_the_default_is_the_library(tmp_path):
    lines = [*burst("job_started", 0, 4), *burst("job_started", 100, 4), line("checkpoint_loaded", 150, step=5),
             line("checkpoint_saved", 200, step=9)]
    p = write(tmp_path, lines)
    run = load_run(p)
    assert run.n_attempts == 1 and run.tables["starts"]["launches"].tolist() == [2]
    assert goodput_like_library(run, 1).job_starts == 1
    split = load_run(p, start_gap_s=60)
    assert split.n_attempts == 2 and (split.events["kind"] == "restart").sum() == 1
    assert split.events.query("kind == 'init'")["detail"].str.contains("no progress").all()
    with pytest.raises(LoaderArgumentError, match="reference_step_s"):
        load_run(p, reference_step_s=0)
    with pytest.raises(LoaderArgumentError, match="start_gap_s"):
        load_run(p, start_gap_s="soon")


def test_job_name_picks_one_job(tmp_path):
    other = [json.dumps({**json.loads(s), "job_name": "other"}) for s in library_unit_job(False)]
    p = write(tmp_path, two_attempts() + other)
    run = load_run(p)  # the earliest line's job, as the library
    assert run.meta.name == "job" and any("lines of other jobs" in n for n in run.meta.report.notes)
    picked = load_run(p, job_name="other")
    assert picked.meta.name == "other" and picked.n_attempts == 1
    with pytest.raises(LoadError, match="no events of job"):
        load_run(p, job_name="missing")


def test_sniff_tells_the_two_goodput_formats_apart(tmp_path):
    ours = write(tmp_path, two_attempts())
    theirs = write_goodput_log(tmp_path)
    assert gpu_goodput.sniff(ours, ours.read_bytes()) == 0.95 and goodput.sniff(ours, ours.read_bytes()) == 0.0
    assert gpu_goodput.sniff(theirs, theirs.read_bytes()[:8192]) == 0.0
    assert detect_format(ours) == "gpu_goodput" and detect_format(theirs) == "goodput"
    with pytest.raises(LoadError, match="no goodput events"):
        load_run(write(tmp_path, ["", "[]"], "empty.log"), format="gpu_goodput")


def test_goodput_like_library_checks_its_input(tmp_path):
    run = load_run(write(tmp_path, two_attempts()))
    with pytest.raises(ValueError, match="reference_step_s"):
        goodput_like_library(run, 0)
    with pytest.raises(TypeError, match="Run"):
        goodput_like_library("run", 8)  # type: ignore[arg-type]
    no_table = run.replace(tables={})
    assert goodput_like_library(no_table, 10) == goodput_like_library(run, 10)  # from the events' details


def test_step_rows_stay_bounded(tmp_path):
    huge = [*burst("job_started", 0, 2), line("checkpoint_loaded", 10, step=0), line("checkpoint_saved", 20, step=1e12),
            line("checkpoint_saved", 30, step=5)]
    run = load_run(write(tmp_path, huge), reference_step_s=1e-9)
    assert len(run.steps) == 0 and any("too many to lay out" in n for n in run.meta.report.notes)
    assert any("1 checkpoint_saved lines name a step not above" in n for n in run.meta.report.notes)
    assert goodput_like_library(run, 1).step_diff == 10**12  # the figure needs no rows
