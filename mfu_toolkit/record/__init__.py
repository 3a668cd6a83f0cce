"""Record your own job: per-rank step timings from inside the training loop.

>>> from mfu_toolkit.record import StepRecorder
>>> rec = StepRecorder("runs/job1")          # rank/world size from torch.distributed or RANK/WORLD_SIZE
>>> with rec.step(step=0, samples=32):       # one training step on this rank
...     with rec.data_wait(): ...            # optional: waiting for input
...     with rec.comm(): ...                 # optional: in (and waiting at) collectives
>>> with rec.event("checkpoint_save"): ...   # init, eval, checkpoint_save/load, other
>>> rec.close()
>>> run = mfu_toolkit.io.load_run("runs/job1")   # the folder reads back as one Run

- ``recorder``     :class:`StepRecorder` (the contract), :func:`launch_info`;
- ``folder``       the folder format (one JSON-lines file per rank and attempt), writer side;
- ``collectives``  timing of ``torch.distributed`` collectives and of DDP's and FSDP's gradient
  synchronisation (``GradientSync``: on by default in the two callbacks, so that a slow rank's
  peers waiting for it are not counted as busy);
- ``lightning``    :class:`~mfu_toolkit.record.lightning.RecorderCallback` (``pytorch_lightning``
  or ``lightning``), imported on first use;
- ``hf``           :class:`~mfu_toolkit.record.hf.RecorderTrainerCallback` (``transformers``);
- ``demo``         ``python -m mfu_toolkit.record.demo``: a real 4-process gloo job with a slow
  rank, checkpoints, a rank that dies and a relaunch, then its ``mfu analyze`` summary.

Nothing here imports pandas or torch unless the job uses them.
"""

from __future__ import annotations

from typing import Any

from .folder import FILE_RE, FORMAT_NAME, FORMAT_VERSION, file_name, next_attempt
from .recorder import EVENT_KINDS, StepRecorder, launch_info

__all__ = [
    "EVENT_KINDS",
    "FILE_RE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "StepRecorder",
    "file_name",
    "launch_info",
    "next_attempt",
    "RecorderCallback",
    "RecorderTrainerCallback",
]

_LAZY = {"RecorderCallback": "mfu_toolkit.record.lightning", "RecorderTrainerCallback": "mfu_toolkit.record.hf"}


def __getattr__(name: str) -> Any:
    """The framework callbacks load their framework only when asked for."""
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
