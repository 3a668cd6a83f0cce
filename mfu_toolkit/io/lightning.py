"""PyTorch Lightning ``CSVLogger`` output: ``metrics.csv`` + ``hparams.yaml``; ``version_N`` folders.

What the format carries and how it becomes a Run:

- ``metrics.csv`` has one row per ``self.log`` flush: ``epoch``, ``step`` (Lightning's 0-based
  global step) and whatever the module logged; train and validation values of one step come
  on separate rows, so rows are merged per step (first non-empty value of each column).
  Every merged row is kept in ``tables["metrics"]`` (with ``attempt``).
- Lightning writes no time by default. When the module logged one, it is used:
  a clock (``timestamp``/``time``/``wall_time``, epoch s or ms) or an elapsed counter
  (``elapsed``/``train_time``/``runtime``/``time_s``) ends the interval since the previous
  logged row, which is shared evenly among its steps (``timing = "interval_mean"``); a per-step
  duration (``step_time``/``batch_time``/``iter_time``) gives ``duration_only`` rows laid end to
  end. With no time column the steps table stays empty (nothing is invented) and a note says so.
- ``hparams.yaml`` (read with ``yaml.safe_load``) goes to ``meta.extra["hparams"]``; beside a
  file named ``<prefix>metrics.csv`` a ``<prefix>hparams.yaml`` is used.
- A ``lightning_logs/`` folder (or any folder of ``version_N`` folders) is one job whose
  versions are attempts, in order of N; ``tables["metrics"]`` then has a ``version`` column.
  When the log has a time column, a version without step times (no such column, or no value in
  it) is not an attempt: the versions with steps are numbered 0, 1, ... in order, the rows of
  the others keep ``attempt`` missing in ``tables["metrics"]``, and a note names them.
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
from ._common import CsvRows, Reader, open_bytes

NAME = "lightning"

_ABS_TIME = ("timestamp", "time", "wall_time", "walltime", "unix_time")
_CUM_TIME = ("elapsed", "elapsed_s", "elapsed_time", "train_time", "runtime", "time_s")
_DUR_TIME = ("step_time", "batch_time", "iter_time", "train_step_time", "step_time_s", "time_per_step")
_TIME_COLS = frozenset(_ABS_TIME + _CUM_TIME + _DUR_TIME)
_VERSION_RE = re.compile(r"^version_(\d+)$")


def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().lstrip("\ufeff")
    return [c.strip() for c in first.split(",")]


def _version_dirs(path: Path) -> list[tuple[int, Path]]:
    out = []
    for d in path.iterdir():
        m = _VERSION_RE.match(d.name)
        if m and d.is_dir() and (d / "metrics.csv").is_file():
            out.append((int(m.group(1)), d))
    return sorted(out)


def _companion_csv(path: Path) -> Path | None:
    """The metrics.csv that an ``[<prefix>]hparams.yaml`` describes, if it is beside it."""
    if not path.name.endswith("hparams.yaml"):
        return None
    c = path.with_name(path.name[: -len("hparams.yaml")] + "metrics.csv")
    return c if c.is_file() else None


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is CSVLogger output (file by its header, folder by its layout)."""
    try:
        p = Path(path)
        if p.is_dir():
            if (p / "metrics.csv").is_file():
                return 0.95 if (p / "hparams.yaml").is_file() else 0.85
            if _version_dirs(p):
                return 0.9
            if len(list(p.glob("*metrics.csv"))) == 1:
                return 0.7
            return 0.0
        if _companion_csv(p) is not None:
            return 0.7  # the hparams.yaml of a run: loading it loads its metrics.csv
        cols = _header(head)
        if "step" not in cols or "epoch" not in cols or any(c.startswith("_") for c in cols):
            return 0.0
        if len(cols) < 3 or b"\x00" in head:
            return 0.0
        suffixed = any(c.endswith(("_step", "_epoch")) for c in cols)
        return 0.85 if suffixed else 0.6
    except Exception:
        return 0.0


def _plain(v: Any) -> Any:
    """Make a YAML value JSON-able (dates and other objects become strings)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _hparams(csv_path: Path, reader: Reader) -> dict[str, Any] | None:
    name = csv_path.name
    cands = []
    if name.endswith("metrics.csv") and name != "metrics.csv":
        cands.append(csv_path.with_name(name[: -len("metrics.csv")] + "hparams.yaml"))
    cands.append(csv_path.parent / "hparams.yaml")
    for c in cands:
        if c.is_file():
            import yaml  # PyYAML; safe_load builds plain data only

            try:
                data = yaml.safe_load(open_bytes(c).decode("utf-8", errors="replace"))
            except yaml.YAMLError as exc:
                # the error names the YAML file itself, not the metrics.csv beside it
                reader.for_file(c).bad(f"unreadable hparams.yaml ({type(exc).__name__})", field="hparams", example=str(c))
                return None
            return _plain(data) if isinstance(data, dict) else {"value": _plain(data)}
    return None


def _read_metrics(path: Path, reader: Reader) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    """Parse metrics.csv row by row (line numbers for every bad row), merge rows per step.

    Also returns, per time column, the line each step's (first) value of it came from.
    """
    text = open_bytes(path).decode("utf-8", errors="replace").lstrip("\ufeff")
    rep = reader.report
    rows = CsvRows(text, reader)
    header = rows.header
    if "step" not in header:
        reader.fail(f"missing column 'step' (header: {header[:10]})", line=1, field="step")
    data: list[list[float]] = []
    lines: list[int] = []
    for ln, row in rows:
        vals: list[float] = []
        bad = None
        for h, c in zip(header, row, strict=True):
            c = c.strip()
            if not c:
                vals.append(math.nan)
                continue
            try:
                vals.append(float(c))
            except ValueError:
                bad = h
                break
        if bad is not None:
            reader.bad("non-numeric value", line=ln, field=bad, example=",".join(row))
            continue
        s = vals[header.index("step")]
        if not math.isfinite(s) or s < 0 or s != int(s):
            reader.bad("step is not a non-negative integer", line=ln, field="step", example=",".join(row))
            continue
        data.append(vals)
        lines.append(ln)
    rep.lines_read += rows.n_rows + 1
    df = pd.DataFrame(data, columns=header, dtype=float)
    df["step"] = df["step"].astype("int64")
    lined = df.assign(_line=np.array(lines, dtype=np.int64))
    where = {c: lined.dropna(subset=[c]).groupby("step")["_line"].first() for c in header if c in _TIME_COLS}
    if df.empty:
        return df, where
    return df.groupby("step", sort=True).first().reset_index(), where


def _time_kind(cols: list[str]) -> tuple[str, str] | None:
    for kinds, kind in ((_ABS_TIME, "abs"), (_CUM_TIME, "cum"), (_DUR_TIME, "dur")):
        for c in kinds:
            if c in cols:
                return c, kind
    return None


def _steps_for(m: pd.DataFrame, lines: pd.Series, attempt: int, col: str, kind: str, reader: Reader, offset: float) -> pd.DataFrame:
    """Steps rows of one attempt from its time column (see the module docstring).

    ``lines`` maps each step to the file line its ``col`` value came from, for ``reader.bad``.
    """
    t = m[["step", col]].dropna()
    if len(t) < len(m):
        reader.report.note(f"attempt {attempt}: {len(m) - len(t)} logged rows have no {col!r}: no step row for them")
    steps = t["step"].to_numpy(np.int64)
    v = t[col].to_numpy(float)
    ln = lines.reindex(steps).to_numpy()
    if kind == "dur":
        neg = v < 0
        for i in np.flatnonzero(neg):
            reader.bad("negative duration", line=int(ln[i]), field=col, example=f"step {steps[i]}: {v[i]}")
        steps, v = steps[~neg], v[~neg]
        end = offset + np.cumsum(v)
        return pd.DataFrame({"attempt": attempt, "step": steps, "start_s": end - v, "end_s": end, col: v})
    if kind == "abs" and len(v) and np.nanmedian(v) > 1e11:  # epoch milliseconds
        v = v / 1000.0
    # Drop points that go back in time (non-monotonic clock), counting each.
    keep = np.ones(len(v), bool)
    hi = -np.inf
    for i, x in enumerate(v):
        if x < hi:
            keep[i] = False
            reader.bad("non-monotonic timestamps", line=int(ln[i]), field=col, example=f"step {steps[i]}: {x}")
        else:
            hi = x
    steps, v = steps[keep], v[keep]
    if not len(v):
        return pd.DataFrame()
    first = np.concatenate([[steps[0]], steps[:-1] + 1])
    t_start = np.concatenate([[v[0]], v[:-1]])
    counts = steps - first + 1
    rep_first = np.repeat(first, counts)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    share = np.repeat((v - t_start) / counts, counts)
    start = np.repeat(t_start, counts) + within * share
    return pd.DataFrame(
        {
            "attempt": attempt,
            "step": rep_first + within,
            "start_s": start + offset,
            "end_s": start + share + offset,
            "interval_steps": np.repeat(counts, counts),
            "interval_known": np.repeat(np.arange(len(v)) > 0, counts),
            "_t": np.repeat(v, counts),
        }
    )


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read a metrics.csv, a ``version_N`` folder or a ``lightning_logs`` folder into a Run."""
    # Keywords naming RunMeta fields state what the log does not carry; others are an error.
    _, overrides = split_kwargs(kwargs, (), fmt=NAME)
    path = Path(path)
    if path.is_dir():
        if (path / "metrics.csv").is_file():
            files = [path / "metrics.csv"]
        else:
            files = [d / "metrics.csv" for _, d in _version_dirs(path)]
        if not files:
            files = sorted(path.glob("*metrics.csv"))[:1] if len(list(path.glob("*metrics.csv"))) == 1 else []
        if not files:
            raise LoadError("no metrics.csv here nor in version_N folders", path=path)
    else:
        files = [_companion_csv(path) or path]
    # Several version_N files: each skipped line is remembered as "version_1/metrics.csv:3".
    reader = Reader(path, NAME, strict=strict, root=path if len(files) > 1 else None)
    rep = reader.report
    metrics = []
    line_of: list[tuple[Reader, dict[str, pd.Series]]] = []  # per attempt: its file, lines of time values
    hparams: dict[str, Any] = {}
    for attempt, f in enumerate(files):
        sub = reader.for_file(f)
        m, where = _read_metrics(f, sub)
        m.insert(0, "attempt", attempt)
        if len(files) > 1:
            m.insert(1, "version", f.parent.name)
        metrics.append(m)
        line_of.append((sub, where))
        hp = _hparams(f, sub)
        if hp is not None:
            hparams[f.parent.name if len(files) > 1 else "hparams"] = hp
    table = pd.concat(metrics, ignore_index=True) if metrics else pd.DataFrame()
    if table.empty:
        reader.fail("no metric rows" + (f"; {rep.total_skipped} malformed" if rep.total_skipped else ""))
    tk = _time_kind([c for c in table.columns if c not in ("attempt", "step", "epoch")])
    steps = None
    timing = "duration_only"
    if tk is None:
        rep.note(
            "metrics.csv holds no time column: the steps table is empty (no time is invented); "
            "the metrics are in tables['metrics']"
        )
    else:
        col, kind = tk
        parts = []
        offset = 0.0
        t0 = None
        attempt_of: dict[int, int] = {}  # version index -> attempt (versions with step times only)
        untimed: list[str] = []
        for i, m in enumerate(metrics):
            sub, where = line_of[i]
            name, attempt = files[i].parent.name if len(files) > 1 else files[i].name, len(parts)
            if col not in where or where[col].empty:
                untimed.append(f"{name} (no {col!r} {'column' if col not in where else 'value'})")
                continue
            if kind == "abs":
                # One clock for all attempts: seconds since the first time point of the job.
                if t0 is None:
                    vals = table[col].dropna().to_numpy(float)
                    t0 = float(vals.min()) if len(vals) else 0.0
                    if t0 > 1e11:
                        t0 /= 1000.0
                part = _steps_for(m, where[col], attempt, col, kind, sub, -t0)
            else:
                part = _steps_for(m, where[col], attempt, col, kind, sub, offset)
            if len(part):
                offset = float(part["end_s"].max())
                parts.append(part.drop(columns=["_t"], errors="ignore"))
                attempt_of[i] = attempt
            else:
                untimed.append(f"{name} (no valid {col!r} value)")
        if untimed:
            tail = ", not attempts" if parts else ""
            rep.note(f"{len(untimed)} of {len(files)} metrics file(s) without step times{tail}: " + "; ".join(untimed))
        if parts and untimed:  # the metrics table's attempts match the steps'
            table["attempt"] = table["attempt"].map(attempt_of).astype("Int64")
        if parts:
            steps = pd.concat(parts, ignore_index=True)
            timing = "duration_only" if kind == "dur" else "interval_mean"
            if kind == "cum" and len(metrics) > 1:
                rep.note("elapsed-time counters restart per version: attempts laid end to end")
    rep.rows_kept = 0 if steps is None else len(steps)
    if len(files) > 1:
        n_att = steps["attempt"].nunique() if steps is not None else len(files)
        rep.note(f"{len(files)} version_N folders read as attempts 0..{n_att - 1}" + (" (those with step times)" if n_att < len(files) else ""))
    extra: dict[str, Any] = {
        "versions": [f.parent.name for f in files if _VERSION_RE.match(f.parent.name)]
    }
    if hparams:
        extra["hparams"] = hparams["hparams"] if list(hparams) == ["hparams"] else hparams
    if tk is not None:
        extra["time_column"] = tk[0]
    meta = RunMeta(
        name=path.name.split(".")[0],
        source_path=str(path),
        source_format=NAME,
        time_unit="s" if tk else None,
        timing=timing,
        extra=extra,
        report=rep,
    )
    meta = _apply_overrides(meta, overrides)
    try:
        run = Run.build(steps, None, meta, {"metrics": table})
    except ValueError as exc:
        raise LoadError(f"metrics do not fit the Run schema: {exc}", path=path) from None
    rep.warn_if_skipped()
    return run
