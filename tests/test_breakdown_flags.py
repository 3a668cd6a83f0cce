"""Steps a loader flags: out of the steady-state window, and a flagged outlier is a named stall.

Every expected figure below is worked out by hand from the step times written in the test.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (fixture)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfu_toolkit.analysis import CATEGORIES, account, breakdown, mfu_summary
from mfu_toolkit.analysis.accounting import _flag_tokens
from mfu_toolkit.run import Run, RunMeta, save_run

ONE = RunMeta(model_flops_per_step=1.0, n_accelerators=1, peak_flops_per_accelerator=1.0)


def _run(durations: list[float], flags: list[object], meta: RunMeta | None = None, **cols: list) -> Run:
    """Job-level steps 0.. back to back with these durations and flags."""
    end = np.cumsum(durations)
    start = end - np.asarray(durations, float)
    data = {"step": list(range(len(durations))), "start_s": start, "end_s": end, "flag": flags, **cols}
    return Run.build(data, meta=meta or ONE)


def _identity(run: Run) -> dict[str, float]:
    """The categories sum to the wall time and none is negative; the table lists stall only when
    it is non-zero."""
    acc = account(run)
    w = acc.wall_s
    assert set(acc.seconds) == set(CATEGORIES)
    assert math.isclose(sum(acc.seconds.values()), w, rel_tol=1e-9, abs_tol=1e-9)
    for c, v in acc.seconds.items():
        assert v >= -1e-9 * max(w, 1.0), (c, v)
    table = breakdown(acc)
    assert ("stall" in set(table["category"])) == (acc.seconds["stall"] > 0)
    assert math.isclose(table["seconds"].sum(), w, rel_tol=1e-9, abs_tol=1e-9)
    return acc.seconds


# --------------------------------------------------------------------------------------------
# the window


def test_flagged_fast_step_in_the_middle_of_the_window_is_left_out():
    # A 20 s compile step, then 2 s steps with a 0.1 s asynchronous-dispatch artefact as step 5.
    # In the window: the ideal step is 2 s (the median). Had step 5 entered, the window's mean
    # (8 × 2 + 0.1) / 9 = 1.789 s would have capped the ideal: MFU 1 / 1.789 = 55.9 % not 50 %.
    d = [20.0, 2, 2, 2, 2, 0.1, 2, 2, 2, 2]
    f = ["compile", "", "", "", "", "async_dispatch", "", "", "", ""]
    run = _run(d, f)
    acc = account(run)
    win = acc.window.steps.set_index("step")
    assert not win.loc[5, "in_window"] and win.loc[5, "why"] == "flagged by the loader (async_dispatch)"
    assert win.loc[0, "why"] == "flagged by the loader (compile)"
    assert win["in_window"].sum() == 8
    assert acc.ideal_step_s == pytest.approx(2.0)
    assert mfu_summary(acc).steady_state_mfu == pytest.approx(0.5)
    assert "flagged" in acc.window.rule
    # the same run without flags: the compile step is warm-up, the fast step enters the window
    plain = account(_run(d, [""] * len(d)))
    assert plain.ideal_step_s == pytest.approx((8 * 2 + 0.1) / 9)
    assert "flagged" not in plain.window.rule
    _identity(run)


def test_flagged_steps_do_not_move_the_warmup_detector():
    # Steps 0-1 are flagged; the detector reads the rest (2.5, 2, 2, 2, 2, 2): one slow leading
    # step of warm-up. Reading the flagged 0.05 s steps first would have ended warm-up at once.
    d = [0.05, 0.05, 2.5, 2, 2, 2, 2, 2]
    f = ["async_dispatch", "async_dispatch", "", "", "", "", "", ""]
    acc = account(_run(d, f))
    assert acc.window.warmup_steps == {0: 1}
    why = acc.window.steps.set_index("step")["why"]
    assert why[2] == "warm-up" and why[0] == why[1] == "flagged by the loader (async_dispatch)"
    # warmup_steps=N counts the attempt's leading steps, flagged or not
    acc2 = account(_run(d, f), warmup_steps=3)
    assert acc2.window.steps.set_index("step")["why"][2] == "warm-up"
    assert acc2.window.steps["in_window"].sum() == 5


def test_several_flags_and_the_cells_that_are_no_flag():
    assert _flag_tokens("compile, outlier") == ("compile", "outlier")
    assert _flag_tokens("a;b|c d") == ("a", "b", "c", "d")
    assert _flag_tokens(True) == ("flagged",)
    for empty in ("", "  ", None, float("nan"), pd.NA, False, 0, np.float64("nan")):
        assert _flag_tokens(empty) == (), empty
    assert _flag_tokens(2) == ("2",)
    # three kinds on three steps, two flags on one: all out of the window, named in `why`
    d = [9.0, 1, 1, 0.1, 1, 1, 7.0, 1, 1]
    f = ["compile", "", "", "async_dispatch", "", "", "outlier;profiler", None, np.nan]
    acc = account(_run(d, f))
    why = acc.window.steps.set_index("step")["why"]
    assert why[6] == "flagged by the loader (outlier,profiler)"
    assert acc.steps.set_index("step")["flag"][6] == "outlier,profiler"
    assert acc.window.steps["in_window"].sum() == 6
    # the outlier's 6 s above the 1 s ideal is a stall
    assert acc.seconds["stall"] == pytest.approx(6.0)
    _identity(_run(d, f))


def test_bool_flag_column_of_another_loader():
    d = [1.0, 1, 5, 1, 1, 1]
    acc = account(_run(d, [False, False, True, False, False, False]))
    assert acc.window.steps.set_index("step")["why"][2] == "flagged by the loader (flagged)"
    assert acc.ideal_step_s == pytest.approx(1.0)
    assert acc.seconds["stall"] == 0.0  # a bare flag is not an outlier: its excess stays jitter
    assert acc.seconds["jitter"] == pytest.approx(4.0)


def test_every_step_flagged_gives_no_steady_state_and_says_why():
    run = _run([30.0, 4.0, 5.0], ["compile", "outlier", "outlier"])
    acc = account(run)
    assert acc.window.n_steps == 0 and acc.rho is None and not acc.window.fallback
    assert "every useful timed step is flagged by the loader (2 outlier, 1 compile)" in acc.window.reason
    s = mfu_summary(acc)
    assert s.steady_state_mfu is None and s.end_to_end_mfu is None
    assert "every useful timed step is flagged" in s.reasons["steady_state_mfu"]
    sec = _identity(run)
    assert sec["ideal_compute"] == 0 and sec["stall"] == 0 and sec["jitter"] == pytest.approx(39.0)


def test_fallback_window_keeps_flagged_steps_out():
    # every unflagged step overlaps an eval: the fallback takes them (not the flagged one)
    steps = {"step": [0, 1, 2], "start_s": [0.0, 2.0, 4.0], "end_s": [2.0, 4.0, 5.0], "flag": ["", "", "outlier"]}
    run = Run.build(steps, [{"kind": "eval", "start_s": 1.0, "end_s": 3.0}], ONE)
    acc = account(run)
    assert acc.window.fallback
    assert acc.window.steps["in_window"].tolist() == [True, True, False]
    assert "the loader did not flag" in acc.window.reason
    _identity(run)


# --------------------------------------------------------------------------------------------
# the stall category


def test_outlier_above_the_ideal_step_is_a_stall_with_its_steps_named():
    # 1 s steps with a 10 s outlier (a profiler capture) at step 3: ideal 1 s, stall 9 s, no jitter
    d = [1.0, 1, 1, 10, 1, 1, 1]
    run = _run(d, ["", "", "", "outlier", "", "", ""])
    acc = account(run)
    assert acc.seconds["stall"] == pytest.approx(9.0)
    assert acc.seconds["jitter"] == pytest.approx(0.0, abs=1e-12)
    assert acc.seconds["ideal_compute"] == pytest.approx(7.0)
    assert acc.steps.set_index("step")["stall_s"].tolist() == pytest.approx([0, 0, 0, 9, 0, 0, 0])
    assert "attempt 0 step 3 (outlier): 10 s long, 9 s above the ideal step" in acc.details["stall"]
    table = breakdown(acc)
    assert table["category"].tolist()[:2] == ["ideal_compute", "stall"]
    assert table.attrs["details"]["stall"] == acc.details["stall"]
    # end-to-end MFU 7 steps / 16 s; steady 100 %; the stall row's MFU after: 7 / (16 - 9)
    assert table.set_index("category").loc["stall", "mfu_after"] == pytest.approx(1.0)
    _identity(run)


def test_run_without_flagged_outliers_has_no_stall_row():
    run = _run([1.0, 1, 1, 10, 1], [""] * 5)
    table = breakdown(run)
    assert "stall" not in set(table["category"]) and account(run).details == {}
    assert table.set_index("category").loc["jitter", "seconds"] == pytest.approx(9.0)


def test_stall_never_exceeds_the_time_above_the_ideal():
    # 5 s steps, a flagged 0.1 s fast step (its work was done elsewhere) and a 50 s outlier: the
    # other steps sum 4.9 s below their ideal, so the time above the ideal is 45 - 4.9 = 40.1 s,
    # and that is the stall (the outlier's own 45 s excess scaled down); jitter is 0, not -4.9.
    d = [5.0, 0.1, 5, 5, 5, 5, 50]
    run = _run(d, ["", "async_dispatch", "", "", "", "", "outlier"])
    acc = account(run)
    assert acc.ideal_step_s == pytest.approx(5.0)
    assert acc.seconds["stall"] == pytest.approx(40.1)
    assert acc.seconds["jitter"] == pytest.approx(0.0, abs=1e-9)
    _identity(run)


def test_per_rank_flags_of_another_format_and_a_saved_run(tmp_path):
    # Two ranks; rank 1 flags step 2 only: the job-level step is flagged. Clean step = median of
    # the ranks' busy time (the slower rank's extra is stragglers, not stall).
    rows = []
    for k, (a, b) in enumerate([(1.0, 1.0), (1.0, 1.0), (6.0, 6.0), (1.0, 1.0), (1.0, 1.0)]):
        t0 = 0.0 if k == 0 else rows[-1]["end_s"]
        rows += [{"step": k, "rank": 0, "start_s": t0, "end_s": t0 + a, "flag": ""},
                 {"step": k, "rank": 1, "start_s": t0, "end_s": t0 + b, "flag": "outlier" if k == 2 else ""}]
    run = Run.build(pd.DataFrame(rows), meta=ONE)
    acc = account(run)
    assert acc.steps.set_index("step")["flag"][2] == "outlier"
    assert acc.seconds["stall"] == pytest.approx(5.0)
    back = save_run(run, tmp_path / "r.parquet")
    from mfu_toolkit.io import load_run

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = load_run(back)
    assert account(again).seconds["stall"] == pytest.approx(5.0)
    _identity(run)


# --------------------------------------------------------------------------------------------
# property: the identity holds with any flags


@st.composite
def flagged_runs(draw) -> Run:
    n = draw(st.integers(1, 12))
    d = draw(st.lists(st.floats(0.0, 20.0), min_size=n, max_size=n))
    f = draw(st.lists(st.sampled_from(["", "", "", "compile", "async_dispatch", "outlier", "outlier,compile", None,
                                       True]),
                      min_size=n, max_size=n))
    lost_tail = draw(st.integers(0, 2))
    run = _run(d, f, RunMeta())  # no FLOPs: steps of any length are fine (no MFU above 100 %)
    if lost_tail and n > lost_tail:  # a restart redoes the last steps
        s = run.steps
        redo = s.tail(lost_tail).assign(attempt=1, start_s=lambda x: x["start_s"] + 100.0,
                                        end_s=lambda x: x["end_s"] + 100.0)
        run = Run.build(pd.concat([s, redo], ignore_index=True))
    return run


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flagged_runs())
def test_property_flags_keep_the_identity(run):
    sec = _identity(run)
    acc = account(run)
    flags = acc.steps["flag"].to_numpy()
    assert not (acc.steps["in_window"].to_numpy(bool) & (flags != "")).any()
    assert sec["stall"] <= float(acc.steps["clean_s"].sum()) + 1e-9


# --------------------------------------------------------------------------------------------
# the real MaxText runs with profiler-length steps


@pytest.mark.parametrize("name", ["AI-Hypercomputer_maxtext_run_llama2_pre_pgo_h100x8.sh",
                                  "AI-Hypercomputer_maxtext_run_llama2_pgo_h100x8_nsys.sh"])
def test_real_outlier_steps_are_a_named_stall(realdata, name):  # noqa: F811
    from mfu_toolkit.io import load_run

    path = realdata / "maxtext" / name
    raw = [(int(k), float(v)) for k, v in re.findall(r"completed step: (\d+), seconds: ([0-9.]+)", path.read_text())]
    secs = dict(raw)
    # By hand, the loader's documented rule: after step 0 (compile), a step over three times the
    # median of the others is an outlier: step 1 (192.846 s before PGO, 176.734 s with it) and
    # step 6 (the nsys capture, 18.0 / 19.5 s).
    mid = float(np.median([v for k, v in raw[1:]]))
    outliers = [k for k, v in raw[1:] if v > 3 * mid]
    assert outliers == [1, 6]
    ideal = float(np.median([v for k, v in raw[1:] if k not in outliers]))  # the window's median step
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = load_run(path, accelerator="H100")
    acc = account(run)
    assert acc.ideal_step_s == pytest.approx(ideal, rel=1e-9)
    stall = acc.steps.set_index("step")["stall_s"]
    for k in outliers:
        assert stall[k] == pytest.approx(secs[k] - ideal, rel=1e-9)
    assert acc.seconds["stall"] == pytest.approx(sum(secs[k] - ideal for k in outliers), rel=1e-9)
    # jitter is what is left above the ideal: the compile step and the unflagged slow steps
    rest = sum(v - ideal for k, v in raw if k not in outliers)
    assert acc.seconds["jitter"] == pytest.approx(rest, rel=1e-9)
    assert "attempt 0 step 1 (outlier)" in acc.details["stall"] and "attempt 0 step 6 (outlier)" in acc.details["stall"]
    table = breakdown(acc)
    assert table["category"].tolist()[1] == "stall"  # the largest loss of these runs
    _identity(run)
