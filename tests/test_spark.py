"""Spark runs the same reduction queries (transpiled by sqlglot) and agrees with DuckDB and with
the in-memory path to 1e-9 on a 10M-row simulated dataset (local mode on two cores, loopback
only, shuffles in as many partitions as cores).

The module takes about two minutes on two cores: the job-step query counts distinct ranks in its
own grouping (a count(DISTINCT) beside the medians made Spark keep a median buffer per rank-step,
and this module took eight minutes)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from _spark import require_spark

pytest.importorskip("duckdb")
try:
    require_spark()
except pytest.skip.Exception as exc:
    pytest.skip(str(exc), allow_module_level=True)

from mfu_toolkit.analysis import breakdown, mfu_summary, straggler_summary  # noqa: E402
from mfu_toolkit.analysis.stragglers import rank_scores, step_spread, without_worst_ranks  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.simulate import simulate, write_dataset  # noqa: E402

# 1,000 ranks x 10,000 steps = 10M rows, with failures and restarts (redone steps), blocking
# checkpoints, data waits, warm-up, a persistent straggler and transient slowdowns
CFG = dict(n_ranks=1_000, n_steps=10_000, step_time_s=0.5, jitter=0.03, slow_ranks=(123,), slow_factor=1.1,
           transient_prob=0.001, mtbf_s=1_500.0, checkpoint_every=500, checkpoint_s=5.0, data_stall_prob=0.05,
           data_stall_s=0.2, restart_s=30.0, init_s=20.0, warmup_steps=10, warmup_factor=1.5, seed=5)


@pytest.fixture(scope="module")
def spark():
    from mfu_toolkit.engine.spark import local_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = local_session("local[2]")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def runs(spark, tmp_path_factory):
    folder = tmp_path_factory.mktemp("spark") / "sim"
    write_dataset(folder=folder, rows_per_file=2_500_000, **CFG)
    memory = simulate(**CFG, validate=False)
    assert memory.meta.extra["injected"]["failures"] >= 1
    return {
        "pandas": memory,
        "duckdb": load_run(folder, engine="duckdb", progress=False),
        "spark": load_run(folder, engine="spark", spark=spark, progress=False),
    }


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def test_ten_million_rows(runs, spark):
    assert runs["spark"].n_step_rows == len(runs["pandas"].steps) >= 10_000_000
    assert spark.conf.get("spark.sql.shuffle.partitions") == "2"  # local[2]: one per core, not 8 or 200


@pytest.mark.parametrize("engine", ["duckdb", "spark"])
def test_every_breakdown_figure_agrees(runs, engine):
    a, b = breakdown(runs["pandas"]), breakdown(runs[engine])
    assert list(a["category"]) == list(b["category"])
    for col in ("seconds", "share", "efficiency_after", "mfu_after"):
        for x, y in zip(a[col], b[col], strict=True):
            assert _close(float(x), float(y)), (engine, col, x, y)
    sa, sb = mfu_summary(runs["pandas"]), mfu_summary(runs[engine])
    for k in ("steady_state_mfu", "end_to_end_mfu", "window_mfu", "goodput", "wall_s"):
        assert _close(getattr(sa, k), getattr(sb, k)), (engine, k)


def test_spark_rank_statistics_agree(runs):
    a, b = rank_scores(runs["duckdb"]), rank_scores(runs["spark"])
    assert a.equals(b)
    assert straggler_summary(runs["spark"]).persistent_ranks[0] == 123


def test_spark_spread_and_what_if_agree(runs):
    # step_spread comes from the job-step reductions; without_worst_ranks runs its own query
    # (per-step maxima of the worst ranks), transpiled like the others
    pd.testing.assert_frame_equal(step_spread(runs["spark"]), step_spread(runs["duckdb"]), check_exact=True)
    a, b = without_worst_ranks(runs["pandas"], k=2), without_worst_ranks(runs["spark"], k=2)
    assert list(a["ranks"]) == list(b["ranks"]) and b["ranks"][1] == [123]
    for col in ("mean_step_s", "saving_s", "speedup"):
        for x, y in zip(a[col], b[col], strict=True):
            assert _close(float(x), float(y)), (col, x, y)


def test_spark_rank_heatmap_agrees(runs):
    from mfu_toolkit.engine.reductions import Reductions

    assert isinstance(runs["spark"].reductions, Reductions)
    a = runs["duckdb"].reductions.rank_heatmap(50, 40, "mean")[0]
    b = runs["spark"].reductions.rank_heatmap(50, 40, "mean")[0]
    np.testing.assert_allclose(b, a, rtol=1e-9)
