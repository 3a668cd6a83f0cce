"""The recorder on a recommendation training loop: a real four-process job names its slow rank.

Four CPU processes under ``torchrun`` (gloo) train a small DLRM written in plain PyTorch: a bottom MLP on 4
dense features, three sum-pooled ``nn.EmbeddingBag`` tables of dim 8 (2, 1 and 3 ids per sample), the dot
interaction and a top MLP, wrapped in ``DistributedDataParallel`` whose gradient all-reduce is timed by the
recorder's ``GradientSync`` (what the framework callbacks switch on). Rank ``SLOW`` sleeps ``SLEEP_S`` inside
every step. TorchRec is not used: its CPU kernels come from ``fbgemm-gpu-cpu``, whose newest PyPI wheel (1.9.0,
tried for this test) fails to load against this project's PyTorch 2.13 (``undefined symbol`` in
``fbgemm_gpu_tbe_index_select.so``), so the job stays with ``torch.nn`` modules; TorchRec's unsharded
``EmbeddingBagCollection`` holds one ``nn.EmbeddingBag`` per table as well (torchrec 1.9.2,
``torchrec/modules/embedding_modules.py`` line 228).

Expected values come from what the job injects (which rank sleeps, how long, the steps and samples) and from the
model's own shapes, never from the recorder's output. This file is also the job:
``torchrun --nproc-per-node=4 tests/test_recsys_recorder.py --worker --out DIR``. ``MFU_REQUIRE_TORCH=1`` (CI)
makes a missing PyTorch a failure instead of a skip.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest

NPROC, SLOW, STEPS, BATCH, SLEEP_S = 4, 2, 20, 32, 0.05
N_DENSE, BOTTOM, DIM, TOP = 4, (16, 8), 8, (16, 1)
ROWS, POOLING = (100, 50, 20), (2, 1, 3)
LAUNCH_TIMEOUT_S = 300

pytestmark = pytest.mark.torch


def tiny_dlrm_config():
    from mfu_toolkit.flops import DLRMConfig

    return DLRMConfig(n_dense=N_DENSE, bottom_mlp=BOTTOM, n_sparse=len(ROWS), embedding_dim=DIM, top_mlp=TOP,
                      interaction="dot", embedding_rows=ROWS, pooling_factors=POOLING, optimizer="sgd",
                      name="tiny-dlrm")


def tiny_dlrm(torch):
    """The model of ``tiny_dlrm_config()`` in plain PyTorch."""
    nn = torch.nn

    class TinyDLRM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.bottom = nn.Sequential(nn.Linear(N_DENSE, BOTTOM[0]), nn.ReLU(), nn.Linear(*BOTTOM), nn.ReLU())
            self.bags = nn.ModuleList(nn.EmbeddingBag(n, DIM, mode="sum") for n in ROWS)
            n = len(ROWS) + 1
            self.pairs = torch.tril_indices(n, n, offset=-1)  # the strictly lower triangle: n (n - 1) / 2 pairs
            self.top = nn.Sequential(nn.Linear(DIM + self.pairs.shape[1], TOP[0]), nn.ReLU(), nn.Linear(*TOP))

        def forward(self, dense, *ids):
            x = self.bottom(dense)
            t = torch.stack([x, *(bag(i) for bag, i in zip(self.bags, ids, strict=True))], dim=1)
            gram = torch.bmm(t, t.transpose(1, 2))
            return self.top(torch.cat([x, gram[:, self.pairs[0], self.pairs[1]]], dim=1))

    return TinyDLRM()


def sample_batch(torch, g, batch: int = BATCH):
    """Dense features, one (batch x pooling factor) id tensor per table, and click labels."""
    dense = torch.randn(batch, N_DENSE, generator=g)
    ids = [torch.randint(0, n, (batch, k), generator=g) for n, k in zip(ROWS, POOLING, strict=True)]
    return (dense, *ids), torch.randint(0, 2, (batch, 1), generator=g).float()


# --- the job (run by torchrun) ------------------------------------------------------------------


def _worker(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true", required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    import torch
    import torch.distributed as dist

    from mfu_toolkit.record import StepRecorder
    from mfu_toolkit.record.collectives import GradientSync

    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)  # every replica starts equal
    model = torch.nn.parallel.DistributedDataParallel(tiny_dlrm(torch))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    sync = GradientSync()
    rec = StepRecorder(a.out, header={"grad_sync": sync.attach(model), "model": "tiny-dlrm"})
    sync.bind(rec)
    g = torch.Generator().manual_seed(rank)  # each rank its own data
    loss_fn = torch.nn.BCEWithLogitsLoss()
    for step in range(STEPS):
        with rec.step(step=step, samples=BATCH):
            with rec.data_wait():
                inputs, labels = sample_batch(torch, g)
            if rank == SLOW:
                time.sleep(SLEEP_S)  # the injected straggler
            loss_fn(model(*inputs), labels).backward()
            opt.step()
            opt.zero_grad()
    rec.close()
    dist.destroy_process_group()


# --- the tests -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    from _gloo import require_gloo_torch

    require_gloo_torch()
    work = tmp_path_factory.mktemp("recsys")
    out, log = work / "rec", work / "torchrun.log"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={NPROC}",
           "--max-restarts=0", "--monitor-interval=0.1", __file__, "--worker", "--out", str(out)]
    env = {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "MASTER_ADDR": "127.0.0.1", "OMP_NUM_THREADS": "1"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"):
        env.pop(name, None)
    with open(log, "wb") as f:
        rc = subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=LAUNCH_TIMEOUT_S).returncode
    assert rc == 0, f"the job failed (exit {rc}): {log.read_text(errors='replace')[-3000:]}"
    return out


@pytest.fixture(scope="module")
def analysed(job):
    from mfu_toolkit.analysis import account, straggler_summary
    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import LoadWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        run = load_run(job)
    acc = account(run)
    return run, acc, straggler_summary(acc)


def test_the_folder_reads_back_as_the_job_ran(analysed):
    run, acc, _ = analysed
    s = run.steps
    assert run.meta.source_format == "recorded"
    assert sorted(s["rank"].unique()) == list(range(NPROC))
    for r in range(NPROC):
        assert sorted(s.loc[s["rank"] == r, "step"]) == list(range(STEPS))
    assert run.meta.n_accelerators == NPROC and run.meta.global_batch == NPROC * BATCH
    assert acc.useful_steps == STEPS


def test_the_slow_rank_is_named(analysed):
    run, acc, ss = analysed
    scores = ss.scores.set_index("rank")["score"]
    assert scores.idxmax() == SLOW and ss.persistent_ranks[:1] == [SLOW], ss.scores
    assert ss.most_often_slowest == SLOW
    # the fast ranks wait for the sleep in DDP's all-reduce, timed as communication; the slow rank's busy
    # time holds it (medians over steps; the sleep is many times the tiny model's own step)
    s = run.steps
    fast = s["rank"] != SLOW
    assert s.loc[fast, "comm_s"].median() >= 0.8 * SLEEP_S
    busy = s["compute_s"].groupby(s["rank"]).median()
    assert busy[SLOW] - busy.drop(SLOW).max() >= 0.8 * SLEEP_S
    from mfu_toolkit.analysis.answer import straggler_verdict

    assert straggler_verdict(acc)["culprit"].startswith((f"rank {SLOW}", f"ranks {SLOW}"))


def test_mfu_analyze_names_the_slow_rank(job, capsys):
    from mfu_toolkit.cli import main

    assert main(["analyze", str(job)]) == 0
    out = capsys.readouterr().out
    culprit = next(line for line in out.splitlines() if line.startswith("Culprit:"))
    assert culprit.startswith((f"Culprit: rank {SLOW}", f"Culprit: ranks {SLOW}")), culprit


def test_the_counted_embedding_bytes_match_the_analytic_count():
    from _gloo import require_gloo_torch

    torch = require_gloo_torch()
    from mfu_toolkit.flops import model_flops
    from mfu_toolkit.flops.counter import compare_embedding_bytes

    torch.manual_seed(0)
    model = tiny_dlrm(torch)
    inputs, _ = sample_batch(torch, torch.Generator().manual_seed(0))
    c = compare_embedding_bytes(model, inputs, model_flops(tiny_dlrm_config(), batch=BATCH))
    # 32 samples x (2 + 1 + 3) ids, each a row of 8 fp32 values: 192 rows, 6,144 B looked up; as many
    # gradient rows written by the backward
    assert (c.counted.lookups, c.counted.gradient_rows) == (BATCH * 6, BATCH * 6)
    assert c.counted.lookup_bytes == BATCH * 6 * DIM * 4 == c.analytic_lookup == 6_144
    assert c.lookup_ratio == 1.0 and c.gradient_ratio == 1.0


if __name__ == "__main__":
    _worker(sys.argv[1:])
