"""How fast an accelerator's matmuls actually run: the physical ceiling of an MFU.

Every model FLOP counted by this project is a matmul or an attention product, and none runs faster
than the best matmul the accelerator and its software reach. So a job's MFU cannot exceed
``MAMF / peak``: the Maximum Achievable Matmul FLOPS measured on that accelerator (a brute-force
search over shapes) over the dense peak the MFU divides by. ``achievable_matmul.csv`` holds the
measurements, each with its source; :func:`matmul_ceiling` gives the fraction for an accelerator and
dtype. Where an accelerator has no measurement for the dtype there is no ceiling (None): the
plausibility check then compares with published MFU figures only.

Only the standard library and :mod:`mfu_toolkit.hardware` are imported, so ``mfu calc`` stays fast.
"""

from __future__ import annotations

import math
import os
from collections import namedtuple

from . import hardware

BUILTIN_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "achievable_matmul.csv")
CSV_COLUMNS = ("accelerator", "dtype", "mamf_tflops", "source", "section", "read_on", "note")
_REQUIRED = ("accelerator", "dtype", "mamf_tflops", "source", "section", "read_on")
_SAME_PEAK = {"fp16": "bf16"}  # equal dense peaks on every accelerator measured here


class AchievableDataError(ValueError):
    """A row of an achievable-matmul CSV is malformed; the message names file, line and field."""


# accelerator as the peak registry names it; origin is file:line (a namedtuple: no typing import,
# so mfu calc stays fast)
Measurement = namedtuple("Measurement", "accelerator dtype mamf_tflops source section read_on origin")


class Ceiling(namedtuple("Ceiling", "fraction measurement peak_tflops")):
    """The highest MFU an accelerator's matmuls allow at one dtype (``fraction`` = MAMF over the
    registry's dense peak ``peak_tflops``), and the ``measurement`` it comes from."""

    __slots__ = ()

    def describe(self) -> str:
        m = self.measurement
        return (f"{self.fraction:.1%} = {m.mamf_tflops:,.6g} TFLOP/s achievable matmul / {self.peak_tflops:,.6g} "
                f"TFLOP/s {m.dtype} peak on {m.accelerator} ({m.source}, {m.section}; read {m.read_on})")


def _parse_row(raw: dict[str, str], origin: str) -> tuple:
    def get(column: str) -> str:
        return (raw.get(column) or "").strip()

    for column in _REQUIRED:
        if not get(column):
            raise AchievableDataError(f"{origin}: field {column!r}: missing")
    try:
        value = float(get("mamf_tflops"))
    except ValueError:
        raise AchievableDataError(f"{origin}: field 'mamf_tflops': {get('mamf_tflops')!r} is not a number") from None
    if not (math.isfinite(value) and value > 0):
        raise AchievableDataError(f"{origin}: field 'mamf_tflops': must be a positive number of TFLOP/s")
    try:
        name = hardware.resolve(get("accelerator")).name
        dtype = hardware.canonical_dtype(get("dtype"))
    except hardware.RegistryError as exc:
        raise AchievableDataError(f"{origin}: {exc}") from None
    return Measurement(name, dtype, value, get("source"), get("section"), get("read_on"), origin)


def load_csv(path: str | os.PathLike[str]) -> tuple:
    """Every row of a CSV in the shipped format, validated; blank and ``#`` lines are skipped."""
    return tuple(hardware.read_sourced_csv(path, columns=CSV_COLUMNS, required=_REQUIRED, parse_row=_parse_row,
                                           error=AchievableDataError, what="achievable-matmul CSV"))


_BUILTIN: tuple | None = None


def measurements() -> tuple:
    """The shipped measurements (``achievable_matmul.csv``), read once."""
    global _BUILTIN
    if _BUILTIN is None:
        _BUILTIN = load_csv(BUILTIN_CSV)
    return _BUILTIN


def matmul_ceiling(accelerator: str | None, dtype: str | None) -> Ceiling | None:  # noqa: F821
    """The achievable matmul fraction of ``accelerator``'s dense ``dtype`` peak (bf16 when None), or
    None when the accelerator is unknown to the registry or has no measurement for the dtype."""
    if not accelerator:
        return None
    try:
        row = hardware.resolve(accelerator)
        d = hardware.canonical_dtype(dtype or "bf16")
    except hardware.RegistryError:
        return None
    want = _SAME_PEAK.get(d, d)
    peak = row.dense.get(d)
    for m in measurements():
        if m.accelerator == row.name and m.dtype == want and peak:
            return Ceiling(min(1.0, m.mamf_tflops / peak), m, peak)
    return None
