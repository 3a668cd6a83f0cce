"""The workshop app (``make app``): notebooks/workshop_app.ipynb served by Voila, in headless Chromium.

Voila runs on loopback on a copy of the project (``tests/_browser.py:start_voila``); the page
must show every explorer with no code cell, no error and a clean console, and one slider move
must change the straggler explorer's headline to the one its pure function gives.

The console must hold no warning either. Voila's page shares JupyterLab's packages with the widget
extensions it loads (webpack module federation); an extension built against a newer JupyterLab than
the one inside Voila's page logs one "Unsatisfied version" warning per package (13 with Voila 0.5.13,
whose page carries JupyterLab 4.2.5, and jupyterlab_widgets 3.0.17, built for ^4.6.2).
``constraints.txt`` pins versions that agree; a warning here means they no longer do.

Voila's ``lab`` template links the Font Awesome stylesheet from a CDN. Offline, that request can
hang until the DNS lookup gives up, and the page waits for it before it starts the widgets; the
test answers it with an empty stylesheet (icons only) and fails on any other off-machine request.
"""

from __future__ import annotations

import re

import pytest
from _browser import collect_console, collect_console_errors, start_voila

from mfu_toolkit.scenarios.whatif import straggler_scenario
from mfu_toolkit.widgets import CalculatorInputs, calculator_result

pytestmark = pytest.mark.browser

EXPLORERS = (".mfu-calculator", ".flops-explorer", ".gap-explorer", ".straggler-explorer",
             ".checkpoint-explorer", ".gem-explorer")
# What the app opens with (workshop_app.ipynb, section 4) and one notch of the ranks slider.
STRAGGLER = {"jitter_cv": 0.05, "slow_ranks": 1, "slowdown": 1.2}
CDN_STYLESHEET = re.compile(r"^https://cdn\.jsdelivr\.net/npm/@fortawesome/fontawesome-free@[^/]+/css/[\w.-]+\.css$")


def _offline(context) -> list[str]:
    """Serve the template's CDN stylesheet empty; abort and record any other off-machine request."""
    elsewhere: list[str] = []

    def handle(route):
        url = route.request.url
        if CDN_STYLESHEET.match(url):
            route.fulfill(status=200, content_type="text/css", body="/* offline */")
        else:
            elsewhere.append(url)
            route.abort()

    context.route(re.compile(r"^(?!https?://127\.0\.0\.1[:/])[a-z]+://"), handle)
    return elsewhere


def test_workshop_app_in_voila(browser, tmp_path):
    from playwright.sync_api import expect

    server = start_voila(tmp_path, "workshop_app.ipynb")
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    elsewhere = _offline(context)
    try:
        page = context.new_page()
        errors = collect_console_errors(page)
        warnings = collect_console(page, "warning")
        # "commit", not "load": Voila streams the page while the kernel runs the cells, and the
        # explorers' visibility below is the real readiness check
        page.goto(server.url + "/", timeout=120_000, wait_until="commit")
        for css in EXPLORERS:
            expect(page.locator(css).first).to_be_visible(timeout=120_000)

        # the calculator opens on the MFU the pure function gives
        mfu = calculator_result(CalculatorInputs("H100 SXM", "bf16", 128, 2.4e15, 1.2)).mfu
        expect(page.locator(".mfu-calculator .mfu-value").first).to_contain_text(f"MFU: {mfu:.2%}")

        strag = page.locator(".straggler-explorer").first
        strag.scroll_into_view_if_needed()
        before = straggler_scenario(ranks=1024, **STRAGGLER).headline
        expect(strag.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
        expect(strag.locator(".widget-output img").first).to_be_visible()
        expect(strag.locator(".widget-output table").first).to_be_visible()

        # The first slider is the job size (1,024 ranks); ArrowRight moves it one option: 2,048.
        handle = strag.locator(".noUi-handle").first
        handle.focus()
        page.keyboard.press("ArrowRight")
        after = straggler_scenario(ranks=2048, **STRAGGLER).headline
        assert after != before
        expect(strag.locator(".mfu-headline")).to_have_text(after, timeout=30_000)
        expect(strag.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place, not appended

        # a dashboard: no code, no error output, no traceback
        code_inputs = page.locator(".jp-CodeCell .jp-InputArea")
        assert all(not code_inputs.nth(i).is_visible() for i in range(code_inputs.count()))
        assert page.locator(".jp-CodeCell").count() >= len(EXPLORERS)
        assert page.locator(".jp-CodeCell.jp-mod-noInput").count() == page.locator(".jp-CodeCell").count()
        html = page.content()
        for leak in ("NBVAL_IGNORE_OUTPUT", "import matplotlib", "straggler_explorer("):
            assert leak not in html, f"code shown in the app: {leak!r}"
        assert page.locator("[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
        body = page.locator("body").inner_text()
        assert "Traceback" not in body and "There was an error" not in body
        for css in EXPLORERS:  # one picture per explorer, to look at
            page.locator(css).first.screenshot(path=str(tmp_path / f"app-{css.strip('.')}.png"))
        assert not errors, errors
        assert not warnings, f"{len(warnings)} console warnings:\n" + "\n".join(warnings)
        assert not elsewhere, f"the app reached off the machine: {elsewhere}"
    except Exception:
        # pytest shows captured output of a failing test: the server's side of the story
        print(f"--- {server.log} (last 4000 characters) ---\n{server.log.read_text()[-4000:]}")
        print(f"off-machine requests: {elsewhere}")
        raise
    finally:
        context.close()
        server.stop()
