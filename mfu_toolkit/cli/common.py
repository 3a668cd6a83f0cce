"""What ``mfu analyze`` and ``mfu audit`` share: the one-line error, loading a path, the interface."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from pathlib import Path
from typing import Any


def error(cmd: str, exc: BaseException | str) -> int:
    text = str(exc) if not isinstance(exc, str) else exc
    one_line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    print(f"mfu {cmd}: error: {one_line}", file=sys.stderr)
    return 2

def load(args: argparse.Namespace) -> Any:
    from ..run import LoadError, read_run

    path = Path(args.path)
    if args.path != "-" and not path.exists():
        raise FileNotFoundError(f"no such file or directory: {str(path)!r}")
    pattern = _step_pattern(args.step_pattern) if getattr(args, "step_pattern", None) else None
    if args.format in (None, "auto") and path.suffix == ".parquet" and path.is_file():
        try:
            run = read_run(path)
        except LoadError:
            pass  # a plain Parquet table: let the loaders try
        else:
            if pattern is not None:
                raise _no_step_pattern(pattern)
            return run
    try:
        from ..io import load_run
    except ImportError as exc:  # pragma: no cover - only while the loaders are missing
        raise ValueError(f"no log loaders available to read {str(path)!r} ({exc})") from None
    engine = getattr(args, "engine", None)
    limit = getattr(args, "memory_limit", None)
    if engine not in (None, "auto") or limit:  # an engine and its memory are chosen for Parquet datasets only
        return load_run(path, args.format or "parquet_dataset", engine=engine or "auto",
                        **({"memory_limit": limit} if limit else {}))
    # "-" (standard input), /dev/stdin, pipes and FIFOs are read once by load_run. Its warning
    # (skipped rows, conflicts) is left out: the answer's checks show the same, in full.
    from ..facts import LoaderArgumentError
    from ..run import LoadWarning

    options: dict[str, Any] = {}
    if getattr(args, "columns", None):
        options["columns"] = _column_map(args.columns)
    if getattr(args, "time_unit", None):
        options["time_unit"] = args.time_unit
    if pattern is not None:
        options["step_pattern"] = pattern
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        try:
            return load_run(args.path if args.path == "-" else path, args.format or "auto", **options)
        except LoaderArgumentError:
            if pattern is None:
                raise
            raise _no_step_pattern(pattern) from None


def _no_step_pattern(pattern: str) -> ValueError:
    from ..render.vocabulary import said

    return ValueError(f"{said('step_pattern', pattern, interface_in_use())}: only the nsys and xplane formats take "
                      "a step pattern, and this log is read as another")


def _step_pattern(text: str) -> str:
    """``--step-pattern`` checked: a regular expression (one that is not is one line naming the flag)."""
    import re

    from ..render.vocabulary import said

    try:
        re.compile(text)
    except re.error as exc:
        raise ValueError(f"{said('step_pattern', text, interface_in_use())}: not a regular expression "
                         f"({exc})") from None
    return text


# Flags that exclude each other (argparse groups of `mfu analyze`): a user's one replaces an example's other.
_EXCLUSIVE = (frozenset({"flops_per_sample", "flops_per_token", "flops_per_step", "preset"}),
              frozenset({"n_accelerators", "packages"}))


def with_example(args: argparse.Namespace) -> argparse.Namespace:
    """``--example NAME``: the arguments with the example's log as PATH and its inputs added; a flag
    the user gave wins over the example's. Without ``--example`` a PATH is required. The example
    and the command that prints the same are said on stderr, so what stdout holds is exactly what
    that command prints."""
    name = getattr(args, "example", None)
    if name is None:
        if args.path is None:
            raise ValueError("give a log PATH (or --example for a sample log shipped with the package)")
        return args
    if args.path is not None:
        raise ValueError(f"give a log PATH or --example, not both (got {args.path!r} and --example {name})")
    from ..examples import get

    ex = get(name)
    parser = args.example_parser
    own = vars(parser.parse_args([str(ex.path), *ex.args]))
    given = {dest for dest, value in vars(args).items() if value not in (None, False)}
    merged = dict(vars(args), path=own["path"])
    for dest, value in own.items():
        if value in (None, False) or dest in given or any(dest in g and g & given for g in _EXCLUSIVE):
            continue
        merged[dest] = value
    dest_of = {flag: parser._option_string_actions[flag].dest for flag in ex.args[::2]}  # ex.args: flag, value, ...
    replaced = [f"{flag} {value}" for flag, value in zip(ex.args[::2], ex.args[1::2], strict=True)
                if merged[dest_of[flag]] != own[dest_of[flag]]]
    yours = f" (yours replace {', '.join(replaced)})" if replaced else ""
    print(f"example {ex.name!r}: {ex.summary}; given as {' '.join(ex.args)}{yours}\n"
          f"  {'without yours' if replaced else 'the same as'}: {ex.command()}", file=sys.stderr)
    return argparse.Namespace(**merged)


def _column_map(text: str) -> dict[str, str]:
    """``step:iter,start_s:t0`` -> ``{"step": "iter", "start_s": "t0"}`` (the table format's columns)."""
    pairs = [p.split(":", 1) for p in text.replace(" ", "").split(",") if p]
    bad = [":".join(p) for p in pairs if len(p) != 2 or not p[0] or not p[1]]
    if bad or not pairs:
        flag = "COLUMN_MAP" if interface_in_use() == "make" else "--columns"
        raise ValueError(f"{flag} must be schema:column pairs separated by commas (step:iter,start_s:t0); "
                         f"got {text!r}" + (f" ({bad[0]!r} is not a pair)" if bad else ""))
    return {k: v for k, v in pairs}


def interface_in_use() -> str:
    """The interface whose terms error messages and requests use: ``MFU_INTERFACE`` (``make``
    sets it for ``make report``), else ``cli``."""
    from ..render.vocabulary import INTERFACES

    value = os.environ.get("MFU_INTERFACE", "").strip().lower()
    return value if value in INTERFACES else "cli"


# flag dest -> the input it gives; read as text and parsed here, so a value that is not a number is
# one line in the interface's terms (GPUS=abc: expected a whole number >= 1), not argparse's own
_NUMERIC = {"n_accelerators": "n_accelerators", "packages": "packages", "seq_len": "seq_len",
            "global_batch": "global_batch", "flops_per_sample": "flops_per_sample",
            "flops_per_token": "flops_per_token", "flops_per_step": "flops_per_step",
            "warmup_steps": "warmup_steps", "checkpoint_s": "checkpoint_write_s",
            "checkpoint_every": "checkpoint_every_steps", "mtbf_hours": "mtbf_hours"}


def parse_numbers(args: argparse.Namespace, interface: str) -> argparse.Namespace:
    """The numeric flags of ``mfu analyze`` parsed (``render.vocabulary.parse_value``); a bad one raises InputError."""
    from ..render.vocabulary import parse_value

    values = {dest: None if getattr(args, dest, None) is None
              else parse_value(field, getattr(args, dest), interface=interface)
              for dest, field in _NUMERIC.items()}
    return argparse.Namespace(**{**vars(args), **values})


def apply_inputs(run: Any, args: argparse.Namespace, interface: str) -> Any:
    """The flags of ``mfu analyze`` applied to the run (``mfu_toolkit.inputs.apply_inputs``)."""
    from ..inputs import apply_inputs as apply

    return apply(
        run, interface=interface, accelerator=args.accelerator, dtype=args.dtype,
        n_accelerators=args.n_accelerators, packages=args.packages, per=args.per, preset=args.preset,
        seq_len=args.seq_len, causal=bool(getattr(args, "causal", False)), flops_per_sample=args.flops_per_sample,
        flops_per_token=args.flops_per_token, flops_per_step=args.flops_per_step, global_batch=args.global_batch,
    )


