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
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .transformer import ModelFlops

__all__ = ["CountedFlops", "CounterComparison", "count_training_step", "compare_with_counter"]


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
