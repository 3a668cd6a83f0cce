"""``mfu analyze``, ``mfu audit`` and ``mfu simulate``: the analysis layer on the command line.

The main ``mfu`` parser calls :func:`add_parsers`. Each handler returns an exit code: 0 on
success, 2 on a user error, printed as one line ``mfu <cmd>: error: ...``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import warnings
from pathlib import Path
from typing import Any

__all__ = ["add_parsers", "run_analyze", "run_audit", "run_simulate"]


def _error(cmd: str, exc: BaseException | str) -> int:
    text = str(exc) if not isinstance(exc, str) else exc
    one_line = " ".join(part.strip() for part in text.splitlines() if part.strip())
    print(f"mfu {cmd}: error: {one_line}", file=sys.stderr)
    return 2


# --------------------------------------------------------------------------------------------
# analyze


def _load(args: argparse.Namespace) -> Any:
    from ..run import LoadError, read_run

    path = Path(args.path)
    if args.path != "-" and not path.exists():
        raise FileNotFoundError(f"no such file or directory: {str(path)!r}")
    if args.format in (None, "auto") and path.suffix == ".parquet" and path.is_file():
        try:
            return read_run(path)
        except LoadError:
            pass  # a plain Parquet table: let the loaders try
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
    from ..run import LoadWarning

    options: dict[str, Any] = {}
    if getattr(args, "columns", None):
        options["columns"] = _column_map(args.columns)
    if getattr(args, "time_unit", None):
        options["time_unit"] = args.time_unit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return load_run(args.path if args.path == "-" else path, args.format or "auto", **options)


def _column_map(text: str) -> dict[str, str]:
    """``step:iter,start_s:t0`` -> ``{"step": "iter", "start_s": "t0"}`` (the table format's columns)."""
    pairs = [p.split(":", 1) for p in text.replace(" ", "").split(",") if p]
    bad = [":".join(p) for p in pairs if len(p) != 2 or not p[0] or not p[1]]
    if bad or not pairs:
        flag = "COLUMN_MAP" if _interface() == "make" else "--columns"
        raise ValueError(f"{flag} must be schema:column pairs separated by commas (step:iter,start_s:t0); "
                         f"got {text!r}" + (f" ({bad[0]!r} is not a pair)" if bad else ""))
    return {k: v for k, v in pairs}


def _interface() -> str:
    """The interface whose terms error messages and requests use: ``MFU_INTERFACE`` (``make``
    sets it for ``make report``), else ``cli``."""
    from .inputs import INTERFACES

    value = os.environ.get("MFU_INTERFACE", "").strip().lower()
    return value if value in INTERFACES else "cli"


# flag dest -> the input it gives; read as text and parsed here, so a value that is not a number is
# one line in the interface's terms (GPUS=abc: expected a whole number >= 1), not argparse's own
_NUMERIC = {"n_accelerators": "n_accelerators", "packages": "packages", "seq_len": "seq_len",
            "global_batch": "global_batch", "flops_per_sample": "flops_per_sample",
            "flops_per_token": "flops_per_token", "flops_per_step": "flops_per_step",
            "warmup_steps": "warmup_steps", "checkpoint_s": "checkpoint_write_s",
            "checkpoint_every": "checkpoint_every_steps", "mtbf_hours": "mtbf_hours"}


def _parse_numbers(args: argparse.Namespace, interface: str) -> argparse.Namespace:
    """The numeric flags of ``mfu analyze`` parsed (``inputs.parse_value``); a bad one raises InputError."""
    from .inputs import parse_value

    values = {dest: None if getattr(args, dest, None) is None
              else parse_value(field, getattr(args, dest), interface=interface)
              for dest, field in _NUMERIC.items()}
    return argparse.Namespace(**{**vars(args), **values})


def _apply_inputs(run: Any, args: argparse.Namespace, interface: str) -> Any:
    """The flags of ``mfu analyze`` applied to the run (``inputs.apply_inputs``)."""
    from .inputs import apply_inputs

    return apply_inputs(
        run, interface=interface, accelerator=args.accelerator, dtype=args.dtype,
        n_accelerators=args.n_accelerators, packages=args.packages, per=args.per, preset=args.preset,
        seq_len=args.seq_len, causal=bool(getattr(args, "causal", False)), flops_per_sample=args.flops_per_sample,
        flops_per_token=args.flops_per_token, flops_per_step=args.flops_per_step, global_batch=args.global_batch,
    )


def _validate_text(answer: Any) -> str:
    """What ``--validate`` prints: the facts that would be used and what is missing."""
    lines = [f"{answer.log_name}: {'timed steps found' if answer.timed else 'no timed steps'}"]
    lines += [f"  {f['name']} = {f['shown']} (from {f['where']})" for f in answer.facts_shown()] or ["  no facts"]
    lines += [f"  missing: {m}" for m in answer.missing] or ["  missing: nothing"]
    return "\n".join(lines)


def run_analyze(args: argparse.Namespace) -> int:
    """Load a log and print its answer (terminal text, ``--json`` or ``--html``).

    Exit status: 0 success; 1 an MFU above 100 % (inconsistent inputs) or, with ``--strict``, a
    check that warns; 2 a user error (one line on stderr).
    """
    from ..formulas import MFUAbove100Error
    from ..run import LoadError, SchemaError
    from .answer import build_answer
    from .breakdown import account

    interface = _interface()
    try:
        args = _parse_numbers(args, interface)
        run = _apply_inputs(_load(args), args, interface)
        acc = account(run, warmup_steps=args.warmup_steps)  # once: the answer and the report share it
        answer = build_answer(acc, interface=interface,
                              checkpoint_write_s=args.checkpoint_s, checkpoint_every_steps=args.checkpoint_every,
                              mtbf_hours=args.mtbf_hours, report_date=datetime.date.today())
        if args.validate:
            print(_validate_text(answer))
            return 0
        if args.html:
            from ..report import html_report

            html_report(acc, path=args.html, answer=answer)
    except MFUAbove100Error as exc:  # inconsistent inputs, as for `mfu calc`: status 1
        _error("analyze", exc)
        return 1
    except (LoadError, SchemaError, ValueError, TypeError, LookupError, OSError) as exc:
        from .inputs import phrase_error

        return _error("analyze", phrase_error(exc, interface))
    if args.json:
        doc = {"run": repr(run), **answer.to_dict()}
        print(json.dumps(doc, indent=2))
    else:
        print(answer.to_text(width=100))
        if args.html:
            print(f"\nwrote {args.html}")
    if args.strict and answer.warnings:
        print(f"mfu analyze: --strict: {len(answer.warnings)} check(s) warn", file=sys.stderr)
        return 1
    return 0


# --------------------------------------------------------------------------------------------
# audit


def _audit_inputs(args: argparse.Namespace, interface: str) -> dict[str, Any]:
    """The facts ``mfu audit`` applies to every log, checked once (a bad one is a user error)."""
    from .. import hardware
    from .inputs import parse_value

    if args.accelerator:
        hardware.resolve(args.accelerator)  # an unknown name fails here, once, not on every row
    if args.dtype:
        hardware.canonical_dtype(args.dtype)
    return {"accelerator": args.accelerator, "dtype": args.dtype, "preset": args.preset,
            "n_accelerators": None if args.n_accelerators is None
            else parse_value("n_accelerators", args.n_accelerators, interface=interface),
            "seq_len": None if args.seq_len is None else parse_value("seq_len", args.seq_len, interface=interface)}


def run_audit(args: argparse.Namespace) -> int:
    """One row per log: the framework's own TFLOP/s and MFU, the peak they imply, ours, the cause.

    Exit status: 0 every row loads; 1 some do not, or with ``--strict`` a claim that mismatches;
    2 a user error or no log loads.
    """
    from .audit import audit_files, audit_json, audit_text, exit_status, log_files, write_csv
    from .inputs import phrase_error

    interface = _interface()
    try:
        inputs = _audit_inputs(args, interface)
        missing = [p for p in args.paths if not Path(p).exists()]
        if missing:
            raise FileNotFoundError(f"no such file or directory: {missing[0]!r}")
        files, notes = log_files(args.paths, recursive=args.recursive)
        rows = audit_files(files, interface=interface, **inputs)
        if args.csv:
            write_csv(rows, args.csv)
    except (ValueError, TypeError, LookupError, OSError) as exc:
        return _error("audit", phrase_error(exc, interface))
    for note in notes:
        print(f"mfu audit: {note}", file=sys.stderr)
    print(audit_json(rows) if args.json else audit_text(rows, width=100))
    if args.csv:
        print(f"wrote {args.csv}", file=sys.stderr)
    status = exit_status(rows, strict=args.strict)
    if status == 2:
        print("mfu audit: error: " + ("no log loads" if rows else "no log found under the paths given"),
              file=sys.stderr)
    return status


# --------------------------------------------------------------------------------------------
# simulate

# (flag, SimConfig field, type, help)
_SIM_OPTIONS: tuple[tuple[str, str, type, str], ...] = (
    ("--ranks", "n_ranks", int, "number of ranks (accelerators)"),
    ("--steps", "n_steps", int, "training steps"),
    ("--step-time", "step_time_s", float, "ideal step time in seconds"),
    ("--jitter", "jitter", float, "sigma of per-rank lognormal noise"),
    ("--slow-factor", "slow_factor", float, "compute multiplier of --slow-ranks"),
    ("--transient-prob", "transient_prob", float, "chance a (step, rank) is hit by a transient slowdown"),
    ("--transient-factor", "transient_factor", float, "multiplier of a transient slowdown"),
    ("--data-stall-prob", "data_stall_prob", float, "chance a step starts with an input stall"),
    ("--data-stall-s", "data_stall_s", float, "input stall length (s)"),
    ("--warmup-steps", "warmup_steps", int, "slow steps after each (re)start"),
    ("--warmup-factor", "warmup_factor", float, "first step's slowdown, decaying to 1"),
    ("--init-s", "init_s", float, "initialisation time per attempt (s)"),
    ("--eval-every", "eval_every", int, "steps between evaluations (0: none)"),
    ("--eval-s", "eval_s", float, "evaluation time (s)"),
    ("--checkpoint-every", "checkpoint_every", int, "steps between checkpoints (0: none)"),
    ("--checkpoint-s", "checkpoint_s", float, "checkpoint write time (s)"),
    ("--async-stall-s", "async_stall_s", float, "blocking snapshot of an async checkpoint (s)"),
    ("--checkpoint-load-s", "checkpoint_load_s", float, "checkpoint load time on restart (s)"),
    ("--mtbf-s", "mtbf_s", float, "job mean time between failures (s)"),
    ("--restart-s", "restart_s", float, "downtime per failure (s)"),
    ("--global-batch", "samples_per_step", float, "samples per step"),
    ("--seq-len", "seq_len", int, "tokens per sample"),
    ("--peak-flops", "peak_flops_per_accelerator", float, "peak FLOP/s per accelerator"),
    ("--flops-per-step", "model_flops_per_step", float, "model FLOPs per step"),
    ("--target-mfu", "target_mfu", float, "steady MFU used when --flops-per-step is not given"),
    ("--seed", "seed", int, "random seed"),
    ("--name", "name", str, "run name"),
)


def _int_list(text: str) -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers; got {text!r}") from None


def run_simulate(args: argparse.Namespace) -> int:
    """Build a SimConfig from the flags, simulate, and write the Run as Parquet."""
    from ..run import save_run
    from ..simulate import SimConfig, simulate

    kw: dict[str, Any] = {}
    for _flag, field, _t, _h in _SIM_OPTIONS:
        v = getattr(args, field)
        if v is not None:
            kw[field] = v
    if args.slow_ranks is not None:
        kw["slow_ranks"] = args.slow_ranks
    if args.fail_at_steps is not None:
        kw["fail_at_steps"] = args.fail_at_steps
    if args.checkpoint_mode is not None:
        kw["checkpoint_mode"] = args.checkpoint_mode
    if args.job_level:
        kw["per_rank"] = False
    try:
        cfg = SimConfig(**kw)
        if args.dataset:
            return _simulate_dataset(cfg, Path(args.dataset))
        run = simulate(cfg)
        out = Path(args.output)
        save_run(run, out)
    except (ValueError, TypeError, OSError) as exc:
        return _error("simulate", exc)
    inj = run.meta.extra["injected"]
    print(
        f"wrote {out}: {cfg.n_ranks} ranks x {cfg.n_steps} steps, {run.n_attempts} attempt(s), "
        f"{len(run.steps)} step rows, {len(run.events)} events, wall {run.wall_seconds:,.3f} s, "
        f"{inj['failures']} failure(s), lost work {inj['lost_work_s']:,.3f} s"
    )
    return 0


def _simulate_dataset(cfg: Any, out: Path) -> int:
    """Write the simulated run as a Parquet dataset in chunks (any size; progress on stderr)."""
    from ..simulate import write_dataset

    write_dataset(cfg, out, progress=True)
    files = len(list(out.glob("part-*.parquet")))
    print(f"wrote {out}/: {cfg.n_ranks:,} ranks x {cfg.n_steps:,} steps in {files} part file(s) "
          f"and {out / '_mfu_run.parquet'} (events and meta); analyse it with `mfu analyze {out}`")
    return 0


# --------------------------------------------------------------------------------------------


def _add_audit(subparsers: Any) -> None:
    """The ``audit`` subcommand's parser."""
    u = subparsers.add_parser(
        "audit",
        help="referee the MFU each log claims for itself: the peak it implies, ours, the cause",
        description=(
            "One row per log: the framework, the device it states, the TFLOP/s and MFU it prints, the peak "
            "they imply (TFLOP/s / MFU) matched to the registry (sparse peak as dense, another dtype's, "
            "per-package vs per-device, another device's), our MFU with the facts given, ours / theirs and "
            "the cause. A folder means every file in it that a format detects. Exit status: 0 every log "
            "loads; 1 some do not, or with --strict a claim that mismatches; 2 a user error or none loads."
        ),
    )
    u.add_argument("paths", nargs="+", metavar="PATH", help="log files or folders")
    u.add_argument("--recursive", action="store_true", help="also the files in the folders' subfolders")
    u.add_argument("--accelerator", help="accelerator name for every log (from the registry)")
    u.add_argument("--dtype", default=None, help="dtype of the peak for every log (default: the log's, else bf16)")
    u.add_argument("--gpus", "--n-accelerators", dest="n_accelerators",
                   help="framework devices in each job (a world size; the peak is per device)")
    u.add_argument("--preset", help="model preset for the FLOPs (see `mfu flops --list`)")
    u.add_argument("--seq-len", help="tokens per sample, for --preset")
    u.add_argument("--strict", action="store_true", help="exit 1 when any log's claim mismatches ours or the peak")
    u.add_argument("--csv", metavar="PATH", help="also write the table as CSV")
    u.add_argument("--json", action="store_true", help="print a JSON list of row objects instead of the table")
    u.set_defaults(func=run_audit)


def add_parsers(subparsers: Any) -> None:
    """Add the ``analyze``, ``audit`` and ``simulate`` subcommands to an argparse subparsers object."""
    a = subparsers.add_parser(
        "analyze",
        help="the MFU of a training log, where the rest goes, and checks of both",
        description=(
            "Load a training log (or a Run saved as Parquet), then print the answer first (steady-state "
            "and end-to-end MFU with numerator and denominator, the largest losses, the straggler "
            "verdict, checkpoint advice), the checks (the log's own claims, published maxima, facts "
            "given vs stated, the accounting), the facts used and what is missing, then the detail. "
            "Exit status: 0 ok; 1 an MFU above 100%% or, with --strict, a check that warns; 2 a user error."
        ),
    )
    a.add_argument("path", help="log file or folder, a Run .parquet, or - for standard input")
    a.add_argument("--format", default=None, help="log format (default: detect)")
    a.add_argument("--engine", choices=("auto", "pandas", "duckdb", "spark"), default=None,
                   help="for a Parquet dataset (a folder of part files or one large file): reduce its rows in "
                        "memory (pandas), out of core (duckdb) or on Spark (SPARK_REMOTE, else a local "
                        "session); auto: pandas up to 20M rows, duckdb beyond")
    a.add_argument("--memory-limit", metavar="SIZE", default=None,
                   help="for a Parquet dataset read out of core: what the whole process may hold (default 3GB; "
                        "e.g. 8GB, 512MiB); a dataset whose steps cannot be analysed within it is refused with "
                        "the figures")
    a.add_argument("--columns", metavar="SCHEMA:COLUMN,...", default=None,
                   help="format table only: schema:column pairs, e.g. step:iter,start_s:t0,end_s:t1")
    a.add_argument("--time-unit", default=None,
                   help="format table only: unit of the time columns (s, ms, us, ns, min, h, epoch_s, epoch_ms)")
    a.add_argument("--accelerator", help="accelerator name for the peak (from the registry)")
    a.add_argument("--dtype", default=None,
                   help="dtype of the peak (default: the run's, else bf16; with no --accelerator the run's "
                        "accelerator is looked up again)")
    n = a.add_mutually_exclusive_group()
    n.add_argument("--n-accelerators", "--gpus", dest="n_accelerators",
                   help="framework devices in the job (a world size: one per GPU, two per MI250X, four per "
                        "Trainium2 at LNC=2); the peak is taken per device")
    n.add_argument("--packages", help="packages (chips, cards) in the job; the peak is taken per package")
    a.add_argument("--per", choices=("device", "package"), default=None,
                   help="what the job's count (the log's, or --gpus/--packages) counts, hence what the peak is per "
                        "(default: devices, as world sizes count them; packages for MLPerf's system description)")
    g = a.add_mutually_exclusive_group()
    g.add_argument("--flops-per-sample", help="model training FLOPs per sample")
    g.add_argument("--flops-per-token", help="model training FLOPs per token")
    g.add_argument("--flops-per-step", help="model training FLOPs per step")
    g.add_argument("--preset", help="model preset for the FLOPs (see `mfu flops --list`)")
    a.add_argument("--causal", action="store_true",
                   help="with --preset: count the causal mask in attention ((T + 1) / 2 keys per query; off "
                        "by default, as in PaLM Appendix B)")
    a.add_argument("--global-batch", help="samples per step")
    a.add_argument("--seq-len",
                   help="tokens per sample; with --preset the FLOPs are counted at it, else at the log's own "
                        "sequence length, else at the preset's published one (required where it has none)")
    a.add_argument("--warmup-steps", help="override: warm-up steps dropped per attempt")
    a.add_argument("--checkpoint-s", default=None, metavar="S",
                   help="checkpoint write time in seconds, for the interval advice (default: the log's median)")
    a.add_argument("--checkpoint-every", default=None, metavar="N",
                   help="steps between checkpoints, for the interval advice (default: the log's)")
    a.add_argument("--mtbf-hours", default=None, metavar="H",
                   help="the job's mean time between failures in hours (default: observed failures)")
    a.add_argument("--strict", action="store_true", help="exit 1 when any check warns (to gate CI on it)")
    a.add_argument("--validate", action="store_true",
                   help="load the log, apply the inputs, print the facts that would be used and what is "
                        "missing, and exit (0, or 2 with the error)")
    o = a.add_mutually_exclusive_group()
    o.add_argument("--json", action="store_true", help="print JSON instead of tables")
    o.add_argument("--html", metavar="REPORT.html", help="also write an HTML report with figures")
    a.set_defaults(func=run_analyze)

    _add_audit(subparsers)

    s = subparsers.add_parser(
        "simulate",
        help="write a synthetic Run (Parquet) for what-ifs",
        description="Simulate a synchronous training job and write it as a Run Parquet file.",
    )
    dest = s.add_mutually_exclusive_group(required=True)
    dest.add_argument("-o", "--output", help="output .parquet path (the Run, held in memory)")
    dest.add_argument("--dataset", metavar="FOLDER",
                      help="write a Parquet dataset folder instead, in chunks (4,096 ranks x 100,000 steps "
                           "without holding them)")
    for flag, field, typ, hlp in _SIM_OPTIONS:
        s.add_argument(flag, dest=field, type=typ, default=None, help=hlp)
    s.add_argument("--slow-ranks", type=_int_list, default=None, help="comma-separated persistent straggler ranks")
    s.add_argument("--fail-at-steps", type=_int_list, default=None, help="comma-separated steps at which to fail")
    s.add_argument("--checkpoint-mode", choices=("blocking", "async"), default=None, help="checkpoint mode")
    s.add_argument("--job-level", action="store_true", help="one row per step (rank -1) instead of per rank")
    s.set_defaults(func=run_simulate)
