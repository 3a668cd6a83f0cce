"""A seeded corpus of damaged logs, and the check every load of one must pass.

``mutations(data, rng)`` turns the bytes of a real log or sample into damaged variants
(truncation, byte flips, duplicated or reordered lines, NaN/inf/huge numbers, NUL bytes, CRLF and
CR-only line ends, a BOM, non-UTF-8 bytes, an 80 KB line, gzip damage). ``check(path)`` loads
one input in a forked child under a memory cap and a time limit and says what went wrong, if
anything: an exception that is not the toolkit's own, an internal error of a format, a memory
error passed off as a load error, a hang, or a saved Run that does not read back equal.

Used by ``tests/test_io_corpus.py`` (a small seeded corpus) and ``tools/io_corpus.py`` (thousands).
"""

from __future__ import annotations

import gzip
import os
import random
import re
import resource
import shutil
import signal
import tempfile
import traceback
import warnings
from collections.abc import Iterator
from pathlib import Path

MEMORY_CAP = 1 << 30  # an input under 1 MB may not cost more than this on top of the baseline
TIME_LIMIT_S = 60

_NUMBER = re.compile(rb"(?<![\w.])\d+\.\d+|(?<![\w.])\d{2,}(?![\w.])")
_BAD_NUMBERS = [b"nan", b"inf", b"-inf", b"1e308", b"-1", b"99999999999999999999999", b"3e9", b"NaN"]


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _mutate_numbers(data: bytes, rng: random.Random) -> bytes:
    hits = list(_NUMBER.finditer(data))
    if not hits:
        return data + b"nan"
    out, last = [], 0
    chosen = sorted(rng.sample(range(len(hits)), min(len(hits), 1 + min(len(hits), 2000) // 10)))
    for i in chosen:
        m = hits[i]
        out.append(data[last : m.start()])
        out.append(rng.choice(_BAD_NUMBERS))
        last = m.end()
    out.append(data[last:])
    return b"".join(out)


def _text_mutations(data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    n = len(data)
    yield "truncate", data[: rng.randrange(max(n, 1))]
    flipped = bytearray(data)
    for _ in range(max(1, n // 2000)):
        if flipped:
            flipped[rng.randrange(len(flipped))] = rng.randrange(256)
    yield "flip", bytes(flipped)
    lines = _lines(data)
    dup = list(lines)
    for _ in range(max(1, len(lines) // 20)):
        i = rng.randrange(len(dup))
        dup.insert(i, dup[i])
    yield "duplicate-lines", b"\n".join(dup)
    shuffled = list(lines)
    i = rng.randrange(len(shuffled))
    j = min(len(shuffled), i + rng.randrange(2, 50))
    block = shuffled[i:j]
    rng.shuffle(block)
    shuffled[i:j] = block
    yield "reorder-lines", b"\n".join(shuffled)
    yield "bad-numbers", _mutate_numbers(data, rng)
    nul = bytearray(data)
    for _ in range(5):
        nul.insert(rng.randrange(len(nul) + 1), 0)
    yield "nul", bytes(nul)
    yield "crlf", data.replace(b"\n", b"\r\n")
    yield "cr-only", data.replace(b"\n", b"\r")
    yield "bom", b"\xef\xbb\xbf" + data
    bad = bytearray(data)
    for _ in range(5):
        bad.insert(rng.randrange(len(bad) + 1), rng.choice([0xFF, 0xFE, 0xC0, 0x80]))
    yield "non-utf8", bytes(bad)
    at = rng.randrange(len(lines))
    yield "long-line", b"\n".join(lines[:at] + [rng.choice([b"[", b"0", b" ", b"{", b"|"]) * 80_000] + lines[at:])


def mutations(data: bytes, rng: random.Random) -> Iterator[tuple[str, bytes]]:
    """Damaged variants of ``data`` (decompressed first when gzipped; re-compressed after)."""
    zipped = data[:2] == b"\x1f\x8b"
    if zipped:
        try:
            plain = gzip.decompress(data)
        except (OSError, EOFError):
            plain = b""
        for kind, body in _text_mutations(plain, rng):
            yield kind, gzip.compress(body, compresslevel=1)
        yield "gzip-truncate", data[: rng.randrange(max(len(data), 1))]
        damaged = bytearray(data)
        for _ in range(10):
            damaged[rng.randrange(10, max(11, len(damaged)))] = rng.randrange(256)
        yield "gzip-flip", bytes(damaged)
        return
    yield from _text_mutations(data, rng)
    yield "gzip-of-damage", gzip.compress(data[: rng.randrange(max(len(data), 1))], compresslevel=1)


def _child(path: Path, fmt: str, out_fd: int) -> None:
    """In the forked child: cap memory, load, round-trip, and write one line of verdict."""
    import pyarrow as pa  # noqa: F401 - loaded before the cap: its allocator reserves address
    import pyarrow.parquet as pq  # space up front, which would otherwise read as a MemoryError

    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.base import InternalLoadError
    from mfu_toolkit.run import LoadError, SchemaError, save_run

    pq.write_table(pa.table({"x": [1]}), os.devnull)
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_CAP, hard))
    signal.alarm(TIME_LIMIT_S)
    verdict = "ok"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(path, format=fmt)
            with tempfile.TemporaryDirectory() as d:
                back = load_run(save_run(run, Path(d) / "r.parquet"))
            if back != run:
                verdict = "saved Run reads back different"
    except InternalLoadError as exc:
        verdict = f"internal error: {exc}"
    except LoadError as exc:
        if "ran out of memory" in str(exc):
            verdict = f"memory: {exc}"
    except SchemaError:
        pass
    except MemoryError:
        verdict = "MemoryError"
    except BaseException as exc:  # noqa: BLE001 - the point is to catch everything
        verdict = f"foreign {type(exc).__name__}: {exc} | {traceback.format_exc(limit=-3)}"
    os.write(out_fd, verdict.replace("\n", " ")[:2000].encode() + b"\n")


def check(path: Path, fmt: str = "auto") -> str:
    """``"ok"`` or what went wrong loading ``path`` (forked, capped at 1 GiB and 60 s)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            _child(path, fmt, w)
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        text = f.read().decode(errors="replace").strip()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        return "hang (over the time limit)" if sig == signal.SIGALRM else f"killed by signal {sig}"
    return text or "child wrote no verdict"


def sources(realdata: Path | None, samples: Path) -> list[Path]:
    """Every real log file (not the READMEs) and every sample file."""
    out = [p for p in sorted(samples.rglob("*")) if p.is_file()]
    if realdata is not None:
        out += [p for p in sorted(realdata.rglob("*")) if p.is_file() and p.name != "README.md"]
    return out


def materialise(src: Path, kind: str, data: bytes, root: Path, folder_of: Path | None = None) -> Path:
    """Write a mutation where it is loadable: alone under its own name, or inside a copy of its folder."""
    target = root / kind
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    if folder_of is None:
        p = target / src.name
        p.write_bytes(data)
        return p
    copy = target / folder_of.name
    shutil.copytree(folder_of, copy)
    (copy / src.relative_to(folder_of)).write_bytes(data)
    return copy


def assert_regexes_linear(module: object, ch: str, *, prefixes: tuple[str, ...], anchored: set[str]) -> None:
    """Every compiled pattern of ``module`` on 20 KB and 80 KB of ``ch`` after each prefix costs about 4x, not 16x.

    Patterns named in ``anchored`` are applied with match/fullmatch (as their module uses them),
    the others with finditer over the whole text.
    """
    import re

    from _timing import explain, growth, linear_bound

    for name, pat in vars(module).items():
        if not isinstance(pat, re.Pattern):
            continue
        for prefix in prefixes:
            def apply(n: int, pat: re.Pattern = pat, name: str = name, prefix: str = prefix):
                text = prefix + ch * n
                data = text if isinstance(pat.pattern, str) else text.encode()
                if name in anchored:
                    return lambda: (pat.fullmatch(data), pat.match(data))
                return lambda: sum(1 for _ in pat.finditer(data))

            ratio = growth(apply, 20_000)
            assert ratio < linear_bound(), (name, repr(prefix), repr(ch), explain(ratio, what="the text"))
