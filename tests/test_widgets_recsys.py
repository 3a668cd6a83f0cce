"""The recommendation-model explorer (``mfu_toolkit.widgets_recsys``): its pure function against hand computations,
its refusals, its figure drawn for a room, and the widget driven without a browser.

Hand computations for the MLPerf DLRM-DCNv2 reference at B = 65,536 samples per GPU on an H100 SXM (989.4 TFLOP/s
dense bf16, 3.35 TB/s; NVLink4 900 GB/s both ways = 450 GB/s each way), as in ``tests/test_recsys_roofline.py``:

- model FLOPs: 3 × 32,060,928 per sample × B = 6,303,434,932,224;
- compute-bound (the six cross-layer matmuls, the top MLP's first three layers): 6,184,752,906,240 FLOPs;
- embedding bytes: 214 lookups × 128 × 4 B × 5 (lookup, update read and write, Adagrad state read and write)
  = 547,840 B per sample, × B = 35,903,242,240;
- the other memory-bound bytes (thin MLP layers, the cross layers' x0 ⊙ y + x): 49,198,113,280 − 35,903,242,240
  = 13,294,871,040;
- the all-to-all of table-wise tables over 8 GPUs: 26 × 128 × 4 B × 2 = 26,624 B per sample × B × 7/8
  = 1,526,726,656 B sent by each GPU one way.
"""

from __future__ import annotations

import base64
import struct

import matplotlib
import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

from mfu_toolkit import widgets
from mfu_toolkit.analysis import embedding_bandwidth
from mfu_toolkit.widgets import roofline_scenario
from mfu_toolkit.widgets_recsys import (
    RECSYS_BATCHES,
    RECSYS_PARTS,
    RECSYS_POOLINGS,
    recsys_accelerators,
    recsys_explorer,
    recsys_figure,
    recsys_model,
    recsys_scenario,
    recsys_table,
)

matplotlib.use("Agg")

B = 65_536
P, W = 989.4e12, 3.35e12
FLOPS = 6_303_434_932_224
COMPUTE = 6_184_752_906_240 / P
EMBEDDING = 35_903_242_240 / W
DENSE_MEMORY = 13_294_871_040 / W
ALLTOALL = 1_526_726_656 / 450e9


def test_the_default_step_by_hand():
    r = recsys_scenario()
    assert (r.accelerator, r.n_accelerators, r.sharding, r.link, r.batch) == ("H100 SXM", 8, "table_wise", "NVLink4", B)
    assert (r.peak_flops, r.bandwidth, r.link_bytes_per_s) == (P, W, 450e9)
    assert r.embedding_bytes_per_sample == 214 * 128 * 4 * 5 == 547_840
    assert r.flops_per_sample == 3 * 32_060_928
    assert r.compute_s == pytest.approx(COMPUTE, rel=1e-12)  # 6.251 ms
    assert r.embedding_s == pytest.approx(EMBEDDING, rel=1e-12)  # 10.72 ms
    assert r.dense_memory_s == pytest.approx(DENSE_MEMORY, rel=1e-12)  # 3.969 ms
    assert r.alltoall_s == pytest.approx(ALLTOALL, rel=1e-12)  # 3.393 ms
    assert r.alltoall_bytes_per_gpu == 1_526_726_656
    assert r.input_s == 0
    step = COMPUTE + EMBEDDING + DENSE_MEMORY + ALLTOALL
    assert r.step_s == pytest.approx(step, rel=1e-12)  # 24.33 ms
    assert r.ceiling == pytest.approx(FLOPS / (step * P), rel=1e-12) == r.dense_mfu
    assert round(r.ceiling, 3) == 0.262  # 26.2 %, as the roofline module's test pins
    assert r.ceiling_comm_hidden == pytest.approx(FLOPS / ((step - ALLTOALL) * P), rel=1e-12)  # 30.4 %
    # embedding bandwidth: 8 × B samples per step × 547,840 B / (8 × 3.35 TB/s × step) = the embedding share
    assert r.embedding_bandwidth == pytest.approx(35_903_242_240 / (W * step), rel=1e-12)
    assert r.embedding_bandwidth == pytest.approx(r.share("embedding_s"), rel=1e-12)
    assert r.samples_per_s == pytest.approx(8 * B / step, rel=1e-12)
    assert sum(r.share(p) for p in RECSYS_PARTS) == pytest.approx(1.0, rel=1e-12)
    assert r.headline == (
        "dlrm-dcnv2 on 8 × H100 SXM, table-wise over NVLink4, 65,536 samples per GPU: step ≥ 24.33 ms "
        "(compute-bound 26%, memory-bound 60% (embedding 44%), all-to-all 14%) → dense MFU ≤ 26.2%, "
        "embedding bandwidth 44.1%")


def test_the_embedding_bandwidth_is_the_analysis_one():
    # the same figure analysis.embedding_bandwidth gives a team's log at this throughput
    r = recsys_scenario(input_share=0.3, n_accelerators=64, link="NDR")
    same = embedding_bandwidth("dlrm-dcnv2", samples_per_s=r.samples_per_s, accelerator="H100 SXM",
                               n_accelerators=64)
    assert r.embedding_bandwidth == pytest.approx(same.utilisation, rel=1e-12)


def test_data_parallel_tables_have_no_alltoall_and_the_roofline_ceiling():
    dp = recsys_scenario(sharding="data_parallel")
    assert dp.link is None and dp.alltoall_s == 0 and dp.alltoall_bytes_per_gpu == 0
    step = COMPUTE + EMBEDDING + DENSE_MEMORY
    assert dp.ceiling == pytest.approx(FLOPS / (step * P), rel=1e-12)
    assert round(dp.ceiling, 3) == 0.304  # 30.4 %
    # the roofline explorer's whole-step model gives the same ceiling
    assert dp.ceiling == pytest.approx(roofline_scenario(model="dlrm-step", batch=B).ceiling, rel=1e-12)
    # every table on every GPU: 204,184,588 rows × 128 × (4 B row + 4 B Adagrad accumulator) = 209.1 GB
    assert dp.table_bytes_per_gpu == 204_184_588 * 128 * 8
    assert recsys_scenario().table_bytes_per_gpu == 204_184_588 * 128 * 8 / 8
    assert "(data-parallel" not in dp.headline and "data-parallel (tables replicated)" in dp.headline
    one = recsys_scenario(n_accelerators=1)  # table-wise on one GPU: nothing crosses
    assert one.link is None and one.step_s == pytest.approx(dp.step_s, rel=1e-12)


def test_input_wait_stretches_the_step_and_scales_both_headlines():
    base, slow = recsys_scenario(), recsys_scenario(input_share=0.2)
    assert slow.step_s == pytest.approx(base.step_s / 0.8, rel=1e-12)
    assert slow.input_s == pytest.approx(0.2 * slow.step_s, rel=1e-12)
    assert slow.dense_mfu == pytest.approx(0.8 * base.ceiling, rel=1e-12) and slow.ceiling == base.ceiling
    assert slow.embedding_bandwidth == pytest.approx(0.8 * base.embedding_bandwidth, rel=1e-12)
    assert ", input 20%) → dense MFU ≤ 20.9%" in slow.headline


@pytest.mark.parametrize("kwargs", [dict(), dict(input_share=0.4), dict(batch=512), dict(sharding="data_parallel"),
                                    dict(n_accelerators=4096, link="NDR")])
def test_dense_mfu_and_embedding_bandwidth_keep_a_fixed_ratio(kwargs):
    # both are the same samples/s: MFU / bandwidth = (F / P) / (bytes / W), whatever the step
    r = recsys_scenario(**kwargs)
    assert r.dense_mfu / r.embedding_bandwidth == pytest.approx(96_182_784 * W / (P * 547_840), rel=1e-12)  # 0.5945


@pytest.mark.parametrize(("kwargs", "bytes_per_sample"), [
    (dict(pooling=1), 26 * 128 * 4 * 5),  # one-hot: 26 lookups
    (dict(pooling=16), 416 * 128 * 4 * 5),
    (dict(optimizer="rowwise_adagrad"), 214 * 128 * 4 * 3 + 214 * 4 * 2),  # one accumulator per row: 330,416
    (dict(optimizer="sgd"), 214 * 128 * 4 * 3),  # no state
    (dict(optimizer="adam"), 214 * 128 * 4 * 3 + 214 * 128 * 4 * 2 * 2),  # two moments per element
    (dict(row_dtype="fp16"), 214 * 128 * 2 * 3 + 214 * 128 * 4 * 2),  # 2-byte rows, fp32 state: 383,488
    (dict(embedding_dim=64), 214 * 64 * 4 * 5),
])
def test_embedding_bytes_by_hand(kwargs, bytes_per_sample):
    r = recsys_scenario(**kwargs)
    assert r.embedding_bytes_per_sample == bytes_per_sample
    assert r.embedding_s == pytest.approx(bytes_per_sample * B / W, rel=1e-12)


def test_the_embedding_dimension_widens_the_dense_part_too():
    # dim 64: x0 = 128 + 26 × 64 = 1,792 wide; forward 2 × (13·512 + 512·256 + 256·128) bottom
    # + 3 × 2 × 2 × 1,792 × 512 cross + 2 × (1,792·1024 + 1024² + 1024·512 + 512·256 + 256) top = 18,429,440
    r = recsys_scenario(embedding_dim=64)
    assert r.flops_per_sample == 3 * 18_429_440
    assert r.model == "dlrm-dcnv2 (dim 64)" and recsys_model(embedding_dim=64).interaction_width == 1792
    assert recsys_scenario(embedding_dim=256).dense_mfu < recsys_scenario().dense_mfu


def test_a_network_alltoall_and_a_link_domain_note():
    r = recsys_scenario(n_accelerators=64, link="NDR")  # 65,536 × 26,624 × 63/64 B at 50 GB/s each way
    assert r.link == "InfiniBand NDR"
    assert r.alltoall_s == pytest.approx(B * 26_624 * 63 / 64 / 50e9, rel=1e-12)  # 34.35 ms
    assert r.dense_mfu < 0.12 and r.ceiling_comm_hidden > r.dense_mfu
    assert not any("intra-node link" in n for n in r.notes)
    wide = recsys_scenario(n_accelerators=64)  # NVLink4 for 64 ranks: said to be an assumption
    assert any("64 ranks on NVLink4, an intra-node link" in n for n in wide.notes)


def test_batch_barely_moves_the_ceiling_past_a_thousand_samples():
    # the embedding bytes grow with the batch as the FLOPs do: from 1,024 samples on the ceiling is flat
    ceilings = [recsys_scenario(batch=b, sharding="data_parallel").ceiling for b in RECSYS_BATCHES]
    assert ceilings[0] < ceilings[1]
    assert max(ceilings[1:]) - min(ceilings[1:]) < 0.002


def test_refusals_name_what_is_wrong():
    with pytest.raises(ValueError, match="does not say whether 128 GB/s is one direction or both"):
        recsys_scenario(link="Infinity Fabric MI300X")
    with pytest.raises(ValueError, match="no intra-node link with a source is listed for 'H100 PCIe'"):
        recsys_scenario(accelerator="H100 PCIe")
    with pytest.raises(ValueError, match="unknown link 'NVLink 9'"):
        recsys_scenario(link="NVLink 9")
    with pytest.raises(ValueError, match="sharding must be one of data_parallel"):
        recsys_scenario(sharding="row_wise")
    with pytest.raises(ValueError, match="optimizer must be one of sgd"):
        recsys_scenario(optimizer="lamb")
    with pytest.raises(ValueError, match="row_dtype must be one of fp32"):
        recsys_scenario(row_dtype="fp8")
    with pytest.raises(ValueError, match="unknown accelerator 'Z999'"):
        recsys_scenario(accelerator="Z999")
    for bad in (dict(embedding_dim=0), dict(embedding_dim=12.0), dict(pooling=0), dict(batch=0),
                dict(batch=True), dict(n_accelerators=0), dict(input_share=0.96), dict(input_share=-0.1),
                dict(input_share=float("nan"))):
        with pytest.raises(ValueError, match=f"{next(iter(bad))} must be"):
            recsys_scenario(**bad)
    assert recsys_scenario(sharding="data_parallel", accelerator="H100 PCIe").link is None  # nothing crosses


def test_accelerators_offered_have_a_peak_and_a_bandwidth():
    names = recsys_accelerators()
    assert {"H100 SXM", "H200 SXM", "B200", "MI300X", "TPU v5p"} <= set(names)
    for name in names:
        recsys_scenario(accelerator=name, sharding="data_parallel")  # each gives a result


def test_table():
    t = recsys_table(recsys_scenario())
    assert t.loc["pooling factor", "value"] == "the reference's multi-hot sizes (214 rows)"
    assert t.loc["rows, sparse optimizer", "value"] == "fp32, adagrad"
    assert t.loc["training FLOPs per sample", "value"] == "96.18 MFLOP (lookups: 0)"
    assert t.loc["embedding bytes per sample", "value"] == "547,840 B"
    assert t.loc["FLOPs per embedding byte", "value"] == "175.6"  # 96,182,784 / 547,840
    assert t.loc["accelerator", "value"] == "H100 SXM: 989.4 TFLOP/s, 3.35 TB/s"
    assert t.loc["ridge point", "value"] == "295 FLOP/B (bf16)"
    assert t.loc["all-to-all sent per GPU per step", "value"] == "1.53 GB on NVLink4, 450 GB/s each way"
    assert t.loc["tables and optimizer state per GPU", "value"] == "26.1 GB (1/8 of them)"
    assert t.loc["embedding lookups, update, state", "value"] == "10.72 ms (44.1%)"
    assert t.loc["dense MFU", "value"] == "26.2% (the roofline's ceiling)"
    assert t.loc["dense MFU ceiling, all-to-all hidden", "value"] == "30.4%"
    assert t.loc["embedding bandwidth utilisation", "value"] == "44.1%"
    slow = recsys_table(recsys_scenario(input_share=0.2, sharding="data_parallel"))
    assert slow.loc["dense MFU", "value"] == "24.3% (ceiling 30.4% without the input wait)"
    assert slow.loc["all-to-all sent per GPU per step", "value"] == "none: nothing crosses ranks"
    assert "dense MFU ceiling, all-to-all hidden" not in slow.index
    assert slow.loc["tables and optimizer state per GPU", "value"] == "209 GB (every table)"
    assert recsys_table(recsys_scenario(pooling=1)).loc["pooling factor", "value"] == "1 on every table (26 rows)"
    # no value is cut short by pandas' 50-character column width, in the widget or the notebook
    longest = recsys_scenario(embedding_dim=512, pooling=64, row_dtype="int8", optimizer="rowwise_adagrad",
                              n_accelerators=16384, link="InfiniBand XDR", input_share=0.9, accelerator="MI355X")
    for result in (recsys_scenario(), longest, recsys_scenario(input_share=0.35, sharding="data_parallel")):
        assert recsys_table(result)["value"].str.len().max() <= 50


def _png_size_and_dpi(png: bytes) -> tuple[int, int, float]:
    width, height = struct.unpack(">II", png[16:24])
    at = png.index(b"pHYs")
    return width, height, struct.unpack(">I", png[at + 4:at + 8])[0] * 0.0254


def test_figure_is_drawn_for_a_room_and_stays_inside_the_picture():
    # as every explorer's: 8.5 × 4.0 in at 110 dpi (935 × 440 px), whatever the notebook set; text ≥ 12.5 px
    longest = recsys_scenario(embedding_dim=512, pooling=64, row_dtype="int8", optimizer="rowwise_adagrad",
                              n_accelerators=16384, link="InfiniBand XDR", input_share=0.9)
    with matplotlib.rc_context({"font.size": 6, "figure.dpi": 50, "legend.fontsize": 6}):
        for result in (recsys_scenario(), longest):
            fig = recsys_figure(result)
            png = widgets.figure_png(fig)
            width, height, dpi = _png_size_and_dpi(png)
            assert (width, height) == (935, 440) and dpi == pytest.approx(110, abs=0.1)
            texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
            assert min(t.get_fontsize() * dpi / 72 for t in texts) >= 12.5
            from matplotlib.backends.backend_agg import FigureCanvasAgg

            canvas = FigureCanvasAgg(fig)
            canvas.draw()
            drawn = fig.get_tightbbox(canvas.get_renderer())
            w, h = fig.get_size_inches()
            assert drawn.x0 >= 0 and drawn.y0 >= 0 and drawn.x1 <= w and drawn.y1 <= h, drawn.bounds
    fig = recsys_figure(recsys_scenario())
    assert fig._suptitle.get_text() == "dlrm-dcnv2\n8 × H100 SXM, tables table-wise over NVLink4"
    curve, bars = fig.axes
    dense = curve.get_lines()[0]
    assert list(dense.get_xdata()) == list(RECSYS_BATCHES)
    assert dense.get_ydata()[-2] == pytest.approx(100 * recsys_scenario().dense_mfu)  # 65,536: the marked batch
    heights = [p.get_height() for p in bars.patches]
    assert heights == pytest.approx([100 * recsys_scenario().share(p) for p in RECSYS_PARTS])


def _controls(box) -> dict[str, object]:
    found, stack = {}, [box]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()))
        if getattr(w, "description", ""):
            found[w.description] = w
    return found


def test_explorer_follows_its_controls_and_replaces_its_output(capsys):
    box = recsys_explorer()
    assert "recsys-explorer" in box._dom_classes and "mfu-explorer" in box._dom_classes
    headline = box.children[-2]
    assert headline.value == widgets.explorer_headline_html(recsys_scenario().headline)
    c = _controls(box)
    assert c["embedding dim"].value == 128 and c["pooling factor"].value == 0
    assert c["all-to-all link"].value == "NVLink4" and c["tables"].value == "table_wise"
    assert [label for label, _ in c["pooling factor"].options][4] == "MLPerf"  # the multi-hot sizes, 214 rows
    assert [v for _, v in c["pooling factor"].options] == list(RECSYS_POOLINGS)
    before = len(plt.get_fignums())
    charts = []
    steps = [("embedding dim", 256, dict(embedding_dim=256)),
             ("pooling factor", 1, dict(embedding_dim=256, pooling=1)),
             ("waiting for input", 0.25, dict(embedding_dim=256, pooling=1, input_share=0.25)),
             ("GPUs", 64, dict(embedding_dim=256, pooling=1, input_share=0.25, n_accelerators=64)),
             ("all-to-all link", "InfiniBand NDR",
              dict(embedding_dim=256, pooling=1, input_share=0.25, n_accelerators=64, link="InfiniBand NDR")),
             ("sparse optimizer", "rowwise_adagrad",
              dict(embedding_dim=256, pooling=1, input_share=0.25, n_accelerators=64, link="InfiniBand NDR",
                   optimizer="rowwise_adagrad")),
             ("tables", "data_parallel",
              dict(embedding_dim=256, pooling=1, input_share=0.25, n_accelerators=64, link="InfiniBand NDR",
                   optimizer="rowwise_adagrad", sharding="data_parallel"))]
    for name, value, expected in steps:
        c[name].value = value
        assert headline.value == widgets.explorer_headline_html(recsys_scenario(**expected).headline), name
        chart, table = box.children[-1].outputs  # replaced, not appended
        charts.append(base64.b64decode(chart["data"]["image/png"]))
        assert '<table border="1" class="dataframe">' in table["data"]["text/html"]
    assert len(set(charts)) == len(steps)
    assert len(plt.get_fignums()) == before
    assert capsys.readouterr().out == ""


def test_explorer_opens_on_given_values_and_refuses_bad_ones():
    box = recsys_explorer(n_accelerators=64, link="InfiniBand NDR", batch=6912, pooling=3)
    c = _controls(box)
    assert c["samples per GPU"].value == 6912 and c["pooling factor"].value == 3  # values off the slider are added
    assert box.children[-2].value == widgets.explorer_headline_html(
        recsys_scenario(n_accelerators=64, link="InfiniBand NDR", batch=6912, pooling=3).headline)
    c["accelerator"].value = "MI300X"
    c["all-to-all link"].value = "PCIe Gen5 x16"
    assert "mfu-error" not in box.children[-2].value
    with pytest.raises(ValueError, match="does not say whether"):
        recsys_explorer(link="Infinity Fabric MI300X")
