"""Generic step tables: CSV (or TSV), JSON lines or Parquet, with a column mapping.

For logs the toolkit has no dedicated loader for. ``columns`` maps schema names to the file's
column names, e.g. ``{"step": "iter", "start_s": "t0", "end_s": "t1", "rank": "gpu"}``; schema
names not mapped are looked up under their own name. Times come from ``start_s`` and ``end_s``, or
one of them plus ``duration``, or ``duration`` alone (rows are then placed back to back per
attempt and rank in step order, and ``meta.timing = "duration_only"``).

``time_unit`` (s, ms, us, ns, min, h, epoch_s, epoch_ms) applies to every time and duration
column; with an ``epoch_*`` unit times are absolute and are shifted so the first start is 0
(``meta.extra['t0_epoch_s']`` keeps the origin). Other numeric columns are kept as extra step
columns; a non-numeric cell in one is counted with its line and column and left missing (the
row stays), and a column holding no number (text) is left out with a note. Bad rows (missing
or non-numeric values in schema columns; a step that is not a non-negative integer fitting
int64; a rank below -1 or an attempt below 0, either fractional or above 10,000,000; negative
durations; end before start; a start that goes backwards within a rank; repeated (attempt,
step, rank)) are skipped and counted per reason with their line numbers (CSV/JSONL: line in
the file; Parquet: row + 1). A table states no facts about its job: give them as keywords.

A ``flag`` column (or the column mapped to ``flag``) is kept as text: what a loader or a person
marked a step row with (``compile``, ``async_dispatch``, ``outlier``; several separated by
commas, semicolons, bars or spaces). An empty or missing cell is "" (no flag); a cell is
stripped of surrounding spaces; a JSON/Parquet ``true`` is ``flagged`` and ``false`` or 0 is "",
another number its text, as the breakdown reads a flag. A nested value (list, object) is counted
with its line and left "". The breakdown keeps flagged steps out of the steady-state window.

Text is read as a bounded stream (gzip inflated within the reading limits, an over-long line
counted and passed over), so a damaged or decompression-bomb file is a ``LoadError``.

Large Parquet tables: the file is read row group by row group (``progress=True|False|None``
shows a ``tqdm.auto`` bar; None: for files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``),
numeric columns are checked in place without copies, per-rank order and repeats are checked
with a linear-time radix grouping where the table allows it, and the rows are put in the
Run's order one column at a time, so the peak memory stays near the loaded frame's size.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...run import (
    STEP_COLUMNS,
    STEP_OPTIONAL_COLUMNS,
    progress_bar,
    read_parquet_frame,
    run_order,
)
from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader, parse_json

NAME = "table"


@dataclass(frozen=True)
class Options:
    """What the table format accepts besides the RunMeta keywords.

    - ``columns``: ``{schema name: file column}``, e.g. ``{"step": "iter", "start_s": "t0"}``;
      schema names not mapped are looked up under their own name (default: none mapped).
    - ``time_unit``: the unit of every time and duration column: ``s`` (default), ``ms``,
      ``us``, ``ns``, ``min``, ``h``, or absolute ``epoch_s`` / ``epoch_ms``.
    - ``progress``: a progress bar while a Parquet table is read and checked; ``None``
      (default) shows one for files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``.
    """

    columns: Mapping[str, str] | None = None
    time_unit: str = "s"
    progress: bool | None = None


TARGETS: tuple[str, ...] = (
    "attempt",
    "step",
    "rank",
    "start_s",
    "end_s",
    "duration",
    *STEP_OPTIONAL_COLUMNS,
    "flag",
)
_ALIASES = {"duration_s": "duration"}
_NON_TEXT_FLAG = "flag is not text (left empty, record kept)"
NUL_BYTES = "binary garbage (NUL bytes)"
NOT_INTEGER = "attempt or rank is not an integer"
NOT_FINITE = "not a finite number"
DURATION_DISAGREES = "duration disagrees with end - start"
_DURATION_COLS = ("data_wait_s", "compute_s", "comm_s")
_TIME_HINTS = ("start_s", "end_s", "duration", "duration_s")
_MAX_SNIFF_COLS = 200
_MAX_INDEX = 10_000_000  # a rank or attempt number above this is not a real job's
_BIG = 100_000  # rows from which the linear-time paths are worth their set-up


# --- sniffing -----------------------------------------------------------------------------
def _kind(head: bytes) -> str:
    head = head.removeprefix(b"\xef\xbb\xbf")
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.lstrip().startswith(b"{"):
        return "jsonl"
    return "csv"


def _score_columns(cols: list[str]) -> float:
    names = {str(c).strip().lower() for c in cols[:_MAX_SNIFF_COLS]}
    if "step" in names and any(h in names for h in _TIME_HINTS):
        return 0.8
    return 0.3 if len(names) >= 2 else 0.0


def sniff(path: Path, head: bytes) -> float:
    """A fallback: 0.8 when the header holds schema names (step + a time), 0.3 for any table."""
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    try:
        kind = _kind(head)
        if kind == "parquet":
            import pyarrow.parquet as pq

            return _score_columns(list(pq.read_schema(p).names))
        text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
        first = text.lstrip().split("\n", 1)[0].strip()
        if "\x00" in first:
            return 0.0
        if kind == "jsonl":
            try:
                rec = json.loads(first)
            except ValueError:
                return 0.0
            return _score_columns(list(rec)) if isinstance(rec, dict) else 0.0
        delim = _delimiter(first)
        if delim is None:
            return 0.0
        return _score_columns(next(csv.reader([first], delimiter=delim)))
    except Exception:  # a sniffer never fails a detection: unreadable means "not mine"
        return 0.0


def _delimiter(header: str) -> str | None:
    counts = {d: header.count(d) for d in (",", "\t", ";", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else None


# --- the reader: strict mode in file order ------------------------------------------------
@dataclass
class _InFileOrder(Reader):
    """A Reader whose strict mode raises on the first bad row *in file order*, not in check order."""

    found: list[tuple[int, str, str | None, str | None, str | None]] = field(default_factory=list)

    @classmethod
    def of(cls, reader: Reader) -> _InFileOrder:
        return cls(reader.path, reader.fmt, strict=reader.strict, report=reader.report, root=reader.root,
                   limits=reader.limits, display=reader.display)

    def bad(self, reason: str, *, line: int | None = None, field: str | None = None,
            example: str | None = None, detail: str | None = None, count: int = 1) -> None:
        if self.strict:
            self.found.append((line if line is not None else 0, reason, field, example, detail))
            return
        super().bad(reason, line=line, field=field, example=example, detail=detail, count=count)

    def raise_first(self) -> None:
        if self.strict and self.found:
            line, reason, fld, example, detail = min(self.found, key=lambda t: t[0])
            Reader.bad(self, reason, line=line or None, field=fld, example=example, detail=detail)  # raises


# --- reading ------------------------------------------------------------------------------
class _Physical:
    """The file's lines for ``csv.reader``; lines with NUL bytes are counted and left out.

    ``first`` is the file line of the physical line number ``want`` (set before each row is
    read to ``csv.reader.line_num + 1``), so a row spread over several lines by a quoted line
    break is reported at the line it starts on.
    """

    def __init__(self, reader: Reader, lines: Iterator[tuple[int, str]]) -> None:
        self.reader, self.lines = reader, lines
        self.count, self.want, self.first = 0, 1, 0

    def __iter__(self) -> _Physical:
        return self

    def __next__(self) -> str:
        while True:
            ln, text = next(self.lines)
            if "\x00" in text:
                self.reader.report.lines_read += 1
                self.reader.bad(NUL_BYTES, line=ln, example=text)
                continue
            self.count += 1
            if self.count == self.want:
                self.first = ln
            return text + "\n"


def _header(reader: Reader, src: _Physical) -> tuple[list[str], str, int]:
    """The header cells, the delimiter and the header's line: the first non-blank line."""
    while True:
        src.want = src.count + 1
        text = next(src, None)
        if text is None:
            break
        if text.strip():
            delim = _delimiter(text) or ","
            header = [c.strip() for c in next(csv.reader([text], delimiter=delim), [])]
            twice = sorted(h for h, n in Counter(header).items() if n > 1)
            if twice:
                reader.fail(f"header repeats column name(s) {twice}", line=src.first)
            return header, delim, src.first
    reader.fail("no header line (the file holds only blank lines)")
    raise AssertionError  # for type checkers; fail() always raises


def _read_csv(reader: Reader) -> tuple[pd.DataFrame, np.ndarray]:
    src = _Physical(reader, reader.lines())
    header, delim, _ = _header(reader, src)
    rows = csv.reader(src, delimiter=delim)
    records: list[list[str]] = []
    line_nos: list[int] = []
    while True:
        src.want = src.count + 1
        try:
            row = next(rows)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a field over the csv module's size limit: that row only
            reader.report.lines_read += 1
            reader.bad(rules.UNREADABLE_CSV_ROW, line=src.first, detail=str(exc))
            continue
        if not row or all(not c.strip() for c in row):
            continue
        reader.report.lines_read += 1
        if len(row) != len(header):
            reader.bad(rules.WRONG_FIELD_COUNT, line=src.first, example=delim.join(row),
                       detail=f"expected {len(header)}")
            continue
        records.append(row)
        line_nos.append(src.first)
    df = pd.DataFrame(records, columns=header) if records else pd.DataFrame(columns=header)
    return df, np.asarray(line_nos, dtype=np.int64)


def _read_jsonl(reader: Reader) -> tuple[pd.DataFrame, np.ndarray]:
    recs: list[dict[str, Any]] = []
    line_nos: list[int] = []
    for i, line in reader.lines():
        s = line.strip()
        if not s:
            continue
        reader.report.lines_read += 1
        rec, why, _ = parse_json(s)
        if why is not None:
            reader.bad(why, line=i, example=s)
            continue
        if not isinstance(rec, dict):
            reader.bad(rules.NOT_AN_OBJECT, line=i, example=s)
            continue
        recs.append(rec)
        line_nos.append(i)
    return pd.DataFrame.from_records(recs) if recs else pd.DataFrame(), np.asarray(line_nos, dtype=np.int64)


class _RowNumbers:
    """Line numbers of Parquet rows (row + 1), computed on demand instead of stored."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: Any) -> Any:
        return np.asarray(i, dtype=np.int64) + 1


def _read_parquet(reader: Reader, bar: Any = None) -> tuple[pd.DataFrame, _RowNumbers]:
    try:
        df = read_parquet_frame(reader.path, bar=bar)
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow's errors on a damaged file: the file is unreadable
        reader.fail(f"unreadable Parquet file ({type(exc).__name__}: {exc})")
        raise  # for type checkers; fail() always raises
    reader.report.lines_read += len(df)
    reader.report.note("Parquet has no lines: line numbers are row numbers (1-based)")
    return df.reset_index(drop=True), _RowNumbers(len(df))


def _read(reader: Reader, bar: Any) -> tuple[pd.DataFrame, Any, str]:
    """The file's columns, each row's line, and its kind (csv, jsonl or parquet)."""
    head = reader.head()
    if not head.strip() and len(head) < 8192:
        reader.fail("empty file: nothing to load")
    kind = _kind(head)
    if kind == "parquet":
        raw, lines = _read_parquet(reader, bar)
        if bar is not None:
            bar.set_description("checking table")
    elif kind == "jsonl":
        raw, lines = _read_jsonl(reader)
    else:
        first = head.lstrip().split(b"\n", 1)[0]
        if b"\x00" in first:
            reader.fail("binary content: not a CSV, JSON-lines or Parquet table", line=1)
        raw, lines = _read_csv(reader)
    raw.columns = [str(c) for c in raw.columns]
    return raw, lines, kind


# --- checking -----------------------------------------------------------------------------
def _skip_rows(
    reader: Reader,
    reason: str,
    mask: np.ndarray,
    lines: Any,
    keep: np.ndarray,
    field: str | None,
    raw: pd.DataFrame,
    detail: str | None = None,
) -> None:
    """Drop rows in ``mask`` (still kept) under ``reason`` (with ``detail``); strict mode raises on the first."""
    hit = mask & keep
    if not hit.any():
        return
    idx = np.flatnonzero(hit)
    example = _row_text(raw, idx[0])
    if reader.strict:
        reader.bad(reason, line=int(lines[idx[0]]), field=field, example=example, detail=detail)
        keep &= ~hit
        return
    for ln in lines[idx[:5]]:  # the report keeps the first five lines of a reason
        reader.bad(reason, line=int(ln), field=field, example=example, detail=detail)
    if len(idx) > 5:
        reader.bad(reason, field=field, detail=detail, count=len(idx) - 5)
    keep &= ~hit


def _row_text(raw: pd.DataFrame, i: int) -> str:
    try:
        return json.dumps({str(k): str(v) for k, v in raw.iloc[int(i)].items()})[:200]
    except Exception:  # an example is a courtesy: a cell that cannot print leaves it out
        return ""


def _resolve_mapping(reader: Reader, columns: Mapping[str, str] | None, available: list[str]) -> dict[str, str]:
    mapping: dict[str, str] = {}
    if columns is not None:
        if not isinstance(columns, Mapping):
            reader.fail(f"columns must be a dict {{schema name: file column}}; got {columns!r}", field="columns")
        for target, source in columns.items():
            t = _ALIASES.get(target, target)
            if t not in TARGETS:
                reader.fail(f"columns maps unknown schema name {target!r}; schema names: {', '.join(TARGETS)}",
                            field="columns")
            if source not in available:
                reader.fail(f"missing column {source!r} (mapped to {t!r}); "
                            f"the file has: {', '.join(map(str, available))}",
                            field=str(source))
            mapping[t] = source
    used = set(mapping.values())
    for col in available:
        t = _ALIASES.get(str(col), str(col))
        if t in TARGETS and t not in mapping and col not in used:
            mapping[t] = col
            used.add(col)
    if "step" not in mapping:
        reader.fail(f"missing column 'step'; map it with columns={{'step': <column>}}; "
                    f"the file has: {', '.join(available)}",
                    field="step")
    if not ("duration" in mapping or ("start_s" in mapping and "end_s" in mapping)):
        reader.fail("missing time columns: need start_s and end_s, or one of them plus duration, or duration "
                    f"(map them with columns={{...}}); the file has: {', '.join(available)}",
                    field="start_s" if "start_s" not in mapping else "end_s")
    return mapping


def _numeric(raw: pd.DataFrame, col: str) -> tuple[np.ndarray, np.ndarray]:
    """(values, mask of rows that were given but are not finite numbers).

    Values are float, except that an int64 column stays int64 (no copy, nothing to mask).
    """
    s = raw[col]
    if s.dtype == np.int64:
        return s.to_numpy(), np.zeros(len(s), dtype=bool)
    if s.dtype == np.float64:
        v = s.to_numpy()
        return v, np.isinf(v)  # NaN is "not given"; infinities are given but not finite
    given = s.notna().to_numpy().copy()
    if not (pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)):
        s = s.astype(str)  # booleans, dates and nested values are not numbers: text, then parsed
        given &= s.str.strip().ne("").to_numpy()
    num = pd.to_numeric(s, errors="coerce")
    if num.dtype == np.int64:  # text of integers only: exact (a step of 2**63 - 1 stays itself)
        return num.to_numpy(), np.zeros(len(s), dtype=bool)
    vals = num.to_numpy(dtype=float, na_value=np.nan)
    return vals, given & ~np.isfinite(vals)


def _text_cells(block: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """(float values, cells given but not numbers) of text columns; 'nan' is a number.

    The columns are parsed together as one flat column: a call per column would make a table
    of many columns slow (thousands of pandas calls for a few rows).
    """
    flat = pd.Series(block.to_numpy(dtype=object).ravel(order="F"), dtype=object)
    text = flat.astype(str)
    v = pd.to_numeric(text, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    given = flat.notna().to_numpy() & ~text.str.strip().str.lower().isin(("", "nan", "+nan", "-nan")).to_numpy()
    shape = block.shape
    return v.reshape(shape, order="F"), (given & np.isnan(v)).reshape(shape, order="F")


def _integer_checks(reader: Reader, vals: dict[str, np.ndarray], mapping: dict[str, str], t: tuple) -> None:
    """Step, attempt and rank are integers in range (the vectorised form of ``rules.as_step``)."""
    lines, keep, raw = t
    for target, lowest in (("step", 0), ("attempt", 0), ("rank", -1)):
        if target not in vals:
            continue
        v, src = vals[target], mapping[target]
        highest = rules.MAX_INT64 if target == "step" else _MAX_INDEX
        with np.errstate(invalid="ignore"):
            frac = np.isfinite(v) & (np.floor(v) != v) if v.dtype != np.int64 else np.zeros(len(v), dtype=bool)
            low = v < lowest
            high = v >= 2.0**63 if v.dtype != np.int64 and target == "step" else v > highest
        if target == "step":
            _skip_rows(reader, rules.BAD_STEP, frac | low | high, lines, keep, src, raw, repr(src))
            continue
        _skip_rows(reader, NOT_INTEGER, frac, lines, keep, src, raw, repr(src))
        below = f"negative {src!r}" if lowest == 0 else f"{src!r} below -1"
        _skip_rows(reader, rules.VALUE_OUT_OF_RANGE, low, lines, keep, src, raw, below)
        _skip_rows(reader, rules.VALUE_OUT_OF_RANGE, high, lines, keep, src, raw, f"{src!r} above {_MAX_INDEX:,}")


def _check_values(reader: Reader, raw: pd.DataFrame, lines: Any,
                  mapping: dict[str, str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """The schema columns as numbers, and the rows kept after the per-value checks."""
    keep = np.ones(len(raw), dtype=bool)
    vals: dict[str, np.ndarray] = {}
    for target in ("step", "attempt", "rank", "start_s", "end_s", "duration", *STEP_OPTIONAL_COLUMNS):
        if target not in mapping:
            continue
        src = mapping[target]
        v, notnum = _numeric(raw, src)
        _skip_rows(reader, NOT_FINITE, notnum, lines, keep, src, raw, repr(src))
        if target in ("step", "attempt", "rank", "start_s", "end_s", "duration") and v.dtype != np.int64:
            _skip_rows(reader, rules.MISSING_FIELD, np.isnan(v), lines, keep, src, raw, repr(src))
        vals[target] = v
    _integer_checks(reader, vals, mapping, (lines, keep, raw))
    if "duration" in vals:
        with np.errstate(invalid="ignore"):
            _skip_rows(reader, rules.NEGATIVE_DURATION, vals["duration"] < 0, lines, keep, mapping["duration"], raw)
    for c in _DURATION_COLS + ("samples", "tokens"):
        if c in vals:
            with np.errstate(invalid="ignore"):
                _skip_rows(reader, rules.VALUE_OUT_OF_RANGE, vals[c] < 0, lines, keep, mapping[c], raw,
                           f"negative {mapping[c]!r}")
    return vals, keep


def _in_seconds(v: np.ndarray | None, factor: float) -> np.ndarray | None:
    if v is None:
        return None
    if factor == 1.0:
        return v if v.dtype == np.float64 else v.astype(np.float64)
    with np.errstate(over="ignore"):  # an overflow to inf is counted by the caller
        return v * factor


def _times(reader: Reader, vals: dict[str, np.ndarray], mapping: dict[str, str], factor: float, t: tuple) -> tuple:
    """``(start, end, duration)`` in seconds (``None`` where not given); bad time rows dropped."""
    lines, keep, raw = t
    start, end = _in_seconds(vals.get("start_s"), factor), _in_seconds(vals.get("end_s"), factor)
    dur = _in_seconds(vals.get("duration"), factor)
    if start is not None and end is None:
        end = start + dur
    elif end is not None and start is None:
        start = end - dur
    if start is None:
        return None, None, dur
    with np.errstate(invalid="ignore"):
        # a finite value can still overflow once in seconds (1e308 h); rows already dropped
        # for a missing or non-numeric time are not counted again
        bad = ~np.isfinite(start) | ~np.isfinite(end)
        _skip_rows(reader, rules.NON_FINITE_TIME, bad, lines, keep, mapping.get("start_s", "end_s"), raw)
        _skip_rows(reader, rules.END_BEFORE_START, end < start, lines, keep, mapping.get("end_s", "duration"),
                   raw, "step")
        if dur is not None and "start_s" in mapping and "end_s" in mapping:
            off = np.abs((end - start) - dur) > 1e-6 * np.maximum(1.0, np.abs(dur))
            _skip_rows(reader, DURATION_DISAGREES, off, lines, keep, mapping["duration"], raw)
    return start, end, dur


def _rank_groups(attempt: np.ndarray, rank: np.ndarray, step: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """Rows grouped by (attempt, rank) in row order, when that is also step order in each group.

    Returns (order, group ids in that order) from a stable radix sort of 16-bit ids, only when
    every group's steps strictly rise in row order: the order is then the one a lexsort by
    (attempt, rank, step) gives, and no (attempt, step, rank) repeats. None otherwise.
    """
    n = len(step)
    if n < _BIG or not all(v.dtype == np.int64 for v in (attempt, rank, step)):
        return None
    amin, amax, rmin, rmax = int(attempt.min()), int(attempt.max()), int(rank.min()), int(rank.max())
    span_r = rmax - rmin + 1
    if (amax - amin + 1) * span_r > 65_536:
        return None
    if amin == amax:
        group = (rank - rmin).astype(np.uint16)
    else:
        group = ((attempt - amin) * span_r + (rank - rmin)).astype(np.uint16)
    order = np.argsort(group, kind="stable")  # radix sort: linear for 16-bit keys
    g = group[order]
    del group
    st = step[order]
    rising = bool(((g[1:] != g[:-1]) | (st[1:] > st[:-1])).all())
    del st
    return (order, g) if rising else None


def _order_checks(reader: Reader, ids: tuple, start: np.ndarray | None, mapping: dict[str, str], t: tuple) -> None:
    """A start that goes backwards within (attempt, rank) in step order; then repeated keys."""
    lines, keep, raw = t
    attempt, rank, step = ids
    grouped = _rank_groups(attempt, rank, step) if bool(keep.all()) else None
    n = len(step)
    if start is not None and keep.any():
        back = np.zeros(n, dtype=bool)
        if grouped is not None:  # rows grouped by (attempt, rank), steps rising in each group
            order, g = grouped
            s = start[order]
            with np.errstate(invalid="ignore"):
                back[order[1:]] = (g[1:] == g[:-1]) & (s[1:] < s[:-1])
        else:
            idx = np.flatnonzero(keep)
            order = idx[np.lexsort((step[idx], rank[idx], attempt[idx]))]
            same = (attempt[order][1:] == attempt[order][:-1]) & (rank[order][1:] == rank[order][:-1])
            with np.errstate(invalid="ignore"):
                back[order[1:]] = same & (start[order][1:] < start[order][:-1]) & (step[order][1:] != step[order][:-1])
        _skip_rows(reader, rules.NON_MONOTONIC, back, lines, keep, mapping.get("start_s", "end_s"), raw,
                   "start earlier than the previous step's")
    if keep.any() and grouped is None:  # grouped: unique rows stay unique in any subset
        # keep the first of each repeated (attempt, step, rank) among the rows still kept
        again = pd.DataFrame({"a": attempt[keep], "s": step[keep], "r": rank[keep]}).duplicated(keep="first").to_numpy()
        later = np.zeros(n, dtype=bool)
        later[np.flatnonzero(keep)[again]] = True
        _skip_rows(reader, rules.DUPLICATE, later, lines, keep, mapping["step"], raw, "attempt, step, rank")


# --- the step rows ------------------------------------------------------------------------
def _back_to_back(out: dict[str, Any], dur: np.ndarray, reader: Reader) -> None:
    """Durations only: each (attempt, rank)'s rows placed back to back in step order."""
    frame = pd.DataFrame({"a": out["attempt"], "r": out["rank"], "s": out["step"], "d": dur})
    frame = frame.sort_values(["a", "r", "s"], kind="stable")
    ends = frame.groupby(["a", "r"], sort=False)["d"].cumsum()
    frame["e"] = ends
    frame["b"] = ends - frame["d"]
    frame = frame.sort_index()
    out["start_s"], out["end_s"] = frame["b"].to_numpy(), frame["e"].to_numpy()
    if not np.isfinite(out["end_s"]).all():
        reader.fail("the durations add up past the largest float: check time_unit")
    reader.report.note("only durations given: steps placed back to back per attempt and rank in step order")


def _extra_columns(reader: Reader, raw: pd.DataFrame, lines: Any, keep: np.ndarray, kind: str,
                   skip: set[str]) -> dict[str, Any]:
    """Other numeric columns as extra step columns; a bad cell counted and left missing."""
    every = bool(keep.all())
    out: dict[str, Any] = {}
    not_numeric: list[str] = []
    text_cols: list[str] = []
    for col, dtype in raw.dtypes.items():
        if col in skip:
            continue
        if pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_numeric_dtype(dtype):
            v = raw[col].to_numpy()
            out[col] = v if every else v[keep]
        elif kind == "parquet":  # typed by the file as something other than numbers
            not_numeric.append(col)
        else:
            text_cols.append(col)
    per = max(1, 1_000_000 // max(len(raw), 1))  # columns parsed together: about 1e6 cells at once
    for at in range(0, len(text_cols), per):
        cols = text_cols[at : at + per]
        values, bad = _text_cells(raw[cols])
        for j, col in enumerate(cols):
            v = values[:, j].copy()
            if np.isnan(v).all():  # no number in the column: text
                if bad[:, j].any():
                    not_numeric.append(col)
                continue
            # a number column with some bad cells: each is counted and left missing, its row kept
            _skip_rows(reader, rules.NON_NUMERIC, bad[:, j], lines, keep.copy(), col, raw, repr(col))
            out[col] = v if every else v[keep]
    if not_numeric:
        reader.report.note(f"column(s) {', '.join(map(repr, not_numeric))} hold no numbers; left out")
    return out


def _step_columns(vals: dict[str, np.ndarray], times: tuple, keep: np.ndarray, factor: float, n: int) -> dict[str, Any]:
    every = bool(keep.all())

    def kept(v: np.ndarray) -> np.ndarray:
        return v if every else v[keep]

    attempt = vals["attempt"] if "attempt" in vals else np.zeros(n, dtype=np.int64)
    rank = vals["rank"] if "rank" in vals else np.full(n, -1, dtype=np.int64)
    out: dict[str, Any] = {
        "attempt": kept(attempt).astype(np.int64, copy=False),
        "step": kept(vals["step"]).astype(np.int64, copy=False),
        "rank": kept(rank).astype(np.int64, copy=False),
    }
    start, end, _ = times
    if start is not None:
        out["start_s"], out["end_s"] = kept(start), kept(end)
    for c in STEP_OPTIONAL_COLUMNS:
        if c in vals:
            scale = factor if c in _DURATION_COLS else 1.0
            v = kept(vals[c])
            out[c] = v if (scale == 1.0 and v.dtype == np.float64) else v * scale
    return out


def _flag_text(value: Any) -> str | None:
    """A ``flag`` cell as text ("" for no flag); None for a value that is no flag (nested)."""
    if isinstance(value, (bool, np.bool_)):
        return "flagged" if value else ""
    if isinstance(value, (list, tuple, dict, np.ndarray)):
        return None
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ""
    if isinstance(value, (int, float, np.number)):
        return "" if value == 0 else f"{value:g}"
    return str(value).strip()


def _flags(reader: Reader, raw: pd.DataFrame, src: str, lines: Any, keep: np.ndarray) -> np.ndarray:
    """The kept rows' ``flag`` cells as text (see the module docstring); a nested value is counted."""
    col = raw[src]
    nested = np.zeros(len(col), dtype=bool)
    try:
        codes, uniques = pd.factorize(col, use_na_sentinel=True)
    except TypeError:  # unhashable cells: lists or objects of a JSON line
        nested = np.array([isinstance(v, (list, dict, np.ndarray)) for v in col], dtype=bool)
        codes, uniques = pd.factorize(col.where(~nested, None), use_na_sentinel=True)
    text = [_flag_text(u) for u in uniques]
    nested |= np.isin(codes, [i for i, t in enumerate(text) if t is None])
    _skip_rows(reader, _NON_TEXT_FLAG, nested, lines, keep.copy(), src, raw, repr(src))
    out = np.array([t or "" for t in text] + [""], dtype=object)[codes]
    return out if bool(keep.all()) else out[keep]


def _in_run_order(out: dict[str, Any]) -> None:
    """Reorder the columns of a large one-attempt table in place to the Run's row order.

    The order is (attempt, start_s, step, rank), as ``Run.build`` sorts, which then finds the
    rows in order; other tables (several attempts, many tied start times) are left to it.
    """
    start = out["start_s"]
    a = out["attempt"]
    if len(start) < _BIG or a.min() != a.max() or not np.isfinite(start).all():
        return
    if bool((start[1:] > start[:-1]).all()):
        return  # already in order
    order = run_order(start, out["step"], out["rank"])
    if order is None:
        return
    for c in list(out):
        out[c] = np.asarray(out[c])[order]  # the old column is released as the new one lands


def _steps(reader: _InFileOrder, raw: pd.DataFrame, lines: Any, kind: str, options: Options, factor: float) -> tuple:
    """The step columns, the timing, and extra facts (the epoch origin, the mapping)."""
    mapping = _resolve_mapping(reader, options.columns, list(raw.columns))
    vals, keep = _check_values(reader, raw, lines, mapping)
    times = _times(reader, vals, mapping, factor, (lines, keep, raw))
    n = len(raw)
    ids = (vals.get("attempt", np.zeros(n, dtype=np.int64)), vals.get("rank", np.full(n, -1, dtype=np.int64)),
           vals["step"])
    _order_checks(reader, ids, times[0], mapping, (lines, keep, raw))
    used = set(mapping.values()) | set(STEP_COLUMNS) | set(STEP_OPTIONAL_COLUMNS) | {"attempt", "step", "rank"}
    extra_cols = _extra_columns(reader, raw, lines, keep, kind, used)
    if "flag" in mapping:
        extra_cols["flag"] = _flags(reader, raw, mapping["flag"], lines, keep)
    reader.raise_first()
    if n == 0:
        reader.fail("no data rows")
    out = _step_columns(vals, times, keep, factor, n)
    out.update(extra_cols)
    extra: dict[str, Any] = {}
    if times[0] is None:
        _back_to_back(out, times[2] if bool(keep.all()) else times[2][keep], reader)
    elif options.time_unit.startswith("epoch_") and len(out["start_s"]):
        t0 = float(np.min(out["start_s"]))
        extra["t0_epoch_s"], extra["t0_wallclock"] = t0, rules.wallclock(t0)
        out["start_s"], out["end_s"] = out["start_s"] - t0, out["end_s"] - t0
    extra["columns"] = {k: str(v) for k, v in mapping.items()}
    return out, "exact" if times[0] is not None else "duration_only", extra


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a step table; see the module docstring for the mapping and the checks."""
    factor = rules.unit_factor(options.time_unit, path=reader.name)
    r = _InFileOrder.of(reader)
    if r.path.is_dir():
        r.fail("is a directory; the table loader reads one CSV, JSONL or Parquet file")
    bar = progress_bar(r.path, options.progress, "reading table") if r.head(4) == b"PAR1" else None
    try:
        raw, lines, kind = _read(r, bar)
        out, timing, extra = _steps(r, raw, lines, kind, options, factor)
    finally:
        if bar is not None:
            bar.close()
    # Large tables: drop the file's frame and put the rows in the Run's order here, one column
    # at a time, so the peak stays near one copy of the table (Run.build then finds them sorted).
    del raw, lines
    if timing != "duration_only":
        _in_run_order(out)
    return Parsed(steps=pd.DataFrame(out, copy=False), timing=timing, time_unit=options.time_unit, extra=extra)


load = loader_for(NAME)
