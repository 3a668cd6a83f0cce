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
    "Op",
    "attainable_flops",
    "dlrm_ops",
    "embedding_bag",
    "elementwise",
    "matmul",
    "mfu_ceiling",
    "op_time",
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
