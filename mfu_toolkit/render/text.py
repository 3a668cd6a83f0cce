"""The answer for a terminal: plain text, every line at most ``width`` characters."""

from __future__ import annotations

import textwrap

from ..analysis.answer import Answer
from .blocks import blocks

__all__ = ["answer_text"]


def answer_text(answer: Answer, *, interface: str = "python", width: int = 100) -> str:
    """The answer for a terminal, every line at most ``width`` characters; missing facts are asked
    for in ``interface``'s terms ("python", "cli" or "make")."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 40:
        raise ValueError(f"width must be an integer >= 40; got {width!r}")
    out = _wrap(answer.title, width)
    for heading, lines, rows, head in blocks(answer, interface):
        out += ["", heading, "-" * min(len(heading), width)]
        for line in lines:
            indent = line[: len(line) - len(line.lstrip())]
            out += _wrap(line.strip(), width, indent=indent, hang="  " if not line.startswith("-") else "  ")
        if rows and head:
            out += _table(rows, head, width, wrap=heading in ("Checks", "Facts used", "From NCCL's lines"))
    return "\n".join(line[:width] for line in out)


def _wrap(text: str, width: int, indent: str = "", hang: str = "  ") -> list[str]:
    return textwrap.wrap(text, width=width, initial_indent=indent, subsequent_indent=indent + hang,
                         break_long_words=True, break_on_hyphens=False) or [indent]


def _table(rows: list[list[str]], head: list[str], width: int, *, wrap: bool = False) -> list[str]:
    """A plain text table that fits ``width``: its last column wrapped (``wrap``) or truncated
    with an ellipsis."""
    if not rows:
        return []
    cols = list(zip(head, *rows, strict=True))
    widths = [max(len(c) for c in col) for col in cols]
    fixed = sum(widths[:-1]) + 2 * (len(widths) - 1)
    widths[-1] = max(min(widths[-1], width - fixed), 8)
    for i in range(len(widths) - 1):  # a wide middle column gives way too
        over = sum(widths) + 2 * (len(widths) - 1) - width
        if over > 0 and widths[i] > 24:
            widths[i] = max(24, widths[i] - over)

    def cut(s: str, w: int) -> str:
        return s if len(s) <= w else s[: max(w - 1, 0)] + "…"

    def line(cells: list[str]) -> str:
        return "  ".join(cut(c, w).ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    out = [line(head), line(["-" * w for w in widths])]
    for r in rows:
        if not wrap or len(r[-1]) <= widths[-1]:
            out.append(line(r))
            continue
        pieces = textwrap.wrap(r[-1], width=widths[-1], break_long_words=True) or [""]
        out.append(line([*r[:-1], pieces[0]]))
        out += [line([""] * (len(r) - 1) + [p]) for p in pieces[1:]]
    return out
