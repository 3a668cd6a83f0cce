"""A non-numeric value in a numeric field: counted with its line and field, never read as NaN
in silence nor filled from a neighbour; ``strict=True`` raises naming file, line and field."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from _samples import megatron_line

from mfu_toolkit.io import hf_trainer, megatron, table, wandb
from mfu_toolkit.run import LoadError, LoadWarning, Run

T0 = 1_700_000_000.0


def load_warned(loader: Any, path: Path, **kw: Any) -> Run:
    with pytest.warns(LoadWarning, match="non-numeric value"):
        return loader.load(path, **kw)


def strict_error(loader: Any, path: Path, **kw: Any) -> LoadError:
    with pytest.raises(LoadError) as exc:
        loader.load(path, strict=True, **kw)
    assert str(path) in str(exc.value)
    return exc.value


# --- Megatron stdout ------------------------------------------------------------------------------
def write_megatron(tmp_path: Path, bad: dict[str, str]) -> Path:
    """Iterations 10, 20, 30 (interval 10, 1 s steps); line 2 has the ``bad`` field values."""
    lines = [megatron_line(i, 1000.0, ts=f"2024-04-06 02:00:{i + 5:02d}") for i in (10, 20, 30)]
    for key, value in bad.items():
        head, _, rest = lines[1].partition(f"| {key}: ")
        lines[1] = f"{head}| {key}: {value} |{rest.split('|', 1)[1]}"
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_megatron_bad_value_is_counted_and_never_back_filled(tmp_path):
    p = write_megatron(tmp_path, {"global batch size": "x12", "lm loss": "abc"})
    run = load_warned(megatron, p)
    rep, s = run.meta.report, run.steps.set_index("step")
    assert rep.skipped == {"non-numeric value (left missing, record kept)": 2}
    assert rep.first_lines["non-numeric value (left missing, record kept)"] == [2, 2]
    # the line's timing stays; its values are missing, not borrowed from iteration 30
    assert len(s) == 30 and s.loc[20, "end_s"] - s.loc[11, "start_s"] == pytest.approx(10.0)
    assert math.isnan(s.loc[20, "loss"]) and math.isnan(s.loc[20, "global_batch_size"])
    assert s.loc[11:20, "samples"].isna().all()
    assert (s.loc[1:10, "samples"] == 16).all() and (s.loc[21:30, "samples"] == 16).all()
    assert s.loc[20, "grad_norm"] == 1.0
    err = strict_error(megatron, p)
    assert (err.line, err.field) == (2, "global batch size") and "x12" in str(err)


def test_megatron_bad_loss_alone_and_unknown_text_field(tmp_path):
    err = strict_error(megatron, write_megatron(tmp_path, {"lm loss": "abc"}))
    assert (err.line, err.field) == (2, "lm loss") and "abc" in str(err)
    p = write_megatron(tmp_path, {"loss scale": "1.0 | phase: warmup"})
    run = megatron.load(p, strict=True)  # a field the toolkit does not know: noted, not an error
    assert run.meta.report.skipped == {}
    assert any("'phase'" in n and "left out" in n for n in run.meta.report.notes)



def test_megatron_bad_straggler_and_memory_values_are_counted(tmp_path):
    p = tmp_path / "train.log"
    p.write_text(
        "[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: nanms/0 | MnUtl/Rnk: 97%/8 | MxUtl/Rnk: N/A/6\n"
        "[Rank 1] (after 1 iterations) memory (MB) | allocated: 100.5 | max allocated: n/a | reserved: 300.0\n"
        + megatron_line(1, 1000.0, ts="2024-03-14 23:08:00")
        + "\n"
    )
    run = load_warned(megatron, p)
    rep, reason = run.meta.report, "non-numeric value (left missing, record kept)"
    assert rep.skipped == {reason: 3} and rep.first_lines[reason] == [1, 1, 2]
    st = run.tables["straggler"].set_index("metric")
    assert st.loc["Rtt", ["unit", "min", "min_rank", "max_rank"]].tolist() == ["ms", 3453.08, 8, 0]
    assert math.isnan(st.loc["Rtt", "max"]) and math.isnan(st.loc["Utl", "max"]) and st.loc["Utl", "min"] == 97.0
    mem = run.tables["memory"].iloc[0]
    assert math.isnan(mem["max_allocated_mb"]) and (mem["allocated_mb"], mem["reserved_mb"]) == (100.5, 300.0)
    err = strict_error(megatron, p)
    assert (err.line, err.field) == (1, "MxRtt/Rnk") and "nanms" in str(err)
    p.write_text(p.read_text().replace("nanms", "3468.2ms").replace("N/A", "100%"))
    err = strict_error(megatron, p)
    assert (err.line, err.field) == (2, "max allocated") and "n/a" in str(err)

# --- W&B history CSV ------------------------------------------------------------------------------
def test_wandb_bad_metric_cell_is_counted(tmp_path):
    p = tmp_path / "history.csv"
    p.write_text(
        "_step,_runtime,_timestamp,train/loss,train/global_step\n"
        f"0,10,{T0 + 10},1.0,10\n"
        f"1,20,{T0 + 20},abc,20\n"
        f"2,30,{T0 + 30},0.9,30\n"
    )
    run = load_warned(wandb, p)
    rep, s = run.meta.report, run.steps.set_index("step")
    assert rep.skipped == {"non-numeric value (left missing, record kept)": 1}
    assert rep.first_lines["non-numeric value (left missing, record kept)"] == [3]
    assert s.loc[[10, 30], "loss"].tolist() == [1.0, 0.9] and math.isnan(s.loc[20, "loss"])
    assert s.loc[20, "end_s"] == pytest.approx(20.0)  # the row's step and time are kept
    err = strict_error(wandb, p)
    assert (err.line, err.field) == (3, "train/loss") and "abc" in str(err)


def test_wandb_text_column_is_noted_not_counted(tmp_path):
    p = tmp_path / "history.csv"
    p.write_text(
        "_step,_timestamp,train/loss,train/global_step,media\n"
        f"0,{T0 + 10},1.0,10,img_0.png\n"
        f"1,{T0 + 20},0.9,20,img_1.png\n"
    )
    run = wandb.load(p, strict=True)
    assert run.meta.report.skipped == {} and "media" not in run.steps
    assert any("'media'" in n and "left out" in n for n in run.meta.report.notes)


# --- HF Trainer -----------------------------------------------------------------------------------
def write_state(tmp_path: Path, global_step: Any = 30, grad_norm: Any = 0.4) -> Path:
    p = tmp_path / "trainer_state.json"
    entries = [
        {"loss": 1.0, "grad_norm": 0.5, "learning_rate": 1e-4, "epoch": 0.1, "step": 10},
        {"loss": 0.9, "grad_norm": grad_norm, "learning_rate": 1e-4, "epoch": 0.2, "step": 20},
        {"train_runtime": 30.0, "train_steps_per_second": 1.0, "step": 30},
    ]
    p.write_text(json.dumps({"global_step": global_step, "log_history": entries}, indent=1))
    return p


def entry_line(p: Path, n: int) -> int:
    """Line of the n-th (0-based) log_history entry's opening brace, as the loader reports it."""
    lines = p.read_text().splitlines()
    starts = [i for i, t in enumerate(lines, start=1) if t.strip() == "{"]
    return starts[n + 1]  # the first "{" is the document's


def test_hf_non_numeric_point_value_is_counted(tmp_path):
    p = write_state(tmp_path, grad_norm="bad")
    run = load_warned(hf_trainer, p)
    rep, s = run.meta.report, run.steps.set_index("step")
    assert rep.skipped == {"non-numeric value (left missing, record kept)": 1}
    assert rep.first_lines["non-numeric value (left missing, record kept)"] == [entry_line(p, 1)]
    assert len(s) == 30 and s.loc[20, "loss"] == 0.9 and math.isnan(s.loc[20, "grad_norm"])
    err = strict_error(hf_trainer, p)
    assert (err.line, err.field) == (entry_line(p, 1), "grad_norm") and "bad" in str(err)


def test_hf_non_integer_global_step_is_counted(tmp_path):
    p = write_state(tmp_path, global_step="x30")
    with pytest.warns(LoadWarning, match="step is not a non-negative integer"):
        run = hf_trainer.load(p)
    rep = run.meta.report
    assert rep.skipped == {"step is not a non-negative integer": 1}
    assert rep.first_lines["step is not a non-negative integer"] == [2]
    assert rep.examples["step is not a non-negative integer"] == "global_step ignored: 'x30'"
    assert "global_step" not in run.meta.extra and len(run.steps) == 30  # steps from the log
    err = strict_error(hf_trainer, p)
    assert (err.line, err.field) == (2, "global_step") and "x30" in str(err)


def test_hf_stdout_bad_value_keeps_the_step_numbering(tmp_path):
    p = tmp_path / "stdout.txt"
    p.write_text(
        "{'loss': 1.0, 'grad_norm': 0.5, 'learning_rate': 1e-4, 'epoch': 0.1}\n"
        "{'loss': 'nope', 'grad_norm': 0.4, 'learning_rate': 1e-4, 'epoch': 0.2}\n"
        "{'loss': 0.8, 'grad_norm': 0.3, 'learning_rate': 1e-4, 'epoch': 0.3}\n"
        "{'train_runtime': 30.0, 'train_steps_per_second': 1.0, 'epoch': 0.3}\n"
    )
    s = load_warned(hf_trainer, p).steps.set_index("step")
    assert s.loc[[10, 30], "loss"].tolist() == [1.0, 0.8] and math.isnan(s.loc[20, "loss"])
    assert s.loc[20, "grad_norm"] == 0.4
    err = strict_error(hf_trainer, p)
    assert (err.line, err.field) == (2, "loss")


# --- generic table --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "text", "line"),
    [
        ("t.csv", "step,start_s,end_s,loss\n1,0,1,1.0\n2,1,2,abc\n3,2,3,0.8\n", 3),
        (
            "t.jsonl",
            '{"step":1,"start_s":0,"end_s":1,"loss":1.0}\n'
            '{"step":2,"start_s":1,"end_s":2,"loss":"x"}\n'
            '{"step":3,"start_s":2,"end_s":3,"loss":0.8}\n',
            2,
        ),
    ],
)
def test_table_bad_cell_keeps_the_column(tmp_path, name, text, line):
    p = tmp_path / name
    p.write_text(text)
    run = load_warned(table, p)
    reason = "non-numeric value (left missing, record kept)"
    assert run.meta.report.skipped == {reason: 1} and run.meta.report.first_lines[reason] == [line]
    assert run.meta.report.examples[reason].startswith("'loss': ")  # the column, then the row
    loss = run.steps["loss"].tolist()
    assert len(loss) == 3 and loss[0] == 1.0 and math.isnan(loss[1]) and loss[2] == 0.8
    err = strict_error(table, p)
    assert (err.line, err.field) == (line, "loss")


def test_table_text_column_is_noted_not_counted(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("step,start_s,end_s,host,loss\n1,0,1,node-a,nan\n2,1,2,node-b,0.9\n")
    run = table.load(p, strict=True)  # 'nan' is a number; a column of names is not an error
    assert run.meta.report.skipped == {} and "host" not in run.steps
    assert any("'host'" in n and "left out" in n for n in run.meta.report.notes)
    assert math.isnan(run.steps["loss"].iloc[0]) and run.steps["loss"].iloc[1] == 0.9
