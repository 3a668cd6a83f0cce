"""A Run saved by :func:`mfu_toolkit.run.save_run`: one Parquet file, meta in its metadata.

Recognised by the Parquet magic bytes plus the ``mfu_toolkit.meta`` key in the file's
key-value metadata (a plain Parquet table without it belongs to the ``table`` loader). That key
is written by ``save_run`` alone, so the sniffer is certain (1.0) and detection takes it over any
other format's guess: a saved report that quotes a log line (a skipped ``:::MLLOG`` record, say)
puts that line in the file's head, where a text format's sniffer sees it too.

Loading is lossless: the Run comes back equal to the one saved, report, facts and claims
included; RunMeta keywords override the stored values. Everything stored is checked before it
is used (see :func:`mfu_toolkit.run.read_run`), so a damaged file is a ``LoadError`` naming it.

Its ``parse`` hands the whole Run to the pipeline (``Parsed.restored``), which keeps the saved
meta (source, report, facts and claims as saved) and applies only the caller's keywords, marking
them as given and noting any that contradict a stated fact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ...run import read_run
from ..base import Parsed, loader_for
from ..reading import Reader

NAME = "run_parquet"
_MAGIC = b"PAR1"
_META_KEY = b"mfu_toolkit.meta"


@dataclass(frozen=True)
class Options:
    """What a saved Run's loader accepts besides the RunMeta keywords.

    - ``progress``: a progress bar while reading and validating; ``None`` (default) shows one
      for files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``.
    """

    progress: bool | None = None


def _has_run_metadata(path: Path) -> bool:
    import pyarrow.parquet as pq

    md = pq.read_schema(path).metadata or {}
    return _META_KEY in md


def sniff(path: Path, head: bytes) -> float:
    """1.0 (certain) for a Parquet file that carries Run metadata, else 0."""
    if not head.startswith(_MAGIC) or Path(path).is_dir():
        return 0.0
    try:
        return 1.0 if _has_run_metadata(Path(path)) else 0.0
    except Exception:  # a sniffer never fails a detection: unreadable means "not mine"
        return 0.0


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a saved Run (see the module docstring); nothing is skipped, so ``strict`` changes nothing."""
    return Parsed(restored=read_run(reader.path, progress=options.progress))


load = loader_for(NAME)
