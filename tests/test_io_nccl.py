"""NCCL Inspector dumps and NCCL_DEBUG=INFO lines (mfu_toolkit.io.formats.nccl and mfu_toolkit.io.nccl_info).

The real files are under MFU_REALDATA/nccl (see its README): one real Inspector line, and INFO
excerpts from NCCL issues 534 (8×H100 init timings) and 1609 (H800 split communicator, sockets)
and Megatron-LM issue 516 (channels, trees, P2P). Variants written here cover the spellings of other
NCCL versions, taken from NCCL's sources (init.cc, bootstrap.cc, transport/*.cc, the Inspector
plugin's inspector_json.cc and inspector_prom.cc).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401
from _samples import megatron_line, write_megatron

from mfu_toolkit.io import detect_format, load_run, sniff_all
from mfu_toolkit.io.formats import nccl
from mfu_toolkit.io.nccl_info import NcclScanner, scan
from mfu_toolkit.run import LoadError

INSPECTOR = "DataDog_datadog-agent_nccl_inspector_v4.0_real_payload_3rank.excerpt.jsonl"
TIMINGS = "NVIDIA_nccl_issue534_init_timings_8xH100_nccl2.22.excerpt.log"
SPLIT = "NVIDIA_nccl_issue1609_h800_4rank_comm_split.excerpt.redacted.log"
CHANNELS = "NVIDIA_Megatron-LM_issue516_8gpu_channels_trees.excerpt.log"


def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, **kw)


def _lines(*texts: str) -> list[tuple[int, str]]:
    return list(enumerate(texts, start=1))


def _write(tmp_path: Path, name: str, lines: list[str]) -> Path:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return p


# --- the real files ------------------------------------------------------------------------------


def test_real_inspector_line_gives_rank_1_of_3_allreduce_8995(realdata):  # noqa: F811
    path = realdata / "nccl" / INSPECTOR
    raw = json.loads(path.read_bytes())  # read independently of the loader
    hdr, meta, perf = raw["header"], raw["metadata"], raw["coll_perf"]
    assert (hdr["rank"], hdr["n_ranks"], hdr["nnodes"]) == (1, 3, 3)
    assert (perf["coll"], perf["coll_sn"], perf["coll_msg_size_bytes"]) == ("AllReduce", 8995, 2_360_832)
    assert perf["coll_exec_time_us"] == 5663 and round(perf["coll_busbw_gbs"], 3) == 0.556
    assert detect_format(path) == "nccl"
    run = _load(path)
    c = run.tables["collectives"]
    assert len(c) == 1 and len(run.steps) == 0 and len(run.events) == 0
    row = c.iloc[0]
    assert (row["rank"], row["n_ranks"], row["nnodes"]) == (hdr["rank"], hdr["n_ranks"], hdr["nnodes"])
    assert (row["coll"], row["coll_sn"], row["msg_size_bytes"]) == (perf["coll"], perf["coll_sn"],
                                                                     perf["coll_msg_size_bytes"])
    assert row["exec_time_s"] == pytest.approx(perf["coll_exec_time_us"] * 1e-6, rel=1e-12)
    assert row["busbw_bytes_per_s"] == pytest.approx(perf["coll_busbw_gbs"] * 1e9, rel=1e-12)
    assert row["algbw_bytes_per_s"] == pytest.approx(perf["coll_algobw_gbs"] * 1e9, rel=1e-12)
    assert (row["hostname"], row["pid"], row["comm_id"]) == (meta["hostname"], meta["pid"], hdr["id"])
    assert row["timing_source"] == perf["coll_timing_source"] == "kernel_gpu"
    # NCCL's GB is 1e9 bytes: algbw = bytes / 1e9 / seconds, busbw = algbw × 2(n−1)/n for AllReduce
    assert perf["coll_msg_size_bytes"] / row["exec_time_s"] == pytest.approx(row["algbw_bytes_per_s"], rel=1e-5)
    assert row["busbw_bytes_per_s"] == pytest.approx(row["algbw_bytes_per_s"] * 2 * 2 / 3, rel=1e-5)
    # the communicator's size is not the world's: no n_ranks fact, the largest communicator in extra
    assert run.meta.facts == [] and run.meta.n_accelerators is None
    assert run.meta.extra["nccl_inspector"]["largest_communicator"]["n_ranks"] == 3
    assert run.meta.extra["nccl_inspector"]["format_versions"] == {"v4.0": 1}
    assert run.meta.time_unit == "us" and row["dump_s"] == 0.0
    assert run.meta.extra["t0_wallclock"].startswith("2026-03-04")


def test_real_init_timings_8xh100_per_rank(realdata):  # noqa: F811
    path = realdata / "nccl" / TIMINGS
    text = path.read_text()
    expected = {int(m.group(1)): (float(m.group(2)), float(m.group(3)))
                for m in re.finditer(r"rank (\d+) nranks 8 total ([\d.]+) \(kernels [\d.]+, bootstrap ([\d.]+)", text)}
    assert sorted(expected) == [1, 2, 3, 5, 6, 7]  # ranks print out of order; 0 and 4 are not in the excerpt
    run = _load(path)
    t = run.tables["init_timings"]
    got = {int(r.rank): (r.total_s, r.bootstrap_s) for r in t.itertuples()}
    assert got == expected
    assert got[5] == (2.46, 1.60) and set(t["spelling"]) == {"old"} and t["api"].isna().all()
    assert {"kernels_s", "allgathers_s", "topo_s", "graphs_s", "connections_s", "rest_s"} <= set(t.columns)
    assert "alloc_s" not in t.columns  # the 2.22 spelling has no alloc
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["n_ranks"]["value"] == 8 and facts["n_ranks"]["where"].endswith(f"{TIMINGS}:1")
    assert run.meta.extra["nccl"]["init_total_s_max"] == 2.46
    assert run.meta.time_unit == "s"


def test_newer_init_timings_spelling_with_alloc_and_a_split(tmp_path):
    # init.cc since 2.23: "Init timings - <API>: rank R nranks N total T (kernels, alloc, bootstrap, ...)"
    lines = [f"node{r // 4}:{100 + r}:{200 + r} [{r % 4}] NCCL INFO Init timings - ncclCommInitRankConfig: rank {r} "
             f"nranks 8 total {2.5 + r / 100:.2f} (kernels 0.18, alloc 0.02, bootstrap 1.60, allgathers 0.00, "
             "topo 0.52, graphs 0.01, connections 0.12, rest 0.05)" for r in range(8)]
    lines.append("node0:100:200 [0] NCCL INFO Init timings - ncclCommSplit: rank 0 nranks 4 total 0.30 (kernels "
                 "0.00, alloc 0.01, bootstrap 0.10, allgathers 0.00, topo 0.10, graphs 0.01, connections 0.05, "
                 "rest 0.03)")
    run = _load(_write(tmp_path, "new.log", lines))
    t = run.tables["init_timings"]
    assert t["alloc_s"].tolist() == [0.02] * 8 + [0.01]
    assert t["api"].tolist() == ["ncclCommInitRankConfig"] * 8 + ["ncclCommSplit"]
    assert t["split"].tolist() == [False] * 8 + [True] and set(t["spelling"]) == {"new"}
    assert t["total_s"].tolist()[:2] == [2.5, 2.51]
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts["n_ranks"] == 8  # the root communicator, not the 4-rank split
    assert run.meta.extra["nccl"]["init_total_s_max"] == 2.57


def test_real_h800_split_communicator_is_not_the_world(realdata):  # noqa: F811
    path = realdata / "nccl" / SPLIT
    assert path.read_text().startswith("> ")  # a Markdown quote on the first line
    run = _load(path)
    comms = run.tables["communicators"].sort_values("rank")
    assert comms["rank"].tolist() == [0, 1, 2, 3] and set(comms["nranks"]) == {4}
    assert comms["split"].all() and set(comms["color"]) == {116666945}
    r0 = comms[comms["rank"] == 0].iloc[0]
    assert (r0["cuda_dev"], r0["nvml_dev"], r0["bus_id"]) == (0, 4, "9a000")  # cudaDev ≠ nvmlDev
    assert r0["comm_id"] == "0xdf334f4a507dd4c1" and r0["parent"] == "0x56224e876520" and r0["state"] == "START"
    assert r0["host"] == "<host>" and r0["pid"] == 531
    assert not any(f["name"] == "n_ranks" for f in run.meta.facts) and run.meta.n_accelerators is None
    notes = " ".join(run.meta.report.notes)
    assert "split communicator" in notes and "not the world's" in notes
    info = scan(enumerate(path.read_text().splitlines(), start=1))
    assert info.n_lines == 13 and info.world() is None and len(info.splits()) == 4


def test_real_h800_uses_sockets_and_says_so(realdata):  # noqa: F811
    run = _load(realdata / "nccl" / SPLIT)
    fb = run.meta.extra["nccl"]["socket_fallback"]
    assert fb["value"] is True and fb["line"] == 2 and fb["processes"] == 4
    assert "no IB/RoCE device or network plugin" in fb["reason"]
    assert run.meta.extra["nccl"]["networks"] == ["Socket"]
    assert {"name": "socket_fallback", "value": True} .items() <= next(
        f for f in run.meta.extra["nccl_facts"] if f["name"] == "socket_fallback").items()
    assert any("fell back to sockets" in n for n in run.meta.report.notes)
    nets = run.tables["networks"]
    assert nets["pid"].tolist() == [532, 534, 533, 531] and set(nets["network"]) == {"Socket"}


def test_real_megatron_channels_trees_and_p2p(realdata):  # noqa: F811
    path = realdata / "nccl" / CHANNELS
    info = scan(enumerate(path.read_text().splitlines(), start=1))
    assert [r["channel"] for r in info.rings] == [21, 22, 23] and {r["n_channels"] for r in info.rings} == {24}
    assert all(r["n_ranks"] == 8 for r in info.rings)
    assert len(info.trees) == 1 and info.trees[0]["n_channels"] == 24
    assert info.p2p_chunksize == {"524288": 5}
    assert info.n_lines == info.n_read == 11
    run = _load(path)
    conn = run.tables["connections"].sort_values("src_rank")
    assert conn["src_rank"].tolist() == [1, 2, 3, 4, 6, 7] and set(conn["transport"]) == {"P2P/IPC"}
    six = conn[conn["src_rank"] == 6].iloc[0]
    assert (six["src_dev"], six["dst_rank"], six["dst_dev"], six["dev_kind"]) == ("a01c0", 7, "a01d0", "bus_id")
    assert six["host"] == "09677202c889" and six["pid"] == 6257 and six["via"] == "P2P/IPC/read"
    x = run.meta.extra["nccl"]
    assert (x["transports"], x["n_channels"], x["n_tree_channels"]) == (["P2P/IPC"], [24], [24])
    assert x["socket_fallback"] is None


def test_real_folder_reads_every_file(realdata):  # noqa: F811
    run = _load(realdata / "nccl")
    assert detect_format(realdata / "nccl") == "nccl"
    assert set(run.tables) >= {"collectives", "communicators", "init_timings", "connections", "networks"}
    assert run.tables["collectives"]["file"].tolist() == [INSPECTOR]
    assert set(run.meta.extra["nccl"]) == {CHANNELS, SPLIT, TIMINGS}
    assert [f["value"] for f in run.meta.facts if f["name"] == "n_ranks"] == [8]


# --- NCCL INFO variants (spellings from NCCL's sources) --------------------------------------------

IB_JOB = [
    "nodeA:10:11 [0] NCCL INFO NCCL version 2.21.5+cuda12.4",
    "nodeA:10:11 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB ib0:10.0.0.1<0>",
    "nodeA:10:11 [0] NCCL INFO Using network IB",
    "nodeA:10:11 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0xabc - Init START",
    "nodeA:10:11 [0] NCCL INFO comm 0x55aa rank 0 nRanks 16 nNodes 2 localRanks 8 localRank 0 MNNVL 0",
    "nodeA:10:11 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/IB/0/GDRDMA",
    "nodeA:10:11 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    "nodeA:10:11 [0] NCCL INFO 24 coll channels, 24 collnet channels, 0 nvls channels, 32 p2p channels, "
    "32 p2p channels per peer",
    "nodeA:10:11 [0] NCCL INFO ncclCommSplit comm 0x66bb rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 18000 parent "
    "0x55aa color 1 key 0 commId 0x0 - Init COMPLETE",
    "nodeA:10:11 [0] NCCL INFO ncclCommInitRank comm 0x55aa rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 18000 "
    "commId 0xabc - Init COMPLETE",
]


def test_ib_job_rank_host_gpu_nic_and_world(tmp_path):
    run = _load(_write(tmp_path, "ib.log", IB_JOB))
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["n_ranks"]["value"] == 16 and facts["n_ranks"]["where"].endswith("ib.log:4")
    assert facts["n_nodes"]["value"] == 2 and facts["n_nodes"]["where"].endswith("ib.log:5")
    comms = run.tables["communicators"].set_index("comm")
    world, tp = comms.loc["0x55aa"], comms.loc["0x66bb"]
    assert (world["split"], world["state"], world["n_nodes"], world["local_ranks"]) == (False, "COMPLETE", 2, 8)
    assert (tp["split"], tp["parent"], tp["nranks"]) == (True, "0x55aa", 8)
    assert world["nics"] == "mlx5_0,mlx5_1" and world["network"] == "IB" and world["host"] == "nodeA"
    nics = run.tables["nics"]
    assert nics[["device", "port", "link"]].values.tolist() == [["mlx5_0", "1", "IB"], ["mlx5_1", "1", "RoCE"]]
    conn = run.tables["connections"]
    assert conn["transport"].tolist() == ["NET/IB", "P2P/CUMEM"]
    assert (conn["net_dev"].iloc[0], conn["gdr"].iloc[0], conn["direction"].iloc[0]) == (0, True, "receive")
    assert conn["dev_kind"].tolist() == ["nvml_dev", "nvml_dev"]  # 2.18.3+ prints nvmlDev, not the bus id
    x = run.meta.extra["nccl"]
    assert (x["nccl_version"], x["cuda_version"], x["socket_fallback"]) == ("2.21.5", "12.4", None)
    assert x["n_split_communicators"] == 1


SOCKET_JOB = [
    "gpu-1:7:8 [0] NCCL INFO NCCL version 2.18.3+cuda12.1",
    "gpu-1:7:8 [0] NCCL INFO NET/IB : No device found.",
    "gpu-1:7:8 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.5<0> [1]eth1:10.2.0.5<0>",
    "gpu-1:7:8 [0] NCCL INFO Using network Socket",
    "gpu-1:7:8 [0] NCCL INFO comm 0x1 rank 0 nranks 16 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9 - Init START",
    "gpu-1:7:8 [0] NCCL INFO Channel 00/0 : 15[7] -> 0[0] [receive] via NET/Socket/0",
    "gpu-1:7:8 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/1",
]


def test_socket_fallback_is_named_as_a_fact(tmp_path):
    run = _load(_write(tmp_path, "sock.log", SOCKET_JOB))
    fb = run.meta.extra["nccl"]["socket_fallback"]
    assert fb["value"] is True and fb["line"] == 4 and "No device found, line 2" in fb["reason"]
    assert "2 channel connection(s) carry collectives over TCP" in fb["traffic"]
    entry = next(f for f in run.meta.extra["nccl_facts"] if f["name"] == "socket_fallback")
    assert entry["value"] is True and entry["where"].endswith("sock.log:4") and entry["text"] == "Using network Socket"
    assert any("fell back to sockets" in n and "No device found" in n for n in run.meta.report.notes)
    assert run.tables["nics"]["device"].tolist() == ["eth0", "eth1"]
    assert run.meta.extra["nccl"]["transports"] == ["NET/Socket"]
    # the same job with IB switched off by the environment says so instead
    disabled = [SOCKET_JOB[0], "gpu-1:7:8 [0] NCCL INFO NCCL_IB_DISABLE set by environment to 1.", *SOCKET_JOB[2:]]
    fb = _load(_write(tmp_path, "off.log", disabled)).meta.extra["nccl"]["socket_fallback"]
    assert "NCCL_IB_DISABLE=1, line 2" in fb["reason"]
    # and an IB job has none
    assert scan(_lines(*IB_JOB)).socket_fallback() is None


def test_communicator_lines_of_every_version(tmp_path):
    lines = [
        # 2.18/2.19: bootstrapSplit names no communicator; the next Init START of the process is the split
        "h:1:1 [0] NCCL INFO bootstrapSplit: rank 0 nranks 2 color 5 key 0 prev 1 next 1 - DONE",
        "h:1:1 [0] NCCL INFO comm 0xa rank 0 nranks 2 cudaDev 0 nvmlDev 0 busId 1000 commId 0x1 - Init START",
        # 2.23+: "key K- Init START" (no space), splitCount
        "h:1:1 [0] NCCL INFO ncclCommSplit comm 0xb rank 1 nranks 4 cudaDev 0 nvmlDev 3 busId 2000 parent 0xc "
        "splitCount 1 color 7 key 1- Init START",
        # 2.28+: "[Rank R] <API> comm …"
        "h:1:1 [0] NCCL INFO [Rank 0] ncclCommInitRankConfig comm 0xc rank 0 nranks 32 cudaDev 0 nvmlDev 0 busId "
        "1000 commId 0x5 - Init START",
        "h:1:1 [0] NCCL INFO comm 0xc rank 0 nranks 32 cudaDev 0 busId 1000 - Destroy COMPLETE",
        "h:1:1 [0] NCCL INFO CommRevokeAsync START comm 0xc rank 0 nRanks 32 nNodes 4 localRank 0 cudaDev 0",
    ]
    info = scan(_lines(*lines))
    by = {c["comm"]: c for c in info.communicators}
    assert set(by) == {"0xa", "0xb", "0xc"}
    assert (by["0xa"]["split"], by["0xb"]["split"], by["0xc"]["split"]) == (True, True, False)
    assert (by["0xb"]["nvml_dev"], by["0xb"]["color"], by["0xb"]["key"]) == (3, 7, 1)
    assert by["0xc"]["api"] == "ncclCommInitRankConfig" and info.world()["value"] == 32
    assert info.n_read == 5 and info.n_lines == 6  # the CommRevokeAsync line is NCCL's, but not read


def test_versions_prefixes_and_interleaved_lines():
    s = NcclScanner()
    assert s.feed(1, "NCCL version 2.22.3+cuda12.4")  # NCCL_DEBUG=VERSION: no prefix
    assert s.feed(2, "> [2024-05-01 10:00:00] n1:5:6 [3] NCCL INFO Using network IB")  # Markdown, stamp
    assert s.feed(3, "[rank1]:n2:7:8 [1] NCCL INFO Using network IB")  # a launcher's prefix
    assert s.feed(4, "n1:5:6 [0] NCCL INFO Using network IB n2:9:9 [1] NCCL INFO Using network Socket")
    assert s.feed(5, "n1:5:6 [0] NCCL INFO Something NCCL has not printed before")
    assert not s.feed(6, "iteration 10/100 | elapsed time per iteration (ms): 1000.0")
    assert not s.feed(7, "torch NCCL version 2.21.5 is loaded")
    info = s.result()
    assert [(n["host"], n["pid"], n["network"]) for n in info.networks] == [
        ("n1", 5, "IB"), ("n2", 7, "IB"), ("n1", 5, "IB"), ("n2", 9, "Socket")]
    assert info.version == "2.22.3" and info.versions["2.22.3"]["line"] == 1
    assert (info.n_lines, info.n_read) == (5, 4)  # one message no rule knows: ignored, not an error
    long = "x" * 200_000 + " NCCL INFO Using network IB"  # no prefix: read, host unknown, constant work
    assert scan([(1, long)]).networks[0]["host"] is None


def test_nccl_info_facts_are_data_with_lines():
    facts = scan(_lines(*IB_JOB)).facts()
    names = [(f["name"], f["value"], f["line"]) for f in facts]
    assert ("nccl_version", "2.21.5", 1) in names and ("n_ranks", 16, 4) in names and ("n_nodes", 2, 5) in names
    assert ("network", "IB", 3) in names and ("transport", "NET/IB", 6) in names
    assert ("transport", "P2P/CUMEM", 7) in names
    assert all(isinstance(f["text"], str) and f["text"] for f in facts)


# --- Inspector variants -------------------------------------------------------------------------


def _record(rank: int, n_ranks: int, sn: int, *, comm: str = "0xc0", host: str = "h0", pid: int = 1,
            coll: str = "AllReduce", size: int = 1 << 20, us: float = 100.0, ts: int = 1_700_000_000_000_000,
            nnodes: int = 1, **perf) -> dict:
    algbw = size / 1e9 / (us * 1e-6)
    body = {"coll": coll, "coll_sn": sn, "coll_msg_size_bytes": size, "coll_exec_time_us": us,
            "coll_timing_source": "kernel_gpu", "coll_algobw_gbs": algbw,
            "coll_busbw_gbs": algbw * 2 * (n_ranks - 1) / n_ranks, **perf}
    return {"header": {"id": comm, "rank": rank, "n_ranks": n_ranks, "nnodes": nnodes},
            "metadata": {"inspector_output_format_version": "v4.0", "git_rev": "", "rec_mechanism":
                         "nccl_profiler_interface", "dump_timestamp_us": ts, "hostname": host, "pid": pid},
            "coll_perf": body}


def test_bad_records_are_counted_never_dropped_silently(tmp_path):
    good = json.dumps(_record(0, 2, 1))
    lines = [
        good,
        '{"header": {"id": "0xc0", "rank": 0',  # malformed
        "[1, 2]",  # not an object
        json.dumps({"header": {"id": "x", "rank": 0, "n_ranks": 2}, "metadata": {}}),  # no coll_perf
        json.dumps(_record(5, 2, 2)),  # rank beyond n_ranks
        json.dumps(_record(1, 2, 3, us=-4.0)),  # negative time
        json.dumps(_record(1, 2, 4, coll_busbw_gbs="nan")),  # NCCL writes "nan" for a NaN double: kept
        good,  # duplicate
        json.dumps(_record(1, 2, 5))[:-10],  # half-written last line (no line break after it)
    ]
    p = tmp_path / "h0-pid1.log"
    p.write_text("\n".join(lines))
    assert detect_format(p) == "nccl"
    run = _load(p)
    rep = run.meta.report
    assert rep.first_lines == {
        "malformed JSON record": [2],
        "record is not a JSON object": [3],
        "not an NCCL Inspector record (no header and coll_perf/p2p_perf)": [4],
        "value out of range": [5],
        "negative duration": [6],
        "non-numeric value (left missing, record kept)": [7],
        "duplicate record (kept the first)": [8],
        "half-written last line": [9],
    }
    c = run.tables["collectives"]
    assert c["coll_sn"].tolist() == [1, 4] and math.isnan(c["busbw_bytes_per_s"].iloc[1])
    assert rep.lines_read == 9
    assert rep.examples["value out of range"] == "rank 5 of n_ranks 2"
    assert rep.examples["malformed JSON record"].startswith("Expecting ',' delimiter: ")
    with pytest.raises(LoadError, match="line 2"):
        load_run(p, strict=True)


def test_odd_values_are_no_crash(tmp_path):
    odd = _record(0, 2, 1)
    odd["header"]["id"] = ["not", "a", "string"]
    odd["metadata"] = "not an object"
    odd["coll_perf"]["coll_msg_size_bytes"] = "12 MB"
    run = _load(_write(tmp_path, "odd.log", [json.dumps(odd), json.dumps(_record(1, 2, 1))]))
    c = run.tables["collectives"]
    assert c["comm_id"].isna().tolist() == [True, False] and c["msg_size_bytes"].isna().tolist() == [True, False]
    assert run.meta.report.first_lines == {"non-numeric value (left missing, record kept)": [1]}


def test_a_generated_multi_rank_inspector_folder(tmp_path):
    # 4 ranks on 2 nodes, one file per process (<host>-pid<pid>.log as the plugin names them), a world
    # communicator of 4 and a tensor-parallel one of 2; an INFO log and a README beside them
    d = tmp_path / "nccl-inspector-1234"
    d.mkdir()
    t0 = 1_700_000_000_000_000
    for rank in range(4):
        host, pid = f"node{rank // 2}", 100 + rank
        recs = [_record(rank, 4, sn, comm="0xworld", host=host, pid=pid, nnodes=2, ts=t0 + sn * 1000,
                        us=100.0 + rank) for sn in range(1, 6)]
        recs += [_record(rank % 2, 2, sn, comm=f"0xtp{rank // 2}", host=host, pid=pid, coll="AllGather",
                         ts=t0 + 10_000 + sn) for sn in range(1, 4)]
        (d / f"{host}-pid{pid}.log").write_text("".join(json.dumps(r) + "\n" for r in recs))
    _write(d, "nccl_debug.txt", IB_JOB)
    (d / "README.txt").write_text("job notes\n")
    assert sniff_all(d)["nccl"] == 0.9 and detect_format(d) == "nccl"
    run = _load(d)
    c = run.tables["collectives"]
    assert len(c) == 4 * (5 + 3) and sorted(c["file"].unique()) == [f"node{r // 2}-pid{100 + r}.log"
                                                                       for r in range(4)]
    world = c[c["comm_id"] == "0xworld"]
    assert sorted(world["rank"].unique()) == [0, 1, 2, 3] and set(world["n_ranks"]) == {4}
    assert world.groupby("rank")["exec_time_s"].first().tolist() == pytest.approx([100e-6, 101e-6, 102e-6, 103e-6])
    assert c["dump_s"].min() == 0.0 and c["dump_s"].max() == 0.009003  # µs subtracted before scaling: exact
    comms = run.tables["inspector_comms"]
    assert len(comms) == 4 + 4 and comms.set_index(["comm_id", "rank"]).loc[("0xworld", 3), "n_records"] == 5
    assert run.meta.extra["nccl_inspector"]["largest_communicator"] == {"comm_id": "0xworld", "n_ranks": 4,
                                                                          "nnodes": 2}
    assert run.meta.extra["nccl_inspector"]["hosts"] == ["node0", "node1"]
    assert [f["value"] for f in run.meta.facts if f["name"] == "n_ranks"] == [16]  # from the INFO log's root comm
    assert any("1 file(s) hold no NCCL output" in n and "README.txt" in n for n in run.meta.report.notes)


def test_verbose_and_pretty_printed_records(tmp_path):
    # the plugin README's verbose example: kernel events carry CPU-observed epoch µs
    rec = _record(4, 8, 1231, coll="ReduceScatter", ts=1752867229276385,
                  event_trace_ts={"coll_start_ts": 1752867229235059, "coll_stop_ts": 1752867229235064,
                                  "kernel_events": [{"channel_id": 0, "kernel_start_ts": 1752867229235181,
                                                     "kernel_stop_ts": 1752867229275811,
                                                     "kernel_record_ts": 1752867229275811}]})
    p = tmp_path / "pretty.json"
    later = _record(4, 8, 1232, ts=1752867229276390)
    p.write_text(json.dumps(rec, indent=2) + "\n" + json.dumps(later, indent=2) + "\n")
    run = _load(p)
    c = run.tables["collectives"]
    assert c["coll_sn"].tolist() == [1231, 1232] and c["line"].tolist()[0] == 1
    assert (c["kernel_start_s"].iloc[0], c["kernel_end_s"].iloc[0]) == (0.0, 0.04063)  # from µs, exact
    assert c["dump_s"].tolist() == [0.041204, 0.041209] and c["kernel_start_s"].isna().tolist() == [False, True]


def test_p2p_records(tmp_path):
    rec = _record(0, 2, 1)
    rec["p2p_perf"] = {"p2p": "Send", "p2p_sn": 7, "p2p_peer": 1, "p2p_msg_size_bytes": 4096,
                       "p2p_exec_time_us": 12, "p2p_timing_source": "kernel_gpu", "p2p_algobw_gbs": 0.34,
                       "p2p_busbw_gbs": 0.34}
    del rec["coll_perf"]
    run = _load(_write(tmp_path, "p2p.log", [json.dumps(rec)]), format="nccl")
    row = run.tables["collectives"].iloc[0]
    assert (row["kind"], row["coll"], row["coll_sn"], row["peer"]) == ("p2p", "Send", 7, 1)
    assert row["busbw_bytes_per_s"] == pytest.approx(0.34e9)


PROM_OLD = [  # NCCL 2.28/2.29 (ext-profiler/inspector/inspector_prom.cc): one sample set per collective
    'nccl_algorithm_bandwidth_gbs{comm_id="0xd152",hostname="pool0-0002",rank="4",slurm_job="unknown",'
    'slurm_job_id="unknown",nranks="8",n_nodes="1",gpu_device_id="GPU4",collective="AllReduce",coll_sn="228924",'
    'timestamp="2025-10-17T03:31:47Z",message_size="2.00GB"} 277.21',
    'nccl_bus_bandwidth_gbs{comm_id="0xd152",hostname="pool0-0002",rank="4",slurm_job="unknown",'
    'slurm_job_id="unknown",nranks="8",n_nodes="1",gpu_device_id="GPU4",collective="AllReduce",coll_sn="228924",'
    'timestamp="2025-10-17T03:31:47Z",message_size="2.00GB"} 485.119',
    'nccl_collective_exec_time_microseconds{comm_id="0xd152",hostname="pool0-0002",rank="4",slurm_job="unknown",'
    'slurm_job_id="unknown",nranks="8",n_nodes="1",gpu_device_id="GPU4",collective="AllReduce",coll_sn="228924",'
    'timestamp="2025-10-17T03:31:47Z",message_size="2.00GB"} 61974',
]
PROM_NEW = [  # the plugin README's examples (plugins/profiler/inspector): per-bucket aggregates
    "# HELP nccl_bus_bandwidth_gbs NCCL bus bandwidth",
    'nccl_bus_bandwidth_gbs{version="v5.1",slurm_job_id="unknown",node="nvl72004-T01",gpu="GPU0",'
    'comm_name="DP Group 0",n_nodes="1",nranks="4",collective="AllReduce",message_size="4-5GB",'
    'algo_proto="Ring_ll"} 678.263',
    'nccl_collective_exec_time_microseconds{version="v5.1",slurm_job_id="unknown",node="nvl72004-T01",gpu="GPU0",'
    'comm_name="DP Group 0",n_nodes="1",nranks="4",collective="AllReduce",message_size="4-5GB",'
    'algo_proto="Ring_ll"} 9498.47',
    'nccl_p2p_bus_bandwidth_gbs{version="v5.1",slurm_job_id="unknown",node="nvl72004-T01",gpu="GPU0",'
    'comm_name="DP Group 0",n_nodes="1",nranks="4",p2p_operation="Send",message_size="512-513MB"} 464.9',
    'nccl_p2p_exec_time_microseconds{version="v5.1",slurm_job_id="unknown",node="nvl72004-T01",gpu="GPU0",'
    'comm_name="DP Group 0",n_nodes="1",nranks="4",p2p_operation="Send",message_size="512-513MB"} 1154.87',
    "node_cpu_seconds_total 12",
    "nccl_bus_bandwidth_gbs{broken",
]


def test_prometheus_textfiles_both_forms(tmp_path):
    old = _write(tmp_path, "nccl_inspector_metrics_GPU-a.prom", PROM_OLD)
    assert detect_format(old) == "nccl"
    row = _load(old).tables["collectives"].iloc[0]
    assert (row["rank"], row["n_ranks"], row["coll"], row["coll_sn"], row["gpu"]) == (4, 8, "AllReduce", 228924,
                                                                                      "GPU4")
    assert row["exec_time_s"] == pytest.approx(0.061974) and row["busbw_bytes_per_s"] == pytest.approx(485.119e9)
    assert row["algbw_bytes_per_s"] == pytest.approx(277.21e9) and row["msg_size_label"] == "2.00GB"
    run = _load(_write(tmp_path, "nccl_inspector_metrics_GPU-b.prom", PROM_NEW))
    b = run.tables["collective_buckets"]
    assert b[["kind", "coll", "msg_size_bucket"]].values.tolist() == [["coll", "AllReduce", "4-5GB"],
                                                                      ["p2p", "Send", "512-513MB"]]
    assert b["busbw_geomean_bytes_per_s"].tolist() == pytest.approx([678.263e9, 464.9e9])
    assert b["exec_time_mean_s"].tolist() == pytest.approx([9498.47e-6, 1154.87e-6])
    assert b["comm_name"].tolist() == ["DP Group 0"] * 2 and b["n_ranks"].tolist() == [4, 4]
    assert run.meta.report.first_lines == {"malformed Prometheus sample line": [7]}
    assert any("other than NCCL Inspector's" in n for n in run.meta.report.notes)


# --- detection ----------------------------------------------------------------------------------


def test_a_training_log_with_nccl_lines_stays_its_frameworks(tmp_path):
    # NCCL lines before the iterations (NCCL_DEBUG=INFO): the framework's format reads the steps
    preamble = [line for _ in range(80) for line in IB_JOB]  # longer than the sniffers' 8 KiB head
    p = write_megatron(tmp_path, "train.log", preamble + [megatron_line(i, 1000.0) for i in range(10, 60, 10)])
    assert sniff_all(p)["nccl"] == 0.55 and detect_format(p) == "megatron"
    mixed = write_megatron(tmp_path, "mixed.log", [megatron_line(10, 1000.0), IB_JOB[2], megatron_line(20, 1000.0)])
    assert sniff_all(mixed)["nccl"] == 0.0
    # read as nccl on request, the other lines are counted and the note says whose they are
    run = _load(p, format="nccl")
    assert run.meta.extra["nccl"]["networks"] == ["IB"]
    assert any("not NCCL's" in n for n in run.meta.report.notes)


def test_a_file_without_nccl_output_is_refused(tmp_path):
    p = _write(tmp_path, "x.log", ["hello", "world"])
    with pytest.raises(LoadError, match="no NCCL output"):
        nccl.load(p)
    assert sniff_all(p)["nccl"] == 0.0
