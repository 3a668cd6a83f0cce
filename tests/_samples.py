"""Small synthetic logs of each format, written by the tests themselves (no real files copied).

Each ``write_*`` function writes one sample into a folder and returns its path; the values are
chosen so the tests can state the expected Run by hand.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

# --- MLPerf -------------------------------------------------------------------------------------
T0_MS = 1_700_000_000_000


def mllog(key: str, t_ms: int, value=None, event_type: str = "POINT_IN_TIME", **meta) -> str:
    rec = {
        "namespace": "",
        "time_ms": t_ms,
        "event_type": event_type,
        "key": key,
        "value": value,
        "metadata": {"file": "train.py", "lineno": 1, **meta},
    }
    return ":::MLLOG " + json.dumps(rec)


def mlperf_lines(ranks: int = 4, sysjson: bool = True) -> list[str]:
    """init 0..10 s (init_start once per rank), run 10..100 s, 3 blocks, 3 evals of 5 s."""
    out = []
    if sysjson:
        sj = json.dumps({"system_name": "test", "number_of_nodes": "2", "accelerators_per_node": "4",
                         "accelerator_model_name": "H100"})
        out += [":::SYSJSON " + sj, ":::SYSJSON " + sj]
    for r in range(ranks):
        out.append(mllog("init_start", T0_MS + r, event_type="INTERVAL_START"))
    out += [
        mllog("submission_benchmark", T0_MS + 100, "llama2_70b_lora"),
        mllog("submission_org", T0_MS + 100, "ACME"),
        mllog("submission_platform", T0_MS + 100, "2xACME Box"),
        mllog("global_batch_size", T0_MS + 100, 8),
        mllog("init_stop", T0_MS + 10_000, event_type="INTERVAL_END"),
        mllog("run_start", T0_MS + 10_000, event_type="INTERVAL_START"),
    ]
    t = T0_MS + 10_000
    samples = 0
    for _ in range(3):
        out.append(mllog("block_start", t, event_type="INTERVAL_START", samples_count=samples))
        t += 25_000
        samples += 400
        out.append(mllog("tracked_stats", t, {"throughput": 16.0}, step=samples))
        out.append(mllog("block_stop", t, event_type="INTERVAL_END", samples_count=samples))
        out.append(mllog("eval_start", t, event_type="INTERVAL_START", samples_count=samples))
        t += 5_000
        out.append(mllog("eval_accuracy", t, 0.5, samples_count=samples))
        out.append(mllog("eval_stop", t, event_type="INTERVAL_END", samples_count=samples))
    out.append(mllog("run_stop", t, event_type="INTERVAL_END", samples_count=samples, status="success"))
    return out


def write_mlperf(folder: Path, name: str = "result_0.txt", lines: list[str] | None = None) -> Path:
    p = Path(folder) / name
    p.write_text("\n".join(lines if lines is not None else mlperf_lines()) + "\n")
    return p


# --- Megatron stdout ----------------------------------------------------------------------------
def megatron_line(it: int, ms: float, *, ts: str | None = None, total: int = 100, gbs: int = 16, skipped: int = 0,
                  nan: int = 0, loss: float = 2.0) -> str:
    stamp = f" [{ts}]" if ts else ""
    return (
        f"{stamp} iteration {it:8d}/{total:8d} | consumed samples: {it * gbs:12d} | "
        f"elapsed time per iteration (ms): {ms:.1f} | learning rate: 1.000000E-04 | "
        f"global batch size: {gbs:5d} | lm loss: {loss:.6E} | loss scale: 1.0 | grad norm: 1.000 | "
        f"number of skipped iterations: {skipped:3d} | number of nan iterations: {nan:3d} |"
    )


def write_megatron(folder: Path, name: str = "train.log", lines: list[str] | None = None) -> Path:
    """Timestamped, log interval 10, steps of 1 s: lines at iterations 10, 20, 30 (10 s apart)."""
    if lines is None:
        lines = [
            "------------------------ arguments ------------------------",
            "[after dataloaders are built] datetime: 2024-04-06 02:00:00 ",
            "[before the start of training step] datetime: 2024-04-06 02:00:05 ",
            megatron_line(10, 1000.0, ts="2024-04-06 02:00:15"),
            megatron_line(20, 1000.0, ts="2024-04-06 02:00:25"),
            "saving checkpoint at iteration      20 to /ckpt in torch_dist format",
            "  successfully saved checkpoint from iteration      20 to /ckpt [ t 1/1, p 1/1 ]",
            megatron_line(30, 1000.0, ts="2024-04-06 02:00:37"),
        ]
    p = Path(folder) / name
    p.write_text("\n".join(lines) + "\n")
    return p


# --- Megatron CI JSON ------------------------------------------------------------------------
def write_megatron_json(folder: Path, name: str = "golden_values_dev_dgx_h100.json", n: int = 10,
                        config: str | None = None) -> Path:
    it = {str(i): ("nan" if i == 1 else 0.5) for i in range(1, n + 1)}
    doc = {
        "lm loss": {"start_step": 1, "end_step": n, "step_interval": 1,
                    "values": {str(i): 10.0 - i * 0.1 for i in range(1, n + 1)}},
        "iteration-time": {"start_step": 1, "end_step": n, "step_interval": 1, "values": it},
    }
    p = Path(folder) / name
    p.write_text(json.dumps(doc, indent=4))
    if config is not None:
        (Path(folder) / "model_config.yaml").write_text(config)
    return p


RESUME_CONFIG = """ENV_VARS:
  CUDA_DEVICE_MAX_CONNECTIONS: 1
MODEL_ARGS:
  --global-batch-size: 32
  --seq-length: 1024
  --train-iters: 10
  --save-interval: 5
  --log-interval: 1
TEST_TYPE: ckpt-resume
"""


# --- TensorBoard ------------------------------------------------------------------------------
# An encoder written here, independent of the loader's decoder.
def _crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 & -(crc & 1))
    return crc ^ 0xFFFFFFFF


def _masked(data: bytes) -> int:
    c = _crc32c(data)
    return (((c >> 15) | (c << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def frame(payload: bytes) -> bytes:
    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", _masked(head)) + payload + struct.pack("<I", _masked(payload))


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _field(num: int, wt: int, value) -> bytes:
    key = _varint((num << 3) | wt)
    if wt == 0:
        return key + _varint(value)
    if wt == 1:
        return key + struct.pack("<d", value)
    if wt == 5:
        return key + struct.pack("<f", value)
    return key + _varint(len(value)) + value


def event(wall: float, step: int = 0, scalars: dict | None = None, texts: dict | None = None,
          tensor_scalars: dict | None = None, file_version: str | None = None) -> bytes:
    body = _field(1, 1, wall) + _field(2, 0, step)
    if file_version:
        body += _field(3, 2, file_version.encode())
    values = b""
    for tag, v in (scalars or {}).items():
        values += _field(1, 2, _field(1, 2, tag.encode()) + _field(2, 5, v))
    for tag, v in (tensor_scalars or {}).items():  # DT_FLOAT tensor, float_val packed
        tensor = _field(1, 0, 1) + _field(5, 2, struct.pack("<f", v))
        values += _field(1, 2, _field(1, 2, tag.encode()) + _field(8, 2, tensor))
    for tag, s in (texts or {}).items():  # DT_STRING tensor
        tensor = _field(1, 0, 7) + _field(8, 2, s.encode())
        values += _field(1, 2, _field(1, 2, (tag + "/text_summary").encode()) + _field(8, 2, tensor))
    if values:
        body += _field(5, 2, values)
    return body


def write_tb_launch(folder: Path, t0: float, pid: int, steps: list[int] | None = None, step_s: float = 0.5,
                    args: dict | None = None) -> Path:
    """One launch: file_version, text args, then per step scalars at t0 + 10 + k*step_s."""
    data = frame(event(t0, file_version="brain.Event:2"))
    data += frame(event(t0 + 0.1, texts=args or {"world_size": "8", "global_batch_size": "16", "seq_length": "128",
                                                 "log_interval": "1"}))
    for k, s in enumerate(steps or []):
        t = t0 + 10 + (k + 1) * step_s
        data += frame(event(t, s, scalars={"lm loss": 5.0 - 0.1 * k, "batch-size": 16.0}))
        data += frame(event(t, s, scalars={"iteration-time": step_s} if k % 2 == 0 else None,
                            tensor_scalars=None if k % 2 == 0 else {"iteration-time": step_s}))
    p = Path(folder) / f"events.out.tfevents.{int(t0)}.host-1.{pid}.0"
    p.write_bytes(data)
    return p


def write_tensorboard(folder: Path) -> Path:
    """Three launches: the first dies in setup, the second after 3 steps, the third does 5."""
    d = Path(folder) / "tb"
    d.mkdir(exist_ok=True)
    write_tb_launch(d, 1_700_000_000.0, 100)
    write_tb_launch(d, 1_700_000_100.0, 200, steps=[1, 2, 3])
    write_tb_launch(d, 1_700_000_200.0, 300, steps=[3, 4, 5, 6, 7])
    return d


# --- sacct --------------------------------------------------------------------------------------
SACCT_DEFAULT = """JobID           JobName  Partition    Account  AllocCPUS      State ExitCode
------------ ---------- ---------- ---------- ---------- ---------- --------
77           train_llm+      batch       proj         64  COMPLETED      0:0
77.batch          batch                  proj         32  COMPLETED      0:0
"""

SACCT_TIMES = """JobID|JobName|State|ExitCode|Submit|Eligible|Start|End|Elapsed|AllocTRES
1234|train|NODE_FAIL|0:0|2024-05-01T10:00:00|2024-05-01T10:00:00|2024-05-01T10:05:00|2024-05-01T12:00:00|\
01:55:00|cpu=64,gres/gpu=16,node=2
1234.batch|batch|CANCELLED|0:15|2024-05-01T10:05:00|2024-05-01T10:05:00|2024-05-01T10:05:00|2024-05-01T12:00:00|\
01:55:00|cpu=32,gres/gpu=8,node=1
1234|train|COMPLETED|0:0|2024-05-01T10:00:00|2024-05-01T12:01:00|2024-05-01T12:10:00|2024-05-01T20:00:00|\
07:50:00|cpu=64,gres/gpu=16,node=2
"""


def write_sacct(folder: Path, text: str = SACCT_TIMES, name: str = "sacct.txt") -> Path:
    p = Path(folder) / name
    p.write_text(text)
    return p


# --- goodput --------------------------------------------------------------------------------------
GP_T0 = 1_700_000_000.0


def goodput_payloads() -> list[dict]:
    """Attempt 0: init 0-5, steps 1-4 every 2 s from 5, crash after step 4 starts (t=11);
    attempt 1 starts at 20, resumes at step 3, steps 3-6 every 2 s from 22, ends at 30."""
    j = {"job_name": "gp"}
    t = GP_T0
    out = [
        {**j, "job_start_time": t},
        {**j, "tpu_init_start_time": t},
        {**j, "tpu_init_end_time": t + 5},
    ]
    out += [{**j, "step_count": s, "step_start_time": t + 5 + 2 * (s - 1)} for s in range(1, 5)]
    out += [{**j, "job_start_time": t + 20}]
    out += [{**j, "step_count": s, "step_start_time": t + 22 + 2 * (s - 3)} for s in range(3, 7)]
    out += [{**j, "job_end_time": t + 30}]
    return out


def write_goodput_log(folder: Path, payloads: list[dict] | None = None, name: str = "goodput.jsonl") -> Path:
    p = Path(folder) / name
    p.write_text("\n".join(json.dumps(x) for x in (payloads if payloads is not None else goodput_payloads())) + "\n")
    return p


# --- generic table --------------------------------------------------------------------------
TABLE_CSV = """iter,t0,t1,gpu,loss
1,0,1000,0,2.0
2,1000,2100,0,1.9
1,0,1100,1,2.0
2,1100,2100,1,1.9
"""


def write_table(folder: Path, text: str = TABLE_CSV, name: str = "steps.csv") -> Path:
    p = Path(folder) / name
    p.write_text(text)
    return p
