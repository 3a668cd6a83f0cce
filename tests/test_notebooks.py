"""House rules for the curated notebooks (nbval checks their outputs; this checks their shape).

Every numbered notebook: a title, executed cells in order with outputs committed, prose after
every code cell, questions to try at the end, no absolute paths, no per-run noise (timestamps, random
widget ids), widget state saved for every displayed explorer (so it renders before the notebook runs),
and a setup cell that pins the backend, seed and figure size.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _scripts import load_script

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
    _check_widget_state(nb, path)
    assert not any("execution" in c.get("metadata", {}) for c in cells), "timestamps are per-run noise"
    assert not ABSOLUTE.search(path.read_text()), "absolute machine path in the notebook"


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
RANDOM_ID = re.compile(r"\b[0-9a-f]{32}\b")  # the kernel's uuid4().hex model ids


def _check_widget_state(nb: dict, path: Path) -> None:
    """Every displayed widget has its state in the file under a stable id, so a static viewer (or Lab
    before the kernel runs) draws the explorer instead of a `VBox(children=...)` line."""
    views = [o["data"][WIDGET_VIEW]["model_id"] for c in nb["cells"] if c["cell_type"] == "code"
             for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    if not views:
        return
    state = nb["metadata"].get("widgets", {}).get(WIDGET_STATE, {}).get("state")
    assert state, f"{path.name}: widget state missing: run tools/regen_notebooks.py"
    missing = [v for v in views if v not in state]
    assert not missing, f"{path.name}: displayed widgets without saved state: {missing}"
    refs = set(re.findall(r"IPY_MODEL_([0-9A-Za-z_-]+)", json.dumps(state)))
    assert refs <= set(state), f"{path.name}: state refers to models it does not hold: {sorted(refs - set(state))}"
    assert not RANDOM_ID.search(json.dumps(state)), f"{path.name}: random widget ids: run tools/regen_notebooks.py"


def _regen_module():
    return load_script("tools/regen_notebooks.py")


def test_two_regenerations_give_identical_bytes_and_keep_the_widget_state(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(
        "import ipywidgets as w\n"
        "s = w.FloatSlider(value=0.5, description='x')\n"
        "w.VBox([s, w.HBox([w.HTML('<b>a</b>'), w.IntText(3)])])"),
        nbformat.v4.new_code_cell("w.Button(description='unused')  # displayed too\n")]
    path = tmp_path / "99_widgets.ipynb"
    nbformat.write(nb, path)
    regen = _regen_module()
    regen.regen(path)
    first = path.read_bytes()
    regen.regen(path)
    assert path.read_bytes() == first
    saved = json.loads(first)
    state = saved["metadata"]["widgets"][WIDGET_STATE]["state"]
    views = [o["data"][WIDGET_VIEW]["model_id"] for c in saved["cells"] for o in c["outputs"]
             if WIDGET_VIEW in o.get("data", {})]
    assert views[0] == "99-w0001" and views[1] in state  # renamed in display order, first view first
    assert {state[v]["model_name"] for v in views} == {"VBoxModel", "ButtonModel"}
    assert any(m["model_name"] == "FloatSliderModel" and m["state"]["value"] == 0.5 for m in state.values())
    _check_widget_state(saved, path)
