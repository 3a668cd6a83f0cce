"""The MFU summary and the waterfall table of an accounting (:mod:`.accounting`).

:func:`mfu_summary` gives steady-state and end-to-end MFU (and HFU) with every denominator, or
the reason each is unknown; :func:`breakdown` the waterfall from steady-state to end-to-end MFU.
Both take a Run (accounted with the defaults, or the window options) or an
:class:`~.accounting.Accounting`, and are computed once per Accounting (its ``summary`` and
``waterfall``). The accounting identity, the timeline rule and the MFU formulas are in
:mod:`mfu_toolkit.analysis.accounting`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..formulas import MFUResult, compute_mfu, hfu
from ..formulas import mfu as _mfu
from ..run import Run
from .accounting import CATEGORIES, Accounting, accounted
from .reasons import Reason, hfu_unknown

__all__ = [
    "MFUSummary",
    "breakdown",
    "exposed_comm_note",
    "mfu_summary",
    "summary_of",
    "waterfall_of",
]


# --------------------------------------------------------------------------------------------
# MFU summary


@dataclass(frozen=True)
class MFUSummary:
    """Steady-state and end-to-end MFU (and HFU) with every denominator, or why not.

    ``steady_state_mfu`` uses the ideal step time (the typical rank's clean step time, as in
    the waterfall); ``window_mfu`` uses the *mean actual* step time over the steady-state
    window, straggler waits and jitter included — the number training papers usually report.
    """

    steady_state_mfu: float | None
    end_to_end_mfu: float | None
    steady_state_hfu: float | None
    end_to_end_hfu: float | None
    goodput: float
    wall_s: float
    ideal_compute_s: float
    ideal_step_s: float | None
    work_unit: str
    ideal_s_per_unit: float | None
    window_mfu: float | None
    useful_steps: int
    useful_work: float
    model_flops_per_unit: float | None
    useful_model_flops: float | None
    n_accelerators: int | None
    peak_flops_per_accelerator: float | None
    cluster_peak_flops: float | None
    accelerator: str | None
    dtype: str | None
    peak_sparse: bool
    peak_source: str | None
    model_flops_source: str | None
    window: dict[str, Any]
    steady: MFUResult | None = None
    reasons: dict[str, Reason] = field(default_factory=dict)
    # What n_accelerators counts and the peak is per ("device" or "package"), and the peak in
    # words with both figures for a multi-device package (RunMeta.peak_per_text).
    peak_per: str = "device"
    peak_per_text: str = ""

    def to_dict(self) -> dict[str, Any]:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "steady"}
        d["steady"] = None if self.steady is None else self.steady.to_dict()
        return d

    def to_frame(self) -> pd.DataFrame:
        """Tidy table: metric, value, note (the reason where a value is unknown)."""
        rows = []
        for k in (
            "steady_state_mfu", "window_mfu", "end_to_end_mfu", "steady_state_hfu", "end_to_end_hfu", "goodput",
            "wall_s", "ideal_compute_s", "ideal_step_s", "useful_steps", "model_flops_per_unit",
            "useful_model_flops", "n_accelerators", "peak_flops_per_accelerator", "cluster_peak_flops",
        ):
            v = getattr(self, k)
            rows.append({"metric": k, "value": np.nan if v is None else float(v), "note": self.reasons.get(k, "")})
        return pd.DataFrame(rows)

    def lines(self) -> list[str]:
        """Human-readable lines (MFU as a percentage; unknown values with their reason)."""

        def pct(name: str) -> str:
            v = getattr(self, name)
            return f"{v:.2%}" if v is not None else f"unknown ({self.reasons.get(name, '')})"

        out = [
            f"Steady-state MFU: {pct('steady_state_mfu')} (ideal step)",
            f"Steady-window MFU: {pct('window_mfu')} (mean actual step in the window)",
            f"End-to-end MFU: {pct('end_to_end_mfu')}",
        ]
        if self.steady_state_hfu is not None:
            out.append(f"Steady-state HFU: {pct('steady_state_hfu')}")
        out.append(f"Goodput (ideal compute / wall): {self.goodput:.2%}" if math.isfinite(self.goodput)
                   else "Goodput: n/a")
        out.append(f"Wall time: {self.wall_s:,.3f} s; ideal step: "
                   + (f"{self.ideal_step_s:.4g} s" if self.ideal_step_s is not None else "unknown"))
        if self.cluster_peak_flops:
            out.append(
                f"Denominator: {self.n_accelerators} × {self.peak_flops_per_accelerator / 1e12:,.1f} TFLOP/s"
                f" ({self.accelerator or '?'} {self.dtype or '?'}{', sparse' if self.peak_sparse else ''}"
                f" {self.peak_per_text or 'per ' + self.peak_per}; source: {self.peak_source or '?'})"
            )
        return out


_MFU_FIELDS = ("steady_state_mfu", "end_to_end_mfu", "steady_state_hfu", "end_to_end_hfu", "window_mfu")


def _unknown_why(acc: Accounting) -> Reason | str:
    """Why the MFUs are unknown (unknown FLOPs, peak or steady-state step time), or ``""``."""
    why = Reason.join(acc.flops_reason, acc.peak_reason)
    if acc.rho is None or acc.rho <= 0:
        empty = acc.window.empty_reason or "no useful steps with time"
        why = Reason.join(why, Reason(f"no steady-state step time ({empty})", code="no_steady_time"))
    return why


def _steady_result(acc: Accounting) -> MFUResult:
    """The steady-state MFU of the ideal step (formulas.compute_mfu), with the hardware FLOPs per
    step where the run gives the recomputation ratio (hardware / model FLOPs per step)."""
    m = acc.run.meta
    fpu, rho = acc.flops_per_unit, acc.rho
    assert fpu is not None and m.n_accelerators and m.peak_flops_per_accelerator and rho
    unit_per_step = acc.useful_work / acc.useful_steps
    step_flops = fpu * unit_per_step
    hw_step = None
    if m.hardware_flops_per_step and m.model_flops_per_step:
        hw_step = step_flops * float(m.hardware_flops_per_step) / float(m.model_flops_per_step)
    res = compute_mfu(
        model_flops_per_step=step_flops,
        step_s=rho * unit_per_step,
        n_accelerators=m.n_accelerators,
        peak_flops_per_accelerator=m.peak_flops_per_accelerator,
        hardware_flops_per_step=hw_step,
        samples_per_step=unit_per_step if acc.work_unit == "sample" else (
            m.global_batch if acc.work_unit == "step" else None),
        tokens_per_step=unit_per_step if acc.work_unit == "token" else (
            m.global_batch * m.seq_len if acc.work_unit == "step" and m.global_batch and m.seq_len else None),
        accelerator=m.accelerator,
        dtype=m.dtype,
        sparse=m.peak_sparse,
        peak_source=m.peak_source,
    )
    return res


def _window_mfu(acc: Accounting) -> float | None:
    """MFU of the mean actual step over the steady-state window (waits included)."""
    st, m = acc.steps, acc.run.meta
    win = st["in_window"].to_numpy(bool) & (st["work"].to_numpy(float) > 0)
    if not win.any():
        return None
    per_unit = float(st["labelled_s"].to_numpy(float)[win].sum() / st["work"].to_numpy(float)[win].sum())
    return float(_mfu(model_flops_per_step=acc.flops_per_unit, step_s=per_unit,
                      n_accelerators=m.n_accelerators, peak_flops_per_accelerator=m.peak_flops_per_accelerator))


def _known_figures(acc: Accounting, useful_flops: float | None) -> tuple[dict[str, Any], dict[str, Reason]]:
    """The MFUs and HFUs where FLOPs, peak and the ideal step are known, and the reasons for
    those still unknown (no useful time; no recomputation ratio for HFU)."""
    m = acc.run.meta
    n, p = m.n_accelerators, m.peak_flops_per_accelerator
    steady_res = _steady_result(acc)
    out: dict[str, Any] = dict.fromkeys(_MFU_FIELDS)
    out.update(steady=steady_res, steady_state_mfu=steady_res.mfu, window_mfu=_window_mfu(acc))
    reasons: dict[str, Reason] = {}
    if acc.wall_s > 0 and useful_flops:
        # end-to-end: useful model FLOPs over the whole wall time (formulas.mfu)
        out["end_to_end_mfu"] = float(_mfu(model_flops_per_step=useful_flops, step_s=acc.wall_s,
                                           n_accelerators=n, peak_flops_per_accelerator=p))
    else:
        reasons["end_to_end_mfu"] = Reason("no useful steps or zero wall time", code="no_useful_time")
    if steady_res.hfu is None:
        reasons["steady_state_hfu"] = reasons["end_to_end_hfu"] = hfu_unknown()
        return out, reasons
    out["steady_state_hfu"] = steady_res.hfu
    if out["end_to_end_mfu"] is not None:
        hw_useful = useful_flops * steady_res.hardware_flops_per_step / steady_res.model_flops_per_step
        out["end_to_end_hfu"] = float(hfu(hardware_flops_per_step=hw_useful,
                                          step_s=acc.wall_s, n_accelerators=n, peak_flops_per_accelerator=p))
    return out, reasons


def summary_of(acc: Accounting) -> MFUSummary:
    """The MFU summary of ``acc``, computed (``acc.summary`` holds it once computed)."""
    m = acc.run.meta
    fpu = acc.flops_per_unit
    useful_flops = fpu * acc.useful_work if fpu is not None else None
    n, p = m.n_accelerators, m.peak_flops_per_accelerator
    why = _unknown_why(acc)
    if why:
        figures: dict[str, Any] = {**dict.fromkeys(_MFU_FIELDS), "steady": None}
        reasons: dict[str, Reason] = dict.fromkeys(_MFU_FIELDS, why)
    else:
        figures, reasons = _known_figures(acc, useful_flops)
    if fpu is None:
        reasons["model_flops_per_unit"] = reasons["useful_model_flops"] = acc.flops_reason
    if acc.peak_reason:
        reasons["cluster_peak_flops"] = acc.peak_reason
    return MFUSummary(
        steady_state_mfu=figures["steady_state_mfu"],
        end_to_end_mfu=figures["end_to_end_mfu"],
        steady_state_hfu=figures["steady_state_hfu"],
        end_to_end_hfu=figures["end_to_end_hfu"],
        goodput=acc.goodput,
        wall_s=acc.wall_s,
        ideal_compute_s=acc.steady_s,
        ideal_step_s=acc.ideal_step_s,
        work_unit=acc.work_unit,
        ideal_s_per_unit=acc.rho,
        window_mfu=figures["window_mfu"],
        useful_steps=acc.useful_steps,
        useful_work=acc.useful_work,
        model_flops_per_unit=fpu,
        useful_model_flops=useful_flops,
        n_accelerators=n,
        peak_flops_per_accelerator=p,
        cluster_peak_flops=(n * p) if (n and p) else None,
        accelerator=m.accelerator,
        dtype=m.dtype,
        peak_sparse=m.peak_sparse,
        peak_source=m.peak_source,
        model_flops_source=acc.flops_source,
        window=acc.window.summary(),
        steady=figures["steady"],
        reasons=reasons,
        peak_per=m.peak_per,
        peak_per_text=m.peak_per_text(),
    )


def mfu_summary(
    run: Run | Accounting,
    *,
    warmup_steps: int | None = None,
    step_range: tuple[int, int] | None = None,
) -> MFUSummary:
    """Steady-state MFU, end-to-end MFU, HFU where recomputation is known, and all denominators.

    Unknown FLOPs or peak give ``None`` with the reason in ``reasons``; an MFU above 100 %
    raises :class:`~mfu_toolkit.formulas.MFUAbove100Error` (an input is wrong).
    """
    return accounted(run, warmup_steps=warmup_steps, step_range=step_range).summary


# --------------------------------------------------------------------------------------------
# the waterfall table


def breakdown(
    run: Run | Accounting,
    *,
    warmup_steps: int | None = None,
    step_range: tuple[int, int] | None = None,
) -> pd.DataFrame:
    """Wall time by category, as a waterfall between end-to-end and steady-state MFU.

    Columns: ``category``, ``seconds``, ``share`` (of wall time), ``efficiency_after`` and
    ``mfu_after``. The first row is ``ideal_compute`` (its ``*_after`` values are the run as it
    is: end-to-end). The loss categories follow, largest share first; each row's ``*_after`` is
    the value once that category *and every row above it* is removed, so the last row reaches
    steady state (``efficiency_after`` = 1, ``mfu_after`` = steady-state MFU). Read bottom-up,
    it is the waterfall from steady-state MFU down to end-to-end MFU. ``seconds`` sum to the
    wall time; ``mfu_after`` is NaN where FLOPs or the peak are unknown (``attrs['reasons']``).
    ``attrs`` also holds ``wall_s``, ``steady_state_mfu``, ``end_to_end_mfu`` and the rule.

    ``exposed_comm`` (communication with no compute beside it) is a row only where the run states it
    per step (``exposed_comm_s``, from a Kineto, Nsight Systems or XPlane trace): the part of the
    steady-state step that hiding the communication would recover, carved out of the ideal compute.
    It is part of the steady state, so its row comes last and its ``mfu_after`` is the MFU with it
    hidden, above the steady-state MFU (which keeps its meaning: ``end_to_end_mfu`` = steady-state
    MFU × (ideal_compute + exposed_comm) / wall). Elsewhere it is unknown, not zero, stays inside
    ``ideal_compute``, and ``attrs['exposed_comm']`` says so (:func:`exposed_comm_note`: ``stated``,
    ``seconds``, ``basis``, ``reason``).
    """
    return accounted(run, warmup_steps=warmup_steps, step_range=step_range).waterfall.copy()


def waterfall_of(acc: Accounting) -> pd.DataFrame:
    """The waterfall table of ``acc``, computed (``acc.waterfall`` holds it once computed)."""
    summ = acc.summary
    sec = acc.seconds
    exposed = bool(acc.exposed_comm_basis)
    # stall is listed only where a flagged outlier booked some: tables of other runs are unchanged
    losses = [c for c in CATEGORIES if c not in ("ideal_compute", "exposed_comm")
              and (c != "stall" or sec.get(c, 0.0) > 0)]
    rank = {c: i for i, c in enumerate(CATEGORIES)}
    losses.sort(key=lambda c: (-sec[c], rank[c]))
    # exposed_comm (where the run states it) is part of the steady-state step: its row comes last, the
    # MFU after hiding it, above the steady state
    order = ["ideal_compute", *losses, *(["exposed_comm"] if exposed else [])]
    wall = acc.wall_s
    ideal = sec["ideal_compute"]
    steady = ideal + (sec["exposed_comm"] if exposed else 0.0)  # the steady-state part of the wall time
    last_steady = order[-2] if exposed else order[-1]
    cols: dict[str, list[Any]] = {"category": [], "seconds": [], "share": [], "efficiency_after": [], "mfu_after": []}
    removed = 0.0
    for c in order:
        if c != "ideal_compute":
            removed += sec[c]
        remaining = wall - removed
        eff = steady / remaining if remaining > 0 and steady > 0 else float("nan")
        if c == last_steady and steady > 0:
            eff = 1.0  # every loss removed: exactly steady state
        m = summ.steady_state_mfu * eff if summ.steady_state_mfu is not None else float("nan")
        cols["category"].append(c)
        cols["seconds"].append(sec[c])
        cols["share"].append(sec[c] / wall if wall > 0 else float("nan"))
        cols["efficiency_after"].append(eff)
        cols["mfu_after"].append(m)
    df = pd.DataFrame(cols)
    df.attrs.update(
        {
            "wall_s": wall,
            "steady_state_mfu": summ.steady_state_mfu,
            "end_to_end_mfu": summ.end_to_end_mfu,
            "reasons": dict(summ.reasons),
            "window": acc.window.summary(),
            "rule": "see mfu_toolkit.analysis.accounting module docstring (timeline priority sweep)",
            "details": acc.details,
            "exposed_comm": exposed_comm_note(acc),
        }
    )
    return df


def exposed_comm_note(acc: Accounting) -> dict[str, Any]:
    """Whether the waterfall has an ``exposed_comm`` slice: ``stated``, its ``seconds`` (None where the
    run states none: unknown, inside ``ideal_compute``), and the ``basis`` or the ``reason``."""
    if acc.exposed_comm_basis:
        return {"stated": True, "seconds": float(acc.seconds["exposed_comm"]), "basis": acc.exposed_comm_basis,
                "reason": ""}
    return {"stated": False, "seconds": None, "basis": "", "reason": acc.exposed_comm_reason}
