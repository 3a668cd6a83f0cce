"""Megatron CI per-step "golden values" JSON, in its two layouts.

**Megatron-LM** (``{metric: {start_step, end_step, step_interval, values}}``):

- ``iteration-time`` (seconds per step) gives one step row per step with a finite value;
  ``'nan'`` entries (Megatron leaves the first iteration out) are skipped and counted. The file
  has no timestamps, so steps are placed back to back (``meta.timing = "duration_only"``).
- Every metric (``lm loss``, ``mem-allocated-bytes``, ``num-zeros``, ...) goes to the wide
  ``metrics`` table (one row per step, NaN where a metric has no value).
- Restarts: the JSON itself has no restart marker. A checkpoint-resume test (``TEST_TYPE:
  ckpt-resume`` in the test's ``model_config.yaml``, found beside the JSON or given with
  ``config=``) saves at ``--save-interval`` and resumes at the next step; the steps from there
  on are attempt 1, with a ``checkpoint_save`` and a ``restart`` event (zero length: their
  durations are not in the file). ``resume_at=`` states resume steps directly; ``config=False``
  ignores the config.
- Loading the test's ``*model_config.yaml`` itself loads the golden-values JSON beside it
  (``meta.extra['values_file']`` names it).
- Facts from the config, each with ``config:line``: ``--global-batch-size`` (``global_batch``),
  ``--seq-length`` (``seq_len``), ``--micro-batch-size`` (``micro_batch``), the parallel sizes
  (``parallelism``, e.g. ``{"tp": 2, "pp": 2}``) and the precision (``dtype``: ``fp8`` with
  ``--fp8-format``, else ``bf16``/``fp16``); its model arguments are kept in
  ``meta.extra['model_args']``. The real Megatron-LM golden values carry no throughput, so no
  claims.

**Megatron-Bridge** (``{"0": {metric: value, ...}, ..., "49": {...}, "alloc": GB, "max_alloc": GB}``):

- ``elapsed time per iteration (ms)`` (milliseconds) gives the step rows, back to back
  (``meta.time_unit = "ms"``); every per-step metric goes to the ``metrics`` table.
- The key ``GPU utilization`` holds **TFLOP/s per GPU** as Megatron-Bridge counts it (about 270
  on GB200), not a percentage: it is a ``tflops_per_accelerator`` claim (the median over the
  steps), and a metrics-table column under its own name.
- ``alloc`` / ``max_alloc`` (GB) and other top-level numbers go to ``meta.extra['totals']``.
  The file does not state the GPU count.

Every value that cannot be read is counted with its line and field: a non-numeric value (left
missing in the metrics table), a step key that is not a step number, an iteration time that is
negative or longer than 30 days.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import rules
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, parse_json

NAME = "megatron_json"


@dataclass(frozen=True)
class Options:
    """What the megatron_json format accepts besides the RunMeta keywords.

    ``resume_at`` (default None): step(s) at which a new attempt starts, an int or a sequence of
    ints; it replaces what the config says. ``config`` (default None): the test's
    ``model_config.yaml``; None looks for one beside the JSON with the same name prefix, a path
    names it, ``False`` ignores any.
    """

    resume_at: int | Sequence[int] | None = None
    config: str | Path | bool | None = None

    def __post_init__(self) -> None:
        ra = self.resume_at
        if ra is not None:
            items = list(ra) if isinstance(ra, Sequence) and not isinstance(ra, str) else [ra]
            steps = [rules.as_step(x) for x in items]
            if any(s is None for s in steps):
                raise ValueError(f"resume_at must be step numbers (non-negative integers); got {ra!r}")
            object.__setattr__(self, "resume_at", tuple(sorted(set(steps))))
        if self.config is True or not (self.config is None or self.config is False
                                       or isinstance(self.config, (str, Path))):
            raise ValueError(f"config must be a path, None (look beside the JSON) or False; got {self.config!r}")


_KNOWN_METRICS = (b'"iteration-time"', b'"lm loss"', b'"mem-allocated-bytes"', b'"num-zeros"')
_CFG_LINE = re.compile(r"^\s*(--[\w-]+|[A-Z][A-Z_]*)\s*:(.*)$")
_STEP_LINE = re.compile(r'^\s*"(\d{1,19})"\s*:')
_KEY_LINE = re.compile(r'^\s*"([^"]{1,200})"\s*:')
_METRIC_LINE = re.compile(r'^\s{0,8}"([^"]+)"\s*:\s*\{')
_BREAK = re.compile(r"\r\n|\r|\n")
_BRIDGE_HEAD = re.compile(rb'"\d{1,19}"\s*:\s*\{')
_CONFIG_SUFFIX = "model_config.yaml"
_LM_TIME, _BRIDGE_TIME = "iteration-time", "elapsed time per iteration (ms)"
_TFLOPS_KEYS = ("GPU utilization", "throughput per GPU (TFLOP/s/GPU)")
_NAN_TIME = "nan iteration-time"
NOT_A_BLOCK = "metric is not a {start_step, end_step, step_interval, values} block"
BAD_LIST_BLOCK = "list values need a numeric start_step and a step_interval > 0"
BAD_VALUES = "values must be a dict or a list"
BAD_ENTRY = "top-level entry is neither a step's metrics nor a number"
_MAX_STEP_S = 30 * 86400.0  # an iteration longer than 30 days is not one
_PARALLEL = (("--tensor-model-parallel-size", "tp"), ("--pipeline-model-parallel-size", "pp"),
             ("--context-parallel-size", "cp"), ("--expert-model-parallel-size", "ep"))




def _text_lines(text: str) -> Iterator[tuple[int, str]]:
    """``(line_number, line)`` with ``\\r\\n``, ``\\r`` or ``\\n`` ending a line, as the Reader counts them."""
    pos = 0
    n = 1
    for m in _BREAK.finditer(text):
        yield n, text[pos : m.start()]
        pos = m.end()
        n += 1
    yield n, text[pos:]



def sniff(path: Path, head: bytes) -> float:
    """0.9 for a JSON object of metrics with ``start_step``/``values`` blocks; 0.85 for the
    Megatron-Bridge layout (``"0": {... "elapsed time per iteration (ms)" ...}``); 0.7 for a
    test's ``*model_config.yaml`` with its golden-values JSON beside it (loading it loads that JSON)."""
    p = Path(path)
    if p.is_dir():
        return 0.0
    if p.name.endswith(_CONFIG_SUFFIX) and b"MODEL_ARGS:" in head:
        try:
            return 0.7 if find_values(p) is not None else 0.0
        except Exception:
            return 0.0
    if not head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{"):
        return 0.0
    if b'"values"' in head and (b'"start_step"' in head or b'"step_interval"' in head):
        return 0.9 if any(k in head for k in _KNOWN_METRICS) else 0.75
    if b'"elapsed time per iteration (ms)"' in head and _BRIDGE_HEAD.search(head):
        return 0.85
    return 0.0


# --- the test's config -------------------------------------------------------------------------


def find_config(path: Path) -> Path | None:
    """The ``*model_config.yaml`` beside ``path`` whose name prefix matches the JSON's best."""
    best: tuple[int, Path] | None = None
    try:
        siblings = list(path.parent.iterdir())
    except OSError:
        return None
    for cand in siblings:
        if not cand.name.endswith(_CONFIG_SUFFIX) or not cand.is_file():
            continue
        prefix = cand.name[: -len(_CONFIG_SUFFIX)]
        if path.name.startswith(prefix) and (best is None or len(prefix) > best[0]):
            best = (len(prefix), cand)
    return best[1] if best else None


def find_values(config: Path) -> Path | None:
    """The golden-values JSON beside a ``*model_config.yaml`` (same name prefix)."""
    prefix = config.name[: -len(_CONFIG_SUFFIX)]
    cands = sorted(
        f for f in config.parent.iterdir() if f.is_file() and f.suffix == ".json" and f.name.startswith(prefix)
    )
    return cands[0] if len(cands) == 1 else None


@dataclass
class _Config:
    path: Path
    name: str  # as errors and facts call it
    values: dict[str, tuple[str, int, str]] = field(default_factory=dict)  # key -> (value, line, line as printed)

    def get(self, key: str, default: str = "") -> str:
        return self.values[key][0] if key in self.values else default

    def where(self, key: str) -> str:
        return f"{self.name}:{self.values[key][1]}"


def read_config(reader: Reader, path: Path) -> _Config:
    """The ``KEY: value`` and ``--arg: value`` lines of a Megatron test ``model_config.yaml``.

    A line-based reader (no YAML library, nothing evaluated): enough for the keys used here.
    """
    sub = reader.for_file(path)
    cfg = _Config(path, sub.name)
    for ln, line in sub.lines():
        m = _CFG_LINE.match(line)
        if m:
            value = m.group(2).split("#", 1)[0].strip().strip("'\"")
            cfg.values.setdefault(m.group(1), (value, ln, line))
    return cfg


def _resolve_config(reader: Reader, options: Options, json_path: Path, given: Path | None) -> _Config | None:
    if given is not None:
        return read_config(reader, given)
    if options.config is False:
        return None
    if options.config is None:
        found = find_config(json_path)
        return read_config(reader, found) if found is not None else None
    p = Path(options.config)
    if not p.is_file():
        reader.fail(f"config file not found: {p}", field="config")
    return read_config(reader, p)


def _config_facts(out: Parsed, cfg: _Config) -> None:
    """Batch, sequence length, micro batch, parallel sizes and precision the config states."""
    out.extra["config"] = str(cfg.path)
    out.extra["model_args"] = {k: v[0] for k, v in cfg.values.items() if k.startswith("--")}
    if "TEST_TYPE" in cfg.values:
        out.extra["test_type"] = cfg.get("TEST_TYPE")
    for key, name in (("--global-batch-size", "global_batch"), ("--seq-length", "seq_len"),
                      ("--micro-batch-size", "micro_batch")):
        if key in cfg.values and (n := rules.as_count(cfg.get(key))) is not None:
            out.fact(name, n, cfg.where(key), cfg.values[key][2])
    sizes = {short: n for key, short in _PARALLEL
             if key in cfg.values and (n := rules.as_count(cfg.get(key))) is not None}
    if sizes:
        keys = [key for key, short in _PARALLEL if short in sizes]
        out.fact("parallelism", sizes, cfg.where(keys[0]), "; ".join(cfg.values[k][2].strip() for k in keys))
    for key, dtype in (("--fp8-format", "fp8"), ("--bf16", "bf16"), ("--fp16", "fp16")):
        value = cfg.get(key).lower()
        if key in cfg.values and value not in ("false", "0", "no"):
            out.fact("dtype", dtype, cfg.where(key), cfg.values[key][2])
            break


def _resume_points(reader: Reader, options: Options, cfg: _Config | None) -> list[int]:
    if options.resume_at is not None:
        reader.note(f"resume step(s) {list(options.resume_at)} given by the caller")
        return list(options.resume_at)
    if cfg is None or cfg.get("TEST_TYPE").strip().lower() != "ckpt-resume":
        return []
    save, total = rules.as_number(cfg.get("--save-interval")), rules.as_number(cfg.get("--train-iters"))
    resume = rules.as_step(save + 1) if save > 0 else None
    if resume is None or not (math.isnan(total) or save < total):
        return []
    reader.note(
        f"resume at step {resume} from {cfg.path.name} (TEST_TYPE: ckpt-resume, "
        f"--save-interval: {int(save)}); the JSON itself has no restart marker"
    )
    return [resume]


# --- the two layouts ---------------------------------------------------------------------------


@dataclass
class _Series:
    """Per metric, step -> value (NaN where missing), and where each value was read."""

    values: dict[str, dict[int, float]] = field(default_factory=dict)
    lines: dict[str, dict[int, int]] = field(default_factory=dict)
    counted: dict[str, set[int]] = field(default_factory=dict)  # values already counted as bad
    totals: dict[str, float] = field(default_factory=dict)

    def put(self, reader: Reader, metric: str, step: int, v: Any) -> None:
        """Store one value; a value that is not a number (nor Megatron's ``'nan'``) is counted."""
        if v is None or (isinstance(v, str) and v.strip().lower() in ("nan", "none", "")):
            x = math.nan
        else:
            x = rules.as_number(v)
            if math.isnan(x):
                line = self.lines.get(metric, {}).get(step)
                reader.bad(rules.NON_NUMERIC, line=line, field=metric, example=f"step {step}: {str(v)[:80]!r}")
                self.counted.setdefault(metric, set()).add(step)
        self.values.setdefault(metric, {})[step] = x


def _lm_lines(text: str) -> dict[str, dict[int, int]]:
    """Metric -> step -> line number of the value (dict-style values), in one pass."""
    out: dict[str, dict[int, int]] = {}
    current: dict[int, int] | None = None
    for i, line in _text_lines(text):
        sm = _STEP_LINE.match(line)
        mm = _METRIC_LINE.match(line) if sm is None else None
        if mm is not None and mm.group(1) != "values":
            current = out.setdefault(mm.group(1), {})
        elif sm is not None and current is not None:
            current.setdefault(int(sm.group(1)), i)
    return out


def _lm_block(reader: Reader, series: _Series, metric: str, block: Any) -> None:
    if not isinstance(block, dict) or "values" not in block:
        reader.bad(NOT_A_BLOCK, field=metric)
        return
    vals = block["values"]
    if isinstance(vals, dict):
        for k, v in vals.items():
            step = rules.as_step(k)
            if step is None:
                reader.bad(rules.BAD_STEP, field=metric, example=str(k)[:80])
            else:
                series.put(reader, metric, step, v)
    elif isinstance(vals, list):
        start, every = rules.as_number(block.get("start_step", 0)), rules.as_number(block.get("step_interval", 1))
        if math.isnan(start) or math.isnan(every) or every <= 0:
            reader.bad(BAD_LIST_BLOCK, field=metric)
            return
        for i, v in enumerate(vals):
            step = rules.as_step(start + i * every)
            if step is None:
                reader.bad(rules.BAD_STEP, field=metric, example=f"start_step {start:g} + {i} x {every:g}")
            else:
                series.put(reader, metric, step, v)
    else:
        reader.bad(BAD_VALUES, field=metric)


def _lm_series(reader: Reader, doc: dict[str, Any], text: str) -> _Series:
    series = _Series(lines=_lm_lines(text))
    for metric, block in doc.items():
        _lm_block(reader, series, metric, block)
    return series


def _bridge_lines(text: str) -> dict[str, dict[int, int]]:
    """Metric -> step -> line number, for ``"<step>": {"<metric>": value, ...}`` in one pass.

    The step's own line is kept under ``""``, for metrics printed on that same line.
    """
    out: dict[str, dict[int, int]] = {"": {}}
    step: int | None = None
    for i, line in _text_lines(text):
        sm = _STEP_LINE.match(line)
        if sm is not None:
            step = int(sm.group(1))
            out[""].setdefault(step, i)
            continue
        km = _KEY_LINE.match(line)
        if km is not None and step is not None:
            out.setdefault(km.group(1), {}).setdefault(step, i)
    return out


def _is_bridge(doc: dict[str, Any]) -> bool:
    has_steps = any(isinstance(v, dict) and rules.as_step(k) is not None for k, v in doc.items())
    has_blocks = any(isinstance(v, dict) and "values" in v for v in doc.values())
    return has_steps and not has_blocks


def _bridge_series(reader: Reader, doc: dict[str, Any], text: str) -> _Series:
    series = _Series(lines=_bridge_lines(text))
    step_lines = series.lines.pop("", {})
    for key, entry in doc.items():
        step = rules.as_step(key)
        if step is not None and isinstance(entry, dict):
            for metric, v in entry.items():
                if step not in series.lines.get(metric, {}) and step in step_lines:
                    series.lines.setdefault(metric, {})[step] = step_lines[step]
                series.put(reader, metric, step, v)
        elif isinstance(entry, (int, float)) and not isinstance(entry, bool) and math.isfinite(entry):
            series.totals[key] = float(entry)
        else:
            reader.bad(BAD_ENTRY, field=str(key)[:80])
    return series


# --- steps, events, tables ----------------------------------------------------------------------


def _step_rows(reader: Reader, series: _Series, metric: str, factor: float, resume: list[int]) -> list[dict[str, Any]]:
    """One row per step with a finite, non-negative iteration time, back to back."""
    times = series.values.get(metric, {})
    lines = series.lines.get(metric, {})
    counted = series.counted.get(metric, set())
    rows: list[dict[str, Any]] = []
    cursor = 0.0
    for step in sorted(times):
        d = times[step] * factor
        if math.isnan(d):
            if step not in counted:
                reader.bad(_NAN_TIME, line=lines.get(step), field=metric, example=f"step {step}")
            continue
        if d < 0:
            reader.bad(rules.NEGATIVE_DURATION, line=lines.get(step), field=metric, example=f"step {step}: {d}",
                       detail=metric)
            continue
        if d > _MAX_STEP_S:
            reader.bad(rules.VALUE_OUT_OF_RANGE, line=lines.get(step), field=metric, example=f"step {step}: {d}",
                       detail=f"{metric} over 30 days")
            continue
        attempt = sum(1 for r in resume if step >= r)
        rows.append({"attempt": attempt, "step": step, "start_s": cursor, "end_s": cursor + d})
        cursor += d
    return rows


def _resume_events(steps: pd.DataFrame, resume: list[int]) -> list[dict[str, Any]]:
    """Attempts numbered without gaps; a checkpoint_save and a restart at each resume that splits the steps."""
    events: list[dict[str, Any]] = []
    present = sorted(steps["attempt"].unique())
    steps["attempt"] = steps["attempt"].map({a: i for i, a in enumerate(present)})
    for r in resume:
        before = steps[steps["step"] < r]
        after = steps[steps["step"] >= r]
        if before.empty or after.empty:
            continue
        last, first = before.iloc[-1], after.iloc[0]
        events.append({"kind": "checkpoint_save", "start_s": last["end_s"], "end_s": last["end_s"],
                       "attempt": int(last["attempt"]),
                       "detail": f"checkpoint after step {int(last['step'])} (duration not in the file)"})
        events.append({"kind": "restart", "start_s": first["start_s"], "end_s": first["start_s"],
                       "attempt": int(first["attempt"]),
                       "detail": f"resumed at step {int(first['step'])} from the step-{r - 1} checkpoint "
                                 "(gap between launches not in the file)"})
    return events


def _metrics_table(series: _Series) -> pd.DataFrame:
    all_steps = sorted(set().union(*[set(s) for s in series.values.values()]))
    cols: dict[str, Any] = {"step": all_steps}
    for name, s in series.values.items():
        cols[name] = [s.get(k, math.nan) for k in all_steps]
    return pd.DataFrame(cols)


def _claims(out: Parsed, reader: Reader, series: _Series, bridge: bool) -> None:
    for key in _TFLOPS_KEYS:
        vals = series.values.get(key)
        if not vals:
            continue
        lines = series.lines.get(key, {})
        first = min(vals)
        where = f"{reader.name}:{lines[first]}" if first in lines else reader.name
        what = ("Megatron-Bridge's 'GPU utilization' holds TFLOP/s per GPU, not a percentage"
                if key == "GPU utilization"
                else f"'{key}' as the file names it")
        out.claim(Claim.summarise("tflops_per_accelerator", [vals[s] for s in sorted(vals)], unit="TFLOP/s",
                                  counts=f"model TFLOP/s per GPU as {'Megatron-Bridge' if bridge else 'Megatron'} "
                                         f"counts them ({what})",
                                  where=where))


def _read_doc(reader: Reader) -> tuple[dict[str, Any], str]:
    text = reader.text()
    if not text.strip():
        reader.fail("empty file: nothing to load")
    reader.report.lines_read = text.count("\n") + (0 if text.endswith("\n") else 1)
    doc, why, at = parse_json(text)
    if why is not None:
        reader.fail(f"not valid JSON: {rules.in_full(why)} (truncated or garbled?)", line=at)
    if not isinstance(doc, dict) or not doc:
        reader.fail("expected a JSON object {metric: {start_step, end_step, step_interval, values}} "
                    "or {step: {metric: value}}")
    return doc, text


def _parse_values(reader: Reader, options: Options, config: Path | None, out: Parsed) -> Parsed:
    """Read the golden-values JSON of ``reader`` (the test's config, if any, at ``config``)."""
    doc, text = _read_doc(reader)
    bridge = _is_bridge(doc)
    series = _bridge_series(reader, doc, text) if bridge else _lm_series(reader, doc, text)
    if not series.values:
        reader.fail("no metric blocks with values")
    out.extra["metrics"] = sorted(series.values)
    out.extra["layout"] = "megatron-bridge" if bridge else "megatron-lm"
    if series.totals:
        out.extra["totals"] = dict(series.totals)
    cfg = _resolve_config(reader, options, reader.path, config)
    if cfg is not None:
        _config_facts(out, cfg)
    resume = _resume_points(reader, options, cfg)
    metric, factor = (_BRIDGE_TIME, 1e-3) if bridge else (_LM_TIME, 1.0)
    out.time_unit = "ms" if bridge else "s"
    if metric not in series.values:
        reader.note(f"no {metric!r} metric: no step rows (metrics table only)")
    rows = _step_rows(reader, series, metric, factor, resume)
    block = doc.get(_LM_TIME) if not bridge else None
    every = (rules.as_number(block.get("step_interval", 1)) if isinstance(block, dict) and metric in series.values
             else 1.0)
    if every > 1:
        reader.note(f"iteration-time sampled every {block.get('step_interval')} steps: "
                    "the steps in between are not in the file")
    steps = pd.DataFrame(rows, columns=["attempt", "step", "start_s", "end_s"])
    if len(steps):
        steps["rank"] = -1
        gbs = next((f.value for f in out.facts if f.name == "global_batch"), None)
        if gbs is not None:
            steps["samples"] = float(gbs)
        if resume:
            out.events = _resume_events(steps, resume)
    out.steps = steps
    out.tables["metrics"] = _metrics_table(series)
    _claims(out, reader, series, bridge)
    return out


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a golden-values JSON (or the test config beside one); see the module docstring."""
    if reader.path.is_dir():
        reader.fail("is a directory; the Megatron JSON loader reads one golden-values file")
    out = Parsed(timing="duration_only", time_unit="s")
    if reader.path.name.endswith(_CONFIG_SUFFIX) and options.config is None:
        values = find_values(reader.path)
        if values is None:
            reader.fail("a Megatron test config, not a log: "
                        "no single golden-values JSON with its name prefix beside it")
        out.extra["values_file"] = str(values)
        out.meta["name"] = values.name
        return _parse_values(reader.for_file(values), options, reader.path, out)
    return _parse_values(reader, options, None, out)


load = loader_for(NAME)
