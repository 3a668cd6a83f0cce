"""Generic step tables: CSV (or TSV), JSON lines or Parquet, with a column mapping.

For logs the toolkit has no dedicated loader for. ``columns`` maps schema names to the file's
column names, e.g. ``{"step": "iter", "start_s": "t0", "end_s": "t1", "rank": "gpu"}``; schema
names not mapped are looked up under their own name. Times come from ``start_s``+``end_s``, or
one of them plus ``duration``, or ``duration`` alone (rows are then placed back to back per
attempt and rank in step order, and ``meta.timing = "duration_only"``).

``time_unit`` (s, ms, us, ns, min, h, epoch_s, epoch_ms) applies to every time and duration
column; with an ``epoch_*`` unit times are absolute and are shifted so the first start is 0
(``meta.extra['t0_epoch_s']`` keeps the origin). Other numeric columns are kept as extra step
columns; a non-numeric cell in one is counted with its line and column and left missing (the
row stays), and a column holding no number (text) is left out with a note. Bad rows (missing
or non-numeric values in schema columns, negative durations, end before start, a start that
goes backwards within a rank, repeated (attempt, step, rank)) are skipped and counted per
reason with their line numbers (CSV/JSONL: line in the file; Parquet: row + 1).

Large Parquet tables: the file is read row group by row group (``progress=True|False|None``
shows a ``tqdm.auto`` bar; None: for files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``),
numeric columns are checked in place without copies, per-rank order and repeats are checked
with a linear-time radix grouping where the table allows it, and the rows are put in the
Run's order one column at a time, so the peak memory stays near the loaded frame's size.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import (
    STEP_COLUMNS,
    STEP_OPTIONAL_COLUMNS,
    LoadError,
    LoadReport,
    Run,
    progress_bar,
    read_parquet_frame,
    run_order,
)
from ._build import finish, split_kwargs, unit_factor, wallclock
from ._common import Reader, open_bytes, read_head

_COW = int(pd.__version__.split(".")[0]) >= 3 or getattr(pd.options.mode, "copy_on_write", False) is True

NAME = "table"

TARGETS: tuple[str, ...] = (
    "attempt",
    "step",
    "rank",
    "start_s",
    "end_s",
    "duration",
    *STEP_OPTIONAL_COLUMNS,
)
_ALIASES = {"duration_s": "duration"}
_DURATION_COLS = ("data_wait_s", "compute_s", "comm_s")
_TIME_HINTS = ("start_s", "end_s", "duration", "duration_s")
_MAX_SNIFF_COLS = 200


# --- sniffing -----------------------------------------------------------------------------
def _kind(path: Path, head: bytes) -> str:
    if head.startswith(b"PAR1"):
        return "parquet"
    stripped = head.lstrip()
    if stripped.startswith(b"{"):
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
        kind = _kind(p, head)
        if kind == "parquet":
            import pyarrow.parquet as pq

            return _score_columns(list(pq.read_schema(p).names))
        text = head.decode("utf-8", errors="replace")
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
    except Exception:
        return 0.0


def _delimiter(header: str) -> str | None:
    counts = {d: header.count(d) for d in (",", "\t", ";", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else None


# --- reading ------------------------------------------------------------------------------
def _read_csv(reader: Reader, data: bytes) -> tuple[pd.DataFrame, np.ndarray]:
    text = data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    physical: list[tuple[int, str]] = []
    for i, line in enumerate(text.split("\n"), start=1):
        if "\x00" in line:
            reader.report.lines_read += 1
            reader.bad("binary garbage (NUL bytes)", line=i, example=line)
            continue
        physical.append((i, line))
    header_at = next((k for k, (_, t) in enumerate(physical) if t.strip()), None)
    if header_at is None:
        reader.fail("no header line (the file holds only blank lines)")
    delim = _delimiter(physical[header_at][1]) or ","
    rows_iter = csv.reader((t + "\n" for _, t in physical), delimiter=delim)
    header: list[str] | None = None
    records: list[list[str]] = []
    line_nos: list[int] = []
    consumed = 0
    while True:
        first_line = physical[consumed][0] if consumed < len(physical) else -1
        try:
            row = next(rows_iter)
        except StopIteration:
            break
        except csv.Error as exc:
            reader.report.lines_read += 1
            reader.bad(f"unreadable CSV ({exc}); rest of the file skipped", line=first_line)
            break
        consumed = rows_iter.line_num
        if not row or all(not c.strip() for c in row):
            continue
        if header is None:
            header = [c.strip() for c in row]
            header_line = first_line
            continue
        reader.report.lines_read += 1
        if len(row) != len(header):
            reader.bad(f"wrong number of fields (expected {len(header)})", line=first_line, example=delim.join(row))
            continue
        records.append(row)
        line_nos.append(first_line)
    if header is None:
        reader.fail("no header line")
    if len(set(header)) != len(header):
        dup = sorted({h for h in header if header.count(h) > 1})
        reader.fail(f"header repeats column name(s) {dup}", line=header_line)
    df = pd.DataFrame(records, columns=header) if records else pd.DataFrame(columns=header)
    return df, np.asarray(line_nos, dtype=np.int64)


def _read_jsonl(reader: Reader, data: bytes) -> tuple[pd.DataFrame, np.ndarray]:
    text = data.decode("utf-8", errors="replace")
    recs: list[dict[str, Any]] = []
    line_nos: list[int] = []
    for i, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s:
            continue
        reader.report.lines_read += 1
        try:
            rec = json.loads(s)
        except ValueError:
            reader.bad("malformed JSON", line=i, example=s)
            continue
        if not isinstance(rec, dict):
            reader.bad("not a JSON object", line=i, example=s)
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


def _read_parquet(reader: Reader, path: Path, bar: Any = None) -> tuple[pd.DataFrame, _RowNumbers]:
    try:
        df = read_parquet_frame(path, bar=bar)
    except Exception as exc:
        reader.fail(f"unreadable Parquet file ({type(exc).__name__}: {exc})")
        raise  # for type checkers; fail() always raises
    reader.report.lines_read += len(df)
    reader.report.note("Parquet has no lines: line numbers are row numbers (1-based)")
    return df.reset_index(drop=True), _RowNumbers(len(df))


class _StrictInFileOrder(Reader):
    """Strict mode that raises on the first bad row *in file order*, not in check order."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.found: list[tuple[int, str, str | None, str | None]] = []

    def bad(self, reason: str, *, line: int | None = None, field: str | None = None, example: str | None = None) -> None:
        if self.strict:
            self.found.append((line if line is not None else 0, reason, field, example))
            return
        super().bad(reason, line=line, field=field, example=example)

    def raise_first(self) -> None:
        if self.strict and self.found:
            line, reason, field, example = min(self.found, key=lambda t: t[0])
            detail = reason + (f": {example[:120]!r}" if example else "")
            raise LoadError(detail, path=self.path, line=line or None, field=field)


# --- checking -----------------------------------------------------------------------------
def _skip_rows(
    reader: Reader,
    reason: str,
    mask: np.ndarray,
    lines: np.ndarray,
    keep: np.ndarray,
    field: str | None,
    raw: pd.DataFrame,
) -> None:
    """Drop rows in ``mask`` (still kept) under ``reason``; strict mode raises on the first."""
    hit = mask & keep
    if not hit.any():
        return
    idx = np.flatnonzero(hit)
    example = _row_text(raw, idx[0])
    if reader.strict:
        reader.bad(reason, line=int(lines[idx[0]]), field=field, example=example)
        keep &= ~hit
        return
    rep: LoadReport = reader.report
    rep.skipped[reason] = rep.skipped.get(reason, 0) + len(idx)
    first = rep.first_lines.setdefault(reason, [])
    for ln in lines[idx[: max(0, 5 - len(first))]]:
        first.append(int(ln))
    rep.examples.setdefault(reason, example[:200])
    keep &= ~hit


def _row_text(raw: pd.DataFrame, i: int) -> str:
    try:
        return json.dumps({str(k): str(v) for k, v in raw.iloc[int(i)].items()})[:200]
    except Exception:
        return ""


def _resolve_mapping(columns: Mapping[str, str] | None, available: list[str], path: Path) -> dict[str, str]:
    mapping: dict[str, str] = {}
    if columns is not None:
        if not isinstance(columns, Mapping):
            raise LoadError(f"columns must be a dict {{schema name: file column}}; got {columns!r}", path=path, field="columns")
        for target, source in columns.items():
            t = _ALIASES.get(target, target)
            if t not in TARGETS:
                raise LoadError(
                    f"columns maps unknown schema name {target!r}; schema names: {', '.join(TARGETS)}",
                    path=path,
                    field="columns",
                )
            if source not in available:
                raise LoadError(
                    f"missing column {source!r} (mapped to {t!r}); the file has: {', '.join(map(str, available))}",
                    path=path,
                    field=str(source),
                )
            mapping[t] = source
    for col in available:
        t = _ALIASES.get(str(col), str(col))
        if t in TARGETS and t not in mapping and col not in mapping.values():
            mapping[t] = col
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
    if s.dtype == object or pd.api.types.is_string_dtype(s):
        given &= s.astype(str).str.strip().ne("").to_numpy()
    vals = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    return vals, given & ~np.isfinite(vals)


def _text_cells(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """(float values, mask of cells given but not numbers) of a text column; 'nan' is a number."""
    v = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    given = s.notna().to_numpy() & ~s.astype(str).str.strip().str.lower().isin(("", "nan", "+nan", "-nan")).to_numpy()
    return v, given & np.isnan(v)


def load(
    path: str | Path,
    *,
    strict: bool = False,
    columns: Mapping[str, str] | None = None,
    time_unit: str = "s",
    **kwargs: Any,
) -> Run:
    """Load a step table; see the module docstring for the mapping and the checks.

    ``progress=True|False|None``: a progress bar while a Parquet table is read and checked
    (None: only for files of at least ``mfu_toolkit.run.PROGRESS_MIN_BYTES``).
    """
    opts, overrides = split_kwargs(kwargs, ("progress",), fmt=NAME)
    p = Path(path)
    factor = unit_factor(time_unit, path=p)
    reader = _StrictInFileOrder(p, NAME, strict=strict)
    if p.is_dir():
        reader.fail("is a directory; the table loader reads one CSV, JSONL or Parquet file")
    bar = None
    try:
        if p.is_file() and read_head(p, 4) == b"PAR1":
            bar = progress_bar(p, opts.get("progress"), "reading table")
        return _load(p, reader, bar, columns, time_unit, factor, overrides)
    finally:
        if bar is not None:
            bar.close()


def _load(
    p: Path,
    reader: _StrictInFileOrder,
    bar: Any,
    columns: Mapping[str, str] | None,
    time_unit: str,
    factor: float,
    overrides: dict[str, Any],
) -> Run:
    head = read_head(p)
    if head.startswith(b"PAR1"):  # read by row groups, never as one block of bytes
        kind = "parquet"
        raw, lines = _read_parquet(reader, p, bar)
        if bar is not None:
            bar.set_description("checking table")
    else:
        data = open_bytes(p)
        if not data.strip():
            reader.fail("empty file: nothing to load")
        kind = _kind(p, data[:8192])
        if kind == "parquet":
            raw, lines = _read_parquet(reader, p, bar)
        elif kind == "jsonl":
            raw, lines = _read_jsonl(reader, data)
        else:
            first = data.lstrip().split(b"\n", 1)[0]
            if b"\x00" in first:
                reader.fail("binary content: not a CSV, JSON-lines or Parquet table", line=1)
            raw, lines = _read_csv(reader, data)
        del data
    available = [str(c) for c in raw.columns]
    raw.columns = available
    mapping = _resolve_mapping(columns, available, p)

    if "step" not in mapping:
        raise LoadError(
            f"missing column 'step'; map it with columns={{'step': <column>}}; the file has: {', '.join(available)}",
            path=p,
            field="step",
        )
    has_start, has_end, has_dur = ("start_s" in mapping, "end_s" in mapping, "duration" in mapping)
    if not (has_dur or (has_start and has_end)):
        raise LoadError(
            "missing time columns: need start_s and end_s, or one of them plus duration, or duration "
            f"(map them with columns={{...}}); the file has: {', '.join(available)}",
            path=p,
            field="start_s" if not has_start else "end_s",
        )

    n = len(raw)
    keep = np.ones(n, dtype=bool)
    vals: dict[str, np.ndarray] = {}
    for target in ("step", "attempt", "rank", "start_s", "end_s", "duration", *STEP_OPTIONAL_COLUMNS):
        if target not in mapping:
            continue
        src = mapping[target]
        v, notnum = _numeric(raw, src)
        _skip_rows(reader, f"not a finite number in {src!r}", notnum, lines, keep, src, raw)
        if target in ("step", "attempt", "rank", "start_s", "end_s", "duration") and v.dtype != np.int64:
            _skip_rows(reader, f"missing value in {src!r}", np.isnan(v), lines, keep, src, raw)
        vals[target] = v
    for target in ("step", "attempt", "rank"):
        if target in vals and vals[target].dtype != np.int64:  # integers have no fraction
            v = vals[target]
            with np.errstate(invalid="ignore"):
                frac = np.isfinite(v) & (np.floor(v) != v)
            _skip_rows(reader, f"non-integer {mapping[target]!r}", frac, lines, keep, mapping[target], raw)
    if "attempt" in vals:
        _skip_rows(reader, f"negative {mapping['attempt']!r}", vals["attempt"] < 0, lines, keep, mapping["attempt"], raw)
    if "rank" in vals:
        _skip_rows(reader, f"{mapping['rank']!r} below -1", vals["rank"] < -1, lines, keep, mapping["rank"], raw)
    if "duration" in vals:
        with np.errstate(invalid="ignore"):
            _skip_rows(reader, "negative duration", vals["duration"] < 0, lines, keep, mapping["duration"], raw)
    for c in _DURATION_COLS + ("samples", "tokens"):
        if c in vals:
            with np.errstate(invalid="ignore"):
                _skip_rows(reader, f"negative {mapping[c]!r}", vals[c] < 0, lines, keep, mapping[c], raw)

    absolute = time_unit.startswith("epoch_")
    start = _in_seconds(vals.get("start_s"), factor)
    end = _in_seconds(vals.get("end_s"), factor)
    dur = _in_seconds(vals.get("duration"), factor)
    if start is not None and end is None:
        end = start + dur
    elif end is not None and start is None:
        start = end - dur
    if start is not None and end is not None:
        with np.errstate(invalid="ignore"):
            _skip_rows(reader, "end before start", end < start, lines, keep, mapping.get("end_s", "duration"), raw)
        if dur is not None and has_start and has_end:
            with np.errstate(invalid="ignore"):
                bad = np.abs((end - start) - dur) > 1e-6 * np.maximum(1.0, np.abs(dur))
            _skip_rows(reader, "duration disagrees with end - start", bad, lines, keep, mapping["duration"], raw)
    timing = "exact" if (has_start or has_end) else "duration_only"

    attempt = vals["attempt"] if "attempt" in vals else np.zeros(n, dtype=np.int64)
    rank = vals["rank"] if "rank" in vals else np.full(n, -1, dtype=np.int64)
    step = vals["step"]
    # A start that goes backwards within (attempt, rank) in step order; then repeats.
    all_kept = bool(keep.all())
    grouped = _rank_groups(attempt, rank, step) if all_kept else None
    known_unique = grouped is not None  # unique rows stay unique in any subset
    if start is not None and keep.any():
        back = np.zeros(n, dtype=bool)
        if grouped is not None:  # rows grouped by (attempt, rank), steps rising in each group
            order, g = grouped
            t = start[order]
            with np.errstate(invalid="ignore"):
                back[order[1:]] = (g[1:] == g[:-1]) & (t[1:] < t[:-1])
            del g, t
        else:
            idx = np.flatnonzero(keep)
            order = idx[np.lexsort((step[idx], rank[idx], attempt[idx]))]
            same = (attempt[order][1:] == attempt[order][:-1]) & (rank[order][1:] == rank[order][:-1])
            with np.errstate(invalid="ignore"):
                back[order[1:]] = same & (start[order][1:] < start[order][:-1]) & (step[order][1:] != step[order][:-1])
            del idx, same
        del order
        _skip_rows(reader, "non-monotonic timestamp (start earlier than the previous step's)", back, lines, keep, mapping.get("start_s", "end_s"), raw)
        del back
    grouped = None
    if keep.any() and not known_unique:
        # keep the first of each repeated (attempt, step, rank) among the rows still kept
        again = pd.DataFrame({"a": attempt[keep], "s": step[keep], "r": rank[keep]}).duplicated(keep="first").to_numpy()
        later = np.zeros(n, dtype=bool)
        later[np.flatnonzero(keep)[again]] = True
        _skip_rows(reader, "duplicate (attempt, step, rank)", later, lines, keep, mapping["step"], raw)

    every = bool(keep.all())

    def kept(v: np.ndarray) -> np.ndarray:
        return v if every else v[keep]

    out: dict[str, Any] = {
        "attempt": kept(attempt).astype(np.int64, copy=False),
        "step": kept(step).astype(np.int64, copy=False),
        "rank": kept(rank).astype(np.int64, copy=False),
    }
    extra: dict[str, Any] = {}
    if timing == "duration_only":
        d = kept(dur)
        frame = pd.DataFrame({"a": out["attempt"], "r": out["rank"], "s": out["step"], "d": d})
        frame = frame.sort_values(["a", "r", "s"], kind="stable")
        ends = frame.groupby(["a", "r"], sort=False)["d"].cumsum()
        frame["e"] = ends
        frame["b"] = ends - frame["d"]
        frame = frame.sort_index()
        out["start_s"] = frame["b"].to_numpy()
        out["end_s"] = frame["e"].to_numpy()
        reader.report.note("only durations given: steps placed back to back per attempt and rank in step order")
    else:
        s0, e0 = kept(start), kept(end)
        if absolute and len(s0):
            t0 = float(np.min(s0))
            extra["t0_epoch_s"] = t0
            extra["t0_wallclock"] = wallclock(t0)
            s0, e0 = s0 - t0, e0 - t0
        out["start_s"], out["end_s"] = s0, e0
    for c in STEP_OPTIONAL_COLUMNS:
        if c in vals:
            scale = factor if c in _DURATION_COLS else 1.0
            v = kept(vals[c])
            out[c] = v if (scale == 1.0 and v.dtype == np.float64) else v * scale
    used = set(mapping.values())
    not_numeric: list[str] = []
    for col in available:
        if col in used or col in STEP_COLUMNS or col in STEP_OPTIONAL_COLUMNS or col in out:
            continue
        s = raw[col]
        if pd.api.types.is_bool_dtype(s) or pd.api.types.is_numeric_dtype(s):
            out[col] = kept(s.to_numpy())
            continue
        if kind == "parquet":  # typed by the file as something other than numbers
            not_numeric.append(col)
            continue
        v, bad = _text_cells(s)
        if np.isnan(v).all():  # no number in the column: text
            if bad.any():
                not_numeric.append(col)
            continue
        # a number column with some bad cells: each is counted and left missing, its row kept
        _skip_rows(reader, f"non-numeric value in {col!r} (left missing, row kept)", bad, lines, keep.copy(), col, raw)
        out[col] = kept(v)
    if not_numeric:
        reader.report.note(f"column(s) {', '.join(map(repr, not_numeric))} hold no numbers; left out")
    reader.raise_first()
    if n == 0:
        reader.fail("no data rows")
    extra["columns"] = {k: str(v) for k, v in mapping.items()}
    # Large tables: drop the file's frame and put the rows in the Run's order here, one column
    # at a time, so the peak stays near one copy of the table (Run.build then finds them sorted).
    raw = vals = attempt = rank = step = start = end = dur = keep = None  # noqa: F841
    s0 = e0 = v = s = None  # noqa: F841
    if timing != "duration_only":
        _in_run_order(out)
    return finish(
        reader,
        fmt=NAME,
        steps=pd.DataFrame(out, copy=False) if _COW else pd.DataFrame(out),
        timing=timing,
        time_unit=time_unit,
        overrides=overrides,
        extra=extra,
    )


_BIG = 100_000  # rows from which the linear-time paths are worth their set-up


def _in_seconds(v: np.ndarray | None, factor: float) -> np.ndarray | None:
    if v is None:
        return None
    if factor == 1.0:
        return v if v.dtype == np.float64 else v.astype(np.float64)
    return v * factor


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
