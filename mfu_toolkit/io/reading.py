"""One reader for every format: bounded bytes, lines, CSV rows, JSON and head sniffing.

Every read here is bounded. A gzipped input is inflated as a stream and refused once it grows
past :attr:`Limits.inflate_factor` times its compressed size (at least
:attr:`Limits.inflate_floor` bytes), so a damaged trailer or a gzip bomb is a
:class:`~mfu_toolkit.run.LoadError` naming the file, never a ``MemoryError``. Text is read in
chunks; a line longer than :attr:`Limits.max_line_bytes` is skipped and counted, never held
whole. ``\\r\\n``, ``\\n`` and a lone ``\\r`` (a progress bar's redraw, or a file with old Mac
line ends) each end a line, so the text before a ``\\r`` is a line of its own and no record is
discarded with it.

:class:`Reader` is what a format's ``parse`` receives: the path, the limits, and the
skip-or-raise rule (``bad`` counts a malformed record in the LoadReport or, with
``strict=True``, raises naming file, line and field). Nothing here executes or unpickles
anything from a log. The Reader of a text log (a format with ``TEXT_LOG = True``) carries an
:class:`~mfu_toolkit.io.nccl_info.NcclStage`: its ``lines()`` come without NCCL's own
``NCCL_DEBUG=INFO`` lines, which the stage reads for every such format in one place.

The limits can be raised per load (``load_run(path, max_inflate_factor=200)``) or for a
session (``MFU_MAX_INFLATE_FACTOR``, ``MFU_MAX_LINE_BYTES``). A stream (stdin, a pipe, a FIFO, a
device such as ``/dev/zero``) is copied once to a temporary file of at most
``MFU_MAX_STREAM_BYTES`` (8 GiB) bytes, removed on every exit (:func:`spool_input`).
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import select
import stat
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..run import LoadError, LoadReport
from . import rules
from .nccl_info import NcclStage

__all__ = [
    "ANSI_RE",
    "CsvRows",
    "Limits",
    "Reader",
    "SpooledInput",
    "iter_chunks",
    "iter_lines",
    "parse_json",
    "read_bytes",
    "read_head",
    "read_text",
    "spool_input",
    "stream_limit",
]

ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20
_BREAK = re.compile(rb"\r\n|\r|\n")
_MiB = 1 << 20


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(float(raw))
    except ValueError:
        raise LoadError(f"environment variable {name}={raw!r} is not a number", field=name) from None
    if value <= 0:
        raise LoadError(f"environment variable {name}={raw!r} must be positive", field=name)
    return value


@dataclass(frozen=True)
class Limits:
    """How much a load may read: inflation of compressed input and the length of one line.

    ``inflate_factor``: a gzipped input may inflate to this many times its compressed size
    (text logs compress 5–15×; the real Kineto traces 10–14×). ``inflate_floor``: but always to
    at least this many bytes. ``max_line_bytes``: a longer line is skipped and counted.
    """

    inflate_factor: int = 64
    inflate_floor: int = 64 * _MiB
    max_line_bytes: int = 16 * _MiB

    @classmethod
    def from_env(cls, **given: int | None) -> Limits:
        """The defaults, then ``MFU_MAX_INFLATE_FACTOR`` / ``MFU_MAX_LINE_BYTES``, then ``given``."""
        base = cls(
            inflate_factor=_env_int("MFU_MAX_INFLATE_FACTOR", cls.inflate_factor),
            max_line_bytes=_env_int("MFU_MAX_LINE_BYTES", cls.max_line_bytes),
        )
        changes: dict[str, int] = {}
        for key, value in given.items():
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise LoadError(f"{key} must be a positive integer; got {value!r}", field=key)
            changes[key] = value
        return base if not changes else Limits(**{**base.__dict__, **changes})

    def inflate_limit(self, compressed_size: int) -> int:
        return max(self.inflate_floor, self.inflate_factor * max(int(compressed_size), 1))


DEFAULT_LIMITS = Limits()


# --- bytes -----------------------------------------------------------------------------------


def _inflate(f: Any, first: bytes, path: Path, limit: int) -> Iterator[bytes]:
    """Decompressed chunks of a gzip stream (several members allowed), refusing past ``limit``."""
    dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
    total = 0
    buf = first
    while True:
        if not buf:
            buf = f.read(_CHUNK)
            if not buf:
                break
        try:
            data = dec.decompress(buf, _CHUNK)
        except zlib.error as exc:
            raise LoadError(f"corrupt gzip stream ({exc})", path=path) from None
        buf = dec.unconsumed_tail
        if data:
            total += len(data)
            if total > limit:
                raise LoadError(
                    f"gzip stream inflates past {limit:,} bytes (the limit for this file: "
                    f"max(inflate_floor, inflate_factor × compressed size)); the file is damaged or a "
                    "decompression bomb; raise max_inflate_factor= if it is genuine",
                    path=path,
                )
            yield data
        if dec.eof:
            rest = dec.unused_data + buf
            if rest[:2] != GZIP_MAGIC:
                return  # trailing bytes after the last member are ignored, as gzip(1) does
            dec = zlib.decompressobj(16 + zlib.MAX_WBITS)
            buf = rest
    if not dec.eof:
        raise LoadError("corrupt gzip stream (it ends before its end-of-stream marker: truncated)", path=path)


def iter_chunks(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Iterator[bytes]:
    """The file's bytes in chunks, transparently (and boundedly) gunzipped."""
    p = Path(path)
    try:
        f = p.open("rb")
    except OSError as exc:
        raise LoadError(f"cannot read file ({exc.strerror or exc})", path=p) from None
    with f:
        try:
            first = f.read(_CHUNK)
            if first[:2] == GZIP_MAGIC:
                size = os.fstat(f.fileno()).st_size
                yield from _inflate(f, first, p, limits.inflate_limit(size))
                return
            if first:
                yield first
            while chunk := f.read(_CHUNK):
                yield chunk
        except OSError as exc:
            raise LoadError(f"cannot read file ({exc.strerror or exc})", path=p) from None


def read_bytes(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The whole file as bytes (gunzipped within the limits)."""
    return b"".join(iter_chunks(path, limits))


def read_text(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> str:
    """The whole file as text: UTF-8 (undecodable bytes replaced), a leading BOM removed."""
    text = read_bytes(path, limits).decode("utf-8", errors="replace")
    return text[1:] if text.startswith("\ufeff") else text


def read_head(path: str | Path, n: int = 8192) -> bytes:
    """The first ``n`` bytes (decompressed when gzipped) for format sniffing; never raises on damage."""
    p = Path(path)
    with p.open("rb") as f:
        raw = f.read(n)
    if raw[:2] != GZIP_MAGIC:
        return raw
    out = bytearray()
    try:
        for chunk in iter_chunks(p, Limits(inflate_factor=1, inflate_floor=max(n, 1) + _CHUNK)):
            out += chunk
            if len(out) >= n:
                break
    except LoadError:
        pass
    return bytes(out[:n])


# --- lines -----------------------------------------------------------------------------------


def _decode(raw: bytes) -> str:
    line = raw.decode("utf-8", errors="replace")
    if "\x1b" in line:
        line = ANSI_RE.sub("", line)
    return line


def iter_lines(
    path: str | Path,
    limits: Limits = DEFAULT_LIMITS,
    *,
    too_long: Callable[[int, int], None] | None = None,
) -> Iterator[tuple[int, str]]:
    """``(line_number, text)`` for every line, 1-based, ANSI colour codes removed.

    ``\\r\\n``, ``\\n`` and a lone ``\\r`` each end a line. A line longer than
    ``limits.max_line_bytes`` is not yielded: ``too_long(line_number, n_bytes_seen)`` is called
    instead (the Reader counts it) and its bytes are passed over without being kept. As with
    ``text.split("\\n")``, the last line is the text after the last break (``""`` when the
    file ends with one).
    """
    cap = limits.max_line_bytes
    parts: list[bytes] = []  # pieces of the line being read (each chunk is scanned once)
    held = 0  # bytes of the current line seen so far
    skipping = False  # inside an over-long line: its bytes are counted, not kept
    held_cr = False  # the last chunk ended in '\r', which may be the first half of '\r\n'
    lineno = 1
    first = True
    for chunk in iter_chunks(path, limits):
        if first:
            chunk = chunk[3:] if chunk.startswith(b"\xef\xbb\xbf") else chunk
            first = False
        if held_cr:
            chunk, held_cr = b"\r" + chunk, False
        if chunk.endswith(b"\r"):
            chunk, held_cr = chunk[:-1], True
        pos = 0
        for m in _BREAK.finditer(chunk):
            n = held + m.start() - pos
            if skipping or n > cap:
                if too_long is not None:
                    too_long(lineno, n)
            else:
                piece = chunk[pos : m.start()]
                yield lineno, _decode(b"".join(parts) + piece if parts else piece)
            parts, held, skipping = [], 0, False
            lineno += 1
            pos = m.end()
        rest = chunk[pos:]
        held += len(rest)
        if skipping or held > cap:
            skipping, parts = True, []
        elif rest:
            parts.append(rest)
    if skipping:
        if too_long is not None:
            too_long(lineno, held)
        if held_cr:
            yield lineno + 1, ""
        return
    # As str.split("\n"): the text after the last break is a line, empty when the file ends
    # with a break (formats tell a half-written last line by it).
    yield lineno, _decode(b"".join(parts))
    if held_cr:
        yield lineno + 1, ""


# --- JSON ------------------------------------------------------------------------------------


def parse_json(text: str | bytes) -> tuple[Any, str | None, int | None]:
    """``(value, None, None)`` or ``(None, reason, line)``; never raises (deep nesting included).

    ``reason`` is a :class:`~.rules.SkipReason`: ``MALFORMED_JSON`` with the decoder's message as its
    detail, or ``JSON_TOO_DEEP``."""
    try:
        return json.loads(text), None, None
    except json.JSONDecodeError as exc:
        return None, rules.SkipReason(rules.MALFORMED_JSON, exc.msg), exc.lineno
    except RecursionError:
        return None, rules.SkipReason(rules.JSON_TOO_DEEP), None
    except (ValueError, TypeError, UnicodeDecodeError) as exc:  # e.g. an int with too many digits
        return None, rules.SkipReason(rules.MALFORMED_JSON, str(exc)), None


# --- CSV -------------------------------------------------------------------------------------


class CsvRows:
    """The well-formed rows of a CSV text, with the stripped ``header``.

    Iterating yields ``(line_number, cells)``; blank rows are passed over. A row the csv module
    cannot parse, or one with the wrong number of fields ("half-written last line" when it is
    the file's last line and short), goes through ``reader.bad`` with its line and field.
    ``n_rows`` counts the non-blank data rows seen, well-formed or not. An empty text is a
    ``LoadError``.
    """

    def __init__(self, text: str, reader: Reader) -> None:
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
            except csv.Error as exc:
                reader.bad(rules.UNREADABLE_CSV_ROW, line=rows.line_num, detail=str(exc))
                continue
            ln = rows.line_num
            if not row or all(not c.strip() for c in row):
                continue
            self.n_rows += 1
            if len(row) != ncol:
                short_last = ln >= self._last_line and len(row) < ncol
                why = rules.HALF_WRITTEN if short_last else rules.WRONG_FIELD_COUNT
                reader.bad(why, line=ln, field=header[max(0, min(len(row), ncol) - 1)], example=",".join(row)[:160])
                continue
            yield ln, row


# --- the reader a format receives ------------------------------------------------------------


@dataclass
class Reader:
    """One load's view of its input: path, limits, and skip-or-raise.

    A load that reads several files gives each its own Reader (:meth:`for_file`) sharing one
    report; with ``root`` (the loaded folder, set only when there is more than one file) the
    skipped records are remembered as ``"<file relative to root>:<line>"``. Strict-mode errors
    always name the Reader's own file.
    """

    path: Path
    fmt: str
    strict: bool = False
    report: LoadReport | None = None
    root: Path | None = None
    limits: Limits = field(default_factory=lambda: DEFAULT_LIMITS)
    display: str | None = None  # the name the user gave (``<stdin>``) when ``path`` is a spool
    nccl: NcclStage | None = None  # a text log's stage: NCCL's own lines taken out of lines() (see nccl_info)

    def __post_init__(self) -> None:
        self.path = Path(self.path)
        if self.root is not None:
            self.root = Path(self.root)
        if self.report is None:
            self.report = LoadReport(source=self.display or str(self.path), format=self.fmt)

    @property
    def file(self) -> str | None:
        """This file relative to ``root`` (``None`` without a root, or for the root itself)."""
        if self.root is None or self.path == self.root:
            return None
        try:
            return self.path.relative_to(self.root).as_posix()
        except ValueError:
            return self.path.as_posix()

    @property
    def name(self) -> str:
        """What errors call this input: the user's name for it, else its path."""
        return self.display if (self.display and self.path == self._spool_path()) else str(self.path)

    def _spool_path(self) -> Path | None:
        return self.path if self.display else None

    def for_file(self, path: str | Path, *, root: str | Path | None = None) -> Reader:
        """A Reader for one of this load's files: same report, mode and limits."""
        return Reader(
            Path(path), self.fmt, strict=self.strict, report=self.report,
            root=self.root if root is None else Path(root), limits=self.limits,
        )

    # records
    def bad(self, reason: str, *, line: int | None = None, field: str | None = None,
            example: str | None = None, detail: str | None = None, count: int = 1) -> None:
        """A malformed record: raise in strict mode, otherwise count it under ``reason``.

        ``reason`` is a skip-reason constant (see :mod:`.rules`); ``detail`` tells this record apart
        (a rank, a metric, the decoder's message; a :class:`~.rules.SkipReason` brings its own). Strict:
        ``LoadError("<reason> (<detail>): '<example>'")``; else the report keeps
        ``rules.with_detail(detail, example)`` as the reason's first example. ``count`` counts that many
        records of one kind at once (strict raises on the first).
        """
        if detail is None:
            detail = getattr(reason, "detail", None)
        reason = str(reason)
        if self.strict:
            message = reason + (f" ({detail})" if detail else "") + (f": {example[:120]!r}" if example else "")
            raise LoadError(message, path=self.name, line=line, field=field)
        self.report.skip(reason, line=line, example=rules.with_detail(detail, example), file=self.file, detail=detail,
                         count=count)

    def fail(self, message: str, *, line: int | None = None, field: str | None = None) -> None:
        """An error that no mode can skip (e.g. no records at all)."""
        raise LoadError(message, path=self.name, line=line, field=field)

    def note(self, text: str) -> None:
        self.report.note(text)

    # reading, all bounded
    def bytes(self, path: str | Path | None = None) -> bytes:
        return read_bytes(self.path if path is None else path, self.limits)

    def text(self, path: str | Path | None = None) -> str:
        return read_text(self.path if path is None else path, self.limits)

    def head(self, n: int = 8192, path: str | Path | None = None) -> bytes:
        return read_head(self.path if path is None else path, n)

    def lines(self, path: str | Path | None = None) -> Iterator[tuple[int, str]]:
        """The file's lines (see :func:`iter_lines`); an over-long one is counted as a bad record. With a stage
        (``nccl``, a text log's), the lines of this Reader's own file come without NCCL's own lines."""
        cap = self.limits.max_line_bytes

        def too_long(line: int, n: int) -> None:
            self.bad(rules.LINE_TOO_LONG, line=line, detail=f"over {cap:,} bytes; max_line_bytes= raises the limit")

        lines = iter_lines(self.path if path is None else path, self.limits, too_long=too_long)
        if self.nccl is not None and (path is None or Path(path) == self.path):
            return iter(self.nccl.without(lines))
        return lines

    def text_lines(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
        """``(line, text)`` pairs a format took out of its file by other means (a notebook's outputs) through the
        same stage as :meth:`lines`: without NCCL's own lines, when the Reader has a stage."""
        return iter(lines) if self.nccl is None else iter(self.nccl.without(lines))

    def csv_rows(self, text: str) -> CsvRows:
        return CsvRows(text, self)

    def json(self, text: str | bytes, *, line: int | None = None) -> tuple[Any, bool]:
        """``(value, True)``, or ``(None, False)`` after counting the record as bad."""
        value, why, at = parse_json(text)
        if why is None:
            return value, True
        self.bad(why, line=line if line is not None else at)
        return None, False


# --- stdin, pipes and FIFOs ------------------------------------------------------------------

MAX_STREAM_BYTES = 8 << 30  # the default limit of a spooled stream (MFU_MAX_STREAM_BYTES)
STREAM_ENV = "MFU_MAX_STREAM_BYTES"
SPOOL_PREFIX = "mfu-input-"
_DISK_RESERVE = 256 * _MiB  # a spool stops before the temporary folder has less than this free
_DISK_CHECK = 64 * _MiB  # free space is looked at after every this many bytes
_SIGNALS = ("SIGTERM", "SIGHUP")  # their default action ends the process without cleaning up


def stream_limit() -> int:
    """The most bytes a stream is spooled: ``MFU_MAX_STREAM_BYTES``, else :data:`MAX_STREAM_BYTES`."""
    return _env_int(STREAM_ENV, MAX_STREAM_BYTES)


@dataclass
class SpooledInput:
    """A non-seekable input (``-``, ``/dev/stdin``, a FIFO, ``<(zcat …)``) copied once to a file.

    While it exists, SIGTERM and SIGHUP (when their handlers are the default) end the process
    through ``SystemExit``, so ``finally`` blocks remove the spool; :meth:`close` restores them."""

    path: Path
    display: str
    _tmp: tempfile.TemporaryDirectory | None = None
    _handlers: dict[int, Any] = field(default_factory=dict)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
        _restore_signals(self._handlers)

    def __enter__(self) -> SpooledInput:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _exit_on_signal(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)


def _catch_signals() -> dict[int, Any]:
    """Route SIGTERM/SIGHUP through SystemExit (main thread, default handlers only); the old handlers."""
    import signal
    import threading

    old: dict[int, Any] = {}
    if threading.current_thread() is not threading.main_thread():
        return old
    for name in _SIGNALS:
        sig = getattr(signal, name, None)
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            old[sig] = signal.signal(sig, _exit_on_signal)
    return old


def _restore_signals(old: dict[int, Any]) -> None:
    import signal

    while old:
        sig, handler = old.popitem()
        try:
            signal.signal(sig, handler)
        except (ValueError, OSError):  # not the main thread any more: nothing to restore there
            pass


def _remove_stale_spools() -> None:
    """Remove spools a killed process left (``mfu-input-<pid>-*`` of this user whose pid is gone)."""
    import shutil

    root = Path(tempfile.gettempdir())
    try:
        found = list(root.glob(f"{SPOOL_PREFIX}*-*"))
    except OSError:
        return
    for d in found:
        pid = d.name[len(SPOOL_PREFIX):].split("-", 1)[0]
        try:
            if not pid.isdigit() or d.stat().st_uid != os.getuid() or _alive(int(pid)):
                continue
        except OSError:
            continue
        shutil.rmtree(d, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # exists, owned by another user
        return True
    return True


def _is_stream(p: Path) -> bool:
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def spool_input(path: str | Path, *, timeout_s: float | None = None,
                max_bytes: int | None = None) -> SpooledInput | None:
    """Copy stdin or a pipe/FIFO/device into a temporary file once, so sniffing and parsing both see it.

    ``None`` for a regular file or folder (read in place). A stream on which no byte arrives and
    which no writer closes within ``timeout_s`` (default ``MFU_STREAM_TIMEOUT_S`` or 60) is a
    LoadError, never an endless wait; so is one longer than ``max_bytes`` (default
    :func:`stream_limit`) or one that would leave the temporary folder under 256 MiB free. The
    spool is removed on every exit: an error, an interrupt, SIGTERM/SIGHUP; one a killed process
    left is removed by the next spool.
    """
    if timeout_s is None:
        timeout_s = float(_env_int("MFU_STREAM_TIMEOUT_S", 60))
    limit = stream_limit() if max_bytes is None else max_bytes
    text = str(path)
    if text == "-":
        fd, display, close = sys.stdin.fileno(), "<stdin>", False
    else:
        p = Path(path)
        if not _is_stream(p):
            return None
        display = text
        try:
            fd, close = os.open(p, os.O_RDONLY | os.O_NONBLOCK), True
        except OSError as exc:
            raise LoadError(f"cannot open ({exc.strerror or exc})", path=display) from None
    _remove_stale_spools()
    handlers = _catch_signals()
    tmp = None
    try:
        tmp = tempfile.TemporaryDirectory(prefix=f"{SPOOL_PREFIX}{os.getpid()}-")
        out = Path(tmp.name) / "input"
        _copy_stream(fd, out, display, timeout_s, limit)
    except BaseException:
        if tmp is not None:
            tmp.cleanup()
        _restore_signals(handlers)
        raise
    finally:
        if close:
            os.close(fd)
    return SpooledInput(out, display, tmp, handlers)


def _too_long(display: str, limit: int) -> LoadError:
    return LoadError(f"input stream is longer than {limit:,} bytes, the limit for a piped input "
                     f"({STREAM_ENV}); save it to a file, or raise {STREAM_ENV}", path=display)


def _check_disk(folder: Path, display: str) -> None:
    import shutil

    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if free < _DISK_RESERVE:
        raise LoadError(f"the temporary folder {folder.parent} has under {_DISK_RESERVE >> 20} MiB free while "
                        f"copying the input stream; set TMPDIR to a larger disk or save the input to a file",
                        path=display)


def _copy_stream(fd: int, out: Path, display: str, timeout_s: float, limit: int, grace_s: float = 2.0) -> None:
    """Copy until end of stream, at most ``limit`` bytes. Before the first byte, wait at most
    ``timeout_s``; an end of stream before any byte (a FIFO whose writer has not opened yet
    reads the same) is waited on for ``grace_s`` before the input counts as empty."""
    was_blocking = os.get_blocking(fd)
    os.set_blocking(fd, False)
    deadline = time.monotonic() + timeout_s
    written, checked = 0, 0
    eof_since: float | None = None
    try:
        with out.open("wb") as f:
            while True:
                ready, _, _ = select.select([fd], [], [], 0.2)
                now = time.monotonic()
                if not ready:
                    if not written and now >= deadline:
                        raise LoadError(
                            f"no data arrived within {timeout_s:g} s (is anything writing to it?)",
                            path=display)
                    continue
                try:
                    chunk = os.read(fd, min(_CHUNK, limit + 1 - written))
                except BlockingIOError:
                    continue
                if chunk:
                    written += len(chunk)
                    if written > limit:
                        raise _too_long(display, limit)
                    f.write(chunk)
                    if written - checked >= _DISK_CHECK:
                        checked = written
                        _check_disk(out.parent, display)
                    continue
                if written:
                    return
                eof_since = now if eof_since is None else eof_since
                if now - eof_since >= grace_s:
                    return
                time.sleep(0.05)
    finally:
        try:
            os.set_blocking(fd, was_blocking)
        except OSError:
            pass
