"""Downtime of a run with restarts: split by cause, and the resiliency library's goodput figure.

:func:`downtime_by_cause` splits the failure slice of the waterfall into named parts per restart
episode (detection, teardown, restart, checkpoint load, recomputation, unattributed), each read off
the accounting's own timeline and named by the records it came from; what no record explains stays
one "unattributed" part.

:func:`goodput_like_library` computes the figure of Google's AI-Hypercomputer resiliency library
(``resiliency/goodput_measure/calculator.py``, ``GoodputCalculator.calculate_goodput``, read at
AI-Hypercomputer/resiliency@ef69c85) from a Run, with its parts: job starts (runs of consecutive
``job_started`` lines, one attempt each as the ``gpu_goodput`` loader reads them), checkpoints loaded (of a
step above 0) and saved, the smallest loaded step, the largest saved step, their difference times the
reference step time (effective computation) over the total runtime (first event to last: the Run's wall
time). Its rule, kept: no goodput without a loaded checkpoint, a saved step above 0 and a positive step
difference. The waterfall (:func:`~mfu_toolkit.analysis.waterfall.breakdown`) splits the same wall time by cause;
with the loader's ``reference_step_s`` its ``ideal_compute`` is the library's effective computation.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from .accounting import Accounting, accounted

__all__ = ["LibraryGoodput", "goodput_like_library", "downtime_by_cause", "downtime_totals", "PARTS",
           "PART_DEFINITIONS", "DOWNTIME_COLUMNS", "DOWNTIME_CATEGORIES"]

_STEP = re.compile(r"\bstep (\d+)\b")


@dataclass(frozen=True)
class LibraryGoodput:
    """The library's goodput (``goodput_pct``, a percentage as it prints it) and its parts; ``reason`` says
    why it is 0 where it is."""

    reference_step_s: float
    job_starts: int
    checkpoints_loaded: int
    checkpoints_saved: int
    min_loaded_step: int | None
    max_saved_step: int | None
    step_diff: int | None
    effective_s: float
    total_runtime_s: float
    goodput_pct: float
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The figure and its parts, one per line."""
        out = [f"goodput {self.goodput_pct:.5f} % (the resiliency library's rule, reference step "
               f"{self.reference_step_s:g} s)",
               f"job starts {self.job_starts}, checkpoints loaded {self.checkpoints_loaded}, saved "
               f"{self.checkpoints_saved}",
               f"min loaded step {self.min_loaded_step}, max saved step {self.max_saved_step}, step diff "
               f"{self.step_diff}",
               f"effective computation {self.effective_s:,.6g} s of {self.total_runtime_s:,.6f} s total runtime"]
        return out + ([f"0 because {self.reason}"] if self.reason else [])


def _checkpoints(run: Run) -> pd.DataFrame:
    """``kind`` (load/save) and ``step`` per checkpoint: the loader's ``checkpoints`` table, else the
    checkpoint events whose detail names ``step N``."""
    table = run.tables.get("checkpoints")
    if table is not None and {"kind", "step"} <= set(table.columns):
        return table[["kind", "step"]]
    ev = run.events[run.events["kind"].isin(["checkpoint_load", "checkpoint_save"])]
    steps = ev["detail"].astype(str).str.extract(_STEP, expand=False)
    kind = ev["kind"].map({"checkpoint_load": "load", "checkpoint_save": "save"})
    out = pd.DataFrame({"kind": kind.to_numpy(), "step": pd.to_numeric(steps).to_numpy()})
    return out.dropna()


def _job_starts(run: Run) -> int:
    starts = run.tables.get("starts")
    if starts is not None:
        return len(starts)
    return int(run.events["kind"].isin(["init", "restart"]).groupby(run.events["attempt"]).any().sum())


def goodput_like_library(run: Run, reference_step_s: float) -> LibraryGoodput:
    """The resiliency library's goodput of ``run`` at ``reference_step_s`` seconds per step, with its parts.

    ``(max saved step - min loaded step) * reference_step_s / total runtime * 100``, as
    ``GoodputCalculator.calculate_goodput`` computes it (module docstring).
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a mfu_toolkit.run.Run; got {type(run).__name__}")
    ref = float(reference_step_s)
    if not (math.isfinite(ref) and ref > 0):
        raise ValueError(f"reference_step_s must be a finite number of seconds > 0; got {reference_step_s!r}")
    ck = _checkpoints(run)
    loads = ck.loc[ck["kind"] == "load", "step"].astype(int)
    saves = ck.loc[ck["kind"] == "save", "step"].astype(int)
    lo = int(loads.min()) if len(loads) else None
    hi = int(saves.max()) if len(saves) and int(saves.max()) > 0 else None
    total = run.t1 - run.t0
    diff = hi - lo if lo is not None and hi is not None else None
    effective = diff * ref if diff is not None and diff > 0 else 0.0
    reason = ("no checkpoint was loaded" if lo is None else "no checkpoint of a step above 0 was saved"
              if hi is None else "the largest saved step is not above the smallest loaded one" if not effective
              else "the run has no wall time" if total <= 0 else "")
    return LibraryGoodput(ref, _job_starts(run), int((loads > 0).sum()), len(saves), lo, hi, diff, effective,
                          total, effective / total * 100 if not reason else 0.0, reason)


# --------------------------------------------------------------------------------------------
# the downtime of each restart, by cause

PARTS: tuple[str, ...] = ("detection_s", "teardown_s", "restart_s", "checkpoint_load_s", "recomputation_s",
                          "unattributed_s")
DOWNTIME_COLUMNS: tuple[str, ...] = ("attempt", "next_attempt", "start_s", "end_s", *PARTS, "total_s", "observed")
#: the waterfall categories an episode's time is drawn from (the rest of its window is booked elsewhere)
DOWNTIME_CATEGORIES: tuple[str, ...] = ("failure_downtime", "lost_work", "checkpoint_load", "init", "unaccounted")
PART_DEFINITIONS: dict[str, str] = {
    "detection_s": "end of the failed attempt's last job-level step (the last progress) to the start of its "
                   "failure event; unknown without a failure event or without a step",
    "teardown_s": "start of the failure event to the failed attempt's last record (step or event end); unknown "
                  "without a failure event",
    "restart_s": "the failed attempt's last record to the next attempt's first event (the gap between "
                 "attempts), with the failure, restart and init events of the next attempt before its first step",
    "checkpoint_load_s": "checkpoint_load events in the episode (the next attempt's, before its first step); "
                         "unknown where none is logged",
    "recomputation_s": "the lost work: the failed attempt's job-level steps that a later attempt redoes",
    "unattributed_s": "the rest of the episode that no logged event explains, and the parts left unknown",
}


@dataclass(frozen=True)
class _Marks:
    """One attempt's times: its first and last record, first step start, last step end (and the
    step's number), the end of its last useful step and the start of its first lost one (NaN: none)."""

    attempt: int
    first_rec: float
    last_rec: float
    first_step: float
    last_end: float
    last_step: int
    useful_end: float
    lost_start: float
    fail_start: float  # the start of its earliest failure event that ends after its last step


def _extent(run: Run) -> pd.DataFrame:
    """Per attempt the first start and last end over steps and events (the accounting's attempt
    extents: :func:`~.accounting._attempt_gaps` reads the same records)."""
    frames = [df[["attempt", "start_s", "end_s"]] for df in (run.step_extent, run.events) if len(df)]
    if not frames:
        return pd.DataFrame({"first_rec": pd.Series(dtype=float), "last_rec": pd.Series(dtype=float)})
    rec = pd.concat(frames, ignore_index=True).dropna(subset=["attempt"])
    return rec.groupby("attempt").agg(first_rec=("start_s", "min"), last_rec=("end_s", "max"))


def _marks(acc: Accounting) -> list[_Marks]:
    """Every attempt's :class:`_Marks`, in attempt order (one pass over the job-level steps)."""
    ext = _extent(acc.run)
    st = acc.steps
    st = st[st["span_s"].to_numpy(float) > 0]
    g = st.groupby("attempt")
    last = st.loc[g["end_s"].idxmax().to_numpy(), ["attempt", "step", "end_s"]].set_index("attempt")
    lost = st["lost"].to_numpy(bool)
    useful_end = st[~lost].groupby("attempt")["end_s"].max()
    lost_start = st[lost].groupby("attempt")["start_s"].min()
    first_step = g["start_s"].min()
    ev = acc.run.events
    fail = ev[ev["kind"].to_numpy() == "failure"] if len(ev) else ev
    after = fail["attempt"].map(last["end_s"]).fillna(-math.inf).to_numpy(float)
    fail_start = fail[fail["end_s"].to_numpy(float) >= after].groupby("attempt")["start_s"].min()  # what ended it
    return [_Marks(int(a), float(r["first_rec"]), float(r["last_rec"]), float(first_step.get(a, math.nan)),
                   float(last["end_s"].get(a, math.nan)), int(last["step"].get(a, -1)),
                   float(useful_end.get(a, math.nan)), float(lost_start.get(a, math.nan)),
                   float(fail_start.get(a, math.nan))) for a, r in ext.iterrows()]


def _windows(marks: list[_Marks]) -> list[tuple[_Marks, _Marks, float, float]]:
    """``(failed, next, start, end)`` per attempt boundary: from the failed attempt's last progress
    that survives (the end of its last useful step, or the start of its first lost step where that
    is earlier) to the next attempt's first step. An attempt without steps makes no progress: its
    episode starts where the previous one ended, and the previous one ends at its failure event
    (else at its last record)."""
    out: list[tuple[_Marks, _Marks, float, float]] = []
    prev_end: float | None = None
    for a, b in zip(marks[:-1], marks[1:], strict=True):
        if not math.isnan(a.first_step):
            start = float(np.nanmin([a.useful_end, a.lost_start]))
        elif prev_end is not None:
            start = prev_end
        else:
            start = float(np.nanmin([a.fail_start, a.last_rec]))
        end = b.first_step if not math.isnan(b.first_step) else float(np.nanmin([b.fail_start, b.last_rec]))
        end = max(end, start)
        out.append((a, b, start, end))
        prev_end = end
    return out


class _Cover:
    """The disjoint intervals of one timeline category, measured over any span in O(log n)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray) -> None:
        o = np.argsort(starts, kind="stable")
        self.s, self.e = starts[o], ends[o]
        self.cum = np.r_[0.0, np.cumsum(self.e - self.s)]

    def _upto(self, t: float) -> float:
        """Measure of the intervals before ``t``."""
        i = int(np.searchsorted(self.s, t, side="right"))  # intervals starting at or before t
        if i == 0:
            return 0.0
        return float(self.cum[i - 1] + min(max(t - self.s[i - 1], 0.0), self.e[i - 1] - self.s[i - 1]))

    def __call__(self, lo: float, hi: float) -> float:
        return self._upto(hi) - self._upto(lo) if hi > lo else 0.0


def _covers(acc: Accounting) -> dict[str, _Cover]:
    """A :class:`_Cover` per downtime category of the accounting's timeline, and ``gaps`` (the
    gaps between attempts, part of ``failure_downtime``)."""
    tl = acc.timeline
    sel = {c: tl["category"].to_numpy() == c for c in DOWNTIME_CATEGORIES}
    sel["gaps"] = tl["source"].to_numpy() == "gaps between attempts"
    return {c: _Cover(tl["start_s"].to_numpy(float)[m], tl["end_s"].to_numpy(float)[m]) for c, m in sel.items()}


def _episode(cov: dict[str, _Cover], a: _Marks, b: _Marks, start: float, end: float) -> dict[str, float]:
    """The parts of one episode (defined in :func:`downtime_by_cause`): lost work and checkpoint
    loads by their timeline label; the failure, restart, init and unaccounted time by
    where it lies: before the last progress, between it and the failure event (detection), from
    the failure to the failed attempt's last record (teardown), then up to the next attempt's first
    step (restart, where an event or the gap between attempts explains it)."""
    def clip(t: float, lo: float) -> float:
        return min(max(t, lo), end)

    def rest(lo: float, hi: float) -> float:
        return sum(cov[c](lo, hi) for c in ("failure_downtime", "init", "unaccounted"))

    progress = not math.isnan(a.last_end)
    t_last = clip(a.last_end, start) if progress else start
    t_end = clip(a.last_rec, t_last)
    t_fail = clip(a.fail_start, t_last) if not math.isnan(a.fail_start) else math.nan
    p = dict.fromkeys(PARTS, math.nan)
    p["recomputation_s"] = cov["lost_work"](start, end)
    p["checkpoint_load_s"] = cov["checkpoint_load"](start, end)
    unattributed = rest(start, t_last)
    if math.isnan(t_fail):
        unattributed += rest(t_last, t_end)
    else:
        if progress:
            p["detection_s"] = rest(t_last, t_fail)
        else:
            unattributed += rest(t_last, t_fail)
        p["teardown_s"] = rest(t_fail, t_end)
    p["restart_s"] = cov["failure_downtime"](t_end, end) + cov["init"](t_end, end)
    p["unattributed_s"] = unattributed + cov["unaccounted"](t_end, end)
    return p


def _lost_rows(acc: Accounting) -> pd.DataFrame:
    """The timed job-level steps a later attempt redoes (``count``: trainer steps each stands for)."""
    s = acc.steps
    s = s[s["lost"].to_numpy(bool) & (s["span_s"].to_numpy(float) > 0)]
    count = np.where(s["inferred"].to_numpy(bool), s["skipped"].to_numpy(np.int64), 1) if "inferred" in s.columns \
        else np.ones(len(s), np.int64)
    return s[["attempt", "step", "start_s", "end_s"]].assign(count=count)


def _redone(lost: pd.DataFrame, attempt: int, start: float, end: float) -> str:
    """``6 redone steps (10-15)``: the failed attempt's lost job-level steps in the episode."""
    m = ((lost["attempt"].to_numpy() == attempt) & (lost["end_s"].to_numpy(float) > start)
         & (lost["start_s"].to_numpy(float) < end))
    if not m.any():
        return ""
    step, count = lost["step"].to_numpy(np.int64)[m], lost["count"].to_numpy(np.int64)[m]
    n = int(count.sum())
    return f"{n:,} redone step{'s' if n != 1 else ''} ({int(step.min())}-{int((step + count - 1).max())})"


def _observed(ev: pd.DataFrame, lost: pd.DataFrame, cov: dict[str, _Cover],
              ep: tuple[_Marks, _Marks, float, float], p: dict[str, float], tol: float) -> str:
    """What the episode's parts came from, in words."""
    a, b, start, end = ep
    inside = ev[_in_window(ev, start, end)]
    said = [f"last progress: step {a.last_step} of attempt {a.attempt}" if not math.isnan(a.last_end)
            else f"attempt {a.attempt} made no step"]
    fail = inside[(inside["kind"] == "failure") & (inside["attempt"] == a.attempt)
                  & (inside["start_s"].to_numpy(float) >= a.fail_start)] if len(inside) else inside
    if len(fail):
        text = str(fail["detail"].iloc[0])
        said.append("failure event" + (f" ({text[:80]}{'…' if len(text) > 80 else ''})" if text else ""))
    else:
        said.append(f"no failure event in attempt {a.attempt}: detection and teardown unknown")
    if cov["gaps"](start, end) > tol:
        said.append("gap between attempts")
    for kind in ("restart", "init", "checkpoint_load"):
        n = int(((inside["kind"] == kind) & (inside["attempt"] == b.attempt)).sum()) if len(inside) else 0
        if n:
            said.append(f"{n} {kind} event{'s' if n > 1 else ''} of attempt {b.attempt}")
    said.append(_redone(lost, a.attempt, start, end))
    if p["unattributed_s"] > tol:
        said.append("unattributed: time no logged event explains")
    return "; ".join(x for x in said if x)


def _in_window(ev: pd.DataFrame, start: float, end: float) -> np.ndarray:
    """Events that overlap ``[start, end]`` for a positive time, or instants inside it."""
    a, b = ev["start_s"].to_numpy(float), ev["end_s"].to_numpy(float)
    overlap = np.minimum(b, end) - np.maximum(a, start)
    return (overlap > 0) | ((a == b) & (a >= start) & (a <= end))


def _check_identity(acc: Accounting, cov: dict[str, _Cover], df: pd.DataFrame) -> dict[str, Any]:
    """Hold the identity (raise where it fails: a bug): the timeline's pieces of each downtime
    category sum to the accounting's seconds, and the parts of every episode sum to the time those
    categories hold inside its window. Returns what the episodes hold of each category."""
    tol = 1e-9 * max(acc.wall_s, 1.0)
    for c in DOWNTIME_CATEGORIES:
        whole = cov[c](-math.inf, math.inf) if len(cov[c].s) else 0.0
        if abs(whole - acc.seconds[c]) > tol:
            raise RuntimeError(f"downtime identity broken: the timeline holds {whole!r} s of {c}, the accounting "
                               f"{acc.seconds[c]!r} s")
    inside = {c: sum(cov[c](s, e) for s, e in zip(df["start_s"], df["end_s"], strict=True))
              for c in DOWNTIME_CATEGORIES}
    parts = float(np.nansum(df[list(PARTS)].to_numpy(float)))
    if abs(parts - sum(inside.values())) > tol * 8 * max(len(df), 1):  # each part may be float dust shown as 0
        raise RuntimeError(f"downtime identity broken: the parts sum to {parts!r} s, the episodes hold "
                           f"{sum(inside.values())!r} s of {', '.join(DOWNTIME_CATEGORIES)}")
    return inside


def downtime_by_cause(run_or_accounting: Run | Accounting) -> pd.DataFrame:
    """The downtime of each restart split by cause: one row per restart episode, from the failed
    attempt's last progress that survives to the next attempt's first step.

    Columns: ``attempt`` (the one that failed), ``next_attempt``, the episode's window
    ``start_s``/``end_s``, the parts (seconds; definitions in :data:`PART_DEFINITIONS`):

    - ``detection_s``: the failed attempt's last job-level step end (last progress) → the start of
      its failure event; NaN without a failure event (or without a step), its time unattributed;
    - ``teardown_s``: the failure event's start → the failed attempt's last record; NaN without one;
    - ``restart_s``: the failed attempt's last record → the next attempt's first event (the gap
      between attempts), with the restart and init events of the next attempt before its first step;
    - ``checkpoint_load_s``: checkpoint_load events in the episode; NaN where none is logged;
    - ``recomputation_s``: the lost work, the failed attempt's steps that a later attempt redoes;
    - ``unattributed_s``: the rest of the episode no logged event explains, and the time of the
      parts left unknown (never spread over the others);

    ``total_s`` (their sum) and ``observed`` (which records the parts came from, in words).

    The parts are read off the accounting's own timeline (:attr:`Accounting.timeline`): an
    episode holds the instants of its window that the waterfall books under ``failure_downtime``,
    ``lost_work``, ``checkpoint_load``, ``init`` or ``unaccounted`` (time it books elsewhere: eval,
    checkpoint saves, queue waits, steps, is not downtime). So the parts over all episodes sum
    exactly to those categories' seconds inside the episodes: all of ``failure_downtime`` and
    ``lost_work`` where every failure is followed by a restart. The function raises where that
    identity fails. ``attrs``: ``definitions``, ``inside_s`` (each category's seconds inside the
    episodes), ``failure_slice_s`` (the waterfall's failure_downtime + lost_work) and ``outside_s``
    (the part of that slice outside every episode: a last attempt's failure, say).
    """
    acc = accounted(run_or_accounting)
    cov = _covers(acc)
    tol = 1e-9 * max(acc.wall_s, 1.0)  # float dust of the interval arithmetic, shown as 0
    ev, lost = acc.run.events, _lost_rows(acc)
    rows = []
    for ep in _windows(_marks(acc)):
        a, b, start, end = ep
        p = {k: 0.0 if abs(v) <= tol else v for k, v in _episode(cov, a, b, start, end).items()}
        if not (ev["kind"].to_numpy()[_in_window(ev, start, end)] == "checkpoint_load").any():
            p["checkpoint_load_s"] = math.nan  # none logged: its time, if any, stays unattributed
        rows.append({"attempt": a.attempt, "next_attempt": b.attempt, "start_s": start, "end_s": end, **p,
                     "total_s": float(np.nansum(list(p.values()))), "observed": _observed(ev, lost, cov, ep, p, tol)})
    df = pd.DataFrame(rows, columns=list(DOWNTIME_COLUMNS)).astype({c: float for c in (*PARTS, "total_s")})
    inside = _check_identity(acc, cov, df)
    slice_s = acc.seconds["failure_downtime"] + acc.seconds["lost_work"]
    outside = slice_s - inside["failure_downtime"] - inside["lost_work"]
    df.attrs.update(definitions=dict(PART_DEFINITIONS), inside_s=inside, failure_slice_s=slice_s,
                    outside_s=0.0 if abs(outside) <= tol * 8 else outside)
    return df


def downtime_totals(table: pd.DataFrame) -> dict[str, Any]:
    """The episodes of :func:`downtime_by_cause` summed: ``restarts``, ``total_s``, each part's
    seconds (NaN where no episode observed it) and its ``share`` of the total."""
    out: dict[str, Any] = {"restarts": len(table), "total_s": float(table["total_s"].sum())}
    for c in PARTS:
        v = table[c].to_numpy(float)
        out[c] = float(np.nansum(v)) if len(v) and not np.isnan(v).all() else math.nan
    out["share"] = {c: out[c] / out["total_s"] if out["total_s"] > 0 else math.nan for c in PARTS}
    return out
