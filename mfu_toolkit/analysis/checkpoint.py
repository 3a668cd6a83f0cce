"""Checkpoints and failures: optimal intervals, expected overhead, and what a Run shows.

Symbols: ``δ`` checkpoint time (the part that blocks training), ``M`` mean time between failures
of the whole job, ``τ`` compute time between checkpoints, ``R`` restart time (failure → training
again, including the checkpoint load).

- Young 1974, "A first order approximation to the optimum checkpoint interval", CACM 17(9):
  ``τ = √(2δM)``.
- Daly 2006, "A higher order estimate of the optimum checkpoint interval for restart dumps",
  FGCS 22(3): ``τ = √(2δM)·[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ`` for ``δ < 2M``, else ``M``.
- Expected overhead of an interval (first order; its exact minimum, ``τ = √(2δM) − δ``, lies just
  below Daly's interval when ``δ ≪ M``, as Young's model counts segments of ``τ`` rather than
  ``τ + δ``): per unit of wall time, checkpointing costs ``δ/(τ+δ)``; failures arrive at rate
  ``1/M`` and each costs ``R`` plus the work since the last durable checkpoint — on average half a
  segment, ``(τ+δ)/2``, for
  blocking checkpoints; for asynchronous ones the snapshot becomes durable only when the
  background write (``write_s``) ends, so ``τ/2 + write_s`` is lost on average.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from .accounting import Accounting, accounted, is_background

__all__ = [
    "CHECKPOINT_MODES",
    "young_interval",
    "daly_interval",
    "job_mtbf",
    "checkpoint_overhead",
    "interval_table",
    "ReferenceScenario",
    "REFERENCE_SCENARIOS",
    "LLAMA3_405B",
    "reference_scenarios",
    "CheckpointReport",
    "checkpoint_report",
]

CHECKPOINT_MODES = ("blocking", "async")
HOUR = 3600.0
DAY = 86400.0


def _pos(name: str, value: Any, *, allow_zero: bool = False) -> float:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value >= 0 if allow_zero else value > 0)
    if not ok:
        raise ValueError(f"{name} must be a finite number {'>= 0' if allow_zero else '> 0'} (seconds); got {value!r}")
    return float(value)


def young_interval(*, checkpoint_s: float, mtbf_s: float) -> float:
    """Young's optimal compute time between checkpoints, ``√(2δM)`` (Young 1974)."""
    d = _pos("checkpoint_s", checkpoint_s)
    m = _pos("mtbf_s", mtbf_s)
    return math.sqrt(2.0 * d * m)


def daly_interval(*, checkpoint_s: float, mtbf_s: float) -> float:
    """Daly's higher-order optimum (Daly 2006); ``M`` itself when ``δ >= 2M``."""
    d = _pos("checkpoint_s", checkpoint_s)
    m = _pos("mtbf_s", mtbf_s)
    if d >= 2.0 * m:
        return m
    r = d / (2.0 * m)
    return math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(r) / 3.0 + r / 9.0) - d


def job_mtbf(
    *,
    n_accelerators: int,
    accelerator_mtbf_s: float | None = None,
    node_mtbf_s: float | None = None,
    accelerators_per_node: int = 8,
) -> float:
    """Job MTBF from a per-accelerator or per-node MTBF, assuming independent failures.

    Failure rates add: ``M_job = M_unit / units`` (``units`` accelerators or nodes). Give exactly
    one of ``accelerator_mtbf_s`` and ``node_mtbf_s``.
    """
    if isinstance(n_accelerators, bool) or not isinstance(n_accelerators, (int, np.integer)) or n_accelerators < 1:
        raise ValueError(f"n_accelerators must be an integer >= 1; got {n_accelerators!r}")
    if (accelerator_mtbf_s is None) == (node_mtbf_s is None):
        raise ValueError(
            "give exactly one of accelerator_mtbf_s and node_mtbf_s; got "
            f"accelerator_mtbf_s={accelerator_mtbf_s!r}, node_mtbf_s={node_mtbf_s!r}"
        )
    if accelerator_mtbf_s is not None:
        return _pos("accelerator_mtbf_s", accelerator_mtbf_s) / n_accelerators
    if (isinstance(accelerators_per_node, bool) or not isinstance(accelerators_per_node, (int, np.integer))
            or accelerators_per_node < 1):
        raise ValueError(f"accelerators_per_node must be an integer >= 1; got {accelerators_per_node!r}")
    nodes = math.ceil(n_accelerators / accelerators_per_node)
    return _pos("node_mtbf_s", node_mtbf_s) / nodes


def checkpoint_overhead(
    *,
    interval_s: float,
    checkpoint_s: float,
    mtbf_s: float,
    restart_s: float = 0.0,
    mode: str = "blocking",
    write_s: float | None = None,
) -> dict[str, float]:
    """Expected fraction of wall time lost to checkpoints, lost work and restarts (first order).

    ``interval_s`` is compute time between checkpoints; ``checkpoint_s`` the time training is
    blocked per checkpoint (for ``mode="async"``: the snapshot stall); ``write_s`` the background
    write of an async checkpoint (default ``checkpoint_s``). Returns a dict of fractions:
    ``checkpoint``, ``lost_work``, ``restart``, ``total`` and ``useful`` (= 1 − total, floored at 0).
    """
    tau = _pos("interval_s", interval_s)
    d = _pos("checkpoint_s", checkpoint_s, allow_zero=True)
    m = _pos("mtbf_s", mtbf_s)
    r = _pos("restart_s", restart_s, allow_zero=True)
    if mode not in CHECKPOINT_MODES:
        raise ValueError(f"mode must be one of {', '.join(CHECKPOINT_MODES)}; got {mode!r}")
    if mode == "blocking":
        lost = (tau + d) / 2.0
    else:
        w = d if write_s is None else _pos("write_s", write_s, allow_zero=True)
        lost = tau / 2.0 + w
    ck = d / (tau + d)
    lw = lost / m
    rs = r / m
    total = ck + lw + rs
    return {"checkpoint": ck, "lost_work": lw, "restart": rs, "total": total, "useful": max(0.0, 1.0 - total)}


def interval_table(
    *,
    checkpoint_s: float,
    mtbf_s: float,
    restart_s: float = 0.0,
    intervals_s: list[float] | np.ndarray | None = None,
    mode: str = "blocking",
    write_s: float | None = None,
) -> pd.DataFrame:
    """Expected overhead over a range of intervals, with Young's and Daly's optima marked."""
    y = young_interval(checkpoint_s=max(checkpoint_s, 1e-12), mtbf_s=mtbf_s)
    dl = daly_interval(checkpoint_s=max(checkpoint_s, 1e-12), mtbf_s=mtbf_s)
    if intervals_s is None:
        intervals_s = np.geomspace(max(y / 20, 1e-3), y * 20, 41)
    rows = []
    for t in [*np.asarray(intervals_s, dtype=float), y, dl]:
        o = checkpoint_overhead(interval_s=float(t), checkpoint_s=checkpoint_s, mtbf_s=mtbf_s,
                                restart_s=restart_s, mode=mode, write_s=write_s)
        rows.append({"interval_s": float(t), **o,
                     "marker": "young" if t == y else ("daly" if t == dl else "")})
    return pd.DataFrame(rows).sort_values("interval_s", kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# reference scenarios


@dataclass(frozen=True)
class ReferenceScenario:
    """A published failure record of a real job, with its source."""

    name: str
    model: str
    accelerator: str
    n_accelerators: int
    period_days: float
    interruptions: int
    unexpected_interruptions: int
    source: str
    note: str = ""

    @property
    def period_s(self) -> float:
        return self.period_days * DAY

    @property
    def job_mtbf_s(self) -> float:
        """Mean time between interruptions of any kind."""
        return self.period_s / self.interruptions

    @property
    def unexpected_mtbf_s(self) -> float:
        """Mean time between unexpected interruptions."""
        return self.period_s / self.unexpected_interruptions

    @property
    def accelerator_mtbf_s(self) -> float:
        """Implied per-accelerator MTBF for unexpected interruptions (all N assumed in use)."""
        return self.unexpected_mtbf_s * self.n_accelerators

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(
            job_mtbf_h=self.job_mtbf_s / HOUR,
            unexpected_mtbf_h=self.unexpected_mtbf_s / HOUR,
            accelerator_mtbf_h=self.accelerator_mtbf_s / HOUR,
        )
        return d


LLAMA3_405B = ReferenceScenario(
    name="llama3-405b-pretraining",
    model="Llama 3 405B",
    accelerator="H100",
    n_accelerators=16384,
    period_days=54.0,
    interruptions=466,
    unexpected_interruptions=419,
    source=(
        "Llama Team, 'The Llama 3 Herd of Models', arXiv:2407.21783 (2024), Sec. 3.3.4 "
        "'Reliability and Operational Challenges': 466 job interruptions in a 54-day "
        "snapshot of pre-training, 47 planned (maintenance) and 419 unexpected"
    ),
    note="'up to 16K H100 GPUs': N = 16,384 is an upper bound, so accelerator_mtbf_s is too",
)

REFERENCE_SCENARIOS: dict[str, ReferenceScenario] = {LLAMA3_405B.name: LLAMA3_405B}


def reference_scenarios() -> pd.DataFrame:
    """The reference scenarios as a table, with derived MTBFs in hours."""
    return pd.DataFrame([s.to_dict() for s in REFERENCE_SCENARIOS.values()])


# --------------------------------------------------------------------------------------------
# from a Run


@dataclass(frozen=True)
class CheckpointReport:
    """Checkpoints, failures and their cost as measured in a Run, against the optimum."""

    checkpoints: int
    blocking_checkpoints: int
    background_writes: int
    checkpoint_s_median: float | None
    checkpoint_s_total: float
    checkpoint_load_s_total: float
    interval_s_median: float | None
    interval_steps_median: float | None
    failures: int
    restarts: int
    lost_work_s: float
    failure_downtime_s: float
    mean_time_to_recover_s: float | None
    running_s: float
    mtbf_s: float | None
    mtbf_source: str
    observed_overhead: float
    young_interval_s: float | None
    daly_interval_s: float | None
    interval_vs_daly: float | None
    expected_overhead_used: float | None
    expected_overhead_optimal: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"metric": list(self.to_dict()), "value": list(self.to_dict().values())})

    def lines(self) -> list[str]:
        def s(v: float | None, unit: str = " s") -> str:
            return "n/a" if v is None else f"{v:,.3f}{unit}"

        out = [
            f"Checkpoints: {self.checkpoints} (median {s(self.checkpoint_s_median)} blocking, "
            f"every {s(self.interval_s_median)} / {self.interval_steps_median or 'n/a'} steps)",
            f"Failures: {self.failures}, restarts: {self.restarts}, lost work {s(self.lost_work_s)}, "
            f"downtime {s(self.failure_downtime_s)}",
            f"Observed overhead (checkpoint + load + lost work + downtime): {self.observed_overhead:.2%} of wall time",
        ]
        if self.daly_interval_s is not None:
            out.append(
                f"Optimal interval (Daly) {s(self.daly_interval_s)} with MTBF {s(self.mtbf_s)} "
                f"({self.mtbf_source}); used/optimal = {self.interval_vs_daly:.2f}"
                if self.interval_vs_daly is not None
                else f"Optimal interval (Daly) {s(self.daly_interval_s)}"
            )
        return out


def _checkpoint_intervals(src: pd.DataFrame, js: pd.DataFrame) -> tuple[float | None, float | None]:
    """Median seconds and steps between checkpoint starts, within an attempt, never across a restart."""
    gaps_s: list[float] = []
    gaps_steps: list[float] = []
    for _a, grp in src.groupby("attempt"):
        t = np.sort(grp["start_s"].to_numpy(float))
        if len(t) < 2:
            continue
        gaps_s.extend(np.diff(t))
        mine = js[(js["attempt"] == _a) & ~js["inferred"]]
        if len(mine):
            ends = mine["end_s"].to_numpy(float)
            order = np.argsort(ends, kind="stable")
            idx = np.searchsorted(ends[order], t, side="right") - 1
            st = mine["step"].to_numpy()[order][np.maximum(idx, 0)]
            d = np.diff(st[idx >= 0])
            gaps_steps.extend(d[d > 0])
    interval = float(np.median(gaps_s)) if gaps_s else None
    interval_steps = float(np.median(gaps_steps)) if gaps_steps else None
    return interval, interval_steps


def _report_mtbf(mtbf_s: float | None, running: float, failures: int, restarts: int) -> tuple[float | None, str]:
    """The MTBF for the optimum (given, or observed from failures or restarts) and where it came from."""
    if mtbf_s is not None:
        return _pos("mtbf_s", mtbf_s), "given"
    if failures or restarts:
        mtbf = running / (failures or restarts)
        return mtbf, f"observed: running time / {failures or restarts} {'failures' if failures else 'restarts'}"
    return None, "unknown: no failure in the run (pass mtbf_s)"


def _report_optimum(
    mtbf: float | None, delta: float | None, interval: float | None, restart_s: float
) -> dict[str, float | None]:
    """Young and Daly intervals, used/Daly and both expected overheads, keyed by the report's field names."""
    young = daly = ratio = exp_used = exp_opt = None
    if mtbf and delta and delta > 0:
        young = young_interval(checkpoint_s=delta, mtbf_s=mtbf)
        daly = daly_interval(checkpoint_s=delta, mtbf_s=mtbf)
        exp_opt = checkpoint_overhead(interval_s=daly, checkpoint_s=delta, mtbf_s=mtbf, restart_s=restart_s)["total"]
        if interval is not None:
            tau = max(interval - delta, 1e-9)  # compute time between checkpoints
            ratio = tau / daly
            exp_used = checkpoint_overhead(interval_s=tau, checkpoint_s=delta, mtbf_s=mtbf,
                                           restart_s=restart_s)["total"]
    return {
        "young_interval_s": young,
        "daly_interval_s": daly,
        "interval_vs_daly": ratio,
        "expected_overhead_used": exp_used,
        "expected_overhead_optimal": exp_opt,
    }


def checkpoint_report(run: Run | Accounting, *, mtbf_s: float | None = None,
                      restart_s: float | None = None) -> CheckpointReport:
    """Measured checkpoint cost and interval, failures, lost work and downtime; distance to optimum.

    MTBF: ``mtbf_s`` when given, else the run's running time (wall minus downtime) divided by its
    failures (restarts when no failure events exist); ``None`` when the run never failed. The
    optimum uses the median blocking checkpoint time as ``δ``.
    """
    acc = accounted(run)
    r = acc.run
    ev = r.events
    ck = ev[ev["kind"] == "checkpoint_save"]
    bg = is_background(ck) if len(ck) else np.zeros(0, bool)
    blocking = ck[~bg]
    dur = (blocking["end_s"] - blocking["start_s"]).to_numpy(float)
    n_ck = int(len(blocking) + (bg.sum() if not len(blocking) else 0))
    # checkpoint instants (blocking starts, or background starts when only those exist)
    interval, interval_steps = _checkpoint_intervals(blocking if len(blocking) else ck, acc.steps)
    failures = int((ev["kind"] == "failure").sum())
    restarts = max(r.n_attempts - 1, 0)
    sec = acc.seconds
    down = sec["failure_downtime"]
    recover_events = max(failures, restarts)
    mttr = (down + sec["checkpoint_load"]) / recover_events if recover_events else None
    running = acc.wall_s - down
    mtbf, src = _report_mtbf(mtbf_s, running, failures, restarts)
    delta = float(np.median(dur)) if len(dur) else None
    optimum = _report_optimum(mtbf, delta, interval, restart_s if restart_s is not None else (mttr or 0.0))
    observed = (
        (sec["checkpoint_save"] + sec["checkpoint_load"] + sec["lost_work"] + down) / acc.wall_s
        if acc.wall_s > 0
        else float("nan")
    )
    return CheckpointReport(
        checkpoints=n_ck,
        blocking_checkpoints=int(len(blocking)),
        background_writes=int(bg.sum()) if len(ck) else 0,
        checkpoint_s_median=delta,
        checkpoint_s_total=sec["checkpoint_save"],
        checkpoint_load_s_total=sec["checkpoint_load"],
        interval_s_median=interval,
        interval_steps_median=interval_steps,
        failures=failures,
        restarts=restarts,
        lost_work_s=sec["lost_work"],
        failure_downtime_s=down,
        mean_time_to_recover_s=mttr,
        running_s=running,
        mtbf_s=mtbf,
        mtbf_source=src,
        observed_overhead=observed,
        **optimum,
    )
