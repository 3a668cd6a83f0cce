"""Model FLOPs: the numerator of MFU, counted the way papers count it.

One call gives FLOPs per token, per sample and per step for a preset, a config object or a TOML
file::

    from mfu_toolkit.flops import model_flops, list_presets
    r = model_flops("llama3-8b", seq_len=8192, batch=512, recompute="selective")
    r.training_per_token      # model FLOPs (MFU numerator) per token
    r.hardware_per_token      # + recomputation (HFU numerator)
    r.to_frame()              # tidy breakdown by component (pandas, imported lazily)

Rooms: ``transformer`` (decoder-only, dense and MoE; the shared result types), ``recsys``
(MLP, DLRM with dot or DCNv2 interaction, HSTU), ``presets`` (published configs with sources),
``config`` (TOML loading), ``counter`` (optional PyTorch cross-check), ``cli`` (``mfu flops``).
Conventions: 2 FLOPs per multiply-add, matmuls and attention products only, training =
3 x forward, recomputation only in hardware FLOPs (``full`` re-runs the layers, not the logits,
as Megatron counts it), embedding lookups and learned position tables zero, causal halving off
unless asked, attention bounded by sliding windows, MTP modules counted (they are trained).
Every result states them in ``.conventions``. A preset without a published training sequence
length needs ``seq_len=``. No pandas at import time.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence

from .config import ConfigFileError, config_from_dict, load_model_config
from .conventions import (
    CONVENTIONS,
    ConventionTerm,
    FrameworkConvention,
    apply_convention,
    convention_names,
)
from .counter import CountedFlops, CounterComparison, compare_with_counter, count_training_step
from .presets import PRESETS, Preset, UnknownPresetError, get_preset, list_presets, preset_family
from .recsys import (
    DLRMConfig,
    HSTUConfig,
    MLPConfig,
    custom_block,
    dlrm_flops,
    hstu_flops,
    hstu_sequence_flops,
    linear,
    mlp_flops,
)
from .transformer import (
    RECOMPUTE_MODES,
    Component,
    Conventions,
    FlopsConfigError,
    ModelFlops,
    ParamCounts,
    TransformerConfig,
    palm_flops_per_token,
    six_n,
    transformer_breakdown,
    transformer_flops,
    transformer_params,
)

__all__ = [
    "CONVENTIONS",
    "ConventionTerm",
    "FrameworkConvention",
    "apply_convention",
    "convention_names",
    "RECOMPUTE_MODES",
    "Component",
    "ConfigFileError",
    "Conventions",
    "CountedFlops",
    "CounterComparison",
    "DLRMConfig",
    "FlopsConfigError",
    "HSTUConfig",
    "MLPConfig",
    "ModelFlops",
    "PRESETS",
    "ParamCounts",
    "Preset",
    "TransformerConfig",
    "UnknownPresetError",
    "compare_with_counter",
    "config_from_dict",
    "count_training_step",
    "custom_block",
    "dlrm_flops",
    "flops_per_unit",
    "get_preset",
    "preset_family",
    "hstu_flops",
    "hstu_sequence_flops",
    "linear",
    "list_presets",
    "load_model_config",
    "mlp_flops",
    "model_flops",
    "palm_flops_per_token",
    "resolve_model",
    "six_n",
    "transformer_breakdown",
    "transformer_flops",
    "transformer_params",
]

ModelSpec = str | os.PathLike | Preset | TransformerConfig | DLRMConfig | HSTUConfig | MLPConfig


def resolve_model(model: ModelSpec) -> tuple[object, str]:
    """(config object, source) for a preset name, a ``.toml`` path, a ``Preset`` or a config."""
    if isinstance(model, Preset):
        return model.config, model.source
    if isinstance(model, (TransformerConfig, DLRMConfig, HSTUConfig, MLPConfig)):
        return model, "user config"
    if isinstance(model, os.PathLike) or (
        isinstance(model, str) and model.lower().endswith(".toml")
    ):
        path = os.fspath(model)
        return load_model_config(path), f"config file {path}"
    if isinstance(model, str):
        preset = get_preset(model)
        return preset.config, preset.source
    raise FlopsConfigError(
        "model must be a preset name, a .toml path, a Preset or a config object "
        f"(TransformerConfig, DLRMConfig, HSTUConfig, MLPConfig); got {type(model).__name__}"
    )


def model_flops(
    model: ModelSpec,
    *,
    seq_len: int | None = None,
    batch: int | None = None,
    causal: bool | None = None,
    recompute: str = "none",
    include_attention: bool = True,
    backward_factor: float = 2.0,
    lengths: Sequence[int] | None = None,
    convention: str = "ours",
    padded_vocab_size: int | None = None,
) -> ModelFlops:
    """FLOPs of one model per token, sample and step, with breakdown and conventions.

    ``model``: a preset name (case-insensitive; see ``list_presets()``), a path to a TOML
    config, a ``Preset`` or a config object. ``seq_len`` overrides the sequence length
    (transformers, HSTU) and is required where the model states no training length (e.g.
    ``mixtral-8x7b``); ``batch`` is samples per step (default 1, or ``len(lengths)``);
    ``causal`` defaults to off for transformers (PaLM Appendix B) and on for HSTU;
    ``recompute`` (``none``/``selective``/``selective-eq8``/``full``, see ``Conventions``)
    changes hardware FLOPs only; ``lengths`` gives HSTU's real per-sequence lengths.

    ``convention`` (default ``"ours"``; see ``convention_names()``: ``megatron``, ``nemo``,
    ``torchtitan``, ``llm-foundry``, ``maxtext`` and dated older formulas) recounts a
    transformer as that framework counts it, to reproduce the TFLOP/s and MFU it prints: the
    totals become the framework's and ``.differences`` names every line between ours and it
    (``.ours_training_per_sample`` keeps ours). ``padded_vocab_size`` is Megatron's padded
    vocabulary (its logits run over it).
    """
    config, source = resolve_model(model)
    if isinstance(config, TransformerConfig):
        if lengths is not None:
            raise FlopsConfigError(
                "lengths applies to HSTU models only (for transformers pass seq_len); "
                f"got lengths={list(lengths)!r}"
            )
        return _transformer_flops(
            config,
            source,
            seq_len=seq_len,
            batch=batch,
            causal=causal,
            recompute=recompute,
            include_attention=include_attention,
            backward_factor=backward_factor,
            convention=convention,
            padded_vocab_size=padded_vocab_size,
        )
    if convention != "ours" or padded_vocab_size is not None:
        raise FlopsConfigError(
            "convention and padded_vocab_size apply to transformers; "
            f"{type(config).__name__} is counted as ours only (got convention={convention!r})"
        )
    if isinstance(config, HSTUConfig):
        _check_hstu_attention(include_attention)
        return hstu_flops(
            config,
            seq_len=seq_len,
            lengths=lengths,
            batch=batch,
            causal=causal,
            recompute=recompute,
            backward_factor=backward_factor,
            source=source,
        )
    # DLRM / MLP: no sequence, no attention.
    _check_no_sequence_options(
        config, seq_len=seq_len, causal=causal, lengths=lengths, include_attention=include_attention
    )
    estimator = dlrm_flops if isinstance(config, DLRMConfig) else mlp_flops
    return estimator(
        config,
        batch=1 if batch is None else batch,
        recompute=recompute,
        backward_factor=backward_factor,
        source=source,
    )


def _check_hstu_attention(include_attention: bool) -> None:
    """Raise unless ``include_attention`` is ``True``: HSTU cannot leave its attention out."""
    if include_attention is not True:
        raise FlopsConfigError(
            "include_attention must be True for HSTU (attention is its core); "
            f"got {include_attention!r}"
        )


def _check_no_sequence_options(
    config: object,
    *,
    seq_len: int | None,
    causal: bool | None,
    lengths: Sequence[int] | None,
    include_attention: bool,
) -> None:
    """Raise if a sequence-model option is set for a DLRM or MLP ``config``."""
    for name, value, default in (
        ("seq_len", seq_len, None),
        ("causal", causal, None),
        ("lengths", lengths, None),
        ("include_attention", include_attention, True),
    ):
        if value is not default:
            raise FlopsConfigError(
                f"{name} applies to sequence models (transformer, hstu), not to "
                f"{type(config).__name__}; got {name}={value!r}"
            )


def _transformer_flops(
    config: TransformerConfig,
    source: str,
    *,
    seq_len: int | None,
    batch: int | None,
    causal: bool | None,
    recompute: str,
    include_attention: bool,
    backward_factor: float,
    convention: str,
    padded_vocab_size: int | None,
) -> ModelFlops:
    """A transformer counted as ours, then as ``convention`` counts it (see ``conventions``)."""
    result = transformer_flops(
        config,
        seq_len=seq_len,
        batch=1 if batch is None else batch,
        include_attention=include_attention,
        causal=bool(causal),
        recompute=recompute,
        backward_factor=backward_factor,
        source=source,
    )
    if convention != "ours" and backward_factor != 2.0:
        raise FlopsConfigError(
            f"convention={convention!r} counts training as 3 x forward; "
            f"got backward_factor={backward_factor!r}"
        )
    return apply_convention(result, convention, padded_vocab_size=padded_vocab_size)


def flops_per_unit(
    preset: str | None = None,
    config_path: str | None = None,
    *,
    seq_len: int | None = None,
    causal: bool | None = None,
    recompute: str = "none",
) -> ModelFlops:
    """Model FLOPs of a preset or a TOML config, for ``mfu calc``.

    Give exactly one of ``preset`` and ``config_path``. The returned ``ModelFlops`` has, for one
    sample (one sequence of ``tokens_per_sample`` tokens, or one recommendation example):

    * ``unit``: ``"token"`` (language models) or ``"sample"`` (recommendation models);
    * ``tokens_per_sample``: sequence length, or ``None`` when the model has no tokens;
    * ``training_per_sample`` / ``training_per_token``: model FLOPs of forward + backward
      (no recomputation), the MFU numerator; ``training_per_unit`` picks the natural one;
    * ``hardware_per_sample`` / ``hardware_per_token``: the same plus recomputation as set by
      ``recompute``, the HFU numerator (equal to the model FLOPs for ``"none"``);
    * ``forward_per_*``, ``params``, ``conventions`` (``.describe()`` gives text lines,
      ``.summary()`` one line, ``.to_dict()`` JSON), ``name`` and ``source``.

    ``causal`` is as in ``model_flops`` (``None``: the model's default, non-causal for
    transformers); ``seq_len`` is required for presets that state no training length.

    MFU = samples/s x training_per_sample / (N x peak) = tokens/s x training_per_token / (N x peak).
    Raises ``UnknownPresetError`` / ``ConfigFileError`` / ``FlopsConfigError`` (all ValueError).
    """
    if (preset is None) == (config_path is None):
        raise FlopsConfigError(
            "give exactly one of preset and config_path; "
            f"got preset={preset!r}, config_path={config_path!r}"
        )
    options = {"seq_len": seq_len, "causal": causal, "recompute": recompute}
    if preset is not None:
        return model_flops(get_preset(preset), **options)
    path = os.fspath(config_path)
    result = model_flops(load_model_config(path), **options)
    return dataclasses.replace(result, source=f"config file {path}")
