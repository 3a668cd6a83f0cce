"""Notebooks 05 (stragglers) and 06 (checkpoints and failures) in a real browser.

JupyterLab in headless Chromium, driven by Playwright (fixtures ``lab`` and ``page`` in
``tests/conftest.py``). Each test opens a notebook, runs all cells, checks that no cell raised
and the console stayed clean, that the committed figures and tables render, then moves the first
slider of the notebook's explorer one notch and checks that the headline becomes exactly what the
pure function behind the explorer gives for the new value, with the chart redrawn in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _browser import ROOT, collect_console_errors, open_and_run_all
from _realdata import realdata  # noqa: F401  (the fixture)

from mfu_toolkit.scenarios.whatif import checkpoint_scenario, straggler_scenario

pytestmark = pytest.mark.browser

# The explorer of notebook 05 opens on section 3's job without its hiccups.
STRAGGLER_OPENING = dict(jitter_cv=0.03, slow_ranks=1, slowdown=1.12)


def _real_section_text() -> str:
    """What section 4 of notebook 05 prints first, given this process's MFU_REALDATA.

    The notebook resolves a relative MFU_REALDATA against its own folder, the folder above it, and
    the project root; in the lab's copy of notebooks/ only the project root can hold the data."""
    value = os.environ.get("MFU_REALDATA", "").strip()
    if not value:
        return "Skipped: MFU_REALDATA is not set"
    folder = Path(value) if Path(value).is_absolute() else ROOT / value
    assert (folder / "straggler_ops").is_dir(), f"MFU_REALDATA={value!r} has no straggler_ops folder"
    return "== AR (named for: one slow worker): 64 GPUs = DP 4 × PP 4 × TP 4"


def _move_first_slider(page, explorer) -> None:
    handle = explorer.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")


def test_05_straggler_explorer_slider_moves_step_time(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "05_stragglers.ipynb")
    # committed outputs: expected step time, rank heatmap, spread distribution; tables
    assert page.locator(".jp-RenderedImage img").first.is_visible()
    assert page.locator(".jp-RenderedImage img").count() >= 3
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="Persistent stragglers (> 5% slower than the fastest "
                                                          "rank): rank 41").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text=_real_section_text()).first).to_be_attached()

    explorer = page.locator(".straggler-explorer").first
    explorer.scroll_into_view_if_needed()
    before = straggler_scenario(ranks=64, **STRAGGLER_OPENING).headline
    expect(explorer.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()

    # The first slider is the rank count (64 of 8, 16, ..., 16,384). ArrowRight moves it to 128.
    _move_first_slider(page, explorer)
    after = straggler_scenario(ranks=128, **STRAGGLER_OPENING)
    assert after.headline != before
    expect(explorer.locator(".mfu-headline")).to_have_text(after.headline, timeout=30_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text("128", timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended
    expect(explorer.locator(".widget-output table.dataframe")).to_have_count(1, timeout=20_000)
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "05_straggler_explorer.png"), full_page=False)
    assert not errors, errors


def test_05_replay_explorer_factor_moves_slowdown_and_waterfall(lab, page, tmp_path, realdata):  # noqa: F811
    """Section 7: the replay explorer opens on AR's slow worker at 1× (S as traced); one notch of
    the factor slider (2^0.05 = 1.035×) replays it again: a new S and a redrawn waterfall."""
    from playwright.sync_api import expect

    folder = realdata  # the replay explorer needs the real straggler_ops traces
    import warnings

    from mfu_toolkit.analysis import straggler_whatif
    from mfu_toolkit.io import load_run
    from mfu_toolkit.widgets import replay_scenario, replay_table

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ar = straggler_whatif(load_run(folder / "straggler_ops" / "trace-AR.parquet"))
    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "05_stragglers.ipynb")
    explorer = page.locator(".replay-explorer").first
    explorer.scroll_into_view_if_needed()
    before = replay_scenario(ar, job="AR", dp_rank=0, stage=0, factor=1.0)
    expect(explorer.locator(".mfu-headline")).to_have_text(before.headline, timeout=30_000)
    assert "S = 1.973 (as traced 1.973" in before.headline  # the artifact's S for AR
    img = explorer.locator(".widget-output img").first
    expect(img).to_be_visible(timeout=20_000)
    src_before = img.get_attribute("src")

    # The only slider is the factor (exponent of 2 in steps of 0.05): ArrowRight makes it 2^0.05.
    _move_first_slider(page, explorer)
    after = replay_scenario(ar, job="AR", dp_rank=0, stage=0, factor=2 ** 0.05)
    assert after.slowdown > before.slowdown  # the slowest worker got slower: the whole step waits
    expect(explorer.locator(".mfu-headline")).to_have_text(after.headline, timeout=30_000)
    table = explorer.locator(".widget-output table.dataframe")
    expect(table.first).to_contain_text(replay_table(after).loc["S (replayed / ideal)", "what-if (1.04×)"],
                                        timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place
    expect(table).to_have_count(1)
    assert explorer.locator(".widget-output img").first.get_attribute("src") != src_before  # a new chart
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "05_replay_explorer.png"), full_page=False)
    assert not errors, errors


def test_06_checkpoint_explorer_slider_moves_overhead(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "06_checkpoints_and_failures.ipynb")
    # committed outputs: timeline and overhead curve; tables
    assert page.locator(".jp-RenderedImage img").first.is_visible()
    assert page.locator(".jp-RenderedImage img").count() >= 2
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="job MTBF, unexpected only:     3.09 h").first
           ).to_be_visible()

    explorer = page.locator(".checkpoint-explorer").first
    explorer.scroll_into_view_if_needed()
    # checkpoint_explorer() opens on 16,384 GPUs at Llama 3's failure rate, 60 s blocking writes,
    # 10 min restarts, and the interval at the optimum rounded to 0.1 min
    opened = checkpoint_scenario(n_accelerators=16384, checkpoint_s=60.0, blocking=True, restart_s=600.0)
    interval_s = round(opened.optimum_s / 60.0, 1) * 60.0
    before = checkpoint_scenario(n_accelerators=16384, checkpoint_s=60.0, blocking=True, restart_s=600.0,
                                 interval_s=interval_s).headline
    expect(explorer.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()

    # The first slider is the GPU count (16,384 of 64 ... 32,768). ArrowRight moves it to 32,768;
    # the interval stays where it was, so the chosen point leaves the optimum.
    _move_first_slider(page, explorer)
    after = checkpoint_scenario(n_accelerators=32768, checkpoint_s=60.0, blocking=True, restart_s=600.0,
                                interval_s=interval_s)
    assert after.headline != before and after.overhead > after.optimum_overhead
    expect(explorer.locator(".mfu-headline")).to_have_text(after.headline, timeout=30_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text(
        f"{after.overhead:.2%}", timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended
    expect(explorer.locator(".widget-output table.dataframe")).to_have_count(1, timeout=20_000)
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "06_checkpoint_explorer.png"), full_page=False)
    assert not errors, errors
