"""DeepSpeed engine and DeepSpeed-Chat logs: the real files pinned to their raw bytes, damage counted, sniffing.

Expected values of the real-log tests are read from the files here with plain ``re`` (never from
the loader's own output); hand-made logs are written into ``tmp_path`` with hand-computed results.
"""

from __future__ import annotations

import base64
import json
import math
import random
import re
import statistics
import warnings
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from _realdata import files, realdata  # noqa: F401
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.io.base import InternalLoadError, Parsed
from mfu_toolkit.io.deepspeed_runtime import RUNTIME_LINES, Runtime, world_facts
from mfu_toolkit.io.formats import deepspeed
from mfu_toolkit.io.lines import Line, read
from mfu_toolkit.io.reading import Reader
from mfu_toolkit.run import LoadError, LoadWarning, Run, SchemaError, read_run, save_run

SFT = "deepspeedai_DeepSpeedExamples_dschat_step1_sft_opt-1.3b_gbs128.log"
DPO = "deepspeedai_DeepSpeedExamples_dschat_step2_dpo_opt-350M_gbs32.log"
REWARD = "deepspeedai_DeepSpeedExamples_dschat_step2_reward_opt-350m_gbs64.log"
RLHF = "deepspeedai_DeepSpeedExamples_dschat_step3_rlhf_actor1.3b_critic350m_gbs64.log"
PROFILER = "deepspeedai_Megatron-DeepSpeed_issue98_flops_profiler_128gpu_header.excerpt.log"
MOE = "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"
NO_MOE = "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-no-MoE.log"
ALCF = "argonne-lcf_Megatron-DeepSpeed_deprecated_aurora_sunspot_polaris.md"
COOLDOWN = "megatron_timers/argonne-lcf_Megatron-DeepSpeed_cooldown_aurora_3072xpu.md"

STEP_RE = re.compile(r"\[Rank 0\] step=(\d+), skipped=(\d+), lr=\[([^,\]]+)")
TS_RE = re.compile(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\]")
RUNNING_RE = re.compile(r"RunningAvgSamplesPerSec=([0-9.]+), CurrSamplesPerSec=([0-9.]+)")


def _load(path: Path, **kw) -> Run:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, **kw)


def _lines(path: Path) -> list[str]:
    """The file's lines; ``lines[i]`` is line ``i + 1``."""
    return path.read_text(encoding="utf-8").split("\n")


def _seconds(line: str) -> float:
    return datetime.strptime(TS_RE.search(line).group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()


def _raw_steps(lines: list[str]) -> list[tuple[int, int, int, float]]:
    """(line number, step, skipped, timestamp) of every engine step line."""
    out = []
    for i, line in enumerate(lines):
        m = STEP_RE.search(line)
        if m:
            out.append((i + 1, int(m.group(1)), int(m.group(2)), _seconds(line)))
    return out


def _fact(run: Run, name: str):
    f = run.meta.fact(name)
    return None if f is None else f["value"]


def _claims(run: Run, metric: str) -> list[dict]:
    return [c for c in run.meta.claims if c["metric"] == metric]


# --- real DeepSpeed-Chat logs ------------------------------------------------------------------


def test_sft_steps_overflows_and_facts_from_the_raw_lines(realdata):  # noqa: F811
    path = realdata / "deepspeed" / SFT
    lines = _lines(path)
    raw = _raw_steps(lines)
    run = _load(path)  # format="auto"
    assert run.meta.source_format == "deepspeed"
    assert len(raw) == 736 and len(run.tables["engine"]) == len(raw)
    assert run.tables["engine"]["step"].tolist() == [s for _, s, _, _ in raw]
    # every step after the first printed one (step 10, which only anchors the timeline) is a row
    steps = run.steps
    assert steps["step"].tolist() == list(range(raw[0][1] + 1, raw[-1][1] + 1))
    assert run.meta.timing == "interval_mean" and (steps["rank"] == -1).all()
    # the interval step=10 -> step=20: (01:47:06,590 - 01:46:59,142) / 10 steps = 0.7448 s a step
    per_step = (raw[1][3] - raw[0][3]) / (raw[1][1] - raw[0][1])
    first = steps[steps["step"] <= 20]
    assert (first["end_s"] - first["start_s"]).tolist() == pytest.approx([per_step] * 10)
    assert per_step == pytest.approx(0.7448)
    # six OVERFLOW lines before the first step line; skipped=6 on it
    overflow_lines = [i + 1 for i, t in enumerate(lines) if "OVERFLOW! Rank 0 Skipping step" in t]
    assert len(overflow_lines) == 139 and overflow_lines[:6] == [6, 7, 8, 9, 10, 11] and raw[0][0] == 12
    eng0 = run.tables["engine"].iloc[0]
    assert eng0["overflow_lines"] == 6 and eng0["skipped"] == raw[0][2] == 6
    assert len(run.tables["overflow"]) == 139 and run.tables["overflow"]["step"].tolist()[:6] == [10] * 6
    after_first = [ln for ln in overflow_lines if raw[0][0] < ln < raw[-1][0]]
    assert steps["overflow_lines"].sum() == len(after_first)
    assert steps["skipped_steps"].sum() == raw[-1][2] - raw[0][2] == 133
    # DeepSpeed's own throughput: RunningAvgSamplesPerSec ~172 (the last value printed), Curr median
    timer = [RUNNING_RE.search(t) for t in lines if "RunningAvgSamplesPerSec=" in t]
    running = [c for c in _claims(run, "samples_per_s") if c["statistic"] == "last"][0]
    assert running["value"] == float(timer[-1].group(1)) and 171 < running["value"] < 173
    curr = [c for c in _claims(run, "samples_per_s") if c["statistic"] == "median"][0]
    assert curr["value"] == pytest.approx(statistics.median(float(m.group(2)) for m in timer))
    # the launch command states model, per-device batch and sequence length; no world size anywhere
    cmd = lines[0]
    assert _fact(run, "model") == re.search(r"--model_name_or_path (\S+)", cmd).group(1) == "facebook/opt-1.3b"
    assert _fact(run, "micro_batch") == int(re.search(r"--per_device_train_batch_size (\d+)", cmd).group(1)) == 8
    assert _fact(run, "seq_len") == int(re.search(r"--max_seq_len (\d+)", cmd).group(1)) == 512
    assert _fact(run, "framework") == "DeepSpeed-Chat"
    assert ("dist_world_size" not in path.read_text() and _fact(run, "n_ranks") is None
            and _fact(run, "global_batch") is None)
    # evaluations between printed steps flag their interval
    evals = [i + 1 for i, t in enumerate(lines) if "***** Evaluating" in t and raw[0][0] < i + 1 < raw[-1][0]]
    assert steps.loc[steps["logged"], "includes_eval"].sum() == len(evals) == 15
    assert run.meta.extra["launcher_processes_exited"] == sum("exits successfully" in t for t in lines) == 16
    assert not run.meta.report.skipped


def test_dpo_world_size_batch_and_dtype_from_the_launcher_and_config(realdata):  # noqa: F811
    path = realdata / "deepspeed" / DPO
    text = path.read_text()
    run = _load(path)
    assert run.meta.source_format == "deepspeed"
    assert _fact(run, "n_ranks") == int(re.search(r"dist_world_size=(\d+)", text).group(1)) == 8
    devices = json.loads(base64.b64decode(re.search(r"--world_info=(\S+)", text).group(1)))
    assert devices == {"localhost": [0, 1, 2, 3, 4, 5, 6, 7]}
    assert _fact(run, "n_accelerators") == 8 and _fact(run, "n_nodes") == 1 and run.meta.n_accelerators == 8
    assert _fact(run, "global_batch") == float(re.search(r"train_batch_size \.+ (\d+)", text).group(1)) == 32
    assert run.meta.global_batch == 32
    assert _fact(run, "micro_batch") == int(re.search(r"train_micro_batch_size_per_gpu\s+(\d+)", text).group(1)) == 2
    assert re.search(r"fp16_enabled \.+ True", text) and _fact(run, "dtype") == "fp16"
    assert "ZeRO stage 0" in _fact(run, "parallelism")
    assert _fact(run, "seq_len") == int(re.search(r"Sequence Length: (\d+)", text).group(1)) == 512
    # step=0 is printed while the engine starts: in the engine table, not a training step
    raw = _raw_steps(_lines(path))
    assert raw[0][1] == 0 and raw[1][1] == 10
    assert run.steps["step"].min() == 11 and run.steps["step"].max() == raw[-1][1]
    assert len(run.tables["overflow"]) == text.count("Overflow detected. Skipping step") == 20
    tp = re.findall(r"Model Parameters: .*?TFLOPs: ([0-9.]+)", text)
    assert len(run.tables["dschat_throughput"]) == len(tp) == 4708
    ds_chat = [c for c in _claims(run, "tflops_per_accelerator") if "DeepSpeed-Chat" in c["counts"]][0]
    assert ds_chat["value"] == pytest.approx(statistics.median(float(v) for v in tp))
    # the ProcessGroupNCCL warnings of every rank are noise, not damage: a strict load passes
    assert text.count("ProcessGroupNCCL") >= 8
    strict = deepspeed.load(path, strict=True)
    assert len(strict.steps) == len(run.steps) and not run.meta.report.skipped


def test_reward_model_steps(realdata):  # noqa: F811
    path = realdata / "deepspeed" / REWARD
    lines = _lines(path)
    raw = _raw_steps(lines)
    run = _load(path)
    assert run.meta.source_format == "deepspeed"
    assert run.steps["step"].tolist() == list(range(raw[0][1] + 1, raw[-1][1] + 1))
    timer = [RUNNING_RE.search(t) for t in lines if "RunningAvgSamplesPerSec=" in t]
    running = [c for c in _claims(run, "samples_per_s") if c["statistic"] == "last"][0]
    assert running["value"] == float(timer[-1].group(1))
    assert _fact(run, "model") == "facebook/opt-350m"
    assert _fact(run, "micro_batch") == int(re.search(r"--per_device_train_batch_size (\d+)", lines[0]).group(1))
    assert len(run.tables["overflow"]) == sum("Overflow detected" in t for t in lines) == 20


def test_rlhf_steps_are_the_e2e_latency_with_phases_as_columns(realdata):  # noqa: F811
    path = realdata / "deepspeed" / RLHF
    lines = _lines(path)
    e2e = [(i + 1, t) for i, t in enumerate(lines) if "|E2E latency=" in t]
    ppo = [(i + 1, t) for i, t in enumerate(lines) if re.match(r"epoch: \d+\|step: \d+\|", t)]
    assert len(e2e) == 476 and len(ppo) == 477
    run = _load(path)
    assert run.meta.source_format == "deepspeed" and run.meta.timing == "duration_only"
    steps = run.steps
    assert len(steps) == len(e2e)
    # the first breakdown, as printed: |E2E latency=7.99s |Gather latency=0.00s (0.00%) |Generate
    # time=5.26s (65.81%) |Training time=2.52s (31.46%) |Others=0.22 (2.73%)
    assert ("|E2E latency=7.99s |Gather latency=0.00s (0.00%) |Generate time=5.26s (65.81%) "
            "|Training time=2.52s (31.46%) |Others=0.22" in e2e[0][1])
    row = steps.iloc[0]
    assert row["end_s"] - row["start_s"] == pytest.approx(7.99)
    assert (row["gather_s"], row["generate_s"], row["training_s"], row["others_s"]) == (0.0, 5.26, 2.52, 0.22)
    raw_e2e = [float(re.search(r"E2E latency=([0-9.]+)s", t).group(1)) for _, t in e2e]
    assert steps["end_s"].iloc[-1] == pytest.approx(math.fsum(raw_e2e))
    assert steps["step"].tolist() == [int(re.match(r"epoch: \d+\|step: (\d+)", t).group(1)) for _, t in ppo[:-1]]
    # generation dominates: the training phase is not the step
    assert (steps["generate_s"] > steps["training_s"]).mean() > 0.9
    cur = [float(re.search(r"CurSamplesPerSec=([0-9.]+)", t).group(1)) for _, t in e2e]
    claim = _claims(run, "samples_per_s")[0]
    assert ("DeepSpeed-Chat CurSamplesPerSec" in claim["counts"]
            and claim["value"] == pytest.approx(statistics.median(cur)))
    avg = [c for c in _claims(run, "samples_per_s") if "AvgSamplesPerSec" in c["counts"]][0]
    assert avg["value"] == float(re.search(r"AvgSamplesPerSec=([0-9.]+)", e2e[-1][1]).group(1)) == 16.79
    # actor and critic print the same step numbers one after the other: engines 0 and 1
    eng = run.tables["engine"]
    raw = _raw_steps(lines)
    assert len(eng) == len(raw) == 94 and eng["engine"].value_counts().to_dict() == {0: 47, 1: 47}
    first_actor = eng[(eng["engine"] == 0) & (eng["step"] == 10)].iloc[0]
    assert first_actor["learning_rate"] == float(STEP_RE.search(lines[raw[0][0] - 1]).group(3)) == 5.79e-07
    # two OVERFLOW lines (actor and critic) before the first PPO step line
    before = [i for i, t in enumerate(lines) if "OVERFLOW!" in t and i + 1 < ppo[0][0]]
    assert steps["overflow_lines"].iloc[0] == len(before) == 2
    assert len(run.tables["overflow"]) == sum("OVERFLOW!" in t for t in lines) == 14
    # the last PPO step line has no E2E line after it: said so, not a row
    assert any("step 476" in n and str(ppo[-1][0]) in n for n in run.meta.report.notes)
    args = lines[0]
    seq = (int(re.search(r"--max_prompt_seq_len (\d+)", args).group(1))
           + int(re.search(r"--max_answer_seq_len (\d+)", args).group(1)))
    assert _fact(run, "seq_len") == seq == 512
    assert _fact(run, "parallelism") == "actor ZeRO stage 2, critic ZeRO stage 2"


def test_flops_profiler_excerpt_gives_what_it_has(realdata):  # noqa: F811
    path = realdata / "deepspeed" / PROFILER
    text = path.read_text()
    run = _load(path)
    assert run.meta.source_format == "deepspeed" and len(run.steps) == 0
    assert _fact(run, "n_ranks") == int(re.search(r"world size:\s+(\d+)", text).group(1)) == 128
    assert _fact(run, "micro_batch") == int(re.search(r"batch size per GPU:\s+(\d+)", text).group(1)) == 8
    dp = re.search(r"data parallel size:\s+(\d+)", text).group(1)
    mp = re.search(r"model parallel size:\s+(\d+)", text).group(1)
    assert (_fact(run, "parallelism") == f"data parallel {dp}, model parallel {mp}"
            == "data parallel 16, model parallel 8")
    # cut short before the FLOPS lines: no throughput claim is invented
    assert "FLOPS per GPU" not in text and run.meta.claim("tflops_per_accelerator") is None
    assert run.meta.extra["flops_profiler"]["params_per_gpu"] == pytest.approx(2318.53e6)
    assert _fact(run, "global_batch") is None  # gradient accumulation is not in the excerpt


def test_every_deepspeed_file_round_trips_through_run_parquet(realdata, tmp_path):  # noqa: F811
    for path in files(realdata / "deepspeed", "deepspeedai_*"):
        run = _load(path)
        back = read_run(save_run(run, tmp_path / (path.stem + ".parquet")))
        assert len(back.steps) == len(run.steps) and set(back.tables) == set(run.tables), path.name


# --- Megatron-DeepSpeed files: left to the megatron format ---------------------------------------


@pytest.mark.parametrize("name", [MOE, NO_MOE, ALCF])
def test_megatron_deepspeed_logs_are_not_claimed(realdata, name):  # noqa: F811
    path = realdata / "deepspeed" / name
    assert re.search(r"iteration\s+\d+\s*/\s*\d+\s*\|", path.read_text())
    assert deepspeed.sniff(path, path.read_bytes()[:8192]) <= 0.4
    try:
        assert detect_format(path) != "deepspeed"
    except LoadError:
        pass
    run = _load(path, format="deepspeed")  # its DeepSpeed lines, and a pointer to the megatron format
    assert any("format='megatron'" in n for n in run.meta.report.notes)
    assert len(run.tables["engine"]) == len(_raw_steps(_lines(path)))


def test_megatron_deepspeed_engine_lines_with_format_deepspeed(realdata):  # noqa: F811
    path = realdata / "deepspeed" / MOE
    text = path.read_text()
    raw = _raw_steps(_lines(path))
    run = _load(path, format="deepspeed")
    assert raw[0][1] == 0 and run.steps["step"].tolist() == list(range(raw[1][1] + 1, raw[-1][1] + 1))
    assert _fact(run, "n_ranks") == int(re.search(r"dist_world_size=(\d+)", text).group(1)) == 4
    assert _fact(run, "global_batch") == float(re.search(r"train_batch_size \.+ (\d+)", text).group(1)) == 256
    # the ALCF notes quote three launches; step numbers restart in each
    alcf = realdata / "deepspeed" / ALCF
    alcf_raw = [s for _, s, _, _ in _raw_steps(_lines(alcf))]
    assert alcf_raw == [1, 1, 2, 1, 2]
    run = _load(alcf, format="deepspeed")
    assert run.steps[["attempt", "step"]].values.tolist() == [[0, 2], [1, 2]]
    # Sunspot: step=1 at 09:09:53,312, step=2 at 09:10:13,619
    assert run.steps["end_s"].iloc[0] - run.steps["start_s"].iloc[0] == pytest.approx(20.307)


def test_runtime_rows_read_a_megatron_deepspeed_log_in_any_table(realdata):  # noqa: F811
    """The launcher, config-dump, profiler and comms rows (io/deepspeed_runtime.py) need no deepspeed state: a table
    of them alone reads the Megatron-DeepSpeed log the megatron format reads, as its raw lines say."""
    path = realdata / "deepspeed" / MOE
    text, lines = path.read_text(), _lines(path)
    launches: list[int] = []
    state = SimpleNamespace(runtime=Runtime(Reader(path, "test"), on_launch=lambda at: launches.append(at.ln)))
    rt = state.runtime
    read(rt.reader, (Line(None, None, lambda st, at, m: st.runtime.block(at)), *RUNTIME_LINES), state)
    assert launches == [i + 1 for i, t in enumerate(lines) if "cmd = " in t or "WORLD INFO DICT" in t] == [2, 3]
    assert rt.launcher["dist_world_size"][0] == int(re.search(r"dist_world_size=(\d+)", text).group(1)) == 4
    hosts = json.loads(base64.b64decode(re.search(r"--world_info=(\S+)", text).group(1)))
    assert rt.launcher["hosts"][:2] == ({h: len(d) for h, d in hosts.items()}, 2) == ({"localhost": 4}, 2)
    assert rt.config["train_batch_size"][0] == re.search(r"train_batch_size \.+ (\d+)", text).group(1) == "256"
    assert rt.config_count("train_batch_size")[0] == 256 and rt.arg_count("micro_batch_size") is None
    out = Parsed()
    assert world_facts(out, rt) == 4
    assert {f.name: f.value for f in out.facts} == {"n_ranks": 4, "n_accelerators": 4, "n_nodes": 1,
                                                    "accelerators_per_node": 4}
    assert all(f.where.startswith(f"{path}:") for f in out.facts) and not rt.reader.report.skipped


def test_a_lost_engine_line_stays_one_row(realdata):  # noqa: F811
    path = realdata / "deepspeed" / NO_MOE
    raw = [s for _, s, _, _ in _raw_steps(_lines(path))]
    assert 130 in raw and 140 not in raw and 150 in raw  # the step=140 line is not in the file
    run = _load(path, format="deepspeed")
    row = run.steps[run.steps["step"] == 150].iloc[0]
    assert row["interval_steps"] == 20 and not (run.steps["step"].between(131, 149)).any()
    assert len(run.steps) == raw[-1] - raw[1] - 19  # every step after step=10, less the 19 lumped into 150
    assert any("1 intervals between printed steps are longer than the log interval (10)" in n
               for n in run.meta.report.notes)


def test_line_ends_and_bom_do_not_change_the_run(realdata, tmp_path):  # noqa: F811
    data = (realdata / "deepspeed" / SFT).read_bytes()
    base_run = _load(realdata / "deepspeed" / SFT)
    for name, variant in (("crlf", data.replace(b"\n", b"\r\n")), ("cr", data.replace(b"\n", b"\r")),
                          ("bom", b"\xef\xbb\xbf" + data)):
        p = tmp_path / f"{name}.log"
        p.write_bytes(variant)
        run = _load(p)
        assert run.meta.source_format == "deepspeed", name
        assert run.steps[["step", "start_s", "end_s"]].equals(base_run.steps[["step", "start_s", "end_s"]]), name
        def key(claims):
            return [(c["metric"], c["value"], c["n"], c["where"].rsplit(":", 1)[1]) for c in claims]

        assert key(run.meta.claims) == key(base_run.meta.claims) and not run.meta.report.skipped, name


def test_negative_comm_latency_is_rejected_on_the_real_table(realdata):  # noqa: F811
    path = realdata / COOLDOWN
    lines = _lines(path)
    header = next(i for i, t in enumerate(lines) if "Comm. Op" in t and "Total Latency(ms)" in t)
    rows, negative = 0, []
    for i in range(header + 1, len(lines)):
        tokens = lines[i].split()
        if len(tokens) == 1:
            continue  # an operation name
        if len(tokens) not in (6, 7) or not re.fullmatch(r"[0-9.]+B?", tokens[0]):
            break
        rows += 1
        if float(tokens[-4]) < 0:
            negative.append(i + 1)
    assert rows == 19 and len(negative) == 4
    run = _load(path, format="deepspeed")
    comms = run.tables["comms"]
    assert len(comms) == rows and comms["total_latency_ms"].isna().sum() == len(negative)
    reason = "negative duration"
    assert run.meta.report.skipped[reason] == 4 and run.meta.report.first_lines[reason] == negative
    assert run.meta.report.examples[reason].startswith("counter overflow: ")
    assert comms.loc[comms["line"] == negative[0], "avg_latency_ms"].item() == 246.25  # the row stays
    with pytest.raises(LoadError) as info:
        deepspeed.load(path, strict=True)
    assert info.value.line == negative[0] and info.value.field == "Total Latency(ms)" and str(path) in str(info.value)
    # its timer counts steps from the resumed launch (global_step=5) beside step=136005: one record each
    assert len(run.tables["engine"]) == sum("step=" in t and "skipped=" in t for t in lines)


def test_no_other_format_file_is_taken_for_deepspeed(realdata):  # noqa: F811
    others = [p for p in sorted(realdata.rglob("*"))
              if p.is_file() and "deepspeed" not in p.relative_to(realdata).parts[:1]]
    assert len(others) > 50
    for path in others:
        try:
            run = _load(path)
        except (LoadError, SchemaError):
            continue
        assert run.meta.source_format != "deepspeed", path


# --- hand-made logs ----------------------------------------------------------------------------

T = "[2024-01-01 00:00:{:06.3f}] [INFO] "
ENGINE = """\
[2024-01-01 00:00:00,000] [INFO] [launch.py:164:main] dist_world_size=2
[2024-01-01 00:00:01,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=0, skipped=0, lr=[0.0], mom=[(0.9, 0.95)]
[2024-01-01 00:00:10,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=2, skipped=0, lr=[0.1], mom=[(0.9, 0.95)]
[2024-01-01 00:00:10,010] [INFO] [timer.py:199:stop] epoch=0/micro_step=2/global_step=2, RunningAvgSamplesPerSec=10.0, \
CurrSamplesPerSec=10.0, MemAllocated=1.5GB, MaxMemAllocated=2.5GB
[2024-01-01 00:00:11,000] [INFO] [loss_scaler.py:181:update_scale] [deepspeed] OVERFLOW! Rank 0 Skipping step. \
Attempted loss scale: 65536, reducing to 32768
[2024-01-01 00:00:14,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=4, skipped=1, lr=[0.2], mom=[(0.9, 0.95)]
[2024-01-01 00:00:14,010] [INFO] [timer.py:199:stop] epoch=0/micro_step=4/global_step=4, RunningAvgSamplesPerSec=9.0, \
CurrSamplesPerSec=8.0, MemAllocated=1.5GB, MaxMemAllocated=2.5GB
***** Evaluating perplexity, Epoch 1/1 *****
[2024-01-01 00:00:20,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=6, skipped=1, lr=[0.3], mom=[(0.9, 0.95)]
[2024-01-01 00:00:20,010] [INFO] [timer.py:199:stop] epoch=0/micro_step=6/global_step=6, RunningAvgSamplesPerSec=8.5, \
CurrSamplesPerSec=7.0, MemAllocated=1.5GB, MaxMemAllocated=2.5GB
"""


def _write(tmp_path: Path, text: str, name: str = "ds.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_engine_records_are_paired_and_spread_over_their_steps(tmp_path):
    run = _load(_write(tmp_path, ENGINE))
    assert run.meta.source_format == "deepspeed" and run.meta.timing == "interval_mean"
    s = run.steps
    # anchor step=2 at 10 s (t0 = the first line, 00:00:00); 3,4 share 10..14 s, 5,6 share 14..20 s
    assert s["step"].tolist() == [3, 4, 5, 6]
    assert (s["start_s"].tolist() == pytest.approx([10, 12, 14, 17])
            and s["end_s"].tolist() == pytest.approx([12, 14, 17, 20]))
    assert s["interval_steps"].tolist() == [2, 2, 2, 2] and s["logged"].tolist() == [False, True, False, True]
    logged = s[s["logged"]]
    assert logged["skipped_steps"].tolist() == [1.0, 0.0] and logged["overflow_lines"].tolist() == [1.0, 0.0]
    assert logged["samples_per_s"].tolist() == [8.0, 7.0] and logged["learning_rate"].tolist() == [0.2, 0.3]
    assert logged["mem_allocated_gb"].tolist() == [1.5, 1.5]
    assert s["includes_eval"].tolist() == [False, False, True, True]
    assert run.tables["overflow"]["step"].tolist() == [4]
    assert _fact(run, "n_ranks") == 2 and run.meta.extra["log_interval"] == 2
    curr, running = _claims(run, "samples_per_s")
    assert curr["value"] == 8.0 and curr["statistic"] == "median" and curr["n"] == 3  # median of 10, 8, 7
    assert running["value"] == 8.5 and running["statistic"] == "last"
    assert run.tables["engine"]["step"].tolist() == [0, 2, 4, 6]
    assert not run.meta.report.skipped


def test_a_timer_line_before_its_step_line_is_the_same_record(tmp_path):
    lines = ENGINE.splitlines()
    lines[5], lines[6] = lines[6], lines[5]  # step=4's timer line first, then its step line
    run = _load(_write(tmp_path, "\n".join(lines) + "\n"))
    eng = run.tables["engine"]
    assert eng["step"].tolist() == [0, 2, 4, 6] and eng["engine"].tolist() == [0, 0, 0, 0]
    assert eng.loc[2, "skipped"] == 1 and eng.loc[2, "samples_per_s"] == 8.0
    assert run.steps["step"].tolist() == [3, 4, 5, 6]


def test_options_and_meta_keywords(tmp_path):
    p = _write(tmp_path, ENGINE)
    run = _load(p, log_interval=10, accelerator="H100", dtype="bf16")
    assert run.meta.accelerator and run.meta.peak_flops_per_accelerator and run.meta.extra["log_interval"] == 10
    with pytest.raises(TypeError, match="log_interval"):
        load_run(p, format="deepspeed", log_interval=0)
    assert deepspeed.Options().log_interval is None


def test_bad_values_are_counted_with_line_and_field(tmp_path):
    text = ENGINE + (
        "[2024-01-01 00:00:30,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=abc, skipped=1, lr=[0.3]\n"  # line 11
        "[2024-01-01 00:00:31,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=8, skipped=x, lr=[zz]\n"  # line 12
        "[2024-01-01 00:00:31,010] [INFO] [timer.py:199:stop] epoch=0/micro_step=8/global_step=8, "
        "RunningAvgSamplesPerSec=nan, CurrSamplesPerSec=-3, MemAllocated=1GB, MaxMemAllocated=2GB\n"  # line 13
        "[2024-01-13 25:00:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=1, lr=[0.3]\n"  # line 14
    )
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, text))
    first = run.meta.report.first_lines
    assert first["step is not a non-negative integer"] == [11]
    assert first["non-numeric value (left missing, record kept)"] == [12, 12]  # skipped=x, lr=[zz]
    assert first["value out of range"] == [13, 13]  # nan, -3
    assert run.meta.report.examples["value out of range"].startswith("negative or not finite: ")
    assert first["unreadable timestamp"] == [14]  # hour 25
    assert first["engine step line without a timestamp (cannot be timed)"] == [14]
    assert run.steps["step"].max() == 8  # the record with damaged values keeps its step
    with pytest.raises(LoadError) as info:
        deepspeed.load(_write(tmp_path, text), strict=True)
    assert info.value.line == 11 and info.value.field == "step" and "ds.log" in str(info.value)


RLHF_TEXT = """\
cmd = deepspeed main.py --actor_model_name_or_path a/b --critic_model_name_or_path c/d \
--per_device_training_batch_size 4
epoch: 0|step: 0|ppo_ep: 1|act_loss: 0.5|cri_loss: -0.25|unsuper_loss: 0.0
average reward score: -1.5
-------------------------------------------------------------------------------------
|E2E latency=4.00s |Gather latency=0.50s (12.50%) |Generate time=2.50s (62.50%) |Training time=0.75s (18.75%) \
|Others=0.25 (6.25%)|CurSamplesPerSec=16.00 |AvgSamplesPerSec=16.00
epoch: 0|step: 1|ppo_ep: 1|act_loss: nan|cri_loss: 0.1|unsuper_loss: 0.0
|E2E latency=-2.00s |Gather latency=0.00s (0.00%) |Generate time=1.00s (50.00%) |Training time=1.00s (50.00%) \
|Others=0.00 (0.00%)|CurSamplesPerSec=32.00 |AvgSamplesPerSec=21.33
|E2E latency=3.00s |Gather latency=0.00s (0.00%) |Generate time=2.00s (66.67%) |Training time=1.00s (33.33%) \
|Others=0.00 (0.00%)|CurSamplesPerSec=21.33 |AvgSamplesPerSec=18.00
epoch: 0|step: 2|ppo_ep: 1|act_loss: 0.1|cri_loss: 0.1|unsuper_loss: 0.0
|E2E latency=2.00s |Gather latency=0.00s (0.00%) |Generate time=1.50s (75.00%) |Training time=0.50s (25.00%) \
|Others=0.00 (0.00%)|CurSamplesPerSec=32.00 |AvgSamplesPerSec=21.33
"""


def test_rlhf_breakdown_by_hand(tmp_path):
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, RLHF_TEXT))
    s = run.steps
    # step 1's E2E latency is negative (counted, no row); the next E2E line has no step line before it
    assert s["step"].tolist() == [0, 2]
    assert s["start_s"].tolist() == [0.0, 4.0] and s["end_s"].tolist() == [4.0, 6.0]
    assert s["gather_s"].tolist() == [0.5, 0.0] and s["reward"].iloc[0] == -1.5 and s["cri_loss"].iloc[0] == -0.25
    first = run.meta.report.first_lines
    assert first["negative duration"] == [7]
    assert first["E2E latency line without a DeepSpeed-Chat step line before it"] == [8]
    assert _fact(run, "model") == "actor a/b, critic c/d" and _fact(run, "micro_batch") == 4
    assert _fact(run, "framework") == "DeepSpeed-Chat"


COMMS = """\
[2024-01-01 00:00:00,000] [INFO] [launch.py:164:main] dist_world_size=8
Comm. Op            Message Size        Count               Total Latency(ms)   Avg Latency(ms)     tput_avg (Gbps)\
     busbw_avg (Gbps)
all_reduce
                    4.0 B               10                  5.00                0.50                0.00\
                0.00
                    2.0 MB              4                   -8.00               2.00                8.39\
                14.68
barrier
                    0B                  2                   1.50                0.75                0.00\
                -1.00
after the table
"""


def test_comms_table_rejects_negative_latency_and_bandwidth(tmp_path):
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, COMMS))
    comms = run.tables["comms"]
    assert comms["op"].tolist() == ["all_reduce", "all_reduce", "barrier"]
    assert comms["message_bytes"].tolist() == [4.0, 2.0 * 1024**2, 0.0]  # DeepSpeed's sizes are 1024-based
    assert comms["count"].tolist() == [10, 4, 2]
    assert comms["total_latency_ms"].iloc[0] == 5.0 and math.isnan(comms["total_latency_ms"].iloc[1])
    assert math.isnan(comms["busbw_avg_gbps"].iloc[2])
    first = run.meta.report.first_lines
    assert first["negative duration"] == [5]
    assert first["value out of range"] == [7]
    assert run.meta.report.examples["value out of range"].startswith("counter overflow: ")
    with pytest.raises(LoadError) as info:
        deepspeed.load(_write(tmp_path, COMMS), strict=True)
    assert (info.value.line, info.value.field) == (5, "Total Latency(ms)")


PROFILER_TEXT = """\
-------------------------- DeepSpeed Flops Profiler --------------------------
Profile Summary at step 10:
world size:                                                   4
data parallel size:                                           4
model parallel size:                                          1
batch size per GPU:                                           80
params per gpu:                                               336.23 M
fwd flops per GPU:                                            6279.86 G
fwd latency:                                                  76.67 ms
bwd latency:                                                  108.02 ms
fwd FLOPS per GPU = fwd flops per GPU / fwd latency:          81.9 TFLOPS
fwd+bwd FLOPS per GPU = 3 * fwd flops per GPU / (fwd+bwd latency):   102.0 TFLOPS
[2024-01-01 00:00:10,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=10, skipped=0, lr=[0.1]
[2024-01-01 00:00:20,000] [INFO] [logging.py:96:log_dist] [Rank 0] step=20, skipped=0, lr=[0.1]
iter latency:                                                 184.73 ms
----------------------------- Aggregated Profile per GPU -----------------------------
"""


def test_full_profiler_summary_and_the_lines_printed_inside_it(tmp_path):
    run = _load(_write(tmp_path, PROFILER_TEXT))
    claim = run.meta.claim("tflops_per_accelerator")
    assert claim["value"] == 102.0 and "Flops Profiler" in claim["counts"]
    prof = run.meta.extra["flops_profiler"]
    assert prof["fwd_latency_s"] == pytest.approx(0.07667) and prof["fwd_flops_per_gpu"] == pytest.approx(6279.86e9)
    assert prof["iter_latency_s"] == pytest.approx(0.18473)
    assert _fact(run, "n_ranks") == 4 and _fact(run, "micro_batch") == 80
    # engine lines printed while the summary is open are still records (regression: they were swallowed)
    assert run.tables["engine"]["step"].tolist() == [10, 20] and len(run.steps) == 10
    # the framework fact points at the first DeepSpeed line, never at line 0 (regression)
    assert run.meta.fact("framework")["where"].endswith(":3")


def test_launcher_world_info_damage_is_counted(tmp_path):
    good = base64.b64encode(json.dumps({"node-a": [0, 1], "node-b": [0, 1]}).encode()).decode()
    text = (f"cmd = python -m deepspeed.launcher.launch --world_info={good} train.py\n"
            "cmd = python -m deepspeed.launcher.launch --world_info=%%%notbase64 train.py\n"
            "cmd = python -m deepspeed.launcher.launch --world_info=A train.py\n"
            f"cmd = python -m deepspeed.launcher.launch --world_info={base64.b64encode(b'[1, 2]').decode()} train.py\n"
            "[2024-01-01 00:00:00,000] [INFO] [launch.py:164:main] dist_world_size=0\n")
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, text), format="deepspeed")
    assert _fact(run, "n_accelerators") == 4 and _fact(run, "n_nodes") == 2 and _fact(run, "accelerators_per_node") == 2
    first = run.meta.report.first_lines
    assert first["--world_info is not base64"] == [2, 3]  # '%%%...' and a one-character token
    assert first["record is not a JSON object"] == [4]
    assert run.meta.report.examples["record is not a JSON object"].startswith("--world_info is not {host: [devices]}: ")
    assert first["value out of range"] == [5] and _fact(run, "n_ranks") is None


def test_step_gaps_restarts_and_duplicates(tmp_path):
    def step(t, n):
        return T.format(t).replace(".", ",") + f"[logging.py:96:log_dist] [Rank 0] step={n}, skipped=0, lr=[0.1]\n"

    text = step(0, 10) + step(10, 20) + step(20, 30) + step(20, 30) + step(30, 50) + step(35, 200_060)
    text += "[2024-01-01 00:00:36,000] [INFO] [runner.py:607:main] cmd = python -m deepspeed.launcher.launch x.py\n"
    text += step(40, 5) + step(41, 6)
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, text))
    s = run.steps
    a0 = s[s["attempt"] == 0]
    # gaps 10, 10, 20, 200010 and (after the relaunch) 1: the log interval is 10. 10->30 is spread
    # (20 rows); 30->50 is longer than the interval (lines lost): one row of 20 steps; 50->200060 is
    # longer than MAX_LOG_INTERVAL: one row, counted; the relaunch is attempt 1
    assert run.meta.extra["log_interval"] == 10
    assert a0["step"].tolist() == [*range(11, 31), 50, 200_060]
    assert a0["interval_steps"].tolist()[-2:] == [20, 200_010]
    assert a0["end_s"].iloc[-2] - a0["start_s"].iloc[-2] == 10.0  # 00:00:20 -> 00:00:30 for the whole row
    assert s[s["attempt"] == 1]["step"].tolist() == [6]
    first = run.meta.report.first_lines
    assert first["duplicate record (kept the first)"] == [4]
    assert first["step gap too long to be one log interval (record kept as one step)"] == [6]
    assert any("longer than the log interval" in n for n in run.meta.report.notes)


def test_not_deepspeed(tmp_path):
    with pytest.raises(LoadError, match="format='megatron'"):
        deepspeed.load(_write(tmp_path, " iteration      10/ 100 | elapsed time per iteration (ms): 5.0 |\n"))
    with pytest.raises(LoadError, match="no DeepSpeed records"):
        deepspeed.load(_write(tmp_path, "hello\nworld\n"))
    with pytest.raises(LoadError, match="directory"):
        deepspeed.load(tmp_path)
    assert deepspeed.sniff(tmp_path, b"") == 0.0
    assert deepspeed.sniff(_write(tmp_path, ENGINE, "a.log"), ENGINE.encode()) == 0.95
    launcher = "[2024-01-01 00:00:00,000] [INFO] [launch.py:164:main] dist_world_size=2\n"
    assert deepspeed.sniff(_write(tmp_path, launcher, "b.log"), launcher.encode()) == 0.6
    mixed = ENGINE + " iteration      10/ 100 | elapsed time per iteration (ms): 5.0 |\n"
    assert deepspeed.sniff(_write(tmp_path, mixed, "c.log"), mixed.encode()) == 0.3


# --- bounded work ------------------------------------------------------------------------------

LONG = ["[", "0", " ", "|", "=", ".", "'"]
FRAGMENTS = ["[Rank 0] step=", "step=0, skipped=", "epoch: ", "epoch: 0|step: ", "|E2E latency=", "0/",
             "RunningAvgSamplesPerSec=", "--world_info=", "'h': [", "[config.py:1:print]  ", "iteration  1/ ",
             "OVERFLOW! Rank 0 Skipping step. Attempted loss scale: ", "Model Parameters: ", "4.0 KB "]


def _long_line(unit: str, zeros: bool, n: int) -> str:
    """``unit`` repeated to about ``n`` characters, or ``unit`` then ``n`` zeros."""
    return unit + "0" * n if zeros else unit * (n // len(unit))


@pytest.mark.parametrize("unit, zeros", [(c, False) for c in LONG] + [(f, False) for f in FRAGMENTS]
                         + [(f, True) for f in FRAGMENTS],
                         ids=lambda v: ("then zeros" if v else "repeated") if isinstance(v, bool) else repr(v[:12]))
def test_long_lines_take_linear_time(tmp_path, unit, zeros):
    runs = {}

    def load(n: int):
        line = _long_line(unit, zeros, n)
        # each line also sits inside a comms table and a profiler block, where other rules read it
        p = _write(tmp_path, "Comm. Op  Message Size  Count  Total Latency(ms)\n" + line
                   + "\nDeepSpeed Flops Profiler\n" + line + "\n" + ENGINE,
                   f"ds{n}.log")

        def work():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runs[n] = deepspeed.load(p)
            deepspeed.sniff(p, p.read_bytes())  # the whole file as the head: the sniff's cost grows with n too
        return work

    ratio = growth(load, 80_000)  # lines of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


def _mutate(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    kind = rng.randrange(11)
    if kind == 0:
        return data[: rng.randrange(len(data))]
    if kind == 1:
        buf = bytearray(data)
        for _ in range(rng.randint(1, 50)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
        return bytes(buf)
    if kind == 2:
        i = rng.randrange(len(lines))
        lines.insert(rng.randrange(len(lines)), lines[i])
    elif kind == 3:
        for _ in range(rng.randint(1, 20)):
            i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
    elif kind == 4:
        words = [b"nan", b"inf", b"-inf", b"1e999", b"-7", b"9" * 40, b"1e308"]
        return re.sub(rb"\d+\.\d+|\d+", lambda m: rng.choice(words) if rng.random() < 0.05 else m.group(0), data)
    elif kind == 5:
        return data.replace(b"\n", rng.choice([b"\r\n", b"\r"]))
    elif kind == 6:
        return b"\xef\xbb\xbf" + data
    elif kind == 7:
        i = rng.randrange(len(data))
        return data[:i] + rng.choice([b"\x00" * 5, b"\xff\xfe\xc3", b"\x80\x81"]) + data[i:]
    elif kind == 8:
        lines.insert(rng.randrange(len(lines)), bytes([rng.choice(b"[0 |=.")]) * 200_000)
    elif kind == 9:
        del lines[rng.randrange(len(lines))]
    else:
        i = rng.randrange(len(lines))
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    return b"\n".join(lines)


@pytest.mark.parametrize("name", [SFT, RLHF])
def test_damaged_real_logs_never_raise_internal_errors(realdata, tmp_path, name):  # noqa: F811
    data = (realdata / "deepspeed" / name).read_bytes()[:120_000]
    rng = random.Random(20240418)
    for k in range(30):
        mutated = data
        for _ in range(rng.randint(1, 3)):
            mutated = _mutate(mutated, rng) or b"x"
        p = tmp_path / f"m{k}.log"
        p.write_bytes(mutated)
        for kw in ({}, {"format": "deepspeed"}, {"format": "deepspeed", "strict": True}):
            try:
                out = _load(p, **kw)
            except InternalLoadError as exc:
                pytest.fail(f"mutation {k} ({kw}): {exc}")
            except (LoadError, SchemaError):
                continue
            assert isinstance(out, Run)


def _bar(done: int, total: int, per_it_s: float) -> str:
    """tqdm's bar as HF Trainer draws it: redrawn after a carriage return, never ended by a newline."""
    return (f"{100 * done // total:3d}%|{'█' * (done * 100 // total)}{' ' * (100 - done * 100 // total)}| "
            f"{done}/{total} [00:00<00:00, {per_it_s:.2f}s/it]")


def test_a_record_glued_after_a_progress_bar_keeps_its_time(tmp_path):
    # HF Trainer with DeepSpeed: tqdm redraws its bar with '\r' and no newline, so the logger's next record
    # follows the last bar on the same line, its stamp past the first 96 characters. 10 steps per record,
    # 15.0 s apart: 1.5 s a step, as the bar's own "1.50s/it" says.
    plain, barred = [], []
    for k in range(5):
        step = 10 * (k + 1)
        ts = f"2021-11-26 03:{7 + k // 4:02d}:{(k % 4) * 15:02d},000"
        record = (f"[{ts}] [INFO] [logging.py:69:log_dist] [Rank 0] step={step}, skipped=0, lr=[0.001, 0.001], "
                  "mom=[0.0, 0.0]")
        plain.append(record)
        barred.append("\r".join(_bar(d, 1000, 1.5) for d in range(step - 10, step)) + record)
    (tmp_path / "plain.log").write_text("\n".join(plain) + "\n")
    (tmp_path / "barred.log").write_text("\n".join(barred) + "\n")
    a, b = (load_run(tmp_path / n, format="deepspeed") for n in ("plain.log", "barred.log"))
    assert len(b.steps) == 40 and (b.steps["end_s"] - b.steps["start_s"]).round(9).unique().tolist() == [1.5]
    cols = ["attempt", "step", "start_s", "end_s", "interval_steps", "logged"]
    assert a.steps[cols].equals(b.steps[cols])
    # a date inside a message is no stamp: only the one that opens a record ([time] [LEVEL]) is
    quoted = tmp_path / "quoted.log"
    quoted.write_text(plain[0] + "\n" + "x" * 100 + " resumed from [2021-11-26 03:08:00,000]: [Rank 0] step=20, "
                      "skipped=0, lr=[0.001, 0.001]\n" + plain[2] + "\n")
    run = load_run(quoted, format="deepspeed", strict=False)
    assert deepspeed.UNTIMED_STEP in run.meta.report.skipped
