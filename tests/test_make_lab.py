"""`make lab`, one of the two commands the README promises, starts JupyterLab — as root too.

Jupyter refuses to run as root without ``--allow-root`` ("Running as root is not recommended"),
which is how containers and dev VMs run it. The Makefile adds the flag only for root and says so.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest
from _procs import read_until, stop_process_group

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".venv" / "bin" / "python").exists(),
                                 reason="needs make and the project's .venv (make venv)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dry_run_adds_allow_root_only_for_root():
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    command = [line for line in out.splitlines() if "jupyter lab" in line]
    assert command, out
    assert ("--allow-root" in command[0]) == (os.geteuid() == 0)


def test_make_lab_starts_and_prints_its_url(tmp_path):
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")}
    proc = subprocess.Popen(["make", "lab", f"PORT={port}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _, text = read_until(proc, re.escape(f"127.0.0.1:{port}/lab"), timeout_s=90)
        assert f"127.0.0.1:{port}/lab" in text, text[-2000:]
        assert "Running as root is not recommended" not in text
        if os.geteuid() == 0:
            assert "running as root, so JupyterLab starts with --allow-root" in text
    finally:
        stop_process_group(proc)


# --- a committed notebook opens unchanged -------------------------------------------------------

# Every curated notebook: the numbered ones and the workshop app.
CURATED = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")) + ["workshop_app.ipynb"]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_OPEN = """async (path) => {
  const app = window.jupyterapp;
  const w = await app.commands.execute('docmanager:open', {path});
  await w.context.ready;
  await w.sessionContext.ready;
  return true;
}"""
# Loaded: the kernel idle, and every widget-view output drawn (an explorer, or the manager's own
# error text): the widget manager has restored the saved state by then, which is when it would
# mark the document modified if it did.
_LOADED = """(mime) => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  let views = 0, drawn = 0;
  w.content.widgets.forEach(c => {
    if (c.model.type !== 'code') return;
    const outs = c.model.outputs.toJSON();
    outs.forEach((o, i) => {
      if (!o.data || !o.data[mime]) return;
      views += 1;
      const node = c.outputArea.widgets[i] && c.outputArea.widgets[i].node;
      const failed = node && /Error displaying widget/.test(node.textContent);
      if (node && (node.querySelector('.jupyter-widgets') || failed)) drawn += 1;
    });
  });
  return {idle: !!k && k.status === 'idle', views, drawn};
}"""
_STATE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const tab = document.querySelector('.lm-DockPanel-tabBar .lm-TabBar-tab.jp-mod-current');
  return {dirty: w.context.model.dirty, tabDirty: !!tab && tab.classList.contains('jp-mod-dirty'),
          title: document.title, saved: w.context.contentsModel.last_modified};
}"""
_SAVE_AND_CLOSE = """async () => {
  const w = window.jupyterapp.shell.currentWidget;
  await w.context.save();
  const saved = w.context.contentsModel.last_modified;
  await w.sessionContext.shutdown();
  w.dispose();
  return saved;
}"""


def _lab_config(tmp: Path) -> None:
    """The test's own Jupyter config (in tmp): ``window.jupyterapp`` exposed so the page can read a
    document's model; ``make lab``'s flags, the project's settings and the notebooks are unchanged."""
    cfg = tmp / "cfg"
    cfg.mkdir(parents=True, exist_ok=True)
    (cfg / "jupyter_server_config.json").write_text(json.dumps(
        {"LabApp": {"expose_app_in_browser": True, "news_url": None}, "ServerApp": {"port_retries": 0}}))


def _wait_loaded(page, name: str, timeout_s: float = 90) -> dict:
    deadline = time.monotonic() + timeout_s
    state = page.evaluate(_LOADED, WIDGET_VIEW)
    while not (state["idle"] and state["drawn"] == state["views"]):
        if time.monotonic() > deadline:
            raise AssertionError(f"{name}: not loaded after {timeout_s:.0f} s (kernel idle, views drawn): {state}")
        time.sleep(0.25)
        state = page.evaluate(_LOADED, WIDGET_VIEW)
    return state


@pytest.mark.browser
def test_every_curated_notebook_opens_unmodified_and_saves_the_same_bytes(browser, tmp_path):
    """Opened in ``make lab`` (signed, the project's lab settings), no curated notebook is marked
    modified (the model's ``dirty`` flag, the tab's ``jp-mod-dirty`` class, the ● in the title) once
    its kernel is idle and its saved explorers are drawn, and Lab's own save writes the committed bytes.

    What used to mark them: the kernel's spec name written over a hand-typed ``"Python 3"``
    (09-14), and the widget manager's ``saveState`` setting, which marks the document modified for
    every model it restores from the file (every notebook with explorers). The save also catches
    ``2.0`` written where Lab writes ``2``. The kernel that runs here must be the one that made the
    files (the project's venv): Lab writes that kernel's ``language_info`` into the document."""
    from _browser import copy_project_tree, require_browser, start_make_lab

    require_browser()
    root = copy_project_tree(tmp_path / "root") / "notebooks"
    committed = {name: (ROOT / "notebooks" / name).read_bytes() for name in CURATED}
    _lab_config(tmp_path)
    server = start_make_lab(tmp_path, root)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    try:
        page = context.new_page()
        page.goto(f"{server.url}/lab?token={server.token}")  # type: ignore[attr-defined]
        page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell", timeout=90_000)
        page.evaluate("async () => { await window.jupyterapp.started; await window.jupyterapp.restored; }")
        for name in CURATED:
            page.evaluate(_OPEN, name)
            loaded = _wait_loaded(page, name)
            state = page.evaluate(_STATE)
            if state["dirty"] or state["tabDirty"] or "●" in state["title"]:
                problems.append(f"{name}: marked modified on opening ({loaded['views']} widget views): {state}")
            before = state["saved"]
            saved = page.evaluate(_SAVE_AND_CLOSE)
            assert saved != before, f"{name}: Lab did not save"
            if (root / name).read_bytes() != committed[name]:
                problems.append(f"{name}: Lab's save wrote other bytes than the committed file")
        assert not problems, "\n".join(problems)
    except Exception:
        print(f"--- {server.log} (last 3000 characters) ---\n{server.log.read_text()[-3000:]}")
        raise
    finally:
        context.close()
        server.stop()
