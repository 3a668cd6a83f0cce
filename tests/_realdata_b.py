"""Where the real logs are: ``MFU_REALDATA`` (skip when unset, fail when set but missing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SKIP_REASON = "set MFU_REALDATA=../shared/realdata to run the real-log tests"


def realdata_dir(*parts: str) -> Path:
    """The real-data folder (or a sub-folder); skips when unset, fails when it is missing."""
    value = os.environ.get("MFU_REALDATA")
    if not value:
        pytest.skip(SKIP_REASON)
    root = Path(value)
    if not root.is_dir():
        pytest.fail(f"MFU_REALDATA={value!r} is set but that folder does not exist")
    sub = root.joinpath(*parts)
    if not sub.exists():
        pytest.fail(f"MFU_REALDATA is set but {sub} is missing")
    return sub
