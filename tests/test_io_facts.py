"""The facts a log states fill the run by default (mfu_toolkit.io.base.assemble): accelerator and its
peak, dtype, n_accelerators; what the caller gives wins and the conflict stays recorded."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit import hardware
from mfu_toolkit.io import load_run
from mfu_toolkit.io.base import Parsed, assemble
from mfu_toolkit.io.reading import Reader
from mfu_toolkit.run import LoadWarning

# Dense peaks from the datasheets (the registry's own figures are read from them, not echoed here):
H100_BF16 = 989.4e12  # NVIDIA H100 SXM: 1,979 TFLOP/s bf16 with sparsity, half of it dense
H100_FP8 = 1978.9e12  # NVIDIA H100 SXM: 3,958 TFLOP/s fp8 with sparsity, half of it dense
A100_BF16 = 312e12  # NVIDIA A100 datasheet: 312 TFLOP/s bf16 dense, every SXM4 variant


def _parsed(*facts):
    out = Parsed(steps={"step": [0], "start_s": [0.0], "end_s": [1.0]})
    for f in facts:
        out.fact(*f)
    return out


def _run(tmp_path, *facts, **given):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return assemble(_parsed(*facts), Reader(tmp_path / "log.txt", "test"), given)


def test_a_stated_accelerator_sets_the_peak_at_bf16_traced_to_its_line(tmp_path):
    run = _run(tmp_path, ("accelerator", "NVIDIA H100 80GB HBM3", "log.txt:3", "CUDA capacity: NVIDIA H100 80GB HBM3"))
    m = run.meta
    assert (m.accelerator, m.dtype, m.peak_flops_per_accelerator) == ("H100 SXM", "bf16", H100_BF16)
    assert "stated in the log at log.txt:3" in m.peak_source and "bf16 assumed" in m.peak_source
    assert any(n.startswith("used from the log:") and "log.txt:3" in n for n in m.report.notes)
    # facts stay as they were stated
    assert m.facts == [{"name": "accelerator", "value": "NVIDIA H100 80GB HBM3", "source": "stated",
                        "where": "log.txt:3", "text": "CUDA capacity: NVIDIA H100 80GB HBM3"}]


def test_a_stated_dtype_picks_the_peak(tmp_path):
    run = _run(tmp_path, ("accelerator", "H100", "log.txt:3"), ("dtype", "float8_e4m3fn", "log.txt:9", "fp8: e4m3"))
    m = run.meta
    assert (m.dtype, m.peak_flops_per_accelerator) == ("fp8", H100_FP8)
    assert "dtype fp8" in m.peak_source and "log.txt:9" in m.peak_source


def test_a_stated_dtype_the_accelerator_lacks_leaves_the_peak_unknown_with_a_note(tmp_path):
    run = _run(tmp_path, ("accelerator", "NVIDIA A100-SXM4-80GB", "log.txt:3"), ("dtype", "fp8", "log.txt:9"))
    m = run.meta
    assert m.accelerator == "A100 SXM" and m.peak_flops_per_accelerator is None and m.dtype is None
    assert any(n.startswith("peak unknown") and "fp8" in n and "log.txt:9" in n for n in m.report.notes)


def test_an_unknown_stated_accelerator_stays_a_fact_with_close_names(tmp_path):
    run = _run(tmp_path, ("accelerator", "NVIDIA H10O", "log.txt:3"))
    m = run.meta
    assert m.accelerator is None and m.peak_flops_per_accelerator is None
    assert m.fact("accelerator")["value"] == "NVIDIA H10O"
    (note,) = [n for n in m.report.notes if n.startswith("peak unknown")]
    assert "'NVIDIA H10O' stated in the log at log.txt:3" in note and "close matches" in note and "H100" in note


def test_a_mig_slice_never_takes_the_whole_gpus_peak(tmp_path):
    run = _run(tmp_path, ("accelerator", "NVIDIA A100-PG509-200 MIG 1g.5gb", "log.txt:3"))
    assert run.meta.peak_flops_per_accelerator is None
    assert any(n.startswith("peak unknown") and "MIG slice" in n for n in run.meta.report.notes)


def test_the_callers_accelerator_wins_and_the_conflict_is_noted(tmp_path):
    with pytest.warns(LoadWarning, match="conflict"):
        run = assemble(_parsed(("accelerator", "tpu-v5p", "result.txt:4")), Reader(tmp_path / "r.txt", "test"),
                       {"accelerator": "TPU v6e", "dtype": "bf16"})
    m = run.meta
    assert m.accelerator == "TPU v6e" and "stated in the log" not in (m.peak_source or "")
    assert m.peak_flops_per_accelerator == 918e12  # TPU v6e bf16 (Google Cloud TPU v6e page)
    assert ([(f["value"], f["source"]) for f in m.facts if f["name"] == "accelerator"]
            == [("tpu-v5p", "stated"), ("TPU v6e", "given")])
    assert any(n.startswith("conflict: accelerator given as 'TPU v6e'") and "result.txt:4" in n for n in m.report.notes)


def test_the_same_accelerator_under_another_spelling_is_no_conflict(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", LoadWarning)
        run = assemble(_parsed(("accelerator", "NVIDIA H100 80GB HBM3", "log.txt:3"),
                               ("dtype", "bfloat16", "log.txt:4")),
                       Reader(tmp_path / "log.txt", "test"), {"accelerator": "H100", "dtype": "bf16"})
    assert not any(n.startswith("conflict") for n in run.meta.report.notes)


def test_the_callers_dtype_with_the_stated_accelerator(tmp_path):
    run = _run(tmp_path, ("accelerator", "H100", "log.txt:3"), dtype="fp8")
    assert (run.meta.accelerator, run.meta.peak_flops_per_accelerator) == ("H100 SXM", H100_FP8)
    with pytest.raises(hardware.DtypeNotAvailableError,
                       match=r"dtype 'fp8' given, but the log states accelerator .*log.txt:3"):
        _run(tmp_path, ("accelerator", "A100", "log.txt:3"), dtype="fp8")


def test_the_callers_accelerator_with_the_stated_dtype(tmp_path):
    run = _run(tmp_path, ("dtype", "fp8", "log.txt:9"), accelerator="H100")
    assert (run.meta.dtype, run.meta.peak_flops_per_accelerator) == ("fp8", H100_FP8)
    assert "dtype fp8" in run.meta.peak_source
    with pytest.raises(hardware.DtypeNotAvailableError,
                       match=r"accelerator 'A100' given, but the log states dtype 'fp8'"):
        _run(tmp_path, ("dtype", "fp8", "log.txt:9"), accelerator="A100")


def test_a_given_peak_keeps_the_stated_accelerator_a_fact(tmp_path):
    run = _run(tmp_path, ("accelerator", "H100", "log.txt:3"), peak_flops_per_accelerator=5e14)
    assert run.meta.accelerator is None and run.meta.peak_flops_per_accelerator == 5e14


def test_nodes_times_accelerators_per_node_with_both_lines(tmp_path):
    run = _run(tmp_path, ("n_nodes", 4, "log.txt:2"), ("accelerators_per_node", 8, "log.txt:5"))
    assert run.meta.n_accelerators == 32
    f = run.meta.fact("n_accelerators")
    assert (f["value"], f["where"], f["text"]) == (32, "log.txt:2 and log.txt:5", "n_nodes 4 x accelerators_per_node 8")
    # a stated count wins over the product; a given count over both
    assert _run(tmp_path, ("n_accelerators", 16, "log.txt:1"), ("n_nodes", 4, "log.txt:2"),
                ("accelerators_per_node", 8, "log.txt:5")).meta.n_accelerators == 16
    assert _run(tmp_path, ("n_nodes", 4, "log.txt:2"), ("accelerators_per_node", 8, "log.txt:5"),
                n_accelerators=7).meta.n_accelerators == 7
    assert _run(tmp_path, ("n_nodes", 4, "log.txt:2")).meta.n_accelerators is None  # one of the two: not guessed


def test_an_unknown_dtype_spelling_is_noted_not_used(tmp_path):
    run = _run(tmp_path, ("accelerator", "H100", "log.txt:3"), ("dtype", "mixed", "log.txt:4"))
    assert run.meta.dtype == "bf16" and "bf16 assumed" in run.meta.peak_source
    assert any("'mixed' stated in the log at log.txt:4 is not a dtype the peak registry knows" in n
               for n in run.meta.report.notes)


def test_a_very_long_accelerator_name_is_not_looked_up(tmp_path):
    run = _run(tmp_path, ("accelerator", "H100 " + "x" * 100_000, "log.txt:3"))
    assert run.meta.accelerator is None
    assert any("characters long, not a device name" in n for n in run.meta.report.notes)


# --- the real logs: which facts fill the run ------------------------------------------------------------
def test_real_kineto_a100_pg509_gets_the_a100_sxm_peak(realdata):  # noqa: F811
    path = realdata / "kineto" / "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz"
    import gzip

    raw = gzip.decompress(path.read_bytes()).decode()
    names = set(re.findall(r'"name": "([^"]+)", "totalGlobalMem"', raw))
    assert names == {"NVIDIA A100-PG509-200"}
    m = load_run(path).meta
    assert (m.accelerator, m.n_accelerators, m.peak_flops_per_accelerator) == ("A100 SXM", 2, A100_BF16)


def test_real_wandb_metadata_names_the_accelerator(realdata):  # noqa: F811
    info = realdata / "accelerator_info"
    for name, want, peak in (("v7i3k2p0", "A100 SXM", A100_BF16), ("yxelkra3", "H100 SXM", H100_BF16)):
        path = info / f"0-KaiKai-0_stanford_alpaca_{name}_wandb-metadata.json"
        meta = json.loads(path.read_text())
        m = load_run(path).meta
        assert (m.accelerator, m.n_accelerators, m.peak_flops_per_accelerator) == (want, meta["gpu_count"], peak), name
        assert meta["gpu"] in m.peak_source


def test_real_mlperf_google_states_tpu_v5p(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_Google_cloud-tpu-trillium-1024-maxtext_gpt3_result_0.txt"
    (line,) = [ln for ln in path.read_text().splitlines() if '"key": "submission_platform"' in ln]
    assert '"value": "tpu-v5p"' in line
    m = load_run(path).meta
    assert m.accelerator == "TPU v5p" and m.peak_flops_per_accelerator == 459e12  # TPU v5p bf16 (Google Cloud)
    with pytest.warns(LoadWarning, match="conflict: accelerator given as 'TPU v6e'"):
        given = load_run(path, accelerator="TPU v6e", dtype="bf16").meta
    stated = given.fact("accelerator", source="stated")
    # the platform resolves through the system table; the fact's text keeps the line as printed
    assert given.accelerator == "TPU v6e" and stated["value"] == "TPU v5p" and "tpu-v5p" in stated["text"]


def test_real_rocm_trace_names_no_known_device(realdata):  # noqa: F811
    # ROCm reports "AMD Radeon Graphics" for this MI250 GCD (104 CUs, 64 GiB): no product is assumed
    path = realdata / "kineto" / "HTA_amd_mi250_minitoy_ROCm6_2_kineto.json.gz"
    m = load_run(path).meta
    assert m.accelerator is None and m.peak_flops_per_accelerator is None
    assert any(n.startswith("peak unknown: accelerator 'AMD Radeon Graphics'") for n in m.report.notes)


def test_a_given_count_that_contradicts_nodes_times_per_node_is_a_conflict(tmp_path):
    with pytest.warns(LoadWarning, match=r"conflict: n_accelerators given as 256, but the log states 512"):
        run = assemble(_parsed(("n_nodes", 64, "r.txt:581"), ("accelerators_per_node", 8, "r.txt:581")),
                       Reader(tmp_path / "r.txt", "test"), {"n_accelerators": 256})
    assert run.meta.n_accelerators == 256
    assert ([(f["value"], f["source"]) for f in run.meta.facts if f["name"] == "n_accelerators"]
            == [(256, "given"), (512, "stated")])
