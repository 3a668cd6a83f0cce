"""The Lightning and Hugging Face callbacks, each on a real (tiny, CPU) training run.

No network: the HF model is built from a small config, the data are tensors the test makes.
Expected counts come from the runs' own settings (steps, batch sizes, evaluation and save
intervals), not from the recorder's output. ``MFU_REQUIRE_TORCH=1`` (CI) makes a missing
framework a failure, as for PyTorch itself.
"""

from __future__ import annotations

import importlib
import os
import warnings

import pytest

from mfu_toolkit.io import load_run
from mfu_toolkit.run import LoadWarning

pytestmark = pytest.mark.torch
REQUIRE_ENV = "MFU_REQUIRE_TORCH"


def _require(module: str, extra: str = "record"):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but {module} cannot be imported: {exc}", pytrace=False)
        pytest.skip(f"{module} is not installed (pip install 'mfu_toolkit[{extra}]'); "
                    f"set {REQUIRE_ENV}=1 to fail instead")


def _load(path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return load_run(path)


def test_lightning_trainer_records_steps_validation_and_checkpoints(tmp_path):
    torch = _require("torch")
    pl = _require("pytorch_lightning")
    from mfu_toolkit.record.lightning import RecorderCallback

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8, 1)

        def training_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def validation_step(self, batch, _):
            x, y = batch
            return torch.nn.functional.mse_loss(self.net(x), y)

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.01)

    g = torch.Generator().manual_seed(0)
    data = torch.utils.data.TensorDataset(torch.randn(48, 8, generator=g), torch.randn(48, 1, generator=g))
    train = torch.utils.data.DataLoader(data, batch_size=4)   # 12 batches per epoch
    val = torch.utils.data.DataLoader(data, batch_size=16)
    ckpt = pl.callbacks.ModelCheckpoint(dirpath=tmp_path / "ckpt", every_n_train_steps=5, save_top_k=-1)
    trainer = pl.Trainer(max_epochs=2, accumulate_grad_batches=2, accelerator="cpu", devices=1,
                         callbacks=[RecorderCallback(tmp_path / "rec"), ckpt], logger=False,
                         enable_progress_bar=False, enable_model_summary=False, num_sanity_val_steps=1)
    trainer.fit(Tiny(), train, val)
    run = _load(tmp_path / "rec")
    s = run.steps
    # 2 epochs × 12 batches / 2 accumulated = 12 optimizer steps, numbered 0..11, 2 × 4 samples each
    assert s["step"].tolist() == list(range(12))
    assert s["samples"].tolist() == [8.0] * 12
    assert (s["end_s"] > s["start_s"]).all() and (s["start_s"].diff().dropna() > 0).all()
    ev = run.events
    # validation at each epoch's end (2) and the sanity check before training (1)
    assert (ev["kind"] == "eval").sum() == 3
    assert ev.loc[ev["kind"] == "eval", "detail"].str.contains("sanity check").sum() == 1
    # ModelCheckpoint every 5 optimizer steps (5, 10) and at each epoch end (6, 12)
    n_ckpt_files = len(list((tmp_path / "ckpt").glob("*.ckpt")))
    assert (ev["kind"] == "checkpoint_save").sum() == n_ckpt_files >= 2
    assert run.meta.report.total_skipped == 0
    assert not any("without a close record" in n for n in run.meta.report.notes)


def test_hf_trainer_records_steps_evaluation_and_saves(tmp_path):
    torch = _require("torch")
    transformers = _require("transformers")
    _require("accelerate")
    from mfu_toolkit.record.hf import RecorderTrainerCallback

    config = transformers.GPT2Config(n_layer=1, n_head=2, n_embd=16, vocab_size=64, n_positions=16)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)  # from a config: nothing is downloaded

    class Tokens(torch.utils.data.Dataset):
        def __len__(self):
            return 24

        def __getitem__(self, i):
            ids = torch.arange(i, i + 8) % 64
            return {"input_ids": ids, "labels": ids}

    args = transformers.TrainingArguments(
        output_dir=str(tmp_path / "out"), max_steps=6, per_device_train_batch_size=2,
        gradient_accumulation_steps=2, eval_strategy="steps", eval_steps=3, save_strategy="steps",
        save_steps=3, logging_steps=2, report_to=[], use_cpu=True, disable_tqdm=True,
        dataloader_num_workers=0, seed=0)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=Tokens(), eval_dataset=Tokens(),
                                   callbacks=[RecorderTrainerCallback(tmp_path / "rec")])
    trainer.train()
    run = _load(tmp_path / "rec")
    s = run.steps
    # max_steps=6 optimizer steps, numbered by global_step before each (0..5), 2 × 2 samples each
    assert s["step"].tolist() == list(range(6))
    assert s["samples"].tolist() == [4.0] * 6
    ev = run.events
    assert (ev["kind"] == "eval").sum() == 2              # eval_steps=3 of 6: after steps 3 and 6
    saved = sorted(p.name for p in (tmp_path / "out").glob("checkpoint-*"))
    assert saved == ["checkpoint-3", "checkpoint-6"]      # save_steps=3
    assert sorted(ev.loc[ev["kind"] == "checkpoint_save", "detail"]) == saved
    assert (ev["kind"] == "other").sum() >= 3              # logging_steps=2: logs after steps 2, 4, 6
    assert run.meta.report.total_skipped == 0


def test_lightning_wraps_a_comm_hook_given_to_the_ddp_strategy(tmp_path):
    """``DDPStrategy(ddp_comm_hook=...)`` is registered by Lightning itself, before callbacks see
    the model: ``setup`` (which runs first) swaps in the timed wrapper of that hook, once."""
    _require("torch")
    _require("pytorch_lightning")
    from types import SimpleNamespace

    from mfu_toolkit.record.lightning import RecorderCallback

    def my_hook(state, bucket):
        raise AssertionError("not called here")

    trainer = SimpleNamespace(strategy=SimpleNamespace(_ddp_comm_hook=my_hook))
    RecorderCallback(tmp_path / "rec").setup(trainer, None, "fit")
    hook = trainer.strategy._ddp_comm_hook
    assert hook is not my_hook and hook.__name__ == "timed_my_hook" and hook._mfu_timed
    RecorderCallback(tmp_path / "rec").setup(trainer, None, "fit")
    assert trainer.strategy._ddp_comm_hook is hook  # never wrapped twice
    untouched = SimpleNamespace(strategy=SimpleNamespace(_ddp_comm_hook=my_hook))
    RecorderCallback(tmp_path / "rec", time_gradient_sync=False).setup(untouched, None, "fit")
    assert untouched.strategy._ddp_comm_hook is my_hook
