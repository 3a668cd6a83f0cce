"""The JAX / XLA profile loader (``mfu_toolkit.io.formats.xplane``): XSpace protobufs and XLA's trace JSON.

The real files' numbers are checked against the raw bytes decoded here by a wire decoder of this test's
own (``_decode``), never the project's; the hand-built profiles are encoded here (``_enc_*``) with field
numbers from tsl/profiler/protobuf/xplane.proto, and their per-step figures are worked out by hand in
the comments.
"""

from __future__ import annotations

import gzip
import json
import struct
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401  (fixture: MFU_REALDATA, skip when unset, fail when missing)
from _timing import slowdown

from mfu_toolkit import device_ids, hardware
from mfu_toolkit.io import load_run, rules
from mfu_toolkit.io import protobuf as pb
from mfu_toolkit.io.detect import detect_format
from mfu_toolkit.io.formats import xplane
from mfu_toolkit.run import LoadError

GEMM = "AMD-AGI_TraceLens_mi300_jax08_gemm_tw003.xplane.pb"
CONV = "AMD-AGI_TraceLens_mi300_jax08_conv_tw003.xplane.pb"


# --- a wire decoder of the test's own --------------------------------------------------------------------
def _uvarint(b: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        c = b[i]
        value |= (c & 0x7F) << shift
        i += 1
        if not c & 0x80:
            return value, i
        shift += 7


def _decode(b: bytes) -> list[tuple[int, object]]:
    """(field number, value) per field: an int for varints, bytes for everything else."""
    out, i = [], 0
    while i < len(b):
        key, i = _uvarint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _uvarint(b, i)
        elif wt == 2:
            n, i = _uvarint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError(f"wire type {wt}")
        out.append((num, v))
    return out


def _planes(data: bytes) -> list[dict]:
    """Per plane (XSpace field 1): its name (XPlane 2) and its lines (XPlane 3) as (timestamp_ns 3, events 4),
    each event (XEvent) as (offset_ps 2, duration_ps 3)."""
    planes = []
    for num, pv in _decode(data):
        if num != 1:
            continue
        plane = {"name": "", "lines": []}
        for pn, v in _decode(pv):
            if pn == 2:
                plane["name"] = v.decode()
            elif pn == 3:
                ts, events = 0, []
                for ln, lv in _decode(v):
                    if ln == 3:
                        ts = lv
                    elif ln == 4:
                        f = dict(_decode(lv))
                        events.append((f.get(2, 0), f.get(3, 0)))
                plane["lines"].append((ts, events))
        planes.append(plane)
    return planes


def _busy_ps(intervals: list[tuple[int, int]]) -> int:
    total, end = 0, None
    for s, e in sorted(intervals):
        if end is None or s > end:
            total += e - s
            end = e
        elif e > end:
            total += e - end
            end = e
    return total


# --- the real profiles, against the test's own decoding ------------------------------------------------------
def test_gemm_profile_against_its_raw_bytes(realdata):  # noqa: F811
    path = realdata / "xplane" / GEMM
    planes = _planes(path.read_bytes())
    devices = [p for p in planes if p["name"].startswith("/device:")]
    with_events = [p for p in devices if any(ev for _, ev in p["lines"])]
    assert (len(planes), len(devices), [p["name"] for p in with_events]) == (11, 8, ["/device:GPU:0"])
    gpu0 = with_events[0]
    spans = [(ts * 1000 + off, ts * 1000 + off + dur) for ts, ev in gpu0["lines"] for off, dur in ev]
    assert len(spans) == 54 and _busy_ps(spans) == 3_475_484_000  # 54 events, 3.475484 ms busy

    run = load_run(path)
    assert detect_format(path) == "xplane"
    dev = run.tables["device_events"]
    assert list(dev["device"]) == ["/device:GPU:0"] and int(dev["events"][0]) == len(spans)
    assert round(dev["gpu_busy_s"][0] * 1e12) == _busy_ps(spans)
    assert round(dev["sum_s"][0] * 1e12) == sum(e - s for s, e in spans)
    assert (dev["compute_count"][0], dev["comm_count"][0], dev["memory_count"][0]) == (30, 0, 24)
    assert run.tables["ops"]["count"].sum() == 54 and len(run.steps) == 0  # a microbenchmark: no step markers
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts == {"n_accelerators": 1, "n_ranks": 1, "n_nodes": 1, "accelerator": "MI300X"}
    assert run.meta.extra["hosts"] == ["tw003"] and run.meta.extra["steps_from"] is None
    assert run.meta.extra["t0_wallclock"].startswith("2026-02-20T13:54:10")
    assert any("no step markers" in n for n in run.meta.report.notes)


def test_conv_profile_counts_the_devices_that_carry_events(realdata):  # noqa: F811
    path = realdata / "xplane" / CONV
    planes = [p for p in _planes(path.read_bytes()) if p["name"].startswith("/device:")]
    counts = {p["name"]: sum(len(ev) for _, ev in p["lines"]) for p in planes}
    run = load_run(path)
    dev = run.tables["device_events"]
    assert dict(zip(dev["device"], dev["events"], strict=True)) == {k: v for k, v in counts.items() if v}
    assert counts["/device:GPU:0"] == 60 and sum(counts.values()) == 60 + 7 * 25
    assert run.meta.n_accelerators == 8 and list(dev["rank"]) == list(range(8))


# --- hand-built profiles -------------------------------------------------------------------------------------
def _v(n: int) -> bytes:
    n &= (1 << 64) - 1  # int64: negative as its two's complement
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        out.append(c | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _f(num: int, value: int | bytes | str) -> bytes:
    if isinstance(value, int):
        return _v(num << 3) + _v(value)
    data = value.encode() if isinstance(value, str) else value
    return _v(num << 3 | 2) + _v(len(data)) + data


def _enc_stat(mid: int, *, i64: int | None = None, s: str | None = None, ref: int | None = None,
              u64: int | None = None) -> bytes:
    out = _f(1, mid)  # XStat: metadata_id 1, uint64 3, int64 4, str 5, ref 7
    if u64 is not None:
        out += _f(3, u64)
    if i64 is not None:
        out += _f(4, i64)
    if s is not None:
        out += _f(5, s)
    if ref is not None:
        out += _f(7, ref)
    return out


def _enc_event(mid: int, off_us: float, dur_us: float, stats: tuple[bytes, ...] = ()) -> bytes:
    # XEvent: metadata_id 1, offset_ps 2, duration_ps 3, stats 4
    return _f(1, mid) + _f(2, round(off_us * 1e6)) + _f(3, round(dur_us * 1e6)) + b"".join(_f(4, s) for s in stats)


def _enc_line(lid: int, name: str, ts_ns: int, events: list[bytes]) -> bytes:
    # XLine: id 1, name 2, timestamp_ns 3, events 4
    return _f(1, lid) + _f(2, name) + _f(3, ts_ns) + b"".join(_f(4, e) for e in events)


def _enc_plane(pid: int, name: str, lines: list[bytes], events: dict[int, str], stats_meta: dict[int, str],
               stats: tuple[bytes, ...] = ()) -> bytes:
    # XPlane: id 1, name 2, lines 3, event_metadata 4 and stat_metadata 5 (map entries {key 1, value 2}), stats 6
    out = _f(1, pid) + _f(2, name) + b"".join(_f(3, ln) for ln in lines)
    out += b"".join(_f(4, _f(1, k) + _f(2, _f(1, k) + _f(2, v))) for k, v in events.items())
    out += b"".join(_f(5, _f(1, k) + _f(2, _f(1, k) + _f(2, v))) for k, v in stats_meta.items())
    return out + b"".join(_f(6, s) for s in stats)


def _enc_space(planes: list[bytes], hosts: list[str]) -> bytes:
    return b"".join(_f(1, p) for p in planes) + b"".join(_f(4, h) for h in hosts)  # XSpace: planes 1, hostnames 4


START_NS = 1_700_000_000_000_000_000  # 2023-11-14T22:13:20Z
LINE_NS = 1_000  # every line starts 1 µs after the session start
STATS = {1: "hlo_op", 2: "step_num", 3: "profile_start_time", 4: "all-reduce-start.1", 5: "fusion.1",
         6: "device_vendor", 7: "memcpy_details"}

# Two GPUs, two steps of 10 µs each ([0, 10) and [10, 20) µs after the first step starts), times in µs:
#   GPU:0  compute (hlo_op fusion.1)            [1, 5)  [11, 15)
#          all-reduce (hlo_op all-reduce-start.1, a kernel name that says nothing) [4, 7)  [14, 19)
#   GPU:1  compute on two streams               [2, 6) [5, 8)   [12, 13)
#          NCCL kernel (no hlo_op)              [9, 12)  (crosses the step boundary)
#          memory copy (MemcpyD2D)              [15, 16)
GPU0 = {"compute": [(1, 4), (11, 4)], "comm": [(4, 3), (14, 5)]}
GPU1 = {"compute": [(2, 4), (5, 3), (12, 1)], "nccl": [(9, 3)], "memcpy": [(15, 1)]}
# Per step, by hand (µs):
#   GPU:0 step 0: compute [1,5)=4, comm [4,7)=3, overlap [4,5)=1, exposed 3-1=2, busy [1,7)=6, idle 10-6=4
#   GPU:0 step 1: compute [11,15)=4, comm [14,19)=5, overlap [14,15)=1, exposed 4, busy [11,19)=8, idle 2
#   GPU:1 step 0: compute [2,8)=6 (two streams, counted once), comm [9,10)=1, overlap 0, exposed 1,
#                 busy [2,8)+[9,10)=7, idle 3
#   GPU:1 step 1: compute [12,13)=1, comm [10,12)=2, overlap 0, exposed 2, busy 1+2+1 (the copy)=4, idle 6
EXPECTED = {  # (rank, step): compute, comm, overlap, exposed comm, busy, idle (µs)
    (0, 0): (4, 3, 1, 2, 6, 4), (0, 1): (4, 5, 1, 4, 8, 2),
    (1, 0): (6, 1, 0, 1, 7, 3), (1, 1): (1, 2, 0, 2, 4, 6),
}
COLS = ["compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_busy_s", "gpu_idle_s"]


def _gpu_planes(steps_line: bool) -> list[bytes]:
    names = {1: "fusion.kd", 2: "all_reduce_kernel.kd", 3: "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
             4: "MemcpyD2D", 9: "0", 10: "1"}
    fusion, ar = (_enc_stat(1, ref=5),), (_enc_stat(1, ref=4),)
    steps = [_enc_line(99, "Steps", LINE_NS, [_enc_event(9, 0, 10), _enc_event(10, 10, 10)])] if steps_line else []
    g0 = [_enc_line(1, "Stream #1(Kernel)", LINE_NS, [_enc_event(1, s, d, fusion) for s, d in GPU0["compute"]]),
          _enc_line(2, "Stream #2(Kernel)", LINE_NS, [_enc_event(2, s, d, ar) for s, d in GPU0["comm"]])]
    g1 = [_enc_line(1, "Stream #1(Kernel)", LINE_NS, [_enc_event(1, 2, 4, fusion)]),
          _enc_line(3, "Stream #3(Kernel)", LINE_NS, [_enc_event(1, s, d, fusion) for s, d in GPU1["compute"][1:]]),
          _enc_line(2, "Stream #2(Kernel)", LINE_NS, [_enc_event(3, s, d) for s, d in GPU1["nccl"]]),
          _enc_line(4, "Stream #4(MemcpyD2D)", LINE_NS, [_enc_event(4, s, d) for s, d in GPU1["memcpy"]])]
    amd = (_enc_stat(6, s="AMD"),)
    return [_enc_plane(i, f"/device:GPU:{i}", lines + (steps if lines else []), names, STATS, amd)
            for i, lines in enumerate([g0, g1, [], []])]


def _space(*, steps_line: bool = False, host_steps: bool = True, host: str = "hostA", start: int = START_NS) -> bytes:
    step_events = [_enc_event(1, 0, 10, (_enc_stat(2, i64=0),)), _enc_event(1, 10, 10, (_enc_stat(2, i64=1),))]
    other = [_enc_event(2, 0.5, 1), _enc_event(2, 12, 1)]  # host events without step_num are no steps
    cpu = _enc_plane(0, "/host:CPU", [_enc_line(7, "python", LINE_NS, (step_events if host_steps else []) + other)],
                     {1: "train", 2: "other"}, STATS)
    env = _enc_plane(0, "Task Environment", [], {}, STATS, (_enc_stat(3, u64=start),))
    return _enc_space([_enc_plane(0, "/host:metadata", [], {}, {}), *_gpu_planes(steps_line), cpu, env], [host])


def _check_steps(run, ranks=(0, 1)) -> None:
    st = run.steps.set_index(["rank", "step"]).sort_index()
    assert list(st.index) == [(r, s) for r in ranks for s in (0, 1)]
    for (rank, step), want in EXPECTED.items():
        row = st.loc[(ranks[rank], step)]
        assert [row[c] for c in COLS] == pytest.approx([w * 1e-6 for w in want], abs=1e-15), (rank, step)
        assert (row["start_s"], row["end_s"]) == pytest.approx((step * 10e-6, (step + 1) * 10e-6), abs=1e-15)


def test_hand_built_profile_per_step_compute_comm_overlap_idle(tmp_path):
    path = tmp_path / "hostA.xplane.pb"
    path.write_bytes(_space())
    assert detect_format(path) == "xplane"
    run = load_run(path)
    _check_steps(run)
    assert run.meta.extra["steps_from"] == "host events with a step_num stat (jax.profiler.StepTraceAnnotation)"
    assert run.steps["data_wait_s"].isna().all() and run.meta.extra["data_wait_from"] is None  # no input wait shown
    assert run.meta.extra["t0_wallclock"] == "2023-11-14T22:13:20.000001+00:00"  # start + the first step's 1 µs
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert (facts["n_accelerators"], facts["n_nodes"]) == (2, 1) and "accelerator" not in facts
    assert any("accelerator unknown" in n and "device_vendor AMD" in n for n in run.meta.report.notes)
    dev = run.tables["device_events"].set_index("device")
    # GPU:0: kernels [1,7) and [11,19): busy 14 µs, from 1 µs after t0 to 19 µs
    assert dev.loc["/device:GPU:0", ["events", "comm_count", "busy_s", "first_s", "last_s"]].tolist() == \
        pytest.approx([4, 2, 14e-6, 1e-6, 19e-6], abs=1e-15)
    assert dev.loc["/device:GPU:1", ["compute_count", "comm_count", "memory_count"]].tolist() == [3, 1, 1]
    ops = run.tables["ops"].set_index("name")
    assert ops.loc["all_reduce_kernel.kd", ["hlo_op", "category", "count"]].tolist() == [
        "all-reduce-start.1", "comm", 2]
    assert ops.loc["ncclDevKernel_AllReduce_Sum_f32_RING_LL", "category"] == "comm"
    assert ops.loc["MemcpyD2D", "category"] == "memory" and ops.loc["fusion.kd", "count"] == 5
    k = run.tables["step_kernels"]
    assert k[(k["rank"] == 1) & (k["step"] == 1) & (k["category"] == "comm")]["sum_s"].iloc[0] == \
        pytest.approx(2e-6, abs=1e-15)


def test_a_steps_line_on_the_device_planes_gives_the_same_table(tmp_path):
    path = tmp_path / "hostA.xplane.pb"
    path.write_bytes(_space(steps_line=True, host_steps=False))
    run = load_run(path)
    _check_steps(run)
    assert run.meta.extra["steps_from"] == "a Steps line on the device plane"


def test_without_step_markers_no_steps_are_invented(tmp_path):
    path = tmp_path / "hostA.xplane.pb"
    path.write_bytes(_space(host_steps=False))
    run = load_run(path)
    assert len(run.steps) == 0 and "step_kernels" not in run.tables
    assert len(run.tables["device_events"]) == 2
    run = load_run(path, step_pattern="other")  # a name picked by the user: numbered in time order
    st = run.steps.sort_values(["rank", "step"])
    assert st["step"].tolist() == [0, 1, 0, 1] and run.meta.extra["steps_from"].endswith("(step_pattern)")
    assert st["start_s"].tolist() == pytest.approx([0, 11.5e-6] * 2, abs=1e-15)  # t0: the first mark


def test_two_hosts_of_one_session_are_aligned_by_their_session_starts(tmp_path):
    run_dir = tmp_path / "plugins" / "profile" / "2026_01_01_00_00_00"
    run_dir.mkdir(parents=True)
    (run_dir / "hostA.xplane.pb").write_bytes(_space())
    (run_dir / "hostB.xplane.pb").write_bytes(_space(host="hostB", start=START_NS + 1_000_000))  # 1 ms later
    run = load_run(tmp_path)
    assert run.meta.extra["hosts"] == ["hostA", "hostB"]
    dev = run.tables["device_events"]
    assert list(dev["rank"]) == [0, 1, 4, 5]  # hostB's planes follow hostA's four
    assert dev["first_s"].tolist() == pytest.approx([1e-6, 2e-6, 1e-3 + 1e-6, 1e-3 + 2e-6], abs=1e-12)
    st = run.steps[run.steps["rank"] == 4].sort_values("step")
    assert st["start_s"].tolist() == pytest.approx([1e-3, 1e-3 + 10e-6], abs=1e-12)
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert (facts["n_accelerators"], facts["n_nodes"]) == (4, 2)
    (tmp_path / "plugins" / "profile" / "2026_01_02_00_00_00").mkdir()
    (tmp_path / "plugins" / "profile" / "2026_01_02_00_00_00" / "hostA.xplane.pb").write_bytes(_space())
    with pytest.raises(LoadError, match="2 profile runs in subfolders"):
        load_run(tmp_path, format="xplane")


# --- XLA's trace JSON ----------------------------------------------------------------------------------------
def _trace_json() -> dict:
    """The hand-built profile as XLA's trace viewer JSON: pids name planes, tids lines, times in µs."""
    ev: list[dict] = [{"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/host:CPU"}},
                      {"ph": "M", "pid": 1, "tid": 7, "name": "thread_name", "args": {"name": "python"}}]
    for pid, lines in ((2, {1: "Stream #1(Kernel)", 2: "Stream #2(Kernel)"}),
                       (3, {1: "Stream #1(Kernel)", 2: "Stream #2(Kernel)", 3: "Stream #3(Kernel)",
                            4: "Stream #4(MemcpyD2D)"})):
        ev.append({"ph": "M", "pid": pid, "name": "process_name", "args": {"name": f"/device:GPU:{pid - 2}"}})
        ev += [{"ph": "M", "pid": pid, "tid": t, "name": "thread_name", "args": {"name": n}} for t, n in lines.items()]

    def x(pid: int, tid: int, name: str, s: float, d: float, **args: str) -> dict:
        return {"pid": pid, "tid": tid, "ts": 1 + s, "dur": d, "ph": "X", "name": name, "args": args}

    ev += [x(1, 7, "train", 0, 10, step_num="0"), x(1, 7, "train", 10, 10, step_num="1"), x(1, 7, "other", 0.5, 1)]
    ev += [x(2, 1, "fusion.kd", s, d, hlo_op="fusion.1") for s, d in GPU0["compute"]]
    ev += [x(2, 2, "all_reduce_kernel.kd", s, d, hlo_op="all-reduce-start.1") for s, d in GPU0["comm"]]
    ev += [x(3, 1, "fusion.kd", 2, 4, hlo_op="fusion.1")]
    ev += [x(3, 3, "fusion.kd", s, d, hlo_op="fusion.1") for s, d in GPU1["compute"][1:]]
    ev += [x(3, 2, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", s, d) for s, d in GPU1["nccl"]]
    ev += [x(3, 4, "MemcpyD2D", s, d) for s, d in GPU1["memcpy"]]
    return {"displayTimeUnit": "ns", "metadata": {"highres-ticks": True}, "traceEvents": [*ev, {}]}


def test_xla_trace_json_gives_the_same_tables(tmp_path):
    path = tmp_path / "hostA.trace.json.gz"
    path.write_bytes(gzip.compress(json.dumps(_trace_json(), separators=(",", ":")).encode()))
    assert detect_format(path) == "xplane"
    run = load_run(path)
    _check_steps(run)
    assert run.tables["device_events"]["events"].tolist() == [4, 5]
    assert run.tables["ops"].set_index("name").loc["all_reduce_kernel.kd", "category"] == "comm"
    # jax.profiler's perfetto_trace.json.gz: the same document without displayTimeUnit, json.dumps spacing
    doc = _trace_json()
    del doc["displayTimeUnit"]
    perfetto = tmp_path / "perfetto_trace.json.gz"
    perfetto.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert detect_format(perfetto) == "xplane"
    _check_steps(load_run(perfetto))
    run = load_run(tmp_path)  # the folder: the host's trace JSON, its perfetto copy not read twice
    assert run.meta.extra["hosts"] == ["hostA"] and len(run.tables["device_events"]) == 2


def test_a_tpu_plane_reads_its_xla_ops_line_and_names_collectives_by_op(tmp_path):
    # XLA Ops [0, 4) fusion, [3, 6) all-reduce (µs); the XLA Modules line spans them and is not read
    ops = _enc_line(2, "XLA Ops", LINE_NS, [_enc_event(1, 0, 4), _enc_event(2, 3, 3)])
    modules = _enc_line(1, "XLA Modules", LINE_NS, [_enc_event(3, 0, 6)])
    steps = _enc_line(3, "Steps", LINE_NS, [_enc_event(4, 0, 8)])
    tpu = _enc_plane(0, "/device:TPU:0", [modules, ops, steps],
                     {1: "fusion.1", 2: "all-reduce.3", 3: "jit_train_step", 4: "7"}, STATS)
    sparse = _enc_plane(1, "/device:TPU:0 SparseCore 0", [ops], {1: "fusion.1", 2: "all-reduce.3"}, STATS)
    path = tmp_path / "tpu.xplane.pb"
    path.write_bytes(_enc_space([tpu, sparse], ["t"]))
    run = load_run(path)
    assert run.tables["device_events"]["device"].tolist() == ["/device:TPU:0"]
    row = run.steps.iloc[0]  # step 7: compute 4, comm 3, overlap 1, exposed 2, busy 6, idle 2 (µs)
    assert row["step"] == 7 and [row[c] for c in COLS] == pytest.approx([4e-6, 3e-6, 1e-6, 2e-6, 6e-6, 2e-6],
                                                                        abs=1e-15)
    assert run.tables["ops"].set_index("name")["hlo_op"].to_dict() == {"fusion.1": "fusion.1",
                                                                       "all-reduce.3": "all-reduce.3"}


def test_a_json_event_with_a_broken_time_is_a_bad_record(tmp_path):
    doc = _trace_json()
    doc["traceEvents"][-1:] = [{"pid": 2, "tid": 1, "ts": 30, "dur": -1, "ph": "X", "name": "fusion.kd"},
                               {"pid": 2, "tid": 1, "ts": "soon", "dur": 1, "ph": "X", "name": "fusion.kd"}]
    path = tmp_path / "hostA.trace.json"
    path.write_text(json.dumps(doc))
    with pytest.warns(Warning):
        run = load_run(path)
    _check_steps(run)
    assert run.meta.report.skipped == {rules.NEGATIVE_DURATION: 1, rules.NON_FINITE_TIME: 1}
    assert run.meta.report.examples[rules.NON_FINITE_TIME] == "ts"


# --- the accelerator from capability stats: device_ids.csv ----------------------------------------------------
def test_each_device_row_names_a_registry_accelerator_and_identifies_only_its_figures():
    rows = device_ids.load()
    assert {r.accelerator for r in rows} == {"MI300X", "MI325X", "MI300A"}
    for r in rows:
        assert hardware.resolve(r.accelerator).name == r.accelerator and r.source.startswith("https://www.amd.com/")
    gb = 10**9  # the datasheets' GB; the stat is bytes
    assert device_ids.identify("AMD", 9, 4, 304, 192 * gb).accelerator == "MI300X"
    assert device_ids.identify("amd", 9, 4, 304, 256 * gb).accelerator == "MI325X"
    assert device_ids.identify("AMD", 9, 4, 228, 128 * gb).accelerator == "MI300A"
    assert device_ids.identify("AMD", 9, 4, 38, 192 * gb) is None  # a partition: fewer compute units
    assert device_ids.identify("NVIDIA", 9, 4, 304, 192 * gb) is None


# --- damage and bounds ---------------------------------------------------------------------------------------
def test_a_truncated_file_keeps_the_planes_before_the_damage_or_is_refused(tmp_path, realdata):  # noqa: F811
    data = (realdata / "xplane" / GEMM).read_bytes()
    ends, i = [], 0
    for _num, value in _decode(data):  # each top-level field's end, from the test's own decoder
        i = data.index(value, i) + len(value) if isinstance(value, bytes) else i
        ends.append(i)
    full = load_run(realdata / "xplane" / GEMM)
    tail = tmp_path / "tail.xplane.pb"
    tail.write_bytes(data[: ends[-3] + 10])  # the last plane (Task Environment) cut after 10 bytes
    with pytest.warns(Warning):
        run = load_run(tail)
    assert any(r.startswith("truncated or malformed XSpace protobuf") for r in run.meta.report.skipped)
    assert run.tables["device_events"]["gpu_busy_s"].tolist() == full.tables["device_events"]["gpu_busy_s"].tolist()
    with pytest.raises(LoadError, match="truncated or malformed XSpace"):
        load_run(tail, strict=True)
    head = tmp_path / "head.xplane.pb"
    head.write_bytes(data[: ends[1] - 100])  # cut inside the first device plane: no device left
    with pytest.raises(LoadError, match="no device plane"):
        load_run(head, format="xplane")


def test_a_too_deep_message_is_refused_cleanly(tmp_path):
    deep = b"x"
    for _ in range(5_000):  # field 1 (XSpace.planes) holding field 1 holding field 1 ... 5,000 deep
        deep = _f(1, deep)
    path = tmp_path / "deep.xplane.pb"
    path.write_bytes(deep)
    with pytest.raises(LoadError, match="no readable XPlane"):
        load_run(path, format="xplane")
    with pytest.raises(pb.ProtoError, match="nested deeper"):
        list(pb.spans(deep, depth=pb.MAX_DEPTH + 1))
    js = tmp_path / "deep.trace.json"
    js.write_text('{"displayTimeUnit":"ns","metadata":{"highres-ticks":true},"traceEvents":' + "[" * 100_000)
    with pytest.raises(LoadError):
        load_run(js, format="xplane")


def test_spans_walks_without_copies_and_stops_at_damage():
    msg = _f(1, 150) + _f(2, "testing") + b"\x1d" + struct.pack("<f", 1.5)  # varint, string, fixed32
    got = list(pb.spans(msg))
    assert [(n, w) for n, w, _, _ in got] == [(1, 0), (2, 2), (3, 5)] and got[0][2] == 150
    assert msg[got[1][2]:got[1][3]] == b"testing" and struct.unpack("<f", msg[got[2][2]:got[2][3]])[0] == 1.5
    seen = []
    with pytest.raises(pb.ProtoError, match="runs past the end"):
        for f in pb.spans(msg + _f(4, "abc")[:-1]):
            seen.append(f[0])
    assert seen == [1, 2, 3]


def test_loading_costs_a_small_multiple_of_a_bare_decode(tmp_path):
    # 40,000 kernels on two devices, each with an hlo_op stat: the loader (classification, interval unions,
    # tables) against a bare walk of every field of every event with the same wire reader
    ev = [_enc_event(1 + i % 3, i * 2.0, 1.5, (_enc_stat(1, ref=4 + i % 2),)) for i in range(20_000)]
    lines = [_enc_line(1, "Stream #1(Kernel)", LINE_NS, ev)]
    names = {1: "a.kd", 2: "b.kd", 3: "c.kd"}
    data = _enc_space([_enc_plane(i, f"/device:GPU:{i}", lines, names, STATS) for i in range(2)], ["h"])
    path = tmp_path / "big.xplane.pb"
    path.write_bytes(data)

    def bare() -> int:
        n = 0
        for snum, _, a, z in pb.spans(data):
            for pnum, _, la, lz in pb.spans(data, a, z) if snum == 1 else ():
                if pnum == 3:
                    for lnum, _, ea, ez in pb.spans(data, la, lz):
                        if lnum == 4:
                            for _ in pb.spans(data, ea, ez):
                                n += 1
        return n

    assert load_run(path).tables["device_events"]["events"].tolist() == [20_000, 20_000]
    ratio = slowdown(lambda: load_run(path), bare, repeat=3)
    assert ratio < 6, f"the loader took {ratio:.1f}x a bare decode"


def test_options_are_checked():
    with pytest.raises(ValueError, match="step_pattern"):
        xplane.Options(step_pattern="(")
    assert xplane.sniff(Path("nowhere.xplane.pb"), b"not a profile") == 0.0
