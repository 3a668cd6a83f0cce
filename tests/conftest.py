"""Project-wide pytest set-up: nbval's sanitiser, markers, and the environment switches.

- ``MFU_REQUIRE_BROWSER=1``: a missing Chromium fails the browser tests instead of skipping them.
- ``MFU_REQUIRE_TORCH=1``: a missing PyTorch fails the FLOP-counter tests instead of skipping them.
- ``MFU_REALDATA``: folder of real training logs for the loader tests.
"""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

HERE = Path(__file__).resolve().parent


def pytest_configure(config):
    # nbval resolves a relative sanitise file against the working directory; make it absolute.
    if hasattr(config.option, "nbval_sanitize_with") and not config.option.nbval_sanitize_with:
        config.option.nbval_sanitize_with = str(HERE / "nbval_sanitize.cfg")
    os.environ.setdefault("MPLBACKEND", "Agg")
