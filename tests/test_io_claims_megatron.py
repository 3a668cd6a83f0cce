"""Megatron-family throughput claims: which FLOPs each ``TFLOPs`` spelling counts, and GPT-NeoX's.

- Megatron-DeepSpeed ``TFLOPs: x`` (megatron/training.py → utils.throughput_calculator) adds the
  recomputed forward under activation checkpointing;
- ALCF's ``[LM]-TFLOPs=`` (Megatron-LM's num_floating_point_operations, model FLOPs) and
  ``[DS]-TFLOPs=`` (the throughput calculator) are two counts of the same step; ALCF's bare
  ``TFLOPs=`` was the calculator's when ``training.py`` printed it (2024-04 to 2024-06) and is
  Megatron-LM's when ``training_log.py`` prints it (since 2025-06): the logger on the line decides;
- GPT-NeoX prints `` samples/sec: x | iteration N/ M | ... approx flops per GPU: 123.4TFLOPS |
  MFU: x% | HFU: y% |`` (megatron/logging.py, human_readable_flops).

Real values are read from the files with regexes in the tests.
"""

from __future__ import annotations

import re
import statistics
import warnings
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401  (fixture)

from mfu_toolkit.io import load_run

DEPRECATED = "argonne-lcf_Megatron-DeepSpeed_deprecated_aurora_sunspot_polaris.md"
COOLDOWN = "argonne-lcf_Megatron-DeepSpeed_cooldown_aurora_3072xpu.md"
GPT3 = "DeepLink-org_AIChipBenchmark_GPT3_README_megatron_deepspeed_tgs.md"
MOE = "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"


def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, format="megatron", **kw)


def _claims(run, metric: str, starts: str = "") -> list[dict]:
    return [c for c in run.meta.claims if c["metric"] == metric and c["counts"].startswith(starts)]


def _raw(text: str, pattern: str) -> tuple[list[float], int]:
    """Every value ``pattern`` captures in the raw text, and the line of the first."""
    found = list(re.finditer(pattern, text))
    assert found, pattern
    return [float(m.group(1)) for m in found], text.count("\n", 0, found[0].start()) + 1


# --- real logs ----------------------------------------------------------------------------------
def test_real_alcf_lm_and_ds_counts_of_the_same_step(realdata):  # noqa: F811
    path = realdata / "deepspeed" / DEPRECATED
    text = path.read_text()
    run = _load(path)
    lm, lm_line = _raw(text, r"\[LM\]-TFLOPs=([0-9.]+)")
    ds, ds_line = _raw(text, r"\[DS\]-TFLOPs=([0-9.]+)")
    assert (lm, ds, lm_line, ds_line) == ([49.66], [73.32], 475, 475)  # one step, printed both ways
    (c_lm,) = _claims(run, "tflops_per_accelerator", "[LM]")
    (c_ds,) = _claims(run, "tflops_per_accelerator", "[DS]")
    assert (c_lm["value"], c_lm["where"]) == (49.66, f"{path}:475")
    assert (c_ds["value"], c_ds["where"]) == (73.32, f"{path}:475")
    assert "num_floating_point_operations" in c_lm["counts"] and "without recomputation" in c_lm["counts"]
    assert "throughput calculator" in c_ds["counts"] and "recomputed forward" in c_ds["counts"]
    # the upstream ':' spelling in the same file (Sunspot and Polaris launches): the throughput calculator
    colon, first = _raw(text, r"\| TFLOPs: ([0-9.]+) \|")
    (c,) = _claims(run, "tflops_per_accelerator", "TFLOPs: ")
    assert (c["value"], c["n"], c["where"]) == (pytest.approx(statistics.median(colon)), len(colon), f"{path}:{first}")
    assert "throughput_calculator" in c["counts"] and len(_claims(run, "tflops_per_accelerator")) == 3


def test_real_alcf_training_log_tflops_is_megatron_lm_model_flops(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / COOLDOWN
    text = path.read_text()
    values, first = _raw(text, r"\| TFLOPs=([0-9.]+) \|")
    assert "[megatron/training_log:402:training_log]" in text.splitlines()[first - 1]  # the logger that printed it
    run = _load(path)
    (c,) = _claims(run, "tflops_per_accelerator")
    assert (c["value"], c["n"], c["where"]) == (pytest.approx(statistics.median(values)), len(values),
                                                f"{path}:{first}")
    assert c["counts"].startswith("TFLOPs= as ALCF's training_log.py prints it") and "model FLOPs" in c["counts"]
    assert statistics.median(values) == 53.66


@pytest.mark.parametrize("folder, name", [("megatron_timers", GPT3), ("deepspeed", MOE)])
def test_real_colon_tflops_is_the_throughput_calculator(realdata, folder, name):  # noqa: F811
    path = realdata / folder / name
    text = path.read_text()
    values, first = _raw(text, r"\| TFLOPs: ([0-9.]+) \|")
    (c,) = _claims(_load(path), "tflops_per_accelerator")
    assert (c["value"], c["n"], c["where"]) == (pytest.approx(statistics.median(values)), len(values),
                                                f"{path}:{first}")
    assert c["counts"].startswith("TFLOPs: per GPU by Megatron-DeepSpeed's throughput calculator")
    assert c["basis"] == "steady" and c["unit"] == "TFLOP/s per GPU"


def test_real_samples_per_second_and_tgs_say_what_they_count(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / GPT3
    text = path.read_text()
    run = _load(path)
    sps, first = _raw(text, r"samples per second: ([0-9.]+)")
    (c,) = _claims(run, "samples_per_s")
    assert (c["value"], c["where"]) == (pytest.approx(statistics.median(sps)), f"{path}:{first}")
    assert "global batch" in c["counts"] and "mean iteration time" in c["counts"]
    tgs, _ = _raw(text, r"tokens per gpu per second \(tgs\): ([0-9.]+)")
    (t,) = _claims(run, "tokens_per_s_per_accelerator")
    assert t["value"] == pytest.approx(statistics.median(tgs)) and "world size" in t["counts"]


# --- ALCF TFLOPs= variants ----------------------------------------------------------------------
def _alcf_line(it: int, head: str, tflops_field: str) -> str:
    return (f"{head} iteration=  {it:6d}/  1000 | consumed_samples=   {it * 8} | "
            "elapsed_time_per_iteration_ms=1000.0 | "
            f"global_batch_size=  8 | lm loss=2.5 | samples_per_second=8.0 | {tflops_field} |")


@pytest.mark.parametrize("head, starts", [
    ("[2025-11-10 09:43:36,161992][I][megatron/training_log:402:training_log] ", "TFLOPs= as ALCF's training_log.py"),
    ("[2024-04-20 10:50:42][INFO][training:1609] - ", "TFLOPs= as ALCF's training.py"),
    ("0: ", "TFLOPs= (ALCF key=value form) whose line names no logger"),
    ("", "TFLOPs= (ALCF key=value form) whose line names no logger"),
])
def test_alcf_tflops_equals_is_read_by_its_logger(tmp_path, head, starts):
    p = tmp_path / "alcf.log"
    p.write_text("\n".join(_alcf_line(i, head, f"TFLOPs={50 + i}.00") for i in (1, 2, 3)) + "\n")
    (c,) = _claims(_load(p), "tflops_per_accelerator")
    assert (c["value"], c["n"], c["where"]) == (52.0, 3, f"{p}:1") and c["counts"].startswith(starts)


@pytest.mark.parametrize("spelling", ["[LM]-TFLOPs", "[LM]TFLOPs"])
def test_both_alcf_lm_spellings(tmp_path, spelling):
    p = tmp_path / "alcf.log"
    field = f"{spelling}=49.66 | {spelling.replace('LM', 'DS')}=73.32"
    p.write_text(_alcf_line(1, "", field) + "\n")
    run = _load(p)
    assert [c["value"] for c in _claims(run, "tflops_per_accelerator")] == [49.66, 73.32]
    assert [c["counts"][:4] for c in _claims(run, "tflops_per_accelerator")] == ["[LM]", "[DS]"]


def test_a_tflops_value_that_is_not_finite_is_noted(tmp_path):
    p = tmp_path / "mds.log"
    lines = [f" iteration {i:8d}/     100 | elapsed time per iteration (ms): 1000.0 | samples per second: 8.0 | "
             f"TFLOPs: {v} |" for i, v in ((1, "20.00"), (2, "nan"), (3, "30.00"))]
    p.write_text("\n".join(lines) + "\n")
    run = _load(p)
    (c,) = _claims(run, "tflops_per_accelerator")
    assert (c["value"], c["n"]) == (25.0, 2)
    assert "1 values of TFLOPs (colon) are not finite numbers: left out of its claim" in run.meta.report.notes


# --- GPT-NeoX -----------------------------------------------------------------------------------
def _neox(it: int, flops: str = "152.3TFLOPS", mfu: str = "48.81%", sps: str = "98.765", prefix: str = "") -> str:
    """A GPT-NeoX training_log line, field by field as megatron/logging.py writes it."""
    return (f"{prefix} samples/sec: {sps} | iteration {it:8d}/  320000 | elapsed time per iteration (ms): 1296.1 | "
            f"learning rate: 5.999E-04 | approx flops per GPU: {flops} | MFU: {mfu} | HFU: 65.08% | "
            "lm_loss: 2.345678E+00 | loss scale: 65536.0 | number of skipped iterations:   0 | "
            "number of nan iterations:   0 |")


def _neox_log(tmp_path: Path, lines: list[str]) -> Path:
    p = tmp_path / "neox.log"
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("prefix", ["", "0: ", "[rank0]:", "[2024-03-01 12:00:00,000] [INFO] "])
def test_neox_line_claims_flops_mfu_and_samples(tmp_path, prefix):
    p = _neox_log(tmp_path, [_neox(i * 10, prefix=prefix) for i in (1, 2, 3)])
    run = _load(p)
    (tf,) = _claims(run, "tflops_per_accelerator")
    assert (tf["value"], tf["unit"], tf["n"], tf["where"]) == (pytest.approx(152.3), "TFLOP/s per GPU", 3, f"{p}:1")
    assert tf["counts"].startswith("GPT-NeoX approx flops per GPU") and "activation checkpointing" in tf["counts"]
    (mfu,) = _claims(run, "mfu")
    assert ((mfu["value"], mfu["unit"]) == (pytest.approx(0.4881), "fraction")
            and "peak_theoretical_tflops" in mfu["counts"])
    (sps,) = _claims(run, "samples_per_s")
    assert sps["value"] == 98.765 and sps["counts"].startswith("GPT-NeoX samples/sec: train_batch_size (global)")
    logged = run.steps[run.steps["logged"]]
    assert logged["approx_flops_per_gpu"].tolist() == [152.3e12] * 3  # FLOP/s, as NeoX logs flops_per_sec_per_gpu
    assert logged["mfu_pct"].tolist() == [48.81] * 3 and logged["hfu_pct"].tolist() == [65.08] * 3
    assert not run.meta.report.skipped and not [n for n in run.meta.report.notes if "not a number" in n]


@pytest.mark.parametrize("printed, tflops", [
    ("152.3TFLOPS", 152.3), ("1.5PFLOPS", 1500.0), ("12.0GFLOPS", 0.012), ("999.9", 999.9e-12),
    ("1.2EFLOPS", 1.2e6), ("3.0ZFLOPS", 3.0e9), ("1.2Yi", 1.2e12), ("845.0KFLOPS", 845e-9), ("7.5MFLOPS", 7.5e-6),
])
def test_neox_human_readable_flops_units(tmp_path, printed, tflops):
    """human_readable_flops divides by 1000 per unit: "", K, M, G, T, P, E, Z FLOPS, then "Yi" (1e24)."""
    p = _neox_log(tmp_path, [_neox(10, flops=printed)])
    (tf,) = _claims(_load(p), "tflops_per_accelerator")
    assert tf["value"] == pytest.approx(tflops, rel=1e-12)


def test_neox_values_that_are_not_rates(tmp_path):
    lines = [_neox(10, flops="nanYi", mfu="nan%"), _neox(20, flops="fastTFLOPS", mfu="0.45", sps="oops"), _neox(30)]
    p = _neox_log(tmp_path, lines)
    run = _load(p)
    (tf,) = _claims(run, "tflops_per_accelerator")
    assert (tf["value"], tf["n"], tf["where"]) == (pytest.approx(152.3), 1, f"{p}:3")
    notes = run.meta.report.notes
    assert any(n.startswith("1 values of approx flops per GPU are not finite") for n in notes)
    # a text value is counted with its line and field; MFU without '%' stays a column, not a fraction claim
    assert run.meta.report.skipped == {"non-numeric value (left missing, record kept)": 2}
    assert run.meta.report.first_lines["non-numeric value (left missing, record kept)"] == [2, 2]
    (mfu,) = _claims(run, "mfu")
    assert (mfu["value"], mfu["n"]) == (pytest.approx(0.4881), 1)
    assert run.steps.loc[run.steps["logged"], "mfu"].dropna().tolist() == [0.45]


def test_neox_without_its_throughput_fields_claims_nothing(tmp_path):
    line = _neox(10).replace(" approx flops per GPU: 152.3TFLOPS |", "").replace(" MFU: 48.81% | HFU: 65.08% |", "")
    p = _neox_log(tmp_path, [line.replace(" samples/sec: 98.765 |", "")])
    run = _load(p)
    assert run.meta.claims == [] and len(run.steps) == 1
