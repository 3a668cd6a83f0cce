"""The user's inputs applied to a Run, as a library call: what the ``mfu analyze`` flags do.

:func:`apply_inputs` resolves the peak from the registry, counts a preset's FLOPs at the right
sequence length and records each value it was given as a *given* fact (``run.meta.facts``), so a
conflict with what the log states can be shown beside the answer. A wrong input raises
:class:`~mfu_toolkit.facts.InputError`, one line that names the input as the interface in use
spells it (:mod:`mfu_toolkit.render.vocabulary`), the value received and what was expected.
It sits with the front ends (``mfu analyze``, ``make report``, ``mfu audit``), above the analyses.
"""

from __future__ import annotations

import math
from pathlib import PurePath
from typing import Any

from . import facts
from .facts import InputError
from .render.vocabulary import ask, check_interface, check_value, given_where, input_name, one_line, phrase_error, said
from .run import Run

__all__ = ["InputError", "apply_inputs", "check_links", "check_sharding"]


def _count(field: str, value: Any, interface: str) -> int:
    return int(check_value(field, value, interface=interface))


def _positive(field: str, value: Any, interface: str) -> float:
    return float(check_value(field, value, interface=interface))


def _text(field: str, value: Any, interface: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{input_name(field, interface)} must be a non-empty name; got {value!r}")
    return value.strip()


# --------------------------------------------------------------------------------------------
# the peak


def _resolve_peak(meta: Any, name: str, dtype: str, per: str | None, *, sparse: bool, blame: str,
                  interface: str) -> Any:
    """``meta.with_accelerator`` with the registry's error phrased for the interface."""
    from . import hardware

    try:
        return meta.with_accelerator(name, dtype, sparse=sparse, per=per)
    except hardware.DtypeNotAvailableError as exc:
        raise InputError(f"{said('dtype', dtype, interface)}: {one_line(exc)}") from None
    except hardware.RegistryError as exc:  # a request in the registry's text is said in the interface's terms
        raise InputError(f"{said(blame, name, interface)}: {one_line(phrase_error(exc, interface))}") from None


def _known_dtype(dtype: str, interface: str) -> str:
    """``dtype`` as the peak registry names it; one it does not know is an error listing those it
    does, whether or not an accelerator is given (a dtype is checked before it is looked up)."""
    from . import hardware

    try:
        return hardware.canonical_dtype(dtype)
    except hardware.RegistryError:
        raise InputError(f"{said('dtype', dtype, interface)}: not a dtype the peak registry knows; expected "
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
            raise InputError(f"{input_name(field, interface)} counts {counts}s; {said('per', per, interface)} "
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
        what = said("dtype", dtype, interface) if dtype else said("per", per, interface)
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
    from .flops import FlopsConfigError, get_preset, model_flops

    try:
        preset = get_preset(name)
    except FlopsConfigError as exc:
        raise InputError(f"{said('preset', name, interface)}: {one_line(exc)}") from None
    where = f"given as {said('seq_len', seq_len, interface)}"
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
                f"{said('preset', preset.name, interface)}: its source states no training sequence length and the run "
                f"states none (no seq_len in the log); give {ask('seq_len', interface)}")
        else:
            where = "the preset's published training length"
    try:
        mf = model_flops(preset, seq_len=seq_len, causal=True if causal else None)
    except (FlopsConfigError, ValueError) as exc:
        raise InputError(f"{said('preset', preset.name, interface)}: {one_line(exc)}") from None
    counted = f" at seq_len {mf.tokens_per_sample:g} ({where})" if mf.tokens_per_sample else ""
    return mf, f"{counted}; {mf.conventions.summary()}"


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
            return meta.replace(**{**_CLEARED, target: v, "model_flops_source": given_where(field, interface)})
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
# the links collectives are compared with, and how a recommendation model's tables are split


def check_sharding(sharding: Any, *, interface: str = "python") -> str | None:
    """``sharding`` as given, once it is one of :data:`mfu_toolkit.flops.recsys.SHARDINGS` (``None`` passes);
    another value raises :class:`InputError`, one line naming the input as ``interface`` spells it."""
    from .flops.recsys import SHARDINGS

    check_interface(interface)
    if sharding is None or sharding in SHARDINGS:
        return sharding
    raise InputError(f"{said('sharding', sharding, interface)}: expected one of {', '.join(SHARDINGS)}")


def check_links(*, link: Any = None, nic: Any = None, interface: str = "python") -> tuple[Any, Any]:
    """``link`` and ``nic`` as given, once each names a link of :mod:`mfu_toolkit.interconnect` (``None``
    and a :class:`~mfu_toolkit.interconnect.Link` pass); an unknown name raises :class:`InputError`, one
    line naming the input as ``interface`` spells it, the value and close matches (``--nic XDR9: ...``).
    They then enter the analysis with the other options: ``account(run, link=link, nic=nic)``."""
    from . import interconnect

    check_interface(interface)
    for field, value in (("link", link), ("nic", nic)):
        if value is None or isinstance(value, interconnect.Link):
            continue
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{input_name(field, interface)} must be a link name; got {value!r}")
        try:
            interconnect.get_link(value)
        except interconnect.UnknownLinkError as exc:
            close = (f"close matches: {', '.join(exc.suggestions)}" if exc.suggestions
                     else "no close match")
            raise InputError(f"{said(field, value, interface)}: not a link of the interconnect table "
                             f"(mfu_toolkit/interconnect.csv); {close}") from None
    return link, nic


# --------------------------------------------------------------------------------------------


def _given_facts(interface: str, values: dict[str, Any]) -> list[dict[str, Any]]:
    return [facts.given("n_accelerators" if field == "packages" else field, value, given_where(field, interface))
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
    check_interface(interface)
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
