"""Compare: side by side, and the change-one-thing-at-a-time warning."""

from __future__ import annotations

import warnings

import pytest

from mfu_toolkit.analysis import ConfoundedComparisonWarning, compare, major_variables
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
