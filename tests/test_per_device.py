"""The MFU denominator per device or per package: N and the peak must count the same thing.

Framework world sizes count devices: an MI250X package is two GCDs, each its own PyTorch device;
a Trainium2 chip at the default LNC=2 is four logical NeuronCores. Vendors print one peak per
package. Where N counts devices the peak must be per device, and every result says which.

Sources the numbers are pinned to:

- AMD Instinct MI250X page (https://www.amd.com/en/products/accelerators/instinct/mi200/mi250x.html):
  383 TFLOP/s peak bf16 per package, 2 GCDs per package -> 191.5 TFLOP/s per GCD.
- AWS Neuron, NeuronCore-v3 architecture
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/neuron-core-v3.html):
  a NeuronCore-v3 Tensor Engine delivers 79 BF16 TFLOPS; a Trainium2 chip has 8 NeuronCore-v3
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/trainium2.html),
  so 632 per chip.
- AWS Neuron, Logical NeuronCore configuration
  (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-features/logical-neuroncore-config.html):
  LNC=2 groups 2 physical NeuronCores into one logical NeuronCore, the unit frameworks see, and is
  the compiler's default on Trn2 -> 8 / 2 = 4 devices per chip, 2 x 79 = 158 TFLOP/s each.
- NVIDIA H100 page (https://www.nvidia.com/en-us/data-center/h100/): 1,979 TFLOP/s bf16 with
  sparsity, so 989.4 dense; one device per package.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from mfu_toolkit import facts
from mfu_toolkit.analysis import mfu_summary
from mfu_toolkit.cli import analyze, main
from mfu_toolkit.io import base, load_run
from mfu_toolkit.run import Run, RunMeta, SchemaError, read_run, save_run
from mfu_toolkit.scenarios.whatif import gem_scenario
from mfu_toolkit.widgets import CalculatorInputs, calculator_html, calculator_result

ROOT = Path(__file__).resolve().parent.parent
KINETO = ROOT / "data" / "samples" / "kineto"  # two ranks: distributedInfo.world_size = 2
MLPERF = ROOT / "data" / "samples" / "mlperf_result_0.txt"  # SYSJSON: 2 nodes x 4 accelerators

MI250X_PACKAGE = 383e12  # AMD: bf16 per package
MI250X_GCD = 383e12 / 2  # two GCDs per package
TRN2_CHIP = 8 * 79e12  # AWS: 8 NeuronCore-v3 per chip, 79 bf16 TFLOP/s per Tensor Engine
TRN2_LNC2_CORE = 2 * 79e12  # LNC=2: 2 physical cores per logical core, 8 / 2 = 4 per chip
H100_DENSE = 989.4e12
FLOPS_PER_STEP = 1e13  # an illustrative model: 10 TFLOP per global step


def _load(**kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the sample states an H100; the given accelerator wins
        return load_run(KINETO, dtype="bf16", model_flops_per_step=FLOPS_PER_STEP, **kw)


def _end_to_end_by_hand(run: Run, peak_per_accelerator: float) -> float:
    """Useful model FLOPs over wall time over the cluster peak, from the run's own rows."""
    steps = run.steps["step"].nunique()  # each step ran once on every rank; no warm-up detected
    wall = float(run.steps["end_s"].max() - run.steps["start_s"].min())  # the sample has no events
    n = run.steps["rank"].nunique()
    return steps * FLOPS_PER_STEP / wall / (n * peak_per_accelerator)


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- loaders: the world size counts devices -----------------------------------------------------


def test_mi250x_sample_is_per_gcd_and_its_mfu_doubles():
    device = _load(accelerator="MI250X")
    package = _load(accelerator="MI250X", peak_per="package")  # the old per-package reading
    assert device.meta.n_accelerators == 2 and device.meta.peak_per == "device"
    assert device.meta.peak_flops_per_accelerator == pytest.approx(MI250X_GCD, rel=1e-12)
    assert package.meta.peak_flops_per_accelerator == pytest.approx(MI250X_PACKAGE, rel=1e-12)
    s_dev, s_pkg = mfu_summary(device), mfu_summary(package)
    assert s_dev.cluster_peak_flops == pytest.approx(2 * MI250X_GCD, rel=1e-12)
    assert s_pkg.cluster_peak_flops == pytest.approx(2 * MI250X_PACKAGE, rel=1e-12)
    assert s_dev.end_to_end_mfu == pytest.approx(_end_to_end_by_hand(device, MI250X_GCD), rel=1e-9)
    assert s_pkg.end_to_end_mfu == pytest.approx(_end_to_end_by_hand(package, MI250X_PACKAGE), rel=1e-9)
    assert s_dev.end_to_end_mfu == pytest.approx(2 * s_pkg.end_to_end_mfu, rel=1e-12)
    assert s_dev.steady_state_mfu == pytest.approx(2 * s_pkg.steady_state_mfu, rel=1e-12)
    text = "\n".join(s_dev.lines())
    assert "Denominator: 2 × 191.5 TFLOP/s" in text
    assert "per device: 383 TFLOP/s per MI250X package = 191.5 per device × 2" in text
    assert s_dev.to_dict()["peak_per"] == "device" and s_pkg.to_dict()["peak_per"] == "package"
    assert "per package: 383 TFLOP/s per MI250X package" in "\n".join(s_pkg.lines())


def test_trainium2_at_lnc2_is_four_devices_per_chip():
    device = _load(accelerator="Trainium2")
    package = _load(accelerator="Trainium2", peak_per="package")
    assert device.meta.peak_flops_per_accelerator == pytest.approx(TRN2_LNC2_CORE, rel=1e-12)
    assert package.meta.peak_flops_per_accelerator == pytest.approx(TRN2_CHIP, rel=1e-12)
    assert mfu_summary(device).end_to_end_mfu == pytest.approx(
        4 * mfu_summary(package).end_to_end_mfu, rel=1e-12)
    assert device.meta.peak_per_text() == (
        "per device: 632 TFLOP/s per Trainium2 package = 158 per device × 4")
    # RunMeta by hand: 64 logical NeuronCores are 16 chips
    meta = RunMeta(n_accelerators=64).with_accelerator("Trainium2", "bf16")
    assert meta.n_accelerators * meta.peak_flops_per_accelerator == pytest.approx(16 * TRN2_CHIP, rel=1e-12)


def test_single_device_package_reads_the_same_either_way():
    device = _load(accelerator="H100")
    package = _load(accelerator="H100", peak_per="package")
    for run in (device, package):
        assert run.meta.peak_flops_per_accelerator == pytest.approx(H100_DENSE, rel=1e-12)
    assert mfu_summary(device).end_to_end_mfu == mfu_summary(package).end_to_end_mfu
    assert device.meta.peak_per_text() == "per device (1 device per package)"


def test_a_given_n_counts_devices_and_mlperf_sysjson_counts_packages():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        stated = load_run(MLPERF, accelerator="MI250X", dtype="bf16")  # 2 nodes x 4 per node
        given = load_run(MLPERF, accelerator="MI250X", dtype="bf16", n_accelerators=16)
    assert stated.meta.peak_per == "package" and stated.meta.n_accelerators == 8
    assert stated.meta.peak_flops_per_accelerator == pytest.approx(MI250X_PACKAGE, rel=1e-12)
    assert given.meta.peak_per == "device" and given.meta.n_accelerators == 16
    assert given.meta.peak_flops_per_accelerator == pytest.approx(MI250X_GCD, rel=1e-12)
    # the same silicon either way: 8 packages = 16 GCDs
    assert 8 * MI250X_PACKAGE == pytest.approx(16 * MI250X_GCD, rel=1e-12)


def test_peak_per_given_to_a_resolved_peak_looks_it_up_again():
    meta = RunMeta(n_accelerators=4).with_accelerator("MI250X", "bf16", per="package")
    again = facts.apply_given(meta, {"peak_per": "device", "n_accelerators": 8})
    assert again.peak_flops_per_accelerator == pytest.approx(MI250X_GCD, rel=1e-12)
    custom = RunMeta(n_accelerators=4, peak_flops_per_accelerator=1e15, peak_source="mine")
    with pytest.raises(base.LoaderArgumentError, match="names no accelerator"):
        facts.apply_given(custom, {"peak_per": "package"})
    with pytest.raises(SchemaError, match="peak_per"):
        RunMeta(peak_per="chip")


# --- a saved Run keeps the choice -----------------------------------------------------------------


@pytest.mark.parametrize("per, peak", [("device", MI250X_GCD), ("package", MI250X_PACKAGE)])
def test_saved_run_keeps_the_choice(tmp_path, per, peak):
    run = _load(accelerator="MI250X", peak_per=per)
    path = save_run(run, tmp_path / "run.parquet")
    for back in (read_run(path), load_run(path)):
        assert back.meta.peak_per == per
        assert back.meta.peak_flops_per_accelerator == pytest.approx(peak, rel=1e-12)
        assert back == run
    # saying the saved N counts the other unit looks the peak up again
    other, other_peak = ("package", MI250X_PACKAGE) if per == "device" else ("device", MI250X_GCD)
    relabelled = load_run(path, peak_per=other).meta
    assert relabelled.peak_per == other
    assert relabelled.peak_flops_per_accelerator == pytest.approx(other_peak, rel=1e-12)
    # a dtype change on the reloaded run stays per the same unit (AMD: fp16 = bf16 = 383 per package)
    assert read_run(path).meta.with_dtype("fp16").peak_flops_per_accelerator == pytest.approx(peak, rel=1e-12)


def test_saved_run_keeps_a_choice_the_registry_cannot_check(tmp_path):
    # a peak of the caller's own (no accelerator to look up) said to be per package
    meta = RunMeta(n_accelerators=4, peak_flops_per_accelerator=1e15, peak_source="mine", peak_per="package")
    run = Run.build({"step": [0, 1], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]}, meta=meta)
    assert read_run(save_run(run, tmp_path / "own.parquet")).meta.peak_per == "package"


@pytest.mark.parametrize("peak, per", [(MI250X_GCD, "device"), (MI250X_PACKAGE, "package")])
def test_meta_saved_before_peak_per_says_what_its_peak_is(peak, per):
    d = RunMeta(accelerator="MI250X", dtype="bf16", n_accelerators=2, peak_flops_per_accelerator=peak).to_dict()
    del d["peak_per"]
    assert RunMeta.from_dict(json.loads(json.dumps(d))).peak_per == per


# --- mfu calc -----------------------------------------------------------------------------------

CALC = ["calc", "--model-flops-per-step", "2.4e14", "--step-seconds", "1.2", "--gpus", "8"]


def test_calc_gpus_count_devices_by_default(capsys):
    code, out, _ = _cli(capsys, *CALC, "--accelerator", "MI250X", "--dtype", "bf16")
    assert code == 0
    assert "Cluster peak: 1,532.00 TFLOP/s" in out  # 8 x 191.5
    assert "MFU: 13.05%" in out  # 200 / 1,532
    assert ("Denominator: 8 devices × 191.5 TFLOP/s per device "
            "(383 TFLOP/s per MI250X package = 191.5 per device × 2); --gpus counts framework devices") in out
    code, out, _ = _cli(capsys, *CALC, "--accelerator", "MI250X", "--dtype", "bf16", "--json")
    d = json.loads(out)
    assert (d["per"], d["n_counts"], d["devices_per_package"]) == ("device", "devices", 2)
    assert d["peak_flops_per_accelerator"] == pytest.approx(MI250X_GCD, rel=1e-12)
    assert d["peak_flops_per_package"] == pytest.approx(MI250X_PACKAGE, rel=1e-12)
    assert d["peak_flops_per_device"] == pytest.approx(MI250X_GCD, rel=1e-12)


def test_calc_per_package_counts_packages(capsys):
    code, out, _ = _cli(capsys, *CALC, "--accelerator", "MI250X", "--dtype", "bf16", "--per", "package")
    assert code == 0
    assert "Cluster peak: 3,064.00 TFLOP/s" in out  # 8 x 383
    assert "MFU: 6.53%" in out  # 200 / 3,064
    assert "Denominator: 8 packages × 383 TFLOP/s per package" in out
    code, out, _ = _cli(capsys, *CALC, "--accelerator", "MI250X", "--per", "package", "--json")
    d = json.loads(out)
    assert (d["per"], d["n_counts"]) == ("package", "packages")
    assert d["peak_flops_per_accelerator"] == pytest.approx(MI250X_PACKAGE, rel=1e-12)


def test_calc_help_says_gpus_counts_devices(capsys):
    with pytest.raises(SystemExit):
        main(["calc", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "counted as framework devices" in text and "two per MI250X" in text


def test_calc_single_device_package_unchanged(capsys):
    # 2,000 TFLOP/s on 128 H100s (989.4 dense): 126,643.2 TFLOP/s peak, 1.58 %, per device or package
    for extra in ((), ("--per", "package")):
        code, out, _ = _cli(capsys, "calc", "--model-flops-per-step", "2.4e15", "--step-seconds", "1.2",
                            "--gpus", "128", "--accelerator", "H100", *extra)
        assert code == 0
        assert "Cluster peak: 126,643.20 TFLOP/s" in out and "MFU: 1.58%" in out
        assert "(H100 SXM: 1 device per package)" in out


def test_calc_trainium2_json(capsys):
    code, out, _ = _cli(capsys, *CALC, "--accelerator", "Trainium2", "--json")
    d = json.loads(out)
    assert code == 0 and d["devices_per_package"] == 4
    assert d["peak_flops_per_accelerator"] == pytest.approx(TRN2_LNC2_CORE, rel=1e-12)
    assert d["cluster_peak_flops"] == pytest.approx(2 * TRN2_CHIP, rel=1e-12)  # 8 cores = 2 chips


# --- mfu analyze --------------------------------------------------------------------------------


def _analyze(capsys, *argv):
    import argparse

    parser = argparse.ArgumentParser()
    analyze.add_parser(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["analyze", str(KINETO), "--flops-per-step", str(FLOPS_PER_STEP), *argv])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = args.func(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_analyze_takes_the_logs_world_size_as_devices(capsys):
    code, out, _ = _analyze(capsys, "--accelerator", "MI250X")
    assert code == 0
    flat = " ".join(out.split())  # the answer wraps at 100 columns
    assert ("denominator: 2 × 191.5 TFLOP/s = 383 TFLOP/s (MI250X bf16 dense, "
            "per device: 383 TFLOP/s per MI250X package" in flat)
    code, out, _ = _analyze(capsys, "--accelerator", "MI250X", "--json")
    summary = json.loads(out)["summary"]
    assert summary["peak_per"] == "device"
    assert summary["cluster_peak_flops"] == pytest.approx(2 * MI250X_GCD, rel=1e-12)


def test_analyze_packages_and_contradictions(capsys):
    code, out, _ = _analyze(capsys, "--accelerator", "MI250X", "--packages", "1", "--json")
    summary = json.loads(out)["summary"]
    assert code == 0 and summary["peak_per"] == "package" and summary["n_accelerators"] == 1
    assert summary["cluster_peak_flops"] == pytest.approx(MI250X_PACKAGE, rel=1e-12)  # the same two GCDs
    code, _, err = _analyze(capsys, "--accelerator", "MI250X", "--gpus", "2", "--per", "package")
    assert code == 2 and "counts devices" in err


# --- widgets and what-ifs -------------------------------------------------------------------------


def test_calculator_per_device_and_per_package():
    dev = calculator_result(CalculatorInputs("MI250X", "bf16", 8, 2.4e14, 1.2))
    pkg = calculator_result(CalculatorInputs("MI250X", "bf16", 8, 2.4e14, 1.2, per="package"))
    assert dev.peak_flops_per_accelerator == pytest.approx(MI250X_GCD, rel=1e-12)
    assert pkg.peak_flops_per_accelerator == pytest.approx(MI250X_PACKAGE, rel=1e-12)
    page = calculator_html(CalculatorInputs("MI250X", "bf16", 8, 2.4e14, 1.2))
    assert "8 × 191.5 TFLOP/s per device" in page and "383 TFLOP/s per package = 191.5 per device × 2" in page


def test_gem_scenario_peak_per_device():
    # 4,096 GCDs at 191.5 TFLOP/s take twice as long as 4,096 packages at 383
    dev = gem_scenario(accelerator="MI250X")
    pkg = gem_scenario(accelerator="MI250X", per="package")
    assert dev.peak_flops == pytest.approx(MI250X_GCD, rel=1e-12) and "per device" in dev.peak_source
    assert dev.base_days == pytest.approx(2 * pkg.base_days, rel=1e-12)
