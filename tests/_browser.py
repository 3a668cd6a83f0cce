"""Drive JupyterLab (and Voila) in headless Debian Chromium with Playwright.

Chromium comes from the Debian package ``chromium`` (``/usr/bin/chromium``), never from
``playwright install``. Without it the browser tests skip with the reason, unless
``MFU_REQUIRE_BROWSER=1`` (CI), where a missing browser is a failure.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("MFU_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
# Console noise that is not the notebook's doing (checked by hand; each entry says why).
BENIGN_CONSOLE = (
    "favicon",  # the server has no favicon at some paths
    "Failed to load resource: the server responded with a status of 404",  # optional lab assets
)


def require_browser() -> None:
    """Skip (or, under MFU_REQUIRE_BROWSER=1, fail) when Chromium or Playwright is missing."""
    problems = []
    if not Path(CHROMIUM).exists():
        problems.append(f"Chromium not found at {CHROMIUM} (install the Debian package 'chromium')")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("the 'playwright' Python package is not installed")
    if problems:
        reason = "browser tests need: " + "; ".join(problems)
        if os.environ.get("MFU_REQUIRE_BROWSER") == "1":
            pytest.fail(reason + " (MFU_REQUIRE_BROWSER=1)", pytrace=False)
        pytest.skip(reason)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def copy_project_tree(dest: Path) -> Path:
    """Copy notebooks/ and data/ so a browser run never writes into the repository."""
    for name in ("notebooks", "data"):
        src = ROOT / name
        if src.exists():
            shutil.copytree(src, dest / name, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    return dest


class Server:
    """A JupyterLab or Voila server in its own process group on loopback."""

    def __init__(self, cmd: list[str], url: str, probe: str, log: Path, cwd: Path, env: dict[str, str] | None = None):
        self.url = url
        self.log = log
        self._fh = log.open("w")
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})})
        deadline = time.time() + 90
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"server exited early:\n{log.read_text()[-3000:]}")
            try:
                urllib.request.urlopen(probe, timeout=2)
                return
            except urllib.error.HTTPError:
                return  # it answered
            except OSError:
                time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"server did not answer within 90 s:\n{log.read_text()[-3000:]}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        self._fh.close()


def start_lab(tmp: Path) -> Server:
    root = copy_project_tree(tmp / "root")
    settings = tmp / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = free_port(), secrets.token_hex(16)
    cmd = [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}", f"--ServerApp.root_dir={root}",
           f"--LabApp.workspaces_dir={tmp / 'ws'}", f"--LabApp.user_settings_dir={tmp / 'settings'}",
           "--LabApp.news_url=None", "--LabApp.extension_manager=readonly",
           "--LabApp.expose_app_in_browser=True"]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")
    base = f"http://127.0.0.1:{port}"
    server = Server(cmd, base, f"{base}/api/status?token={token}", tmp / "lab.log", root)
    server.token = token  # type: ignore[attr-defined]
    return server


def start_make_lab(tmp: Path, lab_root: Path) -> Server:
    """``make lab`` as a user runs it (the curated notebooks signed, ``lab-settings/`` applied), serving
    ``lab_root`` on a free port. Jupyter's config, data (signatures) and runtime dirs are in ``tmp``, so
    the user's own are never touched; the token is chosen here (``JUPYTER_TOKEN``)."""
    env = {"JUPYTER_CONFIG_DIR": str(tmp / "cfg"), "JUPYTER_DATA_DIR": str(tmp / "data"),
           "JUPYTER_RUNTIME_DIR": str(tmp / "run"), "JUPYTER_TOKEN": secrets.token_hex(16)}
    news = tmp / "cfg" / "lab" / "user-settings" / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True, exist_ok=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false",
                                                                      "checkForUpdates": False}))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = Server(["make", "lab", f"PORT={port}", f"LAB_ROOT={lab_root}"], base,
                    f"{base}/api/status?token={env['JUPYTER_TOKEN']}", tmp / "make-lab.log", ROOT, env=env)
    server.token = env["JUPYTER_TOKEN"]  # type: ignore[attr-defined]
    return server


def start_voila(tmp: Path, notebook: str) -> Server:
    root = copy_project_tree(tmp / "root")
    port = free_port()
    cmd = [sys.executable, "-m", "voila", f"notebooks/{notebook}", "--no-browser", f"--port={port}",
           "--Voila.ip=127.0.0.1", "--Voila.port_retries=0"]
    base = f"http://127.0.0.1:{port}"
    return Server(cmd, base, f"{base}/__probe_not_a_page__", tmp / "voila.log", root)


def launch(playwright):
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS, headless=True)


_WAIT_KERNEL = """async () => {
  const app = window.jupyterapp;
  const w = app.shell.currentWidget;
  if (!w || !w.context || !w.sessionContext) return false;
  await w.context.ready;
  await w.sessionContext.ready;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.connectionStatus === 'connected' && k.status === 'idle';
}"""

_DONE = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const k = w.sessionContext.session && w.sessionContext.session.kernel;
  const cells = w.content.widgets.filter(c => c.model.type === 'code');
  const pending = cells.filter(c => c.model.executionCount === null && c.model.sharedModel.getSource().trim() !== '');
  const running = Array.from(document.querySelectorAll('.jp-InputPrompt')).some(p => p.textContent.includes('*'));
  return {idle: !!k && k.status === 'idle', pending: pending.length, running, total: cells.length};
}"""

_ERRORS = """() => {
  const w = window.jupyterapp.shell.currentWidget;
  const errs = [];
  w.content.widgets.forEach((c, i) => {
    if (c.model.type !== 'code') return;
    c.model.outputs.toJSON().forEach(o => { \
if (o.output_type === 'error') errs.push(`cell ${i}: ${o.ename}: ${o.evalue}`); });
  });
  return errs;
}"""


def open_and_run_all(page, server: Server, notebook: str, timeout_s: float = 180) -> None:
    """Open ``notebooks/<notebook>`` in JupyterLab, wait for the kernel, run all, wait for the end."""
    page.goto(f"{server.url}/lab/tree/notebooks/{notebook}?token={server.token}")  # type: ignore[attr-defined]
    page.wait_for_function("() => window.jupyterapp && window.jupyterapp.shell.currentWidget", timeout=60_000)
    deadline = time.time() + 90
    while not page.evaluate(_WAIT_KERNEL):
        if time.time() > deadline:
            raise AssertionError(f"{notebook}: kernel not idle/connected after 90 s")
        time.sleep(0.5)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    deadline = time.time() + timeout_s
    time.sleep(1.0)
    while True:
        state = page.evaluate(_DONE)
        if state["idle"] and not state["pending"] and not state["running"]:
            break
        if time.time() > deadline:
            raise AssertionError(f"{notebook}: run-all did not finish in {timeout_s} s: {state}")
        time.sleep(0.5)
    errors = page.evaluate(_ERRORS)
    assert not errors, f"{notebook}: cells raised: {errors}"


def collect_console(page, level: str = "error") -> list[str]:
    """The page's console messages of ``level`` ("error" or "warning") from now on, the benign noise of
    :data:`BENIGN_CONSOLE` aside; errors include the page's uncaught exceptions."""
    seen: list[str] = []

    def on_console(msg):
        if msg.type == level and not any(b in msg.text for b in BENIGN_CONSOLE):
            seen.append(msg.text)

    page.on("console", on_console)
    if level == "error":
        page.on("pageerror", lambda exc: seen.append(f"pageerror: {exc}"))
    return seen


def collect_console_errors(page) -> list[str]:
    return collect_console(page, "error")


def nudge_first_slider(page, explorer, before: str, after: str, table_text: str) -> None:
    """An explorer that shows the headline ``before`` with its chart and table; one ArrowRight on its
    first slider must make the headline ``after``, put ``table_text`` in its table and redraw the
    chart in place (one image, not the old one)."""
    from playwright.sync_api import expect

    explorer.scroll_into_view_if_needed()
    expect(explorer.locator(".mfu-headline")).to_have_text(before, timeout=30_000)
    expect(explorer.locator(".widget-output img").first).to_be_visible(timeout=20_000)
    expect(explorer.locator(".widget-output table.dataframe").first).to_be_visible()
    src_before = explorer.locator(".widget-output img").first.get_attribute("src")
    handle = explorer.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed()
    handle.focus()
    page.keyboard.press("ArrowRight")
    expect(explorer.locator(".mfu-headline")).to_have_text(after, timeout=30_000)
    table = explorer.locator(".widget-output table.dataframe")
    expect(table.first).to_contain_text(table_text, timeout=20_000)
    expect(explorer.locator(".widget-output img")).to_have_count(1, timeout=20_000)  # redrawn in place
    expect(table).to_have_count(1)
    assert explorer.locator(".widget-output img").first.get_attribute("src") != src_before  # a new chart


class StaticSite:
    """A folder served over HTTP on loopback by a thread (the docs site as a browser reads it)."""

    def __init__(self, folder: Path):
        import functools
        import http.server
        import threading

        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):  # noqa: D102  (no access log on the test's stderr)
                pass

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                                     functools.partial(Quiet, directory=str(folder)))
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def block_network(context, allowed: tuple[str, ...]) -> list[str]:
    """Abort every request of ``context`` whose URL does not start with one of ``allowed`` (the local
    site, ``file:``); returns the list the aborted URLs are appended to, so a test can assert it empty."""
    attempted: list[str] = []

    def handle(route):
        url = route.request.url
        if url.startswith(allowed):
            route.continue_()
        else:
            attempted.append(url)
            route.abort()

    context.route("**/*", handle)
    return attempted
