"""Nsight Systems exports: device time per GPU from ``nsys export --type sqlite`` (or ``parquetdir``).

What is read (the schema as NVIDIA documents it: "SQLite Export Schema Reference",
https://docs.nvidia.com/nsight-systems/2021.5/nsys-exporter/exported_data.html, and "Common SQLite
examples", https://docs.nvidia.com/nsight-systems/2022.4/nsys-exporter/examples.html, checked against
the tables of a 2026.2 export, schema 3.25.0):

- Tables appear only when their data was captured ("Tables are created lazily"), and columns change
  between versions, so the loader lists the tables from ``sqlite_master`` and each one's columns
  (``PRAGMA table_info``) and reads only columns that are there. A missing table or column is a note.
- Kernels: ``CUPTI_ACTIVITY_KIND_KERNEL`` (``start``, ``end`` in ns, ``deviceId``, the name as an id
  into ``StringIds``: ``shortName``, else ``demangledName``, else ``mangledName``; ``globalPid``).
  A kernel whose name contains ``nccl``/``rccl``/``hccl`` is communication (NCCL's
  ``ncclDevKernel_*``, older ``ncclKernel_*`` and ``ncclAllReduceRingLLKernel_*``; see
  :func:`mfu_toolkit.io.gpu_time.is_comm_kernel`), every other kernel compute. Memory copies and sets
  (``CUPTI_ACTIVITY_KIND_MEMCPY``/``MEMSET``) count as device activity, as in the Kineto loader.
- Time: event times are ns on the capture's clock. They become seconds since the capture's start,
  ``ANALYSIS_DETAILS.startTime`` (else ``TARGET_INFO_SESSION_START_TIME.systemClockNs``, else the first
  event); ``TARGET_INFO_SESSION_START_TIME.utcEpochNs`` gives that start as a wall-clock time
  (``meta.extra["t0_wallclock"]``, ISO 8601 UTC).
- Steps: NVTX ranges (``NVTX_EVENTS``, push/pop and start/end ranges, the name in ``text`` or via
  ``textId`` in ``StringIds``) whose whole name matches ``step_pattern`` (``ProfilerStep#N`` by default,
  as PyTorch's profiler names its steps). A range belongs to the process of its thread
  (``globalTid``); its steps are those of the device that process launched its kernels on, and the
  rank of a row is that CUDA ``deviceId``. Per step and device: the step table every trace format
  gives, defined once in :mod:`mfu_toolkit.io.gpu_time` (compute, communication, overlap, exposed
  communication, busy, idle, data wait), and ``tables["step_kernels"]`` per step and category in the
  Kineto ``kernels`` layout; ``meta.extra["steps_from"]`` names the ranges. Without step ranges there
  are no step rows: steps are never invented, and a note says so.
- Data wait: the NVTX ranges of PyTorch's DataLoader (``enumerate(DataLoader)#...``, which
  ``torch.autograd.profiler.emit_nvtx`` turns into NVTX ranges) of the process whose steps a device
  takes; ``data_wait_s`` is their time inside each step, NaN (unknown) for a process without them
  (``meta.extra["data_wait_from"]``).
- ``tables["kernels"]``: per device, ``count`` and ``comm_count`` kernels, ``busy_s`` (the union of
  kernel intervals), ``compute_s``, ``comm_s``, ``overlap_s``, ``exposed_comm_s``, ``memory_count``,
  ``gpu_busy_s`` and ``gpu_idle_s`` (kernels and memory operations, between the device's first and
  last activity, ``first_s``/``last_s``), ``sum_s`` (kernel durations summed). ``tables["kernel_names"]``:
  per kernel name (resolved through ``StringIds``), category, count and summed seconds.

Facts: ``n_ranks`` and ``n_accelerators``: the devices that carry kernels in the capture (not the
GPUs listed); ``accelerator``: the one GPU name in ``TARGET_INFO_GPU`` (``name``) or
``TARGET_INFO_CUDA_DEVICE`` (where a ``name`` column exists). Without those tables the accelerator is
unknown, with a note naming what was looked at; an environment variable the job set (a peak FLOP/s)
names no device.

Reading: the file is opened read-only and immutable (``file:…?mode=ro&immutable=1``), so nothing is
written beside it (no journal, no WAL). Rows are streamed (``fetchmany``) into numpy arrays, within the
load's row budget (:func:`mfu_toolkit.io.rules.take_rows`); the interval arithmetic is numpy, linear
after one sort. A ``parquetdir`` export (``nsys export --type parquetdir``) is read as a folder of one
``<TABLE>.parquet`` per table with the SQLite export's table and column names, the layout the tools
that read these exports rely on (NVIDIA's own description of it was not found); it is read the same
way, in batches with pyarrow, and tested on folders written from SQLite exports' tables. A
``.nsys-rep`` report itself is not readable here: the error names the export command.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...run import InputRequest, LoadError
from .. import gpu_time, rules
from ..base import Parsed, loader_for
from ..reading import Reader

NAME = "nsys"

DEFAULT_STEP_PATTERN = r"ProfilerStep#(\d+)"
_KERNEL = "CUPTI_ACTIVITY_KIND_KERNEL"
_MEMORY = ("CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET")
_NVTX = "NVTX_EVENTS"
_STRINGS = "StringIds"
_SESSION = "TARGET_INFO_SESSION_START_TIME"
_DETAILS = "ANALYSIS_DETAILS"
_EXPORT = "META_DATA_EXPORT"
_GPU_TABLES = ("TARGET_INFO_GPU", "TARGET_INFO_CUDA_DEVICE")
_NAME_COLUMNS = ("shortName", "demangledName", "mangledName")  # the first present names a kernel
# NVTX range event types (ENUM_NSYS_EVENT_TYPE: 59 NvtxPushPopRange, 60 NvtxStartEndRange)
_RANGE_TYPES = {"NvtxPushPopRange": 59, "NvtxStartEndRange": 60}
_SQLITE_MAGIC = b"SQLite format 3\x00"
_MARKS = (b"CUPTI_ACTIVITY_KIND_", b"NVTX_EVENTS", b"TARGET_INFO_SESSION_START_TIME", b"StringIds")
_REPORT_SUFFIXES = (".nsys-rep", ".qdrep")
_LITERAL = re.compile(r"[A-Za-z0-9_#:/ =,.-]*")  # characters a pattern's literal prefix may hold unescaped
_SMALL_ROWS = 10_000  # rows read of the small tables (target info, export metadata)
_IN_CHUNK = 500  # ids per StringIds lookup (below SQLite's parameter limit)


@dataclass(frozen=True)
class Options:
    """What the Nsight Systems format accepts besides the RunMeta keywords.

    ``step_pattern``: a regular expression that the whole name of an NVTX range must match for the
    range to be a step (default ``ProfilerStep#(\\d+)``); its first group, when it has one, is the step
    number, else the ranges of each process are numbered 0, 1, ... in time order. ``batch_rows``:
    rows fetched at once from a table (memory per batch; the result does not depend on it).
    """

    step_pattern: str | None = None
    batch_rows: int = 65_536

    def __post_init__(self) -> None:
        if self.step_pattern is not None:
            if not isinstance(self.step_pattern, str) or not self.step_pattern:
                raise ValueError(f"step_pattern must be a regular expression (text) or None; got {self.step_pattern!r}")
            try:
                re.compile(self.step_pattern)
            except re.error as exc:
                raise ValueError(f"step_pattern is not a regular expression ({exc}): {self.step_pattern!r}") from None
        rows = self.batch_rows
        if isinstance(rows, bool) or not isinstance(rows, int) or not 1 <= rows <= 10**7:
            raise ValueError(f"batch_rows must be an integer from 1 to 10,000,000; got {self.batch_rows!r}")


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is an Nsight Systems export (SQLite file or parquetdir folder)."""
    try:
        p = Path(path)
        if p.is_dir():
            has = {f.stem for f in p.glob("*.parquet")}
            return 0.95 if _KERNEL in has or {_STRINGS, _NVTX} <= has else 0.0
        if p.name.lower().endswith(_REPORT_SUFFIXES) and not head.startswith(_SQLITE_MAGIC):
            return 0.9  # a report, not an export: parse says how to export it
        if not head.startswith(_SQLITE_MAGIC):
            return 0.0
        if any(m in head for m in _MARKS):
            return 0.95
        with _connect(p) as conn:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        return 0.95 if _STRINGS in names and (names & {_KERNEL, _NVTX, _SESSION}) else 0.0
    except Exception:
        return 0.0


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only, immutable connection: SQLite writes nothing beside the file (no journal, no WAL)."""
    uri = Path(path).resolve().as_uri() + "?mode=ro&immutable=1"
    return sqlite3.connect(uri, uri=True, check_same_thread=False)


# --- sources: the tables of a SQLite export or of a parquetdir, read the same way ------------------
class _Names:
    """Kernel names stored as text instead of StringIds ids: each text gets a negative id."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def id_of(self, text: str) -> int:
        return self.ids.setdefault(text, -1 - len(self.ids))

    def texts(self) -> dict[int, str]:
        return {v: k for k, v in self.ids.items()}


class _Sqlite:
    """A SQLite export: tables from ``sqlite_master``, columns from ``PRAGMA table_info``."""

    kind = "sqlite"

    def __init__(self, path: Path, batch: int) -> None:
        self.conn = _connect(path)
        self.batch = batch
        self.inline = _Names()
        names = [r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")]
        self.tables = {n: tuple(r[1] for r in self.conn.execute(f"PRAGMA table_info({_q(n)})")) for n in names}

    def close(self) -> None:
        self.conn.close()

    def scan(self, table: str, spec: Sequence[tuple[str, str]], origin: int) -> Iterator[np.ndarray]:
        """Rows of ``table`` as float arrays (one column per ``(kind, column)`` of ``spec``), in batches."""
        cur = self.conn.execute(f"SELECT {', '.join(_sql(k, c, origin) for k, c in spec)} FROM {_q(table)}")
        while rows := cur.fetchmany(self.batch):
            yield _numeric(rows, len(spec), self.inline)

    def small(self, table: str, cols: Sequence[str]) -> list[tuple]:
        return self.conn.execute(f"SELECT {', '.join(map(_q, cols))} FROM {_q(table)} LIMIT {_SMALL_ROWS}").fetchall()

    def least(self, table: str, col: str) -> Any:
        return self.conn.execute(f"SELECT min({_q(col)}) FROM {_q(table)}").fetchone()[0]

    def strings(self, ids: Sequence[int]) -> dict[int, str]:
        out: dict[int, str] = {}
        for i in range(0, len(ids), _IN_CHUNK):
            part = [int(x) for x in ids[i:i + _IN_CHUNK]]
            sql = f"SELECT id, value FROM {_q(_STRINGS)} WHERE id IN ({', '.join('?' * len(part))})"
            out.update((int(k), str(v)) for k, v in self.conn.execute(sql, part) if k is not None)
        return out

    def ranges(self, origin: int, prefix: str, types: Sequence[int]) -> Iterator[tuple[Any, Any, Any, Any]]:
        """NVTX ranges whose name starts with ``prefix``: (start, end, process, name), times shifted."""
        cols = self.tables[_NVTX]
        text = [f"n.{_q('text')}"] if "text" in cols else []
        join = ""
        if "textId" in cols and _STRINGS in self.tables:
            text.append(f"s.{_q('value')}")
            join = f" LEFT JOIN {_q(_STRINGS)} s ON s.id = n.{_q('textId')}"
        name = f"COALESCE({', '.join(text)})" if len(text) > 1 else text[0]
        proc = f"(n.{_q('globalTid')} >> 24)" if "globalTid" in cols else "-1"
        where = [f"n.{_q('end')} IS NOT NULL"]
        if "eventType" in cols and types:
            where.append(f"n.{_q('eventType')} IN ({', '.join(str(int(t)) for t in types)})")
        params: list[Any] = []
        if prefix:
            where.append(f"substr({name}, 1, {len(prefix)}) = ?")
            params.append(prefix)
        cur = self.conn.execute(
            f"SELECT n.{_q('start')} - {int(origin)}, n.{_q('end')} - {int(origin)}, {proc}, {name} "
            f"FROM {_q(_NVTX)} n{join} WHERE {' AND '.join(where)}", params)
        while rows := cur.fetchmany(self.batch):
            yield from rows


def _q(name: str) -> str:
    """An SQL identifier, quoted."""
    return '"' + name.replace('"', '""') + '"'


def _sql(kind: str, col: str, origin: int) -> str:
    if kind == "time":
        return f"{_q(col)} - {int(origin)}"
    if kind == "proc":  # the process part of a serialized GlobalId (the exporter's "Serialized ... identifiers")
        return f"({_q(col)} >> 24)"
    return _q(col)


def _numeric(rows: list[tuple], k: int, inline: _Names) -> np.ndarray:
    """Rows as a float array (NULL as NaN); a text value (a name stored inline) gets its negative id."""
    try:
        return np.array(rows, dtype=np.float64).reshape(len(rows), k)
    except (TypeError, ValueError):
        out = np.full((len(rows), k), np.nan)
        for i, row in enumerate(rows):
            for j, v in enumerate(row):
                if isinstance(v, str):
                    out[i, j] = inline.id_of(v)
                elif isinstance(v, (int, float)) and not isinstance(v, bool):
                    out[i, j] = float(v)
        return out


class _ParquetDir:
    """A ``parquetdir`` export: one ``<TABLE>.parquet`` per table, read in batches with pyarrow."""

    kind = "parquetdir"

    def __init__(self, path: Path, batch: int) -> None:
        import pyarrow.parquet as pq

        self.pq = pq
        self.path = path
        self.batch = batch
        self.inline = _Names()
        files = sorted(f for f in path.glob("*.parquet") if f.is_file())
        self.tables = {f.stem: tuple(pq.read_schema(f).names) for f in files}

    def close(self) -> None:
        pass

    def _batches(self, table: str, cols: Sequence[str], size: int | None = None) -> Iterator[Any]:
        pf = self.pq.ParquetFile(self.path / f"{table}.parquet")
        yield from pf.iter_batches(batch_size=size or self.batch, columns=list(cols))

    def scan(self, table: str, spec: Sequence[tuple[str, str]], origin: int) -> Iterator[np.ndarray]:
        for b in self._batches(table, [c for _, c in spec]):
            out = np.empty((b.num_rows, len(spec)))
            for j, (kind, _) in enumerate(spec):
                out[:, j] = self._column(b.column(j), kind, origin)
            yield out

    def _column(self, arr: Any, kind: str, origin: int) -> np.ndarray:
        import pyarrow as pa
        import pyarrow.compute as pc

        if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
            return np.array([np.nan if v is None else self.inline.id_of(v) for v in arr.to_pylist()])
        if pa.types.is_integer(arr.type):
            arr = arr.cast(pa.int64())
            if kind == "time":
                arr = pc.subtract(arr, pa.scalar(int(origin), pa.int64()))
            elif kind == "proc":
                arr = pc.shift_right(arr, 24)
        out = arr.cast(pa.float64()).to_numpy(zero_copy_only=False)
        return out - float(origin) if kind == "time" and not pa.types.is_integer(arr.type) else out

    def small(self, table: str, cols: Sequence[str]) -> list[tuple]:
        for b in self._batches(table, cols, _SMALL_ROWS):
            return list(zip(*(b.column(j).to_pylist() for j in range(len(cols))), strict=True))
        return []

    def least(self, table: str, col: str) -> Any:
        import pyarrow.compute as pc

        values = [pc.min(b.column(0)).as_py() for b in self._batches(table, [col])]
        values = [v for v in values if v is not None]
        return min(values) if values else None

    def strings(self, ids: Sequence[int]) -> dict[int, str]:
        import pyarrow as pa
        import pyarrow.compute as pc

        want = pa.array([int(x) for x in ids], pa.int64())
        out: dict[int, str] = {}
        for b in self._batches(_STRINGS, ["id", "value"]):
            keep = b.filter(pc.is_in(b.column(0).cast(pa.int64()), value_set=want))
            out.update(zip(keep.column(0).to_pylist(), map(str, keep.column(1).to_pylist()), strict=True))
        return out

    def ranges(self, origin: int, prefix: str, types: Sequence[int]) -> Iterator[tuple[Any, Any, Any, Any]]:
        """NVTX ranges whose name starts with ``prefix``, as :meth:`_Sqlite.ranges`."""
        import pyarrow as pa
        import pyarrow.compute as pc

        cols = self.tables[_NVTX]
        ids = self._prefixed_strings(prefix) if "textId" in cols and _STRINGS in self.tables else {}
        want = [c for c in ("start", "end", "globalTid", "text", "textId", "eventType") if c in cols]
        for b in self._batches(_NVTX, want):
            col = dict(zip(want, b.columns, strict=True))
            keep = pc.is_valid(col["end"])
            if "eventType" in col and types:
                keep = pc.and_(keep, pc.is_in(col["eventType"].cast(pa.int64()), value_set=pa.array(types, pa.int64())))
            has_text = "text" in col and not pa.types.is_null(col["text"].type)
            named = pc.starts_with(col["text"], prefix) if has_text else None
            if "textId" in col:
                by_id = pc.is_in(col["textId"].cast(pa.int64()), value_set=pa.array(list(ids), pa.int64()))
                named = by_id if named is None else pc.or_kleene(named, by_id)
            keep = pc.and_(keep, pc.fill_null(named, False)) if named is not None else keep
            rows = b.filter(pc.fill_null(keep, False)).to_pylist()
            for r in rows:
                text = r.get("text") if r.get("text") is not None else ids.get(r.get("textId"))
                tid = r.get("globalTid")
                yield (r["start"] - origin, r["end"] - origin, -1 if tid is None else int(tid) >> 24, text)

    def _prefixed_strings(self, prefix: str) -> dict[int, str]:
        import pyarrow.compute as pc

        out: dict[int, str] = {}
        for b in self._batches(_STRINGS, ["id", "value"]):
            keep = b.filter(pc.fill_null(pc.starts_with(b.column(1), prefix), False))
            out.update(zip(keep.column(0).to_pylist(), keep.column(1).to_pylist(), strict=True))
        return out


# --- reading the device activity -----------------------------------------------------------------
@dataclass
class _Activity:
    """Device intervals (ns after the origin): kernels with device, name id, process; memory operations."""

    ks: np.ndarray
    ke: np.ndarray
    dev: np.ndarray
    name: np.ndarray
    proc: np.ndarray
    comm: np.ndarray
    ms: np.ndarray = field(default_factory=lambda: np.empty(0))
    me: np.ndarray = field(default_factory=lambda: np.empty(0))
    mdev: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.int64))
    names: dict[int, str] = field(default_factory=dict)

    @property
    def devices(self) -> list[int]:
        return sorted({int(d) for d in np.unique(self.dev)})

    def intervals(self, device: int) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per category of :data:`gpu_time.CATEGORIES`, the starts and ends on ``device``."""
        on = self.dev == device
        mem = self.mdev == device
        return {"compute": (self.ks[on & ~self.comm], self.ke[on & ~self.comm]),
                "comm": (self.ks[on & self.comm], self.ke[on & self.comm]), "memory": (self.ms[mem], self.me[mem])}


def _bad_many(reader: Reader, reason: str, n: int, field: str, detail: str | None = None) -> None:
    """``n`` records skipped for one reason (strict raises)."""
    if n > 0:
        reader.bad(reason, field=field, detail=detail, count=n)


def _valid(arr: np.ndarray, reader: Reader, table: str) -> np.ndarray:
    """The rows of ``arr`` (start, end, deviceId, ...) with finite times, a device and ``end >= start``."""
    times = np.isfinite(arr[:, 0]) & np.isfinite(arr[:, 1])
    _bad_many(reader, rules.NON_FINITE_TIME, int((~times).sum()), f"{table}.start", "start/end")
    dev = times & np.isfinite(arr[:, 2])
    _bad_many(reader, rules.MISSING_FIELD, int((times & ~dev).sum()), f"{table}.deviceId", "deviceId")
    ok = dev & (arr[:, 1] >= arr[:, 0])
    _bad_many(reader, rules.NEGATIVE_DURATION, int((dev & ~ok).sum()), f"{table}.end")
    return arr[ok]


def _collect(src: Any, reader: Reader, table: str, spec: Sequence[tuple[str, str]], origin: int) -> np.ndarray:
    """All valid rows of ``table`` (streamed batch by batch, within the load's row budget)."""
    parts: list[np.ndarray] = []
    n_read = 0
    for arr in src.scan(table, spec, origin):
        if not rules.take_rows(len(arr)):
            reader.bad(rules.ROW_BUDGET_SPENT, field=table, detail=f"{table}: rows after the first {n_read:,} not read")
            reader.note(f"{table}: the load's row budget was spent after {n_read:,} rows; the rest of the table "
                        "was not read, so device totals are a lower bound")
            break
        n_read += len(arr)
        parts.append(_valid(arr, reader, table))
    reader.report.lines_read += n_read
    return np.concatenate(parts) if parts else np.empty((0, len(spec)))


def _kernel_spec(src: Any, reader: Reader) -> list[tuple[str, str]] | None:
    """What to read of the kernel table (the columns that are there), or None with a note."""
    cols = src.tables.get(_KERNEL)
    if cols is None:
        reader.note(f"no {_KERNEL} table: the capture traced no CUDA kernels (nsys profile --trace=cuda); "
                    "device time is unknown")
        return None
    missing = [c for c in ("start", "end", "deviceId") if c not in cols]
    if missing:
        reader.note(f"{_KERNEL} has no {', '.join(missing)} column: kernels cannot be placed; device time is unknown")
        return None
    spec = [("time", "start"), ("time", "end"), ("num", "deviceId")]
    name = next((c for c in _NAME_COLUMNS if c in cols), None)
    if name is None:
        reader.note(f"{_KERNEL} has no kernel name column ({', '.join(_NAME_COLUMNS)}): communication kernels "
                    "cannot be told apart, every kernel counts as compute")
    if name:
        spec.append(("name", name))
    if "globalPid" in cols:
        spec.append(("proc", "globalPid"))
    else:
        reader.note(f"{_KERNEL} has no globalPid column: kernels cannot be tied to the process that launched them")
    return spec


def _read_activity(src: Any, reader: Reader, origin: int) -> _Activity | None:
    """Kernels (named, split into compute and communication) and memory operations of every device."""
    spec = _kernel_spec(src, reader)
    if spec is None:
        return None
    arr = _collect(src, reader, _KERNEL, spec, origin)
    kinds = [k for k, _ in spec]
    named = "name" in kinds
    name = np.nan_to_num(arr[:, kinds.index("name")], nan=-(2**62)).astype(np.int64) if named else \
        np.zeros(len(arr), dtype=np.int64)
    proc = arr[:, kinds.index("proc")] if "proc" in kinds else np.full(len(arr), -1.0)
    act = _Activity(arr[:, 0], arr[:, 1], arr[:, 2].astype(np.int64), name,
                    np.nan_to_num(proc, nan=-1.0).astype(np.int64), np.zeros(len(arr), dtype=bool))
    if named:
        act.names = _kernel_names(src, reader, np.unique(name))
        comm_ids = [i for i, text in act.names.items() if gpu_time.is_comm_kernel(text)]
        act.comm = np.isin(name, np.array(comm_ids, dtype=np.int64))
    mem = [t for t in _MEMORY if t in src.tables and {"start", "end", "deviceId"} <= set(src.tables[t])]
    if mem:
        parts = [_collect(src, reader, t, [("time", "start"), ("time", "end"), ("num", "deviceId")], origin)
                 for t in mem]
        m = np.concatenate(parts)
        act.ms, act.me, act.mdev = m[:, 0], m[:, 1], m[:, 2].astype(np.int64)
    else:
        reader.note(f"no memory copy or set table ({', '.join(_MEMORY)}) with start, end and deviceId: device busy "
                    "time counts kernels only")
    return act


def _kernel_names(src: Any, reader: Reader, ids: np.ndarray) -> dict[int, str]:
    """The names of the kernels' name ids: StringIds values (and names stored as text, negative ids)."""
    wanted = [int(i) for i in ids if i >= 0]
    names: dict[int, str] = {}
    if wanted and _STRINGS in src.tables and {"id", "value"} <= set(src.tables[_STRINGS]):
        names = src.strings(wanted)
    elif wanted:
        reader.note(f"no {_STRINGS} table (id, value): kernel names are unknown, every kernel counts as compute")
    missing = [i for i in wanted if i not in names]
    if missing and len(missing) < len(wanted):
        reader.note(f"{len(missing)} kernel name id(s) are not in {_STRINGS} (e.g. {missing[0]}): those kernels count "
                    "as compute")
    names.update(src.inline.texts())
    return names


# --- steps from NVTX ranges ------------------------------------------------------------------------
def _literal_prefix(pattern: re.Pattern[str]) -> str:
    """The text every whole match of ``pattern`` starts with ('' when that cannot be told simply)."""
    text = pattern.pattern
    if pattern.flags & (re.IGNORECASE | re.VERBOSE) or "|" in text:
        return ""
    text = text[1:] if text.startswith("^") else text
    lit = _LITERAL.match(text).group(0)  # type: ignore[union-attr]
    if text[len(lit):len(lit) + 1] in ("*", "?", "{"):
        lit = lit[:-1]  # the last character is quantified: it may be absent
    return lit


def _range_types(src: Any) -> list[int]:
    """The NVTX event types of ranges: from ENUM_NSYS_EVENT_TYPE where the export has it."""
    enum = "ENUM_NSYS_EVENT_TYPE"
    if enum in src.tables and {"id", "name"} <= set(src.tables[enum]):
        found = [int(i) for i, n in src.small(enum, ("id", "name")) if n in _RANGE_TYPES and i is not None]
        if found:
            return sorted(found)
    return sorted(_RANGE_TYPES.values())


def _nvtx_usable(src: Any, reader: Reader) -> bool:
    cols = src.tables.get(_NVTX)
    if cols is None:
        reader.note(f"no {_NVTX} table: no NVTX ranges were captured (nsys profile --trace=nvtx)")
        return False
    missing = [c for c in ("start", "end") if c not in cols]
    if missing or not ({"text", "textId"} & set(cols)):
        what = ", ".join(missing) if missing else "text or textId"
        reader.note(f"{_NVTX} has no {what} column: its ranges cannot be read")
        return False
    if "globalTid" not in cols:
        reader.note(f"{_NVTX} has no globalTid column: step ranges cannot be tied to a process")
    return True


def _read_ranges(src: Any, reader: Reader, origin: int, pattern: re.Pattern[str]) -> dict[int, list[tuple]]:
    """The NVTX ranges whose whole name matches ``pattern``, per process: (number or None, start, end)."""
    by_proc: dict[int, list[tuple]] = {}
    n = 0
    for start, end, proc, text in src.ranges(origin, _literal_prefix(pattern), _range_types(src)):
        m = pattern.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            continue
        if not rules.take_rows(1):
            reader.bad(rules.ROW_BUDGET_SPENT, field=_NVTX,
                       detail=f"{_NVTX}: step ranges after the first {n:,} not read")
            break
        n += 1
        num = None
        if pattern.groups:
            num = rules.as_step(m.group(1)) if m.group(1) is not None else None
            if num is None:
                reader.bad(rules.BAD_STEP, field=f"{_NVTX}.text", example=text, detail="NVTX range name")
                continue
        s, e = (float(v) if isinstance(v, (int, float)) else np.nan for v in (start, end))
        if not (np.isfinite(s) and np.isfinite(e)):
            reader.bad(rules.NON_FINITE_TIME, field=f"{_NVTX}.start", example=text, detail="NVTX range")
            continue
        if e < s:
            reader.bad(rules.NEGATIVE_DURATION, field=f"{_NVTX}.end", example=text)
            continue
        by_proc.setdefault(int(proc) if proc is not None else -1, []).append((num, s, e))
    reader.report.lines_read += n
    return by_proc


def _steps_of(rows: list[tuple], proc: int, reader: Reader) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One process's step numbers, starts and ends in time order (a repeated number kept once)."""
    rows = sorted(rows, key=lambda r: r[1])
    if rows[0][0] is None:  # a pattern without a number group: the ranges in time order
        rows = [(i, s, e) for i, (_, s, e) in enumerate(rows)]
    seen: set[int] = set()
    kept = []
    for num, s, e in rows:
        if num in seen:
            reader.bad(rules.DUPLICATE, field=f"{_NVTX}.text", example=f"step {num}", detail="step range number")
            continue
        seen.add(num)
        kept.append((num, s, e))
    sn = np.array([r[0] for r in kept], dtype=np.int64)
    ss, se = (np.array([r[i] for r in kept], dtype=np.float64) for i in (1, 2))
    over = int((ss[1:] < se[:-1]).sum())
    if over:
        reader.note(f"process {proc}: {over} step range(s) overlap the previous one")
    return sn, ss, se


def _read_steps(src: Any, reader: Reader, origin: int, options: Options) -> dict[int, tuple]:
    """Per process (the GlobalId's process part), its steps from the NVTX ranges named as steps."""
    pattern = re.compile(options.step_pattern or DEFAULT_STEP_PATTERN)
    if not _nvtx_usable(src, reader):
        return {}
    by_proc = _read_ranges(src, reader, origin, pattern)
    if not pattern.groups and by_proc:
        reader.note(f"step_pattern {pattern.pattern!r} has no group for the step number: each process's ranges are "
                    "numbered 0, 1, ... in time order")
    return {p: _steps_of(rows, p, reader) for p, rows in sorted(by_proc.items())}


def _read_waits(src: Any, reader: Reader, origin: int) -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Per process, the starts and ends of its data-loader NVTX ranges (PyTorch's DataLoader under emit_nvtx,
    whose range names may go on with ``, op_id = N``); none where NVTX ranges cannot be read."""
    cols = set(src.tables.get(_NVTX, ()))
    if not ({"start", "end"} <= cols and {"text", "textId"} & cols):
        return {}
    pattern = re.compile(re.escape(gpu_time.DATA_LOADER_PREFIX) + ".*", re.DOTALL)
    return {p: (np.array([r[1] for r in rows]), np.array([r[2] for r in rows]))
            for p, rows in _read_ranges(src, reader, origin, pattern).items()}


def _assign(act: _Activity, steps: dict[int, tuple], reader: Reader) -> dict[int, int]:
    """Which process's steps cut each device's time: the process that launched its kernels."""
    out: dict[int, int] = {}
    if not steps:
        return out
    for d in act.devices:
        procs, counts = np.unique(act.proc[act.dev == d], return_counts=True)
        cand = [(int(c), int(p)) for p, c in zip(procs, counts, strict=True) if int(p) in steps]
        if cand:
            out[d] = max(cand)[1]
            if len(cand) > 1:
                reader.note(f"device {d}: kernels from {len(cand)} processes that each mark steps; the steps of "
                            f"process {max(cand)[1]} (most kernels) are used")
        elif len(steps) == 1 and (-1 in steps or set(procs.tolist()) == {-1}):
            out[d] = next(iter(steps))
            reader.note(f"device {d}: no process ids tie kernels to step ranges; the one process's steps are used")
        else:
            reader.note(f"device {d}: the process(es) that launched its kernels mark no step ranges; no step rows")
    return out


# --- tables ---------------------------------------------------------------------------------------------
_NS = 1e-9


def _step_frames(act: _Activity | None, by_dev: dict[int, int], steps: dict[int, tuple],
                 waits: dict[int, tuple[np.ndarray, np.ndarray]], reader: Reader) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The step rows (one per device and step) and the per-step kernel table in the Kineto layout: each device
    cut by the steps of its process (``by_dev``), with that process's data-loader ranges as its data wait."""
    parts = []
    for d, proc in sorted(by_dev.items()):
        sn, ss, se = steps[proc]
        cols, cats, outside = gpu_time.step_table(ss, se, act.intervals(d) if act is not None else {}, per_s=1e9,
                                                  waits=waits.get(proc))
        parts.append((d, sn, ss * _NS, se * _NS, cols, cats))
        if outside > 1e-6:
            reader.note(f"device {d}: {outside:.6f} s of device activity lies outside every step range (not counted)")
    return gpu_time.step_frames(parts)


def _kernels_table(act: _Activity) -> pd.DataFrame:
    """Per device: kernel counts, busy time (union of kernels), compute, communication, overlap, idle."""
    rows = []
    for d in act.devices:
        tot, first, last = gpu_time.whole_span(act.intervals(d), per_s=1e9)
        on = act.dev == d
        rows.append({
            "device": d, "count": int(on.sum()), "comm_count": int((on & act.comm).sum()), **tot,
            "memory_count": int((act.mdev == d).sum()), "first_s": first * _NS, "last_s": last * _NS,
            "sum_s": float((act.ke[on] - act.ks[on]).sum()) * _NS,
        })
    order = ["device", "count", "comm_count", "busy_s", "compute_s", "comm_s", "overlap_s", "exposed_comm_s",
             "memory_count", "gpu_busy_s", "gpu_idle_s", "first_s", "last_s", "sum_s"]
    return pd.DataFrame(rows, columns=order)


def _names_table(act: _Activity) -> pd.DataFrame:
    """Per kernel name: its category, how many ran and their summed seconds (longest first)."""
    ids, inv = np.unique(act.name, return_inverse=True)
    count = np.bincount(inv, minlength=len(ids))
    total = np.bincount(inv, weights=act.ke - act.ks, minlength=len(ids)) * _NS
    names = [act.names.get(int(i), f"<no name: id {int(i)}>" if i >= 0 else "<no name>") for i in ids]
    comm = [gpu_time.is_comm_kernel(n) and int(i) in act.names for n, i in zip(names, ids, strict=True)]
    df = pd.DataFrame({"name": names, "category": ["comm" if c else "compute" for c in comm],
                       "count": count.astype(np.int64), "sum_s": total})
    return df.sort_values(["sum_s", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)


# --- time origin, facts, metadata ------------------------------------------------------------------------
def _first_row(src: Any, table: str, cols: Sequence[str]) -> dict[str, Any]:
    """The first row of a small table, the columns that exist (empty when the table does not)."""
    have = [c for c in cols if c in src.tables.get(table, ())]
    rows = src.small(table, have) if have else []
    return dict(zip(have, rows[0], strict=True)) if rows else {}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _origin(src: Any, reader: Reader) -> tuple[int, dict[str, Any]]:
    """The capture's start on the events' clock (ns) and, where the export says, its wall-clock time."""
    start = _first_row(src, _DETAILS, ("startTime",)).get("startTime")
    session = _first_row(src, _SESSION, ("utcEpochNs", "systemClockNs"))
    clock, utc = session.get("systemClockNs"), session.get("utcEpochNs")
    if _is_int(start):
        origin, how = start, f"{_DETAILS}.startTime"
    elif _is_int(clock):
        origin, how = clock, f"{_SESSION}.systemClockNs"
    else:
        first = src.least(_KERNEL, "start") if "start" in src.tables.get(_KERNEL, ()) else None
        origin = int(first) if isinstance(first, (int, float)) and np.isfinite(first) else 0
        how = "the first kernel's start" if first is not None else "0 (no event time)"
        reader.note(f"no {_DETAILS}.startTime nor {_SESSION}.systemClockNs: times are seconds since {how}")
    extra: dict[str, Any] = {"origin_ns": int(origin), "origin_from": how}
    if _is_int(utc) and (_is_int(start) or _is_int(clock)):  # both mark the capture's start
        extra.update({"t0_epoch_ns": int(utc), "t0_wallclock": rules.wallclock(utc / 1e9)})
    elif _is_int(utc):
        extra["capture_start_wallclock"] = rules.wallclock(utc / 1e9)
        reader.note(f"the capture started at {extra['capture_start_wallclock']} ({_SESSION}.utcEpochNs), but no "
                    "start on the events' clock ties that to the times: the times' wall-clock origin is unknown")
    else:
        reader.note(f"no {_SESSION}.utcEpochNs: the capture's wall-clock start is unknown")
    if _is_int(start) and _is_int(clock) and start != clock:
        reader.note(f"{_DETAILS}.startTime ({start}) differs from {_SESSION}.systemClockNs ({clock}): times are "
                    "seconds since the former")
    return int(origin), extra


def _gpu_names(src: Any) -> tuple[list[str], str, list[str]]:
    """The GPU names the export lists, the table they came from, and what was looked at."""
    looked = []
    for table in _GPU_TABLES:
        cols = src.tables.get(table)
        if cols is None:
            looked.append(f"{table} (absent)")
        elif "name" not in cols:
            looked.append(f"{table} (no name column)")
        else:
            names = sorted({str(r[0]).strip() for r in src.small(table, ("name",)) if r[0] and str(r[0]).strip()})
            if names:
                return names, table, looked
            looked.append(f"{table} (no name in it)")
    return [], "", looked


def _facts(out: Parsed, src: Any, reader: Reader, act: _Activity | None) -> None:
    """n_ranks / n_accelerators (devices that carry kernels) and the accelerator (from the GPU tables)."""
    if act is not None and act.devices:
        devs = act.devices
        text = (f"{len(devs)} CUDA device(s) carry kernels in this capture (deviceId {', '.join(map(str, devs))}); "
                "GPUs the capture lists without kernels are not counted")
        out.fact("n_ranks", len(devs), f"{reader.name}:{_KERNEL}", text)
        out.fact("n_accelerators", len(devs), f"{reader.name}:{_KERNEL}", text)
    names, table, looked = _gpu_names(src)
    if len(names) == 1:
        out.fact("accelerator", names[0], f"{reader.name}:{table}", f'{table}.name "{names[0]}"')
    elif names:
        reader.note(f"{table} names {len(names)} kinds of GPU ({', '.join(names)}): no accelerator stated")
    else:
        reader.note(InputRequest(f"GPU unknown: the export names no GPU (looked at {', '.join(looked)}); an "
                                 "environment variable of the job (a peak FLOP/s) names no device", ("accelerator",),
                                 "pass accelerator= to state it"))


def _export_meta(src: Any) -> dict[str, Any]:
    """What META_DATA_EXPORT says of the export (version, schema, a time window it was cut to)."""
    if not {"name", "value"} <= set(src.tables.get(_EXPORT, ())):
        return {}
    meta = {str(n): v for n, v in src.small(_EXPORT, ("name", "value"))}
    keys = {"EXPORT_PRODUCT_VERSION": "nsys_version", "EXPORT_SCHEMA_VERSION": "schema_version",
            "EXPORT_PARAM_TIME_NORMALIZE": "time_normalized", "DERIVED_WINDOW_NS": "derived_window_ns"}
    return {v: str(meta[k]) for k, v in keys.items() if meta.get(k) is not None}


# --- parse --------------------------------------------------------------------------------------------------
def _open(reader: Reader, options: Options) -> Any:
    p = reader.path
    if p.is_dir():
        return _ParquetDir(p, options.batch_rows)
    if p.name.lower().endswith(_REPORT_SUFFIXES):
        reader.fail(f"a Nsight Systems report ({p.suffix}) is not an export this loader reads; export it first: "
                    f"nsys export --type sqlite -o {p.stem}.sqlite {p.name}")
    return _Sqlite(p, options.batch_rows)


def parse(reader: Reader, options: Options) -> Parsed:
    """Read an Nsight Systems SQLite export (a file) or parquetdir export (a folder)."""
    import pyarrow as pa

    src = None
    try:
        src = _open(reader, options)
        return _parse(src, reader, options)
    except sqlite3.Error as exc:
        raise LoadError(f"not a readable SQLite export ({type(exc).__name__}: {exc})", path=reader.name) from None
    except (pa.ArrowException, OSError) as exc:
        raise LoadError(f"not a readable parquetdir export ({type(exc).__name__}: {exc})", path=reader.name) from None
    finally:
        if src is not None:
            src.close()


def _parse(src: Any, reader: Reader, options: Options) -> Parsed:
    if not src.tables:
        reader.fail("no tables: not an Nsight Systems export")
    origin, extra = _origin(src, reader)
    act = _read_activity(src, reader, origin)
    steps = _read_steps(src, reader, origin, options)
    pattern = options.step_pattern or DEFAULT_STEP_PATTERN
    if act is None and not steps:
        reader.fail(f"neither kernels ({_KERNEL}) nor step ranges ({_NVTX} matching {pattern!r}): nothing to read")
    if act is not None:
        by_dev = _assign(act, steps, reader)
    else:  # step ranges without kernels: CPU-side spans, device time unknown
        by_dev = {(-1 if len(steps) == 1 else i): p for i, p in enumerate(steps)}
    waits = _read_waits(src, reader, origin) if by_dev else {}
    out = Parsed(timing="exact", time_unit="ns")
    out.steps, step_kernels = _step_frames(act, by_dev, steps, waits, reader)
    extra["data_wait_from"] = (f"NVTX ranges named {gpu_time.DATA_LOADER_PREFIX}... ({_NVTX})"
                               if any(by_dev[d] in waits for d in by_dev) else None)
    if act is not None:
        out.tables["kernels"] = _kernels_table(act)
        out.tables["kernel_names"] = _names_table(act)
    if len(step_kernels):
        out.tables["step_kernels"] = step_kernels
        extra["steps_from"] = f"NVTX ranges named {pattern!r} ({_NVTX})"
    else:
        extra["steps_from"] = None
        why = ("no NVTX step range is tied to a device's kernels" if steps else
               f"no NVTX range is named as a step (pattern {pattern})")
        reader.note(InputRequest(f"{why}: steps cannot be cut from this capture, so the Run has no step rows (none "
                                 "are invented); per-device totals are in tables['kernels']", ("step_pattern",),
                                 "pass step_pattern= to name the ranges that mark steps"))
    _facts(out, src, reader, act)
    meta = _export_meta(src)
    if "derived_window_ns" in meta:
        reader.note(f"the export was cut to a time window ({meta['derived_window_ns']} ns, META_DATA_EXPORT): "
                    "kernels straddling its edges may be missing; do not extrapolate from the edges")
    out.meta["name"] = reader.path.stem if reader.path.is_file() else reader.path.name
    out.extra.update({"export": src.kind, **extra, **meta, "devices": act.devices if act is not None else [],
                      "tables": sorted(src.tables)})
    return out


load = loader_for(NAME)
