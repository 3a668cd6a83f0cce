"""The answer rendered per front end: text for a terminal, HTML for the report, JSON for tools.

:mod:`mfu_toolkit.analysis` builds the :class:`~mfu_toolkit.analysis.Answer` (data); this package
draws it, so ``mfu analyze``, ``mfu analyze --json``, ``--html`` and ``make report`` cannot
disagree. The dependency points one way: render reads analysis, analysis never imports render.
The answer says *what* is missing; :mod:`.vocabulary` (each input's spelling per interface) and
:mod:`.spoken` say *how to give it* in the terms of the interface it is rendered for.
"""

from __future__ import annotations

from .blocks import facts_shown
from .html import answer_sections
from .json import answer_dict
from .text import answer_text

__all__ = ["answer_dict", "answer_sections", "answer_text", "facts_shown"]
