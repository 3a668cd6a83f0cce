"""Reductions: what the analyses need from per-rank step rows, computed by an engine.

The breakdown needs, per ``(attempt, step)``, the span over ranks, the median and max busy time,
the slowest rank, the median data wait and the flags a loader set on the step's rows
(:data:`JOB_COLUMNS`); the straggler scores need, per rank, its number of useful steps, its exact
median busy time, how often it was slowest and how many of its steps ran above
``(1 + threshold)`` times the step's median. :class:`Reductions`
holds the first (small: one row per step) and computes the second on demand through the engine
that read the rows (:mod:`.duck` or :mod:`.spark`), so the rows are never held in memory.

Exact per-rank medians: where the engine plans its memory (DuckDB), by its own median over one
range of ranks at a time, each range's values within half of what one query may hold (one scan
per range; 82M rows: 11 s against 33 s for the histograms). Elsewhere (Spark), without holding
every value: a histogram of each rank's busy times (``bins`` bins over the global range), the bin
holding each middle order statistic, then a finer histogram within that bin, until the bin holds
one distinct value or few enough values to fetch and sort. Every figure is exact (no
approximation) either way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import pandas as pd

from . import queries

__all__ = ["JOB_COLUMNS", "Backend", "Reductions", "RankStats", "compute_reductions", "step_flags"]

# What one engine query returns per (attempt, step) (see queries.JOB_STEPS).
JOB_COLUMNS: tuple[str, ...] = (
    "attempt", "step", "start_s", "end_s", "n_ranks", "n_distinct", "busy_median_s", "busy_max_s",
    "busy_min_s", "slowest_rank", "slowest_by_rank", "n_rank_rows", "data_wait_s", "samples",
    "tokens", "rank_min", "rank_max", "n_timed", "flag",
)
# Flags in one text are separated by commas, semicolons, bars or white space, as
# ``analysis.accounting`` splits a ``flag`` cell in memory.
_FLAG_SEPARATORS = re.compile(r"[,;|\s]+")
_INT_COLUMNS = ("attempt", "step", "n_ranks", "n_distinct", "n_rank_rows", "rank_min", "rank_max", "slowest_rank",
                "n_timed")


class Backend(Protocol):
    """An engine that runs the queries of :mod:`.queries` over one dataset's ``steps``."""

    dialect: str
    name: str

    def run(self, sql: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, np.ndarray]: ...

    def step_batches(self) -> list[str]: ...


def _progress(total: int, desc: str, show: bool) -> Any:
    if not show:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=total, desc=desc, leave=False)


def compute_reductions(backend: Backend, *, n_rows: int, source: str, progress: bool = False) -> Reductions:
    """Run the job-step query over ``backend``'s dataset, one step range at a time."""
    batches = backend.step_batches()
    bar = _progress(len(batches), f"reducing {n_rows:,} rows ({backend.name})", progress)
    parts = []
    headroom = getattr(backend, "check_headroom", None)  # an engine that holds a memory limit
    try:
        for i, where in enumerate(batches, 1):
            parts.append(backend.run(queries.render(queries.JOB_STEPS, backend.dialect, where=where), {}))
            if headroom is not None:  # the steps of every batch, extrapolated from those read
                held = sum(len(p["step"]) for p in parts)
                headroom(held * len(batches) // i, n_held=held)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    job = {}
    for c in JOB_COLUMNS:  # column by column, each batch's copy freed as it is joined
        col = np.concatenate([p.pop(c) for p in parts]) if parts else np.zeros(0)
        job[c] = col.astype(np.int64, copy=False) if c in _INT_COLUMNS else col
    order = np.lexsort((job["step"], job["attempt"]))
    for c in JOB_COLUMNS:
        job[c] = job[c][order]
    del order
    return Reductions(job=job, n_rows=n_rows, engine=backend.name, source=source, backend=backend,
                      progress=progress)


@dataclass(frozen=True)
class RankStats:
    """Per-rank statistics over useful steps (rows with ``rank >= 0``).

    ``frame``: ``rank``, ``steps`` (rows), ``median_s`` (exact median busy time), ``n_slowest``
    (steps in which the rank was slowest, ties to the lowest rank), ``slow_steps`` (rows above
    ``(1 + threshold)`` × the step's median busy time); ``n_keys`` is the number of useful steps.
    """

    frame: pd.DataFrame
    n_keys: int
    threshold: float


@dataclass(frozen=True, eq=False)
class Reductions:
    """Per-step reductions of a dataset's rows and the engine that can compute more of them."""

    job: dict[str, np.ndarray] = field(repr=False)
    n_rows: int
    engine: str
    source: str
    backend: Any = field(default=None, repr=False)
    progress: bool = False
    bins: int = 256
    fetch_cap: int = 2_000_000
    median_by: str = "auto"
    _cache: dict[Any, Any] = field(default_factory=dict, repr=False)

    # --- what the Run and the breakdown read -------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.job["attempt"])

    @property
    def ranks(self) -> list[int]:
        """The ranks seen: every rank between the smallest and largest when each step has them all."""
        lo, hi = int(self.job["rank_min"].min()), int(self.job["rank_max"].max())
        return list(range(lo, hi + 1)) if self.n_steps else []

    @property
    def n_timed_rows(self) -> int:
        """Rows with ``end_s > start_s`` (as ``(end_s - start_s) > 0`` counts them in memory)."""
        return int(self.job["n_timed"].sum()) if self.n_steps else 0

    def extent(self) -> pd.DataFrame:
        """``attempt, start_s, end_s`` per job-level step: the steps' reach on the timeline."""
        return pd.DataFrame({c: self.job[c] for c in ("attempt", "start_s", "end_s")})

    def job_step_columns(self) -> dict[str, np.ndarray] | None:
        """The columns of ``analysis.accounting.job_steps``, in its row order (None: no steps)."""
        j = self.job
        if not self.n_steps:
            return None
        job_level = bool((j["rank_min"] == -1).all() and (j["rank_max"] == -1).all())
        cols: dict[str, np.ndarray] = {
            "attempt": j["attempt"], "step": j["step"], "start_s": j["start_s"], "end_s": j["end_s"],
            "span_s": j["end_s"] - j["start_s"], "n_ranks": j["n_ranks"],
            "busy_median_s": j["busy_median_s"], "busy_max_s": j["busy_max_s"],
            "slowest_rank": j["slowest_rank"], "data_wait_s": j["data_wait_s"],
        }
        for c in ("samples", "tokens"):
            cols[c] = j[c].astype(float) if job_level else np.full(self.n_steps, np.nan)
        cols["lost"] = self.lost()
        cols["flag"] = step_flags(j["flag"])
        by = np.lexsort((cols["step"], cols["attempt"], cols["start_s"]))
        return {c: v[by] for c, v in cols.items()}

    def lost(self) -> np.ndarray:
        """Per job step (in ``job`` order): a later attempt ran the same step number."""
        uniq, inv = np.unique(self.job["step"], return_inverse=True)
        last = np.full(len(uniq), np.iinfo(np.int64).min)
        np.maximum.at(last, inv, self.job["attempt"])
        return self.job["attempt"] < last[inv]

    def incomplete_steps(self) -> pd.DataFrame:
        """Steps that lack some ranks, or log a rank twice: ``attempt, step, n_ranks, n_distinct``."""
        j = self.job
        full = int(j["n_distinct"].max()) if self.n_steps else 0
        bad = (j["n_distinct"] < full) | (j["n_ranks"] != j["n_distinct"])
        return pd.DataFrame({c: j[c][bad] for c in ("attempt", "step", "n_ranks", "n_distinct")})

    # --- per-rank statistics, computed by the engine -----------------------------------------
    def rank_stats(self, threshold: float = 0.05) -> RankStats:
        """Exact per-rank statistics over useful steps (see the module docstring); cached."""
        key = ("rank_stats", float(threshold))
        if key not in self._cache:
            if self.backend is None:
                raise ValueError(f"{self.source}: these reductions have no engine to compute per-rank statistics with")
            self._cache[key] = _rank_stats(self, float(threshold))
        return self._cache[key]

    def step_spread(self) -> pd.DataFrame:
        """Per useful step (``attempt, step``, rows with ``rank >= 0``): ``n_ranks``, ``median_s``,
        ``max_s`` and ``slowest_rank`` (ties to the lowest rank), as ``stragglers.step_spread``."""
        _, keep = _useful(self)
        j = self.job
        return pd.DataFrame({"attempt": j["attempt"][keep], "step": j["step"][keep],
                             "n_ranks": j["n_rank_rows"][keep], "median_s": j["busy_median_s"][keep],
                             "max_s": j["busy_max_s"][keep],
                             "slowest_rank": j["slowest_by_rank"][keep].astype(np.int64)})

    def worst_rank_maxima(self, ranks: list[int]) -> tuple[pd.DataFrame, np.ndarray]:
        """Per useful step (``attempt, step``, in ``job`` order): column ``i`` of the matrix is the
        max busy time of ``ranks[i]`` and the last column that of every other rank (NaN: none).

        Removing ``ranks[:j]`` makes a step's max that of the columns from ``j`` on (exact)."""
        if self.backend is None:
            raise ValueError(f"{self.source}: these reductions have no engine to compute per-rank maxima with")
        useful, _ = _useful(self)
        worst = pd.DataFrame({"rank": np.asarray(ranks, np.int64), "pos": np.arange(len(ranks), dtype=np.int64)})
        be = self.backend
        got = be.run(queries.render(queries.WORST_RANKS, be.dialect), {"useful": useful, "worst": worst})
        key = pd.MultiIndex.from_frame(useful[["attempt", "step"]])
        row = key.get_indexer(pd.MultiIndex.from_arrays([got["attempt"].astype(np.int64),
                                                         got["step"].astype(np.int64)]))
        pos = got["pos"].astype(np.int64)
        mat = np.full((len(useful), len(ranks) + 1), np.nan)
        mat[row, np.where(pos < 0, len(ranks), pos)] = got["busy_max_s"]
        return useful[["attempt", "step"]].reset_index(drop=True), mat

    def rank_heatmap(self, n_rank_bins: int, n_step_bins: int, agg: str = "mean") -> tuple[np.ndarray, ...]:
        """The per-rank heatmap's matrix (ranks × steps of busy time / step median − 1), binned
        by position into at most ``n_rank_bins`` × ``n_step_bins`` blocks by the engine.

        Returns ``(matrix, steps, ranks)``: the binned matrix, the useful steps and the ranks
        (unbinned, in order). ``agg`` ``mean`` averages over ranks, then over steps, as
        ``plots.rank_heatmap`` does in memory; ``max`` is the block max."""
        if self.backend is None:
            raise ValueError(f"{self.source}: these reductions have no engine to draw the heatmap with")
        useful, _ = _useful(self)
        ranks = self.rank_stats().frame["rank"].to_numpy(np.int64)  # cached by the straggler scores
        n_r, n_s = len(ranks), len(useful)
        g_r, g_s = min(n_r, n_rank_bins), min(n_s, n_step_bins)
        useful = useful.assign(pos=np.arange(n_s), sbin=np.searchsorted((np.arange(g_s) * n_s) // g_s,
                                                                        np.arange(n_s), side="right") - 1)
        rbins = pd.DataFrame({"rank": ranks, "rbin": np.searchsorted((np.arange(g_r) * n_r) // g_r,
                                                                     np.arange(n_r), side="right") - 1})
        be = self.backend
        got = be.run(queries.render(queries.RANK_HEATMAP, be.dialect), {"useful": useful, "rank_bins": rbins})
        mat = np.full((g_r, g_s), np.nan)
        mat[got["rbin"].astype(np.int64), got["sbin"].astype(np.int64)] = got["v_max" if agg == "max" else "v_mean"]
        return mat, useful["step"].to_numpy(np.int64), ranks


def step_flags(joined: np.ndarray) -> np.ndarray:
    """Each step's flags from the engine's text (its rows' distinct flags joined by ","; NULL for
    none): split at the separators, sorted and joined by "," ("" for none), as
    ``analysis.accounting`` joins the flags of a step's rows in memory."""
    codes, uniques = pd.factorize(pd.Series(joined, dtype=object), use_na_sentinel=True)
    text = [",".join(sorted({t for t in _FLAG_SEPARATORS.split(str(u).strip()) if t})) for u in uniques]
    return np.array([*text, ""], dtype=object)[codes]


def _useful(red: Reductions) -> tuple[pd.DataFrame, np.ndarray]:
    j = red.job
    keep = ~red.lost() & (j["n_rank_rows"] > 0)
    useful = pd.DataFrame({"attempt": j["attempt"][keep], "step": j["step"][keep],
                           "busy_median_s": j["busy_median_s"][keep]})
    return useful, keep


def _rank_stats(red: Reductions, threshold: float) -> RankStats:
    useful, keep = _useful(red)
    j = red.job
    per_query = _median_plan(red, keep)
    if per_query is not None:
        ranks, n, slow, median = _rank_medians(red, useful, threshold, per_query)
    else:
        ranks, n, slow, median = _rank_histograms(red, useful, keep, threshold)
    sb = j["slowest_by_rank"][keep]
    n_slowest = np.zeros(len(ranks), np.int64)
    pos = np.searchsorted(ranks, sb.astype(np.int64))
    np.add.at(n_slowest, pos, 1)
    frame = pd.DataFrame({"rank": ranks, "steps": n, "median_s": median, "n_slowest": n_slowest, "slow_steps": slow})
    return RankStats(frame, int(keep.sum()), threshold)


# What one busy time costs a holistic median in DuckDB (its values kept per group): measured
# 82M values in 1.2 GB (benchmarks/scale.py at 4,096 ranks x 20,000 steps), rounded up.
MEDIAN_BYTES_PER_VALUE = 24


def _median_plan(red: Reductions, keep: np.ndarray) -> list[str] | None:
    """WHERE clauses over rank ranges whose exact medians the engine computes itself, each within the
    memory it may use for one query (half of it); None: use the refined histograms (an engine
    without a memory plan, e.g. Spark, or ``median_by="histogram"``)."""
    budget = getattr(red.backend, "query_budget", None)
    if red.median_by == "histogram" or budget is None or not keep.any():
        return None
    room = budget()
    lo, hi = int(red.job["rank_min"][keep].min()), int(red.job["rank_max"][keep].max())
    lo = max(lo, 0)
    values = int(red.job["n_rank_rows"][keep].sum())
    n = 1 if room is None else max(1, -(-values * MEDIAN_BYTES_PER_VALUE // max(room // 2, 1)))
    return queries.range_clauses("rank", lo, hi, min(n, hi - lo + 1, values))


def _rank_medians(red: Reductions, useful: pd.DataFrame, threshold: float,
                  plan: list[str]) -> tuple[np.ndarray, ...]:
    """Per rank: rows, rows above (1 + threshold) x the step's median, and the exact median, by
    the engine's own median over one rank range at a time."""
    be = red.backend
    bar = _progress(len(plan), "per-rank statistics", red.progress)
    got = []
    for where in plan:
        got.append(be.run(queries.render(queries.RANK_MEDIANS, be.dialect, where=where, factor=1.0 + threshold),
                          {"useful": useful}))
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    cols = {c: np.concatenate([g[c] for g in got]) for c in ("rank", "n", "slow", "median_s")}
    o = np.argsort(cols["rank"], kind="stable")
    return (cols["rank"][o].astype(np.int64), cols["n"][o].astype(np.int64), cols["slow"][o].astype(np.int64),
            cols["median_s"][o].astype(float))


def _rank_histograms(red: Reductions, useful: pd.DataFrame, keep: np.ndarray,
                     threshold: float) -> tuple[np.ndarray, ...]:
    """The same figures as :func:`_rank_medians` from refined histograms (module docstring):
    a few scans, whatever the memory."""
    j = red.job
    lo = float(np.min(j["busy_min_s"][keep])) if keep.any() else 0.0
    hi = float(np.max(j["busy_max_s"][keep])) if keep.any() else 0.0
    inv = red.bins / (hi - lo) if hi > lo else 0.0
    be = red.backend
    bar = _progress(3, "per-rank statistics", red.progress)
    h = be.run(queries.render(queries.RANK_HISTOGRAM, be.dialect, lo=lo, inv=inv, last_bin=red.bins - 1,
                              factor=1.0 + threshold), {"useful": useful})
    if bar is not None:
        bar.update(1)
    o = np.lexsort((h["bin"], h["rank"]))
    h = {c: np.asarray(v)[o] for c, v in h.items()}
    ranks, first = np.unique(h["rank"].astype(np.int64), return_index=True)
    n = np.add.reduceat(h["n"].astype(np.int64), first) if len(first) else np.zeros(0, np.int64)
    slow = np.add.reduceat(h["slow"].astype(np.int64), first) if len(first) else np.zeros(0, np.int64)
    k1, k2 = (n - 1) // 2, n // 2
    v1, v2 = _order_stats(red, useful, h, first, ranks, k1, k2)  # both middle values in the same scans
    if bar is not None:
        bar.update(2)
        bar.close()
    return ranks, n, slow, np.where(k1 == k2, v1, (v1 + v2) / 2)


def _locate(h: Mapping[str, np.ndarray], first: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For rows sorted by group then bin (groups starting at ``first``), the row holding each
    group's ``k``-th value (0-based) and ``k``'s offset within that row's bin."""
    cum = np.cumsum(h["n"].astype(np.int64))
    before = np.r_[0, cum][first]
    row = np.searchsorted(cum, before + k, side="right")
    return row, before + k - (cum[row] - h["n"].astype(np.int64)[row])


def _order_stats(red: Reductions, useful: pd.DataFrame, h: Mapping[str, np.ndarray], first: np.ndarray,
                 ranks: np.ndarray, k1: np.ndarray, k2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The exact ``k1``-th and ``k2``-th smallest busy times of each rank (0-based), refining
    their histogram bins together: each target is a (rank, ``tid``) pair, ``tid`` 1 only where
    ``k2`` differs from ``k1``, so one scan per round serves both middle values."""
    r1, o1 = _locate(h, first, k1)
    r2, o2 = _locate(h, first, k2)
    two = k2 != k1
    row = np.r_[r1, r2[two]]
    n_rank = len(ranks)
    todo = pd.DataFrame({"rank": np.r_[ranks, ranks[two]], "tid": np.r_[np.zeros(n_rank, np.int64),
                                                                       np.ones(int(two.sum()), np.int64)],
                         "lo": h["lo"][row], "hi": h["hi"][row], "off": np.r_[o1, o2[two]],
                         "n": h["n"][row].astype(np.int64),
                         "i": np.r_[np.arange(n_rank), np.flatnonzero(two) + n_rank]})
    value = np.full(2 * n_rank, np.nan)
    single = (todo["lo"] == todo["hi"]).to_numpy()
    value[todo["i"].to_numpy()[single]] = todo["lo"].to_numpy()[single]
    todo = todo[~single].sort_values(["rank", "tid"], kind="stable")
    be = red.backend
    for _ in range(64):  # each round narrows a bin's range by ``bins``; doubles run out long before
        if todo.empty:
            break
        grid = todo.assign(inv=red.bins / (todo["hi"] - todo["lo"]))[["rank", "tid", "lo", "hi", "inv"]]
        if int(todo["n"].sum()) <= red.fetch_cap:
            got = be.run(queries.render(queries.RANK_VALUES, be.dialect), {"useful": useful, "grid": grid})
            vals = pd.DataFrame({"rank": got["rank"].astype(np.int64), "tid": got["tid"].astype(np.int64),
                                 "busy": got["busy"]}).sort_values(["rank", "tid", "busy"], kind="stable")
            vals["pos"] = vals.groupby(["rank", "tid"], sort=True).cumcount().to_numpy()
            pick = vals.merge(todo[["rank", "tid", "off", "i"]], on=["rank", "tid"])
            pick = pick[pick["pos"] == pick["off"]]
            value[pick["i"].to_numpy()] = pick["busy"].to_numpy()
            break
        sub = be.run(queries.render(queries.RANK_REFINE, be.dialect, last_bin=red.bins - 1),
                     {"useful": useful, "grid": grid})
        o = np.lexsort((sub["bin"], sub["tid"], sub["rank"]))
        sub = {c: np.asarray(v)[o] for c, v in sub.items()}
        _, sfirst = np.unique(sub["rank"].astype(np.int64) * 2 + sub["tid"].astype(np.int64), return_index=True)
        srow, soff = _locate(sub, sfirst, todo["off"].to_numpy())
        done = sub["lo"][srow] == sub["hi"][srow]
        value[todo["i"].to_numpy()[done]] = sub["lo"][srow][done]
        todo = todo.assign(lo=sub["lo"][srow], hi=sub["hi"][srow], off=soff, n=sub["n"][srow].astype(np.int64))[~done]
    if np.isnan(value[: n_rank]).any() or np.isnan(value[n_rank:][two]).any():
        raise RuntimeError("per-rank medians did not converge; this is a bug in mfu_toolkit")
    v1 = value[:n_rank]
    return v1, np.where(two, value[n_rank:], v1)
