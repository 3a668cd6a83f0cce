"""The communication explorer: a collective's time floor on a link, the part of it a step cannot hide, and the
MFU that part costs.

Like every explorer (:mod:`mfu_toolkit.widgets`), a thin layer over a pure function, :func:`comm_scenario`,
which takes plain values and is tested on its own; the widget wires controls to it and replaces one Output's
chart and table in place. The model, in the terms of :mod:`mfu_toolkit.analysis.communication`:

1. **Floor.** A collective moving ``S`` bytes (nccl-tests' convention: AllGather, ReduceScatter and AlltoAll
   count every rank's data) over ``n`` ranks needs at least ``S × factor / peak`` seconds, with NCCL's bus
   bandwidth factor (2(n−1)/n for AllReduce, (n−1)/n for AllGather, ReduceScatter and AlltoAll, 1 for
   Broadcast) and the link's per-direction peak from the sourced interconnect table
   (:func:`~mfu_toolkit.analysis.collective_time_floor`). ``S`` is what one step moves; at the bandwidth floor
   one collective of ``S`` bytes and many adding up to ``S`` take the same time (latency is left out, so small
   messages take longer than their floor).
2. **Achieved bandwidth.** ``efficiency`` is the bus bandwidth reached as a share of that peak (the
   ``comm_efficiency`` of a measured collective); the communication takes ``floor / efficiency``.
3. **Overlap.** A share ``overlap`` of it runs beside compute and costs nothing; the rest is **exposed**: the
   step lasts ``compute_s + exposed``.
4. **MFU.** The model FLOPs of a step do not change, so MFU falls in proportion to the step:
   ``mfu × compute_s / (compute_s + exposed)``, where ``mfu`` is the MFU the step would have with its
   communication fully hidden.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from . import interconnect
from .widgets import LEGEND_RIGHT, explorer_figure, in_room_style, live_explorer, slider_style, style_axes

__all__ = [
    "COMM_COLLECTIVES",
    "COMM_SIZES",
    "CommScenario",
    "comm_explorer",
    "comm_figure",
    "comm_links",
    "comm_scenario",
    "comm_table",
    "format_bytes",
    "format_seconds",
]

# The collectives the explorer offers: key (as busbw_factor reads it) -> display name and its factor in words.
COMM_COLLECTIVES: dict[str, tuple[str, str]] = {
    "allreduce": ("AllReduce", "2(n−1)/n"),
    "allgather": ("AllGather", "(n−1)/n"),
    "reducescatter": ("ReduceScatter", "(n−1)/n"),
    "alltoall": ("AlltoAll", "(n−1)/n"),
    "broadcast": ("Broadcast", "1"),
}
# Bytes per step offered by the size slider: 1, 2, 5 × 10^k from 1 MB to 100 GB (decimal units).
COMM_SIZES: tuple[float, ...] = tuple(m * 10.0**k for k in range(6, 11) for m in (1, 2, 5)) + (1e11,)
COMM_RANKS: tuple[int, ...] = tuple(2**k for k in range(1, 15))  # 2 .. 16,384 ranks


@dataclass(frozen=True)
class CommScenario:
    """One communication what-if: the inputs, the link's peak, and the times and MFU that follow (seconds;
    shares as fractions: 0.05 = 5 %)."""

    link: str  # the interconnect table's name
    coll: str  # display name (AllReduce, ...)
    size_bytes: float
    n_ranks: int
    overlap: float
    efficiency: float
    compute_s: float
    mfu: float  # with the communication fully hidden
    peak_bytes_per_s: float  # per direction
    link_source: str
    busbw_factor: float
    floor_s: float  # at the link's peak
    comm_s: float  # at ``efficiency`` of the peak
    hidden_s: float
    exposed_s: float
    step_s: float
    exposed_share: float  # of the step
    mfu_after: float
    mfu_cost: float  # mfu − mfu_after (0.054 = 5.4 points)
    headline: str


def comm_links() -> list[str]:
    """The links of the interconnect table a collective's time floor can be computed on: a per-direction peak
    (the source says how its figure counts) that one rank has (not one of several links)."""
    return [link.name for link in interconnect.links()
            if link.per_direction_bytes_per_s is not None and link.per_accelerator]


def _number(name: str, value: Any, lo: float, hi: float, *, lo_open: bool = False) -> float:
    ok = (not isinstance(value, bool) and isinstance(value, (int, float)) and math.isfinite(value)
          and (value > lo if lo_open else value >= lo) and value <= hi)
    if not ok:
        span = f"({lo:g}, {hi:g}]" if lo_open else f"[{lo:g}, {hi:g}]"
        raise ValueError(f"{name} must be a number in {span}; got {value!r}")
    return float(value)


def format_bytes(v: float) -> str:
    """Decimal units, three significant digits: 16 GB, 2.36 MB."""
    for scale, unit in ((1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")):
        if abs(v) >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.3g} B"


def format_seconds(s: float) -> str:
    """Four significant digits in s, ms or µs: 2.315 s, 630 ms, 62.22 ms."""
    if abs(s) >= 1.0:
        return f"{s:.4g} s"
    if abs(s) >= 1e-3:
        return f"{s * 1e3:.4g} ms"
    return f"{s * 1e6:.4g} µs" if s else "0 s"


def comm_scenario(*, link: str = "NDR", coll: str = "allreduce", size_bytes: float = 16e9, n_ranks: int = 64,
                  overlap: float = 0.5, efficiency: float = 1.0, compute_s: float = 2.0,
                  mfu: float = 0.40) -> CommScenario:
    """The time floor of ``coll`` moving ``size_bytes`` per step among ``n_ranks`` over ``link`` (any name or
    alias of :mod:`mfu_toolkit.interconnect`), the communication time at ``efficiency`` of the link's peak, the
    part of it not hidden behind compute (``1 − overlap``) and the MFU of a step of ``compute_s`` seconds of
    compute whose MFU would be ``mfu`` with its communication fully hidden (the module docstring has the model).

    The defaults: the gradient AllReduce of an 8-billion-parameter model in bf16 (16 GB) among 64 data-parallel
    ranks over InfiniBand NDR (one 400 Gb/s port per rank), half of it overlapped with a 2 s backward pass of a
    step at 40 % MFU. Raises ``ValueError`` for a value out of range and for a link whose source gives no
    per-direction, per-rank figure.
    """
    from .analysis.communication import busbw_factor, collective_time_floor

    key = "".join(ch for ch in str(coll).lower() if ch.isalnum())
    if key not in COMM_COLLECTIVES:
        raise ValueError(f"coll must be one of {', '.join(v[0] for v in COMM_COLLECTIVES.values())}; got {coll!r}")
    if isinstance(n_ranks, bool) or not isinstance(n_ranks, int) or not 1 <= n_ranks <= 1_000_000:
        raise ValueError(f"n_ranks must be a whole number in [1, 1000000]; got {n_ranks!r}")
    size = _number("size_bytes", size_bytes, 0.0, 1e15)
    overlap = _number("overlap", overlap, 0.0, 1.0)
    efficiency = _number("efficiency", efficiency, 0.0, 1.0, lo_open=True)
    compute_s = _number("compute_s", compute_s, 0.0, 1e6, lo_open=True)
    mfu = _number("mfu", mfu, 0.0, 1.0, lo_open=True)
    try:
        found = interconnect.get_link(link)
    except interconnect.InterconnectError as exc:
        raise ValueError(str(exc)) from None
    floor = collective_time_floor(key, size, n_ranks, found)  # ValueError when the link has no usable peak
    factor = busbw_factor(key, n_ranks)
    comm = floor / efficiency
    exposed = comm * (1.0 - overlap)
    step = compute_s + exposed
    after = mfu * compute_s / step
    name = COMM_COLLECTIVES[key][0]
    achieved = f", {format_seconds(comm)} at {efficiency:.1%} of the peak" if efficiency < 1.0 else ""
    headline = (f"{name} of {format_bytes(size)} over {n_ranks:,} ranks on {found.name}: floor "
                f"{format_seconds(floor)}{achieved}; {format_seconds(exposed)} exposed per step ({overlap:.0%} "
                f"overlapped) → MFU {after:.1%} instead of {mfu:.1%} ({(after - mfu) * 100:+.1f} points)")
    return CommScenario(found.name, name, size, n_ranks, overlap, efficiency, compute_s, mfu,
                        float(found.per_direction_bytes_per_s), found.source, factor, floor, comm,
                        comm - exposed, exposed, step, exposed / step, after, mfu - after, headline)


def comm_table(result: CommScenario):  # -> pandas.DataFrame of strings
    """The chain from the link's peak to the MFU, one quantity per row."""
    import pandas as pd

    words = next(v[1] for v in COMM_COLLECTIVES.values() if v[0] == result.coll)
    rows = {
        "link peak, one direction": f"{result.peak_bytes_per_s / 1e9:,.4g} GB/s ({result.link})",
        "bus bandwidth factor": f"{words} = {result.busbw_factor:.4g} ({result.n_ranks:,} ranks)",
        "time floor (at the peak)": format_seconds(result.floor_s),
        f"communication at {result.efficiency:.1%} of the peak": format_seconds(result.comm_s),
        f"hidden behind compute ({result.overlap:.0%})": format_seconds(result.hidden_s),
        "exposed per step": format_seconds(result.exposed_s),
        "step (compute + exposed)": f"{format_seconds(result.step_s)} ({format_seconds(result.compute_s)} + "
                                    f"{format_seconds(result.exposed_s)})",
        "exposed share of the step": f"{result.exposed_share:.2%}",
        "MFU, hidden → this step": f"{result.mfu:.1%} → {result.mfu_after:.2%}",
        "MFU cost": f"{result.mfu_cost * 100:.2f} points",
    }
    return pd.DataFrame({"value": list(rows.values())}, index=pd.Index(list(rows), name="quantity"))


_SIZE_TICKS = (1e6, 1e7, 1e8, 1e9, 1e10, 1e11)


@in_room_style
def comm_figure(result: CommScenario):  # -> matplotlib.figure.Figure
    """MFU against the bytes a step moves, on the chosen link: at the chosen overlap, with none, and with the
    communication fully hidden; the chosen size marked."""
    import numpy as np
    import seaborn as sns

    fig, ax = explorer_figure(left=0.1, right=0.64, bottom=0.16, top=0.88)
    deep = sns.color_palette("deep")
    sizes = np.geomspace(1e6, 1e11, 121)
    comm = sizes * result.busbw_factor / result.peak_bytes_per_s / result.efficiency

    def mfu_at(exposed: np.ndarray) -> np.ndarray:
        return 100.0 * result.mfu * result.compute_s / (result.compute_s + exposed)

    ax.plot(sizes, mfu_at(comm * (1.0 - result.overlap)), color=deep[0], lw=2.0,
            label=f"{result.overlap:.0%} overlapped")
    if result.overlap > 0:
        ax.plot(sizes, mfu_at(comm), color=deep[3], lw=1.5, ls="--", label="no overlap")
    ax.axhline(100.0 * result.mfu, color="0.35", lw=1.0, ls=":", label="communication hidden")
    ax.scatter([result.size_bytes], [100.0 * result.mfu_after], s=90, color=deep[0], edgecolor="black", zorder=5,
               label=f"this job: {format_bytes(result.size_bytes)}")
    ax.set_xscale("log")
    ax.set_xticks(_SIZE_TICKS, [format_bytes(v) for v in _SIZE_TICKS])  # plain labels: log-axis mathtext is slow
    ax.minorticks_off()
    ax.set_ylim(0.0, 100.0 * result.mfu * 1.08)
    ax.set_xlabel("bytes per step (S, log scale)")
    ax.set_ylabel("MFU (%)")
    ax.set_title(f"{result.coll} over {result.n_ranks:,} ranks on {result.link}")
    ax.legend(**LEGEND_RIGHT)
    style_axes(ax)
    return fig


def comm_explorer(*, link: str = "NDR", coll: str = "allreduce", size_bytes: float = 16e9, n_ranks: int = 64,
                  overlap: float = 0.5, efficiency: float = 1.0, compute_s: float = 2.0, mfu: float = 0.40) -> Any:
    """Bytes per step, ranks, overlap, achieved bandwidth, link, collective, compute time and MFU → the time
    floor, the exposed communication per step and the MFU it costs (:func:`comm_scenario`, whose defaults it
    opens on). The first slider is the bytes per step. CSS class ``comm-explorer``."""
    import ipywidgets as w

    first = comm_scenario(link=link, coll=coll, size_bytes=size_bytes, n_ranks=n_ranks, overlap=overlap,
                          efficiency=efficiency, compute_s=compute_s, mfu=mfu)  # refuses bad defaults here
    st = slider_style()
    sizes = sorted(set(COMM_SIZES) | {float(size_bytes)})
    size = w.SelectionSlider(options=[(format_bytes(v), v) for v in sizes], value=float(size_bytes),
                             description="bytes per step", continuous_update=False, style=st)
    ranks = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(COMM_RANKS) | {n_ranks})], value=n_ranks,
                              description="ranks", continuous_update=False, style=st)
    ov = w.FloatSlider(value=overlap, min=0.0, max=1.0, step=0.05, description="overlapped", readout_format=".0%",
                       continuous_update=False, style=st)
    eff = w.FloatLogSlider(value=efficiency, base=10, min=-2.0, max=0.0, step=0.05,
                           description="bus bandwidth / peak", readout_format=".1%", continuous_update=False,
                           style=st)
    names = comm_links()
    ln = w.Dropdown(options=[(f"{n} ({interconnect.get_link(n).per_direction_bytes_per_s / 1e9:,.4g} GB/s each way)",
                              n) for n in names], value=first.link, description="link", style=st)
    co = w.Dropdown(options=[(v[0], k) for k, v in COMM_COLLECTIVES.items()],
                    value="".join(ch for ch in str(coll).lower() if ch.isalnum()), description="collective",
                    style=st)
    comp = w.FloatSlider(value=compute_s, min=0.1, max=20.0, step=0.1, description="compute per step (s)",
                         readout_format=".1f", continuous_update=False, style=st)
    m = w.FloatSlider(value=mfu, min=0.05, max=0.8, step=0.01, description="MFU, comm hidden",
                      readout_format=".0%", continuous_update=False, style=st)

    def compute() -> Any:
        return comm_scenario(link=ln.value, coll=co.value, size_bytes=size.value, n_ranks=ranks.value,
                             overlap=ov.value, efficiency=eff.value, compute_s=comp.value, mfu=m.value)

    layout = [w.HBox([w.VBox([size, ranks, ov, eff]), w.VBox([ln, co, comp, m])])]
    return live_explorer([size, ranks, ov, eff, ln, co, comp, m], compute, comm_figure, comm_table, "comm-explorer",
                         layout)
