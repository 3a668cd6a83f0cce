"""The recommendation-model explorer: a DLRM training step on one accelerator's roofline, split into what bounds
each part of it, with the dense MFU that follows beside the embedding bandwidth it uses.

Like every explorer (:mod:`mfu_toolkit.widgets`, :mod:`mfu_toolkit.widgets_comm`), a thin layer over a pure
function, :func:`recsys_scenario`, which takes plain values and is tested on its own; the widget wires controls to
it and replaces one Output's chart and table in place. The model, in the terms of :mod:`mfu_toolkit.roofline` and
:mod:`mfu_toolkit.analysis.recsys`:

1. **The model.** The ``dlrm-dcnv2`` preset (MLPerf Training's DLRM-DCNv2 reference: 13 dense features, 26
   tables, a bottom MLP, three low-rank cross layers, a top MLP) with its embedding dimension, pooling factor
   (rows summed per lookup: one value for every table, or the reference's multi-hot sizes, 214 rows per sample),
   row precision and sparse optimizer changed as asked. The embedding dimension widens the cross layers and the
   top MLP's input too, so it changes the dense FLOPs as well as the bytes.
2. **The step at the roofline.** :func:`~mfu_toolkit.roofline.recsys_step_roofline` places one training step of
   ``batch`` samples per accelerator on the accelerator's roofline (peak from the registry, memory bandwidth from
   its datasheet): each dense layer is compute- or memory-bound by its intensity; the embedding lookups, the
   sparse update and the optimizer state are bytes (:func:`~mfu_toolkit.flops.recsys.embedding_traffic`); with
   table-wise sharding over ``n_accelerators`` the all-to-all of the pooled embeddings is timed on ``link`` at its
   per-direction peak. The parts run one after another (no overlap): the least time the step can take.
3. **The input pipeline.** ``input_share`` is the share of the step the accelerators wait for their input (the
   part of the pipeline not hidden behind compute): the step lasts ``roofline step / (1 − input_share)``.
4. **The two-part headline.** Dense MFU = model FLOPs / (step × peak): the roofline's MFU ceiling ×
   (1 − input_share). Embedding bandwidth utilisation = samples/s × embedding bytes per sample / (N × memory
   bandwidth), computed by :func:`~mfu_toolkit.analysis.embedding_bandwidth` exactly as for a real log. Both are
   the same throughput seen against two limits: their ratio is fixed by the model and the accelerator.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace
from typing import Any

from . import hardware, interconnect
from .deprecation import renamed
from .widgets import EXPLORER_FIGSIZE, in_room_style, live_explorer, room_dpi, slider_style, style_axes
from .widgets_comm import comm_links, format_bytes, format_seconds

__all__ = [
    "RECSYS_BATCHES",
    "RECSYS_DIMS",
    "RECSYS_GPUS",
    "RECSYS_PARTS",
    "RECSYS_POOLINGS",
    "RECSYS_SHARDINGS",
    "RecsysScenario",
    "recsys_accelerators",
    "recsys_explorer",
    "recsys_figure",
    "recsys_model",
    "recsys_scenario",
    "recsys_table",
]

PRESET = "dlrm-dcnv2"
RECSYS_DIMS: tuple[int, ...] = (16, 32, 64, 128, 256, 512)
# Pooling factors the slider offers, by lookups per sample: 0 stands for the reference's multi-hot sizes (214 rows,
# labelled "MLPerf").
RECSYS_POOLINGS: tuple[int, ...] = (1, 2, 4, 8, 0, 16, 32, 64)
RECSYS_BATCHES: tuple[int, ...] = tuple(2**k for k in range(9, 18))  # 512 .. 131,072 samples per accelerator
RECSYS_GPUS: tuple[int, ...] = tuple(2**k for k in range(0, 15))  # 1 .. 16,384
RECSYS_SHARDINGS: dict[str, str] = {"data_parallel": "data-parallel (tables replicated)",
                                    "table_wise": "table-wise", "column_wise": "column-wise"}
# The parts a step is split into, in the order they are drawn: attribute of RecsysScenario -> label.
RECSYS_PARTS: dict[str, str] = {
    "compute_s": "dense ops, compute-bound",
    "dense_memory_s": "dense ops, memory-bound",
    "embedding_s": "embedding lookups, update, state",
    "alltoall_s": "all-to-all",
    "input_s": "waiting for input",
}


@dataclass(frozen=True)
class RecsysScenario:
    """One recommendation-step what-if: the inputs, the step's parts at the roofline (seconds), the dense MFU and
    the embedding bandwidth utilisation (shares as fractions: 0.262 = 26.2 %)."""

    model: str
    accelerator: str
    dtype: str
    embedding_dim: int
    pooling: int | None  # rows per lookup for every table; None: the reference's multi-hot sizes
    lookups_per_sample: float
    row_dtype: str
    optimizer: str
    batch: int  # samples per accelerator per step
    n_accelerators: int
    sharding: str
    link: str | None  # the interconnect table's name, where something crosses ranks
    link_bytes_per_s: float  # per direction (NaN without a link)
    input_share: float
    flops_per_sample: float  # training model FLOPs (3 × forward)
    embedding_bytes_per_sample: float
    alltoall_bytes_per_gpu: float  # sent one way by each rank per step
    table_bytes_per_gpu: float  # the rows and their optimizer state each accelerator holds (an even split)
    peak_flops: float
    bandwidth: float
    peak_source: str
    bandwidth_source: str
    compute_s: float
    dense_memory_s: float
    embedding_s: float
    alltoall_s: float
    input_s: float
    step_s: float
    ceiling: float  # the roofline's MFU ceiling: no input wait
    ceiling_comm_hidden: float  # the same with the all-to-all wholly hidden behind the accelerator's work
    dense_mfu: float  # with the input wait
    embedding_bandwidth: float  # utilisation, with the input wait
    samples_per_s: float  # all accelerators together
    notes: tuple[str, ...]
    headline: str

    def share(self, part: str) -> float:
        """A part of the step (an attribute named in ``RECSYS_PARTS``) as a share of it."""
        return getattr(self, part) / self.step_s

    @property
    def n_gpus(self) -> int:
        """The old name of :attr:`n_accelerators`, read with a ``DeprecationWarning`` until the next release."""
        warnings.warn("RecsysScenario.n_gpus is renamed n_accelerators; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.n_accelerators


def _whole(name: str, value: Any, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ValueError(f"{name} must be a whole number in [{lo}, {hi}]; got {value!r}")
    return value


def _share(name: str, value: Any, hi: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0.0 <= value <= hi:
        raise ValueError(f"{name} must be a number in [0, {hi:g}]; got {value!r}")
    return float(value)


def recsys_model(*, embedding_dim: int = 128, pooling: int | None = None, row_dtype: str = "fp32",
                 optimizer: str = "adagrad"):  # -> flops.recsys.DLRMConfig
    """The ``dlrm-dcnv2`` configuration with its embedding dimension, pooling factor (``None``: the reference's
    multi-hot sizes), row precision and sparse optimizer replaced; its name says what was changed."""
    from .flops import get_preset
    from .flops.recsys import OPTIMIZERS, ROW_DTYPES

    dim = _whole("embedding_dim", embedding_dim, 1, 4096)
    if pooling is not None:
        _whole("pooling", pooling, 1, 1000)
    if row_dtype not in ROW_DTYPES:
        raise ValueError(f"row_dtype must be one of {', '.join(ROW_DTYPES)}; got {row_dtype!r}")
    if optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    base = get_preset(PRESET).config
    changes: dict[str, Any] = {"embedding_dim": dim, "embedding_bytes": ROW_DTYPES[row_dtype],
                               "optimizer": optimizer}
    if pooling is not None:
        changes["pooling_factors"] = (pooling,) * base.n_sparse
    changed = [f"dim {dim}"] if dim != base.embedding_dim else []
    if pooling is not None:
        changed.append(f"pooling {pooling}")
    if ROW_DTYPES[row_dtype] != base.embedding_bytes:
        changed.append(f"{row_dtype} rows")
    if optimizer != base.optimizer:
        changed.append(optimizer)
    name = PRESET + (f" ({', '.join(changed)})" if changed else "")
    return replace(base, name=name, **changes)


def recsys_accelerators() -> list[str]:
    """The accelerators of the registry with a dense bf16 peak and a sourced memory bandwidth."""
    out = []
    for acc in hardware.accelerators(dtype="bf16"):
        try:
            hardware.get_memory_bandwidth(acc.name)
        except hardware.RegistryError:
            continue
        out.append(acc.name)
    return out


def _table_bytes(config: Any, optimizer: str, n_shards: int) -> float:
    """Rows × dim × row bytes plus the optimizer state (4-byte values), over ``n_shards`` accelerators."""
    from .flops.recsys import OPTIMIZERS

    rows = sum(config.embedding_rows or ())
    per_element, per_row, _ = OPTIMIZERS[optimizer]
    per = config.embedding_dim * config.embedding_bytes + (per_element * config.embedding_dim + per_row) * 4
    return rows * per / n_shards


def _scenario_link(link: str | None, acc: str, n: int) -> Any:
    """The link the all-to-all crosses: the one named, else the accelerator's own; one without a usable
    per-direction, per-rank rate is refused, saying why."""
    from .analysis.communication import collective_time_floor

    try:
        found = interconnect.get_link(link) if link is not None else interconnect.link_for_accelerator(acc)
    except interconnect.InterconnectError as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    if found.per_direction_bytes_per_s is None or not found.per_accelerator:
        collective_time_floor("alltoall", 1.0, n, found)
    return found


def _scenario_notes(conventions: Any, input_share: float, found: Any, n: int, sharding: str) -> list[str]:
    """The roofline's conventions and what this scenario assumes beyond them."""
    notes = list(conventions)
    if input_share:
        notes.append(f"input pipeline: {input_share:.0%} of the step waiting for input (not hidden behind compute)")
    if found is not None and found.scope == "intra_node" and n > 8:
        notes.append(f"{n:,} ranks on {found.name}, an intra-node link: one link domain of {n:,} accelerators is "
                     "assumed; where the all-to-all crosses nodes, choose the NIC's port rate")
    if sharding == "data_parallel":
        notes.append("data-parallel tables: every accelerator holds all of them, and the exchange of their "
                     "gradients is not counted")
    return notes


def _scenario_where(sharding: str, found: Any) -> str:
    if found is not None:
        return f"{RECSYS_SHARDINGS[sharding]} over {found.name}"
    if sharding == "data_parallel":
        return RECSYS_SHARDINGS[sharding]
    return f"{RECSYS_SHARDINGS[sharding]} on one GPU (nothing crosses)"


@renamed(n_gpus="n_accelerators")
def recsys_scenario(*, embedding_dim: int = 128, pooling: int | None = None, batch: int = 65_536,
                    n_accelerators: int = 8, sharding: str = "table_wise", link: str | None = None,
                    input_share: float = 0.0, accelerator: str = "H100 SXM", optimizer: str = "adagrad",
                    row_dtype: str = "fp32", dtype: str = "bf16", matmul_efficiency: float = 1.0) -> RecsysScenario:
    """One DLRM-DCNv2 training step of ``batch`` samples per accelerator on ``accelerator``, its tables
    ``sharding`` over ``n_accelerators`` (the all-to-all on ``link``, any name or alias of
    :mod:`mfu_toolkit.interconnect`; default the accelerator's own intra-node link; used only where something
    crosses ranks), a share ``input_share`` of the step spent waiting for input (``n_gpus=``, the old name of
    ``n_accelerators``, works until the next release with a ``DeprecationWarning``):
    the step's parts at the roofline, the dense MFU and the embedding bandwidth utilisation (the module docstring
    has the model).

    The defaults: the MLPerf reference configuration (dim 128, its multi-hot pooling, fp32 rows, Adagrad) on 8
    H100 SXM, tables sharded table-wise over NVLink4, 65,536 samples per GPU, no input wait: dense MFU at most
    26.2 %. Raises ``ValueError`` for a value out of range, an accelerator without a bf16 peak or a sourced
    bandwidth, and a link whose source gives no per-direction, per-rank figure.
    """
    from . import roofline as rl
    from .analysis.recsys import embedding_bandwidth
    from .flops import model_flops

    config = recsys_model(embedding_dim=embedding_dim, pooling=pooling, row_dtype=row_dtype, optimizer=optimizer)
    batch = _whole("batch", batch, 1, 2**24)
    n = _whole("n_accelerators", n_accelerators, 1, 1_000_000)
    if sharding not in RECSYS_SHARDINGS:
        raise ValueError(f"sharding must be one of {', '.join(RECSYS_SHARDINGS)}; got {sharding!r}")
    input_share = _share("input_share", input_share, 0.95)
    try:
        acc = hardware.resolve(accelerator).name
        hardware.get_memory_bandwidth(acc)
    except hardware.RegistryError as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    crosses = sharding != "data_parallel" and n > 1
    found = _scenario_link(link, acc, n) if crosses else None
    try:
        roof = rl.recsys_step_roofline(config, acc, batch=batch, dtype=dtype, sharding=sharding if crosses else None,
                                       n_accelerators=n, link=found, matmul_efficiency=matmul_efficiency)
    except hardware.RegistryError as exc:
        raise ValueError(" ".join(str(exc).split())) from None
    parts = {"compute_s": 0.0, "dense_memory_s": 0.0, "embedding_s": 0.0, "alltoall_s": 0.0}
    for row in roof.rows:
        key = ("alltoall_s" if row.bound == "interconnect" else "embedding_s" if row.kind == "embedding"
               else "compute_s" if row.bound == "compute" else "dense_memory_s")
        parts[key] += row.time_s
    step = roof.step_s / (1.0 - input_share)
    rate = n * batch / step
    bw = embedding_bandwidth(config, samples_per_s=rate, accelerator=acc, n_accelerators=n,
                             sharding=sharding if crosses else None, global_batch=n * batch, link=found)
    flops = model_flops(config).training_per_sample
    sent = next((r.bytes for r in roof.rows if r.bound == "interconnect"), 0.0)
    notes = _scenario_notes(roof.conventions, input_share, found, n, sharding)
    dense_mfu = roof.ceiling * (1.0 - input_share)
    where = _scenario_where(sharding, found)
    memory = parts["dense_memory_s"] + parts["embedding_s"]
    split = (f"compute-bound {parts['compute_s'] / step:.0%}, memory-bound {memory / step:.0%} "
             f"(embedding {parts['embedding_s'] / step:.0%})"
             + (f", all-to-all {parts['alltoall_s'] / step:.0%}" if crosses else "")
             + (f", input {input_share:.0%}" if input_share else ""))
    headline = (f"{config.name} on {n:,} × {acc}, {where}, {batch:,} samples per GPU: step ≥ {format_seconds(step)} "
                f"({split}) → dense MFU ≤ {dense_mfu:.1%}, embedding bandwidth {bw.utilisation:.1%}")
    return RecsysScenario(
        config.name, acc, dtype, config.embedding_dim, pooling, float(config.lookups_per_sample), row_dtype,
        optimizer, batch, n, sharding, found.name if found is not None else None,
        float(found.per_direction_bytes_per_s) if found is not None else math.nan, input_share, flops,
        bw.bytes_per_sample, sent, _table_bytes(config, optimizer, n if sharding != "data_parallel" else 1),
        roof.peak_flops, roof.bandwidth, roof.peak_source, roof.bandwidth_source, parts["compute_s"],
        parts["dense_memory_s"], parts["embedding_s"], parts["alltoall_s"], step - roof.step_s, step, roof.ceiling,
        roof.ceiling_comm_hidden, dense_mfu, bw.utilisation, rate, tuple(notes), headline)


def recsys_table(result: RecsysScenario):  # -> pandas.DataFrame of strings
    """The chain from the model and the accelerator to the two-part headline, one quantity per row."""
    import pandas as pd

    r = result
    pooled = (f"the reference's multi-hot sizes ({r.lookups_per_sample:,.0f} rows)" if r.pooling is None
              else f"{r.pooling} on every table ({r.lookups_per_sample:,.0f} rows)")
    rows = {  # values kept under pandas' 50-character column width, so no cell is cut short
        "embedding dimension": f"{r.embedding_dim:,}",
        "pooling factor": pooled,
        "rows, sparse optimizer": f"{r.row_dtype}, {r.optimizer}",
        "training FLOPs per sample": f"{r.flops_per_sample / 1e6:,.2f} MFLOP (lookups: 0)",
        "embedding bytes per sample": f"{r.embedding_bytes_per_sample:,.0f} B",
        "FLOPs per embedding byte": f"{r.flops_per_sample / r.embedding_bytes_per_sample:,.1f}",
        "accelerator": f"{r.accelerator}: {r.peak_flops / 1e12:,.1f} TFLOP/s, {r.bandwidth / 1e12:,.3g} TB/s",
        "ridge point": f"{r.peak_flops / r.bandwidth:,.0f} FLOP/B ({r.dtype})",
        "tables and optimizer state per GPU": format_bytes(r.table_bytes_per_gpu)
        + (" (every table)" if r.sharding == "data_parallel" else f" (1/{r.n_accelerators:,} of them)"),
        "all-to-all sent per GPU per step": (
            f"{format_bytes(r.alltoall_bytes_per_gpu)} on {r.link}, {r.link_bytes_per_s / 1e9:,.4g} GB/s each way"
            if r.link is not None else "none: nothing crosses ranks"),
    }
    for part, label in RECSYS_PARTS.items():
        rows[label] = f"{format_seconds(getattr(r, part))} ({r.share(part):.1%})"
    rows["step"] = f"{format_seconds(r.step_s)}, {r.samples_per_s / 1e6:,.4g} M samples/s on {r.n_accelerators:,} GPUs"
    rows["dense MFU"] = (f"{r.dense_mfu:.1%}" + (f" (ceiling {r.ceiling:.1%} without the input wait)"
                                                 if r.input_share else " (the roofline's ceiling)"))
    if r.link is not None:
        rows["dense MFU ceiling, all-to-all hidden"] = f"{r.ceiling_comm_hidden:.1%}"
    rows["embedding bandwidth utilisation"] = f"{r.embedding_bandwidth:.1%}"
    return pd.DataFrame({"value": list(rows.values())}, index=pd.Index(list(rows), name="quantity"))


@in_room_style
def recsys_figure(result: RecsysScenario):  # -> matplotlib.figure.Figure
    """Left, dense MFU and embedding bandwidth utilisation against the batch per GPU for the chosen step, the
    chosen batch marked; right, the chosen step split by what bounds each part of it."""
    import seaborn as sns
    from matplotlib.figure import Figure

    fig = Figure(figsize=EXPLORER_FIGSIZE, dpi=room_dpi())
    fig.subplots_adjust(left=0.08, right=0.62, bottom=0.14, top=0.8, wspace=0.35)
    grid = fig.add_gridspec(1, 2, width_ratios=(3.2, 1.0))
    ax, bar = fig.add_subplot(grid[0]), fig.add_subplot(grid[1])
    deep = sns.color_palette("deep")
    r = result
    same = dict(embedding_dim=r.embedding_dim, pooling=r.pooling, n_accelerators=r.n_accelerators, sharding=r.sharding,
                link=r.link, input_share=r.input_share, accelerator=r.accelerator, optimizer=r.optimizer,
                row_dtype=r.row_dtype, dtype=r.dtype)
    batches = sorted(set(RECSYS_BATCHES) | {r.batch})
    sweep = [recsys_scenario(batch=b, **same) for b in batches]
    ax.plot(batches, [100 * s.dense_mfu for s in sweep], color=deep[0], lw=2.0, marker="o", ms=4, label="dense MFU")
    ax.plot(batches, [100 * s.embedding_bandwidth for s in sweep], color=deep[1], lw=2.0, ls="--", marker="o",
            ms=4, label="embedding\nbandwidth")
    ax.scatter([r.batch] * 2, [100 * r.dense_mfu, 100 * r.embedding_bandwidth], s=90, color=[deep[0], deep[1]],
               edgecolor="black", zorder=5)
    ax.set_xscale("log", base=2)
    ticks = [2**9, 2**11, 2**13, 2**15, 2**17]
    ax.set_xticks(ticks, ["512", "2k", "8k", "32k", "128k"])  # plain labels: log-axis mathtext is slow
    ax.minorticks_off()
    ax.set_ylim(0.0, 100.0)
    ax.set_xlabel("samples per GPU (log scale)")
    ax.set_ylabel("% of peak")
    where = RECSYS_SHARDINGS[r.sharding].split(" (")[0] + (f" over {r.link}" if r.link else "")
    fig.suptitle(f"{r.model}\n{r.n_accelerators:,} × {r.accelerator}, tables {where}", x=0.08, y=0.98, ha="left",
                 va="top", fontsize="medium", linespacing=1.3)
    style_axes(ax)
    bottom = 0.0
    colors = [deep[0], deep[9], deep[1], deep[3], deep[7]]
    for (part, label), color in zip(RECSYS_PARTS.items(), colors, strict=True):
        value = 100 * r.share(part)
        bar.bar([0], [value], bottom=bottom, color=color, width=0.6, label=label)
        bottom += value
    bar.set_xlim(-0.5, 0.5)
    bar.set_ylim(0.0, 100.0)
    bar.set_xticks([0], [f"{r.batch:,}"])
    bar.set_ylabel("% of the step")
    handles, labels = bar.get_legend_handles_labels()
    first = ax.get_legend_handles_labels()
    bar.legend(first[0] + handles[::-1], first[1] + labels[::-1], loc="upper left", bbox_to_anchor=(1.08, 1.04),
               frameon=False, fontsize="small")
    style_axes(bar)
    bar.grid(axis="x", visible=False)
    return fig


@renamed(n_gpus="n_accelerators")
def recsys_explorer(*, embedding_dim: int = 128, pooling: int | None = None, batch: int = 65_536,
                    n_accelerators: int = 8,
                    sharding: str = "table_wise", link: str | None = None, input_share: float = 0.0,
                    accelerator: str = "H100 SXM", optimizer: str = "adagrad", row_dtype: str = "fp32") -> Any:
    """Embedding dimension, pooling factor, batch per GPU, GPUs, input wait, sharding, link, accelerator, sparse
    optimizer and row precision → the step split at the roofline, the dense MFU and the embedding bandwidth
    utilisation (:func:`recsys_scenario`, whose defaults it opens on). The first slider is the embedding
    dimension. CSS class ``recsys-explorer``."""
    import ipywidgets as w

    from .flops.recsys import OPTIMIZERS, ROW_DTYPES

    first = recsys_scenario(embedding_dim=embedding_dim, pooling=pooling, batch=batch, n_accelerators=n_accelerators,
                            sharding=sharding, link=link, input_share=input_share, accelerator=accelerator,
                            optimizer=optimizer, row_dtype=row_dtype)  # refuses bad defaults here
    st = slider_style()
    dim = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(RECSYS_DIMS) | {embedding_dim})],
                            value=embedding_dim, description="embedding dim", continuous_update=False, style=st)
    pools = sorted(set(RECSYS_POOLINGS) | ({pooling} if pooling else set()),
                   key=lambda p: 214 / 26 if p == 0 else p)
    pool = w.SelectionSlider(options=[("MLPerf" if p == 0 else f"{p}", p) for p in pools],
                             value=pooling or 0, description="pooling factor", continuous_update=False, style=st)
    bat = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(RECSYS_BATCHES) | {batch})], value=batch,
                            description="samples per GPU", continuous_update=False, style=st)
    gpus = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(RECSYS_GPUS) | {n_accelerators})],
                             value=n_accelerators,
                             description="GPUs", continuous_update=False, style=st)
    inp = w.FloatSlider(value=input_share, min=0.0, max=0.9, step=0.05, description="waiting for input",
                        readout_format=".0%", continuous_update=False, style=st)
    sh = w.Dropdown(options=[(RECSYS_SHARDINGS[k], k) for k in ("data_parallel", "table_wise")]
                    + ([(RECSYS_SHARDINGS[sharding], sharding)] if sharding == "column_wise" else []),
                    value=sharding, description="tables", style=st)
    links = comm_links()
    try:
        default_link = first.link or interconnect.link_for_accelerator(first.accelerator).name
    except interconnect.InterconnectError:
        default_link = "InfiniBand NDR"
    ln = w.Dropdown(options=[(f"{n} ({interconnect.get_link(n).per_direction_bytes_per_s / 1e9:,.4g} GB/s each way)",
                              n) for n in links], value=default_link, description="all-to-all link", style=st)
    acc = w.Dropdown(options=recsys_accelerators(), value=first.accelerator, description="accelerator", style=st)
    opt = w.Dropdown(options=list(OPTIMIZERS), value=optimizer, description="sparse optimizer", style=st)
    rows = w.Dropdown(options=list(ROW_DTYPES), value=row_dtype, description="embedding rows", style=st)

    def compute() -> Any:
        return recsys_scenario(embedding_dim=dim.value, pooling=pool.value or None, batch=bat.value,
                               n_accelerators=gpus.value, sharding=sh.value, link=ln.value, input_share=inp.value,
                               accelerator=acc.value, optimizer=opt.value, row_dtype=rows.value)

    layout = [w.HBox([w.VBox([dim, pool, bat, gpus, inp]), w.VBox([sh, ln, acc, opt, rows])])]
    return live_explorer([dim, pool, bat, gpus, inp, sh, ln, acc, opt, rows], compute, recsys_figure, recsys_table,
                 "recsys-explorer", layout)
