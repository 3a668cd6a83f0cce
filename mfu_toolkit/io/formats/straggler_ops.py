"""Per-rank operation traces in the columnar form of the StragglerAnalysis data (Parquet or CSV).

Columns: ``dp_rank, stage, rank, step, optype, start_ts, duration, seq_id, mc, mb_id, gmc``;
``start_ts`` and ``duration`` in seconds relative to the start of the step. Required are
``rank, step, optype, start_ts, duration``; the others are kept when present. An optional
``meta-<name>.yaml`` beside ``trace-<name>.<ext>`` (parallelism sizes, world size) is read with
``yaml.safe_load`` into ``meta.extra["parallelism"]``; it states the job's ``world_size`` (the
``n_ranks`` and ``n_accelerators`` facts, which fill ``meta.n_accelerators``) and its parallel
sizes (the ``parallelism`` fact), each with its YAML line.

How it becomes a Run:

- One step row per (step, rank): ``start_s``/``end_s`` from the rank's first op start and last
  op end; ``compute_s`` = summed durations of compute ops (``forward-compute``,
  ``backward-compute``, ``optimizer``); ``comm_s`` = the time
  covered by communication ops (pipeline ``*-send``/``*-recv``, ``*all-reduce``,
  ``*all-gather``, ``*reduce-scatter``, ...) as a union, because Megatron logs a fused
  send+recv twice over the same interval; ``other_s`` = the rest (``gc``, unknown types, and
  ``optimizer-clip-main-grad``, whose gradient-norm all-reduce is mostly waiting).
  ``stage``, ``dp_rank`` and ``n_ops`` are extra columns.
- Time: the traces give offsets inside each step only and the steps are a sample (e.g. 44 step
  numbers between 16 and 1238), so the sampled steps are laid end to end in step order, each as
  long as its slowest rank (``meta.timing = "duration_only"``). Gaps between sampled steps are
  unknown and not shown.
- ``tables["ops"]``: every kept op with compact dtypes (categorical ``optype`` and ``category``,
  small integers, float32 times) — the input of per-operation straggler analyses.

Bad rows are counted with their line (CSV) or row number (Parquet) and field, each under the
first reason that applies: a step that is not a non-negative integer fitting int64
(``rules.BAD_STEP``: ``1e308``, ``-1``, ``3.5``); a rank, ``dp_rank`` or ``stage`` that is not a
non-negative integer, or ``seq_id``/``mc``/``mb_id``/``gmc`` below ``-1`` (their "none" marker) or
fractional; any of them above 10,000,000 (``rules.VALUE_OUT_OF_RANGE``); a missing or non-finite
time; a time beyond float32; a negative duration or start. A non-numeric cell in an optional
column is counted and left missing (the row stays). Strict mode raises on the first bad row in
file order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader, read_head
from ..values import number

NAME = "straggler_ops"
_NOT_INDEX = "index is not a non-negative integer"
_NOT_INDEX_OR_LESS = "index is not an integer of -1 or more"
_NEGATIVE_START = "negative start_ts (times are offsets from the step start)"
_UNREADABLE_YAML = "unreadable metadata YAML"
_YAML_NOT_MAPPING = "metadata YAML is not names and values"


@dataclass(frozen=True)
class Options:
    """The straggler_ops format takes no options besides the RunMeta keywords."""


REQUIRED = ("rank", "step", "optype", "start_ts", "duration")
OPTIONAL = ("dp_rank", "stage", "seq_id", "mc", "mb_id", "gmc")
# ``optimizer-clip-main-grad`` is left out: it contains the gradient-norm all-reduce, so its
# duration is mostly waiting for other ranks (0.01-0.33 s per step by stage in the ST job).
COMPUTE_OPS = frozenset({"forward-compute", "backward-compute", "optimizer"})
_COMM_RE = re.compile(r"(send|recv|all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|broadcast)$")
# Integer columns: the dtype in the ops table (widened when the values need it) and the lowest
# value allowed; -1 is the traces' "none" marker (e.g. ``mc`` of a communication op).
_INT_COLUMNS = {
    "step": ("int32", 0), "rank": ("int32", 0), "dp_rank": ("int16", 0), "stage": ("int16", 0),
    "seq_id": ("int32", -1), "mc": ("int16", -1), "mb_id": ("int16", -1), "gmc": ("int16", -1),
}
_MAX_INDEX = 10_000_000  # a rank, stage or chunk number above this is not a real job's
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_MAX_YAML_BYTES = 1 << 20
_YAML_TOO_LARGE = f"metadata YAML too large (over {_MAX_YAML_BYTES:,} bytes)"
_YAML_SIZES = ("dp_size", "dsp_size", "pp_size", "tp_size", "vpp_size", "cp_size", "ep_size")


def classify(optype: str) -> str:
    """'compute', 'comm' or 'other' for an op type name."""
    if optype in COMPUTE_OPS:
        return "compute"
    if _COMM_RE.search(optype):
        return "comm"
    return "other"


# --- sniffing -----------------------------------------------------------------------------------
def _columns(path: Path, head: bytes) -> list[str]:
    if head[:4] == b"PAR1" or path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return list(pq.read_schema(path).names)
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().lstrip("\ufeff")
    return [c.strip().strip('"') for c in first.split(",")]


def _is_trace(path: Path, head: bytes) -> bool:
    try:
        return set(REQUIRED) <= set(_columns(path, head))
    except Exception:  # an unreadable candidate is simply not a trace
        return False


def _dir_traces(path: Path) -> list[Path]:
    """Files in ``path`` whose columns make them op traces."""
    out = []
    cands = [f for f in sorted(path.iterdir()) if f.is_file() and f.suffix in (".parquet", ".csv", ".gz")]
    for f in cands[:100]:  # a folder of many unrelated tables is not worth scanning whole
        try:
            head = read_head(f)  # gzip inflated, within a small bound
        except OSError:
            continue
        if _is_trace(f, head):
            out.append(f)
    return out


def _companion_trace(path: Path) -> Path | None:
    """The ``trace-<name>.*`` that a ``meta-<name>.yaml`` describes, if it is beside it."""
    m = re.match(r"^meta-(.+)\.yaml$", path.name)
    if not m:
        return None
    for ext in (".parquet", ".csv", ".csv.gz"):
        c = path.with_name(f"trace-{m.group(1)}{ext}")
        if c.is_file():
            return c
    return None


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is an op trace (file by its columns; a folder holding one)."""
    try:
        p = Path(path)
        if p.is_dir():
            return 0.8 if _dir_traces(p) else 0.0
        if _companion_trace(p) is not None:
            return 0.7  # the metadata of a trace: loading it loads the trace beside it
        if not head:
            return 0.0
        cols = set(_columns(p, head))
        if set(REQUIRED) <= cols:
            return 0.95 if {"dp_rank", "stage"} & cols else 0.85
        return 0.0
    except Exception:  # a sniffer never fails a detection: unreadable means "not mine"
        return 0.0


# --- reading ------------------------------------------------------------------------------------
def _pick_file(reader: Reader) -> Path:
    """The trace to read: the file itself, the trace beside a meta YAML, or a folder's one trace."""
    path = reader.path
    if not path.is_dir():
        return _companion_trace(path) or path
    traces = _dir_traces(path)
    if not traces:
        reader.fail("no op-trace files (Parquet/CSV with rank, step, optype, start_ts, duration) here")
    if len(traces) > 1:
        reader.fail(f"several op traces here ({', '.join(t.name for t in traces)}): each is its own job; load one file")
    return traces[0]


def _check_columns(reader: Reader, names: list[str], types: dict[str, Any], line: int | None) -> list[str]:
    """The trace columns present (required ones checked, each once, of a type that holds numbers)."""
    import pyarrow as pa

    missing = [c for c in REQUIRED if c not in names]
    if missing:
        reader.fail(f"missing column(s) {missing}; required: {list(REQUIRED)}", line=line, field=missing[0])
    cols = [c for c in (*REQUIRED, *OPTIONAL) if c in names]
    twice = [c for c in cols if names.count(c) > 1]
    if twice:
        reader.fail(f"column {twice[0]!r} appears more than once", line=line, field=twice[0])
    for c in cols:
        t = types[c]
        if pa.types.is_dictionary(t):
            t = t.value_type
        plain = pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_null(t)
        if not (plain or pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_boolean(t)):
            reader.fail(f"column {c!r} holds {types[c]}, not numbers or names", line=line, field=c)
    return cols


def _read_parquet(reader: Reader) -> pd.DataFrame:
    import pyarrow.parquet as pq

    try:
        schema = pq.read_schema(reader.path)
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow's errors on a damaged file: the file is unreadable
        reader.fail(f"unreadable Parquet file ({type(exc).__name__}: {exc})")
    cols = _check_columns(reader, list(schema.names), {f.name: f.type for f in schema}, None)
    try:
        return pq.read_table(reader.path, columns=cols).to_pandas()
    except MemoryError:
        raise
    except Exception as exc:  # a damaged column chunk, a bad dictionary page, ...
        reader.fail(f"unreadable Parquet file ({type(exc).__name__}: {exc})")
        raise  # for type checkers; fail() always raises


def _read_csv(reader: Reader) -> tuple[pd.DataFrame, np.ndarray, list[tuple[int, str]]]:
    """The columns as text, each kept row's line, and the rows pyarrow could not split."""
    import pyarrow as pa
    import pyarrow.csv as pcsv

    data = reader.bytes()
    if not data.strip():
        reader.fail("empty file")
    data = data.decode("utf-8", errors="replace").encode("utf-8")  # binary garbage becomes text
    bad_rows: list[tuple[int, str]] = []

    def on_invalid(row: Any) -> str:
        bad_rows.append((row.number or 0, row.text))
        return "skip"

    # Every trace column is read as text: a type guessed from the first block would make one bad
    # cell further down fail the whole file instead of its row.
    as_text = {c: pa.string() for c in (*REQUIRED, *OPTIONAL)}
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(use_threads=False),  # so bad rows come with line numbers
            parse_options=pcsv.ParseOptions(invalid_row_handler=on_invalid),
            convert_options=pcsv.ConvertOptions(column_types=as_text, strings_can_be_null=True),
        )
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow's CSV errors (unbalanced quotes, ...): the file is unreadable
        reader.fail(f"unreadable CSV ({type(exc).__name__}: {exc})")
    cols = _check_columns(reader, list(table.column_names), {f.name: f.type for f in table.schema}, 1)
    df = table.select(cols).to_pandas()
    reader.report.lines_read += len(df) + len(bad_rows) + 1
    lines, at = _row_lines(data, len(df), [n for n, _ in bad_rows])
    return df, lines, [(at(n), text) for n, text in bad_rows]


def _row_lines(data: bytes, n_rows: int, bad: list[int]) -> tuple[np.ndarray, Any]:
    """The file line of each row pyarrow kept, and of a row number pyarrow gives.

    pyarrow passes over empty lines and numbers the rows it reads (the header is 1), so after a
    blank line its numbers are not lines. Row k is the k-th non-empty line; where a quoted line
    break makes rows and lines differ, the numbers are kept as pyarrow gives them.
    """
    text = np.frombuffer(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"), dtype=np.uint8)
    ends = np.flatnonzero(text == 10)
    if len(text) and text[-1] != 10:
        ends = np.append(ends, len(text))
    starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else np.zeros(0, dtype=np.int64)
    physical = np.flatnonzero(ends > starts) + 1  # the lines of rows 1, 2, ...: non-empty ones
    rows = np.arange(2, len(physical) + 1)
    rows = rows[~np.isin(rows, np.asarray(bad, dtype=np.int64))]
    if len(rows) != n_rows:
        return np.arange(n_rows) + 2, lambda n: n
    return physical[rows - 1], lambda n: int(physical[n - 1]) if 0 < n <= len(physical) else n


def _read_table(reader: Reader) -> tuple[pd.DataFrame, np.ndarray, list[tuple[int, str]]]:
    """The raw columns, each row's line (CSV) or row number (Parquet), and unsplittable CSV rows."""
    head = reader.head(8)
    if not head:
        reader.fail("empty file")
    if head[:4] == b"PAR1":
        df = _read_parquet(reader)
        reader.report.lines_read += len(df)
        reader.note("Parquet input: the numbers given for skipped records are row numbers (1-based)")
        return df, np.arange(1, len(df) + 1), []
    return _read_csv(reader)


# --- checking -----------------------------------------------------------------------------------
_OK, _MISSING, _WRONG, _HIGH, _TEXT = range(5)


def _judge(value: Any, lowest: int, highest: int) -> tuple[int, int]:
    """``(integer, status)`` of one cell of an integer column.

    A cell is an integer of at least ``lowest`` by :func:`rules.as_step` (``-1``, the traces'
    "none" marker, where ``lowest`` is -1); status ``_HIGH`` when it is above ``highest`` (or
    beyond int64), ``_WRONG`` for another number (``3.5``, ``-2``, ``inf``), ``_TEXT`` for text
    and ``_MISSING`` for a blank.
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return 0, _MISSING
    n = rules.as_step(value)
    if n is None and lowest < 0 and not isinstance(value, bool):
        n = -1 if number(value, nonfinite="keep", overflow="inf") == -1.0 else None
    if n is not None:
        return (n, _OK) if n <= highest else (0, _HIGH)
    x = number(value, nonfinite="keep", overflow="inf")  # an int beyond float range is ±inf: a number
    if x is None:
        return 0, _TEXT
    big = x > highest and (x == int(x) if np.isfinite(x) else False)
    return 0, _HIGH if big else _WRONG


def _integers(s: pd.Series, lowest: int, highest: int) -> tuple[np.ndarray, np.ndarray]:
    """``(values, status)`` of an integer column (values 0 where the status is not ``_OK``).

    Each distinct cell is judged once by :func:`_judge`, so the check is exactly
    :func:`rules.as_step`'s and linear in the rows (a trace has few distinct steps and ranks).
    """
    codes, uniques = pd.factorize(s, use_na_sentinel=True)
    judged = [_judge(u, lowest, highest) for u in uniques.tolist()] + [(0, _MISSING)]  # [-1]: NaN
    vals = np.array([v for v, _ in judged], dtype=np.int64)
    status = np.array([k for _, k in judged], dtype=np.int8)
    return vals[codes], status[codes]


def _times(s: pd.Series) -> np.ndarray:
    """A time column as floats (NaN where missing or not a number; booleans are not times)."""
    if pd.api.types.is_bool_dtype(s):
        return np.full(len(s), np.nan)
    return pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


# One check: (rows, reason, field, whether the row is dropped; else the value is left missing).
Check = tuple[np.ndarray, str, str, bool]


def _int_checks(df: pd.DataFrame, num: dict[str, np.ndarray]) -> list[Check]:
    """Checks of the integer columns; fills ``num`` (optional columns with NaN where missing)."""
    checks: list[Check] = []
    for c in (c for c in (*REQUIRED, *OPTIONAL) if c in df and c in _INT_COLUMNS):
        lowest = _INT_COLUMNS[c][1]
        v, status = _integers(df[c], lowest, rules.MAX_INT64 if c == "step" else _MAX_INDEX)
        if c == "step":
            checks.append((status != _OK, rules.BAD_STEP, c, True))
            num[c] = v
            continue
        what = rules.SkipReason(_NOT_INDEX if lowest == 0 else _NOT_INDEX_OR_LESS, c)
        high = (status == _HIGH, rules.SkipReason(rules.VALUE_OUT_OF_RANGE, f"{c} above {_MAX_INDEX:,}"), c, True)
        if c in REQUIRED:
            checks += [(np.isin(status, (_MISSING, _WRONG, _TEXT)), what, c, True), high]
            num[c] = v
            continue
        checks += [(status == _WRONG, what, c, True), high, (status == _TEXT, rules.NON_NUMERIC, c, False)]
        gap = np.isin(status, (_MISSING, _TEXT))
        num[c] = np.where(gap, np.nan, v.astype(float)) if gap.any() else v
    return checks


def _row_checks(df: pd.DataFrame) -> tuple[dict[str, np.ndarray], list[Check]]:
    """Numeric columns, and every row check in the order they apply."""
    num: dict[str, np.ndarray] = {}
    checks = _int_checks(df, num)
    for c in ("start_ts", "duration"):
        v = _times(df[c])
        checks.append((~np.isfinite(v), rules.NON_FINITE_TIME, c, True))
        with np.errstate(invalid="ignore"):
            beyond = rules.SkipReason(rules.VALUE_OUT_OF_RANGE, "beyond float32")
            checks.append((np.abs(v) > _FLOAT32_MAX, beyond, c, True))
        num[c] = v
    checks.append((df["optype"].isna().to_numpy(), rules.SkipReason(rules.MISSING_FIELD, "op type"), "optype", True))
    with np.errstate(invalid="ignore"):
        checks.append((num["duration"] < 0, rules.NEGATIVE_DURATION, "duration", True))
        checks.append((num["start_ts"] < 0, _NEGATIVE_START, "start_ts", True))
    return num, checks


def _raise_first(reader: Reader, checks: list[Check], lines: np.ndarray, df: pd.DataFrame,
                 unsplit: list[tuple[int, str]]) -> None:
    """Strict mode: raise on the first bad row or cell in file order, whatever its kind."""
    found = [(unsplit[0][0], -1, 0)] if unsplit else []
    for j, (mask, _, _, _) in enumerate(checks):
        if mask.any():
            i = int(np.argmax(mask))
            found.append((int(lines[i]), j, i))
    if not found:
        return
    line, j, i = min(found)
    if j < 0:
        reader.bad(rules.WRONG_FIELD_COUNT, line=line, field="row", example=unsplit[0][1])
    _, reason, field, _ = checks[j]
    reader.bad(reason, line=line, field=field, example=str(df.iloc[i].to_dict()))


def _report_bad_rows(
    reader: Reader, checks: list[Check], lines: np.ndarray, df: pd.DataFrame, unsplit: list[tuple[int, str]]
) -> np.ndarray:
    """Count each bad row under its first failing check (first few with lines); the keep mask.

    ``unsplit`` are the CSV rows with the wrong number of fields. A check that does not drop
    its rows (a non-numeric cell of an optional column) counts each cell.
    """
    if reader.strict:
        _raise_first(reader, checks, lines, df, unsplit)
    for line_no, text in unsplit:
        reader.bad(rules.WRONG_FIELD_COUNT, line=line_no, field="row", example=text)
    which = np.full(len(df), -1)
    for j, (mask, _, _, drops) in enumerate(checks):
        if drops:
            which[(which < 0) & mask] = j
    for j, (mask, reason, field, drops) in enumerate(checks):
        idx = np.flatnonzero((which == j) if drops else (mask & (which < 0)))
        for i in idx[:5]:
            reader.bad(reason, line=int(lines[i]), field=field, example=str(df.iloc[int(i)].to_dict()))
        if len(idx) > 5:
            reader.bad(reason, field=field, count=len(idx) - 5)
    return which < 0


# --- the op table and the step rows -------------------------------------------------------------
def _compact(v: np.ndarray, dtype: str) -> Any:
    """An integer column in ``dtype``, widened when its values need it; Float32 with gaps."""
    if v.dtype.kind == "f":
        if np.isnan(v).any():
            return pd.array(v, dtype="Float32")  # exact: the values are at most 10,000,000
        v = v.astype(np.int64)
    for t in (dtype, "int32", "int64"):
        info = np.iinfo(t)
        if not len(v) or (info.min <= v.min() and v.max() <= info.max):
            return v.astype(t)
    return v


def _ops_table(num: dict[str, np.ndarray], keep: np.ndarray, opt: pd.Series) -> tuple[pd.DataFrame, dict[str, str]]:
    """Every kept op with compact dtypes, and the category of each op type."""
    ops: dict[str, Any] = {}
    for c in ("dp_rank", "stage", "rank", "step"):
        if c in num:
            ops[c] = _compact(num[c][keep], _INT_COLUMNS[c][0])
    if isinstance(opt.dtype, pd.CategoricalDtype):
        opt_k = opt[keep].cat.remove_unused_categories()
        opt_k = opt_k.cat.rename_categories([str(c) for c in opt_k.cat.categories])
    else:
        opt_k = opt[keep].astype(str).astype("category")
    ops["optype"] = opt_k.array
    cats = list(opt_k.cat.categories)
    kind_of = {str(c): classify(str(c)) for c in cats}
    ops["start_ts"] = num["start_ts"][keep].astype(np.float32)
    ops["duration"] = num["duration"][keep].astype(np.float32)
    for c in ("seq_id", "mc", "mb_id", "gmc"):
        if c in num:
            ops[c] = _compact(num[c][keep], _INT_COLUMNS[c][0])
    ops["category"] = pd.Categorical(
        [kind_of[str(c)] for c in cats], categories=["compute", "comm", "other"]
    )[opt_k.cat.codes.to_numpy()]
    return pd.DataFrame(ops), kind_of


def _group_union(g: np.ndarray, s: np.ndarray, e: np.ndarray, n_groups: int) -> np.ndarray:
    """Per group, the length of the union of intervals [s, e)."""
    out = np.zeros(n_groups)
    if not len(g):
        return out
    span = float(np.max(e) - np.min(s)) + 1.0
    o = np.lexsort((s, g))
    g, s, e = g[o], s[o] + g[o] * span, e[o] + g[o] * span
    cm = np.maximum.accumulate(e)
    prev = np.concatenate([[-np.inf], cm[:-1]])
    contrib = np.maximum(e - np.maximum(s, prev), 0.0)
    return np.bincount(g, weights=contrib, minlength=n_groups)


def _step_rows(num: dict[str, np.ndarray], keep: np.ndarray, category: pd.Categorical) -> dict[str, Any]:
    """One row per (step, rank), computed in float64; sampled steps laid end to end."""
    start, dur = num["start_ts"][keep], num["duration"][keep]
    end = start + dur
    key = pd.MultiIndex.from_arrays([num["step"][keep].astype(np.int64), num["rank"][keep].astype(np.int64)])
    codes, uniq = pd.factorize(key, sort=True)
    n = len(uniq)
    first_start = np.full(n, np.inf)
    np.minimum.at(first_start, codes, start)
    last_end = np.full(n, -np.inf)
    np.maximum.at(last_end, codes, end)
    cat_codes = np.asarray(category.codes)
    cm = cat_codes == 1
    g_step = uniq.get_level_values(0).to_numpy()
    steps_sorted, step_idx = np.unique(g_step, return_inverse=True)
    wall = np.zeros(len(steps_sorted))
    np.maximum.at(wall, step_idx, last_end)  # each step lasts as long as its slowest rank
    offset = np.concatenate([[0.0], np.cumsum(wall)[:-1]])
    out = {
        "attempt": np.zeros(n, dtype=np.int64),
        "step": g_step,
        "rank": uniq.get_level_values(1).to_numpy(),
        "start_s": offset[step_idx] + first_start,
        "end_s": offset[step_idx] + last_end,
        "compute_s": np.bincount(codes, weights=np.where(cat_codes == 0, dur, 0.0), minlength=n),
        "comm_s": _group_union(codes[cm], start[cm], end[cm], n),
        "other_s": np.bincount(codes, weights=np.where(cat_codes == 2, dur, 0.0), minlength=n),
        "n_ops": np.bincount(codes, minlength=n),
    }
    for c in ("stage", "dp_rank"):
        if c in num:
            v = np.full(n, np.nan)
            np.fmax.at(v, codes, num[c][keep])
            out[c] = v.astype(np.int64) if np.isfinite(v).all() else v
    return out


# --- the metadata YAML --------------------------------------------------------------------------
def _meta_yaml_path(path: Path) -> Path | None:
    m = re.match(r"^trace-(.+?)\.(?:parquet|csv)(?:\.gz)?$", path.name)
    cands = [path.with_name(f"meta-{m.group(1)}.yaml")] if m else []
    cands.append(path.with_name(path.name.split(".")[0] + ".meta.yaml"))
    return next((c for c in cands if c.is_file()), None)


def _meta_yaml(path: Path, reader: Reader) -> tuple[dict[str, Any], Path, list[str]] | None:
    """The trace's metadata YAML (plain values only), its path and its lines; None if absent or bad."""
    import yaml  # PyYAML; safe_load builds plain data only

    c = _meta_yaml_path(path)
    if c is None:
        return None
    bad = reader.for_file(c)  # an error names the YAML file itself, not the trace beside it
    data = bad.bytes()
    if len(data) > _MAX_YAML_BYTES:
        bad.bad(_YAML_TOO_LARGE, field="meta", example=str(c))
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        loaded = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: e.g. a date 2024-13-45
        bad.bad(_UNREADABLE_YAML, field="meta", example=str(c), detail=type(exc).__name__)
        return None
    if not isinstance(loaded, dict):
        if loaded is not None:  # an empty file says nothing; a list or a number is not metadata
            bad.bad(_YAML_NOT_MAPPING, field="meta", example=str(c), detail=f"a {type(loaded).__name__}")
        return None
    plain = {str(k): v for k, v in loaded.items() if isinstance(v, (int, float, str, bool)) or v is None}
    if len(plain) < len(loaded):
        reader.note(f"{c.name}: values that are not plain numbers or names left out")
    return plain, c, text.splitlines()


def _yaml_facts(out: Parsed, reader: Reader, par: dict[str, Any], where: Path, lines: list[str]) -> int | None:
    """The world size and parallel sizes the YAML states, as facts with their lines; the world size."""
    at = {}
    for i, line in enumerate(lines, start=1):
        key = line.split(":", 1)[0]
        if key == key.strip() and key in par and key not in at:
            at[key] = i
    ws = par.get("world_size")
    world = rules.as_count(ws)
    if ws is not None and world is None:
        reader.for_file(where).bad(rules.VALUE_OUT_OF_RANGE, line=at.get("world_size"), field="world_size",
                                   example=str(ws))
    if world is not None:
        loc = f"{where}:{at['world_size']}"
        out.fact("n_ranks", world, loc, lines[at["world_size"] - 1])
        out.fact("n_accelerators", world, loc, lines[at["world_size"] - 1])
    sizes = {k: par[k] for k in _YAML_SIZES if k in par and rules.as_count(par[k]) is not None}
    if sizes:
        first = min(at[k] for k in sizes)
        text = "; ".join(lines[at[k] - 1].strip() for k in sizes)
        out.fact("parallelism", {k.removesuffix("_size"): int(v) for k, v in sizes.items()}, f"{where}:{first}", text)
    return world


def _notes(reader: Reader, kind_of: dict[str, str], steps: np.ndarray) -> None:
    unknown = sorted(c for c, k in kind_of.items() if k == "other" and c not in ("gc", "first-op"))
    if unknown:
        reader.note(f"op types counted as 'other' (neither compute nor communication): {unknown}")
    s = np.unique(steps)
    if len(s) > 1 and (np.diff(s) > 1).any():
        reader.note(
            f"steps are a sample ({len(s)} step numbers from {s[0]} to {s[-1]}): laid end to end; "
            "the time between them is not in the trace"
        )


def parse(reader: Reader, options: Options) -> Parsed:
    """Read an op trace (Parquet or CSV) and its ``meta-*.yaml``; see the module docstring."""
    trace = _pick_file(reader)
    r = reader if trace == reader.path else reader.for_file(trace)
    df, lines, unsplit = _read_table(r)
    num, checks = _row_checks(df)
    keep = _report_bad_rows(r, checks, lines, df, unsplit)
    if not keep.any():
        skipped = r.report.total_skipped
        r.fail(f"no usable op rows (of {len(df)})" + (f"; {skipped} malformed" if skipped else ""))
    ops, kind_of = _ops_table(num, keep, df["optype"])
    steps = _step_rows(num, keep, ops["category"].array)
    if not np.isfinite(steps["end_s"]).all():
        r.fail("non-finite step times")
    _notes(r, kind_of, steps["step"])
    out = Parsed(steps=steps, tables={"ops": ops}, timing="duration_only", time_unit="s")
    out.extra = {
        "ops_read": int(len(df)),
        "ops_kept": int(keep.sum()),
        "ranks_in_trace": int(len(np.unique(steps["rank"]))),
        "op_categories": kind_of,
    }
    found = _meta_yaml(trace, r)
    par = found[0] if found else None
    if found is not None:
        out.extra["parallelism"] = par
        world = _yaml_facts(out, r, *found)
        if world is not None and out.extra["ranks_in_trace"] < world:
            r.note(f"the trace holds {out.extra['ranks_in_trace']} of the job's {world} ranks")
    name = par.get("trial_name") if par and isinstance(par.get("trial_name"), str) else trace.name.split(".")[0]
    out.meta["name"] = str(name)
    return out


load = loader_for(NAME)
