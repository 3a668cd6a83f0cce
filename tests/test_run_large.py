"""Large step tables: the linear-time paths of Run.build / validate and of the table and Run
Parquet loaders give the same results as the general ones, and a progress bar shows when asked.

Tables here have 200,000+ rows, above the size from which those paths are taken.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from mfu_toolkit.io import load_run
from mfu_toolkit.run import (
    LoadWarning,
    Run,
    RunMeta,
    SchemaError,
    read_parquet_frame,
    read_run,
    run_order,
    save_run,
    validate,
)

RANKS, STEPS = 100, 2_000  # 200,000 rows


def per_rank_log(seed: int = 0, ranks: int = RANKS, steps: int = STEPS, tick: float | None = None) -> pd.DataFrame:
    """Step-major per-rank rows; ``tick`` rounds the start times (ties between ranks)."""
    rng = np.random.default_rng(seed)
    step = np.repeat(np.arange(1, steps + 1, dtype=np.int64), ranks)
    rank = np.tile(np.arange(ranks, dtype=np.int64), steps)
    start = (step - 1) * 1.0 + rng.random(len(step)) * 0.01
    if tick:
        start = np.round(start / tick) * tick
    end = start + 0.9
    return pd.DataFrame({"step": step, "rank": rank, "start_s": start, "end_s": end,
                         "data_wait_s": rng.random(len(step)) * 0.01})


def _pandas_order(df: pd.DataFrame) -> np.ndarray:
    return df.sort_values(["attempt", "start_s", "step", "rank"], kind="stable").index.to_numpy()


@pytest.mark.parametrize("tick", [None, 1e-3])
def test_run_order_is_the_stable_lexicographic_order(tick):
    df = per_rank_log(tick=tick).assign(attempt=0)
    order = run_order(df["start_s"].to_numpy(), df["step"].to_numpy(), df["rank"].to_numpy(), max_ties=10**9)
    assert (order == _pandas_order(df)).all()


@pytest.mark.parametrize("tick", [None, 1e-3])
def test_build_sorts_large_tables_like_pandas(tick):
    df = per_rank_log(tick=tick)
    run = Run.build(df)
    ref = df.assign(attempt=0).loc[_pandas_order(df.assign(attempt=0))].reset_index(drop=True)
    got = run.steps[ref.columns]
    assert got.equals(ref)
    again = Run.build(run.steps)  # already in order: kept as is
    assert again.steps.equals(run.steps)


def test_validate_names_the_repeated_rows_of_a_large_table():
    df = Run.build(per_rank_log()).steps
    dup = pd.concat([df, df.iloc[[10]]], ignore_index=True)
    with pytest.raises(SchemaError, match=r"\(attempt, step, rank\) must be unique; rows \[200000\]"):
        validate(dup, Run().events)
    sparse = df.assign(step=df["step"] * 1_000_003)  # keys too sparse to count: the grouped path
    validate(sparse, Run().events)
    with pytest.raises(SchemaError, match="must be unique"):
        validate(pd.concat([sparse, sparse.iloc[[7]]], ignore_index=True), Run().events)


def test_large_plain_parquet_loads_as_the_same_run_as_the_frame(tmp_path):
    df = per_rank_log()
    p = tmp_path / "steps.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), p)
    run = load_run(p, progress=False)
    assert run.meta.source_format == "table" and not run.meta.report.skipped
    ref = Run.build(df).steps
    assert run.steps[ref.columns].equals(ref)


def test_bad_rows_of_a_large_parquet_table_are_reported_with_row_numbers(tmp_path):
    df = per_rank_log()
    df.loc[5, "end_s"] = df.loc[5, "start_s"] - 1  # end before start: row 6
    df.loc[1_000, "start_s"] = -50.0  # goes back within its rank: row 1001
    df = pd.concat([df, df.iloc[[42]]], ignore_index=True)  # a repeat: the last row
    p = tmp_path / "steps.parquet"
    df.to_parquet(p, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        run = load_run(p, progress=False)
    first = run.meta.report.first_lines
    assert first["interval end before its start"] == [6]
    assert first["duplicate record (kept the first)"] == [len(df)]
    assert 1001 in first["non-monotonic timestamp"]
    assert len(run.steps) == len(df) - sum(run.meta.report.skipped.values())


@pytest.mark.parametrize("kind", ["plain", "nulls", "strings", "index", "empty"])
def test_read_parquet_frame_equals_read_table_to_pandas(tmp_path, kind):
    df = pd.DataFrame({"a": np.arange(5, dtype=np.int64), "b": np.linspace(0, 1, 5), "c": [True, False] * 2 + [True]})
    if kind == "nulls":
        df["d"] = pd.array([1, None, 3, 4, 5], dtype="Int64")
    elif kind == "strings":
        df["d"] = list("vwxyz")
    elif kind == "index":
        df.index = pd.Index([10, 11, 12, 13, 14], name="row")
    elif kind == "empty":
        df = df.iloc[:0]
    p = tmp_path / "t.parquet"
    df.to_parquet(p, index=kind == "index", row_group_size=2)
    got = read_parquet_frame(p)
    ref = pq.read_table(p).to_pandas()
    pd.testing.assert_frame_equal(got, ref)


def test_progress_bar_when_asked_and_none_for_small_files(tmp_path, capsys):
    run = Run.build(per_rank_log(ranks=10, steps=50), meta=RunMeta(name="small"))
    p = save_run(run, tmp_path / "run.parquet")
    assert read_run(p, progress=True) == run
    assert "reading Run" in capsys.readouterr().err
    assert load_run(p) == run  # progress=None: a small file shows no bar
    assert capsys.readouterr().err == ""
    plain = tmp_path / "steps.parquet"
    per_rank_log(ranks=10, steps=50).to_parquet(plain, index=False)
    load_run(plain, progress=True)
    assert "reading table" in capsys.readouterr().err
