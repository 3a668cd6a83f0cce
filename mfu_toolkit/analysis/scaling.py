"""Scaling efficiency: throughput at N accelerators against ideal linear scaling from a base.

    efficiency(N) = (throughput(N) / throughput(N0)) / (N / N0)      (formulas.scaling_efficiency)

From a table (one row per job size) or from several Runs, whose steady-state throughput is
measured by the breakdown's ideal step time.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..formulas import scaling_efficiency
from ..run import Run
from .breakdown import Accounting, account

__all__ = ["THROUGHPUT_METRICS", "scaling_table", "run_throughput", "scaling_from_runs"]

THROUGHPUT_METRICS = ("samples_per_s", "tokens_per_s", "flops_per_s", "steps_per_s")


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
            raise ValueError(f"base_n must be one of the N values in data {sorted({int(v) for v in ns})}; got {base_n!r}")
        base_i = int(hits[0])
    bn, bt = ns[base_i], tp[base_i]
    df["per_accelerator"] = tp / ns
    df["ideal_throughput"] = bt * ns / bn
    df["scaling_efficiency"] = scaling_efficiency(
        throughput=tp, n_accelerators=ns, base_throughput=bt, base_n_accelerators=bn
    )
    return df


def run_throughput(run: Run | Accounting, *, metric: str = "samples_per_s") -> tuple[float | None, str]:
    """Steady-state throughput of a run in ``metric`` units, or ``(None, reason)``."""
    if metric not in THROUGHPUT_METRICS:
        raise ValueError(f"metric must be one of {', '.join(THROUGHPUT_METRICS)}; got {metric!r}")
    acc = run if isinstance(run, Accounting) else account(run)
    step = acc.ideal_step_s
    if step is None or step <= 0:
        return None, "no steady-state step time"
    m = acc.run.meta
    per_step = acc.useful_work / acc.useful_steps  # work units per step
    if metric == "steps_per_s":
        return 1.0 / step, ""
    if metric == "samples_per_s":
        if acc.work_unit == "sample":
            return per_step / step, ""
        if m.global_batch:
            return float(m.global_batch) / step, ""
        return None, "samples per step unknown (meta.global_batch)"
    if metric == "tokens_per_s":
        if acc.work_unit == "token":
            return per_step / step, ""
        samples = per_step if acc.work_unit == "sample" else m.global_batch
        if samples and m.seq_len:
            return float(samples) * m.seq_len / step, ""
        return None, "tokens per step unknown (meta.global_batch and meta.seq_len)"
    if acc.flops_per_unit is None:
        return None, acc.flops_reason
    return acc.flops_per_unit * per_step / step, ""


def scaling_from_runs(
    runs: Sequence[Run],
    *,
    metric: str = "samples_per_s",
    base_n: int | None = None,
    names: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Scaling efficiency across runs of different sizes (N from ``meta.n_accelerators``)."""
    if isinstance(runs, Run) or len(runs) < 1:
        raise ValueError("runs must be a non-empty sequence of Runs")
    rows: list[dict[str, Any]] = []
    for i, r in enumerate(runs):
        name = names[i] if names is not None else (r.meta.name or f"run{i}")
        if not r.meta.n_accelerators:
            raise ValueError(f"run {name!r} has no meta.n_accelerators; set it to compare scaling")
        tp, why = run_throughput(r, metric=metric)
        if tp is None:
            raise ValueError(f"run {name!r}: cannot measure {metric}: {why}")
        rows.append({"run": name, "n_accelerators": int(r.meta.n_accelerators), "throughput": tp})
    out = scaling_table(pd.DataFrame(rows), base_n=base_n)
    out.attrs["metric"] = metric
    return out
