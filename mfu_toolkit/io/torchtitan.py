"""torchtitan stdout: the ``step: N  loss: ...  tps: ...  mfu: ...`` lines.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- Each step line is printed at the end of a logging interval; its timestamp (the logger's
  ``YYYY-mm-dd HH:MM:SS,mmm``, local time, no zone) ends the interval, and the previous step
  line of the same rank starts it. The throughput fields (``tps``, ``tflops``, ``mfu``) are
  means over the interval, so every step of the interval gets one row with an equal share of
  the interval's wall time, and ``meta.timing = "interval_mean"``. The first step line of an
  attempt has no start in the log unless a ``Training starts at step N`` line precedes it;
  without one its row is zero-width (``interval_known = False``), never a guessed duration.
- Launcher prefixes identify ranks: ``[rank3]:``, ``[default3]:`` (torchrun) and ``3: ``
  (``srun --label``). With a prefix each rank keeps its own rows (``rank`` = the prefix). Without
  one the lines of different ranks cannot be told apart, so the copies of a step that every rank
  printed collapse into one job-level row (``rank = -1``) holding the first copy's values;
  ``n_reports`` says how many lines were collapsed. Nothing is double counted.
- Field drift: ``wps`` (older releases) is read as ``tps``; ``mfu: N/A`` (torchtitan withholds
  MFU e.g. under FP8) stays missing. Columns added to the steps table: ``loss``, ``grad_norm``,
  ``memory_gib``, ``memory_pct``, ``tps`` (tokens/s per device), ``tflops`` (per device),
  ``mfu_pct`` (percent, as printed), plus any other numeric ``name: value`` field; and
  ``interval_steps``, ``logged`` (this step printed the line), ``interval_known``, ``n_reports``.
  Interval means (``tps``, ``tflops``, ``mfu_pct``) are repeated on every step of the interval;
  point values (``loss``, ``grad_norm``, memory) only on the logged step.
- Restarts: a ``Training starts at step`` line after logged steps, or a step number that goes
  back, opens a new attempt. A step printed again within 30 s of its first print is a copy from
  another rank, not a restart.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from ..run import LoadError, Run, RunMeta
from ._build import _apply_overrides, split_kwargs
from ._common import ANSI_RE, Reader, iter_lines

NAME = "torchtitan"

_PREFIX_RE = re.compile(r"^\s*(?:\[(?:rank|default)(\d+)\]:|(\d+):\s)")
_TS_RE = re.compile(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:[,.](\d{1,6}))?")
_STEP_RE = re.compile(r"\bstep:\s*(\d+)\s+(.*)$")
_FIELD_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*):\s*(\S+)")
_MEM_RE = re.compile(r"^([0-9.eE+-]+)\s*GiB\(([0-9.eE+-]+)%\)$")
_START_RE = re.compile(r"Training starts at step (\d+)")
_SNIFF_RE = re.compile(rb"\bstep:\s*\d+\s+loss:\s*\S+.*\b(?:tps|wps|tflops|mfu|memory):")

_RENAME = {"wps": "tps", "mfu": "mfu_pct"}
# A repeated step within this many seconds of its first print is a copy from another rank;
# later, it is a relaunch that resumed from a checkpoint (which takes far longer than this).
_DUP_WINDOW_S = 30.0
_RATE_FIELDS = ("tps", "tflops", "mfu_pct")  # interval means: valid for every step of it
_MISSING = {"n/a", "na", "nan", "-", "none"}


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is a torchtitan stdout log (by its step lines)."""
    try:
        if not head or Path(path).is_dir():
            return 0.0
        if b"\x1b" in head:
            head = ANSI_RE.sub("", head.decode("utf-8", errors="replace")).encode()
        hits = len(_SNIFF_RE.findall(head))
        if not hits:
            return 0.0
        return 0.95 if b"[titan]" in head else 0.85
    except Exception:
        return 0.0


def _parse_ts(text: str) -> float | None:
    m = _TS_RE.search(text)
    if not m:
        return None
    y, mo, d, h, mi, s, frac = m.groups()
    try:
        dt = datetime(int(y), int(mo), int(d), int(h), int(mi), int(s))
    except ValueError:
        return None
    f = float("0." + frac) if frac else 0.0
    # Naive local time: only differences matter, so use a fixed reference (no time zone).
    return (dt - datetime(1970, 1, 1)).total_seconds() + f


def _parse_fields(rest: str) -> tuple[dict[str, float], str | None]:
    """``name: value`` pairs → floats; returns (fields, name of the first unparseable field)."""
    out: dict[str, float] = {}
    bad: str | None = None
    for key, raw in _FIELD_RE.findall(rest):
        key = _RENAME.get(key, key)
        val = raw.strip().rstrip(",")
        if key == "memory":
            m = _MEM_RE.match(val)
            if m:
                out["memory_gib"] = float(m.group(1))
                out["memory_pct"] = float(m.group(2))
            elif val.lower() in _MISSING:
                out["memory_gib"] = math.nan
                out["memory_pct"] = math.nan
            elif bad is None:
                bad = "memory"
            continue
        if val.lower() in _MISSING:
            out[key] = math.nan
            continue
        try:
            out[key] = float(val.replace(",", "").rstrip("%"))
        except ValueError:
            if bad is None:
                bad = key
    return out, bad


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read a torchtitan stdout log into a Run (see the module docstring for the mapping)."""
    # Keywords naming RunMeta fields state what the log does not carry; others are an error.
    _, overrides = split_kwargs(kwargs, (), fmt=NAME)
    path = Path(path)
    if path.is_dir():
        raise LoadError("torchtitan logs are single files; got a directory", path=path)
    reader = Reader(path, NAME, strict=strict)
    rep = reader.report

    # Per rank key (int rank or None): current attempt, last step, last time, rows logged.
    attempt: dict[int | None, int] = {}
    last: dict[int | None, tuple[int, float] | None] = {}
    started_at: dict[int | None, tuple[int, float] | None] = {}
    logged: dict[int | None, bool] = {}
    seen: dict[tuple[int | None, int, int], dict[str, Any]] = {}
    records: list[dict[str, Any]] = []
    t0: float | None = None
    t0_text = ""
    aliases: set[str] = set()
    n_lines = 0
    other_lines = 0
    pending: tuple[int, str] | None = None

    def handle(ln: int, text: str, final_unterminated: bool) -> None:
        nonlocal t0, t0_text, other_lines
        if not text.strip():
            return
        pm = _PREFIX_RE.match(text)
        key: int | None = None
        if pm:
            key = int(pm.group(1) or pm.group(2))
        ts = _parse_ts(text)
        if ts is not None and t0 is None:
            t0 = ts
            t0_text = _TS_RE.search(text).group(0)  # type: ignore[union-attr]
        sm = _START_RE.search(text)
        if sm and "step:" not in text:
            a = attempt.setdefault(key, 0)
            if logged.get(key):
                attempt[key] = a + 1
                last[key] = None
                logged[key] = False
            if ts is not None:
                started_at[key] = (int(sm.group(1)), ts)
            return
        m = _STEP_RE.search(text)
        if not m:
            other_lines += 1
            return
        step = int(m.group(1))
        if "wps:" in m.group(2):
            aliases.add("wps->tps")
        fields, bad_field = _parse_fields(m.group(2))
        if final_unterminated and records:
            prev_keys = set(records[-1]["fields"])
            if not set(fields) >= prev_keys:
                reader.bad("half-written last line", line=ln, field="step", example=text)
                return
        if bad_field is not None:
            reader.bad("unparseable field value", line=ln, field=bad_field, example=text)
            return
        if ts is None:
            reader.bad("step line without a timestamp", line=ln, field="timestamp", example=text)
            return
        a = attempt.setdefault(key, 0)
        prev = last.get(key)
        dup = seen.get((key, a, step))
        if dup is not None and abs(ts - dup["end"]) <= _DUP_WINDOW_S:
            dup["n_reports"] += 1
            return
        if prev is not None and step <= prev[0]:
            # The step number went back: a new launch of the job.
            a = attempt[key] = a + 1
            prev = None
            started_at[key] = None
        if prev is not None and ts < prev[1]:
            reader.bad("non-monotonic timestamp", line=ln, field="timestamp", example=text)
            return
        if prev is None:
            st = started_at.get(key)
            if st is not None and st[0] <= step and st[1] <= ts:
                first_step, start_t, known = st[0], st[1], True
            else:
                first_step, start_t, known = step, ts, False
        else:
            first_step, start_t, known = prev[0] + 1, prev[1], True
        rec = {
            "key": key,
            "attempt": a,
            "step": step,
            "first_step": first_step,
            "start": start_t,
            "end": ts,
            "known": known,
            "fields": fields,
            "n_reports": 1,
            "line": ln,
        }
        records.append(rec)
        seen[(key, a, step)] = rec
        last[key] = (step, ts)
        logged[key] = True
        started_at[key] = None

    for ln, text in iter_lines(path):
        n_lines += 1
        if pending is not None:
            handle(*pending, False)
        pending = (ln, text)
    if pending is not None:
        # The text after the last newline: non-empty means the file did not end with one.
        handle(pending[0], pending[1], bool(pending[1].strip()))
    rep.lines_read = n_lines

    if not records:
        reader.fail(
            "no torchtitan step lines ('step: N  loss: ...') found"
            + (f"; {rep.total_skipped} malformed" if rep.total_skipped else "")
        )

    # Expand each logged interval to one row per step with an equal share of its time.
    keys = sorted({r["key"] for r in records}, key=lambda k: -1 if k is None else k)
    prefixed = any(k is not None for k in keys)
    if prefixed and None in keys:
        rep.note("some step lines have a rank prefix and some do not; unprefixed ones kept as rank -1")
    field_names: list[str] = []
    for r in records:
        for f in r["fields"]:
            if f not in field_names:
                field_names.append(f)
    counts = np.array([r["step"] - r["first_step"] + 1 for r in records], dtype=np.int64)
    total = int(counts.sum())
    cols: dict[str, np.ndarray] = {
        "attempt": np.repeat([r["attempt"] for r in records], counts),
        "rank": np.repeat([-1 if r["key"] is None else r["key"] for r in records], counts),
        "interval_steps": np.repeat(counts, counts),
        "interval_known": np.repeat([r["known"] for r in records], counts),
        "n_reports": np.repeat([r["n_reports"] for r in records], counts),
    }
    offs = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)  # 0..n-1 within
    first = np.repeat([r["first_step"] for r in records], counts)
    cols["step"] = first + offs
    start = np.repeat([r["start"] for r in records], counts)
    end = np.repeat([r["end"] for r in records], counts)
    share = (end - start) / np.repeat(counts, counts)
    t_origin = float(t0 if t0 is not None else min(r["start"] for r in records))
    cols["start_s"] = start - t_origin + offs * share
    cols["end_s"] = cols["start_s"] + share
    is_logged = offs == np.repeat(counts - 1, counts)
    cols["logged"] = is_logged
    for f in field_names:
        vals = np.repeat([r["fields"].get(f, math.nan) for r in records], counts).astype(float)
        if f not in _RATE_FIELDS:
            vals[~is_logged] = math.nan
        cols[f] = vals

    n_dup = sum(r["n_reports"] - 1 for r in records)
    if n_dup:
        rep.note(
            f"{n_dup} duplicate step lines collapsed (the same step printed by several ranks "
            "without a rank prefix): one job-level row per step"
        )
    if not all(r["known"] for r in records):
        rep.note("the first logged step of an attempt has no start time in the log: zero-width row")
    if other_lines:
        rep.note(f"{other_lines} lines are not step records (config, warnings, ...)")
    rep.rows_kept = total

    extra: dict[str, Any] = {
        "t0_wallclock": t0_text,
        "t0_timezone": "unknown (logger local time)",
        "rank_prefixed": prefixed,
        "field_aliases": sorted(aliases),
        "log_interval_steps": int(np.median(counts[[r["known"] for r in records]]))
        if any(r["known"] for r in records)
        else None,
    }
    if not prefixed:
        extra["max_copies_per_step"] = int(max(r["n_reports"] for r in records))
    meta = RunMeta(
        name=path.name.split(".")[0],
        source_path=str(path),
        source_format=NAME,
        time_unit="ms",  # logger date-time stamps, millisecond resolution
        timing="interval_mean",
        extra=extra,
        report=rep,
    )
    meta = _apply_overrides(meta, overrides)
    try:
        run = Run.build(cols, None, meta)
    except ValueError as exc:  # SchemaError: report it as a load problem of this file
        raise LoadError(f"steps do not fit the Run schema: {exc}", path=path) from None
    rep.warn_if_skipped()
    return run
