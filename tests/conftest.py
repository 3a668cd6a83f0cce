"""Project-wide pytest set-up: nbval's sanitiser, markers, and the environment switches.

- ``MFU_REQUIRE_BROWSER=1``: a missing Chromium fails the browser tests instead of skipping them.
- ``MFU_REQUIRE_TORCH=1``: a missing PyTorch fails the FLOP-counter tests instead of skipping them.
- ``MFU_REQUIRE_SPARK=1``: a missing PySpark or Java fails the Spark engine tests instead of skipping them.
- ``MFU_REQUIRE_WHEEL=1``: where neither the package index nor a local wheelhouse is reachable, the
  built-wheel test (``tests/test_wheel.py``) fails instead of skipping.
- ``MFU_REALDATA``: folder of real training logs for the loader tests.
"""

from __future__ import annotations

import os
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import matplotlib
import pytest

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    # nbval resolves a relative sanitise file against the working directory; make it absolute.
    if hasattr(config.option, "nbval_sanitize_with") and not config.option.nbval_sanitize_with:
        config.option.nbval_sanitize_with = str(HERE / "nbval_sanitize.cfg")
    os.environ.setdefault("MPLBACKEND", "Agg")
    # `make test` runs pytest inside make: its MAKEFLAGS/MAKELEVEL would make every `make report`
    # or `make lab` a test starts a sub-make ("make[1]: ...", another exit status), not the
    # top-level command a user types. The tests run those as a user would.
    for name in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES"):
        os.environ.pop(name, None)
    # per-rank trace caches of read-only folders go to a folder of this run, not the user's cache
    if "MFU_CACHE_DIR" not in os.environ:
        os.environ["MFU_CACHE_DIR"] = tempfile.mkdtemp(prefix="mfu-test-cache-")


def _slow_tests() -> frozenset[str]:
    """The node ids of ``tests/slow_tests.txt`` (measured by ``tools/slow_tests.py``)."""
    path = HERE / "slow_tests.txt"
    lines = path.read_text().splitlines() if path.is_file() else []
    return frozenset(line.strip() for line in lines if line.strip() and not line.startswith("#"))


def pytest_collection_modifyitems(config, items):
    """A test that takes the ``realdata`` fixture is a real-log test (``-m realdata`` selects it,
    ``-m "not realdata"`` leaves it out), whether or not its module says so; a test listed in
    ``tests/slow_tests.txt``, or a browser test, is ``slow`` (``make unit`` leaves them out)."""
    slow = _slow_tests()
    for item in items:
        if "realdata" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.realdata)
        if (item.nodeid in slow or item.nodeid.split("::")[0] in slow
                or item.get_closest_marker("browser") is not None):
            item.add_marker(pytest.mark.slow)


# --- browser fixtures (JupyterLab + headless Chromium); see tests/_browser.py ----------------


@pytest.fixture(scope="session")
def lab(tmp_path_factory):
    """One JupyterLab server for the whole session, serving a copy of notebooks/ and data/."""
    from _browser import require_browser, start_lab

    require_browser()
    server = start_lab(tmp_path_factory.mktemp("lab"))
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser():
    from _browser import launch, require_browser

    require_browser()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = launch(p)
        yield b
        b.close()


def _forget_workspace(server) -> None:
    """Delete the lab's saved default workspace so a page opens only its own notebook.

    The server is shared: without this, JupyterLab restores the previous test's notebook next
    to the new one, and that one can end up as the current widget that 'run all' runs.
    """
    url = f"{server.url}/lab/api/workspaces/default?token={server.token}"
    try:
        urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10)
    except urllib.error.HTTPError as exc:
        if exc.code != 404:  # 404: nothing saved yet
            raise


@pytest.fixture
def page(browser, lab):
    """A fresh browser page on a lab whose saved workspace is forgotten before and after."""
    _forget_workspace(lab)
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    pg = context.new_page()
    yield pg
    context.close()
    _forget_workspace(lab)
