"""Is an MFU plausible? The highest published MFU per dtype and model family, and a check.

An MFU between 75 % and 100 % is not an error (:func:`mfu_toolkit.formulas.mfu` refuses only
values above 100 %), but no published training run comes close to it. ``published_mfu.csv`` holds
the published figures, each with the URL of its primary source, the section or table and the
quoted sentence, and :func:`check_mfu` says when a result exceeds the highest comparable one,
with the likely causes.

The reference figure (:func:`highest_published`) is chosen in this order, and the result says
which step was used:

1. the highest figure for the dtype and the model family;
2. failing that, the highest for the dtype across families;
3. failing that, the highest of all.

``bf16`` and ``fp16`` are one class here: every accelerator in the registry that has both gives
them the same dense peak. With ``n_accelerators`` only figures measured on at least that many
accelerators count (a 72 % on 8 GPUs says nothing about a job on 12,288); when none is that large,
the highest at any scale is used and the basis says so. Only MFU rows are references: an HFU
counts recomputed FLOPs and reads higher.

Rows are validated like the peak registry's: a row without a source URL or read date is refused,
naming file, line and field. Only the standard library is imported and the CSV is read on first
use, so ``mfu calc`` stays fast.
"""

from __future__ import annotations

import math
import os
import re

from .formulas import LIKELY_CAUSES
from .hardware import read_sourced_csv

TYPE_CHECKING = False  # typing is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Any

__all__ = [
    "BUILTIN_CSV",
    "CSV_COLUMNS",
    "DTYPES",
    "Plausibility",
    "PublishedDataError",
    "PublishedMFU",
    "check_mfu",
    "highest_published",
    "load_csv",
    "published",
]

BUILTIN_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "published_mfu.csv")
CSV_COLUMNS: tuple[str, ...] = (
    "model", "family", "params", "dtype", "n_accelerators", "accelerator", "mfu", "metric",
    "counts", "source", "section", "quote", "read_on", "note",
)
_REQUIRED = ("model", "family", "dtype", "mfu", "metric", "source", "section", "quote", "read_on")
DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8", "tf32")
_METRICS = ("MFU", "HFU")
_URL = re.compile(r"https?://[^\s/]+\.[^\s]+")
_ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DTYPE_ALIASES = {
    "bfloat16": "bf16", "float16": "fp16", "half": "fp16", "tfloat32": "tf32", "float8": "fp8",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8_e4m3": "fp8", "fp8_e5m2": "fp8", "mxfp8": "fp8",
}
_SAME_PEAK = {"bf16": ("bf16", "fp16"), "fp16": ("bf16", "fp16")}  # equal dense peaks everywhere


class PublishedDataError(ValueError):
    """A row of a published-MFU CSV is malformed; the message names file, line and field."""


def _rebuild(cls: type, values: dict[str, Any]) -> Any:
    return cls(**values)


class _Frozen:
    """Immutable record with keyword construction, equality, hash and ``replace``: what a frozen
    dataclass gives, without importing ``dataclasses`` (and ``inspect``) when ``mfu calc`` starts."""

    __slots__ = ()

    def __init__(self, **values: Any) -> None:
        if set(values) != set(self.__slots__):
            raise TypeError(f"{type(self).__name__} takes exactly the fields {', '.join(self.__slots__)}; "
                            f"got {', '.join(sorted(values))}")
        for name in self.__slots__:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable")

    def _asdict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed."""
        return type(self)(**{**self._asdict(), **changes})

    def __eq__(self, other: object) -> bool:
        if type(other) is type(self):
            return self._asdict() == other._asdict()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self._asdict().items()))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{k}={v!r}' for k, v in self._asdict().items())})"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self._asdict()))


class PublishedMFU(_Frozen):
    """One published MFU figure with everything needed to cite it.

    ``mfu`` is a fraction of the dense peak of ``dtype`` (an fp8 row: of the fp8 peak);
    ``n_accelerators`` counts chips or GPUs (None where the source does not give it); ``origin`` is
    ``file:line``. ``basis`` is empty for a row as read and, on the figure
    :func:`highest_published` returns, says how it was chosen.
    """

    __slots__ = ("model", "family", "params", "dtype", "n_accelerators", "accelerator", "mfu", "metric",
                 "counts", "source", "section", "quote", "read_on", "note", "origin", "basis")
    model: str
    family: str
    params: str
    dtype: str
    n_accelerators: int | None
    accelerator: str
    mfu: float
    metric: str
    counts: str
    source: str
    section: str
    quote: str
    read_on: str
    note: str
    origin: str
    basis: str

    def describe(self) -> str:
        """One line: the figure, the run, and where it is published."""
        n = f"{self.n_accelerators:,}" if self.n_accelerators is not None else "an unstated number of"
        return (f"{self.mfu * 100:.4g}% {self.metric}, {self.model}, {self.dtype} on {n} {self.accelerator} "
                f"({self.source}, {self.section}; read {self.read_on})")


class Plausibility(_Frozen):
    """The verdict of :func:`check_mfu`.

    ``ok`` is False when ``mfu`` exceeds ``reference.mfu`` (or 100 %); ``basis`` says which
    fallback step chose the reference; ``causes`` lists the likely input mistakes (empty when
    ``ok``); ``message`` is the text to show a user.
    """

    __slots__ = ("ok", "mfu", "dtype", "family", "n_accelerators", "reference", "basis", "causes", "message",
                 "ceiling")
    ok: bool
    mfu: float
    dtype: str | None
    family: str | None
    n_accelerators: int | None
    reference: PublishedMFU | None
    basis: str
    causes: tuple[str, ...]
    message: str
    ceiling: Any  # achievable.Ceiling | None: the accelerator's achievable matmul fraction, where measured


# --- reading and validating ------------------------------------------------------------------


def _is_iso_date(text: str) -> bool:
    if not _ISO_DATE.fullmatch(text):
        return False
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _parse_row(raw: dict[str, str], origin: str) -> PublishedMFU:
    """Validate one row of text fields; every error names ``origin`` (file:line) and the field."""

    def fail(column: str, message: str) -> PublishedDataError:
        return PublishedDataError(f"{origin}: field {column!r}: {message}")

    def get(column: str) -> str:
        return (raw.get(column) or "").strip()

    for column in ("model", "family", "section", "quote"):
        if not get(column):
            raise fail(column, "missing" + (": give the sentence or table cell the figure is read from"
                                            if column == "quote" else ""))
    dtype = get("dtype").lower()
    if dtype not in DTYPES:
        raise fail("dtype", f"{dtype!r} is not one of {', '.join(DTYPES)}")
    try:
        mfu = float(get("mfu"))
    except ValueError:
        raise fail("mfu", f"{get('mfu')!r} is not a number") from None
    if not (math.isfinite(mfu) and 0.0 < mfu <= 1.0):
        raise fail("mfu", f"{get('mfu')!r} must be a fraction in (0, 1], e.g. 0.462 for 46.2 %")
    metric = get("metric").upper()
    if metric not in _METRICS:
        raise fail("metric", f"{get('metric')!r} is not one of {', '.join(_METRICS)}")
    n_text = get("n_accelerators")
    n: int | None = None
    if n_text:
        if not n_text.isdigit() or int(n_text) < 1:
            raise fail("n_accelerators", f"{n_text!r} is not a whole number >= 1 (leave it empty if unstated)")
        n = int(n_text)
    source = get("source")
    if not source:
        raise fail("source", "missing: every figure needs the URL of its primary source")
    if not _URL.fullmatch(source):
        raise fail("source", f"{source!r} is not an http(s) URL")
    read_on = get("read_on")
    if not read_on:
        raise fail("read_on", "missing: give the ISO date (YYYY-MM-DD) the source was read")
    if not _is_iso_date(read_on):
        raise fail("read_on", f"{read_on!r} is not an ISO date (YYYY-MM-DD)")
    return PublishedMFU(
        model=get("model"), family=get("family").lower(), params=get("params"), dtype=dtype,
        n_accelerators=n, accelerator=get("accelerator"), mfu=mfu, metric=metric, counts=get("counts"),
        source=source, section=get("section"), quote=get("quote"), read_on=read_on, note=get("note"),
        origin=origin, basis="",
    )


def load_csv(path: str | os.PathLike[str]) -> tuple[PublishedMFU, ...]:
    """Every row of a CSV in the shipped format, validated; blank and ``#`` lines are skipped."""
    return tuple(read_sourced_csv(path, columns=CSV_COLUMNS, required=_REQUIRED, parse_row=_parse_row,
                                  error=PublishedDataError, what="published-MFU CSV"))


_BUILTIN: tuple[PublishedMFU, ...] | None = None


def published() -> tuple[PublishedMFU, ...]:
    """The shipped figures (``published_mfu.csv``), read once."""
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = load_csv(BUILTIN_CSV)
    return _BUILTIN


# --- choosing the reference and checking -----------------------------------------------------


def _norm_dtype(dtype: object) -> str | None:
    if dtype is None:
        return None
    if not isinstance(dtype, str):
        raise TypeError(f"dtype must be a string such as 'bf16' or None; got {dtype!r}")
    key = dtype.strip().lower().removeprefix("torch.").removeprefix("jnp.")
    return _DTYPE_ALIASES.get(key, key) or None


def _norm_family(family: object) -> str | None:
    if family is None:
        return None
    if not isinstance(family, str):
        raise TypeError(f"family must be a string such as 'dense-transformer' or None; got {family!r}")
    return family.strip().lower() or None


def _check_count(n: object) -> int | None:
    if n is None:
        return None
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"n_accelerators must be a whole number or None; got {n!r}")
    if n < 1:
        raise ValueError(f"n_accelerators must be >= 1; got {n!r}")
    return n


def _label(dtype: str | None, family: str | None) -> str:
    d = "/".join(_SAME_PEAK.get(dtype, (dtype,))) if dtype else "any dtype"
    return f"{d}, {family or 'any family'}"


def _highest(pool: list[PublishedMFU], n: int | None) -> tuple[PublishedMFU, str]:
    """The highest figure of ``pool`` and the scale clause of its basis."""

    def key(r: PublishedMFU) -> tuple[float, int]:
        return (r.mfu, r.n_accelerators or 0)

    if n is None:
        return max(pool, key=key), ""
    at_scale = [r for r in pool if r.n_accelerators is not None and r.n_accelerators >= n]
    if at_scale:
        return max(at_scale, key=key), f", on at least {n:,} accelerators"
    largest = max((r.n_accelerators for r in pool if r.n_accelerators is not None), default=None)
    told = f" (largest: {largest:,})" if largest is not None else ""
    return max(pool, key=key), f", at any scale: none is published on {n:,} or more accelerators{told}"


def highest_published(dtype: str | None = None, family: str | None = None, *,
                      n_accelerators: int | None = None,
                      figures: Iterable[PublishedMFU] | None = None) -> PublishedMFU | None:
    """The highest published MFU comparable to a job, or None when there are no figures at all.

    Falls back from (dtype, family) to (dtype, any family) to (any dtype, any family); with
    ``n_accelerators`` only figures on at least that many accelerators count where there are any.
    The returned figure's ``basis`` says which step and scale were used. ``figures`` replaces the
    shipped table (e.g. ``load_csv(team_file)``).
    """
    d, f, n = _norm_dtype(dtype), _norm_family(family), _check_count(n_accelerators)
    rows = [r for r in (published() if figures is None else figures) if r.metric == "MFU"]
    steps = list(dict.fromkeys([(d, f), (d, None), (None, None)]))  # ordered, without repeats
    missed: list[str] = []
    for step_dtype, step_family in steps:
        pool = [r for r in rows if (step_dtype is None or r.dtype in _SAME_PEAK.get(step_dtype, (step_dtype,)))
                and (step_family is None or r.family == step_family)]
        if not pool:
            missed.append(_label(step_dtype, step_family))
            continue
        best, scale = _highest(pool, n)
        basis = f"highest published MFU for {_label(step_dtype, step_family)}{scale}"
        if missed:
            basis += f"; none is published for {' nor for '.join(missed)}"
        return best.replace(basis=basis)
    return None


def _causes(dtype: str | None, value: float) -> tuple[str, ...]:
    """Likely input mistakes, commonest first: the dtype slip this dtype allows, then the ones
    :class:`~mfu_toolkit.formulas.MFUAbove100Error` names, then a count/peak unit mismatch."""
    lead: list[str] = []
    if dtype in (None, "bf16", "fp16"):
        lead.append(f"an fp8 run measured against the {dtype or 'bf16'} peak: on H100, H200, B200 and MI300X "
                    f"the fp8 dense peak is twice the bf16 one, so against it this run reads {value / 2:.2%}")
    elif dtype == "tf32":
        lead.append("a bf16/fp16 run measured against the tf32 peak: on A100 and H100 the tf32 dense peak is "
                    f"half the bf16 one, so against the bf16 peak this run reads {value / 2:.2%}")
    unit = ("the accelerator count and the peak are in different units: packages counted against a "
            "per-device peak (8 MI250X packages are 16 devices, each with half the package peak) double the MFU")
    return (*lead, *LIKELY_CAUSES, unit)


def check_mfu(mfu: float, *, dtype: str | None = None, family: str | None = None,
              n_accelerators: int | None = None,
              figures: Iterable[PublishedMFU] | None = None, accelerator: str | None = None) -> Plausibility:
    """Compare an MFU (a fraction) with what is possible and what is published.

    With ``accelerator`` measured in ``achievable_matmul.csv``, the limit is physical: ``ok`` is
    False when ``mfu`` exceeds the accelerator's achievable matmul fraction at ``dtype`` (no model
    FLOP runs faster than its best matmul). A figure above the highest published one but within that
    ceiling is a record, not an error: ``ok`` is True and the message says so. Without such a
    measurement ``ok`` is False when ``mfu`` exceeds the highest published figure for its dtype,
    family and scale, and the message lists the likely input mistakes. ``dtype`` is the dtype of
    the peak the MFU was divided by. Values above 100 % are ``formulas.MFUAbove100Error``'s business
    (``formulas.mfu`` raises it); here they come back not ok, with a message that says so.
    """
    if isinstance(mfu, (bool, str)):
        raise TypeError(f"mfu must be a number (a fraction, 0.462 for 46.2 %); got {mfu!r}")
    try:
        value = float(mfu)
    except (TypeError, ValueError):
        raise TypeError(f"mfu must be a number (a fraction, 0.462 for 46.2 %); got {mfu!r}") from None
    if not (math.isfinite(value) and value > 0.0):
        raise ValueError(f"mfu must be a finite fraction > 0; got {mfu!r}")
    d, f, n = _norm_dtype(dtype), _norm_family(family), _check_count(n_accelerators)
    ref = highest_published(d, f, n_accelerators=n, figures=figures)
    basis = ref.basis if ref is not None else "no published figure to compare with"
    tail = ("Values above 100% are not judged here: formulas.mfu() refuses them with MFUAbove100Error.")

    from .achievable import matmul_ceiling

    ceiling = matmul_ceiling(accelerator, d)

    def verdict(ok: bool, message: str, causes: tuple[str, ...] = ()) -> Plausibility:
        return Plausibility(ok=ok, mfu=value, dtype=d, family=f, n_accelerators=n, reference=ref,
                            basis=basis, causes=causes, message=message, ceiling=ceiling)

    def listed(causes: tuple[str, ...]) -> str:
        return "Likely causes:\n" + "\n".join(f"  - {c}" for c in causes)

    if value > 1.0:
        causes = _causes(d, value)
        return verdict(False, f"MFU = {value:.2%} is above 100%: no accelerator exceeds its peak, so an input is "
                              "wrong. That is formulas.MFUAbove100Error's case (formulas.mfu() raises it), not a "
                              f"question of plausibility. {listed(causes)}", causes)
    if ceiling is not None and value > ceiling.fraction:
        causes = _causes(d, value)
        return verdict(False, f"MFU {value:.2%} is above what this accelerator's matmuls achieve: "
                              f"{ceiling.describe()}. No model FLOP runs faster than the best matmul, so an input "
                              f"is likely wrong. {listed(causes)}", causes)
    if ref is None:
        return verdict(True, f"MFU {value:.2%}: {basis}.")
    if ceiling is not None and value > ref.mfu:
        return verdict(True, f"MFU {value:.2%} is above the {basis}: {ref.describe()}; but within the achievable "
                             f"matmul ceiling {ceiling.describe()}: a record, possible on this hardware.")
    if value > ref.mfu:
        causes = _causes(d, value)
        return verdict(False, f"MFU {value:.2%} is above the {basis}: {ref.describe()}. Not an error, but no "
                              f"published training run reaches it; check the inputs before reporting it. "
                              f"{listed(causes)}\n{tail}", causes)
    return verdict(True, f"MFU {value:.2%} is within the {basis}: {ref.describe()}.")
