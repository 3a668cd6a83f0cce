"""The loader shape holds: every format parses, one pipeline assembles (see mfu_toolkit.io.base).

Read from the source itself: each module under ``io/formats`` has ``NAME``, a frozen ``Options``
dataclass, ``sniff`` and ``parse``, imports no other format, never builds ``RunMeta``, applies
overrides or warns; and no function in ``io`` is longer than 80 lines.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
from pathlib import Path

import pytest

import mfu_toolkit.io as io_pkg

IO = Path(io_pkg.__file__).parent
FORMAT_FILES = sorted(p for p in (IO / "formats").glob("*.py") if p.name != "__init__.py")
MAX_LINES = 80


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _io_files() -> list[Path]:
    return sorted(IO.rglob("*.py"))


@pytest.mark.parametrize("path", _io_files(), ids=lambda p: p.relative_to(IO).as_posix())
def test_no_io_function_is_longer_than_80_lines(path):
    tree = ast.parse(path.read_text())
    long = [(f.name, f.end_lineno - f.lineno + 1) for f in _functions(tree) if f.end_lineno - f.lineno + 1 > MAX_LINES]
    assert not long, f"{path.name}: functions over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("path", FORMAT_FILES, ids=lambda p: p.stem)
def test_each_format_follows_the_shape(path):
    mod = importlib.import_module(f"mfu_toolkit.io.formats.{path.stem}")
    assert mod.NAME == path.stem
    assert callable(mod.sniff) and callable(mod.parse) and callable(mod.load)
    assert dataclasses.is_dataclass(mod.Options) and mod.Options.__dataclass_params__.frozen
    tree = ast.parse(path.read_text())
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            imported.add(("." * node.level) + node.module)
            imported.update(("." * node.level) + (node.module + "." + a.name) for a in node.names)
        if isinstance(node, ast.Import):
            imported.update(a.name for a in node.names)
    others = {p.stem for p in FORMAT_FILES} - {path.stem}
    wrong = sorted(i for i in imported if any(i.endswith("." + o) or i == o for o in others))
    assert not wrong, f"{path.stem} imports other formats: {wrong}"
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    forbidden = {"RunMeta", "apply_overrides", "warn_if_skipped", "finish", "split_kwargs"} & names
    assert not forbidden, f"{path.stem} does the pipeline's work itself: {sorted(forbidden)}"
    assert "warnings" not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
