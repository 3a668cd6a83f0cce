"""Explorers render from the committed notebook, before anything runs.

``tools/regen_notebooks.py`` saves each explorer's widget state in the notebook's metadata. JupyterLab
draws it only in a *trusted* notebook: the widget-view renderer of ``@jupyter-widgets/jupyterlab-manager``
is registered as unsafe, so an untrusted output falls back to its ``text/plain``, the
``VBox(children=…`` text a participant saw. ``make lab`` therefore signs the curated notebooks
(``jupyter trust``; a signature is a digest of the content, kept in the user's Jupyter data dir) and
points Lab at ``lab-settings/``, which keeps the widget manager's ``saveState`` off: with it on, the
manager marks a notebook modified for every explorer it restores from the file, so each committed
notebook with explorers would open modified (``tests/test_make_lab.py`` opens every one).

The browser test starts the real ``make lab`` (its Jupyter dirs in tmp_path, serving a copy of the
notebooks) and opens a committed notebook without running it; a copy altered by one byte is not
signed and shows the text, which is what every notebook showed before ``make lab`` signed them.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _browser import collect_console_errors, copy_project_tree, free_port, require_browser
from _procs import read_until, stop_process_group
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = "11_roofline.ipynb"  # the roofline explorer: three sliders, two dropdowns, a figure
STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"
needs_make = pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".venv" / "bin" / "python").exists(),
                                reason="needs make and the project's .venv (make venv)")


def _jupyter_env(tmp: Path) -> dict[str, str]:
    """Jupyter's config, data (signatures) and runtime dirs in tmp: the user's own are never touched."""
    env = {**os.environ, "JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_DATA_DIR": str(tmp / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "run"), "PYTHONUNBUFFERED": "1"}
    news = tmp / "cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                      "checkForUpdates": False}))
    return env


def _start_make_lab(tmp: Path, root: Path) -> tuple[subprocess.Popen, str, str]:
    """``make lab`` on a free port serving ``root``; returns the process, its base URL and token."""
    port = free_port()
    proc = subprocess.Popen(["make", "lab", f"PORT={port}", f"LAB_ROOT={root}"], cwd=ROOT, env=_jupyter_env(tmp),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    m, text = read_until(proc, rf"http://127\.0\.0\.1:{port}/lab\?token=([0-9a-f]+)", timeout_s=120)
    if m:
        return proc, f"http://127.0.0.1:{port}", m.group(1)
    stop_process_group(proc)
    raise AssertionError("make lab printed no URL:\n" + text[-3000:])


def test_make_lab_signs_the_notebooks_and_uses_the_project_settings():
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert "jupyter trust" in out and f"notebooks/{NOTEBOOK}" in out, out
    lab = [line for line in out.splitlines() if "jupyter lab" in line][0]
    assert f'--LabApp.app_settings_dir="{ROOT}/lab-settings"' in lab, lab
    overrides = json.loads((ROOT / "lab-settings" / "overrides.json").read_text())
    assert overrides == {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": False}}


@pytest.mark.browser
@needs_make
def test_committed_explorer_renders_in_lab_before_it_runs(browser, tmp_path):
    from playwright.sync_api import expect

    require_browser()
    root = copy_project_tree(tmp_path / "root") / "notebooks"
    # Control: the same notebook with one character of its title changed has no valid signature.
    altered = json.loads((root / NOTEBOOK).read_text())
    title = "".join(altered["cells"][0]["source"])
    altered["cells"][0]["source"] = title.replace("11 ·", "11 -", 1)
    (root / "altered.ipynb").write_text(json.dumps(altered, indent=1))
    proc, base, token = _start_make_lab(tmp_path, root)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    try:
        page = context.new_page()
        errors = collect_console_errors(page)
        page.goto(f"{base}/lab/tree/{NOTEBOOK}?token={token}")
        explorer = page.locator(".roofline-explorer").first
        explorer.scroll_into_view_if_needed(timeout=90_000)
        expect(explorer).to_be_visible()
        # The controls drawn from the saved state: the three sliders (sequence length, batch, hidden
        # size) and the dtype / accelerator dropdowns, with the figure the Output widget held.
        expect(explorer.locator(".noUi-handle")).to_have_count(3)
        expect(explorer.locator("select")).to_have_count(2)
        expect(explorer.locator(".widget-output img").first).to_be_visible()
        expect(explorer.locator(".widget-label").first).to_be_visible()
        # The saved slider readout: the default sequence length, 4,096 tokens.
        expect(explorer.locator(".widget-readout").first).to_have_text("4,096")
        expect(page.locator(".jp-OutputArea-output", has_text="VBox(children=")).to_have_count(0)
        # Nothing was executed: the explorer is the committed file's, not a fresh kernel's.
        assert page.locator(".jp-InputPrompt", has_text="*").count() == 0
        page.screenshot(path=str(tmp_path / "explorer_before_run.png"))

        page.goto(f"{base}/lab/tree/altered.ipynb?token={token}")
        expect(page.locator(".jp-OutputArea-output", has_text="VBox(children=").first).to_be_visible(timeout=90_000)
        expect(page.locator(".roofline-explorer:visible")).to_have_count(0)  # 11's tab is open, hidden
        assert not errors, errors
    finally:
        context.close()
        stop_process_group(proc)


def test_html_export_carries_the_explorer_state(tmp_path):
    """``jupyter nbconvert --to html`` of a committed notebook embeds the saved state and each view, so
    the page draws the explorers with the widget renderer the export links (unpkg, needs a network)."""
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--log-level=ERROR",
                    "--output-dir", str(tmp_path), str(ROOT / "notebooks" / NOTEBOOK)], check=True)
    page = (tmp_path / NOTEBOOK.replace(".ipynb", ".html")).read_text()
    blocks = re.findall(r'<script type="(application/vnd\.jupyter\.widget-(?:state|view)\+json)">(.*?)</script>',
                        page, flags=re.S)
    views = [json.loads(html.unescape(body)) for kind, body in blocks if kind == VIEW]
    states = [json.loads(html.unescape(body)) for kind, body in blocks if kind == STATE]
    assert len(states) == 1 and views, [kind for kind, _ in blocks]
    state = states[0]["state"]
    explorers = [v["model_id"] for v in views if "roofline-explorer" in state[v["model_id"]]["state"]["_dom_classes"]]
    assert explorers, [v["model_id"] for v in views]
    # every model the explorer's tree names is in the embedded state
    todo, seen = list(explorers), set()
    while todo:
        mid = todo.pop()
        assert mid in state, f"the view's tree names {mid}, which the export did not embed"
        seen.add(mid)
        todo += [r for r in re.findall(r"IPY_MODEL_([\w-]+)", json.dumps(state[mid])) if r not in seen]
    assert "@jupyter-widgets/html-manager" in page and "embed-amd.js" in page


def _regen_module():
    return load_script("tools/regen_notebooks.py")


def test_numbers_are_written_as_javascript_writes_them():
    """JupyterLab saves what ``JSON.stringify`` writes: an integral double below 1e21 as its digits
    (ECMA-262 Number::toString: ``2.0`` is ``2``, ``2.4e18`` is ``2400000000000000000``, ``-0`` is ``0``),
    from 1e21 on with an exponent, and a fraction as it is."""
    to_js = _regen_module().as_javascript_numbers
    got = to_js({"a": [2.0, 2.4e18, -0.0, 0.5, 1e21, 1e-06, 3, True, "2.0", None]})
    assert got == {"a": [2, 2400000000000000000, 0, 0.5, 1e21, 1e-06, 3, True, "2.0", None]}
    assert [type(v) for v in got["a"][:5]] == [int, int, int, float, float]
    assert json.dumps(got["a"][:3]) == "[2, 2400000000000000000, 0]"


CURATED = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + [ROOT / "notebooks" / "workshop_app.ipynb"]


@pytest.mark.parametrize("path", CURATED, ids=lambda p: p.name)
def test_a_committed_notebook_is_in_the_form_lab_saves(path):
    """The file is what ``tools/regen_notebooks.py`` writes (the kernel's installed spec, numbers as
    JavaScript writes them), so Lab opens it unmodified and its save writes the same bytes; the browser
    test of ``tests/test_make_lab.py`` checks the same in Lab itself."""
    import nbformat

    regen = _regen_module()
    nb = nbformat.read(path, as_version=4)
    again = nbformat.writes(regen.as_lab_saves(nb, nb.metadata["kernelspec"]["name"])) + "\n"
    assert again == path.read_text(), f"{path.name}: run tools/regen_notebooks.py --no-execute {path.name}"
