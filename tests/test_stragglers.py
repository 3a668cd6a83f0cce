"""Stragglers: per-rank scores, what-ifs, the op-trace classifier, and order statistics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (the fixture)

from mfu_toolkit.analysis import (
    account,
    classify_op_stragglers,
    expected_max,
    op_time_by_type,
    op_worker_compute,
    rank_scores,
    step_spread,
    straggler_summary,
    sync_step_time,
    without_worst_ranks,
)
from mfu_toolkit.run import Run
from mfu_toolkit.simulate import SimConfig, simulate

# --------------------------------------------------------------------------------------------
# per-rank steps


@pytest.fixture(scope="module")
def slow_run() -> Run:
    return simulate(SimConfig(n_ranks=16, n_steps=60, jitter=0.02, slow_ranks=(5,), slow_factor=1.3,
                              transient_prob=0.02, transient_factor=1.5, seed=7))


def test_step_spread_and_slowest(slow_run):
    sp = step_spread(slow_run)
    assert len(sp) == 60 and (sp["n_ranks"] == 16).all()
    assert (sp["spread_s"] >= 0).all()
    assert sp["slowest_rank"].value_counts().index[0] == 5
    assert sp["rel_spread"].median() == pytest.approx(0.3, abs=0.06)


def test_rank_scores_persistent_and_transient(slow_run):
    sc = rank_scores(slow_run, threshold=0.1)
    top = sc.iloc[0]
    assert top["rank"] == 5 and top["kind"] == "persistent"
    assert top["score"] == pytest.approx(0.3, abs=0.05)
    assert set(sc["kind"].iloc[1:]) <= {"transient", "normal"}
    assert (sc["kind"] == "transient").sum() >= 1  # transient slowdowns were injected
    with pytest.raises(ValueError, match=r"threshold must be a number in \[0, 100\).*got -1"):
        rank_scores(slow_run, threshold=-1)


def test_straggler_summary_matches_breakdown(slow_run):
    s = straggler_summary(slow_run)
    acc = account(slow_run)
    assert s.straggler_s == pytest.approx(acc.seconds["stragglers"])
    assert s.wall_share == pytest.approx(acc.seconds["stragglers"] / acc.wall_s)
    assert s.persistent_ranks == [5]
    # the line names the rank, never a bare number that reads as a count
    assert any(line.endswith("): rank 5") for line in s.lines())
    assert s.most_often_slowest == 5
    assert s.tail_ratio >= 1.0
    assert "rank 5" in "\n".join(s.lines())


def test_without_worst_ranks_what_if(slow_run):
    w = without_worst_ranks(slow_run, k=2)
    assert list(w["removed"]) == [0, 1, 2]
    assert w["ranks"].iloc[1] == [5]
    # removing rank 5 saves, per step, the gap between its time and the next slowest rank's
    c = slow_run.steps.pivot(index="step", columns="rank", values="compute_s")
    expected = float((c.max(axis=1) - c.drop(columns=[5]).max(axis=1)).mean())
    assert w["saving_s"].iloc[1] == pytest.approx(expected, rel=1e-9)
    assert 0.15 < expected < 0.3
    assert w["speedup"].iloc[1] > 1.1
    assert w["saving_s"].iloc[2] >= w["saving_s"].iloc[1]
    with pytest.raises(ValueError, match="k must be an integer >= 0"):
        without_worst_ranks(slow_run, k=-1)


def test_job_level_runs_are_refused_with_a_reason():
    run = simulate(SimConfig(n_ranks=4, n_steps=5, per_rank=False))
    with pytest.raises(ValueError, match="no per-rank steps"):
        rank_scores(run)


# --------------------------------------------------------------------------------------------
# op traces


def _ops(kind: str, *, dp: int = 4, stages: int = 4, steps: int = 20, mbs: int = 4, seed: int = 0) -> pd.DataFrame:
    """A small per-operation trace in the straggler_ops form with one injected cause."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(steps):
        for d in range(dp):
            for p in range(stages):
                f = 1.0
                if kind == "slow_worker" and (d, p) == (1, 0):
                    f = 2.0
                if kind == "stage_imbalance" and p == stages - 1:
                    f = 1.8
                for m in range(mbs):
                    g = f * (float(np.exp(rng.normal(0, 0.25))) if kind == "spread" else 1 + rng.normal(0, 0.002))
                    for op, base in (("forward-compute", 0.1), ("backward-compute", 0.2), ("forward-send", 0.05)):
                        rows.append({"dp_rank": d, "stage": p, "rank": d * stages + p, "step": s,
                                     "optype": op, "start_ts": 0.0, "duration": base * g, "mb_id": m})
    df = pd.DataFrame(rows)
    df["optype"] = df["optype"].astype("category")
    return df


@pytest.mark.parametrize("kind", ["slow_worker", "stage_imbalance", "spread"])
def test_classifier_names_the_injected_cause(kind):
    v = classify_op_stragglers(_ops(kind))
    assert v.kind == kind, (v.shares, v.evidence)
    assert max(v.shares, key=v.shares.get) == {"slow_worker": "worker", "stage_imbalance": "stage",
                                                "spread": "transient"}[kind]
    assert v.label and len(v.lines()) == 4


def test_classifier_evidence_for_a_slow_worker():
    v = classify_op_stragglers(_ops("slow_worker"))
    e = v.evidence
    assert e["worst_worker"] == "dp_rank=1, stage=0"
    assert e["worst_worker_slowdown"] == pytest.approx(2.0, rel=0.02)
    assert e["worst_worker_slowest_share"] == 1.0
    assert v.workers.iloc[0]["worker"] == "dp_rank=1, stage=0"


def test_classifier_balanced_trace_is_none():
    v = classify_op_stragglers(_ops("balanced"))
    assert v.kind == "none"
    assert all(s < 0.02 for s in v.shares.values())


def test_classifier_accepts_a_run_with_an_ops_table_and_checks_inputs():
    ops = _ops("stage_imbalance", dp=2, stages=2, steps=5)
    run = Run.build(tables={"ops": ops})
    assert classify_op_stragglers(run).kind == "stage_imbalance"
    with pytest.raises(ValueError, match="no 'ops' table"):
        classify_op_stragglers(Run.build())
    with pytest.raises(ValueError, match="missing"):
        classify_op_stragglers(ops.drop(columns=["duration"]))
    with pytest.raises(ValueError, match="match no rows"):
        classify_op_stragglers(ops, compute_optypes=["gemm"])


def test_op_tables():
    ops = _ops("slow_worker", dp=2, stages=2, steps=3, mbs=2)
    wc = op_worker_compute(ops)
    assert list(wc.columns) == ["step", "dp_rank", "stage", "compute_s"]
    assert wc["compute_s"].iloc[0] == pytest.approx(2 * (0.1 + 0.2), rel=0.01)
    bt = op_time_by_type(ops)
    assert set(bt["optype"]) == {"forward-compute", "backward-compute", "forward-send"}


# --------------------------------------------------------------------------------------------
# order statistics


def test_expected_max_exponential_matches_harmonic_numbers():
    # max of n iid Exp(scale s) has mean s·H_n; with shift (mean − std)
    for n in (1, 2, 3, 16, 1000):
        h = sum(1.0 / i for i in range(1, n + 1))
        assert expected_max(n, dist="exponential", mean=2.0, std=0.5) == pytest.approx(1.5 + 0.5 * h, rel=1e-6)


def test_expected_max_normal_closed_forms():
    # E[max of 2] = μ + σ/√π, E[max of 3] = μ + 3σ/(2√π)  (David & Nagaraja)
    assert expected_max(2, dist="normal", mean=1.0, std=0.1) == pytest.approx(1 + 0.1 / math.sqrt(math.pi), rel=1e-7)
    assert expected_max(3, dist="normal", mean=1.0, std=0.1) == pytest.approx(1 + 0.15 / math.sqrt(math.pi), rel=1e-7)
    # tabulated E[max of 16 standard normals] = 1.76599
    assert expected_max(16, dist="normal", mean=0.0, std=1.0) == pytest.approx(1.76599, abs=1e-5)


def test_expected_max_lognormal_pair_closed_form():
    # for two iid lognormals: E[max] = 2·E[X]·Φ(σ/√2)
    mean, std = 1.0, 0.3
    s = math.sqrt(math.log1p((std / mean) ** 2))
    phi = 0.5 * (1 + math.erf(s / math.sqrt(2) / math.sqrt(2)))
    assert expected_max(2, dist="lognormal", mean=mean, std=std) == pytest.approx(2 * mean * phi, rel=1e-6)
    assert expected_max(1, dist="lognormal", mean=mean, std=std) == pytest.approx(mean)


def test_expected_max_empirical_exact_and_monte_carlo():
    x = np.array([1.0, 2.0, 4.0])
    # n=2 over 3 equally likely values: P(max=1)=1/9, P(max=2)=3/9, P(max=4)=5/9
    assert expected_max(2, dist=x) == pytest.approx((1 + 6 + 20) / 9)
    mc = expected_max(64, dist=lambda rng, size: rng.normal(1.0, 0.1, size), n_mc=4000, seed=1)
    assert mc == pytest.approx(expected_max(64, dist="normal", mean=1.0, std=0.1), rel=0.005)


def test_sync_step_time_grows_with_ranks_and_errors():
    t = sync_step_time([1, 8, 64, 1024, 16384], dist="lognormal", mean=1.0, std=0.05)
    assert t["method"].eq("exact").all()
    assert np.all(np.diff(t["expected_step_s"]) > 0)
    assert t["overhead"].iloc[0] == pytest.approx(0.0)
    assert t["overhead"].iloc[-1] > 0.2  # 5 % jitter costs > 20 % at 16K ranks
    with pytest.raises(ValueError, match=r"dist must be one of normal, lognormal, exponential.*got 'gamma'"):
        expected_max(4, dist="gamma")
    with pytest.raises(ValueError, match=r"n must be an integer >= 1; got 0"):
        expected_max(0)
    with pytest.raises(ValueError, match=r"std must be a finite number >= 0"):
        expected_max(3, std=-1.0)


# --------------------------------------------------------------------------------------------
# stage-aware comparison: a heavier pipeline stage is stage imbalance, not stragglers


def _staged_run(*, slow_rank: int | None = None) -> Run:
    """Two stages of four ranks; stage 1 does 1.6x the work of stage 0 (hand-made busy times)."""
    rows = []
    for step in range(10):
        for rank in range(8):
            stage = rank // 4
            busy = (1.6 if stage else 1.0) * (1 + 0.001 * ((rank + step) % 3))
            if rank == slow_rank:
                busy *= 1.3
            rows.append({"attempt": 0, "step": step, "rank": rank, "start_s": step * 3.0,
                         "end_s": step * 3.0 + 2.5, "compute_s": busy, "stage": stage})
    return Run.build(steps=pd.DataFrame(rows))


def test_a_heavier_stage_is_not_a_straggler():
    run = _staged_run()
    sc = rank_scores(run)
    # the old all-ranks comparison scored ranks 4-7 at 1.6 / 1.0 - 1 = 0.6: "persistent"
    assert set(sc["kind"]) <= {"normal"}, sc
    assert sc.attrs["compared_with"] == "peers of the same pipeline stage"
    s = straggler_summary(run)
    assert s.persistent_ranks == []
    assert s.stage_ratio == pytest.approx(1.6, rel=0.01)
    assert any("Stage imbalance (not stragglers): stage 1" in line for line in s.lines())
    # removing ranks of stage 1 cannot make its work vanish: no gain
    w = without_worst_ranks(run, k=4)
    assert w["saving_s"].abs().max() < 0.01


def test_a_slow_rank_is_found_among_its_stage_peers():
    run = _staged_run(slow_rank=5)
    sc = rank_scores(run)
    assert sc.iloc[0]["rank"] == 5 and sc.iloc[0]["kind"] == "persistent"
    assert sc.iloc[0]["score"] == pytest.approx(0.3, abs=0.01)  # 1.3x its stage's median rank
    assert (sc["kind"].iloc[1:] == "normal").all()
    # removing it: stage 1's step max falls from 1.6 * 1.3 to about 1.6 (its peers' median)
    w = without_worst_ranks(run, k=1)
    assert w["saving_s"].iloc[1] == pytest.approx(1.6 * 1.002 * 1.3 - 1.6 * 1.002, rel=0.02)


def test_without_stage_information_all_ranks_are_compared_and_said_so(slow_run):
    sc = rank_scores(slow_run)
    assert "no stage information" in sc.attrs["compared_with"]
    assert (sc["stage"] == -1).all()
    assert "Compared with: all ranks" in "\n".join(straggler_summary(slow_run).lines())


def test_real_traces_stage_aware_verdicts(realdata):  # noqa: F811
    import warnings

    from mfu_toolkit.io import load_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        runs = {t: load_run(realdata / "straggler_ops" / f"trace-{t}.parquet") for t in ("AR", "ST", "SE")}
    # AR: only rank 0 (the artifact's README: one slowed worker), not 48, 52, 60 of the last stage
    assert straggler_summary(runs["AR"]).persistent_ranks == [0]
    # ST: ranks 6 and 7 are the last stage (meta-ST.yaml: pp_size 4, dp_size 2): stage imbalance
    st = straggler_summary(runs["ST"])
    assert st.persistent_ranks == [] and st.stage_ratio > 1.5
    w = without_worst_ranks(runs["ST"], k=2)
    assert w["speedup"].max() < 1.01  # was 1.315: removing both last-stage ranks made their work vanish
    # SE: sequence-length imbalance, random over ranks: no persistent straggler (was 63 of 64)
    se = straggler_summary(runs["SE"])
    assert se.persistent_ranks == []
    assert se.scores["kind"].eq("transient").sum() > 32


def test_breakdown_books_a_heavier_stage_as_stage_imbalance():
    acc = account(_staged_run())
    # per step: stage 1's median rank ≈ 1.6 s, all ranks' median ≈ (1.0 + 1.6) / 2 = 1.3 s, max 1.6 s:
    # the 0.3 s wait is the stage's, over 10 steps 3 s; before, all of it was "stragglers"
    assert acc.seconds["stage_imbalance"] == pytest.approx(3.0, rel=0.02)
    assert acc.seconds["stragglers"] < 0.05
    assert sum(acc.seconds.values()) == pytest.approx(acc.wall_s, rel=1e-12)
    slow = account(_staged_run(slow_rank=5))
    assert slow.seconds["stragglers"] == pytest.approx(10 * 1.6 * 0.3, rel=0.03)  # rank 5 is 30 % over its stage
