"""Rules every format shares: the skip reasons, the interval, attempt and clock rules, and what a text head is.

How a field's text or JSON value becomes a number or a timestamp is :mod:`.values`
(``as_number`` is re-exported here).

Skip reasons are the keys of :attr:`LoadReport.skipped`, and every key is a constant: one of
:data:`REASONS` here for a reason formats share, or an UPPER_CASE module constant of the one format
that has it (a TFRecord checksum, a malformed XPlane protobuf). So reports compare across formats
and loads (``"non-numeric value"`` means the same thing in a Megatron log and in a W&B history), and
one reason is one count, however many ranks or metrics it hit. What tells one record apart (which
rank, which metric, the JSON decoder's message, an interval's kind) is the *detail*:
``reader.bad(VALUE_OUT_OF_RANGE, detail="rank 3", example=line)``. In strict mode the LoadError says
``"<reason> (<detail>): '<example>'"``; otherwise the report keeps, as the reason's first example,
``"<detail>: <example>"`` (the detail alone when there is no example; see :func:`with_detail`).
A suffix that changes what happened to the record (kept or dropped, a file left out or one entry
passed over) is a reason of its own, never a detail. A producer that finds the reason for a caller
(``reading.parse_json``) returns a :class:`SkipReason`: the constant, carrying its detail.
"""

from __future__ import annotations

import contextvars
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..run import LoadError
from .values import as_number, number  # as_number re-exported: the number rules live in values.py

__all__ = [
    "NON_NUMERIC",
    "BAD_STEP",
    "MALFORMED_JSON",
    "JSON_TOO_DEEP",
    "NOT_AN_OBJECT",
    "LINE_TOO_LONG",
    "UNREADABLE_CSV_ROW",
    "WRONG_FIELD_COUNT",
    "HALF_WRITTEN",
    "NON_MONOTONIC",
    "NEGATIVE_DURATION",
    "NON_FINITE_TIME",
    "DUPLICATE",
    "MISSING_FIELD",
    "VALUE_OUT_OF_RANGE",
    "INTERVAL_TOO_LONG",
    "NOT_UTF8",
    "MAX_LOG_INTERVAL",
    "MAX_INT64",
    "START_WITHOUT_END",
    "END_WITHOUT_START",
    "END_BEFORE_START",
    "FILE_LEFT_OUT",
    "JSON_REST_UNREAD",
    "ROW_BUDGET_SPENT",
    "UNKNOWN_TIME_UNIT",
    "REASONS",
    "SkipReason",
    "with_detail",
    "in_full",
    "as_step",
    "as_count",
    "as_number",
    "Clock",
    "clock_tolerance",
    "MAX_EPOCH_S",
    "interval_ok",
    "take_rows",
    "TIME_UNITS",
    "unit_factor",
    "wallclock",
    "start_row_budget",
    "end_row_budget",
    "BINARY_MAGIC",
    "looks_like_text",
]

# --- skip reasons ----------------------------------------------------------------------------
NON_NUMERIC = "non-numeric value (left missing, record kept)"
BAD_STEP = "step is not a non-negative integer"
MALFORMED_JSON = "malformed JSON record"
JSON_TOO_DEEP = "JSON nested too deeply to read"
NOT_AN_OBJECT = "record is not a JSON object"
LINE_TOO_LONG = "line too long"
UNREADABLE_CSV_ROW = "unreadable CSV row"
WRONG_FIELD_COUNT = "wrong number of fields"
HALF_WRITTEN = "half-written last line"
NON_MONOTONIC = "non-monotonic timestamp"
NEGATIVE_DURATION = "negative duration"
NON_FINITE_TIME = "time is missing, NaN or infinite"
DUPLICATE = "duplicate record (kept the first)"
MISSING_FIELD = "required field missing"
VALUE_OUT_OF_RANGE = "value out of range"
INTERVAL_TOO_LONG = "step gap too long to be one log interval (record kept as one step)"
NOT_UTF8 = "bytes that are not UTF-8 (replaced, record kept)"

# the interval's kind (``init``, ``job``, a badput label) is the detail
START_WITHOUT_END = "interval start without an end"
END_WITHOUT_START = "interval end without a start"
END_BEFORE_START = "interval end before its start"
# a whole file (or one part of a run folder) that could not be read: none of its records are kept
FILE_LEFT_OUT = "unreadable file left out"
# a broken JSON value the reader cannot step over: what came before it is kept, the rest of the file is not read
JSON_REST_UNREAD = "malformed JSON (the rest of the file is not read)"
# a table or list longer than a load may read: the rows past the budget are not read
ROW_BUDGET_SPENT = "row budget spent (rows past it not read)"
UNKNOWN_TIME_UNIT = "unknown time unit"

REASONS: frozenset[str] = frozenset((
    NON_NUMERIC, BAD_STEP, MALFORMED_JSON, JSON_TOO_DEEP, NOT_AN_OBJECT, LINE_TOO_LONG, UNREADABLE_CSV_ROW,
    WRONG_FIELD_COUNT, HALF_WRITTEN, NON_MONOTONIC, NEGATIVE_DURATION, NON_FINITE_TIME, DUPLICATE, MISSING_FIELD,
    VALUE_OUT_OF_RANGE, INTERVAL_TOO_LONG, NOT_UTF8, START_WITHOUT_END, END_WITHOUT_START, END_BEFORE_START,
    FILE_LEFT_OUT, JSON_REST_UNREAD, ROW_BUDGET_SPENT, UNKNOWN_TIME_UNIT,
))


class SkipReason(str):
    """A skip reason (its text is the constant's) that carries the ``detail`` of one record.

    What a shared producer returns when it finds the reason for its caller (``parse_json``'s
    ``SkipReason(MALFORMED_JSON, "Expecting ',' delimiter")``): ``reader.bad(why)`` counts it under the
    constant and keeps the detail. ``str(why)`` is the plain constant.
    """

    detail: str | None

    def __new__(cls, reason: str, detail: str | None = None) -> SkipReason:
        self = super().__new__(cls, reason)
        self.detail = detail
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (SkipReason, (str(self), self.detail))


def in_full(reason: str) -> str:
    """A reason as a message says it: ``"<reason> (<detail>)"`` for a :class:`SkipReason` with a detail, else
    the text."""
    detail = getattr(reason, "detail", None)
    return f"{str(reason)} ({detail})" if detail else str(reason)


def with_detail(detail: str | None, example: str | None) -> str | None:
    """The example a report keeps for a skipped record: ``"<detail>: <example>"``, either one alone
    when the other is None, None when both are."""
    if detail is None:
        return example
    return detail if example is None else f"{detail}: {example}"


# --- time units ------------------------------------------------------------------------------
# Factor that turns a value in this unit into seconds. ``epoch_*`` are absolute times.
TIME_UNITS: dict[str, float] = {
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
    "epoch_s": 1.0,
    "epoch_ms": 1e-3,
}


def unit_factor(unit: str, *, path: str | Path | None = None, field: str | None = "time_unit") -> float:
    """Seconds per ``unit``; an unknown unit is a LoadError that lists the known ones."""
    if not isinstance(unit, str) or unit not in TIME_UNITS:
        raise LoadError(f"unknown time unit {unit!r}; expected one of {', '.join(TIME_UNITS)}", path=path, field=field)
    return TIME_UNITS[unit]


def wallclock(epoch_s: float) -> str:
    """ISO text (UTC) of an absolute time, for ``meta.extra['t0_wallclock']``; '' when out of range."""
    try:
        return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return ""


# --- bounds ----------------------------------------------------------------------------------
MAX_INT64 = 2**63 - 1
# POSIX seconds of 10000-01-01T00:00:00Z: a later time is not one a log was written at.
MAX_EPOCH_S = 253_402_300_800.0
# A log interval (steps between two printed lines) longer than this is not expanded into one
# row per step: the record stays one row, and the skipped steps are a count
# (``interval_steps``) and a skip entry, never millions of invented rows.
MAX_LOG_INTERVAL = 100_000


def as_step(value: Any) -> int | None:
    """A step number (a non-negative integer that fits int64) or ``None``.

    ``1e308``, ``-1``, ``3.5``, ``"nan"``, ``True`` are all ``None``: a format counts the record
    under :data:`BAD_STEP` instead of wrapping it to a negative int64.
    """
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        text = value.strip()
        if len(text) > 40:  # no int64 has more digits; int() of thousands of digits is refused
            return None
        if text.isascii() and text.isdigit():  # "²" is a digit to str.isdigit, not to int()
            value = int(text)
        else:
            try:
                value = float(text)
            except ValueError:
                return None
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            return None
        value = int(value)
    try:
        out = int(value)
    except (TypeError, ValueError, OverflowError):
        return None
    if out != value or out < 0 or out > MAX_INT64:
        return None
    return out


class Clock:
    """The shared clock rule: times may run back by at most ``tol`` seconds, and a lone record far
    ahead of its neighbours is the bad one.

    ``check(t)`` says ``"ok"``, ``"late"`` (``t`` is more than ``tol`` before a record already
    accepted: skip it) or ``"retract"``: ``t`` is late only against the record accepted just
    before it, which had jumped ahead of everything earlier; that record is the bad one (a
    garbled time), so the caller drops it and keeps ``t``. Constant time and memory per record.
    """

    def __init__(self, tol: float) -> None:
        self.tol = tol
        self.t_max = -math.inf
        self.before = -math.inf  # the largest time before the record that set t_max
        self.last_set_max = False  # whether the record accepted last set t_max

    def check(self, t: float) -> str:
        if t >= self.t_max - self.tol:
            if t > self.t_max:
                self.before, self.t_max, self.last_set_max = self.t_max, t, True
            else:
                self.last_set_max = False
            return "ok"
        if self.last_set_max and self.before > -math.inf and t >= self.before - self.tol:
            self.t_max, self.last_set_max = (t, True) if t > self.before else (self.before, False)
            return "retract"
        return "late"


def clock_tolerance(value: Any) -> float:
    """A format's ``clock_tolerance_s`` option (seconds :class:`Clock` lets times run back) as a float.

    A number or numeric text (``values.number``), finite and >= 0; anything else is a ValueError that
    names the option, raised from the format's ``Options``.
    """
    tol = number(value)
    if tol is None or tol < 0:
        raise ValueError(f"clock_tolerance_s must be a finite number of seconds >= 0; got {value!r}")
    return tol


def as_count(value: Any, *, upper: int = 10_000_000) -> int | None:
    """A positive count (ranks, GPUs, batch) no larger than ``upper``, else ``None``.

    A rank of 3e9 or a world size of 0 is not a fact about a job: the format counts it under
    :data:`VALUE_OUT_OF_RANGE` and leaves the value missing.
    """
    out = as_step(value)
    if out is None or out <= 0 or out > upper:
        return None
    return out


# Rows a load may invent by expanding log intervals into one row per step, in all: at least
# MIN_EXPANDED_ROWS, else ROWS_PER_INPUT_BYTE per byte of input. A 1 MB log of records 100,000
# steps apart would otherwise become 10^9 rows; within the budget a real log is unaffected (a
# Megatron line is ~300 bytes, so even a log interval of 600 steps fits).
MIN_EXPANDED_ROWS = 2_000_000
ROWS_PER_INPUT_BYTE = 2
_budget: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("mfu_row_budget", default=None)


def start_row_budget(input_bytes: int) -> contextvars.Token:
    """Open the expansion budget of one load (the pipeline calls this around ``parse``)."""
    return _budget.set([max(MIN_EXPANDED_ROWS, ROWS_PER_INPUT_BYTE * max(int(input_bytes), 0))])


def end_row_budget(token: contextvars.Token) -> None:
    _budget.reset(token)


def take_rows(n_rows: int) -> bool:
    """Whether a format may expand intervals into ``n_rows`` more rows; takes them if so.

    A format asks once for all the rows it would add (or once per interval). When the answer is
    no it keeps one row per logged record, the skipped steps a count, and notes why.
    """
    left = _budget.get()
    if left is None:  # outside a load (a format called directly): the default budget
        return n_rows <= MIN_EXPANDED_ROWS
    if n_rows > left[0]:
        return False
    left[0] -= int(n_rows)
    return True


def interval_ok(n_steps: int) -> bool:
    """Whether a gap of ``n_steps`` between two logged steps may be expanded row by row."""
    return 0 < n_steps <= MAX_LOG_INTERVAL


# --- sniffing --------------------------------------------------------------------------------
# Compressed or binary containers: gzip, zip, xz, zstd, 7z, NumPy, HDF5 (a sniffer's head is already
# gunzipped, so gzip magic there is a file compressed again inside the stream).
BINARY_MAGIC = (b"\x1f\x8b", b"PK\x03\x04", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"7z\xbc\xaf\x27\x1c", b"\x93NUMPY",
                b"\x89HDF")
# bytes a text log holds: printable, UTF-8 lead/continuation bytes, whitespace, ESC, backspace
_TEXT_BYTES = bytes(range(0x20, 0x100)) + b"\t\n\r\x0b\x0c\x1b\x08"


def looks_like_text(head: bytes) -> bool:
    """Whether a file's ``head`` reads as a text log: no binary magic, NUL bytes under 1 %, control bytes
    and bytes that are not UTF-8 under 5 % (a sniffer rejects anything else without reading further)."""
    if head.startswith(BINARY_MAGIC):
        return False
    if head.count(0) > len(head) // 100:
        return False
    controls = len(head.translate(None, _TEXT_BYTES))
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    return controls + undecodable <= len(head) // 20
