"""HF Trainer throughput claims: end-to-end rates over train_runtime, pinned to the raw bytes.

The Trainer computes ``train_samples_per_second`` (and ``train_steps_per_second``,
``train_tokens_per_second``) once, in transformers' ``trainer_utils.speed_metrics``, over
``train_runtime``, which spans evaluation and checkpoint saves: each is read as a claim with
``basis="end_to_end"``. Every real value below is read from the file's bytes with a regex in the
test, not from the loader.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from _realdata_b import realdata_dir

from mfu_toolkit.io import hf_trainer, load_run
from mfu_toolkit.run import LoadWarning

_NUM = r"([0-9.eE+-]+)"


def _raw(pattern: str, text: str) -> tuple[float, int]:
    """The number ``pattern`` captures in the raw text, and the line it is on."""
    m = re.search(pattern, text)
    assert m is not None, pattern
    return float(m.group(1)), text.count("\n", 0, m.start()) + 1


def _claims(run, metric: str) -> list[dict]:
    return [c for c in run.meta.claims if c["metric"] == metric]


def _quiet(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return hf_trainer.load(path, **kw)


# --- real files ---------------------------------------------------------------------------------
@pytest.mark.realdata
@pytest.mark.parametrize("name, quote", [
    ("Jaong_Checkpoint-of-CPT_trainer_state.json", '"'),
    ("Jaong_Checkpoint-of-CPT_all_results.json", '"'),
    ("alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt", "'"),
])
def test_real_rates_are_end_to_end_claims_pinned_to_the_bytes(name, quote):
    path = realdata_dir("hf_trainer", name)
    text = path.read_text()
    # The Trainer writes its speed metrics once, after training: the first occurrence is the final entry's.
    sps, line = _raw(rf"{quote}train_samples_per_second{quote}: {_NUM}", text)
    steps, _ = _raw(rf"{quote}train_steps_per_second{quote}: {_NUM}", text)
    runtime, _ = _raw(rf"{quote}train_runtime{quote}: {_NUM}", text)
    run = load_run(path)
    (c,) = _claims(run, "samples_per_s")
    assert (c["value"], c["where"], c["unit"], c["basis"]) == (sps, f"{path}:{line}", "samples/s", "end_to_end")
    assert (c["n"], c["statistic"]) == (1, "value")
    assert "speed_metrics" in c["counts"] and "evaluation and checkpoint saves included" in c["counts"]
    assert f"train_runtime ({runtime:.10g} s" in c["counts"]
    assert f"train_steps_per_second {steps:g} (max_steps / train_runtime)" in c["counts"]
    assert "all processes together" in c["counts"]
    # none of these runs set include_tokens_per_second: no token claim is invented
    assert "train_tokens_per_second" not in text and not _claims(run, "tokens_per_s_per_accelerator")


@pytest.mark.realdata
def test_real_values_are_the_published_ones():
    """The regex reads what the files hold (values from the realdata README and the files' own text)."""
    state = realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_trainer_state.json").read_text()
    stdout = realdata_dir("hf_trainer", "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt").read_text()
    assert _raw(rf'"train_samples_per_second": {_NUM}', state) == (0.511, 317)
    assert _raw(rf"'train_samples_per_second': {_NUM}", stdout) == (28.711, 1219)


@pytest.mark.realdata
def test_every_real_hf_file_with_a_rate_gives_an_end_to_end_claim():
    """Each file under hf_trainer/ that prints a train rate yields it as an end-to-end claim, and none other."""
    folder = realdata_dir("hf_trainer")
    seen = 0
    for path in sorted(folder.iterdir()):
        text = path.read_text()
        run = load_run(path, format="hf_trainer")
        rates = [c for c in run.meta.claims if c["metric"] not in ("total_flos", "steps_per_s")]
        printed = re.findall(rf"""["']train_samples_per_second["']: {_NUM}""", text)
        assert [c["value"] for c in rates] == [float(v) for v in printed[:1]], path.name
        steps = re.findall(rf"""["']train_steps_per_second["']: {_NUM}""", text)
        assert [c["value"] for c in run.meta.claims if c["metric"] == "steps_per_s"] == [float(v) for v in steps[:1]]
        assert all(c["basis"] == "end_to_end" for c in rates), path.name
        seen += bool(printed)
    assert seen == 3


@pytest.mark.realdata
def test_real_wandb_summaries_hold_the_same_trainer_rate():
    """accelerator_info/ holds W&B summaries of HF runs (read by the wandb format): the v7i3k2p0 summary
    carries the very train_samples_per_second the Trainer printed to stdout in hf_trainer/."""
    summary = realdata_dir("accelerator_info", "0-KaiKai-0_stanford_alpaca_v7i3k2p0_wandb-summary.json").read_text()
    stdout = realdata_dir("hf_trainer", "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt")
    in_summary, _ = _raw(rf'"train/train_samples_per_second": {_NUM}', summary)
    (c,) = _claims(load_run(stdout), "samples_per_s")
    assert c["value"] == in_summary == 28.711


# --- variants -----------------------------------------------------------------------------------
STEPS = [{"loss": 2.0, "learning_rate": 1e-4, "epoch": 0.5}, {"loss": 1.5, "learning_rate": 5e-5, "epoch": 1.0}]


def _stdout(tmp_path: Path, final: str, prefix: str = "", name: str = "out.txt") -> Path:
    lines = [prefix + repr(e) for e in STEPS] + [prefix + final]
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


@pytest.mark.parametrize("prefix", ["", "0: ", "[rank0]: ", "[default0]:", "  "])
def test_launcher_prefixes_do_not_change_the_claim(tmp_path, prefix):
    final = "{'train_runtime': 100.0, 'train_samples_per_second': 12.5, 'train_steps_per_second': 0.02, 'epoch': 1.0}"
    p = _stdout(tmp_path, final, prefix)
    (c,) = _claims(_quiet(p), "samples_per_s")
    assert (c["value"], c["where"], c["basis"]) == (12.5, f"{p}:3", "end_to_end")


def test_train_tokens_per_second_is_a_per_device_end_to_end_claim(tmp_path):
    final = ("{'train_runtime': 200.0, 'train_samples_per_second': 8.0, 'train_steps_per_second': 0.5, "
             "'train_tokens_per_second': 4096.0, 'train_loss': 1.7, 'epoch': 1.0}")
    p = _stdout(tmp_path, final)
    run = _quiet(p)
    (t,) = _claims(run, "tokens_per_s_per_accelerator")
    assert (t["value"], t["unit"], t["basis"], t["where"]) == (4096.0, "tokens/s per device", "end_to_end", f"{p}:3")
    assert "per device" in t["counts"] and "include_tokens_per_second" in t["counts"]
    assert "train_runtime (200 s" in t["counts"]
    (s,) = _claims(run, "samples_per_s")
    assert s["value"] == 8.0 and "train_steps_per_second 0.5 " in s["counts"]


def test_tokens_rate_in_a_state_file_and_its_results_file(tmp_path):
    hist = [{"epoch": 1.0, "loss": 1.5, "learning_rate": 1e-5, "step": 10},
            {"epoch": 1.0, "step": 10, "train_runtime": 50.0, "train_samples_per_second": 3.2,
             "train_steps_per_second": 0.2, "train_tokens_per_second": 1638.4}]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 10, "log_history": hist}, indent=2))
    text = p.read_text()
    run = _quiet(p)
    value, line = _raw(rf'"train_tokens_per_second": {_NUM}', text)
    (t,) = _claims(run, "tokens_per_s_per_accelerator")
    assert (t["value"], t["where"]) == (value, f"{p}:{line}")
    r = tmp_path / "all_results.json"
    r.write_text(json.dumps({"train_runtime": 50.0, "train_tokens_per_second": 1638.4}, indent=1))
    (t,) = _claims(_quiet(r), "tokens_per_s_per_accelerator")
    assert (t["value"], t["basis"], t["where"]) == (1638.4, "end_to_end", f"{r}:3")


def test_an_older_trainer_without_speed_metrics_makes_no_rate_claim(tmp_path):
    p = _stdout(tmp_path, "{'train_runtime': 100.0, 'train_loss': 1.7, 'epoch': 1.0}")
    run = _quiet(p)
    assert not [c for c in run.meta.claims if c["metric"] != "total_flos"]
    assert not any("no rate" in n for n in run.meta.report.notes)


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "-3.5", "0.0", "1e400"])
def test_a_rate_that_is_not_positive_and_finite_is_noted_not_claimed(tmp_path, value):
    final = f"{{'train_runtime': 100.0, 'train_samples_per_second': {value}, 'train_steps_per_second': 0.02}}"
    p = _stdout(tmp_path, final)
    run = _quiet(p)
    assert not _claims(run, "samples_per_s")
    (note,) = [n for n in run.meta.report.notes if "is no rate" in n]
    assert note.startswith("train_samples_per_second ") and f"{p}:3" in note


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-2", "0"])
def test_a_bad_rate_in_a_state_file_is_noted_not_claimed(tmp_path, value):
    hist = [{"epoch": 1.0, "loss": 1.5, "step": 10},
            {"epoch": 1.0, "step": 10, "train_runtime": 50.0, "train_samples_per_second": "@"}]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 10, "log_history": hist}, indent=2).replace('"@"', value))
    run = _quiet(p)
    assert not _claims(run, "samples_per_s")
    text = p.read_text()
    line = text_line(text, '"train_samples_per_second"') + 1
    assert any(n.endswith("left out of the claim") and f"{p}:{line}" in n for n in run.meta.report.notes)


def test_a_text_rate_is_counted_with_its_line_and_field(tmp_path):
    hist = [{"epoch": 1.0, "loss": 1.5, "step": 10},
            {"epoch": 1.0, "step": 10, "train_runtime": 50.0, "train_tokens_per_second": "fast"}]
    p = tmp_path / "trainer_state.json"
    p.write_text(json.dumps({"global_step": 10, "log_history": hist}, indent=2))
    run = _quiet(p)
    assert not _claims(run, "tokens_per_s_per_accelerator")
    assert sum(run.meta.report.skipped.values()) == 1
    (lines,) = run.meta.report.first_lines.values()
    assert lines == [text_line(p.read_text(), '"epoch": 1.0,\n      "step": 10,\n      "train_runtime"')]


def text_line(text: str, fragment: str) -> int:
    """The line a fragment of the raw text starts on (an entry's first key follows its opening brace)."""
    return text.count("\n", 0, text.index(fragment))


@pytest.mark.parametrize("value", [1e300, 5e-300, 123456789.125])
def test_absurd_magnitudes_are_kept_exactly_as_printed(tmp_path, value):
    """A claim is what the log says; the answer shows how far it is from the measured rate."""
    p = _stdout(tmp_path, f"{{'train_runtime': 100.0, 'train_samples_per_second': {value!r}}}")
    (c,) = _claims(_quiet(p), "samples_per_s")
    assert c["value"] == value and c["basis"] == "end_to_end"


def test_several_launches_give_the_median_of_their_own_rates(tmp_path):
    lines = [repr(STEPS[0]), "{'train_runtime': 10.0, 'train_samples_per_second': 4.0, 'train_steps_per_second': 0.1}",
             repr(STEPS[1]), "{'train_runtime': 30.0, 'train_samples_per_second': 6.0, 'train_steps_per_second': 0.1}"]
    p = tmp_path / "out.txt"
    p.write_text("\n".join(lines) + "\n")
    (c,) = _claims(_quiet(p), "samples_per_s")
    assert (c["value"], c["n"], c["statistic"], c["where"]) == (5.0, 2, "median", f"{p}:2")
    assert "each attempt's own" in c["counts"] and c["basis"] == "end_to_end"


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_the_trainer_rate_read_from_wandb_is_end_to_end_too():
    # W&B's copy of HF's train_samples_per_second spans train_runtime as the Trainer's own does
    run = load_run(realdata_dir("wandb"))
    (claim,) = [c for c in run.meta.claims if c["metric"] == "samples_per_s"]
    assert claim["basis"] == "end_to_end" and claim["value"] == pytest.approx(28.711, abs=5e-4)


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_train_steps_per_second_is_an_end_to_end_step_rate_and_agrees():
    # trainer_state.json's last entry: train_steps_per_second, the planned steps over train_runtime
    from mfu_toolkit.analysis import build_answer

    path = realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_trainer_state.json")
    claimed = float(re.search(r'"train_steps_per_second":\s*([\d.]+)', path.read_text()).group(1))
    run = load_run(path)
    (claim,) = [c for c in run.meta.claims if c["metric"] == "steps_per_s"]
    assert claim["value"] == claimed and claim["basis"] == "end_to_end"
    check = next(c for c in build_answer(run).checks if c.name == "claim steps_per_s")
    assert check.status == "ok" and "an end-to-end rate" in check.message
