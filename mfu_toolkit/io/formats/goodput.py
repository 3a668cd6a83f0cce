"""Job event logs in the format of Google's ml-goodput-measurement library, in and out.

That library's recorder writes small JSON payloads (to Cloud Logging), one per event, each
with ``job_name`` and one timestamp in POSIX seconds: ``job_start_time``, ``job_end_time``,
``step_count`` + ``step_start_time``, ``tpu_init_start_time``/``tpu_init_end_time``,
``training_prep_start_time``/``..._end_time``, ``data_loading_start_time``/``..._end_time``,
``custom_badput_event_type`` + ``custom_badput_event_start_time``/``..._end_time``; the
checkpoint logger adds ``event_type`` ``save`` (``checkpoint_manager_blocking_start_time``,
``checkpoint_manager_blocking_duration_secs``) and ``restore``/``emergency_restore``
(``checkpoint_manager_start_time``, ``checkpoint_manager_duration_secs``). This module reads
them as JSON lines (one payload per line), a JSON array, or Cloud Logging exports (payload under
``jsonPayload``), and :func:`write_goodput` writes a Run back as JSON lines.

Mapping to a :class:`~mfu_toolkit.run.Run` (the library's own reading, made explicit):

- each ``job_start_time`` after progress, or a step number seen again, starts a new attempt;
- a step runs from its ``step_start_time`` to the next step's start, or to the start of a
  blocking activity (init, synchronous data loading, custom badput, checkpoint save) that
  begins in between; the last step ends at ``job_end_time`` when the job completed. The last
  step before a restart has no end: the time from its start to the next ``job_start_time`` is a
  ``failure`` event (lost progress plus recovery, the library's disruption badput);
- TPU init and training preparation are ``init`` events, the first data loading after each
  start is ``data_load`` (later, asynchronous loading overlaps steps and goes only to the
  ``activities`` table, as the library excludes it), custom badput events are ``eval`` when
  their type says so, else ``other``; checkpoint save/restore are ``checkpoint_save`` /
  ``checkpoint_load``.

Records more than ``clock_tolerance_s`` earlier than one already read are skipped as
non-monotonic; a lone record far ahead of the records before and after it (a garbled time) is
the one skipped, not every record after it. The format states nothing about the hardware: the
only thing read into ``meta`` is the job name (``meta.name``).
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...run import LoadError, Run
from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader, parse_json

NAME = "goodput"
UNRECOGNISED_RECORD = "unrecognised goodput record (no known key)"


@dataclass(frozen=True)
class Options:
    """What the goodput format accepts besides the RunMeta keywords.

    ``job_name`` (default None): read only the records of this job (a log that holds several
    jobs is read whole, with a note naming them). ``clock_tolerance_s`` (default 1.0): a record
    more than this many seconds earlier than one already read is skipped as non-monotonic.
    """

    job_name: str | None = None
    clock_tolerance_s: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "clock_tolerance_s", rules.clock_tolerance(self.clock_tolerance_s))


_PAIRS = {
    "tpu_init": ("tpu_init_start_time", "tpu_init_end_time", "init"),
    "training_prep": ("training_prep_start_time", "training_prep_end_time", "init"),
    "data_loading": ("data_loading_start_time", "data_loading_end_time", "data_load"),
}
_KNOWN_KEYS = (
    b'"step_start_time"',
    b'"job_start_time"',
    b'"job_end_time"',
    b'"tpu_init_start_time"',
    b'"training_prep_start_time"',
    b'"data_loading_start_time"',
    b'"custom_badput_event_type"',
    b'"checkpoint_manager_blocking_start_time"',
)
_CHECKPOINT = {
    "save": ("checkpoint_manager_blocking_start_time", "checkpoint_manager_blocking_duration_secs", "checkpoint_save"),
    "restore": ("checkpoint_manager_start_time", "checkpoint_manager_duration_secs", "checkpoint_load"),
    "emergency_restore": ("checkpoint_manager_start_time", "checkpoint_manager_duration_secs", "checkpoint_load"),
}


def sniff(path: Path, head: bytes) -> float:
    """0.9 for JSON records with ``job_name`` and goodput timestamp keys."""
    if Path(path).is_dir() or not head:
        return 0.0
    if not _strip_head(head).startswith((b"{", b"[")):
        return 0.0
    hits = sum(1 for k in _KNOWN_KEYS if k in head)
    if hits and b'"job_name"' in head:
        return 0.9
    if hits >= 2:
        return 0.7
    return 0.0


def _text(value: Any) -> str:
    """A scalar as text (at most 200 characters); a list or object only by its type."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return str(value)[:200]
    return f"<{type(value).__name__}>"


def _brief(rec: dict[str, Any]) -> str:
    """A short, non-recursive description of a record for the report's examples."""
    keys = list(rec)
    return "{" + ", ".join(str(k)[:40] for k in keys[:8]) + (", ..." if len(keys) > 8 else "") + "}"


# --- reading the records ---------------------------------------------------------------------


def _strip_head(head: bytes) -> bytes:
    return (head[3:] if head.startswith(b"\xef\xbb\xbf") else head).lstrip()


def _array(reader: Reader) -> list[Any] | None:
    """The records of a JSON-array file; None when the file is JSON lines after all (its first
    line is damaged: it starts with ``[`` but the text is no array, and later lines are records)."""
    text = reader.text()
    arr, why, at = parse_json(text)
    if why is None and isinstance(arr, list):
        return arr
    if why is None:
        reader.fail("expected a JSON array of goodput records")
    if any(t.startswith("{") and t.endswith("}") for t in (line.strip() for line in text.splitlines()[1:])):
        reader.note("the first line starts with '[' but the file is no JSON array: read as JSON lines")
        return None
    reader.fail(f"not valid JSON: {rules.in_full(why)} (truncated or garbled?)", line=at)
    return None


def _payloads(reader: Reader) -> Iterator[tuple[int, Any]]:
    """``(line, value)`` per record: a JSON array (record numbers) or JSON lines."""
    if _strip_head(reader.head()).startswith(b"["):
        arr = _array(reader)
        if arr is not None:
            reader.report.lines_read += len(arr)
            reader.note("JSON array: line numbers are record numbers")
            yield from enumerate(arr, start=1)
            return
    for ln, text in reader.lines():
        s = text.strip()
        if not s:
            continue
        reader.report.lines_read += 1
        value, ok = reader.json(s, line=ln)
        if ok:
            yield ln, value


@dataclass
class _Records:
    """The job's records in log order, and what was passed over."""

    recs: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    names: dict[str, int] = field(default_factory=dict)
    other_jobs: int = 0


def _records(reader: Reader, options: Options) -> _Records:
    """Objects (Cloud Logging's ``jsonPayload`` unwrapped) of the wanted job, in time order."""
    out = _Records()
    want = options.job_name
    tol = options.clock_tolerance_s
    clock = rules.Clock(tol)
    last_timed: int | None = None  # index in out.recs of the last record with a time
    for line, rec in _payloads(reader):
        if isinstance(rec, dict) and isinstance(rec.get("jsonPayload"), dict):
            rec = rec["jsonPayload"]
        if not isinstance(rec, dict):
            reader.bad(rules.NOT_AN_OBJECT, line=line, example=str(type(rec).__name__))
            continue
        jn = rec.get("job_name")
        if jn is not None:
            jn = _text(jn)
            out.names[jn] = out.names.get(jn, 0) + 1
            if want is not None and jn != str(want):
                out.other_jobs += 1
                continue
        times = [t for k, v in rec.items()
                 if k.endswith("_time") and 0 <= (t := rules.as_number(v)) <= rules.MAX_EPOCH_S]
        if times:
            verdict = clock.check(min(times))
            if verdict == "late":
                reader.bad(rules.NON_MONOTONIC, line=line, field="time", example=_brief(rec),
                           detail=f"more than {tol:g} s before an earlier record")
                continue
            if verdict == "retract" and last_timed is not None:
                bad_line, _ = out.recs.pop(last_timed)
                reader.bad(rules.NON_MONOTONIC, line=bad_line, field="time",
                           detail="far ahead of the records before and after it")
            last_timed = len(out.recs)
        out.recs.append((line, rec))
    return out


# --- attempts ----------------------------------------------------------------------------------


@dataclass
class _Attempt:
    job_start: float | None
    steps: dict[int, float] = field(default_factory=dict)
    acts: list[dict[str, Any]] = field(default_factory=list)
    open: dict[str, tuple[float, int]] = field(default_factory=dict)
    end: float | None = None
    n: int = 0


class _Attempts:
    """The library's reading of the records: attempts of steps, activities and job start/end."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.all: list[_Attempt] = []
        self.cur: _Attempt | None = None

    def _new(self, start: float | None) -> _Attempt:
        self.cur = _Attempt(start)
        self.all.append(self.cur)
        return self.cur

    def time(self, rec: dict[str, Any], key: str, line: int) -> float | None:
        """A time (or duration) in seconds, or None after counting the record as bad."""
        v = rules.as_number(rec.get(key))
        if math.isnan(v):
            self.reader.bad(rules.NON_FINITE_TIME, line=line, field=key, example=_brief(rec), detail=key)
            return None
        if not 0 <= v <= rules.MAX_EPOCH_S:
            self.reader.bad(rules.VALUE_OUT_OF_RANGE, line=line, field=key, example=_brief(rec),
                            detail=f"{key} negative or after the year 9999")
            return None
        return v

    def feed(self, line: int, rec: dict[str, Any]) -> None:
        if "job_start_time" in rec:
            t = self.time(rec, "job_start_time", line)
            if t is not None:
                if self.cur is None or self.cur.n > 0:
                    self._new(t)
                else:
                    self.cur.job_start = t
            return
        cur = self.cur if self.cur is not None else self._new(None)
        if "step_start_time" in rec or "step_count" in rec:
            self._step_record(line, rec)
        elif "job_end_time" in rec:
            t = self.time(rec, "job_end_time", line)
            if t is not None:
                cur.end = t
                cur.n += 1
        elif any(k0 in rec or k1 in rec for k0, k1, _ in _PAIRS.values()):
            self._pair(line, rec)
        elif "custom_badput_event_type" in rec:
            self._custom(line, rec)
        elif rec.get("event_type") in _CHECKPOINT:
            self._checkpoint(line, rec)
        else:
            self.reader.bad(UNRECOGNISED_RECORD, line=line, example=_brief(rec))

    def _step_record(self, line: int, rec: dict[str, Any]) -> None:
        t = self.time(rec, "step_start_time", line)
        if t is None:
            return
        step = rules.as_step(rec.get("step_count"))
        if step is None:
            self.reader.bad(rules.BAD_STEP, line=line, field="step_count", example=_brief(rec), detail="step_count")
            return
        cur = self.cur
        if step in cur.steps:
            self.reader.note("a step number repeated without a job_start_time record: taken as a restart")
            cur = self._new(None)
        cur.steps[step] = t
        cur.n += 1

    def _close(self, key: str, t: float, line: int, field_: str, kind: str, what: str, label: str) -> None:
        """End the open interval ``key`` at ``t`` as an activity (or count the end as bad)."""
        started = self.cur.open.pop(key, None)
        if started is None:
            self.reader.bad(rules.END_WITHOUT_START, line=line, field=field_, detail=label)
        elif t < started[0]:
            self.reader.bad(rules.END_BEFORE_START, line=line, field=field_, detail=label)
        else:
            self.cur.acts.append({"kind": kind, "what": what, "start": started[0], "end": t})
            self.cur.n += 1

    def _pair(self, line: int, rec: dict[str, Any]) -> None:
        for kind, (k_start, k_end, ev_kind) in _PAIRS.items():
            if k_start in rec:
                t = self.time(rec, k_start, line)
                if t is not None:
                    self.cur.open[kind] = (t, line)
                return
            if k_end in rec:
                t = self.time(rec, k_end, line)
                if t is not None:
                    self._close(kind, t, line, k_end, ev_kind, kind, kind)
                return

    def _custom(self, line: int, rec: dict[str, Any]) -> None:
        typ = _text(rec.get("custom_badput_event_type"))
        key = "custom:" + typ.upper()
        if "custom_badput_event_start_time" in rec:
            t = self.time(rec, "custom_badput_event_start_time", line)
            if t is not None:
                self.cur.open[key] = (t, line)
        elif "custom_badput_event_end_time" in rec:
            t = self.time(rec, "custom_badput_event_end_time", line)
            if t is not None:
                kind = "eval" if "EVAL" in typ.upper() else "other"
                self._close(key, t, line, "custom_badput_event_end_time", kind, typ, "custom badput event")
        else:
            self.reader.bad(rules.MISSING_FIELD, line=line, field="custom_badput_event_type",
                            detail="custom_badput_event_start_time or _end_time")

    def _checkpoint(self, line: int, rec: dict[str, Any]) -> None:
        et = rec["event_type"]
        k_t, k_d, ev_kind = _CHECKPOINT[et]
        t = self.time(rec, k_t, line)
        d = self.time(rec, k_d, line) if t is not None else None
        if t is not None and d is not None:
            step = _text(rec.get("step", "?"))[:40]
            self.cur.acts.append({"kind": ev_kind, "what": f"{et} step {step}", "start": t, "end": t + d})
            self.cur.n += 1

    def close(self) -> list[_Attempt]:
        for a in self.all:
            for kind, (_, ln) in a.open.items():
                self.reader.bad(rules.START_WITHOUT_END, line=ln, field=kind, detail=kind)
        return [a for a in self.all if a.n > 0 or a.job_start is not None]


# --- steps and events ----------------------------------------------------------------------------


def _blocking(a: _Attempt, idx: int, activities: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The attempt's blocking activities in start order (all but later data loading), and how
    many later, asynchronous data-loading intervals there were; every activity is kept."""
    blocking = []
    seen_data = False
    n_async = 0
    for act in sorted(a.acts, key=lambda x: x["start"]):
        activities.append({"attempt": idx, **act})
        if act["kind"] == "data_load":
            if seen_data:
                n_async += 1
                continue  # asynchronous: overlaps steps, excluded like the library does
            seen_data = True
        blocking.append(act)
    return blocking, n_async


def _failure(attempts: list[_Attempt], idx: int, step: int, t: float) -> dict[str, Any] | None:
    """The failure from the last step start of attempt ``idx`` to the next attempt's first record."""
    nxt = attempts[idx + 1]
    later = [x for x in ([nxt.job_start] + list(nxt.steps.values()) + [x["start"] for x in nxt.acts]) if x is not None]
    if later and min(later) >= t:
        return {"kind": "failure", "start_s": t, "end_s": min(later), "attempt": idx,
                "detail": f"step {step} started; no progress recorded until the next job start (lost work + recovery)"}
    return None


def _attempt_rows(reader: Reader, attempts: list[_Attempt], idx: int, blocking: list[dict[str, Any]],
                  rows: list[dict[str, Any]], events: list[dict[str, Any]]) -> None:
    """Step rows of one attempt: each step ends at the next start, a blocking activity, or job end."""
    a = attempts[idx]
    order = sorted(a.steps.items(), key=lambda kv: kv[1])
    cuts = [b["start"] for b in blocking]  # sorted: blocking is in start order
    for i, (step, t) in enumerate(order):
        if i + 1 < len(order):
            end = order[i + 1][1]
        elif idx == len(attempts) - 1 and a.end is not None and a.end >= t:
            end = a.end
        else:
            if idx + 1 < len(attempts):
                fail = _failure(attempts, idx, step, t)
                if fail is not None:
                    events.append(fail)
            else:
                reader.note(f"attempt {idx}: last step {step} has no end (no job_end_time); not a step row")
            continue
        k = bisect.bisect_right(cuts, t)
        if k < len(cuts) and cuts[k] < end:
            end = cuts[k]
        rows.append({"attempt": idx, "step": step, "start_s": t, "end_s": end})


def _timeline(reader: Reader,
              attempts: list[_Attempt]) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """Step rows, events and the activities table (absolute times)."""
    rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    activities: list[dict[str, Any]] = []
    asynchronous: dict[int, int] = {}
    for idx, a in enumerate(attempts):
        blocking, n_async = _blocking(a, idx, activities)
        if n_async:
            asynchronous[idx] = n_async
        _attempt_rows(reader, attempts, idx, blocking, rows, events)
        for b in blocking:
            events.append({"kind": b["kind"], "start_s": b["start"], "end_s": b["end"], "attempt": idx,
                           "detail": b["what"]})
        if a.job_start is not None:
            kind = "restart" if idx > 0 else "other"
            events.append({"kind": kind, "start_s": a.job_start, "end_s": a.job_start, "attempt": idx,
                           "detail": "job_start_time"})
        if a.end is not None:
            events.append({"kind": "other", "start_s": a.end, "end_s": a.end, "attempt": idx, "detail": "job_end_time"})
    if len(asynchronous) == 1:
        ((idx, n),) = asynchronous.items()
        reader.note(f"attempt {idx}: {n} later data-loading intervals are asynchronous; activities table only")
    elif asynchronous:
        reader.note(f"{sum(asynchronous.values())} later data-loading intervals in {len(asynchronous)} attempts are "
                    "asynchronous; activities table only")
    return rows, events, activities


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a goodput event log; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the goodput loader reads one JSON(-lines) file")
    got = _records(reader, options)
    builder = _Attempts(reader)
    for line, rec in got.recs:
        builder.feed(line, rec)
    want = options.job_name
    if want is not None and got.other_jobs:
        reader.note(f"{got.other_jobs} records of other jobs than {want!r} ignored")
    if len(got.names) > 1 and want is None:
        reader.note(f"records of {len(got.names)} job names read together: {sorted(got.names)[:20]} "
                    "(pass job_name= to pick one)")
    attempts = builder.close()
    if not attempts:
        reader.fail("no goodput records (job/step/activity timestamps) found")
    rows, events, activities = _timeline(reader, attempts)
    times = [r["start_s"] for r in rows] + [e["start_s"] for e in events]
    if not times:
        reader.fail("no timed goodput records")
    t0 = min(times)
    for r in (*rows, *events):
        r["start_s"] -= t0
        r["end_s"] -= t0
    steps = pd.DataFrame(rows, columns=["attempt", "step", "start_s", "end_s"])
    steps["rank"] = -1
    out = Parsed(steps=steps, events=events, timing="exact", time_unit="epoch_s")
    if activities:
        act = pd.DataFrame(activities)
        act["start_s"] = act.pop("start") - t0
        act["end_s"] = act.pop("end") - t0
        out.tables["activities"] = act
    if len(got.names) == 1 or want is not None:
        out.meta["name"] = str(want) if want is not None else next(iter(got.names))
    out.extra.update({"t0_epoch_s": t0, "t0_wallclock": rules.wallclock(t0), "job_names": sorted(got.names)})
    return out


load = loader_for(NAME)


# --- export ---------------------------------------------------------------------------------------
class _Out:
    """The payloads being written, each kept with (time, attempt, order written) to sort by."""

    def __init__(self, name: str, base: float) -> None:
        self.name = name
        self.base = base
        self.attempt = 0
        self.recs: list[tuple[float, int, int, dict[str, Any]]] = []

    def add(self, t: float, payload: dict[str, Any]) -> None:
        self.recs.append((t, self.attempt, len(self.recs) + 1, {"job_name": self.name, **payload}))


def _event_payloads(out: _Out, e: pd.Series, t1: float, s_a: pd.DataFrame) -> None:
    """The records of one event (``t1``: its end, clamped): a start/end pair or a checkpoint record."""
    base = out.base
    t0, kind, detail = float(e["start_s"]), e["kind"], str(e["detail"])
    if kind == "init":
        what = _pair_key(kind, detail)
        out.add(base + t0, {f"{what}_start_time": base + t0})
        out.add(base + t1, {f"{what}_end_time": base + t1})
    elif kind == "data_load":
        out.add(base + t0, {"data_loading_start_time": base + t0})
        out.add(base + t1, {"data_loading_end_time": base + t1})
    elif kind in ("eval", "other") and t1 > t0:
        typ = _custom_type(kind, detail)
        out.add(base + t0, {"custom_badput_event_type": typ, "custom_badput_event_start_time": base + t0})
        out.add(base + t1, {"custom_badput_event_type": typ, "custom_badput_event_end_time": base + t1})
    elif kind == "checkpoint_save":
        prior = s_a[s_a["start_s"] <= t0]["step"]
        out.add(base + t0, {
            "step": int(prior.max()) if len(prior) else 0,
            "event_type": "save",
            "directory": "",
            "checkpoint_manager_blocking_start_time": base + t0,
            "checkpoint_manager_blocking_duration_secs": t1 - t0,
        })
    elif kind == "checkpoint_load":
        out.add(base + t0, {
            "step": _restored_step(s_a, t0, detail),
            "event_type": "restore",
            "directory": "",
            "checkpoint_manager_start_time": base + t0,
            "checkpoint_manager_duration_secs": t1 - t0,
        })


def _step_payloads(out: _Out, s_a: pd.DataFrame, e_a: pd.DataFrame, restarted: bool) -> None:
    """One ``step_start_time`` per step, and the interrupted step of an attempt that failed."""
    base = out.base
    per_step = s_a.groupby("step", sort=False)["start_s"].min().sort_values()
    for step, t in per_step.items():
        out.add(base + float(t), {"step_count": int(step), "step_start_time": base + float(t)})
    fail = e_a[e_a["kind"] == "failure"]
    if restarted and len(fail):
        t_fail = float(fail["start_s"].min())
        last = int(s_a["step"].max())
        if t_fail >= float(per_step.max()):
            m = _FAILED_STEP_RE.search(str(fail.loc[fail["start_s"].idxmin(), "detail"]))
            step = int(m.group(1)) if m and int(m.group(1)) > last else last + 1
            out.add(base + t_fail, {"step_count": step, "step_start_time": base + t_fail})


def goodput_records(run: Run, *, job_name: str | None = None, t0_epoch_s: float | None = None) -> list[dict[str, Any]]:
    """The goodput-library payloads that describe ``run`` (sorted by time).

    Steps become ``step_start_time`` records (per step, the earliest start over ranks); ``init``
    events become TPU-init (when their detail says ``tpu_init``) or training-preparation pairs,
    ``data_load`` data-loading pairs, ``eval``/``other`` (with a duration) custom badput pairs,
    ``checkpoint_save``/``checkpoint_load`` checkpoint-logger records (a save names the last step
    started before it, a restore the step it resumes from: one before the attempt's first step
    after it). Each attempt starts with a ``job_start_time``; the last attempt ends with
    ``job_end_time``. Times are POSIX seconds: ``t0_epoch_s`` (default
    ``run.meta.extra['t0_epoch_s']``, else 0) plus the Run's times.

    The format has no failure record: the library (and :func:`load`) take the last step start
    before a restart as the step the disruption interrupted, with no end. So an attempt that ends
    in a ``failure`` event gets one more ``step_start_time`` record at the failure's start, for
    the step number the failure's detail names (``step N started``, as :func:`load` writes it)
    or else the attempt's last step + 1. Read back, the attempt's steps keep their numbers and
    ends (the last one ends at the failure), and the failure starts where it did.

    Two intervals written as start/end pairs of one type (``init`` of one kind, ``data_load``,
    custom badput of one type) that overlap by more than float noise cannot be told apart when
    read, so they raise a ValueError naming both (kind, attempt, start-end) instead.
    """
    base = t0_epoch_s if t0_epoch_s is not None else rules.as_number(run.meta.extra.get("t0_epoch_s", 0.0))
    out = _Out(job_name or run.meta.name or "mfu_toolkit_run", 0.0 if math.isnan(base) else base)
    base = out.base
    st, ev, n_att = run.steps, run.events, run.n_attempts
    for a in range(n_att):
        out.attempt = a
        s_a = st[st["attempt"] == a]
        e_a = ev[ev["attempt"] == a]
        starts = list(s_a["start_s"]) + list(e_a[e_a["kind"] != "failure"]["start_s"])
        if not starts:
            continue
        restart = e_a[e_a["kind"] == "restart"]
        job_start = float(restart["start_s"].min()) if len(restart) else float(min(starts))
        out.add(base + job_start, {"job_start_time": base + job_start})
        e_a = e_a.sort_values(["start_s", "end_s"], kind="stable")
        ends = _clamped_ends(e_a)
        _check_pairs(e_a, ends, a)
        for (_, e), t1 in zip(e_a.iterrows(), ends, strict=True):
            _event_payloads(out, e, t1, s_a)
        if len(s_a):
            _step_payloads(out, s_a, e_a, a < n_att - 1)
        if a == n_att - 1:
            t_end = float(max(list(s_a["end_s"]) + list(e_a["end_s"])))
            out.add(base + t_end, {"job_end_time": base + t_end})
    # sorted by time, then attempt, then the order written (job start first, job end last)
    out.recs.sort(key=lambda r: r[:3])
    return [r[3] for r in out.recs]


# Float noise: an interval that runs past the next one's start by no more than this is back to back.
_NOISE_S = 1e-6


def _clamped_ends(events: pd.DataFrame) -> list[float]:
    """Each event's end, pulled back to a later event's start that it passes by float noise only.

    Back-to-back intervals computed by different sums (end 9885.353500000001, next start
    9885.3535) then meet exactly, so the end is written before the next start (records of equal
    time keep the order written) and the pair reads back as two intervals, not one unmatched end.
    """
    starts = sorted(float(t) for t in events["start_s"])
    out = []
    for t0, t1 in zip(events["start_s"].astype(float), events["end_s"].astype(float), strict=True):
        i = max(bisect.bisect_right(starts, t0), bisect.bisect_left(starts, t1 - _NOISE_S))
        out.append(starts[i] if i < len(starts) and starts[i] < t1 else t1)
    return out


def _custom_type(kind: str, detail: str) -> str:
    """The ``custom_badput_event_type`` an ``eval``/``other`` event is written with."""
    return "EVAL" if kind == "eval" else (detail or "OTHER")


def _pair_key(kind: str, detail: str) -> str | None:
    """What :func:`load` pairs an event's start and end records by; ``None``: not written as a pair."""
    if kind == "init":
        return "tpu_init" if "tpu_init" in detail else "training_prep"
    if kind == "data_load":
        return "data_loading"
    if kind in ("eval", "other"):
        return "custom:" + _custom_type(kind, detail).upper()
    return None


def _check_pairs(events: pd.DataFrame, ends: list[float], attempt: int) -> None:
    """Raise a ValueError naming two intervals of one record type that overlap (``events`` sorted
    by start; ``ends`` clamped): the format pairs each end with the latest start of its type, so
    they would read back as other intervals. Back to back (float noise included) is fine."""
    last: dict[str, tuple[float, float, str]] = {}
    for (_, e), t1 in zip(events.iterrows(), ends, strict=True):
        t0, kind, detail = float(e["start_s"]), str(e["kind"]), str(e["detail"])
        key = _pair_key(kind, detail)
        if key is None or (kind in ("eval", "other") and not t1 > t0):
            continue
        if key in last and t0 < last[key][1]:
            p0, p1, pk = last[key]
            raise ValueError(
                f"cannot write a goodput log: {pk} event {p0}-{p1} s and {kind} event {t0}-{t1} s of attempt "
                f"{attempt} overlap and are both {key!r} records; the format pairs each end with the latest "
                "start of its type, so they would read back as other intervals"
            )
        last[key] = (t0, t1, kind)


_FAILED_STEP_RE = re.compile(r"\bstep (\d+) started\b")
_STEP_RE = re.compile(r"\bstep (\d+)\b")


def _restored_step(s_a: pd.DataFrame, t: float, detail: str) -> int:
    """The step a restore at ``t`` resumes from: one before the first step started after it."""
    after = s_a[s_a["start_s"] >= t]["step"]
    if len(after):
        return max(int(after.min()) - 1, 0)
    m = _STEP_RE.search(detail)
    return int(m.group(1)) if m else 0


def write_goodput(run: Run, path: str | Path, *, job_name: str | None = None, t0_epoch_s: float | None = None) -> Path:
    """Write ``run`` as a goodput-library event log (JSON lines); see :func:`goodput_records`.

    Nothing is written when the Run cannot be expressed in the format (overlapping intervals of
    one record type: a ValueError names them).
    """
    p = Path(path)
    lines: Iterable[str] = (json.dumps(r) for r in goodput_records(run, job_name=job_name, t0_epoch_s=t0_epoch_s))
    try:
        p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as exc:
        raise LoadError(f"cannot write goodput log ({exc})", path=p) from None
    return p
