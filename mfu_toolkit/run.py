"""The Run: one schema for every log source.

Every loader returns a :class:`Run`; every analysis takes one. A Run has three parts
(the README, "Logs in: one Run for every format"):

- ``steps``  one row per training step per rank (``rank = -1`` when the log is job-level only);
- ``events`` job-level intervals (init, eval, checkpoints, failures, restarts, ...);
- ``meta``   what the numbers mean: accelerator and peak (with its source), model FLOPs and how
  they were obtained, the source file, the original time unit, the timing precision and the
  :class:`LoadReport` of what was read and what was skipped.

Auxiliary tables that a format carries beside steps (GPU utilisation samples, per-kernel time,
per-operation traces) live in ``tables``, keyed by name.

Times are seconds since the job's first event. Nothing is dropped silently: loaders count every
record they skip in the LoadReport.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import math
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

__all__ = [
    "STEP_COLUMNS",
    "STEP_OPTIONAL_COLUMNS",
    "EVENT_COLUMNS",
    "EVENT_KINDS",
    "TIMING_KINDS",
    "PEAK_PER",
    "SchemaError",
    "LoadError",
    "LoadWarning",
    "LoadReport",
    "InputRequest",
    "RunMeta",
    "Run",
    "empty_steps",
    "empty_events",
    "make_steps",
    "make_events",
    "validate",
    "save_run",
    "read_run",
]

# Column -> dtype. Required step columns first, then the optional ones a format may fill.
STEP_COLUMNS: dict[str, str] = {
    "attempt": "int64",
    "step": "int64",
    "rank": "int64",
    "start_s": "float64",
    "end_s": "float64",
}
STEP_OPTIONAL_COLUMNS: dict[str, str] = {
    "samples": "float64",
    "tokens": "float64",
    "data_wait_s": "float64",
    "compute_s": "float64",
    "comm_s": "float64",
}
EVENT_COLUMNS: dict[str, str] = {
    "kind": "str",
    "start_s": "float64",
    "end_s": "float64",
    "attempt": "int64",
    "rank": "int64",
    "detail": "str",
}
EVENT_KINDS: tuple[str, ...] = (
    "init",
    "data_load",
    "eval",
    "checkpoint_save",
    "checkpoint_load",
    "failure",
    "restart",
    "queue",
    "other",
)
TIMING_KINDS: tuple[str, ...] = ("exact", "duration_only", "interval_mean")
PEAK_PER: tuple[str, ...] = ("device", "package")  # what RunMeta.n_accelerators counts

_MAX_LINES_KEPT = 5  # first line numbers remembered per skip reason
_MAX_NOTES = 200  # distinct notes kept per report; one more says that others were left out
_MORE_NOTES = f"(more than {_MAX_NOTES} notes: the rest were not kept)"


class SchemaError(ValueError):
    """A Run's tables break the schema; the message names the column and the first bad rows."""


_HINTS = {  # a LoadError's hint in Python's terms
    "choose_format": "Pass format=<name> to choose one, e.g. format='table' with columns={...} for a generic "
                     "CSV/JSONL/Parquet table",
}


class LoadError(ValueError):
    """A log could not be read. The message names the file, the line and the field.

    An error that ends by asking for an input (a format to choose among the close candidates) has
    ``stem`` (the text before the request), ``asks`` (the input fields) and ``examples`` (per field, values
    to suggest): its text asks in Python's terms (``python``), a front end in its own
    (:func:`mfu_toolkit.render.vocabulary.phrase_error`)."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        hint: str | None = None,
        asks: tuple[str, ...] = (),
        examples: tuple[tuple[str, ...], ...] = (),
        python: str | None = None,
    ) -> None:
        if hint is not None and hint not in _HINTS:
            raise ValueError(f"LoadError hint must be one of {', '.join(_HINTS)}; got {hint!r}")
        self.path = None if path is None else str(path)
        self.line = line
        self.field = field
        self.hint = hint  # a code the front ends phrase in their own terms (render's vocabulary)
        where = []
        if path is not None:
            where.append(str(path))
        if line is not None:
            where.append(f"line {line}")
        if field is not None:
            where.append(f"field {field!r}")
        prefix = ", ".join(where)
        self.bare = f"{prefix}: {message}" if prefix else message  # without the hint
        self.stem, self.asks, self.examples = (self.bare, tuple(asks), tuple(examples)) if python else (None, (), ())
        text = f"{self.bare}; {python}" if python else self.bare
        super().__init__(f"{text} {_HINTS[hint]}" if hint else text)


class LoadWarning(UserWarning):
    """Issued once per load when records were skipped; the LoadReport has the details."""



class InputRequest(str):
    """A note that ends by asking for an input: a ``str`` whose text asks in Python's terms (``...;
    pass accelerator= to state it``), with ``stem`` (the text before the request) and ``asks`` (the input
    fields that supply it, any one of them), so a front end asks in its own terms
    (:func:`mfu_toolkit.render.vocabulary.phrase`) without reading the text back.

    What a front end says beyond the bare inputs is data too: ``detail`` (per asked field, words said after
    its request: ``"(intra-node)"``), ``examples`` (per asked field, values said as typed: ``("NDR",
    "400GbE")``) and ``unused`` (inputs given that do not apply here, each with why: ``(("link", "is
    intra-node only"),)``)."""

    stem: str
    asks: tuple[str, ...]
    python: str  # the request in Python's terms, after the stem
    detail: tuple[str, ...]
    examples: tuple[tuple[str, ...], ...]
    unused: tuple[tuple[str, str], ...]

    def __new__(cls, stem: str, asks: tuple[str, ...], python: str, detail: tuple[str, ...] = (),
                examples: tuple[tuple[str, ...], ...] = (), unused: tuple[tuple[str, str], ...] = ()) -> InputRequest:
        asks = tuple(asks)
        for name, value in (("detail", detail), ("examples", examples)):
            if value and len(value) != len(asks):
                raise ValueError(f"{name} must give one entry per asked field ({len(asks)}); got {len(value)}")
        self = super().__new__(cls, f"{stem}; {python}")
        self.stem, self.asks, self.python = stem, asks, python
        self.detail, self.examples = tuple(detail), tuple(tuple(e) for e in examples)
        self.unused = tuple((str(f), str(why)) for f, why in unused)
        return self

    def with_stem(self, stem: str) -> InputRequest:
        """The same request after another stem (its Python request and its data kept)."""
        return InputRequest(stem, self.asks, self.python, self.detail, self.examples, self.unused)

    def __reduce__(self) -> tuple[Any, ...]:
        return (InputRequest, (self.stem, self.asks, self.python, self.detail, self.examples, self.unused))


@dataclass
class LoadReport:
    """What a loader read, kept and skipped (by reason, with the first line numbers).

    A location in ``first_lines`` is a plain line number when the load read one file, and
    ``"<file>:<line>"`` (the file relative to the loaded folder, e.g. ``"version_1/metrics.csv:3"``)
    when it read several.
    """

    source: str = ""
    format: str = ""
    lines_read: int = 0
    rows_kept: int = 0
    skipped: dict[str, int] = field(default_factory=dict)
    first_lines: dict[str, list[int | str]] = field(default_factory=dict)
    examples: dict[str, str] = field(default_factory=dict)
    # per reason, what told its first record apart (a column, a rank, a decoder's message): shown in the summary
    details: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    # the notes that say what the facts' resolution did (conflicts, stated values used): an
    # answer shows them as its fact checks and facts used, not again as load notes
    fact_notes: list[str] = field(default_factory=list)

    def skip(self, reason: str, line: int | None = None, example: str | None = None, file: str | None = None,
             detail: str | None = None, *, count: int = 1) -> None:
        """Count one skipped record under ``reason`` (a short phrase), remembering its line.

        ``file`` names the file of a load that read several; the line is then kept as ``"file:line"``.
        ``detail`` (which column, rank or message) is kept for the reason's first record that has one.
        ``count`` > 1 counts that many records of one kind at once (a table's rows, with no lines of their own).
        """
        self.skipped[reason] = self.skipped.get(reason, 0) + count
        lines = self.first_lines.setdefault(reason, [])
        if line is not None and len(lines) < _MAX_LINES_KEPT:
            lines.append(f"{file}:{int(line)}" if file else int(line))
        if example is not None and reason not in self.examples:
            self.examples[reason] = example[:200]
        if detail and reason not in self.details:
            self.details[reason] = str(detail)[:120]

    def note(self, text: str) -> None:
        """Record a fact about the load that is not a skip (e.g. duplicates collapsed).

        At most ``_MAX_NOTES`` distinct notes are kept (a format that notes once per record
        would otherwise make the report grow, and this check slow, with the input)."""
        if text in self.notes:
            return
        if len(self.notes) < _MAX_NOTES:
            self.notes.append(text)
        elif len(self.notes) == _MAX_NOTES:
            self.notes.append(_MORE_NOTES)

    @property
    def total_skipped(self) -> int:
        return sum(self.skipped.values())

    def summary(self) -> str:
        """One paragraph: read, kept, and each skip reason with its first line numbers."""
        head = (f"{self.source or '<memory>'} ({self.format or '?'}): read {self.lines_read} lines/records, "
                f"kept {self.rows_kept} rows")
        if not self.skipped:
            return head + ", skipped none."
        parts = []
        for reason, n in sorted(self.skipped.items(), key=lambda kv: -kv[1]):
            where = [self.details[reason]] if reason in self.details else []
            if self.first_lines.get(reason):
                where.append(f"first at {self._where(self.first_lines[reason])}")
            parts.append(f"{n} × {reason}" + (f" ({'; '.join(where)})" if where else ""))
        return head + f", skipped {self.total_skipped}: " + "; ".join(parts) + "."

    def warn_if_skipped(self, stacklevel: int = 3) -> None:
        """Warn once with the summary when anything was skipped."""
        if self.skipped:
            warnings.warn(self.summary(), LoadWarning, stacklevel=stacklevel)

    def merge(self, other: LoadReport) -> None:
        """Add another report's counts (e.g. one per rank file) into this one."""
        self.lines_read += other.lines_read
        self.rows_kept += other.rows_kept
        for reason, n in other.skipped.items():
            self.skipped[reason] = self.skipped.get(reason, 0) + n
            mine = self.first_lines.setdefault(reason, [])
            for ln in other.first_lines.get(reason, []):
                if len(mine) < _MAX_LINES_KEPT:
                    mine.append(ln)
            if reason in other.examples and reason not in self.examples:
                self.examples[reason] = other.examples[reason]
            if reason in other.details and reason not in self.details:
                self.details[reason] = other.details[reason]
        for n in other.notes:
            self.note(n)

    def to_frame(self) -> pd.DataFrame:
        """Skip reasons as a tidy table: reason, count, first_lines, example."""
        rows = [
            {
                "reason": r,
                "count": n,
                "first_lines": ", ".join(map(str, self.first_lines.get(r, []))),
                "example": self.examples.get(r, ""),
            }
            for r, n in sorted(self.skipped.items(), key=lambda kv: -kv[1])
        ]
        return pd.DataFrame(rows, columns=["reason", "count", "first_lines", "example"])

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> LoadReport:
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    @staticmethod
    def _where(locations: list[int | str]) -> str:
        """``line 3, 4`` for line numbers; ``version_0/metrics.csv:3, version_1/metrics.csv:4`` for file:line."""
        if all(not isinstance(v, str) for v in locations):
            return "line " + ", ".join(map(str, locations))
        return ", ".join(v if isinstance(v, str) else f"line {v}" for v in locations)


@dataclass(frozen=True)
class RunMeta:
    """What the numbers in a Run mean. Unknown values stay ``None``; nothing is guessed."""

    name: str = ""
    accelerator: str | None = None
    dtype: str | None = None
    n_accelerators: int | None = None
    peak_flops_per_accelerator: float | None = None  # FLOP/s, dense unless peak_sparse
    peak_sparse: bool = False
    peak_source: str | None = None
    model_flops_per_sample: float | None = None  # training FLOPs (fwd + bwd), no recomputation
    model_flops_per_token: float | None = None
    model_flops_per_step: float | None = None
    hardware_flops_per_step: float | None = None  # with recomputation, for HFU
    model_flops_source: str | None = None
    global_batch: float | None = None  # samples per step
    seq_len: int | None = None
    source_path: str | None = None
    source_format: str | None = None
    time_unit: str | None = None  # the log's original unit, e.g. "ms", "us", "epoch_ms"
    timing: str = "exact"  # one of TIMING_KINDS
    extra: dict[str, Any] = field(default_factory=dict)  # format-specific facts, JSON-able
    report: LoadReport = field(default_factory=LoadReport)
    # What the log states about the job and what the caller gave, each a dict with ``name``,
    # ``value``, ``source`` ("stated" or "given"), ``where`` (file:line) and ``text`` as printed.
    facts: list[dict[str, Any]] = field(default_factory=list)
    # Throughput the framework printed about itself: ``metric``, ``value``, ``unit``, ``counts``
    # (what it counts), ``where``, ``n`` (values seen) and ``statistic`` (how they were reduced).
    claims: list[dict[str, Any]] = field(default_factory=list)
    # What ``n_accelerators`` counts and ``peak_flops_per_accelerator`` is per: "device" (framework
    # devices, as a world size or JAX's device count counts them: an MI250X is 2 GCDs, a TPU7x chip
    # 2 TensorCores, a Trainium2 at LNC=2 4 logical NeuronCores) or "package" (the chip or card a
    # datasheet prints the peak for). The two are the same for single-device packages (an H100).
    peak_per: str = "device"

    def __post_init__(self) -> None:
        if self.timing not in TIMING_KINDS:
            raise SchemaError(
                f"RunMeta.timing must be one of {', '.join(TIMING_KINDS)}; got {self.timing!r}"
            )
        if self.peak_per not in PEAK_PER:
            raise SchemaError(f"RunMeta.peak_per must be one of {', '.join(map(repr, PEAK_PER))}; "
                              f"got {self.peak_per!r}")
        if self.n_accelerators is not None and (
            not isinstance(self.n_accelerators, (int, np.integer)) or self.n_accelerators <= 0
        ):
            raise SchemaError(
                f"RunMeta.n_accelerators must be a positive integer or None; got {self.n_accelerators!r}"
            )
        for name in (
            "peak_flops_per_accelerator",
            "model_flops_per_sample",
            "model_flops_per_token",
            "model_flops_per_step",
            "hardware_flops_per_step",
            "global_batch",
        ):
            v = getattr(self, name)
            if v is not None and not (isinstance(v, (int, float, np.number)) and math.isfinite(v) and v > 0):
                raise SchemaError(f"RunMeta.{name} must be a finite number > 0 or None; got {v!r}")

    def replace(self, **changes: Any) -> RunMeta:
        return dataclasses.replace(self, **changes)

    def fact(self, name: str, *, source: str | None = None) -> dict[str, Any] | None:
        """The first fact called ``name`` (``source="stated"``/``"given"`` to choose), else None."""
        for f in self.facts:
            if f.get("name") == name and (source is None or f.get("source") == source):
                return f
        return None

    def claim(self, metric: str) -> dict[str, Any] | None:
        """The first claim of ``metric`` the log makes (e.g. ``"tflops_per_accelerator"``), else None."""
        for c in self.claims:
            if c.get("metric") == metric:
                return c
        return None

    def with_accelerator(
        self, name: str, dtype: str = "bf16", *, n: int | None = None, sparse: bool = False,
        per: str | None = None,
    ) -> RunMeta:
        """Resolve the peak from the registry (never a fallback) and record its source.

        ``per`` says what N (``n``, else ``n_accelerators``) counts: ``"device"`` (framework
        devices, e.g. a world size: the peak is the datasheet's per-package figure divided by the
        package's devices) or ``"package"`` (the datasheet's figure). ``None`` keeps the run's
        ``peak_per`` (``"device"`` unless set otherwise).
        """
        from . import hardware

        per = self.peak_per if per is None else per
        peak = hardware.get_peak(name, dtype, sparse=sparse, per=per)
        return self.replace(
            accelerator=peak.accelerator,
            dtype=dtype,
            n_accelerators=self.n_accelerators if n is None else n,
            peak_flops_per_accelerator=peak.flops,
            peak_sparse=sparse,
            peak_source=peak.source,
            peak_per=peak.per,
        )

    def with_dtype(self, dtype: str) -> RunMeta:
        """The same accelerator's peak for another dtype, looked up again in the registry (per
        device or per package as before).

        The dtype picks the peak, so changing one without the other would mislabel the MFU's
        denominator: with a peak but no accelerator name to look the dtype up for, this raises."""
        if self.accelerator:
            return self.with_accelerator(self.accelerator, dtype, sparse=bool(self.peak_sparse),
                                         per=self.peak_per)
        if self.peak_flops_per_accelerator is not None:
            raise ValueError(
                f"dtype {dtype!r}: the run's peak ({self.peak_flops_per_accelerator:.4g} FLOP/s, "
                f"{self.peak_source or 'source unknown'}) names no accelerator to look the dtype up for; "
                "give the accelerator too")
        return self.replace(dtype=dtype)

    def _peak_per(self) -> str:
        """For a meta saved before ``peak_per`` existed: 'package' when the recorded peak is the
        registry's per-package figure of a multi-device package, else 'device' (the per-device
        share, a single-device package, or a peak the registry cannot check)."""
        from . import hardware

        if not (self.accelerator and self.dtype and self.peak_flops_per_accelerator):
            return "device"
        try:
            package = hardware.get_peak(self.accelerator, self.dtype, sparse=bool(self.peak_sparse))
        except hardware.RegistryError:
            return "device"
        same = math.isclose(package.flops, self.peak_flops_per_accelerator, rel_tol=1e-9)
        return "package" if package.devices_per_package > 1 and same else "device"

    @property
    def devices_per_package(self) -> int | None:
        """Framework devices per package of the run's accelerator (registry), None if unknown."""
        if not self.accelerator:
            return None
        from . import hardware

        try:
            return hardware.resolve(self.accelerator).devices_per_package
        except hardware.RegistryError:
            return None

    def peak_per_text(self) -> str:
        """What the peak is per, in words, with both figures for a multi-device package:
        ``"per device: 383 TFLOP/s per MI250X package = 191.5 per device × 2"``; for a
        single-device package ``"per device (1 device per package)"``."""
        dpp = self.devices_per_package
        if dpp is None or not self.peak_flops_per_accelerator:
            return f"per {self.peak_per}"
        if dpp == 1:
            return f"per {self.peak_per} (1 device per package)"
        p = float(self.peak_flops_per_accelerator) / 1e12
        package, device = (p * dpp, p) if self.peak_per == "device" else (p, p / dpp)
        unit = "TOPS" if self.dtype == "int8" else "TFLOP/s"
        return (f"per {self.peak_per}: {package:,.6g} {unit} per {self.accelerator} package "
                f"= {device:,.6g} per device × {dpp}")

    def to_dict(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        d["report"] = self.report.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunMeta:
        known = {f.name for f in dataclasses.fields(cls)}
        kw = {k: v for k, v in d.items() if k in known}
        if "report" in kw and not isinstance(kw["report"], LoadReport):
            kw["report"] = LoadReport.from_dict(kw["report"])
        meta = cls(**kw)
        if "peak_per" not in kw:  # saved before peak_per existed: say what the stored peak is
            meta = meta.replace(peak_per=meta._peak_per())
        return meta


# With copy-on-write (always on from pandas 3) frames may share column data safely: a change to
# one never shows in another. Without it, tables are copied as before.
_COW = int(pd.__version__.split(".")[0]) >= 3 or bool(getattr(pd.options.mode, "copy_on_write", False) is True)


def _coerce(df: pd.DataFrame, spec: Mapping[str, str], table: str) -> pd.DataFrame:
    """Return a copy with schema columns in order and dtypes enforced (extra columns kept).

    Columns that already have their dtype are not converted (with copy-on-write, not copied).
    """
    repeated = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    if repeated:
        raise SchemaError(f"{table} has repeated column name(s) {repeated}; each column must be named once")
    df = df.reset_index(drop=True)
    out = {}
    for col, dtype in spec.items():
        s = df[col]
        if _COW and dtype in ("int64", "float64") and s.dtype == np.dtype(dtype):
            out[col] = s  # nothing to check: an int64 column has no missing values
            continue
        if dtype == "str":
            if s.isna().any():
                bad = np.flatnonzero(s.isna().to_numpy())[:5].tolist()
                raise SchemaError(f"{table}.{col} has missing values at rows {bad}")
            out[col] = s.astype(str)
        elif dtype == "int64":
            num = pd.to_numeric(s, errors="coerce")
            bad_mask = num.isna() | (num != np.floor(num.fillna(0)))
            if bad_mask.any():
                rows = np.flatnonzero(bad_mask.to_numpy())[:5].tolist()
                raise SchemaError(
                    f"{table}.{col} must hold integers; rows {rows} hold {s.iloc[rows].tolist()}"
                )
            out[col] = num.astype("int64")
        else:
            num = pd.to_numeric(s, errors="coerce")
            bad_mask = num.isna() & s.notna()
            if bad_mask.any():
                rows = np.flatnonzero(bad_mask.to_numpy())[:5].tolist()
                raise SchemaError(
                    f"{table}.{col} must be numeric; rows {rows} hold {s.iloc[rows].tolist()}"
                )
            out[col] = num.astype("float64")
    # One frame built from every column at once: inserting the extra columns one by one
    # costs time quadratic in the number of columns (4,000 columns took 18 s).
    cols = {**out, **{c: df[c] for c in df.columns if c not in out}}
    return pd.DataFrame(cols, index=df.index, copy=not _COW)


def empty_steps() -> pd.DataFrame:
    return pd.DataFrame({c: pd.Series(dtype=t) for c, t in STEP_COLUMNS.items()})


def empty_events() -> pd.DataFrame:
    return pd.DataFrame(
        {c: pd.Series(dtype=(str if t == "str" else t)) for c, t in EVENT_COLUMNS.items()}
    )


def make_steps(data: pd.DataFrame | Mapping[str, Any] | None = None) -> pd.DataFrame:
    """Build a steps table from columns; missing ``attempt``/``rank`` default to 0/-1."""
    if data is None:
        return empty_steps()
    df = pd.DataFrame(data) if _COW else pd.DataFrame(data).copy()
    if "attempt" not in df:
        df["attempt"] = 0
    if "rank" not in df:
        df["rank"] = -1
    missing = [c for c in STEP_COLUMNS if c not in df]
    if missing:
        raise SchemaError(
            f"steps is missing required column(s) {missing}; required: {list(STEP_COLUMNS)}"
        )
    df = _coerce(df, {**STEP_COLUMNS, **{c: t for c, t in STEP_OPTIONAL_COLUMNS.items() if c in df}}, "steps")
    return df


def make_events(data: pd.DataFrame | Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """Build an events table; missing ``attempt``/``rank``/``detail`` default to 0/-1/''."""
    if data is None:
        return empty_events()
    df = pd.DataFrame(list(data) if not isinstance(data, (pd.DataFrame, Mapping)) else data).copy()
    if df.empty and not len(df.columns):
        return empty_events()
    for col, default in (("attempt", 0), ("rank", -1), ("detail", "")):
        df[col] = df[col].fillna(default) if col in df else default
    missing = [c for c in EVENT_COLUMNS if c not in df]
    if missing:
        raise SchemaError(
            f"events is missing required column(s) {missing}; required: {list(EVENT_COLUMNS)}"
        )
    df["detail"] = df["detail"].fillna("")
    return _coerce(df, EVENT_COLUMNS, "events")


def _first_rows(mask: pd.Series | np.ndarray, n: int = 5) -> list[int]:
    return [int(i) for i in np.flatnonzero(np.asarray(mask))[:n]]


def validate(steps: pd.DataFrame, events: pd.DataFrame) -> None:
    """Check the schema and its invariants; raise :class:`SchemaError` naming column and rows.

    Invariants: required columns present with their dtypes, finite times, ``end_s >= start_s``,
    non-negative optional durations, ``attempt >= 0``, ``rank >= -1``, known event kinds,
    attempts numbered without gaps from 0, and no (attempt, step, rank) row twice.
    """
    for table, df, spec in (("steps", steps, STEP_COLUMNS), ("events", events, EVENT_COLUMNS)):
        missing = [c for c in spec if c not in df.columns]
        if missing:
            raise SchemaError(f"{table} is missing column(s) {missing}; required: {list(spec)}")
        for col, dtype in spec.items():
            s = df[col]
            if dtype == "int64" and not pd.api.types.is_integer_dtype(s):
                raise SchemaError(f"{table}.{col} must have dtype int64; got {s.dtype}")
            if dtype == "float64" and not pd.api.types.is_float_dtype(s):
                raise SchemaError(f"{table}.{col} must have dtype float64; got {s.dtype}")
            if dtype == "str" and not (pd.api.types.is_string_dtype(s) or s.dtype == object):
                raise SchemaError(f"{table}.{col} must hold strings; got {s.dtype}")
        for col in ("start_s", "end_s"):
            bad = ~np.isfinite(df[col].to_numpy(dtype=float))
            if bad.any():
                raise SchemaError(f"{table}.{col} must be finite; rows {_first_rows(bad)} are not")
        back = df["end_s"].to_numpy() < df["start_s"].to_numpy()
        if back.any():
            rows = _first_rows(back)
            raise SchemaError(
                f"{table}: end_s must be >= start_s; rows {rows} have start_s="
                f"{df['start_s'].iloc[rows].tolist()} end_s={df['end_s'].iloc[rows].tolist()}"
            )
        neg = df["attempt"].to_numpy() < 0
        if neg.any():
            raise SchemaError(f"{table}.attempt must be >= 0; rows {_first_rows(neg)} are negative")
        lowrank = df["rank"].to_numpy() < -1
        if lowrank.any():
            raise SchemaError(f"{table}.rank must be >= -1 (-1 = job-level); rows {_first_rows(lowrank)}")
    for col in STEP_OPTIONAL_COLUMNS:
        if col in steps.columns:
            v = steps[col].to_numpy(dtype=float)
            bad = v < 0
            if bad.any():
                raise SchemaError(f"steps.{col} must be >= 0 where given; rows {_first_rows(bad)} are negative")
    unknown = ~events["kind"].isin(EVENT_KINDS).to_numpy()
    if unknown.any():
        rows = _first_rows(unknown)
        raise SchemaError(
            f"events.kind must be one of {', '.join(EVENT_KINDS)}; rows {rows} hold "
            f"{events['kind'].iloc[rows].tolist()}"
        )
    attempts = sorted(int(a) for a in set(steps["attempt"].unique()) | set(events["attempt"].unique()))
    if attempts and attempts[0] == 0 and attempts[-1] != len(attempts) - 1:
        # An attempt may have died before logging anything; gaps are legal only if they
        # show up as events. Steps alone never skip an attempt number.
        raise SchemaError(f"attempt numbers must run 0, 1, 2, ... without gaps; missing {missing_numbers(attempts)}")
    if attempts and attempts[0] != 0:
        raise SchemaError(f"attempt numbers must start at 0; the first is {attempts[0]}")
    if _surely_unique(steps):
        return
    dup = steps.duplicated(["attempt", "step", "rank"], keep="first").to_numpy()
    if dup.any():
        rows = _first_rows(dup)
        raise SchemaError(
            f"steps: (attempt, step, rank) must be unique; rows {rows} repeat "
            f"{steps.loc[steps.index[rows], ['attempt', 'step', 'rank']].to_dict('records')}"
        )


def missing_numbers(numbers: list[int], limit: int = 10) -> str:
    """The numbers missing between sorted distinct ``numbers``: the first ``limit`` and a count.

    Linear in ``len(numbers)``, never in the size of a gap (an attempt number of 2**62 read from
    a damaged file must not make a list of every number below it)."""
    shown: list[int] = []
    total = 0
    for a, b in zip(numbers[:-1], numbers[1:], strict=True):
        total += b - a - 1
        shown += list(range(a + 1, b)[: max(0, limit - len(shown))])
    return str(shown) if total <= limit else f"{shown} and {total - len(shown):,} more"


def _surely_unique(steps: pd.DataFrame) -> bool:
    """True when (attempt, step, rank) is unique by a linear-time argument; False: not known.

    For large tables whose keys pack densely into one integer, the distinct keys are counted
    (one flag per possible key); else the packed keys may already rise row by row; else, with fewer than
    65,536 (attempt, rank) groups, a stable radix sort by group shows each group's steps rising
    in row order. Anything else (and any repeat) is left to the hash-based check, which names
    the repeated rows.
    """
    n = len(steps)
    if n < 2:
        return True
    if n < 100_000:
        return False  # small: the hash-based check is quick
    a = steps["attempt"].to_numpy()
    s = steps["step"].to_numpy()
    r = steps["rank"].to_numpy()
    amin, amax, rmin, rmax = int(a.min()), int(a.max()), int(r.min()), int(r.max())
    smin, smax = int(s.min()), int(s.max())
    span_a, span_s, span_r = amax - amin + 1, smax - smin + 1, rmax - rmin + 1
    span = span_a * span_s * span_r
    if span < 2**62:
        key = s - smin
        key *= span_r
        key += r
        key -= rmin
        if span_a > 1:
            key += (a - amin) * (span_s * span_r)
        if span <= 4 * n:
            seen = np.zeros(span, dtype=bool)  # one byte per possible key
            seen[key] = True
            return int(np.count_nonzero(seen)) == n
        if bool((key[1:] > key[:-1]).all()):
            return True
        del key
    if span_a * span_r > 65_536:
        return False
    group = ((a - amin) * span_r + (r - rmin)).astype(np.uint16)
    order = np.argsort(group, kind="stable")  # radix sort: linear for 16-bit keys
    g, st = group[order], s[order]
    del order, group
    return bool(((g[1:] != g[:-1]) | (st[1:] > st[:-1])).all())


def _lex_sorted(cols: list[np.ndarray]) -> bool:
    """Whether rows are in non-decreasing lexicographic order of ``cols`` (no NaN)."""
    if len(cols[0]) < 2:
        return True
    ok = np.zeros(len(cols[0]) - 1, dtype=bool)  # rows already known to be in order
    tied = np.ones(len(cols[0]) - 1, dtype=bool)  # rows equal in every column so far
    for c in cols:
        a, b = c[:-1], c[1:]
        ok |= tied & (b > a)
        tied &= b == a
        if not (ok | tied).all():
            return False
    return True


def run_order(start: np.ndarray, step: np.ndarray, rank: np.ndarray, max_ties: int = 10_000) -> np.ndarray | None:
    """The stable order by (start, step, rank) of one attempt's rows, or None for many ties.

    An argsort of the start times, then each run of equal start times re-sorted by (step, rank):
    the permutation a stable lexicographic sort gives, at the cost of one float argsort.
    """
    order = np.argsort(start, kind="stable")
    t = start[order]
    tie = t[1:] == t[:-1]
    del t
    if not tie.any():
        return order
    edge = np.diff(np.concatenate(([False], tie, [False])).astype(np.int8))
    begins, ends = np.flatnonzero(edge == 1), np.flatnonzero(edge == -1)
    if len(begins) > max_ties:
        return None
    for b, e in zip(begins.tolist(), ends.tolist(), strict=True):
        seg = order[b : e + 1]
        order[b : e + 1] = seg[np.lexsort((rank[seg], step[seg]))]
    return order


def _sorted_steps(s: pd.DataFrame) -> pd.DataFrame:
    """Steps in the Run's order (attempt, start_s, step, rank), stable; no work when already so."""
    keys = ["attempt", "start_s", "step", "rank"]
    if len(s) > 1 and np.isfinite(s["start_s"].to_numpy()).all():
        cols = [s[k].to_numpy() for k in keys]
        if _lex_sorted(cols):
            return s.reset_index(drop=True)
        if len(s) >= 100_000 and cols[0].min() == cols[0].max():
            order = run_order(cols[1], cols[2], cols[3])
            if order is not None:
                return s.take(order).reset_index(drop=True)
    return s.sort_values(keys, kind="stable").reset_index(drop=True)


@dataclass(frozen=True, eq=False)
class Run:
    """A training run in the common schema: ``steps``, ``events``, ``meta`` (+ aux ``tables``).

    A Run read out of core from a large Parquet dataset has no step rows in memory: ``steps`` is
    empty and ``reductions`` (a :class:`mfu_toolkit.engine.Reductions`) holds the per-step
    reductions the analyses consume, with the engine that computes per-rank statistics on demand.
    """

    steps: pd.DataFrame = field(default_factory=empty_steps)
    events: pd.DataFrame = field(default_factory=empty_events)
    meta: RunMeta = field(default_factory=RunMeta)
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    reductions: Any = None

    @classmethod
    def build(
        cls,
        steps: pd.DataFrame | Mapping[str, Any] | None = None,
        events: pd.DataFrame | Mapping[str, Any] | Iterable[Mapping[str, Any]] | None = None,
        meta: RunMeta | None = None,
        tables: Mapping[str, pd.DataFrame] | None = None,
        *,
        sort: bool = True,
        reductions: Any = None,
    ) -> Run:
        """Coerce, sort and validate tables into a Run (the constructor loaders should use).

        With ``reductions`` (rows reduced out of core), ``steps`` must be empty."""
        s = make_steps(steps)
        e = make_events(events)
        if reductions is not None and len(s):
            raise SchemaError("a Run holds either step rows or reductions of them, not both")
        validate(s, e)  # before sorting, so the rows an error names are the caller's rows
        if sort:
            s = _sorted_steps(s)
            e = e.sort_values(["start_s", "end_s"], kind="stable").reset_index(drop=True)
        return cls(s, e, meta or RunMeta(), dict(tables or {}), reductions)

    def validate(self) -> Run:
        validate(self.steps, self.events)
        return self

    def replace(self, **changes: Any) -> Run:
        return dataclasses.replace(self, **changes)

    def with_meta(self, **changes: Any) -> Run:
        return self.replace(meta=self.meta.replace(**changes))

    # --- facts every analysis needs -------------------------------------------------------
    @property
    def step_extent(self) -> pd.DataFrame:
        """``attempt, start_s, end_s`` of the steps: the rows, or per job-level step when reduced.

        Either gives the same first start and last end per attempt."""
        if self.reductions is not None:
            return self.reductions.extent()
        return self.steps[["attempt", "start_s", "end_s"]]

    @property
    def n_step_rows(self) -> int:
        """Step rows of the run, in memory or in the dataset its reductions were computed from."""
        return int(self.reductions.n_rows) if self.reductions is not None else len(self.steps)

    @property
    def n_attempts(self) -> int:
        a = pd.concat([self.step_extent["attempt"], self.events["attempt"]])
        return int(a.max()) + 1 if len(a) else 0

    @property
    def ranks(self) -> list[int]:
        if self.reductions is not None:
            return self.reductions.ranks
        return sorted(int(r) for r in self.steps["rank"].unique())

    @property
    def t0(self) -> float:
        """The job's first event time (seconds)."""
        starts = [df["start_s"].min() for df in (self.step_extent, self.events) if len(df)]
        return float(min(starts)) if starts else 0.0

    @property
    def t1(self) -> float:
        ends = [df["end_s"].max() for df in (self.step_extent, self.events) if len(df)]
        return float(max(ends)) if ends else 0.0

    @property
    def wall_seconds(self) -> float:
        """Wall time W from the first event to the last (steps and events together)."""
        return self.t1 - self.t0

    # --- equality and persistence ---------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Run):
            return NotImplemented
        if self.meta != other.meta or set(self.tables) != set(other.tables):
            return False
        if self.reductions is not other.reductions:
            return False
        pairs = [(self.steps, other.steps), (self.events, other.events)]
        pairs += [(self.tables[k], other.tables[k]) for k in self.tables]
        return all(_frames_equal(a, b) for a, b in pairs)

    __hash__ = None  # type: ignore[assignment]

    def to_parquet(self, path: str | Path) -> Path:
        return save_run(self, path)

    @classmethod
    def from_parquet(cls, path: str | Path) -> Run:
        return read_run(path)

    def __repr__(self) -> str:
        m = self.meta
        return (
            f"Run(name={m.name!r}, steps={self.n_step_rows} rows, ranks={len(self.ranks)}, "
            f"attempts={self.n_attempts}, events={len(self.events)}, wall={self.wall_seconds:.3f}s, "
            f"timing={m.timing!r}, format={m.source_format!r})"
        )


def _frames_equal(a: pd.DataFrame, b: pd.DataFrame) -> bool:
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False
    if [str(t) for t in a.dtypes] != [str(t) for t in b.dtypes]:
        return False
    return bool(a.reset_index(drop=True).equals(b.reset_index(drop=True)))


# --- Parquet persistence ------------------------------------------------------------------
# The steps table is the Parquet file's body (it is the big one); events, auxiliary tables,
# meta and the load report travel in the file's key-value metadata (Arrow IPC, base64 / JSON).

_META_KEY = b"mfu_toolkit.meta"
_EVENTS_KEY = b"mfu_toolkit.events"
_TABLES_KEY = b"mfu_toolkit.tables"
_FORMAT_KEY = b"mfu_toolkit.format"
_FORMAT_VERSION = b"1"


def _unstorable(df: pd.DataFrame) -> str:
    """Which column of ``df`` Arrow cannot store, and why ('' when each column alone can be)."""
    import pyarrow as pa

    for col in df.columns:
        s = df[col]
        if s.dtype == object:
            for i, v in enumerate(s.tolist()):
                if isinstance(v, int) and not isinstance(v, bool) and not -(2**63) <= v < 2**64:
                    return (f"column {col!r} holds an integer beyond 64 bits at row {i} ({v}); "
                            "Parquet cannot store it: convert the column to float or str before saving")
        try:
            pa.Array.from_pandas(s)
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            return f"column {col!r} cannot be stored ({type(exc).__name__}: {exc})"
    return ""


def _to_arrow(df: pd.DataFrame, what: str) -> Any:
    """``df`` as an Arrow table; a column Parquet cannot hold is a SchemaError naming it."""
    import pyarrow as pa

    try:
        return pa.Table.from_pandas(df, preserve_index=False)
    except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
        why = _unstorable(df) or f"{type(exc).__name__}: {exc}"
        raise SchemaError(f"cannot save the Run's {what}: {why}") from None


def _table_to_b64(df: pd.DataFrame, what: str) -> str:
    import pyarrow as pa

    table = _to_arrow(df, what)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return base64.b64encode(sink.getvalue()).decode("ascii")


def _json_default(o: Any) -> Any:
    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    raise TypeError(f"meta value {o!r} of type {type(o).__name__} is not JSON-serialisable")


def save_run(run: Run, path: str | Path) -> Path:
    """Write a Run to one Parquet file, losslessly (``read_run`` gives an equal Run).

    A value Parquet cannot hold (an integer beyond 64 bits in an object column, a meta value
    that is not JSON) is a :class:`SchemaError` naming the table and column; nothing is written.
    """
    import pyarrow.parquet as pq

    if run.reductions is not None:
        raise SchemaError(
            f"this Run was reduced out of core from {run.reductions.source} ({run.reductions.n_rows:,} rows "
            "not in memory); save_run writes rows: load the dataset with engine='pandas' to save it whole")
    path = Path(path)
    table = _to_arrow(run.steps, "steps")
    md = dict(table.schema.metadata or {})
    md[_FORMAT_KEY] = _FORMAT_VERSION
    try:
        md[_META_KEY] = json.dumps(run.meta.to_dict(), default=_json_default).encode()
    except (TypeError, ValueError) as exc:
        raise SchemaError(f"cannot save the Run's meta: {exc}") from None
    md[_EVENTS_KEY] = _table_to_b64(run.events, "events").encode()
    md[_TABLES_KEY] = json.dumps({k: _table_to_b64(v, f"table {k!r}") for k, v in run.tables.items()}).encode()
    pq.write_table(table.replace_schema_metadata(md), path)
    return path


# --- reading a saved Run: everything stored is checked before it is used --------------------


def _conforms(value: Any, hint: Any) -> bool:
    """Whether a JSON value fits a field's type hint (``str | None``, ``dict[str, int]``, ...)."""
    import types
    import typing

    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if hint is Any:
        return True
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, a) for a in args)
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint in (int, float):  # an integer field saved from a float (2048.0) still reads
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is dict:
        kt, vt = args or (Any, Any)
        return isinstance(value, dict) and all(_conforms(k, kt) and _conforms(v, vt) for k, v in value.items())
    if origin is list:
        (et,) = args or (Any,)
        return isinstance(value, list) and all(_conforms(v, et) for v in value)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return isinstance(value, dict) and _misfit(value, hint) is None
    return True


def _misfit(d: Mapping[str, Any], cls: type) -> str | None:
    """The first field of ``d`` whose value does not fit dataclass ``cls`` (unknown keys ignored)."""
    import typing

    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        if f.name in d and not _conforms(d[f.name], hints[f.name]):
            sub = (_misfit(d[f.name], hints[f.name])
                   if isinstance(d[f.name], dict) and dataclasses.is_dataclass(hints[f.name]) else None)
            return f"{f.name}.{sub}" if sub else f.name
    return None


def _stored_meta(raw: bytes, path: Path) -> RunMeta:
    """The saved RunMeta, checked field by field; anything malformed is a LoadError naming the file."""
    try:
        d = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise LoadError(f"the saved meta is not readable JSON ({exc})", path=path, field="meta") from None
    if not isinstance(d, dict):
        raise LoadError(f"the saved meta is a JSON {type(d).__name__}, not an object", path=path, field="meta")
    bad = _misfit(d, RunMeta)
    if bad is not None:
        top = bad.split(".")[0]
        shown = d[top] if top == bad else d[top].get(bad.split(".", 1)[1])
        raise LoadError(f"the saved meta.{bad} does not have the type RunMeta gives it: {str(shown)[:120]!r}",
                        path=path, field=f"meta.{bad}")
    try:
        return RunMeta.from_dict(d)
    except (SchemaError, TypeError, ValueError) as exc:
        raise LoadError(f"the saved meta is invalid: {exc}", path=path, field="meta") from None


def _with_lists(table: Any) -> pd.DataFrame:
    """An Arrow table as pandas, its list columns as Python lists (as they were saved), not numpy arrays."""
    import pyarrow as pa

    df = table.to_pandas()
    for i, f in enumerate(table.schema):
        if pa.types.is_list(f.type) or pa.types.is_large_list(f.type):
            df[f.name] = pd.Series(table.column(i).to_pylist(), index=df.index, dtype=object)
    return df


def _stored_table(text: Any, what: str, path: Path) -> pd.DataFrame:
    """A table saved as base64 Arrow IPC; damage is a LoadError naming the file and the table."""
    import pyarrow as pa

    if isinstance(text, bytes):
        text = text.decode("ascii", errors="replace")
    if not isinstance(text, str):
        raise LoadError(f"the saved {what} is missing or not text", path=path, field=what)
    try:
        with pa.ipc.open_stream(base64.b64decode(text, validate=True)) as r:
            return _with_lists(r.read_all())
    except MemoryError:
        raise
    except Exception as exc:  # base64, Arrow IPC and conversion errors of a damaged file
        raise LoadError(f"the saved {what} is unreadable ({type(exc).__name__}: {exc})", path=path,
                        field=what) from None


def _stored_tables(raw: bytes, path: Path) -> dict[str, pd.DataFrame]:
    try:
        d = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise LoadError(f"the saved tables are not readable JSON ({exc})", path=path, field="tables") from None
    if not isinstance(d, dict):
        raise LoadError("the saved tables are not a JSON object", path=path, field="tables")
    return {k: _stored_table(v, f"table {k!r}", path) for k, v in d.items()}


def _saved_metadata(path: Path) -> dict[bytes, bytes]:
    """The key-value metadata of a saved Run (a LoadError for anything else)."""
    import pyarrow.parquet as pq

    try:
        md = pq.read_schema(path).metadata or {}
    except FileNotFoundError:
        raise LoadError("no such file", path=path) from None
    except MemoryError:
        raise
    except Exception as exc:  # pyarrow's errors on a file that is not (readable) Parquet
        raise LoadError(f"not a readable Parquet file ({type(exc).__name__}: {exc})", path=path) from None
    if _META_KEY not in md:
        raise LoadError(
            "not a Run file (no mfu_toolkit metadata); load a plain table with "
            "mfu_toolkit.io.load_table(path, columns=...)",
            path=path,
        )
    version = md.get(_FORMAT_KEY, _FORMAT_VERSION)
    if version != _FORMAT_VERSION:
        raise LoadError(f"saved in Run file format {version[:20]!r}; this mfu_toolkit reads format "
                        f"{_FORMAT_VERSION.decode()}", path=path, field="format")
    return md


def read_run(path: str | Path, *, progress: bool | None = None) -> Run:
    """Read a Run written by :func:`save_run`; a plain Parquet file is an error that says so.

    Everything stored is checked before it is used: a damaged or hand-edited file (meta or
    report of the wrong shape, unreadable tables, rows that break the schema) is a
    :class:`LoadError` naming the file, never a Run that fails later.

    ``progress``: show a progress bar (``tqdm.auto``: a widget in Jupyter, text elsewhere);
    ``None`` shows one for files of at least ``PROGRESS_MIN_BYTES``.
    """
    path = Path(path)
    md = _saved_metadata(path)
    meta = _stored_meta(md[_META_KEY], path)
    events = _stored_table(md.get(_EVENTS_KEY), "events", path)
    tables = _stored_tables(md.get(_TABLES_KEY, b"{}"), path)
    bar = progress_bar(path, progress, "reading Run")
    try:
        try:
            steps = read_parquet_frame(path, bar=bar)
        except MemoryError:
            raise
        except Exception as exc:  # a damaged column chunk or page
            raise LoadError(f"the saved steps are unreadable ({type(exc).__name__}: {exc})", path=path) from None
        if bar is not None:
            bar.set_description("validating Run")
        try:
            run = Run(steps, events, meta, tables).validate()
        except SchemaError as exc:
            raise LoadError(f"the saved Run breaks the schema: {exc}", path=path) from None
    finally:
        if bar is not None:
            bar.close()
    return run


# --- reading large Parquet files ------------------------------------------------------------
PROGRESS_MIN_BYTES = 64 * 2**20  # progress=None shows a bar for files at least this large


def progress_bar(path: str | Path, progress: bool | None, desc: str) -> Any:
    """A ``tqdm.auto`` bar counting rows (None when not wanted, or tqdm is missing)."""
    if progress is None:
        try:
            progress = Path(path).stat().st_size >= PROGRESS_MIN_BYTES
        except OSError:
            progress = False
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:  # a runtime dependency; without it, loads still work, silently
        return None
    return tqdm(total=None, desc=desc, unit=" rows", unit_scale=True, leave=False)


_PLAIN_NUMPY = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                "float32", "float64", "bool"}


def _plain_columns(pf: Any) -> list[str] | None:
    """Column names when every column converts to a plain numpy array and the pandas metadata
    asks for nothing more (no index columns, no extension dtypes); else None."""
    import pyarrow as pa

    schema = pf.schema_arrow
    names = list(schema.names)
    if len(set(names)) != len(names):
        return None
    for fld in schema:
        t = fld.type
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)):
            return None
        if pa.types.is_float16(t):
            return None
    raw = (schema.metadata or {}).get(b"pandas")
    if raw is not None:
        try:
            pmd = json.loads(raw)
        except ValueError:
            return None
        if pmd.get("index_columns") not in ([], None):
            return None
        if any(c.get("name") is not None for c in pmd.get("column_indexes") or []):
            return None
        cols = pmd.get("columns") or []
        if [c.get("name") for c in cols] != names or [c.get("field_name", c.get("name")) for c in cols] != names:
            return None
        if any(c.get("numpy_type") not in _PLAIN_NUMPY for c in cols):
            return None
    return names


def read_parquet_frame(path: str | Path, *, bar: Any = None) -> pd.DataFrame:
    """A Parquet file as a DataFrame, read row group by row group (``bar`` counts the rows).

    The result equals ``pyarrow.parquet.read_table(path).to_pandas()``. For plain numeric
    columns each row group is copied into preallocated numpy arrays and released, so the peak
    is about the frame plus one row group (a whole Arrow table plus its pandas copy otherwise).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(path)
    n = pf.metadata.num_rows
    if bar is not None:
        bar.reset(total=n)
    names = _plain_columns(pf)
    if names is not None and n:
        arrays = {nm: np.empty(n, dtype=pf.schema_arrow.field(nm).type.to_pandas_dtype()) for nm in names}
        at = 0
        for i in range(pf.num_row_groups):
            t = pf.read_row_group(i)
            k = t.num_rows
            for nm in names:
                col = t.column(nm)
                if col.null_count and not pa.types.is_floating(col.type):
                    names = None  # missing ints / bools: to_pandas widens them; take that path
                    break
                arrays[nm][at : at + k] = col.to_numpy()
            if names is None:
                break
            at += k
            del t
            if bar is not None:
                bar.update(k)
        if names is not None:
            return pd.DataFrame(arrays, copy=False)
        del arrays
        if bar is not None:
            bar.reset(total=n)
    parts = []
    for i in range(pf.num_row_groups):
        parts.append(pf.read_row_group(i, use_pandas_metadata=True))
        if bar is not None:
            bar.update(parts[-1].num_rows)
    table = pa.concat_tables(parts) if parts else pf.schema_arrow.empty_table()
    del parts
    return table.to_pandas()
