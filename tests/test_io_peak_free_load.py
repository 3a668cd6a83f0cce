"""Loading never needs a peak: a log from a device the registry has no bf16 figure for loads, and
the dtype given afterwards (``mfu analyze --dtype``, ``apply_inputs``) or to ``load_run`` gives the
peak; an accelerator given without a dtype is taken at bf16 the same way through every front end;
an unknown dtype is an error whether or not an accelerator is given."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit import hardware
from mfu_toolkit.analysis import build_answer
from mfu_toolkit.facts import InputError
from mfu_toolkit.inputs import apply_inputs
from mfu_toolkit.io import load_run
from mfu_toolkit.render.spoken import missing_text

A100_TRACE = "kineto/HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz"


@pytest.fixture
def v100_trace(realdata, tmp_path):  # noqa: F811
    """The real A100 rank trace with its device renamed to a V100 (Volta: no bf16)."""
    raw = gzip.decompress((realdata / A100_TRACE).read_bytes())
    assert json.loads(raw)["deviceProperties"][0]["name"] == "NVIDIA A100-PG509-200"
    out = tmp_path / "rank0.json.gz"  # the name is printed in more places than deviceProperties
    out.write_bytes(gzip.compress(raw.replace(b"NVIDIA A100-PG509-200", b"Tesla V100-SXM2-16GB")))
    return out


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_a_v100_trace_loads_without_a_peak_and_asks_for_the_dtype(v100_trace):
    run = load_run(v100_trace)
    assert run.meta.accelerator == "V100 SXM2" and run.meta.peak_flops_per_accelerator is None
    assert any("has no bf16 peak (it has fp64, fp32, fp16)" in n for n in run.meta.report.notes)
    missing = " ".join(missing_text(m, "python") for m in build_answer(run).missing)
    assert "V100 SXM2" in missing and "fp16" in missing and "dtype" in missing


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_the_dtype_given_after_loading_or_to_load_run_gives_the_same_peak(v100_trace):
    after = apply_inputs(load_run(v100_trace), dtype="fp16")
    given = load_run(v100_trace, dtype="fp16")
    # NVIDIA V100 datasheet: 125 TFLOP/s Tensor Performance (fp16), SXM2
    assert after.meta.peak_flops_per_accelerator == given.meta.peak_flops_per_accelerator == 125e12


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_mfu_analyze_dtype_rescues_the_v100_trace(v100_trace):
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(v100_trace), "--dtype", "fp16",
                          "--flops-per-step", "1e13", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    den = json.loads(out.stdout)["headline"]["denominator"]
    assert den["peak_flops_per_accelerator"] == 125e12 and den["dtype"] == "fp16"


def test_an_accelerator_given_to_load_run_without_a_dtype_is_taken_at_bf16(tmp_path):
    log = tmp_path / "steps.csv"
    log.write_text("step,start_s,end_s\n" + "".join(f"{i},{i}.0,{i}.5\n" for i in range(10)))
    run = load_run(log, accelerator="H100 SXM", n_accelerators=8, model_flops_per_step=1e15)
    # NVIDIA H100 datasheet: 1,979 TFLOP/s bf16 with sparsity, dense half (Hopper whitepaper 989.4)
    assert run.meta.dtype == "bf16" and run.meta.peak_flops_per_accelerator == pytest.approx(989.4e12)
    assert "dtype bf16 assumed" in run.meta.peak_source
    assert build_answer(run).headline["steady_state_mfu"] == pytest.approx(1e15 / 0.5 / (8 * 989.4e12))


@pytest.mark.parametrize("accelerator", [None, "H100 SXM"])
def test_an_unknown_dtype_is_an_error_with_or_without_an_accelerator(tmp_path, accelerator):
    log = tmp_path / "steps.csv"
    log.write_text("step,start_s,end_s\n0,0,1\n1,1,2\n")
    with pytest.raises(InputError, match=r"fp9.*expected one of fp64.*bf16"):
        apply_inputs(load_run(log), dtype="fp9", accelerator=accelerator)
    assert "fp9" not in hardware.DTYPES


@pytest.mark.parametrize("extra", [[], ["--accelerator", "H100"], ["--peak-tflops-per-gpu", "80"]])
def test_mfu_calc_refuses_an_unknown_dtype_whatever_else_is_given(extra):
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "calc", "--model-flops-per-step", "2.4e15",
                          "--step-seconds", "1.2", "--gpus", "128", "--dtype", "fp9", *extra],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and "--dtype fp9: not a dtype the peak registry knows" in out.stderr
    assert "Traceback" not in out.stderr
