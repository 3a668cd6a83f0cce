"""Shared plumbing for loaders: robust text reading and the skip-or-raise rule.

Every loader reads through :func:`iter_lines` (gzip-aware, decode errors replaced, ANSI colours
and carriage returns removed) and reports bad records through a :class:`Reader`, which counts
them in the LoadReport by default and raises :class:`~mfu_toolkit.run.LoadError` (naming file,
line and field) when ``strict=True``. Nothing here executes or unpickles anything from a log.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from pathlib import Path

from ..run import LoadError, LoadReport

__all__ = ["ANSI_RE", "Reader", "iter_lines", "open_bytes", "read_head"]

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_GZIP_MAGIC = b"\x1f\x8b"


def open_bytes(path: str | Path) -> bytes:
    """Whole file as bytes, transparently gunzipped."""
    data = Path(path).read_bytes()
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise LoadError(f"corrupt gzip stream ({exc})", path=path) from None
    return data


def read_head(path: str | Path, n: int = 8192) -> bytes:
    """The first ``n`` bytes (decompressed when gzipped) for format sniffing."""
    p = Path(path)
    with p.open("rb") as f:
        raw = f.read(n)
    if raw[:2] == _GZIP_MAGIC:
        try:
            with gzip.open(p, "rb") as g:
                return g.read(n)
        except (OSError, EOFError):
            return b""
    return raw


def iter_lines(path: str | Path) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` with 1-based numbers, ANSI codes and ``\\r`` removed.

    A line rewritten by a progress bar (``...\\rfinal``) keeps its last segment.
    """
    text = open_bytes(path).decode("utf-8", errors="replace")
    for i, line in enumerate(text.split("\n"), start=1):
        if "\r" in line:
            parts = [p for p in line.split("\r") if p.strip()]
            line = parts[-1] if parts else ""
        if "\x1b" in line:
            line = ANSI_RE.sub("", line)
        yield i, line


class Reader:
    """Skip-or-raise for one source file: ``bad(...)`` counts or raises, never drops silently."""

    def __init__(self, path: str | Path, fmt: str, *, strict: bool = False, report: LoadReport | None = None):
        self.path = Path(path)
        self.strict = strict
        self.report = report if report is not None else LoadReport(source=str(path), format=fmt)

    def bad(self, reason: str, *, line: int | None = None, field: str | None = None, example: str | None = None) -> None:
        """A malformed record: raise in strict mode, otherwise count it under ``reason``."""
        if self.strict:
            detail = f"{reason}" + (f": {example[:120]!r}" if example else "")
            raise LoadError(detail, path=self.path, line=line, field=field)
        self.report.skip(reason, line=line, example=example)

    def fail(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        """An error that no mode can skip (e.g. no records at all)."""
        raise LoadError(message, path=self.path, line=line, field=field)
