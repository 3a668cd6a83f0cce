"""Re-execute the curated notebooks in place so their stored outputs are current.

Two runs give byte-identical files: execution timestamps, the widget-state blob and widget model
ids (random per run) are removed or replaced by stable placeholders. Run with the project's venv:

    .venv/bin/python tools/regen_notebooks.py [notebooks/01_mfu_basics.ipynb ...]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _stabilise(nb: nbformat.NotebookNode) -> None:
    nb.metadata.pop("widgets", None)
    for ci, cell in enumerate(nb.cells):
        cell.metadata.pop("execution", None)
        if cell.cell_type != "code":
            continue
        for oi, out in enumerate(cell.get("outputs", [])):
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                data[WIDGET_VIEW]["model_id"] = f"widget-cell{ci}-out{oi}"


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
    _stabilise(nb)
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
