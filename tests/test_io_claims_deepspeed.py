"""DeepSpeed's throughput timer as claims: what each spelling counts, pinned to the raw bytes.

DeepSpeed's ``ThroughputTimer`` (deepspeed/utils/timer.py) prints three spellings; each counts other
samples over other time:

- ``epoch=E/micro_step=M/global_step=N, RunningAvgSamplesPerSec=, CurrSamplesPerSec=`` (0.8 and
  later): ``train_batch_size``, the global batch, over the timed micro-steps of one global step;
- ``E/N, RunningAvgSamplesPerSec=, CurrSamplesPerSec=`` (0.7): micro batch × data-parallel size over
  one micro-step;
- ``E/N, SamplesPerSec=`` (before 0.7): the running average alone, counted as in 0.7.

Both the ``deepspeed`` and the ``megatron`` format read the timer; on one log they claim the same.
Real values are read from the files with regexes in the tests.
"""

from __future__ import annotations

import re
import statistics
import warnings
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401  (fixture)
from _samples import megatron_line
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import load_run
from mfu_toolkit.io.throughput_timer import timer_line

SFT = "deepspeedai_DeepSpeedExamples_dschat_step1_sft_opt-1.3b_gbs128.log"
DPO = "deepspeedai_DeepSpeedExamples_dschat_step2_dpo_opt-350M_gbs32.log"
REWARD = "deepspeedai_DeepSpeedExamples_dschat_step2_reward_opt-350m_gbs64.log"
MOE = "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"
NEW_RE = re.compile(r"epoch=\d+/micro_step=\d+/global_step=\d+, RunningAvgSamplesPerSec=([^,]+), "
                    r"CurrSamplesPerSec=([^,]+),")
OLD_RE = re.compile(r"\] \d+/\d+, RunningAvgSamplesPerSec=([^,]+), CurrSamplesPerSec=([^,]+),")


def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, **kw)


def _timer(run) -> tuple[dict, dict]:
    """The (CurrSamplesPerSec, running average) claims of the engine's timer."""
    mine = [c for c in run.meta.claims if c["metric"] == "samples_per_s" and "of the DeepSpeed engine" in c["counts"]]
    curr = [c for c in mine if c["counts"].startswith("CurrSamplesPerSec")]
    running = [c for c in mine if "running average" in c["counts"]]
    assert len(curr) == len(running) == 1, [c["counts"][:40] for c in mine]
    return curr[0], running[0]


def _raw_timer(path: Path, rx: re.Pattern) -> tuple[list[float], list[float], int]:
    """(running, current) values as printed, and the line of the first timer line."""
    text = path.read_text()
    found = list(rx.finditer(text))
    first = text.count("\n", 0, found[0].start()) + 1
    return [float(m.group(1)) for m in found], [float(m.group(2)) for m in found], first


# --- real logs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", [SFT, DPO, REWARD])
def test_real_global_step_timer_claims_global_batch_rates(realdata, name):  # noqa: F811
    path = realdata / "deepspeed" / name
    running, curr, first = _raw_timer(path, NEW_RE)
    run = _load(path)
    c, r = _timer(run)
    assert (c["value"], c["n"], c["statistic"]) == (pytest.approx(statistics.median(curr)), len(curr), "median")
    assert (r["value"], r["n"], r["statistic"]) == (running[-1], len(running), "last")
    assert c["where"] == r["where"] == f"{path}:{first}"
    for claim in (c, r):
        assert claim["basis"] == "steady" and claim["unit"] == "samples/s"
        assert "train_batch_size (the global batch, all data-parallel ranks)" in claim["counts"]
        assert "DeepSpeed >= 0.8" in claim["counts"] and "deepspeed/utils/timer.py" in claim["counts"]
        assert "Megatron-DeepSpeed" not in claim["counts"]  # a plain DeepSpeed engine log


def test_real_values_are_the_published_ones(realdata):  # noqa: F811
    """The data README: SFT RunningAvgSamplesPerSec about 172; Megatron-DeepSpeed MoE 28.4 against 32.1."""
    running, _, first = _raw_timer(realdata / "deepspeed" / SFT, NEW_RE)
    assert 171 < running[-1] < 173 and first == 13
    running, curr, first = _raw_timer(realdata / "deepspeed" / MOE, OLD_RE)
    assert (round(curr[0], 1), round(running[0], 1), first) == (28.4, 28.4, 640)


def test_real_megatron_deepspeed_rates_disagree_and_each_says_why(realdata):  # noqa: F811
    """HaibaraAiChan MoE (DeepSpeed 0.7.3): DeepSpeed's 28.4 samples/s and Megatron's 32.1 for the same
    first interval are both kept, each saying what it counts; a hand computation from the same interval's
    timers shows where the difference comes from."""
    path = realdata / "deepspeed" / MOE
    text = path.read_text()
    running, curr, first = _raw_timer(path, OLD_RE)
    assert re.search(r"DeepSpeed info: version=0\.7\.3", text)  # the 0.7 spelling, as its version says
    micro = int(re.search(r"--micro-batch-size (\d+)", text).group(1))
    dp = int(re.search(r"data-parallel-size: (\d+)", text).group(1))
    gbs = int(re.search(r"--global-batch-size (\d+)", text).group(1))
    it = re.search(r"elapsed time per iteration \(ms\): ([0-9.]+) .*? samples per second: ([0-9.]+) \|", text)
    ms, megatron_sps = float(it.group(1)), float(it.group(2))
    timers = dict(re.findall(r"([a-z-]+): ([0-9.]+)", re.search(r"time \(ms\) \| forward-compute.*", text).group(0)))
    # Megatron: the global batch over the mean iteration time (256 / 7.9634 s = 32.147)
    assert megatron_sps == pytest.approx(gbs / (ms / 1000), rel=1e-4) and round(megatron_sps, 1) == 32.1
    # DeepSpeed 0.7: micro batch × data-parallel size (4 × 4 = 16 samples) over the span from the last
    # micro-batch's forward to the end of step(): (forward + backward) / 16 micro-batches + optimizer
    n_micro = gbs // (micro * dp)
    span_s = ((float(timers["forward-compute"]) + float(timers["backward-compute"])) / n_micro
              + float(timers["optimizer"])) / 1000
    assert micro * dp / curr[0] == pytest.approx(span_s, rel=0.02)
    for fmt in ("megatron", "deepspeed"):
        run = _load(path, format=fmt)
        c, r = _timer(run)
        assert (c["value"], r["value"], c["where"]) == (pytest.approx(statistics.median(curr)), running[-1],
                                                        f"{path}:{first}")
        for claim in (c, r):
            assert "train_micro_batch_size_per_gpu × data-parallel size" in claim["counts"]
            assert "DeepSpeed 0.7 ThroughputTimer" in claim["counts"]
            assert "from the batch's last forward() to the end of step()" in claim["counts"]
    run = _load(path)
    assert run.meta.source_format == "megatron"
    (mg,) = [c for c in run.meta.claims
             if c["metric"] == "samples_per_s" and "Megatron-DeepSpeed prints" in c["counts"]]
    assert mg["value"] == pytest.approx(
        statistics.median(float(v) for v in re.findall(r"samples per second: ([0-9.]+)", text)))
    assert "global batch" in mg["counts"] and "mean iteration time" in mg["counts"]


def test_real_megatron_deepspeed_timer_claims_match_across_formats(realdata):  # noqa: F811
    path = realdata / "deepspeed" / MOE
    by_fmt = [_timer(_load(path, format=fmt)) for fmt in ("megatron", "deepspeed")]
    key = [{k: c[k] for k in ("metric", "value", "unit", "counts", "where", "n", "statistic", "basis")}
           for pair in by_fmt for c in pair]
    assert key[:2] == key[2:]


# --- variants -----------------------------------------------------------------------------------
def _ts(s: int) -> str:
    return f"[2024-01-01 00:{s // 60:02d}:{s % 60:02d},000]"


def _timer_line(form: str, n: int, running: str, curr: str, s: int) -> str:
    if form == "global_step":
        body = (f"epoch=0/micro_step={2 * n}/global_step={n}, RunningAvgSamplesPerSec={running}, "
                f"CurrSamplesPerSec={curr}, ")
        return f"{_ts(s)} [INFO] [timer.py:199:stop] {body}MemAllocated=1.5GB, MaxMemAllocated=2.5GB"
    if form == "micro_step":
        body = (f"0/{n}, RunningAvgSamplesPerSec={running}, CurrSamplesPerSec={curr}, "
                "MemAllocated=1.5GB, MaxMemAllocated=2.5GB")
        return f"{_ts(s)} [INFO] [timer.py:207:stop] {body}"
    if form == "running_only_mem":  # DeepSpeed 0.6
        return (f"{_ts(s)} [INFO] [timer.py:181:stop] 0/{n}, SamplesPerSec={running}, "
                "MemAllocated=1.5GB, MaxMemAllocated=2.5GB")
    return f"{_ts(s)} [INFO] [timer.py:154:stop] 0/{n}, SamplesPerSec={running}"  # DeepSpeed 0.3 to 0.5


def _engine_log(form: str, rates: list[tuple[str, str]], prefix: str = "") -> str:
    lines = [f"{_ts(0)} [INFO] [launch.py:164:main] dist_world_size=2"]
    for i, (running, curr) in enumerate(rates, start=1):
        lines.append(f"{_ts(10 * i)} [INFO] [logging.py:96:log_dist] [Rank 0] step={10 * i}, skipped=0, "
                     "lr=[0.1], mom=[(0.9, 0.95)]")
        lines.append(_timer_line(form, 10 * i, running, curr, 10 * i))
    return "\n".join(prefix + ln for ln in lines) + "\n"


def _write(tmp_path: Path, text: str, name: str = "ds.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


RATES = [("10.0", "12.0"), ("11.0", "9.0"), ("10.5", "10.0")]


@pytest.mark.parametrize("form, version", [("global_step", "DeepSpeed >= 0.8"), ("micro_step", "DeepSpeed 0.7")])
@pytest.mark.parametrize("prefix", ["", "0: ", "[rank0]: ", "[rank0]:"])
def test_each_spelling_says_what_it_counts(tmp_path, form, version, prefix):
    p = _write(tmp_path, _engine_log(form, RATES, prefix))
    run = _load(p)
    assert run.meta.source_format == "deepspeed"
    c, r = _timer(run)
    assert (c["value"], c["n"], c["where"]) == (10.0, 3, f"{p}:3")  # median of 12, 9, 10
    assert (r["value"], r["n"], r["statistic"]) == (10.5, 3, "last")
    what = ("train_batch_size (the global batch" if form == "global_step"
            else "train_micro_batch_size_per_gpu × data-parallel")
    assert all(what in x["counts"] and version in x["counts"] for x in (c, r))
    assert not run.meta.report.skipped


@pytest.mark.parametrize("form", ["running_only", "running_only_mem"])
def test_the_pre_0_7_samples_per_sec_is_a_running_average(tmp_path, form):
    p = _write(tmp_path, _engine_log(form, RATES))
    run = _load(p)
    assert run.meta.source_format == "deepspeed"
    mine = [c for c in run.meta.claims if c["metric"] == "samples_per_s"]
    (r,) = mine  # no CurrSamplesPerSec before 0.7: nothing invented, nothing counted missing
    assert (r["value"], r["statistic"], r["n"], r["where"]) == (10.5, "last", 3, f"{p}:3")
    assert r["counts"].startswith("SamplesPerSec of the DeepSpeed engine, the running average")
    assert "DeepSpeed < 0.7" in r["counts"] and "micro-step" in r["counts"]
    assert not run.meta.report.skipped
    assert run.tables["engine"]["samples_per_s_running"].tolist() == [10.0, 11.0, 10.5]


def test_a_missing_current_rate_is_counted_and_the_running_one_kept(tmp_path):
    text = _engine_log("global_step", RATES).replace(", CurrSamplesPerSec=9.0", "")
    p = _write(tmp_path, text)
    run = _load(p)
    c, r = _timer(run)
    assert (c["value"], c["n"]) == (11.0, 2) and r["value"] == 10.5
    assert run.meta.report.skipped == {"required field missing": 1}
    assert run.meta.report.first_lines["required field missing"] == [5]


@pytest.mark.parametrize("bad", ["nan", "inf", "-inf", "-3.0"])
def test_a_rate_that_is_not_a_rate_is_counted_not_claimed(tmp_path, bad):
    p = _write(tmp_path, _engine_log("micro_step", [("10.0", "12.0"), (bad, bad), ("10.5", "10.0")]))
    run = _load(p)
    c, r = _timer(run)
    assert (c["value"], c["n"]) == (11.0, 2) and (r["value"], r["n"]) == (10.5, 2)
    (why,) = run.meta.report.skipped
    assert why.startswith("value out of range") and run.meta.report.skipped[why] == 2
    assert run.meta.report.first_lines[why] == [5, 5]


@pytest.mark.parametrize("value", ["1e300", "5e-300", "123456789.125"])
def test_absurd_magnitudes_are_kept_as_printed(tmp_path, value):
    p = _write(tmp_path, _engine_log("global_step", [(value, value)]))
    c, r = _timer(_load(p))
    assert c["value"] == r["value"] == float(value)


def test_two_releases_in_one_log_give_a_pair_of_claims_each(tmp_path):
    old = _engine_log("micro_step", RATES[:2])
    new = _engine_log("global_step", [("50.0", "60.0")]).replace("dist_world_size=2", "dist_world_size=2 ")
    p = _write(tmp_path, old + "cmd = deepspeed train.py\n" + new)
    run = _load(p)
    mine = [c for c in run.meta.claims if c["metric"] == "samples_per_s"]
    assert [(c["value"], c["statistic"]) for c in mine] == [(60.0, "value"), (50.0, "last"), (10.5, "median"),
                                                            (11.0, "last")]
    assert ["DeepSpeed >= 0.8" in c["counts"] for c in mine] == [True, True, False, False]


@pytest.mark.parametrize("form", ["global_step", "micro_step", "running_only"])
def test_both_formats_claim_the_same_for_a_megatron_deepspeed_log(tmp_path, form):
    lines = []
    for i, (running, curr) in enumerate(RATES, start=1):
        lines.append(_timer_line(form, 10 * i, running, curr, 10 * i))
        lines.append(megatron_line(10 * i, 1000.0, ts=f"2024-01-01 00:00:{10 * i:02d}"))
    p = _write(tmp_path, "\n".join(lines) + "\n")
    claims = {}
    for fmt in ("megatron", "deepspeed"):
        run = _load(p, format=fmt)
        claims[fmt] = [c for c in run.meta.claims
                       if c["metric"] == "samples_per_s" and "DeepSpeed engine" in c["counts"]]
        assert all("the batch's last forward() to the end of step()" in c["counts"] for c in claims[fmt])
    assert claims["megatron"] == claims["deepspeed"] and len(claims["megatron"]) == (1 if form == "running_only" else 2)


def test_gpt_neox_steps_its_engine_per_micro_batch(tmp_path):
    """GPT-NeoX (megatron/training.py train_step) calls step() after every micro-batch: its DeepSpeed
    timer times whole micro-steps, so the Megatron-DeepSpeed remark is not added, in either format."""
    neox = (" samples/sec: 98.765 | iteration {it:8d}/  320000 | elapsed time per iteration (ms): 1296.1 | "
            "approx flops per GPU: 152.3TFLOPS | lm_loss: 2.345678E+00 | number of skipped iterations:   0 |")
    lines = []
    for i, (running, curr) in enumerate(RATES, start=1):
        lines.append(_timer_line("global_step", 10 * i, running, curr, 10 * i))
        lines.append(neox.format(it=10 * i))
    p = _write(tmp_path, "\n".join(lines) + "\n")
    for fmt in ("megatron", "deepspeed"):
        c, r = _timer(_load(p, format=fmt))
        assert (c["value"], r["value"]) == (10.0, 10.5)
        assert not any("Megatron-DeepSpeed" in x["counts"] for x in (c, r)), fmt
    assert _load(p).meta.source_format == "megatron"


def test_megatron_deepspeed_timer_claims_are_partial_and_never_a_mismatch(realdata):  # noqa: F811
    # the DeepSpeed timer under Megatron-DeepSpeed spans the last micro-batch's forward to step():
    # 28.37 samples/s against Megatron's 32.1 for the same steps is not a mismatch (see the claim's counts)
    from mfu_toolkit.analysis import build_answer

    path = realdata / "deepspeed" / "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = load_run(path)
    partial = [c for c in run.meta.claims if c["basis"] == "partial"]
    assert partial and all("CurrSamplesPerSec" in c["counts"] or "Running" in c["counts"] for c in partial)
    checks = [c for c in build_answer(run).checks if c.name == "claim samples_per_s"]
    assert not [c for c in checks if c.status == "warn"]
    assert any(c.status == "info" and "part of each step" in c.message for c in checks)


# --- the shared reader (mfu_toolkit.io.throughput_timer.timer_line), as both formats call it ----------------------
@pytest.mark.parametrize("form", ["global_step", "micro_step", "running_only", "running_only_mem"])
def test_timer_line_reads_each_spelling(form):
    line = _timer_line(form, 30, "10.5", "12.0", 30)
    timed = timer_line(line)
    assert (timed.form, timed.step, timed.epoch) == (form.removesuffix("_mem"), "30", 0)
    assert timed.micro_step == (60 if form == "global_step" else None)
    key = "SamplesPerSec" if form.startswith("running_only") else "RunningAvgSamplesPerSec"
    assert timed.rates[key] == "10.5" and timed.rates.get("CurrSamplesPerSec") == (
        None if form.startswith("running_only") else "12.0")
    assert ("MemAllocated" in timed.rates) == (form != "running_only")
    assert timer_line(line, whole=True, memory=False).rates.keys() <= {key, "CurrSamplesPerSec"}
    broken = line.replace("SamplesPerSec=", "SamplesPerSec:")
    assert timer_line(broken, whole=True) is None  # a spelling printed whole has its rate's '='
    assert (timer_line(broken) is None) == (form != "global_step")  # epoch=/micro_step=/global_step= is enough


def test_whole_takes_a_spelling_only_as_deepspeed_prints_it():
    """The deepspeed format reads any epoch=/micro_step=/global_step= (and counts a bad step); the megatron format
    only a spelling printed whole, RunningAvgSamplesPerSec before SamplesPerSec wherever each is on the line."""
    bad_step = "epoch=0/micro_step=2/global_step=2x, RunningAvgSamplesPerSec=1.0, CurrSamplesPerSec=2.0"
    assert (timer_line(bad_step).form, timer_line(bad_step).step) == ("global_step", "2x")
    assert timer_line(bad_step, whole=True) is None
    second = "epoch=0/micro_step=2/global_step=q " + bad_step.replace("2x", "4")
    assert timer_line(second).step == "q" and timer_line(second, whole=True).step == "4"
    both = "0/5, SamplesPerSec=1.0 | 0/6, RunningAvgSamplesPerSec=2.0, CurrSamplesPerSec=3.0"
    assert timer_line(both).form == "running_only" and timer_line(both, whole=True).form == "micro_step"
    assert timer_line("12345678901234567890/5, RunningAvgSamplesPerSec=1.0") is None  # no 19-digit epoch
    # MemAllocated's value runs to the next comma or space: read with it, it can hide a rate glued to it
    glued = "0/5, RunningAvgSamplesPerSec=1.0, CurrSamplesPerSec=3.0, MemAllocated=x)CurrSamplesPerSec=7"
    assert timer_line(glued).rates["CurrSamplesPerSec"] == "3.0"
    assert timer_line(glued, whole=True, memory=False).rates["CurrSamplesPerSec"] == "7"


@pytest.mark.parametrize("unit", ["epoch=0/micro_step=1/global_step=1x ", "0/1, SamplesPerSec=1 ", "0/"])
def test_timer_line_takes_linear_time_on_repeated_spellings(unit):
    def make(n: int):
        line = unit * (n // len(unit)) + "RunningAvgSamplesPerSec=1"
        return lambda: (timer_line(line), timer_line(line, whole=True))

    ratio = growth(make, 50_000)
    assert ratio < linear_bound(), explain(ratio)
