"""The step table of every trace format: device time per rank and step from kernel intervals.

The trace formats (a PyTorch profiler trace, an Nsight Systems export, an XLA profile) hold the same
thing: intervals of device activity, each a compute kernel, a communication kernel or a memory
operation, and step spans. Their loaders (:mod:`~mfu_toolkit.io.formats.kineto`,
:mod:`~mfu_toolkit.io.formats.nsys`, :mod:`~mfu_toolkit.io.formats.xplane`) turn them into one table, a
row per rank and step (``attempt``, ``step``, ``rank``, ``start_s``, ``end_s``), with one set of
definitions (:data:`STEP_COLUMNS`, seconds), so that two formats describing the same run give the same
numbers:

- ``compute_s``: the time covered by compute kernels inside the step (the union of their intervals,
  so kernels overlapping on several streams count once);
- ``comm_s``: the same for communication kernels (NCCL, RCCL, HCCL: :func:`is_comm_kernel`; XLA's
  collective ops: :func:`is_collective_op`);
- ``overlap_s``: the time covered by both (compute and communication running at once):
  ``compute_s + comm_s - |compute ∪ comm|``;
- ``exposed_comm_s``: communication with no compute beside it, ``comm_s - overlap_s``: the part of
  communication a step waits for;
- ``gpu_busy_s``: the union of all device activity, memory copies and sets included; ``gpu_idle_s``:
  the rest of the step span;
- ``data_wait_s``: the time the rank's host spent waiting for its input inside the step (the union of
  the trace's data-loader ranges, PyTorch's ``enumerate(DataLoader)#...`` record functions, as the
  profiler records them and as NVTX ranges under ``emit_nvtx``); NaN (unknown, not 0) when the rank's
  trace holds no such range.

A rank whose trace holds no device activity at all has the device columns NaN: its device time is
unknown, not idle. An interval crossing a step boundary is split between the steps; activity outside
every step is not counted (the loader notes how much). Steps are never invented: each loader cuts them
from the trace's own step marks and states which in ``meta.extra["steps_from"]`` (Kineto: the
``ProfilerStep#N`` ranges; Nsight Systems: the NVTX ranges its ``step_pattern`` names; XLA: a device's
``Steps`` line, or host events with a ``step_num``), and where data wait came from in
``meta.extra["data_wait_from"]`` (None where unknown). The per-category kernel table (``count`` of
kernels starting in the step, ``sum_s`` of their clipped durations, ``union_s``) follows the Kineto
loader's ``kernels`` table. The arithmetic is numpy over sorted intervals and prefix sums: linear after
one sort, no per-kernel Python loop; times become seconds by one division by the units in a second
(exact for the powers of ten of µs, ns and ps, where multiplying by 1e-9 would round twice).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import pandas as pd

from ..intervals import covered_before, covered_within, intersection, measure, union

__all__ = ["CATEGORIES", "COMM", "COMM_WORDS", "COMPUTE", "DATA_LOADER_PREFIX", "MEMORY", "MEMORY_PREFIXES",
           "STEP_COLUMNS", "Ops", "StepSpans", "category", "is_collective_op", "is_comm_kernel", "step_frames",
           "step_spans", "step_table", "summed", "whole_span"]

# moved to mfu_toolkit.intervals (``union`` is that module's): the old names work for one release, with a warning
_MOVED = {
    "covered": ("intervals.covered_before((us, ue), t)", lambda us, ue, t: covered_before((us, ue), t)),
    "union_length": ("intervals.measure(intervals.union(s, e))", lambda s, e: measure(union(s, e))),
}


def __getattr__(name: str) -> Any:
    if name not in _MOVED:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    new, value = _MOVED[name]
    warnings.warn(f"{__name__}.{name} moved to mfu_toolkit.{new}; the old name goes in the next release",
                  DeprecationWarning, stacklevel=2)
    return value


CATEGORIES: tuple[str, ...] = ("compute", "comm", "memory")
COMPUTE, COMM, MEMORY = 0, 1, 2  # a category's code: its index in CATEGORIES
# In a kernel's name, any case: a collective library's kernel. NCCL names its kernels
# ``ncclDevKernel_<Func>_...`` since 2.19 (src/device/generate.py), ``ncclKernel_<func>_<algo>_...``
# before (NCCL_KERN_NAME in src/collectives/device/common.h), ``ncclAllReduceRingLLKernel_sum_f32``
# in the 2.4 era; RCCL keeps NCCL's names and HCCL is Habana's and MTIA's collective library.
COMM_WORDS: tuple[str, ...] = ("nccl", "rccl", "hccl")
STEP_COLUMNS: tuple[str, ...] = ("compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_busy_s", "gpu_idle_s",
                                 "data_wait_s")
# the name of PyTorch's record_function around each DataLoader batch (torch.utils.data's _BaseDataLoaderIter)
DATA_LOADER_PREFIX = "enumerate(DataLoader)#"


# XLA's collective opcodes (xla/hlo/ir/hlo_opcode.h), with the -start/-done/-update forms of async ones
_COLLECTIVE_OP = re.compile(
    r"^%?(all-reduce|all-gather|reduce-scatter|all-to-all|ragged-all-to-all|collective-permute|"
    r"collective-broadcast|send|recv)(-start|-done|-update)?(\.\d+)*$")
_COLLECTIVE_WORDS = re.compile(r"all-reduce|all-gather|reduce-scatter|all-to-all|collective-permute|"
                               r"collective-broadcast|\bsend\b|\brecv\b")
# In a device event's name, lower case: a memory operation. ROCclr's copy and fill kernels, CUPTI's
# Memcpy*/Memset* activity names.
MEMORY_PREFIXES: tuple[str, ...] = ("__amd_rocclr_copybuffer", "__amd_rocclr_fillbuffer", "__amd_rocclr_copyimage",
                                    "memcpy", "memset")


def is_comm_kernel(name: str) -> bool:
    """Whether a kernel's name is a collective library's (see :data:`COMM_WORDS`)."""
    low = name.lower()
    return any(w in low for w in COMM_WORDS)


def is_collective_op(op: str, op_category: str = "") -> bool:
    """Whether an XLA HLO op (``all-reduce.3``, ``%all-gather-start``) is a collective by XLA's opcode names, or
    its category (XLA's ``hlo_category``, any case) names one."""
    return bool(_COLLECTIVE_OP.match(op) or (op_category and _COLLECTIVE_WORDS.search(op_category.lower())))


def category(name: str, op: str = "", op_category: str = "", memory: bool = False) -> int:
    """The category code of a device event: :data:`MEMORY` when ``memory`` (a format's own sign of a copy) or
    its name starts as a copy or fill (:data:`MEMORY_PREFIXES`); :data:`COMM` for a collective op
    (:func:`is_collective_op`) or a collective library's kernel (:func:`is_comm_kernel`); else :data:`COMPUTE`."""
    if memory or name.lower().startswith(MEMORY_PREFIXES):
        return MEMORY
    return COMM if is_collective_op(op, op_category) or is_comm_kernel(name) else COMPUTE


def summed(s: np.ndarray, e: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Sum over intervals of their length before each time in ``t`` (overlaps count twice)."""
    t = np.asarray(t, dtype=np.float64)
    if not len(s):
        return np.zeros(len(t))
    ss, se = np.sort(np.asarray(s, dtype=np.float64)), np.sort(np.asarray(e, dtype=np.float64))
    cs = np.concatenate([[0.0], np.cumsum(ss)])
    ce = np.concatenate([[0.0], np.cumsum(se)])
    n1 = np.searchsorted(ss, t, side="right")
    n2 = np.searchsorted(se, t, side="right")
    return (n1 * t - cs[n1]) - (n2 * t - ce[n2])


def step_table(ss: np.ndarray, se: np.ndarray, intervals: Mapping[str, tuple[np.ndarray, np.ndarray]],
               per_s: float = 1.0, waits: tuple[np.ndarray, np.ndarray] | None = None,
               ) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]], float]:
    """The per-step columns, the per-category kernel table and the activity outside every step.

    ``ss``/``se``: step starts and ends; ``intervals``: per category of :data:`CATEGORIES` the starts
    and ends of its intervals (a category left out has none); ``waits``: the starts and ends of the
    rank's data-loader ranges (None: unknown); all in one unit, ``per_s`` of which make a second (1e6
    for µs, 1e9 for ns, 1e12 for ps). Returns ``(columns, kernels, outside_s)``: ``columns`` holds
    :data:`STEP_COLUMNS` (seconds, one value per step); ``kernels[category]`` holds ``count``, ``sum_s``
    and ``union_s`` per step; ``outside_s`` is the kernel time (summed durations) that lies outside
    every step. With no interval at all, the device columns are NaN: the device's time is unknown, not
    idle.
    """
    ss = np.asarray(ss, dtype=np.float64)
    se = np.asarray(se, dtype=np.float64)
    unions: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    kern: dict[str, dict[str, np.ndarray]] = {}
    outside = 0.0
    for cat in CATEGORIES:
        ks, ke = (np.asarray(a, dtype=np.float64) for a in intervals.get(cat, (np.empty(0), np.empty(0))))
        unions[cat] = union(ks, ke)
        sum_in = summed(ks, ke, se) - summed(ks, ke, ss)
        sks = np.sort(ks)
        count = np.searchsorted(sks, se, side="left") - np.searchsorted(sks, ss, side="left")
        kern[cat] = {"count": count.astype(np.int64), "sum_s": sum_in / per_s,
                     "union_s": covered_within(unions[cat], ss, se) / per_s}
        outside += max(float((ke - ks).sum()) - float(sum_in.sum()), 0.0)
    compute, comm = kern["compute"]["union_s"], kern["comm"]["union_s"]
    overlap = covered_within(intersection(unions["compute"], unions["comm"]), ss, se) / per_s
    every = [np.concatenate([unions[c][i] for c in CATEGORIES]) for i in (0, 1)]
    busy = covered_within(union(*every), ss, se) / per_s
    cols = {"compute_s": compute, "comm_s": comm, "overlap_s": overlap,
            "exposed_comm_s": np.maximum(comm - overlap, 0.0), "gpu_busy_s": busy,
            "gpu_idle_s": np.maximum((se - ss) / per_s - busy, 0.0)}
    if not any(len(intervals.get(c, ((), ()))[0]) for c in CATEGORIES):
        cols = {k: np.full(len(ss), np.nan) for k in cols}
    cols["data_wait_s"] = (np.full(len(ss), np.nan) if waits is None else
                           covered_within(union(*(np.asarray(a, dtype=np.float64) for a in waits)), ss, se) / per_s)
    return cols, kern, outside / per_s


class StepSpans(NamedTuple):
    """Step numbers, starts and ends in time order, and what joining the marks met."""

    nums: np.ndarray
    ss: np.ndarray
    se: np.ndarray
    renumbered: bool  # some mark had no number: all were numbered 0, 1, ... in time order
    overlaps: int  # spans that start before the previous one ends


def step_spans(marks: Sequence[tuple[Any, ...]]) -> StepSpans:
    """Steps from marks ``(number or None, start, end, ...)``: the marks of one number joined (first start to
    last end), in time order; when any mark has no number, all are numbered 0, 1, ... in time order."""
    renumbered = any(m[0] is None for m in marks)
    if renumbered:
        order = sorted(range(len(marks)), key=lambda i: marks[i][1])
        marks = [(k, *marks[i][1:3]) for k, i in enumerate(order)]
    spans: dict[int, list[float]] = {}
    for num, s, e, *_ in marks:
        got = spans.setdefault(int(num), [s, e])
        got[0], got[1] = min(got[0], s), max(got[1], e)
    nums = sorted(spans, key=lambda n: (spans[n][0], n))
    ss = np.array([spans[n][0] for n in nums], dtype=np.float64)
    se = np.array([spans[n][1] for n in nums], dtype=np.float64)
    over = int((ss[1:] < se[:-1]).sum()) if len(ss) > 1 else 0
    return StepSpans(np.array(nums, dtype=np.int64), ss, se, renumbered, over)


def step_frames(parts: Sequence[tuple[int, np.ndarray, np.ndarray, np.ndarray, Mapping[str, np.ndarray],
                                      Mapping[str, Mapping[str, np.ndarray]]]]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The step rows and the per-step kernel table of a Run from per-rank results.

    ``parts``: per rank ``(rank, step numbers, start_s, end_s, columns, kernels)``, the last two as
    :func:`step_table` returns them. The step rows hold ``attempt`` 0, ``step``, ``rank``, ``start_s``,
    ``end_s`` and the columns; the kernel table (the Kineto ``kernels`` layout) one row per rank, step and
    category, sorted so. No part: two empty frames.
    """
    if not parts:
        return pd.DataFrame(), pd.DataFrame()
    steps = [pd.DataFrame({"attempt": 0, "step": sn, "rank": r, "start_s": a, "end_s": b, **cols})
             for r, sn, a, b, cols, _ in parts]
    kern = [pd.DataFrame({"rank": r, "step": sn, "category": c, **k[c]}) for r, sn, _, _, _, k in parts
            for c in CATEGORIES]
    k = pd.concat(kern, ignore_index=True)
    k["category"] = pd.Categorical(k["category"], categories=list(CATEGORIES))
    k = k.sort_values(["rank", "step", "category"], kind="stable").reset_index(drop=True)
    return pd.concat(steps, ignore_index=True), k


def whole_span(intervals: Mapping[str, tuple[np.ndarray, np.ndarray]],
               per_s: float = 1.0) -> tuple[dict[str, float], float, float]:
    """One device's totals over its whole activity, from its first start to its last end (both returned, in
    the intervals' unit): ``busy_s``, the union of its kernels (compute and communication), then the columns of
    :func:`step_table` over that span but ``data_wait_s``. The device has at least one interval."""
    starts = np.concatenate([np.asarray(intervals.get(c, ((), ()))[0], dtype=np.float64) for c in CATEGORIES])
    ends = np.concatenate([np.asarray(intervals.get(c, ((), ()))[1], dtype=np.float64) for c in CATEGORIES])
    first, last = float(starts.min()), float(ends.max())
    cols, _, _ = step_table(np.array([first]), np.array([last]), intervals, per_s=per_s)
    kern = [np.concatenate([np.asarray(intervals.get(c, ((), ()))[i], dtype=np.float64) for c in ("compute", "comm")])
            for i in (0, 1)]
    out = {"busy_s": measure(union(*kern)) / per_s, **{k: float(v[0]) for k, v in cols.items() if k != "data_wait_s"}}
    return out, first, last


class Ops:
    """Kernel names with their op (an XLA HLO op, or ""): an id each, with the category of the first one seen."""

    def __init__(self) -> None:
        self.ids: dict[tuple[str, str], int] = {}
        self.keys: list[tuple[str, str]] = []
        self.cats: list[int] = []

    def get(self, name: str, op: str, cat: int) -> int:
        i = self.ids.get((name, op))
        if i is None:
            i = self.ids[(name, op)] = len(self.keys)
            self.keys.append((name, op))
            self.cats.append(cat)
        return i

    def table(self, op: np.ndarray, dur_s: np.ndarray, rank: np.ndarray, op_column: str = "op") -> pd.DataFrame:
        """Per name and op, from each event's op id, seconds and rank: its category, count, summed, mean and
        longest seconds, and the ranks it ran on (``devices``); the most time first."""
        cols = ["name", op_column, "category", "count", "sum_s", "mean_s", "max_s", "devices"]
        if not len(op):
            return pd.DataFrame(columns=cols)
        g = pd.DataFrame({"op": op, "dur": dur_s, "rank": rank}).groupby("op").agg(
            count=("dur", "size"), sum_s=("dur", "sum"), max_s=("dur", "max"), devices=("rank", "nunique"))
        keys = [self.keys[i] for i in g.index]
        out = pd.DataFrame({"name": [k[0] for k in keys], op_column: [k[1] for k in keys],
                            "category": [CATEGORIES[self.cats[i]] for i in g.index], "count": g["count"].to_numpy(),
                            "sum_s": g["sum_s"].to_numpy(), "mean_s": (g["sum_s"] / g["count"]).to_numpy(),
                            "max_s": g["max_s"].to_numpy(), "devices": g["devices"].to_numpy()})
        return out.sort_values(["sum_s", "name"], ascending=[False, True], kind="stable").reset_index(drop=True)
