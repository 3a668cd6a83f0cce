"""Where mfu_toolkit keeps what it caches, a content fingerprint for cache keys, and ``mfu cache``.

Nothing is written beside the user's data unless asked: caches live in the user cache directory,
``$MFU_CACHE_DIR``, else ``$XDG_CACHE_HOME/mfu_toolkit``, else ``~/.cache/mfu_toolkit`` (the
per-rank Kineto tables under ``kineto/``). A load asked to cache beside its data
(``cache="beside"``) writes ``.mfu_cache/`` next to the trace instead.

A cache entry is keyed by :func:`fingerprint` of the file's content, so a file rewritten with the
same size and modification time (``cp -p``, ``rsync -t``) is not answered from a stale entry.

``mfu cache info`` prints the location, the number of entries and their size; ``mfu cache clear``
removes the entries (only files this package writes there: ``*.parquet`` and unfinished
``.*.tmp`` in its subfolders; a directory the variable points at by mistake is left alone).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

__all__ = ["SUBDIRS", "cache_dir", "clear", "entries", "fingerprint", "info"]

SUBDIRS = ("kineto",)  # the folders under the cache directory that hold this package's entries
WHOLE_BYTES = 8 << 20  # files up to this size are hashed whole
_EDGE = 1 << 20  # larger ones: their first and last MiB ...
_BLOCK = 64 << 10  # ... and this many bytes at each of _SAMPLES evenly spaced offsets between
_SAMPLES = 32


def cache_dir() -> Path:
    """The user cache directory: ``$MFU_CACHE_DIR``, ``$XDG_CACHE_HOME/mfu_toolkit``, ``~/.cache/mfu_toolkit``."""
    env = os.environ.get("MFU_CACHE_DIR", "").strip()
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg).expanduser() if xdg else Path.home() / ".cache") / "mfu_toolkit"


def fingerprint(path: str | Path) -> str:
    """A hash of the file's size and content: all of it up to :data:`WHOLE_BYTES`; beyond, its
    first and last MiB and 32 blocks of 64 KiB spread evenly between (about 4 MiB read whatever
    the size). A gzip file's last bytes hold the CRC-32 and length of all its content, so any
    change to a compressed trace changes its fingerprint."""
    h = hashlib.blake2b(digest_size=20)
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        h.update(f"{size}:".encode())
        if size <= WHOLE_BYTES:
            while chunk := f.read(1 << 20):
                h.update(chunk)
            return h.hexdigest()
        spans = [(0, _EDGE)] + [(i * size // (_SAMPLES + 1), _BLOCK) for i in range(1, _SAMPLES + 1)]
        for offset, n in [*spans, (size - _EDGE, _EDGE)]:
            f.seek(offset)
            h.update(f.read(n))
    return h.hexdigest()


def entries(root: Path | None = None) -> list[Path]:
    """This package's cache files under ``root`` (default: :func:`cache_dir`)."""
    base = cache_dir() if root is None else Path(root)
    out: list[Path] = []
    for sub in SUBDIRS:
        folder = base / sub
        if folder.is_dir():
            out += [p for p in sorted(folder.iterdir())
                    if p.is_file() and (p.suffix == ".parquet" or (p.name.startswith(".") and p.suffix == ".tmp"))]
    return out


def info(root: Path | None = None) -> dict[str, Any]:
    """``{"location", "exists", "entries", "bytes"}`` of the cache."""
    base = cache_dir() if root is None else Path(root)
    files = entries(base)
    size = 0
    for p in files:
        try:
            size += p.stat().st_size
        except OSError:
            pass
    return {"location": str(base), "exists": base.is_dir(), "entries": len(files), "bytes": size}


def clear(root: Path | None = None) -> tuple[int, int]:
    """Remove the cache's entries (then its emptied subfolders); ``(files removed, bytes freed)``."""
    base = cache_dir() if root is None else Path(root)
    n = freed = 0
    for p in entries(base):
        try:
            size = p.stat().st_size
            p.unlink()
        except FileNotFoundError:
            continue
        n, freed = n + 1, freed + size
    for sub in SUBDIRS:
        try:
            (base / sub).rmdir()
        except OSError:  # absent, or holds files this package did not write
            pass
    return n, freed


# --- mfu cache -----------------------------------------------------------------------------------
