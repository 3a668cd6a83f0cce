"""A folder written by :class:`mfu_toolkit.record.StepRecorder` (or any tool that writes its format).

The format (documented in the README, "Record your own job"): one JSON-lines file per rank and
attempt, ``rank{R:05d}.attempt{A:03d}.jsonl``. Line 1 is the header
``{"format": "mfu_toolkit.record", "version": 1, "rank", "world_size", "attempt", "t0_unix", ...}``;
then ``{"step", "start", "end"[, "samples", "tokens", "data_wait", "comm"]}`` steps,
``{"event", "start", "end"[, "detail"]}`` events, ``{"gpu_step", "gpu_s"}`` GPU times and a final
``{"close"[, "wall"]}``. Times are seconds since the header's ``t0_unix``, on the writer's
monotonic clock. Optional clock fields (files without them read as before): the header's
``mono0`` (the monotonic clock at ``t0_unix``), ``boot_id`` (files of one host and boot share
that clock) and ``heartbeat_s``; ``{"beat", "wall"}`` records, a monotonic and a wall-clock
reading taken together, at most ``heartbeat_s`` apart while records come; and
``{"dropped", "start", "end"[, "wall"]}``, records the writer lost to write errors.

How it becomes a Run:

- every file is one rank of one attempt; the attempts named in the headers, in order, are the
  Run's attempts 0, 1, ... (renumbered, with a note, when the headers skip numbers); a launch
  into a folder that held records is the next attempt, so restarts, redone steps and the
  downtime between attempts come out of the analysis unaided;
- times become seconds since the earliest record (``meta.extra["t0_wallclock"]`` says when);
- clocks: each file's times are placed by its header's ``t0_unix``, except that files of one
  host and boot are placed on their shared monotonic clock (a wall clock set back between
  attempts), and, within an attempt, a rank whose steps end more than 3 median step durations
  (at least 1 s) from the other ranks' same steps (median over the shared steps) is moved onto
  their common timeline: a host clock that disagrees. Each move is noted; so are beats that
  disagree with the header, ranks that share no step (not checkable) and an attempt that begins
  before the one it follows with nothing to align them by;
- bounds: records are written as they end, so no time may lie beyond the file's close record,
  its last beat + ``heartbeat_s``, or (with neither) its modification time + 1 day; a step or
  event beyond is counted and left out (a finite but absurd ``"end": 1e308``), an absurd
  ``data_wait``/``comm`` is left missing; ``dropped`` records are noted with their counts;
- ``compute_s = end − start − data_wait − comm`` (at least 0), ``comm_s``, ``data_wait_s``;
  ``gpu_s`` where CUDA events timed the step;
- a half-written last line (a process killed mid-write) is counted under ``HALF_WRITTEN`` and
  skipped; every other bad record is counted under its shared reason with its file and line; a
  file without a usable header is counted once and left out; a file without the close record
  is noted (its process was killed or crashed), as are ranks missing from an attempt and two
  files of one rank that overlap in time (two processes that recorded as the same rank);
- events: the ranks' events of one kind and attempt that overlap in time are one job-level event
  (rank -1 when several ranks recorded it; a checkpoint every rank waits in counts once); each
  rank's own events stay in ``tables["rank_events"]``;
- facts: ``n_ranks`` and ``n_accelerators`` (the last attempt's world size), ``framework`` and
  ``accelerator`` when the header names them, each with ``file:1``; ``global_batch`` when every
  step's samples, summed over its ranks, are one number.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...run import EVENT_KINDS
from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader, parse_json

NAME = "recorded"
_FORMAT = "mfu_toolkit.record"
_VERSION = 1
_NAME_PATTERN = r"^rank(\d{1,9})\.attempt(\d{1,9})\.jsonl$"
_SCAN = 10_000  # folder entries a sniff looks at
_UNKNOWN_RECORD = "record of no known kind (step, event, gpu_step, beat, dropped, close)"
_NOT_HEADER = "file without a record header on line 1 (left out)"
_CLOCK_IGNORED = "value out of range in the header (clock field ignored)"
_SHOWN = 10  # ranks named in one note


@dataclass(frozen=True)
class Options:
    """The recorded format takes no options besides the RunMeta keywords."""


def _is_header(line: bytes | str) -> bool:
    value, why, _ = parse_json(line)
    return why is None and isinstance(value, dict) and value.get("format") == _FORMAT


def sniff(path: Path, head: bytes) -> float:
    """1.0 (certain) for a record file or a folder holding one: its header names the format."""
    import re

    p = Path(path)
    try:
        if not p.is_dir():
            return 1.0 if _is_header(head.split(b"\n", 1)[0]) else 0.0
        with os.scandir(p) as it:
            for i, entry in enumerate(it):
                if i >= _SCAN:
                    break
                if re.match(_NAME_PATTERN, entry.name) and entry.is_file():
                    with open(entry.path, "rb") as f:
                        return 1.0 if _is_header(f.readline(65536)) else 0.5
    except OSError:
        return 0.0
    return 0.0


@dataclass
class _Table:
    """The records of all files, as columns."""

    steps: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in (
        "attempt", "step", "rank", "start_s", "end_s", "samples", "tokens", "data_wait_s", "comm_s", "gpu_s",
        "line")})
    events: list[dict[str, Any]] = field(default_factory=list)
    files: list[dict[str, Any]] = field(default_factory=list)  # one header summary per file read


def _files(reader: Reader) -> tuple[list[Path], Path | None]:
    import re

    p = reader.path
    if not p.is_dir():
        return [p], None
    names = sorted(n for n in os.listdir(p) if re.match(_NAME_PATTERN, n))
    others = len(os.listdir(p)) - len(names)
    if others:
        reader.note(f"{others} other entries in the folder are not record files and were not read")
    if not names:
        reader.fail("no rank*.attempt*.jsonl record files in this folder")
    return [p / n for n in names], p


def _header(sub: Reader, text: str) -> dict[str, Any] | None:
    """The header's fields, or None after counting the file as left out."""
    value, ok = sub.json(text, line=1)
    if not ok:
        return None
    if not isinstance(value, dict) or value.get("format") != _FORMAT:
        sub.bad(_NOT_HEADER, line=1, field="format", example=text[:120])
        return None
    out = {"rank": rules.as_step(value.get("rank")), "world_size": rules.as_count(value.get("world_size")),
           "attempt": rules.as_step(value.get("attempt")), "t0_unix": rules.as_number(value.get("t0_unix"))}
    for name, v in out.items():
        if v is None or (isinstance(v, float) and math.isnan(v)):
            why = rules.MISSING_FIELD if name not in value else rules.VALUE_OUT_OF_RANGE
            sub.bad(rules.FILE_LEFT_OUT, line=1, field=name, example=text[:120], detail=f"{why} in the header")
            return None
    if out["rank"] >= out["world_size"]:
        sub.bad(rules.FILE_LEFT_OUT, line=1, field="rank", example=text[:120],
                detail="rank in the header not below world_size")
        return None
    version = value.get("version")
    if version != _VERSION:
        sub.note(f"{sub.file or sub.path.name}: format version {version!r}; this reader knows {_VERSION} "
                 "(unknown fields ignored)")
    for key in ("framework", "accelerator", "gpu_timing", "restart_count", "host", "boot_id"):
        if isinstance(value.get(key), (str, int)) and not isinstance(value.get(key), bool):
            out[key] = value[key]
    for key in ("mono0", "heartbeat_s"):
        v = rules.as_number(value.get(key))
        if key in value and not v >= 0:
            sub.bad(_CLOCK_IGNORED, line=1, field=key, example=text[:120])
        elif v >= 0:
            out[key] = v
    return out


def _time(sub: Reader, rec: dict[str, Any], line: int, text: str) -> tuple[float, float] | None:
    start, end = rules.as_number(rec.get("start")), rules.as_number(rec.get("end"))
    if math.isnan(start) or math.isnan(end):
        bad = "start" if math.isnan(start) else "end"
        sub.bad(rules.NON_FINITE_TIME, line=line, field=bad, example=text)
        return None
    if end < start:
        sub.bad(rules.NEGATIVE_DURATION, line=line, field="end", example=text)
        return None
    return start, end


def _optional(sub: Reader, rec: dict[str, Any], key: str, line: int, text: str) -> float:
    """An optional non-negative number; a bad one is counted and left missing (record kept)."""
    if key not in rec or rec[key] is None:
        return math.nan
    v = rules.as_number(rec[key])
    if math.isnan(v):
        sub.bad(rules.NON_NUMERIC, line=line, field=key, example=text)
    elif v < 0:
        sub.bad(rules.VALUE_OUT_OF_RANGE, line=line, field=key, example=text)
        return math.nan
    return v


def _step(sub: Reader, rec: dict[str, Any], line: int, text: str, head: dict[str, Any], out: _Table,
          seen: set[int]) -> None:
    step = rules.as_step(rec.get("step"))
    if step is None:
        sub.bad(rules.BAD_STEP, line=line, field="step", example=text)
        return
    span = _time(sub, rec, line, text)
    if span is None:
        return
    if step in seen:
        sub.bad(rules.DUPLICATE, line=line, field="step", example=text)
        return
    seen.add(step)
    cols = out.steps  # times stay on the file's own clock until the files are aligned (_offsets)
    cols["attempt"].append(head["attempt"])
    cols["step"].append(step)
    cols["rank"].append(head["rank"])
    cols["line"].append(line)
    cols["start_s"].append(span[0])
    cols["end_s"].append(span[1])
    cols["samples"].append(_optional(sub, rec, "samples", line, text))
    cols["tokens"].append(_optional(sub, rec, "tokens", line, text))
    cols["data_wait_s"].append(_optional(sub, rec, "data_wait", line, text))
    cols["comm_s"].append(_optional(sub, rec, "comm", line, text))
    cols["gpu_s"].append(math.nan)


def _event(sub: Reader, rec: dict[str, Any], line: int, text: str, head: dict[str, Any], out: _Table) -> None:
    kind = rec.get("event")
    if kind not in EVENT_KINDS:
        sub.bad(rules.VALUE_OUT_OF_RANGE, line=line, field="event", example=text,
                detail=f"event kind not one of {', '.join(EVENT_KINDS)}")
        return
    span = _time(sub, rec, line, text)
    if span is None:
        return
    detail = rec.get("detail")
    out.events.append({"kind": kind, "start_s": span[0], "end_s": span[1], "attempt": head["attempt"],
                       "rank": head["rank"], "detail": detail if isinstance(detail, str) else "", "line": line})


def _records(sub: Reader) -> Any:
    """``(line, text, is_last)`` for each non-blank line after the header (one line of lookahead)."""
    held: tuple[int, str] | None = None
    for ln, text in sub.lines():
        if held is not None:
            yield held[0], held[1], False
        held = (ln, text) if text.strip() else None
    if held is not None:
        yield held[0], held[1], True  # text after the last line break: no newline ends it


def _clock_record(sub: Reader, rec: dict[str, Any], key: str, ln: int, text: str, state: dict[str, Any]) -> None:
    """A beat, a close or a dropped record: a monotonic time, with a wall-clock reading when given."""
    t = rules.as_number(rec.get(key) if key != "dropped" else rec.get("end"))
    wall = rules.as_number(rec["wall"]) if rec.get("wall") is not None else None
    if math.isnan(t) or (wall is not None and (math.isnan(wall) or wall < 0)):
        sub.bad(rules.NON_FINITE_TIME, line=ln, field=key if math.isnan(t) else "wall", example=text)
        return
    if key == "dropped":
        n = rules.as_count(rec.get("dropped"))
        if n is None:
            sub.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="dropped", example=text)
            return
        state["dropped"] += n
    state["clock"].append((ln, t, wall, key))
    if key == "close":
        state["closed"] = True


def _record(sub: Reader, rec: Any, ln: int, text: str, head: dict[str, Any], out: _Table,
            state: dict[str, Any]) -> None:
    """One parsed record after the header, by its kind."""
    if not isinstance(rec, dict):
        sub.bad(rules.NOT_AN_OBJECT, line=ln, example=text)
    elif "step" in rec:
        _step(sub, rec, ln, text, head, out, state["seen"])
    elif "event" in rec:
        _event(sub, rec, ln, text, head, out)
    elif "gpu_step" in rec:
        s, v = rules.as_step(rec.get("gpu_step")), rules.as_number(rec.get("gpu_s"))
        if s is None or math.isnan(v) or v < 0:
            sub.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="gpu_s" if s is not None else "gpu_step", example=text)
        else:
            state["gpu"][s] = v
    elif key := next((k for k in ("beat", "close", "dropped") if k in rec), None):
        _clock_record(sub, rec, key, ln, text, state)
    else:
        sub.bad(_UNKNOWN_RECORD, line=ln, example=text)


def _read_file(sub: Reader, out: _Table) -> None:
    head: dict[str, Any] | None = None
    state: dict[str, Any] = {"closed": False, "seen": set(), "gpu": {}, "dropped": 0, "clock": []}
    first_row, first_event = len(out.steps["step"]), len(out.events)
    for ln, text, last in _records(sub):
        sub.report.lines_read += 1
        if head is None:
            head = _header(sub, text) if ln == 1 else None
            if head is None:
                if ln != 1:
                    sub.bad(_NOT_HEADER, line=ln, field="format")
                return
            continue
        rec, why, _ = parse_json(text)
        if why is not None:
            sub.bad(rules.HALF_WRITTEN if last else why, line=ln, example=text[:160])
            continue
        _record(sub, rec, ln, text[:160], head, out, state)
    if head is None:
        return
    _bound(sub, head, state, out, first_row, first_event)
    if state["gpu"]:
        cols = out.steps
        for i in range(first_row, len(cols["step"])):
            cols["gpu_s"][i] = state["gpu"].get(cols["step"][i], math.nan)
    out.files.append({**head, "closed": state["closed"], "dropped": state["dropped"], "clock": state["clock"],
                      "file": sub.file or sub.path.name, "first_row": first_row,
                      "rows": len(out.steps["step"]) - first_row, "first_event": first_event,
                      "events": len(out.events) - first_event})


_DAY = 86_400.0
_CLOCK_TOL = 1.0  # seconds two clock readings may disagree before a clock counts as moved
_BEYOND = "time beyond what the file's clock records bound (left out)"
_BEYOND_KEPT = "duration beyond what the file's clock records bound (left missing, record kept)"


def _limit(sub: Reader, head: dict[str, Any], state: dict[str, Any]) -> tuple[float, str]:
    """The largest |time| a record of this file can have, and what sets it.

    Records are written as they end, so none ends after the file's close record, nor more than
    ``heartbeat_s`` after its last beat; a file without either is bounded by its modification
    time (+ 1 day for clocks that disagree with the file system's)."""
    try:
        m = max(sub.path.stat().st_mtime - head["t0_unix"], 0.0) + _DAY
    except OSError:
        m = math.inf
    clock = []
    for c in state["clock"]:
        if abs(c[1]) > m:
            sub.bad(_BEYOND, line=c[0], field=c[3], example=f"{c[3]}={c[1]!r}; bound ±{m:.6g} s (modification time)")
        else:
            clock.append(c)
    state["clock"] = clock
    closes = [c[1] for c in clock if c[3] == "close"]
    if closes:
        return max(closes) + _CLOCK_TOL, "the close record"
    if clock and "heartbeat_s" in head:
        return max(c[1] for c in clock) + head["heartbeat_s"] + _CLOCK_TOL, "the last beat + heartbeat_s"
    return m, "the file's modification time + 1 day"


def _bound(sub: Reader, head: dict[str, Any], state: dict[str, Any], out: _Table, first_row: int,
           first_event: int) -> None:
    """Refuse this file's records whose times lie beyond what its clock records allow (e.g. a
    finite but absurd ``"end": 1e308``), naming file, line and field."""
    lim, why = _limit(sub, head, state)
    cols = out.steps
    good = []
    for i in range(first_row, len(cols["step"])):
        for name, key in (("start", "start_s"), ("end", "end_s")):
            if abs(cols[key][i]) > lim:
                sub.bad(_BEYOND, line=cols["line"][i], field=name,
                        example=f"{name}={cols[key][i]!r}; bound ±{lim:.6g} s from {why}")
                break
        else:
            good.append(i)
            for name, key in (("data_wait", "data_wait_s"), ("comm", "comm_s")):
                if cols[key][i] > 2 * lim:
                    sub.bad(_BEYOND_KEPT, line=cols["line"][i], field=name,
                            example=f"{name}={cols[key][i]!r}; bound {2 * lim:.6g} s from {why}")
                    cols[key][i] = math.nan
    if len(good) < len(cols["step"]) - first_row:
        for c in cols.values():
            c[first_row:] = [c[i] for i in good]
        state["seen"] = set(cols["step"][first_row:])
    kept = []
    for e in out.events[first_event:]:
        bad = next((k for k in ("start", "end") if abs(e[f"{k}_s"]) > lim), None)
        if bad is None:
            kept.append(e)
        else:
            sub.bad(_BEYOND, line=e["line"], field=bad,
                    example=f"{bad}={e[bad + '_s']!r}; bound ±{lim:.6g} s from {why}")
    out.events[first_event:] = kept


def _offsets(reader: Reader, files: list[dict[str, Any]], cols: dict[str, np.ndarray], keep: np.ndarray,
             renumber: dict[int, int]) -> list[float]:
    """Each file's epoch offset (added to its times): the header's ``t0_unix``, moved onto one
    monotonic clock for the files of one boot of one host, then onto the other ranks' timeline
    where the same steps ended far apart (a host clock that disagrees)."""
    off = [float(f["t0_unix"]) for f in files]
    _wall_moves(reader, files)
    _same_boot(reader, files, off)
    for a in sorted({f["attempt"] for f in files}):
        _same_steps(reader, files, cols, keep, off, a, renumber[a])
    return off


def _wall_moves(reader: Reader, files: list[dict[str, Any]]) -> None:
    """Note files whose wall clock moved while they recorded (their beats disagree with t0_unix)."""
    moved = []
    for f in files:
        jumps = [(w - t) - f["t0_unix"] for _, t, w, _ in f["clock"] if w is not None]
        worst = max(jumps, key=abs, default=0.0)
        if abs(worst) > _CLOCK_TOL:
            moved.append(f"{f['file']} ({worst:+.1f} s)")
    if moved:
        reader.note(f"the wall clock moved while recording in {_names(moved)}; times follow each file's "
                    "monotonic clock from its header")


def _same_boot(reader: Reader, files: list[dict[str, Any]], off: list[float]) -> None:
    """Files of one host and boot share a monotonic clock: place them on it (clock set back between attempts)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, f in enumerate(files):
        if "mono0" in f and "boot_id" in f:
            groups.setdefault((str(f.get("host")), str(f["boot_id"])), []).append(i)
    for (host, _), idx in groups.items():
        ref = min(idx, key=lambda i: files[i]["mono0"])
        base = files[ref]["t0_unix"] - files[ref]["mono0"]
        moved = []
        for i in idx:
            want = base + files[i]["mono0"]
            if abs(want - off[i]) > _CLOCK_TOL:
                moved.append(f"{files[i]['file']} by {want - off[i]:+.1f} s")
                off[i] = want
        if moved:
            reader.note(f"host {host}: its wall clock moved between the files it wrote; on its monotonic clock "
                        f"(one boot) they were placed after {files[ref]['file']}: moved {_names(moved)}")


def _same_steps(reader: Reader, files: list[dict[str, Any]], cols: dict[str, np.ndarray], keep: np.ndarray,
                off: list[float], attempt: int, shown: int) -> None:
    """Ranks of one attempt run the same steps together: a rank whose steps end far from the
    others' (more than 3 step durations, at least 1 s, as a median over shared steps) has a host
    clock that disagrees; its times move onto the ranks' common timeline."""
    idx = [i for i, f in enumerate(files) if f["attempt"] == attempt and f["rows"] and keep[f["first_row"]]]
    if len(idx) < 2:
        return
    parts = []
    for i in idx:
        sl = slice(files[i]["first_row"], files[i]["first_row"] + files[i]["rows"])
        parts.append(pd.DataFrame({"f": i, "step": cols["step"][sl], "end": cols["end_s"][sl] + off[i],
                                   "dur": cols["end_s"][sl] - cols["start_s"][sl]}))
    df = pd.concat(parts, ignore_index=True)
    shared = df[df.groupby("step")["f"].transform("size") >= 2]
    alone = sorted(files[i]["rank"] for i in set(idx) - set(shared["f"]))
    if alone:
        reader.note(f"attempt {shown}: rank {_names(alone)} shares no step with the other ranks; its clock "
                    "cannot be checked against theirs")
    if shared.empty:
        return
    d = (shared["end"] - shared.groupby("step")["end"].transform("median")).groupby(shared["f"]).median()
    tol = max(_CLOCK_TOL, 3 * float(df["dur"].median()))
    if float(d.max() - d.min()) <= tol:
        return
    moved = [(i, float(v)) for i, v in d.items() if abs(v) > tol / 2]
    for i, v in moved:
        off[i] -= v
    reader.note(f"attempt {shown}: the same steps ended up to {float(d.max() - d.min()):,.1f} s apart across ranks "
                f"(host clocks disagree); moved onto the ranks' common timeline (median over shared steps): "
                + _names([f"rank {files[i]['rank']} by {-v:+.1f} s" for i, v in moved]))


def _attempt_order(reader: Reader, files: list[dict[str, Any]], cols: dict[str, np.ndarray],
                   renumber: dict[int, int]) -> None:
    """Note an attempt that begins before the one it follows (clocks set back across hosts)."""
    first: dict[int, float] = {}
    for f in files:
        if f["rows"]:
            sl = slice(f["first_row"], f["first_row"] + f["rows"])
            first[f["attempt"]] = min(first.get(f["attempt"], math.inf), float(cols["start_s"][sl].min()))
    order = sorted(first)
    for a, b in zip(order, order[1:], strict=False):
        if first[b] < first[a] - _CLOCK_TOL:
            reader.note(f"attempt {renumber[b]} begins {first[a] - first[b]:,.1f} s before attempt {renumber[a]} "
                        "(a wall clock set back between launches, no shared monotonic clock to align them): the "
                        "time between these attempts is not measured correctly")


def _names(ranks: list[int]) -> str:
    shown = ", ".join(map(str, ranks[:_SHOWN]))
    return shown + (f" and {len(ranks) - _SHOWN} more" if len(ranks) > _SHOWN else "")


def _attempt_notes(reader: Reader, files: list[dict[str, Any]]) -> dict[int, int]:
    """Attempt renumbering (header number → 0, 1, ...) and notes about each attempt's files."""
    header_attempts = sorted({f["attempt"] for f in files})
    renumber = {a: i for i, a in enumerate(header_attempts)}
    if header_attempts != list(range(len(header_attempts))):
        reader.note(f"attempts {header_attempts} in the file headers are numbered 0..{len(header_attempts) - 1}")
    for a in header_attempts:
        mine = [f for f in files if f["attempt"] == a]
        world = max(f["world_size"] for f in mine)
        missing = sorted(set(range(world)) - {f["rank"] for f in mine})
        if missing:
            reader.note(f"attempt {renumber[a]}: {world - len(missing)} of {world} ranks recorded "
                        f"(none from rank {_names(missing)})")
        open_ranks = sorted(f["rank"] for f in mine if not f["closed"])
        if open_ranks:
            reader.note(f"attempt {renumber[a]}: rank {_names(open_ranks)} ended without a close record "
                        "(killed or crashed)")
        lost = [f for f in mine if f["dropped"]]
        if lost:
            n = sum(f["dropped"] for f in lost)
            reader.note(f"attempt {renumber[a]}: {n} records of rank {_names(sorted(f['rank'] for f in lost))} were "
                        "not written (write errors: a full disk or a file-size limit; 'dropped' records mark the gaps)")
    return renumber


def _overlaps(reader: Reader, files: list[dict[str, Any]], start: np.ndarray, end: np.ndarray) -> None:
    """Note a rank whose files of two attempts overlap in time (two processes, one rank number)."""
    spans: dict[int, list[tuple[float, float, int]]] = {}
    for f in files:
        if f["rows"]:
            sl = slice(f["first_row"], f["first_row"] + f["rows"])
            spans.setdefault(f["rank"], []).append((float(start[sl].min()), float(end[sl].max()), f["attempt"]))
    bad = sorted(r for r, s in spans.items()
                 if any(b[0] < a[1] for a, b in zip(sorted(s), sorted(s)[1:], strict=False)))
    if bad:
        reader.note(f"rank {_names(bad)}: files of two attempts overlap in time (two processes recorded as the "
                    "same rank? create the recorder after init_process_group, or under a launcher that sets RANK)")


def _job_events(ev: pd.DataFrame) -> pd.DataFrame:
    """Job-level events: the ranks' events of one kind and attempt that overlap are one event
    (a checkpoint all ranks wait in, the failure every surviving rank sees), of the one rank
    that recorded it alone, else of rank -1; the detail is the first rank's, with the ranks named."""
    if not len(ev):
        return ev
    ev = ev.sort_values(["attempt", "kind", "start_s", "end_s"], kind="stable").reset_index(drop=True)
    att, kind = ev["attempt"].to_numpy(), ev["kind"].to_numpy()
    start, end = ev["start_s"].to_numpy(float), ev["end_s"].to_numpy(float)
    reach = end.copy()
    new = np.ones(len(ev), bool)
    for i in range(1, len(ev)):
        same = att[i] == att[i - 1] and kind[i] == kind[i - 1]
        if same and start[i] <= reach[i - 1]:
            new[i], reach[i] = False, max(reach[i - 1], end[i])
    group = np.cumsum(new) - 1
    rows = []
    for _, g in ev.groupby(group, sort=True):
        ranks = sorted(set(g["rank"].tolist()))
        first = g.iloc[0]
        detail = first["detail"] if len(ranks) == 1 else f"{first['detail']} (ranks {_names(ranks)})".strip()
        rows.append({"kind": first["kind"], "start_s": float(g["start_s"].min()), "end_s": float(g["end_s"].max()),
                     "attempt": int(first["attempt"]), "rank": ranks[0] if len(ranks) == 1 else -1, "detail": detail})
    return pd.DataFrame(rows, columns=ev.columns)


def _frames(reader: Reader, out: _Table) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, float]:
    renumber = _attempt_notes(reader, out.files)
    dup: set[tuple[int, int]] = set()
    keep = np.ones(len(out.steps["step"]), bool)
    for f in out.files:  # two files that claim one (rank, attempt): the second is left out
        key = (f["rank"], f["attempt"])
        if key in dup:
            keep[f["first_row"]:f["first_row"] + f["rows"]] = False
            reader.bad(rules.DUPLICATE, line=1, field="attempt", example=f["file"])
        dup.add(key)
    cols = {c: np.asarray(v, dtype=float if c not in ("attempt", "step", "rank", "line") else np.int64)
            for c, v in out.steps.items() if c != "line"}
    ev = pd.DataFrame(out.events, columns=["kind", "start_s", "end_s", "attempt", "rank", "detail"])
    offsets = _offsets(reader, out.files, cols, keep, renumber)
    for f, off in zip(out.files, offsets, strict=True):
        for arr, a, n in ((cols["start_s"], f["first_row"], f["rows"]), (cols["end_s"], f["first_row"], f["rows"])):
            arr[a:a + n] += off
        ev.loc[f["first_event"]:f["first_event"] + f["events"] - 1, ["start_s", "end_s"]] += off
    _overlaps(reader, out.files, cols["start_s"], cols["end_s"])
    _attempt_order(reader, out.files, cols, renumber)
    st = pd.DataFrame(cols)[keep].reset_index(drop=True)
    times = [x for x in (st["start_s"].min(), ev["start_s"].min()) if x == x]
    origin = min(times) if times else 0.0
    for df in (st, ev):
        df["start_s"] -= origin
        df["end_s"] -= origin
        df["attempt"] = df["attempt"].map(renumber).astype(np.int64)
    ev, per_rank = _job_events(ev), ev
    busy = st["end_s"] - st["start_s"] - st["data_wait_s"].fillna(0.0) - st["comm_s"].fillna(0.0)
    st["compute_s"] = busy.clip(lower=0.0)
    if st["gpu_s"].isna().all():
        st = st.drop(columns="gpu_s")
    return st, ev, per_rank, origin


def _batch_fact(parsed: Parsed, st: pd.DataFrame, out: _Table) -> None:
    """``global_batch``: samples per step summed over the ranks, when every rank of every step
    recorded them and the sum is one number."""
    if not len(st) or st["samples"].isna().any():
        return
    per_step = st.groupby(["attempt", "step"])["samples"].sum()
    values = per_step.unique()
    if len(values) == 1:
        n = float(values[0])
        parsed.fact("global_batch", int(n) if n.is_integer() else n, f"{out.files[0]['file']}:2",
                    f"samples per step summed over the ranks, the same in all {len(per_step)} steps")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read every record file (see the module docstring)."""
    paths, root = _files(reader)
    out = _Table()
    for path in paths:
        sub = reader.for_file(path, root=root) if root is not None else reader
        _read_file(sub, out)
    if not out.files:
        reader.fail("no record file with a usable header (see the load report)")
    st, ev, per_rank, origin = _frames(reader, out)
    parsed = Parsed(steps=st, events=ev, tables={"rank_events": per_rank}, timing="exact", time_unit="s")
    _batch_fact(parsed, st, out)
    last = [f for f in out.files if f["attempt"] == max(g["attempt"] for g in out.files)]
    where = f"{last[0]['file']}:1"
    world = max(f["world_size"] for f in last)
    parsed.fact("n_ranks", world, where, f"world_size {world}")
    parsed.fact("n_accelerators", world, where, f"world_size {world}")
    for key in ("framework", "accelerator"):
        named = [f for f in out.files if isinstance(f.get(key), str)]
        if named:
            parsed.fact(key, named[0][key], f"{named[0]['file']}:1", f"{key} {named[0][key]}")
    parsed.extra.update({
        "t0_epoch_s": origin, "t0_wallclock": rules.wallclock(origin), "files": len(out.files),
        "gpu_timing": sorted({str(f.get("gpu_timing", "off")) for f in out.files}),
        "hosts": sorted({str(f["host"]) for f in out.files if "host" in f})[:_SHOWN],
    })
    return parsed


load = loader_for(NAME)
