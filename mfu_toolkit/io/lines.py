"""Text logs read through a table of line kinds: ``LINES = (Line(needle, regex, handler), ...)`` and :func:`read`.

A text format declares what each kind of line looks like and which function reads it; :func:`read` runs
every line of the log through that table. It is a table, not a template language: a handler is a plain
function of the format, so each keeps its own rules and its own per-field error reporting.

- A row is tried only when its ``needle`` (a plain substring, or a tuple of substrings: any of them) is in
  the line, so a line of no interest costs one ``in`` test per row and never a regular expression.
- Then its ``regex``, when it has one, is *searched* (a launcher prefix such as ``[rank0]:`` may come first);
  no match: the next row.
- Then ``handler(state, at, match)`` reads the line (``match`` is None for a row without a regex) and says
  whether it did: a false result passes the line on to the next row.
- The first row that reads a line ends its dispatch, unless the row is marked ``more=True``: the line may
  also hold what later rows read (a ``using world size`` line both starts a launch and states the world
  size). A row with neither needle nor regex sees every line that reaches it.
- Blank lines are passed over; every other line is counted in the report's ``lines_read``, and :func:`read`
  returns how many lines no row read (the format says so in a note).
- NCCL's own ``NCCL_DEBUG=INFO`` lines never reach the table: ``reader.lines()`` of a text format
  (``TEXT_LOG = True``) comes without them, and the shared stage (:class:`mfu_toolkit.io.nccl_info.NcclStage`)
  reads and counts them, so they are neither a row's lines nor lines no row read.

:class:`At` is where the dispatcher is (the reader, the line number and text); ``at.bad(reason, field)``
counts a damaged field under a shared skip reason of :mod:`.rules` (or, in strict mode, raises a
``LoadError`` naming file, line and field), and :meth:`At.time` checks a time value against the shared
reasons. :class:`Stated` keeps what a log states about its job (world size, batch) with the line it is on
(:func:`states` makes the handler of a row whose match states one), :class:`Columns` keeps the records a
table read, column by column, in constant memory per record, and :func:`claim` makes one claim of the values
a log printed about its own throughput, on the lines they are on.

Rows for a line kind that the logs of several formats hold are in their own modules, for any format's table:
the step timers of Megatron-core and of DeepSpeed's engine are :data:`mfu_toolkit.io.timers.TIMER_LINES`.

Time stays linear in the input: a needle is a substring test, a row's regex runs at most once per line that
holds its needle, and each format keeps its regexes free of backtracking on long lines (its tests measure
them; ``tests/test_io_lines.py`` measures the dispatcher).
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from re import Match, Pattern
from typing import Any

import numpy as np

from . import rules
from .base import Claim, Parsed
from .reading import Reader

__all__ = ["At", "Columns", "Line", "Stated", "claim", "read", "states"]

Handler = Callable[[Any, "At", "Match[str] | None"], Any]


@dataclass(frozen=True)
class Line:
    """One kind of line: ``needle`` tested first, then ``regex`` searched, then ``handler`` called.

    ``needle``: a substring the line must contain (a tuple: any one of them), or None for no pre-check.
    ``regex``: a compiled pattern searched in the line, its match passed to the handler, or None.
    ``handler(state, at, match)``: reads the line; a true result means it did. ``more``: after reading the
    line, let the rows below read it too.
    """

    needle: str | tuple[str, ...] | None
    regex: Pattern[str] | None
    handler: Handler
    more: bool = False

    def __post_init__(self) -> None:
        needles = self.needle if isinstance(self.needle, tuple) else (self.needle,)
        if self.needle is not None and not all(isinstance(n, str) and n for n in needles):
            raise ValueError(f"a Line's needle is a non-empty string or a tuple of them; got {self.needle!r}")
        if self.regex is not None and not isinstance(self.regex, Pattern):
            raise ValueError(f"a Line's regex is a compiled pattern or None; got {self.regex!r}")
        if not callable(self.handler):
            raise ValueError(f"a Line's handler must be callable; got {self.handler!r}")


class At:
    """The line being read: ``reader``, line number ``ln`` and ``text``; reports a damaged field of it."""

    __slots__ = ("reader", "ln", "text")

    def __init__(self, reader: Reader, ln: int = 0, text: str = "") -> None:
        self.reader, self.ln, self.text = reader, ln, text

    def bad(self, reason: str, field: str | None = None, example: str | None = None, *,
            detail: str | None = None) -> None:
        """Count this line under ``reason`` (a skip-reason constant, with this record's ``detail``), naming
        ``field``; in strict mode raise a ``LoadError`` naming the file, this line and the field."""
        self.reader.bad(reason, line=self.ln, field=field, example=example, detail=detail)

    def time(self, field: str, value: float | None, *, what: str, scale: float = 1.0, limit: float = math.inf,
             example: str | None = None, text_missing: bool = False) -> float | None:
        """``value`` when it is a usable time, else None after counting why.

        ``value`` is the field as ``values.number(..., nonfinite="nan")`` read it (None for text, NaN for a
        printed NaN or infinity), in units of ``scale`` seconds. Counted: text under ``NON_NUMERIC`` (or, with
        ``text_missing``, as a missing time), NaN under ``NON_FINITE_TIME``, a negative value under
        ``NEGATIVE_DURATION``, more than ``limit`` seconds under ``VALUE_OUT_OF_RANGE``; ``what`` names the
        value in the detail.
        """
        detail: str | None = what
        if value is None and not text_missing:
            reason, detail = rules.NON_NUMERIC, None
        elif value is None or value != value:
            reason = rules.NON_FINITE_TIME
        elif value < 0:
            reason = rules.NEGATIVE_DURATION
        elif value * scale > limit:
            reason, detail = rules.VALUE_OUT_OF_RANGE, f"{what} over {limit:g} s"
        else:
            return value
        self.bad(reason, field, example, detail=detail)
        return None


def read(reader: Reader, table: Iterable[Line], state: Any, lines: Iterable[tuple[int, str]] | None = None) -> int:
    """Run each non-blank line of ``lines`` (default ``reader.lines()``) through ``table``, in the table's order.

    Counts the lines in ``reader.report.lines_read``; returns how many of them no row read.
    """
    rows = [_plain(row) for row in table]
    report = reader.report
    at = At(reader)
    unread = 0
    for ln, text in reader.lines() if lines is None else lines:
        if not text or text.isspace():
            continue
        report.lines_read += 1
        at.ln, at.text = ln, text
        done = False
        for needle, regex, handler, more in rows:
            if needle is not None and needle not in text:
                continue
            if regex is None:
                m = None
            elif (m := regex.search(text)) is None:
                continue
            if handler(state, at, m):
                done = True
                if not more:
                    break
        if not done:
            unread += 1
    return unread


def _plain(row: Line) -> tuple[str | None, Pattern[str] | None, Handler, bool]:
    """A row as the dispatcher's loop takes it: one of several needles becomes a handler that tests them first."""
    if not isinstance(row.needle, tuple):
        return row.needle, row.regex, row.handler, row.more
    needles, regex, handler = row.needle, row.regex, row.handler

    def any_needle(state: Any, at: At, m: Match[str] | None) -> Any:
        for needle in needles:  # a plain loop: cheaper than any() of a generator, or a regex of them
            if needle in at.text:
                break
        else:
            return False
        return (regex is None or (m := regex.search(at.text)) is not None) and handler(state, at, m)

    return None, None, any_needle, row.more


class Stated:
    """What a log states about its job (world size, batch, dtype), each value with the first line it is on.

    :meth:`add` keeps the first line of each distinct value of a name (at most ``max_distinct`` values);
    :meth:`one` gives a name's value only when the log printed one value: several (a file holding several
    launches) are noted in the report, and no value is stated; :meth:`state` makes that value a fact.
    """

    def __init__(self, max_distinct: int = 8) -> None:
        self.seen: dict[str, dict[Any, tuple[int, str]]] = {}
        self.max_distinct = max_distinct

    def add(self, name: str, value: Any, line: int, text: str) -> None:
        seen = self.seen.setdefault(name, {})
        if value not in seen and len(seen) < self.max_distinct:
            seen[value] = (line, text.strip()[:200])

    def get(self, name: str) -> dict[Any, tuple[int, str]]:
        """Every distinct value of ``name`` with its first ``(line, text)``."""
        return self.seen.get(name, {})

    def one(self, reader: Reader, name: str, what: str) -> tuple[Any, int, str] | None:
        """``(value, line, text)`` of the one value stated for ``name``; None (noted) when it varies."""
        seen = self.seen.get(name)
        if not seen:
            return None
        if len(seen) > 1:
            shown = ", ".join(f"{v!r} (line {ln})" for v, (ln, _) in seen.items())
            reader.note(f"{what} is printed with different values: {shown} (several launches?); not stated as a fact")
            return None
        ((value, (line, text)),) = seen.items()
        return value, line, text

    def state(self, out: Parsed, reader: Reader, name: str, what: str, *facts: str) -> tuple[Any, int, str] | None:
        """The one value of ``name`` (:meth:`one`), stated as each of ``facts`` at its file:line; it, or None."""
        got = self.one(reader, name, what)
        for fact in facts if got is not None else ():
            out.fact(fact, got[0], f"{reader.name}:{got[1]}", got[2])
        return got


def states(name: str, convert: Callable[[str], Any] | None = None, *, field: str | None = None) -> Handler:
    """The handler of a row whose match's first group states ``name`` (into ``state.stated``, a :class:`Stated`).

    ``convert`` turns the group's text into the value (a count, say); when it gives None the line is counted
    under ``VALUE_OUT_OF_RANGE`` naming ``field`` (the value's name in the log), and nothing is stated.
    """

    def handler(state: Any, at: At, m: Match[str]) -> bool:
        value = m.group(1) if convert is None else convert(m.group(1))
        if value is None:
            at.bad(rules.VALUE_OUT_OF_RANGE, field, at.text.strip()[:200])
        else:
            state.stated.add(name, value, at.ln, at.text)
        return True

    return handler


def claim(reader: Reader, out: Parsed, metric: str, pairs: list[tuple[float, int]], unit: str, counts: str, *,
          label: str, last: bool = False, basis: str = "steady") -> None:
    """One claim of the finite values of ``(value, line)`` pairs: their median, or with ``last`` the last one
    (a running average), at the line of the first. Values that are not finite are noted (``label`` names
    them), not dropped silently."""
    finite = [(v, ln) for v, ln in pairs if math.isfinite(v)]
    if len(finite) < len(pairs):
        reader.note(f"{len(pairs) - len(finite)} values of {label} are not finite numbers: left out of its claim")
    if not finite:
        return
    where = f"{reader.name}:{finite[0][1]}"
    if last:
        out.claim(Claim(metric, finite[-1][0], unit, counts, where, n=len(finite), statistic="last", basis=basis))
    else:
        out.claim(Claim.summarise(metric, [v for v, _ in finite], unit=unit, counts=counts, where=where, basis=basis))


class Columns:
    """Records kept column by column, so that a log of millions of lines costs bytes per record, not objects.

    Each keyword names a column and its type: an ``array`` typecode (``"q"`` int64, ``"d"`` float) or ``"O"``
    (a list of objects); a column is an attribute of that name. ``fields`` holds sparse numeric columns (a field
    printed on some records only) as ``name -> (record indices, values)``, at most ``max_fields`` names; values
    of further names are not kept, and counted in ``refused``.
    """

    def __init__(self, max_fields: int = 256, **columns: str) -> None:
        cols = [[] if code == "O" else array(code) for code in columns.values()]
        for name, col in zip(columns, cols, strict=True):
            setattr(self, name, col)
        self._first = cols[0]
        self._appends = tuple(col.append for col in cols)
        self.fields: dict[str, tuple[array, array]] = {}
        self.max_fields = max_fields
        self.refused = 0

    def __len__(self) -> int:
        return len(self._first)

    def add(self, *values: Any, fields: dict[str, float] | None = None) -> int:
        """Append one record (a value per column, in their order) and its sparse ``fields``; its index."""
        i = len(self._first)
        for append, value in zip(self._appends, values):  # noqa: B905 (one value per column, checked in tests)
            append(value)
        if fields:
            for name, value in fields.items():
                slot = self.fields.get(name)
                if slot is None:
                    if len(self.fields) >= self.max_fields:
                        self.refused += 1
                        continue
                    slot = self.fields[name] = (array("q"), array("d"))
                slot[0].append(i)
                slot[1].append(value)
        return i

    def dense(self, name: str) -> np.ndarray:
        """The sparse field ``name`` as one float per record, NaN where a record has none."""
        out = np.full(len(self), np.nan)
        idx, vals = self.fields.get(name, ((), ()))
        out[np.asarray(idx, dtype=np.int64)] = np.asarray(vals, dtype=float)
        return out
