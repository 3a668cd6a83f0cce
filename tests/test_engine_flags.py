"""Steps a loader flagged stay out of the steady-state window on every engine.

One Parquet dataset (written here with pyarrow: 4 ranks, 50 steps back to back, every rank with
the same times so the figures can be worked out by hand) is analysed in memory (the dataset's
``pandas`` engine), with DuckDB and with Spark. Step 0 is a 10 s compile step flagged
``compile``; step 30 is a 20 s outlier flagged ``outlier`` (and ``profile``) on some of its rows;
every other step takes 2 s.

By hand: the window is the 48 unflagged steps, the ideal step is their median, 2 s; the outlier's
time above it, 20 − 2 = 18 s, is ``stall``; the compile step's 10 − 2 = 8 s is ``jitter``. The
wall time is 10 + 48 × 2 + 20 = 126 s, the ideal compute 50 × 2 = 100 s. With 4e15 FLOPs per
step on 4 accelerators of 1e15 FLOP/s, the steady-state MFU is 4e15 / 2 / 4e15 = 0.5.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _spark import local_spark

pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from mfu_toolkit.analysis import account, breakdown, mfu_summary  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.run import LoadError  # noqa: E402

N_RANKS, N_STEPS = 4, 50
DURATION = {0: 10.0, 30: 20.0}  # every other step: 2 s
FLAGS = {(0, 0): "compile", (30, 0): "outlier", (30, 1): "outlier|profile", (30, 3): ""}
META = dict(model_flops_per_step=4e15, n_accelerators=4, peak_flops_per_accelerator=1e15)


def _write(folder: Path, *, flags: bool = True) -> Path:
    """Three part files (steps 0-19, 20-39, 40-49); the last has no flag column at all."""
    folder.mkdir(parents=True)
    rows: dict[str, list] = {"step": [], "rank": [], "start_s": [], "end_s": [], "flag": []}
    t = 0.0
    for k in range(N_STEPS):
        d = DURATION.get(k, 2.0)
        for r in range(N_RANKS):
            rows["step"].append(k)
            rows["rank"].append(r)
            rows["start_s"].append(t)
            rows["end_s"].append(t + d)
            rows["flag"].append(FLAGS.get((k, r)))
        t += d
    table = pa.table(rows, schema=pa.schema([("step", pa.int64()), ("rank", pa.int64()), ("start_s", pa.float64()),
                                             ("end_s", pa.float64()), ("flag", pa.string())]))
    for i, (lo, hi) in enumerate(((0, 20), (20, 40), (40, 50))):
        part = table.slice(lo * N_RANKS, (hi - lo) * N_RANKS)
        if i == 2 or not flags:
            part = part.drop_columns(["flag"])
        pq.write_table(part, folder / f"part-{i}.parquet")
    return folder


@pytest.fixture(scope="module")
def flagged(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("flags") / "ds")


@pytest.fixture(scope="module")
def plain(tmp_path_factory) -> Path:
    return _write(tmp_path_factory.mktemp("plain") / "ds", flags=False)


def _load(folder: Path, engine: str, **kw):
    return load_run(folder, engine=engine, progress=False, **META, **kw)


def _close(a: float, b: float) -> bool:
    return a == b or abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def _same_figures(a, b) -> None:
    """The same window, stall seconds, steady-state MFU and breakdown (to 1e-9)."""
    acc_a, acc_b = account(a), account(b)
    wa, wb = acc_a.window.steps, acc_b.window.steps
    assert list(wa["step"]) == list(wb["step"])
    assert list(wa["in_window"]) == list(wb["in_window"]) and list(wa["why"]) == list(wb["why"])
    assert list(acc_a.steps["flag"]) == list(acc_b.steps["flag"])
    assert _close(acc_a.seconds["stall"], acc_b.seconds["stall"])
    assert _close(mfu_summary(acc_a).steady_state_mfu, mfu_summary(acc_b).steady_state_mfu)
    ta, tb = breakdown(acc_a), breakdown(acc_b)
    assert list(ta["category"]) == list(tb["category"])
    for x, y in zip(ta["seconds"], tb["seconds"], strict=True):
        assert _close(float(x), float(y)), (x, y)


def test_in_memory_by_hand(flagged):
    run = _load(flagged, "pandas")
    assert run.reductions is None and "flag" in run.steps.columns
    acc = account(run)
    win = acc.window.steps.set_index("step")
    assert win.loc[0, "why"] == "flagged by the loader (compile)"
    assert win.loc[30, "why"] == "flagged by the loader (outlier,profile)"
    assert int(win["in_window"].sum()) == 48
    assert acc.wall_s == pytest.approx(126.0, abs=1e-12)
    assert acc.ideal_step_s == pytest.approx(2.0, abs=1e-12)
    assert acc.seconds["stall"] == pytest.approx(18.0, abs=1e-9)
    assert acc.seconds["jitter"] == pytest.approx(8.0, abs=1e-9)
    assert acc.seconds["ideal_compute"] == pytest.approx(100.0, abs=1e-9)
    assert mfu_summary(acc).steady_state_mfu == pytest.approx(0.5, abs=1e-12)


@pytest.mark.parametrize("batch_rows", [40, 10**9])  # several step ranges (step 30 in a later one), and one
def test_duckdb_reductions_carry_the_flags(flagged, batch_rows):
    red = _load(flagged, "duckdb", batch_rows=batch_rows).reductions
    assert red is not None
    cols = red.job_step_columns()
    got = dict(zip(cols["step"].tolist(), cols["flag"].tolist(), strict=True))
    # the rows' distinct non-empty flags, split at "|" and sorted: the in-memory rule
    assert got[0] == "compile" and got[30] == "outlier,profile"
    assert {k for k, v in got.items() if v} == {0, 30}


@pytest.mark.parametrize("batch_rows", [40, 10**9])
def test_duckdb_equals_in_memory(flagged, batch_rows):
    _same_figures(_load(flagged, "pandas"), _load(flagged, "duckdb", batch_rows=batch_rows))


def test_dataset_without_flags_is_unchanged(plain):
    # no flag column: no flagged step; the outlier enters the window (49 steps) and books no
    # stall, on both engines alike
    mem, duck = _load(plain, "pandas"), _load(plain, "duckdb")
    assert "flag" not in mem.steps.columns
    assert set(duck.reductions.job_step_columns()["flag"].tolist()) == {""}
    acc = account(duck)
    assert acc.seconds["stall"] == 0.0 and "stall" not in set(breakdown(acc)["category"])
    assert bool(acc.window.steps.set_index("step").loc[30, "in_window"])
    _same_figures(mem, duck)


def test_part_file_with_non_text_flag_is_reported(tmp_path, flagged):
    folder = tmp_path / "ds"
    shutil.copytree(flagged, folder)
    t = pq.read_table(folder / "part-0.parquet")
    t = t.set_column(t.schema.get_field_index("flag"), "flag", pa.array(np.zeros(len(t), np.int64)))
    pq.write_table(t, folder / "part-0.parquet")
    with pytest.warns(Warning):
        red = _load(folder, "duckdb")
    text = red.meta.report.summary() + " " + " ".join(red.meta.report.notes)
    assert "part-0.parquet: 80 rows" in text and "flag: int64" in text and "expected strings" in text
    assert red.meta.report.total_skipped == 1
    assert red.n_step_rows == (N_STEPS - 20) * N_RANKS  # the other parts are read
    with pytest.raises(LoadError, match="part-0.parquet"):
        load_run(folder, engine="duckdb", strict=True, progress=False)


# --- Spark: one local session for the two tests below ----------------------------------------
@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


@pytest.fixture(scope="module")
def spark_run(spark, flagged):
    return _load(flagged, "spark", spark=spark)


def test_spark_reductions_carry_the_flags(spark_run, flagged):
    a = _load(flagged, "duckdb").reductions.job_step_columns()
    b = spark_run.reductions.job_step_columns()
    assert list(a["flag"]) == list(b["flag"])
    assert b["flag"][list(b["step"]).index(30)] == "outlier,profile"


def test_spark_equals_in_memory(spark_run, flagged):
    _same_figures(_load(flagged, "pandas"), spark_run)
