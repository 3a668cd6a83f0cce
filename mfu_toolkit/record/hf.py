"""A Hugging Face ``TrainerCallback`` that records every rank's steps with :class:`StepRecorder`.

::

    from mfu_toolkit.record.hf import RecorderTrainerCallback
    trainer = Trainer(model=model, args=args, train_dataset=ds,
                      callbacks=[RecorderTrainerCallback("runs/job1")])
    trainer.train()
    run = load_run("runs/job1")

A step is one optimizer step (``on_step_begin`` → ``on_step_end``), numbered by
``state.global_step`` before it (the Trainer's steps count from 1, the Run's from 0; a resumed
run repeats the steps after its checkpoint). It starts where the previous step, evaluation or
save ended; the time until ``on_step_begin`` is its data wait (the Trainer fetches the batches of
the accumulation window there). Samples per step: ``per_device_train_batch_size ×
gradient_accumulation_steps``. Logging between steps is an ``other`` event, evaluation an
``eval`` event (from its start to ``on_evaluate``), a checkpoint a ``checkpoint_save`` event
(to ``on_save``, which the Trainer calls once the files are written). The recorder is created in
``on_train_begin`` with ``args.process_index`` and ``args.world_size``.

Gradient synchronisation is timed by default (``time_gradient_sync=False`` turns it off): the
Trainer (through Accelerate) wraps the model in ``DistributedDataParallel`` before
``on_train_begin`` but hands callbacks the unwrapped model, so the wrapper is looked up from it
(:func:`~mfu_toolkit.record.collectives.find_ddp`) and given a communication hook that times each
gradient bucket's all-reduce; under FSDP the ``torch.distributed`` collectives are timed (see
:class:`~mfu_toolkit.record.collectives.GradientSync` for what neither sees). Without it, the
ranks that wait for a slow one inside DDP's all-reduce look busy. The record file's header says
which way was used (``grad_sync``).
"""

from __future__ import annotations

import os
from typing import Any

from .collectives import GradientSync
from .recorder import StepRecorder

try:
    from transformers import TrainerCallback
except ImportError as exc:
    raise ImportError("RecorderTrainerCallback needs transformers: pip install 'mfu_toolkit[record]'") from exc

__all__ = ["RecorderTrainerCallback"]


class RecorderTrainerCallback(TrainerCallback):
    """Record the steps, evaluations and saves of ``Trainer.train`` into ``folder``.

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

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is None or self.recorder.closed:
            head: dict[str, Any] = {"framework_loop": "transformers Trainer"}
            model = kwargs.get("model")
            if self.sync is not None and model is not None:
                head["grad_sync"] = self.sync.attach(model)
            self.recorder = StepRecorder(self.folder, rank=args.process_index, n_ranks=args.world_size,
                                         header=head, **self.options)
            if self.sync is not None:
                self.sync.bind(self.recorder)
        self._mark = self.recorder.now()

    def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self.recorder
        if rec is None:
            return
        now = rec.now()
        samples = args.per_device_train_batch_size * args.gradient_accumulation_steps
        rec.begin_step(step=state.global_step, samples=samples, start=self._mark)
        rec.add_data_wait(now - self._mark)

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self.recorder
        if rec is not None and rec.in_step:
            rec.end_step()
            self._mark = rec.now()

    def on_log(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self.recorder
        if rec is not None and self._eval_start is None and not rec.in_step:
            now = rec.now()
            rec.add_event("other", self._mark, now, detail="log")
            self._mark = now

    def on_prediction_step(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.recorder is not None and self._eval_start is None:
            self._eval_start = self._mark  # the evaluation began where training paused

    def on_evaluate(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self.recorder
        if rec is None:
            return
        now = rec.now()
        start = self._mark if self._eval_start is None else self._eval_start
        rec.add_event("eval", start, now, detail=f"global step {state.global_step}")
        self._eval_start, self._mark = None, now

    def on_save(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        rec = self.recorder
        if rec is not None:
            now = rec.now()
            rec.add_event("checkpoint_save", self._mark, now, detail=f"checkpoint-{state.global_step}")
            self._mark = now

    def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.sync is not None:
            self.sync.bind(None)  # a hook left on the model times nothing once training ends
        if self.recorder is not None:
            self.recorder.close()
