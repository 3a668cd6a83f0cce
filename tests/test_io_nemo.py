"""NeMo 2 / NeMo-Run stdout: step lines, prefixes, restarts, notebooks, stragglers, facts, damage.

Expected values come from the raw files, read here with this file's own regular expressions (or
quoted from the lines themselves), or from hand computations; never from the loader's output.
"""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import warnings
from datetime import datetime
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401  (fixture)
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import load_run
from mfu_toolkit.io.base import InternalLoadError, LoaderArgumentError
from mfu_toolkit.io.detect import detect_format
from mfu_toolkit.io.formats import nemo
from mfu_toolkit.run import LoadError, SchemaError

# global_step, reduced_train_loss and the step time, in the order every real NeMo 2 line prints them.
STEP_RE = re.compile(r"global_step: (\d+) \| reduced_train_loss: ([0-9.]+) \| train_step_timing in s: ([0-9.]+)")
NOTEBOOK = "NVIDIA_NeMo_resiliency-in-pretraining-demo_8gpu.ipynb"
CELL_LOGS = {
    14: "NVIDIA_NeMo_resiliency-demo_cell14_baseline.extracted.log",
    22: "NVIDIA_NeMo_resiliency-demo_cell22_crash_and_injob_restart.extracted.log",
    29: "NVIDIA_NeMo_resiliency-demo_cell29_straggler_detection.extracted.log",
    36: "NVIDIA_NeMo_resiliency-demo_cell36_straggler_gpu_clocks_locked.extracted.log",
    46: "NVIDIA_NeMo_resiliency-demo_cell46_preemption.extracted.log",
}
GOLDEN_JSON = "NVIDIA-NeMo_Megatron-Bridge_golden_values_deepseek_pretrain_fsdp_gb200.json"  # megatron_json's

LINE = ("Training epoch 0, iteration {i}/99 | lr: 1e-05 | global_batch_size: 8 | global_step: {i} | "
        "reduced_train_loss: {loss} | train_step_timing in s: {t}")


def _write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def _lines(n: int, t: float = 0.5) -> list[str]:
    return [LINE.format(i=i, loss=2.0, t=t) for i in range(n)]


def _raw(path: Path) -> list[tuple[int, float, float]]:
    return [(int(a), float(b), float(c)) for a, b, c in STEP_RE.findall(path.read_text())]


def _line_of(path: Path, needle: str) -> int:
    for i, text in enumerate(path.read_text().split("\n"), 1):
        if needle in text:
            return i
    raise AssertionError(f"{needle!r} not in {path}")


def _notebook(cells: list[list[str]], indent: int | None = 1) -> str:
    """A notebook with one code cell per list of output lines, written as nbformat writes it."""
    out = []
    for i, lines in enumerate(cells):
        text = [ln + "\n" for ln in lines]
        out.append({"cell_type": "code", "execution_count": i + 1, "metadata": {}, "source": ["run()\n"],
                    "outputs": [{"name": "stdout", "output_type": "stream", "text": text}]})
    nb = {"cells": out, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(nb, indent=indent, sort_keys=True, ensure_ascii=False) + "\n"


# --- synthetic logs ----------------------------------------------------------------------------


def test_steps_back_to_back_from_their_durations(tmp_path):
    p = _write(tmp_path, "\n".join([LINE.format(i=0, loss=2.5, t=4.0), LINE.format(i=1, loss=2.25, t=0.5),
                                    LINE.format(i=2, loss="nan", t=0.25)]) + "\n")
    run = load_run(p)
    assert run.meta.source_format == "nemo" and run.meta.timing == "duration_only" and run.meta.time_unit == "s"
    assert run.steps["step"].tolist() == [0, 1, 2] and run.steps["rank"].tolist() == [-1, -1, -1]
    assert run.steps["start_s"].tolist() == [0.0, 4.0, 4.5]  # 4.0, then 4.0 + 0.5
    assert run.steps["end_s"].tolist() == [4.0, 4.5, 4.75]
    assert run.steps["loss"].tolist()[:2] == [2.5, 2.25] and math.isnan(run.steps["loss"].iloc[2])
    assert run.steps["samples"].tolist() == [8.0, 8.0, 8.0]  # global_batch_size: 8 on each line
    assert run.meta.report.total_skipped == 0  # loss: nan is a value, not damage
    assert run.meta.global_batch == 8 and run.meta.fact("framework")["value"] == "NeMo 2"


@pytest.mark.parametrize("prefix", [
    "[2025-11-20T14:55:23+08:00] retraining/0 ",
    "2025-10-17T11:32:59+08:00] ",  # a timestamp that lost its '['
    "ining-demo/0 [default0]:",
    "ining-demo/0 [default0]:[rank0]: ",
    "(pretraining, pid=4112) ",
    "    ",  # indented inside an rst/Markdown block
    "> ",
    "0: ",
])
def test_prefixes_are_stripped(tmp_path, prefix):
    p = _write(tmp_path, "\n".join(prefix + ln for ln in _lines(3)) + "\n")
    run = load_run(p)
    assert run.steps["step"].tolist() == [0, 1, 2] and run.meta.report.total_skipped == 0
    assert run.steps["end_s"].iloc[-1] == pytest.approx(1.5) or run.meta.timing == "exact"


def test_timestamps_on_every_step_line_give_exact_times(tmp_path):
    lines = [f"[2025-11-20T14:55:{s:02d}+08:00] " + LINE.format(i=i, loss=1.0, t=2.0)
             for i, s in enumerate((10, 13, 15))]
    run = load_run(_write(tmp_path, "\n".join(lines) + "\n"))
    assert run.meta.timing == "exact"
    # Each step ends at its line's time; t0 is the first step's start (14:55:10 − 2 s).
    assert run.steps["end_s"].tolist() == [2.0, 5.0, 7.0]
    assert run.steps["start_s"].tolist() == [0.0, 3.0, 5.0]


def test_regression_exact_first_step_starts_at_zero_not_minus_epsilon(tmp_path):
    # 12.22 s does not survive float subtraction from an epoch time exactly (it gave -6e-08 once).
    lines = [f"[2025-11-20T14:55:{s:02d}+08:00] " + LINE.format(i=i, loss=1.0, t=t)
             for i, (s, t) in enumerate(((23, 12.22), (35, 12.21)))]
    run = load_run(_write(tmp_path, "\n".join(lines) + "\n"))
    assert run.steps["start_s"].iloc[0] == 0.0
    assert run.steps["end_s"].tolist() == [12.22, 24.22]  # ends 12 s apart, as the stamps


def test_backwards_timestamps_are_counted_and_not_used(tmp_path):
    lines = [f"[2025-11-20T14:55:{s:02d}] " + LINE.format(i=i, loss=1.0, t=1.0) for i, s in enumerate((10, 20, 15))]
    p = _write(tmp_path, "\n".join(lines) + "\n")
    run = _quiet(load_run, p)
    assert run.meta.timing == "duration_only" and run.steps["end_s"].tolist() == [1.0, 2.0, 3.0]
    assert run.meta.report.first_lines[nemo.TIMESTAMPS_NOT_USED] == [3]  # records kept: not a plain non-monotonic


def test_progress_bar_form(tmp_path):
    bar = ("Epoch 0: :   0%|          | 2000/603000 [1:03:17<317:00:58, v_num=, reduced_train_loss=2.600, "
           "global_step=2e+3, consumed_samples=1.28e+6, train_step_timing in s=1.900, val_loss=2.800]dation "
           "DataLoader 0: : 51it [00:20,  2.53it/s]")
    run = load_run(_write(tmp_path, bar + "\n"))
    assert run.steps["step"].tolist() == [2000]  # 2e+3
    assert run.steps["end_s"].tolist() == [1.9] and run.steps["consumed_samples"].tolist() == [1.28e6]
    assert run.steps["loss"].tolist() == [2.6] and run.steps["val_loss"].tolist() == [2.8]
    assert run.meta.fact("framework")["value"] == "NeMo"


def test_restart_starts_an_attempt_and_duplicates_are_counted(tmp_path):
    lines = _lines(5)
    # Regression: a bare 'Exception: ...' (no prefix before 'Exception') was not taken as the message.
    text = "\n".join(lines[:4] + [lines[3]]
                     + ["[rank0]: Traceback (most recent call last):", "[rank0]: Exception: boom"]
                     + lines[2:]) + "\n"
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.steps["step"].tolist() == [0, 1, 2, 3, 2, 3, 4]
    assert run.steps["attempt"].tolist() == [0, 0, 0, 0, 1, 1, 1]
    assert run.meta.report.first_lines == {"duplicate record (kept the first)": [5]}
    ev = run.events.set_index("kind")
    assert ev.loc["failure", "attempt"] == 0 and "Exception: boom" in ev.loc["failure", "detail"]
    assert ev.loc["failure", "start_s"] == pytest.approx(2.0)  # after four 0.5 s steps
    assert ev.loc["restart", "attempt"] == 1


def test_a_handled_traceback_inside_an_attempt_is_no_failure(tmp_path):
    lines = _lines(4)
    text = "\n".join(lines[:2] + ["Traceback (most recent call last):", "ValueError: handled"] + lines[2:]) + "\n"
    run = load_run(_write(tmp_path, text))
    assert len(run.events) == 0 and run.n_attempts == 1


def test_val_loss_is_kept_once_per_validation(tmp_path):
    lines = [ln + f" | val_loss: {v}" for ln, v in zip(_lines(4), (3.5, 3.5, 3.25, 3.25), strict=True)]
    run = load_run(_write(tmp_path, "\n".join(lines) + "\n"))
    vals = run.steps["val_loss"].tolist()
    assert vals[0] == 3.5 and math.isnan(vals[1]) and vals[2] == 3.25 and math.isnan(vals[3])


def test_bad_values_are_counted_with_line_and_field(tmp_path):
    lines = _lines(8)
    lines[1] = lines[1].replace("reduced_train_loss: 2.0", "reduced_train_loss: x1")  # kept, loss missing
    lines[2] = lines[2].replace("train_step_timing in s: 0.5", "train_step_timing in s: abc")
    lines[3] = lines[3].replace("train_step_timing in s: 0.5", "train_step_timing in s: -2")
    lines[4] = lines[4].replace("global_step: 4", "global_step: -4")
    lines[5] = lines[5].replace(" | train_step_timing in s: 0.5", "")
    lines[6] = lines[6].replace("train_step_timing in s: 0.5", "train_step_timing in s: 1e400")
    p = _write(tmp_path, "\n".join(lines) + "\n")
    run = _quiet(load_run, p)
    rep = run.meta.report
    assert rep.first_lines == {
        "non-numeric value (left missing, record kept)": [2],
        "time is missing, NaN or infinite": [3, 7],
        "negative duration": [4],
        "step is not a non-negative integer": [5],
        "required field missing": [6],
    }
    assert rep.examples["negative duration"].startswith("step dropped: ")
    assert run.steps["step"].tolist() == [0, 1, 7] and math.isnan(run.steps["loss"].iloc[1])
    with pytest.raises(LoadError) as info:
        load_run(p, strict=True)
    assert info.value.line == 2 and info.value.field == "reduced_train_loss" and str(p) in str(info.value)


def test_a_huge_step_gap_is_one_row_and_counted(tmp_path):
    lines = _lines(2) + [LINE.format(i=10**15, loss=1.0, t=0.5)]
    run = _quiet(load_run, _write(tmp_path, "\n".join(lines) + "\n"))
    assert run.steps["step"].tolist() == [0, 1, 10**15]  # one row, no row per missing step
    assert run.meta.report.first_lines[
        "step gap too long to be one log interval (record kept as one step)"] == [3]


def test_regression_prose_quoting_global_step_is_no_damaged_line(tmp_path):
    # A README sentence ("... until `global_step: 99` ...") was counted as a step line missing its time.
    text = "\n".join(_lines(2) + ["训练到第最后一个step时（即`global_step: 99`），Loss值"]) + "\n"
    run = load_run(_write(tmp_path, text, "README.md"))
    assert run.meta.report.total_skipped == 0 and len(run.steps) == 2


def test_regression_a_markdown_table_quoting_a_line_is_not_a_log(tmp_path):
    # The realdata README quotes a progress-bar line inside a table cell; sniff claimed it (0.98).
    row = ("| `x.txt` | one line | `Epoch 0: : 0%\\| 2000/603000 [1:03:17<317:00:58, ..., global_step=2e+3, "
           "train_step_timing in s=1.900, val_loss=2.800]` |\n")
    p = _write(tmp_path, "# Data\n\n" + row, "README.md")
    assert nemo.sniff(p, p.read_bytes()) == 0.0


def test_a_nemo_log_that_also_prints_megatron_iteration_lines_is_nemo(tmp_path):
    megatron = (" [2025-07-30 18:39:52] iteration        1/      10 | consumed samples:          256 | "
                "elapsed time per iteration (ms): 18880.2 | global batch size:   256 | lm loss: 1.202477E+01 |")
    p = _write(tmp_path, "\n".join([megatron, *_lines(2)]) + "\n")
    assert detect_format(p) == "nemo"  # not 'ambiguous': nemo's 1.0 stays 0.1 above megatron's 0.9
    assert load_run(p).steps["step"].tolist() == [0, 1]


def test_straggler_reports_and_world_size(tmp_path):
    text = "\n".join([
        "ining-demo/0 [default0]:All distributed processes registered. Starting with 4 processes",
        "ining-demo/0 [default0]:LOCAL_RANK: 0 - CUDA_VISIBLE_DEVICES: [0,1,2,3,4,5,6,7]",
        *("ining-demo/0 [default0]:" + ln for ln in _lines(2)),
        "ining-demo/0 [default0]:[NeMo I 2025-03-07 22:43:58 straggler_det_callback:144] ",
        "ining-demo/0 [default0]:    GPU relative performance:",
        "ining-demo/0 [default0]:      Rank=1 Node=n1 Score=0.97",
        "ining-demo/0 [default0]:      Rank=0 Node=n1 Score=bad",
        "ining-demo/0 [default0]:    GPU individual performance:",
        "ining-demo/0 [default0]:      Rank=0 Node=n1 Score=1.00",
        "ining-demo/0 [default0]:[NeMo E 2025-03-07 22:43:58 straggler_det_callback:239] Detected stragglers. "
        "Terminating training...",
    ]) + "\n"
    run = _quiet(load_run, _write(tmp_path, text))
    tab = run.tables["straggler_scores"]
    assert tab["kind"].tolist() == ["relative", "relative", "individual"] and tab["rank"].tolist() == [1, 0, 0]
    assert tab["score"].iloc[0] == 0.97 and math.isnan(tab["score"].iloc[1]) and tab["after_step"].tolist() == [1, 1, 1]
    assert run.meta.report.first_lines == {"non-numeric value (left missing, record kept)": [8]}
    assert run.meta.fact("n_ranks")["value"] == 4 and run.meta.fact("n_ranks")["where"].endswith(":1")
    assert any("CUDA_VISIBLE_DEVICES lists 8" in n for n in run.meta.report.notes)
    assert run.events["kind"].tolist() == ["other"] and run.events["start_s"].tolist() == [1.0]


def test_claims_from_the_step_lines(tmp_path):
    lines = [ln + f" | tokens_per_sec_per_gpu: {tok} | TFLOPS_per_GPU: {tf}"
             for ln, tok, tf in zip(_lines(3), ("1.0e+04", "1.2e+04", "1.1e+04"), (400, 410, 390), strict=True)]
    run = load_run(_write(tmp_path, "\n".join(lines) + "\n"))
    tok = run.meta.claim("tokens_per_s_per_accelerator")
    assert tok["value"] == 1.1e4 and tok["n"] == 3 and tok["where"].endswith(":1")  # median of 1.0, 1.2, 1.1 e4
    assert run.meta.claim("tflops_per_accelerator")["value"] == 400.0


def test_given_metadata_is_applied(tmp_path):
    run = load_run(_write(tmp_path, "\n".join(_lines(3)) + "\n"), accelerator="H100", dtype="bf16", n_accelerators=8)
    assert run.meta.accelerator and run.meta.peak_flops_per_accelerator > 0 and run.meta.n_accelerators == 8


def test_options_are_checked(tmp_path):
    p = _write(tmp_path, "\n".join(_lines(2)) + "\n")
    for bad in (-1, True, "22"):
        with pytest.raises(LoaderArgumentError, match="cell"):
            load_run(p, format="nemo", cell=bad)
    with pytest.raises(LoadError, match="notebook") as info:
        load_run(p, format="nemo", cell=3)
    assert info.value.field == "cell"
    with pytest.raises(LoadError, match="no usable NeMo step lines"):
        load_run(_write(tmp_path, "hello\n", "other.log"), format="nemo")


def test_notebook_with_two_runs_is_refused_and_cell_picks_one(tmp_path):
    p = _write(tmp_path, _notebook([["setup done"], _lines(3), _lines(2, t=1.5)]), "two.ipynb")
    assert detect_format(p) == "nemo"
    with pytest.raises(LoadError, match=r"2 runs .*cell 1 \(3 step lines.*cell 2 \(2 step lines.*cell=") as info:
        load_run(p)
    assert info.value.field == "cell"
    run = load_run(p, cell=2)
    assert run.steps["end_s"].tolist() == [1.5, 3.0] and run.meta.extra["cell"] == 2
    # Line numbers are the notebook file's: the line holding that output string.
    first = run.steps["line"].iloc[0]
    assert "global_step: 0" in p.read_text().split("\n")[first - 1]
    with pytest.raises(LoadError, match="cell=0 is not a code cell whose outputs hold step lines"):
        load_run(p, cell=0)


def test_a_notebook_whose_first_8_kib_never_names_nemo_is_still_found(tmp_path):
    filler = [{"cell_type": "markdown", "metadata": {}, "source": ["x" * 100 + "\n"] * 100}]
    nb = json.loads(_notebook([_lines(2)]))
    nb["cells"] = filler + nb["cells"]
    p = _write(tmp_path, json.dumps(nb, indent=1, sort_keys=True), "plain.ipynb")
    assert b"NeMo" not in p.read_bytes()[:8192] and nemo.sniff(p, p.read_bytes()[:8192]) == 1.0
    assert load_run(p).steps["step"].tolist() == [0, 1]


def test_notebook_output_split_across_strings_and_minified(tmp_path):
    line = _lines(1)[0]
    nb = json.loads(_notebook([[]]))
    nb["cells"][0]["outputs"] = [{"name": "stdout", "output_type": "stream", "text": [line[:30], line[30:] + "\r\n"]},
                                 {"name": "stdout", "output_type": "stream", "text": 7}]
    p = _write(tmp_path, json.dumps(nb), "mini.ipynb")  # one line: no line of its own per string
    run = _quiet(load_run, p)
    assert run.steps["step"].tolist() == [0] and run.steps["line"].tolist() == [1]
    assert run.meta.report.skipped == {
        "malformed notebook output (stream text is not a string or a list of strings)": 1}


def test_long_lines_of_one_character_are_fast(tmp_path):
    text = "\n".join(_lines(2))
    for unit in ("[", "0", " ", "|", ":", "=", "global_step: ", "train_step_timing in s: ", "Rank=", "nproc_per_node ",
                 "CUDA_VISIBLE_DEVICES: 0,", "(a, pid=1) ", "ab/1 ", "[default0]:", "x["):
        runs = {}

        def load(n: int, unit: str = unit, runs: dict = runs):
            body = unit * (n // len(unit))
            p = _write(tmp_path, body + "\n" + text + "\n" + LINE.format(i=5, loss=1, t=1) + " | " + body + "\n",
                       f"long{n}.log")

            def work():
                runs[n] = _quiet(load_run, p, format="nemo")
                nemo.sniff(p, p.read_bytes())
            return work

        ratio = growth(load, 80_000)  # lines of 80 KB and of 320 KB
        assert ratio < linear_bound(), (unit, explain(ratio))
        # both sizes take the same path
        assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys(), unit


# --- the real logs -----------------------------------------------------------------------------


def test_baseline_cell(realdata):  # noqa: F811
    path = realdata / "nemo" / CELL_LOGS[14]
    raw = _raw(path)
    run = load_run(path)
    assert run.meta.source_format == "nemo" and run.meta.timing == "duration_only"
    assert run.steps["step"].tolist() == list(range(20)) == [s for s, _, _ in raw]
    durs = (run.steps["end_s"] - run.steps["start_s"]).tolist()
    assert durs == pytest.approx([t for _, _, t in raw])
    assert durs[0] == pytest.approx(10.3, abs=0.05)  # warm-up step, kept (README: about 10.3 s)
    assert statistics.median(durs[1:]) == pytest.approx(7.56, abs=0.02)  # README: steady about 7.56 s
    assert run.steps["start_s"].tolist()[1:] == pytest.approx(run.steps["end_s"].tolist()[:-1])  # back to back
    assert run.steps["loss"].tolist() == [loss for _, loss, _ in raw]
    assert run.meta.global_batch == 512 and run.meta.fact("global_batch")["where"].endswith(
        f":{_line_of(path, 'global_step: 0 |')}")
    ranks = run.meta.fact("n_ranks")
    assert ranks["value"] == 8 and ranks["where"].endswith(f":{_line_of(path, 'Starting with 8 processes')}")
    assert run.meta.fact("platform")["value"] == "NeMo-Run"
    assert run.meta.report.total_skipped == 0 and len(run.events) == 0
    assert run.meta.name == "resiliency-in-pretraining-demo-xb3fnk3npq9wn"  # 'Waiting for job ... to finish'


def test_crash_and_in_job_restart(realdata):  # noqa: F811
    path = realdata / "nemo" / CELL_LOGS[22]
    raw = _raw(path)
    assert [s for s, _, _ in raw] == list(range(16)) + list(range(10, 20))  # 0–15, crash, 10–19 again
    run = load_run(path)
    assert run.steps["step"].tolist() == [s for s, _, _ in raw]
    assert run.steps["attempt"].tolist() == [0] * 16 + [1] * 10 and run.n_attempts == 2
    redone = set(run.steps.loc[run.steps.attempt == 0, "step"]) & set(run.steps.loc[run.steps.attempt == 1, "step"])
    assert redone == set(range(10, 16))  # the lost work: the first attempt's rows of steps 10–15
    first_after = run.steps[run.steps.attempt == 1].iloc[0]
    assert first_after["end_s"] - first_after["start_s"] == pytest.approx(10.26)  # the restart's own warm-up
    ev = run.events.set_index("kind")
    assert "Simulating a crash at step 17" in ev.loc["failure", "detail"]
    assert "Worker group FAILED. 3/3 attempts left" in ev.loc["failure", "detail"]
    assert ev.loc["failure", "start_s"] == pytest.approx(sum(t for _, _, t in raw[:16]))
    assert ev.loc["restart", "attempt"] == 1 and ev.loc["restart", "start_s"] == ev.loc["failure", "end_s"]


def test_notebook_refuses_five_runs_and_each_cell_matches_its_extracted_log(realdata):  # noqa: F811
    path = realdata / "nemo" / NOTEBOOK
    assert detect_format(path) == "nemo"
    with pytest.raises(LoadError) as info:
        load_run(path)
    assert info.value.field == "cell" and "5 runs" in str(info.value)
    for cell in CELL_LOGS:
        assert f"cell {cell} (" in str(info.value)
    nb_lines = path.read_text().split("\n")
    for cell, name in CELL_LOGS.items():
        log = _quiet(load_run, realdata / "nemo" / name)
        run = _quiet(load_run, path, cell=cell)
        assert run.steps["step"].tolist() == log.steps["step"].tolist()
        assert run.steps["attempt"].tolist() == log.steps["attempt"].tolist()
        assert run.steps["end_s"].tolist() == pytest.approx(log.steps["end_s"].tolist())
        assert run.meta.global_batch == 512 and run.meta.fact("n_ranks")["value"] == 8
        for ln, step in zip(run.steps["line"], run.steps["step"], strict=True):
            assert f"global_step: {step} |" in nb_lines[ln - 1]  # the notebook file's own line


def test_straggler_detection_cells(realdata):  # noqa: F811
    score_re = re.compile(r"Rank=(\d+) Node=(\S+) Score=([0-9.]+)")
    for cell in (29, 36):
        path = realdata / "nemo" / CELL_LOGS[cell]
        raw = score_re.findall(path.read_text())
        run = load_run(path)
        tab = run.tables["straggler_scores"]
        assert tab["rank"].tolist() == [int(r) for r, _, _ in raw]
        assert tab["score"].tolist() == [float(s) for _, _, s in raw]
        # The clock-lock cell failed ("does not have permission"): no GPU was slowed, all 0.97–1.00.
        assert tab["score"].min() >= 0.97 and tab["score"].max() <= 1.0
        assert set(tab["kind"]) == {"relative", "individual"}
    cell29 = load_run(realdata / "nemo" / CELL_LOGS[29])
    assert cell29.steps["step"].max() == 15 and cell29.tables["straggler_scores"]["after_step"].eq(15).all()
    assert cell29.events["kind"].tolist() == ["other"]  # 'Detected stragglers. Terminating training...'


def test_preemption_cell(realdata):  # noqa: F811
    path = realdata / "nemo" / CELL_LOGS[46]
    raw = _raw(path)
    run = load_run(path)
    assert run.steps["step"].tolist() == [0, 1, 2] == [s for s, _, _ in raw]
    ev = run.events
    assert ev["kind"].tolist() == ["failure"] and "Received signal 15" in ev["detail"].iloc[0]
    assert ev["start_s"].iloc[0] == pytest.approx(sum(t for _, _, t in raw))


def test_embedding_notebook_runs_one_rank_not_two(realdata):  # noqa: F811
    path = realdata / "nemo" / "NVIDIA_NeMo_E2E-Embedding-Finetuning_2gpu.ipynb"
    text = path.read_text()
    raw = _raw(path)
    run = load_run(path)  # one cell prints steps: no cell= needed
    assert run.steps["step"].tolist() == list(range(100)) == [s for s, _, _ in raw]
    assert (run.steps["end_s"] - run.steps["start_s"]).iloc[0] == pytest.approx(4.49)
    # The README says 2 GPUs (CUDA_VISIBLE_DEVICES: [0,1]); Lightning says one process ran.
    assert "Starting with 1 processes" in text and "CUDA_VISIBLE_DEVICES: [0,1]" in text
    assert run.meta.fact("n_ranks")["value"] == 1
    assert any("CUDA_VISIBLE_DEVICES lists 2" in n for n in run.meta.report.notes)
    # val_loss is printed on every line after the first validation; kept where it changes.
    printed = [(int(s), float(v)) for s, v in re.findall(r"global_step: (\d+) \|[^\n]*?\| val_loss: ([0-9.]+)", text)]
    changes = {s: v for k, (s, v) in enumerate(printed) if k == 0 or printed[k - 1][1] != v}
    got = {int(s): v for s, v in zip(run.steps["step"], run.steps["val_loss"], strict=True) if not math.isnan(v)}
    assert got == changes and len(printed) > len(changes)


def test_deeplink_llama3_readme(realdata):  # noqa: F811
    path = realdata / "nemo" / "DeepLink-org_AIChipBenchmark_LLaMa-V3_README_nemo2.md"
    text = path.read_text()
    line = ("[2025-11-20T14:55:23+08:00] retraining/0 Training epoch 0, iteration 97/99 | lr: 1.469e-05 | "
            "global_batch_size: 128 | global_step: 97 | reduced_train_loss: 6.265 | train_step_timing in s: 12.22 | "
            "tokens_per_sec_per_gpu: 1.073e+04 | consumed_samples: 12544")
    assert line in text
    run = load_run(path)
    assert run.steps["step"].tolist() == [97, 98, 99] and run.meta.report.total_skipped == 0
    assert run.steps["tokens_per_sec_per_gpu"].iloc[0] == 10730.0  # 1.073e+04
    claim = run.meta.claim("tokens_per_s_per_accelerator")
    assert claim["value"] == 10730.0 and claim["n"] == 3  # median of 1.073e4, 1.074e4, 1.073e4
    # Per GPU: 128 samples × 8192 tokens ÷ 12.22 s ÷ 8 GPUs = 10,727 (the README's table gives GBS and seq).
    assert 128 * 8192 / 12.22 / 8 == pytest.approx(claim["value"], rel=0.005)
    stamps = [datetime.fromisoformat(s) for s in re.findall(r"^\[([0-9T:+-]+)\]", text, re.M)]
    assert run.meta.timing == "exact"
    assert run.steps["end_s"].diff().tolist()[1:] == pytest.approx(
        [(b - a).total_seconds() for a, b in zip(stamps, stamps[1:], strict=False)])  # 12 s, 12 s
    assert run.meta.global_batch == 128


def test_deeplink_qwen_readme_broken_prefix_and_val_loss(realdata):  # noqa: F811
    path = realdata / "nemo" / "DeepLink-org_AIChipBenchmark_Qwenllm_README_nemo2.md"
    text = path.read_text()
    assert "\n2025-10-17T11:32:59+08:00] Training epoch 0, iteration 527/999" in text  # lost its '['
    run = load_run(path)
    assert run.steps["step"].tolist() == [527, 528, 529] and run.meta.timing == "exact"
    assert text.count("val_loss: 3.624") == 3
    vals = run.steps["val_loss"].tolist()
    assert vals[0] == 3.624 and all(math.isnan(v) for v in vals[1:])
    assert run.steps["start_s"].iloc[0] == 0.0 and run.meta.global_batch == 32


def test_skypilot_excerpt_uses_global_step_not_iteration(realdata):  # noqa: F811
    path = realdata / "nemo" / "aws-samples_awsome-distributed-training_nemo2_kubernetes_README_L636-692.excerpt.md"
    pairs = re.findall(r"\(pretraining, pid=4112\) Training epoch (\d+), iteration (\d+)/999 "
                       r"\|[^\n]*?global_step: (\d+)",
                       path.read_text())
    run = load_run(path)
    assert run.steps["step"].tolist() == [int(g) for _, _, g in pairs] == [19, 29, 45, 46, 48]
    assert run.steps["iteration"].tolist() == [float(i) for _, i, _ in pairs] == [0, 10, 7, 8, 10]
    assert run.steps["epoch"].tolist() == [float(e) for e, _, _ in pairs]
    assert (run.steps["end_s"] - run.steps["start_s"]).tolist() == pytest.approx([46.86, 46.84, 47.12, 47.15, 46.81])
    assert any("jumps 3 time(s)" in n for n in run.meta.report.notes)  # 19→29, 29→45, 46→48
    assert run.meta.fact("accelerator")["value"] == "L40S" and "1x[L40S:4]" in run.meta.fact("accelerator")["text"]
    assert run.meta.fact("accelerators_per_node")["value"] == 4
    assert run.meta.fact("platform")["value"] == "NeMo-Run on SkyPilot"
    assert run.meta.name == "aws-nemo2-pretrain-20250522-194450"


def test_nemo1_progress_bar_excerpt(realdata):  # noqa: F811
    path = realdata / "nemo" / "aws-samples_awsome-distributed-training_nemo1_EKS_README_L303.excerpt.txt"
    assert "global_step=2e+3, consumed_samples=1.28e+6, train_step_timing in s=1.900" in path.read_text()
    run = load_run(path)
    assert run.steps["step"].tolist() == [2000] and run.steps["end_s"].tolist() == [1.9]
    assert run.steps["consumed_samples"].tolist() == [1.28e6] and run.steps["val_loss"].tolist() == [2.8]


def test_diffusion_rst(realdata):  # noqa: F811
    path = realdata / "nemo" / "NVIDIA_NeMo_diffusion_readme_2gpu_train_mock.rst"
    raw = _raw(path)
    run = load_run(path)
    assert run.steps["step"].tolist() == list(range(16)) == [s for s, _, _ in raw]
    durs = (run.steps["end_s"] - run.steps["start_s"]).tolist()
    assert durs == pytest.approx([t for _, _, t in raw]) and durs[0] == pytest.approx(4.022)
    assert statistics.median(durs[1:]) == pytest.approx(0.43, abs=0.01)  # README: about 0.43 s per step
    assert run.meta.fact("n_ranks")["value"] == 2  # 'Starting with 2 processes', not the later --nproc-per-node 8
    assert run.meta.seq_len == 1024 and run.meta.global_batch == 8
    assert run.meta.fact("model")["value"].startswith("DiTModel")


def test_every_nemo_file_loads_as_nemo(realdata):  # noqa: F811
    for path in sorted((realdata / "nemo").iterdir()):
        if path.name == GOLDEN_JSON:
            continue
        assert detect_format(path) == "nemo", path
        run = _quiet(load_run, path, **({"cell": 14} if path.name == NOTEBOOK else {}))
        assert run.meta.source_format == "nemo" and len(run.steps) > 0


def test_sniff_does_not_claim_other_formats(realdata):  # noqa: F811
    for path in sorted(realdata.rglob("*")):
        if "nemo" in path.parts or path.is_dir():
            continue
        assert nemo.sniff(path, path.read_bytes()[:8192]) < 0.5, path
        try:
            assert detect_format(path) != "nemo", path
        except LoadError as exc:  # unrecognised or ambiguous: then nemo must not be a candidate
            assert "nemo (" not in str(exc), path


def _mutate(data: bytes, rng: random.Random, op: int) -> bytes:
    if op == 0:
        return data[: rng.randrange(len(data))]
    if op == 1:
        b = bytearray(data)
        for _ in range(20):
            b[rng.randrange(len(b))] = rng.randrange(256)
        return bytes(b)
    if op == 2:
        lines = data.split(b"\n")
        i = rng.randrange(len(lines))
        lines[i:i] = [lines[rng.randrange(len(lines))]] * 3
        rng.shuffle(lines) if rng.random() < 0.5 else None
        return b"\n".join(lines)
    if op == 3:
        swaps = [(b"s: 7.5", b"s: nan"), (b"loss: 11", b"loss: inf"), (b"step: 1", b"step: 1e308"),
                 (b"size: 512", b"size: 1e999"), (b"Score=0.9", b"Score=NaN"), (b"s: 10.", b"s: -1")]
        for a, b in rng.sample(swaps, 3):
            data = data.replace(a, b)
        return data
    if op == 4:
        return b"\xef\xbb\xbf" + data.replace(b"\n", rng.choice([b"\r\n", b"\r"]))
    if op == 5:
        return data.replace(b" | ", b"\x00\xff | ", 40)
    i = rng.randrange(len(data))
    return data[:i] + rng.choice([b"[", b"0", b" ", b"|"]) * 200_000 + data[i:]


def _mutate_outputs(data: bytes, rng: random.Random, op: int) -> bytes:
    """The notebook with its stream outputs mutated and the JSON kept valid."""
    nb = json.loads(data)
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text = _mutate("".join(out["text"]).encode(), rng, op).decode("utf-8", errors="replace")
                out["text"] = text.splitlines(keepends=True)
    return json.dumps(nb, indent=1, ensure_ascii=False).encode()


@pytest.mark.parametrize("name,inside", [(CELL_LOGS[22], False),
                                         ("NVIDIA_NeMo_E2E-Embedding-Finetuning_2gpu.ipynb", False),
                                         ("NVIDIA_NeMo_E2E-Embedding-Finetuning_2gpu.ipynb", True)])
def test_mutations_never_raise_foreign_errors(realdata, tmp_path, name, inside):  # noqa: F811
    base = (realdata / "nemo" / name).read_bytes()
    rng = random.Random(7)
    outcomes = {"run": 0, "error": 0}
    for i in range(42):
        p = tmp_path / f"m{i}{Path(name).suffix}"
        p.write_bytes((_mutate_outputs if inside else _mutate)(base, rng, i % 7))
        try:
            _quiet(load_run, p, format="nemo")
            outcomes["run"] += 1
        except InternalLoadError:
            raise
        except (LoadError, SchemaError):
            outcomes["error"] += 1
    assert outcomes["run"] > 0  # the mutations reach the parser, not only the JSON or file checks


def test_a_step_number_repeated_after_a_failure_is_said_as_repeated_not_gone_back(tmp_path):
    # global_step 3, a crash, then global_step 3 again: a new attempt whose step did not increase
    lines = _lines(4)
    again = LINE.format(i=3, loss=1.5, t=0.7)  # not a copy of the line: other loss and time
    text = "\n".join([*lines, "[rank0]: Exception: boom", again]) + "\n"
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.steps["attempt"].tolist() == [0, 0, 0, 0, 1]
    detail = run.events.set_index("kind").loc["restart", "detail"]
    assert "global_step repeated 3 (it did not increase): a new attempt" in detail and "went back" not in detail
