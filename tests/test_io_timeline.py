"""The shared interval expander (mfu_toolkit.io.timeline), each expected value worked out by hand."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mfu_toolkit.io import rules, timeline
from mfu_toolkit.io.reading import Reader


def _reader(tmp_path: Path) -> Reader:
    p = tmp_path / "x.log"
    p.write_text("x\n")
    return Reader(p, "test")


def test_log_interval_most_common_gap() -> None:
    # steps 10, 20, 30, 35: gaps 10, 10, 5 -> 10 is most common
    assert timeline.log_interval(np.array([10, 20, 30, 35])) == 10


def test_log_interval_tie_smallest() -> None:
    # steps 5, 10, 20, 25, 35: gaps 5, 10, 5, 10 -> 5 and 10 twice each -> the smallest, 5
    assert timeline.log_interval(np.array([5, 10, 20, 25, 35])) == 5


def test_log_interval_given_wins() -> None:
    # the log states 7: the gaps (10, 10) are not consulted
    assert timeline.log_interval(np.array([10, 20, 30]), given=7) == 7


def test_log_interval_restart_gap_ignored() -> None:
    # attempt 0 steps 10, 20; attempt 1 steps 5, 8, 11: gaps within attempts 10, 3, 3 -> 3;
    # the 20 -> 5 step across the restart (gap -15) is no gap
    steps = np.array([10, 20, 5, 8, 11])
    assert timeline.log_interval(steps, np.array([0, 0, 1, 1, 1])) == 3
    # without attempts the negative gap is still ignored (only positive gaps count): 10, 3, 3 -> 3
    assert timeline.log_interval(steps) == 3


def test_log_interval_none_when_no_gap_qualifies() -> None:
    # one record per attempt, or every gap over MAX_LOG_INTERVAL -> None (the caller decides)
    assert timeline.log_interval(np.array([10])) is None
    assert timeline.log_interval(np.array([10, 20]), np.array([0, 1])) is None
    assert timeline.log_interval(np.array([0, rules.MAX_LOG_INTERVAL + 1])) is None
    # exactly MAX_LOG_INTERVAL is still an interval
    assert timeline.log_interval(np.array([0, rules.MAX_LOG_INTERVAL])) == rules.MAX_LOG_INTERVAL


def test_expand_even_from_timestamps() -> None:
    # steps printed at 10, 20, 30, each interval 5 s long (0..5, 5..10, 10..15), 10 steps each
    # -> rows 1..30, 0.5 s each, row k starting at (k - 1) * 0.5
    ex = timeline.expand(np.array([10, 20, 30]), np.array([10, 10, 10]), np.array([10, 10, 10]),
                         np.array([0.0, 5.0, 10.0]), place="even", end=np.array([5.0, 10.0, 15.0]))
    assert ex.step.tolist() == list(range(1, 31))
    np.testing.assert_allclose(ex.share, 0.5)
    np.testing.assert_allclose(ex.start, np.arange(30) * 0.5)
    assert np.flatnonzero(ex.logged).tolist() == [9, 19, 29]  # steps 10, 20, 30 printed the lines
    assert ex.record.tolist() == [0] * 10 + [1] * 10 + [2] * 10


def test_expand_duration_spreads_the_mean() -> None:
    # steps printed at 10, 20, 30 with a mean of 0.5 s per step (5 s per line), back to back
    # from 0 -> begins 0, 5, 10 -> rows 1..30, 0.5 s each
    ex = timeline.expand(np.array([10, 20, 30]), np.array([10, 10, 10]), np.array([10, 10, 10]),
                         np.array([0.0, 5.0, 10.0]), place="duration", share=np.array([0.5, 0.5, 0.5]))
    assert ex.step.tolist() == list(range(1, 31))
    np.testing.assert_allclose(ex.start, np.arange(30) * 0.5)
    np.testing.assert_allclose(ex.share, 0.5)


def test_expand_gap_too_long_kept_as_one_row() -> None:
    # step 4 covers 4 steps in 0..4 s (1 s each); step 200004 covers 200000 steps in 4..24 s:
    # too long, kept as 1 row -> its last step's share 20 / 200000 = 1e-4 s, at 24 - 1e-4 .. 24
    ex = timeline.expand(np.array([4, 200_004]), np.array([4, 200_000]), np.array([4, 1]),
                         np.array([0.0, 4.0]), place="even", end=np.array([4.0, 24.0]))
    assert ex.step.tolist() == [1, 2, 3, 4, 200_004]
    np.testing.assert_allclose(ex.start, [0.0, 1.0, 2.0, 3.0, 24.0 - 1e-4])
    np.testing.assert_allclose(ex.share, [1.0, 1.0, 1.0, 1.0, 1e-4])
    assert ex.logged.tolist() == [False, False, False, True, True]
    # the same record placed from a duration (1e-4 s per step from 4 s): the last step starts
    # at 4 + (200000 - 1) * 1e-4 = 23.9999
    ex = timeline.expand(np.array([200_004]), np.array([200_000]), np.array([1]), np.array([4.0]),
                         place="duration", share=np.array([1e-4]))
    np.testing.assert_allclose(ex.start, [23.9999])


def test_expand_restart_rows_per_attempt() -> None:
    # attempt 0 prints step 4 (4 steps, 0..2 s); after a restart attempt 1 prints step 2 (2 steps,
    # 10..11 s): rows are steps 1, 2, 3, 4, then 1, 2 again, 0.5 s each
    ex = timeline.expand(np.array([4, 2]), np.array([4, 2]), np.array([4, 2]), np.array([0.0, 10.0]),
                         place="even", end=np.array([2.0, 11.0]))
    assert ex.step.tolist() == [1, 2, 3, 4, 1, 2]
    np.testing.assert_allclose(ex.start, [0.0, 0.5, 1.0, 1.5, 10.0, 10.5])
    assert ex.record.tolist() == [0, 0, 0, 0, 1, 1]


def test_expand_origin_subtracted() -> None:
    # an epoch clock: 1e9 .. 1e9 + 2 for 2 steps, origin 1e9 -> starts 0, 1
    ex = timeline.expand(np.array([2]), np.array([2]), np.array([2]), np.array([1e9]), place="even",
                         end=np.array([1e9 + 2]), origin=1e9)
    assert ex.start.tolist() == [0.0, 1.0]


def test_expand_bad_place() -> None:
    with pytest.raises(ValueError):
        timeline.expand(np.array([1]), np.array([1]), np.array([1]), np.array([0.0]), place="even")
    with pytest.raises(ValueError):
        timeline.expand(np.array([1]), np.array([1]), np.array([1]), np.array([0.0]), place="duration")


def test_within_budget(tmp_path: Path) -> None:
    reader = _reader(tmp_path)
    token = rules.start_row_budget(0)  # budget: MIN_EXPANDED_ROWS rows
    try:
        # 3 records of 10 steps: 30 - 3 = 27 extra rows, within the budget -> unchanged
        assert timeline.within_budget(np.array([10, 10, 10]), reader).tolist() == [10, 10, 10]
        # 2 records of MIN_EXPANDED_ROWS steps: 2 * MIN - 2 extra rows > what is left -> 1 row each, noted
        big = rules.MIN_EXPANDED_ROWS
        assert timeline.within_budget(np.array([big, big]), reader).tolist() == [1, 1]
        assert any("log intervals not expanded" in n for n in reader.report.notes)
        # nothing to add (every record one row): no request, unchanged
        assert timeline.within_budget(np.array([1, 1]), reader).tolist() == [1, 1]
        assert timeline.within_budget(np.array([], dtype=np.int64), reader).tolist() == []
    finally:
        rules.end_row_budget(token)


# --- attempts: which launch each record belongs to -------------------------------------------


def test_attempts_a_step_that_does_not_increase_opens_one() -> None:
    # steps 1 2 3 | 3 4 | 2 3 10 | 1: the repeated 3, the 2 after 4 and the 1 after 10 each open an attempt
    steps = np.array([1, 2, 3, 3, 4, 2, 3, 10, 1])
    att = timeline.attempts(steps, resets="not_increasing")
    assert att.tolist() == [0, 0, 0, 1, 1, 2, 2, 2, 3]
    assert att.dtype == np.int64
    assert timeline.attempts(steps).tolist() == att.tolist()  # the default


def test_attempts_back_leaves_an_equal_step_in_its_attempt() -> None:
    # the same steps; an equal step (3 after 3) stays, only 2 after 4 and 1 after 10 go back
    steps = np.array([1, 2, 3, 3, 4, 2, 3, 10, 1])
    assert timeline.attempts(steps, resets="back").tolist() == [0, 0, 0, 0, 0, 1, 1, 1, 2]


def test_attempts_launch_markers() -> None:
    # a marker before record 0 opens nothing (no attempt before it); one before record 3 opens attempt 1
    steps = np.array([5, 6, 7, 8, 9])
    launches = np.array([True, False, False, True, False])
    assert timeline.attempts(steps, launches=launches).tolist() == [0, 0, 0, 1, 1]
    # a marker and a reset at the same record open one attempt, not two: 5 6 | 2 3
    both = timeline.attempts(np.array([5, 6, 2, 3]), launches=np.array([False, False, True, False]))
    assert both.tolist() == [0, 0, 1, 1]


def test_attempts_from_markers_only() -> None:
    # resets=None: step numbers open nothing (10 after 20 stays in attempt 0); markers before records 2, 4, 5
    steps = np.array([10, 20, 10, 30, 40, 50])
    launches = np.array([False, False, True, False, True, True])
    assert timeline.attempts(steps, launches=launches, resets=None).tolist() == [0, 0, 1, 1, 2, 3]
    # records without step numbers (entries of a log that has none): the markers alone
    assert timeline.attempts(launches=launches, resets=None).tolist() == [0, 0, 1, 1, 2, 3]


def test_attempts_of_no_record_and_of_one() -> None:
    assert timeline.attempts(np.array([], dtype=np.int64)).tolist() == []
    assert timeline.attempts(np.array([7])).tolist() == [0]
    assert timeline.attempts(launches=np.array([True]), resets=None).tolist() == [0]


def test_attempts_arguments_are_checked() -> None:
    with pytest.raises(ValueError, match="resets"):
        timeline.attempts(np.array([1, 2]), resets="down")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="steps"):
        timeline.attempts(launches=np.array([False, True]))  # resets by step need the steps
    with pytest.raises(ValueError, match="launches"):
        timeline.attempts(np.array([1, 2, 3]), launches=np.array([False, True]))


def test_attempts_of_a_million_records() -> None:
    # 1,000 launches of steps 0..999: each 0 after 999 opens an attempt, so the last record is in attempt 999
    steps = np.tile(np.arange(1000, dtype=np.int64), 1000)
    att = timeline.attempts(steps)
    assert att[-1] == 999 and att[999] == 0 and att[1000] == 1
    assert np.bincount(att).tolist() == [1000] * 1000
