"""The value of one log field as a number or as an epoch-seconds timestamp; nothing else.

Every format reads its fields' text (or the JSON value a parser already decoded) through these
functions, so a ``nan``, a ``1,234``, a 200-digit string or a ``2024-01-01T10:00:00+01:00`` means
the same in every format. What a format does around the value stays in the format: locating a
stamp in its line, stripping a unit (``45.2%``, ``3.5GB``), naming the skip reason.

- :func:`number`: a float from a JSON number or a numeric text, ``None`` (or ``default``) when
  the value is no number. Keyword options cover the real differences between formats: strings
  refused (JSON numbers only), a strict ASCII grammar, thousands separators, what happens to
  NaN and infinity, and to an integer too large for a float.
- :func:`as_number`: ``number(value, default=NaN)``, a finite float or NaN.
- :func:`numeral`: whether a text is written as a plain decimal number, however long (to name
  the skip reason of a value :func:`number` refused).
- :func:`timestamp`: epoch seconds from an ISO 8601 date-time (UTC unless the text carries an
  offset), ``None`` when the text is not one.
- :func:`duration`: seconds from a clock-style duration (``H:MM:SS`` as Python's ``timedelta``
  prints it, ``1 day, 0:08:23`` included; Slurm's ``[D-][HH:]MM:SS``), ``None`` when the text is
  not one.

Both refuse a text longer than :data:`MAX_CHARS` characters (after surrounding whitespace)
before parsing it: no number or stamp a logger prints is that long, so such a field is damage,
and refusing it unread keeps the cost of a field constant. The module imports no pandas.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any, Literal

__all__ = ["MAX_CHARS", "number", "numeral", "as_number", "timestamp", "duration"]

# Longest text (surrounding whitespace removed) that is parsed at all. ``repr`` of any float
# has at most 24 characters, an int64 19 digits, an ISO 8601 stamp with nanoseconds and an
# offset 35; a longer field is damage (or an attack), not a value.
MAX_CHARS = 64

# The decimal grammar of a C ``printf``/``strtod`` number in ASCII: sign, digits with at most one
# point, optional exponent. Python's ``float()`` accepts this and also ``nan``/``inf`` words,
# ``_`` between digits, non-ASCII decimal digits and surrounding whitespace; ``plain=True``
# accepts only this.
_PLAIN = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

NonFinite = Literal["refuse", "keep", "nan"]
Overflow = Literal["refuse", "inf"]


def _text(s: str, plain: bool, thousands: bool) -> float | None:
    """The float a numeric text spells, before the non-finite rule; None when it spells none."""
    if plain:
        if len(s) > MAX_CHARS or not _PLAIN.fullmatch(s):
            return None
    else:
        if thousands:
            s = s.replace(",", "")
        s = s.strip()
        if len(s) > MAX_CHARS:
            return None
    try:
        return float(s)
    except ValueError:
        return None


def number(
    value: Any,
    *,
    text: bool = True,
    plain: bool = False,
    thousands: bool = False,
    nonfinite: NonFinite = "refuse",
    overflow: Overflow = "refuse",
    default: float | None = None,
) -> float | None:
    """``value`` as a float, or ``default`` (``None`` unless given) when it is no number.

    What is a number:

    - ``bool`` never is (``True`` is a flag, not 1.0), whatever the options.
    - ``int`` and ``float`` (a JSON number): ``float(value)``. An int beyond the float range
      (``float()`` raises ``OverflowError``) is refused, or with ``overflow="inf"`` it is
      ``±inf``, as the text ``"1e999"`` is.
    - ``str``, unless ``text=False`` (a field whose value must be a JSON number: a quoted
      ``"12"`` is then no number): Python's float grammar (``float()``: surrounding whitespace,
      ``nan``, ``inf``, ``infinity`` in any case and with a sign, ``1_000``, non-ASCII decimal
      digits), on at most :data:`MAX_CHARS` characters once stripped. ``plain=True``: only the
      ASCII decimal grammar ``[+-]?(digits[.digits]|.digits)[(e|E)[+-]digits]`` with nothing
      around it (no whitespace, words, underscores). ``thousands=True``: every ``,`` is removed
      first (``12,345`` is 12345; the groups of three are not checked), then the length counted.
    - anything else (numpy scalars, ``Decimal``, bytes): ``float(value)`` when it converts,
      unless ``text=False``, which takes only ``int`` and ``float``.

    Then the non-finite rule: ``nonfinite="refuse"`` (default) refuses NaN and ±infinity,
    ``"keep"`` returns them, ``"nan"`` returns NaN for both (the value is there but unusable).
    """
    cls = type(value)
    if cls is str and text and not (plain or thousands):  # the common case, kept short
        # float() strips the whitespace itself; only a long text is stripped to measure it
        if len(value) > MAX_CHARS and len(value.strip()) > MAX_CHARS:
            return default
        try:
            out = float(value)
        except ValueError:
            return default
    elif cls is float:
        out = value
    else:
        out = _convert(value, text, plain, thousands, overflow)
        if out is None:
            return default
    if out - out == 0.0:  # finite: inf - inf and nan - nan are NaN
        return out
    if nonfinite == "refuse":
        return default
    if nonfinite == "keep":
        return out
    if nonfinite == "nan":
        return math.nan
    raise ValueError(f"nonfinite must be 'refuse', 'keep' or 'nan'; got {nonfinite!r}")


def _overflowed(value: int, overflow: str) -> float:
    if overflow != "inf":
        raise ValueError(f"overflow must be 'refuse' or 'inf'; got {overflow!r}")
    return math.inf if value > 0 else -math.inf


def _convert(value: Any, text: bool, plain: bool, thousands: bool, overflow: str) -> float | None:
    """:func:`number` before its non-finite rule, for any value but a plain float or a text on the
    common path (bool, str with options, int, their subclasses, numpy scalars, bytes)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return _text(value, plain, thousands) if text else None
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        try:
            return float(value)
        except OverflowError:
            return None if overflow == "refuse" else _overflowed(value, overflow)
    if not text or (isinstance(value, (bytes, bytearray)) and len(value.strip()) > MAX_CHARS):
        return None
    try:
        return float(value)
    except (TypeError, ValueError, OverflowError):
        return None


def numeral(value: Any) -> bool:
    """Whether ``value`` is a text written as a plain ASCII decimal number, whatever its length.

    The grammar of ``number(..., plain=True)``, surrounding whitespace aside; a shape check in
    linear time that converts nothing. It tells a skip reason apart: a numeral that
    :func:`number` refused for its length (``"1" * 5000``) is a number out of range, not text.
    """
    return isinstance(value, str) and _PLAIN.fullmatch(value.strip()) is not None


def as_number(value: Any) -> float:
    """A finite float from a number or numeric text, else NaN (never raises).

    ``number(value, default=math.nan)``: the rule every format uses for a field it leaves
    missing as NaN when the value is not a finite number.
    """
    return number(value, default=math.nan)


# ISO 8601-1:2019 calendar date and time of day in the extended format (RFC 3339 §5.6 profile):
# ``YYYY-MM-DD``, then optionally ``T`` (or ``t``, or a space, as RFC 3339 allows and loggers
# print) and ``hh``, ``hh:mm`` or ``hh:mm:ss`` with an optional decimal fraction of the second
# after ``.`` or ``,`` (ISO 8601 allows both signs; Python's ``logging`` prints ``,123``), then an
# optional UTC offset ``Z``, ``±hh``, ``±hhmm`` or ``±hh:mm``. ASCII digits only.
_ISO = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})"
    r"(?:[Tt ]([0-9]{2})(?::([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?)?"
    r"(Z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?"
)
_EPOCH = datetime(1970, 1, 1)
_TWO = {f"{i:02d}": i for i in range(100)}  # two ASCII digits -> their value
_DAYS: dict[str, int] = {}  # "YYYY-MM-DD" of a valid date -> days since 1970-01-01
Offset = Literal["any", "required", "forbidden"]


def timestamp(text: Any, *, offset: Offset = "any") -> float | None:
    """Epoch seconds of an ISO 8601 date-time, or ``None`` when ``text`` is not one.

    The grammar is ISO 8601's extended calendar format (see ``_ISO``): ``2024-01-01``,
    ``2024-01-01T10:00``, ``2024-01-01 10:00:00,123``, ``2024-01-01T10:00:00.5+01:00``,
    ``...Z``; surrounding whitespace is ignored and a text over :data:`MAX_CHARS` characters is
    refused. Slurm's ``sacct`` prints its times as ``YYYY-MM-DDTHH:MM:SS`` (sacct(1),
    ``SLURM_TIME_FORMAT=standard``, the default); Python's ``logging`` as
    ``YYYY-MM-DD HH:MM:SS,mmm`` (``Formatter.formatTime``).

    - The date and time must exist: month 13, 30 February, hour 24 and second 60 are refused
      (Python's ``datetime`` range: years 1 to 9999, no leap second).
    - A fraction's digits beyond the sixth (below a microsecond) are cut, not rounded, as
      Python's ``datetime.fromisoformat`` does.
    - With an offset, the time is converted to UTC (``+01:00`` is an hour ahead of UTC; an
      offset of 24 hours or more is refused). Without one, the time is taken as UTC: a log's
      local time on a fixed reference, whose differences are exact.
    - ``offset="required"`` refuses a text without an offset, ``"forbidden"`` one with an
      offset (a format that must not mix the two reads its stamps both ways).

    The result is the exact number of microseconds since 1970-01-01T00:00:00Z divided by 10**6,
    correctly rounded: the value ``datetime.timestamp()`` gives for the same time.
    """
    if not isinstance(text, str):
        return None
    s = text.strip()
    if len(s) > MAX_CHARS:
        return None
    m = _ISO.fullmatch(s)
    if m is None:
        return None
    y, mo, d, h, mi, sec, frac, zone = m.groups()
    if (zone is None and offset == "required") or (zone is not None and offset == "forbidden"):
        return None
    if offset not in ("any", "required", "forbidden"):
        raise ValueError(f"offset must be 'any', 'required' or 'forbidden'; got {offset!r}")
    days = _DAYS.get(s[:10])
    if days is None:
        try:  # the calendar's rule (no 30 February, no year 0), by datetime
            days = (datetime(int(y), int(mo), int(d)) - _EPOCH).days
        except ValueError:
            return None
        if len(_DAYS) >= 4096:  # a log has few dates; a bounded cache of them
            _DAYS.clear()
        _DAYS[s[:10]] = days
    hour, minute, second = _TWO.get(h, 0), _TWO.get(mi, 0), _TWO.get(sec, 0)
    if hour > 23 or minute > 59 or second > 59:  # no hour 24, no leap second (as datetime)
        return None
    shift = 0  # the offset in seconds east of UTC
    if zone is not None and zone != "Z":
        digits = zone[1:].replace(":", "")
        oh, om = _TWO[digits[:2]], _TWO.get(digits[2:], 0)
        if oh > 23 or om > 59:
            return None
        shift = (oh * 3600 + om * 60) * (1 if zone[0] == "+" else -1)
    micro = int((frac + "00000")[:6]) if frac else 0
    return ((days * 86400 + hour * 3600 + minute * 60 + second - shift) * 1_000_000 + micro) / 1_000_000


# A clock-style duration: an optional day count (Python's ``str(timedelta)``: ``"1 day, "``,
# ``"2 days, "``; Slurm's elapsed: ``"2-"``), then ``[H:]MM:SS`` with an optional fraction of the
# second. ASCII digits only.
_DURATION = re.compile(r"(?:([0-9]+) days?, |([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+(?:\.[0-9]+)?)")


def duration(text: Any) -> float | None:
    """Seconds of a clock-style duration text, or ``None`` when ``text`` is not one.

    Two spellings: Python's ``str(datetime.timedelta)`` (``0:02:38``, ``22:08:06``,
    ``1 day, 0:08:23``, ``3 days, 1:00:00.250000``; LLaMA-Factory's ``trainer_log.jsonl`` writes its
    ``elapsed_time`` and ``remaining_time`` so) and Slurm's elapsed time (``[D-][HH:]MM:SS``, sacct(1)
    "Elapsed": ``05:26``, ``1-02:03:04``; TotalCPU adds ``.mmm``). The field after the largest one
    given is below 60 (minutes, seconds), hours below 24 after a day count; the largest field is
    unbounded (``100:00:00`` is 100 hours). No sign (a negative ``timedelta`` prints ``-1 day, ...``:
    no duration a log measures), no words, at most :data:`MAX_CHARS` characters once stripped.
    """
    if not isinstance(text, str):
        return None
    s = text.strip()
    if len(s) > MAX_CHARS:
        return None
    m = _DURATION.fullmatch(s)
    if m is None:
        return None
    days_py, days_slurm, hours, minutes, seconds = m.groups()
    days = days_py if days_py is not None else days_slurm
    if days is not None and hours is None:
        return None  # "1-05:00" is no spelling either writes
    h, mi, sec = int(hours or 0), int(minutes), float(seconds)
    if sec >= 60 or (hours is not None and mi >= 60) or (days is not None and h >= 24):
        return None
    return int(days or 0) * 86400.0 + h * 3600.0 + mi * 60.0 + sec
