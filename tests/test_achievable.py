"""The achievable-matmul ceiling of an MFU: measured MAMF over the registry's dense peak, and the
plausibility check that warns only beyond what the hardware can do."""

from __future__ import annotations

import re

import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit import achievable
from mfu_toolkit import plausibility as pl
from mfu_toolkit.analysis import build_answer
from mfu_toolkit.inputs import apply_inputs
from mfu_toolkit.io import load_run


def test_ceiling_is_mamf_over_the_registry_peak():
    c = achievable.matmul_ceiling("NVIDIA H100 80GB HBM3", "bf16")
    # ml-engineering MAMF table: H100 SXM bf16 794.5 TFLOP/s; NVIDIA's dense bf16 peak 989.4
    assert c.fraction == pytest.approx(794.5 / 989.4) and c.measurement.accelerator == "H100 SXM"
    assert achievable.matmul_ceiling("H100", "fp16").fraction == c.fraction  # fp16 peak = bf16 peak
    # FP8 table: 1402.6 TFLOP/s of 1978.9 dense
    assert achievable.matmul_ceiling("H100", "fp8").fraction == pytest.approx(1402.6 / 1978.9)


@pytest.mark.parametrize(("name", "dtype"), [("TPU v5p", "bf16"), ("A100 SXM", "fp8"), (None, "bf16"),
                                             ("no such chip", "bf16")])
def test_no_measurement_no_ceiling(name, dtype):
    assert achievable.matmul_ceiling(name, dtype) is None


def test_every_shipped_row_names_a_registry_device_and_a_rate_below_its_peak():
    for m in achievable.measurements():
        c = achievable.matmul_ceiling(m.accelerator, m.dtype)
        assert c is not None and 0.3 < c.fraction <= 1.0, m


def test_a_bad_row_names_file_line_and_field(tmp_path):
    bad = tmp_path / "m.csv"
    bad.write_text("accelerator,dtype,mamf_tflops,source,section,read_on,note\n"
                   "H100,bf16,fast,https://x.org/a,s,2026-01-01,\n")
    with pytest.raises(achievable.AchievableDataError, match=r"m.csv:2: field 'mamf_tflops'"):
        achievable.load_csv(bad)


def test_a_record_within_the_ceiling_passes_and_says_it_is_a_record():
    # 46.73 % of the fp8 peak on 512 H100: above the highest published fp8 figure at that scale,
    # below H100's achievable fp8 matmul fraction (70.9 %)
    p = pl.check_mfu(0.4673, dtype="fp8", family="dense-transformer", n_accelerators=512, accelerator="H100 SXM")
    assert p.ok and "a record" in p.message and p.reference.mfu < 0.4673


def test_beyond_the_ceiling_warns_with_the_dtype_slip_first():
    p = pl.check_mfu(0.9347, dtype="bf16", family="dense-transformer", n_accelerators=512, accelerator="H100 SXM")
    assert not p.ok and "above what this accelerator's matmuls achieve" in p.message
    assert p.causes[0].startswith("an fp8 run measured against the bf16 peak")


def test_without_a_measured_accelerator_the_published_rule_holds():
    assert pl.check_mfu(0.7201, dtype="bf16").ok is False
    assert pl.check_mfu(0.7201, dtype="bf16", accelerator="TPU v5p").ok is False


def _gpt3(realdata, dtype):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    return build_answer(apply_inputs(load_run(path), preset="gpt3-175b", dtype=dtype))


def test_mlperf_gpt3_fp8_record_passes_strict_and_bf16_reading_warns(realdata):  # noqa: F811
    fp8 = _gpt3(realdata, "fp8")
    assert not fp8.warnings, [c.message for c in fp8.warnings]
    (c,) = [c for c in fp8.checks if c.name == "plausibility"]
    assert c.status == "ok" and "a record" in c.message
    bf16 = _gpt3(realdata, "bf16")
    (w,) = [c for c in bf16.checks if c.name == "plausibility"]
    assert w.status == "warn" and re.search(r"MFU 93\.\d\d% is above what this accelerator's matmuls achieve",
                                            w.message)
