"""Megatron-LM CI per-step "golden values" JSON: ``{metric: {start_step, end_step, step_interval, values}}``.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

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
- Loading the test's ``*model_config.yaml`` itself loads the golden-values JSON beside it.
- The config's ``--global-batch-size`` / ``--seq-length`` fill ``meta.global_batch`` /
  ``meta.seq_len``; its model arguments are kept in ``meta.extra['model_args']``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ...run import LoadError, Run
from .._build import finish, num, split_kwargs
from .._common import Reader, open_bytes

NAME = "megatron_json"

_KNOWN_METRICS = (b'"iteration-time"', b'"lm loss"', b'"mem-allocated-bytes"', b'"num-zeros"')
_CFG_LINE = re.compile(r"^\s*(--[\w-]+|[A-Z][A-Z_]*)\s*:\s*(.*?)\s*(?:#.*)?$")
_STEP_LINE = re.compile(r'^\s*"(\d+)"\s*:')
_METRIC_LINE = re.compile(r'^\s{0,8}"([^"]+)"\s*:\s*\{')
_CONFIG_SUFFIX = "model_config.yaml"


def sniff(path: Path, head: bytes) -> float:
    """0.9 for a JSON object of metrics with ``start_step``/``values`` blocks; 0.7 for a test's
    ``*model_config.yaml`` with its golden-values JSON beside it (loading it loads that JSON)."""
    p = Path(path)
    if p.is_dir():
        return 0.0
    if p.name.endswith(_CONFIG_SUFFIX) and b"MODEL_ARGS:" in head:
        try:
            return 0.7 if find_values(p) is not None else 0.0
        except Exception:
            return 0.0
    if not head.lstrip().startswith(b"{"):
        return 0.0
    if b'"values"' in head and (b'"start_step"' in head or b'"step_interval"' in head):
        return 0.9 if any(k in head for k in _KNOWN_METRICS) else 0.75
    return 0.0


def read_config(path: Path) -> dict[str, str]:
    """The ``KEY: value`` and ``--arg: value`` lines of a Megatron test ``model_config.yaml``.

    A line-based reader (no YAML library, nothing evaluated): enough for the keys used here.
    """
    out: dict[str, str] = {}
    text = open_bytes(path).decode("utf-8", errors="replace")
    for line in text.splitlines():
        m = _CFG_LINE.match(line)
        if m:
            out.setdefault(m.group(1), m.group(2).strip().strip("'\""))
    return out


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


def _line_numbers(text: str, metric: str) -> dict[int, int]:
    """Step -> line number inside the ``metric`` block (dict-style values only)."""
    lines = text.splitlines()
    key = f'"{metric}"'
    out: dict[int, int] = {}
    inside = False
    for i, line in enumerate(lines, start=1):
        if not inside:
            if key in line and _METRIC_LINE.match(line):
                inside = True
            continue
        mm = _METRIC_LINE.match(line)
        if mm and mm.group(1) not in ("values",) and not _STEP_LINE.match(line):
            break
        sm = _STEP_LINE.match(line)
        if sm:
            out.setdefault(int(sm.group(1)), i)
    return out


def _series(reader: Reader, metric: str, block: Any, lines: dict[int, int]) -> dict[int, float] | None:
    if not isinstance(block, dict) or "values" not in block:
        reader.bad(f"metric {metric!r} is not a {{start_step, end_step, step_interval, values}} block", field=metric)
        return None
    vals = block["values"]
    out: dict[int, float] = {}
    if isinstance(vals, dict):
        items = []
        for k, v in vals.items():
            try:
                items.append((int(k), v))
            except (TypeError, ValueError):
                reader.bad(f"non-integer step key in {metric!r}", field=metric, example=str(k))
        for step, v in items:
            out[step] = _value(reader, metric, step, v, lines.get(step))
    elif isinstance(vals, list):
        start = num(block.get("start_step", 0))
        every = num(block.get("step_interval", 1))
        if math.isnan(start) or math.isnan(every) or every <= 0:
            reader.bad(f"metric {metric!r}: list values need numeric start_step and step_interval > 0", field=metric)
            return None
        for i, v in enumerate(vals):
            step = int(start + i * every)
            out[step] = _value(reader, metric, step, v, None)
    else:
        reader.bad(f"metric {metric!r}: values must be a dict or a list", field=metric)
        return None
    return out


def _value(reader: Reader, metric: str, step: int, v: Any, line: int | None) -> float:
    if v is None or (isinstance(v, str) and v.strip().lower() in ("nan", "none", "")):
        return math.nan
    x = num(v)
    if math.isnan(x):
        reader.bad(f"non-numeric value in {metric!r}", line=line, field=metric, example=f"step {step}: {v!r}")
    return x


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Load a Megatron CI golden-values JSON; see the module docstring for the mapping."""
    opts, overrides = split_kwargs(kwargs, ("resume_at", "config"), fmt=NAME)
    p = Path(path)
    reader = Reader(p, NAME, strict=strict)
    rep = reader.report
    if p.is_dir():
        reader.fail("is a directory; the Megatron JSON loader reads one golden-values file")
    if p.name.endswith(_CONFIG_SUFFIX) and opts.get("config") is None:
        values = find_values(p)
        if values is None:
            reader.fail("a Megatron test config, not a log: no single golden-values JSON with its name prefix beside it")
        return load(values, strict=strict, config=p, **{k: v for k, v in kwargs.items() if k != "config"})
    text = open_bytes(p).decode("utf-8", errors="replace")
    if not text.strip():
        reader.fail("empty file: nothing to load")
    rep.lines_read = text.count("\n") + (0 if text.endswith("\n") else 1)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        reader.fail(f"not valid JSON ({exc.msg}; truncated or garbled?)", line=exc.lineno)
        raise  # unreachable: fail() raises
    if not isinstance(doc, dict) or not doc:
        reader.fail("expected a JSON object {metric: {start_step, end_step, step_interval, values}}")

    series: dict[str, dict[int, float]] = {}
    for metric, block in doc.items():
        s = _series(reader, str(metric), block, _line_numbers(text, str(metric)))
        if s is not None:
            series[str(metric)] = s
    if not series:
        reader.fail("no metric blocks with values")

    # --- config and resume points --------------------------------------------------------
    extra: dict[str, Any] = {"metrics": sorted(series)}
    found: dict[str, Any] = {}
    cfg_opt = opts.get("config")
    cfg_path: Path | None
    if cfg_opt is False:
        cfg_path = None
    elif cfg_opt is None:
        cfg_path = find_config(p)
    else:
        cfg_path = Path(cfg_opt)
        if not cfg_path.is_file():
            raise LoadError("config file not found", path=cfg_path, field="config")
    cfg: dict[str, str] = read_config(cfg_path) if cfg_path is not None else {}
    resume: list[int] = []
    if cfg:
        extra["config"] = str(cfg_path)
        extra["model_args"] = {k: v for k, v in cfg.items() if k.startswith("--")}
        if "TEST_TYPE" in cfg:
            extra["test_type"] = cfg["TEST_TYPE"]
        gbs = num(cfg.get("--global-batch-size"))
        if gbs > 0:
            found["global_batch"] = gbs
        seq = num(cfg.get("--seq-length"))
        if seq > 0 and seq == int(seq):
            found["seq_len"] = int(seq)
    if opts.get("resume_at") is not None:
        ra = opts["resume_at"]
        resume = sorted({int(x) for x in (ra if isinstance(ra, Sequence) else [ra])})
        rep.note(f"resume step(s) {resume} given by the caller")
    elif cfg.get("TEST_TYPE", "").strip().lower() == "ckpt-resume":
        save = num(cfg.get("--save-interval"))
        total = num(cfg.get("--train-iters"))
        if save > 0 and (math.isnan(total) or save < total):
            resume = [int(save) + 1]
            rep.note(
                f"resume at step {resume[0]} from {Path(str(cfg_path)).name} (TEST_TYPE: ckpt-resume, "
                f"--save-interval: {int(save)}); the JSON itself has no restart marker"
            )

    # --- steps ---------------------------------------------------------------------------
    it = series.get("iteration-time")
    rows: list[dict[str, Any]] = []
    if it is None:
        rep.note("no 'iteration-time' metric: no step rows (metrics table only)")
    else:
        it_lines = _line_numbers(text, "iteration-time")
        cursor = 0.0
        for step in sorted(it):
            d = it[step]
            if math.isnan(d):
                reader.bad("nan iteration-time", line=it_lines.get(step), field="iteration-time", example=f"step {step}")
                continue
            if d < 0:
                reader.bad("negative iteration-time", line=it_lines.get(step), field="iteration-time", example=f"step {step}: {d}")
                continue
            attempt = sum(1 for r in resume if step >= r)
            rows.append({"attempt": attempt, "step": step, "start_s": cursor, "end_s": cursor + d})
            cursor += d
        every = doc.get("iteration-time", {}).get("step_interval", 1) if isinstance(doc.get("iteration-time"), dict) else 1
        if num(every) > 1:
            rep.note(f"iteration-time sampled every {every} steps: the steps in between are not in the file")
    steps = pd.DataFrame(rows, columns=["attempt", "step", "start_s", "end_s"])
    if len(steps):
        steps["rank"] = -1
        if "global_batch" in found:
            steps["samples"] = found["global_batch"]
    # attempts must be numbered without gaps: keep only resume points that split the steps
    events: list[dict[str, Any]] = []
    if resume and len(steps):
        present = sorted(steps["attempt"].unique())
        remap = {a: i for i, a in enumerate(present)}
        steps["attempt"] = steps["attempt"].map(remap)
        for r in resume:
            before = steps[steps["step"] < r]
            after = steps[steps["step"] >= r]
            if before.empty or after.empty:
                continue
            last, first = before.iloc[-1], after.iloc[0]
            events.append({"kind": "checkpoint_save", "start_s": last["end_s"], "end_s": last["end_s"], "attempt": int(last["attempt"]), "detail": f"checkpoint after step {int(last['step'])} (duration not in the file)"})
            events.append({"kind": "restart", "start_s": first["start_s"], "end_s": first["start_s"], "attempt": int(first["attempt"]), "detail": f"resumed at step {int(first['step'])} from the step-{r - 1} checkpoint (gap between launches not in the file)"})

    all_steps = sorted(set().union(*[set(s) for s in series.values()]))
    metrics = pd.DataFrame({"step": all_steps})
    for name, s in series.items():
        metrics[name] = [s.get(k, math.nan) for k in all_steps]
    return finish(
        reader,
        fmt=NAME,
        steps=steps,
        events=events,
        tables={"metrics": metrics},
        timing="duration_only",
        time_unit="s",
        found=found,
        overrides=overrides,
        extra=extra,
    )
