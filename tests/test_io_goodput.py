"""Goodput-library event logs: reading them, and writing a Run back in the same format."""

from __future__ import annotations

import json
import random
import warnings

import pytest
from _corpus import mutations
from _realdata import realdata  # noqa: F401
from _samples import GP_T0, goodput_payloads, write_goodput_log
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import load_run, rules, write_goodput
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.formats import goodput
from mfu_toolkit.run import LoadError, LoadWarning, Run, RunMeta, SchemaError


def test_attempts_steps_and_lost_work(tmp_path):
    run = load_run(write_goodput_log(tmp_path))
    m = run.meta
    assert (m.source_format, m.timing, m.time_unit, m.name) == ("goodput", "exact", "epoch_s", "gp")
    assert m.extra["t0_epoch_s"] == GP_T0
    assert run.n_attempts == 2
    s = run.steps
    a0, a1 = s[s["attempt"] == 0], s[s["attempt"] == 1]
    # attempt 0: steps 1-3 end at the next step's start; step 4 never finished
    assert a0["step"].tolist() == [1, 2, 3] and a0["end_s"].tolist() == [7.0, 9.0, 11.0]
    # attempt 1: steps 3-6, the last ends at job_end_time
    assert a1["step"].tolist() == [3, 4, 5, 6] and a1["end_s"].tolist()[-1] == 30.0
    ev = run.events.set_index("kind")
    assert (ev.loc["init", "start_s"], ev.loc["init", "end_s"]) == (0.0, 5.0)
    assert (ev.loc["failure", "start_s"], ev.loc["failure", "end_s"]) == (11.0, 20.0)
    assert ev.loc["restart", "start_s"] == 20.0


def test_blocking_activities_cut_the_step(tmp_path):
    j = {"job_name": "gp"}
    pay = [
        {**j, "job_start_time": GP_T0},
        {**j, "step_count": 1, "step_start_time": GP_T0 + 1},
        {**j, "custom_badput_event_type": "eval", "custom_badput_event_start_time": GP_T0 + 2},
        {**j, "custom_badput_event_type": "eval", "custom_badput_event_end_time": GP_T0 + 4},
        {**j, "step": 1, "event_type": "save", "directory": "gs://b",
         "checkpoint_manager_blocking_start_time": GP_T0 + 4, "checkpoint_manager_blocking_duration_secs": 1.5},
        {**j, "step_count": 2, "step_start_time": GP_T0 + 5.5},
        {**j, "data_loading_start_time": GP_T0 + 6},
        {**j, "data_loading_end_time": GP_T0 + 6.5},
        {**j, "job_end_time": GP_T0 + 7},
    ]
    run = load_run(write_goodput_log(tmp_path, pay))
    # step 1 stops where the eval starts; step 2 where the (first, hence blocking) data loading starts
    assert run.steps[["start_s", "end_s"]].values.tolist() == [[1.0, 2.0], [5.5, 6.0]]
    kinds = dict(zip(run.events["kind"], zip(run.events["start_s"], run.events["end_s"], strict=True), strict=False))
    assert kinds["eval"] == (2.0, 4.0) and kinds["checkpoint_save"] == (4.0, 5.5)
    assert kinds["data_load"] == (6.0, 6.5)
    assert set(run.tables["activities"]["kind"]) == {"eval", "checkpoint_save", "data_load"}


def test_cloud_logging_export_and_json_array(tmp_path):
    wrapped = [{"jsonPayload": x, "timestamp": "2023-11-14T22:13:20Z", "severity": "INFO"} for x in goodput_payloads()]
    p = tmp_path / "export.json"
    p.write_text(json.dumps(wrapped, indent=2))
    run = load_run(p)
    assert run.meta.source_format == "goodput" and run.n_attempts == 2
    assert any("record numbers" in n for n in run.meta.report.notes)


def test_job_name_filter(tmp_path):
    pay = goodput_payloads() + [{"job_name": "other", "step_count": 1, "step_start_time": GP_T0 + 29}]
    p = write_goodput_log(tmp_path, pay)
    run = load_run(p, job_name="gp")
    assert any("1 records of other jobs" in n for n in run.meta.report.notes)
    assert len(run.steps) == 7


def test_malformed_records(tmp_path):
    pay = goodput_payloads()
    p = write_goodput_log(tmp_path, pay)
    lines = p.read_text().splitlines()
    lines.insert(3, '{"job_name": "gp", "step_count": 1, "step_st')  # truncated (line 4)
    lines.insert(4, json.dumps({"job_name": "gp", "step_count": 1, "step_start_time": "NaN"}))  # line 5
    lines.insert(5, json.dumps({"job_name": "gp", "step_count": -1, "step_start_time": GP_T0 + 5}))  # line 6
    lines.insert(6, json.dumps({"job_name": "gp", "mystery": 1}))  # line 7
    lines.insert(7, json.dumps({"job_name": "gp", "step_count": 9, "step_start_time": GP_T0 - 100}))  # line 8
    lines.insert(8, "\x00\x01\x02")  # line 9
    lines.append('{"job_name": "gp", "job_end_ti')  # half-written last line
    p.write_text("\n".join(lines))
    with pytest.warns(LoadWarning) as caught:
        run = load_run(p, format="goodput")
    assert sum(w.category is LoadWarning for w in caught) == 1
    # the shared skip reasons (mfu_toolkit.io.rules), with the JSON parser's own message
    assert run.meta.report.first_lines == {
        rules.MALFORMED_JSON: [4, 9, len(lines)],
        rules.NON_FINITE_TIME: [5],
        rules.BAD_STEP: [6],
        "unrecognised goodput record (no known key)": [7],
        rules.NON_MONOTONIC: [8],
    }
    examples = run.meta.report.examples  # the detail the key no longer carries opens the example
    assert examples[rules.MALFORMED_JSON].startswith("Unterminated string starting at")
    assert examples[rules.NON_FINITE_TIME].startswith("step_start_time: ")
    assert examples[rules.NON_MONOTONIC].startswith("more than 1 s before an earlier record: ")
    assert len(run.steps) == 7
    with pytest.raises(LoadError) as info:
        goodput.load(p, strict=True)
    assert info.value.line == 4


def test_no_records_is_an_error(tmp_path):
    with pytest.raises(LoadError, match="no goodput records"):
        goodput.load(write_goodput_log(tmp_path, [{"job_name": "gp", "mystery": 1}]))


# --- export -----------------------------------------------------------------------------------------
def _run() -> Run:
    steps = {"step": [1, 2, 3, 4], "start_s": [10.0, 12.0, 14.0, 20.0], "end_s": [12.0, 14.0, 16.0, 22.0],
             "rank": [0, 0, 0, 0]}
    events = [
        {"kind": "init", "start_s": 0.0, "end_s": 8.0, "detail": "tpu_init"},
        {"kind": "data_load", "start_s": 8.0, "end_s": 10.0, "detail": ""},
        {"kind": "checkpoint_save", "start_s": 16.0, "end_s": 18.0, "detail": ""},
        {"kind": "eval", "start_s": 18.0, "end_s": 20.0, "detail": ""},
    ]
    return Run.build(steps, events, RunMeta(name="job1", extra={"t0_epoch_s": 1.7e9}))


def test_write_then_read_gives_the_same_timeline(tmp_path):
    run = _run()
    p = write_goodput(run, tmp_path / "g.jsonl")
    back = load_run(p)
    assert (back.steps[["step", "start_s", "end_s"]].values.tolist()
            == run.steps[["step", "start_s", "end_s"]].values.tolist())
    got = back.events[back.events["end_s"] > back.events["start_s"]][["kind", "start_s", "end_s"]].values.tolist()
    assert got == run.events[["kind", "start_s", "end_s"]].values.tolist()
    assert back.meta.extra["t0_epoch_s"] == 1.7e9 and back.meta.name == "job1"


def test_written_records_follow_the_library_format(tmp_path):
    recs = [json.loads(x) for x in write_goodput(_run(), tmp_path / "g.jsonl").read_text().splitlines()]
    assert all(r["job_name"] == "job1" for r in recs)
    times = [min(v for k, v in r.items() if k.endswith("_time")) for r in recs]
    assert times == sorted(times)  # the library reads entries in time order
    steps = [r for r in recs if "step_start_time" in r]
    assert [r["step_count"] for r in steps] == [1, 2, 3, 4]
    start = next(r["job_start_time"] for r in recs if "job_start_time" in r)
    end = next(r["job_end_time"] for r in recs if "job_end_time" in r)
    assert (start, end) == (1.7e9, 1.7e9 + 22.0)
    save = next(r for r in recs if r.get("event_type") == "save")
    assert save["checkpoint_manager_blocking_duration_secs"] == 2.0 and save["step"] == 3
    assert {r["custom_badput_event_type"] for r in recs if "custom_badput_event_type" in r} == {"EVAL"}
    # the library's productive time for a completed single-attempt job: from each step's start to
    # the next, the last to job_end, minus blocking checkpoint time
    starts = [r["step_start_time"] for r in steps]
    productive = sum(b - a for a, b in zip(starts, starts[1:], strict=False)) + end - starts[-1] - 2.0
    assert productive == pytest.approx(10.0)  # 2 + 2 + 6 + 2 = 12 s of spans, minus the 2 s save
    run = _run()  # and without the 2 s custom-badput eval that is the Run's step time
    assert productive - 2.0 == pytest.approx((run.steps["end_s"] - run.steps["start_s"]).sum())


def test_a_failure_and_restore_survive_the_round_trip(tmp_path):
    from mfu_toolkit.simulate import SimConfig, simulate

    cfg = SimConfig(
        n_ranks=4, n_steps=30, init_s=5.0, checkpoint_every=10, checkpoint_s=2.0, checkpoint_load_s=3.0,
        fail_at_steps=(14,), restart_s=20.0, jitter=0.1,
    )
    run = simulate(cfg)
    p = write_goodput(run, tmp_path / "g.jsonl")
    back = load_run(p, format="goodput")
    s, b = run.steps, back.steps
    assert back.n_attempts == run.n_attempts == 2
    crash, restored = int(s[s["attempt"] == 0]["step"].max()), int(s[s["attempt"] == 1]["step"].min())
    assert (crash, restored) == (14, 11)  # the run itself: failure in step 14, resumed from the step-10 checkpoint
    assert int(b[b["attempt"] == 0]["step"].max()) == crash
    assert int(b[b["attempt"] == 1]["step"].min()) == restored
    assert sorted(b[b["attempt"] == 0]["step"]) == sorted(set(s[s["attempt"] == 0]["step"]))
    # the interrupted step ends, and the failure starts, where they did
    fail0 = run.events[run.events["kind"] == "failure"].iloc[0]
    fail1 = back.events[back.events["kind"] == "failure"].iloc[0]
    assert fail1["start_s"] == pytest.approx(fail0["start_s"]) and fail1["end_s"] == pytest.approx(fail0["end_s"])
    assert b[(b["attempt"] == 0) & (b["step"] == crash)]["end_s"].iloc[0] == pytest.approx(fail0["start_s"])
    # the restore names the checkpoint step it resumes from
    recs = [json.loads(x) for x in p.read_text().splitlines()]
    assert [r["step"] for r in recs if r.get("event_type") == "restore"] == [restored - 1]
    assert back.events[back.events["kind"] == "checkpoint_load"]["detail"].tolist() == [f"restore step {restored - 1}"]


def test_a_loaded_log_with_a_crash_writes_back_the_same(tmp_path):
    run = load_run(write_goodput_log(tmp_path))
    back = load_run(write_goodput(run, tmp_path / "again.jsonl"))
    assert back.steps.values.tolist() == run.steps.values.tolist()
    cols = ["kind", "start_s", "end_s", "detail"]
    assert back.events[cols].values.tolist() == run.events[cols].values.tolist()


def test_a_failure_with_no_downtime_stays_in_its_attempt(tmp_path):
    from mfu_toolkit.simulate import SimConfig, simulate

    run = simulate(SimConfig(n_ranks=2, n_steps=12, fail_at_steps=(5,), restart_s=0.0, per_rank=False))
    back = load_run(write_goodput(run, tmp_path / "g.jsonl", t0_epoch_s=0.0), format="goodput")
    s, b = run.steps, back.steps
    for a in (0, 1):
        assert b[b["attempt"] == a]["step"].tolist() == s[s["attempt"] == a]["step"].tolist()


def _evals(run: Run) -> list[float]:
    """Start and end of each eval, flat: [start0, end0, start1, end1, ...]."""
    return run.events[run.events["kind"] == "eval"][["start_s", "end_s"]].to_numpy().ravel().tolist()


def test_back_to_back_evals_that_overlap_by_float_noise_stay_two(tmp_path):
    # sums of different terms: the first eval ends 1e-12 s after the second starts
    steps = {"step": [1, 2], "start_s": [0.0, 9886.0], "end_s": [1.0, 9887.0]}
    events = [
        {"kind": "eval", "start_s": 1.0, "end_s": 9885.353500000001},
        {"kind": "eval", "start_s": 9885.3535, "end_s": 9886.0},
    ]
    run = Run.build(steps, events, RunMeta(name="hf"))
    p = write_goodput(run, tmp_path / "g.jsonl", t0_epoch_s=0.0)
    recs = [json.loads(x) for x in p.read_text().splitlines()]
    times = [min(v for k, v in r.items() if k.endswith("_time")) for r in recs]
    assert times == sorted(times)
    back = load_run(p)
    assert back.meta.report.total_skipped == 0
    assert _evals(back) == pytest.approx(_evals(run), abs=1e-9)
    assert (back.steps[["step", "start_s", "end_s"]].values.tolist()
            == run.steps[["step", "start_s", "end_s"]].values.tolist())



@pytest.mark.parametrize(
    ("first", "second", "named"),
    [
        (("eval", 1.0, 20.0, ""), ("eval", 10.0, 29.0, ""),
         "eval event 1.0-20.0 s and eval event 10.0-29.0 s of attempt 0"),
        (("init", 1.0, 29.0, "tpu_init"), ("init", 5.0, 6.0, "tpu_init"),
         "init event 1.0-29.0 s and init event 5.0-6.0 s"),
        (("eval", 1.0, 20.0, ""), ("other", 19.0, 29.0, "eval"), "eval event 1.0-20.0 s and other event 19.0-29.0 s"),
    ],
)
def test_overlapping_intervals_of_one_type_are_an_error_not_a_wrong_log(tmp_path, first, second, named):
    steps = {"step": [1, 2], "start_s": [0.0, 30.0], "end_s": [1.0, 31.0]}
    events = [dict(zip(("kind", "start_s", "end_s", "detail"), e, strict=True)) for e in (first, second)]
    run = Run.build(steps, events, RunMeta(name="x"))
    with pytest.raises(ValueError, match="overlap") as exc:
        write_goodput(run, tmp_path / "g.jsonl", t0_epoch_s=0.0)
    assert named in str(exc.value) and "read back" in str(exc.value)
    assert not (tmp_path / "g.jsonl").exists()


def test_overlapping_intervals_of_different_types_round_trip(tmp_path):
    steps = {"step": [1, 2], "start_s": [0.0, 30.0], "end_s": [1.0, 31.0]}
    events = [
        {"kind": "data_load", "start_s": 1.0, "end_s": 20.0},
        {"kind": "eval", "start_s": 10.0, "end_s": 29.0},
        {"kind": "other", "start_s": 12.0, "end_s": 25.0, "detail": "PROFILE"},
    ]
    run = Run.build(steps, events, RunMeta(name="x"))
    back = load_run(write_goodput(run, tmp_path / "g.jsonl", t0_epoch_s=0.0), format="goodput")
    got = back.events[back.events["end_s"] > back.events["start_s"]][["kind", "start_s", "end_s"]].values.tolist()
    assert got == run.events[["kind", "start_s", "end_s"]].values.tolist() and back.meta.report.total_skipped == 0

def test_real_hf_run_round_trips_with_all_its_evals(realdata, tmp_path):  # noqa: F811
    run = load_run(realdata / "hf_trainer" / "Jaong_Checkpoint-of-CPT_trainer_state.json")
    back = load_run(write_goodput(run, tmp_path / "g.jsonl"))
    assert len(_evals(run)) == 2 * 20 and back.meta.report.total_skipped == 0
    assert _evals(back) == pytest.approx(_evals(run), abs=1e-6)
    assert len(back.steps) == len(run.steps)


# --- one bad record never refuses the file -----------------------------------------------------------
def _steady(n: int = 50) -> list[dict]:
    """A job of steps 1..n-1, one per second from GP_T0 + 1, ending at GP_T0 + n + 10."""
    j = {"job_name": "g"}
    return [{**j, "job_start_time": GP_T0},
            *({**j, "step_count": s, "step_start_time": GP_T0 + s} for s in range(1, n)),
            {**j, "job_end_time": GP_T0 + n + 10}]


@pytest.mark.parametrize(("bad", "reason", "detail"), [
    ({"step_start_time": GP_T0 + 1e6}, rules.NON_MONOTONIC, "far ahead of the records before and after it"),
    ({"step_start_time": 1e308}, rules.VALUE_OUT_OF_RANGE, "step_start_time negative or after the year 9999"),
    ({"step_count": 1e308}, rules.BAD_STEP, "step_count"),
    ({"step_count": "1" * 5000}, rules.BAD_STEP, "step_count"),
])
def test_one_garbled_record_is_the_only_one_skipped(tmp_path, bad, reason, detail):
    # the old loader skipped the 40 records after a time far ahead (all later steps lost) and kept
    # a step numbered 1e308
    pay = _steady()
    pay[10] = {**pay[10], **bad}  # step 10, on line 11
    with pytest.warns(LoadWarning):
        run = load_run(write_goodput_log(tmp_path, pay))
    assert run.meta.report.first_lines == {reason: [11]}
    assert run.meta.report.examples[reason].startswith(detail)
    assert run.steps["step"].tolist() == [s for s in range(1, 50) if s != 10]


def test_a_deeply_nested_line_is_counted(tmp_path):
    p = write_goodput_log(tmp_path, _steady())
    lines = p.read_text().split("\n")
    lines.insert(5, "[" * 100_000 + "]" * 100_000)  # was an InternalLoadError
    lines.insert(6, json.dumps({"job_name": [[[["g"]]]], "mystery": 1}))  # a job name that is not text
    p.write_text("\n".join(lines))
    with pytest.warns(LoadWarning):
        run = load_run(p, format="goodput")
    assert run.meta.report.first_lines == {rules.JSON_TOO_DEEP: [6], "unrecognised goodput record (no known key)": [7]}
    assert len(run.steps) == 49


def test_a_json_array_with_a_bom(tmp_path):
    p = tmp_path / "g.json"
    p.write_bytes(b"\xef\xbb\xbf" + json.dumps(goodput_payloads(), indent=1).encode())
    run = load_run(p)
    assert run.meta.source_format == "goodput" and run.n_attempts == 2 and len(run.steps) == 7


def test_steps_are_cut_at_blocking_activities_in_linear_time(tmp_path):
    # steps, each followed by an eval: the old loader compared every step with every eval (36 s
    # for 20,000 steps here); 2,500 and 10,000 steps: 4x the steps
    runs = {}

    def load(n: int):
        j = {"job_name": "g"}
        pay = [{**j, "job_start_time": GP_T0}]
        for s in range(n):
            t = GP_T0 + 3 * s
            pay += [{**j, "step_count": s, "step_start_time": t},
                    {**j, "custom_badput_event_type": "eval", "custom_badput_event_start_time": t + 1},
                    {**j, "custom_badput_event_type": "eval", "custom_badput_event_end_time": t + 2}]
        pay.append({**j, "job_end_time": GP_T0 + 3 * n})
        p = write_goodput_log(tmp_path, pay, name=f"goodput{n}.jsonl")
        return lambda: runs.__setitem__(n, load_run(p))

    ratio = growth(load, 2_500)
    assert ratio < linear_bound(), explain(ratio, what="the steps")
    run = runs[10_000]
    assert len(run.steps) == 10_000 and (run.steps["end_s"] - run.steps["start_s"]).eq(1.0).all()


@pytest.mark.parametrize("char", ["[", "0", " "])
def test_long_lines_of_one_character_are_quick(tmp_path, char):
    runs = {}

    def load(n: int):
        p = write_goodput_log(tmp_path, name=f"goodput{n}.jsonl")
        p.write_text(char * n + "\n" + p.read_text())

        def work():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)
                runs[n] = load_run(p, format="goodput")
        return work

    ratio = growth(load, 80_000)  # a line of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    assert len(runs[320_000].steps) == 7
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


def test_options_are_checked():
    assert goodput.Options(clock_tolerance_s="2").clock_tolerance_s == 2.0
    for bad in (-1, "nan", "inf", True, None, 10**400):  # 10**400 was a raw OverflowError, not the option's error
        with pytest.raises(ValueError, match="clock_tolerance_s"):
            goodput.Options(clock_tolerance_s=bad)


def test_damaged_copies_of_a_real_run_load_or_fail_cleanly(realdata, tmp_path):  # noqa: F811
    # no goodput log is among the real files: a real Hugging Face run written in the format is
    src = write_goodput(load_run(realdata / "hf_trainer" / "Jaong_Checkpoint-of-CPT_trainer_state.json"),
                        tmp_path / "src.jsonl")
    for seed in range(2):
        for kind, data in mutations(src.read_bytes(), random.Random(f"goodput:{seed}")):
            p = tmp_path / "g.jsonl"
            p.write_bytes(data)
            for strict in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LoadWarning)
                    try:
                        load_run(p, format="goodput", strict=strict)
                    except InternalLoadError as exc:
                        pytest.fail(f"{kind} (seed {seed}, strict={strict}): {exc}")
                    except (LoadError, SchemaError):
                        pass
