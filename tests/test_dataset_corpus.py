"""A seeded corpus of damaged dataset folders and recorder folders (see ``_dataset_corpus``).

Datasets: each mutation kind of ``DATASET_MUTATIONS`` alone, then seeded combinations of two or
three, each loaded on pandas and DuckDB (forked, capped as ``_corpus.check``): the engines must
give the same answer (figures to float rounding, rows skipped by reason) or the same refusal
(class, files named), never a foreign exception or an internal error, and a pandas Run must read
back equal from ``save_run``. A handful of them also on Spark, one local session for the module,
gated as ``tests/test_engine_agree.py`` gates Spark (``_spark.local_spark``: skipped, saying why,
where PySpark or Java is missing). Recorder folders: seeded byte-level and folder-level damage of a
job written by ``StepRecorder`` itself; each loads (and round-trips) or ends in the toolkit's error.

Known engine bugs are ``xfail(strict=True)`` naming the bug: fixed, they fail here until the mark goes.
``MFU_DATASET_COMBOS`` (default 6) and ``MFU_RECORDED_SEEDS`` (default 2) size the seeded parts.
"""

from __future__ import annotations

import math
import os
import random
import sys

import pytest

pytest.importorskip("duckdb")
pytest.importorskip("sqlglot")

import _dataset_corpus as dc  # noqa: E402
from _corpus import check  # noqa: E402
from _spark import local_spark  # noqa: E402

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the corpus check forks and reads /proc")

COMBOS = int(os.environ.get("MFU_DATASET_COMBOS", "6"))
RECORDED_SEEDS = int(os.environ.get("MFU_RECORDED_SEEDS", "2"))

# Engine bugs the seeded corpus hits, as (mutation kind, seed) -> reason, each an
# xfail(strict=True) until fixed. DuckDB once folded isnan(x) to false where a Parquet column's
# min/max statistics exclude NaN (https://github.com/duckdb/duckdb/issues/25521; "nan-inf" seed 1
# and test_nan_beside_statistics pin it, fixed in engine/duck.py).
KNOWN: dict[tuple[str, int], str] = {}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return dc.clean_dataset(tmp_path_factory.mktemp("clean") / "ds")


def test_clean_dataset_agrees_with_its_simulation(clean):
    """The reference: the clean dataset's answer on every engine is the simulated Run's own."""
    from mfu_toolkit.analysis import mfu_summary
    from mfu_toolkit.simulate import simulate

    outcomes, problems = dc.check_dataset(clean)
    assert not problems, problems
    sim = simulate(**dc.SIM)
    assert outcomes["pandas"]["answer"]["rows"] == len(sim.steps)  # every row read back
    assert sim.meta.extra["injected"]["failures"] >= 1  # the corpus damages a run with a restart
    assert math.isclose(outcomes["duckdb"]["answer"]["steady_state_mfu"], mfu_summary(sim).steady_state_mfu,
                        rel_tol=1e-12)


def _case(kind, seed):
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[(kind, seed)])] if (kind, seed) in KNOWN else []
    return pytest.param(kind, seed, marks=marks, id=f"{kind}-{seed}")


@pytest.mark.parametrize(("kind", "seed"), [_case(k, 0) for k in dc.DATASET_MUTATIONS] + [_case("nan-inf", 1)])
def test_each_dataset_mutation_agrees(clean, tmp_path, kind, seed):
    folder = dc.mutate_dataset(clean, tmp_path / "m", [kind], random.Random(f"{kind}:{seed}"))
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems


@pytest.mark.parametrize("seed", range(COMBOS))
def test_combined_dataset_mutations_agree(clean, tmp_path, seed):
    rng = random.Random(f"combo:{seed}")
    kinds = rng.sample(sorted(dc.DATASET_MUTATIONS), rng.choice([2, 3]))
    folder = dc.mutate_dataset(clean, tmp_path / "m", kinds, rng)
    _, problems = dc.check_dataset(folder)
    assert not problems, (kinds, problems)


# --- regressions of bugs this corpus found ------------------------------------------------------
def test_damaged_pages_are_one_refusal_naming_the_part(clean, tmp_path):
    """A part whose footer reads but whose pages do not: pandas raised an internal error (an
    OSError from pyarrow), DuckDB a LoadError that named no file for some damage."""
    folder = dc.mutate_dataset(clean, tmp_path / "m", ["damage-pages"], random.Random("damage-pages:1"))
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems
    for engine, o in outcomes.items():
        assert o["kind"] == "refused" and o["cls"] == "LoadError", engine
        assert "is damaged past its footer" in o["msg"], engine
        assert len(dc.named_files(o["msg"], folder)) == 1, (engine, o["msg"])  # the one part, named


def test_repeated_rows_are_refused_on_every_engine(clean, tmp_path):
    """A part written twice: pandas refused (the Run's schema), DuckDB answered counting every row twice."""
    folder = dc.mutate_dataset(clean, tmp_path / "m", ["duplicate-part"], random.Random("duplicate-part:0"))
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems
    assert {o["cls"] for o in outcomes.values()} == {"SchemaError"}
    assert all("(attempt, step, rank) must be unique" in o["msg"] for o in outcomes.values())


# DuckDB once batched the step range by its span: one valid step number of 2**53 + 1 built a
# 9e9-edge array, and a step of 10**12 beside 39 steps was refused as "about 39,000,000 steps";
# the batches are bounded by the rows now (engine/duck.py step_batches).


@pytest.mark.parametrize("column,value", [
    ("step", 2**63 - 1), ("step", -(2**63)),
    ("step", 2**53 + 1), ("step", 10**12),
    ("rank", 2**63 - 1), ("rank", -(2**63)), ("rank", 2**53 + 1)])
def test_int64_past_two_to_the_53(clean, tmp_path, column, value):
    """An int64 beyond 2**53 in a column another part stores as double: pandas' rule table cast it
    to double with pyarrow's safe cast (an internal error: 'Integer value ... not in range');
    every engine must round it as its CAST does and count it alike (2**63 - 1 is past int64)."""
    import pyarrow as pa

    folder = dc.mutate_dataset(clean, tmp_path / "m", [], random.Random(0))
    first, second = dc.part_files(folder)[:2]
    t = dc._read(first)
    dc._write(dc._set(t, column, t.column(column).cast(pa.float64())), first)
    dc._write(dc._with_values(dc._read(second), column, [4], [value]), second)
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems
    assert outcomes["pandas"]["kind"] == "ok"
    if value == 2**63 - 1:  # as a double it is 2**63: past int64, and counted (one row)
        assert sum(outcomes["pandas"]["skipped"].values()) == 1


@pytest.mark.parametrize("attempt", [2**62, 5])
def test_attempt_gaps_are_refused_on_every_engine(clean, tmp_path, attempt):
    """One row of attempt 2**62 (or 5, beside attempts 0 and 1): pandas refused it (the Run's
    schema: attempts run 0, 1, 2, ... without gaps), DuckDB answered with the extra attempt."""
    folder = dc.mutate_dataset(clean, tmp_path / "m", [], random.Random(0))
    part = dc.part_files(folder)[1]
    dc._write(dc._with_values(dc._read(part), "attempt", [3], [attempt]), part)
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems
    assert {o["cls"] for o in outcomes.values()} == {"SchemaError"}
    assert all("without gaps" in o["msg"] for o in outcomes.values())


@pytest.mark.parametrize("column", ["compute_s", "start_s"])
def test_nan_beside_statistics(clean, tmp_path, column):
    """One NaN in a part whose other values give the footer min/max statistics: NaN compute_s is
    'not logged' (busy = span - wait), a NaN start_s a bad row; DuckDB sees neither."""
    folder = dc.mutate_dataset(clean, tmp_path / "m", [], random.Random(0))
    part = dc.part_files(folder)[0]
    dc._write(dc._with_values(dc._read(part), column, [5], [math.nan]), part)
    outcomes, problems = dc.check_dataset(folder)
    assert not problems, problems


# --- Spark: a handful of datasets on one local session -------------------------------------------
SPARK_CASES = [["odd-folder-name"], ["int-to-double", "nulls"], ["damage-pages"], ["duplicate-rows"],
               ["fractional-steps", "huge"], ["drop-optional", "empty-part"], ["odd-part-name", "stats-all"],
               ["int-to-uint64", "double-to-float32"], ["extra-column", "truncate-part"]]


@pytest.fixture(scope="module")
def spark():
    yield from local_spark()


@pytest.mark.parametrize("kinds", SPARK_CASES, ids=["+".join(k) for k in SPARK_CASES])
def test_spark_agrees(spark, clean, tmp_path, kinds):
    folder = dc.mutate_dataset(clean, tmp_path / "m", kinds, random.Random("spark:" + "+".join(kinds)))
    outcomes, problems = dc.check_dataset(folder, spark=spark)
    assert "spark" in outcomes and not problems, problems


# --- recorder folders ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    return dc.clean_recorded(tmp_path_factory.mktemp("rec") / "job")


def test_clean_recorded_folder(recorded):
    """The recorder's own folder loads: 2 ranks x 12 steps (as written), and round-trips."""
    from mfu_toolkit.io import load_run

    assert check(recorded, "recorded") == "ok"
    run = load_run(recorded, format="recorded")
    assert run.n_step_rows == 2 * 12 and not run.meta.report.skipped


@pytest.mark.parametrize("seed", range(RECORDED_SEEDS))
def test_damaged_recorded_folders_load_or_fail_cleanly(recorded, tmp_path, seed):
    problems = []
    for kind, folder in dc.recorded_variants(recorded, tmp_path, random.Random(f"recorded:{seed}")):
        verdict = check(folder, "recorded")
        if verdict != "ok":
            problems.append(f"{kind}: {verdict}")
    assert not problems, problems
