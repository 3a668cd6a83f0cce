"""Compare: side by side, and the change-one-thing-at-a-time warning."""

from __future__ import annotations

import warnings

import pytest

from mfu_toolkit.analysis import ConfoundedComparisonWarning, compare, major_variables
from mfu_toolkit.analysis.compare import same_window
from mfu_toolkit.simulate import SimConfig, simulate

BASE = SimConfig(n_ranks=8, n_steps=30, jitter=0.02)


def test_same_setup_different_seed_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfoundedComparisonWarning)
        c = compare(simulate(BASE), simulate(BASE.replace(seed=9)))
    assert c.differing == [] and c.warning is None
    t = c.table.set_index("metric")
    assert t.loc["steady_state_mfu", "ratio"] == pytest.approx(1.0, rel=0.02)
    assert set(c.variables["status"]) <= {"same", "unknown"}


def test_one_variable_differs_is_fine():
    a = simulate(BASE)
    b = simulate(BASE.replace(step_time_s=0.8))  # faster kernels, same everything else
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfoundedComparisonWarning)
        c = compare(a, b, names=("before", "after"))
    assert c.differing == ["model_config"]  # FLOPs per sample follow the target MFU here
    assert list(c.table.columns) == ["family", "metric", "unit", "before", "after", "ratio"]


def test_two_variables_differ_warns():
    a = simulate(BASE)
    b = simulate(BASE.replace(samples_per_step=2048, dtype="fp8"))
    with pytest.warns(ConfoundedComparisonWarning, match="global_batch, precision"):
        c = compare(a, b)
    assert c.differing[:2] == ["global_batch", "precision"]
    assert "Change one thing at a time" in c.warning
    assert "WARNING" in "\n".join(c.lines())


def test_major_variables_read_meta_extra_and_errors():
    run = simulate(BASE)
    run2 = run.with_meta(extra={**run.meta.extra, "tp": 2, "recompute": "selective", "data_range": "0-1e9"})
    v = major_variables(run2)
    assert v["parallelism"] == {"n_accelerators": 8, "tp": 2}
    assert v["recomputation"] == {"recompute": "selective"}
    assert v["data_range"] == {"data_range": "0-1e9"}
    with pytest.raises(ValueError, match="names must be a pair"):
        compare(run, run2, names=("x", "x"))
    with pytest.raises(TypeError, match="run_b must be a Run"):
        compare(run, "b")


LONG = SimConfig(n_ranks=8, n_steps=60, jitter=0.02, warmup_factor=3.0)


def test_window_two_steps_apart_is_the_same_window():
    a = simulate(LONG)  # no warm-up: window from step 1
    b = simulate(LONG.replace(warmup_steps=2))  # two slow steps: window from step 3
    va, vb = major_variables(a)["window"], major_variables(b)["window"]
    assert va != vb and abs(va[0] - vb[0]) == 2 and va[1] == vb[1]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfoundedComparisonWarning)
        c = compare(a, b)
    assert "window" not in c.differing
    assert c.variables.set_index("variable").loc["window", "status"] == "same"


def test_clearly_different_windows_are_flagged():
    a = simulate(LONG)
    b = simulate(LONG.replace(warmup_steps=20))  # window starts ~20 steps later
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfoundedComparisonWarning)
        c = compare(a, b)  # one variable differs: no warning
    assert c.differing == ["window"]
    assert c.variables.set_index("variable").loc["window", "status"] == "differs"
    # with a second change, the window counts towards the confounding warning
    with pytest.warns(ConfoundedComparisonWarning, match="precision, window"):
        c2 = compare(a, simulate(LONG.replace(warmup_steps=20, dtype="fp8")))
    assert c2.differing == ["precision", "window"]


def test_shared_step_range_makes_the_windows_equal():
    a = simulate(LONG)
    b = simulate(LONG.replace(warmup_steps=20))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConfoundedComparisonWarning)
        c = compare(a, b, step_range=(25, 55))
    v = c.variables.set_index("variable")
    assert v.loc["window", "a"] == v.loc["window", "b"] == (25, 55)
    assert v.loc["window", "status"] == "same" and c.differing == []
    assert major_variables(a, step_range=(25, 55))["window"] == (25, 55)
    # the steady-state metrics come from that window too: same setup, same steady-state MFU
    t = c.table.set_index("metric")
    assert t.loc["steady_state_mfu", "ratio"] == pytest.approx(1.0, rel=0.02)
    with pytest.raises(ValueError, match="step_range must be a pair of integers"):
        compare(a, b, step_range=(55, 25))


def test_same_window_tolerance():
    assert same_window((1, 60), (6, 60))  # 5 steps: the floor of the tolerance
    assert not same_window((1, 60), (7, 60))
    assert same_window((0, 1000), (40, 1030))  # 5 % of a 1,031-step window is 51.55 steps
    assert not same_window((0, 1000), (0, 500))  # stops at half the run
