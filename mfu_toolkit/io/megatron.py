"""Megatron-LM stdout: the ``iteration N/ M | ... | elapsed time per iteration (ms): X |`` lines.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- Megatron prints one line per log interval from the last rank; ``elapsed time per iteration``
  is the mean over the interval (in ms). Each line becomes ``interval_steps`` rows (one per
  step of the interval, each as long as the mean), ``logged`` marks the step that printed the
  line, and point values (``loss``, ``grad_norm``, ``learning_rate``, ...) sit on that row only.
  The interval is inferred from the step numbers (the most common gap) or given with
  ``log_interval=``. ``meta.timing`` is ``"interval_mean"`` for intervals longer than one step,
  else ``"duration_only"``; ``rank = -1`` (job level).
- Newer releases prefix the line with ``[YYYY-mm-dd HH:MM:SS(.ffffff)]`` (local time, no zone):
  the interval then ends at that time. Older lines (no timestamp) are placed back to back from
  their durations, and gaps between launches are unknown (noted in the report).
- ``number of skipped iterations`` / ``number of nan iterations`` are kept per row
  (``skipped_iterations``, ``nan_iterations``) and totalled in the report notes: those steps
  took time, so they stay in the timeline.
- A known field (``lm loss``, ``global batch size``, ...) whose value is not a number is a bad
  record (line and field in the report; ``strict=True`` raises): the line's timing is kept and
  that value is left missing. ``samples`` comes from each interval's own ``global batch size``
  only, never from a neighbouring line. Unknown fields with text values are left out (noted).
- ``saving checkpoint at iteration N`` / ``successfully saved checkpoint ... iteration N`` are
  ``checkpoint_save`` events after step N; the duration comes from the ``save-checkpoint`` timer
  when printed, else from the gap to the next timestamped line, else it is unknown (zero length,
  said so in ``detail``). ``[... ] datetime:`` lines before training give the ``init`` event.
- A step number that does not increase, or a new argument banner / checkpoint load after
  logged steps, starts a new attempt.
- The straggler detector's ``MnRtt/Rnk: ... | MxRtt/Rnk: ...`` lines go to the ``straggler``
  table (one row per metric: min and max with their ranks), ``[Rank r] (after N iterations)
  memory (MB)`` lines to the ``memory`` table. A value there that is not a number (``nanms``,
  ``n/a``) is a bad record like one on an iteration line: counted with line and field (e.g.
  ``MxRtt/Rnk``), left missing, the rest of the line kept; ``strict=True`` raises.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from ._build import finish, num, split_kwargs
from ._common import Reader, iter_lines, read_head

NAME = "megatron"

_ITER_RE = re.compile(r"\biteration\s+(\d+)\s*/\s*(\d+|infinity)\s*\|(.*)$")
_TS_RE = re.compile(r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)\]")
_ELAPSED_RE = re.compile(r"^elapsed time per iteration\s*\(([^)]*)\)$")
_FIELD_RE = re.compile(r"^\s*([^:|]+?)\s*:\s*(\S+)\s*$")
_SAVE_START_RE = re.compile(r"(?<!successfully )saving checkpoint at iteration\s+(\d+)")
_SAVE_END_RE = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d+)")
_LOAD_RE = re.compile(r"successfully loaded checkpoint from .*?at iteration\s+(\d+)")
_TIMER_RE = re.compile(r"(?:^|[\s:])(save-checkpoint|load-checkpoint)\s*\.*\s*:\s*\(?\s*([0-9.eE+-]+)(?:\s*,\s*([0-9.eE+-]+))?\s*\)?")
_DATETIME_RE = re.compile(r"\[([^\]]+)\]\s*datetime:\s*(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d+)?)")
_BANNER_RE = re.compile(r"-{5,}\s*arguments\s*-{5,}|using world size:")
_STRAGGLER_RE = re.compile(r"(Mn|Mx)([A-Za-z]+)/Rnk:\s*([^\s|]*?)\s*/\s*(\d+)")
_VALUE_UNIT_RE = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z%]*)$")
_MEMORY_RE = re.compile(r"\[Rank (\d+)\]\s*\(after (\d+) iterations\)\s*memory \(MB\)\s*\|(.*)$")
_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6}
_RENAME = {
    "lm loss": "loss",
    "learning rate": "learning_rate",
    "grad norm": "grad_norm",
    "loss scale": "loss_scale",
    "throughput per GPU (TFLOP/s/GPU)": "tflops_per_gpu",
    "consumed samples": "consumed_samples",
    "global batch size": "global_batch_size",
    "number of skipped iterations": "skipped_iterations",
    "number of nan iterations": "nan_iterations",
    "num zeros": "num_zeros",
    "params norm": "params_norm",
}
_NON_NUMERIC = "non-numeric value (left missing, line kept)"
_INTERVAL_FIELDS = ("tflops_per_gpu",)  # means over the interval: valid for every step of it
_SNIFF_ITER = re.compile(rb"iteration\s+\d+\s*/\s*(?:\d+|infinity)\s*\|.*elapsed time per iteration")
_SCAN_BYTES = 8 << 20


def sniff(path: Path, head: bytes) -> float:
    """0.9 for iteration lines in the head; 0.85 if found further in; 0.8 for straggler lines."""
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    try:
        if _SNIFF_ITER.search(head):
            return 0.9
        if b"MnRtt/Rnk:" in head:
            return 0.8
        if (b"megatron" in head.lower() or b"arguments ---" in head) and p.stat().st_size > len(head):
            if _SNIFF_ITER.search(read_head(p, _SCAN_BYTES)):
                return 0.85
    except Exception:
        return 0.0
    return 0.0


def _parse_ts(text: str) -> float | None:
    try:
        dt = datetime.fromisoformat(text.replace("T", " "))
    except ValueError:
        return None
    # Naive local time: only differences matter; a fixed reference keeps them exact.
    return (dt - datetime(1970, 1, 1)).total_seconds()


def _snake(key: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", key).strip("_").lower()


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Load a Megatron-LM stdout log; see the module docstring for the mapping."""
    opts, overrides = split_kwargs(kwargs, ("log_interval", "clock_tolerance_s"), fmt=NAME)
    tol = float(opts.get("clock_tolerance_s", 1.0))
    p = Path(path)
    reader = Reader(p, NAME, strict=strict)
    rep = reader.report
    if p.is_dir():
        reader.fail("is a directory; the Megatron loader reads one stdout log file")

    lines: list[dict[str, Any]] = []  # iteration records
    saves: list[dict[str, Any]] = []
    datetimes: list[tuple[str, float, int]] = []
    straggler: list[dict[str, Any]] = []
    memory: list[dict[str, Any]] = []
    loads: list[tuple[int, int]] = []
    timers: dict[str, list[float]] = {"save-checkpoint": [], "load-checkpoint": []}
    attempt = 0
    launch_marker = False
    last_iter: int | None = None
    last_ts: float | None = None
    prev_text: str | None = None
    other = 0
    dup_lines = 0
    units_seen: set[str] = set()
    text_fields: Counter[str] = Counter()  # fields the toolkit does not know, with non-numeric values

    for ln, text in iter_lines(p):
        if not text.strip():
            continue
        rep.lines_read += 1
        m = _ITER_RE.search(text)
        if m is None:
            if _BANNER_RE.search(text):
                launch_marker = True
            if (mm := _LOAD_RE.search(text)) is not None:
                loads.append((ln, int(mm.group(1))))
                launch_marker = True
            if (mm := _SAVE_START_RE.search(text)) is not None:
                saves.append({"line": ln, "iteration": int(mm.group(1)), "attempt": attempt, "done": False})
            elif (mm := _SAVE_END_RE.search(text)) is not None:
                it = int(mm.group(1))
                for s in reversed(saves):
                    if s["iteration"] == it and s["attempt"] == attempt:
                        s["done"] = True
                        break
                else:
                    saves.append({"line": ln, "iteration": it, "attempt": attempt, "done": True})
            if (mm := _TIMER_RE.search(text)) is not None:
                v = num(mm.group(3) if mm.group(3) is not None else mm.group(2))
                if not math.isnan(v) and v >= 0:
                    timers[mm.group(1)].append(v)
                    if mm.group(1) == "save-checkpoint" and saves and "timer_ms" not in saves[-1]:
                        saves[-1]["timer_ms"] = v
                else:
                    reader.bad(f"bad {mm.group(1)} timer value", line=ln, field=mm.group(1), example=text)
            if (mm := _DATETIME_RE.search(text)) is not None:
                t = _parse_ts(mm.group(2))
                if t is not None:
                    datetimes.append((mm.group(1), t, attempt if not launch_marker or last_iter is None else attempt + 1))
            if "Rnk:" in text and (pairs := _STRAGGLER_RE.findall(text)):
                tsm = _TS_RE.search(text)
                t = _parse_ts(tsm.group(1)) if tsm else None
                by_metric: dict[str, dict[str, Any]] = {}
                for mnmx, metric, token, rank in pairs:
                    vu = _VALUE_UNIT_RE.match(token)
                    row = by_metric.setdefault(metric, {"line": ln, "time": t, "metric": metric, "unit": vu.group(2) if vu else ""})
                    if vu is None:  # 'nanms', 'N/A': the pair's rank stays, its value does not
                        reader.bad(_NON_NUMERIC, line=ln, field=f"{mnmx}{metric}/Rnk", example=f"{mnmx}{metric}/Rnk: {token}/{rank}")
                    elif not row["unit"]:
                        row["unit"] = vu.group(2)
                    row["min" if mnmx == "Mn" else "max"] = num(float(vu.group(1))) if vu else math.nan
                    row["min_rank" if mnmx == "Mn" else "max_rank"] = int(rank)
                straggler.extend(by_metric.values())
                continue
            if (mm := _MEMORY_RE.search(text)) is not None:
                row = {"rank": int(mm.group(1)), "after_iteration": int(mm.group(2))}
                for part in mm.group(3).split("|"):
                    fm = _FIELD_RE.match(part)
                    if fm:
                        try:
                            row[_snake(fm.group(1)) + "_mb"] = num(float(fm.group(2)))
                        except ValueError:
                            reader.bad(_NON_NUMERIC, line=ln, field=fm.group(1), example=part.strip())
                            row[_snake(fm.group(1)) + "_mb"] = math.nan
                memory.append(row)
                continue
            other += 1
            continue

        # --- an iteration line -------------------------------------------------------
        if text == prev_text:
            dup_lines += 1
            continue
        prev_text = text
        it = int(m.group(1))
        tsm = _TS_RE.search(text[: m.start()])
        ts = _parse_ts(tsm.group(1)) if tsm else None
        fields: dict[str, float] = {}
        dur: float | None = None
        bad = False
        for part in m.group(3).split("|"):
            if not part.strip():
                continue
            fm = _FIELD_RE.match(part)
            if fm is None:
                continue
            key, raw = fm.group(1), fm.group(2)
            em = _ELAPSED_RE.match(key)
            if em is not None:
                unit = em.group(1).strip().lower()
                if unit not in _UNITS:
                    reader.bad(f"unknown time unit {unit!r} in elapsed time per iteration", line=ln, field=key, example=text)
                    bad = True
                    break
                v = num(raw.split("/")[0])
                if math.isnan(v) or v < 0:
                    reader.bad("elapsed time per iteration is NaN or negative", line=ln, field=key, example=text)
                    bad = True
                    break
                units_seen.add(unit)
                dur = v * _UNITS[unit]
                continue
            try:
                fields[_RENAME.get(key, _snake(key))] = num(float(raw.split("/")[0]))
            except ValueError:
                if key in _RENAME:  # a known numeric field: the line's timing stays, this value does not
                    reader.bad(_NON_NUMERIC, line=ln, field=key, example=f"{key}: {raw}")
                else:
                    text_fields[key] += 1
        if bad:
            continue
        if dur is None:
            reader.bad("iteration line without 'elapsed time per iteration' (truncated?)", line=ln, field="elapsed time per iteration", example=text)
            continue
        if last_iter is not None and (it <= last_iter or launch_marker):
            attempt += 1
            last_ts = None
        elif ts is not None and last_ts is not None and ts < last_ts - tol:
            reader.bad("non-monotonic timestamp (earlier than the previous iteration line)", line=ln, field="timestamp", example=text)
            continue
        launch_marker = False
        last_iter = it
        if ts is not None:
            last_ts = ts
        lines.append({"line": ln, "attempt": attempt, "iteration": it, "ts": ts, "dur": dur, "fields": fields})

    if dup_lines:
        rep.note(f"{dup_lines} iteration lines repeated verbatim (several ranks printing); collapsed")
    for key, n in text_fields.items():
        rep.note(f"field {key!r} is not a number on {n} iteration lines; left out")
    if other:
        rep.note(f"{other} lines are not iteration records (setup output, warnings, ...); ignored")
    if not lines and not straggler and not memory:
        reader.fail("no Megatron iteration lines ('iteration N/ M | ... elapsed time per iteration') found")
    if not lines:
        rep.note("no iteration lines: only the straggler/memory tables are filled")

    # --- log interval ------------------------------------------------------------------
    gaps = Counter()
    for a, b in zip(lines, lines[1:], strict=False):
        if a["attempt"] == b["attempt"]:
            gaps[b["iteration"] - a["iteration"]] += 1
    if "log_interval" in opts:
        log_interval = int(opts["log_interval"])
    elif gaps:
        top = max(gaps.values())
        log_interval = min(g for g, c in gaps.items() if c == top)
    else:
        log_interval = 1
        if lines:
            rep.note("log interval unknown (one line per launch); each line taken as one step - pass log_interval= to change")
    log_interval = max(1, log_interval)
    missing = sum((g - log_interval) * c for g, c in gaps.items() if g > log_interval)
    if missing:
        rep.note(f"{missing} iterations between logged lines are not in the log (an excerpt, or lost lines)")

    timestamped = bool(lines) and all(r["ts"] is not None for r in lines)
    if lines and not timestamped:
        if any(r["ts"] is not None for r in lines):
            rep.note("some iteration lines have timestamps and some not: all placed back to back from durations")
        else:
            rep.note("no timestamps: steps placed back to back from their durations; gaps between launches unknown")

    # --- steps -------------------------------------------------------------------------
    save_after: dict[tuple[int, int], dict[str, Any]] = {(s["attempt"], s["iteration"]): s for s in saves}
    cols: dict[str, list[Any]] = {k: [] for k in ("attempt", "step", "start_s", "end_s", "interval_steps", "logged")}
    point_cols: dict[str, list[float]] = {}
    samples: list[float] = []  # each step's batch: its own interval's line, never a neighbour's
    interval_ends: list[tuple[int, int, float, float]] = []  # attempt, iteration, start, end
    cursor = 0.0
    prev: dict[str, Any] | None = None
    for r in lines:
        if prev is not None and prev["attempt"] == r["attempt"]:
            n = min(max(1, r["iteration"] - prev["iteration"]), log_interval)
        else:
            n = min(log_interval, max(1, r["iteration"]))
        if timestamped:
            end = r["ts"]
            start = end - n * r["dur"]
        else:
            start = cursor
            end = start + n * r["dur"]
        # a checkpoint saved after the previous line's step (back-to-back mode: make room)
        if not timestamped and prev is not None:
            s = save_after.get((prev["attempt"], prev["iteration"]))
            if s is not None and "timer_ms" in s:
                start += s["timer_ms"] / 1000.0
                end += s["timer_ms"] / 1000.0
        cursor = end
        interval_ends.append((r["attempt"], r["iteration"], start, end))
        for j in range(n):
            step = r["iteration"] - n + 1 + j
            cols["attempt"].append(r["attempt"])
            cols["step"].append(step)
            cols["start_s"].append(start + j * r["dur"])
            cols["end_s"].append(start + (j + 1) * r["dur"])
            cols["interval_steps"].append(n)
            logged = j == n - 1
            cols["logged"].append(logged)
            samples.append(r["fields"].get("global_batch_size", math.nan))
            for k in r["fields"]:
                point_cols.setdefault(k, [math.nan] * (len(cols["step"]) - 1))
            for k, lst in point_cols.items():
                v = r["fields"].get(k, math.nan)
                lst.append(v if (logged or k in _INTERVAL_FIELDS) else math.nan)
        prev = r
    t_abs = [e[2] for e in interval_ends] if timestamped else []
    t_abs += [t for _, t, _ in datetimes] if timestamped or not lines else []
    t_abs += [s["time"] for s in straggler if s.get("time") is not None] if timestamped or not lines else []
    t0 = min(t_abs) if t_abs else 0.0
    shift = t0 if (timestamped or not lines) and t_abs else 0.0

    steps = pd.DataFrame(cols)
    for k, lst in point_cols.items():
        steps[k] = lst
    if len(steps):
        steps["rank"] = -1
        steps["start_s"] = steps["start_s"] - shift
        steps["end_s"] = steps["end_s"] - shift
        if "global_batch_size" in steps:
            steps["samples"] = samples
        drop = [c for c in steps.columns if c not in ("attempt", "step", "rank", "start_s", "end_s") and steps[c].isna().all()]
        steps = steps.drop(columns=drop)
    skipped_it = int(np.nansum(steps["skipped_iterations"])) if "skipped_iterations" in steps else 0
    nan_it = int(np.nansum(steps["nan_iterations"])) if "nan_iterations" in steps else 0
    if skipped_it or nan_it:
        rep.note(f"Megatron reported {skipped_it} skipped and {nan_it} nan iterations; kept as steps (they took time)")

    # --- events ------------------------------------------------------------------------
    events: list[dict[str, Any]] = []
    by_iter = {(a, it): (s, e) for a, it, s, e in interval_ends}
    nxt = {(a, it): interval_ends[i + 1] for i, (a, it, _, _) in enumerate(interval_ends[:-1])}
    step_end = {(a, st): e for a, st, e in zip(cols["attempt"], cols["step"], cols["end_s"], strict=True)}
    for s in saves:
        key = (s["attempt"], s["iteration"])
        if key not in step_end:
            rep.note(f"checkpoint save at iteration {s['iteration']} (line {s['line']}) is after no step in the log; not placed")
            continue
        start = step_end[key]
        if "timer_ms" in s:
            end = start + s["timer_ms"] / 1000.0
            how = "save-checkpoint timer"
        elif timestamped and key in by_iter and key in nxt and nxt[key][0] == s["attempt"] and nxt[key][2] >= start:
            end = nxt[key][2]
            how = "gap to the next logged step (no save-checkpoint timer)"
        else:
            end = start
            how = "duration not logged"
        status = "" if s["done"] else "; no 'successfully saved' line"
        events.append({"kind": "checkpoint_save", "start_s": start - shift, "end_s": end - shift, "attempt": s["attempt"], "detail": f"checkpoint at iteration {s['iteration']}; {how}{status}"})
    if timestamped:
        first_start: dict[int, float] = {}
        for a, _, st, _ in interval_ends:
            first_start.setdefault(a, st)
        for a in sorted(first_start):
            mine = [(lab, t) for lab, t, att in datetimes if att == a]
            if not mine:
                continue
            t_begin = min(t for _, t in mine)
            ends = [t for lab, t in mine if lab.strip().startswith("before the start of training")]
            t_end = min(ends) if ends else first_start[a]
            t_end = min(t_end, first_start[a])
            if t_end > t_begin:
                events.append({"kind": "init", "start_s": t_begin - shift, "end_s": t_end - shift, "attempt": a, "detail": "first '[...] datetime:' line to the start of training"})

    # --- tables and meta -----------------------------------------------------------------
    tables: dict[str, pd.DataFrame] = {}
    if straggler:
        st = pd.DataFrame(straggler)
        st["time_s"] = [(t - shift) if (t is not None and (timestamped or not lines)) else math.nan for t in st.pop("time")]
        tables["straggler"] = st
    if memory:
        tables["memory"] = pd.DataFrame(memory)
    extra: dict[str, Any] = {"log_interval": log_interval}
    if shift:
        extra["t0_wallclock"] = (datetime(1970, 1, 1) + timedelta(seconds=shift)).isoformat(sep=" ")
        extra["t0_timezone"] = "unknown (log's local time)"
    if loads:
        extra["resumed_from_iterations"] = [it for _, it in loads]
    if timers["load-checkpoint"]:
        extra["load_checkpoint_ms"] = timers["load-checkpoint"]
    found: dict[str, Any] = {}
    if "global_batch_size" in steps and steps["global_batch_size"].notna().any():
        vals = steps["global_batch_size"].dropna().unique()
        if len(vals) == 1 and vals[0] > 0:
            found["global_batch"] = float(vals[0])
        else:
            extra["global_batch_varies"] = True
    if len(steps) and steps["attempt"].max() > 0:
        rep.note(f"{int(steps['attempt'].max()) + 1} launches (attempts) found in one log")
    timing = "interval_mean" if log_interval > 1 else "duration_only"
    unit = "ms" if units_seen <= {"ms"} else ",".join(sorted(units_seen))
    return finish(
        reader,
        fmt=NAME,
        steps=steps,
        events=events,
        tables=tables,
        timing=timing,
        time_unit=unit,
        found=found,
        overrides=overrides,
        extra=extra,
    )
