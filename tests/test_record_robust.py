"""The recorder never breaks the job it measures, and the loader never trusts one clock blindly.

Write errors are made real: a file-size limit (``RLIMIT_FSIZE``) in a child process, and an
``os.write`` that fails part-way. Expected numbers are what the test injects (steps attempted,
the byte limit, the clock offsets) and the raw file text read back with plain ``json``.
"""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
import warnings

import pytest

from mfu_toolkit.io import load_run
from mfu_toolkit.record import StepRecorder, file_name
from mfu_toolkit.record import folder as folder_mod
from mfu_toolkit.run import LoadError, LoadWarning


@pytest.fixture(autouse=True)
def _clean_launch_env(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)


def _records(path):
    """Every line parsed with plain json: a glued or partial line fails here."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return load_run(path, **kw)


def _run_child(code: str, tmp_path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    return subprocess.run([sys.executable, *args, "-c", textwrap.dedent(code), str(tmp_path)],
                          capture_output=True, text=True, timeout=120, env=env)


# --- write errors ----------------------------------------------------------------------------------

_FSIZE_JOB = """
    import resource, sys
    from mfu_toolkit.record import StepRecorder
    rec = StepRecorder(sys.argv[1], rank=2, n_ranks=4, buffer_records={buffer})
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (rec.path.stat().st_size + 2000, hard))  # 2000 more bytes
    for s in range(300):
        with rec.step(step=s, samples=8):
            pass
    resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))  # the disk has room again
    for s in range(300, 310):
        with rec.step(step=s, samples=8):
            pass
    rec.close()
    print("dropped", rec.dropped)
"""


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="RLIMIT_FSIZE semantics tested on Linux")
@pytest.mark.parametrize("buffer", [1, 7])
def test_a_file_size_limit_never_reaches_the_loop_and_the_gap_is_recorded(tmp_path, buffer):
    # -W error: even a warning turned into an exception must not reach the loop
    done = _run_child(_FSIZE_JOB.format(buffer=buffer), tmp_path, "-W", "error")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("cannot write") == 1 and "rank 2" in done.stderr  # warned once, rank-stamped
    dropped = int(done.stdout.split()[-1])
    path = tmp_path / file_name(2, 0)
    recs = _records(path)  # every line is whole JSON: nothing glued, nothing partial
    steps = [r["step"] for r in recs if "step" in r]
    gaps = [r for r in recs if "dropped" in r]
    # 2000 bytes hold some of the ~50-byte step records, not all 300 (bytes counted from the file)
    assert 0 < len([s for s in steps if s < 300]) < 300
    assert steps == sorted(steps) and steps[-10:] == list(range(300, 310))  # writing resumed
    assert len(gaps) == 1 and gaps[0]["dropped"] == dropped == 310 - len(steps)
    assert gaps[0]["start"] <= gaps[0]["end"] and "close" in recs[-1]
    run = _load(tmp_path)
    assert run.steps["step"].tolist() == steps
    assert any(f"{dropped} records" in n and "rank 2" in n for n in run.meta.report.notes)


def _flaky_write(monkeypatch, fail_calls: set[int], half: bool):
    """``os.write`` in the folder module that fails on the given call numbers (ENOSPC), after
    writing half of the bytes when ``half``."""
    real, calls = os.write, [0]

    def write(fd, data):
        calls[0] += 1
        if calls[0] in fail_calls:
            if half and len(data) > 1:
                real(fd, bytes(data[: len(data) // 2]))
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(fd, data)

    monkeypatch.setattr(folder_mod.os, "write", write)
    return calls


@pytest.mark.parametrize("half", [False, True])
def test_a_failing_write_drops_counted_records_and_keeps_lines_whole(tmp_path, monkeypatch, half):
    rec = StepRecorder(tmp_path, buffer_records=3)
    calls = _flaky_write(monkeypatch, {1, 2}, half)  # the first two flushes (steps 0-2, 3-5) fail
    with pytest.warns(RuntimeWarning, match=r"rank 0, pid \d+\): cannot write .*No space left"):
        for s in range(9):
            with rec.step(step=s):
                pass
    rec.close()
    assert calls[0] >= 3 and rec.dropped == 6
    recs = _records(tmp_path / file_name(0, 0))
    assert [r.get("step") for r in recs if "step" in r] == [6, 7, 8]
    assert [r["dropped"] for r in recs if "dropped" in r] == [6]
    run = _load(tmp_path)
    assert run.steps["step"].tolist() == [6, 7, 8] and run.meta.report.skipped == {}


def test_a_failed_header_write_is_written_when_writing_works_again(tmp_path, monkeypatch):
    _flaky_write(monkeypatch, {1}, half=True)
    with pytest.warns(RuntimeWarning, match="cannot write"):
        rec = StepRecorder(tmp_path)
    with rec.step(step=0):
        pass
    rec.close()
    recs = _records(tmp_path / file_name(0, 0))
    assert recs[0]["format"] == "mfu_toolkit.record" and recs[1]["step"] == 0 and "dropped" not in recs[1]


_FORK_JOB = """
    import os, sys
    from mfu_toolkit.record import StepRecorder
    rec = StepRecorder(sys.argv[1], buffer_records=100)
    for s in range(3):
        with rec.step(step=s):
            pass
    pid = os.fork()
    if pid == 0:  # the child: a data-loader worker, or a process that forks and exits normally
        rec.flush()
        sys.exit(0)  # runs atexit (the recorder's flush) as well
    os.waitpid(pid, 0)
    with rec.step(step=3):
        pass
    rec.close()
"""


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_does_not_write_the_parents_buffer_again(tmp_path):
    done = _run_child(_FORK_JOB, tmp_path)
    assert done.returncode == 0, done.stderr
    recs = _records(tmp_path / file_name(0, 0))
    assert [r["step"] for r in recs if "step" in r] == [0, 1, 2, 3]  # each once
    assert sum("close" in r for r in recs) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork is POSIX only")
def test_a_forked_child_that_records_is_warned_and_writes_nothing(tmp_path):
    code = """
        import os, sys
        from mfu_toolkit.record import StepRecorder
        rec = StepRecorder(sys.argv[1])
        pid = os.fork()
        if pid == 0:
            with rec.step(step=99):
                pass
            rec.close()
            os._exit(0)
        os.waitpid(pid, 0)
        rec.close()
    """
    done = _run_child(code, tmp_path)
    assert done.returncode == 0 and "is a fork of the process" in done.stderr
    recs = _records(tmp_path / file_name(0, 0))
    assert not any("step" in r for r in recs) and sum("close" in r for r in recs) == 1


def test_bad_heartbeat_is_refused_before_a_file_is_made(tmp_path):
    with pytest.raises(ValueError, match="heartbeat_s must be a finite number of seconds > 0; got 0"):
        StepRecorder(tmp_path / "job", heartbeat_s=0)
    assert not (tmp_path / "job").exists() or not list((tmp_path / "job").iterdir())


# --- clocks -----------------------------------------------------------------------------------------

T0 = 1_700_000_000.0


def _write(folder, name, lines):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text("".join(json.dumps(x) + "\n" for x in lines))


def _head(rank, world, attempt=0, t0=T0, **kw):
    return {"format": "mfu_toolkit.record", "version": 1, "rank": rank, "world_size": world,
            "attempt": attempt, "t0_unix": t0, **kw}


def _steps(first, n, at=0.0, dur=1.0):
    return [{"step": s, "start": at + (s - first) * dur, "end": at + (s - first + 1) * dur}
            for s in range(first, first + n)]


def test_a_writer_stamps_monotonic_and_wall_pairs_and_beats(tmp_path):
    import time

    rec = StepRecorder(tmp_path, heartbeat_s=0.02)
    for s in range(4):
        with rec.step(step=s):
            time.sleep(0.03)  # each step outlasts the beat interval: a beat after each
    rec.close()
    head, *rest = _records(tmp_path / file_name(0, 0))
    assert abs(head["t0_unix"] - time.time()) < 60 and head["mono0"] <= time.monotonic()
    assert head["heartbeat_s"] == 0.02
    beats = [r for r in rest if "beat" in r]
    assert len(beats) == 4 and all(abs(b["wall"] - b["beat"] - head["t0_unix"]) < 0.05 for b in beats)
    ends = [r["end"] for r in rest if "step" in r]
    assert all(e <= b["beat"] for e, b in zip(ends, beats, strict=True))  # each record ends before its beat
    assert "wall" in rest[-1] and "close" in rest[-1]
    run = _load(tmp_path)
    assert not any("clock" in n for n in run.meta.report.notes)


def test_a_rank_whose_host_clock_is_an_hour_behind_is_aligned_and_noted(tmp_path):
    for rank in range(4):
        t0 = T0 - 3600.0 if rank == 3 else T0 + 0.01 * rank  # rank 3's host: 1 h behind
        _write(tmp_path, file_name(rank, 0), [_head(rank, 4, t0=t0), *_steps(0, 50), {"close": 50.0}])
    run = _load(tmp_path)
    s = run.steps
    assert s["end_s"].max() - s["start_s"].min() == pytest.approx(50.0, abs=0.05)  # not 3,650 s
    per_step = s.groupby("step")["end_s"].agg(lambda x: x.max() - x.min())
    assert per_step.max() < 0.05  # every step ends together again
    assert any("host clocks disagree" in n and "rank 3 by +3600.0 s" in n for n in run.meta.report.notes)


def test_two_ranks_an_hour_apart_meet_in_the_middle(tmp_path):
    for rank, t0 in ((0, T0), (1, T0 + 3600.0)):
        _write(tmp_path, file_name(rank, 0), [_head(rank, 2, t0=t0), *_steps(0, 10), {"close": 10.0}])
    run = _load(tmp_path)
    assert run.steps["end_s"].max() - run.steps["start_s"].min() == pytest.approx(10.0)


def test_ranks_within_a_step_of_each_other_are_left_as_recorded(tmp_path):
    # 0.5 s apart with 1 s steps: a real straggler pattern, not a clock (under 3 step durations)
    for rank in range(2):
        _write(tmp_path, file_name(rank, 0), [_head(rank, 2, t0=T0 + 0.5 * rank), *_steps(0, 10), {"close": 10.0}])
    run = _load(tmp_path)
    assert run.steps["end_s"].max() - run.steps["start_s"].min() == pytest.approx(10.5)
    assert not any("clocks disagree" in n for n in run.meta.report.notes)


def test_a_clock_set_back_between_attempts_on_one_boot_follows_the_monotonic_clock(tmp_path):
    clock = {"host": "node1", "boot_id": "b-1"}
    _write(tmp_path, file_name(0, 0), [_head(0, 1, mono0=1000.0, **clock), *_steps(0, 10)])  # killed at 10 s
    # relaunched 30 s after the first launch (monotonic 1030), the wall clock set back by 1 h meanwhile
    _write(tmp_path, file_name(0, 1), [_head(0, 1, 1, t0=T0 + 30 - 3600, mono0=1030.0, **clock),
                                       *_steps(8, 4), {"close": 4.0}])
    run = _load(tmp_path)
    a1 = run.steps[run.steps["attempt"] == 1]
    assert a1["start_s"].min() == pytest.approx(30.0)  # 30 s after attempt 0 began, from the monotonic clock
    assert any("host node1: its wall clock moved" in n for n in run.meta.report.notes)


def test_a_clock_set_back_without_a_shared_clock_is_noted(tmp_path):
    _write(tmp_path, file_name(0, 0), [_head(0, 1, host="a"), *_steps(0, 10)])
    _write(tmp_path, file_name(0, 1), [_head(0, 1, 1, t0=T0 - 3600, host="b"), *_steps(8, 4), {"close": 4.0}])
    run = _load(tmp_path)
    assert any("attempt 1 begins 3,600.0 s before attempt 0" in n for n in run.meta.report.notes)


def test_a_beat_that_disagrees_with_the_header_is_noted(tmp_path):
    _write(tmp_path, file_name(0, 0), [_head(0, 1, heartbeat_s=60.0), *_steps(0, 5),
                                       {"beat": 5.0, "wall": T0 + 5 + 120.0}, {"close": 5.0}])
    run = _load(tmp_path)
    assert any("wall clock moved while recording" in n and "+120.0 s" in n for n in run.meta.report.notes)


# --- absurd finite values ---------------------------------------------------------------------------


@pytest.mark.parametrize(("tail", "bound"), [
    ([{"close": 3.0}], "the close record"),
    ([{"beat": 2.0, "wall": T0 + 2.0}], "the last beat"),
    ([], "modification time"),
])
def test_an_absurd_finite_time_is_refused_with_file_line_and_field(tmp_path, tail, bound):
    lines = [_head(0, 1, heartbeat_s=60.0), *_steps(0, 2), {"step": 2, "start": 2.0, "end": 1e308}, *tail]
    _write(tmp_path, file_name(0, 0), lines)
    run = _load(tmp_path)
    assert run.steps["step"].tolist() == [0, 1]
    wall = run.steps["end_s"].max() - run.steps["start_s"].min()
    assert wall == pytest.approx(2.0)  # not 1e308
    reason = "time beyond what the file's clock records bound (left out)"
    assert run.meta.report.first_lines[reason] == ["rank00000.attempt000.jsonl:4"]
    with pytest.raises(LoadError, match=rf"line 4, field 'end': .*end=1e\+308.*{bound}"):
        load_run(tmp_path, strict=True)


def test_an_absurd_comm_is_left_missing_and_an_absurd_event_left_out(tmp_path):
    _write(tmp_path, file_name(0, 0), [_head(0, 1), {"step": 0, "start": 0.0, "end": 1.0, "comm": 1e300},
                                       {"event": "eval", "start": -1e300, "end": 1.0}, {"close": 1.0}])
    run = _load(tmp_path)
    assert run.steps["comm_s"].isna().all() and run.steps["compute_s"].tolist() == [1.0]
    assert len(run.events) == 0
    assert run.meta.report.first_lines["time beyond what the file's clock records bound (left out)"] == [
        "rank00000.attempt000.jsonl:3"]


def test_an_absurd_close_record_is_itself_refused(tmp_path):
    _write(tmp_path, file_name(0, 0), [_head(0, 1), *_steps(0, 2), {"close": 1e308}])
    run = _load(tmp_path)
    assert run.steps["step"].tolist() == [0, 1]
    assert run.meta.report.first_lines["time beyond what the file's clock records bound (left out)"] == [
        "rank00000.attempt000.jsonl:4"]
