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

Formats (``FORMATS``, one module each under :mod:`mfu_toolkit.io.formats`, built in the shape
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

from pathlib import Path
from typing import Any

from ..run import LoadError, Run
from . import base
from .base import LoaderArgumentError
from .detect import FORMATS, available_formats, detect_format, get_loader, sniff_all
from .reading import spool_input

__all__ = [
    "FORMATS",
    "LoaderArgumentError",
    "available_formats",
    "detect_format",
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
    if format == "auto":
        try:
            name = detect_format(p)
        except LoadError as exc:
            if display is None:
                raise
            raise LoadError(str(exc).replace(str(p), display)) from None
    else:
        name = format
        get_loader(name)  # a wrong name lists the valid ones
        if not p.exists():
            raise LoadError("no such file or directory", path=p)
    return base.load(get_loader(name), p, strict=strict, display=display, **kwargs)


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
