"""The documentation pages written at every build, from what the package and the repository state.

- ``formats/``: a page per row of the format registry (``mfu_toolkit.io.REGISTRY``: name, module,
  one-line summary), holding its module's docstring (what is read, units, facts, claims) and its
  ``Options``, ``sniff``, ``parse`` and ``load``; an index table in registry (detection) order.
- ``api/``: a page per public module or package of ``mfu_toolkit`` (the format modules have theirs
  above), each submodule's docstrings through autodoc.
- ``notebooks/``: a link to every curated notebook ``notebooks/NN_*.ipynb`` (read as committed),
  and their table of contents.

A file is rewritten only when its text changes, so Sphinx rebuilds only what changed.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from pathlib import Path

FORMAT_MEMBERS = ("Options", "sniff", "parse", "load")
# Modules whose import runs a program (``python -m``) rather than defines an API.
NOT_API = ("__main__",)


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)


def _escape(text: str) -> str:
    """``text`` as plain reST text: its markup characters escaped."""
    return "".join("\\" + c if c in "\\*`|_" else c for c in text)


def _title(text: str, mark: str = "=") -> str:
    return f"{text}\n{mark * len(text)}\n"


def format_pages(out: Path) -> list[str]:
    """One reST page per registry row, plus ``index.rst``; returns the format names in registry order."""
    from mfu_toolkit.io import REGISTRY

    rows = []
    for name, info in REGISTRY.items():
        module = importlib.import_module(info.module)
        members = [m for m in FORMAT_MEMBERS if hasattr(module, m)]
        body = [f".. _format-{name}:\n", _title(f"{name}"),
                f"*{_escape(info.summary)}*\n",
                f"Read with ``load_run(path, format=\"{name}\")`` (or detected from the content);"
                f" module :mod:`{info.module}`.\n",
                f".. automodule:: {info.module}"]
        if members:
            body.append(f"   :members: {', '.join(members)}")
        _write(out / f"{name}.rst", "\n".join(body) + "\n")
        rows.append(f"   * - :doc:`{name}`\n     - {_escape(info.summary)}")
    index = [_title("Log formats"),
             "Every format ``load_run`` reads, in the order detection tries them. Each page is written from "
             "the format registry (``mfu_toolkit.io.REGISTRY``) and the docstring of the format's module: "
             "what it reads, the units, the facts it takes from the log and the throughput claims it keeps.\n",
             ".. list-table::\n   :header-rows: 1\n   :widths: 20 80\n\n   * - format\n     - what it reads",
             *rows, "", ".. toctree::\n   :hidden:\n", *[f"   {n}" for n in REGISTRY], ""]
    _write(out / "index.rst", "\n".join(index))
    return list(REGISTRY)


def _public_modules(package: str, root: Path) -> list[str]:
    """Every importable public module below ``package`` (no ``_private`` part, no ``__main__``)."""
    pkg = importlib.import_module(package)
    names = [m.name for m in pkgutil.walk_packages(pkg.__path__, package + ".")]
    return sorted(n for n in names if not any(p.startswith("_") for p in n.split(".")[1:])
                  and n.rsplit(".", 1)[-1] not in NOT_API)


def api_pages(out: Path, root: Path) -> list[str]:
    """One reST page per top-level module or package of ``mfu_toolkit``; returns the page names."""
    modules = [m for m in _public_modules("mfu_toolkit", root) if not m.startswith("mfu_toolkit.io.formats.")]
    areas: dict[str, list[str]] = {}
    for name in modules:
        areas.setdefault(".".join(name.split(".")[:2]), []).append(name)
    for area, names in areas.items():
        body = [_title(f"``{area}``")]
        for name in names:
            is_pkg = hasattr(importlib.import_module(name), "__path__")
            if name != area:
                body.append(_title(f"``{name}``", "-"))
            # a package's docstring maps its modules; its re-exported names are documented where defined
            body.append(f".. automodule:: {name}" + ("" if is_pkg else "\n   :members:") + "\n")
        body.append("" if area != "mfu_toolkit.io" else "The format modules: :doc:`../formats/index`.\n")
        _write(out / f"{area.split('.', 1)[1]}.rst", "\n".join(body))
    index = [_title("API reference"), "Generated from the docstrings by autodoc; the package's own map:\n",
             ".. automodule:: mfu_toolkit\n", ".. toctree::\n   :maxdepth: 1\n",
             *[f"   {a.split('.', 1)[1]}" for a in areas], ""]
    _write(out / "index.rst", "\n".join(index))
    return [a.split(".", 1)[1] for a in areas]


def notebook_pages(out: Path, root: Path) -> list[str]:
    """A relative link per curated notebook and ``index.md``; returns the notebook names."""
    books = sorted(p for p in (root / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.ipynb"):
        if old.name not in {b.name for b in books}:
            old.unlink()
    for book in books:
        link = out / book.name
        target = os.path.relpath(book, out)
        if not (link.is_symlink() and os.readlink(link) == target):
            if link.exists() or link.is_symlink():
                link.unlink()
            link.symlink_to(target)
    index = ["# Notebooks", "",
             "The curated notebooks as committed: executed, with their outputs and their explorers drawn from "
             "the widget state saved in each notebook (move a control and nothing recomputes: that needs a kernel, "
             "`make lab`). `notebooks/README.md` maps them to three uses.", "",
             "```{toctree}", ":maxdepth: 1", "", *[b.stem for b in books], "```", ""]
    _write(out / "index.md", "\n".join(index))
    return [b.stem for b in books]


def write_all(docs: Path, root: Path) -> None:
    """Write the generated pages under ``docs``: ``formats/``, ``api/`` and ``notebooks/``."""
    format_pages(docs / "formats")
    api_pages(docs / "api", root)
    notebook_pages(docs / "notebooks", root)
