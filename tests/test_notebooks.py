"""House rules for the curated notebooks (nbval checks their outputs; this checks their shape).

Every numbered notebook: a title, executed cells in order with outputs committed, prose after
every code cell, questions to try at the end, no absolute paths, no per-run noise (timestamps,
widget state), and a setup cell that pins the backend, seed and figure size.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("[0-9][0-9]_*.ipynb"))
ABSOLUTE = re.compile(r"(/work/|/tmp/|/root/|/home/\w+/|[A-Z]:\\\\Users)")


def _cells(path: Path) -> list[dict]:
    return json.loads(path.read_text())["cells"]


def _src(cell: dict) -> str:
    return "".join(cell["source"])


def test_there_are_curated_notebooks():
    assert NOTEBOOKS, "notebooks/ has no numbered notebooks"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_shape(path):
    nb = json.loads(path.read_text())
    cells = nb["cells"]
    assert cells[0]["cell_type"] == "markdown" and _src(cells[0]).startswith("# "), "first cell must be a title"
    code = [c for c in cells if c["cell_type"] == "code"]
    assert code, "no code cells"
    setup = _src(code[0])
    assert "%matplotlib inline" in setup and "SEED" in setup and "figure.dpi" in setup
    counts = [c["execution_count"] for c in code if _src(c).strip()]
    assert all(n is not None for n in counts), "commit the notebook executed (make regen)"
    assert counts == sorted(counts) and len(set(counts)) == len(counts), "cells executed out of order"
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            assert i + 1 < len(cells) and cells[i + 1]["cell_type"] == "markdown", (
                f"cell {i} is not followed by prose that interprets it")
            assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])), f"cell {i} raised"
    assert "Questions to try" in _src(cells[-1]) or any("Questions to try" in _src(c) for c in cells[-3:])
    assert "widgets" not in nb["metadata"], "widget state is per-run noise: run tools/regen_notebooks.py"
    assert not any("execution" in c.get("metadata", {}) for c in cells), "timestamps are per-run noise"
    assert not ABSOLUTE.search(path.read_text()), "absolute machine path in the notebook"
