"""MLPerf DLRM-DCNv2 from every submitter: dense MFU beside embedding bandwidth, pinned to the raw records.

Every expected figure is computed here from the logs' own ``:::MLLOG`` lines (read with ``json``, not with the
toolkit's loader), the ``dlrm-dcnv2`` preset's hand-counted FLOPs (tests/test_flops_recsys.py) and embedding bytes
(tests/test_recsys_bytes.py), and the sourced peaks and bandwidths of the registry.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from _realdata import files, realdata  # noqa: F401

from mfu_toolkit.analysis import account, build_answer
from mfu_toolkit.analysis.recsys import (
    MLPERF_SYSTEM_DESCRIPTIONS,
    embedding_bandwidth,
    mlperf_dlrm_table,
    recsys_answer,
)
from mfu_toolkit.render import answer_text
from mfu_toolkit.render.json import answer_dict
from mfu_toolkit.run import Run, RunMeta, make_steps

# Training FLOPs per sample of the MLPerf reference DLRM-DCNv2 (hand count in tests/test_flops_recsys.py) from the
# reference configuration, https://github.com/mlcommons/training/tree/master/recommendation_v2/torchrec_dlrm
# (embedding dim 128, bottom MLP 13-512-256-128, 3 DCNv2 cross layers of rank 512 on 27 x 128 = 3456 inputs, top MLP
# 3456-1024-1024-512-256-1): 3 x 2 x (bottom 170,496 + cross 10,616,832 + top 5,243,136 multiply-adds).
FLOPS = 3 * 2 * (13 * 512 + 512 * 256 + 256 * 128 + 3 * (3456 * 512 + 512 * 3456)
                 + 3456 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256)
BYTES = 214 * 128 * 4 * 5  # lookups, update read + write, Adagrad state read + write (tests/test_recsys_bytes.py)
# Peaks (bf16 dense) and HBM bandwidths: the vendors' datasheets, as accelerators.csv / memory_bandwidth.csv hold them
PEAK = {"H100 SXM": 989.4e12, "H200 SXM": 989.4e12, "B200": 2250e12, "GB200": 2500e12}  # nvidia.com h100, h200,
HBM = {"H100 SXM": 3.35e12, "H200 SXM": 4.8e12, "B200": 8.0e12, "GB200": 8.0e12}  # hgx, gb200-nvl72 pages

# file -> (round, submitter, accelerator the log names or None, N the log states or None)
LOGS = {
    "v4.1_Fujitsu_GX2560M7_H100_SXM_80GBx4_dlrm_dcnv2_result_0.txt": ("4.1", "Fujitsu", "H100 SXM", 4),
    "v4.1_NVIDIA_h200_ngc24.04_merlin_hugectr_dlrm_dcnv2_result_0.txt": ("4.1", "NVIDIA", "H200 SXM", None),
    "v5.0_NVIDIA_nyx_n1_ngc25.03_hugectr_dlrm_dcnv2_result_0.txt": ("5.0", "NVIDIA", "B200", None),
    "v5.0_NVIDIA_tyche_ngpu64_ngc25.03_hugectr_dlrm_dcnv2_result_0.txt": ("5.0", "NVIDIA", "GB200", 64),
    "v5.0_QCT_D74H-7U_dlrm_dcnv2_result_0.txt": ("5.0", "QCT", None, 8),
}


def raw(path: Path) -> dict:
    """What the raw records say: throughput, timed run, evaluations, samples trained, batch, optimizer."""
    recs = [json.loads(line[len(":::MLLOG "):]) for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith(":::MLLOG ")]

    def first(key):
        return next(r for r in recs if r["key"] == key)

    t0, t1 = first("run_start")["time_ms"], first("run_stop")["time_ms"]
    evals = sum(b["time_ms"] - a["time_ms"] for a, b in zip([r for r in recs if r["key"] == "eval_start"],
                                                             [r for r in recs if r["key"] == "eval_stop"],
                                                             strict=True))
    trained = first("run_stop")["metadata"]["epoch_num"] * first("train_samples")["value"]
    return {"throughput": first("tracked_stats")["value"]["throughput"], "ttt_s": (t1 - t0) / 1000,
            "train_s": (t1 - t0 - evals) / 1000, "trained": trained, "gbs": first("global_batch_size")["value"],
            "org": first("submission_org")["value"], "platform": first("submission_platform")["value"],
            "opt": first("opt_name")["value"]}


@pytest.fixture(scope="module")
def dlrm_logs(realdata):  # noqa: F811
    found = files(realdata / "mlperf", "*dlrm_dcnv2*")
    assert sorted(p.name for p in found) == sorted(LOGS)
    return found


@pytest.fixture(scope="module")
def table(dlrm_logs):
    return mlperf_dlrm_table(dlrm_logs).set_index("file")


@pytest.fixture(scope="module")
def table_with_systems(dlrm_logs):
    return mlperf_dlrm_table(dlrm_logs, systems=MLPERF_SYSTEM_DESCRIPTIONS).set_index("file")


def test_one_row_per_log_with_the_raw_records(dlrm_logs, table):
    for path in dlrm_logs:
        r, row = raw(path), table.loc[path.name]
        rnd, submitter, acc, n = LOGS[path.name]
        named = row["accelerator"] if isinstance(row["accelerator"], str) else None
        assert (row["round"], row["submitter"], named) == (rnd, submitter, acc)
        assert row["n_accelerators"] == n if n is not None else pd.isna(row["n_accelerators"])
        assert (row["submission_org"], row["platform"], row["global_batch"]) == (r["org"], r["platform"], r["gbs"])
        assert row["samples_per_s"] == r["throughput"]  # the log's tracked_stats throughput, as printed
        assert "tracked_stats" in row["samples_per_s_counter"]
        assert row["time_to_train_s"] == pytest.approx(r["ttt_s"], abs=1e-9)
        assert row["samples_trained"] == pytest.approx(r["trained"], rel=1e-8)  # epoch_num x train_samples
        assert row["samples_per_s_epoch_num"] == pytest.approx(r["trained"] / r["ttt_s"], rel=1e-8)
        assert row["samples_per_s_training"] == pytest.approx(r["trained"] / r["train_s"], rel=1e-8)
        assert row["optimizer"] == r["opt"] == "adagrad"
        assert row["training_flops_per_sample"] == FLOPS == 96_182_784
        assert row["embedding_bytes_per_sample"] == BYTES == 547_840
    # the log's throughput and its epoch counters agree over the timed run (within 0.2 %)
    assert ((table["samples_per_s"] / table["samples_per_s_epoch_num"] - 1).abs() < 2e-3).all()


def test_fujitsu_writes_nvidia_as_its_submission_org(table):
    row = table.loc["v4.1_Fujitsu_GX2560M7_H100_SXM_80GBx4_dlrm_dcnv2_result_0.txt"]
    assert row["submitter"] == "Fujitsu" and row["submission_org"] == "NVIDIA"


def test_dense_mfu_and_embedding_bandwidth_from_the_raw_records(dlrm_logs, table, table_with_systems):
    for path in dlrm_logs:
        r, (_, _, acc, n) = raw(path), LOGS[path.name]
        row, given = table.loc[path.name], table_with_systems.loc[path.name]
        if acc is None or n is None:  # the log alone does not say: unknown, with the reason
            assert math.isnan(row["dense_mfu"]) and math.isnan(row["embedding_bw_utilisation"])
            assert row["reason"] == ("the log does not state the accelerator count N" if n is None else
                                     "the log does not name the accelerator, so its peak FLOP/s and memory "
                                     "bandwidth are unknown")
            desc = MLPERF_SYSTEM_DESCRIPTIONS[r["platform"]]
            acc, n = acc or desc["accelerator"], n or desc["n_accelerators"]
            assert given["accelerator"] == acc and given["n_accelerators"] == n and "github.com" in (
                given["accelerator_from"] + given["n_from"])
            row = given
        for key, rate in (("", r["throughput"]), ("_training", r["trained"] / r["train_s"])):
            assert row["dense_mfu" + key] == pytest.approx(rate * FLOPS / (n * PEAK[acc]), rel=1e-7)
            assert row["embedding_bw_utilisation" + key] == pytest.approx(rate * BYTES / (n * HBM[acc]), rel=1e-7)


def test_the_comparison_table_as_reported(table_with_systems):
    t = table_with_systems
    got = {f.split("_")[1] + "/" + f.split("_")[2]: (round(r["dense_mfu"] * 100, 1),
                                                   round(r["embedding_bw_utilisation"] * 100, 1),
                                                   round(r["time_to_train_min"], 2))
           for f, r in t.iterrows()}
    assert got == {
        "Fujitsu/GX2560M7": (17.8, 30.0, 7.15),
        "NVIDIA/h200": (18.3, 21.5, 3.49),
        "NVIDIA/nyx": (12.2, 19.6, 2.14),
        "NVIDIA/tyche": (5.0, 9.0, 0.83),
        "QCT/D74H-7U": (16.3, 19.1, 4.18),
    }
    assert "2 FLOPs/MAC" in t.attrs["flops_conventions"] and t.attrs["dtype"] == "bf16"
    assert any("adagrad" in c for c in t.attrs["bytes_conventions"])


def test_fujitsu_mfu_is_the_hand_count(dlrm_logs):
    """The note 'Fujitsu reads 20.5 % MFU': the preset's FLOPs are the reference's, and 20.5 % is the
    training-only (steady-state) rate; over MLPerf's timed run, evaluations included, it is 17.8 %."""
    path = next(p for p in dlrm_logs if "Fujitsu" in p.name)
    r = raw(path)
    from mfu_toolkit.inputs import apply_inputs
    from mfu_toolkit.io import load_run

    answer = build_answer(apply_inputs(load_run(path), preset="dlrm-dcnv2"))
    steady = answer.headline["steady_state_mfu"]
    by_hand = r["trained"] / r["train_s"] * FLOPS / (4 * 989.4e12)  # 20.44 %: training intervals, evals out
    assert by_hand == pytest.approx(0.2044, abs=5e-5)
    assert steady == pytest.approx(by_hand, rel=5e-3)  # the ideal step: the median interval, not the mean
    assert round(steady * 100, 1) == 20.5
    assert r["throughput"] * FLOPS / (4 * 989.4e12) == pytest.approx(0.1783, abs=5e-5)  # the timed run's rate
    assert answer.headline["numerator"]["flops_per_unit"] == FLOPS


def test_the_reference_forward_flops_by_an_independent_counter():
    """The preset's 32,060,928 forward FLOPs per sample, counted by torch's FlopCounterMode on a plain
    PyTorch replica of the reference's layer sizes (no toolkit code in the count)."""
    torch = pytest.importorskip("torch")
    from torch.utils.flop_counter import FlopCounterMode

    lin = torch.nn.Linear

    class CrossLowRank(torch.nn.Module):
        def __init__(self, d, r, layers):
            super().__init__()
            self.v = torch.nn.ModuleList(lin(d, r, bias=False) for _ in range(layers))
            self.w = torch.nn.ModuleList(lin(r, d) for _ in range(layers))

        def forward(self, x0):
            x = x0
            for v, w in zip(self.v, self.w, strict=True):
                x = x0 * w(v(x)) + x
            return x

    bottom = torch.nn.Sequential(lin(13, 512), torch.nn.ReLU(), lin(512, 256), torch.nn.ReLU(), lin(256, 128))
    cross = CrossLowRank(27 * 128, 512, 3)
    top = torch.nn.Sequential(lin(3456, 1024), lin(1024, 1024), lin(1024, 512), lin(512, 256), lin(256, 1))
    batch = 4
    with FlopCounterMode(display=False) as mode:
        dense = bottom(torch.randn(batch, 13))
        x0 = torch.cat([dense, torch.randn(batch, 26 * 128)], dim=1)
        top(cross(x0))
    assert mode.get_total_flops() / batch == 32_060_928 == FLOPS / 3


def test_analyze_prints_both_numbers_for_every_log(dlrm_logs):
    """No --preset: the FLOPs and the embedding bytes both come from the closed-division rule; each number is a
    number, or both are unknown with one reason and the input that supplies it."""
    from mfu_toolkit.io import load_run

    for path in dlrm_logs:
        r = raw(path)
        answer = build_answer(load_run(path))
        text = answer_text(answer, interface="cli")
        assert "Dense MFU and embedding bandwidth" in text and "Embedding bandwidth utilisation:" in text
        assert "Dense MFU:" in text
        rec = answer.recsys
        assert rec["bytes_per_sample"] == BYTES and rec["optimizer_from"] == "the log's opt_name 'adagrad'"
        dense, emb = rec["dense_mfu"], rec["embedding_bandwidth"]
        assert dense["flops_per_sample"] == FLOPS and answer.headline["numerator"]["flops_per_unit"] == FLOPS
        assert dense["source"].startswith("the MLPerf closed-division rule: benchmark 'dlrm_dcnv2' is the reference")
        assert "github.com/mlcommons/training" in dense["source"]
        _, _, acc, n = LOGS[path.name]
        if acc and n:
            rate = emb["samples_per_s"]["steady_state"]
            assert emb["steady_state"] == pytest.approx(rate * BYTES / (n * HBM[acc]), rel=1e-9)
            assert dense["steady_state"] == pytest.approx(rate * FLOPS / (n * PEAK[acc]), rel=1e-9)
            assert rate == pytest.approx(r["trained"] / r["train_s"], rel=1e-2)  # the ideal step ~ the mean
            assert dense["reason"] == emb["reason"] == "" and dense["give"] == emb["give"] == []
        else:
            assert dense["steady_state"] is None and emb["steady_state"] is None
            assert dense["reason"] == emb["reason"] and str(dense["reason"]).startswith("the log does not ")
            assert dense["give"] == emb["give"] == (["n_accelerators"] if n is None else ["accelerator"])
            assert f"unknown: {emb['reason']}" in " ".join(text.split())  # the text wraps at 100 columns
        assert "All-to-all: unknown: the sharding" in text
        assert answer_dict(answer)["recsys"]["traffic"]["conventions"]


def test_fujitsu_dense_mfu_from_the_log_alone_by_hand(dlrm_logs):
    """``mfu analyze`` on the Fujitsu log, no flags: the numbers by hand from its raw ``:::MLLOG`` lines.

    Training intervals (run_start or eval_stop to the next eval_start; 15 of them) with the samples their
    epoch_num positions state x train_samples 4,195,197,692. Steady state: the median interval's rate,
    209,730,394 samples / 24.887 s = 8,427,307 samples/s; x 96,182,784 FLOPs per sample (the reference model's
    hand count above) / (4 x 989.4e12, the H100 SXM bf16 dense datasheet peak) = 20.48 %. End to end:
    0.7498828381291592 x 4,195,197,692 = 3,145,906,752 samples over 471.408 s (the first record, cache_clear,
    to the last) = 6,673,427 samples/s -> 16.22 %. Embedding bandwidth: 8,427,307 x 547,840 B / (4 x 3.35e12)
    = 34.45 % (the H100 SXM HBM3 datasheet)."""
    from mfu_toolkit.io import load_run

    path = next(p for p in dlrm_logs if "Fujitsu" in p.name)
    recs = [json.loads(line[len(":::MLLOG "):]) for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith(":::MLLOG ")]
    train = next(r["value"] for r in recs if r["key"] == "train_samples")
    starts = [r for r in recs if r["key"] == "eval_start"]
    ends = [next(r for r in recs if r["key"] == "run_start"), *(r for r in recs if r["key"] == "eval_stop")]
    rates = sorted((b["metadata"]["epoch_num"] - a["metadata"].get("epoch_num", 0.0)) * train
                   / ((b["time_ms"] - a["time_ms"]) / 1000) for a, b in zip(ends, starts, strict=False))
    assert len(rates) == 15
    steady_rate = rates[7]  # the median of 15
    stop = next(r for r in recs if r["key"] == "run_stop")
    wall = (max(r["time_ms"] for r in recs) - min(r["time_ms"] for r in recs)) / 1000
    e2e_rate = stop["metadata"]["epoch_num"] * train / wall
    assert (round(steady_rate), round(wall, 3), round(e2e_rate)) == (8_427_307, 471.408, 6_673_427)

    answer = build_answer(load_run(path))
    dense, emb = answer.recsys["dense_mfu"], answer.recsys["embedding_bandwidth"]
    assert dense["steady_state"] == pytest.approx(steady_rate * FLOPS / (4 * 989.4e12), rel=1e-6)
    assert dense["end_to_end"] == pytest.approx(e2e_rate * FLOPS / (4 * 989.4e12), rel=1e-6)
    assert (round(dense["steady_state"] * 100, 2), round(dense["end_to_end"] * 100, 2)) == (20.48, 16.22)
    assert emb["steady_state"] == pytest.approx(steady_rate * BYTES / (4 * 3.35e12), rel=1e-6)
    assert round(emb["steady_state"] * 100, 2) == 34.45
    # the same in every front end's data: the headline MFU is the dense MFU
    assert answer.headline["steady_state_mfu"] == dense["steady_state"]
    doc = answer_dict(answer, interface="cli")
    assert doc["recsys"]["dense_mfu"]["steady_state"] == dense["steady_state"]
    assert doc["headline"]["numerator"]["source"].startswith("the MLPerf closed-division rule")


def test_analyze_takes_the_model_and_the_flops_from_the_closed_division_benchmark(dlrm_logs):
    from mfu_toolkit.io import load_run

    run = load_run(next(p for p in dlrm_logs if "Fujitsu" in p.name))
    rec = recsys_answer(account(run))
    assert rec["model"] == "dlrm-dcnv2" and "closed-division" in rec["model_from"]
    assert run.meta.model_flops_per_sample == FLOPS
    assert run.meta.fact("reference_model")["value"] == "dlrm_dcnv2"
    assert rec["dense_mfu"]["steady_state"] == pytest.approx(0.2048, abs=5e-5)
    assert rec["embedding_bandwidth"]["steady_state"] == pytest.approx(0.3445, abs=5e-4)
    alone = embedding_bandwidth(run)  # the library call takes the same model from the run
    assert alone.model == "dlrm-dcnv2" and alone.utilisation == rec["embedding_bandwidth"]["steady_state"]


def test_a_given_preset_or_flops_count_wins_over_the_rule(dlrm_logs):
    from mfu_toolkit.inputs import apply_inputs
    from mfu_toolkit.io import load_run

    path = next(p for p in dlrm_logs if "Fujitsu" in p.name)
    ruled = build_answer(load_run(path)).recsys["dense_mfu"]
    given = build_answer(apply_inputs(load_run(path), flops_per_sample=2 * FLOPS)).recsys
    assert given["dense_mfu"]["flops_per_sample"] == 2 * FLOPS
    assert given["dense_mfu"]["steady_state"] == pytest.approx(2 * ruled["steady_state"], rel=1e-12)
    assert given["dense_mfu"]["source"] == "apply_inputs(flops_per_sample=...)"
    assert given["model"] == "dlrm-dcnv2"  # the bytes still follow the reference model
    at_load = load_run(path, model_flops_per_sample=3 * FLOPS)
    assert at_load.meta.model_flops_per_sample == 3 * FLOPS
    assert at_load.meta.model_flops_source == "given: load_run(model_flops_per_sample=)"
    other = apply_inputs(load_run(path), preset="dlrm-criteo-terabyte")
    rec = build_answer(other).recsys
    assert rec["model"] == "dlrm-criteo-terabyte" and rec["model_from"] == "the preset given"
    assert rec["dense_mfu"]["source"].startswith("preset 'dlrm-criteo-terabyte'")


def test_giving_the_missing_count_gives_both_numbers(dlrm_logs):
    from mfu_toolkit.inputs import apply_inputs
    from mfu_toolkit.io import load_run

    path = next(p for p in dlrm_logs if "h200_ngc24.04_merlin" in p.name)
    rec = build_answer(apply_inputs(load_run(path), n_accelerators=8)).recsys
    dense, emb = rec["dense_mfu"], rec["embedding_bandwidth"]
    rate = emb["samples_per_s"]["steady_state"]
    assert dense["steady_state"] == pytest.approx(rate * FLOPS / (8 * PEAK["H200 SXM"]), rel=1e-9)
    assert emb["steady_state"] == pytest.approx(rate * BYTES / (8 * HBM["H200 SXM"]), rel=1e-9)
    assert dense["reason"] == emb["reason"] == ""


def test_alltoall_against_nvlink_when_the_sharding_is_given(dlrm_logs):
    from mfu_toolkit.io import load_run

    run = load_run(next(p for p in dlrm_logs if "Fujitsu" in p.name))
    b = embedding_bandwidth(run, model="dlrm-dcnv2", sharding="table_wise")
    gbs, n = 49152, 4
    assert b.alltoall_bytes_per_step == gbs * 2 * 26 * 128 * 4 * (n - 1) / n
    # per rank S = GBS x 26,624 B / N; AlltoAll floor S (N-1)/N / 450 GB/s (NVLink4 per direction)
    assert b.alltoall_floor_s == pytest.approx(gbs * 26_624 / n * (n - 1) / n / 450e9, rel=1e-12)
    assert b.alltoall_share == pytest.approx(b.alltoall_floor_s / (gbs / b.samples_per_s), rel=1e-12)
    assert b.alltoall_link == "NVLink4" and b.alltoall_reason == ""
    tyche = load_run(next(p for p in dlrm_logs if "tyche" in p.name))
    spans = embedding_bandwidth(tyche, model="dlrm-dcnv2", sharding="table_wise")
    assert math.isnan(spans.alltoall_share) and "spans nodes" in spans.alltoall_reason


# --- without the real logs ---------------------------------------------------------------------------------


def _toy_run(**meta) -> Run:
    steps = make_steps({"attempt": [0] * 4, "step": [0, 1, 2, 3], "rank": [-1] * 4, "start_s": [0.0, 1, 2, 3],
                        "end_s": [1.0, 2, 3, 4], "samples": [1e6] * 4})
    return Run.build(steps=steps, meta=RunMeta(**meta))


def test_embedding_bandwidth_of_a_run_by_hand():
    run = _toy_run(accelerator="H100 SXM", n_accelerators=8, global_batch=1e6,
                   extra={"preset": "dlrm-dcnv2", "params": {"opt_name": "rowwise_adagrad"}})
    b = embedding_bandwidth(run)
    per_sample = 3 * 214 * 128 * 4 + 2 * 214 * 4  # the log's optimizer (row-wise) over the model's (Adagrad)
    assert b.bytes_per_sample == per_sample and b.optimizer_from.startswith("the log's opt_name")
    assert b.samples_per_s == pytest.approx(1e6)
    assert b.utilisation == pytest.approx(1e6 * per_sample / (8 * 3.35e12))
    assert "memory_bandwidth" not in b.reason and "3.35 TB/s" in b.bandwidth_source


@pytest.mark.parametrize(("meta", "why"), [
    ({"n_accelerators": 8, "extra": {"preset": "dlrm-dcnv2"}}, "accelerator is unknown"),
    ({"accelerator": "H100 SXM", "extra": {"preset": "dlrm-dcnv2"}}, "count N is unknown"),
    ({"accelerator": "H100 SXM", "n_accelerators": 8}, "no recommendation model"),
])
def test_unknown_with_the_reason(meta, why):
    b = embedding_bandwidth(_toy_run(**meta))
    assert math.isnan(b.utilisation) and why in b.reason


def test_a_model_without_a_rate_is_never_guessed():
    b = embedding_bandwidth("dlrm-dcnv2", accelerator="H100", n_accelerators=8)
    assert math.isnan(b.utilisation) and "no samples/s" in b.reason
    b = embedding_bandwidth("dlrm-dcnv2", samples_per_s=1e7, accelerator="H100", n_accelerators=8)
    assert b.utilisation == pytest.approx(1e7 * 547_840 / (8 * 3.35e12))
    with pytest.raises(ValueError, match="basis"):
        embedding_bandwidth("dlrm-dcnv2", basis="median")


def test_non_recsys_runs_have_no_recsys_section():
    run = _toy_run(accelerator="H100 SXM", n_accelerators=8, extra={"preset": "llama3-8b"})
    assert recsys_answer(account(run)) == {}
    assert build_answer(run).recsys == {}


# --- the closed-division rule on self-made logs --------------------------------------------------------------------


def _mlperf_log(tmp_path, *, division: str | None = "closed", benchmark: str = "dlrm_dcnv2",
                platform: str | None = None, sysjson: bool = True) -> Path:
    """A small MLPerf result log: init 10 s, then three training intervals of 10 s (epoch_num 0 -> 0.25 -> 0.5 ->
    0.75 of train_samples 1,000,000: 250,000 samples each), each followed by a 1 s evaluation; SYSJSON 1 x 8
    'NVIDIA H100 80GB HBM3' where asked."""
    from _samples import T0_MS, mllog, write_mlperf

    out = [":::SYSJSON " + json.dumps({"number_of_nodes": "1", "accelerators_per_node": "8",
                                       "accelerator_model_name": "NVIDIA H100 80GB HBM3"})] if sysjson else []
    out += [mllog("init_start", T0_MS, event_type="INTERVAL_START"), mllog("submission_benchmark", T0_MS, benchmark)]
    out += [mllog("submission_division", T0_MS, division)] if division is not None else []
    out += [mllog("submission_platform", T0_MS, platform)] if platform is not None else []
    t = T0_MS + 10_000
    out += [mllog("global_batch_size", T0_MS, 1000), mllog("opt_name", T0_MS, "adagrad"),
            mllog("train_samples", T0_MS, 1_000_000, epoch_num=0.0), mllog("init_stop", t, event_type="INTERVAL_END"),
            mllog("run_start", t, event_type="INTERVAL_START"),
            mllog("epoch_start", t, event_type="INTERVAL_START", epoch_num=0.0)]
    for mark in (0.25, 0.5, 0.75):
        t += 10_000
        out += [mllog("eval_start", t, event_type="INTERVAL_START", epoch_num=mark),
                mllog("eval_stop", t + 1000, event_type="INTERVAL_END", epoch_num=mark)]
        t += 1000
    out += [mllog("run_stop", t, event_type="INTERVAL_END", status="success", epoch_num=0.75),
            mllog("epoch_stop", t, event_type="INTERVAL_END", epoch_num=0.75)]
    return write_mlperf(tmp_path, lines=out)


def test_a_closed_dlrm_log_gives_both_numbers_by_hand(tmp_path):
    from mfu_toolkit.io import load_run

    run = load_run(_mlperf_log(tmp_path))
    assert run.meta.model_flops_per_sample == FLOPS
    fact = run.meta.fact("reference_model")
    assert (fact["value"], fact["where"].rsplit(":", 1)[1]) == ("dlrm_dcnv2", "3")  # the submission_benchmark line
    assert fact["text"] == ("the MLPerf closed-division rule: benchmark 'dlrm_dcnv2' is the reference model "
                            "(submission_division 'closed' at line 4)")
    assert run.meta.model_flops_source.startswith(fact["text"] + ", stated in the log at result_0.txt:3; preset "
                                                  "'dlrm-dcnv2'")
    rec = build_answer(run).recsys
    # 250,000 samples per 10 s interval = 25,000 samples/s on 8 H100 SXM (989.4 TFLOP/s bf16, 3.35 TB/s HBM3)
    assert rec["dense_mfu"]["steady_state"] == pytest.approx(25_000 * FLOPS / (8 * 989.4e12), rel=1e-9)
    assert rec["embedding_bandwidth"]["steady_state"] == pytest.approx(25_000 * BYTES / (8 * 3.35e12), rel=1e-9)


@pytest.mark.parametrize(("division", "benchmark", "states"), [
    ("open", "dlrm_dcnv2", False),  # an open submission may change the model
    (None, "dlrm_dcnv2", False),  # no division stated: no rule
    ("closed", "dlrm_dcnv3", True),  # a benchmark no preset is named after
    ("closed", "bert", True),  # transformer benchmarks: FLOPs per sample depend on sequence lengths
    ("closed", "gpt3", True),
    ("closed", "llama2_70b_lora", True),
])
def test_the_rule_gives_no_flops_where_it_does_not_hold(tmp_path, division, benchmark, states):
    from mfu_toolkit.io import load_run

    run = load_run(_mlperf_log(tmp_path, division=division, benchmark=benchmark))
    assert run.meta.model_flops_per_sample is None and run.meta.model_flops_source is None
    assert (run.meta.fact("reference_model") is not None) == states
    answer = build_answer(run)
    assert answer.recsys == {} and answer.headline["steady_state_mfu"] is None
    assert answer.headline["numerator"]["source"] == "unknown"


def test_only_dlrm_presets_are_reference_models_with_flops():
    """A DLRM's FLOPs per sample follow from its layer sizes; a sequence model's (BERT, GPT-3, HSTU) also from
    sequence lengths the benchmark's name does not fix."""
    from mfu_toolkit import facts

    assert facts.reference_preset("dlrm_dcnv2").name == "dlrm-dcnv2"
    assert facts.reference_preset(" dlrm_dcnv2 ").name == "dlrm-dcnv2"
    names = ("bert", "gpt3", "llama2_70b_lora", "hstu-ml-1m", "", None, 7)
    assert [facts.reference_preset(n) for n in names] == [None] * len(names)


def test_closed_in_capitals_is_the_closed_division(tmp_path):
    from mfu_toolkit.io import load_run

    assert load_run(_mlperf_log(tmp_path, division=" Closed ")).meta.model_flops_per_sample == FLOPS


@pytest.mark.parametrize(("platform", "n", "accelerator", "give"), [
    ("1xNVIDIA HGX H200", None, "H200 SXM", ["n_accelerators"]),  # HGX boards carry 4 or 8: no count
    ("2xNVIDIA GB200", 8, "GB200", []),  # the system table: 4 GPUs per MLPerf GB200 node
    ("2xNVIDIA DGX H100", 16, "H100 SXM", []),  # 8 per DGX H100
    ("1xD74H-7U", 8, None, ["accelerator"]),  # 8 per QCT D74H-7U, the GPU not named
    ("1xACME Box", None, None, ["n_accelerators", "accelerator"]),
])
def test_what_the_platform_states_without_sysjson(tmp_path, platform, n, accelerator, give):
    """The count and the accelerator a submission_platform states by the sourced system table (any submitter), else
    both numbers unknown with one reason and the inputs that supply it; never read from the file name."""
    from mfu_toolkit.io import load_run

    run = load_run(_mlperf_log(tmp_path, platform=platform, sysjson=False))
    assert (run.meta.n_accelerators, run.meta.accelerator) == (n, accelerator)
    rec = build_answer(run).recsys
    dense, emb = rec["dense_mfu"], rec["embedding_bandwidth"]
    assert dense["give"] == emb["give"] == give and dense["reason"] == emb["reason"]
    assert (dense["steady_state"] is None) == bool(give) == (emb["steady_state"] is None)
    if give:
        assert rec["dense_mfu"]["reason"].missing  # a Reason: the facts it asks for, as the answer's missing facts


# --------------------------------------------------------------------------------------------
# the all-to-all of sharded tables, given the sharding (and, over nodes, the NIC)

FUJITSU = "v4.1_Fujitsu_GX2560M7_H100_SXM_80GBx4_dlrm_dcnv2_result_0.txt"
TYCHE = "v5.0_NVIDIA_tyche_ngpu64_ngc25.03_hugectr_dlrm_dcnv2_result_0.txt"


def _alltoall(capsys, *argv: str) -> tuple[int, list[str], dict]:
    from mfu_toolkit.cli import main

    code = main(["analyze", *argv])
    text = capsys.readouterr()
    # an All-to-all line with its wrapped continuation (indented), as one line
    joined = text.out.replace("\n  ", " ")
    lines = [ln for ln in joined.splitlines() if ln.startswith("All-to-all")] + text.err.splitlines()
    if code:
        return code, lines, {}
    assert main(["analyze", *argv, "--json"]) == 0
    return code, lines, json.loads(capsys.readouterr().out)["recsys"]["alltoall"]


def test_the_all_to_all_of_table_wise_tables_by_hand(capsys, realdata):  # noqa: F811
    path = str(realdata / "mlperf" / FUJITSU)
    code, lines, a2a = _alltoall(capsys, path)
    assert code == 0 and a2a["give"] == ["sharding"] and "give --sharding" in " ".join(lines)
    code, lines, a2a = _alltoall(capsys, path, "--sharding", "table_wise")
    # by hand: 26 pooled vectors x 128 dims x 4 B (fp32), forward and their gradients back = 26,624 B per
    # sample; global batch 49,152 (the log's global_batch_size) on 4 GPUs, (4 - 1) / 4 of it leaves its rank:
    # 49,152 x 26,624 x 3/4 = 981,467,136 B per step. One node (the log's SYSJSON): NVLink4, 450 GB/s each way;
    # each rank sends 49,152 x 26,624 / 4 x 3/4 = 245,366,784 B -> 545.26 µs, of the steady step
    # 49,152 / 8,427,307 samples/s (the median training interval, see above) = 5.8326 ms: 9.35 %
    assert a2a["bytes_per_step"] == 49_152 * 26_624 * 3 / 4 == 981_467_136
    assert a2a["link"] == "NVLink4" and a2a["floor_s"] == pytest.approx(245_366_784 / 450e9, rel=1e-9)
    assert a2a["share"] == pytest.approx(245_366_784 / 450e9 / (49_152 / 8_427_307), rel=2e-3)
    assert lines[:2] == ["All-to-all (table_wise): 981.5 MB per step cross ranks",
                         "All-to-all floor: 545.260 µs at the NVLink4 peak, 9.35% of the steady-state step"]
    code, lines, a2a = _alltoall(capsys, path, "--sharding", "data_parallel")  # replicated: nothing crosses
    assert a2a["bytes_per_step"] == 0 and lines[0].startswith("All-to-all (data_parallel): 0 B per step")
    assert not any("unknown" in ln for ln in lines)


def test_over_nodes_the_all_to_all_asks_for_the_nic(capsys, realdata):  # noqa: F811
    path = str(realdata / "mlperf" / TYCHE)
    code, lines, a2a = _alltoall(capsys, path, "--sharding", "table_wise")
    # 16 nodes of 4 GB200 (the sourced systems table): the all-to-all crosses the NIC, which the log does not name
    assert a2a["bytes_per_step"] == 135_168 * 26_624 * 63 / 64 and a2a["give"] == ["nic"]
    assert "give --nic NAME" in " ".join(lines)
    code, lines, a2a = _alltoall(capsys, path, "--sharding", "table_wise", "--nic", "NDR")
    # each rank sends 135,168 x 26,624 / 64 x 63/64 = 55,351,296 B over NDR's 50 GB/s each way: 1.107 ms
    assert a2a["link"] == "InfiniBand NDR" and a2a["floor_s"] == pytest.approx(55_351_296 / 50e9, rel=1e-9)


def test_a_sharding_not_known_is_one_line_naming_the_input(capsys, realdata):  # noqa: F811
    from mfu_toolkit.inputs import InputError, check_sharding

    code, lines, _ = _alltoall(capsys, str(realdata / "mlperf" / FUJITSU), "--sharding", "rowwise")
    assert code == 2 and lines == ["mfu analyze: error: --sharding rowwise: expected one of table_wise, "
                                   "column_wise, data_parallel"]
    with pytest.raises(InputError, match=r"^SHARDING=rowwise: expected one of"):
        check_sharding("rowwise", interface="make")
    with pytest.raises(ValueError, match="sharding must be one of"):
        account(Run.build(make_steps({"step": [0, 1], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]})),
                sharding="rowwise")
