"""Printed interval records → one row per training step (the interval expander).

Text logs print one line every *k* steps (the log interval); the line's time stands for all the
steps since the previous line. This module holds the rules the text formats share for turning
such records into per-step rows:

- :func:`attempts`: which attempt (a launch of the job) each record belongs to: a new one opens where a
  launch marker precedes a record, or where the step number resets (goes back, or does not increase).
- :func:`log_interval`: the interval is the log's own setting when given, else the most common
  positive gap between consecutive printed steps of one attempt (ties: the smallest, so a lost line
  never makes the interval look longer than it is); a gap over ``rules.MAX_LOG_INTERVAL`` is no
  log interval.
- :func:`checked_interval`: a log interval the user gave, validated (a LoadError naming the option).
- :func:`interval_or_one`: :func:`log_interval`, else one step per record, with a note saying why.
- :func:`interval_rows`: the steps each record stands for, from the gaps between records and the interval;
  a gap too long is one step (counted), steps missing between records are noted.
- :func:`within_budget`: expansion draws on the load's row budget (``rules.take_rows``); past it
  every record stays one row (its steps still counted in ``interval_steps``) and a note says so.
- :func:`on_rows`: sparse record fields as columns of the expanded rows (interval means on every row of
  their record, point values on the row of the step that printed them).
- :func:`record_at`: which record's interval holds a step (to place an event the log ties to a step).
- :func:`back_to_back`: intervals placed one after the other from their durations, with gaps between.
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

__all__ = ["Expansion", "Holes", "Points", "attempts", "log_interval", "checked_interval", "interval_or_one",
           "interval_rows", "within_budget", "record_at", "back_to_back", "no_overlap", "expand", "on_rows"]


def attempts(steps: np.ndarray | None = None, *, launches: np.ndarray | None = None,
             resets: Literal["not_increasing", "back"] | None = "not_increasing") -> np.ndarray:
    """The attempt of each record (0, 1, ...; records in log order), as an int64 array.

    A record opens a new attempt when a launch marker precedes it (``launches[i]``: the job started
    again between record ``i - 1`` and record ``i``) or when its step number resets against the previous
    record's: ``resets="not_increasing"``: a step at or below it (a relaunch resumes from a checkpoint at or
    before the last step logged); ``"back"``: a step below it (for formats whose equal step is the same
    step logged again, merged or dropped before this is asked); ``None``: step numbers open no attempt
    (``steps`` may then be omitted). A marker before the first record opens nothing: no attempt precedes
    it. Linear time. Records a format drops (repeated lines, copies) are left out before this is called.
    """
    if resets not in ("not_increasing", "back", None):
        raise ValueError(f"resets must be 'not_increasing', 'back' or None, not {resets!r}")
    if steps is None and (resets is not None or launches is None):
        raise ValueError("attempts() needs steps= to find resets (or launches= with resets=None)")
    n = len(steps) if steps is not None else len(launches)  # type: ignore[arg-type]
    new = np.zeros(n, dtype=bool)
    if resets is not None:
        s = np.asarray(steps, dtype=np.int64)
        new[1:] = s[1:] <= s[:-1] if resets == "not_increasing" else s[1:] < s[:-1]
    if launches is not None:
        marks = np.asarray(launches, dtype=bool)
        if len(marks) != n:
            raise ValueError(f"launches has {len(marks)} entries for {n} records")
        new[1:] |= marks[1:]
    return np.cumsum(new, dtype=np.int64)


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


def checked_interval(reader: Reader, given: Any, option: str = "log_interval") -> int | None:
    """``given`` (the steps per printed line a user passed as ``option``) as an int, None when not given; a value
    that is no positive whole number, or over ``rules.MAX_LOG_INTERVAL``, is a LoadError naming the option."""
    if given is None:
        return None
    value = rules.as_step(given)
    if value is None or value < 1:
        reader.fail(f"{option} must be a positive whole number of steps; got {given!r}", field=option)
    if not rules.interval_ok(value):
        reader.fail(f"{option}={value:,} is over {rules.MAX_LOG_INTERVAL:,} steps per printed line, too long to "
                    "expand row by row; pass the interval the job used", field=option)
    return value


def interval_or_one(reader: Reader, steps: np.ndarray, attempts: np.ndarray, given: int | None = None) -> int:
    """``given``, else :func:`log_interval` of the records, else 1: each record one step, with a note saying why
    (every gap too long to be an interval, or one record per attempt)."""
    found = log_interval(steps, attempts)
    if given is None and found is None and len(steps):
        a = np.asarray(attempts)
        reader.note(f"no step gap between lines is a log interval (all over {rules.MAX_LOG_INTERVAL:,}); each line "
                    "taken as one step - pass log_interval= to change" if (a[1:] == a[:-1]).any() else
                    "log interval unknown (one line per launch); each line taken as one step - pass log_interval= "
                    "to change")
    return given or found or 1


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


def record_at(steps: np.ndarray, attempts: np.ndarray, n: np.ndarray, attempt: int, step: int) -> int | None:
    """The record whose interval holds ``step`` of ``attempt`` (its last step ``steps[i]``, ``n[i]`` steps long),
    else None; records sorted by attempt, then step within it. Two bisections."""
    lo, hi = np.searchsorted(attempts, attempt, "left"), np.searchsorted(attempts, attempt, "right")
    j = int(lo + np.searchsorted(steps[lo:hi], step, "left"))
    if j >= hi or not (steps[j] - n[j] < step <= steps[j]):
        return None
    return j


def back_to_back(span: np.ndarray, gap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(start, end)`` of intervals placed one after the other from 0: ``gap[i]`` seconds, then ``span[i]``.

    One running sum, gap then span per interval, so each start is exactly the previous end plus its gap.
    """
    walk = np.cumsum(np.column_stack([gap, span]).ravel()) if len(span) else np.zeros(0)
    return walk[0::2], walk[1::2]


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


def on_rows(ex: Expansion, rows: np.ndarray, fields: dict[str, tuple[Any, Any]], *, every: Any = ()) -> dict[str, Any]:
    """Sparse record fields (``name -> (record indices, values)``) as columns of the rows ``expand`` made (``rows[i]``
    for record ``i``): a field named in ``every`` (a mean over its interval) on every row of its record, any other
    (a point value) on the record's last row, the step that printed it; NaN elsewhere. In the fields' order."""
    last_row = np.cumsum(rows) - 1
    out: dict[str, Any] = {}
    for name, (where, got) in fields.items():
        idx, vals = np.asarray(where, dtype=np.int64), np.asarray(got, dtype=float)
        if name in every:
            per = np.full(len(rows), np.nan)
            per[idx] = vals
            out[name] = per[ex.record]
        else:
            out[name] = np.full(len(ex.record), np.nan)
            out[name][last_row[idx]] = vals
    return out
