"""The dependency-aware what-if replay (mfu_toolkit.scenarios.replay).

Expected values come from three independent sources:

- a hand trace (two stages, two microbatches) whose replays are computed by
  hand in the comments;
- the artifact of Lin et al. 2025 (OSDI '25), ByteDance-Seed/StragglerAnalysis at commit
  8efcd7f, run on the same three traces (``analyzer/wia.py``, ``compute_mw.py``,
  ``compute_ms.py``; its outputs equal the ``data/result-*.json``, ``mw-*.json`` and
  ``ms-*.json`` files committed there): ``blocking_slowdown`` is S, ``Mw`` and ``Ms`` are M_W, M_S;
- the raw trace rows, read here with pyarrow alone (step time = last end − first start).
"""

from __future__ import annotations

import numpy as np
import pytest
from _realdata import realdata  # noqa: F401  (the fixture)
from _replay import hand_trace

from mfu_toolkit.analysis import slowed_replay, straggler_whatif
from mfu_toolkit.run import Run

# --------------------------------------------------------------------------------------------
# the hand trace of tests/_replay.py: dp = 1, two stages, two microbatches, 1F1B; a step takes 15 s


def test_hand_trace_actual_ideal_and_slowdown():
    r = straggler_whatif(hand_trace())
    assert r.available, r.notes
    assert r.trace_step_s == pytest.approx(15.0)
    assert r.actual_step_s == pytest.approx(15.0)  # the trace has no launch gaps
    # ideal: F at the mean (1+1+2+2)/4 = 1.5 s, B at 3 s; replayed by hand:
    #   s0 F0 [0,1.5] F1 [1.5,3]; s1 F0 [1.5,3] B0 [3,6]; s0 B0 [6,9]; s1 F1 [6,7.5] B1 [7.5,10.5];
    #   s0 B1 [10.5,13.5] -> 13.5 s, S = 15 / 13.5
    assert r.ideal_step_s == pytest.approx(13.5)
    assert r.slowdown == pytest.approx(15 / 13.5)


def test_hand_trace_add_back_and_stage_recovery():
    r = straggler_whatif(hand_trace())
    # stage 1 alone at its actual durations: s1 F0 [1.5,3.5] B0 [3.5,7.5]; s0 B0 [7.5,10.5];
    # s1 F1 [7.5,9.5] B1 [9.5,13.5]; s0 B1 [13.5,16.5] -> S_1 = 16.5 / 13.5, share 2.0
    st = r.by_stage.set_index("stage")
    assert st.loc[1, "S_x"] == pytest.approx(16.5 / 13.5)
    assert st.loc[1, "share"] == pytest.approx(2.0)
    # last stage idealised: s0 F0 [0,1] F1 [1,2]; s1 F0 [1,2.5] B0 [2.5,5.5]; s0 B0 [5.5,7.5];
    # s1 F1 [5.5,7] B1 [7,10]; s0 B1 [10,12] -> 12 s; M_S = (15 - 12) / (15 - 13.5) = 2
    assert r.stage_recovery == pytest.approx(2.0)
    assert r.verdict == "stage_imbalance" and r.culprit["stage"] == 1


def test_hand_trace_slowed_worker():
    r = straggler_whatif(hand_trace())
    # stage 0 twice as slow (F 2 s, B 4 s): s0 F0 [0,2] F1 [2,4]; s1 F0 [2,4] B0 [4,8];
    # s0 B0 [8,12]; s1 F1 [8,10] B1 [10,14]; s0 B1 [14,18] -> 18 s against the same 13.5 s ideal
    w = slowed_replay(r, worker=(0, 0), factor=2.0)
    assert w["actual_step_s"] == pytest.approx(18.0)
    assert w["slowdown"] == pytest.approx(18 / 13.5)
    assert w["waterfall"]["seconds"].sum() == pytest.approx(18.0)
    same = slowed_replay(r, stage=1, factor=1.0)
    assert same["actual_step_s"] == pytest.approx(15.0)
    with pytest.raises(ValueError, match=r"factor must be a number in \[0.1, 100\]; got 0"):
        slowed_replay(r, stage=1, factor=0)
    with pytest.raises(ValueError, match=r"worker must be \(dp_rank, stage\) of this job.*got \(5, 0\)"):
        slowed_replay(r, worker=(5, 0))
    with pytest.raises(ValueError, match="stage must be one of"):
        slowed_replay(r, stage=7)


def test_waterfall_sums_to_the_replayed_step():
    r = straggler_whatif(hand_trace())
    wf = r.waterfall()
    assert wf["seconds"].sum() == pytest.approx(r.actual_step_s)
    assert wf["seconds"].iloc[0] == pytest.approx(r.ideal_step_s)


# --------------------------------------------------------------------------------------------
# bad input: a note, never an exception


def test_missing_columns_fall_back_with_a_note():
    df = hand_trace()
    r = straggler_whatif(df.drop(columns=["stage"]))
    assert not r.available and np.isnan(r.slowdown)
    assert "['stage']" in r.notes[0] and "falling back" in r.notes[0]
    assert "not available" in r.lines()[0]
    r = straggler_whatif(Run.build())
    assert not r.available and "no per-operation table" in r.notes[0]
    # seq_id and mc are optional: ops are numbered by start time, one model chunk assumed
    r = straggler_whatif(df.drop(columns=["seq_id"]))
    assert r.available and r.actual_step_s == pytest.approx(15.0)
    assert any("no seq_id" in n for n in r.notes)


def test_a_cycle_is_counted_and_named():
    df = hand_trace()
    # stage 0's B0 traced before its F0: the compute stream then runs B0 -> F0, while B0 needs
    # stage 1's gradient, which needs stage 0's F0 -> a cycle
    first = (df["step"] == 1) & (df["stage"] == 0)
    f0 = first & (df["optype"] == "forward-compute") & (df["seq_id"] == 0)
    b0 = first & (df["optype"] == "backward-compute") & (df["seq_id"] == 0)
    df.loc[b0, "start_ts"], df.loc[f0, "start_ts"] = 0.0, 0.5
    r = straggler_whatif(df)
    assert not r.available
    note = next(n for n in r.notes if "cycle" in n)
    assert "forward-compute[0]@stage0" in note and "backward-compute[0]@stage0" in note


def test_unmatched_send_and_a_damaged_step_are_named():
    df = hand_trace()
    # one step loses a receive: that step is left out, named with its rank
    gone = (df["step"] == 2) & (df["optype"] == "backward-recv") & (df["seq_id"] == 1)
    r = straggler_whatif(df[~gone])
    assert r.available and r.graph["steps"] == 1
    assert any("step 2 dp_rank 0: 15 ops, 16 expected" in n for n in r.notes)
    # every step loses it: the send it pairs with has no peer, counted and named
    every = (df["optype"] == "backward-recv") & (df["seq_id"] == 1)
    r = straggler_whatif(df[~every])
    assert r.available and r.graph["unmatched_p2p"] == 1
    assert any("backward-send[1]@stage1" in n for n in r.notes)


def test_options_are_checked():
    with pytest.raises(ValueError, match=r"min_slowdown must be a number in \[0, 10\); got -1"):
        straggler_whatif(hand_trace(steps=(1,)), min_slowdown=-1)
    with pytest.raises(TypeError, match="run must be a Run or an op DataFrame; got str"):
        straggler_whatif("trace.parquet")


# --------------------------------------------------------------------------------------------
# the three real traces against the artifact (ByteDance-Seed/StragglerAnalysis @ 8efcd7f)

ARTIFACT = {  # trace: (S = blocking_slowdown, M_W = Mw, M_S = Ms), printed by the artifact's own run
    "AR": (1.9730450967262543, 1.0017012777290497, -0.00121196404622606),
    "ST": (1.1787021836556841, 0.031404269124045224, 1.2193563788811714),
    "SE": (1.5373613711484118, 0.025062266911209777, 0.6877108929755429),
}


@pytest.fixture(scope="module")
def ops_dir(realdata):  # noqa: F811  (unset MFU_REALDATA: skip; set but without the traces: fail)
    return realdata / "straggler_ops"


@pytest.fixture(scope="module")
def real(ops_dir):
    from mfu_toolkit.io import load_run

    return {t: straggler_whatif(load_run(ops_dir / f"trace-{t}.parquet")) for t in ARTIFACT}


@pytest.mark.parametrize("trace", sorted(ARTIFACT))
def test_real_traces_agree_with_the_artifact(real, trace):
    s, m_w, m_s = ARTIFACT[trace]
    r = real[trace]
    assert r.available, r.notes
    assert r.slowdown == pytest.approx(s, rel=0.05)
    assert r.worker_recovery == pytest.approx(m_w, abs=0.05)
    assert r.stage_recovery == pytest.approx(m_s, abs=0.05)


@pytest.mark.parametrize("trace", sorted(ARTIFACT))
def test_real_trace_step_time_from_the_raw_rows(real, ops_dir, trace):
    import pyarrow.parquet as pq

    t = pq.read_table(ops_dir / f"trace-{trace}.parquet", columns=["step", "start_ts", "duration"]).to_pandas()
    t["end"] = t["start_ts"].astype(float) + t["duration"].astype(float)
    g = t.groupby("step")
    expected = float((g["end"].max() - g["start_ts"].min()).mean())
    r = real[trace]
    assert r.trace_step_s == pytest.approx(expected, rel=1e-6)
    # the replay with the trace's own launch gaps rebuilds the trace: the graph is consistent
    assert r.replay_with_gaps_step_s == pytest.approx(expected, rel=1e-3)
    assert r.graph["cyclic_ops"] == 0 and r.graph["unmatched_p2p"] == 0


def test_real_verdicts_name_each_culprit(real):
    ar, st, se = real["AR"], real["ST"], real["SE"]
    # AR: rank 0 (dp_rank 0, stage 0) was slowed on purpose (the artifact's README, section A.2)
    assert ar.verdict == "slow_worker"
    assert (ar.culprit["dp_rank"], ar.culprit["stage"], ar.culprit["ranks"]) == (0, 0, [0])
    assert "rank 0 (dp_rank 0, stage 0)" in "\n".join(ar.lines())
    # ST: the last stage is the long one (README: "only workers on the last stage")
    assert st.verdict == "stage_imbalance" and st.culprit["stage"] == 3
    assert list(st.by_worker["stage"].iloc[:2]) == [3, 3]
    # SE: sequence-length imbalance moves from step to step: no single culprit
    assert se.verdict == "spread"
    assert se.by_worker["share"].iloc[0] < 0.5


def test_real_add_back_by_stage_matches_the_artifact(real):
    # blocking_decompose_by_stage of result-ST.json / result-AR.json at 8efcd7f
    st = real["ST"].by_stage.set_index("stage")["S_x"]
    assert st[3] == pytest.approx(1.2322559543157936, rel=0.01)
    ar = real["AR"].by_stage.set_index("stage")["S_x"]
    assert ar[0] == pytest.approx(1.9791886375936654, rel=0.01)
