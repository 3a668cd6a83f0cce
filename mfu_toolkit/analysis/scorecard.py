"""The scorecard: four families of acceptance metrics for one run.

- **model progress**: samples/s, tokens/s and effective model FLOP/s, end to end and at steady
  state;
- **compute efficiency**: steady-state and end-to-end MFU, HFU where known, goodput, the share
  of wall time in exposed communication where the run states it per step (the waterfall's
  ``exposed_comm`` slice; no row elsewhere), and the accelerator idle share where a utilisation
  trace is attached;
- **scaling efficiency**: against other runs of the same job at other sizes, when given;
- **reliability**: failures, restarts, mean time to recover, checkpoint time, lost work and the
  straggler tail (p99/p50 of the job-level step time).

Every metric is one tidy row: ``family, metric, value, unit, note``. Unknown values are NaN with
the reason in ``note``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from ..run import Run
from .accounting import Accounting, accounted
from .checkpoint import checkpoint_report
from .reasons import Reason
from .scaling import run_throughput, scaling_from_runs
from .waterfall import MFUSummary

__all__ = ["FAMILIES", "scorecard", "scorecard_of", "gpu_idle_share"]

FAMILIES = ("model_progress", "compute_efficiency", "scaling_efficiency", "reliability")
_UTIL_RE = re.compile(r"(gpu|accelerator|device|sm).*util", re.IGNORECASE)


def gpu_idle_share(run: Run) -> tuple[float | None, str]:
    """Idle share of the accelerators from a trace attached to the run, if any.

    Sources, in order: per-step ``gpu_busy_s`` and ``gpu_idle_s`` columns (a profiler trace:
    idle / (busy + idle)); else a table column whose table or column name mentions GPU/device
    utilisation (values in percent when any exceeds 1, else fractions; idle = 1 − mean).
    Returns ``(None, reason)`` when there is none.
    """
    st = run.steps
    if {"gpu_busy_s", "gpu_idle_s"} <= set(st.columns):
        busy = pd.to_numeric(st["gpu_busy_s"], errors="coerce").to_numpy(dtype=float)
        idle = pd.to_numeric(st["gpu_idle_s"], errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(busy) & np.isfinite(idle)
        total = float(busy[ok].sum() + idle[ok].sum())
        if total > 0:
            return float(idle[ok].sum()) / total, f"from steps gpu_busy_s/gpu_idle_s ({int(ok.sum())} rank-steps)"
    for name, df in run.tables.items():
        for col in df.columns:
            if _UTIL_RE.search(f"{name}.{col}") and "util" in str(col).lower():
                v = pd.to_numeric(df[col], errors="coerce").to_numpy(dtype=float)
                v = v[np.isfinite(v)]
                if not len(v):
                    continue
                frac = v / 100.0 if np.nanmax(v) > 1.0 else v
                return float(1.0 - np.mean(frac)), f"from tables[{name!r}][{col!r}] ({len(v)} samples)"
    return None, "no accelerator utilisation trace attached to the run"


def scorecard(
    run: Run | Accounting,
    *,
    others: Sequence[Run] | None = None,
) -> pd.DataFrame:
    """The seed's four families of metrics for one run, as a tidy table.

    ``others``: runs of the same job at other sizes; with them, the scaling family reports this
    run's efficiency against the smallest.
    """
    acc = accounted(run)
    return (acc.scorecard if not others else scorecard_of(acc, others=others)).copy()


def scorecard_of(acc: Accounting, *, others: Sequence[Run] | None = None) -> pd.DataFrame:
    """The scorecard of ``acc``, computed (``acc.scorecard`` holds the one without ``others``)."""
    r = acc.run
    summ = acc.summary
    rows: list[dict[str, object]] = []
    reasons: dict[str, Reason] = {}

    def add(family: str, metric: str, value: float | None, unit: str, note: str = "") -> None:
        rows.append({"family": family, "metric": metric,
                     "value": float("nan") if value is None else float(value), "unit": unit, "note": note})
        if isinstance(note, Reason):  # the note's code, which a text column does not keep
            reasons[metric] = note

    _model_progress(acc, add)
    _compute_efficiency(acc, summ, add)
    _scaling(r, others, add)
    _reliability(acc, add)
    out = pd.DataFrame(rows, columns=["family", "metric", "value", "unit", "note"])
    out.attrs["reasons"] = reasons  # metric -> Reason, for the front ends to phrase
    return out


Add = Callable[..., None]  # add(family, metric, value, unit, note="")


def _model_progress(acc: Accounting, add: Add) -> None:
    """Samples/s, tokens/s and model FLOP/s at steady state and end to end; useful steps."""
    wall = acc.wall_s
    for metric, unit in (("samples_per_s", "samples/s"), ("tokens_per_s", "tokens/s"), ("flops_per_s", "FLOP/s")):
        steady, why = run_throughput(acc, metric=metric)
        e2e = None
        if steady is not None and acc.ideal_step_s and wall > 0:
            # end to end: the same useful work over the whole wall time
            e2e = steady * acc.steady_s / wall
        name = {"flops_per_s": "model_flops_per_s"}.get(metric, metric)
        add("model_progress", f"{name}_steady", steady, unit, why)
        add("model_progress", f"{name}_end_to_end", e2e, unit, why)
    add("model_progress", "useful_steps", acc.useful_steps, "steps")


def _compute_efficiency(acc: Accounting, summ: MFUSummary, add: Add) -> None:
    """MFU, HFU, goodput, exposed communication (where the run states it) and the accelerators' idle share."""
    add("compute_efficiency", "steady_state_mfu", summ.steady_state_mfu, "fraction",
        summ.reasons.get("steady_state_mfu", ""))
    add("compute_efficiency", "end_to_end_mfu", summ.end_to_end_mfu, "fraction", summ.reasons.get("end_to_end_mfu", ""))
    add("compute_efficiency", "steady_state_hfu", summ.steady_state_hfu, "fraction",
        summ.reasons.get("steady_state_hfu", ""))
    add("compute_efficiency", "goodput", summ.goodput, "fraction", "ideal compute time / wall time")
    if acc.exposed_comm_basis:  # the waterfall's exposed_comm slice, listed only where the run states it
        add("compute_efficiency", "exposed_comm_share",
            acc.seconds["exposed_comm"] / acc.wall_s if acc.wall_s > 0 else None, "fraction",
            "the part of the ideal step that communication with no compute beside it takes, over wall time "
            "(the waterfall's exposed_comm)")
    idle, why = gpu_idle_share(acc.run)
    add("compute_efficiency", "gpu_idle_share", idle, "fraction", why)


def _scaling(r: Run, others: Sequence[Run] | None, add: Add) -> None:
    """Scaling efficiency against the smallest of ``others``, on both step times.

    Two step times, two answers: the ideal (typical GPU's) step leaves out the wait for the
    slowest rank, which grows with N; the mean actual step includes it (notebook 07)."""
    for metric, step_time, what in (("scaling_efficiency", "typical",
                                     "ideal step, waits for the slowest rank excluded"),
                                    ("scaling_efficiency_actual", "actual", "mean actual step, waits included")):
        if not others:
            add("scaling_efficiency", metric, None, "fraction", "needs runs at other sizes (others=[...])")
            continue
        try:
            allruns = [r, *others]
            tab = scaling_from_runs(allruns, names=[f"run{i}" for i in range(len(allruns))], step_time=step_time)
            mine = tab[tab["run"] == "run0"].iloc[0]
            add("scaling_efficiency", metric, mine["scaling_efficiency"], "fraction",
                f"vs {int(tab['n_accelerators'].iloc[0])} accelerators, samples/s on the {what}")
        except ValueError as exc:
            add("scaling_efficiency", metric, None, "fraction", str(exc))


def _reliability(acc: Accounting, add: Add) -> None:
    """Failures, restarts, recovery, checkpoints, lost work and the straggler tail."""
    ck = checkpoint_report(acc)
    add("reliability", "failures", ck.failures, "count")
    add("reliability", "restarts", ck.restarts, "count")
    add("reliability", "mean_time_to_recover_s", ck.mean_time_to_recover_s, "s",
        "" if ck.mean_time_to_recover_s is not None else "no restart in the run")
    add("reliability", "failure_downtime_s", ck.failure_downtime_s, "s")
    add("reliability", "lost_work_s", ck.lost_work_s, "s")
    add("reliability", "checkpoint_s_total", ck.checkpoint_s_total, "s")
    add("reliability", "checkpoint_s_median", ck.checkpoint_s_median, "s",
        "" if ck.checkpoint_s_median is not None else "no blocking checkpoint events")
    span = acc.steps.loc[~acc.steps["lost"] & acc.steps["in_window"], "span_s"].to_numpy(float)
    if len(span):
        p50, p99 = np.percentile(span, [50, 99])
        add("reliability", "step_time_p50_s", p50, "s", "steady-state window")
        add("reliability", "step_time_p99_s", p99, "s", "steady-state window")
        add("reliability", "straggler_tail_p99_p50", p99 / p50 if p50 > 0 else None, "ratio", "steady-state window")
    else:
        for m in ("step_time_p50_s", "step_time_p99_s", "straggler_tail_p99_p50"):
            add("reliability", m, None, "s" if m.endswith("_s") else "ratio", "no steps in the steady-state window")
    wall = acc.wall_s
    add("reliability", "straggler_share", acc.seconds["stragglers"] / wall if wall > 0 else None, "fraction",
        "wall time spent waiting for the slowest rank")
