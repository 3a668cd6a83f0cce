"""Timing for the tests that guard against super-linear cost: ratios of two timings, not seconds.

An absolute bound (``elapsed < 1.0``) fails on a slow or loaded machine and passes a quadratic
algorithm on a fast one: it says nothing about complexity. A ratio of two timings taken in the
same run cancels the machine's speed: the same work at n and at 4n costs about 4x when linear and
16x when quadratic (:func:`growth`), and a hostile input costs about as much as a benign one of
the same size when its work is bounded (:func:`slowdown`). Times are CPU seconds of this process
(another job on the machine does not inflate them), the best of ``repeat`` runs, and a small
floor (:data:`FLOOR_S`) is added to both sides so that sub-millisecond timings (noise) cannot
make a large ratio.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable

FLOOR_S = 1e-3  # seconds added to both timings of a ratio: the noise of a timing near zero
LINEAR_SLACK = 2.5  # a bound of 2.5x the linear ratio: 10 for 4x the input, where quadratic is 16


def best_seconds(fn: Callable[[], object], *, repeat: int = 3, clock: Callable[[], float] = time.process_time) -> float:
    """The shortest of ``repeat`` runs of ``fn()``, in seconds of ``clock`` (CPU time by default).

    The garbage collector is off while ``fn`` runs, as in :mod:`timeit`: when its full collections
    come depends on the whole process's heap (the other tests' objects too), not on the work timed.
    """
    best = float("inf")
    for _ in range(repeat):
        enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = clock()
            fn()
            best = min(best, clock() - t0)
        finally:
            if enabled:
                gc.enable()
    return best


def growth(make: Callable[[int], Callable[[], object]], n: int, *, factor: int = 4, repeat: int = 3,
           floor_s: float = FLOOR_S) -> float:
    """time(``make(factor * n)``) / time(``make(n)``): about ``factor`` when linear, ``factor ** 2`` when quadratic.

    ``make(n)`` builds the input of size ``n`` (not timed) and returns the work to time on it.
    """
    small = best_seconds(make(n), repeat=repeat)
    big = best_seconds(make(factor * n), repeat=repeat)
    return (big + floor_s) / (small + floor_s)


def slowdown(fn: Callable[[], object], baseline: Callable[[], object], *, repeat: int = 3,
             floor_s: float = FLOOR_S, clock: Callable[[], float] = time.process_time) -> float:
    """time(``fn``) / time(``baseline``): a hostile input against a benign one of about the same size."""
    hostile = best_seconds(fn, repeat=repeat, clock=clock)
    return (hostile + floor_s) / (best_seconds(baseline, repeat=repeat, clock=clock) + floor_s)


def child_cpu_seconds() -> float:
    """A clock for work done in subprocesses: the CPU seconds of this process's waited-for children."""
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def linear_bound(factor: int = 4) -> float:
    """The bound on :func:`growth`'s ratio: well above linear (``factor``), well below quadratic."""
    return factor * LINEAR_SLACK


def explain(ratio: float, factor: int = 4, what: str = "the input") -> str:
    """An assertion message: the ratio seen against the linear and the quadratic one."""
    return (f"{factor}x {what} took {ratio:.1f}x the time (bound {linear_bound(factor):g}x; "
            f"linear is about {factor}x, quadratic {factor ** 2}x)")
