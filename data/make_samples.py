"""Write the small sample logs, one or more per format, that ``notebooks/03_loading_logs.ipynb`` loads.

They are the project's own synthetic logs, written in each tool's format (nothing is copied from
real logs): an 8-GPU job (2 nodes × 4 GPUs) seen through MLPerf, Megatron-LM, TensorBoard,
torchtitan, Hugging Face Trainer, Lightning, Weights & Biases, the PyTorch profiler, per-rank
operation traces, a goodput event log and SLURM, plus a generic CSV with its own column names
and one deliberately damaged file; besides, five small jobs of their own: two DCGM exporter
scrapes of a 4-GPU node (one GPU clocked low, one MIG instance beside them), a NeMo 2 job with an
in-job restart, a DeepSpeed fp16 job with overflow steps, a MaxText TPU job with its compile and
async-dispatch steps, and a Megatron-LM job that prints its timers. The output is deterministic
(fixed seed, fixed times, gzip without a timestamp): running the script again rewrites the same
bytes.

    .venv/bin/python data/make_samples.py [--out data/samples]

The TensorBoard files are framed and encoded with the small TFRecord/protobuf writer of the
test helpers (``tests/_samples.py``), which is independent of the toolkit's reader.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import shutil
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from _samples import event, frame  # noqa: E402  (TFRecord framing + protobuf Event encoder)

SEED = 3
T0 = datetime(2025, 3, 4, 9, 0, 0, tzinfo=timezone.utc)  # the sample job's first second
T0_S = T0.timestamp()
ESC = "\x1b"


def stamp(seconds: float, fmt: str = "%Y-%m-%d %H:%M:%S") -> str:
    return (T0 + timedelta(seconds=seconds)).strftime(fmt)


def write_text(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode())
    return path


# --- MLPerf Training ---------------------------------------------------------------------------
def mlperf(out: Path) -> None:
    """8 ranks log init_start each; SYSJSON gives 2 nodes × 4; 4 blocks of 25 s, each with an eval."""
    t = int(T0_S * 1000)

    def rec(key, ms, value=None, event_type="POINT_IN_TIME", **meta):
        body = {"namespace": "", "time_ms": ms, "event_type": event_type, "key": key, "value": value,
                "metadata": {"file": "train.py", "lineno": 100, **meta}}
        return ":::MLLOG " + json.dumps(body)

    sysjson = json.dumps({"submitter": "Example", "system_name": "2xEXAMPLE_H100", "number_of_nodes": "2",
                          "accelerators_per_node": "4", "accelerator_model_name": "NVIDIA H100-SXM5-80GB"})
    lines = [":::SYSJSON " + sysjson, ":::SYSJSON " + sysjson]
    lines += [rec("init_start", t + 3 * r, event_type="INTERVAL_START") for r in range(8)]
    lines += [
        rec("submission_benchmark", t + 40, "llama2_70b_lora"),
        rec("submission_org", t + 40, "Example"),
        rec("submission_platform", t + 40, "2xEXAMPLE_H100"),
        rec("global_batch_size", t + 41, 8),
        rec("max_sequence_length", t + 41, 8192),
        rec("init_stop", t + 62_000, event_type="INTERVAL_END"),
        rec("run_start", t + 62_000, event_type="INTERVAL_START"),
    ]
    now, samples = t + 62_000, 0
    rng = np.random.default_rng(SEED)
    for block in range(4):
        lines.append(rec("block_start", now, event_type="INTERVAL_START", samples_count=samples))
        dur = 25_000 + int(rng.integers(-400, 400))
        now += dur
        samples += 96
        lines.append(rec("train_loss", now, round(1.6 - 0.12 * block, 4), samples_count=samples))
        lines.append(rec("tracked_stats", now, {"throughput": round(96 / (dur / 1000), 3)}, step=samples))
        lines.append(rec("block_stop", now, event_type="INTERVAL_END", samples_count=samples))
        lines.append(rec("eval_start", now, event_type="INTERVAL_START", samples_count=samples))
        now += 6_000
        lines.append(rec("eval_accuracy", now, round(0.962 - 0.01 * block, 4), samples_count=samples))
        lines.append(rec("eval_stop", now, event_type="INTERVAL_END", samples_count=samples))
    lines.append(rec("run_stop", now, event_type="INTERVAL_END", samples_count=samples, status="success"))
    write_text(out / "mlperf_result_0.txt", "\n".join(lines) + "\n")


# --- Megatron-LM stdout ----------------------------------------------------------------------
def megatron(out: Path) -> None:
    """60 iterations logged every 10 (ms means over the interval), a checkpoint save at 30."""
    rng = np.random.default_rng(SEED + 1)
    lines = [
        "using world size: 8, data-parallel size: 2, context-parallel size: 1, tensor-model-parallel size: 2, "
        "pipeline-model-parallel size: 2",
        "------------------------ arguments ------------------------",
        "  global_batch_size ............................... 64",
        "  log_interval .................................... 10",
        "  seq_length ...................................... 4096",
        "-------------------- end of arguments ---------------------",
        f"[after dataloaders are built] datetime: {stamp(40)} ",
        f"[before the start of training step] datetime: {stamp(42)} ",
    ]
    t = 42.0
    for it in range(10, 61, 10):
        ms = (2400.0 if it == 10 else 1310.0) + float(rng.normal(0, 6))
        t += 10 * ms / 1000
        skipped = 1 if it == 40 else 0
        lines.append(
            f" [{stamp(t)}] iteration {it:8d}/{60:8d} | consumed samples: {it * 64:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {412.0 * 1310 / ms:.1f} | "
            f"learning rate: {3e-4 * min(1, it / 30):.6E} | global batch size: {64:5d} | "
            f"lm loss: {7.2 - 0.05 * it:.6E} | loss scale: 1.0 | grad norm: {1.2 - 0.005 * it:.3f} | "
            f"number of skipped iterations: {skipped:3d} | number of nan iterations: {0:3d} |"
        )
        if it == 30:
            lines.append(f"saving checkpoint at iteration {it:7d} to /checkpoints/sample in torch_dist format")
            lines.append(f"  successfully saved checkpoint from iteration {it:7d} to /checkpoints/sample [ t 1/2, p 1/2 ]")
            lines.append("(min, max) time across ranks (ms):")
            lines.append("    save-checkpoint ................................: (6950.12, 7012.40)")
            t += 7.0
    write_text(out / "megatron_train.log", "\n".join(lines) + "\n")


def megatron_ci(out: Path) -> None:
    """CI golden values: 40 steps of iteration-time (s; step 1 is 'nan'), a save at 20 and a resume."""
    rng = np.random.default_rng(SEED + 2)
    it = {str(i): ("nan" if i == 1 else round((6.5 if i == 2 else 1.14) + float(rng.normal(0, 0.01)), 5))
          for i in range(1, 41)}
    it["21"] = 5.9  # the first step after the resume is slow again
    loss = {str(i): round(10.8 - 0.06 * i, 5) for i in range(1, 41)}
    doc = {
        "lm loss": {"start_step": 1, "end_step": 40, "step_interval": 1, "values": loss},
        "iteration-time": {"start_step": 1, "end_step": 40, "step_interval": 1, "values": it},
    }
    folder = out / "megatron_ci"
    write_text(folder / "golden_values_dev_dgx_h100.json", json.dumps(doc, indent=4) + "\n")
    write_text(folder / "model_config.yaml", "ENV_VARS:\n  CUDA_DEVICE_MAX_CONNECTIONS: 1\nMODEL_ARGS:\n"
               "  --global-batch-size: 32\n  --seq-length: 2048\n  --train-iters: 40\n  --save-interval: 20\n"
               "  --log-interval: 1\nTEST_TYPE: ckpt-resume\n")


# --- TensorBoard (Megatron's event files) -------------------------------------------------------
def tensorboard(out: Path) -> None:
    """Three launches of one job: the first dies in set-up, the second after 12 steps, the third runs 20."""
    folder = out / "tensorboard"
    folder.mkdir(parents=True, exist_ok=True)
    args = {"world_size": "8", "global_batch_size": "64", "seq_length": "4096", "log_interval": "2"}
    rng = np.random.default_rng(SEED + 3)
    launches = [(T0_S, 4101, []), (T0_S + 300, 4377, list(range(2, 13, 2))), (T0_S + 900, 4950, list(range(10, 31, 2)))]
    for t0, pid, steps in launches:
        data = frame(event(t0, file_version="brain.Event:2"))
        data += frame(event(t0 + 0.5, texts=args))
        t = t0 + 45.0  # set-up
        for k, s in enumerate(steps):
            mean = 1.31 + float(rng.normal(0, 0.01)) + (1.2 if k == 0 else 0.0)
            t += 2 * mean
            data += frame(event(t, s, scalars={"iteration-time": mean, "lm loss": 7.0 - 0.04 * s,
                                               "batch-size": 64.0, "learning-rate": 3e-4}))
        (folder / f"events.out.tfevents.{int(t0)}.node-0.{pid}.0").write_bytes(data)


# --- torchtitan ---------------------------------------------------------------------------------
def torchtitan(out: Path) -> None:
    """Two ranks, prefixed and coloured, logging every 5 steps; step 1 is the slow first step."""
    rng = np.random.default_rng(SEED + 4)
    lines = []
    for r in range(2):
        lines.append(f"[rank{r}]:[titan] {stamp(30)},{120 + r:03d} - root - INFO - Training starts at step 1.")
    t = 30.12
    for step in (1, 5, 10, 15, 20):
        n = 1 if step == 1 else (4 if step == 5 else 5)
        per = (9.5 if step == 1 else 1.02) + float(rng.normal(0, 0.005))
        t += n * per
        tps = int(8192 / per)  # tokens per second per GPU
        for r in range(2):
            ts = stamp(t) + f",{int((t % 1) * 1000) + r:03d}"
            lines.append(
                f"[rank{r}]:[titan] {ts} - root - INFO - {ESC}[31mstep: {step:2d}  {ESC}[32mloss: {8.1 - 0.2 * step:7.4f}  "
                f"{ESC}[33mmemory: 61.02GiB(76.93%)  {ESC}[34mtps: {tps:,}  {ESC}[36mtflops: {tps * 6 * 8e9 / 1e12:.2f}  "
                f"{ESC}[35mmfu: {tps * 6 * 8e9 / 989e12 * 100:.2f}%{ESC}[39m")
    write_text(out / "torchtitan_train.log", "\n".join(lines) + "\n")


# --- Hugging Face Trainer --------------------------------------------------------------------
def hf_trainer(out: Path) -> None:
    """trainer_state.json of 120 steps (loss every 20, evals at 60 and 120) and all_results.json."""
    hist = []
    for step in range(20, 121, 20):
        hist.append({"epoch": round(step / 120, 2), "grad_norm": round(1.9 - step / 100, 4),
                     "learning_rate": round(2e-5 * (1 - step / 120), 10), "loss": round(1.8 - step / 200, 4), "step": step})
        if step % 60 == 0:
            hist.append({"epoch": round(step / 120, 2), "eval_loss": round(1.5 - step / 400, 4), "eval_runtime": 31.5,
                         "eval_samples_per_second": 63.5, "eval_steps_per_second": 1.0, "step": step})
    hist.append({"epoch": 1.0, "step": 120, "total_flos": 4.1e17, "train_loss": 1.52, "train_runtime": 483.0,
                 "train_samples_per_second": 7.95, "train_steps_per_second": 0.248})
    state = {"best_metric": None, "epoch": 1.0, "eval_steps": 60, "global_step": 120, "is_world_process_zero": True,
             "log_history": hist, "logging_steps": 20, "max_steps": 120, "num_train_epochs": 1,
             "save_steps": 60, "train_batch_size": 4}
    folder = out / "hf_trainer"
    write_text(folder / "trainer_state.json", json.dumps(state, indent=2) + "\n")
    write_text(folder / "all_results.json", json.dumps({"epoch": 1.0, "eval_loss": 1.2, "train_loss": 1.52,
                                                        "train_runtime": 483.0}, indent=4) + "\n")


# --- PyTorch Lightning CSVLogger -----------------------------------------------------------------
def lightning(out: Path) -> None:
    """version_0 dies after step 99; version_1 resumes from the step-49 checkpoint and ends at 199."""
    rng = np.random.default_rng(SEED + 5)
    folder = out / "lightning_logs"
    for version, (first, last, t) in enumerate([(9, 99, T0_S + 20), (59, 199, T0_S + 400)]):
        rows = ["epoch,step,train_loss_step,val_loss,timestamp"]
        for step in range(first, last + 1, 10):
            t += 10 * (0.52 + float(rng.normal(0, 0.004))) + (4.0 if step == first else 0.0)
            rows.append(f"{step // 100},{step},{3.2 - step / 150:.4f},,{t:.3f}")
            if step % 50 == 49:
                t += 6.0
                rows.append(f"{step // 100},{step},,{3.1 - step / 160:.4f},")
        write_text(folder / f"version_{version}" / "metrics.csv", "\n".join(rows) + "\n")
        write_text(folder / f"version_{version}" / "hparams.yaml", "lr: 0.0003\nbatch_size: 32\nn_layer: 12\n")


# --- Weights & Biases exports ------------------------------------------------------------------
def wandb(out: Path) -> None:
    """History (loss every 10 steps, an eval) and 30-second system stats of 8 GPUs over 6 minutes."""
    rng = np.random.default_rng(SEED + 6)
    run_t0 = T0_S + 10
    cols = ["train/loss", "train/learning_rate", "train/global_step", "eval/loss", "eval/runtime",
            "_timestamp", "_runtime", "_step", "train/train_runtime"]
    rows, t, k = [",".join(cols)], 25.0, 0
    for step in range(10, 101, 10):
        t += 10 * (3.1 + float(rng.normal(0, 0.03)))
        rows.append(f"{1.9 - step / 150:.4f},{2e-5:.1e},{step},,,{run_t0 + t:.3f},{t:.3f},{k},")
        k += 1
        if step == 50:
            t += 22.0
            rows.append(f",,{step},{1.61:.4f},22.0,{run_t0 + t:.3f},{t:.3f},{k},")
            k += 1
    rows.append(f",,100,,,{run_t0 + t + 1:.3f},{t + 1:.3f},{k},{t - 25:.1f}")
    folder = out / "wandb"
    write_text(folder / "history.csv", "\n".join(rows) + "\n")
    gcols = [f"gpu.{g}.{m}" for g in range(8) for m in ("gpu", "memoryAllocated", "powerWatts", "temp")]
    srows = [",".join(["_timestamp", "cpu", "memory", *gcols])]
    for i in range(13):
        ts = run_t0 + 30 * i
        busy = 0 < i < 12
        vals = []
        for g in range(8):
            util = (96 + float(rng.normal(0, 1.5))) if busy else float(rng.uniform(0, 3))
            if busy and i == 6:  # the eval: utilisation stays high while no training step runs
                util = 88 + float(rng.normal(0, 2))
            vals += [f"{min(util, 100):.1f}", f"{(71 if busy else 2) + float(rng.normal(0, 0.3)):.2f}",
                     f"{(640 if busy else 90) + float(rng.normal(0, 15)):.1f}", f"{(67 if busy else 33) + g % 3}"]
        srows.append(",".join([f"{ts:.3f}", f"{(12 if busy else 2):.1f}", "8.4", *vals]))
    write_text(folder / "system_stats.csv", "\n".join(srows) + "\n")
    write_text(folder / "wandb-summary.json", json.dumps({"train/loss": 1.2333, "train/global_step": 100,
                                                          "_runtime": t + 1, "_step": k}) + "\n")


# --- PyTorch profiler (Kineto) traces ------------------------------------------------------------
def kineto(out: Path) -> None:
    """Two ranks of one job, three ProfilerSteps each: GEMMs, elementwise kernels, an NCCL all-reduce,
    host-to-device copies, plus the CPU ops, runtime calls and flow events a real trace carries."""
    rng = np.random.default_rng(SEED + 7)
    base = 1_741_078_800_000_000  # epoch µs of the first step on rank 0
    folder = out / "kineto"
    folder.mkdir(parents=True, exist_ok=True)
    for rank in range(2):
        evs: list[dict] = [
            {"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "python"}},
            {"name": "process_name", "ph": "M", "pid": 1, "tid": 0, "args": {"name": "GPU 0"}},
        ]
        t = base + 150 * rank
        corr = 1000
        for step in range(5, 8):
            span = 48_000 + int(rng.integers(0, 1500)) + (2500 if rank == 1 else 0)
            evs.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": 0, "tid": 11,
                        "ts": t, "dur": span, "args": {"External id": corr}})
            evs.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{step}", "pid": 1, "tid": 7,
                        "ts": t + 200, "dur": span - 300, "args": {"External id": corr}})
            g = t + 900  # GPU time cursor
            evs.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pinned -> Device)", "pid": 1, "tid": 9,
                        "ts": g, "dur": 700, "args": {"stream": 9, "bytes": 4194304}})
            g += 900
            for layer in range(6):
                for name, dur in (("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64", 3100),
                                  ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>", 450),
                                  ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_nn_n_tilesize128x128x64", 2200)):
                    corr += 1
                    d = dur + int(rng.integers(-40, 40))
                    launch = t + 300 + layer * 700
                    evs.append({"ph": "X", "cat": "cpu_op", "name": "aten::mm" if "gemm" in name else "aten::gelu",
                                "pid": 0, "tid": 11, "ts": launch, "dur": 40, "args": {"External id": corr,
                                "Input Dims": [[4096, 4096], [4096, 4096]]}})
                    evs.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 0, "tid": 11,
                                "ts": launch + 20, "dur": 6, "args": {"correlation": corr}})
                    evs.append({"ph": "s", "id": corr, "pid": 0, "tid": 11, "ts": launch + 20, "cat": "ac2g", "name": "ac2g"})
                    evs.append({"ph": "X", "cat": "kernel", "name": name, "pid": 1, "tid": 7, "ts": g, "dur": d,
                                "args": {"stream": 7, "correlation": corr, "grid": [132, 1, 1], "block": [384, 1, 1]}})
                    evs.append({"ph": "f", "id": corr, "pid": 1, "tid": 7, "ts": g, "cat": "ac2g", "name": "ac2g", "bp": "e"})
                    g += d + 60
            g += 2500 if rank == 0 else 300  # rank 0 waits for rank 1 before the all-reduce
            ar = 6000 + int(rng.integers(-100, 100))
            evs.append({"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*)",
                        "pid": 1, "tid": 20, "ts": g, "dur": ar, "args": {"stream": 20, "correlation": corr + 1}})
            t += span + 400
        doc = {"schemaVersion": 1,
               "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85020819456,
                                     "computeMajor": 9, "computeMinor": 0, "numSms": 132}],
               "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
               "traceEvents": evs, "traceName": f"rank{rank}.pt.trace.json", "displayTimeUnit": "ms",
               "baseTimeNanoseconds": 1_741_078_700_000_000_000}
        raw = json.dumps(doc, indent=1).encode()
        (folder / f"rank{rank}.pt.trace.json.gz").write_bytes(gzip.compress(raw, mtime=0))


# --- per-rank operation traces (StragglerAnalysis columns) ---------------------------------------
def straggler_ops(out: Path) -> None:
    """4 ranks (2 pipeline stages × 2 data-parallel), 3 sampled steps; rank 3 computes 15 % slower."""
    rng = np.random.default_rng(SEED + 8)
    rows = ["dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc"]
    for step in (10, 20, 30):
        for rank in range(4):
            dp, stage = rank % 2, rank // 2
            slow = 1.15 if rank == 3 else 1.0
            t = 0.0 if stage == 0 else 0.08
            for mb in range(2):
                f = 0.10 * slow + float(rng.normal(0, 0.002))
                rows.append(f"{dp},{stage},{rank},{step},forward-compute,{t:.4f},{f:.4f},0,{mb},{mb},{mb}")
                t += f
                rows.append(f"{dp},{stage},{rank},{step},{'forward-send' if stage == 0 else 'forward-recv'},{t:.4f},0.0120,0,-1,{mb},-1")
                t += 0.012
            for mb in range(2):
                b = 0.20 * slow + float(rng.normal(0, 0.003))
                rows.append(f"{dp},{stage},{rank},{step},backward-compute,{t:.4f},{b:.4f},0,{mb},{mb},{mb}")
                t += b
            wait = 0.0 if rank in (1, 3) or stage == 0 else 0.09
            rows.append(f"{dp},{stage},{rank},{step},grads-reduce-scatter,{t:.4f},{0.03 + wait:.4f},0,0,-1,-1")
            t += 0.03 + wait
            rows.append(f"{dp},{stage},{rank},{step},optimizer,{t:.4f},0.0250,0,-1,-1,-1")
    folder = out / "straggler_ops"
    write_text(folder / "trace-TOY.csv", "\n".join(rows) + "\n")
    write_text(folder / "meta-TOY.yaml", "trial_name: TOY\ndp_size: 2\npp_size: 2\ntp_size: 1\nworld_size: 4\n")


# --- goodput event log ---------------------------------------------------------------------------
def goodput(out: Path) -> None:
    """Init, steps 1-14 every 2 s, a save after step 10, a crash in step 14, a restart that
    restores step 10 and runs steps 11-20 to the end."""
    job = {"job_name": "sample-8gpu"}
    t = T0_S
    recs = [{**job, "job_start_time": t}, {**job, "tpu_init_start_time": t + 1}, {**job, "tpu_init_end_time": t + 31},
            {**job, "training_prep_start_time": t + 31}, {**job, "training_prep_end_time": t + 36}]
    clock = t + 36
    for s in range(1, 15):
        recs.append({**job, "step_count": s, "step_start_time": clock})
        clock += 2.0
        if s == 10:
            recs.append({**job, "event_type": "save", "step": s, "checkpoint_manager_blocking_start_time": clock,
                         "checkpoint_manager_blocking_duration_secs": 4.0})
            clock += 4.0
    restart = clock + 95
    recs += [{**job, "job_start_time": restart}, {**job, "tpu_init_start_time": restart + 1},
             {**job, "tpu_init_end_time": restart + 29},
             {**job, "event_type": "restore", "step": 10, "checkpoint_manager_start_time": restart + 29,
              "checkpoint_manager_duration_secs": 6.0}]
    clock = restart + 35
    for s in range(11, 21):
        recs.append({**job, "step_count": s, "step_start_time": clock})
        clock += 2.0
    recs.append({**job, "job_end_time": clock})
    write_text(out / "goodput.jsonl", "\n".join(json.dumps(r) for r in recs) + "\n")


# --- SLURM sacct --------------------------------------------------------------------------------
def sacct(out: Path) -> None:
    """A job that lost a node after 2 h, was requeued and completed (``--parsable2 --duplicates``)."""
    text = (
        "JobID|JobName|State|ExitCode|Submit|Eligible|Start|End|Elapsed|AllocTRES\n"
        "88231|pretrain|NODE_FAIL|0:0|2025-03-04T08:40:00|2025-03-04T08:40:00|2025-03-04T09:00:00|"
        "2025-03-04T11:02:13|02:02:13|billing=256,cpu=256,gres/gpu=8,mem=1800G,node=2\n"
        "88231.batch|batch|CANCELLED|0:15|2025-03-04T09:00:00|2025-03-04T09:00:00|2025-03-04T09:00:00|"
        "2025-03-04T11:02:13|02:02:13|cpu=128,gres/gpu=4,mem=900G,node=1\n"
        "88231|pretrain|COMPLETED|0:0|2025-03-04T08:40:00|2025-03-04T11:04:00|2025-03-04T11:31:40|"
        "2025-03-04T17:12:05|05:40:25|billing=256,cpu=256,gres/gpu=8,mem=1800G,node=2\n"
        "88231.batch|batch|COMPLETED|0:0|2025-03-04T11:31:40|2025-03-04T11:31:40|2025-03-04T11:31:40|"
        "2025-03-04T17:12:05|05:40:25|cpu=128,gres/gpu=4,mem=900G,node=1\n"
    )
    write_text(out / "sacct.txt", text)


# --- a generic CSV with its own column names ---------------------------------------------------
def custom_csv(out: Path) -> None:
    """4 GPUs × 12 iterations; times in ms since the job start, under the team's own names."""
    rng = np.random.default_rng(SEED + 9)
    rows = ["iteration,gpu,t_begin_ms,t_end_ms,loss,tokens_in_batch"]
    for it in range(1, 13):
        t = 5000 + (it - 1) * 1250
        for gpu in range(4):
            b = t + int(rng.integers(0, 30))
            e = b + 1180 + int(rng.integers(0, 40)) + (60 if gpu == 2 else 0)
            rows.append(f"{it},{gpu},{b},{e},{4.2 - 0.05 * it:.3f},65536")
    write_text(out / "custom_steps.csv", "\n".join(rows) + "\n")


# --- one deliberately damaged file -------------------------------------------------------------
def messy(out: Path) -> None:
    """A JSON-lines step log with a truncated line, binary garbage, NaN and negative durations,
    a start that jumps back, and a half-written last line (the writer died)."""
    good = [{"step": s, "rank": 0, "start_s": round(10 + 1.5 * (s - 1), 3), "duration_s": 1.42} for s in range(1, 13)]
    lines = [json.dumps(r).encode() for r in good]
    lines[3] = json.dumps({"step": 4, "rank": 0, "start_s": 14.5, "duration_s": float("nan")}).encode()  # NaN
    lines[5] = b'{"step": 6, "rank": 0, "start_s": 17.5, "durat'  # truncated (a line cut short)
    lines[6] = b"\x00\x17\xfe\xff\x8b\x1f garbage \x00\x00\x04"  # binary garbage
    lines[8] = json.dumps({"step": 9, "rank": 0, "start_s": 22.0, "duration_s": -1.42}).encode()  # negative
    lines[10] = json.dumps({"step": 11, "rank": 0, "start_s": 3.0, "duration_s": 1.42}).encode()  # jumps back
    data = b"\n".join(lines) + b'\n{"step": 13, "rank": 0, "start_s": 28.0, "dur'  # half-written last line
    path = out / "messy_steps.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def two_jobs(out: Path) -> None:
    """One launcher log that captured two jobs, a Megatron one and a torchtitan one: both loaders
    claim it, and format detection refuses to guess (run after ``megatron`` and ``torchtitan``)."""
    text = (out / "megatron_train.log").read_text() + (out / "torchtitan_train.log").read_text()
    write_text(out / "two_jobs_stdout.log", text)


# --- DCGM exporter (Prometheus text) -----------------------------------------------------------
def dcgm(out: Path) -> None:
    """Two scrapes of one node's dcgm-exporter, 30 s apart: 4 whole H100s of a training pod (GPU 2
    held at a lower SM clock and power, hot) and one MIG instance of a fifth GPU serving a notebook."""
    rng = np.random.default_rng(SEED + 10)
    host, model = "gpu-node-07", "NVIDIA H100 80GB HBM3"
    uuid = [f"GPU-{int(rng.integers(16**8)):08x}-{int(rng.integers(16**4)):04x}-{int(rng.integers(16**4)):04x}-"
            f"{int(rng.integers(16**4)):04x}-{int(rng.integers(16**12)):012x}" for _ in range(5)]
    metrics = [  # (name, help, whole GPUs only)
        ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", True),
        ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", True),
        ("DCGM_FI_DEV_GPU_TEMP", "GPU temperature (in C).", True),
        ("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", False),
        ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "Ratio of cycles the tensor (HMMA) pipe is active.", False),
    ]

    def labels(g: int) -> str:
        common = f'gpu="{g}",UUID="{uuid[g]}",modelName="{model}"'
        if g == 4:
            return common + f',GPU_I_PROFILE="1g.10gb",GPU_I_ID="9",Hostname="{host}",pod="notebook-3"'
        return common + f',Hostname="{host}",pod="pretrain-worker-0"'

    lines = []
    for _scrape in range(2):
        for name, text, whole_only in metrics:
            lines += [f"# HELP {name} {text}", f"# TYPE {name} gauge"]
            for g in range(5):
                if whole_only and g == 4:
                    continue
                slow = g == 2
                value = {
                    "DCGM_FI_DEV_SM_CLOCK": f"{(1425 if slow else 1980) - 15 * int(rng.integers(0, 2))}",
                    "DCGM_FI_DEV_POWER_USAGE": f"{(515 if slow else 688) + float(rng.normal(0, 6)):.3f}",
                    "DCGM_FI_DEV_GPU_TEMP": f"{(86 if slow else 67) + int(rng.integers(0, 3))}",
                    "DCGM_FI_PROF_SM_ACTIVE": f"{(0.16 if g == 4 else 0.83) + float(rng.normal(0, 0.01)):.6f}",
                    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": f"{(0.05 if g == 4 else 0.41) + float(rng.normal(0, 0.01)):.6f}",
                }[name]
                lines.append(f"{name}{{{labels(g)}}} {value}")
    write_text(out / "dcgm_metrics.txt", "\n".join(lines) + "\n")


# --- NeMo 2 through NeMo-Run (stdout of the fault-tolerance launcher) ------------------------
def nemo(out: Path) -> None:
    """8 ranks, global batch 256 × 4096 tokens; a crash in step 16, an in-job restart that resumes
    from the step-10 checkpoint and runs steps 10-19. The job name is cut to its last 12 characters."""
    rng = np.random.default_rng(SEED + 11)
    job = "e-pretrain/0 "  # NeMo-Run's cut of "mfu-sample-pretrain/0"
    lines = ["Launching training run ...",
             "Waiting for job mfu-sample-pretrain-k2x7 to finish [log=True]..."]

    def launcher(attempt: int, secs: float) -> None:
        lines.append(f"{job}[{stamp(secs, '%Y-%m-%d %H:%M:%S')},{int(secs * 1000) % 1000:03d}] [INFO] [ft_launcher@node-0] "
                     f"[default] Rendezvous complete for workers. Result:")
        lines.append(f"{job}  restart_count={attempt}")
        lines.append(f"{job}[default0]:All distributed processes registered. Starting with 8 processes")
        lines.append(f"{job}[default0]:[NeMo I {stamp(secs + 21)} utils:302] Setting up optimizer with config "
                     "OptimizerConfig(optimizer='adam', lr=0.0003, fp16=False, bf16=True, params_dtype=torch.bfloat16)")
        lines.append(f"{job}[default0]:[NeMo I {stamp(secs + 22)} base:44] Model config: GPTConfig(seq_length=4096, "
                     "num_layers=24, hidden_size=2048, num_attention_heads=16)")

    def step_line(step: int, dur: float) -> str:
        tokens = 256 * 4096 / dur / 8
        cs = "" if step == 0 else f" | consumed_samples: {256 * (step + 1)}"
        return (f"{job}[default0]:Training epoch 0, iteration {step}/19 | global_batch_size: 256 | global_step: {step} | reduced_train_loss: {10.9 - 0.21 * step:.3f} | "
                f"train_step_timing in s: {dur:.3f} | tokens_per_sec_per_gpu: {tokens:.4g} | "
                f"TFLOPS_per_GPU: {6 * 1.3e9 * 256 * 4096 / dur / 8 / 1e12:.2f}{cs}")

    launcher(0, 0.0)
    for step in range(16):
        dur = (11.8 if step == 0 else 4.21) + float(rng.normal(0, 0.01))
        lines.append(step_line(step, dur))
        if step == 9:
            lines.append(f"{job}[default0]:[NeMo I {stamp(70)} nemo_logging:393] Async checkpoint save for step 10 "
                         "(/results/checkpoints/step=9.ckpt) finalized successfully.")
    lines += [f"{job}[default5]:[rank5]: Traceback (most recent call last):",
              f"{job}[default5]:[rank5]:   File \"/workspace/pretrain.py\", line 88, in <module>",
              f"{job}[default5]:[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered",
              f"{job}[{stamp(101)},412] [ERROR] [ft_launcher@node-0] failed (exitcode: 1) local_rank: 5 (pid: 20815) of binary: /usr/bin/python",
              f"{job}[{stamp(101)},413] [INFO] [ft_launcher@node-0] [default] Worker group FAILED. 3/3 attempts left; will restart worker group"]
    launcher(1, 102.0)
    for step in range(10, 20):
        dur = (9.6 if step == 10 else 4.21) + float(rng.normal(0, 0.01))
        lines.append(step_line(step, dur))
    lines.append(f"{job}[{stamp(195)},020] [INFO] [ft_launcher@node-0] [default] worker group successfully finished.")
    write_text(out / "nemo_train.log", "\n".join(lines) + "\n")


# --- DeepSpeed engine (stdout of a deepspeed launch) -------------------------------------------
def deepspeed(out: Path) -> None:
    """8 ranks on one node, fp16 with ZeRO-2, batch 64 (4 per GPU × 2 accumulation steps), 60 steps
    printed every 10: the loss scale overflows at steps 3 and 27, which run but do not update."""
    rng = np.random.default_rng(SEED + 12)
    info = base64.b64encode(json.dumps({"node-0": list(range(8))}).encode()).decode()

    def at(secs: float, where: str) -> str:
        return f"[{stamp(secs)},{int(round(secs * 1000)) % 1000:03d}] [INFO] [{where}]"

    lines = [f"{at(0.2, 'real_accelerator.py:222:get_accelerator')} Setting ds_accelerator to cuda (auto detect)",
             f"{at(1.5, 'runner.py:607:main')} cmd = /usr/bin/python3 -u -m deepspeed.launcher.launch "
             f"--world_info={info} --master_addr=127.0.0.1 --master_port=29500 train.py --deepspeed_config ds_config.json",
             f"{at(3.1, 'launch.py:146:main')} WORLD INFO DICT: {{'node-0': [0, 1, 2, 3, 4, 5, 6, 7]}}",
             f"{at(3.1, 'launch.py:152:main')} nnodes=1, num_local_procs=8, node_rank=0",
             f"{at(3.1, 'launch.py:164:main')} dist_world_size=8",
             f"{at(3.1, 'launch.py:168:main')} Setting CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7",
             f"{at(41.0, 'config.py:999:print')} DeepSpeedEngine configuration:"]
    for key, value in (("bfloat16_enabled", "False"), ("fp16_enabled", "True"), ("gradient_accumulation_steps", "2"),
                       ("steps_per_print", "10"), ("train_batch_size", "64"), ("train_micro_batch_size_per_gpu", "4"),
                       ("zero_optimization_stage", "2")):
        lines.append(f"{at(41.0, 'config.py:1003:print')}   {key} {'.' * max(2, 30 - len(key))} {value}")
    t, skipped, scale, samples = 42.0, 0, 65536, []
    for step in range(1, 61):
        dur = 0.742 + float(rng.normal(0, 0.004)) + (1.9 if step == 1 else 0.0)
        t += dur
        samples.append(64 / dur)
        if step in (3, 27):
            skipped += 1
            lines.append(f"{at(t, 'loss_scaler.py:181:update_scale')} [deepspeed] OVERFLOW! Rank 0 Skipping step. "
                         f"Attempted loss scale: {scale}, reducing to {scale // 2}")
            scale //= 2
        if step % 10 == 0:
            lines.append(f"{at(t, 'logging.py:96:log_dist')} [Rank 0] step={step}, skipped={skipped}, "
                         f"lr=[{1e-4 * min(1.0, step / 20):.6e}], mom=[(0.9, 0.95)]")
            lines.append(f"{at(t + 0.028, 'timer.py:199:stop')} epoch=0/micro_step={2 * step}/global_step={step}, "
                         f"RunningAvgSamplesPerSec={np.mean(samples[1:]) if step > 1 else samples[0]:.4f}, "
                         f"CurrSamplesPerSec={samples[-1]:.4f}, MemAllocated=6.12GB, MaxMemAllocated=18.37GB")
    lines.append(f"{at(t + 2.0, 'launch.py:351:main')} Process 20417 exits successfully.")
    write_text(out / "deepspeed_train.log", "\n".join(lines) + "\n")


# --- MaxText (JAX) stdout --------------------------------------------------------------------
def maxtext(out: Path) -> None:
    """A TPU v6e-8 job: 4 sequences of 4096 tokens per device, 12 steps; step 0 compiles, step 1
    reports before its work is done (asynchronous dispatch)."""
    rng = np.random.default_rng(SEED + 13)
    tflop = 712.34  # MaxText's analytic TFLOP per device per step for this configuration
    lines = ["Config param dtype: bfloat16", "Config param gradient_accumulation_steps: 1",
             "Config param max_target_length: 4096", "Config param model_name: llama2-7b",
             "Config param per_device_batch_size: 4.0", "Config param steps: 12",
             "System Information: Jax Version: 0.4.35", "TFRT TPU v6 lite",
             "Num_devices: 8, shape (1, 1, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1)",
             "Per train step:", f" Total TFLOPs: {tflop:.2f} ",
             " split as 93.51% learnable weight flops and 6.49% attention flops"]
    for step in range(12):
        secs = 61.204 if step == 0 else 0.298 if step == 1 else 1.742 + float(rng.normal(0, 0.004))
        lines.append(f"completed step: {step}, seconds: {secs:.3f}, TFLOP/s/device: {tflop / secs:.3f}, "
                     f"Tokens/s/device: {16384 / secs:.3f}, total_weights: 131072, loss: {10.87 - 0.31 * step:.3f}")
    write_text(out / "maxtext_train.log", "\n".join(lines) + "\n")


# --- Megatron-LM with its timers -----------------------------------------------------------------
def megatron_timers(out: Path) -> None:
    """World size 8 (TP 2 × DP 4), 20 iterations logged every 5, each line followed by the
    ``(min, max) time across ranks (ms):`` block of its interval (per-step means)."""
    rng = np.random.default_rng(SEED + 14)
    lines = [
        "using world size: 8, data-parallel size: 4, context-parallel size: 1, tensor-model-parallel size: 2, "
        "pipeline-model-parallel size: 1",
        "------------------------ arguments ------------------------",
        "  bf16 ............................................ True",
        "  global_batch_size ............................... 128",
        "  log_interval .................................... 5",
        "  micro_batch_size ................................ 2",
        "  seq_length ...................................... 2048",
        "-------------------- end of arguments ---------------------",
        f"[after dataloaders are built] datetime: {stamp(30)} ",
        f"[before the start of training step] datetime: {stamp(31)} ",
    ]
    t = 31.0
    for it in range(5, 21, 5):
        warm = it == 5
        fwd, bwd = 610 + float(rng.normal(0, 3)), 1225 + float(rng.normal(0, 5))
        data = (95.0 if warm else 21.0) + float(rng.normal(0, 0.5))
        ar = 148 + float(rng.normal(0, 1))
        opt = 64 + float(rng.normal(0, 0.3))
        # The line's timestamp has whole seconds: the interval mean is the time between two lines
        # (what is left besides the timers is the untimed rest of the step).
        end = round(t + 5 * (fwd + bwd + data + ar + opt + 40 + (900.0 if warm else 0.0)) / 1000)
        ms, t = (end - t) * 1000 / 5, float(end)
        lines.append(
            f" [{stamp(t)}] iteration {it:8d}/{20:8d} | consumed samples: {it * 128:12d} | "
            f"elapsed time per iteration (ms): {ms:.1f} | throughput per GPU (TFLOP/s/GPU): {2.7e15 / 8 / ms * 1e3 / 1e12:.1f} | "
            f"learning rate: {2e-4 * it / 20:.6E} | global batch size: {128:5d} | lm loss: {8.4 - 0.11 * it:.6E} | "
            f"loss scale: 1.0 | grad norm: {2.1 - 0.04 * it:.3f} | number of skipped iterations: {0:3d} | "
            f"number of nan iterations: {0:3d} |")
        lines.append("(min, max) time across ranks (ms):")
        for name, lo, hi in (
            ("forward-backward", fwd + bwd + data - 6, fwd + bwd + data + 2),
            ("forward-compute", fwd - 9, fwd),
            ("backward-compute", bwd - 14, bwd),
            ("batch-generator", data * 0.6, data),
            ("layernorm-grads-all-reduce", 0.02, 0.03),
            ("embedding-grads-all-reduce", 0.04, 0.05),
            ("all-grads-sync", ar - 1.5, ar),
            ("optimizer-copy-to-main-grad", 6.1, 6.2),
            ("optimizer-inner-step", opt - 12.5, opt - 12.2),
            ("optimizer", opt - 0.4, opt),
        ):
            lines.append(f"    {name} {'.' * (48 - len(name))}: ({lo:.2f}, {hi:.2f})")
    write_text(out / "megatron_timers.log", "\n".join(lines) + "\n")


WRITERS = (mlperf, megatron, megatron_ci, tensorboard, torchtitan, hf_trainer, lightning, wandb, kineto,
           straggler_ops, goodput, sacct, custom_csv, messy, two_jobs, dcgm, nemo, deepspeed, maxtext, megatron_timers)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "data" / "samples")
    a = ap.parse_args(argv)
    if a.out.exists():
        shutil.rmtree(a.out)
    a.out.mkdir(parents=True)
    for write in WRITERS:
        write(a.out)
    files = sorted(p for p in a.out.rglob("*") if p.is_file())
    total = sum(p.stat().st_size for p in files)
    print(f"wrote {len(files)} files, {total / 1024:.0f} KiB, into {a.out.relative_to(ROOT) if a.out.is_relative_to(ROOT) else a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
