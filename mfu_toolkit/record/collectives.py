"""Timing of ``torch.distributed`` collectives and DDP's gradient all-reduce as ``comm``.

Three ways in, all feeding :meth:`StepRecorder.add_comm` with the interval during which a
collective of this rank was in flight (overlapping ones count once):

- :func:`patch_collectives` (``StepRecorder(..., time_collectives=True)``) wraps the collectives
  of the ``torch.distributed`` module (``all_reduce``, ``all_gather(_into_tensor)``,
  ``reduce_scatter(_tensor)``, ``broadcast``, ``all_to_all(_single)``, ``barrier``, ...). A
  blocking call is timed from call to return; an ``async_op=True`` call from launch to the
  completion of its future. Code that called ``dist.all_reduce`` through the module (DDP's
  Python hooks, FSDP, custom loops) is covered; a name imported before patching
  (``from torch.distributed import all_reduce``) is not.
- :func:`register_ddp_hook` (``rec.watch_ddp(model)``) registers a DDP communication hook
  (:func:`timed_comm_hook`) that averages each gradient bucket exactly as DDP's default does and
  times it from the bucket's launch (during backward) to its completion.
- :class:`GradientSync` (on by default in the Lightning and Hugging Face callbacks) finds DDP
  (that hook) or FSDP (its collectives, through :func:`patch_collectives`) on a model; its
  docstring says why a comm hook and what it cannot see.

Both measure host-side time. On CPU (gloo) a collective's future completes when the data has
arrived; with NCCL a blocking call returns once the collective is queued on the GPU, so there
the host time is a launch time unless the host waits on it. Under DDP the all-reduce of early
buckets overlaps the rest of backward: that overlap counts as ``comm``, so ``compute_s`` is then
a lower bound of the rank's own work. Costs are measured by ``benchmarks/record_overhead.py``.
"""

from __future__ import annotations

import functools
import sys
import time
import warnings
from collections.abc import Callable
from typing import Any

__all__ = ["COLLECTIVES", "GradientSync", "Patch", "find_ddp", "patch_collectives", "register_ddp_hook",
           "timed_comm_hook"]

_now = time.perf_counter  # the recorder's clock

COLLECTIVES: tuple[str, ...] = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
    "broadcast", "reduce", "all_to_all", "all_to_all_single", "barrier", "gather", "scatter",
    "all_gather_object", "broadcast_object_list",
    # newer releases: FSDP's all-gather and reduce-scatter go through these
    "all_gather_single", "reduce_scatter_single", "all_reduce_coalesced", "all_gather_coalesced",
)


class Patch:
    """The wrapped collectives of one recorder; :meth:`remove` puts the originals back."""

    def __init__(self, module: Any, originals: dict[str, Any], wrappers: dict[str, Any]) -> None:
        self._module, self._originals, self._wrappers = module, originals, wrappers

    def remove(self) -> None:
        for name, fn in self._originals.items():
            if getattr(self._module, name, None) is self._wrappers[name]:  # still ours
                setattr(self._module, name, fn)
        self._originals.clear()


def _timed(fn: Any, rec: Any) -> Any:
    now = rec.now

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        t = now()
        out = fn(*args, **kwargs)
        if kwargs.get("async_op") and out is not None:
            try:
                out.get_future().then(lambda _f, t=t: rec.add_comm(t, now()))
            except (AttributeError, RuntimeError):  # a backend without futures: the launch only
                rec.add_comm(t, now())
        else:
            rec.add_comm(t, now())
        return out

    return wrapper


def patch_collectives(rec: Any) -> Patch:
    """Wrap ``torch.distributed``'s collectives so that each adds its time to ``rec``'s step."""
    import torch.distributed as dist

    originals = {n: getattr(dist, n) for n in COLLECTIVES if hasattr(dist, n)}
    wrappers = {n: _timed(fn, rec) for n, fn in originals.items()}
    for name, w in wrappers.items():
        setattr(dist, name, w)
    return Patch(dist, originals, wrappers)


def _hook_signature(hook: Any, name: str) -> Any:
    """Give ``hook`` the name and annotations DDP checks at registration (this module's
    annotations are strings, which DDP's check would refuse)."""
    import torch
    import torch.distributed as dist

    hook.__name__ = hook.__qualname__ = name
    hook.__annotations__ = {"state": Any, "bucket": dist.GradBucket, "return": torch.futures.Future[torch.Tensor]}
    hook._mfu_timed = True  # how attach() knows a model already carries one of these hooks
    return hook


def timed_comm_hook(get_rec: Callable[[], Any], inner: Callable[..., Any] | None = None) -> Callable[..., Any]:
    """A DDP communication hook that times each gradient bucket from launch to completion.

    ``inner`` is the hook that does the communication (a user's, e.g. a compression hook); without
    it the hook averages the bucket exactly as DDP's default does (divide by the group size, then
    sum with ``all_reduce``: ``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``'s
    ``allreduce_hook``). ``get_rec()`` is read at each bucket, so the hook can be registered
    before the recorder exists; while it returns None nothing is timed.
    """
    import torch.distributed as dist

    now = _now

    if inner is None:
        def hook(state: Any, bucket: Any) -> Any:
            rec, t = get_rec(), now()
            g = state if state is not None else dist.group.WORLD  # the group registered with the hook
            tensor = bucket.buffer()
            tensor.div_(g.size())

            def done(fut: Any) -> Any:  # one callback per bucket: the timing and DDP's result
                if rec is not None:
                    rec.add_comm(t, now())
                return fut.value()[0]

            return dist.all_reduce(tensor, group=g, async_op=True).get_future().then(done)

        return _hook_signature(hook, "timed_allreduce_hook")

    def wrapped(state: Any, bucket: Any) -> Any:
        rec, t = get_rec(), now()
        fut = inner(state, bucket)
        if rec is None:
            return fut

        def done(f: Any) -> Any:
            rec.add_comm(t, now())
            return f.value()

        return fut.then(done)

    return _hook_signature(wrapped, f"timed_{getattr(inner, '__name__', 'comm_hook')}")


def register_ddp_hook(model: Any, rec: Any, process_group: Any = None) -> None:
    """Register on ``model`` (a ``DistributedDataParallel``) the averaging all-reduce hook of
    :func:`timed_comm_hook`, adding each bucket's time, launch to completion, to ``rec``'s step."""
    if not hasattr(model, "register_comm_hook"):
        raise TypeError(f"model must be a torch.nn.parallel.DistributedDataParallel; got {type(model).__name__}")
    group = process_group if process_group is not None else getattr(model, "process_group", None)
    model.register_comm_hook(group, timed_comm_hook(lambda: rec))


def _wrapper_of(module: Any, kinds: tuple[type, ...]) -> Any:
    """The object of one of ``kinds`` whose child module ``module`` is, else None: found among the
    objects that refer to ``module`` (its ``_modules`` dict, then the wrapper or the wrapper's
    ``__dict__``). One scan of the garbage collector's objects per level."""
    import gc

    frontier = [module]
    for _ in range(3):  # module <- _modules dict <- (wrapper | wrapper.__dict__) <- wrapper
        nxt = []
        for obj in frontier:
            for ref in gc.get_referrers(obj):
                if isinstance(ref, kinds) and any(m is module for m in ref._modules.values()):
                    return ref
                if isinstance(ref, dict):
                    nxt.append(ref)
        frontier = nxt[:64]  # a module is held by few dicts; bound the scan in odd programs
    return None


def find_ddp(module: Any) -> Any:
    """The ``DistributedDataParallel`` that wraps ``module`` (or ``module`` itself), else None.

    For trainers that hand callbacks the unwrapped model (the Hugging Face Trainer): the wrapper
    is found among the objects that refer to ``module``, once per training run.
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    return module if isinstance(module, DDP) else _wrapper_of(module, (DDP,))


def _has_fsdp(module: Any) -> bool:
    """Whether ``module`` is sharded by FSDP: it or a submodule is ``FullyShardedDataParallel``
    or ``fully_shard``'s ``FSDPModule``, or it is the module an FSDP wrapper holds."""
    kinds: list[type] = []
    try:
        from torch.distributed.fsdp import FullyShardedDataParallel

        kinds.append(FullyShardedDataParallel)
        from torch.distributed.fsdp import FSDPModule

        kinds.append(FSDPModule)
    except ImportError:
        pass
    modules = getattr(module, "modules", None)
    if not kinds or not callable(modules):
        return False
    return any(isinstance(m, tuple(kinds)) for m in modules()) or _wrapper_of(module, (kinds[0],)) is not None


class GradientSync:
    """Times a data-parallel job's gradient synchronisation as ``comm``, found on its model.

    Used by the Lightning and Hugging Face callbacks (on by default), in three moves: a hook may
    be wrapped before the framework registers it (:meth:`timed`); :meth:`attach` finds the
    wrapper on the model and says how its synchronisation will be timed (``mode``, for the record
    file's header); :meth:`bind` starts the timing into a recorder.

    - DDP: its gradient all-reduce runs inside backward, bucket by bucket, from DDP's reducer, not
      through ``torch.distributed``'s Python functions, so :func:`patch_collectives` never sees
      it. A communication hook (:func:`timed_comm_hook`) does: it runs the same all-reduce and
      notes the time from the bucket's launch to the completion of its future. A fast rank's wait
      for a slow one is spent there (DDP waits on the futures at the end of backward), so it counts
      as ``comm`` and leaves the rank's busy time. Chosen over timing ``backward()`` as a whole
      (which would count the rank's own gradient computation as communication) and over
      ``patch_collectives`` (blind to the reducer). Cost: DDP runs a Python hook instead of its
      built-in C++ one, about 25 µs more per bucket (25 MB of gradients by default), of which the
      timing itself is about 1 µs (22 buckets of a one-rank gloo job: 2.14 ms per step with the
      built-in hook, 2.66 ms with torch's own Python ``allreduce_hook``, 2.68 ms with this one).
    - FSDP (``FullyShardedDataParallel`` or ``fully_shard``): its all-gathers and reduce-scatters
      go through ``torch.distributed``'s functions, so :func:`patch_collectives` times them.

    Not seen: DDP's collectives outside the hook (the buffer broadcast at the start of forward
    for models with buffers, the one-time bucket rebuild in the second step, the unused-parameter
    map with ``find_unused_parameters=True``, join hooks); a comm hook registered before the
    recorder's (DDP allows one; ``mode`` then says ``off`` and a warning names it); other engines'
    own communication (DeepSpeed, Megatron). All timing is host-side: with gloo a future
    completes when the data has arrived, but with NCCL when the collective is queued on the GPU,
    so there the wait surfaces where the host next waits on the GPU and stays in busy time.
    """

    def __init__(self) -> None:
        self.rec: Any = None
        self.mode = "off: not attached"
        self._fsdp = False
        self._issued: list[str] = []  # names of the hooks handed out by timed()

    def timed(self, inner: Callable[..., Any] | None = None) -> Callable[..., Any]:
        """A comm hook (``inner``, or the default all-reduce) that times into the bound recorder."""
        hook = timed_comm_hook(lambda: self.rec, inner)
        self._issued.append(hook.__name__)
        return hook

    def attach(self, model: Any) -> str:
        """Find DDP or FSDP on ``model`` and prepare its timing; the ``mode`` (also returned)."""
        self.mode = self._attach(model)
        if self.mode.startswith("off: DistributedDataParallel already has"):
            warnings.warn(f"gradient synchronisation is not timed ({self.mode}); a slow rank's peers "
                          "will look busy while they wait for it", RuntimeWarning, stacklevel=3)
        return self.mode

    def _attach(self, model: Any) -> str:
        dist = sys.modules.get("torch.distributed")
        if dist is None or not dist.is_available() or not dist.is_initialized():
            return "off: torch.distributed is not initialised"
        ddp = find_ddp(model)
        if ddp is not None:
            hooks = list(getattr(ddp, "_comm_hooks", []))
            mine = [h for h, _ in hooks if getattr(h, "_mfu_timed", False)]
            if mine:
                return f"ddp comm hook ({mine[0].__name__})"
            if hooks and self._issued:  # ours, handed to the framework, which wrapped it (Lightning's
                # ddp_comm_wrapper) before registering it
                return f"ddp comm hook ({self._issued[-1]} inside {hooks[0][0].__qualname__})"
            if hooks:
                return f"off: DistributedDataParallel already has comm hook {hooks[0][0].__qualname__}"
            try:
                # DDP's own group: a model replicated over a sub-group averages over that group
                ddp.register_comm_hook(getattr(ddp, "process_group", None), self.timed())
            except RuntimeError as exc:  # e.g. a built-in hook registered in C++
                return f"off: DistributedDataParallel already has a comm hook ({str(exc)[:120]})"
            return "ddp comm hook (timed_allreduce_hook)"
        self._fsdp = _has_fsdp(model)
        if self._fsdp:
            return "collectives (FSDP)"
        return "off: no DistributedDataParallel or FSDP module on the model"

    def bind(self, rec: Any) -> None:
        """Time into ``rec`` from now on (FSDP: its ``torch.distributed`` collectives as well);
        ``None`` stops the hook's timing (the recorder's :meth:`close` removes the patches)."""
        self.rec = rec
        if rec is not None and self._fsdp and not getattr(rec, "_patches", None):
            rec.time_collectives()
