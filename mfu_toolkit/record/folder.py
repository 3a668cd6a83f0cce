"""The recorded folder format, writer side: one append-only JSON-lines file per rank and attempt.

A folder (``runs/job1``) holds ``rank{R:05d}.attempt{A:03d}.jsonl`` files. Each file is written
by one process and read by :mod:`mfu_toolkit.io.formats.recorded`; the format is documented in
the README ("Record your own job") so that other tools can write it. Version 1:

- line 1, the header: ``{"format": "mfu_toolkit.record", "version": 1, "rank": R,
  "world_size": W, "attempt": A, "t0_unix": <epoch seconds>, ...}`` (optional: ``local_rank``,
  ``restart_count``, ``host``, ``pid``, ``framework``, ``accelerator``, ``gpu_timing``, and from
  the framework callbacks ``framework_loop`` and ``grad_sync``: how the gradient synchronisation
  was timed as ``comm``, or ``off: <why>``);
- a step: ``{"step": N, "start": s, "end": s, "samples": n, "tokens": n, "data_wait": s,
  "comm": s}`` (times in seconds since ``t0_unix``, on the writer's monotonic clock; the last
  four optional);
- an event: ``{"event": KIND, "start": s, "end": s, "detail": "..."}`` (``KIND`` from the Run's
  ``events`` vocabulary);
- the GPU time of a step, written when the GPU has finished it: ``{"gpu_step": N, "gpu_s": s}``;
- a clean end: ``{"close": s}``. A file without it ended with its process (killed or crashed).

Every record is one line written by one ``os.write`` on an ``O_APPEND`` descriptor, so a killed
process leaves whole lines and at most one half-written last line. Nothing here coordinates
ranks: the attempt is chosen from the files of this rank alone (see :func:`next_attempt`).
"""

from __future__ import annotations

import json
import math
import os
import re
import socket
import time
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


class RankFile:
    """One rank's append-only record file (created exclusively; never rewritten).

    ``header`` fields are written on line 1 after the format's own (``format``, ``version``,
    ``rank``, ``world_size``, ``attempt``, ``t0_unix``). ``origin`` is the monotonic clock
    reading (``time.perf_counter()``) that ``t0_unix`` stands for; every time written is
    seconds since it. ``buffer_records`` records are held at most before one write (1: each
    record is written as it is made).
    """

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        rank: int,
        world_size: int,
        attempt: int,
        header: Mapping[str, Any] | None = None,
        buffer_records: int = 1,
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.rank, self.world_size = rank, world_size
        self._fd, self.attempt = self._create(attempt)
        self.path = self.folder / file_name(rank, self.attempt)
        self._buffer: list[str] = []
        self._limit = max(1, int(buffer_records))
        self.origin = time.perf_counter()
        t0_unix = time.time()
        head = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "rank": rank, "world_size": world_size,
                "attempt": self.attempt, "t0_unix": round(t0_unix, 6), "host": socket.gethostname(),
                "pid": os.getpid(), **dict(header or {})}
        self._write_now(json.dumps(head, separators=(",", ":")) + "\n")

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

    def _write_now(self, text: str) -> None:
        data = text.encode("utf-8")
        while data:  # os.write may write less than asked (a signal, a full disk)
            n = os.write(self._fd, data)
            data = data[n:]

    def _add(self, line: str) -> None:
        if self._fd < 0:
            raise ValueError(f"{self.path}: the record file is closed")
        if self._limit == 1:
            self._write_now(line)
            return
        self._buffer.append(line)
        if len(self._buffer) >= self._limit:
            self.flush()

    def flush(self) -> None:
        """Write the buffered records (one ``os.write``)."""
        if self._buffer and self._fd >= 0:
            text = "".join(self._buffer)
            self._buffer.clear()
            self._write_now(text)

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

    def event(self, kind: str, start: float, end: float, detail: str = "") -> None:
        """One job event (``kind`` from the Run's events vocabulary)."""
        o = self.origin
        text = f',"detail":{json.dumps(detail)}' if detail else ""
        self._add(f'{{"event":"{kind}","start":{_number(start - o)},"end":{_number(end - o)}{text}}}\n')

    def gpu(self, step: int, seconds: float) -> None:
        """A step's GPU time, measured by CUDA events once the GPU finished it."""
        self._add(f'{{"gpu_step":{step},"gpu_s":{_number(seconds)}}}\n')

    def close(self, end: float | None = None) -> None:
        """Write the clean-end record and close (a second call does nothing)."""
        if self._fd < 0:
            return
        t = time.perf_counter() if end is None else end
        self._buffer.append(f'{{"close":{_number(t - self.origin)}}}\n')
        self.flush()
        os.close(self._fd)
        self._fd = -1
