"""Notebooks in a real browser: JupyterLab in headless Chromium, driven by Playwright.

Each test opens a notebook, runs all cells, checks that no cell raised and the console stayed
clean, moves a slider and checks the displayed result against the pure function behind it.
"""

from __future__ import annotations

import re

import pytest

from _browser import collect_console_errors, launch, open_and_run_all, require_browser, start_lab
from mfu_toolkit.widgets import CalculatorInputs, calculator_result

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    require_browser()
    server = start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser():
    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


@pytest.fixture
def page(browser, tmp_path):
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    yield pg
    context.close()


def test_01_calculator_slider_updates_mfu(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "01_mfu_basics.ipynb")
    calc = page.locator(".mfu-calculator").first
    calc.scroll_into_view_if_needed()
    expect(calc.locator(".mfu-value")).to_contain_text("MFU: 1.58%", timeout=20_000)
    assert page.locator("table.dataframe").first.is_visible()
    assert page.locator(".jp-RenderedImage img").first.is_visible()

    # The first slider is the GPU count (128). ArrowRight moves it by one step: 129 GPUs.
    handle = calc.locator(".noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    expected = calculator_result(CalculatorInputs("H100 SXM", "bf16", 129, 2.4e15, 1.2))
    assert f"{expected.mfu:.2%}" != "1.58%" or expected.n_accelerators == 129
    expect(calc.locator(".mfu-result")).to_contain_text(re.compile(r"129 ×"), timeout=20_000)
    expect(calc.locator(".mfu-value")).to_contain_text(f"MFU: {expected.mfu:.2%}")
    page.screenshot(path=str(tmp_path / "01_mfu_basics.png"), full_page=False)
    assert not errors, errors
