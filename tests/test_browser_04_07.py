"""Notebooks 04 (steady state vs end to end) and 07 (scaling and the GEM story) in a real browser.

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
from _browser import collect_console_errors, open_and_run_all

from mfu_toolkit.scenarios.whatif import gap_scenario, gem_scenario

pytestmark = pytest.mark.browser

MLPERF_GPT3 = Path("mlperf", "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt")


def _real_section_text() -> str:
    """What section 6 of notebook 04 prints first, given this process's MFU_REALDATA."""
    value = os.environ.get("MFU_REALDATA", "").strip()
    if not value:
        return "Section 6 skipped: MFU_REALDATA is not set"
    if Path(value).is_absolute() and (Path(value) / MLPERF_GPT3).is_file():
        return "24 training blocks of 50,331,648 tokens"
    # a relative folder is resolved from the lab's copy of notebooks/, where it may not exist
    return MLPERF_GPT3.name if (Path(value) / MLPERF_GPT3).is_file() else "Section 6 skipped"


def _move_first_slider(page, explorer) -> None:
    handle = explorer.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")


def test_04_gap_explorer_slider_moves_waterfall(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "04_steady_state_vs_end_to_end.ipynb")
    # committed outputs: figures (timeline, step times, waterfall) and the breakdown tables
    assert page.locator(".jp-RenderedImage img").first.is_visible()
    assert page.locator(".jp-RenderedImage img").count() >= 3
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="check: 41.98% × goodput 44.92% = 18.86% end to end")
           .first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text=_real_section_text()).first).to_be_attached()

    explorer = page.locator(".gap-explorer").first
    explorer.scroll_into_view_if_needed()
    before = gap_scenario().headline
    expect(explorer.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()

    # The first slider is the rank count (16 of 4, 8, 16, 32, 64). ArrowRight moves it to 32.
    _move_first_slider(page, explorer)
    after = gap_scenario(ranks=32).headline
    assert after != before
    expect(explorer.locator(".mfu-headline")).to_have_text(after, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended
    expect(explorer.locator(".widget-output table.dataframe")).to_have_count(1, timeout=20_000)
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "04_gap_explorer.png"), full_page=False)
    assert not errors, errors


def test_07_gem_explorer_slider_moves_gpu_hours(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "07_scaling_and_the_gem_story.ipynb")
    assert page.locator(".jp-RenderedImage img").first.is_visible()
    assert page.locator(".jp-RenderedImage img").count() >= 4  # GPU-hours, fixes, wall time, scaling
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output",
                        has_text="combinations reaching ×2: restart ×½ + async checkpoints").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="ConfoundedComparisonWarning").first).to_be_attached()

    explorer = page.locator(".gem-explorer").first
    explorer.scroll_into_view_if_needed()
    before = gem_scenario().headline
    expect(explorer.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text("5,615,075")

    # The first slider is the training-FLOPs multiplier (4.0, step 0.5). ArrowRight: 4.5.
    _move_first_slider(page, explorer)
    after = gem_scenario(flops_multiplier=4.5)
    assert after.headline != before
    expect(explorer.locator(".mfu-headline")).to_have_text(after.headline, timeout=30_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text(
        f"{after.scaled_gpu_hours:,.0f}", timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "07_gem_explorer.png"), full_page=False)
    assert not errors, errors
