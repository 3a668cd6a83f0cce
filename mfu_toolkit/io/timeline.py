"""Printed interval records → one row per training step (the interval expander).

Text logs print one line every *k* steps (the log interval); the line's time stands for all the
steps since the previous line. This module holds the rules the text formats share for turning
such records into per-step rows:

- :func:`log_interval`: the interval is the log's own setting when given, else the most common
  positive gap between consecutive printed steps of one attempt (ties: the smallest, so a lost line
  never makes the interval look longer than it is); a gap over ``rules.MAX_LOG_INTERVAL`` is no
  log interval.
- :func:`within_budget`: expansion draws on the load's row budget (``rules.take_rows``); past it
  every record stays one row (its steps still counted in ``interval_steps``) and a note says so.
- :func:`expand`: the rows themselves, one per step of each record's interval, its time spread
  evenly over them (``place="even"``: the interval runs from ``begin`` to ``end``; ``place="duration"``:
  it starts at ``begin`` and each step lasts ``share``). A record kept as fewer rows than it has
  steps (a gap too long, or the budget spent) shows its last steps, the one that printed the line last.

It knows nothing of any one format (it imports none); the formats decide what a gap too long or a
restart means for their records and call these for the arithmetic.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from . import rules
from .reading import Reader

__all__ = ["Expansion", "log_interval", "within_budget", "expand"]


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
