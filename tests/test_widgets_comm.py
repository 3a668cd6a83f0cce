"""The communication explorer (``mfu_toolkit.widgets_comm``): its pure function against hand computations, its
refusals, its figure drawn for a room, and the widget driven without a browser.

Hand computations use nccl-tests' bus-bandwidth factors (2(n−1)/n AllReduce, (n−1)/n AllGather, ReduceScatter
and AlltoAll, 1 Broadcast) and the interconnect table's per-direction peaks: NVLink4 900 GB/s both ways = 450 GB/s
each way, InfiniBand NDR 400 Gb/s = 50 GB/s each way, PCIe Gen5 x16 128 GB/s both ways = 64 GB/s each way.
"""

from __future__ import annotations

import base64
import struct

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from mfu_toolkit import widgets
from mfu_toolkit.widgets_comm import (
    COMM_COLLECTIVES,
    COMM_SIZES,
    comm_explorer,
    comm_figure,
    comm_links,
    comm_scenario,
    comm_table,
    format_bytes,
    format_seconds,
)

matplotlib.use("Agg")


def test_the_default_job_by_hand():
    # 16 GB AllReduce among 64 ranks over NDR: 16e9 × 2·63/64 / 50e9 = 0.630 s; half hidden: 0.315 s exposed;
    # step 2 + 0.315 = 2.315 s; MFU 0.40 × 2 / 2.315 = 0.345572...; cost 0.054428 (5.44 points)
    r = comm_scenario()
    assert (r.link, r.coll, r.n_ranks) == ("InfiniBand NDR", "AllReduce", 64)
    assert r.peak_bytes_per_s == 50e9 and r.link_source == "https://www.infinibandta.org/infiniband-roadmap/"
    assert r.busbw_factor == pytest.approx(2 * 63 / 64, rel=1e-15)
    assert r.floor_s == pytest.approx(0.630, rel=1e-12) == pytest.approx(r.comm_s, rel=1e-15)
    assert r.exposed_s == pytest.approx(0.315, rel=1e-12) == pytest.approx(r.hidden_s, rel=1e-12)
    assert r.step_s == pytest.approx(2.315, rel=1e-12)
    assert r.exposed_share == pytest.approx(0.315 / 2.315, rel=1e-12)
    assert r.mfu_after == pytest.approx(0.8 / 2.315, rel=1e-12)
    assert r.mfu_cost == pytest.approx(0.40 - 0.8 / 2.315, rel=1e-12)
    assert r.headline == ("AllReduce of 16 GB over 64 ranks on InfiniBand NDR: floor 630 ms; 315 ms exposed per "
                          "step (50% overlapped) → MFU 34.6% instead of 40.0% (-5.4 points)")


@pytest.mark.parametrize(("coll", "link", "n", "size", "floor_s"), [
    ("allreduce", "NVLink4", 8, 16e9, 16e9 * 2 * 7 / 8 / 450e9),  # 62.22 ms
    ("allgather", "NVLink4", 8, 4e9, 4e9 * 7 / 8 / 450e9),  # 7.778 ms
    ("reducescatter", "NDR", 64, 16e9, 16e9 * 63 / 64 / 50e9),  # 315 ms
    ("alltoall", "PCIe Gen5", 4, 1e9, 1e9 * 3 / 4 / 64e9),  # 11.72 ms
    ("Broadcast", "400GbE", 1024, 2e9, 2e9 / 50e9),  # 40 ms: factor 1 whatever n
    ("AllReduce", "NDR", 3, 2_360_832, 2_360_832 * 4 / 3 / 50e9),  # the real Inspector line: 62.96 µs
])
def test_floors_by_hand(coll, link, n, size, floor_s):
    r = comm_scenario(coll=coll, link=link, n_ranks=n, size_bytes=size)
    assert r.floor_s == pytest.approx(floor_s, rel=1e-12)


def test_overlap_efficiency_and_mfu_by_hand():
    # 1.1 % of the NDR peak: 0.630 / 0.011 = 57.27 s; 25 % overlapped: 42.95 s exposed; step 3 + 42.95;
    # MFU 0.5 × 3 / 45.95
    r = comm_scenario(efficiency=0.011, overlap=0.25, compute_s=3.0, mfu=0.5)
    comm = 0.630 / 0.011
    assert r.comm_s == pytest.approx(comm, rel=1e-12)
    assert r.exposed_s == pytest.approx(0.75 * comm, rel=1e-12)
    assert r.mfu_after == pytest.approx(0.5 * 3.0 / (3.0 + 0.75 * comm), rel=1e-12)
    assert ", 57.27 s at 1.1% of the peak;" in r.headline
    hidden = comm_scenario(overlap=1.0)
    assert hidden.exposed_s == 0 and hidden.mfu_after == hidden.mfu and hidden.mfu_cost == 0
    assert comm_scenario(n_ranks=1).floor_s == 0  # one rank: nothing crosses a link
    # the smallest overlap that keeps the default job within a point of 40 %: 1 − (0.8 / 0.39 − 2) / 0.630
    at = 1 - (0.8 / 0.39 - 2.0) / 0.630
    assert comm_scenario(overlap=at).mfu_after == pytest.approx(0.39, rel=1e-12)


def test_more_bytes_ranks_or_less_overlap_never_cost_less():
    base = comm_scenario()
    assert comm_scenario(size_bytes=32e9).mfu_after < base.mfu_after
    assert comm_scenario(n_ranks=128).mfu_after < base.mfu_after  # 2·127/128 > 2·63/64
    assert comm_scenario(overlap=0.25).mfu_after < base.mfu_after
    assert comm_scenario(link="NVLink4").mfu_after > base.mfu_after


def test_refusals_name_what_is_wrong():
    with pytest.raises(ValueError, match="does not say whether 128 GB/s is one direction or both"):
        comm_scenario(link="Infinity Fabric MI300X")
    with pytest.raises(ValueError, match="per link, not per accelerator"):
        comm_scenario(link="Infinity Fabric MI250")
    with pytest.raises(ValueError, match="unknown link 'NVLink 9'"):
        comm_scenario(link="NVLink 9")
    with pytest.raises(ValueError, match="coll must be one of AllReduce"):
        comm_scenario(coll="gather")
    for bad in (dict(overlap=1.5), dict(overlap=-0.1), dict(efficiency=0.0), dict(efficiency=1.2),
                dict(compute_s=0.0), dict(mfu=0.0), dict(mfu=1.5), dict(size_bytes=-1.0), dict(n_ranks=0),
                dict(n_ranks=8.0), dict(overlap=True), dict(size_bytes=float("nan"))):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be"):
            comm_scenario(**bad)


def test_links_offered_are_those_with_a_per_rank_per_direction_peak():
    names = comm_links()
    assert {"NVLink4", "InfiniBand NDR", "400GbE", "PCIe Gen5 x16", "ICI TPU v5p"} <= set(names)
    assert "Infinity Fabric MI300X" not in names and "Infinity Fabric MI250" not in names
    for name in names:
        comm_scenario(link=name)  # every offered link gives a result


def test_table_and_formats():
    t = comm_table(comm_scenario())
    assert t.loc["link peak, one direction", "value"] == "50 GB/s (InfiniBand NDR)"
    assert t.loc["bus bandwidth factor", "value"] == "2(n−1)/n = 1.969 (64 ranks)"
    assert t.loc["time floor (at the peak)", "value"] == "630 ms"
    assert t.loc["exposed per step", "value"] == "315 ms"
    assert t.loc["MFU, hidden → this step", "value"] == "40.0% → 34.56%"
    assert t.loc["MFU cost", "value"] == "5.44 points"
    assert [format_bytes(v) for v in (16e9, 2_360_832, 1e11, 512)] == ["16 GB", "2.36 MB", "100 GB", "512 B"]
    assert [format_seconds(v) for v in (2.315, 0.630, 0.06222222, 6.29555e-5, 0.0)] == [
        "2.315 s", "630 ms", "62.22 ms", "62.96 µs", "0 s"]
    assert COMM_SIZES[0] == 1e6 and COMM_SIZES[-1] == 1e11 and list(COMM_SIZES) == sorted(COMM_SIZES)
    assert set(COMM_COLLECTIVES) == {"allreduce", "allgather", "reducescatter", "alltoall", "broadcast"}


def _png_size_and_dpi(png: bytes) -> tuple[int, int, float]:
    width, height = struct.unpack(">II", png[16:24])
    at = png.index(b"pHYs")
    return width, height, struct.unpack(">I", png[at + 4:at + 8])[0] * 0.0254


def test_figure_is_drawn_for_a_room_and_stays_inside_the_picture():
    # as every explorer's: 8.5 × 4.0 in at 110 dpi (935 × 440 px), whatever the notebook set; text ≥ 12.5 px
    with matplotlib.rc_context({"font.size": 6, "figure.dpi": 50, "legend.fontsize": 6}):
        fig = comm_figure(comm_scenario())
        png = widgets.figure_png(fig)
    width, height, dpi = _png_size_and_dpi(png)
    assert (width, height) == (935, 440) and dpi == pytest.approx(110, abs=0.1)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert min(t.get_fontsize() * dpi / 72 for t in texts) >= 12.5
    assert fig.axes[0].get_title() == "AllReduce over 64 ranks on InfiniBand NDR"
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    drawn = fig.get_tightbbox(canvas.get_renderer())
    w, h = fig.get_size_inches()
    assert drawn.x0 >= 0 and drawn.y0 >= 0 and drawn.x1 <= w and drawn.y1 <= h, drawn.bounds
    # the marked point is the scenario's MFU; no overlap draws no second line
    assert any("this job: 16 GB" in t.get_text() for t in texts)
    assert len(comm_figure(comm_scenario(overlap=0.0)).axes[0].get_lines()) == 2  # the curve and the hidden MFU


def _controls(box) -> dict[str, object]:
    found, stack = {}, [box]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()))
        if getattr(w, "description", ""):
            found[w.description] = w
    return found


def test_explorer_follows_its_controls_and_replaces_its_output(capsys):
    box = comm_explorer()
    assert "comm-explorer" in box._dom_classes and "mfu-explorer" in box._dom_classes
    headline = box.children[-2]
    assert headline.value == widgets.explorer_headline_html(comm_scenario().headline)
    c = _controls(box)
    assert c["bytes per step"].value == 16e9 and c["link"].value == "InfiniBand NDR"
    before = len(plt.get_fignums())
    charts = []
    steps = [("bytes per step", 2e10, dict(size_bytes=2e10)),
             ("ranks", 8, dict(size_bytes=2e10, n_ranks=8)),
             ("link", "NVLink4", dict(size_bytes=2e10, n_ranks=8, link="NVLink4")),
             ("collective", "allgather", dict(size_bytes=2e10, n_ranks=8, link="NVLink4", coll="allgather")),
             ("overlapped", 0.8, dict(size_bytes=2e10, n_ranks=8, link="NVLink4", coll="allgather", overlap=0.8))]
    for name, value, expected in steps:
        c[name].value = value
        assert headline.value == widgets.explorer_headline_html(comm_scenario(**expected).headline), name
        chart, table = box.children[-1].outputs  # replaced, not appended
        charts.append(base64.b64decode(chart["data"]["image/png"]))
        assert '<table border="1" class="dataframe">' in table["data"]["text/html"]
    assert len(set(charts)) == len(steps)
    assert len(plt.get_fignums()) == before
    assert capsys.readouterr().out == ""


def test_explorer_opens_on_given_values_and_refuses_bad_ones():
    box = comm_explorer(link="NVLink4", n_ranks=8, size_bytes=3e9, overlap=0.0)
    c = _controls(box)
    assert c["bytes per step"].value == 3e9  # a size off the 1-2-5 series is added to the slider
    assert box.children[-2].value == widgets.explorer_headline_html(
        comm_scenario(link="NVLink4", n_ranks=8, size_bytes=3e9, overlap=0.0).headline)
    with pytest.raises(ValueError, match="per link, not per accelerator"):
        comm_explorer(link="Infinity Fabric MI250")
