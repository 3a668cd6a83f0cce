"""Synthetic training runs for what-ifs, in the same schema as a loaded log.

:func:`simulate` lays out a synchronous data-parallel job on a timeline, vectorised over ranks
and steps with numpy. Each attempt: ``init`` → (``checkpoint_load`` when resuming from a
checkpoint) → steps. Every step starts on all ranks together; rank ``r`` spends an input wait
(job-wide, in ``data_wait_s``) and then its own compute time ``c[k, r]`` (``compute_s``); its row
ends when *it* finishes, and the next step starts when the slowest rank has finished, plus any
evaluation or checkpoint after the step. Compute time is::

    c[k, r] = step_time_s × warm-up factor(k) × lognormal(mean 1, sigma = jitter)
              × slow_factor (persistent stragglers) × transient_factor (with transient_prob)

Failures come from an exponential clock with mean ``mtbf_s`` (running time of an attempt) and/or
strike at chosen steps (``fail_at_steps``, first execution only). A failure ends the attempt: the
step in progress is recorded with ``end_s`` at the failure instant (it is lost work, like the
completed steps after the last durable checkpoint, which the next attempt redoes); a ``failure``
event covers the ``restart_s`` of downtime until the next attempt's first event. Asynchronous
checkpoints block for ``async_stall_s`` (a ``checkpoint_save`` event) and write in the background
for ``checkpoint_s`` (an event whose detail says ``background``); they become durable only when
the write ends. ``meta.extra['injected']`` records the ground truth the analyses must recover.

Deterministic: the same :class:`SimConfig` (with its ``seed``) always gives the same Run.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import EVENT_COLUMNS, LoadReport, Run, RunMeta, make_events

__all__ = ["SimConfig", "SimConfigError", "simulate", "write_dataset", "CHECKPOINT_MODES"]

CHECKPOINT_MODES = ("blocking", "async")
H100_SXM_BF16_DENSE = 989.4e12  # FLOP/s; NVIDIA H100 datasheet (dense BF16 Tensor Core, SXM)


class SimConfigError(ValueError):
    """An invalid simulation parameter; the message names it, the allowed values and the value.

    ``field``, ``value`` and ``expected`` say the same as data, so a front end names its own spelling of
    the field (``mfu simulate --ranks 0: expected an integer >= 1``); a job that failures keep from
    finishing has ``field="max_attempts"`` and ``value`` the attempts it was given."""

    def __init__(self, message: str, *, field: str | None = None, value: Any = None,
                 expected: str | None = None) -> None:
        super().__init__(message)
        self.field, self.value, self.expected = field, value, expected


def _fail(name: str, allowed: str, value: Any) -> SimConfigError:
    return SimConfigError(f"SimConfig.{name} must be {allowed}; got {value!r}", field=name, value=value,
                          expected=allowed)


@dataclass(frozen=True)
class SimConfig:
    """Parameters of a synthetic run (all times in seconds). Validated on construction."""

    n_ranks: int = 64
    n_steps: int = 200
    step_time_s: float = 1.0
    jitter: float = 0.0  # sigma of the per-(step, rank) lognormal factor (mean 1)
    slow_ranks: tuple[int, ...] = ()
    slow_factor: float = 1.0  # persistent stragglers: compute multiplier for slow_ranks
    transient_prob: float = 0.0  # chance a (step, rank) is hit by a transient slowdown
    transient_factor: float = 2.0
    data_stall_prob: float = 0.0  # chance a step starts with a job-wide input stall
    data_stall_s: float = 0.0
    warmup_steps: int = 0  # steps after each (re)start that run slower
    warmup_factor: float = 1.0  # first step's multiplier, decaying linearly to 1
    init_s: float = 0.0  # per attempt
    eval_every: int = 0  # 0: no evaluation
    eval_s: float = 0.0
    checkpoint_every: int = 0  # 0: no checkpoints
    checkpoint_s: float = 0.0  # write time
    checkpoint_mode: str = "blocking"
    async_stall_s: float = 0.0  # blocking snapshot of an async checkpoint
    checkpoint_load_s: float = 0.0
    mtbf_s: float | None = None  # job-level mean time between failures (running time)
    fail_at_steps: tuple[int, ...] = ()
    fail_fraction: float = 0.5  # how far into a chosen step the failure strikes
    restart_s: float = 0.0  # downtime from a failure to the next attempt's first event
    samples_per_step: float = 1024.0  # global batch
    seq_len: int | None = None
    accelerator: str = "H100 SXM"
    dtype: str = "bf16"
    peak_flops_per_accelerator: float = H100_SXM_BF16_DENSE
    model_flops_per_step: float | None = None  # default: target_mfu at step_time_s
    target_mfu: float = 0.4
    per_rank: bool = True  # False: one job-level row per step (rank -1)
    max_attempts: int = 1000
    seed: int = 0
    name: str = "simulated"

    def __post_init__(self) -> None:
        def integer(name: str, lo: int, hi: int | None = None) -> None:
            v = getattr(self, name)
            ok = isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo and (hi is None or v <= hi)
            if not ok:
                raise _fail(name, f"an integer >= {lo}" + (f" and <= {hi}" if hi is not None else ""), v)

        def number(name: str, lo: float, *, strict: bool = False, hi: float | None = None) -> None:
            v = getattr(self, name)
            ok = isinstance(v, (int, float, np.number)) and not isinstance(v, bool) and math.isfinite(v)
            ok = ok and (v > lo if strict else v >= lo) and (hi is None or v <= hi)
            if not ok:
                rng = f"{'>' if strict else '>='} {lo}" + (f" and <= {hi}" if hi is not None else "")
                raise _fail(name, f"a finite number {rng}", v)

        integer("n_ranks", 1)
        integer("n_steps", 1)
        number("step_time_s", 0.0, strict=True)
        number("jitter", 0.0, hi=3.0)
        number("slow_factor", 1.0)
        number("transient_prob", 0.0, hi=1.0)
        number("transient_factor", 1.0)
        number("data_stall_prob", 0.0, hi=1.0)
        number("data_stall_s", 0.0)
        integer("warmup_steps", 0)
        number("warmup_factor", 1.0)
        number("init_s", 0.0)
        integer("eval_every", 0)
        number("eval_s", 0.0)
        integer("checkpoint_every", 0)
        number("checkpoint_s", 0.0)
        if self.checkpoint_mode not in CHECKPOINT_MODES:
            raise _fail("checkpoint_mode", f"one of {', '.join(CHECKPOINT_MODES)}", self.checkpoint_mode)
        number("async_stall_s", 0.0)
        number("checkpoint_load_s", 0.0)
        if self.mtbf_s is not None:
            number("mtbf_s", 0.0, strict=True)
        number("fail_fraction", 0.0, hi=1.0)
        number("restart_s", 0.0)
        number("samples_per_step", 0.0, strict=True)
        if self.seq_len is not None:
            integer("seq_len", 1)
        number("peak_flops_per_accelerator", 0.0, strict=True)
        if self.model_flops_per_step is not None:
            number("model_flops_per_step", 0.0, strict=True)
        number("target_mfu", 0.0, strict=True, hi=1.0)
        integer("max_attempts", 1)
        integer("seed", 0)
        if not isinstance(self.per_rank, bool):
            raise _fail("per_rank", "True or False", self.per_rank)
        for name, hi in (("slow_ranks", self.n_ranks - 1), ("fail_at_steps", self.n_steps)):
            v = getattr(self, name)
            lo = 0 if name == "slow_ranks" else 1
            if not isinstance(v, (tuple, list)) or not all(
                isinstance(x, (int, np.integer)) and not isinstance(x, bool) and lo <= x <= hi for x in v
            ):
                each = f"integers in [{lo}, {hi}]"
                raise SimConfigError(f"SimConfig.{name} must be a tuple of {each}; got {v!r}", field=name, value=v,
                                     expected=each)
            object.__setattr__(self, name, tuple(sorted({int(x) for x in v})))

    def replace(self, **changes: Any) -> SimConfig:
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["slow_ranks"] = list(self.slow_ranks)
        d["fail_at_steps"] = list(self.fail_at_steps)
        return d

    @property
    def flops_per_step(self) -> float:
        """Model FLOPs per step: given, or the ``target_mfu`` at ``step_time_s``."""
        if self.model_flops_per_step is not None:
            return float(self.model_flops_per_step)
        return self.target_mfu * self.n_ranks * self.peak_flops_per_accelerator * self.step_time_s


class _Events:
    def __init__(self) -> None:
        self.rows: list[tuple[str, float, float, int, str]] = []

    def add(self, kind: str, start: float, end: float, attempt: int, detail: str = "") -> None:
        self.rows.append((kind, float(start), float(end), int(attempt), detail))

    def frame(self) -> pd.DataFrame:
        if not self.rows:
            return make_events(None)
        df = pd.DataFrame(self.rows, columns=["kind", "start_s", "end_s", "attempt", "detail"])
        df["rank"] = -1
        df = df.sort_values(["start_s", "end_s"], kind="stable").reset_index(drop=True)
        return make_events(df[list(EVENT_COLUMNS)])


def _compute_times(cfg: SimConfig, rng: np.random.Generator, m: int) -> np.ndarray:
    """(m steps × R ranks) compute seconds for one attempt's first m steps, as float64."""
    r = cfg.n_ranks
    if cfg.jitter > 0:
        c = rng.standard_normal((m, r))
        c *= cfg.jitter
        c -= 0.5 * cfg.jitter**2  # mean-one lognormal: E[exp(σZ − σ²/2)] = 1
        np.exp(c, out=c)
        c *= cfg.step_time_s
    else:
        c = np.full((m, r), cfg.step_time_s)
    if cfg.slow_ranks and cfg.slow_factor != 1.0:
        c[:, list(cfg.slow_ranks)] *= cfg.slow_factor
    if cfg.transient_prob > 0 and cfg.transient_factor != 1.0:
        hit = rng.random((m, r)) < cfg.transient_prob
        c[hit] *= cfg.transient_factor
    if cfg.warmup_steps > 0 and cfg.warmup_factor != 1.0:
        w = min(cfg.warmup_steps, m)
        factors = np.linspace(cfg.warmup_factor, 1.0, cfg.warmup_steps + 1)[:w]
        c[:w] *= factors[:, None]
    return c


def simulate(config: SimConfig | None = None, *, validate: bool = True, **overrides: Any) -> Run:
    """A synthetic Run for ``config`` (``SimConfig()`` by default; keyword overrides allowed).

    ``validate=False`` skips the schema check of the finished Run (more than half the time at
    16K ranks); the tables are valid by construction and the tests check that on small runs.

    Steps are one row per (step, rank) — or per step with ``per_rank=False`` — with
    ``data_wait_s`` and ``compute_s``; events carry init, eval, checkpoints, failures. ``meta``
    holds N, the peak and the model FLOPs so MFU is computable, and ``meta.extra['injected']``
    the ground truth (slow ranks, failures, lost work and downtime in seconds).
    """
    cfg = _config(config, overrides)
    parts: list[dict[str, np.ndarray]] = []

    def emit(attempt: int, steps_no: np.ndarray, st: np.ndarray, data: np.ndarray, c: _Dense,
             n_rows: int, clip: float | None) -> None:
        cc = c.array[:n_rows]
        if clip is not None:
            cc = cc.copy()
            cc[-1] = np.clip(cc[-1], 0.0, clip)
        parts.append(_rows(cfg, attempt, steps_no, st, data, cc))

    events, meta = _timeline(cfg, _Dense, emit)
    steps = _concat(parts)
    meta = meta.replace(report=LoadReport(source="<simulate>", format="simulated", rows_kept=len(steps)))
    # Rows are generated in (attempt, start_s, step, rank) order with schema dtypes, so the Run
    # is built directly and validated (Run.build would only copy and re-sort the same table).
    run = Run(steps, events, meta, {})
    return run.validate() if validate else run


def _config(config: SimConfig | None, overrides: dict[str, Any]) -> SimConfig:
    cfg = config if config is not None else SimConfig()
    if not isinstance(cfg, SimConfig):
        raise TypeError(f"config must be a SimConfig; got {type(cfg).__name__}")
    return cfg.replace(**overrides) if overrides else cfg


class _Dense:
    """One attempt's compute times held whole (m steps × R ranks)."""

    def __init__(self, cfg: SimConfig, rng: np.random.Generator, m: int) -> None:
        self.array = _compute_times(cfg, rng, m)
        self.cmax = self.array.max(axis=1)


@dataclass
class _Progress:
    """Where the job stands between attempts, and the ground truth tallied for ``meta.extra['injected']``."""

    pending_fail: set[int]
    t: float = 0.0
    attempt: int = 0
    durable: int = 0  # last step whose checkpoint is durable
    lost_work: float = 0.0
    downtime: float = 0.0
    lost_steps: int = 0
    failures: list[dict[str, Any]] = field(default_factory=list)
    n_ckpt: int = 0


@dataclass
class _Layout:
    """One attempt's steps placed on the timeline as if no failure struck (arrays over its steps)."""

    steps_no: np.ndarray
    c: Any  # the attempt's compute times (``_Dense`` or ``_Chunked``)
    data: np.ndarray  # input stall before each step
    span: np.ndarray  # input stall + slowest rank's compute
    is_ckpt: np.ndarray
    is_eval: np.ndarray
    gap: np.ndarray  # blocking checkpoint / async snapshot, then evaluation, after each step
    starts: np.ndarray
    ends: np.ndarray


def _timeline(cfg: SimConfig, compute: Any, emit: Any) -> tuple[pd.DataFrame, RunMeta]:
    """Lay the job out on the timeline; ``emit`` receives each attempt's rows, ``compute`` makes
    each attempt's compute times (whole, or in chunks for a dataset). Returns events and meta."""
    rng = np.random.default_rng(cfg.seed)
    ev = _Events()
    p = _Progress(pending_fail=set(cfg.fail_at_steps))
    while True:
        _check_attempts(cfg, p.attempt)
        t_fail = p.t + rng.exponential(cfg.mtbf_s) if cfg.mtbf_s is not None else math.inf
        step = None
        if not _pre_step_phases(cfg, ev, p, t_fail):
            step = _run_steps(cfg, rng, compute, emit, ev, p, t_fail)
            if step is None:
                break
        _record_failure(cfg, ev, p, step)
    return ev.frame(), _meta(cfg, p)


def _check_attempts(cfg: SimConfig, attempt: int) -> None:
    """Stop a job that failures keep from finishing, rather than looping for ever."""
    if attempt >= cfg.max_attempts:
        raise SimConfigError(
            f"the job did not finish within max_attempts={cfg.max_attempts} attempts "
            f"(mtbf_s={cfg.mtbf_s!r} is too short for checkpoint_every={cfg.checkpoint_every!r})",
            field="max_attempts", value=cfg.max_attempts,
        )


def _pre_step_phases(cfg: SimConfig, ev: _Events, p: _Progress, t_fail: float) -> bool:
    """Add the attempt's init (and checkpoint load when resuming); True when a failure cut them short."""
    pre = [("init", cfg.init_s, "")]
    if p.attempt > 0 and p.durable > 0:
        pre.append(("checkpoint_load", cfg.checkpoint_load_s, f"resume from step {p.durable}"))
    for kind, dur, detail in pre:
        if dur <= 0:
            continue
        if p.t + dur > t_fail:
            ev.add(kind, p.t, t_fail, p.attempt, detail + " (interrupted by a failure)")
            p.t = t_fail
            return True
        ev.add(kind, p.t, p.t + dur, p.attempt, detail)
        p.t += dur
    return False


def _run_steps(cfg: SimConfig, rng: np.random.Generator, compute: Any, emit: Any, ev: _Events, p: _Progress,
               t_fail: float) -> int | None:
    """Run one attempt's steps up to the end or a failure: emit rows, add events, update ``p``.

    Returns the step in progress when the failure struck, or None when the job finished."""
    lay = _layout(cfg, rng, compute, p.durable, p.t)
    fail_idx, fail_t = _failure(cfg, lay, p, t_fail)
    n_rows = fail_idx + 1 if fail_idx is not None else len(lay.steps_no)
    _emit_rows(emit, p.attempt, lay, n_rows, fail_idx, fail_t)
    new_durable = _after_step_events(cfg, ev, p, lay, n_rows, fail_idx, fail_t)
    if fail_idx is None:
        p.t = lay.ends[-1] + lay.gap[-1]
        return None
    _count_lost_work(p, lay, n_rows, new_durable, fail_t)
    p.durable = new_durable
    p.t = fail_t
    return int(lay.steps_no[fail_idx])


def _layout(cfg: SimConfig, rng: np.random.Generator, compute: Any, durable: int, t: float) -> _Layout:
    """Place the steps after ``durable`` from ``t``: compute times, then input stalls, drawn in that order."""
    m = cfg.n_steps - durable
    steps_no = np.arange(durable + 1, cfg.n_steps + 1)
    c = compute(cfg, rng, m)
    data = (np.where(rng.random(m) < cfg.data_stall_prob, cfg.data_stall_s, 0.0) if cfg.data_stall_prob > 0
            else np.zeros(m))
    span = data + c.cmax
    is_ckpt, is_eval, gap = missing_numbers(cfg, steps_no)
    starts = t + np.r_[0.0, np.cumsum(span + gap)[:-1]]
    return _Layout(steps_no, c, data, span, is_ckpt, is_eval, gap, starts, starts + span)


def missing_numbers(cfg: SimConfig, steps_no: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Which steps are followed by a checkpoint or an evaluation, and the pause each makes in training."""
    is_ckpt = (cfg.checkpoint_every > 0) & (steps_no % max(cfg.checkpoint_every, 1) == 0)
    is_ckpt &= steps_no < cfg.n_steps  # no checkpoint after the final step
    is_eval = (cfg.eval_every > 0) & (steps_no % max(cfg.eval_every, 1) == 0)
    ck_block = cfg.checkpoint_s if cfg.checkpoint_mode == "blocking" else cfg.async_stall_s
    gap = np.where(is_ckpt, ck_block, 0.0) + np.where(is_eval, cfg.eval_s, 0.0)
    return is_ckpt, is_eval, gap


def _failure(cfg: SimConfig, lay: _Layout, p: _Progress, t_fail: float) -> tuple[int | None, float]:
    """When this attempt fails: the exponential clock or a chosen step (first execution only).

    Returns the index of the step in progress (or the last one started) and the instant, or None and
    the clock's time when the attempt finishes first; the chosen steps passed leave ``p.pending_fail``."""
    fail_t = t_fail
    first = p.durable + 1
    chosen = [s for s in sorted(p.pending_fail) if s >= first]
    if chosen:
        i = chosen[0] - first
        tc = lay.starts[i] + cfg.fail_fraction * lay.span[i]
        if tc < fail_t:
            fail_t = tc
    if fail_t < lay.ends[-1]:
        # the step in progress (or the last one started) when the failure struck
        fail_idx = int(np.searchsorted(lay.starts, fail_t, side="right") - 1)
        p.pending_fail = {s for s in p.pending_fail if s > lay.steps_no[fail_idx]}
        return fail_idx, fail_t
    return None, fail_t


def _emit_rows(emit: Any, attempt: int, lay: _Layout, n_rows: int, fail_idx: int | None, fail_t: float) -> None:
    """Hand the attempt's first ``n_rows`` steps to ``emit``, the step in progress cut at the failure."""
    st = lay.starts[:n_rows]
    sp_data = lay.data[:n_rows]
    clip = None
    if fail_idx is not None:
        # truncate the step in progress at the failure instant
        lim = fail_t - st[-1]
        sp_data = sp_data.copy()
        sp_data[-1] = min(sp_data[-1], lim)
        clip = max(lim - sp_data[-1], 0.0)
    emit(attempt, lay.steps_no[:n_rows], st, sp_data, lay.c, n_rows, clip)


def _after_step_events(cfg: SimConfig, ev: _Events, p: _Progress, lay: _Layout, n_rows: int,
                       fail_idx: int | None, fail_t: float) -> int:
    """Add the checkpoints and evaluations that started before the failure; returns the new durable step."""
    new_durable = p.durable
    for j in np.flatnonzero(lay.is_ckpt[:n_rows] | lay.is_eval[:n_rows]):
        t_after = lay.ends[j]
        if fail_idx is not None and t_after >= fail_t:
            break
        step = lay.steps_no[j]
        if lay.is_ckpt[j]:
            p.n_ckpt += 1
            t_after, saved = _checkpoint_events(cfg, ev, p.attempt, step, t_after, fail_t)
            if saved:
                new_durable = int(step)
        if lay.is_eval[j] and (fail_idx is None or t_after < fail_t):
            ev.add("eval", t_after, min(t_after + cfg.eval_s, fail_t), p.attempt, f"after step {step}")
    return new_durable


def _checkpoint_events(cfg: SimConfig, ev: _Events, attempt: int, step: Any, t_after: float,
                       fail_t: float) -> tuple[float, bool]:
    """Add one checkpoint's events, cut at ``fail_t``; returns when training resumes and whether it became durable.

    Blocking: one write that training waits for. Async: a snapshot that blocks, then a background write."""
    if cfg.checkpoint_mode == "blocking":
        e = min(t_after + cfg.checkpoint_s, fail_t)
        if cfg.checkpoint_s > 0:
            ev.add("checkpoint_save", t_after, e, attempt, f"step {step} (blocking)")
        return e, t_after + cfg.checkpoint_s <= fail_t
    e = min(t_after + cfg.async_stall_s, fail_t)
    if cfg.async_stall_s > 0:
        ev.add("checkpoint_save", t_after, e, attempt, f"step {step} snapshot (blocks training)")
    w_end = e + cfg.checkpoint_s
    if cfg.checkpoint_s > 0:
        ev.add("checkpoint_save", e, min(w_end, fail_t), attempt, f"step {step} background write")
    return e, w_end <= fail_t


def _count_lost_work(p: _Progress, lay: _Layout, n_rows: int, new_durable: int, fail_t: float) -> None:
    """Tally the lost work: the attempt's steps after the durable checkpoint (including the partial one)."""
    lost_mask = lay.steps_no[:n_rows] > new_durable
    step_end = np.minimum(lay.ends[:n_rows], fail_t)
    p.lost_work += float(np.sum((step_end - lay.starts[:n_rows])[lost_mask]))
    p.lost_steps += int(lost_mask.sum())


def _record_failure(cfg: SimConfig, ev: _Events, p: _Progress, step: int | None) -> None:
    """Log the failure at ``p.t`` (``step`` None when it struck before the steps) and wait out the restart."""
    p.failures.append({"attempt": p.attempt, "time_s": float(p.t), "step": step})
    ev.add("failure", p.t, p.t + cfg.restart_s, p.attempt, "injected failure")
    p.downtime += cfg.restart_s
    p.t += cfg.restart_s
    p.attempt += 1


def _meta(cfg: SimConfig, p: _Progress) -> RunMeta:
    """The simulated Run's meta: N, peak and model FLOPs for MFU, the config and the injected ground truth."""
    flops = cfg.flops_per_step
    return RunMeta(
        name=cfg.name,
        accelerator=cfg.accelerator,
        dtype=cfg.dtype,
        n_accelerators=int(cfg.n_ranks),
        peak_flops_per_accelerator=float(cfg.peak_flops_per_accelerator),
        peak_source="simulation parameter (SimConfig.peak_flops_per_accelerator)",
        model_flops_per_step=float(flops),
        model_flops_per_sample=float(flops / cfg.samples_per_step),
        model_flops_per_token=float(flops / cfg.samples_per_step / cfg.seq_len) if cfg.seq_len else None,
        model_flops_source="simulation parameter (SimConfig)",
        global_batch=float(cfg.samples_per_step),
        seq_len=cfg.seq_len,
        source_format="simulated",
        time_unit="s",
        timing="exact",
        extra={
            "simulated": cfg.to_dict(),
            "injected": {
                "slow_ranks": list(cfg.slow_ranks) if cfg.slow_factor > 1 else [],
                "slow_factor": cfg.slow_factor,
                "failures": len(p.failures),
                "failure_log": p.failures,
                "restarts": p.attempt,
                "lost_work_s": p.lost_work,
                "lost_steps": p.lost_steps,
                "failure_downtime_s": p.downtime,
                "checkpoints_started": p.n_ckpt,
            },
        },
    )


def _rows(
    cfg: SimConfig, attempt: int, steps_no: np.ndarray, starts: np.ndarray, data: np.ndarray, c: np.ndarray
) -> dict[str, np.ndarray]:
    m, r = c.shape
    if not cfg.per_rank:
        cmax = c.max(axis=1) if m else np.zeros(0)
        return {
            "attempt": np.full(m, attempt, dtype=np.int64),
            "step": steps_no.astype(np.int64),
            "rank": np.full(m, -1, dtype=np.int64),
            "start_s": starts.astype(float),
            "end_s": starts + data + cmax,
            "data_wait_s": data.astype(float),
            "compute_s": cmax,
        }
    start = np.repeat(starts, r)
    comp = c.reshape(-1)
    wait = np.repeat(data, r)
    return {
        "attempt": np.full(m * r, attempt, dtype=np.int64),
        "step": np.repeat(steps_no.astype(np.int64), r),
        "rank": np.tile(np.arange(r, dtype=np.int64), m),
        "start_s": start,
        "end_s": start + wait + comp,
        "data_wait_s": wait,
        "compute_s": comp,
    }


def _concat(parts: list[dict[str, np.ndarray]]) -> pd.DataFrame:
    cols = ("attempt", "step", "rank", "start_s", "end_s", "data_wait_s", "compute_s")
    if not parts:
        return pd.DataFrame({c: pd.Series(dtype="int64" if c in ("attempt", "step", "rank") else "float64")
                             for c in cols})
    data = {c: (parts[0][c] if len(parts) == 1 else np.concatenate([p[c] for p in parts])) for c in cols}
    return pd.DataFrame(data, copy=False)


# --- the same run written as a Parquet dataset, in chunks ---------------------------------------


def _generator(state: dict[str, Any]) -> np.random.Generator:
    g = np.random.Generator(np.random.PCG64())
    g.bit_generator.state = state
    return g


class _Chunked:
    """One attempt's compute times made ``k`` steps at a time, equal to :func:`_compute_times`'s.

    The normal and uniform draws are read from copies of the generator at the points where
    ``_compute_times`` would start each, so a chunk holds exactly the values the whole array
    would (numpy fills arrays from the stream in order); the generator itself is advanced past
    both, as ``_compute_times`` leaves it.
    """

    def __init__(self, cfg: SimConfig, rng: np.random.Generator, m: int, *, chunk_rows: int) -> None:
        self.cfg, self.m, r = cfg, m, cfg.n_ranks
        self.k = max(1, chunk_rows // r)
        self.s_norm = rng.bit_generator.state
        if cfg.jitter > 0:
            for a in range(0, m, self.k):
                rng.standard_normal((min(self.k, m - a), r))
        self.s_hit = rng.bit_generator.state
        if self._transient:
            for a in range(0, m, self.k):
                rng.random((min(self.k, m - a), r))
        self.cmax = np.concatenate([c.max(axis=1) for _, _, c in self.chunks(m)]) if m else np.zeros(0)

    @property
    def _transient(self) -> bool:
        return self.cfg.transient_prob > 0 and self.cfg.transient_factor != 1.0

    def chunks(self, n: int) -> Any:
        """``(first, end, times)`` for steps ``first..end-1`` of the first ``n``."""
        cfg, r = self.cfg, self.cfg.n_ranks
        g_norm, g_hit = _generator(self.s_norm), _generator(self.s_hit)
        factors = np.linspace(cfg.warmup_factor, 1.0, cfg.warmup_steps + 1) if cfg.warmup_steps else None
        for a in range(0, n, self.k):
            b = min(a + self.k, n)
            if cfg.jitter > 0:
                c = g_norm.standard_normal((b - a, r))
                c *= cfg.jitter
                c -= 0.5 * cfg.jitter**2
                np.exp(c, out=c)
                c *= cfg.step_time_s
            else:
                c = np.full((b - a, r), cfg.step_time_s)
            if cfg.slow_ranks and cfg.slow_factor != 1.0:
                c[:, list(cfg.slow_ranks)] *= cfg.slow_factor
            if self._transient:
                c[g_hit.random((b - a, r)) < cfg.transient_prob] *= cfg.transient_factor
            if factors is not None and cfg.warmup_factor != 1.0 and a < min(cfg.warmup_steps, self.m):
                w = min(cfg.warmup_steps, self.m, b)
                c[: w - a] *= factors[a:w, None]
            yield a, b, c


def write_dataset(
    config: SimConfig | None = None,
    folder: str | Path = "sim_dataset",
    *,
    rows_per_file: int = 20_000_000,
    chunk_rows: int = 4_000_000,
    progress: bool = False,
    **overrides: Any,
) -> Path:
    """Write the run :func:`simulate` would make as a Parquet dataset, never holding it whole.

    ``folder`` receives ``part-00000.parquet``, ... (the steps, in the Run's row order, about
    ``rows_per_file`` rows each, in row groups of ``chunk_rows`` at most) and ``_mfu_run.parquet``
    (a saved Run without steps: the events and meta). ``load_run(folder)`` reads it back; its
    rows equal ``simulate(config).steps``. Memory stays about ``chunk_rows`` rows (×~100 bytes)
    whatever the size: 4,096 ranks × 100,000 steps is written in chunks of a few hundred steps.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    from ..run import save_run

    cfg = _config(config, overrides)
    out = Path(folder)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"folder {str(out)!r} exists and is not empty; write_dataset needs a new or empty folder")
    out.mkdir(parents=True, exist_ok=True)
    state: dict[str, Any] = {"writer": None, "rows": 0, "file": 0, "total": 0}
    bar = _bar(progress, cfg)

    def write(cols: dict[str, np.ndarray]) -> None:
        table = pa.table(cols)
        if state["writer"] is None:
            name = out / f"part-{state['file']:05d}.parquet"
            state["writer"] = pq.ParquetWriter(name, table.schema, compression="snappy")
        state["writer"].write_table(table, row_group_size=chunk_rows)
        state["rows"] += table.num_rows
        state["total"] += table.num_rows
        if bar is not None:
            bar.update(table.num_rows)
        if state["rows"] >= rows_per_file:
            state["writer"].close()
            state["writer"], state["rows"], state["file"] = None, 0, state["file"] + 1

    def emit(attempt: int, steps_no: np.ndarray, st: np.ndarray, data: np.ndarray, c: _Chunked,
             n_rows: int, clip: float | None) -> None:
        for a, b, block in c.chunks(n_rows):
            if clip is not None and b == n_rows:
                block[-1] = np.clip(block[-1], 0.0, clip)
            write(_rows(cfg, attempt, steps_no[a:b], st[a:b], data[a:b], block))

    try:
        events, meta = _timeline(cfg, lambda cf, rng, m: _Chunked(cf, rng, m, chunk_rows=chunk_rows), emit)
    finally:
        if state["writer"] is not None:
            state["writer"].close()
        if bar is not None:
            bar.close()
    meta = meta.replace(report=LoadReport(source="<simulate>", format="simulated", rows_kept=state["total"]))
    save_run(Run(_concat([]), events, meta, {}), out / "_mfu_run.parquet")
    return out


def _bar(progress: bool, cfg: SimConfig) -> Any:
    if not progress:
        return None
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm(total=None, desc=f"writing {cfg.n_ranks:,} ranks × {cfg.n_steps:,} steps", unit=" rows",
                unit_scale=True, leave=False)
