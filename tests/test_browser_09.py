"""Notebook 09 (at scale) in a real browser: JupyterLab in headless Chromium, driven by
Playwright (fixtures ``lab`` and ``page`` in ``tests/conftest.py``)."""

from __future__ import annotations

import pytest
from _browser import collect_console_errors, open_and_run_all

pytestmark = pytest.mark.browser


def test_09_at_scale_runs_out_of_core_and_names_the_straggler(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, "09_at_scale.ipynb")
    # the breakdown computed from the DuckDB reductions: its table, led by the ideal compute
    expect(page.locator("table.dataframe", has_text="ideal_compute").first).to_be_visible(timeout=60_000)
    out = page.locator(".jp-OutputArea-output")
    # the job's shape from the notebook's own parameters: 4,096 ranks x 130 step executions
    expect(out.filter(has_text="rows in the dataset: 532,480").first).to_be_visible(timeout=60_000)
    expect(out.filter(has_text="persistent stragglers: [1234]").first).to_be_visible(timeout=60_000)
    expect(out.filter(has_text="straggler scores equal: True").first).to_be_visible(timeout=60_000)
    expect(page.locator(".jp-RenderedImage img")).to_have_count(2, timeout=60_000)
    page.screenshot(path=str(tmp_path / "09_at_scale.png"), full_page=False)
    assert not errors, errors
