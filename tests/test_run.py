"""The Run schema: defaults, validation messages, the LoadReport, and lossless Parquet round trips."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from mfu_toolkit.run import (
    LoadError,
    LoadReport,
    LoadWarning,
    Run,
    RunMeta,
    SchemaError,
    make_events,
    make_steps,
    read_run,
    save_run,
)


def _steps(**extra):
    d = {"step": [1, 2, 3], "start_s": [0.0, 1.0, 2.0], "end_s": [1.0, 2.0, 3.0]}
    d.update(extra)
    return d


# --- defaults ------------------------------------------------------------------------------
def test_make_steps_defaults_attempt_and_rank():
    s = make_steps(_steps())
    assert list(s["attempt"]) == [0, 0, 0]
    assert list(s["rank"]) == [-1, -1, -1]
    assert s["step"].dtype == np.int64 and s["start_s"].dtype == np.float64


def test_make_steps_keeps_optional_and_extra_columns():
    s = make_steps(_steps(samples=[8, 8, 8], loss=[2.0, 1.9, 1.8]))
    assert s["samples"].dtype == np.float64
    assert list(s["loss"]) == [2.0, 1.9, 1.8]


def test_make_steps_missing_required_column_names_it():
    with pytest.raises(SchemaError, match="end_s"):
        make_steps({"step": [1], "start_s": [0.0]})


def test_make_events_defaults():
    e = make_events([{"kind": "eval", "start_s": 1.0, "end_s": 2.0}])
    assert e.loc[0, "attempt"] == 0 and e.loc[0, "rank"] == -1 and e.loc[0, "detail"] == ""


def test_empty_run_has_zero_wall_time():
    r = Run.build()
    assert r.wall_seconds == 0.0 and r.n_attempts == 0 and r.ranks == []


# --- validation names the column and the rows -----------------------------------------------
def test_end_before_start_names_column_and_row():
    with pytest.raises(SchemaError, match=r"end_s must be >= start_s; rows \[1\]"):
        Run.build({"step": [1, 2], "start_s": [0.0, 5.0], "end_s": [1.0, 4.0]})


def test_non_integer_step_names_rows():
    with pytest.raises(SchemaError, match=r"steps\.step must hold integers; rows \[(np\.int64\()?1\)?\]"):
        make_steps({"step": [1, 1.5], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]})


def test_non_numeric_time_names_rows():
    with pytest.raises(SchemaError, match=r"steps\.start_s must be numeric; rows \[(np\.int64\()?0\)?\]"):
        make_steps({"step": [1], "start_s": ["x"], "end_s": [1.0]})


def test_non_finite_time():
    with pytest.raises(SchemaError, match="start_s must be finite"):
        Run.build({"step": [1], "start_s": [np.inf], "end_s": [np.inf]})


def test_unknown_event_kind_lists_kinds():
    with pytest.raises(SchemaError, match="events.kind must be one of init"):
        Run.build(None, [{"kind": "lunch", "start_s": 0.0, "end_s": 1.0}])


def test_attempt_gap_and_start():
    with pytest.raises(SchemaError, match=r"missing \[1\]"):
        Run.build({"attempt": [0, 2], "step": [1, 1], "start_s": [0.0, 5.0], "end_s": [1.0, 6.0]})
    with pytest.raises(SchemaError, match="must start at 0"):
        Run.build({"attempt": [1], "step": [1], "start_s": [0.0], "end_s": [1.0]})


def test_repeated_step_rank_names_rows():
    with pytest.raises(SchemaError, match=r"must be unique; rows \[1\]"):
        Run.build({"step": [1, 1], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]})


def test_negative_optional_duration():
    with pytest.raises(SchemaError, match="data_wait_s must be >= 0"):
        Run.build(_steps(data_wait_s=[0.1, -0.1, 0.0]))


def test_rank_below_minus_one():
    with pytest.raises(SchemaError, match="rank must be >= -1"):
        Run.build(_steps(rank=[0, -2, 0]))


def test_meta_checks_timing_and_counts():
    with pytest.raises(SchemaError, match="timing must be one of exact"):
        RunMeta(timing="roughly")
    with pytest.raises(SchemaError, match="n_accelerators"):
        RunMeta(n_accelerators=0)
    with pytest.raises(SchemaError, match="global_batch"):
        RunMeta(global_batch=float("nan"))


def test_facts_wall_attempts_ranks():
    r = Run.build(
        {"attempt": [0, 0, 1], "step": [1, 1, 1], "rank": [0, 1, 0], "start_s": [2.0, 2.0, 10.0],
         "end_s": [3.0, 3.5, 11.0]},
        [{"kind": "init", "start_s": 0.0, "end_s": 2.0}],
    )
    assert r.n_attempts == 2 and r.ranks == [0, 1]
    assert r.t0 == 0.0 and r.t1 == 11.0 and r.wall_seconds == 11.0


# --- LoadReport ------------------------------------------------------------------------------
def test_report_says_the_first_detail_of_each_reason():
    # one reason counts every rank; the summary says what told the first record apart
    rep = LoadReport(source="x.log", format="demo")
    rep.skip("value out of range", line=4, example="rank: 9", detail="rank 9 of 8")
    rep.skip("value out of range", line=7, detail="rank 12 of 8")
    rep.skip("bad", detail="no line")
    assert rep.skipped == {"value out of range": 2, "bad": 1} and rep.details["value out of range"] == "rank 9 of 8"
    assert rep.summary().endswith(": 2 × value out of range (rank 9 of 8; first at line 4, 7); 1 × bad (no line).")
    other = LoadReport()
    other.skip("bad", line=3, detail="first of the other")
    other.skip("late", line=1, detail="only here")
    rep.merge(other)
    assert rep.details == {"value out of range": "rank 9 of 8", "bad": "no line", "late": "only here"}


def test_report_counts_reasons_with_first_lines_and_warns_once():
    rep = LoadReport(source="x.log", format="demo", lines_read=10, rows_kept=7)
    for ln in (3, 5, 9, 11, 12, 13, 14):
        rep.skip("bad", line=ln, example="garbage")
    rep.skip("other")
    assert rep.skipped == {"bad": 7, "other": 1}
    assert rep.first_lines["bad"] == [3, 5, 9, 11, 12]
    assert "7 × bad (first at line 3, 5, 9, 11, 12)" in rep.summary()
    with pytest.warns(LoadWarning, match="skipped 8"):
        rep.warn_if_skipped()
    frame = rep.to_frame()
    assert list(frame["reason"]) == ["bad", "other"] and frame.loc[0, "example"] == "garbage"


def test_report_no_warning_when_clean():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LoadReport().warn_if_skipped()


def test_report_merge_and_dict_round_trip():
    a, b = LoadReport(lines_read=1, rows_kept=1), LoadReport(lines_read=2, rows_kept=2)
    b.skip("r", line=4)
    b.note("hello")
    a.merge(b)
    assert (a.lines_read, a.rows_kept, a.skipped, a.notes) == (3, 3, {"r": 1}, ["hello"])
    assert LoadReport.from_dict(a.to_dict()) == a



def _report_of_two_files() -> LoadReport:
    """A report of a load that read two files: its locations are "file:line"."""
    rep = LoadReport(source="logs", format="demo", lines_read=8, rows_kept=4)
    rep.skip("non-numeric value", line=3, example="abc", file="version_0/metrics.csv")
    rep.skip("non-numeric value", line=4, example="x", file="version_1/metrics.csv")
    rep.skip("no line known", file="version_1/metrics.csv")
    return rep


def test_report_locations_name_the_file_when_a_load_read_several():
    rep = _report_of_two_files()
    assert rep.first_lines == {
        "non-numeric value": ["version_0/metrics.csv:3", "version_1/metrics.csv:4"],
        "no line known": [],
    }
    assert "2 × non-numeric value (first at version_0/metrics.csv:3, version_1/metrics.csv:4)" in rep.summary()
    assert "1 × no line known." in rep.summary()
    frame = rep.to_frame()
    assert frame.loc[0, "first_lines"] == "version_0/metrics.csv:3, version_1/metrics.csv:4"
    # a mix (a plain-numbered report merged in) keeps both kinds readable
    plain = LoadReport()
    plain.skip("non-numeric value", line=7)
    plain.merge(rep)
    assert plain.first_lines["non-numeric value"] == [7, "version_0/metrics.csv:3", "version_1/metrics.csv:4"]
    assert "(first at line 7, version_0/metrics.csv:3, version_1/metrics.csv:4)" in plain.summary()
    # dict and JSON round trips keep "file:line" text and plain ints apart
    for d in (rep.to_dict(), json.loads(json.dumps(rep.to_dict()))):
        back = LoadReport.from_dict(d)
        assert back == rep and back.summary() == rep.summary()
    back = LoadReport.from_dict(json.loads(json.dumps(plain.to_dict())))
    assert back.first_lines["non-numeric value"][0] == 7 and back == plain

def test_load_error_names_file_line_field():
    e = LoadError("expected a number", path="f.log", line=7, field="time_ms")
    assert str(e) == "f.log, line 7, field 'time_ms': expected a number"
    assert (e.path, e.line, e.field) == ("f.log", 7, "time_ms")


# --- Parquet round trip -----------------------------------------------------------------------
def _rich_run() -> Run:
    rep = LoadReport(source="a.log", format="demo", lines_read=12, rows_kept=6)
    rep.skip("malformed JSON", line=4, example="{")
    rep.note("two copies collapsed")
    meta = RunMeta(
        name="demo",
        accelerator="H100",
        dtype="bf16",
        n_accelerators=16,
        model_flops_per_step=1.5e15,
        global_batch=256.0,
        seq_len=2048,
        source_path="a.log",
        source_format="demo",
        time_unit="ms",
        timing="interval_mean",
        extra={"log_interval": 10, "args": {"world_size": "16"}, "launches": [1, 2]},
        report=rep,
    )
    steps = {
        "attempt": [0, 0, 1, 1],
        "step": [1, 2, 2, 3],
        "rank": [0, 0, 0, 0],
        "start_s": [1.0, 2.0, 10.0, 11.0],
        "end_s": [2.0, 3.0, 11.0, 12.5],
        "samples": [256.0, 256.0, np.nan, 256.0],
        "loss": [2.0, 1.9, 1.9, 1.8],
        "logged": [True, False, True, True],
        "interval_steps": [1, 1, 1, 1],
    }
    events = [
        {"kind": "init", "start_s": 0.0, "end_s": 1.0, "attempt": 0, "detail": "setup"},
        {"kind": "failure", "start_s": 3.0, "end_s": 9.0, "attempt": 0, "detail": "NODE_FAIL"},
        {"kind": "restart", "start_s": 9.0, "end_s": 10.0, "attempt": 1, "detail": ""},
    ]
    tables = {"evals": pd.DataFrame({"time_s": [3.0], "accuracy": [0.5], "name": ["x"]})}
    return Run.build(steps, events, meta, tables)


def test_parquet_round_trip_is_lossless(tmp_path):
    run = _rich_run()
    path = save_run(run, tmp_path / "run.parquet")
    back = read_run(path)
    assert back == run
    assert back.meta.report.skipped == {"malformed JSON": 1}
    assert back.meta.report.first_lines == {"malformed JSON": [4]}
    assert back.meta.extra["args"] == {"world_size": "16"}
    pd.testing.assert_frame_equal(back.events, run.events)
    pd.testing.assert_frame_equal(back.tables["evals"], run.tables["evals"])
    assert Run.from_parquet(run.to_parquet(tmp_path / "again.parquet")) == run



def test_parquet_round_trip_keeps_file_line_locations(tmp_path):
    run = _rich_run()
    run = run.replace(meta=run.meta.replace(report=_report_of_two_files()))
    back = read_run(save_run(run, tmp_path / "run.parquet"))
    assert back == run
    assert back.meta.report.first_lines == {
        "non-numeric value": ["version_0/metrics.csv:3", "version_1/metrics.csv:4"],
        "no line known": [],
    }
    assert back.meta.report.summary() == run.meta.report.summary()

def test_parquet_round_trip_of_an_empty_run(tmp_path):
    run = Run.build(meta=RunMeta(name="empty"))
    assert read_run(save_run(run, tmp_path / "e.parquet")) == run


def test_run_equality_sees_differences():
    a, b = _rich_run(), _rich_run()
    assert a == b
    assert a != a.with_meta(name="other")
    changed = b.replace(steps=b.steps.assign(end_s=b.steps["end_s"] + 1e-9))
    assert a != changed


def test_read_run_on_a_plain_parquet_says_what_to_do(tmp_path):
    p = tmp_path / "plain.parquet"
    pd.DataFrame({"step": [1], "start_s": [0.0], "end_s": [1.0]}).to_parquet(p)
    with pytest.raises(LoadError, match="load_table"):
        read_run(p)


def test_build_errors_name_the_callers_rows_not_the_sorted_ones():
    # Run.build sorts steps by start time; an error must still point at the row as given.
    # Row 2 (start 10, end 5) is the bad one; sorted, it would be row 1.
    with pytest.raises(SchemaError, match=r"rows \[2\] have start_s=\[10\.0\] end_s=\[5\.0\]"):
        Run.build({"step": [0, 1, 2, 3], "start_s": [30.0, 0.0, 10.0, 20.0], "end_s": [31.0, 1.0, 5.0, 21.0]})
    with pytest.raises(SchemaError, match=r"rows \[1\] hold \['evall'\]"):
        Run.build(None, [{"kind": "eval", "start_s": 5.0, "end_s": 6.0},
                         {"kind": "evall", "start_s": 0.0, "end_s": 1.0}])


# --- saved Runs: recognised, stored losslessly or refused clearly, checked on reading -------------
def _run_with_facts_and_claims() -> Run:
    """A Run whose meta holds stated and given facts and a claim, as the loaders record them."""
    run = _rich_run()
    facts = [
        {"name": "n_accelerators", "value": 16, "source": "stated", "where": "a.log:3", "text": "world size: 16"},
        {"name": "parallelism", "value": {"dp": 4, "tp": 4}, "source": "stated", "where": "a.log:4",
         "text": "dp 4 tp 4"},
        {"name": "accelerator", "value": "H100", "source": "given", "where": "load_run keyword", "text": ""},
    ]
    claims = [{"metric": "tflops_per_accelerator", "value": 412.5, "unit": "TFLOP/s", "counts": "model FLOPs per GPU",
               "where": "a.log:10", "n": 40, "statistic": "median"}]
    return run.with_meta(facts=facts, claims=claims)


def test_facts_and_claims_read_back_equal(tmp_path):
    from mfu_toolkit.io import load_run

    run = _run_with_facts_and_claims()
    path = save_run(run, tmp_path / "run.parquet")
    for back in (read_run(path), load_run(path), load_run(path, format="run_parquet")):
        assert back == run
        assert back.meta.fact("parallelism")["value"] == {"dp": 4, "tp": 4}
        assert back.meta.fact("accelerator", source="given")["where"] == "load_run keyword"
        assert back.meta.claim("tflops_per_accelerator")["n"] == 40


@pytest.mark.realdata
def test_real_straggler_runs_read_back_equal(tmp_path):
    from _realdata_b import realdata_dir

    from mfu_toolkit.io import load_run

    folder = realdata_dir("straggler_ops")
    for trace in sorted(folder.glob("trace-*.parquet")):
        run = load_run(trace, format="straggler_ops")
        path = save_run(run, tmp_path / f"{trace.stem}.run.parquet")
        assert read_run(path) == run, trace.name
        back = load_run(path)  # detected as a saved Run, never as the trace it came from
        assert back == run and back.meta.source_format == "straggler_ops", trace.name


def test_keywords_of_a_saved_run(tmp_path):
    from mfu_toolkit.io import load_run

    path = save_run(_rich_run(), tmp_path / "run.parquet")
    with pytest.raises(TypeError, match=r"unexpected keyword argument\(s\) \['colour'\]"):
        load_run(path, colour="blue")
    back = load_run(path, progress=False, max_inflate_factor=10, name="renamed")  # limits: accepted, unused
    assert back.meta.name == "renamed" and back.steps.equals(_rich_run().steps)


def test_a_saved_report_quoting_a_log_line_is_still_recognised(tmp_path):
    from mfu_toolkit.io import detect_format, load_run

    rep = LoadReport(source="result_0.txt", format="mlperf", lines_read=3, rows_kept=1)
    line = ':::MLLOG {"namespace": "", "time_ms": 1700000000000, "event_type": "POINT_IN_TIME", "key": "x", "value": 1}'
    rep.skip("malformed JSON record", line=2, example=line)
    run = Run.build({"step": [1], "start_s": [0.0], "end_s": [1.0]}, meta=RunMeta(name="r", report=rep))
    path = save_run(run, tmp_path / "run.parquet")
    assert b":::MLLOG" in path.read_bytes()[:8192]  # the quoted line is in the head other sniffers read
    assert detect_format(path) == "run_parquet"
    assert load_run(path) == run


def test_an_integer_beyond_64_bits_is_refused_naming_table_and_column(tmp_path):
    huge = 2**70
    steps = Run.build({"step": [1, 2], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0],
                       "flops": pd.Series([1, huge], dtype=object)})
    with pytest.raises(SchemaError,
                       match=rf"steps: column 'flops' holds an integer beyond 64 bits at row 1 \({huge}\)"):
        save_run(steps, tmp_path / "s.parquet")
    table = Run.build(tables={"kernels": pd.DataFrame({"calls": pd.Series([huge], dtype=object)})})
    with pytest.raises(SchemaError, match="table 'kernels': column 'calls' holds an integer beyond 64 bits"):
        save_run(table, tmp_path / "t.parquet")
    assert not (tmp_path / "s.parquet").exists() and not (tmp_path / "t.parquet").exists()


def _rewrite_meta(path, change) -> None:
    """Rewrite a saved Run's stored meta JSON with ``change(meta_dict)`` applied."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    md = dict(table.schema.metadata)
    meta = json.loads(md[b"mfu_toolkit.meta"])
    change(meta)
    md[b"mfu_toolkit.meta"] = json.dumps(meta).encode()
    pq.write_table(table.replace_schema_metadata(md), path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m["report"].update(skipped=[1, 2]), "meta.report.skipped"),  # summary() called .items() on it
        (lambda m: m["report"].update(first_lines={"x": "3"}), "meta.report.first_lines"),
        (lambda m: m.update(report="skipped none"), "meta.report"),
        (lambda m: m.update(extra=["a"]), "meta.extra"),
        (lambda m: m.update(facts={"name": "dtype"}), "meta.facts"),
        (lambda m: m.update(name=None), "meta.name"),
    ],
)
def test_a_malformed_stored_meta_is_refused_naming_the_file(tmp_path, change, field):
    from mfu_toolkit.io import load_run

    path = save_run(_rich_run(), tmp_path / "run.parquet")
    _rewrite_meta(path, change)
    for load in (read_run, load_run):
        with pytest.raises(LoadError) as exc:
            load(path)
        assert exc.value.path == str(path) and exc.value.field == field


def test_invalid_stored_meta_values_name_the_file(tmp_path):
    from mfu_toolkit.io import load_run

    path = save_run(_rich_run(), tmp_path / "run.parquet")
    _rewrite_meta(path, lambda m: m.update(n_accelerators=-3))
    with pytest.raises(LoadError, match="n_accelerators must be a positive integer") as exc:
        load_run(path)
    assert exc.value.path == str(path) and str(path) in str(exc.value)


def test_damaged_stored_tables_and_versions_are_refused_naming_the_file(tmp_path):
    import pyarrow.parquet as pq

    path = save_run(_rich_run(), tmp_path / "run.parquet")
    table = pq.read_table(path)
    for key, value, field in [
        (b"mfu_toolkit.events", b"not base64 at all!", "events"),
        (b"mfu_toolkit.tables", b'{"evals": "AAAA"}', "table 'evals'"),
        (b"mfu_toolkit.tables", b"[1]", "tables"),
        (b"mfu_toolkit.meta", b"{" * 100_000, "meta"),
        (b"mfu_toolkit.format", b"9", "format"),
    ]:
        md = dict(table.schema.metadata)
        md[key] = value
        bad = tmp_path / "bad.parquet"
        pq.write_table(table.replace_schema_metadata(md), bad)
        with pytest.raises(LoadError) as exc:
            read_run(bad)
        assert (exc.value.path, exc.value.field) == (str(bad), field), key


def test_stored_rows_that_break_the_schema_are_a_load_error(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = save_run(_rich_run(), tmp_path / "run.parquet")
    table = pq.read_table(path)
    i = table.schema.get_field_index("end_s")
    table = table.set_column(i, "end_s", pa.array([0.5] * table.num_rows))  # before every start
    pq.write_table(table, path)
    with pytest.raises(LoadError, match="breaks the schema: steps: end_s must be >= start_s") as exc:
        read_run(path)
    assert exc.value.path == str(path)


def test_a_huge_attempt_number_is_reported_without_listing_every_gap():
    with pytest.raises(SchemaError) as exc:
        Run.build({"attempt": [0, 2_000_000], "step": [1, 1], "start_s": [0.0, 5.0], "end_s": [1.0, 6.0]})
    text = str(exc.value)
    assert "missing [1, 2, 3, 4, 5, 6, 7, 8, 9, 10] and 1,999,989 more" in text and len(text) < 200


def test_wide_steps_build_in_time_linear_in_their_columns():
    import time

    def seconds(n_cols: int) -> float:
        cols = {"step": [1, 2, 3], "start_s": [0.0, 1.0, 2.0], "end_s": [1.0, 2.0, 3.0]}
        cols.update({f"c{i}": [1.5, 2.5, 3.5] for i in range(n_cols)})
        best = float("inf")
        for _ in range(3):
            t = time.perf_counter()
            run = Run.build(cols)
            best = min(best, time.perf_counter() - t)
        assert run.steps.shape == (3, 5 + n_cols)
        return best

    # 4x the columns: about 4x the time when linear (4.6x measured on a quiet machine: pandas'
    # own per-column cost grows a little with width); inserting them one by one was 16x
    assert seconds(8000) / seconds(2000) < 11


def test_repeated_column_names_are_a_schema_error():
    frame = pd.DataFrame([[1, 0.0, 1.0, 2.0, 3.0]], columns=["step", "start_s", "end_s", "x", "x"])
    with pytest.raises(SchemaError, match=r"steps has repeated column name\(s\) \['x'\]"):
        make_steps(frame)


def test_seeded_mutations_of_a_saved_run_load_or_fail_cleanly(tmp_path):
    """Byte-level damage (truncation, flips, NUL, CRLF/CR, BOM, ...) and stored meta of the wrong
    shape: a saved Run loads or is refused with the toolkit's own error, never an internal one."""
    import random

    from _corpus import mutations

    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.base import InternalLoadError

    src = save_run(_run_with_facts_and_claims(), tmp_path / "src.parquet")
    outcomes = []

    def attempt(p) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for fmt in ("run_parquet", "auto"):
                try:
                    outcomes.append(type(load_run(p, format=fmt)).__name__)
                except InternalLoadError as exc:
                    pytest.fail(f"{p}: internal error: {exc}")
                except (LoadError, SchemaError):
                    outcomes.append("refused")

    rng = random.Random("run_parquet")
    for kind, body in mutations(src.read_bytes(), rng):
        p = tmp_path / f"{kind}.parquet"
        p.write_bytes(body)
        attempt(p)
    values = [None, -1, 1e308, float("nan"), "x", [], {}, [[1]], {"a": {"b": None}}, True]
    keys = ["name", "n_accelerators", "timing", "extra", "report", "facts", "claims", "peak_sparse", "seq_len"]
    for i in range(30):
        p = tmp_path / f"meta{i}.parquet"
        p.write_bytes(src.read_bytes())
        key, value = rng.choice(keys), rng.choice(values)
        if key == "report" and rng.random() < 0.5:
            _rewrite_meta(p, lambda m, v=value: m["report"].update({rng.choice(list(m["report"])): v}))
        else:
            _rewrite_meta(p, lambda m, k=key, v=value: m.update({k: v}))
        attempt(p)
    assert "Run" in outcomes and "refused" in outcomes


def test_a_report_keeps_a_bounded_number_of_notes():
    # A format that notes once per record must not make the report grow with the input.
    rep = LoadReport()
    for i in range(10_000):
        rep.note(f"note {i}")
        rep.note("note 0")  # repeats are kept once
    assert len(rep.notes) == 201 and rep.notes[0] == "note 0" and rep.notes[199] == "note 199"
    assert rep.notes[-1].startswith("(more than 200 notes")
