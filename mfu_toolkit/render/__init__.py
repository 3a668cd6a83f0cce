"""The answer rendered per front end: text for a terminal, HTML for the report, JSON for tools.

:mod:`mfu_toolkit.analysis` builds the :class:`~mfu_toolkit.analysis.Answer` (data); this package
draws it, so ``mfu analyze``, ``mfu analyze --json``, ``--html`` and ``make report`` cannot
disagree. The dependency points one way: render reads analysis, analysis never imports render.
The answer says *what* is missing; :mod:`.vocabulary` (each input's spelling per interface) and
:mod:`.spoken` say *how to give it* in the terms of the interface it is rendered for.
"""

from __future__ import annotations

from typing import Any

__all__ = ["answer_dict", "answer_sections", "answer_text", "facts_shown"]
# each name's module, imported when the name is first used: `mfu calc` reads .vocabulary alone, without
# the answer's renderers (and the analyses and pandas beneath them)
_HOMES = {"facts_shown": "blocks", "answer_sections": "html", "answer_dict": "json", "answer_text": "text"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)
