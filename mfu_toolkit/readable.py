"""Numbers and sources as people read them: one place, so every front end prints them alike.

``pct(0.4017) -> '40.17%'``, ``secs(0.0123) -> '12.300 ms'``, ``si(9.894e14, 'FLOP/s') ->
'989.4 TFLOP/s'``; ``n/a`` for a missing or non-finite value, never ``nan``.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["brief", "first", "num", "pct", "secs", "short_where", "si", "tflops", "value"]


def pct(v: float | None) -> str:
    return "n/a" if v is None or not math.isfinite(v) else f"{v:.2%}"


def secs(v: float | None) -> str:
    if v is None or not math.isfinite(v):
        return "n/a"
    a = abs(v)
    if a == 0:
        return "0 s"
    if a >= 100:
        return f"{v:,.1f} s"
    if a >= 1:
        return f"{v:.3f} s"
    if a >= 1e-3:
        return f"{v * 1e3:.3f} ms"
    return f"{v * 1e6:.3f} µs"


def si(v: float | None, unit: str) -> str:
    """1.234e15 FLOP -> '1.234 PFLOP'; 9.894e14 FLOP/s -> '989.4 TFLOP/s'."""
    if v is None or not math.isfinite(v):
        return "n/a"
    for scale, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            return f"{v / scale:,.4g} {prefix}{unit}"
    return f"{v:,.4g} {unit}"


def brief(text: str, limit: int = 180) -> str:
    """A long source (a preset's citation) cut for the headline; JSON keeps it whole."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def first(text: str | None) -> str:
    """The first clause of a source (its URL), without what follows a semicolon."""
    return (text or "unknown").split(";")[0].strip()


def tflops(v: float | None) -> str:
    """A peak as the registry prints it: ``989.4 TFLOP/s``."""
    return "unknown" if not v else f"{v / 1e12:,.6g} TFLOP/s"


def num(v: Any) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    if isinstance(v, (int, np.integer)):
        return f"{int(v):,}"
    if isinstance(v, (float, np.floating)):
        v = float(v)
        if v.is_integer() and abs(v) < 1e15:
            return f"{int(v):,}"
        if abs(v) >= 1e6:
            return si(v, "").strip()
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}" if abs(v) >= 1e-3 else f"{v:.8f}".rstrip("0")
    return str(v)


def value(v: Any, unit: str) -> str:
    """A scorecard value with its unit: fractions as percentages, seconds with units."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "n/a"
    if unit == "fraction":
        return pct(float(v))
    if unit == "s":
        return secs(float(v))
    if unit == "FLOP/s":
        return si(float(v), "FLOP/s")
    if unit == "ratio":
        return f"{float(v):.3f}"
    if unit == "count":
        return num(v)
    return f"{num(v)} {unit}".strip()


def short_where(where: Any) -> str:
    """``/long/path/train.log:12`` -> ``train.log:12`` (the file's name and line)."""
    text = str(where or "")
    head, sep, tail = text.rpartition(":")
    if sep and tail.isdigit():
        return f"{Path(head).name}:{tail}"
    return Path(text).name if "/" in text else text


