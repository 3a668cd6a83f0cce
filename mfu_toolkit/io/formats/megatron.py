"""Megatron-LM and Megatron-DeepSpeed stdout: iteration lines, timers, the argument banner.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- Megatron prints one line per log interval from the last rank, ``iteration N/ M | key: value
  | ...`` (Megatron-DeepSpeed's ALCF fork writes ``iteration= N/ M | key=value | ...``; both
  are read). ``elapsed time per iteration`` is the mean over the interval. Each line becomes
  ``interval_steps`` rows (one per step of the interval, each as long as the mean), ``logged``
  marks the step that printed the line, and point values (``loss``, ``grad_norm``,
  ``learning_rate``, ...) sit on that row only; means over the interval (``tflops_per_gpu`` and
  the timer columns below) sit on every row of it. Any other ``key: value`` field (``tokens/sec/gpu``
  added by ``--log-throughput`` patches, ``moe loss``, ...) is read generically into a column.
  The interval is the most common step gap between lines (or ``log_interval=``). A gap longer
  than :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` is no log interval: that line stays one
  row and is counted under ``rules.INTERVAL_TOO_LONG``. ``meta.timing`` is ``"interval_mean"``
  for intervals longer than one step, else ``"duration_only"``; ``rank = -1`` (job level).
- ``[YYYY-mm-dd HH:MM:SS(.ffffff)]`` before the line (local time, no zone) is the end of the
  interval, except where that would start it before the previous interval ends (timestamps are
  whole seconds, durations milliseconds): each interval ends at ``max(timestamp, previous end +
  duration)``, so consecutive steps never overlap and every duration is kept (noted in the
  report when an end moves). Without timestamps on every line the steps are placed back to back from their
  durations, and gaps between launches are unknown (noted in the report).
- A step number that does not increase, or a new argument banner / checkpoint load after logged
  steps, starts a new attempt. A line repeated (the same record from another rank, or a
  progress bar's redraw) is counted under ``rules.DUPLICATE``; a record line whose step number is
  not a number (``iteration 1x2/ 100 |``) under ``rules.BAD_STEP``. Every record line that gives
  no row is in the report's skip counts.
- ``number of skipped iterations`` / ``number of nan iterations`` are kept per row: those steps
  took time, so they stay in the timeline. A known field whose value is not a number is counted
  (``rules.NON_NUMERIC``, line and field) and left missing; the line's timing is kept.
- **Timers** go to the ``timers`` table, one row per logged interval per timer (the values are
  per-step means over the interval, as Megatron divides by the log interval): ``min_ms`` and
  ``max_ms`` across ranks for a ``(min, max) time across ranks (ms):`` block (a logger prefix on
  the header is fine; one ``name ....: (min, max)`` line per timer; a header-less block of such
  lines is read too), ``max_ms`` for ``max time across ranks``, ``value_ms`` alone for the
  older one-line ``time (ms) | forward-compute: x | ...``; ``spread_ms`` is max − min, the
  imbalance across ranks. Megatron prints its timers after the iteration line they belong to;
  DeepSpeed's engine (``[Rank 0] time (ms) | fwd: ... | bwd_inner: ...``) prints before it.
  Set-up timers (``model-and-optimizer-setup``, ``load-checkpoint``, ...) and timers before the
  first line of a launch have no step. On the step rows of the interval they fill (in seconds,
  the slowest rank's value where min and max are given):

  - ``compute_s``: ``forward-compute`` + ``backward-compute`` (DeepSpeed: ``fwd`` + ``bwd_inner``);
  - ``comm_s``: every ``*all-reduce``, ``*all-gather``, ``*reduce-scatter`` and ``all-grads-sync``
    timer and the pipeline's ``forward-send``/``forward-recv``/``backward-send``/``backward-recv``
    (and their ``-send-...-recv`` pairs) (DeepSpeed: ``bwd_allreduce`` + ``optimizer_allgather``);
  - ``data_wait_s``: ``batch-generator`` (data loading and its broadcast).

  Parent timers that contain these (``forward-backward``, ``optimizer``,
  ``backward-reduce-model-grads``, ``backward-gather-model-params``) and the sub-timers of
  ``batch-generator`` are left out of the sums, so nothing is counted twice. Megatron's own
  timers take precedence over DeepSpeed's for the same interval and category.
- **Facts** (each with file:line): the world size (``using world size: N``, the banner's
  ``world_size``, ``NGPUS=``, MPI/DeepSpeed ``world_size=``) as ``n_accelerators`` and
  ``n_ranks`` (one accelerator per rank), ``parallelism`` (``{"tp", "pp", "dp"}`` and ``cp``,
  ``ep`` where printed), ``global_batch``, ``micro_batch``, ``seq_len`` (``seq_length``, else a
  constant ``actual seqlen``), ``dtype`` (``fp8`` when set, else ``bf16``/``fp16``, else
  ``params_dtype``), ``model`` (``model_name``, ALCF's ``MODEL_TYPE``) and ``framework``
  (``Megatron-DeepSpeed`` once a DeepSpeed line or field is seen, else ``Megatron-LM``). A fact
  printed with different values (several launches in one file) is noted, not stated.
- **Claims** (median over the lines; a running average: its last value), each saying what it
  counts: ``throughput per GPU (TFLOP/s/GPU)`` (Megatron-LM), ``TFLOPs`` (Megatron-DeepSpeed: the
  throughput calculator's count with ``:``; with ``=`` ALCF's, whose count depends on the logger that
  printed it: ``training_log`` Megatron-LM's model FLOPs, ``training`` the calculator's, neither
  named: said so), ``[LM]-TFLOPs`` and ``[DS]-TFLOPs`` (two counts of the same step) and GPT-NeoX's
  ``approx flops per GPU: 123.4TFLOPS`` (``tflops_per_accelerator``); GPT-NeoX's ``MFU: x%``
  (``mfu``); ``samples per second`` (Megatron-DeepSpeed), GPT-NeoX's ``samples/sec:`` before the
  iteration head, and DeepSpeed's throughput timer (``CurrSamplesPerSec`` and
  ``RunningAvgSamplesPerSec`` or, before DeepSpeed 0.7, ``SamplesPerSec``) (``samples_per_s``, each
  a different count); ``tokens per gpu per second (tgs)`` / ``tokens/sec/gpu``
  (``tokens_per_s_per_accelerator``). Values that are not finite are noted, not claimed.
- ``saving checkpoint at iteration N`` / ``successfully saved checkpoint ... iteration N`` are
  ``checkpoint_save`` events after step N; the duration comes from the ``save-checkpoint`` timer
  when printed, else from the gap to the next timestamped line, else it is unknown (zero length,
  said so in ``detail``). ``[...] datetime:`` lines before training give the ``init`` event.
- The straggler detector's ``MnRtt/Rnk: ... | MxRtt/Rnk: ...`` lines go to the ``straggler``
  table, ``[Rank r] (after N iterations) memory (MB)`` lines to the ``memory`` table; a value there
  that is not a number is counted with its line and field and left missing.

Every read is linear in the input: no regular expression here backtracks on long lines, the
expansion into one row per step draws on the load's row budget (``rules.take_rows``; beyond it
each line stays one row, its steps counted in ``interval_steps``, noted), and the number of
distinct field columns is bounded.
"""

from __future__ import annotations

import math
import re
from array import array
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, read_head
from ..throughput_timer import TIMER_COUNTS, UNDER_MEGATRON
from ..values import number, timestamp

NAME = "megatron"


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
_TIMER_BODY = re.compile(r"(?:^|\s)([A-Za-z0-9_/\-]+) (\.*):\s*(\([^()]*\)|[^\s()]+)")
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
_RENAME = {
    "lm_loss": "loss",
    "throughput_per_gpu_tflop_s_gpu": "tflops_per_gpu",
    "number_of_skipped_iterations": "skipped_iterations",
    "number_of_nan_iterations": "nan_iterations",
}
# Fields whose value must be a number: a text value there is a damaged record.
_KNOWN = frozenset({
    "loss", "learning_rate", "grad_norm", "loss_scale", "tflops_per_gpu", "consumed_samples",
    "global_batch_size", "skipped_iterations", "nan_iterations", "num_zeros", "params_norm",
    "consumed_tokens", "samples_per_second", "tflops", "lm_tflops", "ds_tflops", "actual_seqlen",
    "tokens_per_gpu_per_second_tgs", "approx_flops_per_gpu", "mfu", "hfu",
})
_INTERVAL_FIELDS = ("tflops_per_gpu", "compute_s", "comm_s", "data_wait_s")  # valid for every step
_MAX_COLUMNS = 256
_MAX_KEYS_CACHED = 4096
_MAX_STEP_S = 1e7  # one iteration longer than ~116 days is not a duration
_SCAN_BYTES = 8 << 20
_MAX_DISTINCT = 8
_DROPPED = -2

# Timers.
_SETUP_TIMERS = frozenset({
    "model-and-optimizer-setup", "train/valid/test-data-iterators-setup", "load-checkpoint",
    "save-checkpoint",
})
_PIPELINE = frozenset({
    "forward-recv", "forward-send", "backward-recv", "backward-send",
    "forward-send-backward-recv", "backward-send-forward-recv",
})
_DS_CATEGORY = {"fwd": "compute", "bwd_inner": "compute", "bwd_allreduce": "comm", "optimizer_allgather": "comm"}
_CATEGORY_COLUMN = {"compute": "compute_s", "comm": "comm_s", "data": "data_wait_s"}

# Claims: column -> (metric, unit, scale to the unit, what it counts).
_MDS = "https://github.com/deepspeedai/Megatron-DeepSpeed/blob/main/megatron/utils.py"
_ALCF = "https://github.com/argonne-lcf/Megatron-DeepSpeed/blob/main/megatron/"
_NEOX = "https://github.com/EleutherAI/gpt-neox/blob/main/megatron/logging.py"
_CLAIMS: dict[str, tuple[str, str, float, str]] = {
    "tflops_per_gpu": ("tflops_per_accelerator", "TFLOP/s per GPU", 1.0,
                       "model FLOPs per GPU per second as Megatron's own formula counts them "
                       "(Megatron-LM num_floating_point_operations / (iteration time × world size))"),
    "lm_tflops": ("tflops_per_accelerator", "TFLOP/s per GPU", 1.0,
                  "[LM]-TFLOPs / [LM]TFLOPs (ALCF Megatron-DeepSpeed, 2024-06 to 2025-06): per GPU by Megatron-LM's "
                  "num_floating_point_operations, model FLOPs without recomputation (" + _ALCF + "utils.py)"),
    "ds_tflops": ("tflops_per_accelerator", "TFLOP/s per GPU", 1.0,
                  "[DS]-TFLOPs / [DS]TFLOPs (ALCF Megatron-DeepSpeed): per GPU by the throughput calculator, a "
                  "different count of the same step from [LM]: the recomputed forward is added under activation "
                  "checkpointing (" + _ALCF + "utils.py throughput_calculator)"),
    "samples_per_second": ("samples_per_s", "samples/s", 1.0,
                           "global samples per second as Megatron-DeepSpeed prints them: global batch (micro batch × "
                           "micro-batches × data-parallel size) / mean iteration time over the log interval "
                           "(throughput_calculator, " + _MDS + ")"),
    "samples_per_sec": ("samples_per_s", "samples/s", 1.0,
                        "GPT-NeoX samples/sec: train_batch_size (global) / mean iteration time over the log "
                        "interval (" + _NEOX + ")"),
    "approx_flops_per_gpu": ("tflops_per_accelerator", "TFLOP/s per GPU", 1e-12,
                             "GPT-NeoX approx flops per GPU: train_batch_size × seq_length × its FLOPs per token / "
                             "(mean iteration time × world size); since 2023-09 Megatron-DeepSpeed's "
                             "24·k·B·s·L·h² (1 + s/6h + V/16Lh) with k = 4 under activation checkpointing "
                             "(the recomputed forward counted), before it 6 × parameters + 60·s·h·L per token "
                             "(" + _NEOX + " get_actual_flops)"),
    "mfu_pct": ("mfu", "fraction", 0.01,
                "GPT-NeoX MFU: its forward+backward FLOPs per GPU per second (no recomputation) / the "
                "peak_theoretical_tflops the run was given, printed in percent (" + _NEOX + ")"),
    "tokens_per_gpu_per_second_tgs": ("tokens_per_s_per_accelerator", "tokens/s per GPU", 1.0,
                                      "tokens per GPU per second (tgs) as Megatron-DeepSpeed prints them: samples per "
                                      "second × sequence length / world size"),
    "tokens_sec_gpu": ("tokens_per_s_per_accelerator", "tokens/s per GPU", 1.0,
                       "tokens per GPU per second as a --log-throughput extension prints them"),
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
# DeepSpeed's throughput timer inside a Megatron-DeepSpeed log: its lines' forms here, what they count
# in mfu_toolkit.io.throughput_timer (shared with the deepspeed format).
_DS_TIMER_FORMS = (
    ("global_step", re.compile(r"epoch=\d{1,18}/micro_step=\d{1,18}/global_step=\d{1,18}, RunningAvgSamplesPerSec=")),
    ("micro_step", re.compile(r"(?<![\d/])\d{1,18}/\d{1,18}, RunningAvgSamplesPerSec=")),
    ("running_only", re.compile(r"(?<![\d/])\d{1,18}/\d{1,18}, SamplesPerSec=")),
)
_DS_TIMER_KV = re.compile(r"\b(RunningAvgSamplesPerSec|CurrSamplesPerSec|SamplesPerSec)=([^,\s]{0,64})")
_CURR_COUNTS = "CurrSamplesPerSec of the DeepSpeed engine, at each printed step: {what}"
_RUNNING_COUNTS = ("{key} of the DeepSpeed engine, the running average since the timer's start (its first 2 steps "
                   "left out; the last value printed): {what}")
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
        line = buf[m.end():end]
        if b"elapsed time per iteration" in line or b"elapsed_time_per_iteration" in line:
            return True
        pos = end + 1
    return False


def _has_timers(buf: bytes) -> bool:
    """A timer header ending its line, or three ``name ....: (min, max)`` lines."""
    return any(b"time across ranks (ms):" + end in buf for end in (b"\n", b"\r")) or buf.count(b".: (") >= 3


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
    hinted = b"megatron" in low or b"arguments ---" in head or b"iteration" in low
    try:
        if hinted and p.stat().st_size > len(head):
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
    if not (0 < len(text) <= 19 and text.isascii() and text.isdigit()):
        return None
    return rules.as_step(text)


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


# --- what the line classifier gathers ---------------------------------------------------------------
@dataclass
class _Records:
    """The kept iteration lines, column by column (a row per line, fields sparse)."""

    line: array = field(default_factory=lambda: array("q"))
    attempt: array = field(default_factory=lambda: array("q"))
    iteration: array = field(default_factory=lambda: array("q"))
    ts: array = field(default_factory=lambda: array("d"))
    dur: array = field(default_factory=lambda: array("d"))
    fields: dict[str, tuple[array, array]] = field(default_factory=dict)  # column -> (records, values)
    units: set[str] = field(default_factory=set)

    def __len__(self) -> int:
        return len(self.line)


@dataclass
class _Timers:
    """Timer values as read, one entry per timer (record index -1: no step; _DROPPED: a repeat)."""

    line: array = field(default_factory=lambda: array("q"))
    rec: array = field(default_factory=lambda: array("q"))
    attempt: array = field(default_factory=lambda: array("q"))
    source: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)  # each distinct name one string object
    min_ms: array = field(default_factory=lambda: array("d"))
    max_ms: array = field(default_factory=lambda: array("d"))
    value_ms: array = field(default_factory=lambda: array("d"))
    names: dict[str, str] = field(default_factory=dict)
    pending: list[int] = field(default_factory=list)  # DeepSpeed's, waiting for their iteration line
    seen: set[str] = field(default_factory=set)  # Megatron timer names given to record ``seen_rec``
    seen_rec: int = -1
    block: str | None = None  # inside a '(min, max)' / 'max' block


@dataclass
class _State:
    """Everything one pass over the lines gathers, and where the attempt stands."""

    rec: _Records = field(default_factory=_Records)
    timers: _Timers = field(default_factory=_Timers)
    saves: list[dict[str, Any]] = field(default_factory=list)
    save_index: dict[tuple[int, int], int] = field(default_factory=dict)
    datetimes: list[tuple[str, float, int]] = field(default_factory=list)
    straggler: list[dict[str, Any]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    loads: list[int] = field(default_factory=list)
    load_ms: list[float] = field(default_factory=list)
    stated: dict[str, dict[Any, tuple[int, str]]] = field(default_factory=dict)
    ds_timer: list[tuple[int, str, float, float]] = field(default_factory=list)  # line, form, running, curr
    tflops_form: dict[int, str] = field(default_factory=dict)  # record -> how its TFLOPs field was printed
    ds_at: tuple[int, str] | None = None  # the first line that shows DeepSpeed
    megatron_at: tuple[int, str] | None = None  # the first line in Megatron's own format
    first_raw: dict[str, str] = field(default_factory=dict)  # each column's first 'key: value'
    attempt: int = 0
    launch_marker: bool = False
    last_iter: int | None = None
    last_ts: float | None = None
    prev_text: str | None = None  # the last iteration line, to tell a repeat
    cur_rec: int | None = None  # the record Megatron's timers after it belong to
    other: int = 0
    text_fields: Counter[str] = field(default_factory=Counter)
    columns_refused: int = 0
    key_cache: dict[str, tuple[str, str, str]] = field(default_factory=dict)

    def marker_attempt(self) -> int:
        """The attempt a line belongs to, counting a launch marker seen since the last record."""
        return self.attempt + 1 if self.launch_marker and self.last_iter is not None else self.attempt

    def launch(self) -> None:
        self.launch_marker = True
        self.cur_rec = None
        self.prev_text = None  # a relaunch may print the same line again

    def saw_deepspeed(self, ln: int, text: str) -> None:
        if self.ds_at is None:
            self.ds_at = (ln, text.strip()[:200])

    def saw_megatron(self, ln: int, text: str) -> None:
        if self.megatron_at is None:
            self.megatron_at = (ln, text.strip()[:200])

    def state(self, name: str, value: Any, line: int, text: str) -> None:
        """Remember a stated value (its first line per distinct value, a few distinct values)."""
        seen = self.stated.setdefault(name, {})
        if value not in seen and len(seen) < _MAX_DISTINCT:
            seen[value] = (line, text.strip()[:200])


# --- the line classifier: iteration lines -----------------------------------------------------------
def _key_info(st: _State, raw_key: str) -> tuple[str, str, str]:
    """``(key, column, kind)`` of a field name as printed; kind is ``elapsed``, ``known`` or ``other``."""
    info = st.key_cache.get(raw_key)
    if info is None:
        key = raw_key.strip()
        snake = _snake(key)
        if snake.startswith(_ELAPSED):
            info = (key, snake, "elapsed")
        else:
            column = _RENAME.get(snake, snake)
            info = (key, column, "known" if column in _KNOWN else "other")
        if len(st.key_cache) < _MAX_KEYS_CACHED:
            st.key_cache[raw_key] = info
    return info


def _elapsed(reader: Reader, ln: int, key: str, column: str, raw: str, text: str) -> tuple[float, str] | None:
    """The iteration time in seconds and its unit, or None after counting the line as bad."""
    unit = column[len(_ELAPSED):].strip("_")
    if unit not in _UNITS:
        reader.bad(f"unknown time unit {unit!r} in elapsed time per iteration", line=ln, field=key, example=text)
        return None
    value = number(_before_slash(raw), nonfinite="nan")
    if value is None or math.isnan(value):
        reader.bad(f"{rules.NON_FINITE_TIME} (elapsed time per iteration)", line=ln, field=key, example=text)
        return None
    if value < 0:
        reader.bad(f"{rules.NEGATIVE_DURATION} (elapsed time per iteration)", line=ln, field=key, example=text)
        return None
    seconds = value * _UNITS[unit]
    if seconds > _MAX_STEP_S:
        reader.bad(f"{rules.VALUE_OUT_OF_RANGE} (elapsed time per iteration over {_MAX_STEP_S:g} s)",
                   line=ln, field=key, example=text)
        return None
    return seconds, unit


def _fields(reader: Reader, st: _State, ln: int, rest: str,
            text: str) -> tuple[float | None, str, dict[str, float]] | None:
    """The line's duration (s, None when it has none), its unit and its numeric fields;
    None when the elapsed time is unusable (counted)."""
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
            got = _elapsed(reader, ln, key, column, raw.strip(), text)
            if got is None:
                return None
            dur, unit = got
            continue
        value = number(_before_slash(raw), nonfinite="nan")
        if value is None and column in ("approx_flops_per_gpu", "mfu", "hfu"):
            column, value = _unit_value(column, raw.strip())
        if value is not None:
            values[column] = value
            if column not in st.first_raw and len(st.first_raw) < _MAX_COLUMNS:
                st.first_raw[column] = f"{key}: {raw.strip()}"[:200]
        elif kind == "known":  # the line's timing stays, this value does not
            reader.bad(rules.NON_NUMERIC, line=ln, field=key, example=f"{key}: {raw.strip()}"[:200])
        elif key in st.text_fields or len(st.text_fields) < 64:
            st.text_fields[key] += 1
    return dur, unit, values


def _unit_value(column: str, raw: str) -> tuple[str, float | None]:
    """GPT-NeoX's values with units: ``approx flops per GPU: 123.4TFLOPS`` (FLOP/s) and ``MFU: 45.2%``
    (column ``mfu_pct``, in percent as printed); ``None`` when the text is neither."""
    if column == "approx_flops_per_gpu":
        m = _HUMAN_FLOPS.fullmatch(raw)
        value = number(m.group(1), nonfinite="nan") if m else None
        if m is None or value is None:
            return column, None
        return column, value * (1e24 if m.group(3) else _FLOPS_PREFIX[m.group(2) or ""])
    if raw.endswith("%"):
        return f"{column}_pct", number(_before_slash(raw[:-1]), nonfinite="nan")
    return column, None


def _record_head(text: str) -> re.Match[str] | None:
    """The first ``iteration N/ M |`` of a line that starts a record: a numeric step, or a damaged
    one followed by the record's fields (a prose ``iteration x/y |`` is passed over)."""
    fields_at = max(text.rfind(word) for word in _RECORD_WORDS)
    pos = 0
    while (m := _ITER_HEAD.search(text, pos)) is not None:
        token = m.group(1)
        if (token.isascii() and token.isdigit()) or fields_at >= m.end():
            return m
        pos = m.end()
    return None


def _new_attempt(reader: Reader, st: _State, opts: Options, ln: int, it: int,
                 ts: float | None, text: str) -> bool:
    """Advance the attempt if this line starts one; False when its timestamp goes back (counted)."""
    if st.last_iter is not None and (it <= st.last_iter or st.launch_marker):
        st.attempt += 1
        st.last_ts = None
    elif ts is not None and st.last_ts is not None and ts < st.last_ts - opts.clock_tolerance_s:
        reader.bad(f"{rules.NON_MONOTONIC} (earlier than the previous iteration line)", line=ln,
                   field="timestamp", example=text)
        return False
    st.launch_marker = False
    st.last_iter = it
    if ts is not None:
        st.last_ts = ts
    return True


def _iteration(reader: Reader, st: _State, opts: Options, ln: int, text: str, m: re.Match[str]) -> None:
    """One record line: a kept record, or a counted skip (bad step, duplicate, damaged field)."""
    it = _step(m.group(1))
    if it is None:
        reader.bad(rules.BAD_STEP, line=ln, field="iteration", example=text[:200])
        _flush_pending(reader, st, None)
        return
    if text == st.prev_text:  # another rank's copy, or a progress bar's redraw
        reader.bad(rules.DUPLICATE, line=ln, field="iteration", example=text[:200])
        return
    st.prev_text = text
    got = _fields(reader, st, ln, text[m.end():], text)
    if got is not None and got[0] is None:
        reader.bad(f"{rules.MISSING_FIELD} (elapsed time per iteration; truncated?)", line=ln,
                   field="elapsed time per iteration", example=text)
        got = None
    tsm = _TS_RE.search(text, 0, m.start())
    ts = timestamp(tsm.group(1)) if tsm else None
    if got is None or not _new_attempt(reader, st, opts, ln, it, ts, text):
        _flush_pending(reader, st, None)
        return
    dur, unit, values = got
    rec = st.rec
    fields, at = rec.fields, len(rec.line)
    _claim_fields(reader, st, ln, text, m, values, at)
    for column, value in values.items():
        slot = fields.get(column)
        if slot is None:
            if len(fields) >= _MAX_COLUMNS:
                st.columns_refused += 1
                continue
            slot = fields[column] = (array("q"), array("d"))
        slot[0].append(at)
        slot[1].append(value)
    rec.line.append(ln)
    rec.attempt.append(st.attempt)
    rec.iteration.append(it)
    rec.ts.append(math.nan if ts is None else ts)
    rec.dur.append(float(dur))
    rec.units.add(unit)
    st.cur_rec = len(rec) - 1
    _flush_pending(reader, st, st.cur_rec)
    if st.megatron_at is None:
        st.saw_megatron(ln, text)
    if st.ds_at is None and any(k in values for k in ("tflops", "lm_tflops", "ds_tflops", "samples_per_second")):
        st.saw_deepspeed(ln, text)


def _claim_fields(reader: Reader, st: _State, ln: int, text: str, m: re.Match[str], values: dict[str, float],
                  at: int) -> None:
    """GPT-NeoX's ``samples/sec:`` printed before the iteration head, and how the line prints ``TFLOPs``
    (``:`` upstream, ``=`` by ALCF's training.py or training_log.py: different counts, see _TFLOPS_COUNTS)."""
    head = text[: m.start()]
    if "samples/sec:" in head and (sm := _NEOX_SPS.search(head)) is not None:
        value = number(_before_slash(sm.group(1)), nonfinite="nan")
        if value is None:
            reader.bad(rules.NON_NUMERIC, line=ln, field="samples/sec", example=sm.group(0)[:200])
        else:
            values["samples_per_sec"] = value
    if "tflops" in values:
        if _TFLOPS_EQ.search(text, m.end()) is None:
            st.tflops_form[at] = "colon"
        else:
            st.tflops_form[at] = "lm" if "training_log" in head else "ds" if "[training:" in head else "eq"


# --- the line classifier: timers --------------------------------------------------------------------
def _flush_pending(reader: Reader, st: _State, rec: int | None) -> None:
    """Give DeepSpeed's timers, printed before their iteration line, to that line's record."""
    t = st.timers
    if rec is not None:
        given: set[str] = set()
        for i in t.pending:
            if t.name[i] in given:
                reader.bad(rules.DUPLICATE, line=t.line[i], field=t.name[i])
                t.rec[i] = _DROPPED
                continue
            given.add(t.name[i])
            t.rec[i] = rec
            t.attempt[i] = st.rec.attempt[rec]
    t.pending.clear()


def _add_timer(reader: Reader, st: _State, ln: int, source: str, name: str, lo: float, hi: float) -> None:
    """One timer value (ms): to the interval it belongs to, or to none (set-up, before any line)."""
    t = st.timers
    rec = -1
    if name not in _SETUP_TIMERS and source == "megatron" and st.cur_rec is not None:
        if t.seen_rec != st.cur_rec:  # repeats are looked for within one interval
            t.seen_rec = st.cur_rec
            t.seen.clear()
        if name in t.seen:
            reader.bad(rules.DUPLICATE, line=ln, field=name)
            return
        t.seen.add(name)
        rec = st.cur_rec
    value = hi if not math.isnan(hi) else lo
    if source == "deepspeed" and name not in _SETUP_TIMERS:
        t.pending.append(len(t.line))
    t.line.append(ln)
    t.rec.append(rec)
    t.attempt.append(st.rec.attempt[rec] if rec >= 0 else st.marker_attempt())
    t.source.append(source)
    t.name.append(t.names.setdefault(name, name) if len(t.names) < _MAX_KEYS_CACHED else name)
    t.min_ms.append(lo)
    t.max_ms.append(hi)
    t.value_ms.append(value)
    if name == "save-checkpoint" and not math.isnan(value) and st.saves and "timer_ms" not in st.saves[-1]:
        st.saves[-1]["timer_ms"] = value
    if name == "load-checkpoint" and not math.isnan(value):
        st.load_ms.append(value)


def _timer_value(reader: Reader, ln: int, name: str, raw: str) -> float:
    """A timer value in ms; a text, non-finite or negative value is counted and left missing (NaN)."""
    value = number(_before_slash(raw), nonfinite="nan")
    if value is None:
        reader.bad(rules.NON_NUMERIC, line=ln, field=name, example=f"{name}: {raw}"[:200])
        return math.nan
    if math.isnan(value):
        reader.bad(f"{rules.NON_FINITE_TIME} (timer)", line=ln, field=name, example=f"{name}: {raw}"[:200])
        return math.nan
    if value < 0:
        reader.bad(f"{rules.NEGATIVE_DURATION} (timer)", line=ln, field=name, example=f"{name}: {raw}"[:200])
        return math.nan
    if value > _MAX_STEP_S * 1000:
        reader.bad(f"{rules.VALUE_OUT_OF_RANGE} (timer over {_MAX_STEP_S:g} s)", line=ln, field=name,
                   example=f"{name}: {raw}"[:200])
        return math.nan
    return value


def _timer_body(reader: Reader, st: _State, ln: int, m: re.Match[str]) -> None:
    """``name .......: (min, max)`` (or ``: max``) inside a block."""
    name, raw = m.group(1), m.group(3)
    if raw.startswith("("):
        parts = raw[1:-1].split(",")
        if len(parts) == 2 and st.timers.block != "max":
            lo, hi = (_timer_value(reader, ln, name, p) for p in parts)
        else:
            lo, hi = math.nan, _timer_value(reader, ln, name, parts[-1])
    else:
        lo, hi = math.nan, _timer_value(reader, ln, name, raw)
    _add_timer(reader, st, ln, "megatron", name, lo, hi)


def _one_line_timers(reader: Reader, st: _State, ln: int, text: str, at: int) -> None:
    """``time (ms) | a: x | b: y``: Megatron's older timers, or DeepSpeed's after ``[Rank N]``."""
    source = "deepspeed" if "[Rank" in text[:at] else "megatron"
    if source == "deepspeed":
        st.saw_deepspeed(ln, text)
    for part in text[at + len("time (ms)"):].split("|")[1:]:
        name, sep, raw = part.partition(":")
        name = name.strip()
        if sep and name:
            _add_timer(reader, st, ln, source, name, math.nan, _timer_value(reader, ln, name, raw))


def _timer_line(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """A timer header, a timer of a block (or a header-less block), or a one-line timer record."""
    t = st.timers
    if "time across ranks" in text:
        t.block = "minmax" if "(min, max)" in text else ("max" if "max time across ranks" in text else None)
        st.saw_megatron(ln, text)
        return True
    at = text.find("time (ms)")
    if at >= 0 and "|" in text[at:]:
        t.block = None
        _one_line_timers(reader, st, ln, text, at)
        return True
    if ":" in text and (m := _TIMER_BODY.search(text)) is not None:
        if t.block or (len(m.group(2)) >= 3 and m.group(3).startswith("(")):
            t.block = t.block or "minmax"
            st.saw_megatron(ln, text)
            _timer_body(reader, st, ln, m)
            return True
    t.block = None
    return False


# --- the line classifier: launches, checkpoints, datetimes --------------------------------------------
def _is_banner(text: str) -> bool:
    """Megatron's ``------ arguments ------`` line (not ``... end of arguments ...``)."""
    at = text.find("arguments")
    return at >= 0 and text[:at].rstrip().endswith("-----") and text[at + 9:].lstrip().startswith("-----")


def _save_line(reader: Reader, st: _State, ln: int, text: str) -> bool:
    if (m := _SAVE_START_RE.search(text)) is not None:
        done = False
    elif (m := _SAVE_END_RE.search(text)) is not None:
        done = True
    else:
        return False
    it = _step(m.group(1))
    if it is None:
        reader.bad(rules.BAD_STEP, line=ln, field="iteration", example=text[:200])
        return True
    at = st.save_index.get((st.attempt, it))
    if done and at is not None:
        st.saves[at]["done"] = True
        return True
    st.save_index[(st.attempt, it)] = len(st.saves)
    st.saves.append({"line": ln, "iteration": it, "attempt": st.attempt, "done": done})
    return True


def _datetime_line(st: _State, ln: int, text: str) -> bool:
    """``[label] datetime: YYYY-mm-dd HH:MM:SS`` (``datetime=`` in the ALCF fork)."""
    at = text.find("datetime")
    m = _DT_VALUE.search(text, at)
    close = text.rfind("]", 0, at)
    opening = text.rfind("[", 0, close) if close >= 0 else -1
    if m is None or opening < 0 or text[close + 1:at].strip():
        return False
    t = timestamp(m.group(1))
    if t is None:
        return False
    st.datetimes.append((text[opening + 1:close], t, st.marker_attempt()))
    st.cur_rec = None
    _flush_pending_unplaced(st)
    return True


def _flush_pending_unplaced(st: _State) -> None:
    st.timers.pending.clear()


def _marker_line(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """A launch (banner, ``using world size``, checkpoint load), a checkpoint save, a datetime."""
    hit = False
    if _is_banner(text) or "using world size:" in text:
        st.launch()
        _flush_pending_unplaced(st)
        hit = True
    at = text.find("successfully loaded checkpoint")
    if at >= 0 and (m := _AT_ITER.search(text, at)) is not None and (it := _step(m.group(1))) is not None:
        st.loads.append(it)
        st.launch()
        _flush_pending_unplaced(st)
        hit = True
    if "checkpoint" in text and _save_line(reader, st, ln, text):
        hit = True
    if "datetime" in text and _datetime_line(st, ln, text):
        hit = True
    return hit


# --- the line classifier: what the log states about the job ---------------------------------------------
# Argument-banner names (``  name ........ value``) to what they state.
_ARG_FACTS = {
    "world_size": "world_size",
    "tensor_model_parallel_size": "tp",
    "pipeline_model_parallel_size": "pp",
    "data_parallel_size": "dp",
    "context_parallel_size": "cp",
    "expert_model_parallel_size": "ep",
    "moe_expert_parallel_size": "ep",
    "global_batch_size": "global_batch",
    "micro_batch_size": "micro_batch",
    "seq_length": "seq_length",
    "params_dtype": "params_dtype",
    "bf16": "bf16",
    "fp16": "fp16",
    "fp8": "fp8",
    "model_name": "model",
    "deepspeed": "deepspeed",
}
_COUNT_FACTS = frozenset({"world_size", "tp", "pp", "dp", "cp", "ep", "global_batch", "micro_batch", "seq_length"})


def _arg(reader: Reader, st: _State, ln: int, text: str, name: str, raw: str) -> bool:
    stated = _ARG_FACTS.get(name)
    if stated is None:
        return False
    if stated not in _COUNT_FACTS:
        st.state(stated, raw, ln, text)
        if stated == "deepspeed" and raw == "True":
            st.saw_deepspeed(ln, text)
        return True
    if raw == "None" or raw in ("0", "-1"):  # unset (Megatron-DeepSpeed writes -1 without MoE)
        return True
    value = _count(raw)
    if value is None:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field=name, example=text.strip()[:200])
    else:
        st.state(stated, value, ln, text)
    return True


def _fact_line(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """World size, parallel sizes, batch, sequence length, dtype, model, as the log states them."""
    hit = False
    if "using world size:" in text:
        for name, rx in _USING_PARTS.items():
            if (m := rx.search(text)) is not None and (value := _count(m.group(1))) is not None:
                st.state(name, value, ln, text)
        hit = True
    if " .." in text and (m := _ARG_LINE.search(text)) is not None:
        hit = _arg(reader, st, ln, text, m.group(1), m.group(2)) or hit
    for gate, rx in (("world_size", _WORLD_EQ), ("NGPUS", _NGPUS)):
        if gate in text and (m := rx.search(text)) is not None:
            value = _count(m.group(1))
            if value is None:
                reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field=gate, example=text.strip()[:200])
            else:
                st.state("world_size", value, ln, text)
            hit = True
    if "MODEL_TYPE" in text and (m := _MODEL_TYPE.search(text)) is not None:
        st.state("model", m.group(1), ln, text)
        hit = True
    return hit


# --- the line classifier: straggler, memory, DeepSpeed ------------------------------------------------
def _straggler(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """``MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: ...``: one row per metric, min and max with ranks."""
    by_metric: dict[str, dict[str, Any]] = {}
    tsm = None
    for part in text.split("|"):
        m = _STRAGGLER_PAIR.search(part)
        if m is None:
            continue
        if tsm is None:
            tsm = _TS_RE.search(text) or False
        mnmx, metric = m.group(1), m.group(2)
        token, _, rank_text = part[m.end():].strip().rpartition("/")
        token, which = token.strip(), "min" if mnmx == "Mn" else "max"
        vu = _VALUE_UNIT_RE.match(token)
        row = by_metric.setdefault(metric, {"line": ln, "time": timestamp(tsm.group(1)) if tsm else None,
                                            "metric": metric, "unit": vu.group(2) if vu else ""})
        if vu is None:  # 'nanms', 'N/A': the pair's rank stays, its value does not
            reader.bad(rules.NON_NUMERIC, line=ln, field=f"{mnmx}{metric}/Rnk",
                       example=f"{mnmx}{metric}/Rnk: {token}/{rank_text}"[:200])
        elif not row["unit"]:
            row["unit"] = vu.group(2)
        value = number(vu.group(1), nonfinite="nan") if vu else None
        row[which] = math.nan if value is None else value
        rank = _step(rank_text)
        if rank is None:
            reader.bad(rules.NON_NUMERIC, line=ln, field=f"{mnmx}{metric}/Rnk", example=part.strip()[:200])
        row[f"{which}_rank"] = math.nan if rank is None else rank
    if by_metric:
        st.straggler.extend(by_metric.values())
        st.saw_megatron(ln, text)
    return bool(by_metric)


def _memory(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """``[Rank r] (after N iterations) memory (MB) | allocated: x | ...`` (several glued on one line too)."""
    heads = list(_MEMORY_HEAD.finditer(text))
    for k, m in enumerate(heads):
        end = heads[k + 1].start() if k + 1 < len(heads) else len(text)
        rank, after = _step(m.group(1)), _step(m.group(2))
        if rank is None or after is None:
            reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="Rank" if rank is None else "after", example=text[:200])
            continue
        row: dict[str, Any] = {"rank": rank, "after_iteration": after}
        for part in text[m.end():end].split("|"):
            key, sep, raw = part.partition(":")
            key = key.strip()
            if not (sep and key):
                continue
            value = number(_before_slash(raw), nonfinite="nan")
            if value is None:
                reader.bad(rules.NON_NUMERIC, line=ln, field=key, example=part.strip()[:200])
            row[_snake(key) + "_mb"] = math.nan if value is None else value
        st.memory.append(row)
    return bool(heads)


def _ds_rate(reader: Reader, ln: int, text: str, values: dict[str, str], key: str) -> float:
    """One throughput-timer value; NaN, counted with its line and field, when missing or not a rate."""
    raw = values.get(key)
    value = number(_before_slash(raw), nonfinite="nan") if raw is not None else None
    if value is None:
        reader.bad(rules.MISSING_FIELD if raw is None else rules.NON_NUMERIC, line=ln, field=key, example=text[:200])
        return math.nan
    if not (math.isfinite(value) and value >= 0):  # DeepSpeed prints -inf before its timer has a step
        reader.bad(f"{rules.VALUE_OUT_OF_RANGE} (negative or not finite)", line=ln, field=key, example=text[:200])
        return math.nan
    return value


def _deepspeed_line(reader: Reader, st: _State, ln: int, text: str) -> bool:
    """DeepSpeed's throughput-timer line (claims), and the first sign of DeepSpeed."""
    hit = False
    if "SamplesPerSec=" in text:
        form = next((name for name, rx in _DS_TIMER_FORMS if rx.search(text)), None)
        if form is not None:
            values = dict(_DS_TIMER_KV.findall(text))
            running_key = "SamplesPerSec" if form == "running_only" else "RunningAvgSamplesPerSec"
            running = _ds_rate(reader, ln, text, values, running_key)
            curr = math.nan if form == "running_only" else _ds_rate(reader, ln, text, values, "CurrSamplesPerSec")
            st.ds_timer.append((ln, form, running, curr))
            hit = True
    if st.ds_at is None and ("DeepSpeed" in text or "[Rank" in text or "SamplesPerSec=" in text):
        if _DS_EVIDENCE.search(text):
            st.saw_deepspeed(ln, text)
    return hit


def _classify(reader: Reader, st: _State, opts: Options, ln: int, text: str) -> None:
    """Route one line to what reads it; a line nothing reads is counted for the notes."""
    if "iteration" in text and (m := _record_head(text)) is not None:
        st.timers.block = None
        _iteration(reader, st, opts, ln, text, m)
        return
    if _timer_line(reader, st, ln, text):
        return
    hit = _marker_line(reader, st, ln, text)
    hit = _fact_line(reader, st, ln, text) or hit
    if "Rnk:" in text and _straggler(reader, st, ln, text):
        return
    if "memory (MB)" in text and _memory(reader, st, ln, text):
        return
    hit = _deepspeed_line(reader, st, ln, text) or hit
    if not hit:
        st.other += 1


# --- the interval expander ------------------------------------------------------------------------------
@dataclass
class _Intervals:
    """Per record: rows (steps it stands for), start and end of its interval; the log interval."""

    it: np.ndarray
    attempt: np.ndarray
    dur: np.ndarray
    n: np.ndarray
    start: np.ndarray
    end: np.ndarray
    log_interval: int
    timestamped: bool


def _rows_per_record(reader: Reader, st: _State, given: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """``(iteration, attempt, rows per record, log interval)``; a gap too long is one row (counted)."""
    rec = st.rec
    it = np.asarray(rec.iteration, dtype=np.int64)
    att = np.asarray(rec.attempt, dtype=np.int64)
    first = np.ones(len(it), dtype=bool)
    first[1:] = att[1:] != att[:-1]
    gap = np.zeros(len(it), dtype=np.int64)
    gap[1:] = it[1:] - it[:-1]
    inner = gap[~first]
    inferred = timeline.log_interval(it, att)
    log_interval = given or inferred or 1
    if given is None and inferred is None and len(it):
        if len(inner):
            reader.note(f"no step gap between lines is a log interval (all over {rules.MAX_LOG_INTERVAL:,}); "
                        "each line taken as one step - pass log_interval= to change")
        else:
            reader.note("log interval unknown (one line per launch); each line taken as one step - "
                        "pass log_interval= to change")
    n = np.minimum(gap, log_interval)
    n[first] = np.minimum(log_interval, np.maximum(1, it[first]))
    too_long = np.flatnonzero(~first & (gap > rules.MAX_LOG_INTERVAL))
    n[too_long] = 1
    for i in too_long.tolist():
        reader.bad(rules.INTERVAL_TOO_LONG, line=rec.line[i], field="iteration",
                   example=f"iteration {int(it[i])}, {int(gap[i]):,} steps after the previous line")
    short = np.flatnonzero(~first & (gap > n))
    missing = sum(int(g) - int(k) for g, k in zip(gap[short].tolist(), n[short].tolist(), strict=True))
    if missing:
        reader.note(f"{missing} iterations between logged lines are not in the log (an excerpt, or lost lines)")
    return it, att, n, log_interval


def _record_at(iv: _Intervals, attempt: int, step: int) -> int | None:
    """The record whose interval holds ``step`` of ``attempt``, else None."""
    lo, hi = np.searchsorted(iv.attempt, attempt, "left"), np.searchsorted(iv.attempt, attempt, "right")
    j = int(lo + np.searchsorted(iv.it[lo:hi], step, "left"))
    if j >= hi or not (iv.it[j] - iv.n[j] < step <= iv.it[j]):
        return None
    return j


def _no_overlap(reader: Reader, ts: np.ndarray, span: np.ndarray) -> np.ndarray:
    """Interval ends from the timestamps, each at ``max(timestamp, previous end + duration)``.

    A timestamp is the end of its interval, but printed to the second, while the durations are
    milliseconds: anchoring every interval at its timestamp would start a step before the previous
    one ends (Megatron's Mixtral log: step 3 would start 0.41 s before step 2 ends). So an interval
    that would overlap the one before starts at its end instead; every duration is kept, and an
    end moves later than its timestamp only by what the rounding took. In closed form:
    ``end_i = C_i + max_{j <= i}(ts_j - C_j)`` with ``C`` the running sum of durations.
    """
    c = np.cumsum(span)
    end = c + np.maximum.accumulate(ts - c)
    moved = end - ts
    later = int((moved > 1e-9).sum())
    if later:
        reader.note(f"{later} of {len(ts)} intervals end after their line's timestamp "
                    f"(by at most {moved.max():.3f} s): "
                    "timestamps are whole seconds, so an interval that would overlap the previous one starts where it "
                    "ends (each end = max(timestamp, previous end + duration)); durations are as logged")
    return end


def _intervals(reader: Reader, st: _State, given: int | None) -> _Intervals:
    """Where each record's interval lies: at its timestamp, or back to back from the durations."""
    it, att, n, log_interval = _rows_per_record(reader, st, given)
    dur = np.asarray(st.rec.dur, dtype=float)
    ts = np.asarray(st.rec.ts, dtype=float)
    span = n * dur
    timestamped = bool(len(ts)) and not np.isnan(ts).any()
    end = _no_overlap(reader, ts, span) if timestamped else ts
    iv = _Intervals(it, att, dur, n, end - span, end, log_interval, timestamped)
    if len(ts) and not timestamped:
        if not np.isnan(ts).all():
            reader.note("some iteration lines have timestamps and some not: all placed back to back from durations")
        else:
            reader.note("no timestamps: steps placed back to back from their durations; gaps between launches unknown")
    if not timestamped:
        # A checkpoint saved after a line's step delays the next line by the save-checkpoint timer.
        shift = np.zeros(len(it))
        after = {(s["attempt"], s["iteration"]): s for s in st.saves}
        for (a, step), s in after.items():
            j = _record_at(iv, a, step)
            if "timer_ms" in s and j is not None and iv.it[j] == step and j + 1 < len(it):
                shift[j + 1] += s["timer_ms"] / 1000.0
        # One running sum, shift then span per record, so a start is exactly the previous end.
        walk = np.cumsum(np.column_stack([shift, span]).ravel()) if len(it) else np.zeros(0)
        iv.start, iv.end = walk[0::2], walk[1::2]
    return iv


# --- step rows --------------------------------------------------------------------------------------------
def _category(source: str, name: str) -> str | None:
    """Which step column a timer adds to (see the module docstring), or None."""
    if source == "deepspeed":
        return _DS_CATEGORY.get(name)
    if name in ("forward-compute", "backward-compute"):
        return "compute"
    if name == "batch-generator":
        return "data"
    if name in _PIPELINE or name == "all-grads-sync" or name.endswith(("all-reduce", "all-gather", "reduce-scatter")):
        return "comm"
    return None


def _timer_columns(st: _State, n_records: int) -> dict[str, np.ndarray]:
    """``compute_s``/``comm_s``/``data_wait_s`` per record; Megatron's timers before DeepSpeed's."""
    t = st.timers
    if not t.line or not n_records:
        return {}
    categories = list(_CATEGORY_COLUMN)
    code: dict[tuple[str, str], int] = {}  # (source, name) -> 2 * category + (1 for DeepSpeed), -1: none
    for key in set(zip(t.source, t.name, strict=True)):
        cat = _category(*key)
        code[key] = -1 if cat is None else 2 * categories.index(cat) + (key[0] == "deepspeed")
    codes = np.fromiter((code[k] for k in zip(t.source, t.name, strict=True)), dtype=np.int64, count=len(t.name))
    rec = np.asarray(t.rec, dtype=np.int64)
    val = np.asarray(t.value_ms, dtype=float)
    usable = (rec >= 0) & np.isfinite(val) & (codes >= 0)
    sums = np.zeros((2 * len(categories), n_records))
    counts = np.zeros((2 * len(categories), n_records), dtype=np.int64)
    np.add.at(sums, (codes[usable], rec[usable]), val[usable])
    np.add.at(counts, (codes[usable], rec[usable]), 1)
    out: dict[str, np.ndarray] = {}
    for i, category in enumerate(categories):
        meg, ds = 2 * i, 2 * i + 1
        col = np.where(counts[meg] > 0, sums[meg], np.where(counts[ds] > 0, sums[ds], np.nan)) / 1000.0
        if np.isfinite(col).any():
            out[_CATEGORY_COLUMN[category]] = col
    return out


def _steps(reader: Reader, st: _State, iv: _Intervals) -> pd.DataFrame:
    """One row per step: each record's interval expanded (its point values on the logged row)."""
    n, n_rec = timeline.within_budget(iv.n, reader), len(iv.n)
    total = int(n.sum()) if n_rec else 0
    ex = timeline.expand(iv.it, iv.n, n, iv.start, place="duration", share=iv.dur)
    rec_of_row = ex.record
    first_row = np.cumsum(n) - n
    off = ex.within + (iv.n - n)[rec_of_row]  # step of the interval, from 0
    cols: dict[str, Any] = {
        "attempt": iv.attempt[rec_of_row], "step": ex.step,
        "start_s": ex.start, "end_s": iv.start[rec_of_row] + (off + 1) * ex.share,
        "interval_steps": iv.n[rec_of_row], "logged": off == iv.n[rec_of_row] - 1,
    }
    last_row = first_row + n - 1
    interval_cols = _timer_columns(st, n_rec)
    for column, (where, got) in st.rec.fields.items():
        idx, vals = np.asarray(where, dtype=np.int64), np.asarray(got, dtype=float)
        if column in _INTERVAL_FIELDS:
            per = np.full(n_rec, np.nan)
            per[idx] = vals
            interval_cols[column] = per
            cols[column] = None  # keeps the column where it first appeared
        else:
            cols[column] = np.full(total, np.nan)
            cols[column][last_row[idx]] = vals
    for column, per in interval_cols.items():
        cols[column] = per[rec_of_row]
    steps = pd.DataFrame(cols)
    if len(steps):
        steps["rank"] = -1
        if "global_batch_size" in st.rec.fields:  # each step's batch: its own interval's line only
            where, got = st.rec.fields["global_batch_size"]
            per = np.full(n_rec, np.nan)
            per[np.asarray(where, dtype=np.int64)] = np.asarray(got, dtype=float)
            steps["samples"] = per[rec_of_row]
        keep = ("attempt", "step", "rank", "start_s", "end_s")
        steps = steps.drop(columns=[c for c in steps.columns if c not in keep and steps[c].isna().all()])
    return steps


# --- events ----------------------------------------------------------------------------------------------
def _save_events(reader: Reader, st: _State, iv: _Intervals, shift: float) -> list[dict[str, Any]]:
    """A ``checkpoint_save`` event after the step each save names (see the module docstring)."""
    events: list[dict[str, Any]] = []
    unplaced: list[str] = []
    for s in st.saves:
        j = _record_at(iv, s["attempt"], s["iteration"]) if len(iv.n) else None
        if j is None:
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
        mine = by_attempt.get(a)
        if not mine:
            continue
        t_begin = min(t for _, t in mine)
        ends = [t for label, t in mine if label.strip().startswith("before the start of training")]
        t_end = min(min(ends) if ends else first_start[a], first_start[a])
        if t_end > t_begin:
            events.append({"kind": "init", "start_s": t_begin - shift, "end_s": t_end - shift, "attempt": a,
                           "detail": "first '[...] datetime:' line to the start of training"})
    return events


# --- tables -------------------------------------------------------------------------------------------------
def _timers_table(st: _State, iv: _Intervals) -> pd.DataFrame | None:
    """The ``timers`` table: one row per logged interval per timer (ms), and the spread across ranks."""
    t = st.timers
    if not t.line:
        return None
    rec = np.asarray(t.rec, dtype=np.int64)
    keep = rec != _DROPPED
    placed = rec[keep] >= 0
    safe = np.where(placed, rec[keep], 0)
    table = pd.DataFrame({
        "attempt": np.asarray(t.attempt, dtype=np.int64)[keep],
        "step": pd.array(np.where(placed, iv.it[safe] if len(iv.it) else 0, 0), dtype="Int64"),
        "interval_steps": pd.array(np.where(placed, iv.n[safe] if len(iv.n) else 0, 0), dtype="Int64"),
        "line": np.asarray(t.line, dtype=np.int64)[keep],
        "source": np.asarray(t.source, dtype=object)[keep],
        "timer": np.asarray(t.name, dtype=object)[keep],
        "min_ms": np.asarray(t.min_ms, dtype=float)[keep],
        "max_ms": np.asarray(t.max_ms, dtype=float)[keep],
        "value_ms": np.asarray(t.value_ms, dtype=float)[keep],
    })
    table.loc[~placed, ["step", "interval_steps"]] = pd.NA
    table["spread_ms"] = table["max_ms"] - table["min_ms"]
    return table


def _tables(st: _State, iv: _Intervals, shift: float, absolute: bool) -> dict[str, pd.DataFrame]:
    tables: dict[str, pd.DataFrame] = {}
    if st.straggler:
        table = pd.DataFrame(st.straggler)
        table["time_s"] = [(t - shift) if (t is not None and absolute) else math.nan for t in table.pop("time")]
        tables["straggler"] = table
    if st.memory:
        tables["memory"] = pd.DataFrame(st.memory)
    timers = _timers_table(st, iv)
    if timers is not None:
        tables["timers"] = timers
    return tables


# --- facts and claims ------------------------------------------------------------------------------------------
def _single(reader: Reader, st: _State, name: str, what: str) -> tuple[Any, int, str] | None:
    """The one value stated for ``name`` with its line and text; several values are noted."""
    seen = st.stated.get(name)
    if not seen:
        return None
    if len(seen) > 1:
        shown = ", ".join(f"{v!r} (line {ln})" for v, (ln, _) in seen.items())
        reader.note(f"{what} is printed with different values: {shown} (several launches?); not stated as a fact")
        return None
    ((value, (line, text)),) = seen.items()
    return value, line, text


def _dtype(reader: Reader, st: _State) -> tuple[str, int, str] | None:
    """``fp8`` when set, else ``bf16``/``fp16`` when True, else ``params_dtype``."""
    for name, dtype in (("fp8", "fp8"), ("bf16", "bf16"), ("fp16", "fp16")):
        got = _single(reader, st, name, f"the {name} argument")
        if got is not None and got[0] not in ("None", "False", "false"):
            return dtype, got[1], got[2]
    got = _single(reader, st, "params_dtype", "params_dtype")
    names = {"torch.float16": "fp16", "torch.half": "fp16", "torch.bfloat16": "bf16", "torch.float32": "fp32",
             "torch.float": "fp32"}
    if got is not None and got[0] in names:
        return names[got[0]], got[1], got[2]
    return None


def _parallelism(reader: Reader, st: _State) -> tuple[dict[str, int], int, str] | None:
    sizes: dict[str, int] = {}
    where: tuple[int, str] | None = None
    for key in ("tp", "pp", "dp", "cp", "ep"):
        got = _single(reader, st, key, f"the {key} size")
        if got is None:
            continue
        sizes[key] = got[0]
        where = min(where or (got[1], got[2]), (got[1], got[2]))
    if not sizes or where is None:
        return None
    return sizes, where[0], where[1]


def _global_batch(reader: Reader, st: _State, out: Parsed) -> None:
    """The global batch of the iteration lines (one value), else of the banner."""
    at = f"{reader.name}:"
    banner = _single(reader, st, "global_batch", "global_batch_size")
    idx, vals = st.rec.fields.get("global_batch_size", ([], []))
    finite = {v for v in vals if not math.isnan(v)}
    if len(finite) > 1:
        out.extra["global_batch_varies"] = True
        reader.note(f"global batch size varies over the iteration lines ({len(finite)} values); not stated as a fact")
        return
    if finite:
        value = finite.pop()
        if rules.as_count(value) is None:
            return
        if banner is not None and banner[0] == value:
            out.fact("global_batch", float(value), f"{at}{banner[1]}", banner[2])
        else:
            first = next(i for i, v in zip(idx, vals, strict=True) if v == value)
            out.fact("global_batch", float(value), f"{at}{st.rec.line[first]}",
                     st.first_raw.get("global_batch_size", ""))
    elif banner is not None:
        out.fact("global_batch", banner[0], f"{at}{banner[1]}", banner[2])


def _facts(reader: Reader, st: _State, out: Parsed) -> None:
    at = f"{reader.name}:"
    if (got := _single(reader, st, "world_size", "the world size")) is not None:
        out.fact("n_accelerators", got[0], f"{at}{got[1]}", got[2])
        out.fact("n_ranks", got[0], f"{at}{got[1]}", got[2])
    if (got := _parallelism(reader, st)) is not None:
        out.fact("parallelism", got[0], f"{at}{got[1]}", got[2])
    _global_batch(reader, st, out)
    if (got := _single(reader, st, "micro_batch", "micro_batch_size")) is not None:
        out.fact("micro_batch", got[0], f"{at}{got[1]}", got[2])
    if (got := _single(reader, st, "seq_length", "seq_length")) is not None:
        out.fact("seq_len", got[0], f"{at}{got[1]}", got[2])
    elif "actual_seqlen" in st.rec.fields:
        idx, vals = st.rec.fields["actual_seqlen"]
        if len(set(vals)) == 1 and (n := rules.as_count(vals[0])) is not None:
            out.fact("seq_len", n, f"{at}{st.rec.line[idx[0]]}", st.first_raw.get("actual_seqlen", ""))
    if (got := _dtype(reader, st)) is not None:
        out.fact("dtype", got[0], f"{at}{got[1]}", got[2])
    if (got := _single(reader, st, "model", "the model")) is not None:
        out.fact("model", got[0], f"{at}{got[1]}", got[2])
    seen = st.ds_at or st.megatron_at
    if seen is not None:
        name = "Megatron-DeepSpeed" if st.ds_at is not None else "Megatron-LM"
        out.fact("framework", name, f"{at}{seen[0]}", seen[1])


def _claim(reader: Reader, out: Parsed, metric: str, pairs: list[tuple[float, int]], unit: str, counts: str,
           *, label: str, last: bool = False, basis: str = "steady") -> None:
    """One claim of the finite values of ``(value, line)`` pairs (median, or the last one for a running
    average), where the first of them is; the values that are not finite are noted, not dropped silently."""
    finite = [(v, ln) for v, ln in pairs if math.isfinite(v)]
    if len(finite) < len(pairs):
        reader.note(f"{len(pairs) - len(finite)} values of {label} are not finite numbers: left out of its claim")
    if not finite:
        return
    where = f"{reader.name}:{finite[0][1]}"
    if last:
        out.claim(Claim(metric, finite[-1][0], unit, counts, where, n=len(finite), statistic="last", basis=basis))
    else:
        out.claim(Claim.summarise(metric, [v for v, _ in finite], unit=unit, counts=counts, where=where, basis=basis))


def _tflops_claims(reader: Reader, st: _State, out: Parsed) -> None:
    """Megatron-DeepSpeed's ``TFLOPs``: one claim per way it was printed, each a different count."""
    idx, vals = st.rec.fields["tflops"]
    for form, counts in _TFLOPS_COUNTS.items():
        mine = [(v, st.rec.line[i]) for i, v in zip(idx, vals, strict=True) if st.tflops_form.get(i) == form]
        if mine:
            _claim(reader, out, "tflops_per_accelerator", mine, "TFLOP/s per GPU", counts, label=f"TFLOPs ({form})")


def _timer_claims(reader: Reader, st: _State, out: Parsed) -> None:
    """DeepSpeed's CurrSamplesPerSec (median) and running average (last), one pair per timer spelling."""
    neox = "samples_per_sec" in st.rec.fields or "approx_flops_per_gpu" in st.rec.fields
    tail = UNDER_MEGATRON if len(st.rec) and not neox else ""
    for form, what in TIMER_COUNTS.items():
        mine = [t for t in st.ds_timer if t[1] == form]
        if not mine:
            continue
        basis = "partial" if tail else "steady"  # under Megatron-DeepSpeed the timer spans part of a step
        if form != "running_only":
            _claim(reader, out, "samples_per_s", [(t[3], t[0]) for t in mine], "samples/s",
                   _CURR_COUNTS.format(what=what + tail), label="CurrSamplesPerSec", basis=basis)
        key = "SamplesPerSec" if form == "running_only" else "RunningAvgSamplesPerSec"
        _claim(reader, out, "samples_per_s", [(t[2], t[0]) for t in mine], "samples/s",
               _RUNNING_COUNTS.format(key=key, what=what + tail), label=key, last=True, basis=basis)


def _claims(reader: Reader, st: _State, out: Parsed) -> None:
    """The throughput the log prints about itself, median over its lines (running averages: the last)."""
    for column, (metric, unit, scale, counts) in _CLAIMS.items():
        if column not in st.rec.fields:
            continue
        idx, vals = st.rec.fields[column]
        pairs = [(v * scale, st.rec.line[i]) for i, v in zip(idx, vals, strict=True)]
        _claim(reader, out, metric, pairs, unit, counts, label=st.first_raw.get(column, column).split(":", 1)[0])
    if "tflops" in st.rec.fields:
        _tflops_claims(reader, st, out)
    _timer_claims(reader, st, out)


# --- parse -----------------------------------------------------------------------------------------------------
def _checked(reader: Reader, options: Options) -> Options:
    """The options, validated: a log interval too long or a bad tolerance is a LoadError."""
    given = options.log_interval
    if given is not None:
        value = rules.as_step(given)
        if value is None or value < 1:
            reader.fail(f"log_interval must be a positive whole number of steps; got {given!r}", field="log_interval")
        if not rules.interval_ok(value):
            reader.fail(f"log_interval={value:,} is over {rules.MAX_LOG_INTERVAL:,} steps per printed line, "
                        "too long to expand row by row; pass the interval the job used", field="log_interval")
        given = value
    tol = options.clock_tolerance_s
    if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol < 0:
        reader.fail(f"clock_tolerance_s must be a finite number of seconds >= 0; got {tol!r}",
                    field="clock_tolerance_s")
    return Options(log_interval=given, clock_tolerance_s=float(tol))


def _read(reader: Reader, opts: Options) -> _State:
    """One pass over the lines (the line classifier), then the report's notes on what it saw."""
    st = _State()
    for ln, text in reader.lines():
        if not text.strip():
            continue
        reader.report.lines_read += 1
        _classify(reader, st, opts, ln, text)
    _flush_pending(reader, st, None)
    for key, n in list(st.text_fields.items()):
        reader.note(f"field {key!r} is not a number on {n} iteration lines; left out")
    if st.columns_refused:
        reader.note(f"{st.columns_refused} values of fields beyond the first {_MAX_COLUMNS} field names left out")
    if st.other:
        reader.note(f"{st.other} lines are not iteration records (setup output, warnings, ...); ignored")
    if not len(st.rec) and not st.straggler and not st.memory and not st.timers.line:
        reader.fail("no Megatron iteration lines ('iteration N/ M | ... elapsed time per iteration') found")
    if not len(st.rec):
        reader.note("no iteration lines: only the straggler/memory/timers tables are filled")
    return st


def _extra(st: _State, iv: _Intervals, shift: float, steps: pd.DataFrame) -> dict[str, Any]:
    extra: dict[str, Any] = {"log_interval": iv.log_interval}
    if shift:
        extra["t0_wallclock"] = (datetime(1970, 1, 1) + timedelta(seconds=shift)).isoformat(sep=" ")
        extra["t0_timezone"] = "unknown (log's local time)"
    if st.loads:
        extra["resumed_from_iterations"] = list(st.loads[:1000])
    if st.load_ms:
        extra["load_checkpoint_ms"] = list(st.load_ms[:1000])
    t = st.timers
    spread: dict[str, list[float]] = {}
    for name, lo, hi, rec in zip(t.name, t.min_ms, t.max_ms, t.rec, strict=True):
        if rec != _DROPPED and not (math.isnan(lo) or math.isnan(hi)) and (name in spread or len(spread) < 64):
            spread.setdefault(name, []).append(hi - lo)
    if spread:
        extra["timer_spread_ms"] = {k: float(np.median(v)) for k, v in spread.items()}
    return extra


def _total(steps: pd.DataFrame, column: str) -> str:
    """The sum of a count column as text (a damaged count can make it huge or infinite)."""
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.nansum(steps[column])) if column in steps else 0.0
    return str(int(total)) if math.isfinite(total) and abs(total) < 2**53 else f"{total:g}"


def _step_notes(reader: Reader, steps: pd.DataFrame) -> None:
    skipped, nans = _total(steps, "skipped_iterations"), _total(steps, "nan_iterations")
    if skipped != "0" or nans != "0":
        reader.note(f"Megatron reported {skipped} skipped and {nans} nan iterations; kept as steps (they took time)")
    if len(steps) and steps["attempt"].max() > 0:
        reader.note(f"{int(steps['attempt'].max()) + 1} launches (attempts) found in one log")


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
    _step_notes(reader, steps)
    out = Parsed(
        steps=steps,
        events=_save_events(reader, st, iv, shift) + _init_events(st, iv, shift),
        tables=_tables(st, iv, shift, absolute),
        timing="interval_mean" if iv.log_interval > 1 else "duration_only",
        time_unit="ms" if st.rec.units <= {"ms"} else ",".join(sorted(st.rec.units)),
        extra=_extra(st, iv, shift, steps),
    )
    _facts(reader, st, out)
    _claims(reader, st, out)
    return out


load = loader_for(NAME)
