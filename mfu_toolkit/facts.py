"""Facts about a job: what the user gave, what the log states, and what was assumed; one path.

A loader reads *stated* facts from a log (:class:`Fact`: a name, a value and the ``file:line``
it was read from); a user *gives* values (``load_run(path, n_accelerators=64)``, ``mfu analyze
--gpus 64``, ``apply_inputs(run, seq_len=4096)``). Both end as dicts in ``RunMeta.facts`` with a
``source`` of :data:`STATED` or :data:`GIVEN`, built here and nowhere else, so the answer can
show which value was used and where it came from.

:func:`resolve` is what ``load_run`` does with a log's facts and the caller's keywords: the
stated facts fill the RunMeta fields the log leaves unset (``n_accelerators`` from a stated count,
else ``n_nodes`` x ``accelerators_per_node``; ``accelerator`` where the peak registry resolves
the stated name, with its peak at the stated ``dtype``, else bf16, said so; ``global_batch``,
``seq_len``; the model FLOPs per sample of a stated ``reference_model`` where
:func:`reference_preset` names its preset and neither the log nor the caller gives FLOPs), the
given values win, and each given value the log contradicts is a conflict (noted, never resolved
silently). :func:`apply_given` sets the given fields and resolves the
peak per device or per package as the run's N counts. :func:`compare_given` and
:func:`source_of` are what the answer reports about them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .run import InputRequest, RunMeta

__all__ = ["FACT_NAMES", "GIVEN", "InputError", "LoaderArgumentError", "STATED", "PACKAGE_COUNTS", "REFERENCE_KINDS",
           "Fact", "Resolved", "apply_given", "check_value", "comparable", "compare_given", "given", "mark_given",
           "reference_preset", "resolve", "same", "source_of", "trace_peak"]

GIVEN, STATED = "given", "stated"


class LoaderArgumentError(TypeError):
    """A loader was called with a keyword argument it does not know, or keywords that contradict
    the run (a caller's mistake)."""


class InputError(ValueError):
    """A user's input is wrong or missing: one line naming the input, the value and what was expected.

    ``field``, ``value`` and ``expected`` say it as data, so a front end can name the input in its
    own terms (``--gpus abc``, ``GPUS=abc``) without reading the sentence back."""

    def __init__(self, message: str, *, field: str | None = None, value: Any = None,
                 expected: str | None = None) -> None:
        super().__init__(message)
        self.field, self.value, self.expected = field, value, expected


#: what each numeric input takes, and the words for it
EXPECTED = {"count": "a whole number >= 1", "whole": "a whole number >= 0", "positive": "a finite number > 0"}
VALUE_KINDS = {"n_accelerators": "count", "packages": "count", "seq_len": "count", "warmup_steps": "whole",
               "global_batch": "positive", "flops_per_sample": "positive", "flops_per_token": "positive",
               "flops_per_step": "positive", "checkpoint_write_s": "positive", "checkpoint_every_steps": "positive",
               "mtbf_hours": "positive"}


def check_value(field: str, value: Any) -> int | float:
    """A numeric input checked against what ``field`` takes (a count, a whole number >= 0 or a
    finite number > 0); counts come back as ``int``. A wrong one raises :class:`InputError`
    (``warmup_steps=-1: expected a whole number >= 0``), its field, value and expectation attached."""
    if field not in VALUE_KINDS:
        raise ValueError(f"field must be one of {', '.join(sorted(VALUE_KINDS))}; got {field!r}")
    kind = VALUE_KINDS[field]
    number = not isinstance(value, bool) and isinstance(value, numbers.Real) and math.isfinite(value)
    if kind == "positive" and number and value > 0:
        return float(value)
    if kind != "positive" and number and float(value).is_integer() and value >= (1 if kind == "count" else 0):
        return int(value)
    raise InputError(f"{field}={value!r}: expected {EXPECTED[kind]}", field=field, value=value,
                     expected=EXPECTED[kind])


Note = Callable[[str], None]

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
    "reference_model",
)


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

    def to_dict(self, source: str = STATED) -> dict[str, Any]:
        return {"name": self.name, "value": self.value, "source": source, "where": self.where, "text": self.text[:200]}


def given(name: str, value: Any, where: str) -> dict[str, Any]:
    """A value the user gave, as a ``RunMeta.facts`` entry; ``where`` names the input as the
    user spelled it (``"load_run keyword"``, ``"command line --gpus"``)."""
    return {"name": name, "value": value, "source": GIVEN, "where": where, "text": ""}


_FILLS_META = ("n_accelerators", "global_batch", "seq_len")  # stated, they fill RunMeta fields left unset

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
    stated = meta.fact("n_accelerators", source=STATED)
    if (meta.source_format in PACKAGE_COUNTS and meta.peak_flops_per_accelerator is None
            and stated is not None and _same(stated.get("value"), meta.n_accelerators)):
        return "package"
    return meta.peak_per


def apply_given(meta: RunMeta, overrides: Mapping[str, Any]) -> RunMeta:
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


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b), rel_tol=1e-9)
    return str(a).strip().lower() == str(b).strip().lower()


_MAX_NAME = 200  # characters: a longer "accelerator name" is not one, and is not looked up


def _canonical(name: str, value: Any) -> Any:
    """An accelerator or dtype as the registry names it (so 'H100' and 'NVIDIA H100 80GB HBM3'
    are one accelerator, 'bfloat16' and 'bf16' one dtype); other values, and names the registry
    does not know, unchanged."""
    from . import hardware

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


def same(name: str, a: Any, b: Any) -> bool:
    return _same(a, b) or (name in ("accelerator", "dtype") and _same(_canonical(name, a), _canonical(name, b)))


def mark_given(stated: Sequence[Fact], overrides: Mapping[str, Any], *, where: str,
               note: Note) -> tuple[list[dict[str, Any]], list[str]]:
    """Stated facts, given facts (given ``where``), and a note for each given value the log
    contradicts."""
    facts = [f.to_dict(STATED) for f in stated]
    conflicts = []
    for name, value in overrides.items():
        if name not in FACT_NAMES or value is None:
            continue
        facts.append(given(name, value, where))
        against = [f for f in stated if f.name == name and not same(name, f.value, value)]
        if against:
            f = against[0]
            conflicts.append(
                f"conflict: {name} given as {value!r}, but the log states {f.value!r} at {f.where}"
                + (f" ({f.text.strip()[:80]!r})" if f.text else "") + "; the given value is used"
            )
    for text in conflicts:
        note(text)
    return facts, conflicts


def _first(stated: Sequence[Fact], name: str) -> Fact | None:
    return next((f for f in stated if f.name == name), None)


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
    assumed: list[str] = field(default_factory=list)


def _stated_count(stated: Sequence[Fact], fields: Mapping[str, Any], overrides: Mapping[str, Any],
                  out: _Stated) -> None:
    """n_accelerators: a stated count, else nodes x accelerators per node when the log states both."""
    is_given = overrides.get("n_accelerators") is not None
    count = _first(stated, "n_accelerators")
    if count is not None:
        if not is_given and fields.get("n_accelerators") == count.value:
            out.used.append(f"n_accelerators {_quote(count)}")
        return
    if fields.get("n_accelerators") is not None and not is_given:
        return
    nodes, per = _first(stated, "n_nodes"), _first(stated, "accelerators_per_node")
    if nodes is None or per is None:
        return
    from .io.rules import as_count  # called from a loader: io is loaded

    total = as_count(as_count(nodes.value) * as_count(per.value)) if (
        as_count(nodes.value) and as_count(per.value)) else None
    if total is None:
        return
    where = nodes.where if nodes.where == per.where else f"{nodes.where} and {per.where}"
    text = f"n_nodes {nodes.value} x accelerators_per_node {per.value}"
    out.derived.append(Fact("n_accelerators", total, where, text))
    if not is_given:
        out.fields["n_accelerators"] = total
        out.used.append(f"n_accelerators {total} = {text}, stated in the log at {where}")


def _stated_dtype(stated: Sequence[Fact], overrides: Mapping[str, Any], note: Note) -> tuple[str | None, Fact | None]:
    """The dtype the log states, as the registry names it (a spelling it does not know is noted)."""
    from . import hardware

    f = _first(stated, "dtype")
    if f is None or overrides.get("dtype") is not None:
        return None, f
    try:
        return hardware.canonical_dtype(str(f.value)), f
    except hardware.RegistryError:
        note(f"dtype {_quote(f)} is not a dtype the peak registry knows "
                    f"({', '.join(hardware.DTYPES)}); it is kept as a fact, not used for the peak")
        return None, None


def _stated_accelerator(stated: Sequence[Fact], overrides: Mapping[str, Any], note: Note, out: _Stated) -> None:
    """The accelerator (and dtype) the log states, where the registry resolves them and the caller
    gave neither an accelerator nor a peak; otherwise a note says why the peak is unknown."""
    from . import hardware

    dtype, dtype_fact = _stated_dtype(stated, overrides, note)
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
            _assume_bf16(str(given_acc), note, f"accelerator {given_acc!r} given and no dtype", out)
        return
    f = _first(stated, "accelerator")
    if f is None:
        return
    if len(str(f.value)) > _MAX_NAME:
        note(InputRequest(f"peak unknown: the accelerator the log states at {f.where} is {len(str(f.value))} "
                          f"characters long, not a device name (at most {_MAX_NAME})", ("accelerator",),
                          "pass accelerator= to set it"))
        return
    try:
        acc = hardware.resolve(str(f.value))
    except hardware.UnknownAcceleratorError as exc:
        note(f"peak unknown: accelerator {_quote(f)} does not resolve in the peak registry ({exc})")
        return
    out.fields["accelerator"] = acc.name
    out.used.append(f"accelerator {acc.name} from {_quote(f)}")
    want = overrides.get("dtype") or dtype
    if want is not None:
        if overrides.get("dtype") is not None:
            _check_dtype_for(acc.name, str(want), f"dtype {want!r} given, but the log states accelerator {_quote(f)}")
        elif not _has_dtype(acc.name, dtype, note, f"the log states accelerator {f.value!r} at {f.where} and "
                            f"dtype {_quote(dtype_fact)}"):
            out.fields.pop("dtype", None)
            out.peak_from.clear()
            return
    elif not _assume_bf16(acc.name, note, f"the log states accelerator {f.value!r} at {f.where} and no dtype", out):
        return
    out.peak_from.insert(0, f"accelerator {acc.name} from {_quote(f)}")


def _assume_bf16(accelerator: str, note: Note, context: str, out: _Stated) -> bool:
    """The dtype bf16 assumed for ``accelerator`` where the registry has a bf16 peak for it (said
    so); else no dtype, and a note naming the dtypes it has: loading never needs a peak."""
    from . import hardware

    try:
        hardware.get_peak(accelerator, "bf16")
    except hardware.DtypeNotAvailableError as exc:
        note(InputRequest(f"peak unknown until a dtype is given: {context}; {accelerator} has no bf16 peak (it has "
                          f"{', '.join(exc.available) or 'none'})", ("dtype",), "pass dtype="))
        return False
    except hardware.RegistryError:
        return False  # an unknown name: the caller's keyword meets the registry's own error later
    out.fields["dtype"] = "bf16"
    out.assumed.append("dtype")
    out.peak_from.append("dtype bf16 assumed (the log states none; pass dtype= if the run used another)")
    return True


def _check_dtype_for(accelerator: str, dtype: str, context: str) -> None:
    """Raise the registry's error, with ``context`` first, when ``accelerator`` has no ``dtype`` peak."""
    from . import hardware

    try:
        hardware.get_peak(accelerator, dtype)
    except hardware.DtypeNotAvailableError as exc:
        raise hardware.DtypeNotAvailableError(f"{context}: {exc}", accelerator=exc.accelerator, dtype=exc.dtype,
                                              available=exc.available) from None


def _has_dtype(accelerator: str, dtype: str, note: Note, context: str) -> bool:
    """Whether ``accelerator`` has a ``dtype`` peak; if not, a note says the peak is unknown and why."""
    from . import hardware

    try:
        hardware.get_peak(accelerator, dtype)
    except hardware.DtypeNotAvailableError as exc:
        note(f"peak unknown: {context}, but {exc}")
        return False
    return True


#: Preset kinds whose model FLOPs per sample a stated reference model fixes: DLRM, whose FLOPs per sample follow
#: from its layer sizes alone. A sequence model's (a transformer benchmark's, HSTU's) depend on sequence lengths,
#: packed or padded, that the name does not fix, so its reference name alone gives no FLOPs.
REFERENCE_KINDS: tuple[str, ...] = ("dlrm",)


def reference_preset(name: Any) -> Any:
    """The FLOPs preset (:class:`~mfu_toolkit.flops.Preset`) of a reference model a log names (the value of a
    stated ``reference_model`` fact, e.g. MLPerf's ``dlrm_dcnv2``), where the preset registry knows the name and
    its kind is in :data:`REFERENCE_KINDS`; else None."""
    from .flops import FlopsConfigError, get_preset

    if not isinstance(name, str) or not name.strip() or len(name) > _MAX_NAME:
        return None
    try:
        preset = get_preset(name.strip())
    except FlopsConfigError:
        return None
    return preset if preset.kind in REFERENCE_KINDS else None


def _reference_flops(stated: Sequence[Fact], fields: Mapping[str, Any], overrides: Mapping[str, Any],
                     out: _Stated) -> None:
    """Model FLOPs per sample from the preset of the reference model the log states (see
    :func:`reference_preset`), where neither the log's own FLOPs nor the caller's are there; its
    source names the rule and the line it was read from, then the preset's conventions and source."""
    from .flops import model_flops

    f = _first(stated, "reference_model")
    if f is None or any(fields.get(k) is not None or overrides.get(k) is not None for k in _FLOPS_FIELDS[:3]):
        return
    preset = reference_preset(f.value)
    if preset is None:
        return
    from .readable import short_where

    mf = model_flops(preset)
    rule = f"{f.text.strip() or f'the reference model {f.value!r}'}, stated in the log at {short_where(f.where)}"
    out.fields["model_flops_per_sample"] = float(mf.training_per_sample)
    out.fields["model_flops_source"] = f"{rule}; preset {preset.name!r} ({mf.conventions.summary()}): {mf.source}"
    out.used.append(f"model_flops_per_sample {mf.training_per_sample:,.0f} of preset {preset.name!r} ({rule})")


def _stated(stated: Sequence[Fact], fields: Mapping[str, Any], overrides: Mapping[str, Any], note: Note) -> _Stated:
    """The RunMeta fields the log's facts fill (count, accelerator, dtype), the caller's keywords
    winning; each used value is traced to its file:line in a note (and in ``peak_source``)."""
    out = _Stated()
    _stated_count(stated, fields, overrides, out)
    _stated_accelerator(stated, overrides, note, out)
    _reference_flops(stated, fields, overrides, out)
    for name in ("global_batch", "seq_len"):
        f = _first(stated, name)
        if f is not None and overrides.get(name) is None and fields.get(name) == f.value:
            out.used.append(f"{name} {_quote(f)}")
    if out.used:
        note(_used_note(out.used))
    return out


def _used_note(used: list[str]) -> str:
    return "used from the log: " + "; ".join(used)


def trace_peak(meta: RunMeta, resolved: Resolved) -> RunMeta:
    """``meta`` with its peak resolved where the log named the accelerator, and ``peak_source``
    saying which of the log's lines the accelerator and dtype came from."""
    if meta.accelerator and meta.dtype and meta.peak_flops_per_accelerator is None:
        meta = meta.with_accelerator(meta.accelerator, meta.dtype, sparse=meta.peak_sparse, per=meta.peak_per)
    if resolved.peak_from and meta.peak_source and "stated in the log" not in meta.peak_source:
        meta = meta.replace(peak_source=f"{meta.peak_source}; " + "; ".join(resolved.peak_from))
    return meta


_FLOPS_FIELDS = ("model_flops_per_sample", "model_flops_per_token", "model_flops_per_step", "hardware_flops_per_step")


def _without_log_flops(fields: dict[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The format's meta fields, less the model FLOPs the log gave where the caller gives FLOPs of
    their own (one FLOPs source: the caller's), with the caller's source named."""
    if not any(overrides.get(k) is not None for k in _FLOPS_FIELDS[:3]):
        return fields
    for k in (*_FLOPS_FIELDS, "model_flops_source"):
        fields.pop(k, None)
    if overrides.get("model_flops_source") is None:
        first = next(k for k in _FLOPS_FIELDS[:3] if overrides.get(k) is not None)
        fields["model_flops_source"] = f"given: load_run({first}=)"
    return fields




@dataclass
class Resolved:
    """What :func:`resolve` made of a log's facts and the caller's values: the RunMeta ``fields``,
    the ``facts`` (stated, given, derived), the ``conflicts`` noted, and the lines the peak's
    accelerator and dtype came from (``peak_from``, for :func:`trace_peak`)."""

    fields: dict[str, Any]
    facts: list[dict[str, Any]]
    conflicts: list[str]
    peak_from: list[str] = field(default_factory=list)
    defaults: list[str] = field(default_factory=list)  # fields assumed, not stated nor given ("dtype")
    used: list[str] = field(default_factory=list)  # the stated values used, each with its file:line

    @property
    def shown_as_facts(self) -> list[str]:
        """The notes written here that an answer shows as its fact checks and facts used."""
        return [*self.conflicts, *([_used_note(self.used)] if self.used else [])]


def resolve(stated: Sequence[Fact], fields: Mapping[str, Any], overrides: Mapping[str, Any], *, where: str,
            note: Note) -> Resolved:
    """A format's RunMeta ``fields`` filled from its ``stated`` facts, the caller's ``overrides``
    (given ``where``) winning, each value used or contradicted said in a ``note``."""
    out = _without_log_flops(dict(fields), overrides)
    for f in stated:
        if f.name in _FILLS_META and out.get(f.name) is None:
            out[f.name] = f.value
    facts, conflicts = mark_given(stated, overrides, where=where, note=note)
    found = _stated(stated, out, overrides, note)
    out.update(found.fields)
    facts.extend(f.to_dict(STATED) for f in found.derived)
    count = {k: overrides[k] for k in ("n_accelerators",) if k in overrides}
    conflicts += mark_given(found.derived, count, where=where, note=note)[1]
    return Resolved(out, facts, conflicts, found.peak_from, found.assumed, found.used)


def comparable(name: str, given_value: Any, stated_value: Any) -> bool | None:
    """Whether a given and a stated value agree: True/False, or None when they cannot be compared
    (an accelerator name the registry does not resolve)."""
    if name == "accelerator":
        from . import hardware

        try:
            return hardware.resolve(str(given_value)).name == hardware.resolve(str(stated_value)).name
        except hardware.RegistryError:
            return None
    if isinstance(given_value, (int, float)) and not isinstance(given_value, bool):
        try:
            return math.isclose(float(given_value), float(stated_value), rel_tol=1e-9)
        except (TypeError, ValueError):
            return False
    return str(given_value).strip().lower() == str(stated_value).strip().lower()


def compare_given(facts: Sequence[Mapping[str, Any]]) -> tuple[int, list[tuple[Mapping[str, Any], Mapping[str, Any]]]]:
    """How many given facts could be compared with one the log states (an accelerator also with
    a stated ``platform``), and the (given, stated) pairs that disagree."""
    stated = [f for f in facts if f.get("source") == STATED]
    compared, conflicts = 0, []
    for g in (f for f in facts if f.get("source") == GIVEN):
        name = g.get("name")
        for s in stated:
            if not (s.get("name") == name or (name == "accelerator" and s.get("name") == "platform")):
                continue
            agree = comparable(name, g.get("value"), s.get("value"))
            if agree is None:
                continue
            compared += 1
            if not agree:
                conflicts.append((g, s))
            break
    return compared, conflicts


def source_of(facts: Sequence[Mapping[str, Any]], name: str, value: Any) -> tuple[str, str] | None:
    """Where the value used for ``name`` came from: ``(GIVEN, where)`` (the last given), else
    ``(STATED, file:line)`` of a stated fact that agrees with ``value``, else None."""
    for f in reversed(facts):
        if f.get("name") == name and f.get("source") == GIVEN:
            return GIVEN, str(f.get("where"))
    for f in facts:
        if f.get("name") in (name, "platform" if name == "accelerator" else name) and f.get("source") == STATED:
            if comparable(name, value, f.get("value")):
                return STATED, str(f.get("where") or "")
    return None
