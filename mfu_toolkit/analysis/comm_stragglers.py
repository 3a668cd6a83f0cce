"""Communication stragglers: a rank, host or link slow only in communication, with onset and duration.

Input: the per-rank, per-step table of a Run (``run.steps`` rows with ``rank >= 0``) with
``compute_s`` and ``comm_s``, as the trace loaders write it (Kineto and Nsight through
:mod:`mfu_toolkit.io.gpu_time`, XLA, the ``straggler_ops`` per-operation traces summed per step,
the recorder where ``comm`` was timed). ``exposed_comm_s`` (communication with no compute beside
it) is used for the recovery where present; otherwise all communication is taken as exposed, and
the report says so.

Method (this module's own; the frame follows Greyhound, Wu et al., "Greyhound: Hunting Fail-Slows
in Hybrid-Parallel Training at Scale", USENIX ATC '25, arXiv:2410.12588 as "Falcon": communication
fail-slows are the most frequent and longest — 40 % of cases, ~24 min on average — and a
change point in per-iteration time is accepted only when the mean moves by at least 10 %):

1. **Normalise.** Per step, each rank's comm (and compute) time against the median over its peers
   that step, as a log ratio ``x = log(t / median)`` (multiplicative noise is symmetric in logs, so a
   normal rank's series averages 0 however noisy; ``t / median − 1`` of lognormal noise does not).
   Peers are the ranks of the same pipeline stage where the steps carry ``stage`` (stages differ
   in their communication by design), else all ranks.
2. **Change points.** Binary segmentation of each rank's series with the standardised CUSUM
   statistic ``T_k = |S_k − k/n·S_n| / (σ·√(k(n−k)/n))`` (the z-score of the difference of the
   means before and after ``k``); each cut is then re-placed at its best split between its
   neighbouring cuts. σ is estimated robustly from first differences (1.4826 × median ``|Δx|`` /
   √2), which a mean shift barely moves. A split is kept when ``max_k T_k`` exceeds
   ``λ(n) = Φ⁻¹(1 − α / (2(n−1)))``: by the union bound over the ``n − 1`` candidate splits, a
   series of Gaussian noise is split with probability at most ``α`` (default 1e-4: λ(200) = 5.0;
   a job of 8 ranks has 16 series, so at most 0.16 % per job and level of the recursion). The
   bound is loose (neighbouring ``T_k`` are strongly correlated) and the next rule removes most
   of what passes: over 200 noise-only jobs of 8 ranks × 200 steps (lognormal noise, comm 10–40 %)
   one names anything (tests/test_comm_stragglers.py); heavy-tailed noise (Student t, 3 degrees
   of freedom, comm SD ≈ 17 %) is worse: about 3 % of such jobs show a short false episode.
3. **Episodes.** A segment whose median is at least ``log(1 + threshold)`` (default 10 %,
   Greyhound's minimum shift; the median, so one outlying step does not make a segment slow),
   over at least ``min_steps`` steps (default 5), is slow; next slow segments merge. Onset = its
   first step, end = its last slow step, or "to the end". A rank slow from the first step on is
   one segment with no change point: a persistent straggler.
4. **Physics.** In a synchronous collective the ranks that *wait* show long communication while
   the slow one shows long compute (and short communication: it arrives last and waits for no
   one). So a rank whose comm is long but whose compute is normal is a communication straggler
   (a slow link or NIC shared by the ranks that show it) only for the part of its excess that the
   compute excess of a concurrent compute straggler does not explain; the rest is *waiting*, and
   the compute straggler is named instead (kind ``compute``; the waiting ranks are kind
   ``waiting``). A rank slow in compute is never named for its communication. While a compute
   straggler is active, a slow link is named only for its excess beyond that straggler's delay
   (Greyhound finds the two often overlap); what waiting hides stays hidden.
5. **Hosts.** Where ranks map to hosts (``hosts=``, a ``host``/``hostname`` column of the steps, or a
   table with ``rank`` and ``host``/``hostname`` such as NCCL's ``communicators`` or XLA's
   ``device_events``), each host's series is the median over its ranks, and the same detection
   names a host when at least half its ranks are slow together.
6. **Links.** Where ranks map to the link (NIC, rail) they send through (``links=``, or a ``link``/``nic``
   column of the steps), each link's series is the median over its ranks, and a link is named the same
   way: in a rail-optimised cluster a slow rail spans hosts, so no host shows it while its link does.
   NCCL's own lines list a process's NICs and each channel's, not one NIC per rank, so the map is never
   guessed from them.

What fixing it recovers: per step, the exposed comm above the peers' median, taken to the median
(the part not explained by waiting); the step shrinks by the largest such excess among the named
ranks (everyone waits for the slowest). Where the run holds a replayable per-operation trace
(``tables["ops"]``), the dependency-graph replay of :mod:`mfu_toolkit.scenarios.replay` gives the
recovery instead: the named workers' communication ops at the median transfer time of their type.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from ..scenarios.replay import REPLAY_COLUMNS, straggler_whatif
from .stragglers import rank_matrix

__all__ = ["COMM_KINDS", "CommStragglerReport", "change_segments", "comm_stragglers", "cusum_threshold",
           "slow_episodes"]

COMM_KINDS: dict[str, str] = {
    "comm": "communication straggler: long communication with normal compute (a slow link, NIC or switch "
            "port shared by the ranks named)",
    "compute": "compute straggler: long compute; the ranks that wait for it show long communication",
    "waiting": "waiting, not a culprit: long communication explained by a compute straggler in the same steps",
}
DEFAULT_THRESHOLD = 0.10  # Greyhound's minimum shift of the mean for a real fail-slow
DEFAULT_ALPHA = 1e-4
DEFAULT_MIN_STEPS = 5
_SIGMA_FLOOR = 1e-3  # relative noise below 0.1 % is taken as 0.1 % (noiseless synthetic data)
_MIN_SEGMENT = 3  # the shortest segment binary segmentation may cut off
_COMM_SUFFIXES = ("-send", "-recv", "all-reduce", "all-gather", "reduce-scatter", "all-to-all", "broadcast")
_HOST_COLUMNS = ("host", "hostname")
_HOST_TABLES = ("device_events", "communicators", "collectives", "inspector_comms")
_LINK_COLUMNS = ("link", "nic")
_SHOWN = 3


# --------------------------------------------------------------------------------------------
# change points


def cusum_threshold(n: int, alpha: float = DEFAULT_ALPHA) -> float:
    """``λ(n)`` with ``(n − 1) · 2 · (1 − Φ(λ)) = α``: a union bound on splitting pure noise."""
    return NormalDist().inv_cdf(1.0 - alpha / (2.0 * max(n - 1, 1)))


def _noise_scale(x: np.ndarray) -> float:
    """σ of iid noise from first differences (robust to a few mean shifts), at least the floor."""
    d = np.diff(x)
    if not len(d):
        return _SIGMA_FLOOR
    return max(1.4826 * float(np.median(np.abs(d))) / math.sqrt(2.0), _SIGMA_FLOOR)


def _best_split(x: np.ndarray, sigma: float, alpha: float, min_size: int) -> int | None:
    """The split of ``x`` with the largest standardised CUSUM, if it passes ``λ(len(x))``."""
    n = len(x)
    if n < 2 * min_size:
        return None
    k = np.arange(1, n, dtype=float)
    dev = np.cumsum(x)[:-1] - k / n * float(x.sum())
    stat = np.abs(dev) / (sigma * np.sqrt(k * (n - k) / n))
    stat[: min_size - 1] = 0.0
    stat[n - min_size:] = 0.0
    j = int(np.argmax(stat))
    return j + 1 if stat[j] > cusum_threshold(n, alpha) else None


def change_segments(x: Any, *, alpha: float = DEFAULT_ALPHA, min_size: int = _MIN_SEGMENT,
                    sigma: float | None = None) -> list[int]:
    """Segment boundaries ``[0, c1, …, n]`` of a series by binary segmentation (CUSUM, see module doc).

    Missing values count as 0 (no excess). ``sigma``: the noise scale, else estimated from ``x``.
    """
    x = np.nan_to_num(np.asarray(x, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    s = _noise_scale(x) if sigma is None else max(float(sigma), _SIGMA_FLOOR)
    cuts, todo = [0, len(x)], [(0, len(x))]
    while todo:
        a, b = todo.pop()
        k = _best_split(x[a:b], s, alpha, min_size)
        if k is not None:
            cuts.append(a + k)
            todo += [(a, a + k), (a + k, b)]
    cuts.sort()
    # refine: each cut re-placed at its best split between its neighbours (the first split of a
    # pulse sees both of its edges at once, which pulls it a few steps off)
    for i in range(1, len(cuts) - 1):
        a, b = cuts[i - 1], cuts[i + 1]
        k = _best_split(x[a:b], s, 1.0, min_size)
        if k is not None:
            cuts[i] = a + k
    return cuts


def slow_episodes(x: Any, *, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                  min_steps: int = DEFAULT_MIN_STEPS) -> list[tuple[int, int]]:
    """Index ranges ``[i0, i1)`` where a series of log ratios (time over the peers' median) is slow.

    The segments of :func:`change_segments` whose mean is at least ``log(1 + threshold)`` (a
    geometric-mean excess of ``threshold``), next ones merged, kept when they span at least
    ``min_steps`` steps.
    """
    v = np.nan_to_num(np.asarray(x, dtype=float), nan=0.0, posinf=0.0, neginf=0.0)
    cuts = change_segments(v, alpha=alpha)
    out: list[tuple[int, int]] = []
    for a, b in zip(cuts, cuts[1:], strict=False):
        if float(np.median(v[a:b])) < math.log1p(threshold):
            continue
        if out and out[-1][1] == a:
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return [(a, b) for a, b in out if b - a >= min_steps]


# --------------------------------------------------------------------------------------------
# the per-rank step table


@dataclass(frozen=True)
class _Table:
    """The per-rank step table as steps × ranks matrices, with the peers' per-step medians."""

    keys: pd.DataFrame  # attempt, step (useful steps, in order)
    ranks: np.ndarray
    stage: np.ndarray | None
    compute: np.ndarray
    comm: np.ndarray
    exposed: np.ndarray
    span_s: np.ndarray  # per step: last end − first start over the ranks
    exposed_from: str

    @property
    def groups(self) -> list[np.ndarray]:
        """Column indices of peers: one group per pipeline stage, or all ranks (as the stragglers module)."""
        if self.stage is None:
            return [np.arange(len(self.ranks))]
        return [np.flatnonzero(self.stage == p) for p in np.unique(self.stage)]

    @property
    def compared_with(self) -> str:
        if self.stage is not None:
            return "peers of the same pipeline stage"
        return "all ranks (no stage information: ranks of different pipeline stages are compared as peers)"

    def peer_median(self, mat: np.ndarray) -> np.ndarray:
        out = np.full(mat.shape, np.nan)
        for cols in self.groups:
            out[:, cols] = np.nanmedian(mat[:, cols], axis=1, keepdims=True)
        return out


def _need_columns(s: pd.DataFrame) -> None:
    """Refuse a run without per-rank compute and communication seconds, saying what is missing."""
    per_rank = s["rank"].to_numpy() >= 0
    if not per_rank.any():
        raise ValueError("run has no per-rank steps (every row has rank = -1): communication stragglers need "
                         "a per-rank, per-step table with compute_s and comm_s (a multi-rank trace: Kineto, "
                         "Nsight, XLA, straggler_ops, or the recorder with comm timed)")
    for col in ("compute_s", "comm_s"):
        if col not in s.columns or not np.isfinite(pd.to_numeric(s.loc[per_rank, col], errors="coerce")).any():
            raise ValueError(f"run.steps has no {col} values for its per-rank rows (columns: {list(s.columns)}): "
                             "communication stragglers compare each rank's compute_s and comm_s with its peers'; "
                             "load a trace that times communication (Kineto, Nsight, XLA, straggler_ops) or "
                             "record it (StepRecorder's comm span)")


def _matrices(s: pd.DataFrame, cols: list[str]) -> tuple[pd.DataFrame, np.ndarray, dict[str, np.ndarray]]:
    """Useful steps (a step redone after a restart keeps its last attempt) × ranks, one matrix per column."""
    per_rank = s["rank"].to_numpy() >= 0
    att = s["attempt"].to_numpy(np.int64)[per_rank]
    stp = s["step"].to_numpy(np.int64)[per_rank]
    rk = s["rank"].to_numpy(np.int64)[per_rank]
    keep = att >= pd.Series(att).groupby(stp).transform("max").to_numpy()
    lo = int(stp.min())
    width = int(stp.max()) - lo + 1
    ukeys, gidx = np.unique(att[keep] * width + (stp[keep] - lo), return_inverse=True)
    ranks, ridx = np.unique(rk[keep], return_inverse=True)
    mats = {}
    for c in cols:
        vals = pd.to_numeric(s[c], errors="coerce").to_numpy(float)[per_rank][keep]
        m = np.full((len(ukeys), len(ranks)), np.nan)
        m[gidx, ridx] = vals
        mats[c] = m
    keys = pd.DataFrame({"attempt": ukeys // width, "step": ukeys % width + lo})
    return keys, ranks, mats


def _table(run: Run, min_steps: int) -> _Table:
    """The matrices the analysis needs; a ValueError naming what is missing when the run lacks them."""
    s = run.steps
    if run.reductions is not None and not len(s):
        raise ValueError("run holds per-step reductions only (out of core): communication stragglers need the "
                         "per-rank step rows in memory (load the trace without an out-of-core engine)")
    _need_columns(s)
    exposed_col = "exposed_comm_s" if "exposed_comm_s" in s.columns and s["exposed_comm_s"].notna().any() else None
    cols = ["compute_s", "comm_s", "start_s", "end_s"] + ([exposed_col] if exposed_col else [])
    keys, ranks, m = _matrices(s, cols)
    if len(ranks) < 2:
        raise ValueError(f"run has one rank ({int(ranks[0])}) with per-rank steps: a straggler shows only "
                         "against other ranks")
    if len(keys) < 2 * min_steps:
        raise ValueError(f"run has {len(keys)} step(s) with per-rank rows: onset and duration need at least "
                         f"{2 * min_steps} steps (2 × min_steps; a few profiled steps cannot show an episode)")
    m_busy = rank_matrix(run)  # the straggler analysis's own reading of each rank's pipeline stage
    stage = m_busy.stage if np.array_equal(m_busy.ranks, ranks) else None
    span = np.nanmax(m["end_s"], axis=1) - np.nanmin(m["start_s"], axis=1)
    exposed = m[exposed_col] if exposed_col else m["comm_s"]
    how = ("exposed_comm_s (communication with no compute beside it)" if exposed_col else
           "comm_s (no exposed_comm_s column: all communication taken as exposed, an upper bound)")
    return _Table(keys, ranks, stage, m["compute_s"], m["comm_s"], exposed, span, how)


def _relative(t: _Table, mat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(log(mat / peers' median), mat − peers' median)`` per rank and step (NaN where a median is 0).

    The log ratio, not ``mat / median − 1``: noise that multiplies a time is symmetric in logs, so a
    normal rank's series has mean 0 however noisy it is (the plain ratio of lognormal noise with
    σ = 0.4 averages +8 %, close to the threshold)."""
    med = t.peer_median(mat)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = np.where((med > 0) & (mat > 0), np.log(mat / med), np.nan)
    return rel, mat - med


# --------------------------------------------------------------------------------------------
# hosts


def _given_hosts(hosts: Mapping[int, Any] | int, ranks: np.ndarray) -> tuple[dict[int, str], str]:
    """The rank → host map the caller gave: a mapping, or ranks per host (ranks grouped in order)."""
    if isinstance(hosts, bool) or not isinstance(hosts, (int, np.integer, Mapping)):
        raise ValueError(f"hosts must be a mapping rank -> host or the number of ranks per host; got {hosts!r}")
    if isinstance(hosts, Mapping):
        return {int(r): str(h) for r, h in hosts.items()}, "hosts= (given)"
    if int(hosts) < 1:
        raise ValueError(f"hosts (ranks per host) must be >= 1; got {hosts!r}")
    n = int(hosts)
    return ({int(r): f"host{int(r) // n}" for r in ranks},
            f"hosts={n}: ranks numbered host by host, {n} per host (as given, not read)")


def _table_hosts(df: pd.DataFrame, columns: tuple[str, ...] = _HOST_COLUMNS) -> dict[int, str]:
    """rank → host (or the first of ``columns``) from a table with ``rank`` and it (global ranks only)."""
    col = next((c for c in columns if c in df.columns), None)
    if col is None or "rank" not in df.columns:
        return {}
    sub = df[df["rank"].notna() & df[col].notna()]
    size = next((c for c in ("nranks", "n_ranks") if c in sub.columns), None)
    if size is not None and sub[size].notna().any():  # a split communicator numbers its own ranks
        sub = sub[sub[size] == sub[size].max()]
    pairs = sub.drop_duplicates(["rank", col])
    if pairs["rank"].duplicated().any():
        return {}  # one rank on two hosts: not one job's global ranks
    return {int(r): str(h) for r, h in zip(pairs["rank"], pairs[col], strict=True)}


def _host_map(run: Run, ranks: np.ndarray, hosts: Mapping[int, Any] | int | None) -> tuple[dict[int, str], str | None]:
    """Each rank's host and where that came from (None when nothing says)."""
    if hosts is not None:
        return _given_hosts(hosts, ranks)
    s = run.steps
    for col in _HOST_COLUMNS:
        if col in s.columns and s[col].notna().any():
            found = _table_hosts(s[s["rank"] >= 0][["rank", col]])
            if found:
                return found, f"run.steps column {col!r}"
    for name in _HOST_TABLES:
        df = run.tables.get(name)
        if isinstance(df, pd.DataFrame) and len(df):
            found = _table_hosts(df)
            if found and set(found) & {int(r) for r in ranks}:
                return found, f"run.tables[{name!r}] (rank, host)"
    return {}, None


def _link_map(run: Run, links: Mapping[int, Any] | None) -> tuple[dict[int, str], str | None]:
    """Each rank's link (NIC, rail) and where that came from: ``links=``, or a ``link``/``nic`` steps column."""
    if links is not None:
        if not isinstance(links, Mapping):
            raise ValueError(f"links must be a mapping rank -> link (NIC, rail); got {links!r}")
        return {int(r): str(v) for r, v in links.items()}, "links= (given)"
    s = run.steps
    for col in _LINK_COLUMNS:
        if col in s.columns and s[col].notna().any():
            found = _table_hosts(s[s["rank"] >= 0][["rank", col]], (col,))
            if found:
                return found, f"run.steps column {col!r}"
    return {}, None


# --------------------------------------------------------------------------------------------
# detection and the physics


@dataclass(frozen=True)
class _Signals:
    """Per rank and step: relative and absolute excess over the peers' median, and what waiting explains."""

    rc: np.ndarray  # log(compute / peers' median)
    ec: np.ndarray  # compute − peers' median (s)
    rm: np.ndarray  # log(comm / peers' median)
    em: np.ndarray  # comm − peers' median (s)
    active: np.ndarray  # bool: a compute episode of this rank covers this step
    unexplained: np.ndarray  # comm excess (s) beyond the largest concurrent compute excess of another rank
    rel_unexplained: np.ndarray  # log(1 + that / the peers' median comm)
    exposed_excess: np.ndarray  # exposed comm − peers' median (s), at least 0


def _waiting_explained(ec: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Per rank and step: the largest compute excess (s) of *another* rank in a compute episode then."""
    e = np.where(active, np.clip(np.nan_to_num(ec), 0.0, None), 0.0)
    if e.shape[1] < 2:
        return np.zeros_like(e)
    order = np.argsort(-e, axis=1)
    top1 = np.take_along_axis(e, order[:, :1], axis=1)
    top2 = np.take_along_axis(e, order[:, 1:2], axis=1)
    is_top = np.arange(e.shape[1])[None, :] == order[:, :1]
    return np.where(is_top, top2, top1)


def _signals(t: _Table, compute_eps: dict[int, list[tuple[int, int]]]) -> _Signals:
    rc, ec = _relative(t, t.compute)
    rm, em = _relative(t, t.comm)
    active = np.zeros(t.compute.shape, dtype=bool)
    for j, eps in compute_eps.items():
        for a, b in eps:
            active[a:b, j] = True
    unexplained = np.clip(np.nan_to_num(em) - _waiting_explained(ec, active), 0.0, None)
    med_m = t.peer_median(t.comm)
    with np.errstate(invalid="ignore", divide="ignore"):
        rel_u = np.where(med_m > 0, np.log1p(unexplained / med_m), 0.0)
    _, ex = _relative(t, t.exposed)
    return _Signals(rc, ec, rm, em, active, unexplained, rel_u, np.clip(np.nan_to_num(ex), 0.0, None))


def _mean(a: np.ndarray) -> float:
    a = a[np.isfinite(a)]
    return float(a.mean()) if len(a) else float("nan")


def _row(t: _Table, sg: _Signals, who: dict[str, Any], cols: np.ndarray, kind: str,
         ep: tuple[int, int]) -> dict[str, Any]:
    """One episode of one rank or host as a table row (the recovery columns are filled later)."""
    a, b = ep
    k = t.keys
    gain = (np.nanmax(np.minimum(sg.exposed_excess, sg.unexplained)[a:b][:, cols], axis=1) if kind == "comm"
            else np.nanmax(np.clip(np.nan_to_num(sg.ec[a:b][:, cols]), 0, None), axis=1) if kind == "compute"
            else np.zeros(b - a))
    stages = sorted({int(t.stage[c]) for c in cols}) if t.stage is not None else []
    return {
        **who, "ranks": [int(t.ranks[c]) for c in cols], "stage": stages[0] if len(stages) == 1 else -1,
        "kind": kind, "attempt": int(k["attempt"].iloc[a]), "onset_step": int(k["step"].iloc[a]),
        "end_step": int(k["step"].iloc[b - 1]), "to_end": bool(b == len(k)), "steps": int(b - a),
        "seconds": float(np.nansum(t.span_s[a:b])),
        "comm_excess": math.expm1(_mean(np.nanmedian(sg.rm[a:b][:, cols], axis=1))),
        "compute_excess": math.expm1(_mean(np.nanmedian(sg.rc[a:b][:, cols], axis=1))),
        "excess_comm_s": float(np.nansum(np.clip(sg.em[a:b][:, cols], 0, None))),
        "waiting_s": float(np.nansum(np.clip(sg.em[a:b][:, cols], 0, None) - sg.unexplained[a:b][:, cols])),
        "recovered_s": float(np.nansum(gain)), "waits_for": [], "in_host": None, "in_link": None,
        "_i0": a, "_i1": b, "_cols": cols, "_gain": gain,
    }


def _comm_kind(sg: _Signals, cols: np.ndarray, ep: tuple[int, int], threshold: float) -> str | None:
    """``comm`` or ``waiting`` for a comm episode of these ranks; None when they are slow in compute."""
    a, b = ep
    level = math.log1p(threshold)
    if sg.active[a:b][:, cols].any() or _mean(np.nanmedian(sg.rc[a:b][:, cols], axis=1)) >= level:
        return None
    return "comm" if _mean(np.nanmedian(sg.rel_unexplained[a:b][:, cols], axis=1)) >= level else "waiting"


def _waits_for(t: _Table, sg: _Signals, row: dict[str, Any]) -> list[int]:
    """The compute stragglers active during a waiting episode (not the waiting ranks themselves)."""
    busy = sg.active[row["_i0"]:row["_i1"]].any(axis=0)
    busy[row["_cols"]] = False
    return [int(r) for r in t.ranks[busy]]


def _group_rows(t: _Table, sg: _Signals, group_of: dict[int, str], level: str, threshold: float, alpha: float,
                min_steps: int) -> list[dict[str, Any]]:
    """Comm episodes of hosts (or links): the median over a group's ranks, so at least half of them slow
    together."""
    by_host: dict[str, list[int]] = {}
    for j, r in enumerate(t.ranks):
        if int(r) in group_of:
            by_host.setdefault(group_of[int(r)], []).append(j)
    rows = []
    for h, js in by_host.items():
        if len(js) < 2:
            continue
        cols = np.array(js)
        series = np.nanmedian(sg.rm[:, cols], axis=1)
        for ep in slow_episodes(series, threshold=threshold, alpha=alpha, min_steps=min_steps):
            kind = _comm_kind(sg, cols, ep, threshold)
            if kind is not None:
                who = {"level": level, "rank": -1, "host": h if level == "host" else None,
                       "link": h if level == "link" else None}
                rows.append(_row(t, sg, who, cols, kind, ep))
    return rows


def _detect(t: _Table, host_of: dict[int, str], link_of: dict[int, str], threshold: float, alpha: float,
            min_steps: int) -> tuple[list[dict[str, Any]], list[str]]:
    """Compute episodes first (they explain waiting), then comm episodes of ranks, hosts and links."""
    kw = {"threshold": threshold, "alpha": alpha, "min_steps": min_steps}
    rc, _ = _relative(t, t.compute)
    compute_eps = {j: slow_episodes(rc[:, j], **kw) for j in range(len(t.ranks))}
    sg = _signals(t, compute_eps)
    rows, notes = [], []
    for j, r in enumerate(t.ranks):
        who = {"level": "rank", "rank": int(r), "host": host_of.get(int(r)), "link": link_of.get(int(r))}
        cols = np.array([j])
        rows += [_row(t, sg, who, cols, "compute", ep) for ep in compute_eps[j]]
        for ep in slow_episodes(sg.rm[:, j], **kw):
            kind = _comm_kind(sg, cols, ep, threshold)
            if kind is None:
                notes.append(f"rank {int(r)}: long communication over steps {int(t.keys['step'].iloc[ep[0]])}–"
                             f"{int(t.keys['step'].iloc[ep[1] - 1])} while its compute is slow too: named as a "
                             "compute straggler (a host-side cause, e.g. CPU contention, slows both)")
                continue
            rows.append(_row(t, sg, who, cols, kind, ep))
    rows += _group_rows(t, sg, host_of, "host", threshold, alpha, min_steps)
    rows += _group_rows(t, sg, link_of, "link", threshold, alpha, min_steps)
    for row in rows:
        if row["kind"] == "waiting":
            row["waits_for"] = _waits_for(t, sg, row)
    for key in ("host", "link"):  # a rank's episode inside its named host's (link's) is that one's
        for hr in (r for r in rows if r["level"] == key and r["kind"] == "comm"):
            for r in rows:
                if (r["level"] == "rank" and r["kind"] == "comm" and r[key] == hr[key]
                        and r["_i0"] < hr["_i1"] and hr["_i0"] < r["_i1"]):
                    r[f"in_{key}"] = hr[key]
    return rows, notes


# --------------------------------------------------------------------------------------------
# what fixing it recovers


def _job_gain(n: int, culprits: list[dict[str, Any]]) -> np.ndarray:
    """Per step: the largest recoverable excess among the culprits active then (everyone waits for it)."""
    gain = np.zeros(n)
    for row in culprits:
        a, b = row["_i0"], row["_i1"]
        gain[a:b] = np.maximum(gain[a:b], np.nan_to_num(row["_gain"]))
    return gain


def _replay_mask(rp: Any, t: _Table, rows: list[dict[str, Any]]) -> tuple[np.ndarray, list[int]]:
    """The named ranks' communication ops in their episodes' replayed steps; ranks the replay lacks."""
    worker: dict[int, tuple[int, int]] = {}
    for d, p, rks in rp.ranks[["dp_rank", "stage", "ranks"]].itertuples(index=False):
        for r in rks:
            worker[int(r)] = (int(np.searchsorted(rp.dps, d)), int(p))
    step_idx = {int(s): i for i, s in enumerate(rp.steps)}
    comm = np.array([str(o).endswith(_COMM_SUFFIXES) for o in rp.graph.optype])
    mask = np.zeros(rp.actual.shape, dtype=bool)
    missing = []
    for row in rows:
        idx = np.array([step_idx[int(s)] for s in t.keys["step"].iloc[row["_i0"]:row["_i1"]] if int(s) in step_idx],
                       dtype=np.int64)
        for r in row["ranks"]:
            if r not in worker:
                missing.append(r)
                continue
            j, p = worker[r]
            mask[np.ix_(np.flatnonzero(comm & (rp.graph.stage == p)), idx * rp.n_dp + j)] = True
    return mask, missing


def _replayed(run: Run, t: _Table) -> tuple[Any, str]:
    """The replay inputs of the run's per-operation trace, or None and why not."""
    ops = run.tables.get("ops")
    if not isinstance(ops, pd.DataFrame) or any(c not in ops.columns for c in REPLAY_COLUMNS):
        return None, "no replayable per-operation trace (tables['ops'])"
    if t.keys["attempt"].nunique() > 1:
        return None, "the op trace spans several attempts: the replay numbers steps within one"
    res = straggler_whatif(run)
    if not res.available:
        return None, "the op trace could not be replayed (" + "; ".join(res.notes) + ")"
    return res.replay, "replay"  # the replay inputs: graph, actual and ideal durations per op and step


def _replay_gain(rp: Any, t: _Table, rows: list[dict[str, Any]]) -> tuple[np.ndarray | None, str]:
    """Per step of the table: the replayed step minus the replay with these rows' comm ops at the
    median transfer time of their type (None, and why, when a named rank is not a replayed worker)."""
    mask, missing = _replay_mask(rp, t, rows)
    if missing or not mask.any():
        return None, f"rank(s) {sorted(set(missing))[:_SHOWN]} not among the replayed workers"
    act = rp.step_times(rp.actual)
    fixed = rp.step_times(np.where(mask, rp.ideal, rp.actual))
    by_step = dict(zip((int(s) for s in rp.steps), act - fixed, strict=True))
    return np.array([by_step.get(int(s), 0.0) for s in t.keys["step"]]), "replay"


def _recover(run: Run, t: _Table, rows: list[dict[str, Any]], replay: bool) -> tuple[np.ndarray, str]:
    """The per-step recovery of fixing every named comm culprit, and how it was computed."""
    culprits = [r for r in rows if r["kind"] == "comm" and r["in_host"] is None and r["in_link"] is None]
    step_table = ("step table: per step, the largest exposed comm above the peers' median among the named "
                  "ranks (the part waiting does not explain), taken to the median")
    if not culprits or not replay:
        return _job_gain(len(t.keys), culprits), step_table
    rp, why = _replayed(run, t)
    gain = None
    if rp is not None:
        gain, why = _replay_gain(rp, t, culprits)
    if gain is None:
        return _job_gain(len(t.keys), culprits), f"{step_table} ({why})"
    for row in culprits:  # each culprit's own share: the replay with only its comm ops idealised
        own, _ = _replay_gain(rp, t, [row])
        if own is not None:
            row["recovered_s"] = float(own[row["_i0"]:row["_i1"]].sum())
    return gain, ("replay: the per-operation trace replayed with the named ranks' communication ops at the "
                  "median transfer time of their type (scenarios.replay)")


# --------------------------------------------------------------------------------------------
# the report

_COLUMNS = ("level", "rank", "host", "ranks", "stage", "kind", "attempt", "onset_step", "end_step", "to_end",
            "steps", "seconds", "comm_excess", "compute_excess", "excess_comm_s", "waiting_s", "recovered_s",
            "waits_for", "in_host", "link", "in_link")
_KIND_ORDER = {"comm": 0, "compute": 1, "waiting": 2}


@dataclass(frozen=True)
class CommStragglerReport:
    """Who is slow in communication (or makes others wait), when, for how long, and what fixing it recovers.

    ``table``: one row per episode of a rank, host or link (``level``), its ``kind`` (:data:`COMM_KINDS`),
    ``onset_step``/``end_step`` (the last slow step; ``to_end`` when it lasts to the end of the
    run), ``steps`` and ``seconds`` (the episode's step spans summed), ``comm_excess`` and
    ``compute_excess`` (the excess over the peers' median as a geometric mean over the episode,
    0.4 = +40 %; a host's per step is the median over its ranks), ``excess_comm_s`` (rank-seconds
    of comm above the peers' median), ``waiting_s`` (the part of it a concurrent compute straggler
    explains), ``recovered_s`` (what fixing this row alone
    recovers: exposed comm for ``comm``, compute for ``compute``, 0 for ``waiting``), ``waits_for``
    (the compute stragglers a ``waiting`` row waits for), ``in_host`` / ``in_link`` (a rank row inside a
    named host or link; ``link`` is the rank's link where the run maps one).
    ``recovered_s`` of the report: fixing every named comm culprit, per step the largest excess
    (``steps`` has it step by step); ``wall_share`` is that over the wall time.
    """

    table: pd.DataFrame
    verdict: str
    kind: str  # "comm", "compute" or "none"
    recovered_s: float
    wall_s: float
    recovery_method: str
    source: str
    compared_with: str
    hosts_from: str | None
    threshold: float
    alpha: float
    min_steps: int
    steps: pd.DataFrame = field(repr=False)
    notes: list[str] = field(default_factory=list)
    links_from: str | None = None

    @property
    def wall_share(self) -> float:
        return self.recovered_s / self.wall_s if self.wall_s > 0 else float("nan")

    @property
    def culprits(self) -> pd.DataFrame:
        """The communication stragglers named (host and link rows stand for the ranks inside them)."""
        t = self.table
        return t[(t["kind"] == "comm") & t["in_host"].isna() & t["in_link"].isna()].reset_index(drop=True)

    def lines(self) -> list[str]:
        out = [self.verdict, f"Source: {self.source}", f"Compared with: {self.compared_with}",
               f"Method: CUSUM binary segmentation (alpha {self.alpha:g}), episodes ≥ {self.threshold:.0%} above "
               f"the peers' median for ≥ {self.min_steps} steps; hosts from {self.hosts_from or 'nowhere (unknown)'}"
               + (f"; links from {self.links_from}" if self.links_from else "")]
        for row in self.table.head(8).to_dict("records"):
            out.append(f"  {row['kind']:8s} {_who(row)}: comm {row['comm_excess']:+.0%}, compute "
                       f"{row['compute_excess']:+.0%}, {_when(row)}; excess comm {row['excess_comm_s']:.4g} s, "
                       f"recovered if fixed {row['recovered_s']:.4g} s")
        if self.kind == "comm":
            out.append(f"Fixing the named communication stragglers recovers {self.recovered_s:.4g} s = "
                       f"{self.wall_share:.2%} of wall time ({self.recovery_method})")
        return out + [f"Note: {n}" for n in self.notes]


def _ranks_text(ranks: list[int]) -> str:
    if len(ranks) > 2 and ranks == list(range(ranks[0], ranks[-1] + 1)):
        return f"{ranks[0]}–{ranks[-1]}"
    return ", ".join(map(str, ranks[:8])) + (f" … ({len(ranks)})" if len(ranks) > 8 else "")


def _who(row: Mapping[str, Any]) -> str:
    if row["level"] in ("host", "link"):
        return f"{row['level']} {row[row['level']]} (ranks {_ranks_text(list(row['ranks']))})"
    on = f" on host {row['host']}" if isinstance(row["host"], str) else ""
    stage = f" (stage {row['stage']})" if row["stage"] >= 0 else ""
    return f"rank {row['rank']}{on}{stage}"


def _when(row: Mapping[str, Any]) -> str:
    span = (f"from step {row['onset_step']} to the end" if row["to_end"]
            else f"steps {row['onset_step']}–{row['end_step']}")
    return f"{span} ({row['steps']} steps, {row['seconds']:.4g} s)"


def _verdict(table: pd.DataFrame, recovered: float, wall: float, method: str, shape: tuple[int, int],
             threshold: float, min_steps: int) -> tuple[str, str]:
    comm = table[(table["kind"] == "comm") & table["in_host"].isna() & table["in_link"].isna()]
    comp = table[table["kind"] == "compute"].sort_values("recovered_s", ascending=False, kind="stable")
    if len(comm):
        top = comm.iloc[0]
        more = f"; and {len(comm) - 1} more" if len(comm) > 1 else ""
        also = f"; also compute straggler {_who(comp.iloc[0])}, {_when(comp.iloc[0])}" if len(comp) else ""
        share = recovered / wall if wall > 0 else float("nan")
        return "comm", (f"Communication straggler (slow link or NIC: long communication, normal compute): {_who(top)}, "
                        f"comm {top['comm_excess']:+.0%} over its peers' median with compute "
                        f"{top['compute_excess']:+.0%}, {_when(top)}{more}; fixing it recovers {recovered:.4g} s "
                        f"({share:.2%} of wall time, by {method.split(':')[0]}){also}")
    if len(comp):
        top = comp.iloc[0]
        waiting = sorted({r for rs in table.loc[table["kind"] == "waiting", "ranks"] for r in rs})
        wait = (f"; the long communication of rank(s) {_ranks_text(waiting)} is waiting for it, not a comm straggler"
                if waiting else "; the ranks that wait for it show long communication, not a comm straggler")
        return "compute", (f"No communication straggler: compute straggler {_who(top)}, compute "
                           f"{top['compute_excess']:+.0%} over its peers' median, {_when(top)}{wait}")
    return "none", (f"No communication straggler: no rank's communication stays {threshold:.0%} or more above its "
                    f"peers' median for {min_steps}+ steps, and no compute straggler "
                    f"({shape[1]} ranks × {shape[0]} steps)")


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame([{c: r[c] for c in _COLUMNS} for r in rows], columns=list(_COLUMNS))
    if not len(df):
        return df
    df["_o"] = df["kind"].map(_KIND_ORDER)
    df = df.sort_values(["_o", "recovered_s", "onset_step"], ascending=[True, False, True], kind="stable")
    return df.drop(columns="_o").reset_index(drop=True)


def _check(name: str, value: Any, lo: float, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or not lo < value < hi:
        raise ValueError(f"{name} must be a number in ({lo:g}, {hi:g}); got {value!r}")
    return float(value)


def comm_stragglers(run: Run, *, threshold: float = DEFAULT_THRESHOLD, alpha: float = DEFAULT_ALPHA,
                    min_steps: int = DEFAULT_MIN_STEPS, hosts: Mapping[int, Any] | int | None = None,
                    replay: bool = True, links: Mapping[int, Any] | None = None) -> CommStragglerReport:
    """Name the ranks, hosts and links slow only in communication, with onset, duration and what fixing them
    recovers.

    Uses ``run.steps`` per-rank rows: ``compute_s`` and ``comm_s`` (``exposed_comm_s`` for the recovery
    where present); a ValueError says what is missing when the run has no such table, one rank or
    fewer than ``2 × min_steps`` steps. ``threshold``: the smallest relative excess over the peers'
    median that counts (10 %, Greyhound's verification rule); ``alpha``: the CUSUM split's false-alarm
    bound per series; ``min_steps``: the shortest episode; ``hosts``: rank → host, or ranks per host,
    else read from the run; ``links``: rank → link (NIC, rail), else a ``link``/``nic`` steps column;
    ``replay``: use the per-operation replay for the recovery where it can.
    The method and its physics are in the module docstring.
    """
    threshold = _check("threshold", threshold, 0.0, 100.0)
    alpha = _check("alpha", alpha, 0.0, 1.0)
    if isinstance(min_steps, bool) or not isinstance(min_steps, (int, np.integer)) or min_steps < 1:
        raise ValueError(f"min_steps must be an integer >= 1; got {min_steps!r}")
    t = _table(run, int(min_steps))
    host_of, hosts_from = _host_map(run, t.ranks, hosts)
    link_of, links_from = _link_map(run, links)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN medians where a rank lacks a step
        rows, notes = _detect(t, host_of, link_of, threshold, alpha, int(min_steps))
        gain, method = _recover(run, t, rows, replay)
    table = _frame(rows)
    wall = float(run.wall_seconds)
    kind, verdict = _verdict(table, float(gain.sum()), wall, method, t.comm.shape, threshold, int(min_steps))
    steps = t.keys.assign(step_s=t.span_s, recovered_s=gain, fixed_step_s=t.span_s - gain)
    source = (f"run.steps per-rank rows ({len(t.ranks)} ranks × {len(t.keys)} steps, "
              f"{run.meta.source_format or 'unknown format'}): compute_s and comm_s; "
              f"exposed part from {t.exposed_from}")
    if hosts_from is None:
        notes.append("no rank → host map (pass hosts=, or load NCCL INFO logs or a trace naming hosts): ranks only")
    return CommStragglerReport(table, verdict, kind, float(gain.sum()), wall, method, source, t.compared_with,
                               hosts_from, threshold, alpha, int(min_steps), steps, notes, links_from)
