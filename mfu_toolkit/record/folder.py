"""The recorded folder format, writer side: one append-only JSON-lines file per rank and attempt.

A folder (``runs/job1``) holds ``rank{R:05d}.attempt{A:03d}.jsonl`` files. Each file is written
by one process and read by :mod:`mfu_toolkit.io.formats.recorded`; the format is documented in
the README ("Record your own job") so that other tools can write it. Version 1:

- line 1, the header: ``{"format": "mfu_toolkit.record", "version": 1, "rank": R,
  "world_size": W, "attempt": A, "t0_unix": <epoch seconds>, ...}`` (optional: ``mono0``, the
  writer's monotonic clock (``time.monotonic()``) at the same instant as ``t0_unix``;
  ``boot_id``, the host's boot (files of one boot share that monotonic clock); ``heartbeat_s``,
  the most seconds between two beats while records come; ``local_rank``, ``restart_count``,
  ``host``, ``pid``, ``framework``, ``accelerator``, ``gpu_timing``, and from the framework
  callbacks ``framework_loop`` and ``grad_sync``: how the gradient synchronisation was timed as
  ``comm``, or ``off: <why>``);
- a step: ``{"step": N, "start": s, "end": s, "samples": n, "tokens": n, "data_wait": s,
  "comm": s}`` (times in seconds since ``t0_unix``, on the writer's monotonic clock; the last
  four optional);
- an event: ``{"event": KIND, "start": s, "end": s, "detail": "..."}`` (``KIND`` from the Run's
  ``events`` vocabulary);
- the GPU time of a step, written when the GPU has finished it: ``{"gpu_step": N, "gpu_s": s}``;
- a beat: ``{"beat": s, "wall": <epoch seconds>}``, a monotonic and a wall-clock reading taken
  together, after the first step or event that ends ``heartbeat_s`` or more after the last beat
  (so every record of the file ends before the next beat, or the close);
- records lost to write errors: ``{"dropped": N, "start": s, "end": s, "wall": <epoch seconds>}``
  written when writing works again (``N`` records lost between ``start`` and ``end``);
- a clean end: ``{"close": s, "wall": <epoch seconds>}`` (``wall`` optional). A file without it
  ended with its process (killed or crashed).

Every record is one line written by one ``os.write`` on an ``O_APPEND`` descriptor, so a killed
process leaves whole lines and at most one half-written last line; a write that fails part-way
is cut back to whole lines. Nothing here coordinates ranks: the attempt is chosen from the
files of this rank alone (see :func:`next_attempt`).
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import sys
import time
import warnings
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FILE_RE",
    "RankFile",
    "file_name",
    "next_attempt",
]

FORMAT_NAME = "mfu_toolkit.record"
FORMAT_VERSION = 1
FILE_RE = re.compile(r"^rank(\d{1,9})\.attempt(\d{1,9})\.jsonl$")
_MAX_TRIES = 1000  # attempts tried past a taken file name before giving up
HEARTBEAT_S = 60.0  # seconds between two beats (monotonic + wall-clock readings) at most, while records come


def file_name(rank: int, attempt: int) -> str:
    """The file one rank writes in one attempt: ``rank00003.attempt001.jsonl``."""
    return f"rank{rank:05d}.attempt{attempt:03d}.jsonl"


def next_attempt(folder: Path, rank: int, restart_count: int | None = None) -> int:
    """The attempt a new launch of ``rank`` records as: one past this rank's last file.

    A launch into a folder that already holds records is the next attempt (a scheduler requeue,
    a manual relaunch). ``restart_count`` (torchrun's ``TORCHELASTIC_RESTART_COUNT``) is a lower
    bound: a rank that died before writing its file in restart 0 still records restart 1 as
    attempt 1. Only this rank's files are looked at, so ranks never wait for one another.
    """
    last = -1
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        names = []
    for name in names:
        m = FILE_RE.match(name)
        if m and int(m.group(1)) == rank:
            last = max(last, int(m.group(2)))
    return max(last + 1, int(restart_count or 0))


def _number(value: float) -> str:
    """A time or count as JSON text (microsecond precision; NaN and infinities as null)."""
    if value != value or math.isinf(value):
        return "null"
    return f"{value:.6f}"


def _amount(value: float) -> str:
    """A count (samples, tokens) as JSON text: integers as integers."""
    if isinstance(value, int):
        return str(value)
    if value != value or math.isinf(value):
        return "null"
    return repr(float(value))


_FILES: weakref.WeakSet[RankFile] = weakref.WeakSet()  # open files, so a forked child can drop them


def _forget_in_child() -> None:
    """In a child made by ``os.fork``: the parent's files are the parent's (buffer dropped, no writes)."""
    for f in list(_FILES):
        f._buffer.clear()
        f._owner, f._trouble = False, True


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_in_child)


def _boot_id() -> str | None:
    """This boot's id (Linux): two files with the same one share a monotonic clock."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read(64).strip() or None
    except OSError:
        return None


def _warn(text: str) -> None:
    """A warning that cannot raise into the training loop (even under ``-W error``)."""
    try:
        warnings.warn(text, RuntimeWarning, stacklevel=4)
    except Exception:  # warnings turned into errors: say it on stderr instead
        try:
            sys.stderr.write(f"RuntimeWarning: {text}\n")
        except Exception:  # a closed stderr: nothing left to tell
            pass


class RankFile:
    """One rank's append-only record file (created exclusively; never rewritten).

    ``header`` fields are written on line 1 after the format's own (``format``, ``version``,
    ``rank``, ``world_size``, ``attempt``, ``t0_unix``, ``mono0``, ``heartbeat_s``). ``origin``
    is the monotonic clock reading (``time.perf_counter()``) that ``t0_unix`` stands for; every
    time written is seconds since it. ``buffer_records`` records are held at most before one
    write (1: each record is written as it is made). A beat (a monotonic and a wall-clock
    reading) follows the first record that ends ``heartbeat_s`` or more after the last one.

    A write that fails (a full disk, a file-size limit) never raises: it is warned about once,
    the records it loses are counted (:attr:`dropped`), a partly written line is cut back so the
    file stays whole lines, and the next write that succeeds is preceded by a ``dropped`` record.
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        rank: int,
        n_ranks: int,
        attempt: int,
        header: Mapping[str, Any] | None = None,
        buffer_records: int = 1,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        self._beat_s = float(heartbeat_s)
        if not self._beat_s > 0 or math.isinf(self._beat_s):
            raise ValueError(f"heartbeat_s must be a finite number of seconds > 0; got {heartbeat_s!r}")
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rank, self.n_ranks = rank, n_ranks
        self._fd, self.attempt = self._create(attempt)
        self.path = self.folder / file_name(rank, self.attempt)
        self._buffer: list[str] = []
        self._limit = max(1, int(buffer_records))
        self._owner, self._trouble, self._torn, self._warned = True, False, False, False
        self._size, self.dropped, self._gap, self._gap_start = 0, 0, 0, 0.0
        self._head_text = ""
        _FILES.add(self)
        self.origin = time.perf_counter()
        mono0, t0_unix = time.monotonic(), time.time()
        self._beat_at = 0.0
        head = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "rank": rank, "world_size": n_ranks,
                "attempt": self.attempt, "t0_unix": round(t0_unix, 6), "mono0": round(mono0, 6),
                "boot_id": _boot_id(), "heartbeat_s": self._beat_s, "host": socket.gethostname(),
                "pid": os.getpid(), **dict(header or {})}
        if head["boot_id"] is None:
            del head["boot_id"]
        self._emit(json.dumps(head, separators=(",", ":")) + "\n", 1, header=True)

    def _create(self, attempt: int) -> tuple[int, int]:
        """Open a new file for ``attempt``, or the next free attempt when another process took it."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_CLOEXEC", 0)
        for a in range(attempt, attempt + _MAX_TRIES):
            try:
                return os.open(self.folder / file_name(self.rank, a), flags, 0o644), a
            except FileExistsError:
                continue
        raise FileExistsError(f"{self.folder}: attempts {attempt}..{attempt + _MAX_TRIES - 1} of rank "
                              f"{self.rank} are all taken; record into a new folder")

    @property
    def closed(self) -> bool:
        return self._fd < 0

    # --- writing: whole lines, never an exception -------------------------------------------
    def _write_all(self, data: bytes) -> tuple[OSError, int] | None:
        """Write ``data``; on an error, cut a partly written line back and return the error and
        the number of whole lines that were written."""
        done = 0
        try:
            while done < len(data):  # os.write may write less than asked (a signal, a full disk)
                done += os.write(self._fd, data[done:] if done else data)
        except OSError as exc:
            keep = data.rfind(b"\n", 0, done) + 1
            try:  # the size the file has (a write may have put bytes there and still failed)
                size = os.fstat(self._fd).st_size
            except OSError:
                size = self._size + done
            if size > self._size + keep:
                try:
                    os.ftruncate(self._fd, self._size + keep)
                except OSError:
                    self._torn, keep = True, size - self._size  # the next write first ends the partial line
            self._size += keep
            return exc, data.count(b"\n", 0, keep)
        self._size += done
        return None

    def _emit(self, text: str, n: int, *, header: bool = False) -> None:
        """Write ``n`` records (``text``), or count them as dropped."""
        if self._trouble and not self._resume():
            self._lost(None, n, header, text)
            return
        failed = self._write_all(text.encode("utf-8"))
        if failed is not None:
            exc, written = failed
            if header and written == 0:
                self._lost(exc, 0, True, text)
            else:
                self._lost(exc, n - written, False, text)

    def _lost(self, exc: OSError | None, n: int, header: bool, text: str) -> None:
        if not self._owner:
            if not self._warned:
                self._warned = True
                _warn(f"mfu_toolkit.record (rank {self.rank}): process {os.getpid()} is a fork of the process "
                      f"that records {self.path}; its records are not written there")
            return
        if header:
            self._head_text = text
        if not self._gap:
            self._gap_start = time.perf_counter()
        self._gap += n
        self.dropped += n
        self._trouble = True
        if exc is not None and not self._warned:
            self._warned = True
            _warn(f"mfu_toolkit.record (rank {self.rank}, pid {os.getpid()}): cannot write {self.path} ({exc}); "
                  "records are counted and dropped until writing works again, then a 'dropped' record "
                  "marks the gap. Training goes on.")

    def _resume(self) -> bool:
        """After failed writes: end a partial line, write a lost header and the gap record."""
        if not self._owner:
            return False
        if self._torn:
            if self._write_all(b"\n") is not None:
                return False
            self._torn = False
        if self._head_text:
            if self._write_all(self._head_text.encode("utf-8")) is not None:
                return False
            self._head_text = ""
        if self._gap:
            now = time.perf_counter() - self.origin
            gap = (f'{{"dropped":{self._gap},"start":{_number(self._gap_start - self.origin)},'
                   f'"end":{_number(now)},"wall":{time.time():.6f}}}\n')
            if self._write_all(gap.encode("utf-8")) is not None:
                return False
            self._gap = 0
        self._trouble = False
        return True

    def _add(self, line: str) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path}: the record file is closed")
        if self._limit == 1:
            self._emit(line, 1)
            return
        self._buffer.append(line)
        if len(self._buffer) >= self._limit:
            self.flush()

    def flush(self) -> None:
        """Write the buffered records (one ``os.write``)."""
        if self._buffer and self._fd >= 0:
            n = len(self._buffer)
            text = "".join(self._buffer)
            self._buffer.clear()
            self._emit(text, n)

    # --- records --------------------------------------------------------------------------------
    def _beat(self) -> None:
        """A monotonic and a wall-clock reading, taken together (lets a reader align clocks)."""
        t = time.perf_counter() - self.origin
        self._beat_at = t
        self._add(f'{{"beat":{_number(t)},"wall":{time.time():.6f}}}\n')

    def step(self, step: int, start: float, end: float, samples: float | None, tokens: float | None,
             data_wait: float, comm: float) -> None:
        """One step's record; times are ``time.perf_counter()`` readings."""
        o = self.origin
        extra = ""
        if samples is not None:
            extra += f',"samples":{_amount(samples)}'
        if tokens is not None:
            extra += f',"tokens":{_amount(tokens)}'
        if data_wait:
            extra += f',"data_wait":{_number(data_wait)}'
        if comm:
            extra += f',"comm":{_number(comm)}'
        self._add(f'{{"step":{step},"start":{_number(start - o)},"end":{_number(end - o)}{extra}}}\n')
        if end - o - self._beat_at >= self._beat_s:
            self._beat()

    def event(self, kind: str, start: float, end: float, detail: str = "") -> None:
        """One job event (``kind`` from the Run's events vocabulary)."""
        o = self.origin
        text = f',"detail":{json.dumps(detail)}' if detail else ""
        self._add(f'{{"event":"{kind}","start":{_number(start - o)},"end":{_number(end - o)}{text}}}\n')
        if end - o - self._beat_at >= self._beat_s:
            self._beat()

    def gpu(self, step: int, seconds: float) -> None:
        """A step's GPU time, measured by CUDA events once the GPU finished it."""
        self._add(f'{{"gpu_step":{step},"gpu_s":{_number(seconds)}}}\n')

    def close(self, end: float | None = None) -> None:
        """Write the clean-end record and close (a second call does nothing).

        In a forked child only the child's descriptor is closed: the file is the parent's."""
        if self._fd < 0:
            return
        if self._owner:
            t = time.perf_counter() if end is None else end
            wall = f',"wall":{time.time():.6f}' if end is None else ""  # a pair only when read together
            self._buffer.append(f'{{"close":{_number(t - self.origin)}{wall}}}\n')
            self.flush()
        try:
            os.close(self._fd)
        except OSError as exc:  # e.g. a delayed write error reported at close (NFS)
            if not self._warned:
                self._warned = True
                _warn(f"mfu_toolkit.record (rank {self.rank}): closing {self.path} failed ({exc})")
        self._fd = -1
        _FILES.discard(self)
