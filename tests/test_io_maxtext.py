"""MaxText stdout: step lines, facts and claims, flags, prefixes, damage.

Expected values are read from the raw files with this file's own regular expressions (or quoted
from the lines themselves), never from the loader's output.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from _realdata import realdata  # noqa: F401  (fixture)

from mfu_toolkit.io import load_run
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.formats import maxtext
from mfu_toolkit.run import LoadError, SchemaError

STEP_RE = re.compile(r"completed step: (\d+), seconds: ([0-9.]+), TFLOP/s(?:/device)?: ([0-9.]+)")

NEW_FORM = """\
I0317 09:59:16.325568 1253 maxtext_utils.py:1391] Num_devices: 8, shape (1, 1, 1, 8)
TFRT TPU v6 lite
I0317 09:59:16.242800 1253 pyconfig.py:413] Config param per_device_batch_size: 2
I0317 09:59:16.242800 1253 pyconfig.py:413] Config param max_target_length: 4096
Per train step:
 Total TFLOPs: 102.77
 split as 97.29% learnable weight flops and 2.71% attention flops
I0317 10:00:13.224641 1253 metric_logger.py:181] completed step: 0, seconds: 31.731, TFLOP/s/device: 3.239, \
Tokens/s/device: 129.087, total_weights: 30193, loss: 12.938
I0317 10:00:13.658792 1253 metric_logger.py:181] completed step: 1, seconds: 0.500, TFLOP/s/device: 205.5, \
Tokens/s/device: 16384.0, total_weights: 31850, loss: 12.939
I0317 10:00:14.093450 1253 metric_logger.py:181] completed step: 2, seconds: 0.400, TFLOP/s/device: 256.9, \
Tokens/s/device: 20480.0, total_weights: 27633, loss: nan
I0317 10:00:14.526789 1253 metric_logger.py:181] completed step: 3, seconds: 0.450, TFLOP/s/device: 228.4, \
Tokens/s/device: 18204.4, total_weights: 29413, loss: nan
"""


def _write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


def test_new_form_steps_facts_and_claims(tmp_path):
    run = load_run(_write(tmp_path, NEW_FORM))
    assert run.meta.source_format == "maxtext" and run.meta.timing == "duration_only"
    assert run.steps["step"].tolist() == [0, 1, 2, 3]
    # Back to back from the printed seconds: 31.731, 0.5, 0.4, 0.45.
    assert run.steps["end_s"].iloc[-1] == pytest.approx(31.731 + 0.5 + 0.4 + 0.45)
    assert run.steps["flag"].tolist() == ["compile", "", "", ""]
    # loss: nan is a missing loss on a kept step, not a parse error.
    assert math.isnan(run.steps["loss"].iloc[2]) and run.meta.report.total_skipped == 0
    assert run.meta.n_accelerators == 8
    assert run.meta.fact("accelerator")["value"] == "TPU v6 lite"
    assert run.meta.fact("seq_len")["value"] == 4096
    assert run.meta.global_batch == 16  # per_device_batch_size 2 × Num_devices 8
    tf = run.meta.claim("tflops_per_accelerator")
    assert tf["value"] == pytest.approx(228.4) and tf["n"] == 3  # median of 205.5, 256.9, 228.4; step 0 flagged
    assert run.meta.claim("model_flops_per_step")["value"] == pytest.approx(102.77e12)
    assert run.meta.claim("model_flops_per_step")["where"].endswith(":6")  # the ' Total TFLOPs' line


def test_restart_and_duplicate(tmp_path):
    text = (NEW_FORM + NEW_FORM.splitlines()[-1] + "\n"
            + "completed step: 0, seconds: 30.0, TFLOP/s/device: 3.0, loss: 13.0\n")
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.meta.report.skipped == {"duplicate record (kept the first)": 1}
    assert run.meta.report.first_lines["duplicate record (kept the first)"] == [12]
    assert run.steps["attempt"].tolist() == [0, 0, 0, 0, 1]


def test_bad_values_are_counted_and_strict_names_the_line(tmp_path):
    text = NEW_FORM + ("completed step: 4, seconds: abc, TFLOP/s/device: 1.0, loss: 1.0\n"
                       "completed step: x5, seconds: 1.0\n")
    p = _write(tmp_path, text)
    run = _quiet(load_run, p)
    skipped = run.meta.report.skipped
    assert skipped["non-numeric value (left missing, record kept)"] == 1
    assert skipped["time is missing, NaN or infinite"] == 1  # step 4 has no usable seconds
    assert skipped["step is not a non-negative integer"] == 1
    assert len(run.steps) == 4
    with pytest.raises(LoadError, match=r"line 12, field 'seconds'"):
        load_run(p, strict=True)


def test_async_dispatch_step_is_flagged_not_dropped(tmp_path):
    lines = ["completed step: 0, seconds: 44.923, TFLOP/s/device: 17.022, loss: 12.0"]
    lines += ["completed step: 1, seconds: 0.319, TFLOP/s/device: 2400.734, loss: 12.0"]
    lines += [f"completed step: {i}, seconds: 5.668, TFLOP/s/device: 134.9, loss: 11.0" for i in range(2, 10)]
    run = load_run(_write(tmp_path, "\n".join(lines) + "\n"))
    assert run.steps["flag"].tolist()[:3] == ["compile", "async_dispatch", ""]
    assert len(run.steps) == 10
    assert run.meta.claim("tflops_per_accelerator")["value"] == pytest.approx(134.9)


def test_regexes_are_linear_on_long_lines(tmp_path):
    import time

    def cost(n: int) -> float:
        text = "\n".join(["completed step: 1, seconds: 1.0, loss: 1.0", "[" * n, "completed step: " + "0" * n,
                          "Config param " + "a" * n, "I0317 " + " " * n, "#" * n])
        p = _write(tmp_path, text, f"long{n}.log")
        t = time.perf_counter()
        _quiet(load_run, p, format="maxtext")
        return time.perf_counter() - t

    small, big = cost(40_000), cost(160_000)
    assert big < 4 * small + 0.5  # linear: 4× the input costs about 4× (quadratic would be 16×)


# --- the real logs -----------------------------------------------------------------------------


def _raw_steps(path: Path) -> list[tuple[int, float, float]]:
    return [(int(a), float(b), float(c)) for a, b, c in STEP_RE.findall(path.read_text())]


@pytest.mark.parametrize("name", [
    "AI-Hypercomputer_maxtext_pr3717_nan_loss_tpu.log.py",
    "AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh",
    "AI-Hypercomputer_maxtext_run_llama2_pgo_h100x8_nsys.sh",
    "AI-Hypercomputer_maxtext_run_llama2_pre_pgo_h100x8.sh",
    "AI-Hypercomputer_maxtext_xpk_large_scale_guide_tpu_2023.sh",
])
def test_real_logs_every_step_line_is_a_step(realdata, name):  # noqa: F811
    path = realdata / "maxtext" / name
    raw = _raw_steps(path)
    run = _quiet(load_run, path)
    assert run.meta.source_format == "maxtext"
    assert run.steps["step"].tolist() == [s for s, _, _ in raw]
    assert run.steps["end_s"].iloc[-1] == pytest.approx(sum(secs for _, secs, _ in raw))
    assert run.steps["tflops_per_device"].tolist() == pytest.approx([t for _, _, t in raw])
    assert run.meta.report.total_skipped == 0


def test_real_nan_loss_run(realdata):  # noqa: F811
    path = realdata / "maxtext" / "AI-Hypercomputer_maxtext_pr3717_nan_loss_tpu.log.py"
    text = path.read_text()
    run = _quiet(load_run, path)
    n_nan = len(re.findall(r"completed step: \d+,.*loss: nan", text))
    assert n_nan > 0 and int(run.steps["loss"].isna().sum()) == n_nan
    devices = int(re.search(r"Num_devices: (\d+)", text).group(1))
    assert run.meta.n_accelerators == devices == 8
    assert (run.meta.fact("accelerator")["value"] == re.search(r"^TFRT (TPU.*?)\s*$", text, re.M).group(1)
            == "TPU v6 lite")
    assert run.meta.fact("model")["value"] == "brahmai-4b"
    tflop = float(re.search(r"Total TFLOPs: ([0-9.]+)", text).group(1))
    assert run.meta.claim("model_flops_per_step")["value"] == pytest.approx(tflop * 1e12)


def test_real_v5p_document_reproduces_its_own_mfu(realdata):  # noqa: F811
    # The guide works MFU out itself: 134.924 / 459 = 29.40 % on TPU v5p; the claim here is the
    # median of the steady steps, which the guide's step 9 sits within 0.02 % of.
    path = realdata / "maxtext" / "AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md"
    run = _quiet(load_run, path)
    assert run.meta.fact("accelerator")["value"] == "TPU v5"
    assert run.meta.n_accelerators == 4
    assert run.meta.global_batch == 96  # per_device_batch_size 24 × 4 devices
    assert run.meta.claim("model_flops_per_step")["value"] == pytest.approx(764.67e12)
    tf = run.meta.claim("tflops_per_accelerator")["value"]
    assert tf / 459 == pytest.approx(0.2940, abs=2e-4)
    # Step 1 (0.319 s, 2,400 TFLOP/s/device) is the async-dispatch artefact the guide describes.
    first = run.steps[run.steps["attempt"] == 0]
    assert first.loc[first["step"] == 1, "flag"].item() == "async_dispatch"
    # The guide quotes step 9 a second time: a duplicate, counted.
    assert run.meta.report.skipped == {"duplicate record (kept the first)": 1}


def test_real_2023_form_with_elisions(realdata):  # noqa: F811
    path = realdata / "maxtext" / "AI-Hypercomputer_maxtext_xpk_large_scale_guide_tpu_2023.sh"
    run = _quiet(load_run, path)
    assert run.steps["step"].tolist() == [1, 2, 3, 4, 5, 95, 96, 97, 98, 99]
    assert any("gap" in n for n in run.meta.report.notes)
    assert run.meta.n_accelerators is None  # the excerpt never states its device count


def test_sniff_does_not_claim_other_formats(realdata):  # noqa: F811
    for path in sorted(realdata.rglob("*")):
        if path.is_file() and "maxtext" not in path.parts and path.name != "README.md":
            assert maxtext.sniff(path, path.read_bytes()[:8192]) == 0.0, path


def test_mutations_never_raise_foreign_errors(realdata):  # noqa: F811
    base = (realdata / "maxtext" / "AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh").read_bytes()
    rng = random.Random(9)
    for i in range(60):
        data = bytearray(base)
        op = i % 6
        if op == 0:
            data = data[: rng.randrange(len(data))]
        elif op == 1:
            for _ in range(20):
                data[rng.randrange(len(data))] = rng.randrange(256)
        elif op == 2:
            lines = bytes(data).split(b"\n")
            rng.shuffle(lines)
            data = bytearray(b"\n".join(lines))
        elif op == 3:
            data = bytearray(bytes(data).replace(b"seconds: 1.", b"seconds: 1e308").replace(b"loss: 8", b"loss: inf"))
        elif op == 4:
            data = bytearray(b"\xef\xbb\xbf" + bytes(data).replace(b"\n", b"\r"))
        else:
            data = bytearray(bytes(data).replace(b", loss", b"\x00\xff, loss"))
        p = Path(pytest.importorskip("tempfile").mkdtemp()) / "m.log"
        p.write_bytes(bytes(data))
        try:
            _quiet(load_run, p, format="maxtext")
        except InternalLoadError:
            raise
        except (LoadError, SchemaError):
            pass


def test_garbled_numbers_cost_one_step_and_a_saved_run_reads_back_equal(tmp_path):
    # Found by the damage corpus: 'per_device_batch_size: nan' became a NaN fact (NaN != NaN, so the
    # saved Run read back different) and 'seconds: 1e308' put every later step at infinity.
    from mfu_toolkit.run import save_run

    text = (NEW_FORM.replace("per_device_batch_size: 2", "per_device_batch_size: nan")
            .replace("seconds: 0.400", "seconds: 1e308"))
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.steps["step"].tolist() == [0, 1, 3]
    assert run.meta.report.skipped == {"value out of range": 1}
    assert run.meta.fact("micro_batch") is None and run.meta.global_batch is None
    assert load_run(save_run(run, tmp_path / "r.parquet")) == run


# --- the log's own FLOPs claim as the numerator --------------------------------------------------

TFLOP_RE = re.compile(r"(?:Per train step, total TFLOPs will be|^\W*Total TFLOPs:) *([0-9.]+)", re.M)
DEVICES_RE = re.compile(r"Num_devices: *(\d+)")


def _line_of(text: str, match: re.Match[str]) -> int:
    return text.count("\n", 0, match.start()) + 1


def test_numerator_is_the_claim_times_the_devices(tmp_path):
    p = _write(tmp_path, NEW_FORM)
    run = _quiet(load_run, p)
    # NEW_FORM: 102.77 TFLOP per device (line 6) × Num_devices 8 (line 1)
    assert run.meta.model_flops_per_step == pytest.approx(102.77e12 * 8)
    src = run.meta.model_flops_source
    assert src.startswith("the log's own claim: 102.77 TFLOP per device per step × Num_devices 8")
    assert f"{p}:6" in src and f"{p}:1" in src


def test_one_line_claim_before_the_device_count(tmp_path):
    text = ("Per train step, total TFLOPs will be 137.33\n# Num_devices: 8, shape (1, 8, 1, 1)\n"
            + "".join(f"completed step: {i}, seconds: 1.2, TFLOP/s/device: 114.4, loss: 1.0\n" for i in range(5)))
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.meta.model_flops_per_step == pytest.approx(137.33e12 * 8)


def test_no_device_count_no_numerator_and_a_note(tmp_path):
    text = "\n".join(line for line in NEW_FORM.splitlines() if "Num_devices" not in line) + "\n"
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.meta.model_flops_per_step is None and run.meta.model_flops_source is None
    assert run.meta.claim("model_flops_per_step")["value"] == pytest.approx(102.77e12)  # the claim stays
    note = next(n for n in run.meta.report.notes if n.startswith("model FLOPs per step not set"))
    assert "102.77 TFLOP per device per step" in note and "no 'Num_devices:' line" in note
    from mfu_toolkit.analysis import mfu_summary

    s = mfu_summary(load_run(_write(tmp_path, text, "b.log"), accelerator="TPU v6e", n_accelerators=8))
    assert s.steady_state_mfu is None and "model FLOPs per step unknown" in s.reasons["steady_state_mfu"]


def test_what_the_user_gives_wins(tmp_path):
    from mfu_toolkit.analysis import mfu_summary
    from mfu_toolkit.inputs import apply_inputs

    p = _write(tmp_path, NEW_FORM)
    given = _quiet(load_run, p, model_flops_per_step=5e14)
    assert given.meta.model_flops_per_step == 5e14
    assert mfu_summary(given).model_flops_per_unit == pytest.approx(5e14 / 16)  # per sample: GBS 16
    per_sample = _quiet(load_run, p, model_flops_per_sample=1e13)
    assert mfu_summary(per_sample).model_flops_per_unit == 1e13
    run = _quiet(load_run, p)
    flag = apply_inputs(run, interface="cli", flops_per_step=5e14)
    assert flag.meta.model_flops_per_step == 5e14 and "log's own claim" not in flag.meta.model_flops_source
    preset = apply_inputs(run, interface="cli", preset="llama3-8b")
    assert preset.meta.model_flops_per_step is None and preset.meta.model_flops_source.startswith("preset 'llama3-8b'")


# The files that state both the per-device FLOPs and the device count, and the accelerator to
# give where the log names none (the H100 runs' README entry: GKE a3, 8×H100).
NUMERATOR_FILES = {
    "AI-Hypercomputer_maxtext_pr3717_nan_loss_tpu.log.py": None,
    "AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh": "H100",
    "AI-Hypercomputer_maxtext_run_llama2_pgo_h100x8_nsys.sh": "H100",
    "AI-Hypercomputer_maxtext_run_llama2_pre_pgo_h100x8.sh": "H100",
    "AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md": None,
}


@pytest.mark.parametrize("name", sorted(NUMERATOR_FILES))
def test_real_numerator_and_mfu_against_the_logs_own_rate(realdata, name):  # noqa: F811
    from mfu_toolkit.analysis import account, mfu_summary

    path = realdata / "maxtext" / name
    text = path.read_text()
    tflop, devices = TFLOP_RE.search(text), DEVICES_RE.search(text)
    kw = {"accelerator": NUMERATOR_FILES[name]} if NUMERATOR_FILES[name] else {}
    run = _quiet(load_run, path, **kw)
    assert run.meta.model_flops_per_step == pytest.approx(float(tflop.group(1)) * 1e12 * int(devices.group(1)))
    src = run.meta.model_flops_source
    assert f"{path}:{_line_of(text, tflop)}" in src and f"{path}:{_line_of(text, devices)}" in src
    acc = account(run)
    s = mfu_summary(acc)
    # The log's own TFLOP/s/device at each step of our window, read from the raw lines; MaxText
    # computes it as the per-device TFLOP ÷ the step's seconds, so over the peak it is the MFU.
    raw = {}
    for step, secs, tf in _raw_steps(path):
        raw.setdefault(step, []).append((secs, tf))
    win = acc.steps[acc.steps["in_window"]]
    rates = [next(tf for secs, tf in raw[k] if secs == pytest.approx(span, abs=5e-4))
             for k, span in zip(win["step"], win["span_s"], strict=True)]
    secs = win["span_s"].to_numpy(float)
    peak_tf = run.meta.peak_flops_per_accelerator / 1e12
    ideal = min(float(np.median(secs)), float(secs.mean()))  # the rule: median step, capped at the mean
    assert s.steady_state_mfu == pytest.approx(float(tflop.group(1)) / ideal / peak_tf, rel=1e-9)
    claim = float(np.median(rates)) / peak_tf
    if np.median(secs) <= secs.mean():  # the median step: equal to the log's median rate up to rounding
        assert s.steady_state_mfu == pytest.approx(claim, rel=2e-3)
    else:  # fast steps left in the window cap the ideal at their mean: a little above the log's rate
        assert claim < s.steady_state_mfu < 1.015 * claim
    assert (win["flag"] == "").all()  # no flagged step sets the pace


def test_real_v5p_document_mfu_from_its_own_figures(realdata):  # noqa: F811
    # `mfu analyze <doc> --accelerator "TPU v5p"` with no FLOPs given: the doc's own figures, read
    # from its prose, are 764.67 TFLOP per device, 134.924 TFLOP/s/device at step 9 and a 459
    # TFLOP/s peak, "134.924 / 459 = 29.40%".
    from mfu_toolkit.analysis import account, mfu_summary

    path = realdata / "maxtext" / "AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md"
    text = path.read_text()
    tflop = float(re.search(r"Total TFLOPs: ([0-9.]+)", text).group(1))
    m = re.search(r"\$([0-9.]+) / ([0-9.]+) = ([0-9.]+)\$%", text)
    rate, peak, doc_pct = float(m.group(1)), float(m.group(2)), float(m.group(3))
    assert (tflop, rate, peak, doc_pct) == (764.67, 134.924, 459.0, 29.40)
    run = _quiet(load_run, path, accelerator="TPU v5p")
    assert run.meta.peak_flops_per_accelerator == peak * 1e12
    acc = account(run)
    s = mfu_summary(acc)
    # Step 1 (0.319 s, flagged async_dispatch) and step 0 (compile) are out of the window; with
    # step 1 in it the ideal step was 5.044 s and the MFU 33.03 %.
    why = acc.steps.set_index(["attempt", "step"])["why"]
    assert why[(0, 1)] == "flagged by the loader (async_dispatch)" and why[(0, 0)] == "flagged by the loader (compile)"
    # The window: steps 2-7 as first printed, and steps 8-9 as last quoted (the guide's second
    # quote of steps 8-9 reads as a later attempt that redoes them).
    raw = [(int(k), float(secs)) for k, secs in re.findall(r"completed step: (\d+), seconds: ([0-9.]+)", text)]
    window = [secs for k, secs in raw[2:8]] + [secs for k, secs in raw[-2:]]
    assert sorted(acc.steps.loc[acc.steps["in_window"], "span_s"]) == pytest.approx(sorted(window))
    # The median step reproduces the doc's MFU up to the rounding of its printed figures (the doc
    # notes 764.67 / 5.667 = 134.934 against the printed 134.924; the median of this even window
    # lies between the printed 5.668 and 5.669 s) ...
    assert tflop / float(np.median(window)) / peak == pytest.approx(rate / peak, rel=3e-4)
    assert round(100 * tflop / float(np.median(window)) / peak, 1) == round(doc_pct, 1)
    # ... ours is the ideal step: the median capped at the window's mean, which step 3 (5.402 s,
    # 141.5 TFLOP/s/device) pulls 0.6 % below the median.
    assert s.steady_state_mfu == pytest.approx(tflop / float(np.mean(window)) / peak, rel=1e-9)
    assert s.steady_state_mfu == pytest.approx(doc_pct / 100, rel=0.01)
    assert abs(s.steady_state_mfu - 0.3303) > 0.03


def test_log_whose_every_step_is_flagged_has_no_steady_state(tmp_path):
    # One compile step and one step reported before its work was done: both flagged, so the
    # steady-state MFU is unknown, and the reason says why (the numerator itself is known).
    from mfu_toolkit.analysis import mfu_summary

    head = "\n".join(NEW_FORM.splitlines()[:7]) + "\n"
    text = head + ("completed step: 0, seconds: 31.731, TFLOP/s/device: 3.239, loss: 12.9\n"
                   "completed step: 1, seconds: 0.050, TFLOP/s/device: 2055.4, loss: 12.9\n"
                   "completed step: 2, seconds: 0.500, TFLOP/s/device: 205.5, loss: 12.9\n"
                   "completed step: 3, seconds: 0.010, TFLOP/s/device: 10277.0, loss: 12.9\n")
    run = _quiet(load_run, _write(tmp_path, text))
    # median of steps 1-3 is 0.05 s: step 0 compile, step 2 (10 × the median) an outlier, step 3
    # (a fifth of it) asynchronous dispatch; step 1 is the median itself and stays unflagged
    assert run.steps["flag"].tolist() == ["compile", "", "outlier", "async_dispatch"]
    only = _quiet(load_run, _write(tmp_path, head + "completed step: 0, seconds: 31.731, TFLOP/s/device: 3.239, "
                                   "loss: 12.9\n", "one.log"))
    assert only.steps["flag"].tolist() == ["compile"]
    s = mfu_summary(only)
    assert only.meta.model_flops_per_step == pytest.approx(102.77e12 * 8)
    assert s.steady_state_mfu is None
    assert "every useful timed step is flagged by the loader (1 compile)" in s.reasons["steady_state_mfu"]
