"""Notebooks in a real browser: JupyterLab in headless Chromium, driven by Playwright.

The fixtures ``lab`` (one JupyterLab server per session) and ``page`` (a fresh page with the
lab's saved workspace forgotten) live in ``tests/conftest.py``.

Each test opens a notebook, runs all cells, checks that no cell raised and the console stayed
clean, moves a slider and checks the displayed result against the pure function behind it.
"""

from __future__ import annotations

import re

import pytest
from _browser import collect_console_errors, open_and_run_all

from mfu_toolkit.widgets import CalculatorInputs, calculator_result

pytestmark = pytest.mark.browser


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
    assert f"{expected.mfu:.2%}" != "1.58%"  # the move must be visible in the printed value
    expect(calc.locator(".mfu-result")).to_contain_text(re.compile(r"129 ×"), timeout=20_000)
    expect(calc.locator(".mfu-value")).to_contain_text(f"MFU: {expected.mfu:.2%}")
    page.screenshot(path=str(tmp_path / "01_mfu_basics.png"), full_page=False)
    assert not errors, errors


def test_02_flops_explorer_slider_moves_breakdown(lab, page, tmp_path):
    from playwright.sync_api import expect

    from mfu_toolkit.widgets import flops_explorer_headline

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "02_model_flops.ipynb")
    explorer = page.locator(".flops-explorer").first
    explorer.scroll_into_view_if_needed()
    before = flops_explorer_headline("llama3-8b", seq_len=8192, batch=512, causal=False)
    expect(explorer.locator(".flops-value")).to_contain_text(before, timeout=20_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text("2.147 GFLOP")

    # The first slider is the sequence length (8,192). ArrowRight moves it one option: 16,384.
    handle = explorer.locator(".noUi-handle").first
    handle.focus()
    page.keyboard.press("ArrowRight")
    after = flops_explorer_headline("llama3-8b", seq_len=16384, batch=512, causal=False)
    assert after != before
    expect(explorer.locator(".flops-value")).to_contain_text(after, timeout=20_000)
    expect(explorer.locator(".flops-summary")).to_contain_text("16,384 tokens per sample")
    # The attention-score row doubles with T (2·T·H·Q·L = 4.295 GFLOP per token at 16,384).
    expect(explorer.locator(".widget-output table.dataframe").first).to_contain_text("4.295 GFLOP",
                                                                                    timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended
    page.screenshot(path=str(tmp_path / "02_model_flops.png"), full_page=False)
    assert not errors, errors


def test_03_loading_logs_runs_and_shows_the_tables(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "03_loading_logs.ipynb")
    tables = page.locator("table.dataframe")
    expect(tables.first).to_be_visible(timeout=20_000)
    expect(tables.first).to_contain_text("mlperf")  # the first fact sheet: the MLPerf sample
    # The damaged file's LoadReport: its table of skip reasons with their first line numbers.
    report = tables.filter(has_text="malformed JSON").first
    report.scroll_into_view_if_needed(timeout=20_000)
    expect(report).to_be_visible()
    expect(report).to_contain_text("6, 7, 13")
    page.screenshot(path=str(tmp_path / "03_loading_logs.png"), full_page=False)
    assert not errors, errors


def test_08_team_report_runs_on_the_sample_log(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "08_team_report.ipynb")
    # the answer's sections are HTML tables (checks, facts used, waterfall, scorecard), not DataFrames
    expect(page.locator(".jp-OutputArea-output table").first).to_be_visible(timeout=20_000)
    # The sample log's headline, as the committed notebook prints it (nbval checks the same text).
    expect(page.locator(".jp-OutputArea").filter(has_text="39.94%").first).to_be_visible(timeout=20_000)
    assert page.locator(".jp-RenderedImage img").count() >= 3
    page.screenshot(path=str(tmp_path / "08_team_report.png"), full_page=False)
    assert not errors, errors
