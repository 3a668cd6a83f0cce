"""Lightning CSVLogger loader: metrics.csv, hparams.yaml, version_N attempts, bad rows, real log."""

from __future__ import annotations

import csv
import tempfile
import warnings
from pathlib import Path

import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import lightning
from mfu_toolkit.io._common import read_head
from mfu_toolkit.run import LoadError, LoadWarning

METRICS = """epoch,step,train_loss_step,val_loss,timestamp
0,9,2.5,,1700000010.0
0,19,2.3,,1700000020.0
0,19,,2.4,
0,29,2.1,,1700000035.0
"""


def make_version(root: Path, n: int, text: str = METRICS, hparams: str | None = "lr: 0.001\nlayers: 4\n") -> Path:
    d = root / f"version_{n}"
    d.mkdir(parents=True)
    (d / "metrics.csv").write_text(text)
    if hparams is not None:
        (d / "hparams.yaml").write_text(hparams)
    return d


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return lightning.load(p, **kw)


def test_rows_merge_per_step_and_a_logged_clock_gives_interval_steps(tmp_path):
    d = make_version(tmp_path, 0)
    assert lightning.sniff(d, b"") >= 0.9
    assert lightning.sniff(d / "metrics.csv", read_head(d / "metrics.csv")) >= 0.8
    run = lightning.load(d)
    m = run.tables["metrics"]
    assert m["step"].tolist() == [9, 19, 29]  # the val row of step 19 merged into it
    assert m.loc[m["step"] == 19, "val_loss"].iloc[0] == 2.4
    assert m.loc[m["step"] == 19, "train_loss_step"].iloc[0] == 2.3
    s = run.steps
    assert run.meta.timing == "interval_mean"
    assert s["step"].tolist() == [9, *range(10, 30)]
    # 10..19 share 10 s, 20..29 share 15 s; step 9 is zero-width (no start logged).
    assert s.loc[s["step"] == 15, "end_s"].iloc[0] - s.loc[s["step"] == 15, "start_s"].iloc[0] == pytest.approx(1.0)
    assert s.loc[s["step"] == 25, "end_s"].iloc[0] - s.loc[s["step"] == 25, "start_s"].iloc[0] == pytest.approx(1.5)
    assert run.wall_seconds == pytest.approx(25.0)
    assert run.meta.extra["hparams"] == {"lr": 0.001, "layers": 4}


def test_version_folders_are_attempts(tmp_path):
    logs = tmp_path / "lightning_logs"
    make_version(logs, 0, "epoch,step,loss\n0,9,2.0\n0,19,1.9\n")
    make_version(logs, 1, "epoch,step,loss\n0,19,1.9\n0,29,1.8\n", hparams="lr: 0.002\n")
    make_version(logs, 10, "epoch,step,loss\n0,29,1.8\n", hparams=None)
    run = lightning.load(logs)
    m = run.tables["metrics"]
    assert m.groupby("attempt")["step"].apply(list).to_dict() == {0: [9, 19], 1: [19, 29], 2: [29]}
    assert run.meta.extra["versions"] == ["version_0", "version_1", "version_10"]  # numeric order
    assert run.meta.extra["hparams"] == {"version_0": {"lr": 0.001, "layers": 4}, "version_1": {"lr": 0.002}}
    # No time column: nothing is invented.
    assert run.steps.empty and any("no time column" in n for n in run.meta.report.notes)


def test_step_time_column_gives_duration_only_rows(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,step,loss,step_time\n0,0,2.0,1.5\n0,1,1.9,0.5\n0,2,1.8,-1\n")
    run = load_quiet(p)
    assert run.meta.timing == "duration_only"
    assert run.steps["end_s"].tolist() == pytest.approx([1.5, 2.0])
    assert run.meta.report.skipped == {"negative duration": 1}


def test_bad_rows_are_counted_with_lines_or_raised(tmp_path):
    p = tmp_path / "metrics.csv"
    text = "epoch,step,loss\n0,0,2.0\n0,1,abc\n0,x,1.0\n0,3,1.7\n0,4"
    p.write_text(text)
    with pytest.warns(LoadWarning):
        run = lightning.load(p)
    rep = run.meta.report
    assert rep.skipped == {"non-numeric value": 2, "half-written last line": 1}
    assert rep.first_lines["non-numeric value"] == [3, 4]
    assert rep.first_lines["half-written last line"] == [6]
    assert run.tables["metrics"]["step"].tolist() == [0, 3]
    with pytest.raises(LoadError) as exc:
        lightning.load(p, strict=True)
    assert exc.value.line == 3 and exc.value.field == "loss"



def test_several_version_folders_name_the_file_of_each_skipped_line(tmp_path):
    logs = tmp_path / "lightning_logs"
    make_version(logs, 0, "epoch,step,loss\n0,0,2.0\n0,1,abc\n0,2,1.8\n", hparams=None)  # bad: line 3
    make_version(logs, 1, "epoch,step,loss\n0,3,1.7\n0,4,1.6\n0,5,x\n", hparams=None)  # bad: line 4
    run = load_quiet(logs)
    rep = run.meta.report
    assert rep.skipped == {"non-numeric value": 2}
    assert rep.first_lines == {"non-numeric value": ["version_0/metrics.csv:3", "version_1/metrics.csv:4"]}
    assert "2 × non-numeric value (first at version_0/metrics.csv:3, version_1/metrics.csv:4)" in rep.summary()
    assert rep.to_frame()["first_lines"].tolist() == ["version_0/metrics.csv:3, version_1/metrics.csv:4"]
    # strict: the error names the version's file and its line, not the folder
    with pytest.raises(LoadError) as exc:
        lightning.load(logs, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(logs / "version_0" / "metrics.csv"), 3, "loss")
    assert str(exc.value).startswith(f"{logs / 'version_0' / 'metrics.csv'}, line 3, field 'loss': non-numeric value")
    # one version folder, or its file: plain line numbers as before
    for one in (logs / "version_1", logs / "version_1" / "metrics.csv"):
        rep1 = load_quiet(one).meta.report
        assert rep1.first_lines == {"non-numeric value": [4]}
        assert "1 × non-numeric value (first at line 4)" in rep1.summary()


def test_non_monotonic_clock_is_skipped(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,step,loss,timestamp\n0,0,2,100\n0,1,2,105\n0,2,2,103\n0,3,2,110\n")
    run = load_quiet(p)
    assert run.meta.report.skipped == {"non-monotonic timestamps": 1}
    assert run.steps["step"].tolist() == [0, 1, 2, 3]  # step 2 is inside step 3's interval
    with pytest.raises(LoadError, match="non-monotonic"):
        lightning.load(p, strict=True)



def test_clock_and_duration_errors_name_the_line(tmp_path):
    # the timestamp goes back at step 3 (line 5); the val row of step 1 (line 4) has no clock
    p = tmp_path / "lm2.csv"
    p.write_text("epoch,step,loss,val_loss,timestamp\n0,0,2,,100\n0,1,2,,101\n0,1,,2.5,\n0,3,2,,99\n0,4,2,,104\n")
    run = load_quiet(p)
    assert run.meta.report.first_lines == {"non-monotonic timestamps": [5]}
    with pytest.raises(LoadError) as exc:
        lightning.load(p, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(p), 5, "timestamp")
    # a negative duration in a version folder: the error names that version's metrics.csv
    d = make_version(tmp_path / "logs", 0, "epoch,step,loss,step_time\n0,1,2.0,\n0,1,,0.5\n0,2,1.9,-1\n", hparams=None)
    make_version(tmp_path / "logs", 1, "epoch,step,loss\n0,3,1.8\n", hparams=None)  # no time column
    run = load_quiet(d.parent)
    assert run.meta.report.first_lines == {"negative duration": ["version_0/metrics.csv:4"]}  # two files: named
    assert run.steps["step"].tolist() == [1]
    assert "1 of 2 metrics file(s) without step times, not attempts: version_1 (no 'step_time' column)" in run.meta.report.notes
    with pytest.raises(LoadError) as exc:
        lightning.load(d.parent, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(d / "metrics.csv"), 4, "step_time")


@pytest.mark.parametrize("kind", ["step_time", "timestamp"])
def test_versions_without_step_times_take_no_attempt_number(tmp_path, kind):
    logs = tmp_path / "lightning_logs"
    make_version(logs, 0, "epoch,step,loss\n0,3,1.8\n", hparams=None)  # no time column
    make_version(logs, 1, f"epoch,step,loss,{kind}\n", hparams=None)  # header only: no rows
    t = (0.5, 0.5) if kind == "step_time" else (1_700_000_000.0, 1_700_000_000.5)
    make_version(logs, 2, f"epoch,step,loss,{kind}\n0,4,1.7,{t[0]}\n0,5,1.6,{t[1]}\n", hparams=None)
    make_version(logs, 3, f"epoch,step,loss,{kind}\n0,6,1.5,\n0,7,1.4,{t[1] + 0.5}\n", hparams=None)
    run = lightning.load(logs)
    assert run.steps.groupby("attempt")["step"].apply(list).to_dict() == {0: [4, 5], 1: [7]}
    m = run.tables["metrics"]
    assert m["version"].tolist() == ["version_0", "version_2", "version_2", "version_3", "version_3"]
    assert m["attempt"].tolist()[1:] == [0, 0, 1, 1] and m["attempt"].isna().tolist() == [True, False, False, False, False]
    notes = run.meta.report.notes
    assert (
        f"2 of 4 metrics file(s) without step times, not attempts: version_0 (no {kind!r} column); version_1 (no {kind!r} value)"
        in notes
    )
    assert "4 version_N folders read as attempts 0..1 (those with step times)" in notes


def test_missing_column_empty_file_and_empty_folder(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,loss\n0,1.0\n")
    with pytest.raises(LoadError, match="missing column 'step'") as exc:
        lightning.load(p)
    assert exc.value.line == 1
    p.write_text("")
    with pytest.raises(LoadError, match="empty"):
        lightning.load(p)
    empty = tmp_path / "lightning_logs"
    empty.mkdir()
    with pytest.raises(LoadError, match="no metrics.csv"):
        lightning.load(empty)
    assert lightning.sniff(empty, b"") == 0.0


def test_unreadable_hparams_is_a_counted_record(tmp_path):
    d = make_version(tmp_path, 0, hparams="lr: [unclosed\n")
    run = load_quiet(d)
    assert any("hparams" in r for r in run.meta.report.skipped)
    assert "hparams" not in run.meta.extra
    with pytest.raises(LoadError, match="hparams") as exc:
        lightning.load(d, strict=True)
    assert exc.value.path == str(d / "hparams.yaml")  # the YAML itself, not the metrics.csv beside it


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "metrics.csv"
        p.write_bytes(b"epoch,step,loss\n" + data)
        try:
            load_quiet(p)
        except LoadError:
            pass


@pytest.mark.realdata
def test_real_metrics_and_hparams_match_the_raw_files():
    import yaml

    from mfu_toolkit.io import load_run

    p = realdata_dir("lightning", "0Xero7_slm_training_version_12_metrics.csv")
    with p.open() as f:
        rows = list(csv.DictReader(f))
    run = load_run(p)
    assert run.meta.source_format == "lightning"
    m = run.tables["metrics"]
    assert m["step"].tolist() == sorted({int(r["step"]) for r in rows})
    assert m["train_loss_step"].tolist() == pytest.approx([float(r["train_loss_step"]) for r in rows])
    hp = yaml.safe_load(realdata_dir("lightning", "0Xero7_slm_training_version_12_hparams.yaml").read_text())
    assert run.meta.extra["hparams"] == hp
    assert run.steps.empty  # the file has no time column: no step times are invented
    assert run.meta.report.total_skipped == 0
    # The hparams.yaml names the same run.
    side = load_run(realdata_dir("lightning", "0Xero7_slm_training_version_12_hparams.yaml"))
    assert side.tables["metrics"].equals(m)
