"""A Kineto trace's rank cache goes beside the trace only when asked (``cache="beside"``); by default
nothing is written into the trace's folder; an unknown ``cache`` value is refused."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mfu_toolkit.io import load_run

TRACE = Path(__file__).resolve().parents[1] / "data" / "samples" / "kineto"


def _copy(tmp_path: Path) -> Path:
    folder = tmp_path / "traces"
    shutil.copytree(TRACE, folder)
    return folder


def _files(folder: Path) -> set[str]:
    return {p.relative_to(folder).as_posix() for p in folder.rglob("*")}


def test_default_writes_nothing_beside_the_traces(tmp_path, monkeypatch):
    monkeypatch.setenv("MFU_CACHE_DIR", str(tmp_path / "user-cache"))
    folder = _copy(tmp_path)
    before = _files(folder)
    load_run(folder)
    assert _files(folder) == before
    assert any((tmp_path / "user-cache").rglob("*.parquet"))


def test_beside_writes_the_cache_beside_and_reads_it_back(tmp_path, monkeypatch):
    monkeypatch.setenv("MFU_CACHE_DIR", str(tmp_path / "user-cache"))
    folder = _copy(tmp_path)
    first = load_run(folder, cache="beside")
    assert any(p.suffix == ".parquet" for p in (folder / ".mfu_cache").rglob("*")) or any(
        ".mfu_cache" in p.parts for p in folder.rglob("*.parquet"))
    assert not any((tmp_path / "user-cache").rglob("*.parquet"))
    again = load_run(folder, cache="beside")
    assert again.steps.equals(first.steps)


@pytest.mark.parametrize("bad", ["nearby", 1, None])
def test_an_unknown_cache_value_is_refused(tmp_path, bad):
    with pytest.raises(Exception, match="cache must be True, False or 'beside'"):
        load_run(_copy(tmp_path), cache=bad)
