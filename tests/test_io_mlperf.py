"""MLPerf ``:::MLLOG`` logs: synthetic cases by hand, then the real result files."""

from __future__ import annotations

import gzip
import json
import math
import random
import re
import statistics
import warnings

import pytest
from _corpus import mutations
from _realdata import files, realdata  # noqa: F401
from _samples import T0_MS, mllog, mlperf_lines, write_mlperf
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import load_run, rules
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.formats import mlperf
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning, SchemaError


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
    # "+ echo starting" is the shell tracing a command (set -x), told apart from other output
    assert any("1 lines are commands the shell traced" in n for n in run.meta.report.notes)


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
    assert rep.first_lines[rules.MALFORMED_JSON] == [7, 11, n + 8]
    assert rep.examples[rules.MALFORMED_JSON] == "Expecting ',' delimiter"  # the decoder's message
    assert rep.first_lines[rules.NON_FINITE_TIME] == [8]
    assert rep.first_lines[rules.MISSING_FIELD] == [9]
    assert rep.first_lines[rules.NON_MONOTONIC] == [10]
    assert rep.first_lines[rules.VALUE_OUT_OF_RANGE] == [12]
    assert rep.first_lines[rules.END_WITHOUT_START] == [n + 7]
    for reason, detail in ((rules.NON_FINITE_TIME, "time_ms"), (rules.MISSING_FIELD, "key"),
                           (rules.NON_MONOTONIC, "more than 1 s before an earlier record"),
                           (rules.VALUE_OUT_OF_RANGE, "time_ms before 1970 or after 9999"),
                           (rules.END_WITHOUT_START, "block")):
        assert rep.examples[reason].startswith(detail), reason
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
        assert init["start_s"] == pytest.approx(
            (min(r["time_ms"] for r in recs if r["key"] == "init_start") - t0) / 1000)
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
            # less the block's tail after its last evaluation, where the samples counter (epoch_num)
            # did not move: no step (BERT: block_stop 1 ms after the last eval_stop)
            stop = max(r["time_ms"] for r in recs if r["key"] == "block_stop")
            tail = (stop - evals[-1][1]) / 1000 if evals[-1][1] <= stop else 0.0
            assert (run.steps["end_s"] - run.steps["start_s"]).sum() == pytest.approx(dur - tail)
            assert run.meta.extra.get("untrained_segments") == 1, path.name
        # nothing counted twice: steps and events never overlap
        spans = sorted([*zip(run.steps["start_s"], run.steps["end_s"], strict=True),
                        *zip(run.events["start_s"], run.events["end_s"], strict=True)])
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
    # no SYSJSON: 64 DGX H100 systems x 8 GPUs each (NVIDIA's DGX H100 user guide), the same as the
    # 512 init_start records counted above
    assert run.meta.n_accelerators == 64 * 8 == n_init


def test_real_sysjson_gives_accelerator_count(realdata):  # noqa: F811
    (path,) = files(realdata / "mlperf", "*SYSJSON*")
    sysj = [json.loads(line.split(":::SYSJSON", 1)[1]) for line in path.read_text().splitlines()
            if ":::SYSJSON" in line]
    run = load_run(path)
    want = int(sysj[0]["number_of_nodes"]) * int(sysj[0]["accelerators_per_node"])
    assert run.meta.n_accelerators == want
    assert any(f"SYSJSON logged {len(sysj)} times" in n for n in run.meta.report.notes)
    samples = [r["metadata"]["samples_count"] for r in _mllog(path) if r["key"] == "block_stop"]
    assert run.steps["samples"].tolist() == [b - a for a, b in zip([0, *samples[:-1]], samples, strict=True)]
    assert not math.isnan(run.meta.extra["train_samples"])


# --- facts and claims, pinned to the raw lines ----------------------------------------------------
def _raw(path, key):
    """(line number, line, value) of the first record with ``key``, read here from the raw bytes."""
    for ln, line in enumerate(path.read_bytes().decode().split("\n"), start=1):
        if f'"key": "{key}"' in line:
            return ln, line, json.loads(line.split(":::MLLOG", 1)[1])["value"]
    return None


def _fact(run, name):
    found = [f for f in run.meta.facts if f["name"] == name]
    assert len(found) <= 1, found
    return found[0] if found else None


def test_real_gpt3_facts(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    run = load_run(path)
    ln, line, value = _raw(path, "submission_platform")
    assert value == "64xNVIDIA DGX H100"
    assert _fact(run, "platform") == {"name": "platform", "value": value, "source": "stated", "where": f"{path}:{ln}",
                                      "text": line[:200]}
    nodes = _fact(run, "n_nodes")
    assert nodes["value"] == int(re.match(r"(\d+)x", value).group(1)) == 64 and nodes["where"] == f"{path}:{ln}"
    for key, name, want in (("submission_benchmark", "model", "gpt3"), ("global_batch_size", "global_batch", 2048),
                            ("max_sequence_length", "seq_len", 2048)):
        ln, line, value = _raw(path, key)
        f = _fact(run, name)
        assert (f["value"], f["where"], f["text"]) == (value, f"{path}:{ln}", line[:200]) and value == want, name
    # n_ranks: the init_start records (one per rank; no rank ids in them), counted here by regex
    inits = [i for i, t in enumerate(path.read_text().split("\n"), start=1) if re.search(r'"key": "init_start"', t)]
    ranks = _fact(run, "n_ranks")
    assert ranks["value"] == len(inits) == 512 and ranks["where"] == f"{path}:{inits[0]}"
    assert "512" in ranks["text"] and "not stated" in ranks["text"]
    # no SYSJSON: the accelerator and its count come from the platform line and the systems table
    ln, line, value = _raw(path, "submission_platform")
    acc, per = _fact(run, "accelerator"), _fact(run, "accelerators_per_node")
    assert (acc["value"], acc["where"], per["value"], per["where"]) == ("H100 SXM", f"{path}:{ln}", 8, f"{path}:{ln}")
    assert "dgxh100-user-guide" in acc["text"] and value in acc["text"]
    n = _fact(run, "n_accelerators")
    assert (n["value"], n["where"], n["text"]) == (512, f"{path}:{ln}", "n_nodes 64 x accelerators_per_node 8")
    assert run.meta.seq_len == 2048 and run.meta.global_batch == 2048


def test_real_sysjson_facts(realdata):  # noqa: F811
    (path,) = files(realdata / "mlperf", "*SYSJSON*")
    lines = path.read_text().split("\n")
    ln = next(i for i, t in enumerate(lines, start=1) if t.startswith(":::SYSJSON"))
    raw = lines[ln - 1]

    def stated(key):  # '"key":"value"' exactly as printed
        return re.search(rf'"{key}":"[^"]*"', raw).group(0)

    run = load_run(path)
    want = {
        "accelerator": (re.search(r'"accelerator_model_name":"([^"]*)"', raw).group(1),
                        stated("accelerator_model_name")),
        "framework": (re.search(r'"framework":"([^"]*)"', raw).group(1), stated("framework")),
        "accelerators_per_node": (8, stated("accelerators_per_node")),
        "n_accelerators": (8, f"{stated('number_of_nodes')} x {stated('accelerators_per_node')}"),
    }
    assert want["accelerator"][0] == "NVIDIA H200-SXM5-141GB"  # as printed, not a registry name
    for name, (value, text) in want.items():
        f = _fact(run, name)
        assert (f["value"], f["where"], f["text"]) == (value, f"{path}:{ln}", text), name
    sys_nodes = [f for f in run.meta.facts if f["name"] == "n_nodes" and f["where"] == f"{path}:{ln}"]
    assert [f["value"] for f in sys_nodes] == [int(re.search(r'"number_of_nodes":"(\d+)"', raw).group(1))] == [1]
    assert run.meta.n_accelerators == 8


def test_real_submission_facts_of_every_file(realdata):  # noqa: F811
    for path in files(realdata / "mlperf"):
        run = load_run(path)
        assert _fact(run, "platform")["value"] == _raw(path, "submission_platform")[2], path.name
        assert _fact(run, "model")["value"] == _raw(path, "submission_benchmark")[2], path.name
        assert _fact(run, "global_batch")["value"] == _raw(path, "global_batch_size")[2], path.name
        seq = _raw(path, "max_sequence_length")
        assert (_fact(run, "seq_len") or {}).get("value") == (seq[2] if seq else None), path.name
        # the "NxSYSTEM" form states the node count; "tpu-v5p" does not
        m = re.fullmatch(r"(\d+)x.+", _raw(path, "submission_platform")[2])
        platform_nodes = [f["value"] for f in run.meta.facts
                          if f["name"] == "n_nodes" and "submission_platform" in f["text"]]
        assert platform_nodes == ([int(m.group(1))] if m else []), path.name


def test_real_closed_division_logs_state_their_reference_model(realdata):  # noqa: F811
    """Every real log says submission_division 'closed': each states its benchmark as the reference model (the
    closed division trains it), and only a recommendation benchmark's gets model FLOPs from it (96,182,784 per
    sample, the dlrm-dcnv2 hand count in tests/test_mlperf_dlrm.py); the transformer benchmarks stay without."""
    for path in files(realdata / "mlperf"):
        run = load_run(path)
        ln, _, div = _raw(path, "submission_division")
        bench_ln, _, bench = _raw(path, "submission_benchmark")
        fact = _fact(run, "reference_model")
        assert div == "closed" and fact["value"] == bench, path.name
        assert fact["where"] == f"{path}:{bench_ln}" and f"at line {ln})" in fact["text"], path.name
        flops = run.meta.model_flops_per_sample
        assert flops == (96_182_784 if bench == "dlrm_dcnv2" else None), path.name


def _stats(path):
    """(time_ms, throughput, metadata) of every tracked_stats record that carries a throughput."""
    return [(r["time_ms"], r["value"]["throughput"], r["metadata"]) for r in _mllog(path)
            if r["key"] == "tracked_stats" and "throughput" in r["value"]]


def test_real_throughput_claims_and_their_unit(realdata):  # noqa: F811
    mlp = realdata / "mlperf"
    # Llama 2 LoRA: each value is the block's samples over the block's seconds
    path = mlp / "v4.1_NVIDIA_h200_ngc24.09_nemo_llama2_70b_lora_result_0.txt"
    recs = _mllog(path)
    starts, stops = [r for r in recs if r["key"] == "block_start"], [r for r in recs if r["key"] == "block_stop"]
    rates = [(b["metadata"]["samples_count"] - a["metadata"]["samples_count"]) / ((b["time_ms"] - a["time_ms"]) / 1000)
             for a, b in zip(starts, stops, strict=True)]
    stats = _stats(path)
    assert [s[1] for s in stats[1:]] == pytest.approx(rates[1:], rel=1e-3)
    assert stats[0][1] == pytest.approx(rates[0], rel=2e-2)  # the first block's time includes the start-up
    (claim,) = load_run(path).meta.claims
    assert (claim["metric"], claim["unit"], claim["n"]) == ("samples_per_s", "samples/s", len(stats))
    assert claim["value"] == pytest.approx(statistics.median(s[1] for s in stats))
    assert claim["where"] == f"{path}:{_raw(path, 'tracked_stats')[0]}"
    # BERT: samples (epoch_num counts samples) over the time between records
    path = mlp / "v4.1_NVIDIA_h200_ngc23.09_pytorch_bert_result_0.txt"
    stats = [s for s in _stats(path) if "epoch_num" in s[2]]
    rates = [(b[2]["epoch_num"] - a[2]["epoch_num"]) / ((b[0] - a[0]) / 1000)
             for a, b in zip(stats, stats[1:], strict=False)]
    assert [s[1] for s in stats[1:]] == pytest.approx(rates, rel=1e-3)
    assert load_run(path).meta.claims[0]["metric"] == "samples_per_s"
    # GPT-3 counts tokens: tokens since the first block over the seconds since it
    path = mlp / "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"
    ((t, value, meta),) = _stats(path)
    first_block = next(r["time_ms"] for r in _mllog(path) if r["key"] == "block_start")
    assert value == pytest.approx(meta["step"] / ((t - first_block) / 1000), rel=1e-5)
    (claim,) = load_run(path).meta.claims
    assert (claim["metric"], claim["value"], claim["unit"]) == ("tokens_per_s", value, "tokens/s")
    # the TPU log prints no throughput: no claim
    assert load_run(mlp / "v4.1_Google_cloud-tpu-trillium-1024-maxtext_gpt3_result_0.txt").meta.claims == []


def test_ranks_named_in_the_records_are_counted_distinct(tmp_path):
    lines = mlperf_lines(sysjson=False, ranks=1)
    extra = [mllog("init_start", T0_MS + 1, event_type="INTERVAL_START", rank=r) for r in (0, 1, 1, 2, 3e9, "1" * 5000)]
    with pytest.warns(LoadWarning):
        run = load_run(write_mlperf(tmp_path, lines=extra + lines))
    assert _fact(run, "n_ranks")["value"] == 3  # ranks 0, 1, 2; a rank of 3e9 and a 5000-digit one are counted
    assert run.meta.report.first_lines == {rules.VALUE_OUT_OF_RANGE: [5, 6]}
    assert run.meta.report.examples[rules.VALUE_OUT_OF_RANGE] == "metadata.rank: 3000000000.0"


def test_a_single_init_start_states_no_rank_count(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_Google_cloud-tpu-trillium-1024-maxtext_gpt3_result_0.txt"
    assert len(re.findall(r'"key": "init_start"', path.read_text())) == 1
    assert _fact(load_run(path), "n_ranks") is None


# --- line ends, and one bad record never refuses the file -------------------------------------------
GPT3 = "v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt"


@pytest.mark.parametrize("kind", ["cr", "crlf", "bom"])
def test_line_ends_and_bom_give_the_same_run(realdata, tmp_path, kind):  # noqa: F811
    # a CR-only copy loaded 0 rows before the shared reader (29c0f58): a lone \r now ends a line
    src = (realdata / "mlperf" / GPT3).read_bytes()
    data = {"cr": src.replace(b"\n", b"\r"), "crlf": src.replace(b"\n", b"\r\n"), "bom": b"\xef\xbb\xbf" + src}[kind]
    p = tmp_path / GPT3
    p.write_bytes(data)
    run, ref = load_run(p), load_run(realdata / "mlperf" / GPT3)
    assert len(run.steps) == 24  # one per block_start/block_stop pair
    assert run.steps.equals(ref.steps) and run.events.equals(ref.events)
    assert run.meta.report.lines_read == ref.meta.report.lines_read and run.meta.facts == [
        {**f, "where": f["where"].replace(str(realdata / "mlperf" / GPT3), str(p))} for f in ref.meta.facts]


def _gpt3_lines(folder):
    return (folder / "mlperf" / GPT3).read_bytes().split(b"\n")


def test_a_deeply_nested_record_is_counted(realdata, tmp_path):  # noqa: F811
    lines = _gpt3_lines(realdata)
    lines.insert(100, b":::MLLOG " + b"[" * 100_000 + b"]" * 100_000)  # was an InternalLoadError
    p = tmp_path / "deep.txt"
    p.write_bytes(b"\n".join(lines))
    with pytest.warns(LoadWarning):
        run = load_run(p)
    assert run.meta.report.first_lines == {rules.JSON_TOO_DEEP: [101]} and len(run.steps) == 24


def test_a_garbled_time_skips_its_record_only(realdata, tmp_path):  # noqa: F811
    lines = _gpt3_lines(realdata)
    assert lines[199].count(b'"time_ms": 17') == 1
    lines[199] = lines[199].replace(b'"time_ms": 17', b'"time_ms": 97')  # one digit: 250 years ahead
    p = tmp_path / "spike.txt"
    p.write_bytes(b"\n".join(lines))
    with pytest.warns(LoadWarning):
        run = load_run(p)
    # the old loader skipped every record after it as non-monotonic (885 records, no steps left)
    assert run.meta.report.first_lines == {rules.NON_MONOTONIC: [200]}
    assert run.meta.report.examples[rules.NON_MONOTONIC] == "far ahead of the records before and after it"
    assert run.steps.equals(load_run(realdata / "mlperf" / GPT3).steps)


@pytest.mark.parametrize(("value", "why"), [(b"1e308", rules.VALUE_OUT_OF_RANGE),
                                            (b'"' + b"1" * 5000 + b'"', rules.VALUE_OUT_OF_RANGE),
                                            (b'"many"', rules.NON_NUMERIC)])
def test_a_bad_global_batch_is_counted_not_used(realdata, tmp_path, value, why):  # noqa: F811
    lines = _gpt3_lines(realdata)
    i = next(k for k, t in enumerate(lines) if b'"key": "global_batch_size"' in t)
    lines[i] = lines[i].replace(b'"value": 2048', b'"value": ' + value)
    p = tmp_path / "gbs.txt"
    p.write_bytes(b"\n".join(lines))
    with pytest.warns(LoadWarning):  # the old loader took 1e308 as the global batch, silently
        run = load_run(p)
    assert run.meta.global_batch is None and _fact(run, "global_batch") is None
    assert run.meta.report.first_lines == {why: [i + 1]}
    assert run.meta.report.examples[why].startswith("global_batch_size: ")


def test_non_utf8_bytes_inside_a_value_keep_the_record(realdata, tmp_path):  # noqa: F811
    lines = _gpt3_lines(realdata)
    i = next(k for k, t in enumerate(lines) if b'"key": "submission_platform"' in t)
    lines[i] = lines[i].replace(b"DGX H100", b"DGX \xff\xfeH100")
    p = tmp_path / "utf.txt"
    p.write_bytes(b"\n".join(lines))
    run = load_run(p)
    assert _fact(run, "platform")["value"] == "64xNVIDIA DGX \ufffd\ufffdH100" and not run.meta.report.skipped


def test_many_evaluations_are_matched_in_linear_time(tmp_path):
    # 10,000 blocks, evaluations and accuracies that match no evaluation: the old loader compared
    # every evaluation with every accuracy (15 s here) and every block with every evaluation.
    # 2,500 and 10,000 of them: 4x the blocks
    runs = {}

    def load(n: int):
        lines, t = [mllog("run_start", T0_MS)], T0_MS
        for i in range(n):
            lines += [mllog("block_start", t, samples_count=10 * i), mllog("eval_accuracy", t, 0.5)]
            t += 100
            lines += [mllog("block_stop", t, samples_count=10 * i + 10),
                      mllog("eval_start", t, samples_count=10 * i + 10)]
            t += 10
            lines.append(mllog("eval_stop", t, samples_count=10 * i + 10))
        lines.append(mllog("run_stop", t))
        p = write_mlperf(tmp_path, f"result_{n}.txt", lines=lines)
        return lambda: runs.__setitem__(n, load_run(p))

    ratio = growth(load, 2_500)
    assert ratio < linear_bound(), explain(ratio, what="the blocks")
    run = runs[10_000]
    assert len(run.steps) == 10_000 and (run.events["kind"] == "eval").sum() == 10_000


@pytest.mark.parametrize("char", ["[", "0", " "])
def test_long_lines_of_one_character_are_quick(tmp_path, char):
    runs = {}

    def load(n: int):
        text = char * n
        lines = [mllog("submission_platform", T0_MS, "1x" + text + "b"), ":::MLLOG " + text, ":::SYSJSON " + text,
                 *mlperf_lines(sysjson=False)]
        p = write_mlperf(tmp_path, f"result_{n}.txt", lines=lines)

        def work():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)
                runs[n] = load_run(p)
        return work

    ratio = growth(load, 80_000)  # lines of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    assert len(runs[320_000].steps) == 3
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


def test_options_are_checked():
    assert mlperf.Options(clock_tolerance_s="0.5").clock_tolerance_s == 0.5
    for bad in (-1, math.nan, "soon", True, 10**400):  # 10**400 raised OverflowError from float()
        with pytest.raises(ValueError, match="clock_tolerance_s must be a finite number of seconds >= 0"):
            mlperf.Options(clock_tolerance_s=bad)


def test_damaged_copies_of_the_gpt3_log_load_or_fail_cleanly(realdata, tmp_path):  # noqa: F811
    src = realdata / "mlperf" / GPT3
    for seed in range(2):
        for kind, data in mutations(src.read_bytes(), random.Random(f"mlperf:{seed}")):
            p = tmp_path / "result_0.txt"
            p.write_bytes(data)
            for strict in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LoadWarning)
                    try:
                        load_run(p, format="mlperf", strict=strict)
                    except InternalLoadError as exc:
                        pytest.fail(f"{kind} (seed {seed}, strict={strict}): {exc}")
                    except (LoadError, SchemaError):
                        pass


# --- the platform's accelerator, GPT-3 blocks, time to train, the wall's first record ---------------
def test_real_gpt3_uses_the_platform_for_the_peak(realdata):  # noqa: F811
    path = realdata / "mlperf" / GPT3
    run = load_run(path)
    ln = _raw(path, "submission_platform")[0]
    m = run.meta
    # H100 SXM bf16 dense: 989.4 TFLOP/s (NVIDIA H100 datasheet, 1,979 with sparsity / 2)
    assert ((m.accelerator, m.n_accelerators, m.dtype, m.peak_flops_per_accelerator)
            == ("H100 SXM", 512, "bf16", 989.4e12))
    assert f"stated in the log at {path}:{ln}" in m.peak_source and "bf16 assumed" in m.peak_source
    assert any("matches the 512 ranks that logged init_start" in n for n in m.report.notes)


def test_platform_count_and_rank_count_disagreeing_is_noted(tmp_path):
    lines = [
        mllog("submission_platform", T0_MS, "2xNVIDIA DGX H100"),
        *[mllog("init_start", T0_MS + i, event_type="INTERVAL_START") for i in range(3)],  # 3 ranks, not 16
        mllog("init_stop", T0_MS + 1000, event_type="INTERVAL_END"),
        mllog("run_start", T0_MS + 1000, event_type="INTERVAL_START"),
        mllog("run_stop", T0_MS + 2000, event_type="INTERVAL_END", status="success"),
    ]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert run.meta.n_accelerators == 16  # 2 x 8 per DGX H100, never the 3 ranks
    assert any("2 nodes x 8 accelerators = 16" in n and "but 3 ranks logged init_start" in n
               for n in run.meta.report.notes)


def test_a_system_without_a_source_states_no_count(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=mlperf_lines(sysjson=False)))  # platform "2xACME Box"
    assert run.meta.n_accelerators is None and run.meta.peak_flops_per_accelerator is None
    notes = run.meta.report.notes
    assert any("peak unknown" in n and "'ACME Box'" in n for n in notes)
    assert any("n_accelerators unknown" in n and "'ACME Box'" in n for n in notes)


def test_real_gpt3_samples_are_the_sequences_of_each_block(realdata):  # noqa: F811
    path = realdata / "mlperf" / GPT3
    recs = _mllog(path)
    seq = _first(recs, "max_sequence_length")["value"]
    gbs = _first(recs, "global_batch_size")["value"]
    counts = [r["metadata"]["epoch_count"] for r in recs if r["key"] == "block_start"]
    assert (seq, gbs, counts[0]) == (2048, 2048, 50331648)  # 50,331,648 tokens = 24,576 sequences = 12 batches
    run = load_run(path)
    s = run.steps
    assert s["samples"].tolist() == [c / seq for c in counts] == [24576.0] * 24
    assert (s["samples"] * seq == s["tokens"]).all()  # samples x seq_len = tokens, every step
    assert run.meta.extra["global_batches_per_step"] == 12
    # steady samples/s: a block's sequences over its seconds, about 215 (17.9 before: 2048 per block)
    from mfu_toolkit.analysis.scaling import run_throughput

    rate, _ = run_throughput(run, metric="samples_per_s")
    blocks = [(b["time_ms"] - a["time_ms"]) / 1000 for a, b in zip(
        [r for r in recs if r["key"] == "block_start"], [r for r in recs if r["key"] == "block_stop"], strict=True)]
    assert rate == pytest.approx(24576 / statistics.median(blocks), rel=0.02)
    tokens, _ = run_throughput(run, metric="tokens_per_s")
    assert tokens == pytest.approx(rate * seq)


def test_real_time_to_train_is_run_start_to_run_stop(realdata):  # noqa: F811
    for path in files(realdata / "mlperf"):
        recs = _mllog(path)
        start, stop = _raw(path, "run_start"), _raw(path, "run_stop")
        want = (_first(recs, "run_stop")["time_ms"] - _first(recs, "run_start")["time_ms"]) / 1000
        extra = load_run(path).meta.extra
        assert extra["time_to_train_s"] == pytest.approx(want), path.name
        assert extra["time_to_train_where"] == f"{path}:{start[0]}-{stop[0]}", path.name
    gpt3 = load_run(realdata / "mlperf" / GPT3).meta.extra["time_to_train_s"]
    assert gpt3 == pytest.approx(2986.485)  # 1727899633389 - 1727896646904 ms (lines 1082 and 600)


def test_real_wall_starts_at_the_first_cache_clear(realdata):  # noqa: F811
    path = realdata / "mlperf" / GPT3
    recs = _mllog(path)
    clears = [r["time_ms"] for r in recs if r["key"] == "cache_clear"]
    first_init = min(r["time_ms"] for r in recs if r["key"] == "init_start")
    assert len(clears) == 64 and max(clears) < first_init
    run = load_run(path)
    ev = run.events
    (clear,) = ev[ev["detail"].str.startswith("cache_clear")].itertuples()
    # from the first cache_clear (line 1) to the first init_start (line 65): 15.326 s of start-up
    assert (clear.kind == "other"
            and (clear.start_s, clear.end_s) == (0.0, pytest.approx((first_init - min(clears)) / 1000)))
    assert (clear.end_s == pytest.approx(15.326)
            and "lines 1-64; then the launch until init_start at line 65" in clear.detail)
    init = ev[ev["kind"] == "init"].iloc[0]
    assert init["start_s"] == pytest.approx(clear.end_s)
    from mfu_toolkit.analysis.accounting import account

    last = max(r["time_ms"] for r in recs)
    assert account(run).wall_s == pytest.approx((last - min(clears)) / 1000)


def test_a_stated_precision_is_a_dtype_fact_and_sets_the_peak(tmp_path):
    lines = [mllog("precision", T0_MS, "fp8"), *mlperf_lines()]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    f = _fact(run, "dtype")
    assert (f["value"], f["where"]) == ("fp8", f"{tmp_path / 'result_0.txt'}:1")
    assert run.meta.dtype == "fp8"
    flag = load_run(write_mlperf(tmp_path, lines=[mllog("fp8", T0_MS, True), *mlperf_lines()]))
    assert _fact(flag, "dtype")["value"] == "fp8"


def test_real_logs_state_no_precision(realdata):  # noqa: F811
    # none of the v4.x files logs a precision key: no dtype fact is invented (the GPT-3 run is
    # FP8 per NVIDIA's submission, but the log does not say so)
    for path in files(realdata / "mlperf"):
        text = path.read_text()
        assert not re.search(r'"key": "(precision|dtype|compute_dtype|training_precision|fp8|use_fp8)"', text)
        assert _fact(load_run(path), "dtype") is None, path.name
