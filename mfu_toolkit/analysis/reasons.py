"""Why a figure is unknown, as data: a code and the facts it asks for, beside the sentence.

The analyses say *what* is missing (``Missing("model_flops_per_step", unit="step")``); the
front ends say *how to give it* in their own terms (``--flops-per-step F``, ``FLOPS_PER_STEP=F``,
``flops_per_step=F``) by looking the code up, never by reading the sentence back. A
:class:`Reason` is a ``str`` whose text is the library's own sentence, so a reader of
``MFUSummary.reasons`` sees words, and a front end sees ``code`` and ``missing``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: the codes a Reason carries, with what each means
CODES = {
    "flops_unknown": "the model FLOPs per unit of work are unknown",
    "peak_unknown": "the accelerator count or the peak per accelerator is unknown",
    "hfu_unknown": "the hardware FLOPs (with recomputation) are unknown",
    "no_steady_time": "no steady-state step time (no window, no useful steps, or every step flagged)",
    "no_useful_time": "no useful steps or zero wall time",
    "work_unknown": "the samples or tokens per step are unknown (no global batch or sequence length)",
    "several": "more than one of the above",
}


@dataclass(frozen=True)
class Missing:
    """A fact the run lacks: the :class:`~mfu_toolkit.run.RunMeta` field and, for FLOPs, its unit."""

    field: str
    unit: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, **({"unit": self.unit} if self.unit else {})}


class Reason(str):
    """The sentence (``str``) with ``code``, ``missing`` (the facts asked for) and ``parts``.

    ``parts`` holds the single reasons of a joined one (:meth:`join`), each with its own code.
    """

    code: str
    missing: tuple[Missing, ...]
    parts: tuple[Reason, ...]

    def __new__(cls, text: str, *, code: str, missing: tuple[Missing, ...] = ()) -> Reason:
        if code not in CODES:
            raise ValueError(f"Reason code must be one of {', '.join(CODES)}; got {code!r}")
        self = super().__new__(cls, text)
        self.code, self.missing, self.parts = code, tuple(missing), ()
        return self

    @classmethod
    def join(cls, *reasons: Reason | str) -> Reason | str:
        """The non-empty reasons as one, joined by "; " (``""`` when none is given)."""
        for r in reasons:
            if r and not isinstance(r, Reason):
                raise TypeError(f"Reason.join takes Reasons or ''; got {r!r}")
        parts = tuple(p for r in reasons if r for p in r.each())
        if not parts:
            return ""
        if len(parts) == 1:
            return parts[0]
        out = cls("; ".join(parts), code="several", missing=tuple(m for p in parts for m in p.missing))
        out.parts = parts
        return out

    def each(self) -> tuple[Reason, ...]:
        """The single reasons this one is made of (itself when it is one)."""
        return self.parts or (self,)

    def to_dict(self) -> dict[str, Any]:
        """The code, the codes of its parts and the fields asked for (front ends add the phrasing)."""
        return {"code": self.code, "missing": [m.to_dict() for m in self.missing],
                "codes": [r.code for r in self.each()]}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (str(self), self.code, self.missing, self.parts))


def _rebuild(text: str, code: str, missing: tuple[Missing, ...], parts: tuple[Reason, ...]) -> Reason:
    out = Reason(text, code=code, missing=missing)
    out.parts = parts
    return out


def flops_unknown(unit: str) -> Reason:
    """The model FLOPs per ``unit`` ("sample", "token" or "step") are unknown."""
    if unit == "step":
        return Reason("model FLOPs per step unknown (model_flops_per_step not set, nor FLOPs per sample or "
                      "token with global_batch and seq_len)", code="flops_unknown",
                      missing=(Missing("model_flops_per_step", unit="step"),))
    return Reason(f"model FLOPs per {unit} unknown (model_flops_per_{unit} not set)", code="flops_unknown",
                  missing=(Missing(f"model_flops_per_{unit}", unit=unit),))


def peak_unknown(*, count: bool, peak: bool) -> Reason | str:
    """The accelerator count (``count``) and/or the peak per accelerator (``peak``) are unknown."""
    missing = (Missing("n_accelerators"),) * count + (Missing("peak_flops_per_accelerator"),) * peak
    if not missing:
        return ""
    words = ["n_accelerators"] * count + [
        "peak_flops_per_accelerator (no accelerator and dtype resolved in the peak registry)"] * peak
    return Reason("unknown " + " and ".join(words), code="peak_unknown", missing=missing)


def hfu_unknown() -> Reason:
    """No recomputation count: hardware FLOPs, and so HFU, are unknown."""
    return Reason("hardware FLOPs (with recomputation) unknown: hardware_flops_per_step not set",
                  code="hfu_unknown",
                  missing=(Missing("hardware_flops_per_step"),))


def work_unknown(unit: str, *, batch: bool, seq_len: bool) -> Reason:
    """The units per step (``unit``: "sample" or "token") are unknown: no global batch and/or sequence length."""
    missing = (Missing("global_batch", unit=unit),) * batch + (Missing("seq_len", unit=unit),) * seq_len
    words = " and ".join(["global_batch"] * batch + ["seq_len"] * seq_len)
    return Reason(f"{unit}s per step unknown ({words} not set)", code="work_unknown", missing=missing)
