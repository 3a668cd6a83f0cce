"""The one reader: bounded inflation, line ends, over-long lines, JSON nesting, stdin and FIFOs.

Inputs are built here byte by byte; expected values come from the bytes themselves (how many
lines a text has, how large a gzip stream inflates to), never from the reader's output.
"""

from __future__ import annotations

import gzip
import os
import struct
import subprocess
import sys
import threading
import time
import warnings
import zlib
from pathlib import Path

import pytest
from _samples import write_sacct

from mfu_toolkit.io import load_run
from mfu_toolkit.io.reading import (
    Limits,
    iter_lines,
    parse_json,
    read_bytes,
    read_head,
    spool_input,
)
from mfu_toolkit.run import LoadError


def _lines(tmp_path: Path, data: bytes, **limits: int) -> list[tuple[int, str]]:
    p = tmp_path / "t.txt"
    p.write_bytes(data)
    return list(iter_lines(p, Limits(**limits) if limits else Limits()))


# --- line ends -------------------------------------------------------------------------------


@pytest.mark.parametrize("sep", [b"\n", b"\r\n", b"\r"])
def test_every_line_end_ends_a_line(tmp_path, sep):
    data = sep.join([b"a", b"b", b"c"]) + sep
    assert _lines(tmp_path, data) == [(1, "a"), (2, "b"), (3, "c"), (4, "")]


def test_text_before_a_carriage_return_is_its_own_line(tmp_path):
    # A progress bar's redraw used to keep only the last segment, dropping a record before it.
    data = b"step 1 done\rprogress 50%\rstep 2 done\n"
    assert [t for _, t in _lines(tmp_path, data)] == ["step 1 done", "progress 50%", "step 2 done", ""]


def test_crlf_split_across_chunks_is_one_break(tmp_path):
    # The reader takes 1 MiB chunks: put the '\r' at the end of the first one.
    first = b"x" * ((1 << 20) - 1) + b"\r"
    data = first + b"\nnext\n"
    got = _lines(tmp_path, data)
    assert [n for n, _ in got] == [1, 2, 3] and got[1] == (2, "next")


def test_bom_and_ansi_codes_are_removed(tmp_path):
    assert _lines(tmp_path, b"\xef\xbb\xbf\x1b[32mgreen\x1b[0m\n")[0] == (1, "green")


def test_non_utf8_bytes_are_replaced_not_fatal(tmp_path):
    assert _lines(tmp_path, b"ok \xff\xfe end\n")[0] == (1, "ok \ufffd\ufffd end")


def test_an_over_long_line_is_counted_never_held(tmp_path):
    seen = []
    p = tmp_path / "t.txt"
    p.write_bytes(b"short\n" + b"y" * 5000 + b"\nafter\n" + b"z" * 3000)
    got = list(iter_lines(p, Limits(max_line_bytes=1000), too_long=lambda ln, n: seen.append((ln, n))))
    assert got == [(1, "short"), (3, "after")]
    assert seen == [(2, 5000), (4, 3000)]


def test_the_reader_counts_over_long_lines_as_skips(tmp_path):
    lines = [f"completed step: {i}, seconds: 1.0, TFLOP/s/device: 100.0, loss: 2.0" for i in range(5)]
    lines.insert(2, "[" + "x" * 5000)
    p = tmp_path / "train.log"
    p.write_text("\n".join(lines) + "\n")
    with pytest.warns(Warning, match="line too long"):
        run = load_run(p, format="maxtext", max_line_bytes=1000)
    reason = next(k for k in run.meta.report.skipped if k.startswith("line too long"))
    assert run.meta.report.first_lines[reason] == [3]
    assert len(run.steps) == 5
    with pytest.raises(LoadError, match="line 3"):
        load_run(p, format="maxtext", max_line_bytes=1000, strict=True)


# --- bounded gzip ------------------------------------------------------------------------------


def test_a_gzip_bomb_is_refused_naming_the_file(tmp_path):
    # 64 MiB of zeros compress to about 64 KiB: 1000x, far past the 64x default factor, and the
    # floor is lowered so the test stays small.
    p = tmp_path / "bomb.log.gz"
    p.write_bytes(gzip.compress(b"\0" * (64 << 20), compresslevel=9))
    size = p.stat().st_size
    limit = Limits(inflate_factor=64, inflate_floor=1 << 20)
    assert size * 64 < 64 << 20
    with pytest.raises(LoadError, match=r"bomb\.log\.gz: gzip stream inflates past"):
        read_bytes(p, limit)


def test_a_trailer_claiming_4_gib_allocates_nothing_of_the_sort(tmp_path):
    # A 3 KB stream whose trailer (ISIZE) claims 4 GiB - 1 used to allocate 4.2 GB before the
    # damage showed. Inflated as a stream, it is refused at its length check with a few KB held.
    import tracemalloc

    body = gzip.compress(b"hello\n" * 500)
    p = tmp_path / "forged.json.gz"
    p.write_bytes(body[:-4] + struct.pack("<I", 0xFFFFFFFF))
    tracemalloc.start()
    try:
        with pytest.raises(LoadError, match=r"forged\.json\.gz: corrupt gzip stream .*length"):
            read_bytes(p)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_truncated_and_corrupt_gzip_are_load_errors(tmp_path):
    good = gzip.compress(b"line\n" * 10_000)
    (tmp_path / "cut.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(LoadError, match="cut.gz: corrupt gzip stream .*truncated"):
        read_bytes(tmp_path / "cut.gz")
    bad = bytearray(good)
    bad[20:40] = b"\xff" * 20
    (tmp_path / "bad.gz").write_bytes(bytes(bad))
    with pytest.raises(LoadError, match="bad.gz: corrupt gzip stream"):
        read_bytes(tmp_path / "bad.gz")


def test_concatenated_gzip_members_are_all_read(tmp_path):
    p = tmp_path / "two.gz"
    p.write_bytes(gzip.compress(b"first\n") + gzip.compress(b"second\n"))
    assert read_bytes(p) == b"first\nsecond\n"
    assert read_head(p, 3) == b"fir"


def test_no_memory_error_or_zlib_error_leaves_load_run(tmp_path):
    p = tmp_path / "trace.json.gz"
    p.write_bytes(gzip.compress(b"[" * (8 << 20)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for fmt in ("auto", "kineto", "table", "megatron", "mlperf"):
            try:
                load_run(p, format=fmt, max_inflate_factor=2)
            except LoadError as exc:
                assert "trace.json.gz" in str(exc)
    raw = zlib.compress(b"x")  # zlib, not gzip: plain bytes to a format
    (tmp_path / "z.log").write_bytes(raw)
    with pytest.raises(LoadError):
        load_run(tmp_path / "z.log")


def test_inflate_limit_keywords_are_checked():
    with pytest.raises(LoadError, match="inflate_factor must be a positive integer; got 0"):
        Limits.from_env(inflate_factor=0)


# --- JSON ------------------------------------------------------------------------------------


def test_deeply_nested_json_is_a_reason_not_a_recursion_error():
    value, why, _ = parse_json("[" * 100_000 + "]" * 100_000)
    assert value is None and why == "JSON nested too deeply to read"
    assert parse_json('{"a": 1}') == ({"a": 1}, None, None)
    assert parse_json('{"a": ')[1].startswith("malformed JSON record")


# --- stdin, pipes, FIFOs ---------------------------------------------------------------------


def _mfu(*args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mfu_toolkit", *args], input=stdin, capture_output=True,
                          timeout=timeout)


def test_mfu_analyze_reads_standard_input(tmp_path):
    text = write_sacct(tmp_path).read_bytes()
    r = _mfu("analyze", "-", "--json", stdin=text)
    assert r.returncode == 0, r.stderr.decode()
    assert b'"source_format": "sacct"' in r.stdout or b"sacct" in r.stdout


def test_load_run_reads_dev_stdin_and_process_substitution(tmp_path):
    text = write_sacct(tmp_path).read_bytes()
    code = ("from mfu_toolkit.io import load_run; import sys; r = load_run(sys.argv[1]); "
            "print(r.meta.source_format, r.meta.source_path, len(r.events))")
    r = subprocess.run([sys.executable, "-c", code, "/dev/stdin"], input=text, capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.split()[:2] == [b"sacct", b"/dev/stdin"], r.stderr.decode()
    expected = load_run(tmp_path / "sacct.txt")
    assert int(r.stdout.split()[2]) == len(expected.events)
    bash = f"{sys.executable} -c '{code}' <(cat {tmp_path / 'sacct.txt'})"
    r = subprocess.run(["bash", "-c", bash], capture_output=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith(b"sacct "), r.stderr.decode()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_with_format_is_read_once(tmp_path):
    src = write_sacct(tmp_path).read_bytes()
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)

    def writer():
        with open(fifo, "wb") as f:
            f.write(src)

    t = threading.Thread(target=writer)
    t.start()
    run = load_run(fifo, format="sacct")
    t.join(10)
    assert (run.meta.source_path == str(fifo)
            and len(run.tables["jobs"]) == len(load_run(tmp_path / "sacct.txt").tables["jobs"]))


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_nobody_writes_to_is_an_error_not_a_hang(tmp_path):
    fifo = tmp_path / "silent"
    os.mkfifo(fifo)
    t = time.monotonic()
    with pytest.raises(LoadError, match=r"silent: no data arrived within 2 s"):
        spool_input(fifo, timeout_s=2)
    # a wait, not work: its length against the timeout asked (a hang would never end)
    ratio = (time.monotonic() - t) / 2
    assert ratio < 2.5, f"the read waited {ratio:.1f}x the 2 s timeout it was given (bound 2.5x; a hang never returns)"


def test_spool_leaves_regular_files_in_place(tmp_path):
    p = write_sacct(tmp_path)
    assert spool_input(p) is None
