"""Kineto trace loader: step spans, GPU busy/compute/comm arithmetic, damaged traces, real traces."""

from __future__ import annotations

import gzip
import json
import math
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import gpu_time, kineto, rules
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning

BASE = 1_682_725_898_000_000.0  # epoch µs, like real traces


def ev(cat: str, name: str, ts: float, dur: float, **kw) -> dict:
    e = {"ph": "X", "cat": cat, "name": name, "pid": 0, "tid": kw.pop("tid", 7), "ts": BASE + ts, "dur": dur}
    e["args"] = {"stream": e["tid"], **kw}
    return e


def events(shift: float = 0.0) -> list[dict]:
    s = shift
    return [
        {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "python"}},
        ev("user_annotation", "ProfilerStep#1", 1000 + s, 1000, tid=1),
        ev("user_annotation", "ProfilerStep#2", 2000 + s, 1000, tid=1),
        ev("gpu_user_annotation", "ProfilerStep#1", 1000 + s, 2500),  # GPU copy: ignored
        ev("cpu_op", "aten::mm", 1010 + s, 50, tid=1),
        ev("kernel", "sm80_xmma_gemm", 1100 + s, 200, tid=7),
        ev("kernel", "elementwise_kernel", 1200 + s, 200, tid=8),  # overlaps the gemm by 100
        ev("kernel", "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)", 1350 + s, 250, tid=20),
        ev("gpu_memcpy", "Memcpy HtoD", 1700 + s, 50, tid=9),
        ev("kernel", "straddling_kernel", 1900 + s, 200, tid=7),  # 100 in step 1, 100 in step 2
        ev("kernel", "gemm2", 2200 + s, 100, tid=7),
        ev("kernel", "ncclDevKernel_SendRecv", 2500 + s, 100, tid=20),
        ev("kernel", "late_kernel", 5000 + s, 100, tid=7),  # outside every step
    ]


def write_trace(path: Path, rank: int | None, ws: int = 2, shift: float = 0.0, gz: bool = False) -> Path:
    doc: dict = {"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}]}
    if rank is not None:
        doc["distributedInfo"] = {"backend": "nccl", "rank": rank, "world_size": ws}
    doc["traceEvents"] = events(shift)
    text = json.dumps(doc, indent=1)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return kineto.load(p, **kw)


def test_step_spans_busy_compute_comm_by_hand(tmp_path):
    p = write_trace(tmp_path / "rank0.json", 0)
    assert kineto.sniff(p, read_head(p)) >= 0.9
    run = kineto.load(p)
    s = run.steps.set_index("step")
    assert run.meta.timing == "exact" and run.meta.time_unit == "us"
    assert s.index.tolist() == [1, 2] and (s["rank"] == 0).all()
    assert s["start_s"].tolist() == pytest.approx([0.0, 0.001]) and s["end_s"].tolist() == pytest.approx([0.001, 0.002])
    # Step 1: compute = [1100,1400) ∪ [1900,2000) = 400 µs; comm = 250; busy = [1100,1600) + 50 + 100.
    assert s.loc[1, "compute_s"] == pytest.approx(400e-6)
    assert s.loc[1, "comm_s"] == pytest.approx(250e-6)
    assert s.loc[1, "gpu_busy_s"] == pytest.approx(650e-6)
    assert s.loc[1, "gpu_idle_s"] == pytest.approx(350e-6)
    # Step 2: compute = [2000,2100) ∪ [2200,2300); comm = 100 µs.
    assert s.loc[2, ["compute_s", "comm_s", "gpu_busy_s"]].tolist() == pytest.approx([200e-6, 100e-6, 300e-6])
    # gpu_time's columns: step 1 overlap = [1350,1400) = 50 µs, exposed comm 250 - 50; step 2 none overlaps
    assert s[["overlap_s", "exposed_comm_s"]].to_numpy().ravel().tolist() == pytest.approx([50e-6, 200e-6, 0.0, 100e-6])
    assert s["data_wait_s"].isna().all() and run.meta.extra["data_wait_from"] is None  # no DataLoader range
    assert run.meta.extra["steps_from"].startswith("ProfilerStep#N")
    assert set(gpu_time.STEP_COLUMNS) <= set(run.steps.columns)
    k = run.tables["kernels"].set_index(["step", "category"])
    assert k.loc[(1, "compute"), "count"] == 3 and k.loc[(1, "compute"), "sum_s"] == pytest.approx(500e-6)
    assert k.loc[(1, "compute"), "union_s"] == pytest.approx(400e-6)
    assert k.loc[(2, "compute"), "count"] == 1 and k.loc[(2, "compute"), "sum_s"] == pytest.approx(200e-6)
    assert k.loc[(1, "memory"), "sum_s"] == pytest.approx(50e-6)
    assert run.meta.n_accelerators == 2 and run.meta.extra["device_names"] == ["NVIDIA A100-SXM4-80GB"]
    assert any("outside every ProfilerStep" in n for n in run.meta.report.notes)


def test_folder_of_rank_files_is_one_run(tmp_path):
    write_trace(tmp_path / "a.json", 0)
    write_trace(tmp_path / "b.json.gz", 1, shift=10, gz=True)
    (tmp_path / "notes.json").write_text('{"not": "a trace"}')
    assert kineto.sniff(tmp_path, b"") >= 0.8
    run = kineto.load(tmp_path)
    assert run.ranks == [0, 1] and len(run.steps) == 4
    r1 = run.steps[run.steps["rank"] == 1].sort_values("step")
    assert r1["start_s"].iloc[0] == pytest.approx(10e-6)  # one clock across ranks
    assert set(run.tables["kernels"]["rank"]) == {0, 1}


def test_rank_from_file_name_and_bare_event_array(tmp_path):
    p = tmp_path / "trace_rank-3.json"
    p.write_text(json.dumps(events()))
    run = kineto.load(p)
    assert run.ranks == [3] and run.meta.n_accelerators is None
    q = tmp_path / "plain.json"
    q.write_text(json.dumps({"traceEvents": events()}))
    assert kineto.load(q).ranks == [-1]


def test_truncated_trace_is_read_up_to_the_cut(tmp_path):
    full = write_trace(tmp_path / "t.json", 0).read_text()
    cut = full[: full.index("gemm2")]  # the writer died inside the gemm2 event
    p = tmp_path / "cut.json"
    p.write_text(cut)
    run = load_quiet(p)
    assert run.steps["step"].tolist() == [1, 2]
    (reason,) = run.meta.report.skipped
    assert reason == rules.JSON_REST_UNREAD and run.meta.report.examples[reason].startswith("truncated")
    assert run.meta.report.first_lines[reason] == [cut[: cut.rindex("{")].count("\n") + 1]
    # Kernels before the cut are counted: step 1 as in the full trace.
    assert run.steps.set_index("step").loc[1, "compute_s"] == pytest.approx(400e-6)
    with pytest.raises(LoadError) as exc:
        kineto.load(p, strict=True)
    assert exc.value.line is not None and "cut.json" in str(exc.value)


def test_nan_and_negative_durations_are_bad_records(tmp_path):
    evs = events()
    evs.append(ev("kernel", "bad_nan_kernel", 1500, float("nan")))
    evs.append(ev("kernel", "bad_negative_kernel", 1500, -5.0))
    text = json.dumps({"distributedInfo": {"rank": 0, "world_size": 1}, "traceEvents": evs}, indent=1)
    p = tmp_path / "t.json"
    p.write_text(text)

    def line_of(marker: str) -> int:
        i = text.index(marker)
        return text.count("\n", 0, text.rindex("{", 0, i)) + 1

    with pytest.warns(LoadWarning):
        run = kineto.load(p)
    rep = run.meta.report
    assert rep.skipped == {"time is missing, NaN or infinite": 1, "negative duration": 1}
    assert rep.first_lines["time is missing, NaN or infinite"] == [line_of("bad_nan_kernel")]
    assert rep.examples["time is missing, NaN or infinite"] == "dur"
    assert rep.first_lines["negative duration"] == [line_of("bad_negative_kernel")]
    assert run.steps.set_index("step").loc[1, "compute_s"] == pytest.approx(400e-6)  # unaffected
    with pytest.raises(LoadError) as exc:
        kineto.load(p, strict=True)
    assert exc.value.line == line_of("bad_nan_kernel") and exc.value.field == f"traceEvents[{len(evs) - 2}].dur"


def test_unusable_inputs_raise_load_error(tmp_path):
    g = tmp_path / "garbage.json"
    g.write_bytes(b"\x89PNG\r\n" + bytes(range(256)))
    with pytest.raises(LoadError):
        kineto.load(g)
    e = tmp_path / "empty.json"
    e.write_text("")
    with pytest.raises(LoadError, match="empty"):
        kineto.load(e)
    n = tmp_path / "nosteps.json"
    n.write_text(json.dumps({"traceEvents": [ev("kernel", "k", 0, 5)]}))
    with pytest.raises(LoadError, match="no ProfilerStep"):
        load_quiet(n)
    d = tmp_path / "nothing"
    d.mkdir()
    (d / "readme.txt").write_text("hi")
    assert kineto.sniff(d, b"") == 0.0
    with pytest.raises(LoadError, match="no Kineto trace files"):
        kineto.load(d)
    two = tmp_path / "two"
    two.mkdir()
    write_trace(two / "a.json", 0)
    write_trace(two / "b.json", 0)
    with pytest.raises(LoadError, match="claim rank"):
        kineto.load(two)
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    write_trace(mixed / "a.json", 0, ws=2)
    write_trace(mixed / "b.json", 1, ws=8)
    with pytest.raises(LoadError, match="world_size"):
        kineto.load(mixed)


def _ranks(folder: Path, shifts: list[float]) -> Path:
    folder.mkdir()
    for r, sh in enumerate(shifts):
        write_trace(folder / f"rank{r}.json", r, ws=len(shifts), shift=sh)
    return folder


def _clock_notes(run) -> list[str]:
    return [n for n in run.meta.report.notes if n.startswith("clock offset?")]


def test_a_rank_with_an_offset_clock_is_reported_not_rewritten(tmp_path):
    hour = 3600e6  # µs
    folder = _ranks(tmp_path / "off", [0.0, 0.0, hour, 0.0])
    run = kineto.load(folder)  # a note, not a skip: no LoadWarning (the formats never warn)
    (note,) = _clock_notes(run)
    assert re.search(r"clock offset\? .*rank 2 \+3600\.000 s", note)
    assert "rank 2" in note and "rank 0" not in note and "align_clocks=True" in note
    ((r, off),) = [(o["rank"], o["offset_s"]) for o in run.meta.extra["clock_offsets_s"]]
    assert r == 2 and off == pytest.approx(3600.0, abs=1e-3)
    assert run.meta.extra["clocks_aligned"] is False
    s = run.steps
    assert s.loc[s["rank"] == 2, "start_s"].min() == pytest.approx(3600.0, abs=1e-6)  # timestamps kept
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([0.001] * 8)  # durations unaffected
    with pytest.raises(LoadError, match=r"rank 2 \+3600\.000 s"):
        kineto.load(folder, strict=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", LoadWarning)
        aligned = kineto.load(folder, align_clocks=True)
    a = aligned.steps
    assert a.groupby("step")["start_s"].agg(np.ptp).max() == pytest.approx(0.0, abs=1e-6)
    assert a["start_s"].min() == pytest.approx(0.0) and aligned.meta.extra["clocks_aligned"] is True
    assert "aligned" in _clock_notes(aligned)[0]


def test_two_ranks_with_an_offset_are_both_named(tmp_path):
    run = load_quiet(_ranks(tmp_path / "two", [0.0, -7200e6]))
    (note,) = _clock_notes(run)
    assert "either may be the one off" in note
    offsets = {o["rank"]: o["offset_s"] for o in run.meta.extra["clock_offsets_s"]}
    assert offsets == pytest.approx({0: 3600.0, 1: -3600.0}, abs=1e-3)


@pytest.mark.parametrize("shifts", [[0.0, 0.0, 0.0], [0.0, 3000.0, -2000.0, 4500.0], [0.0, 900e3]])
def test_synchronised_or_jittery_clocks_are_not_flagged(tmp_path, shifts):
    # Equal clocks; a few ms of jitter; 0.9 s on 1 ms steps (under the 1 s floor).
    with warnings.catch_warnings():
        warnings.simplefilter("error", LoadWarning)
        run = kineto.load(_ranks(tmp_path / "ok", shifts), strict=True)
    assert not _clock_notes(run) and run.meta.extra["clock_offsets_s"] == []
    assert (run.steps.groupby("rank")["start_s"].min().tolist()
            == pytest.approx([(x - min(shifts)) / 1e6 for x in shifts]))


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.binary(max_size=300),
                 st.text(alphabet='{}[]":,0123456789.-eXphtsdur ', max_size=300).map(str.encode)))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.json"
        p.write_bytes(b'{"traceEvents": [' + data)
        try:
            load_quiet(p)
        except LoadError:
            pass


# --- real traces ----------------------------------------------------------------------------------
def _raw(p: Path) -> dict:
    return json.loads(gzip.decompress(p.read_bytes()))


def _clipped_nccl_us(doc: dict, spans: list[tuple[float, float]]) -> float:
    total = 0.0
    for e in doc["traceEvents"]:
        if e.get("ph") == "X" and e.get("cat") == "kernel" and "nccl" in e["name"].lower():
            a, b = e["ts"], e["ts"] + e["dur"]
            total += sum(max(0.0, min(b, e1) - max(a, s1)) for s1, e1 in spans)
    return total


@pytest.mark.realdata
def test_real_traces_match_the_raw_json():
    from mfu_toolkit.io import load_run

    files = sorted(realdata_dir("kineto").glob("*.json.gz"))
    assert len(files) == 4
    for p in files:
        doc = _raw(p)
        steps = sorted(
            (e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1]))
            for e in doc["traceEvents"]
            if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"
        )
        run = load_run(p)
        assert run.meta.source_format == "kineto" and run.meta.report.total_skipped == 0
        assert len(run.steps) == len(steps)
        assert sorted(run.steps["step"]) == sorted(n for _, _, n in steps)
        info = doc.get("distributedInfo")
        assert run.ranks == [info["rank"] if info else -1]
        assert run.meta.n_accelerators == (info["world_size"] if info else None)
        t0 = min(s for s, _, _ in steps)
        got = run.steps.sort_values("start_s")
        assert got["start_s"].tolist() == pytest.approx([(s - t0) / 1e6 for s, _, _ in steps], abs=1e-9)
        assert got["end_s"].tolist() == pytest.approx([(e - t0) / 1e6 for _, e, _ in steps], abs=1e-9)
        # Communication time: NCCL kernel µs inside the step spans ÷ 1e6 (one stream: no overlap).
        nccl = _clipped_nccl_us(doc, [(s, e) for s, e, _ in steps]) / 1e6
        assert run.steps["comm_s"].sum() == pytest.approx(nccl, rel=1e-7, abs=1e-8)
        k = run.tables["kernels"]
        assert k.loc[k["category"] == "comm", "sum_s"].sum() == pytest.approx(nccl, rel=1e-7, abs=1e-8)
        span = run.steps["end_s"] - run.steps["start_s"]
        assert (run.steps["gpu_busy_s"] <= span + 1e-12).all()
        assert np.allclose(run.steps["gpu_busy_s"] + run.steps["gpu_idle_s"], span)
        assert (run.steps["gpu_busy_s"] >= np.maximum(run.steps["compute_s"], run.steps["comm_s"]) - 1e-12).all()
    amd = load_run(next(p for p in files if "mi250" in p.name))
    assert amd.steps["comm_s"].sum() == 0 and amd.steps["compute_s"].sum() > 0
    assert any("AMD" in d for d in amd.meta.extra["device_names"])


@pytest.mark.realdata
def test_two_ranks_of_the_128_rank_job_load_as_one_run(tmp_path):
    from mfu_toolkit.io import load_run

    folder = realdata_dir("kineto")
    ranks = sorted(folder.glob("HTA_trace_filter_sampled_rank-*_ws128.json.gz"))
    assert len(ranks) == 2
    for p in ranks:
        (tmp_path / p.name).symlink_to(p)
    run = load_run(tmp_path)
    assert run.meta.source_format == "kineto"
    assert run.ranks == [0, 1] and run.meta.n_accelerators == 128
    assert len(run.steps) == sum(
        1 for p in ranks for e in _raw(p)["traceEvents"] if str(e.get("name", "")).startswith("ProfilerStep#")
    )
    t0 = min(e["ts"] for p in ranks for e in _raw(p)["traceEvents"]
             if str(e.get("name", "")).startswith("ProfilerStep#"))
    assert run.meta.extra["t0_trace_us"] == t0
    assert any("2 of 128 ranks" in n for n in run.meta.report.notes)
    # The whole real folder mixes three jobs: refused with the reason, not merged.
    with pytest.raises(LoadError, match="different jobs|world_size"):
        kineto.load(folder)
    assert not math.isnan(run.steps["gpu_busy_s"].sum())
    assert not _clock_notes(run) and run.meta.extra["clock_offsets_s"] == []


@pytest.mark.realdata
def test_the_128_rank_job_with_one_clock_an_hour_off_is_reported(tmp_path):
    from mfu_toolkit.io import load_run

    for p in sorted(realdata_dir("kineto").glob("HTA_trace_filter_sampled_rank-*_ws128.json.gz")):
        doc = _raw(p)
        if "rank-1" in p.name:
            for e in doc["traceEvents"]:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] += 3600e6
        (tmp_path / p.name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    run = load_run(tmp_path)
    assert _clock_notes(run)
    offsets = {o["rank"]: o["offset_s"] for o in run.meta.extra["clock_offsets_s"]}
    assert offsets == pytest.approx({0: -1800.0, 1: 1800.0}, abs=0.01)
    aligned = load_run(tmp_path, align_clocks=True)
    assert aligned.steps.groupby("step")["start_s"].agg(np.ptp).max() < 0.01


def test_caller_overrides_and_pattern(tmp_path):
    write_trace(tmp_path / "job_rank0.json", 0)
    write_trace(tmp_path / "other_rank0.json", 0)
    with pytest.warns(LoadWarning, match="conflict: n_accelerators given as 16, but the log states 2"):
        run = kineto.load(tmp_path, pattern="job_*.json", name="toy", n_accelerators=16)
    assert run.ranks == [0] and run.meta.name == "toy" and run.meta.n_accelerators == 16
    with pytest.raises(LoadError, match="path must be a str or Path"):  # pattern= picks files now
        kineto.load([tmp_path / "job_rank0.json"])


# --- facts ------------------------------------------------------------------------------------------
def _line_of(text: str, needle: str) -> int:
    return text.count("\n", 0, text.index(needle)) + 1


@pytest.mark.realdata
def test_real_trace_facts_match_the_raw_bytes():
    from mfu_toolkit.io import load_run

    for p in sorted(realdata_dir("kineto").glob("*.json.gz")):
        text = gzip.decompress(p.read_bytes()).decode()
        facts = {f["name"]: f for f in load_run(p).meta.facts}
        # accelerator: the "name" after "deviceProperties" in the raw text, as printed.
        if '"deviceProperties"' in text:
            name = re.search(r'"name": "([^"]*)"', text[text.index('"deviceProperties"'):]).group(1)
            assert facts["accelerator"]["value"] == name
            dp_line = _line_of(text, '"deviceProperties"')
            assert facts["accelerator"]["where"] == f"{p}:{dp_line}"
        else:
            assert "accelerator" not in facts
        # n_ranks and n_accelerators: distributedInfo's world_size, on the line it is written.
        m = re.search(r'"world_size": (\d+)', text)
        if m:
            for key in ("n_ranks", "n_accelerators"):
                assert facts[key]["value"] == int(m.group(1))
                assert facts[key]["where"] == f"{p}:{text.count(chr(10), 0, m.start()) + 1}"
                assert "two per MI250X/MI250 package" in facts[key]["text"]
        else:
            assert "n_ranks" not in facts and "n_accelerators" not in facts
    # The values themselves, read by eye from the files (deviceProperties[0].name, world_size).
    names = {p.name: {f["name"]: f["value"] for f in load_run(p).meta.facts}
             for p in realdata_dir("kineto").glob("*.json.gz")}
    assert names["HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz"] == {
        "n_ranks": 2, "n_accelerators": 2, "accelerator": "NVIDIA A100-PG509-200"}
    assert names["HTA_amd_mi250_minitoy_ROCm6_2_kineto.json.gz"] == {"accelerator": "AMD Radeon Graphics"}
    assert names["HTA_trace_filter_sampled_rank-1_ws128.json.gz"] == {"n_ranks": 128, "n_accelerators": 128}


def _trace_with_info(path: Path, info: dict) -> str:
    text = json.dumps({"distributedInfo": info, "traceEvents": events()}, indent=1)
    path.write_text(text)
    return text


def test_a_rank_or_world_size_out_of_range_is_counted_not_a_crash(tmp_path):
    p = tmp_path / "trace_rank-3.json"
    text = _trace_with_info(p, {"backend": "nccl", "rank": 3e9, "world_size": 8})
    run = load_quiet(p)
    reason = "value out of range"
    assert run.meta.report.skipped == {reason: 1}
    assert run.meta.report.examples[reason] == "distributedInfo.rank: 3000000000.0"
    assert run.meta.report.first_lines[reason] == [_line_of(text, '"distributedInfo"')]
    assert run.ranks == [3]  # then taken from the file name
    with pytest.raises(LoadError) as exc:
        kineto.load(p, strict=True)
    assert exc.value.field == "distributedInfo.rank" and exc.value.line == _line_of(text, '"distributedInfo"')
    for ws in (0, 3e9, -2, 2.5):
        _trace_with_info(p, {"rank": 1, "world_size": ws})
        run = load_quiet(p)
        assert run.meta.report.skipped == {"value out of range": 1}
        assert run.meta.report.examples["value out of range"].startswith("distributedInfo.world_size: ")
        assert run.meta.n_accelerators is None and run.meta.fact("n_ranks") is None and run.ranks == [1]
    _trace_with_info(p, {"rank": 5, "world_size": 2})  # rank 5 of 2
    run = load_quiet(p)
    assert run.meta.report.skipped == {"value out of range": 1}
    assert run.meta.report.examples["value out of range"] == "distributedInfo.rank is not below world_size: rank 5 of 2"
    assert run.ranks == [3] and run.meta.n_accelerators == 2


def test_a_profiler_step_number_beyond_float_precision_is_counted(tmp_path):
    p = tmp_path / "t.json"
    evs = events()
    evs[2]["name"] = "ProfilerStep#99999999999999999999"  # 20 digits: float64 would round it
    p.write_text(json.dumps({"traceEvents": evs}, indent=1))
    run = load_quiet(p)
    assert run.steps["step"].tolist() == [1]
    assert run.meta.report.skipped == {"step is not a non-negative integer": 1}
    assert run.meta.report.examples["step is not a non-negative integer"] == "ProfilerStep#N"


def test_a_value_nested_too_deeply_is_counted_by_the_full_parse(tmp_path):
    evs = events()
    evs.insert(4, ev("cpu_op", "aten::deep", 1020, 5))
    text = json.dumps({"traceEvents": evs}, indent=1).replace(
        '"aten::deep"', '"aten::deep", "x": ' + "[" * 100_000 + "]" * 100_000)
    p = tmp_path / "deep.json"
    p.write_text(text)
    assert load_quiet(p).meta.report.skipped == {}  # the selective read never decodes a CPU op
    kineto.FAST_PATH = False
    try:
        run = load_quiet(p)
    finally:
        kineto.FAST_PATH = True
    (reason,) = run.meta.report.skipped
    assert reason == rules.JSON_REST_UNREAD and run.meta.report.examples[reason].startswith(rules.JSON_TOO_DEEP)
    brace = text.rfind("{", 0, text.index('"aten::deep"'))  # where the deep event begins
    assert run.meta.report.first_lines[reason] == [text.count("\n", 0, brace) + 1]
    assert run.steps["step"].tolist() == [1, 2]  # the spans before it were read
    with pytest.raises(LoadError, match="nested too deeply") as exc:
        kineto.load(p, strict=True)
    assert str(p) in str(exc.value)


def test_pathological_traces_are_read_in_linear_time(tmp_path):
    from _timing import explain, growth, linear_bound

    # 200 000 step marks in one event's text, and 40 000 events with a NaN duration: each is
    # located, and each bad event's line counted, in one pass over the text. A quarter of each
    # against the whole: 4x the input.
    def marks(n: int) -> str:
        return json.dumps({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "x", "ts": 1, "dur": 1,
                                            "args": {"s": "ProfilerStep#" * n}}, *events()]})

    def bad(n: int) -> str:
        return json.dumps({"traceEvents": events() + [ev("kernel", "k", 10, float("nan"))] * n}, indent=1)

    for name, text, n in (("marks.json", marks, 50_000), ("bad.json", bad, 10_000)):
        runs = {}

        def load(n: int, name: str = name, text=text, runs: dict = runs):
            p = tmp_path / f"{n}_{name}"
            p.write_text(text(n))
            return lambda: runs.__setitem__(n, load_quiet(p, cache=False))  # each time parsed, not read back

        ratio = growth(load, n)
        assert ratio < linear_bound(), (name, explain(ratio))
        for run in runs.values():
            assert run.steps["step"].tolist() == [1, 2]
        # both sizes take the same path
        assert runs[n].meta.report.skipped.keys() == runs[4 * n].meta.report.skipped.keys()


# --- saved Runs ---------------------------------------------------------------------------------------
def _reads_back_equal(run, tmp_path: Path) -> bool:
    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    return load_run(save_run(run, tmp_path / "run.parquet"), format="run_parquet") == run


def test_clock_offsets_survive_save_and_load(tmp_path):
    run = load_quiet(_ranks(tmp_path / "off", [0.0, 0.0, 3600e6, 0.0]))
    assert run.meta.extra["clock_offsets_s"] == [{"rank": 2, "offset_s": pytest.approx(3600.0, abs=1e-3)}]
    assert _reads_back_equal(run, tmp_path)
    assert _reads_back_equal(load_quiet(tmp_path / "off", align_clocks=True), tmp_path)


@pytest.mark.realdata
def test_every_real_trace_reads_back_equal_after_save_run(tmp_path):
    from mfu_toolkit.io import load_run

    folder = realdata_dir("kineto")
    for p in sorted(folder.glob("*.json.gz")):
        assert _reads_back_equal(load_run(p), tmp_path), p.name
    job = tmp_path / "job"
    job.mkdir()
    for p in sorted(folder.glob("HTA_trace_filter_sampled_rank-*_ws128.json.gz")):
        doc = _raw(p)
        if "rank-1" in p.name:  # one rank's clock an hour off: the offsets are in the saved Run
            for e in doc["traceEvents"]:
                if isinstance(e.get("ts"), (int, float)):
                    e["ts"] += 3600e6
        (job / p.name).write_bytes(gzip.compress(json.dumps(doc).encode()))
    run = load_run(job)
    assert len(run.meta.extra["clock_offsets_s"]) == 2 and _reads_back_equal(run, tmp_path)


# --- damaged copies of a real trace -------------------------------------------------------------------
@pytest.mark.realdata
@pytest.mark.parametrize("seed", range(3))
def test_damaged_copies_of_a_real_trace_load_or_fail_cleanly(tmp_path, seed):
    import random

    from _corpus import check, materialise, mutations

    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    src = realdata_dir("kineto", "HTA_amd_mi250_minitoy_ROCm6_2_kineto.json.gz")
    save_run(load_run(src), tmp_path / "undamaged.parquet")  # the children fork with pyarrow ready
    rng = random.Random(f"kineto:{seed}")
    problems = []
    # truncation, flips, NaN/huge numbers, NUL, CR, BOM, gzip damage, ...
    for kind, data in mutations(src.read_bytes(), rng):
        verdict = check(materialise(src, kind, data, tmp_path), "kineto")
        if verdict != "ok":
            problems.append(f"{kind}: {verdict}")
    assert not problems, problems


# --- regexes ------------------------------------------------------------------------------------------
# applied with match/fullmatch at one position only
ANCHORED = {"_COLON_RE", "_COLON_B_RE", "_WS_RE", "_EVENT_HEAD_RE", "_TRACE_EVENTS_B_RE"}


@pytest.mark.parametrize("ch", list('[0 {"\\,:a\n-'))
def test_the_format_regexes_take_linear_time_on_an_80_kb_line(ch):
    from _corpus import assert_regexes_linear

    prefixes = ("", '"cat": "kernel", "name": "', '"log_history": ', "{'loss': ", "gpu.0.", "rank")
    assert_regexes_linear(kineto, ch, prefixes=prefixes, anchored=ANCHORED)


# --- a rank whose deviceProperties name no device; MTIA devices -------------------------------------------
A100 = ("kineto", "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz")
_DEV_COLS = ["compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_busy_s", "gpu_idle_s"]


def _props_span(raw: str) -> tuple[int, int]:
    """Start and end (past the closing bracket) of the raw deviceProperties list, bracket counting."""
    i = raw.index("[", raw.index('"deviceProperties"'))
    depth = 0
    for j in range(i, len(raw)):
        depth += {"[": 1, "]": -1}.get(raw[j], 0)
        if depth == 0:
            return i, j + 1
    raise AssertionError("unbalanced deviceProperties")


def _a100_variant(tmp_path: Path, how: str) -> Path:
    """The real A100 trace with its deviceProperties emptied (as Kineto writes it when the device
    query fails: ``"deviceProperties": [\\n  ],``) or removed (older Kineto built without CUPTI)."""
    raw = gzip.decompress(realdata_dir(*A100).read_bytes()).decode()
    i, j = _props_span(raw)
    if how == "empty":
        raw = raw[:i] + "[\n  ]" + raw[j:]
    else:
        start = raw.rindex("\n", 0, raw.index('"deviceProperties"'))
        raw = raw[:start] + raw[j:].lstrip()[1:]  # the key, its list and the comma after it
    p = tmp_path / f"rank0_{how}.json.gz"
    p.write_bytes(gzip.compress(raw.encode()))
    return p


@pytest.mark.parametrize("how", ["empty", "absent"])
def test_a_trace_whose_device_properties_name_no_device(tmp_path, how):
    from mfu_toolkit.io import detect_format, load_run

    p = _a100_variant(tmp_path, how)
    assert detect_format(p) == "kineto"
    run, real = load_quiet(p, cache=False), load_quiet(realdata_dir(*A100), cache=False)
    assert run.meta.accelerator is None and not [f for f in run.meta.facts if f["name"] == "accelerator"]
    assert real.meta.accelerator is not None  # the unedited trace names its GPU
    note = next(n for n in run.meta.report.notes if "no device named" in n)
    if how == "empty":  # the line of the key in the variant's raw text
        text = gzip.decompress(p.read_bytes()).decode()
        line = text.count("\n", 0, text.index('"deviceProperties"')) + 1
        assert f"deviceProperties is empty (rank0_empty.json.gz:{line})" in note
    else:
        assert "no trace has deviceProperties" in note
    assert "not assumed" in note and "accelerator=" in note
    # the device events are still read: the step table is the unedited trace's
    assert np.allclose(run.steps[_DEV_COLS].to_numpy(), real.steps[_DEV_COLS].to_numpy())
    assert load_run(p, cache=False).meta.source_format == "kineto"


def test_a_cpu_only_rank_leaves_device_time_unknown(tmp_path):
    doc = json.loads(gzip.decompress(realdata_dir(*A100).read_bytes()))
    doc["deviceProperties"] = []
    device = {"kernel", "gpu_memcpy", "gpu_memset", "gpu_user_annotation", "cuda_runtime", "ac2g"}
    doc["traceEvents"] = [e for e in doc["traceEvents"] if e.get("cat") not in device]
    p = tmp_path / "cpu_rank0.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    for fast in (True, False):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(kineto, "FAST_PATH", fast)
            run = load_quiet(p, cache=False)
        # the steps are still read (3 ProfilerStep spans in the real trace), their device time unknown
        assert len(run.steps) == 3 and run.steps[_DEV_COLS].isna().all().all()
        assert any("no device activity" in n and "unknown (left missing), not zero" in n for n in run.meta.report.notes)


def test_a_kineto_header_with_long_metadata_is_recognised(tmp_path):
    # newer PyTorch writes every process group's config into distributedInfo before traceEvents
    doc = json.loads(gzip.decompress(
        realdata_dir("kineto", "HTA_trace_filter_sampled_rank-0_ws128.json.gz").read_bytes()))
    head = {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": dict(doc["distributedInfo"])}
    head["distributedInfo"]["pg_config"] = [{"pg_name": str(i), "pg_desc": "undefined", "backend_config": "cuda:nccl",
                                             "pg_size": 128, "ranks": list(range(128))} for i in range(40)]
    p = tmp_path / "rank0.json"
    p.write_text(json.dumps({**head, "traceEvents": doc["traceEvents"]}, indent=2))
    assert p.read_bytes().index(b'"traceEvents"') > 8192
    assert kineto.sniff(p, read_head(p)) >= 0.9 and kineto.sniff(tmp_path, b"") >= 0.85
    assert len(load_quiet(tmp_path, cache=False).steps) == len(
        load_quiet(realdata_dir("kineto", "HTA_trace_filter_sampled_rank-0_ws128.json.gz"), cache=False).steps)


def _mtia_trace(path: Path, props: list, backend: str = "mtia:hccl,cpu:gloo") -> Path:
    """A trace in the form of HTA's MTIA test traces (tests/data/mtia_trace_single_rank,
    mtia_inference_trace; https://github.com/facebookresearch/HolisticTraceAnalysis): device events
    in category mtia_ccp_events, dma_request memory transfers, hccl:: collectives."""
    evs = [
        ev("user_annotation", "ProfilerStep#1", 1000, 1000, tid=1),
        ev("mtia_ccp_events", "fc-dtype_Float", 1100, 300, tid=801),
        ev("mtia_ccp_events", "add-dtype_Float", 1300, 200, tid=802),  # overlaps fc by 100
        ev("mtia_ccp_events", "dma_request", 1600, 50, tid=801, direction="DEVICE_TO_HOST", size=16),
        ev("mtia_ccp_events", "hccl::all_reduce", 1700, 150, tid=803),
        ev("mtia_runtime", "runFunction - job_prep_and_submit_for_execution", 1050, 20, tid=1),
    ]
    doc = {"schemaVersion": 1, "deviceProperties": props,
           "distributedInfo": {"backend": backend, "rank": 0, "world_size": 1}, "traceEvents": evs}
    path.write_text(json.dumps(doc, indent=2))
    return path


ARTEMIS = {"id": 17, "name": "ARTEMIS", "runtimeMajorVersion": 1, "runtimeMinorVersion": 30, "maxGridHeight": 8,
           "maxGridWidth": 8}


@pytest.mark.parametrize("fast", [True, False])
def test_an_mtia_trace_names_its_device_and_reads_its_device_events(tmp_path, fast, monkeypatch):
    monkeypatch.setattr(kineto, "FAST_PATH", fast)
    run = load_quiet(_mtia_trace(tmp_path / "mtia_rank0.json", [ARTEMIS]), cache=False)
    fact = next(f for f in run.meta.facts if f["name"] == "accelerator")
    assert fact["value"] == "ARTEMIS" and fact["source"] == "stated" and "an MTIA device" in fact["text"]
    assert fact["where"].endswith("mtia_rank0.json:3")  # the line of "deviceProperties" in the file written above
    s = run.steps.iloc[0]
    # by hand: compute = [1100,1500) = 400 µs; comm (hccl) = 150; busy = 400 + 50 (dma) + 150
    assert s["compute_s"] == pytest.approx(400e-6) and s["comm_s"] == pytest.approx(150e-6)
    assert s["gpu_busy_s"] == pytest.approx(600e-6) and s["gpu_idle_s"] == pytest.approx(400e-6)
    k = run.tables["kernels"].set_index("category")
    assert k.loc["memory", "count"] == 1 and k.loc["comm", "count"] == 1 and k.loc["compute", "count"] == 2


def test_an_mtia_trace_without_device_properties_says_mtia_not_a_name(tmp_path):
    run = load_quiet(_mtia_trace(tmp_path / "mtia_rank0.json", []), cache=False)
    assert run.meta.accelerator is None
    note = next(n for n in run.meta.report.notes if "no device named" in n)
    assert "mtia:hccl,cpu:gloo" in note and "MTIA of a generation the trace does not name" in note
    assert run.steps["gpu_busy_s"].iloc[0] == pytest.approx(600e-6)  # its device events are read all the same


def test_a_gpu_device_with_mtia_like_keys_is_not_called_mtia(tmp_path):
    gpu = {"id": 0, "name": "NVIDIA H100 80GB HBM3", "computeMajor": 9, "maxGridHeight": 65535}
    run = load_quiet(_mtia_trace(tmp_path / "rank0.json", [gpu], backend="nccl"), cache=False)
    fact = next(f for f in run.meta.facts if f["name"] == "accelerator")
    assert fact["value"] == "NVIDIA H100 80GB HBM3" and "MTIA" not in fact["text"]
