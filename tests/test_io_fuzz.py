"""Property tests: random or damaged input never raises anything but the toolkit's own errors.

``load_run`` (auto and explicit) and each loader must answer bytes of any kind with a Run or a
:class:`LoadError` / :class:`SchemaError` — never a KeyError, an IndexError or a pandas
traceback. Two sources of input: raw random bytes, and valid samples of each format that are
truncated, have bytes flipped, or lines dropped or repeated. ``MFU_FUZZ_EXAMPLES`` (default
50) sets the number of examples per test.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from pathlib import Path

import pytest
from _samples import (
    SACCT_TIMES,
    goodput_payloads,
    write_goodput_log,
    write_megatron,
    write_megatron_json,
    write_mlperf,
    write_sacct,
    write_table,
    write_tb_launch,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import load_run
from mfu_toolkit.io.detect import get_loader
from mfu_toolkit.run import LoadError, Run, RunMeta, SchemaError, save_run

MINE = ("run_parquet", "mlperf", "megatron", "megatron_json", "tensorboard", "sacct", "goodput", "table")
N = int(os.environ.get("MFU_FUZZ_EXAMPLES", "50"))  # raise it for a longer hunt
FUZZ = settings(max_examples=N, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _try(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out = fn(*args, **kw)
        except (LoadError, SchemaError):
            return None
    assert isinstance(out, Run)
    return out


def _write(folder: Path, name: str, data: bytes) -> Path:
    p = folder / name
    p.write_bytes(data)
    return p


@FUZZ
@given(data=st.binary(max_size=4096),
       name=st.sampled_from(["log.txt", "x.json", "t.csv", "r.parquet", "events.out.tfevents.1.h.1.0"]))
def test_random_bytes_through_load_run(data, name):
    with tempfile.TemporaryDirectory() as d:
        p = _write(Path(d), name, data)
        _try(load_run, p)
        for fmt in MINE:
            _try(load_run, p, format=fmt)


@FUZZ
@given(data=st.binary(max_size=2048))
def test_random_bytes_in_a_tensorboard_dir(data):
    with tempfile.TemporaryDirectory() as d:
        _write(Path(d), "events.out.tfevents.5.h.1.0", data)
        _try(load_run, Path(d))
        _try(get_loader("tensorboard").load, Path(d))


@FUZZ
@given(
    text=st.text(alphabet=st.characters(codec="utf-8"), max_size=600),
    prefix=st.sampled_from([":::MLLOG ", " iteration 1/ 10 | ", "JobID|", '{"job_name": "x", "step_start_time": ',
                            "step,start_s,end_s\n", ""]),
)
def test_random_text_with_format_markers(text, prefix):
    with tempfile.TemporaryDirectory() as d:
        p = _write(Path(d), "f.txt", (prefix + text).encode("utf-8", errors="replace"))
        _try(load_run, p)
        for fmt in MINE:
            _try(get_loader(fmt).load, p)


def _valid_samples(folder: Path) -> dict[str, Path]:
    run = Run.build({"step": [1, 2], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]}, meta=RunMeta(name="r"))
    tb = folder / "tb"
    tb.mkdir()
    return {
        "mlperf": write_mlperf(folder),
        "megatron": write_megatron(folder),
        "megatron_json": write_megatron_json(folder),
        "tensorboard": write_tb_launch(tb, 100.0, 1, steps=[1, 2, 3]),
        "sacct": write_sacct(folder, SACCT_TIMES),
        "goodput": write_goodput_log(folder, goodput_payloads()),
        "run_parquet": save_run(run, folder / "run.parquet"),
        "table": write_table(folder, "step,start_s,end_s,rank,loss\n1,0,1,0,2.0\n2,1,2,0,1.9\n1,0,1.5,1,2.0\n"),
    }


@pytest.mark.parametrize("fmt", MINE)
def test_valid_samples_load(tmp_path, fmt):
    assert _try(get_loader(fmt).load, _valid_samples(tmp_path)[fmt]) is not None


@pytest.mark.parametrize("fmt", MINE)
@settings(max_examples=max(10, N * 4 // 5), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cut=st.floats(0, 1),
    flips=st.lists(st.tuples(st.floats(0, 1), st.integers(1, 255)), max_size=6),
    drop=st.lists(st.floats(0, 1), max_size=3),
    dup=st.lists(st.floats(0, 1), max_size=2),
)
def test_damaged_samples(fmt, cut, flips, drop, dup):
    with tempfile.TemporaryDirectory() as d:
        p = _valid_samples(Path(d))[fmt]
        data = bytearray(p.read_bytes())
        lines = bytes(data).split(b"\n")
        for f in drop:
            if len(lines) > 1:
                del lines[int(f * (len(lines) - 1))]
        for f in dup:
            i = int(f * (len(lines) - 1))
            lines.insert(i, lines[i])
        data = bytearray(b"\n".join(lines))
        for pos, x in flips:
            if data:
                data[int(pos * (len(data) - 1))] ^= x
        data = data[: max(1, int(len(data) * cut))] if cut < 1 else data
        p.write_bytes(bytes(data))
        strict_ok = _try(get_loader(fmt).load, p, strict=True)
        lenient = _try(get_loader(fmt).load, p)
        if strict_ok is not None:
            assert lenient is not None  # what strict accepts, lenient accepts too
        _try(load_run, p)
