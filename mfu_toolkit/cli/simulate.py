"""``mfu simulate``: write a synthetic Run (Parquet), or a Parquet dataset in chunks."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import error

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


# SimConfig fields set by flags outside _SIM_OPTIONS
_OTHER_FLAGS = {"slow_ranks": "--slow-ranks", "fail_at_steps": "--fail-at-steps",
                "checkpoint_mode": "--checkpoint-mode"}


def _flag(field: str) -> str | None:
    return next((flag for flag, f, _t, _h in _SIM_OPTIONS if f == field), _OTHER_FLAGS.get(field))


def _said(exc: BaseException) -> str:
    """A SimConfig error in the command's terms: the flag as typed, what it expects; the job that failures
    keep from finishing names the flags that set the failure rate and the checkpoint interval."""
    field, value = getattr(exc, "field", None), getattr(exc, "value", None)
    if field == "max_attempts":
        return (f"the job did not finish within {value} attempts: failures come too often for its checkpoints "
                "(raise --mtbf-s, or lower --checkpoint-every)")
    flag = _flag(field) if field else None
    if flag is None or not getattr(exc, "expected", None):
        return str(exc)
    if isinstance(value, (tuple, list)):  # a list flag: its items as typed
        return f"{flag} {','.join(map(str, value))}: expected comma-separated {exc.expected}"
    return f"{flag} {value}: expected {exc.expected}"


def run_simulate(args: argparse.Namespace) -> int:
    """Build a SimConfig from the flags, simulate, and write the Run as Parquet."""
    from ..run import save_run
    from ..scenarios.simulate import SimConfig, simulate

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
        return error("simulate", _said(exc))
    inj = run.meta.extra["injected"]
    print(
        f"wrote {out}: {cfg.n_ranks} ranks x {cfg.n_steps} steps, {run.n_attempts} attempt(s), "
        f"{len(run.steps)} step rows, {len(run.events)} events, wall {run.wall_seconds:,.3f} s, "
        f"{inj['failures']} failure(s), lost work {inj['lost_work_s']:,.3f} s"
    )
    return 0


def _simulate_dataset(cfg: Any, out: Path) -> int:
    """Write the simulated run as a Parquet dataset in chunks (any size; progress on stderr)."""
    from ..scenarios.simulate import write_dataset

    write_dataset(cfg, out, progress=True)
    files = len(list(out.glob("part-*.parquet")))
    print(f"wrote {out}/: {cfg.n_ranks:,} ranks x {cfg.n_steps:,} steps in {files} part file(s) "
          f"and {out / '_mfu_run.parquet'} (events and meta); analyse it with `mfu analyze {out}`")
    return 0


def add_parser(subparsers: Any) -> None:
    """Add the ``simulate`` subcommand to an argparse subparsers object."""
    s = subparsers.add_parser(
        "simulate",
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
