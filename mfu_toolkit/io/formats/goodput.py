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
"""

from __future__ import annotations

import bisect
import json
import math
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ...run import LoadError, Run
from .._build import finish, num, split_kwargs, wallclock
from .._common import Reader, open_bytes

NAME = "goodput"

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


def sniff(path: Path, head: bytes) -> float:
    """0.9 for JSON records with ``job_name`` and goodput timestamp keys."""
    if Path(path).is_dir() or not head:
        return 0.0
    s = head.lstrip()
    if not s.startswith((b"{", b"[")):
        return 0.0
    hits = sum(1 for k in _KNOWN_KEYS if k in head)
    if hits and b'"job_name"' in head:
        return 0.9
    if hits >= 2:
        return 0.7
    return 0.0


def _records(reader: Reader, text: str) -> list[tuple[int, Any]]:
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            arr = json.loads(text)
        except json.JSONDecodeError as exc:
            reader.fail(f"not valid JSON ({exc.msg}; truncated or garbled?)", line=exc.lineno)
            raise
        if not isinstance(arr, list):
            reader.fail("expected a JSON array of goodput records")
        reader.report.lines_read += len(arr)
        reader.report.note("JSON array: line numbers are record numbers")
        return list(enumerate(arr, start=1))
    out = []
    for i, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        reader.report.lines_read += 1
        try:
            out.append((i, json.loads(s)))
        except ValueError:
            reader.bad("malformed JSON (truncated or garbled line)", line=i, example=s)
    return out


def _time(reader: Reader, rec: dict[str, Any], key: str, line: int) -> float | None:
    v = num(rec.get(key))
    if math.isnan(v) or v < 0:
        reader.bad(f"{key} is missing, not a number or negative", line=line, field=key, example=json.dumps(rec)[:200])
        return None
    return v


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Load a goodput event log; see the module docstring for the mapping."""
    opts, overrides = split_kwargs(kwargs, ("job_name", "clock_tolerance_s"), fmt=NAME)
    tol = float(opts.get("clock_tolerance_s", 1.0))
    p = Path(path)
    reader = Reader(p, NAME, strict=strict)
    rep = reader.report
    if p.is_dir():
        reader.fail("is a directory; the goodput loader reads one JSON(-lines) file")
    text = open_bytes(p).decode("utf-8", errors="replace")
    if not text.strip():
        reader.fail("empty file: nothing to load")
    want = opts.get("job_name")
    names: dict[str, int] = {}
    others = 0

    attempts: list[dict[str, Any]] = []

    def new_attempt(start: float | None) -> dict[str, Any]:
        a = {"job_start": start, "steps": {}, "acts": [], "open": {}, "end": None, "n": 0}
        attempts.append(a)
        return a

    cur: dict[str, Any] | None = None
    t_max = -math.inf
    for line, rec in _records(reader, text):
        if isinstance(rec, dict) and isinstance(rec.get("jsonPayload"), dict):
            rec = rec["jsonPayload"]
        if not isinstance(rec, dict):
            reader.bad("record is not a JSON object", line=line, example=str(rec)[:200])
            continue
        jn = rec.get("job_name")
        if jn is not None:
            names[str(jn)] = names.get(str(jn), 0) + 1
            if want is not None and str(jn) != str(want):
                others += 1
                continue
        times = [num(v) for k, v in rec.items() if k.endswith("_time") and not isinstance(v, bool)]
        times = [t for t in times if not math.isnan(t)]
        if times:
            t_rec = min(times)
            if t_rec < t_max - tol:
                reader.bad("non-monotonic timestamp (earlier than a record already read)", line=line, field="time", example=json.dumps(rec)[:200])
                continue
            t_max = max(t_max, t_rec)

        if "job_start_time" in rec:
            t = _time(reader, rec, "job_start_time", line)
            if t is None:
                continue
            if cur is None or cur["n"] > 0:
                cur = new_attempt(t)
            else:
                cur["job_start"] = t
            continue
        if cur is None:
            cur = new_attempt(None)
        if "step_start_time" in rec or "step_count" in rec:
            t = _time(reader, rec, "step_start_time", line)
            step = num(rec.get("step_count"))
            if t is None:
                continue
            if math.isnan(step) or step != int(step) or step < 0:
                reader.bad("step_count is missing or not a non-negative integer", line=line, field="step_count", example=json.dumps(rec)[:200])
                continue
            step = int(step)
            if step in cur["steps"]:
                rep.note("a step number repeated without a job_start_time record: taken as a restart")
                cur = new_attempt(None)
            cur["steps"][step] = t
            cur["n"] += 1
            continue
        if "job_end_time" in rec:
            t = _time(reader, rec, "job_end_time", line)
            if t is not None:
                cur["end"] = t
                cur["n"] += 1
            continue
        handled = False
        for kind, (k_start, k_end, ev_kind) in _PAIRS.items():
            if k_start in rec:
                t = _time(reader, rec, k_start, line)
                if t is not None:
                    cur["open"][kind] = (t, line)
                handled = True
                break
            if k_end in rec:
                t = _time(reader, rec, k_end, line)
                if t is not None:
                    started = cur["open"].pop(kind, None)
                    if started is None:
                        reader.bad(f"{k_end} without {k_start}", line=line, field=k_end)
                    elif t < started[0]:
                        reader.bad(f"{k_end} before its {k_start}", line=line, field=k_end)
                    else:
                        cur["acts"].append({"kind": ev_kind, "what": kind, "start": started[0], "end": t})
                        cur["n"] += 1
                handled = True
                break
        if handled:
            continue
        if "custom_badput_event_type" in rec:
            typ = str(rec.get("custom_badput_event_type"))
            key = "custom:" + typ.upper()
            if "custom_badput_event_start_time" in rec:
                t = _time(reader, rec, "custom_badput_event_start_time", line)
                if t is not None:
                    cur["open"][key] = (t, line)
            elif "custom_badput_event_end_time" in rec:
                t = _time(reader, rec, "custom_badput_event_end_time", line)
                started = cur["open"].pop(key, None) if t is not None else None
                if t is not None and started is None:
                    reader.bad("custom_badput_event_end_time without a start", line=line, field="custom_badput_event_end_time")
                elif t is not None and t < started[0]:
                    reader.bad("custom badput event ends before it starts", line=line, field="custom_badput_event_end_time")
                elif t is not None:
                    kind = "eval" if "EVAL" in typ.upper() else "other"
                    cur["acts"].append({"kind": kind, "what": typ, "start": started[0], "end": t})
                    cur["n"] += 1
            else:
                reader.bad("custom badput record without a start or end time", line=line, field="custom_badput_event_type")
            continue
        et = rec.get("event_type")
        if et in ("save", "restore", "emergency_restore"):
            if et == "save":
                k_t, k_d, ev_kind = "checkpoint_manager_blocking_start_time", "checkpoint_manager_blocking_duration_secs", "checkpoint_save"
            else:
                k_t, k_d, ev_kind = "checkpoint_manager_start_time", "checkpoint_manager_duration_secs", "checkpoint_load"
            t = _time(reader, rec, k_t, line)
            d = _time(reader, rec, k_d, line) if t is not None else None
            if t is not None and d is not None:
                cur["acts"].append({"kind": ev_kind, "what": f"{et} step {rec.get('step', '?')}", "start": t, "end": t + d})
                cur["n"] += 1
            continue
        others += 1
        reader.bad("unrecognised goodput record (no known key)", line=line, example=json.dumps(rec)[:200])
    if want is not None and others:
        rep.note(f"{others} records of other jobs than {want!r} ignored")
    if len(names) > 1 and want is None:
        rep.note(f"records of {len(names)} job names read together: {sorted(names)} (pass job_name= to pick one)")
    for a in attempts:
        for kind, (_, ln) in a["open"].items():
            reader.bad(f"{kind} start without an end", line=ln, field=kind)
    attempts = [a for a in attempts if a["n"] > 0 or a["job_start"] is not None]
    if not attempts:
        reader.fail("no goodput records (job/step/activity timestamps) found")

    # --- steps and events ----------------------------------------------------------------------
    rows: list[dict[str, Any]] = []
    events: list[dict[str, Any]] = []
    activities: list[dict[str, Any]] = []
    for idx, a in enumerate(attempts):
        order = sorted(a["steps"].items(), key=lambda kv: kv[1])
        blocking = []
        seen_data = False
        for act in sorted(a["acts"], key=lambda x: x["start"]):
            activities.append({"attempt": idx, **act})
            if act["kind"] == "data_load":
                if seen_data:
                    continue  # asynchronous: overlaps steps, excluded like the library does
                seen_data = True
            blocking.append(act)
        n_async = sum(1 for act in a["acts"] if act["kind"] == "data_load") - (1 if seen_data else 0)
        if n_async:
            rep.note(f"attempt {idx}: {n_async} later data-loading intervals are asynchronous; activities table only")
        for i, (step, t) in enumerate(order):
            if i + 1 < len(order):
                end = order[i + 1][1]
            elif idx == len(attempts) - 1 and a["end"] is not None and a["end"] >= t:
                end = a["end"]
            else:
                nxt = attempts[idx + 1] if idx + 1 < len(attempts) else None
                if nxt is not None:
                    later = [x for x in ([nxt["job_start"]] + list(nxt["steps"].values()) + [x["start"] for x in nxt["acts"]]) if x is not None]
                    if later and min(later) >= t:
                        events.append({"kind": "failure", "start_s": t, "end_s": min(later), "attempt": idx, "detail": f"step {step} started; no progress recorded until the next job start (lost work + recovery)"})
                else:
                    rep.note(f"attempt {idx}: last step {step} has no end (no job_end_time); not a step row")
                continue
            cut = [b["start"] for b in blocking if t < b["start"] < end]
            rows.append({"attempt": idx, "step": step, "start_s": t, "end_s": min([end, *cut])})
        for b in blocking:
            events.append({"kind": b["kind"], "start_s": b["start"], "end_s": b["end"], "attempt": idx, "detail": b["what"]})
        if a["job_start"] is not None:
            kind = "restart" if idx > 0 else "other"
            events.append({"kind": kind, "start_s": a["job_start"], "end_s": a["job_start"], "attempt": idx, "detail": "job_start_time"})
        if a["end"] is not None:
            events.append({"kind": "other", "start_s": a["end"], "end_s": a["end"], "attempt": idx, "detail": "job_end_time"})
    times = [r["start_s"] for r in rows] + [e["start_s"] for e in events]
    if not times:
        reader.fail("no timed goodput records")
    t0 = min(times)
    for r in rows:
        r["start_s"] -= t0
        r["end_s"] -= t0
    for e in events:
        e["start_s"] -= t0
        e["end_s"] -= t0
    steps = pd.DataFrame(rows, columns=["attempt", "step", "start_s", "end_s"])
    steps["rank"] = -1
    tables = {}
    if activities:
        act = pd.DataFrame(activities)
        act["start_s"] = act.pop("start") - t0
        act["end_s"] = act.pop("end") - t0
        tables["activities"] = act
    found: dict[str, Any] = {}
    if len(names) == 1 or want is not None:
        found["name"] = str(want) if want is not None else next(iter(names))
    extra = {"t0_epoch_s": t0, "t0_wallclock": wallclock(t0), "job_names": sorted(names)}
    return finish(
        reader,
        fmt=NAME,
        steps=steps,
        events=events,
        tables=tables,
        timing="exact",
        time_unit="epoch_s",
        found=found,
        overrides=overrides,
        extra=extra,
    )


# --- export ---------------------------------------------------------------------------------------
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
    name = job_name or run.meta.name or "mfu_toolkit_run"
    base = t0_epoch_s if t0_epoch_s is not None else num(run.meta.extra.get("t0_epoch_s", 0.0))
    base = 0.0 if math.isnan(base) else base
    # sorted by time, then attempt, then the order written (job start first, job end last)
    recs: list[tuple[float, int, int, dict[str, Any]]] = []
    seq = 0
    a = 0

    def add(t: float, payload: dict[str, Any]) -> None:
        nonlocal seq
        seq += 1
        recs.append((t, a, seq, {"job_name": name, **payload}))

    st = run.steps
    ev = run.events
    n_att = run.n_attempts
    for a in range(n_att):
        s_a = st[st["attempt"] == a]
        e_a = ev[ev["attempt"] == a]
        starts = list(s_a["start_s"]) + list(e_a[e_a["kind"] != "failure"]["start_s"])
        if not starts:
            continue
        restart = e_a[e_a["kind"] == "restart"]
        job_start = float(restart["start_s"].min()) if len(restart) else float(min(starts))
        add(base + job_start, {"job_start_time": base + job_start})
        e_a = e_a.sort_values(["start_s", "end_s"], kind="stable")
        ends = _clamped_ends(e_a)
        _check_pairs(e_a, ends, a)
        for (_, e), t1 in zip(e_a.iterrows(), ends, strict=True):
            t0, kind, detail = float(e["start_s"]), e["kind"], str(e["detail"])
            if kind == "init":
                what = _pair_key(kind, detail)
                add(base + t0, {f"{what}_start_time": base + t0})
                add(base + t1, {f"{what}_end_time": base + t1})
            elif kind == "data_load":
                add(base + t0, {"data_loading_start_time": base + t0})
                add(base + t1, {"data_loading_end_time": base + t1})
            elif kind in ("eval", "other") and t1 > t0:
                typ = _custom_type(kind, detail)
                add(base + t0, {"custom_badput_event_type": typ, "custom_badput_event_start_time": base + t0})
                add(base + t1, {"custom_badput_event_type": typ, "custom_badput_event_end_time": base + t1})
            elif kind == "checkpoint_save":
                prior = s_a[s_a["start_s"] <= t0]["step"]
                add(base + t0, {
                    "step": int(prior.max()) if len(prior) else 0,
                    "event_type": "save",
                    "directory": "",
                    "checkpoint_manager_blocking_start_time": base + t0,
                    "checkpoint_manager_blocking_duration_secs": t1 - t0,
                })
            elif kind == "checkpoint_load":
                add(base + t0, {
                    "step": _restored_step(s_a, t0, detail),
                    "event_type": "restore",
                    "directory": "",
                    "checkpoint_manager_start_time": base + t0,
                    "checkpoint_manager_duration_secs": t1 - t0,
                })
        if len(s_a):
            per_step = s_a.groupby("step", sort=False)["start_s"].min().sort_values()
            for step, t in per_step.items():
                add(base + float(t), {"step_count": int(step), "step_start_time": base + float(t)})
            fail = e_a[e_a["kind"] == "failure"]
            if a < n_att - 1 and len(fail):
                t_fail = float(fail["start_s"].min())
                last = int(s_a["step"].max())
                if t_fail >= float(per_step.max()):
                    m = _FAILED_STEP_RE.search(str(fail.loc[fail["start_s"].idxmin(), "detail"]))
                    step = int(m.group(1)) if m and int(m.group(1)) > last else last + 1
                    add(base + t_fail, {"step_count": step, "step_start_time": base + t_fail})
        if a == n_att - 1:
            ends = list(s_a["end_s"]) + list(e_a["end_s"])
            t_end = float(max(ends))
            add(base + t_end, {"job_end_time": base + t_end})
    recs.sort(key=lambda r: r[:3])
    return [r[3] for r in recs]


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
