"""Every engine (pandas, DuckDB, Spark) gives the same answer, or the same refusal, on one dataset.

Three ways they used to differ, each written here as a dataset of part files made by hand:

- step statistics missing from the footers (``write_statistics=False``): the step range must come
  from the data (DuckDB had read "1 useful step");
- file and folder names with glob characters (``?``, ``*``, ``[...]``, ``{a,b}``) or a colon
  beside decoys they would match: each engine must read exactly the listed part files;
- bad rows (null, fractional, huge or negative steps, NaN or infinite times, end before start,
  negative durations): each counted under the same reason with the part file named, on every
  engine, by the one rule table of ``mfu_toolkit.engine.row_rules``.

The reference for each answer is the clean dataset (the bad rows are *extra* rows, so once they
are left out the answer must equal that of the clean rows, figure by figure).
"""

from __future__ import annotations

import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from _spark import local_spark

pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

from mfu_toolkit.analysis import breakdown, mfu_summary  # noqa: E402
from mfu_toolkit.engine import row_rules  # noqa: E402
from mfu_toolkit.io import load_run  # noqa: E402
from mfu_toolkit.io import rules as io_rules  # noqa: E402
from mfu_toolkit.run import LoadError  # noqa: E402
from mfu_toolkit.simulate import simulate  # noqa: E402

N_RANKS, N_STEPS = 4, 60
CFG = dict(n_ranks=N_RANKS, n_steps=N_STEPS, jitter=0.05, slow_ranks=(2,), slow_factor=1.2, warmup_steps=3,
           init_s=2.0, seed=5)


@pytest.fixture(scope="module")
def rows():
    """The simulated rows, steps numbered from 1 (a range the footers used to be needed for)."""
    steps = simulate(**CFG).steps
    steps = steps.assign(step=steps["step"] + 1)
    return steps[["attempt", "step", "rank", "start_s", "end_s", "data_wait_s", "compute_s"]].reset_index(drop=True)


def _write(folder, frame, n_parts=3, *, statistics=(True,) * 3, names=None, floats=False):
    """``frame`` as ``n_parts`` part files split by step; ``statistics[i]``: write part i's statistics."""
    folder.mkdir(parents=True, exist_ok=True)
    edges = np.linspace(frame["step"].min(), frame["step"].max() + 1, n_parts + 1)
    for i in range(n_parts):
        part = frame[(frame["step"] >= edges[i]) & (frame["step"] < edges[i + 1])]
        if floats:
            part = part.astype("float64")
        name = names[i] if names else f"part-{i}.parquet"
        pq.write_table(pa.Table.from_pandas(part, preserve_index=False), str(folder / name),
                       write_statistics=statistics[i])


def _answer(run):
    """What a user reads: the useful steps, the MFU figures and the breakdown's seconds."""
    s = mfu_summary(run)
    b = breakdown(run)
    return (run.n_step_rows, s.useful_steps, round(s.wall_s, 9), round(s.goodput, 12),
            tuple(b["category"]), tuple(np.round(b["seconds"].to_numpy(float), 9)))


def _load(folder, engine, **kw):
    return load_run(folder, format="parquet_dataset", engine=engine, progress=False, **kw)


# --- step ranges from the data ------------------------------------------------------------------
@pytest.mark.parametrize("statistics", [(False, False, False), (True, False, True)], ids=["none", "one-part"])
def test_steps_without_footer_statistics(tmp_path, rows, statistics):
    _write(tmp_path / "ds", rows, statistics=statistics)
    md = pq.read_metadata(tmp_path / "ds" / "part-1.parquet")
    assert md.row_group(0).column(1).statistics is None  # the writer really left them out
    want = _answer(_load(tmp_path / "ds", "pandas"))
    assert want[1] > 40  # every step of the 60 but warm-up and the first (hand count from CFG)
    for batch_rows in (50, 10**9):  # many step ranges, and one
        assert _answer(_load(tmp_path / "ds", "duckdb", batch_rows=batch_rows)) == want


# --- literal paths ----------------------------------------------------------------------------
# (dataset folder, decoy folders it would match as a glob)
ODD_FOLDERS = [("run?1", ["runA1", "runB1"]), ("a{b,c}", ["ab", "ac"]), ("x*y", ["xzzy", "x-more-y"]),
               ("p[1]", ["p1"]), ("c:d", [])]


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory, rows):
    """Each odd folder holds the clean rows; each decoy other ranks' rows, and a folder named
    with a colon sits beside them all (a sibling Hadoop's listing cannot parse)."""
    root = tmp_path_factory.mktemp("odd")
    for name, decoys in ODD_FOLDERS:
        _write(root / name, rows)
        for d in decoys:  # other ranks, twice as slow: read by mistake, they change every figure
            decoy = rows.assign(rank=rows["rank"] + 100, end_s=rows["end_s"] + (rows["end_s"] - rows["start_s"]))
            _write(root / d, decoy, n_parts=3)
    # part[1].parquet beside part1.parquet in one folder: both are parts, each read once
    half = rows["step"] <= N_STEPS // 2
    _write(root / "parts", rows[half], n_parts=1, names=["part[1].parquet"])
    _write(root / "parts", rows[~half], n_parts=1, names=["part1.parquet"])
    return root


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
@pytest.mark.parametrize("name", [n for n, _ in ODD_FOLDERS] + ["parts"])
def test_paths_are_literal(odd_tree, rows, engine, name):
    run = _load(odd_tree / name, engine)
    assert run.n_step_rows == len(rows)  # no decoy read, no part read twice
    assert not run.meta.report.skipped
    assert _answer(run) == _answer(_load(odd_tree / "run?1", "pandas"))


def test_relative_path_with_a_colon(odd_tree, rows, monkeypatch):
    monkeypatch.chdir(odd_tree)
    assert _load("c:d", "duckdb").n_step_rows == len(rows)


def test_escaping_is_per_engine():
    from pathlib import Path

    from mfu_toolkit.engine.duck import literal_path as duck
    from mfu_toolkit.engine.spark import literal_path as spark

    p = Path("/d/run?1/a{b,c}/x*y/p[1]/b\\q.parquet")
    assert duck(p) == "/d/run[?]1/a[{]b,c[}]/x[*]y/p[[]1[]]/b\\q.parquet"  # brackets; a backslash is plain
    assert spark(p) == "/d/run\\?1/a\\{b,c\\}/x\\*y/p\\[1\\]/b\\\\q.parquet"  # Hadoop: backslash escapes


# --- one rule table for bad rows ---------------------------------------------------------------
# (what the extra row holds, the reason it must be counted under, the detail that says which rule it broke)
BAD_ROWS = [
    ({"step": np.nan}, io_rules.BAD_STEP, "NaN or infinite"),
    ({"step": None}, io_rules.BAD_STEP, "missing"),
    ({"step": 3.5}, io_rules.BAD_STEP, "fractional"),
    ({"step": 1e300}, io_rules.BAD_STEP, "past the int64 range"),
    ({"step": -2.0}, io_rules.BAD_STEP, "below 0"),
    ({"attempt": -1.0}, row_rules.BAD_ATTEMPT, "below 0"),
    ({"attempt": 0.5}, row_rules.BAD_ATTEMPT, "fractional"),
    ({"rank": None}, row_rules.BAD_RANK, "missing"),
    ({"rank": -3.0}, row_rules.BAD_RANK, "below -1"),
    ({"start_s": np.nan}, io_rules.NON_FINITE_TIME, "start_s"),
    ({"end_s": np.inf}, io_rules.NON_FINITE_TIME, "end_s"),
    ({"end_s": None}, io_rules.NON_FINITE_TIME, "end_s"),
    ({"end_s": -5.0}, io_rules.END_BEFORE_START, "step"),
    ({"compute_s": -1.0}, io_rules.VALUE_OUT_OF_RANGE, "compute_s: negative"),
    ({"data_wait_s": np.inf}, io_rules.VALUE_OUT_OF_RANGE, "data_wait_s: infinite"),
]


@pytest.fixture(scope="module")
def bad_dataset(tmp_path_factory, rows):
    """The clean rows in three parts, and one part per bad row: a copy of a real row with one
    field spoiled (so the dataset without the bad rows is exactly the clean one)."""
    root = tmp_path_factory.mktemp("bad")
    _write(root / "clean", rows, floats=True)
    shutil.copytree(root / "clean", root / "bad")
    for i, (change, _, _) in enumerate(BAD_ROWS):
        row = {k: [float(v)] for k, v in rows.iloc[7 * i].items()}
        row.update({k: [v] for k, v in change.items()})  # None: a NULL; np.nan: a NaN
        table = pa.table({k: pa.array(v, pa.float64()) for k, v in row.items()})
        pq.write_table(table, str(root / "bad" / f"bad-{i:02d}.parquet"))
    return root


def _expected_skips():
    want: dict[str, int] = {}
    for _, reason, _ in BAD_ROWS:
        want[reason] = want.get(reason, 0) + 1
    return want


def test_each_rule_is_tested():
    tested = {(reason, detail) for _, reason, detail in BAD_ROWS}
    assert tested <= {(r.reason, r.detail) for r in row_rules.ROW_RULES}  # the reasons are the table's own
    assert {r.test for r in row_rules.ROW_RULES} <= {t if ":" not in t else t for t in
                                                    ("missing", "not_finite", "infinite", "below:0", "below:-1",
                                                     "past_int64", "fractional", "end_before_start")}


def _check_bad(run, clean_answer, engine):
    rep = run.meta.report
    assert rep.skipped == _expected_skips(), engine
    assert _answer(run) == clean_answer, engine
    notes = "\n".join(rep.notes)
    for i, (_, reason, detail) in enumerate(BAD_ROWS):  # each part's note names the rule it broke
        assert f"bad-{i:02d}.parquet: 1 row(s) left out: {reason} ({detail})" in notes, (engine, i)


@pytest.mark.parametrize("engine", ["pandas", "duckdb"])
def test_bad_rows_counted_alike(bad_dataset, engine):
    clean = _answer(_load(bad_dataset / "clean", "pandas"))
    _check_bad(_load(bad_dataset / "bad", engine), clean, engine)


def test_strict_refuses_alike(bad_dataset):
    msgs = []
    for engine in ("pandas", "duckdb"):
        with pytest.raises(LoadError) as exc:
            _load(bad_dataset / "bad", engine, strict=True)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]
    assert "bad-00.parquet" in msgs[0] and f"{io_rules.BAD_STEP} (NaN or infinite)" in msgs[0]


def test_only_bad_rows_is_one_clear_refusal(tmp_path, rows):
    _write(tmp_path / "ds", rows.assign(end_s=rows["start_s"] - 1.0), floats=True)
    msgs = []
    for engine in ("pandas", "duckdb"):
        with pytest.raises(LoadError, match="no step row of the dataset keeps the row rules") as exc:
            _load(tmp_path / "ds", engine)
        msgs.append(str(exc.value))
    assert msgs[0] == msgs[1]


def _mixed_types(folder, rows):
    """Parts that store ``step`` and ``rank`` as int64 beside parts that store them as double."""
    _write(folder, rows)
    part = folder / "part-1.parquet"
    t = pq.read_table(str(part))
    t = t.set_column(t.schema.get_field_index("step"), "step", t.column("step").cast(pa.float64()))
    t = t.set_column(t.schema.get_field_index("rank"), "rank", t.column("rank").cast(pa.float64()))
    pq.write_table(t, str(part))


def test_mixed_integer_and_double_parts(tmp_path, rows):
    _mixed_types(tmp_path / "ds", rows)
    want = _answer(_load(tmp_path / "ds", "pandas"))
    assert want[0] == len(rows) and _answer(_load(tmp_path / "ds", "duckdb")) == want


# --- Spark: one local session -------------------------------------------------------------------
@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


def test_spark_agrees(spark, odd_tree, bad_dataset, rows, tmp_path):
    want = _answer(_load(odd_tree / "run?1", "pandas"))
    for name in [n for n, _ in ODD_FOLDERS] + ["parts"]:
        run = _load(odd_tree / name, "spark", spark=spark)
        assert run.n_step_rows == len(rows) and _answer(run) == want, name
    _write(tmp_path / "nostats", rows, statistics=(True, False, True))
    assert _answer(_load(tmp_path / "nostats", "spark", spark=spark)) == want
    _mixed_types(tmp_path / "mixed", rows)  # Spark's mergeSchema alone refuses int64 beside double
    assert _answer(_load(tmp_path / "mixed", "spark", spark=spark)) == want
    clean = _answer(_load(bad_dataset / "clean", "pandas"))
    _check_bad(_load(bad_dataset / "bad", "spark", spark=spark), clean, "spark")
    with pytest.raises(LoadError) as exc:
        _load(bad_dataset / "bad", "spark", spark=spark, strict=True)
    with pytest.raises(LoadError) as ref:
        _load(bad_dataset / "bad", "duckdb", strict=True)
    assert str(exc.value) == str(ref.value)


def test_integer_columns_keep_the_rules_that_can_fail(tmp_path, rows):
    """Stored as int64, a step or rank cannot be NaN or fractional (those tests are not run), but
    it can still be negative or NULL: counted alike."""
    _write(tmp_path / "ds", rows)
    bad = pa.table({"attempt": pa.array([0, 0, 0], pa.int64()), "step": pa.array([-1, 5, None], pa.int64()),
                    "rank": pa.array([0, -5, 0], pa.int64()), "start_s": [1.0, 1.0, 1.0], "end_s": [2.0, 2.0, 2.0],
                    "data_wait_s": [0.0, 0.0, 0.0], "compute_s": [1.0, 1.0, 1.0]})
    pq.write_table(bad, str(tmp_path / "ds" / "bad.parquet"))
    want = {io_rules.BAD_STEP: 2, row_rules.BAD_RANK: 1}
    answers = []
    for engine in ("pandas", "duckdb"):
        run = _load(tmp_path / "ds", engine)
        assert run.meta.report.skipped == want, engine
        answers.append(_answer(run))
    assert answers[0] == answers[1] == _answer(_load(tmp_path / "ds", "pandas"))
