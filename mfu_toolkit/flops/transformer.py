"""Decoder-only transformer FLOPs and parameter counts, plus the result types every estimator returns.

Conventions (``shared/DESIGN.md``; PaLM, Chowdhery et al. 2022, arXiv:2204.02311, Appendix B):

1. A multiply-add is 2 FLOPs. Only matmuls and the attention score/value products count; norms,
   activations, softmax, biases, residual adds and other elementwise work count zero.
2. Embedding lookups count zero FLOPs (a gather, not a matmul). The output projection to the
   vocabulary (logits) is a matmul and counts, tied to the embedding or not.
3. Training = forward + backward = (1 + ``backward_factor``) x forward, with
   ``backward_factor = 2`` (one matmul for the input gradient, one for the weight gradient).
4. Attention: each token attends to all ``T`` positions unless ``causal=True``, in which case it
   attends on average to ``(T + 1) / 2`` positions (the unmasked lower triangle, diagonal
   included). PaLM Appendix B does not halve, so the default is off.
5. Activation recomputation is never model FLOPs. It only raises the *hardware* FLOPs used for HFU:
   ``selective`` re-runs the attention score/value products in the backward pass (Korthikanti et
   al. 2022, "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198),
   ``full`` re-runs the whole forward pass once more (4 x forward in all).

This module also holds the result types (``Component``, ``ParamCounts``, ``Conventions``,
``ModelFlops``) that the recommendation-model estimators in ``recsys.py`` return too, so every
FLOPs number in the package has the same shape and states the same conventions.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

__all__ = [
    "RECOMPUTE_MODES",
    "FFN_TYPES",
    "FlopsConfigError",
    "Component",
    "ParamCounts",
    "Conventions",
    "ModelFlops",
    "TransformerConfig",
    "transformer_params",
    "transformer_breakdown",
    "transformer_flops",
    "six_n",
    "palm_flops_per_token",
]

RECOMPUTE_MODES = ("none", "selective", "full")
FFN_TYPES = ("gelu", "swiglu")
POS_EMBEDDINGS = ("rope", "learned", "none")

Recompute = Literal["none", "selective", "full"]


class FlopsConfigError(ValueError):
    """An invalid model configuration or FLOPs option.

    The message names the parameter, the allowed range and the value received.
    """


# --------------------------------------------------------------------------------------------
# validation helpers (shared with recsys.py and config.py)


def _fail(name: str, allowed: str, value: Any) -> FlopsConfigError:
    return FlopsConfigError(f"{name} must be {allowed}; got {value!r}")


def _check_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int in [minimum, maximum], else raise a naming error."""
    if maximum is None:
        allowed = f"an integer >= {minimum}"
    else:
        allowed = f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(name, allowed, value)
    if value < minimum or (maximum is not None and value > maximum):
        raise _fail(name, allowed, value)
    return value


def _check_number(name: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise _fail(name, f"a finite number >= {minimum}", value)
    if value < minimum:
        raise _fail(name, f"a finite number >= {minimum}", value)
    return float(value)


def _check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise _fail(name, "True or False", value)
    return value


def _check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise _fail(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def _check_recompute(recompute: Any) -> str:
    return _check_choice("recompute", recompute, RECOMPUTE_MODES)


# --------------------------------------------------------------------------------------------
# result types


@dataclass(frozen=True)
class Component:
    """One row of a FLOPs breakdown: forward FLOPs per unit (token or sample) of one component.

    ``attention`` marks attention score/value products, the part that selective recomputation
    re-runs. Also the way to add a custom block to a recommendation model (``extra_blocks``).
    """

    name: str
    forward_flops: float
    params: int = 0
    attention: bool = False
    note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise _fail("Component.name", "a non-empty string", self.name)
        _check_number(f"Component({self.name!r}).forward_flops", self.forward_flops)
        _check_int(f"Component({self.name!r}).params", self.params, minimum=0)
        _check_bool(f"Component({self.name!r}).attention", self.attention)


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts.

    ``embedding`` is the lookup tables (token, position, item/sparse-feature tables) plus an
    untied output head; ``active`` is what one token (or sample) uses: MoE experts it is not
    routed to are left out, and for recommendation models only the embedding rows it reads count.
    """

    total: int
    active: int
    embedding: int

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "active": self.active,
            "embedding": self.embedding,
            "non_embedding": self.non_embedding,
        }


_COUNTED = (
    "matmuls and attention score/value products only; norms, activations, softmax, biases and "
    "other elementwise ops count zero"
)


@dataclass(frozen=True)
class Conventions:
    """The counting conventions a FLOPs result was computed with (stated in every result)."""

    flops_per_mac: int = 2
    backward_factor: float = 2.0
    include_attention: bool = True
    causal: bool = False
    recompute: str = "none"
    embedding_lookup_flops: int = 0
    counted: str = _COUNTED
    notes: tuple[str, ...] = ()
    has_attention: bool = True

    def describe(self) -> list[str]:
        """Human-readable lines, one per convention."""
        recompute = {
            "none": "none (hardware FLOPs = model FLOPs)",
            "selective": "selective: attention score/value products re-run in backward "
            "(hardware FLOPs only)",
            "full": "full: one extra forward pass (hardware FLOPs only)",
        }[self.recompute]
        lines = [
            f"{self.flops_per_mac} FLOPs per multiply-add; {self.counted}",
            f"training = (1 + {self.backward_factor:g}) x forward; "
            "recomputation is excluded from model FLOPs",
            f"embedding lookups: {self.embedding_lookup_flops} FLOPs",
        ]
        if self.has_attention:
            lines.append(
                "attention term: " + ("included" if self.include_attention else "excluded")
            )
            lines.append(
                "causal: "
                + (
                    "on ((T + 1) / 2 keys per query on average)"
                    if self.causal
                    else "off (every query attends to all T keys, as in PaLM Appendix B)"
                )
            )
        else:
            lines.append("attention: none in this model")
        lines.append(f"recomputation: {recompute}")
        lines.extend(self.notes)
        return lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "flops_per_mac": self.flops_per_mac,
            "backward_factor": self.backward_factor,
            "include_attention": self.include_attention,
            "causal": self.causal,
            "recompute": self.recompute,
            "embedding_lookup_flops": self.embedding_lookup_flops,
            "counted": self.counted,
            "notes": list(self.notes),
            "has_attention": self.has_attention,
        }


@dataclass(frozen=True)
class ModelFlops:
    """FLOPs of one model under stated conventions, per token, per sample and per step.

    Attributes
    ----------
    name, kind, source:
        What was counted (preset or config name), its family (``transformer``, ``dlrm``,
        ``hstu``, ``mlp``) and where its configuration comes from.
    unit:
        ``"token"`` or ``"sample"``: the unit of each ``breakdown`` row's ``forward_flops``.
    tokens_per_sample:
        Tokens in one sample (sequence length; the mean real length for HSTU with variable
        lengths); ``None`` for models without tokens (DLRM, MLP).
    batch:
        Samples (sequences) per optimizer step, for the ``*_per_step`` values.
    forward_per_sample, training_per_sample, hardware_per_sample:
        Forward FLOPs; model FLOPs of one training step (forward + backward, no recomputation:
        the MFU numerator); hardware FLOPs (model FLOPs + recomputation: the HFU numerator).
    params, embedding_bytes_per_sample, conventions, breakdown:
        Parameter counts; embedding bytes read per sample (recommendation models); the
        conventions used; forward FLOPs per ``unit`` by component.
    config:
        The validated configuration object that was counted.

    ``*_per_token`` and ``*_per_step`` properties derive from the per-sample values.
    """

    name: str
    kind: str
    unit: Literal["token", "sample"]
    tokens_per_sample: float | None
    batch: int
    forward_per_sample: float
    training_per_sample: float
    hardware_per_sample: float
    params: ParamCounts
    conventions: Conventions
    breakdown: tuple[Component, ...]
    embedding_bytes_per_sample: float | None = None
    source: str = ""
    config: Any = field(default=None, compare=False, repr=False)

    # per token ---------------------------------------------------------------------------
    def _per_token(self, per_sample: float) -> float | None:
        if not self.tokens_per_sample:
            return None
        return per_sample / self.tokens_per_sample

    @property
    def forward_per_token(self) -> float | None:
        return self._per_token(self.forward_per_sample)

    @property
    def training_per_token(self) -> float | None:
        """Model FLOPs per token of one training step (the MFU numerator per token)."""
        return self._per_token(self.training_per_sample)

    @property
    def hardware_per_token(self) -> float | None:
        return self._per_token(self.hardware_per_sample)

    # per step ----------------------------------------------------------------------------
    @property
    def forward_per_step(self) -> float:
        return self.forward_per_sample * self.batch

    @property
    def training_per_step(self) -> float:
        """Model FLOPs of one optimizer step of ``batch`` samples."""
        return self.training_per_sample * self.batch

    @property
    def hardware_per_step(self) -> float:
        return self.hardware_per_sample * self.batch

    # per unit ------------------------------------------------------------------------------
    @property
    def forward_per_unit(self) -> float:
        return self.forward_per_token if self.unit == "token" else self.forward_per_sample

    @property
    def training_per_unit(self) -> float:
        return self.training_per_token if self.unit == "token" else self.training_per_sample

    @property
    def hardware_per_unit(self) -> float:
        return self.hardware_per_token if self.unit == "token" else self.hardware_per_sample

    @property
    def seq_len(self) -> float | None:
        return self.tokens_per_sample

    # views -------------------------------------------------------------------------------
    def _unit_to_sample(self) -> float:
        return float(self.tokens_per_sample) if self.unit == "token" else 1.0

    def breakdown_records(self) -> list[dict[str, Any]]:
        """The breakdown as a list of plain dicts (one per component), shares included."""
        total = sum(c.forward_flops for c in self.breakdown)
        per_sample = self._unit_to_sample()
        train = 1.0 + self.conventions.backward_factor
        rows = []
        for c in self.breakdown:
            rows.append(
                {
                    "component": c.name,
                    "forward_flops_per_token": (
                        c.forward_flops * per_sample / self.tokens_per_sample
                        if self.tokens_per_sample
                        else None
                    ),
                    "forward_flops_per_sample": c.forward_flops * per_sample,
                    "training_flops_per_sample": c.forward_flops * per_sample * train,
                    "share": c.forward_flops / total if total else 0.0,
                    "params": c.params,
                    "attention": c.attention,
                    "note": c.note,
                }
            )
        return rows

    def to_frame(self):  # -> pandas.DataFrame (pandas imported lazily: the CLI must start fast)
        """Tidy breakdown: one row per component, forward FLOPs per token/sample and share."""
        import pandas as pd

        frame = pd.DataFrame.from_records(
            self.breakdown_records(),
            columns=[
                "component",
                "forward_flops_per_token",
                "forward_flops_per_sample",
                "training_flops_per_sample",
                "share",
                "params",
                "attention",
                "note",
            ],
        )
        frame.insert(0, "model", self.name)
        return frame

    def totals(self) -> dict[str, float | None]:
        """Forward, training (model) and hardware FLOPs per token, sample and step."""
        return {
            "forward_per_token": self.forward_per_token,
            "forward_per_sample": self.forward_per_sample,
            "forward_per_step": self.forward_per_step,
            "training_per_token": self.training_per_token,
            "training_per_sample": self.training_per_sample,
            "training_per_step": self.training_per_step,
            "hardware_per_token": self.hardware_per_token,
            "hardware_per_sample": self.hardware_per_sample,
            "hardware_per_step": self.hardware_per_step,
        }

    def totals_frame(self):  # -> pandas.DataFrame
        """Tidy totals: one row per (stage, per) pair with its FLOPs."""
        import pandas as pd

        rows = []
        for key, value in self.totals().items():
            stage, per = key.split("_per_")
            rows.append({"model": self.name, "stage": stage, "per": per, "flops": value})
        return pd.DataFrame(rows, columns=["model", "stage", "per", "flops"])

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable summary: totals, parameters, conventions and breakdown."""
        return {
            "name": self.name,
            "kind": self.kind,
            "source": self.source,
            "unit": self.unit,
            "tokens_per_sample": self.tokens_per_sample,
            "batch": self.batch,
            **self.totals(),
            "params": self.params.to_dict(),
            "embedding_bytes_per_sample": self.embedding_bytes_per_sample,
            "conventions": self.conventions.to_dict(),
            "breakdown": self.breakdown_records(),
        }


def _finish(
    *,
    name: str,
    kind: str,
    unit: Literal["token", "sample"],
    tokens_per_sample: float | None,
    batch: int,
    breakdown: tuple[Component, ...],
    params: ParamCounts,
    conventions: Conventions,
    embedding_bytes_per_sample: float | None = None,
    source: str = "",
    config: Any = None,
) -> ModelFlops:
    """Sum a per-unit breakdown into a ``ModelFlops`` (shared by every estimator)."""
    per_unit = sum(c.forward_flops for c in breakdown)
    to_sample = float(tokens_per_sample) if unit == "token" else 1.0
    forward = per_unit * to_sample
    training = (1.0 + conventions.backward_factor) * forward
    # Recomputation adds hardware FLOPs only (HFU), never model FLOPs (MFU).
    if conventions.recompute == "full":
        extra_hw = forward
    elif conventions.recompute == "selective":
        extra_hw = sum(c.forward_flops for c in breakdown if c.attention) * to_sample
    else:
        extra_hw = 0.0
    return ModelFlops(
        name=name,
        kind=kind,
        unit=unit,
        tokens_per_sample=tokens_per_sample,
        batch=batch,
        forward_per_sample=forward,
        training_per_sample=training,
        hardware_per_sample=training + extra_hw,
        params=params,
        conventions=conventions,
        breakdown=breakdown,
        embedding_bytes_per_sample=embedding_bytes_per_sample,
        source=source,
        config=config,
    )


# --------------------------------------------------------------------------------------------
# transformer configuration


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer (dense or MoE), validated on construction.

    Defaults: ``n_kv_heads = n_heads`` (multi-head attention), ``head_dim = d_model / n_heads``,
    ``d_ff = 4 * d_model``, ``d_ff_expert = d_ff``. ``ffn_type`` is ``"gelu"`` (2 matrices) or
    ``"swiglu"`` (3 matrices). MoE: ``n_experts > 0`` makes every layer after the first
    ``n_dense_layers`` an MoE layer with a router, ``top_k`` routed experts per token and
    ``n_shared_experts`` always-on experts, each of width ``d_ff_expert``. ``bias=True`` means
    linear biases and LayerNorm with a bias (GPT-2/3 style); they change parameter counts only.
    ``max_seq_len`` (default ``seq_len``) sizes a learned position table; ``seq_len`` is the
    training sequence length the attention FLOPs use.
    """

    n_layers: int
    d_model: int
    n_heads: int
    n_kv_heads: int | None = None
    head_dim: int | None = None
    d_ff: int | None = None
    ffn_type: str = "gelu"
    vocab_size: int = 50257
    tied_embeddings: bool = False
    seq_len: int = 2048
    pos_embedding: str = "rope"
    bias: bool = False
    n_experts: int = 0
    top_k: int = 1
    n_shared_experts: int = 0
    d_ff_expert: int | None = None
    n_dense_layers: int = 0
    max_seq_len: int | None = None
    name: str = "custom-transformer"
    _derived: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: fill in derived defaults once, here
        set_(
            self,
            "_derived",
            frozenset(
                n
                for n in ("n_kv_heads", "head_dim", "d_ff", "d_ff_expert", "max_seq_len")
                if getattr(self, n) is None
            ),
        )
        _check_int("n_layers", self.n_layers)
        _check_int("d_model", self.d_model)
        _check_int("n_heads", self.n_heads)
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise _fail(
                    "n_heads",
                    f"a divisor of d_model={self.d_model} (or give head_dim explicitly)",
                    self.n_heads,
                )
            set_(self, "head_dim", self.d_model // self.n_heads)
        _check_int("head_dim", self.head_dim)
        if self.n_kv_heads is None:
            set_(self, "n_kv_heads", self.n_heads)
        _check_int("n_kv_heads", self.n_kv_heads, maximum=self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise _fail("n_kv_heads", f"a divisor of n_heads={self.n_heads}", self.n_kv_heads)
        if self.d_ff is None:
            set_(self, "d_ff", 4 * self.d_model)
        _check_int("d_ff", self.d_ff)
        _check_choice("ffn_type", self.ffn_type, FFN_TYPES)
        _check_int("vocab_size", self.vocab_size)
        _check_bool("tied_embeddings", self.tied_embeddings)
        _check_int("seq_len", self.seq_len)
        _check_choice("pos_embedding", self.pos_embedding, POS_EMBEDDINGS)
        _check_bool("bias", self.bias)
        _check_int("n_experts", self.n_experts, minimum=0)
        _check_int("n_shared_experts", self.n_shared_experts, minimum=0)
        if self.n_experts:
            _check_int("top_k", self.top_k, maximum=self.n_experts)
        else:
            _check_int("top_k", self.top_k)
        if self.d_ff_expert is None:
            set_(self, "d_ff_expert", self.d_ff)
        _check_int("d_ff_expert", self.d_ff_expert)
        _check_int("n_dense_layers", self.n_dense_layers, minimum=0, maximum=self.n_layers)
        if self.max_seq_len is None:
            set_(self, "max_seq_len", self.seq_len)
        _check_int("max_seq_len", self.max_seq_len)
        if not isinstance(self.name, str) or not self.name:
            raise _fail("name", "a non-empty string", self.name)

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def ffn_matrices(self) -> int:
        return 3 if self.ffn_type == "swiglu" else 2

    def with_(self, **changes: Any) -> TransformerConfig:
        """A validated copy with some fields changed.

        Fields that were filled in by default (``n_kv_heads``, ``head_dim``, ``d_ff``,
        ``d_ff_expert``, ``max_seq_len``) are derived again from the new values unless given;
        ``dataclasses.replace`` instead keeps them as they are.
        """
        for name in self._derived:
            changes.setdefault(name, None)
        return replace(self, **changes)


def _ffn_params(d_model: int, d_ff: int, n_mats: int, bias: bool) -> int:
    weights = n_mats * d_model * d_ff
    biases = ((n_mats - 1) * d_ff + d_model) if bias else 0
    return weights + biases


def transformer_params(config: TransformerConfig) -> ParamCounts:
    """Total, active-per-token and embedding parameter counts.

    Counts every weight matrix, embedding table and (when ``bias``) bias; norms count ``d_model``
    each (``2 * d_model`` with LayerNorm bias), two per layer plus a final one.
    """
    c = config
    d, hq, hkv, q = c.d_model, c.n_heads, c.n_kv_heads, c.head_dim
    attn = d * hq * q + 2 * d * hkv * q + hq * q * d
    if c.bias:
        attn += hq * q + 2 * hkv * q + d
    norm = d * (2 if c.bias else 1)
    dense_ffn = _ffn_params(d, c.d_ff, c.ffn_matrices, c.bias)
    expert = _ffn_params(d, c.d_ff_expert, c.ffn_matrices, c.bias)
    router = d * c.n_experts

    n_dense = c.n_layers - c.n_moe_layers
    per_dense_layer = attn + dense_ffn + 2 * norm
    moe_shared = attn + router + c.n_shared_experts * expert + 2 * norm
    total_layers = n_dense * per_dense_layer + c.n_moe_layers * (moe_shared + c.n_experts * expert)
    active_layers = n_dense * per_dense_layer + c.n_moe_layers * (moe_shared + c.top_k * expert)

    embedding = c.vocab_size * d
    if c.pos_embedding == "learned":
        embedding += c.max_seq_len * d
    if not c.tied_embeddings:
        embedding += c.vocab_size * d + (c.vocab_size if c.bias else 0)  # untied output head
    total = total_layers + norm + embedding
    active = active_layers + norm + embedding
    return ParamCounts(total=total, active=active, embedding=embedding)


def transformer_breakdown(
    config: TransformerConfig,
    *,
    seq_len: int | None = None,
    include_attention: bool = True,
    causal: bool = False,
) -> tuple[Component, ...]:
    """Forward FLOPs per token by component, summed over layers.

    Per layer (PaLM Appendix B; Kaplan et al. 2020, Table 1; Narayanan et al. 2021, Sec 5.1):
    QKV ``2*d*(H + 2*H_kv)*Q``, scores ``2*T*H*Q``, values ``2*T*H*Q``, output ``2*H*Q*d``,
    FFN ``2*m*d*d_ff`` (m = 2 GELU, 3 SwiGLU); MoE layers add a router ``2*d*E`` and run
    ``top_k`` routed plus the shared experts. Logits ``2*d*V`` once. ``T`` becomes ``(T+1)/2``
    when causal.
    """
    c = config
    t = c.seq_len if seq_len is None else _check_int("seq_len", seq_len)
    _check_bool("include_attention", include_attention)
    _check_bool("causal", causal)
    d, hq, hkv, q, L = c.d_model, c.n_heads, c.n_kv_heads, c.head_dim, c.n_layers
    keys = (t + 1) / 2 if causal else float(t)  # keys each query attends to, on average
    attn_on = 1.0 if include_attention else 0.0
    m = c.ffn_matrices
    n_dense = L - c.n_moe_layers
    parts = [
        Component(
            "embedding",
            0.0,
            params=c.vocab_size * d + (c.max_seq_len * d if c.pos_embedding == "learned" else 0),
            note="lookup: zero FLOPs",
        ),
        Component("qkv_proj", 2.0 * d * (hq + 2 * hkv) * q * L, params=d * (hq + 2 * hkv) * q * L),
        Component(
            "attn_scores",
            attn_on * 2.0 * keys * hq * q * L,
            attention=True,
            note="Q @ K^T" + ("" if include_attention else " (excluded)"),
        ),
        Component(
            "attn_values",
            attn_on * 2.0 * keys * hq * q * L,
            attention=True,
            note="softmax(QK^T) @ V" + ("" if include_attention else " (excluded)"),
        ),
        Component("attn_out_proj", 2.0 * hq * q * d * L, params=hq * q * d * L),
    ]
    if n_dense:
        parts.append(
            Component(
                "ffn",
                2.0 * m * d * c.d_ff * n_dense,
                params=m * d * c.d_ff * n_dense,
                note=f"{c.ffn_type}, {m} matrices",
            )
        )
    if c.is_moe:
        n_moe = c.n_moe_layers
        expert = m * d * c.d_ff_expert
        parts.append(
            Component("moe_router", 2.0 * d * c.n_experts * n_moe, params=d * c.n_experts * n_moe)
        )
        parts.append(
            Component(
                "moe_routed_experts",
                2.0 * c.top_k * expert * n_moe,
                params=c.n_experts * expert * n_moe,
                note=f"top-{c.top_k} of {c.n_experts}",
            )
        )
        if c.n_shared_experts:
            parts.append(
                Component(
                    "moe_shared_experts",
                    2.0 * c.n_shared_experts * expert * n_moe,
                    params=c.n_shared_experts * expert * n_moe,
                )
            )
    parts.append(
        Component(
            "logits",
            2.0 * d * c.vocab_size,
            params=0 if c.tied_embeddings else d * c.vocab_size,
            note="tied to the embedding" if c.tied_embeddings else "",
        )
    )
    return tuple(parts)


def transformer_flops(
    config: TransformerConfig,
    *,
    seq_len: int | None = None,
    batch: int = 1,
    include_attention: bool = True,
    causal: bool = False,
    recompute: Recompute = "none",
    backward_factor: float = 2.0,
    source: str = "",
) -> ModelFlops:
    """FLOPs per token, sequence and step of a transformer, with a per-component breakdown.

    ``batch`` is sequences per optimizer step. ``recompute`` only changes hardware FLOPs.
    """
    if seq_len is not None:
        config = replace(config, seq_len=_check_int("seq_len", seq_len))
    _check_int("batch", batch)
    conventions = Conventions(
        backward_factor=_check_number("backward_factor", backward_factor),
        include_attention=_check_bool("include_attention", include_attention),
        causal=_check_bool("causal", causal),
        recompute=_check_recompute(recompute),
    )
    breakdown = transformer_breakdown(config, include_attention=include_attention, causal=causal)
    return _finish(
        name=config.name,
        kind="transformer",
        unit="token",
        tokens_per_sample=config.seq_len,
        batch=batch,
        breakdown=breakdown,
        params=transformer_params(config),
        conventions=conventions,
        source=source,
        config=config,
    )


# --------------------------------------------------------------------------------------------
# published shortcuts


def six_n(n_params: float) -> float:
    """Training FLOPs per token ~ 6N (Kaplan et al. 2020, arXiv:2001.08361, Sec 2.1).

    2N forward + 4N backward; ignores attention and counts embedding parameters as matmuls.
    """
    return 6.0 * _check_number("n_params", n_params)


def palm_flops_per_token(
    n_params: float, n_layers: int, n_heads: int, head_dim: int, seq_len: int
) -> float:
    """Training FLOPs per token = 6N + 12*L*H*Q*T (PaLM, arXiv:2204.02311, Appendix B).

    The second term is the attention score/value products, forward + backward, non-causal.
    """
    _check_number("n_params", n_params)
    for name, value in (
        ("n_layers", n_layers),
        ("n_heads", n_heads),
        ("head_dim", head_dim),
        ("seq_len", seq_len),
    ):
        _check_int(name, value)
    return 6.0 * n_params + 12.0 * n_layers * n_heads * head_dim * seq_len
