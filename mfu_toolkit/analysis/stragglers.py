"""Stragglers: who holds a synchronous job back, how often, how much, and why.

Three views:

- **Per-rank steps** (a Run with ``rank >= 0`` rows): per-step spread (max − median over ranks),
  who was slowest and how often, a per-rank score relative to the fastest rank (persistent vs
  transient stragglers), the share of wall time spent waiting for the slowest rank, and a what-if
  step time without the worst ``k`` ranks. A rank's time is ``compute_s`` where logged (its own
  work), else its step duration minus its data wait.
- **Per-operation traces** (the ``straggler_ops`` form: ``dp_rank, stage, rank, step, optype,
  duration, ...``): per-worker compute time, and a verdict — one slow worker, pipeline-stage
  imbalance, or no persistent culprit (slowness spread at random over workers, as sequence-length
  imbalance produces) — with the evidence. The attribution is a what-if in the spirit of Lin et
  al. 2025, "Understanding Stragglers in Large Model Training Using What-if Analysis"
  (arXiv:2505.05713), computed with this module's own simple model (see
  :func:`classify_op_stragglers`).
- **Theory**: the expected synchronous step time ``E[max of N iid rank times]`` as ``N`` grows
  (:func:`expected_max`, :func:`sync_step_time`), re-exported from
  :mod:`mfu_toolkit.scenarios.order_stats`, which holds the order statistics.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from ..scenarios.order_stats import DISTRIBUTIONS, expected_max, sync_step_time
from .accounting import Accounting, account, accounted, busy_and_wait

__all__ = [
    "STRAGGLER_KINDS",
    "DISTRIBUTIONS",
    "step_spread",
    "rank_scores",
    "straggler_summary",
    "StragglerSummary",
    "without_worst_ranks",
    "op_worker_compute",
    "op_time_by_type",
    "classify_op_stragglers",
    "OpStragglerVerdict",
    "expected_max",
    "sync_step_time",
]

STRAGGLER_KINDS: dict[str, str] = {
    "slow_worker": "one slow worker: a single worker is persistently slower than its peers",
    "stage_imbalance": "pipeline-stage imbalance: one stage carries more work than the others",
    "spread": (
        "no persistent culprit: random slowness spread over workers, changing from step to step "
        "(e.g. sequence-length imbalance across data-parallel ranks)"
    ),
    "none": "no material straggling: the slowest worker is close to a balanced one",
}


def _check_threshold(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not (0 <= value < 100):
        raise ValueError(f"{name} must be a number in [0, 100) (a relative slowdown, 0.05 = 5%); got {value!r}")
    return float(value)


def _check_k(name: str, value: Any, *, minimum: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


# --------------------------------------------------------------------------------------------
# per-rank steps


@dataclass(frozen=True)
class _Matrix:
    keys: pd.DataFrame  # attempt, step (one row per useful job-level step)
    ranks: np.ndarray
    busy: np.ndarray  # steps × ranks, NaN where a rank has no row
    stage: np.ndarray | None = None  # pipeline stage of each rank, where the log says

    @property
    def peer_groups(self) -> list[np.ndarray]:
        """Column indices of ranks that share a role: one group per stage, or all ranks."""
        return _peer_groups(self.stage, len(self.ranks))


def _peer_groups(stage: np.ndarray | None, n: int) -> list[np.ndarray]:
    if stage is None:
        return [np.arange(n)]
    return [np.flatnonzero(stage == p) for p in np.unique(stage)]


def _compared_with(stage: np.ndarray | None) -> str:
    if stage is not None:
        return "peers of the same pipeline stage"
    return "all ranks (no stage information: ranks of different pipeline stages are compared as peers)"


def rank_matrix(run: Run) -> _Matrix:
    """Busy time of each rank in each useful step, as a dense steps × ranks matrix."""
    s = run.steps
    per_rank = s["rank"].to_numpy() >= 0
    if not per_rank.any():
        raise ValueError(
            "run has no per-rank steps (every row has rank = -1); straggler analysis by rank "
            "needs rows with rank >= 0 (or use classify_op_stragglers on a per-operation trace)"
        )
    busy, _ = busy_and_wait(s)
    att = s["attempt"].to_numpy(np.int64)[per_rank]
    stp = s["step"].to_numpy(np.int64)[per_rank]
    rk = s["rank"].to_numpy(np.int64)[per_rank]
    busy = busy[per_rank]
    # lost steps: the step number reappears in a later attempt
    last = pd.Series(att).groupby(stp).transform("max").to_numpy()
    keep = att >= last
    att, stp, rk, busy = att[keep], stp[keep], rk[keep], busy[keep]
    lo = int(stp.min())
    width = int(stp.max()) - lo + 1
    key = att * width + (stp - lo)
    ukeys, gidx = np.unique(key, return_inverse=True)
    ranks, ridx = np.unique(rk, return_inverse=True)
    mat = np.full((len(ukeys), len(ranks)), np.nan)
    mat[gidx, ridx] = busy
    keys = pd.DataFrame({"attempt": ukeys // width, "step": ukeys % width + lo})
    return _Matrix(keys, ranks, mat, _rank_stage(s, per_rank, ranks))


def _rank_stage(s: pd.DataFrame, per_rank: np.ndarray, ranks: np.ndarray) -> np.ndarray | None:
    """Each rank's pipeline stage from a ``stage`` column; None when unknown, mixed or one stage."""
    if "stage" not in s.columns:
        return None
    st = pd.Series(pd.to_numeric(s["stage"], errors="coerce").to_numpy(float)[per_rank])
    by_rank = st.groupby(s["rank"].to_numpy(np.int64)[per_rank]).agg(["min", "max"]).reindex(ranks)
    if by_rank.isna().any().any() or (by_rank["min"] != by_rank["max"]).any() or by_rank["min"].nunique() < 2:
        return None
    return by_rank["min"].to_numpy(np.int64)


def _peer_step_median(m: _Matrix) -> np.ndarray:
    """Steps × ranks: the median busy time of each rank's peers (its stage, or all ranks) per step."""
    out = np.full(m.busy.shape, np.nan)
    for cols in m.peer_groups:
        out[:, cols] = np.nanmedian(m.busy[:, cols], axis=1, keepdims=True)
    return out


def step_spread(run: Run) -> pd.DataFrame:
    """Per useful step: median and max rank time, the spread (max − median) and the slowest rank.

    ``rel_spread`` = spread / median: how much longer everyone waited than the typical rank.
    Out of core (``run.reductions``) the engine's per-step reductions give the same figures.
    """
    if run.reductions is not None:
        out = run.reductions.step_spread()
        if not len(out):
            rank_matrix(run.replace(reductions=None))  # the no-per-rank-rows error
    else:
        m = rank_matrix(run)
        out = m.keys.copy()
        out["n_ranks"] = np.sum(np.isfinite(m.busy), axis=1)
        out["median_s"] = np.nanmedian(m.busy, axis=1)
        out["max_s"] = np.nanmax(m.busy, axis=1)
        out["slowest_rank"] = m.ranks[np.nanargmax(m.busy, axis=1)]
    med, mx = out["median_s"].to_numpy(float), out["max_s"].to_numpy(float)
    out["spread_s"] = mx - med
    out["rel_spread"] = np.divide(mx - med, med, out=np.full(len(med), np.nan), where=med > 0)
    return out[["attempt", "step", "n_ranks", "median_s", "max_s", "spread_s", "rel_spread", "slowest_rank"]]


def rank_scores(run: Run, *, threshold: float = 0.05) -> pd.DataFrame:
    """Per rank: how much slower than its peers, how often slowest, and its kind.

    Peers are the ranks of the same pipeline stage where the steps carry a ``stage`` column (a
    stage with more work is stage imbalance, not a straggler: see ``straggler_whatif``); then
    ``score`` = (rank's median time / the median of its stage's rank medians) − 1. Without stage
    information every rank is a peer and the reference is the fastest rank's median.
    ``slow_steps`` counts steps where the rank took more than ``1 + threshold`` times its peers'
    median that step. ``kind`` is ``persistent`` when ``score > threshold``, ``transient`` when
    the rank is not persistent but had slow steps, else ``normal``. Sorted by score, worst
    first; ``attrs["compared_with"]`` says which comparison was made.
    """
    threshold = _check_threshold("threshold", threshold)
    ranks, n_steps, med_rank, n_slowest, slow_steps, n_keys, stage = _rank_statistics(run, threshold)
    ref = np.full(len(med_rank), np.nan)
    for cols in _peer_groups(stage, len(ranks)):
        ref[cols] = np.nanmin(med_rank[cols]) if stage is None else np.nanmedian(med_rank[cols])
    with np.errstate(invalid="ignore", divide="ignore"):
        score = np.where(ref > 0, med_rank / ref - 1.0, np.nan)
    kind = np.where(score > threshold, "persistent", np.where(slow_steps > 0, "transient", "normal"))
    out = pd.DataFrame(
        {
            "rank": ranks,
            "stage": stage if stage is not None else np.full(len(ranks), -1),
            "steps": n_steps,
            "median_s": med_rank,
            "score": score,
            "n_slowest": n_slowest,
            "share_slowest": n_slowest / max(n_keys, 1),
            "slow_steps": slow_steps,
            "share_slow_steps": slow_steps / np.maximum(n_steps, 1),
            "kind": kind,
        }
    )
    out = out.sort_values(["score", "n_slowest"], ascending=False, kind="stable").reset_index(drop=True)
    out.attrs["compared_with"] = _compared_with(stage)
    return out


def _rank_statistics(run: Run, threshold: float) -> tuple[np.ndarray, ...]:
    """Per rank over useful steps: ranks, steps, median busy time, times slowest, rank-steps
    above ``(1 + threshold)`` × the step's median; and the number of useful steps.

    From the rows in memory (a steps × ranks matrix), or from the engine that reduced them out of
    core (``run.reductions``: exact medians by refined histograms, see mfu_toolkit.engine)."""
    if run.reductions is not None:
        rs = run.reductions.rank_stats(threshold)
        f = rs.frame
        if not len(f):
            rank_matrix(run.replace(reductions=None))  # the no-per-rank-rows error
        return (f["rank"].to_numpy(), f["steps"].to_numpy(), f["median_s"].to_numpy(),
                f["n_slowest"].to_numpy(), f["slow_steps"].to_numpy(), rs.n_keys, None)
    m = rank_matrix(run)
    step_med = _peer_step_median(m)  # each rank against its stage's peers where stages are known
    with np.errstate(invalid="ignore", divide="ignore"):
        slow = m.busy > (1.0 + threshold) * step_med
    n_slowest = np.bincount(np.nanargmax(m.busy, axis=1), minlength=len(m.ranks))
    return (m.ranks, np.sum(np.isfinite(m.busy), axis=0), np.nanmedian(m.busy, axis=0), n_slowest,
            slow.sum(axis=0), len(m.keys), m.stage)


@dataclass(frozen=True)
class StragglerSummary:
    """Headline straggler facts for a run with per-rank steps."""

    wall_s: float
    straggler_s: float
    wall_share: float
    threshold: float
    persistent_ranks: list[int]
    transient_ranks: int
    slow_rank_steps_share: float
    most_often_slowest: int | None
    most_often_slowest_share: float
    step_p50_s: float
    step_p99_s: float
    tail_ratio: float
    scores: pd.DataFrame = field(repr=False)
    compared_with: str = "all ranks"
    stage_medians_s: dict[int, float] = field(default_factory=dict)

    @property
    def stage_ratio(self) -> float:
        """Slowest stage's median rank time over the fastest stage's (NaN without stages)."""
        v = list(self.stage_medians_s.values())
        return max(v) / min(v) if v and min(v) > 0 else float("nan")

    def lines(self) -> list[str]:
        ranks = self.persistent_ranks
        # "rank 11", never a bare "11" that reads as a count
        per = (("rank " if len(ranks) == 1 else "ranks ") + ", ".join(map(str, ranks))) if ranks else "none"
        peers = "its stage's median rank" if self.stage_medians_s else "the fastest rank"
        out = [
            f"Waiting for the slowest rank: {self.straggler_s:,.3f} s = {self.wall_share:.2%} of wall time "
            "(step-level, assuming no pipeline: an upper bound on what removing a straggler gains)",
            f"Persistent stragglers (> {self.threshold:.0%} slower than {peers}): {per}",
            f"Compared with: {self.compared_with}",
        ]
        if self.stage_medians_s:
            slow = max(self.stage_medians_s, key=lambda p: self.stage_medians_s[p])
            out.append(f"Stage imbalance (not stragglers): stage {slow}'s median rank time is "
                       f"{self.stage_ratio:.2f}x the fastest stage's")
        return out + [
            f"Rank-steps more than {self.threshold:.0%} above their peers' step median: "
            f"{self.slow_rank_steps_share:.2%}",
            f"Most often slowest: rank {self.most_often_slowest} ({self.most_often_slowest_share:.0%} of steps)",
            f"Step time p50 {self.step_p50_s:.4g} s, p99 {self.step_p99_s:.4g} s (p99/p50 = {self.tail_ratio:.3f})",
        ]


def straggler_summary(run: Run | Accounting, *, threshold: float = 0.05) -> StragglerSummary:
    """Wall share lost waiting for the slowest rank, persistent/transient ranks, step-time tail."""
    acc = accounted(run)
    sc = rank_scores(acc.run, threshold=threshold)
    # rank-steps above the threshold over every (useful step, rank) cell, a missing row counting as not slow
    n_keys = _rank_statistics(acc.run, float(threshold))[5]
    slow_share = float(sc["slow_steps"].sum() / (n_keys * len(sc))) if n_keys and len(sc) else float("nan")
    top = sc.sort_values("n_slowest", ascending=False, kind="stable").iloc[0]
    span = acc.steps.loc[~acc.steps["lost"], "span_s"].to_numpy(float)
    p50 = float(np.percentile(span, 50)) if len(span) else float("nan")
    p99 = float(np.percentile(span, 99)) if len(span) else float("nan")
    strag = acc.seconds["stragglers"]
    staged = sc[sc["stage"] >= 0]
    stage_med = {int(p): float(v) for p, v in staged.groupby("stage")["median_s"].median().items()}
    return StragglerSummary(
        wall_s=acc.wall_s,
        straggler_s=strag,
        wall_share=strag / acc.wall_s if acc.wall_s > 0 else float("nan"),
        threshold=float(threshold),
        persistent_ranks=[int(r) for r in sc.loc[sc["kind"] == "persistent", "rank"]],
        transient_ranks=int((sc["kind"] == "transient").sum()),
        slow_rank_steps_share=slow_share,
        most_often_slowest=int(top["rank"]),
        most_often_slowest_share=float(top["share_slowest"]),
        step_p50_s=p50,
        step_p99_s=p99,
        tail_ratio=p99 / p50 if p50 > 0 else float("nan"),
        scores=sc,
        compared_with=sc.attrs.get("compared_with", "all ranks"),
        stage_medians_s=stage_med,
    )


def without_worst_ranks(run: Run, *, k: int = 3) -> pd.DataFrame:
    """What-if: the mean step time if the ``k`` worst ranks (by score) ran like their peers.

    For each ``j = 0..k`` a removed rank's time in each step becomes the median of its remaining
    peers (same pipeline stage where known, else all ranks) and the step's rank-bound time the
    new max. A rank with no remaining peer keeps its time: a stage's work does not vanish with
    its ranks (that is stage imbalance; see ``straggler_whatif``). Step-level, assuming no
    pipeline: an upper bound on the gain. Columns: ``removed`` (j), ``ranks`` (which),
    ``mean_step_s``, ``saving_s`` per step and ``speedup``.
    """
    k = _check_k("k", k)
    if run.reductions is None:
        rank_matrix(run)  # the no-per-rank-rows error before any other
    sc = rank_scores(run)
    order = [int(r) for r in sc["rank"]]
    js = account(run).steps
    js = js[~js["lost"]].set_index(["attempt", "step"])
    keys, maxima = _max_without(run, order[:min(k, len(order) - 1)])
    span = js.loc[keys.set_index(["attempt", "step"]).index, "span_s"].to_numpy(float)
    full_max = maxima[0]
    rows = []
    base = float(np.mean(span)) if len(span) else float("nan")
    for j, new_max in enumerate(maxima):
        drop = order[:j]
        t = span - (full_max - new_max)
        mean_t = float(np.mean(t)) if len(t) else float("nan")
        rows.append(
            {"removed": j, "ranks": drop, "mean_step_s": mean_t, "saving_s": base - mean_t,
             "speedup": base / mean_t if mean_t > 0 else float("nan")}
        )
    return pd.DataFrame(rows)


def _max_without(run: Run, worst: list[int]) -> tuple[pd.DataFrame, list[np.ndarray]]:
    """Per useful step (``attempt, step``): the rank-bound time with ``worst[:j]`` removed, for
    ``j = 0..len(worst)``; a removed rank runs at its remaining peers' median that step."""
    if run.reductions is not None:
        # no stage information out of core: the peers' median never exceeds their max, so the
        # new max is the max over the ranks left (exact, from per-step maxima of the engine)
        keys, mat = run.reductions.worst_rank_maxima(worst)
        return keys, [np.nanmax(mat[:, j:], axis=1) for j in range(len(worst) + 1)]
    m = rank_matrix(run)
    col = {int(r): i for i, r in enumerate(m.ranks)}
    out = []
    for j in range(len(worst) + 1):
        keep = np.ones(len(m.ranks), bool)
        keep[[col[r] for r in worst[:j]]] = False
        busy = m.busy.copy()
        for cols in m.peer_groups:
            gone, left = cols[~keep[cols]], cols[keep[cols]]
            if len(gone) and len(left):
                busy[:, gone] = np.nanmedian(m.busy[:, left], axis=1, keepdims=True)
        out.append(np.nanmax(busy, axis=1))
    return m.keys, out


# --------------------------------------------------------------------------------------------
# per-operation traces


def _ops_frame(ops: pd.DataFrame | Run) -> pd.DataFrame:
    if isinstance(ops, Run):
        if "ops" not in ops.tables:
            raise ValueError(
                f"run has no 'ops' table (tables: {sorted(ops.tables) or 'none'}); load a "
                "per-operation trace, or pass the op DataFrame itself"
            )
        ops = ops.tables["ops"]
    if not isinstance(ops, pd.DataFrame):
        raise TypeError(f"ops must be a DataFrame or a Run with tables['ops']; got {type(ops).__name__}")
    need = {"step", "optype", "duration"}
    missing = sorted(need - set(ops.columns))
    if missing or not ({"dp_rank", "rank"} & set(ops.columns)):
        raise ValueError(
            f"ops must have columns step, optype, duration and dp_rank (or rank); missing "
            f"{missing or ['dp_rank/rank']}; got columns {list(ops.columns)}"
        )
    return ops


def _compute_mask(ops: pd.DataFrame, compute_optypes: Sequence[str] | None) -> np.ndarray:
    opt = ops["optype"].astype(str)
    if compute_optypes is None:
        mask = opt.str.endswith("-compute") | (opt == "compute")
        if not mask.any():
            raise ValueError(
                "no compute operations found (optype ending in '-compute'); pass "
                f"compute_optypes=[...] from the optypes present: {sorted(opt.unique())[:20]}"
            )
        return mask.to_numpy()
    if isinstance(compute_optypes, str) or not all(isinstance(o, str) for o in compute_optypes):
        raise ValueError(f"compute_optypes must be a list of optype names; got {compute_optypes!r}")
    mask = opt.isin(list(compute_optypes))
    if not mask.any():
        raise ValueError(
            f"compute_optypes {list(compute_optypes)} match no rows; optypes present: {sorted(opt.unique())[:20]}"
        )
    return mask.to_numpy()


def _worker_cols(ops: pd.DataFrame) -> list[str]:
    if "dp_rank" in ops.columns and "stage" in ops.columns:
        return ["dp_rank", "stage"]
    if "dp_rank" in ops.columns:
        return ["dp_rank"]
    return ["rank"]


def op_worker_compute(ops: pd.DataFrame | Run, *, compute_optypes: Sequence[str] | None = None) -> pd.DataFrame:
    """Compute seconds per (step, worker): the sum of the worker's compute ops in that step.

    A worker is a (``dp_rank``, ``stage``) pair when both columns exist (tensor-parallel ranks of
    one pipeline stage move in lockstep), else ``dp_rank`` or ``rank``.
    """
    ops = _ops_frame(ops)
    c = ops[_compute_mask(ops, compute_optypes)]
    cols = ["step", *_worker_cols(ops)]
    out = c.groupby(cols, observed=True, sort=True)["duration"].sum().astype(float).reset_index()
    return out.rename(columns={"duration": "compute_s"})


def op_time_by_type(ops: pd.DataFrame | Run) -> pd.DataFrame:
    """Mean seconds per step spent in each optype, per worker (tidy: worker cols, optype, seconds)."""
    ops = _ops_frame(ops)
    cols = _worker_cols(ops)
    per = ops.groupby(["step", *cols, "optype"], observed=True)["duration"].sum().astype(float).reset_index()
    out = per.groupby([*cols, "optype"], observed=True)["duration"].mean().reset_index()
    out["optype"] = out["optype"].astype(str)
    return out.rename(columns={"duration": "seconds_per_step"})


@dataclass(frozen=True)
class OpStragglerVerdict:
    """Which kind of straggling a per-operation trace shows, and the numbers behind it.

    ``shares`` attributes the critical compute time above a perfectly balanced job to three
    causes (fractions of the actual critical time): ``stage`` (persistent differences between
    pipeline stages), ``worker`` (one worker persistently slower than its stage), ``transient``
    (step-to-step slowness of varying workers). ``kind`` is the largest, or ``none`` when all
    are below ``min_share``.
    """

    kind: str
    label: str
    shares: dict[str, float]
    evidence: dict[str, Any]
    workers: pd.DataFrame = field(repr=False)
    stages: pd.DataFrame = field(repr=False)

    def lines(self) -> list[str]:
        e = self.evidence
        out = [f"Verdict: {self.label}"]
        out.append(
            "What-if shares of the critical compute time: "
            + ", ".join(f"{k} {v:.1%}" for k, v in self.shares.items())
        )
        out.append(
            f"Worst worker {e['worst_worker']}: {e['worst_worker_slowdown']:.2f}× its stage's median, "
            f"slowest in {e['worst_worker_slowest_share']:.0%} of steps"
        )
        out.append(
            f"Stage medians {e['stage_medians_s']} s (max/min {e['stage_ratio']:.2f}); "
            f"{e['distinct_slowest_workers']} distinct workers were slowest at least once over {e['steps']} steps; "
            f"median per-step spread across a stage's workers {e['median_cv_within_stage']:.1%}"
        )
        return out


_CAUSES = ("stage", "worker", "transient")
_KIND_OF_CAUSE = {"stage": "stage_imbalance", "worker": "slow_worker", "transient": "spread"}


def _op_compute_matrix(
    ops: pd.DataFrame, compute_optypes: Sequence[str] | None
) -> tuple[np.ndarray, list[Any], list[str]]:
    """Compute seconds as a step × worker matrix (steps with a gap dropped), its workers and worker columns."""
    wc = op_worker_compute(ops, compute_optypes=compute_optypes)
    wcols = _worker_cols(ops)
    table = wc.pivot_table(index="step", columns=wcols, values="compute_s", aggfunc="sum", observed=True)
    table = table.dropna(axis=0, how="any")
    if table.shape[0] < 2 or table.shape[1] < 2:
        raise ValueError(
            f"need at least 2 steps and 2 workers with compute in every step; got {table.shape[0]} "
            f"steps × {table.shape[1]} workers"
        )
    vals = table.to_numpy(dtype=float)
    if np.any(vals <= 0):
        raise ValueError("compute durations must be > 0 in every step for every worker")
    return vals, list(table.columns), wcols


def _worker_stages(workers: list[Any], wcols: list[str]) -> np.ndarray:
    """Each worker's pipeline stage (0 for all without a stage column), to compare workers within a stage."""
    if "stage" in wcols:
        return np.array([w[wcols.index("stage")] for w in workers])
    return np.zeros(len(workers), int)


def _worker_name(w: Any, wcols: list[str]) -> str:
    """A worker's label, ``dp_rank=0, stage=1``, for tables and evidence."""
    if isinstance(w, tuple):
        return ", ".join(f"{c}={int(v)}" for c, v in zip(wcols, w, strict=True))
    return f"{wcols[0]}={int(w)}"


@dataclass(frozen=True)
class _LogCompute:
    """Log compute as step + stage (α) + worker (β) + transient (ε) terms, for the what-if."""

    step_c: np.ndarray  # per step median, (steps, 1)
    alpha: np.ndarray  # per worker, its stage's median offset
    beta: np.ndarray  # per worker, its median offset from its stage
    eps: np.ndarray  # the rest, (steps, workers)
    alpha_bal: float  # the mean stage offset: the same total work, balanced over stages

    def critical(self, removed: frozenset[str]) -> float:
        """Mean over steps of the slowest worker's compute with the ``removed`` causes taken out."""
        a = np.full_like(self.alpha, self.alpha_bal) if "stage" in removed else self.alpha
        b = np.zeros_like(self.beta) if "worker" in removed else self.beta
        e = np.zeros_like(self.eps) if "transient" in removed else self.eps
        return float(np.mean(np.exp(self.step_c[:, 0] + np.max(a + b + e, axis=1))))


def _fit_log_compute(vals: np.ndarray, stage_of: np.ndarray) -> _LogCompute:
    """Split log compute into stage, worker and transient terms with medians (robust to outliers)."""
    x = np.log(vals)
    step_c = np.median(x, axis=1, keepdims=True)
    r = x - step_c
    alpha_s = {p: float(np.median(r[:, stage_of == p])) for p in np.unique(stage_of)}
    alpha = np.array([alpha_s[p] for p in stage_of])
    beta = np.median(r - alpha, axis=0)
    eps = r - alpha - beta
    return _LogCompute(step_c, alpha, beta, eps, float(np.mean(list(alpha_s.values()))))


def _shapley_shares(model: _LogCompute) -> tuple[dict[str, float], float]:
    """Each cause's Shapley share of the drop in critical time (fraction of the actual), and the actual."""
    actual = model.critical(frozenset())
    shap: dict[str, float] = {}
    for c in _CAUSES:
        rest = [o for o in _CAUSES if o != c]
        v = 0.0
        for size in range(len(rest) + 1):
            weight = math.factorial(size) * math.factorial(len(_CAUSES) - size - 1) / math.factorial(len(_CAUSES))
            for sub in itertools.combinations(rest, size):
                s = frozenset(sub)
                v += weight * (model.critical(s) - model.critical(s | {c}))
        shap[c] = v / actual
    return shap, actual


def _median_cv_within_stage(vals: np.ndarray, stage_of: np.ndarray) -> float:
    """Median per-step coefficient of variation across a stage's workers (0 with one worker per stage)."""
    cv = []
    for p in np.unique(stage_of):
        sub = vals[:, stage_of == p]
        if sub.shape[1] > 1:
            cv.append(np.std(sub, axis=1) / np.mean(sub, axis=1))
    return float(np.median(np.concatenate(cv))) if cv else 0.0


def _op_worker_table(
    names: list[str], stage_of: np.ndarray, vals: np.ndarray, worker_slow: np.ndarray, counts: np.ndarray
) -> pd.DataFrame:
    """Per-worker evidence, slowest relative to its stage first."""
    return pd.DataFrame(
        {
            "worker": names,
            "stage": stage_of,
            "median_compute_s": np.median(vals, axis=0),
            "slowdown_vs_stage": worker_slow,
            "n_slowest": counts,
            "share_slowest": counts / vals.shape[0],
        }
    ).sort_values("slowdown_vs_stage", ascending=False, kind="stable").reset_index(drop=True)


def _op_stage_table(stage_med_time: dict[int, float]) -> pd.DataFrame:
    """Per-stage median compute and its ratio to the fastest stage."""
    sdf = pd.DataFrame(
        {"stage": list(stage_med_time), "median_compute_s": list(stage_med_time.values())}
    )
    sdf["ratio_to_fastest"] = sdf["median_compute_s"] / sdf["median_compute_s"].min()
    return sdf


def _op_straggler_evidence(
    vals: np.ndarray, workers: list[Any], wcols: list[str], stage_of: np.ndarray, model: _LogCompute, actual: float
) -> tuple[dict[str, Any], pd.DataFrame, pd.DataFrame]:
    """The numbers behind the verdict: headline evidence, the per-worker and the per-stage table."""
    counts = np.bincount(np.argmax(vals, axis=1), minlength=len(workers))
    stage_med_time = {int(p): float(np.median(vals[:, stage_of == p])) for p in np.unique(stage_of)}
    rel = vals / np.array([stage_med_time[int(p)] for p in stage_of])[None, :]
    worker_slow = np.median(rel, axis=0)
    worst = int(np.argmax(model.beta))
    names = [_worker_name(w, wcols) for w in workers]
    evidence = {
        "steps": int(vals.shape[0]),
        "workers": int(vals.shape[1]),
        "actual_critical_s": actual,
        "balanced_critical_s": model.critical(frozenset(_CAUSES)),
        "worst_worker": names[worst],
        "worst_worker_slowdown": float(worker_slow[worst]),
        "worst_worker_slowest_share": float(counts[worst] / vals.shape[0]),
        "most_often_slowest": names[int(np.argmax(counts))],
        "most_often_slowest_share": float(counts.max() / vals.shape[0]),
        "distinct_slowest_workers": int((counts > 0).sum()),
        "stage_medians_s": {k: round(v, 4) for k, v in stage_med_time.items()},
        "stage_ratio": float(max(stage_med_time.values()) / min(stage_med_time.values())),
        "median_cv_within_stage": _median_cv_within_stage(vals, stage_of),
    }
    wdf = _op_worker_table(names, stage_of, vals, worker_slow, counts)
    return evidence, wdf, _op_stage_table(stage_med_time)


def classify_op_stragglers(
    ops: pd.DataFrame | Run,
    *,
    compute_optypes: Sequence[str] | None = None,
    min_share: float = 0.02,
) -> OpStragglerVerdict:
    """Name the kind of straggling in a per-operation trace: slow worker, stage imbalance or spread.

    Model (a what-if on compute time only, because waiting and communication reflect *other*
    workers' slowness): ``C[s, w]`` is worker ``w``'s compute in step ``s``; the step is bound by
    ``max_w C[s, w]``. In log space, after removing each step's median (work common to all),
    ``log C = α_stage + β_worker + ε_step,worker`` with ``α`` the stage's median, ``β`` the
    worker's median offset from its stage and ``ε`` the rest. Removing a cause sets ``α`` to the
    mean over stages (same total work, balanced partition), ``β`` to 0 or ``ε`` to 0. The drop in
    the mean critical time ``mean_s max_w C`` is shared among the three causes by Shapley values
    (the average drop over every order of removal), as fractions of the actual critical time.
    """
    min_share = _check_threshold("min_share", min_share)
    ops = _ops_frame(ops)
    vals, workers, wcols = _op_compute_matrix(ops, compute_optypes)
    stage_of = _worker_stages(workers, wcols)
    model = _fit_log_compute(vals, stage_of)
    shap, actual = _shapley_shares(model)
    best = max(shap, key=lambda k: shap[k])
    kind = _KIND_OF_CAUSE[best]
    if shap[best] < min_share:
        kind = "none"
    evidence, wdf, sdf = _op_straggler_evidence(vals, workers, wcols, stage_of, model, actual)
    return OpStragglerVerdict(kind, STRAGGLER_KINDS[kind], shap, evidence, wdf, sdf)
