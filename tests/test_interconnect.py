"""The interconnect table (mfu_toolkit/interconnect.csv through mfu_toolkit.interconnect): every number pinned to
the sentence of its source, lookups by name, alias and accelerator, errors with close matches, CSV validation."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import mfu_toolkit.interconnect as ic
from mfu_toolkit import hardware

REPO = Path(__file__).resolve().parents[1]
NVLINK_PAGE = "https://www.nvidia.com/en-us/data-center/nvlink/"


@pytest.fixture(autouse=True)
def _fresh_table():
    ic._reset_table()
    yield
    ic._reset_table()


# Each row: the link, its printed value and unit, its direction, the per-direction GB/s it gives, the source, and
# the words of the source's sentence it comes from (all of them must be in the row's quote).
# - nvidia.com/en-us/data-center/nvlink/ (NVLink table): "NVLink bandwidth per GPU: 300GB/s | 600GB/s | 900GB/s |
#   1,800GB/s" for the second to fifth generations (Volta, Ampere, Hopper, Blackwell), and "NVLink is a 1.8TB/s
#   bidirectional, direct GPU-to-GPU interconnect"; its NVSwitch table: "NVSwitch GPU-to-GPU bandwidth" 300, 600,
#   900, 1,800GB/s, "Total aggregate bandwidth" 2.4TB/s, 4.8TB/s, 7.2TB/s, 1PB/s.
# - H100 page: H100 NVL "NVIDIA NVLink: 600GB/s", H100 SXM "PCIe Gen5: 128GB/s"; H200 page: H200 NVL "2- or
#   4-way NVIDIA NVLink bridge: 900GB/s per GPU"; V100 datasheet: "Interconnect Bandwidth 32 GB/sec" (PCIe parts);
#   L40 datasheet: "PCIe Gen4 x16: 64GB/s bidirectional".
# - IBTA roadmap, 4x port: EDR 100, HDR 200, NDR 400, XDR 800 Gb/s; IEEE 802.3ba (100Gb/s), 802.3bs (200 and
#   400 Gb/s) Ethernet.
# - Google Cloud TPU pages: "Bidirectional inter-chip interconnect (ICI) bandwidth (per chip)" v5e 400 GBps,
#   v5p 1200 GBps, v6e 800 GBps.
# - ROCm MI250 microarchitecture: "50 GB/sec per link (or 100 GB/sec bidirectional peak transfer bandwidth)";
#   AMD MI300X page: "Peak Infinity Fabric Link Bandwidth: 128 GB/s" (direction not stated).
PINNED = [
    ("NVLink2", 300, "GB/s", "bidirectional", 150, NVLINK_PAGE, ("NVLink bandwidth per GPU: 300GB/s", "Volta")),
    ("NVLink3", 600, "GB/s", "bidirectional", 300, NVLINK_PAGE, ("NVLink bandwidth per GPU: 600GB/s", "Ampere")),
    ("NVLink4", 900, "GB/s", "bidirectional", 450, NVLINK_PAGE, ("NVLink bandwidth per GPU: 900GB/s", "Hopper")),
    ("NVLink5", 1800, "GB/s", "bidirectional", 900, NVLINK_PAGE,
     ("NVLink bandwidth per GPU: 1,800GB/s", "Blackwell", "NVLink is a 1.8TB/s bidirectional")),
    ("NVLink bridge H100 NVL", 600, "GB/s", "bidirectional", 300, "https://www.nvidia.com/en-us/data-center/h100/",
     ("NVIDIA NVLink: 600GB/s",)),
    ("NVLink bridge H200 NVL", 900, "GB/s", "bidirectional", 450, "https://www.nvidia.com/en-us/data-center/h200/",
     ("2- or 4-way NVIDIA NVLink bridge: 900GB/s per GPU",)),
    ("NVSwitch gen1", 300, "GB/s", "bidirectional", 150, NVLINK_PAGE,
     ("NVSwitch GPU-to-GPU bandwidth: 300GB/s", "Total aggregate bandwidth: 2.4TB/s")),
    ("NVSwitch gen2", 600, "GB/s", "bidirectional", 300, NVLINK_PAGE,
     ("NVSwitch GPU-to-GPU bandwidth: 600GB/s", "Total aggregate bandwidth: 4.8TB/s")),
    ("NVSwitch gen3", 900, "GB/s", "bidirectional", 450, NVLINK_PAGE,
     ("NVSwitch GPU-to-GPU bandwidth: 900GB/s", "Total aggregate bandwidth: 7.2TB/s")),
    ("NVLink Switch", 1800, "GB/s", "bidirectional", 900, NVLINK_PAGE,
     ("NVSwitch GPU-to-GPU bandwidth: 1,800GB/s", "Total aggregate bandwidth: 1PB/s", "up to 576 GPUs")),
    ("PCIe Gen3 x16", 32, "GB/s", "bidirectional", 16, "https://www.nvidia.com/en-us/data-center/v100/",
     ("Interconnect Bandwidth: 32 GB/sec",)),
    ("PCIe Gen4 x16", 64, "GB/s", "bidirectional", 32, "https://www.nvidia.com/en-us/data-center/l40/",
     ("PCIe Gen4 x16: 64GB/s bidirectional",)),
    ("PCIe Gen5 x16", 128, "GB/s", "bidirectional", 64, "https://www.nvidia.com/en-us/data-center/h100/",
     ("PCIe Gen5: 128GB/s",)),
    ("InfiniBand EDR", 100, "Gb/s", "per_direction", 12.5, "https://www.infinibandta.org/infiniband-roadmap/",
     ("EDR 100Gb/s",)),
    ("InfiniBand HDR", 200, "Gb/s", "per_direction", 25, "https://www.infinibandta.org/infiniband-roadmap/",
     ("HDR 200Gb/s",)),
    ("InfiniBand NDR", 400, "Gb/s", "per_direction", 50, "https://www.infinibandta.org/infiniband-roadmap/",
     ("NDR 400Gb/s",)),
    ("InfiniBand XDR", 800, "Gb/s", "per_direction", 100, "https://www.infinibandta.org/infiniband-roadmap/",
     ("XDR 800Gb/s",)),
    ("100GbE", 100, "Gb/s", "per_direction", 12.5, "https://www.ieee802.org/3/ba/", ("100Gb/s Ethernet",)),
    ("200GbE", 200, "Gb/s", "per_direction", 25, "https://www.ieee802.org/3/bs/", ("200 Gb/s and 400 Gb/s",)),
    ("400GbE", 400, "Gb/s", "per_direction", 50, "https://www.ieee802.org/3/bs/", ("200 Gb/s and 400 Gb/s",)),
    ("ICI TPU v5e", 400, "GB/s", "bidirectional", 200, "https://docs.cloud.google.com/tpu/docs/v5e",
     ("Bidirectional inter-chip interconnect (ICI) bandwidth (per chip): 400 GBps",)),
    ("ICI TPU v5p", 1200, "GB/s", "bidirectional", 600, "https://docs.cloud.google.com/tpu/docs/v5p",
     ("Bidirectional inter-chip interconnect (ICI) bandwidth (per chip): 1200 GBps",)),
    ("ICI TPU v6e", 800, "GB/s", "bidirectional", 400, "https://docs.cloud.google.com/tpu/docs/v6e",
     ("Bidirectional inter-chip interconnect (ICI) bandwidth (per chip): 800 GBps",)),
    ("Infinity Fabric MI250", 50, "GB/s", "per_direction", 50,
     "https://rocm.docs.amd.com/en/docs-7.14.0/_sources/reference/gpu-arch/mi250.md",
     ("50 GB/sec per link", "100 GB/sec bidirectional peak transfer bandwidth")),
    ("Infinity Fabric MI300X", 128, "GB/s", "unstated", None,
     "https://www.amd.com/en/products/accelerators/instinct/mi300/mi300x.html",
     ("Peak Infinity Fabric Link Bandwidth: 128 GB/s",)),
]


@pytest.mark.parametrize("name, value, unit, direction, one_way_gb, source, words", PINNED,
                         ids=[row[0] for row in PINNED])
def test_each_number_is_its_sources_figure(name, value, unit, direction, one_way_gb, source, words):
    link = ic.get_link(name)
    assert (link.value, link.unit, link.direction, link.source) == (value, unit, direction, source)
    for w in words:
        assert w in link.quote, (name, w, link.quote)
    if one_way_gb is None:
        assert link.per_direction_bytes_per_s is None and link.bidirectional_bytes_per_s is None
    else:
        assert link.per_direction_bytes_per_s == pytest.approx(one_way_gb * 1e9, rel=1e-12)


def test_the_table_holds_exactly_the_pinned_rows_each_with_source_quote_and_date():
    assert [link.name for link in ic.links()] == [row[0] for row in PINNED]
    for link in ic.links():
        assert link.source.startswith("https://") and link.quote and link.read_on == "2026-12-06"


def test_units_and_directions_convert_as_printed():
    # 400 Gb/s per direction = 400e9 / 8 = 50e9 B/s each way; 900 GB/s both ways = 450e9 B/s each way
    ndr, nvl4 = ic.get_link("NDR"), ic.get_link("NVLink4")
    assert ndr.stated_bytes_per_s == 50e9 and ndr.bidirectional_bytes_per_s == 100e9
    assert nvl4.stated_bytes_per_s == 900e9 and nvl4.per_direction_bytes_per_s == 450e9
    assert "450 GB/s per direction" in nvl4.describe()
    assert "per direction not stated" in ic.get_link("Infinity Fabric MI300X").describe()


@pytest.mark.parametrize("text, name", [
    ("nvlink-4", "NVLink4"), ("NVLink 4", "NVLink4"), ("fourth-generation NVLink", "NVLink4"),
    ("ndr", "InfiniBand NDR"), ("IB XDR", "InfiniBand XDR"), ("400 GbE", "400GbE"), ("RoCE 200G", "200GbE"),
    ("pcie 5.0 x16", "PCIe Gen5 x16"), ("DGX H100", "NVSwitch gen3"), ("GB200 NVL72", "NVLink Switch"),
    ("Trillium ICI", "ICI TPU v6e"), ("MI250X xGMI", "Infinity Fabric MI250"),
])
def test_lookup_by_name_or_alias_ignores_case_and_separators(text, name):
    assert ic.get_link(text).name == name


def test_unknown_link_is_an_error_naming_close_matches():
    with pytest.raises(ic.UnknownLinkError, match="NVLink5") as err:
        ic.get_link("NVLink 6")
    assert err.value.name == "NVLink 6" and "NVLink5" in err.value.suggestions
    with pytest.raises(ic.UnknownLinkError, match="No rate is assumed"):
        ic.get_link("Slingshot 11")
    with pytest.raises(ic.UnknownLinkError):
        ic.get_link(400)


@pytest.mark.parametrize("device, name", [
    ("NVIDIA H100 80GB HBM3", "NVLink4"), ("H200", "NVLink4"), ("NVIDIA A100-SXM4-80GB", "NVLink3"),
    ("Tesla V100-SXM2-32GB", "NVLink2"), ("B200", "NVLink5"), ("GB200", "NVLink5"),
    ("H100 NVL", "NVLink bridge H100 NVL"),
    ("TPU v5 lite", "ICI TPU v5e"), ("TPU v5p", "ICI TPU v5p"), ("MI300X", "Infinity Fabric MI300X"),
    ("AMD Instinct MI250X", "Infinity Fabric MI250"), ("Tesla V100-PCIE-32GB", "PCIe Gen3 x16"),
])
def test_link_for_accelerator_resolves_device_strings(device, name):
    assert ic.link_for_accelerator(device).name == name


def test_accelerator_without_a_listed_link_is_an_error_saying_how_to_give_it():
    # an H100 PCIe card may or may not be NVLink-bridged: the table does not pick one
    with pytest.raises(ic.InterconnectError, match=r"no intra-node link .* 'H100 PCIe'.*link='PCIe Gen5 x16'"):
        ic.link_for_accelerator("H100 PCIe")
    with pytest.raises(hardware.UnknownAcceleratorError):
        ic.link_for_accelerator("Quantum Foo 9000")


def test_per_link_and_unstated_rows_are_not_per_accelerator_figures():
    assert not ic.get_link("Infinity Fabric MI250").per_accelerator
    assert ic.get_link("NDR").per_accelerator and ic.get_link("PCIe Gen4 x16").per_accelerator


def test_link_table_rows_for_printing():
    rows = ic.link_table(kind="ici")
    assert [r["name"] for r in rows] == ["ICI TPU v5e", "ICI TPU v5p", "ICI TPU v6e"]
    assert rows[1]["per_direction_gb_per_s"] == 600 and rows[1]["accelerators"] == "TPU v5p"
    with pytest.raises(ic.InterconnectError, match="kind must be one of"):
        ic.links(kind="carrier pigeon")


HEADER = ",".join(ic.COLUMNS)
GOOD = ("Team NIC,ethernet,team nic,800,Gb/s,per_direction,port,inter_node,,\"800GbE port\","
        "https://www.ieee802.org/3/df/,2026-12-06,a team's own row")


def test_add_links_csv_extends_the_table(tmp_path):
    path = tmp_path / "team.csv"
    path.write_text(f"{HEADER}\n{GOOD}\n")
    assert ic.add_links_csv(path) == ["Team NIC"]
    assert ic.get_link("team-nic").per_direction_bytes_per_s == 100e9
    with pytest.raises(ic.InterconnectError, match="already exists"):
        ic.add_links_csv(path)


@pytest.mark.parametrize("row, field", [
    (GOOD.replace("https://www.ieee802.org/3/df/", ""), "source"),
    (GOOD.replace("per_direction", "both ways"), "direction"),
    # the Link's own checks name their field as data, not in a sentence the CSV reader reads back
    (GOOD.replace(",Gb/s,", ",Gbit,"), "unit"),
    (GOOD.replace(",port,", ",cable,"), "per"),
    (GOOD.replace(",inter_node,", ",far_away,"), "scope"),
    (GOOD.replace(",800,", ",-800,"), "value"),
    (GOOD.replace(",800,", ",fast,"), "value"),
    (GOOD.replace("2026-12-06", "06/12/2026"), "read_on"),
    (GOOD.replace("\"800GbE port\"", ""), "quote"),
    (GOOD.replace(",port,inter_node,,", ",port,inter_node,Quantum Foo 9000,"), "accelerators"),
])
def test_csv_rows_without_source_or_with_bad_fields_are_refused_naming_line_and_field(tmp_path, row, field):
    path = tmp_path / "bad.csv"
    path.write_text(f"# a comment\n{HEADER}\n{row}\n")
    with pytest.raises(ic.InterconnectError, match=rf"bad.csv:3: field '{field}'"):
        ic.load_links_csv(path)


def test_an_alias_or_accelerator_taken_by_another_link_is_refused(tmp_path):
    path = tmp_path / "clash.csv"
    path.write_text(f"{HEADER}\n" + GOOD.replace("team nic", "NDR") + "\n")
    with pytest.raises(ic.InterconnectError, match="already names 'InfiniBand NDR'"):
        ic.add_links_csv(path)
    path.write_text(f"{HEADER}\n" + GOOD.replace(",port,inter_node,,", ",port,inter_node,H100 SXM,") + "\n")
    with pytest.raises(ic.InterconnectError, match="'H100 SXM' already has link 'NVLink4'"):
        ic.add_links_csv(path)


def test_a_link_you_state_is_validated():
    mine = ic.Link("MI300X seven links", kind="xgmi", value=448, unit="GB/s", direction="per_direction")
    assert ic.get_link(mine) is mine and mine.per_direction_bytes_per_s == 448e9
    with pytest.raises(ic.InterconnectError, match="direction must be one of"):
        ic.Link("x", kind="xgmi", value=1, unit="GB/s", direction="both")
    with pytest.raises(ic.InterconnectError, match="positive finite"):
        ic.Link("x", kind="xgmi", value=0, unit="GB/s", direction="per_direction")


def test_importing_interconnect_does_not_import_pandas():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    code = ("import mfu_toolkit.interconnect as ic, sys; ic.get_link('NDR'); ic.link_for_accelerator('H100'); "
            "bad = {'numpy', 'pandas', 'seaborn', 'matplotlib'} & set(sys.modules); assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO, env=env)
