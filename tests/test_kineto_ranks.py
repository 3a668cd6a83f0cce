"""Many per-rank Kineto traces: the process pool and its memory budget, the Parquet cache, bad rank
files, a list of paths, and the same per-file parse as a Spark job (mfu_toolkit.io.kineto_ranks)."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest
from _kineto_cache import _user_cache, quiet_load  # noqa: F401  (the autouse fixture)
from _realdata_b import realdata_dir
from _spark import require_spark
from test_io_kineto import write_trace

from mfu_toolkit.io import LoaderArgumentError, kineto, kineto_ranks, load_run
from mfu_toolkit.io.reading import Limits
from mfu_toolkit.run import LoadError

_load = quiet_load


def _job(folder: Path, n: int = 3, gz: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for r in range(n):
        write_trace(folder / f"job_rank{r}.json{'.gz' if gz else ''}", r, ws=n, shift=3.0 * r, gz=gz)
    return folder


def _same(a, b) -> None:
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.tables["kernels"], b.tables["kernels"])
    assert a.meta.report == b.meta.report
    assert a.meta == b.meta


def test_pool_cache_and_one_worker_give_the_same_run(tmp_path, monkeypatch):
    folder = _job(tmp_path / "job")
    serial = _load(folder, workers=1, cache=False)
    pooled = _load(folder, workers=3)  # parses in 3 processes and writes the caches
    assert not (folder / ".mfu_cache").exists()  # nothing beside the traces unless asked
    caches = sorted((tmp_path / "user_cache" / "kineto").iterdir())
    assert sorted(c.name.split("-", 1)[1] for c in caches) == [f"job_rank{r}.json.gz.parquet" for r in range(3)]
    _same(serial, pooled)

    def no_json(*a, **k):
        raise AssertionError("a trace was parsed although its cache is current")

    monkeypatch.setattr(kineto, "_read_trace", no_json)
    _same(serial, _load(folder, workers=3))  # every rank from its Parquet cache: no JSON read
    # By hand from write_trace's events (µs): step 1 spans [1000, 2000); compute kernels cover
    # [1100, 1400) ∪ [1900, 2000) = 400 µs, the all-reduce [1350, 1600) = 250 µs.
    s1 = serial.steps[(serial.steps["rank"] == 0) & (serial.steps["step"] == 1)].iloc[0]
    assert s1["compute_s"] == pytest.approx(400e-6) and s1["comm_s"] == pytest.approx(250e-6)
    assert sorted(serial.steps["rank"].unique()) == [0, 1, 2]


def test_a_changed_trace_or_a_corrupt_cache_is_parsed_again_and_rewritten(tmp_path):
    folder = _job(tmp_path / "job", n=2, gz=False)
    first = _load(folder)
    trace = folder / "job_rank1.json"
    doc = json.loads(trace.read_text())
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("name") != "ProfilerStep#2"]
    trace.write_text(json.dumps(doc))  # another size and mtime: the old cache must not answer
    changed = _load(folder)
    assert len(changed.steps) == len(first.steps) - 1
    assert sorted(changed.steps[changed.steps["rank"] == 1]["step"]) == [1]

    cache = kineto_ranks.cache_locations(trace)[0]
    assert cache.parent == tmp_path / "user_cache" / "kineto"
    cache.write_bytes(b"PAR1 not really parquet")
    _same(changed, _load(folder))  # ignored, re-parsed ...
    # ... rewritten
    assert cache.read_bytes()[:4] == b"PAR1" and kineto_ranks.read_cache(trace, _key_of(trace, folder)) is not None


def _key_of(trace: Path, root: Path) -> dict:
    r = kineto._rank_reader(str(trace), False, None, str(root))
    return kineto._key(r)


def test_a_read_only_folder_caches_in_the_user_cache_dir(tmp_path):
    folder = _job(tmp_path / "ro", n=2)
    os.chmod(folder, 0o555)  # no write bit: read-only, even for root
    try:
        a = _load(folder)
        assert not (folder / ".mfu_cache").exists()
        user = sorted(p.name for p in (tmp_path / "user_cache" / "kineto").iterdir())
        assert len(user) == 2 and all(n.endswith(".json.gz.parquet") for n in user)
        _same(a, _load(folder))
    finally:
        os.chmod(folder, 0o755)


def test_a_corrupt_rank_is_named_and_counted_the_others_load(tmp_path):
    folder = _job(tmp_path / "job", n=3)
    bad = folder / "job_rank1.json.gz"
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2])  # a truncated gzip stream
    run = _load(folder, workers=2)
    assert sorted(run.steps["rank"].unique()) == [0, 2]
    assert run.meta.report.skipped == {"unreadable file left out": 1}
    assert run.meta.report.examples["unreadable file left out"].startswith("trace file: ")
    assert any(n.startswith("job_rank1.json.gz: unreadable") and "truncated" in n for n in run.meta.report.notes)
    with pytest.raises(LoadError, match=r"job_rank1\.json\.gz.*truncated"):
        _load(folder, strict=True, workers=2)
    with pytest.raises(LoadError, match=r"job_rank1\.json\.gz.*truncated"):
        _load(folder, strict=True, workers=1)


def test_a_list_of_traces_from_several_folders(tmp_path):
    (tmp_path / "host_a").mkdir()
    (tmp_path / "host_b").mkdir()
    a = write_trace(tmp_path / "host_a" / "rank0.json", 0)
    b = write_trace(tmp_path / "host_b" / "rank1.json", 1, shift=2.0)
    run = kineto.load_traces([a, b], workers=2)
    assert sorted(run.steps["rank"].unique()) == [0, 1]
    assert run.meta.extra["files"] == [str(a.resolve()), str(b.resolve())]
    with pytest.raises(LoadError, match="paths must be a non-empty list"):
        kineto.load_traces(str(a))
    with pytest.raises(LoadError, match="trace files not found.*nope.json"):
        kineto.load(tmp_path, files=("nope.json",))


def test_budget_rule_and_option_errors(tmp_path):
    gz = tmp_path / "t.json.gz"
    raw = b'{"traceEvents": []}' * 1000
    gz.write_bytes(gzip.compress(raw))
    assert kineto_ranks.inflated_size(gz, Limits()) == len(raw)  # the gzip trailer's ISIZE
    plain = tmp_path / "t.json"
    plain.write_bytes(raw)
    assert kineto_ranks.inflated_size(plain, Limits()) == len(raw)
    assert kineto_ranks.estimated_cost(len(raw)) == int(kineto_ranks.COST_FACTOR * len(raw)) + kineto_ranks.COST_FLOOR
    assert kineto_ranks.parse_budget("8GB") == 8 * 2**30
    assert kineto_ranks.parse_budget("512 MiB") == 512 * 2**20
    assert 0 < kineto_ranks.parse_budget(None)
    for bad in ("lots", -1, 0, True):
        with pytest.raises(ValueError, match="memory_budget must be"):
            kineto_ranks.parse_budget(bad)
    with pytest.raises(LoaderArgumentError, match="memory_budget must be"):
        kineto.load(plain, memory_budget="lots")
    with pytest.raises(LoaderArgumentError, match="workers must be a positive integer"):
        kineto.load(plain, workers=0)
    with pytest.raises(LoaderArgumentError, match="engine must be one of 'local', 'spark'; got 'dask'"):
        kineto.load(plain, engine="dask")


def _in_flight(path: str, marks: str) -> kineto_ranks.RankPart:
    """Touch a mark while running; report how many marks (files in flight) were seen."""
    import time

    me = Path(marks) / Path(path).name
    me.touch()
    seen = 0
    for _ in range(20):
        seen = max(seen, len(list(Path(marks).iterdir())))
        time.sleep(0.01)
    me.unlink()
    return kineto_ranks.RankPart(path, info={"seen": seen})


def test_the_pool_never_has_more_than_the_budget_in_flight(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    paths = [tmp_path / f"f{i}" for i in range(4)]
    one_at_a_time = kineto_ranks.map_files(_in_flight, paths, args=(str(marks),), workers=4, budget=100, costs=[60] * 4)
    assert [p.info["seen"] for p in one_at_a_time] == [1, 1, 1, 1]
    assert [p.path for p in one_at_a_time] == [str(p) for p in paths]  # in the order given
    two = kineto_ranks.map_files(_in_flight, paths, args=(str(marks),), workers=4, budget=100, costs=[50] * 4)
    assert max(p.info["seen"] for p in two) <= 2
    alone = kineto_ranks.map_files(_in_flight, paths[:2], args=(str(marks),), workers=2, budget=10, costs=[60, 60])
    assert [p.info["seen"] for p in alone] == [1, 1]  # larger than the budget: each runs alone


def test_real_ranks_pooled_and_cached_match_the_raw_json(tmp_path):
    src = realdata_dir() / "kineto"
    folder = tmp_path / "job"
    folder.mkdir()
    files = sorted(src.glob("*sampled_rank-*.json.gz"))
    for f in files:
        shutil.copy(f, folder / f.name)  # a copy, so the test reads the same bytes in its own folder
    serial = _load(folder, workers=1, cache=False)
    _same(serial, _load(folder, workers=2))
    _same(serial, _load(folder, workers=2))  # from the caches
    for f in files:  # ProfilerStep#N annotations on the CPU side, counted in the raw JSON
        text = gzip.decompress(f.read_bytes()).decode()
        rank = int(re.search(r'"rank":\s*(\d+)', text).group(1))
        steps = set(re.findall(r'"cat":\s*"user_annotation",\s*"name":\s*"ProfilerStep#(\d+)"', text))
        assert sorted(serial.steps[serial.steps["rank"] == rank]["step"]) == sorted(map(int, steps))


def test_spark_job_over_trace_paths_matches_the_local_parse(tmp_path):
    require_spark()
    from mfu_toolkit.engine.spark import local_session

    folder = _job(tmp_path / "job", n=2)
    local = _load(folder, workers=1, cache=False)
    spark = local_session("local[2]")
    _same(local, _load(folder, engine="spark", spark=spark, cache=False))
    run = load_run(folder, format="kineto", engine="spark", spark=spark)  # through load_run, writing caches
    _same(local, run)
    assert len(list((tmp_path / "user_cache" / "kineto").iterdir())) == 2 and not (folder / ".mfu_cache").exists()
