"""Every front end on a dataset read out of core (``--engine duckdb``) says what the in-memory
path says about the same dataset: ``mfu analyze`` (text and ``--json``), the straggler verdict,
``step_spread``, ``without_worst_ranks``, the scorecard and the HTML report with its figures.

The dataset is written here by ``write_dataset`` (a simulated job with failures, restarts,
checkpoints, evaluations, data waits and one slow rank). Expected values come from the rows
themselves, read here with pyarrow and reduced with numpy, and from what the simulation injected
(rank 17 runs ``SLOW`` × slower), never from the code under test.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest

pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import matplotlib  # noqa: E402

matplotlib.use("Agg")

from mfu_toolkit import plots  # noqa: E402
from mfu_toolkit.analysis import scorecard  # noqa: E402
from mfu_toolkit.analysis.stragglers import step_spread, without_worst_ranks  # noqa: E402
from mfu_toolkit.cli import main  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.report import report_figures  # noqa: E402
from mfu_toolkit.simulate import write_dataset  # noqa: E402

SLOW_RANK, SLOW = 17, 1.15
CFG = dict(n_ranks=40, n_steps=600, jitter=0.03, slow_ranks=(SLOW_RANK,), slow_factor=SLOW, transient_prob=0.002,
           mtbf_s=250.0, checkpoint_every=100, checkpoint_s=3.0, eval_every=200, eval_s=4.0,
           data_stall_prob=0.05, data_stall_s=0.3, restart_s=10.0, init_s=5.0, warmup_steps=3, seed=3)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    out = tmp_path_factory.mktemp("scale") / "job"
    write_dataset(folder=out, rows_per_file=7_000, chunk_rows=2_000, **CFG)
    return out


@pytest.fixture(scope="module")
def runs(folder):
    return {e: load_run(folder, engine=e, progress=False) for e in ("pandas", "duckdb")}


@pytest.fixture(scope="module")
def rows(folder) -> pd.DataFrame:
    """The dataset's rows, read straight from the part files."""
    return pd.concat([pq.read_table(p).to_pandas() for p in sorted(folder.glob("part-*.parquet"))],
                     ignore_index=True)


def _useful_busy(rows: pd.DataFrame) -> pd.DataFrame:
    """Rows of useful steps (a later attempt did not redo the step) with their busy time: compute_s
    where logged, else duration minus data wait (the definition in analysis.breakdown)."""
    last = rows.groupby("step")["attempt"].transform("max")
    r = rows[rows["attempt"] == last].copy()
    wait = r["data_wait_s"].fillna(0.0) if "data_wait_s" in r else 0.0
    dur = (r["end_s"] - r["start_s"] - wait).clip(lower=0.0)
    r["busy"] = r["compute_s"].where(r["compute_s"].notna(), dur) if "compute_s" in r else dur
    return r


def _analyze(capsys, *args: str) -> tuple[int, str]:
    code = main(["analyze", *args])
    return code, capsys.readouterr().out


def test_dataset_really_out_of_core(runs, rows):
    d = runs["duckdb"]
    assert d.reductions is not None and len(d.steps) == 0
    assert d.n_step_rows == len(rows) == len(runs["pandas"].steps)
    assert rows["attempt"].max() >= 1  # the job restarted: lost work exists


@pytest.mark.parametrize("fmt", [[], ["--json"]])
def test_analyze_text_and_json_identical(folder, capsys, fmt):
    code_p, pandas_out = _analyze(capsys, str(folder), "--engine", "pandas", *fmt)
    code_d, duck_out = _analyze(capsys, str(folder), "--engine", "duckdb", *fmt)
    assert code_p == code_d == 0
    assert duck_out == pandas_out  # no figure is approximate out of core


def test_analyze_json_counts_rows_and_names_the_straggler(folder, rows, capsys):
    _, out = _analyze(capsys, str(folder), "--engine", "duckdb", "--json")
    data = json.loads(out)
    assert data["holds"]["step_rows"] == len(rows)
    assert data["holds"]["timed_step_rows"] == int(((rows["end_s"] - rows["start_s"]) > 0).sum())
    s = data["stragglers"]
    assert s["culprit"] == f"rank {SLOW_RANK}", s
    assert s["persistent_ranks"] == [SLOW_RANK]


def test_analyze_text_names_the_straggler(folder, capsys):
    _, out = _analyze(capsys, str(folder), "--engine", "duckdb")
    assert f"Culprit: rank {SLOW_RANK}" in out
    assert "no per-rank step times" not in out


def test_step_spread_from_reductions(runs, rows):
    a, b = step_spread(runs["pandas"]), step_spread(runs["duckdb"])
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), rtol=1e-12)
    # independent: numpy's median and max of each useful step's busy times, from the raw rows
    u = _useful_busy(rows)
    g = u.groupby(["attempt", "step"])["busy"]
    med = g.median().to_numpy()
    mx = g.max().to_numpy()
    np.testing.assert_allclose(b["median_s"].to_numpy(), med, rtol=1e-12)
    np.testing.assert_allclose(b["max_s"].to_numpy(), mx, rtol=1e-12)
    top = u.sort_values(["attempt", "step", "busy", "rank"], ascending=[True, True, False, True])
    slowest = top.groupby(["attempt", "step"])["rank"].first().to_numpy()  # ties: the lowest rank
    np.testing.assert_array_equal(b["slowest_rank"].to_numpy(), slowest)
    assert (b["slowest_rank"] == SLOW_RANK).mean() > 0.8  # the injected slow rank, in most steps


def test_without_worst_ranks_from_reductions(runs, rows):
    a, b = without_worst_ranks(runs["pandas"], k=3), without_worst_ranks(runs["duckdb"], k=3)
    pd.testing.assert_frame_equal(a, b, rtol=1e-12)
    assert b["ranks"][1] == [SLOW_RANK]
    # independent: removing rank 17 lowers each step's rank-bound max to that of the others
    u = _useful_busy(rows)
    full = u.groupby(["attempt", "step"])["busy"].max()
    rest = u[u["rank"] != SLOW_RANK].groupby(["attempt", "step"])["busy"].max()
    assert b["saving_s"][1] == pytest.approx(float((full - rest).mean()), rel=1e-9)


def test_scorecard_equal(runs):
    pd.testing.assert_frame_equal(scorecard(runs["pandas"]), scorecard(runs["duckdb"]), rtol=1e-12)


@pytest.mark.parametrize("kw", [{}, {"max_ranks": 7, "max_steps": 33}, {"max_ranks": 7, "max_steps": 33, "agg": "max"}])
def test_rank_heatmap_from_engine(runs, kw):
    a = np.asarray(plots.rank_heatmap(runs["pandas"], **kw).images[0].get_array(), float)
    b = np.asarray(plots.rank_heatmap(runs["duckdb"], **kw).images[0].get_array(), float)
    assert a.shape == b.shape
    np.testing.assert_allclose(b, a, rtol=1e-9, atol=1e-12)


def test_rank_heatmap_row_of_the_slow_rank(runs, rows):
    # unbinned (40 ranks, <= 500 steps... binned to 500 columns at most): rank 17's row sits near
    # SLOW - 1 above the step median, from the raw rows
    ax = plots.rank_heatmap(runs["duckdb"], max_steps=10**6)
    img = np.asarray(ax.images[0].get_array(), float)
    u = _useful_busy(rows)
    rel = u["busy"] / u.groupby(["attempt", "step"])["busy"].transform("median") - 1.0
    want = rel[u["rank"] == SLOW_RANK].to_numpy()
    np.testing.assert_allclose(img[SLOW_RANK], want, rtol=1e-9, atol=1e-12)
    assert np.median(want) == pytest.approx(SLOW - 1.0, abs=0.03)


def test_report_figures_equal(runs):
    fa, na = report_figures(runs["pandas"])
    fb, nb = report_figures(runs["duckdb"])
    assert [c for c, _ in fa] == [c for c, _ in fb]
    assert any(c.startswith("Per-rank") for c, _ in fb)
    assert na == nb


def test_analyze_html_out_of_core(folder, tmp_path, capsys):
    out = tmp_path / "report.html"
    code, _ = _analyze(capsys, str(folder), "--engine", "duckdb", "--html", str(out))
    assert code == 0
    text = out.read_text()
    figures = re.findall(r"<figcaption>([^<]*)</figcaption>", text)
    assert len(figures) == 4 and any(f.startswith("Per-rank time") for f in figures), figures
    assert f"rank {SLOW_RANK}" in text
    assert "Traceback" not in text and "no per-rank" not in text
