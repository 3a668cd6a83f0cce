"""Setup shared by the peak-registry tests: a clean registry per test and CSVs written to a temp folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from mfu_toolkit import hardware as hw

ACCELERATOR_HEADER = "name,vendor,dtype,dense,sparse,unit,devices_per_package,aliases,basis,source,read_on,note\n"


@pytest.fixture(autouse=True)
def fresh_registry(monkeypatch):
    """Each test sees the shipped registry only (no user CSVs, no earlier registrations)."""
    monkeypatch.delenv(hw.ENV_VAR, raising=False)
    hw._reset_registry()
    yield
    hw._reset_registry()


def write_text(tmp_path: Path, name: str, text: str) -> Path:
    """``text`` written (UTF-8) to ``tmp_path / name``; returns the path."""
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def write_csv(tmp_path: Path, body: str, name: str = "team.csv") -> Path:
    """An accelerator CSV: the registry's header, then ``body``."""
    return write_text(tmp_path, name, ACCELERATOR_HEADER + body)


def shipped_without(tmp_path: Path, name: str) -> hw.Registry:
    """The shipped registry with one accelerator's rows left out."""
    lines = hw.BUILTIN_CSV.read_text(encoding="utf-8").splitlines(keepends=True)
    path = write_text(tmp_path, "without.csv", "".join(line for line in lines if not line.startswith(f"{name},")))
    reg = hw.Registry(builtin=False, env=False)
    reg.load_csv(path)
    return reg
