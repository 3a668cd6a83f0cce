"""A Lightning ``Callback`` that records every rank's steps with :class:`StepRecorder`.

::

    from mfu_toolkit.record.lightning import RecorderCallback
    trainer = Trainer(callbacks=[RecorderCallback("runs/job1")])
    trainer.fit(model, data)
    run = load_run("runs/job1")

A step is one optimizer step (the batches of one gradient-accumulation window), numbered by
``trainer.global_step`` so that steps repeat after a resume, as in the Run. It starts where the
previous step (or evaluation, or checkpoint) ended, and the time until ``on_train_batch_start``
is its data wait: Lightning fetches the batch in between. Validation is an ``eval`` event,
``trainer.save_checkpoint`` (what ``ModelCheckpoint`` calls) a ``checkpoint_save`` event. The
recorder is created in ``on_fit_start`` with ``trainer.global_rank`` and ``trainer.world_size``,
once the strategy has started its processes and wrapped the model.

Gradient synchronisation is timed by default (``time_gradient_sync=False`` turns it off): under
a DDP strategy a communication hook times each gradient bucket's all-reduce, under FSDP the
``torch.distributed`` collectives are timed (see
:class:`~mfu_toolkit.record.collectives.GradientSync`, which also says what neither sees). A
hook given to the strategy (``DDPStrategy(ddp_comm_hook=...)``) is wrapped in ``setup``, before
Lightning registers it. DDP takes one hook: one registered on the model by hand before
``on_fit_start`` is left alone (not timed; the header and a warning say so), and one registered
after it finds the recorder's there (give it to the strategy instead). Without this timing, the
ranks that wait for a slow one inside DDP's all-reduce look busy and the slow rank is not named.
The record file's header says which way was used (``grad_sync``). Works with ``lightning`` or ``pytorch_lightning``.
"""

from __future__ import annotations

import functools
import os
from typing import Any

from .collectives import GradientSync
from .recorder import StepRecorder

try:
    from lightning.pytorch.callbacks import Callback
except ImportError:  # the standalone package
    try:
        from pytorch_lightning.callbacks import Callback
    except ImportError as exc:
        raise ImportError("RecorderCallback needs Lightning: pip install 'mfu_toolkit[record]'") from exc

__all__ = ["RecorderCallback", "batch_size"]


def batch_size(batch: Any) -> int | None:
    """Samples in a batch: a tensor's first dimension, else that of its first element or value."""
    for _ in range(4):
        shape = getattr(batch, "shape", None)
        if shape is not None and len(shape):
            return int(shape[0])
        if isinstance(batch, dict) and batch:
            batch = next(iter(batch.values()))
        elif isinstance(batch, (list, tuple)) and batch:
            batch = batch[0]
        else:
            return None
    return None


class RecorderCallback(Callback):
    """Record steps, validation and checkpoint saves of ``Trainer.fit`` into ``folder``.

    ``recorder_options`` go to :class:`StepRecorder` (e.g. ``cuda_events=True``);
    ``time_gradient_sync`` times DDP's and FSDP's gradient synchronisation as ``comm``.
    """

    def __init__(self, folder: str | os.PathLike[str], *, time_gradient_sync: bool = True,
                 **recorder_options: Any) -> None:
        self.folder = folder
        self.options = recorder_options
        self.sync = GradientSync() if time_gradient_sync else None
        self.recorder: StepRecorder | None = None
        self._mark = 0.0
        self._eval_start: float | None = None
        self._begun_at: int | None = None
        self._samples: float | None = None
        self._saved: Any = None

    def setup(self, trainer: Any, pl_module: Any, stage: str) -> None:
        """Before the strategy wraps the model: time a comm hook the strategy will register."""
        strategy = getattr(trainer, "strategy", None)
        user_hook = getattr(strategy, "_ddp_comm_hook", None)
        if (stage == "fit" and self.sync is not None and callable(user_hook)
                and not getattr(user_hook, "_mfu_timed", False)):
            strategy._ddp_comm_hook = self.sync.timed(user_hook)

    def on_fit_start(self, trainer: Any, pl_module: Any) -> None:
        """The model is wrapped now: find its gradient synchronisation, then start recording."""
        if self.recorder is not None and not self.recorder.closed:
            return
        head: dict[str, Any] = {"framework_loop": "lightning"}
        if self.sync is not None:
            wrapped = getattr(trainer.strategy, "model", None)  # the DDP/FSDP wrapper, where there is one
            head["grad_sync"] = self.sync.attach(pl_module if wrapped is None else wrapped)
        self.recorder = rec = StepRecorder(self.folder, rank=trainer.global_rank, n_ranks=trainer.world_size,
                                           header=head, **self.options)
        if self.sync is not None:
            self.sync.bind(rec)
        self._mark = rec.now()
        save = trainer.save_checkpoint

        @functools.wraps(save)
        def timed_save(*args: Any, **kwargs: Any) -> Any:
            with rec.event("checkpoint_save", detail=f"global step {trainer.global_step}"):
                out = save(*args, **kwargs)
            self._mark = rec.now()
            return out

        self._saved = save
        trainer.save_checkpoint = timed_save

    def on_train_start(self, trainer: Any, pl_module: Any) -> None:
        if self.recorder is not None:
            self._mark = self.recorder.now()

    def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
        rec = self.recorder
        if rec is None:
            return
        now = rec.now()
        n = batch_size(batch)
        if not rec.in_step:
            self._begun_at, self._samples = trainer.global_step, None
            rec.begin_step(step=trainer.global_step, start=self._mark)
        if n is not None:
            self._samples = (self._samples or 0) + n
        rec.add_data_wait(now - self._mark)

    def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
        rec = self.recorder
        if rec is None or not rec.in_step:
            return
        if trainer.global_step != self._begun_at:  # the optimizer stepped: the step is complete
            rec.end_step(samples=self._samples)
        self._mark = rec.now()

    def on_validation_start(self, trainer: Any, pl_module: Any) -> None:
        if self.recorder is not None:
            sanity = getattr(trainer, "sanity_checking", False)
            self._eval_start = self.recorder.now() if sanity or self.recorder.in_step else self._mark

    def on_validation_end(self, trainer: Any, pl_module: Any) -> None:
        rec = self.recorder
        if rec is None or self._eval_start is None:
            return
        detail = "sanity check" if getattr(trainer, "sanity_checking", False) else f"global step {trainer.global_step}"
        rec.add_event("eval", self._eval_start, rec.now(), detail=detail)
        self._eval_start = None
        self._mark = rec.now()

    def on_train_end(self, trainer: Any, pl_module: Any) -> None:
        self._finish(trainer)

    def teardown(self, trainer: Any, pl_module: Any, stage: str) -> None:
        self._finish(trainer)

    def on_exception(self, trainer: Any, pl_module: Any, exception: BaseException) -> None:
        rec = self.recorder
        if rec is not None and rec.in_step:
            rec.end_step()  # keep what ran; the exception is Lightning's to report
        self._finish(trainer)

    def _finish(self, trainer: Any) -> None:
        if self._saved is not None:
            trainer.save_checkpoint = self._saved
            self._saved = None
        if self.sync is not None:
            self.sync.bind(None)  # a hook left on the model times nothing once the run ends
        if self.recorder is not None:
            self.recorder.close()
