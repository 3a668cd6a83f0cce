"""Write the small sample logs, one or more per format, that ``notebooks/03_loading_logs.ipynb`` loads.

They are the project's own synthetic logs, written in each tool's format (nothing is copied from
real logs): an 8-GPU job (2 nodes × 4 GPUs) seen through MLPerf, Megatron-LM, TensorBoard,
torchtitan, Hugging Face Trainer, Lightning, Weights & Biases, the PyTorch profiler, per-rank
operation traces, a goodput event log and SLURM, plus a generic CSV with its own column names
and one deliberately damaged file. The output is deterministic (fixed seed, fixed times, gzip
without a timestamp): running the script again rewrites the same bytes.

    .venv/bin/python data/make_samples.py [--out data/samples]

The TensorBoard files are framed and encoded with the small TFRecord/protobuf writer of the
test helpers (``tests/_samples.py``), which is independent of the toolkit's reader.
"""

from __future__ import annotations

import argparse
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


WRITERS = (mlperf, megatron, megatron_ci, tensorboard, torchtitan, hf_trainer, lightning, wandb, kineto,
           straggler_ops, goodput, sacct, custom_csv, messy, two_jobs)


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
