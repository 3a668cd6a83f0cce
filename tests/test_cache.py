"""The per-rank trace cache: keyed by content, damaged entries re-parsed and rewritten, nothing
written beside the user's data unless asked, and ``mfu cache info|clear`` (mfu_toolkit.io.cache)."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from _kineto_cache import _user_cache, quiet_load  # noqa: F401  (the autouse fixture)
from _realdata import realdata  # noqa: F401  (the fixture)
from test_io_kineto import write_trace

from mfu_toolkit.cli import main as mfu_main
from mfu_toolkit.io import cache, kineto_ranks, load_run
from mfu_toolkit.run import LoadWarning

_load = quiet_load


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path below ``folder`` (hidden ones too) with its size and mtime."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")}


def _steps(run, rank: int) -> list[int]:
    return sorted(run.steps[run.steps["rank"] == rank]["step"].tolist())


def test_a_rewrite_with_the_same_size_and_mtime_is_parsed_again(tmp_path):
    folder = tmp_path / "job"
    folder.mkdir()
    for r in range(2):
        write_trace(folder / f"rank{r}.json", r)
    trace = folder / "rank1.json"
    assert _steps(_load(folder), 1) == [1, 2]  # write_trace's two ProfilerStep annotations
    st = trace.stat()
    text = trace.read_text()
    assert text.count("ProfilerStep#2") == 1
    trace.write_text(text.replace("ProfilerStep#2", "ProfilerStep#7"))  # same length: same size
    os.utime(trace, ns=(st.st_atime_ns, st.st_mtime_ns))  # as cp -p / rsync -t leave it
    assert trace.stat().st_size == st.st_size and trace.stat().st_mtime_ns == st.st_mtime_ns
    assert _steps(_load(folder), 1) == [1, 7]  # not the stale [1, 2] from the cache


def test_fingerprint_sees_head_tail_middle_and_size(tmp_path):
    p = tmp_path / "big.bin"
    size = 3 * cache.WHOLE_BYTES
    p.write_bytes(bytes(size))
    base = cache.fingerprint(p)
    # offsets the fingerprint reads: the first and last MiB and block 16 of 32 (at 16*size//33)
    for offset in (10, size - 10, 16 * size // 33 + 5):
        with p.open("r+b") as f:
            f.seek(offset)
            f.write(b"\x01")
        assert cache.fingerprint(p) != base, offset
        with p.open("r+b") as f:
            f.seek(offset)
            f.write(b"\x00")
        assert cache.fingerprint(p) == base
    small = tmp_path / "small.bin"
    small.write_bytes(b"a" * 1000)
    before = cache.fingerprint(small)
    small.write_bytes(b"a" * 500 + b"b" + b"a" * 499)  # anywhere in a small file
    assert cache.fingerprint(small) != before


def _damage(entry: Path, edit) -> None:
    t = pq.read_table(entry)
    pq.write_table(edit(t), entry)


@pytest.mark.parametrize("damage", ["drop_column", "drop_rows", "edit_record", "truncate"])
def test_a_damaged_entry_with_the_right_key_is_parsed_again_and_rewritten(tmp_path, damage):
    trace = write_trace(tmp_path / "rank0.json", 0)
    first = _load(trace)
    entry = kineto_ranks.cache_locations(trace)[0]
    assert entry.exists()
    if damage == "drop_column":  # the footer (key included) kept, one column gone
        _damage(entry, lambda t: t.drop_columns([t.column_names[0]]).replace_schema_metadata(t.schema.metadata))
    elif damage == "drop_rows":
        _damage(entry, lambda t: t.slice(0, t.num_rows - 1).replace_schema_metadata(t.schema.metadata))
    elif damage == "edit_record":  # the footer's record changed, the key kept
        def edit(t):
            meta = json.loads(t.schema.metadata[b"mfu_toolkit.rank_part"])
            meta["info"].pop("rank")
            return t.replace_schema_metadata({b"mfu_toolkit.rank_part": json.dumps(meta)})
        _damage(entry, edit)
    else:
        entry.write_bytes(entry.read_bytes()[:-100])
    again = _load(trace)  # no "internal error": parsed again ...
    assert again.steps.equals(first.steps) and again.meta == first.meta
    t = pq.read_table(entry)  # ... and the entry rewritten whole
    meta = json.loads(t.schema.metadata[b"mfu_toolkit.rank_part"])
    assert sorted(t.column_names) == sorted(meta["columns"]) and t.num_rows == meta["rows"] > 0
    assert "rank" in meta["info"]


def test_loading_writes_nothing_into_an_ordinary_or_read_only_folder(tmp_path):
    for name, mode in (("plain", 0o755), ("ro", 0o555)):
        folder = tmp_path / name
        folder.mkdir()
        for r in range(2):
            write_trace(folder / f"job_rank{r}.json.gz", r, gz=True)
        os.chmod(folder, mode)
        try:
            before = _snapshot(folder)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)
                load_run(folder)
                load_run(folder / "job_rank0.json.gz")
                load_run(folder)  # from the caches
            assert _snapshot(folder) == before, name
        finally:
            os.chmod(folder, 0o755)
    assert cache.info()["entries"] == 4  # one entry per trace (named by its full path): 2 ranks x 2 folders


def test_loading_real_traces_writes_nothing_beside_them(realdata):  # noqa: F811
    src = realdata / "kineto"
    files = sorted(src.glob("*sampled_rank-*.json.gz"))
    before = _snapshot(src)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        load_run(files[0])
    assert _snapshot(src) == before
    assert cache.info()["entries"] == 1


def test_beside_only_when_asked_and_the_user_dir_where_the_folder_is_read_only(tmp_path):
    part = kineto_ranks.RankPart("x", {"a": np.arange(3)}, {"k": 1}, {"lines_read": 3})
    plain, ro = tmp_path / "plain", tmp_path / "ro"
    for folder in (plain, ro):
        folder.mkdir()
        (folder / "t.json").write_text("{}")
    os.chmod(ro, 0o555)
    try:
        key = kineto_ranks.cache_key(plain / "t.json", "s")
        assert (kineto_ranks.write_cache(plain / "t.json", key, part, where="beside")
                == plain / ".mfu_cache" / "t.json.parquet")
        assert kineto_ranks.read_cache(plain / "t.json", key, where="beside").columns["a"].tolist() == [0, 1, 2]
        assert kineto_ranks.read_cache(plain / "t.json", key) is None  # the default looks in the user dir only
        key = kineto_ranks.cache_key(ro / "t.json", "s")
        got = kineto_ranks.write_cache(ro / "t.json", key, part, where="beside")
        assert got.parent == tmp_path / "user_cache" / "kineto" and not (ro / ".mfu_cache").exists()
    finally:
        os.chmod(ro, 0o755)
    with pytest.raises(ValueError, match="'beside'"):
        kineto_ranks.cache_locations(plain / "t.json", "nearby")


def test_cache_dir_follows_the_variables(tmp_path, monkeypatch):
    assert cache.cache_dir() == tmp_path / "user_cache"
    monkeypatch.delenv("MFU_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == tmp_path / "xdg" / "mfu_toolkit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / ".cache" / "mfu_toolkit"


def test_mfu_cache_info_and_clear(tmp_path, capsys):
    trace = write_trace(tmp_path / "rank0.json", 0)
    _load(trace)
    user = tmp_path / "user_cache"
    (user / "kineto" / "notes.txt").write_text("not ours")  # a file the package did not write stays
    entry = kineto_ranks.cache_locations(trace)[0]
    assert mfu_main(["cache", "info"]) == 0
    out = capsys.readouterr().out
    size = f"{entry.stat().st_size / 1024:.1f} KiB"  # a few KiB: printed in KiB
    assert 1024 <= entry.stat().st_size < 2**20
    assert f"location: {user}\n" in out and f"entries: 1, size: {size}" in out
    assert mfu_main(["cache", "clear"]) == 0
    assert capsys.readouterr().out == f"removed 1 cache entry ({size}) from {user}\n"
    assert not entry.exists() and (user / "kineto" / "notes.txt").exists()
    assert mfu_main(["cache", "info"]) == 0
    assert "entries: 0, size: 0 bytes" in capsys.readouterr().out
