"""Write the sample logs of :mod:`mfu_toolkit.examples` (``python -m mfu_toolkit.examples.make``).

Three small jobs, each written the way its tool writes it, with no real log behind them:

- ``megatron_train.log``: Megatron-LM's stdout for Llama 3 8B on 8 H100s (data parallel, bf16,
  8192-token sequences, global batch 32): 100 iterations logged every 10, a slow first interval,
  a checkpoint save at iteration 50, and the TFLOP/s per GPU Megatron prints, counted by its own
  formula (:func:`mfu_toolkit.flops.model_flops` with ``convention="megatron"``);
- ``kineto/rank{0,1}.pt.trace.json.gz``: PyTorch profiler traces of two FSDP ranks training
  Llama 3 8B, three profiled steps each: GEMM, attention and elementwise kernels, NCCL
  all-gathers and reduce-scatters beside them, a host-to-device copy and the DataLoader's wait.
  Rank 1 computes 3.5 % slower, so rank 0 waits for it in the last reduce-scatter of each step;
- ``recorded/``: what :class:`mfu_toolkit.record.StepRecorder` writes for a 4-rank job of
  Llama 3 8B (4,096-token sequences, 4 per rank): a launch whose rank 2 fails in step 27 (a CUDA
  error, which the recorder writes as a failure event) after checkpoints at steps 10 and 20, and
  a relaunch 45 s later that loads the checkpoint and redoes steps 20 to 39. Rank 3 computes 6 %
  slower than the others. The recorder runs on a clock of this module (``time`` of
  :mod:`mfu_toolkit.record.folder`, replaced while it writes), so its files come out the same on
  every run; a rank killed by its launcher writes no close record, so the one ``close()`` wrote
  for the failed launch is cut from its files.

The output is deterministic: running it again rewrites the same bytes (a test checks that the
shipped files are this module's output).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from unittest import mock

HERE = Path(__file__).resolve().parent
T0 = datetime(2025, 6, 2, 8, 0, 0, tzinfo=timezone.utc)  # the jobs' first second
H100 = "NVIDIA H100 80GB HBM3"  # as torch.cuda.get_device_name() and Kineto name it

__all__ = ["FILES", "kineto", "main", "megatron", "recorded", "write_all"]


def _stamp(seconds: float) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


# --- Megatron-LM stdout --------------------------------------------------------------------------
MEGATRON = {"world": 8, "global_batch": 32, "seq_len": 8192, "iters": 100, "log_interval": 10, "save_at": 50}


def megatron(out: Path) -> None:
    """Llama 3 8B on 8 GPUs (DP 8): iteration lines every 10, a warm-up interval, a save at 50."""
    from ..flops import model_flops

    cfg, rng = MEGATRON, random.Random(11)
    theirs = model_flops("llama3-8b", seq_len=cfg["seq_len"], convention="megatron").training_per_sample
    args = {"bf16": "True", "global_batch_size": cfg["global_batch"], "hidden_size": 4096,
            "log_interval": cfg["log_interval"], "micro_batch_size": 1, "num_attention_heads": 32,
            "num_layers": 32, "save_interval": cfg["save_at"], "seq_length": cfg["seq_len"],
            "tensor_model_parallel_size": 1, "train_iters": cfg["iters"], "world_size": cfg["world"]}
    lines = [f"using world size: {cfg['world']}, data-parallel size: {cfg['world']}, context-parallel size: 1, "
             "tensor-model-parallel size: 1, pipeline-model-parallel size: 1",
             "------------------------ arguments ------------------------"]
    lines += [f"  {k} {'.' * (48 - len(k))} {v}" for k, v in args.items()]
    lines += ["-------------------- end of arguments ---------------------",
              f"[after dataloaders are built] datetime: {_stamp(48)} ",
              f"[before the start of training step] datetime: {_stamp(50)} "]
    t, n = 50.0, cfg["log_interval"]
    for it in range(n, cfg["iters"] + 1, n):
        ms = (6150.0 if it == n else 4300.0) + rng.uniform(-25.0, 25.0)
        t += n * ms / 1000
        tflops = theirs * cfg["global_batch"] / (ms / 1000) / cfg["world"] / 1e12
        lines.append(
            f" [{_stamp(t)}] iteration {it:8d}/{cfg['iters']:8d} | consumed samples: {it * cfg['global_batch']:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | "
            f"learning rate: {3e-4 * min(1.0, it / 50):.6E} | global batch size: {cfg['global_batch']:5d} | "
            f"lm loss: {9.8 - 0.031 * it:.6E} | loss scale: 1.0 | grad norm: {1.4 - 0.004 * it:.3f} | "
            f"number of skipped iterations: {0:3d} | number of nan iterations: {0:3d} |")
        if it == cfg["save_at"]:
            save_ms = 17_850.0 + rng.uniform(-100.0, 100.0)
            lines += [f"saving checkpoint at iteration {it:7d} to /checkpoints/llama3-8b in torch_dist format",
                      f"  successfully saved checkpoint from iteration {it:7d} to /checkpoints/llama3-8b "
                      "[ t 1/1, p 1/1 ]",
                      "(min, max) time across ranks (ms):",
                      f"    save-checkpoint ................................: ({save_ms - 61.3:.2f}, {save_ms:.2f})"]
            t += save_ms / 1000
    _write(out / "megatron_train.log", ("\n".join(lines) + "\n").encode())


# --- PyTorch profiler (Kineto) traces --------------------------------------------------------------
_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_kernel"
_FWD = ((_GEMM, 0.30), ("flash_fwd_kernel", 0.18), ("void at::native::vectorized_elementwise_kernel<4, "
        "at::native::silu_kernel>", 0.04), (_GEMM.replace("_tn_", "_nn_"), 0.48))
_BWD = ((_GEMM.replace("_tn_", "_nt_"), 0.40), ("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel", 0.22),
        ("void at::native::vectorized_elementwise_kernel<4, at::native::silu_backward_kernel>", 0.03),
        (_GEMM.replace("_tn_", "_nn_"), 0.35))
_ALL_GATHER = "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
_REDUCE_SCATTER = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
_LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


class _Trace:
    """One rank's trace events, µs since the epoch."""

    def __init__(self) -> None:
        self.events: list[dict] = [
            {"name": "process_name", "ph": "M", "pid": 4100, "tid": 0, "args": {"name": "python3"}},
            {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "GPU 0"}},
        ]
        self.corr = 20_000

    def kernel(self, name: str, ts: int, dur: int, stream: int = 7, cat: str = "kernel") -> int:
        self.corr += 1
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": stream, "ts": ts, "dur": dur,
                            "args": {"device": 0, "stream": stream, "correlation": self.corr}})
        return ts + dur

    def span(self, cat: str, name: str, ts: int, dur: int, pid: int = 4100, tid: int = 4100) -> None:
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur,
                            "args": {"External id": self.corr}})


def _kineto_step(tr: _Trace, rng: random.Random, ts: int, compute_us: float, barrier: int) -> int:
    """One step on one rank from ``ts``: the forward and backward blocks with FSDP's collectives beside
    them, then the last reduce-scatter, which ends at ``barrier`` (when the slowest rank gets there),
    and the optimizer. Returns the GPU time the step ends."""
    tr.span("user_annotation", _LOADER, ts + 40, 2100 + rng.randrange(300))
    g = tr.kernel("Memcpy HtoD (Pinned -> Device)", ts + 2600, 420, stream=7, cat="gpu_memcpy") + 30
    for parts, share in ((_FWD, 1 / 3), (_BWD, 2 / 3)):
        for block in range(8):  # 4 layers per block
            block_us = compute_us * share / 8
            tr.kernel(_ALL_GATHER, g + 15, int(block_us * 0.28), stream=20)
            if parts is _BWD and block:
                tr.kernel(_REDUCE_SCATTER, g + int(block_us * 0.35), int(block_us * 0.30), stream=20)
            for name, frac in parts:
                g = tr.kernel(name, g, max(1, int(block_us * frac) - 12 + rng.randrange(8))) + 4
    g = tr.kernel(_REDUCE_SCATTER, g + 10, max(barrier, g + 10) - g - 10 + 5200, stream=20)
    return tr.kernel("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous "
                     "namespace)::FusedAdamMathFunctor>", g + 8, 14_500)


def kineto(out: Path) -> None:
    """Two FSDP ranks, ProfilerStep#10..#12; rank 1's kernels take 3.5 % longer."""
    rng = random.Random(12)
    base = int((T0.timestamp() + 600) * 1e6)
    compute = (1_040_000.0, 1_040_000.0 * 1.035)  # µs of compute kernels per step, per rank
    traces = [_Trace(), _Trace()]
    t = base
    for step in range(10, 13):
        ends = []
        barrier = t + 2600 + 450 + int(max(compute)) + 400  # when rank 1 reaches the last reduce-scatter
        for rank, tr in enumerate(traces):
            start = t + 35 * rank
            end = _kineto_step(tr, rng, start, compute[rank], barrier)
            ends.append(end)
        t_end = max(ends) + 900
        for rank, tr in enumerate(traces):
            start = t + 35 * rank
            tr.span("user_annotation", f"ProfilerStep#{step}", start, t_end - start)
            tr.span("gpu_user_annotation", f"ProfilerStep#{step}", start + 2600, ends[rank] - start - 2600, 0, 7)
        t = t_end + 60
    folder = out / "kineto"
    for rank, tr in enumerate(traces):
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": H100, "totalGlobalMem": 85_020_819_456, "computeMajor": 9,
                                     "computeMinor": 0, "numSms": 132}],
               "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
               "traceEvents": sorted(tr.events, key=lambda e: (e.get("ts", 0), e.get("tid", 0))),
               "traceName": f"rank{rank}.pt.trace.json", "displayTimeUnit": "ms",
               "baseTimeNanoseconds": 1_748_800_000_000_000_000}
        raw = json.dumps(doc, separators=(",", ":")).encode()
        _write(folder / f"rank{rank}.pt.trace.json.gz", gzip.compress(raw, compresslevel=9, mtime=0))


# --- a recorded folder (StepRecorder) -------------------------------------------------------------
class _Clock:
    """The recorder's clocks, set by hand: ``perf_counter``/``monotonic`` seconds and the wall clock."""

    def __init__(self, t0_unix: float) -> None:
        self.now, self._t0 = 0.0, t0_unix

    def perf_counter(self) -> float:
        return self.now

    monotonic = perf_counter

    def time(self) -> float:
        return self._t0 + self.now


RECORDED = {"world": 4, "samples": 4, "seq_len": 4096, "step_s": 2.30, "slow_rank": 3, "slow": 1.06,
            "die_rank": 2, "die_at": 27, "checkpoint_every": 10, "steps": 40}


def _launch(folder: Path, clock: _Clock, attempt: int, t: float, steps: range, rng: random.Random) -> float:
    """One launch of the 4 ranks from ``t``: init (and the checkpoint load of a relaunch), the steps,
    a checkpoint after every 10th. In the first launch, rank ``die_rank``'s step ``die_at`` raises (the
    recorder writes a failure event over it) and the launch ends there."""
    from ..record import StepRecorder

    cfg = RECORDED
    clock.now = t
    recs = [StepRecorder(folder, rank=r, n_ranks=cfg["world"], local_rank=r, attempt=attempt,
                         header={"accelerator": H100, "host": "node0", "pid": 7300 + 10 * attempt + r,
                                 "boot_id": "3e0b9c1a-5d2f-4c1e-9a57-0d6c2b8e4f11"}) for r in range(cfg["world"])]
    init = 15.0 + 2.0 * attempt
    for rec in recs:
        rec.add_event("init", t, t + init - rng.uniform(0.0, 0.4))
    t += init
    if attempt:
        for rec in recs:
            rec.add_event("checkpoint_load", t, t + 9.5, detail=f"step {steps.start}")
        t += 9.6
    for step in steps:
        if attempt == 0 and step == cfg["die_at"]:  # a rank's step raises; the others wait in it until killed
            try:
                with recs[cfg["die_rank"]].step(step=step, samples=cfg["samples"]):
                    clock.now = t = t + 1.7
                    raise RuntimeError("CUDA error: an illegal memory access was encountered")
            except RuntimeError:
                pass
            break
        tokens = cfg["samples"] * cfg["seq_len"]
        compute = [cfg["step_s"] * 0.93 * (cfg["slow"] if r == cfg["slow_rank"] else 1.0) + rng.uniform(-0.008, 0.008)
                   for r in range(cfg["world"])]
        wait = [0.012 + rng.uniform(0.0, 0.006) for _ in compute]
        end = t + max(c + w for c, w in zip(compute, wait, strict=True)) + 0.05
        clock.now = end
        for r, rec in enumerate(recs):
            rec.begin_step(step=step, samples=cfg["samples"], tokens=tokens, start=t)
            rec.add_data_wait(wait[r])
            rec.add_comm(t + wait[r] + compute[r], end)
            rec.end_step(end=end)
        t = end
        if (step + 1) % cfg["checkpoint_every"] == 0:
            clock.now = t + 6.4
            for rec in recs:
                rec.add_event("checkpoint_save", t, t + 6.4, detail=f"step {step + 1}")
            t += 6.4
    clock.now = t
    for rec in recs:
        rec.close()
        if attempt == 0:  # killed by the launcher: the close record is not written
            lines = rec.path.read_bytes().splitlines(keepends=True)
            rec.path.write_bytes(b"".join(lines[:-1]))
    return t


def recorded(out: Path) -> None:
    """Two launches of a 4-rank job into one folder (see the module docstring)."""
    from ..record import folder as folder_module
    from ..record import recorder as recorder_module

    folder = out / "recorded"
    clock = _Clock(T0.timestamp() + 1200)
    rng = random.Random(13)
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK",
                                                            "TORCHELASTIC_RESTART_COUNT")}
    with (mock.patch.object(folder_module, "time", clock),
          mock.patch.object(recorder_module, "_now", clock.perf_counter),
          mock.patch.dict(os.environ, env, clear=True)):
        t = _launch(folder, clock, 0, 0.0, range(RECORDED["steps"]), rng)
        _launch(folder, clock, 1, t + 45.0, range(20, RECORDED["steps"]), rng)


# --- all ----------------------------------------------------------------------------------------------
FILES = ("megatron_train.log", "kineto/rank0.pt.trace.json.gz", "kineto/rank1.pt.trace.json.gz",
         *(f"recorded/rank{r:05d}.attempt{a:03d}.jsonl" for a in (0, 1) for r in range(4)))


def write_all(out: Path) -> list[Path]:
    """Write every example into ``out`` (its ``kineto/`` and ``recorded/`` are made anew)."""
    for sub in ("kineto", "recorded"):
        if (out / sub).exists():
            shutil.rmtree(out / sub)
    megatron(out)
    kineto(out)
    recorded(out)
    return [out / name for name in FILES]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mfu_toolkit.examples.make", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=HERE, help="folder to write into (default: the package's own)")
    a = ap.parse_args(argv)
    paths = write_all(a.out)
    total = sum(p.stat().st_size for p in paths)
    print(f"wrote {len(paths)} files, {total / 1024:.1f} KiB, into {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
