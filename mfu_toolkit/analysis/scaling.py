"""Scaling efficiency: throughput at N accelerators against ideal linear scaling from a base.

    efficiency(N) = (throughput(N) / throughput(N0)) / (N / N0)      (formulas.scaling_efficiency)

From a table (one row per job size) or from several Runs, whose steady-state throughput is
measured by one of two step times (``step_time=``):

- ``"typical"`` (default): the breakdown's ideal step, i.e. the typical (median) GPU's compute
  time per step. It leaves out the wait for the slowest GPU, so efficiency lost to stragglers
  and jitter, which grows with the number of GPUs, does not show.
- ``"actual"``: the synchronous step time the job experiences: per steady-state step, the span
  over ranks (first start to last end, so the slowest rank sets it), averaged over the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..formulas import scaling_efficiency
from ..run import Run
from .accounting import Accounting, accounted
from .reasons import Reason, work_unknown

__all__ = ["STEP_TIMES", "THROUGHPUT_METRICS", "scaling_table", "run_throughput", "scaling_from_runs"]

THROUGHPUT_METRICS = ("samples_per_s", "tokens_per_s", "flops_per_s", "steps_per_s")
STEP_TIMES = ("typical", "actual")


def scaling_table(
    data: pd.DataFrame,
    *,
    n: str = "n_accelerators",
    throughput: str = "throughput",
    base_n: int | None = None,
) -> pd.DataFrame:
    """Add ideal throughput and scaling efficiency to a table of (N, throughput) rows.

    The base is the row with ``base_n`` accelerators (default: the smallest N). Added columns:
    ``per_accelerator`` (throughput / N), ``ideal_throughput`` (linear from the base) and
    ``scaling_efficiency``. Sorted by N.
    """
    if not isinstance(data, pd.DataFrame):
        raise TypeError(f"data must be a DataFrame; got {type(data).__name__}")
    for param, col in (("n", n), ("throughput", throughput)):
        if col not in data.columns:
            raise ValueError(f"{param}={col!r} is not a column of data; columns: {list(data.columns)}")
    if len(data) == 0:
        raise ValueError("data has no rows")
    df = data.sort_values(n, kind="stable").reset_index(drop=True).copy()
    ns = df[n].to_numpy(dtype=float)
    tp = df[throughput].to_numpy(dtype=float)
    if base_n is None:
        base_i = 0
    else:
        hits = np.flatnonzero(ns == base_n)
        if not len(hits):
            raise ValueError(f"base_n must be one of the N values in data {sorted({int(v) for v in ns})}; "
                             f"got {base_n!r}")
        base_i = int(hits[0])
    bn, bt = ns[base_i], tp[base_i]
    df["per_accelerator"] = tp / ns
    df["ideal_throughput"] = bt * ns / bn
    df["scaling_efficiency"] = scaling_efficiency(
        throughput=tp, n_accelerators=ns, base_throughput=bt, base_n_accelerators=bn
    )
    return df


def _actual_step_s(acc: Accounting) -> float | None:
    """Mean synchronous step time over the steady-state window, per average useful step.

    Each window step's span over ranks (``span_s``: earliest start to latest end) is what the
    job waits for; their total over the window's total work, times the mean work per useful
    step. With the same work in every step this is the mean span of the window's steps.
    """
    s = acc.steps
    if not len(s) or acc.useful_steps == 0:
        return None
    sel = s["in_window"].to_numpy(bool) & (s["work"].to_numpy(float) > 0)
    if not sel.any():
        return None
    span = float(s["span_s"].to_numpy(float)[sel].sum())
    work = float(s["work"].to_numpy(float)[sel].sum())
    return span / work * acc.useful_work / acc.useful_steps


def _check_step_time(step_time: str) -> None:
    if step_time not in STEP_TIMES:
        raise ValueError(f"step_time must be one of {', '.join(STEP_TIMES)}; got {step_time!r}")


def run_throughput(
    run: Run | Accounting,
    *,
    metric: str = "samples_per_s",
    step_time: str = "typical",
) -> tuple[float | None, str]:
    """Steady-state throughput of a run in ``metric`` units, or ``(None, reason)``.

    ``step_time="typical"`` (default) divides by the ideal step (the typical GPU's step, without
    waiting for the slowest); ``"actual"`` by the mean synchronous step over the steady-state
    window (span over ranks, which includes the wait for the slowest rank and data waits).
    """
    if metric not in THROUGHPUT_METRICS:
        raise ValueError(f"metric must be one of {', '.join(THROUGHPUT_METRICS)}; got {metric!r}")
    _check_step_time(step_time)
    acc = accounted(run)
    step = acc.ideal_step_s if step_time == "typical" else _actual_step_s(acc)
    if step is None or step <= 0:
        return None, Reason("no steady-state step time", code="no_steady_time")
    m = acc.run.meta
    per_step = acc.useful_work / acc.useful_steps  # work units per step
    if metric == "steps_per_s":
        return 1.0 / step, ""
    if metric == "samples_per_s":
        if acc.work_unit == "sample":
            return per_step / step, ""
        if m.global_batch:
            return float(m.global_batch) / step, ""
        return None, work_unknown("sample", batch=True, seq_len=False)
    if metric == "tokens_per_s":
        if acc.work_unit == "token":
            return per_step / step, ""
        samples = per_step if acc.work_unit == "sample" else m.global_batch
        if samples and m.seq_len:
            return float(samples) * m.seq_len / step, ""
        return None, work_unknown("token", batch=not samples, seq_len=not m.seq_len)
    if acc.flops_per_unit is None:
        return None, acc.flops_reason
    return acc.flops_per_unit * per_step / step, ""


def scaling_from_runs(
    runs: Sequence[Run],
    *,
    metric: str = "samples_per_s",
    base_n: int | None = None,
    names: Sequence[str] | None = None,
    step_time: str = "typical",
) -> pd.DataFrame:
    """Scaling efficiency across runs of different sizes (N from ``meta.n_accelerators``).

    ``throughput`` is each run's steady-state throughput in ``metric`` units
    (:func:`run_throughput`), computed from the step time chosen by ``step_time``:

    - ``"typical"`` (default): the ideal step, the typical (median) GPU's compute time. The
      efficiency then shows costs every GPU pays (e.g. communication that grows with N) but not
      the wait for the slowest GPU.
    - ``"actual"``: the synchronous step the job experiences, the mean over the steady-state
      window of each step's span over ranks (max over ranks of the end minus min of the start).
      It includes the wait for the slowest GPU, which grows with N for the same per-GPU jitter,
      so when the larger runs wait longer its efficiency is lower than the typical one.

    The choice is recorded in ``attrs["step_time"]`` (and the metric in ``attrs["metric"]``).
    """
    if isinstance(runs, Run) or len(runs) < 1:
        raise ValueError("runs must be a non-empty sequence of Runs")
    _check_step_time(step_time)
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(runs):
        name = names[i] if names is not None else (r.meta.name or f"run{i}")
        if not r.meta.n_accelerators:
            raise ValueError(f"run {name!r} has no meta.n_accelerators; set it to compare scaling")
        tp, why = run_throughput(r, metric=metric, step_time=step_time)
        if tp is None:
            raise ValueError(f"run {name!r}: cannot measure {metric}: {why}")
        rows.append({"run": name, "n_accelerators": int(r.meta.n_accelerators), "throughput": tp})
    out = scaling_table(pd.DataFrame(rows), base_n=base_n)
    out.attrs["metric"] = metric
    out.attrs["step_time"] = step_time
    return out
