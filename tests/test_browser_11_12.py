"""Notebooks 11 (the roofline) and 12 (check a claim) in a real browser.

JupyterLab in headless Chromium, driven by Playwright (fixtures ``lab`` and ``page`` in
``tests/conftest.py``).
"""

from __future__ import annotations

import pytest
from _browser import collect_console_errors, open_and_run_all

from mfu_toolkit.widgets import roofline_scenario

pytestmark = pytest.mark.browser


def test_11_roofline_explorer_slider_moves_the_headline(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "11_roofline.ipynb")
    explorer = page.locator(".roofline-explorer").last
    explorer.scroll_into_view_if_needed()
    expect(explorer.locator(".mfu-headline")).to_contain_text(
        roofline_scenario().headline, timeout=20_000)
    assert page.locator(".jp-RenderedImage img").first.is_visible()
    # The first slider is the sequence length (4,096). ArrowRight moves it one option: 8,192.
    handle = explorer.locator(".noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    after = roofline_scenario(seq_len=8192).headline
    assert after != roofline_scenario().headline
    expect(explorer).to_contain_text(after, timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place
    page.screenshot(path=str(tmp_path / "11_roofline.png"), full_page=False)
    assert not errors, errors


def test_12_check_a_claim_runs_and_shows_its_tables(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "12_check_a_claim.ipynb")
    tables = page.locator("table.dataframe")
    expect(tables.first).to_be_visible(timeout=20_000)
    # the recomputed MI350X MFU: 1.52 × 312 / 2,306.9 (the registry's AMD figure) = 0.206
    # (the notebook's table, 3 decimals)
    expect(page.locator("table.dataframe", has_text="MI350X, Llama 3 8B")).to_contain_text("0.206")
    page.screenshot(path=str(tmp_path / "12_check_a_claim.png"), full_page=False)
    assert not errors, errors
