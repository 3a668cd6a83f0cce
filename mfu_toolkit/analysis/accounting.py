"""The accounting: where the wall time goes, and the one place analysis options enter.

Wall time ``W`` (the Run's first event to its last) is split into categories that sum to ``W``
exactly (up to float rounding)::

    W = ideal_compute + jitter + stall + stragglers + stage_imbalance + exposed_comm + data_stall
      + eval + checkpoint_save + checkpoint_load + init + lost_work + failure_downtime
      + other_events + unaccounted

``stall`` is non-zero only in runs whose loader flagged an outlier step (below), and the
waterfall table lists it only then, so the tables of other runs are unchanged. ``exposed_comm``
is booked only for runs that state it per step (rule 3), and the table lists it only then:
elsewhere it is unknown (not zero), stays inside ``ideal_compute``, and the table's
``attrs["exposed_comm"]`` says why.

Timeline rule (a priority sweep)
--------------------------------
1. Steps are first reduced to *job-level steps*, one per ``(attempt, step)``: the span from the
   earliest rank's ``start_s`` to the latest rank's ``end_s``. A job-level step is **lost** when the
   same step number appears again in a later attempt (it was computed, then redone after a
   restart); otherwise it is **useful**. Where the logged step numbers of one attempt skip
   (logs that print every k-th iteration), the gap between the two logged steps becomes an
   *inferred* row carrying the skipped steps' work. A row with zero span (a step the log names
   but does not time) stays off the timeline and carries no work.
2. Every instant of ``[t0, t1]`` gets exactly one label: the first of these that covers it
   (overlapping intervals of one kind count once; ranks are merged by union):

   1. ``init`` events;
   2. ``checkpoint_load``;
   3. ``checkpoint_save``;
   4. ``eval``;
   5. ``data_load`` events (→ ``data_stall``);
   6. useful job-level steps;
   7. lost job-level steps (→ ``lost_work``);
   8. ``failure`` and ``restart`` events (→ ``failure_downtime``);
   9. ``queue`` and ``other`` events (→ ``other_events``);
   10. *background* events — any event whose ``detail`` mentions ``async`` or ``background``
       (e.g. an asynchronous checkpoint write) — under their own kind's category; they rank
       below steps, so background work only counts where it holds the job up;
   11. the gap between one attempt's last record and the next attempt's first
       (→ ``failure_downtime``);
   12. anything else → ``unaccounted`` (shown, never hidden).

   Job-phase events outrank steps so that an evaluation or blocking checkpoint logged *inside*
   a coarse step or training block is carved out of it.
3. The useful-step time ``U`` is split further, per job-level step ``k`` with labelled time
   ``L_k`` (its span minus the parts carved out above; where job-level steps overlap, each
   instant is credited to the earliest-starting step that covers it):

   - ``data_k``  = median over ranks of ``data_wait_s`` (0 when not logged), at most ``L_k``;
   - ``strag_k`` = max over ranks − median over ranks of the rank's busy time
     (``compute_s`` where logged, else ``end_s − start_s − data_wait_s``), at most
     ``L_k − data_k``: the time the slowest rank held everyone, less ``stage_k``;
   - ``stage_k`` = where steps carry a ``stage`` column: the slowest pipeline stage's median
     rank busy time − the median over all ranks, at most the wait above: a heavier stage is
     ``stage_imbalance``, not ``stragglers``. Step-level, this assumes no pipeline (the wait is
     an upper bound on what removing a straggler gains; ``straggler_whatif`` replays the
     dependency graph of a per-operation trace);
   - ``x_k``     = ``L_k − data_k − strag_k``, the clean step time of the typical rank;
   - ``comm_k``  = where the steps carry ``exposed_comm_s`` (communication with no compute
     beside it, which traces loaded through :mod:`mfu_toolkit.io.gpu_time` give: Kineto,
     Nsight Systems, XPlane): the median over ranks of it less ``strag_k`` (the typical rank's
     exposed communication includes its wait for the slowest rank inside the collective, which
     is booked already), within ``[0, x_k]``; 0 for a step no rank states it for. Without the
     column it is unknown, never 0.

   With ``w_k`` the step's work (1 per step, or its ``samples``/``tokens`` for job-level rows
   that carry them), the ideal time per unit of work ``ρ`` is the median of ``x_k / w_k`` over the
   steady-state window (:func:`steady_state_window`). Then ``ideal_compute = ρ · Σ w_k`` over
   useful steps, and ``jitter = U − ideal_compute − Σ strag_k − Σ data_k``: step time above the
   ideal not explained by one rank or by input waits. ``ρ`` is capped at the mean clean rate
   ``Σ x_k / Σ w_k`` of the window and of all useful steps, so jitter is never negative,
   goodput never exceeds 100 % and the window MFU never exceeds the steady-state MFU.
   Where the run states ``comm_k``, the ideal step is split in two, and nothing else moves: ``ρ_c``
   is the same rate of ``(x_k − comm_k) / w_k`` (at most ``ρ``), ``ideal_compute = ρ_c · Σ w_k``
   and ``exposed_comm = (ρ − ρ_c) · Σ w_k``. The steady-state MFU stays that of the whole ideal
   step ``ρ`` (communication a step cannot hide is part of the step, and the same run read from a
   log that does not time it gets the same MFU); the waterfall shows ``exposed_comm`` as the part
   of the steady state that hiding the communication would recover (``breakdown``).
4. Steps a loader flagged — a non-empty ``flag`` column in ``run.steps``, from any loader
   (MaxText sets ``compile``, ``async_dispatch``, ``outlier``; several flags in one cell are
   separated by commas, semicolons, bars or spaces; ``True`` counts as a flag, ``False``, 0,
   NaN and "" do not) — keep their place on the timeline and their work, but stay out of the
   steady-state window and of its warm-up detection: a compile step, a step timed before its
   work was done (asynchronous dispatch) or a profiler capture says nothing of the steady rate.
   Where every useful timed step is flagged there is no window and no steady-state MFU, with
   that reason. (Runs reduced out of core by :mod:`mfu_toolkit.engine` carry each step's flags
   from the same column, gathered by its job-step query.)
5. A step flagged ``outlier`` (or ``stall``) is a named stall, not jitter: its clean time above
   its ideal time, ``max(x_k − ρ·w_k, 0)``, is booked as ``stall`` (per step in
   ``Accounting.steps["stall_s"]``, the steps named in ``Accounting.details["stall"]`` and the
   table's ``attrs["details"]``), and ``jitter`` keeps the rest of the time above the ideal.
   The stall is never more than that time above the ideal (where a flagged fast step makes the
   other steps sum below their ideal, the outliers' shares are scaled down to it), so jitter
   stays non-negative and the categories still sum to ``W`` exactly.

MFU (PaLM, Chowdhery et al. 2022, Appendix B; ``formulas.mfu``)::

    steady-state MFU = FLOPs per unit of work / ρ / (N × P)
    end-to-end MFU   = useful model FLOPs / W / (N × P) = steady-state MFU × ideal_compute / W

where FLOPs or the peak are unknown the MFUs are ``None`` with the reason, never guessed.

:func:`account` is the only function that takes the window options (``warmup_steps``,
``step_range``, ``tolerance``, ``lookahead``) and the links collectives are compared with
(``link``, ``nic``: names of :mod:`mfu_toolkit.interconnect`); every analysis takes a Run (accounted with the
defaults) or an :class:`Accounting`, and options given with an Accounting raise ``TypeError``.
An Accounting computes its views once: ``summary`` (:class:`~.breakdown.MFUSummary`),
``waterfall`` (the :func:`~.breakdown.breakdown` table), ``scorecard`` and ``timeline`` (the
sweep's labelled intervals, which :func:`~.downtime.downtime_by_cause` reads).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..flops.recsys import SHARDINGS
from ..interconnect import Link
from ..intervals import covered_within, difference, exclusive_pieces, measure, union
from ..run import Run
from .communication import check_link_options
from .reasons import Reason, flops_unknown, peak_unknown

if TYPE_CHECKING:
    from .waterfall import MFUSummary

__all__ = [
    "CATEGORIES",
    "TIMELINE_PRIORITY",
    "SteadyWindow",
    "Accounting",
    "job_steps",
    "steady_state_window",
    "account",
    "accounted",
]

CATEGORIES: tuple[str, ...] = (
    "ideal_compute",
    "jitter",
    "stall",
    "stragglers",
    "stage_imbalance",
    "exposed_comm",
    "data_stall",
    "eval",
    "checkpoint_save",
    "checkpoint_load",
    "init",
    "lost_work",
    "failure_downtime",
    "other_events",
    "unaccounted",
)

# (label, what) in priority order; the sweep gives each instant the first label that covers it.
TIMELINE_PRIORITY: tuple[tuple[str, str], ...] = (
    ("init", "init events"),
    ("checkpoint_load", "checkpoint_load events"),
    ("checkpoint_save", "blocking checkpoint_save events"),
    ("eval", "eval events"),
    ("data_stall", "data_load events"),
    ("useful_steps", "useful job-level step spans"),
    ("lost_work", "job-level steps redone in a later attempt"),
    ("failure_downtime", "failure and restart events"),
    ("other_events", "queue and other events"),
    ("background", "events whose detail mentions async/background, by kind"),
    ("failure_downtime", "gaps between attempts"),
    ("unaccounted", "everything else"),
)

_PHASE_KINDS: tuple[tuple[str, str], ...] = (
    ("init", "init"),
    ("checkpoint_load", "checkpoint_load"),
    ("checkpoint_save", "checkpoint_save"),
    ("eval", "eval"),
    ("data_load", "data_stall"),
)
_BACKGROUND_WORDS = ("async", "background")
_WINDOW_EXCLUDE_KINDS = ("init", "eval", "checkpoint_save", "checkpoint_load")

JOB_STEP_COLUMNS = (
    "attempt",
    "step",
    "start_s",
    "end_s",
    "span_s",
    "n_ranks",
    "busy_median_s",
    "busy_max_s",
    "slowest_rank",
    "data_wait_s",
    "samples",
    "tokens",
    "lost",
)


# --------------------------------------------------------------------------------------------
# job-level steps


def busy_and_wait(steps: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per-row busy time (compute_s, else duration minus data wait) and data wait (NaN → 0)."""
    start = steps["start_s"].to_numpy(dtype=float)
    end = steps["end_s"].to_numpy(dtype=float)
    if "data_wait_s" in steps.columns:
        wait = np.nan_to_num(steps["data_wait_s"].to_numpy(dtype=float), nan=0.0)
    else:
        wait = np.zeros(len(steps))
    busy = np.maximum(end - start - wait, 0.0)
    if "compute_s" in steps.columns:
        comp = steps["compute_s"].to_numpy(dtype=float)
        busy = np.where(np.isnan(comp), busy, comp)
    return busy, wait


def _stage_imbalance(run: Run, js: pd.DataFrame, strag: np.ndarray) -> np.ndarray:
    """Per job step, the part of the wait that a heavier pipeline stage explains: the slowest
    stage's median rank busy time minus the median over all ranks, within ``[0, strag]``
    (zeros without a ``stage`` column or with one stage)."""
    s = run.steps
    if not len(js) or not len(s) or "stage" not in s.columns:
        return np.zeros(len(js))
    busy, _ = busy_and_wait(s)
    f = pd.DataFrame({"attempt": s["attempt"].to_numpy(np.int64), "step": s["step"].to_numpy(np.int64),
                      "stage": pd.to_numeric(s["stage"], errors="coerce").to_numpy(float), "busy": busy})
    f = f[s["rank"].to_numpy() >= 0].dropna()
    if f["stage"].nunique() < 2:
        return np.zeros(len(js))
    worst_stage = f.groupby(["attempt", "step", "stage"])["busy"].median().groupby(level=["attempt", "step"]).max()
    part = (worst_stage - f.groupby(["attempt", "step"])["busy"].median()).clip(lower=0.0)
    key = pd.MultiIndex.from_arrays([js["attempt"].to_numpy(np.int64), js["step"].to_numpy(np.int64)])
    return np.minimum(part.reindex(key).fillna(0.0).to_numpy(float), strag)


def job_steps(run: Run) -> pd.DataFrame:
    """One row per ``(attempt, step)``: span over ranks, rank spread, data wait and lost flag.

    ``busy_*`` use ``compute_s`` where logged (a rank's own work, without waiting for others),
    otherwise the rank's duration minus its data wait. ``lost`` marks steps whose step number
    appears again in a later attempt. ``samples``/``tokens`` are filled only for job-level rows
    (``rank == -1``), where they mean the whole job's count.
    """
    cols = _job_step_columns(run)
    if cols is None:
        return pd.DataFrame({c: pd.Series(dtype="float64") for c in JOB_STEP_COLUMNS}).astype(
            {"attempt": "int64", "step": "int64", "n_ranks": "int64", "slowest_rank": "int64", "lost": bool}
        )
    return pd.DataFrame(cols)


def _group_stats(busy: np.ndarray, wait: np.ndarray, rank: np.ndarray,
                 counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per group of consecutive rows (``counts`` rows each): median and max busy time, the
    slowest rank (the first at the max) and the median data wait."""
    if np.all(counts == counts[0]):  # regular grid: vectorised medians via reshape
        n = int(counts[0])
        b2 = busy.reshape(-1, n)
        slowest = rank.reshape(-1, n)[np.arange(len(counts)), b2.argmax(axis=1)]
        return np.median(b2, axis=1), b2.max(axis=1), slowest, np.median(wait.reshape(-1, n), axis=1)
    gid = np.repeat(np.arange(len(counts)), counts)
    tmp = pd.DataFrame({"g": gid, "busy": busy, "wait": wait, "rank": rank})
    grp = tmp.groupby("g", sort=True)
    slowest = tmp["rank"].to_numpy()[grp["busy"].idxmax().to_numpy()]
    return grp["busy"].median().to_numpy(), grp["busy"].max().to_numpy(), slowest, grp["wait"].median().to_numpy()


def _redone(attempt: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Lost job steps: a later attempt ran the same step number (the latest attempt keeps it)."""
    uniq, inv = np.unique(step, return_inverse=True)
    last_attempt = np.full(len(uniq), np.iinfo(np.int64).min)
    np.maximum.at(last_attempt, inv, attempt)
    return attempt < last_attempt[inv]


def _job_step_columns(run: Run) -> dict[str, np.ndarray] | None:
    """The columns of :func:`job_steps` as arrays (``None`` for a run without steps)."""
    if run.reductions is not None:  # rows reduced out of core by an engine (mfu_toolkit.engine)
        return run.reductions.job_step_columns()
    s = run.steps
    if len(s) == 0:
        return None
    att = s["attempt"].to_numpy(dtype=np.int64)
    stp = s["step"].to_numpy(dtype=np.int64)
    rank = s["rank"].to_numpy(dtype=np.int64)
    start = s["start_s"].to_numpy(dtype=float)
    end = s["end_s"].to_numpy(dtype=float)
    busy, wait = busy_and_wait(s)
    lo = int(stp.min())
    width = int(stp.max()) - lo + 1
    key = att * width + (stp - lo)
    order = None
    brk = np.flatnonzero(key[1:] != key[:-1]) + 1
    starts = np.r_[0, brk]
    if len(np.unique(key[starts])) != len(starts):  # rows of one step are not contiguous
        order = np.argsort(key, kind="stable")
        key, start, end, busy, wait, rank = (a[order] for a in (key, start, end, busy, wait, rank))
        brk = np.flatnonzero(key[1:] != key[:-1]) + 1
        starts = np.r_[0, brk]
    counts = np.diff(np.r_[starts, len(key)])
    g_start = np.minimum.reduceat(start, starts)
    g_end = np.maximum.reduceat(end, starts)
    busy_med, busy_max, slowest, wait_med = _group_stats(busy, wait, rank, counts)
    g_key = key[starts]
    g_att = (g_key // width).astype(np.int64)
    g_step = (g_key % width + lo).astype(np.int64)
    cols: dict[str, np.ndarray] = {
        "attempt": g_att,
        "step": g_step,
        "start_s": g_start,
        "end_s": g_end,
        "span_s": g_end - g_start,
        "n_ranks": counts.astype(np.int64),
        "busy_median_s": busy_med,
        "busy_max_s": busy_max,
        "slowest_rank": slowest.astype(np.int64),
        "data_wait_s": wait_med,
    }
    job_level = bool((rank == -1).all())
    for col in ("samples", "tokens"):
        if job_level and col in s.columns:
            vals = s[col].to_numpy(dtype=float)
            cols[col] = vals if order is None else vals[order]
        else:
            cols[col] = np.full(len(g_key), np.nan)
    cols["lost"] = _redone(g_att, g_step)
    # rows by start, then attempt, then step (a stable lexicographic sort, NaN starts last)
    by = np.lexsort((g_step, g_att, g_start))
    if not np.array_equal(by, np.arange(len(by))):
        cols = {c: v[by] for c, v in cols.items()}
    return cols


def _with_columns(df: pd.DataFrame, **columns: Any) -> pd.DataFrame:
    """``df`` (NumPy-typed columns, default index) with ``columns`` added or replaced, in its
    column order. ``df``'s own columns are shared, not copied (copy-on-write keeps each frame's
    values its own), so a frame of millions of steps is not held twice."""
    kept = df.drop(columns=[c for c in columns if c in df.columns]).reset_index(drop=True)
    new = pd.DataFrame({c: np.asarray(v) if np.ndim(v) else v for c, v in columns.items()}, index=kept.index)
    out = pd.concat([kept, new], axis=1)
    order = list(dict.fromkeys([*df.columns, *columns]))
    return out[order]


def _with_unlogged(js: pd.DataFrame | dict[str, np.ndarray]) -> pd.DataFrame:
    """Add one inferred row per gap where the logged step numbers of an attempt skip.

    Logs that print every k-th iteration leave gaps between logged steps in which the trainer
    ran the unlogged ones. A gap ``[end of step s1, start of step s2]`` with ``s2 > s1 + 1`` and
    positive length becomes a row with ``inferred=True`` and ``skipped = s2 − s1 − 1`` (its work);
    it is lost when a later attempt logs a step number ``<= s1 + 1``.
    """
    n = len(js["attempt"])
    added = {"inferred": np.zeros(n, dtype=bool), "skipped": np.zeros(n, dtype=np.int64)}
    # one construction from the job steps' arrays (or a copy of their frame) with the two columns
    js = pd.DataFrame({**js, **added}) if isinstance(js, dict) else _with_columns(js, **added)
    if n < 2:
        return js
    o = np.lexsort((js["step"].to_numpy(), js["attempt"].to_numpy()))  # stable: by attempt, then step
    att = js["attempt"].to_numpy()[o]
    stp = js["step"].to_numpy()[o]
    st = js["start_s"].to_numpy(float)[o]
    en = js["end_s"].to_numpy(float)[o]
    same = att[1:] == att[:-1]
    skip = stp[1:] - stp[:-1] - 1
    gap_s, gap_e = en[:-1], st[1:]
    sel = same & (skip > 0) & (gap_e > gap_s)
    if not sel.any():
        return js
    first_of_attempt = js.groupby("attempt")["step"].min()
    rows = []
    for i in np.flatnonzero(sel):
        a = int(att[i])
        later = first_of_attempt[first_of_attempt.index > a]
        lost = bool((later <= stp[i] + 1).any())
        rows.append(
            {
                "attempt": a, "step": int(stp[i] + 1), "start_s": gap_s[i], "end_s": gap_e[i],
                "span_s": gap_e[i] - gap_s[i], "n_ranks": 0, "busy_median_s": np.nan,
                "busy_max_s": np.nan, "slowest_rank": -1, "data_wait_s": 0.0, "samples": np.nan,
                "tokens": np.nan, "lost": lost, "inferred": True, "skipped": int(skip[i]),
            }
        )
    out = pd.concat([js, pd.DataFrame(rows)], ignore_index=True)
    return out.sort_values(["start_s", "attempt", "step"], kind="stable").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# steps a loader flagged


_FLAG_SEPARATORS = re.compile(r"[,;|\s]+")
STALL_FLAGS: frozenset[str] = frozenset({"outlier", "stall"})


def _flag_tokens(value: Any) -> tuple[str, ...]:
    """The flags one ``flag`` cell holds: none for an empty text, NaN/None/NA, ``False`` or 0;
    ``("flagged",)`` for ``True``; else the cell's text split at commas, semicolons, bars or
    spaces (``"compile, outlier"`` is two flags)."""
    if isinstance(value, (bool, np.bool_)):
        return ("flagged",) if value else ()
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return ()
    if isinstance(value, (int, float, np.number)):
        return () if value == 0 else (f"{value:g}",)
    return tuple(t for t in _FLAG_SEPARATORS.split(str(value).strip()) if t)


def _step_flags(run: Run, js: pd.DataFrame) -> np.ndarray:
    """Per job-level step of ``js``: the flags a loader set on any of its rows, sorted and joined
    by commas ("" for none, and for inferred rows). Runs whose rows an engine reduced out of core
    carry them in ``js["flag"]`` (``Reductions.job_step_columns``), read by the same rule."""
    n = len(js)
    out = np.full(n, "", dtype=object)
    s = run.steps
    if n and run.reductions is not None and "flag" in js.columns:
        inferred = js["inferred"].to_numpy(bool) if "inferred" in js.columns else np.zeros(n, bool)
        codes, uniques = pd.factorize(js["flag"], use_na_sentinel=True)  # few distinct texts
        text = np.array([*(",".join(sorted(set(_flag_tokens(u)))) for u in uniques), ""], dtype=object)
        out = text[codes]
        out[inferred] = ""
        return out
    if not n or run.reductions is not None or "flag" not in s.columns or not len(s):
        return out
    codes, uniques = pd.factorize(s["flag"], use_na_sentinel=True)
    tokens = [_flag_tokens(u) for u in uniques]
    flagged_codes = [i for i, t in enumerate(tokens) if t]
    rows = np.flatnonzero(np.isin(codes, flagged_codes))
    if not len(rows):
        return out
    per_step: dict[tuple[int, int], set[str]] = {}
    att = s["attempt"].to_numpy(np.int64)[rows]
    stp = s["step"].to_numpy(np.int64)[rows]
    for a, k, c in zip(att.tolist(), stp.tolist(), codes[rows].tolist(), strict=True):
        per_step.setdefault((a, k), set()).update(tokens[c])
    inferred = js["inferred"].to_numpy(bool) if "inferred" in js.columns else np.zeros(n, bool)
    for i, (a, k) in enumerate(zip(js["attempt"].to_numpy(np.int64).tolist(), js["step"].to_numpy(np.int64).tolist(),
                                   strict=True)):
        if not inferred[i] and (a, k) in per_step:
            out[i] = ",".join(sorted(per_step[(a, k)]))
    return out


# --------------------------------------------------------------------------------------------
# steady-state window


@dataclass(frozen=True)
class SteadyWindow:
    """The steps whose timing defines steady state, and why the others were left out.

    ``steps`` has one row per job-level step with ``in_window`` and ``why`` (``in window``,
    ``warm-up``, ``lost (redone after a restart)``, ``overlaps <event kind>``, ``outside
    step_range``, ``no time left``). ``warmup_steps`` maps attempt → steps dropped as warm-up.
    """

    steps: pd.DataFrame
    reason: str
    rule: str
    warmup_steps: dict[int, int] = field(default_factory=dict)
    fallback: bool = False
    # Why the window is empty although useful timed steps exist ("" otherwise).
    empty_reason: str = ""

    @property
    def n_steps(self) -> int:
        return int(np.count_nonzero(self.steps["in_window"].to_numpy(bool))) if len(self.steps) else 0

    def _window_steps(self) -> np.ndarray:
        return self.steps["step"].to_numpy()[self.steps["in_window"].to_numpy(bool)]

    @property
    def first_step(self) -> int | None:
        w = self._window_steps()
        return int(w.min()) if len(w) else None

    @property
    def last_step(self) -> int | None:
        w = self._window_steps()
        return int(w.max()) if len(w) else None

    def summary(self) -> dict[str, Any]:
        return {
            "n_steps": self.n_steps,
            "first_step": self.first_step,
            "last_step": self.last_step,
            "warmup_steps": {int(k): int(v) for k, v in self.warmup_steps.items()},
            "fallback": self.fallback,
            "reason": self.reason,
        }


_WINDOW_RULE = (
    "Per attempt, warm-up ends at the first step from which the median time per unit of work of "
    "the next {look} steps is within max({tol:.0%}, 3 robust SDs) of the attempt's reference (the "
    "median over its second half); at most half an attempt counts as warm-up. Steps redone after "
    "a restart and steps overlapping init/eval/checkpoint events are excluded."
)
# Added to the rule (and to a fallback's reason) only for runs with flagged steps, so the rule of
# a run without them reads as before.
_FLAG_RULE = (
    " Steps the loader flagged (a non-empty 'flag' column: compilation, asynchronous dispatch, "
    "outliers) are excluded too, and left out of the warm-up detection."
)


def _check_int_option(name: str, value: Any, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}; got {value!r}")
    return int(value)


def _mark_phase_overlaps(js: pd.DataFrame, events: _Events, why: np.ndarray) -> None:
    """Set ``why`` of steps still in the window that overlap a blocking job-phase event."""
    starts = js["start_s"].to_numpy(dtype=float)
    ends = js["end_s"].to_numpy(dtype=float)
    for kind in _WINDOW_EXCLUDE_KINDS:
        of_kind = events.of_kinds((kind,))
        if not of_kind.any():
            continue
        u = events.intervals(of_kind & ~events.background)
        hit = covered_within(u, starts, ends) > 1e-9 * np.maximum(ends - starts, 1e-3)
        why[hit & (why == "in window")] = f"overlaps {kind}"


def _window(
    js: pd.DataFrame,
    events: _Events,
    labelled: np.ndarray,
    work: np.ndarray,
    flags: np.ndarray,
    *,
    warmup_steps: int | None,
    step_range: tuple[int, int] | None,
    tolerance: float,
    lookahead: int,
) -> SteadyWindow:
    n = len(js)
    why = np.array(["in window"] * n, dtype=object)
    lost = js["lost"].to_numpy(dtype=bool) if n else np.zeros(0, bool)
    why[lost] = "lost (redone after a restart)"
    if n and "inferred" in js.columns:
        inferred = js["inferred"].to_numpy(dtype=bool)
        why[inferred & ~lost] = "unlogged steps (inferred)"
    else:
        inferred = np.zeros(n, bool)
    flagged = flags != ""
    for i in np.flatnonzero(flagged & (why == "in window")):
        why[i] = f"flagged by the loader ({flags[i]})"
    _mark_phase_overlaps(js, events, why)
    why[(labelled <= 0) & (why == "in window")] = "no time left"
    why[(work <= 0) & (why == "in window")] = "untimed (zero span)"
    per_work = np.divide(labelled, work, out=np.full(n, np.nan), where=(work > 0) & (labelled > 0))
    warm: dict[int, int] = {}
    if step_range is not None:
        lo, hi = step_range
        out = (js["step"].to_numpy() < lo) | (js["step"].to_numpy() > hi)
        why[out & (why == "in window")] = "outside step_range"
        reason = f"step_range override: trainer steps {lo}..{hi}"
    else:
        warm = _mark_warmup(js, why, per_work, ~lost & ~inferred, flagged, warmup_steps=warmup_steps,
                            tolerance=tolerance, lookahead=lookahead)
        if warmup_steps is not None:
            reason = f"warmup_steps override: first {warmup_steps} steps of each attempt dropped"
        else:
            reason = "detected: " + ", ".join(
                f"attempt {a}: {w} warm-up step{'s' if w != 1 else ''}" for a, w in warm.items()
            )
    in_window = why == "in window"
    fallback, empty = False, ""
    if n and not in_window.any():
        in_window, fallback, said = _fallback((~lost) & (labelled > 0) & (work > 0) & ~inferred, flags)
        reason += f"; {said}" if said else ""
        empty = "" if fallback else said
    out_df = pd.DataFrame({**{c: js[c].to_numpy() for c in ("attempt", "step", "start_s", "end_s", "span_s")},
                           "in_window": in_window, "why": np.where(in_window, "in window", why)})
    rule = _WINDOW_RULE.format(look=lookahead, tol=tolerance) + (_FLAG_RULE if flagged.any() else "")
    return SteadyWindow(out_df, reason, rule, warm, fallback, empty)


def _mark_warmup(js: pd.DataFrame, why: np.ndarray, per_work: np.ndarray, usable: np.ndarray, flagged: np.ndarray,
                 *, warmup_steps: int | None, tolerance: float, lookahead: int) -> dict[int, int]:
    """Mark each attempt's warm-up steps in ``why``; returns attempt → steps marked.

    ``warmup_steps`` counts an attempt's leading usable steps, flagged ones included; the
    detector reads only the unflagged ones (a flagged step's time says nothing of warm-up).
    """
    attempt = js["attempt"].to_numpy()
    step = js["step"].to_numpy()
    warm: dict[int, int] = {}
    for a in np.unique(attempt):  # sorted, as groupby("attempt")
        idx = np.flatnonzero(attempt == a)
        cand = idx[usable[idx]]
        cand = cand[np.argsort(step[cand], kind="stable")]
        if warmup_steps is not None:
            nw = min(warmup_steps, len(cand))
        else:
            cand = cand[~flagged[cand]]
            nw = _detect_warmup(per_work[cand], tolerance=tolerance, lookahead=lookahead)
        if nw:
            head = cand[:nw]
            why[head[why[head] == "in window"]] = "warm-up"
        warm[int(a)] = int(nw)
    return warm


def _fallback(timed: np.ndarray, flags: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """The window when no step survived the rule: every useful timed step the loader did not
    flag (``fallback`` True), else none, with the reason in words."""
    flagged = flags != ""
    cand = timed & ~flagged
    if cand.any():
        return cand, True, ("no step survived the rule, so the window falls back to every useful step"
                            + (" the loader did not flag" if flagged.any() else "")
                            + " (their event-covered time is carved out by the timeline)")
    if timed.any():
        kinds = pd.Series(flags[timed]).value_counts()
        return cand, False, ("every useful timed step is flagged by the loader ("
                             + ", ".join(f"{c} {k}" for k, c in kinds.items()) + "), so no step defines steady state")
    return cand, False, ""


def _detect_warmup(x: np.ndarray, *, tolerance: float, lookahead: int) -> int:
    """Number of leading steps whose forward-looking median is above the steady threshold."""
    m = len(x)
    if m < 4 or not np.isfinite(x).any():
        return 0
    ref_part = x[m // 2 :]
    if not np.isfinite(ref_part).any():
        return 0
    ref = float(np.nanmedian(ref_part))
    mad = float(np.nanmedian(np.abs(ref_part - ref))) * 1.4826  # robust SD (normal consistency)
    thr = ref + max(tolerance * ref, 3.0 * mad)
    limit = m // 2
    for i in range(limit + 1):
        ahead = x[i : i + lookahead]
        if np.isfinite(x[i]) and x[i] <= thr and float(np.nanmedian(ahead)) <= thr:  # x[i] finite → ahead not all-NaN
            return i
    return limit


def is_background(ev: pd.DataFrame) -> np.ndarray:
    d = ev["detail"].astype(str).str.lower()
    mask = np.zeros(len(ev), dtype=bool)
    for w in _BACKGROUND_WORDS:
        mask |= d.str.contains(w, regex=False).to_numpy()
    return mask


class _Events:
    """A Run's events as arrays (kind codes, background flags, times), built once per sweep so
    that selecting events by kind is a NumPy mask rather than a DataFrame filter."""

    def __init__(self, events: pd.DataFrame) -> None:
        n = len(events)
        if n:
            codes, uniques = pd.factorize(events["kind"])  # missing kinds get -1: they match nothing
            self._codes = np.asarray(codes)
            self._uniques = list(uniques)
            self.background = is_background(events)
        else:
            self._codes, self._uniques, self.background = np.zeros(0, np.intp), [], np.zeros(0, bool)
        self.start = events["start_s"].to_numpy(float)
        self.end = events["end_s"].to_numpy(float)

    def of_kinds(self, kinds: Iterable[str]) -> np.ndarray:
        wanted = set(kinds)
        return np.isin(self._codes, [i for i, k in enumerate(self._uniques) if k in wanted])

    def intervals(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return union(self.start[mask], self.end[mask])


# --------------------------------------------------------------------------------------------
# FLOPs and peak, with reasons when unknown


@dataclass(frozen=True)
class _Work:
    unit: str  # "step", "sample" or "token"
    per_step: np.ndarray  # work units per job-level step
    flops_per_unit: float | None
    flops_reason: Reason | str
    flops_source: str | None


def _work(run: Run, js: pd.DataFrame) -> _Work:
    m = run.meta
    n = len(js)
    inferred = js["inferred"].to_numpy(dtype=bool) if n else np.zeros(0, bool)
    logged = ~inferred
    unit, w = "step", np.ones(n)
    for col, u in (("samples", "sample"), ("tokens", "token")):
        v = js[col].to_numpy(dtype=float) if n else np.zeros(0)
        if n and np.all(np.isfinite(v[logged])) and np.all(v[logged] > 0):
            unit, w = u, np.where(logged, v, 1.0)
            break
    typical = float(np.median(w[logged])) if logged.any() else 1.0
    if n:
        # skipped (unlogged) steps carry the typical logged work; an untimed (zero-span) row
        # is a marker outside the timeline and carries none
        w = np.where(inferred, js["skipped"].to_numpy(dtype=float) * typical, w)
        w = np.where(js["span_s"].to_numpy(dtype=float) > 0, w, 0.0)
    fpu: float | None = None
    reason: Reason | str = ""
    if unit == "sample":
        if m.model_flops_per_sample:
            fpu = float(m.model_flops_per_sample)
        elif m.model_flops_per_step and m.global_batch:
            fpu = float(m.model_flops_per_step) / float(m.global_batch)
        elif m.model_flops_per_token and m.seq_len:
            fpu = float(m.model_flops_per_token) * float(m.seq_len)
        elif m.model_flops_per_step:
            fpu = float(m.model_flops_per_step) / typical  # the step's samples as logged
        else:
            reason = flops_unknown("sample")
    elif unit == "token":
        if m.model_flops_per_token:
            fpu = float(m.model_flops_per_token)
        elif m.model_flops_per_sample and m.seq_len:
            fpu = float(m.model_flops_per_sample) / float(m.seq_len)
        elif m.model_flops_per_step:
            fpu = float(m.model_flops_per_step) / typical  # the step's tokens as logged
        else:
            reason = flops_unknown("token")
    else:
        if m.model_flops_per_step:
            fpu = float(m.model_flops_per_step)
        elif m.model_flops_per_sample and m.global_batch:
            fpu = float(m.model_flops_per_sample) * float(m.global_batch)
        elif m.model_flops_per_token and m.global_batch and m.seq_len:
            fpu = float(m.model_flops_per_token) * float(m.global_batch) * float(m.seq_len)
        else:
            reason = flops_unknown("step")
    return _Work(unit, w, fpu, reason, m.model_flops_source)


def _peak_reason(run: Run) -> Reason | str:
    return peak_unknown(count=not run.meta.n_accelerators, peak=not run.meta.peak_flops_per_accelerator)


# --------------------------------------------------------------------------------------------
# the accounting


@dataclass(frozen=True)
class Accounting:
    """Everything the breakdown computed: seconds per category, per-step table and window.

    ``steps`` is :func:`job_steps` plus ``labelled_s`` (time credited to the step on the
    timeline), ``data_s``, ``straggler_s``, ``clean_s``, ``work``, ``in_window`` and ``why``
    (and ``exposed_comm_s``, the exposed communication booked per job step, where the run states
    it: ``exposed_comm_basis`` says how, else ``exposed_comm_reason`` why it is unknown).
    ``rho`` is the ideal time per unit of work (``work_unit``); ``link`` and ``nic`` are the
    links given to :func:`account` for the collectives.
    """

    run: Run
    wall_s: float
    seconds: dict[str, float]
    steps: pd.DataFrame
    window: SteadyWindow
    rho: float | None
    work_unit: str
    flops_per_unit: float | None
    flops_reason: Reason | str  # "" when known
    flops_source: str | None
    peak_reason: Reason | str  # "" when known
    # how exposed communication was booked ("" where the run states none) and why it is unknown ("" where stated)
    exposed_comm_basis: str = ""
    exposed_comm_reason: str = ""
    # the links collectives are compared with (comm_efficiency's link= and nic=), as given to account()
    link: str | Link | None = None
    nic: str | Link | None = None
    # how a recommendation model's tables are sharded (flops.recsys.SHARDINGS), for its all-to-all
    sharding: str | None = None

    @cached_property
    def summary(self) -> MFUSummary:
        """The MFU summary of this accounting, computed once (:func:`~.breakdown.mfu_summary` returns it)."""
        from .waterfall import summary_of

        return summary_of(self)

    @cached_property
    def waterfall(self) -> pd.DataFrame:
        """The waterfall table of this accounting (:func:`~.breakdown.breakdown`), computed once."""
        from .waterfall import waterfall_of

        return waterfall_of(self)

    @cached_property
    def scorecard(self) -> pd.DataFrame:
        """The scorecard of this accounting (:func:`~.scorecard.scorecard`), computed once."""
        from .scorecard import scorecard_of

        return scorecard_of(self)

    @cached_property
    def timeline(self) -> pd.DataFrame:
        """The sweep's labelled intervals, computed once: one disjoint piece per row, sorted by start.

        ``category`` is the label the piece got (a :data:`CATEGORIES` name; ``useful_steps`` for the
        useful steps' time, which rule 3 splits further; ``unaccounted`` for the rest of the wall
        time), ``source`` what it came from (``failure and restart events``, ``gaps between
        attempts``, ...), ``start_s``/``end_s``. A category's pieces sum to its seconds.
        """
        pieces: list[tuple[str, str, np.ndarray, np.ndarray]] = []
        s = self.steps
        _sweep(self.run, s, _Events(self.run.events), s["lost"].to_numpy(bool) if len(s) else np.zeros(0, bool),
               pieces)
        covered = union(np.concatenate([p[2] for p in pieces]), np.concatenate([p[3] for p in pieces]))
        rest = difference((np.array([self.run.t0]), np.array([self.run.t1])), covered)
        pieces.append(("unaccounted", "everything else", *rest))
        n = [len(p[2]) for p in pieces]
        out = pd.DataFrame({
            "category": np.repeat(["useful_steps" if p[0] == "useful" else p[0] for p in pieces], n).astype(object),
            "source": np.repeat([p[1] for p in pieces], n).astype(object),
            "start_s": np.concatenate([p[2] for p in pieces]), "end_s": np.concatenate([p[3] for p in pieces])})
        return out.sort_values("start_s", kind="stable").reset_index(drop=True)

    @property
    def useful_work(self) -> float:
        s = self.steps
        if not len(s):
            return 0.0
        work = s["work"].to_numpy(float)[~s["lost"].to_numpy(bool)]
        nan = np.isnan(work)
        return float((np.where(nan, 0.0, work) if nan.any() else work).sum())  # as Series.sum: NaN skipped

    @property
    def useful_steps(self) -> int:
        """Trainer steps kept (not redone) and timed, counting inferred unlogged steps."""
        s = self.steps
        if not len(s):
            return 0
        keep = ~s["lost"].to_numpy(bool) & (s["work"].to_numpy(float) > 0)
        count = np.where(s["inferred"].to_numpy(bool), s["skipped"].to_numpy(), 1)
        return int(count[keep].sum())

    @property
    def ideal_step_s(self) -> float | None:
        """Ideal time of one average useful step (ρ × mean work per useful step)."""
        if self.rho is None or self.useful_steps == 0:
            return None
        return self.rho * self.useful_work / self.useful_steps

    @property
    def details(self) -> dict[str, str]:
        """What a category came from, in words, for the categories that name their steps
        (``stall``: the flagged steps, their flags and their seconds above the ideal step)."""
        s = self.steps
        if not len(s) or "stall_s" not in s.columns or self.seconds.get("stall", 0.0) <= 0:
            return {}
        stall = s["stall_s"].to_numpy(float)
        rows = np.flatnonzero(stall > 0)
        parts = [f"attempt {int(s['attempt'].iat[i])} step {int(s['step'].iat[i])} ({s['flag'].iat[i]}): "
                 f"{float(s['span_s'].iat[i]):.6g} s long, {stall[i]:.6g} s above the ideal step" for i in rows]
        return {"stall": f"{len(rows)} step(s) the loader flagged as outliers: " + "; ".join(parts)}

    @property
    def steady_s(self) -> float:
        """Useful work at the ideal step time (``ρ · Σ w``): ``ideal_compute`` plus the ``exposed_comm``
        carved out of it where the run states it (rule 3; 0 elsewhere)."""
        return self.seconds["ideal_compute"] + self.seconds.get("exposed_comm", 0.0)

    @property
    def goodput(self) -> float:
        """steady_s / W: the fraction of steady-state throughput the run achieved end to end."""
        return self.steady_s / self.wall_s if self.wall_s > 0 else float("nan")


def _ideal_rate(clean: np.ndarray, w: np.ndarray, window: np.ndarray, useful: np.ndarray) -> float:
    """The ideal time per unit of work: the window's median clean rate, never above a mean.

    The median is robust to outliers, but on a left-skewed window (a few fast steps among
    slow ones, or only three steps) it can exceed the mean, and an "ideal" slower than what
    the job averaged would book negative jitter and a goodput above 100 %. So the ideal is
    capped at the mean clean rate of the window and of all useful steps (Σ clean / Σ work).
    """
    rho = float(np.median(clean[window] / w[window]))
    for sel in (window, useful):
        total = float(w[sel].sum())
        if total > 0:
            rho = min(rho, float(clean[sel].sum()) / total)
    return rho


def _stall(clean: np.ndarray, w: np.ndarray, rho: float | None, flags: np.ndarray, useful: np.ndarray,
           above: float) -> np.ndarray:
    """Per job step, its ``stall`` seconds: for a useful step the loader flagged as an outlier
    (a flag in :data:`STALL_FLAGS`), its clean time above its ideal time ``ρ · w_k``.

    The stall is taken out of the time above the ideal (``above``: jitter before the split), never
    more than it: where a flagged fast step (an asynchronous-dispatch artefact) makes the steps
    outside the outliers sum below their ideal, the outliers' excess is scaled down to ``above``,
    so jitter stays non-negative and the categories still sum to the wall time. Without an ideal
    step (an empty window) nothing is split off.
    """
    out = np.zeros(len(clean))
    if rho is None or not len(clean):
        return out
    codes, uniques = pd.factorize(pd.Series(flags, dtype=object), use_na_sentinel=True)  # few distinct texts
    hit = np.array([*(bool(f) and bool(STALL_FLAGS.intersection(str(f).split(","))) for f in uniques), False])
    mark = hit[codes] & useful
    if not mark.any():
        return out
    out[mark] = np.maximum(clean[mark] - rho * w[mark], 0.0)
    total = float(out.sum())
    room = max(above, 0.0)
    if total > room:
        out *= room / total if total > 0 else 0.0
    return out


def _step_pieces(js: pd.DataFrame, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    idx = np.flatnonzero(mask)
    st = js["start_s"].to_numpy(float)[idx]
    en = js["end_s"].to_numpy(float)[idx]
    o = np.argsort(st, kind="stable")
    a, b = exclusive_pieces(st[o], en[o])
    return idx[o], a, b


def _event_intervals(events: _Events, kinds: Iterable[str], background: bool | None) -> tuple[np.ndarray, np.ndarray]:
    mask = events.of_kinds(kinds)
    if background is not None:
        mask &= events.background if background else ~events.background
    return events.intervals(mask)


def _attempt_gaps(run: Run) -> tuple[np.ndarray, np.ndarray]:
    frames = [df for df in (run.step_extent, run.events) if len(df)]
    if not frames:
        return np.empty(0), np.empty(0)
    att = np.concatenate([df["attempt"].to_numpy() for df in frames])
    start = np.concatenate([df["start_s"].to_numpy(float) for df in frames])
    end = np.concatenate([df["end_s"].to_numpy(float) for df in frames])
    known = ~pd.isna(att)  # as groupby: rows without an attempt belong to none
    att, start, end = att[known], start[known], end[known]
    attempts, inv = np.unique(att, return_inverse=True)  # sorted, as groupby's keys
    if len(attempts) < 2:
        return np.empty(0), np.empty(0)
    # per attempt: first start and last end, skipping NaN (NaN only when all are NaN), as min/max
    first = np.full(len(attempts), np.nan)
    last = np.full(len(attempts), np.nan)
    np.fmin.at(first, inv, start)
    np.fmax.at(last, inv, end)
    return union(last[:-1], first[1:])


def accounted(run: Run | Accounting, **options: Any) -> Accounting:
    """``run`` accounted with ``options`` (those of :func:`account`); an :class:`Accounting` is
    used as it is, and options given with one raise ``TypeError`` (its window is already chosen:
    an option that would be ignored is an error, not a different number)."""
    if isinstance(run, Accounting):
        given = sorted(k for k, v in options.items() if v is not None)
        if given:
            raise TypeError(f"{', '.join(given)} cannot be applied to an Accounting (its window is already "
                            f"chosen); give them to account(run, ...) or pass the Run")
        return run
    if isinstance(run, Run):
        return account(run, **options)
    raise TypeError(f"run must be a mfu_toolkit.run.Run or an Accounting; got {type(run).__name__}")


def _checked_options(warmup_steps: Any, step_range: Any, tolerance: Any, lookahead: Any) -> tuple[Any, ...]:
    """``account``'s window options, checked (a bad one raises ValueError naming it)."""
    if warmup_steps is not None:
        warmup_steps = _check_int_option("warmup_steps", warmup_steps, minimum=0)
    if step_range is not None:
        if (
            not isinstance(step_range, (tuple, list))
            or len(step_range) != 2
            or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in step_range)
            or step_range[0] > step_range[1]
        ):
            raise ValueError(f"step_range must be a pair of integers (first, last) with first <= last; "
                             f"got {step_range!r}")
        step_range = (int(step_range[0]), int(step_range[1]))
    if not (isinstance(tolerance, (int, float)) and 0 <= tolerance < 10):
        raise ValueError(f"tolerance must be a number in [0, 10); got {tolerance!r}")
    return warmup_steps, step_range, tolerance, _check_int_option("lookahead", lookahead, minimum=1)


def _sweep(run: Run, js: pd.DataFrame, ev: _Events, lost: np.ndarray,
           pieces: list[tuple[str, str, np.ndarray, np.ndarray]] | None = None
           ) -> tuple[dict[str, float], np.ndarray, float]:
    """The timeline priority sweep: seconds per category (the useful steps' time not yet split),
    each job step's labelled time, and the useful steps' time ``U``. With ``pieces`` (a list), each
    label's new disjoint intervals are appended to it as ``(label, source, starts, ends)``."""
    seconds = dict.fromkeys(CATEGORIES, 0.0)
    covered = (np.empty(0), np.empty(0))
    covered_len = 0.0

    def add(label: str, u: tuple[np.ndarray, np.ndarray], source: str) -> None:
        nonlocal covered, covered_len
        if pieces is not None:
            pieces.append((label, source, *difference(u, covered)))
        covered = union(np.r_[covered[0], u[0]], np.r_[covered[1], u[1]])
        new_len = measure(covered)
        seconds[label] = seconds.get(label, 0.0) + (new_len - covered_len)
        covered_len = new_len

    for kind, label in _PHASE_KINDS:
        add(label, _event_intervals(ev, [kind], background=False), f"{kind} events")
    before_steps = covered
    # useful steps: pieces and labelled time per step
    labelled = np.zeros(len(js))
    idx, a, b = _step_pieces(js, ~lost)
    if len(idx):
        labelled[idx] = np.maximum((b - a) - covered_within(before_steps, a, b), 0.0)
    add("useful", union(a, b), "useful job-level steps")
    idx_l, al, bl = _step_pieces(js, lost)
    if len(idx_l):
        labelled[idx_l] = np.maximum((bl - al) - covered_within(covered, al, bl), 0.0)
    add("lost_work", union(al, bl), "job-level steps redone in a later attempt")
    add("failure_downtime", _event_intervals(ev, ["failure", "restart"], background=None), "failure and restart events")
    add("other_events", _event_intervals(ev, ["queue", "other"], background=False), "queue and other events")
    for kind, label in (*_PHASE_KINDS, ("queue", "other_events"), ("other", "other_events")):
        add(label, _event_intervals(ev, [kind], background=True), f"background {kind} events")
    add("failure_downtime", _attempt_gaps(run), "gaps between attempts")
    return seconds, labelled, seconds.pop("useful")


def _job_table(run: Run) -> pd.DataFrame:
    """The job-level steps with the inferred unlogged ones, from the engine's reductions where
    the run has them (one copy per step, whatever the step count)."""
    cols = _job_step_columns(run)
    return _with_unlogged(job_steps(run) if cols is None else cols)


def _rho(clean: np.ndarray, w: np.ndarray, labelled: np.ndarray, in_win: np.ndarray,
         useful: np.ndarray) -> float | None:
    """The ideal time per unit of work over the window's timed steps with work (None: none)."""
    if not len(clean) or not useful.any():
        return None
    sel = in_win & (w > 0) & (labelled > 0)
    return _ideal_rate(clean, w, sel, useful & (w > 0)) if sel.any() else None


@dataclass(frozen=True)
class _Split:
    """Each job step's labelled time split (module docstring, rule 3), and how exposed
    communication was read (``exposed_basis``) or why it is unknown (``exposed_reason``)."""

    data: np.ndarray
    strag: np.ndarray
    stage: np.ndarray
    exposed: np.ndarray
    clean: np.ndarray
    exposed_basis: str
    exposed_reason: str

    def columns(self) -> dict[str, np.ndarray]:
        """The per-step columns of :attr:`Accounting.steps` (``exposed_comm_s`` only where the run states it)."""
        cols = {"data_s": self.data, "straggler_s": self.strag, "stage_imbalance_s": self.stage}
        if self.exposed_basis:
            cols["exposed_comm_s"] = self.exposed
        return {**cols, "clean_s": self.clean}


# one reason for a run without the column and for steps reduced out of core (which keep none), so the
# answer is the same whichever engine read the steps
_NO_EXPOSED = ("the run states no exposed communication per step (exposed_comm_s, which Kineto, Nsight Systems "
               "and XPlane traces give; steps reduced out of core keep none): it is unknown and stays inside "
               "ideal_compute")
EXPOSED_COMM_RULE = ("per step, the median over ranks of the trace's exposed_comm_s (communication with no "
                     "compute beside it) less the straggler wait already booked, at most the clean step time; "
                     "the slice is the part of the ideal step it explains, (rho - rho_c) x work, rho_c the ideal "
                     "rate of the clean times without it")


def _exposed_comm(run: Run, js: pd.DataFrame, wait: np.ndarray, room: np.ndarray) -> tuple[np.ndarray, str, str]:
    """Per job step its exposed communication (rule 3), with the basis; zeros and why where the run
    states none (no ``exposed_comm_s`` with a value, or steps an engine reduced out of core)."""
    s, n = run.steps, len(js)
    if run.reductions is not None or "exposed_comm_s" not in s.columns or not len(s) \
            or not s["exposed_comm_s"].notna().any():
        return np.zeros(n), "", _NO_EXPOSED
    f = pd.DataFrame({"attempt": s["attempt"].to_numpy(np.int64), "step": s["step"].to_numpy(np.int64),
                      "x": pd.to_numeric(s["exposed_comm_s"], errors="coerce").to_numpy(float)})
    med = f.groupby(["attempt", "step"])["x"].median()  # NaN ranks skipped; a step with none stays NaN
    key = pd.MultiIndex.from_arrays([js["attempt"].to_numpy(np.int64), js["step"].to_numpy(np.int64)])
    per = med.reindex(key).to_numpy(float)
    stated = np.isfinite(per) & (room > 0)
    out = np.where(stated, np.minimum(np.maximum(np.nan_to_num(per) - wait, 0.0), room), 0.0)
    logged = (room > 0) & ~js["inferred"].to_numpy(bool) if "inferred" in js.columns else room > 0
    return out, f"{EXPOSED_COMM_RULE}; {int(stated.sum())} of {int(logged.sum())} logged useful steps state it", ""


def _split_useful(run: Run, js: pd.DataFrame, labelled: np.ndarray, lost: np.ndarray) -> _Split:
    """Each job step's labelled time split (module docstring, rule 3): data wait, straggler wait,
    stage imbalance, exposed communication and the clean time of the typical rank (0 for lost steps)."""
    n = len(js)
    data = np.minimum(np.nan_to_num(js["data_wait_s"].to_numpy(float)), labelled) if n else np.zeros(0)
    strag_raw = np.nan_to_num((js["busy_max_s"] - js["busy_median_s"]).to_numpy(float)) if n else np.zeros(0)
    strag = np.minimum(np.maximum(strag_raw, 0.0), np.maximum(labelled - data, 0.0))
    clean = np.maximum(labelled - data - strag, 0.0)
    for arr in (data, strag, clean):
        arr[lost] = 0.0
    stage_part = _stage_imbalance(run, js, strag)  # a heavier pipeline stage, booked apart
    exposed, basis, reason = _exposed_comm(run, js, strag, clean)
    return _Split(data, strag - stage_part, stage_part, exposed, clean, basis, reason)


def _book_useful(seconds: dict[str, float], useful_s: float, ideal: float, split: _Split,
                 useful: np.ndarray) -> float:
    """Book the useful steps' ideal compute, straggler, stage and data waits into ``seconds``;
    return the useful time above all of them (jitter and stalls)."""
    strag, stage, data = split.strag[useful], split.stage[useful], split.data[useful]
    seconds["ideal_compute"] = ideal
    seconds["stragglers"] = float(strag.sum()) if len(strag) else 0.0
    seconds["stage_imbalance"] = float(stage.sum()) if len(stage) else 0.0
    waits = float(data.sum()) if len(data) else 0.0
    seconds["data_stall"] += waits
    return useful_s - ideal - seconds["stragglers"] - seconds["stage_imbalance"] - waits


def _carve_exposed(seconds: dict[str, float], split: _Split, rho: float | None, w: np.ndarray, labelled: np.ndarray,
                   in_win: np.ndarray, useful: np.ndarray) -> None:
    """Split the ideal compute into compute and exposed communication where the run states it (module
    docstring, rule 3): ``ρ_c`` from the clean times less exposed communication, at most ``ρ``."""
    if not split.exposed_basis or rho is None:
        return
    rho_c = _rho(np.maximum(split.clean - split.exposed, 0.0), w, labelled, in_win, useful)
    rho_c = min(max(rho_c if rho_c is not None else rho, 0.0), rho)
    work = float(w[useful].sum())
    seconds["exposed_comm"] = (rho - rho_c) * work
    seconds["ideal_compute"] = rho_c * work


def _residual(wall: float, seconds: dict[str, float]) -> float:
    """The wall time no category holds; float dust from the subtractions is shown as 0
    (|r| < 1e-10 W keeps the identity)."""
    residual = wall - sum(v for k, v in seconds.items() if k != "unaccounted")
    return 0.0 if abs(residual) < 1e-10 * max(wall, 1e-300) else residual


def account(
    run: Run,
    *,
    warmup_steps: int | None = None,
    step_range: tuple[int, int] | None = None,
    tolerance: float = 0.10,
    lookahead: int = 5,
    link: str | Link | None = None,
    nic: str | Link | None = None,
    sharding: str | None = None,
) -> Accounting:
    """Run the timeline sweep and the steady-state window; the basis of every other analysis.

    Options (keyword-only) override the steady-state window: ``warmup_steps`` drops that many
    leading steps of each attempt; ``step_range=(first, last)`` keeps only those trainer steps;
    ``tolerance`` and ``lookahead`` tune the warm-up detector. ``link`` and ``nic`` name the links
    collectives are compared with (:func:`~.communication.comm_efficiency`; an unknown name raises);
    ``sharding`` (``table_wise``, ``column_wise``, ``data_parallel``) how a recommendation model's
    tables are split, which sets its all-to-all (:func:`~.recsys.embedding_bandwidth`).
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a mfu_toolkit.run.Run; got {type(run).__name__}")
    warmup_steps, step_range, tolerance, lookahead = _checked_options(warmup_steps, step_range, tolerance, lookahead)
    check_link_options(link=link, nic=nic)
    if sharding is not None and sharding not in SHARDINGS:
        raise ValueError(f"sharding must be one of {', '.join(SHARDINGS)}; got {sharding!r}")
    js = _job_table(run)
    ev = _Events(run.events)
    n = len(js)
    lost = js["lost"].to_numpy(dtype=bool) if n else np.zeros(0, bool)
    seconds, labelled, useful_s = _sweep(run, js, ev, lost)
    work = _work(run, js)
    w = work.per_step
    split = _split_useful(run, js, labelled, lost)
    flags = _step_flags(run, js)
    window = _window(
        js, ev, labelled, w, flags, warmup_steps=warmup_steps, step_range=step_range,
        tolerance=tolerance, lookahead=lookahead,
    )
    in_win = window.steps["in_window"].to_numpy(dtype=bool) if n else np.zeros(0, bool)
    useful_mask = ~lost
    rho = _rho(split.clean, w, labelled, in_win, useful_mask)
    ideal = rho * float(w[useful_mask].sum()) if rho is not None else 0.0
    above = _book_useful(seconds, useful_s, ideal, split, useful_mask)
    stall = _stall(split.clean, w, rho, flags, useful_mask, above)
    seconds["stall"] = float(stall.sum())
    seconds["jitter"] = above - seconds["stall"]
    _carve_exposed(seconds, split, rho, w, labelled, in_win, useful_mask)
    seconds["unaccounted"] = _residual(run.t1 - run.t0, seconds)
    steps_out = _with_columns(
        js, labelled_s=labelled, **split.columns(), work=w, in_window=in_win,
        why=window.steps["why"].to_numpy() if n else np.zeros(0, object), flag=flags, stall_s=stall,
    )
    return Accounting(
        run=run, wall_s=run.t1 - run.t0, seconds=seconds, steps=steps_out, window=window, rho=rho,
        work_unit=work.unit, flops_per_unit=work.flops_per_unit, flops_reason=work.flops_reason,
        flops_source=work.flops_source, peak_reason=_peak_reason(run), exposed_comm_basis=split.exposed_basis,
        exposed_comm_reason=split.exposed_reason, link=link, nic=nic, sharding=sharding,
    )


def steady_state_window(
    run: Run,
    *,
    warmup_steps: int | None = None,
    step_range: tuple[int, int] | None = None,
    tolerance: float = 0.10,
    lookahead: int = 5,
) -> SteadyWindow:
    """Where warm-up ends and which steps define steady state, with the reason.

    Rule: per attempt, the reference is the median time per unit of work over the attempt's
    second half; warm-up ends at the first step whose own time and the median of the next
    ``lookahead`` steps are within ``max(tolerance, 3 robust SDs)`` of it (at most half of an
    attempt counts as warm-up). Steps redone after a restart, and steps overlapping init, eval
    or blocking checkpoint events, are left out. Override with ``warmup_steps`` (drop that many
    leading steps per attempt) or ``step_range=(first, last)``.
    """
    return account(
        run, warmup_steps=warmup_steps, step_range=step_range, tolerance=tolerance, lookahead=lookahead
    ).window
