"""``mfu analyze`` and ``mfu simulate``: the analysis layer on the command line.

The main ``mfu`` parser calls :func:`add_parsers`. Each handler returns an exit code: 0 on
success, 2 on a user error, printed as one line ``mfu <cmd>: error: ...``.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_parsers", "run_analyze", "run_simulate"]


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
    # "-" (standard input), /dev/stdin, pipes and FIFOs are read once by load_run.
    return load_run(args.path if args.path == "-" else path, args.format or "auto")


def _apply_meta(run: Any, args: argparse.Namespace) -> Any:
    meta = run.meta
    # --gpus N counts framework devices (as the log's world size does), --packages N packages;
    # --per says what the log's own count is when it is not what the format states.
    per = args.per
    for flag, n, counts in (("--n-accelerators", args.n_accelerators, "device"), ("--packages", args.packages, "package")):
        if n is None:
            continue
        if n < 1:
            raise ValueError(f"{flag} must be an integer >= 1; got {n}")
        if args.per is not None and args.per != counts:
            raise ValueError(f"{flag} counts {counts}s; --per {args.per} contradicts it "
                             f"(use {'--packages' if counts == 'device' else '--gpus'} N instead)")
        meta = meta.replace(n_accelerators=n)
        per = counts
    if args.accelerator:
        meta = meta.with_accelerator(args.accelerator, args.dtype, per=per)
    elif args.dtype_given or (per is not None and per != meta.peak_per):
        if meta.accelerator:  # the run's accelerator, its peak for this dtype and unit
            meta = meta.with_accelerator(meta.accelerator, args.dtype if args.dtype_given else meta.dtype or "bf16",
                                         sparse=bool(meta.peak_sparse), per=per or meta.peak_per)
        elif meta.peak_flops_per_accelerator is not None and args.dtype_given:
            meta = meta.with_dtype(args.dtype)  # raises: a peak that names no accelerator
        elif meta.peak_flops_per_accelerator is not None:
            raise ValueError(
                f"--per {per}: the run's peak ({meta.peak_flops_per_accelerator:.4g} FLOP/s per {meta.peak_per}, "
                f"{meta.peak_source or 'source unknown'}) names no accelerator to look it up per {per} for; "
                "give --accelerator too")
        else:
            meta = meta.replace(peak_per=per or meta.peak_per,
                                dtype=args.dtype if args.dtype_given else meta.dtype)
    if args.global_batch is not None:
        meta = meta.replace(global_batch=args.global_batch)
    if args.seq_len is not None:
        meta = meta.replace(seq_len=args.seq_len)
    # FLOPs given here replace whatever the log carried (all of it, so nothing stale wins)
    cleared = dict(model_flops_per_sample=None, model_flops_per_token=None, model_flops_per_step=None,
                   hardware_flops_per_step=None)
    for flag, field in (("flops_per_sample", "model_flops_per_sample"), ("flops_per_token", "model_flops_per_token"),
                        ("flops_per_step", "model_flops_per_step")):
        v = getattr(args, flag)
        if v is not None:
            if not (math.isfinite(v) and v > 0):
                raise ValueError(f"--{flag.replace('_', '-')} must be a finite number > 0; got {v}")
            meta = meta.replace(**{**cleared, field: v, "model_flops_source": f"command line --{flag.replace('_', '-')}"})
    if args.preset:
        mf, counted = _preset_flops(meta, args)
        changes: dict[str, Any] = {
            **cleared,
            "model_flops_per_sample": float(mf.training_per_sample),
            "model_flops_source": f"preset {args.preset!r}{counted}: {mf.source}"[:300],
        }
        if mf.training_per_token:
            changes["model_flops_per_token"] = float(mf.training_per_token)
        if mf.tokens_per_sample and meta.seq_len is None:
            changes["seq_len"] = int(mf.tokens_per_sample)
        meta = meta.replace(**changes)
    elif getattr(args, "causal", False):
        raise ValueError("--causal applies to the FLOPs count of --preset NAME; give --preset too")
    return run.replace(meta=meta)


def _stated_seq_len(meta: Any) -> tuple[int, str] | None:
    """The first ``seq_len`` fact of the run that is a whole number >= 1, and where it was stated."""
    for f in meta.facts:
        value = f.get("value")
        if f.get("name") != "seq_len" or isinstance(value, bool):
            continue
        try:
            n = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(n) and n >= 1 and n == int(n):
            return int(n), str(f.get("where") or "")
    return None


def _preset_flops(meta: Any, args: argparse.Namespace) -> tuple[Any, str]:
    """``--preset``'s FLOPs for this run and a note of what they were counted at.

    The sequence length is ``--seq-len``, else the run's own (``meta.seq_len``, then a
    ``seq_len`` fact the log states), else the preset's published training length; with none of
    them the error names ``--seq-len``. ``--causal`` counts the causal mask (off by default, as in
    PaLM Appendix B)."""
    from ..flops import get_preset, model_flops

    preset = get_preset(args.preset)
    seq_len, where = args.seq_len, "--seq-len"
    if seq_len is None and hasattr(preset.config, "seq_len"):
        stated = _stated_seq_len(meta)
        if meta.seq_len is not None:
            seq_len, where = int(meta.seq_len), "the run's seq_len"
        elif stated is not None:
            seq_len, where = stated[0], "stated in the log" + (f" at {stated[1]}" if stated[1] else "")
        elif preset.config.seq_len is None:
            raise ValueError(
                f"--preset {preset.name}: its source states no training sequence length and the run "
                "states none (no seq_len in the log); give --seq-len N"
            )
        else:
            where = "published"
    mf = model_flops(preset, seq_len=seq_len, causal=True if getattr(args, "causal", False) else None)
    counted = ""
    if mf.tokens_per_sample:
        counted = f" at seq_len {mf.tokens_per_sample:g} ({where})"
    return mf, f"{counted}; {mf.conventions.summary()}"


def _fmt_table(df: Any, cols: list[str]) -> str:
    def f(v: Any) -> str:
        if isinstance(v, float):
            return "n/a" if math.isnan(v) else f"{v:.6g}"
        return str(v)

    rows = [[f(v) for v in r] for r in df[cols].itertuples(index=False)]
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(cols)]
    line = "  ".join(c.ljust(w) for c, w in zip(cols, widths, strict=True))
    out = [line, "  ".join("-" * w for w in widths)]
    out += ["  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)) for r in rows]
    return "\n".join(out)


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if hasattr(v, "item") and callable(v.item):
        return _jsonable(v.item())
    return v


def run_analyze(args: argparse.Namespace) -> int:
    """Load a log, then print the MFU summary, the scorecard and the waterfall (or JSON/HTML)."""
    from ..analysis.breakdown import account, breakdown, mfu_summary
    from ..analysis.scorecard import scorecard
    from ..formulas import MFUAbove100Error
    from ..run import LoadError, SchemaError

    try:
        run = _apply_meta(_load(args), args)
        acc = account(run, warmup_steps=args.warmup_steps)
        summ = mfu_summary(acc)
        bd = breakdown(acc)
        sc = scorecard(acc)
        if args.html:
            from ..report import html_report

            html_report(acc, path=args.html)
    except MFUAbove100Error as exc:  # inconsistent inputs, as for `mfu calc`: status 1
        _error("analyze", exc)
        return 1
    except (LoadError, SchemaError, ValueError, TypeError, LookupError, OSError) as exc:
        return _error("analyze", exc)
    if args.json:
        doc = {
            "run": repr(run),
            "summary": _jsonable(summ.to_dict()),
            "breakdown": _jsonable(bd.to_dict(orient="records")),
            "scorecard": _jsonable(sc.to_dict(orient="records")),
            "window": _jsonable(acc.window.summary()),
        }
        print(json.dumps(doc, indent=2))
        return 0
    print(repr(run))
    print("\n".join(summ.lines()))
    print(f"Steady-state window: {acc.window.n_steps} steps ({acc.window.reason})")
    print("\nScorecard")
    print(_fmt_table(sc, ["family", "metric", "value", "unit", "note"]))
    print("\nWaterfall (each row removes its category and those above it)")
    print(_fmt_table(bd, ["category", "seconds", "share", "efficiency_after", "mfu_after"]))
    if args.html:
        print(f"\nwrote {args.html}")
    return 0


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


# --------------------------------------------------------------------------------------------


class _DtypeAction(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.dtype_given = True


def add_parsers(subparsers: Any) -> None:
    """Add the ``analyze`` and ``simulate`` subcommands to an argparse subparsers object."""
    a = subparsers.add_parser(
        "analyze",
        help="scorecard and steady-state → end-to-end waterfall of a training log",
        description=(
            "Load a training log (or a Run saved as Parquet), then print the MFU summary, the "
            "scorecard and the waterfall of where the wall time went."
        ),
    )
    a.add_argument("path", help="log file or folder, a Run .parquet, or - for standard input")
    a.add_argument("--format", default=None, help="log format (default: detect)")
    a.add_argument("--accelerator", help="accelerator name for the peak (from the registry)")
    a.add_argument("--dtype", default="bf16", action=_DtypeAction, help="dtype of the peak (default bf16)")
    n = a.add_mutually_exclusive_group()
    n.add_argument("--n-accelerators", "--gpus", dest="n_accelerators", type=int,
                   help="framework devices in the job (a world size: one per GPU, two per MI250X, four per "
                        "Trainium2 at LNC=2); the peak is taken per device")
    n.add_argument("--packages", type=int, help="packages (chips, cards) in the job; the peak is taken per package")
    a.add_argument("--per", choices=("device", "package"), default=None,
                   help="what the job's count (the log's, or --gpus/--packages) counts, hence what the peak is per "
                        "(default: devices, as world sizes count them; packages for MLPerf's system description)")
    g = a.add_mutually_exclusive_group()
    g.add_argument("--flops-per-sample", type=float, help="model training FLOPs per sample")
    g.add_argument("--flops-per-token", type=float, help="model training FLOPs per token")
    g.add_argument("--flops-per-step", type=float, help="model training FLOPs per step")
    g.add_argument("--preset", help="model preset for the FLOPs (see `mfu flops --list`)")
    a.add_argument("--causal", action="store_true",
                   help="with --preset: count the causal mask in attention ((T + 1) / 2 keys per query; off "
                        "by default, as in PaLM Appendix B)")
    a.add_argument("--global-batch", type=float, help="samples per step")
    a.add_argument("--seq-len", type=int,
                   help="tokens per sample; with --preset the FLOPs are counted at it, else at the log's own "
                        "sequence length, else at the preset's published one (required where it has none)")
    a.add_argument("--warmup-steps", type=int, help="override: warm-up steps dropped per attempt")
    o = a.add_mutually_exclusive_group()
    o.add_argument("--json", action="store_true", help="print JSON instead of tables")
    o.add_argument("--html", metavar="REPORT.html", help="also write an HTML report with figures")
    a.set_defaults(func=run_analyze, dtype_given=False)

    s = subparsers.add_parser(
        "simulate",
        help="write a synthetic Run (Parquet) for what-ifs",
        description="Simulate a synchronous training job and write it as a Run Parquet file.",
    )
    s.add_argument("-o", "--output", required=True, help="output .parquet path")
    for flag, field, typ, hlp in _SIM_OPTIONS:
        s.add_argument(flag, dest=field, type=typ, default=None, help=hlp)
    s.add_argument("--slow-ranks", type=_int_list, default=None, help="comma-separated persistent straggler ranks")
    s.add_argument("--fail-at-steps", type=_int_list, default=None, help="comma-separated steps at which to fail")
    s.add_argument("--checkpoint-mode", choices=("blocking", "async"), default=None, help="checkpoint mode")
    s.add_argument("--job-level", action="store_true", help="one row per step (rank -1) instead of per rank")
    s.set_defaults(func=run_simulate)
