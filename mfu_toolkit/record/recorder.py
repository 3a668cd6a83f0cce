"""``StepRecorder``: per-rank step timings written from inside a training loop.

::

    rec = StepRecorder("runs/job1")
    for step, batch in enumerate(loader):
        with rec.step(step=step, samples=len(batch)):
            with rec.data_wait(): ...        # optional: waiting for input
            with rec.comm(): ...             # optional: in (and waiting at) collectives
        with rec.event("checkpoint_save"): ...
    rec.close()

Why ``comm``: in synchronous training every rank's step lasts as long as the slowest rank's, so
step spans alone cannot name a straggler; the fast ranks spend the difference waiting inside the
next collective. The loader therefore keeps each rank's ``compute_s`` = step − data wait −
collective time, and the analysis compares ranks by it.

Each rank appends its own file (see :mod:`mfu_toolkit.record.folder`) with no collective calls,
so recording never changes the job's timing. The hot path reuses one context object per kind
and formats one line per step: no allocation grows with the number of steps
(``benchmarks/record_overhead.py`` measures the cost against an empty loop).
"""

from __future__ import annotations

import atexit
import collections
import operator
import os
import sys
import time
from pathlib import Path
from types import TracebackType
from typing import Any

from ..deprecation import renamed
from .folder import HEARTBEAT_S, RankFile, next_attempt

__all__ = ["EVENT_KINDS", "StepRecorder", "launch_info"]

# The Run's events vocabulary (mfu_toolkit.run.EVENT_KINDS; a test keeps the two equal). Kept
# here so that a training process need not import pandas to record.
EVENT_KINDS: tuple[str, ...] = (
    "init", "data_load", "eval", "checkpoint_save", "checkpoint_load", "failure", "restart", "queue", "other",
)
_GPU_PENDING = 64  # steps whose CUDA events may be in flight before the oldest is waited on

_now = time.perf_counter


def _env_int(name: str) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"environment variable {name}={raw!r} is not an integer") from None
    if value < 0:
        raise ValueError(f"environment variable {name}={raw!r} must be >= 0")
    return value


def launch_info() -> dict[str, int | None]:
    """Rank, world size, local rank and restart count of this process.

    From ``torch.distributed`` when it is initialised (without importing torch otherwise), else
    the launcher's environment (``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``; torchrun's
    ``TORCHELASTIC_RESTART_COUNT``), else a single process (rank 0 of 1).
    """
    rank, world = _env_int("RANK"), _env_int("WORLD_SIZE")
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        rank, world = dist.get_rank(), dist.get_world_size()
    world = 1 if world is None else world
    rank = 0 if rank is None else rank
    if world < 1 or not 0 <= rank < world:
        raise ValueError(f"rank {rank} is not in 0..world_size-1 (world_size {world}); check RANK and WORLD_SIZE")
    return {"rank": rank, "world_size": world, "local_rank": _env_int("LOCAL_RANK"),
            "restart_count": _env_int("TORCHELASTIC_RESTART_COUNT")}


def _count(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(value)  # numpy scalars, 0-d tensors
        except (TypeError, ValueError):
            raise TypeError(f"{name} must be a number or None; got {value!r}") from None
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be a finite number >= 0 or None; got {value!r}")
    return value


def _step_number(step: Any) -> int:
    if type(step) is int and step >= 0:
        return step
    try:
        n = operator.index(step)
    except TypeError:
        raise TypeError(f"step must be a non-negative integer; got {step!r}") from None
    if n < 0:
        raise ValueError(f"step must be a non-negative integer; got {step!r}")
    return n


class _Span:
    """A reusable ``with`` block that adds its duration to the recorder (no allocation per use)."""

    __slots__ = ("_rec", "_kind", "_t")

    def __init__(self, rec: StepRecorder, kind: str) -> None:
        self._rec, self._kind, self._t = rec, kind, 0.0

    def __enter__(self) -> _Span:
        self._t = _now()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        t = _now()
        if self._kind == "data":
            self._rec._wait += t - self._t
        else:
            self._rec._comm_iv.append((self._t, t))


class _StepSpan:
    __slots__ = ("_rec",)

    def __init__(self, rec: StepRecorder) -> None:
        self._rec = rec

    def __enter__(self) -> StepRecorder:
        self._rec._begin(_now())
        return self._rec

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        if et is None:
            self._rec.end_step()
        else:
            self._rec._abandon(f"{et.__name__}: {ev}"[:300])


class _EventSpan:
    __slots__ = ("_rec", "kind", "detail", "_t")

    def __init__(self, rec: StepRecorder, kind: str, detail: str) -> None:
        self._rec, self.kind, self.detail, self._t = rec, kind, detail, 0.0

    def __enter__(self) -> _EventSpan:
        self._t = _now()
        return self

    def __exit__(self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None) -> None:
        detail = self.detail if et is None else f"{self.detail} (ended by {et.__name__}: {ev})".strip()[:300]
        self._rec.add_event(self.kind, self._t, _now(), detail=detail)


class StepRecorder:
    """Record this rank's steps, input waits, collective time and job events into ``folder``.

    Rank and world size come from ``torch.distributed`` (when initialised) or the launcher's
    environment unless given; a launch into a folder that already holds this rank's records is
    the next attempt. Options (keyword-only):

    - ``rank``, ``n_ranks`` (the launcher's world size), ``local_rank``, ``attempt``: override what is
      detected;
    - ``buffer_records``: records held before one write (1, the default, writes every step as it
      ends; a larger number trades crash-safety of the last records for fewer system calls);
    - ``cuda_events``: also time each step on the GPU with CUDA events, read back without a
      host synchronisation per step (where CUDA is not available the header says so);
    - ``time_collectives``: time ``torch.distributed`` collectives as ``comm`` (see
      :mod:`mfu_toolkit.record.collectives`); ``watch_ddp(model)`` does it for DDP's all-reduce;
    - ``header``: extra JSON-able fields for the file's header (e.g. ``{"framework": ...}``);
    - ``heartbeat_s``: the most seconds between two clock beats (a monotonic and a wall-clock
      reading that let the loader align ranks whose host clocks disagree).

    Writing never raises into the loop: a full disk or a file-size limit is warned about once,
    and the records it loses are counted (:attr:`dropped`) and marked in the file when writing
    works again.
    """

    @renamed(world_size="n_ranks")
    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        rank: int | None = None,
        n_ranks: int | None = None,
        local_rank: int | None = None,
        attempt: int | None = None,
        buffer_records: int = 1,
        cuda_events: bool = False,
        time_collectives: bool = False,
        header: dict[str, Any] | None = None,
        heartbeat_s: float = HEARTBEAT_S,
    ) -> None:
        if not isinstance(folder, (str, os.PathLike)):
            raise TypeError(f"folder must be a path; got {folder!r}")
        info = launch_info()
        self.rank = info["rank"] if rank is None else _step_number(rank)
        self.n_ranks = info["world_size"] if n_ranks is None else _step_number(n_ranks)
        if self.n_ranks < 1 or self.rank >= self.n_ranks:
            raise ValueError(f"rank must be in 0..n_ranks-1; got rank={self.rank}, n_ranks={self.n_ranks}")
        if isinstance(buffer_records, bool) or not isinstance(buffer_records, int) or buffer_records < 1:
            raise ValueError(f"buffer_records must be an integer >= 1; got {buffer_records!r}")
        restarts = info["restart_count"]
        folder = Path(folder)
        first = next_attempt(folder, self.rank, restarts) if attempt is None else _step_number(attempt)
        self._gpu: _GpuTimer | None = None
        gpu_note = "off"
        if cuda_events:
            self._gpu, gpu_note = _GpuTimer.create()
        head = {"local_rank": info["local_rank"] if local_rank is None else local_rank,
                "restart_count": restarts, "gpu_timing": gpu_note, **_torch_facts(), **dict(header or {})}
        self._file = RankFile(folder, rank=self.rank, n_ranks=self.n_ranks, attempt=first,
                              header=head, buffer_records=buffer_records, heartbeat_s=heartbeat_s)
        self.attempt = self._file.attempt
        self.path = self._file.path
        self.gpu_timing = gpu_note
        self._open = False
        self._step = 0
        self._samples: float | None = None
        self._tokens: float | None = None
        self._start = 0.0
        self._wait = 0.0
        self._comm_iv: list[tuple[float, float]] = []
        self._step_span = _StepSpan(self)
        self._wait_span = _Span(self, "data")
        self._comm_span = _Span(self, "comm")
        self._patches: list[Any] = []
        atexit.register(self.flush)
        if time_collectives:
            self.time_collectives()

    # --- the three lines -------------------------------------------------------------------
    def step(self, *, step: int, samples: float | None = None, tokens: float | None = None) -> _StepSpan:
        """``with rec.step(step=N, samples=B):`` one training step on this rank."""
        self._step = _step_number(step)
        self._samples = _count("samples", samples)
        self._tokens = _count("tokens", tokens)
        return self._step_span

    def data_wait(self) -> _Span:
        """``with rec.data_wait():`` time this rank spends waiting for its input (inside a step)."""
        return self._wait_span

    def comm(self) -> _Span:
        """``with rec.comm():`` time in (and waiting at) collectives, inside a step."""
        return self._comm_span

    def event(self, kind: str, *, detail: str = "") -> _EventSpan:
        """``with rec.event("checkpoint_save"):`` a job event (init, eval, checkpoint_save/load, ...)."""
        _check_kind(kind)
        if not isinstance(detail, str):
            raise TypeError(f"detail must be a string; got {detail!r}")
        return _EventSpan(self, kind, detail)

    # --- the same, for callbacks that see a step's start and end in different hooks --------
    def begin_step(self, *, step: int, samples: float | None = None, tokens: float | None = None,
                   start: float | None = None) -> None:
        """Open step ``step`` now (or at ``start``, a ``time.perf_counter()`` reading)."""
        self.step(step=step, samples=samples, tokens=tokens)
        self._begin(_now() if start is None else float(start))

    def _begin(self, t: float) -> None:
        if self._open:
            raise RuntimeError(f"step {self._step} begins while another step is open; end it first")
        self._open, self._start, self._wait = True, t, 0.0
        if self._gpu is not None:
            self._gpu.begin()

    def end_step(self, *, samples: float | None = None, tokens: float | None = None, end: float | None = None) -> None:
        """Close the open step and write its record (``samples``/``tokens`` given here win)."""
        t = _now() if end is None else float(end)
        if not self._open:
            raise RuntimeError("end_step() without an open step (call begin_step or use `with rec.step(...)`)")
        if samples is not None:
            self._samples = _count("samples", samples)
        if tokens is not None:
            self._tokens = _count("tokens", tokens)
        self._open = False
        comm = 0.0
        if self._comm_iv:
            iv, self._comm_iv = self._comm_iv, []
            comm = _union_within(iv, self._start, t)
        self._file.step(self._step, self._start, t, self._samples, self._tokens, self._wait, comm)
        if self._gpu is not None:
            self._gpu.end(self._step, self._file)

    def _abandon(self, why: str) -> None:
        """A step that raised: a ``failure`` event over it instead of a step record."""
        self._open = False
        self._comm_iv = []
        self.add_event("failure", self._start, _now(), detail=f"step {self._step}: {why}")

    @property
    def in_step(self) -> bool:
        """Whether a step is open."""
        return self._open

    def add_data_wait(self, seconds: float) -> None:
        """Add ``seconds`` of input wait to the open step."""
        self._wait += float(seconds)

    def add_comm(self, start: float, end: float) -> None:
        """Add a collective's time (``time.perf_counter()`` readings; overlaps count once).

        Safe to call from another thread (a collective's completion callback)."""
        self._comm_iv.append((start, end))

    def add_event(self, kind: str, start: float, end: float, *, detail: str = "") -> None:
        """Write a job event over ``[start, end]`` (``time.perf_counter()`` readings)."""
        _check_kind(kind)
        self._file.event(kind, float(start), float(end), detail)

    @staticmethod
    def now() -> float:
        """The recorder's clock (``time.perf_counter()``), for ``start=``/``end=`` arguments."""
        return _now()

    # --- collectives --------------------------------------------------------------------------
    def time_collectives(self) -> None:
        """Time every ``torch.distributed`` collective as ``comm`` until :meth:`close`."""
        from .collectives import patch_collectives

        self._patches.append(patch_collectives(self))

    def watch_ddp(self, model: Any) -> None:
        """Time a ``DistributedDataParallel`` model's gradient all-reduce as ``comm``."""
        from .collectives import register_ddp_hook

        register_ddp_hook(model, self)

    # --- the end --------------------------------------------------------------------------------
    def flush(self) -> None:
        """Write buffered records now (also done at interpreter exit)."""
        self._file.flush()

    def close(self) -> None:
        """Finish: GPU times still in flight, the clean-end record; collectives unpatched."""
        if self._file.closed:
            return
        for p in reversed(self._patches):
            p.remove()
        self._patches.clear()
        if self._open:
            self.add_event("other", self._start, _now(), detail=f"step {self._step} begun, never ended")
            self._open = False
        if self._gpu is not None:
            self._gpu.drain(self._file)
        self._file.close()
        atexit.unregister(self.flush)

    @property
    def closed(self) -> bool:
        return self._file.closed

    @property
    def dropped(self) -> int:
        """Records lost to write errors so far (a full disk, a file-size limit)."""
        return self._file.dropped

    def __enter__(self) -> StepRecorder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def world_size(self) -> int:
        """The number of ranks, :attr:`n_ranks` (the old name, for one release)."""
        import warnings

        warnings.warn("StepRecorder.world_size is renamed n_ranks; the old name goes in the next release",
                      DeprecationWarning, stacklevel=2)
        return self.n_ranks

    def __repr__(self) -> str:
        return (f"StepRecorder({str(self.path)!r}, rank={self.rank}, n_ranks={self.n_ranks}, "
                f"attempt={self.attempt})")


def _check_kind(kind: str) -> None:
    if kind not in EVENT_KINDS:
        raise ValueError(f"kind must be one of {', '.join(EVENT_KINDS)}; got {kind!r}")


def _union_within(iv: list[tuple[float, float]], lo: float, hi: float) -> float:
    """Length of the union of intervals, each clipped to ``[lo, hi]`` (overlaps counted once)."""
    if len(iv) == 1:
        a, b = iv[0]
        return max(0.0, min(b, hi) - max(a, lo))
    total, cur_a, cur_b = 0.0, None, None
    for a, b in sorted(iv):
        a, b = max(a, lo), min(b, hi)
        if b <= a:
            continue
        if cur_b is None or a > cur_b:
            if cur_b is not None:
                total += cur_b - cur_a
            cur_a, cur_b = a, b
        elif b > cur_b:
            cur_b = b
    if cur_b is not None:
        total += cur_b - cur_a
    return total


def _torch_facts() -> dict[str, str]:
    """Framework and accelerator for the header, from torch if this process already imported it."""
    torch = sys.modules.get("torch")
    if torch is None:
        return {}
    out = {"framework": f"pytorch {torch.__version__}"}
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            out["accelerator"] = torch.cuda.get_device_name()
    except Exception:  # a broken CUDA install must not stop the training job from recording
        pass
    return out


class _GpuTimer:
    """CUDA events around each step, read back when the GPU has passed them (no per-step sync).

    Events are taken from a fixed pool, so memory does not grow; when ``_GPU_PENDING`` steps are
    still in flight the oldest is waited on (the GPU is then that far behind the host anyway).
    """

    def __init__(self, torch: Any) -> None:
        self._torch = torch
        n = 2 * (_GPU_PENDING + 2)
        self._pool = [torch.cuda.Event(enable_timing=True) for _ in range(n)]
        self._next = 0
        self._begun: Any = None
        self._pending: collections.deque[tuple[int, Any, Any]] = collections.deque()

    @classmethod
    def create(cls) -> tuple[_GpuTimer | None, str]:
        torch = sys.modules.get("torch")
        if torch is None:
            try:
                import torch
            except ImportError:
                return None, "off: PyTorch is not installed"
        if not torch.cuda.is_available():
            return None, "off: CUDA is not available"
        return cls(torch), "cuda_events"

    def _take(self) -> Any:
        ev = self._pool[self._next]
        self._next = (self._next + 1) % len(self._pool)
        return ev

    def begin(self) -> None:
        self._begun = self._take()
        self._begun.record()

    def end(self, step: int, out: RankFile) -> None:
        stop = self._take()
        stop.record()
        self._pending.append((step, self._begun, stop))
        pending = self._pending
        while pending and (len(pending) > _GPU_PENDING or pending[0][2].query()):
            s, a, b = pending.popleft()
            b.synchronize()
            out.gpu(s, a.elapsed_time(b) / 1e3)

    def drain(self, out: RankFile) -> None:
        while self._pending:
            s, a, b = self._pending.popleft()
            b.synchronize()
            out.gpu(s, a.elapsed_time(b) / 1e3)
