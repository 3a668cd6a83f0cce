"""The rules of :mod:`mfu_toolkit.io.values`, each checked against a source outside this project,
and the behaviour of every private parser it replaced in the formats, kept.

The tables in the second half were recorded by running each removed parser (``dcgm._number``,
``deepspeed._num``, ``hf_trainer._num``, ...) on the inputs before it was deleted; the outputs are
pasted as literals. Each is checked against the call that replaced it in the format.
"""

from __future__ import annotations

import importlib.util
import math
import random
import subprocess
import sys
import types
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import numpy as np
import pytest

from mfu_toolkit.io import deepspeed_runtime, rules, values
from mfu_toolkit.io.formats import dcgm, deepspeed, hf_trainer, lightning, megatron, sacct, torchtitan
from mfu_toolkit.io.values import MAX_CHARS, as_number, number, numeral, timestamp

NAN, INF = math.nan, math.inf
UTC = timezone.utc


def same(a, b) -> bool:
    """Equal, with NaN equal to NaN and -0.0 told from 0.0, through tuples."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def epoch(*args: int, tz: timezone = UTC) -> float:
    """Python's own answer: ``datetime(...).timestamp()`` of an aware time."""
    return datetime(*args, tzinfo=tz).timestamp()


# --- numbers: Python's float grammar -----------------------------------------------------------
# https://docs.python.org/3/library/functions.html#float: sign, digits with a point and an
# exponent, surrounding whitespace, "_" between digits (PEP 515), any Unicode decimal digit
# (category Nd), and the words nan / inf / infinity in any case.
@pytest.mark.parametrize(("text", "want"), [
    ("1", 1.0), (" 1.5\n", 1.5), ("-0", -0.0), ("+1e5", 1e5), (".5", 0.5), ("5.", 5.0), ("1E-3", 1e-3),
    ("1_000", 1000.0), ("\u0661\u0662\u0663", 123.0), ("\u00a01\u2003", 1.0),
    ("1,234", None), ("0x10", None), ("1 2", None), ("", None), ("  ", None), ("abc", None), ("1e", None),
    ("+-1", None), (".", None), ("1__0", None), ("True", None), ("--nan", None),
])
def test_text_is_read_by_pythons_float_grammar(text, want):
    assert same(number(text), want)


# IEEE 754 round-to-nearest: a decimal beyond the largest double is infinity, one below the
# smallest subnormal is zero; NaN and infinity are values, which each caller keeps or refuses.
@pytest.mark.parametrize(("text", "want"), [("nan", NAN), ("-NaN", NAN), ("+inf", INF), ("-Infinity", -INF),
                                            ("INFINITY", INF), ("1e999", INF), ("-1e999", -INF)])
def test_nan_and_infinity_are_refused_kept_or_made_nan(text, want):
    assert number(text) is None  # the default: a finite number or nothing
    assert same(number(text, nonfinite="keep"), want)
    assert math.isnan(number(text, nonfinite="nan"))
    assert same(number(text, default=-1.0), -1.0)
    assert same(number(1e-999), 0.0) and same(number("-1e-999"), -0.0)


def test_a_json_number_and_not_a_boolean():
    # RFC 8259: numbers (section 6) are not strings (section 7), and true/false are literal names
    # (section 3), not 1 and 0, although Python's bool is an int.
    assert number(12) == 12.0 and number(-2.5) == -2.5 and number("12") == 12.0
    assert number(12, text=False) == 12.0 and number(np.float64(2.5), text=False) == 2.5
    assert number("12", text=False) is None and number(b"12", text=False) is None
    assert number(np.int64(3), text=False) is None and number(Decimal("1.5"), text=False) is None
    for flag in (True, False, np.bool_(True).item()):
        assert number(flag) is None and number(flag, text=False) is None and math.isnan(as_number(flag))
    assert number(None) is None and number([1]) is None and number({}) is None


def test_other_numeric_types_convert_when_text_is_allowed():
    assert number(Decimal("1.5")) == 1.5 and number(np.int64(3)) == 3.0 and number(np.float32(0.5)) == 0.5
    assert number(b" 1.5 ") == 1.5 and number(b"x") is None


def test_an_int_beyond_the_float_range():
    # float(10**400) raises OverflowError, while float("1e400") is inf: refused by default, or
    # infinity (then under the non-finite rule) on request.
    with pytest.raises(OverflowError):
        float(10**400)
    assert number(10**400) is None and number(10**400, nonfinite="keep") is None
    assert number(10**400, overflow="inf", nonfinite="keep") == INF
    assert number(-(10**400), overflow="inf", nonfinite="keep") == -INF
    assert number(10**400, overflow="inf") is None  # infinity, refused as non-finite
    assert number(2**1023) == float(2**1023)


# The plain grammar: the decimal form of C's strtod (C11 7.22.1.3) in ASCII, without strtod's
# hexadecimal form, "inf"/"nan" words or leading whitespace.
@pytest.mark.parametrize(("text", "want"), [
    ("1", 1.0), ("-1.", -1.0), (".5", 0.5), ("+1.5E-3", 1.5e-3), ("1e999", INF), ("007", 7.0),
    (" 1", None), ("1 ", None), ("1_0", None), ("nan", None), ("inf", None), ("0x1p3", None),
    ("\u0661", None), ("1e", None), (".", None), ("+", None), ("1.2.3", None), ("e5", None), ("", None),
])
def test_the_plain_grammar(text, want):
    assert same(number(text, plain=True, nonfinite="keep"), want)
    # numeral() is the same grammar's shape check, surrounding whitespace aside
    assert numeral(text) == (number(text.strip(), plain=True, nonfinite="keep") is not None)


def test_thousands_separators_are_dropped_unchecked():
    assert number("12,345", thousands=True) == 12345.0 and number("1,234.5", thousands=True) == 1234.5
    assert number("1,2,3", thousands=True) == 123.0  # the groups of three are not checked
    assert number("12,345") is None and number(",", thousands=True) is None


def test_as_number_is_the_finite_rule_with_nan_for_missing():
    assert rules.as_number is values.as_number
    assert as_number(" 2.5 ") == 2.5 and as_number(3) == 3.0
    for bad in ("x", None, True, INF, "nan", 10**400, "1" * (MAX_CHARS + 1)):
        assert math.isnan(as_number(bad))


def test_long_input_is_refused_before_it_is_parsed():
    ok = "1" * MAX_CHARS
    assert number(ok) == float(ok) and number("  " + ok + "\n") == float(ok)  # whitespace is not counted
    for long in ("1" * (MAX_CHARS + 1), "0" * 100_000, "1" * 10**6 + "e-1000000", "nan" + " " * 10 + "x" * 100):
        assert number(long) is None and number(long, plain=True) is None and number(long, thousands=True) is None
    assert number(b"1" * (MAX_CHARS + 1)) is None
    # the shape check takes any length: a numeral refused for its length is still a number
    assert numeral("1" * 5000) and numeral(" 1.5e3 ") and not numeral("x" * 5000) and not numeral(15)
    stamp = "2024-01-01T10:00:00." + "1" * MAX_CHARS
    assert timestamp(stamp) is None and timestamp(stamp[:MAX_CHARS]) is not None


def test_options_outside_their_values_raise():
    with pytest.raises(ValueError, match="nonfinite"):
        number("inf", nonfinite="drop")
    with pytest.raises(ValueError, match="overflow"):
        number(10**400, overflow="wrap")
    with pytest.raises(ValueError, match="offset"):
        timestamp("2024-01-01", offset="local")


def test_values_imports_no_pandas():
    spec = importlib.util.find_spec("mfu_toolkit.io.values")
    code = ("import importlib.util, sys\n"
            f"spec = importlib.util.spec_from_file_location('v', {spec.origin!r})\n"
            "m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)\n"
            "assert m.number('1') == 1.0 and m.timestamp('1970-01-01') == 0.0\n"
            "print(sorted(n for n in sys.modules if n.split('.')[0] in ('pandas', 'numpy')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# --- timestamps: ISO 8601 / RFC 3339 ----------------------------------------------------------
@pytest.mark.parametrize(("text", "want"), [
    # RFC 3339 section 5.8, its own examples and the UTC times it says they are
    ("1985-04-12T23:20:50.52Z", epoch(1985, 4, 12, 23, 20, 50, 520000)),
    ("1996-12-19T16:39:57-08:00", epoch(1996, 12, 20, 0, 39, 57)),
    ("1937-01-01T12:00:27.87+00:20", epoch(1937, 1, 1, 11, 40, 27, 870000)),
    # Slurm sacct(1), SLURM_TIME_FORMAT=standard: "year-month-dateThour:minute:second"
    ("2024-01-01T10:00:00", epoch(2024, 1, 1, 10)),
    # Python's logging, Formatter.formatTime: '2003-07-08 16:49:45,896' (milliseconds after a comma)
    ("2003-07-08 16:49:45,896", epoch(2003, 7, 8, 16, 49, 45, 896000)),
    # POSIX: the epoch is 1970-01-01T00:00:00Z
    ("1970-01-01T00:00:00Z", 0.0), ("1969-12-31T23:59:59.5Z", -0.5), ("0001-01-01T00:00:00", -62135596800.0),
    ("9999-12-31T23:59:59.999999", epoch(9999, 12, 31, 23, 59, 59, 999999)),
    # ISO 8601 reduced precision, a decimal comma or point, "t" and a space for "T" (RFC 3339 5.6 NOTE)
    ("2024-01-01", epoch(2024, 1, 1)), ("2024-01-01T10", epoch(2024, 1, 1, 10)),
    ("2024-01-01 10:30", epoch(2024, 1, 1, 10, 30)), ("2024-01-01t10:00:00.5", epoch(2024, 1, 1, 10, 0, 0, 500000)),
    ("  2024-01-01T10:00:00,5\n", epoch(2024, 1, 1, 10, 0, 0, 500000)),
    # offsets: Z, +hh:mm, +hhmm, +hh (ISO 8601 4.2.5.1), converted to UTC
    ("2024-01-01T10:00:00+01:00", epoch(2024, 1, 1, 9)), ("2024-01-01T10:00:00+0100", epoch(2024, 1, 1, 9)),
    ("2024-01-01T10:00:00+01", epoch(2024, 1, 1, 9)), ("2024-01-01T10:00:00-05:30", epoch(2024, 1, 1, 15, 30)),
    ("2024-01-01T10:00:00-00:00", epoch(2024, 1, 1, 10)), ("2024-01-01T10:00:00+23:59", epoch(2023, 12, 31, 10, 1)),
    # digits beyond the microsecond are cut, as datetime.fromisoformat does (Python 3.11+)
    ("2024-01-01T10:00:00.1234569", epoch(2024, 1, 1, 10, 0, 0, 123456)),
    ("2024-01-01T10:00:00.999999999Z", epoch(2024, 1, 1, 10, 0, 0, 999999)),
])
def test_iso_8601_date_times(text, want):
    assert same(timestamp(text), want)


@pytest.mark.parametrize("text", [
    "2023-02-29 10:00:00",  # 2023 is no leap year (Gregorian rule); 2024-02-29 is a day
    "2024-13-01", "2024-04-31", "2024-01-01T24:00:00", "2024-01-01T10:60", "2024-01-01T10:00:60",
    "1990-12-31T23:59:60Z",  # RFC 3339's leap second: datetime has none
    "0000-01-01T00:00:00",  # datetime.MINYEAR is 1
    "2024-1-1", "2024-01-01T1000", "20240101T101010", "2024-W01-1",  # basic and week forms: not read
    "2024-01-01x10:00:00", "2024-01-01  10:00:00", "2024-01-01T10:00:00.", "2024-01-01T10:00:00z",
    "2024-01-01T10:00:00+24:00", "2024-01-01T10:00:00+01:60", "2024-01-01T10:00:00+1", "2024-01-01+01:00",
    "\u0662\u0660\u0662\u0664-01-01", "2024-01-01T10:00:00 +01:00", "Unknown", "", None, 1704103200, b"2024-01-01",
])
def test_what_is_not_a_date_time(text):
    assert timestamp(text) is None


def test_a_stamp_with_or_without_an_offset_on_request():
    zoned, naive = "2024-01-01T10:00:00Z", "2024-01-01T10:00:00"
    assert timestamp(zoned, offset="required") == timestamp(naive, offset="forbidden") == epoch(2024, 1, 1, 10)
    assert timestamp(naive, offset="required") is None and timestamp(zoned, offset="forbidden") is None


def test_any_date_time_gives_what_datetime_timestamp_gives():
    rnd = random.Random(20240101)
    for _ in range(2000):
        dt = datetime(1, 1, 1) + timedelta(seconds=rnd.randrange(315537897600), microseconds=rnd.randrange(10**6))
        tz = timezone(timedelta(minutes=rnd.randrange(-23 * 60, 24 * 60)))
        if dt.year < 2 or dt.year > 9998:
            continue
        aware = dt.replace(tzinfo=tz)
        assert timestamp(aware.isoformat()) == aware.timestamp(), aware.isoformat()
        assert timestamp(dt.isoformat(sep=" ")) == dt.replace(tzinfo=UTC).timestamp(), dt.isoformat()
    assert timestamp("2024-02-30") is None and timestamp("2024-02-30") is None  # a refused date stays refused


def test_whole_seconds_plus_a_fraction_as_the_old_stamp_parsers_added_them():
    # deepspeed._stamp and torchtitan._parse_ts added int(frac) / 10 ** len(frac) to the whole
    # seconds; the exact microseconds / 10**6 are the same double for any time a day or more away
    # from 1970-01-01 (nearer, the sum's double rounding may differ by one unit in the last place).
    for day in (1, 19_723, 20_000, -10_000):
        for n in range(1000):
            whole = day * 86400 + 37_296
            frac = f"{n:03d}"
            text = (datetime(1970, 1, 1) + timedelta(seconds=whole)).isoformat(sep=" ") + "," + frac
            assert timestamp(text) == float(whole) + int(frac) / 10 ** len(frac) == whole + float("0." + frac)


# --- the removed parsers' behaviour, kept ---------------------------------------------------------
class _Reader:
    """Records the skip reasons a format reports, as a strict-mode message says them: ``reason (detail)``."""

    def __init__(self) -> None:
        self.got: list[str] = []

    def bad(self, why: str, *, detail: str | None = None, **_: object) -> None:
        self.got.append(rules.in_full(rules.SkipReason(why, detail)))


def _dcgm(tok: str) -> tuple[float | None, str]:
    """dcgm._number's (value, why) from the collector that replaced it (values.number(plain=True))."""
    c = dcgm._Collector(reader=_Reader())
    v = c.value(tok, "x", 1, "f", tok)
    named = {rules.NON_NUMERIC: "bad", f"{rules.VALUE_OUT_OF_RANGE} (infinite)": "inf"}
    return v, next(iter(c.counts), "") or (named[c.reader.got[0]] if c.reader.got else "")


def _deepspeed(kind: str):
    def read(raw: str | None) -> tuple[float, str | None]:
        scan = types.SimpleNamespace(reader=_Reader())
        v = deepspeed_runtime.checked(scan.reader, raw, 1, "x", kind=kind)  # deepspeed's checker, now shared
        return v, scan.reader.got[0] if scan.reader.got else None
    return read


def _deepspeed_stamp(text: str) -> tuple[float | None, str | None]:
    scan = types.SimpleNamespace(reader=_Reader(), t_first=None)
    v = deepspeed._stamp(scan, 1, f"[{text}] INFO", count=True)
    return v, scan.reader.got[0] if scan.reader.got else None


def _lightning_cell(cell: str) -> tuple[float, str | None]:
    reader = _Reader()
    return lightning._cells(reader, 1, ["h"], [cell])[0], reader.got[0] if reader.got else None


def _nemo_stamp(text: str) -> tuple[float, bool] | None:
    """nemo._epoch_seconds' (seconds, zoned): nemo now reads all stamps zoned, else all naive."""
    zoned = timestamp(text, offset="required")
    if zoned is not None:
        return zoned, True
    naive = timestamp(text, offset="forbidden")
    return None if naive is None else (naive, False)


def _sacct_time(text: str) -> float | None:
    """sacct._parse_time: None for Unknown/None/blank, NaN (counted) for an unreadable time."""
    if text.strip().lower() in sacct._NO_TIME:
        return None
    t = timestamp(text)
    return NAN if t is None else t


def _torchtitan_stamp(text: str) -> tuple[float, str] | None:
    m = torchtitan._TS_RE.search(f"[titan] {text} - root - INFO - step: 1")
    t = timestamp(m.group(0)) if m else None
    return None if t is None else (t, m.group(0))


# removed parser: the call that replaced it in its format
NEW = {
    "dcgm._number": _dcgm,
    "deepspeed._num (kind='value')": _deepspeed("value"),
    "deepspeed._num (kind='duration')": _deepspeed("duration"),
    "deepspeed._num (kind='any')": _deepspeed("any"),
    "deepspeed._is_float": lambda t: number(t, nonfinite="keep") is not None,
    "hf_trainer._num": lambda v: number(v, **hf_trainer._JSON_NUMBER),
    "kineto._time_value": lambda v: number(v),
    "maxtext._number": lambda t: number(t.rstrip(","), nonfinite="keep"),
    "megatron._number": lambda t: number(megatron._before_slash(t), nonfinite="nan"),
    "nemo._num": lambda t: number(t, nonfinite="keep"),
    "straggler_ops._number": lambda v: number(v, nonfinite="keep", overflow="inf"),
    "torchtitan._number": lambda t: number(t.rstrip("%,"), thousands=True, nonfinite="keep"),
    "wandb._num": lambda v: number(v, text=False, nonfinite="keep", default=NAN),
    "wandb._cell": lambda c: number(c, nonfinite="keep") if c.strip() else NAN,
    "mlperf._is_number": lambda v: number(v, nonfinite="keep") is not None or numeral(v),
    "lightning._cells (one cell)": _lightning_cell,
    "rules.as_number": as_number,
    "megatron._parse_ts": timestamp,
    "nemo._epoch_seconds": _nemo_stamp,
    "sacct._parse_time": _sacct_time,
    "torchtitan._parse_ts": _torchtitan_stamp,
    "deepspeed._stamp": _deepspeed_stamp,
}

# What each removed parser gave, recorded from it before it was deleted. Left out: inputs a format
# cannot pass (megatron's and nemo's stamps come from their regexes, which admit no other text;
# hf_trainer, wandb and kineto read decoded JSON, which holds no Decimal, numpy or bytes value).
# the inputs shared by DCGM, DS_IS_FLOAT, MAXTEXT, MEGATRON, TORCHTITAN, WANDB_CELL, LIGHTNING_CELL
_DCGM_INPUTS = [
    '1', ' 1.5 ', '\t2\n', '-0', '-1', '1e5', '.5', '5.', '1,234', '1,234.5', '1_000', 'nan', 'NaN', '-nan', '+nan',
    '--nan', 'inf', '+inf', '-Infinity', 'infinity', '1e999', '-1e999', '1e-999', '', '  ', 'abc', '1.2.3', '0x10',
    '\u0661\u0662\u0663', '\uff11\uff12', '1.5%', '12%', '12/34', ' 7 / 8', 'x/8', '5,', '5%,', '5%,%', '+-1', '1e',
    'e5', '.', 'n/a', 'N/A', '1' * 64, (' ' + '1' * 64 + ' '), '9.2e18', '140737488355328', 'True', '1\xa0', '1 2',
    '1,2,3', ',5', '1.5GB', '3s', '12.5,',
]

# the inputs shared by DS_VALUE, DS_ANY
_DS_VALUE_INPUTS = [
    '1', ' 1.5 ', '\t2\n', '-0', '-1', '1e5', '.5', '5.', '1,234', '1,234.5', '1_000', 'nan', 'NaN', '-nan', '+nan',
    '--nan', 'inf', '+inf', '-Infinity', 'infinity', '1e999', '-1e999', '1e-999', '', '  ', 'abc', '1.2.3', '0x10',
    '\u0661\u0662\u0663', '\uff11\uff12', '1.5%', '12%', '12/34', ' 7 / 8', 'x/8', '5,', '5%,', '5%,%', '+-1', '1e',
    'e5', '.', 'n/a', 'N/A', '1' * 64, (' ' + '1' * 64 + ' '), '9.2e18', '140737488355328', 'True', '1\xa0', '1 2',
    '1,2,3', ',5', '1.5GB', '3s', '12.5,', None,
]

# the inputs shared by HF, WANDB
_HF_INPUTS = [
    True, False, None, 0, 3, -2, 2.5, NAN, INF, -INF, 10**400, -(10**400), [1], {}, np.float64(2.5), '1', ' 1.5 ',
    '\t2\n', '-0', '-1', '1e5', '.5', '5.', '1,234', '1,234.5', '1_000', 'nan', 'NaN', '-nan', '+nan', '--nan', 'inf',
    '+inf', '-Infinity', 'infinity', '1e999', '-1e999', '1e-999', '', '  ', 'abc', '1.2.3', '0x10',
    '\u0661\u0662\u0663', '\uff11\uff12', '1.5%', '12%', '12/34', ' 7 / 8', 'x/8', '5,', '5%,', '5%,%', '+-1', '1e',
    'e5', '.', 'n/a', 'N/A', '1' * 70, '1' * 65, '1' * 64, (' ' + '1' * 64 + ' '), '9.2e18', '140737488355328',
    'True', '1\xa0', '1 2', '1,2,3', ',5', '1.5GB', '3s', '12.5,',
]

# the inputs shared by STRAGGLER, AS_NUMBER
_STRAGGLER_INPUTS = [
    True, False, None, 0, 3, -2, 2.5, NAN, INF, -INF, 10**400, -(10**400), [1], {}, Decimal('1.5'), np.float64(2.5),
    np.int64(3), b'1.5', '1', ' 1.5 ', '\t2\n', '-0', '-1', '1e5', '.5', '5.', '1,234', '1,234.5', '1_000', 'nan',
    'NaN', '-nan', '+nan', '--nan', 'inf', '+inf', '-Infinity', 'infinity', '1e999', '-1e999', '1e-999', '', '  ',
    'abc', '1.2.3', '0x10', '\u0661\u0662\u0663', '\uff11\uff12', '1.5%', '12%', '12/34', ' 7 / 8', 'x/8', '5,',
    '5%,', '5%,%', '+-1', '1e', 'e5', '.', 'n/a', 'N/A', '1' * 64, (' ' + '1' * 64 + ' '), '9.2e18',
    '140737488355328', 'True', '1\xa0', '1 2', '1,2,3', ',5', '1.5GB', '3s', '12.5,',
]

# the inputs shared by TORCHTITAN_TS, DEEPSPEED_TS
_TORCHTITAN_TS_INPUTS = [
    '2024-01-01 10:00:00', '2024-01-01T10:00:00', '2024-01-01 10:00:00,123', '2024-01-01 10:00:00.123',
    '2024-01-01 10:00:00.1', '2024-01-01 10:00:00,12', '2024-01-01 10:00:00.123456', '2024-01-01 10:00:00.1234567',
    '2024-01-01 10:00:00.123456789', '2024-01-01T10:00:00Z', '2024-01-01T10:00:00+01:00', '2024-01-01T10:00:00+0100',
    '2024-01-01T10:00:00-05:30', '2024-01-01T10:00:00.5+01:00', '2024-01-01T10:00:00,5Z',
    '2024-01-01 10:00:00.123456789-0800', '2024-13-01 10:00:00', '2024-02-30 10:00:00', '2024-02-29 10:00:00',
    '2023-02-29 10:00:00', '2024-01-01 24:00:00', '2023-12-31 23:59:60', '0000-01-01 00:00:00', '0001-01-01 00:00:00',
    '9999-12-31 23:59:59.999999', '1969-12-31 23:59:59.5', '1970-01-01 00:00:00.000001', '2024-01-01',
    '2024-01-01T10', '2024-01-01T10:00', 'Unknown', 'None', 'n/a', '', '  2024-01-01T10:00:00  ',
    '2024-01-01 10:00:00 +01:00', '20240101T101010', '2024-01-01x10:00:00', '2024-W01-1',
    '2024-01-01T10:00:00+01:00:30', '2024-01-01T10:00:00+24:00', '2024-01-01T10:00:00+23:59',
    '2024-01-01T10:00:00.+01:00', 'garbage', '2024-01-01T10:00:00z', '2024-01-01t10:00:00', '2024-01-01T10:00:00+01',
    '2024-01-01T1000', ('2024-01-01T10:00:00.' + '1' * 70), '2024-1-1 10:00:00', '2024-01-01 10:00:00.',
    '2024-01-01  10:00:00',
]

DCGM = list(zip(_DCGM_INPUTS, [
    (1.0, ''), (None, 'bad'), (None, 'bad'), (-0.0, ''), (-1.0, ''), (100000.0, ''), (0.5, ''), (5.0, ''),
    (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'nan'), (None, 'nan'), (None, 'nan'), (None, 'nan'),
    (None, 'nan'), (None, 'inf'), (None, 'inf'), (None, 'inf'), (None, 'inf'), (None, 'inf'), (None, 'inf'),
    (0.0, ''), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'),
    (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'),
    (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'na'),
    (None, 'na'), (None, 'blank'), (None, 'bad'), (None, 'blank'), (None, 'blank'), (None, 'bad'), (None, 'bad'),
    (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'), (None, 'bad'),
], strict=True))

DS_VALUE = list(zip(_DS_VALUE_INPUTS, [
    (1.0, None), (1.5, None), (2.0, None), (-0.0, None), (NAN, 'value out of range (negative or not finite)'),
    (100000.0, None), (0.5, None), (5.0, None), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (1000.0, None),
    (NAN, 'value out of range (negative or not finite)'), (NAN, 'value out of range (negative or not finite)'),
    (NAN, 'value out of range (negative or not finite)'), (NAN, 'value out of range (negative or not finite)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'value out of range (negative or not finite)'),
    (NAN, 'value out of range (negative or not finite)'), (NAN, 'value out of range (negative or not finite)'),
    (NAN, 'value out of range (negative or not finite)'), (NAN, 'value out of range (negative or not finite)'),
    (NAN, 'value out of range (negative or not finite)'), (0.0, None), (NAN, 'required field missing'),
    (NAN, 'required field missing'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (123.0, None), (12.0, None), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (1.1111111111111112e+63, None),
    (1.1111111111111112e+63, None), (9.2e+18, None), (140737488355328.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (1.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'required field missing'),
], strict=True))

DS_DURATION = [
    ('1', (1.0, None)), (' 1.5 ', (1.5, None)), ('\t2\n', (2.0, None)), ('-0', (-0.0, None)),
    ('-1', (NAN, 'negative duration')), ('1e5', (100000.0, None)), ('.5', (0.5, None)), ('5.', (5.0, None)),
    ('1,234', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1,234.5', (NAN, 'non-numeric value (left missing, record kept)')), ('1_000', (1000.0, None)),
    ('nan', (NAN, 'value out of range (negative or not finite)')),
    ('NaN', (NAN, 'value out of range (negative or not finite)')),
    ('-nan', (NAN, 'value out of range (negative or not finite)')),
    ('+nan', (NAN, 'value out of range (negative or not finite)')),
    ('--nan', (NAN, 'non-numeric value (left missing, record kept)')),
    ('inf', (NAN, 'value out of range (negative or not finite)')),
    ('+inf', (NAN, 'value out of range (negative or not finite)')), ('-Infinity', (NAN, 'negative duration')),
    ('infinity', (NAN, 'value out of range (negative or not finite)')),
    ('1e999', (NAN, 'value out of range (negative or not finite)')), ('-1e999', (NAN, 'negative duration')),
    ('1e-999', (0.0, None)), ('', (NAN, 'required field missing')), ('  ', (NAN, 'required field missing')),
    ('abc', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1.2.3', (NAN, 'non-numeric value (left missing, record kept)')),
    ('0x10', (NAN, 'non-numeric value (left missing, record kept)')), ('\u0661\u0662\u0663', (123.0, None)),
    ('\uff11\uff12', (12.0, None)), ('1.5%', (NAN, 'non-numeric value (left missing, record kept)')),
    ('12%', (NAN, 'non-numeric value (left missing, record kept)')),
    ('12/34', (NAN, 'non-numeric value (left missing, record kept)')),
    (' 7 / 8', (NAN, 'non-numeric value (left missing, record kept)')),
    ('x/8', (NAN, 'non-numeric value (left missing, record kept)')),
    ('5,', (NAN, 'non-numeric value (left missing, record kept)')),
    ('5%,', (NAN, 'non-numeric value (left missing, record kept)')),
    ('5%,%', (NAN, 'non-numeric value (left missing, record kept)')),
    ('+-1', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1e', (NAN, 'non-numeric value (left missing, record kept)')),
    ('e5', (NAN, 'non-numeric value (left missing, record kept)')),
    ('.', (NAN, 'non-numeric value (left missing, record kept)')),
    ('n/a', (NAN, 'non-numeric value (left missing, record kept)')),
    ('N/A', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1' * 64, (NAN, 'value out of range (negative or not finite)')),
    ((' ' + '1' * 64 + ' '), (NAN, 'value out of range (negative or not finite)')),
    ('9.2e18', (NAN, 'value out of range (negative or not finite)')),
    ('140737488355328', (NAN, 'value out of range (negative or not finite)')),
    ('True', (NAN, 'non-numeric value (left missing, record kept)')), ('1\xa0', (1.0, None)),
    ('1 2', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1,2,3', (NAN, 'non-numeric value (left missing, record kept)')),
    (',5', (NAN, 'non-numeric value (left missing, record kept)')),
    ('1.5GB', (NAN, 'non-numeric value (left missing, record kept)')),
    ('3s', (NAN, 'non-numeric value (left missing, record kept)')),
    ('12.5,', (NAN, 'non-numeric value (left missing, record kept)')), (None, (NAN, 'required field missing')),
    ('1e9', (1000000000.0, None)), ('1000000001', (NAN, 'value out of range (negative or not finite)')),
    ('-0.0', (-0.0, None)),
]

DS_ANY = list(zip(_DS_VALUE_INPUTS, [
    (1.0, None), (1.5, None), (2.0, None), (-0.0, None), (-1.0, None), (100000.0, None), (0.5, None), (5.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (1000.0, None), (NAN, None), (NAN, None), (NAN, None), (NAN, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (INF, None), (INF, None), (-INF, None), (INF, None),
    (INF, None), (-INF, None), (0.0, None), (NAN, 'required field missing'), (NAN, 'required field missing'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (123.0, None), (12.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (1.1111111111111112e+63, None), (1.1111111111111112e+63, None), (9.2e+18, None), (140737488355328.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (1.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'required field missing'),
], strict=True))

DS_IS_FLOAT = list(zip(_DCGM_INPUTS, [
    True, True, True, True, True, True, True, True, False, False, True, True, True, True, True, False, True, True,
    True, True, True, True, True, False, False, False, False, False, True, True, False, False, False, False, False,
    False, False, False, False, False, False, False, False, False, True, True, True, True, False, True, False, False,
    False, False, False, False,
], strict=True))

HF = list(zip(_HF_INPUTS, [
    NAN, NAN, NAN, 0.0, 3.0, -2.0, 2.5, NAN, INF, -INF, NAN, NAN, NAN, NAN, 2.5, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN,
], strict=True))

KINETO = [
    (True, None), (False, None), (None, None), (0, 0.0), (3, 3.0), (-2, -2.0), (2.5, 2.5), (NAN, None), (INF, None),
    (-INF, None), (10**400, None), (-(10**400), None), ([1], None), ({}, None), (np.float64(2.5), 2.5), ('1', 1.0),
    (' 1.5 ', 1.5), ('\t2\n', 2.0), ('-0', -0.0), ('-1', -1.0), ('1e5', 100000.0), ('.5', 0.5), ('5.', 5.0),
    ('1,234', None), ('1,234.5', None), ('1_000', 1000.0), ('nan', None), ('NaN', None), ('-nan', None),
    ('+nan', None), ('--nan', None), ('inf', None), ('+inf', None), ('-Infinity', None), ('infinity', None),
    ('1e999', None), ('-1e999', None), ('1e-999', 0.0), ('', None), ('  ', None), ('abc', None), ('1.2.3', None),
    ('0x10', None), ('\u0661\u0662\u0663', 123.0), ('\uff11\uff12', 12.0), ('1.5%', None), ('12%', None),
    ('12/34', None), (' 7 / 8', None), ('x/8', None), ('5,', None), ('5%,', None), ('5%,%', None), ('+-1', None),
    ('1e', None), ('e5', None), ('.', None), ('n/a', None), ('N/A', None), ('1' * 64, 1.1111111111111112e+63),
    ((' ' + '1' * 64 + ' '), 1.1111111111111112e+63), ('9.2e18', 9.2e+18), ('140737488355328', 140737488355328.0),
    ('True', None), ('1\xa0', 1.0), ('1 2', None), ('1,2,3', None), (',5', None), ('1.5GB', None), ('3s', None),
    ('12.5,', None),
]

MAXTEXT = list(zip(_DCGM_INPUTS, [
    1.0, 1.5, 2.0, -0.0, -1.0, 100000.0, 0.5, 5.0, None, None, 1000.0, NAN, NAN, NAN, NAN, None, INF, INF, -INF, INF,
    INF, -INF, 0.0, None, None, None, None, None, 123.0, 12.0, None, None, None, None, None, 5.0, None, None, None,
    None, None, None, None, None, 1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, None,
    1.0, None, None, None, None, None, 12.5,
], strict=True))

MEGATRON = list(zip(_DCGM_INPUTS, [
    1.0, 1.5, 2.0, -0.0, -1.0, 100000.0, 0.5, 5.0, None, None, 1000.0, NAN, NAN, NAN, NAN, None, NAN, NAN, NAN, NAN,
    NAN, NAN, 0.0, None, None, None, None, None, 123.0, 12.0, None, None, 12.0, 7.0, None, None, None, None, None,
    None, None, None, None, None, 1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, None,
    1.0, None, None, None, None, None, None,
], strict=True))

NEMO = [
    ('1', 1.0), (' 1.5 ', 1.5), ('\t2\n', 2.0), ('-0', -0.0), ('-1', -1.0), ('1e5', 100000.0), ('.5', 0.5),
    ('5.', 5.0), ('1,234', None), ('1,234.5', None), ('1_000', 1000.0), ('nan', NAN), ('NaN', NAN), ('-nan', NAN),
    ('+nan', NAN), ('--nan', None), ('inf', INF), ('+inf', INF), ('-Infinity', -INF), ('infinity', INF),
    ('1e999', INF), ('-1e999', -INF), ('1e-999', 0.0), ('', None), ('  ', None), ('abc', None), ('1.2.3', None),
    ('0x10', None), ('\u0661\u0662\u0663', 123.0), ('\uff11\uff12', 12.0), ('1.5%', None), ('12%', None),
    ('12/34', None), (' 7 / 8', None), ('x/8', None), ('5,', None), ('5%,', None), ('5%,%', None), ('+-1', None),
    ('1e', None), ('e5', None), ('.', None), ('n/a', None), ('N/A', None), ('1' * 70, None), ('1' * 65, None),
    ('1' * 64, 1.1111111111111112e+63), ((' ' + '1' * 64 + ' '), 1.1111111111111112e+63), ('9.2e18', 9.2e+18),
    ('140737488355328', 140737488355328.0), ('True', None), ('1\xa0', 1.0), ('1 2', None), ('1,2,3', None),
    (',5', None), ('1.5GB', None), ('3s', None), ('12.5,', None),
]

STRAGGLER = list(zip(_STRAGGLER_INPUTS, [
    None, None, None, 0.0, 3.0, -2.0, 2.5, NAN, INF, -INF, INF, -INF, None, None, 1.5, 2.5, 3.0, 1.5, 1.0, 1.5, 2.0,
    -0.0, -1.0, 100000.0, 0.5, 5.0, None, None, 1000.0, NAN, NAN, NAN, NAN, None, INF, INF, -INF, INF, INF, -INF, 0.0,
    None, None, None, None, None, 123.0, 12.0, None, None, None, None, None, None, None, None, None, None, None, None,
    None, None, 1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, None, 1.0, None, None,
    None, None, None, None,
], strict=True))

TORCHTITAN = list(zip(_DCGM_INPUTS, [
    1.0, 1.5, 2.0, -0.0, -1.0, 100000.0, 0.5, 5.0, 1234.0, 1234.5, 1000.0, NAN, NAN, NAN, NAN, None, INF, INF, -INF,
    INF, INF, -INF, 0.0, None, None, None, None, None, 123.0, 12.0, 1.5, 12.0, None, None, None, 5.0, 5.0, 5.0, None,
    None, None, None, None, None, 1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, None,
    1.0, None, 123.0, 5.0, None, None, 12.5,
], strict=True))

WANDB = list(zip(_HF_INPUTS, [
    NAN, NAN, NAN, 0.0, 3.0, -2.0, 2.5, NAN, INF, -INF, NAN, NAN, NAN, NAN, 2.5, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    NAN, NAN, NAN, NAN, NAN,
], strict=True))

WANDB_CELL = list(zip(_DCGM_INPUTS, [
    1.0, 1.5, 2.0, -0.0, -1.0, 100000.0, 0.5, 5.0, None, None, 1000.0, NAN, NAN, NAN, NAN, None, INF, INF, -INF, INF,
    INF, -INF, 0.0, NAN, NAN, None, None, None, 123.0, 12.0, None, None, None, None, None, None, None, None, None,
    None, None, None, None, None, 1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, None,
    1.0, None, None, None, None, None, None,
], strict=True))

MLPERF_IS_NUMBER = [
    (True, False), (False, False), (None, False), (0, True), (3, True), (-2, True), (2.5, True), (NAN, True),
    (INF, True), (-INF, True), (10**400, False), (-(10**400), False), ([1], False), ({}, False),
    (Decimal('1.5'), True), (np.float64(2.5), True), (np.int64(3), True), (b'1.5', True), ('1', True),
    (' 1.5 ', True), ('\t2\n', True), ('-0', True), ('-1', True), ('1e5', True), ('.5', True), ('5.', True),
    ('1,234', False), ('1,234.5', False), ('1_000', True), ('nan', True), ('NaN', True), ('-nan', True),
    ('+nan', True), ('--nan', False), ('inf', True), ('+inf', True), ('-Infinity', True), ('infinity', True),
    ('1e999', True), ('-1e999', True), ('1e-999', True), ('', False), ('  ', False), ('abc', False), ('1.2.3', False),
    ('0x10', False), ('\u0661\u0662\u0663', True), ('\uff11\uff12', True), ('1.5%', False), ('12%', False),
    ('12/34', False), (' 7 / 8', False), ('x/8', False), ('5,', False), ('5%,', False), ('5%,%', False),
    ('+-1', False), ('1e', False), ('e5', False), ('.', False), ('n/a', False), ('N/A', False), ('1' * 70, True),
    ('1' * 65, True), ('1' * 64, True), ((' ' + '1' * 64 + ' '), True), ('9.2e18', True), ('140737488355328', True),
    ('True', False), ('1\xa0', True), ('1 2', False), ('1,2,3', False), (',5', False), ('1.5GB', False),
    ('3s', False), ('12.5,', False),
]

LIGHTNING_CELL = list(zip(_DCGM_INPUTS, [
    (1.0, None), (1.5, None), (2.0, None), (-0.0, None), (-1.0, None), (100000.0, None), (0.5, None), (5.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (1000.0, None), (NAN, None), (NAN, None), (NAN, None), (NAN, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (INF, None), (INF, None), (-INF, None), (INF, None),
    (INF, None), (-INF, None), (0.0, None), (NAN, None), (NAN, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (123.0, None), (12.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (1.1111111111111112e+63, None), (1.1111111111111112e+63, None), (9.2e+18, None), (140737488355328.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (1.0, None),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
    (NAN, 'non-numeric value (left missing, record kept)'), (NAN, 'non-numeric value (left missing, record kept)'),
], strict=True))

AS_NUMBER = list(zip(_STRAGGLER_INPUTS, [
    NAN, NAN, NAN, 0.0, 3.0, -2.0, 2.5, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 1.5, 2.5, 3.0, 1.5, 1.0, 1.5, 2.0, -0.0,
    -1.0, 100000.0, 0.5, 5.0, NAN, NAN, 1000.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, 0.0, NAN, NAN,
    NAN, NAN, NAN, 123.0, 12.0, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN, NAN,
    1.1111111111111112e+63, 1.1111111111111112e+63, 9.2e+18, 140737488355328.0, NAN, 1.0, NAN, NAN, NAN, NAN, NAN,
    NAN,
], strict=True))

MEGATRON_TS = [
    ('2024-01-01 10:00:00', 1704103200.0), ('2024-01-01T10:00:00', 1704103200.0),
    ('2024-01-01 10:00:00,123', 1704103200.123), ('2024-01-01 10:00:00.123', 1704103200.123),
    ('2024-01-01 10:00:00.1', 1704103200.1), ('2024-01-01 10:00:00,12', 1704103200.12),
    ('2024-01-01 10:00:00.123456', 1704103200.123456), ('2024-13-01 10:00:00', None), ('2024-02-30 10:00:00', None),
    ('2024-02-29 10:00:00', 1709200800.0), ('2023-02-29 10:00:00', None), ('2024-01-01 24:00:00', None),
    ('2023-12-31 23:59:60', None), ('0000-01-01 00:00:00', None), ('0001-01-01 00:00:00', -62135596800.0),
    ('9999-12-31 23:59:59.999999', 253402300800.0), ('1969-12-31 23:59:59.5', -0.5),
    ('1970-01-01 00:00:00.000001', 1e-06), ('\u0662\u0660\u0662\u0664-01-01 10:00:00', None),
]

NEMO_TS = [
    ('2024-01-01 10:00:00', (1704103200.0, False)), ('2024-01-01T10:00:00', (1704103200.0, False)),
    ('2024-01-01 10:00:00,123', (1704103200.123, False)), ('2024-01-01 10:00:00.123', (1704103200.123, False)),
    ('2024-01-01 10:00:00.1', (1704103200.1, False)), ('2024-01-01 10:00:00,12', (1704103200.12, False)),
    ('2024-01-01 10:00:00.123456', (1704103200.123456, False)),
    ('2024-01-01 10:00:00.1234567', (1704103200.123456, False)),
    ('2024-01-01 10:00:00.123456789', (1704103200.123456, False)), ('2024-01-01T10:00:00Z', (1704103200.0, True)),
    ('2024-01-01T10:00:00+01:00', (1704099600.0, True)), ('2024-01-01T10:00:00+0100', (1704099600.0, True)),
    ('2024-01-01T10:00:00-05:30', (1704123000.0, True)), ('2024-01-01T10:00:00.5+01:00', (1704099600.5, True)),
    ('2024-01-01T10:00:00,5Z', (1704103200.5, True)),
    ('2024-01-01 10:00:00.123456789-0800', (1704132000.123456, True)), ('2024-13-01 10:00:00', None),
    ('2024-02-30 10:00:00', None), ('2024-02-29 10:00:00', (1709200800.0, False)), ('2023-02-29 10:00:00', None),
    ('2024-01-01 24:00:00', None), ('2023-12-31 23:59:60', None), ('0000-01-01 00:00:00', None),
    ('0001-01-01 00:00:00', (-62135596800.0, False)), ('9999-12-31 23:59:59.999999', (253402300800.0, False)),
    ('1969-12-31 23:59:59.5', (-0.5, False)), ('1970-01-01 00:00:00.000001', (1e-06, False)),
    ('\u0662\u0660\u0662\u0664-01-01 10:00:00', None), ('2024-01-01T10:00:00+24:00', None),
    ('2024-01-01T10:00:00+23:59', (1704016860.0, True)),
]

SACCT_TS = [
    ('2024-01-01 10:00:00', 1704103200.0), ('2024-01-01T10:00:00', 1704103200.0),
    ('2024-01-01 10:00:00,123', 1704103200.123), ('2024-01-01 10:00:00.123', 1704103200.123),
    ('2024-01-01 10:00:00.1', 1704103200.1), ('2024-01-01 10:00:00,12', 1704103200.12),
    ('2024-01-01 10:00:00.123456', 1704103200.123456), ('2024-01-01 10:00:00.1234567', 1704103200.123456),
    ('2024-01-01 10:00:00.123456789', 1704103200.123456), ('2024-01-01T10:00:00Z', 1704103200.0),
    ('2024-01-01T10:00:00+01:00', 1704099600.0), ('2024-01-01T10:00:00+0100', 1704099600.0),
    ('2024-01-01T10:00:00-05:30', 1704123000.0), ('2024-01-01T10:00:00.5+01:00', 1704099600.5),
    ('2024-01-01T10:00:00,5Z', 1704103200.5), ('2024-01-01 10:00:00.123456789-0800', 1704132000.123456),
    ('2024-13-01 10:00:00', NAN), ('2024-02-30 10:00:00', NAN), ('2024-02-29 10:00:00', 1709200800.0),
    ('2023-02-29 10:00:00', NAN), ('2024-01-01 24:00:00', NAN), ('2023-12-31 23:59:60', NAN),
    ('0000-01-01 00:00:00', NAN), ('0001-01-01 00:00:00', -62135596800.0),
    ('9999-12-31 23:59:59.999999', 253402300800.0), ('1969-12-31 23:59:59.5', -0.5),
    ('1970-01-01 00:00:00.000001', 1e-06), ('\u0662\u0660\u0662\u0664-01-01 10:00:00', NAN),
    ('2024-01-01', 1704067200.0), ('2024-01-01T10', 1704103200.0), ('2024-01-01T10:00', 1704103200.0),
    ('Unknown', None), ('None', None), ('n/a', None), ('', None), ('  2024-01-01T10:00:00  ', 1704103200.0),
    ('2024-01-01T10:00:00+24:00', NAN), ('2024-01-01T10:00:00+23:59', 1704016860.0), ('garbage', NAN),
    ('2024-01-01T10:00:00z', NAN), ('2024-01-01t10:00:00', 1704103200.0), ('2024-01-01T10:00:00+01', 1704099600.0),
    ('2024-1-1 10:00:00', NAN), ('2024-01-01 10:00:00.', NAN), ('2024-01-01  10:00:00', NAN),
]

TORCHTITAN_TS = list(zip(_TORCHTITAN_TS_INPUTS, [
    (1704103200.0, '2024-01-01 10:00:00'), (1704103200.0, '2024-01-01T10:00:00'),
    (1704103200.123, '2024-01-01 10:00:00,123'), (1704103200.123, '2024-01-01 10:00:00.123'),
    (1704103200.1, '2024-01-01 10:00:00.1'), (1704103200.12, '2024-01-01 10:00:00,12'),
    (1704103200.123456, '2024-01-01 10:00:00.123456'), (1704103200.123456, '2024-01-01 10:00:00.123456'),
    (1704103200.123456, '2024-01-01 10:00:00.123456'), (1704103200.0, '2024-01-01T10:00:00'),
    (1704103200.0, '2024-01-01T10:00:00'), (1704103200.0, '2024-01-01T10:00:00'),
    (1704103200.0, '2024-01-01T10:00:00'), (1704103200.5, '2024-01-01T10:00:00.5'),
    (1704103200.5, '2024-01-01T10:00:00,5'), (1704103200.123456, '2024-01-01 10:00:00.123456'), None, None,
    (1709200800.0, '2024-02-29 10:00:00'), None, None, None, None, (-62135596800.0, '0001-01-01 00:00:00'),
    (253402300800.0, '9999-12-31 23:59:59.999999'), (-0.5, '1969-12-31 23:59:59.5'),
    (1e-06, '1970-01-01 00:00:00.000001'), None, None, None, None, None, None, None,
    (1704103200.0, '2024-01-01T10:00:00'), (1704103200.0, '2024-01-01 10:00:00'), None, None, None,
    (1704103200.0, '2024-01-01T10:00:00'), (1704103200.0, '2024-01-01T10:00:00'),
    (1704103200.0, '2024-01-01T10:00:00'), (1704103200.0, '2024-01-01T10:00:00'), None,
    (1704103200.0, '2024-01-01T10:00:00'), None, (1704103200.0, '2024-01-01T10:00:00'), None,
    (1704103200.111111, '2024-01-01T10:00:00.111111'), None, (1704103200.0, '2024-01-01 10:00:00'), None,
], strict=True))

DEEPSPEED_TS = list(zip(_TORCHTITAN_TS_INPUTS, [
    (1704103200.0, None), (1704103200.0, None), (1704103200.123, None), (1704103200.123, None), (1704103200.1, None),
    (1704103200.12, None), (1704103200.123456, None), (None, None), (None, None), (None, None), (None, None),
    (None, None), (None, None), (None, None), (None, None), (None, None), (None, 'unreadable timestamp'),
    (None, 'unreadable timestamp'), (1709200800.0, None), (None, 'unreadable timestamp'),
    (None, 'unreadable timestamp'), (None, 'unreadable timestamp'), (None, 'unreadable timestamp'),
    (-62135596800.0, None), (253402300800.0, None), (-0.5, None), (1e-06, None), (None, None), (None, None),
    (None, None), (None, None), (None, None), (None, None), (None, None), (None, None), (None, None), (None, None),
    (None, None), (None, None), (None, None), (None, None), (None, None), (None, None), (None, None), (None, None),
    (None, None), (None, None), (None, None), (None, None), (None, None), (None, None), (None, None),
], strict=True))

OLD = {
    "dcgm._number": DCGM, "deepspeed._num (kind='value')": DS_VALUE, "deepspeed._num (kind='duration')": DS_DURATION,
    "deepspeed._num (kind='any')": DS_ANY, "deepspeed._is_float": DS_IS_FLOAT, "hf_trainer._num": HF,
    "kineto._time_value": KINETO, "maxtext._number": MAXTEXT, "megatron._number": MEGATRON, "nemo._num": NEMO,
    "straggler_ops._number": STRAGGLER, "torchtitan._number": TORCHTITAN, "wandb._num": WANDB,
    "wandb._cell": WANDB_CELL, "mlperf._is_number": MLPERF_IS_NUMBER, "lightning._cells (one cell)": LIGHTNING_CELL,
    "rules.as_number": AS_NUMBER, "megatron._parse_ts": MEGATRON_TS, "nemo._epoch_seconds": NEMO_TS,
    "sacct._parse_time": SACCT_TS, "torchtitan._parse_ts": TORCHTITAN_TS, "deepspeed._stamp": DEEPSPEED_TS,
}


@pytest.mark.parametrize("parser", list(OLD))
def test_the_replacement_gives_what_the_removed_parser_gave(parser):
    wrong = [(given, old, NEW[parser](given)) for given, old in OLD[parser] if not same(NEW[parser](given), old)]
    assert not wrong, wrong


# The outputs that changed on purpose: (removed parser, input, what it gave, what its replacement gives).
_NON_NUMERIC = rules.NON_NUMERIC
CHANGED = [
    # a text over MAX_CHARS (64) characters is refused unread: no logger prints such a number
    ("dcgm._number", "1" * 65, (None, "blank"), (None, "bad")),
    ("deepspeed._num (kind='value')", "1" * 65, (1.1111111111111111e64, None), (NAN, _NON_NUMERIC)),
    ("deepspeed._num (kind='duration')", "1" * 65, (NAN, "value out of range (negative or not finite)"),
     (NAN, _NON_NUMERIC)),
    ("deepspeed._num (kind='any')", "1" * 70, (1.1111111111111112e69, None), (NAN, _NON_NUMERIC)),
    ("deepspeed._is_float", "1" * 65, True, False),
    ("kineto._time_value", "1" * 65, 1.1111111111111111e64, None),
    ("maxtext._number", "1" * 65, 1.1111111111111111e64, None),
    ("megatron._number", "1" * 65, 1.1111111111111111e64, None),
    ("straggler_ops._number", "1" * 65, 1.1111111111111111e64, None),
    ("torchtitan._number", "1" * 65, 1.1111111111111111e64, None),
    ("wandb._cell", "1" * 65, 1.1111111111111111e64, None),
    ("lightning._cells (one cell)", "1" * 65, (1.1111111111111111e64, None), (NAN, _NON_NUMERIC)),
    ("rules.as_number", "1" * 65, 1.1111111111111111e64, NAN),
    ("sacct._parse_time", "2024-01-01T10:00:00." + "1" * 70, 1704103200.111111, NAN),
    # sacct read whatever Python 3.11's datetime.fromisoformat takes; the rule is now ISO 8601's
    # extended format, the same on every Python (3.10's fromisoformat took none of these either)
    ("sacct._parse_time", "20240101T101010", 1704103810.0, NAN),
    ("sacct._parse_time", "2024-W01-1", 1704067200.0, NAN),
    ("sacct._parse_time", "2024-01-01T1000", 1704103200.0, NAN),
    ("sacct._parse_time", "2024-01-01x10:00:00", 1704103200.0, NAN),
    ("sacct._parse_time", "2024-01-01 10:00:00 +01:00", 1704099600.0, NAN),
    ("sacct._parse_time", "2024-01-01T10:00:00.+01:00", 1704099600.0, NAN),
    ("sacct._parse_time", "2024-01-01T10:00:00+01:00:30", 1704099570.0, NAN),
    # a stamp in non-ASCII digits (their regexes' \d matched them and int() read them)
    ("torchtitan._parse_ts", "\u0662\u0660\u0662\u0664-01-01 10:00:00",
     (1704103200.0, "\u0662\u0660\u0662\u0664-01-01 10:00:00"), None),
    ("deepspeed._stamp", "\u0662\u0660\u0662\u0664-01-01 10:00:00", (1704103200.0, None),
     (None, "unreadable timestamp")),
]


@pytest.mark.parametrize(("parser", "given", "old", "new"), CHANGED, ids=[f"{c[0]}-{i}" for i, c in enumerate(CHANGED)])
def test_the_outputs_that_changed_on_purpose(parser, given, old, new):
    got = NEW[parser](given)
    assert same(got, new) and not same(got, old)
