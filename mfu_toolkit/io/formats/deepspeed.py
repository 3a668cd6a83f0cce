"""DeepSpeed engine logs and DeepSpeed-Chat training logs (the stdout of a ``deepspeed`` launch).

Each kind of line is a row of :data:`LINES`, read by the shared dispatcher (:mod:`mfu_toolkit.io.lines`); the
launcher, config-dump, Flops Profiler and comms lines, which Megatron-DeepSpeed logs print too, by the rows of
:mod:`mfu_toolkit.io.deepspeed_runtime`, and the throughput timer's line by :mod:`mfu_toolkit.io.throughput_timer`.
What the format reads and how it maps to a :class:`~mfu_toolkit.run.Run`:

- **Engine progress**, printed by rank 0 every ``steps_per_print`` steps: ``[Rank 0] step=N, skipped=K,
  lr=[...]`` and the throughput timer's ``epoch=E/micro_step=M/global_step=N, RunningAvgSamplesPerSec=x,
  CurrSamplesPerSec=y, MemAllocated=..GB, MaxMemAllocated=..GB`` (or an older spelling; what each counts is
  :mod:`mfu_toolkit.io.throughput_timer`), paired into one record. The time between two printed records
  (the DeepSpeed logger's ``[2023-04-18 01:46:59,142]``, local time; after a progress bar on the same line, as
  tqdm draws its bar with no newline, the stamp that opens the logger's ``[time] [LEVEL]``) is spread over the
  steps between them
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

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np
import pandas as pd

from ...run import InputRequest
from .. import rules, timeline
from ..base import Parsed, loader_for
from ..deepspeed_runtime import RUNTIME_LINES, Runtime, checked, world_facts
from ..lines import At, Handler, Line, claim, read
from ..reading import Reader, read_head
from ..throughput_timer import ENGINE, running_key, timer_line
from ..throughput_timer import claims as timer_claims
from ..values import timestamp

NAME = "deepspeed"
UNREADABLE_TIMESTAMP = "unreadable timestamp"
E2E_WITHOUT_STEP = "E2E latency line without a DeepSpeed-Chat step line before it"
UNTIMED_STEP = "engine step line without a timestamp (cannot be timed)"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


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
# ... or where the logger's record opens later in the line (tqdm's bar before it): the stamp and the level tag
_RECORD = re.compile(_TS.pattern + r" \[(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)\]")
_STEP = re.compile(r"(?<![\w/])step=([^,\s]{0,64}), skipped=([^,\s]{0,64})")
_RANK = re.compile(r"\[Rank (\d{1,9})\]")
_LR = re.compile(r"\blr=\[([^\],]{0,64})")
_OVERFLOW = re.compile(
    r"(?:OVERFLOW! Rank (\d{1,9}) Skipping step|Overflow detected\. Skipping step)"
    r"\.? Attempted loss scale: ([^,\s]{0,64})")
_PPO = re.compile(r"(?<!\w)epoch: ([^|]{0,40})\|step: ([^|]{0,40})(.*)$")
_VERSION = re.compile(r"DeepSpeed info: version=([^,\s]{0,64})")
_MEGATRON_ITER = re.compile(r"\biteration(?:\s{1,64}|=\s{0,64})\d{1,18}\s{0,64}/\s{0,64}\d{1,18}\s{0,64}\|")

_EPOCH = datetime(1970, 1, 1)
_NEAR = 5  # lines: a timer line or a second engine's line belongs to the record printed just before
_ROW_BUDGET = 2_000_000  # step rows expanded from intervals; beyond it each interval is one row
_PPO_FIELDS = {"ppo_ep": "ppo_epoch", "act_loss": "act_loss", "cri_loss": "cri_loss", "unsuper_loss": "unsuper_loss"}
_E2E_FIELDS = {"E2E latency": "e2e_s", "Gather latency": "gather_s", "Generate time": "generate_s",
               "Training time": "training_s", "Others": "others_s", "CurSamplesPerSec": "cur_samples_per_s",
               "AvgSamplesPerSec": "avg_samples_per_s"}
_DSCHAT_TP = {"Model Parameters": "params_b", "Latency": "latency_s", "TFLOPs": "tflops",
              "Samples/sec": "samples_per_s", "Time/seq": "time_per_seq_s", "Batch Size": "batch_size",
              "Sequence Length": "seq_len"}
_ARG_KEYS = frozenset({
    "per_device_train_batch_size", "per_device_training_batch_size", "gradient_accumulation_steps", "max_seq_len",
    "max_prompt_seq_len", "max_answer_seq_len", "model_name_or_path", "actor_model_name_or_path",
    "critic_model_name_or_path", "zero_stage", "actor_zero_stage", "critic_zero_stage"})
_STAGE_ARGS = (("zero_stage", ""), ("actor_zero_stage", "actor "), ("critic_zero_stage", "critic "))
_DSCHAT_MARKS = ("***** Running training *****", "Total Micro Batches", "Total Generation Batches")  # E2E: a record

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


# --- what the lines gather ------------------------------------------------------------------------
class _Scan:
    """What one pass over the lines gathers, and where the launch stands (``runtime``: what the launcher, config
    dump, profiler and comms lines state, see :mod:`mfu_toolkit.io.deepspeed_runtime`)."""

    def __init__(self, reader: Reader) -> None:
        self.reader = reader
        self.launch = self.ppo_launch = 0  # engine and DeepSpeed-Chat launches (attempts before renumbering)
        self.marker = self.ppo_marker = False  # a launch line was seen since the last engine / PPO record
        self.engine: list[dict[str, Any]] = []
        self.last0: dict[int, int] = {}  # rank -> last engine-0 step of this launch
        self.ppo: list[dict[str, Any]] = []
        self.overflow: list[dict[str, Any]] = []
        self.pending: list[dict[str, Any]] = []  # overflow lines not yet given an engine step
        self.pending_ppo: list[dict[str, Any]] = []  # nor a PPO step
        self.dschat_tp: list[dict[str, Any]] = []
        self.runtime = Runtime(reader, _ARG_KEYS, self.launched)  # launcher, config dump, profiler, comms
        self.eval_open = False
        self.dschat_at: tuple[int, str] | None = None
        self.megatron = self.neox = 0  # Megatron-style iteration lines; of them GPT-NeoX's (step() per micro-batch)
        self.other = self.timer_mismatch = 0
        self.version: str | None = None
        self.t_first: float | None = None
        self.prev_text = self.text = ""  # the last line that went on to the record rows before this one; this one

    def launched(self, at: At) -> None:
        """A launch line (``cmd = ...``, ``WORLD INFO DICT``): after records, the next one starts an attempt; the
        command of DeepSpeed-Chat's ``main.py`` names its framework."""
        self.marker = self.ppo_marker = bool(self.engine or self.ppo) or self.marker
        args = self.runtime.args
        if "cmd = " in at.text and "main.py" in at.text and ("model_name_or_path" in args
                                                            or "actor_model_name_or_path" in args):
            self.dschat_at = self.dschat_at or (at.ln, at.text)

    def where(self, line: int) -> str:
        return f"{self.reader.name}:{line}"

    def bad(self, why: str, line: int, name: str, text: str | None = None, detail: str | None = None) -> None:
        self.reader.bad(why, line=line, field=name, example=None if text is None else text[:160], detail=detail)

    def fact(self, out: Parsed, name: str, value: Any, said: tuple[Any, int, str], text: str | None = None) -> None:
        """``out.fact`` of a value read from ``said`` (its line; its text unless ``text`` is given)."""
        out.fact(name, value, self.where(said[1]), said[2] if text is None else text)


def _stamp(scan: _Scan, ln: int, text: str, *, count: bool = True) -> float | None:
    """The line's leading ``[YYYY-mm-dd HH:MM:SS,fff]`` (or, after a progress bar, the one that opens the logger's
    record) in seconds (naive local time, read as UTC: ``values.timestamp``), else None; a stamp that is no
    date-time is counted when ``count``."""
    m = _TS.search(text, 0, _TS_SPAN) or _RECORD.search(text)
    if m is None:
        return None
    t = timestamp(m.group(1))
    if t is None:
        if count:
            scan.reader.bad(UNREADABLE_TIMESTAMP, line=ln, field="timestamp", example=m.group(0))
        return None
    if scan.t_first is None or t < scan.t_first:
        scan.t_first = t
    return t


def _step_of(scan: _Scan, ln: int, text: str, raw: str | None, name: str, *, dup: bool = True) -> int | None:
    """A record's step number; None, counted, when it is none or (``dup``) the line repeats the one before."""
    step = rules.as_step(raw)
    if step is None or (dup and text == scan.prev_text):
        scan.bad(rules.BAD_STEP if step is None else rules.DUPLICATE, ln, name, text)
        return None
    return step


# --- LINES: every line first, then the records ------------------------------------------------------------------
def _each(scan: _Scan, at: At, m: None) -> bool:
    """Every line: a stamp sets the time origin (the job's first event); a row of an open comms table or a line of
    an open profiler summary is read here; any other line goes on to the rows below (as ``scan.text``)."""
    text = at.text
    if scan.t_first is None or text.lstrip().startswith("["):
        _stamp(scan, at.ln, text, count=False)
    if (scan.runtime.in_comms or scan.runtime.prof_left > 0) and scan.runtime.block(at):
        return True
    scan.prev_text, scan.text = scan.text, text
    return False


def _record(read_line: Callable[[_Scan, int, str], bool | None], *also: str) -> Handler:
    """A record row's handler: ``read_line(scan, ln, text)`` reads the line if it holds one of ``also`` (when given;
    a False result: not this row's line after all); the first DeepSpeed-Chat record line is kept (``framework``)."""

    def handler(scan: _Scan, at: At, m: None) -> bool:
        text = at.text
        for needle in also:  # a plain loop: cheaper than any() of a generator
            if needle in text:
                break
        else:
            if also:
                return False
        if read_line(scan, at.ln, text) is False:
            return False
        if scan.dschat_at is None and ("|E2E latency=" in text or "Model Parameters:" in text):
            scan.dschat_at = (at.ln, text)
        return True

    return handler


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
        scan.bad(rules.BAD_STEP, ln, "step", text, "unreadable engine step line")
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
    rec["learning_rate"] = checked(scan.reader, lr.group(1), ln, "lr") if lr else math.nan


def _engine_timer(scan: _Scan, ln: int, text: str) -> None:
    """The throughput timer's line (``throughput_timer.timer_line``), joined to the step record printed just before."""
    if (timed := timer_line(text)) is None:
        scan.bad(rules.BAD_STEP, ln, "global_step", text, "throughput-timer line without its step")
        return
    if (step := _step_of(scan, ln, text, timed.step, "global_step")) is None:
        return
    last = scan.engine[-1] if scan.engine else None
    if (last is not None and "timer_line" not in last and last["launch"] == scan.launch and ln - last["line"] <= _NEAR
            and not scan.marker):
        rec = last
        scan.timer_mismatch += int(rec["step"] != step)
    else:  # a timer line on its own is a record too
        rec = _new_record(scan, ln, step, 0, _stamp(scan, ln, text))
        rec["from_timer"] = True
    form, values, key = timed.form, timed.rates, running_key(timed.form)
    rec.update(timer_line=ln, timer_form=form, epoch=timed.epoch, micro_step=timed.micro_step, timer_step=step,
               samples_per_s_running=checked(scan.reader, values.get(key), ln, key))
    # DeepSpeed before 0.7 printed the running average only: no CurrSamplesPerSec to miss
    rec["samples_per_s"] = (math.nan if form == "running_only"
                            else checked(scan.reader, values.get("CurrSamplesPerSec"), ln, "CurrSamplesPerSec"))
    for key, col in (("MemAllocated", "mem_allocated_gb"), ("MaxMemAllocated", "max_mem_allocated_gb")):
        if key in values:
            rec[col] = checked(scan.reader, values[key].removesuffix("GB"), ln, key)


def _overflow(scan: _Scan, ln: int, text: str) -> None:
    """An fp16 overflow (the step ran, the weights were not updated): attached to its step."""
    m = _OVERFLOW.search(text)
    if m is None:
        scan.other += 1
        return
    rec = {"line": ln, "ts": _stamp(scan, ln, text), "rank": int(m.group(1)) if m.group(1) else 0,
           "loss_scale": checked(scan.reader, m.group(2).rstrip("."), ln, "Attempted loss scale"), "engine_step": None,
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
            rec[_PPO_FIELDS[key.strip()]] = checked(scan.reader, value, ln, key.strip(), kind="any")
    scan.ppo.append(rec)


def _reward(scan: _Scan, ln: int, text: str) -> bool:
    """``average reward score: x``, of the PPO step printed before it (while it has no E2E latency line yet)."""
    if not scan.ppo or "e2e_s" in scan.ppo[-1]:
        return False
    scan.ppo[-1]["reward"] = checked(scan.reader, text.rpartition(":")[2], ln, "average reward score", kind="any")
    return True


def _e2e(scan: _Scan, ln: int, text: str) -> None:
    """The RLHF phase breakdown, joined to the step line printed before it."""
    last = scan.ppo[-1] if scan.ppo else None
    if last is None or "e2e_line" in last:
        scan.bad(E2E_WITHOUT_STEP, ln, "E2E latency", text)
        return
    last["e2e_line"] = ln
    for part in text.split("|"):
        key, sep, value = part.partition("=")
        if (name := _E2E_FIELDS.get(key.strip()) if sep else None) is None:
            continue
        token = value.strip().split(" ", 1)[0].split("(", 1)[0]
        kind = "duration" if name.endswith("_s") and not name.endswith("per_s") else "value"
        token = token.removesuffix("s") if kind == "duration" else token
        last[name] = checked(scan.reader, token, ln, key.strip(), kind=kind)
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
            row[name] = checked(scan.reader, token, ln, key.strip())
    scan.dschat_tp.append(row)


# --- LINES: markers (the launcher, config dump, profiler and comms rows: deepspeed_runtime.RUNTIME_LINES) --------
def _marks(scan: _Scan, at: At, m: None) -> bool:
    """The version (``DeepSpeed info: version=``), an evaluation (``***** Evaluating``: the next engine record's
    interval includes it) or a DeepSpeed-Chat marker; read even when it says nothing more."""
    text = at.text
    if "DeepSpeed info: version=" in text:
        m = _VERSION.search(text)
        scan.version = scan.version or (m.group(1) if m else None)
    elif "***** Evaluating" in text:
        scan.eval_open = True
    else:
        scan.dschat_at = scan.dschat_at or (at.ln, text)
    return True


def _megatron_line(scan: _Scan, at: At, m: None) -> bool:
    """A Megatron-LM ``iteration N/ M |`` line (the megatron format reads it), counted; GPT-NeoX's apart."""
    scan.megatron += 1
    scan.neox += "samples/sec:" in at.text or "approx flops per GPU" in at.text
    return True


# The line table (mfu_toolkit.io.lines): the first row that reads a line ends its dispatch. Records first, then
# what states the job; a line no row reads is noise (counted in a note). The engine's wall_clock_breakdown timers
# ('[Rank 0] time (ms) | fwd: ...') are such noise here: mfu_toolkit.io.timers.TIMER_LINES would read them.
LINES = (
    Line(None, None, _each),
    Line("skipped=", None, _record(_engine_step, "step=")),
    Line("SamplesPerSec=", None, _record(_engine_timer, "RunningAvgSamplesPerSec=", ", SamplesPerSec=")),
    Line("Skipping step", None, _record(_overflow, "loss scale")),
    Line("E2E latency=", None, _record(_e2e)),
    Line("|step: ", None, _record(_ppo_step, "epoch: ")),
    Line("average reward score:", None, _record(_reward)),
    Line("Model Parameters:", None, _record(_dschat_throughput, "Latency:")),
    *RUNTIME_LINES,
    Line(("DeepSpeed info: version=", "***** Evaluating", *_DSCHAT_MARKS), None, _marks),
    Line("iteration", _MEGATRON_ITER, _megatron_line),
)


# --- steps -------------------------------------------------------------------------------------
def _log_interval(scan: _Scan, options: Options, recs: list[dict[str, Any]]) -> tuple[int, str]:
    """The log interval and where it came from: the option, ``steps_per_print``, or the gaps."""
    if options.log_interval is not None:
        return options.log_interval, "log_interval="
    if "steps_per_print" in (config := scan.runtime.config):
        value = rules.as_count(config["steps_per_print"][0], upper=rules.MAX_LOG_INTERVAL)
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
                scan.bad(UNTIMED_STEP, r["line"], "timestamp")
            continue
        if prev is not None and prev["launch"] == r["launch"]:
            if r["ts"] < prev["ts"]:
                scan.bad(rules.NON_MONOTONIC, r["line"], "timestamp", detail="earlier than the previous step line")
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
def _batch_facts(out: Parsed, scan: _Scan, ranks: int | None) -> float | None:
    """global_batch and micro_batch; returns the global batch."""
    rt = scan.runtime
    micro = (rt.config_count("train_micro_batch_size_per_gpu") or rt.profiler.get("batch_per_gpu")
             or rt.arg_count("per_device_train_batch_size", "per_device_training_batch_size"))
    if micro is not None:
        scan.fact(out, "micro_batch", rules.as_count(micro[0]), micro)
    if (total := rt.config_count("train_batch_size")) is not None:
        scan.fact(out, "global_batch", float(total[0]), total,
                  f"train_batch_size (DeepSpeed config dump): {total[2].strip()}")
        return float(total[0])
    per, gas = rt.arg_count("per_device_train_batch_size"), rt.arg_count("gradient_accumulation_steps")
    if per is None or gas is None or ranks is None:
        return None
    scan.fact(out, "global_batch", float(per[0] * gas[0] * ranks), per,
              f"per-device batch {per[0]} × gradient accumulation {gas[0]} × world size {ranks} "
              "(--per_device_train_batch_size × --gradient_accumulation_steps × dist_world_size)")
    return float(per[0] * gas[0] * ranks)


def _model_facts(out: Parsed, scan: _Scan) -> None:
    """dtype, parallelism, seq_len, model and framework."""
    rt, args = scan.runtime, scan.runtime.args
    for key, dtype in (("fp16_enabled", "fp16"), ("bfloat16_enabled", "bf16"), ("bf16_enabled", "bf16")):
        if rt.config.get(key, ("",))[0] == "True":
            scan.fact(out, "dtype", dtype, rt.config[key])
            break
    _parallelism_fact(out, scan)
    seq = next((r for r in scan.dschat_tp if math.isfinite(r.get("seq_len", math.nan))), None)
    prompt, answer = rt.arg_count("max_prompt_seq_len"), rt.arg_count("max_answer_seq_len")
    if seq is not None:
        out.fact("seq_len", rules.as_count(seq["seq_len"]), scan.where(seq["line"]),
                 f"Sequence Length: {seq['seq_len']:g}")
    elif (arg := rt.arg_count("max_seq_len")) is not None:
        scan.fact(out, "seq_len", arg[0], arg)
    elif prompt is not None and answer is not None:
        scan.fact(out, "seq_len", prompt[0] + answer[0], prompt, f"{prompt[2]} + {answer[2]}")
    if "model_name_or_path" in args:
        said = args["model_name_or_path"]
        scan.fact(out, "model", said[0], said, f"--model_name_or_path {said[0]}")
    elif "actor_model_name_or_path" in args:
        actor, ln, _ = args["actor_model_name_or_path"]
        critic = args.get("critic_model_name_or_path", ("?",))[0]
        out.fact("model", f"actor {actor}, critic {critic}", scan.where(ln),
                 f"--actor_model_name_or_path {actor} --critic_model_name_or_path {critic}")
    if scan.dschat_at is not None:
        out.fact("framework", "DeepSpeed-Chat", scan.where(scan.dschat_at[0]), scan.dschat_at[1])
    else:
        saids = [*rt.profiler.values(), *rt.launcher.values(), *rt.config.values()]
        lines = [r["line"] for r in scan.engine] + [s[1] for s in saids] + [r["line"] for r in rt.comms]
        out.fact("framework", "DeepSpeed", scan.where(min(lines, default=1)),
                 "DeepSpeed engine, launcher, config or profiler lines")


def _parallelism_fact(out: Parsed, scan: _Scan) -> None:
    """ZeRO stage and data-parallel size (config dump), else the profiler's sizes, else the ZeRO arguments."""
    config, profiler, args = scan.runtime.config, scan.runtime.profiler, scan.runtime.args
    if "zero_optimization_stage" in config:
        said = config["zero_optimization_stage"]
        dp = config.get("world_size", ("",))[0]
        scan.fact(out, "parallelism", f"ZeRO stage {said[0]}" + (f", data parallel {dp}" if dp else ""), said)
    elif "dp_size" in profiler or "mp_size" in profiler:
        sizes = [(label, profiler[key]) for label, key in (("data parallel", "dp_size"), ("model parallel", "mp_size"))
                 if key in profiler and rules.as_count(profiler[key][0]) is not None]
        if sizes:
            text = ", ".join(f"{label} {rules.as_count(v[0])}" for label, v in sizes)
            scan.fact(out, "parallelism", text, sizes[0][1])
    elif stages := [(k, who, args[k]) for k, who in _STAGE_ARGS if k in args]:
        scan.fact(out, "parallelism", ", ".join(f"{who}ZeRO stage {v[0]}" for _, who, v in stages), stages[0][2],
                  " ".join(f"--{k} {v[0]}" for k, _, v in stages))


# What DeepSpeed-Chat and the profiler count (the throughput timer's: mfu_toolkit.io.throughput_timer).
_COUNTS = {
    "ppo_cur": "DeepSpeed-Chat CurSamplesPerSec: the samples of one PPO step (all ranks) / its E2E latency",
    "ppo_avg": "DeepSpeed-Chat AvgSamplesPerSec: average since the first PPO step (the last value printed)",
    "profiler": "DeepSpeed Flops Profiler: 3 × forward FLOPs per GPU / (fwd + bwd latency) at the profiled step "
                "(optimizer step excluded)",
    "dschat": "DeepSpeed-Chat print_throughput TFLOPs per micro-batch, as printed: Megatron-formula FLOPs of one "
              "device's micro-batch / (latency × world size), which reads world-size times lower than a per-GPU rate",
}


def _claim(out: Parsed, scan: _Scan, metric: str, values: list[float], unit: str, key: str, line: int,
           last: bool = False) -> None:
    """One claim of the finite ``values`` (their median, or the last printed: a running average) at ``line``."""
    claim(scan.reader, out, metric, [(v, line) for v in values if math.isfinite(v)], unit, _COUNTS[key], label=metric,
          last=last)


def _claims(out: Parsed, scan: _Scan, ppo: bool) -> None:
    """What DeepSpeed and DeepSpeed-Chat say about their own throughput; the engine's timer, one pair of claims per
    spelling (all data-parallel ranks' samples over the printing rank's time)."""
    if steps := [r for r in scan.ppo if "e2e_line" in r]:
        first = steps[0]["e2e_line"]
        _claim(out, scan, "samples_per_s", [r.get("cur_samples_per_s", math.nan) for r in steps], "samples/s",
               "ppo_cur", first)
        _claim(out, scan, "samples_per_s", [r.get("avg_samples_per_s", math.nan) for r in steps], "samples/s",
               "ppo_avg", first, last=True)
    timed = [(r["timer_line"], r["timer_form"], r["samples_per_s_running"], r["samples_per_s"])
             for r in scan.engine if r["engine"] == 0 and "timer_line" in r]
    timer_claims(scan.reader, out, timed, at_first=True, under_megatron=scan.megatron > scan.neox,
                 whose="engine 0 (the actor in DeepSpeed-Chat step 3; its training phase only)" if ppo else ENGINE)
    if "fwd_bwd_flops_per_s_per_gpu" in (profiler := scan.runtime.profiler):
        value, ln, _ = profiler["fwd_bwd_flops_per_s_per_gpu"]
        _claim(out, scan, "tflops_per_accelerator", [value / 1e12], "TFLOP/s per GPU", "profiler", ln)
    if tp := [r for r in scan.dschat_tp if math.isfinite(r.get("tflops", math.nan))]:
        _claim(out, scan, "tflops_per_accelerator", [r["tflops"] for r in tp], "TFLOP/s per GPU (as printed)",
               "dschat", tp[0]["line"])


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
    if scan.runtime.comms:
        tables["comms"] = pd.DataFrame(scan.runtime.comms)
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
        note(InputRequest("the log states the number of ranks (processes), not of devices; DeepSpeed runs one rank "
                          "per device as a rule", ("n_accelerators",), "pass n_accelerators= if so"))
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
    scan = _Scan(reader)
    unread = read(reader, LINES, scan)
    scan.other += unread  # and the lines _overflow could not read
    rt = scan.runtime
    if not (scan.engine or scan.ppo or rt.comms or rt.profiler or rt.launcher or rt.config or scan.dschat_tp):
        hint = (f"; it has {scan.megatron} Megatron-LM iteration lines: load it with format='megatron'"
                if scan.megatron else "")
        reader.fail("no DeepSpeed records found (engine 'step=N, skipped=K' or 'RunningAvgSamplesPerSec=' lines, "
                    "DeepSpeed-Chat step lines, a flops-profiler summary, a comms table or launcher lines)" + hint)
    out = Parsed()
    batch = _batch_facts(out, scan, world_facts(out, rt))
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
    if scan.runtime.exits:
        extra["launcher_processes_exited"] = scan.runtime.exits
    if scan.overflow:
        extra["overflow_lines"] = len(scan.overflow)
    if skipped := [r["skipped"] for r in scan.engine if r["engine"] == 0 and r.get("skipped") is not None]:
        extra["skipped_steps_last_printed"] = skipped[-1]
    if scan.runtime.profiler:
        extra["flops_profiler"] = {k: v[0] for k, v in scan.runtime.profiler.items()}
    return extra


load = loader_for(NAME)
