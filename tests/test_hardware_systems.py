"""resolve_system: platform strings read as accelerator x count (systems.csv, embedded counts, the registry).

Expected counts come from the systems' own descriptions (cited beside each case), from Google's Cloud TPU
naming docs, or from the string itself; real MLPerf logs are parsed with a regex in the test.
"""

from __future__ import annotations

import re

import pytest
from _realdata import files, realdata  # noqa: F401
from _registry import fresh_registry, write_text  # noqa: F401

from mfu_toolkit import hardware as hw
from mfu_toolkit.io import load_run

CASES = [
    # (text, accelerator, per_system, n_systems)
    # DGX H100/H200 user guide: 8 x H100 SXM per DGX.
    ("64xNVIDIA DGX H100", "H100 SXM", 8, 64),
    ("2x NVIDIA DGX H200", "H200 SXM", 8, 2),
    ("NVIDIA DGX B200", "B200", 8, None),
    # Dell's XE9680x8H100-SXM-80GB description: 8 per node; the string says x8 too.
    ("XE9680x8H100-SXM-80GB", "H100 SXM", 8, None),
    ("2xXE9680Lx8H200-SXM-141GB", "H200 SXM", 8, 2),
    # Fujitsu's GX2560M7_H100_SXM_80GBx4 description: 4 per node.
    ("GX2560M7_H100_SXM_80GBx4", "H100 SXM", 4, None),
    # QCT's D74H-7U description: 8 per node on an HGX board, GPU not named by the string.
    ("1xD74H-7U", None, 8, 1),
    # HGX: 4- or 8-GPU boards: the accelerator only.
    ("1xNVIDIA HGX H200", "H200 SXM", None, 1),
    ("1xNVIDIA HGX B200", "B200", None, 1),
    # NVIDIA's tyche_ngpu64 description: 16 nodes x 4 GB200 GPUs.
    ("16xNVIDIA GB200", "GB200", 4, 16),
    # Cloud TPU docs: v5p-N counts TensorCores (2 per chip); v6e/Trillium and v5e count chips.
    ("tpu-v5p-1024", "TPU v5p", 512, None),
    ("cloud-tpu-v5p-12288-maxtext", "TPU v5p", 6144, None),
    ("tpu-v6e-256", "TPU v6e", 256, None),
    ("tpu-trillium-1024", "TPU v6e", 1024, None),
    ("tpu-v5e-16", "TPU v5e", 16, None),
    ("tpu-v4-8", "TPU v4", 4, None),
    ("tpu-v5p", "TPU v5p", None, None),  # names the chip, no count
    # Intel's HLS-Gaudi2-N32-PT description: 32 nodes x 8 Gaudi2.
    ("HLS-Gaudi2-N32-PT", "Gaudi 2", 8, 32),
    ("gaudi2-1024", "Gaudi 2", 1024, None),
    ("gaudi-1024", None, 1024, None),  # generation not said: count only
    # Systems not in the table: the embedded count, the accelerator through the registry.
    ("6x8xH100-SXM5-80GB", "H100 SXM", 8, 6),
    ("16xR750-2xA100-PCIe-80GB", "A100 PCIe", 2, 16),
    ("PRIMERGY_CDI_H100_NVL_94GBx16", "H100 NVL", 16, None),
    ("SR675V3-8xH100_NVL_94GB_400W", "H100 NVL", 8, None),
    ("1xXE9712x4GB200", "GB200", 4, 1),
    ("128xBM.GPU.H100.8", "H100 SXM", 8, 128),  # OCI shape: the GPU count ends the name
    ("NVIDIA H100 80GB HBM3", "H100 SXM", None, None),
]


@pytest.mark.parametrize(("text", "accelerator", "per_system", "n_systems"), CASES)
def test_platform_strings(text, accelerator, per_system, n_systems):
    m = hw.resolve_system(text)
    assert m is not None
    assert (m.accelerator, m.per_system, m.n_systems) == (accelerator, per_system, n_systems)
    assert m.text == text and m.note
    if per_system is not None and m.source != "the count the name states":
        assert m.source.startswith("https://")
    if per_system is not None:
        assert m.n_accelerators == (n_systems or 1) * per_system


def test_names_that_fix_nothing_give_none():
    for text in ("2xACME Box", "foo bar", "", "1x" + "[" * 300, "R760x2H100NVL-PCIe-94GB"):
        assert hw.resolve_system(text) is None, text


def test_a_refused_accelerator_is_not_taken():
    # 94 GB is no H100 SXM size: the count stays, the accelerator does not.
    m = hw.resolve_system("XE9680x8H100-SXM-94GB")
    assert (m.accelerator, m.per_system) == (None, 8) and "94 GB" in m.note


def test_a_count_that_is_no_whole_number_of_chips_gives_no_count():
    m = hw.resolve_system("tpu-v5p-1023")
    assert (m.accelerator, m.per_system) == ("TPU v5p", None) and "multiple of 2" in m.note


def test_the_system_is_never_the_accelerator():
    for text, *_ in CASES:
        acc = hw.resolve_system(text).accelerator
        assert acc is None or acc in {a.name for a in hw.accelerators()}, text


def test_system_csv_rows_are_checked(tmp_path):
    head = "name,pattern,accelerator,per_system,count_divisor,source,read_on,note\n"
    bad = {
        "x,(,,8,,https://example.com,2026-12-06,\n": "pattern",
        "x,abc,Nope 9000,8,,https://example.com,2026-12-06,\n": "accelerator",
        "x,abc,,eight,,https://example.com,2026-12-06,\n": "per_system",
        "x,abc,,8,,,2026-12-06,\n": "source",
        "x,abc,,8,,https://example.com,2026-13-06,\n": "read_on",
    }
    for row, field in bad.items():
        path = write_text(tmp_path, "s.csv", head + row)
        with pytest.raises(hw.RegistryError, match=rf"s\.csv:2: field '{field}'"):
            hw.load_systems_csv(path)
    assert len(hw.load_systems_csv(hw.__dict__["_SYSTEMS_CSV"])) >= 10


def test_real_mlperf_platforms(realdata):  # noqa: F811
    """Every platform line of the real logs, parsed here with a regex; the loader's facts must agree."""
    seen = {}
    for path in files(realdata / "mlperf"):
        text = path.read_text(encoding="utf-8", errors="replace")
        value = re.search(r'"key": "submission_platform", "value": "([^"]*)"', text).group(1)
        seen[value] = hw.resolve_system(value)
        run = load_run(path)
        facts = {f["name"]: f for f in run.meta.facts if "submission_platform" in f["text"] or value in f["text"]}
        sysjson = ":::SYSJSON" in text
        m = seen[value]
        if m.accelerator is not None and not sysjson:
            assert facts["accelerator"]["value"] == m.accelerator, path.name
        if not sysjson:
            assert "accelerator" not in facts or facts["accelerator"]["value"] != value, path.name  # never the system
        if m.per_system is not None and not sysjson:
            assert facts["accelerators_per_node"]["value"] == m.per_system, path.name
    # the file name of NVIDIA's GB200 run states its GPU count (ngpu64): 16 nodes x 4
    assert seen["16xNVIDIA GB200"].n_accelerators == 64
    assert seen["64xNVIDIA DGX H100"].n_accelerators == 512
    assert (seen["1xD74H-7U"].accelerator, seen["1xD74H-7U"].per_system) == (None, 8)
    assert seen["1xNVIDIA HGX H200"].per_system is None
    gb200 = next(p for p in files(realdata / "mlperf") if "ngpu64" in p.name)
    assert load_run(gb200).meta.n_accelerators == int(re.search(r"ngpu(\d+)", gb200.name).group(1))
