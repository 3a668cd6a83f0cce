"""Names that must never give a wrong product: stated memory sizes, one device of a package (GCD),
unknown dtypes, and the rows added for parts that published logs name (MI350X, MTIA, Gaudi device names).

Every pinned number quotes where the vendor prints it.
"""

from __future__ import annotations

import pytest
from _registry import fresh_registry  # noqa: F401

from mfu_toolkit import hardware as hw
from mfu_toolkit.cli import main

# --- memory sizes: a stated size that differs from a part's is never matched to it -----------
# NVIDIA's H100 page (https://www.nvidia.com/en-us/data-center/h100/): H100 SXM 80 GB, H100 NVL 94 GB;
# the GH200 page (https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/): its H100 has 96 GB HBM3.

@pytest.mark.parametrize(("text", "part"), [
    ("H100 94GB", "H100 NVL"),
    ("NVIDIA H100 94GB HBM3", "H100 NVL"),
    ("nvidia-h100-94gb", "H100 NVL"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA H100 NVL 94GB", "H100 NVL"),
    ("H100 96GB", "GH200"),
    ("NVIDIA H100 96GB HBM3", "GH200"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA GH200 144G HBM3e", "GH200"),
    ("H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 PCIe 80 GB", "H100 PCIe"),
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("H100 SXM5 80GB", "H100 SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM"),
    ("NVIDIA A100 SXM4 80 GB", "A100 SXM"),
    ("Tesla T4 16GB", "T4"),
    ("AMD Instinct MI300X 192GB", "MI300X"),
])
def test_a_stated_size_picks_the_part_that_has_it(text, part):
    assert hw.resolve(text).name == part


@pytest.mark.parametrize(("text", "close"), [
    ("H100 SXM5 94GB", {"H100 SXM", "H100 NVL"}),  # SXM is 80 GB; 94 GB is the NVL's
    ("NVIDIA H100 PCIe 94GB", {"H100 PCIe", "H100 NVL"}),
    ("H100 64GB", {"H100 SXM", "H100 PCIe", "H100 NVL", "GH200"}),  # no H100 part NVIDIA lists has 64 GB
    ("NVIDIA GH200 576GB", {"GH200"}),
    ("NVIDIA A100 SXM4 64GB", {"A100 SXM"}),
    ("MI300X 256GB", {"MI300X", "MI325X"}),  # MI325X is the 256 GB part (memory_bandwidth.csv)
])
def test_a_size_no_part_has_is_refused_with_close_names(text, close):
    with pytest.raises(hw.RefusedNameError) as err:
        hw.resolve(text)
    assert close <= set(err.value.suggestions)
    assert "never matched" in str(err.value) and all(repr(c) in str(err.value) for c in close)
    with pytest.raises(hw.RefusedNameError):
        hw.get_peak(text)  # no peak either


def test_h100_variants_never_get_the_sxm_peak():
    # H100 SXM bf16 dense 989.4 (half the datasheet's 1,979 sparse figure); NVL 835.5 (half of 1,671).
    assert hw.get_peak("H100 94GB").tflops == 835.5
    assert hw.get_peak("NVIDIA H100 NVL").tflops == 835.5
    assert hw.get_peak("H100 PCIe").tflops == 756.5  # H100 PCIe column: 1,513 sparse
    # GH200's Hopper GPU has the H100 SXM figures (GH200 datasheet: 1,979 sparse).
    assert hw.get_peak("H100 96GB").tflops == 989.4


def test_sizes_in_a_registered_part_are_its_own():
    reg = hw.Registry(builtin=False, env=False)
    reg.register("Acme X1", vendor="Acme", peaks={"bf16": 100.0}, aliases=["Acme X1 32GB"], basis="test",
                 source="https://example.com/x1", read_on="2026-12-06")
    assert reg.resolve("Acme X1 32GB rev2").name == "Acme X1"
    with pytest.raises(hw.RefusedNameError, match="32 GB"):
        reg.resolve("Acme X1 48GB")
    # A part whose size nothing states is not contradicted by one.
    reg.register("Acme Y2", vendor="Acme", peaks={"bf16": 50.0}, basis="test", source="https://example.com/y2",
                 read_on="2026-12-06")
    assert reg.resolve("Acme Y2 48GB").name == "Acme Y2"


def test_mig_profiles_are_not_memory_sizes():
    # "3g.40gb" is a MIG slice (its own refusal), not a 40 GB A100 claim.
    with pytest.raises(hw.RefusedNameError, match="MIG"):
        hw.resolve("NVIDIA A100-SXM4-80GB MIG 3g.40gb")


# --- one device of a package: MI250X/MI250 GCDs -----------------------------------------------
# AMD MI250X page: 383 TFLOPS bf16 per package of 2 GCDs; MI250: 362.1.

@pytest.mark.parametrize(("text", "name", "per_device"), [
    ("MI250X GCD", "MI250X", 383 / 2),
    ("AMD Instinct MI250X GCD", "MI250X", 383 / 2),
    ("amd-instinct-mi250x-gcd", "MI250X", 383 / 2),
    ("MI250 GCD", "MI250", 362.1 / 2),
])
def test_a_gcd_is_one_device_of_the_package(text, name, per_device):
    assert hw.resolve(text).name == name
    peak = hw.get_peak(text)
    assert (peak.accelerator, peak.per, peak.devices_per_package) == (name, "device", 2)
    assert peak.tflops == pytest.approx(per_device)
    assert "GCD" in peak.note and "per-device" in peak.note and "1/2 of a package" in peak.describe()
    assert hw.get_peak(text, per="device") == peak
    with pytest.raises(hw.RegistryError, match="per='device'"):
        hw.get_peak(text, per="package")
    # the package name still gives the package figure by default
    assert hw.get_peak(name).tflops == pytest.approx(2 * per_device)


def test_a_gcd_of_a_one_device_package_is_refused():
    with pytest.raises(hw.RefusedNameError, match="one device per package"):
        hw.resolve("MI300X GCD")


# --- unknown dtypes ---------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda: hw.canonical_dtype("fp9"),
    lambda: hw.get_peak("H100", "fp9"),
    lambda: hw.get_peak("no such chip", "fp9"),  # the dtype is checked first, with or without an accelerator
    lambda: hw.peak_table(dtype="fp9"),
    lambda: hw.accelerators(dtype="fp9"),
])
def test_an_unknown_dtype_lists_the_allowed_ones(call):
    with pytest.raises(hw.RegistryError) as err:
        call()
    assert "'fp9'" in str(err.value) and all(d in str(err.value) for d in hw.DTYPES)


def test_mfu_calc_with_an_accelerator_refuses_an_unknown_dtype(capsys):
    rc = main(["calc", "--accelerator", "H100", "--dtype", "fp9", "--model-flops-per-step", "1e15",
               "--step-seconds", "1", "--gpus", "8"])
    err = capsys.readouterr().err
    assert rc == 2 and "--dtype fp9" in err and "bf16" in err and "fp8" in err


# --- added rows -------------------------------------------------------------------------------

ADDED = [
    # AMD MI350X page (https://www.amd.com/en/products/accelerators/instinct/mi350/mi350x.html): the MI355X
    # figures at 2200 instead of 2400 MHz; by hand: bf16 4096 FLOP/clk/CU x 256 CUs x 2.2e9 = 2306.9e12,
    # fp8 8192 -> 4613.7, fp4 16384 -> 9227.5, fp64 128 -> 72.1, fp32 256 -> 144.2.
    ("MI350X", "bf16", 2306.9, 4613.7),
    ("MI350X", "fp8", 4613.7, 9227.5),
    ("MI350X", "fp4", 9227.5, None),
    ("MI350X", "fp64", 72.1, None),
    ("MI350X", "fp32", 144.2, None),
    # Meta, "Our next generation Meta Training and Inference Accelerator": GEMM 177 TFLOPS FP16/BF16 dense
    # (354 with sparsity), 354 TOPS INT8 dense (708 with sparsity); MTIA v1 51.2 FP16/BF16, 102.4 INT8.
    ("MTIA v2", "bf16", 177, None),
    ("MTIA v2", "int8", 354, None),
    ("MTIA v1", "fp16", 51.2, None),
    ("MTIA v1", "int8", 102.4, None),
    # Intel Gaudi 3 white paper comparison table, Gaudi 2 column: 432 BF16, 865 FP8 (MME).
    ("HL-225", "bf16", 432, None),
    ("HL-325L", "bf16", 1835, None),
]


@pytest.mark.parametrize(("name", "dtype", "dense", "sparse"), ADDED)
def test_added_rows(name, dtype, dense, sparse):
    assert hw.get_peak(name, dtype).tflops == dense
    if sparse is None:
        with pytest.raises(hw.DtypeNotAvailableError):
            hw.get_peak(name, dtype, sparse=True)
    else:
        assert hw.get_peak(name, dtype, sparse=True).tflops == sparse


def test_mi350x_and_mi355x_are_one_die_at_two_clocks():
    # By hand: FLOP per clock per CU (CDNA 4) x 256 CUs x the peak engine clock AMD prints (MI350X 2200 MHz,
    # MI355X 2400 MHz) gives both pages' figures to their printed 0.1 TFLOP/s.
    per_clock = {"bf16": 4096, "fp8": 8192, "fp4": 16384, "fp32": 256, "fp64": 128}
    for name, mhz in (("AMD Instinct MI350X", 2200), ("MI355X", 2400)):
        for dtype, flops in per_clock.items():
            assert hw.get_peak(name, dtype).tflops == pytest.approx(flops * 256 * mhz * 1e6 / 1e12, abs=0.05), dtype


def test_mtia_sparse_figures_stay_out_of_the_2_4_column():
    with pytest.raises(hw.DtypeNotAvailableError, match="708"):  # the note says why: scheme not stated
        hw.get_peak("MTIA v2", "int8", sparse=True)
    assert hw.resolve("Meta MTIA v2").name == "MTIA v2"
    with pytest.raises(hw.UnknownAcceleratorError):  # which generation is not said
        hw.resolve("MTIA")


def test_gaudi_names_as_habana_tools_print_them():
    assert hw.resolve("HL-225").name == hw.resolve("HL-225H").name == "Gaudi 2"
    assert hw.resolve("HL-325L").name == "Gaudi 3"
    assert hw.resolve("HL-205").name == "Gaudi 1"
    with pytest.raises(hw.UnknownAcceleratorError):
        hw.resolve("HL-225B")  # another product number, not matched to HL-225
    with pytest.raises(hw.DtypeNotAvailableError, match="no peak matrix"):
        hw.get_peak("HL-205")  # first-generation Gaudi: no vendor matrix figure, a documented refusal
    assert hw.resolve("Gaudi 3").devices_per_package == 1


def test_intel_max_rows_are_documented_refusals():
    for name, dpp in (("Intel(R) Data Center GPU Max 1550", 2), ("Intel(R) Data Center GPU Max 1100", 1)):
        acc = hw.resolve(name)
        assert acc.devices_per_package == dpp and acc.dtypes() == []
        with pytest.raises(hw.DtypeNotAvailableError, match="no peak is stored"):
            hw.get_peak(name)
