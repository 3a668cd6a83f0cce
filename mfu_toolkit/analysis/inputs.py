"""The user's inputs applied to a Run, and how each interface asks for them.

A team reaches the same analysis three ways: Python (``apply_inputs(run, seq_len=4096)``), the
``mfu analyze`` command (``--seq-len 4096``) and ``make report`` (``SEQ_LEN=4096``). Every message
that asks for a missing or wrong input names it in the terms of the interface in use
(:func:`ask`), so a user never has to translate ``meta.model_flops_per_sample`` into a flag.

:func:`apply_inputs` is what the ``mfu analyze`` flags do, as a library call: it resolves the
peak from the registry, counts a preset's FLOPs at the right sequence length and records each
value it was given as a *given* fact (``run.meta.facts``), so a conflict with what the log states
can be shown beside the answer. A wrong input raises :class:`InputError`, one line that names the
input as the interface spells it, the value received and what was expected.
"""

from __future__ import annotations

import math
import numbers
from pathlib import PurePath
from typing import Any

from .. import facts
from ..run import Run
from .reasons import Reason

__all__ = ["INTERFACES", "InputError", "ask", "input_name", "apply_inputs", "check_value", "parse_value",
           "flops_request", "preset_family", "phrase", "phrase_error"]

INTERFACES: tuple[str, ...] = ("python", "cli", "make")

# field -> (python keyword, command-line flag, make variable, metavar)
_VOCABULARY: dict[str, tuple[str, str, str, str]] = {
    "accelerator": ("accelerator", "--accelerator", "ACCELERATOR", "NAME"),
    "dtype": ("dtype", "--dtype", "DTYPE", "DTYPE"),
    "n_accelerators": ("n_accelerators", "--gpus", "GPUS", "N"),
    "packages": ("packages", "--packages", "PACKAGES", "N"),
    "per": ("per", "--per", "PER", "device|package"),
    "preset": ("preset", "--preset", "PRESET", "NAME"),
    "seq_len": ("seq_len", "--seq-len", "SEQ_LEN", "N"),
    "causal": ("causal", "--causal", "CAUSAL", "1"),
    "flops_per_sample": ("flops_per_sample", "--flops-per-sample", "FLOPS_PER_SAMPLE", "F"),
    "flops_per_token": ("flops_per_token", "--flops-per-token", "FLOPS_PER_TOKEN", "F"),
    "flops_per_step": ("flops_per_step", "--flops-per-step", "FLOPS_PER_STEP", "F"),
    "global_batch": ("global_batch", "--global-batch", "GLOBAL_BATCH", "N"),
    "warmup_steps": ("warmup_steps", "--warmup-steps", "WARMUP_STEPS", "N"),
    "checkpoint_write_s": ("checkpoint_write_s", "--checkpoint-s", "CHECKPOINT_S", "S"),
    "checkpoint_every_steps": ("checkpoint_every_steps", "--checkpoint-every", "CHECKPOINT_EVERY", "N"),
    "mtbf_hours": ("mtbf_hours", "--mtbf-hours", "MTBF_HOURS", "H"),
    "format": ("format", "--format", "FORMAT", "NAME"),
    "columns": ("columns", "--columns", "COLUMN_MAP", "SCHEMA:COLUMN,..."),
}
_COMPOSITE = {  # what to give for a fact several inputs can supply
    "model_flops": (("preset", "seq_len"), ("flops_per_sample",)),
    "model_flops_per_token": (("preset", "seq_len"), ("flops_per_token",)),
    "model_flops_per_step": (("preset", "seq_len"), ("flops_per_step",)),
}


class InputError(ValueError):
    """A user's input is wrong or missing; the message is one line, phrased for the interface."""


def _check_interface(interface: str) -> str:
    if interface not in INTERFACES:
        raise ValueError(f"interface must be one of {', '.join(map(repr, INTERFACES))}; got {interface!r}")
    return interface


def input_name(field: str, interface: str) -> str:
    """The bare name of an input in an interface: ``--seq-len``, ``SEQ_LEN`` or ``seq_len``."""
    _check_interface(interface)
    if field not in _VOCABULARY:
        raise ValueError(f"field must be one of {', '.join(sorted(_VOCABULARY))}; got {field!r}")
    return _VOCABULARY[field][INTERFACES.index(interface)]


def ask(field: str, interface: str) -> str:
    """How to give ``field`` in ``interface``: ``ask("seq_len", "make") -> "SEQ_LEN=N"``.

    Besides the inputs of :func:`apply_inputs` and the builder's options, ``model_flops``
    (and ``model_flops_per_token`` / ``model_flops_per_step``) asks for a preset with its
    sequence length or a FLOPs count.
    """
    _check_interface(interface)
    if field in _COMPOSITE:
        return " or ".join(" ".join(ask(f, interface) for f in group) for group in _COMPOSITE[field])
    name = input_name(field, interface)
    meta = _VOCABULARY[field][3]
    if interface == "cli":
        return name if field == "causal" else f"{name} {meta}"
    return f"{name}={meta}" if interface == "make" else f"{name}={'True' if field == 'causal' else meta}"


def _said(field: str, value: Any, interface: str) -> str:
    """A value as the user typed it: ``--preset gemma-2-9b``, ``PRESET=gemma-2-9b``, ``preset='gemma-2-9b'``."""
    name = input_name(field, interface)
    if interface == "cli":
        return f"{name} {value}"
    return f"{name}={value}" if interface == "make" else f"{name}={value!r}"


def _given_where(field: str, interface: str) -> str:
    """Where a given value came from, in the words of its interface."""
    name = input_name(field, interface)
    return {"cli": f"command line {name}", "make": f"make variable {name}",
            "python": f"apply_inputs({name}=...)"}[interface]


# --------------------------------------------------------------------------------------------
# checks of single values


_EXPECTED = {"count": "a whole number >= 1", "whole": "a whole number >= 0", "positive": "a finite number > 0"}
_KIND = {"n_accelerators": "count", "packages": "count", "seq_len": "count", "warmup_steps": "whole",
         "global_batch": "positive", "flops_per_sample": "positive", "flops_per_token": "positive",
         "flops_per_step": "positive", "checkpoint_write_s": "positive", "checkpoint_every_steps": "positive",
         "mtbf_hours": "positive"}


def _bad(field: str, value: Any, interface: str) -> InputError:
    """``GPUS=abc: expected a whole number >= 1``: the value as typed, then what was expected."""
    return InputError(f"{_said(field, value, interface)}: expected {_EXPECTED[_KIND[field]]}")


def check_value(field: str, value: Any, *, interface: str = "python") -> int | float:
    """A numeric input checked against what ``field`` takes (a count, a whole number >= 0 or a
    finite number > 0); counts come back as ``int``. A wrong one raises :class:`InputError`."""
    _check_interface(interface)
    if field not in _KIND:
        raise ValueError(f"field must be one of {', '.join(sorted(_KIND))}; got {field!r}")
    kind = _KIND[field]
    number = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    if kind == "positive":
        if not number or value <= 0:
            raise _bad(field, value, interface)
        return float(value)
    if not number or not float(value).is_integer() or value < (1 if kind == "count" else 0):
        raise _bad(field, value, interface)
    return int(value)


def parse_value(field: str, text: str, *, interface: str = "cli") -> int | float:
    """A numeric input as typed (a flag's or make variable's text) parsed and checked:
    ``parse_value("n_accelerators", "abc", interface="make")`` raises ``GPUS=abc: expected a
    whole number >= 1``. Used where argparse would otherwise answer in its own terms."""
    _check_interface(interface)
    if field not in _KIND:
        raise ValueError(f"field must be one of {', '.join(sorted(_KIND))}; got {field!r}")
    try:
        return check_value(field, float(str(text).strip()), interface=interface)
    except (ValueError, InputError):
        raise _bad(field, str(text).strip(), interface) from None


def _count(field: str, value: Any, interface: str) -> int:
    return int(check_value(field, value, interface=interface))


def _positive(field: str, value: Any, interface: str) -> float:
    return float(check_value(field, value, interface=interface))


def _text(field: str, value: Any, interface: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{input_name(field, interface)} must be a non-empty name; got {value!r}")
    return value.strip()


def _one_line(exc: BaseException) -> str:
    return " ".join(part.strip() for part in str(exc).splitlines() if part.strip())


# --------------------------------------------------------------------------------------------
# the library's reasons and hints, phrased by their codes


def flops_request(unit: str, interface: str) -> str:
    """What to give for the model FLOPs of a run whose work is counted per ``unit``."""
    if unit == "step":
        return (f"{ask('preset', interface)} {ask('seq_len', interface)} {ask('global_batch', interface)} or "
                f"{ask('flops_per_step', interface)}")
    return ask("model_flops_per_token" if unit == "token" else "model_flops", interface)


def _flops_words(reason: Reason, interface: str) -> str:
    unit = reason.missing[0].unit or "step"
    return f"model FLOPs per {unit} unknown (give {flops_request(unit, interface)})"


def _peak_words(reason: Reason, interface: str) -> str:
    fields = {m.field for m in reason.missing}
    wants = ([f"accelerator count (give {ask('n_accelerators', interface)})"] if "n_accelerators" in fields
             else []) + ([f"peak (give {ask('accelerator', interface)}, and {ask('dtype', interface)} when not bf16)"]
                         if "peak_flops_per_accelerator" in fields else [])
    return "unknown " + " and ".join(wants)


def _work_words(reason: Reason, interface: str) -> str:
    unit = reason.missing[0].unit or "sample"
    return f"{unit}s per step unknown (give {' and '.join(ask(m.field, interface) for m in reason.missing)})"


_PHRASES = {
    "work_unknown": _work_words,
    "flops_unknown": _flops_words,
    "peak_unknown": _peak_words,
    "hfu_unknown": lambda r, i: "hardware FLOPs (with recomputation) unknown: the log gives no recomputation count",
}


def phrase(reason: Any, interface: str) -> str:
    """A :class:`~mfu_toolkit.analysis.reasons.Reason` said in the terms of ``interface``, looked
    up by its code: ``flops_unknown`` for a run counted per sample becomes, for the command line,
    ``"model FLOPs per sample unknown (give --preset NAME --seq-len N or --flops-per-sample F)"``.
    A reason whose code asks for nothing is its own sentence; anything else is ``str(reason)``."""
    _check_interface(interface)
    if not isinstance(reason, Reason):
        return str(reason or "")
    return "; ".join(_PHRASES[r.code](r, interface) if r.code in _PHRASES else str(r) for r in reason.each())


def phrase_error(exc: BaseException, interface: str) -> str:
    """An error's message with its hint (``LoadError.hint``) said in the terms of ``interface``."""
    _check_interface(interface)
    hint = getattr(exc, "hint", None)
    if hint != "choose_format":
        return str(exc)
    bare = exc.bare  # type: ignore[attr-defined]
    return (f"{bare} Give {ask('format', interface)} to choose one, e.g. {_said('format', 'table', interface)} "
            f"with {ask('columns', interface)} for a generic CSV/JSONL/Parquet table")


# --------------------------------------------------------------------------------------------
# the peak


def _resolve_peak(meta: Any, name: str, dtype: str, per: str | None, *, sparse: bool, blame: str,
                  interface: str) -> Any:
    """``meta.with_accelerator`` with the registry's error phrased for the interface."""
    from .. import hardware

    try:
        return meta.with_accelerator(name, dtype, sparse=sparse, per=per)
    except hardware.DtypeNotAvailableError as exc:
        raise InputError(f"{_said('dtype', dtype, interface)}: {_one_line(exc)}") from None
    except hardware.RegistryError as exc:
        raise InputError(f"{_said(blame, name, interface)}: {_one_line(exc)}") from None


def _known_dtype(dtype: str, interface: str) -> str:
    """``dtype`` as the peak registry names it; one it does not know is an error listing those it
    does, whether or not an accelerator is given (a dtype is checked before it is looked up)."""
    from .. import hardware

    try:
        return hardware.canonical_dtype(dtype)
    except hardware.RegistryError:
        raise InputError(f"{_said('dtype', dtype, interface)}: not a dtype the peak registry knows; expected "
                         f"one of {', '.join(hardware.DTYPES)}") from None


def _apply_count(meta: Any, interface: str, n_accelerators: Any, packages: Any,
                 per: str | None) -> tuple[Any, str | None]:
    """``n_accelerators``/``packages`` into the meta; the unit the peak must be per."""
    if n_accelerators is not None and packages is not None:
        raise InputError(f"give one of {input_name('n_accelerators', interface)} (devices) or "
                         f"{input_name('packages', interface)} (packages), not both")
    for field, n, counts in (("n_accelerators", n_accelerators, "device"), ("packages", packages, "package")):
        if n is None:
            continue
        n = _count(field, n, interface)
        if per is not None and per != counts:
            other = "packages" if counts == "device" else "n_accelerators"
            raise InputError(f"{input_name(field, interface)} counts {counts}s; {_said('per', per, interface)} "
                             f"contradicts it (use {ask(other, interface)} instead)")
        meta = meta.replace(n_accelerators=n)
        per = counts
    return meta, per


def _apply_peak(meta: Any, interface: str, accelerator: Any, dtype: Any, per: str | None,
                defaults: list[str]) -> Any:
    if accelerator is not None:
        name = _text("accelerator", accelerator, interface)
        if dtype is None:
            dtype = meta.dtype or "bf16"
            if meta.dtype is None:
                defaults.append("dtype")
        return _resolve_peak(meta, name, dtype, per, sparse=False, blame="accelerator", interface=interface)
    if dtype is None and (per is None or per == meta.peak_per):
        return meta
    if meta.accelerator:  # the run's accelerator, its peak for this dtype and unit
        return _resolve_peak(meta, meta.accelerator, dtype or meta.dtype or "bf16", per or meta.peak_per,
                             sparse=bool(meta.peak_sparse), blame="accelerator", interface=interface)
    if meta.peak_flops_per_accelerator is not None:
        what = _said("dtype", dtype, interface) if dtype else _said("per", per, interface)
        raise InputError(
            f"{what}: the run's peak ({meta.peak_flops_per_accelerator:.4g} FLOP/s per {meta.peak_per}, "
            f"{meta.peak_source or 'source unknown'}) names no accelerator to look it up for; give "
            f"{ask('accelerator', interface)} too")
    return meta.replace(peak_per=per or meta.peak_per, dtype=dtype or meta.dtype)


# --------------------------------------------------------------------------------------------
# model FLOPs


def _stated_seq_len(meta: Any) -> tuple[int, str] | None:
    """The first ``seq_len`` fact of the run that is a whole number >= 1, and where it was stated."""
    for f in meta.facts:
        value = f.get("value")
        if f.get("name") != "seq_len" or f.get("source") == facts.GIVEN or isinstance(value, bool):
            continue
        try:
            n = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(n) and n >= 1 and n == int(n):
            return int(n), str(f.get("where") or "")
    return None


def _file_line(where: str) -> str:
    """``/long/path/train.log:12`` -> ``train.log:12``."""
    head, sep, tail = str(where).rpartition(":")
    return f"{PurePath(head).name}:{tail}" if sep and tail.isdigit() else PurePath(str(where)).name


def _preset_flops(meta: Any, name: str, seq_len: int | None, causal: bool, interface: str) -> tuple[Any, str]:
    """A preset's FLOPs for this run and a note of what they were counted at.

    The sequence length is the given one, else the run's own (``meta.seq_len``, then a ``seq_len``
    fact the log states), else the preset's published training length; with none of them the
    error asks for it. ``causal`` counts the causal mask (off by default, as in PaLM Appendix B).
    """
    from ..flops import FlopsConfigError, get_preset, model_flops

    try:
        preset = get_preset(name)
    except FlopsConfigError as exc:
        raise InputError(f"{_said('preset', name, interface)}: {_one_line(exc)}") from None
    where = f"given as {_said('seq_len', seq_len, interface)}"
    if seq_len is None and hasattr(preset.config, "seq_len"):
        stated = _stated_seq_len(meta)
        if meta.seq_len is not None:
            seq_len = int(meta.seq_len)
            where = (f"stated in the log at {_file_line(stated[1])}" if stated is not None and stated[0] == seq_len
                     and stated[1] else "the run's own sequence length")
        elif stated is not None:
            seq_len, where = stated[0], "stated in the log" + (f" at {_file_line(stated[1])}" if stated[1] else "")
        elif preset.config.seq_len is None:
            raise InputError(
                f"{_said('preset', preset.name, interface)}: its source states no training sequence length and the run "
                f"states none (no seq_len in the log); give {ask('seq_len', interface)}")
        else:
            where = "the preset's published training length"
    try:
        mf = model_flops(preset, seq_len=seq_len, causal=True if causal else None)
    except (FlopsConfigError, ValueError) as exc:
        raise InputError(f"{_said('preset', preset.name, interface)}: {_one_line(exc)}") from None
    counted = f" at seq_len {mf.tokens_per_sample:g} ({where})" if mf.tokens_per_sample else ""
    return mf, f"{counted}; {mf.conventions.summary()}"


def preset_family(name: str | None) -> str | None:
    """The published-MFU family of a preset (``dense-transformer``/``moe-transformer``), else None."""
    if not name:
        return None
    from ..flops import FlopsConfigError, TransformerConfig, get_preset

    try:
        config = get_preset(name).config
    except FlopsConfigError:
        return None
    if not isinstance(config, TransformerConfig):
        return None
    return "moe-transformer" if config.n_experts else "dense-transformer"


_CLEARED = dict(model_flops_per_sample=None, model_flops_per_token=None, model_flops_per_step=None,
                hardware_flops_per_step=None)


def _apply_flops(meta: Any, interface: str, preset: Any, seq_len: int | None, causal: bool,
                 counts: dict[str, Any]) -> Any:
    given = [f for f, v in counts.items() if v is not None] + (["preset"] if preset is not None else [])
    if len(given) > 1:
        raise InputError("give one source of model FLOPs, not "
                         + " and ".join(input_name(f, interface) for f in given))
    for field, value in counts.items():
        if value is not None:
            v = _positive(field, value, interface)
            target = "model_" + field
            return meta.replace(**{**_CLEARED, target: v, "model_flops_source": _given_where(field, interface)})
    if preset is None:
        if causal:
            raise InputError(f"{input_name('causal', interface)} applies to the FLOPs count of "
                             f"{ask('preset', interface)}; give {input_name('preset', interface)} too")
        return meta
    name = _text("preset", preset, interface)
    mf, counted = _preset_flops(meta, name, seq_len, causal, interface)
    changes: dict[str, Any] = {
        **_CLEARED,
        "model_flops_per_sample": float(mf.training_per_sample),
        "model_flops_source": f"preset {name!r}{counted}: {mf.source}"[:300],
        "extra": {**meta.extra, "preset": name, "preset_seq_len": mf.seq_len, "preset_causal": bool(causal)},
    }
    if mf.training_per_token:
        changes["model_flops_per_token"] = float(mf.training_per_token)
    if mf.tokens_per_sample and meta.seq_len is None:
        changes["seq_len"] = int(mf.tokens_per_sample)
    return meta.replace(**changes)


# --------------------------------------------------------------------------------------------


def _given_facts(interface: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    return [facts.given("n_accelerators" if field == "packages" else field, value, _given_where(field, interface))
            for field, value in values.items() if value is not None]


def apply_inputs(
    run: Run,
    *,
    interface: str = "python",
    accelerator: str | None = None,
    dtype: str | None = None,
    n_accelerators: int | None = None,
    packages: int | None = None,
    per: str | None = None,
    preset: str | None = None,
    seq_len: int | None = None,
    causal: bool = False,
    flops_per_sample: float | None = None,
    flops_per_token: float | None = None,
    flops_per_step: float | None = None,
    global_batch: float | None = None,
) -> Run:
    """The Run with the user's inputs applied, each recorded as a given fact.

    ``n_accelerators`` counts framework devices (a world size; the peak is per device),
    ``packages`` packages (the peak is per package); ``per`` says what the log's own count is.
    ``accelerator`` resolves the peak from the registry at ``dtype`` (the run's dtype, else bf16,
    recorded as a default); ``dtype`` alone looks the run's accelerator up again. One FLOPs source
    at most: ``preset`` (counted at ``seq_len``, else the run's, else the published length;
    ``causal`` counts the mask) or a FLOPs count per sample, token or step — it replaces what the
    log carried. A wrong input raises :class:`InputError` phrased for ``interface``.
    """
    _check_interface(interface)
    if not isinstance(run, Run):
        raise TypeError(f"run must be a mfu_toolkit.run.Run; got {type(run).__name__}")
    if per is not None and per not in ("device", "package"):
        raise InputError(f"{input_name('per', interface)} must be 'device' or 'package'; got {per!r}")
    if dtype is not None:
        dtype = _known_dtype(_text("dtype", dtype, interface).lower(), interface)
    if seq_len is not None:
        seq_len = _count("seq_len", seq_len, interface)
    if global_batch is not None:
        global_batch = _positive("global_batch", global_batch, interface)
    meta = run.meta
    defaults = [d for d in meta.extra.get("defaults", []) if isinstance(d, str) and not (d == "dtype" and dtype)]
    meta, per = _apply_count(meta, interface, n_accelerators, packages, per)
    meta = _apply_peak(meta, interface, accelerator, dtype, per, defaults)
    if global_batch is not None:
        meta = meta.replace(global_batch=global_batch)
    if seq_len is not None:
        meta = meta.replace(seq_len=seq_len)
    meta = _apply_flops(meta, interface, preset, seq_len, causal,
                        {"flops_per_sample": flops_per_sample, "flops_per_token": flops_per_token,
                         "flops_per_step": flops_per_step})
    given = _given_facts(interface, {"accelerator": accelerator, "dtype": dtype, "n_accelerators": n_accelerators,
                                     "packages": packages, "seq_len": seq_len, "global_batch": global_batch})
    extra = dict(meta.extra)
    if defaults:
        extra["defaults"] = sorted(set(defaults))
    meta = meta.replace(facts=[*meta.facts, *given], extra=extra)
    return run.replace(meta=meta)
