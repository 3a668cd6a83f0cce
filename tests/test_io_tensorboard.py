"""TensorBoard event files: our own TFRecord/protobuf reader on synthetic and real directories."""

from __future__ import annotations

import functools
import math
import re
import struct
import warnings

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import event, frame, write_tb_launch, write_tensorboard

from mfu_toolkit.io import load_run, rules, tensorboard
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.run import LoadError, LoadWarning, SchemaError


def test_launches_are_attempts(tmp_path):
    run = tensorboard.load(write_tensorboard(tmp_path))
    assert run.meta.source_format == "tensorboard" and run.meta.timing == "duration_only"
    assert run.n_attempts == 3
    assert run.steps.groupby("attempt")["step"].apply(list).to_dict() == {1: [1, 2, 3], 2: [3, 4, 5, 6, 7]}
    kinds = run.events.sort_values(["start_s", "kind"])[["attempt", "kind"]].values.tolist()
    assert kinds == [[0, "init"], [0, "failure"], [1, "init"], [1, "failure"], [2, "init"]]
    failure = run.events[(run.events["kind"] == "failure") & (run.events["attempt"] == 0)].iloc[0]
    assert (failure["start_s"], failure["end_s"]) == pytest.approx((0.1, 100.0))
    assert "2 launches" not in " ".join(run.meta.report.notes)
    assert "3 launches (attempts); 1 logged no scalar" in run.meta.report.notes


def test_step_times_values_and_args(tmp_path):
    run = tensorboard.load(write_tensorboard(tmp_path))
    s = run.steps[run.steps["attempt"] == 2]
    # step k ends at t0 + 10 + (k+1) * 0.5 and lasts 0.5 s (simple_value and tensor forms alike)
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([0.5] * 5)
    assert s["end_s"].tolist() == pytest.approx([200 + 10 + 0.5 * (k + 1) for k in range(5)])
    assert s["loss"].tolist() == pytest.approx([5.0 - 0.1 * k for k in range(5)])
    assert (s["samples"] == 16).all()
    m = run.meta
    assert (m.n_accelerators, m.global_batch, m.seq_len) == (8, 16.0, 128)
    assert m.extra["args"]["world_size"] == "8" and m.extra["log_interval"] == 1
    assert set(run.tables["scalars"]["tag"]) == {"lm loss", "batch-size", "iteration-time"}
    assert m.extra["t0_epoch_s"] == 1_700_000_000.0


def test_log_interval_expands_rows(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    data = frame(event(1000.0, file_version="brain.Event:2"))
    for k, step in enumerate((10, 20, 30)):
        data += frame(event(1000.0 + 10 * (k + 1), step, scalars={"iteration-time": 1.0}))
    (d / "events.out.tfevents.1000.h.1.0").write_bytes(data)
    run = tensorboard.load(d)
    assert run.meta.timing == "interval_mean" and run.meta.extra["log_interval"] == 10
    assert run.steps["step"].tolist() == list(range(1, 31))
    assert run.steps["logged"].sum() == 3


def test_single_file_path(tmp_path):
    p = write_tb_launch(tmp_path, 50.0, 1, steps=[1, 2])
    run = tensorboard.load(p)
    assert run.n_attempts == 1 and len(run.steps) == 2


def test_two_files_of_one_process_are_one_launch(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    (d / "events.out.tfevents.100.node.7.0").write_bytes(frame(event(100.0, file_version="brain.Event:2")))
    (d / "events.out.tfevents.101.node.7.1").write_bytes(frame(event(101.0, 1, scalars={"iteration-time": 0.5})))
    run = tensorboard.load(d)
    assert run.n_attempts == 1
    assert any("from 1 processes" in n for n in run.meta.report.notes)


def test_half_written_last_record_and_bad_checksum(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    good = write_tb_launch(d, 100.0, 1, steps=[1, 2, 3])
    data = good.read_bytes()
    rec = frame(event(120.0, 4, scalars={"iteration-time": 0.5}))
    corrupt = bytearray(frame(event(119.0, 9, scalars={"iteration-time": 0.5})))
    corrupt[-6] ^= 0xFF  # payload byte flipped: data checksum fails
    good.write_bytes(data + bytes(corrupt) + rec[: len(rec) // 2])
    with pytest.warns(LoadWarning) as caught:
        run = tensorboard.load(d)
    assert sum(w.category is LoadWarning for w in caught) == 1
    assert run.steps["step"].tolist() == [1, 2, 3]
    rep = run.meta.report
    n = 2 + 2 * 3  # records before the damage
    assert rep.first_lines == {"record checksum mismatch": [n + 1],
                               "truncated record (half-written end of file)": [n + 2]}


def test_corrupt_length_header_stops_reading(tmp_path):
    p = write_tb_launch(tmp_path, 100.0, 1, steps=[1])
    p.write_bytes(p.read_bytes() + b"\x05" * 20)
    with pytest.warns(LoadWarning):
        run = tensorboard.load(p)
    assert list(run.meta.report.skipped) == [
        "corrupt record header (length checksum mismatch); rest of file unreadable"]


def test_nan_and_negative_iteration_time(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    data = frame(event(0.0, file_version="brain.Event:2"))
    data += frame(event(1.0, 1, scalars={"iteration-time": float("nan")}))
    data += frame(event(2.0, 2, scalars={"iteration-time": -1.0}))
    data += frame(event(3.0, 3, scalars={"iteration-time": 1.0}))
    (d / "events.out.tfevents.0.h.1.0").write_bytes(data)
    with pytest.warns(LoadWarning):
        run = tensorboard.load(d)
    assert run.steps["step"].tolist() == [3]
    assert run.meta.report.skipped == {rules.NON_FINITE_TIME: 1, rules.NEGATIVE_DURATION: 1}
    assert run.meta.report.examples[rules.NEGATIVE_DURATION].startswith("iteration-time: ")
    with pytest.raises(LoadError) as info:
        tensorboard.load(d, strict=True)
    assert info.value.line == 2 and info.value.field == "iteration-time"



def test_skipped_records_of_a_folder_name_their_event_file(tmp_path):
    d = tmp_path / "tb"
    d.mkdir()
    first = write_tb_launch(d, 100.0, 1, steps=[1, 2])
    second = write_tb_launch(d, 200.0, 2, steps=[1, 2])
    n = 2 + 2 * 2  # records in each file
    corrupt = bytearray(frame(event(220.0, 9, scalars={"iteration-time": 0.5})))
    corrupt[-6] ^= 0xFF  # data checksum fails: record n + 1 of the first file
    first.write_bytes(first.read_bytes() + bytes(corrupt))
    second.write_bytes(second.read_bytes() + frame(event(230.0, 3, scalars={"iteration-time": float("nan")})))
    with pytest.warns(LoadWarning, match=re.escape(f"(first at {first.name}:{n + 1})")):
        run = tensorboard.load(d)
    nan = rules.NON_FINITE_TIME
    assert run.meta.report.first_lines == {
        "record checksum mismatch": [f"{first.name}:{n + 1}"],
        nan: [f"{second.name}:{n + 1}"],
    }
    # strict: the error names the event file and its record, not the folder
    with pytest.raises(LoadError) as info:
        tensorboard.load(d, strict=True)
    assert (info.value.path, info.value.line) == (str(first), n + 1)
    first.write_bytes(first.read_bytes()[: -len(corrupt)])
    with pytest.raises(LoadError) as info:
        tensorboard.load(d, strict=True)
    assert (info.value.path, info.value.line, info.value.field) == (str(second), n + 1, "iteration-time")
    # the file alone: plain record numbers
    with pytest.warns(LoadWarning):
        assert tensorboard.load(second).meta.report.first_lines == {nan: [n + 1]}

def test_malformed_protobuf_is_skipped(tmp_path):
    p = tmp_path / "events.out.tfevents.1.h.1.0"
    p.write_bytes(frame(event(1.0, file_version="brain.Event:2")) + frame(b"\x0a\xff\xff\xff")
                  + frame(event(2.0, 1, scalars={"iteration-time": 0.5})))
    with pytest.warns(LoadWarning):
        run = tensorboard.load(p)
    assert len(run.steps) == 1
    assert list(run.meta.report.skipped)[0].startswith("malformed Event protobuf")


def test_no_event_files(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(LoadError, match="no TensorBoard event files"):
        tensorboard.load(tmp_path)
    garbage = tmp_path / "events.out.tfevents.1.h.1.0"
    garbage.write_bytes(b"\x00" * 7)
    with pytest.raises(LoadError,
                       match=r"no readable TensorBoard events in 1 file\(s\) \(1 × truncated record header"):
        tensorboard.load(tmp_path)



# --- folders of several runs -------------------------------------------------------------------------
def _two_runs(root):
    """Two jobs in two subfolders (as TensorBoard lays out runs); the second restarted once."""
    a, b = root / "job_a", root / "job_b"
    a.mkdir(parents=True)
    b.mkdir()
    write_tb_launch(a, 1_700_000_000.0, 100, steps=[1, 2])
    write_tb_launch(b, 1_705_000_000.0, 200, steps=[1, 2, 3])
    write_tb_launch(b, 1_705_000_100.0, 300, steps=[3, 4])
    return a, b


def test_runs_in_different_folders_are_not_merged(tmp_path):
    a, b = _two_runs(tmp_path / "tb")
    (tmp_path / "tb" / "notes.txt").write_text("not an event file")
    for path in (tmp_path / "tb", tmp_path):  # also from higher up, auto-detected
        with pytest.raises(LoadError) as info:
            load_run(path)
        msg = str(info.value)
        assert ("2 TensorBoard runs" in msg and "job_a (1 event files, first 2023-11-14" in msg
                and "job_b (2 event files" in msg)
        assert f"load_run({str(a)!r})" in msg and "1 other file(s), not TensorBoard" in msg
    # each folder on its own is one run; restarts in one folder stay attempts of it
    assert tensorboard.load(a).n_attempts == 1
    run = tensorboard.load(b)
    assert run.n_attempts == 2 and run.steps["step"].tolist() == [1, 2, 3, 3, 4]


def test_a_run_folder_loads_its_own_files_and_names_the_runs_below(tmp_path):
    root = tmp_path / "tb"
    root.mkdir()
    write_tb_launch(root, 1_700_000_000.0, 1, steps=[1, 2])
    _two_runs(root)
    run = tensorboard.load(root)
    assert run.n_attempts == 1 and len(run.steps) == 2
    note = next(n for n in run.meta.report.notes if "other run folder" in n)
    assert note.startswith("2 other run folder(s) below, not loaded") and "job_a" in note and "job_b" in note


def test_a_single_run_folder_below_is_found(tmp_path):
    d = tmp_path / "job" / "tensorboard"
    d.mkdir(parents=True)
    write_tb_launch(d, 1_700_000_000.0, 1)
    write_tb_launch(d, 1_700_000_100.0, 2, steps=[1, 2])
    run = tensorboard.load(tmp_path / "job")
    assert run.n_attempts == 2 and len(run.steps) == 2
    assert not any("other run folder" in n for n in run.meta.report.notes)


# --- real directories ------------------------------------------------------------------------------
def _records(data: bytes):
    """TFRecord payloads, read here with plain struct (no checksum check)."""
    i = 0
    while i + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, i)
        yield data[i + 12 : i + 12 + n]
        i += n + 16


_TAG = b"\x0a\x0eiteration-time"  # field 1 (tag), length 14


def test_real_tensorboard_dirs(realdata):  # noqa: F811
    dirs = sorted(p for p in (realdata / "tensorboard").iterdir() if p.is_dir())
    assert dirs
    for d in dirs:
        event_files = files(d, "*tfevents*")
        processes = {re.search(r"tfevents\.\d+\.(.+)\.\d+$", f.name).group(1) for f in event_files}
        timed = [sum(_TAG in r for r in _records(f.read_bytes())) for f in event_files]
        run = load_run(d)
        assert run.meta.source_format == "tensorboard"
        assert run.n_attempts == len(processes) == len(event_files), d.name  # launches = attempts
        assert not run.meta.report.skipped
        assert len(run.steps) == sum(timed)
        # launches that died before logging a scalar still show up, as init events
        assert (run.events["kind"] == "failure").sum() == len(event_files) - 1


def test_real_noua_run(realdata):  # noqa: F811
    d = realdata / "tensorboard" / "megatron_noua_1n_gbs16_localattn"
    run = tensorboard.load(d)
    assert run.n_attempts == 4
    assert run.steps["attempt"].unique().tolist() == [3]
    assert run.meta.global_batch == 16.0 and (run.steps["samples"] == 16).all()
    durations = (run.steps["end_s"] - run.steps["start_s"]).tolist()
    assert durations[0] > 10 * durations[-1]  # warm-up: the first timed step is far slower
    assert run.meta.n_accelerators == int(run.meta.extra["args"]["world_size"])


def test_real_tensorboard_parent_lists_its_runs_instead_of_merging(realdata):  # noqa: F811
    dirs = sorted(p for p in (realdata / "tensorboard").iterdir() if p.is_dir())
    assert len(dirs) > 1
    with pytest.raises(LoadError) as info:
        load_run(realdata / "tensorboard")
    assert all(d.name in str(info.value) for d in dirs)
    # the whole mixed folder of many formats is no TensorBoard run either
    with pytest.raises(LoadError):
        load_run(realdata)


# --- bounds: no row per missing step, steps that fit int64 ------------------------------------------
def test_steps_a_billion_apart_are_one_row_each_not_a_billion(tmp_path):
    # Three timed records 10^9 steps apart: the most common gap (10^9) would be the log interval,
    # and each record 10^9 rows (a MemoryError from a 150-byte file). Each stays one row.
    p = tmp_path / "events.out.tfevents.1.h.1.0"
    p.write_bytes(b"".join(frame(event(10.0 * k, k * 10**9, scalars={"iteration-time": 0.5})) for k in (1, 2, 3)))
    assert p.stat().st_size < 200
    with pytest.warns(LoadWarning):
        run = tensorboard.load(p)
    s = run.steps
    assert s["step"].tolist() == [10**9, 2 * 10**9, 3 * 10**9]
    assert s["interval_steps"].tolist() == [10**9] * 3  # the gap, as a count
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([0.5] * 3)  # one step's mean each
    assert run.meta.report.skipped == {rules.INTERVAL_TOO_LONG: 3}
    assert run.meta.report.first_lines[rules.INTERVAL_TOO_LONG] == [1, 2, 3]
    with pytest.raises(LoadError) as info:
        tensorboard.load(p, strict=True)
    assert (info.value.line, info.value.field) == (1, "step")


def test_a_log_interval_within_the_bound_still_expands(tmp_path):
    # the bound is MAX_LOG_INTERVAL steps: an interval of exactly that many is expanded row by row
    p = tmp_path / "events.out.tfevents.1.h.1.0"
    n = rules.MAX_LOG_INTERVAL
    p.write_bytes(frame(event(0.0, file_version="brain.Event:2"))
                  + frame(event(10.0, n, scalars={"iteration-time": 1e-4})))
    run = tensorboard.load(p, log_interval=n)
    assert len(run.steps) == n and run.steps["step"].iloc[0] == 1 and not run.meta.report.skipped


def test_steps_that_do_not_fit_int64_are_counted(tmp_path):
    # 2**64 - 1 is -1 as a signed varint, 2**65 does not fit int64 at all: both are BAD_STEP
    p = tmp_path / "events.out.tfevents.1.h.1.0"
    good = [frame(event(1.0 + k, k, scalars={"iteration-time": 0.5})) for k in (1, 2)]
    p.write_bytes(good[0] + frame(event(5.0, 2**64 - 1, scalars={"iteration-time": 0.5}))
                  + frame(event(6.0, 2**65, scalars={"iteration-time": 0.5})) + good[1])
    with pytest.warns(LoadWarning):
        run = tensorboard.load(p)
    assert run.steps["step"].tolist() == [1, 2]
    assert run.meta.report.skipped == {rules.BAD_STEP: 2}
    assert run.meta.report.first_lines[rules.BAD_STEP] == [2, 3]
    assert run.tables["scalars"]["step"].tolist() == [1, 2]


def test_options_are_checked(tmp_path):
    p = write_tb_launch(tmp_path, 50.0, 1, steps=[1, 2])
    for bad in ({"log_interval": 0}, {"log_interval": "ten"}, {"log_interval": 10**30}, {"time_tag": ""}):
        with pytest.raises(TypeError, match="tensorboard"):
            tensorboard.load(p, **bad)
    # the pipeline's keywords and the format's options together
    run = load_run(p, format="tensorboard", log_interval=10, accelerator="H100", dtype="bf16")
    assert run.meta.accelerator.startswith("H100") and run.meta.peak_flops_per_accelerator
    assert run.meta.extra["log_interval"] == 10


# --- facts and claims, pinned to the raw bytes -------------------------------------------------------
def _arg(payloads, name: str) -> tuple[int, str]:
    """(record number, value) of Megatron's ``<name>/text_summary`` string, read with re."""
    tag = f"{name}/text_summary".encode()
    pat = re.escape(b"\n" + bytes([len(tag)]) + tag) + rb"B.\x08\x07\x12\x04\x12\x02\x08\x01B(.)"
    for k, r in enumerate(payloads, start=1):
        m = re.search(pat, r, re.S)
        if m:
            return k, r[m.end(): m.end() + m.group(1)[0]].decode()
    raise AssertionError(f"{name} not in the file")


def test_real_noua_facts_and_claim_match_the_raw_bytes(realdata):  # noqa: F811
    d = realdata / "tensorboard" / "megatron_noua_1n_gbs16_localattn"
    last = sorted(d.glob("*tfevents*"))[-1]  # the launch that logged (the others died in set-up)
    payloads = list(_records(last.read_bytes()))
    run = tensorboard.load(d)
    facts = {f["name"]: f for f in run.meta.facts}
    for arg, fact, cast in (("world_size", "n_accelerators", int), ("global_batch_size", "global_batch", float),
                            ("seq_length", "seq_len", int), ("micro_batch_size", "micro_batch", int)):
        k, value = _arg(payloads, arg)
        assert facts[fact]["value"] == cast(value), arg
        assert facts[fact]["where"] == f"{last}:{k}" and facts[fact]["text"] == f"{arg}: {value}"
    assert (run.meta.n_accelerators, run.meta.global_batch, run.meta.seq_len) == (4, 16.0, 4096)
    assert _arg(payloads, "bf16")[1] == "True" and facts["dtype"]["value"] == "bf16"
    assert facts["parallelism"]["value"] == {
        short: int(_arg(payloads, arg)[1]) for arg, short in (
            ("tensor_model_parallel_size", "tp"), ("pipeline_model_parallel_size", "pp"),
            ("context_parallel_size", "cp"), ("expert_model_parallel_size", "ep"), ("data_parallel_size", "dp"))}
    # Megatron's throughput scalar (TFLOP/s per GPU): simple_value floats after the tag, via struct
    values = [(k, struct.unpack("<f", m.group(1))[0]) for k, r in enumerate(payloads, start=1)
              if (m := re.search(rb"\n\nthroughput\x15(....)", r, re.S))]
    assert len(values) == 6
    (claim,) = run.meta.claims
    vs = sorted(v for _, v in values)
    assert claim["metric"] == "tflops_per_accelerator" and claim["unit"] == "TFLOP/s per GPU"
    assert claim["value"] == pytest.approx((vs[2] + vs[3]) / 2) and claim["n"] == 6 and claim["statistic"] == "median"
    assert claim["where"] == f"{last}:{values[0][0]}"


def test_stated_facts_and_given_values_conflict_visibly(tmp_path):
    p = write_tb_launch(tmp_path, 50.0, 1, steps=[1, 2])  # world_size 8 in its arguments
    with pytest.warns(LoadWarning, match="conflict: n_accelerators given as 16"):
        run = tensorboard.load(p, n_accelerators=16)
    assert run.meta.n_accelerators == 16


# --- no foreign exception from any input ------------------------------------------------------------
_frame_once = functools.lru_cache(maxsize=4096)(frame)  # the test's own CRC is slow: frame each payload once


def _frames(payloads) -> bytes:
    return b"".join(_frame_once(r) for r in payloads)


def _mutate(rng, payloads: list[bytes]) -> tuple[str, bytes]:
    """One seeded damage to an event file: at the byte level, or to its records re-framed with
    valid checksums (so the protobuf reader, not the checksum, meets the damage)."""
    kind = rng.choice(["truncate", "flip", "flip_payload", "dup", "reorder", "number", "step", "long",
                       "nul", "crlf", "bom", "latin1"])
    recs = list(payloads)
    raw = _frames(recs)
    if kind == "truncate":
        return kind, raw[: rng.randrange(len(raw))]
    if kind == "flip":
        b = bytearray(raw)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        return kind, bytes(b)
    i = rng.randrange(len(recs))
    if kind == "flip_payload" and recs[i]:
        b = bytearray(recs[i])
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        recs[i] = bytes(b)
    elif kind == "dup":
        recs.insert(rng.randrange(len(recs)), recs[i])
    elif kind == "reorder":
        rng.shuffle(recs)
    elif kind == "number":  # every simple_value of one record becomes NaN, inf, -inf or huge
        bits = struct.pack("<f", rng.choice([math.nan, math.inf, -math.inf, 3.4e38, -1.0]))
        recs[i] = re.sub(rb"\x15....", lambda m: b"\x15" + bits, recs[i], flags=re.S)
    elif kind == "step":
        recs.insert(i, event(rng.choice([-1e308, 1e308, 0.0]), rng.choice([2**63, 2**64 - 1, 2**70, 10**15]),
                             scalars={"iteration-time": rng.choice([1e38, 0.5, math.inf])}))
    elif kind == "long":
        recs.insert(i, event(1.0, 1, texts={"x" * 80_000: "[" * 80_000}))
    else:
        raw = {"nul": lambda r: r.replace(b"\n", b"\x00", 3), "crlf": lambda r: r.replace(b"\n", b"\r\n"),
               "bom": lambda r: b"\xef\xbb\xbf" + r, "latin1": lambda r: r + "é".encode("latin-1")}[kind](raw)
        return kind, raw
    return kind, _frames(recs)


def test_mutations_of_a_real_event_file_give_a_run_or_a_load_error(realdata, tmp_path):  # noqa: F811
    import random

    src = sorted((realdata / "tensorboard" / "megatron_noua_1n_gbs16_localattn").glob("*tfevents*"))[-1]
    payloads = list(_records(src.read_bytes()))
    failures = []
    for seed in range(60):
        rng = random.Random(seed)
        kind, data = _mutate(rng, payloads)
        d = tmp_path / f"m{seed}"
        d.mkdir()
        p = d / src.name
        p.write_bytes(data)
        for strict in (False, True) if seed % 3 == 0 else (False,):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tensorboard.load(d, strict=strict)
            except InternalLoadError as exc:
                failures.append(f"seed {seed} ({kind}, strict={strict}): {exc}")
            except (LoadError, SchemaError):
                pass
    assert not failures, failures


def test_a_negative_int64_tensor_value_written_unpacked_reads_negative():
    # TensorProto dtype DT_INT64 (9) with int64_val (field 10) = -3 as one unpacked varint: protobuf
    # writes a negative int64 as its ten-byte two's complement (https://protobuf.dev/programming-guides/
    # encoding/#signed-ints); it read as 18446744073709551613 before.
    from _samples import _field

    tensor = _field(1, 0, 9) + _field(10, 0, (1 << 64) - 3)
    value = _field(1, 2, b"loss_scale") + _field(8, 2, tensor)
    payload = _field(1, 1, 1.0e9) + _field(2, 0, 7) + _field(5, 2, _field(1, 2, value))
    assert tensorboard.parse_event(payload)["values"] == [("loss_scale", "scalar", -3.0)]
