"""The recorder (mfu_toolkit.record) and the recorded folder format (io.formats.recorded).

Expected values come from what the test injects (sleeps, step numbers, counts) or from the raw
text of files the test writes itself, read with plain ``json``; never from the recorder echoing
itself. The real multi-process job is in ``tests/test_record_job.py``.
"""

from __future__ import annotations

import json
import os
import time
import warnings

import pytest

from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.record import EVENT_KINDS, StepRecorder, file_name, launch_info, next_attempt
from mfu_toolkit.run import LoadError, LoadWarning

REQUIRE_ENV = "MFU_REQUIRE_TORCH"


@pytest.fixture(autouse=True)
def _clean_launch_env(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)


def _lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def _load(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return load_run(path, **kw)


def _write(folder, name, lines, *, newline_at_end=True):
    """A record file as another tool would write it: the documented format, by hand."""
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(json.dumps(x) if isinstance(x, dict) else x for x in lines)
    (folder / name).write_text(text + ("\n" if newline_at_end else ""))


def _header(rank=0, world=2, attempt=0, t0=1_700_000_000.0, **kw):
    return {"format": "mfu_toolkit.record", "version": 1, "rank": rank, "world_size": world,
            "attempt": attempt, "t0_unix": t0, **kw}


# --- the writer ----------------------------------------------------------------------------------


def test_event_kinds_are_the_runs_vocabulary():
    from mfu_toolkit.run import EVENT_KINDS as RUN_KINDS

    assert EVENT_KINDS == RUN_KINDS


def test_a_step_records_its_span_data_wait_and_comm(tmp_path):
    rec = StepRecorder(tmp_path)
    with rec.step(step=7, samples=32, tokens=4096):
        with rec.data_wait():
            time.sleep(0.02)
        with rec.comm():
            time.sleep(0.03)
    with rec.event("checkpoint_save", detail="after step 7"):
        time.sleep(0.01)
    rec.close()
    head, step, event, close = _lines(tmp_path / "rank00000.attempt000.jsonl")
    assert head["format"] == "mfu_toolkit.record" and head["version"] == 1
    assert (head["rank"], head["world_size"], head["attempt"]) == (0, 1, 0)  # no launcher: one process
    assert abs(head["t0_unix"] - time.time()) < 60
    assert step["step"] == 7 and step["samples"] == 32 and step["tokens"] == 4096
    assert step["data_wait"] >= 0.02 and step["comm"] >= 0.03  # at least the sleeps injected
    assert step["end"] - step["start"] >= 0.05
    assert event == {"event": "checkpoint_save", "start": event["start"], "end": event["end"], "detail": "after step 7"}
    assert event["end"] - event["start"] >= 0.01 and event["start"] >= step["end"]
    assert close["close"] >= event["end"]


def test_rank_and_world_size_come_from_the_launchers_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("WORLD_SIZE", "8")
    monkeypatch.setenv("LOCAL_RANK", "1")
    assert launch_info() == {"rank": 3, "world_size": 8, "local_rank": 1, "restart_count": None}
    rec = StepRecorder(tmp_path)
    rec.close()
    head = _lines(tmp_path / "rank00003.attempt000.jsonl")[0]
    assert (head["rank"], head["world_size"], head["local_rank"]) == (3, 8, 1)


@pytest.mark.parametrize(("env", "match"), [({"RANK": "x"}, "RANK='x' is not an integer"),
                                            ({"RANK": "4", "WORLD_SIZE": "4"}, "rank 4 is not in 0..world_size-1")])
def test_a_bad_launch_environment_is_a_clear_error(tmp_path, monkeypatch, env, match):
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ValueError, match=match):
        StepRecorder(tmp_path)


def test_a_relaunch_into_the_same_folder_is_the_next_attempt(tmp_path, monkeypatch):
    for _ in range(2):
        StepRecorder(tmp_path, rank=1, n_ranks=2).close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rank00001.attempt000.jsonl", "rank00001.attempt001.jsonl"]
    assert next_attempt(tmp_path, 0) == 0  # only this rank's files count: no coordination
    # torchrun's restart count is a lower bound: rank 0 never wrote in restarts 0 and 1
    monkeypatch.setenv("TORCHELASTIC_RESTART_COUNT", "2")
    assert StepRecorder(tmp_path, rank=0, n_ranks=2).attempt == 2
    assert _lines(tmp_path / file_name(0, 2))[0]["restart_count"] == 2


def test_a_taken_file_name_moves_to_the_next_attempt(tmp_path):
    a = StepRecorder(tmp_path, attempt=0)
    b = StepRecorder(tmp_path, attempt=0)  # a second process claiming the same rank and attempt
    assert (a.attempt, b.attempt) == (0, 1)
    a.close()
    b.close()


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    ({"step": -1}, ValueError, "step must be a non-negative integer; got -1"),
    ({"step": 1.5}, TypeError, "step must be a non-negative integer; got 1.5"),
    ({"step": 1, "samples": "many"}, TypeError, "samples must be a number or None; got 'many'"),
    ({"step": 1, "tokens": -3}, ValueError, "tokens must be a finite number >= 0 or None; got -3"),
])
def test_bad_step_arguments_name_the_parameter(tmp_path, kwargs, error, match):
    rec = StepRecorder(tmp_path)
    with pytest.raises(error, match=match):
        rec.step(**kwargs)
    rec.close()


def test_an_unknown_event_kind_lists_the_vocabulary(tmp_path):
    rec = StepRecorder(tmp_path)
    with pytest.raises(ValueError, match="kind must be one of init, data_load, eval, .*; got 'ckpt'"):
        rec.event("ckpt")
    rec.close()


def test_a_step_that_raises_becomes_a_failure_event(tmp_path):
    rec = StepRecorder(tmp_path)
    with pytest.raises(RuntimeError), rec.step(step=4):
        raise RuntimeError("Connection closed by peer")
    with rec.step(step=5):
        pass
    rec.close()
    records = _lines(tmp_path / file_name(0, 0))[1:]
    assert [r.get("step", r.get("event")) for r in records[:-1]] == ["failure", 5]
    assert records[0]["detail"] == "step 4: RuntimeError: Connection closed by peer"


def test_overlapping_comm_counts_once_and_is_clipped_to_the_step(tmp_path):
    rec = StepRecorder(tmp_path)
    rec.begin_step(step=0, start=10.0)
    rec.add_comm(9.0, 10.5)   # began before the step: 0.5 s inside it
    rec.add_comm(10.2, 10.6)  # overlaps the first: 0.1 s more
    rec.add_comm(10.8, 11.0)  # 0.2 s
    rec.end_step(end=11.0)
    rec.close()
    step = _lines(tmp_path / file_name(0, 0))[1]
    assert step["comm"] == pytest.approx(0.8, abs=1e-6)  # union of [10, 10.6] and [10.8, 11]


def test_a_second_step_inside_a_step_is_refused(tmp_path):
    rec = StepRecorder(tmp_path)
    with rec.step(step=0), pytest.raises(RuntimeError, match="another step is open"):
        rec.begin_step(step=1)
    rec.close()


def test_buffered_records_are_written_at_close(tmp_path):
    rec = StepRecorder(tmp_path, buffer_records=4)
    for s in range(3):
        with rec.step(step=s):
            pass
    path = tmp_path / file_name(0, 0)
    assert len(path.read_text().splitlines()) == 1  # only the header so far: 3 < 4 records held
    rec.close()
    assert [r.get("step") for r in _lines(path)[1:]] == [0, 1, 2, None]


def test_cuda_events_without_cuda_say_so_in_the_header(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed; the CUDA path needs it")
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here: test_cuda_events_time_each_step covers this machine")
    rec = StepRecorder(tmp_path, cuda_events=True)
    rec.close()
    assert _lines(tmp_path / file_name(0, 0))[0]["gpu_timing"] == "off: CUDA is not available"


def test_cuda_events_time_each_step(tmp_path):
    torch = pytest.importorskip("torch", reason="PyTorch is not installed; the CUDA path needs it")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device: GPU-side step times need CUDA events (the CPU path is tested above)")
    x = torch.randn(2048, 2048, device="cuda")
    rec = StepRecorder(tmp_path, cuda_events=True)
    for s in range(100):  # more steps than the pending window (64): the oldest are waited on
        with rec.step(step=s):
            for _ in range(4):
                x = x @ x / 2048
    rec.close()
    run = _load(tmp_path)
    assert run.steps["gpu_s"].notna().all() and (run.steps["gpu_s"] > 0).all()
    # 4 matmuls of 2048^3 multiply-adds (2 FLOPs each) take time on any GPU: at least 1 us
    assert run.steps["gpu_s"].min() > 1e-6


# --- the loader ----------------------------------------------------------------------------------


def test_a_folder_written_by_another_tool_loads(tmp_path):
    folder = tmp_path / "job"
    for rank, busy in ((0, 0.5), (1, 0.8)):
        _write(folder, file_name(rank, 0), [
            _header(rank=rank, framework="pytorch 2.13.0"),
            {"event": "init", "start": 0.0, "end": 2.0},
            {"step": 0, "start": 2.0, "end": 3.0, "samples": 8, "data_wait": 0.1, "comm": 0.9 - busy},
            {"step": 1, "start": 3.0, "end": 4.0, "samples": 8, "data_wait": 0.1, "comm": 0.9 - busy},
            {"close": 4.0},
        ])
    assert detect_format(folder) == "recorded"
    assert detect_format(folder / file_name(0, 0)) == "recorded"
    run = _load(folder)
    s = run.steps
    assert list(s.columns[:5]) == ["attempt", "step", "rank", "start_s", "end_s"]
    # compute = end − start − data_wait − comm: 1.0 − 0.1 − (0.9 − busy) = busy
    assert s.loc[s["rank"] == 0, "compute_s"].tolist() == pytest.approx([0.5, 0.5])
    assert s.loc[s["rank"] == 1, "compute_s"].tolist() == pytest.approx([0.8, 0.8])
    assert run.events["start_s"].min() == 0.0 and s["start_s"].min() == 2.0  # seconds since the first record (init)
    assert run.meta.extra["t0_epoch_s"] == 1_700_000_000.0
    assert run.meta.global_batch == 16 and run.meta.n_accelerators == 2
    assert run.meta.fact("framework")["where"] == "rank00000.attempt000.jsonl:1"
    ev = run.events
    assert len(ev) == 1 and ev.iloc[0]["rank"] == -1 and "ranks 0, 1" in ev.iloc[0]["detail"]
    assert len(run.tables["rank_events"]) == 2  # each rank's own event is kept


def test_half_written_last_line_is_counted_and_skipped(tmp_path):
    _write(tmp_path, file_name(0, 0), [_header(world=1), {"step": 0, "start": 0, "end": 1},
                                       '{"step": 1, "start": 1.0, "en'], newline_at_end=False)
    with pytest.warns(LoadWarning, match="half-written last line"):
        run = load_run(tmp_path)
    assert run.steps["step"].tolist() == [0]
    assert run.meta.report.skipped == {"half-written last line": 1}
    assert run.meta.report.first_lines["half-written last line"] == ["rank00000.attempt000.jsonl:3"]
    one = _load(tmp_path / file_name(0, 0))  # the file itself: plain line numbers
    assert one.meta.report.first_lines["half-written last line"] == [3] and len(one.steps) == 1
    assert any("without a close record" in n for n in run.meta.report.notes)
    with pytest.raises(LoadError, match=r"rank00000.attempt000.jsonl, line 3: half-written last line"):
        load_run(tmp_path, strict=True)


def test_bad_records_are_counted_with_file_and_line(tmp_path):
    folder = tmp_path / "job"
    _write(folder, file_name(0, 0), [
        _header(world=2),
        {"step": 0, "start": 0, "end": 1},
        "{not json",                                      # line 3
        {"step": -2, "start": 1, "end": 2},               # line 4
        {"step": 1, "start": 2, "end": 1.5},              # line 5
        {"event": "coffee", "start": 2, "end": 3},        # line 6
        {"step": 0, "start": 3, "end": 4},                # line 7: step 0 again
        {"something": 1},                                 # line 8
        {"step": 2, "start": 4, "end": 5, "samples": "n/a"},  # line 9: kept, samples missing
    ])
    _write(folder, file_name(1, 0), ['{"format": "other"}', {"step": 0, "start": 0, "end": 1}])
    run = _load(folder)
    rep = run.meta.report
    assert run.steps["step"].tolist() == [0, 2]
    assert run.steps["samples"].isna().tolist() == [True, True]
    assert rep.first_lines["malformed JSON record"] == ["rank00000.attempt000.jsonl:3"]
    assert rep.examples["malformed JSON record"].startswith("Expecting property name enclosed in double quotes: ")
    assert rep.first_lines["step is not a non-negative integer"] == ["rank00000.attempt000.jsonl:4"]
    assert rep.first_lines["negative duration"] == ["rank00000.attempt000.jsonl:5"]
    assert rep.first_lines["duplicate record (kept the first)"] == ["rank00000.attempt000.jsonl:7"]
    assert rep.first_lines["record of no known kind (step, event, gpu_step, beat, dropped, close)"] == [
        "rank00000.attempt000.jsonl:8"]
    assert rep.first_lines["non-numeric value (left missing, record kept)"] == ["rank00000.attempt000.jsonl:9"]
    assert rep.first_lines["file without a record header on line 1 (left out)"] == ["rank00001.attempt000.jsonl:1"]
    assert rep.examples["value out of range"].startswith("event kind not one of ")
    assert any("1 of 2 ranks recorded (none from rank 1)" in n for n in rep.notes)
    with pytest.raises(LoadError, match=r"rank00000.attempt000.jsonl, line 3"):
        load_run(folder, strict=True)


def test_a_header_without_t0_leaves_the_file_out(tmp_path):
    head = _header(world=1)
    del head["t0_unix"]
    _write(tmp_path, file_name(0, 0), [head, {"step": 0, "start": 0, "end": 1}])
    with pytest.raises(LoadError, match="no record file with a usable header"):
        _load(tmp_path)
    with pytest.raises(LoadError, match=r"line 1, field 't0_unix': unreadable file left out \(required field missing "
                                        r"in the header\)"):
        load_run(tmp_path, strict=True)


def test_attempts_restarts_lost_work_and_downtime(tmp_path):
    # attempt 0: steps 0..5 on one rank, killed (no close); attempt 1 (header attempt 3, as a
    # tool that counts its own launches may write) starts 10 s later and redoes steps 4, 5
    _write(tmp_path, file_name(0, 0), [_header(world=1, attempt=0)]
           + [{"step": s, "start": s, "end": s + 1} for s in range(6)])
    _write(tmp_path, file_name(0, 3), [_header(world=1, attempt=3, t0=1_700_000_016.0)]
           + [{"step": s, "start": s - 4, "end": s - 3} for s in range(4, 8)] + [{"close": 4}])
    from mfu_toolkit.analysis import account

    run = _load(tmp_path)
    assert run.n_attempts == 2 and sorted(run.steps["attempt"].unique()) == [0, 1]
    assert any("attempts [0, 3] in the file headers are numbered 0..1" in n for n in run.meta.report.notes)
    acc = account(run)
    # steps 4 and 5 of attempt 0 ([4, 6] s) were redone; the gap [6, 16] s is downtime
    assert acc.seconds["lost_work"] == pytest.approx(2.0)
    assert acc.seconds["failure_downtime"] == pytest.approx(10.0)
    assert acc.wall_s == pytest.approx(20.0) and sum(acc.seconds.values()) == pytest.approx(20.0)


def test_two_processes_recording_as_one_rank_are_noted(tmp_path):
    _write(tmp_path, file_name(0, 0), [_header(world=1), {"step": 0, "start": 0, "end": 5}])
    _write(tmp_path, file_name(0, 1), [_header(world=1, attempt=1), {"step": 0, "start": 1, "end": 6}])
    run = _load(tmp_path)
    assert any("files of two attempts overlap in time" in n for n in run.meta.report.notes)


def test_a_recorded_run_saves_and_reads_back_equal(tmp_path):
    rec = StepRecorder(tmp_path / "job")
    for s in range(3):
        with rec.step(step=s, samples=4):
            pass
    with rec.event("eval"):
        pass
    rec.close()
    from mfu_toolkit.run import save_run

    run = _load(tmp_path / "job")
    save_run(run, tmp_path / "run.parquet")
    assert _load(tmp_path / "run.parquet") == run


def test_an_empty_folder_of_other_files_is_not_recorded(tmp_path):
    (tmp_path / "notes.txt").write_text("hello\n")
    with pytest.raises(LoadError):
        load_run(tmp_path, format="recorded")


# --- collectives (a one-process gloo group) ------------------------------------------------------


@pytest.fixture
def gloo_group(tmp_path):
    try:
        import torch.distributed as dist
    except ImportError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but PyTorch cannot be imported: {exc}", pytrace=False)
        pytest.skip("PyTorch is not installed (pip install 'mfu_toolkit[record]')")
    store = dist.FileStore(str(tmp_path / "store"), 1)
    dist.init_process_group("gloo", store=store, rank=0, world_size=1)
    yield dist
    dist.destroy_process_group()


def test_time_collectives_times_all_reduce_and_unpatches(tmp_path, gloo_group):
    import torch

    dist = gloo_group
    original = dist.all_reduce
    rec = StepRecorder(tmp_path / "job", time_collectives=True)
    assert rec.n_ranks == 1 and dist.all_reduce is not original
    with rec.step(step=0):
        dist.all_reduce(torch.ones(1000))
        dist.all_reduce(torch.ones(1000), async_op=True).wait()
    with rec.step(step=1):
        pass
    rec.close()
    assert dist.all_reduce is original
    steps = _lines(tmp_path / "job" / file_name(0, 0))[1:3]
    assert steps[0]["comm"] > 0 and "comm" not in steps[1]  # no collective in step 1


def test_watch_ddp_times_the_gradient_all_reduce(tmp_path, gloo_group):
    import torch

    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    rec = StepRecorder(tmp_path / "job")
    rec.watch_ddp(model)
    with rec.step(step=0):
        model(torch.randn(4, 8)).sum().backward()
    rec.close()
    step = _lines(tmp_path / "job" / file_name(0, 0))[1]
    assert step["comm"] > 0
    with pytest.raises(TypeError, match="DistributedDataParallel"):
        rec.watch_ddp(torch.nn.Linear(1, 1))


def test_the_old_world_size_keyword_warns_and_still_counts_the_ranks(tmp_path):
    with pytest.warns(DeprecationWarning, match=r"StepRecorder\(world_size=\.\.\.\) is renamed n_ranks="):
        rec = StepRecorder(tmp_path, rank=1, world_size=3)
    with pytest.warns(DeprecationWarning, match="renamed n_ranks"):
        assert rec.world_size == 3
    rec.close()
    assert rec.n_ranks == 3 and _lines(rec.path)[0]["world_size"] == 3  # the file format keeps its field name
    with pytest.raises(TypeError, match="both world_size= .* and n_ranks="):
        StepRecorder(tmp_path, rank=0, world_size=2, n_ranks=2)
