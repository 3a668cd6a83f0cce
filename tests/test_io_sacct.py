"""SLURM sacct output: default fixed-width table, parsable form with times and requeues."""

from __future__ import annotations

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import SACCT_DEFAULT, SACCT_TIMES, write_sacct

from mfu_toolkit.io import load_run
from mfu_toolkit.io.formats import sacct
from mfu_toolkit.run import LoadError, LoadWarning


def test_default_output_fills_the_jobs_table_only(tmp_path):
    run = load_run(write_sacct(tmp_path, SACCT_DEFAULT))
    assert run.meta.source_format == "sacct"
    jobs = run.tables["jobs"]
    assert jobs["job_id"].tolist() == ["77", "77"] and jobs["job_step"].tolist() == ["", "batch"]
    assert jobs["state"].tolist() == ["COMPLETED", "COMPLETED"]
    assert len(run.steps) == 0 and len(run.events) == 0
    notes = " ".join(run.meta.report.notes)
    assert "no Start/End columns" in notes and "truncated" in notes
    assert run.meta.name == "train_llm+"


def test_times_requeue_and_gpus(tmp_path):
    run = load_run(write_sacct(tmp_path, SACCT_TIMES))
    assert run.n_attempts == 2 and run.meta.n_accelerators == 16
    ev = run.events.sort_values(["start_s", "kind"]).reset_index(drop=True)
    rows = ev[["kind", "start_s", "end_s", "attempt"]].values.tolist()
    assert rows == [
        ["queue", 0.0, 300.0, 0],  # submit 10:00 -> start 10:05
        ["failure", 7200.0, 7260.0, 0],  # NODE_FAIL at 12:00 -> eligible again 12:01
        ["queue", 7260.0, 7800.0, 1],  # eligible 12:01 -> start 12:10
        ["restart", 7800.0, 7800.0, 1],
    ]
    assert "NODE_FAIL" in ev.loc[1, "detail"]
    jobs = run.tables["jobs"]
    assert jobs["elapsed_s"].tolist() == [6900.0, 6900.0, 28200.0]
    assert jobs["attempt"].tolist()[0] == 0 and jobs["attempt"].tolist()[2] == 1
    assert run.meta.time_unit == "epoch_s" and run.meta.extra["t0_wallclock"] == "2024-05-01 10:00:00"


def test_parsable_with_trailing_pipe(tmp_path):
    text = "JobID|JobName|State|Start|End|\n5|x|COMPLETED|2024-01-01T00:00:00|2024-01-01T01:00:00|\n"
    run = load_run(write_sacct(tmp_path, text))
    assert run.tables["jobs"]["end_s"].tolist() == [3600.0]


def test_bad_lines_are_counted(tmp_path):
    text = SACCT_TIMES + "garbage|line\nabc|x|COMPLETED|0:0|Unknown|Unknown|Unknown|Unknown|00:00:00|\n"
    text += ("9|x|COMPLETED|0:0|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T02:00:00|2024-01-01T01:00:00|"
             "00:00:00|\n")
    text += "10|x|COMPLETED|0:0|yesterday|Unknown|Unknown|Unknown|00:00:00|\n"
    with pytest.warns(LoadWarning):
        run = load_run(write_sacct(tmp_path, text))
    assert run.meta.report.first_lines == {
        "wrong number of fields": [5],
        "JobID is not a SLURM job id": [6],
        "interval end before its start": [7],
        "unreadable time (left missing, record kept)": [8],
    }
    examples = run.meta.report.examples
    assert examples["wrong number of fields"].startswith("expected 10: ")
    assert examples["interval end before its start"].startswith("job: ")
    assert examples["unreadable time (left missing, record kept)"] == "submit: yesterday"
    with pytest.raises(LoadError) as info:
        sacct.load(write_sacct(tmp_path, text), strict=True)
    assert info.value.line == 5


def test_not_sacct(tmp_path):
    with pytest.raises(LoadError, match="no sacct header"):
        sacct.load(write_sacct(tmp_path, "hello\nworld\n"))
    with pytest.raises(LoadError, match="line of dashes"):
        sacct.load(write_sacct(tmp_path, "JobID JobName\n5 x\n"))


def test_real_sacct_default_output(realdata):  # noqa: F811
    # the default text output; `sacct --json` (slurm/*.json) is another format, not this loader's
    for path in files(realdata / "slurm", "*.txt"):
        lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
        records = lines[2:]  # header, dashes, records
        run = load_run(path)
        assert run.meta.source_format == "sacct"
        jobs = run.tables["jobs"]
        assert len(jobs) == len(records)
        assert jobs["state"].tolist() == [r.split()[-2] for r in records]
        assert jobs["exit_code"].tolist() == [r.split()[-1] for r in records]
        assert jobs["job_id"].tolist() == [r.split()[0].split(".")[0] for r in records]
        assert len(run.events) == 0  # the default format has no times: nothing invented
