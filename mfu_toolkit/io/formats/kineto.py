"""PyTorch profiler (Kineto) Chrome traces: per-rank step spans, GPU busy time, compute vs NCCL.

One trace file per rank (``.json`` or ``.json.gz``; ``ts``/``dur`` in µs). What is read:

- Steps: the CPU-side ``ProfilerStep#N`` annotations (``user_annotation``/``cpu_op``; the GPU
  copies in ``gpu_user_annotation`` are ignored). One row per (rank, step), ``timing = "exact"``.
- GPU activity: ``kernel`` events, split by name into communication (NCCL/RCCL/HCCL kernels:
  :func:`mfu_toolkit.io.gpu_time.is_comm_kernel`) and compute (every other kernel), plus
  ``gpu_memcpy``/``gpu_memset`` (memory). MTIA's on-device events (``mtia_ccp_events``) are kernels
  too: ``dma*`` ones memory, ``hccl::*`` communication. Each is clipped to the step span it overlaps
  (a kernel crossing a boundary is split between the two steps).
- Data wait: the ``user_annotation`` ranges PyTorch's DataLoader records around each batch it hands
  out (``enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__`` and the like).
- Per step: the step table every trace format gives, defined once in :mod:`mfu_toolkit.io.gpu_time`:
  ``compute_s``, ``comm_s``, ``overlap_s``, ``exposed_comm_s``, ``gpu_busy_s``, ``gpu_idle_s`` and
  ``data_wait_s`` (NaN for a rank whose trace holds no DataLoader range). A trace with no device event
  at all (a CPU-only rank, or a profiler that recorded no device) leaves the device columns missing,
  with a note: unknown, not idle. ``meta.extra["steps_from"]`` and ``["data_wait_from"]`` say what
  cut the steps and what gave the data wait.
- ``tables["kernels"]``: per rank, step and category (compute, comm, memory): ``count`` (kernels
  starting in the step), ``sum_s`` (clipped durations summed), ``union_s``.
- Rank and world size from ``distributedInfo``; without it (or with a value that is no rank) the
  rank is read from the file name (``rank-3``, ``rank3``, ``rank_3``) or, for a single file, left
  at -1. A rank or world size that is not a whole number in range (a rank of 3e9, a world size
  of 0) is counted under ``value out of range`` with its file, line and field.

Facts (each with its file and line): ``accelerator`` is the ``deviceProperties[].name`` as
printed (``NVIDIA A100-PG509-200``; ROCm names an MI250 GCD ``AMD Radeon Graphics``; an MTIA
device, whose entry holds the MTIA runtime's ``runtimeMajorVersion``/``maxGridHeight`` instead
of CUDA's ``computeMajor``, its name such as ``ARTEMIS``, the fact's text saying it is an MTIA
device), when the traces name one kind of device. A ``deviceProperties`` that is empty (Kineto
writes ``[]`` when the device query fails or there is no GPU) or absent names none: the
accelerator stays unknown and a note says so (naming an ``mtia:hccl`` process-group backend
when there is one), never a guess. A file whose head is Kineto's header (``{"schemaVersion":
N, "deviceProperties": ...``) is a trace even when its metadata pushes ``traceEvents`` past the
sniffed head; ``n_ranks`` is ``distributedInfo.world_size`` when the traces
agree on it, and ``n_accelerators`` the same number: a PyTorch world size counts framework
devices, one per GPU but two per MI250X/MI250 package (one per GCD), as the fact's text says.

Speed and memory: a step table needs only the kernels, memory copies, ``ProfilerStep#N`` spans and
user annotations (the DataLoader's among them), a tenth of a typical trace's events. So a trace is
first read selectively, as a stream (by :mod:`mfu_toolkit.io.tracejson`, given the selection below):
a thread inflates the file chunk by chunk (zlib releases the GIL) into one buffer, preallocated
to the size gzip's trailer states when that is within the reading limits; the reading thread
meanwhile checks each chunk with numpy word compares (NUL bytes, UTF-8, brace balance, each
top-level key at most once, the ``"ph"`` count, and where a ``"cat"`` may hold a GPU category),
matches those places and the ``ProfilerStep#`` marks, reads the events written in the
profiler's own layout straight from the bytes, and decodes the others one by one from a small
window (the same ``object_hook`` as below turns each into a 4-tuple). A match is taken only once
the bytes after it cannot change it, so events cut by chunk boundaries read the same. The CPU
ops, runtime calls and flow events that make up the rest are never decoded, and the file is
never held as text: the peak is about 1.2x the inflated size. The selective read applies only to
a complete, well-formed document (a JSON object, valid UTF-8 without NUL bytes, balanced
braces, one ``traceEvents`` key, every located event decoding to an event that contains its
match); anything else, and ``strict=True``, takes the full parse of the same buffer: the
standard library's decoder with that ``object_hook``, so the full event dicts never live
together. Damage inside events the loader does not use (a CPU op's broken value) is noticed
only by the full parse. Files are read through the shared bounded reader: a gzipped trace is
inflated as a stream within the reading limits, so a gzip bomb or a trailer that claims
gigabytes is a LoadError naming the file, never an allocation of that size. The interval
arithmetic is numpy (sorted unions and prefix sums), not per-event rows. A truncated (or too
deeply nested) file is read up to its last complete event. Times are seconds since the earliest
step start across the ranks.

Many ranks: each file is reduced on its own to a per-step table (``read_rank``), in a process
pool bounded by a memory budget, or as a Spark job (``engine="spark"``), and that table is
cached as Parquet in the user cache directory, or beside the trace with ``cache="beside"`` (see
:mod:`mfu_toolkit.io.kineto_ranks` for the cost rule and :mod:`mfu_toolkit.io.cache` for the cache); the job is
assembled from the tables. A file that cannot be read at all (a corrupt
or truncated gzip stream) is counted under ``rules.FILE_LEFT_OUT`` and named in a
note; the other ranks load, unless ``strict=True``. ``load_traces(paths)`` reads a list.

Clocks: each rank's trace is on its host's clock, and the ranks are aligned by those absolute
timestamps, never silently rewritten. The loader checks them: for every step that several ranks
share (same attempt and step number), a rank's deviation is its step start minus the median start
of that step over the ranks; its estimated clock offset is the median of its deviations. In
synchronous training every rank starts a step within about one step of the others (they wait for
each other in the collectives), so an absolute offset above ``max(1 s, 5 × the median step duration)``
means the hosts' clocks disagree (the 1 s floor keeps ordinary NTP skew and launch jitter of
millisecond steps below it). Such ranks are named with their offsets in a report note;
``meta.extra["clock_offsets_s"]`` lists them as ``{"rank": r, "offset_s": s}`` (empty when
none; a list, so a saved Run reads back equal). Per-rank step durations are unaffected;
cross-rank timing (stragglers, spans) is not to be trusted. Offsets are relative to the median
rank: with two ranks, either may be the one off. ``align_clocks=True`` subtracts each flagged
rank's offset from its times (then re-bases to the earliest start) and sets
``meta.extra["clocks_aligned"]``. ``strict=True`` without ``align_clocks`` raises ``LoadError``
naming the ranks and offsets, since the cross-rank analyses would be wrong.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...run import InputRequest, LoadError, LoadReport, Run
from .. import gpu_time, rules, tracejson
from .. import kineto_ranks as kr
from ..base import Parsed, loader_for
from ..cache import cache_dir
from ..reading import Limits, Reader, read_head
from ..values import number

NAME = "kineto"
NO_STEPS = "trace without ProfilerStep#N events"


@dataclass(frozen=True)
class Options:
    """What the Kineto format accepts besides the RunMeta keywords.

    ``pattern``: a glob that picks the trace files of one job in a folder (``"job_rank*.json"``);
    by default every ``.json`` / ``.json.gz`` file holding ``traceEvents`` is read.
    ``align_clocks``: subtract the estimated clock offset of each rank flagged as off (see the
    module docstring); by default timestamps are kept and an offset is only reported.
    ``files``: the trace files to read (relative to the loaded folder, or absolute) instead of
    the folder's listing. ``workers``: processes that parse files at once (default: one per
    CPU; 1 parses in this process). ``memory_budget``: bytes (or ``"8GB"``) of estimated parse
    cost allowed in flight (default: half the available memory; see
    :mod:`mfu_toolkit.io.kineto_ranks` for the cost rule). ``cache``: read and write each file's
    parsed tables as Parquet, keyed on the file's content: in the user cache directory (True, the
    default), beside the trace in ``.mfu_cache/`` (``"beside"``; the user directory where that folder is
    read-only), or not at all (False).
    ``engine="spark"`` parses the files as one Spark job (``spark=``: a session; else
    ``SPARK_REMOTE`` or a local one).
    """

    pattern: str | None = None
    align_clocks: bool = False
    files: tuple[str, ...] | None = None
    workers: int | None = None
    memory_budget: int | str | None = None
    cache: bool | str = True
    engine: str = "local"
    spark: Any = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.pattern is not None and (not isinstance(self.pattern, str) or not self.pattern.strip()
                                         or Path(self.pattern).is_absolute() or ".." in Path(self.pattern).parts):
            raise ValueError(f"pattern must be a glob inside the folder (e.g. 'job_rank*.json') or None; "
                             f"got {self.pattern!r}")
        if not isinstance(self.align_clocks, bool):
            raise ValueError(f"align_clocks must be True or False; got {self.align_clocks!r}")
        if self.files is not None:
            if isinstance(self.files, (str, Path)) or not all(isinstance(f, (str, Path)) for f in self.files):
                raise ValueError(f"files must be a list of trace paths; got {self.files!r}")
            object.__setattr__(self, "files", tuple(str(f) for f in self.files))
        if self.workers is not None and (isinstance(self.workers, bool) or not isinstance(self.workers, int)
                                         or self.workers < 1):
            raise ValueError(f"workers must be a positive integer or None (one per CPU); got {self.workers!r}")
        if self.memory_budget is not None:
            kr.parse_budget(self.memory_budget)
        if not (isinstance(self.cache, bool) or self.cache == "beside"):
            raise ValueError(f"cache must be True, False or 'beside'; got {self.cache!r}")
        if self.engine not in ("local", "spark"):
            raise ValueError(f"engine must be one of 'local', 'spark'; got {self.engine!r}")


_STEP, _COMPUTE, _COMM, _MEM, _WAIT, _OTHER = 0, 1, 2, 3, 4, 5
_CATEGORIES = gpu_time.CATEGORIES
_COMM_BYTES = tuple(w.encode() for w in gpu_time.COMM_WORDS)  # in a kernel's name, any case: communication
_WAIT_CAT = "user_annotation"  # the category of PyTorch's record_function ranges, the DataLoader's among them
_WAIT_MARK = gpu_time.DATA_LOADER_PREFIX.encode()
_STEP_CATS = {"user_annotation", "cpu_op", "operator", "python_function"}
# Device kernels: CUDA/ROCm ``kernel``; MTIA's on-device ``mtia_ccp_events`` (Kineto's MTIA_CCP_EVENTS,
# "MTIA ondevice CCP events", libkineto/include/ActivityType.h), whose ``dma*`` events are memory
# transfers and ``hccl::*`` collectives (as HTA groups them: hta/common/types.py).
_KERNEL_CATS = {"kernel", "mtia_ccp_events"}
_MTIA_CAT = "mtia_ccp_events"
_MTIA_MEM_PREFIX = "dma"
# Keys of an MTIA device in deviceProperties (the MTIA runtime's, written by its Kineto plugin; a
# CUDA/ROCm device has computeMajor, warpSize, numSms instead), as in HTA's MTIA test trace
# tests/data/mtia_inference_trace/mtia_inference_rank_0.json.gz: {"id": 17, "name": "ARTEMIS",
# "runtimeMajorVersion": 1, "runtimeMinorVersion": 30, "maxGridHeight": 8, "maxGridWidth": 8}.
_MTIA_PROP_KEYS = ("runtimeMajorVersion", "maxGridHeight", "maxGridWidth")
_TABLES_VERSION = 6  # bumps the rank caches when what a rank's table holds changes (6: skip keys are constants)
_MEM_CATS = {"gpu_memcpy", "gpu_memset", "memcpy", "memset"}
_RANK_NAME_RE = re.compile(r"rank[-_]?(\d{1,9})(?!\d)", re.IGNORECASE)
_MAX_RANK = 10_000_000  # ranks and world sizes above this are not a job's
_MAX_STEP_DIGITS = 15  # ProfilerStep numbers are kept exactly in float64 below 2**53
_CLOCK_MIN_S = 1.0  # a rank's clock offset above max(this, _CLOCK_STEPS × median step) is flagged
_CLOCK_STEPS = 5.0
_POOL_MIN_BYTES = 64 * 2**20  # below this many inflated bytes in all, files are parsed in this process
_WORLD_TEXT = ("a PyTorch world size counts framework devices: one per GPU, but two per "
               "MI250X/MI250 package (one rank per GCD)")


# The first key Kineto's ChromeTraceLogger writes (libkineto/src/output_json.cpp, handleTraceStart),
# then deviceProperties (an empty list on a rank that saw no GPU) or the metadata.
_KINETO_HEADER_RE = re.compile(
    rb'\{\s*"schemaVersion"\s*:\s*\d{1,6}\s*,\s*"'
    rb'(?:deviceProperties|distributedInfo|record_shapes|displayTimeUnit|baseTimeNanoseconds|trace_id)"')


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is a Kineto trace (or a folder of them), by content."""
    try:
        p = Path(path)
        if p.is_dir():
            for f in _trace_files(p)[:8]:
                if _sniff_head(read_head(f)) >= 0.6:
                    return 0.85
            return 0.0
        return _sniff_head(head)
    except Exception:
        return 0.0


def _sniff_head(head: bytes) -> float:
    h = head.lstrip()
    if h[:1] not in (b"{", b"["):
        return 0.0
    if _KINETO_HEADER_RE.match(h) and b'"traceEvents"' not in head:
        return 0.9  # Kineto's header; its traceEvents come after metadata longer than the head
    if b'"traceEvents"' in head:
        kineto_keys = (b'"schemaVersion"', b'"deviceProperties"', b'"distributedInfo"', b'"cpu_op"', b'"kernel"',
                       b"ProfilerStep#")
        return 0.95 if any(k in head for k in kineto_keys) else 0.6
    if h[:1] == b"[" and b'"ph"' in head and b'"ts"' in head:
        return 0.5
    return 0.0


def _trace_files(path: Path) -> list[Path]:
    return [p for p in sorted(path.iterdir())
            if p.is_file() and (p.name.endswith(".json") or p.name.endswith(".json.gz"))]


# --- events -------------------------------------------------------------------------------------
def _step_number(text: str) -> int | None:
    """N of ``ProfilerStep#N``: ASCII digits that float64 holds exactly, else None."""
    if not (0 < len(text) <= _MAX_STEP_DIGITS and text.isascii() and text.isdigit()):
        return None
    return int(text)


def _hook(d: dict[str, Any]) -> Any:
    """Compact each trace event as soon as it is decoded; other objects pass through."""
    ph = d.get("ph")
    if ph is None:
        return d
    if ph != "X":
        return None
    cat = d.get("cat")
    if not isinstance(cat, str):
        return None
    c = cat.lower()
    extra = 0
    if c in _KERNEL_CATS:
        name = d.get("name")
        if c == _MTIA_CAT and isinstance(name, str) and name.startswith(_MTIA_MEM_PREFIX):
            code = _MEM
        else:
            code = _COMM if isinstance(name, str) and gpu_time.is_comm_kernel(name) else _COMPUTE
    elif c in _MEM_CATS:
        code = _MEM
    elif c == _WAIT_CAT and isinstance(d.get("name"), str) and d["name"].startswith(gpu_time.DATA_LOADER_PREFIX):
        code = _WAIT
    elif c in _STEP_CATS:
        name = d.get("name")
        if not (isinstance(name, str) and name.startswith("ProfilerStep#")):
            return _other(d) if c == _WAIT_CAT else None
        n = _step_number(name[13:])
        if n is None:
            return tracejson.Bad("name", rules.SkipReason(rules.BAD_STEP, "ProfilerStep#N"))
        code, extra = _STEP, n
    else:
        return None
    ts, dur = number(d.get("ts")), number(d.get("dur"))  # finite; a number or a number written as text
    if ts is None:
        return tracejson.Bad("ts", rules.SkipReason(rules.NON_FINITE_TIME, "ts"))
    if dur is None:
        return tracejson.Bad("dur", rules.SkipReason(rules.NON_FINITE_TIME, "dur"))
    if dur < 0:
        return tracejson.Bad("dur", rules.NEGATIVE_DURATION)
    return (code, ts, dur, extra)


def _other(d: dict[str, Any]) -> tuple | None:
    """Another user annotation, located with the DataLoader's: kept as a row the rank's table drops (so that
    the selective read takes it from its bytes, not decoding it), when its times are sound; else dropped."""
    ts, dur = number(d.get("ts")), number(d.get("dur"))
    return (_OTHER, ts, dur, 0) if ts is not None and dur is not None and dur >= 0 else None


# --- the selective read -------------------------------------------------------------------------
FAST_PATH = True  # the selective read; tests switch it off to compare it with the full parse


def _quick(cat: bytes, name: bytes, ts: float, dur: float) -> tuple | None:
    """The compact tuple of a GPU event or user annotation read from its bytes (finite times, ``dur >= 0``), as
    :func:`_hook`; None for a step mark (decoded)."""
    low_cat = cat.lower()
    if low_cat == b"kernel" or low_cat == b"mtia_ccp_events":
        if low_cat != b"kernel" and name.startswith(b"dma"):  # _MTIA_MEM_PREFIX
            return (_MEM, ts, dur, 0)
        if not name.isascii():
            return (_COMM if gpu_time.is_comm_kernel(name.decode("utf-8")) else _COMPUTE, ts, dur, 0)
        low = name.lower()
        for word in _COMM_BYTES:
            if word in low:
                return (_COMM, ts, dur, 0)
        return (_COMPUTE, ts, dur, 0)
    if low_cat == b"user_annotation":  # _WAIT_CAT
        if name.startswith(b"ProfilerStep#"):
            return None
        return (_WAIT if name.startswith(_WAIT_MARK) else _OTHER, ts, dur, 0)
    return (_MEM, ts, dur, 0)


# What a rank's table needs of a trace: the GPU events and user annotations (located by category; those in
# the profiler's own layout read without decoding), the ProfilerStep#N spans (located by their mark), and the
# top-level facts with their lines.
_SELECTION = tracejson.Selection(
    hook=_hook, categories=("kernel", "mtia_ccp_events", "gpu_memcpy", "gpu_memset", "memcpy", "memset", _WAIT_CAT),
    mark=b"ProfilerStep#", quick=_quick, doc_keys=("distributedInfo", "deviceProperties", "baseTimeNanoseconds"),
    line_keys=("distributedInfo", "deviceProperties"), inner_lines=(("world_size", "distributedInfo"),))


def _scan(data: bytes, chunk: int = 1 << 16) -> tracejson.Events | None:
    """The selective read of a file's bytes fed in ``chunk``-byte pieces (for tests)."""
    return tracejson.scan_bytes(data, _SELECTION, chunk=chunk)


# --- one trace ----------------------------------------------------------------------------------
@dataclass
class _Trace:
    """One rank's compact events (arrays of code, ts, dur, step number) and what it states."""

    path: Path
    where: str  # the file's name in facts: ``<path>``
    code: np.ndarray
    ts: np.ndarray
    dur: np.ndarray
    num: np.ndarray
    rank: int | None = None
    world_size: int | None = None
    backend: str | None = None
    devices: list[str] = field(default_factory=list)
    base_ns: int | float | None = None
    lines: dict[str, int] = field(default_factory=dict)  # line of each top-level key found
    mtia: list[str] = field(default_factory=list)  # device names whose properties are an MTIA device's


def _read_trace(reader: Reader) -> _Trace:
    ev = tracejson.read_events(reader, _SELECTION, selective=FAST_PATH)
    reader.report.lines_read += ev.n_events
    arr = np.array(ev.kept, dtype=np.float64).reshape(-1, 4)
    del ev.kept[:]
    arr = arr[arr[:, 0] != _OTHER]
    tr = _Trace(reader.path, reader.name, arr[:, 0].astype(np.int8), arr[:, 1], arr[:, 2],
                arr[:, 3].astype(np.int64), lines=ev.lines)
    _doc_facts(tr, ev.doc, reader)
    return tr


def _in_range(reader: Reader, info: dict[str, Any], key: str, line: int | None, *, lowest: int) -> int | None:
    """``distributedInfo[key]`` as a whole number in ``[lowest, _MAX_RANK]``; else counted, None."""
    v = info.get(key)
    if v is None:
        return None
    n = rules.as_step(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if n is None or n < lowest or n > _MAX_RANK:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=line, field=f"distributedInfo.{key}", example=repr(v)[:80],
                   detail=f"distributedInfo.{key}")
        return None
    return n


def _doc_facts(tr: _Trace, doc: dict[str, Any], reader: Reader) -> None:
    """Rank, world size, backend, device names and base time from the trace's top level."""
    info = doc.get("distributedInfo") if isinstance(doc.get("distributedInfo"), dict) else {}
    at = tr.lines.get("world_size", tr.lines.get("distributedInfo"))
    tr.world_size = _in_range(reader, info, "world_size", at, lowest=1)
    tr.rank = _in_range(reader, info, "rank", tr.lines.get("distributedInfo"), lowest=0)
    if tr.rank is not None and tr.world_size is not None and tr.rank >= tr.world_size:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=tr.lines.get("distributedInfo"), field="distributedInfo.rank",
                   example=f"rank {tr.rank} of {tr.world_size}", detail="distributedInfo.rank is not below world_size")
        tr.rank = None
    backend = info.get("backend")
    tr.backend = backend[:80] if isinstance(backend, str) else None
    props = doc.get("deviceProperties")
    if isinstance(props, list):
        named = [p for p in props if isinstance(p, dict) and isinstance(p.get("name"), str)]
        tr.devices = sorted({p["name"][:200] for p in named})
        tr.mtia = sorted({p["name"][:200] for p in named
                          if any(k in p for k in _MTIA_PROP_KEYS) and "computeMajor" not in p})
    base = doc.get("baseTimeNanoseconds")
    ok = isinstance(base, (int, float)) and not isinstance(base, bool) and abs(base) < 2**63 and math.isfinite(base)
    tr.base_ns = base if ok else None


# --- steps ---------------------------------------------------------------------------------------
def _step_spans(tr: _Trace, rank: int, reader: Reader) -> tuple[np.ndarray, np.ndarray, np.ndarray, float] | None:
    """Step starts and ends (µs after the trace's first step) and numbers, duplicates counted."""
    is_step = tr.code == _STEP
    if not is_step.any():
        reader.bad(NO_STEPS, field="traceEvents")
        return None
    base = float(tr.ts[is_step].min())
    ss = tr.ts[is_step] - base
    se = ss + tr.dur[is_step]
    sn = tr.num[is_step]
    o = np.lexsort((ss, sn))
    ss, se, sn = ss[o], se[o], sn[o]
    dup = np.concatenate([[False], sn[1:] == sn[:-1]])
    for n in sn[dup]:
        reader.bad(rules.DUPLICATE, field=f"ProfilerStep#{n}", detail="ProfilerStep number")
    ss, se, sn = ss[~dup], se[~dup], sn[~dup]
    o = np.argsort(ss, kind="stable")
    ss, se, sn = ss[o], se[o], sn[o]
    overlap = np.concatenate([[False], ss[1:] < se[:-1]])
    if overlap.any():
        reader.note(f"rank {rank}: {int(overlap.sum())} ProfilerStep spans overlap the previous one")
    return ss, se, sn, base


def _rank_tables(tr: _Trace, rank: int,
                 reader: Reader) -> tuple[dict[str, np.ndarray], list[dict[str, np.ndarray]], float] | None:
    """Step rows (µs, relative to the trace's own first step) and kernel summaries for one rank: the step
    table of :func:`mfu_toolkit.io.gpu_time.step_table`."""
    spans = _step_spans(tr, rank, reader)
    if spans is None:
        return None
    ss, se, sn, base = spans
    iv: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for code, cat in ((_COMPUTE, "compute"), (_COMM, "comm"), (_MEM, "memory")):
        m = tr.code == code
        ks = tr.ts[m] - base
        iv[cat] = (ks, ks + tr.dur[m])
    w = tr.code == _WAIT
    waits = (tr.ts[w] - base, tr.ts[w] - base + tr.dur[w]) if w.any() else None  # none: the wait is unknown
    cols, kern, outside = gpu_time.step_table(ss, se, iv, per_s=1e6, waits=waits)
    if not any(len(v[0]) for v in iv.values()):  # no device event at all: the device's time is unknown, not idle
        reader.note(f"rank {rank}: the trace holds no device activity (kernels, memory copies): a CPU-only rank, "
                    "or a profiler that recorded no device; compute, communication and device busy/idle time are "
                    "unknown (left missing), not zero")
    if outside > 1e-6:  # below a µs it is rounding
        reader.note(f"rank {rank}: {outside:.6f} s of GPU activity lies outside every ProfilerStep span "
                    "(not counted)")
    return ({"step": sn, "_s": ss, "_e": se, **cols},
            [{"step": sn, "category": np.full(len(sn), cat), **kern[cat]} for cat in _CATEGORIES], base)


# --- the job: files, ranks, clocks ----------------------------------------------------------------
def _clock_offsets(steps: pd.DataFrame) -> tuple[pd.Series, float]:
    """Per rank: median over shared steps of (its start − the step's median start over ranks), s.

    Also the threshold above which an offset is implausible for synchronous training (see the
    module docstring). Ranks that share no step with another are absent.
    """
    g = steps.groupby(["attempt", "step"])["start_s"]
    shared = (g.transform("size") > 1).to_numpy()
    dev = (steps["start_s"] - g.transform("median"))[shared]
    offsets = dev.groupby(steps["rank"][shared]).median()
    limit = max(_CLOCK_MIN_S, _CLOCK_STEPS * float((steps["end_s"] - steps["start_s"]).median()))
    return offsets, limit


def _files(reader: Reader, options: Options) -> list[Path]:
    p = reader.path
    if options.files is not None:
        files = [Path(f) if Path(f).is_absolute() or not p.is_dir() else p / f for f in options.files]
        missing = [str(f) for f in files if not f.is_file()]
        if missing or not files:
            reader.fail(f"trace files not found: {', '.join(missing[:5])}" if missing else "files= lists no trace file",
                        field="files")
        return files
    if not p.is_dir():
        return [p]
    try:
        files = sorted(p.glob(options.pattern)) if options.pattern else _trace_files(p)
    except (ValueError, NotImplementedError, OSError) as exc:  # a glob the file system refuses
        reader.fail(f"cannot list the trace files ({exc})")
    files = [f for f in files if f.is_file()]
    kept = [f for f in files if _sniff_head(read_head(f)) >= 0.5]
    if not kept:
        reader.fail("no Kineto trace files (.json / .json.gz with traceEvents) here")
    for f in sorted(set(files) - set(kept)):
        reader.note(f"{f.name}: no Chrome trace in its first bytes; left out")
    return kept


def _ranks(traces: list[_Trace], reader: Reader) -> list[int]:
    """Each trace's rank: distributedInfo, else the file name, else -1 (one file) or file order."""
    ranks: list[int] = []
    for i, tr in enumerate(traces):
        m = _RANK_NAME_RE.search(tr.path.name)
        why = "no distributedInfo" if "distributedInfo" not in tr.lines else "no usable distributedInfo rank"
        if tr.rank is not None:
            ranks.append(tr.rank)
        elif m and int(m.group(1)) <= _MAX_RANK:
            ranks.append(int(m.group(1)))
            reader.note(f"{tr.path.name}: {why}; rank {int(m.group(1))} taken from the file name")
        elif len(traces) == 1:
            ranks.append(-1)
            reader.note(f"{tr.path.name}: {why}; rank unknown (-1)")
        else:
            ranks.append(i)
            reader.note(f"{tr.path.name}: {why} nor rank in the name; rank {i} = file order")
    if len(set(ranks)) != len(ranks):
        seen: set[int] = set()
        dups = sorted({r for r in ranks if r in seen or seen.add(r)})  # type: ignore[func-returns-value]
        reader.fail(
            f"several traces claim rank(s) {dups} ({', '.join(tr.path.name for tr in traces)}): "
            "are they from different jobs? Pass one job's files (pattern=..., or a folder of them)"
        )
    return ranks


def _step_frame(rank: int, c: dict[str, np.ndarray], off: float) -> pd.DataFrame:
    return pd.DataFrame({"attempt": 0, "step": c["step"], "rank": rank, "start_s": (c["_s"] + off) / 1e6,
                         "end_s": (c["_e"] + off) / 1e6, **{k: c[k] for k in gpu_time.STEP_COLUMNS}})


def _kernels_table(kparts: list[tuple[int, dict[str, np.ndarray]]]) -> pd.DataFrame:
    return pd.DataFrame({
        "rank": np.concatenate([np.full(len(k["step"]), r, dtype=np.int32) for r, k in kparts]),
        "step": np.concatenate([k["step"] for _, k in kparts]),
        "category": pd.Categorical(np.concatenate([k["category"] for _, k in kparts]), categories=list(_CATEGORIES)),
        "count": np.concatenate([k["count"] for _, k in kparts]).astype(np.int32),
        "sum_s": np.concatenate([k["sum_s"] for _, k in kparts]),
        "union_s": np.concatenate([k["union_s"] for _, k in kparts]),
    }).sort_values(["rank", "step", "category"], kind="stable").reset_index(drop=True)


def _check_clocks(steps: pd.DataFrame, reader: Reader, align: bool) -> tuple[pd.Series, float]:
    """Name the ranks whose clock is off; align them when asked (returns offsets, re-base in s)."""
    offsets, limit = _clock_offsets(steps)
    off = offsets[offsets.abs() > limit]
    if not len(off):
        return off, 0.0
    listed = ", ".join(f"rank {r} {v:+.3f} s" for r, v in off.items())
    msg = (
        f"clock offset? estimated offsets {listed} (relative to the median of {len(offsets)} ranks' step starts"
        f"{'; with two ranks either may be the one off' if len(offsets) == 2 else ''}) exceed {limit:.3g} s, "
        "implausible for synchronous training: per-rank step durations are unaffected; "
        "cross-rank timing (stragglers, spans) is not trustworthy"
    )
    if not align:
        if reader.strict:
            reader.fail(msg + "; pass align_clocks=True to align")
        reader.note(msg + "; pass align_clocks=True to align")
        return off, 0.0
    by_rank = steps["rank"].map(off).fillna(0.0)
    rebase = float((steps["start_s"] - by_rank).min())  # the earliest start is 0 again
    steps[["start_s", "end_s"]] = steps[["start_s", "end_s"]].sub(by_rank + rebase, axis=0)
    reader.note(msg + "; aligned: those offsets were subtracted (align_clocks=True)")
    return off, rebase


def _job_facts(out: Parsed, traces: list[_Trace], reader: Reader) -> int | None:
    """accelerator, n_ranks and n_accelerators, each from the first trace that states it."""
    sizes = {tr.world_size for tr in traces if tr.world_size is not None}
    if len(sizes) > 1:
        reader.fail(f"traces disagree on world_size ({sorted(sizes)}): not one job")
    world = next(iter(sizes)) if sizes else None
    if world is not None:
        tr = next(t for t in traces if t.world_size is not None)
        where = f"{tr.where}:{tr.lines.get('world_size', tr.lines.get('distributedInfo', 1))}"
        text = f'"world_size": {world} (distributedInfo; {_WORLD_TEXT})'
        out.fact("n_ranks", world, where, text)
        out.fact("n_accelerators", world, where, text)
    names = sorted({d for tr in traces for d in tr.devices})
    if len(names) == 1:
        tr = next(t for t in traces if t.devices)
        mtia = (f" (an MTIA device: {', '.join(_MTIA_PROP_KEYS[:2])} are the MTIA runtime's properties)"
                if names[0] in tr.mtia else "")
        out.fact("accelerator", names[0], f"{tr.where}:{tr.lines.get('deviceProperties', 1)}",
                 f'deviceProperties[].name "{names[0]}"{mtia}')
    elif names:
        reader.note(f"deviceProperties name {len(names)} kinds of device ({', '.join(names)}): no accelerator stated")
    else:
        _no_device_named(traces, reader)
    return world


def _no_device_named(traces: list[_Trace], reader: Reader) -> None:
    """The note for traces whose deviceProperties name no device: the accelerator stays unknown."""
    empty = [f"{Path(t.where).name}:{t.lines['deviceProperties']}" for t in traces if "deviceProperties" in t.lines]
    how = f"deviceProperties is empty ({', '.join(empty[:3])})" if empty else "no trace has deviceProperties"
    mtia = sorted({t.backend for t in traces if t.backend and "mtia" in t.backend.lower()})
    hint = (f"; the process group backend ({mtia[0]}) is MTIA's, so the device is an MTIA of a generation the "
            "trace does not name") if mtia else " (a CPU-only rank, or a profiler that saw no GPU)"
    reader.note(InputRequest(f"{how}: no device named{hint}; the accelerator is unknown, not assumed", ("accelerator",),
                             "pass accelerator= to state it"))


# --- one rank file: what a worker process (or a Spark task) computes -----------------------------
def _wide(cols: dict[str, np.ndarray], kern: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The step columns and the three kernel categories' columns side by side, one row per step."""
    out = dict(cols)
    for cat, k in zip(_CATEGORIES, kern, strict=True):
        out.update({f"{cat}_count": k["count"], f"{cat}_sum": k["sum_s"], f"{cat}_union": k["union_s"]})
    return out


def _kern_of(w: dict[str, np.ndarray]) -> list[dict[str, np.ndarray]]:
    n = len(w["step"])
    return [{"step": w["step"], "category": np.full(n, cat), "count": w[f"{cat}_count"],
             "sum_s": w[f"{cat}_sum"], "union_s": w[f"{cat}_union"]} for cat in _CATEGORIES]


def _parse_rank(reader: Reader) -> kr.RankPart:
    """One trace reduced to its per-step table, with the facts the job needs and its counts."""
    try:
        tr = _read_trace(reader)
    except LoadError as exc:
        if reader.strict:
            raise
        return kr.RankPart(str(reader.path), report=kr.report_dict(reader.report), error=str(exc))
    m = _RANK_NAME_RE.search(tr.path.name)
    label = tr.rank if tr.rank is not None else (int(m.group(1)) if m and int(m.group(1)) <= _MAX_RANK else -1)
    res = _rank_tables(tr, label, reader)
    info = {"where": tr.where, "rank": tr.rank, "world_size": tr.world_size, "backend": tr.backend,
            "devices": tr.devices, "mtia": tr.mtia, "base_ns": tr.base_ns, "lines": tr.lines,
            "base": None if res is None else res[2]}
    cols = {} if res is None else _wide(res[0], res[1])
    return kr.RankPart(str(reader.path), cols, info, kr.report_dict(reader.report))


def _rank_reader(path: str, strict: bool, limits: Limits | None, root: str | None) -> Reader:
    return Reader(Path(path), NAME, strict=strict, report=LoadReport(), root=None if root is None else Path(root),
                  limits=limits or Limits())


def _key(reader: Reader) -> dict[str, Any] | None:
    """The cache key of a rank file: its size, mtime and content fingerprint, and the settings that
    shape its parse."""
    settings = (f"tables={_TABLES_VERSION};fast={FAST_PATH};strict={reader.strict};file={reader.file};"
                f"limits={reader.limits}")
    try:
        return kr.cache_key(reader.path, settings)
    except OSError:
        return None


def cached_rank(path: str, strict: bool = False, limits: Limits | None = None, root: str | None = None,
                cache: bool | str = True, user_dir: str | None = None) -> kr.RankPart | None:
    """A rank file's parse from its Parquet cache when that is current, else None."""
    key = _key(_rank_reader(path, strict, limits, root))
    return None if key is None else kr.read_cache(Path(path), key, where=cache, user_dir=user_dir)


def read_rank(path: str, strict: bool = False, limits: Limits | None = None, root: str | None = None,
              cache: bool | str = True, user_dir: str | None = None) -> kr.RankPart:
    """One rank's trace file parsed (or read back from its Parquet cache when that is current).

    Top-level and picklable: the process pool and Spark tasks call it by reference.
    """
    reader = _rank_reader(path, strict, limits, root)
    key = _key(reader) if cache else None
    hit = kr.read_cache(reader.path, key, where=cache, user_dir=user_dir) if key is not None else None
    if hit is not None:
        return hit
    part = _parse_rank(reader)
    if key is not None:
        kr.write_cache(reader.path, key, part, where=cache, user_dir=user_dir)
    return part


def _read_parts(reader: Reader, files: list[Path], root: Path | None, options: Options) -> list[kr.RankPart]:
    """Each file's RankPart: cached ones read here, the rest in the pool (or as a Spark job)."""
    if reader.display is not None:  # a spooled stream: one temporary file, named as the user gave it
        sub = Reader(reader.path, NAME, strict=reader.strict, report=LoadReport(), limits=reader.limits,
                     display=reader.display)
        return [_parse_rank(sub)]
    args = (reader.strict, reader.limits, None if root is None else str(root))
    # the cache directory resolved here: pool and Spark workers may not share this environment
    cached = (options.cache, str(cache_dir())) if options.cache else (False, None)
    got = [cached_rank(str(f), *args, *cached) if options.cache else None for f in files]
    todo = [f for f, g in zip(files, got, strict=True) if g is None]
    if options.engine == "spark":
        new = kr.spark_map(read_rank, todo, args=(*args, *cached), spark=options.spark)
    else:
        sizes = [kr.inflated_size(f, reader.limits) for f in todo]
        small = sum(sizes) < _POOL_MIN_BYTES  # a pool's start-up costs more than parsing these here
        workers = options.workers or (1 if small else kr.default_workers(len(todo)))
        costs = [kr.estimated_cost(n) for n in sizes]
        new = kr.map_files(read_rank, todo, args=(*args, *cached), workers=workers,
                           budget=kr.parse_budget(options.memory_budget), costs=costs)
    it = iter(new)
    return [g if g is not None else next(it) for g in got]


def _as_trace(part: kr.RankPart) -> _Trace:
    i, empty = part.info, np.empty(0)
    return _Trace(Path(part.path), i["where"], empty.astype(np.int8), empty, empty, empty.astype(np.int64),
                  rank=i["rank"], world_size=i["world_size"], backend=i["backend"], devices=list(i["devices"]),
                  base_ns=i["base_ns"], lines=dict(i["lines"]), mtia=list(i.get("mtia", [])))


def _usable(reader: Reader, files: list[Path], parts: list[kr.RankPart]) -> tuple[list[Path], list[kr.RankPart]]:
    """Merge each file's counts; a file that could not be read is counted and named, then left out."""
    kept_f, kept_p = [], []
    for f, part in zip(files, parts, strict=True):
        kr.merge_report(reader.report, part.report)
        if part.error is None:
            kept_f.append(f)
            kept_p.append(part)
            continue
        reader.report.skip(rules.FILE_LEFT_OUT, example=rules.with_detail("trace file", part.error))
        reader.note(f"{f.name}: unreadable, left out ({part.error[:300]})")
    if not kept_p:
        reader.fail(f"no trace could be read ({len(files)} unreadable): {parts[0].error}")
    return kept_f, kept_p


def parse(reader: Reader, options: Options) -> Parsed:
    """Read one trace, or a folder of one job's per-rank traces (``pattern`` picks the files)."""
    files = _files(reader, options)
    root = (reader.path if reader.path.is_dir() else None) if len(files) > 1 else None
    files, rparts = _usable(reader, files, _read_parts(reader, files, root, options))
    traces = [_as_trace(p) for p in rparts]
    ranks = _ranks(traces, reader)
    out = Parsed(timing="exact", time_unit="us")
    world = _job_facts(out, traces, reader)
    parts, kparts = [], []
    for rank, rp in zip(ranks, rparts, strict=True):
        if rp.columns:
            parts.append((rank, rp.columns, rp.info["base"]))
            kparts.extend((rank, k) for k in _kern_of(rp.columns))
    if not parts:
        reader.fail("no ProfilerStep#N events in any trace: no steps to read")
    t0 = min(base + float(c["_s"].min()) for _, c, base in parts)
    steps = pd.concat([_step_frame(rank, c, base - t0) for rank, c, base in parts], ignore_index=True)
    off, rebase = _check_clocks(steps, reader, options.align_clocks)
    t0 += rebase * 1e6  # with aligned clocks: the trace time of 0 s on the reference (median rank) clock
    if world is not None and len(traces) < world:
        reader.note(f"{len(traces)} of {world} ranks' traces read")
    out.steps, out.tables = steps, {"kernels": _kernels_table(kparts)}
    out.meta["name"] = reader.path.name if len(files) > 1 else files[0].name.split(".")[0]
    out.extra.update({
        "files": [str(f) for f in files], "ranks": sorted(ranks), "world_size": world,
        "backend": next((tr.backend for tr in traces if tr.backend), None),
        "device_names": sorted({d for tr in traces for d in tr.devices}), "t0_trace_us": t0,
        "base_time_ns": [tr.base_ns for tr in traces],
        "clock_offsets_s": [{"rank": int(r), "offset_s": float(v)} for r, v in off.items()],
        "clocks_aligned": bool(options.align_clocks and len(off)),
        "steps_from": "ProfilerStep#N ranges (the profiler's step annotations)",
        "data_wait_from": (f"{gpu_time.DATA_LOADER_PREFIX}... ranges ({_WAIT_CAT})"
                           if any(np.isfinite(c["data_wait_s"]).any() for _, c, _ in parts) else None),
    })
    return out


def load_traces(paths: list[str | Path], **kwargs: Any) -> Run:
    """Load one job from a list of per-rank trace files (any folders); keywords as for ``load``."""
    if not paths or isinstance(paths, (str, Path)):
        raise LoadError(f"paths must be a non-empty list of trace files; got {paths!r}", field="paths")
    full = [Path(p).resolve() for p in paths]
    common = Path(os.path.commonpath([str(p.parent) for p in full]))
    return load(common, files=tuple(str(p) for p in full), **kwargs)


load = loader_for(NAME)
