"""The answer's requests said in an interface's terms: missing facts, defaults, reasons, advice.

The :class:`~mfu_toolkit.analysis.Answer` says *what* is missing (a field, its unit, what the run
has instead); these functions say *how to give it* (``--gpus N``, ``GPUS=N``, ``n_accelerators=N``)
through :mod:`.vocabulary`, so the same answer reads right in a terminal, a report and a notebook.
"""

from __future__ import annotations

from typing import Any

from .. import hardware
from ..analysis.reasons import Reason
from ..run import InputRequest
from .vocabulary import ask, check_interface, input_name, phrase

__all__ = ["advice_text", "denominator_sources", "missing_text", "point_text", "spoken_summary", "where_text"]


def where_text(row: dict[str, Any], interface: str) -> str:
    """Where a fact used came from; a default says how to give the value instead."""
    give = row.get("give")
    if not give:
        return str(row["where"])
    if row.get("assumed"):
        return f"default ({row['value']} assumed; give {ask(give, interface)})"
    return f"default (give {ask(give, interface)})"


def denominator_sources(facts: tuple[dict[str, Any], ...] | list[dict[str, Any]], interface: str) -> dict[str, str]:
    """Where each part of the denominator came from (the accelerator, the count, the dtype, the
    peak's datasheet), read from the facts used."""
    labels = {"accelerator": "accelerator", "n_accelerators": "count", "dtype": "dtype",
              "peak_flops_per_accelerator": "peak"}
    return {labels[f["name"]]: where_text(f, interface) for f in facts if f["name"] in labels}


def point_text(note: Any, interface: str) -> str:
    """A note of the headline, scorecard or a collective: a :class:`Reason` phrased by its code or an
    :class:`~mfu_toolkit.run.InputRequest` by its fields, else as it is."""
    return phrase(note, interface) if isinstance(note, (Reason, InputRequest)) else str(note or "")


def _flops_text(item: dict[str, Any], interface: str) -> str:
    unit = item["unit"]
    if unit == "step" and item.get("has_flops_per_unit") and not item.get("has_global_batch"):
        how = (f"{ask('global_batch', interface)} (the FLOPs are per sample; the log states no samples "
               f"per step) or {ask('flops_per_step', interface)}")
    elif unit == "step":
        batch = "" if item.get("has_global_batch") else " " + ask("global_batch", interface)
        how = f"{ask('preset', interface)} {ask('seq_len', interface)}{batch} or {ask('flops_per_step', interface)}"
    else:
        how = ask("model_flops_per_token" if unit == "token" else "model_flops", interface)
    return f"model FLOPs per {unit}: give {how}"


def _count_text(item: dict[str, Any], interface: str) -> str:
    n = item.get("n_ranks", 0)
    seen = f"the log holds steps of {item['ranks_text']} but states no world size; " if n > 1 else ""
    name = input_name("n_accelerators", interface)
    said = f"{name} {n}" if interface == "cli" else f"{name}={n}"
    hint = f" ({said} if those are all of the job's ranks)" if n > 1 else ""
    return f"accelerator count: {seen}give {ask('n_accelerators', interface)}{hint} (or {ask('packages', interface)})"


def _peak_text(item: dict[str, Any], interface: str) -> str:
    """Why the run has no peak yet, with the dtypes the registry has for the accelerator it names."""
    accelerator, dtype = item.get("accelerator"), item.get("dtype")
    either = f"give {ask('accelerator', interface)} (and {ask('dtype', interface)} when not bf16)"
    if not accelerator:
        return f"accelerator: {either}"
    try:
        row = hardware.resolve(accelerator)
    except hardware.RegistryError:
        return f"peak: {accelerator!r} is not in the peak registry; {either}"
    has = ", ".join(sorted(row.dense)) or "none"
    if dtype and dtype not in row.dense:
        return f"peak: {row.name} has no {dtype} figure (it has {has}); give {ask('dtype', interface)}"
    return f"peak: the run states no dtype for {row.name} (it has {has}); give {ask('dtype', interface)}"


def missing_text(item: dict[str, Any], interface: str) -> str:
    """One missing fact of :attr:`Answer.missing` as a request: ``accelerator count: give --gpus N``."""
    check_interface(interface)
    if item["field"] == "n_accelerators":
        return _count_text(item, interface)
    if item["field"] == "peak_flops_per_accelerator":
        return _peak_text(item, interface)
    return _flops_text(item, interface)


def advice_text(checkpoint: dict[str, Any], interface: str) -> str:
    """The checkpoint advice; where it needs inputs, how to give them."""
    needs = checkpoint.get("needs") or []
    if not needs:
        return str(checkpoint["advice"])
    return f"{checkpoint['advice']}: give " + " and ".join(ask(f, interface) for f in needs)


def spoken_summary(summary: dict[str, Any], interface: str) -> dict[str, Any]:
    """The MFU summary with its reasons phrased, their codes and fields beside them."""
    reasons = summary.get("reasons")
    if not isinstance(reasons, dict):
        return summary
    codes = {k: v.to_dict() if isinstance(v, Reason) else {"code": None, "missing": [], "codes": []}
             for k, v in reasons.items()}
    return {**summary, "reasons": {k: phrase(v, interface) for k, v in reasons.items()}, "reason_codes": codes}
