"""Roofline arithmetic: FLOPs and bytes of a model's operations against an accelerator's peaks.

An operation that does ``F`` FLOPs while moving ``B`` bytes to and from memory has arithmetic
intensity ``I = F / B`` (FLOP per byte). On an accelerator with peak ``P`` FLOP/s and memory
bandwidth ``W`` B/s it can run no faster than ``max(F / P, B / W)``, so its attainable rate is
``min(P, I · W)`` (Williams, Waterman & Patterson, "Roofline: an insightful visual performance
model for multicore architectures", CACM 52(4), 2009). The *ridge point* ``P / W`` is the
intensity at which the two limits meet: below it an op is memory-bound, above it compute-bound.

Conventions (as in ``mfu_toolkit.flops``): 2 FLOPs per multiply-add; bytes are the minimum
traffic of an op that reads each input once and writes each output once (no cache reuse across
ops, no re-reads inside an op), so the intensities are upper bounds and the times lower bounds.
Elementwise FLOPs per element are stated per op below; they are not model FLOPs (MFU counts
matmuls only), which is exactly why time spent in them lowers MFU.

Pure Python: no pandas, so it can sit beside ``formulas``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = [
    "BYTES_PER_ELEMENT",
    "CROSS_ELEMENTWISE_FLOPS",
    "Op",
    "RecsysStepRoofline",
    "RooflineRow",
    "attainable_flops",
    "dlrm_ops",
    "embedding_bag",
    "elementwise",
    "matmul",
    "mfu_ceiling",
    "op_time",
    "recsys_step_ops",
    "recsys_step_roofline",
    "ridge_point",
    "transformer_layer_ops",
]

BYTES_PER_ELEMENT: dict[str, int] = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "fp8": 1}

# FLOPs per output element of the elementwise ops of a transformer layer (a stated count, not a
# measurement): LayerNorm ~5 (subtract mean, square, scale by 1/σ, multiply γ, add β — the mean and
# variance reductions add ~2 more per element, counted in the 5 as they amortise), a residual add 1,
# GeLU (tanh form) ~8, softmax ~5 (max, subtract, exp, sum, divide). Any count below ~100 leaves
# these ops far below the ridge point of every accelerator in the registry.
LAYERNORM_FLOPS, RESIDUAL_FLOPS, GELU_FLOPS, SOFTMAX_FLOPS = 5, 1, 8, 5


@dataclass(frozen=True)
class Op:
    """One operation: its name, kind (matmul, attention, elementwise, embedding), FLOPs and bytes.

    ``model_flops`` are the FLOPs MFU counts (matmuls and attention products; zero for elementwise
    ops and embedding lookups, as in ``mfu_toolkit.flops``)."""

    name: str
    kind: str
    flops: float
    bytes: float
    model_flops: float

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP per byte moved."""
        return self.flops / self.bytes if self.bytes else math.inf


def _check_positive(**values: float) -> None:
    for name, value in values.items():
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be a positive finite number; got {value!r}")


def bytes_per_element(dtype: str) -> int:
    """Bytes of one element of ``dtype`` (fp32/tf32 4, bf16/fp16 2, fp8 1)."""
    try:
        return BYTES_PER_ELEMENT[dtype]
    except KeyError:
        raise ValueError(f"dtype must be one of {', '.join(BYTES_PER_ELEMENT)}; got {dtype!r}") from None


def matmul(name: str, m: float, n: float, k: float, *, dtype: str = "bf16", count: float = 1) -> Op:
    """``count`` products of an (m×k) and a (k×n) matrix: 2·m·n·k FLOPs each; bytes = read both
    inputs and write the output once, (m·k + k·n + m·n) elements."""
    _check_positive(m=m, n=n, k=k, count=count)
    e = bytes_per_element(dtype)
    flops = 2.0 * m * n * k * count
    return Op(name, "matmul", flops, (m * k + k * n + m * n) * e * count, flops)


def elementwise(name: str, elements: float, *, flops_per_element: float, tensors_read: int = 1,
                tensors_written: int = 1, dtype: str = "bf16") -> Op:
    """An elementwise op over ``elements`` values: reads ``tensors_read`` and writes
    ``tensors_written`` tensors of that size. Counts zero model FLOPs."""
    _check_positive(elements=elements, flops_per_element=flops_per_element)
    e = bytes_per_element(dtype)
    return Op(name, "elementwise", flops_per_element * elements, (tensors_read + tensors_written) * elements * e, 0.0)


def transformer_layer_ops(*, seq_len: int, batch: int, hidden: int, ffn_hidden: int | None = None,
                          heads: int = 32, dtype: str = "bf16", fused_attention: bool = True) -> list[Op]:
    """The forward operations of one GPT-style layer (Megatron-LM layout) for ``batch × seq_len`` tokens.

    Matmuls: QKV projection (t×h by h×3h), output projection (h×h), MLP up (h×f) and down (f×h),
    t = batch·seq_len tokens. Attention: Q·Kᵀ and scores·V, 2·b·s²·h FLOPs each (PaLM Appendix B,
    non-causal). ``fused_attention`` (FlashAttention, Dao et al. 2022) keeps the s×s scores on chip:
    bytes = read Q, K, V and write O; otherwise the scores are written, re-read by a softmax and
    read again, as in a plain implementation. Elementwise: two LayerNorms, two residual adds, GeLU.
    """
    _check_positive(seq_len=seq_len, batch=batch, hidden=hidden, heads=heads)
    f = ffn_hidden or 4 * hidden
    t, h, s, e = batch * seq_len, hidden, seq_len, bytes_per_element(dtype)
    ops = [
        elementwise("LayerNorm (attention)", t * h, flops_per_element=LAYERNORM_FLOPS, dtype=dtype),
        matmul("QKV projection", t, 3 * h, h, dtype=dtype),
    ]
    attn_flops = 2 * (2.0 * batch * s * s * h)  # scores and values
    if fused_attention:
        ops.append(Op("attention (fused)", "attention", attn_flops, 4 * t * h * e, attn_flops))
    else:
        d = h // heads
        scores = matmul("attention scores Q·Kᵀ", s, s, d, dtype=dtype, count=batch * heads)
        values = matmul("attention scores·V", s, d, s, dtype=dtype, count=batch * heads)
        ops += [
            Op(scores.name, "attention", scores.flops, scores.bytes, scores.model_flops),
            elementwise("softmax", batch * heads * s * s, flops_per_element=SOFTMAX_FLOPS, dtype=dtype),
            Op(values.name, "attention", values.flops, values.bytes, values.model_flops),
        ]
    ops += [
        matmul("output projection", t, h, h, dtype=dtype),
        elementwise("residual add (attention)", t * h, flops_per_element=RESIDUAL_FLOPS, tensors_read=2,
                    dtype=dtype),
        elementwise("LayerNorm (MLP)", t * h, flops_per_element=LAYERNORM_FLOPS, dtype=dtype),
        matmul("MLP up", t, f, h, dtype=dtype),
        elementwise("GeLU", t * f, flops_per_element=GELU_FLOPS, dtype=dtype),
        matmul("MLP down", t, h, f, dtype=dtype),
        elementwise("residual add (MLP)", t * h, flops_per_element=RESIDUAL_FLOPS, tensors_read=2, dtype=dtype),
    ]
    return ops


def embedding_bag(name: str, *, batch: int, tables: int, dim: int, pooling: int = 1, dtype: str = "fp32") -> Op:
    """Sum-pooled embedding lookups: per sample and table, ``pooling`` rows of ``dim`` values are read
    and summed into one. FLOPs = the (pooling − 1)·dim adds (zero model FLOPs, as the FLOPs
    conventions count lookups); bytes = the rows read plus the pooled vector written."""
    _check_positive(batch=batch, tables=tables, dim=dim, pooling=pooling)
    e = bytes_per_element(dtype)
    lookups = batch * tables
    return Op(name, "embedding", float(lookups * (pooling - 1) * dim), float(lookups * (pooling + 1) * dim * e), 0.0)


def dlrm_ops(*, batch: int, dtype: str = "fp32", pooling: int = 1) -> list[Op]:
    """Forward ops of MLPerf DLRM-DCNv2 (the layer sizes of ``mfu_toolkit.flops.recsys``): bottom MLP
    13→512→256→128, 26 embedding tables of dim 128, 3 low-rank (512) cross layers on 3456 inputs,
    top MLP 3456→1024→1024→512→256→1. ``pooling`` rows per lookup (1 = one-hot)."""
    _check_positive(batch=batch)
    ops = []
    for a, b in ((13, 512), (512, 256), (256, 128)):
        ops.append(matmul(f"bottom MLP {a}→{b}", batch, b, a, dtype=dtype))
    ops.append(embedding_bag("embedding lookups (26 × 128)", batch=batch, tables=26, dim=128, pooling=pooling,
                             dtype=dtype))
    for i in range(3):
        ops.append(matmul(f"cross layer {i + 1} down 3456→512", batch, 512, 3456, dtype=dtype))
        ops.append(matmul(f"cross layer {i + 1} up 512→3456", batch, 3456, 512, dtype=dtype))
    for a, b in ((3456, 1024), (1024, 1024), (1024, 512), (512, 256), (256, 1)):
        ops.append(matmul(f"top MLP {a}→{b}", batch, b, a, dtype=dtype))
    return ops


def ridge_point(peak_flops: float, bandwidth_bytes: float) -> float:
    """Intensity (FLOP/byte) at which compute and memory limits meet: ``P / W``."""
    _check_positive(peak_flops=peak_flops, bandwidth_bytes=bandwidth_bytes)
    return peak_flops / bandwidth_bytes


def attainable_flops(intensity: float, peak_flops: float, bandwidth_bytes: float) -> float:
    """The roofline: ``min(P, I · W)`` FLOP/s for an op of intensity ``I``."""
    _check_positive(peak_flops=peak_flops, bandwidth_bytes=bandwidth_bytes)
    return min(peak_flops, intensity * bandwidth_bytes)


def op_time(op: Op, peak_flops: float, bandwidth_bytes: float) -> float:
    """Lower bound on the op's time: ``max(F / P, B / W)`` seconds."""
    _check_positive(peak_flops=peak_flops, bandwidth_bytes=bandwidth_bytes)
    return max(op.flops / peak_flops, op.bytes / bandwidth_bytes)


def mfu_ceiling(ops: list[Op], peak_flops: float, bandwidth_bytes: float, *, matmul_efficiency: float = 1.0) -> float:
    """The highest MFU these ops allow when each runs at its roofline, one after another.

    MFU = model FLOPs / (time × peak). Memory-bound ops take time while adding no model FLOPs (or
    fewer than the peak allows), so the ceiling is below 1 even with perfect kernels.
    ``matmul_efficiency`` (≤ 1) scales the compute roof of matmuls and attention to an achievable
    matmul rate (a measured fraction of the datasheet peak) instead of the datasheet peak.
    """
    if not 0 < matmul_efficiency <= 1:
        raise ValueError(f"matmul_efficiency must be in (0, 1]; got {matmul_efficiency!r}")
    if not ops:
        raise ValueError("ops must not be empty")
    total = 0.0
    for op in ops:
        roof = peak_flops * (matmul_efficiency if op.kind in ("matmul", "attention") else 1.0)
        total += op_time(op, roof, bandwidth_bytes)
    return sum(op.model_flops for op in ops) / (total * peak_flops)


# --------------------------------------------------------------------------------------------
# the roofline of a recommendation model's training step

#: FLOPs per element of a DCNv2 cross layer's ``x0 ⊙ y + x`` over its forward and backward (a stated
#: count): forward one multiply and one add, backward the two products ``g ⊙ x0`` and ``g ⊙ y``.
CROSS_ELEMENTWISE_FLOPS = 4
# Tensors of batch × D elements that op moves: forward reads x0, y and x and writes the output; backward
# reads the incoming gradient g, x0 and y and writes the gradients of y and of x0 (x's gradient is g).
_CROSS_READ, _CROSS_WRITTEN = 6, 3
# The registry peak a dense dtype's matmuls run at: fp32 tensors on tensor cores run as TF32.
_PEAK_DTYPES = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp32": "tf32", "tf32": "tf32"}


def _positive_int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a whole number >= 1; got {value!r}")
    return value


def _dlrm_config(config: object) -> object:
    """A DLRMConfig from itself or a preset name; anything else is refused with what is covered."""
    from .flops import get_preset
    from .flops.recsys import DLRMConfig

    found = get_preset(config).config if isinstance(config, str) else config
    if not isinstance(found, DLRMConfig):
        raise ValueError(f"the recommendation-step roofline covers DLRM configurations (dot, DCNv2 or concat "
                         f"interaction: a DLRMConfig or a preset such as 'dlrm-dcnv2'); got {type(found).__name__} "
                         "(for HSTU's attention layers use transformer_layer_ops)")
    if found.extra_blocks:
        raise ValueError(f"{found.name}: extra_blocks state FLOPs but no bytes, so they cannot be placed on a "
                         "roofline; give their ops as Op(...) yourself")
    return found


def _tower(prefix: str, in_features: int, sizes: tuple[int, ...], batch: int, dtype: str) -> list[Op]:
    """A dense tower's layers, each as its forward product and the two backward products (count 3)."""
    ops, prev = [], in_features
    for out in sizes:
        ops.append(matmul(f"{prefix} {prev}→{out}", batch, out, prev, dtype=dtype, count=3))
        prev = out
    return ops


def _interaction_ops(c: object, batch: int, dtype: str, cross_elementwise: bool) -> list[Op]:
    if c.interaction == "dot":  # one (n×d)·(d×n) Gram matrix per sample, counted in full as in flops.recsys
        n = c.n_sparse + 1
        return [matmul(f"dot interaction ({n} vectors of {c.embedding_dim})", n, n, c.embedding_dim, dtype=dtype,
                       count=3 * batch)]
    if c.interaction == "concat":
        return []
    ops, d = [], c.interaction_width
    for i in range(1, c.cross_layers + 1):
        if c.cross_rank is None:
            ops.append(matmul(f"cross layer {i} {d}→{d}", batch, d, d, dtype=dtype, count=3))
        else:
            r = c.cross_rank
            ops.append(matmul(f"cross layer {i} down {d}→{r}", batch, r, d, dtype=dtype, count=3))
            ops.append(matmul(f"cross layer {i} up {r}→{d}", batch, d, r, dtype=dtype, count=3))
        if cross_elementwise:
            ops.append(elementwise(f"cross layer {i} x0 ⊙ y + x", batch * d, flops_per_element=CROSS_ELEMENTWISE_FLOPS,
                                   tensors_read=_CROSS_READ, tensors_written=_CROSS_WRITTEN, dtype=dtype))
    return ops


def _embedding_ops(traffic: object, batch: int) -> list[Op]:
    """The tables' traffic of a step as memory-bound ops: lookups, the sparse update, optimizer state."""
    t, name = traffic, _dtype_label(traffic.row_bytes)
    adds = (t.lookups_per_sample - t.vectors_per_sample) * t.embedding_dim * batch  # pooling sums, 0 one-hot
    ops = [Op(f"embedding lookups ({t.lookups_per_sample:,.6g} rows × {t.embedding_dim}, {name})", "embedding",
              float(max(adds, 0.0)), t.term("lookup_read") * batch, 0.0),
           Op("embedding sparse update", "embedding", 0.0,
              (t.term("update_read") + t.term("update_write")) * batch, 0.0)]
    state = (t.term("state_read") + t.term("state_write")) * batch
    if state:
        ops.append(Op(f"embedding optimizer state ({t.optimizer})", "embedding", 0.0, state, 0.0))
    return ops


def _dtype_label(nbytes: int) -> str:
    return {4: "fp32", 2: "16-bit", 1: "int8"}.get(nbytes, f"{nbytes}-byte")


def recsys_step_ops(config: object, *, batch: int, dtype: str = "bf16", optimizer: str | None = None,
                    cross_elementwise: bool = True) -> list[Op]:
    """The memory-side ops of one DLRM training step of ``batch`` samples on one accelerator.

    ``config``: a ``flops.recsys.DLRMConfig`` or a preset name (``"dlrm-dcnv2"``). Each dense layer
    (bottom MLP, interaction, top MLP) is one row holding its forward product and its two backward
    products (input and weight gradients: the same FLOPs and the same minimum traffic), so the rows'
    model FLOPs add up to ``model_flops(config).training_per_sample × batch`` (the 3× convention, the
    first layer's input gradient included). Activations and weights are ``dtype``; bias, ReLU and the
    sigmoid are taken as fused into the matmuls. With ``cross_elementwise`` each DCNv2 cross layer's
    ``x0 ⊙ y + x`` is an elementwise op (``CROSS_ELEMENTWISE_FLOPS`` per element; 6 tensors read and 3
    written over forward and backward). The embedding rows are the bytes of
    ``flops.recsys.embedding_traffic(config, optimizer=...)`` per sample × ``batch``: the lookups
    (FLOPs = the pooling sums), the sparse update and the optimizer state; the update's and optimizer's
    few FLOPs per element are not counted (far below every ridge point: their time is bytes /
    bandwidth). With table-wise sharding over N accelerators each still looks up ``batch`` samples'
    worth of rows on average (N × batch samples over 1/N of the tables).
    """
    from .flops.recsys import embedding_traffic

    c = _dlrm_config(config)
    batch = _positive_int("batch", batch)
    bytes_per_element(dtype)
    ops = _tower("bottom MLP", c.n_dense, c.bottom_mlp, batch, dtype) if c.bottom_mlp else []
    ops += _embedding_ops(embedding_traffic(c, optimizer=optimizer), batch)
    ops += _interaction_ops(c, batch, dtype, cross_elementwise)
    ops += _tower("top MLP", c.top_in, c.top_mlp, batch, dtype)
    return ops


@dataclass(frozen=True)
class RooflineRow:
    """One op of a step at its roof: what bounds it (``compute``, ``memory`` or ``interconnect``) and
    its least time in seconds. An interconnect row's ``bytes`` are what one rank sends one way."""

    name: str
    kind: str
    flops: float
    bytes: float
    model_flops: float
    intensity: float
    bound: str
    time_s: float


@dataclass(frozen=True)
class RecsysStepRoofline:
    """One DLRM training step on one accelerator's roofline, the time split by what bounds each op, and
    the MFU ceiling: model FLOPs / (the ops' times added up × peak), ops one after another."""

    model: str
    accelerator: str
    dtype: str
    batch: int
    n_accelerators: int
    peak_flops: float
    bandwidth: float
    peak_source: str
    bandwidth_source: str
    ops: tuple[Op, ...]
    rows: tuple[RooflineRow, ...]
    link: str | None
    link_bytes_per_s: float
    alltoall_note: str
    matmul_efficiency: float
    conventions: tuple[str, ...]

    def _seconds(self, bound: str) -> float:
        return sum(r.time_s for r in self.rows if r.bound == bound)

    @property
    def compute_bound_s(self) -> float:
        return self._seconds("compute")

    @property
    def memory_bound_s(self) -> float:
        return self._seconds("memory")

    @property
    def interconnect_s(self) -> float:
        return self._seconds("interconnect")

    @property
    def step_s(self) -> float:
        """The step's least time with every op at its roof, one after another."""
        return sum(r.time_s for r in self.rows)

    @property
    def model_flops(self) -> float:
        return sum(r.model_flops for r in self.rows)

    @property
    def ridge(self) -> float:
        return ridge_point(self.peak_flops, self.bandwidth)

    @property
    def ceiling(self) -> float:
        """The highest MFU this step allows: model FLOPs / (step time × peak)."""
        return self.model_flops / (self.step_s * self.peak_flops)

    @property
    def ceiling_comm_hidden(self) -> float:
        """The ceiling were the all-to-all wholly hidden behind the accelerator's own work."""
        on_chip = self.compute_bound_s + self.memory_bound_s
        return self.model_flops / (max(on_chip, self.interconnect_s) * self.peak_flops)

    def table(self) -> list[dict[str, object]]:
        """One dict per row: FLOPs, bytes, intensity, what bounds it, its time and share of the step."""
        total = self.step_s
        return [{"op": r.name, "kind": r.kind, "flops": r.flops, "bytes": r.bytes, "model_flops": r.model_flops,
                 "intensity": r.intensity, "bound": r.bound, "time_s": r.time_s, "share": r.time_s / total}
                for r in self.rows]

    def summary(self) -> str:
        total = self.step_s
        parts = [f"compute-bound {self.compute_bound_s * 1e3:,.4g} ms ({self.compute_bound_s / total:.1%})",
                 f"memory-bound {self.memory_bound_s * 1e3:,.4g} ms ({self.memory_bound_s / total:.1%})"]
        if self.link is not None:
            parts.append(f"all-to-all on {self.link} {self.interconnect_s * 1e3:,.4g} ms "
                         f"({self.interconnect_s / total:.1%})")
        return (f"{self.model} on {self.accelerator} ({self.dtype}), {self.batch:,} samples per accelerator: "
                f"step ≥ {total * 1e3:,.4g} ms at the roofline, {', '.join(parts)}; MFU ceiling {self.ceiling:.1%}")

    def to_dict(self) -> dict[str, object]:
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("ops", "rows")}
        out.update(rows=self.table(), step_s=self.step_s, compute_bound_s=self.compute_bound_s,
                   memory_bound_s=self.memory_bound_s, interconnect_s=self.interconnect_s,
                   model_flops=self.model_flops, ceiling=self.ceiling, ceiling_comm_hidden=self.ceiling_comm_hidden,
                   summary=self.summary(), conventions=list(self.conventions))
        return out


def _alltoall_row(traffic: object, batch: int, n: int, sharding: str | None, link: object,
                  accelerator: str) -> tuple[RooflineRow | None, str | None, float, str]:
    """(the all-to-all row or None, link name, its per-direction B/s, what was or was not counted)."""
    from . import interconnect
    from .flops.recsys import SHARDINGS

    if sharding is None:
        return None, None, math.nan, "no all-to-all: sharding not given (replicated tables or one accelerator)"
    if sharding not in SHARDINGS:
        raise ValueError(f"sharding must be one of {', '.join(SHARDINGS)} or None; got {sharding!r}")
    if sharding == "data_parallel" or n == 1:
        return None, None, math.nan, f"no all-to-all: nothing crosses ranks ({sharding}, {n} accelerator(s))"
    found = interconnect.get_link(link) if link is not None else interconnect.link_for_accelerator(accelerator)
    one_way = found.per_direction_bytes_per_s
    if one_way is None or not found.per_accelerator:
        raise ValueError(f"{found.name}: its source gives no per-direction rate per accelerator; pass link= a "
                         "Link(...) you state")
    sent = traffic.alltoall_per_step(batch * n, n, sharding) / n  # = batch × per sample × (N − 1) / N
    row = RooflineRow(f"all-to-all of pooled embeddings ({sharding}, {n} ranks)", "communication", 0.0, sent, 0.0,
                      0.0, "interconnect", sent / one_way)
    where = "the link given" if link is not None else f"{accelerator}'s intra-node link (one node)"
    note = (f"all-to-all: {traffic.alltoall_per_sample:,.0f} B per sample (pooled embeddings forward, their "
            f"gradients backward) × {batch:,} × (N−1)/N = {sent:,.0f} B sent by each rank one way, at "
            f"{one_way / 1e9:,.6g} GB/s per direction on {found.name} ({where}; {found.source})")
    return row, found.name, one_way, note


def recsys_step_roofline(config: object, accelerator: str, *, batch: int, dtype: str = "bf16",
                         sharding: str | None = None, n_accelerators: int = 1, link: object = None,
                         optimizer: str | None = None, matmul_efficiency: float = 1.0,
                         cross_elementwise: bool = True) -> RecsysStepRoofline:
    """How high can a DLRM-like model's MFU go on ``accelerator`` at ``batch`` samples per accelerator?

    The ops of :func:`recsys_step_ops` placed on the accelerator's roofline: peak from the registry for
    ``dtype`` (fp32 → the TF32 peak), memory bandwidth from ``memory_bandwidth.csv``, each op's least
    time ``max(F / P, B / W)`` (matmuls against ``matmul_efficiency × P``). Where the tables are
    model-parallel (``sharding="table_wise"`` or ``"column_wise"`` over ``n_accelerators``) the
    all-to-all of the pooled embeddings is a row of its own, timed on ``link`` (a name of
    ``interconnect.csv`` or a ``Link``; default the accelerator's intra-node link, so one node) at its
    per-direction rate. The step time is the rows' times added up (no overlap; see
    ``ceiling_comm_hidden`` for the all-to-all hidden) and split into compute-bound, memory-bound and
    interconnect parts; the MFU ceiling is model FLOPs / (step time × peak). Not counted: the dense
    optimizer step, the input pipeline, launch gaps: the ceiling is an upper bound.
    """
    from . import hardware
    from .flops.recsys import embedding_traffic

    if dtype not in _PEAK_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(_PEAK_DTYPES)}; got {dtype!r}")
    if not 0 < matmul_efficiency <= 1:
        raise ValueError(f"matmul_efficiency must be in (0, 1]; got {matmul_efficiency!r}")
    c = _dlrm_config(config)
    n = _positive_int("n_accelerators", n_accelerators)
    ops = recsys_step_ops(c, batch=batch, dtype=dtype, optimizer=optimizer, cross_elementwise=cross_elementwise)
    peak = hardware.get_peak(accelerator, _PEAK_DTYPES[dtype])
    bw = hardware.get_memory_bandwidth(accelerator)
    P, W = peak.flops, bw.bytes_per_s
    rows = []
    for op in ops:
        roof = P * (matmul_efficiency if op.kind in ("matmul", "attention") else 1.0)
        t_compute, t_memory = op.flops / roof, op.bytes / W
        rows.append(RooflineRow(op.name, op.kind, op.flops, op.bytes, op.model_flops, op.intensity,
                                "compute" if t_compute >= t_memory else "memory", max(t_compute, t_memory)))
    traffic = embedding_traffic(c, optimizer=optimizer)
    a2a, link_name, one_way, a2a_note = _alltoall_row(traffic, batch, n, sharding, link, peak.accelerator)
    if a2a is not None:
        rows.append(a2a)
    conventions = (
        f"per accelerator, one training step of {batch:,} samples; each matmul row = its forward and two backward "
        "products (3× convention, the first layer's input gradient included); ops one after another",
        f"activations and weights {dtype} ({bytes_per_element(dtype)} B); matmuls at the {_PEAK_DTYPES[dtype]} peak"
        f" × {matmul_efficiency:g}: {peak.describe()}; memory: {bw.describe()}",
        "bias, ReLU and the sigmoid taken as fused into the matmuls; " + (
            f"each cross layer's x0 ⊙ y + x counted: {_CROSS_READ} tensors read, {_CROSS_WRITTEN} written, "
            f"{CROSS_ELEMENTWISE_FLOPS} FLOPs per element" if cross_elementwise and c.interaction == "dcnv2"
            else "no elementwise op counted"),
        "embedding bytes: embedding_traffic(): " + traffic.summary(),
        *traffic.conventions[2:5],
        a2a_note,
        "not counted: the dense optimizer step, the input pipeline, kernel launch gaps (an upper bound on MFU)",
    )
    return RecsysStepRoofline(c.name, peak.accelerator, dtype, batch, n, P, W, peak.source, bw.source, tuple(ops),
                              tuple(rows), link_name, one_way, a2a_note, matmul_efficiency, conventions)
