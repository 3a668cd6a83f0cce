"""The ``mfu`` command: a visible table of subcommands, each a module of this package.

``mfu calc`` and ``mfu accelerators`` use only ``formulas`` and ``hardware`` (no pandas), so they
start as fast as a bare script. Each command's module is imported only when that command is run
(or for ``mfu --help``); a module that fails to import is an error, never a command left out.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

TYPE_CHECKING = False  # typing stays unimported on the fast path
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


class CommandInfo:
    """A row of the command table: the module that adds the command's parser (``add_parser``) and
    sets its handler, and the one-line summary."""

    __slots__ = ("module", "summary")

    def __init__(self, module: str, summary: str) -> None:
        self.module, self.summary = module, summary

    def __repr__(self) -> str:
        return f"CommandInfo({self.module!r}, {self.summary!r})"


COMMANDS: dict[str, CommandInfo] = {  # the summary is the command's line in `mfu --help`
    "calc": CommandInfo("mfu_toolkit.cli.calc", "compute MFU (and HFU) from FLOPs, step time, GPU count and peak"),
    "accelerators": CommandInfo("mfu_toolkit.cli.accelerators", "list the peak-FLOPs registry with sources"),
    "flops": CommandInfo("mfu_toolkit.cli.flops", "model FLOPs per token/sample/step of a preset or a TOML config"),
    "analyze": CommandInfo("mfu_toolkit.cli.analyze",
                           "the MFU of a training log, where the rest goes, and checks of both"),
    "audit": CommandInfo("mfu_toolkit.cli.audit",
                         "referee the MFU each log claims for itself: the peak it implies, ours, the cause"),
    "simulate": CommandInfo("mfu_toolkit.cli.simulate", "write a synthetic Run (Parquet) for what-ifs"),
    "cache": CommandInfo("mfu_toolkit.cli.cache", "where cached parses are kept; their size; clear them"),
}

EXIT_OK, EXIT_INCONSISTENT, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """A user error: printed as one line, exit status 2."""


def count_arg(value: str) -> int:
    """An argparse type: a whole number greater than zero (a count of GPUs, tokens, samples)."""
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {value!r}") from None
    if number <= 0:
        raise argparse.ArgumentTypeError(f"value must be greater than zero, got {value!r}")
    return number


class _Formatter(argparse.HelpFormatter):
    """argparse's formatter without its ``shutil`` import (3 ms of start-up on every call); a
    paragraph of a description or epilog whose lines start with two spaces keeps its lines (a
    table), the others are filled to the width."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = text.split("\n\n")
        return "\n\n".join(p if p.startswith("  ") else super(_Formatter, self)._fill_text(p, width, indent)
                             for p in paragraphs)

    def __init__(self, prog: str, **kwargs: Any) -> None:
        if kwargs.get("width") is None:
            try:
                kwargs["width"] = min(os.get_terminal_size().columns, 120) - 2
            except OSError:
                kwargs["width"] = 98
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line (``mfu calc: error: ...``), exit 2."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


class _Commands:
    """The subcommands' argparse action as a command module sees it: each command's help is its
    summary in :data:`COMMANDS`, written once."""

    def __init__(self, sub: Any) -> None:
        self._sub = sub

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        return self._sub.add_parser(name, help=COMMANDS[name].summary, **kwargs)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``mfu`` parser; ``only`` limits the imports to the one subcommand being run."""
    parser = _Parser(prog="mfu", description="Measure and explain Model FLOPs Utilization (MFU).")
    parser.add_argument("--version", action=_Version, nargs=0, help="print the version of mfu_toolkit and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name, info in COMMANDS.items():
        if only is None or only == name:
            importlib.import_module(info.module).add_parser(_Commands(sub))
    return parser


class _Version(argparse.Action):
    """``mfu --version``: the package's version (its metadata), read only when asked for."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: Any, values: Any, option: Any = None) -> None:
        from .. import __version__

        sys.stdout.write(f"mfu_toolkit {__version__}\n")
        parser.exit(0)


def _command_of(argv: Sequence[str]) -> str | None:
    for a in argv:
        if not a.startswith("-"):
            return a
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    cmd = _command_of(argv)
    known = cmd in COMMANDS
    parser = build_parser(only=cmd if known else None)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        print(f"mfu {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        # The reader went away (`mfu analyze log | head`): stop quietly, as other Unix tools do.
        # stdout is pointed at /dev/null so the interpreter's final flush does not fail again.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
