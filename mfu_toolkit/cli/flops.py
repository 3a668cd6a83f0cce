"""``mfu flops``: print a model's FLOPs breakdown, totals and the conventions behind them.

The main ``mfu`` command calls :func:`add_parser`; nothing here imports pandas.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from typing import Any

from . import EXIT_OK, EXIT_USAGE, count_arg

__all__ = ["add_parser", "run", "format_report"]

_PREFIXES = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def add_parser(subparsers: Any) -> None:
    """Add the ``flops`` subcommand to an argparse ``subparsers`` object."""
    from ..flops.conventions import convention_names
    from ..flops.transformer import RECOMPUTE_MODES

    p = subparsers.add_parser(
        "flops",
        description=(
            "Print the FLOPs breakdown of a model: forward FLOPs by component, training (model) "
            "FLOPs = 3 x forward, hardware FLOPs with recomputation, parameter counts, and the "
            "counting conventions used."
        ),
    )
    p.add_argument("--preset", metavar="NAME", help="a published model (see --list)")
    p.add_argument("--config", metavar="FILE", help="a TOML file with a [model] table")
    p.add_argument("--list", action="store_true", help="list the presets and exit")
    p.add_argument(
        "--seq-len",
        type=count_arg,
        metavar="N",
        help="training sequence length (tokens); required for presets that publish none",
    )
    p.add_argument("--batch", type=count_arg, metavar="N", help="samples (sequences) per step")
    p.add_argument(
        "--causal",
        action="store_true",
        help="count the causal mask: (T + 1) / 2 keys per query on average (off by default, "
        "every query attends to all T keys as in PaLM Appendix B)",
    )
    p.add_argument(
        "--no-attention", action="store_true", help="leave out the attention score/value products"
    )
    p.add_argument(
        "--recompute",
        choices=RECOMPUTE_MODES,
        default="none",
        help="activation recomputation; changes hardware FLOPs (HFU) only: selective re-runs "
        "the attention products (Korthikanti et al. 2022), selective-eq8 adds 3 x them (that "
        "paper's eq. 8), full re-runs the layers but not the logits (Megatron)",
    )
    p.add_argument(
        "--convention",
        choices=convention_names(),
        default="ours",
        help="count as a framework counts (to reproduce the TFLOP/s or MFU it prints); the "
        "report lists every difference from ours as a named line",
    )
    p.add_argument(
        "--padded-vocab-size",
        type=count_arg,
        metavar="N",
        help="Megatron's padded vocabulary (with --convention megatron/megatron-2024/nemo)",
    )
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.set_defaults(func=run)


def _si(value: float | None, unit: str = "") -> str:
    """``3.278 T`` style: four significant digits and an SI prefix."""
    if value is None:
        return "-"
    for scale, prefix in _PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}".rstrip()
    return f"{value:.4g} {unit}".rstrip()


def _row_format(widths: list[int]) -> str:
    """First column left-aligned, the rest right-aligned."""
    return "  ".join([f"{{:<{widths[0]}}}"] + [f"{{:>{w}}}" for w in widths[1:]])


def format_report(result: Any) -> str:
    """The readable report ``mfu flops`` prints for a ``ModelFlops``."""
    lines = _heading_lines(result)
    lines += _breakdown_lines(result)
    lines += _totals_lines(result)
    lines += _parameter_lines(result)
    lines.extend(_difference_lines(result))
    return "\n".join(lines)


def _heading_lines(result: Any) -> list[str]:
    """Model, source and shape (sequence length, batch), then a blank line."""
    lines = [f"Model: {result.name} ({result.kind})", f"Source: {result.source}"]
    shape = f"batch {result.batch} sample(s) per step"
    if result.tokens_per_sample is not None:
        shape = f"sequence length {result.tokens_per_sample:g}, " + shape
    lines.append(shape.capitalize())
    lines.append("")
    return lines


def _breakdown_lines(result: Any) -> list[str]:
    """The forward FLOPs by component table, then a blank line."""
    per_token = result.tokens_per_sample is not None
    header = ["component", "FLOPs/token" if per_token else "", "FLOPs/sample", "share"]
    rows = []
    for r in result.breakdown_records():
        rows.append(
            [
                r["component"],
                _si(r["forward_flops_per_token"]) if per_token else "",
                _si(r["forward_flops_per_sample"]),
                f"{100 * r['share']:.1f}%",
            ]
        )
    rows.append(
        [
            "forward total",
            _si(result.forward_per_token) if per_token else "",
            _si(result.forward_per_sample),
            "100.0%",
        ]
    )
    if not per_token:
        header = [h for i, h in enumerate(header) if i != 1]
        rows = [[c for i, c in enumerate(row) if i != 1] for row in rows]
    widths = [max(len(str(x[i])) for x in [header, *rows]) for i in range(len(header))]
    fmt = _row_format(widths)
    lines = [
        "Forward FLOPs by component",
        fmt.format(*header),
        fmt.format(*("-" * w for w in widths)),
    ]
    lines.extend(fmt.format(*row) for row in rows)
    lines.append("")
    return lines


def _totals_lines(result: Any) -> list[str]:
    """The forward, training and hardware totals per token, sample and step, then a blank line."""
    per_token = result.tokens_per_sample is not None
    t = result.totals()
    recompute = result.conventions.recompute
    tot_rows = [
        ["forward", t["forward_per_token"], t["forward_per_sample"], t["forward_per_step"]],
        [
            "training (model FLOPs)",
            t["training_per_token"],
            t["training_per_sample"],
            t["training_per_step"],
        ],
        [
            f"hardware (recompute={recompute})",
            t["hardware_per_token"],
            t["hardware_per_sample"],
            t["hardware_per_step"],
        ],
    ]
    head = ["totals", "per token", "per sample", "per step"]
    cells = [[r[0], *(_si(v, "FLOP") for v in r[1:])] for r in tot_rows]
    if not per_token:
        head = [head[0], *head[2:]]
        cells = [[c[0], *c[2:]] for c in cells]
    w = [max(len(x[i]) for x in [head, *cells]) for i in range(len(head))]
    fmt = _row_format(w)
    lines = [fmt.format(*head)]
    lines.extend(fmt.format(*c) for c in cells)
    lines.append("")
    return lines


def _parameter_lines(result: Any) -> list[str]:
    """Parameter counts, embedding bytes (recommendation models) and the conventions list."""
    p = result.params
    lines = [
        f"Parameters: total {p.total:,}, active {p.active:,}, "
        f"non-embedding {p.non_embedding:,}, embedding {p.embedding:,}"
        + (f"; MTP modules {p.mtp:,} more (trained, outside the total)" if p.mtp else "")
    ]
    if result.embedding_bytes_per_sample is not None:
        lines.append(
            f"Embedding bytes read per sample: {_si(result.embedding_bytes_per_sample, 'B')}"
        )
    lines.append("Conventions:")
    lines.extend(f"  - {c}" for c in result.conventions.describe())
    return lines


def _difference_lines(result: Any) -> list[str]:
    """The named lines from our count to the framework's (empty under ours)."""
    if getattr(result, "convention", "ours") == "ours":
        return []
    per_token = result.tokens_per_sample is not None
    ours = result.ours_training_per_sample / (result.tokens_per_sample if per_token else 1)
    unit = "token" if per_token else "sample"
    out = [
        "",
        f"Differences from ours (training FLOPs per {unit}), convention {result.convention}:",
        f"  {'ours':<26} {_si(ours, 'FLOP'):>14}",
    ]
    row = "  {:<26} {:>14}  {}"

    def signed(value: float) -> str:
        return ("+" if value >= 0 else "-") + _si(abs(value), "FLOP")

    for d in result.differences:
        out.append(
            row.format(
                d.name, signed(d.flops_per_token if per_token else d.flops_per_sample), d.why
            )
        )
    out.append(row.format(result.convention, _si(result.training_per_unit, "FLOP"), "").rstrip())
    if result.hardware_differences and result.hardware_differences != result.differences:
        out.append(f"Hardware FLOPs per {unit} (HFU), from ours with recomputation:")
        for d in result.hardware_differences:
            value = d.flops_per_token if per_token else d.flops_per_sample
            out.append(row.format(d.name, signed(value), d.why))
        out.append(
            row.format(result.convention, _si(result.hardware_per_unit, "FLOP"), "").rstrip()
        )
    return out


def _error(message: str) -> int:
    print(f"mfu flops: error: {' '.join(str(message).split())}", file=sys.stderr)
    return EXIT_USAGE


def _list_presets() -> str:
    from ..flops.presets import PRESETS

    width = max(len(n) for n in PRESETS)
    kind_w = max(len(p.kind) for p in PRESETS.values())
    return "\n".join(
        f"{p.name:<{width}}  {p.kind:<{kind_w}}  {p.description}" for p in PRESETS.values()
    )


def run(args: argparse.Namespace) -> int:
    """Handle ``mfu flops``; returns the exit code (2 for a user error)."""
    from ..flops import load_model_config, model_flops, resolve_model
    from ..flops.transformer import FlopsConfigError

    if getattr(args, "list", False):
        print(_list_presets())
        return EXIT_OK
    if bool(args.preset) == bool(args.config):
        return _error(
            "give exactly one of --preset NAME or --config FILE "
            "(see `mfu flops --list` for the presets)"
        )
    try:
        if args.config:
            config, source = load_model_config(args.config), f"config file {args.config}"
        else:
            config, source = resolve_model(args.preset)
        result = model_flops(
            config,
            seq_len=args.seq_len,
            batch=args.batch,
            causal=True if args.causal else None,
            recompute=args.recompute,
            include_attention=not args.no_attention,
            convention=args.convention,
            padded_vocab_size=args.padded_vocab_size,
        )
    except (FlopsConfigError, OSError) as exc:  # a request for an input is said with the flags
        from ..render.vocabulary import phrase_error

        return _error(phrase_error(exc, "cli"))
    result = dataclasses.replace(result, source=source)
    if args.json:
        print(json.dumps(result.to_dict(), indent=2))
    else:
        print(format_report(result))
    return EXIT_OK
