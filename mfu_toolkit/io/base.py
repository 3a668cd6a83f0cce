"""The loader shape: a format parses, one pipeline assembles.

A format is a module under :mod:`mfu_toolkit.io.formats` with

- ``NAME``: its name in ``load_run(path, format=NAME)``;
- ``Options``: a frozen dataclass of what it accepts besides the RunMeta keywords (so
  ``help(formats.megatron.Options)`` shows them); formats without options may leave it out;
- ``sniff(path, head) -> float``: its confidence (0..1) that ``path`` holds it, from ``head``
  (the first 8 KiB, decompressed) or, for a folder, ``b""``;
- ``parse(reader, options) -> Parsed``: the records, never a Run.

A format never builds ``RunMeta``, applies the caller's keywords, validates or warns:
:func:`assemble` does that once for every format. It fills the LoadReport's totals, builds
``RunMeta`` from what the log states (each :class:`Fact` with the file and line it was read
from), marks what the caller gave as given and notes a conflict between the two (the given value
is used, the conflict is never resolved silently), resolves the peak, builds and validates the
Run and issues one :class:`~mfu_toolkit.run.LoadWarning` when anything was skipped or
contradicted.

The facts fill the run unless the caller gave the value: ``n_accelerators`` from a stated count,
else ``n_nodes`` x ``accelerators_per_node`` when both are stated; ``accelerator`` where the peak
registry resolves the stated name, with its peak at the stated ``dtype`` (else bf16, said so);
``global_batch`` and ``seq_len``. A name the registry does not resolve (a typo, a MIG slice, a
generic "AMD Radeon Graphics") or a dtype the accelerator has no peak for stays a fact, and a
note says why the peak is unknown. Every value used is traced: one "used from the log" note with
each file:line, and ``peak_source`` names the lines the accelerator and dtype came from. :func:`load` wraps it: foreign exceptions become a ``LoadError`` naming the file.
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

from ..run import LoadError, LoadWarning, Run, RunMeta, SchemaError
from . import rules
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
    "apply_overrides",
    "assemble",
    "load",
    "loader_for",
    "split_options",
]


class LoaderArgumentError(TypeError):
    """A loader was called with a keyword argument it does not know (a caller's mistake)."""


class InternalLoadError(LoadError):
    """A format failed on an input with an error of its own code (a bug, not a damaged log)."""


# What a log can state about its job. The first four fill RunMeta fields the log leaves unset.
FACT_NAMES: tuple[str, ...] = (
    "n_accelerators",
    "global_batch",
    "seq_len",
    "dtype",
    "accelerator",
    "n_ranks",
    "n_nodes",
    "accelerators_per_node",
    "micro_batch",
    "model",
    "parallelism",
    "framework",
    "platform",
)
_FILLS_META = ("n_accelerators", "global_batch", "seq_len")

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
class Fact:
    """Something the log states about the job, and where (``file:line``) it said so."""

    name: str
    value: Any
    where: str
    text: str = ""

    def __post_init__(self) -> None:
        if self.name not in FACT_NAMES:
            raise ValueError(f"Fact.name must be one of {', '.join(FACT_NAMES)}; got {self.name!r}")

    def to_dict(self, source: str = "stated") -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": source, "where": self.where, "text": self.text[:200]}


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


# Formats whose n_accelerators fact counts packages (chips or cards, what a datasheet prints a
# peak for); every other format's count is a world size, a rank count or a framework's device
# count, i.e. framework devices (two per MI250X, four per Trainium2 at LNC=2).
PACKAGE_COUNTS: dict[str, str] = {
    "mlperf": "SYSJSON number_of_nodes × accelerators_per_node, the system description's hardware",
}


def _counted_per(meta: RunMeta, overrides: Mapping[str, Any]) -> str:
    """What the run's N counts, hence what its peak is per: ``"device"`` or ``"package"``.

    The caller's ``peak_per`` wins; an ``n_accelerators`` given to ``load_run`` counts framework
    devices, like a world size; a count a format in ``PACKAGE_COUNTS`` states, not yet resolved
    to a peak, counts packages; otherwise the meta's own choice stands (``"device"`` by default).
    """
    if overrides.get("peak_per") is not None:
        return str(overrides["peak_per"])
    if overrides.get("n_accelerators") is not None:
        return "device"
    stated = meta.fact("n_accelerators", source="stated")
    if (meta.source_format in PACKAGE_COUNTS and meta.peak_flops_per_accelerator is None
            and stated is not None and _same(stated.get("value"), meta.n_accelerators)):
        return "package"
    return meta.peak_per


def apply_overrides(meta: RunMeta, overrides: Mapping[str, Any]) -> RunMeta:
    """``meta`` with the caller's RunMeta fields set (``extra`` merged, peak resolved).

    The peak is per device or per package as the run's N counts (see :func:`_counted_per`):
    ``load_run(path, accelerator="MI250X")`` on a log whose world size counts GCDs takes
    191.5 TFLOP/s bf16 per device, not the 383 AMD prints per package; ``peak_per="package"``
    says that N counts packages. A peak already resolved per the other unit is looked up again.
    """
    changes = dict(overrides or {})
    per = _counted_per(meta, changes)
    if not changes and per == meta.peak_per:
        return meta
    extra = changes.pop("extra", None)
    if extra:
        changes["extra"] = {**meta.extra, **dict(extra)}
    changes["peak_per"] = per
    before = meta
    meta = meta.replace(**changes)
    # With an accelerator and a dtype but no peak, resolve the peak from the registry (never a
    # fallback: an unknown name is the registry's error).
    if meta.accelerator and meta.dtype and meta.peak_flops_per_accelerator is None:
        meta = meta.with_accelerator(meta.accelerator, meta.dtype, sparse=meta.peak_sparse, per=per)
    elif (per != before.peak_per and before.peak_flops_per_accelerator is not None
          and changes.get("peak_flops_per_accelerator") is None):
        if not (meta.accelerator and meta.dtype):  # the caller's keywords contradict the run
            raise LoaderArgumentError(
                f"the run's peak ({before.peak_flops_per_accelerator:.4g} FLOP/s per {before.peak_per}, "
                f"{before.peak_source or 'source unknown'}) names no accelerator and dtype to look it up "
                f"per {per} for; give accelerator= and dtype= (or peak_flops_per_accelerator=)")
        meta = meta.with_accelerator(meta.accelerator, meta.dtype, sparse=meta.peak_sparse, per=per)
    return meta


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


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    return str(a).strip().lower() == str(b).strip().lower()


_MAX_NAME = 200  # characters: a longer "accelerator name" is not one, and is not looked up


def _canonical(name: str, value: Any) -> Any:
    """An accelerator or dtype as the registry names it (so 'H100' and 'NVIDIA H100 80GB HBM3'
    are one accelerator, 'bfloat16' and 'bf16' one dtype); other values, and names the registry
    does not know, unchanged."""
    from .. import hardware

    if not isinstance(value, str) or len(value) > _MAX_NAME:
        return value
    try:
        if name == "accelerator":
            return hardware.resolve(value).name
        if name == "dtype":
            return hardware.canonical_dtype(value)
    except hardware.RegistryError:
        pass
    return value


def _same_fact(name: str, a: Any, b: Any) -> bool:
    return _same(a, b) or (name in ("accelerator", "dtype") and _same(_canonical(name, a), _canonical(name, b)))


def _facts(parsed: Parsed, overrides: Mapping[str, Any], reader: Reader) -> tuple[list[dict[str, Any]], list[str]]:
    """Stated facts, given facts, and a note for each given value the log contradicts."""
    facts = [f.to_dict("stated") for f in parsed.facts]
    conflicts = []
    for name, value in overrides.items():
        if name not in FACT_NAMES or value is None:
            continue
        facts.append({"name": name, "value": value, "source": "given", "where": "load_run keyword", "text": ""})
        stated = [f for f in parsed.facts if f.name == name and not _same_fact(name, f.value, value)]
        if stated:
            f = stated[0]
            conflicts.append(
                f"conflict: {name} given as {value!r}, but the log states {f.value!r} at {f.where}"
                + (f" ({f.text.strip()[:80]!r})" if f.text else "") + "; the given value is used"
            )
    for text in conflicts:
        reader.note(text)
    return facts, conflicts


def _first_fact(parsed: Parsed, name: str) -> Fact | None:
    return next((f for f in parsed.facts if f.name == name), None)


def _quote(f: Fact) -> str:
    return f"{f.value!r} stated in the log at {f.where}" + (f" ({f.text.strip()[:80]!r})" if f.text.strip() else "")


@dataclass
class _Stated:
    """What the log's facts fill in RunMeta: the fields, one provenance line per field, the
    facts derived from other facts (nodes x accelerators per node), and notes on facts unused."""

    fields: dict[str, Any] = field(default_factory=dict)
    used: list[str] = field(default_factory=list)
    derived: list[dict[str, Any]] = field(default_factory=list)
    peak_from: list[str] = field(default_factory=list)


def _stated_count(parsed: Parsed, fields: Mapping[str, Any], overrides: Mapping[str, Any], out: _Stated) -> None:
    """n_accelerators: a stated count, else nodes x accelerators per node when the log states both."""
    given = overrides.get("n_accelerators") is not None
    stated = _first_fact(parsed, "n_accelerators")
    if stated is not None:
        if not given and fields.get("n_accelerators") == stated.value:
            out.used.append(f"n_accelerators {_quote(stated)}")
        return
    if fields.get("n_accelerators") is not None and not given:
        return
    nodes, per = _first_fact(parsed, "n_nodes"), _first_fact(parsed, "accelerators_per_node")
    if nodes is None or per is None:
        return
    total = rules.as_count(rules.as_count(nodes.value) * rules.as_count(per.value)) if (
        rules.as_count(nodes.value) and rules.as_count(per.value)) else None
    if total is None:
        return
    where = nodes.where if nodes.where == per.where else f"{nodes.where} and {per.where}"
    text = f"n_nodes {nodes.value} x accelerators_per_node {per.value}"
    out.derived.append({"name": "n_accelerators", "value": total, "source": "stated", "where": where, "text": text})
    if not given:
        out.fields["n_accelerators"] = total
        out.used.append(f"n_accelerators {total} = {text}, stated in the log at {where}")


def _stated_dtype(parsed: Parsed, overrides: Mapping[str, Any], reader: Reader) -> tuple[str | None, Fact | None]:
    """The dtype the log states, as the registry names it (a spelling it does not know is noted)."""
    from .. import hardware

    f = _first_fact(parsed, "dtype")
    if f is None or overrides.get("dtype") is not None:
        return None, f
    try:
        return hardware.canonical_dtype(str(f.value)), f
    except hardware.RegistryError:
        reader.note(f"dtype {_quote(f)} is not a dtype the peak registry knows "
                    f"({', '.join(hardware.DTYPES)}); it is kept as a fact, not used for the peak")
        return None, None


def _stated_accelerator(parsed: Parsed, overrides: Mapping[str, Any], reader: Reader, out: _Stated) -> None:
    """The accelerator (and dtype) the log states, where the registry resolves them and the caller
    gave neither an accelerator nor a peak; otherwise a note says why the peak is unknown."""
    from .. import hardware

    dtype, dtype_fact = _stated_dtype(parsed, overrides, reader)
    if dtype is not None:
        out.fields["dtype"] = dtype
        out.used.append(f"dtype {_quote(dtype_fact)}")
        out.peak_from.append(f"dtype {dtype} {_quote(dtype_fact)}")
    given_acc = overrides.get("accelerator")
    if overrides.get("peak_flops_per_accelerator") is not None:
        return
    if given_acc is not None:
        if dtype is not None:  # the caller's accelerator at the log's dtype
            _check_dtype_for(str(given_acc), dtype, f"accelerator {given_acc!r} given, but the log states dtype "
                             f"{_quote(dtype_fact)}")
        elif overrides.get("dtype") is None:  # as mfu analyze --accelerator does: bf16, said so
            _assume_bf16(str(given_acc), reader, f"accelerator {given_acc!r} given and no dtype", out)
        return
    f = _first_fact(parsed, "accelerator")
    if f is None:
        return
    if len(str(f.value)) > _MAX_NAME:
        reader.note(f"peak unknown: the accelerator the log states at {f.where} is {len(str(f.value))} characters "
                    f"long, not a device name (at most {_MAX_NAME}); pass accelerator= to set it")
        return
    try:
        acc = hardware.resolve(str(f.value))
    except hardware.UnknownAcceleratorError as exc:
        reader.note(f"peak unknown: accelerator {_quote(f)} does not resolve in the peak registry ({exc})")
        return
    out.fields["accelerator"] = acc.name
    out.used.append(f"accelerator {acc.name} from {_quote(f)}")
    want = overrides.get("dtype") or dtype
    if want is not None:
        if overrides.get("dtype") is not None:
            _check_dtype_for(acc.name, str(want), f"dtype {want!r} given, but the log states accelerator {_quote(f)}")
        elif not _has_dtype(acc.name, dtype, reader, f"the log states accelerator {f.value!r} at {f.where} and "
                            f"dtype {_quote(dtype_fact)}"):
            out.fields.pop("dtype", None)
            out.peak_from.clear()
            return
    elif not _assume_bf16(acc.name, reader, f"the log states accelerator {f.value!r} at {f.where} and no dtype", out):
        return
    out.peak_from.insert(0, f"accelerator {acc.name} from {_quote(f)}")


def _assume_bf16(accelerator: str, reader: Reader, context: str, out: _Stated) -> bool:
    """The dtype bf16 assumed for ``accelerator`` where the registry has a bf16 peak for it (said
    so); else no dtype, and a note naming the dtypes it has: loading never needs a peak."""
    from .. import hardware

    try:
        hardware.get_peak(accelerator, "bf16")
    except hardware.DtypeNotAvailableError as exc:
        reader.note(f"peak unknown until a dtype is given: {context}; {accelerator} has no bf16 peak (it has "
                    f"{', '.join(exc.available) or 'none'}): pass dtype=")
        return False
    except hardware.RegistryError:
        return False  # an unknown name: the caller's keyword meets the registry's own error later
    out.fields["dtype"] = "bf16"
    out.peak_from.append("dtype bf16 assumed (the log states none; pass dtype= if the run used another)")
    return True


def _check_dtype_for(accelerator: str, dtype: str, context: str) -> None:
    """Raise the registry's error, with ``context`` first, when ``accelerator`` has no ``dtype`` peak."""
    from .. import hardware

    try:
        hardware.get_peak(accelerator, dtype)
    except hardware.DtypeNotAvailableError as exc:
        raise hardware.DtypeNotAvailableError(f"{context}: {exc}", accelerator=exc.accelerator, dtype=exc.dtype,
                                              available=exc.available) from None


def _has_dtype(accelerator: str, dtype: str, reader: Reader, context: str) -> bool:
    """Whether ``accelerator`` has a ``dtype`` peak; if not, a note says the peak is unknown and why."""
    from .. import hardware

    try:
        hardware.get_peak(accelerator, dtype)
    except hardware.DtypeNotAvailableError as exc:
        reader.note(f"peak unknown: {context}, but {exc}")
        return False
    return True


def _stated(parsed: Parsed, fields: Mapping[str, Any], overrides: Mapping[str, Any], reader: Reader) -> _Stated:
    """The RunMeta fields the log's facts fill (count, accelerator, dtype), the caller's keywords
    winning; each used value is traced to its file:line in a note (and in ``peak_source``)."""
    out = _Stated()
    _stated_count(parsed, fields, overrides, out)
    _stated_accelerator(parsed, overrides, reader, out)
    for name in ("global_batch", "seq_len"):
        f = _first_fact(parsed, name)
        if f is not None and overrides.get(name) is None and fields.get(name) == f.value:
            out.used.append(f"{name} {_quote(f)}")
    if out.used:
        reader.note("used from the log: " + "; ".join(out.used))
    return out


def _traced_peak(meta: RunMeta, stated: _Stated) -> RunMeta:
    """``meta`` with its peak resolved where the log named the accelerator, and ``peak_source``
    saying which of the log's lines the accelerator and dtype came from."""
    if meta.accelerator and meta.dtype and meta.peak_flops_per_accelerator is None:
        meta = meta.with_accelerator(meta.accelerator, meta.dtype, sparse=meta.peak_sparse, per=meta.peak_per)
    if stated.peak_from and meta.peak_source and "stated in the log" not in meta.peak_source:
        meta = meta.replace(peak_source=f"{meta.peak_source}; " + "; ".join(stated.peak_from))
    return meta


def _restore(run: Run, overrides: Mapping[str, Any], warn: bool) -> Run:
    """A saved Run as it was saved, with the caller's keywords applied (and marked as given)."""
    if not overrides:
        return run
    stated = [Fact(f["name"], f["value"], f.get("where", ""), f.get("text", ""))
              for f in run.meta.facts if f.get("source") == "stated" and f.get("name") in FACT_NAMES]
    report = dataclasses.replace(run.meta.report, notes=list(run.meta.report.notes))
    shadow = Reader(Path(run.meta.source_path or "saved run"), run.meta.source_format or "", report=report)
    facts, conflicts = _facts(Parsed(facts=stated), overrides, shadow)
    given = [f for f in facts if f["source"] == "given"]
    meta = apply_overrides(run.meta.replace(facts=[*run.meta.facts, *given], report=report), overrides)
    if warn and conflicts:
        warnings.warn(f"{report.source}: " + " ".join(conflicts) + ".", LoadWarning, stacklevel=6)
    return run.replace(meta=meta)


_FLOPS_FIELDS = ("model_flops_per_sample", "model_flops_per_token", "model_flops_per_step", "hardware_flops_per_step")


def _without_log_flops(fields: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The format's meta fields, less the model FLOPs the log gave where the caller gives FLOPs of
    their own (one FLOPs source: the caller's), with the caller's source named."""
    if not any(overrides.get(k) is not None for k in _FLOPS_FIELDS[:3]):
        return fields
    for k in (*_FLOPS_FIELDS, "model_flops_source"):
        fields.pop(k, None)
    if overrides.get("model_flops_source") is None:
        given = next(k for k in _FLOPS_FIELDS[:3] if overrides.get(k) is not None)
        fields["model_flops_source"] = f"given: load_run({given}=)"
    return fields


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
    fields = _without_log_flops(dict(parsed.meta), overrides)
    fields.setdefault("name", Path(reader.display or reader.path).name)
    for f in parsed.facts:
        if f.name in _FILLS_META and fields.get(f.name) is None:
            fields[f.name] = f.value
    facts, conflicts = _facts(parsed, overrides, reader)
    stated = _stated(parsed, fields, overrides, reader)
    fields.update(stated.fields)
    facts.extend(stated.derived)
    derived = Parsed(facts=[Fact(f["name"], f["value"], f["where"], f["text"]) for f in stated.derived])
    conflicts += _facts(derived, {k: overrides[k] for k in ("n_accelerators",) if k in overrides}, reader)[1]
    meta = RunMeta(
        source_path=reader.display or str(reader.path),
        source_format=reader.fmt,
        time_unit=parsed.time_unit,
        timing=parsed.timing,
        extra=_finite(dict(parsed.extra)),
        report=rep,
        facts=_finite([f for f in facts if not (isinstance(f["value"], float) and not math.isfinite(f["value"]))]),
        claims=[_finite(c.to_dict()) for c in parsed.claims if math.isfinite(c.value)],
        **fields,
    )
    meta = _traced_peak(apply_overrides(meta, overrides), stated)
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
    reader = Reader(path, mod.NAME, strict=strict, limits=limits, display=display)
    token = rules.start_row_budget(_input_bytes(path))
    try:
        parsed = mod.parse(reader, options)
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
