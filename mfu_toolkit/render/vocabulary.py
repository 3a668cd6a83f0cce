"""How each interface spells an input, and the library's reasons and errors said in its terms.

A team reaches the same analysis three ways: Python (``apply_inputs(run, seq_len=4096)``), the
``mfu analyze`` command (``--seq-len 4096``) and ``make report`` (``SEQ_LEN=4096``). This is the
one table of those spellings (renaming ``--gpus`` is one edit here); every request for a missing
or wrong input is looked up in it by field or reason code, never by reading a sentence back.
"""

from __future__ import annotations

from typing import Any

from .. import hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ..facts import InputError

# Nothing that loads pandas is imported at module level: `mfu calc` phrases the registry's requests
# with this table and must start fast. The facts, the Run's notes and the analyses' reasons are
# imported where they are read.

__all__ = ["INTERFACES", "InputError", "ask", "check_interface", "check_value", "flops_request", "given_where",
           "input_name", "offers", "one_line", "parse_value", "phrase", "phrase_error", "said"]

INTERFACES: tuple[str, ...] = ("python", "cli", "make")

# field -> (python keyword, command-line flag, make variable, metavar)
_VOCABULARY: dict[str, tuple[str, str, str, str]] = {
    "accelerator": ("accelerator", "--accelerator", "ACCELERATOR", "NAME"),
    "dtype": ("dtype", "--dtype", "DTYPE", "DTYPE"),
    "n_accelerators": ("n_accelerators", "--gpus", "GPUS", "N"),
    "packages": ("packages", "--packages", "PACKAGES", "N"),
    "per": ("per", "--per", "PER", "device|package"),  # make report takes no PER: see _NOT_OFFERED
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
    "convention": ("convention", "--convention", "CONVENTION", "NAME"),  # mfu flops only: see _NOT_OFFERED
}
# inputs an interface does not take: make report counts devices (GPUS=) or packages (PACKAGES=), and
# what the count counts is what the peak is per, so it has no PER of its own; a FLOPs convention is
# chosen with `mfu flops --convention` (or model_flops(convention=)), not by make report
_NOT_OFFERED: dict[str, frozenset[str]] = {"python": frozenset(), "cli": frozenset(),
                                           "make": frozenset({"per", "convention"})}
_COMPOSITE = {  # what to give for a fact several inputs can supply
    "model_flops": (("preset", "seq_len"), ("flops_per_sample",)),
    "model_flops_per_token": (("preset", "seq_len"), ("flops_per_token",)),
    "model_flops_per_step": (("preset", "seq_len"), ("flops_per_step",)),
}


def __getattr__(name: str) -> Any:
    if name == "InputError":  # re-exported from facts, which is imported only when it is asked for
        from ..facts import InputError

        return InputError
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def offers(field: str, interface: str) -> bool:
    """Whether ``interface`` takes ``field`` at all (``make report`` has no ``PER``)."""
    input_name(field, interface)
    return field not in _NOT_OFFERED[interface]


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
    from .. import facts
    from ..facts import InputError

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
    from .. import facts
    from ..facts import InputError

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


def _flops_words(reason: Any, interface: str) -> str:
    unit = reason.missing[0].unit or "step"
    return f"model FLOPs per {unit} unknown (give {flops_request(unit, interface)})"


def _peak_words(reason: Any, interface: str) -> str:
    fields = {m.field for m in reason.missing}
    wants = ([f"accelerator count (give {ask('n_accelerators', interface)})"] if "n_accelerators" in fields
             else []) + ([f"peak (give {ask('accelerator', interface)}, and {ask('dtype', interface)} when not bf16)"]
                         if "peak_flops_per_accelerator" in fields else [])
    return "unknown " + " and ".join(wants)


def _work_words(reason: Any, interface: str) -> str:
    unit = reason.missing[0].unit or "sample"
    return f"{unit}s per step unknown (give {' and '.join(ask(m.field, interface) for m in reason.missing)})"


_PHRASES = {
    "work_unknown": _work_words,
    "flops_unknown": _flops_words,
    "peak_unknown": _peak_words,
    "hfu_unknown": lambda r, i: "hardware FLOPs (with recomputation) unknown: the log gives no recomputation count",
}


def _request_words(request: Any, interface: str) -> str:
    """What an :class:`~mfu_toolkit.run.InputRequest` asks for, said in ``interface``'s terms: each asked
    field as the interface spells it, its examples as typed and its detail; inputs given that do not apply."""
    wants = []
    all_examples, all_detail = getattr(request, "examples", ()), getattr(request, "detail", ())
    for i, field in enumerate(request.asks):
        examples = all_examples[i] if all_examples else ()
        e_g = f" (e.g. {' or '.join(said(field, v, interface) for v in examples)})" if examples else ""
        detail = all_detail[i] if all_detail else ""
        detail = f"{'' if detail[:1] in '.,;:' else ' '}{detail}" if detail else ""
        wants.append(f"{ask(field, interface)}{e_g}{detail}")
    unused = "".join(f"; {input_name(f, interface)}{'' if interface == 'cli' else '='} {why}"
                     for f, why in getattr(request, "unused", ()))
    return f"{request.stem}; give {' or '.join(wants)}{unused}"


def phrase(reason: Any, interface: str) -> str:
    """A :class:`~mfu_toolkit.analysis.reasons.Reason` said in the terms of ``interface``, looked
    up by its code: ``flops_unknown`` for a run counted per sample becomes, for the command line,
    ``"model FLOPs per sample unknown (give --preset NAME --seq-len N or --flops-per-sample F)"``.
    An :class:`~mfu_toolkit.run.InputRequest` (a load note, or a collective's link unknown) asks for its
    inputs the same way: ``--nic NAME``, ``NIC=NAME``, and for Python its own text.
    A reason whose code asks for nothing is its own sentence; anything else is ``str(reason)``."""
    from ..analysis.reasons import Reason
    from ..run import InputRequest

    check_interface(interface)
    if isinstance(reason, InputRequest):
        return str(reason) if interface == "python" else _request_words(reason, interface)
    if not isinstance(reason, Reason):
        return str(reason or "")
    return "; ".join(_PHRASES[r.code](r, interface) if r.code in _PHRASES else str(r) for r in reason.each())


def _device_name_words(exc: hardware.DeviceNameError, interface: str) -> str:
    """A device's name asked for a per-package peak: count devices, or name the package. ``make report``
    has no ``PER``: what ``GPUS=`` or ``PACKAGES=`` counts is what the peak is per."""
    count = said("n_accelerators", "N", interface)
    devices = f"{count} {said('per', 'device', interface)}" if offers("per", interface) else count
    packages = (said("per", "package", interface) if offers("per", interface)
                else said("packages", "N", interface))
    return (f"{exc.stem}: count devices ({devices}), or name the package "
            f"({said('accelerator', exc.package, interface)}) for {packages}")


def _slice_words(exc: hardware.SliceRefusedError, interface: str) -> str:
    """A MIG slice's share, stated where the interface can: a registry CSV (any front end), or for
    ``mfu calc`` the peak itself."""
    calc = ", or give the peak directly (mfu calc --peak-tflops-per-gpu)" if interface == "cli" else ""
    return (f"{exc.reason}. State the slice's share yourself: a row under your own name, with your share of the "
            f"GPU's peak, in a CSV listed in {hardware.ENV_VAR} (a slice gets roughly its fraction of the SMs, not "
            f"exactly){calc}")


def phrase_error(exc: BaseException, interface: str) -> str:
    """An error's message said in the terms of ``interface``: an :class:`InputError` that names its
    field is said as typed there; a device's name given a per-package peak asks for the count or the
    package's name; a MIG slice's share is stated in a registry CSV; an error that carries ``stem`` and
    ``asks`` (a sequence length a FLOPs count needs, a link the table does not fix) asks for them as a
    request does; a ``LoadError`` asking to choose a format says how to. For Python, the error's own text."""
    check_interface(interface)
    if isinstance(exc, hardware.DeviceNameError):
        return str(exc) if interface == "python" else _device_name_words(exc, interface)
    if isinstance(exc, hardware.SliceRefusedError):
        return str(exc) if interface == "python" else _slice_words(exc, interface)
    if getattr(exc, "stem", None) and getattr(exc, "asks", None):  # an error that ends by asking for inputs
        return str(exc) if interface == "python" else _request_words(exc, interface)
    if getattr(exc, "field", None) in _VOCABULARY and getattr(exc, "expected", None):
        from ..facts import InputError

        if isinstance(exc, InputError):
            return f"{said(exc.field, exc.value, interface)}: expected {exc.expected}"
    if getattr(exc, "hint", None) != "choose_format":
        return str(exc)
    bare = exc.bare  # type: ignore[attr-defined]
    return (f"{bare} Give {ask('format', interface)} to choose one, e.g. {said('format', 'table', interface)} "
            f"with {ask('columns', interface)} for a generic CSV/JSONL/Parquet table")
