"""Sphinx configuration of the mfu_toolkit documentation site (``make docs``: build/docs/html).

Why these tools:

- **myst-nb** reads the committed, executed notebooks without running them (``nb_execution_mode =
  "off"``), draws their explorers from the widget state saved in each notebook's metadata, and lets
  the widget manager's script URLs be configured (``nb_ipywidgets_js``): pointed at a copy in
  ``_static/``, the pages load nothing from a CDN. It also reads the README and these pages (MyST
  Markdown).
- **autodoc** reads the docstrings for the API reference and for the page of each log format.
- **furo**, a theme that ships its own CSS and JavaScript and loads no web font.
- **MathJax** 3 (``mathjax_path``), also from ``_static/``.

The widget manager and MathJax are npm packages fetched once, at a pinned version whose sha512 is
checked, by ``tools/web_assets.py`` into ``build/web_assets/`` (see its docstring). The pages under
``formats/``, ``api/`` and ``notebooks/`` (gitignored) are written at every build by ``generate.py``:
one per log format from the format registry (``mfu_toolkit.io.REGISTRY``) and its module's
docstring, one per API area, and links to the curated notebooks ``notebooks/NN_*.ipynb``; a new
format, module or notebook needs no edit here.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS))
sys.path.insert(0, str(ROOT))

import generate  # noqa: E402  (docs/generate.py: the pages written from the registry and the package)


def _web_assets() -> Path:
    """The folder of the pinned widget manager and MathJax (fetched once; see tools/web_assets.py)."""
    spec = importlib.util.spec_from_file_location("web_assets", ROOT / "tools" / "web_assets.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules["web_assets"] = mod
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.fetch_assets()


STATIC = _web_assets()
generate.write_all(DOCS, ROOT)

project = "mfu_toolkit"
author = "the mfu_toolkit authors"
copyright = "the mfu_toolkit authors; Apache-2.0"  # noqa: A001
release = version = "0.1.0"

extensions = ["myst_nb", "sphinx.ext.autodoc", "sphinx.ext.mathjax"]
root_doc = "index"
exclude_patterns = ["nbconvert"]
templates_path: list[str] = []
smartquotes = False  # commands and flags in prose (--json) stay as typed
suppress_warnings = ["myst.header"]  # notebooks step from a title straight to ### in places

# MyST: $…$ and $$…$$ math in Markdown cells (notebooks 01, 04, 05, 06), ::: fences, heading anchors.
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

# myst-nb: committed outputs as they are; explorers drawn by the bundled standalone widget manager
# (html-manager's dist/embed.js draws the core widgets with no require.js).
nb_execution_mode = "off"
nb_ipywidgets_js = {"html-manager/embed.js": {}}
nb_merge_streams = True

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "description"
autodoc_preserve_defaults = True

mathjax_path = "mathjax/tex-svg-full.js"
mathjax3_config = {"svg": {"fontCache": "global"}}

html_theme = "furo"
html_title = "mfu_toolkit"
html_static_path = [str(STATIC), "_static"]
# after MathJax (deferred, priority 500): the widget manager calls MathJax 2's MathJax.Hub.Queue
html_js_files = [("mathjax_widgets.js", {"defer": "defer", "priority": 600})]
# search without fetching each result page for a snippet, which a browser refuses on file:// pages
html_show_search_summary = False
html_show_sourcelink = False
html_copy_source = False
html_last_updated_fmt = None
