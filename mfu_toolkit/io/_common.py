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

__all__ = ["ANSI_RE", "CsvRows", "Reader", "iter_lines", "open_bytes", "read_head"]

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
    """Skip-or-raise for one source file: ``bad(...)`` counts or raises, never drops silently.

    A load that reads several files gives each its own Reader (:meth:`for_file`) sharing one
    report; with ``root`` (the loaded folder, set only when there is more than one file) the
    skipped records are remembered as ``"<file relative to root>:<line>"``. Strict-mode errors
    always name the Reader's own file.
    """

    def __init__(
        self,
        path: str | Path,
        fmt: str,
        *,
        strict: bool = False,
        report: LoadReport | None = None,
        root: str | Path | None = None,
    ):
        self.path = Path(path)
        self.fmt = fmt
        self.strict = strict
        self.report = report if report is not None else LoadReport(source=str(path), format=fmt)
        self.root = None if root is None else Path(root)

    @property
    def file(self) -> str | None:
        """This file relative to ``root`` (``None`` without a root, or for the root itself)."""
        if self.root is None or self.path == self.root:
            return None
        try:
            return self.path.relative_to(self.root).as_posix()
        except ValueError:
            return self.path.as_posix()

    def for_file(self, path: str | Path, *, root: str | Path | None = None) -> Reader:
        """A Reader for one of this load's files: same report and mode, its errors name ``path``.

        ``root`` defaults to this Reader's; pass the loaded folder when the load reads more than
        one file, so that skipped lines carry their file.
        """
        return Reader(path, self.fmt, strict=self.strict, report=self.report, root=self.root if root is None else root)

    def bad(self, reason: str, *, line: int | None = None, field: str | None = None, example: str | None = None) -> None:
        """A malformed record: raise in strict mode, otherwise count it under ``reason``."""
        if self.strict:
            detail = f"{reason}" + (f": {example[:120]!r}" if example else "")
            raise LoadError(detail, path=self.path, line=line, field=field)
        self.report.skip(reason, line=line, example=example, file=self.file)

    def fail(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        """An error that no mode can skip (e.g. no records at all)."""
        raise LoadError(message, path=self.path, line=line, field=field)


class CsvRows:
    """The well-formed rows of a CSV text, with the stripped ``header``.

    Iterating yields ``(line_number, cells)``; blank rows are passed over. A row the csv module
    cannot parse, or one with the wrong number of fields ("half-written last line" when it is
    the file's last line and short), goes through ``reader.bad`` with its line and field.
    ``n_rows`` counts the non-blank data rows seen, well-formed or not. An empty text is a
    ``LoadError``.
    """

    def __init__(self, text: str, reader: Reader) -> None:
        import csv
        import io

        self._csv = csv
        self._rows = csv.reader(io.StringIO(text))
        self._reader = reader
        try:
            self.header = [h.strip() for h in next(self._rows)]
        except (StopIteration, csv.Error):
            reader.fail("empty file: no CSV header")
        self._last_line = text.count("\n") + (0 if text.endswith("\n") else 1)
        self.n_rows = 0

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        rows, reader, header, ncol = self._rows, self._reader, self.header, len(self.header)
        while True:
            try:
                row = next(rows)
            except StopIteration:
                return
            except self._csv.Error as exc:
                reader.bad(f"unreadable CSV row ({exc})", line=rows.line_num)
                continue
            ln = rows.line_num
            if not row or all(not c.strip() for c in row):
                continue
            self.n_rows += 1
            if len(row) != ncol:
                short_last = ln >= self._last_line and len(row) < ncol
                why = "half-written last line" if short_last else "wrong number of fields"
                reader.bad(why, line=ln, field=header[max(0, min(len(row), ncol) - 1)], example=",".join(row)[:160])
                continue
            yield ln, row
