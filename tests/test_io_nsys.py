"""The Nsight Systems export loader (``mfu_toolkit.io.formats.nsys``).

- The two real exports (``MFU_REALDATA/nsys``): kernels per device, NCCL kernels and busy time (the
  union of kernel intervals) recomputed here from the raw table with ``sqlite3``; the GPU stated as
  unknown; no steps (their NVTX ranges are op ranges); the file opened read-only (nothing beside it);
  ``mfu analyze`` answers.
- A variant export built here with two devices, ``ProfilerStep#1..4`` ranges and compute, NCCL and
  memory intervals overlapping by known amounts: the per-step compute, communication, overlap,
  exposed communication, busy and idle time are worked out by hand below; the same kernels written
  as Kineto traces give the same step table; the same tables as a ``parquetdir`` give the same Run.
- Variants missing tables and columns load with notes; what cannot load is a LoadError.
- Cost: loading is a bounded multiple of a bare ``sqlite3`` read of the kernel table, and linear.
"""

from __future__ import annotations

import json
import math
import sqlite3
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (fixture: MFU_REALDATA, skip when unset, fail when missing)
from _timing import explain, growth, linear_bound, slowdown

from mfu_toolkit.cli import main
from mfu_toolkit.io import detect, load_run
from mfu_toolkit.io.formats import nsys
from mfu_toolkit.run import LoadError

MS = 1_000_000  # ns
ORIGIN = 5_000_000_000  # the capture's start on its clock (ns)
UTC = 1_700_000_000_000_000_000  # that start as UTC epoch ns: 2023-11-14T22:13:20Z
PID = {0: 100, 1: 200}  # device -> the process that launches its kernels
GEMM, ELEMENTWISE, NCCL_NEW, NCCL_OLD = 1, 2, 3, 4
STRINGS = {GEMM: "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", ELEMENTWISE: "vectorized_elementwise_kernel",
           NCCL_NEW: "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",  # NCCL >= 2.19 names
           NCCL_OLD: "ncclKernel_AllReduce_RING_LL_Sum_float",  # NCCL 2.8-2.18 names
           10: "ProfilerStep#1", 11: "ProfilerStep#2", 12: "aten::mm"}
SCHEMA = {
    "StringIds": ["id INTEGER PRIMARY KEY", "value TEXT NOT NULL"],
    "ANALYSIS_DETAILS": ["globalVid INTEGER", "duration INTEGER", "startTime INTEGER", "stopTime INTEGER"],
    "TARGET_INFO_SESSION_START_TIME": ["utcEpochNs INTEGER", "utcTime TEXT", "localTime TEXT",
                                       "systemClockNs INTEGER"],
    "ENUM_NSYS_EVENT_TYPE": ["id INTEGER PRIMARY KEY", "name TEXT", "label TEXT"],
    "CUPTI_ACTIVITY_KIND_KERNEL": ["start INTEGER NOT NULL", "end INTEGER NOT NULL", "deviceId INTEGER NOT NULL",
                                   "contextId INTEGER", "streamId INTEGER", "globalPid INTEGER",
                                   "demangledName INTEGER", "shortName INTEGER"],
    "CUPTI_ACTIVITY_KIND_MEMCPY": ["start INTEGER NOT NULL", "end INTEGER NOT NULL", "deviceId INTEGER NOT NULL",
                                   "streamId INTEGER", "globalPid INTEGER", "bytes INTEGER"],
    "NVTX_EVENTS": ["start INTEGER NOT NULL", "end INTEGER", "eventType INTEGER NOT NULL", "text TEXT",
                    "globalTid INTEGER", "textId INTEGER"],
}


def _gpid(device: int) -> int:
    """A serialized GlobalId of the device's process: hardware/VM bits, the pid at bits 24-47."""
    return (1 << 48) | (PID[device] << 24)


def _rows() -> dict[str, list[dict]]:
    """The variant capture. Device d's step k spans [10k + d, 10k + d + 10) ms after the origin.

    In each step (ms after the step's start): device 0 runs a GEMM [0, 4) and an elementwise kernel
    [3, 6) on two streams, an NCCL (>= 2.19) all-reduce [5, 8) and a memory copy [8.5, 9); device 1
    runs an NCCL (2.8-2.18 names) all-reduce [0, 6) and an elementwise kernel [1, 3). Device 0 also
    runs a GEMM at [2, 3) ms, before its first step, and one at [49, 52) ms, across the end of step 4
    ([40, 50) ms).
    """
    k, m, r = [], [], []

    def kern(d: int, a: float, b: float, name: int, stream: int) -> None:
        k.append({"start": ORIGIN + int(a * MS), "end": ORIGIN + int(b * MS), "deviceId": d, "contextId": 1,
                  "streamId": stream, "globalPid": _gpid(d), "demangledName": name, "shortName": name})

    for step in range(1, 5):
        t0, t1 = 10 * step, 10 * step + 1
        kern(0, t0, t0 + 4, GEMM, 7)
        kern(0, t0 + 3, t0 + 6, ELEMENTWISE, 8)
        kern(0, t0 + 5, t0 + 8, NCCL_NEW, 9)
        m.append({"start": ORIGIN + int((t0 + 8.5) * MS), "end": ORIGIN + (t0 + 9) * MS, "deviceId": 0,
                  "streamId": 7, "globalPid": _gpid(0), "bytes": 4096})
        kern(1, t1, t1 + 6, NCCL_OLD, 9)
        kern(1, t1 + 1, t1 + 3, ELEMENTWISE, 7)
        for d, t in ((0, t0), (1, t1)):  # ProfilerStep#1-2 of device 0 by registered string, the rest inline
            by_id = d == 0 and step <= 2
            r.append({"start": ORIGIN + t * MS, "end": ORIGIN + (t + 10) * MS, "eventType": 59,
                      "text": None if by_id else f"ProfilerStep#{step}", "globalTid": _gpid(d) | 7,
                      "textId": 9 + step if by_id else None})
            r.append({"start": ORIGIN + t * MS, "end": ORIGIN + (t + 4) * MS, "eventType": 59, "text": None,
                      "globalTid": _gpid(d) | 7, "textId": 12})  # an op range: not a step
    kern(0, 2, 3, GEMM, 7)
    kern(0, 49, 52, GEMM, 7)
    r.append({"start": ORIGIN, "end": ORIGIN + MS, "eventType": 59, "text": "ProfilerStep#", "globalTid": 7,
              "textId": None})  # no number: does not match ProfilerStep#N
    r.append({"start": ORIGIN, "end": None, "eventType": 34, "text": "ProfilerStep#9", "globalTid": 7,
              "textId": None})  # a mark, not a range
    return {
        "StringIds": [{"id": i, "value": v} for i, v in STRINGS.items()],
        "ANALYSIS_DETAILS": [{"globalVid": 1, "duration": 60 * MS, "startTime": ORIGIN, "stopTime": ORIGIN + 60 * MS}],
        "TARGET_INFO_SESSION_START_TIME": [{"utcEpochNs": UTC, "utcTime": "2023-11-14T22:13:20",
                                            "localTime": "2023-11-14T22:13:20", "systemClockNs": ORIGIN}],
        "ENUM_NSYS_EVENT_TYPE": [{"id": 34, "name": "NvtxMark", "label": "NvtxMark"},
                                 {"id": 59, "name": "NvtxPushPopRange", "label": "NvtxPushPopRange"},
                                 {"id": 60, "name": "NvtxStartEndRange", "label": "NvtxStartEndRange"}],
        "CUPTI_ACTIVITY_KIND_KERNEL": k, "CUPTI_ACTIVITY_KIND_MEMCPY": m, "NVTX_EVENTS": r,
    }


def _export(path: Path, *, drop_tables: tuple[str, ...] = (), drop_columns: dict[str, tuple[str, ...]] | None = None,
            rows: dict[str, list[dict]] | None = None) -> Path:
    """Write the variant capture as an SQLite export, without the tables and columns named."""
    rows = _rows() if rows is None else rows
    drop_columns = drop_columns or {}
    with sqlite3.connect(path) as conn:
        for table, cols in SCHEMA.items():
            if table in drop_tables:
                continue
            cols = [c for c in cols if c.split()[0] not in drop_columns.get(table, ())]
            conn.execute(f"CREATE TABLE {table} ({', '.join(cols)})")
            names = [c.split()[0] for c in cols]
            conn.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                             [tuple(row.get(n) for n in names) for row in rows.get(table, [])])
    conn.close()
    return path


def _load(path: Path, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, **kwargs)


def _union_ns(intervals: list[tuple[int, int]]) -> int:
    """The time the intervals cover (an independent sweep, for the raw-table checks)."""
    total, cur_s, cur_e = 0, None, None
    for s, e in sorted(intervals):
        if cur_e is None or s > cur_e:
            total += 0 if cur_e is None else cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    return total + (0 if cur_e is None else cur_e - cur_s)


# --------------------------------------------------------------------------------------------
# the variant with steps: figures worked out by hand
# Device 0, steps 1-3 (ms): compute = |[0,4) U [3,6)| = 6; comm = |[5,8)| = 3; overlap = |[5,6)| = 1;
#   exposed comm = 3 - 1 = 2; busy = |[0,8) U [8.5,9)| = 8.5; idle = 10 - 8.5 = 1.5.
# Device 0, step 4: the GEMM [49,52) puts [9,10) inside the step: compute = 6 + 1 = 7; comm 3, overlap 1,
#   exposed 2; busy = |[0,8) U [8.5,10)| = 9.5; idle 0.5. Outside every step: [2,3) and [50,52): 3 ms.
# Device 1, every step: compute = |[1,3)| = 2; comm = |[0,6)| = 6; overlap = |[1,3)| = 2; exposed 4;
#   busy = 6; idle 4.
HAND = {  # (device, step): compute, comm, overlap, exposed comm, busy, idle (ms)
    **{(0, s): (6, 3, 1, 2, 8.5, 1.5) for s in (1, 2, 3)}, (0, 4): (7, 3, 1, 2, 9.5, 0.5),
    **{(1, s): (2, 6, 2, 4, 6, 4) for s in (1, 2, 3, 4)},
}
STEP_COLS = ["compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_busy_s", "gpu_idle_s"]
# The whole capture per device (ms), from the intervals above:
# device 0: 14 kernels (4 NCCL), 4 copies, first 2, last 52; kernels' union = 3 x 8 + (8 + 3) + 1 = 36;
#   compute union = 3 x 6 + (6 + 3) + 1 = 28; comm 12; overlap 4; exposed 8; with copies = 3 x 8.5 + 11.5 + 1
#   = 38, idle = 50 - 38 = 12; durations summed = 4 x 10 + 1 + 3 = 44.
# device 1: 8 kernels (4 NCCL), first 11, last 47; union 24; compute 8; comm 24; overlap 8; exposed 16;
#   busy 24, idle 36 - 24 = 12; summed 4 x 8 = 32.
HAND_KERNELS = {0: dict(count=14, comm_count=4, busy_s=36, compute_s=28, comm_s=12, overlap_s=4, exposed_comm_s=8,
                        memory_count=4, gpu_busy_s=38, gpu_idle_s=12, first_s=2, last_s=52, sum_s=44),
                1: dict(count=8, comm_count=4, busy_s=24, compute_s=8, comm_s=24, overlap_s=8, exposed_comm_s=16,
                        memory_count=0, gpu_busy_s=24, gpu_idle_s=12, first_s=11, last_s=47, sum_s=32)}


def test_variant_steps_match_the_hand_computation(tmp_path):
    run = _load(_export(tmp_path / "steps.sqlite"))
    assert run.meta.source_format == "nsys"
    st = run.steps.set_index(["rank", "step"]).sort_index()
    assert sorted(st.index) == sorted(HAND)
    for key, figures in HAND.items():
        got = st.loc[key, STEP_COLS].to_numpy(dtype=float) * 1e3
        assert np.allclose(got, figures, atol=1e-6), (key, got, figures)
        d, s = key
        assert math.isclose(st.loc[key, "start_s"], (10 * s + d) / 1e3)  # seconds after the capture's start
        assert math.isclose(st.loc[key, "end_s"] - st.loc[key, "start_s"], 0.010)
    notes = " ".join(run.meta.report.notes)
    assert "device 0: 0.003000 s of device activity lies outside every step range" in notes
    assert run.meta.extra["steps_from"] == "NVTX ranges named 'ProfilerStep#(\\\\d+)' (NVTX_EVENTS)"
    assert run.meta.report.total_skipped == 0


def test_variant_device_table_and_kernel_names(tmp_path):
    run = _load(_export(tmp_path / "steps.sqlite"))
    k = run.tables["kernels"].set_index("device")
    for d, figures in HAND_KERNELS.items():
        for col, v in figures.items():
            scale = 1 if col.endswith("count") else 1e3
            assert math.isclose(k.loc[d, col] * scale, v, abs_tol=1e-6), (d, col, k.loc[d, col], v)
    names = run.tables["kernel_names"].set_index("name")
    assert names.loc[STRINGS[NCCL_NEW], "category"] == names.loc[STRINGS[NCCL_OLD], "category"] == "comm"
    assert names.loc[STRINGS[GEMM], "category"] == "compute" and names.loc[STRINGS[GEMM], "count"] == 6
    # per-step kernel table in the Kineto layout: device 0, step 4, compute: 2 kernels start in it
    # (GEMM [40,44), elementwise [43,46)), the crossing GEMM [49,52) starts in it too: 3; clipped sum 4 + 3 + 1
    sk = run.tables["step_kernels"].set_index(["rank", "step", "category"])
    assert sk.loc[(0, 4, "compute"), "count"] == 3
    assert math.isclose(sk.loc[(0, 4, "compute"), "sum_s"], 0.008) and math.isclose(sk.loc[(0, 4, "comm"), "union_s"],
                                                                                     0.003)


def test_variant_facts_time_origin_and_wallclock(tmp_path):
    run = _load(_export(tmp_path / "steps.sqlite"))
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["n_ranks"]["value"] == facts["n_accelerators"]["value"] == 2
    assert "accelerator" not in facts and run.meta.accelerator is None
    assert any(n.startswith("GPU unknown") and "TARGET_INFO_GPU (absent)" in n for n in run.meta.report.notes)
    assert run.meta.extra["t0_wallclock"] == "2023-11-14T22:13:20+00:00"
    assert run.meta.extra["origin_from"] == "ANALYSIS_DETAILS.startTime"


def test_a_gpu_table_names_the_accelerator_and_n_ranks_counts_devices_with_kernels(tmp_path):
    path = _export(tmp_path / "gpu.sqlite")
    with sqlite3.connect(path) as conn:  # four GPUs listed, two carry kernels
        conn.execute("CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, busLocation TEXT)")
        conn.executemany("INSERT INTO TARGET_INFO_GPU VALUES (?, ?, ?)",
                         [(i, "NVIDIA H100 80GB HBM3", f"0000:{i:02x}:00.0") for i in range(4)])
    conn.close()
    run = _load(path)
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["accelerator"]["value"] == "NVIDIA H100 80GB HBM3"
    assert facts["accelerator"]["where"].endswith(":TARGET_INFO_GPU")
    assert facts["n_ranks"]["value"] == 2
    assert run.meta.accelerator is not None and "H100" in run.meta.accelerator


def test_a_user_pattern_names_the_step_ranges(tmp_path):
    rows = _rows()
    for r in rows["NVTX_EVENTS"]:
        if r["textId"] in (10, 11):
            r["text"], r["textId"] = STRINGS[r["textId"]], None
        if isinstance(r["text"], str) and r["text"].startswith("ProfilerStep#") and r["text"][13:].isdigit():
            r["text"] = f"train iteration {r['text'][13:]}"
    path = _export(tmp_path / "named.sqlite", rows=rows)
    assert len(_load(path).steps) == 0
    run = _load(path, step_pattern=r"train iteration (\d+)")
    assert sorted(run.steps["step"].unique()) == [1, 2, 3, 4] and len(run.steps) == 8
    assert run.meta.extra["steps_from"].startswith("NVTX ranges named 'train iteration")
    by_order = _load(path, step_pattern=r"train iteration \d+")  # no group: numbered in time order
    assert sorted(by_order.steps["step"].unique()) == [0, 1, 2, 3]


# --------------------------------------------------------------------------------------------
# the same run in two formats: the Kineto loader gives the same step table


def _kineto_traces(folder: Path) -> Path:
    """The variant's kernels, copies and steps as one Kineto trace per rank (µs)."""
    rows = _rows()
    folder.mkdir()
    for d in (0, 1):
        ev = []
        for r in rows["NVTX_EVENTS"]:
            text = r["text"] or STRINGS.get(r["textId"], "")
            if r["globalTid"] == _gpid(d) | 7 and text.startswith("ProfilerStep#") and r["end"] is not None:
                ev.append({"ph": "X", "cat": "user_annotation", "name": text, "pid": 1, "tid": 1,
                           "ts": (r["start"] - ORIGIN) / 1e3, "dur": (r["end"] - r["start"]) / 1e3})
        for r in rows["CUPTI_ACTIVITY_KIND_KERNEL"]:
            if r["deviceId"] == d:
                ev.append({"ph": "X", "cat": "kernel", "name": STRINGS[r["shortName"]], "pid": 0, "tid": r["streamId"],
                           "ts": (r["start"] - ORIGIN) / 1e3, "dur": (r["end"] - r["start"]) / 1e3})
        for r in rows["CUPTI_ACTIVITY_KIND_MEMCPY"]:
            if r["deviceId"] == d:
                ev.append({"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoD", "pid": 0, "tid": 7,
                           "ts": (r["start"] - ORIGIN) / 1e3, "dur": (r["end"] - r["start"]) / 1e3})
        doc = {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"rank": d, "world_size": 2},
               "traceEvents": ev}
        (folder / f"rank{d}.json").write_text(json.dumps(doc))
    return folder


def test_nsys_and_kineto_give_the_same_step_table_within_one_percent(tmp_path):
    ns = _load(_export(tmp_path / "steps.sqlite")).steps.set_index(["rank", "step"]).sort_index()
    kt = _load(_kineto_traces(tmp_path / "kineto"), format="kineto", cache=False).steps
    kt = kt.set_index(["rank", "step"]).sort_index()
    assert list(kt.index) == list(ns.index)
    for col in [*STEP_COLS, "data_wait_s"]:  # every column of the step table (no data wait in either: NaN)
        assert np.allclose(ns[col], kt[col], rtol=0.01, atol=1e-9, equal_nan=True), col
    assert np.allclose(ns["end_s"] - ns["start_s"], kt["end_s"] - kt["start_s"], rtol=0.01)


# --------------------------------------------------------------------------------------------
# the parquetdir export: the same tables as <TABLE>.parquet files in a folder


def _parquetdir(sqlite_path: Path, folder: Path) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir()
    conn = sqlite3.connect(sqlite_path)
    for (table,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall():
        cur = conn.execute(f"SELECT * FROM {table}")
        cols = [c[0] for c in cur.description]
        data = cur.fetchall()
        pq.write_table(pa.table({c: pa.array([r[i] for r in data]) for i, c in enumerate(cols)}),
                       folder / f"{table}.parquet")
    conn.close()
    return folder


def test_a_parquetdir_reads_as_the_sqlite_export(tmp_path):
    path = _export(tmp_path / "steps.sqlite")
    folder = _parquetdir(path, tmp_path / "steps.parquetdir")
    assert detect.detect_format(folder) == "nsys"
    a, b = _load(path), _load(folder)
    assert b.meta.extra["export"] == "parquetdir" and a.meta.extra["export"] == "sqlite"
    pd.testing.assert_frame_equal(a.steps, b.steps)
    for name in ("kernels", "kernel_names", "step_kernels"):
        pd.testing.assert_frame_equal(a.tables[name], b.tables[name])
    assert b.meta.extra["t0_wallclock"] == a.meta.extra["t0_wallclock"]


def test_data_loader_ranges_of_a_devices_process_are_its_data_wait(tmp_path):
    # PyTorch's DataLoader under emit_nvtx: "enumerate(DataLoader)#..." ranges, the name going on with the op id.
    # Device 0's process (steps k at [10k, 10k + 10) ms) waits [10k, 10k + 1.5) ms in each step, and in step 1
    # also [12, 13) (one by a registered string); device 1's process has none: its data wait is unknown.
    rows = _rows()
    name = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
    rows["StringIds"].append({"id": 20, "value": f"{name}, op_id = 7"})
    for step in range(1, 5):
        rows["NVTX_EVENTS"].append({"start": ORIGIN + 10 * step * MS, "end": ORIGIN + (10 * step * MS + 3 * MS // 2),
                                    "eventType": 59, "text": f"{name}, op_id = {step}", "globalTid": _gpid(0) | 7,
                                    "textId": None})
    rows["NVTX_EVENTS"].append({"start": ORIGIN + 12 * MS, "end": ORIGIN + 13 * MS, "eventType": 59, "text": None,
                                "globalTid": _gpid(0) | 7, "textId": 20})
    path = _export(tmp_path / "waits.sqlite", rows=rows)
    for run in (_load(path), _load(_parquetdir(path, tmp_path / "waits.parquetdir"))):
        st = run.steps.set_index(["rank", "step"]).sort_index()
        assert st.loc[0, "data_wait_s"].tolist() == pytest.approx([2.5e-3, 1.5e-3, 1.5e-3, 1.5e-3])
        assert st.loc[1, "data_wait_s"].isna().all()
        assert run.meta.extra["data_wait_from"].startswith("NVTX ranges named enumerate(DataLoader)#")
        assert np.allclose(st[STEP_COLS].to_numpy(dtype=float) * 1e3, [HAND[k] for k in st.index], atol=1e-6)
    plain = _load(_export(tmp_path / "steps.sqlite"))
    assert plain.steps["data_wait_s"].isna().all() and plain.meta.extra["data_wait_from"] is None


# --------------------------------------------------------------------------------------------
# missing tables and columns: notes, never a crash


def test_without_strings_nvtx_memory_and_session_tables_it_loads_with_notes(tmp_path):
    drop = ("StringIds", "NVTX_EVENTS", "ANALYSIS_DETAILS", "TARGET_INFO_SESSION_START_TIME",
            "CUPTI_ACTIVITY_KIND_MEMCPY", "ENUM_NSYS_EVENT_TYPE")
    run = _load(_export(tmp_path / "bare.sqlite", drop_tables=drop))
    notes = " ".join(run.meta.report.notes)
    for text in ("no StringIds table", "no NVTX_EVENTS table", "times are seconds since the first kernel's start",
                 "wall-clock start is unknown", "device busy time counts kernels only", "steps cannot be cut"):
        assert text in notes, text
    assert len(run.steps) == 0 and "t0_wallclock" not in run.meta.extra
    k = run.tables["kernels"].set_index("device")
    assert k["count"].tolist() == [14, 8] and k["comm_count"].tolist() == [0, 0]  # names unknown: all compute
    assert math.isclose(k.loc[0, "first_s"], 0.0) and math.isclose(k.loc[1, "first_s"], 0.009)


def test_without_process_ids_or_short_names_the_loader_says_what_it_could_not_tie(tmp_path):
    run = _load(_export(tmp_path / "cols.sqlite", drop_columns={"CUPTI_ACTIVITY_KIND_KERNEL": ("globalPid",
                                                                                              "shortName")}))
    notes = " ".join(run.meta.report.notes)
    assert "has no globalPid column" in notes and "no step rows" in notes and len(run.steps) == 0
    assert run.tables["kernels"]["comm_count"].tolist() == [4, 4]  # named through demangledName


def test_kernels_without_a_device_leave_device_time_unknown_on_the_steps(tmp_path):
    run = _load(_export(tmp_path / "nodev.sqlite", drop_columns={"CUPTI_ACTIVITY_KIND_KERNEL": ("deviceId",)}))
    assert "kernels cannot be placed" in " ".join(run.meta.report.notes)
    assert len(run.steps) == 8 and run.steps["compute_s"].isna().all() and "kernels" not in run.tables


def test_what_cannot_load_is_a_load_error(tmp_path):
    nothing = _export(tmp_path / "nothing.sqlite", drop_tables=("CUPTI_ACTIVITY_KIND_KERNEL", "NVTX_EVENTS"))
    with pytest.raises(LoadError, match="neither kernels"):
        _load(nothing, format="nsys")
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"SQLite format 3\x00" + b"\xff" * 5000)
    with pytest.raises(LoadError, match="not a readable SQLite export") as err:
        _load(broken, format="nsys")
    assert "internal error" not in str(err.value)
    report = tmp_path / "capture.nsys-rep"
    report.write_bytes(b"\x00\x01binary report")
    with pytest.raises(LoadError, match="nsys export --type sqlite -o capture.sqlite capture.nsys-rep"):
        _load(report, format="nsys")
    with pytest.raises(ValueError, match="step_pattern"):
        nsys.Options(step_pattern="ProfilerStep#(")


# --------------------------------------------------------------------------------------------
# the two real exports


def _raw(path: Path) -> dict[int, dict]:
    """Per device, read here with sqlite3: kernel count, NCCL kernels, busy time (s), NCCL time (s)."""
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    rows = conn.execute("SELECT k.deviceId, k.start, k.end, s.value FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                        "JOIN StringIds s ON s.id = k.shortName").fetchall()
    conn.close()
    out: dict[int, dict] = {}
    for d in sorted({r[0] for r in rows}):
        mine = [r for r in rows if r[0] == d]
        nccl = [r for r in mine if r[3].startswith(("ncclDevKernel_", "ncclKernel_"))]
        out[d] = {"count": len(mine), "comm_count": len(nccl),
                  "busy_s": _union_ns([(r[1], r[2]) for r in mine]) / 1e9,
                  "comm_s": _union_ns([(r[1], r[2]) for r in nccl]) / 1e9}
    return out


@pytest.mark.parametrize("which, counts, busy, nccl", [
    ("before", [1993, 2017], [0.271, 0.264], 66),
    ("after", [1793, 1794], [0.237, 0.251], 62),
])
def test_real_exports_kernels_per_device(realdata, which, counts, busy, nccl):  # noqa: F811
    path = realdata / "nsys" / f"GindaChen_nsys-ai_mfu_2gpu_{which}.sqlite"
    raw = _raw(path)
    assert [raw[d]["count"] for d in sorted(raw)] == counts  # as the data set's README states
    assert [round(raw[d]["busy_s"], 3) for d in sorted(raw)] == busy
    assert sum(raw[d]["comm_count"] for d in raw) == nccl
    run = _load(path)
    assert run.meta.source_format == "nsys"
    k = run.tables["kernels"].set_index("device")
    for d, r in raw.items():
        assert k.loc[d, "count"] == r["count"] and k.loc[d, "comm_count"] == r["comm_count"]
        assert math.isclose(k.loc[d, "busy_s"], r["busy_s"], abs_tol=1e-9)
        assert math.isclose(k.loc[d, "comm_s"], r["comm_s"], abs_tol=1e-9)
    assert {f["name"]: f["value"] for f in run.meta.facts} == {"n_ranks": 2, "n_accelerators": 2}


def test_real_exports_state_the_gpu_unknown_and_cut_no_steps(realdata):  # noqa: F811
    path = realdata / "nsys" / "GindaChen_nsys-ai_mfu_2gpu_before.sqlite"
    run = _load(path)
    assert run.meta.accelerator is None and len(run.steps) == 0 and run.meta.extra["steps_from"] is None
    notes = " ".join(run.meta.report.notes)
    assert "GPU unknown" in notes and "TARGET_INFO_GPU (absent)" in notes
    assert "steps cannot be cut" in notes and "cut to a time window (60111418026-60411418026 ns" in notes
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    utc, = conn.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchone()
    start, = conn.execute("SELECT startTime FROM ANALYSIS_DETAILS").fetchone()
    first, = conn.execute("SELECT min(start) FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()
    conn.close()
    assert run.meta.extra["t0_wallclock"] == pd.Timestamp(utc, unit="ns", tz="UTC").isoformat()[:26] + "+00:00"
    assert math.isclose(run.tables["kernels"]["first_s"].min(), (first - start) / 1e9)


def test_real_export_is_opened_read_only(realdata, tmp_path):  # noqa: F811
    src = realdata / "nsys" / "GindaChen_nsys-ai_mfu_2gpu_after.sqlite"
    before = sorted(p.name for p in src.parent.iterdir())
    _load(src)
    assert sorted(p.name for p in src.parent.iterdir()) == before
    copy = tmp_path / "writable" / src.name  # a folder SQLite could write a journal into
    copy.parent.mkdir()
    copy.write_bytes(src.read_bytes())
    _load(copy)
    assert [p.name for p in copy.parent.iterdir()] == [src.name]


def test_mfu_analyze_answers_on_both_real_exports(realdata, capsys):  # noqa: F811
    for which in ("before", "after"):
        code = main(["analyze", str(realdata / "nsys" / f"GindaChen_nsys-ai_mfu_2gpu_{which}.sqlite")])
        out, err = capsys.readouterr()
        assert code == 0 and "Traceback" not in out + err
        assert "MFU: not measurable" in out and "kernels (2 rows" in out


# --------------------------------------------------------------------------------------------
# cost: a bounded multiple of a bare sqlite3 read of the kernel table, and linear


def _big(path: Path, n: int) -> Path:
    """An export of ``n`` kernels on two devices (1 in 20 an NCCL kernel) and one copy per 10 kernels."""
    rng = np.random.default_rng(n)
    start = ORIGIN + np.cumsum(rng.integers(1_000, 20_000, n))
    dur = rng.integers(500, 30_000, n)
    name = np.where(np.arange(n) % 20 == 0, NCCL_NEW, rng.choice([GEMM, ELEMENTWISE], n))
    k = [{"start": int(s), "end": int(s + d), "deviceId": i % 2, "contextId": 1, "streamId": 7 + i % 3,
          "globalPid": _gpid(i % 2), "demangledName": int(m), "shortName": int(m)}
         for i, (s, d, m) in enumerate(zip(start, dur, name, strict=True))]
    rows = {**_rows(), "CUPTI_ACTIVITY_KIND_KERNEL": k,
            "CUPTI_ACTIVITY_KIND_MEMCPY": [{**r, "bytes": 64} for r in k[::10]]}
    return _export(path, rows=rows)


def _bare_read(path: Path) -> list:
    conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
    rows = conn.execute("SELECT start, end, deviceId, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchall()
    conn.close()
    return rows


@pytest.mark.slow
def test_loading_costs_a_bounded_multiple_of_a_bare_sqlite_read(tmp_path):
    path = _big(tmp_path / "big.sqlite", 200_000)
    ratio = slowdown(lambda: _load(path, format="nsys"), lambda: _bare_read(path), repeat=3)
    # measured about 2-3x on the development machine: the load reads the kernel, copy and NVTX tables,
    # resolves names and does the interval arithmetic; a per-row Python loop would be far above this
    assert ratio < 8, f"loading took {ratio:.1f}x a bare sqlite3 read of the kernel table"


@pytest.mark.slow
def test_loading_is_linear_in_the_kernels(tmp_path):
    def make(n: int):
        path = _big(tmp_path / f"k{n}.sqlite", n)
        return lambda: _load(path, format="nsys")

    ratio = growth(make, 40_000, factor=4, repeat=3)
    assert ratio < linear_bound(4), explain(ratio, 4, "the kernels")
