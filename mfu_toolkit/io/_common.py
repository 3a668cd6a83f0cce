"""Names older loader modules import; everything lives in :mod:`mfu_toolkit.io.reading`.

Every loader reads through :func:`iter_lines` (gzip-aware, decode errors replaced, ANSI colours
and carriage returns removed) and reports bad records through a :class:`Reader`, which counts
them in the LoadReport by default and raises :class:`~mfu_toolkit.run.LoadError` (naming file,
line and field) when ``strict=True``. Nothing here executes or unpickles anything from a log.
"""

from __future__ import annotations

from pathlib import Path

from .reading import ANSI_RE, CsvRows, Reader, iter_lines, read_bytes, read_head

__all__ = ["ANSI_RE", "CsvRows", "Reader", "iter_lines", "open_bytes", "read_head"]



def open_bytes(path: str | Path) -> bytes:
    """Whole file as bytes, transparently (and boundedly) gunzipped."""
    return read_bytes(path)


