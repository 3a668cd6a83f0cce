"""The loader shape holds: every format parses, one pipeline assembles (see mfu_toolkit.io.base).

Read from the source itself: each module under ``io/formats`` has ``NAME``, a frozen ``Options``
dataclass, ``sniff`` and ``parse``, imports no other format, never builds ``RunMeta``, applies
overrides or warns; and no function in the package is longer than 80 lines, nor longer than 60
in the answer layer (``analysis/``, ``render/``, ``cli/``, ``facts.py``), where short functions keep
each rule readable on its own.
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
PACKAGE = IO.parent
MAX_LINES = 80
# the answer layer: the analyses, their phrasing and the command line
STRICT = {"analysis": 60, "render": 60, "cli": 60, "facts.py": 60}


def _functions(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield node


def _package_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _limit(path: Path) -> int:
    return STRICT.get(path.relative_to(PACKAGE).parts[0], MAX_LINES)


@pytest.mark.parametrize("path", _package_files(), ids=lambda p: p.relative_to(PACKAGE).as_posix())
def test_no_function_is_longer_than_its_limit(path):
    limit = _limit(path)
    tree = ast.parse(path.read_text())
    long = [(f.name, f.end_lineno - f.lineno + 1) for f in _functions(tree) if f.end_lineno - f.lineno + 1 > limit]
    assert not long, f"{path.relative_to(PACKAGE)}: functions over {limit} lines: {long}"


def test_the_limits_cover_the_answer_layer():
    assert _limit(PACKAGE / "analysis" / "answer.py") == _limit(PACKAGE / "facts.py") == 60
    assert _limit(PACKAGE / "cli" / "analyze.py") == 60 and _limit(IO / "base.py") == MAX_LINES
    assert len(_package_files()) > 80  # the whole package, io/formats included


MAX_FORMAT_LINES = 900  # a format is one room: what it shares with others lives in io/ (lines, timers, timeline)


@pytest.mark.parametrize("path", FORMAT_FILES, ids=lambda p: p.stem)
def test_no_format_module_is_over_its_size(path):
    n = len(path.read_text().splitlines())
    assert n <= MAX_FORMAT_LINES, f"{path.name}: {n} lines, over {MAX_FORMAT_LINES}: move what it shares into io/"


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
