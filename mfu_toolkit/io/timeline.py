"""Printed interval records → one row per training step (the interval expander).

Text logs print one line every *k* steps (the log interval); the line's time stands for all the
steps since the previous line. This module holds the rules the text formats share for turning
such records into per-step rows:

- :func:`log_interval`: the interval is the log's own setting when given, else the most common
  positive gap between consecutive printed steps of one attempt (ties: the smallest, so a lost line
  never makes the interval look longer than it is); a gap over ``rules.MAX_LOG_INTERVAL`` is no
  log interval.
- :func:`interval_rows`: the steps each record stands for, from the gaps between records and the interval;
  a gap too long is one step (counted), steps missing between records are noted.
- :func:`within_budget`: expansion draws on the load's row budget (``rules.take_rows``); past it
  every record stays one row (its steps still counted in ``interval_steps``) and a note says so.
- :func:`no_overlap`: where each interval of a log whose timestamps are coarser than its durations ends, so
  that no interval starts before the previous one ends and every duration is kept.
- :func:`expand`: the rows themselves, one per step of each record's interval, its time spread
  evenly over them (``place="even"``: the interval runs from ``begin`` to ``end``; ``place="duration"``:
  it starts at ``begin`` and each step lasts ``share``). A record kept as fewer rows than it has
  steps (a gap too long, or the budget spent) shows its last steps, the one that printed the line last.
- :class:`Holes`: spans cut out of intervals (evaluations inside a training block): ``subtract(a, b)``
  is what of ``[a, b]`` they leave, visiting only the spans that can overlap it.
- :class:`Points`: point records (an accuracy, a checkpoint line) that intervals take, each once:
  ``first_in(a, b)`` is the earliest one inside ``[a, b]`` not yet taken.

It knows nothing of any one format (it imports none); the formats decide what a gap too long or a
restart means for their records and call these for the arithmetic.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from . import rules
from .reading import Reader

__all__ = ["Expansion", "Holes", "Points", "log_interval", "interval_rows", "within_budget", "no_overlap", "expand"]


def log_interval(steps: np.ndarray, attempts: np.ndarray | None = None, *, given: int | None = None) -> int | None:
    """The log interval: ``given`` when the log states it, else the most common gap, else None.

    Gaps are taken between consecutive records of the same attempt (a restart's step numbers say
    nothing about the interval); only gaps ``rules.interval_ok`` accepts count. Ties go to the
    smallest gap: with lines lost the longer gaps are the damaged ones. None when no gap qualifies
    (one record per attempt, or every gap too long): the caller says what it assumes then.
    """
    if given is not None:
        return given
    s = np.asarray(steps, dtype=np.int64)
    if len(s) < 2:
        return None
    gaps = s[1:] - s[:-1]
    if attempts is not None:
        a = np.asarray(attempts)
        gaps = gaps[a[1:] == a[:-1]]
    ok = gaps[(gaps > 0) & (gaps <= rules.MAX_LOG_INTERVAL)]
    if not len(ok):
        return None
    values, counts = np.unique(ok, return_counts=True)
    return int(values[counts == counts.max()].min())


def interval_rows(reader: Reader, steps: np.ndarray, attempts: np.ndarray, interval: int, lines: Any, *,
                  field: str = "step") -> np.ndarray:
    """How many steps each record stands for: the gap to the previous record of its attempt, at most
    ``interval``; an attempt's first record ``min(interval, max(1, step))``.

    A gap over ``rules.MAX_LOG_INTERVAL`` is no log interval: the record stands for its own step only, counted
    under ``rules.INTERVAL_TOO_LONG`` with its line (``lines[i]``) and ``field``. Steps between records that no
    record stands for (a gap longer than the interval: an excerpt, or lost lines) are noted.
    """
    it = np.asarray(steps, dtype=np.int64)
    att = np.asarray(attempts)
    first = np.ones(len(it), dtype=bool)
    first[1:] = att[1:] != att[:-1]
    gap = np.zeros(len(it), dtype=np.int64)
    gap[1:] = it[1:] - it[:-1]
    n = np.minimum(gap, interval)
    n[first] = np.minimum(interval, np.maximum(1, it[first]))
    too_long = np.flatnonzero(~first & (gap > rules.MAX_LOG_INTERVAL))
    n[too_long] = 1
    for i in too_long.tolist():
        reader.bad(rules.INTERVAL_TOO_LONG, line=lines[i], field=field,
                   example=f"{field} {int(it[i])}, {int(gap[i]):,} steps after the previous line")
    short = np.flatnonzero(~first & (gap > n))
    missing = sum(int(g) - int(k) for g, k in zip(gap[short].tolist(), n[short].tolist(), strict=True))
    if missing:
        reader.note(f"{missing} {field}s between logged lines are not in the log (an excerpt, or lost lines)")
    return n


def within_budget(rows: np.ndarray, reader: Reader) -> np.ndarray:
    """``rows`` (rows per record), or one row per record when the load's row budget cannot take them.

    One request for all the rows the expansion would add (``rows.sum() - len(rows)``); when
    refused, each record stays one row and a note says how many rows that saved.
    """
    extra = int(rows.sum()) - len(rows) if len(rows) else 0
    if extra and not rules.take_rows(extra):  # the load's budget of invented rows (see rules)
        reader.note(f"log intervals not expanded: one row per logged record (the steps between are counted in "
                    f"interval_steps) — expanding them would add {extra:,} rows, over this load's budget")
        return np.ones_like(rows)
    return rows


def no_overlap(reader: Reader, ts: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Interval ends from the timestamps ``ts`` (each the end of its interval), each at
    ``max(timestamp, previous end + span)``.

    A log may print its timestamps to the second and its durations in milliseconds: anchoring every interval
    at its timestamp would start a step before the previous one ends (Megatron's Mixtral log: step 3 would
    start 0.41 s before step 2 ends). So an interval that would overlap the one before starts at its end
    instead; every duration is kept, and an end moves later than its timestamp only by what the rounding
    took (noted). In closed form ``end_i = C_i + max_{j <= i}(ts_j - C_j)``, ``C`` the running sum of spans.
    """
    c = np.cumsum(span)
    end = c + np.maximum.accumulate(ts - c)
    moved = end - ts
    later = int((moved > 1e-9).sum())
    if later:
        reader.note(f"{later} of {len(ts)} intervals end after their line's timestamp "
                    f"(by at most {moved.max():.3f} s): "
                    "timestamps are whole seconds, so an interval that would overlap the previous one starts where it "
                    "ends (each end = max(timestamp, previous end + duration)); durations are as logged")
    return end


@dataclass(frozen=True)
class Expansion:
    """Per-step rows of the records: ``record`` is the index of the record each row comes from."""

    record: np.ndarray  # per row: which record
    within: np.ndarray  # per row: 0 .. rows-1 within its record
    step: np.ndarray  # per row: its step number (the record's step is the last one)
    start: np.ndarray  # per row: start time, less ``origin``
    share: np.ndarray  # per row: its duration
    logged: np.ndarray  # per row: the step that printed the record


def expand(last_step: np.ndarray, n: np.ndarray, rows: np.ndarray, begin: np.ndarray, *,
           place: Literal["even", "duration"], end: np.ndarray | None = None, share: np.ndarray | None = None,
           origin: float = 0.0) -> Expansion:
    """One row per step of each record: ``rows[i]`` rows for record ``i``, which stands for ``n[i]`` steps.

    ``place="even"``: record ``i``'s interval is ``begin[i]`` .. ``end[i]``, each step an equal share
    ``(end - begin) / n``; a record kept as fewer rows than steps shows its last step (``end - share``
    .. ``end``), so its logged time stays where the log put it. ``place="duration"``: the interval
    starts at ``begin[i]`` and each step lasts ``share[i]`` (the log prints a per-step mean); a record
    with fewer rows than steps shows its last steps, ``begin + (n - rows + j) * share``. Times are
    given less ``origin`` (subtracted before the per-step offsets, so they stay precise for epoch
    clocks).
    """
    n = np.asarray(n, dtype=np.int64)
    rows = np.asarray(rows, dtype=np.int64)
    total = int(rows.sum()) if len(rows) else 0
    record = np.repeat(np.arange(len(rows)), rows)
    within = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(rows) - rows, rows)
    begin = np.asarray(begin, dtype=float)
    if place == "even":
        if end is None:
            raise ValueError("place='even' needs end=")
        end = np.asarray(end, dtype=float)
        per = (end - begin) / n
        first = np.where(rows == n, begin, end - per)  # one row: its last step's share
        start = first[record] - origin + within * per[record]
    elif place == "duration":
        if share is None:
            raise ValueError("place='duration' needs share=")
        per = np.asarray(share, dtype=float)
        off = within + (n - rows)[record]  # the step of the interval, from 0
        start = begin[record] - origin + off * per[record]
    else:
        raise ValueError(f"place must be 'even' or 'duration', not {place!r}")
    step = np.asarray(last_step, dtype=np.int64)[record] - (rows - 1)[record] + within
    return Expansion(record, within, step, start, per[record], within == (rows - 1)[record])


class Holes:
    """Spans (start, end) to cut out of intervals, sorted once; ``spans`` is empty when there are none.

    :meth:`subtract` finds the first span that can reach an interval by bisection on the running maximum
    of the span ends, so cutting n intervals around m spans costs O((n + m) log m) plus the overlaps.
    """

    def __init__(self, spans: list[tuple[float, float]]) -> None:
        self.spans = sorted(spans)
        self.reach: list[float] = []  # reach[i]: the largest end among spans[: i + 1]
        top = -float("inf")
        for _, end in self.spans:
            top = max(top, end)
            self.reach.append(top)

    def subtract(self, a: float, b: float) -> list[tuple[float, float]]:
        """The parts of ``[a, b]`` no span covers, in order (the whole of it when none overlaps)."""
        out = []
        cur = a
        for i in range(bisect.bisect_right(self.reach, a), len(self.spans)):
            h0, h1 = self.spans[i]
            if h0 >= b:
                break
            if h1 <= cur:
                continue
            if h0 > cur:
                out.append((cur, h0))
            cur = max(cur, h1)
        if cur < b:
            out.append((cur, b))
        return out


class Points:
    """Times of point records for intervals to take, each at most once (``take``).

    :meth:`first_in` bisects to the interval's start, then skips the points already taken through
    ``nxt`` (path-compressed), so n lookups and takes over m points cost O((n + m) log m) in all.
    """

    def __init__(self, times: list[float]) -> None:
        self.order = sorted(range(len(times)), key=lambda i: (times[i], i))  # point indices in time order
        self.times = [times[i] for i in self.order]
        self.pos = {i: k for k, i in enumerate(self.order)}
        self.nxt = list(range(len(times) + 1))  # nxt[k]: the first position >= k not taken (path-compressed)

    def first_in(self, a: float, b: float) -> int | None:
        """The index of the earliest point not taken with ``a <= time <= b`` (ties: the lowest index), or None."""
        k = root = bisect.bisect_left(self.times, a)
        while self.nxt[root] != root:
            root = self.nxt[root]
        while self.nxt[k] != root:
            self.nxt[k], k = root, self.nxt[k]
        return self.order[root] if root < len(self.order) and self.times[root] <= b else None

    def take(self, i: int) -> None:
        """Take point ``i``: :meth:`first_in` passes over it from now on."""
        self.nxt[self.pos[i]] = self.pos[i] + 1
