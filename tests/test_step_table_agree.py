"""One run, three trace formats, one step table (``mfu_toolkit.io.gpu_time``).

The same two ranks and three steps are written here as a PyTorch profiler (Kineto) trace per rank, an
Nsight Systems SQLite export and an XLA ``.xplane.pb``, each with that format's own step marks
(``ProfilerStep#N`` ranges, NVTX ranges, ``jax.profiler.StepTraceAnnotation`` host events) and
kernel names. The three loaders must give the same per-rank, per-step compute, communication,
overlap, exposed communication and idle time, within 1 % of each other, and equal to the figures
worked out by hand below. The encoders are those of the formats' own tests (``_export`` of
``test_io_nsys``; the ``_enc_*`` of ``test_io_xplane``, with xplane.proto's field numbers).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from test_io_nsys import _export
from test_io_xplane import STATS, _enc_event, _enc_line, _enc_plane, _enc_space, _enc_stat

from mfu_toolkit.io import gpu_time, load_run

GEMM, ELEMENTWISE = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_tn", "vectorized_elementwise_kernel"
ALL_REDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"
STEPS = {1: (0, 1000), 2: (1000, 2000), 3: (2000, 3000)}  # µs after the first step starts, every rank

# (rank, kernel name, start, end, stream) in µs.
#   rank 0, in each step (t = its start): GEMM [t, t+400), elementwise [t+300, t+600) on another stream,
#     all-reduce [t+500, t+800), then nothing: the last 200 µs idle.
#   rank 1: step 1 GEMM [0, 300), all-reduce [200, 700), elementwise [950, 1050) across the step's end;
#     step 2 GEMM [1000, 1100), an idle gap, all-reduce [1600, 1900);
#     step 3 GEMM [2000, 2500), all-reduce [2400, 2600), elementwise [2550, 2700) on another stream.
KERNELS = [
    *[(0, name, t + a, t + b, s) for t, _ in STEPS.values()
      for name, a, b, s in ((GEMM, 0, 400, 7), (ELEMENTWISE, 300, 600, 8), (ALL_REDUCE, 500, 800, 20))],
    (1, GEMM, 0, 300, 7), (1, ALL_REDUCE, 200, 700, 20), (1, ELEMENTWISE, 950, 1050, 8),
    (1, GEMM, 1000, 1100, 7), (1, ALL_REDUCE, 1600, 1900, 20),
    (1, GEMM, 2000, 2500, 7), (1, ALL_REDUCE, 2400, 2600, 20), (1, ELEMENTWISE, 2550, 2700, 8),
]
# By hand, per (rank, step), µs: compute (union of GEMM and elementwise), comm, overlap (both at once),
# exposed comm (comm - overlap), idle (1000 - the union of everything).
#   rank 0, each step: compute [0,600) = 600; comm [500,800) = 300; overlap [500,600) = 100; exposed 200;
#     busy [0,800) = 800, idle 200.
#   rank 1, step 1: compute [0,300) + [950,1000) = 350; comm 500; overlap [200,300) = 100; exposed 400;
#     busy [0,700) + [950,1000) = 750, idle 250.
#   rank 1, step 2: compute [1000,1100) = 100 (the crossing kernel's [1000,1050) inside it); comm 300;
#     overlap 0; exposed 300; busy 400, idle 600 (the gap [1100,1600) among it).
#   rank 1, step 3: compute [2000,2500) + [2550,2700) = 650; comm [2400,2600) = 200; overlap [2400,2500) +
#     [2550,2600) = 150; exposed 50; busy [2000,2700) = 700, idle 300.
HAND = {(0, 1): (600, 300, 100, 200, 200), (0, 2): (600, 300, 100, 200, 200), (0, 3): (600, 300, 100, 200, 200),
        (1, 1): (350, 500, 100, 400, 250), (1, 2): (100, 300, 0, 300, 600), (1, 3): (650, 200, 150, 50, 300)}
COLS = ["compute_s", "comm_s", "overlap_s", "exposed_comm_s", "gpu_idle_s"]
# Rank 0 waits for its input [1000, 1050) µs (step 2): a DataLoader range in Kineto and Nsight, which an XLA
# profile has no way to show (its data wait stays unknown).
WAIT = (0, 1000, 1050)


def _kineto(folder: Path) -> Path:
    """One trace per rank: ProfilerStep#N user annotations, kernels, the DataLoader range (ts/dur in µs)."""
    folder.mkdir()
    base = 1_700_000_000_000_000  # epoch µs, as real traces
    for rank in (0, 1):
        ev = [{"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{n}", "pid": 1, "tid": 1,
               "ts": base + a, "dur": b - a} for n, (a, b) in STEPS.items()]
        ev += [{"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": s, "ts": base + a, "dur": b - a,
                "args": {"stream": s}} for r, name, a, b, s in KERNELS if r == rank]
        if rank == WAIT[0]:
            ev.append({"ph": "X", "cat": "user_annotation", "name": LOADER, "pid": 1, "tid": 1, "ts": base + WAIT[1],
                       "dur": WAIT[2] - WAIT[1]})
        doc = {"schemaVersion": 1, "deviceProperties": [], "distributedInfo": {"rank": rank, "world_size": 2},
               "traceEvents": ev}
        (folder / f"rank{rank}.json").write_text(json.dumps(doc))
    return folder


def _nsys(path: Path) -> Path:
    """One export: kernels per deviceId (ns), each rank's process marking ProfilerStep#N NVTX ranges."""
    origin, us = 5_000_000_000, 1_000  # the capture's start on its clock; ns per µs
    names = {GEMM: 1, ELEMENTWISE: 2, ALL_REDUCE: 3}

    def gpid(rank: int) -> int:  # a serialized GlobalId: the process (pid 100 + rank) at bits 24-47
        return (1 << 48) | ((100 + rank) << 24)

    kernels = [{"start": origin + a * us, "end": origin + b * us, "deviceId": r, "contextId": 1, "streamId": s,
                "globalPid": gpid(r), "demangledName": names[name], "shortName": names[name]}
               for r, name, a, b, s in KERNELS]
    nvtx = [{"start": origin + a * us, "end": origin + b * us, "eventType": 59, "text": f"ProfilerStep#{n}",
             "globalTid": gpid(r) | 7, "textId": None} for r in (0, 1) for n, (a, b) in STEPS.items()]
    nvtx.append({"start": origin + WAIT[1] * us, "end": origin + WAIT[2] * us, "eventType": 59,
                 "text": f"{LOADER}, op_id = 12", "globalTid": gpid(WAIT[0]) | 7, "textId": None})
    rows = {"StringIds": [{"id": i, "value": v} for v, i in names.items()],
            "ANALYSIS_DETAILS": [{"globalVid": 1, "duration": 3000 * us, "startTime": origin,
                                  "stopTime": origin + 3000 * us}],
            "ENUM_NSYS_EVENT_TYPE": [{"id": 59, "name": "NvtxPushPopRange", "label": "NvtxPushPopRange"}],
            "CUPTI_ACTIVITY_KIND_KERNEL": kernels, "NVTX_EVENTS": nvtx}
    return _export(path, rows=rows)


def _xplane(path: Path) -> Path:
    """One host: a plane per GPU with a line per stream (offsets in ps), StepTraceAnnotation host events."""
    meta = {1: GEMM, 2: ELEMENTWISE, 3: ALL_REDUCE, 9: "train_step"}
    ids = {v: k for k, v in meta.items()}
    gpus = []
    for rank in (0, 1):
        mine = [k for k in KERNELS if k[0] == rank]
        lines = [_enc_line(s, f"Stream #{s}(Kernel)", 0, [_enc_event(ids[name], a, b - a) for _, name, a, b, t in mine
                                                          if t == s]) for s in sorted({k[4] for k in mine})]
        gpus.append(_enc_plane(rank + 1, f"/device:GPU:{rank}", lines, meta, STATS))
    steps = [_enc_event(9, a, b - a, (_enc_stat(2, i64=n),)) for n, (a, b) in STEPS.items()]  # 2: step_num
    host = _enc_plane(0, "/host:CPU", [_enc_line(1, "python", 0, steps)], meta, STATS)
    env = _enc_plane(9, "Task Environment", [], {}, STATS, (_enc_stat(3, u64=1_700_000_000_000_000_000),))
    path.write_bytes(_enc_space([*gpus, host, env], ["host0"]))
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agree")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # notes (no GPU named, activity outside the steps) are not the point
        out = {"kineto": load_run(_kineto(tmp / "kineto"), format="kineto", cache=False),
               "nsys": load_run(_nsys(tmp / "run.sqlite"), format="nsys"),
               "xplane": load_run(_xplane(tmp / "host0.xplane.pb"), format="xplane")}
    return {fmt: run for fmt, run in out.items()}


def _table(run):
    return run.steps.set_index(["rank", "step"]).sort_index()


def test_each_format_gives_the_hand_computed_table(runs):
    for fmt, run in runs.items():
        st = _table(run)
        assert list(st.index) == sorted(HAND), fmt
        for key, want in HAND.items():
            got = st.loc[key, COLS].to_numpy(dtype=float) * 1e6
            assert np.allclose(got, want, rtol=0, atol=1e-6), (fmt, key, got.tolist(), want)
        assert np.allclose(st["end_s"] - st["start_s"], 1e-3, rtol=0, atol=1e-12), fmt
        assert set(gpu_time.STEP_COLUMNS) <= set(st.columns), fmt
        assert run.meta.extra["steps_from"], fmt


def test_the_three_formats_agree_within_one_percent(runs):
    kt, ns, xp = (_table(runs[f]) for f in ("kineto", "nsys", "xplane"))
    for col in [*COLS, "gpu_busy_s", "start_s", "end_s"]:
        for name, other in (("nsys", ns), ("xplane", xp)):
            assert np.allclose(other[col], kt[col], rtol=0.01, atol=1e-9), (name, col)


def test_data_wait_is_read_where_the_format_shows_it_and_unknown_where_not(runs):
    for fmt in ("kineto", "nsys"):
        st = _table(runs[fmt])
        assert st.loc[(0, 2), "data_wait_s"] == pytest.approx(50e-6, abs=1e-12), fmt
        assert st.loc[0, "data_wait_s"].drop(2).tolist() == [0.0, 0.0], fmt  # ranges in the trace: 0 elsewhere
        assert st.loc[1, "data_wait_s"].isna().all(), fmt  # rank 1's trace holds none: unknown, not 0
        assert runs[fmt].meta.extra["data_wait_from"].startswith(("enumerate(DataLoader)#", "NVTX ranges")), fmt
    assert _table(runs["xplane"])["data_wait_s"].isna().all() and runs["xplane"].meta.extra["data_wait_from"] is None
