"""The analyses on real training logs (folder named by ``MFU_REALDATA``).

Unset: these tests skip and say how to run them. Set but missing: they fail. Checked here:

- the op-trace classifier names the cause each ``straggler_ops`` job is named for
  (``AR`` one slow worker, ``ST`` pipeline-stage imbalance, ``SE`` sequence-length imbalance:
  no persistent culprit), from the raw Parquet and through the loader;
- the Megatron save-at-50 / resume-at-51 case counts one restart and no lost work;
- the MLPerf logs split into init, training and evaluation that match the raw ``:::MLLOG``
  intervals;
- the breakdown sums to the wall time for every real Run;
- the answer's checks on real logs: Megatron's and torchtitan's own throughput claims against ours
  (ratios computed here from the raw lines), the Google MLPerf platform against a given TPU v6e,
  the FP8 MLPerf GPT-3 run read against the bf16 peak; every real Run's answer fits 100 columns.
"""

from __future__ import annotations

import json
import math
import re
import statistics
import warnings
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (fixture: MFU_REALDATA, skip when unset, fail when missing)

from mfu_toolkit.analysis import (
    account,
    breakdown,
    checkpoint_report,
    classify_op_stragglers,
    scorecard,
)
from mfu_toolkit.render import answer_dict, answer_text
from mfu_toolkit.run import LoadError, Run

pytestmark = pytest.mark.realdata

EXPECTED_KIND = {"AR": "slow_worker", "ST": "stage_imbalance", "SE": "spread"}


def _load(path: Path) -> Run:
    from mfu_toolkit.io import load_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skipped-record warnings are the loaders' business
        return load_run(path)  # a LoadError on a real log is a failure


def _trace(folder: Path, job: str) -> Path:
    p = folder / "straggler_ops" / f"trace-{job}.parquet"
    if not p.is_file():
        pytest.fail(f"{p} is missing from MFU_REALDATA")
    return p


# --------------------------------------------------------------------------------------------
# stragglers


@pytest.mark.parametrize("job", ["AR", "ST", "SE"])
def test_op_classifier_names_each_jobs_cause_from_raw_parquet(realdata, job):  # noqa: F811
    ops = pd.read_parquet(_trace(realdata, job))
    v = classify_op_stragglers(ops)
    assert v.kind == EXPECTED_KIND[job], (v.shares, v.evidence)
    e = v.evidence
    if job == "AR":
        # one worker runs its compute at > 2× its stage's median and is the slowest in every step
        assert e["worst_worker"] == "dp_rank=0, stage=0"
        assert e["worst_worker_slowdown"] > 2.0
        assert e["worst_worker_slowest_share"] == 1.0
        assert v.shares["worker"] > 0.4 and v.shares["stage"] < 0.02
    elif job == "ST":
        # the last stage carries ~1.6× the compute of the others; workers within a stage agree
        assert e["stage_ratio"] > 1.5
        assert max(e["stage_medians_s"], key=e["stage_medians_s"].get) == 3
        assert e["median_cv_within_stage"] < 0.02
        assert v.shares["stage"] > 0.2 and v.shares["worker"] < 0.02
    else:
        # the slowest worker changes from step to step; per-step spread within a stage ~10 %
        assert e["distinct_slowest_workers"] >= 10
        assert e["most_often_slowest_share"] < 0.25
        assert e["median_cv_within_stage"] > 0.05
        assert v.shares["transient"] > v.shares["stage"] > v.shares["worker"]


@pytest.mark.parametrize("job", ["AR", "ST", "SE"])
def test_op_classifier_through_the_loader(realdata, job):  # noqa: F811
    run = _load(_trace(realdata, job))
    assert "ops" in run.tables, "the straggler_ops loader keeps the per-operation table as run.tables['ops']"
    assert classify_op_stragglers(run).kind == EXPECTED_KIND[job]
    df = breakdown(run)
    assert math.isclose(df["seconds"].sum(), run.wall_seconds, rel_tol=1e-9)
    if job == "AR":
        # synchronous training: everyone waits for the slow worker most of the time
        assert df.set_index("category").loc["stragglers", "share"] > 0.4


# --------------------------------------------------------------------------------------------
# restarts


def test_megatron_resume_counts_the_restart(realdata):  # noqa: F811
    path = realdata / "megatron" / "megatron_golden_values_gpt3_tp4_pp1_resume_torch_dist_dgx_h100.json"
    if not path.is_file():
        pytest.fail(f"{path} is missing from MFU_REALDATA")
    run = _load(path)
    assert run.n_attempts == 2
    r = checkpoint_report(run)
    assert r.restarts == 1 and r.failures == 0
    assert r.lost_work_s == 0  # resumed at step 51 from the step-50 checkpoint: nothing redone
    sc = scorecard(run).set_index("metric")["value"]
    assert sc["restarts"] == 1
    acc = account(run)
    assert acc.useful_steps == run.steps["step"].nunique()


# --------------------------------------------------------------------------------------------
# MLPerf


def _mllog(path: Path) -> tuple[dict[str, float], list[tuple[float, float]]]:
    """First init_start/init_stop/run_start/run_stop and the eval intervals, in seconds."""
    marks: dict[str, float] = {}
    evals: list[tuple[float, float]] = []
    opened = None
    for line in path.read_text(errors="replace").splitlines():
        i = line.find(":::MLLOG ")
        if i < 0:
            continue
        try:
            d = json.loads(line[i + 9:])
        except json.JSONDecodeError:
            continue
        k, t = d.get("key"), d.get("time_ms", 0) / 1000.0
        if k in ("init_start", "init_stop", "run_start", "run_stop"):
            marks[k] = min(marks.get(k, t), t)
        elif k == "eval_start":
            opened = t
        elif k == "eval_stop" and opened is not None:
            evals.append((opened, t))
            opened = None
    return marks, evals


def _mlperf_files(realdata: Path) -> list[Path]:  # noqa: F811
    files = sorted((realdata / "mlperf").glob("*.txt"))
    if not files:
        pytest.fail(f"no MLPerf logs in {realdata / 'mlperf'}")
    return files


def test_mlperf_splits_init_training_and_evaluation(realdata):  # noqa: F811
    for path in _mlperf_files(realdata):
        marks, evals = _mllog(path)
        run = _load(path)
        sec = account(run).seconds
        assert sec["init"] == pytest.approx(marks["init_stop"] - marks["init_start"], abs=2e-3), path.name
        eval_s = sum(b - a for a, b in evals)
        assert sec["eval"] == pytest.approx(eval_s, abs=2e-3), path.name
        train = sec["ideal_compute"] + sec["jitter"] + sec["stragglers"] + sec["data_stall"]
        raw_train = marks["run_stop"] - marks["run_start"] - eval_s
        assert train == pytest.approx(raw_train, rel=2e-3), path.name
        assert sec["unaccounted"] < 0.002 * run.wall_seconds, path.name


# --------------------------------------------------------------------------------------------
# the identity on every real Run


def _real_files(realdata: Path) -> list[Path]:  # noqa: F811
    out = []
    for p in sorted(realdata.iterdir()):
        if p.is_dir():
            out += [q for q in sorted(p.iterdir()) if q.suffix not in (".md", ".yaml") and not q.name.startswith(".")]
    return out


def _real_runs(realdata: Path) -> Iterator[tuple[Path, Run]]:  # noqa: F811
    """Each real file with the Run its loader reads, warnings silenced; files no loader reads are passed over."""
    from mfu_toolkit.io import load_run

    for path in _real_files(realdata):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = load_run(path)
        except LoadError:
            continue  # a companion file or a format without a loader in this build
        yield path, run


def test_breakdown_sums_to_wall_time_for_every_real_run(realdata):  # noqa: F811
    checked = 0
    for path, run in _real_runs(realdata):
        df = breakdown(run)
        w = run.wall_seconds
        assert math.isclose(df["seconds"].sum(), w, rel_tol=1e-9, abs_tol=1e-9), path.name
        neg = df[(df["category"] != "jitter") & (df["seconds"] < -1e-9 * max(w, 1.0))]
        assert neg.empty, (path.name, neg)
        checked += 1
    assert checked >= 10, f"only {checked} real Runs loaded"


# --------------------------------------------------------------------------------------------
# the answer on real logs: claims, facts, plausibility, and every real Run


def _answer(path: Path, **inputs):
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.inputs import apply_inputs

    return build_answer(apply_inputs(_load(path), interface="cli", **inputs))


def _ratio(message: str) -> float:
    return float(re.search(r"\(ratio ([\d.]+)\)", message).group(1))


def test_megatron_mixtral_claim_against_ours_names_the_sequence_length(realdata):  # noqa: F811
    from mfu_toolkit.flops import model_flops

    path = realdata / "megatron" / "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log"
    raw = re.findall(r"elapsed time per iteration \(ms\): ([\d.]+) \| throughput per GPU \(TFLOP/s/GPU\): ([\d.]+)",
                     path.read_text())
    assert len(raw) == 5  # 231.9 ... 241.4 TFLOP/s/GPU as printed
    claimed = statistics.median(float(t) for _, t in raw)
    # ours: Mixtral 8x7B at 4096 tokens × the log's global batch 128, over 16 GPUs, at each printed
    # line's iteration time; the median of those rates, as the claim is the median of its lines
    per_step = model_flops("mixtral-8x7b", seq_len=4096).training_per_sample * 128
    ours = statistics.median(per_step / (float(ms) / 1000) / 16 / 1e12 for ms, _ in raw)
    a = _answer(path, preset="mixtral-8x7b", seq_len=4096, n_accelerators=16, accelerator="H100")
    (check,) = [c for c in a.checks if c.name == "claim tflops_per_accelerator"]
    assert check.status == "warn"  # a wrong sequence length doubles MFU: the claim catches it
    assert _ratio(check.message) == pytest.approx(ours / claimed, abs=0.01)
    assert 1.9 < ours / claimed < 2.2 and "the sequence length or the batch" in check.message
    assert f"the log claims {claimed:g} TFLOP/s per GPU (median of 5)" in check.message


def test_torchtitan_mfu_claim_names_the_peak_the_framework_used(realdata):  # noqa: F811
    path = realdata / "torchtitan" / "pytorch-torchtitan_pr2389_all_ranks_unprefixed.log"
    first: dict[int, tuple[str, float, float, float]] = {}
    for m in re.finditer(r"(\d\d:\d\d:\d\d,\d+) .*step:\s+(\d+) .*tps: ([\d,]+)\s+tflops: ([\d.]+)\s+mfu: ([\d.]+)%",
                         path.read_text()):
        first.setdefault(int(m.group(2)), (m.group(1), float(m.group(3).replace(",", "")), float(m.group(4)),
                                           float(m.group(5)) / 100))
    (t4, _, tf4, mfu4), (t5, tps5, tf5, mfu5) = first[4], first[5]
    step_s = (datetime.strptime(t5, "%H:%M:%S,%f") - datetime.strptime(t4, "%H:%M:%S,%f")).total_seconds()
    # FLOPs per step from step 5's own figures: (tflops / tps) FLOPs per token × tps × step time × 8 GPUs
    flops_step = tf5 * 1e12 / tps5 * tps5 * step_s * 8
    fw_peak = statistics.median([tf4, tf5]) / statistics.median([mfu4, mfu5])  # about 2,250: B200 bf16 dense
    a = _answer(path, accelerator="H100", n_accelerators=8, flops_per_step=flops_step)
    by = {c.name: c for c in a.checks}
    assert by["claim tflops_per_accelerator"].status == "ok"
    check = by["claim mfu"]
    ours = flops_step / step_s / (8 * 989.4e12)  # against the H100 SXM bf16 dense peak
    assert check.status == "warn"
    assert _ratio(check.message) == pytest.approx(ours / statistics.median([mfu4, mfu5]), abs=0.01)
    assert f"its TFLOP/s over its MFU is {fw_peak:,.6g} TFLOP/s, the registry's B200 bf16 dense" in check.message


def test_google_mlperf_platform_conflicts_with_a_given_tpu_v6e(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_Google_cloud-tpu-trillium-1024-maxtext_gpt3_result_0.txt"
    line4 = path.read_text().splitlines()[3]
    assert '"key": "submission_platform", "value": "tpu-v5p"' in line4
    a = _answer(path, accelerator="TPU v6e")
    (c,) = [c for c in a.checks if c.name == "fact accelerator"]
    assert c.status == "warn"
    assert c.message == (f"accelerator given as 'TPU v6e' (command line --accelerator), but the log states "
                         f"'tpu-v5p' at {path.name}:4; the given value is used")
    # the same chip under another name is no conflict
    assert not [c for c in _answer(path, accelerator="TPU v5p").checks if c.status == "warn"]


def test_mlperf_gpt3_fp8_run_read_against_bf16_is_implausible(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    a = _answer(path, preset="gpt3-175b", accelerator="H100", dtype="bf16", n_accelerators=512)
    assert a.headline["steady_state_mfu"] > 0.75
    (c,) = [c for c in a.checks if c.name == "plausibility"]
    assert c.status == "warn" and "an fp8 run measured against the bf16 peak" in c.message


def test_the_answer_reads_well_for_every_real_run(realdata):  # noqa: F811
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.report import html_report

    built = untimed = 0
    for path, run in _real_runs(realdata):
        a = build_answer(run)
        text = answer_text(a, interface="cli", width=100)
        assert max(len(line) for line in text.splitlines()) <= 100, path.name
        assert "Wall time: 0.000 s" not in text and not re.search(r"\de[-+]\d\d", text), path.name
        # every front end asks in the interface's terms: no Python internals in the text or the JSON
        # (before, --json carried "set meta.model_flops_per_sample" under summary.reasons)
        for shown in (text, json.dumps(answer_dict(a, interface="cli"), allow_nan=False),
                      json.dumps(answer_dict(a, interface="make"))):
            for internal in ("meta.", "set meta", "with_accelerator", "resolve it with"):
                assert internal not in shown, (path.name, internal)
        assert all(c.status in ("ok", "warn", "info") for c in a.checks)
        if not a.timed:
            untimed += 1
            body = html_report(run, answer=a)
            assert "What the log holds" in body and "<img" not in body, path.name
            assert "meta." not in body, path.name
        built += 1
    assert built >= 10 and untimed >= 3, (built, untimed)  # Lightning metrics.csv, sacct, a TensorBoard folder


def test_mlperf_denominator_says_the_log_stated_accelerator_and_count(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    # the line of the raw file that states the platform ("64xNVIDIA DGX H100": 64 nodes of 8 H100)
    line = next(i for i, text in enumerate(path.read_text().splitlines(), 1)
                if '"key": "submission_platform"' in text and "64xNVIDIA DGX H100" in text)
    a = _answer(path)
    src = answer_dict(a, interface="cli")["headline"]["denominator"]["sources"]
    assert src["accelerator"] == f"stated in the log at {path.name}:{line}"
    assert src["count"].startswith("stated in the log at ") and a.headline["denominator"]["n_accelerators"] == 64 * 8
    # the log states no dtype: bf16 is a default, and says how to give another (before: "the mlperf metadata")
    assert src["dtype"] == "default (bf16 assumed; give --dtype DTYPE)"
    dtype = {f["name"]: f for f in a.facts}["dtype"]
    assert (dtype["where"], dtype["give"]) == ("default (bf16 assumed)", "dtype")
    assert f"accelerator stated in the log at {path.name}:{line}" in " ".join(answer_text(a, interface="cli").split())


def test_a_sampled_rank_trace_divides_by_the_world_size_it_states(realdata):  # noqa: F811
    import gzip

    path = realdata / "kineto" / "HTA_trace_filter_sampled_rank-0_ws128.json.gz"
    world = int(re.search(rb'"world_size":\s*(\d+)', gzip.decompress(path.read_bytes())).group(1))
    assert world == 128  # the file's distributedInfo
    a = _answer(path, accelerator="A100")
    assert a.headline["denominator"]["n_accelerators"] == world
    check = {c.name: c for c in a.checks}["accelerator count"]
    assert check.status == "info" and check.message.startswith(f"MFU divides by {world} accelerators "
                                                               "(stated in the log at")
    assert check.message.endswith("the log holds steps of 1 rank (0) only, a sample of the job's ranks")
    # one rank's trace: no straggler verdict, and it is not called job-level (before: "job-level steps")
    assert a.stragglers["basis"] == "one rank's steps (rank 0)" and a.stragglers["culprit"] == "unknown"
