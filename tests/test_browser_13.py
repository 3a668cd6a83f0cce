"""Notebook 13 (where communication and downtime go) in a real browser.

JupyterLab in headless Chromium, driven by Playwright (fixtures ``lab`` and ``page`` in
``tests/conftest.py``). The test opens the notebook, runs all cells, checks that no cell raised and
the console stayed clean, that the committed figures and tables render and that the real-log
sections print what ``MFU_REALDATA`` gives them (their results, or the line saying they were
skipped); then it moves the first slider of the communication explorer one notch and checks that
the headline becomes exactly what the pure function behind it gives for the new value, with the
chart and table redrawn in place.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from _browser import ROOT, collect_console_errors, nudge_first_slider, open_and_run_all

from mfu_toolkit.widgets_comm import comm_scenario, comm_table

pytestmark = pytest.mark.browser

NOTEBOOK = "13_communication_and_downtime.ipynb"


def _real_section_texts() -> list[str]:
    """What the real-log sections print first, given this process's MFU_REALDATA.

    The notebook resolves a relative MFU_REALDATA against its own folder, the folder above it, and
    the project root; in the lab's copy of notebooks/ only the project root can hold the data."""
    value = os.environ.get("MFU_REALDATA", "").strip()
    if not value:
        return ["Skipped: MFU_REALDATA is not set"]
    folder = Path(value) if Path(value).is_absolute() else ROOT / value
    for sub in ("nccl", "nsys", "straggler_ops", "flight_recorder", "gpu_goodput", "llamafactory"):
        assert (folder / sub).is_dir(), f"MFU_REALDATA={value!r} has no {sub} folder"
    return [
        # section 1: the Inspector line's bus bandwidth, recomputed by hand
        "busbw = algbw × 2(3−1)/3 = 0.555850 GB/s",
        # section 4: the compute straggler and the rank that waits for it
        "No communication straggler: compute straggler rank 0 (stage 0)",
        # section 5: the culprit of the GIL-lock hang, as mfu analyze prints it
        "Rank(s) 9, 14 never reached nccl:all_to_all (2048x5120 BFloat16) in process group 72",
        # section 6: Google's goodput reproduced
        "goodput 43.43365 % (the resiliency library's rule, reference step 8 s)",
    ]


def test_13_communication_explorer_slider_moves_the_mfu(lab, page, tmp_path):
    from playwright.sync_api import expect

    errors = collect_console_errors(page)
    open_and_run_all(page, lab, NOTEBOOK)
    # committed outputs: the hand-computed floors and the explorer's pure function, checked on every run
    assert page.locator("table.dataframe").first.is_visible()
    expect(page.locator(".jp-OutputArea-output", has_text="64 ranks on InfiniBand NDR").first).to_be_visible()
    expect(page.locator(".jp-OutputArea-output",
                        has_text="host node3 (ranks 6, 7), comm +58% over its peers' median").first).to_be_attached()
    for text in _real_section_texts():
        expect(page.locator(".jp-OutputArea-output", has_text=text).first).to_be_attached()
    if os.environ.get("MFU_REALDATA", "").strip():
        assert page.locator(".jp-RenderedImage img").count() >= 3  # Nsight bars, per-rank bars, restarts

    explorer = page.locator(".comm-explorer").first
    before = comm_scenario()
    # The first slider is the bytes per step (16 GB among 1, 2, 5 × 10^k). ArrowRight moves it to 20 GB.
    after = comm_scenario(size_bytes=2e10)
    assert after.headline != before.headline and after.mfu_after < before.mfu_after
    nudge_first_slider(page, explorer, before.headline, after.headline,
                       comm_table(after).loc["time floor (at the peak)", "value"])
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(tmp_path / "13_comm_explorer.png"), full_page=False)
    assert not errors, errors
