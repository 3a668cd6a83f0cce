"""Notebook 14 (recommendation models at GEM scale) in a real browser.

JupyterLab in headless Chromium, driven by Playwright (fixtures ``lab`` and ``page`` in
``tests/conftest.py``). The test opens the notebook, runs all cells, checks that no cell raised and
the console stayed clean, that the committed figures and tables render and that the real-log
section prints what ``MFU_REALDATA`` gives it (the MLPerf table and ``mfu analyze``'s two-part
headline, or the line saying it was skipped); then it moves the first slider of the recommendation
explorer one notch and checks that the headline becomes exactly what the pure function behind it
gives for the new value, with the chart and table redrawn in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _browser import ROOT, collect_console_errors, nudge_first_slider, open_and_run_all

from mfu_toolkit.widgets_recsys import recsys_scenario, recsys_table

pytestmark = pytest.mark.browser

NOTEBOOK = "14_recsys_at_gem_scale.ipynb"


def _real_section_texts() -> list[str]:
    """What the real-log section prints, given this process's MFU_REALDATA.

    The notebook resolves a relative MFU_REALDATA against its own folder, the folder above it, and
    the project root; in the lab's copy of notebooks/ only the project root can hold the data."""
    value = os.environ.get("MFU_REALDATA", "").strip()
    if not value:
        return ["Skipped: MFU_REALDATA is not set"]
    folder = Path(value) if Path(value).is_absolute() else ROOT / value
    logs = sorted((folder / "mlperf").glob("*dlrm_dcnv2_result_0.txt"))
    assert len(logs) == 5, f"MFU_REALDATA={value!r} does not hold the five MLPerf DLRM-DCNv2 logs"
    return [
        # the logs alone: a count the log does not state stays unknown, with the reason
        "does not state the accelerator count N",
        # with the system descriptions: every run, its dense MFU and embedding bandwidth
        "v5.0 NVIDIA, 64× GB200",
        # mfu analyze on Fujitsu's log: the two-part headline
        "Embedding bandwidth utilisation: 34.45% steady state, 27.28% end to end",
    ]


def test_14_recsys_explorer_slider_moves_the_headline(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, NOTEBOOK)
    # committed outputs: the bytes by hand, mfu calc's two figures, the step at the roofline
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output",
                        has_text="214 lookups × 128 × 4 B × 5 = 547,840 B per sample").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output",
                        has_text="Embedding bandwidth utilisation: 29.99%").first).to_be_attached()
    expect(page.locator(".jp-OutputArea-output", has_text="MFU ceiling 30.4%").first).to_be_attached()
    for text in _real_section_texts():
        expect(page.locator(".jp-OutputArea-output", has_text=text).first).to_be_attached()
    # the roofline and the ceiling by batch, plus the MLPerf bars where the logs are given
    assert page.locator(".jp-RenderedImage img").count() >= (3 if os.environ.get("MFU_REALDATA", "").strip() else 2)

    explorer = page.locator(".recsys-explorer").first
    before = recsys_scenario()
    # The first slider is the embedding dimension (128 among 16 … 512). ArrowRight moves it to 256.
    after = recsys_scenario(embedding_dim=256)
    assert after.headline != before.headline and after.dense_mfu < before.dense_mfu
    nudge_first_slider(page, explorer, before.headline, after.headline,
                       recsys_table(after).loc["embedding bytes per sample", "value"])
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "14_recsys_explorer.png"), full_page=False)
    assert not errors, errors
