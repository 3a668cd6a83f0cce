"""The out-of-core run holds within the memory limit it is given, whatever the step count.

``memory_limit`` bounds the whole process: before each query DuckDB is given the limit less what
the process holds (``DuckBackend._fit_memory``), and a dataset whose steps the analysis could not
hold within it is refused after the first batch, with the figures, instead of outgrowing it.
Step ranges are also split by step count (``batch_steps``), so one query never groups millions of
steps at once; the answer is the same however the steps are split.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("duckdb")

from mfu_toolkit.analysis import mfu_summary  # noqa: E402
from mfu_toolkit.engine import duck  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.run import LoadError  # noqa: E402
from mfu_toolkit.simulate import write_dataset  # noqa: E402

CFG = dict(n_ranks=4, n_steps=3_000, jitter=0.05, slow_ranks=(1,), slow_factor=1.2, warmup_steps=3, seed=3)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("many_steps") / "ds"
    write_dataset(folder=out, rows_per_file=4_000, chunk_rows=2_000, **CFG)
    return out


@pytest.mark.parametrize(("text", "expected"), [
    ("3GB", 3 * 10**9), ("512MiB", 512 * 2**20), ("1.5 gb", 1_500_000_000), ("2048", 2048), (4096, 4096),
    ("10KB", 10_000), ("1TiB", 2**40),
])
def test_memory_sizes_read_as_duckdb_reads_them(text, expected):
    # DuckDB's units: KB/MB/GB are powers of 1000, KiB/MiB/GiB of 1024
    # (https://duckdb.org/docs/stable/configuration/overview, memory_limit)
    assert duck.memory_bytes(text) == expected


@pytest.mark.parametrize("bad", ["lots", "3 GBs", "-1GB", "0MB", "", True, -5])
def test_bad_memory_limit_names_the_value(bad, folder):
    with pytest.raises(ValueError, match="memory_limit must be a size"):
        duck.memory_bytes(bad)
    with pytest.raises((ValueError, TypeError), match="memory_limit must be a size"):  # LoaderArgumentError
        load_run(folder, format="parquet_dataset", engine="duckdb", memory_limit=bad, progress=False)


def test_steps_split_by_count_give_the_same_answer(folder):
    # 3,000 steps in batches of 7 step numbers (429 queries) against one query for all of them
    one = load_run(folder, format="parquet_dataset", engine="duckdb", batch_steps=10**9, progress=False)
    many = load_run(folder, format="parquet_dataset", engine="duckdb", batch_steps=7, progress=False)
    ref = load_run(folder, format="parquet_dataset", engine="pandas")
    a, b, c = mfu_summary(one), mfu_summary(many), mfu_summary(ref)
    for k in ("steady_state_mfu", "end_to_end_mfu", "goodput", "wall_s", "ideal_step_s"):
        assert getattr(a, k) == pytest.approx(getattr(c, k), rel=1e-12), k
        assert getattr(b, k) == pytest.approx(getattr(c, k), rel=1e-12), k
    assert a.useful_steps == b.useful_steps == c.useful_steps == CFG["n_steps"]


HELD = 10**9  # what the process is taken to hold (its reading is replaced, so the figures are exact)


@pytest.fixture
def held(monkeypatch):
    monkeypatch.setattr(duck, "_resident_bytes", lambda: HELD)
    return HELD


def test_engine_gets_the_limit_less_what_the_process_holds(folder, held):
    be = duck.DuckBackend(sorted(folder.glob("part-*.parquet")), {"step", "start_s", "end_s"}, n_rows=12_000,
                          memory_limit=str(held + 500 * 10**6))
    be.run("SELECT count(*) AS n FROM steps", {})
    (setting,) = be.con.execute("SELECT current_setting('memory_limit')").fetchone()
    # DuckDB shows its limit in MiB/GiB to a few digits: 500 MB of room is 476.8 MiB
    assert setting.replace(" ", "") == "476.8MiB"
    be.close()


def test_steps_past_the_limit_are_refused_before_all_are_read(folder, held, monkeypatch):
    # 3,000 steps at 100,000 bytes each (a stand-in for a run of millions of steps) need 300.4 MB
    # beside what is held; the limit leaves 300 MB: refused after the first of 6 batches
    monkeypatch.setattr(duck, "ANALYSIS_BYTES_PER_STEP", 100_000)
    queries = []
    real_run = duck.DuckBackend.run
    monkeypatch.setattr(duck.DuckBackend, "run", lambda self, sql, t: queries.append(sql) or real_run(self, sql, t))
    with pytest.raises(LoadError, match=r"about 3,000 steps need about 0.30 GB .* beside the 1.00 GB this process "
                                        r"holds, over memory_limit 1.30 GB") as err:
        load_run(folder, format="parquet_dataset", engine="duckdb", memory_limit=held + 300 * 10**6,
                 batch_steps=500, progress=False)
    assert "--memory-limit" in str(err.value)
    assert sum("n_distinct" in q for q in queries) == 1  # one job-step query ran, of 6


def test_a_limit_too_small_for_the_engine_is_refused(folder, held):
    with pytest.raises(LoadError, match=r"memory_limit 1.01 GB leaves 0.01 GB for DuckDB beside the 1.00 GB"):
        load_run(folder, format="parquet_dataset", engine="duckdb", memory_limit=held + 10**7, progress=False)


def test_cli_memory_limit(folder, capsys):
    from mfu_toolkit.cli import main

    assert main(["analyze", str(folder), "--memory-limit", "lots"]) == 2
    assert "memory_limit must be a size" in capsys.readouterr().err
    args = ["analyze", str(folder), "--engine", "duckdb", "--accelerator", "H100-SXM", "--gpus", "4",
            "--flops-per-step", "1e15"]
    assert main([*args, "--memory-limit", "8GB"]) in (0, 1)
    limited = capsys.readouterr().out
    assert main(args) in (0, 1)
    headline = [line for line in limited.splitlines() if line.startswith("Steady-state MFU")]
    assert headline and headline[0] in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize(("lo", "hi", "n"), [(0, 9, 3), (1, 1, 5), (-1, 2**63 - 2, 7), (-(2**63), 2**63 - 1, 4),
                                             (5, 2**53 + 1, 2), (0, 3, 10)])
def test_range_clauses_put_every_row_in_exactly_one(lo, hi, n):
    import duckdb

    from mfu_toolkit.engine.queries import range_clauses

    clauses = range_clauses("v", lo, hi, n)
    assert 1 <= len(clauses) <= n
    probe = sorted({lo, hi, lo + 1, hi - 1, (lo + hi) // 2, 2**53, 2**53 + 1, -(2**63), 2**63 - 1}
                   & set(range(lo, hi + 1))
                   if hi - lo < 10**6 else {lo, hi, (lo + hi) // 2, 2**53 + 1, min(hi, 2**62)})
    con = duckdb.connect()
    for v in probe:  # a float edge would drop 2**53 + 1 or the top of the range
        hits = [c for c in clauses if con.execute(f"SELECT {c} FROM (SELECT CAST({v} AS BIGINT) AS v)").fetchone()[0]]
        assert len(hits) == 1, (v, clauses)


def test_rank_medians_in_many_ranges_are_numpy_medians(folder, monkeypatch):
    # a budget that fits a handful of values: one range per rank (4 queries), each median exact
    run = load_run(folder, format="parquet_dataset", engine="duckdb", progress=False)
    monkeypatch.setattr(duck.DuckBackend, "query_budget", lambda self: 2 * 24)
    queries = []
    real_run = duck.DuckBackend.run
    monkeypatch.setattr(duck.DuckBackend, "run", lambda self, sql, t: queries.append(sql) or real_run(self, sql, t))
    got = run.reductions.rank_stats(0.05).frame.set_index("rank")["median_s"]
    assert sum("median_s" in q for q in queries) == CFG["n_ranks"]
    ref = load_run(folder, format="parquet_dataset", engine="pandas").steps
    want = ref.groupby("rank")["compute_s"].median()  # no restart: every step is useful
    np.testing.assert_array_equal(got.to_numpy(), want.to_numpy())
