"""``mfu analyze``: a log's answer (terminal text, ``--json`` or ``--html``).

Each handler returns an exit code: 0 on success, 2 on a user error, printed as one line
``mfu analyze: error: ...``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import sys
from typing import Any

from .common import apply_inputs, error, interface_in_use, load, parse_numbers, with_example


def _validate_text(answer: Any, interface: str) -> str:
    """What ``--validate`` prints: the facts that would be used and what is missing."""
    from ..render import facts_shown
    from ..render.spoken import missing_text

    lines = [f"{answer.log_name}: {'timed steps found' if answer.timed else 'no timed steps'}"]
    shown = facts_shown(answer, interface=interface)
    lines += [f"  {f['name']} = {f['shown']} (from {f['where']})" for f in shown] or ["  no facts"]
    lines += [f"  missing: {missing_text(m, interface)}" for m in answer.missing] or ["  missing: nothing"]
    return "\n".join(lines)


def run_analyze(args: argparse.Namespace) -> int:
    """Load a log and print its answer (terminal text, ``--json`` or ``--html``).

    Exit status: 0 success; 1 an MFU above 100 % (inconsistent inputs) or, with ``--strict``, a
    check that warns; 2 a user error (one line on stderr).
    """
    from ..analysis.accounting import account
    from ..analysis.answer import build_answer
    from ..formulas import MFUAbove100Error
    from ..inputs import check_links, check_sharding
    from ..render import answer_dict, answer_text
    from ..run import LoadError, SchemaError

    interface = interface_in_use()
    if args.examples or args.example == "list":
        from ..examples import listing

        print(listing())
        return 0
    try:
        args = with_example(args)
        args = parse_numbers(args, interface)
        link, nic = check_links(link=args.link, nic=args.nic, interface=interface)  # before the log is read
        sharding = check_sharding(args.sharding, interface=interface)
        run = apply_inputs(load(args), args, interface)
        # once: the answer and the report share it
        acc = account(run, warmup_steps=args.warmup_steps, link=link, nic=nic, sharding=sharding)
        answer = build_answer(acc, checkpoint_write_s=args.checkpoint_s, checkpoint_every_steps=args.checkpoint_every,
                              mtbf_hours=args.mtbf_hours, report_date=datetime.date.today())
        if args.validate:
            print(_validate_text(answer, interface))
            return 0
        if args.html:
            from ..report import html_report

            html_report(acc, path=args.html, answer=answer, interface=interface)
    except MFUAbove100Error as exc:  # inconsistent inputs, as for `mfu calc`: status 1
        error("analyze", exc)
        return 1
    except (LoadError, SchemaError, ValueError, TypeError, LookupError, OSError) as exc:
        from ..render.vocabulary import phrase_error

        return error("analyze", phrase_error(exc, interface))
    if args.json:
        doc = {"run": repr(run), **answer_dict(answer, interface=interface)}
        print(json.dumps(doc, indent=2))
    else:
        print(answer_text(answer, interface=interface, width=100))
        if args.html:
            print(f"\nwrote {args.html}")
    if args.strict and answer.warnings:
        print(f"mfu analyze: --strict: {len(answer.warnings)} check(s) warn", file=sys.stderr)
        return 1
    return 0


def add_parser(subparsers: Any) -> None:
    """Add the ``analyze`` subcommand to an argparse subparsers object."""
    from ..examples import DEFAULT

    a = subparsers.add_parser(
        "analyze",
        description=(
            "Load a training log (or a Run saved as Parquet), then print the answer first (steady-state "
            "and end-to-end MFU with numerator and denominator, the largest losses, the straggler "
            "verdict, checkpoint advice), the checks (the log's own claims, published maxima, facts "
            "given vs stated, the accounting), the facts used and what is missing, then the detail. "
            "Exit status: 0 ok; 1 an MFU above 100%% or, with --strict, a check that warns; 2 a user error."
        ),
        epilog=_formats_epilog(),
    )
    a.add_argument("path", nargs="?", help="log file or folder, a Run .parquet, or - for standard input")
    a.add_argument("--example", nargs="?", const=DEFAULT, metavar="NAME",
                   help="instead of PATH, a sample log shipped with the package, analysed with its own inputs "
                        f"(without NAME: {DEFAULT}; `--example list` lists them); prints what `mfu analyze "
                        "PATH INPUTS` prints on its file, and names both on stderr")
    a.add_argument("--examples", action="store_true", help="list the sample logs --example takes, and exit")
    _reading_args(a)
    _fact_args(a)
    _advice_and_output_args(a)
    a.set_defaults(func=run_analyze, example_parser=a)


def _formats_epilog() -> str:
    """The formats --format takes, one line each from the registry (detection order)."""
    from ..io.detect import REGISTRY

    width = max(map(len, REGISTRY))
    rows = "\n".join(f"  {r.name:<{width}}  {r.summary}" for r in REGISTRY.values())
    return f"formats (--format NAME; default: detected from the file):\n\n{rows}".replace("%", "%%")


def _reading_args(a: Any) -> None:
    """How the log is read: format, engine, memory, a generic table's columns and unit."""
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
    a.add_argument("--step-pattern", metavar="REGEX", default=None,
                   help="formats nsys and xplane only: a regular expression the whole name of a range (Nsight "
                        "NVTX range, XPlane host event) must match to be a step; its first group, if any, is the "
                        "step number (nsys default: ProfilerStep#(\\d+))")


def _fact_args(a: Any) -> None:
    """The facts a user may give: accelerator, dtype, counts, model FLOPs, batch and length."""
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
    a.add_argument("--link", metavar="NAME", default=None,
                   help="intra-node link collectives inside one node are compared with (a name of "
                        "mfu_toolkit/interconnect.csv, e.g. NVLink4; default: the accelerator's own)")
    a.add_argument("--sharding", default=None, metavar="table_wise|column_wise|data_parallel",
                   help="how a recommendation model's embedding tables are split over the ranks (sets its "
                        "all-to-all bytes per step; data_parallel: replicated, nothing crosses)")
    a.add_argument("--nic", metavar="NAME", default=None,
                   help="NIC port rate collectives spanning nodes are compared with (a name of "
                        "mfu_toolkit/interconnect.csv, e.g. NDR or 400GbE; one port per rank assumed)")
    a.add_argument("--seq-len",
                   help="tokens per sample; with --preset the FLOPs are counted at it, else at the log's own "
                        "sequence length, else at the preset's published one (required where it has none)")


def _advice_and_output_args(a: Any) -> None:
    """The window override, the checkpoint advice's inputs, and what is printed or written."""
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
