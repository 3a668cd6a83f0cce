"""TensorBoard event files (as written by Megatron-LM), read without TensorFlow or TensorBoard.

The TFRecord framing and the protobuf wire format are :mod:`mfu_toolkit.io.protobuf`'s; this
module knows the few messages needed (``Event``, ``Summary``, ``Summary.Value``, ``TensorProto``).
Scalars come from ``simple_value`` or from one-element float/double/int tensors; text summaries
(Megatron writes its arguments as ``<arg>/text_summary``) from string tensors. Nothing is executed
or unpickled.

What it maps to a :class:`~mfu_toolkit.run.Run`:

- A directory's event files are launches of the job: files of one process (same host and pid
  in the name) are one launch, and each launch is an attempt, in time order.
- Event files in different directories are different runs, as TensorBoard shows them (restarts
  of one job write new files into the same directory). A directory that holds event files is
  loaded with its own files (run folders below it are named in a note, not merged); a folder
  whose event files all sit in one subfolder loads that subfolder; a folder with several run
  subfolders is a ``LoadError`` that lists them, like a Kineto folder of several jobs.
- ``iteration-time`` (seconds; Megatron's mean over the log interval) at step N, written at wall
  time T, gives the interval ending at T: ``interval_steps`` rows (one per step, each as long as
  the mean), ``logged`` on step N. ``meta.timing`` is ``"interval_mean"`` when the log interval
  (the ``log_interval`` option, else the ``log_interval`` argument, else the most common step
  gap) exceeds 1, else ``"duration_only"``. ``lm loss``, ``grad-norm``, ``learning-rate``,
  ``loss-scale``, ``batch-size`` (→ ``samples``) and ``throughput`` sit on the logged row; every
  scalar is kept in the ``scalars`` table.
- Bounds: an interval longer than :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` steps is never
  expanded row by row: the record stays one row (``interval_steps`` holds the count) and is
  counted under ``INTERVAL_TOO_LONG``. A step that is not a non-negative int64 is counted under
  ``BAD_STEP`` and its event skipped.
- Events per launch: ``init`` from the launch's first record to its first step; a launch that
  logged no step is an ``init`` event (died during setup) or, if it logged scalars, an ``other``
  event; between launches a ``failure`` event spans the gap from the last record of one to the
  first record of the next.
- Facts (from Megatron's arguments, each with its event file and record): ``world_size`` →
  ``n_accelerators`` (Megatron runs one GPU per rank), ``global_batch_size`` → ``global_batch``,
  ``seq_length`` → ``seq_len``, ``micro_batch_size`` → ``micro_batch``, ``fp8`` / ``bf16`` /
  ``fp16`` → ``dtype``, the ``*_parallel_size`` arguments → ``parallelism``. All text arguments
  go to ``meta.extra['args']``.
- Claims: the ``throughput`` scalar (Megatron's model TFLOP/s per GPU) → ``tflops_per_accelerator``.
- Damaged input: a half-written last record, a checksum mismatch or an unparsable protobuf is
  skipped and counted (line numbers in the report are record numbers within the file).
"""

from __future__ import annotations

import math
import re
import struct
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import protobuf, rules, timeline
from ..base import Claim, Parsed, loader_for
from ..protobuf import ProtoError, crc32c, masked_crc  # noqa: F401 (crc32c, masked_crc: re-exported)
from ..reading import Reader

NAME = "tensorboard"
MALFORMED_EVENT = "malformed Event protobuf"
NO_WALL_TIME = "event without a finite wall_time"
proto_fields = protobuf.fields  # the wire reader under the name this module gave it


@dataclass(frozen=True)
class Options:
    """What the TensorBoard format accepts besides the RunMeta keywords.

    - ``time_tag`` (default ``"iteration-time"``): the scalar that holds the mean step time in
      seconds over each log interval.
    - ``log_interval`` (default ``None``): steps per logged record; ``None`` takes Megatron's
      ``log_interval`` argument from the file, else the most common step gap.
    - ``verify_crc`` (default ``True``): check each record's CRC-32C; ``False`` reads records
      whose checksums are damaged but whose payloads are intact.
    """

    time_tag: str = "iteration-time"
    log_interval: int | None = None
    verify_crc: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.time_tag, str) or not self.time_tag:
            raise ValueError(f"time_tag must be a non-empty string; got {self.time_tag!r}")
        if self.log_interval is not None:
            n = _count(self.log_interval)
            if n is None:
                raise ValueError(f"log_interval must be a positive integer; got {self.log_interval!r}")
            object.__setattr__(self, "log_interval", n)
        object.__setattr__(self, "verify_crc", bool(self.verify_crc))


_NAME_RE = re.compile(r"tfevents\.(\d+)\.(.+?)(?:\.(\d+))?$")
_STEP_TAGS = {
    "lm loss": "loss",
    "grad-norm": "grad_norm",
    "learning-rate": "learning_rate",
    "loss-scale": "loss_scale",
    "batch-size": "batch_size",
    "throughput": "tflops_per_gpu",
}
_RATE_COLS = ("tflops_per_gpu",)  # interval means: on every step of the interval
_TEXT_SUFFIX = "/text_summary"
_PARALLEL_ARGS = (
    ("tensor_model_parallel_size", "tp"),
    ("pipeline_model_parallel_size", "pp"),
    ("context_parallel_size", "cp"),
    ("expert_model_parallel_size", "ep"),
    ("data_parallel_size", "dp"),
)


def _count(value: Any) -> int | None:
    """A positive count, or None (a digit string too long for an int64 is None, not an error)."""
    if isinstance(value, str) and len(value.strip()) > 20:
        return None
    return rules.as_count(value)


# --- the TensorBoard messages (field numbers of event.proto, summary.proto, tensor.proto) -----------------
_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_STRING, _DT_INT64 = 1, 2, 3, 7, 9
_CONTENT_FMT = {_DT_FLOAT: "f", _DT_DOUBLE: "d", _DT_INT32: "i", _DT_INT64: "q"}


def _tensor_numbers(num: int, wt: int, v: Any) -> list[float]:
    """The numbers one TensorProto field holds (float_val 5, double_val 6, int_val 7, int64_val 10)."""
    if num in (5, 6):
        fmt = "f" if num == 5 else "d"
        if wt == 2:
            return protobuf.packed(v, fmt)
        return [protobuf.fixed(v, fmt)] if wt == (5 if num == 5 else 1) else []
    if num in (7, 10) and wt == 0:  # int32/int64: a negative one is a ten-byte two's complement varint
        return [float(protobuf.signed(v))]
    if num in (7, 10) and wt == 2:
        return [float(protobuf.signed(x)) for x in protobuf.packed_varints(v)]
    return []


def _tensor_value(b: bytes) -> tuple[str, Any] | None:
    """('scalar', float) for a one-element numeric tensor, ('text', str) for a string tensor."""
    dtype = 0
    content = b""
    floats: list[float] = []
    strings: list[bytes] = []
    for num, wt, v in protobuf.fields(b):
        if num == 1 and wt == 0:
            dtype = v
        elif num == 4 and wt == 2:
            content = v
        elif num == 8 and wt == 2:
            strings.append(v)
        else:
            floats.extend(_tensor_numbers(num, wt, v))
    if dtype == _DT_STRING:
        return ("text", protobuf.string(strings[0])) if strings else None
    if dtype in _CONTENT_FMT or (dtype == 0 and floats):
        if content:
            fmt = _CONTENT_FMT.get(dtype)
            if fmt and len(content) == struct.calcsize(fmt):
                return ("scalar", float(protobuf.fixed(content, fmt)))
            return None
        if len(floats) == 1:
            return ("scalar", float(floats[0]))
    return None


def _summary_values(v: bytes) -> list[tuple[str, str, Any]]:
    out = []
    for snum, swt, sv in protobuf.fields(v):
        if snum != 1 or swt != 2:
            continue
        tag, value = "", None
        for vnum, vwt, vv in protobuf.fields(sv):
            if vnum == 1 and vwt == 2:
                tag = protobuf.string(vv)
            elif vnum == 2 and vwt == 5:
                value = ("scalar", float(protobuf.fixed(vv, "f")))
            elif vnum == 8 and vwt == 2 and value is None:
                value = _tensor_value(vv)
        if value is not None:
            out.append((tag, value[0], value[1]))
    return out


def parse_event(payload: bytes) -> dict[str, Any]:
    """An Event as a dict: wall_time, step (signed, as written), file_version, values [(tag, kind, value)]."""
    ev: dict[str, Any] = {"wall_time": math.nan, "step": 0, "file_version": None, "values": []}
    for num, wt, v in protobuf.fields(payload):
        if num == 1 and wt == 1:
            ev["wall_time"] = protobuf.fixed(v, "d")
        elif num == 2 and wt == 0:
            ev["step"] = protobuf.signed(v)
        elif num == 3 and wt == 2:
            ev["file_version"] = protobuf.string(v)
        elif num == 5 and wt == 2:
            ev["values"].extend(_summary_values(v))
    return ev


def _checked_event(reader: Reader, payload: bytes, rec_no: int) -> dict[str, Any] | None:
    """The record's Event, or None after counting why it cannot be used."""
    try:
        ev = parse_event(payload)
    except ProtoError as exc:
        reader.bad(MALFORMED_EVENT, line=rec_no, field="data", detail=str(exc))
        return None
    if not math.isfinite(ev["wall_time"]):
        reader.bad(NO_WALL_TIME, line=rec_no, field="wall_time")
        return None
    step = rules.as_step(ev["step"])
    if step is None:
        reader.bad(rules.BAD_STEP, line=rec_no, field="step", example=f"step {ev['step']}")
        return None
    ev["step"] = step
    ev["record"] = rec_no
    return ev


def read_events(reader: Reader, *, verify_crc: bool = True) -> list[dict[str, Any]]:
    """All readable events of the reader's file; damaged records are skipped and counted."""
    out = []
    for frame in protobuf.tfrecords(reader.bytes(), verify_crc=verify_crc):
        reader.report.lines_read += 1
        if frame.problem is not None:
            reader.bad(frame.problem, line=frame.number, field=frame.field)
        elif (ev := _checked_event(reader, frame.payload, frame.number)) is not None:
            out.append(ev)
    return out


# --- which files ------------------------------------------------------------------------------
def _run_dirs(path: Path) -> dict[Path, list[Path]]:
    """Event files under ``path`` by directory: each directory is one run (a file: its own)."""
    if path.is_file():
        return {path.parent: [path]}
    runs: dict[Path, list[Path]] = {}
    for f in sorted(path.rglob("*tfevents*")):
        if f.is_file():
            runs.setdefault(f.parent, []).append(f)
    return runs


def _describe_runs(root: Path, runs: dict[Path, list[Path]], limit: int = 10) -> str:
    """'sub/dir (N event files, first 2026-03-25T11:17:24+00:00)' for each run folder."""
    out = []
    for d, fs in list(runs.items())[:limit]:
        stamps = [int(m.group(1)) for f in fs if (m := _NAME_RE.search(f.name)) and len(m.group(1)) <= 20]
        when = f", first {rules.wallclock(min(stamps))}" if stamps else ""
        out.append(f"{d.relative_to(root).as_posix() or '.'} ({len(fs)} event files{when})")
    if len(runs) > limit:
        out.append(f"and {len(runs) - limit} more")
    return "; ".join(out)


def sniff(path: Path, head: bytes) -> float:
    """0.95 for an event file (valid TFRecord header) or a directory holding ``*tfevents*`` files."""
    p = Path(path)
    try:
        if p.is_dir():
            return 0.95 if any(f.is_file() for f in p.rglob("*tfevents*")) else 0.0
        if protobuf.is_tfrecord(head):
            return 0.95 if (b"brain.Event" in head[:200] or "tfevents" in p.name) else 0.7
        return 0.0
    except OSError:
        return 0.0


def _event_files(reader: Reader) -> list[Path]:
    """The event files of the one run ``reader.path`` names (see the module docstring)."""
    p = reader.path
    runs = _run_dirs(p) if p.exists() else {}
    if not runs:
        reader.fail("no TensorBoard event files (*tfevents*) found")
    if p.is_dir() and p not in runs and len(runs) > 1:
        n_other = sum(1 for f in p.rglob("*") if f.is_file() and "tfevents" not in f.name)
        reader.fail(
            f"{len(runs)} TensorBoard runs in subfolders, not one: event files in different folders are "
            f"different runs (restarts of one job write into one folder). Candidates: {_describe_runs(p, runs)}. "
            f"Load one folder, e.g. load_run({str(next(iter(runs)))!r})"
            + (f". The folder also holds {n_other} other file(s), not TensorBoard: load each log by its own path"
               if n_other else "")
        )
    home = p.parent if p.is_file() else (p if p in runs else next(iter(runs)))
    others = {d: fs for d, fs in runs.items() if d != home}
    if others:
        reader.note(f"{len(others)} other run folder(s) below, not loaded (each is its own run): "
                    f"{_describe_runs(p, others)}")
    return runs[home]


def _launch_key(f: Path) -> str:
    """host.pid from the file name: files of one process are one launch."""
    m = _NAME_RE.search(f.name)
    return m.group(2) if m else f.name


def _launches(reader: Reader, files: list[Path], verify_crc: bool) -> list[list[dict[str, Any]]]:
    """Each launch's events in wall-time order, launches in order of their first event."""
    root = reader.path if len(files) > 1 else None  # several files: each skip names its file
    groups: dict[str, list[dict[str, Any]]] = {}
    n_files = 0
    for f in files:
        sub = reader.for_file(f, root=root)  # strict errors name the event file, not the folder
        evs = read_events(sub, verify_crc=verify_crc)
        for e in evs:
            e["reader"] = sub
        if evs:
            n_files += 1
            groups.setdefault(_launch_key(f), []).extend(evs)
        else:
            reader.note(f"{f.name}: no readable events")
    if not groups:
        why = "; ".join(f"{n} × {r}" for r, n in reader.report.skipped.items())
        reader.fail(
            "no readable TensorBoard events in "
            + (f"{len(files)} file(s)" if reader.path.is_dir() else "the file")
            + (f" ({why})" if why else "")
        )
    launches = [sorted(evs, key=lambda e: e["wall_time"]) for evs in groups.values()]
    launches.sort(key=lambda evs: evs[0]["wall_time"])
    if n_files > len(launches):
        reader.note(f"{n_files} event files from {len(launches)} processes: files of one process merged")
    return launches


# --- records ----------------------------------------------------------------------------------
@dataclass
class _Records:
    """What the launches hold: arguments (with where each was read), scalars, timed steps."""

    args: dict[str, str]
    args_at: dict[str, str]
    scalars: list[dict[str, Any]]
    timed: list[dict[str, Any]]
    bounds: list[tuple[float, float, int]]  # first wall time, last wall time, scalars


def _timed_ok(e: dict[str, Any], value: float, tag: str, seen: set[int], last_t: float) -> bool:
    """Whether an ``iteration-time`` value may time its step; if not, it is counted."""
    reader = e["reader"]
    if not math.isfinite(value):
        reader.bad(rules.NON_FINITE_TIME, line=e["record"], field=tag, example=f"step {e['step']}: {value}", detail=tag)
    elif value < 0:
        reader.bad(rules.NEGATIVE_DURATION, line=e["record"], field=tag, example=f"step {e['step']}: {value}",
                   detail=tag)
    elif e["step"] in seen:
        reader.bad(rules.DUPLICATE, line=e["record"], field=tag, example=f"step {e['step']}",
                   detail=f"{tag} at one step")
    elif e["wall_time"] < last_t:
        reader.bad(rules.NON_MONOTONIC, line=e["record"], field="wall_time", detail="wall_time")
    else:
        return True
    return False


def _records(launches: list[list[dict[str, Any]]], time_tag: str) -> _Records:
    out = _Records({}, {}, [], [], [])
    for a, evs in enumerate(launches):
        n_scalar = 0
        launch_args: dict[str, tuple[str, str]] = {}
        seen: set[int] = set()
        last_t = -math.inf
        for e in evs:
            for tag, kind, value in e["values"]:
                if kind == "text":
                    if tag.endswith(_TEXT_SUFFIX):
                        launch_args[tag[: -len(_TEXT_SUFFIX)]] = (value, f"{e['reader'].name}:{e['record']}")
                    continue
                n_scalar += 1
                out.scalars.append({"attempt": a, "step": e["step"], "tag": tag, "value": value,
                                    "wall_s": e["wall_time"], "_where": (e["reader"].name, e["record"])})
                if tag != time_tag or not _timed_ok(e, value, time_tag, seen, last_t):
                    continue
                last_t = e["wall_time"]
                seen.add(e["step"])
                out.timed.append({"attempt": a, "step": e["step"], "end": e["wall_time"], "dur": value,
                                  "reader": e["reader"], "record": e["record"]})
        if launch_args:
            out.args = {k: v for k, (v, _) in launch_args.items()}
            out.args_at = {k: w for k, (_, w) in launch_args.items()}
        out.bounds.append((evs[0]["wall_time"], evs[-1]["wall_time"], n_scalar))
    out.timed.sort(key=lambda r: (r["attempt"], r["step"]))
    return out


def _log_interval(rec: _Records, options: Options) -> int:
    """The option, else Megatron's ``log_interval`` argument, else the most common step gap."""
    if options.log_interval is not None:
        return options.log_interval
    stated = _count(rec.args.get("log_interval", ""))
    if stated is not None:
        return stated
    t = rec.timed
    gaps = Counter(b["step"] - a["step"] for a, b in zip(t, t[1:], strict=False) if a["attempt"] == b["attempt"])
    if not gaps:
        return 1
    top = max(gaps.values())
    return max(1, min(g for g, c in gaps.items() if c == top))


# --- steps ------------------------------------------------------------------------------------
def _interval_lengths(timed: list[dict[str, Any]], log_interval: int) -> np.ndarray:
    """Steps each record's interval covers; one that is too long is counted and kept as one row."""
    n = np.ones(len(timed), np.int64)
    prev: dict[str, Any] | None = None
    for i, r in enumerate(timed):
        gap = r["step"] - prev["step"] if prev is not None and prev["attempt"] == r["attempt"] else r["step"]
        k = min(max(1, gap), log_interval)
        n[i] = k
        if not rules.interval_ok(k):
            r["reader"].bad(rules.INTERVAL_TOO_LONG, line=r["record"], field="step",
                            example=f"step {r['step']}: {k:,} steps since the previous record")
        prev = r
    return n


def _step_columns(reader: Reader, timed: list[dict[str, Any]], point: dict[tuple[int, int, str], float],
                  log_interval: int) -> dict[str, np.ndarray]:
    """One row per step of each record's interval (one row for an interval too long to expand)."""
    n = _interval_lengths(timed, log_interval)
    rows = timeline.within_budget(np.where(n <= rules.MAX_LOG_INTERVAL, n, 1), reader)
    end = np.array([r["end"] for r in timed], float)
    dur = np.array([r["dur"] for r in timed], float)
    # each row lasts the interval's mean, the last one ending at the record's wall time
    ex = timeline.expand(np.array([r["step"] for r in timed], np.int64), rows, rows, end - rows * dur,
                         place="duration", share=dur)
    cols: dict[str, np.ndarray] = {
        "attempt": np.array([r["attempt"] for r in timed], np.int64)[ex.record],
        "step": ex.step,
        "start_s": ex.start,
        "end_s": ex.start + ex.share,
        "interval_steps": n[ex.record],
        "logged": ex.logged,
    }
    for tag, col in _STEP_TAGS.items():
        vals = np.array([point.get((r["attempt"], r["step"], tag), math.nan) for r in timed], float)[ex.record]
        if col not in _RATE_COLS:
            vals[~ex.logged] = math.nan
        cols[col] = vals
    return cols


def _steps_frame(cols: dict[str, np.ndarray], t0: float) -> pd.DataFrame:
    steps = pd.DataFrame(cols)
    steps["start_s"] -= t0
    steps["end_s"] -= t0
    steps["rank"] = -1
    if len(steps):
        steps["samples"] = steps["batch_size"]
    keep = ("attempt", "step", "rank", "start_s", "end_s", "interval_steps", "logged")
    return steps[[c for c in steps.columns if c in keep or steps[c].notna().any()]]


# --- events -----------------------------------------------------------------------------------
def _launch_events(rec: _Records, cols: dict[str, np.ndarray], time_tag: str, reader: Reader) -> list[dict[str, Any]]:
    """init / other / failure events of each launch (absolute wall times)."""
    att = cols["attempt"]
    step_end = pd.Series(cols["end_s"]).groupby(att).max().to_dict() if len(att) else {}
    first_start = pd.Series(cols["start_s"]).groupby(att).first().to_dict() if len(att) else {}
    events: list[dict[str, Any]] = []
    ends: list[float] = []
    for a, (first, last, n_scalar) in enumerate(rec.bounds):
        ends.append(max(last, step_end.get(a, -math.inf)))
        if a in first_start:
            if first_start[a] > first:
                events.append({"kind": "init", "start_s": first, "end_s": first_start[a], "attempt": a,
                               "detail": f"launch {a}: first record to the first timed step"})
        elif n_scalar:
            events.append({"kind": "other", "start_s": first, "end_s": last, "attempt": a,
                           "detail": f"launch {a}: {n_scalar} scalars but no {time_tag}; time not attributable"})
        else:
            events.append({"kind": "init", "start_s": first, "end_s": last, "attempt": a,
                           "detail": f"launch {a}: ended during setup (no scalar logged)"})
        if a > 0:
            if first >= ends[a - 1]:
                events.append({"kind": "failure", "start_s": ends[a - 1], "end_s": first, "attempt": a - 1,
                               "detail": f"launch {a - 1} stopped; launch {a} started "
                                         f"{first - ends[a - 1]:.1f} s later"})
            else:
                reader.note(f"launch {a} starts before launch {a - 1} ends (overlapping processes)")
    if len(rec.bounds) > 1:
        reader.note(f"{len(rec.bounds)} launches (attempts); "
                    f"{sum(1 for b in rec.bounds if b[2] == 0)} logged no scalar")
    return events


def _step_notes(reader: Reader, cols: dict[str, np.ndarray], time_tag: str) -> None:
    if not len(cols["step"]):
        reader.note(f"no '{time_tag}' scalars (Megatron writes them with --log-timers-to-tensorboard): no step rows")
        return
    same = cols["attempt"][1:] == cols["attempt"][:-1]
    overlap = int(np.sum(same & (cols["start_s"][1:] < cols["end_s"][:-1] - 1e-6)))
    if overlap:
        reader.note(
            f"{overlap} steps start before the previous step ends: their {time_tag} covers more than "
            "the time since the previous log (e.g. the first timed iteration includes warm-up)"
        )


# --- facts and claims -------------------------------------------------------------------------
def _arg_facts(out: Parsed, rec: _Records) -> None:
    """What Megatron's arguments state about the job, each with its event file and record."""
    args, at = rec.args, rec.args_at
    for arg, name, cast in (("world_size", "n_accelerators", int), ("global_batch_size", "global_batch", float),
                            ("seq_length", "seq_len", int), ("micro_batch_size", "micro_batch", int)):
        n = _count(args.get(arg, ""))
        if n is not None:
            out.fact(name, cast(n), at[arg], f"{arg}: {args[arg]}")
    fp8 = args.get("fp8", "None").strip()
    for arg, dtype, on in (("fp8", "fp8", fp8 not in ("", "None", "False")),
                           ("bf16", "bf16", args.get("bf16") == "True"),
                           ("fp16", "fp16", args.get("fp16") == "True")):
        if on:
            out.fact("dtype", dtype, at[arg], f"{arg}: {args[arg]}")
            break
    par = {short: n for arg, short in _PARALLEL_ARGS if (n := _count(args.get(arg, ""))) is not None}
    if par:
        first = next(arg for arg, short in _PARALLEL_ARGS if short in par)
        text = ", ".join(f"{arg}: {args[arg]}" for arg, short in _PARALLEL_ARGS if short in par)
        out.fact("parallelism", par, at[first], text)


def _throughput_claim(out: Parsed, rec: _Records) -> None:
    thr = [s for s in rec.scalars if s["tag"] == "throughput"]
    if thr:
        name, record = thr[0]["_where"]
        out.claim(Claim.summarise(
            "tflops_per_accelerator", [s["value"] for s in thr], unit="TFLOP/s per GPU",
            counts="model FLOPs per GPU per second by Megatron's num_floating_point_operations estimate "
                   "(its 'throughput' scalar)",
            where=f"{name}:{record}",
        ))


# --- parse ------------------------------------------------------------------------------------
def parse(reader: Reader, options: Options) -> Parsed:
    """Read an event file or a directory of them; see the module docstring for the mapping."""
    launches = _launches(reader, _event_files(reader), options.verify_crc)
    rec = _records(launches, options.time_tag)
    log_interval = _log_interval(rec, options)
    point = {(s["attempt"], s["step"], s["tag"]): s["value"] for s in rec.scalars if s["tag"] in _STEP_TAGS}
    cols = _step_columns(reader, rec.timed, point, log_interval)
    _step_notes(reader, cols, options.time_tag)
    events = _launch_events(rec, cols, options.time_tag, reader)
    t0 = min([b[0] for b in rec.bounds] + ([float(cols["start_s"].min())] if len(cols["start_s"]) else []))
    for e in events:
        e["start_s"] -= t0
        e["end_s"] -= t0
    tables: dict[str, pd.DataFrame] = {}
    if rec.scalars:
        sc = pd.DataFrame(rec.scalars).drop(columns="_where")
        sc["wall_s"] = sc["wall_s"] - t0
        tables["scalars"] = sc
    out = Parsed(steps=_steps_frame(cols, t0), events=events, tables=tables,
                 timing="interval_mean" if log_interval > 1 else "duration_only", time_unit="s")
    _arg_facts(out, rec)
    _throughput_claim(out, rec)
    out.extra.update({
        "t0_epoch_s": t0,
        "t0_wallclock": rules.wallclock(t0),
        "log_interval": log_interval,
        "launches": [{"files": n, "first_s": f - t0, "last_s": la - t0, "scalars": s}
                     for (f, la, s), n in zip(rec.bounds, _files_per_launch(launches), strict=True)],
    })
    if rec.args:
        out.extra["args"] = rec.args
    return out


def _files_per_launch(launches: list[list[dict[str, Any]]]) -> list[int]:
    return [len({e["reader"].path for e in evs}) for evs in launches]


load = loader_for(NAME)
