"""GPU utilisation (what monitoring shows) beside MFU (useful model FLOPs), bin by bin.

A GPU that is "100 % utilised" by ``nvidia-smi`` may do little useful arithmetic: utilisation
counts time a kernel runs, MFU counts model FLOPs against the peak. :func:`gpu_util_mfu_table`
puts the two on one time axis, for the report's figure and for a notebook's own plots.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from .accounting import Accounting, accounted

__all__ = ["gpu_util_mfu_table"]


def _seconds(param: str, value: Any) -> float:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and math.isfinite(value)
    if not ok or value <= 0:
        raise ValueError(f"{param} must be a finite number > 0 (seconds); got {value!r}")
    return float(value)


_UTIL_SOURCES = ("auto", "gpu_util", "gpu_busy")


def _cumulative(t: np.ndarray, s: np.ndarray, e: np.ndarray, rate: np.ndarray) -> np.ndarray:
    """∫_{-∞}^{t} Σ_k rate_k·1[s_k ≤ τ < e_k] dτ at each t (piecewise-linear, vectorised)."""

    def part(points: np.ndarray) -> np.ndarray:
        o = np.argsort(points, kind="stable")
        p, r = points[o], rate[o]
        a = np.r_[0.0, np.cumsum(r)]
        b = np.r_[0.0, np.cumsum(r * p)]
        k = np.searchsorted(p, t, side="right")
        return t * a[k] - b[k]

    return part(s) - part(e)


def gpu_util_mfu_table(run: Run | Accounting, *, bin_s: float | None = None, source: str = "auto") -> pd.DataFrame:
    """Per time bin: GPU utilisation (as monitoring shows it) and MFU (useful model FLOPs).

    ``source``: ``gpu_util`` — ``run.tables["gpu_util"]`` (W&B system stats, ``util_pct`` per
    GPU and sample; the mean over GPUs and samples in the bin); ``gpu_busy`` — the profiler's
    per-step ``gpu_busy_s``/``gpu_idle_s`` (busy share of the steps that start in the bin);
    ``auto`` — the first present. MFU per bin is the useful model FLOPs done in it (each useful
    step's FLOPs spread evenly over its span; redone steps count zero, as end to end) over the
    bin's length × N × peak, so the time-weighted mean over the run is the end-to-end MFU.
    Columns: ``time_s`` (bin start, since the first event), ``bin_s``, ``gpu_util``, ``mfu``
    (fractions); ``attrs['source']`` names the utilisation source.
    """
    acc = accounted(run)
    r = acc.run
    source = _util_source(r, source)
    m = r.meta
    if acc.flops_per_unit is None or not m.n_accelerators or not m.peak_flops_per_accelerator:
        why = "; ".join(x for x in (acc.flops_reason, acc.peak_reason) if x)
        raise ValueError(f"run has no MFU to compare with: {why}")
    t0, t1 = r.t0, r.t1
    wall = t1 - t0
    if bin_s is None:
        bin_s = _default_util_bin(r, acc, source, wall)
    else:
        bin_s = _seconds("bin_s", bin_s)
    n_bins = max(1, int(math.ceil(wall / bin_s - 1e-9)))
    edges = t0 + np.minimum(np.arange(n_bins + 1) * bin_s, wall)
    width = np.diff(edges)
    mfu = _binned_mfu(acc, edges) / (width * m.n_accelerators * m.peak_flops_per_accelerator)
    if source == "gpu_util":
        tot, cnt, label = _util_from_table(r.tables["gpu_util"], edges, t0, t1)
    else:
        tot, cnt, label = _util_from_busy(r.steps, edges)
    util = np.divide(tot, cnt, out=np.full(n_bins, np.nan), where=cnt > 0)
    out = pd.DataFrame({"time_s": edges[:-1] - t0, "bin_s": width, "gpu_util": util, "mfu": mfu})
    out.attrs["source"] = source
    out.attrs["source_detail"] = label
    return out


def _util_source(r: Run, source: str) -> str:
    """The utilisation source to read (``auto`` resolved); raises when the run lacks it, naming what is needed."""
    if not isinstance(source, str) or source not in _UTIL_SOURCES:
        raise ValueError(f"source must be one of {', '.join(map(repr, _UTIL_SOURCES))}; got {source!r}")
    has_table = "gpu_util" in r.tables and len(r.tables["gpu_util"]) > 0
    has_busy = {"gpu_busy_s", "gpu_idle_s"} <= set(r.steps.columns)
    asked = source
    if source == "auto":
        source = "gpu_util" if has_table else ("gpu_busy" if has_busy else "none")
    if source == "none" or (source == "gpu_util" and not has_table) or (source == "gpu_busy" and not has_busy):
        which = "" if asked == "auto" else f" for source={asked!r}"
        raise ValueError(
            f"run has no GPU utilisation{which}: it needs tables['gpu_util'] (time_s, util_pct; "
            f"W&B system stats) or steps columns gpu_busy_s and gpu_idle_s (a profiler trace); tables present: "
            f"{sorted(r.tables) or 'none'}"
        )
    return source


def _default_util_bin(r: Run, acc: Accounting, source: str, wall: float) -> float:
    """The default bin: 1/80 of the run, widened to a median step and two sampling intervals so bins hold data."""
    spans = acc.steps["span_s"].to_numpy(float)
    bin_s = max(wall / 80.0, float(np.median(spans)) if len(spans) else 0.0, 1e-9)
    if source == "gpu_util":
        ts = np.unique(r.tables["gpu_util"]["time_s"].to_numpy(float))
        if len(ts) > 1:
            bin_s = max(bin_s, 2.0 * float(np.median(np.diff(ts))))
    return bin_s


def _binned_mfu(acc: Accounting, edges: np.ndarray) -> np.ndarray:
    """Useful model FLOPs done in each bin: each useful step's spread evenly over its span, redone steps none."""
    st = acc.steps
    ok = (~st["lost"].to_numpy(bool)) & (st["work"].to_numpy(float) > 0) & (st["span_s"].to_numpy(float) > 0)
    s = st["start_s"].to_numpy(float)[ok]
    e = st["end_s"].to_numpy(float)[ok]
    flops = acc.flops_per_unit * st["work"].to_numpy(float)[ok]
    cum = _cumulative(edges, s, e, flops / (e - s))
    return np.diff(cum)


def _util_from_table(g: pd.DataFrame, edges: np.ndarray, t0: float,
                     t1: float) -> tuple[np.ndarray, np.ndarray, str]:
    """Sum and count of the utilisation samples (as fractions) in each bin, from W&B system stats; and its name."""
    n_bins = len(edges) - 1
    col = "util_pct" if "util_pct" in g.columns else next((c for c in g.columns if "util" in str(c).lower()), None)
    if col is None or "time_s" not in g.columns:
        raise ValueError(f"run.tables['gpu_util'] needs columns time_s and util_pct; got {list(g.columns)}")
    tt = g["time_s"].to_numpy(float)
    v = pd.to_numeric(g[col], errors="coerce").to_numpy(float)
    keep = np.isfinite(tt) & np.isfinite(v)
    tt, v = tt[keep], v[keep]
    frac = v / 100.0 if (len(v) and np.nanmax(v) > 1.0) or col.endswith("pct") else v
    b = np.clip(np.searchsorted(edges, tt, side="right") - 1, 0, n_bins - 1)
    inside = (tt >= t0) & (tt <= t1)
    tot = np.bincount(b[inside], weights=frac[inside], minlength=n_bins)
    cnt = np.bincount(b[inside], minlength=n_bins)
    return tot, cnt, f"tables['gpu_util'][{col!r}]"


def _util_from_busy(rs: pd.DataFrame, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, str]:
    """Busy and busy + idle seconds of the steps starting in each bin, from a profiler's columns; and its name."""
    n_bins = len(edges) - 1
    busy = pd.to_numeric(rs["gpu_busy_s"], errors="coerce").to_numpy(float)
    idle = pd.to_numeric(rs["gpu_idle_s"], errors="coerce").to_numpy(float)
    keep = np.isfinite(busy) & np.isfinite(idle)
    b = np.clip(np.searchsorted(edges, rs["start_s"].to_numpy(float)[keep], side="right") - 1, 0, n_bins - 1)
    tot = np.bincount(b, weights=busy[keep], minlength=n_bins)
    cnt = np.bincount(b, weights=busy[keep] + idle[keep], minlength=n_bins)
    return tot, cnt, "steps gpu_busy_s / (gpu_busy_s + gpu_idle_s)"
