"""The format registry: one row per format (name, module, one-line summary), read by detection,
``available_formats()``, ``mfu analyze --help`` and the README's table of formats."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_toolkit.io import detect
from mfu_toolkit.run import LoadError

ROOT = Path(__file__).resolve().parents[1]
FORMAT_MODULES = sorted(p.stem for p in (ROOT / "mfu_toolkit" / "io" / "formats").glob("*.py")
                        if p.name != "__init__.py")


def test_every_format_module_has_one_row_and_every_row_a_module():
    assert sorted(detect.REGISTRY) == FORMAT_MODULES
    assert detect.FORMATS == tuple(detect.REGISTRY)
    assert detect.FORMATS[-1] == "table" and detect.FALLBACK_FORMATS == {"table"}
    for name, row in detect.REGISTRY.items():
        mod = detect.get_loader(name)
        assert (mod.__name__, mod.NAME) == (row.module, name)
        assert 20 <= len(row.summary) <= 100 and "\n" not in row.summary, name
    assert detect.available_formats() == list(detect.FORMATS)


def test_mfu_analyze_help_lists_every_format_with_its_summary():
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", "--help"], capture_output=True,
                         text=True, timeout=120).stdout
    listed = dict(re.findall(r"^  (\w+) +(.+)$", out.split("formats (--format NAME")[1], re.M))
    assert listed == {n: r.summary for n, r in detect.REGISTRY.items()}


def test_the_readme_table_names_every_format():
    text = (ROOT / "README.md").read_text()
    table = text.split("| format | what it reads |")[1].split("\n\n")[0]
    named = set(re.findall(r"`(\w+)`", "\n".join(line.split("|")[1] for line in table.splitlines()[2:])))
    assert named == set(detect.FORMATS)


def test_a_format_whose_module_fails_to_import_is_an_error_naming_it(monkeypatch):
    broken = detect.FormatInfo("megatron", "mfu_toolkit.io.formats.no_such_module", "a broken row")
    monkeypatch.setitem(detect.REGISTRY, "megatron", broken)
    monkeypatch.setattr(detect, "_modules", {})
    assert "megatron" not in detect.available_formats()
    with pytest.raises(LoadError, match=r"megatron.*ModuleNotFoundError: No module named "
                                        r"'mfu_toolkit\.io\.formats\.no_such_module'"):
        detect.get_loader("megatron")
