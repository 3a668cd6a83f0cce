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
    reason = "unreadable file left out"
    run = load_quiet(d)
    assert run.meta.report.skipped == {reason: 1} and run.meta.report.first_lines[reason] == ["wandb-summary.json:4"]
    assert run.meta.report.examples[reason].startswith("summary: malformed JSON record (Expecting value): ")
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
        "time is missing, NaN or infinite": 1,
        "half-written last line": 1,
    }
    assert rep.first_lines == {
        "non-monotonic timestamp": [3],
        "time is missing, NaN or infinite": [5],
        "half-written last line": [7],
    }
    assert rep.examples["time is missing, NaN or infinite"].startswith("_timestamp: ")
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


# --- wandb-metadata.json: accelerator and count -------------------------------------------------------
def _at(pattern: str, text: str) -> tuple[str, int, str]:
    """The matched value, its line and that line's text, from the raw file."""
    m = re.search(pattern, text)
    line = text.count("\n", 0, m.start()) + 1
    return m.group(1), line, text.splitlines()[line - 1].strip()


@pytest.mark.realdata
def test_real_metadata_facts_match_the_raw_bytes():
    from mfu_toolkit.io import load_run

    folder = realdata_dir("accelerator_info")
    # Names and counts as read by eye in the files (older schema: "gpu", "gpu_count").
    for run_id, name, count in (("v7i3k2p0", "NVIDIA A100-SXM4-80GB", 8), ("yxelkra3", "NVIDIA H100 80GB HBM3", 8)):
        p = folder / f"0-KaiKai-0_stanford_alpaca_{run_id}_wandb-metadata.json"
        text = p.read_text()
        run = load_run(p)
        assert run.meta.source_format == "wandb" and run.steps.empty
        gpu, line, raw = _at(r'"gpu": "([^"]+)"', text)
        f = run.meta.fact("accelerator")
        assert (f["value"], f["where"], f["text"]) == (gpu, f"{p}:{line}", raw) and gpu == name
        n, line, raw = _at(r'"gpu_count": (\d+)', text)
        f = run.meta.fact("n_accelerators")
        assert (f["value"], f["where"], f["text"]) == (int(n), f"{p}:{line}", raw) and int(n) == count
        assert run.meta.n_accelerators == count
        assert any("the GPUs of the host that ran wandb.init" in x for x in run.meta.report.notes)
    p = folder / "0-KaiKai-0_stanford_alpaca_5qvjca60_wandb-metadata.json"
    assert '"gpu' not in p.read_text()  # no GPU fields at all
    run = load_run(p)
    assert run.meta.n_accelerators is None and run.meta.fact("accelerator") is None and run.meta.facts == []
    assert any("no GPU fields" in x for x in run.meta.report.notes)


def _metadata(tmp_path: Path, **fields) -> Path:
    doc = {"os": "Linux", "python": "3.11.9", "startedAt": "2025-01-01T00:00:00.000000Z", "program": "train.py",
           **fields}
    p = tmp_path / "wandb-metadata.json"
    p.write_text(json.dumps(doc, indent=4))
    return p


def test_newer_metadata_schema_and_odd_gpu_counts(tmp_path):
    nvidia = [{"name": "NVIDIA H100 80GB HBM3", "memoryTotal": "85520809984", "cudaCores": 16896,
               "architecture": "Hopper"}] * 4
    p = _metadata(tmp_path, gpu="NVIDIA H100 80GB HBM3", gpu_count=4, gpu_nvidia=nvidia)
    run = wandb.load(p)
    assert run.meta.fact("accelerator")["value"] == "NVIDIA H100 80GB HBM3" and run.meta.n_accelerators == 4
    p = _metadata(tmp_path, gpu_nvidia=nvidia[:2])  # only the list: its length is the count
    run = wandb.load(p)
    text = p.read_text()
    name_line = text.count("\n", 0, text.index('"name"')) + 1
    assert run.meta.fact("accelerator")["where"] == f"{p}:{name_line}"
    assert run.meta.n_accelerators == 2 and run.meta.fact("n_accelerators")["text"] == "gpu_nvidia lists 2 devices"
    mixed = [nvidia[0], {**nvidia[0], "name": "NVIDIA A100-SXM4-80GB"}]
    run = wandb.load(_metadata(tmp_path, gpu_count=2, gpu_nvidia=mixed))
    assert run.meta.fact("accelerator") is None and run.meta.n_accelerators == 2
    assert any("2 kinds of GPU" in x for x in run.meta.report.notes)
    run = wandb.load(_metadata(tmp_path, gpu_count=0))  # wandb saw no GPU: unknown, never 0
    assert run.meta.n_accelerators is None and any("gpu_count 0" in x for x in run.meta.report.notes)
    for bad in (3e9, "eight", -1, 2.5):
        p = _metadata(tmp_path, gpu="NVIDIA H100 80GB HBM3", gpu_count=bad)
        run = load_quiet(p)
        assert run.meta.report.skipped == {"value out of range": 1} and run.meta.n_accelerators is None
        assert run.meta.report.first_lines["value out of range"] == [
            p.read_text().count("\n", 0, p.read_text().index('"gpu_count"')) + 1]


@pytest.mark.realdata
def test_the_v7i3k2p0_run_folder_gets_its_accelerator_from_its_metadata(tmp_path):
    from mfu_toolkit.io import load_run

    run_dir = tmp_path / "run-20231102_033502-v7i3k2p0"  # the layout wandb writes: files/ beside the exports
    (run_dir / "files").mkdir(parents=True)
    for p in realdata_dir("wandb").glob("*.csv"):
        (run_dir / p.name).symlink_to(p)
    meta = realdata_dir("accelerator_info", "0-KaiKai-0_stanford_alpaca_v7i3k2p0_wandb-metadata.json")
    (run_dir / "files" / "wandb-metadata.json").symlink_to(meta)
    (run_dir / "files" / "wandb-summary.json").symlink_to(next(realdata_dir("wandb").glob("*summary*.json")))
    run = load_run(run_dir)
    assert run.meta.source_format == "wandb" and len(run.steps) == 1218 and run.meta.report.total_skipped == 0
    assert run.meta.fact("accelerator")["value"] == "NVIDIA A100-SXM4-80GB" and run.meta.n_accelerators == 8
    assert run.meta.fact("accelerator")["where"].startswith(str(run_dir / "files" / "wandb-metadata.json"))
    assert run.meta.claim("samples_per_s")["value"] == 28.711


@pytest.mark.realdata
def test_each_accelerator_info_file_and_their_folder_get_a_clear_answer():
    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.base import InternalLoadError

    folder = realdata_dir("accelerator_info")
    for p in sorted(folder.glob("0-KaiKai-0_*")):
        if p.suffix == ".yaml":
            with pytest.raises(LoadError, match="config.yaml holds the run's configuration only"):
                load_run(p)
            continue
        run = load_run(p)  # a summary reads the metadata beside it, and the other way round
        assert run.meta.source_format == "wandb"
        assert set(run.meta.extra["files"]) == {"summary", "metadata"}
        expected = None if "5qvjca60" in p.name else 8
        assert run.meta.n_accelerators == expected, p.name
    with pytest.raises(LoadError, match=r"the W&B files of 3 runs are here") as exc:
        load_run(folder)
    assert not isinstance(exc.value, InternalLoadError)
    assert "0-KaiKai-0_stanford_alpaca_v7i3k2p0_" in str(exc.value)


# --- claims: the Trainer's final values as logged to W&B ---------------------------------------------
@pytest.mark.realdata
def test_real_summary_claims_match_the_raw_bytes():
    from mfu_toolkit.io import load_run

    p = next(realdata_dir("wandb").glob("*summary*.json"))
    text = p.read_text()
    run = load_run(p)
    sps, line, _ = _at(r'"train/train_samples_per_second": ([0-9.e+-]+)', text)
    assert run.meta.claim("samples_per_s")["value"] == float(sps) == 28.711
    assert run.meta.claim("samples_per_s")["where"] == f"{p}:{line}"
    flos, _, _ = _at(r'"train/total_flos": ([0-9.e+-]+)', text)
    assert run.meta.claim("total_flos")["value"] == float(flos) == 4.43335458395521e17
    # The H100 run logs the keys without "train/" and total_flos 0.0 (FSDP): a note, no claim.
    h = realdata_dir("accelerator_info", "0-KaiKai-0_stanford_alpaca_yxelkra3_wandb-summary.json")
    sps, _, _ = _at(r'"train_samples_per_second": ([0-9.e+-]+)', h.read_text())
    assert '"total_flos": 0.0' in h.read_text()
    run = load_run(h)  # was ambiguous between hf_trainer and wandb
    assert run.meta.source_format == "wandb" and run.meta.claim("samples_per_s")["value"] == float(sps) == 13.432
    assert run.meta.claim("total_flos") is None
    assert any(n.startswith("total_flos is 0.0") for n in run.meta.report.notes)


# --- one bad record no longer refuses the file ------------------------------------------------------
def test_a_history_without_a_step_column_is_counted(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text(f"loss,_timestamp,_runtime\n1.0,{T0 + 1},1\n0.9,{T0 + 2},2\n")
    reason = "no step column (_step, train/global_step, ...): no steps read"
    run = load_quiet(p)
    assert run.meta.report.skipped == {reason: 1} and run.meta.report.first_lines[reason] == [1]
    assert run.steps.empty
    with pytest.raises(LoadError) as exc:
        wandb.load(p, strict=True)
    assert (exc.value.line, exc.value.field) == (1, "_step") and str(p) in str(exc.value)
    (tmp_path / "run").mkdir()
    d = make_dir(tmp_path / "run")
    (d / "history.csv").write_text(p.read_text())
    run = load_quiet(d)  # the system stats and summary of the folder still load
    assert run.meta.report.first_lines[reason] == ["history.csv:1"] and len(run.tables["gpu_util"]) == 4


def test_a_summary_nested_too_deeply_is_counted(tmp_path):
    d = make_dir(tmp_path)
    (d / "wandb-summary.json").write_text('{"_wandb": {"runtime": 40}, "deep": ' + "[" * 100_000 + "]" * 100_000 + "}")
    run = load_quiet(d)
    assert run.meta.report.skipped == {"unreadable file left out": 1}
    assert run.meta.report.examples["unreadable file left out"].startswith("summary: JSON nested too deeply to read")
    assert "summary" not in run.meta.extra and len(run.steps) == 5


def test_a_step_gap_too_long_is_kept_as_one_row(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text(f"loss,_step,_timestamp,_runtime\n1.0,1,{T0 + 1},1\n0.9,2,{T0 + 2},2\n0.8,{10**12},{T0 + 3},3\n")
    run = load_quiet(p)
    reason = "step gap too long to be one log interval (record kept as one step)"
    assert run.meta.report.skipped == {reason: 1} and run.meta.report.first_lines[reason] == [4]
    s = run.steps
    assert s["step"].tolist() == [1, 2, 10**12] and s["interval_steps"].tolist() == [1, 1, 10**12 - 2]
    # The kept row is the interval's last step, as long as its mean step: 1 s over 10^12 - 2 steps.
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([0.0, 1.0, 1.0 / (10**12 - 2)])
    assert s["end_s"].iloc[-1] == pytest.approx(3.0)  # at its _timestamp, T0 + 3


def test_intervals_past_the_row_budget_stay_one_row_each(tmp_path):
    # 31 rows 100 000 steps apart (each gap allowed) would invent 3 million rows from a 1 KB file:
    # past the load's budget (rules.MIN_EXPANDED_ROWS, 2 million), so each stays its last step.
    p = tmp_path / "h.csv"
    p.write_text("loss,_step,_timestamp,_runtime\n" + "".join(f"1.0,{100_000 * i},{T0 + i},{i}\n" for i in range(31)))
    run = wandb.load(p)
    s = run.steps
    assert s["step"].tolist() == [100_000 * i for i in range(31)] and run.meta.report.skipped == {}
    assert s["interval_steps"].tolist()[1:] == [100_000] * 30
    assert (s["end_s"] - s["start_s"]).tolist()[1:] == pytest.approx([1e-5] * 30)  # 1 s over 100 000 steps
    assert any(n.startswith("log intervals not expanded") for n in run.meta.report.notes)


def test_many_evaluations_are_placed_in_linear_time(tmp_path):
    from _timing import explain, growth, linear_bound

    runs = {}

    def load(n: int):
        rows = ["train/loss,train/global_step,eval/loss,eval/runtime,_timestamp,_runtime,_step"]
        for i in range(n):
            rows.append(f"1.0,{i + 1},,,{T0 + 10 * i + 1},{10 * i + 1},{2 * i}")
            rows.append(f",{i + 1},0.9,2.0,{T0 + 10 * i + 5},{10 * i + 5},{2 * i + 1}")
        p = tmp_path / f"h{n}.csv"
        p.write_text("\n".join(rows) + "\n")
        return lambda: runs.__setitem__(n, wandb.load(p))

    # 5,000 and 20,000 evaluations: one scan of the step rows per evaluation took minutes (for 30,000)
    ratio = growth(load, 5_000)
    assert ratio < linear_bound(), explain(ratio, what="the evaluations")
    n = 20_000
    run = runs[n]
    assert len(run.steps) == n and (run.events["kind"] == "eval").sum() == n


# --- saved Runs and damaged copies --------------------------------------------------------------------
@pytest.mark.realdata
def test_every_real_file_reads_back_equal_after_save_run(tmp_path):
    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    folder = realdata_dir("wandb")
    inputs = [*sorted(folder.iterdir()), folder]
    inputs += [p for p in sorted(realdata_dir("accelerator_info").glob("0-KaiKai-0_*.json"))]
    for p in inputs:
        run = load_run(p)
        assert load_run(save_run(run, tmp_path / "run.parquet"), format="run_parquet") == run, p.name


@pytest.mark.realdata
@pytest.mark.parametrize(("folder", "name"), [
    ("wandb", "alpaca7b_fsdp8xA100_run-v7i3k2p0_history_from_dotwandb.csv"),
    ("wandb", "alpaca7b_fsdp8xA100_run-v7i3k2p0_wandb-summary.json"),
    ("accelerator_info", "0-KaiKai-0_stanford_alpaca_v7i3k2p0_wandb-metadata.json"),
])
def test_damaged_copies_of_real_exports_load_or_fail_cleanly(tmp_path, folder, name):
    import random

    from _corpus import check, materialise, mutations

    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    src = realdata_dir(folder, name)
    save_run(load_run(src), tmp_path / "undamaged.parquet")  # the children fork with pyarrow ready
    rng = random.Random(f"wandb:{name}")
    problems = []
    for kind, data in mutations(src.read_bytes(), rng):  # truncation, flips, NaN/huge numbers, NUL, CR, BOM, ...
        verdict = check(materialise(src, kind, data, tmp_path), "wandb")
        if verdict != "ok":
            problems.append(f"{kind}: {verdict}")
    assert not problems, problems


# --- regexes ------------------------------------------------------------------------------------------
# applied with match/fullmatch only (to a column or file name)
ANCHORED = {"_GPU_RE", "_GPU_PROC_RE", "_RUNTIME_COL_RE", "_PAIR_RE"}


@pytest.mark.parametrize("ch", list('[0 {"\\,:a\n-'))
def test_the_format_regexes_take_linear_time_on_an_80_kb_line(ch):
    from _corpus import assert_regexes_linear

    prefixes = ("", '"cat": "kernel", "name": "', '"log_history": ', "{'loss': ", "gpu.0.", "rank")
    assert_regexes_linear(wandb, ch, prefixes=prefixes, anchored=ANCHORED)


# --- a history file picks up its run's system stats beside it ------------------------------------------
def _gpu_rows(system_text: str) -> int:
    """Rows the gpu_util table should have: samples × GPUs named gpu.N.gpu (hand count from the header)."""
    header = system_text.splitlines()[0].split(",")
    n_gpus = len({c.split(".")[1] for c in header if re.fullmatch(r"(?:system\.)?gpu\.\d+\.gpu", c)})
    return (len(system_text.strip().splitlines()) - 1) * n_gpus


def _beside_note(run) -> str:
    return next((n for n in run.meta.report.notes
                 if "system stats beside the history" in n or "system-stats file" in n), "")


def test_the_real_history_file_reads_its_system_stats_beside_it():
    from mfu_toolkit.io import load_run

    folder = realdata_dir("wandb")
    hist_p = next(folder.glob("*history*.csv"))
    sys_p = next(folder.glob("*system_stats*.csv"))
    run, whole = load_run(hist_p), load_run(folder)
    assert len(run.tables["gpu_util"]) == _gpu_rows(sys_p.read_text()) == len(whole.tables["gpu_util"])
    assert run.tables["gpu_util"].equals(whole.tables["gpu_util"]) and run.steps.equals(whole.steps)
    note = _beside_note(run)
    # the run id both file names carry, read from the raw names here
    rid = re.search(r"run-([a-z0-9]{8})", hist_p.name).group(1)
    assert (note.startswith(f"read the system stats beside the history: {sys_p.name}")
            and f"run id {rid} in both names" in note)
    assert run.meta.extra["files"]["system"] == str(sys_p)


def test_a_real_system_file_of_another_run_is_not_read(tmp_path):
    from mfu_toolkit.io import load_run

    folder = realdata_dir("wandb")
    hist_p = next(folder.glob("*history*.csv"))
    sys_p = next(folder.glob("*system_stats*.csv"))
    h = tmp_path / hist_p.name
    h.write_bytes(hist_p.read_bytes())
    other = tmp_path / sys_p.name.replace("v7i3k2p0", "5qvjca60")  # another run id of the same project
    other.write_bytes(sys_p.read_bytes())
    run = load_run(h)
    assert "gpu_util" not in run.tables and other.name in _beside_note(run) and "not read" in _beside_note(run)


@pytest.mark.parametrize(("hist", "system", "folder", "why"), [
    ("jobA_history.csv", "jobA_system_stats.csv", "exports", "differ only in 'history' / 'system_stats'"),
    ("History-jobA.csv", "System-Metrics-jobA.csv", "exports", "differ only in 'History' / 'System-Metrics'"),
    ("history.csv", "stats.csv", "run-20231102_033502-v7i3k2p0", "run v7i3k2p0's folder"),
    ("run-abcd1234.history.csv", "run-abcd1234.gpu.csv", "exports", "run id abcd1234 in both names"),
])
def test_the_system_stats_of_the_same_run_are_read(tmp_path, hist, system, folder, why):
    d = tmp_path / folder
    d.mkdir()
    (d / hist).write_text(HISTORY)
    (d / system).write_text(SYSTEM)
    run = load_quiet(d / hist)
    assert len(run.tables["gpu_util"]) == _gpu_rows(SYSTEM) == 4  # 2 samples × GPUs 0 and 1
    assert why in _beside_note(run) and system in _beside_note(run)


@pytest.mark.parametrize(("hist", "system", "folder"), [
    ("run-aaaaaaaa_history.csv", "run-bbbbbbbb_history.csv", "exports"),  # another run's id (kind by content)
    ("run-aaaaaaaa_history.csv", "run-bbbbbbbb_system.csv", "run-20231102_033502-aaaaaaaa"),
    ("history.csv", "stats.csv", "exports"),  # nothing says they are one run
    ("jobA_history.csv", "jobB_system_stats.csv", "exports"),
])
def test_a_system_file_without_a_sign_of_the_same_run_is_not_read(tmp_path, hist, system, folder):
    d = tmp_path / folder
    d.mkdir()
    (d / hist).write_text(HISTORY)
    (d / system).write_text(SYSTEM)
    run = load_quiet(d / hist)
    assert "gpu_util" not in run.tables and "not read" in _beside_note(run) and system in _beside_note(run)
    assert len(run.steps) == len(load_quiet(d / hist).steps)


def test_system_stats_of_another_time_are_not_read(tmp_path):
    # same names but the samples are a day later than the history's run: another run's file
    (tmp_path / "jobA_history.csv").write_text(HISTORY)
    later = SYSTEM.replace(str(T0 - 5), str(T0 + 86_400 - 5)).replace(str(T0 + 25), str(T0 + 86_425))
    (tmp_path / "jobA_system.csv").write_text(later)
    run = load_quiet(tmp_path / "jobA_history.csv")
    note = _beside_note(run)
    assert "gpu_util" not in run.tables and "were not read" in note and "outside the history's run" in note
    assert "system" not in run.meta.extra["files"]


def test_two_candidate_system_files_are_both_left(tmp_path):
    (tmp_path / "run-abcd1234_history.csv").write_text(HISTORY)
    (tmp_path / "run-abcd1234_system.csv").write_text(SYSTEM)
    (tmp_path / "run-abcd1234_system_stats.csv").write_text(SYSTEM)
    run = load_quiet(tmp_path / "run-abcd1234_history.csv")
    assert "gpu_util" not in run.tables and "none read" in _beside_note(run)


def test_the_system_file_loaded_alone_does_not_pick_up_the_history(tmp_path):
    (tmp_path / "jobA_history.csv").write_text(HISTORY)
    (tmp_path / "jobA_system.csv").write_text(SYSTEM)
    run = load_quiet(tmp_path / "jobA_system.csv")
    assert run.steps.empty and len(run.tables["gpu_util"]) == 4


def test_a_summary_integer_past_the_float_range_is_left_out_with_a_note(tmp_path):
    # JSON integers have no size limit: 10**400 has no float (float() raises OverflowError), while
    # 2**64, past int64, is the float 1.8446744073709552e19 exactly
    d = make_dir(tmp_path)
    (d / "wandb-summary.json").write_text('{"_wandb": {"runtime": 40}, "big": 1' + "0" * 400
                                          + ', "past_int64": 18446744073709551616, "loss": 1.5}')
    run = load_quiet(d)
    summary = run.meta.extra["summary"]
    assert "big" not in summary and summary["past_int64"] == 2.0**64 and summary["loss"] == 1.5
    assert any("summary value 'big' is an integer of 1,329 bits, beyond the float range; left out" in n
               for n in run.meta.report.notes)
