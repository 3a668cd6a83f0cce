"""The replay explorer's pure function (widgets.replay_scenario), its table, figure and widget.

Expected values are replays of a hand trace worked out in the comments: one data-parallel rank,
two pipeline stages, two microbatches in 1F1B order, transfers of zero length.
"""

from __future__ import annotations

import matplotlib
import pytest
from _replay import hand_trace

from mfu_toolkit import plots, widgets
from mfu_toolkit.analysis import straggler_whatif

matplotlib.use("Agg")

# the hand trace of tests/_replay.py: a step takes 15 s. Ideal: F at the mean (1+1+2+2)/4 = 1.5 s,
# B at 3 s -> 13.5 s (replayed the same way).


@pytest.fixture(scope="module")
def hand():
    r = straggler_whatif(hand_trace())
    assert r.available, r.notes
    return r


def test_slower_worker_replays_by_hand(hand):
    # stage 0 twice as slow (F 2 s, B 4 s): s0 F0 [0,2] F1 [2,4]; s1 F0 [2,4] B0 [4,8]; s0 B0 [8,12];
    # s1 F1 [8,10] B1 [10,14]; s0 B1 [14,18] -> 18 s against the same 13.5 s ideal
    sc = widgets.replay_scenario(hand, job="hand", target="worker", dp_rank=0, stage=0, factor=2.0)
    assert sc.actual_step_s == pytest.approx(18.0)
    assert sc.ideal_step_s == pytest.approx(13.5)
    assert sc.slowdown == pytest.approx(18 / 13.5)
    assert sc.base_slowdown == pytest.approx(15 / 13.5)
    assert sc.headline == ("hand: worker dp_rank 0, stage 0 at 2.00× its traced compute → replayed step 18 s vs "
                           "ideal 13.5 s: S = 1.333 (as traced 1.111; step +20.0%)")  # 18 / 15 - 1 = 20 %
    assert sc.waterfall["seconds"].sum() == pytest.approx(18.0)
    assert sc.base_waterfall["seconds"].sum() == pytest.approx(15.0)


def test_faster_stage_replays_by_hand(hand):
    # stage 1 at half its time (F 1 s, B 2 s): s0 F0 [0,1] F1 [1,2]; s1 F0 [1,2] B0 [2,4]; s0 B0 [4,6];
    # s1 F1 [4,5] (after its B0) B1 [5,7]; s0 B1 [7,9] -> 9 s: S = 9 / 13.5, below 1 (work was removed)
    sc = widgets.replay_scenario(hand, job="hand", target="stage", stage=1, factor=0.5)
    assert sc.actual_step_s == pytest.approx(9.0)
    assert sc.slowdown == pytest.approx(9 / 13.5)
    assert sc.dp_rank is None
    assert sc.headline.startswith("hand: stage 1 (all its workers) at 0.50× its traced compute → replayed step 9 s")


def test_factor_one_is_the_job_as_traced(hand):
    sc = widgets.replay_scenario(hand, target="stage", stage=0, factor=1.0)
    assert sc.actual_step_s == pytest.approx(15.0) and sc.slowdown == pytest.approx(sc.base_slowdown)


def test_table_rows_and_changes(hand):
    t = widgets.replay_table(widgets.replay_scenario(hand, dp_rank=0, stage=0, factor=2.0))
    assert list(t.columns) == ["as traced", "what-if (2.00×)", "change"]
    assert t.loc["replayed step"].tolist() == ["15 s", "18 s", "+3 s"]
    # S: 15 / 13.5 = 1.111 -> 18 / 13.5 = 1.333, a change of 0.2222
    assert t.loc["S (replayed / ideal)"].tolist() == ["1.111", "1.333", "+0.222"]
    assert t.loc["ideal step (balanced)"].tolist() == ["13.5 s", "13.5 s", "+0 s"]


def test_bad_options_name_the_parameter(hand):
    with pytest.raises(ValueError, match=r"target must be one of worker, stage; got 'rank'"):
        widgets.replay_scenario(hand, target="rank")
    with pytest.raises(ValueError, match=r"dp_rank must be given for target='worker'; got None"):
        widgets.replay_scenario(hand, target="worker", stage=0)
    with pytest.raises(ValueError, match=r"factor must be a number in \[0.1, 100\]; got 0"):
        widgets.replay_scenario(hand, target="stage", stage=0, factor=0)
    unavailable = straggler_whatif(hand_trace().drop(columns=["stage"]))
    with pytest.raises(ValueError, match="result must be a replayed trace"):
        widgets.replay_scenario(unavailable, target="stage")


def test_figure_draws_both_waterfalls(hand):
    sc = widgets.replay_scenario(hand, dp_rank=0, stage=0, factor=2.0)
    fig = widgets.replay_figure(sc)
    ax = fig.axes[0]
    heights = [p.get_height() for p in ax.patches]
    # 4 parts + the total, hollow (as traced) then filled (what-if); the totals are 15 s and 18 s
    assert len(heights) == 2 * (len(sc.waterfall) + 1)
    assert heights[len(sc.waterfall)] == pytest.approx(15.0) and heights[-1] == pytest.approx(18.0)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["as traced: S = 1.111", "what-if (2.00×): S = 1.333"]
    assert widgets.figure_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_replay_waterfall_checks_its_tables(hand):
    wf = hand.waterfall()
    with pytest.raises(ValueError, match=r"table must have columns \['component', 'seconds'\]"):
        plots.replay_waterfall(wf.rename(columns={"seconds": "s"}))
    with pytest.raises(ValueError, match="baseline must have the same components"):
        plots.replay_waterfall(wf, baseline=wf.iloc[:2])
    with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None; got str"):
        plots.replay_waterfall(wf, ax="left")
    ax = plots.replay_waterfall(wf)
    assert ax.patches[-1].get_height() == pytest.approx(15.0)  # the replayed step as traced


def _controls(box):
    left, right = box.children[0].children
    return left.children[0], left.children[1], right.children[0], right.children[1], right.children[2]


def test_explorer_follows_its_controls(hand):
    pytest.importorskip("ipywidgets")
    two = straggler_whatif(hand_trace(dp=2))  # two identical data-parallel replicas: same times
    box = widgets.replay_explorer({"hand": hand, "two": two}, job="hand", factor=1.0)
    fac, tg, jb, dp, sg = _controls(box)
    headline = box.children[1]
    assert "S = 1.111 (as traced 1.111" in headline.value
    fac.value = 2.0
    expected = widgets.replay_scenario(hand, job="hand", dp_rank=0, stage=hand.slowest_workers[0][1], factor=2.0)
    assert widgets.explorer_headline_html(expected.headline) == headline.value
    assert len(box.children[2].outputs) == 2  # one chart and one table, replaced, never appended
    jb.value = "two"
    assert list(dp.options) == [0, 1] and "two: worker dp_rank" in headline.value
    tg.value = "stage"
    assert dp.disabled and "two: stage" in headline.value
    assert len(box.children[2].outputs) == 2
