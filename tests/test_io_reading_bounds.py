"""Streams are spooled within a limit and the spool is removed on every exit; a Parquet dataset
is recognised from its part files as a whole (mfu_toolkit.io.reading, parquet_dataset.sniff)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from _timing import child_cpu_seconds, slowdown

from mfu_toolkit.io.reading import SPOOL_PREFIX, spool_input
from mfu_toolkit.run import LoadError

LIMIT = 1_000_000  # bytes: every stream test stays within a few MB of disk and seconds of time
_LOAD_STDIN = "import sys; from mfu_toolkit.io import load_run; load_run('-')"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {**os.environ, "TMPDIR": str(tmp_path), "MFU_MAX_STREAM_BYTES": str(LIMIT),
            "MFU_CACHE_DIR": str(tmp_path / "cache"), **extra}


def _spools(tmp_path: Path) -> list[Path]:
    return sorted(tmp_path.glob(f"{SPOOL_PREFIX}*"))


def _mfu(args: str, tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(f"{args}", shell=True, capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path), cwd=tmp_path)


_ANALYZE = f"'{sys.executable}' -m mfu_toolkit.cli analyze"
# each endless stream, and a benign one: the same stream cut at the limit (kept, then not recognised)
_ENDLESS = {f"{_ANALYZE} /dev/zero": f"head -c {LIMIT} /dev/zero | {_ANALYZE} -",
            f"yes | {_ANALYZE} -": f"yes | head -c {LIMIT} | {_ANALYZE} -"}


@pytest.mark.parametrize("command", list(_ENDLESS))
def test_an_endless_stream_is_refused_at_the_limit_in_one_line(tmp_path, command):
    got = {}
    # CPU seconds of the commands (the shell, the loader and the writer): the refusal costs about
    # what reading the limit does, where reading on past the limit would cost without end
    ratio = slowdown(lambda: got.setdefault("r", _mfu(command, tmp_path)), lambda: _mfu(_ENDLESS[command], tmp_path),
                     repeat=1, clock=child_cpu_seconds)
    r = got["r"]
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr
    assert f"longer than {LIMIT:,} bytes" in lines[0] and "MFU_MAX_STREAM_BYTES" in lines[0]
    assert _spools(tmp_path) == []
    assert ratio < 5, (f"the endless stream took {ratio:.1f}x the CPU time of {LIMIT:,} bytes of it "
                       "(bound 5x; reading on past the limit grows without end)")


def _fifo_with(tmp_path: Path, data: bytes) -> tuple[Path, threading.Thread]:
    fifo = tmp_path / f"in{len(list(tmp_path.iterdir()))}"
    os.mkfifo(fifo)

    def writer():
        try:
            with open(fifo, "wb") as f:
                f.write(data)
        except BrokenPipeError:  # the reader stopped at its limit
            pass

    t = threading.Thread(target=writer, daemon=True)
    t.start()
    return fifo, t


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_stream_of_exactly_the_limit_is_kept_one_more_byte_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    data = b"x" * 5000
    fifo, t = _fifo_with(tmp_path, data)
    with spool_input(fifo, max_bytes=5000) as sp:
        assert sp.path.read_bytes() == data
    t.join(10)
    assert _spools(tmp_path) == []
    fifo, t = _fifo_with(tmp_path, data)
    with pytest.raises(LoadError, match=r"longer than 4,999 bytes.*MFU_MAX_STREAM_BYTES"):
        spool_input(fifo, max_bytes=4999)
    t.join(10)
    assert _spools(tmp_path) == []
    monkeypatch.setenv("MFU_MAX_STREAM_BYTES", "4999")  # the variable sets the default limit
    fifo, t = _fifo_with(tmp_path, data)
    with pytest.raises(LoadError, match="4,999"):
        spool_input(fifo)
    t.join(10)


def _start_reading_stdin(tmp_path: Path) -> subprocess.Popen:
    """A load of stdin that has spooled some bytes and waits for more (the writer stays open)."""
    proc = subprocess.Popen([sys.executable, "-c", _LOAD_STDIN], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env=_env(tmp_path))
    proc.stdin.write(b"step 1 loss 2.0\n" * 1000)
    proc.stdin.flush()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        got = [d / "input" for d in _spools(tmp_path) if (d / "input").exists()]
        if got and got[0].stat().st_size == 16_000:
            return proc
        time.sleep(0.1)
    proc.kill()
    raise AssertionError(f"the spool never held the bytes written: {proc.stderr.read()}")


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_an_interrupted_read_removes_its_spool(tmp_path, sig):
    proc = _start_reading_stdin(tmp_path)
    proc.send_signal(sig)
    try:
        proc.wait(30)
    finally:
        proc.kill()
        proc.stdin.close()
    assert proc.returncode != 0
    assert _spools(tmp_path) == []


def test_a_killed_reads_spool_is_removed_by_the_next_one(tmp_path, monkeypatch):
    proc = _start_reading_stdin(tmp_path)
    proc.kill()  # SIGKILL: nothing can clean up in that process
    proc.wait(30)
    proc.stdin.close()
    assert len(_spools(tmp_path)) == 1
    live = tmp_path / f"{SPOOL_PREFIX}{os.getpid()}-keep"  # a running process's spool stays
    live.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    fifo, t = _fifo_with(tmp_path, b"abc")
    with spool_input(fifo) as sp:
        assert sp.path.read_bytes() == b"abc"
    t.join(10)
    assert _spools(tmp_path) == [live]


def _part(path: Path, rank: int, n_steps: int = 5) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    steps = list(range(n_steps))
    pq.write_table(pa.table({"step": steps, "rank": [rank] * n_steps, "start_s": [float(s) for s in steps],
                             "end_s": [s + 1.0 for s in steps]}), path)


def _foreign(path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"user_id": [1, 2], "score": [0.5, 0.7]}), path)


@pytest.mark.parametrize("odd", ["a_foreign.parquet", "part-0002b.parquet", "z_foreign.parquet"])
def test_a_dataset_with_one_foreign_part_is_recognised_and_the_part_named(tmp_path, odd):
    import warnings

    from mfu_toolkit.io import detect_format, load_run
    from mfu_toolkit.io.formats import parquet_dataset
    from mfu_toolkit.run import LoadWarning

    for r in range(4):
        _part(tmp_path / f"part-{r:04d}.parquet", r)
    _foreign(tmp_path / odd)  # first, in the middle or last in name order
    assert parquet_dataset.sniff(tmp_path, b"") == 0.8  # recognised, but not every part fits
    assert detect_format(tmp_path) == "parquet_dataset"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        run = load_run(tmp_path)
    assert len(run.steps) == 4 * 5 and sorted(run.steps["rank"].unique()) == [0, 1, 2, 3]
    assert any(n.startswith(f"{odd}: 2 rows left out: missing column(s)") for n in run.meta.report.notes)


def test_a_folder_mostly_foreign_is_not_a_dataset_and_a_large_one_is_sampled(tmp_path):
    from mfu_toolkit.io.formats import parquet_dataset

    _part(tmp_path / "b.parquet", 0)
    for name in ("a.parquet", "c.parquet"):
        _foreign(tmp_path / name)
    assert parquet_dataset.sniff(tmp_path, b"") == 0.0  # one of three parts fits: not a dataset
    big = tmp_path / "big"
    big.mkdir()
    for r in range(100):
        _part(big / f"part-{r:04d}.parquet", r, n_steps=1)
    _foreign(big / "_hidden.parquet")  # metadata-style names are not parts
    _foreign(big / "part-0000a.parquet")  # not in the 64 sampled footers, reported when read
    sample = parquet_dataset._sample_parts(big)
    assert len(sample) == 64 and sample[0].name == "part-0000.parquet" and sample[-1].name == "part-0099.parquet"
    assert parquet_dataset.sniff(big, b"") == 0.9
