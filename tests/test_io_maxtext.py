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
I0317 10:00:13.224641 1253 metric_logger.py:181] completed step: 0, seconds: 31.731, TFLOP/s/device: 3.239, Tokens/s/device: 129.087, total_weights: 30193, loss: 12.938
I0317 10:00:13.658792 1253 metric_logger.py:181] completed step: 1, seconds: 0.500, TFLOP/s/device: 205.5, Tokens/s/device: 16384.0, total_weights: 31850, loss: 12.939
I0317 10:00:14.093450 1253 metric_logger.py:181] completed step: 2, seconds: 0.400, TFLOP/s/device: 256.9, Tokens/s/device: 20480.0, total_weights: 27633, loss: nan
I0317 10:00:14.526789 1253 metric_logger.py:181] completed step: 3, seconds: 0.450, TFLOP/s/device: 228.4, Tokens/s/device: 18204.4, total_weights: 29413, loss: nan
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
    text = NEW_FORM + NEW_FORM.splitlines()[-1] + "\n" + "completed step: 0, seconds: 30.0, TFLOP/s/device: 3.0, loss: 13.0\n"
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.meta.report.skipped == {"duplicate record (kept the first)": 1}
    assert run.meta.report.first_lines["duplicate record (kept the first)"] == [12]
    assert run.steps["attempt"].tolist() == [0, 0, 0, 0, 1]


def test_bad_values_are_counted_and_strict_names_the_line(tmp_path):
    text = NEW_FORM + "completed step: 4, seconds: abc, TFLOP/s/device: 1.0, loss: 1.0\ncompleted step: x5, seconds: 1.0\n"
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
    assert run.meta.fact("accelerator")["value"] == re.search(r"^TFRT (TPU.*?)\s*$", text, re.M).group(1) == "TPU v6 lite"
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

    text = NEW_FORM.replace("per_device_batch_size: 2", "per_device_batch_size: nan").replace("seconds: 0.400", "seconds: 1e308")
    run = _quiet(load_run, _write(tmp_path, text))
    assert run.steps["step"].tolist() == [0, 1, 3]
    assert run.meta.report.skipped == {"value out of range": 1}
    assert run.meta.fact("micro_batch") is None and run.meta.global_batch is None
    assert load_run(save_run(run, tmp_path / "r.parquet")) == run
