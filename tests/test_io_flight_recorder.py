"""PyTorch NCCL Flight Recorder dumps: the restricted reader, the tables, and the hang's culprit.

The real dumps are NVIDIA's two fault scenarios (``flight_recorder/`` of ``MFU_REALDATA``, from
NVIDIA/nvidia-resiliency-ext @ d8686d9 ``tests/attribution/unit/fr_traces/``); the culprits are
compared with that repository's reference outputs (``*_reference.txt``), not with
``fault_injection.log`` (the GPU-error scenario injected ranks 12 and 14; the reference, and the
dumps, name 12 only). The synthetic jobs are written here as JSON or pickle dumps of the same keys.
"""

from __future__ import annotations

import gzip
import io
import json
import os
import pickle
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401  (fixture: MFU_REALDATA, skip when unset, fail when missing)

from mfu_toolkit.analysis import hang_culprits
from mfu_toolkit.facts import LoaderArgumentError
from mfu_toolkit.io import load_run
from mfu_toolkit.io.detect import detect_format
from mfu_toolkit.io.formats import flight_recorder as fr
from mfu_toolkit.run import LoadError, LoadWarning

SCENARIOS = ("gpu_error_1st", "lock_gil_1st")
T0 = 1_758_610_505_000_000_000  # epoch ns


# --- synthetic dumps ------------------------------------------------------------------------------


class Job:
    """A job's process groups and per-rank entries and status, written as one dump per rank."""

    def __init__(self, groups: dict[str, tuple[str, list[int]]]):
        self.groups = groups
        self.world = sorted({r for _, ranks in groups.values() for r in ranks})
        self.entries: dict[int, list[dict]] = {r: [] for r in self.world}
        self.status: dict[tuple[int, str], tuple[int, int]] = {}

    def local(self, rank: int) -> dict[str, int]:
        """Local group ids in creation order, as ProcessGroupNCCL numbers them."""
        own = sorted((n for n, (_, ranks) in self.groups.items() if rank in ranks), key=int)
        return {n: i for i, n in enumerate(own)}

    def op(self, rank: int, pg: str, seq: int, name: str = "all_reduce", *, t: float = 0.0,
           state: str = "scheduled", p2p_seq: int = 0, sizes=((1024, 8),), dtype: str = "BFloat16") -> None:
        is_p2p = name.startswith(("send", "recv"))
        self.entries[rank].append({
            "record_id": len(self.entries[rank]), "pg_id": self.local(rank)[pg],
            "process_group": (pg, self.groups[pg][0]), "collective_seq_id": seq, "p2p_seq_id": p2p_seq,
            "op_id": seq + p2p_seq, "profiling_name": f"nccl:{name}", "time_created_ns": T0 + int(t * 1e9),
            "input_sizes": [list(s) for s in sizes], "output_sizes": [list(s) for s in sizes],
            "input_dtypes": [dtype], "output_dtypes": [dtype], "state": state, "retired": False,
            "time_discovered_started_ns": None, "time_discovered_completed_ns": None, "timeout_ms": 600000,
            "is_p2p": is_p2p, "thread_name": "pt_main_thread", "thread_id": "1"})
        enq, done = self.status.get((rank, pg), (-1, -1))
        self.status[(rank, pg)] = (max(enq, seq), done)

    def done(self, rank: int, pg: str, enqueued: int, completed: int) -> None:
        self.status[(rank, pg)] = (enqueued, completed)

    def dump(self, rank: int) -> dict:
        own = self.local(rank)
        status = {str(i): {"last_enqueued_collective": self.status.get((rank, n), (0, 0))[0],
                           "last_started_collective": -1,
                           "last_completed_collective": self.status.get((rank, n), (0, 0))[1]}
                  for n, i in own.items()}
        config = {n: {"name": n, "desc": self.groups[n][0], "ranks": str(self.groups[n][1])} for n in own}
        return {"version": "2.9", "pg_config": config, "nccl_version": "2.21.5", "pg_status": status,
                "entries": self.entries[rank]}

    def write(self, folder: Path, *, as_json: bool = True, skip: tuple[int, ...] = ()) -> Path:
        folder.mkdir(parents=True, exist_ok=True)
        for r in self.world:
            if r in skip:
                continue
            d = self.dump(r)
            if as_json:
                (folder / f"_dump_{r}").write_text(json.dumps(d))
            else:
                (folder / f"_dump_{r}").write_bytes(pickle.dumps(d, protocol=2))
        return folder


def _four_rank_hang() -> Job:
    """Rank 2's host stops after TP seq 7: ranks 0, 1, 3 wait in the default group at seq 5, rank 3
    waits in TP at seq 8, and rank 3 (stuck) never reaches DP seq 3 that rank 1 did."""
    job = Job({"0": ("default_pg", [0, 1, 2, 3]), "1": ("TENSOR_MODEL_PARALLEL_GROUP", [0, 1]),
               "2": ("TENSOR_MODEL_PARALLEL_GROUP", [2, 3]), "3": ("DATA_PARALLEL_GROUP", [0, 2]),
               "4": ("DATA_PARALLEL_GROUP", [1, 3])})
    for r, t in ((0, 1.0), (1, 1.1), (3, 1.2)):
        job.op(r, "0", 5, t=t, sizes=((4096, 5120),))
    job.done(2, "0", 4, 4)
    job.op(2, "2", 7, "_all_gather_base", t=0.9)
    job.op(3, "2", 7, "_all_gather_base", t=0.95)
    job.op(3, "2", 8, "_reduce_scatter_base", t=1.5)
    job.op(1, "4", 3, t=2.0)
    job.done(3, "4", 2, 2)
    for r, pg in ((0, "1"), (1, "1"), (0, "3"), (2, "3")):
        job.done(r, pg, 11, 11)
    return job


def _culprit_rows(run) -> list[tuple]:
    table = hang_culprits(run)
    return [(r.pg_name, r.kind, r.seq_id, r.missing_ranks, r.reached_ranks) for r in table.itertuples()]


# --- the restricted reader ------------------------------------------------------------------------


class _Calls:
    """Stands in for os.system and records any call (none must happen)."""

    def __init__(self):
        self.calls = []

    def __call__(self, *args):
        self.calls.append(args)
        return 0


class _Payload:
    """Pickles as a call of os.system: pickle.dumps asks __reduce__ for it and runs nothing."""

    def __reduce__(self):
        return (os.system, ("echo pwned",))


# built at import, before os.system is replaced below; pickling asks __reduce__ and calls nothing
PAYLOADS = {p: pickle.dumps({"pg_config": {}, "entries": [_Payload()]}, protocol=p) for p in (2, 4)}
CALL = pickle.dumps(_Payload(), protocol=2)


@pytest.fixture()
def no_system(monkeypatch):
    calls = _Calls()
    monkeypatch.setattr(os, "system", calls)
    return calls


@pytest.mark.parametrize("protocol", [2, 4])
def test_a_pickle_that_calls_a_global_is_refused_naming_the_file(tmp_path, no_system, protocol):
    payload = PAYLOADS[protocol]
    assert b"system" in payload and no_system.calls == []
    path = tmp_path / "_dump_0"
    path.write_bytes(payload)
    assert detect_format(path) == "flight_recorder"  # its marker keys make it look like a dump
    with pytest.raises(LoadError, match=r"_dump_0.*refused: the pickle holds opcode (STACK_)?GLOBAL"):
        load_run(path)
    assert no_system.calls == []


def test_the_unpickler_alone_refuses_every_global(no_system):
    # defence in depth: without the opcode scan, find_class still refuses
    for payload in (CALL, b"\x80\x02cos\nsystem\nX\x02\x00\x00\x00ls\x85R."):
        with pytest.raises(pickle.UnpicklingError, match="global (os|posix|nt).system"):
            fr._PlainUnpickler(io.BytesIO(payload)).load()
    assert no_system.calls == []


@pytest.mark.parametrize("payload, opcode", [
    (b"\x80\x02\x82\x01.", "EXT1"),  # copyreg extension code
    (b"\x80\x02X\x01\x00\x00\x00aQ.", "BINPERSID"),  # persistent id
    (b"\x80\x02}(X\x09\x00\x00\x00pg_configN\x85b.", "BUILD"),
])
def test_other_object_building_opcodes_are_refused(tmp_path, payload, opcode):
    path = tmp_path / "_dump_3"
    path.write_bytes(payload)
    with pytest.raises(LoadError, match=rf"_dump_3.*opcode {opcode}"):
        load_run(path, format="flight_recorder")


def test_a_too_large_or_too_deep_dump_is_refused(tmp_path, realdata):  # noqa: F811
    real = realdata / "flight_recorder" / "gpu_error_1st" / "_dump_0"
    with pytest.raises(LoadError, match=r"_dump_0.*larger than max_dump_bytes=1,000 bytes"):
        load_run(real, max_dump_bytes=1000)
    deep: list = []
    for _ in range(60):
        deep = [deep]
    path = tmp_path / "_dump_1"
    path.write_bytes(pickle.dumps({"pg_config": {}, "entries": deep}, protocol=2))
    with pytest.raises(LoadError, match=r"_dump_1.*nest deeper than max_depth=32"):
        load_run(path)
    with pytest.warns(LoadWarning, match="entry is not a mapping"):  # a looser limit reads it
        assert len(load_run(path, max_depth=80).tables["collectives"]) == 0
    with pytest.raises(LoaderArgumentError, match="max_depth must be a positive integer"):
        load_run(path, format="flight_recorder", max_depth=0)


def test_a_gzipped_dump_inflates_only_within_the_limits(tmp_path):
    job = _four_rank_hang()
    blob = pickle.dumps(job.dump(0), protocol=2)
    path = tmp_path / "_dump_0"
    path.write_bytes(gzip.compress(blob))
    run = load_run(path)
    assert len(run.tables["collectives"]) == 1
    with pytest.raises(LoadError, match="larger than max_dump_bytes"):
        load_run(path, max_dump_bytes=len(blob) - 1)


def test_a_cyclic_or_damaged_pickle_is_counted_not_followed(tmp_path):
    loop: list = []
    loop.append(loop)
    folder = _four_rank_hang().write(tmp_path / "job", as_json=False)
    (folder / "_dump_7").write_bytes(pickle.dumps({"pg_config": {}, "entries": loop}, protocol=2))
    (folder / "_dump_8").write_bytes(pickle.dumps(_four_rank_hang().dump(1), protocol=2)[:-40])  # truncated
    with pytest.warns(LoadWarning):
        run = load_run(folder, format="flight_recorder")
    skipped = run.meta.report.skipped
    assert skipped["entry is not a mapping"] == 1
    assert skipped[fr.UNREADABLE] == 1 and "_dump_8" in run.meta.report.examples[fr.UNREADABLE]
    assert run.meta.extra["ranks"] == [0, 1, 2, 3, 7]


# --- the tables -----------------------------------------------------------------------------------


class _StdlibRestricted(pickle.Unpickler):
    """The Python documentation's "restricting globals" pattern, refusing all: the independent reader."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} is forbidden")


def _raw(path: Path) -> dict:
    with path.open("rb") as f:
        return _StdlibRestricted(f).load()


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_counts_match_the_raw_dumps(realdata, scenario):  # noqa: F811
    folder = realdata / "flight_recorder" / scenario
    raw = {int(p.name.rsplit("_", 1)[1]): _raw(p) for p in folder.glob("_dump_*")}
    run = load_run(folder)
    assert run.meta.source_format == "flight_recorder" and len(run.steps) == 0
    coll = run.tables["collectives"]
    per_rank = coll.groupby("rank").size().reindex(range(16), fill_value=0).to_dict()
    assert per_rank == {r: len(d["entries"]) for r, d in raw.items()}
    assert run.meta.report.lines_read == sum(len(d["entries"]) for d in raw.values())
    assert run.meta.report.skipped == {}
    assert len(run.tables["pg_status"]) == sum(len(d["pg_status"]) for d in raw.values())
    names = {n for d in raw.values() for n in d["pg_config"]}
    pgs = run.tables["process_groups"].set_index("pg_name")
    assert set(pgs.index) == names
    for d in raw.values():
        for n, cfg in d["pg_config"].items():
            assert pgs.at[n, "ranks"] == json.loads(cfg["ranks"])
    t0 = min(e["time_created_ns"] for d in raw.values() for e in d["entries"])
    assert coll["time_created_s"].min() == 0.0
    assert run.meta.extra["t0_wallclock"].startswith(
        __import__("datetime").datetime.fromtimestamp(t0 // 10**9, tz=__import__("datetime").timezone.utc)
        .strftime("%Y-%m-%dT%H:%M:%S"))
    assert set(coll["state"]) == {"scheduled"} and not coll["op"].str.startswith("nccl:").any()
    assert run.meta.extra["flight_recorder_version"] == "2.9" and run.meta.extra["nccl_version"] == "2.27.3"
    assert run.meta.extra["rank_from"] == "file name"
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["n_ranks"]["value"] == 16 and "default process group" in facts["n_ranks"]["text"]
    assert facts["framework"]["value"] == "pytorch"
    assert any("fault_injection.log" in n for n in run.meta.report.notes)


def test_columns_of_the_real_tables(realdata):  # noqa: F811
    run = load_run(realdata / "flight_recorder" / "gpu_error_1st")
    coll = run.tables["collectives"]
    first = coll[(coll["rank"] == 0)].iloc[0]  # rank 0's first entry: nccl:send 0->3 in PG 43 [0, 4, 8, 12]
    assert (first["pg_name"], first["pg_desc"], first["profiling_name"]) == (
        "43", "PIPELINE_MODEL_PARALLEL_GROUP", "nccl:send 0->3")
    assert (first["op"], bool(first["is_p2p"]), first["peer_rank"], first["p2p_seq_id"]) == (
        "send 0->3", True, 12, 11981)
    assert (first["input_sizes"], first["input_dtypes"], first["timeout_ms"]) == ("4096x1x5120", "BFloat16", 180000.0)
    a2a = coll[(coll["rank"] == 13) & (coll["collective_seq_id"] == 20537)].iloc[0]
    assert (a2a["pg_id"], a2a["pg_name"], a2a["input_sizes"], a2a["output_sizes"]) == (11, "74", "4027x5120",
                                                                                        "4096x5120")
    status = run.tables["pg_status"].set_index(["rank", "pg_id"])
    assert status.loc[(12, 11), ["pg_name", "name_from", "enqueued", "completed"]].tolist() == [
        "74", "entries", 20536, 20529]
    assert status.loc[(12, 16), ["pg_name", "name_from"]].tolist() == ["112", "creation order"]


def test_json_and_pickle_dumps_give_the_same_tables(tmp_path):
    job = _four_rank_hang()
    a = load_run(job.write(tmp_path / "json"))
    b = load_run(job.write(tmp_path / "pickle", as_json=False))
    for name in ("collectives", "process_groups", "pg_status"):
        assert a.tables[name].equals(b.tables[name]), name
    assert detect_format(tmp_path / "json" / "_dump_0") == detect_format(tmp_path / "json") == "flight_recorder"


def test_odd_entries_are_counted_never_dropped_silently(tmp_path):
    job = _four_rank_hang()
    d = job.dump(0)
    good = d["entries"][0]
    d["entries"] += [{k: v for k, v in good.items() if k != "state"}, {**good, "state": "exploded"},
                     {**good, "collective_seq_id": -3}, {**good, "time_created_ns": "soon"}, ["not", "a", "dict"]]
    path = tmp_path / "_dump_0"
    path.write_text(json.dumps(d))
    with pytest.warns(LoadWarning):
        run = load_run(path)
    rep = run.meta.report
    assert rep.lines_read == 6
    assert rep.skipped == {"required field missing": 1, "unknown entry state (record kept)": 1,
                           "id is not a non-negative integer": 1,
                           "time is missing, NaN or infinite": 1, "entry is not a mapping": 1}
    assert rep.examples["id is not a non-negative integer"].startswith("collective_seq_id: ")
    assert rep.examples["time is missing, NaN or infinite"].startswith("time_created_ns: ")
    assert rep.first_lines["unknown entry state (record kept)"] == [3]
    assert run.tables["collectives"]["state"].tolist() == ["scheduled", "exploded"]
    with pytest.raises(LoadError, match=r"_dump_0.*required field missing \(state\)"):
        load_run(path, strict=True)


def test_the_rank_comes_from_the_dump_when_it_states_one(tmp_path):
    job = _four_rank_hang()
    (tmp_path / "trace_a.json").write_text(json.dumps({**job.dump(3), "rank": 3}))
    (tmp_path / "rank1").write_text(json.dumps(job.dump(1)))
    (tmp_path / "nameless.json").write_text(json.dumps(job.dump(0)))
    (tmp_path / "README.txt").write_text("how these were made\n")
    with pytest.warns(LoadWarning):
        run = load_run(tmp_path)
    assert run.meta.extra["ranks"] == [1, 3]
    assert run.meta.extra["rank_from"] == "mixed: dump content, file name"
    assert run.meta.report.skipped == {"no rank: the dump states none and its file name ends in no number": 1}
    assert any("README.txt" in n for n in run.meta.report.notes)
    assert run.meta.extra["ranks_without_dump"] == [0, 2]


def test_without_a_default_group_n_ranks_is_the_dumps_read(tmp_path):
    job = Job({"5": ("PIPELINE_MODEL_PARALLEL_GROUP", [0, 1])})
    job.op(0, "5", 0, "send 0->1", p2p_seq=12)
    run = load_run(job.write(tmp_path / "p2p"))
    facts = {f["name"]: f for f in run.meta.facts}
    assert facts["n_ranks"]["value"] == 2 and facts["n_ranks"]["text"].startswith("2 dumps read")
    assert run.tables["collectives"]["peer_rank"].tolist() == [1]


# --- the hang's culprit ---------------------------------------------------------------------------


def _reference(path: Path) -> list[tuple]:
    """Rows of NVIDIA's reference table: ``PGID | Process Group Desc | Op Type | Size | Dtype | Missing Ranks``.

    Its desc column is ``<desc>,<window>`` (the analyzer's own window index, nvidia-resiliency-ext
    ``fr_attribution.py``): the window is dropped before comparing."""
    lines = [ln for ln in path.read_text().splitlines() if ln.strip()]
    assert [c.strip() for c in lines[0].split("|")] == ["PGID", "Process Group Desc", "Op Type", "Size", "Dtype",
                                                        "Missing Ranks"]
    rows = []
    for ln in lines[1:]:
        pgid, desc, op, size, dtype, missing = (c.strip() for c in ln.split("|"))
        rows.append((pgid, desc.rsplit(",", 1)[0], op, size, dtype, [int(x) for x in missing.split(",")]))
    return rows


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_the_culprits_are_the_reference_rows(realdata, scenario):  # noqa: F811
    folder = realdata / "flight_recorder" / scenario
    expected = _reference(folder / f"{scenario}_reference.txt")
    got = hang_culprits(load_run(folder))
    rows = [(r.pg_name, r.pg_desc, r.profiling_name, r.size, r.dtype, r.missing_ranks) for r in got.itertuples()]
    assert rows == expected
    assert got["kind"].tolist() == ["not reached"] and got["no_dump_ranks"].tolist() == [[]]
    injected = json.loads(re.search(r"Fault ranks: (\[[^]]*\])", (folder / "fault_injection.log").read_text())[1])
    assert set(expected[0][-1]) <= set(injected)  # the reference names injected ranks, not always all of them


def test_the_pinned_reference_answers(realdata):  # noqa: F811
    # gpu_error_1st_reference.txt: 74 | EXPERT_MODEL_PARALLEL_GROUP,0 | nccl:all_to_all | 4027x5120 | BFloat16 | 12
    # lock_gil_1st_reference.txt:  72 | EXPERT_MODEL_PARALLEL_GROUP,0 | nccl:all_to_all | 2048x5120 | BFloat16 | 9,14
    gpu = hang_culprits(load_run(realdata / "flight_recorder" / "gpu_error_1st")).iloc[0]
    gil = hang_culprits(load_run(realdata / "flight_recorder" / "lock_gil_1st")).iloc[0]
    assert (gpu["pg_name"], gpu["seq_id"], gpu["size"], gpu["missing_ranks"], gpu["reached_ranks"]) == (
        "74", 20537, "4027x5120", [12], [13, 14, 15])
    assert (gil["pg_name"], gil["seq_id"], gil["size"], gil["missing_ranks"], gil["reached_ranks"]) == (
        "72", 45265, "2048x5120", [9, 14], [8, 10, 11, 12, 13, 15])


def test_every_group_lists_the_consequences_earliest_first(realdata):  # noqa: F811
    pts = hang_culprits(load_run(realdata / "flight_recorder" / "lock_gil_1st"), every_group=True)
    assert pts["time_s"].is_monotonic_increasing and pts["culprit"].sum() == 1
    sends = pts[pts["kind"] == "p2p unmatched"]
    # stage 0 sent to stage 1 ahead of it (8 pipeline groups) and waits in default_pg for stage 1's sends
    assert len(sends) == 9 and not sends["culprit"].any()
    assert set(pts.loc[pts["pg_name"] == "0", "missing_ranks"].iloc[0]) == set(range(8, 16))
    gpu = hang_culprits(load_run(realdata / "flight_recorder" / "gpu_error_1st"), every_group=True)
    # rank 12 never reached PGs 74, 41, 58, 94 and 69; rank 14 reached 74 and waits on 12, though
    # its own GPU never completed PG 42's seq 42806
    assert sorted(gpu.loc[gpu["kind"] == "not reached", "pg_name"]) == ["41", "58", "69", "74", "94"]
    assert gpu.loc[gpu["pg_name"] == "42", ["kind", "missing_ranks"]].iloc[0].tolist() == ["not completed", [14]]


@pytest.mark.parametrize("scenario, drop, expected", [
    ("gpu_error_1st", 12, ("74", 20530, [12], [12])),  # no dump: missing where its first entry would be
    ("lock_gil_1st", 9, ("72", 45265, [9, 14], [9])),  # 9 is missing either way
    ("lock_gil_1st", 8, ("72", 45265, [8, 9, 14], [8])),  # without rank 8's dump, 8 cannot show it arrived
])
def test_a_dropped_dump(tmp_path, realdata, scenario, drop, expected):  # noqa: F811
    folder = tmp_path / scenario
    folder.mkdir()
    for p in (realdata / "flight_recorder" / scenario).glob("_dump_*"):
        if p.name != f"_dump_{drop}":
            shutil.copy(p, folder / p.name)
    run = load_run(folder)
    assert run.meta.extra["ranks_without_dump"] == [drop]
    got = hang_culprits(run)
    assert len(got) == 1
    row = got.iloc[0]
    assert (row["pg_name"], row["seq_id"], row["missing_ranks"], row["no_dump_ranks"]) == expected


@pytest.mark.parametrize("as_json", [True, False])
def test_a_four_rank_job(tmp_path, as_json):
    run = load_run(_four_rank_hang().write(tmp_path / "job", as_json=as_json))
    assert _culprit_rows(run) == [("0", "not reached", 5, [2], [0, 1, 3])]
    got = hang_culprits(run).iloc[0]
    assert (got["profiling_name"], got["size"], got["dtype"], got["time_s"]) == ("nccl:all_reduce", "4096x5120",
                                                                                 "BFloat16", 0.1)
    pts = hang_culprits(run, every_group=True)
    assert pts[["pg_name", "missing_ranks", "culprit"]].values.tolist() == [
        ["0", [2], True], ["2", [2], False], ["4", [3], False]]  # 3 waits on 2: no culprit


def test_a_job_where_every_rank_completed_everything_has_no_culprit(tmp_path):
    job = _four_rank_hang()
    for entries in job.entries.values():
        for e in entries:
            e["state"] = "completed"
    run = load_run(job.write(tmp_path / "done"))
    assert hang_culprits(run).empty and hang_culprits(run, every_group=True).empty
    empty = Job({"0": ("default_pg", [0, 1])})
    empty.done(0, "0", 40, 40)
    empty.done(1, "0", 40, 40)
    run = load_run(empty.write(tmp_path / "idle"))
    assert len(run.tables["collectives"]) == 0 and hang_culprits(run).empty
    assert list(hang_culprits(run).columns) == [c for c in hang_culprits(load_run(job.write(tmp_path / "x"))).columns]


def test_a_send_without_its_recv(tmp_path):
    job = Job({"0": ("default_pg", [0, 1]), "5": ("PIPELINE_MODEL_PARALLEL_GROUP", [0, 1])})
    job.op(0, "5", 3, "send 0->1", p2p_seq=12, t=1.0, sizes=((2048, 1, 5120),))
    job.done(1, "5", 3, 3)
    run = load_run(job.write(tmp_path / "hang"))
    assert _culprit_rows(run) == [("5", "p2p unmatched", 12, [1], [0])]
    assert hang_culprits(run).at[0, "op"] == "send 0->1"
    job.op(1, "5", 3, "recv 1<-0", p2p_seq=12, t=1.2, sizes=((2048, 1, 5120),))  # both posted: in flight
    assert hang_culprits(load_run(job.write(tmp_path / "paired"))).empty


def test_a_collective_one_rank_never_completed(tmp_path):
    job = Job({"0": ("default_pg", [0, 1])})
    job.op(1, "0", 9, t=0.5)
    job.done(0, "0", 9, 9)  # rank 0 completed seq 9; rank 1's GPU never did
    assert _culprit_rows(load_run(job.write(tmp_path / "gpu"))) == [("0", "not completed", 9, [1], [0, 1])]
    job.op(0, "0", 9, t=0.4)  # both pending, all members reached it: stuck, no rank to blame
    run = load_run(job.write(tmp_path / "net"))
    assert hang_culprits(run).empty
    assert hang_culprits(run, every_group=True)["kind"].tolist() == ["stuck"]


def test_ranks_that_wait_on_each_other_are_both_named(tmp_path):
    job = Job({"1": ("TENSOR_MODEL_PARALLEL_GROUP", [0, 1]), "2": ("DATA_PARALLEL_GROUP", [0, 1])})
    job.op(0, "1", 3, t=1.0)
    job.done(0, "2", 5, 5)
    job.op(1, "2", 6, t=1.1)
    job.done(1, "1", 2, 2)
    rows = _culprit_rows(load_run(job.write(tmp_path / "cycle")))
    assert rows == [("1", "not reached", 3, [1], [0]), ("2", "not reached", 6, [0], [1])]


def test_hang_culprits_needs_flight_recorder_tables(tmp_path):
    from mfu_toolkit.run import Run

    with pytest.raises(ValueError, match="no 'collectives' table"):
        hang_culprits(Run())


def test_mfu_analyze_loads_a_folder_of_dumps(tmp_path):
    folder = _four_rank_hang().write(tmp_path / "job", as_json=False)
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(folder)], capture_output=True,
                         text=True, timeout=240)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr and "no timed steps" in out.stdout
    assert "collectives" in out.stdout


def test_the_answer_survives_save_run(tmp_path):
    from mfu_toolkit.run import read_run, save_run

    run = load_run(_four_rank_hang().write(tmp_path / "job"))
    back = read_run(save_run(run, tmp_path / "run.parquet"))
    # list cells (process_groups.ranks) come back as arrays: the answer is the same
    assert hang_culprits(back).equals(hang_culprits(run))


@pytest.mark.parametrize("scenario", SCENARIOS)
def test_mfu_analyze_on_a_folder_of_dumps_names_the_reference_culprit(realdata, scenario):  # noqa: F811
    # the command a team runs on the dumps of a hung job: text and --json name the reference rows
    folder = realdata / "flight_recorder" / scenario
    pgid, desc, op, size, dtype, missing = _reference(folder / f"{scenario}_reference.txt")[0]
    run = [sys.executable, "-m", "mfu_toolkit", "analyze", str(folder)]
    text = subprocess.run(run, capture_output=True, text=True, check=True).stdout
    said = " ".join(text.split())
    assert (f"Rank(s) {', '.join(map(str, missing))} never reached {op} ({size} {dtype}) in process group {pgid} "
            f"({desc})") in said
    doc = json.loads(subprocess.run([*run, "--json"], capture_output=True, text=True, check=True).stdout)
    first = doc["hang"][0]
    assert (first["pg_name"], first["profiling_name"], first["missing_ranks"]) == (pgid, op, missing)
