"""Opt-in timing of ``torch.distributed`` collectives and DDP's gradient all-reduce as ``comm``.

Two ways in, both feeding :meth:`StepRecorder.add_comm` with the interval during which a
collective of this rank was in flight (overlapping ones count once):

- :func:`patch_collectives` (``StepRecorder(..., time_collectives=True)``) wraps the collectives
  of the ``torch.distributed`` module (``all_reduce``, ``all_gather(_into_tensor)``,
  ``reduce_scatter(_tensor)``, ``broadcast``, ``all_to_all(_single)``, ``barrier``, ...). A
  blocking call is timed from call to return; an ``async_op=True`` call from launch to the
  completion of its future. Code that called ``dist.all_reduce`` through the module (DDP's
  Python hooks, FSDP, custom loops) is covered; a name imported before patching
  (``from torch.distributed import all_reduce``) is not.
- :func:`register_ddp_hook` (``rec.watch_ddp(model)``) registers a DDP communication hook that
  averages each gradient bucket exactly as DDP's default hook does and times it from the bucket's
  launch (during backward) to its completion.

Both measure host-side time. On CPU (gloo) a collective's future completes when the data has
arrived; with NCCL a blocking call returns once the collective is queued on the GPU, so there
the host time is a launch time unless the host waits on it. Under DDP the all-reduce of early
buckets overlaps the rest of backward: that overlap counts as ``comm``, so ``compute_s`` is then
a lower bound of the rank's own work. Costs are measured by ``benchmarks/record_overhead.py``.
"""

from __future__ import annotations

import functools
from typing import Any

__all__ = ["COLLECTIVES", "Patch", "patch_collectives", "register_ddp_hook"]

COLLECTIVES: tuple[str, ...] = (
    "all_reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter", "reduce_scatter_tensor",
    "broadcast", "reduce", "all_to_all", "all_to_all_single", "barrier", "gather", "scatter",
    "all_gather_object", "broadcast_object_list",
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


def register_ddp_hook(model: Any, rec: Any, process_group: Any = None) -> None:
    """Register on ``model`` (a ``DistributedDataParallel``) an averaging all-reduce hook that
    adds each bucket's time, launch to completion, to ``rec``'s step."""
    import torch.distributed as dist

    if not hasattr(model, "register_comm_hook"):
        raise TypeError(f"model must be a torch.nn.parallel.DistributedDataParallel; got {type(model).__name__}")
    all_reduce = dist.all_reduce  # if time_collectives also wraps it, the overlap counts once
    now = rec.now

    def hook(group: Any, bucket: Any) -> Any:
        t = now()
        g = group if group is not None else dist.group.WORLD
        tensor = bucket.buffer()
        tensor.div_(g.size())  # average as DDP's default hook: divide, then sum

        def done(fut: Any) -> Any:
            rec.add_comm(t, now())
            return fut.value()[0]

        return all_reduce(tensor, group=g, async_op=True).get_future().then(done)

    import torch

    # DDP checks the hook's annotations at run time (this module's are strings)
    hook.__annotations__ = {"group": Any, "bucket": dist.GradBucket, "return": torch.futures.Future[torch.Tensor]}
    model.register_comm_hook(process_group, hook)
