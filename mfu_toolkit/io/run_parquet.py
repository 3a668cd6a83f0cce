"""A Run saved by :func:`mfu_toolkit.run.save_run`: one Parquet file, meta in its metadata.

Recognised by the Parquet magic bytes plus the ``mfu_toolkit.meta`` key in the file's
key-value metadata (a plain Parquet table without it belongs to the ``table`` loader).
Loading is lossless: the Run comes back equal to the one saved, report included.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..run import LoadError, Run, SchemaError, read_run
from ._build import apply_overrides, split_kwargs

NAME = "run_parquet"
_MAGIC = b"PAR1"
_META_KEY = b"mfu_toolkit.meta"


def _has_run_metadata(path: Path) -> bool:
    import pyarrow.parquet as pq

    md = pq.read_schema(path).metadata or {}
    return _META_KEY in md


def sniff(path: Path, head: bytes) -> float:
    """0.99 for a Parquet file that carries Run metadata, else 0."""
    if not head.startswith(_MAGIC) or Path(path).is_dir():
        return 0.0
    try:
        return 0.99 if _has_run_metadata(Path(path)) else 0.0
    except Exception:
        return 0.0


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read a saved Run; meta keyword arguments override the stored values.

    ``progress=True|False|None``: a progress bar while reading and validating (None: only for
    files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``).
    """
    opts, overrides = split_kwargs(kwargs, ("progress",), fmt=NAME)
    p = Path(path)
    try:
        run = read_run(p, progress=opts.get("progress"))
    except (LoadError, SchemaError):
        raise
    except FileNotFoundError:
        raise LoadError("no such file", path=p) from None
    except Exception as exc:  # pyarrow's errors on a damaged file
        raise LoadError(f"not a readable Run Parquet file ({type(exc).__name__}: {exc})", path=p) from None
    if overrides:
        run = run.replace(meta=apply_overrides(run.meta, overrides))
    return run
