"""W&B export loader: history, system stats (gpu_util table), summary, bad rows, real run."""

from __future__ import annotations

import csv
import json
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import wandb
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning

T0 = 1_700_000_000.0
HISTORY = (
    "train/loss,train/global_step,eval/loss,eval/runtime,_timestamp,_runtime,_step,train/train_runtime\n"
    f"2.0,1,,,{T0 + 10},10,0,\n"
    f"1.9,2,,,{T0 + 12},12,1,\n"
    f",2,1.8,5.0,{T0 + 17.5},17.5,2,\n"
    f"1.7,3,,,{T0 + 20},20,3,\n"
    f"1.6,5,,,{T0 + 24},24,4,\n"
    f",5,,,{T0 + 24.5},24.5,5,24.0\n"
)
SYSTEM = (
    "_timestamp,cpu,gpu.0.gpu,gpu.1.gpu,gpu.process.0.gpu,gpu.0.powerWatts,gpu.1.powerWatts,"
    "gpu.0.memoryAllocated,gpu.1.memoryAllocated,system.gpu.0.temp\n"
    f"{T0 - 5},10,0,0,0,60,61,1,1,30\n"
    f"{T0 + 25},50,97,95,97,300,310,90,91,60\n"
)


def make_dir(root: Path) -> Path:
    (root / "history.csv").write_text(HISTORY)
    (root / "stats.csv").write_text(SYSTEM)
    (root / "wandb-summary.json").write_text(json.dumps({"train/loss": 1.6, "_wandb": {"runtime": 40}}))
    return root


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return wandb.load(p, **kw)


def test_folder_loads_as_one_run_with_gpu_util_table(tmp_path):
    d = make_dir(tmp_path)
    assert wandb.sniff(d, b"") >= 0.8
    for f in ("history.csv", "stats.csv", "wandb-summary.json"):
        assert wandb.sniff(d / f, read_head(d / f)) >= 0.8
    run = wandb.load(d)
    # t0 = the earliest of run start (T0) and the first system sample (T0 - 5).
    assert run.meta.extra["t0_epoch_s"] == T0 - 5
    s = run.steps
    assert s["step"].tolist() == [1, 2, 3, 4, 5]
    assert s["end_s"].tolist() == pytest.approx([15, 17, 25, 27, 29])
    # Step 3 starts when the evaluation ends, not at step 2's log line.
    assert s.loc[s["step"] == 3, "start_s"].iloc[0] == pytest.approx(22.5)
    assert s.loc[s["step"] == 4, "start_s"].iloc[0] == pytest.approx(25.0)  # 4 and 5 share 4 s
    assert s["loss"].tolist()[:3] == [2.0, 1.9, 1.7] and np.isnan(s["loss"].iloc[3])
    ev = run.events
    assert ev["kind"].tolist() == ["other", "eval", "other"]
    assert ev.loc[ev["kind"] == "eval", ["start_s", "end_s"]].iloc[0].tolist() == pytest.approx([17.5, 22.5])
    assert ev["end_s"].max() == pytest.approx(5 + 40)  # run start + summary _wandb.runtime
    assert run.meta.extra["final"]["train/train_runtime"] == 24.0
    g = run.tables["gpu_util"]
    assert list(g.columns[:4]) == ["time_s", "gpu", "util_pct", "memory_pct"]
    assert len(g) == 4 and g["gpu"].tolist() == [0, 1, 0, 1]
    assert g["time_s"].tolist() == pytest.approx([0, 0, 30, 30])
    assert g["util_pct"].tolist() == [0, 0, 97, 95] and g["power_w"].tolist() == [60, 61, 300, 310]
    assert g.loc[g["gpu"] == 0, "temp_c"].tolist() == [30, 60] and g.loc[g["gpu"] == 1, "temp_c"].isna().all()
    assert run.meta.extra["gpus_in_system_stats"] == 2
    assert run.meta.extra["summary"]["_wandb.runtime"] == 40


def test_single_files_load_alone(tmp_path):
    d = make_dir(tmp_path)
    sys_only = wandb.load(d / "stats.csv")
    assert sys_only.steps.empty and len(sys_only.tables["gpu_util"]) == 4
    summ = wandb.load(d / "wandb-summary.json")
    assert summ.steps.empty and summ.meta.extra["summary"]["train/loss"] == 1.6



def test_bad_rows_of_a_folder_name_their_file(tmp_path):
    d = make_dir(tmp_path)
    lines = HISTORY.splitlines()
    lines[2] = lines[2].replace("1.9,", "oops,", 1)  # a non-numeric loss on line 3 of history.csv
    (d / "history.csv").write_text("\n".join(lines) + "\n")
    (d / "stats.csv").write_text(SYSTEM + f"{T0 + 55},x,1,1,1,1,1,1,1,1\n")  # bad cpu on line 4
    run = load_quiet(d)
    reason = "non-numeric value (left missing, record kept)"
    assert run.meta.report.first_lines == {reason: ["history.csv:3", "stats.csv:4"]}
    assert f"2 × {reason} (first at history.csv:3, stats.csv:4)" in run.meta.report.summary()
    with pytest.raises(LoadError) as exc:
        wandb.load(d, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(d / "history.csv"), 3, "train/loss")
    assert load_quiet(d / "stats.csv").meta.report.first_lines == {reason: [4]}  # one file: plain lines


def test_unreadable_summary_is_counted_with_its_line(tmp_path):
    d = make_dir(tmp_path)
    (d / "wandb-summary.json").write_text('{"_wandb": {"runtime": 40},\n "train/loss": 1.6,\n "x": \n')
    reason = "malformed JSON record (Expecting value); summary left out"
    run = load_quiet(d)
    assert run.meta.report.skipped == {reason: 1} and run.meta.report.first_lines[reason] == ["wandb-summary.json:4"]
    assert "summary" not in run.meta.extra and len(run.steps) > 0
    with pytest.raises(LoadError) as exc:
        wandb.load(d, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(d / "wandb-summary.json"), 4, "summary")


def test_restart_and_bad_rows(tmp_path):
    p = tmp_path / "h.csv"
    text = (
        "loss,_step,_timestamp,_runtime\n"
        f"1.0,0,{T0 + 1},1\n"
        f"1.0,1,{T0 + 0.5},2\n"  # clock went back
        f"1.0,2,{T0 + 3},3\n"
        f"1.0,zz,,4\n"  # no timestamp: a required value
        f"1.0,1,{T0 + 100},5\n"  # step went back: relaunch
        f"1.0,2,{T0 + 101}"[:-4]  # half-written
    )
    p.write_text(text)
    with pytest.warns(LoadWarning):
        run = wandb.load(p)
    rep = run.meta.report
    assert rep.skipped == {
        "non-monotonic timestamp": 1,
        "time is missing, NaN or infinite (_timestamp)": 1,
        "half-written last line": 1,
    }
    assert rep.first_lines == {
        "non-monotonic timestamp": [3],
        "time is missing, NaN or infinite (_timestamp)": [5],
        "half-written last line": [7],
    }
    assert run.n_attempts == 2
    # Strict: row-level damage is found while reading, before order checks.
    with pytest.raises(LoadError) as exc:
        wandb.load(p, strict=True)
    assert exc.value.line == 5 and exc.value.field == "_timestamp"
    p.write_text("\n".join(text.splitlines()[:4]) + "\n")
    with pytest.raises(LoadError, match="non-monotonic") as exc:
        wandb.load(p, strict=True)
    assert exc.value.line == 3


def test_missing_columns_empty_and_foreign_inputs(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("_step,_runtime,loss\n0,1,2\n")
    with pytest.raises(LoadError, match="not a W&B export"):
        wandb.load(p)
    p.write_text("")
    with pytest.raises(LoadError):
        wandb.load(p)
    other = tmp_path / "empty_dir"
    other.mkdir()
    (other / "notes.csv").write_text("a,b\n1,2\n")
    assert wandb.sniff(other, b"") == 0.0
    with pytest.raises(LoadError, match="no W&B"):
        wandb.load(other)
    two = tmp_path / "two"
    two.mkdir()
    (two / "a.csv").write_text(HISTORY)
    (two / "b.csv").write_text(HISTORY)
    with pytest.raises(LoadError, match="several W&B history files"):
        wandb.load(two)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "h.csv"
        p.write_bytes(b"_step,_timestamp,_runtime,loss\n" + data)
        try:
            load_quiet(p)
        except LoadError:
            pass


@pytest.mark.realdata
def test_real_run_matches_the_raw_exports():
    from mfu_toolkit.io import load_run

    folder = realdata_dir("wandb")
    hist_p = next(folder.glob("*history*.csv"))
    sys_p = next(folder.glob("*system_stats*.csv"))
    with hist_p.open() as f:
        hist = list(csv.DictReader(f))
    with sys_p.open() as f:
        system = list(csv.DictReader(f))
    summary = json.loads(next(folder.glob("*summary*.json")).read_text())
    run = load_run(folder)
    assert run.meta.source_format == "wandb" and run.meta.report.total_skipped == 0
    loss_rows = [r for r in hist if r["train/loss"]]
    assert len(run.steps) == len(loss_rows) == len({r["train/global_step"] for r in loss_rows})
    assert run.steps["step"].tolist() == [int(r["train/global_step"]) for r in loss_rows]
    # Epoch seconds → seconds since the run start: end_s + t0 is the raw _timestamp.
    t0 = min(float(r["_timestamp"]) - float(r["_runtime"]) for r in hist)
    t0 = min(t0, min(float(r["_timestamp"]) for r in system))
    assert run.meta.extra["t0_epoch_s"] == pytest.approx(t0)
    assert (run.steps["end_s"] + t0).tolist() == pytest.approx([float(r["_timestamp"]) for r in loss_rows])
    # GPU utilisation: one row per sample per GPU; the per-GPU mean equals the raw column mean.
    gpus = sorted({int(m.group(1)) for c in system[0] for m in [re.fullmatch(r"gpu\.(\d+)\.gpu", c)] if m})
    g = run.tables["gpu_util"]
    assert len(g) == len(system) * len(gpus) and sorted(g["gpu"].unique()) == gpus
    for n in gpus:
        raw = [float(r[f"gpu.{n}.gpu"]) for r in system if r[f"gpu.{n}.gpu"]]
        assert g.loc[g["gpu"] == n, "util_pct"].mean() == pytest.approx(np.mean(raw))
        rawp = [float(r[f"gpu.{n}.powerWatts"]) for r in system if r[f"gpu.{n}.powerWatts"]]
        assert g.loc[g["gpu"] == n, "power_w"].mean() == pytest.approx(np.mean(rawp))
    assert run.meta.extra["summary"]["train/global_step"] == summary["train/global_step"]
    # Wall time: from the run start to its end as the summary states it (_wandb.runtime).
    assert run.wall_seconds == pytest.approx(summary["_wandb"]["runtime"])
