"""Re-execute the curated notebooks in place so their stored outputs are current.

Two runs give byte-identical files: execution timestamps are removed, and the widget state is kept
(so explorers render from the committed file in a static viewer and on first opening in Lab) with
the kernel's random model ids replaced by stable ones.

The file is written as JupyterLab would save it, so opening it in Lab changes nothing (no "modified"
mark, and a save writes the same bytes):

- ``metadata.kernelspec`` is the spec of the kernel that ran it (name, display name, language), which
  Lab writes into the document when it starts that kernel;
- a number with an integral value is written without a fraction (``2``, not ``2.0``): Lab holds the
  document as JavaScript, whose JSON has one number type and writes ``2.0`` as ``2``.

Run with the project's venv:

    .venv/bin/python tools/regen_notebooks.py [notebooks/01_mfu_basics.ipynb ...]
    .venv/bin/python tools/regen_notebooks.py --no-execute notebooks/NN_name.ipynb   # the form only
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat
from jupyter_client.kernelspec import KernelSpecManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
_REF = re.compile(r"IPY_MODEL_([0-9A-Za-z_-]+)")


def _widget_order(state: dict, roots: list[str]) -> list[str]:
    """Model ids reachable from the displayed views, depth first in display order: the models a
    viewer needs, in an order that does not depend on the random ids the kernel chose."""
    order: list[str] = []
    seen: set[str] = set()
    stack = list(reversed(roots))
    while stack:
        mid = stack.pop()
        if mid in seen or mid not in state:
            continue
        seen.add(mid)
        order.append(mid)
        refs = _REF.findall(json.dumps(state[mid], sort_keys=True))
        refs += [o.get("data", {}).get(WIDGET_VIEW, {}).get("model_id", "")
                 for o in state[mid].get("state", {}).get("outputs", []) if isinstance(o, dict)]
        stack.extend(reversed([r for r in refs if r]))
    return order


def _stabilise(nb: nbformat.NotebookNode, stem: str) -> None:
    """Drop timestamps; keep the widget state a static viewer renders from, under stable ids.

    Models are renamed ``<stem>-w0001``, … in the order ``_widget_order`` finds them, models no
    displayed view reaches are dropped, and the state is written with sorted keys, so two runs
    give the same bytes."""
    blob = nb.metadata.pop("widgets", {}).get(WIDGET_STATE, {})
    state = blob.get("state", {})
    roots = []
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view:
                roots.append(view["model_id"])
    order = _widget_order(state, roots)
    rename = {old: f"{stem}-w{i + 1:04d}" for i, old in enumerate(order)}
    pattern = re.compile("|".join(re.escape(k) for k in sorted(rename, key=len, reverse=True))) if rename else None

    def renamed(text: str) -> str:
        return pattern.sub(lambda m: rename[m.group(0)], text) if pattern else text

    for ci, cell in enumerate(nb.cells):
        for oi, out in enumerate(cell.get("outputs", []) if cell.cell_type == "code" else []):
            view = out.get("data", {}).get(WIDGET_VIEW)
            if view:
                view["model_id"] = rename.get(view["model_id"], f"widget-cell{ci}-out{oi}")
    if order:
        kept = {rename[mid]: json.loads(renamed(json.dumps(state[mid], sort_keys=True))) for mid in order}
        nb.metadata["widgets"] = {WIDGET_STATE: {"state": kept, "version_major": blob.get("version_major", 2),
                                                 "version_minor": blob.get("version_minor", 0)}}


# JavaScript writes an integral double below 1e21 as its digits, without a fraction or exponent
# (ECMA-262 Number::toString); from 1e21 on it uses an exponent, as Python does.
_JS_DIGITS_BELOW = 1e21


def as_javascript_numbers(value: object) -> object:
    """``value`` with every float of integral value below 1e21 in magnitude turned into an int: the
    numbers a JavaScript front end writes back when it saves the document (``2.0`` becomes ``2``)."""
    if isinstance(value, float):
        return int(value) if value.is_integer() and abs(value) < _JS_DIGITS_BELOW else value
    if isinstance(value, dict):
        return type(value)((k, as_javascript_numbers(v)) for k, v in value.items())
    if isinstance(value, list):
        return [as_javascript_numbers(v) for v in value]
    return value


def kernelspec_metadata(kernel_name: str) -> dict[str, str]:
    """The ``kernelspec`` metadata JupyterLab writes for ``kernel_name``: its installed spec's name,
    display name and language."""
    spec = KernelSpecManager().get_kernel_spec(kernel_name)
    return {"display_name": spec.display_name, "language": spec.language, "name": kernel_name}


def as_lab_saves(nb: nbformat.NotebookNode, kernel_name: str) -> nbformat.NotebookNode:
    """The notebook in the form JupyterLab saves it: its kernel's spec, integral numbers as ints."""
    nb.metadata["kernelspec"] = kernelspec_metadata(kernel_name)
    return nbformat.from_dict(as_javascript_numbers(nb))


def regen(path: Path, timeout: int = 600, execute: bool = True, kernel_name: str = "python3") -> None:
    """Re-execute ``path`` in place (or, with ``execute=False``, only rewrite it in the stable form)."""
    nb = nbformat.read(path, as_version=4)
    if execute:
        client = NotebookClient(
            nb,
            timeout=timeout,
            kernel_name=kernel_name,
            record_timing=False,
            coalesce_streams=True,  # one print may reach the kernel's stdout in two flushes
            resources={"metadata": {"path": str(path.parent)}},
        )
        client.execute()
    _stabilise(nb, path.stem[:2] if path.stem[:2].isdigit() else path.stem)
    nbformat.write(as_lab_saves(nb, kernel_name), path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all in notebooks/)")
    p.add_argument("--exercises", action="store_true", help="also regenerate exercise versions")
    p.add_argument("--no-execute", action="store_true",
                   help="keep the stored outputs; only rewrite the files in the stable form (metadata, ids, numbers)")
    args = p.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        verb = "rewriting" if args.no_execute else "executing"
        print(f"{verb} {path.relative_to(ROOT) if path.is_absolute() else path}", flush=True)
        regen(path.resolve(), execute=not args.no_execute)
    return 0


if __name__ == "__main__":
    sys.exit(main())
