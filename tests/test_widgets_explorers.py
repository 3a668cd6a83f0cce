"""The what-if explorers (gap, stragglers, checkpoints, GEM) as widgets, driven without a browser.

Each test builds an explorer, moves a slider programmatically and checks that the headline is
exactly what the pure function of ``mfu_toolkit.scenarios.whatif`` gives for the new values, and
that redraws leave no open matplotlib figures behind.
"""

from __future__ import annotations

import base64

import matplotlib.pyplot as plt
import pytest

from mfu_toolkit import widgets
from mfu_toolkit.scenarios.whatif import (
    LLAMA3_FAILURES_PER_GPU_YEAR,
    checkpoint_scenario,
    gap_scenario,
    gem_scenario,
    straggler_scenario,
)
from mfu_toolkit.widgets import (
    checkpoint_explorer,
    checkpoint_figure,
    explorer_headline_html,
    gap_explorer,
    gap_figure,
    gem_explorer,
    gem_figure,
    render_explorer,
    straggler_explorer,
    straggler_figure,
)


def controls(box) -> dict[str, object]:
    """Every control below ``box`` by its description."""
    found: dict[str, object] = {}
    stack = [box]
    while stack:
        w = stack.pop()
        stack.extend(getattr(w, "children", ()))
        if getattr(w, "description", ""):
            found[w.description] = w
    return found


def headline_of(box) -> str:
    return box.children[-2].value


def shown(box) -> list[dict]:
    """What the explorer's Output holds: its ``outputs`` state, as the browser receives it."""
    return list(box.children[-1].outputs)


def five_updates_keep_figures(box, slider, values, capsys) -> None:
    before = len(plt.get_fignums())
    charts = []
    for v in values:
        slider.value = v
        chart, table = shown(box)  # replaced, not appended: always one chart and one table
        png = base64.b64decode(chart["data"]["image/png"])
        assert png.startswith(b"\x89PNG")
        assert '<table border="1" class="dataframe">' in table["data"]["text/html"]
        charts.append(png)
    assert len(set(charts)) == len(values)  # every value drew its own chart
    assert len(plt.get_fignums()) == before
    # Nothing printed into the Output while the cell runs (outside a kernel that would land on
    # stdout): captured output is what makes nbclient hang now and then (jupyter/nbclient#312).
    assert capsys.readouterr().out == ""


def test_gap_explorer_headline_follows_the_sliders(capsys):
    box = gap_explorer()
    assert "gap-explorer" in box._dom_classes
    assert headline_of(box) == explorer_headline_html(gap_scenario().headline)
    c = controls(box)
    c["slow ranks"].value = 3
    c["slowdown ×"].value = 1.5
    want = gap_scenario(stragglers=3, slowdown=1.5).headline
    assert headline_of(box) == explorer_headline_html(want)
    c["failures"].value = False
    assert headline_of(box) == explorer_headline_html(
        gap_scenario(stragglers=3, slowdown=1.5, mtbf_hours=None).headline)
    capsys.readouterr()
    five_updates_keep_figures(box, c["jitter (σ)"], [0.0, 0.05, 0.1, 0.15, 0.2], capsys)
    assert headline_of(box) == explorer_headline_html(
        gap_scenario(stragglers=3, slowdown=1.5, mtbf_hours=None, jitter=0.2).headline)


def test_straggler_explorer_headline_follows_the_sliders(capsys):
    box = straggler_explorer()
    assert "straggler-explorer" in box._dom_classes
    c = controls(box)
    ranks = c["ranks"]
    assert ranks.options[0] == ("8", 8) and ranks.options[-1] == ("16,384", 16384)  # log-spaced
    ranks.value = 16384
    c["slow ranks"].value = 2
    c["slowdown ×"].value = 1.3
    want = straggler_scenario(ranks=16384, jitter_cv=0.05, slow_ranks=2, slowdown=1.3).headline
    assert headline_of(box) == explorer_headline_html(want)
    assert "16,384 ranks" in headline_of(box)
    capsys.readouterr()
    five_updates_keep_figures(box, ranks, [8, 64, 512, 4096, 2048], capsys)
    want = straggler_scenario(ranks=2048, jitter_cv=0.05, slow_ranks=2, slowdown=1.3).headline
    assert headline_of(box) == explorer_headline_html(want)


def test_checkpoint_explorer_starts_at_the_optimum_and_follows_the_sliders(capsys):
    box = checkpoint_explorer()
    assert "checkpoint-explorer" in box._dom_classes
    c = controls(box)
    first = checkpoint_scenario(n_accelerators=16384, checkpoint_s=60.0, restart_s=600.0)
    assert c["interval (min)"].value == pytest.approx(first.optimum_s / 60, abs=0.05)
    c["interval (min)"].value = 120.0
    c["checkpoint"].value = False  # async
    want = checkpoint_scenario(n_accelerators=16384, failures_per_accelerator_per_year=c["failures / GPU / year"].value,
                               checkpoint_s=c["checkpoint write (s)"].value, blocking=False,
                               restart_s=c["restart (s)"].value, interval_s=120.0 * 60)
    assert headline_of(box) == explorer_headline_html(want.headline)
    assert c["failures / GPU / year"].value == pytest.approx(LLAMA3_FAILURES_PER_GPU_YEAR, rel=0.02)
    capsys.readouterr()
    five_updates_keep_figures(box, c["GPUs"], [64, 1024, 4096, 8192, 32768], capsys)
    want = checkpoint_scenario(n_accelerators=32768, failures_per_accelerator_per_year=c["failures / GPU / year"].value,
                               checkpoint_s=c["checkpoint write (s)"].value, blocking=False,
                               restart_s=c["restart (s)"].value, interval_s=120.0 * 60)
    assert headline_of(box) == explorer_headline_html(want.headline)


def test_gem_explorer_headline_and_error(capsys):
    box = gem_explorer()
    assert "gem-explorer" in box._dom_classes
    assert "2.00× GPU-hours" in headline_of(box)
    c = controls(box)
    c["end-to-end efficiency ×"].value = 1.0
    assert headline_of(box) == explorer_headline_html(gem_scenario(efficiency_multiplier=1.0).headline)
    assert "4.00× GPU-hours" in headline_of(box)
    # 10 % × 3 = 30 % end to end exceeds the 22.5 % steady state: refused, with the reason
    c["end-to-end efficiency ×"].value = 3.0
    assert 'class="mfu-headline mfu-error"' in headline_of(box)
    assert "exceeds the steady-state mfu" in headline_of(box)
    assert shown(box) == []  # no chart for a refused scenario
    c["steady-state MFU"].value = 0.35
    assert headline_of(box) == explorer_headline_html(gem_scenario(efficiency_multiplier=3.0, mfu=0.35).headline)
    capsys.readouterr()
    five_updates_keep_figures(box, c["GPUs"], [512, 1024, 2048, 8192, 16384], capsys)


def test_headline_is_escaped_not_reformatted():
    assert explorer_headline_html("a < b → 2.00×") == (
        '<div class="mfu-headline" style="font-size:1.15em"><b>a &lt; b → 2.00×</b></div>')


def test_render_explorer_gives_png_and_table():
    head, png, table = render_explorer(straggler_scenario(ranks=64), straggler_figure, widgets.straggler_table)
    assert head == explorer_headline_html(straggler_scenario(ranks=64).headline)
    assert png.startswith(b"\x89PNG")
    assert "64" in table.index


def test_figures_draw_through_the_plots_module():
    before = plt.get_fignums()
    for fig in (gap_figure(gap_scenario()), checkpoint_figure(checkpoint_scenario()),
                straggler_figure(straggler_scenario()), gem_figure(gem_scenario())):
        assert widgets.figure_png(fig).startswith(b"\x89PNG")
        assert fig.axes[0].has_data()
    assert plt.get_fignums() == before  # bare figures: never registered with pyplot


def test_async_optimum_at_the_write_time_is_marked():
    r = checkpoint_scenario(n_accelerators=16384, checkpoint_s=3600.0, blocking=False, async_stall_s=5.0)
    assert r.optimum_s == 3600.0 and r.daly_s < 3600.0
    legend = [t.get_text() for t in checkpoint_figure(r).axes[0].get_legend().get_texts()]
    assert any(t.startswith("optimum: write time") for t in legend)


def test_gap_explorer_takes_scenario_defaults_and_refuses_unknown_ones(capsys):
    box = gap_explorer(ranks=32, step_s=1.0, mtbf_hours=None)
    c = controls(box)
    assert c["ranks"].value == 32 and c["failures"].value is False and c["job MTBF (h)"].disabled
    assert headline_of(box) == explorer_headline_html(gap_scenario(ranks=32, step_s=1.0, mtbf_hours=None).headline)
    capsys.readouterr()
    with pytest.raises(TypeError, match="rank"):
        gap_explorer(rank=32)


def test_explorer_headlines_hold_hand_computed_values(capsys):
    """The explorers' opening headlines against figures worked out by hand from their sources,
    not from the scenario code they display."""
    import math

    # Checkpoints at 16,384 GPUs with the Llama 3 405B failure rate (419 unexpected interruptions
    # in 54 days on 16,384 H100s, arXiv:2407.21783 Sec. 3.3.4): job MTBF = 54 d x 24 h / 419 =
    # 3.093 h; Daly (2006) with a 60 s blocking write: sqrt(2 * 60 * M) * (1 + sqrt(60 / 2M) / 3
    # + (60 / 2M) / 9) - 60 = 1,116 s = 18.6 min.
    mtbf_s = 54 * 86400 / 419
    daly = math.sqrt(2 * 60 * mtbf_s) * (1 + math.sqrt(60 / (2 * mtbf_s)) / 3 + 60 / (2 * mtbf_s) / 9) - 60
    assert (round(mtbf_s / 3600, 2), round(daly / 60, 1)) == (3.09, 18.6)
    head = headline_of(checkpoint_explorer())
    assert f"every {daly / 60:.1f} min (Daly); job MTBF {mtbf_s / 3600:.2f} h" in head
    # GEM at its defaults: 1e24 FLOPs on 4,096 H100 SXM (989.4 TFLOP/s dense bf16, NVIDIA's H100
    # datasheet) at 10 % end-to-end MFU take 1e24 / (4096 x 989.4e12 x 0.10) s = 28.6 days and
    # 4096 x that / 3600 = 2,807,5xx GPU-hours; 4x the FLOPs at 2x the efficiency: 2x the hours.
    wall = 1e24 / (4096 * 989.4e12 * 0.10)
    head = headline_of(gem_explorer())
    assert f"2.00× GPU-hours ({4096 * wall / 3600:,.0f} → " in head
    assert f"{wall / 86400:.1f} → {2 * wall / 86400:.1f} days" in head
    capsys.readouterr()
