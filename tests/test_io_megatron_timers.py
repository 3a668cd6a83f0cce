"""Megatron timers: ``(min, max) time across ranks`` blocks, the one-line ``time (ms) | ...`` form and
DeepSpeed's engine timers, in the ``timers`` table and as compute / comm / data-wait per step."""

from __future__ import annotations

import math
import re

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import megatron_line, write_megatron

from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.run import LoadWarning


def _block(*timers: tuple[str, float, float], prefix: str = "") -> list[str]:
    """A ``(min, max)`` block as Megatron's timers.py prints it (names dotted to 48 columns)."""
    return [f"{prefix}(min, max) time across ranks (ms):"] + [
        f"    {(name + ' ').ljust(48, '.')}: ({lo:.2f}, {hi:.2f})" for name, lo, hi in timers]


# --- synthetic ---------------------------------------------------------------------------------------
def test_a_minmax_block_fills_its_interval(tmp_path):
    lines = [
        megatron_line(10, 1000.0),
        *_block(("forward-backward", 900.0, 950.0), ("forward-compute", 300.0, 320.0),
                ("backward-compute", 500.0, 540.0), ("batch-generator", 10.0, 30.0), ("grads-all-reduce", 40.0, 45.0),
                ("forward-send-backward-recv", 5.0, 8.0),
                ("optimizer", 60.0, 61.0), prefix="INFO:megatron.core.timers:"),
        megatron_line(20, 1000.0),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines), log_interval=10)
    s = run.steps.set_index("step")
    # the block after iteration 10 belongs to steps 1-10; values are per step, the slowest rank's
    assert s.loc[1:10, "compute_s"].tolist() == pytest.approx([(320.0 + 540.0) / 1000] * 10)
    assert s.loc[1:10, "comm_s"].tolist() == pytest.approx([(45.0 + 8.0) / 1000] * 10)
    assert s.loc[1:10, "data_wait_s"].tolist() == pytest.approx([30.0 / 1000] * 10)
    assert s.loc[11:20, ["compute_s", "comm_s", "data_wait_s"]].isna().all().all()  # no block after 20
    t = run.tables["timers"].set_index("timer")
    assert (len(t) == 7 and (t["step"] == 10).all() and (t["interval_steps"] == 10).all()
            and (t["source"] == "megatron").all())
    assert t.loc["batch-generator", ["min_ms", "max_ms", "spread_ms"]].tolist() == [10.0, 30.0, 20.0]
    assert run.meta.extra["timer_spread_ms"]["forward-backward"] == 50.0


def test_the_old_one_line_timers_and_parents_left_out(tmp_path):
    lines = [
        megatron_line(1, 1000.0),
        "time (ms) | forward-compute: 58.16 | backward-compute: 42.66 | backward-params-all-reduce: 21.43 | "
        "backward-embedding-all-reduce: 0.03 | backward-reduce-model-grads: 21.52 | optimizer: 57.50 | "
        "batch-generator: 5.24",
        megatron_line(2, 1000.0),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines), log_interval=1)
    first = run.steps.iloc[0]
    # backward-reduce-model-grads contains the two all-reduces: counted once, through them
    assert first["compute_s"] == pytest.approx((58.16 + 42.66) / 1000)
    assert first["comm_s"] == pytest.approx((21.43 + 0.03) / 1000)
    assert first["data_wait_s"] == pytest.approx(5.24 / 1000)
    t = run.tables["timers"]
    assert t["min_ms"].isna().all() and t["value_ms"].tolist() == [58.16, 42.66, 21.43, 0.03, 21.52, 57.50, 5.24]


def test_deepspeed_timers_belong_to_the_next_line_and_yield_to_megatron(tmp_path):
    ds = ("[2024-01-01 00:00:00,100] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: 100.00 | "
          "bwd: 300.00 | bwd_inner: 250.00 | bwd_allreduce: 50.00 | step: 10.00")
    lines = [
        ds, megatron_line(1, 1000.0),  # DeepSpeed prints before the iteration line it times
        ds, megatron_line(2, 1000.0),
        *_block(("forward-compute", 200.0, 210.0)),  # Megatron's own compute for step 2 wins
    ]
    run = load_run(write_megatron(tmp_path, lines=lines), log_interval=1)
    s = run.steps.set_index("step")
    assert s.loc[1, "compute_s"] == pytest.approx((100.0 + 250.0) / 1000)  # fwd + bwd_inner, never bwd too
    assert s.loc[2, "compute_s"] == pytest.approx(210.0 / 1000)
    assert s.loc[1, "comm_s"] == s.loc[2, "comm_s"] == pytest.approx(50.0 / 1000)  # no Megatron comm timer
    t = run.tables["timers"]
    assert t.loc[t["source"] == "deepspeed", "step"].tolist() == [1] * 5 + [2] * 5
    assert run.meta.fact("framework")["value"] == "Megatron-DeepSpeed"


def test_setup_timers_and_a_headerless_block_have_no_step(tmp_path):
    lines = [
        "    model-and-optimizer-setup ......................: (1020.90, 1022.97)",
        "    train/valid/test-data-iterators-setup ..........: (190.27, 292.00)  <---",
        megatron_line(1, 1000.0),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines))
    t = run.tables["timers"]
    assert t["timer"].tolist() == ["model-and-optimizer-setup", "train/valid/test-data-iterators-setup"]
    assert t["step"].isna().all() and t["max_ms"].tolist() == [1022.97, 292.0]  # the '<---' note is not a value
    assert "compute_s" not in run.steps


def test_a_repeated_block_and_a_bad_timer_value_are_counted(tmp_path):
    lines = [megatron_line(1, 1000.0), *_block(("forward-compute", 1.0, 2.0)), *_block(("forward-compute", 1.0, 2.0)),
             megatron_line(2, 1000.0), "(min, max) time across ranks (ms):", "    forward-compute ......: (nan, -3.0)"]
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=lines), log_interval=1)
    rep = run.meta.report
    assert rep.first_lines == {"duplicate record (kept the first)": [5],
                               "time is missing, NaN or infinite": [8],
                               "negative duration": [8]}
    assert rep.examples["negative duration"].startswith("timer")
    t = run.tables["timers"]
    assert len(t) == 2 and math.isnan(t["value_ms"].iloc[1])


def test_timer_only_logs_are_megatron(tmp_path):
    p = write_megatron(tmp_path, lines=_block(("forward-backward", 5164.84, 5177.15), ("optimizer", 72.92, 73.13))[1:]
                       + ["    batch-generator ................................: (408.98, 817.78)  <---"])
    assert detect_format(p) == "megatron"
    run = load_run(p)
    assert len(run.steps) == 0 and len(run.tables["timers"]) == 3


# --- real files ---------------------------------------------------------------------------------------
_BODY = re.compile(r"^\s*(\S+) \.+: \(([0-9.]+), ([0-9.]+)\)")


def test_every_timers_file_loads_as_megatron(realdata):  # noqa: F811
    with_timers = 0
    for path in files(realdata / "megatron_timers"):
        text = path.read_text()
        run = load_run(path)  # format="auto"
        assert run.meta.source_format == "megatron", path.name
        has = bool(re.search(r"time across ranks \(ms\):|time \(ms\) \| \S+: [0-9.]|^\s*\S+ \.{3,}: \(", text, re.M))
        assert ("timers" in run.tables) == has, path.name
        with_timers += has
    # four of the six print timers; the GPT-3 and Qwen-VL READMEs quote iteration lines only
    assert with_timers == 4


def test_real_minmax_block_without_a_header(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / "bigcode-project_Megatron-LM_issue28_minmax_timers_1B_ul2.log"
    expected = [(m.group(1), float(m.group(2)), float(m.group(3)))
                for m in map(_BODY.match, path.read_text().splitlines()) if m]
    t = load_run(path).tables["timers"]
    assert list(zip(t["timer"], t["min_ms"], t["max_ms"], strict=True)) == expected and len(expected) == 16
    row = t.set_index("timer").loc["batch-generator"]
    assert row["spread_ms"] == pytest.approx(817.78 - 408.98)  # max - min: the imbalance across ranks (raw line above)
    assert t["step"].isna().all()  # no iteration line in the excerpt


def test_real_old_timer_line(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / "NVIDIA_nccl_issue743_megatron_bert_old_timer_format.log"
    line = next(x for x in path.read_text().splitlines() if x.startswith("time (ms) |"))
    expected = [(k.strip(), float(v)) for k, v in (p.split(":") for p in line.split("|")[1:])]
    t = load_run(path).tables["timers"]
    assert list(zip(t["timer"], t["value_ms"], strict=True)) == expected
    # printed before the only iteration line (iteration 30): it belongs to an earlier interval
    assert t["step"].isna().all()


def test_real_timer_header_with_a_logger_prefix(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / "gnosia93_slurm-on-aws_lesson_9-megatron-lm_4x8gpu.md"
    text = path.read_text()
    assert "INFO:megatron.core.timers:(min, max) time across ranks (ms):" in text
    t = load_run(path).tables["timers"].set_index("timer")
    assert t.loc["model-and-optimizer-setup", ["min_ms", "max_ms"]].tolist() == [1020.90, 1022.97]
    assert t.loc["train/valid/test-data-iterators-setup", ["min_ms", "max_ms"]].tolist() == [190.27, 292.00]


def test_real_megatron_deepspeed_timers_per_interval(realdata):  # noqa: F811
    path = realdata / "deepspeed" / "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"
    expected = {}  # iteration -> (compute, comm, data) in s, from the timer line after each iteration line
    it = None
    for line in path.read_text().splitlines():
        if m := re.search(r"iteration\s+(\d+)/", line):
            it = int(m.group(1))
        elif line.startswith("time (ms) | forward-compute") and it is not None:
            v = {k.strip(): float(x) for k, x in (p.split(":") for p in line.split("|")[1:])}
            expected[it] = ((v["forward-compute"] + v["backward-compute"]) / 1000,
                            v["backward-embedding-all-reduce"] / 1000, v["batch-generator"] / 1000)
    run = load_run(path)
    s = run.steps
    assert len(expected) == 18 and run.meta.extra["log_interval"] == 10
    for it, (compute, comm, data) in expected.items():
        rows = s[(s["step"] > it - 10) & (s["step"] <= it)]  # the interval the line reports
        assert len(rows) == 10
        assert rows["compute_s"].tolist() == pytest.approx([compute] * 10)
        assert rows["comm_s"].tolist() == pytest.approx([comm] * 10)
        assert rows["data_wait_s"].tolist() == pytest.approx([data] * 10)


def test_real_alcf_timers_per_iteration(realdata):  # noqa: F811
    path = realdata / "megatron_timers" / "argonne-lcf_Megatron-DeepSpeed_cooldown_aurora_3072xpu.md"
    lines = path.read_text().splitlines()
    fwd_bwd, compute, ds_pending = {}, {}, None
    it = None
    for line in lines:
        if m := re.search(r"\] time \(ms\) \| fwd: ([0-9.]+) \| bwd: [0-9.]+ \| bwd_inner: ([0-9.]+)", line):
            ds_pending = (float(m.group(1)) + float(m.group(2))) / 1000  # DeepSpeed: before its iteration line
        elif m := re.search(r"iteration=\s*(\d+)/", line):
            it = int(m.group(1))
            compute[it], ds_pending = ds_pending, None
        elif "forward-backward ..." in line and it is not None:
            m = _BODY.match(line)
            fwd_bwd[it] = (float(m.group(2)), float(m.group(3)))
    run = load_run(path)
    t = run.tables["timers"]
    fb = t[t["timer"] == "forward-backward"]
    assert dict(zip(fb["step"], zip(fb["min_ms"], fb["max_ms"], strict=True), strict=True)) == fwd_bwd
    assert len(fwd_bwd) == 7  # iterations 136004-136010 (136011 has DeepSpeed lines only)
    # the slow iterations (6863 and 5334 ms) show in forward-backward
    assert max(fwd_bwd, key=lambda k: fwd_bwd[k][1]) == 136006
    got = dict(zip(run.steps["step"], run.steps["compute_s"], strict=True))
    assert got == pytest.approx(compute) and len(compute) == 7
