"""Out-of-core reductions (mfu_toolkit.engine) agree with the in-memory path.

The reference is the breakdown and straggler scores of the same simulated Run held in memory
(``simulate``); the dataset is written by ``write_dataset``, whose rows are checked equal to
``simulate``'s first, so any difference comes from the engine. Per-rank medians are checked
against numpy's median of the raw values, computed here from the rows.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from mfu_toolkit.analysis import breakdown, mfu_summary, straggler_summary  # noqa: E402
from mfu_toolkit.analysis.stragglers import rank_scores  # noqa: E402
from mfu_toolkit.engine import queries  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.run import LoadError, SchemaError, save_run  # noqa: E402
from mfu_toolkit.simulate import simulate, write_dataset  # noqa: E402

# failures and restarts (mtbf), blocking checkpoints, data waits, warm-up, a persistent straggler
# and transient slowdowns: every category of the breakdown is exercised
CFG = dict(n_ranks=48, n_steps=300, jitter=0.05, slow_ranks=(7,), slow_factor=1.2, transient_prob=0.02,
           mtbf_s=110.0, checkpoint_every=40, checkpoint_s=2.0, eval_every=100, eval_s=3.0,
           data_stall_prob=0.1, data_stall_s=0.3, restart_s=10.0, init_s=5.0, warmup_steps=5,
           warmup_factor=2.0, seed=11)


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    run = simulate(**CFG)
    folder = tmp_path_factory.mktemp("ds") / "sim"
    write_dataset(folder=folder, rows_per_file=3_000, chunk_rows=1_000, **CFG)
    return run, folder


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def test_dataset_rows_equal_simulate(pair):
    run, folder = pair
    assert run.meta.extra["injected"]["failures"] >= 2  # the run restarts: lost work and downtime exist
    back = load_run(folder, engine="pandas")
    assert back.reductions is None
    pd.testing.assert_frame_equal(back.steps[list(run.steps.columns)], run.steps, check_exact=True)
    pd.testing.assert_frame_equal(back.events, run.events, check_exact=True)
    assert len(list(folder.glob("part-*.parquet"))) > 3  # really several part files


@pytest.mark.parametrize("batch_rows", [2_000, 10**9])  # many step ranges, and one query
def test_duckdb_breakdown_equals_in_memory(pair, batch_rows):
    run, folder = pair
    red = load_run(folder, engine="duckdb", batch_rows=batch_rows, progress=False)
    assert red.reductions is not None and len(red.steps) == 0
    assert red.n_step_rows == len(run.steps)
    assert (red.t0, red.t1, red.n_attempts, red.ranks) == (run.t0, run.t1, run.n_attempts, run.ranks)
    a, b = breakdown(run), breakdown(red)
    assert list(a["category"]) == list(b["category"])
    for col in ("seconds", "share", "efficiency_after", "mfu_after"):
        for x, y in zip(a[col], b[col], strict=True):
            assert _close(float(x), float(y)), (col, x, y)
    sa, sb = mfu_summary(run), mfu_summary(red)
    for k in ("steady_state_mfu", "end_to_end_mfu", "window_mfu", "goodput", "wall_s", "ideal_step_s"):
        assert _close(getattr(sa, k), getattr(sb, k)), k
    assert sa.useful_steps == sb.useful_steps


@pytest.mark.parametrize("threshold", [0.05, 0.01])
def test_duckdb_rank_scores_equal_in_memory(pair, threshold):
    run, folder = pair
    red = load_run(folder, engine="duckdb", progress=False)
    pd.testing.assert_frame_equal(rank_scores(run, threshold=threshold), rank_scores(red, threshold=threshold),
                                  check_exact=False, rtol=1e-12, atol=0)
    s1, s2 = straggler_summary(run, threshold=threshold), straggler_summary(red, threshold=threshold)
    assert s1.lines() == s2.lines()
    assert s2.persistent_ranks[0] == 7  # the injected straggler is the worst


@pytest.mark.parametrize("bins,fetch_cap", [(2, 1), (4, 10), (256, 10**9)])
def test_exact_rank_median_by_refined_histograms(pair, bins, fetch_cap):
    """Every refinement path (coarse bins refined many times, a small fetch, one fetch) gives the
    exact median: numpy's, of each rank's busy times over the steps not redone."""
    run, folder = pair
    red = load_run(folder, engine="duckdb", progress=False)
    r = dataclasses.replace(red.reductions, bins=bins, fetch_cap=fetch_cap, median_by="histogram", _cache={})
    got = r.rank_stats(0.05).frame.set_index("rank")["median_s"]
    s = run.steps
    last = s.groupby("step")["attempt"].transform("max")
    useful = s[s["attempt"] == last]
    want = useful.groupby("rank")["compute_s"].median()  # the simulator logs compute_s on every row
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())


def test_equal_busy_times_resolve_without_fetching(tmp_path):
    """With no jitter every rank's busy time is the same value: the first histogram settles it."""
    cfg = dict(n_ranks=8, n_steps=50, seed=1)
    run = simulate(**cfg)
    write_dataset(folder=tmp_path / "d", **cfg)
    red = load_run(tmp_path / "d", engine="duckdb", progress=False)
    st = red.reductions.rank_stats(0.05).frame
    assert (st["median_s"] == 1.0).all()  # SimConfig.step_time_s
    pd.testing.assert_frame_equal(rank_scores(run), rank_scores(red))
    assert int(breakdown(red).set_index("category").loc["stragglers", "seconds"]) == 0


def test_one_large_parquet_file(tmp_path, pair):
    run, _ = pair
    path = tmp_path / "steps.parquet"
    run.steps.to_parquet(path, index=False)
    red = load_run(path, format="parquet_dataset", engine="duckdb", progress=False)
    assert red.meta.source_format == "parquet_dataset"
    # without the events file the timeline has only steps; the steps' own figures still agree
    a = breakdown(run.replace(events=run.events.iloc[:0]))
    b = breakdown(red)
    for x, y in zip(a["seconds"], b["seconds"], strict=True):
        assert _close(float(x), float(y))


def test_bad_part_files_are_reported_not_fatal(tmp_path, pair):
    run, folder = pair
    d = tmp_path / "bad"
    d.mkdir()
    s = run.steps
    half = len(s) // 2
    s.iloc[:half].to_parquet(d / "part-0.parquet", index=False)
    s.iloc[half:].to_parquet(d / "part-1.parquet", index=False)
    s.iloc[:100].rename(columns={"end_s": "finish"}).to_parquet(d / "part-2.parquet", index=False)  # 100 rows
    (d / "part-3.parquet").write_bytes(b"PAR1 this is not a Parquet file")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        red = load_run(d, engine="duckdb", progress=False)
    text = red.meta.report.summary() + " " + " ".join(red.meta.report.notes)
    assert "part-2.parquet: 100 rows" in text and "missing column(s) ['end_s']" in text
    assert "part-3.parquet" in text and "corrupt part file" in text
    assert red.meta.report.total_skipped == 2 and w  # one warning for the load
    assert red.n_step_rows == len(s)
    with pytest.raises(LoadError, match="part-2.parquet|part-3.parquet"):
        load_run(d, engine="duckdb", strict=True, progress=False)


def test_missing_ranks_are_counted(tmp_path, pair):
    run, _ = pair
    s = run.steps
    drop = (s["step"].isin([10, 11])) & (s["rank"] >= 40)  # 8 ranks absent from two steps of each attempt
    d = tmp_path / "gaps"
    d.mkdir()
    s[~drop].to_parquet(d / "part-0.parquet", index=False)
    red = load_run(d, engine="duckdb", progress=False)
    n_missing = int(drop.sum())  # rank-steps left out above, counted from the rows themselves
    note = [n for n in red.meta.report.notes if "lack some of the 48 ranks" in n]
    assert note and f"{n_missing:,} rank-steps missing" in note[0]


def test_reduced_run_refuses_save(pair, tmp_path):
    red = load_run(pair[1], engine="duckdb", progress=False)
    with pytest.raises(SchemaError, match="engine='pandas'"):
        save_run(red, tmp_path / "x.parquet")


def test_engine_option_is_checked(pair):
    with pytest.raises(TypeError, match="engine must be one of"):
        load_run(pair[1], engine="polars")


def test_queries_are_written_once_and_transpiled():
    duck = queries.render(queries.JOB_STEPS, "duckdb")
    spark = queries.render(queries.JOB_STEPS, "spark")
    assert "arg_max" in duck and "MAX_BY" in spark and "struct_pack" in duck and "STRUCT(" in spark
    with pytest.raises(ValueError, match="dialect must be one of"):
        queries.render(queries.JOB_STEPS, "postgres")
