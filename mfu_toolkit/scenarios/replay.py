"""What-if replay of a per-operation trace: how much faster would the step be without stragglers?

The definitions are those of Lin et al. 2025, "Understanding Stragglers in Large Model Training
Using What-if Analysis" (OSDI '25, arXiv:2505.05713, §3-4; artifact ByteDance-Seed/StragglerAnalysis):

- Each step is a **dependency graph** rebuilt from the trace (one template per model-parallel
  group, shared by every data-parallel rank and step): per stage, the compute stream (forward and
  backward microbatches in their 1F1B order); four point-to-point streams (forward/backward ×
  send/recv), a send after the compute that produced its tensor, a receive before the compute that
  consumes it, each send paired with the receive on the neighbouring stage; the data-parallel
  stream (parameter all-gather before a chunk's first forward, gradient reduce-scatter after the
  backward pass); then gc, layernorm and embedding gradient all-reduces, gradient clipping (a
  collective over every rank) and the optimizer step.
- A **replay** gives every op a duration and starts it when its dependencies have finished (launch
  gaps removed); a collective ends when its last member has joined plus its own transfer time.
  The transfer time of a member is its end minus the latest start in its group, as traced.
- **Ideal**: every compute op at the mean of its op type over all workers, stages and steps (the
  work kept, balanced), every communication op at the median of its op type.
  ``S = replayed actual step / replayed ideal step`` (paper eq. 1).
- **Add-back** (eq. 2, 4): the ideal with only one group's ops at their actual durations; the
  group's share of the slowdown is ``(S_X − 1) / (S − 1)``.
- **M_W, M_S** (eq. 5, §5.2): the fraction of the slowdown recovered by idealising only the
  slowest 3 % of workers (at least one) / only the last stage:
  ``(T_actual − T_selection_idealised) / (T_actual − T_ideal)``.

A worker is a ``(dp_rank, stage)`` pair; tensor-parallel ranks of one worker collapse into it
(first start, last end). The code is this project's own; only the definitions are the paper's.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run

__all__ = ["REPLAY_COLUMNS", "WhatIfResult", "straggler_whatif", "slowed_replay"]

REPLAY_COLUMNS = ("dp_rank", "stage", "step", "optype", "start_ts", "duration")
_F, _B = "forward-compute", "backward-compute"
_P2P = ("forward-send", "forward-recv", "backward-send", "backward-recv")
_DP_COLLECTIVES = ("params-all-gather", "grads-reduce-scatter", "separate-grads-all-reduce")
_POST = ("layernorm-grads-all-reduce", "embedding-grads-all-reduce")
_CLIP, _OPT, _GC = "optimizer-clip-main-grad", "optimizer", "gc"
KNOWN_OPTYPES = frozenset((_F, _B, *_P2P, *_DP_COLLECTIVES, *_POST, _CLIP, _OPT, _GC))
# Communication op types take the median of their type in the ideal (the paper's rule); the rest
# (compute, gc, optimizer) the mean.
_COMM_TYPES = frozenset((*_P2P, *_DP_COLLECTIVES, *_POST, _CLIP))
# Add-back by op type merges a send with its receive: they are one transfer seen from two sides.
_TYPE_GROUP = {"forward-send": "forward-pp-comm", "forward-recv": "forward-pp-comm",
               "backward-send": "backward-pp-comm", "backward-recv": "backward-pp-comm"}
_NEG_GAP_S = 0.01  # a start earlier than its dependency's end by more than this contradicts the graph
_WORKER_SHARE = 0.03  # M_W: the slowest 3 % of workers (paper §5.1)
_MAX_NAMED = 5


# --------------------------------------------------------------------------------------------
# the template graph


@dataclass(frozen=True)
class _Graph:
    """One model-parallel group's ops in one step: nodes, dependencies, collective groups."""

    stage: np.ndarray  # node -> stage
    optype: np.ndarray  # node -> op type name
    k: np.ndarray  # node -> occurrence of its type on its stage
    deps: list[np.ndarray]  # node -> nodes it waits for
    groups: list[tuple[np.ndarray, bool]]  # collective members, synchronised over dp ranks?
    order: list[int]  # super-node order: index into groups (>= 0) or ~node for a plain node
    cyclic: list[str]  # names of ops on a cycle (not replayed)
    unmatched: list[str]  # p2p ops with no peer or no compute to attach to
    n_edges: int

    def name(self, i: int) -> str:
        return f"{self.optype[i]}[{int(self.k[i])}]@stage{int(self.stage[i])}"


def _stage_edges(idx: dict[tuple[int, str, int], int], start: np.ndarray, mc: np.ndarray, p: int,
                 dep: defaultdict[int, list[int]], unmatched: list[int]) -> None:
    """In-stage dependencies of stage ``p`` (see the module docstring for the rules)."""
    def of(t: str) -> list[int]:
        nodes = [i for (s, o, _), i in idx.items() if s == p and o == t]
        return sorted(nodes, key=lambda i: (start[i], i))

    def chain(nodes: list[int]) -> None:
        for a, b in zip(nodes, nodes[1:], strict=False):
            dep[b].append(a)

    comp = sorted(of(_F) + of(_B), key=lambda i: (start[i], i))
    chain(comp)  # one compute stream
    by_dir = {"forward": of(_F), "backward": of(_B)}
    for t in _P2P:
        ops = of(t)
        chain(ops)  # one stream per p2p kind
        direction, side = t.split("-")
        cs = by_dir[direction]
        for j, op in enumerate(ops):
            if j >= len(cs):
                unmatched.append(op)
                continue
            if side == "send":
                dep[op].append(cs[j])  # a send carries what the matching compute produced
            else:
                dep[cs[j]].append(op)  # the matching compute consumes what was received
                if j > 0:
                    dep[op].append(cs[j - 1])  # posted once the previous compute is launched
    # 1F1B: the first backward transfer is posted while the last warm-up forward runs
    first_b = next((n for n, i in enumerate(comp) if i in set(by_dir["backward"])), None)
    if first_b is not None and first_b >= 2:
        for t in ("backward-recv", "backward-send"):
            ops = of(t)
            if ops:
                dep[ops[0]].append(comp[first_b - 2])
    # data-parallel stream: all-gathers and reduce-scatters in trace order
    ag, rs, sep = of("params-all-gather"), of("grads-reduce-scatter"), of("separate-grads-all-reduce")
    chain(sorted(ag + rs, key=lambda i: (start[i], i)))
    for chunk in sorted({int(mc[i]) for i in ag}):
        last_ag = [i for i in ag if mc[i] == chunk][-1]
        fwd = [i for i in by_dir["forward"] if mc[i] == chunk] or by_dir["forward"][:1]
        if fwd:
            dep[fwd[0]].append(last_ag)  # a chunk's first forward needs its gathered parameters
    overlapped = bool(sep)
    if overlapped:  # gradients reduced per chunk as soon as its backward pass is done
        for chunk in sorted({int(mc[i]) for i in rs}):
            last_b = [i for i in by_dir["backward"] if mc[i] == chunk] or by_dir["backward"][-1:]
            first_rs = [i for i in rs if mc[i] == chunk][0]
            if last_b:
                dep[first_rs].append(last_b[-1])
    last_c = comp[-1:]  # the last compute of the stream closes the pass
    tail = [*of(_GC), *of(_POST[0]), *of(_POST[1])]
    tail += sep if overlapped else rs
    tail += [*of(_CLIP), *of(_OPT)]
    prev = last_c + ([rs[-1]] if overlapped and rs else [])
    for op in tail:
        dep[op].extend(prev)
        prev = [op]


def _build_graph(keys: pd.DataFrame, start: np.ndarray, mc: np.ndarray, n_stages: int) -> _Graph:
    """The template graph over ``keys`` (stage, optype, k per node) with the template's starts."""
    stage = keys["stage"].to_numpy(np.int64)
    optype = keys["optype"].to_numpy(object)
    k = keys["k"].to_numpy(np.int64)
    idx = {(int(s), str(o), int(j)): i for i, (s, o, j) in enumerate(zip(stage, optype, k, strict=True))}
    dep: defaultdict[int, list[int]] = defaultdict(list)
    unmatched: list[int] = []
    for p in range(n_stages):
        _stage_edges(idx, start, mc, p, dep, unmatched)
    groups: list[tuple[np.ndarray, bool]] = []
    member: dict[int, int] = {}
    bad = set(unmatched)

    def add(nodes: list[int], dp_sync: bool) -> None:
        for n in nodes:
            member[n] = len(groups)
        groups.append((np.asarray(nodes, dtype=np.int64), dp_sync))

    for (s, o, j), i in idx.items():  # point-to-point pairs
        if o in ("forward-send", "backward-send") and i not in bad:
            peer = idx.get((s + 1 if o.startswith("forward") else s - 1, o.replace("send", "recv"), j))
            if peer is not None and peer not in bad:
                add([i, peer], False)
    for (_, o, _), i in idx.items():
        if o in _DP_COLLECTIVES:
            add([i], True)  # one member per stage here; synchronised over data-parallel ranks
    emb = [i for (_, o, _), i in idx.items() if o == "embedding-grads-all-reduce"]
    if emb:
        add(emb, False)  # first and last stage share the embedding
    clip = [i for (_, o, _), i in idx.items() if o == _CLIP]
    if clip:
        add(clip, True)  # the gradient norm is reduced over every rank
    for (_, o, _), i in idx.items():  # a p2p op left without a peer
        if o in _P2P and i not in member:
            bad.add(i)
    order, cyclic = _topological(len(stage), dep, groups, member)
    g = _Graph(stage, optype, k, [np.asarray(dep[i], dtype=np.int64) for i in range(len(stage))],
               groups, order, [], [], sum(len(v) for v in dep.values()))
    names_c = [g.name(i) for i in cyclic]
    names_u = [g.name(i) for i in sorted(bad)]
    return _Graph(stage, optype, k, g.deps, groups, order, names_c, names_u, g.n_edges)


def _topological(n: int, dep: dict[int, list[int]], groups: list[tuple[np.ndarray, bool]],
                 member: dict[int, int]) -> tuple[list[int], list[int]]:
    """Kahn's order over super-nodes (a collective is one node); the nodes left on cycles."""
    sid = [~i if i not in member else member[i] for i in range(n)]
    supers = sorted(set(sid))
    preds: dict[int, set[int]] = {s: set() for s in supers}
    for v in range(n):
        for u in dep.get(v, ()):
            if sid[u] != sid[v]:
                preds[sid[v]].add(sid[u])
    succ: dict[int, list[int]] = defaultdict(list)
    indeg = {s: len(p) for s, p in preds.items()}
    for s, p in preds.items():
        for u in p:
            succ[u].append(s)
    ready = [s for s in supers if indeg[s] == 0]
    order: list[int] = []
    while ready:
        s = ready.pop()
        order.append(s)
        for t in succ[s]:
            indeg[t] -= 1
            if indeg[t] == 0:
                ready.append(t)
    left = {s for s in supers if indeg[s] > 0}
    cyclic = [v for v in range(n) if sid[v] in left]
    return order, cyclic


# --------------------------------------------------------------------------------------------
# the trace as matrices


@dataclass(frozen=True)
class _Replay:
    """Everything a replay needs: the graph and node × column matrices (column = step × dp)."""

    graph: _Graph
    steps: np.ndarray
    dps: np.ndarray
    ranks: pd.DataFrame  # dp_rank, stage, rank(s) of each worker
    actual: np.ndarray  # durations (transfer times for collective members)
    ideal: np.ndarray
    gaps: np.ndarray
    trace_step_s: np.ndarray  # per step, from the trace itself
    contradicted: int
    contradicted_named: list[str]

    @property
    def n_dp(self) -> int:
        return len(self.dps)

    def columns_of(self, dp: int) -> np.ndarray:
        j = int(np.searchsorted(self.dps, dp))
        return np.arange(len(self.steps)) * self.n_dp + j

    def step_times(self, dur: np.ndarray, gaps: np.ndarray | None = None) -> np.ndarray:
        """Replayed time of each step: when its last op ends (every step starts at 0)."""
        end = _simulate(self.graph, dur, gaps, len(self.steps), self.n_dp)
        return end.reshape(end.shape[0], len(self.steps), self.n_dp).max(axis=(0, 2))

    def mean_step(self, dur: np.ndarray) -> float:
        return float(self.step_times(dur).mean())


def _simulate(g: _Graph, dur: np.ndarray, gaps: np.ndarray | None, n_steps: int, n_dp: int) -> np.ndarray:
    """End time of every node in every column: a longest-path sweep in topological order."""
    n, cols = dur.shape
    end = np.zeros((n, cols))
    zero = np.zeros(cols)

    def ready(i: int) -> np.ndarray:
        d = g.deps[i]
        s = end[d].max(axis=0) if len(d) else zero
        return s + gaps[i] if gaps is not None else s

    for s in g.order:
        if s < 0:
            i = ~s
            end[i] = ready(i) + dur[i]
            continue
        nodes, dp_sync = g.groups[s]
        t = ready(int(nodes[0]))
        for i in nodes[1:]:
            t = np.maximum(t, ready(int(i)))
        if dp_sync:
            t = np.repeat(t.reshape(n_steps, n_dp).max(axis=1), n_dp)
        end[nodes] = t[None, :] + dur[nodes]
    return end


def _collapse(ops: pd.DataFrame) -> pd.DataFrame:
    """One row per (step, worker, op type, occurrence): tensor-parallel ranks merged."""
    order = ["seq_id", "start_ts"] if "seq_id" in ops.columns else ["start_ts"]
    who = ["rank"] if "rank" in ops.columns else ["dp_rank", "stage"]
    df = ops.sort_values(["step", *who, "optype", *order], kind="stable")
    df["k"] = df.groupby(["step", *who, "optype"], observed=True, sort=False).cumcount()
    df["end_ts"] = df["start_ts"] + df["duration"]
    agg: dict[str, Any] = {"start_ts": "min", "end_ts": "max"}
    if "mc" in df.columns:
        agg["mc"] = "first"
    out = df.groupby(["step", "dp_rank", "stage", "optype", "k"], observed=True, sort=True).agg(agg).reset_index()
    if "mc" not in out.columns:
        out["mc"] = 0
    return out


def _replay_frame(ops: pd.DataFrame, notes: list[str]) -> pd.DataFrame | None:
    """The replayable ops (known types, with worker, step and time), or None (with a note) if no compute."""
    df = ops[list(c for c in ops.columns if c in (*REPLAY_COLUMNS, "rank", "seq_id", "mc"))].copy()
    df["optype"] = df["optype"].astype(str)
    unknown = sorted(set(df["optype"]) - KNOWN_OPTYPES)
    if unknown:
        n = int(df["optype"].isin(unknown).sum())
        notes.append(f"{n:,} ops of types the pipeline graph does not know left out of the replay: {unknown[:8]}")
        df = df[~df["optype"].isin(unknown)]
    for c in ("dp_rank", "stage", "step"):
        df[c] = pd.to_numeric(df[c], errors="coerce")
    bad = df[["dp_rank", "stage", "step", "start_ts", "duration"]].isna().any(axis=1)
    if bad.any():
        notes.append(f"{int(bad.sum()):,} ops without a dp_rank, stage, step or time left out of the replay")
        df = df[~bad]
    if df.empty or not df["optype"].isin((_F, _B)).any():
        notes.append("no forward/backward compute ops to replay")
        return None
    if "mc" in df.columns:
        df["mc"] = pd.to_numeric(df["mc"], errors="coerce").fillna(0)
    return df.astype({"dp_rank": np.int64, "stage": np.int64, "step": np.int64})


def _node_keys(c: pd.DataFrame) -> pd.Series:
    """``stage|optype|k`` of each row: which template node an op is, whatever its step and dp rank."""
    return c["stage"].astype(str) + "|" + c["optype"] + "|" + c["k"].astype(str)


def _complete_steps(c: pd.DataFrame, n_nodes: int, dps: np.ndarray, steps_all: np.ndarray,
                    notes: list[str]) -> np.ndarray:
    """Steps whose every data-parallel rank has exactly the template's ops; a note names those left out."""
    per = c.groupby(["step", "dp_rank"]).agg(n=("node", "size"), missing=("node", lambda s: int((s < 0).sum())))
    ok = (per["n"] == n_nodes) & (per["missing"] == 0)
    ok_steps = ok.groupby(level="step").all() & (ok.groupby(level="step").size() == len(dps))
    dropped = ok_steps.index[~ok_steps].to_numpy()
    if len(dropped):
        worst = per[~ok].head(_MAX_NAMED)
        named = "; ".join(f"step {s} dp_rank {d}: {r.n} ops, {n_nodes} expected" for (s, d), r in worst.iterrows())
        notes.append(
            f"{len(dropped)} of {len(steps_all)} steps left out: their ops do not match the first step's "
            f"graph (or a data-parallel rank is missing) — {named}"
        )
    return ok_steps.index[ok_steps].to_numpy()


def _time_matrices(c: pd.DataFrame, steps: np.ndarray, dps: np.ndarray,
                   n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end of every node (rows) in every column (step × dp rank)."""
    n_cols = len(steps) * len(dps)
    col = np.searchsorted(steps, c["step"].to_numpy()) * len(dps) + np.searchsorted(dps, c["dp_rank"].to_numpy())
    node = c["node"].to_numpy()
    S = np.zeros((n_nodes, n_cols))
    E = np.zeros((n_nodes, n_cols))
    S[node, col] = c["start_ts"].to_numpy(float)
    E[node, col] = c["end_ts"].to_numpy(float)
    return S, E


def _actual_durations(graph: _Graph, S: np.ndarray, E: np.ndarray, n_steps: int, n_dp: int) -> np.ndarray:
    """Each node's duration; a collective member's is its transfer time, not its wait for the others."""
    actual = E - S
    for nodes, dp_sync in graph.groups:  # transfer = own end - the group's latest start
        t = S[nodes].max(axis=0)
        if dp_sync:
            t = np.repeat(t.reshape(n_steps, n_dp).max(axis=1), n_dp)
        actual[nodes] = np.maximum(E[nodes] - t[None, :], 0.0)
    return actual


def _start_gaps(graph: _Graph, S: np.ndarray, E: np.ndarray) -> tuple[np.ndarray, int, list[str]]:
    """Idle time before each node after its dependencies end (>= 0), and the starts that contradict the graph."""
    gaps = np.zeros_like(S)
    contradicted: list[str] = []
    n_contra = 0
    for i, d in enumerate(graph.deps):
        before = E[d].max(axis=0) if len(d) else np.zeros(S.shape[1])
        gaps[i] = S[i] - before
        neg = gaps[i] < -_NEG_GAP_S
        if neg.any():
            n_contra += int(neg.sum())
            if len(contradicted) < _MAX_NAMED:
                contradicted.append(graph.name(i))
    return np.maximum(gaps, 0.0), n_contra, contradicted


def _ideal_durations(graph: _Graph, actual: np.ndarray) -> np.ndarray:
    """Each node's ideal duration: the median of its op type for communication, the mean for the rest."""
    ideal = np.empty_like(actual)
    for t in np.unique(graph.optype):
        rows = graph.optype == t
        vals = actual[rows]
        ideal[rows] = float(np.median(vals)) if t in _COMM_TYPES else float(vals.mean())
    return ideal


def _worker_ranks(ops: pd.DataFrame, steps: np.ndarray, dps: np.ndarray, n_stages: int) -> pd.DataFrame:
    """The global ranks of each (dp_rank, stage) worker in the replayed steps (empty without a rank column)."""
    who = ["dp_rank", "stage"]
    if "rank" not in ops.columns:
        return pd.DataFrame([(d, p, []) for d in dps for p in range(n_stages)], columns=[*who, "ranks"])
    return (ops.loc[ops["step"].isin(steps), [*who, "rank"]].drop_duplicates().groupby(who)["rank"]
            .apply(lambda r: sorted(int(x) for x in r)).reset_index(name="ranks"))


def _prepare(ops: pd.DataFrame, notes: list[str]) -> _Replay | None:
    """The replay inputs from an op table, or None (with a note) when the trace cannot be replayed."""
    df = _replay_frame(ops, notes)
    if df is None:
        return None
    c = _collapse(df)
    steps_all = np.unique(c["step"].to_numpy())
    dps = np.unique(c["dp_rank"].to_numpy())
    n_stages = int(c["stage"].max()) + 1
    t0 = (c["step"] == steps_all[0]) & (c["dp_rank"] == dps[0])
    tmpl = c[t0].sort_values(["stage", "optype", "k"]).reset_index(drop=True)
    node_of = {kk: i for i, kk in enumerate(_node_keys(tmpl))}
    c["node"] = _node_keys(c).map(node_of).fillna(-1).astype(np.int64)
    n_nodes = len(tmpl)
    steps = _complete_steps(c, n_nodes, dps, steps_all, notes)
    if not len(steps):
        notes.append("no step has the same ops on every data-parallel rank; nothing to replay")
        return None
    c = c[c["step"].isin(steps)]
    graph = _build_graph(tmpl[["stage", "optype", "k"]], tmpl["start_ts"].to_numpy(float),
                         tmpl["mc"].to_numpy(float), n_stages)
    S, E = _time_matrices(c, steps, dps, n_nodes)
    actual = _actual_durations(graph, S, E, len(steps), len(dps))
    gaps, n_contra, contradicted = _start_gaps(graph, S, E)
    ideal = _ideal_durations(graph, actual)
    trace = (E.reshape(n_nodes, len(steps), len(dps)).max(axis=(0, 2))
             - S.reshape(n_nodes, len(steps), len(dps)).min(axis=(0, 2)))
    ranks = _worker_ranks(ops, steps, dps, n_stages)
    return _Replay(graph, steps, dps, ranks, actual, ideal, gaps, trace, n_contra, contradicted)


# --------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True)
class WhatIfResult:
    """A per-operation trace replayed: the slowdown S, who causes it, what fixing them recovers.

    Times are mean seconds per step over the replayed steps. ``by_worker``, ``by_stage`` and
    ``by_optype`` hold the add-back slowdown ``S_X`` and its ``share`` of the slowdown
    (``(S_X − 1)/(S − 1)``), largest first. ``verdict`` is one of
    :data:`mfu_toolkit.analysis.STRAGGLER_KINDS`; ``culprit`` names the slow worker or stage.
    ``available`` is False when the trace could not be replayed (``notes`` say why).
    """

    available: bool
    actual_step_s: float
    ideal_step_s: float
    slowdown: float
    worker_recovery: float
    stage_recovery: float
    trace_step_s: float
    replay_with_gaps_step_s: float
    verdict: str
    culprit: dict[str, Any]
    recovered_if_fixed_s: float
    stage_partition_share: float
    slowest_workers: list[tuple[int, int]]
    by_worker: pd.DataFrame = field(repr=False)
    by_stage: pd.DataFrame = field(repr=False)
    by_optype: pd.DataFrame = field(repr=False)
    steps: pd.DataFrame = field(repr=False)
    graph: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    _replay: _Replay | None = field(default=None, repr=False, compare=False)

    @property
    def replay(self) -> Any:
        """The replay's inputs (the dependency graph, actual and ideal durations per op and step, and
        ``step_times``), for replaying other changes than the one this result reports; None when the
        trace was not replayed."""
        return self._replay

    @property
    def lost_share(self) -> float:
        """Fraction of the replayed step lost to stragglers: 1 − 1/S."""
        return 1.0 - 1.0 / self.slowdown if self.slowdown > 0 else float("nan")

    def waterfall(self) -> pd.DataFrame:
        """The replayed step from ideal to actual: stage partition, slowest workers, the rest."""
        return _waterfall(self)

    def lines(self) -> list[str]:
        if not self.available:
            return ["What-if replay not available: " + "; ".join(self.notes)]
        out = [
            f"Replayed step {self.actual_step_s:.4g} s vs ideal {self.ideal_step_s:.4g} s: "
            f"S = {self.slowdown:.3f} ({self.lost_share:.1%} of the step lost to stragglers)",
            f"Verdict: {_verdict_text(self)}",
            (f"Balancing every worker would recover {self.recovered_if_fixed_s:.4g} s per step; "
             if self.verdict == "spread" else
             f"Fixing the culprit recovers {self.recovered_if_fixed_s:.4g} s per step; ")
            + f"M_W = {self.worker_recovery:.1%} (slowest {len(self.slowest_workers)} worker(s)), "
            f"M_S = {self.stage_recovery:.1%} (last stage)",
            f"Replay check: with the trace's launch gaps {self.replay_with_gaps_step_s:.4g} s "
            f"vs {self.trace_step_s:.4g} s in the trace",
        ]
        return out + [f"Note: {n}" for n in self.notes]


def _verdict_text(r: WhatIfResult) -> str:
    c = r.culprit
    if r.verdict == "slow_worker":
        ranks = ", ".join(map(str, c.get("ranks", []))) or "?"
        return (f"one slow worker — rank {ranks} (dp_rank {c['dp_rank']}, stage {c['stage']}), "
                f"{c['share']:.0%} of the slowdown")
    if r.verdict == "stage_imbalance":
        return f"pipeline-stage imbalance — stage {c['stage']} carries more work ({c['share']:.0%} of the slowdown)"
    if r.verdict == "spread":
        return "no single culprit — slowness spread over workers, changing from step to step"
    return "no material straggling"


def _empty(notes: list[str]) -> WhatIfResult:
    nan = float("nan")
    e = pd.DataFrame()
    return WhatIfResult(False, nan, nan, nan, nan, nan, nan, nan, "unknown", {}, nan, nan, [], e, e, e, e, {}, notes)


def _share(s_x: float, s: float) -> float:
    return (s_x - 1.0) / (s - 1.0) if s != 1.0 else float("nan")


def _mask(rp: _Replay, nodes: np.ndarray, cols: np.ndarray | None = None) -> np.ndarray:
    m = np.zeros(rp.actual.shape, dtype=bool)
    if cols is None:
        m[nodes] = True
    else:
        m[np.ix_(nodes, cols)] = True
    return m


def _add_back(rp: _Replay, mask: np.ndarray, t_ideal: float) -> float:
    return rp.mean_step(np.where(mask, rp.actual, rp.ideal)) / t_ideal


def _recovery(rp: _Replay, mask: np.ndarray, t_act: float, t_ideal: float) -> float:
    t_rem = rp.mean_step(np.where(mask, rp.ideal, rp.actual))
    return (t_act - t_rem) / (t_act - t_ideal) if t_act != t_ideal else float("nan")


def _tables(rp: _Replay, t_ideal: float, s: float) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    g = rp.graph
    rows = []
    for _, w in rp.ranks.iterrows():
        d, p = int(w["dp_rank"]), int(w["stage"])
        sx = _add_back(rp, _mask(rp, np.flatnonzero(g.stage == p), rp.columns_of(d)), t_ideal)
        rows.append({"dp_rank": d, "stage": p, "ranks": w["ranks"], "S_x": sx, "share": _share(sx, s)})
    wk = pd.DataFrame(rows).sort_values(["S_x", "dp_rank", "stage"], ascending=[False, True, True], kind="stable")
    st = pd.DataFrame(
        [{"stage": int(p), "S_x": (sx := _add_back(rp, _mask(rp, np.flatnonzero(g.stage == p)), t_ideal)),
          "share": _share(sx, s)} for p in np.unique(g.stage)]
    ).sort_values("S_x", ascending=False, kind="stable")
    label = np.array([_TYPE_GROUP.get(str(t), str(t)) for t in g.optype])
    ot = pd.DataFrame(
        [{"optype": t, "S_x": (sx := _add_back(rp, _mask(rp, np.flatnonzero(label == t)), t_ideal)),
          "share": _share(sx, s)} for t in np.unique(label)]
    ).sort_values("S_x", ascending=False, kind="stable")
    return wk.reset_index(drop=True), st.reset_index(drop=True), ot.reset_index(drop=True)


def _stage_partition(rp: _Replay) -> np.ndarray:
    """The ideal with compute at the mean of its (op type, stage): the partition kept, all else balanced."""
    g, dur = rp.graph, rp.ideal.copy()
    for t in np.unique(g.optype):
        if t in _COMM_TYPES:
            continue
        for p in np.unique(g.stage):
            rows = (g.optype == t) & (g.stage == p)
            if rows.any():
                dur[rows] = rp.actual[rows].mean()
    return dur


def _verdict(s: float, m_w: float, sp_share: float, wk: pd.DataFrame, st: pd.DataFrame,
             min_slowdown: float, n_dp: int) -> tuple[str, dict[str, Any]]:
    """Slow worker when its few slowest workers recover half the slowdown (and a worker has
    data-parallel peers to be slower than); stage imbalance when the stage partition alone
    (compute at its stage's mean) makes half of it; else no single culprit."""
    if not s > 1.0 + min_slowdown:
        return "none", {}
    if m_w >= 0.5 and n_dp > 1:
        w = wk.iloc[0]
        return "slow_worker", {"dp_rank": int(w["dp_rank"]), "stage": int(w["stage"]),
                               "ranks": list(w["ranks"]), "share": float(w["share"])}
    if sp_share >= 0.5:
        top = st.iloc[0]
        return "stage_imbalance", {"stage": int(top["stage"]), "share": float(top["share"])}
    return "spread", {}


def _ops_of(run: Run | pd.DataFrame) -> pd.DataFrame | None:
    if isinstance(run, pd.DataFrame):
        return run
    if isinstance(run, Run):
        return run.tables.get("ops")
    raise TypeError(f"run must be a Run or an op DataFrame; got {type(run).__name__}")


def straggler_whatif(run: Run | pd.DataFrame, *, min_slowdown: float = 0.03) -> WhatIfResult:
    """Replay a per-operation trace with actual and ideal durations: S, M_W, M_S and the culprit.

    ``run`` is a Run with ``tables["ops"]`` (the ``straggler_ops`` loader) or the op DataFrame.
    A trace that cannot be replayed (no ops table, missing columns, no consistent step) gives a
    result with ``available=False`` and notes, never an exception. ``min_slowdown``: below
    ``S = 1 + min_slowdown`` the verdict is ``none``.
    """
    if isinstance(min_slowdown, bool) or not isinstance(min_slowdown, (int, float)) or not 0 <= min_slowdown < 10:
        raise ValueError(f"min_slowdown must be a number in [0, 10); got {min_slowdown!r}")
    ops = _ops_of(run)
    if ops is None:
        return _empty(["the run has no per-operation table (tables['ops']); "
                       "the step-level breakdown assumes no pipeline"])
    missing = [c for c in REPLAY_COLUMNS if c not in ops.columns]
    if missing:
        return _empty([f"the op table lacks column(s) {missing} that the replay needs "
                       f"(required: {list(REPLAY_COLUMNS)}); falling back to the all-ranks comparison"])
    notes: list[str] = []
    if "mc" not in ops.columns:
        notes.append("no mc column: every op taken to be in model chunk 0")
    if "seq_id" not in ops.columns:
        notes.append("no seq_id column: ops of a type numbered by start time")
    rp = _prepare(ops, notes)
    if rp is None:
        return _empty(notes)
    return _result(rp, notes, min_slowdown)


def _result(rp: _Replay, notes: list[str], min_slowdown: float) -> WhatIfResult:
    g = rp.graph
    if g.cyclic:
        notes.append(f"{len(g.cyclic)} ops on dependency cycles, not replayed: {g.cyclic[:_MAX_NAMED]}")
        return _empty(notes)
    if g.unmatched:
        notes.append(f"{len(g.unmatched)} send/recv ops with no peer or compute to pair with "
                     f"(replayed on their own): {g.unmatched[:_MAX_NAMED]}")
    if rp.contradicted:
        notes.append(f"{rp.contradicted:,} op starts precede a dependency's end by over "
                     f"{_NEG_GAP_S * 1000:.0f} ms (clock skew or a graph the trace contradicts): "
                     f"{rp.contradicted_named}")
    act_steps = rp.step_times(rp.actual)
    ideal_steps = rp.step_times(rp.ideal)
    t_act, t_ideal = float(act_steps.mean()), float(ideal_steps.mean())
    s = t_act / t_ideal
    wk, st, ot = _tables(rp, t_ideal, s)
    n_sel = max(1, math.ceil(len(wk) * _WORKER_SHARE))
    sel = [(int(d), int(p)) for d, p in wk[["dp_rank", "stage"]].to_numpy()[:n_sel]]
    m_w = _recovery(rp, _workers_mask(rp, sel), t_act, t_ideal)
    last = int(g.stage.max())
    m_s = _recovery(rp, _mask(rp, np.flatnonzero(g.stage == last)), t_act, t_ideal)
    t_sp = rp.mean_step(_stage_partition(rp))
    sp_share = (t_sp - t_ideal) / (t_act - t_ideal) if t_act != t_ideal else float("nan")
    verdict, culprit = _verdict(s, m_w, sp_share, wk, st, min_slowdown, rp.n_dp)
    if verdict == "slow_worker":
        fixed = t_act - rp.mean_step(np.where(_workers_mask(rp, [(culprit["dp_rank"], culprit["stage"])]),
                                              rp.ideal, rp.actual))
    elif verdict == "stage_imbalance":
        fixed = t_act - rp.mean_step(np.where(_mask(rp, np.flatnonzero(g.stage == culprit["stage"])),
                                              rp.ideal, rp.actual))
    else:
        fixed = 0.0 if verdict == "none" else t_act - t_ideal
    gaps_t = float(rp.step_times(rp.actual, rp.gaps).mean())
    steps = pd.DataFrame({"step": rp.steps, "trace_s": rp.trace_step_s, "actual_s": act_steps,
                          "ideal_s": ideal_steps, "slowdown": act_steps / ideal_steps})
    info = {"nodes_per_step": int(len(g.stage)), "edges_per_step": int(g.n_edges),
            "collectives_per_step": len(g.groups), "steps": int(len(rp.steps)), "dp_ranks": int(rp.n_dp),
            "stages": int(g.stage.max()) + 1, "ops_replayed": int(rp.actual.size),
            "unmatched_p2p": len(g.unmatched), "cyclic_ops": len(g.cyclic),
            "contradicted_starts": int(rp.contradicted)}
    return WhatIfResult(True, t_act, t_ideal, s, m_w, m_s, float(rp.trace_step_s.mean()), gaps_t,
                        verdict, culprit, float(fixed), float(sp_share), sel, wk, st, ot, steps, info,
                        notes, rp)


def _workers_mask(rp: _Replay, workers: Iterable[tuple[int, int]]) -> np.ndarray:
    m = np.zeros(rp.actual.shape, dtype=bool)
    for d, p in workers:
        m[np.ix_(np.flatnonzero(rp.graph.stage == p), rp.columns_of(d))] = True
    return m


def _waterfall(r: WhatIfResult, dur: np.ndarray | None = None) -> pd.DataFrame:
    rp = r._replay
    if rp is None:
        return pd.DataFrame(columns=["component", "seconds", "share_of_step"])
    actual = rp.actual if dur is None else dur
    t_ideal = rp.mean_step(rp.ideal)
    sp = _stage_partition(rp)
    t_sp = rp.mean_step(sp)
    wm = _workers_mask(rp, r.slowest_workers)
    t_w = rp.mean_step(np.where(wm, actual, sp))
    t_act = rp.mean_step(actual)
    parts = [("ideal step (balanced)", t_ideal), ("stage partition", t_sp - t_ideal),
             (f"slowest {len(r.slowest_workers)} worker(s)", t_w - t_sp), ("other variation", t_act - t_w)]
    out = pd.DataFrame(parts, columns=["component", "seconds"])
    out["share_of_step"] = out["seconds"] / t_act
    return out


def slowed_replay(result: WhatIfResult, *, worker: tuple[int, int] | None = None,
                  stage: int | None = None, factor: float = 1.5) -> dict[str, Any]:
    """What-if on a replayed job: one worker ``(dp_rank, stage)`` or one stage slower by ``factor`` times.

    The chosen worker's (or stage's) compute ops are stretched by ``factor`` on top of the actual
    durations and the job is replayed. Returns ``slowdown`` (new S against the same ideal),
    ``actual_step_s`` and the ``waterfall`` of the new step.
    """
    rp = result._replay
    if rp is None:
        raise ValueError("result has no replay (available=False); slowed_replay needs a replayed trace")
    if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0.1 <= factor <= 100:
        raise ValueError(f"factor must be a number in [0.1, 100]; got {factor!r}")
    if worker is not None and stage is not None:
        raise ValueError("pass worker=(dp_rank, stage) or stage=, not both")
    g = rp.graph
    comp = np.isin(g.optype, [t for t in np.unique(g.optype) if t not in _COMM_TYPES])
    mask = np.zeros(rp.actual.shape, dtype=bool)
    if worker is not None:
        d, p = worker
        if int(p) not in set(g.stage.tolist()) or int(d) not in set(rp.dps.tolist()):
            raise ValueError(f"worker must be (dp_rank, stage) of this job (dp_rank 0..{rp.dps.max()}, "
                             f"stage 0..{g.stage.max()}); got {worker!r}")
        mask[np.ix_(np.flatnonzero(comp & (g.stage == p)), rp.columns_of(int(d)))] = True
    elif stage is not None:
        if int(stage) not in set(g.stage.tolist()):
            raise ValueError(f"stage must be one of {sorted(set(g.stage.tolist()))}; got {stage!r}")
        mask[comp & (g.stage == stage)] = True
    dur = np.where(mask, rp.actual * factor, rp.actual)
    t_ideal = rp.mean_step(rp.ideal)
    t = rp.mean_step(dur)
    return {"slowdown": t / t_ideal, "actual_step_s": t, "ideal_step_s": t_ideal,
            "waterfall": _waterfall(result, dur)}
