"""GPU goodput event logs of Google's AI-Hypercomputer resiliency library (``resiliency/goodput_measure``).

The library's ``GoodputLogger.log_event`` (``tracker.py``) writes one JSON object per line, keys in any order:
``timestamp`` (``datetime.now().isoformat()``: the host's local time, no UTC offset), ``job_name``,
``event_type`` and its fields. Its launcher logs ``job_started`` when a node's launcher starts (before the
rendezvous) and ``job_terminated`` when it exits, each with ``node_rank`` (a float in real logs: ``100.0``);
rank 0 of the trainer logs ``checkpoint_loaded`` after restoring (``step``: the step resumed from, 0 for a fresh
start) and ``checkpoint_saved`` after each save (``step``). ``user_scheduled``/``user_terminated`` come from its
command-line tracker. The file may be named ``.log``; the lines of many nodes interleave out of time order.

The library's calculator (``calculator.py``, ``GoodputCalculator.preprocess_events``, read at
AI-Hypercomputer/resiliency@ef69c85) sorts the job's events by time, then by the order ``user_scheduled``,
``job_started``, ``checkpoint_loaded``, ``checkpoint_saved``, ``user_terminated``, ``job_terminated``; keeps one
line of each run of consecutive ``job_started`` lines (and of ``job_terminated`` lines) with no other event
between them; counts the ``job_started`` runs as job starts; takes the total runtime from the first event to the
last; and never reads ``job_terminated`` otherwise. This module reads the events the same way, with its own code:

- **Attempts**: one per run of consecutive ``job_started`` lines (the library's rule; ``start_gap_s`` also cuts
  a run where two lines are further apart). In the 112-node log a run can hold several launches, each node once
  (a ``node_rank`` seen again): the ``starts`` table counts them, the attempts stay the library's.
- **Events** (seconds since the first line): the start lines are an ``init`` (attempt 0) or ``restart`` event
  from the first line to the last; when the attempt never loads nor saves a checkpoint, to its last line (a
  restart that made no progress). Each ``checkpoint_loaded`` is a ``checkpoint_load`` event from the attempt's
  last ``job_started`` line to it: the log marks only the load's end, so it holds the start-up too (an upper
  bound on the load). Each ``checkpoint_saved`` is a ``checkpoint_save`` event of no length (no start logged).
  A run of ``job_terminated`` lines is a ``failure`` event (launchers exited, the job started again) or, with no
  start after it, ``other`` (the job's end). ``user_scheduled`` is a ``queue`` event to the next line,
  ``user_terminated`` an ``other`` instant. Every ``detail`` names the step or the nodes.
- **Steps**: none are timed in the log, so none are made by default. With ``reference_step_s`` (the library's
  ``--reference-step-time``), the steps between an attempt's loaded checkpoint and its saves (and between two
  saves) are laid out at that many seconds each, the library's own assumption: back to back, each ending at or
  before the ``checkpoint_saved`` line of its step. An attempt whose steps do not fit after its load at that
  pace has its steps spread evenly between its checkpoints instead (noted). Steps after an attempt's last save
  are not in the log (lost with the attempt, in the gap before the next start).
- **Tables**: ``checkpoints`` (attempt, kind ``load``/``save``, step, time_s, n_nodes of the attempt, line) and
  ``starts`` (per attempt: first_s, last_s, lines, n_nodes, launches, terminated lines).
- **Facts**: ``n_nodes`` (distinct ``node_rank`` values of the ``job_started`` lines); ``meta.name`` the job name.

Timestamps are ISO 8601 (``values.timestamp``): a UTC offset is applied; a time without one (the library's own
output) is taken as UTC, i.e. every host's local clock on one reference, so differences are exact when the hosts
share a time zone and a synchronised clock (assumed; a log that mixes both forms is noted). Times are kept in
whole microseconds, so the runtime is exact. Every bad line (not JSON, not an object, no ``job_name`` while the
job has one, an unknown ``event_type``, a time that is no ISO 8601 date-time, a checkpoint without a whole
``step``) is counted with its line, or raises with ``strict=True``; a ``node_rank`` that is no count is left
missing and counted. Lines of other jobs are left out, with a note (the library picks the first event's job).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader
from ..values import number, timestamp

NAME = "gpu_goodput"
UNKNOWN_EVENT_TYPE = "unknown event_type"

# The library's event types, in its tie-break order (constant.py, EVENT_TYPE_ORDER).
ORDER: dict[str, int] = {"user_scheduled": 0, "job_started": 1, "checkpoint_loaded": 2, "checkpoint_saved": 3,
                         "user_terminated": 4, "job_terminated": 5}
_STEP_KINDS = ("checkpoint_loaded", "checkpoint_saved")


@dataclass(frozen=True)
class Options:
    """What the gpu_goodput format accepts besides the RunMeta keywords.

    ``job_name`` (default None: the job of the earliest line, the library's choice): read only this job.
    ``reference_step_s`` (default None: no step rows): lay out the steps between checkpoints at this many
    seconds each, the library's assumption (never guessed). ``start_gap_s`` (default None: the library's rule,
    a run of consecutive ``job_started`` lines is one start however long it lasts): also start a new attempt
    where two consecutive ``job_started`` lines are more than this many seconds apart. The 112-node log shows no
    gap that would separate launches: a late node joins up to 153 s after the one before it, while the next
    launch can follow within 52 s.
    """

    job_name: str | None = None
    reference_step_s: float | None = None
    start_gap_s: float | None = None

    def __post_init__(self) -> None:
        for name, positive in (("reference_step_s", True), ("start_gap_s", False)):
            raw = getattr(self, name)
            if raw is None:
                continue
            value = number(raw)
            if value is None or value < 0 or (positive and value == 0):
                raise ValueError(f"{name} must be a finite number of seconds {'> 0' if positive else '>= 0'}; "
                                 f"got {raw!r}")
            object.__setattr__(self, name, value)


def sniff(path: Path, head: bytes) -> float:
    """0.95 for JSON lines with ``event_type`` and ``timestamp`` keys, one of the library's event types and a
    ``job_name``; 0.6 without the job name."""
    if Path(path).is_dir() or not head:
        return 0.0
    h = (head[3:] if head.startswith(b"\xef\xbb\xbf") else head).lstrip()
    if not h.startswith(b"{") or b'"event_type"' not in h or b'"timestamp"' not in h:
        return 0.0
    if not any(b'"' + k.encode() + b'"' in h for k in ORDER):
        return 0.0
    return 0.95 if b'"job_name"' in h else 0.6


@dataclass(frozen=True)
class _Rec:
    """One event line: time in microseconds since the epoch, tie-break rank, line, type, step, node."""

    us: int
    order: int
    line: int
    kind: str
    step: int | None = None
    node: int | None = None


@dataclass
class _Read:
    recs: list[tuple[str | None, _Rec]] = field(default_factory=list)
    zoned: int = 0
    naive: int = 0


def _brief(d: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{str(k)[:30]}: {str(v)[:40]}" for k, v in list(d.items())[:6]) + "}"


def _record(reader: Reader, ln: int, d: dict[str, Any], got: _Read) -> _Rec | None:
    """The event of one JSON object, or None after counting the line as bad."""
    kind = d.get("event_type")
    if kind is None:
        reader.bad(rules.MISSING_FIELD, line=ln, field="event_type", example=_brief(d), detail="event_type")
        return None
    if not isinstance(kind, str) or kind not in ORDER:
        reader.bad(UNKNOWN_EVENT_TYPE, line=ln, field="event_type", example=str(kind)[:80])
        return None
    text = d.get("timestamp")
    t = timestamp(text)
    if t is None:
        why, detail = (rules.MISSING_FIELD, "timestamp") if text is None else (rules.NON_FINITE_TIME, "not ISO 8601")
        reader.bad(why, line=ln, field="timestamp", example=str(text)[:80], detail=detail)
        return None
    if timestamp(text, offset="required") is not None:
        got.zoned += 1
    else:
        got.naive += 1
    step = node = None
    if kind in _STEP_KINDS:
        step = rules.as_step(d["step"]) if "step" in d else None
        if step is None:
            why, detail = (rules.MISSING_FIELD, "step") if "step" not in d else (rules.BAD_STEP, None)
            reader.bad(why, line=ln, field="step", example=str(d.get("step"))[:80], detail=detail)
            return None
    elif "node_rank" in d:
        node = rules.as_step(d["node_rank"])
        if node is None:
            reader.bad(rules.NON_NUMERIC, line=ln, field="node_rank", example=str(d["node_rank"])[:80])
    return _Rec(round(t * 1_000_000), ORDER[kind], ln, kind, step, node)


def _read(reader: Reader) -> _Read:
    """Every line's event with its job name (None when the line names none)."""
    got = _Read()
    for ln, text in reader.lines():
        s = text.strip()
        if not s:
            continue
        reader.report.lines_read += 1
        d, ok = reader.json(s, line=ln)
        if not ok:
            continue
        if not isinstance(d, dict):
            reader.bad(rules.NOT_AN_OBJECT, line=ln, example=s[:120])
            continue
        rec = _record(reader, ln, d, got)
        if rec is not None:
            jn = d.get("job_name")
            got.recs.append((None if jn is None else str(jn)[:200], rec))
    return got


def _of_job(reader: Reader, got: _Read, want: str | None) -> tuple[list[_Rec], str | None]:
    """The chosen job's events in the library's order (time, event type, line) and the job's name."""
    if not got.recs:
        reader.fail("no goodput events (lines with event_type and timestamp) found")
    named = sorted(((r.us, r.order, r.line), jn) for jn, r in got.recs if jn is not None)
    job = want if want is not None else (named[0][1] if named else None)
    recs = [r for jn, r in got.recs if jn == job or job is None]
    others: dict[str, int] = {}
    for jn, r in got.recs:
        if job is not None and jn is None:
            reader.bad(rules.MISSING_FIELD, line=r.line, field="job_name", detail="job_name")
        elif jn != job and job is not None:
            others[jn] = others.get(jn, 0) + 1
    if others:
        reader.note(f"{sum(others.values())} lines of other jobs left out ({', '.join(sorted(others)[:10])}); "
                    f"read {job!r}" + ("" if want is not None else ", the earliest line's job (pass job_name=)"))
    if not recs:
        reader.fail(f"no events of job {job!r} (jobs in the file: {', '.join(sorted(others)[:10])})")
    recs.sort(key=lambda r: (r.us, r.order, r.line))
    return recs, job


# --- attempts -------------------------------------------------------------------------------------


@dataclass
class _Attempt:
    index: int
    starts: list[_Rec] = field(default_factory=list)
    loads: list[_Rec] = field(default_factory=list)
    saves: list[_Rec] = field(default_factory=list)
    terms: list[list[_Rec]] = field(default_factory=list)
    user: list[_Rec] = field(default_factory=list)

    def progress(self) -> bool:
        """Whether anything but user events was logged (a start line joins an attempt holding only those)."""
        return bool(self.starts or self.loads or self.saves or self.terms)

    def nodes(self) -> int:
        return len({r.node for r in self.starts if r.node is not None})

    def launches(self) -> int:
        """Launches in the start lines: a node_rank seen again opens the next one."""
        seen: set[int] = set()
        n = 1 if self.starts else 0
        for r in self.starts:
            if r.node is None:
                continue
            if r.node in seen:
                n, seen = n + 1, set()
            seen.add(r.node)
        return n

    def last_us(self) -> int:
        return max(r.us for r in (*self.starts, *self.loads, *self.saves, *self.user, *itertools.chain(*self.terms)))


def _attempts(recs: list[_Rec], gap_s: float | None) -> list[_Attempt]:
    """The library's grouping: a run of consecutive job_started lines opens an attempt (job_terminated
    runs are one burst each); ``gap_s`` also cuts a run of start lines further apart than that."""
    out: list[_Attempt] = []
    cur: _Attempt | None = None
    prev: _Rec | None = None
    gap_us = None if gap_s is None else gap_s * 1e6
    for r in recs:
        if r.kind == "job_started":
            joined = prev is not None and prev.kind == "job_started" and (gap_us is None or r.us - prev.us <= gap_us)
            if cur is None or (not joined and cur.progress()):
                cur = _Attempt(len(out))
                out.append(cur)
            cur.starts.append(r)
        else:
            if cur is None:
                cur = _Attempt(0)
                out.append(cur)
            if r.kind == "job_terminated":
                if prev is not None and prev.kind == "job_terminated":
                    cur.terms[-1].append(r)
                else:
                    cur.terms.append([r])
            elif r.kind == "checkpoint_loaded":
                cur.loads.append(r)
            elif r.kind == "checkpoint_saved":
                cur.saves.append(r)
            else:
                cur.user.append(r)
        prev = r
    return out


def _event(kind: str, a: int, t0: int, begin: int, end: int, detail: str) -> dict[str, Any]:
    return {"kind": kind, "start_s": (begin - t0) / 1e6, "end_s": (end - t0) / 1e6, "attempt": a, "rank": -1,
            "detail": detail}


def _start_event(a: _Attempt, t0: int) -> dict[str, Any] | None:
    """The start lines as one init/restart event (to the attempt's last line when it made no progress)."""
    if not a.starts:
        return None
    idle = not a.loads and not a.saves
    end = a.last_us() if idle else a.starts[-1].us
    launches = a.launches()
    detail = (f"job_started on {a.nodes()} nodes ({len(a.starts)} lines, {launches} launch"
              f"{'es' if launches != 1 else ''}; lines {a.starts[0].line}-{a.starts[-1].line})")
    if idle:
        detail += "; no checkpoint loaded or saved: no progress"
    return _event("restart" if a.index else "init", a.index, t0, a.starts[0].us, end, detail)


def _attempt_events(a: _Attempt, t0: int, last: bool, nxt: dict[int, int]) -> list[dict[str, Any]]:
    """The events of one attempt (see the module docstring)."""
    out = [e for e in (_start_event(a, t0),) if e is not None]
    for r in a.loads:
        begin = max((s.us for s in a.starts if s.us <= r.us), default=r.us)
        out.append(_event("checkpoint_load", a.index, t0, begin, r.us,
                          f"step {r.step} loaded (checkpoint_loaded, line {r.line}); from the last job_started line: "
                          "start-up and load, the log marks only the load's end"))
    for r in a.saves:
        out.append(_event("checkpoint_save", a.index, t0, r.us, r.us,
                          f"step {r.step} saved (checkpoint_saved, line {r.line}); its start is not logged"))
    for burst in a.terms:
        nodes = len({r.node for r in burst if r.node is not None})
        what = "the job's end" if last else "launchers exited, the job started again"
        out.append(_event("other" if last else "failure", a.index, t0, burst[0].us, burst[-1].us,
                          f"job_terminated on {nodes} nodes ({len(burst)} lines from line {burst[0].line}): {what}"))
    for r in a.user:
        if r.kind == "user_scheduled":
            end = nxt.get(r.line, r.us)
            out.append(_event("queue", a.index, t0, r.us, end, f"user_scheduled (line {r.line})"))
        else:
            out.append(_event("other", a.index, t0, r.us, r.us, f"user_terminated (line {r.line})"))
    return out


# --- steps at the reference step time -------------------------------------------------------------


Interval = tuple[int, int, int, int, int]  # t_lo, t_hi (µs), step_lo, step_hi, the start of its chain (µs)


def _intervals(a: _Attempt) -> tuple[list[Interval], int, int]:
    """The pairs of checkpoints whose steps ran between them (a load or save, then a save of a later step), how
    many saves have no earlier checkpoint in the attempt, and how many saves repeat or go below the step before."""
    marks = sorted((*a.loads, *a.saves), key=lambda r: (r.us, r.order, r.line))
    out: list[Interval] = []
    prev: _Rec | None = None
    chain = unplaced = behind = 0
    for r in marks:
        if r.kind == "checkpoint_loaded":
            prev, chain = r, r.us
        elif prev is None:
            unplaced += 1
            prev, chain = r, r.us
        elif r.step > prev.step:
            out.append((prev.us, r.us, prev.step, r.step, chain))
            prev = r
        else:
            behind += 1
    return out, unplaced, behind


def _layout(iv: list[Interval], ref_us: float) -> list[tuple[float, float]]:
    """Per interval ``(end_us, per_step_us)``: back to back at ``ref_us`` each, every step ending at or before its
    save (the latest first); where a chain's steps would start before its first checkpoint, every interval of the
    attempt spread evenly between its two checkpoints instead."""
    out: list[tuple[float, float]] = []
    limit = math.inf
    for _, t_hi, s_lo, s_hi, chain in reversed(iv):
        end = min(float(t_hi), limit)
        limit = end - (s_hi - s_lo) * ref_us
        if limit < chain:
            return [(float(t_hi), (t_hi - t_lo) / (s_hi - s_lo)) for t_lo, t_hi, s_lo, s_hi, _ in iv]
        out.append((end, ref_us))
    return out[::-1]


def _steps(reader: Reader, attempts: list[_Attempt], ref_s: float, t0: int) -> pd.DataFrame:
    """One row per step between checkpoints, each ``ref_s`` long (evenly spread where that does not fit); none
    past the load's row budget or with more than ``rules.MAX_LOG_INTERVAL`` steps between two checkpoints."""
    cols: dict[str, list[np.ndarray]] = {"attempt": [], "step": [], "start_s": [], "end_s": []}
    found = [(a, *_intervals(a)) for a in attempts]
    sizes = [x[3] - x[2] for _, iv, _, _ in found for x in iv]
    unplaced, behind = sum(x[2] for x in found), sum(x[3] for x in found)
    if sizes and (max(sizes) > rules.MAX_LOG_INTERVAL or not rules.take_rows(sum(sizes))):
        reader.note(f"no step rows: {sum(sizes):,} steps between checkpoints (up to {max(sizes):,} between two) are "
                    f"too many to lay out one row each (at most {rules.MAX_LOG_INTERVAL:,} between two, and the "
                    "load's row budget)")
        found = []
    even = []
    for a, iv, _, _ in found:
        lay = _layout(iv, ref_s * 1e6)
        even += [a.index] if any(per != ref_s * 1e6 for _, per in lay) else []
        for (_, _, s_lo, s_hi, _), (end, per) in zip(iv, lay, strict=True):
            ends = (end - t0 - np.arange(s_hi - s_lo - 1, -1, -1, dtype=float) * per) / 1e6
            cols["attempt"].append(np.full(len(ends), a.index, dtype=np.int64))
            cols["step"].append(np.arange(s_lo + 1, s_hi + 1, dtype=np.int64))
            cols["start_s"].append(ends - per / 1e6)
            cols["end_s"].append(ends)
    rows = pd.DataFrame({k: np.concatenate(v) if v else np.zeros(0, np.int64 if k in ("attempt", "step") else float)
                         for k, v in cols.items()})
    rows.insert(2, "rank", -1)
    if len(rows):
        reader.note(f"{len(rows):,} steps between loaded and saved checkpoints laid out at reference_step_s = "
                    f"{ref_s:g} s each: the library's assumption, not a measurement; each ends at or before its "
                    "checkpoint_saved line")
    if even:
        reader.note(f"attempts {even[:10]}: their steps do not fit after their checkpoint at {ref_s:g} s each (they "
                    "ran faster); spread evenly between their checkpoints instead")
    if unplaced:
        reader.note(f"{unplaced} attempts save before any checkpoint load: the steps before their first save are "
                    "not laid out (the step they started from is not logged)")
    if behind:
        reader.note(f"{behind} checkpoint_saved lines name a step not above the checkpoint before them in their "
                    "attempt: no steps laid out for them")
    return rows


# --- parse ----------------------------------------------------------------------------------------


def _tables(attempts: list[_Attempt], t0: int) -> dict[str, pd.DataFrame]:
    ck = [{"attempt": a.index, "kind": "load" if r.kind == "checkpoint_loaded" else "save", "step": r.step,
           "time_s": (r.us - t0) / 1e6, "n_nodes": a.nodes(), "line": r.line}
          for a in attempts for r in sorted((*a.loads, *a.saves), key=lambda r: (r.us, r.order, r.line))]
    st = [{"attempt": a.index, "first_s": (a.starts[0].us - t0) / 1e6, "last_s": (a.starts[-1].us - t0) / 1e6,
           "lines": len(a.starts), "n_nodes": a.nodes(), "launches": a.launches(),
           "terminated": sum(len(b) for b in a.terms)} for a in attempts if a.starts]
    cols = {"checkpoints": ["attempt", "kind", "step", "time_s", "n_nodes", "line"],
            "starts": ["attempt", "first_s", "last_s", "lines", "n_nodes", "launches", "terminated"]}
    return {"checkpoints": pd.DataFrame(ck, columns=cols["checkpoints"]),
            "starts": pd.DataFrame(st, columns=cols["starts"])}


def _notes(reader: Reader, got: _Read, recs: list[_Rec], attempts: list[_Attempt]) -> None:
    in_file = np.array([r.us for r in sorted(recs, key=lambda r: r.line)], dtype=np.int64)
    back = int((in_file[1:] < np.maximum.accumulate(in_file)[:-1]).sum()) if len(in_file) else 0
    if back:
        reader.note(f"{back} lines are out of time order in the file (per-node writers interleave): read in time "
                    "order, as the library's calculator sorts them")
    if got.zoned and got.naive:
        reader.note(f"{got.zoned} timestamps carry a UTC offset and {got.naive} do not: those without are taken as "
                    "UTC, so they are off by the hosts' zone if that is not UTC")
    n_lines = sum(len(a.starts) for a in attempts)
    if n_lines:
        launches = sum(a.launches() for a in attempts)
        reader.note(f"{sum(1 for a in attempts if a.starts)} job starts from {n_lines:,} job_started lines (a run of "
                    f"consecutive job_started lines is one start, the library's rule); {launches} launches counting "
                    "a node_rank seen again as the next one (tables['starts'])")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a resiliency-library goodput event log; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the gpu_goodput loader reads one JSON-lines file")
    got = _read(reader)
    recs, job = _of_job(reader, got, options.job_name)
    attempts = _attempts(recs, options.start_gap_s)
    t0 = recs[0].us
    started = [i for i, a in enumerate(attempts) if a.starts]
    nxt = {r.line: recs[i + 1].us for i, r in enumerate(recs[:-1]) if r.kind == "user_scheduled"}
    events: list[dict[str, Any]] = []
    for a in attempts:
        events += _attempt_events(a, t0, not started or started[-1] <= a.index, nxt)
    _notes(reader, got, recs, attempts)
    out = Parsed(events=pd.DataFrame(events), timing="exact", time_unit="epoch_s", tables=_tables(attempts, t0))
    if options.reference_step_s is not None:
        out.steps = _steps(reader, attempts, options.reference_step_s, t0)
        out.timing = "duration_only"
    else:
        reader.note("no step rows: the log times no step (pass reference_step_s= to lay out the steps between "
                    "checkpoints at that many seconds each, the library's assumption)")
    nodes = sorted({r.node for r in recs if r.kind == "job_started" and r.node is not None})
    if nodes:
        line = min(r.line for r in recs if r.kind == "job_started" and r.node is not None)
        out.fact("n_nodes", len(nodes), f"{reader.name}:{line}",
                 f"{len(nodes)} distinct node_rank values in job_started lines ({nodes[0]}..{nodes[-1]})")
    if job is not None:
        out.meta["name"] = job
    out.extra.update({"t0_epoch_s": t0 / 1e6, "t0_wallclock": rules.wallclock(t0 / 1e6), "job_name": job,
                      "reference_step_s": options.reference_step_s})
    return out


load = loader_for(NAME)
