"""Sets of time intervals, as numpy arrays: union, intersection, difference and how much of them lies where.

A set is a pair ``(starts, ends)`` of float arrays. :func:`union` turns any intervals into the
canonical form every other function takes and returns: disjoint, sorted, non-empty. The waterfall's
timeline rule (:mod:`mfu_toolkit.analysis.accounting`), a trace's per-step device time
(:mod:`mfu_toolkit.io.gpu_time`) and the timeline plot share these rules, so "the time covered by"
means one thing everywhere. numpy only: the loaders and the analyses both stand on it.
"""

from __future__ import annotations

import numpy as np

__all__ = ["Intervals", "union", "measure", "covered_before", "covered_within", "intersection", "difference",
           "exclusive_pieces"]

Intervals = tuple[np.ndarray, np.ndarray]


def union(starts: np.ndarray, ends: np.ndarray, *, gap: float = 0.0) -> Intervals:
    """Disjoint, sorted, non-empty intervals covering the union of ``[starts, ends]``.

    Empty intervals (``end <= start``) cover nothing and are left out; with ``gap`` > 0, intervals
    separated by at most ``gap`` are joined too (a chart's spans).
    """
    starts = np.asarray(starts, dtype=np.float64)
    ends = np.asarray(ends, dtype=np.float64)
    keep = ends > starts
    starts, ends = starts[keep], ends[keep]
    if len(starts) == 0:
        return np.empty(0), np.empty(0)
    o = np.argsort(starts, kind="stable")
    s, e = starts[o], ends[o]
    run_max = np.maximum.accumulate(e)
    idx = np.flatnonzero(np.r_[True, s[1:] > run_max[:-1] + gap])
    return s[idx], np.maximum.reduceat(e, idx)


def measure(u: Intervals) -> float:
    """The total length of a disjoint set."""
    return float(np.sum(u[1] - u[0])) if len(u[0]) else 0.0


def covered_before(u: Intervals, t: np.ndarray) -> np.ndarray:
    """For each time in ``t``, the length of the disjoint sorted set ``u`` that lies before it."""
    us, ue = u
    t = np.asarray(t, dtype=np.float64)
    if not len(us):
        return np.zeros(len(t))
    cum = np.concatenate([[0.0], np.cumsum(ue - us)])
    i = np.searchsorted(us, t, side="right")
    j = np.maximum(i - 1, 0)
    part = np.where(i > 0, np.clip(t - us[j], 0.0, ue[j] - us[j]), 0.0)
    return cum[j] + part


def covered_within(u: Intervals, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """For each window ``[a_i, b_i]``, the length of the disjoint sorted set ``u`` inside it."""
    return covered_before(u, b) - covered_before(u, a)


def intersection(a: Intervals, b: Intervals) -> Intervals:
    """Where two disjoint sorted sets both hold (a linear merge of their boundaries)."""
    (a_s, a_e), (b_s, b_e) = ((s[s < e], e[s < e]) for s, e in (a, b))  # empty intervals cover nothing
    if not len(a_s) or not len(b_s):
        return np.empty(0), np.empty(0)
    # the boundaries where the count of covering sets changes; time covered twice is the intersection
    t = np.concatenate([a_s, a_e, b_s, b_e])
    d = np.concatenate([np.ones(len(a_s)), -np.ones(len(a_e)), np.ones(len(b_s)), -np.ones(len(b_e))])
    o = np.lexsort((d, t))  # at equal times the ends (-1) first: touching intervals do not overlap
    t, level = t[o], np.cumsum(d[o])
    first = np.flatnonzero(level == 2)
    return t[first], t[first + 1]


def difference(u: Intervals, v: Intervals) -> Intervals:
    """The parts of the disjoint sorted set ``u`` outside the disjoint sorted set ``v``."""
    if not len(u[0]) or not len(v[0]):
        return u
    xs = np.unique(np.r_[u[0], u[1], v[0], v[1]])
    mid = (xs[:-1] + xs[1:]) / 2

    def inside(w: Intervals) -> np.ndarray:
        i = np.searchsorted(w[0], mid, side="right") - 1
        return (i >= 0) & (mid < w[1][np.maximum(i, 0)])

    keep = inside(u) & ~inside(v)
    return union(xs[:-1][keep], xs[1:][keep])


def exclusive_pieces(starts: np.ndarray, ends: np.ndarray) -> Intervals:
    """One disjoint piece per interval (given sorted by start): each instant goes to the earliest-starting
    interval that covers it, so the pieces' lengths sum to the union's length."""
    if len(starts) == 0:
        return np.empty(0), np.empty(0)
    run_max = np.maximum.accumulate(ends)
    prev = np.r_[-np.inf, run_max[:-1]]
    a = np.maximum(starts, prev)
    b = np.maximum(run_max, a)
    b = np.where(ends > prev, b, a)  # fully inside earlier ones: an empty piece
    return a, b
