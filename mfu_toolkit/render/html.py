"""The answer as HTML fragments, ``(heading, fragment)`` in reading order (the report's body)."""

from __future__ import annotations

import html

from ..analysis.answer import Answer
from .blocks import blocks

__all__ = ["answer_sections"]


def answer_sections(answer: Answer, *, interface: str = "python") -> list[tuple[str, str]]:
    """``(heading, HTML fragment)`` pairs in reading order (the answer first); missing facts are
    asked for in ``interface``'s terms."""
    out = []
    for heading, lines, rows, head in blocks(answer, interface):
        parts = []
        items = [line.strip() for line in lines]
        if items and all(i.startswith("- ") for i in items):
            parts.append("<ul>" + "".join(f"<li>{html.escape(i[2:])}</li>" for i in items) + "</ul>")
        else:
            parts += [f"<p>{html.escape(i)}</p>" for i in items]
        if rows and head:
            parts.append(_html_table(head, rows, status=heading == "Checks"))
        out.append((heading, "\n".join(parts)))
    return out


def _html_table(head: list[str], rows: list[list[str]], *, status: bool = False) -> str:
    th = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    body = []
    for r in rows:
        cls = f" class='check-{html.escape(r[0].lower())}'" if status else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(c)}</td>" for c in r) + "</tr>")
    return f"<table><thead><tr>{th}</tr></thead><tbody>{''.join(body)}</tbody></table>"
