"""Weights & Biases exports: run history CSV, system-stats CSV, ``wandb-summary.json``.

What the files carry and how they become one Run (a folder holding them loads as one Run; the
files are told apart by their content, not their names):

- History CSV (``run.history()`` / ``scan_history`` export): ``_step``, ``_runtime`` (s since
  ``wandb.init``), ``_timestamp`` (epoch s) and the logged metrics. A row with a trainer step
  (``train/global_step``, ``trainer/global_step``, ``global_step``, ``step``; else ``_step``)
  ends a logging interval that began at the previous step row; the steps of the interval share
  it evenly (``timing = "interval_mean"``); the first step row of an attempt is zero-width
  (``interval_known = False``) since its start is not logged. Rows with ``<prefix>/runtime``
  (HF ``eval/runtime``) become ``eval`` events ending at their timestamp, and the steps after
  them start when they end. The final HF row (``train/train_runtime``) goes to
  ``meta.extra["final"]``. Numeric metrics become step columns (``train/`` prefix dropped when
  no name clashes), on the logged step only. A step number that goes back opens an attempt.
- System-stats CSV (about every 30 s): per GPU ``gpu.N.gpu`` (SM utilisation %), ``.memory``
  (memory-controller busy %), ``.memoryAllocated`` (% of memory allocated),
  ``.memoryAllocatedBytes``, ``.powerWatts``, ``.powerPercent``, ``.temp`` (a ``system.``
  prefix is accepted). Kept as the tidy table ``tables["gpu_util"]``: ``time_s, gpu, util_pct,
  memory_pct, memory_bytes, mem_busy_pct, power_w, power_pct, temp_c``. ``gpu.process.N.*``
  repeats GPU N for the logging process and is left out.
- ``wandb-summary.json``: last values, to ``meta.extra["summary"]``. One that is not a JSON
  object is counted with the line of the JSON error (``strict=True`` raises).
- A non-numeric cell in a numeric column is a bad value (line and column in the report;
  ``strict=True`` raises): left missing, its row kept. A column with no number at all (text)
  is left out, with a note; a row without a number in ``_timestamp`` is skipped.

Times are seconds since the earliest of: the run start (``_timestamp − _runtime``), the first
system sample.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import LoadError, Run, RunMeta
from ._build import _apply_overrides, split_kwargs
from ._common import CsvRows, Reader, open_bytes, read_head

NAME = "wandb"

_STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step", "train/step", "step")
_GPU_RE = re.compile(r"^(?:system\.)?gpu\.(\d+)\.([A-Za-z]+)$")
_GPU_PROC_RE = re.compile(r"^(?:system\.)?gpu\.process\.\d+\.")
_GPU_FIELDS = {
    "gpu": "util_pct",
    "memoryAllocated": "memory_pct",
    "memoryAllocatedBytes": "memory_bytes",
    "memory": "mem_busy_pct",
    "powerWatts": "power_w",
    "powerPercent": "power_pct",
    "temp": "temp_c",
}
_GPU_COLS = ["util_pct", "memory_pct", "memory_bytes", "mem_busy_pct", "power_w", "power_pct", "temp_c"]


def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().lstrip("\ufeff")
    return [c.strip().strip('"') for c in first.split(",")]


def _kind_of(head: bytes) -> str | None:
    """'history', 'system', 'summary' or None, from a file's first bytes."""
    h = head.lstrip()
    if h[:1] == b"{":
        if b'"_wandb"' in head or (b'"_runtime"' in head and b'"_timestamp"' in head):
            return "summary"
        return None
    if b"\x00" in head:
        return None
    cols = _header(head)
    if "_timestamp" not in cols:
        return None
    if any(_GPU_RE.match(c) for c in cols):
        return "system"
    if "_step" in cols or "_runtime" in cols:
        return "history"
    return None


def _classify_dir(path: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    cands = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".csv", ".json", ".gz"))
    files_dir = path / "files"  # a local wandb run folder keeps the summary under files/
    if files_dir.is_dir():
        cands += sorted(p for p in files_dir.iterdir() if p.name == "wandb-summary.json")
    for p in cands[:200]:
        try:
            k = _kind_of(read_head(p))
        except OSError:
            continue
        if k:
            found.setdefault(k, []).append(p)
    return found


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is a W&B export (a file by its columns, a folder by its files)."""
    try:
        p = Path(path)
        if p.is_dir():
            kinds = _classify_dir(p)
            if "history" in kinds or "system" in kinds:
                return 0.85
            return 0.6 if "summary" in kinds else 0.0
        k = _kind_of(head)
        return {"history": 0.9, "system": 0.9, "summary": 0.8}.get(k or "", 0.0)
    except Exception:
        return 0.0


def _cell(c: str) -> float | None:
    """A CSV cell as a float: NaN when empty, None when it is not a number."""
    c = c.strip()
    if not c:
        return math.nan
    try:
        return float(c)
    except ValueError:
        return None


def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _read_csv(path: Path, reader: Reader, required: tuple[str, ...]) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric table + 1-based line numbers; bad rows and values counted with their line and field.

    A row without a number in a ``required`` column is skipped. A non-numeric cell elsewhere is
    a bad value: counted, left missing, its row kept. A column holding no number at all (text,
    media references) is left out, with a note.
    """
    text = open_bytes(path).decode("utf-8", errors="replace").lstrip("\ufeff")
    sub = reader.for_file(path)  # errors name this file; in a folder load, skips carry its name
    rows = CsvRows(text, sub)
    header = rows.header
    for r in required:
        if r not in header:
            sub.fail(f"missing column {r!r} (a W&B export has it)", line=1, field=r)
    idx = [header.index(r) for r in required]
    data: list[list[float]] = []
    lines: list[int] = []
    has_num = [False] * len(header)
    pending: dict[int, list[tuple[int, str]]] = {}  # bad cells of columns with no number yet

    def bad_value(ln: int, j: int, cell: str) -> None:
        sub.bad("non-numeric value (left missing, row kept)", line=ln, field=header[j], example=cell.strip()[:160])

    for ln, row in rows:
        vals = [_cell(c) for c in row]
        bad = next((required[k] for k, i in enumerate(idx) if not _finite(vals[i])), None)
        if bad is not None:
            sub.bad("missing or non-numeric required value", line=ln, field=bad, example=",".join(row)[:160])
            continue
        for j, v in enumerate(vals):
            if v is None:
                if has_num[j]:
                    bad_value(ln, j, row[j])
                else:
                    pending.setdefault(j, []).append((ln, row[j]))
            elif not has_num[j] and math.isfinite(v):
                has_num[j] = True  # a number column after all: its earlier text cells were bad
                for pl, pc in pending.pop(j, []):
                    bad_value(pl, j, pc)
        data.append([math.nan if v is None else v for v in vals])
        lines.append(ln)
    reader.report.lines_read += rows.n_rows + 1
    if pending:
        names = ", ".join(repr(header[j]) for j in sorted(pending))
        reader.report.note(f"{path.name}: column(s) {names} hold text, not numbers; left out")
    return pd.DataFrame(data, columns=header, dtype=float), np.asarray(lines, dtype=np.int64)


def _summary(path: Path, reader: Reader) -> dict[str, Any]:
    """The summary's scalar values; an unreadable or non-object file is counted (with the
    line of the JSON error) and gives none."""
    try:
        doc = json.loads(open_bytes(path))
    except json.JSONDecodeError as exc:
        at = exc.doc[max(0, exc.pos - 60) : exc.pos + 20]
        reader.for_file(path).bad(f"unreadable summary JSON ({exc.msg})", line=exc.lineno, field="summary", example=at)
        return {}
    except UnicodeDecodeError as exc:
        reader.for_file(path).bad(f"unreadable summary JSON ({exc.reason})", field="summary")
        return {}
    if not isinstance(doc, dict):
        reader.for_file(path).bad("summary JSON is not an object", line=1, field="summary")
        return {}
    out: dict[str, Any] = {}
    for k, v in doc.items():
        if isinstance(v, (int, float, str, bool)) and not (isinstance(v, float) and not math.isfinite(v)):
            out[k] = v
        elif k == "_wandb" and isinstance(v, dict) and isinstance(v.get("runtime"), (int, float)):
            out["_wandb.runtime"] = v["runtime"]
    return out


def _gpu_table(df: pd.DataFrame, t0: float, reader: Reader) -> tuple[pd.DataFrame, int]:
    """Wide system stats → tidy per-GPU rows."""
    per_gpu: dict[int, dict[str, str]] = {}
    proc = 0
    for c in df.columns:
        if _GPU_PROC_RE.match(c):
            proc += 1
            continue
        m = _GPU_RE.match(c)
        if m and m.group(2) in _GPU_FIELDS:
            per_gpu.setdefault(int(m.group(1)), {})[_GPU_FIELDS[m.group(2)]] = c
    if proc:
        reader.report.note(f"{proc} gpu.process.N.* columns (the logging process's GPU, repeated) left out")
    time_s = df["_timestamp"].to_numpy(float) - t0
    parts = []
    for g in sorted(per_gpu):
        cols = per_gpu[g]
        part = {"time_s": time_s, "gpu": np.full(len(df), g, dtype=np.int16)}
        for name in _GPU_COLS:
            part[name] = df[cols[name]].to_numpy(float) if name in cols else np.full(len(df), np.nan)
        parts.append(pd.DataFrame(part))
    if not parts:
        return pd.DataFrame(columns=["time_s", "gpu", *_GPU_COLS]), 0
    out = pd.concat(parts, ignore_index=True).sort_values(["time_s", "gpu"], kind="stable")
    return out.reset_index(drop=True), len(per_gpu)


def _history_steps(
    df: pd.DataFrame, lines: np.ndarray, t0: float, reader: Reader
) -> tuple[pd.DataFrame | None, list[dict[str, Any]], dict[str, Any]]:
    step_key = next((k for k in _STEP_KEYS if k in df.columns), "_step")
    ts = df["_timestamp"].to_numpy(float) - t0
    # Evaluations: a '<prefix>/runtime' value (HF logs eval/runtime) ends at the row's time.
    rt_cols = [c for c in df.columns if re.fullmatch(r"[A-Za-z0-9_]+/runtime", c) and not c.startswith("train/")]
    events: list[dict[str, Any]] = []
    is_eval = np.zeros(len(df), bool)
    for c in rt_cols:
        v = df[c].to_numpy(float)
        for i in np.flatnonzero(np.isfinite(v)):
            if v[i] < 0:
                reader.bad("negative duration", line=int(lines[i]), field=c)
                continue
            is_eval[i] = True
            events.append(
                {"kind": "eval", "start_s": max(ts[i] - v[i], 0.0), "end_s": ts[i], "attempt": 0, "rank": -1, "detail": f"{c}={v[i]:.3f}s", "_row": i}
            )
    final: dict[str, Any] = {}
    is_final = np.zeros(len(df), bool)
    if "train/train_runtime" in df.columns:
        fin = np.isfinite(df["train/train_runtime"].to_numpy(float))
        is_final = fin
        for i in np.flatnonzero(fin):
            final = {c: float(df[c].iat[i]) for c in df.columns if math.isfinite(df[c].iat[i])}
    step_vals = df[step_key].to_numpy(float)
    cand = np.isfinite(step_vals) & ~is_eval & ~is_final
    metric_cols = [c for c in df.columns if c not in ("_step", "_runtime", "_timestamp", step_key) and c not in rt_cols and not c.startswith("train/train_")]
    # Pass over rows in file order: attempts, monotonic time, duplicates.
    rows = []
    grp = np.full(len(df), -1)  # which kept step row each history row belongs to
    attempt = 0
    last_step: float | None = None
    last_t = -math.inf
    for i in np.flatnonzero(cand):
        s = step_vals[i]
        if s < 0 or s != int(s):
            reader.bad("step is not a non-negative integer", line=int(lines[i]), field=step_key)
            continue
        if last_step is not None and s == last_step:
            grp[i] = len(rows) - 1  # another metric row of the same step (merged below)
            continue
        if last_step is not None and s < last_step:
            attempt += 1
            last_t = -math.inf
        if ts[i] < last_t:
            reader.bad("non-monotonic timestamps", line=int(lines[i]), field="_timestamp")
            continue
        rows.append((attempt, int(s), i))
        grp[i] = len(rows) - 1
        last_step, last_t = s, ts[i]
    for e in events:  # attribute each evaluation to the attempt running when it ended
        prior = [a for a, _, i in rows if i <= e["_row"]]
        e["attempt"] = prior[-1] if prior else 0
        del e["_row"]
    if not rows:
        return None, events, final
    att = np.array([r[0] for r in rows])
    stp = np.array([r[1] for r in rows], dtype=np.int64)
    idx = np.array([r[2] for r in rows])
    end = ts[idx]
    new_att = np.concatenate([[True], att[1:] != att[:-1]])
    first = np.where(new_att, stp, np.concatenate([[0], stp[:-1] + 1]))
    first = np.minimum(first, stp)
    start = np.where(new_att, end, np.concatenate([[0.0], end[:-1]]))
    # Steps after an evaluation start when it ends.
    if events:
        ev_end = np.sort(np.array([e["end_s"] for e in events]))
        k = np.searchsorted(ev_end, end, side="right") - 1
        last_eval_end = np.where(k >= 0, ev_end[np.maximum(k, 0)], -np.inf)
        start = np.where(~new_att & (last_eval_end > start) & (last_eval_end <= end), last_eval_end, start)
    counts = stp - first + 1
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    share = np.repeat((end - start) / counts, counts)
    st = np.repeat(start, counts) + within * share
    logged = within == np.repeat(counts - 1, counts)
    out = {
        "attempt": np.repeat(att, counts),
        "step": np.repeat(first, counts) + within,
        "start_s": st,
        "end_s": st + share,
        "interval_steps": np.repeat(counts, counts),
        "interval_known": np.repeat(~new_att, counts),
        "logged": logged,
    }
    # Metric values: the first finite value among the rows of each logged step.
    names = {}
    for c in metric_cols:
        short = c[len("train/") :] if c.startswith("train/") else c
        names[c] = short if short not in df.columns and short not in names.values() else c
    sel = grp >= 0
    vals = df.loc[sel, metric_cols].groupby(grp[sel]).first()
    pos_logged = np.flatnonzero(logged)
    for c in metric_cols:
        if not vals[c].notna().any():
            continue  # a metric never logged on a step row (e.g. only in the final row)
        col = np.full(len(st), np.nan)
        v = vals[c].reindex(np.arange(len(rows))).to_numpy(float)
        col[pos_logged] = v
        out[names[c]] = col
    return pd.DataFrame(out), events, final


def _edge_events(
    steps: pd.DataFrame, hist: pd.DataFrame, summary: dict[str, Any], t0: float, events: list[dict[str, Any]]
) -> None:
    """Time before the first and after the last logged step, where the export bounds it."""
    if "_runtime" not in hist:
        return
    run_start = float(np.nanmin(hist["_timestamp"] - hist["_runtime"])) - t0
    first_end = float(steps["end_s"].iloc[0])
    if first_end > run_start:
        events.append(
            {"kind": "other", "start_s": run_start, "end_s": first_end, "attempt": 0, "rank": -1,
             "detail": "run start to the first logged step (setup and the first logging interval; "
             "the log does not separate them)"}
        )
    run_end = summary.get("_wandb.runtime")
    last_end = float(steps["end_s"].max())
    if isinstance(run_end, (int, float)) and run_start + float(run_end) > last_end:
        events.append(
            {"kind": "other", "start_s": last_end, "end_s": run_start + float(run_end),
             "attempt": int(steps["attempt"].max()), "rank": -1,
             "detail": "last logged step to the end of the run (summary _wandb.runtime): saving, teardown"}
        )


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read a W&B history/system-stats CSV, a summary JSON, or a folder holding them."""
    # Keywords naming RunMeta fields state what the log does not carry; others are an error.
    _, overrides = split_kwargs(kwargs, (), fmt=NAME)
    path = Path(path)
    reader = Reader(path, NAME, strict=strict)
    rep = reader.report
    if path.is_dir():
        kinds = _classify_dir(path)
        if not kinds:
            raise LoadError("no W&B history, system-stats or summary files here", path=path)
        for k, fs in kinds.items():
            if len(fs) > 1:
                raise LoadError(
                    f"several W&B {k} files here ({', '.join(f.name for f in fs)}); load one folder per run",
                    path=path,
                )
        files = {k: fs[0] for k, fs in kinds.items()}
    else:
        k = _kind_of(read_head(path))
        if k is None:
            reader.fail("not a W&B export: no _timestamp/_step columns nor summary keys")
        files = {k: path}
    if len(files) > 1:  # a folder of several exports: each skipped line carries its file name
        reader.root = path
    hist = syst = None
    if "history" in files:
        hist = _read_csv(files["history"], reader, ("_timestamp",))
    if "system" in files:
        syst = _read_csv(files["system"], reader, ("_timestamp",))
    summary = _summary(files["summary"], reader) if "summary" in files else {}
    # Time origin: the run start (timestamp − runtime) or the first system sample.
    origins = []
    if hist is not None and len(hist[0]):
        h = hist[0]
        t = h["_timestamp"].to_numpy(float)
        if "_runtime" in h:
            origins.append(float(np.nanmin(t - h["_runtime"].fillna(0).to_numpy(float))))
        origins.append(float(t.min()))
    if syst is not None and len(syst[0]):
        origins.append(float(syst[0]["_timestamp"].min()))
    t0 = min(origins) if origins else 0.0
    steps = None
    events: list[dict[str, Any]] = []
    extra: dict[str, Any] = {"files": {k: str(v) for k, v in files.items()}, "t0_epoch_s": t0}
    if hist is not None:
        steps, events, final = _history_steps(hist[0], hist[1], t0, reader.for_file(files["history"]))
        if final:
            extra["final"] = final
        if steps is None:
            rep.note("history has no step rows")
        else:
            _edge_events(steps, hist[0], summary, t0, events)
            if not steps["interval_known"].all():
                rep.note("the first logged step of an attempt has no start time in the log: zero-width row")
    tables: dict[str, pd.DataFrame] = {}
    if syst is not None:
        g, n_gpu = _gpu_table(syst[0], t0, reader)
        tables["gpu_util"] = g
        extra["gpus_in_system_stats"] = n_gpu
    if summary:
        extra["summary"] = summary
    if hist is None and syst is None and not summary:
        reader.fail("nothing readable in the W&B files")
    rep.rows_kept = 0 if steps is None else len(steps)
    meta = RunMeta(
        name=path.name.split(".")[0],
        source_path=str(path),
        source_format=NAME,
        time_unit="epoch_s",
        timing="interval_mean",
        extra=extra,
        report=rep,
    )
    meta = _apply_overrides(meta, overrides)
    try:
        run = Run.build(steps, events or None, meta, tables)
    except ValueError as exc:
        raise LoadError(f"history does not fit the Run schema: {exc}", path=path) from None
    rep.warn_if_skipped()
    return run
