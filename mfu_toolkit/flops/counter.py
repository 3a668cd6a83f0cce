"""Count the FLOPs of one training step of a PyTorch module, beside the analytic estimate.

Uses ``torch.utils.flop_counter.FlopCounterMode``, which counts matmuls, convolutions and
attention kernels at 2 FLOPs per multiply-add, the same convention as the estimators here.
Forward (model call and loss) and backward (``loss.backward()``) are counted separately.
PyTorch is optional: it is imported inside the functions, never at module import.

What the counter sees that the analytic convention does not (numbered so notes can cite them):

1. The backward pass only computes the gradients something needs. The first layer on raw input
   features has no input gradient, so the counted backward is a little under 2 x forward.
2. ``FlopCounterMode`` never halves attention for causal masks; compare with ``causal=False``.
3. On CPU, ``F.scaled_dot_product_attention`` runs ``_scaled_dot_product_flash_attention_for_cpu``,
   which torch's table does not list; this module maps it (and its backward) to torch's own
   attention formulas so attention is not silently dropped.
4. Fused attention backward kernels (flash, memory-efficient, CPU) recompute the score matrix
   ``Q @ K^T``, and torch counts that: 5 attention matmuls in backward instead of 4. Those are
   hardware FLOPs; the analytic model FLOPs leave them out.

Embedding bytes (:func:`count_embedding_bytes`, :func:`compare_embedding_bytes`): the rows that
``nn.EmbeddingBag`` / ``nn.Embedding`` look up in one training step, seen at the ATen operators
(``_embedding_bag``, ``embedding`` and their backward), set beside :func:`~.recsys.embedding_traffic`.
The counter sees the lookups (indices x dim x the weight's element size) and the gradient rows the
backward produces (indices x dim x the gradient's element size); it runs no optimizer step, so the
update's re-read and the optimizer state stay analytic only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .recsys import EmbeddingTraffic, embedding_traffic
from .transformer import ModelFlops

__all__ = [
    "CountedFlops",
    "CounterComparison",
    "CountedEmbeddingBytes",
    "EmbeddingByteComparison",
    "count_training_step",
    "compare_with_counter",
    "count_embedding_bytes",
    "compare_embedding_bytes",
]


def _import_torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - exercised only without torch
        raise ImportError(
            "the FLOPs counter needs PyTorch (an optional extra): pip install 'mfu_toolkit[torch]'"
        ) from exc
    return torch


@dataclass(frozen=True)
class CountedFlops:
    """FLOPs counted by ``FlopCounterMode`` for one training step, by pass and operator."""

    forward: float
    backward: float
    forward_by_op: dict[str, float] = field(default_factory=dict, compare=False)
    backward_by_op: dict[str, float] = field(default_factory=dict, compare=False)

    @property
    def training(self) -> float:
        return self.forward + self.backward

    @property
    def backward_to_forward(self) -> float:
        return self.backward / self.forward if self.forward else float("nan")

    def to_dict(self) -> dict[str, Any]:
        return {
            "forward": self.forward,
            "backward": self.backward,
            "training": self.training,
            "forward_by_op": dict(self.forward_by_op),
            "backward_by_op": dict(self.backward_by_op),
        }


def _cpu_sdpa_mapping(torch) -> dict[Any, Callable[..., int]]:
    """Flop formulas for the CPU fused attention kernels missing from torch's table (note 3)."""
    from torch.utils import flop_counter as fc

    aten = torch.ops.aten
    known = getattr(fc, "flop_registry", {})
    mapping: dict[Any, Callable[..., int]] = {}
    fwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu", None)
    bwd = getattr(aten, "_scaled_dot_product_flash_attention_for_cpu_backward", None)
    if fwd is not None and fwd not in known:

        def sdpa_cpu(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs):
            return fc.sdpa_flop_count(query_shape, key_shape, value_shape)

        mapping[fwd] = sdpa_cpu
    if bwd is not None and bwd not in known:

        def sdpa_cpu_backward(
            grad_out_shape, query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs
        ):
            return fc.sdpa_backward_flop_count(grad_out_shape, query_shape, key_shape, value_shape)

        mapping[bwd] = sdpa_cpu_backward
    return mapping


def _call(model, sample_input):
    if isinstance(sample_input, Mapping):
        return model(**sample_input)
    if isinstance(sample_input, tuple):
        return model(*sample_input)
    return model(sample_input)


def _default_loss(torch, output):
    if isinstance(output, (tuple, list)) and output:
        output = output[0]
    if not isinstance(output, torch.Tensor):
        raise TypeError(
            "loss_fn is required when the model does not return a tensor; "
            f"got output of type {type(output).__name__}"
        )
    return output.float().sum()


def _by_op(mode) -> dict[str, float]:
    counts = mode.get_flop_counts().get("Global", {})
    return {str(op): float(n) for op, n in counts.items()}


def count_training_step(
    model: Any,
    sample_input: Any,
    loss_fn: Callable[[Any], Any] | None = None,
) -> CountedFlops:
    """Count forward and backward FLOPs of one training step of ``model`` on ``sample_input``.

    ``sample_input`` is a tensor, a tuple (positional arguments) or a dict (keyword arguments).
    ``loss_fn(output)`` returns the scalar loss (default: the sum of the output). Gradients the
    parameters held before the call are restored afterwards; no optimizer step is taken.
    """
    torch = _import_torch()
    from torch.utils.flop_counter import FlopCounterMode

    mapping = _cpu_sdpa_mapping(torch)
    params = [p for p in model.parameters() if p.requires_grad]
    saved = [p.grad for p in params]
    for p in params:
        p.grad = None
    try:
        with FlopCounterMode(display=False, custom_mapping=mapping) as fwd:
            output = _call(model, sample_input)
            loss = loss_fn(output) if loss_fn is not None else _default_loss(torch, output)
        if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
            raise TypeError("loss_fn must return a scalar tensor")
        with FlopCounterMode(display=False, custom_mapping=mapping) as bwd:
            loss.backward()
    finally:
        for p, g in zip(params, saved, strict=True):
            p.grad = g
    return CountedFlops(
        forward=float(fwd.get_total_flops()),
        backward=float(bwd.get_total_flops()),
        forward_by_op=_by_op(fwd),
        backward_by_op=_by_op(bwd),
    )


@dataclass(frozen=True)
class CounterComparison:
    """Analytic FLOPs of one step beside the counted ones; ratios are analytic / counted."""

    name: str
    analytic_forward: float
    analytic_training: float
    counted: CountedFlops
    notes: tuple[str, ...] = ()

    @property
    def forward_ratio(self) -> float:
        return self.analytic_forward / self.counted.forward

    @property
    def training_ratio(self) -> float:
        return self.analytic_training / self.counted.training

    def records(self) -> list[dict[str, Any]]:
        a_bwd = self.analytic_training - self.analytic_forward
        rows = []
        for stage, a, c in (
            ("forward", self.analytic_forward, self.counted.forward),
            ("backward", a_bwd, self.counted.backward),
            ("training", self.analytic_training, self.counted.training),
        ):
            rows.append(
                {
                    "model": self.name,
                    "stage": stage,
                    "analytic_flops": a,
                    "counted_flops": c,
                    "ratio": a / c if c else float("nan"),
                }
            )
        return rows

    def to_frame(self):  # -> pandas.DataFrame (lazy import)
        """Tidy table: one row per stage (forward, backward, training)."""
        import pandas as pd

        return pd.DataFrame.from_records(
            self.records(),
            columns=["model", "stage", "analytic_flops", "counted_flops", "ratio"],
        )

    def summary(self) -> str:
        lines = [f"{self.name}: analytic vs FlopCounterMode, one step"]
        for r in self.records():
            lines.append(
                f"  {r['stage']:<9} analytic {r['analytic_flops']:.4g}  "
                f"counted {r['counted_flops']:.4g}  ratio {r['ratio']:.4f}"
            )
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def compare_with_counter(
    model: Any,
    sample_input: Any,
    analytic: ModelFlops,
    loss_fn: Callable[[Any], Any] | None = None,
) -> CounterComparison:
    """Count one training step of ``model`` and set it beside ``analytic`` (per step).

    ``analytic.batch`` must be the batch of ``sample_input`` (and ``seq_len`` its length) for
    the ratio to mean anything; compute it with ``causal=False`` (counter note 2).
    """
    if not isinstance(analytic, ModelFlops):
        raise TypeError(
            f"analytic must be a ModelFlops (from model_flops(...)); got {type(analytic).__name__}"
        )
    counted = count_training_step(model, sample_input, loss_fn)
    notes = [
        "counter: backward computes only the gradients needed (no input gradient for raw "
        "features), so counted backward can be slightly below 2 x forward",
        "counter: attention is never halved for causal masks",
    ]
    if any("attention" in op for op in counted.backward_by_op):
        notes.append(
            "counter: the fused attention backward recomputes Q @ K^T (hardware FLOPs), so "
            "counted backward exceeds the analytic one by about the attn_scores forward"
        )
    if analytic.conventions.causal:
        notes.append("analytic used causal halving; expect its attention to be about half")
    return CounterComparison(
        name=analytic.name,
        analytic_forward=analytic.forward_per_step,
        analytic_training=analytic.training_per_step,
        counted=counted,
        notes=tuple(notes),
    )


# --------------------------------------------------------------------------------------------
# embedding bytes: rows looked up and gradient rows, counted at the ATen operators

_LOOKUP_OPS = ("aten._embedding_bag.", "aten._embedding_bag_forward_only.", "aten.embedding.")
_GRAD_OPS = ("aten._embedding_bag_backward.", "aten._embedding_bag_dense_backward.",
             "aten._embedding_bag_sparse_backward.", "aten.embedding_dense_backward.", "aten.embedding_backward.")


@dataclass(frozen=True)
class CountedEmbeddingBytes:
    """Bytes the embedding operators of one training step touched: rows looked up (forward) and gradient
    rows produced (backward), with the number of indices behind each."""

    lookup_bytes: float
    gradient_bytes: float
    lookups: int
    gradient_rows: int
    by_op: dict[str, float] = field(default_factory=dict, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"lookup_bytes": self.lookup_bytes, "gradient_bytes": self.gradient_bytes,
                "lookups": self.lookups, "gradient_rows": self.gradient_rows, "by_op": dict(self.by_op)}


def _embedding_mode(torch):
    """A dispatch mode that adds up the rows each embedding operator reads or produces."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Rows(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.totals = {"lookup": [0, 0.0], "grad": [0, 0.0]}
            self.by_op: dict[str, float] = {}

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = str(func)
            kind = "lookup" if name.startswith(_LOOKUP_OPS) else "grad" if name.startswith(_GRAD_OPS) else None
            if kind is not None and len(args) >= 2:
                table, indices = args[0], args[1]  # forward: (weight, indices); backward: (grad, indices)
                dim = int(table.shape[-1])
                n = int(indices.numel())
                nbytes = float(n * dim * table.element_size())
                self.totals[kind][0] += n
                self.totals[kind][1] += nbytes
                self.by_op[name] = self.by_op.get(name, 0.0) + nbytes
            return func(*args, **(kwargs or {}))

    return _Rows()


def count_embedding_bytes(
    model: Any,
    sample_input: Any,
    loss_fn: Callable[[Any], Any] | None = None,
) -> CountedEmbeddingBytes:
    """Rows the embedding operators of ``model`` look up and the gradient rows they produce in one
    training step on ``sample_input`` (as in :func:`count_training_step`; gradients restored, no
    optimizer step). An ``nn.EmbeddingBag`` in ``"max"`` mode or with a ``padding_idx`` is counted by
    its indices all the same."""
    torch = _import_torch()
    params = [p for p in model.parameters() if p.requires_grad]
    saved = [p.grad for p in params]
    for p in params:
        p.grad = None
    mode = _embedding_mode(torch)
    try:
        with mode:
            output = _call(model, sample_input)
            loss = loss_fn(output) if loss_fn is not None else _default_loss(torch, output)
            if not isinstance(loss, torch.Tensor) or loss.numel() != 1:
                raise TypeError("loss_fn must return a scalar tensor")
            loss.backward()
    finally:
        for p, g in zip(params, saved, strict=True):
            p.grad = g
    (n_look, b_look), (n_grad, b_grad) = mode.totals["lookup"], mode.totals["grad"]
    return CountedEmbeddingBytes(lookup_bytes=b_look, gradient_bytes=b_grad, lookups=n_look,
                                 gradient_rows=n_grad, by_op=dict(mode.by_op))


@dataclass(frozen=True)
class EmbeddingByteComparison:
    """Analytic embedding bytes of one step beside the counted ones; ratios are analytic / counted."""

    name: str
    batch: int
    analytic_lookup: float
    analytic_update_write: float
    counted: CountedEmbeddingBytes
    traffic: EmbeddingTraffic
    notes: tuple[str, ...] = ()

    @property
    def lookup_ratio(self) -> float:
        return self.analytic_lookup / self.counted.lookup_bytes if self.counted.lookup_bytes else float("nan")

    @property
    def gradient_ratio(self) -> float:
        grad = self.counted.gradient_bytes
        return self.analytic_update_write / grad if grad else float("nan")

    def records(self) -> list[dict[str, Any]]:
        return [
            {"model": self.name, "term": term, "analytic_bytes": a, "counted_bytes": c,
             "ratio": a / c if c else float("nan")}
            for term, a, c in (("lookup_read", self.analytic_lookup, self.counted.lookup_bytes),
                               ("update_write", self.analytic_update_write, self.counted.gradient_bytes))
        ]

    def summary(self) -> str:
        lines = [f"{self.name}: analytic embedding bytes vs the embedding operators, one step of {self.batch:,}"]
        lines += [f"  {r['term']:<12} analytic {r['analytic_bytes']:,.0f} B  counted {r['counted_bytes']:,.0f} B  "
                  f"ratio {r['ratio']:.4f}" for r in self.records()]
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines)


def compare_embedding_bytes(
    model: Any,
    sample_input: Any,
    analytic: Any,
    *,
    batch: int | None = None,
    loss_fn: Callable[[Any], Any] | None = None,
) -> EmbeddingByteComparison:
    """Count one training step's embedding rows of ``model`` and set them beside the analytic traffic.

    ``analytic`` is a ``model_flops(...)`` result of a DLRM/HSTU config (its ``batch`` is the step's),
    a config, or an :class:`~.recsys.EmbeddingTraffic` (then give ``batch``). The analytic lookup bytes
    (lookups x dim x row bytes x batch) are compared with the rows the forward operators read, the
    analytic update write with the gradient rows the backward operators produce."""
    traffic = analytic if isinstance(analytic, EmbeddingTraffic) else embedding_traffic(analytic)
    if batch is None:
        batch = analytic.batch if isinstance(analytic, ModelFlops) else None
    if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
        raise TypeError(f"batch must be the step's samples (a whole number >= 1); got {batch!r}")
    counted = count_embedding_bytes(model, sample_input, loss_fn)
    notes = (
        "counted: indices x dim x element size at _embedding_bag/embedding (forward) and their backward; "
        "a row looked up twice counts twice, as in the analytic convention",
        "not counted by the operators: the sparse update's re-read of each row and the optimizer state "
        "(no optimizer step runs), which stay analytic",
    )
    return EmbeddingByteComparison(
        name=traffic.name, batch=batch, analytic_lookup=traffic.term("lookup_read") * batch,
        analytic_update_write=traffic.term("update_write") * batch, counted=counted, traffic=traffic, notes=notes,
    )
