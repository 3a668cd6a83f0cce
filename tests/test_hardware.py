"""Tests for the peak-FLOPs registry (mfu_toolkit.hardware).

The pinned values below are the vendor datasheet figures. NVIDIA prints Hopper/Blackwell tensor-core
headline figures with sparsity (asterisk); the registry stores half of them as dense, so each pin
names the printed figure and the dense value derived from it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from _registry import fresh_registry, write_csv, write_text  # noqa: F401
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit import hardware as hw

REPO = Path(__file__).resolve().parents[1]
GOOD_ROW = "Acme X1,Acme,bf16,100,200,TFLOP/s,1,ACME-X1 Rev B,card 300 W,https://example.com/x1,2026-11-29,\n"


# --- datasheet values ------------------------------------------------------------------------

# (accelerator, dtype, dense, sparse or None)
DATASHEET = [
    # NVIDIA H100 datasheet (SXM5): BF16 1,979 TFLOPS with sparsity -> 989.4 dense (Hopper whitepaper:
    # 989.4 / 1,978.9); FP8 3,958* -> 1,978.9; TF32 989* -> 494.7; FP64 34; FP64 Tensor 67; FP32 67.
    ("H100 SXM", "bf16", 989.4, 1978.9),
    ("H100 SXM", "fp16", 989.4, 1978.9),
    ("H100 SXM", "fp8", 1978.9, 3957.8),
    ("H100 SXM", "tf32", 494.7, 989.4),
    ("H100 SXM", "int8", 1978.9, 3957.8),
    ("H100 SXM", "fp64", 34, None),
    ("H100 SXM", "fp64_tensor", 67, None),
    ("H100 SXM", "fp32", 67, None),
    # NVIDIA H100 datasheet, PCIe column: BF16 1,513* -> 756.5; FP8 3,026* -> 1,513; FP64 26.
    ("H100 PCIe", "bf16", 756.5, 1513),
    ("H100 PCIe", "fp8", 1513, 3026),
    ("H100 PCIe", "fp64", 26, None),
    # NVIDIA H100 page, H100 NVL (per GPU): BF16 1,671* -> 835.5; FP8 3,341* -> 1,670.5.
    ("H100 NVL", "bf16", 835.5, 1671),
    ("H100 NVL", "fp8", 1670.5, 3341),
    # NVIDIA H200 / GH200 pages: same Hopper compute as H100 SXM; H800: FP64 cut to 1 TFLOPS.
    ("H200 SXM", "bf16", 989.4, 1978.9),
    ("H200 NVL", "bf16", 835.5, 1671),
    ("GH200", "fp8", 1978.9, 3957.8),
    ("H800 SXM", "fp64", 1, None),
    ("H800 SXM", "bf16", 989.4, 1978.9),
    # NVIDIA A100 datasheet: BF16 312 | 624*, TF32 156 | 312*, INT8 624 | 1,248*, FP64 9.7, FP64 Tensor 19.5.
    ("A100 SXM", "bf16", 312, 624),
    ("A100 SXM", "tf32", 156, 312),
    ("A100 SXM", "int8", 624, 1248),
    ("A100 SXM", "fp64", 9.7, None),
    ("A100 SXM", "fp64_tensor", 19.5, None),
    ("A100 PCIe", "bf16", 312, 624),
    # NVIDIA V100 datasheet (SXM2): Tensor Performance 125, single precision 15.7, double 7.8.
    ("V100 SXM2", "fp16", 125, None),
    ("V100 SXM2", "fp32", 15.7, None),
    ("V100 SXM2", "fp64", 7.8, None),
    # NVIDIA A10 datasheet: BF16 125 | 250*. L4 datasheet (72 W): BF16 242* -> 121, FP8 485* -> 242.5.
    ("A10", "bf16", 125, 250),
    ("L4", "bf16", 121, 242),
    ("L4", "fp8", 242.5, 485),
    # NVIDIA L40S page: BF16 362.05 | 733*, FP8 733 | 1,466*.
    ("L40S", "bf16", 362.05, 733),
    ("L40S", "fp8", 733, 1466),
    # NVIDIA Ada whitepaper, RTX 4090: BF16 with FP32 accumulate 165.2 | 330.4*.
    ("RTX 4090", "bf16", 165.2, 330.4),
    # NVIDIA HGX page, HGX B200 (8 GPUs): FP16/BF16 36 PF* -> 2,250 dense per GPU; FP4 144 PF* -> 9,000.
    ("B200", "bf16", 2250, 4500),
    ("B200", "fp4", 9000, 18000),
    ("B200", "fp64", 37, None),
    # HGX B300: FP4 144 | 108 PF for 8 GPUs -> 13,500 dense per GPU; FP64 10 TF -> 1.25.
    ("B300", "fp4", 13500, 18000),
    ("B300", "fp64", 1.25, None),
    # GB200 NVL72 page, one superchip (2 GPUs): FP16/BF16 10 PF* -> 2,500 dense per GPU; FP64 80 TF -> 40.
    ("GB200", "bf16", 2500, 5000),
    ("GB200", "fp4", 10000, 20000),
    ("GB200", "fp64", 40, None),
    # GB300 NVL72 page (72 GPUs): FP4 1,440 | 1,080 PF -> 15,000 dense per GPU; FP16/BF16 360 PF* -> 2,500.
    ("GB300", "fp4", 15000, 20000),
    ("GB300", "bf16", 2500, 5000),
    # AMD MI300X page: BF16 1,307.4 TFLOPS, 2,614.9 with structured sparsity; FP8 2,614.9 | 5,229.8.
    ("MI300X", "bf16", 1307.4, 2614.9),
    ("MI300X", "fp8", 2614.9, 5229.8),
    ("MI300X", "fp64", 81.7, None),
    ("MI300X", "fp64_tensor", 163.4, None),
    ("MI325X", "bf16", 1307.4, 2614.9),
    # AMD MI250X page: FP16/BF16 383 TFLOPS for the package of 2 GCDs; FP64 vector 47.9, matrix 95.7.
    ("MI250X", "bf16", 383, None),
    ("MI250X", "fp64", 47.9, None),
    ("MI250X", "fp64_tensor", 95.7, None),
    # AMD MI355X page: BF16 2.5 PF (2,516.6), FP8 5.0 PF (5,033.2), MXFP4 10.1 PF (10,066.3).
    ("MI355X", "bf16", 2516.6, 5033.2),
    ("MI355X", "fp8", 5033.2, 10066.3),
    ("MI355X", "fp4", 10066.3, None),
    # Google Cloud TPU pages, peak compute per chip: v4 275 bf16 / 275 int8; v5e 197 / 393; v5p 459 / 918;
    # v6e 918 / 1,836; TPU7x (Ironwood) 2,307 bf16 / 4,614 fp8.
    ("TPU v4", "bf16", 275, None),
    ("TPU v4", "int8", 275, None),
    ("TPU v5e", "bf16", 197, None),
    ("TPU v5e", "int8", 393, None),
    ("TPU v5p", "bf16", 459, None),
    ("TPU v5p", "int8", 918, None),
    ("TPU v6e", "bf16", 918, None),
    ("TPU v6e", "int8", 1836, None),
    ("TPU v7", "bf16", 2307, None),
    ("TPU v7", "fp8", 4614, None),
    # Intel Gaudi 3 white paper: MME BF16 1,835, FP8 1,835; Gaudi 2 column: BF16 432, FP8 865.
    ("Gaudi 3", "bf16", 1835, None),
    ("Gaudi 2", "bf16", 432, None),
    ("Gaudi 2", "fp8", 865, None),
    # AWS Neuron docs, per-NeuronCore Tensor Engine (the matmul engine; chip totals over all engines are not
    # stored): NeuronCore-v2 "over 90 TFLOPS of FP16/BF16" -> Trainium 2 x 90 = 180
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v2.html);
    # NeuronCore-v3 "158 cFP8 TFLOPS, and 79 BF16/FP16/TF32 TFLOPS" -> Trainium2 8 x 79 = 632, 8 x 158 = 1,264
    # (.../about-neuron/arch/neuron-hardware/neuron-core-v3.html). Its "sparse" figure is M:N up to 4x: no 2:4 peak.
    ("Trainium", "bf16", 180, None),
    ("Trainium2", "bf16", 632, None),
    ("Trainium2", "fp8", 1264, None),
]


@pytest.mark.parametrize(("name", "dtype", "dense", "sparse"), DATASHEET)
def test_datasheet_values(name, dtype, dense, sparse):
    peak = hw.get_peak(name, dtype)
    assert peak.accelerator == name
    assert peak.tflops == pytest.approx(dense)
    assert peak.sparse is False
    if sparse is None:
        with pytest.raises(hw.DtypeNotAvailableError):
            hw.get_peak(name, dtype, sparse=True)
    else:
        sp = hw.get_peak(name, dtype, sparse=True)
        assert sp.tflops == pytest.approx(sparse)
        assert sp.sparse is True


def test_h100_bf16_reference_and_flops():
    peak = hw.get_peak("H100")
    assert (peak.accelerator, peak.dtype, peak.per, peak.sparse) == ("H100 SXM", "bf16", "package", False)
    assert peak.flops == pytest.approx(989.4e12)
    assert peak.source.startswith("https://www.nvidia.com/")
    assert peak.read_on == "2026-11-29"
    assert "700 W" in peak.basis


def test_volta_has_no_bf16_and_lists_what_it_has():
    with pytest.raises(hw.DtypeNotAvailableError) as err:
        hw.get_peak("Tesla V100-SXM2-32GB", "bf16")
    assert err.value.available == ("fp64", "fp32", "fp16")
    assert "fp16" in str(err.value) and "V100 SXM2" in str(err.value)


REQUIRED = [
    "V100", "A100 SXM", "A100 PCIe", "A10", "A10G", "L4", "L40S", "H100 SXM", "H100 PCIe", "H100 NVL",
    "H800", "H20", "H200 SXM", "H200 NVL", "GH200", "B200", "B300", "GB200", "GB300", "RTX 4090",
    "MI250X", "MI300X", "MI325X", "MI355X", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "TPU v7",
    "Gaudi 2", "Gaudi 3", "Trainium", "Trainium2",
]


@pytest.mark.parametrize("name", REQUIRED)
def test_required_accelerators_present(name):
    acc = hw.resolve(name)
    assert acc.vendor in {"NVIDIA", "AMD", "Google", "Intel", "AWS"}


@pytest.mark.parametrize("name", ["A10G", "H20"])
def test_accelerators_without_a_vendor_datasheet_have_no_peak(name):
    # No vendor datasheet publishes A10G or H20 peaks: the names resolve, but nothing is guessed.
    acc = hw.resolve(name)
    assert acc.dtypes() == []
    assert "no peak is stored" in acc.note
    with pytest.raises(hw.DtypeNotAvailableError, match="dtypes available: none"):
        hw.get_peak(name)
    assert all(row["name"] != acc.name for row in hw.peak_table())


# --- the whole table -------------------------------------------------------------------------


def test_every_row_is_sourced_dated_and_dense_below_sparse():
    rows = hw.peak_table()
    assert len(rows) > 150
    for row in rows:
        assert row["dense_tflops"] > 0
        assert str(row["source"]).startswith("https://")
        assert row["read_on"] in {"2026-11-29", "2026-12-01", "2026-12-02"}  # first read / re-checked / added
        assert row["basis"]
        assert row["unit"] == ("TOPS" if row["dtype"] == "int8" else "TFLOP/s")
        if row["sparse_tflops"] is not None:
            assert row["dense_tflops"] < row["sparse_tflops"]


def test_sparse_is_twice_dense_for_2to4_vendors():
    # NVIDIA and AMD sparse figures are 2:4 structured sparsity: twice the dense rate. A ratio of 1 would
    # mean a sparse (asterisk) figure was stored as dense. (The L40S page prints 362.05 | 733, hence 3 %;
    # Blackwell Ultra prints dense FP4 as 15 PF against 20 PF sparse, both vendor figures.)
    for row in hw.peak_table():
        if (row["name"], row["dtype"]) in {("B300", "fp4"), ("GB300", "fp4")}:
            assert row["dense_tflops"] / row["sparse_tflops"] == pytest.approx(0.75)
        elif row["vendor"] in {"NVIDIA", "AMD"} and row["sparse_tflops"] is not None:
            ratio = row["sparse_tflops"] / row["dense_tflops"]
            assert ratio == pytest.approx(2, rel=0.03), row


def test_hopper_and_later_tensor_dtypes_all_have_sparse_figures():
    for name in ["H100 SXM", "H100 PCIe", "H100 NVL", "H200 SXM", "GH200", "B200", "GB200", "L4", "L40S"]:
        acc = hw.resolve(name)
        for dtype in ("tf32", "bf16", "fp16", "fp8"):
            assert dtype in acc.sparse, (name, dtype)


def test_peak_table_filters_and_keys():
    rows = hw.peak_table(vendor="google", dtype="int8")
    assert {r["name"] for r in rows} == {"TPU v4", "TPU v5e", "TPU v5p", "TPU v6e"}
    expected = {"name", "vendor", "dtype", "dense_tflops", "sparse_tflops", "devices_per_package", "basis",
                "source", "read_on"}
    assert expected <= set(rows[0])
    fp4 = {r["name"] for r in hw.peak_table(dtype="fp4")}
    # FP4 exists from Blackwell (datacenter and GeForce RTX 5090), CDNA 4 (MI350X, MI355X) and Trainium3 (MXFP4) on.
    assert fp4 == {"B100", "B200", "B300", "GB200", "GB300", "RTX 5090", "MI350X", "MI355X", "Trainium3"}
    with pytest.raises(hw.RegistryError, match="dtype"):
        hw.peak_table(dtype="fp12")


def test_accelerators_filters():
    amd = hw.accelerators(vendor="AMD")
    assert [a.name for a in amd][:2] == ["MI250X", "MI250"]
    assert all(a.vendor == "AMD" for a in amd)
    assert all("fp8" in a.dense for a in hw.accelerators(dtype="fp8"))
    assert hw.resolve("H100").dtypes() == ["fp64", "fp64_tensor", "fp32", "tf32", "bf16", "fp16", "fp8", "int8"]


# --- aliases and most-specific-wins ----------------------------------------------------------

DEVICE_STRINGS = [
    # torch.cuda.get_device_name() / rocm / JAX device_kind strings
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),
    ("NVIDIA H100 PCIe", "H100 PCIe"),
    ("NVIDIA H100 NVL", "H100 NVL"),
    ("NVIDIA L40S", "L40S"),
    ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
    ("NVIDIA A100-SXM4-40GB", "A100 SXM"),
    ("NVIDIA A100-PCIE-40GB", "A100 PCIe"),
    ("NVIDIA A100 80GB PCIe", "A100 PCIe"),
    ("Tesla V100-SXM2-32GB", "V100 SXM2"),
    ("Tesla V100-PCIE-16GB", "V100 PCIe"),
    ("NVIDIA A10G", "A10G"),
    ("NVIDIA A10", "A10"),
    ("NVIDIA L4", "L4"),
    ("NVIDIA H200", "H200 SXM"),
    ("NVIDIA H200 NVL", "H200 NVL"),
    ("NVIDIA GH200 480GB", "GH200"),
    ("NVIDIA B200", "B200"),
    ("NVIDIA B300 SXM6 AC", "B300"),
    ("NVIDIA GB200", "GB200"),
    ("NVIDIA GB300", "GB300"),
    ("NVIDIA GeForce RTX 4090", "RTX 4090"),
    ("AMD Instinct MI300X", "MI300X"),
    ("AMD Instinct MI325X", "MI325X"),
    ("AMD Instinct MI355X", "MI355X"),
    ("AMD Instinct MI250X", "MI250X"),
    ("AMD Instinct MI250X/MI250", "MI250X"),
    ("TPU v4", "TPU v4"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5e", "TPU v5e"),
    ("TPU v5", "TPU v5p"),
    ("TPU v5p", "TPU v5p"),
    ("TPU v6 lite", "TPU v6e"),
    ("TPU v6e", "TPU v6e"),
    ("Trillium", "TPU v6e"),
    ("TPU7x", "TPU v7"),
    ("Ironwood", "TPU v7"),
    ("GAUDI2", "Gaudi 2"),
    ("Intel(R) Gaudi(R) 3 AI Accelerator", "Gaudi 3"),
    ("trn1", "Trainium"),
    ("Trn2", "Trainium2"),
]


@pytest.mark.parametrize(("text", "canonical"), DEVICE_STRINGS)
def test_device_strings_resolve(text, canonical):
    assert hw.resolve(text).name == canonical


# (more specific, less specific): each must resolve to itself, also inside a longer device string.
SPECIFIC_PAIRS = [
    ("GB200", "B200"),
    ("GH200", "H200"),
    ("H200", "H20"),
    ("L40S", "L4"),
    ("A100", "A10G"),
    ("A10G", "A10"),
    ("A100", "A10"),
    ("H100 NVL", "H100"),
    ("H100 PCIe", "H100"),
    ("GB300", "B300"),
    ("MI325X", "MI300X"),
]


@pytest.mark.parametrize(("specific", "general"), SPECIFIC_PAIRS)
def test_most_specific_name_wins(specific, general):
    a, b = hw.resolve(specific), hw.resolve(general)
    assert a.name != b.name
    # Filler words around the name; no memory size (a stated size is checked against the part: see
    # tests/test_hardware_memory.py).
    assert hw.resolve(f"NVIDIA {specific} PG520 rev 1").name == a.name
    assert hw.resolve(f"nvidia-{general.lower()}-xyz").name == b.name


def test_bare_names_mean_the_sxm_part():
    assert hw.resolve("H100").name == "H100 SXM"
    assert hw.resolve("NVIDIA H100 SXM5 80GB").name == "H100 SXM"
    # 94 GB is not a size the H100 SXM comes with (NVIDIA's H100 page: SXM 80 GB, NVL 94 GB): refused.
    with pytest.raises(hw.RefusedNameError, match="H100 NVL"):
        hw.resolve("NVIDIA H100 SXM5 94GB")
    assert hw.resolve("H200").name == "H200 SXM"
    assert hw.resolve("A100").name == "A100 SXM"
    assert hw.resolve("V100").name == "V100 SXM2"


def test_normalise_name():
    assert hw.normalise_name("NVIDIA A100-SXM4-80GB") == "a100 sxm4 80gb"
    assert hw.normalise_name("  AMD Instinct MI250X/MI250 ") == "mi250x mi250"
    assert hw.normalise_name("Intel(R) Gaudi(R) 2") == "gaudi 2"


SEPARATORS = st.sampled_from([" ", "-", "_", "/", "  ", " - "])
SHIPPED = hw.Registry(env=False).accelerators()


@st.composite
def spelled_alias(draw):
    """A known name or alias in random case, with random separators and an optional vendor prefix."""
    acc = draw(st.sampled_from(SHIPPED))
    label = draw(st.sampled_from((acc.name, *acc.aliases)))
    tokens = hw.normalise_name(label).split()
    text = draw(SEPARATORS).join(tokens)
    text = "".join(c.upper() if draw(st.booleans()) else c for c in text)
    prefix = draw(st.sampled_from(["", "NVIDIA ", "AMD Instinct ", "Google Cloud ", "Intel "]))
    return prefix + text, acc.name


@settings(max_examples=300, deadline=None)
@given(spelled_alias())
def test_aliases_resolve_whatever_the_spelling(case):
    text, canonical = case
    assert hw.resolve(text).name == canonical


# --- errors ----------------------------------------------------------------------------------


def test_unknown_accelerator_suggests_close_matches():
    with pytest.raises(hw.UnknownAcceleratorError) as err:
        hw.get_peak("H10O")
    assert "H100 SXM" in err.value.suggestions
    assert "H100 SXM" in str(err.value)
    assert isinstance(err.value, hw.RegistryError) and isinstance(err.value, ValueError)
    assert not isinstance(err.value, KeyError)


def test_unknown_lookalike_is_not_silently_matched():
    # An "L40G" is neither the L40 nor the L40S nor the L4: no fallback, but the family is suggested.
    with pytest.raises(hw.UnknownAcceleratorError) as err:
        hw.resolve("NVIDIA L40G")
    assert {"L40", "L40S", "L4"} <= set(err.value.suggestions)


def test_unknown_with_nothing_close_lists_vendors():
    with pytest.raises(hw.UnknownAcceleratorError, match="known vendors"):
        hw.resolve("quantum annealer")


def test_ambiguous_name_is_an_error():
    reg = hw.Registry(builtin=False, env=False)
    for name in ("Foo", "Bar"):
        reg.register(name, vendor="X", peaks={"bf16": 1.0}, basis="b", source="https://example.com/a",
                     read_on="2026-11-29")
    with pytest.raises(hw.UnknownAcceleratorError, match="ambiguous"):
        reg.resolve("foo bar")


def test_sparse_only_when_asked_and_only_where_published():
    dense = hw.get_peak("H100", "bf16")
    sparse = hw.get_peak("H100", "bf16", sparse=True)
    assert (dense.sparse, sparse.sparse) == (False, True)
    assert sparse.tflops == pytest.approx(2 * dense.tflops, rel=1e-3)
    assert "sparse" in sparse.describe()
    with pytest.raises(hw.DtypeNotAvailableError, match="only dense") as err:
        hw.get_peak("TPU v5p", "bf16", sparse=True)
    assert err.value.available == ()
    with pytest.raises(hw.DtypeNotAvailableError) as err:
        hw.get_peak("H100", "fp64", sparse=True)
    assert "bf16" in err.value.available


def test_dtype_and_per_are_validated():
    with pytest.raises(hw.RegistryError) as err:
        hw.get_peak("H100", "bf17")
    message = str(err.value)
    assert "dtype" in message and "fp64_tensor" in message and "'bf17'" in message
    with pytest.raises(hw.RegistryError) as err:
        hw.get_peak("H100", per="chip")
    assert "per" in str(err.value) and "'package'" in str(err.value) and "'chip'" in str(err.value)
    with pytest.raises(hw.RegistryError, match="sparse"):
        hw.get_peak("H100", sparse="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize("spelling", ["bf16", "BF16", "bfloat16", "torch.bfloat16", " Bf16 "])
def test_dtype_spellings(spelling):
    assert hw.get_peak("A100", spelling).dtype == "bf16"


# --- per package / per device ----------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype", "devices"), [
    ("MI250X", "bf16", 2),       # 2 GCDs, each a PyTorch device
    ("TPU v7", "fp8", 2),        # TPU7x chip = 2 JAX devices
    ("Trainium", "bf16", 2),     # 2 NeuronCore-v2
    ("Trainium2", "bf16", 4),    # 8 NeuronCore-v3 at LNC=2
    ("H100 SXM", "bf16", 1),
    ("GB200", "bf16", 1),        # per-GPU row
])
def test_per_device_divides_by_devices_per_package(name, dtype, devices):
    package = hw.get_peak(name, dtype)
    device = hw.get_peak(name, dtype, per="device")
    assert package.per == "package" and device.per == "device"
    assert package.devices_per_package == device.devices_per_package == devices
    assert device.tflops * devices == pytest.approx(package.tflops)


def test_mi250x_per_device_value_and_description():
    peak = hw.get_peak("AMD Instinct MI250X", per="device")
    assert peak.tflops == pytest.approx(191.5)
    assert "per device (1/2 of a package)" in peak.describe()


def test_describe_is_one_line_with_value_basis_source_date():
    text = hw.get_peak("H100").describe()
    assert "\n" not in text
    assert text.startswith("H100 SXM bf16 dense: 989.4 TFLOP/s per package (SXM5 700 W")
    assert "source: https://www.nvidia.com/en-us/data-center/h100/" in text and "read 2026-11-29" in text
    assert "TOPS" in hw.get_peak("H100", "int8").describe()


# --- CSV loading and validation ---------------------------------------------------------------


def test_load_csv_adds_accelerators(tmp_path):
    path = write_csv(tmp_path, "# a comment line\n\n" + GOOD_ROW)
    assert hw.load_csv(path) == ["Acme X1"]
    peak = hw.get_peak("acme-x1 rev b")
    assert (peak.accelerator, peak.tflops) == ("Acme X1", 100)
    assert hw.get_peak("Acme X1", sparse=True).tflops == 200


def test_csv_row_without_source_is_refused_with_file_and_line(tmp_path):
    path = write_csv(tmp_path, GOOD_ROW + "Acme X2,Acme,bf16,100,,TFLOP/s,1,,card,,2026-11-29,\n")
    with pytest.raises(hw.RegistryError) as err:
        hw.Registry(builtin=False, env=False).load_csv(path)
    assert f"{path}:3" in str(err.value) and "'source'" in str(err.value)


@pytest.mark.parametrize(("row", "field"), [
    ("Acme X2,Acme,bf16,100,,TFLOP/s,1,,card,https://example.com,,\n", "read_on"),
    ("Acme X2,Acme,bf16,100,,TFLOP/s,1,,card,https://example.com,29/11/2026,\n", "read_on"),
    ("Acme X2,Acme,bf16,100,,TFLOP/s,1,,card,example.com/spec,2026-11-29,\n", "source"),
    ("Acme X2,Acme,bf16,100,,TFLOP/s,1,,,https://example.com,2026-11-29,\n", "basis"),
    ("Acme X2,Acme,bf16,200,100,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "sparse"),
    ("Acme X2,Acme,bf16,200,200,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "sparse"),
    ("Acme X2,Acme,int8,200,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "unit"),
    ("Acme X2,Acme,bf17,200,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "dtype"),
    ("Acme X2,Acme,bf16,,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "dense"),
    ("Acme X2,Acme,bf16,-3,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "dense"),
    ("Acme X2,Acme,bf16,100,,TFLOP/s,0,,card,https://example.com,2026-11-29,\n", "devices_per_package"),
    ("Acme X2,,bf16,100,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "vendor"),
    ("Acme X1,Acme,bf16,100,,TFLOP/s,1,,card,https://example.com,2026-11-29,\n", "dtype"),  # duplicate
    ("Acme X1,Acme,fp8,100,,TFLOP/s,2,,card,https://example.com,2026-11-29,\n", "devices_per_package"),
])
def test_csv_validation_names_line_and_field(tmp_path, row, field):
    path = write_csv(tmp_path, GOOD_ROW + row)
    with pytest.raises(hw.RegistryError) as err:
        hw.Registry(builtin=False, env=False).load_csv(path)
    assert f"{path}:3" in str(err.value)
    assert f"'{field}'" in str(err.value)


def test_csv_bad_header_and_missing_file(tmp_path):
    path = write_text(tmp_path, "bad.csv", "name,vendor,dtype,dense,basis,read_on,sparce\n")
    with pytest.raises(hw.RegistryError, match=r"bad.csv:1: bad header.*source.*sparce"):
        hw.Registry(builtin=False, env=False).load_csv(path)
    with pytest.raises(hw.RegistryError, match="cannot read"):
        hw.load_csv(tmp_path / "missing.csv")


def test_csv_existing_name_needs_replace(tmp_path):
    path = write_csv(tmp_path, GOOD_ROW.replace("Acme X1,", "H100 SXM,").replace("ACME-X1 Rev B", ""))
    with pytest.raises(hw.RegistryError, match="already exists"):
        hw.load_csv(path)
    assert hw.get_peak("H100").tflops == pytest.approx(989.4)
    assert hw.load_csv(path, replace=True) == ["H100 SXM"]
    assert hw.get_peak("H100 SXM").tflops == 100
    assert hw.get_peak("H100 PCIe").tflops == pytest.approx(756.5)


def test_shipped_csv_loads_cleanly():
    reg = hw.Registry(env=False)
    assert len(reg) >= 35
    assert hw.BUILTIN_CSV.name == "accelerators.csv" and hw.BUILTIN_CSV.is_file()


# --- register_accelerator ----------------------------------------------------------------------


def test_register_accelerator():
    acc = hw.register_accelerator(
        "Acme X9", vendor="Acme", peaks={"bf16": 800, "int8": 1600}, sparse_peaks={"bf16": 1600},
        aliases=("ACME X9 OAM",), devices_per_package=2, basis="OAM 700 W", source="https://example.com/x9",
        read_on="2026-11-29", note="Team measurement sheet.")
    assert acc.dtypes() == ["bf16", "int8"]
    peak = hw.get_peak("acme-x9-oam", per="device")
    assert (peak.accelerator, peak.tflops, peak.per) == ("Acme X9", 400, "device")
    assert hw.get_peak("Acme X9", sparse=True).tflops == 1600
    assert "Acme X9" in [a.name for a in hw.accelerators(vendor="acme")]


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"source": ""}, "source"),
    ({"read_on": ""}, "read_on"),
    ({"read_on": "Nov 2026"}, "read_on"),
    ({"basis": ""}, "basis"),
    ({"peaks": {}}, "peaks"),
    ({"peaks": {"bf16": "fast"}}, "peaks"),
    ({"sparse_peaks": {"fp8": 10.0}}, "sparse_peaks"),
    ({"sparse_peaks": {"bf16": 5.0}}, "sparse"),
    ({"devices_per_package": 0}, "devices_per_package"),
])
def test_register_accelerator_is_validated_like_csv(kwargs, field):
    args = dict(vendor="Acme", peaks={"bf16": 10.0}, basis="card", source="https://example.com/y",
                read_on="2026-11-29")
    args.update(kwargs)
    with pytest.raises(hw.RegistryError) as err:
        hw.register_accelerator("Acme Y", **args)
    assert "register_accelerator('Acme Y')" in str(err.value)
    assert f"'{field}'" in str(err.value)


def test_register_existing_name_or_alias_needs_replace():
    common = dict(vendor="NVIDIA", basis="capped at 500 W", source="https://example.com/cap", read_on="2026-11-29")
    with pytest.raises(hw.RegistryError, match="already exists"):
        hw.register_accelerator("h100 sxm", peaks={"bf16": 700.0}, **common)
    with pytest.raises(hw.RegistryError, match="already names 'H100 SXM'"):
        hw.register_accelerator("Our H100", peaks={"bf16": 700.0}, aliases=["NVIDIA H100 80GB HBM3"], **common)
    hw.register_accelerator("H100 SXM", peaks={"bf16": 700.0}, aliases=["H100"], replace=True, **common)
    assert hw.get_peak("NVIDIA H100").tflops == 700.0
    with pytest.raises(hw.DtypeNotAvailableError):
        hw.get_peak("H100", "fp8")  # the replacement has only what it was given


# --- environment variable --------------------------------------------------------------------


def test_env_var_csvs_load_on_first_use(tmp_path, monkeypatch):
    a = write_csv(tmp_path, GOOD_ROW, "a.csv")
    b = write_csv(tmp_path, GOOD_ROW.replace("Acme X1", "Acme X2").replace("ACME-X1 Rev B", ""), "b.csv")
    monkeypatch.setenv(hw.ENV_VAR, os.pathsep.join([str(a), "", str(b)]))
    hw._reset_registry()
    assert hw.resolve("acme x1").name == "Acme X1"
    assert hw.get_peak("Acme X2").tflops == 100
    assert hw.get_peak("H100").tflops == pytest.approx(989.4)


def test_env_var_errors_name_the_variable_and_file(tmp_path, monkeypatch):
    monkeypatch.setenv(hw.ENV_VAR, str(tmp_path / "nope.csv"))
    hw._reset_registry()
    with pytest.raises(hw.RegistryError, match=hw.ENV_VAR):
        hw.get_peak("H100")
    bad = write_csv(tmp_path, "Acme X3,Acme,bf16,100,,TFLOP/s,1,,card,,2026-11-29,\n")
    monkeypatch.setenv(hw.ENV_VAR, str(bad))
    hw._reset_registry()
    with pytest.raises(hw.RegistryError, match=r"team.csv:2: field 'source'"):
        hw.get_peak("H100")


# --- import cost -----------------------------------------------------------------------------


def test_importing_hardware_does_not_import_pandas():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = "import mfu_toolkit.hardware, sys; assert 'pandas' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env)


def test_hardware_module_alone_uses_only_the_standard_library():
    code = (
        "import importlib.util, sys\n"
        f"spec = importlib.util.spec_from_file_location('hw_alone', {str(REPO / 'mfu_toolkit' / 'hardware.py')!r})\n"
        "m = importlib.util.module_from_spec(spec); sys.modules['hw_alone'] = m; spec.loader.exec_module(m)\n"
        "assert m.get_peak('H100').tflops == 989.4\n"
        "bad = {'numpy', 'pandas', 'seaborn', 'matplotlib'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


# --- memory bandwidth -------------------------------------------------------------------------
# Expected values are the datasheet figures as printed (decimal TB/s): H100 SXM "3.35TB/s" and
# H100 NVL "3.9TB/s" (nvidia.com/en-us/data-center/h100), A100 80GB SXM "2,039GB/s" (…/a100),
# MI300X "5.3 TB/s" (amd.com MI300X page), TPU v5e "819 GBps" (cloud.google.com/tpu/docs/v5e),
# L40S "864GB/s" (…/l40s).
@pytest.mark.parametrize("name, tb_per_s", [
    ("H100 SXM", 3.35), ("NVIDIA H100 80GB HBM3", 3.35), ("H100 NVL", 3.9), ("A100 SXM", 2.039),
    ("MI300X", 5.3), ("TPU v5e", 0.819), ("L40S", 0.864), ("L4", 0.3),
])
def test_memory_bandwidth_matches_the_datasheet(name, tb_per_s):
    bw = hw.get_memory_bandwidth(name)
    assert bw.tb_per_s == tb_per_s
    assert bw.bytes_per_s == pytest.approx(tb_per_s * 1e12)
    assert bw.source.startswith("https://") and bw.read_on


def test_every_bandwidth_row_names_a_registry_accelerator_and_a_source():
    rows = hw.load_bandwidth_csv(REPO / "mfu_toolkit" / "memory_bandwidth.csv")
    assert len(rows) >= 25
    assert len({r.accelerator for r in rows}) == len(rows), "one row per accelerator"
    for r in rows:
        assert r.accelerator in hw.resolve(r.accelerator).name
        assert r.source.startswith("https://") and r.memory


def test_bandwidth_is_never_a_default():
    with pytest.raises(hw.RegistryError, match="no memory bandwidth with a source for 'RTX 4090'"):
        hw.get_memory_bandwidth("RTX 4090")  # GeForce: the registry has its peaks, the table no bandwidth
    with pytest.raises(hw.UnknownAcceleratorError):
        hw.get_memory_bandwidth("H1OO")


@pytest.mark.parametrize("row, field", [
    ("H100 SXM,HBM3,3.35,TB/s,,2026-12-01,\n", "source"),
    ("H100 SXM,HBM3,3.35,GB/s,https://example.com,2026-12-01,\n", "unit"),
    ("H100 SXM,HBM3,-1,TB/s,https://example.com,2026-12-01,\n", "bandwidth"),
    ("Acme Z9,HBM3,1,TB/s,https://example.com,2026-12-01,\n", "name"),
    ("H100 SXM,HBM3,1,TB/s,https://example.com,01/12/2026,\n", "read_on"),
])
def test_a_bad_bandwidth_row_names_file_line_and_field(tmp_path, row, field):
    path = write_text(tmp_path, "bw.csv", "name,memory,bandwidth,unit,source,read_on,note\n" + row)
    with pytest.raises(hw.RegistryError, match=rf"bw\.csv:2: field '{field}'"):
        hw.load_bandwidth_csv(path)
