"""Step timers several formats print, as rows for a line table (:mod:`.lines`).

Megatron-core's timers (``megatron/core/timers.py``, named by ``megatron/training/training.py``) are
printed by Megatron-LM, Megatron-DeepSpeed, GPT-NeoX and Megatron-core based NeMo; DeepSpeed's engine
breakdown (``deepspeed/runtime/engine.py``, ``wall_clock_breakdown``) by any DeepSpeed job. A format
whose state has ``timers`` (a :class:`Timers`) puts :data:`TIMER_LINES` in its table.
"""

from __future__ import annotations

import math
import re
from re import Match
from typing import Any

import numpy as np
import pandas as pd

from . import rules, values
from .lines import At, Columns, Line

__all__ = ["SETUP_TIMERS", "TIMER_COLUMNS", "TIMER_LINES", "Timers"]

# --- a line kind several formats print: step timers --------------------------------------------------------
# Megatron-core's timers (megatron/core/timers.py, named by megatron/training/training.py), printed by
# Megatron-LM, Megatron-DeepSpeed, GPT-NeoX and Megatron-core based NeMo, and DeepSpeed's engine breakdown
# (deepspeed/runtime/engine.py, ``wall_clock_breakdown``), printed by any DeepSpeed job. A format whose state has
# ``timers`` (a :class:`Timers`) puts :data:`TIMER_LINES` in its table.
SETUP_TIMERS = frozenset({
    "model-and-optimizer-setup", "train/valid/test-data-iterators-setup", "load-checkpoint", "save-checkpoint"})
_PIPELINE = frozenset({"forward-recv", "forward-send", "backward-recv", "backward-send",
                       "forward-send-backward-recv", "backward-send-forward-recv"})
_DS_CATEGORY = {"fwd": "compute", "bwd_inner": "compute", "bwd_allreduce": "comm", "optimizer_allgather": "comm"}
TIMER_COLUMNS = {"compute": "compute_s", "comm": "comm_s", "data": "data_wait_s"}
_TIMER_BODY = re.compile(r"(?:^|\s)([A-Za-z0-9_/\-]+) (\.*):\s*(\([^()]*\)|[^\s()]+)")
_MAX_TIMER_S = 1e7  # a timer over ~116 days is no duration
_MAX_NAMES = 4096


def _category(source: str, name: str) -> str | None:
    """Which step column a timer adds to, or None: Megatron's ``forward-compute`` + ``backward-compute``,
    every all-reduce / all-gather / reduce-scatter, ``all-grads-sync`` and pipeline send/recv, and
    ``batch-generator``; DeepSpeed's ``fwd`` + ``bwd_inner`` and ``bwd_allreduce`` + ``optimizer_allgather``.
    Parent timers (``forward-backward``, ``optimizer``, ``bwd``) are left out, so nothing counts twice."""
    if source == "deepspeed":
        return _DS_CATEGORY.get(name)
    if name in ("forward-compute", "backward-compute"):
        return "compute"
    if name == "batch-generator":
        return "data"
    if name in _PIPELINE or name == "all-grads-sync" or name.endswith(("all-reduce", "all-gather", "reduce-scatter")):
        return "comm"
    return None


class Timers:
    """Step timers as read, one entry per timer value (ms): ``min_ms``/``max_ms`` across ranks where printed.

    Megatron's timers follow the record line they time (their values are per-step means over its interval):
    the format sets ``record`` when it keeps a record (:meth:`give`) and clears it at a launch (:meth:`reset`).
    DeepSpeed's precede their line: :meth:`give` hands the waiting ones to the record just kept. A timer of no
    record (set-up timers, timers before any line) has ``rec`` -1 and the format's current ``attempt``; a repeat
    within one interval is counted (``DUPLICATE``) and has ``rec`` :attr:`DROPPED` or is not kept.
    ``first`` holds the first line of each source's own timer lines (header and block lines for Megatron).
    """

    DROPPED = -2

    def __init__(self) -> None:
        self.cols = Columns(line="q", rec="q", attempt="q", source="O", name="O", min_ms="d", max_ms="d")
        self.names: dict[str, str] = {}  # each distinct name one string object
        self.pending: list[int] = []  # DeepSpeed's, waiting for their record
        self.seen: set[str] = set()  # Megatron's names given to record ``seen_rec``
        self.seen_rec = -1
        self.block: str | None = None  # inside a '(min, max)' / 'max' block
        self.record: int | None = None
        self.attempt = 0
        self.first: dict[str, tuple[int, str]] = {}

    def __len__(self) -> int:
        return len(self.cols)

    def saw(self, source: str, at: At) -> None:
        if source not in self.first:
            self.first[source] = (at.ln, at.text.strip()[:200])

    def add(self, at: At, source: str, name: str, lo: float, hi: float) -> None:
        """One timer value: to the record it belongs to, or to none."""
        rec = -1
        if name not in SETUP_TIMERS and source == "megatron" and self.record is not None:
            if self.seen_rec != self.record:  # repeats are looked for within one interval
                self.seen_rec = self.record
                self.seen.clear()
            if name in self.seen:
                at.bad(rules.DUPLICATE, name)
                return
            self.seen.add(name)
            rec = self.record
        if source == "deepspeed" and name not in SETUP_TIMERS:
            self.pending.append(len(self.cols))
        name = self.names.setdefault(name, name) if len(self.names) < _MAX_NAMES else name
        self.cols.add(at.ln, rec, self.attempt, source, name, lo, hi)

    def give(self, at: At, record: int, attempt: int) -> None:
        """A record was kept (in ``attempt``): the timers after it are its, and so are DeepSpeed's waiting ones."""
        self.record, self.attempt = record, attempt
        c, given = self.cols, set()
        for i in self.pending:
            if (name := c.name[i]) in given:
                at.reader.bad(rules.DUPLICATE, line=c.line[i], field=name)
                c.rec[i] = self.DROPPED
            else:
                given.add(name)
                c.rec[i], c.attempt[i] = record, attempt
        self.pending.clear()

    def reset(self, attempt: int | None = None) -> None:
        """No record now (a launch, or set-up output): timers after this belong to none (in ``attempt``)."""
        self.record = None
        self.pending.clear()
        if attempt is not None:
            self.attempt = attempt

    def values(self) -> np.ndarray:
        """Each timer's value (ms): the slowest rank's where min and max are given."""
        lo, hi = np.asarray(self.cols.min_ms, dtype=float), np.asarray(self.cols.max_ms, dtype=float)
        return np.where(np.isnan(hi), lo, hi)

    def named(self, name: str) -> list[tuple[int, float]]:
        """``(line, value)`` of each value of timer ``name`` that is a number, in line order."""
        return [(ln, v) for ln, n, v in zip(self.cols.line, self.cols.name, self.values().tolist(), strict=True)
                if n == name and not math.isnan(v)]

    def columns(self, n_records: int) -> dict[str, np.ndarray]:
        """``compute_s``/``comm_s``/``data_wait_s`` per record (s; see :func:`_category`); Megatron's before
        DeepSpeed's for the same record and column."""
        c = self.cols
        if not len(c) or not n_records:
            return {}
        categories = list(TIMER_COLUMNS)
        code: dict[tuple[str, str], int] = {}  # (source, name) -> 2 * category + (1 for DeepSpeed), -1: none
        for key in set(zip(c.source, c.name, strict=True)):
            cat = _category(*key)
            code[key] = -1 if cat is None else 2 * categories.index(cat) + (key[0] == "deepspeed")
        codes = np.fromiter((code[k] for k in zip(c.source, c.name, strict=True)), dtype=np.int64, count=len(c))
        rec, val = np.asarray(c.rec, dtype=np.int64), self.values()
        usable = (rec >= 0) & np.isfinite(val) & (codes >= 0)
        key, size = (codes * n_records + rec)[usable], 2 * len(categories) * n_records  # sums in line order
        sums = np.bincount(key, val[usable], size).reshape(-1, n_records)
        counts = np.bincount(key, minlength=size).reshape(-1, n_records)
        out: dict[str, np.ndarray] = {}
        for i, category in enumerate(categories):
            meg, ds = 2 * i, 2 * i + 1
            col = np.where(counts[meg] > 0, sums[meg], np.where(counts[ds] > 0, sums[ds], np.nan)) / 1000.0
            if np.isfinite(col).any():
                out[TIMER_COLUMNS[category]] = col
        return out

    def spread(self, most: int = 64) -> dict[str, float]:
        """The median spread (max − min, ms) of each timer printed with both (the first ``most`` names)."""
        c, out = self.cols, {}
        for name, lo, hi, rec in zip(c.name, c.min_ms, c.max_ms, c.rec, strict=True):
            if rec != self.DROPPED and not (math.isnan(lo) or math.isnan(hi)) and (name in out or len(out) < most):
                out.setdefault(name, []).append(hi - lo)
        return {name: float(np.median(v)) for name, v in out.items()}

    def table(self, steps: np.ndarray, n: np.ndarray) -> pd.DataFrame | None:
        """The ``timers`` table: a row per timer value (ms) with its record's step and interval (``steps``,
        ``n`` per record; missing for none), and ``spread_ms`` = max − min, the imbalance across ranks."""
        c = self.cols
        if not len(c):
            return None
        rec = np.asarray(c.rec, dtype=np.int64)
        keep = rec != self.DROPPED
        placed = rec[keep] >= 0
        safe = np.where(placed, rec[keep], 0)
        table = pd.DataFrame({
            "attempt": np.asarray(c.attempt, dtype=np.int64)[keep],
            "step": pd.array(np.where(placed, steps[safe] if len(steps) else 0, 0), dtype="Int64"),
            "interval_steps": pd.array(np.where(placed, n[safe] if len(n) else 0, 0), dtype="Int64"),
            "line": np.asarray(c.line, dtype=np.int64)[keep],
            "source": np.asarray(c.source, dtype=object)[keep],
            "timer": np.asarray(c.name, dtype=object)[keep],
            "min_ms": np.asarray(c.min_ms, dtype=float)[keep],
            "max_ms": np.asarray(c.max_ms, dtype=float)[keep],
            "value_ms": self.values()[keep],
        })
        table.loc[~placed, ["step", "interval_steps"]] = pd.NA
        table["spread_ms"] = table["max_ms"] - table["min_ms"]
        return table


def _timer_value(at: At, name: str, raw: str) -> float:
    """A timer value in ms (what precedes a ``/``); text, NaN, a negative or absurd value is counted, NaN."""
    value = values.number(raw.partition("/")[0], nonfinite="nan")
    if value is not None and 0.0 <= value <= _MAX_TIMER_S * 1000:  # the common case, without a call
        return value
    at.time(name, value, what="timer", scale=1e-3, limit=_MAX_TIMER_S, example=f"{name}: {raw}"[:200])
    return math.nan


def _timer_header(state: Any, at: At, m: None) -> bool:
    """``(min, max) time across ranks (ms):`` or ``max time across ranks (ms):`` opens a block."""
    t = state.timers
    t.block = "minmax" if "(min, max)" in at.text else ("max" if "max time across ranks" in at.text else None)
    t.saw("megatron", at)
    return True


def _timer_body(state: Any, at: At, m: Match[str]) -> bool:
    """``name .......: (min, max)`` (or ``: max``) inside a block, or dotted as one (a header-less block)."""
    t = state.timers
    if not (t.block or (len(m.group(2)) >= 3 and m.group(3).startswith("("))):
        return False
    t.block = t.block or "minmax"
    if "megatron" not in t.first:
        t.saw("megatron", at)
    name, raw = m.group(1), m.group(3)
    if raw.startswith("("):
        parts = raw[1:-1].split(",")
        if len(parts) == 2 and t.block != "max":
            lo, hi = _timer_value(at, name, parts[0]), _timer_value(at, name, parts[1])
        else:
            lo, hi = math.nan, _timer_value(at, name, parts[-1])
    else:
        lo, hi = math.nan, _timer_value(at, name, raw)
    t.add(at, "megatron", name, lo, hi)
    return True


def _one_line_timers(state: Any, at: At, m: None) -> bool:
    """``time (ms) | a: x | b: y``: Megatron's older timers, or DeepSpeed's after ``[Rank N]``."""
    text, t = at.text, state.timers
    pos = text.find("time (ms)")
    if text.find("|", pos) < 0:
        return False
    t.block = None
    source = "deepspeed" if "[Rank" in text[:pos] else "megatron"
    if source == "deepspeed":
        t.saw(source, at)
    for part in text[pos + len("time (ms)"):].split("|")[1:]:
        name, sep, raw = part.partition(":")
        if sep and (name := name.strip()):
            t.add(at, source, name, math.nan, _timer_value(at, name, raw))
    return True


def _block_ends(state: Any, at: At, m: None) -> None:
    """Any other line ends a timer block (it reads nothing)."""
    state.timers.block = None


# Rows for a format's table, before its rows that read ':' lines: a timer line is read by these alone.
TIMER_LINES = (
    Line("time across ranks", None, _timer_header),
    Line("time (ms)", None, _one_line_timers),
    Line(":", _TIMER_BODY, _timer_body),
    Line(None, None, _block_ends, more=True),
)
