"""DeepSpeed's throughput timer: its line read (:func:`timer_line`) and what it counts, the words its samples/s
claims carry (:func:`claims`), in the deepspeed format and inside Megatron-DeepSpeed and GPT-NeoX logs read by the
megatron format alike.

From deepspeed/utils/timer.py (ThroughputTimer, created in deepspeed/runtime/engine.py),
https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/utils/timer.py:

1. the timer starts in the engine's forward() (or when DeepSpeed's own dataloader yields a batch) and
   stops at the end of step(), on the rank that prints: data loading outside the engine, evaluation
   and checkpoints are outside every timed span;
2. "epoch=E/micro_step=M/global_step=N" (DeepSpeed >= 0.8.0, commit 0f0e38c): samples =
   train_batch_size, the global batch of all data-parallel ranks, over the timed spans of one global
   step's micro-steps;
3. "E/N, RunningAvgSamplesPerSec=, CurrSamplesPerSec=" (0.7.0-0.7.7) and "E/N, SamplesPerSec="
   (before 0.7.0; the running average only): samples = train_micro_batch_size_per_gpu x data-parallel
   size, over one engine micro-step (N counts micro-steps);
4. the running average leaves out the timer's first start_step=2 steps.

A caller that runs forward() once per micro-batch but step() once per batch (Megatron-DeepSpeed)
restarts the timer at each forward: the timed span is then the last micro-batch's forward to the
optimizer step (:data:`UNDER_MEGATRON`). GPT-NeoX calls step() after every micro-batch
(megatron/training.py train_step): no such restart there.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import NamedTuple

from .base import Parsed
from .lines import claim
from .reading import Reader

DS_TIMER_URL = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/utils/timer.py"

# What one timer line's samples/s counts, by the line's form.
TIMER_COUNTS: dict[str, str] = {
    "global_step": (
        "train_batch_size (the global batch, all data-parallel ranks) / the forward-to-step time of the micro-steps "
        "of one global step on the printing rank (data loading outside the engine, evaluation and checkpoints left "
        "out; DeepSpeed >= 0.8 ThroughputTimer, " + DS_TIMER_URL + ")"),
    "micro_step": (
        "train_micro_batch_size_per_gpu × data-parallel size (one micro-step's samples, all ranks) / one engine "
        "micro-step's forward-to-step time on the printing rank (DeepSpeed 0.7 ThroughputTimer, " + DS_TIMER_URL + ")"),
    "running_only": (
        "train_micro_batch_size_per_gpu × data-parallel size (one micro-step's samples, all ranks) / one engine "
        "micro-step's forward-to-step time on the printing rank (DeepSpeed < 0.7 ThroughputTimer, "
        + DS_TIMER_URL + ")"),
}

# Appended where the timer runs inside Megatron-DeepSpeed: the span is part of each step.
UNDER_MEGATRON = ("; in a Megatron-DeepSpeed log forward() runs once per micro-batch and step() once per batch, "
                  "and the timer restarts at each forward(), so each timed span runs from the batch's last "
                  "forward() to the end of step()")

# --- reading its lines, and the claims they make -------------------------------------------------
# The spellings of the line (ThroughputTimer.stop); groups: epoch, micro-step, global step / epoch, step, RunningAvg.
GLOBAL_STEP = re.compile(r"epoch=(\d{1,18})/micro_step=(\d{1,18})/global_step=([^,\s]{0,64})")
MICRO_STEP = re.compile(r"(?<![\d/])(\d{1,18})/(\d{1,18}), (RunningAvg)?SamplesPerSec=")
_RATE_KEYS = r"\b(RunningAvgSamplesPerSec|CurrSamplesPerSec|SamplesPerSec"
RATES = re.compile(_RATE_KEYS + r")=([^,\s]{0,64})")
RATES_MEMORY = re.compile(_RATE_KEYS + r"|MemAllocated|MaxMemAllocated)=([^,\s]{0,64})")
_WHOLE = ", RunningAvgSamplesPerSec="
ENGINE = "the DeepSpeed engine"
_CURR = "CurrSamplesPerSec of {whose}, at each printed step: {what}"
_RUNNING = ("{key} of {whose}, the running average since the timer's start (its first 2 steps left out; the last "
            "value printed): {what}")


class TimerLine(NamedTuple):
    """One throughput-timer line as printed: its spelling (a key of :data:`TIMER_COUNTS`), epoch, micro-step (None
    before 0.8), the global step as text (the caller reads it), and its ``key=value`` fields as text."""

    form: str
    epoch: int
    micro_step: int | None
    step: str
    rates: dict[str, str]


def timer_line(text: str, *, whole: bool = False, memory: bool = True) -> TimerLine | None:
    """The throughput-timer line in ``text``, None when it holds none of the spellings.

    ``epoch=E/micro_step=M/global_step=N`` first, else the first ``E/N, RunningAvgSamplesPerSec=`` or ``E/N,
    SamplesPerSec=``. ``whole``: a spelling counts only as DeepSpeed prints it whole (a global step of digits
    followed by ``, RunningAvgSamplesPerSec=``), and ``RunningAvgSamplesPerSec`` anywhere wins over ``SamplesPerSec``;
    without it the first ``epoch=/micro_step=/global_step=`` counts, whatever its step. ``memory``: ``MemAllocated``
    and ``MaxMemAllocated`` are read too (else the three rates alone). Linear: each search starts past the last one's
    start.
    """
    fields = RATES_MEMORY if memory else RATES
    m = GLOBAL_STEP.search(text)
    while whole and m is not None and not (
            len(g := m.group(3)) <= 18 and g.isdecimal() and text.startswith(_WHOLE, m.end())):
        m = GLOBAL_STEP.search(text, m.start() + 1)
    if m is not None:
        epoch, micro, step = m.groups()
        return TimerLine("global_step", int(epoch), int(micro), step, dict(fields.findall(text)))
    first = None
    for m in MICRO_STEP.finditer(text):
        if m.group(3) or not whole:
            first = m
            break
        first = first or m
    if first is None:
        return None
    form = "micro_step" if first.group(3) else "running_only"
    return TimerLine(form, int(first.group(1)), None, first.group(2), dict(fields.findall(text)))


def running_key(form: str) -> str:
    """The field of a spelling's running average: ``SamplesPerSec`` before 0.7, else ``RunningAvgSamplesPerSec``."""
    return "SamplesPerSec" if form == "running_only" else "RunningAvgSamplesPerSec"


def claims(reader: Reader, out: Parsed, timed: Iterable[tuple[int, str, float, float]], *, whose: str = ENGINE,
           under_megatron: bool = False, at_first: bool = False) -> None:
    """The timer's claims from ``(line, form, running average, current)`` per line read: per spelling, the median
    CurrSamplesPerSec (none before 0.7) and the running average's last value, each saying what it counts.

    Each claim is at the line of its first finite value, and values that are not finite are noted
    (:func:`~mfu_toolkit.io.lines.claim`); with ``at_first`` it is at the spelling's first line and they are left
    out silently (counted where they were read). ``under_megatron``: the timer ran inside Megatron-DeepSpeed
    (:data:`UNDER_MEGATRON` added, basis ``partial``: the span is part of each step).
    """
    tail, basis = (UNDER_MEGATRON, "partial") if under_megatron else ("", "steady")
    timed = list(timed)
    for form, what in TIMER_COUNTS.items():
        if not (mine := [t for t in timed if t[1] == form]):
            continue
        key = running_key(form)
        for col, label, template, last in ((3, "CurrSamplesPerSec", _CURR, False), (2, key, _RUNNING, True)):
            if form == "running_only" and not last:
                continue  # DeepSpeed before 0.7 printed the running average only
            pairs = [(t[col], t[0]) for t in mine]
            if at_first:
                pairs = [(v, mine[0][0]) for v, _ in pairs if math.isfinite(v)]
            counts = template.format(key=key, whose=whose, what=what + tail)
            claim(reader, out, "samples_per_s", pairs, "samples/s", counts, label=label, last=last, basis=basis)
