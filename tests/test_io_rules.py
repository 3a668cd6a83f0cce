"""The shared rules: step and count bounds (what a format may take as a step number or a count)."""

from __future__ import annotations

import pytest

from mfu_toolkit.io import rules


@pytest.mark.parametrize("value, expected", [
    (12, 12), ("12", 12), (" 7 ", 7), (3.0, 3), ("1e3", 1000), (2**63 - 1, 2**63 - 1),
    (2**63, None),        # one past int64: would wrap to -9223372036854775808 in a column
    (1e308, None), ("1e308", None), (-1, None), (3.5, None), ("nan", None), (float("inf"), None),
    (True, None), ("x12", None), ("9" * 5000, None), ("²", None),  # int() refuses strings over 4300 digits
])
def test_as_step(value, expected):
    assert rules.as_step(value) == expected


def test_as_count_bounds():
    assert rules.as_count("512") == 512
    assert rules.as_count(0) is None and rules.as_count("3e9") is None  # a rank count of 3e9 is no fact
    assert rules.as_count(3e9, upper=10**10) == 3_000_000_000


def test_interval_bound():
    assert rules.interval_ok(1) and rules.interval_ok(rules.MAX_LOG_INTERVAL)
    assert not rules.interval_ok(0) and not rules.interval_ok(10**9)


def test_a_small_log_cannot_invent_a_billion_rows(tmp_path):
    # 3,000 torchtitan step lines 100,000 steps apart (each gap within MAX_LOG_INTERVAL) would
    # expand into 3e8 rows from a 0.4 MB file; the load's row budget keeps one row per line.
    import warnings

    from mfu_toolkit.io import load_run

    lines = [f"[rank0]:[titan] 2025-01-01 00:{(i // 60) % 60:02d}:{i % 60:02d},000 - root - INFO - "
             f"step: {i * 100_000 + 1}  loss: 2.0  memory: 10.0GiB(10.0%)  tps: 1,000  tflops: 100.0  mfu: 10.0%"
             for i in range(3000)]
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    assert p.stat().st_size < 1 << 20
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = load_run(p)
    assert run.meta.source_format == "torchtitan"
    assert len(run.steps) == 3000
    assert any(n.startswith("log intervals not expanded") for n in run.meta.report.notes)


def test_the_row_budget_is_per_load():
    token = rules.start_row_budget(0)
    try:
        assert rules.take_rows(rules.MIN_EXPANDED_ROWS)
        assert not rules.take_rows(1)
    finally:
        rules.end_row_budget(token)
    token = rules.start_row_budget(0)  # a new load starts full again
    try:
        assert rules.take_rows(1)
    finally:
        rules.end_row_budget(token)
