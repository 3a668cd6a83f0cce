"""Device time per step from kernel intervals: compute, communication, overlap, busy, idle.

The trace formats (a PyTorch profiler trace, an Nsight Systems export, an XLA trace) hold the same
thing: intervals of device activity, each a compute kernel, a communication kernel or a memory
operation, and step spans. This module turns them into one per-step table with one set of
definitions, so that two formats describing the same run give the same numbers:

- ``compute_s``: the time covered by compute kernels inside the step (the union of their intervals,
  so kernels overlapping on several streams count once);
- ``comm_s``: the same for communication kernels (NCCL, RCCL, HCCL: :func:`is_comm_kernel`);
- ``overlap_s``: the time covered by both (compute and communication running at once):
  ``compute_s + comm_s - |compute ∪ comm|``;
- ``exposed_comm_s``: communication with no compute beside it, ``comm_s - overlap_s``: the part of
  communication a step waits for;
- ``gpu_busy_s``: the union of all device activity, memory copies and sets included; ``gpu_idle_s``:
  the rest of the step span.

An interval crossing a step boundary is split between the steps; activity outside every step is
not counted (the caller reports how much). The per-category kernel table (``count`` of kernels
starting in the step, ``sum_s`` of their clipped durations, ``union_s``) follows the Kineto
loader's ``kernels`` table. The arithmetic is numpy over sorted intervals and prefix sums: linear
after one sort, no per-kernel Python loop.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

__all__ = ["CATEGORIES", "COMM_WORDS", "STEP_COLUMNS", "covered", "is_comm_kernel", "step_table", "summed",
           "union", "union_length"]

CATEGORIES: tuple[str, ...] = ("compute", "comm", "memory")
# In a kernel's name, any case: a collective library's kernel. NCCL names its kernels
# ``ncclDevKernel_<Func>_...`` since 2.19 (src/device/generate.py), ``ncclKernel_<func>_<algo>_...``
# before (NCCL_KERN_NAME in src/collectives/device/common.h), ``ncclAllReduceRingLLKernel_sum_f32``
# in the 2.4 era; RCCL keeps NCCL's names and HCCL is Habana's and MTIA's collective library.
COMM_WORDS: tuple[str, ...] = ("nccl", "rccl", "hccl")
STEP_COLUMNS: tuple[str, ...] = ("compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_busy_s", "gpu_idle_s")


def is_comm_kernel(name: str) -> bool:
    """Whether a kernel's name is a collective library's (see :data:`COMM_WORDS`)."""
    low = name.lower()
    return any(w in low for w in COMM_WORDS)


def union(s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the same time as the intervals ``[s, e)``."""
    s = np.asarray(s, dtype=np.float64)
    e = np.asarray(e, dtype=np.float64)
    if not len(s):
        return s, e
    o = np.argsort(s, kind="stable")
    s, e = s[o], e[o]
    cm = np.maximum.accumulate(e)
    new = np.empty(len(s), dtype=bool)
    new[0] = True
    new[1:] = s[1:] > cm[:-1]
    idx = np.flatnonzero(new)
    last = np.append(idx[1:] - 1, len(s) - 1)
    return s[idx], cm[last]


def union_length(s: np.ndarray, e: np.ndarray) -> float:
    """The time covered by the intervals ``[s, e)`` (overlaps counted once)."""
    us, ue = union(s, e)
    return float((ue - us).sum())


def covered(us: np.ndarray, ue: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Length of the disjoint sorted union ``(us, ue)`` that lies before each time in ``t``."""
    t = np.asarray(t, dtype=np.float64)
    if not len(us):
        return np.zeros(len(t))
    cum = np.concatenate([[0.0], np.cumsum(ue - us)])
    i = np.searchsorted(us, t, side="right")
    j = np.maximum(i - 1, 0)
    part = np.where(i > 0, np.clip(t - us[j], 0.0, ue[j] - us[j]), 0.0)
    return cum[j] + part


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


def _within(us: np.ndarray, ue: np.ndarray, ss: np.ndarray, se: np.ndarray) -> np.ndarray:
    """Per step ``[ss, se)``: the length of the disjoint union ``(us, ue)`` inside it."""
    return covered(us, ue, se) - covered(us, ue, ss)


def _intersection(a: tuple[np.ndarray, np.ndarray], b: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """The disjoint sorted intervals where two disjoint sorted unions both hold (a linear merge)."""
    (a_s, a_e), (b_s, b_e) = ((s[s < e], e[s < e]) for s, e in (a, b))  # empty intervals cover nothing
    if not len(a_s) or not len(b_s):
        return np.empty(0), np.empty(0)
    # the boundaries where the count of covering unions changes; time covered twice is the intersection
    t = np.concatenate([a_s, a_e, b_s, b_e])
    d = np.concatenate([np.ones(len(a_s)), -np.ones(len(a_e)), np.ones(len(b_s)), -np.ones(len(b_e))])
    o = np.lexsort((d, t))  # at equal times the ends (-1) first: touching intervals do not overlap
    t, level = t[o], np.cumsum(d[o])
    starts = np.flatnonzero(level == 2)
    return t[starts], t[starts + 1]


def step_table(ss: np.ndarray, se: np.ndarray, intervals: Mapping[str, tuple[np.ndarray, np.ndarray]],
               scale: float = 1.0) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]], float]:
    """The per-step columns, the per-category kernel table and the activity outside every step.

    ``ss``/``se``: step starts and ends; ``intervals``: per category of :data:`CATEGORIES` the starts
    and ends of its intervals (a category left out has none); all in one unit, which ``scale`` turns
    into seconds (1e-9 for ns, 1e-6 for µs). Returns ``(columns, kernels, outside_s)``: ``columns``
    holds :data:`STEP_COLUMNS` (seconds, one value per step); ``kernels[category]`` holds ``count``,
    ``sum_s`` and ``union_s`` per step; ``outside_s`` is the kernel time (summed durations) that lies
    outside every step. With no interval at all, the columns are NaN: the device's time is unknown,
    not idle.
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
        kern[cat] = {"count": count.astype(np.int64), "sum_s": sum_in * scale,
                     "union_s": _within(*unions[cat], ss, se) * scale}
        outside += max(float((ke - ks).sum()) - float(sum_in.sum()), 0.0)
    compute, comm = kern["compute"]["union_s"], kern["comm"]["union_s"]
    overlap = _within(*_intersection(unions["compute"], unions["comm"]), ss, se) * scale
    every = [np.concatenate([unions[c][i] for c in CATEGORIES]) for i in (0, 1)]
    busy = _within(*union(*every), ss, se) * scale
    cols = {"compute_s": compute, "comm_s": comm, "overlap_s": overlap,
            "exposed_comm_s": np.maximum(comm - overlap, 0.0), "gpu_busy_s": busy,
            "gpu_idle_s": np.maximum((se - ss) * scale - busy, 0.0)}
    if not any(len(intervals.get(c, ((), ()))[0]) for c in CATEGORIES):
        cols = {k: np.full(len(ss), np.nan) for k in cols}
    return cols, kern, outside * scale
