"""Shared by the rank-cache tests: each test's user cache under its own tmp_path, and a quiet load."""

from __future__ import annotations

import warnings

import pytest

from mfu_toolkit.io import kineto
from mfu_toolkit.run import LoadWarning


@pytest.fixture(autouse=True)
def _user_cache(tmp_path, monkeypatch):
    """Every cache written outside a trace's folder lands under this test's tmp_path."""
    monkeypatch.setenv("MFU_CACHE_DIR", str(tmp_path / "user_cache"))


def quiet_load(p, **kw):
    """``kineto.load`` with its LoadWarning silenced (the tests read the report instead)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return kineto.load(p, **kw)
