"""Re-execute the curated notebooks in place so their stored outputs are current.

Two runs give byte-identical files: execution timestamps are removed, and the widget state is kept
(so explorers render from the committed file in a static viewer and on first opening in Lab) with
the kernel's random model ids replaced by stable ones. Run with the project's venv:

    .venv/bin/python tools/regen_notebooks.py [notebooks/01_mfu_basics.ipynb ...]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import nbformat
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


def regen(path: Path, timeout: int = 600) -> None:
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,
        coalesce_streams=True,  # one print may reach the kernel's stdout in two flushes
        resources={"metadata": {"path": str(path.parent)}},
    )
    client.execute()
    _stabilise(nb, path.stem[:2] if path.stem[:2].isdigit() else path.stem)
    nbformat.write(nb, path)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all in notebooks/)")
    p.add_argument("--exercises", action="store_true", help="also regenerate exercise versions")
    args = p.parse_args(argv)
    paths = args.paths or sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    for path in paths:
        print(f"executing {path.relative_to(ROOT) if path.is_absolute() else path}", flush=True)
        regen(path.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
