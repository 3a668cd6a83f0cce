"""The waterfall's exposed-communication slice: booked where a run states ``exposed_comm_s`` per step,
absent (unknown, not zero) elsewhere, the categories still summing to the wall time; and every front end
(table, text, JSON, plot, scorecard) saying which.

Numbers are pinned to hand computations on small step tables (each written out below) and, on the real
traces of ``MFU_REALDATA`` (kineto/, nsys/, xplane/), to the sum of ``exposed_comm_s`` over the steps
computed here from ``run.steps`` itself, independently of the accounting.
"""

from __future__ import annotations

import json
import math
import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest
from _realdata import files, realdata  # noqa: F401  (fixture)

from mfu_toolkit.analysis import CATEGORIES, account, breakdown, build_answer, scorecard
from mfu_toolkit.analysis.waterfall import exposed_comm_note
from mfu_toolkit.io import load_run
from mfu_toolkit.plots import waterfall
from mfu_toolkit.render import answer_dict, answer_text
from mfu_toolkit.run import Run, RunMeta

matplotlib.use("Agg")


def _steps(exposed: bool = True) -> pd.DataFrame:
    # two steps of 10 s on three ranks. Step 1: compute 6, 6, 8 s (rank 2 holds the others 8 - 6 = 2 s),
    # exposed communication 3, 3, 1 s; step 2: compute 6 s and exposed 2 s on every rank.
    rows = {"attempt": [0] * 6, "step": [1, 1, 1, 2, 2, 2], "rank": [0, 1, 2] * 2,
            "start_s": [0.0] * 3 + [10.0] * 3, "end_s": [10.0] * 3 + [20.0] * 3,
            "compute_s": [6.0, 6.0, 8.0, 6.0, 6.0, 6.0]}
    if exposed:
        rows["exposed_comm_s"] = [3.0, 3.0, 1.0, 2.0, 2.0, 2.0]
    return pd.DataFrame(rows)


def _sec(df: pd.DataFrame) -> dict[str, float]:
    return dict(zip(df["category"], df["seconds"], strict=True))


def _sums(df: pd.DataFrame, wall: float) -> None:
    assert math.isclose(float(df["seconds"].sum()), wall, rel_tol=1e-12, abs_tol=1e-12 * max(wall, 1.0))


# --------------------------------------------------------------------------------------------
# hand computations on self-made step tables


def test_hand_computed_slice_on_three_ranks():
    # by hand: step 1 median exposed 3 s less the 2 s straggler wait already booked -> 1 s; step 2 -> 2 s.
    # clean times (the typical rank's step less the straggler wait): step 1 10 - 2 = 8 s, step 2 10 s; the
    # ideal step = median(8, 10) = 9 s (the mean, 9, caps nothing): steady state as without the column.
    # Without the exposed communication: 8 - 1 = 7 s and 10 - 2 = 8 s, median 7.5 s. So ideal_compute =
    # 2 x 7.5 = 15 s, exposed_comm = 2 x (9 - 7.5) = 3 s; jitter = 20 - 2 x 9 - 2 = 0; 15 + 3 + 2 = 20 s.
    run = Run.build(_steps(), meta=RunMeta(n_accelerators=3))
    acc = account(run)
    df = breakdown(acc)
    sec = _sec(df)
    assert sec["exposed_comm"] == pytest.approx(3.0) and sec["stragglers"] == pytest.approx(2.0)
    assert sec["ideal_compute"] == pytest.approx(15.0) and sec["jitter"] == pytest.approx(0.0, abs=1e-12)
    _sums(df, 20.0)
    assert list(acc.steps["exposed_comm_s"]) == pytest.approx([1.0, 2.0])
    assert acc.ideal_step_s == pytest.approx(9.0) and acc.goodput == pytest.approx(18.0 / 20.0)
    note = df.attrs["exposed_comm"]
    assert note["stated"] and note["seconds"] == pytest.approx(3.0) and "2 of 2" in note["basis"]
    # the row comes last: part of the steady state. Efficiency after it is the step with it hidden, 9 / 7.5
    assert list(df["category"])[-1] == "exposed_comm"
    assert df["efficiency_after"].iloc[-2] == 1.0 and df["efficiency_after"].iloc[-1] == pytest.approx(9.0 / 7.5)


def test_the_steady_state_is_the_same_with_or_without_the_column():
    # the same run read from a log that does not time communication gets the same steady-state MFU,
    # window and goodput: exposed communication is carved out of the ideal step, never removed from it
    meta = RunMeta(n_accelerators=3, model_flops_per_step=3e15, peak_flops_per_accelerator=1e15)
    with_col = build_answer(Run.build(_steps(), meta=meta))
    without = build_answer(Run.build(_steps(exposed=False), meta=meta))
    assert with_col.headline == without.headline
    assert with_col.summary["steady_state_mfu"] == pytest.approx(3e15 / 9.0 / 3e15)  # FLOPs / ideal step / (N x P)
    bd = with_col.breakdown
    assert float(bd["mfu_after"].iloc[-1]) == pytest.approx(3e15 / 7.5 / 3e15)  # the step with it hidden


def test_without_the_column_the_slice_is_absent_and_said_unknown():
    # the same steps without exposed_comm_s: clean 8 and 10 s, ideal step = median 9 s (the mean, 9, caps
    # nothing) -> ideal_compute 18 s, stragglers 2 s; no exposed_comm row, and attrs say it is unknown
    for steps in (_steps(exposed=False), _steps().assign(exposed_comm_s=np.nan)):
        acc = account(Run.build(steps, meta=RunMeta(n_accelerators=3)))
        df = breakdown(acc)
        assert "exposed_comm" not in set(df["category"]) and "exposed_comm_s" not in acc.steps.columns
        assert _sec(df)["ideal_compute"] == pytest.approx(18.0)
        note = df.attrs["exposed_comm"]
        assert note == exposed_comm_note(acc) and note["stated"] is False and note["seconds"] is None
        assert "unknown" in note["reason"] and "ideal_compute" in note["reason"]
        assert set(acc.seconds) == set(CATEGORIES)  # the key is kept (0 s) so the seconds still sum to W
        _sums(df, 20.0)


def test_a_step_no_rank_states_books_nothing_and_the_cap_holds():
    # step 2 states nothing (NaN on every rank): 0 s there; step 1 states 30 s on every rank, more than the
    # 10 - 2 = 8 s left after the straggler wait: capped at 8 s (less the 2 s wait first: 28 s -> 8 s).
    # Clean times less it: 0 and 10 s, median 5 s (the mean, 5, caps nothing); the ideal step stays
    # median(8, 10) = 9 s, so the slice is 2 x (9 - 5) = 8 s
    steps = _steps().assign(exposed_comm_s=[30.0, 30.0, 30.0, np.nan, np.nan, np.nan])
    acc = account(Run.build(steps))
    assert list(acc.steps["exposed_comm_s"]) == pytest.approx([8.0, 0.0])
    df = breakdown(acc)
    assert _sec(df)["exposed_comm"] == pytest.approx(8.0) and "1 of 2" in df.attrs["exposed_comm"]["basis"]
    _sums(df, 20.0)


@pytest.mark.parametrize("seed", range(12))
def test_random_step_tables_sum_to_the_wall_time(seed):
    # restarts (steps redone), data waits, events and random exposed communication: the identity holds
    rng = np.random.default_rng(seed)
    n_steps, n_ranks = int(rng.integers(3, 30)), int(rng.integers(1, 5))
    rows, t = [], 0.0
    for attempt in range(2):
        for k in range(n_steps):
            span = float(rng.uniform(0.5, 2.0))
            for r in range(n_ranks):
                rows.append({"attempt": attempt, "step": k + attempt * n_steps // 2, "rank": r, "start_s": t,
                             "end_s": t + span * float(rng.uniform(0.9, 1.0)),
                             "data_wait_s": float(rng.uniform(0, 0.2)), "compute_s": float(rng.uniform(0.2, span)),
                             "exposed_comm_s": float(rng.uniform(0, span)) if rng.random() > 0.1 else np.nan})
            t += span
        t += 3.0
    events = [{"kind": "checkpoint_save", "start_s": 2.0, "end_s": 3.5}, {"kind": "init", "start_s": 0.0,
                                                                           "end_s": 0.4}]
    run = Run.build(pd.DataFrame(rows), events=events)
    df = breakdown(run)
    _sums(df, run.t1 - run.t0)
    assert (df["seconds"] >= -1e-9 * (run.t1 - run.t0)).all()
    assert "exposed_comm" in set(df["category"])


# --------------------------------------------------------------------------------------------
# the real traces


def _independent(run: Run) -> float:
    """Σ over (attempt, step) of the median over ranks of exposed_comm_s, from the step rows alone."""
    s = run.steps
    return float(s.groupby(["attempt", "step"])["exposed_comm_s"].median().sum())


def _steady_part(run: Run) -> float:
    """ideal_compute of the same run with its exposed_comm_s column dropped (the whole ideal step)."""
    bare = Run.build(run.steps.drop(columns=["exposed_comm_s"]), meta=run.meta, events=run.events)
    return _sec(breakdown(bare))["ideal_compute"]


def test_kineto_traces_book_their_exposed_communication(realdata):  # noqa: F811
    # one rank per file: no straggler wait, so the slice is the steps' own exposed_comm_s summed
    # (HTA_nccl_parser_config: 3 steps of rank 0 of 2; trace_filter: 2 steps of ranks 0 and 1 of 128;
    # the MI250 toy trace: 2 steps, no communication kernel: stated as 0 s, a row of 0 s, not unknown)
    seen = {}
    for path in files(realdata / "kineto", "*.json.gz"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(path)
        acc = account(run)
        df = breakdown(acc)
        _sums(df, acc.wall_s)
        assert "exposed_comm" in set(df["category"]) and df.attrs["exposed_comm"]["stated"]
        sec = _sec(df)
        # the slice and the compute left are the whole ideal step of the run read without the column
        assert sec["ideal_compute"] + sec["exposed_comm"] == pytest.approx(_steady_part(run), rel=1e-12)
        # one rank per file (no straggler wait): the slice is at most the steps' own exposed time
        assert 0.0 <= sec["exposed_comm"] <= _independent(run) * (1 + 1e-12)
        seen[path.name] = sec["exposed_comm"]
    assert seen["HTA_amd_mi250_minitoy_ROCm6_2_kineto.json.gz"] == 0.0
    assert seen["HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz"] > 0.03
    assert len(seen) == 4


def test_nsys_exports_with_op_ranges_as_steps(realdata):  # noqa: F811
    # the exports name no step ranges (steps are never invented): no steps, no slice, nothing to sum. With
    # NVTX op ranges as steps (the loader's step_pattern), the ranges of two processes overlap in time and a
    # step's time goes to the earliest: the slice is at most what the steps state, and the identity holds
    for path in files(realdata / "nsys", "*.sqlite"):
        bare = load_run(path)
        assert len(bare.steps) == 0 and "exposed_comm" not in set(breakdown(bare)["category"])
        run = load_run(path, step_pattern=r"aten::to, op_id = (\d+)")
        df = breakdown(run)
        _sums(df, run.t1 - run.t0)
        sec = _sec(df)
        assert 0 < sec["exposed_comm"] <= _independent(run) + 1e-12
        assert sec["ideal_compute"] + sec["exposed_comm"] == pytest.approx(_steady_part(run), rel=1e-12)


def test_xplane_profiles_with_host_events_as_steps(realdata):  # noqa: F811
    # the MI300 microbenchmarks run no collective: with PjitFunction host events as steps the slice is
    # stated and 0 s (the steps' exposed_comm_s are all 0), and the identity holds
    for path in files(realdata / "xplane", "*.xplane.pb"):
        run = load_run(path, step_pattern=r"PjitFunction\(.*\)")
        assert len(run.steps) and _independent(run) == 0.0
        df = breakdown(run)
        _sums(df, run.t1 - run.t0)
        assert _sec(df)["exposed_comm"] == 0.0 and df.attrs["exposed_comm"]["stated"]


# --------------------------------------------------------------------------------------------
# the front ends


def test_text_json_scorecard_and_plot_say_which():
    stated = Run.build(_steps(), meta=RunMeta(n_accelerators=3))
    absent = Run.build(_steps(exposed=False), meta=RunMeta(n_accelerators=3))
    for run, has in ((stated, True), (absent, False)):
        answer = build_answer(run)
        text = answer_text(answer, interface="cli")
        assert ("exposed_comm" in text) is has
        doc = json.loads(json.dumps(answer_dict(answer, interface="cli")))
        assert doc["exposed_comm"]["stated"] is has
        assert (doc["exposed_comm"]["seconds"] == pytest.approx(3.0)) if has else doc["exposed_comm"]["seconds"] is None
        assert ("exposed_comm" in {r["category"] for r in doc["breakdown"]}) is has
        assert ("exposed_comm_share" in set(scorecard(run)["metric"])) is has
        ax = waterfall(breakdown(run))
        # part of the steady state, not a loss: the hatched top of the ideal-compute bar, labelled beside it
        assert "exposed communication" not in [t.get_text() for t in ax.get_xticklabels()]
        assert any("exposed\ncommunication" in t.get_text() for t in ax.texts) is has
        matplotlib.pyplot.close(ax.figure)
    share = scorecard(stated).set_index("metric").loc["exposed_comm_share", "value"]
    assert share == pytest.approx(3.0 / 20.0)


# --------------------------------------------------------------------------------------------
# the links collectives are compared with: one entry (account), requests said per interface


def _collectives() -> Run:
    # one AllReduce of 2,360,832 B in 5,663 µs among 3 ranks on 3 nodes (the real NCCL Inspector line's sizes)
    table = pd.DataFrame({"coll": ["AllReduce"], "comm_name": ["c0"], "rank": [0], "n_ranks": [3], "nnodes": [3],
                          "msg_size_bytes": [2_360_832.0], "exec_time_s": [5.663e-3]})
    return Run.build(tables={"collectives": table})


def test_link_and_nic_enter_through_account():
    from mfu_toolkit import interconnect
    from mfu_toolkit.analysis.accounting import accounted
    from mfu_toolkit.inputs import InputError, check_links

    run = _collectives()
    assert build_answer(run).communication["collectives"][0]["comm_efficiency"] is None
    row = build_answer(account(run, nic="NDR")).communication["collectives"][0]
    # by hand: 2,360,832 B / 5.663 ms x 2(3-1)/3 = 555.85 MB/s against NDR's 400 Gb/s = 50 GB/s each way
    assert row["link"] == "InfiniBand NDR" and row["comm_efficiency"] == pytest.approx(2_360_832 / 5.663e-3 * 4 / 3
                                                                                      / 50e9, rel=1e-12)
    assert build_answer(run, nic="NDR").communication == build_answer(account(run, nic="NDR")).communication
    with pytest.raises(interconnect.UnknownLinkError, match=r"^nic='XDR9': .*close matches"):
        account(run, nic="XDR9")
    with pytest.raises(TypeError, match="nic cannot be applied to an Accounting"):
        accounted(account(run), nic="NDR")
    with pytest.raises(InputError, match=r"^NIC=XDR9: not a link of the interconnect table .*InfiniBand XDR"):
        check_links(nic="XDR9", interface="make")
    assert check_links(link="NVLink4", nic=None, interface="cli") == ("NVLink4", None)


def test_link_requests_are_said_in_each_interfaces_terms():
    from mfu_toolkit.analysis.communication import LINK_ASKS, link_request
    from mfu_toolkit.render.vocabulary import phrase
    from mfu_toolkit.run import InputRequest

    for asks in LINK_ASKS:
        for given in (False, True):
            request = link_request("why", asks, link_given=given)
            assert phrase(request, "python") == str(request)  # the library's own sentence is Python's
            cli, make = phrase(request, "cli"), phrase(request, "make")
            assert "=" not in cli and "--" in cli and "--" not in make and ("NIC=" in make or "LINK=" in make)
    reason = comm_efficiency_reason(_collectives())
    assert isinstance(reason, InputRequest) and reason.asks == ("nic",)
    assert phrase(reason, "cli").endswith("; give --nic NAME (e.g. --nic NDR or --nic 400GbE)")
    text = answer_text(build_answer(_collectives()), interface="make")
    assert "give NIC=NAME (e.g. NIC=NDR or NIC=400GbE)" in " ".join(text.split())


def comm_efficiency_reason(run: Run):
    from mfu_toolkit.analysis import comm_efficiency

    return comm_efficiency(run)["reason"].iloc[0]
