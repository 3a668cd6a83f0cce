"""Communication efficiency (mfu_toolkit.analysis.communication): NCCL's bus-bandwidth formulas by hand, the real
NCCL Inspector line, a synthetic collectives table, the link chosen (given, inferred, NIC) or NaN with the reason,
and exposed communication from traces."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit import interconnect as ic
from mfu_toolkit.analysis import busbw_factor, collective_time_floor, comm_efficiency, exposed_comm_share
from mfu_toolkit.io import load_run
from mfu_toolkit.run import Run, RunMeta

INSPECTOR = "DataDog_datadog-agent_nccl_inspector_v4.0_real_payload_3rank.excerpt.jsonl"


# --- NCCL's formulas (nccl-tests doc/PERFORMANCE.md, "Summary") --------------------------------------------------
@pytest.mark.parametrize("coll, n, factor", [
    ("AllReduce", 8, 2 * 7 / 8),  # 2(n-1)/n = 1.75
    ("all_reduce", 2, 1.0),  # 2(2-1)/2
    ("nccl:all_reduce", 3, 4 / 3),
    ("AllGather", 4, 3 / 4),  # (n-1)/n
    ("ReduceScatter", 16, 15 / 16),
    ("AlltoAll", 8, 7 / 8),
    ("Broadcast", 8, 1.0), ("Reduce", 8, 1.0), ("Send", 2, 1.0),
])
def test_busbw_factor_is_nccls(coll, n, factor):
    assert busbw_factor(coll, n) == pytest.approx(factor, rel=1e-15)


def test_busbw_factor_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="coll must be one of .*AllReduce"):
        busbw_factor("Gossip", 8)
    with pytest.raises(ValueError, match="n_ranks must be a whole number"):
        busbw_factor("AllReduce", 0)


def test_collective_time_floor_for_an_all_to_all_per_step():
    # 1 GB all-to-all among 8 ranks over NDR (400 Gb/s = 50 GB/s each way): 1e9 x 7/8 / 50e9 = 17.5 ms
    assert collective_time_floor("alltoall", 1e9, 8, "NDR") == pytest.approx(0.0175, rel=1e-12)
    with pytest.raises(ValueError, match="does not say whether 128 GB/s is one direction or both"):
        collective_time_floor("allreduce", 1e9, 8, "Infinity Fabric MI300X")
    with pytest.raises(ValueError, match="per link, not per accelerator"):
        collective_time_floor("allreduce", 1e9, 8, "Infinity Fabric MI250")


# --- the real NCCL Inspector line --------------------------------------------------------------------------------
def test_real_inspector_line(realdata):  # noqa: F811
    # AllReduce of 2,360,832 B in 5,663 us on 3 ranks across 3 nodes:
    # algbw = 2,360,832 / 5.663e-3 = 416,887,162 B/s = 0.4169 GB/s; busbw = algbw x 2(3-1)/3 = 0.5558 GB/s,
    # which is what the line states (coll_algobw_gbs 0.416887, coll_busbw_gbs 0.555850).
    run = load_run(realdata / "nccl" / INSPECTOR)
    df = comm_efficiency(run)
    assert len(df) == 1
    row = df.iloc[0]
    assert (row["coll"], row["n_ranks"], row["nnodes"], row["scope"]) == ("AllReduce", 3, 3, "inter_node")
    assert (row["records"], row["bytes"], row["time_s"]) == (1, 2_360_832, pytest.approx(5.663e-3))
    assert row["algbw_bytes_per_s"] == pytest.approx(2_360_832 / 5.663e-3, rel=1e-12)
    assert row["algbw_bytes_per_s"] / 1e9 == pytest.approx(0.4169, abs=5e-5)
    assert row["busbw_bytes_per_s"] / 1e9 == pytest.approx(0.5558, abs=5e-5)
    assert row["busbw_stated_bytes_per_s"] == pytest.approx(0.555850e9) and row["busbw_agrees"]
    # three nodes and no NIC stated: unknown, with the reason; never the NVLink of a guessed GPU
    assert math.isnan(row["comm_efficiency"]) and row["link"] is None
    assert "spans 3 nodes" in row["reason"] and "nic=" in row["reason"]
    # with the NIC given (NDR, 50 GB/s each way): 0.55585e9 / 50e9 = 1.11 %
    ndr = comm_efficiency(run, nic="NDR").iloc[0]
    assert ndr["comm_efficiency"] == pytest.approx(555_849_550 / 50e9, rel=1e-6)
    assert ndr["link"] == "InfiniBand NDR" and ndr["link_basis"].startswith("given NIC")


# --- a synthetic collectives table -------------------------------------------------------------------------------
def _run(rows: list[dict], accelerator: str | None = "H100 SXM", **meta) -> Run:
    cols = ["rank", "n_ranks", "nnodes", "comm_id", "comm_name", "kind", "coll", "coll_sn", "msg_size_bytes",
            "exec_time_s", "busbw_bytes_per_s"]
    table = pd.DataFrame([{c: r.get(c) for c in cols} for r in rows])
    return Run.build(meta=RunMeta(accelerator=accelerator, **meta), tables={"collectives": table})


def _rec(coll, size, t, *, n=8, nodes=1, comm="0xa", rank=0, sn=0, stated=None):
    return {"rank": rank, "n_ranks": n, "nnodes": nodes, "comm_id": comm, "kind": "coll", "coll": coll,
            "coll_sn": sn, "msg_size_bytes": size, "exec_time_s": t, "busbw_bytes_per_s": stated}


def test_intra_node_collectives_against_the_accelerators_nvlink():
    # H100 SXM -> NVLink4, 900 GB/s both ways = 450 GB/s each way.
    # AllReduce 1 GB in 5 ms on 8 ranks: algbw 200 GB/s, busbw 200 x 1.75 = 350 GB/s, efficiency 350/450 = 0.7778.
    # AllGather, Inspector's per-rank size 100 MB x 8 = S 800 MB in 4 ms: algbw 200 GB/s, busbw x 7/8 = 175 GB/s.
    run = _run([_rec("AllReduce", 1e9, 5e-3, rank=r, stated=350e9) for r in range(8)]
               + [_rec("AllGather", 1e8, 4e-3, rank=r) for r in range(8)])
    df = comm_efficiency(run).set_index("coll")
    ar, ag = df.loc["AllReduce"], df.loc["AllGather"]
    assert (ar["records"], ar["ranks"], ar["bytes"], ar["time_s"]) == (8, 8, 8e9, pytest.approx(0.04))
    assert ar["algbw_bytes_per_s"] == pytest.approx(200e9) and ar["busbw_bytes_per_s"] == pytest.approx(350e9)
    assert ar["busbw_agrees"] is True
    assert ar["link"] == "NVLink4" and ar["peak_per_direction_bytes_per_s"] == 450e9
    assert ar["comm_efficiency"] == pytest.approx(350 / 450) and ar["reason"] == ""
    assert "inferred from the run's accelerator H100 SXM" in ar["link_basis"]
    assert ag["algbw_bytes_per_s"] == pytest.approx(200e9) and ag["busbw_bytes_per_s"] == pytest.approx(175e9)
    assert ag["comm_efficiency"] == pytest.approx(175 / 450) and ag["busbw_agrees"] is None
    assert df.attrs["busbw_source"].endswith("nccl-tests/blob/master/doc/PERFORMANCE.md")


def test_groups_are_per_communicator_and_the_stated_busbw_is_checked():
    # two communicators; the second states a busbw 10 % off ours (1 GB / 10 ms x 1.75 = 175 GB/s, states 192.5)
    run = _run([_rec("AllReduce", 1e9, 5e-3, comm="0xa"), _rec("AllReduce", 1e9, 10e-3, comm="0xb", stated=192.5e9)])
    df = comm_efficiency(run).set_index("comm")
    assert df.loc["0xa", "busbw_bytes_per_s"] == pytest.approx(350e9)
    assert df.loc["0xb", "busbw_bytes_per_s"] == pytest.approx(175e9) and df.loc["0xb", "busbw_agrees"] is False


def test_a_given_link_replaces_the_inferred_one():
    # link='PCIe Gen5 x16': 128 GB/s both ways -> 64 GB/s each way; busbw 350 GB/s is above it: flagged
    run = _run([_rec("AllReduce", 1e9, 5e-3)])
    row = comm_efficiency(run, link="pcie gen5").iloc[0]
    assert row["link"] == "PCIe Gen5 x16" and row["link_basis"] == "given (link=)"
    assert row["comm_efficiency"] == pytest.approx(350 / 64) and "above the link's peak" in row["reason"]
    with pytest.raises(ic.UnknownLinkError, match=r"link='NVLink 9'.*close matches"):
        comm_efficiency(run, link="NVLink 9")


@pytest.mark.parametrize("accelerator, kw, words", [
    ("H100 PCIe", {}, "no intra-node link for the run's accelerator"),
    (None, {}, "names no accelerator"),
    ("MI300X", {}, "does not say whether 128 GB/s is one direction or both"),
    ("MI250X", {}, "per link, not per accelerator"),
])
def test_unknown_link_gives_nan_with_the_reason(accelerator, kw, words):
    df = comm_efficiency(_run([_rec("AllReduce", 1e9, 5e-3)], accelerator=accelerator), **kw)
    assert math.isnan(df.iloc[0]["comm_efficiency"]) and words in df.iloc[0]["reason"]
    assert df.iloc[0]["busbw_bytes_per_s"] == pytest.approx(350e9)  # the bandwidth itself is still known


def test_across_nodes_only_the_nic_is_compared_never_the_nvlink():
    run = _run([_rec("AllReduce", 1e9, 20e-3, n=16, nodes=2)])  # busbw = 50 GB/s x 2 x 15/16 = 93.75 GB/s
    row = comm_efficiency(run, link="NVLink4").iloc[0]
    assert row["scope"] == "inter_node" and math.isnan(row["comm_efficiency"])
    assert "spans 2 nodes" in row["reason"] and "link= is intra-node only" in row["reason"]
    row = comm_efficiency(run, nic="XDR").iloc[0]  # XDR: 800 Gb/s = 100 GB/s each way
    assert row["busbw_bytes_per_s"] == pytest.approx(93.75e9) and row["comm_efficiency"] == pytest.approx(0.9375)


def test_without_a_node_count_the_link_is_not_guessed():
    run = _run([_rec("AllReduce", 1e9, 5e-3, nodes=None)])
    row = comm_efficiency(run).iloc[0]
    assert row["scope"] == "unknown" and "does not say whether the communicator spans nodes" in row["reason"]
    row = comm_efficiency(run, link="NVLink4").iloc[0]  # the user's statement is taken, and the basis says so
    assert row["comm_efficiency"] == pytest.approx(350 / 450) and "does not say whether" in row["link_basis"]
    fact = {"name": "n_nodes", "value": 1, "source": "stated", "where": "x:1", "text": "nNodes 1"}
    row = comm_efficiency(_run([_rec("AllReduce", 1e9, 5e-3, nodes=None)], facts=[fact])).iloc[0]
    assert row["scope"] == "intra_node" and row["link"] == "NVLink4"


def test_a_one_rank_communicator_crosses_no_link():
    row = comm_efficiency(_run([_rec("AllReduce", 1e9, 5e-3, n=1)])).iloc[0]
    assert row["busbw_bytes_per_s"] == 0 and math.isnan(row["comm_efficiency"]) and "one rank" in row["reason"]


def test_stated_busbw_is_used_where_no_size_is_given():
    rec = _rec("AllReduce", None, 5e-3, stated=300e9)
    row = comm_efficiency(_run([rec])).iloc[0]
    assert row["busbw_bytes_per_s"] == 300e9 and row["comm_efficiency"] == pytest.approx(300 / 450)
    assert "as the table states it" in row["reason"]


def test_a_run_without_collectives_says_why():
    steps = {"step": [1], "rank": [0], "start_s": [0.0], "end_s": [1.0], "comm_s": [0.2]}
    df = comm_efficiency(Run.build(steps=steps))
    assert df.empty and "states no message sizes" in df.attrs["reason"]
    assert "no collectives table" in comm_efficiency(Run.build()).attrs["reason"]


# --- exposed communication -----------------------------------------------------------------------------------
def test_exposed_comm_share_from_per_step_exposed_comm():
    # two steps of 1 s with 0.1 s and 0.3 s exposed: shares 0.1, 0.3; overall 0.4 / 2 = 0.2
    steps = {"step": [1, 2], "rank": [0, 0], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0], "comm_s": [0.3, 0.5],
             "exposed_comm_s": [0.1, 0.3]}
    out = exposed_comm_share(Run.build(steps=steps))
    assert out["exposed_comm_share"].tolist() == pytest.approx([0.1, 0.3]) and out.attrs["share"] == pytest.approx(0.2)
    assert "io.gpu_time" in out.attrs["basis"]


def test_exposed_comm_share_is_only_bounded_without_the_overlap():
    # comm 0.3 s, compute 0.5 s, busy 0.7 s in a 1 s step: exposed <= min(0.3, 0.7 - 0.5) = 0.2
    steps = {"step": [1], "rank": [0], "start_s": [0.0], "end_s": [1.0], "comm_s": [0.3], "compute_s": [0.5],
             "gpu_busy_s": [0.7]}
    out = exposed_comm_share(Run.build(steps=steps))
    assert math.isnan(out.attrs["share"]) and out.attrs["share_max"] == pytest.approx(0.2)
    assert "only an upper bound" in out.attrs["reason"]
    none = exposed_comm_share(Run.build(steps={"step": [1], "rank": [0], "start_s": [0.0], "end_s": [1.0]}))
    assert none.empty and math.isnan(none.attrs["share"]) and "unknown" in none.attrs["reason"]


def test_real_kineto_trace_has_no_sizes_but_its_exposed_comm_per_step(realdata):  # noqa: F811
    # HTA's NCCL-parser trace (A100, 2 ranks): the loader keeps NCCL kernel time (comm_s), not message sizes, and
    # the compute/communication overlap through io.gpu_time. Step 4 (a sweep over the raw kernels): comm
    # 0.011989 s, overlap 0.001825 s, exposed 0.010164 s of the 0.222442 s step (4.57 %), within the bound that
    # busy - compute = 0.049439 - 0.038506 = 0.010933 s gave before the overlap was read.
    run = load_run(realdata / "kineto" / "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz")
    assert comm_efficiency(run).empty
    out = exposed_comm_share(run)
    first = out.iloc[0]
    assert first["step"] == 4 and first["exposed_comm_share"] == pytest.approx(0.010164 / 0.222442, abs=1e-5)
    assert first["exposed_comm_share"] <= 0.010933 / 0.222442 and "io.gpu_time" in out.attrs["basis"]
    assert 0 < out.attrs["share"] == out.attrs["share_max"] < 0.1


def test_real_nsys_capture_gives_exposed_comm_per_device(realdata):  # noqa: F811
    # nsys-ai's 2-GPU capture (0.3 s window, no step ranges): per device, exposed communication over its window
    run = load_run(realdata / "nsys" / "GindaChen_nsys-ai_mfu_2gpu_before.sqlite")
    out = exposed_comm_share(run)
    assert list(out["device"]) == [0, 1] and "capture window" in out.attrs["basis"]
    k = run.tables["kernels"]
    assert out["exposed_comm_share"].tolist() == pytest.approx(
        (k["exposed_comm_s"] / (k["last_s"] - k["first_s"])).tolist())
    assert 0 < out.attrs["share"] < 0.1


def test_the_answer_shows_the_collectives_and_why_their_efficiency_is_unknown(realdata):  # noqa: F811
    # mfu analyze on the real Inspector line: the bus bandwidth recomputed from its bytes and time
    # (2,360,832 B / 5,663 µs × 2·2/3 = 0.5558 GB/s) beside the reason no efficiency is given
    import json
    import subprocess
    import sys

    path = str(realdata / "nccl" / INSPECTOR)
    doc = json.loads(subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", path, "--json"],
                                    capture_output=True, text=True, check=True).stdout)
    (row,) = doc["communication"]["collectives"]
    assert row["coll"] == "AllReduce" and row["busbw_bytes_per_s"] == pytest.approx(2_360_832 / 5.663e-3 * 4 / 3)
    assert row["comm_efficiency"] is None and "spans 3 nodes" in row["reason"]
    text = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", path], capture_output=True, text=True,
                          check=True).stdout
    assert "AllReduce   3 / 3" in text and "555.8 MB/s" in text and "Efficiency unknown: the communicator spans" in text
