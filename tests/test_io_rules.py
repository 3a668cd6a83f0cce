"""The shared rules: step and count bounds (what a format may take as a step number or a count)."""

from __future__ import annotations

import pytest

from mfu_toolkit.io import rules


@pytest.mark.parametrize("value, expected", [
    (12, 12), ("12", 12), (" 7 ", 7), (3.0, 3), ("1e3", 1000), (2**63 - 1, 2**63 - 1),
    (2**63, None),        # one past int64: would wrap to -9223372036854775808 in a column
    (1e308, None), ("1e308", None), (-1, None), (3.5, None), ("nan", None), (float("inf"), None),
    (True, None), ("x12", None), ("9" * 5000, None),  # int() refuses strings over 4300 digits
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
