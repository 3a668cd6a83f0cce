"""Every explorer's figure is drawn for a room: ``plots.ROOM_STYLE``'s dpi and font sizes, whatever
the notebook's own rcParams, and no text or legend runs off the picture.

Expected sizes are hand computed: the explorers' figures are 8.5 × 4.0 in, at 110 dpi 935 × 440 px;
ROOM_STYLE's 12-pt base text makes titles 13 pt and "x-small" 12 × 0.694 = 8.33 pt (matplotlib's scale).
"""

from __future__ import annotations

import struct

import matplotlib
import pytest
from matplotlib.text import Text

from mfu_toolkit import widgets
from mfu_toolkit.analysis import straggler_whatif
from mfu_toolkit.scenarios import whatif

matplotlib.use("Agg")


def _replay():
    from _replay import hand_trace

    return widgets.replay_scenario(straggler_whatif(hand_trace()), job="hand", dp_rank=0, stage=0, factor=2.0)


FIGURES = {
    "flops": lambda: widgets.flops_explorer_figure("llama3-8b"),
    "gap": lambda: widgets.gap_figure(whatif.gap_scenario()),
    "straggler": lambda: widgets.straggler_figure(whatif.straggler_scenario()),
    "checkpoint": lambda: widgets.checkpoint_figure(whatif.checkpoint_scenario()),
    "gem": lambda: widgets.gem_figure(whatif.gem_scenario()),
    "roofline": lambda: widgets.roofline_figure(widgets.roofline_scenario()),
    "replay": lambda: widgets.replay_figure(_replay()),
}


def _png_size_and_dpi(png: bytes) -> tuple[int, int, float]:
    """Width and height from the IHDR chunk, dpi from pHYs (pixels per metre), read from the bytes."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    at = png.index(b"pHYs")
    ppm = struct.unpack(">I", png[at + 4:at + 8])[0]
    return width, height, ppm * 0.0254


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_explorer_figure_is_drawn_for_a_room_whatever_the_notebook_set(name):
    # a notebook that shrank its text and resolution must not shrink the explorers
    with matplotlib.rc_context({"font.size": 6, "figure.dpi": 50, "axes.titlesize": 6, "legend.fontsize": 6}):
        fig = FIGURES[name]()
        png = widgets.figure_png(fig)
    width, height, dpi = _png_size_and_dpi(png)
    assert (width, height) == (935, 440)  # 8.5 in × 110, 4.0 in × 110
    assert dpi == pytest.approx(110, abs=0.1)
    texts = [t for t in fig.findobj(Text) if t.get_visible() and t.get_text().strip()]
    assert texts
    # every text at least 12.5 px tall on the projected picture (the old 9-pt labels at 80 dpi: 10 px);
    # the smallest in use is "x-small", 12 × 0.694 = 8.33 pt = 12.7 px at 110 dpi
    px = {t.get_text(): t.get_fontsize() * dpi / 72 for t in texts}
    assert min(px.values()) >= 12.5, {k: v for k, v in px.items() if v < 12.5}
    titles = [ax.title for ax in fig.axes if ax.get_title()]
    assert all(t.get_fontsize() == pytest.approx(13) for t in titles), [t.get_fontsize() for t in titles]


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_explorer_text_and_legends_stay_inside_the_picture(name):
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = FIGURES[name]()
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    # the box around everything drawn (titles, labels, legends, annotations), in inches
    drawn = fig.get_tightbbox(canvas.get_renderer())
    width, height = fig.get_size_inches()
    assert drawn.x0 >= 0 and drawn.y0 >= 0, (name, drawn.bounds)
    assert drawn.x1 <= width and drawn.y1 <= height, (name, drawn.bounds, (width, height))
