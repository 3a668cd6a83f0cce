"""Per-rank operation traces in the columnar form of the StragglerAnalysis data (Parquet or CSV).

Columns: ``dp_rank, stage, rank, step, optype, start_ts, duration, seq_id, mc, mb_id, gmc``;
``start_ts`` and ``duration`` in seconds relative to the start of the step. Required are
``rank, step, optype, start_ts, duration``; the others are kept when present. An optional
``meta-<name>.yaml`` beside ``trace-<name>.<ext>`` (parallelism sizes, world size) is read with
``yaml.safe_load`` into ``meta.extra["parallelism"]``; its ``world_size`` sets
``meta.n_accelerators``.

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
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import LoadError, Run, RunMeta
from ._build import _apply_overrides, split_kwargs
from ._common import Reader, open_bytes

NAME = "straggler_ops"

REQUIRED = ("rank", "step", "optype", "start_ts", "duration")
OPTIONAL = ("dp_rank", "stage", "seq_id", "mc", "mb_id", "gmc")
# ``optimizer-clip-main-grad`` is left out: it contains the gradient-norm all-reduce, so its
# duration is mostly waiting for other ranks (0.01-0.33 s per step by stage in the ST job).
COMPUTE_OPS = frozenset({"forward-compute", "backward-compute", "optimizer"})
_COMM_RE = re.compile(r"(send|recv|all-?reduce|all-?gather|reduce-?scatter|all-?to-?all|broadcast)$")
_INT_DTYPES = {"rank": "int32", "step": "int32", "dp_rank": "int16", "stage": "int16", "seq_id": "int32", "mc": "int16", "mb_id": "int16", "gmc": "int16"}


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
    except Exception:
        return False


def _dir_traces(path: Path) -> list[Path]:
    """Files in ``path`` whose columns make them op traces."""
    out = []
    cands = [f for f in sorted(path.iterdir()) if f.is_file() and f.suffix in (".parquet", ".csv", ".gz")]
    for f in cands[:100]:  # a folder of many unrelated tables is not worth scanning whole
        with f.open("rb") as fh:
            head = fh.read(8192)
        if _is_trace(f, head if f.suffix != ".gz" else b""):
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
    except Exception:
        return 0.0


# --- reading ------------------------------------------------------------------------------------
def _meta_yaml(path: Path, reader: Reader) -> dict[str, Any] | None:
    m = re.match(r"^trace-(.+?)\.(?:parquet|csv)(?:\.gz)?$", path.name)
    cands = [path.with_name(f"meta-{m.group(1)}.yaml")] if m else []
    cands.append(path.with_name(path.name.split(".")[0] + ".meta.yaml"))
    for c in cands:
        if c.is_file():
            import yaml  # PyYAML; safe_load builds plain data only

            try:
                data = yaml.safe_load(open_bytes(c).decode("utf-8", errors="replace"))
            except yaml.YAMLError as exc:
                # the error names the YAML file itself, not the trace beside it
                reader.for_file(c).bad(f"unreadable metadata YAML ({type(exc).__name__})", field="meta", example=str(c))
                return None
            if isinstance(data, dict):
                return {str(k): (v if isinstance(v, (int, float, str, bool)) or v is None else str(v)) for k, v in data.items()}
    return None


def _read_table(path: Path, reader: Reader) -> tuple[pd.DataFrame, np.ndarray, str]:
    """The raw columns as a DataFrame, each row's line (CSV) or row number (Parquet)."""
    if path.suffix == ".gz":
        head = open_bytes(path)[:8]
    else:
        with path.open("rb") as fh:
            head = fh.read(8)
    if not head:
        reader.fail("empty file")
    if head[:4] == b"PAR1":
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            schema = pq.read_schema(path)
        except (pa.ArrowInvalid, OSError) as exc:
            reader.fail(f"unreadable Parquet file ({exc})")
        missing = [c for c in REQUIRED if c not in schema.names]
        if missing:
            reader.fail(f"missing column(s) {missing}; required: {list(REQUIRED)}", field=missing[0])
        cols = [c for c in (*REQUIRED, *OPTIONAL) if c in schema.names]
        try:
            table = pq.read_table(path, columns=cols)
        except (pa.ArrowInvalid, OSError) as exc:
            reader.fail(f"unreadable Parquet file ({exc})")
        df = table.to_pandas()
        return df, np.arange(1, len(df) + 1), "row"
    import pyarrow as pa
    import pyarrow.csv as pcsv

    bad_rows: list[tuple[int | None, str]] = []

    def on_invalid(row: Any) -> str:
        bad_rows.append((row.number, row.text))
        return "skip"

    data = open_bytes(path)
    if not data.strip():
        reader.fail("empty file")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:  # binary garbage: make it text the CSV reader can report on
        data = data.decode("utf-8", errors="replace").encode("utf-8")
    try:
        table = pcsv.read_csv(
            pa.py_buffer(data),
            read_options=pcsv.ReadOptions(use_threads=False),  # so bad rows come with line numbers
            parse_options=pcsv.ParseOptions(invalid_row_handler=on_invalid),
            convert_options=pcsv.ConvertOptions(column_types={"optype": pa.string()}, strings_can_be_null=True),
        )
    except (pa.ArrowInvalid, UnicodeDecodeError) as exc:
        reader.fail(f"unreadable CSV ({exc})")
    for number, text in bad_rows:
        reader.bad("wrong number of fields", line=number, field="row", example=text)
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        reader.fail(f"missing column(s) {missing}; required: {list(REQUIRED)}", line=1, field=missing[0])
    cols = [c for c in (*REQUIRED, *OPTIONAL) if c in table.column_names]
    df = table.select(cols).to_pandas()
    # Line numbers of the kept rows: the header is line 1; skipped rows shift the rest.
    skipped = np.asarray(sorted(n for n, _ in bad_rows if n is not None), dtype=np.int64)
    idx = np.arange(len(df)) + 2
    if len(skipped):
        kept = np.setdiff1d(np.arange(2, 2 + len(df) + len(skipped)), skipped)
        if len(kept) == len(df):
            idx = kept
    reader.report.lines_read = len(df) + len(bad_rows) + 1
    return df, idx, "line"


def _report_bad_rows(
    reader: Reader, checks: list[tuple[np.ndarray, str, str]], lines: np.ndarray, df: pd.DataFrame
) -> np.ndarray:
    """Count bad rows by their first failing check (first few with lines); return the keep mask."""
    n = len(df)
    which = np.full(n, -1)
    for j, (mask, _, _) in enumerate(checks):
        which[(which < 0) & mask] = j
    bad_rows = np.flatnonzero(which >= 0)
    if reader.strict and len(bad_rows):
        i = int(bad_rows[0])
        _, reason, field = checks[which[i]]
        reader.bad(reason, line=int(lines[i]), field=field, example=str(df.iloc[i].to_dict()))
    reasons = np.array([r for _, r, _ in checks], dtype=object)
    for reason in dict.fromkeys(reasons[which[bad_rows]]):
        idx = bad_rows[reasons[which[bad_rows]] == reason]
        for i in idx[:5]:
            field = checks[which[i]][2]
            reader.bad(reason, line=int(lines[i]), field=field, example=str(df.iloc[int(i)].to_dict()))
        if len(idx) > 5:
            reader.report.skipped[reason] += len(idx) - 5
    return which < 0


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


def _pick_file(path: Path) -> Path:
    if not path.is_dir():
        return _companion_trace(path) or path
    traces = _dir_traces(path)
    if not traces:
        raise LoadError("no op-trace files (Parquet/CSV with rank, step, optype, start_ts, duration) here", path=path)
    if len(traces) > 1:
        raise LoadError(
            f"several op traces here ({', '.join(t.name for t in traces)}): each is its own job; load one file",
            path=path,
        )
    return traces[0]


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read an op trace (Parquet or CSV) and its ``meta-*.yaml`` into a Run (see module doc)."""
    # Keywords naming RunMeta fields state what the log does not carry; others are an error.
    _, overrides = split_kwargs(kwargs, (), fmt=NAME)
    src = Path(path)
    path = _pick_file(src)
    reader = Reader(path, NAME, strict=strict)
    rep = reader.report
    df, lines, unit = _read_table(path, reader)
    if unit == "row":
        rep.lines_read = len(df)
        rep.note("Parquet input: the numbers given for skipped records are row numbers (1-based)")
    n_in = len(df)
    # Numeric coercion, then every row check; each bad row is reported once, under the first
    # reason that applies, in row order (so strict mode stops at the first bad row).
    num: dict[str, np.ndarray] = {}
    checks: list[tuple[np.ndarray, str, str]] = []
    for c in ("rank", "step", "start_ts", "duration", *[c for c in OPTIONAL if c in df]):
        v = pd.to_numeric(df[c], errors="coerce").to_numpy(dtype=float)
        if c in REQUIRED:
            checks.append((~np.isfinite(v), "missing, NaN or non-numeric value", c))
        num[c] = v
    opt = df["optype"]
    checks.append((opt.isna().to_numpy(), "missing op type", "optype"))
    with np.errstate(invalid="ignore"):
        checks.append((num["duration"] < 0, "negative duration", "duration"))
        checks.append((num["start_ts"] < 0, "negative start_ts (times are offsets from the step start)", "start_ts"))
        for c in ("rank", "step"):
            v = num[c]
            checks.append(((v != np.floor(v)) | (v < 0), f"{c} is not a non-negative integer", c))
    keep = _report_bad_rows(reader, checks, lines, df)
    if not keep.any():
        reader.fail(f"no usable op rows (of {n_in})" + (f"; {rep.total_skipped} malformed" if rep.total_skipped else ""))

    # The op table with compact dtypes.
    ops: dict[str, Any] = {}
    for c in ("dp_rank", "stage", "rank", "step"):
        if c in num:
            v = num[c][keep]
            ops[c] = v.astype(_INT_DTYPES[c]) if np.isfinite(v).all() else pd.array(v, dtype="Float32")
    if isinstance(opt.dtype, pd.CategoricalDtype):
        opt_k = opt[keep].cat.remove_unused_categories()
        opt_k = opt_k.cat.rename_categories([str(c) for c in opt_k.cat.categories])
    else:
        opt_k = opt[keep].astype(str).astype("category")
    ops["optype"] = opt_k.array
    cats = list(opt_k.cat.categories)
    kind_of = {c: classify(str(c)) for c in cats}
    category = pd.Categorical(
        [kind_of[c] for c in cats], categories=["compute", "comm", "other"]
    )[opt_k.cat.codes.to_numpy()]
    start = num["start_ts"][keep]
    dur = num["duration"][keep]
    ops["start_ts"] = start.astype(np.float32)
    ops["duration"] = dur.astype(np.float32)
    for c in ("seq_id", "mc", "mb_id", "gmc"):
        if c in num:
            v = num[c][keep]
            ops[c] = v.astype(_INT_DTYPES[c]) if np.isfinite(v).all() else pd.array(v, dtype="Float32")
    ops["category"] = category
    ops_df = pd.DataFrame(ops)
    unknown = sorted(c for c, k in kind_of.items() if k == "other" and c not in ("gc", "first-op"))
    if unknown:
        rep.note(f"op types counted as 'other' (neither compute nor communication): {unknown}")

    # Step rows per (step, rank), computed in float64.
    rank = num["rank"][keep].astype(np.int64)
    step = num["step"][keep].astype(np.int64)
    end = start + dur
    key = pd.MultiIndex.from_arrays([step, rank])
    codes, uniq = pd.factorize(key, sort=True)
    n = len(uniq)
    first_start = np.full(n, np.inf)
    np.minimum.at(first_start, codes, start)
    last_end = np.full(n, -np.inf)
    np.maximum.at(last_end, codes, end)
    cat_codes = np.asarray(category.codes)
    compute_s = np.bincount(codes, weights=np.where(cat_codes == 0, dur, 0.0), minlength=n)
    other_s = np.bincount(codes, weights=np.where(cat_codes == 2, dur, 0.0), minlength=n)
    cm = cat_codes == 1
    comm_s = _group_union(codes[cm], start[cm], end[cm], n)
    n_ops = np.bincount(codes, minlength=n)
    g_step = uniq.get_level_values(0).to_numpy()
    g_rank = uniq.get_level_values(1).to_numpy()
    # Lay sampled steps end to end, each as long as its slowest rank.
    steps_sorted, step_idx = np.unique(g_step, return_inverse=True)
    wall = np.zeros(len(steps_sorted))
    np.maximum.at(wall, step_idx, last_end)
    offset = np.concatenate([[0.0], np.cumsum(wall)[:-1]])
    out = {
        "attempt": np.zeros(n, dtype=np.int64),
        "step": g_step,
        "rank": g_rank,
        "start_s": offset[step_idx] + first_start,
        "end_s": offset[step_idx] + last_end,
        "compute_s": compute_s,
        "comm_s": comm_s,
        "other_s": other_s,
        "n_ops": n_ops,
    }
    for c in ("stage", "dp_rank"):
        if c in num:
            v = np.full(n, np.nan)
            np.fmax.at(v, codes, num[c][keep])
            out[c] = v.astype(np.int64) if np.isfinite(v).all() else v
    if len(steps_sorted) > 1 and (np.diff(steps_sorted) > 1).any():
        rep.note(
            f"steps are a sample ({len(steps_sorted)} step numbers from {steps_sorted[0]} to "
            f"{steps_sorted[-1]}): laid end to end; the time between them is not in the trace"
        )
    rep.rows_kept = n
    par = _meta_yaml(path, reader)
    extra: dict[str, Any] = {
        "ops_read": int(n_in),
        "ops_kept": int(keep.sum()),
        "ranks_in_trace": int(len(np.unique(g_rank))),
        "op_categories": {str(k): v for k, v in kind_of.items()},
    }
    world = None
    if par is not None:
        extra["parallelism"] = par
        ws = par.get("world_size")
        world = int(ws) if isinstance(ws, int) and ws > 0 else None
        if world is not None and extra["ranks_in_trace"] < world:
            rep.note(f"the trace holds {extra['ranks_in_trace']} of the job's {world} ranks")
    name = par.get("trial_name") if par and isinstance(par.get("trial_name"), str) else path.name.split(".")[0]
    meta = RunMeta(
        name=str(name),
        n_accelerators=world,
        source_path=str(src),
        source_format=NAME,
        time_unit="s",
        timing="duration_only",
        extra=extra,
        report=rep,
    )
    meta = _apply_overrides(meta, overrides)
    try:
        run = Run.build(out, None, meta, {"ops": ops_df})
    except ValueError as exc:
        raise LoadError(f"op trace does not fit the Run schema: {exc}", path=path) from None
    if not math.isfinite(float(run.steps["end_s"].max())):
        raise LoadError("non-finite step times", path=path)
    rep.warn_if_skipped()
    return run
