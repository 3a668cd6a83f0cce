"""``mfu audit``: referee the MFU each log claims for itself, one row per log."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import error, interface_in_use


def _audit_inputs(args: argparse.Namespace, interface: str) -> dict[str, Any]:
    """The facts ``mfu audit`` applies to every log, checked once (a bad one is a user error)."""
    from .. import hardware
    from ..render.vocabulary import parse_value

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
    from ..audit import (
        audit_files,
        audit_json,
        audit_text,
        exit_status,
        log_files,
        write_csv,
    )
    from ..render.vocabulary import phrase_error

    interface = interface_in_use()
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
        return error("audit", phrase_error(exc, interface))
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


def add_parser(subparsers: Any) -> None:
    """The ``audit`` subcommand's parser."""
    u = subparsers.add_parser(
        "audit",
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

