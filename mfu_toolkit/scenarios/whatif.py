"""What-if scenarios behind the explorers: plain values in, a small frozen result out.

Each function answers one question with a table (``.table``, a DataFrame) and a few headline
numbers; the widgets in :mod:`mfu_toolkit.widgets` only wire sliders to them and show
``.headline``, so everything a user sees is tested here without a browser.

- :func:`gap_scenario`        simulate a small run with the given knobs → the waterfall from
  steady-state to end-to-end MFU (:func:`~mfu_toolkit.analysis.waterfall.breakdown`).
- :func:`straggler_scenario`  expected synchronous step time with jitter and slow ranks, from
  order statistics (:func:`~mfu_toolkit.scenarios.order_stats.expected_sync_step`, re-exported
  here), for one job size and as a curve over job sizes.
- :func:`checkpoint_scenario` job MTBF from a failure rate, Young and Daly intervals, and the
  expected overhead at a chosen interval and at the optimum (first-order model of
  :func:`~mfu_toolkit.analysis.checkpoint.checkpoint_overhead`).
- :func:`gem_scenario`        the seed's story: 4× training FLOPs at 2× end-to-end efficiency
  costs 2× the GPU-hours, not 4×; days, GPU-hours and the idle share of the paid GPU-hours.

Definitions used throughout: *steady-state MFU* is model FLOPs per ideal step / step time /
cluster peak; *end-to-end MFU* is useful model FLOPs / wall time / cluster peak; *goodput* is
their ratio. "End-to-end efficiency" means end-to-end MFU.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import hardware
from ..analysis.accounting import account
from ..analysis.checkpoint import (
    DAY,
    HOUR,
    LLAMA3_405B,
    checkpoint_overhead,
    daly_interval,
    job_mtbf,
    young_interval,
)
from ..analysis.waterfall import breakdown
from ..deprecation import renamed
from .order_stats import check_int, check_number, expected_sync_step
from .simulate import SimConfig, simulate

__all__ = [
    "ASYNC_STALL_FRACTION",
    "YEAR_S",
    "LLAMA3_FAILURES_PER_GPU_YEAR",
    "STRAGGLER_RANKS",
    "GapResult",
    "gap_scenario",
    "StragglerResult",
    "straggler_scenario",
    "expected_sync_step",
    "CheckpointResult",
    "checkpoint_scenario",
    "GemResult",
    "gem_scenario",
    "format_duration",
]

YEAR_S = 365.25 * DAY  # a Julian year, in seconds
#: Unexpected interruptions per GPU per year implied by Llama 3 405B pre-training (419 in 54 days
#: on up to 16,384 H100s; arXiv:2407.21783 Sec. 3.3.4) — a lower bound, since N is an upper bound.
LLAMA3_FAILURES_PER_GPU_YEAR = YEAR_S / LLAMA3_405B.accelerator_mtbf_s
#: Default blocking snapshot of an asynchronous checkpoint, as a fraction of its write time. An
#: illustrative assumption (the copy to host memory is usually much shorter than the write to
#: storage); pass your own measured stall instead.
ASYNC_STALL_FRACTION = 0.1
#: Job sizes of the straggler curve: powers of two from 1 to 16,384 ranks.
STRAGGLER_RANKS: tuple[int, ...] = tuple(2**k for k in range(15))


def format_duration(seconds: float) -> str:
    """``45`` -> ``'45.0 s'``, ``750`` -> ``'12.5 min'``, ``11520`` -> ``'3.20 h'``, days past 48 h."""
    s = float(seconds)
    if not math.isfinite(s):
        return "n/a"
    if abs(s) < 120:
        return f"{s:.1f} s"
    if abs(s) < 2 * HOUR:
        return f"{s / 60:.1f} min"
    if abs(s) < 2 * DAY:
        return f"{s / HOUR:.2f} h"
    return f"{s / DAY:.1f} d"


# --------------------------------------------------------------------------------------------
# gap: simulator knobs -> waterfall


@dataclass(frozen=True)
class GapResult:
    """A simulated run's waterfall (``table``: :func:`breakdown` columns) and its two MFUs."""

    table: pd.DataFrame = field(repr=False)
    steady_state_mfu: float
    end_to_end_mfu: float
    goodput: float
    wall_s: float
    failures: int
    config: SimConfig = field(repr=False)

    @property
    def largest_loss(self) -> tuple[str, float]:
        """The loss category with the largest share of wall time, and that share."""
        cats = self.table["category"].to_numpy()
        top = np.flatnonzero(cats != "ideal_compute")[0]  # breakdown() sorts losses by share, largest first
        return str(cats[top]), float(self.table["share"].to_numpy()[top])

    @property
    def headline(self) -> str:
        cat, share = self.largest_loss
        return (
            f"End-to-end MFU {self.end_to_end_mfu:.2%} vs steady-state {self.steady_state_mfu:.2%}"
            f" (goodput {self.goodput:.1%}; largest loss: {cat.replace('_', ' ')} {share:.1%} of wall time)"
        )


def gap_scenario(
    *,
    ranks: int = 16,
    steps: int = 300,
    jitter: float = 0.05,
    stragglers: int = 1,
    slowdown: float = 1.10,
    data_stall: float = 0.02,
    eval_every: int = 150,
    checkpoint_every: int = 60,
    checkpoint_s: float = 15.0,
    async_checkpoint: bool = False,
    mtbf_hours: float | None = 0.2,
    restart_s: float = 60.0,
    seed: int = 0,
    step_s: float = 2.0,
    data_stall_s: float = 4.0,
    eval_s: float = 20.0,
    init_s: float = 60.0,
    target_mfu: float = 0.4,
) -> GapResult:
    """Simulate a small synchronous run with these knobs and account for its wall time.

    ``ranks`` × ``steps`` of ``step_s`` seconds with lognormal ``jitter`` (sigma, mean one);
    ``stragglers`` persistently slow ranks, ``slowdown`` × slower; a job-wide input stall of
    ``data_stall_s`` before a step with probability ``data_stall``; an evaluation of ``eval_s``
    every ``eval_every`` steps and a checkpoint every ``checkpoint_every`` steps (0: none) whose
    write takes ``checkpoint_s`` — blocking, or with ``async_checkpoint`` a snapshot stall of
    ``ASYNC_STALL_FRACTION × checkpoint_s`` and the write in the background; failures with a
    job MTBF of ``mtbf_hours`` (``None``: none), each followed by ``restart_s`` of downtime, an
    ``init_s`` restart and a checkpoint load as long as the write. ``target_mfu`` is the
    steady-state MFU the FLOPs per step are set for. The defaults run in a few tens of ms.

    Returns the waterfall table of :func:`~mfu_toolkit.analysis.waterfall.breakdown` (seconds
    per category summing to the wall time) with steady-state and end-to-end MFU. Raises
    ``ValueError`` (``SimConfigError``) naming a bad parameter, including a job that cannot
    finish because failures come faster than checkpoints.
    """
    rank_knobs = _gap_rank_knobs(ranks, stragglers, slowdown)
    failure_knobs = _gap_failure_knobs(mtbf_hours, restart_s)
    checkpoint_knobs = _gap_checkpoint_knobs(checkpoint_every, checkpoint_s, async_checkpoint)
    cfg = SimConfig(
        n_steps=steps,
        step_time_s=step_s,
        jitter=jitter,
        data_stall_prob=data_stall,
        data_stall_s=data_stall_s,
        init_s=init_s,
        eval_every=eval_every,
        eval_s=eval_s,
        target_mfu=target_mfu,
        seed=seed,
        name="gap-scenario",
        **rank_knobs,
        **checkpoint_knobs,
        **failure_knobs,
    )
    return _gap_result(cfg)


def _gap_rank_knobs(ranks: int, stragglers: int, slowdown: float) -> dict[str, Any]:
    """The job size and its persistently slow ranks, as :class:`SimConfig` fields (ranks checked)."""
    ranks = check_int("ranks", ranks, lo=1)
    stragglers = check_int("stragglers", stragglers, lo=0, hi=ranks)
    # spread the slow ranks over the job rather than packing them at rank 0..k-1
    slow = tuple(int(r) for r in np.linspace(0, ranks - 1, stragglers).round()) if stragglers else ()
    return {"n_ranks": ranks, "slow_ranks": slow, "slow_factor": slowdown}


def _gap_failure_knobs(mtbf_hours: float | None, restart_s: float) -> dict[str, Any]:
    """Failures with a job MTBF of ``mtbf_hours`` (``None``: none), as :class:`SimConfig` fields."""
    mtbf_s = None if mtbf_hours is None else check_number("mtbf_hours", mtbf_hours, lo=0.0, strict=True) * HOUR
    return {"mtbf_s": mtbf_s, "restart_s": restart_s, "max_attempts": 200}


def _gap_checkpoint_knobs(checkpoint_every: int, checkpoint_s: float, async_checkpoint: bool) -> dict[str, Any]:
    """Blocking or asynchronous checkpoints (load as long as the write), as :class:`SimConfig` fields."""
    if not isinstance(async_checkpoint, bool):
        raise ValueError(f"async_checkpoint must be True or False; got {async_checkpoint!r}")
    checkpoint_s = check_number("checkpoint_s", checkpoint_s, lo=0.0)
    return {
        "checkpoint_every": checkpoint_every,
        "checkpoint_s": checkpoint_s,
        "checkpoint_mode": "async" if async_checkpoint else "blocking",
        "async_stall_s": ASYNC_STALL_FRACTION * checkpoint_s,
        "checkpoint_load_s": checkpoint_s,
    }


def _gap_result(cfg: SimConfig) -> GapResult:
    """Simulate ``cfg`` and account for its wall time: the waterfall and both MFUs."""
    run = simulate(cfg, validate=False)  # valid by construction; the simulator's tests check it
    acc = account(run)
    table = breakdown(acc)  # its attrs carry both MFUs (mfu_summary of the same Accounting)
    ss, e2e = table.attrs["steady_state_mfu"], table.attrs["end_to_end_mfu"]
    if ss is None or e2e is None:  # pragma: no cover - simulated runs carry FLOPs and the peak
        raise ValueError(f"no MFU for the simulated run: {table.attrs['reasons']}")
    return GapResult(
        table=table,
        steady_state_mfu=float(ss),
        end_to_end_mfu=float(e2e),
        goodput=float(acc.goodput),
        wall_s=float(acc.wall_s),
        failures=int(run.meta.extra["injected"]["failures"]),
        config=cfg,
    )


# --------------------------------------------------------------------------------------------
# stragglers: order statistics with jitter and slow ranks


@dataclass(frozen=True)
class StragglerResult:
    """Expected synchronous step time at one job size, and the curve over job sizes (``table``).

    ``table`` columns: ``n_ranks``, ``expected_step_s``, ``jitter_only_step_s`` (no slow rank),
    ``slowdown`` (expected / base), ``lost_share`` (1 − base / expected: the share of each step
    spent waiting for the slowest rank) and ``lost_share_jitter_only``.
    """

    table: pd.DataFrame = field(repr=False)
    ranks: int
    base_step_s: float
    expected_step_s: float
    jitter_only_step_s: float
    lost_share: float
    jitter_lost_share: float

    @property
    def slow_rank_lost_share(self) -> float:
        """The part of the lost share the slow ranks add on top of jitter."""
        return self.lost_share - self.jitter_lost_share

    @property
    def headline(self) -> str:
        return (
            f"Expected step {self.expected_step_s:.3f} s at {self.ranks:,} ranks "
            f"(base {self.base_step_s:g} s): {self.lost_share:.1%} of each step lost waiting for the "
            f"slowest rank ({self.jitter_lost_share:.1%} jitter, {self.slow_rank_lost_share:.1%} slow ranks)"
        )


def straggler_scenario(
    *,
    ranks: int = 1024,
    jitter_cv: float = 0.05,
    slow_ranks: int = 0,
    slowdown: float = 1.2,
    base_step_s: float = 1.0,
) -> StragglerResult:
    """Why the same jitter costs more at scale: the synchronous step waits for the slowest rank.

    Expected step time from order statistics (:func:`expected_sync_step`); the lost share is
    ``1 − base_step_s / E[step]``. The curve covers 1 … 16,384 ranks (powers of two) plus
    ``ranks``; ``slow_ranks`` is a count of persistently slow ranks (e.g. bad hosts), the same at
    every job size (all ranks, when the job is smaller).
    """
    ranks = check_int("ranks", ranks, lo=1)
    sizes = np.array(sorted(set(STRAGGLER_RANKS) | {ranks}), dtype=np.int64)
    both = expected_sync_step(sizes, jitter_cv=jitter_cv, slow_ranks=slow_ranks, slowdown=slowdown,
                              base_step_s=base_step_s)
    jit = expected_sync_step(sizes, jitter_cv=jitter_cv, base_step_s=base_step_s)
    base = float(base_step_s)
    table = pd.DataFrame(
        {
            "n_ranks": sizes,
            "expected_step_s": both,
            "jitter_only_step_s": jit,
            "slowdown": both / base,
            "lost_share": 1.0 - base / both,
            "lost_share_jitter_only": 1.0 - base / jit,
        }
    )
    row = table.loc[table["n_ranks"] == ranks].iloc[0]
    return StragglerResult(
        table=table,
        ranks=ranks,
        base_step_s=base,
        expected_step_s=float(row["expected_step_s"]),
        jitter_only_step_s=float(row["jitter_only_step_s"]),
        lost_share=float(row["lost_share"]),
        jitter_lost_share=float(row["lost_share_jitter_only"]),
    )


# --------------------------------------------------------------------------------------------
# checkpoints


@dataclass(frozen=True)
class CheckpointResult:
    """Checkpoint interval what-if: job MTBF, optima, overheads, and the curve (``table``).

    ``table`` columns: ``interval_s``, ``interval_h``, the overhead fractions of
    :func:`~mfu_toolkit.analysis.checkpoint.checkpoint_overhead` (``checkpoint``, ``lost_work``,
    ``restart``, ``total``, ``useful``) and ``marker`` (``""``, ``"young"``, ``"daly"``,
    ``"optimum"``, ``"chosen"``).
    """

    table: pd.DataFrame = field(repr=False)
    mtbf_s: float
    blocking_s: float
    write_s: float
    restart_s: float
    mode: str
    young_s: float
    daly_s: float
    optimum_s: float
    optimum_rule: str
    interval_s: float
    overhead: float
    optimum_overhead: float
    parts: dict[str, float] = field(repr=False)

    @property
    def headline(self) -> str:
        return (
            f"Overhead {self.overhead:.2%} with a checkpoint every {format_duration(self.interval_s)}; "
            f"optimum {self.optimum_overhead:.2%} every {format_duration(self.optimum_s)} "
            f"({self.optimum_rule}); job MTBF {format_duration(self.mtbf_s)}"
        )


@renamed(gpus="n_accelerators", failures_per_gpu_per_year="failures_per_accelerator_per_year",
         gpus_per_node="accelerators_per_node")
def checkpoint_scenario(
    *,
    n_accelerators: int = 16384,
    failures_per_accelerator_per_year: float | None = None,
    node_mtbf_hours: float | None = None,
    accelerators_per_node: int = 8,
    checkpoint_s: float = 60.0,
    blocking: bool = True,
    async_stall_s: float | None = None,
    restart_s: float = 600.0,
    interval_s: float | None = None,
) -> CheckpointResult:
    """Expected checkpoint + failure overhead of a job, at a chosen interval and at the optimum.

    Failure rate: ``failures_per_accelerator_per_year`` (default: the Llama 3 405B rate,
    :data:`LLAMA3_FAILURES_PER_GPU_YEAR`) or ``node_mtbf_hours`` per node of ``accelerators_per_node``;
    rates add, so the job MTBF is the unit MTBF over the unit count (:func:`job_mtbf`).
    ``checkpoint_s`` is the time to write one checkpoint. ``blocking=True``: training waits for
    the whole write (δ = ``checkpoint_s``); ``False``: training waits only for a snapshot
    (δ = ``async_stall_s``, default ``ASYNC_STALL_FRACTION × checkpoint_s``) while the write
    goes on in the background, and a checkpoint is durable only once written.
    ``restart_s``: failure → training again (detection, reschedule, init, load).
    ``interval_s``: compute time between checkpoints; ``None`` takes the optimum.

    Optima: Young 1974 ``√(2δM)``; Daly 2006 ``√(2δM)·[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ``
    (``M`` for δ ≥ 2M). The optimum is Daly's interval; for asynchronous checkpoints it is at
    least the write time (one background write in flight at a time; the overhead is convex in
    the interval, so the clamped value is the constrained optimum of the model).
    """
    n = check_int("n_accelerators", n_accelerators, lo=1)
    per_node = check_int("accelerators_per_node", accelerators_per_node, lo=1)
    m = _scenario_mtbf(n, per_node, failures_per_accelerator_per_year, node_mtbf_hours)
    write = check_number("checkpoint_s", checkpoint_s, lo=0.0, strict=True)
    mode, delta = _blocking_time(write, blocking, async_stall_s)
    restart = check_number("restart_s", restart_s, lo=0.0)
    return _checkpoint_result(m, delta=delta, write=write, restart=restart, mode=mode, interval_s=interval_s)


def _scenario_mtbf(
    n: int, per_node: int, failures_per_year: float | None, node_mtbf_hours: float | None
) -> float:
    """The job MTBF from a per-GPU failure rate (default: Llama 3's) or a node MTBF, never both."""
    if failures_per_year is not None and node_mtbf_hours is not None:
        raise ValueError(
            "give at most one of failures_per_accelerator_per_year and node_mtbf_hours; got "
            f"failures_per_accelerator_per_year={failures_per_year!r}, node_mtbf_hours={node_mtbf_hours!r}"
        )
    if node_mtbf_hours is not None:
        node_mtbf_s = check_number("node_mtbf_hours", node_mtbf_hours, lo=0.0, strict=True) * HOUR
        return job_mtbf(n_accelerators=n, node_mtbf_s=node_mtbf_s, accelerators_per_node=per_node)
    rate = LLAMA3_FAILURES_PER_GPU_YEAR if failures_per_year is None else failures_per_year
    rate = check_number("failures_per_accelerator_per_year", rate, lo=0.0, strict=True)
    return job_mtbf(n_accelerators=n, accelerator_mtbf_s=YEAR_S / rate)


def _blocking_time(write: float, blocking: bool, async_stall_s: float | None) -> tuple[str, float]:
    """The checkpoint mode and how long training waits per checkpoint (δ): the write, or a snapshot."""
    if not isinstance(blocking, bool):
        raise ValueError(f"blocking must be True or False; got {blocking!r}")
    if blocking:
        return "blocking", write
    stall = ASYNC_STALL_FRACTION * write if async_stall_s is None else async_stall_s
    return "async", check_number("async_stall_s", stall, lo=0.0, strict=True)


def _optimum_interval(mode: str, daly: float, write: float) -> tuple[float, str]:
    """Daly's interval, at least the write time for asynchronous checkpoints; and the rule used."""
    if mode == "async" and daly < write:
        return write, "async: one write in flight, so at least the write time"
    return daly, "Daly"


def _interval_curve(
    over: Callable[[float], dict[str, float]], *, young: float, daly: float, optimum: float, chosen: float
) -> pd.DataFrame:
    """Overheads over a log-spaced range of intervals around the marked ones, sorted by interval."""
    lo = min(optimum, chosen, young) / 10.0
    hi = max(optimum, chosen, young) * 10.0
    points = [(float(t), "") for t in np.geomspace(lo, hi, 61)]
    points += [(young, "young"), (daly, "daly"), (chosen, "chosen")]
    if optimum != daly:
        points.append((optimum, "optimum"))
    rows = [{"interval_s": t, "interval_h": t / HOUR, **over(t), "marker": mk} for t, mk in points]
    return pd.DataFrame(rows).sort_values(["interval_s", "marker"], kind="stable").reset_index(drop=True)


def _checkpoint_result(
    m: float, *, delta: float, write: float, restart: float, mode: str, interval_s: float | None
) -> CheckpointResult:
    """Optima and overheads for checked inputs: at ``interval_s`` (``None``: the optimum) and over a curve."""
    young = young_interval(checkpoint_s=delta, mtbf_s=m)
    daly = daly_interval(checkpoint_s=delta, mtbf_s=m)
    optimum, rule = _optimum_interval(mode, daly, write)
    chosen = optimum if interval_s is None else check_number("interval_s", interval_s, lo=0.0, strict=True)

    def over(t: float) -> dict[str, float]:
        return checkpoint_overhead(interval_s=t, checkpoint_s=delta, mtbf_s=m, restart_s=restart,
                                   mode=mode, write_s=write if mode == "async" else None)

    table = _interval_curve(over, young=young, daly=daly, optimum=optimum, chosen=chosen)
    parts = over(chosen)
    return CheckpointResult(
        table=table,
        mtbf_s=m,
        blocking_s=delta,
        write_s=write,
        restart_s=restart,
        mode=mode,
        young_s=young,
        daly_s=daly,
        optimum_s=optimum,
        optimum_rule=rule,
        interval_s=chosen,
        overhead=parts["total"],
        optimum_overhead=over(optimum)["total"],
        parts=parts,
    )


# --------------------------------------------------------------------------------------------
# the GEM story: 4x FLOPs at 2x end-to-end efficiency


@dataclass(frozen=True)
class GemResult:
    """Baseline vs scaled training job (``table``: one row each) and the ratios between them.

    ``table`` columns: ``job``, ``training_flops``, ``gpus``, ``steady_state_mfu``,
    ``end_to_end_mfu``, ``goodput``, ``training_days``, ``gpu_hours``, ``useful_gpu_hours``,
    ``idle_gpu_hours``, ``idle_share`` (= 1 − end-to-end MFU), ``idle_in_steps_share`` and
    ``idle_outside_steps_share`` (these two sum to ``idle_share``).
    """

    table: pd.DataFrame = field(repr=False)
    flops_multiplier: float
    efficiency_multiplier: float
    gpu_hours_ratio: float
    days_ratio: float
    base_gpu_hours: float
    scaled_gpu_hours: float
    base_days: float
    scaled_days: float
    base_idle_share: float
    scaled_idle_share: float
    peak_flops: float
    peak_source: str

    @property
    def headline(self) -> str:
        return (
            f"{self.flops_multiplier:g}× training FLOPs at {self.efficiency_multiplier:g}× end-to-end "
            f"efficiency → {self.gpu_hours_ratio:.2f}× GPU-hours ({self.base_gpu_hours:,.0f} → "
            f"{self.scaled_gpu_hours:,.0f}; {self.base_days:.1f} → {self.scaled_days:.1f} days); "
            f"idle share {self.base_idle_share:.1%} → {self.scaled_idle_share:.1%}"
        )


@renamed(gpus="n_accelerators")
def gem_scenario(
    *,
    base_flops: float = 1e24,
    flops_multiplier: float = 4.0,
    efficiency_multiplier: float = 2.0,
    n_accelerators: int = 4096,
    mfu: float = 0.225,
    base_end_to_end_efficiency: float = 0.10,
    accelerator: str = "H100 SXM",
    dtype: str = "bf16",
    per: str = "device",
) -> GemResult:
    """What scaling training FLOPs while raising end-to-end efficiency costs in time and GPU-hours.

    The seed case: Meta's GEM ads model trains on thousands of GPUs at 20–25 % MFU; its training
    FLOPs grew 4× while its end-to-end training efficiency doubled. GEM's FLOPs, GPU count and
    durations are not public: ``base_flops`` (total model FLOPs of the baseline training run)
    and ``n_accelerators`` are illustrative inputs.

    Definitions: ``mfu`` is the steady-state MFU (model FLOPs per ideal step / step time /
    cluster peak), held the same for both jobs; "end-to-end efficiency" means end-to-end MFU
    (useful model FLOPs / wall time / cluster peak): ``base_end_to_end_efficiency`` for the
    baseline, × ``efficiency_multiplier`` for the scaled job — which cannot exceed ``mfu``.
    The peak is the registry's dense peak of ``accelerator`` and ``dtype`` (never a fallback),
    per device (``n_accelerators`` counts framework devices: two per MI250X) unless ``per="package"``.

    Per job: wall time = FLOPs / (N × peak × end-to-end MFU); GPU-hours = N × wall / 3600
    (the table's ``gpus`` column is N).
    Paid GPU-hours split into useful (the end-to-end MFU share), idle inside steady-state steps
    (``goodput × (1 − mfu)``: kernels below peak, exposed communication) and idle outside them
    (``1 − goodput``: init, stalls, evaluation, checkpoints, failures), with
    goodput = end-to-end MFU / ``mfu``. "Idle" means paid for and not turned into model FLOPs.
    With equal GPU counts the GPU-hours ratio is ``flops_multiplier / efficiency_multiplier``.
    """
    f0 = check_number("base_flops", base_flops, lo=0.0, strict=True)
    fm = check_number("flops_multiplier", flops_multiplier, lo=0.0, strict=True)
    em = check_number("efficiency_multiplier", efficiency_multiplier, lo=0.0, strict=True)
    gpus = check_int("n_accelerators", n_accelerators, lo=1)
    ss = check_number("mfu", mfu, lo=0.0, hi=1.0, strict=True)
    e0 = check_number("base_end_to_end_efficiency", base_end_to_end_efficiency, lo=0.0, hi=1.0, strict=True)
    e1 = _scaled_efficiency(e0, em, ss)
    peak = hardware.get_peak(accelerator, dtype, per=per)
    p = float(peak.flops)
    rows = [_gem_row(job, flops, e2e, gpus=gpus, peak_flops=p, mfu=ss)
            for job, flops, e2e in (("baseline", f0, e0), ("scaled", f0 * fm, e1))]
    return _gem_result(rows, fm, em, peak)


def _scaled_efficiency(e0: float, em: float, ss: float) -> float:
    """The scaled job's end-to-end MFU, ``e0 × em``; neither job's may exceed the steady-state MFU."""
    if e0 > ss:
        raise ValueError(
            f"base_end_to_end_efficiency ({e0:.2%}) must not exceed the steady-state mfu ({ss:.2%}): "
            "an end-to-end MFU includes every stall on top of the steady state"
        )
    e1 = e0 * em
    if e1 > ss:
        raise ValueError(
            f"the scaled job's end-to-end MFU, base_end_to_end_efficiency × efficiency_multiplier = "
            f"{e0:.2%} × {em:g} = {e1:.2%}, exceeds the steady-state mfu ({ss:.2%}); raise mfu or "
            "lower one of the two"
        )
    return e1


def _gem_row(job: str, flops: float, e2e: float, *, gpus: int, peak_flops: float, mfu: float) -> dict[str, Any]:
    """One job's row: wall time and GPU-hours at end-to-end MFU ``e2e``, split into useful and idle."""
    wall = flops / (gpus * peak_flops * e2e)
    gh = gpus * wall / HOUR
    good = e2e / mfu
    return {
        "job": job,
        "training_flops": flops,
        "gpus": gpus,
        "steady_state_mfu": mfu,
        "end_to_end_mfu": e2e,
        "goodput": good,
        "training_days": wall / DAY,
        "gpu_hours": gh,
        "useful_gpu_hours": gh * e2e,
        "idle_gpu_hours": gh * (1.0 - e2e),
        "idle_share": 1.0 - e2e,
        "idle_in_steps_share": good * (1.0 - mfu),
        "idle_outside_steps_share": 1.0 - good,
    }


def _gem_result(rows: list[dict[str, Any]], fm: float, em: float, peak: hardware.Peak) -> GemResult:
    """The baseline and scaled rows as a table, with the ratios between them and the peak used."""
    b, s = rows
    p = float(peak.flops)
    return GemResult(
        table=pd.DataFrame(rows),
        flops_multiplier=fm,
        efficiency_multiplier=em,
        gpu_hours_ratio=s["gpu_hours"] / b["gpu_hours"],
        days_ratio=s["training_days"] / b["training_days"],
        base_gpu_hours=b["gpu_hours"],
        scaled_gpu_hours=s["gpu_hours"],
        base_days=b["training_days"],
        scaled_days=s["training_days"],
        base_idle_share=b["idle_share"],
        scaled_idle_share=s["idle_share"],
        peak_flops=p,
        peak_source=f"{peak.accelerator} {peak.dtype} dense {peak.tflops:g} TFLOP/s per {peak.per} ({peak.source})",
    )
