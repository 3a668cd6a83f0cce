"""JAX / XLA profiles: ``*.xplane.pb`` (an ``XSpace`` protobuf) and the Chrome-trace JSON XLA's profiler writes.

The schema is ``tsl/profiler/protobuf/xplane.proto`` (google/tsl, the file as last changed in commit
5b7542317a580efea125cefba7b01e7ed35342f6, read in the snapshot f8d423ef0f061a661de0aa039b586ceb7dec591e);
its field numbers, and nothing guessed, are the ``_F_*`` constants below:

- ``XSpace``: planes 1, errors 2, warnings 3, hostnames 4;
- ``XPlane``: id 1, name 2, lines 3, event_metadata 4 (``map<int64, XEventMetadata>``), stat_metadata 5
  (``map<int64, XStatMetadata>``), stats 6; a map is a repeated entry message {key 1, value 2} (the
  protobuf encoding guide, "Maps");
- ``XLine``: id 1, name 2, timestamp_ns 3, events 4, duration_ps 9, display_id 10, display_name 11;
- ``XEvent``: metadata_id 1, offset_ps 2 | num_occurrences 5, duration_ps 3, stats 4;
- ``XStat``: metadata_id 1, double 2, uint64 3, int64 4, str 5, bytes 6, ref 7 (a string kept as the name
  of the ``XStatMetadata`` it points to); ``XEventMetadata``: id 1, name 2, metadata 3, display_name 4,
  stats 5; ``XStatMetadata``: id 1, name 2.

The bytes are walked with :func:`mfu_toolkit.io.protobuf.spans` (offsets, no copies; the depth and size
guards of :mod:`mfu_toolkit.io.protobuf`). Plane, line and stat names are those of TSL's
``xplane_schema`` (``/device:GPU:N``, ``/device:TPU:N``, ``/host:CPU``, ``Task Environment``; lines
``Steps``, ``XLA Ops``; stats ``hlo_op``, ``hlo_category``, ``step_num``, ``device_vendor`` ...).

What is read:

- Input: one ``.xplane.pb`` (one host), or a folder of them, one per host, in one directory (the
  profile plugin's ``plugins/profile/<run>/<host>.xplane.pb``; several run directories are a LoadError
  that lists them). The host is ``XSpace.hostnames``, else the file name.
- Time: an event starts at its line's ``timestamp_ns`` plus its ``offset_ps`` and lasts ``duration_ps``
  (picoseconds). ``jax.profiler`` stores line timestamps relative to the session start (TSL's
  ``NormalizeTimestamps`` subtracts it from every line at or after it) and the start itself, epoch ns,
  as the ``profile_start_time`` stat of the ``Task Environment`` plane; a line timestamp of 1e17 ns or
  more is an epoch time. Hosts are aligned by their session starts. Times are seconds since the first
  device event or step; ``meta.extra["t0_wallclock"]`` is that instant (UTC) where the file gives it.
- Devices: the ``/device:GPU|TPU|CUSTOM:N`` planes (a TPU's ``... SparseCore N`` planes are not read).
  Listed planes without events are counted in ``extra["device_planes"]`` but are no ranks (a small
  program on an 8-GPU node lists all 8). Their activity is on the ``Stream #...`` lines (GPU) or, on a
  plane without them, the ``XLA Ops`` lines (TPU); lines derived for display (``XLA Modules``,
  ``Framework Ops``, ...) repeat that time and are not read. Events aggregated without a time
  (``num_occurrences``) are counted in a note only.
- Categories (:func:`mfu_toolkit.io.gpu_time.category`): ``memory``: ROCclr's copy and fill kernels, CUPTI's
  ``Memcpy*``/``Memset*`` events and events with a ``memcpy_details``/``Memset_details`` stat; ``comm``: an
  event whose HLO op (its ``hlo_op`` stat, else on an ``XLA Ops`` line its own name) is one of XLA's collective
  opcodes, whose ``hlo_category`` names one, or a collective library's kernel; everything else ``compute``.
- Steps, in this order: a device plane's ``Steps`` line (each event a step, numbered by its name or
  its ``step_num``/``group_id`` stat); else host events with a ``step_num`` stat, which is what
  ``jax.profiler.StepTraceAnnotation(name, step_num=N)`` writes (one span per number, over every device
  of that host), or, given ``step_pattern``, the host events whose name it matches instead (numbered by
  their ``step_num`` where they carry one, else in time order). Without them there are no step rows
  (never invented) and a note says so. Per step and device: the step table of
  :mod:`mfu_toolkit.io.gpu_time`, as every trace format gives it (``extra["steps_from"]`` says which marks
  cut the steps); a profile shows no input-pipeline wait: ``data_wait_s`` is unknown (NaN).
- Tables: ``device_events`` (per device: events, counts per category, busy as the union of kernels, and
  the step table's columns over its first to last event); ``ops`` (per event name and HLO op: category,
  count, summed, mean and longest seconds, devices); with steps, ``step_kernels`` (gpu_time's layout).
- Facts: ``n_accelerators``/``n_ranks``, the devices that carry events; ``n_nodes``, the hosts;
  ``accelerator``: a name stat of the device planes (``gpu_device_name``, ``device_type_string``) as
  printed, else the model that their capability stats identify (:mod:`mfu_toolkit.device_ids`, datasheet
  figures with sources), else unknown with a note that lists what the planes say.
- Chrome-trace JSON (``*.trace.json.gz``; ``perfetto_trace.json.gz``, the same rewritten by ``jax.profiler``),
  which the Kineto loader does not read (no ``ProfilerStep#N``, no ``"cat": "kernel"``): read by
  :func:`mfu_toolkit.io.tracejson.threads`, processes naming the planes and threads the lines, ``X`` events
  (µs) with ``args`` ``hlo_op``, ``hlo_category``, ``step_num``, into the same tables. In a folder, a
  ``.xplane.pb`` is read rather than the JSON XLA wrote from it, and a perfetto copy beside a trace JSON is not.
- Bounds: the file is read within the reading limits; each line's events are taken from the load's
  row budget (:func:`mfu_toolkit.io.rules.take_rows`); a damaged event, line or plane is skipped and
  counted, a truncated file keeps the planes before the damage (strict mode raises).
"""

from __future__ import annotations

import re
import struct
from array import array
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ... import device_ids, hardware
from ...run import InputRequest
from .. import gpu_time, rules, tracejson
from .. import protobuf as pb
from ..base import Parsed, loader_for
from ..protobuf import ProtoError
from ..reading import Reader, read_head

NAME = "xplane"
BAD_EVENT, BAD_LINE, BAD_PLANE = (f"malformed {m} protobuf" for m in ("XEvent", "XLine", "XPlane"))
BAD_SPACE = "truncated or malformed XSpace protobuf (the rest of the file is unreadable)"

# --- field numbers of xplane.proto (see the module docstring) --------------------------------------------
_F_SPACE_PLANES, _F_SPACE_ERRORS, _F_SPACE_WARNINGS, _F_SPACE_HOSTS = 1, 2, 3, 4
_F_PLANE_ID, _F_PLANE_NAME, _F_PLANE_LINES, _F_PLANE_EVMETA, _F_PLANE_STATMETA, _F_PLANE_STATS = 1, 2, 3, 4, 5, 6
_F_LINE_NAME, _F_LINE_TS, _F_LINE_EVENTS, _F_LINE_DISPLAY = 2, 3, 4, 11
_F_EV_META, _F_EV_OFFSET, _F_EV_DUR, _F_EV_STATS, _F_EV_OCCUR = 1, 2, 3, 4, 5
_F_STAT_META, _F_STAT_DOUBLE, _F_STAT_U64, _F_STAT_I64, _F_STAT_STR, _F_STAT_BYTES, _F_STAT_REF = 1, 2, 3, 4, 5, 6, 7
_F_META_NAME, _F_META_DISPLAY, _F_META_STATS = 2, 4, 5

_EPOCH_NS = 10**17  # a line timestamp at or past this (1973) is epoch time, not one relative to the session
_PS = 1e-12
_CATS = gpu_time.CATEGORIES  # ("compute", "comm", "memory"), indexed by gpu_time's category codes
_DEVICE_RE = re.compile(r"^/device:(GPU|TPU|CUSTOM):(\d{1,9})(?: \(.*\))?$")  # not "... SparseCore 0"
_HOST_PREFIX = "/host:"
_TASK_ENV = "Task Environment"
_STEPS_LINE = "Steps"
_OPS_LINES = ("XLA Ops",)
_STREAM_PREFIX = "Stream #"
_MEM_STATS = {"memcpy_details", "memset_details"}  # compared in lower case (TSL writes "Memset_details")
_NAME_STATS = ("gpu_device_name", "device_type_string")
_STEP_STATS = ("step_num", "group_id")
# XLA's trace JSON opens {"displayTimeUnit":"ns","metadata":{"highres-ticks":true},... (TSL's TraceEventsToJson);
# jax.profiler's perfetto_trace.json.gz is the same document with displayTimeUnit removed, rewritten by json.dumps
_JSON_HEAD_RE = re.compile(rb'^\s*\{\s*(?:"displayTimeUnit"\s*:\s*"ns"\s*,\s*)?"metadata"\s*:\s*\{\s*"highres-ticks"')
_JSON_SUFFIXES = (".trace.json.gz", ".trace.json")
_PB_SUFFIX = ".xplane.pb"


@dataclass(frozen=True)
class Options:
    """Besides the RunMeta keywords: ``step_pattern``, a regular expression; given, the host events whose whole
    name it matches mark the steps (numbered by their ``step_num`` stat, else in time order) instead of the
    host events that carry a ``step_num`` stat. A device plane's ``Steps`` line comes first either way."""

    step_pattern: str | None = None

    def __post_init__(self) -> None:
        if self.step_pattern is not None:
            if not isinstance(self.step_pattern, str) or not self.step_pattern:
                raise ValueError(f"step_pattern must be a non-empty regular expression or None; "
                                 f"got {self.step_pattern!r}")
            try:
                re.compile(self.step_pattern)
            except re.error as exc:
                raise ValueError(f"step_pattern {self.step_pattern!r} is not a regular expression ({exc})") from None


# --- sniffing --------------------------------------------------------------------------------------------
def _plane_name_in(head: bytes) -> str | None:
    """The first plane's name when ``head`` starts like an XSpace (planes first), else None."""
    if len(head) < 4 or head[0] != (_F_SPACE_PLANES << 3 | 2):
        return None
    try:
        _, start = pb.varint(head, 1)
        for num, wt, a, z in pb.spans(head, start, len(head), depth=1):
            if num == _F_PLANE_NAME and wt == 2:
                return bytes(head[a:z]).decode("utf-8", errors="replace")
            if num == _F_PLANE_LINES:
                return None
    except ProtoError:
        return None
    return None


def _head_score(path: Path, head: bytes) -> float:
    """How sure ``head`` (the first bytes of one file) is an XSpace or XLA's trace JSON."""
    name = _plane_name_in(head)
    if name is not None and (name.startswith(("/host:", "/device:")) or name == _TASK_ENV):
        return 0.95
    if _JSON_HEAD_RE.match(head):
        return 0.95 if (b'"/device:' in head or b'"/host:' in head) else 0.7
    if path.name.endswith(_PB_SUFFIX) and head[:1] == bytes([_F_SPACE_PLANES << 3 | 2]):
        return 0.6
    return 0.0


def sniff(path: Path, head: bytes) -> float:
    """0.95 for an XSpace or XLA's trace JSON; 0.97 for a folder holding ``*.xplane.pb`` (or that JSON)."""
    try:
        p = Path(path)
        if p.is_dir():
            files = _profile_files(p, limit=2_000)
            return 0.97 if any(_head_score(f, read_head(f)) >= 0.85 for f in files[:8]) else 0.0
        return _head_score(p, head)
    except Exception:
        return 0.0


def _profile_files(root: Path, limit: int = 100_000) -> list[Path]:
    """The ``*.xplane.pb`` and XLA trace JSON files below ``root`` (the first ``limit`` entries looked at)."""
    out = []
    for i, f in enumerate(root.rglob("*")):
        if i >= limit:
            break
        if f.is_file() and (f.name.endswith(_PB_SUFFIX) or f.name.endswith(_JSON_SUFFIXES)
                            or f.name == "perfetto_trace.json.gz"):
            out.append(f)
    return sorted(out)


# --- what one host's profile holds --------------------------------------------------------------------------
@dataclass
class _Device:
    """One device plane: its events (ps since its host's session start) and its ``Steps`` line."""

    plane: str
    ordinal: int
    stats: dict[str, Any]
    start: array = field(default_factory=lambda: array("d"))
    end: array = field(default_factory=lambda: array("d"))
    cat: array = field(default_factory=lambda: array("b"))
    op: array = field(default_factory=lambda: array("q"))
    steps: list[tuple[int | None, float, float]] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    pending: dict[str, list[tuple]] = field(default_factory=dict)  # JSON: events per line, until lines are chosen


@dataclass
class _Space:
    """One host's profile: its devices, its host step spans and the session start."""

    path: Path
    where: str
    host: str
    start_ns: int | None = None
    devices: list[_Device] = field(default_factory=list)
    steps: list[tuple[int | None, float, float, str]] = field(default_factory=list)
    planes: list[str] = field(default_factory=list)
    untimed: int = 0  # aggregated events (num_occurrences) without a time
    epoch_base: int | None = None  # the first epoch line timestamp, when the session start is unknown


# --- the protobuf walk ----------------------------------------------------------------------------------------
def _stat(buf: bytes, a: int, z: int, names: dict[int, str], depth: int) -> tuple[int, Any]:
    """An XStat: its metadata id and value (a ref value as the name it points to)."""
    sid, val = 0, None
    for num, wt, x, y in pb.spans(buf, a, z, depth=depth):
        if num == _F_STAT_META and wt == 0:
            sid = pb.signed(x)
        elif num == _F_STAT_DOUBLE and wt == 1:
            val = struct.unpack_from("<d", buf, x)[0]
        elif num in (_F_STAT_U64, _F_STAT_I64) and wt == 0:
            val = x if num == _F_STAT_U64 else pb.signed(x)
        elif num == _F_STAT_STR and wt == 2:
            val = pb.text(buf, x, y)
        elif num == _F_STAT_BYTES and wt == 2:
            val = bytes(buf[x:y])
        elif num == _F_STAT_REF and wt == 0:
            val = names.get(pb.signed(x), "")
        elif num <= _F_STAT_REF:
            raise ProtoError(f"XStat field {num} with wire type {wt}")
    return sid, val


@dataclass
class _Plane:
    """One plane's top-level fields: its name, and where its lines, metadata and stats lie."""

    name: str
    lines: list[tuple[int, int]]
    evmeta: list[tuple[int, int]]
    stats: list[tuple[int, int]]
    stat_names: dict[int, str]


def _plane(buf: bytes, a: int, z: int) -> _Plane:
    f = pb.collect(buf, a, z, {_F_PLANE_ID: 0, **dict.fromkeys(range(_F_PLANE_NAME, _F_PLANE_STATS + 1), 2)},
                   depth=1, what="XPlane")  # the id a varint, fields 2-6 length-delimited
    names = {k: _meta_name(buf, v) for k, v in pb.map_entries(buf, f.get(_F_PLANE_STATMETA, []), depth=2)}
    return _Plane(pb.text(buf, *f[_F_PLANE_NAME][-1]) if _F_PLANE_NAME in f else "", f.get(_F_PLANE_LINES, []),
                  f.get(_F_PLANE_EVMETA, []), f.get(_F_PLANE_STATS, []), names)


def _meta_name(buf: bytes, span: tuple[int, int], depth: int = 3) -> str:
    """The name of an XEventMetadata / XStatMetadata (an event's display name where it has no name)."""
    names = {num: pb.text(buf, x, y) for num, wt, x, y in pb.spans(buf, span[0], span[1], depth=depth)
             if num in (_F_META_NAME, _F_META_DISPLAY) and wt == 2}
    return names.get(_F_META_NAME) or names.get(_F_META_DISPLAY, "")


def _event_meta(buf: bytes, pl: _Plane, with_stats: bool) -> dict[int, tuple[str, dict[str, Any]]]:
    """Per event metadata id: its name and (on device planes) its stats by name."""
    out: dict[int, tuple[str, dict[str, Any]]] = {}
    for key, (a, z) in pb.map_entries(buf, pl.evmeta, depth=2):
        stats: dict[str, Any] = {}
        if with_stats:
            for num, wt, x, y in pb.spans(buf, a, z, depth=3):
                if num == _F_META_STATS and wt == 2:
                    sid, val = _stat(buf, x, y, pl.stat_names, 4)
                    stats[pl.stat_names.get(sid, "")] = val
        out[key] = (_meta_name(buf, (a, z)), stats)
    return out


def _plane_stats(buf: bytes, pl: _Plane) -> dict[str, Any]:
    out = {}
    for a, z in pl.stats:
        sid, val = _stat(buf, a, z, pl.stat_names, 2)
        out[pl.stat_names.get(sid, str(sid))] = val
    return out


@dataclass
class _Line:
    """A line's header and how many events it holds."""

    name: str
    ts_ns: int
    n_events: int


def _line_head(buf: bytes, a: int, z: int) -> _Line:
    f = pb.collect(buf, a, z, {_F_LINE_NAME: 2, _F_LINE_TS: 0, _F_LINE_EVENTS: 2, _F_LINE_DISPLAY: 2}, depth=2,
                   what="XLine")
    name, display = (pb.text(buf, *f[k][-1]) if k in f else "" for k in (_F_LINE_NAME, _F_LINE_DISPLAY))
    ts = pb.signed(f[_F_LINE_TS][-1]) if _F_LINE_TS in f else 0
    return _Line(name or display, ts, len(f.get(_F_LINE_EVENTS, [])))


def _events(buf: bytes, a: int, z: int, wanted: frozenset[int], reader: Reader,
            where: str) -> Iterator[tuple[int, int, int, bool, list[tuple[int, int]]]]:
    """``(metadata id, offset ps, duration ps, timed, wanted stat spans)`` per readable event of a line;
    a malformed event is counted and passed over."""
    for num, wt, ea, ez in pb.spans(buf, a, z, depth=2):
        if num != _F_LINE_EVENTS or wt != 2:
            continue
        mid = off = dur = 0
        timed = True
        st: list[tuple[int, int]] = []
        try:
            for f, w, x, y in pb.spans(buf, ea, ez, depth=3):
                if w == 0 and f <= _F_EV_OCCUR:
                    if f == _F_EV_META:
                        mid = x
                    elif f == _F_EV_OFFSET:
                        off = x
                    elif f == _F_EV_DUR:
                        dur = x
                    elif f == _F_EV_OCCUR:
                        timed = False
                elif f == _F_EV_STATS and w == 2:
                    if wanted and pb.first_varint(buf, x, y, _F_STAT_META) in wanted:
                        st.append((x, y))
                elif f <= _F_EV_OCCUR:
                    raise ProtoError(f"XEvent field {f} with wire type {w}")
        except ProtoError as exc:
            reader.bad(BAD_EVENT, field=where, example=f"event at byte {ea}", detail=str(exc))
            continue
        yield pb.signed(mid), pb.signed(off), pb.signed(dur), timed, st


# --- one XSpace -----------------------------------------------------------------------------------------------
_DERIVED_LINES = frozenset({"XLA Modules", "Framework Ops", "Framework Name Scope", "TensorFlow Ops",
                            "TensorFlow Name Scope", "Launch Stats", "Source code", "_counters_", "Host Offload Ops",
                            "Tensor Core Sync Flag", "Sparse Core Syncs", "Sparse Core Modules", "Sparse Core Steps",
                            "XLA TraceMe", "Async XLA Ops"})


def _activity_lines(names: list[str]) -> list[int]:
    """Which lines of a device plane hold its activity: ``Stream #...`` lines, else the ``XLA Ops`` lines,
    else every line that is neither ``Steps`` nor derived for display."""
    streams = [i for i, n in enumerate(names) if n.startswith(_STREAM_PREFIX)]
    if streams:
        return streams
    ops = [i for i, n in enumerate(names) if n in _OPS_LINES]
    return ops or [i for i, n in enumerate(names) if n != _STEPS_LINE and n not in _DERIVED_LINES]


def _step_number(name: str, step: Any, group: Any) -> int | None:
    """A step's number: its name when that is a whole number, else its step_num, else its group_id stat."""
    text = name.strip()
    if text.isascii() and text.isdigit():
        return rules.as_step(text)
    for v in (step, group):
        if v is not None and (n := rules.as_step(v)) is not None:
            return n
    return None


@dataclass
class _Ctx:
    """What decoding one plane's lines needs: the bytes, the plane, its metadata and the host's session."""

    buf: bytes
    pl: _Plane
    meta: dict[int, tuple[str, dict[str, Any]]]
    wanted: frozenset[int]
    space: _Space
    reader: Reader

    def base(self, ts_ns: int) -> int:
        """A line's start in ps since the host's session start."""
        if ts_ns < _EPOCH_NS:
            return ts_ns * 1000
        sp = self.space
        if sp.start_ns is not None:
            return (ts_ns - sp.start_ns) * 1000
        if sp.epoch_base is None:
            sp.epoch_base = ts_ns
            self.reader.note(f"{sp.where}: line timestamps are epoch times but no profile_start_time is stated: "
                             "times are counted from the first such line")
        return (ts_ns - sp.epoch_base) * 1000

    def stats(self, spans: list[tuple[int, int]]) -> dict[str, Any]:
        names = self.pl.stat_names
        return {names.get(k, ""): v for k, v in (_stat(self.buf, x, y, names, 4) for x, y in spans)}


def _stat_ids(pl: _Plane, wanted: tuple[str, ...]) -> frozenset[int]:
    low = {w.lower() for w in wanted}
    return frozenset(k for k, v in pl.stat_names.items() if v.lower() in low)


def _take(reader: Reader, n: int, where: str) -> bool:
    """Whether the load's row budget takes ``n`` more events; if not, they are counted and noted."""
    if n and not rules.take_rows(n):
        reader.bad(rules.ROW_BUDGET_SPENT, field=where, detail=f"{n:,} events of a line not read")
        reader.note(f"{where}: the load's row budget was spent; {n:,} events not read, so totals are a lower bound")
        return False
    return True


def _device(ctx: _Ctx, m: re.Match[str], ops: gpu_time.Ops) -> _Device:
    """One device plane's events and ``Steps`` line."""
    buf, pl, reader = ctx.buf, ctx.pl, ctx.reader
    dev = _Device(pl.name, int(m.group(2)), _plane_stats(buf, pl))
    heads: list[_Line | None] = []
    for a, z in pl.lines:
        try:
            heads.append(_line_head(buf, a, z))
        except ProtoError as exc:
            reader.bad(BAD_LINE, field=f"{ctx.space.where}:{pl.name}", detail=str(exc))
            heads.append(None)
    active = set(_activity_lines([h.name if h is not None else "" for h in heads]))
    for i, ((a, z), head) in enumerate(zip(pl.lines, heads, strict=True)):
        if head is None:
            continue
        where = f"{ctx.space.where}:{pl.name}/{head.name}"
        if head.name == _STEPS_LINE:
            dev.steps.extend(_device_steps(ctx, a, z, head, where))
        elif i in active and _take(reader, head.n_events, where):
            dev.lines.append(head.name)
            _device_line(ctx, a, z, head, dev, ops, where)
    return dev


def _device_line(ctx: _Ctx, a: int, z: int, head: _Line, dev: _Device, ops: gpu_time.Ops, where: str) -> None:
    """A line's events into the device's arrays (ps since the session start), each kind classified once."""
    base, reader = ctx.base(head.ts_ns), ctx.reader
    is_ops = head.name in _OPS_LINES
    known: dict[tuple, tuple[int, int]] = {}
    start, end, op, cat = dev.start, dev.end, dev.op, dev.cat
    for mid, off, dur, timed, st in _events(ctx.buf, a, z, ctx.wanted, reader, where):
        if not timed:
            ctx.space.untimed += 1
            continue
        if dur < 0:
            reader.bad(rules.NEGATIVE_DURATION, field=where, example=f"duration_ps {dur}")
            continue
        key = (mid, *(bytes(ctx.buf[x:y]) for x, y in st)) if st else mid
        got = known.get(key)
        if got is None:
            name, mstats = ctx.meta.get(mid, (f"<metadata {mid}>", {}))
            s = {**{k: v for k, v in mstats.items() if v}, **ctx.stats(st)}
            hlo = str(s.get("hlo_op") or (name if is_ops else ""))
            mem = any(k.lower() in _MEM_STATS for k in s)
            c = gpu_time.category(name, hlo, str(s.get("hlo_category") or ""), mem)
            got = known[key] = (ops.get(name, hlo, c), c)
        t = float(base + off)
        start.append(t)
        end.append(t + dur)
        op.append(got[0])
        cat.append(got[1])
    reader.report.lines_read += head.n_events


def _device_steps(ctx: _Ctx, a: int, z: int, head: _Line, where: str) -> list[tuple[int | None, float, float]]:
    """The events of a ``Steps`` line as (number, start ps, end ps)."""
    base = ctx.base(head.ts_ns)
    out = []
    for mid, off, dur, timed, st in _events(ctx.buf, a, z, ctx.wanted, ctx.reader, where):
        if timed and dur >= 0:
            name, mstats = ctx.meta.get(mid, ("", {}))
            s = {**mstats, **ctx.stats(st)}
            out.append((_step_number(name, s.get("step_num"), s.get("group_id")), float(base + off),
                        float(base + off + dur)))
    return out


def _host_steps(ctx: _Ctx, pattern: re.Pattern[str] | None) -> None:
    """Host events that mark steps: with ``pattern``, those whose name it matches (numbered by a ``step_num``
    stat where they carry one); else those with a ``step_num`` stat (StepTraceAnnotation)."""
    matched = {mid for mid, (name, _) in ctx.meta.items() if pattern is not None and pattern.fullmatch(name)}
    if (not ctx.wanted and not matched) or (pattern is not None and not matched):
        return
    for a, z in ctx.pl.lines:
        head = _line_head(ctx.buf, a, z)
        base = ctx.base(head.ts_ns)
        where = f"{ctx.space.where}:{ctx.pl.name}/{head.name}"
        for mid, off, dur, timed, st in _events(ctx.buf, a, z, ctx.wanted, ctx.reader, where):
            if not timed or dur < 0 or not (mid in matched if pattern is not None else st):
                continue
            num = _step_number("", ctx.stats(st).get("step_num"), None) if st else None
            name = ctx.meta.get(mid, ("", {}))[0]
            ctx.space.steps.append((num, float(base + off), float(base + off + dur), name))


def _session_start(buf: bytes, planes: list[_Plane]) -> int | None:
    """``profile_start_time`` (epoch ns) of the ``Task Environment`` plane, where stated."""
    for pl in planes:
        if pl.name == _TASK_ENV:
            v = _plane_stats(buf, pl).get("profile_start_time")
            if isinstance(v, int) and not isinstance(v, bool) and _EPOCH_NS <= v < 2**63:
                return v
    return None


def _space_fields(buf: bytes, reader: Reader) -> tuple[list[_Plane], list[str], list[str]]:
    """The planes, host names and errors/warnings of an XSpace; what follows damage is counted as lost."""
    f: dict[int, list[Any]] = {}
    try:
        pb.collect(buf, 0, len(buf), dict.fromkeys(range(_F_SPACE_PLANES, _F_SPACE_HOSTS + 1), 2), what="XSpace",
                   into=f)
    except ProtoError as exc:
        n = len(f.get(_F_SPACE_PLANES, []))
        reader.bad(BAD_SPACE, field="XSpace", example=f"{n} plane(s) read before the damage", detail=str(exc))
    hosts = [pb.text(buf, a, z)[:200] for a, z in f.get(_F_SPACE_HOSTS, [])]
    said = [pb.text(buf, a, z)[:300] for k in (_F_SPACE_ERRORS, _F_SPACE_WARNINGS) for a, z in f.get(k, [])]
    planes = []
    for a, z in f.get(_F_SPACE_PLANES, []):
        try:
            planes.append(_plane(buf, a, z))
        except ProtoError as exc:
            reader.bad(BAD_PLANE, field="XSpace.planes", example=f"plane at byte {a}", detail=str(exc))
    return planes, hosts, said


def _host_name(path: Path) -> str:
    name = path.name
    for suffix in (_PB_SUFFIX, *_JSON_SUFFIXES):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return path.stem


def _read_space(reader: Reader, ops: gpu_time.Ops, pattern: re.Pattern[str] | None) -> _Space:
    """One ``.xplane.pb``: its devices' events and steps, its host step spans."""
    buf = reader.bytes()
    planes, hosts, said = _space_fields(buf, reader)
    if not planes:
        reader.fail("no readable XPlane in the file: not an XSpace profile (.xplane.pb)")
    space = _Space(reader.path, reader.path.name, hosts[0] if hosts else _host_name(reader.path))
    space.start_ns = _session_start(buf, planes)
    for text in said:
        reader.note(f"{space.where}: the profiler reported: {text}")
    for pl in planes:
        space.planes.append(pl.name)
        m = _DEVICE_RE.match(pl.name)
        try:
            if m is not None:
                ctx = _Ctx(buf, pl, _event_meta(buf, pl, True), _stat_ids(pl, ("hlo_op", "hlo_category",
                           *_MEM_STATS, *_STEP_STATS)), space, reader)
                space.devices.append(_device(ctx, m, ops))
            elif pl.name.startswith(_HOST_PREFIX) and pl.lines:
                ctx = _Ctx(buf, pl, _event_meta(buf, pl, False), _stat_ids(pl, ("step_num",)), space, reader)
                _host_steps(ctx, pattern)
        except ProtoError as exc:
            reader.bad(BAD_PLANE, field=f"{space.where}:{pl.name}", detail=str(exc))
    return space


# --- XLA's Chrome-trace JSON ----------------------------------------------------------------------------------
def _json_args(args: dict[str, Any]) -> tuple:
    """What an event's ``args`` says: its HLO op and category, step_num, group_id, a memory stat."""
    mem = any(isinstance(k, str) and k.lower() in _MEM_STATS for k in args)
    return (str(args.get("hlo_op") or ""), str(args.get("hlo_category") or ""), args.get("step_num"),
            args.get("group_id"), mem)


def _read_json(reader: Reader, ops: gpu_time.Ops, pattern: re.Pattern[str] | None) -> _Space:
    """One XLA trace JSON into the same structures as an XSpace (µs become ps): processes name the planes,
    threads the lines; each event ``(ts, dur, name, hlo_op, hlo_category, step_num, group_id, memory stat)``."""
    tr = tracejson.threads(reader, _json_args)
    space = _Space(reader.path, reader.path.name, _host_name(reader.path), planes=sorted(set(tr.processes.values())))
    base_us = min((e[0] for events in tr.events.values() for e in events), default=0.0)
    if base_us >= _EPOCH_NS / 1000:  # epoch µs: counted from the first event, whose epoch time is known
        space.start_ns = int(base_us * 1000)
    else:
        base_us = 0.0
    devices: dict[str, _Device] = {}
    for (pid, tid), events in tr.events.items():
        plane, line = tr.processes.get(pid, ""), tr.names.get((pid, tid), "")
        m = _DEVICE_RE.match(plane)
        if m is not None:
            dev = devices.get(pid)
            if dev is None:
                dev = devices[pid] = _Device(plane, int(m.group(2)), {})
            _json_line(dev, line, events, base_us, ops)
        elif plane.startswith(_HOST_PREFIX):
            for e in events:  # step marks by the rule of _host_steps
                num = _step_number("", e[5], None) if e[5] is not None else None
                if (pattern.fullmatch(e[2]) is not None) if pattern is not None else num is not None:
                    ps = (float(round((e[0] - base_us) * 1e6)), float(round((e[0] - base_us + e[1]) * 1e6)))
                    space.steps.append((num, *ps, e[2]))
    for dev in devices.values():
        _keep_activity(dev, reader, f"{space.where}:{dev.plane}")
    space.devices = sorted(devices.values(), key=lambda d: d.ordinal)
    return space


def _json_line(dev: _Device, line: str, events: list[tuple], base_us: float, ops: gpu_time.Ops) -> None:
    """One thread's events of a device process: a ``Steps`` line's steps, or its activity (kept aside per line
    until :func:`_keep_activity` knows which lines hold the device's activity)."""
    if line == _STEPS_LINE:
        dev.steps.extend((_step_number(e[2], e[5], e[6]), round((e[0] - base_us) * 1e6),
                          round((e[0] - base_us + e[1]) * 1e6)) for e in events)
        return
    is_ops = line in _OPS_LINES
    known: dict[tuple, tuple[int, int]] = {}
    rows = []
    for ts, dur, name, hlo, hlo_cat, _, _, mem in events:
        got = known.get((name, hlo, hlo_cat, mem))
        if got is None:
            hlo_op = hlo or (name if is_ops else "")
            c = gpu_time.category(name, hlo_op, hlo_cat, mem)
            got = known[(name, hlo, hlo_cat, mem)] = (ops.get(name, hlo_op, c), c)
        s = float(round((ts - base_us) * 1e6))
        rows.append((s, s + float(round(dur * 1e6)), *got))
    dev.pending[line] = rows


def _keep_activity(dev: _Device, reader: Reader, where: str) -> None:
    """The activity lines' events of a device read from JSON into its arrays (the same line rule as XPlane)."""
    lines, dev.pending = dev.pending, {}
    names = sorted(lines)
    for i in _activity_lines(names):
        rows = lines[names[i]]
        if rows and _take(reader, len(rows), f"{where}/{names[i]}"):
            dev.lines.append(names[i])
            for arr, col in zip((dev.start, dev.end, dev.op, dev.cat), zip(*rows, strict=True), strict=True):
                arr.extend(col)


# --- which files ------------------------------------------------------------------------------------------
def _files(reader: Reader) -> list[Path]:
    """The profile files of the one run ``reader.path`` names: a file, or one directory's files (per host)."""
    p = reader.path
    if not p.is_dir():
        return [p]
    by_dir: dict[Path, list[Path]] = {}
    for f in _profile_files(p):
        by_dir.setdefault(f.parent, []).append(f)
    if not by_dir:
        reader.fail("no XLA profile here (*.xplane.pb, *.trace.json.gz)")
    if len(by_dir) > 1 and p not in by_dir:
        runs = "; ".join(f"{d.relative_to(p).as_posix()} ({len(fs)} file(s))" for d, fs in list(by_dir.items())[:10])
        reader.fail(f"{len(by_dir)} profile runs in subfolders, not one (each folder is one profiling session): "
                    f"{runs}. Load one folder, e.g. load_run({str(next(iter(by_dir)))!r})")
    home = p if p in by_dir else next(iter(by_dir))
    if len(by_dir) > 1:
        reader.note(f"{len(by_dir) - 1} other profile folder(s) below, not loaded (each is its own session)")
    files = by_dir[home]
    if any(f.name.endswith(_JSON_SUFFIXES) for f in files):  # jax.profiler's perfetto copy of a host's trace JSON
        files = [f for f in files if f.name != "perfetto_trace.json.gz"]
    pbs = [f for f in files if f.name.endswith(_PB_SUFFIX)]
    if pbs and len(pbs) < len(files):
        reader.note(f"{len(files) - len(pbs)} trace JSON file(s) beside the .xplane.pb file(s) not read: "
                    "XLA writes them from the same XSpace")
    return pbs or files


def _read(reader: Reader, files: list[Path], ops: gpu_time.Ops, options: Options) -> list[_Space]:
    pattern = re.compile(options.step_pattern) if options.step_pattern else None
    root = reader.path if len(files) > 1 else None
    out = []
    for f in files:
        sub = reader.for_file(f, root=root) if f != reader.path else reader
        is_pb = f.name.endswith(_PB_SUFFIX) or _plane_name_in(read_head(f)) is not None
        out.append(_read_space(sub, ops, pattern) if is_pb else _read_json(sub, ops, pattern))
    twice = sorted(h for h, n in Counter(s.host for s in out).items() if n > 1)
    if twice:
        names = ", ".join(s.path.name for s in out if s.host == twice[0])
        reader.fail(f"several files of host {twice[0]!r} ({names}): a profiling session writes one file per host, "
                    "so these are different sessions; load one file")
    return sorted(out, key=lambda s: s.host)


# --- steps ----------------------------------------------------------------------------------------------------
def _spans(marks: list[tuple], what: str, reader: Reader) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Step numbers, starts and ends (ps) from marks ``(number or None, start, end, ...)``: marks of one number
    joined (first start to last end); unnumbered ones numbered in time order."""
    got = gpu_time.step_spans(marks)
    if got.renumbered:
        reader.note(f"{what}: steps without a number (no step_num stat, name not a number) are numbered 0, 1, ... "
                    "in time order")
    if got.overlaps:
        reader.note(f"{what}: {got.overlaps} step span(s) overlap the previous one")
    return got.nums, got.ss, got.se


def _device_spans(sp: _Space, dev: _Device, reader: Reader) -> tuple[str, tuple] | None:
    """Which marks cut a device's time: its own ``Steps`` line, else its host's step events."""
    if dev.steps:
        return "a Steps line on the device plane", _spans(dev.steps, f"{sp.host} {dev.plane} Steps line", reader)
    if sp.steps:
        how = ("host events with a step_num stat (jax.profiler.StepTraceAnnotation)"
               if any(m[0] is not None for m in sp.steps) else "host events named as steps (step_pattern)")
        return how, _spans(sp.steps, f"{sp.host} host step events", reader)
    return None


# --- tables ---------------------------------------------------------------------------------------------------
@dataclass
class _Placed:
    """A device with its host, rank and times on the load's clock (ps, the host's shift added)."""

    space: _Space
    dev: _Device
    rank: int
    start: np.ndarray
    end: np.ndarray
    cat: np.ndarray
    op: np.ndarray
    shift: float  # the host's session start on the load's clock (ps)

    def intervals(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        return {c: (self.start[self.cat == i], self.end[self.cat == i]) for i, c in enumerate(_CATS)}


def _shifts(spaces: list[_Space], reader: Reader) -> tuple[list[float], int | None]:
    """Each host's session start on the load's clock (ps), and the earliest start (epoch ns) where known."""
    starts = [s.start_ns for s in spaces]
    if all(v is not None for v in starts):
        first = min(starts)  # type: ignore[type-var]
        return [float((v - first) * 1000) for v in starts], first  # type: ignore[operator]
    if len(spaces) > 1:
        reader.note("not every host states its session start (profile_start_time): hosts' times cannot be aligned, "
                    "each counts from its own start; cross-host timing is not to be trusted")
    return [0.0] * len(spaces), starts[0] if len(spaces) == 1 else None


def _place(spaces: list[_Space], shifts: list[float]) -> list[_Placed]:
    out, rank = [], 0
    for sp, shift in zip(spaces, shifts, strict=True):
        for dev in sorted(sp.devices, key=lambda d: d.ordinal):
            s = np.frombuffer(dev.start, dtype=np.float64) + shift
            e = np.frombuffer(dev.end, dtype=np.float64) + shift
            out.append(_Placed(sp, dev, rank, s, e, np.frombuffer(dev.cat, dtype=np.int8),
                               np.frombuffer(dev.op, dtype=np.int64), shift))
            rank += 1
    return out


def _device_table(placed: list[_Placed], t0: float) -> pd.DataFrame:
    """Per device with events: counts per category, busy (union), compute, comm, overlap, exposed comm, idle."""
    rows = []
    for p in placed:
        if len(p.start):
            tot, first, last = gpu_time.whole_span(p.intervals(), per_s=1e12)
            rows.append({"host": p.space.host, "device": p.dev.plane, "ordinal": p.dev.ordinal, "rank": p.rank,
                         "events": len(p.start), **{f"{c}_count": int((p.cat == i).sum()) for i, c in enumerate(_CATS)},
                         **tot, "first_s": (first - t0) * _PS, "last_s": (last - t0) * _PS,
                         "sum_s": float((p.end - p.start).sum()) * _PS, "lines": len(p.dev.lines)})
    return pd.DataFrame(rows)


def _ops_table(placed: list[_Placed], ops: gpu_time.Ops) -> pd.DataFrame:
    """Per event name and HLO op: category, count, summed / mean / longest seconds, devices it ran on."""
    have = [p for p in placed if len(p.start)]
    if not have:
        return ops.table(np.empty(0, np.int64), np.empty(0), np.empty(0, np.int64), op_column="hlo_op")
    return ops.table(np.concatenate([p.op for p in have]), np.concatenate([p.end - p.start for p in have]) * _PS,
                     np.concatenate([np.full(len(p.op), p.rank) for p in have]), op_column="hlo_op")


def _step_tables(placed: list[_Placed], t0: float, reader: Reader) -> tuple[pd.DataFrame, pd.DataFrame, list[str]]:
    """The step rows (per device and step), the per-step kernel table and which marks cut the steps."""
    parts, how = [], []
    for p in placed:
        got = _device_spans(p.space, p.dev, reader) if len(p.start) or p.dev.steps else None
        if got is None:
            continue
        how.append(got[0])
        sn, ss, se = got[1]
        ss, se = ss + p.shift, se + p.shift
        cols, cats, outside = gpu_time.step_table(ss, se, p.intervals() if len(p.start) else {}, per_s=1e12)
        parts.append((p.rank, sn, (ss - t0) * _PS, (se - t0) * _PS, cols, cats))
        if outside > 1e-6:
            reader.note(f"{p.space.host} {p.dev.plane}: {outside:.6f} s of device activity lies outside every step "
                        "(not counted in step rows)")
    return (*gpu_time.step_frames(parts), sorted(set(how)))


def _origin(placed: list[_Placed], spaces: list[_Space], shifts: list[float]) -> float:
    """The load's time 0 (ps): the first device event or step mark."""
    firsts = [float(p.start.min()) for p in placed if len(p.start)]
    firsts += [min(m[1] for m in p.dev.steps) + p.shift for p in placed if p.dev.steps]
    firsts += [min(m[1] for m in sp.steps) + sh for sp, sh in zip(spaces, shifts, strict=True) if sp.steps]
    return min(firsts) if firsts else 0.0


# --- facts ----------------------------------------------------------------------------------------------------
def _at(p: _Placed) -> str:
    """Where a fact about a device was read: ``<file>:device:GPU:0`` (no slash, so it shows whole)."""
    return f"{p.space.where}:{p.dev.plane.lstrip('/')}"


def _identified(stats: dict[str, Any]) -> tuple[str, str] | None:
    """The model a device plane's capability stats identify (``device_ids.csv``), and the text saying why."""
    vendor = str(stats.get("device_vendor") or "")
    major, minor, cores, mem = (stats.get(k) for k in ("compute_cap_major", "compute_cap_minor", "core_count",
                                                        "memory_size"))
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in (major, minor, cores, mem)):
        return None
    row = device_ids.identify(vendor, major, minor, cores, mem)  # type: ignore[arg-type]
    if row is None:
        return None
    return row.accelerator, (f'device plane stats: device_vendor "{stats.get("device_vendor")}", compute_cap '
                             f"{major}.{minor}, core_count {cores}, memory_size {mem / 2**30:.1f} GiB: a "
                             f"{row.accelerator} (the vendor's datasheet gives its compute units and memory)")


def _describe(stats: dict[str, Any]) -> str:
    keys = ("device_vendor", "compute_cap_major", "compute_cap_minor", "core_count", "memory_size", "clock_rate")
    said = [f"{k} {stats[k]}" for k in keys if stats.get(k) not in (None, "")]
    return ", ".join(said) or "no capability stats"


def _accelerator(out: Parsed, placed: list[_Placed], reader: Reader) -> None:
    """The accelerator: a name stat as printed, else the model the capability stats identify, else unknown."""
    used = [p for p in placed if len(p.start)] or placed
    named = sorted({str(p.dev.stats[k]).strip() for p in used for k in _NAME_STATS if p.dev.stats.get(k)})
    where = _at(used[0]) if used else reader.name
    if len(named) == 1:
        key = next(k for k in _NAME_STATS if used[0].dev.stats.get(k))
        out.fact("accelerator", named[0], where, f'device plane stat {key} "{named[0]}"')
        return
    found = {_identified(p.dev.stats) for p in used}
    if len(found) == 1 and None not in found:
        model, text = next(iter(found))  # type: ignore[misc]
        try:
            out.fact("accelerator", hardware.resolve(model).name, where, text)
            return
        except ValueError:
            pass
    seen = sorted({_describe(p.dev.stats) for p in used})
    planes = "; ".join(seen[:3]) or "no device plane"
    reader.note(InputRequest(f"accelerator unknown: the device planes name no device ({planes}), and these stats "
                             "identify no model for certain", ("accelerator",), "pass accelerator= to state it"))


def _facts(out: Parsed, spaces: list[_Space], placed: list[_Placed], reader: Reader) -> None:
    active = [p for p in placed if len(p.start)]
    listed = sum(1 for sp in spaces for n in sp.planes if _DEVICE_RE.match(n))
    if active:
        where = _at(active[0])
        text = (f"{len(active)} of the {listed} device planes listed carry events "
                f"({', '.join(p.dev.plane for p in active[:8])}{' ...' if len(active) > 8 else ''}); "
                "planes without events are not counted")
        out.fact("n_accelerators", len(active), where, text)
        out.fact("n_ranks", len(active), where, text)
    hosts = sorted({sp.host for sp in spaces})
    out.fact("n_nodes", len(hosts), spaces[0].where, f"{len(hosts)} host(s): {', '.join(hosts[:8])}")
    _accelerator(out, placed, reader)


# --- parse ----------------------------------------------------------------------------------------------------
def parse(reader: Reader, options: Options) -> Parsed:
    """Read an ``.xplane.pb``, XLA's trace JSON, or a folder of one profiling session's files (one per host)."""
    ops = gpu_time.Ops()
    spaces = _read(reader, _files(reader), ops, options)
    shifts, first_ns = _shifts(spaces, reader)
    placed = _place(spaces, shifts)
    if not placed:
        reader.fail(f"no device plane (/device:GPU|TPU|CUSTOM:N) in the profile; planes: "
                    f"{', '.join(sorted({n for sp in spaces for n in sp.planes})[:12]) or 'none'}")
    t0 = _origin(placed, spaces, shifts)
    out = Parsed(timing="exact", time_unit="ps")
    out.steps, step_kernels, how = _step_tables(placed, t0, reader)
    out.tables["device_events"] = _device_table(placed, t0)
    out.tables["ops"] = _ops_table(placed, ops)
    if len(step_kernels):
        out.tables["step_kernels"] = step_kernels
    else:
        reader.note("no step markers (no Steps line on a device plane, no host event with a step_num stat as "
                    "jax.profiler.StepTraceAnnotation writes"
                    + (", none named as step_pattern says" if options.step_pattern else "")
                    + "): the profile is not cut into steps and the Run has no step rows (none invented); "
                    "per-device totals are in tables['device_events']")
    for sp in spaces:
        if sp.untimed:
            reader.note(f"{sp.where}: {sp.untimed} aggregated event(s) (num_occurrences, no time) not counted")
    _facts(out, spaces, placed, reader)
    out.meta["name"] = _host_name(reader.path) if reader.path.is_file() else reader.path.name
    extra: dict[str, Any] = {
        "files": [str(sp.path) for sp in spaces], "hosts": [sp.host for sp in spaces],
        "device_planes": sorted({n for sp in spaces for n in sp.planes if _DEVICE_RE.match(n)}),
        "devices_with_events": [f"{p.space.host}:{p.dev.plane}" for p in placed if len(p.start)],
        "activity_lines": sorted({ln for p in placed for ln in p.dev.lines}),
        "steps_from": "; ".join(how) or None, "data_wait_from": None, "t0_ps": t0}
    if first_ns is not None:
        extra["t0_epoch_ns"] = first_ns + int(round(t0 / 1000))
        extra["t0_wallclock"] = rules.wallclock(extra["t0_epoch_ns"] / 1e9)
    out.extra.update(extra)
    return out


load = loader_for(NAME)
