"""Seaborn/matplotlib figures of the analyses: where the compute goes, at a glance.

Every function draws into ``ax`` (a new figure of a suitable size when ``ax`` is None) and
returns the Axes; none calls ``plt.show()``. Options are keyword-only; a bad option raises
with the parameter's name, the allowed values and the value received. The figures only call
:mod:`mfu_toolkit.analysis`; they compute nothing the analyses do not already define.

- :func:`waterfall`                 steady-state MFU → end-to-end MFU, one bar per category
- :func:`timeline`                  attempts, steps (as spans), evals, checkpoints, failures
- :func:`step_times`                job-level step time with the steady-state window shaded
- :func:`rank_heatmap`              per-rank × step time relative to the step's median rank
- :func:`spread_distribution`       distribution of the per-step spread (max − median rank)
- :func:`expected_step_time`        E[slowest of N ranks] as N grows (order statistics)
- :func:`checkpoint_overhead_curve` overhead vs checkpoint interval, Young/Daly optima marked
- :func:`scaling_efficiency`        efficiency (or throughput vs ideal linear) vs accelerators
- :func:`mfu_vs_gpu_util`           what nvidia-smi shows (GPU utilisation) vs MFU over time;
  its data comes from :func:`~mfu_toolkit.analysis.gpu_util_mfu_table`
- :func:`replay_waterfall`          a replayed step from its ideal up to actual (what-if replay)
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

import matplotlib as mpl
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import (
    FixedLocator,
    FuncFormatter,
    MaxNLocator,
    NullFormatter,
    NullLocator,
    PercentFormatter,
)
from matplotlib.transforms import Bbox

from .analysis import (
    Accounting,
    SteadyWindow,
    breakdown,
    daly_interval,
    interval_table,
    job_steps,
    scaling_table,
    steady_state_window,
    step_spread,
    young_interval,
)
from .analysis.checkpoint import CHECKPOINT_MODES, checkpoint_overhead
from .analysis.stragglers import rank_matrix
from .analysis.utilisation import gpu_util_mfu_table
from .intervals import union
from .run import Run
from .scenarios.order_stats import DISTRIBUTIONS, sync_step_time

__all__ = [
    "waterfall",
    "timeline",
    "step_times",
    "rank_heatmap",
    "spread_distribution",
    "expected_step_time",
    "checkpoint_overhead_curve",
    "scaling_efficiency",
    "gpu_util_mfu_table",
    "mfu_vs_gpu_util",
    "TIME_UNITS",
    "ROOM_STYLE",
    "roofline",
    "replay_waterfall",
]

TIME_UNITS: dict[str, float] = {"s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0}
# Figures for a projector: 110 dpi and 12-pt text (at 7 in wide a figure spans ~770 px, its labels
# stay readable from the back of a room); annotation text uses relative sizes so it follows.
# ``plt.rcParams.update(ROOM_STYLE)`` in a notebook's setup cell.
ROOM_STYLE: dict[str, Any] = {
    "figure.dpi": 110, "font.size": 12, "axes.titlesize": 13, "axes.labelsize": 12,
    "xtick.labelsize": 11, "ytick.labelsize": 11, "legend.fontsize": 11,
}
_PAL = sns.color_palette("deep")
_BLUE, _ORANGE, _GREEN, _RED, _PURPLE, _BROWN, _PINK, _GREY, _OLIVE, _CYAN = _PAL[:10]
_LEGEND_OUT: dict[str, Any] = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False}

# --------------------------------------------------------------------------------------------
# shared helpers


def _axes(ax: Axes | None, figsize: tuple[float, float]) -> tuple[Axes, bool]:
    """The Axes to draw into, and whether this call created its figure."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, new = plt.subplots(figsize=figsize)
        return new, True
    if not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")
    return ax, False


def _check_ax(ax: Any) -> None:
    """Fail fast, before any analysis runs, when ``ax`` is not an Axes."""
    if ax is not None and not isinstance(ax, Axes):
        raise TypeError(f"ax must be a matplotlib Axes or None; got {type(ax).__name__}")


def _finish(ax: Axes, created: bool) -> Axes:
    if created:
        ax.figure.tight_layout()
    return ax


def _set_title(ax: Axes, label: str, **kwargs: Any) -> None:
    """``ax.set_title``, placed where Matplotlib would place it without searching on every draw.

    Unless told otherwise, Matplotlib re-places a title on each draw in case x tick labels sit
    above the Axes, which measures every y tick label first. With the x ticks and label at the
    bottom and no y-axis offset text (the plots that call this format y as percentages), that
    search always ends at the default height, so the title is pinned there.
    """
    if (mpl.rcParams["axes.titley"] is None and "y" not in kwargs
            and ax.xaxis.get_ticks_position() == "bottom" and ax.xaxis.get_label_position() == "bottom"):
        kwargs["y"] = 1.0
    ax.set_title(label, **kwargs)


def _as_run(value: Any, param: str) -> tuple[Run, Accounting | None]:
    if isinstance(value, Accounting):
        return value.run, value
    if isinstance(value, Run):
        return value, None
    raise TypeError(f"{param} must be a Run or an Accounting (from analysis.account); got {type(value).__name__}")


def _choice(param: str, value: Any, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{param} must be one of {', '.join(map(repr, allowed))}; got {value!r}")
    return value


def _int_at_least(param: str, value: Any, lo: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
        raise ValueError(f"{param} must be an integer >= {lo}; got {value!r}")
    return int(value)


def _number(param: str, value: Any, *, lo: float = 0.0, strict: bool = True, unit: str = "") -> float:
    ok = isinstance(value, (int, float, np.number)) and not isinstance(value, bool) and math.isfinite(value)
    ok = ok and (value > lo if strict else value >= lo)
    if not ok:
        raise ValueError(f"{param} must be a finite number {'>' if strict else '>='} {lo:g}{unit}; got {value!r}")
    return float(value)


def _frame(param: str, value: Any, columns: Sequence[str]) -> pd.DataFrame:
    if not isinstance(value, pd.DataFrame):
        raise TypeError(f"{param} must be a DataFrame; got {type(value).__name__}")
    missing = [c for c in columns if c not in value.columns]
    if missing:
        raise ValueError(f"{param} must have columns {list(columns)}; missing {missing}; got {list(value.columns)}")
    return value


def _time_unit(unit: str, span_s: float) -> tuple[str, float]:
    """(unit name, seconds per unit); ``auto`` picks one that keeps the axis numbers short."""
    _choice("time_unit", unit, ("auto", *TIME_UNITS))
    if unit != "auto":
        return unit, TIME_UNITS[unit]
    for name, limit in (("s", 1200.0), ("min", 3 * 3600.0), ("h", 3 * 86400.0)):
        if span_s <= limit:
            return name, TIME_UNITS[name]
    return "d", TIME_UNITS["d"]


def _duration(seconds: float) -> str:
    """A short human duration: 950 ms, 12.3 s, 4.2 min, 1.5 h, 2.1 d."""
    s = abs(float(seconds))
    sign = "-" if seconds < 0 else ""
    if s == 0:
        return "0 s"
    if s < 1:
        return f"{sign}{s * 1e3:.3g} ms"
    if s < 120:
        return f"{sign}{s:.3g} s"
    if s < 2 * 3600:
        return f"{sign}{s / 60:.3g} min"
    if s < 2 * 86400:
        return f"{sign}{s / 3600:.3g} h"
    return f"{sign}{s / 86400:.3g} d"


def _in_unit(seconds: float, unit: str, *, noise_s: float = 0.0) -> str:
    """``seconds`` in one chosen unit (every label of a figure in the same one); a magnitude below
    ``noise_s`` (float noise of a subtraction, e.g. 2.7e-9 s of a 10-minute job) reads as 0."""
    value = 0.0 if abs(seconds) <= noise_s else seconds / TIME_UNITS[unit]
    return f"{value:.3g} {unit}" if value else f"0 {unit}"


def _duration_tick(seconds: float) -> str:
    """A tick label in the largest whole-ish unit: 30 s, 5 min, 2 h, 1 d."""
    if seconds <= 0:
        return "0"
    if seconds < 1:
        return f"{seconds * 1e3:g} ms"
    for name in ("d", "h", "min"):
        if seconds >= TIME_UNITS[name]:
            return f"{seconds / TIME_UNITS[name]:.3g} {name}"
    return f"{seconds:.3g} s"


_NICE_DURATIONS = np.array(
    [0.001, 0.01, 0.1, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 3 * 3600, 6 * 3600,
     12 * 3600, 86400, 2 * 86400, 7 * 86400, 14 * 86400, 30 * 86400, 90 * 86400, 365 * 86400], dtype=float
)


def _duration_axis(ax: Axes, lo: float, hi: float, axis: str = "x") -> None:
    """Log-scale duration ticks at round values (s, min, h, d) between ``lo`` and ``hi``."""
    ticks = _NICE_DURATIONS[(_NICE_DURATIONS >= lo) & (_NICE_DURATIONS <= hi)]
    while len(ticks) > 7:
        ticks = ticks[::2]
    a = ax.xaxis if axis == "x" else ax.yaxis
    a.set_major_locator(FixedLocator(ticks))
    a.set_major_formatter(FuncFormatter(lambda x, _pos: _duration_tick(x)))
    a.set_minor_formatter(NullFormatter())
    if axis == "x":
        _MinorTickMarks.replace_ticks(ax)


class _MinorTickMarks(Line2D):
    """An x axis's unlabelled minor ticks drawn as one marker line.

    The same marks in the same places as the axis's own minor ticks: its minor locator, asked
    at draw time (so they follow any later change of the limits), minus the places of major
    ticks, inside the view, styled at draw time like the axis's minor tick marks (so
    ``tick_params(which="minor", ...)`` still applies). But one artist, where the axis makes a
    ``Tick`` (three lines and two texts) per place: a log axis over a few decades makes about
    thirty on each first draw, a fifth of the time to render a small figure. Minor ticks the
    marks cannot draw (at the top, or with a minor grid) go back to the axis; a minor locator
    set later (``minorticks_on``/``off``, ``set_minor_locator``) takes over from the marks.
    """

    @classmethod
    def replace_ticks(cls, ax: Axes) -> None:
        axis = ax.xaxis
        if cls._axis_only(axis.get_minor_ticks(1)[0]):
            return
        marks = cls(axis.get_minor_locator())
        axis.set_minor_locator(marks._null)
        ax.add_artist(marks)

    @staticmethod
    def _axis_only(tick: Any) -> bool:
        return tick.tick2line.get_visible() or tick.gridline.get_visible()

    def __init__(self, locator: Any) -> None:
        # drawn before the axis (whose zorder is 0.5, 1.5 or 2.5), so that handing the ticks
        # back to it during a draw still shows them in that draw
        super().__init__([], [], linestyle="none", label="_minor ticks", gid="minor_ticks", clip_on=False,
                         zorder=0.4)
        self._locator = locator  # still bound to the axis: it reads the view limits
        self._null = NullLocator()  # the axis's minor locator while the marks stand in

    def _place(self) -> bool:
        ax = self.axes
        axis = ax.xaxis
        if not (ax.axison and axis.get_visible()) or axis.get_minor_locator() is not self._null:
            return False
        template = axis.get_minor_ticks(1)[0]
        if self._axis_only(template):
            axis.set_minor_locator(self._locator)
            self.remove()
            return False
        self.update_from(template.tick1line)  # marker, size, width, colour, visibility, transform
        self.set(linestyle="none", label="_minor ticks", clip_on=False)  # not the template's
        locs = np.asarray(self._locator(), dtype=float)
        scale = axis.get_transform()
        lo, hi = sorted(scale.transform(axis.get_view_interval()))
        tr = scale.transform(locs)
        major = np.asarray(axis.get_majorticklocs(), dtype=float)
        if len(locs) and len(major) and axis.remove_overlapping_locs:  # as Axis.get_minorticklocs
            dup = np.isclose(tr[:, None], scale.transform(major)[None, :], atol=(hi - lo) * 1e-5, rtol=0)
            locs, tr = locs[~dup.any(axis=1)], tr[~dup.any(axis=1)]
        tol = (hi - lo) * 1e-10  # as Axis._update_ticks: inside the view up to float noise
        locs = locs[(tr >= lo - tol) & (tr <= hi + tol)]
        self.set_data(locs, np.zeros(len(locs)))
        return len(locs) > 0

    def get_window_extent(self, renderer: Any = None) -> Bbox:
        return super().get_window_extent(renderer) if self._place() else Bbox.null()

    def draw(self, renderer: Any) -> None:
        if self._place():
            super().draw(renderer)
        self.stale = False


_count_formatter = FuncFormatter(lambda x, _pos: f"{x:,.0f}" if x >= 1 else f"{x:g}")
_PRETTY = {
    "ideal_compute": "ideal compute",
    "data_stall": "data stall",
    "checkpoint_save": "checkpoint save",
    "checkpoint_load": "checkpoint load",
    "lost_work": "lost work",
    "failure_downtime": "failure downtime",
    "other_events": "other events",
    "exposed_comm": "exposed communication",
}


def _pretty(category: str) -> str:
    return _PRETTY.get(category, str(category).replace("_", " "))


def _percent(ax: Axes, axis: str = "y", decimals: int | None = None) -> None:
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(PercentFormatter(xmax=1.0, decimals=decimals))


# --------------------------------------------------------------------------------------------
# 1. waterfall

_WATERFALL_COLUMNS = ("category", "seconds", "share", "efficiency_after", "mfu_after")
_WATERFALL_METRICS = ("auto", "mfu", "efficiency")


def waterfall(
    table: pd.DataFrame | Run | Accounting,
    *,
    metric: str = "auto",
    show_zero: bool = False,
    ax: Axes | None = None,
) -> Axes:
    """Waterfall from steady-state MFU down to end-to-end MFU, one bar per category.

    ``table`` is a :func:`~mfu_toolkit.analysis.breakdown` table (a Run or Accounting goes
    through ``breakdown`` first). Starting at the steady-state MFU ``S``, each loss category, in
    the table's order (largest share of wall time first), takes ``S × share`` — so the bars are
    proportional to the seconds lost, and they add up exactly, because end-to-end MFU =
    ``S × ideal_compute / wall``. The last bar is the ideal compute that remains: its top is the
    end-to-end MFU. Bars are labelled with their seconds and share; dashed lines mark both MFUs.
    (The table's ``mfu_after`` is the other view: the MFU after *fixing* categories in order.)

    ``metric``: ``mfu``; ``efficiency`` (the same walk in shares of wall time, from 100 % at
    steady state down to ideal compute / wall, which needs no FLOPs or peak); ``auto`` takes
    ``mfu`` when the table has it, else ``efficiency``, with a y-label that says so.
    ``show_zero`` keeps categories with zero seconds. Where the table has an ``exposed_comm`` row
    (communication with no compute beside it, which a trace states per step) it is part of the
    steady state, not a loss: the top of the ideal-compute bar, hatched. Elsewhere the table has no
    such row, since it is unknown, not zero, and stays inside the ideal compute bar.
    """
    _check_ax(ax)
    t = _waterfall_input(table, metric, show_zero)
    metric, scale = _waterfall_metric(t, metric)
    shares = np.nan_to_num(t["share"].to_numpy(float))
    seconds = t["seconds"].to_numpy(float)
    cats = t["category"].astype(str).to_numpy()
    wall = float(np.nansum(np.abs(seconds)))
    noise = 1e-9 * wall  # float noise of the accounting's subtractions (2.7e-9 s of a job), not a loss
    exposed = [i for i in range(1, len(t)) if cats[i] == "exposed_comm"]  # part of the steady state, not a loss
    keep = [i for i in range(1, len(t)) if i not in exposed and (show_zero or abs(seconds[i]) > noise)]
    part = scale * float(shares[exposed].sum())
    top, bottom = scale, scale * shares[0] + part
    ax, created = _axes(ax, (max(6.0, 0.75 * (len(keep) + 1) + 2.5), 4.6))
    xs = np.arange(len(keep) + 1)
    # the losses walk down from the top, each starting where the previous one ended; then the
    # ideal compute that remains. One bar call and one set of connectors for all of them.
    drops = scale * shares[keep]
    before = _waterfall_bars(ax, xs, top, drops, bottom)
    if exposed:
        _waterfall_exposed(ax, xs[-1], bottom - part, part, seconds[exposed[0]], noise)
    _waterfall_bar_labels(ax, xs, keep, drops, before, seconds, shares, noise, top=top, bottom=bottom - part)
    ax.axhline(top, color="0.25", linewidth=1.0, linestyle="--", zorder=0)
    ax.axhline(bottom, color="0.25", linewidth=1.0, linestyle="--", zorder=0)
    ax.set_xticks(xs, [_pretty(cats[i]) for i in keep] + [_pretty(cats[0])], rotation=30, ha="right",
                  rotation_mode="anchor")
    ax.set_xlim(-0.6, xs[-1] + 0.6)
    ax.set_xlabel("loss category, largest share of wall time first")
    walk = np.delete(shares, [0, *exposed])
    low = min(0.0, float(np.min(top - scale * np.cumsum(walk)))) if len(walk) else 0.0
    y0, y1 = low - 0.14 * top, top * 1.12
    ax.set_ylim(y0, y1)
    _waterfall_mfu_labels(ax, metric, top, bottom, y0, y1)
    _waterfall_style(ax, metric, top)
    return _finish(ax, created)


def _waterfall_input(table: Any, metric: str, show_zero: Any) -> pd.DataFrame:
    """The breakdown table to draw (a Run or Accounting goes through ``breakdown``), options checked first."""
    if isinstance(table, (Run, Accounting)):
        table = breakdown(table)
    t = _frame("table", table, _WATERFALL_COLUMNS)
    _choice("metric", metric, _WATERFALL_METRICS)
    if not isinstance(show_zero, bool):
        raise ValueError(f"show_zero must be True or False; got {show_zero!r}")
    if len(t) == 0 or t["category"].iloc[0] != "ideal_compute":
        raise ValueError(
            "table must be a breakdown() table whose first row is 'ideal_compute'; got first category "
            f"{t['category'].iloc[0] if len(t) else None!r}"
        )
    return t


def _waterfall_metric(t: pd.DataFrame, metric: str) -> tuple[str, float]:
    """The metric drawn (``auto`` resolved) and the bars' top: the steady-state MFU, or 1 for efficiency."""
    attrs = t.attrs if isinstance(t.attrs, dict) else {}
    steady = attrs.get("steady_state_mfu")
    if steady is None or not math.isfinite(steady):
        steady = float(t["mfu_after"].iloc[-1])
    mfu_ok = math.isfinite(steady) and steady > 0
    if metric == "auto":
        metric = "mfu" if mfu_ok else "efficiency"
    elif metric == "mfu" and not mfu_ok:
        why = attrs.get("reasons", {}).get("steady_state_mfu") or "model FLOPs or peak unknown"
        raise ValueError(f"metric='mfu' needs a table with a steady-state MFU; this one has none ({why}); "
                         "use metric='efficiency'")
    return metric, (steady if metric == "mfu" else 1.0)


def _waterfall_bars(ax: Axes, xs: np.ndarray, top: float, drops: np.ndarray, bottom: float) -> np.ndarray:
    """Draw the losses walking down from ``top``, the ideal compute left, and their connectors.

    Returns the level before each loss (where its bar starts), which places the labels."""
    levels = np.subtract.accumulate(np.r_[top, drops])  # top, then the level after each loss
    before, after = levels[:-1], levels[1:]
    lx = xs[:-1]
    ax.bar(xs, np.r_[drops, bottom], bottom=np.r_[after, 0.0], width=0.7,
           color=[_RED if d >= 0 else _GREEN for d in drops] + [_BLUE], edgecolor="none")
    if len(drops):
        ax.hlines(after, lx + 0.35, lx + 0.65, colors="0.5", linewidth=0.8, linestyles=":")
    return before


def _waterfall_exposed(ax: Axes, x: float, base: float, part: float, seconds: float, noise: float) -> None:
    """The exposed communication inside the steady state: the top of the ideal-compute bar, hatched, labelled."""
    ax.bar([x], [part], bottom=[base], width=0.7, color="none", edgecolor=_RED, hatch="///", linewidth=0.0)
    unit, _ = _time_unit("auto", abs(seconds))
    ax.text(x, base + part / 2, f"of which exposed\ncommunication {_in_unit(seconds, unit, noise_s=noise)}",
            ha="center", va="center", fontsize="small",
            bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.6})


def _waterfall_bar_labels(ax: Axes, xs: np.ndarray, keep: list[int], drops: np.ndarray, before: np.ndarray,
                          seconds: np.ndarray, shares: np.ndarray, noise: float, *, top: float,
                          bottom: float) -> None:
    """Label each bar with its seconds (one unit for all) and share: losses below their bar, ideal inside."""
    pad = 0.015 * top
    label_box = {"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 0.6}
    unit, _ = _time_unit("auto", float(np.nanmax(np.abs(seconds))) if len(seconds) else 0.0)

    def label(i: int) -> str:
        share = 0.0 if abs(seconds[i]) <= noise else shares[i]
        return f"{_in_unit(seconds[i], unit, noise_s=noise)}\n{share:.1%}"

    for x, i, d, level in zip(xs[:-1], keep, drops, before, strict=True):
        ax.text(x, min(level - d, level) - pad, label(i),
                ha="center", va="top", fontsize="small", bbox=label_box)
    xi = xs[-1]
    ax.text(xi, bottom / 2 if bottom > 0.15 * top else bottom + pad, label(0),
            ha="center", va="center" if bottom > 0.15 * top else "bottom", fontsize="small", bbox=label_box)


def _waterfall_mfu_labels(ax: Axes, metric: str, top: float, bottom: float, y0: float, y1: float) -> None:
    """Name both MFUs (or efficiencies) in the right margin, pushed apart when they are close."""
    names = ("steady-state MFU", "end-to-end MFU") if metric == "mfu" else ("steady state", "end to end")
    axes_pt = ax.get_position().height * ax.figure.get_figheight() * 72.0
    sep = min(30.0 / max(axes_pt, 1.0), 0.5) * (y1 - y0)  # two 9-pt lines
    nudge = max(0.0, (sep - (top - bottom)) / 2)
    for level, y, name in ((top, top + nudge, names[0]), (bottom, bottom - nudge, names[1])):
        ax.annotate(f"{name}\n{level:.1%}", xy=(1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                    textcoords="offset points", ha="left", va="center", fontsize="medium")


def _waterfall_style(ax: Axes, metric: str, top: float) -> None:
    """Percent y axis, the label and title that say which metric is drawn, grid and spines."""
    _percent(ax, decimals=0 if top >= 0.05 else 1)
    if metric == "mfu":
        ax.set_ylabel("MFU (% of peak FLOP/s)")
        _set_title(ax, "From steady-state to end-to-end MFU")
    else:
        ax.set_ylabel("efficiency: share of wall time\n(MFU unknown: no model FLOPs or peak)")
        _set_title(ax, "From steady state to end to end (efficiency)")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    sns.despine(ax=ax)


# --------------------------------------------------------------------------------------------
# 2. timeline

# lane key -> (label, colour); top to bottom
_LANES: tuple[tuple[str, str, Any], ...] = (
    ("attempts", "attempts", _GREY),
    ("init", "init", _PURPLE),
    ("checkpoint_load", "checkpoint load", _BROWN),
    ("steps", "training steps", _BLUE),
    ("lost_steps", "steps redone later", _ORANGE),
    ("data_load", "data load", _OLIVE),
    ("eval", "eval", _GREEN),
    ("checkpoint_save", "checkpoint save", _CYAN),
    ("checkpoint_background", "checkpoint write (async)", _CYAN),
    ("failure", "failure / downtime", _RED),
    ("restart", "restart", _PINK),
    ("queue", "queue", _GREY),
    ("other", "other events", _GREY),
)
_BACKGROUND_WORDS = ("async", "background")


def _merge_spans(start: np.ndarray, end: np.ndarray, tol: float) -> list[tuple[float, float]]:
    """``(start, width)`` of the union of intervals, joining those separated by at most ``tol``."""
    us, ue = union(start, end, gap=tol)
    return [(float(a), float(b - a)) for a, b in zip(us, ue, strict=True)]


def timeline(
    run: Run | Accounting,
    *,
    time_unit: str = "auto",
    gap_tolerance: float = 0.25,
    ax: Axes | None = None,
) -> Axes:
    """Gantt chart of a run: attempts, steps, init, evals, checkpoints, failures, restarts.

    Steps are collapsed into spans: consecutive job-level steps of one attempt join while the gap
    between them is at most ``gap_tolerance`` × the median step time, so a long run draws a few
    bars, not thousands. Steps that a later attempt redid get their own lane. Events of every
    rank are merged per kind; asynchronous checkpoint writes (``detail`` mentions async or
    background) get their own lane. ``time_unit``: ``auto``, ``s``, ``min``, ``h`` or ``d``.
    """
    _check_ax(ax)
    r, _acc = _as_run(run, "run")
    gap_tolerance = _number("gap_tolerance", gap_tolerance, strict=False)
    js = job_steps(r)
    js = js[js["end_s"] > js["start_s"]]
    t0 = r.t0 if (len(r.steps) or len(r.events)) else 0.0
    t1 = r.t1 if (len(r.steps) or len(r.events)) else 1.0
    unit, f = _time_unit(time_unit, t1 - t0)
    spans: dict[str, list[tuple[float, float]]] = {k: [] for k, _l, _c in _LANES}
    tol = gap_tolerance * float(np.median(js["span_s"])) if len(js) else 0.0
    for (_att, lost), g in js.groupby(["attempt", "lost"], sort=True):
        key = "lost_steps" if lost else "steps"
        spans[key] += _merge_spans(g["start_s"].to_numpy(float), g["end_s"].to_numpy(float), tol)
    points = _event_spans(r.events, spans)
    attempts = _attempt_bounds(r)
    spans["attempts"] = [(s, e - s) for _a, s, e in attempts]
    lanes = [(k, lab, c) for k, lab, c in _LANES if spans[k] or points.get(k) or k in ("attempts", "steps")]
    ax, created = _axes(ax, (10.0, 0.42 * len(lanes) + 1.6))
    for y, (key, _label, color) in enumerate(lanes):
        segs = [((s - t0) / f, w / f) for s, w in spans[key]]
        marks = (np.asarray(points[key]) - t0) / f if points.get(key) else None
        _timeline_lane(ax, y, key, color, segs, marks, attempts, wide=(t1 - t0) / f * 0.06)
    ax.set_yticks(range(len(lanes)), [lab for _k, lab, _c in lanes])
    ax.set_ylim(len(lanes) - 0.4, -0.6)
    span = (t1 - t0) / f
    ax.set_xlim(-0.01 * span, span * 1.01)
    ax.set_xlabel(f"time since the first event ({unit})")
    ax.set_title(f"Run timeline: {r.n_attempts} attempt{'s' if r.n_attempts != 1 else ''}, "
                 f"{len(js):,} timed steps")
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    sns.despine(ax=ax, left=True)
    ax.tick_params(axis="y", length=0)
    return _finish(ax, created)


def _event_spans(ev: pd.DataFrame, spans: dict[str, list[tuple[float, float]]]) -> dict[str, list[float]]:
    """Add the events' merged spans to their lanes in ``spans``; returns the instants of zero-length events.

    Events of every rank are merged per kind; background checkpoint writes get their own lane and
    unknown kinds the ``other`` lane."""
    points: dict[str, list[float]] = {}
    if len(ev):
        bg = ev["detail"].astype(str).str.lower().str.contains("|".join(_BACKGROUND_WORDS)).to_numpy()
        for kind, g in ev.assign(_bg=bg).groupby("kind", sort=False):
            for is_bg, gg in g.groupby("_bg"):
                key = "checkpoint_background" if (is_bg and kind == "checkpoint_save") else str(kind)
                if key not in spans:
                    key = "other"
                s = gg["start_s"].to_numpy(float)
                e = gg["end_s"].to_numpy(float)
                spans[key] += _merge_spans(s[e > s], e[e > s], 0.0)
                if np.any(e <= s):
                    points.setdefault(key, []).extend(s[e <= s].tolist())
    return points


def _attempt_bounds(r: Run) -> list[tuple[int, float, float]]:
    """``(attempt, first start, last end)`` of each attempt over its steps and events, in attempt order."""
    attempts: list[tuple[int, float, float]] = []
    ev = r.events
    parts = [r.steps[["attempt", "start_s", "end_s"]], ev[["attempt", "start_s", "end_s"]]]
    allrows = pd.concat([p for p in parts if len(p)]) if any(len(p) for p in parts) else None
    if allrows is not None:
        for a, g in allrows.groupby("attempt", sort=True):
            attempts.append((int(a), float(g["start_s"].min()), float(g["end_s"].max())))
    return attempts


def _timeline_lane(ax: Axes, y: int, key: str, color: Any, segs: list[tuple[float, float]],
                   marks: np.ndarray | None, attempts: list[tuple[int, float, float]], *, wide: float) -> None:
    """Draw one lane at ``y``: its spans as bars (the gid is the lane's key) and instant events as ticks.

    Attempts alternate two greys and are named when at least ``wide`` long (20 attempts at most)."""
    if key == "attempts":
        cols = [(0.80, 0.80, 0.80) if i % 2 == 0 else (0.65, 0.65, 0.65) for i in range(len(segs))]
        coll = ax.broken_barh(segs, (y - 0.4, 0.8), facecolors=cols, edgecolor="white", linewidth=0.8)
        for (a, _s, _e), (x, w) in zip(attempts, segs, strict=True):
            if w >= wide and len(attempts) <= 20:
                ax.text(x + w / 2, y, f"attempt {a}", ha="center", va="center", fontsize="small")
    else:
        alpha = 0.55 if key == "checkpoint_background" else 1.0
        coll = ax.broken_barh(segs, (y - 0.4, 0.8), facecolors=color, edgecolor=color, linewidth=0.6,
                              alpha=alpha)
    coll.set_gid(key)
    if marks is not None:
        ax.plot(marks, np.full(len(marks), y), linestyle="none", marker="|", markersize=12, color=color,
                markeredgewidth=2)


# --------------------------------------------------------------------------------------------
# 3. step times

_STATUS_COLORS = {
    "in window": _BLUE,
    "warm-up": _ORANGE,
    "overlaps an event": _PURPLE,
    "redone after a restart": _RED,
    "other (excluded)": _GREY,
}


def _status(why: str) -> str:
    if why == "in window":
        return "in window"
    if why == "warm-up":
        return "warm-up"
    if why.startswith("overlaps"):
        return "overlaps an event"
    if why.startswith("lost"):
        return "redone after a restart"
    return "other (excluded)"


def step_times(
    run: Run | Accounting,
    *,
    window: SteadyWindow | tuple[int, int] | None = None,
    time_unit: str = "auto",
    ax: Axes | None = None,
) -> Axes:
    """Job-level step time over the run, coloured by why a step is in or out of steady state.

    ``window``: a :class:`~mfu_toolkit.analysis.SteadyWindow`; a ``(first_step, last_step)``
    override; or None for the detected window (:func:`~mfu_toolkit.analysis.steady_state_window`).
    Each attempt's window is shaded from its first in-window step's start to its last one's end;
    a dashed line marks the median step time inside the window.
    """
    _check_ax(ax)
    r, acc = _as_run(run, "run")
    if window is None:
        w = acc.window if acc is not None else steady_state_window(r)
    elif isinstance(window, SteadyWindow):
        w = window
    elif isinstance(window, tuple) and len(window) == 2 and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in window
    ):
        if window[0] > window[1]:
            raise ValueError(f"window=(first_step, last_step) needs first_step <= last_step; got {window!r}")
        w = steady_state_window(r, step_range=(int(window[0]), int(window[1])))
    else:
        raise ValueError(f"window must be a SteadyWindow, a (first_step, last_step) tuple of ints or None; "
                         f"got {window!r}")
    s = w.steps.copy()
    if len(s) == 0:
        raise ValueError("run has no timed steps to plot")
    t0 = r.t0
    unit, f = _time_unit(time_unit, r.t1 - t0)
    s["time"] = (s["start_s"] - t0) / f
    s["status"] = [_status(str(v)) for v in s["why"]]
    ax, created = _axes(ax, (9.0, 3.8))
    for i, (_a, g) in enumerate(s[s["in_window"]].groupby("attempt", sort=True)):
        ax.axvspan((g["start_s"].min() - t0) / f, (g["end_s"].max() - t0) / f, color=_GREEN, alpha=0.12,
                   linewidth=0, zorder=0, gid="steady_window", label="steady-state window" if i == 0 else None)
    order = [k for k in _STATUS_COLORS if (s["status"] == k).any()]
    sns.scatterplot(data=s, x="time", y="span_s", hue="status", hue_order=order, palette=_STATUS_COLORS,
                    s=12 if len(s) < 2000 else 5, linewidth=0, ax=ax, rasterized=len(s) > 5000)
    inwin = s.loc[s["in_window"], "span_s"]
    if len(inwin):
        med = float(inwin.median())
        ax.axhline(med, color="0.2", linewidth=1.0, linestyle="--", label=f"window median {_duration(med)}")
    ax.legend(title=None, markerscale=1.5, **_LEGEND_OUT)
    ax.set_ylim(bottom=0)
    ax.set_xlabel(f"time since the first event ({unit})")
    ax.set_ylabel("step time (s)")
    ax.set_title(f"Step time (steady-state window: {w.n_steps} of {len(s)} steps)")
    ax.grid(axis="y", alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 4. rank heatmap


def _bin_starts(n: int, groups: int) -> np.ndarray:
    return (np.arange(groups) * n) // groups


def _reduce(x: np.ndarray, starts: np.ndarray, axis: int, agg: str) -> np.ndarray:
    if agg == "max":
        return np.fmax.reduceat(x, starts, axis=axis)
    ok = np.isfinite(x)
    total = np.add.reduceat(np.where(ok, x, 0.0), starts, axis=axis)
    count = np.add.reduceat(ok.astype(float), starts, axis=axis)
    return np.divide(total, count, out=np.full(total.shape, np.nan), where=count > 0)


def rank_heatmap(
    run: Run | Accounting,
    *,
    max_ranks: int = 256,
    max_steps: int = 500,
    agg: str = "mean",
    cbar: bool = True,
    ax: Axes | None = None,
) -> Axes:
    """Per-rank × step heatmap of each rank's time relative to the step's median rank.

    A rank's time is its busy time as the straggler analysis defines it (``compute_s`` where
    logged, else its step duration minus its data wait); useful steps only. 0 % is the median
    rank; red is slower. Runs larger than ``max_ranks`` × ``max_steps`` are binned into that
    many rows and columns (``agg``: ``mean`` or ``max`` of each block, ``max`` keeps short
    stragglers visible). Colours saturate at the 99th percentile of the absolute values.
    """
    _check_ax(ax)
    r, _acc = _as_run(run, "run")
    max_ranks = _int_at_least("max_ranks", max_ranks, 1)
    max_steps = _int_at_least("max_steps", max_steps, 1)
    _choice("agg", agg, ("mean", "max"))
    if r.reductions is not None:  # out of core: the engine bins the matrix (same reduction order)
        rel, steps, ranks = r.reductions.rank_heatmap(max_ranks, max_steps, agg)
        n_r, n_s = len(ranks), len(steps)
        g_r, g_s = rel.shape
    else:
        m = rank_matrix(r)
        with np.errstate(invalid="ignore", divide="ignore"):
            med = np.nanmedian(m.busy, axis=1, keepdims=True)
            rel = (m.busy / np.where(med > 0, med, np.nan) - 1.0).T  # ranks × steps
        n_r, n_s = rel.shape
        g_r, g_s = min(n_r, max_ranks), min(n_s, max_steps)
        if g_r < n_r:
            rel = _reduce(rel, _bin_starts(n_r, g_r), 0, agg)
        if g_s < n_s:
            rel = _reduce(rel, _bin_starts(n_s, g_s), 1, agg)
        steps, ranks = m.keys["step"].to_numpy(), m.ranks
    finite = np.abs(rel[np.isfinite(rel)])
    lim = max(float(np.percentile(finite, 99)) if finite.size else 0.0, 0.005)
    ax, created = _axes(ax, (9.0, min(2.2 + 0.18 * g_r, 6.5)))
    # Sampled traces log only some step numbers: then columns are placed by position and the
    # tick labels name the step each position holds, so the axis never implies missing steps.
    consecutive = bool(np.all(np.diff(steps) == 1))
    x0, x1 = (steps[0] - 0.5, steps[-1] + 0.5) if consecutive else (-0.5, n_s - 0.5)
    dense_ranks = bool(np.all(np.diff(ranks) == 1))
    y0, y1 = (ranks[-1] + 0.5, ranks[0] - 0.5) if dense_ranks else (n_r - 0.5, -0.5)
    im = ax.imshow(
        rel, aspect="auto", interpolation="nearest", cmap="vlag", vmin=-lim, vmax=lim,
        extent=(x0, x1, y0, y1),
    )
    ax.grid(False)  # grid lines over an image read as data
    if cbar:
        over = bool(finite.size and finite.max() > lim)
        cb = ax.figure.colorbar(im, ax=ax, pad=0.015, fraction=0.05, extend="both" if over else "neither")
        cb.ax.yaxis.set_major_formatter(PercentFormatter(xmax=1.0, decimals=0 if lim >= 0.05 else 1))
        cb.set_label("vs step median")
    step_word = "step" if consecutive else "sampled step (columns in order; labels are step numbers)"
    ax.set_xlabel(step_word + (f" ({n_s / g_s:.3g} steps per column, {agg})" if g_s < n_s else ""))
    ax.set_ylabel("rank" + (f" ({n_r / g_r:.3g} per row, {agg})" if g_r < n_r else ""))
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if not consecutive:
        ax.xaxis.set_major_formatter(
            lambda x, _pos: f"{steps[int(round(x))]:,}" if 0 <= round(x) < n_s else "")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if dense_ranks:
        ax.yaxis.set_major_formatter(_count_formatter)
    else:
        ax.yaxis.set_major_formatter(
            lambda y, _pos: f"{ranks[int(round(y))]:,}" if 0 <= round(y) < n_r else "")
    ax.set_title(f"Per-rank time relative to the step median ({n_r:,} ranks × {n_s:,} steps)")
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 5. spread distribution


def spread_distribution(
    run_or_table: Run | Accounting | pd.DataFrame,
    *,
    relative: bool = False,
    bins: int | str = "auto",
    ax: Axes | None = None,
) -> Axes:
    """Histogram of the per-step spread: how long the slowest rank held the typical one.

    Input: a Run with per-rank steps, or a :func:`~mfu_toolkit.analysis.step_spread` table
    (``spread_s``; ``rel_spread`` for ``relative=True``, the spread as a share of the median
    rank's time). Dashed lines mark the median and the 99th percentile.
    """
    _check_ax(ax)
    if isinstance(run_or_table, pd.DataFrame):
        t = _frame("run_or_table", run_or_table, ["rel_spread" if relative else "spread_s"])
    else:
        r, _acc = _as_run(run_or_table, "run_or_table")
        t = step_spread(r)
    if not isinstance(relative, bool):
        raise ValueError(f"relative must be True or False; got {relative!r}")
    if not (isinstance(bins, str)
            or (isinstance(bins, (int, np.integer)) and not isinstance(bins, bool) and bins >= 1)):
        raise ValueError(f"bins must be an integer >= 1 or a numpy bin rule such as 'auto'; got {bins!r}")
    col = "rel_spread" if relative else "spread_s"
    vals = pd.to_numeric(t[col], errors="coerce")
    vals = vals[np.isfinite(vals)]
    if len(vals) == 0:
        raise ValueError(f"run_or_table has no finite {col} values to plot")
    ax, created = _axes(ax, (7.0, 3.8))
    sns.histplot(x=vals.to_numpy(), bins=bins, color=_BLUE, edgecolor="white", linewidth=0.5, ax=ax)
    fmt = (lambda v: f"{v:.1%}") if relative else _duration
    for q, style, name in ((50, "--", "median"), (99, ":", "p99")):
        v = float(np.percentile(vals, q))
        ax.axvline(v, color="0.15", linestyle=style, linewidth=1.2, label=f"{name} {fmt(v)}")
    ax.legend(**_LEGEND_OUT)
    if relative:
        _percent(ax, "x")
        ax.set_xlabel("spread: (slowest rank − median rank) / median rank")
    else:
        ax.set_xlabel("spread: slowest rank − median rank (s)")
    ax.set_ylabel("steps")
    ax.set_title(f"Straggler spread per step ({len(vals):,} steps)")
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 6. expected step time vs ranks


def _rank_grid(n_ranks: Any) -> list[int]:
    if isinstance(n_ranks, (int, np.integer)) and not isinstance(n_ranks, bool):
        n = _int_at_least("n_ranks", n_ranks, 1)
        grid = [2**k for k in range(int(math.log2(n)) + 1)]
        return sorted({*grid, n})
    try:
        vals = list(n_ranks)
    except TypeError:
        raise ValueError(f"n_ranks must be an integer >= 1 or a sequence of them; got {n_ranks!r}") from None
    if not vals or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in vals):
        raise ValueError(f"n_ranks must be an integer >= 1 or a sequence of them; got {n_ranks!r}")
    return sorted({int(v) for v in vals})


def expected_step_time(
    *,
    n_ranks: int | Sequence[int],
    mean: float,
    std: float,
    dist: str | Sequence[float] | np.ndarray | Callable[[np.random.Generator, int], np.ndarray] = "normal",
    n_mc: int = 2000,
    seed: int = 0,
    ax: Axes | None = None,
) -> Axes:
    """Expected synchronous step time (the slowest of N ranks) vs N, on a log axis.

    ``n_ranks``: the largest N (then 1, 2, 4, … up to it) or the Ns to evaluate. Each rank's step
    time follows ``dist`` with ``mean`` and ``std`` (``normal``, ``lognormal`` or
    ``exponential``), or an array of observed times, or a sampler — see
    :func:`~mfu_toolkit.analysis.sync_step_time`. The dashed line is one rank's mean: the gap
    above it is what the same jitter costs at that scale.
    """
    _check_ax(ax)
    ns = _rank_grid(n_ranks)
    if isinstance(dist, str):
        _choice("dist", dist, DISTRIBUTIONS)
    elif not callable(dist) and not isinstance(dist, (Sequence, np.ndarray)):
        raise ValueError(f"dist must be one of {', '.join(DISTRIBUTIONS)}, an array of samples or a callable; "
                         f"got {dist!r}")
    mean = _number("mean", mean, lo=-math.inf, unit=" (seconds)")
    std = _number("std", std, strict=False, unit=" (seconds)")
    tab = sync_step_time(ns, dist=dist, mean=mean, std=std, n_mc=n_mc, seed=seed)
    base = float(tab["expected_step_s"].iloc[0] / tab["slowdown"].iloc[0])
    ax, created = _axes(ax, (7.0, 4.0))
    sns.lineplot(data=tab, x="n_ranks", y="expected_step_s", marker="o", color=_BLUE, ax=ax,
                 label="expected step time (slowest rank)")
    ax.axhline(base, color="0.3", linestyle="--", linewidth=1.0, label=f"one rank's mean {_duration(base)}")
    last = tab.iloc[-1]
    ax.annotate(f"{last['overhead']:+.1%} at {int(last['n_ranks']):,} ranks",
                (last["n_ranks"], last["expected_step_s"]),
                xytext=(-8, 8), textcoords="offset points", ha="right", va="bottom", fontsize="medium")
    ax.set_xscale("log", base=2 if ns[-1] <= 2**16 else 10)
    ax.xaxis.set_major_formatter(_count_formatter)
    ax.set_xlabel("number of ranks (log scale)")
    ax.set_ylabel("step time (s)")
    name = dist if isinstance(dist, str) else ("observed samples" if not callable(dist) else "sampler")
    ax.set_title(f"Synchronous step time vs ranks ({name}, mean {mean:g} s, sd {std:g} s)")
    ax.legend(loc="upper left", frameon=False)
    lo, hi = float(tab["expected_step_s"].min()), float(tab["expected_step_s"].max())
    ax.set_ylim(min(lo, base) - 0.05 * (hi - min(lo, base) + 1e-12), hi + 0.25 * (hi - min(lo, base) + 1e-12))
    ax.grid(alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 7. checkpoint overhead curve


def checkpoint_overhead_curve(
    *,
    checkpoint_s: float,
    mtbf_s: float,
    restart_s: float = 0.0,
    mode: str = "blocking",
    write_s: float | None = None,
    chosen_interval_s: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Expected overhead vs checkpoint interval, with Young's and Daly's optima and a chosen point.

    The curve is :func:`~mfu_toolkit.analysis.interval_table` (total, and its parts: checkpoint
    time, lost work, restarts) over intervals from 1/20 to 20 times Young's optimum (widened to
    include ``chosen_interval_s``). Vertical lines mark :func:`~mfu_toolkit.analysis.young_interval`
    and :func:`~mfu_toolkit.analysis.daly_interval`; ``mode`` is ``blocking`` or ``async``.
    """
    _check_ax(ax)
    checkpoint_s = _number("checkpoint_s", checkpoint_s, unit=" (seconds)")
    mtbf_s = _number("mtbf_s", mtbf_s, unit=" (seconds)")
    restart_s = _number("restart_s", restart_s, strict=False, unit=" (seconds)")
    _choice("mode", mode, CHECKPOINT_MODES)
    if write_s is not None:
        write_s = _number("write_s", write_s, strict=False, unit=" (seconds)")
    if chosen_interval_s is not None:
        chosen_interval_s = _number("chosen_interval_s", chosen_interval_s, unit=" (seconds)")
    y = young_interval(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    d = daly_interval(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s)
    lo, hi = y / 20, y * 20
    if chosen_interval_s is not None:
        lo, hi = min(lo, chosen_interval_s / 2), max(hi, chosen_interval_s * 2)
    grid = np.geomspace(lo, hi, 121)
    tab = interval_table(checkpoint_s=checkpoint_s, mtbf_s=mtbf_s, restart_s=restart_s, intervals_s=grid,
                         mode=mode, write_s=write_s)
    ax, created = _axes(ax, (9.0, 4.4))
    ax.plot(tab["interval_s"], tab["total"], color=_BLUE, linewidth=2.2, label="total overhead")
    for col, color, name in (("checkpoint", _CYAN, "checkpoint time"), ("lost_work", _ORANGE, "lost work"),
                             ("restart", _PURPLE, "restarts")):
        if tab[col].max() > 0:
            ax.plot(tab["interval_s"], tab[col], color=color, linewidth=1.0, linestyle="--", label=name)

    def total_at(t: float) -> float:
        return checkpoint_overhead(interval_s=t, checkpoint_s=checkpoint_s, mtbf_s=mtbf_s, restart_s=restart_s,
                                   mode=mode, write_s=write_s)["total"]

    for x, gid, style, color, name in ((y, "young", ":", _GREEN, "Young"), (d, "daly", "-.", _RED, "Daly")):
        ax.axvline(x, color=color, linestyle=style, linewidth=1.3, gid=gid,
                   label=f"{name} optimum {_duration(x)} ({total_at(x):.2%})")
        ax.plot([x], [total_at(x)], marker="o", color=color, markersize=6, linestyle="none")
    best = total_at(d)
    top = best * 4
    if chosen_interval_s is not None:
        c = total_at(chosen_interval_s)
        ax.plot([chosen_interval_s], [c], marker="*", color="black", markersize=14, linestyle="none", gid="chosen",
                label=f"chosen {_duration(chosen_interval_s)} ({c:.2%})")
        top = max(top, c * 1.25)
    ax.set_xscale("log")
    ax.set_xlim(lo, hi)
    _duration_axis(ax, lo, hi)
    ax.set_ylim(0, min(top, float(tab["total"].max()) * 1.05))
    _percent(ax)
    ax.set_xlabel("compute time between checkpoints (log scale)")
    ax.set_ylabel("expected overhead (share of wall time)")
    _set_title(ax, f"Checkpoint overhead vs interval\n({mode} checkpoints of {_duration(checkpoint_s)}, "
                   f"MTBF {_duration(mtbf_s)}, restart {_duration(restart_s)})")
    ax.legend(**_LEGEND_OUT)
    ax.grid(alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 8. scaling efficiency


def scaling_efficiency(
    table: pd.DataFrame,
    *,
    kind: str = "efficiency",
    n: str = "n_accelerators",
    throughput: str = "throughput",
    ax: Axes | None = None,
) -> Axes:
    """Scaling efficiency vs accelerators, or throughput against ideal linear scaling.

    ``table``: a :func:`~mfu_toolkit.analysis.scaling_table` / ``scaling_from_runs`` result, or
    any table with the ``n`` and ``throughput`` columns (it goes through ``scaling_table``, the
    smallest N as base). ``kind``: ``efficiency`` (100 % = linear) or ``throughput`` (log–log,
    with the ideal line from the base).
    """
    _check_ax(ax)
    t = _frame("table", table, [n, throughput])
    _choice("kind", kind, ("efficiency", "throughput"))
    if not {"scaling_efficiency", "ideal_throughput"} <= set(t.columns):
        t = scaling_table(t, n=n, throughput=throughput)
    t = t.sort_values(n, kind="stable")
    metric = t.attrs.get("metric", "") if isinstance(t.attrs, dict) else ""
    ax, created = _axes(ax, (7.0, 4.0))
    x = t[n].to_numpy(float)
    if kind == "efficiency":
        eff = t["scaling_efficiency"].to_numpy(float)
        sns.lineplot(x=x, y=eff, marker="o", color=_BLUE, ax=ax, label="measured")
        ax.axhline(1.0, color="0.3", linestyle="--", linewidth=1.0, label="linear scaling (100%)")
        for xi, ei in zip(x, eff, strict=True):
            ax.annotate(f"{ei:.0%}", (xi, ei), xytext=(0, 7), textcoords="offset points", ha="center", fontsize="small")
        _percent(ax)
        ax.set_ylim(0, max(1.1, float(np.nanmax(eff)) * 1.1))
        ax.set_ylabel("scaling efficiency")
        ax.set_title(f"Scaling efficiency vs {int(x[0]):,} accelerators")
        ax.legend(loc="lower left", frameon=False)
    else:
        sns.lineplot(x=x, y=t[throughput].to_numpy(float), marker="o", color=_BLUE, ax=ax, label="measured")
        ax.plot(x, t["ideal_throughput"].to_numpy(float), color="0.3", linestyle="--", linewidth=1.0,
                label="ideal linear")
        ax.set_yscale("log")
        ax.set_ylabel(f"throughput{' (' + metric.replace('_per_s', '/s') + ')' if metric else ''}")
        ax.set_title("Throughput vs ideal linear scaling")
        ax.legend(loc="upper left", frameon=False)
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(_count_formatter)
    ax.set_xticks(x)
    ax.set_xlabel("accelerators (log scale)")
    ax.grid(alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# 9. MFU vs GPU utilisation


def mfu_vs_gpu_util(
    run_or_table: Run | Accounting | pd.DataFrame,
    *,
    bin_s: float | None = None,
    source: str = "auto",
    time_unit: str = "auto",
    ax: Axes | None = None,
) -> Axes:
    """GPU utilisation (what nvidia-smi shows) against MFU over time: busy is not productive.

    Input: a Run (through :func:`gpu_util_mfu_table` with ``bin_s`` and ``source``) or a tidy
    table with ``time_s``, ``gpu_util`` and ``mfu`` (fractions; ``gpu_util`` in percent is
    accepted when a value exceeds 1). The shaded band is the gap: time the GPUs looked busy
    without doing useful model FLOPs at peak rate. Means are time-weighted.
    """
    _check_ax(ax)
    if isinstance(run_or_table, pd.DataFrame):
        t = _frame("run_or_table", run_or_table, ["time_s", "gpu_util", "mfu"]).sort_values("time_s").copy()
        if (t["gpu_util"] > 1.0).any():
            t["gpu_util"] = t["gpu_util"] / 100.0
        if "bin_s" not in t.columns:
            step = float(np.median(np.diff(t["time_s"]))) if len(t) > 1 else 1.0
            t["bin_s"] = step
        src = t.attrs.get("source", "gpu_util") if isinstance(t.attrs, dict) else "gpu_util"
    else:
        t = gpu_util_mfu_table(run_or_table, bin_s=bin_s, source=source)
        src = t.attrs["source"]
    if len(t) == 0:
        raise ValueError("run_or_table has no rows to plot")
    tt = t["time_s"].to_numpy(float)
    w = t["bin_s"].to_numpy(float)
    unit, f = _time_unit(time_unit, float(tt[-1] + w[-1] - tt[0]))
    x = np.r_[tt, tt[-1] + w[-1]] / f
    util = t["gpu_util"].to_numpy(float)
    mfu = t["mfu"].to_numpy(float)

    def wmean(v: np.ndarray) -> float:
        ok = np.isfinite(v)
        return float(np.sum(v[ok] * w[ok]) / np.sum(w[ok])) if ok.any() else float("nan")

    name = "GPU utilisation (nvidia-smi)" if src == "gpu_util" else "GPU busy (profiler)"
    ax, created = _axes(ax, (9.0, 3.8))
    u2, m2 = np.r_[util, util[-1]], np.r_[mfu, mfu[-1]]
    ax.fill_between(x, m2, u2, where=np.isfinite(u2) & (u2 >= m2), step="post", color=_ORANGE, alpha=0.15,
                    linewidth=0, label="looks busy, not useful model FLOPs")
    ax.step(x, u2, where="post", color=_ORANGE, linewidth=1.6, label=f"{name}, mean {wmean(util):.0%}")
    ax.step(x, m2, where="post", color=_BLUE, linewidth=1.6, label=f"MFU, mean {wmean(mfu):.1%}")
    ax.set_ylim(0, 1.05)
    ax.set_xlim(x[0], x[-1])
    _percent(ax)
    ax.set_xlabel(f"time since the first event ({unit})")
    ax.set_ylabel("% of time busy / % of peak FLOP/s")
    ax.set_title("GPU utilisation is not MFU")
    ax.legend(**_LEGEND_OUT)
    ax.grid(axis="y", alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# roofline

_KIND_COLOURS = {"matmul": _BLUE, "attention": _PURPLE, "elementwise": _RED, "embedding": _ORANGE}


def _roofline_labels(t: pd.DataFrame, lo: float) -> list[tuple[float, list[str]]]:
    """Clusters of points to label once each: ``(x of the cluster's first point, names)``.

    Ops of one intensity sit on one point, and points closer than a third of a decade would
    print their labels over each other, so each cluster gets one label ("3-6") at its first
    point and the figure lists the names beside the axes.
    """
    points: dict[float, list[str]] = {}
    for name, inten in zip(t["name"], t["intensity"], strict=True):
        xi = max(float(inten), lo)
        points.setdefault(math.log10(xi), []).append(f"{name} (0 FLOP)" if inten == 0 else str(name))
    clusters: list[tuple[float, list[str]]] = []
    prev = None
    for key in sorted(points):
        name = " / ".join(points[key])
        if prev is not None and key - prev < 1 / 3:
            clusters[-1][1].append(name)
        else:
            clusters.append((10 ** key, [name]))
        prev = key
    return clusters


def roofline(
    data: pd.DataFrame,
    *,
    peak_flops: float,
    bandwidth: float,
    accelerator: str = "",
    matmul_peak: float | None = None,
    ax: Axes | None = None,
) -> Axes:
    """Operations on an accelerator's roofline (Williams et al. 2009), log-log.

    ``data``: one row per op with ``name``, ``kind`` and ``intensity`` (FLOP/byte), e.g. from
    ``mfu_toolkit.roofline`` ops. The roof is ``min(peak, intensity × bandwidth)`` in TFLOP/s;
    the ridge point ``peak / bandwidth`` is marked, and ``matmul_peak`` (a measured achievable
    matmul rate) is drawn as a second, lower roof. An op of zero intensity (a one-hot embedding
    lookup does no FLOPs) is drawn at the left edge and its label says so.
    """
    _check_ax(ax)
    t = _frame("data", data, ("name", "kind", "intensity"))
    peak = _number("peak_flops", peak_flops, unit=" FLOP/s")
    bw = _number("bandwidth", bandwidth, unit=" B/s")
    ax, created = _axes(ax, (7.5, 4.6))
    ridge = peak / bw
    pos = t["intensity"][t["intensity"] > 0]
    lo = 10 ** math.floor(math.log10(min([ridge / 100, *pos.tolist()])))
    hi = 10 ** math.ceil(math.log10(max([ridge * 30, *pos.tolist()])))
    x = np.geomspace(lo, hi, 200)
    ax.plot(x, np.minimum(peak, x * bw) / 1e12, color="0.2", linewidth=2, label="roof: min(peak, I × bandwidth)")
    if matmul_peak is not None:
        mp = _number("matmul_peak", matmul_peak, unit=" FLOP/s")
        ax.plot(x, np.minimum(mp, x * bw) / 1e12, color="0.45", linewidth=1.2, linestyle="--",
                label=f"measured matmul roof ({mp / peak:.0%} of peak)")
    ax.axvline(ridge, color="0.6", linewidth=0.8, linestyle=":")
    ax.annotate(f"ridge {ridge:,.0f} FLOP/B", xy=(ridge, peak / 1e12), xytext=(-8, 4), textcoords="offset points",
                fontsize="small", color="0.3", ha="right", va="bottom")
    for kind, group in t.groupby("kind", sort=False):
        xi = group["intensity"].clip(lower=lo).to_numpy(float)
        ax.scatter(xi, np.minimum(peak, xi * bw) / 1e12, s=45, zorder=3, color=_KIND_COLOURS.get(kind, _GREY),
                   label=str(kind), edgecolor="white", linewidth=0.6)
    k, lines = 0, []
    for xi, names in _roofline_labels(t, lo):
        first, k = k + 1, k + len(names)
        # one number (or range) per cluster, off the line: under the flat roof, up-left of the slope
        offset = (0, -14) if xi >= ridge else (-10, 6)
        ax.annotate(f"{first}" if k == first else f"{first}-{k}", xy=(xi, min(peak, xi * bw) / 1e12),
                    xytext=offset, textcoords="offset points", fontsize="x-small", color="0.2",
                    ha="center", fontweight="bold")
        for n, name in enumerate(names, start=first):
            lines += textwrap.wrap(f"{n}  {name}", width=46, subsequent_indent="    ")
    key = "\n".join(lines)
    ax.text(1.03, 0.0, key, transform=ax.transAxes, va="bottom", ha="left", fontsize="x-small", color="0.2")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlim(lo, hi)
    ax.set_xlabel("arithmetic intensity (FLOP per byte moved)")
    ax.set_ylabel("attainable TFLOP/s")
    _set_title(ax, f"Roofline{' of ' + accelerator if accelerator else ''}: "
                   f"{peak / 1e12:,.0f} TFLOP/s, {bw / 1e12:,.2f} TB/s")
    ax.legend(**_LEGEND_OUT)
    ax.grid(which="major", alpha=0.3)
    sns.despine(ax=ax)
    return _finish(ax, created)


# --------------------------------------------------------------------------------------------
# the what-if replay of a per-operation trace

_REPLAY_COLUMNS = ("component", "seconds")


def replay_waterfall(
    table: pd.DataFrame,
    *,
    baseline: pd.DataFrame | None = None,
    label: str = "replayed",
    baseline_label: str = "as traced",
    ax: Axes | None = None,
) -> Axes:
    """A replayed step from its ideal (balanced) time up to the replayed step, one bar per part.

    ``table`` is :meth:`~mfu_toolkit.analysis.WhatIfResult.waterfall` (or the ``waterfall`` of
    :func:`~mfu_toolkit.analysis.slowed_replay`): its first row is the ideal step, each later row
    a part added on top, and the last bar the total. ``baseline``, a second such table with the
    same components, is drawn hollow beside each bar (the job as traced against a what-if); the
    title gives S = total / ideal for both.
    """
    _check_ax(ax)
    t = _frame("table", table, _REPLAY_COLUMNS)
    b = None if baseline is None else _frame("baseline", baseline, _REPLAY_COLUMNS)
    if len(t) == 0:
        raise ValueError("table must have at least the ideal step as its first row; got an empty table")
    if b is not None and list(b["component"]) != list(t["component"]):
        raise ValueError(f"baseline must have the same components as table {list(t['component'])}; "
                         f"got {list(b['component'])}")
    ax, created = _axes(ax, (7.5, 3.6))
    names = [*map(str, t["component"]), "replayed step"]
    x = np.arange(len(names), dtype=float)
    half = 0.2 if b is not None else 0.0
    width = 0.38 if b is not None else 0.6

    def bars(sec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        # floating bars: each part starts where the previous parts end; the total starts at zero
        ends = np.cumsum(sec)
        return np.append(ends - sec, 0.0), np.append(sec, ends[-1])

    sec = t["seconds"].to_numpy(float)
    colours = [_BLUE, *([_ORANGE] * (len(sec) - 1)), _RED]
    if b is not None:
        bb, bh = bars(b["seconds"].to_numpy(float))
        ax.bar(x - half, bh, width, bottom=bb, facecolor="none", edgecolor="0.45", linewidth=1.2, hatch="//",
               label=f"{baseline_label}: S = {bh[-1] / bh[0]:.3f}")
    bottom, height = bars(sec)
    ax.bar(x + half, height, width, bottom=bottom, color=colours, label=f"{label}: S = {height[-1] / height[0]:.3f}")
    top = max(float(np.max(bottom + height)), float(np.max(bb + bh)) if b is not None else 0.0)
    for i, (xi, lo, h) in enumerate(zip(x + half, bottom, height, strict=True)):
        ax.annotate(f"{h:+.3g} s" if 0 < i < len(names) - 1 else f"{h:.3g} s",
                    xy=(xi, max(lo, lo + h)), xytext=(0, 2), textcoords="offset points",
                    ha="center", va="bottom", fontsize="x-small")
    ax.set_xticks(x, [textwrap.fill(n, 14) for n in names], fontsize="small")
    ax.set_ylim(min(0.0, float(np.min(bottom))), top * 1.3)  # room for the legend above the bars
    ax.set_ylabel("seconds per step (mean)")
    _set_title(ax, "The step replayed: ideal (balanced) → actual")
    ax.legend(loc="upper left", frameon=False, fontsize="small")
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    sns.despine(ax=ax)
    return _finish(ax, created)
