"""Count a transformer's FLOPs as a framework counts them, with every difference named.

Frameworks print MFU and TFLOP/s under their own FLOPs formula. ``apply_convention`` turns a
``ModelFlops`` counted under this project's convention (``ours``: 2 FLOPs per multiply-add,
matmuls and attention products only, training = 3 x forward, no recomputation, lookups 0,
causal halving off) into the framework's count, and lists the difference as named lines
(``ConventionTerm``: term, FLOPs, why) that sum exactly to the gap. Each framework's count is
also computed on its own, transliterated from its source (cited below), and the two must
agree to the last FLOP; a gap no line explains raises ``FlopsConfigError`` instead of
passing as a fudge factor.

Conventions (each a formula at a stated commit; a dated name is an older formula still
printed in published logs and tables):

* ``megatron``: Megatron-LM ``num_floating_point_operations`` (``transformer_flops``),
  megatron/training/training.py @ d98e8a6 (2026-08). Causal attention ``T/2``; no router;
  padded vocabulary; MLA latent norms and MTP norms counted as FLOPs.
* ``megatron-2024``: the same function @ 2bfe9be (2024-04-03), in use until 8873b55
  (2025-03-06): non-causal attention, no router, padded vocabulary.
* ``nemo`` (alias ``megatron-bridge``): Megatron-Bridge
  src/megatron/bridge/training/utils/flop_utils.py @ 067f987, the same terms as ``megatron``.
* ``torchtitan``: ``get_dense_model_nparams_and_flops`` / ``get_moe_model_nparams_and_flops``,
  torchtitan/models/utils.py @ b5bcd76: ``6 x`` non-embedding (active) parameters, norms and
  biases included, ``+ 6 L H (Q_qk + Q_v) T`` (non-causal, every layer, windows ignored).
* ``torchtitan-2024-04``: torchtitan/utils.py ``get_num_flop_per_token`` before 0c6ca90
  (PR #280, 2024-04-26): ``6 x`` all parameters, the input embedding included.
* ``llm-foundry``: llmfoundry/models/mpt/modeling_mpt.py ``flops_per_batch`` and
  scripts/train/benchmarking/collect_results.py @ 8c8dd48: ``6 x`` active parameters (every
  table included) ``+ 12 L d_model T``; HFU with activation checkpointing ``4/3 x`` MFU's
  count (it recomputes the logits too).
* ``maxtext``: ``calculate_tflops_training_per_device``, src/maxtext/utils/maxtext_utils.py
  @ e591f30 (2026-08): our matmuls, causal attention ``T/2``, local layers
  ``(T W - W^2/2) / T`` keys; MTP without its projection and logits.
* ``maxtext-2026-03``: the same @ 72e96f5 (2026-03-05): local layers ``W/2`` keys.
* ``maxtext-2024-03``: MaxText/maxtext_utils.py @ 6283b16 (2024-03-13, the formula of the
  logs printing "Per train step, total TFLOPs will be"): ``6 x`` all parameters
  ``+ 6 H L Q T`` (causal ``T/2``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from .transformer import (
    FlopsConfigError,
    ModelFlops,
    TransformerConfig,
    param_groups,
)

__all__ = [
    "CONVENTIONS",
    "ConventionTerm",
    "FrameworkConvention",
    "apply_convention",
    "convention_names",
]

_MEGATRON = "https://github.com/NVIDIA/Megatron-LM/blob/{}/megatron/training/training.py"
_TITAN = "https://github.com/pytorch/torchtitan/blob/{}/torchtitan/{}"
_MAXTEXT = "https://github.com/AI-Hypercomputer/maxtext/blob/{}/{}"


@dataclass(frozen=True)
class FrameworkConvention:
    """A framework's FLOPs formula at one commit: name, framework, source URL, summary."""

    name: str
    framework: str
    source: str
    summary: str


CONVENTIONS: dict[str, FrameworkConvention] = {
    c.name: c
    for c in (
        FrameworkConvention(
            "ours", "mfu_toolkit", "shared/DESIGN.md, Conventions", "this project's count"
        ),
        FrameworkConvention(
            "megatron",
            "Megatron-LM",
            _MEGATRON.format("d98e8a64ddf34856e74b24714e3bedb2f5a39553"),
            "matmuls, causal attention T/2, no router, padded vocabulary",
        ),
        FrameworkConvention(
            "megatron-2024",
            "Megatron-LM (2024-04 to 2025-03)",
            _MEGATRON.format("2bfe9beaae"),
            "12 B s L h^2 (...) closed form: non-causal attention, no router, padded vocabulary",
        ),
        FrameworkConvention(
            "nemo",
            "NeMo 2 / Megatron-Bridge",
            "https://github.com/NVIDIA-NeMo/Megatron-Bridge/blob/067f987/src/megatron/bridge/"
            "training/utils/flop_utils.py",
            "Megatron-LM's terms (transformer_flops)",
        ),
        FrameworkConvention(
            "torchtitan",
            "torchtitan",
            _TITAN.format("b5bcd76c66d0acb1a08b176d9639425bc55e0b2a", "models/utils.py"),
            "6 x non-embedding active parameters + 6 L H (Q_qk + Q_v) T, non-causal",
        ),
        FrameworkConvention(
            "torchtitan-2024-04",
            "torchtitan (before PR #280, 2024-04-26)",
            _TITAN.format("83c879f18", "utils.py"),
            "6 x all parameters (input embedding included) + 12 L H Q T",
        ),
        FrameworkConvention(
            "llm-foundry",
            "llm-foundry (MPT flops_per_batch)",
            "https://github.com/mosaicml/llm-foundry/blob/8c8dd48f72168c5d51e2f7b151595892a8fba43d"
            "/llmfoundry/models/mpt/modeling_mpt.py",
            "6 x active parameters (all tables) + 12 L d_model T; HFU 4/3 x under checkpointing",
        ),
        FrameworkConvention(
            "maxtext",
            "MaxText",
            _MAXTEXT.format(
                "e591f30cbbf217ed67ef71263ec0538239f9c3b8", "src/maxtext/utils/maxtext_utils.py"
            ),
            "matmuls, causal attention T/2, local layers (T W - W^2/2) / T keys",
        ),
        FrameworkConvention(
            "maxtext-2026-03",
            "MaxText (2026-03)",
            _MAXTEXT.format(
                "72e96f5d1e22e92a6cf71b3ede2997df4923bf61", "src/MaxText/maxtext_utils.py"
            ),
            "matmuls, causal attention T/2, local layers W/2 keys",
        ),
        FrameworkConvention(
            "maxtext-2024-03",
            "MaxText (2024-03)",
            _MAXTEXT.format("6283b1681ff0196a9eccbd5323ad19c10da02448", "MaxText/maxtext_utils.py"),
            "6 x all parameters + 6 H L Q T (causal T/2)",
        ),
    )
}
_ALIASES = {"megatron-bridge": "nemo", "megatron-lm": "megatron", "mosaic": "llm-foundry"}


def convention_names() -> tuple[str, ...]:
    """Every convention name ``model_flops(convention=...)`` accepts (aliases included)."""
    return (*CONVENTIONS, *_ALIASES)


@dataclass(frozen=True)
class ConventionTerm:
    """One named difference: the framework's count minus ours, in training FLOPs.

    ``flops_per_token`` and ``flops_per_sample`` are signed (positive: the framework counts
    more); ``why`` says what the framework does differently and where.
    """

    name: str
    flops_per_token: float
    flops_per_sample: float
    why: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "term": self.name,
            "flops_per_token": self.flops_per_token,
            "flops_per_sample": self.flops_per_sample,
            "why": self.why,
        }


# --------------------------------------------------------------------------------------------
# what the formulas read from a config


@dataclass(frozen=True)
class _Model:
    """Exact (Fraction) pieces of one config at sequence length ``t``, per token."""

    c: TransformerConfig
    t: int
    rows: dict[str, Fraction]  # our forward FLOPs per token by component
    groups: dict[str, tuple[int, int]]  # param_groups

    @property
    def ours(self) -> Fraction:
        return 3 * sum(self.rows.values(), Fraction(0))

    def row(self, *names: str) -> Fraction:
        return sum((self.rows.get(n, Fraction(0)) for n in names), Fraction(0))

    def attention(self, mtp: bool = True) -> Fraction:
        """Our attention score/value products, training FLOPs per token (MTP's unless told)."""
        return 3 * self.row("attn_scores", "attn_values", *(("mtp_attention",) if mtp else ()))

    def mtp(self) -> Fraction:
        return 3 * self.row("mtp_layers", "mtp_attention", "mtp_logits")

    def extra(self) -> Fraction:
        return 3 * sum((Fraction(b.forward_flops) for b in self.c.extra_blocks), Fraction(0))

    def g(self, name: str, active: bool = True) -> int:
        return self.groups[name][1 if active else 0]

    @property
    def qk_v(self) -> int:
        """Per-head width of scores plus values (``2 Q``, or MLA's ``nope + rope + v``)."""
        return self.c.qk_head_dim + self.c.value_head_dim

    @property
    def n_moe_all(self) -> int:
        """MoE layers, MTP modules' layers included (Megatron counts them alike)."""
        return self.c.n_moe_layers + (self.c.n_mtp_modules if self.c.is_moe else 0)


def _model(result: ModelFlops) -> _Model:
    c = result.config
    t = int(result.tokens_per_sample)
    rows: dict[str, Fraction] = {}
    for comp in result.breakdown:
        rows[comp.name] = rows.get(comp.name, Fraction(0)) + Fraction(comp.forward_flops)
    return _Model(c=c, t=t, rows=rows, groups=param_groups(c))


def _ours_attention_words(result: ModelFlops) -> str:
    conv = result.conventions
    if not conv.include_attention:
        return "ours leaves attention out (include_attention=False)"
    mask = "(T + 1)/2 keys per query, causal" if conv.causal else "all T keys, non-causal"
    return f"ours counts {mask}, windows bounding local layers"


# --------------------------------------------------------------------------------------------
# terms shared by the 6 x parameters conventions


def _param_terms(m: _Model, *, active: bool, embedding: bool, tables: bool) -> list[tuple]:
    """Lines for parameters a ``6 x N`` formula counts as matmuls and we count at 0 FLOPs."""
    c = m.c
    lines = [
        ("norm_weights", 6 * m.g("norms"), "normalisation weights counted as matmul parameters"),
        ("biases", 6 * m.g("biases", active), "bias vectors counted as matmul parameters"),
        (
            "attention_extra_params",
            6 * m.g("attention_extra"),
            "MLA latent norms, query/key norms and attention sinks counted as matmul parameters",
        ),
    ]
    if not active:
        inactive = m.g("matmul", False) - m.g("matmul", True)
        lines.append(
            ("inactive_experts", 6 * inactive, "every expert counted, not the top-k a token uses")
        )
    if embedding and not c.tied_embeddings:
        lines.append(
            (
                "input_embedding",
                6 * m.g("input_embedding"),
                "the input embedding table counted as a matmul (a lookup: 0 FLOPs in ours)",
            )
        )
    if tables and m.g("position_table"):
        lines.append(
            (
                "position_table",
                6 * m.g("position_table"),
                "the learned position table counted as a matmul (a lookup: 0 FLOPs in ours)",
            )
        )
    return lines


def _common_terms(m: _Model, *, mtp: str | None, extra: str) -> list[tuple]:
    lines = []
    if m.c.n_mtp_modules and mtp is not None:
        lines.append(("mtp_module", -m.mtp(), mtp))
    if m.c.extra_blocks:
        params = sum(b.params for b in m.c.extra_blocks)
        value = 6 * params - m.extra() if extra == "params" else -m.extra()
        why = (
            "custom blocks counted as 6 x their parameters, not their stated FLOPs"
            if extra == "params"
            else "custom blocks are unknown to the framework's formula"
        )
        lines.append(("extra_blocks", value, why))
    return lines


def _six_n(m: _Model, *, active: bool, embedding: bool) -> Fraction:
    """``6 x N`` with N the framework's parameter count: all groups, or without the embedding."""
    n = sum(m.g(k, active) for k in m.groups)
    if not embedding and not m.c.tied_embeddings:
        n -= m.g("input_embedding") + m.g("position_table")
    return Fraction(6 * n)


# --------------------------------------------------------------------------------------------
# frameworks: each returns (framework training FLOPs per token, [(term, per token, why)])


def _torchtitan(m: _Model, words: str, *, legacy: bool) -> tuple[Fraction, list[tuple]]:
    c, t = m.c, m.t
    attn = Fraction(6 * c.n_layers * c.n_heads * m.qk_v * t)
    total = _six_n(m, active=not legacy, embedding=legacy) + attn
    lines = [
        (
            "attention",
            attn - m.attention(mtp=False),
            "6 L H (Q_qk + Q_v) T: every query against all T keys on every layer (no causal "
            f"halving, windows ignored); {words}",
        )
    ]
    lines += _param_terms(
        m, active=not legacy, embedding=legacy, tables=legacy or c.tied_embeddings
    )
    lines += _common_terms(m, mtp="torchtitan builds no MTP module", extra="params")
    return total, lines


def _llm_foundry(m: _Model, words: str) -> tuple[Fraction, list[tuple]]:
    c, t = m.c, m.t
    attn = Fraction(12 * c.n_layers * c.d_model * t)
    total = _six_n(m, active=True, embedding=True) + attn
    lines = [
        (
            "attention",
            attn - m.attention(mtp=False),
            "12 L d_model T: d_model in place of heads x head width, all T keys, every layer; "
            + words,
        )
    ]
    lines += _param_terms(m, active=True, embedding=True, tables=True)
    lines += _common_terms(m, mtp="llm-foundry's MPT has no MTP module", extra="params")
    return total, lines


def _megatron_attention_lin(c: TransformerConfig) -> int:
    """Megatron's token-linear self-attention term (without the 3 x 2), per layer."""
    h, heads = c.d_model, c.n_heads
    if not c.is_mla:
        q, kv = c.head_dim * heads, c.head_dim * c.n_kv_heads
        return h * (q + 2 * kv) + q * h
    nope_rope = c.qk_nope_head_dim + c.qk_rope_head_dim
    if c.q_lora_rank is None:
        q_term = h * heads * nope_rope
    else:
        q_term = c.q_lora_rank * (h + heads * nope_rope + 1)
    kv = c.kv_lora_rank * (h + heads * (c.qk_nope_head_dim + c.v_head_dim) + 1)
    return q_term + kv + h * c.qk_rope_head_dim + heads * c.v_head_dim * h


def _megatron_check(c: TransformerConfig, name: str) -> None:
    if c.ffn_type == "geglu":
        raise FlopsConfigError(
            f"convention {name!r}: Megatron's formula knows SwiGLU and plain MLPs only "
            f"(--swiglu); got ffn_type='geglu' for {c.name}"
        )


def _megatron(m: _Model, words: str, vpad: int) -> tuple[Fraction, list[tuple]]:
    """Megatron-LM transformer_flops @ d98e8a6, BSHD path (every sample T tokens)."""
    c, t, h, k = m.c, m.t, m.c.d_model, m.c.n_mtp_modules
    _megatron_check(c, "megatron")
    n_moe = c.n_moe_layers + (k if c.is_moe else 0)
    n_dense = c.n_layers - c.n_moe_layers + (0 if c.is_moe else k)
    layers = c.n_layers + k
    ffx = c.ffn_matrices
    topk = c.top_k if c.is_moe else 0
    shared = c.n_shared_experts * c.d_ff_shared if c.is_moe else 0
    mlp = h * (c.d_ff * ffx * n_dense + (c.d_ff_expert * topk * ffx + shared * ffx) * n_moe)
    core = Fraction(c.n_heads * c.qk_head_dim, 2) + Fraction(c.n_heads * c.value_head_dim, 2)
    total = (
        6
        * (mlp + _megatron_attention_lin(c) * layers + k * (3 * h + 2 * h * h) + h * vpad * (k + 1))
        + 6 * core * layers * t
    )
    lines = [
        (
            "attention",
            6 * core * layers * t - m.attention(),
            "causal mask as T/2 keys per query on every layer (windows ignored); " + words,
        ),
        (
            "moe_router",
            -Fraction(6 * h * c.n_experts * m.n_moe_all),
            "the router matmul is not counted",
        ),
        (
            "vocab_padding",
            Fraction(6 * h * (vpad - c.vocab_size) * (k + 1)),
            f"logits over the padded vocabulary ({vpad} rows, {c.vocab_size} real)",
        ),
    ]
    if c.is_mla:
        latent = c.kv_lora_rank + (c.q_lora_rank or 0)
        lines.append(
            ("mla_latent_norms", Fraction(6 * latent * layers), "MLA latent norms counted as FLOPs")
        )
    if k:
        lines.append(
            ("mtp_norms", Fraction(6 * 3 * h * k), "MTP modules' three norms counted as FLOPs")
        )
    return total, lines + _common_terms(m, mtp=None, extra="unknown")


def _megatron_2024(m: _Model, words: str, vpad: int) -> tuple[Fraction, list[tuple]]:
    """Megatron-LM num_floating_point_operations @ 2bfe9be (2024-04-03), per token."""
    c, t, h, L = m.c, m.t, m.c.d_model, m.c.n_layers
    _megatron_check(c, "megatron-2024")
    missing = [
        name
        for name, on in (
            ("multi-head latent attention", c.is_mla),
            ("shared experts", c.n_shared_experts),
            ("dense layers among MoE layers", c.is_moe and c.n_dense_layers),
            ("MTP modules", c.n_mtp_modules),
        )
        if on
    ]
    if missing:
        stem = (f"convention 'megatron-2024' has no term for {', '.join(missing)} (the 2024 closed "
                "form counts every layer alike)")
        error = FlopsConfigError(f"{stem}; use convention='megatron' for {c.name}")
        # what to give instead, as data: a front end asks with its own spelling (--convention megatron)
        error.stem, error.asks, error.examples = stem, ("convention",), (("megatron",),)  # type: ignore[attr-defined]
        raise error
    ratio = Fraction(c.head_dim * c.n_heads, h)
    routed = c.top_k if c.is_moe else 1
    gated = Fraction(3, 2) if c.ffn_type == "swiglu" else Fraction(1)
    ffn = c.d_ff_expert if c.is_moe else c.d_ff
    total = (
        12
        * L
        * h
        * h
        * (
            (1 + Fraction(c.n_kv_heads, c.n_heads) + Fraction(t, h)) * ratio
            + Fraction(ffn, h) * routed * gated
            + Fraction(vpad, 2 * L * h)
        )
    )
    lines = [
        (
            "attention",
            Fraction(12 * L * t * c.n_heads * c.head_dim) - m.attention(),
            "all T keys per query on every layer (no causal halving before 2025-03, windows "
            "ignored); " + words,
        ),
        (
            "moe_router",
            -Fraction(6 * h * c.n_experts * c.n_moe_layers),
            "the router matmul is not counted",
        ),
        (
            "vocab_padding",
            Fraction(6 * h * (vpad - c.vocab_size)),
            f"logits over the padded vocabulary ({vpad} rows, {c.vocab_size} real)",
        ),
    ]
    return total, lines + _common_terms(m, mtp=None, extra="unknown")


def _maxtext_attention(m: _Model, version: str) -> tuple[Fraction, str]:
    """MaxText's causal attention FLOPs per token (training), and how it counted them."""
    c, t = m.c, m.t
    per_key = 3 * 2 * c.n_heads * 2 * c.head_dim  # scores + values, 3 x forward, per key
    windows = c.layer_windows()
    pattern = c.attention_window if isinstance(c.attention_window, tuple) else ()
    layers = c.n_layers + c.n_mtp_modules
    if not pattern or 0 not in pattern:
        return per_key * Fraction(t, 2) * layers, "T/2 keys on every layer (windows ignored)"
    w = min(x for x in windows if x is not None)
    n_global = c.n_layers // len(pattern) + c.n_mtp_modules
    n_local = c.n_layers - c.n_layers // len(pattern)
    if version == "maxtext-2026-03":
        local, how = Fraction(min(w, t), 2), "W/2"
    else:
        wt = min(w, t)
        local, how = Fraction(2 * (t * wt) - wt * wt, 2 * t), "(T W - W^2/2) / T"
    text = (
        f"{n_global} global layers at T/2 keys and {n_local} local layers at {how} keys (MaxText "
        f"takes every {len(pattern)}th layer as global)"
    )
    return per_key * (Fraction(t, 2) * n_global + local * n_local), text


def _maxtext(m: _Model, words: str, version: str) -> tuple[Fraction, list[tuple]]:
    c = m.c
    if c.is_mla:
        raise FlopsConfigError(
            f"convention {version!r} is implemented for standard and grouped-query attention; "
            f"{c.name} uses multi-head latent attention"
        )
    if c.n_shared_experts:
        raise FlopsConfigError(
            f"convention {version!r} is implemented for models without shared experts (MaxText "
            f"counts those in its DeepSeek and Llama 4 decoders); {c.name} has shared experts"
        )
    attn, how = _maxtext_attention(m, version)
    k, d = c.n_mtp_modules, c.d_model
    weights = m.ours - m.attention(mtp=False) - m.mtp() - m.extra()
    mtp_kept = 3 * (m.row("mtp_layers") - k * 2 * 2 * d * d)
    total = weights + mtp_kept + attn
    lines = [("attention", attn - m.attention(), f"causal: {how}; {words}")]
    if k:
        lines += [
            (
                "mtp_projection",
                -Fraction(3 * k * 2 * 2 * d * d),
                "MTP's 2d -> d projection not counted",
            ),
            ("mtp_logits", -3 * m.row("mtp_logits"), "MTP's logits not counted (shared head)"),
        ]
    if c.extra_blocks:
        lines.append(("extra_blocks", -m.extra(), "custom blocks are unknown to MaxText's formula"))
    return total, lines


def _maxtext_2024(m: _Model, words: str) -> tuple[Fraction, list[tuple]]:
    c, t = m.c, m.t
    attn = Fraction(6 * c.n_heads * c.n_layers * c.head_dim * t)
    total = _six_n(m, active=False, embedding=True) + attn
    lines = [
        (
            "attention",
            attn - m.attention(mtp=False),
            "12 H L Q T / 2: causal T/2 keys on every layer, head_dim for scores and values "
            "(windows ignored); " + words,
        )
    ]
    lines += _param_terms(m, active=False, embedding=True, tables=True)
    lines += _common_terms(m, mtp="MaxText's 2024 count has no MTP module", extra="params")
    return total, lines


# --------------------------------------------------------------------------------------------
# entry point


def _resolve(convention: Any) -> str:
    if not isinstance(convention, str):
        raise FlopsConfigError(f"convention must be a string; got {convention!r}")
    key = _ALIASES.get(convention.strip().lower(), convention.strip().lower())
    if key not in CONVENTIONS:
        raise FlopsConfigError(
            f"convention must be one of {', '.join(convention_names())}; got {convention!r}"
        )
    return key


def _framework_count(m: _Model, name: str, words: str, vpad: int) -> tuple[Fraction, list[tuple]]:
    if name in ("megatron", "nemo"):
        return _megatron(m, words, vpad)
    if name == "megatron-2024":
        return _megatron_2024(m, words, vpad)
    if name in ("torchtitan", "torchtitan-2024-04"):
        return _torchtitan(m, words, legacy=name != "torchtitan")
    if name == "llm-foundry":
        return _llm_foundry(m, words)
    if name == "maxtext-2024-03":
        return _maxtext_2024(m, words)
    return _maxtext(m, words, name)


def _padded_vocab(c: TransformerConfig, name: str, padded_vocab_size: int | None) -> int:
    if padded_vocab_size is None:
        return c.vocab_size
    if name not in ("megatron", "megatron-2024", "nemo"):
        raise FlopsConfigError(
            f"padded_vocab_size applies to the Megatron conventions (megatron, megatron-2024, "
            f"nemo); got it with convention={name!r}"
        )
    if (
        isinstance(padded_vocab_size, bool)
        or not isinstance(padded_vocab_size, int)
        or (padded_vocab_size < c.vocab_size)
    ):
        raise FlopsConfigError(
            f"padded_vocab_size must be an integer >= vocab_size={c.vocab_size}; "
            f"got {padded_vocab_size!r}"
        )
    return padded_vocab_size


def _terms(lines: list[tuple], t: int, scale: Fraction = Fraction(1)) -> tuple[ConventionTerm, ...]:
    out = []
    for name, value, why in lines:
        if value:
            v = Fraction(value) * scale
            out.append(ConventionTerm(name, float(v), float(v * t), why))
    return tuple(out)


def _hardware(
    m: _Model, name: str, result: ModelFlops, total: Fraction, lines: list[tuple]
) -> tuple[float, tuple[ConventionTerm, ...]]:
    """Hardware FLOPs per sample under the convention, and the lines from ours."""
    recompute = result.conventions.recompute
    extra_hw = Fraction(result.hardware_per_sample) - Fraction(result.training_per_sample)
    if name != "llm-foundry" or recompute == "none":
        return float(total * m.t + extra_hw), _terms(lines, m.t)
    if recompute != "full":
        raise FlopsConfigError(
            "convention 'llm-foundry' knows full activation checkpointing only (its HFU is "
            f"4/3 x its MFU count); got recompute={recompute!r}"
        )
    logits = [
        (
            "logits_recomputed",
            m.row("logits", "mtp_logits"),
            "HFU re-runs the whole forward, the logits layer too (ours re-runs the layers only)",
        )
    ]
    scaled = [(f"{n} (and its recomputation)", v, w) for n, v, w in lines]
    terms = _terms(scaled, m.t, Fraction(4, 3)) + _terms(logits, m.t)
    return float(total * Fraction(4, 3) * m.t), terms


def apply_convention(
    result: ModelFlops, convention: str, *, padded_vocab_size: int | None = None
) -> ModelFlops:
    """``result`` (counted as ours) recounted as ``convention`` counts, with named differences.

    Training FLOPs become the framework's; ``differences`` lists every line between ours and
    it (they sum to the gap exactly). Hardware FLOPs add our recomputation to the framework's
    training count, except ``llm-foundry`` with ``recompute="full"``, whose HFU is ``4/3 x``
    its count (``hardware_differences`` names the logits it recomputes).
    """
    name = _resolve(convention)
    if name == "ours":
        return result
    if not isinstance(result.config, TransformerConfig):
        raise FlopsConfigError(
            f"convention={name!r} applies to transformers; {result.name} is a {result.kind} "
            "model (counted as ours only)"
        )
    m = _model(result)
    vpad = _padded_vocab(m.c, name, padded_vocab_size)
    total, lines = _framework_count(m, name, _ours_attention_words(result), vpad)
    if m.ours + sum((Fraction(v) for _, v, _ in lines), Fraction(0)) != total:
        raise FlopsConfigError(
            f"convention {name!r}: the named differences do not explain the whole gap for "
            f"{m.c.name} (framework {float(total):.6g} vs ours {float(m.ours):.6g} per token)"
        )
    hardware, hw_terms = _hardware(m, name, result, total, lines)
    info = CONVENTIONS[name]
    note = f"counted as {info.framework} counts ({info.summary}; {info.source})"
    return replace(
        result,
        forward_per_sample=float(total * m.t / 3),
        training_per_sample=float(total * m.t),
        hardware_per_sample=hardware,
        conventions=replace(result.conventions, notes=(*result.conventions.notes, note)),
        convention=name,
        differences=_terms(lines, m.t),
        hardware_differences=hw_terms,
    )
