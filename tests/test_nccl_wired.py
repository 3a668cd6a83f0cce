"""NCCL's own lines inside every text log: the shared stage (mfu_toolkit.io.nccl_info.NcclStage) that a text
format's ``Reader.lines()`` goes through.

Each text format's sample log (tests/_samples.py, or a real log of MFU_REALDATA) is loaded as it is and with
NCCL lines of two versions interleaved (2.18 spellings behind ``[rank0]:``, 2.22+ spellings behind ``0: ``,
some with a timestamp); the steps are the same, each line is counted once, the format's own facts keep their
(shifted) lines and NCCL's facts are added at theirs. The NCCL lines are written here after NCCL's sources
(``src/init.cc``, ``src/transport/net_ib.cc``, ``net_socket.cc``), so every expected value below is read off
the lines in this file by hand.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from _realdata_b import realdata_dir
from _samples import write_megatron

from mfu_toolkit.io import load_run
from mfu_toolkit.io.base import Parsed
from mfu_toolkit.io.nccl_info import NcclStage
from mfu_toolkit.io.reading import Reader

# NCCL 2.18: no API name before ``comm``, bus ids in hex in the channel brackets (up to 2.18.1).
NCCL_218 = [
    "[rank0]:node1:1234:1300 [0] NCCL INFO NCCL version 2.18.1+cuda12.1",
    "[rank0]:node1:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.0.1<0>",
    "[rank0]:node1:1234:1300 [0] NCCL INFO Using network IB",
    "[rank0]:[2024-04-06 02:00:01] node1:1234:1300 [0] NCCL INFO comm 0x55d761db2df0 rank 0 nranks 16 cudaDev 0 "
    "busId 10000 commId 0x1a2b3c4d - Init COMPLETE",
    "[rank0]:node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[10000] -> 1[16000] via P2P/IPC/read",
]
# NCCL 2.22+: the API first, a split's parent, the two spellings of the init timings (2.22 and 2.23+).
NCCL_222 = [
    "0: node2:4321:4400 [0] NCCL INFO NCCL version 2.22.3+cuda12.4",
    "0: node2:4321:4400 [0] NCCL INFO ncclCommInitRank comm 0x7f0011 rank 8 nranks 16 cudaDev 0 nvmlDev 0 "
    "busId 10000 commId 0x1a2b3c4d - Init COMPLETE",
    "0: [2024-04-06 02:00:02] node2:4321:4400 [0] NCCL INFO Init timings - ncclCommInitRank: rank 8 nranks 16 "
    "total 1.25 (kernels 0.20, alloc 0.01, bootstrap 0.50, allgathers 0.01, topo 0.30, graphs 0.02, "
    "connections 0.20, rest 0.01)",
    "0: node2:4322:4401 [1] NCCL INFO Init timings: rank 9 nranks 16 total 0.95 (kernels 0.18, bootstrap 0.40, "
    "allgathers 0.01, topo 0.20, graphs 0.01, connections 0.15, rest 0.00)",
    "0: node2:4321:4400 [0] NCCL INFO ncclCommSplit comm 0x7f0022 rank 0 nranks 8 cudaDev 0 nvmlDev 0 busId 10000 "
    "parent 0x7f0011 splitCount 1 color 1 key 0 - Init COMPLETE",
]
NCCL_LINES = [x for pair in zip(NCCL_218, NCCL_222, strict=True) for x in pair]  # the versions interleaved


def interleave(lines: list[str], extra: list[str]) -> tuple[list[str], list[int]]:
    """``lines`` with ``extra`` spread among them (one after every ``k``-th line, the first before line 1);
    the mixed lines and, for each line of ``lines``, its 1-based number in the mixed file."""
    k = max(1, len(lines) // (len(extra) + 1))
    out, where, todo = [], [], list(extra)
    for i, text in enumerate(lines):
        if todo and i % k == 0:
            out.append(todo.pop(0))
        out.append(text)
        where.append(len(out))
    return out + todo, where


def _load(path: Path, fmt: str):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, format=fmt)


def _shape(note: str, path: Path) -> str:
    """A note with its file and its numbers left out (line numbers shift when lines are inserted)."""
    return re.sub(r"\d+", "#", note.replace(str(path), "<log>").replace(path.name, "<log>"))


def _nccl_line(mixed: list[str], text: str) -> int:
    return mixed.index(text) + 1


def _same_rows(a, b, where: list[int]) -> None:
    """Equal tables, but for a ``line`` column, which holds each row's line in the mixed file."""
    if "line" in a.columns:
        moved = a["line"].map(lambda ln: where[int(ln) - 1] if ln > 0 else ln)
        assert moved.tolist() == b["line"].tolist()
        a, b = a.drop(columns="line"), b.drop(columns="line")
    if "detail" in a.columns:  # MLPerf events name their lines ("lines 7-7"): those move with the file too
        a = a.assign(detail=a["detail"].map(lambda d: re.sub(
            r"(lines? )(\d+)(-(\d+))?", lambda m: m[1] + str(where[int(m[2]) - 1]) + (
                f"-{where[int(m[4]) - 1]}" if m[4] else ""), d) if isinstance(d, str) else d))
    assert a.equals(b)


def _checked_pair(plain: Path, fmt: str, tmp_path: Path) -> tuple[object, object, list[str]]:
    """Load ``plain`` and its copy with NCCL_LINES interleaved; assert what must not change; both runs."""
    raw = plain.read_bytes().decode("utf-8")
    lines = raw.split("\n")
    ends_open = lines[-1] != ""
    body = lines if ends_open else lines[:-1]
    mixed, where = interleave(body, NCCL_LINES)
    p = tmp_path / f"mixed_{plain.name}"
    p.write_text("\n".join(mixed) + ("" if ends_open else "\n"), encoding="utf-8")
    a, b = _load(plain, fmt), _load(p, fmt)
    _same_rows(a.steps, b.steps, where)
    _same_rows(a.events, b.events, where)
    ra, rb = a.meta.report, b.meta.report
    assert rb.lines_read == ra.lines_read + len(NCCL_LINES)  # each NCCL line counted once, by the stage
    assert rb.skipped == ra.skipped and rb.rows_kept == ra.rows_kept
    nccl_notes = [n for n in rb.notes if "NCCL" in n]
    assert sorted(_shape(n, p) for n in rb.notes if n not in nccl_notes) == sorted(_shape(n, plain) for n in ra.notes)
    # the format's own facts: the same values, each at its line's number in the mixed file
    own = [(f["name"], f["value"], int(f["where"].rsplit(":", 1)[1])) for f in a.meta.facts if ":" in f["where"]]
    moved = {(n, repr(v), where[ln - 1]) for n, v, ln in own}
    assert moved <= {(f["name"], repr(f["value"]), int(f["where"].rsplit(":", 1)[1])) for f in b.meta.facts}
    assert "nccl" not in a.meta.extra and not any(t.startswith("nccl_") for t in a.tables)
    return a, b, mixed


def _assert_nccl_facts(run, mixed: list[str], path_name: str) -> None:
    """NCCL's facts, each at the line it is on (found in the mixed lines by their text)."""
    got = {(f["name"], f["value"]): f["where"] for f in run.meta.extra["nccl_facts"]}
    at = {
        ("nccl_version", "2.18.1"): _nccl_line(mixed, NCCL_218[0]),
        ("nccl_version", "2.22.3"): _nccl_line(mixed, NCCL_222[0]),
        ("n_ranks", 16): _nccl_line(mixed, NCCL_222[1]),  # the first root communicator of 16 (ncclCommInitRank)
        ("network", "IB"): _nccl_line(mixed, NCCL_218[2]),
        ("transport", "P2P/IPC"): _nccl_line(mixed, NCCL_218[4]),
        ("init_total_s", 1.25): _nccl_line(mixed, NCCL_222[2]),  # rank 8's 1.25 s > rank 9's 0.95 s
    }
    assert {k: int(v.rsplit(":", 1)[1]) for k, v in got.items()} == at
    assert all(v.rsplit(":", 1)[0].endswith(path_name) for v in got.values())
    summary = run.meta.extra["nccl"]
    assert summary["nccl_versions"] == ["2.18.1", "2.22.3"] and summary["cuda_version"] == "12.1"
    assert (summary["n_communicators"], summary["n_split_communicators"]) == (3, 1)  # 0x55d…, 0x7f0011, 0x7f0022
    assert summary["nics"] == ["mlx5_0", "mlx5_1"] and summary["socket_fallback"] is None
    init = run.tables["nccl_init_timings"]
    assert init[["rank", "total_s", "spelling"]].values.tolist() == [[8, 1.25, "new"], [9, 0.95, "old"]]
    assert init["line"].tolist() == [_nccl_line(mixed, NCCL_222[2]), _nccl_line(mixed, NCCL_222[3])]
    digest = next(n for n in run.meta.report.notes if "are NCCL's own" in n)
    assert digest.startswith("10 line(s) are NCCL's own") and "several versions in one log" in digest
    assert f"up to 1.25 s (rank 8 of 16, line {_nccl_line(mixed, NCCL_222[2])}" in digest


# --- each text format's sample ------------------------------------------------------------------------


def test_megatron_sample_with_nccl_lines(tmp_path):
    plain = write_megatron(tmp_path)
    run, mixed_run, mixed = _checked_pair(plain, "megatron", tmp_path)
    _assert_nccl_facts(mixed_run, mixed, "mixed_train.log")
    facts = {f["name"]: f for f in mixed_run.meta.facts}
    assert facts["n_ranks"]["value"] == 16
    assert facts["n_ranks"]["text"].startswith("ncclCommInitRank comm 0x7f0011 rank 8")
    assert mixed_run.meta.n_accelerators == run.meta.n_accelerators  # a rank count, not a device count: unused
    assert len(mixed_run.steps) == 30  # iterations 1-30 at log interval 10


REAL = [  # (format, folder, file): a real log of each text format
    ("megatron", "megatron", "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log"),
    ("deepspeed", "deepspeed", "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-no-MoE.log"),
    ("torchtitan", "torchtitan", "pytorch-torchtitan_pr1437_rank0_prefixed.log"),
    ("nemo", "nemo", "NVIDIA_NeMo_resiliency-demo_cell14_baseline.extracted.log"),
    ("hf_trainer", "hf_trainer", "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt"),
    ("maxtext", "maxtext", "AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh"),
    ("llamafactory", "llamafactory", "syGOAT_Mistral-v0.2-Translator-bf16_trainer_log.jsonl"),
    ("mlperf", "mlperf", "v4.1_Fujitsu_GX2560M7_H100_SXM_80GBx4_dlrm_dcnv2_result_0.txt"),
]


@pytest.mark.parametrize(("fmt", "folder", "name"), REAL, ids=[r[0] for r in REAL])
def test_each_text_format_reads_nccl_lines_as_nccls(fmt, folder, name, tmp_path):
    src = realdata_dir(folder, name)
    plain = tmp_path / name
    plain.write_bytes(src.read_bytes())
    run, mixed_run, mixed = _checked_pair(plain, fmt, tmp_path)
    assert len(run.steps) > 0
    _assert_nccl_facts(mixed_run, mixed, f"mixed_{name}")
    own = {f["name"] for f in run.meta.facts}
    ranks = [f for f in mixed_run.meta.facts if f["name"] == "n_ranks"]
    if "n_ranks" in own or "n_accelerators" in own:  # the log states its world size: compared, not doubled
        assert len(ranks) == sum(f["name"] == "n_ranks" for f in run.meta.facts)
    else:
        assert [f["value"] for f in ranks] == [16]


def test_a_last_line_of_nccls_without_a_line_break_leaves_the_formats_last_line_whole(tmp_path):
    src = realdata_dir("torchtitan", "pytorch-torchtitan_pr1437_rank0_prefixed.log")
    text = src.read_text()
    assert text.endswith("\n")
    p = tmp_path / "cut.log"
    p.write_text(text + NCCL_222[0])  # NCCL's line is the last, cut before its line break
    a, b = _load(src, "torchtitan"), _load(p, "torchtitan")
    assert a.steps.equals(b.steps) and a.meta.report.skipped == b.meta.report.skipped
    # torchtitan counts every line, the empty one after the final break too: the stage gives it one
    assert b.meta.report.lines_read == a.meta.report.lines_read + 1
    assert b.meta.extra["nccl"]["nccl_version"] == "2.22.3"


# --- socket fallback and a world-size conflict -------------------------------------------------------

SOCKET = [
    "node1:1234:1300 [0] NCCL INFO NCCL version 2.22.3+cuda12.4",
    "node1:1234:1300 [0] NCCL INFO NET/IB : No device found.",
    "node1:1234:1300 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>",
    "node1:1234:1300 [0] NCCL INFO Using network Socket",
    "node1:1234:1300 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/Socket/0",
]


def test_a_fallback_to_sockets_is_a_fact_with_its_reason(tmp_path):
    lines = [*SOCKET[:2], *write_megatron(tmp_path, "p.log").read_text().splitlines(), *SOCKET[2:]]
    p = tmp_path / "socket.log"
    p.write_text("\n".join(lines) + "\n")
    run = _load(p, "megatron")
    fb = [f for f in run.meta.extra["nccl_facts"] if f["name"] == "socket_fallback"]
    # the first line that shows sockets: 'Using network Socket', line 2 + 8 sample lines + 2 = 12
    assert fb == [{"name": "socket_fallback", "value": True, "where": f"{p}:12", "text": "Using network Socket"}]
    detail = run.meta.extra["nccl"]["socket_fallback"]
    assert detail["reason"] == "NCCL found no IB/RoCE device (NET/IB : No device found, line 2)"
    assert detail["traffic"].startswith("1 channel connection(s) carry collectives over TCP sockets")
    note = next(n for n in run.meta.report.notes if "fell back to sockets" in n)
    assert "line 12 'Using network Socket'" in note and "No device found, line 2" in note


def test_a_world_size_that_differs_from_nccls_is_a_note_naming_both_lines(tmp_path):
    sample = write_megatron(tmp_path, "p.log").read_text().splitlines()
    lines = ["using world size: 8, data-parallel size: 8", *NCCL_218, *sample]
    p = tmp_path / "conflict.log"
    p.write_text("\n".join(lines) + "\n")
    run = _load(p, "megatron")
    ranks = [(f["value"], f["where"]) for f in run.meta.facts if f["name"] == "n_ranks"]
    assert ranks == [(8, f"{p}:1")]  # the log's own value stays its fact; NCCL's is not a second one
    note = next(n for n in run.meta.report.notes if "world size differs" in n)
    assert f"n_ranks is 8 at {p}:1" in note and f"n_ranks 16 at {p}:5" in note  # NCCL_218[3] is line 1 + 4
    assert next(f for f in run.meta.extra["nccl_facts"] if f["name"] == "n_ranks")["where"] == f"{p}:5"


def test_an_agreeing_world_size_adds_no_note_and_no_second_fact(tmp_path):
    sample = write_megatron(tmp_path, "p.log").read_text().splitlines()
    p = tmp_path / "agree.log"
    p.write_text("\n".join(["using world size: 16, data-parallel size: 16", *NCCL_218, *sample]) + "\n")
    run = _load(p, "megatron")
    assert [f["value"] for f in run.meta.facts if f["name"] == "n_ranks"] == [16]
    assert not any("differs" in n for n in run.meta.report.notes)


def test_a_log_without_nccl_lines_is_loaded_as_before(tmp_path):
    run = _load(write_megatron(tmp_path, "plain.log"), "megatron")
    assert "nccl" not in run.meta.extra and "nccl_facts" not in run.meta.extra
    assert not any("NCCL" in n for n in run.meta.report.notes)


# --- a real log that holds NCCL lines -----------------------------------------------------------------


def test_the_lingua_readme_states_its_nccl_lines():
    """SeunghyunSEO/lingua exp_logs/README.md quotes a 2×A100 run whose NCCL lines are lines 102-109:
    102 ``threadThresholds 8/8/64 | 16/8/64 | 512 | 512`` (a kind not read), 103 ``24 coll channels, 24 collnet
    channels, 0 nvls channels, 32 p2p channels, 32 p2p channels per peer``, 104-105 ``NCCL_WORK_FIFO_DEPTH set by
    environment to 4194304.`` (ranks 1 and 0), 106-107 ``TUNER/Plugin: Failed to find ncclTunerPlugin_v2, …``
    (not read), 108 ``ncclCommInitRank comm 0x55d761db2df0 rank 1 nranks 2 cudaDev 1 nvmlDev 1 busId 16000
    commId 0xb3609cbb6ba7a88a - Init COMPLETE`` and 109 the same for rank 0. No text format reads the README's
    steps (Lingua's own step lines), so the stage is run as a text format's Reader runs it."""
    src = realdata_dir("accelerator_info", "SeunghyunSEO_lingua_exp_logs_README_2xA100.md")
    stage = NcclStage()
    reader = Reader(src, "torchtitan", nccl=stage)
    kept = [ln for ln, _ in reader.lines()]
    assert not set(range(102, 110)) & set(kept) and {101, 110} <= set(kept)
    parsed = Parsed()
    stage.state(parsed, reader)
    assert reader.report.lines_read == 8
    assert parsed.extra["nccl_facts"] == [{"name": "n_ranks", "value": 2, "where": f"{src}:108",
                                           "text": "ncclCommInitRank comm 0x55d761db2df0 rank 1 nranks 2 cudaDev 1 "
                                                   "nvmlDev 1 busId 16000 commId 0xb3609cbb6ba7a88a - Init COMPLETE"}]
    assert [(f.name, f.value, f.where) for f in parsed.facts] == [("n_ranks", 2, f"{src}:108")]
    summary = parsed.extra["nccl"]
    assert (summary["info_lines"], summary["info_lines_unread"]) == (8, 3)  # 102, 106, 107
    assert summary["env"] == {"NCCL_WORK_FIFO_DEPTH": "4194304"} and summary["nccl_version"] is None
    comms = parsed.tables["nccl_communicators"]
    assert comms[["rank", "cuda_dev", "nvml_dev", "bus_id"]].values.tolist() == [[1, 1, 1, "16000"],
                                                                                [0, 0, 0, "10000"]]
    assert reader.report.notes[0].startswith("8 line(s) are NCCL's own")
    assert "NCCL's lines: n_ranks 2 from line 108: the largest communicator, a root one (not split)" in \
        reader.report.notes


def test_a_notebooks_cell_outputs_go_through_the_same_stage(tmp_path):
    """The NeMo embedding notebook (cell 16 prints the steps): NCCL lines added to that cell's stdout are read as
    NCCL's, as in a text log; the steps are those of the notebook as it is."""
    src = realdata_dir("nemo", "NVIDIA_NeMo_E2E-Embedding-Finetuning_2gpu.ipynb")
    nb = json.loads(src.read_text())
    out = next(o for o in nb["cells"][16]["outputs"] if o.get("name") == "stdout")
    text, _ = interleave(list(out["text"]), [s + "\n" for s in NCCL_LINES])
    out["text"] = text
    p = tmp_path / "mixed.ipynb"
    p.write_text(json.dumps(nb, indent=1))
    a, b = _load(src, "nemo"), _load(p, "nemo")
    assert a.steps.drop(columns="line").equals(b.steps.drop(columns="line"))
    assert a.meta.report.skipped == b.meta.report.skipped
    assert b.meta.report.lines_read == a.meta.report.lines_read + len(NCCL_LINES)
    assert b.meta.extra["nccl"]["nccl_versions"] == ["2.18.1", "2.22.3"]
    where = {f["name"]: f["where"] for f in b.meta.extra["nccl_facts"] if f["name"] in ("n_ranks", "init_total_s")}
    lines = p.read_text().split("\n")  # a notebook's line numbers are its file's: the line holding the string
    assert NCCL_222[1] in lines[int(where["n_ranks"].rsplit(":", 1)[1]) - 1]
    assert NCCL_222[2] in lines[int(where["init_total_s"].rsplit(":", 1)[1]) - 1]
    # the notebook's own n_ranks (Lightning's 'Starting with 1 processes') stays its fact; NCCL's 16 differs
    assert [f["value"] for f in b.meta.facts if f["name"] == "n_ranks"] == [1]
    assert any("world size differs" in n for n in b.meta.report.notes)


def test_a_second_pass_over_the_file_takes_nccls_lines_out_again_and_records_them_once(tmp_path):
    p = tmp_path / "twice.log"
    p.write_text("a\n" + "\n".join(NCCL_222[:2]) + "\nb\n")
    stage = NcclStage()
    reader = Reader(p, "megatron", nccl=stage)
    first, second = list(reader.lines()), list(reader.lines())
    assert first == second == [(1, "a"), (4, "b"), (5, "")]  # lines 2 and 3 are NCCL's
    assert list(reader.lines(p)) == first and stage.taken == 2
    assert len(stage.scanner.result().communicators) == 1  # not two copies of the one communicator
    other = tmp_path / "other.log"
    other.write_text(NCCL_222[0] + "\n")
    assert list(reader.lines(other)) == [(1, NCCL_222[0]), (2, "")]  # another file is read as it is


def test_real_split_and_socket_lines_inside_a_megatron_log(tmp_path):
    """The 13 lines of the H800 excerpt in MFU_REALDATA's nccl/ folder (one node, 4 ranks), verbatim, before the
    Megatron sample: line 2 is the first ``Using network Socket``, lines 9-12 are ``bootstrapSplit: … nranks 4``
    (split communicators: no world size), lines 1, 3, 5, 7 ``Using non-device net plugin version 0`` (a kind
    the scanner does not read), line 13 ``comm 0x7f5d10e6e7d0 rank 0 nranks 4 … - Init START`` (the split's)."""
    excerpt = realdata_dir("nccl", "NVIDIA_nccl_issue1609_h800_4rank_comm_split.excerpt.redacted.log")
    ours = excerpt.read_text().splitlines()
    assert len(ours) == 13 and ours[1] == "<host>:532:1764 [1] NCCL INFO Using network Socket"
    sample = write_megatron(tmp_path, "p.log")
    p = tmp_path / "split.log"
    p.write_text("\n".join([*ours, *sample.read_text().splitlines()]) + "\n")
    run, plain = _load(p, "megatron"), _load(sample, "megatron")
    assert run.steps.equals(plain.steps) and run.meta.report.lines_read == plain.meta.report.lines_read + 13
    assert not any(f["name"] == "n_ranks" for f in run.meta.facts)  # a split's nranks is its group's
    nccl = run.meta.extra["nccl"]
    assert (nccl["n_split_communicators"], nccl["info_lines"], nccl["info_lines_unread"]) == (4, 13, 4)
    fb = nccl["socket_fallback"]
    assert (fb["line"], fb["processes"]) == (2, 4)
    assert fb["reason"].startswith("no IB/RoCE device or network plugin was usable")
    notes = run.meta.report.notes
    assert "NCCL's lines: 4 split communicator(s) of 4 ranks: a split's nranks is its group's size, not the " \
           "world's, and no root communicator states the world size (n_ranks not stated)" in notes
    assert any(n.startswith("NCCL's lines: NCCL fell back to sockets (TCP), line 2 'Using network Socket' "
                            "(4 process(es))") for n in notes)


def test_only_lines_that_name_nccl_reach_the_scanner_and_torchs_warnings_stay_the_logs(tmp_path, monkeypatch):
    """One substring test per line comes before the scanner; PyTorch's ``ProcessGroupNCCL`` warnings (as the
    DeepSpeed logs of MFU_REALDATA print them) name NCCL but are not NCCL's lines."""
    from mfu_toolkit.io import nccl_info

    fed: list[int] = []
    feed = nccl_info.NcclScanner.feed
    monkeypatch.setattr(nccl_info.NcclScanner, "feed", lambda self, ln, text: fed.append(ln) or feed(self, ln, text))
    torch_warning = ("[rank3]:[W102 15:45:34.866823429 ProcessGroupNCCL.cpp:4115] [PG ID 0 PG GUID 0 Rank 3]  using "
                     "GPU 3 to perform barrier as devices used by this process are currently unknown.")
    sample = write_megatron(tmp_path, "p.log").read_text().splitlines()
    p = tmp_path / "torch.log"
    p.write_text("\n".join([torch_warning, *sample, NCCL_222[0]]) + "\n")
    run = _load(p, "megatron")
    assert fed == [1, 10]  # the warning and NCCL's version line; no other line reached the scanner
    assert run.meta.report.lines_read == _load(tmp_path / "p.log", "megatron").meta.report.lines_read + 2
    assert "1 line(s) are NCCL's own" in next(n for n in run.meta.report.notes if "NCCL's own" in n)


def test_mfu_analyze_shows_nccls_facts_in_its_own_block(tmp_path, capsys):
    # the answer lists what NCCL's lines state, each at its line, apart from the facts the MFU used; the JSON
    # carries them under holds.nccl; a log without NCCL lines has neither (its output is unchanged)
    from mfu_toolkit.cli import main

    plain = write_megatron(tmp_path)
    _, _, mixed = _checked_pair(plain, "megatron", tmp_path)
    path = tmp_path / f"mixed_{plain.name}"
    assert main(["analyze", str(path)]) == 0
    text = capsys.readouterr().out
    block = text.split("From NCCL's lines", 1)[1].split("\n\n", 1)[0]
    version_line = _nccl_line(mixed, NCCL_218[0])
    assert "nccl_version  2.18.1" in block and f"{path.name}:{version_line}" in " ".join(block.split())
    assert main(["analyze", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {f["name"] for f in doc["holds"]["nccl"]} >= {"nccl_version", "n_ranks", "network"}
    assert main(["analyze", str(plain)]) == 0
    assert "From NCCL's lines" not in capsys.readouterr().out
    assert main(["analyze", str(plain), "--json"]) == 0
    assert "nccl" not in json.loads(capsys.readouterr().out)["holds"]
