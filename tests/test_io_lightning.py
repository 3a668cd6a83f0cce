"""Lightning CSVLogger loader: metrics.csv, hparams.yaml, version_N attempts, bad rows, real log."""

from __future__ import annotations

import csv
import math
import random
import re
import tempfile
import warnings
from pathlib import Path

import pytest
from _realdata_b import realdata_dir
from _timing import explain, growth, linear_bound, slowdown
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import lightning, rules
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning, SchemaError

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
    assert rep.skipped == {rules.NON_NUMERIC: 1, rules.BAD_STEP: 1, rules.HALF_WRITTEN: 1}
    assert rep.first_lines == {rules.NON_NUMERIC: [3], rules.BAD_STEP: [4], rules.HALF_WRITTEN: [6]}
    # the non-numeric loss is left missing and its row (step 1) kept; the row without a step is not
    m = run.tables["metrics"]
    assert m["step"].tolist() == [0, 1, 3] and m["loss"].isna().tolist() == [False, True, False]
    with pytest.raises(LoadError) as exc:
        lightning.load(p, strict=True)
    assert exc.value.line == 3 and exc.value.field == "loss"



def test_several_version_folders_name_the_file_of_each_skipped_line(tmp_path):
    logs = tmp_path / "lightning_logs"
    make_version(logs, 0, "epoch,step,loss\n0,0,2.0\n0,1,abc\n0,2,1.8\n", hparams=None)  # bad: line 3
    make_version(logs, 1, "epoch,step,loss\n0,3,1.7\n0,4,1.6\n0,5,x\n", hparams=None)  # bad: line 4
    run = load_quiet(logs)
    rep = run.meta.report
    assert rep.skipped == {rules.NON_NUMERIC: 2}
    assert rep.first_lines == {rules.NON_NUMERIC: ["version_0/metrics.csv:3", "version_1/metrics.csv:4"]}
    assert f"2 × {rules.NON_NUMERIC} (first at version_0/metrics.csv:3, version_1/metrics.csv:4)" in rep.summary()
    assert rep.to_frame()["first_lines"].tolist() == ["version_0/metrics.csv:3, version_1/metrics.csv:4"]
    # strict: the error names the version's file and its line, not the folder
    with pytest.raises(LoadError) as exc:
        lightning.load(logs, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(logs / "version_0" / "metrics.csv"), 3, "loss")
    assert str(exc.value).startswith(f"{logs / 'version_0' / 'metrics.csv'}, line 3, field 'loss': {rules.NON_NUMERIC}")
    # one version folder, or its file: plain line numbers as before
    for one in (logs / "version_1", logs / "version_1" / "metrics.csv"):
        rep1 = load_quiet(one).meta.report
        assert rep1.first_lines == {rules.NON_NUMERIC: [4]}
        assert f"1 × {rules.NON_NUMERIC} (first at line 4)" in rep1.summary()


def test_non_monotonic_clock_is_skipped(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,step,loss,timestamp\n0,0,2,100\n0,1,2,105\n0,2,2,103\n0,3,2,110\n")
    run = load_quiet(p)
    assert run.meta.report.skipped == {rules.NON_MONOTONIC: 1}
    assert run.steps["step"].tolist() == [0, 1, 2, 3]  # step 2 is inside step 3's interval
    with pytest.raises(LoadError, match="non-monotonic"):
        lightning.load(p, strict=True)



def test_clock_and_duration_errors_name_the_line(tmp_path):
    # the timestamp goes back at step 3 (line 5); the val row of step 1 (line 4) has no clock
    p = tmp_path / "lm2.csv"
    p.write_text("epoch,step,loss,val_loss,timestamp\n0,0,2,,100\n0,1,2,,101\n0,1,,2.5,\n0,3,2,,99\n0,4,2,,104\n")
    run = load_quiet(p)
    assert run.meta.report.first_lines == {rules.NON_MONOTONIC: [5]}
    with pytest.raises(LoadError) as exc:
        lightning.load(p, strict=True)
    assert (exc.value.path, exc.value.line, exc.value.field) == (str(p), 5, "timestamp")
    # a negative duration in a version folder: the error names that version's metrics.csv
    d = make_version(tmp_path / "logs", 0, "epoch,step,loss,step_time\n0,1,2.0,\n0,1,,0.5\n0,2,1.9,-1\n", hparams=None)
    make_version(tmp_path / "logs", 1, "epoch,step,loss\n0,3,1.8\n", hparams=None)  # no time column
    run = load_quiet(d.parent)
    assert run.meta.report.first_lines == {"negative duration": ["version_0/metrics.csv:4"]}  # two files: named
    assert run.steps["step"].tolist() == [1]
    assert ("1 of 2 metrics file(s) without step times, not attempts: version_1 (no 'step_time' column)"
            in run.meta.report.notes)
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
    assert (m["attempt"].tolist()[1:] == [0, 0, 1, 1]
            and m["attempt"].isna().tolist() == [True, False, False, False, False])
    notes = run.meta.report.notes
    assert (
        f"2 of 4 metrics file(s) without step times, not attempts: version_0 (no {kind!r} column); "
        f"version_1 (no {kind!r} value)"
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


# --- hparams.yaml, bounded ----------------------------------------------------------------------
def _laughs(levels: str = "abcdefghijkl") -> str:
    """Nested aliases ("billion laughs"): 9 ** 12 strings once expanded, about 520 bytes written."""
    rows = ["a: &a [lo, lo, lo, lo, lo, lo, lo, lo, lo]"]
    rows += [f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]" for p, c in zip(levels, levels[1:], strict=False)]
    return "\n".join(rows) + "\n"


def test_a_billion_laughs_hparams_is_counted_not_expanded(tmp_path):
    text = _laughs()
    assert len(text.encode()) <= 530
    d = make_version(tmp_path, 0, hparams=text)
    # against the same lists without anchors or aliases ([va, va, ...]): about the same size, nothing to expand
    plain = make_version(tmp_path / "plain", 0, hparams=re.sub(r"&\w ", "", text).replace("*", "v"))
    ratio = slowdown(lambda: load_quiet(d), lambda: load_quiet(plain))
    assert ratio < 5, (f"the aliases took {ratio:.1f}x the time of plain lists of about their size "
                       "(bound 5x; expanding them would build 9 ** 12 strings)")
    run = load_quiet(d)
    reason = "unreadable hparams.yaml"
    assert run.meta.report.skipped == {reason: 1}
    assert run.meta.report.examples[reason] == f"aliases expand past {lightning.MAX_YAML_NODES:,} nodes"
    # nodes per level: a 1 + 9 = 10, b 1 + 9 * 10 = 91, c 820, d 7,381, e 66,430, f 597,871:
    # the first past the bound is the sequence of f, on line 6
    assert run.meta.report.first_lines[reason] == [6]
    assert "hparams" not in run.meta.extra
    assert run.tables["metrics"]["step"].tolist() == [9, 19, 29]  # the metrics still load
    with pytest.raises(LoadError) as exc:
        lightning.load(d, strict=True)
    assert (exc.value.path, exc.value.line) == (str(d / "hparams.yaml"), 6)


def test_a_few_aliases_are_fine_and_a_self_reference_or_deep_nesting_is_counted(tmp_path):
    ok = make_version(tmp_path / "ok", 0, hparams="base: &b {lr: 0.1, wd: 0.01}\nrun: *b\nother: {<<: *b, lr: 0.2}\n")
    assert lightning.load(ok).meta.extra["hparams"] == {
        "base": {"lr": 0.1, "wd": 0.01}, "run": {"lr": 0.1, "wd": 0.01}, "other": {"lr": 0.2, "wd": 0.01}}
    loop = make_version(tmp_path / "loop", 0, hparams="lr: 0.1\nx: &x [1, *x]\n")
    looped = load_quiet(loop).meta.report
    assert looped.first_lines == {"unreadable hparams.yaml": [2]}
    assert looped.examples["unreadable hparams.yaml"] == "an alias refers to the node that contains it"
    deep = "unreadable hparams.yaml"

    def block(n: int) -> str:  # about n characters: the depth is about sqrt(2n)
        depth = math.isqrt(2 * n)
        return "".join(" " * k + f"k{k}:\n" for k in range(depth)) + " " * depth + "v\n"

    # each text at n characters and at 4n: 80 KB and 320 KB of brackets, a block 200 and 400 levels deep
    for name, text, n, at in (("flow", lambda n: "lr: 1\nx: " + "[" * n + "]" * n + "\n", 80_000, 2),
                              # the document's mapping is level 1; level n >= 2 begins on line n - 1
                              ("block", block, 20_000, 64),
                              # brackets in a string are text
                              ("quoted", lambda n: "x: '" + "[" * n + "'\n", 80_000, None)):
        reports = {}

        def load(n: int, name: str = name, text=text, reports: dict = reports):
            d = make_version(tmp_path / f"{name}{n}", 0, hparams=text(n))
            return lambda: reports.__setitem__(n, load_quiet(d).meta.report)

        ratio = growth(load, n)
        assert ratio < linear_bound(), (name, explain(ratio))  # PyYAML's scanner is quadratic in the depth
        for rep in reports.values():
            assert rep.first_lines == ({deep: [at]} if at else {}), name
            assert not at or rep.examples[deep] == f"nested deeper than {lightning.MAX_YAML_DEPTH} levels"


def test_an_invalid_date_in_hparams_is_counted_and_left_missing(tmp_path):
    d = make_version(tmp_path, 0, hparams="lr: 0.001\nstarted: 2024-02-30\nbatch_size: 8\nseed: " + "7" * 5000 + "\n")
    with pytest.warns(LoadWarning):
        run = lightning.load(d)
    assert run.meta.report.skipped == {rules.VALUE_OUT_OF_RANGE: 2}
    assert run.meta.report.first_lines == {rules.VALUE_OUT_OF_RANGE: [2, 4]}
    assert run.meta.report.examples[rules.VALUE_OUT_OF_RANGE] == (
        "invalid date in hparams.yaml, left missing: 2024-02-30")  # the first one's detail, then its value
    assert run.meta.extra["hparams"] == {"lr": 0.001, "started": None, "batch_size": 8, "seed": None}
    assert run.meta.fact("micro_batch")["value"] == 8
    with pytest.raises(LoadError) as exc:
        lightning.load(d, strict=True)
    assert (exc.value.path, exc.value.line) == (str(d / "hparams.yaml"), 2)


def test_without_pyyaml_the_hparams_are_not_read(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "yaml", None)  # import yaml now raises ImportError
    run = lightning.load(make_version(tmp_path, 0))
    assert "hparams" not in run.meta.extra and "hparams.yaml not read: PyYAML is not installed" in run.meta.report.notes


# --- facts --------------------------------------------------------------------------------------
def test_hparams_facts_with_their_lines(tmp_path):
    hp = ("lr: 0.001\nglobal_batch_size: 512\nbatch_size: 16\nseq_length: 2048\nprecision: bf16-mixed\n"
          "devices: 8\nnum_nodes: 4\n")
    d = make_version(tmp_path, 0, hparams=hp)
    run = lightning.load(d)
    facts = {f["name"]: (f["value"], f["where"]) for f in run.meta.facts}
    y = str(d / "hparams.yaml")
    assert facts == {
        "global_batch": (512.0, f"{y}:2"), "micro_batch": (16, f"{y}:3"), "seq_len": (2048, f"{y}:4"),
        "dtype": ("bf16", f"{y}:5"), "accelerators_per_node": (8, f"{y}:6"), "n_nodes": (4, f"{y}:7"),
        "n_accelerators": (32, f"{y}:6"),  # 8 devices × 4 nodes
    }
    assert (run.meta.n_accelerators, run.meta.global_batch, run.meta.seq_len) == (32, 512.0, 2048)
    # devices as a list, precision as Lightning's int, no num_nodes (Lightning's default is 1)
    d2 = make_version(tmp_path / "b", 0, hparams="devices: [0, 1, 2, 3]\nprecision: 16\n")
    f2 = {f["name"]: f["value"] for f in lightning.load(d2).meta.facts}
    assert f2 == {"accelerators_per_node": 4, "n_accelerators": 4, "dtype": "fp16"}
    d3 = make_version(tmp_path / "c", 0, hparams="devices: auto\nprecision: 32-true\nbatch_size: -3\n")
    assert {f["name"]: f["value"] for f in lightning.load(d3).meta.facts} == {"dtype": "fp32"}


# --- bounds -------------------------------------------------------------------------------------
def test_a_step_gap_too_long_to_expand_stays_one_row(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text(f"epoch,step,loss,timestamp\n0,0,2,100\n0,{10**12},1.9,110\n0,{10**12 + 2},1.8,112\n")
    with pytest.warns(LoadWarning):
        run = lightning.load(p)
    s = run.steps
    assert s["step"].tolist() == [0, 10**12, 10**12 + 1, 10**12 + 2]
    assert s["interval_steps"].tolist() == [1, 10**12, 2, 2]
    assert s["end_s"].tolist() == pytest.approx([0.0, 10.0, 11.0, 12.0])
    assert run.meta.report.first_lines == {rules.INTERVAL_TOO_LONG: [3]}


def test_steps_past_int64_and_infinite_times_are_counted(tmp_path):
    p = tmp_path / "metrics.csv"
    p.write_text("epoch,step,loss,timestamp\n0,0,2,100\n0,1e30,2,101\n0,9223372036854775808,2,101\n"
                 "0,2,2,inf\n0,3,nan,103\n")
    with pytest.warns(LoadWarning):
        run = lightning.load(p)
    assert run.meta.report.first_lines == {rules.BAD_STEP: [3, 4], rules.NON_FINITE_TIME: [5]}
    assert run.meta.report.examples[rules.NON_FINITE_TIME].startswith("timestamp: ")
    assert run.steps["step"].tolist() == [0, 1, 2, 3]  # step 3's interval covers 1 and 2
    assert math.isnan(run.tables["metrics"]["loss"].iloc[-1])  # 'nan' is a number: kept as NaN, not counted


@pytest.mark.parametrize("body", ["[", "{", "0", " ", "a", '"', "'", "*a,", "&a ", ": "])
def test_long_cells_of_one_character_read_in_linear_time(tmp_path, body):
    runs = {}

    def load(n: int):
        filler = body * (n // len(body))
        d = make_version(tmp_path / str(n), 0,
                         "epoch,step,loss,timestamp\n0,0," + filler + ",100\n0,1,2,101\n" + filler + "\n",
                         hparams="lr: 0.1\nx: " + filler + "\n" + filler + "\n")
        return lambda: runs.__setitem__(n, load_quiet(d))

    # cells of 30 KB and of 120 KB: under the CSV reader's field limit (128 KiB), past which a row is refused unread
    ratio = growth(load, 30_000)
    assert ratio < linear_bound(), explain(ratio)
    # both sizes take the same path
    assert runs[30_000].meta.report.skipped.keys() == runs[120_000].meta.report.skipped.keys()


# --- the real run ---------------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_hparams_facts_match_the_raw_yaml():
    y = realdata_dir("lightning", "0Xero7_slm_training_version_12_hparams.yaml")
    raw = y.read_text().splitlines()
    (n,) = [k for k, ln in enumerate(raw, start=1) if ln.startswith("max_seq_len:")]
    run = lightning.load(realdata_dir("lightning", "0Xero7_slm_training_version_12_metrics.csv"))
    assert [(f["name"], f["value"], f["where"]) for f in run.meta.facts] == [
        ("seq_len", int(raw[n - 1].split(":")[1]), f"{y}:{n}")]  # 128; no batch size, precision or devices
    assert run.meta.seq_len == 128


def _mutate_text(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """One seeded damage to a text file."""
    kind = rng.choice(["truncate", "flip", "dup", "reorder", "number", "nul", "crlf", "cr", "bom",
                       "latin1", "long"])
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        return kind, bytes(b)
    if kind == "dup":
        lines.insert(rng.randrange(len(lines)), lines[i])
    elif kind == "reorder":
        rng.shuffle(lines)
    elif kind == "number":
        repl = rng.choice([b"nan", b"inf", b"-inf", b"1e308", b"-1", b"9" * 30, b"9" * 5000, b"0"])
        lines[i] = re.sub(rb"\d[\d.e+-]*", lambda m: repl if rng.random() < 0.5 else m.group(0), lines[i])
    elif kind == "nul":
        lines[i] = lines[i][: len(lines[i]) // 2] + b"\x00" * rng.randint(1, 5) + lines[i][len(lines[i]) // 2:]
    elif kind == "crlf":
        return kind, data.replace(b"\n", b"\r\n")
    elif kind == "cr":
        return kind, data.replace(b"\n", b"\r")
    elif kind == "bom":
        return kind, b"\xef\xbb\xbf" + data
    elif kind == "latin1":
        lines[i] += "\u00e9\u00ff".encode("latin-1") + b"\xc3\x28"
    else:
        lines[i] += rng.choice([b"[", b"0", b" ", b"a", b"&a ", b"*a,"]) * 20_000
    return kind, b"\n".join(lines)


@pytest.mark.realdata
def test_mutations_of_the_real_run_give_a_run_or_a_load_error(tmp_path):
    csv_src = realdata_dir("lightning", "0Xero7_slm_training_version_12_metrics.csv").read_bytes()
    # with a clock column, so the step-time path is exercised too: one second per logged row
    rows = csv_src.decode().splitlines()
    timed = "\n".join([rows[0] + ",timestamp"] + [f"{r},{1_700_000_000 + k}" for k, r in enumerate(rows[1:])]).encode()
    yaml_src = realdata_dir("lightning", "0Xero7_slm_training_version_12_hparams.yaml").read_bytes()
    failures = []
    for seed in range(60):
        rng = random.Random(seed)
        d = tmp_path / f"m{seed}"
        d.mkdir()
        kinds = []
        for name, src in (("metrics.csv", timed if seed % 2 else csv_src), ("hparams.yaml", yaml_src)):
            kind, data = _mutate_text(rng, src) if rng.random() < 0.8 else ("none", src)
            kinds.append(kind)
            (d / name).write_bytes(data)
        for strict in (False, True) if seed % 3 == 0 else (False,):
            try:
                load_quiet(d, strict=strict)
            except InternalLoadError as exc:
                failures.append(f"seed {seed} ({kinds}, strict={strict}): {exc}")
            except (LoadError, SchemaError):
                pass
    assert not failures, failures
