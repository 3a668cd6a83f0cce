"""MLPerf ``:::MLLOG`` logs: synthetic cases by hand, then the real result files."""

from __future__ import annotations

import gzip
import json
import math
import random
import re

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import T0_MS, mllog, mlperf_lines, write_mlperf

from mfu_toolkit.io import load_run, rules
from mfu_toolkit.io.formats import mlperf
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning


def test_intervals_blocks_evals_and_meta(tmp_path):
    run = load_run(write_mlperf(tmp_path))
    assert run.meta.source_format == "mlperf" and run.meta.time_unit == "epoch_ms" and run.meta.timing == "exact"
    ev = run.events
    init = ev[ev["kind"] == "init"].iloc[0]
    assert (init["start_s"], init["end_s"]) == (0.0, 10.0)
    evals = ev[ev["kind"] == "eval"]
    assert len(evals) == 3 and all(evals["end_s"] - evals["start_s"] == 5.0)
    assert "eval_accuracy=0.5" in evals.iloc[0]["detail"]
    s = run.steps
    assert list(s["start_s"]) == [10.0, 40.0, 70.0] and list(s["end_s"]) == [35.0, 65.0, 95.0]
    assert list(s["samples"]) == [400.0, 400.0, 400.0]
    assert "tokens" not in s  # llama2 counts samples, not tokens
    m = run.meta
    assert m.n_accelerators == 8  # SYSJSON: 2 nodes x 4
    assert m.global_batch == 8.0
    assert m.extra["run_duration_s"] == 90.0 and m.extra["init_duration_s"] == 10.0
    assert m.extra["benchmark"] == "llama2_70b_lora" and m.extra["platform_nodes"] == 2
    assert m.extra["t0_epoch_s"] == T0_MS / 1000
    assert set(run.tables) == {"evals", "metrics"}
    assert run.tables["metrics"]["name"].tolist() == ["throughput"] * 3


def test_per_rank_duplicates_are_collapsed_and_reported(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=mlperf_lines(ranks=6)))
    assert (run.events["kind"] == "init").sum() == 1
    notes = run.meta.report.notes
    assert "init_start logged 6 times (per-rank copies); collapsed to one record" in notes
    assert any("SYSJSON logged 2 times" in n for n in notes)
    assert run.meta.extra["init_start_copies"] == 6
    assert not run.meta.report.skipped  # duplicates are not malformed records


def test_no_sysjson_leaves_accelerators_unknown(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=mlperf_lines(sysjson=False)))
    assert run.meta.n_accelerators is None


def test_init_without_stop_ends_at_run_start(tmp_path):
    lines = [x for x in mlperf_lines() if '"init_stop"' not in x]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    init = run.events[run.events["kind"] == "init"].iloc[0]
    assert init["end_s"] == 10.0
    assert any("init taken to end at run_start" in n for n in run.meta.report.notes)


def test_gpt3_counts_tokens(tmp_path):
    lines = [
        mllog("submission_benchmark", T0_MS, "gpt3"),
        mllog("run_start", T0_MS, event_type="INTERVAL_START"),
        mllog("block_start", T0_MS, event_type="INTERVAL_START", first_epoch_num=0, epoch_count=4096),
        mllog("block_stop", T0_MS + 1000, event_type="INTERVAL_END", first_epoch_num=0, epoch_count=4096),
        mllog("run_stop", T0_MS + 1000, event_type="INTERVAL_END", status="success"),
    ]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert run.steps["tokens"].tolist() == [4096.0] and "samples" not in run.steps


def test_evals_inside_a_block_split_it(tmp_path):
    lines = [
        mllog("run_start", T0_MS, event_type="INTERVAL_START"),
        mllog("block_start", T0_MS, event_type="INTERVAL_START", first_epoch_num=1, epoch_count=1),
        mllog("eval_start", T0_MS + 4000, event_type="INTERVAL_START", epoch_num=10),
        mllog("eval_stop", T0_MS + 5000, event_type="INTERVAL_END", epoch_num=10),
        mllog("block_stop", T0_MS + 9000, event_type="INTERVAL_END", first_epoch_num=1),
        mllog("run_stop", T0_MS + 9000, event_type="INTERVAL_END"),
    ]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert run.steps[["start_s", "end_s"]].values.tolist() == [[0.0, 4.0], [5.0, 9.0]]
    busy = (run.steps["end_s"] - run.steps["start_s"]).sum() + (run.events["end_s"] - run.events["start_s"]).sum()
    assert busy == 9.0  # no second counted twice


def test_epochs_only_become_training_segments(tmp_path):
    lines = [
        mllog("run_start", T0_MS, event_type="INTERVAL_START"),
        mllog("epoch_start", T0_MS, event_type="INTERVAL_START", epoch_num=0),
        mllog("eval_start", T0_MS + 3000, event_type="INTERVAL_START", epoch_num=0.5),
        mllog("eval_stop", T0_MS + 4000, event_type="INTERVAL_END", epoch_num=0.5),
        mllog("epoch_stop", T0_MS + 8000, event_type="INTERVAL_END", epoch_num=1),
        mllog("run_stop", T0_MS + 8000, event_type="INTERVAL_END"),
    ]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert len(run.steps) == 2 and run.meta.extra["steps_from"] == "epoch"
    assert len(run.tables["epochs"]) == 1


def test_prefixed_lines_and_other_output(tmp_path):
    lines = ["+ echo starting", *["0: " + x for x in mlperf_lines(sysjson=False)]]
    run = load_run(write_mlperf(tmp_path, name="slurm-1.out", lines=lines))
    assert len(run.steps) == 3
    assert any("1 lines hold no MLLOG record" in n for n in run.meta.report.notes)


def test_malformed_records_are_skipped_and_counted(tmp_path):
    lines = mlperf_lines(sysjson=False)
    n = len(lines)
    lines.insert(6, ':::MLLOG {"namespace": "", "time_ms": 17000')  # truncated JSON (line 7)
    lines.insert(7, mllog("seed", T0_MS + 200).replace(str(T0_MS + 200), "NaN"))  # line 8: NaN time
    lines.insert(8, ":::MLLOG " + json.dumps({"time_ms": T0_MS + 300, "value": 1}))  # line 9: no key
    lines.insert(9, mllog("seed", T0_MS - 60_000))  # line 10: a minute back in time
    lines.insert(10, ":::MLLOG \x00\x01\x02\xff garbage")  # line 11
    lines.insert(11, mllog("seed", -5))  # line 12: negative time
    lines.append(mllog("block_stop", T0_MS + 200_000, event_type="INTERVAL_END"))  # stop without start
    lines.append(':::MLLOG {"namespace": "", "time_ms": 1700000')  # half-written last line
    with pytest.warns(LoadWarning) as caught:
        run = load_run(write_mlperf(tmp_path, lines=lines))
    assert sum(w.category is LoadWarning for w in caught) == 1
    rep = run.meta.report
    # the shared skip reasons (mfu_toolkit.io.rules), with the JSON parser's own message
    assert rep.first_lines[f"{rules.MALFORMED_JSON} (Expecting ',' delimiter)"] == [7, n + 8]
    assert rep.first_lines[f"{rules.MALFORMED_JSON} (Expecting value)"] == [11]
    assert rep.first_lines[f"{rules.NON_FINITE_TIME} (time_ms)"] == [8]
    assert rep.first_lines[f"{rules.MISSING_FIELD} (key)"] == [9]
    assert rep.first_lines[f"{rules.NON_MONOTONIC} (more than 1 s before an earlier record)"] == [10]
    assert rep.first_lines[f"{rules.VALUE_OUT_OF_RANGE} (time_ms before 1970 or after 9999)"] == [12]
    assert rep.first_lines[rules.end_without_start("block")] == [n + 7]
    assert rep.total_skipped == 8
    assert len(run.steps) == 3  # the good records still give the run


def test_strict_raises_naming_file_line_and_field(tmp_path):
    lines = mlperf_lines(sysjson=False)
    lines.insert(3, mllog("seed", T0_MS).replace(f'"time_ms": {T0_MS}', '"time_ms": "soon"'))
    p = write_mlperf(tmp_path, lines=lines)
    with pytest.raises(LoadError) as info:
        load_run(p, strict=True)
    assert (info.value.line, info.value.field) == (4, "time_ms")
    assert str(p) in str(info.value)


def test_no_records_is_an_error(tmp_path):
    p = write_mlperf(tmp_path, lines=[":::MLLOG {broken", "hello"])
    with pytest.raises(LoadError, match="no valid :::MLLOG records"):
        mlperf.load(p)


def test_clock_tolerance_is_adjustable(tmp_path):
    lines = mlperf_lines(sysjson=False)
    lines.insert(5, mllog("seed", T0_MS - 500))  # half a second back: a rank's clock
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert not run.meta.report.skipped
    with pytest.warns(LoadWarning):
        run = load_run(write_mlperf(tmp_path, lines=lines), clock_tolerance_s=0.1)
    assert sum(run.meta.report.skipped.values()) == 1


# --- sniffing -------------------------------------------------------------------------------------
@pytest.fixture
def scan_reads(monkeypatch):
    """Bytes the MLPerf sniffer asks for beyond the head it is given."""
    asked: list[int] = []
    real = mlperf.read_head

    def counting(path, n=8192):
        asked.append(n)
        return real(path, n)

    monkeypatch.setattr(mlperf, "read_head", counting)
    return asked


def _sniff(p):
    return mlperf.sniff(p, read_head(p))


def test_binary_and_json_files_are_rejected_from_the_head(tmp_path, scan_reads):
    rng = random.Random(0)
    noise = bytes(rng.getrandbits(8) for _ in range(64 << 10))
    (tmp_path / "blob.bin.gz").write_bytes(gzip.compress(noise))
    (tmp_path / "zeros.bin").write_bytes(b"\x00" * (64 << 10))
    (tmp_path / "inner.gz.gz").write_bytes(gzip.compress(gzip.compress(noise)))
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "pid": 0, "tid": 0} for i in range(20000)]
    trace = json.dumps({"schemaVersion": 1, "traceEvents": events}, indent=1).encode()
    (tmp_path / "trace.pt.trace.json.gz").write_bytes(gzip.compress(trace))
    (tmp_path / "big.json").write_bytes(trace)
    (tmp_path / "rows.json").write_text("\n  " + json.dumps([{"step": i, "loss": 1.0} for i in range(50000)]))
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps({"step": i, "loss": 1.0}) + "\n" for i in range(50000)))
    for p in sorted(tmp_path.iterdir()):
        assert len(read_head(p)) == 8192  # more than the head to read
        assert _sniff(p) == 0.0, p.name
    assert scan_reads == []  # nothing read past the head


def test_text_heads_are_still_scanned_for_records_after_a_preamble(tmp_path, scan_reads):
    noise = [f"[rank0]: setting up node {i} .........................." for i in range(300)]
    noise += [f"{{'arg_{i}': {i}}}" for i in range(100)]  # Python reprs are not JSON
    p = write_mlperf(tmp_path, name="slurm.out", lines=noise + mlperf_lines())
    assert p.stat().st_size > 8192 and b":::MLLOG" not in read_head(p)
    assert _sniff(p) == 0.9 and scan_reads == [4 << 20]
    q = tmp_path / "slurm.out.gz"
    q.write_bytes(gzip.compress(p.read_bytes()))
    assert _sniff(q) == 0.9
    r = tmp_path / "plain.log"
    r.write_text("".join(f"epoch {i} done, d\u00e9j\u00e0 vu\n" for i in range(2000)))
    assert _sniff(r) == 0.0 and len(scan_reads) == 3  # a text log without records: scanned, not found


# --- real result files ---------------------------------------------------------------------------
def _mllog(path):
    """The MLLOG records of a real file, parsed here with plain json (independent of the loader)."""
    out = []
    for line in path.read_text().splitlines():
        if ":::MLLOG" in line:
            out.append(json.loads(line.split(":::MLLOG", 1)[1]))
    return out


def _first(recs, key):
    return next(r for r in recs if r["key"] == key)


def _last(recs, key):
    return [r for r in recs if r["key"] == key][-1]


def test_real_mlperf_files_load_with_auto(realdata):  # noqa: F811
    for path in files(realdata / "mlperf"):
        run = load_run(path)
        recs = _mllog(path)
        assert run.meta.source_format == "mlperf", path.name
        # time origin and unit: epoch ms -> seconds since the first record
        assert run.meta.extra["t0_epoch_s"] == pytest.approx(min(r["time_ms"] for r in recs) / 1000)
        # run duration = run_stop - run_start, in seconds
        expect = (_first(recs, "run_stop")["time_ms"] - _first(recs, "run_start")["time_ms"]) / 1000
        assert run.meta.extra["run_duration_s"] == pytest.approx(expect), path.name
        assert run.meta.extra["run_status"] == _first(recs, "run_stop")["metadata"]["status"]
        # init: the earliest init_start to init_stop
        init = run.events[run.events["kind"] == "init"].iloc[0]
        t0 = min(r["time_ms"] for r in recs)
        assert init["start_s"] == pytest.approx((min(r["time_ms"] for r in recs if r["key"] == "init_start") - t0) / 1000)
        assert init["end_s"] == pytest.approx((_first(recs, "init_stop")["time_ms"] - t0) / 1000)
        # evals: one event per eval_start/eval_stop pair, durations match
        starts = [r["time_ms"] for r in recs if r["key"] == "eval_start"]
        stops = [r["time_ms"] for r in recs if r["key"] == "eval_stop"]
        evals = run.events[run.events["kind"] == "eval"]
        assert len(evals) == len(starts) == len(stops)
        assert (evals["end_s"] - evals["start_s"]).sum() == pytest.approx((sum(stops) - sum(starts)) / 1000)
        # global batch as logged
        assert run.meta.global_batch == _first(recs, "global_batch_size")["value"]
        # platform string kept
        assert run.meta.extra["platform"] == _first(recs, "submission_platform")["value"]


def test_real_mlperf_blocks_are_steps(realdata):  # noqa: F811
    for path in files(realdata / "mlperf"):
        recs = _mllog(path)
        blocks = [(a["time_ms"], b["time_ms"]) for a, b in zip(
            [r for r in recs if r["key"] == "block_start"], [r for r in recs if r["key"] == "block_stop"], strict=True
        )]
        evals = [(a["time_ms"], b["time_ms"]) for a, b in zip(
            [r for r in recs if r["key"] == "eval_start"], [r for r in recs if r["key"] == "eval_stop"], strict=True
        )]
        inside = any(b0 < e0 < b1 for b0, b1 in blocks for e0, _ in evals)
        run = load_run(path)
        if blocks and not inside:
            assert len(run.steps) == len(blocks), path.name
            dur = sum(b - a for a, b in blocks) / 1000
            assert (run.steps["end_s"] - run.steps["start_s"]).sum() == pytest.approx(dur)
        if blocks and inside:  # BERT: one block with the evaluations inside
            dur = sum(b - a for a, b in blocks) / 1000 - sum(b - a for a, b in evals) / 1000
            assert (run.steps["end_s"] - run.steps["start_s"]).sum() == pytest.approx(dur)
        # nothing counted twice: steps and events never overlap
        spans = sorted([*zip(run.steps["start_s"], run.steps["end_s"], strict=True), *zip(run.events["start_s"], run.events["end_s"], strict=True)])
        assert all(b0 >= a1 - 1e-9 for (_, a1), (b0, _) in zip(spans, spans[1:], strict=False)), path.name


def test_real_gpt3_collapses_512_init_starts_and_counts_tokens(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    recs = _mllog(path)
    n_init = sum(r["key"] == "init_start" for r in recs)
    assert n_init == 512
    run = load_run(path)
    assert run.meta.extra["init_start_copies"] == n_init
    assert f"init_start logged {n_init} times (per-rank copies); collapsed to one record" in run.meta.report.notes
    assert (run.events["kind"] == "init").sum() == 1
    counts = [r["metadata"]["epoch_count"] for r in recs if r["key"] == "block_start"]
    assert run.steps["tokens"].sum() == sum(counts)
    # the per-step timings are kept as a table, not lost
    n_stats = sum(r["key"] == "tracked_stats" for r in recs)
    assert len(run.tables["metrics"]) == n_stats
    m = re.match(r"(\d+)x", run.meta.extra["platform"])
    assert run.meta.extra["platform_nodes"] == int(m.group(1))
    assert run.meta.n_accelerators is None  # no SYSJSON: not guessed


def test_real_sysjson_gives_accelerator_count(realdata):  # noqa: F811
    (path,) = files(realdata / "mlperf", "*SYSJSON*")
    sysj = [json.loads(line.split(":::SYSJSON", 1)[1]) for line in path.read_text().splitlines() if ":::SYSJSON" in line]
    run = load_run(path)
    want = int(sysj[0]["number_of_nodes"]) * int(sysj[0]["accelerators_per_node"])
    assert run.meta.n_accelerators == want
    assert any(f"SYSJSON logged {len(sysj)} times" in n for n in run.meta.report.notes)
    samples = [r["metadata"]["samples_count"] for r in _mllog(path) if r["key"] == "block_stop"]
    assert run.steps["samples"].tolist() == [b - a for a, b in zip([0, *samples[:-1]], samples, strict=True)]
    assert not math.isnan(run.meta.extra["train_samples"])
