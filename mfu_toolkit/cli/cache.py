"""``mfu cache info|clear``: where cached parses are kept, their size, and clearing them."""

from __future__ import annotations

from typing import Any

from ..io.cache import cache_dir, clear, info


def add_parser(subparsers: Any) -> None:
    """Add ``mfu cache info|clear`` to an argparse subparsers object."""
    p = subparsers.add_parser("cache",
                              description="The user cache directory ($MFU_CACHE_DIR, else $XDG_CACHE_HOME/mfu_toolkit, "
                                          "else ~/.cache/mfu_toolkit): `info` prints its location, entries and size; "
                                          "`clear` removes the entries.")
    p.add_argument("action", choices=("info", "clear"), help="info: location, entries, size; clear: remove the entries")
    p.set_defaults(func=run_cache)


def run_cache(args: Any) -> int:
    """The ``mfu cache`` handler: prints one or two lines, exit status 0."""
    if args.action == "clear":
        n, freed = clear()
        print(f"removed {n} cache entr{'y' if n == 1 else 'ies'} ({_size(freed)}) from {cache_dir()}")
        return 0
    i = info()
    print(f"location: {i['location']}{'' if i['exists'] else ' (not created yet)'}")
    print(f"entries: {i['entries']}, size: {_size(i['bytes'])}")
    return 0


def _size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)
