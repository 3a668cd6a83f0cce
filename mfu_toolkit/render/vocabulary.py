"""How each interface spells an input, and the library's reasons and errors said in its terms.

A team reaches the same analysis three ways: Python (``apply_inputs(run, seq_len=4096)``), the
``mfu analyze`` command (``--seq-len 4096``) and ``make report`` (``SEQ_LEN=4096``). This is the
one table of those spellings (renaming ``--gpus`` is one edit here); every request for a missing
or wrong input is looked up in it by field or reason code, never by reading a sentence back.
"""

from __future__ import annotations

from typing import Any

from .. import facts
from ..analysis.communication import LinkRequest
from ..analysis.reasons import Reason
from ..facts import InputError
from ..run import InputRequest

__all__ = ["INTERFACES", "InputError", "ask", "check_interface", "check_value", "flops_request", "given_where",
           "input_name", "one_line", "parse_value", "phrase", "phrase_error", "said"]

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
    "step_pattern": ("step_pattern", "--step-pattern", "STEP_PATTERN", "REGEX"),
    "link": ("link", "--link", "LINK", "NAME"),
    "nic": ("nic", "--nic", "NIC", "NAME"),
    "sharding": ("sharding", "--sharding", "SHARDING", "table_wise|column_wise|data_parallel"),
}
_COMPOSITE = {  # what to give for a fact several inputs can supply
    "model_flops": (("preset", "seq_len"), ("flops_per_sample",)),
    "model_flops_per_token": (("preset", "seq_len"), ("flops_per_token",)),
    "model_flops_per_step": (("preset", "seq_len"), ("flops_per_step",)),
}


def check_interface(interface: str) -> str:
    """``interface`` itself when it is one of :data:`INTERFACES`; else a ValueError naming them."""
    if interface not in INTERFACES:
        raise ValueError(f"interface must be one of {', '.join(map(repr, INTERFACES))}; got {interface!r}")
    return interface


def input_name(field: str, interface: str) -> str:
    """The bare name of an input in an interface: ``--seq-len``, ``SEQ_LEN`` or ``seq_len``."""
    check_interface(interface)
    if field not in _VOCABULARY:
        raise ValueError(f"field must be one of {', '.join(sorted(_VOCABULARY))}; got {field!r}")
    return _VOCABULARY[field][INTERFACES.index(interface)]


def ask(field: str, interface: str) -> str:
    """How to give ``field`` in ``interface``: ``ask("seq_len", "make") -> "SEQ_LEN=N"``.

    Besides the inputs of ``apply_inputs`` and the builder's options, ``model_flops`` (and
    ``model_flops_per_token`` / ``model_flops_per_step``) asks for a preset with its sequence
    length or a FLOPs count.
    """
    check_interface(interface)
    if field in _COMPOSITE:
        return " or ".join(" ".join(ask(f, interface) for f in group) for group in _COMPOSITE[field])
    name = input_name(field, interface)
    meta = _VOCABULARY[field][3]
    if interface == "cli":
        return name if field == "causal" else f"{name} {meta}"
    return f"{name}={meta}" if interface == "make" else f"{name}={'True' if field == 'causal' else meta}"


def said(field: str, value: Any, interface: str) -> str:
    """A value as the user typed it: ``--preset gemma-2-9b``, ``PRESET=gemma-2-9b``, ``preset='gemma-2-9b'``."""
    name = input_name(field, interface)
    if interface == "cli":
        return f"{name} {value}"
    return f"{name}={value}" if interface == "make" else f"{name}={value!r}"


def given_where(field: str, interface: str) -> str:
    """Where a given value came from, in the words of its interface (a given fact's ``where``)."""
    name = input_name(field, interface)
    return {"cli": f"command line {name}", "make": f"make variable {name}",
            "python": f"apply_inputs({name}=...)"}[interface]


def check_value(field: str, value: Any, *, interface: str = "python") -> int | float:
    """:func:`mfu_toolkit.facts.check_value` with a wrong value said as the interface spells it:
    ``GPUS=abc: expected a whole number >= 1``."""
    check_interface(interface)
    try:
        return facts.check_value(field, value)
    except InputError as exc:
        raise InputError(f"{said(field, value, interface)}: expected {exc.expected}", field=field, value=value,
                         expected=exc.expected) from None


def parse_value(field: str, text: str, *, interface: str = "cli") -> int | float:
    """A numeric input as typed (a flag's or make variable's text) parsed and checked:
    ``parse_value("n_accelerators", "abc", interface="make")`` raises ``GPUS=abc: expected a
    whole number >= 1``. Used where argparse would otherwise answer in its own terms."""
    check_interface(interface)
    if field not in facts.VALUE_KINDS:
        raise ValueError(f"field must be one of {', '.join(sorted(facts.VALUE_KINDS))}; got {field!r}")
    typed = str(text).strip()
    try:
        number = float(typed)
    except ValueError:
        expected = facts.EXPECTED[facts.VALUE_KINDS[field]]
        raise InputError(f"{said(field, typed, interface)}: expected {expected}", field=field, value=typed,
                         expected=expected) from None
    try:
        return facts.check_value(field, number)
    except InputError as exc:
        raise InputError(f"{said(field, typed, interface)}: expected {exc.expected}", field=field, value=typed,
                         expected=exc.expected) from None


def one_line(exc: BaseException) -> str:
    """An error's message on one line (a registry error spans several)."""
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


def _link_words(request: LinkRequest, interface: str) -> str:
    """What a :class:`~mfu_toolkit.analysis.communication.LinkRequest` asks for, said in ``interface``'s terms
    (for Python, exactly the request's own text)."""
    asks = {
        "nic": f"give {ask('nic', interface)} (e.g. {said('nic', 'NDR', interface)} or "
               f"{said('nic', '400GbE', interface)})",
        "link_or_nic": f"give {ask('link', interface)} (intra-node) or {ask('nic', interface)} with the node count",
        "link": f"give {ask('link', interface)}",
        "link_rate": f"give {ask('link', interface)} of a per-GPU rate"
                     + (" (in Python, a Link you state)" if interface == "python" else ""),
    }[request.asks]
    link = input_name("link", interface) + ("" if interface == "cli" else "=")
    return f"{request.stem}; {asks}" + (f"; {link} is intra-node only" if request.link_given else "")


def phrase(reason: Any, interface: str) -> str:
    """A :class:`~mfu_toolkit.analysis.reasons.Reason` said in the terms of ``interface``, looked
    up by its code: ``flops_unknown`` for a run counted per sample becomes, for the command line,
    ``"model FLOPs per sample unknown (give --preset NAME --seq-len N or --flops-per-sample F)"``.
    A load note's :class:`~mfu_toolkit.run.InputRequest` asks for its inputs the same way.
    A :class:`~mfu_toolkit.analysis.communication.LinkRequest` (a collective's link unknown) asks for
    ``--link NAME``/``--nic NAME``, ``LINK=NAME``/``NIC=NAME`` or ``link=``/``nic=`` the same way.
    A reason whose code asks for nothing is its own sentence; anything else is ``str(reason)``."""
    check_interface(interface)
    if isinstance(reason, LinkRequest):
        return _link_words(reason, interface)
    if isinstance(reason, InputRequest):  # a load note asking for an input: Python's own text, else the flag
        return str(reason) if interface == "python" else (
            f"{reason.stem}; give {' or '.join(ask(f, interface) for f in reason.asks)}")
    if not isinstance(reason, Reason):
        return str(reason or "")
    return "; ".join(_PHRASES[r.code](r, interface) if r.code in _PHRASES else str(r) for r in reason.each())


def phrase_error(exc: BaseException, interface: str) -> str:
    """An error's message said in the terms of ``interface``: an :class:`InputError` that names its
    field is said as typed there; a ``LoadError`` asking to choose a format says how to."""
    check_interface(interface)
    if isinstance(exc, InputError) and exc.field in _VOCABULARY and exc.expected:
        return f"{said(exc.field, exc.value, interface)}: expected {exc.expected}"
    if getattr(exc, "hint", None) != "choose_format":
        return str(exc)
    bare = exc.bare  # type: ignore[attr-defined]
    return (f"{bare} Give {ask('format', interface)} to choose one, e.g. {said('format', 'table', interface)} "
            f"with {ask('columns', interface)} for a generic CSV/JSONL/Parquet table")
