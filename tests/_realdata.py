"""The ``realdata`` fixture: the folder of real training logs named by ``MFU_REALDATA``.

Unset: the real-log tests skip, saying how to run them. Set but missing (CI sets it): they fail,
so a broken checkout never passes silently. The logs stay in that folder; nothing is copied.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SKIP_REASON = "set MFU_REALDATA=../shared/realdata to run the real-log tests"


@pytest.fixture(scope="session")
def realdata() -> Path:
    value = os.environ.get("MFU_REALDATA", "").strip()
    if not value:
        pytest.skip(SKIP_REASON)
    folder = Path(value)
    if not folder.is_dir():
        pytest.fail(f"MFU_REALDATA={value!r} is set but is not a folder")
    return folder


def files(folder: Path, pattern: str = "*") -> list[Path]:
    """Files of one format folder; an empty match is a failure (the data set is incomplete)."""
    found = sorted(p for p in folder.glob(pattern) if not p.name.startswith("."))
    if not found:
        pytest.fail(f"no files match {pattern!r} in {folder}")
    return found
