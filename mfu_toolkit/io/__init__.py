"""Loaders for real training logs; one entry point, :func:`load_run`.

>>> from mfu_toolkit.io import load_run
>>> run = load_run("result_0.txt")                   # format detected by content
>>> run = load_run("logs/", format="tensorboard")     # or named explicitly
>>> run = load_run("steps.csv", format="table", columns={"step": "iter", "start_s": "t0",
...                "end_s": "t1"}, time_unit="ms")

Every loader returns a :class:`~mfu_toolkit.run.Run` (steps, events, meta, tables) with times
in seconds since the job's first event, the original unit in ``meta.time_unit``, the timing
precision in ``meta.timing`` and a :class:`~mfu_toolkit.run.LoadReport` of what was read and
skipped. Malformed records are skipped and counted (one warning per load); ``strict=True``
raises on the first one, naming file, line and field. Keyword arguments that name RunMeta
fields (``name``, ``accelerator``, ``dtype``, ``n_accelerators``, ``global_batch``,
``model_flops_per_step``, ...) state what the log does not carry.

For any input, ``load_run`` raises only :class:`~mfu_toolkit.run.LoadError` (unreadable input,
wrong format name, ambiguous detection) and :class:`~mfu_toolkit.run.SchemaError`; mistakes in
the call itself are a ``TypeError`` (unknown keyword) or the registry's error for an unknown
``accelerator``.

Formats (``REGISTRY``: a row per format with its module and a one-line summary; ``FORMATS``: their
names in detection order; one module each under :mod:`mfu_toolkit.io.formats`, built in the shape
of :mod:`mfu_toolkit.io.base`): ``run_parquet`` (a Run saved by ``save_run``), ``mlperf``
(``:::MLLOG``), ``megatron`` (Megatron-LM and Megatron-DeepSpeed stdout, timers included),
``megatron_json`` (CI golden values, Megatron-Bridge's too), ``tensorboard`` (event files),
``sacct`` (SLURM), ``goodput`` (ml-goodput-measurement event log), ``torchtitan``,
``hf_trainer``, ``lightning``, ``wandb``, ``kineto``, ``straggler_ops``, ``maxtext``, ``dcgm``
(GPU telemetry, no steps), ``nemo``, ``deepspeed`` and the generic ``table`` (CSV/JSONL/Parquet
with a column mapping). What a log states about its job is in ``run.meta.facts``, the
throughput it claims for itself in ``run.meta.claims``. Every read is bounded (see
:mod:`mfu_toolkit.io.reading`); ``path="-"`` reads standard input.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..run import LoadError, Run
from . import base
from .base import InternalLoadError, LoaderArgumentError
from .detect import (
    FORMATS,
    REGISTRY,
    Candidate,
    FormatInfo,
    Ranking,
    available_formats,
    detect_format,
    get_loader,
    message_of,
    rank_formats,
    sniff_all,
)
from .reading import spool_input

__all__ = [
    "FORMATS",
    "REGISTRY",
    "FormatInfo",
    "LoaderArgumentError",
    "available_formats",
    "detect_format",
    "rank_formats",
    "sniff_all",
    "load_run",
    "load_table",
    "write_goodput",
]


def load_run(path: str | Path, format: str = "auto", *, strict: bool = False, **kwargs: Any) -> Run:
    """Load a training log (file or directory) into a Run; ``format="auto"`` sniffs the content.

    ``path`` may be ``"-"`` (standard input), ``/dev/stdin``, a pipe or a FIFO: such a stream is
    read once into a temporary file, so detection and parsing see the same bytes.
    """
    if not isinstance(format, str):
        raise LoadError(f"format must be a string; got {format!r}", path=path, field="format")
    if not isinstance(path, (str, Path)):
        raise LoadError(f"path must be a str or Path; got {type(path).__name__}", field="path")
    spool = spool_input(path) if str(path) == "-" or Path(path).exists() else None
    try:
        p = spool.path if spool else Path(path)
        display = spool.display if spool else None
        return _load(p, format, strict=strict, display=display, kwargs=kwargs)
    finally:
        if spool is not None:
            spool.close()


def _load(p: Path, format: str, *, strict: bool, display: str | None, kwargs: dict[str, Any]) -> Run:
    if format != "auto":
        get_loader(format)  # a wrong name lists the valid ones
        if not p.exists():
            raise LoadError("no such file or directory", path=p)
        return base.load(get_loader(format), p, strict=strict, display=display, **kwargs)
    try:
        ranking = rank_formats(p)
    except LoadError as exc:
        if display is None:
            raise
        raise LoadError(exc.bare.replace(str(p), display), hint=exc.hint) from None
    if len(ranking.candidates) == 1:
        return _with_notes(base.load(get_loader(ranking.best), p, strict=strict, display=display, **kwargs),
                           ranking.best, ranking.notes)
    return _first_that_reads(ranking, p, strict=strict, display=display, kwargs=kwargs)


@dataclass
class _Tried:
    """A detected format load_run tried and passed over, and why."""

    candidate: Candidate
    why: str
    error: LoadError | None = None
    run: Run | None = None
    caught: list[warnings.WarningMessage] = field(default_factory=list)


def _records(run: Run) -> int:
    """Step rows, events and table rows of a Run (a Run of facts alone has none)."""
    n = len(run.steps) + len(run.events) + sum(len(t) for t in (run.tables or {}).values())
    return n + int(getattr(run.reductions, "n_rows", 0) or 0)


def _first_that_reads(ranking: Ranking, p: Path, *, strict: bool, display: str | None, kwargs: dict[str, Any]) -> Run:
    """Load with the best candidate; when it finds no records, the next one (noted in the report).

    A candidate that refuses the input or reads only facts is passed over for the next. When none
    reads records, the first that read facts gives the Run; when none reads anything, the refusal
    names each candidate and why (a single candidate's own error is raised unchanged). A bug in a
    format (``InternalLoadError``), a caller's mistake on the first candidate and, with
    ``strict=True``, an error naming a line (a malformed record of a format that found its records)
    are raised at once.
    """
    tried: list[_Tried] = []
    for i, cand in enumerate(ranking.candidates):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                run = base.load(get_loader(cand.name), p, strict=strict, display=display, **kwargs)
            except InternalLoadError:
                raise
            except LoaderArgumentError as exc:
                if i == 0:
                    raise
                tried.append(_Tried(cand, f"it does not take the keywords given ({exc})"))
                continue
            except LoadError as exc:
                if strict and exc.line is not None:
                    raise
                tried.append(_Tried(cand, f"it refused the input: {message_of(exc)}", error=exc))
                continue
        if _records(run):
            return _noted(_Tried(cand, "", run=run, caught=list(caught)), ranking, tried)
        tried.append(_Tried(cand, "it read no records, only what the log states", run=run, caught=list(caught)))
    facts_only = next((t for t in tried if t.run is not None), None)
    if facts_only is not None:
        return _noted(facts_only, ranking, tried)
    if len(tried) == 1 and tried[0].error is not None:
        raise tried[0].error
    raise LoadError(
        f"no detected format could read it: {'; '.join(f'{t.candidate.describe()}: {t.why}' for t in tried)}; "
        "pass format=<name> to choose one", path=display or p)


def _noted(chosen: _Tried, ranking: Ranking, tried: list[_Tried]) -> Run:
    """The chosen Run with notes on how its format was chosen, its load's warnings issued again."""
    run = chosen.run
    assert run is not None
    notes = list(ranking.notes)
    if tried:
        first, rest = tried[0], tried[1:]
        none_read = chosen in tried  # no candidate read records: the first that read facts is used
        notes.append(
            f"format: {first.candidate.describe()} was tried first and "
            + ("kept" if first is chosen else "passed over") + f": {first.why}"
            + "".join(f"; then {t.candidate.name}: {t.why}" for t in rest)
            + f"; read as {chosen.candidate.name}"
            + (", the first candidate that read what the log states (none read records)" if none_read else ""))
    _with_notes(run, chosen.candidate.name, notes)
    for w in chosen.caught:  # from here: _noted, _first_that_reads, _load, load_run, then the caller
        warnings.warn(w.message, w.category, stacklevel=5)
    return run


def _with_notes(run: Run, name: str, notes: Any) -> Run:
    """``run`` with the detection notes in its report, unless it is a saved Run read back (its
    report is the one it was saved with: a saved Run reads back equal)."""
    if run.meta.report.format == name:
        for text in notes:
            run.meta.report.note(text)
    return run


def __getattr__(name: str) -> Any:
    """``from mfu_toolkit.io import megatron`` gives the format module (``io.formats.megatron``)."""
    if name in FORMATS:
        return get_loader(name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def load_table(
    path: str | Path,
    *,
    columns: dict[str, str] | None = None,
    time_unit: str = "s",
    strict: bool = False,
    **meta: Any,
) -> Run:
    """Load a generic CSV/JSONL/Parquet step table (see :mod:`mfu_toolkit.io.formats.table`)."""
    from .formats import table

    return table.load(path, columns=columns, time_unit=time_unit, strict=strict, **meta)


def write_goodput(run: Run, path: str | Path, **kwargs: Any) -> Path:
    """Export a Run as a goodput-library event log (see :mod:`mfu_toolkit.io.formats.goodput`)."""
    from .formats import goodput

    return goodput.write_goodput(run, path, **kwargs)
