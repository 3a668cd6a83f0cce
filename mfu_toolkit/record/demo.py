"""A real distributed job that records itself: ``python -m mfu_toolkit.record.demo``.

Four CPU processes (``torchrun``, gloo backend) train a small MLP with gradients all-reduced
inside ``rec.comm()``. What the job does, and what the analysis should find in its record:

- rank ``--slow-rank`` sleeps ``--sleep-s`` in every step's compute → a persistent straggler
  holding everyone ``sleep × steps``;
- every ``--checkpoint-every`` steps rank 0 saves a checkpoint and sleeps ``--checkpoint-sleep-s``
  inside ``rec.event("checkpoint_save")`` (the others wait at a barrier inside the same event);
- rank ``--die-rank`` kills itself (SIGKILL) at step ``--die-at-step`` of the first launch (the
  record folder's attempt 0): the launch fails;
- after ``--pause-s`` a second launch into the same folder resumes from the last checkpoint,
  so the steps after it are computed twice (lost work) and the pause is downtime.

Then it prints the ``mfu analyze`` summary of the folder. The same worker is the real job of
``tests/test_record_job.py``; ``--worker`` runs one process of it (torchrun starts four).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path

from .recorder import StepRecorder

__all__ = ["JOB_DEFAULTS", "launch", "main", "worker"]

JOB_DEFAULTS: dict[str, float | int] = {
    "steps": 50, "batch": 16, "slow_rank": 1, "sleep_s": 0.05, "checkpoint_every": 10,
    "checkpoint_sleep_s": 0.2, "die_rank": 2, "die_at_step": 33,
}


def _mark(markers: Path | None, rank: int, **fields: float | int | str) -> None:
    """The job's own notes of what it did when (wall clock), for a test to compare against."""
    if markers is None:
        return
    markers.mkdir(parents=True, exist_ok=True)
    with open(markers / f"rank{rank}.jsonl", "a") as f:
        f.write(json.dumps({"t": time.time(), **fields}) + "\n")


def _save(path: Path, model: object, opt: object, next_step: int) -> None:
    import torch

    tmp = path.with_suffix(".tmp")
    torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "next_step": next_step}, tmp)
    os.replace(tmp, path)  # a checkpoint is whole or absent


def _train_step(rec: StepRecorder, model: object, opt: object, step: int, a: argparse.Namespace, rank: int) -> None:
    import torch
    import torch.distributed as dist

    with rec.step(step=step, samples=a.batch):
        with rec.data_wait():
            g = torch.Generator().manual_seed(1000 * step + rank)
            x = torch.randn(a.batch, 32, generator=g)
            y = x.sum(dim=1, keepdim=True)
        if rank == a.die_rank and step == a.die_at_step and rec.attempt == 0:  # the first launch only
            _mark(a.markers, rank, kill=step)
            os.kill(os.getpid(), signal.SIGKILL)
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        if rank == a.slow_rank:
            time.sleep(a.sleep_s)  # the injected straggler
        loss.backward()
        flat = torch.cat([p.grad.reshape(-1) for p in model.parameters()])
        with rec.comm():
            dist.all_reduce(flat)
        flat /= dist.get_world_size()
        i = 0
        for p in model.parameters():
            n = p.numel()
            p.grad.copy_(flat[i:i + n].view_as(p))
            i += n
        opt.step()


def worker(a: argparse.Namespace) -> None:
    """One process of the job (run under torchrun, which sets RANK and WORLD_SIZE)."""
    import torch
    import torch.distributed as dist

    rec = StepRecorder(a.folder)  # rank and world size from the launcher's environment
    rank = rec.rank
    _mark(a.markers, rank, ready=rec.attempt)
    with rec.event("init", detail="process group, model, optimizer"):
        dist.init_process_group("gloo", timeout=timedelta(seconds=60))
        torch.manual_seed(0)
        model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
        opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    first = 0
    ckpt = Path(a.checkpoint)
    if ckpt.exists():
        with rec.event("checkpoint_load", detail=ckpt.name):
            state = torch.load(ckpt, weights_only=True)
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["opt"])
            first = int(state["next_step"])
    for step in range(first, a.steps):
        _train_step(rec, model, opt, step, a, rank)
        if (step + 1) % a.checkpoint_every == 0:
            with rec.event("checkpoint_save", detail=f"after step {step}"):
                if rank == 0:
                    _save(ckpt, model, opt, step + 1)
                    time.sleep(a.checkpoint_sleep_s)  # the injected slow write
                dist.barrier()
            _mark(a.markers, rank, checkpoint=step)
    rec.close()
    dist.destroy_process_group()


def launch(folder: str | os.PathLike[str], checkpoint: str | os.PathLike[str], *, nproc: int = 4,
           markers: str | os.PathLike[str] | None = None, timeout_s: float = 300,
           log: str | os.PathLike[str] | None = None, **job: float | int) -> int:
    """Run the job once under torchrun (gloo, localhost only); its exit code.

    ``job`` overrides :data:`JOB_DEFAULTS`; torchrun's output goes to ``log`` (else discarded).
    """
    unknown = sorted(set(job) - set(JOB_DEFAULTS))
    if unknown:
        raise TypeError(f"unknown job option(s) {unknown}; known: {sorted(JOB_DEFAULTS)}")
    opts = {**JOB_DEFAULTS, **job}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={nproc}",
           "--max-restarts=0", "--monitor-interval=0.1", "-m", "mfu_toolkit.record.demo", "--worker",
           "--folder", str(folder), "--checkpoint", str(checkpoint)]
    if markers is not None:
        cmd += ["--markers", str(markers)]
    for key, value in opts.items():
        cmd += [f"--{key.replace('_', '-')}", str(value)]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1"}
    out = open(log, "ab") if log is not None else subprocess.DEVNULL  # noqa: SIM115
    try:
        return subprocess.run(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=timeout_s).returncode
    finally:
        if log is not None:
            out.close()


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mfu_toolkit.record.demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--folder", help="record folder (default: a new temporary folder)")
    p.add_argument("--checkpoint", help=argparse.SUPPRESS)
    p.add_argument("--markers", type=Path, default=None, help=argparse.SUPPRESS)
    p.add_argument("--nproc", type=int, default=4, help="processes (ranks); default 4")
    p.add_argument("--pause-s", type=float, default=1.0, help="seconds between the failed launch and the relaunch")
    for key, value in JOB_DEFAULTS.items():
        p.add_argument(f"--{key.replace('_', '-')}", type=type(value), default=value, help=f"default {value}")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    a = _parser().parse_args(argv)
    if a.worker:
        worker(a)
        return 0
    try:
        import torch  # noqa: F401
    except ImportError:
        print("the demo needs PyTorch: pip install 'mfu_toolkit[record]'", file=sys.stderr)
        return 2
    work = Path(a.folder) if a.folder else Path(tempfile.mkdtemp(prefix="mfu-record-demo-"))
    work.mkdir(parents=True, exist_ok=True)
    folder, ckpt = work / "record", work / "checkpoint.pt"
    job = {k: getattr(a, k) for k in JOB_DEFAULTS}
    print(f"launch 1: {a.nproc} ranks, rank {a.slow_rank} sleeps {a.sleep_s} s per step, "
          f"rank {a.die_rank} dies at step {a.die_at_step}; recording into {folder}")
    rc = launch(folder, ckpt, nproc=a.nproc, log=work / "torchrun.log", **job)
    print(f"launch 1 ended with exit code {rc}; relaunching in {a.pause_s} s")
    time.sleep(a.pause_s)
    rc = launch(folder, ckpt, nproc=a.nproc, log=work / "torchrun.log", **job)
    print(f"launch 2 ended with exit code {rc} (torchrun output: {work / 'torchrun.log'})\n")
    from ..cli import main as mfu

    return mfu(["analyze", str(folder)])


if __name__ == "__main__":
    sys.exit(main())
