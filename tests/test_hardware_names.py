"""The registry's newer rows and its names: datasheet pins, names that must not become another product,
MIG slices, TPU device kinds, Trainium matrix-engine peaks, close-match suggestions and ``mfu accelerators``.

Every pinned number quotes the vendor's printed figure and where it is printed; where the vendor prints
only a "with sparsity" figure, the dense pin is half of it.
"""

from __future__ import annotations

import pytest
from _registry import fresh_registry, shipped_without  # noqa: F401

from mfu_toolkit import hardware as hw
from mfu_toolkit.cli import main

# --- datasheet values of the added accelerators ----------------------------------------------

# (accelerator, dtype, dense, sparse or None)
ADDED = [
    # NVIDIA T4 datasheet (https://www.nvidia.com/en-us/data-center/tesla-t4/): FP32 8.1 TFLOPS, Mixed
    # Precision (FP16/FP32) 65 TFLOPS, INT8 130 TOPS; no sparsity on Turing.
    ("T4", "fp32", 8.1, None),
    ("T4", "fp16", 65, None),
    ("T4", "int8", 130, None),
    # NVIDIA V100 datasheet, V100S PCIe column (https://www.nvidia.com/en-us/data-center/v100/): double 8.2,
    # single 16.4, Tensor Performance 130.
    ("V100S PCIe", "fp64", 8.2, None),
    ("V100S PCIe", "fp32", 16.4, None),
    ("V100S PCIe", "fp16", 130, None),
    # NVIDIA A30 datasheet (https://www.nvidia.com/en-us/data-center/products/a30-gpu/): FP64 5.2, FP64 Tensor
    # 10.3, FP32 10.3, TF32 82 | 165*, BF16 165 | 330*, FP16 165 | 330*, INT8 330 | 661* TOPS.
    ("A30", "fp64", 5.2, None),
    ("A30", "fp64_tensor", 10.3, None),
    ("A30", "tf32", 82, 165),
    ("A30", "bf16", 165, 330),
    ("A30", "int8", 330, 661),
    # NVIDIA A40 datasheet (https://www.nvidia.com/en-us/data-center/a40/): FP32 37.4, TF32 74.8 | 149.6*,
    # BF16 (FP32 accumulate) 149.7 | 299.4*, FP16 149.7 | 299.4*, INT8 299.3 | 598.6*.
    ("A40", "fp32", 37.4, None),
    ("A40", "tf32", 74.8, 149.6),
    ("A40", "bf16", 149.7, 299.4),
    ("A40", "int8", 299.3, 598.6),
    # NVIDIA L40 datasheet (https://www.nvidia.com/en-us/data-center/l40/): FP32 90.5, TF32 90.5 | 181*,
    # BF16 181.05 | 362.1*, FP16 181.05 | 362.1*, FP8 362 | 724*, INT8 362 | 724*.
    ("L40", "fp32", 90.5, None),
    ("L40", "tf32", 90.5, 181),
    ("L40", "bf16", 181.05, 362.1),
    ("L40", "fp8", 362, 724),
    # GA102 whitepaper v2, RTX A6000 appendix
    # (https://www.nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-architecture-whitepaper-v2.pdf): FP32 38.7,
    # TF32 77.4 / 154.8, BF16 and FP16 (FP32 accumulate) 154.8 / 309.7 (the datasheet's "309.7 Tensor performance").
    ("RTX A6000", "fp32", 38.7, None),
    ("RTX A6000", "tf32", 77.4, 154.8),
    ("RTX A6000", "bf16", 154.8, 309.7),
    ("RTX A6000", "int8", 309.7, 619.4),
    # Same whitepaper, Appendix A, GeForce RTX 3090: FP32 35.6; FP16/BF16 with FP32 accumulate 71 / 142
    # (FP16 accumulate 142 / 284); TF32 35.6 / 71; INT8 284 / 568.
    ("RTX 3090", "fp32", 35.6, None),
    ("RTX 3090", "bf16", 71, 142),
    ("RTX 3090", "fp16", 71, 142),
    ("RTX 3090", "tf32", 35.6, 71),
    ("RTX 3090", "int8", 284, 568),
    # RTX Blackwell whitepaper, RTX 5090 column
    # (https://images.nvidia.com/aem-dam/Solutions/geforce/blackwell/nvidia-rtx-blackwell-gpu-architecture.pdf):
    # FP32 104.8; FP16/BF16 with FP32 accumulate 209.5 / 419 (FP16 accumulate 419 / 838); FP4 1,676 / 3,352
    # (the "3,352 AI TOPS" headline of https://www.nvidia.com/en-us/geforce/graphics-cards/50-series/).
    ("RTX 5090", "fp32", 104.8, None),
    ("RTX 5090", "bf16", 209.5, 419),
    ("RTX 5090", "fp4", 1676, 3352),
    # NVIDIA RTX 6000 Ada datasheet (https://www.nvidia.com/en-us/design-visualization/rtx-6000/): FP32 91.1,
    # Tensor performance 1,457 TFLOPS (FP8 with sparsity) -> 728.5 dense.
    ("RTX 6000 Ada", "fp32", 91.1, None),
    ("RTX 6000 Ada", "fp8", 728.5, 1457),
    # NVIDIA Blackwell technical brief, HGX B100 per GPU (https://resources.nvidia.com/en-us-blackwell-architecture):
    # FP4 14 PF*, FP8 7 PF*, INT8 7 POPS*, FP16/BF16 3.5 PF*, TF32 1.8 PF*, FP64 Tensor 30 TF (dense); 700 W.
    ("B100", "fp4", 7000, 14000),
    ("B100", "fp8", 3500, 7000),
    ("B100", "bf16", 1750, 3500),
    ("B100", "tf32", 900, 1800),
    ("B100", "fp64_tensor", 30, None),
    # AMD MI210 page (https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html): FP64 vector 22.6,
    # FP64 matrix 45.3, FP32 vector 22.6, FP16 181.0, BF16 181.0, INT8 181.0 TOPS; no sparsity.
    ("MI210", "fp64", 22.6, None),
    ("MI210", "fp64_tensor", 45.3, None),
    ("MI210", "fp32", 22.6, None),
    ("MI210", "bf16", 181, None),
    ("MI210", "int8", 181, None),
    # AMD MI300A page (https://www.amd.com/en/products/accelerators/instinct/mi300/mi300a.html): FP64 vector 61.3,
    # FP64 matrix 122.6, TF32 490.3 (980.6 with structured sparsity), BF16 980.6 (1,961.2), FP8 1,961.2 (3,922.3).
    ("MI300A", "fp64", 61.3, None),
    ("MI300A", "fp64_tensor", 122.6, None),
    ("MI300A", "tf32", 490.3, 980.6),
    ("MI300A", "bf16", 980.6, 1961.2),
    ("MI300A", "fp8", 1961.2, 3922.3),
    # Google Cloud TPU system architecture page (https://cloud.google.com/tpu/docs/system-architecture-tpu-vm):
    # peak compute per chip, TPU v2 45 TFLOPS, TPU v3 123 TFLOPS (bf16).
    ("TPU v2", "bf16", 45, None),
    ("TPU v3", "bf16", 123, None),
    # Jouppi et al., "Ten Lessons From Three Generations Shaped Google's TPUv4i", ISCA 2021, Table 1
    # (https://doi.org/10.1109/ISCA52012.2021.00010): TPUv4i peak 138 TFLOPS bf16.
    ("TPU v4 lite", "bf16", 138, None),
    # AWS Neuron docs, NeuronCore-v2 "over 90 TFLOPS of FP16/BF16" per Tensor Engine, 2 per Inferentia2 chip
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/general/arch/neuron-hardware/neuron-core-v2.html).
    ("Inferentia2", "bf16", 180, None),
    ("Inferentia2", "fp16", 180, None),
    # NeuronCore-v4 Tensor Engine "315 MXFP8/MXFP4 TFLOPS ... 79 BF16/FP16/TF32 and 20 FP32", 8 per Trainium3
    # (https://awsdocs-neuron.readthedocs-hosted.com/en/latest/about-neuron/arch/neuron-hardware/neuron-core-v4.html).
    ("Trainium3", "bf16", 632, None),
    ("Trainium3", "tf32", 632, None),
    ("Trainium3", "fp8", 2520, None),
    ("Trainium3", "fp4", 2520, None),
    ("Trainium3", "fp32", 160, None),
]


@pytest.mark.parametrize(("name", "dtype", "dense", "sparse"), ADDED)
def test_added_datasheet_values(name, dtype, dense, sparse):
    peak = hw.get_peak(name, dtype)
    assert (peak.accelerator, peak.sparse) == (name, False)
    assert peak.tflops == pytest.approx(dense)
    assert peak.read_on == "2026-12-01" and peak.source.startswith("https://")
    if sparse is None:
        with pytest.raises(hw.DtypeNotAvailableError):
            hw.get_peak(name, dtype, sparse=True)
    else:
        assert hw.get_peak(name, dtype, sparse=True).tflops == pytest.approx(sparse)


# What torch.cuda.get_device_name(), ROCm, XPU and JAX print for them.
DEVICE_NAMES = [
    ("Tesla T4", "T4"),
    ("NVIDIA A40", "A40"),
    ("NVIDIA A30", "A30"),
    ("NVIDIA L40", "L40"),
    ("NVIDIA L20", "L20"),
    ("NVIDIA RTX A6000", "RTX A6000"),
    ("NVIDIA GeForce RTX 3090", "RTX 3090"),
    ("NVIDIA GeForce RTX 5090", "RTX 5090"),
    ("NVIDIA RTX 6000 Ada Generation", "RTX 6000 Ada"),
    ("NVIDIA A800-SXM4-80GB", "A800 SXM"),
    ("NVIDIA A800 80GB PCIe", "A800 PCIe"),
    ("Tesla V100S-PCIE-32GB", "V100S PCIe"),
    ("NVIDIA B100", "B100"),
    ("AMD Instinct MI210", "MI210"),
    ("AMD Instinct MI300A", "MI300A"),
    ("Intel(R) Data Center GPU Max 1550", "Data Center GPU Max 1550"),
    ("TPU v2", "TPU v2"),
    ("TPU v3", "TPU v3"),
    ("inf2.48xlarge", "Inferentia2"),
    ("trn1n.32xlarge", "Trainium"),
    ("trn2n", "Trainium2"),
    ("Trn3", "Trainium3"),
]


@pytest.mark.parametrize(("text", "canonical"), DEVICE_NAMES)
def test_device_names_of_added_accelerators(text, canonical):
    assert hw.resolve(text).name == canonical


def test_instance_names_resolve_to_their_chip_and_say_so():
    for instance, chip in [("trn1n", "Trainium"), ("trn2n", "Trainium2")]:
        acc = hw.resolve(instance)
        assert acc.name == chip
        assert "Instance names" in acc.note and instance in acc.note and "resolve to the chip" in acc.note


def test_tpu_v2_v3_and_max_1550_show_two_devices_per_package():
    # Google: a v2/v3 chip has 2 TensorCores, each a JAX device; Intel: 2 stacks, each an XPU device (FLAT mode).
    assert hw.get_peak("TPU v3", per="device").tflops == pytest.approx(123 / 2)
    assert hw.get_peak("TPU v2", per="device").tflops == pytest.approx(45 / 2)
    assert hw.resolve("Intel(R) Data Center GPU Max 1550").devices_per_package == 2


def test_geforce_rows_store_fp32_accumulate_and_say_so():
    for name in ("RTX 3090", "RTX 4090", "RTX 5090"):
        acc = hw.resolve(name)
        assert "FP32 accumulate" in acc.note, name
        assert "FP16 accumulate" in acc.notes["fp16"], name
    # GA102 whitepaper: FP16 with FP16 accumulate 142, with FP32 accumulate 71 on the RTX 3090: half.
    assert hw.get_peak("RTX 3090", "fp16").tflops == pytest.approx(142 / 2)


# --- names that must not become another product ----------------------------------------------


@pytest.mark.parametrize("text", ["NVIDIA GeForce RTX 4090 D", "NVIDIA GeForce RTX 4090 Laptop GPU"])
def test_4090_d_and_laptop_are_not_the_desktop_4090(text):
    # Desktop RTX 4090 (Ada whitepaper): 128 SMs, BF16 with FP32 accumulate 165.2. The 4090 D has 114 SMs, the
    # Laptop GPU is an AD103 with 76 SMs whose clock is set by the laptop maker: NVIDIA prints no per-dtype
    # tensor figures for either, so they resolve to their own rows, which refuse with the reason.
    acc = hw.resolve(text)
    assert acc.name != "RTX 4090" and acc.dtypes() == []
    with pytest.raises(hw.DtypeNotAvailableError, match="RTX 4090 row") as err:
        hw.get_peak(text)
    assert "165.2" not in str(err.value)
    assert "no peak is stored" in str(err.value)


@pytest.mark.parametrize("text", [
    # Real products (another SM count, clock or power than the listed card) ...
    "NVIDIA GeForce RTX 3090 Ti", "NVIDIA GeForce RTX 5090 Laptop GPU", "NVIDIA GeForce RTX 5090 D",
    # ... and the other variant words of the rule, on made-up names.
    "NVIDIA GeForce RTX 3090 SUPER", "NVIDIA GeForce RTX 3090 Max-Q", "NVIDIA L4 Mobile",
])
def test_variants_of_listed_products_are_refused(text):
    with pytest.raises(hw.RefusedNameError) as err:
        hw.resolve(text)
    assert "variant" in str(err.value) and err.value.suggestions == ()
    assert text not in hw.Registry(env=False)


MIG_SLICES = [
    # (device name, GPU, compute slices used, slices of the whole GPU). NVIDIA MIG user guide: A100/H100 have
    # 7 compute slices (profile "<n>g.<m>gb" uses n of them), A30 has 4.
    ("NVIDIA A100-SXM4-40GB MIG 3g.20gb", "A100 SXM", 3, 7),
    ("NVIDIA H100 80GB HBM3 MIG 1g.10gb", "H100 SXM", 1, 7),
    ("NVIDIA H100 80GB HBM3 MIG 7g.80gb", "H100 SXM", 7, 7),
    ("NVIDIA A30 MIG 2g.12gb", "A30", 2, 4),
]


@pytest.mark.parametrize(("text", "gpu", "used", "total"), MIG_SLICES)
def test_mig_slices_are_refused_naming_the_slice(text, gpu, used, total):
    with pytest.raises(hw.RefusedNameError) as err:
        hw.get_peak(text)
    message = str(err.value)
    assert f"{used} of {gpu}'s {total} compute slices" in message
    assert "register_accelerator(" in message and "peak_flops_per_accelerator=" in message
    assert err.value.suggestions == ()  # never the whole GPU
    assert isinstance(err.value, hw.UnknownAcceleratorError)


def test_mig_slice_refusal_counts_how_far_the_whole_gpu_would_be_off():
    # 3g.20gb on an A100: 3 of 7 slices, so the whole-GPU peak understates MFU about 7/3 = 2.3x.
    with pytest.raises(hw.RefusedNameError, match=r"about 2\.3x"):
        hw.resolve("NVIDIA A100-SXM4-40GB MIG 3g.20gb")


def test_a_registered_mig_slice_is_used():
    # The user states the slice's share (3/7 of the A100 datasheet's 312 BF16 TFLOPS here) under the exact name.
    hw.register_accelerator("NVIDIA A100-SXM4-40GB MIG 3g.20gb", vendor="NVIDIA", peaks={"bf16": 312 * 3 / 7},
                            basis="3 of 7 slices", source="https://example.com/our-mig-policy", read_on="2026-12-01")
    assert hw.get_peak("NVIDIA A100-SXM4-40GB MIG 3g.20gb").tflops == pytest.approx(133.7, rel=1e-3)
    with pytest.raises(hw.RefusedNameError):
        hw.resolve("NVIDIA A100-SXM4-40GB MIG 2g.10gb")  # another slice is still refused


def test_mfu_calc_refuses_a_mig_slice_in_one_line(capsys):
    code = None
    try:
        code = main(["calc", "--model-flops-per-step", "1e12", "--step-seconds", "1", "--gpus", "1",
                     "--accelerator", "NVIDIA H100 80GB HBM3 MIG 1g.10gb"])
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "MIG slice 1g.10gb" in err and "--peak-tflops-per-gpu" in err


# --- TPU device kinds -------------------------------------------------------------------------

# JAX's own mapping (jax/_src/pallas/mosaic/tpu_info.py, chip_version_from_device_kind,
# https://github.com/jax-ml/jax/blob/main/jax/_src/pallas/mosaic/tpu_info.py): "TPU v4 lite" -> TPU_V4I,
# "TPU v5e" | "TPU v5 lite" -> TPU_V5E, "TPU v5" | "TPU v5p" -> TPU_V5P, "TPU v6e" | "TPU v6 lite" -> TPU_V6E.
TPU_KINDS = [
    ("TPU v4 lite", "TPU v4 lite"),
    ("TPU v5 lite", "TPU v5e"),
    ("TPU v5", "TPU v5p"),
    ("TPU v6 lite", "TPU v6e"),
]


@pytest.mark.parametrize(("kind", "canonical"), TPU_KINDS)
def test_jax_device_kinds_resolve_to_the_right_chip(kind, canonical):
    assert hw.resolve(kind).name == canonical


def test_tpu_v4_lite_is_v4i_not_v4():
    # Cloud TPU v4 page: 275 TFLOPS per chip; TPUv4i (ISCA 2021, Table 1): 138 TFLOPS, 1 TensorCore.
    assert hw.get_peak("TPU v4 lite").tflops == pytest.approx(138)
    assert hw.get_peak("TPU v4").tflops == pytest.approx(275)
    assert "TPUv4i" in hw.resolve("TPU v4 lite").note


# --- Trainium: matrix-engine peaks, no 2:4 sparsity ------------------------------------------


def test_trainium_rows_hold_the_tensor_engine_peak_not_the_chip_total():
    # AWS trainium2.html prints the chip total over all engines, 667 BF16 / 1,299 FP8; neuron-core-v3.html
    # prints the Tensor Engine, 79 BF16 / 158 cFP8 per NeuronCore-v3, 8 per chip: 632 / 1,264, about 5 % lower.
    assert hw.get_peak("Trainium2", "bf16").tflops == pytest.approx(8 * 79)
    assert hw.get_peak("Trainium2", "fp8").tflops == pytest.approx(8 * 158)
    assert 8 * 79 / 667 == pytest.approx(0.95, abs=0.01)
    # Trainium3: trainium3.rst prints 671 BF16 for the chip, neuron-core-v4.rst 79 per Tensor Engine x 8 = 632.
    assert hw.get_peak("Trainium3", "bf16").tflops == pytest.approx(8 * 79)
    # Trainium: trainium.html 190 BF16 for the chip; neuron-core-v2.html "over 90" per Tensor Engine x 2 = 180.
    assert hw.get_peak("Trainium", "bf16").tflops == pytest.approx(2 * 90)
    for name in ("Trainium", "Trainium2", "Trainium3", "Inferentia2"):
        assert "Tensor Engine" in hw.resolve(name).note and "matmul" in hw.resolve(name).note
    # No Tensor Engine FP32 figure is printed for NeuronCore-v3, so none is stored.
    with pytest.raises(hw.DtypeNotAvailableError):
        hw.get_peak("Trainium2", "fp32")


@pytest.mark.parametrize("name", ["Trainium2", "Trainium3"])
def test_trainium_sparse_figure_is_not_a_2to4_peak(name):
    # AWS prints 2,563 (Trn2) / 2,517 (Trn3) "sparse TFLOPS" for M:N structured sparsity up to 4x (316 / 315 per
    # NeuronCore = 4 x 79): not the 2:4 sparsity the sparse column means, so sparse=True refuses, saying why.
    acc = hw.resolve(name)
    assert acc.sparse_dtypes() == []
    with pytest.raises(hw.DtypeNotAvailableError) as err:
        hw.get_peak(name, "bf16", sparse=True)
    assert "M:N" in str(err.value) and "not 2:4" in str(err.value)


# --- Blackwell: HGX / NVL72 pages against the Blackwell datasheet -----------------------------


@pytest.mark.parametrize(("name", "dtype", "page", "datasheet"), [
    # HGX page: B200 FP64 296 TF / 8 = 37, FP32 600 TF / 8 = 75, TF32 18 PF* / 8 -> 1,125 dense; Blackwell
    # datasheet (https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703): 40, 80, 2.2 PF* -> 1,100.
    ("B200", "fp64", 37, "40 TFLOPS"),
    ("B200", "fp32", 75, "80 TFLOPS"),
    ("B200", "tf32", 1125, "2.2 PF"),
    # GB200 NVL72 page: 80 TF FP64 and 160 TF FP32 per superchip -> 40 / 80 per GPU; datasheet: 45 / 90 per GPU.
    ("GB200", "fp64", 40, "45 TFLOPS"),
    ("GB200", "fp32", 80, "90 TFLOPS"),
])
def test_blackwell_page_and_datasheet_conflict_is_noted(name, dtype, page, datasheet):
    peak = hw.get_peak(name, dtype)
    assert peak.tflops == pytest.approx(page)
    assert "Conflict" in peak.note and datasheet in peak.note
    assert "https://nvdam.widen.net/s/wwnsxrhm2w/blackwell-datasheet-3384703" in peak.note
    assert peak.source.startswith("https://www.nvidia.com/en-us/data-center/")  # the page the stored value is from


# --- accelerators without a citable vendor figure ---------------------------------------------


@pytest.mark.parametrize(("text", "why"), [
    ("NVIDIA A800-SXM4-80GB", "withdrawn"),
    ("NVIDIA L20", "no product page or datasheet"),
    ("Intel(R) Data Center GPU Max 1550", "XMX"),
])
def test_no_vendor_figure_means_no_peak(text, why):
    acc = hw.resolve(text)
    assert acc.dtypes() == []
    with pytest.raises(hw.DtypeNotAvailableError, match="dtypes available: none") as err:
        hw.get_peak(text)
    assert why in str(err.value) and "register_accelerator()" in str(err.value)


# --- close-match suggestions -------------------------------------------------------------------


def test_tesla_t4_is_the_t4_and_never_suggests_a_tpu(tmp_path):
    assert hw.resolve("Tesla T4").name == "T4"
    # Without a T4 row, "Tesla" names NVIDIA: the digit match with TPU v4 is no reason to suggest it.
    reg = shipped_without(tmp_path, "T4")
    with pytest.raises(hw.UnknownAcceleratorError) as err:
        reg.resolve("Tesla T4")
    assert "TPU v4" not in err.value.suggestions
    assert all(reg.resolve(s).vendor == "NVIDIA" for s in err.value.suggestions)


@pytest.mark.parametrize(("text", "first"), [
    ("Tesla T-4", {"T4"}),
    ("A6000", {"RTX A6000"}),
    ("MI300", {"MI300X", "MI300A"}),
    ("H1000", {"H100 SXM", "H100 PCIe", "H100 NVL"}),
    ("Gaudi 4", {"Gaudi 2", "Gaudi 3"}),
])
def test_suggestions_prefer_the_same_vendor_and_family(text, first):
    with pytest.raises(hw.UnknownAcceleratorError) as err:
        hw.resolve(text)
    suggestions = err.value.suggestions
    assert set(suggestions[:len(first)]) == first
    vendors = {hw.resolve(s).vendor for s in suggestions}
    assert len(vendors) == 1, suggestions  # one vendor: never another vendor's chip on a digit match


def test_a_bare_number_with_an_unknown_family_suggests_nothing_far_off(tmp_path):
    reg = shipped_without(tmp_path, "T4")
    with pytest.raises(hw.UnknownAcceleratorError, match="known vendors") as err:
        reg.resolve("T4")
    assert err.value.suggestions == ()


# --- mfu accelerators ---------------------------------------------------------------------------


def test_mfu_accelerators_lists_the_added_rows_with_sources(capsys):
    assert main(["accelerators"]) == 0
    lines = capsys.readouterr().out.splitlines()

    def line(name: str, dtype: str) -> str:
        return next(x for x in lines if x.split("  ")[0].strip() == name and f" {dtype} " in x)

    # T4 datasheet: Mixed Precision 65 TFLOPS; AMD MI210 page: BF16 181.0 TFLOPS.
    assert " 65.0 " in line("T4", "fp16") and "https://www.nvidia.com/en-us/data-center/tesla-t4/" in line("T4", "fp16")
    mi210 = line("MI210", "bf16")
    assert " 181.0 " in mi210 and "https://www.amd.com/en/products/accelerators/instinct/mi200/mi210.html" in mi210
    assert "https://awsdocs-neuron.readthedocs-hosted.com/" in line("Trainium3", "bf16")


# --- device names the real logs state ------------------------------------------------------------
def test_a100_pg509_200_is_an_alias_of_the_a100_sxm_with_its_source():
    # NVIDIA's open-gpu-kernel-modules README lists "NVIDIA A100-PG509-200 | 20B0 10DE 1450" next to
    # "NVIDIA A100-SXM4-40GB | 20B0": the same device ID, the SXM4 40GB board
    acc = hw.resolve("NVIDIA A100-PG509-200")
    assert acc.name == "A100 SXM" and "NVIDIA A100-PG509-200" in acc.aliases
    assert "20B0 10DE 1450" in acc.note and "open-gpu-kernel-modules" in acc.note
    assert hw.get_peak("NVIDIA A100-PG509-200", "bf16").tflops == 312.0  # A100 datasheet, bf16 dense


@pytest.mark.parametrize(("text", "canonical"), [
    ("NVIDIA A100-SXM4-80GB", "A100 SXM"),  # W&B metadata "gpu" (accelerator_info/…v7i3k2p0)
    ("NVIDIA H100 80GB HBM3", "H100 SXM"),  # W&B metadata (…yxelkra3), torchtitan "CUDA capacity:"
    ("NVIDIA A100 80GB PCIe", "A100 PCIe"),  # dcgm-exporter modelName
    ("NVIDIA H200-SXM5-141GB", "H200 SXM"),  # MLPerf SYSJSON accelerator_model_name
    ("TPU v6 lite", "TPU v6e"),  # JAX device_kind in the MaxText log
    ("tpu-v5p", "TPU v5p"),  # MLPerf submission_platform
    ("AMD Instinct MI250X", "MI250X"),
])
def test_device_names_the_real_logs_state(text, canonical):
    assert hw.resolve(text).name == canonical


@pytest.mark.parametrize("text", [
    "AMD Radeon Graphics",  # what ROCm's deviceProperties call the MI250 GCD: no product named
    "NVIDIA H10O",  # a typo
    "NVIDIA A100-PG509-200 MIG 1g.5gb",  # a slice, not the board
])
def test_a_wrong_or_generic_name_never_resolves_to_another_accelerator(text):
    with pytest.raises(hw.UnknownAcceleratorError):
        hw.resolve(text)


def test_canonical_dtype_names_the_registrys_dtype():
    assert [hw.canonical_dtype(d) for d in ("bfloat16", "torch.float8_e4m3fn", "FP16")] == ["bf16", "fp8", "fp16"]
    with pytest.raises(hw.RegistryError, match="dtype must be one of"):
        hw.canonical_dtype("mixed")
