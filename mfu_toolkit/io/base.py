"""The loader shape: a format parses, one pipeline assembles.

A format is a module under :mod:`mfu_toolkit.io.formats` with

- ``NAME``: its name in ``load_run(path, format=NAME)``;
- ``Options``: a frozen dataclass of what it accepts besides the RunMeta keywords (so
  ``help(formats.megatron.Options)`` shows them); formats without options may leave it out;
- ``sniff(path, head) -> float``: its confidence (0..1) that ``path`` holds it, from ``head``
  (the first 8 KiB, decompressed) or, for a folder, ``b""``;
- ``parse(reader, options) -> Parsed``: the records, never a Run;
- ``TEXT_LOG = True`` (optional): a training log read line by line, whose NCCL lines the shared
  stage reads (:class:`~mfu_toolkit.io.nccl_info.NcclStage`) before the format sees its lines.

A format never builds ``RunMeta``, applies the caller's keywords, validates or warns:
:func:`assemble` does that once for every format. It fills the LoadReport's totals, builds
``RunMeta`` from what the log states (each :class:`Fact` with the file and line it was read
from), marks what the caller gave as given and notes a conflict between the two (the given value
is used, the conflict is never resolved silently), resolves the peak, builds and validates the
Run and issues one :class:`~mfu_toolkit.run.LoadWarning` when anything was skipped or
contradicted.

How a log's facts and the caller's keywords become RunMeta fields is :func:`mfu_toolkit.facts.resolve`
(the one path for given, stated and assumed values, which ``apply_inputs`` shares). :func:`load` wraps it: foreign
exceptions become a ``LoadError`` naming the file.
"""

from __future__ import annotations

import dataclasses
import math
import traceback
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pandas as pd

from .. import facts as _facts
from ..facts import FACT_NAMES, Fact, LoaderArgumentError
from ..run import LoadError, LoadWarning, Run, RunMeta, SchemaError
from . import rules
from .nccl_info import NcclStage
from .reading import Limits, Reader

__all__ = [
    "FACT_NAMES",
    "CLAIM_METRICS",
    "META_KWARGS",
    "READING_KWARGS",
    "Claim",
    "Fact",
    "Format",
    "InternalLoadError",
    "LoaderArgumentError",
    "NoOptions",
    "Parsed",
    "assemble",
    "load",
    "loader_for",
    "split_options",
]


class InternalLoadError(LoadError):
    """A format failed on an input with an error of its own code (a bug, not a damaged log)."""


# What a framework claims about its own throughput.
CLAIM_METRICS: tuple[str, ...] = (
    "tflops_per_accelerator",  # model (or hardware) TFLOP/s per GPU/device, as the framework counts
    "mfu",  # a fraction 0..1
    "tokens_per_s_per_accelerator",
    "tokens_per_s",
    "samples_per_s",
    "steps_per_s",  # optimizer steps per second (HF Trainer's train_steps_per_second)
    "model_flops_per_step",  # FLOPs per training step the framework says it counts
    "total_flos",  # FLOPs of the whole run (HF Trainer)
)
# What time a claimed rate is over: "steady" the training steps the framework timed (compared with
# our steady-state window), "end_to_end" the whole run, evaluation and checkpoints included (HF
# Trainer's train_samples_per_second: train_runtime spans them), compared with our end-to-end rate;
# "run" the benchmark's timed run from its start (MLPerf run_start) to the record, evaluations
# included, compared with the work our steps did in that span over its length; "partial" part of
# each step only (DeepSpeed's timer under Megatron-DeepSpeed: the last micro-batch's forward to the
# optimizer step), shown beside ours for information, never called a mismatch.
CLAIM_BASES: tuple[str, ...] = ("steady", "end_to_end", "run", "partial")


@dataclass(frozen=True)
class Claim:
    """A throughput the framework printed about itself: value, unit and what it counts.

    ``value`` is the ``statistic`` (``"median"`` over the ``n`` values the log printed, or
    ``"value"`` for a single one); ``where`` is the first line it appeared on.
    """

    metric: str
    value: float
    unit: str
    counts: str
    where: str
    n: int = 1
    statistic: str = "value"
    basis: str = "steady"

    def __post_init__(self) -> None:
        if self.metric not in CLAIM_METRICS:
            raise ValueError(f"Claim.metric must be one of {', '.join(CLAIM_METRICS)}; got {self.metric!r}")
        if self.basis not in CLAIM_BASES:
            raise ValueError(f"Claim.basis must be one of {', '.join(CLAIM_BASES)}; got {self.basis!r}")

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def summarise(
        cls, metric: str, values: Iterable[float], *, unit: str, counts: str, where: str, basis: str = "steady"
    ) -> Claim | None:
        """The median of the finite ``values`` as one claim (``None`` when there are none)."""
        finite = sorted(float(v) for v in values if v is not None and math.isfinite(float(v)))
        if not finite:
            return None
        n = len(finite)
        mid = finite[n // 2] if n % 2 else 0.5 * (finite[n // 2 - 1] + finite[n // 2])
        return cls(metric, mid, unit, counts, where, n=n, statistic="median" if n > 1 else "value", basis=basis)


@dataclass
class Parsed:
    """What a format read: records, their timing and unit, facts and claims.

    ``steps``: a DataFrame or a dict of columns in the Run's step schema (extra columns kept);
    ``events``: a DataFrame or a list of event dicts; ``tables``: auxiliary tables by name;
    ``meta``: RunMeta fields the format derives that are not facts (``name``, model FLOPs a CI
    file records, ...); ``extra``: format-specific, JSON-able details for ``meta.extra``.
    """

    steps: pd.DataFrame | Mapping[str, Any] | None = None
    events: pd.DataFrame | list[Mapping[str, Any]] | None = None
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)
    timing: str = "exact"
    time_unit: str | None = None
    facts: list[Fact] = field(default_factory=list)
    claims: list[Claim] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)
    # A Run saved by save_run, read back whole: assemble keeps its meta (report, facts and
    # claims as saved) and applies only the caller's keywords, so a saved Run reads back equal.
    restored: Run | None = None
    # Step rows reduced out of core (a mfu_toolkit.engine.Reductions): the Run holds these
    # instead of rows; ``steps`` stays empty.
    reductions: Any = None

    def fact(self, name: str, value: Any, where: str, text: str = "") -> None:
        """Add a fact (``None``, NaN and infinite values are no facts and are ignored)."""
        if value is None or (isinstance(value, float) and not math.isfinite(value)):
            return
        self.facts.append(Fact(name, value, where, text))

    def claim(self, claim: Claim | None) -> None:
        """Add a claim (``None`` and a claim of a NaN or infinite value are ignored)."""
        if claim is not None and math.isfinite(claim.value):
            self.claims.append(claim)


class Format(Protocol):
    """The module protocol every format follows (see the module docstring)."""

    NAME: str

    def sniff(self, path: Path, head: bytes) -> float: ...

    def parse(self, reader: Reader, options: Any) -> Parsed: ...


@dataclass(frozen=True)
class NoOptions:
    """This format takes no options besides the RunMeta keywords."""


# RunMeta fields a caller may set through load_run's keyword arguments.
META_KWARGS: frozenset[str] = frozenset(
    f.name
    for f in dataclasses.fields(RunMeta)
    if f.name not in {"report", "source_path", "source_format", "timing", "time_unit", "facts", "claims"}
)
# Keywords every format accepts: the reading limits (see reading.Limits).
READING_KWARGS: dict[str, str] = {
    "max_inflate_factor": "inflate_factor",
    "max_line_bytes": "max_line_bytes",
}


def options_of(mod: ModuleType) -> type:
    return getattr(mod, "Options", NoOptions)


def split_options(mod: ModuleType, kwargs: Mapping[str, Any]) -> tuple[Any, dict[str, Any], Limits]:
    """``(Options instance, RunMeta overrides, Limits)`` from load_run's keywords; rejects the rest."""
    opt_cls = options_of(mod)
    names = {f.name for f in dataclasses.fields(opt_cls)}
    opts = {k: v for k, v in kwargs.items() if k in names}
    meta = {k: v for k, v in kwargs.items() if k in META_KWARGS and k not in names}
    reading = {READING_KWARGS[k]: v for k, v in kwargs.items() if k in READING_KWARGS}
    unknown = sorted(set(kwargs) - set(opts) - set(meta) - set(READING_KWARGS))
    if unknown:
        raise LoaderArgumentError(
            f"the {mod.NAME} format got unexpected keyword argument(s) {unknown}; it accepts "
            f"{sorted(names) or 'no options'} (see help(mfu_toolkit.io.formats.{mod.NAME}.Options)), "
            f"the reading limits {sorted(READING_KWARGS)} and the RunMeta fields {sorted(META_KWARGS)}"
        )
    try:
        options = opt_cls(**opts)
    except (TypeError, ValueError) as exc:
        raise LoaderArgumentError(f"the {mod.NAME} format's options: {exc}") from None
    return options, meta, Limits.from_env(**reading)


def _finite(value: Any) -> Any:
    """``value`` with NaN and infinite floats replaced by None, in nested dicts and lists too:
    meta is JSON and must read back equal from a saved Run (NaN never equals itself)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def _with_defaults(extra: Mapping[str, Any], defaults: list[str]) -> dict[str, Any]:
    """The format's extra fields, with the fields assumed by default listed (``defaults``)."""
    out = dict(extra)
    if defaults:
        out["defaults"] = sorted({*out.get("defaults", []), *defaults})
    return out




_GIVEN_WHERE = "load_run keyword"  # where a value given to load_run is said to come from


def _restore(run: Run, overrides: Mapping[str, Any], warn: bool) -> Run:
    """A saved Run as it was saved, with the caller's keywords applied (and marked as given)."""
    if not overrides:
        return run
    stated = [Fact(f["name"], f["value"], f.get("where", ""), f.get("text", ""))
              for f in run.meta.facts if f.get("source") == _facts.STATED and f.get("name") in FACT_NAMES]
    report = dataclasses.replace(run.meta.report, notes=list(run.meta.report.notes))
    shadow = Reader(Path(run.meta.source_path or "saved run"), run.meta.source_format or "", report=report)
    facts, conflicts = _facts.mark_given(stated, overrides, where=_GIVEN_WHERE, note=shadow.note)
    given = [f for f in facts if f["source"] == _facts.GIVEN]
    report.fact_notes = [*report.fact_notes, *conflicts]
    meta = run.meta.replace(facts=[*run.meta.facts, *given], report=report)
    meta = _facts.apply_given(meta, overrides)
    if warn and conflicts:
        warnings.warn(f"{report.source}: " + " ".join(conflicts) + ".", LoadWarning, stacklevel=6)
    return run.replace(meta=meta)


def assemble(parsed: Parsed, reader: Reader, overrides: Mapping[str, Any] | None = None, *, warn: bool = True) -> Run:
    """Build the Run from a format's records: report, RunMeta, overrides, validation, one warning."""
    overrides = dict(overrides or {})
    if parsed.restored is not None:
        return _restore(parsed.restored, overrides, warn)
    rep = reader.report
    rep.source = reader.display or str(reader.path)
    rep.format = reader.fmt
    events = parsed.events
    ev = events if isinstance(events, pd.DataFrame) else pd.DataFrame(list(events or []))
    st = parsed.steps if isinstance(parsed.steps, pd.DataFrame) else pd.DataFrame(parsed.steps or {})
    rep.rows_kept = int(len(st) + len(ev) + (parsed.reductions.n_rows if parsed.reductions is not None else 0))
    res = _facts.resolve(parsed.facts, parsed.meta, overrides, where=_GIVEN_WHERE, note=reader.note)
    fields, facts, conflicts = res.fields, res.facts, res.conflicts
    rep.fact_notes = [*rep.fact_notes, *res.shown_as_facts]
    fields.setdefault("name", Path(reader.display or reader.path).name)
    meta = RunMeta(
        source_path=reader.display or str(reader.path),
        source_format=reader.fmt,
        time_unit=parsed.time_unit,
        timing=parsed.timing,
        extra=_finite(_with_defaults(parsed.extra, res.defaults)),
        report=rep,
        facts=_finite([f for f in facts if not (isinstance(f["value"], float) and not math.isfinite(f["value"]))]),
        claims=[_finite(c.to_dict()) for c in parsed.claims if math.isfinite(c.value)],
        **fields,
    )
    meta = _facts.trace_peak(_facts.apply_given(meta, overrides), res)
    run = Run.build(st if len(st.columns) else None, ev if len(ev.columns) else None, meta, parsed.tables,
                    reductions=parsed.reductions)
    if warn and (rep.skipped or conflicts):
        text = rep.summary() if rep.skipped else f"{rep.source} ({rep.format}): skipped none."
        if conflicts:
            text += " " + " ".join(conflicts) + "."
        warnings.warn(text, LoadWarning, stacklevel=5)  # the caller of load_run
    return run


def _where_in_toolkit(exc: BaseException) -> str:
    """``megatron.py:123`` for the innermost frame of the toolkit's own code, else ''."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if "mfu_toolkit" in f.filename]
    if not frames:
        return ""
    f = frames[-1]
    return f"{Path(f.filename).name}:{f.lineno}"


def _input_bytes(path: Path) -> int:
    """Bytes of the input, for the row budget (a gzipped file: about what it inflates to; a folder:
    its files, the first 10,000 looked at)."""
    try:
        if not path.is_dir():
            with path.open("rb") as f:
                gz = f.read(2) == b"\x1f\x8b"
            return path.stat().st_size * (10 if gz else 1)  # text logs gzip about 10:1
        total = 0
        for i, p in enumerate(path.rglob("*")):
            if i >= 10_000:
                break
            if p.is_file():
                total += p.stat().st_size
        return total
    except OSError:
        return 0


def load(mod: ModuleType, path: Path, *, strict: bool = False, display: str | None = None, **kwargs: Any) -> Run:
    """Parse ``path`` with format module ``mod`` and assemble the Run; only the toolkit's errors leave."""
    options, overrides, limits = split_options(mod, kwargs)
    stage = NcclStage() if getattr(mod, "TEXT_LOG", False) else None  # a text log: NCCL's lines read once, here
    reader = Reader(path, mod.NAME, strict=strict, limits=limits, display=display, nccl=stage)
    token = rules.start_row_budget(_input_bytes(path))
    try:
        parsed = mod.parse(reader, options)
        if stage is not None:
            stage.state(parsed, reader)
    except (LoadError, SchemaError, LoaderArgumentError):
        raise
    except MemoryError:
        raise LoadError(
            f"ran out of memory reading this input as {mod.NAME}; lower the reading limits "
            "(max_inflate_factor=, max_line_bytes=) or load a smaller part", path=display or path) from None
    except RecursionError:
        raise LoadError(f"the input nests too deeply to read as {mod.NAME}", path=display or path) from None
    except Exception as exc:  # a bug of ours on this input: said so, never passed off as damage
        raise _internal(mod.NAME, exc, display or path) from exc
    finally:
        rules.end_row_budget(token)
    try:
        return assemble(parsed, reader, overrides)
    except (LoadError, SchemaError, LoaderArgumentError):
        raise
    except ValueError as exc:  # the registry's error for an unknown accelerator or dtype is the caller's
        if type(exc).__module__.endswith("hardware"):
            raise
        raise _internal(mod.NAME, exc, display or path) from exc
    except Exception as exc:
        raise _internal(mod.NAME, exc, display or path) from exc


def _internal(name: str, exc: BaseException, path: Any) -> InternalLoadError:
    at = _where_in_toolkit(exc)
    return InternalLoadError(
        f"internal error in the {name} format ({type(exc).__name__}: {exc}"
        + (f", at {at}" if at else "") + "); this is a bug in mfu_toolkit, not necessarily in the log",
        path=path,
    )


def loader_for(name: str) -> Any:
    """``load(path, *, strict=False, **kwargs)`` for one format: ``load_run(path, format=name, ...)``.

    Each format module binds it as ``load``, so ``formats.megatron.load(path)`` reads like the
    format's own entry point while every load still goes through one pipeline.
    """

    def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
        from . import load_run

        return load_run(path, format=name, strict=strict, **kwargs)

    load.__name__ = "load"
    load.__qualname__ = f"{name}.load"
    load.__doc__ = f"Load a {name} log: ``load_run(path, format={name!r}, ...)``."
    return load
