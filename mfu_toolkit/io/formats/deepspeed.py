"""DeepSpeed engine logs and DeepSpeed-Chat training logs (the stdout of a ``deepspeed`` launch).

What the format reads and how it maps to a :class:`~mfu_toolkit.run.Run`:

- **Engine progress**, printed by rank 0 every ``steps_per_print`` steps: ``[Rank 0] step=N, skipped=K,
  lr=[...]`` and the throughput timer's ``epoch=E/micro_step=M/global_step=N, RunningAvgSamplesPerSec=x,
  CurrSamplesPerSec=y, MemAllocated=..GB, MaxMemAllocated=..GB`` (or an older spelling; what each counts is
  :mod:`mfu_toolkit.io.throughput_timer`), paired into one record. The time between two printed records
  (the DeepSpeed logger's ``[2023-04-18 01:46:59,142]``, local time) is spread over the steps between them
  (:func:`~mfu_toolkit.io.timeline.expand`: ``interval_steps`` rows, ``logged`` marks the printing step;
  ``timing="interval_mean"``, ``"exact"`` when every step prints). The first record of a launch only
  anchors the timeline, and a ``step=0`` record printed while an engine starts is no training step. A gap
  longer than the log interval (lines lost) stays one row over the whole gap; one longer than
  :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` is also counted.
- ``skipped`` is DeepSpeed's running count of fp16-overflow steps: they ran (they cost time) but did not
  update the weights, so they stay steps; the printing row carries ``skipped_steps`` (the count in its
  interval) and ``overflow_lines`` (the ``OVERFLOW! Rank 0 Skipping step`` / ``Overflow detected. Skipping
  step`` lines printed in it; each is in the ``overflow`` table with its step). An interval with a
  DeepSpeed-Chat evaluation in it is flagged ``includes_eval``.
- Every engine record of every engine is in the ``engine`` table. When a second engine prints the same step
  right after the first (DeepSpeed-Chat step 3: actor, then critic) it is engine 1 there; only engine 0
  makes steps. A step number that does not increase, or a new launch (``cmd = ...``, ``WORLD INFO DICT``)
  after records, starts a new attempt.
- **DeepSpeed-Chat step 3** (RLHF/PPO): ``epoch: E|step: S|ppo_ep: ...|act_loss: ...`` and the phase
  breakdown ``|E2E latency=7.99s |Gather latency=... |Generate time=5.26s (65.81%) |Training time=2.52s
  (31.46%) |Others=... |CurSamplesPerSec=... |AvgSamplesPerSec=...`` (seconds). The E2E latency is the step
  (generation dominates: "training time" is one phase of it); the phases are columns (``gather_s``,
  ``generate_s``, ``training_s``, ``others_s``). These lines carry no timestamps, so the steps are placed
  back to back (``timing="duration_only"``) and the engine lines of such a log go to the ``engine`` table.
- DeepSpeed-Chat step 1/2 ``Model Parameters: ..., Latency: 0.27s, TFLOPs: ..., Samples/sec: ...`` lines
  (one per micro-batch) go to the ``dschat_throughput`` table; the comms logger's summary (``Comm. Op
  Message Size  Count  Total Latency(ms) ...``) to the ``comms`` table (sizes 1024-based, as DeepSpeed
  prints them; a negative latency or bandwidth is a counter overflow: counted, left missing). The Flops
  Profiler summary (``world size:``, ``batch size per GPU:``, ``fwd+bwd FLOPS per GPU ...``) gives facts, a
  claim and ``extra["flops_profiler"]``, as much as a block cut short has. Other lines are noise.

**Facts.** ``n_ranks`` from the launcher's ``dist_world_size=`` (processes) or the profiler's ``world
size:``; ``n_accelerators``, ``n_nodes`` and ``accelerators_per_node`` only from the launcher's device list
(``--world_info=``, base64 JSON, or ``WORLD INFO DICT``: one device per rank). ``global_batch`` from
``train_batch_size`` in the DeepSpeed config dump, else per-device batch × gradient accumulation × world
size (the fact's text says which); ``micro_batch`` (``train_micro_batch_size_per_gpu``, the profiler's
``batch size per GPU`` or ``--per_device_train_batch_size``); ``dtype`` (``fp16_enabled``/
``bfloat16_enabled``); ``parallelism`` (ZeRO stage, data and model parallel sizes: the config dump's
``world_size`` is the data-parallel size); ``seq_len``, ``model`` and ``framework`` ("DeepSpeed" or
"DeepSpeed-Chat"). **Claims**: ``samples_per_s`` (DeepSpeed-Chat's Cur/AvgSamplesPerSec; the engine's
CurrSamplesPerSec median and running average last, one pair per timer spelling, all data-parallel ranks'
samples over the printing rank's time) and ``tflops_per_accelerator`` (the profiler's, DeepSpeed-Chat's).

Megatron-DeepSpeed logs print Megatron-LM ``iteration N/ M |`` lines as well: the ``megatron`` format reads
those; this one reads only their DeepSpeed lines (and says so), and :func:`sniff` leaves them to it.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, read_head
from ..throughput_timer import TIMER_COUNTS, UNDER_MEGATRON
from ..values import number, timestamp

NAME = "deepspeed"


@dataclass(frozen=True)
class Options:
    """Options of the deepspeed format (besides the RunMeta keywords).

    ``log_interval``: steps between two printed engine lines (DeepSpeed's ``steps_per_print``).
    ``None`` (the default) takes ``steps_per_print`` from the config dump, else the most common
    gap between printed steps. An interval up to this long is spread over its steps; a longer one
    (printed lines lost) stays one row.
    """

    log_interval: int | None = None

    def __post_init__(self) -> None:
        v = self.log_interval
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= rules.MAX_LOG_INTERVAL):
            raise ValueError(f"log_interval must be a positive integer up to {rules.MAX_LOG_INTERVAL:,} or None; "
                             f"got {v!r}")


# Every capture is bounded, so no pattern backtracks over a long line more than linearly.
_TS = re.compile(r"\[(\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:[,.]\d{1,6})?)\]")
_TS_SPAN = 96  # a timestamp is looked for in the first characters of a line only
_STEP = re.compile(r"(?<![\w/])step=([^,\s]{0,64}), skipped=([^,\s]{0,64})")
_RANK = re.compile(r"\[Rank (\d{1,9})\]")
_LR = re.compile(r"\blr=\[([^\],]{0,64})")
_TIMER_NEW = re.compile(r"epoch=(\d{1,18})/micro_step=(\d{1,18})/global_step=([^,\s]{0,64})")
_TIMER_OLD = re.compile(r"(?<![\d/])(\d{1,18})/(\d{1,18}), (RunningAvg)?SamplesPerSec=")
_TIMER_KV = re.compile(
    r"\b(RunningAvgSamplesPerSec|CurrSamplesPerSec|SamplesPerSec|MemAllocated|MaxMemAllocated)=([^,\s]{0,64})")
_OVERFLOW = re.compile(
    r"(?:OVERFLOW! Rank (\d{1,9}) Skipping step|Overflow detected\. Skipping step)"
    r"\.? Attempted loss scale: ([^,\s]{0,64})")
_PPO = re.compile(r"(?<!\w)epoch: ([^|]{0,40})\|step: ([^|]{0,40})(.*)$")
_CONFIG = re.compile(r"\[config\.py:\d{1,6}:print\]\s{1,16}(\w{1,64})\s[ .]{0,200}(.{0,200})")
_WORLD_INFO = re.compile(r"--world_info=([A-Za-z0-9+/=_-]{1,65536})")
_HOSTS = re.compile(r"'([^']{0,256})':\s{0,8}\[([0-9,\s]{0,65536})\]")
_WORLD_SIZE = re.compile(r"\bdist_world_size=([^,\s]{0,64})")
_NNODES = re.compile(r"\bnnodes=([^,\s]{0,64}), num_local_procs=([^,\s]{0,64})")
_VERSION = re.compile(r"DeepSpeed info: version=([^,\s]{0,64})")
_MEGATRON_ITER = re.compile(r"\biteration(?:\s{1,64}|=\s{0,64})\d{1,18}\s{0,64}/\s{0,64}\d{1,18}\s{0,64}\|")
_PREFIX = re.compile(r"^\s{0,64}(?:\[rank\d{1,9}\]:|\d{1,6}:)\s?", re.IGNORECASE)
_SIZE = re.compile(r"(?<![0-9.])([0-9.]{1,32})([KMGTP]?B)")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{0,127}")

_EPOCH = datetime(1970, 1, 1)
_MAX_SECONDS = 1e9  # a duration longer than ~30 years is damage, not a step
_NEAR = 5  # lines: a timer line or a second engine's line belongs to the record printed just before
_ROW_BUDGET = 2_000_000  # step rows expanded from intervals; beyond it each interval is one row
_COMMS_COLUMNS = (("total_latency_ms", "Total Latency(ms)", "duration"),
                  ("avg_latency_ms", "Avg Latency(ms)", "duration"), ("tput_avg_gbps", "tput_avg (Gbps)", "value"),
                  ("busbw_avg_gbps", "busbw_avg (Gbps)", "value"))
_SIZE_UNITS = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4, "PB": 5}
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_SECONDS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_PPO_FIELDS = {"ppo_ep": "ppo_epoch", "act_loss": "act_loss", "cri_loss": "cri_loss", "unsuper_loss": "unsuper_loss"}
_E2E_FIELDS = {"E2E latency": "e2e_s", "Gather latency": "gather_s", "Generate time": "generate_s",
               "Training time": "training_s", "Others": "others_s", "CurSamplesPerSec": "cur_samples_per_s",
               "AvgSamplesPerSec": "avg_samples_per_s"}
_DSCHAT_TP = {"Model Parameters": "params_b", "Latency": "latency_s", "TFLOPs": "tflops",
              "Samples/sec": "samples_per_s", "Time/seq": "time_per_seq_s", "Batch Size": "batch_size",
              "Sequence Length": "seq_len"}
# The Flops Profiler summary's keys (deepspeed/profiling/flops_profiler/profiler.py, print_model_profile)
_PROFILER = {
    "world size": "world_size", "data parallel size": "dp_size", "model parallel size": "mp_size",
    "batch size per GPU": "batch_per_gpu", "params per gpu": "params_per_gpu", "params per GPU": "params_per_gpu",
    "params per device": "params_per_gpu", "params of model": "params_of_model",
    "fwd MACs per GPU": "fwd_macs_per_gpu", "fwd flops per GPU": "fwd_flops_per_gpu",
    "fwd flops of model": "fwd_flops_of_model", "fwd latency": "fwd_latency_s", "bwd latency": "bwd_latency_s",
    "step latency": "step_latency_s", "iter latency": "iter_latency_s", "fwd FLOPS per GPU": "fwd_flops_per_s_per_gpu",
    "bwd FLOPS per GPU": "bwd_flops_per_s_per_gpu", "fwd+bwd FLOPS per GPU": "fwd_bwd_flops_per_s_per_gpu",
    "samples/second": "samples_per_s",
}
_CONFIG_KEYS = frozenset({
    "train_batch_size", "train_micro_batch_size_per_gpu", "gradient_accumulation_steps", "fp16_enabled",
    "bfloat16_enabled", "bf16_enabled", "zero_optimization_stage", "zero_enabled", "world_size", "steps_per_print"})
_ARG_KEYS = frozenset({
    "per_device_train_batch_size", "per_device_training_batch_size", "gradient_accumulation_steps", "max_seq_len",
    "max_prompt_seq_len", "max_answer_seq_len", "model_name_or_path", "actor_model_name_or_path",
    "critic_model_name_or_path", "zero_stage", "actor_zero_stage", "critic_zero_stage"})
_STAGE_ARGS = (("zero_stage", ""), ("actor_zero_stage", "actor "), ("critic_zero_stage", "critic "))
_DSCHAT_MARKS = ("***** Running training *****", "Total Micro Batches", "Total Generation Batches", "|E2E latency=")
_LAUNCH_MARKS = ("--world_info=", "WORLD INFO DICT", "dist_world_size=", "nnodes=", "cmd = ", "exits successfully")

# --- sniffing ----------------------------------------------------------------------------------
_SNIFF_STRONG = re.compile(
    rb"(?<![\w/])step=\d{1,18}, skipped=\d{1,18}|RunningAvgSamplesPerSec=|\d/\d{1,18}, SamplesPerSec="
    rb"|OVERFLOW! Rank \d{1,9} Skipping step"
    rb"|Overflow detected\. Skipping step|DeepSpeed Flops Profiler|\|E2E latency=|DeepSpeedEngine configuration")
_SNIFF_WEAK = re.compile(
    rb"WORLD INFO DICT|dist_world_size=|deepspeed\.launcher\.launch|\] \[deepspeed\] |ds_accelerator to ")
_SNIFF_MEGATRON = re.compile(
    rb"(?i:megatron)|iteration(?:\s{1,64}|=\s{0,64})\d{1,18}\s{0,64}/\s{0,64}\d{1,18}\s{0,64}\|")
_SNIFF_SCAN = 4 << 20


def sniff(path: Path, head: bytes) -> float:
    """0.95 for DeepSpeed engine, DeepSpeed-Chat or profiler lines, 0.6 for launcher lines alone.

    A log that also prints Megatron-LM iteration lines (or names Megatron) in its first 4 MiB
    scores 0.3: it is a Megatron-DeepSpeed log, and the ``megatron`` format reads it.
    """
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    window = head
    if len(head) >= 8192 and (b"deepspeed" in head.lower() or _SNIFF_WEAK.search(head) or _SNIFF_STRONG.search(head)):
        try:
            window = read_head(p, _SNIFF_SCAN)
        except OSError:
            window = head
    strong = _SNIFF_STRONG.search(window) is not None
    if not strong and _SNIFF_WEAK.search(window) is None:
        return 0.0
    if _SNIFF_MEGATRON.search(window):
        return 0.3
    return 0.95 if strong else 0.6


# --- the scan ----------------------------------------------------------------------------------
@dataclass
class _Scan:
    """What one pass over the lines collected. ``config``, ``args``, ``launcher`` and ``profiler``
    hold ``name -> (value, line, text)``, the first statement of each."""

    reader: Reader
    launch: int = 0  # engine launches (attempts before renumbering)
    ppo_launch: int = 0
    marker: bool = False  # a launch line was seen since the last engine record
    ppo_marker: bool = False
    engine: list[dict[str, Any]] = field(default_factory=list)
    last0: dict[int, int] = field(default_factory=dict)  # rank -> last engine-0 step of this launch
    ppo: list[dict[str, Any]] = field(default_factory=list)
    overflow: list[dict[str, Any]] = field(default_factory=list)
    pending: list[dict[str, Any]] = field(default_factory=list)  # overflow lines not yet given an engine step
    pending_ppo: list[dict[str, Any]] = field(default_factory=list)
    eval_open: bool = False
    comms: list[dict[str, Any]] = field(default_factory=list)
    in_comms: bool = False
    comm_op: str | None = None
    prof_left: int = 0
    profiler: dict[str, tuple[float, int, str]] = field(default_factory=dict)
    config: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    args: dict[str, tuple[str, int, str]] = field(default_factory=dict)
    launcher: dict[str, tuple[Any, int, str]] = field(default_factory=dict)
    dschat_tp: list[dict[str, Any]] = field(default_factory=list)
    dschat_at: tuple[int, str] | None = None
    megatron: int = 0
    neox: int = 0  # of the Megatron-style iteration lines, GPT-NeoX's (its own step() per micro-batch)
    other: int = 0
    exits: int = 0
    timer_mismatch: int = 0
    version: str | None = None
    t_first: float | None = None
    prev_text: str = ""

    def where(self, line: int) -> str:
        return f"{self.reader.name}:{line}"

    def bad(self, why: str, line: int, name: str, text: str | None = None) -> None:
        self.reader.bad(why, line=line, field=name, example=None if text is None else text[:160])

    def fact(self, out: Parsed, name: str, value: Any, said: tuple[Any, int, str], text: str | None = None) -> None:
        """``out.fact`` of a value read from ``said`` (its line; its text unless ``text`` is given)."""
        out.fact(name, value, self.where(said[1]), said[2] if text is None else text)


def _stamp(scan: _Scan, ln: int, text: str, *, count: bool = True) -> float | None:
    """The line's leading ``[YYYY-mm-dd HH:MM:SS,fff]`` in seconds (naive local time, read as UTC:
    ``values.timestamp``), else None; a stamp that is no date-time is counted when ``count``."""
    m = _TS.search(text, 0, _TS_SPAN)
    if m is None:
        return None
    t = timestamp(m.group(1))
    if t is None:
        if count:
            scan.reader.bad("unreadable timestamp", line=ln, field="timestamp", example=m.group(0))
        return None
    if scan.t_first is None or t < scan.t_first:
        scan.t_first = t
    return t


def _checked(scan: _Scan, raw: str | None, ln: int, name: str, *, kind: str = "value") -> float:
    """A numeric field's value (``values.number``, Python's float grammar); NaN, counted with line
    and field, when it is not usable.

    ``kind``: ``"value"`` (finite, >= 0), ``"duration"`` (the same, a negative one is a negative
    duration), ``"any"`` (any float, NaN and infinity included: a loss may diverge).
    """
    text = (raw or "").strip()
    v = number(text, nonfinite="keep")
    if v is None:
        why = rules.MISSING_FIELD if not text else rules.NON_NUMERIC
    elif kind == "any" or (math.isfinite(v) and v >= 0 and (kind != "duration" or v <= _MAX_SECONDS)):
        return v
    else:
        why = (rules.NEGATIVE_DURATION if kind == "duration" and v < 0
               else f"{rules.VALUE_OUT_OF_RANGE} (negative or not finite)")
    scan.reader.bad(why, line=ln, field=name, example=f"{name}={text}"[:160])
    return math.nan


def _step_of(scan: _Scan, ln: int, text: str, raw: str | None, name: str, *, dup: bool = True) -> int | None:
    """A record's step number; None, counted, when it is none or (``dup``) the line repeats the one before."""
    step = rules.as_step(raw)
    if step is None or (dup and text == scan.prev_text):
        scan.bad(rules.BAD_STEP if step is None else rules.DUPLICATE, ln, name, text)
        return None
    return step


def _scan(reader: Reader) -> _Scan:
    scan = _Scan(reader)
    for ln, text in reader.lines():
        if not text.strip():
            continue
        reader.report.lines_read += 1
        if scan.t_first is None or text.lstrip().startswith("["):
            _stamp(scan, ln, text, count=False)  # the job's first event sets the time origin
        if scan.in_comms and _comms_row(scan, ln, text):
            continue
        scan.in_comms = False
        if scan.prof_left > 0:
            scan.prof_left -= 1
            if _profiler_line(scan, ln, text):
                continue
        if not _record_line(scan, ln, text) and not _context_line(scan, ln, text):
            scan.other += 1
        scan.prev_text = text
    return scan


def _record_line(scan: _Scan, ln: int, text: str) -> bool:
    """Engine, overflow and DeepSpeed-Chat step records; False when the line is none of them."""
    if "step=" in text and "skipped=" in text:
        _engine_step(scan, ln, text)
    elif "RunningAvgSamplesPerSec=" in text or ", SamplesPerSec=" in text:
        _engine_timer(scan, ln, text)
    elif "Skipping step" in text and "loss scale" in text:
        _overflow(scan, ln, text)
    elif "E2E latency=" in text:
        _e2e(scan, ln, text)
    elif "|step: " in text and "epoch: " in text:
        _ppo_step(scan, ln, text)
    elif "average reward score:" in text and scan.ppo and "e2e_s" not in scan.ppo[-1]:
        scan.ppo[-1]["reward"] = _checked(scan, text.rpartition(":")[2], ln, "average reward score", kind="any")
    elif "Model Parameters:" in text and "Latency:" in text:
        _dschat_throughput(scan, ln, text)
    else:
        return False
    if scan.dschat_at is None and ("|E2E latency=" in text or "Model Parameters:" in text):
        scan.dschat_at = (ln, text)
    return True


def _context_line(scan: _Scan, ln: int, text: str) -> bool:
    """Launcher, config, profiler, comms and DeepSpeed-Chat markers; False for noise."""
    if "Comm. Op" in text and "Latency" in text:
        scan.in_comms, scan.comm_op = True, None
    elif "DeepSpeed Flops Profiler" in text:
        scan.prof_left = 60
    elif ":print]" in text and "config.py" in text:
        if (m := _CONFIG.search(text)) is not None and m.group(1) in _CONFIG_KEYS:  # the config dump
            scan.config.setdefault(m.group(1), (m.group(2).strip(), ln, text))
    elif any(k in text for k in _LAUNCH_MARKS):
        _launcher(scan, ln, text)
    elif "DeepSpeed info: version=" in text:
        m = _VERSION.search(text)
        scan.version = scan.version or (m.group(1) if m else None)
    elif "***** Evaluating" in text:
        scan.eval_open = True
    elif any(k in text for k in _DSCHAT_MARKS):
        scan.dschat_at = scan.dschat_at or (ln, text)
    elif "iteration" in text and _MEGATRON_ITER.search(text):
        scan.megatron += 1
        scan.neox += "samples/sec:" in text or "approx flops per GPU" in text
    else:
        return False
    return True


# --- engine records ----------------------------------------------------------------------------
def _new_record(scan: _Scan, ln: int, step: int, rank: int, ts: float | None) -> dict[str, Any]:
    """A new engine record: its launch (attempt) and engine (0 unless a second engine's line)."""
    last = scan.engine[-1] if scan.engine else None
    if scan.marker and last is not None and last["launch"] == scan.launch:
        scan.launch, scan.last0 = scan.launch + 1, {}
    scan.marker = False
    engine = 0
    if (last is not None and last["launch"] == scan.launch and last["rank"] == rank and last["step"] == step
            and ln - last["line"] <= _NEAR):
        engine = last["engine"] + 1
    elif step != 0:
        if step <= scan.last0.get(rank, -1):  # the step did not increase: a new launch
            scan.launch, scan.last0 = scan.launch + 1, {}
        scan.last0[rank] = step
    rec: dict[str, Any] = {"launch": scan.launch, "engine": engine, "rank": rank, "step": step, "line": ln,
                           "ts": ts, "includes_eval": False, "overflow_lines": 0}
    if engine == 0 and step != 0:
        rec["overflow_lines"] = len(scan.pending)
        for o in scan.pending:
            o["engine_step"] = step
        scan.pending = []
        rec["includes_eval"], scan.eval_open = scan.eval_open, False
    scan.engine.append(rec)
    return rec


def _engine_step(scan: _Scan, ln: int, text: str) -> None:
    """``[Rank 0] step=N, skipped=K, lr=[...]``."""
    m = _STEP.search(text)
    if m is None:
        scan.bad(f"{rules.BAD_STEP} (unreadable engine step line)", ln, "step", text)
        return
    if (step := _step_of(scan, ln, text, m.group(1), "step")) is None:
        return
    if (skipped := rules.as_step(m.group(2))) is None:
        scan.bad(rules.NON_NUMERIC, ln, "skipped", text)
    rank_m = _RANK.search(text)
    last = scan.engine[-1] if scan.engine else None
    if (last is not None and last.get("from_timer") and "skipped" not in last and last["step"] == step
            and last["launch"] == scan.launch and ln - last["line"] <= _NEAR):
        rec = last  # the timer line came first: one record all the same
    else:
        rec = _new_record(scan, ln, step, int(rank_m.group(1)) if rank_m else 0, _stamp(scan, ln, text))
    rec["skipped"] = skipped
    lr = _LR.search(text)
    rec["learning_rate"] = _checked(scan, lr.group(1), ln, "lr") if lr else math.nan


def _engine_timer(scan: _Scan, ln: int, text: str) -> None:
    """The throughput timer's line, joined to the step record printed just before it."""
    if (m := _TIMER_NEW.search(text)) is not None:
        (epoch, micro, gstep), form = m.groups(), "global_step"
    elif (m := _TIMER_OLD.search(text)) is not None:
        epoch, gstep, running = m.groups()
        micro, form = None, "micro_step" if running else "running_only"
    else:
        scan.bad(f"{rules.BAD_STEP} (throughput-timer line without its step)", ln, "global_step", text)
        return
    if (step := _step_of(scan, ln, text, gstep, "global_step")) is None:
        return
    last = scan.engine[-1] if scan.engine else None
    if (last is not None and "timer_line" not in last and last["launch"] == scan.launch and ln - last["line"] <= _NEAR
            and not scan.marker):
        rec = last
        scan.timer_mismatch += int(rec["step"] != step)
    else:  # a timer line on its own is a record too
        rec = _new_record(scan, ln, step, 0, _stamp(scan, ln, text))
        rec["from_timer"] = True
    values = dict(_TIMER_KV.findall(text))
    running_key = "SamplesPerSec" if form == "running_only" else "RunningAvgSamplesPerSec"
    rec.update(timer_line=ln, timer_form=form, epoch=int(epoch), micro_step=int(micro) if micro is not None else None,
               timer_step=step, samples_per_s_running=_checked(scan, values.get(running_key), ln, running_key))
    # DeepSpeed before 0.7 printed the running average only: no CurrSamplesPerSec to miss
    rec["samples_per_s"] = (math.nan if form == "running_only"
                            else _checked(scan, values.get("CurrSamplesPerSec"), ln, "CurrSamplesPerSec"))
    for key, col in (("MemAllocated", "mem_allocated_gb"), ("MaxMemAllocated", "max_mem_allocated_gb")):
        if key in values:
            rec[col] = _checked(scan, values[key].removesuffix("GB"), ln, key)


def _overflow(scan: _Scan, ln: int, text: str) -> None:
    """An fp16 overflow (the step ran, the weights were not updated): attached to its step."""
    m = _OVERFLOW.search(text)
    if m is None:
        scan.other += 1
        return
    rec = {"line": ln, "ts": _stamp(scan, ln, text), "rank": int(m.group(1)) if m.group(1) else 0,
           "loss_scale": _checked(scan, m.group(2).rstrip("."), ln, "Attempted loss scale"), "engine_step": None,
           "ppo_step": None}
    scan.overflow.append(rec)
    scan.pending.append(rec)
    scan.pending_ppo.append(rec)


# --- DeepSpeed-Chat ----------------------------------------------------------------------------
def _ppo_step(scan: _Scan, ln: int, text: str) -> None:
    """``epoch: E|step: S|ppo_ep: ...|act_loss: ...`` of DeepSpeed-Chat step 3."""
    m = _PPO.search(text)
    if ((epoch := _step_of(scan, ln, text, m.group(1) if m else None, "epoch", dup=False)) is None
            or (step := _step_of(scan, ln, text, m.group(2), "step")) is None):
        return
    last = scan.ppo[-1] if scan.ppo and scan.ppo[-1]["launch"] == scan.ppo_launch else None
    offset = 0
    if last is not None and (scan.ppo_marker or (epoch, step) <= (last["epoch"], last["epoch_step"])):
        scan.ppo_launch += 1  # a relaunch, or the counters went back
    elif last is not None:  # steps count from 0 in each epoch: continue the count
        offset = last["offset"] if epoch == last["epoch"] else last["step"] + 1 - step
    scan.ppo_marker = False
    rec: dict[str, Any] = {"launch": scan.ppo_launch, "epoch": epoch, "epoch_step": step, "offset": offset,
                           "step": offset + step, "line": ln, "overflow_lines": len(scan.pending_ppo)}
    for o in scan.pending_ppo:
        o["ppo_step"] = rec["step"]
    scan.pending_ppo = []
    for part in m.group(3).split("|"):
        key, sep, value = part.partition(":")
        if sep and key.strip() in _PPO_FIELDS:
            rec[_PPO_FIELDS[key.strip()]] = _checked(scan, value, ln, key.strip(), kind="any")
    scan.ppo.append(rec)


def _e2e(scan: _Scan, ln: int, text: str) -> None:
    """The RLHF phase breakdown, joined to the step line printed before it."""
    last = scan.ppo[-1] if scan.ppo else None
    if last is None or "e2e_line" in last:
        scan.bad("E2E latency line without a DeepSpeed-Chat step line before it", ln, "E2E latency", text)
        return
    last["e2e_line"] = ln
    for part in text.split("|"):
        key, sep, value = part.partition("=")
        if (name := _E2E_FIELDS.get(key.strip()) if sep else None) is None:
            continue
        token = value.strip().split(" ", 1)[0].split("(", 1)[0]
        kind = "duration" if name.endswith("_s") and not name.endswith("per_s") else "value"
        token = token.removesuffix("s") if kind == "duration" else token
        last[name] = _checked(scan, token, ln, key.strip(), kind=kind)
    if "e2e_s" not in last:
        scan.bad(rules.MISSING_FIELD, ln, "E2E latency", text)
        last["e2e_s"] = math.nan


def _dschat_throughput(scan: _Scan, ln: int, text: str) -> None:
    """``Model Parameters: 0.331 B, Latency: 0.27s, TFLOPs: 1.02, Samples/sec: 7.28, ...``."""
    row: dict[str, Any] = {"line": ln}
    for part in text.split(", "):
        key, sep, value = part.partition(":")
        if not sep:  # "Time/seq 0.14s" has no colon
            key, _, value = part.rpartition(" ")
        if (name := _DSCHAT_TP.get(key.strip())) is None:
            continue
        token = value.strip().split(" ", 1)[0]
        token = token.removesuffix("s") if name.endswith("_s") else token
        if name != "params_b" or token != "NA":
            row[name] = _checked(scan, token, ln, key.strip())
    scan.dschat_tp.append(row)


# --- context: launcher, config, profiler, comms --------------------------------------------------
def _launcher(scan: _Scan, ln: int, text: str) -> None:
    """World size and devices from the launcher; the launch command's arguments."""
    if "exits successfully" in text:
        scan.exits += 1
        return
    if "cmd = " in text or "WORLD INFO DICT" in text:
        scan.marker = scan.ppo_marker = bool(scan.engine or scan.ppo) or scan.marker
    if "cmd = " in text:
        _arguments(scan, ln, text)
    if "--world_info=" in text:
        m = _WORLD_INFO.search(text)
        _world_info(scan, ln, text, m.group(1) if m else "")
    elif "WORLD INFO DICT" in text:
        hosts = {h: len([t for t in ids.split(",") if t.strip()]) for h, ids in _HOSTS.findall(text)}
        if hosts:
            scan.launcher.setdefault("hosts", (hosts, ln, text))
        else:
            scan.bad("unreadable WORLD INFO DICT", ln, "WORLD INFO DICT", text)
    counts = [("dist_world_size", m.group(1))] if (m := _WORLD_SIZE.search(text)) is not None else []
    if (m := _NNODES.search(text)) is not None:
        counts += [("nnodes", m.group(1)), ("num_local_procs", m.group(2))]
    for name, raw in counts:
        if (value := rules.as_count(raw)) is None:
            scan.bad(rules.VALUE_OUT_OF_RANGE, ln, name, text)
        else:
            scan.launcher.setdefault(name, (value, ln, text))


def _world_info(scan: _Scan, ln: int, text: str, token: str) -> None:
    """``--world_info=<base64 JSON {host: [device, ...]}>``, decoded without evaluating anything."""
    try:
        if not token:
            raise ValueError("empty")
        raw = base64.b64decode(token + "=" * (-len(token) % 4),
                               altchars=b"-_" if "-" in token or "_" in token else None, validate=True)
    except (binascii.Error, ValueError):
        scan.reader.bad("--world_info is not base64", line=ln, field="world_info", example=token[:120])
        return
    value, ok = scan.reader.json(raw, line=ln)
    if not ok:
        return
    if not isinstance(value, dict) or not all(isinstance(v, list) for v in value.values()) or not value:
        scan.reader.bad(f"{rules.NOT_AN_OBJECT} (--world_info is not {{host: [devices]}})", line=ln, field="world_info",
                        example=raw[:120].decode("utf-8", "replace"))
        return
    scan.launcher.setdefault("hosts", ({str(h): len(v) for h, v in value.items()}, ln, text))


def _arguments(scan: _Scan, ln: int, text: str) -> None:
    """``--name value`` / ``--name=value`` arguments of the launch command that state facts."""
    tokens = text.split()
    for i, tok in enumerate(tokens):
        name, sep, value = tok[2:].partition("=")
        if not tok.startswith("--") or name not in _ARG_KEYS or name in scan.args:
            continue
        if not sep:
            value = tokens[i + 1] if i + 1 < len(tokens) and not tokens[i + 1].startswith("--") else ""
        if value:
            scan.args[name] = (value, ln, text)
    if "main.py" in text and any(k in scan.args for k in ("model_name_or_path", "actor_model_name_or_path")):
        scan.dschat_at = scan.dschat_at or (ln, text)


def _profiler_line(scan: _Scan, ln: int, text: str) -> bool:
    """A ``key:   value unit`` line of the Flops Profiler summary (prefix ``0: `` allowed)."""
    body = _PREFIX.sub("", text, count=1).strip()
    if body.startswith("---") and scan.profiler:
        scan.prof_left = 0  # the aggregated profile follows: the summary is over
        return True
    key, sep, value = body.partition(":")
    key = " ".join(key.split("=", 1)[0].split())
    if (name := _PROFILER.get(key) if sep else None) is None:
        return False  # notation lines, or another record printed while the block was open
    parts = value.split()
    amount = _checked(scan, parts[0] if parts else "", ln, key)
    unit = parts[1] if len(parts) > 1 else ""
    if name.endswith("latency_s") and unit not in _SECONDS:
        scan.bad(f"unknown time unit {unit!r}", ln, key, text)
        return True
    scale = _SECONDS[unit] if name.endswith("latency_s") else _SI[unit[:1] if unit[:1] in "KMGTP" else ""]
    scan.profiler.setdefault(name, (amount * scale, ln, text))
    return True


def _comms_row(scan: _Scan, ln: int, text: str) -> bool:
    """A line of the comms summary: an operation name or a row; False ends the table."""
    tokens = text.split()
    if tokens and tokens[0].endswith(":") and tokens[0][:-1].isdigit():
        tokens = tokens[1:]  # launcher prefix "0:"
    if len(tokens) == 1 and _IDENT.fullmatch(tokens[0]):
        scan.comm_op = tokens[0]
        return True
    if (m := _SIZE.fullmatch(tokens[0]) if tokens else None) is not None:
        size, unit, rest = m.group(1), m.group(2), tokens[1:]
    elif len(tokens) > 1 and tokens[1] in _SIZE_UNITS:
        size, unit, rest = tokens[0], tokens[1], tokens[2:]
    else:
        return False
    if len(rest) != 5:
        return False
    if scan.comm_op is None:
        scan.bad("comms row before any operation name", ln, "Comm. Op", text)
        return True
    if (count := rules.as_step(rest[0])) is None:
        scan.bad(rules.NON_NUMERIC, ln, "Count", text)
    row = {"op": scan.comm_op, "message_size": f"{size} {unit}", "count": count, "line": ln,
           "message_bytes": _checked(scan, size, ln, "Message Size") * 1024.0 ** _SIZE_UNITS[unit]}
    for raw, (col, name, kind) in zip(rest[1:], _COMMS_COLUMNS, strict=True):
        value = number(raw, nonfinite="keep")
        if value is not None and value < 0:  # the comms logger's counters wrap: a negative total is no time
            why = rules.NEGATIVE_DURATION if kind == "duration" else rules.VALUE_OUT_OF_RANGE
            scan.bad(f"{why} (counter overflow)", ln, name, text.strip())
            row[col] = math.nan
        else:
            row[col] = _checked(scan, raw, ln, name, kind=kind)
    scan.comms.append(row)
    return True


# --- steps -------------------------------------------------------------------------------------
def _log_interval(scan: _Scan, options: Options, recs: list[dict[str, Any]]) -> tuple[int, str]:
    """The log interval and where it came from: the option, ``steps_per_print``, or the gaps."""
    if options.log_interval is not None:
        return options.log_interval, "log_interval="
    if "steps_per_print" in scan.config:
        value = rules.as_count(scan.config["steps_per_print"][0], upper=rules.MAX_LOG_INTERVAL)
        if value is not None:
            return value, "steps_per_print in the config dump"
    common = timeline.log_interval(np.array([r["step"] for r in recs], dtype=np.int64),
                                   np.array([r["launch"] for r in recs], dtype=np.int64))
    if common is None:
        return 1, "default (one printed record per launch)"
    return common, "the most common gap between printed steps"


def _intervals(scan: _Scan, recs: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(previous, this) record pairs of one launch, both timestamped, in time order."""
    timed = any(r["ts"] is not None for r in recs)
    pairs = []
    prev: dict[str, Any] | None = None
    for r in recs:
        if r["ts"] is None:
            if timed:
                scan.bad("engine step line without a timestamp (cannot be timed)", r["line"], "timestamp")
            continue
        if prev is not None and prev["launch"] == r["launch"]:
            if r["ts"] < prev["ts"]:
                scan.bad(f"{rules.NON_MONOTONIC} (earlier than the previous step line)", r["line"], "timestamp")
                continue
            pairs.append((prev, r))
        prev = r
    return pairs


def _engine_rows(scan: _Scan, options: Options, batch: float | None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """One row per step between two printed records (spread evenly), or one row per interval."""
    recs = [r for r in scan.engine if r["engine"] == 0 and r["step"] > 0]
    if not recs:
        return pd.DataFrame(), {}
    rank0 = min(r["rank"] for r in recs)  # the lowest rank that prints
    recs = [r for r in recs if r["rank"] == rank0]
    interval, source = _log_interval(scan, options, recs)
    pairs = _intervals(scan, recs)
    info: dict[str, Any] = {"log_interval": interval, "log_interval_source": source, "lost": 0, "too_long": 0,
                            "budget": False}
    n_rows, budget = [], _ROW_BUDGET  # this format's own cap, on top of the load's (rules.take_rows)
    for a, b in pairs:
        gap = b["step"] - a["step"]
        spread = gap <= interval and rules.interval_ok(gap) and gap <= budget and rules.take_rows(gap - 1)
        if not rules.interval_ok(gap):
            scan.reader.bad(rules.INTERVAL_TOO_LONG, line=b["line"], field="step")
            info["too_long"] += 1
        elif gap > interval:
            info["lost"] += 1
        elif not spread:
            info["budget"] = True
        n_rows.append(gap if spread else 1)
        budget -= n_rows[-1]
        implied = b.get("samples_per_s", math.nan) * (b["ts"] - a["ts"]) / gap
        if math.isfinite(implied) and implied > 0:
            info.setdefault("implied", []).append(implied)
    return (_expand(pairs, np.array(n_rows, dtype=np.int64), batch) if pairs else pd.DataFrame()), info


def _expand(pairs: list[tuple[dict[str, Any], dict[str, Any]]], n: np.ndarray, batch: float | None) -> pd.DataFrame:
    """``n[i]`` rows for interval ``i``, its time spread evenly (``timeline.expand`` with as many steps as rows, so
    an interval kept as one row spans its whole gap, as printed); the printed values sit on the printing row."""
    t0, t1 = (np.array([p[k]["ts"] for p in pairs], dtype=float) for k in (0, 1))
    gaps = np.array([b["step"] - a["step"] for a, b in pairs], dtype=np.int64)
    ex = timeline.expand(np.array([b["step"] for _, b in pairs], dtype=np.int64), n, n, t0, place="even", end=t1)
    i, logged = ex.record, ex.logged
    steps = pd.DataFrame({
        "attempt": np.array([b["launch"] for _, b in pairs], dtype=np.int64)[i],
        "step": ex.step,
        "rank": -1,
        "start_s": ex.start,
        "end_s": np.where(logged, t1[i], t0[i] + (ex.within + 1) * ex.share),
        "interval_steps": gaps[i],
        "logged": logged,
        "includes_eval": np.array([b["includes_eval"] for _, b in pairs], dtype=bool)[i],
    })
    if batch is not None:
        steps["samples"] = batch * np.where(n[i] == 1, gaps[i], 1)
    point = {
        "skipped_steps": [_delta(a.get("skipped"), b.get("skipped")) for a, b in pairs],
        "overflow_lines": [float(b["overflow_lines"]) for _, b in pairs],
    }
    for col in ("learning_rate", "samples_per_s", "samples_per_s_running", "mem_allocated_gb", "max_mem_allocated_gb"):
        point[col] = [b.get(col, math.nan) for _, b in pairs]
    for col, values in point.items():
        full = np.full(len(steps), math.nan)
        full[logged] = np.array(values, dtype=float)
        steps[col] = full
    return steps


def _delta(a: int | None, b: int | None) -> float:
    return float(b - a) if a is not None and b is not None and b >= a else math.nan


def _ppo_rows(scan: _Scan) -> pd.DataFrame:
    """DeepSpeed-Chat step 3: one row per PPO step, back to back from its E2E latency."""
    recs = [r for r in scan.ppo if math.isfinite(r.get("e2e_s", math.nan))]
    if not recs:
        return pd.DataFrame()
    e2e = np.array([r["e2e_s"] for r in recs])
    end = np.cumsum(e2e)
    steps = pd.DataFrame({"attempt": [r["launch"] for r in recs], "step": [r["step"] for r in recs], "rank": -1,
                          "start_s": end - e2e, "end_s": end})
    for col in ("epoch", "ppo_epoch", "act_loss", "cri_loss", "unsuper_loss", "reward", "gather_s", "generate_s",
                "training_s", "others_s", "cur_samples_per_s", "avg_samples_per_s", "overflow_lines"):
        steps[col] = [float(r.get(col, math.nan)) for r in recs]
    return steps


def _renumber(steps: pd.DataFrame) -> pd.DataFrame:
    """Attempts numbered 0, 1, ... over the launches that have rows."""
    order = {a: i for i, a in enumerate(sorted(steps["attempt"].unique()))}
    steps["attempt"] = steps["attempt"].map(order).astype(np.int64)
    return steps


# --- facts and claims --------------------------------------------------------------------------
def _world_facts(out: Parsed, scan: _Scan) -> int | None:
    """n_ranks, n_accelerators, n_nodes, accelerators_per_node; returns the world size."""
    ranks = None
    if "dist_world_size" in scan.launcher:
        ranks = scan.launcher["dist_world_size"][0]
        scan.fact(out, "n_ranks", ranks, scan.launcher["dist_world_size"])
    elif "world_size" in scan.profiler:
        ranks = rules.as_count(scan.profiler["world_size"][0])
        scan.fact(out, "n_ranks", ranks, scan.profiler["world_size"])
    if "hosts" in scan.launcher:
        said = scan.launcher["hosts"]
        hosts = said[0]
        devices = rules.as_count(sum(hosts.values()))
        scan.fact(out, "n_accelerators", devices, said)
        scan.fact(out, "n_nodes", rules.as_count(len(hosts)), said)
        if len(set(hosts.values())) == 1:
            scan.fact(out, "accelerators_per_node", rules.as_count(next(iter(hosts.values()))), said)
        ranks = ranks or devices
    elif "nnodes" in scan.launcher:
        scan.fact(out, "n_nodes", scan.launcher["nnodes"][0], scan.launcher["nnodes"])
    return ranks


def _config_count(scan: _Scan, key: str) -> tuple[int, int, str] | None:
    """A count the config dump states (``(value, line, text)``); a bad one is counted."""
    if key not in scan.config:
        return None
    raw, ln, text = scan.config[key]
    if (value := rules.as_count(raw)) is None:
        scan.bad(rules.VALUE_OUT_OF_RANGE, ln, key, text)
        return None
    return value, ln, text


def _arg_count(scan: _Scan, *keys: str) -> tuple[int, int, str] | None:
    """The first of ``keys`` the launch command gives as a count: ``(value, line, "--key value")``."""
    for key in keys:
        if key in scan.args and (value := rules.as_count(scan.args[key][0])) is not None:
            return value, scan.args[key][1], f"--{key} {value}"
    return None


def _batch_facts(out: Parsed, scan: _Scan, ranks: int | None) -> float | None:
    """global_batch and micro_batch; returns the global batch."""
    micro = (_config_count(scan, "train_micro_batch_size_per_gpu")
             or (scan.profiler["batch_per_gpu"] if "batch_per_gpu" in scan.profiler else None)
             or _arg_count(scan, "per_device_train_batch_size", "per_device_training_batch_size"))
    if micro is not None:
        scan.fact(out, "micro_batch", rules.as_count(micro[0]), micro)
    if (total := _config_count(scan, "train_batch_size")) is not None:
        scan.fact(out, "global_batch", float(total[0]), total,
                  f"train_batch_size (DeepSpeed config dump): {total[2].strip()}")
        return float(total[0])
    per, gas = _arg_count(scan, "per_device_train_batch_size"), _arg_count(scan, "gradient_accumulation_steps")
    if per is None or gas is None or ranks is None:
        return None
    scan.fact(out, "global_batch", float(per[0] * gas[0] * ranks), per,
              f"per-device batch {per[0]} × gradient accumulation {gas[0]} × world size {ranks} "
              "(--per_device_train_batch_size × --gradient_accumulation_steps × dist_world_size)")
    return float(per[0] * gas[0] * ranks)


def _model_facts(out: Parsed, scan: _Scan) -> None:
    """dtype, parallelism, seq_len, model and framework."""
    for key, dtype in (("fp16_enabled", "fp16"), ("bfloat16_enabled", "bf16"), ("bf16_enabled", "bf16")):
        if scan.config.get(key, ("",))[0] == "True":
            scan.fact(out, "dtype", dtype, scan.config[key])
            break
    _parallelism_fact(out, scan)
    seq = next((r for r in scan.dschat_tp if math.isfinite(r.get("seq_len", math.nan))), None)
    prompt, answer = _arg_count(scan, "max_prompt_seq_len"), _arg_count(scan, "max_answer_seq_len")
    if seq is not None:
        out.fact("seq_len", rules.as_count(seq["seq_len"]), scan.where(seq["line"]),
                 f"Sequence Length: {seq['seq_len']:g}")
    elif (arg := _arg_count(scan, "max_seq_len")) is not None:
        scan.fact(out, "seq_len", arg[0], arg)
    elif prompt is not None and answer is not None:
        scan.fact(out, "seq_len", prompt[0] + answer[0], prompt, f"{prompt[2]} + {answer[2]}")
    if "model_name_or_path" in scan.args:
        said = scan.args["model_name_or_path"]
        scan.fact(out, "model", said[0], said, f"--model_name_or_path {said[0]}")
    elif "actor_model_name_or_path" in scan.args:
        actor, ln, _ = scan.args["actor_model_name_or_path"]
        critic = scan.args.get("critic_model_name_or_path", ("?",))[0]
        out.fact("model", f"actor {actor}, critic {critic}", scan.where(ln),
                 f"--actor_model_name_or_path {actor} --critic_model_name_or_path {critic}")
    if scan.dschat_at is not None:
        out.fact("framework", "DeepSpeed-Chat", scan.where(scan.dschat_at[0]), scan.dschat_at[1])
    else:
        saids = [*scan.profiler.values(), *scan.launcher.values(), *scan.config.values()]
        lines = [r["line"] for r in scan.engine] + [s[1] for s in saids] + [r["line"] for r in scan.comms]
        out.fact("framework", "DeepSpeed", scan.where(min(lines, default=1)),
                 "DeepSpeed engine, launcher, config or profiler lines")


def _parallelism_fact(out: Parsed, scan: _Scan) -> None:
    """ZeRO stage and data-parallel size (config dump), else the profiler's sizes, else the ZeRO arguments."""
    if "zero_optimization_stage" in scan.config:
        said = scan.config["zero_optimization_stage"]
        dp = scan.config.get("world_size", ("",))[0]
        scan.fact(out, "parallelism", f"ZeRO stage {said[0]}" + (f", data parallel {dp}" if dp else ""), said)
    elif "dp_size" in scan.profiler or "mp_size" in scan.profiler:
        sizes = [(label, scan.profiler[key])
                 for label, key in (("data parallel", "dp_size"), ("model parallel", "mp_size"))
                 if key in scan.profiler and rules.as_count(scan.profiler[key][0]) is not None]
        if sizes:
            text = ", ".join(f"{label} {rules.as_count(v[0])}" for label, v in sizes)
            scan.fact(out, "parallelism", text, sizes[0][1])
    elif stages := [(k, who, scan.args[k]) for k, who in _STAGE_ARGS if k in scan.args]:
        scan.fact(out, "parallelism", ", ".join(f"{who}ZeRO stage {v[0]}" for _, who, v in stages), stages[0][2],
                  " ".join(f"--{k} {v[0]}" for k, _, v in stages))


# What DeepSpeed's throughput timer counts: mfu_toolkit.io.throughput_timer.
_COUNTS = {
    "ppo_cur": "DeepSpeed-Chat CurSamplesPerSec: the samples of one PPO step (all ranks) / its E2E latency",
    "ppo_avg": "DeepSpeed-Chat AvgSamplesPerSec: average since the first PPO step (the last value printed)",
    "curr": "CurrSamplesPerSec of {whose}, at each printed step: {what}",
    "running": "{key} of {whose}, the running average since the timer's start (its first 2 steps left out; the last "
               "value printed): {what}",
    "profiler": "DeepSpeed Flops Profiler: 3 × forward FLOPs per GPU / (fwd + bwd latency) at the profiled step "
                "(optimizer step excluded)",
    "dschat": "DeepSpeed-Chat print_throughput TFLOPs per micro-batch, as printed: Megatron-formula FLOPs of one "
              "device's micro-batch / (latency × world size), which reads world-size times lower than a per-GPU rate",
}


def _last(metric: str, values: list[float], unit: str, counts: str, where: str, basis: str = "steady") -> Claim | None:
    """The last finite value a framework printed (a running average) as one claim."""
    finite = [v for v in values if math.isfinite(v)]
    return (Claim(metric, finite[-1], unit, counts, where, n=len(finite), statistic="last", basis=basis)
            if finite else None)


def _timer_claims(out: Parsed, scan: _Scan, ppo: bool) -> None:
    """CurrSamplesPerSec (median) and the running average (last) of engine 0, one pair per timer line form."""
    timed = [r for r in scan.engine if r["engine"] == 0 and "timer_line" in r]
    whose = "engine 0 (the actor in DeepSpeed-Chat step 3; its training phase only)" if ppo else "the DeepSpeed engine"
    tail = UNDER_MEGATRON if scan.megatron > scan.neox else ""
    basis = "partial" if tail else "steady"  # under Megatron-DeepSpeed the timer spans part of a step
    for form, what in TIMER_COUNTS.items():
        if not (mine := [r for r in timed if r["timer_form"] == form]):
            continue
        first = scan.where(mine[0]["timer_line"])
        key = "SamplesPerSec" if form == "running_only" else "RunningAvgSamplesPerSec"
        out.claim(Claim.summarise("samples_per_s", [r["samples_per_s"] for r in mine], unit="samples/s", where=first,
                                  counts=_COUNTS["curr"].format(whose=whose, what=what + tail), basis=basis))
        out.claim(_last("samples_per_s", [r["samples_per_s_running"] for r in mine], "samples/s",
                        _COUNTS["running"].format(key=key, whose=whose, what=what + tail), first, basis))


def _claims(out: Parsed, scan: _Scan, ppo: bool) -> None:
    """What DeepSpeed and DeepSpeed-Chat say about their own throughput."""
    if steps := [r for r in scan.ppo if "e2e_line" in r]:
        first = scan.where(steps[0]["e2e_line"])
        cur = [r.get("cur_samples_per_s", math.nan) for r in steps]
        out.claim(Claim.summarise("samples_per_s", cur, unit="samples/s", counts=_COUNTS["ppo_cur"], where=first))
        avg = [r.get("avg_samples_per_s", math.nan) for r in steps]
        out.claim(_last("samples_per_s", avg, "samples/s", _COUNTS["ppo_avg"], first))
    _timer_claims(out, scan, ppo)
    if "fwd_bwd_flops_per_s_per_gpu" in scan.profiler:
        value, ln, _ = scan.profiler["fwd_bwd_flops_per_s_per_gpu"]
        out.claim(Claim.summarise("tflops_per_accelerator", [value / 1e12], unit="TFLOP/s per GPU",
                                  counts=_COUNTS["profiler"], where=scan.where(ln)))
    if tp := [r for r in scan.dschat_tp if math.isfinite(r.get("tflops", math.nan))]:
        out.claim(Claim.summarise("tflops_per_accelerator", [r["tflops"] for r in tp],
                                  unit="TFLOP/s per GPU (as printed)", counts=_COUNTS["dschat"],
                                  where=scan.where(tp[0]["line"])))


# --- the Run's parts ---------------------------------------------------------------------------
def _tables(scan: _Scan, t0: float, ppo: bool) -> dict[str, pd.DataFrame]:
    tables: dict[str, pd.DataFrame] = {}
    if scan.engine:
        eng = pd.DataFrame(scan.engine)
        eng["time_s"] = pd.to_numeric(eng.pop("ts"), errors="coerce") - t0
        tables["engine"] = eng.drop(columns=["from_timer"], errors="ignore").rename(columns={"launch": "attempt"})
    if scan.overflow:
        ov = pd.DataFrame(scan.overflow)
        ov["time_s"] = pd.to_numeric(ov.pop("ts"), errors="coerce") - t0
        ov["step"] = pd.to_numeric(ov.pop("ppo_step" if ppo else "engine_step"), errors="coerce").astype("Int64")
        tables["overflow"] = ov.drop(columns=["engine_step", "ppo_step"], errors="ignore")
    if scan.comms:
        tables["comms"] = pd.DataFrame(scan.comms)
    if scan.dschat_tp:
        tables["dschat_throughput"] = pd.DataFrame(scan.dschat_tp)
    return tables


def _notes(scan: _Scan, info: dict[str, Any], out: Parsed, ppo: bool, batch: float | None) -> None:
    note = scan.reader.note
    if scan.megatron:
        note(f"{scan.megatron} Megatron-LM iteration lines (a Megatron-DeepSpeed log): this format reads only its "
             "DeepSpeed lines; load it with format='megatron' for the iteration lines")
    if info.get("lost"):
        note(f"{info['lost']} intervals between printed steps are longer than the log interval "
             f"({info['log_interval']}): lines lost; each kept as one row")
    if info.get("budget"):
        note(f"more than {_ROW_BUDGET:,} steps: the later intervals are kept as one row each (interval_steps)")
    if scan.engine and not ppo:
        note("the first printed step of each launch anchors the timeline: "
             "the steps before it have no start time and are not rows"
             + ("; step=0 lines (printed when an engine starts) are not training steps"
                if any(r["step"] == 0 for r in scan.engine) else ""))
    if scan.timer_mismatch:
        note(f"{scan.timer_mismatch} throughput-timer lines count steps from this launch "
             "(global_step differs from the engine's step=)")
    if unpaired := [r for r in scan.ppo if "e2e_line" not in r]:
        note(f"{len(unpaired)} DeepSpeed-Chat step lines have no E2E latency line after them (the run ended?): "
             f"no duration, not rows (first: step {unpaired[0]['step']} at line {unpaired[0]['line']})")
    if ppo:
        note("DeepSpeed-Chat lines carry no timestamps: PPO steps are placed back to back from their E2E latency")
    if any(o["engine_step"] is None and o["ppo_step"] is None for o in scan.overflow):
        note("overflow lines after the last step record are attached to no step")
    stated = {f.name for f in out.facts}
    if "n_ranks" in stated and "n_accelerators" not in stated:
        note("the log states the number of ranks (processes), not of devices; DeepSpeed runs one rank per device as a "
             "rule: pass n_accelerators= if so")
    if scan.overflow and "dtype" not in stated:
        note("fp16 loss-scaler lines (OVERFLOW/Overflow detected) imply fp16 mixed precision; "
             "the dtype itself is not stated")
    if info.get("implied"):  # CurrSamplesPerSec × the wall time per step: the batch DeepSpeed's timer implies
        implied = float(median(info["implied"]))
        of = f" (train_batch_size {batch:g})" if batch is not None else " (the global batch is not stated)"
        note(f"cross-check, not a fact: CurrSamplesPerSec × seconds per step between printed lines is "
             f"{implied:.1f} samples per step{of}; DeepSpeed's timer leaves out data loading, "
             "and older releases count a different batch")
        info["implied_global_batch"] = round(implied, 3)
    if scan.other:
        note(f"{scan.other} lines are not DeepSpeed records (setup output, per-rank warnings, ...); ignored")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a DeepSpeed or DeepSpeed-Chat log; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the deepspeed format reads one log file")
    scan = _scan(reader)
    if not (scan.engine or scan.ppo or scan.comms or scan.profiler or scan.launcher or scan.config or scan.dschat_tp):
        hint = (f"; it has {scan.megatron} Megatron-LM iteration lines: load it with format='megatron'"
                if scan.megatron else "")
        reader.fail("no DeepSpeed records found (engine 'step=N, skipped=K' or 'RunningAvgSamplesPerSec=' lines, "
                    "DeepSpeed-Chat step lines, a flops-profiler summary, a comms table or launcher lines)" + hint)
    out = Parsed()
    batch = _batch_facts(out, scan, _world_facts(out, scan))
    _model_facts(out, scan)
    ppo = any("e2e_line" in r for r in scan.ppo)
    info: dict[str, Any] = {}
    t0 = scan.t_first if scan.t_first is not None else 0.0
    if ppo:
        steps = _ppo_rows(scan)
        out.timing, out.time_unit = "duration_only", "s"
    else:
        steps, info = _engine_rows(scan, options, batch)
        if len(steps):
            steps["start_s"] -= t0
            steps["end_s"] -= t0
            out.timing = "interval_mean" if (steps["interval_steps"] > 1).any() else "exact"
            out.time_unit = "epoch_s"
    out.steps = _renumber(steps) if len(steps) else None
    _claims(out, scan, ppo)
    out.tables = _tables(scan, t0, ppo)
    _notes(scan, info, out, ppo, batch)
    out.extra.update(_extra(scan, info, t0))
    return out


def _extra(scan: _Scan, info: dict[str, Any], t0: float) -> dict[str, Any]:
    extra = {k: info[k] for k in ("log_interval", "log_interval_source", "implied_global_batch") if k in info}
    if scan.t_first is not None:
        extra["t0_wallclock"] = (_EPOCH + timedelta(seconds=t0)).isoformat(sep=" ")
        extra["t0_timezone"] = "unknown (the log's local time)"
    if scan.version:
        extra["deepspeed_version"] = scan.version
    if scan.exits:
        extra["launcher_processes_exited"] = scan.exits
    if scan.overflow:
        extra["overflow_lines"] = len(scan.overflow)
    if skipped := [r["skipped"] for r in scan.engine if r["engine"] == 0 and r.get("skipped") is not None]:
        extra["skipped_steps_last_printed"] = skipped[-1]
    if scan.profiler:
        extra["flops_profiler"] = {k: v[0] for k, v in scan.profiler.items()}
    return extra


load = loader_for(NAME)
