"""The analyses on real training logs (folder named by ``MFU_REALDATA``).

Unset: these tests skip and say how to run them. Set but missing: they fail. Checked here:

- the op-trace classifier names the cause each ``straggler_ops`` job is named for
  (``AR`` one slow worker, ``ST`` pipeline-stage imbalance, ``SE`` sequence-length imbalance:
  no persistent culprit), from the raw Parquet and through the loader;
- the Megatron save-at-50 / resume-at-51 case counts one restart and no lost work;
- the MLPerf logs split into init, training and evaluation that match the raw ``:::MLLOG``
  intervals;
- the breakdown sums to the wall time for every real Run.
"""

from __future__ import annotations

import json
import math
import warnings
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
from mfu_toolkit.run import LoadError, Run

pytestmark = pytest.mark.realdata

EXPECTED_KIND = {"AR": "slow_worker", "ST": "stage_imbalance", "SE": "spread"}


def _load(path: Path) -> Run:
    from mfu_toolkit.io import load_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # skipped-record warnings are the loaders' business
        try:
            return load_run(path)
        except LoadError as exc:
            pytest.skip(f"no loader reads {path.name} in this build: {exc}")


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
    if "ops" not in run.tables:
        pytest.skip("the straggler_ops loader in this build keeps no 'ops' table")
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


def test_breakdown_sums_to_wall_time_for_every_real_run(realdata):  # noqa: F811
    checked = 0
    for path in _real_files(realdata):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from mfu_toolkit.io import load_run

                run = load_run(path)
        except LoadError:
            continue  # a companion file or a format without a loader in this build
        df = breakdown(run)
        w = run.wall_seconds
        assert math.isclose(df["seconds"].sum(), w, rel_tol=1e-9, abs_tol=1e-9), path.name
        neg = df[(df["category"] != "jitter") & (df["seconds"] < -1e-9 * max(w, 1.0))]
        assert neg.empty, (path.name, neg)
        checked += 1
    assert checked >= 10, f"only {checked} real Runs loaded"
