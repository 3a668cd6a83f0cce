"""PyTorch Lightning ``CSVLogger`` output: ``metrics.csv`` + ``hparams.yaml``; ``version_N`` folders.

What the format carries and how it becomes a Run:

- ``metrics.csv`` has one row per ``self.log`` flush: ``epoch``, ``step`` (Lightning's 0-based
  global step) and whatever the module logged; train and validation values of one step come
  on separate rows, so rows are merged per step (first non-empty value of each column).
  Every merged row is kept in ``tables["metrics"]`` (with ``attempt``). A cell that is not a
  number is counted under ``NON_NUMERIC`` and left missing (the row is kept); a row whose step
  is not a non-negative int64 is counted under ``BAD_STEP`` and dropped.
- Lightning writes no time by default. When the module logged one, it is used:
  a clock (``timestamp``/``time``/``wall_time``, epoch s or ms) or an elapsed counter
  (``elapsed``/``train_time``/``runtime``/``time_s``) ends the interval since the previous
  logged row, which is shared evenly among its steps (``timing = "interval_mean"``); a per-step
  duration (``step_time``/``batch_time``/``iter_time``) gives ``duration_only`` rows laid end to
  end. With no time column the steps table stays empty (nothing is invented) and a note says so.
  An interval longer than :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` steps stays one row
  (its logged step, ``interval_steps`` holding the count) and is counted under
  ``INTERVAL_TOO_LONG``; a time that is NaN or infinite is counted under ``NON_FINITE_TIME``.
- ``hparams.yaml`` goes to ``meta.extra["hparams"]``; beside a file named
  ``<prefix>metrics.csv`` a ``<prefix>hparams.yaml`` is used. It is read with PyYAML's safe
  loader (only plain data is built), bounded: a document whose aliases would expand past
  :data:`MAX_YAML_NODES` nodes (a "billion laughs"), refers to itself, or nests too deeply is
  counted as unreadable with its file and line and left out; a date or integer that cannot be
  built (``2024-02-30``) is counted under ``VALUE_OUT_OF_RANGE`` and left missing. Without
  PyYAML installed the file is not read (a note says so).
- Facts from the top level of ``hparams.yaml`` (each with its file and line):
  ``global_batch_size`` → ``global_batch``; ``batch_size``/``micro_batch_size`` (the
  per-process DataLoader batch under Lightning) → ``micro_batch``; ``seq_len``/``seq_length``/
  ``max_seq_len``/``block_size``/... → ``seq_len``; ``precision`` → ``dtype`` (``bf16-mixed`` →
  ``bf16``, ``16-mixed`` → ``fp16``, ``32-true`` → ``fp32``, ``transformer-engine`` → ``fp8``);
  ``devices`` (or ``gpus``) → ``accelerators_per_node``, ``num_nodes`` → ``n_nodes``, and their
  product (``num_nodes`` defaults to 1, as in Lightning) → ``n_accelerators``.
- A ``lightning_logs/`` folder (or any folder of ``version_N`` folders) is one job whose
  versions are attempts, in order of N; ``tables["metrics"]`` then has a ``version`` column.
  When the log has a time column, a version without step times (no such column, or no value in
  it) is not an attempt: the versions with steps are numbered 0, 1, ... in order, the rows of
  the others keep ``attempt`` missing in ``tables["metrics"]``, and a note names them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Parsed, loader_for
from ..reading import Reader
from ..values import number

NAME = "lightning"
UNREADABLE_HPARAMS = "unreadable hparams.yaml"

# Nodes a hparams.yaml may have once every alias is expanded (Lightning writes a few dozen), and
# how deeply it may nest (PyYAML's scanner takes time quadratic in the depth of ``[``/``{``).
MAX_YAML_NODES = 100_000
MAX_YAML_DEPTH = 64


@dataclass(frozen=True)
class Options:
    """The Lightning format takes no options besides the RunMeta keywords."""


_ABS_TIME = ("timestamp", "time", "wall_time", "walltime", "unix_time")
_CUM_TIME = ("elapsed", "elapsed_s", "elapsed_time", "train_time", "runtime", "time_s")
_DUR_TIME = ("step_time", "batch_time", "iter_time", "train_step_time", "step_time_s", "time_per_step")
_TIME_COLS = frozenset(_ABS_TIME + _CUM_TIME + _DUR_TIME)
_VERSION_RE = re.compile(r"^version_(\d{1,18})$")

_HP_KEYS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("global_batch", ("global_batch_size", "global_batch")),
    ("micro_batch", ("batch_size", "micro_batch_size")),
    ("seq_len", ("seq_len", "seq_length", "max_seq_len", "max_seq_length", "block_size", "context_length",
                 "sequence_length")),
)
_PRECISION = {"bf16": "bf16", "16": "fp16", "fp16": "fp16", "half": "fp16", "32": "fp32", "fp32": "fp32",
              "64": "fp64", "fp64": "fp64", "double": "fp64", "transformer-engine": "fp8",
              "transformer-engine-float16": "fp8", "fp8": "fp8"}


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
            return 0.7 if len(list(p.glob("*metrics.csv"))) == 1 else 0.0
        if _companion_csv(p) is not None:
            return 0.7  # the hparams.yaml of a run: loading it loads its metrics.csv
    except OSError:
        return 0.0
    cols = _header(head)
    if "step" not in cols or "epoch" not in cols or any(c.startswith("_") for c in cols):
        return 0.0
    if len(cols) < 3 or b"\x00" in head:
        return 0.0
    return 0.85 if any(c.endswith(("_step", "_epoch")) for c in cols) else 0.6


def _metrics_files(reader: Reader) -> list[Path]:
    path = reader.path
    if not path.is_dir():
        return [_companion_csv(path) or path]
    if (path / "metrics.csv").is_file():
        return [path / "metrics.csv"]
    files = [d / "metrics.csv" for _, d in _version_dirs(path)]
    if not files:
        found = sorted(path.glob("*metrics.csv"))
        files = found if len(found) == 1 else []
    if not files:
        reader.fail("no metrics.csv here nor in version_N folders")
    return files


# --- hparams.yaml -----------------------------------------------------------------------------
class _YamlRefused(Exception):
    """A hparams.yaml the bounded loader will not build (reason and 1-based line)."""

    def __init__(self, reason: str, line: int | None) -> None:
        super().__init__(reason)
        self.reason, self.line = reason, line


def _children(node: Any) -> list[Any]:
    value = getattr(node, "value", None)
    if not isinstance(value, list):
        return []
    return [x for pair in value for x in pair] if value and isinstance(value[0], tuple) else list(value)


def _check_expansion(root: Any, limit: int) -> None:
    """Refuse a node graph whose aliases expand past ``limit`` nodes or that refers to itself.

    One pass over the composed nodes (each visited once): the size of a node is computed from
    its children's, so a chain of aliases that doubles at every level is caught in linear time.
    """
    size: dict[int, int] = {}
    active: set[int] = set()
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        nid = id(node)
        if done:
            active.discard(nid)
            size[nid] = 1 + sum(size[id(k)] for k in _children(node))
            if size[nid] > limit:
                raise _YamlRefused(f"aliases expand past {limit:,} nodes", node.start_mark.line + 1)
            continue
        if nid in size:
            continue
        if nid in active:
            raise _YamlRefused("an alias refers to the node that contains it", node.start_mark.line + 1)
        active.add(nid)
        stack.append((node, True))
        stack.extend((k, False) for k in _children(node) if id(k) not in size)


# Brackets outside quotes and comments (a quoted span ends at its line's end: linear on any text).
_FLOW_TOKEN_RE = re.compile(r"""[\[\]{}]|'[^'\n]*'|"(?:[^"\\\n]|\\.)*"|#[^\n]*""")


def _check_flow_depth(text: str, limit: int) -> None:
    """Refuse ``[[[[...`` deeper than ``limit`` before PyYAML's scanner spends quadratic time on it."""
    if text.count("[") + text.count("{") <= limit:
        return
    depth = 0
    for m in _FLOW_TOKEN_RE.finditer(text):
        c = m.group(0)
        if c in "[{":
            depth += 1
            if depth > limit:
                raise _YamlRefused(f"nested deeper than {limit} levels", text.count("\n", 0, m.start()) + 1)
        elif c in "]}":
            depth = max(0, depth - 1)


@lru_cache(maxsize=1)
def _loader_class() -> type:
    """A SafeLoader that checks alias expansion and leaves unbuildable dates and ints missing."""
    import yaml

    class HparamsLoader(yaml.SafeLoader):
        on_bad_value: Any = None
        depth = 0

        def compose_node(self, parent: Any, index: Any) -> Any:
            self.depth += 1
            try:
                if self.depth > MAX_YAML_DEPTH:
                    line = self.peek_event().start_mark.line + 1
                    raise _YamlRefused(f"nested deeper than {MAX_YAML_DEPTH} levels", line)
                return super().compose_node(parent, index)
            finally:
                self.depth -= 1

        def compose_document(self) -> Any:
            node = super().compose_document()
            if node is not None:
                _check_expansion(node, MAX_YAML_NODES)
            return node

        def _guarded(self, build: Any, node: Any, what: str) -> Any:
            try:
                return build(self, node)
            except (ValueError, OverflowError):
                if self.on_bad_value is not None:
                    self.on_bad_value(what, node)
                return None

        def construct_yaml_timestamp(self, node: Any) -> Any:
            return self._guarded(yaml.SafeLoader.construct_yaml_timestamp, node, "invalid date")

        def construct_yaml_int(self, node: Any) -> Any:
            return self._guarded(yaml.SafeLoader.construct_yaml_int, node, "integer that cannot be built")

    HparamsLoader.add_constructor("tag:yaml.org,2002:timestamp", HparamsLoader.construct_yaml_timestamp)
    HparamsLoader.add_constructor("tag:yaml.org,2002:int", HparamsLoader.construct_yaml_int)
    return HparamsLoader


def _plain(v: Any) -> Any:
    """Make a YAML value JSON-able (dates and other objects become strings)."""
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return str(v)


def _hparams_path(csv_path: Path) -> Path | None:
    name = csv_path.name
    cands = []
    if name.endswith("metrics.csv") and name != "metrics.csv":
        cands.append(csv_path.with_name(name[: -len("metrics.csv")] + "hparams.yaml"))
    cands.append(csv_path.parent / "hparams.yaml")
    return next((c for c in cands if c.is_file()), None)


def _read_yaml(sub: Reader) -> tuple[Any, Any] | None:
    """(root node, plain data) of one hparams.yaml, or None after counting why it is unreadable."""
    import yaml

    def bad_value(what: str, node: Any) -> None:
        sub.bad(rules.VALUE_OUT_OF_RANGE, line=node.start_mark.line + 1, field="hparams", example=str(node.value)[:80],
                detail=f"{what} in hparams.yaml, left missing")

    loader = None
    try:
        text = sub.text()
        _check_flow_depth(text, MAX_YAML_DEPTH)
        loader = _loader_class()(text)  # the reader checks the characters here: a YAMLError
        loader.on_bad_value = bad_value
        node = loader.get_single_node()
        data = None if node is None else loader.construct_document(node)
        return node, _plain(data)
    except _YamlRefused as exc:
        sub.bad(UNREADABLE_HPARAMS, line=exc.line, field="hparams", detail=exc.reason)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        sub.bad(UNREADABLE_HPARAMS, line=None if mark is None else mark.line + 1, field="hparams",
                example=str(sub.path), detail=type(exc).__name__)
    except RecursionError:
        sub.bad(UNREADABLE_HPARAMS, field="hparams", detail="nested too deeply")
    finally:
        if loader is not None:
            loader.dispose()
    return None


def _top_scalars(node: Any) -> dict[str, tuple[str, int]]:
    """Top-level ``key: scalar`` pairs of the document: value text and 1-based line."""
    import yaml

    if not isinstance(node, yaml.MappingNode):
        return {}
    out = {}
    for k, v in node.value:
        if isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.ScalarNode):
            out.setdefault(k.value, (v.value, k.start_mark.line + 1))
        elif isinstance(k, yaml.ScalarNode) and isinstance(v, yaml.SequenceNode):
            out.setdefault(k.value, (f"[{len(v.value)} items]", k.start_mark.line + 1))
    return out


def _hparam_facts(out: Parsed, sub: Reader, node: Any) -> None:
    """What the top level of hparams.yaml states about the job (see the module docstring)."""
    top = _top_scalars(node)

    def at(key: str) -> str:
        return f"{sub.name}:{top[key][1]}"

    for name, keys in _HP_KEYS:
        for key in keys:
            n = rules.as_count(top[key][0], upper=rules.MAX_INT64) if key in top and len(top[key][0]) < 20 else None
            if n is not None:
                out.fact(name, float(n) if name == "global_batch" else n, at(key), f"{key}: {top[key][0]}")
                break
    if "precision" in top:
        raw = top["precision"][0].strip().lower()
        dtype = _PRECISION.get(raw.removesuffix("-mixed").removesuffix("-true"))
        out.fact("dtype", dtype, at("precision"), f"precision: {top['precision'][0]}")
    dev_key = next((k for k in ("devices", "gpus") if k in top), None)
    devices = _devices(top[dev_key][0]) if dev_key else None
    nodes = rules.as_count(top["num_nodes"][0]) if "num_nodes" in top and len(top["num_nodes"][0]) < 20 else None
    if devices is not None:
        out.fact("accelerators_per_node", devices, at(dev_key), f"{dev_key}: {top[dev_key][0]}")
    if nodes is not None:
        out.fact("n_nodes", nodes, at("num_nodes"), f"num_nodes: {top['num_nodes'][0]}")
    if devices is not None and (nodes is not None or "num_nodes" not in top):
        text = f"{dev_key}: {top[dev_key][0]}" + (f", num_nodes: {top['num_nodes'][0]}" if nodes
                                                   else " (num_nodes not given: 1)")
        out.fact("n_accelerators", devices * (nodes or 1), at(dev_key), text)


def _devices(text: str) -> int | None:
    """``devices: 8`` → 8, ``devices: [0, 1]`` (read as ``[2 items]``) → 2; ``auto``/-1 → None."""
    m = re.fullmatch(r"\[(\d{1,6}) items\]", text)
    if m:
        return rules.as_count(m.group(1))
    return rules.as_count(text) if len(text) < 20 else None


def _hparams(csv_path: Path, reader: Reader, root: Path | None, out: Parsed) -> dict[str, Any] | None:
    c = _hparams_path(csv_path)
    if c is None:
        return None
    try:
        import yaml  # noqa: F401  (PyYAML is optional: without it hparams.yaml is not read)
    except ImportError:
        reader.note(f"{c.name} not read: PyYAML is not installed")
        return None
    sub = reader.for_file(c, root=root)  # errors name the YAML file, not the metrics.csv beside it
    got = _read_yaml(sub)
    if got is None:
        return None
    node, data = got
    _hparam_facts(out, sub, node)
    return data if isinstance(data, dict) else {"value": data}


# --- metrics.csv ------------------------------------------------------------------------------
def _cells(reader: Reader, ln: int, header: list[str], row: list[str]) -> list[float]:
    vals: list[float] = []
    for h, c in zip(header, row, strict=True):
        v = number(c, nonfinite="keep") if c.strip() else math.nan  # an empty cell is a missing value
        if v is None:
            reader.bad(rules.NON_NUMERIC, line=ln, field=h, example=",".join(row)[:160])
            v = math.nan
        vals.append(v)
    return vals


def _read_metrics(reader: Reader) -> tuple[pd.DataFrame, dict[str, pd.Series]]:
    """Parse metrics.csv row by row (line numbers for every bad row), merge rows per step.

    Also returns, per time column, the line each step's (first) value of it came from.
    """
    rows = reader.csv_rows(reader.text())
    header = rows.header
    if "step" not in header:
        reader.fail(f"missing column 'step' (header: {header[:10]})", line=1, field="step")
    i_step = header.index("step")
    data: list[list[float]] = []
    steps: list[int] = []
    lines: list[int] = []
    for ln, row in rows:
        cell = row[i_step].strip()
        step = rules.as_step(cell) if len(cell) < 32 else None
        if step is None:
            reader.bad(rules.BAD_STEP, line=ln, field="step", example=",".join(row)[:160])
            continue
        data.append(_cells(reader, ln, header, row))
        steps.append(step)
        lines.append(ln)
    reader.report.lines_read += rows.n_rows + 1
    df = pd.DataFrame(data, columns=header, dtype=float)
    df["step"] = np.array(steps, dtype=np.int64)
    lined = df.assign(_line=np.array(lines, dtype=np.int64))
    where = {c: lined.dropna(subset=[c]).groupby("step")["_line"].first() for c in header if c in _TIME_COLS}
    if df.empty:
        return df, where
    return df.groupby("step", sort=True).first().reset_index(), where


# --- steps ------------------------------------------------------------------------------------
def _time_kind(cols: list[str]) -> tuple[str, str] | None:
    for kinds, kind in ((_ABS_TIME, "abs"), (_CUM_TIME, "cum"), (_DUR_TIME, "dur")):
        for c in kinds:
            if c in cols:
                return c, kind
    return None


def _finite_points(t: pd.DataFrame, col: str, lines: pd.Series,
                   reader: Reader) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps, values and lines of the time points; NaN-free, infinite ones counted and dropped."""
    steps = t["step"].to_numpy(np.int64)
    v = t[col].to_numpy(float)
    ln = lines.reindex(steps).to_numpy()
    inf = ~np.isfinite(v)
    for i in np.flatnonzero(inf):
        reader.bad(rules.NON_FINITE_TIME, line=int(ln[i]), field=col, example=f"step {steps[i]}: {v[i]}", detail=col)
    return steps[~inf], v[~inf], ln[~inf]


def _monotonic(steps: np.ndarray, v: np.ndarray, ln: np.ndarray, col: str, reader: Reader) -> np.ndarray:
    """Which points keep the clock from going back; the others are counted."""
    keep = np.ones(len(v), bool)
    hi = -np.inf
    for i, x in enumerate(v):
        if x < hi:
            keep[i] = False
            reader.bad(rules.NON_MONOTONIC, line=int(ln[i]), field=col, example=f"step {steps[i]}: {x}")
        else:
            hi = x
    return keep


def _interval_rows(steps: np.ndarray, v: np.ndarray, ln: np.ndarray, reader: Reader) -> tuple[np.ndarray, np.ndarray]:
    """Steps each point's interval covers, and the rows it becomes (1 for one too long)."""
    gaps = np.diff(steps, prepend=steps[:1])  # the first point opens its attempt: one step
    n = np.minimum(np.maximum(gaps, 1), rules.MAX_INT64 - 1)
    n = np.where(gaps > 0, n, 1)
    too_long = n > rules.MAX_LOG_INTERVAL
    for i in np.flatnonzero(too_long):
        reader.bad(rules.INTERVAL_TOO_LONG, line=int(ln[i]), field="step",
                   example=f"step {steps[i]}: {int(n[i]):,} steps since the previous row")
    return n, np.where(too_long, 1, n)


def _clock_rows(steps: np.ndarray, v: np.ndarray, ln: np.ndarray, attempt: int, offset: float,
                reader: Reader) -> pd.DataFrame:
    """Rows from a clock or elapsed counter: each point ends the interval since the previous one."""
    n, rows = _interval_rows(steps, v, ln, reader)
    rows = timeline.within_budget(rows, reader)
    t_start = np.concatenate([[v[0]], v[:-1]])
    ex = timeline.expand(steps, n, rows, t_start, place="even", end=v)
    return pd.DataFrame({
        "attempt": attempt,
        "step": ex.step,
        "start_s": ex.start + offset,
        "end_s": ex.start + ex.share + offset,
        "interval_steps": np.repeat(n, rows),
        "interval_known": np.repeat(np.arange(len(v)) > 0, rows),
    })


def _steps_for(m: pd.DataFrame, lines: pd.Series, attempt: int, col: str, kind: str, reader: Reader,
               offset: float) -> pd.DataFrame:
    """Steps rows of one attempt from its time column (see the module docstring).

    ``lines`` maps each step to the file line its ``col`` value came from, for ``reader.bad``.
    """
    t = m[["step", col]].dropna()
    if len(t) < len(m):
        reader.note(f"attempt {attempt}: {len(m) - len(t)} logged rows have no {col!r}: no step row for them")
    steps, v, ln = _finite_points(t, col, lines, reader)
    if kind == "dur":
        neg = v < 0
        for i in np.flatnonzero(neg):
            reader.bad(rules.NEGATIVE_DURATION, line=int(ln[i]), field=col, example=f"step {steps[i]}: {v[i]}")
        steps, v = steps[~neg], v[~neg]
        end = offset + np.cumsum(v)
        return pd.DataFrame({"attempt": attempt, "step": steps, "start_s": end - v, "end_s": end, col: v})
    if kind == "abs" and len(v) and np.nanmedian(v) > 1e11:  # epoch milliseconds
        v = v / 1000.0
    keep = _monotonic(steps, v, ln, col, reader)
    steps, v, ln = steps[keep], v[keep], ln[keep]
    if not len(v):
        return pd.DataFrame()
    return _clock_rows(steps, v, ln, attempt, offset, reader)


def _clock_origin(table: pd.DataFrame, col: str) -> float:
    """One clock for all attempts: seconds since the first finite time point of the job."""
    vals = table[col].to_numpy(float)
    vals = vals[np.isfinite(vals)]
    t0 = float(vals.min()) if len(vals) else 0.0
    return t0 / 1000.0 if t0 > 1e11 else t0


def _attempt_steps(metrics: list[pd.DataFrame], where: list[tuple[Reader, dict[str, pd.Series]]],
                   files: list[Path], table: pd.DataFrame, tk: tuple[str, str], reader: Reader) -> pd.DataFrame | None:
    """Step rows of every version with step times, numbered as attempts; notes for the others."""
    col, kind = tk
    parts: list[pd.DataFrame] = []
    offset = 0.0
    t0 = _clock_origin(table, col) if kind == "abs" else None
    attempt_of: dict[int, int] = {}  # version index -> attempt (versions with step times only)
    untimed: list[str] = []
    for i, m in enumerate(metrics):
        sub, lines = where[i]
        name = files[i].parent.name if len(files) > 1 else files[i].name
        if col not in lines or lines[col].empty:
            untimed.append(f"{name} (no {col!r} {'column' if col not in lines else 'value'})")
            continue
        part = _steps_for(m, lines[col], len(parts), col, kind, sub, -t0 if t0 is not None else offset)
        if not len(part):
            untimed.append(f"{name} (no valid {col!r} value)")
            continue
        offset = float(part["end_s"].max())
        attempt_of[i] = len(parts)
        parts.append(part)
    if untimed:
        tail = ", not attempts" if parts else ""
        reader.note(f"{len(untimed)} of {len(files)} metrics file(s) without step times{tail}: " + "; ".join(untimed))
    if parts and untimed:  # the metrics table's attempts match the steps'
        table["attempt"] = table["attempt"].map(attempt_of).astype("Int64")
    if kind == "cum" and parts and len(metrics) > 1:
        reader.note("elapsed-time counters restart per version: attempts laid end to end")
    return pd.concat(parts, ignore_index=True) if parts else None


# --- parse ------------------------------------------------------------------------------------
def parse(reader: Reader, options: Options) -> Parsed:
    """Read a metrics.csv, a ``version_N`` folder or a ``lightning_logs`` folder."""
    files = _metrics_files(reader)
    root = reader.path if len(files) > 1 else None  # several files: "version_1/metrics.csv:3"
    out = Parsed(timing="duration_only")
    out.meta["name"] = reader.path.name.split(".")[0]
    metrics, where, hparams = [], [], {}
    for attempt, f in enumerate(files):
        sub = reader.for_file(f, root=root)
        m, lines = _read_metrics(sub)
        m.insert(0, "attempt", attempt)
        if len(files) > 1:
            m.insert(1, "version", f.parent.name)
        metrics.append(m)
        where.append((sub, lines))
        hp = _hparams(f, reader, root, out)
        if hp is not None:
            hparams[f.parent.name if len(files) > 1 else "hparams"] = hp
    table = pd.concat(metrics, ignore_index=True)
    if table.empty:
        reader.fail("no metric rows"
                    + (f"; {reader.report.total_skipped} malformed" if reader.report.total_skipped else ""))
    tk = _time_kind([c for c in table.columns if c not in ("attempt", "step", "epoch")])
    steps = None
    if tk is None:
        reader.note("metrics.csv holds no time column: the steps table is empty (no time is invented); "
                    "the metrics are in tables['metrics']")
    else:
        steps = _attempt_steps(metrics, where, files, table, tk, reader)
        if steps is not None:
            out.timing = "duration_only" if tk[1] == "dur" else "interval_mean"
    if len(files) > 1:
        n_att = steps["attempt"].nunique() if steps is not None else len(files)
        reader.note(f"{len(files)} version_N folders read as attempts 0..{n_att - 1}"
                    + (" (those with step times)" if n_att < len(files) else ""))
    out.steps, out.tables = steps, {"metrics": table}
    out.time_unit = "s" if tk else None
    out.extra["versions"] = [f.parent.name for f in files if _VERSION_RE.match(f.parent.name)]
    if hparams:
        out.extra["hparams"] = hparams["hparams"] if list(hparams) == ["hparams"] else hparams
    if tk is not None:
        out.extra["time_column"] = tk[0]
    return out


load = loader_for(NAME)
