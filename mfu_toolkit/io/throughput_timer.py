"""What DeepSpeed's throughput timer counts: the words its samples/s claims carry, in the deepspeed
format and inside Megatron-DeepSpeed and GPT-NeoX logs read by the megatron format alike.

From deepspeed/utils/timer.py (ThroughputTimer, created in deepspeed/runtime/engine.py),
https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/utils/timer.py:

1. the timer starts in the engine's forward() (or when DeepSpeed's own dataloader yields a batch) and
   stops at the end of step(), on the rank that prints: data loading outside the engine, evaluation
   and checkpoints are outside every timed span;
2. "epoch=E/micro_step=M/global_step=N" (DeepSpeed >= 0.8.0, commit 0f0e38c): samples =
   train_batch_size, the global batch of all data-parallel ranks, over the timed spans of one global
   step's micro-steps;
3. "E/N, RunningAvgSamplesPerSec=, CurrSamplesPerSec=" (0.7.0-0.7.7) and "E/N, SamplesPerSec="
   (before 0.7.0; the running average only): samples = train_micro_batch_size_per_gpu x data-parallel
   size, over one engine micro-step (N counts micro-steps);
4. the running average leaves out the timer's first start_step=2 steps.

A caller that runs forward() once per micro-batch but step() once per batch (Megatron-DeepSpeed)
restarts the timer at each forward: the timed span is then the last micro-batch's forward to the
optimizer step (:data:`UNDER_MEGATRON`). GPT-NeoX calls step() after every micro-batch
(megatron/training.py train_step): no such restart there.
"""

from __future__ import annotations

DS_TIMER_URL = "https://github.com/deepspeedai/DeepSpeed/blob/master/deepspeed/utils/timer.py"

# What one timer line's samples/s counts, by the line's form.
TIMER_COUNTS: dict[str, str] = {
    "global_step": (
        "train_batch_size (the global batch, all data-parallel ranks) / the forward-to-step time of the micro-steps "
        "of one global step on the printing rank (data loading outside the engine, evaluation and checkpoints left "
        "out; DeepSpeed >= 0.8 ThroughputTimer, " + DS_TIMER_URL + ")"),
    "micro_step": (
        "train_micro_batch_size_per_gpu × data-parallel size (one micro-step's samples, all ranks) / one engine "
        "micro-step's forward-to-step time on the printing rank (DeepSpeed 0.7 ThroughputTimer, " + DS_TIMER_URL + ")"),
    "running_only": (
        "train_micro_batch_size_per_gpu × data-parallel size (one micro-step's samples, all ranks) / one engine "
        "micro-step's forward-to-step time on the printing rank (DeepSpeed < 0.7 ThroughputTimer, "
        + DS_TIMER_URL + ")"),
}

# Appended where the timer runs inside Megatron-DeepSpeed: the span is part of each step.
UNDER_MEGATRON = ("; in a Megatron-DeepSpeed log forward() runs once per micro-batch and step() once per batch, "
                  "and the timer restarts at each forward(), so each timed span runs from the batch's last "
                  "forward() to the end of step()")
