"""Megatron-LM and Megatron-DeepSpeed stdout: iteration lines, timers, the argument banner.

Each kind of line is a row of :data:`LINES`, read by the shared dispatcher (:mod:`mfu_toolkit.io.lines`); each
handler says what its line means. What the Run gets:

- **steps**: Megatron prints one iteration line per log interval (megatron/training/training.py
  ``training_log``; ALCF's Megatron-DeepSpeed fork writes ``key=value``) with the interval's mean elapsed time.
  A line becomes a row per step of its interval (``interval_steps``, ``logged`` on the step that printed it):
  point values (loss, ...) on the logged row, interval means (``tflops_per_gpu``, timer columns) on every row.
  A ``[YYYY-mm-dd HH:MM:SS]`` stamp ends its interval (``timeline.no_overlap``); without stamps on every line
  the intervals run back to back. A step that does not increase, or a banner or checkpoint load after logged
  steps, starts a new attempt. Skipped and nan iterations stay rows: they took time.
- **timers** (megatron/core/timers.py, after their iteration line; DeepSpeed's engine timers, before it), read
  by the shared rows :data:`~mfu_toolkit.io.timers.TIMER_LINES`, fill the ``timers`` table and, on their
  interval's rows, ``compute_s``, ``comm_s`` and ``data_wait_s`` (the slowest rank's, in seconds).
- **facts** (file:line): world size, parallelism, batch, sequence length, dtype, model, framework; a value
  printed differently by several launches in one file is noted, not stated. **claims**, each saying what it
  counts (:data:`_CLAIMS`, :data:`_TFLOPS_COUNTS`, DeepSpeed's throughput timer).
- **events**: ``checkpoint_save`` after the step a save names (as long as its ``save-checkpoint`` timer, else
  the gap to the next stamped line), ``init`` from ``[...] datetime:`` lines. **tables**: ``timers``, the
  straggler detector's ``MnRtt/Rnk:`` lines (megatron/core/utils.py), ``memory (MB)`` lines.

A damaged line or field is counted under the shared skip reasons (``rules``), naming its line and field; what
the rest of the line says is kept where it can be. Every read is linear in the input: no pattern here
backtracks on long lines, the expansion draws on the load's row budget, and distinct columns are bounded.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Parsed, loader_for
from ..lines import At, Columns, Line, Stated, claim, read, states
from ..reading import Reader, read_head
from ..throughput_timer import claims as timer_claims
from ..throughput_timer import running_key, timer_line
from ..timers import TIMER_LINES, Timers
from ..values import number, timestamp

NAME = "megatron"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """What the megatron format accepts besides the RunMeta keywords.

    ``log_interval``: steps per printed line (Megatron's ``--log-interval``); ``None`` infers it
    from the step numbers (the most common gap). At most ``rules.MAX_LOG_INTERVAL``.
    ``clock_tolerance_s``: how far (seconds) a line's timestamp may go back from the previous
    line's before the line is counted as non-monotonic (clocks of a log rotated across hosts).
    """

    log_interval: int | None = None
    clock_tolerance_s: float = 1.0


# --- patterns (each linear on long lines: no two adjacent quantifiers over shared characters) ---
_ITER_HEAD = re.compile(r"iteration(?:\s+|\s*=\s*)([^\s/|]+)\s*/\s*([^\s|]+)\s*\|")
_TS_RE = re.compile(r"\[(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,6})?)\]")
_DT_VALUE = re.compile(r"datetime[:=]\s*(\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)")
_SAVE_START_RE = re.compile(r"(?<!successfully )saving checkpoint at iteration\s+(\d+)")
_SAVE_END_RE = re.compile(r"successfully saved checkpoint (?:from|at) iteration\s+(\d+)")
_AT_ITER = re.compile(r"at iteration\s+(\d+)")
_STRAGGLER_PAIR = re.compile(r"\b(Mn|Mx)([A-Za-z]+)/Rnk:")
_VALUE_UNIT_RE = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)([A-Za-z%]*)$")
_MEMORY_HEAD = re.compile(r"\[Rank (\d+)\]\s*\(after (\d+) iterations\)\s*memory \(MB\)\s*\|")
_ARG_LINE = re.compile(r"\b([a-z][a-z0-9_]*) \.{2,} (\S+)")
_USING_PARTS = {
    "world_size": re.compile(r"using world size:\s*(\d+)"),
    "dp": re.compile(r"data-parallel[- ]size:\s*(\d+)"),
    "cp": re.compile(r"(?<!hierarchical )context-parallel size:\s*(\d+)"),
    "tp": re.compile(r"(?<!encoder-)tensor-model-parallel size:\s*(\d+)"),
    "pp": re.compile(r"(?<!encoder-)pipeline-model-parallel size:\s*(\d+)"),
}
_WORLD_EQ = re.compile(r"\bworld_size\s*=\s*(\d+)")
_NGPUS = re.compile(r"\bNGPUS\"?\s*[=:]\s*(\d+)")
_MODEL_TYPE = re.compile(r"\bMODEL_TYPE:\s*(\S+)")
_DS_EVIDENCE = re.compile(
    r"DeepSpeed is enabled|\[Rank \d+\] (?:time \(ms\)|step=)|RunningAvgSamplesPerSec|, SamplesPerSec=")
_SNIFF_ITER = re.compile(rb"iteration(?:\s+|\s*=\s*)\d+\s*/\s*(?:\d+|infinity)\s*\|")

_RECORD_WORDS = ("elapsed time per iteration", "elapsed_time_per_iteration", "consumed samples", "consumed_samples")
_UNITS = {"ms": 1e-3, "s": 1.0, "sec": 1.0, "us": 1e-6}
_ELAPSED = "elapsed_time_per_iteration"
# Field names, normalised (lower case, runs of other characters as '_'), to their column.
_RENAME = {"lm_loss": "loss", "throughput_per_gpu_tflop_s_gpu": "tflops_per_gpu",
           "number_of_skipped_iterations": "skipped_iterations", "number_of_nan_iterations": "nan_iterations"}
# Fields whose value must be a number: a text value there is a damaged record.
_KNOWN = frozenset({
    "loss", "learning_rate", "grad_norm", "loss_scale", "tflops_per_gpu", "consumed_samples",
    "global_batch_size", "skipped_iterations", "nan_iterations", "num_zeros", "params_norm",
    "consumed_tokens", "samples_per_second", "tflops", "lm_tflops", "ds_tflops", "actual_seqlen",
    "tokens_per_gpu_per_second_tgs", "approx_flops_per_gpu", "mfu", "hfu",
})
_DS_FIELDS = ("tflops", "lm_tflops", "ds_tflops", "samples_per_second")  # printed by Megatron-DeepSpeed only
_INTERVAL_FIELDS = ("tflops_per_gpu", "compute_s", "comm_s", "data_wait_s")  # valid for every step
_MAX_COLUMNS = 256
_MAX_KEYS_CACHED = 4096
_MAX_STEP_S = 1e7  # one iteration longer than ~116 days is not a duration
_SCAN_BYTES = 8 << 20

# Claims: column -> (metric, unit, scale to the unit, what it counts).
_MDS = "https://github.com/deepspeedai/Megatron-DeepSpeed/blob/main/megatron/utils.py"
_ALCF = "https://github.com/argonne-lcf/Megatron-DeepSpeed/blob/main/megatron/"
_NEOX = "https://github.com/EleutherAI/gpt-neox/blob/main/megatron/logging.py"
_TF = ("tflops_per_accelerator", "TFLOP/s per GPU")
_TPS = ("tokens_per_s_per_accelerator", "tokens/s per GPU")
_CLAIMS: dict[str, tuple[str, str, float, str]] = {
    "tflops_per_gpu": (*_TF, 1.0, "model FLOPs per GPU per second as Megatron's own formula counts them "
                                  "(Megatron-LM num_floating_point_operations / (iteration time × world size))"),
    "lm_tflops": (*_TF, 1.0, "[LM]-TFLOPs / [LM]TFLOPs (ALCF Megatron-DeepSpeed, 2024-06 to 2025-06): per GPU by "
                             "Megatron-LM's num_floating_point_operations, model FLOPs without recomputation ("
                  + _ALCF + "utils.py)"),
    "ds_tflops": (*_TF, 1.0, "[DS]-TFLOPs / [DS]TFLOPs (ALCF Megatron-DeepSpeed): per GPU by the throughput "
                             "calculator, a different count of the same step from [LM]: the recomputed forward is "
                             "added under activation checkpointing (" + _ALCF + "utils.py throughput_calculator)"),
    "samples_per_second": ("samples_per_s", "samples/s", 1.0,
                           "global samples per second as Megatron-DeepSpeed prints them: global batch (micro batch × "
                           "micro-batches × data-parallel size) / mean iteration time over the log interval "
                           "(throughput_calculator, " + _MDS + ")"),
    "samples_per_sec": ("samples_per_s", "samples/s", 1.0,
                        "GPT-NeoX samples/sec: train_batch_size (global) / mean iteration time over the log "
                        "interval (" + _NEOX + ")"),
    "approx_flops_per_gpu": (*_TF, 1e-12, "GPT-NeoX approx flops per GPU: train_batch_size × seq_length × its FLOPs "
                                          "per token / (mean iteration time × world size); since 2023-09 "
                                          "Megatron-DeepSpeed's 24·k·B·s·L·h² (1 + s/6h + V/16Lh) with k = 4 under "
                                          "activation checkpointing (the recomputed forward counted), before it 6 × "
                                          "parameters + 60·s·h·L per token (" + _NEOX + " get_actual_flops)"),
    "mfu_pct": ("mfu", "fraction", 0.01,
                "GPT-NeoX MFU: its forward+backward FLOPs per GPU per second (no recomputation) / the "
                "peak_theoretical_tflops the run was given, printed in percent (" + _NEOX + ")"),
    "tokens_per_gpu_per_second_tgs": (*_TPS, 1.0, "tokens per GPU per second (tgs) as Megatron-DeepSpeed prints "
                                                  "them: samples per second × sequence length / world size"),
    "tokens_sec_gpu": (*_TPS, 1.0, "tokens per GPU per second as a --log-throughput extension prints them"),
}
# Megatron-DeepSpeed's TFLOPs field: which FLOPs it counts depends on how it is printed.
_TFLOPS_COUNTS = {
    "colon": "TFLOPs: per GPU by Megatron-DeepSpeed's throughput calculator (throughput_calculator, " + _MDS + "): "
             "it adds the recomputed forward pass when activation checkpointing is on",
    "ds": "TFLOPs= as ALCF's training.py printed it (2024-04 to 2024-06): per GPU by the throughput calculator, "
          "the recomputed forward added under activation checkpointing (" + _ALCF + "utils.py)",
    "lm": "TFLOPs= as ALCF's training_log.py prints it (since 2025-06): per GPU by Megatron-LM's "
          "num_floating_point_operations, model FLOPs without recomputation (" + _ALCF + "training_log.py)",
    "eq": "TFLOPs= (ALCF key=value form) whose line names no logger: ALCF's training.py printed the throughput "
          "calculator's count (recomputation added) there in 2024, its training_log.py prints Megatron-LM's "
          "num_floating_point_operations (model FLOPs) since 2025-06; which one this is, the line does not say",
}
_NEOX_SPS = re.compile(r"samples/sec:\s{0,64}([^\s|]{0,64})\s{0,64}\|")
_TFLOPS_EQ = re.compile(r"(?<![\w\]-])TFLOPs\s{0,8}=")
# GPT-NeoX human_readable_flops: "%3.1f%s" with "", KFLOPS ... ZFLOPS, then "Yi" for 1e24 and above.
_HUMAN_FLOPS = re.compile(r"([+-]?(?:\d{1,32}(?:\.\d{0,32})?|\.\d{1,32})(?:[eE][+-]?\d{1,4})?|nan|inf)"
                          r"\s?(?:([KMGTPEZ]?)FLOPS|(Yi))?")
_FLOPS_PREFIX = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18, "Z": 1e21}


# --- sniffing -------------------------------------------------------------------------------------
def _has_iteration_line(buf: bytes) -> bool:
    """An iteration line with an elapsed time in ``buf`` (each line looked at once)."""
    pos = 0
    while (m := _SNIFF_ITER.search(buf, pos)) is not None:
        end = buf.find(b"\n", m.end())
        end = len(buf) if end < 0 else end
        if b"elapsed time per iteration" in buf[m.end():end] or b"elapsed_time_per_iteration" in buf[m.end():end]:
            return True
        pos = end + 1
    return False


def _has_timers(buf: bytes) -> bool:
    """A timer header ending its line, or three ``name ....: (min, max)`` lines."""
    return b"time across ranks (ms):\n" in buf or b"time across ranks (ms):\r" in buf or buf.count(b".: (") >= 3


def sniff(path: Path, head: bytes) -> float:
    """0.9 for iteration lines (in the head, or further in a log that looks like Megatron's);
    0.8 for timer blocks or straggler lines alone."""
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    if _has_iteration_line(head):
        return 0.9
    if b"MnRtt/Rnk:" in head or _has_timers(head):
        return 0.8
    low = head.lower()
    try:
        if (b"megatron" in low or b"arguments ---" in head or b"iteration" in low) and p.stat().st_size > len(head):
            buf = read_head(p, _SCAN_BYTES)
            if _has_iteration_line(buf):
                return 0.9
            if b"megatron" in low and (b"MnRtt/Rnk:" in buf or _has_timers(buf)):
                return 0.8
    except OSError:
        return 0.0
    return 0.0


# --- small parsers ----------------------------------------------------------------------------------
def _step(text: str) -> int | None:
    """A step number from decimal digits (at most 19, so it fits int64), else None."""
    text = text.strip()
    return rules.as_step(text) if 0 < len(text) <= 19 and text.isascii() and text.isdigit() else None


def _count(text: str) -> int | None:
    value = _step(text)
    return value if value is not None and rules.as_count(value) is not None else None


def _before_slash(text: str) -> str:
    """The text of a field's number: all of it, or what precedes a ``/`` (a value printed as
    ``a/b`` reads as ``a``). Its number is ``values.number(..., nonfinite="nan")``: a float, NaN
    for a printed NaN or infinity (there but unusable), None for text that is no number."""
    return text.partition("/")[0]


def _snake(key: str) -> str:
    return re.sub(r"[^0-9a-zA-Z]+", "_", key).strip("_").lower()


# --- what the lines gather ------------------------------------------------------------------------------
class _State:
    """Everything one pass over the lines gathers, and where the attempt stands."""

    def __init__(self, opts: Options) -> None:
        self.opts = opts
        # the kept iteration lines (fields sparse), their units, and how each printed TFLOPs (_TFLOPS_COUNTS)
        self.rec = Columns(_MAX_COLUMNS, line="q", attempt="q", iteration="q", ts="d", dur="d")
        self.units: set[str] = set()
        self.tflops_form: dict[int, str] = {}
        self.first_raw: dict[str, str] = {}  # each column's first 'key: value', as printed
        self.text_fields: Counter[str] = Counter()  # fields that were text, by name
        self.key_cache: dict[str, tuple[str, str, str]] = {}
        self.timers = Timers()
        # events, tables, claims and facts
        self.saves: list[dict[str, Any]] = []
        self.save_index: dict[tuple[int, int], int] = {}
        self.datetimes: list[tuple[str, float, int]] = []
        self.straggler: list[dict[str, Any]] = []
        self.memory: list[dict[str, Any]] = []
        self.loads: list[int] = []
        self.ds_timer: list[tuple[int, str, float, float]] = []  # line, form, running, current
        self.stated = Stated()
        self.first: dict[str, tuple[int, str]] = {}  # the first line in Megatron's format, the first showing DeepSpeed
        # where the attempt stands
        self.attempt, self.launch_marker, self.last_iter, self.last_ts = 0, False, None, None
        self.prev_text: str | None = None  # the last iteration line, to tell a repeat

    def marker_attempt(self) -> int:
        """The attempt a line belongs to, counting a launch marker seen since the last record."""
        return self.attempt + 1 if self.launch_marker and self.last_iter is not None else self.attempt

    def launch(self) -> None:
        """A launch marker: timers after it belong to no record, and a relaunch may print a line again."""
        self.launch_marker, self.prev_text = True, None
        self.timers.reset(self.marker_attempt())

    def saw(self, source: str, at: At) -> None:
        """``at`` is in Megatron's own format (``source`` "megatron"), or shows DeepSpeed ("deepspeed")."""
        if source not in self.first:
            self.first[source] = (at.ln, at.text.strip()[:200])


# --- LINES: iteration lines ---------------------------------------------------------------------------
def _key_info(st: _State, raw_key: str) -> tuple[str, str, str]:
    """``(key, column, kind)`` of a field name as printed; kind is ``elapsed``, ``known`` or ``other``."""
    info = st.key_cache.get(raw_key)
    if info is None:
        key = raw_key.strip()
        snake = _snake(key)
        column = snake if snake.startswith(_ELAPSED) else _RENAME.get(snake, snake)
        info = (key, column, "elapsed" if snake.startswith(_ELAPSED) else "known" if column in _KNOWN else "other")
        if len(st.key_cache) < _MAX_KEYS_CACHED:
            st.key_cache[raw_key] = info
    return info


def _fields(st: _State, at: At, rest: str) -> tuple[float | None, str, dict[str, float]] | None:
    """The line's duration (s, None when it has none), its unit and its numeric fields (``key: value`` or
    ``key=value`` between ``|``); None when the elapsed time is unusable (counted)."""
    dur: float | None = None
    unit = ""
    values: dict[str, float] = {}
    for part in rest.split("|"):
        raw_key, sep, raw = part.partition(":")
        if not sep:
            raw_key, sep, raw = part.partition("=")
            if not sep:
                continue
        key, column, kind = _key_info(st, raw_key)
        if not key:
            continue
        if kind == "elapsed":
            unit = column[len(_ELAPSED):].strip("_")
            if unit not in _UNITS:
                at.bad(rules.UNKNOWN_TIME_UNIT, key, at.text, detail=f"{unit!r} in elapsed time per iteration")
                return None
            value, scale = number(_before_slash(raw), nonfinite="nan"), _UNITS[unit]
            if value is None or not (0.0 <= value and value * scale <= _MAX_STEP_S):  # counted by at.time
                at.time(key, value, what="elapsed time per iteration", scale=scale, limit=_MAX_STEP_S, example=at.text,
                        text_missing=True)
                return None
            dur = value * scale
            continue
        value = number(_before_slash(raw), nonfinite="nan")
        if value is None and column in ("approx_flops_per_gpu", "mfu", "hfu"):
            column, value = _unit_value(column, raw.strip())
        if value is not None:
            values[column] = value
            if column not in st.first_raw and len(st.first_raw) < _MAX_COLUMNS:
                st.first_raw[column] = f"{key}: {raw.strip()}"[:200]
        elif kind == "known":  # the line's timing stays, this value does not
            at.bad(rules.NON_NUMERIC, key, f"{key}: {raw.strip()}"[:200])
        elif key in st.text_fields or len(st.text_fields) < 64:
            st.text_fields[key] += 1
    return dur, unit, values


def _unit_value(column: str, raw: str) -> tuple[str, float | None]:
    """GPT-NeoX's values with units (megatron/logging.py): ``approx flops per GPU: 123.4TFLOPS`` (FLOP/s) and
    ``MFU: 45.2%`` (column ``mfu_pct``, in percent as printed); ``None`` when the text is neither."""
    if column == "approx_flops_per_gpu":
        m = _HUMAN_FLOPS.fullmatch(raw)
        value = number(m.group(1), nonfinite="nan") if m else None
        if m is None or value is None:
            return column, None
        return column, value * (1e24 if m.group(3) else _FLOPS_PREFIX[m.group(2) or ""])
    if raw.endswith("%"):
        return f"{column}_pct", number(_before_slash(raw[:-1]), nonfinite="nan")
    return column, None


def _new_attempt(st: _State, at: At, it: int, ts: float | None) -> bool:
    """Advance the attempt if this line starts one; False when its timestamp goes back (counted)."""
    if st.last_iter is not None and (it <= st.last_iter or st.launch_marker):
        st.attempt += 1
        st.last_ts = None
    elif ts is not None and st.last_ts is not None and ts < st.last_ts - st.opts.clock_tolerance_s:
        at.bad(rules.NON_MONOTONIC, "timestamp", at.text, detail="earlier than the previous iteration line")
        return False
    st.launch_marker = False
    st.last_iter = it
    if ts is not None:
        st.last_ts = ts
    return True


def _iteration(st: _State, at: At, m: re.Match[str]) -> bool:
    """``iteration N/ M |`` followed by the record's fields: a kept record, or a counted skip (a step that is
    not a number, a duplicate, an unusable elapsed time); a prose ``iteration x/y |`` is passed over."""
    text = at.text
    fields_at = max(text.rfind(word) for word in _RECORD_WORDS)
    while m is not None and not ((m.group(1).isascii() and m.group(1).isdigit()) or fields_at >= m.end()):
        m = _ITER_HEAD.search(text, m.end())
    if m is None:
        return False
    st.timers.block = None
    if (it := _step(m.group(1))) is None:
        at.bad(rules.BAD_STEP, "iteration", text[:200])
        st.timers.pending.clear()
        return True
    if text == st.prev_text:  # another rank's copy, or a progress bar's redraw
        at.bad(rules.DUPLICATE, "iteration", text[:200])
        return True
    st.prev_text = text
    got = _fields(st, at, text[m.end():])
    if got is not None and got[0] is None:
        at.bad(rules.MISSING_FIELD, "elapsed time per iteration", text, detail="elapsed time per iteration; truncated?")
        got = None
    tsm = _TS_RE.search(text, 0, m.start())
    ts = timestamp(tsm.group(1)) if tsm else None
    if got is None or not _new_attempt(st, at, it, ts):
        st.timers.pending.clear()
        return True
    dur, unit, values = got
    _claim_fields(st, at, m, values, len(st.rec))
    record = st.rec.add(at.ln, st.attempt, it, math.nan if ts is None else ts, float(dur), fields=values)
    st.units.add(unit)
    st.timers.give(at, record, st.attempt)
    if "megatron" not in st.first:
        st.saw("megatron", at)
    if "deepspeed" not in st.first and any(k in values for k in _DS_FIELDS):
        st.saw("deepspeed", at)
    return True


def _claim_fields(st: _State, at: At, m: re.Match[str], values: dict[str, float], n: int) -> None:
    """GPT-NeoX's ``samples/sec:`` printed before the iteration head, and how the line prints ``TFLOPs``
    (``:`` upstream, ``=`` by ALCF's training.py or training_log.py: different counts, see _TFLOPS_COUNTS)."""
    head = at.text[: m.start()]
    if "samples/sec:" in head and (sm := _NEOX_SPS.search(head)) is not None:
        value = number(_before_slash(sm.group(1)), nonfinite="nan")
        if value is None:
            at.bad(rules.NON_NUMERIC, "samples/sec", sm.group(0)[:200])
        else:
            values["samples_per_sec"] = value
    if "tflops" in values:
        if _TFLOPS_EQ.search(at.text, m.end()) is None:
            st.tflops_form[n] = "colon"
        else:
            st.tflops_form[n] = "lm" if "training_log" in head else "ds" if "[training:" in head else "eq"


# --- LINES: launches, checkpoints, datetimes --------------------------------------------------------------
def _launch(st: _State, at: At, m: None) -> bool:
    """A launch: Megatron's ``------ arguments ------`` banner (not ``... end of arguments ...``), ``using world
    size: N, data-parallel-size: ...`` (megatron/training/arguments.py; its sizes stated too), or ``successfully
    loaded checkpoint ... at iteration N`` (a launch resumed from step N)."""
    text, hit = at.text, False
    pos = text.find("arguments")
    if "using world size:" in text or (pos >= 0 and text[:pos].rstrip().endswith("-----")
                                       and text[pos + 9:].lstrip().startswith("-----")):
        st.launch()
        hit = True
    if "using world size:" in text:
        for name, rx in _USING_PARTS.items():
            if (m := rx.search(text)) is not None and (value := _count(m.group(1))) is not None:
                st.stated.add(name, value, at.ln, text)
    pos = text.find("successfully loaded checkpoint")
    if pos >= 0 and (m := _AT_ITER.search(text, pos)) is not None and (it := _step(m.group(1))) is not None:
        st.loads.append(it)
        st.launch()
        hit = True
    return hit


def _save(st: _State, at: At, m: None) -> bool:
    """``saving checkpoint at iteration N`` and ``successfully saved checkpoint from iteration N``."""
    if (m := _SAVE_START_RE.search(at.text)) is None and (m := _SAVE_END_RE.search(at.text)) is None:
        return False
    done = m.re is _SAVE_END_RE
    if (it := _step(m.group(1))) is None:
        at.bad(rules.BAD_STEP, "iteration", at.text[:200])
        return True
    known = st.save_index.get((st.attempt, it))
    if done and known is not None:
        st.saves[known]["done"] = True
        return True
    st.save_index[(st.attempt, it)] = len(st.saves)
    st.saves.append({"line": at.ln, "iteration": it, "attempt": st.attempt, "done": done})
    return True


def _datetime(st: _State, at: At, m: None) -> bool:
    """``[label] datetime: YYYY-mm-dd HH:MM:SS`` (``datetime=`` in the ALCF fork)."""
    text = at.text
    pos = text.find("datetime")
    m = _DT_VALUE.search(text, pos)
    close = text.rfind("]", 0, pos)
    opening = text.rfind("[", 0, close) if close >= 0 else -1
    if m is None or opening < 0 or text[close + 1:pos].strip() or (t := timestamp(m.group(1))) is None:
        return False
    st.datetimes.append((text[opening + 1:close], t, st.marker_attempt()))
    st.timers.reset()
    return True


# Argument-banner names (``  name ........ value``, megatron/training/arguments.py) to what they state.
_ARG_FACTS = {
    "world_size": "world_size", "tensor_model_parallel_size": "tp", "pipeline_model_parallel_size": "pp",
    "data_parallel_size": "dp", "context_parallel_size": "cp", "expert_model_parallel_size": "ep",
    "moe_expert_parallel_size": "ep", "global_batch_size": "global_batch", "micro_batch_size": "micro_batch",
    "seq_length": "seq_length", "params_dtype": "params_dtype", "bf16": "bf16", "fp16": "fp16", "fp8": "fp8",
    "model_name": "model", "deepspeed": "deepspeed",
}
_COUNT_FACTS = frozenset({"world_size", "tp", "pp", "dp", "cp", "ep", "global_batch", "micro_batch", "seq_length"})


def _arg(st: _State, at: At, m: re.Match[str]) -> bool:
    """One argument of the banner that states a fact (an unset size, ``None``, ``0`` or ``-1``, states none)."""
    name, raw = m.group(1), m.group(2)
    if (stated := _ARG_FACTS.get(name)) is None:
        return False
    if stated not in _COUNT_FACTS:
        st.stated.add(stated, raw, at.ln, at.text)
        if stated == "deepspeed" and raw == "True":
            st.saw("deepspeed", at)
    elif raw not in ("None", "0", "-1"):  # unset (Megatron-DeepSpeed writes -1 without MoE)
        if (value := _count(raw)) is None:
            at.bad(rules.VALUE_OUT_OF_RANGE, name, at.text.strip()[:200])
        else:
            st.stated.add(stated, value, at.ln, at.text)
    return True


# --- LINES: straggler detector, memory, DeepSpeed ------------------------------------------------------
def _straggler(st: _State, at: At, m: None) -> bool:
    """``MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: ...``: one row per metric, min and max with ranks."""
    text = at.text
    by_metric: dict[str, dict[str, Any]] = {}
    stamp = timestamp(tsm.group(1)) if (tsm := _TS_RE.search(text)) else None
    for part in text.split("|"):
        if (m := _STRAGGLER_PAIR.search(part)) is None:
            continue
        mnmx, metric = m.group(1), m.group(2)
        token, _, rank_text = part[m.end():].strip().rpartition("/")
        token, which = token.strip(), "min" if mnmx == "Mn" else "max"
        vu = _VALUE_UNIT_RE.match(token)
        row = by_metric.setdefault(metric, {"line": at.ln, "time": stamp, "metric": metric,
                                            "unit": vu.group(2) if vu else ""})
        if vu is None:  # 'nanms', 'N/A': the pair's rank stays, its value does not
            at.bad(rules.NON_NUMERIC, f"{mnmx}{metric}/Rnk", f"{mnmx}{metric}/Rnk: {token}/{rank_text}"[:200])
        elif not row["unit"]:
            row["unit"] = vu.group(2)
        value = number(vu.group(1), nonfinite="nan") if vu else None
        row[which] = math.nan if value is None else value
        if (rank := _step(rank_text)) is None:
            at.bad(rules.NON_NUMERIC, f"{mnmx}{metric}/Rnk", part.strip()[:200])
        row[f"{which}_rank"] = math.nan if rank is None else rank
    if by_metric:
        st.straggler.extend(by_metric.values())
        st.saw("megatron", at)
    return bool(by_metric)


def _memory(st: _State, at: At, m: None) -> bool:
    """``[Rank r] (after N iterations) memory (MB) | allocated: x | ...`` (several glued on one line too)."""
    text = at.text
    heads = list(_MEMORY_HEAD.finditer(text))
    for k, m in enumerate(heads):
        rank, after = _step(m.group(1)), _step(m.group(2))
        if rank is None or after is None:
            at.bad(rules.VALUE_OUT_OF_RANGE, "Rank" if rank is None else "after", text[:200])
            continue
        row: dict[str, Any] = {"rank": rank, "after_iteration": after}
        for part in text[m.end():heads[k + 1].start() if k + 1 < len(heads) else len(text)].split("|"):
            key, sep, raw = part.partition(":")
            if sep and (key := key.strip()):
                if (value := number(_before_slash(raw), nonfinite="nan")) is None:
                    at.bad(rules.NON_NUMERIC, key, part.strip()[:200])
                row[_snake(key) + "_mb"] = math.nan if value is None else value
        st.memory.append(row)
    return bool(heads)


def _ds_rate(at: At, values: dict[str, str], key: str) -> float:
    """One throughput-timer value; NaN, counted with its line and field, when missing or not a rate."""
    raw = values.get(key)
    value = number(_before_slash(raw), nonfinite="nan") if raw is not None else None
    if value is None:
        at.bad(rules.MISSING_FIELD if raw is None else rules.NON_NUMERIC, key, at.text[:200])
        return math.nan
    if not (math.isfinite(value) and value >= 0):  # DeepSpeed prints -inf before its timer has a step
        at.bad(rules.VALUE_OUT_OF_RANGE, key, at.text[:200], detail="negative or not finite")
        return math.nan
    return value


def _ds_timer(st: _State, at: At, m: None) -> bool:
    """DeepSpeed's throughput-timer line, printed whole in one of its spellings (``throughput_timer.timer_line``)."""
    if (timed := timer_line(at.text, whole=True, memory=False)) is None:
        return False
    running = _ds_rate(at, timed.rates, running_key(timed.form))
    curr = math.nan if timed.form == "running_only" else _ds_rate(at, timed.rates, "CurrSamplesPerSec")
    st.ds_timer.append((at.ln, timed.form, running, curr))
    return True


def _ds_evidence(st: _State, at: At, m: None) -> None:
    """The first line that shows DeepSpeed (it reads nothing)."""
    if "deepspeed" not in st.first and _DS_EVIDENCE.search(at.text):
        st.saw("deepspeed", at)


# The line table: the first row that reads a line ends its dispatch, but a row marked more=True lets the rows
# below read the line too (a line may start a launch and state a fact). Iteration lines, most of a log, first.
LINES = (
    Line("iteration", _ITER_HEAD, _iteration),
    *TIMER_LINES,
    Line(("arguments", "using world size:", "successfully loaded checkpoint"), None, _launch, more=True),
    Line("checkpoint", None, _save, more=True),
    Line("datetime", None, _datetime, more=True),
    Line(" ..", _ARG_LINE, _arg, more=True),
    Line("world_size", _WORLD_EQ, states("world_size", _count, field="world_size"), more=True),  # MPI, DeepSpeed
    Line("NGPUS", _NGPUS, states("world_size", _count, field="NGPUS"), more=True),  # ALCF's launch scripts
    Line("MODEL_TYPE", _MODEL_TYPE, states("model"), more=True),  # ALCF
    Line("Rnk:", None, _straggler),
    Line("memory (MB)", None, _memory),
    Line("SamplesPerSec=", None, _ds_timer, more=True),
    Line(("DeepSpeed", "[Rank", "SamplesPerSec="), None, _ds_evidence, more=True),
)


# --- intervals and step rows -----------------------------------------------------------------------------
@dataclass
class _Intervals:
    """Per record: its step, attempt, mean step time, the steps it stands for (``n``), start and end."""

    it: np.ndarray
    attempt: np.ndarray
    dur: np.ndarray
    n: np.ndarray
    start: np.ndarray
    end: np.ndarray
    log_interval: int
    timestamped: bool

    def at(self, attempt: int, step: int) -> int | None:
        return timeline.record_at(self.it, self.attempt, self.n, attempt, step) if len(self.n) else None


def _intervals(reader: Reader, st: _State, given: int | None) -> _Intervals:
    """Where each record's interval lies: ending at its timestamp, or back to back from the durations (a
    ``save-checkpoint`` timer after a line's step delays the next line)."""
    it, att = np.asarray(st.rec.iteration, dtype=np.int64), np.asarray(st.rec.attempt, dtype=np.int64)
    interval = timeline.interval_or_one(reader, it, att, given)
    n = timeline.interval_rows(reader, it, att, interval, st.rec.line, field="iteration")
    dur, ts = np.asarray(st.rec.dur, dtype=float), np.asarray(st.rec.ts, dtype=float)
    timestamped = bool(len(ts)) and not np.isnan(ts).any()
    end = timeline.no_overlap(reader, ts, n * dur) if timestamped else ts
    iv = _Intervals(it, att, dur, n, end - n * dur, end, interval, timestamped)
    if len(ts) and not timestamped:
        reader.note("some iteration lines have timestamps and some not: all placed back to back from durations"
                    if not np.isnan(ts).all() else
                    "no timestamps: steps placed back to back from their durations; gaps between launches unknown")
        gap = np.zeros(len(it))
        for (a, step), s in {(s["attempt"], s["iteration"]): s for s in st.saves}.items():
            if "timer_ms" in s and (j := iv.at(a, step)) is not None and iv.it[j] == step and j + 1 < len(it):
                gap[j + 1] += s["timer_ms"] / 1000.0
        iv.start, iv.end = timeline.back_to_back(n * dur, gap)
    return iv


def _steps(reader: Reader, st: _State, iv: _Intervals) -> pd.DataFrame:
    """One row per step: each record's interval expanded (its point values on the logged row)."""
    n = timeline.within_budget(iv.n, reader)
    ex = timeline.expand(iv.it, iv.n, n, iv.start, place="duration", share=iv.dur)
    row_rec = ex.record
    off = ex.within + (iv.n - n)[row_rec]  # step of the interval, from 0
    cols: dict[str, Any] = {
        "attempt": iv.attempt[row_rec], "step": ex.step,
        "start_s": ex.start, "end_s": iv.start[row_rec] + (off + 1) * ex.share,
        "interval_steps": iv.n[row_rec], "logged": off == iv.n[row_rec] - 1,
        **timeline.on_rows(ex, n, st.rec.fields, every=_INTERVAL_FIELDS),
    }
    for column, per in st.timers.columns(len(iv.n)).items():  # a field of the same name wins
        cols.setdefault(column, per[row_rec])
    steps = pd.DataFrame(cols)
    if len(steps):
        steps["rank"] = -1
        if "global_batch_size" in st.rec.fields:  # each step's batch: its own interval's line only
            steps["samples"] = st.rec.dense("global_batch_size")[row_rec]
        keep = ("attempt", "step", "rank", "start_s", "end_s")
        steps = steps.drop(columns=[c for c in steps.columns if c not in keep and steps[c].isna().all()])
    return steps


# --- events and tables -------------------------------------------------------------------------------------
def _save_events(reader: Reader, st: _State, iv: _Intervals, shift: float) -> list[dict[str, Any]]:
    """A ``checkpoint_save`` event after the step each save names (see the module docstring)."""
    events: list[dict[str, Any]] = []
    unplaced: list[str] = []
    for s in st.saves:
        if (j := iv.at(s["attempt"], s["iteration"])) is None:
            unplaced.append(f"iteration {s['iteration']} (line {s['line']})")
            continue
        start = float(iv.start[j] + (s["iteration"] - (iv.it[j] - iv.n[j])) * iv.dur[j])
        nxt = j + 1 if j + 1 < len(iv.n) and iv.attempt[j + 1] == s["attempt"] else None
        if "timer_ms" in s:
            end, how = start + s["timer_ms"] / 1000.0, "save-checkpoint timer"
        elif iv.timestamped and iv.it[j] == s["iteration"] and nxt is not None and iv.start[nxt] >= start:
            end, how = float(iv.start[nxt]), "gap to the next logged step (no save-checkpoint timer)"
        else:
            end, how = start, "duration not logged"
        status = "" if s["done"] else "; no 'successfully saved' line"
        events.append({"kind": "checkpoint_save", "start_s": start - shift, "end_s": end - shift,
                       "attempt": s["attempt"], "detail": f"checkpoint at iteration {s['iteration']}; {how}{status}"})
    for where in unplaced[:5]:
        reader.note(f"checkpoint save at {where} is after no step in the log; not placed")
    if len(unplaced) > 5:
        reader.note(f"{len(unplaced) - 5} more checkpoint saves are after no step in the log; not placed")
    return events


def _init_events(st: _State, iv: _Intervals, shift: float) -> list[dict[str, Any]]:
    """``init``: the first ``[...] datetime:`` line of an attempt to the start of its training."""
    if not iv.timestamped:
        return []
    first_start: dict[int, float] = {}
    for a, start in zip(iv.attempt.tolist(), iv.start.tolist(), strict=True):
        first_start.setdefault(a, start)
    by_attempt: dict[int, list[tuple[str, float]]] = {}
    for label, t, a in st.datetimes:
        by_attempt.setdefault(a, []).append((label, t))
    events = []
    for a in sorted(first_start):
        if not (mine := by_attempt.get(a)):
            continue
        ends = [t for label, t in mine if label.strip().startswith("before the start of training")]
        t_begin, t_end = min(t for _, t in mine), min(min(ends) if ends else first_start[a], first_start[a])
        if t_end > t_begin:
            events.append({"kind": "init", "start_s": t_begin - shift, "end_s": t_end - shift, "attempt": a,
                           "detail": "first '[...] datetime:' line to the start of training"})
    return events


def _tables(st: _State, iv: _Intervals, shift: float, absolute: bool) -> dict[str, pd.DataFrame]:
    """The straggler, memory and timers tables (a timer row per logged interval per timer, in ms)."""
    tables: dict[str, pd.DataFrame] = {}
    if st.straggler:
        table = pd.DataFrame(st.straggler)
        table["time_s"] = [(t - shift) if (t is not None and absolute) else math.nan for t in table.pop("time")]
        tables["straggler"] = table
    if st.memory:
        tables["memory"] = pd.DataFrame(st.memory)
    if (timers := st.timers.table(iv.it, iv.n)) is not None:
        tables["timers"] = timers
    return tables


# --- facts and claims ------------------------------------------------------------------------------------------
_PARAMS_DTYPES = {"torch.float16": "fp16", "torch.half": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32",
                  "torch.float": "fp32"}


def _global_batch(reader: Reader, st: _State, out: Parsed) -> None:
    """The global batch of the iteration lines (one value), else of the banner."""
    at = f"{reader.name}:"
    banner = st.stated.one(reader, "global_batch", "global_batch_size")
    idx, vals = st.rec.fields.get("global_batch_size", ([], []))
    finite = {v for v in vals if not math.isnan(v)}
    if len(finite) > 1:
        out.extra["global_batch_varies"] = True
        reader.note(f"global batch size varies over the iteration lines ({len(finite)} values); not stated as a fact")
    elif finite and rules.as_count(value := finite.pop()) is not None:
        if banner is not None and banner[0] == value:
            out.fact("global_batch", float(value), f"{at}{banner[1]}", banner[2])
        else:
            first = next(i for i, v in zip(idx, vals, strict=True) if v == value)
            out.fact("global_batch", float(value), f"{at}{st.rec.line[first]}",
                     st.first_raw.get("global_batch_size", ""))
    elif not finite and banner is not None:
        out.fact("global_batch", banner[0], f"{at}{banner[1]}", banner[2])


def _facts(reader: Reader, st: _State, out: Parsed) -> None:
    """What the log states about the job, each with its file:line (see the module docstring)."""
    at, stated = f"{reader.name}:", st.stated
    stated.state(out, reader, "world_size", "the world size", "n_accelerators", "n_ranks")
    sizes = {key: got for key in ("tp", "pp", "dp", "cp", "ep") if (got := stated.one(reader, key, f"the {key} size"))}
    if sizes:
        line, text = min((got[1], got[2]) for got in sizes.values())
        out.fact("parallelism", {key: got[0] for key, got in sizes.items()}, f"{at}{line}", text)
    _global_batch(reader, st, out)
    stated.state(out, reader, "micro_batch", "micro_batch_size", "micro_batch")
    if stated.state(out, reader, "seq_length", "seq_length", "seq_len") is None and "actual_seqlen" in st.rec.fields:
        idx, vals = st.rec.fields["actual_seqlen"]
        if len(set(vals)) == 1 and (n := rules.as_count(vals[0])) is not None:
            out.fact("seq_len", n, f"{at}{st.rec.line[idx[0]]}", st.first_raw.get("actual_seqlen", ""))
    for name in ("fp8", "bf16", "fp16"):  # fp8 when set, else bf16 or fp16 when True, else params_dtype
        if (got := stated.one(reader, name, f"the {name} argument")) and got[0] not in ("None", "False", "false"):
            out.fact("dtype", name, f"{at}{got[1]}", got[2])
            break
    else:
        if (got := stated.one(reader, "params_dtype", "params_dtype")) and got[0] in _PARAMS_DTYPES:
            out.fact("dtype", _PARAMS_DTYPES[got[0]], f"{at}{got[1]}", got[2])
    stated.state(out, reader, "model", "the model", "model")
    for source, name in (("deepspeed", "Megatron-DeepSpeed"), ("megatron", "Megatron-LM")):
        if seen := min((x for x in (st.first.get(source), st.timers.first.get(source)) if x), default=None):
            out.fact("framework", name, f"{at}{seen[0]}", seen[1])
            break


def _claims(reader: Reader, st: _State, out: Parsed) -> None:
    """The throughput the log prints about itself: each field of _CLAIMS, Megatron-DeepSpeed's ``TFLOPs`` once per
    way it is printed (_TFLOPS_COUNTS), DeepSpeed's throughput timer once per spelling (CurrSamplesPerSec: the
    median; the running average: its last value)."""
    fields, line = st.rec.fields, st.rec.line
    for column, (metric, unit, scale, counts) in _CLAIMS.items():
        if column in fields:
            pairs = [(v * scale, line[i]) for i, v in zip(*fields[column], strict=True)]
            claim(reader, out, metric, pairs, unit, counts, label=st.first_raw.get(column, column).split(":", 1)[0])
    for form, counts in _TFLOPS_COUNTS.items() if "tflops" in fields else ():
        if mine := [(v, line[i]) for i, v in zip(*fields["tflops"], strict=True) if st.tflops_form.get(i) == form]:
            claim(reader, out, "tflops_per_accelerator", mine, "TFLOP/s per GPU", counts, label=f"TFLOPs ({form})")
    neox = "samples_per_sec" in fields or "approx_flops_per_gpu" in fields  # GPT-NeoX steps per micro-batch
    timer_claims(reader, out, st.ds_timer, under_megatron=bool(len(st.rec)) and not neox)


# --- parse -----------------------------------------------------------------------------------------------------
def _checked(reader: Reader, options: Options) -> Options:
    """The options, validated: a log interval too long or a bad tolerance is a LoadError."""
    given = timeline.checked_interval(reader, options.log_interval)
    tol = options.clock_tolerance_s
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        reader.fail(f"clock_tolerance_s must be a finite number of seconds >= 0; got {tol!r}",
                    field="clock_tolerance_s")
    return Options(log_interval=given, clock_tolerance_s=float(tol))


def _read(reader: Reader, opts: Options) -> _State:
    """One pass over the lines through :data:`LINES`, then the report's notes on what it saw."""
    st = _State(opts)
    other = read(reader, LINES, st)
    k = 0  # a save's duration: the first save-checkpoint timer after it (and before the next save)
    for line, value in st.timers.named("save-checkpoint"):
        while k < len(st.saves) and st.saves[k]["line"] < line:
            k += 1
        if k and "timer_ms" not in st.saves[k - 1]:
            st.saves[k - 1]["timer_ms"] = value
    for key, n in list(st.text_fields.items()):
        reader.note(f"field {key!r} is not a number on {n} iteration lines; left out")
    if st.rec.refused:
        reader.note(f"{st.rec.refused} values of fields beyond the first {_MAX_COLUMNS} field names left out")
    if other:
        reader.note(f"{other} lines are not iteration records (setup output, warnings, ...); ignored")
    if not len(st.rec) and not st.straggler and not st.memory and not len(st.timers):
        reader.fail("no Megatron iteration lines ('iteration N/ M | ... elapsed time per iteration') found")
    if not len(st.rec):
        reader.note("no iteration lines: only the straggler/memory/timers tables are filled")
    return st


def _notes(reader: Reader, steps: pd.DataFrame) -> None:
    """Megatron's skipped and nan iterations (their sums as text: a damaged count can make one huge), launches."""
    totals = []
    for column in ("skipped_iterations", "nan_iterations"):
        with np.errstate(over="ignore", invalid="ignore"):
            total = float(np.nansum(steps[column])) if column in steps else 0.0
        totals.append(str(int(total)) if math.isfinite(total) and abs(total) < 2**53 else f"{total:g}")
    if totals != ["0", "0"]:
        reader.note(f"Megatron reported {totals[0]} skipped and {totals[1]} nan iterations; kept as steps (they took "
                    "time)")
    if len(steps) and steps["attempt"].max() > 0:
        reader.note(f"{int(steps['attempt'].max()) + 1} launches (attempts) found in one log")


def _extra(st: _State, iv: _Intervals, shift: float) -> dict[str, Any]:
    extra: dict[str, Any] = {"log_interval": iv.log_interval}
    if shift:
        extra["t0_wallclock"] = (datetime(1970, 1, 1) + timedelta(seconds=shift)).isoformat(sep=" ")
        extra["t0_timezone"] = "unknown (log's local time)"
    if st.loads:
        extra["resumed_from_iterations"] = list(st.loads[:1000])
    if loaded := [v for _, v in st.timers.named("load-checkpoint")]:
        extra["load_checkpoint_ms"] = loaded[:1000]
    if spread := st.timers.spread():
        extra["timer_spread_ms"] = spread
    return extra


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a Megatron-LM / Megatron-DeepSpeed stdout log; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the Megatron loader reads one stdout log file")
    opts = _checked(reader, options)
    st = _read(reader, opts)
    iv = _intervals(reader, st, opts.log_interval)
    steps = _steps(reader, st, iv)
    absolute = iv.timestamped or not len(st.rec)
    t_abs = iv.start.tolist() if iv.timestamped else []
    if absolute:
        t_abs += [t for _, t, _ in st.datetimes] + [s["time"] for s in st.straggler if s.get("time") is not None]
    shift = min(t_abs) if t_abs else 0.0
    if len(steps):
        steps["start_s"] = steps["start_s"] - shift
        steps["end_s"] = steps["end_s"] - shift
    _notes(reader, steps)
    out = Parsed(steps=steps, events=_save_events(reader, st, iv, shift) + _init_events(st, iv, shift),
                 tables=_tables(st, iv, shift, absolute), extra=_extra(st, iv, shift),
                 timing="interval_mean" if iv.log_interval > 1 else "duration_only",
                 time_unit="ms" if st.units <= {"ms"} else ",".join(sorted(st.units)))
    _facts(reader, st, out)
    _claims(reader, st, out)
    return out


load = loader_for(NAME)
