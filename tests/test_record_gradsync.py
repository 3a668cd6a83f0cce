"""Timing a data-parallel job's gradient synchronisation (``record.collectives.GradientSync``).

One-process gloo groups: enough to register, find and run the hooks (the all-reduce of one rank
completes at once, so ``comm`` is small but present). The two-process jobs where a slow rank must
be named are in ``tests/test_record_ddp.py``. ``MFU_REQUIRE_TORCH=1`` (CI) makes a missing
PyTorch a failure instead of a skip.
"""

from __future__ import annotations

import json
import warnings

import pytest
from _gloo import require_gloo_torch

from mfu_toolkit.record import StepRecorder, file_name

pytestmark = pytest.mark.torch


@pytest.fixture(autouse=True)
def _clean_launch_env(monkeypatch):
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TORCHELASTIC_RESTART_COUNT"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def group(tmp_path):
    torch = require_gloo_torch()
    import torch.distributed as dist

    dist.init_process_group("gloo", store=dist.FileStore(str(tmp_path / "store"), 1), rank=0, world_size=1)
    yield torch
    dist.destroy_process_group()


def _step_lines(rec):
    return [json.loads(line) for line in rec.path.read_text().splitlines() if '"step"' in line]


def _one_step(rec, model, torch):
    with rec.step(step=0):
        model(torch.randn(4, 8)).sum().backward()
    rec.close()
    return _step_lines(rec)[0]


def test_attach_finds_the_ddp_wrapper_from_the_inner_module_and_times_it(tmp_path, group):
    from mfu_toolkit.record.collectives import GradientSync, find_ddp

    torch = group
    inner = torch.nn.Linear(8, 1)
    ddp = torch.nn.parallel.DistributedDataParallel(inner)
    assert find_ddp(inner) is ddp and find_ddp(ddp) is ddp   # what the HF Trainer hands callbacks
    assert find_ddp(torch.nn.Linear(8, 1)) is None
    sync = GradientSync()
    assert sync.attach(inner) == "ddp comm hook (timed_allreduce_hook)"
    assert [h.__name__ for h, _ in ddp._comm_hooks] == ["timed_allreduce_hook"]
    # attaching again (a second fit or train on the same model) recognises its own hook
    assert sync.attach(ddp).startswith("ddp comm hook")
    assert len(ddp._comm_hooks) == 1
    rec = StepRecorder(tmp_path / "job")
    sync.bind(rec)
    step = _one_step(rec, ddp, torch)
    assert step["comm"] > 0
    # the gradient is DDP's average over one rank: the local gradient, unchanged
    x = torch.randn(4, 8)
    ddp.zero_grad()
    ddp(x).sum().backward()
    assert torch.allclose(inner.weight.grad, x.sum(0, keepdim=True))


def test_a_hook_given_to_the_framework_is_wrapped_and_still_runs(tmp_path, group):
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    from mfu_toolkit.record.collectives import GradientSync

    torch = group
    calls = []

    def my_hook(state, bucket):
        calls.append(bucket.index())
        return allreduce_hook(state, bucket)

    sync = GradientSync()
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    ddp.register_comm_hook(None, sync.timed(my_hook))   # what RecorderCallback.setup arranges
    assert sync.attach(ddp) == "ddp comm hook (timed_my_hook)"
    rec = StepRecorder(tmp_path / "job")
    sync.bind(rec)
    assert _one_step(rec, ddp, torch)["comm"] > 0
    assert calls == [0]   # one bucket for a 9-parameter model, through the user's hook
    # Lightning's ddp_comm_wrapper wraps the (timed) hook once more before registering it
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import fp16_compress_wrapper

    sync = GradientSync()
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    ddp.register_comm_hook(None, fp16_compress_wrapper(sync.timed(my_hook)))
    assert sync.attach(ddp) == ("ddp comm hook (timed_my_hook inside "
                                "fp16_compress_wrapper.<locals>.fp16_compress_wrapper_hook)")
    rec = StepRecorder(tmp_path / "job2")
    sync.bind(rec)
    assert _one_step(rec, ddp, torch)["comm"] > 0


def test_a_hook_registered_before_is_left_alone_and_the_mode_says_so(group):
    from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook

    from mfu_toolkit.record.collectives import GradientSync

    torch = group
    ddp = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 1))
    ddp.register_comm_hook(None, allreduce_hook)
    with pytest.warns(RuntimeWarning, match="not timed"):
        mode = GradientSync().attach(ddp)
    assert mode == "off: DistributedDataParallel already has comm hook allreduce_hook"


def test_without_a_process_group_or_a_wrapper_nothing_is_attached(tmp_path):
    torch = require_gloo_torch()
    from mfu_toolkit.record.collectives import GradientSync

    assert GradientSync().attach(torch.nn.Linear(8, 1)) == "off: torch.distributed is not initialised"


def test_a_plain_module_in_a_process_group_is_not_hooked(group):
    from mfu_toolkit.record.collectives import GradientSync

    torch = group
    assert GradientSync().attach(torch.nn.Linear(8, 1)) == "off: no DistributedDataParallel or FSDP module on the model"


def test_fsdp_is_timed_through_its_collectives(tmp_path, group):
    torch = group
    from torch.distributed.fsdp import FullyShardedDataParallel

    from mfu_toolkit.record.collectives import GradientSync

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # FSDP warns that one rank means no sharding
        inner = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Linear(8, 1))
        model = FullyShardedDataParallel(inner, device_id=torch.device("cpu"))
    # found from the wrapper and from the module it wraps (what the HF Trainer hands callbacks)
    assert GradientSync().attach(inner) == "collectives (FSDP)"
    sync = GradientSync()
    assert sync.attach(model) == "collectives (FSDP)"
    rec = StepRecorder(tmp_path / "job")
    sync.bind(rec)
    assert rec._patches   # the torch.distributed collectives are wrapped until close
    # FSDP with one rank all-reduces its gradients through torch.distributed.all_reduce
    assert _one_step(rec, model, torch)["comm"] > 0
    assert (tmp_path / "job" / file_name(0, 0)).exists()
