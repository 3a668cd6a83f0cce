"""Helpers the loaders share to turn parsed records into a validated :class:`Run`.

- time units: one table of factors to seconds, and a clear error for an unknown unit;
- meta keyword arguments: callers of every loader may state what the log does not carry
  (``name``, ``accelerator``, ``dtype``, ``n_accelerators``, model FLOPs, ...); they override
  what the loader found, and unknown keywords are an error that lists the accepted ones;
- :func:`finish`: fill the LoadReport, build and validate the Run, warn once if anything was
  skipped.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ..run import LoadError, Run, RunMeta
from ._common import Reader

__all__ = [
    "LoaderArgumentError",
    "TIME_UNITS",
    "META_KWARGS",
    "unit_factor",
    "split_kwargs",
    "apply_overrides",
    "finish",
    "num",
    "wallclock",
]

class LoaderArgumentError(TypeError):
    """A loader was called with a keyword argument it does not know (a caller's mistake)."""


# Factor that turns a value in this unit into seconds. ``epoch_*`` are absolute times.
TIME_UNITS: dict[str, float] = {
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "ns": 1e-9,
    "min": 60.0,
    "h": 3600.0,
    "epoch_s": 1.0,
    "epoch_ms": 1e-3,
}

# RunMeta fields a caller may set through a loader's keyword arguments.
META_KWARGS: frozenset[str] = frozenset(
    f.name
    for f in dataclasses.fields(RunMeta)
    if f.name not in {"report", "source_path", "source_format", "timing", "time_unit", "facts", "claims"}
)


def unit_factor(unit: str, *, path: str | Path | None = None, field: str | None = "time_unit") -> float:
    """Seconds per ``unit``; an unknown unit is a LoadError that lists the known ones."""
    if not isinstance(unit, str) or unit not in TIME_UNITS:
        raise LoadError(
            f"unknown time unit {unit!r}; expected one of {', '.join(TIME_UNITS)}",
            path=path,
            field=field,
        )
    return TIME_UNITS[unit]


def split_kwargs(
    kwargs: Mapping[str, Any], accepted: Iterable[str], *, fmt: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split loader kwargs into (loader options, RunMeta overrides); reject the rest."""
    accepted = set(accepted)
    opts = {k: v for k, v in kwargs.items() if k in accepted}
    meta = {k: v for k, v in kwargs.items() if k in META_KWARGS and k not in accepted}
    unknown = sorted(set(kwargs) - set(opts) - set(meta))
    if unknown:
        raise LoaderArgumentError(
            f"{fmt} loader got unexpected keyword argument(s) {unknown}; it accepts "
            f"{sorted(accepted)} and the RunMeta fields {sorted(META_KWARGS)}"
        )
    return opts, meta


def num(value: Any) -> float:
    """A finite float from a number or numeric string, else NaN (never raises)."""
    if isinstance(value, bool):
        return math.nan
    try:
        out = float(value)
    except (TypeError, ValueError, OverflowError):
        return math.nan
    return out if math.isfinite(out) else math.nan


def wallclock(epoch_s: float) -> str:
    """ISO text of an absolute time (UTC), for ``meta.extra['t0_wallclock']``."""
    try:
        return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):
        return ""


def apply_overrides(meta: RunMeta, overrides: Mapping[str, Any]) -> RunMeta:
    """``meta`` with the caller's RunMeta fields set (``extra`` merged, peak resolved)."""
    if not overrides:
        return meta
    changes = dict(overrides)
    extra = changes.pop("extra", None)
    if extra:
        changes["extra"] = {**meta.extra, **dict(extra)}
    meta = meta.replace(**changes)
    # With an accelerator and a dtype but no peak, resolve the peak from the registry (never a
    # fallback: an unknown name is the registry's error).
    if meta.accelerator and meta.dtype and meta.peak_flops_per_accelerator is None:
        try:
            from .. import hardware  # noqa: F401
        except ImportError:  # the registry is optional for loading
            return meta
        meta = meta.with_accelerator(meta.accelerator, meta.dtype, sparse=meta.peak_sparse)
    return meta


_apply_overrides = apply_overrides  # the name other loader modules import; keep it stable


def finish(
    reader: Reader,
    *,
    fmt: str,
    steps: pd.DataFrame | Mapping[str, Any] | None,
    events: Iterable[Mapping[str, Any]] | pd.DataFrame | None = None,
    tables: Mapping[str, pd.DataFrame] | None = None,
    timing: str = "exact",
    time_unit: str | None = None,
    found: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
    warn: bool = True,
) -> Run:
    """Build the Run: report totals, meta (file facts, then caller overrides), validation."""
    rep = reader.report
    rep.source = str(reader.path)
    rep.format = fmt
    if isinstance(events, pd.DataFrame):
        ev = events
    else:
        ev = pd.DataFrame(list(events or []))
    st = steps if isinstance(steps, pd.DataFrame) else pd.DataFrame(steps or {})
    rep.rows_kept = int(len(st) + len(ev))
    fields = dict(found or {})
    fields.setdefault("name", Path(reader.path).name)
    meta = RunMeta(
        source_path=str(reader.path),
        source_format=fmt,
        time_unit=time_unit,
        timing=timing,
        extra=dict(extra or {}),
        report=rep,
        **fields,
    )
    meta = apply_overrides(meta, overrides or {})
    run = Run.build(st if len(st.columns) else None, ev if len(ev.columns) else None, meta, tables)
    if warn:
        rep.warn_if_skipped(stacklevel=4)
    return run
