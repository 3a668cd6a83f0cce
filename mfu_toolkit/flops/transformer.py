"""Decoder-only transformer FLOPs and parameter counts, plus the result types every estimator returns.

Conventions (``shared/DESIGN.md``; PaLM, Chowdhery et al. 2022, arXiv:2204.02311, Appendix B):

1. A multiply-add is 2 FLOPs. Only matmuls and the attention score/value products count; norms,
   activations, softmax, biases, residual adds and other elementwise work count zero.
2. Embedding lookups count zero FLOPs (a gather, not a matmul), learned position tables included
   (llm-foundry's MPT ``flops_per_batch`` instead counts 6 x every parameter, that table too).
   The output projection to the vocabulary (logits) is a matmul and counts, tied or not.
3. Training = forward + backward = (1 + ``backward_factor``) x forward, with
   ``backward_factor = 2`` (one matmul for the input gradient, one for the weight gradient).
4. Attention: each token attends to all ``T`` positions unless ``causal=True``, in which case it
   attends on average to ``(T + 1) / 2`` positions (the unmasked lower triangle, diagonal
   included; MaxText halves to ``T / 2``). PaLM Appendix B does not halve, so the default is
   off. A layer with an attention window ``W < T`` (sliding-window / local attention) attends
   to ``W`` keys per query, or causally on average ``W - W (W - 1) / (2 T)``.
5. Activation recomputation is never model FLOPs. It only raises the *hardware* FLOPs used for
   HFU: ``selective`` re-runs the attention score/value products once (Korthikanti et al. 2022,
   "Reducing Activation Recomputation in Large Transformer Models", arXiv:2205.05198, Sec 5);
   ``selective-eq8`` adds three times that, as that paper's eq. 8 does (its published HFU uses
   eq. 8); ``full`` re-runs the forward of every layer but not the logits layer, Megatron's
   convention (Narayanan et al. 2021, arXiv:2104.04473, eq. 3: layers 4 x, logits 3 x forward).
6. Multi-token prediction (MTP) modules (DeepSeek-V3, arXiv:2412.19437, Sec 2.2) are trained, so
   their FLOPs are model FLOPs; their parameters are reported apart (``ParamCounts.mtp``), as
   DeepSeek's 671B leaves them out.

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
    "SeqLenRequiredError",
    "Component",
    "ParamCounts",
    "Conventions",
    "ModelFlops",
    "TransformerConfig",
    "transformer_params",
    "param_groups",
    "PARAM_GROUPS",
    "transformer_breakdown",
    "transformer_flops",
    "seq_len_required",
    "six_n",
    "palm_flops_per_token",
]

RECOMPUTE_MODES = ("none", "selective", "selective-eq8", "full")
FFN_TYPES = ("gelu", "swiglu", "geglu")
POS_EMBEDDINGS = ("rope", "learned", "none")

Recompute = Literal["none", "selective", "selective-eq8", "full"]


class FlopsConfigError(ValueError):
    """An invalid model configuration or FLOPs option.

    The message names the parameter, the allowed range and the value received.
    """


# --------------------------------------------------------------------------------------------
# validation helpers (shared with recsys.py and config.py)


def fail(name: str, allowed: str, value: Any) -> FlopsConfigError:
    return FlopsConfigError(f"{name} must be {allowed}; got {value!r}")


def check_int(name: str, value: Any, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` if it is an int in [minimum, maximum], else raise a naming error."""
    if maximum is None:
        allowed = f"an integer >= {minimum}"
    else:
        allowed = f"an integer in [{minimum}, {maximum}]"
    if isinstance(value, bool) or not isinstance(value, int):
        raise fail(name, allowed, value)
    if value < minimum or (maximum is not None and value > maximum):
        raise fail(name, allowed, value)
    return value


def check_number(name: str, value: Any, *, minimum: float = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise fail(name, f"a finite number >= {minimum}", value)
    if value < minimum:
        raise fail(name, f"a finite number >= {minimum}", value)
    return float(value)


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise fail(name, "True or False", value)
    return value


def check_choice(name: str, value: Any, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise fail(name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_recompute(recompute: Any) -> str:
    return check_choice("recompute", recompute, RECOMPUTE_MODES)


def _check_optional_int(name: str, value: Any, *, minimum: int = 1) -> int | None:
    return None if value is None else check_int(name, value, minimum=minimum)


class SeqLenRequiredError(FlopsConfigError):
    """A FLOPs count that needs a sequence length nobody gave. Its text asks in Python's terms (and the
    command line's); ``stem`` (the text before the request) and ``asks`` (``("seq_len",)``) let a front end
    ask in its own alone (:func:`mfu_toolkit.render.vocabulary.phrase_error`: ``give SEQ_LEN=N``)."""

    asks = ("seq_len",)

    def __init__(self, name: str) -> None:
        self.name = name
        self.stem = (f"seq_len must be given for {name}: its source states no training sequence length (a "
                     "context window is not one)")
        super().__init__(f"{self.stem}; pass seq_len=N in Python or --seq-len N on the command line")

    def __reduce__(self) -> tuple[Any, ...]:
        return (SeqLenRequiredError, (self.name,))


def seq_len_required(name: str) -> SeqLenRequiredError:
    """The error for a FLOPs count that needs a sequence length nobody gave."""
    return SeqLenRequiredError(name)


# --------------------------------------------------------------------------------------------
# result types


@dataclass(frozen=True)
class Component:
    """One row of a FLOPs breakdown: forward FLOPs per unit (token or sample) of one component.

    ``attention`` marks attention score/value products, the part that selective recomputation
    re-runs; ``output_layer`` marks the vocabulary projection (logits), which full recomputation
    does not re-run (Megatron's convention). Also the way to add a custom block to any model
    (``extra_blocks``: forward FLOPs per token for transformers, per sample for the others).
    """

    name: str
    forward_flops: float
    params: int = 0
    attention: bool = False
    note: str = ""
    output_layer: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise fail("Component.name", "a non-empty string", self.name)
        check_number(f"Component({self.name!r}).forward_flops", self.forward_flops)
        check_int(f"Component({self.name!r}).params", self.params, minimum=0)
        check_bool(f"Component({self.name!r}).attention", self.attention)
        check_bool(f"Component({self.name!r}).output_layer", self.output_layer)


@dataclass(frozen=True)
class ParamCounts:
    """Parameter counts.

    ``embedding`` is the lookup tables (token, position, item/sparse-feature tables) plus an
    untied output head; ``active`` is what one token (or sample) uses: MoE experts it is not
    routed to are left out, and for recommendation models only the embedding rows it reads count.
    ``mtp`` is the parameters of multi-token prediction modules, trained but outside ``total``
    and ``active`` (DeepSeek-V3's 671B leaves them out too); the modules share the embedding and
    the output head, which are counted once, in ``total``.
    """

    total: int
    active: int
    embedding: int
    mtp: int = 0

    @property
    def non_embedding(self) -> int:
        return self.total - self.embedding

    def to_dict(self) -> dict[str, int]:
        return {
            "total": self.total,
            "active": self.active,
            "embedding": self.embedding,
            "non_embedding": self.non_embedding,
            "mtp": self.mtp,
        }


_COUNTED = (
    "matmuls and attention score/value products only; norms, activations, softmax, biases and "
    "other elementwise ops count zero"
)


_RECOMPUTE_TEXT = {
    "none": "none (hardware FLOPs = model FLOPs)",
    "selective": "selective: the attention score/value products re-run once (Korthikanti et al. "
    "2022, arXiv:2205.05198, Sec 5); hardware FLOPs only",
    "selective-eq8": "selective-eq8: 3 x the attention score/value forward FLOPs added, as in "
    "Korthikanti et al. 2022's eq. 8, 72Bslh^2 (1 + s/3h + V/12hl), the formula behind that "
    "paper's published HFU (its text re-runs them once); hardware FLOPs only",
    "full": "full: the forward of every layer re-run once, the logits (output) layer not, as "
    "Megatron counts it (Narayanan et al. 2021, arXiv:2104.04473, eq. 3: layers 4 x, logits "
    "3 x forward); hardware FLOPs only",
}


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
        lines = [
            f"{self.flops_per_mac} FLOPs per multiply-add; {self.counted}",
            f"training = (1 + {self.backward_factor:g}) x forward; "
            "recomputation is excluded from model FLOPs",
            f"embedding lookups (token, learned position and item tables): "
            f"{self.embedding_lookup_flops} FLOPs",
        ]
        if self.has_attention:
            lines.append(
                "attention term: " + ("included" if self.include_attention else "excluded")
            )
            lines.append(
                "causal: "
                + (
                    "on ((T + 1) / 2 keys per query on average, the unmasked triangle; "
                    "MaxText halves to T / 2)"
                    if self.causal
                    else "off (every query attends to all T keys, as in PaLM Appendix B; "
                    "causal=True / --causal counts the mask)"
                )
            )
        else:
            lines.append("attention: none in this model")
        lines.append(f"recomputation: {_RECOMPUTE_TEXT[self.recompute]}")
        lines.extend(self.notes)
        return lines

    def summary(self) -> str:
        """One line: the conventions a reader needs to compare two numbers."""
        parts = [
            f"{self.flops_per_mac} FLOPs/MAC",
            f"training {1 + self.backward_factor:g}x forward",
        ]
        if self.has_attention:
            parts.append("causal on" if self.causal else "causal off (PaLM App. B)")
            if not self.include_attention:
                parts.append("attention excluded")
        parts.append(f"recompute {self.recompute} (HFU only)")
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "flops_per_mac": self.flops_per_mac,
            "backward_factor": self.backward_factor,
            "include_attention": self.include_attention,
            "causal": self.causal,
            "recompute": self.recompute,
            "recompute_convention": _RECOMPUTE_TEXT[self.recompute],
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
    convention, differences, hardware_differences:
        Whose count the totals follow (``"ours"`` unless ``model_flops(convention=...)``
        recounted them as a framework does) and the named lines (``ConventionTerm``) from our
        training / hardware count to it; ``breakdown`` stays ours.

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
    convention: str = "ours"
    differences: tuple[Any, ...] = ()
    hardware_differences: tuple[Any, ...] = ()

    @property
    def ours_training_per_sample(self) -> float:
        """Model FLOPs per sample under this project's convention (before ``differences``)."""
        return self.training_per_sample - sum(d.flops_per_sample for d in self.differences)

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
            "convention": self.convention,
            "differences": [d.to_dict() for d in self.differences],
            "hardware_differences": [d.to_dict() for d in self.hardware_differences],
            "breakdown": self.breakdown_records(),
        }


def finish(
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
    attention = sum(c.forward_flops for c in breakdown if c.attention) * to_sample
    if conventions.recompute == "full":  # Narayanan et al. 2021, eq. 3: not the logits layer
        extra_hw = forward - sum(c.forward_flops for c in breakdown if c.output_layer) * to_sample
    elif conventions.recompute == "selective":  # Korthikanti et al. 2022, Sec 5
        extra_hw = attention
    elif conventions.recompute == "selective-eq8":  # Korthikanti et al. 2022, eq. 8
        extra_hw = 3.0 * attention
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


def check_blocks(value: Any) -> tuple[Component, ...]:
    """``extra_blocks`` as a tuple of ``Component`` (named custom blocks with their FLOPs)."""
    if isinstance(value, (str, bytes, Component)):
        raise fail(
            "extra_blocks", "a sequence of Component (see linear() / custom_block())", value
        )
    blocks = tuple(value)
    for i, b in enumerate(blocks):
        if not isinstance(b, Component):
            raise fail(f"extra_blocks[{i}]", "a Component (see linear() / custom_block())", b)
    return blocks


_MLA_SHAPE = ("qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim")


@dataclass(frozen=True)
class TransformerConfig:
    """A decoder-only transformer (dense or MoE), validated on construction.

    Defaults: ``n_kv_heads = n_heads`` (multi-head attention), ``head_dim = d_model / n_heads``,
    ``d_ff = 4 * d_model``, ``d_ff_expert = d_ff``, ``d_ff_shared = d_ff_expert``. ``ffn_type``
    is ``"gelu"`` (2 matrices), ``"swiglu"`` or ``"geglu"`` (3 matrices). ``bias=True`` means
    linear biases and LayerNorm with a bias (GPT-2/3 style); they change parameter counts only.

    * ``seq_len``: the *training* sequence length the attention FLOPs use; ``None`` (the
      default) when the source states none, and then every FLOPs count needs ``seq_len=``.
      ``max_seq_len`` (default ``seq_len``) sizes a learned position table.
    * MoE: ``n_experts > 0`` makes every layer after the first ``n_dense_layers`` an MoE layer
      with a router, ``top_k`` routed experts of width ``d_ff_expert`` per token and
      ``n_shared_experts`` always-on experts of width ``d_ff_shared``.
    * ``attention_window``: sliding-window / local attention. An int ``W`` bounds every layer
      to the last ``W`` keys (itself included, as Mistral 7B's window); a sequence is a pattern
      of per-layer windows repeated over the layers, ``0`` for a global layer (Gemma 2:
      ``(4096, 0)``; Gemma 3: ``(1024,) * 5 + (0,)``; gpt-oss: ``(128, 0)``).
    * Multi-head latent attention (DeepSeek-V2/V3, Kimi K2), on when ``kv_lora_rank`` is set:
      queries through ``d -> q_lora_rank -> n_heads * (qk_nope_head_dim + qk_rope_head_dim)``
      (straight from ``d`` when ``q_lora_rank`` is ``None``), keys and values through
      ``d -> kv_lora_rank + qk_rope_head_dim`` and ``kv_lora_rank -> n_heads * (qk_nope_head_dim
      + v_head_dim)``, output ``n_heads * v_head_dim -> d``; each latent has an RMSNorm
      (DeepSeek-V2, arXiv:2405.04434, Sec 2.1). ``n_kv_heads`` and ``head_dim`` are unused.
    * ``n_mtp_modules``: multi-token prediction modules (DeepSeek-V3, arXiv:2412.19437, Sec
      2.2), each a ``2d -> d`` projection, two RMSNorms and one transformer layer like the last
      main one (MoE in an MoE model), sharing the embedding and the output head.
    * ``extra_blocks``: named custom matmul blocks (``Component``), forward FLOPs per token.
    * ``norms_per_layer``: 2 (pre-norm) unless the model also normalises sublayer outputs
      (Gemma 2: 4); parameter counts only.
    * Parameter-count details that change no FLOPs of ours (frameworks that count 6 x
      parameters do count them): ``norm_bias`` (LayerNorm with a bias; default ``bias``),
      ``output_bias`` (a bias on an untied output head; default ``bias``), ``router_bias``
      (gpt-oss), ``attention_sinks`` (one learned logit per head and layer, gpt-oss),
      ``qk_norm`` (an RMSNorm of ``head_dim`` on queries and one on keys per layer, Qwen3).
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
    seq_len: int | None = None
    pos_embedding: str = "rope"
    bias: bool = False
    n_experts: int = 0
    top_k: int = 1
    n_shared_experts: int = 0
    d_ff_expert: int | None = None
    n_dense_layers: int = 0
    max_seq_len: int | None = None
    d_ff_shared: int | None = None
    attention_window: int | tuple[int, ...] | None = None
    q_lora_rank: int | None = None
    kv_lora_rank: int | None = None
    qk_nope_head_dim: int | None = None
    qk_rope_head_dim: int | None = None
    v_head_dim: int | None = None
    n_mtp_modules: int = 0
    extra_blocks: tuple[Component, ...] = ()
    norms_per_layer: int = 2
    name: str = "custom-transformer"
    norm_bias: bool | None = None
    output_bias: bool | None = None
    router_bias: bool = False
    attention_sinks: bool = False
    qk_norm: bool = False
    _derived: frozenset = field(default=frozenset(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: fill in derived defaults once, here
        derivable = (
            "n_kv_heads",
            "head_dim",
            "d_ff",
            "d_ff_expert",
            "d_ff_shared",
            "max_seq_len",
            "norm_bias",
            "output_bias",
        )
        set_(self, "_derived", frozenset(n for n in derivable if getattr(self, n) is None))
        check_int("n_layers", self.n_layers)
        check_int("d_model", self.d_model)
        check_int("n_heads", self.n_heads)
        if self.head_dim is None:
            if self.d_model % self.n_heads:
                raise fail(
                    "n_heads",
                    f"a divisor of d_model={self.d_model} (or give head_dim explicitly)",
                    self.n_heads,
                )
            set_(self, "head_dim", self.d_model // self.n_heads)
        check_int("head_dim", self.head_dim)
        if self.n_kv_heads is None:
            set_(self, "n_kv_heads", self.n_heads)
        check_int("n_kv_heads", self.n_kv_heads, maximum=self.n_heads)
        if self.n_heads % self.n_kv_heads:
            raise fail("n_kv_heads", f"a divisor of n_heads={self.n_heads}", self.n_kv_heads)
        if self.d_ff is None:
            set_(self, "d_ff", 4 * self.d_model)
        check_int("d_ff", self.d_ff)
        check_choice("ffn_type", self.ffn_type, FFN_TYPES)
        check_int("vocab_size", self.vocab_size)
        check_bool("tied_embeddings", self.tied_embeddings)
        _check_optional_int("seq_len", self.seq_len)
        check_choice("pos_embedding", self.pos_embedding, POS_EMBEDDINGS)
        check_bool("bias", self.bias)
        self._check_param_details(set_)
        check_int("n_experts", self.n_experts, minimum=0)
        check_int("n_shared_experts", self.n_shared_experts, minimum=0)
        if self.n_experts:
            check_int("top_k", self.top_k, maximum=self.n_experts)
        else:
            check_int("top_k", self.top_k)
        if self.d_ff_expert is None:
            set_(self, "d_ff_expert", self.d_ff)
        check_int("d_ff_expert", self.d_ff_expert)
        if self.d_ff_shared is None:
            set_(self, "d_ff_shared", self.d_ff_expert)
        check_int("d_ff_shared", self.d_ff_shared)
        check_int("n_dense_layers", self.n_dense_layers, minimum=0, maximum=self.n_layers)
        if self.max_seq_len is None:
            set_(self, "max_seq_len", self.seq_len)
        _check_optional_int("max_seq_len", self.max_seq_len)
        if self.pos_embedding == "learned" and self.max_seq_len is None:
            raise fail(
                "max_seq_len",
                "an integer >= 1 (or give seq_len) to size the learned position table",
                None,
            )
        self._check_window(set_)
        self._check_mla()
        check_int("n_mtp_modules", self.n_mtp_modules, minimum=0)
        check_int("norms_per_layer", self.norms_per_layer, minimum=0)
        set_(self, "extra_blocks", check_blocks(self.extra_blocks))
        if not isinstance(self.name, str) or not self.name:
            raise fail("name", "a non-empty string", self.name)

    def _check_param_details(self, set_: Any) -> None:
        """Biases, norms and sinks that change parameter counts only."""
        for key in ("norm_bias", "output_bias"):
            if getattr(self, key) is None:
                set_(self, key, self.bias)
            check_bool(key, getattr(self, key))
        for key in ("router_bias", "attention_sinks", "qk_norm"):
            check_bool(key, getattr(self, key))

    def _check_window(self, set_: Any) -> None:
        w = self.attention_window
        if w is None:
            return
        if isinstance(w, (list, tuple)):
            if not w:
                raise fail("attention_window", "an int, a non-empty sequence of ints or None", w)
            for i, v in enumerate(w):
                check_int(f"attention_window[{i}]", v, minimum=0)
            set_(self, "attention_window", tuple(w))
        else:
            check_int("attention_window", w)

    def _check_mla(self) -> None:
        if self.kv_lora_rank is None:
            for key in ("q_lora_rank", *_MLA_SHAPE):
                if getattr(self, key) is not None:
                    raise fail(
                        key,
                        "None unless kv_lora_rank is set (multi-head latent attention)",
                        getattr(self, key),
                    )
            return
        check_int("kv_lora_rank", self.kv_lora_rank)
        _check_optional_int("q_lora_rank", self.q_lora_rank)
        for key in _MLA_SHAPE:
            value = getattr(self, key)
            if value is None:
                raise fail(
                    key, "an integer when kv_lora_rank is set (multi-head latent attention)", value
                )
        check_int("qk_nope_head_dim", self.qk_nope_head_dim, minimum=0)
        check_int("qk_rope_head_dim", self.qk_rope_head_dim, minimum=0)
        check_int("v_head_dim", self.v_head_dim)
        if self.qk_nope_head_dim + self.qk_rope_head_dim == 0:
            raise fail("qk_nope_head_dim", "> 0 or qk_rope_head_dim > 0", self.qk_nope_head_dim)

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def is_mla(self) -> bool:
        """Multi-head latent attention (``kv_lora_rank`` set)."""
        return self.kv_lora_rank is not None

    @property
    def n_moe_layers(self) -> int:
        return self.n_layers - self.n_dense_layers if self.is_moe else 0

    @property
    def ffn_matrices(self) -> int:
        return 2 if self.ffn_type == "gelu" else 3

    @property
    def qk_head_dim(self) -> int:
        """Width per head of the query-key dot product (``nope + rope`` under MLA)."""
        return self.qk_nope_head_dim + self.qk_rope_head_dim if self.is_mla else self.head_dim

    @property
    def value_head_dim(self) -> int:
        """Width per head of the attention values."""
        return self.v_head_dim if self.is_mla else self.head_dim

    def layer_windows(self) -> tuple[int | None, ...]:
        """Each layer's attention window in keys, ``None`` where it sees the whole context."""
        w, n = self.attention_window, self.n_layers
        if w is None:
            return (None,) * n
        if isinstance(w, int):
            return (w,) * n
        return tuple(w[i % len(w)] or None for i in range(n))

    def with_(self, **changes: Any) -> TransformerConfig:
        """A validated copy with some fields changed.

        Fields that were filled in by default (``n_kv_heads``, ``head_dim``, ``d_ff``,
        ``d_ff_expert``, ``d_ff_shared``, ``max_seq_len``) are derived again from the new values
        unless given; ``dataclasses.replace`` instead keeps them as they are.
        """
        for name in self._derived:
            changes.setdefault(name, None)
        return replace(self, **changes)


def _ffn_params(d_model: int, d_ff: int, n_mats: int, bias: bool) -> int:
    weights = n_mats * d_model * d_ff
    biases = ((n_mats - 1) * d_ff + d_model) if bias else 0
    return weights + biases


def _attention_matmuls(
    c: TransformerConfig,
) -> tuple[list[tuple[str, int, int]], tuple[str, int, int]]:
    """One layer's attention projections as ``(name, weights, biases)``: inputs, then output.

    Standard/GQA: ``d -> (H + 2 H_kv) Q`` and ``H Q -> d``. MLA (DeepSeek-V2, Sec 2.1): the
    query down/up projections, ``d -> kv_lora_rank + rope`` and ``kv_lora_rank -> H (nope + v)``
    as separate matmuls (training runs them; no weight absorption), and ``H v -> d``.
    """
    d, hq = c.d_model, c.n_heads
    if not c.is_mla:
        width = (hq + 2 * c.n_kv_heads) * c.head_dim
        return [("qkv_proj", d * width, width)], ("attn_out_proj", hq * c.head_dim * d, d)
    q_out = hq * c.qk_head_dim
    ins: list[tuple[str, int, int]] = []
    if c.q_lora_rank is None:
        ins.append(("q_proj", d * q_out, q_out))
    else:
        r = c.q_lora_rank
        ins += [("q_down_proj", d * r, r), ("q_up_proj", r * q_out, q_out)]
    kv_a = c.kv_lora_rank + c.qk_rope_head_dim
    kv_b = hq * (c.qk_nope_head_dim + c.v_head_dim)
    ins += [("kv_down_proj", d * kv_a, kv_a), ("kv_up_proj", c.kv_lora_rank * kv_b, kv_b)]
    return ins, ("attn_out_proj", hq * c.v_head_dim * d, d)


def _layer_params(c: TransformerConfig) -> dict[str, int]:
    """Parameters of one layer's pieces, weights and biases apart.

    ``attn_w``/``attn_b``: projections (MLA: its five); ``attn_extra``: MLA's latent norms,
    query/key norms and attention sinks; ``norm``: one normalisation layer; FFN pieces as
    ``(weights, biases)``; ``router``: weights and bias of the MoE router.
    """
    ins, out = _attention_matmuls(c)
    attn_w = sum(w for _, w, _ in (*ins, out))
    attn_b = sum(b for _, _, b in (*ins, out)) if c.bias else 0
    norm = c.d_model * (2 if c.norm_bias else 1)
    extra = 0
    if c.is_mla:  # one RMSNorm on each compressed latent
        extra += (c.kv_lora_rank + (c.q_lora_rank or 0)) * (2 if c.norm_bias else 1)
    if c.qk_norm:
        extra += 2 * c.qk_head_dim
    if c.attention_sinks:
        extra += c.n_heads
    m = c.ffn_matrices

    def ffn(width: int) -> tuple[int, int]:
        total = _ffn_params(c.d_model, width, m, c.bias)
        return m * c.d_model * width, total - m * c.d_model * width

    return {
        "attn_w": attn_w,
        "attn_b": attn_b,
        "attn_extra": extra,
        "norm": norm,
        "dense_ffn": ffn(c.d_ff),
        "expert": ffn(c.d_ff_expert),
        "shared": ffn(c.d_ff_shared),
        "router": (c.d_model * c.n_experts, c.n_experts if c.router_bias else 0),
    }


PARAM_GROUPS = (
    "matmul",
    "output_head",
    "input_embedding",
    "position_table",
    "norms",
    "biases",
    "attention_extra",
    "extra_blocks",
)


def param_groups(config: TransformerConfig) -> dict[str, tuple[int, int]]:
    """Parameters by kind as ``{group: (total, active)}``; the groups sum to ``transformer_params``.

    ``matmul``: weights of the layers' matmuls (projections, FFNs, router, experts: all of them
    in total, the routed top-k in active); ``output_head``: an untied vocabulary projection;
    ``input_embedding`` (the token table, which is also the head when tied); ``position_table``
    (learned positions); ``norms`` (every normalisation layer, final one included);
    ``biases`` (linear biases, router bias, output-head bias); ``attention_extra`` (MLA latent
    norms, query/key norms, attention sinks); ``extra_blocks``. Frameworks that count
    ``6 x parameters`` count some of these groups as matmuls; ``conventions`` names which.
    MTP modules are outside every group (``ParamCounts.mtp``).
    """
    c = config
    p = _layer_params(c)
    n_moe = c.n_moe_layers
    n_dense = c.n_layers - n_moe
    sh, ex, rt = p["shared"], p["expert"], p["router"]
    matmul_common = c.n_layers * p["attn_w"] + n_dense * p["dense_ffn"][0]
    moe_common_w = c.n_shared_experts * sh[0] + rt[0]
    moe_common_b = c.n_shared_experts * sh[1] + rt[1]
    head = 0 if c.tied_embeddings else c.vocab_size * c.d_model
    head_bias = c.vocab_size if (c.output_bias and not c.tied_embeddings) else 0
    bias_common = c.n_layers * p["attn_b"] + n_dense * p["dense_ffn"][1] + head_bias
    extra = sum(b.params for b in c.extra_blocks)
    pos = c.max_seq_len * c.d_model if c.pos_embedding == "learned" else 0
    norms = (c.n_layers * c.norms_per_layer + 1) * p["norm"]
    return {
        "matmul": (
            matmul_common + n_moe * (moe_common_w + c.n_experts * ex[0]),
            matmul_common + n_moe * (moe_common_w + c.top_k * ex[0]),
        ),
        "output_head": (head, head),
        "input_embedding": (c.vocab_size * c.d_model,) * 2,
        "position_table": (pos, pos),
        "norms": (norms, norms),
        "biases": (
            bias_common + n_moe * (moe_common_b + c.n_experts * ex[1]),
            bias_common + n_moe * (moe_common_b + c.top_k * ex[1]),
        ),
        "attention_extra": (c.n_layers * p["attn_extra"],) * 2,
        "extra_blocks": (extra, extra),
    }


def transformer_params(config: TransformerConfig) -> ParamCounts:
    """Total, active-per-token, embedding and MTP parameter counts.

    Counts every weight matrix, embedding table and (when ``bias``) bias; norms count ``d_model``
    each (``2 * d_model`` with a LayerNorm bias), ``norms_per_layer`` per layer plus a final one,
    and MLA's latent norms, query/key norms and attention sinks (see ``param_groups``).
    ``extra_blocks`` add their ``params`` to total and active. MTP modules (projection ``2d x
    d``, their layer and three norms) go to ``mtp``, outside ``total``.
    """
    c = config
    groups = param_groups(c)
    p = _layer_params(c)
    embedding = sum(groups[g][0] for g in ("output_head", "input_embedding", "position_table"))
    if c.output_bias and not c.tied_embeddings:
        embedding += c.vocab_size
    layer = p["attn_w"] + p["attn_b"] + p["attn_extra"] + c.norms_per_layer * p["norm"]
    if c.is_moe:
        rt, sh, ex = p["router"], p["shared"], p["expert"]
        layer += sum(rt) + c.n_shared_experts * sum(sh) + c.n_experts * sum(ex)
    else:
        layer += sum(p["dense_ffn"])
    proj = 2 * c.d_model * c.d_model + (c.d_model if c.bias else 0)
    mtp = c.n_mtp_modules * (layer + proj + 3 * p["norm"])
    return ParamCounts(
        total=sum(t for t, _ in groups.values()),
        active=sum(a for _, a in groups.values()),
        embedding=embedding,
        mtp=mtp,
    )


def _keys_per_query(t: int, window: int | None, causal: bool) -> float:
    """Mean number of keys one query attends to in a sequence of ``t`` tokens.

    Whole context: ``t``, or ``(t + 1) / 2`` causal. A window ``w < t`` (the last ``w`` keys,
    itself included): ``w``, or causal the mean of ``min(i, w)`` over ``i = 1..t``, which is
    ``w - w (w - 1) / (2 t)``.
    """
    if window is None or window >= t:
        return (t + 1) / 2 if causal else float(t)
    return window - window * (window - 1) / (2 * t) if causal else float(window)


def _window_note(c: TransformerConfig) -> str:
    windows = c.layer_windows()
    local = [w for w in windows if w is not None]
    if not local:
        return ""
    sizes = ", ".join(str(w) for w in sorted(set(local)))
    return f"; {len(local)} of {c.n_layers} layers local (window {sizes} keys)"


def _ffn_rows(c: TransformerConfig, n_dense: int, n_moe: int, prefix: str = "") -> list[Component]:
    """FFN / MoE rows for ``n_dense`` dense and ``n_moe`` MoE layers."""
    d, m = c.d_model, c.ffn_matrices
    rows = []
    if n_dense:
        rows.append(
            Component(
                f"{prefix}ffn",
                2.0 * m * d * c.d_ff * n_dense,
                params=m * d * c.d_ff * n_dense,
                note=f"{c.ffn_type}, {m} matrices",
            )
        )
    if n_moe:
        expert = m * d * c.d_ff_expert
        rows.append(
            Component(
                f"{prefix}moe_router", 2.0 * d * c.n_experts * n_moe, params=d * c.n_experts * n_moe
            )
        )
        rows.append(
            Component(
                f"{prefix}moe_routed_experts",
                2.0 * c.top_k * expert * n_moe,
                params=c.n_experts * expert * n_moe,
                note=f"top-{c.top_k} of {c.n_experts}, width {c.d_ff_expert}",
            )
        )
        if c.n_shared_experts:
            shared = m * d * c.d_ff_shared
            rows.append(
                Component(
                    f"{prefix}moe_shared_experts",
                    2.0 * c.n_shared_experts * shared * n_moe,
                    params=c.n_shared_experts * shared * n_moe,
                    note=f"{c.n_shared_experts} of width {c.d_ff_shared}",
                )
            )
    return rows


def transformer_breakdown(
    config: TransformerConfig,
    *,
    seq_len: int | None = None,
    include_attention: bool = True,
    causal: bool = False,
) -> tuple[Component, ...]:
    """Forward FLOPs per token by component, summed over layers.

    Per layer (PaLM Appendix B; Kaplan et al. 2020, Table 1; Narayanan et al. 2021, Sec 5.1):
    QKV ``2*d*(H + 2*H_kv)*Q`` (MLA: its five projections), scores ``2*K*H*Q_qk``, values
    ``2*K*H*Q_v``, output ``2*H*Q_v*d``, FFN ``2*m*d*d_ff`` (m = 2 GELU, 3 SwiGLU/GeGLU); MoE
    layers add a router ``2*d*E`` and run ``top_k`` routed plus the shared experts. ``K`` is the
    keys per query: ``T``, ``(T+1)/2`` when causal, bounded by the layer's attention window.
    Logits ``2*d*V`` once, then each MTP module (projection ``2*2d*d``, one layer, logits) and
    the ``extra_blocks``. Raises ``FlopsConfigError`` naming ``seq_len`` when none is known.
    """
    c = config
    t = c.seq_len if seq_len is None else check_int("seq_len", seq_len)
    if t is None:
        raise seq_len_required(c.name)
    check_bool("include_attention", include_attention)
    check_bool("causal", causal)
    L = c.n_layers
    keys = sum(_keys_per_query(t, w, causal) for w in c.layer_windows())  # summed over layers
    ins, out = _attention_matmuls(c)
    parts = [_embedding_row(c)]
    parts += [Component(n, 2.0 * w * L, params=w * L) for n, w, _ in ins]
    parts += _attention_rows(c, keys, include_attention)
    parts.append(Component(out[0], 2.0 * out[1] * L, params=out[1] * L))
    parts += _ffn_rows(c, L - c.n_moe_layers, c.n_moe_layers)
    parts.append(_logits_row(c))
    if c.n_mtp_modules:
        parts += _mtp_rows(c, t, causal, include_attention, ins, out)
    parts.extend(c.extra_blocks)
    return tuple(parts)


def _embedding_row(c: TransformerConfig) -> Component:
    """The embedding row: zero FLOPs, the token table (and a learned position table) as params."""
    d = c.d_model
    return Component(
        "embedding",
        0.0,
        params=c.vocab_size * d + (c.max_seq_len * d if c.pos_embedding == "learned" else 0),
        note="lookup: zero FLOPs"
        + (" (learned position table too)" if c.pos_embedding == "learned" else ""),
    )


def _attention_rows(c: TransformerConfig, keys: float, include_attention: bool) -> list[Component]:
    """Attention score and value rows for ``keys`` keys per query, summed over layers."""
    hq = c.n_heads
    attn_on = 1.0 if include_attention else 0.0
    excluded = "" if include_attention else " (excluded)"
    windows = _window_note(c)
    return [
        Component(
            "attn_scores",
            attn_on * 2.0 * keys * hq * c.qk_head_dim,
            attention=True,
            note="Q @ K^T" + excluded + windows,
        ),
        Component(
            "attn_values",
            attn_on * 2.0 * keys * hq * c.value_head_dim,
            attention=True,
            note="softmax(QK^T) @ V" + excluded + windows,
        ),
    ]


def _logits_row(c: TransformerConfig) -> Component:
    """The output projection to the vocabulary, counted once per token, tied or not."""
    d = c.d_model
    return Component(
        "logits",
        2.0 * d * c.vocab_size,
        params=0 if c.tied_embeddings else d * c.vocab_size,
        note="tied to the embedding" if c.tied_embeddings else "",
        output_layer=True,
    )


def _mtp_rows(
    c: TransformerConfig,
    t: int,
    causal: bool,
    include_attention: bool,
    ins: list[tuple[str, int, int]],
    out: tuple[str, int, int],
) -> list[Component]:
    """Rows of the MTP modules: projection and one layer each, their attention, their logits."""
    d, hq, k = c.d_model, c.n_heads, c.n_mtp_modules
    attn_on = 1.0 if include_attention else 0.0
    excluded = "" if include_attention else " (excluded)"
    layer = 2 * d * d + sum(w for _, w, _ in (*ins, out))
    layer_rows = _ffn_rows(c, 0 if c.is_moe else 1, 1 if c.is_moe else 0)
    mtp_flops = 2.0 * layer + sum(r.forward_flops for r in layer_rows)
    mtp_weights = layer + sum(r.params for r in layer_rows)
    full = _keys_per_query(t, None, causal)
    return [
        Component(
            "mtp_layers",
            k * mtp_flops,
            params=k * mtp_weights,
            note=f"{k} MTP module(s): 2d->d projection and one layer each (trained: model FLOPs)",
        ),
        Component(
            "mtp_attention",
            attn_on * k * 2.0 * full * hq * (c.qk_head_dim + c.value_head_dim),
            attention=True,
            note="MTP scores and values over the whole context" + excluded,
        ),
        Component(
            "mtp_logits",
            k * 2.0 * d * c.vocab_size,
            note="shared output head",
            output_layer=True,
        ),
    ]


def _transformer_notes(c: TransformerConfig) -> tuple[str, ...]:
    """Model-specific conventions, one sentence each, for ``Conventions.notes``."""
    notes = [
        "position embeddings: 0 FLOPs (RoPE is elementwise; a learned table is a lookup and an "
        "add); llm-foundry's MPT flops_per_batch counts 6 x every parameter, a learned "
        "position table included"
    ]
    local = [w for w in c.layer_windows() if w is not None]
    if local:
        notes.append(
            f"attention windows: {len(local)} of {c.n_layers} layers attend to at most their "
            f"window ({', '.join(str(w) for w in sorted(set(local)))} keys) instead of all T: "
            "W keys per query, causal W - W(W-1)/2T on average"
        )
    if c.is_mla:
        notes.append(
            "multi-head latent attention: the low-rank projections counted as the matmuls "
            f"training runs (no weight absorption); scores over {c.qk_head_dim} dims per head, "
            f"values over {c.value_head_dim}"
        )
    if c.n_mtp_modules:
        notes.append(
            f"multi-token prediction: {c.n_mtp_modules} MTP module(s) counted in model FLOPs "
            "(they are trained), each over all T positions; their parameters are in params.mtp, "
            "outside params.total"
        )
    if c.extra_blocks:
        names = ", ".join(b.name for b in c.extra_blocks)
        notes.append(f"custom blocks as given, forward FLOPs per token: {names}")
    return tuple(notes)


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

    ``seq_len`` overrides the config's training sequence length (needed when it has none);
    ``batch`` is sequences per optimizer step. ``recompute`` only changes hardware FLOPs.
    """
    if seq_len is not None:
        config = replace(config, seq_len=check_int("seq_len", seq_len))
    elif config.seq_len is None:
        raise seq_len_required(config.name)
    check_int("batch", batch)
    conventions = Conventions(
        backward_factor=check_number("backward_factor", backward_factor),
        include_attention=check_bool("include_attention", include_attention),
        causal=check_bool("causal", causal),
        recompute=check_recompute(recompute),
        notes=_transformer_notes(config),
    )
    breakdown = transformer_breakdown(config, include_attention=include_attention, causal=causal)
    return finish(
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
    return 6.0 * check_number("n_params", n_params)


def palm_flops_per_token(
    n_params: float, n_layers: int, n_heads: int, head_dim: int, seq_len: int
) -> float:
    """Training FLOPs per token = 6N + 12*L*H*Q*T (PaLM, arXiv:2204.02311, Appendix B).

    The second term is the attention score/value products, forward + backward, non-causal.
    """
    check_number("n_params", n_params)
    for name, value in (
        ("n_layers", n_layers),
        ("n_heads", n_heads),
        ("head_dim", head_dim),
        ("seq_len", seq_len),
    ):
        check_int(name, value)
    return 6.0 * n_params + 12.0 * n_layers * n_heads * head_dim * seq_len
