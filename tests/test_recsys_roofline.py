"""The roofline of a recommendation model's training step (roofline.recsys_step_roofline) against hand counts.

The worked case: the ``dlrm-dcnv2`` preset (MLPerf DLRM-DCNv2) on an H100 SXM in bf16 at 65,536 samples per
GPU. Peak 989.4 TFLOP/s dense bf16 and 3.35 TB/s HBM3, both from the H100 datasheet
(https://www.nvidia.com/en-us/data-center/h100/, as accelerators.csv and memory_bandwidth.csv hold them): the
ridge point is 989.4 / 3.35 = 295.3 FLOP/B. Each matmul row is the forward product and its two backward products
(same FLOPs, same minimum traffic): FLOPs 3 x 2·B·in·out, bytes 3 x (B·in + in·out + B·out) x 2 B.
"""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from mfu_toolkit import roofline as rl
from mfu_toolkit.flops import get_preset, model_flops
from mfu_toolkit.flops.recsys import DLRMConfig, embedding_traffic

B = 65_536
P, W = 989.4e12, 3.35e12


def _mm(b: int, k: int, n: int) -> tuple[int, int]:
    """(FLOPs, bytes) of one dense layer k→n at batch b over forward + two backward products, bf16."""
    return 3 * 2 * b * k * n, 3 * (b * k + k * n + b * n) * 2


@pytest.fixture(scope="module")
def step():
    return rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B)


def _row(result, name):
    return next(r for r in result.rows if r.name == name)


def test_dense_rows_by_hand(step):
    assert (step.peak_flops, step.bandwidth) == (P, W)
    # bottom MLP 13→512: 2,617,245,696 FLOPs over 206,478,336 B = 12.7 FLOP/B, far below the ridge: memory-bound,
    # 206,478,336 B / 3.35 TB/s = 61.6 µs
    first = _row(step, "bottom MLP 13→512")
    assert (first.flops, first.bytes) == _mm(B, 13, 512) == (2_617_245_696, 206_478_336)
    assert first.bound == "memory" and first.time_s == pytest.approx(206_478_336 / W)
    # top MLP 3456→1024: 1,391,569,403,904 FLOPs over 1,782,841,344 B = 780.5 FLOP/B: compute-bound, 1.4065 ms
    top = _row(step, "top MLP 3456→1024")
    assert (top.flops, top.bytes) == _mm(B, 3456, 1024) == (1_391_569_403_904, 1_782_841_344)
    assert top.intensity == pytest.approx(780.53, abs=0.01)
    assert top.bound == "compute" and top.time_s == pytest.approx(1_391_569_403_904 / P)
    # a low-rank cross layer's U and V: 3456→512 and 512→3456, 442.9 FLOP/B each: compute-bound
    down = _row(step, "cross layer 2 down 3456→512")
    assert (down.flops, down.bytes) == _mm(B, 3456, 512) and down.bound == "compute"
    # the last layer 256→1 is all weight-and-activation traffic: about 1 FLOP/B
    assert _row(step, "top MLP 256→1").intensity == pytest.approx(1.0, abs=0.01)


def test_embedding_rows_carry_the_traffic_of_embedding_traffic(step):
    # 214 lookups x 128 x 4 B (fp32 rows) = 109,568 B per sample read; the sparse update reads and writes them again
    # (219,136 B); Adagrad's per-element fp32 accumulator is read and written (219,136 B): 547,840 B per sample
    t = embedding_traffic(get_preset("dlrm-dcnv2").config)
    assert t.per_sample == 547_840
    look = _row(step, "embedding lookups (214 rows × 128, fp32)")
    assert look.bytes == 109_568 * B == 7_180_648_448
    assert look.flops == (214 - 26) * 128 * B  # the multi-hot pooling sums; zero model FLOPs
    assert _row(step, "embedding sparse update").bytes == 219_136 * B
    assert _row(step, "embedding optimizer state (adagrad)").bytes == 219_136 * B
    emb = [r for r in step.rows if r.kind == "embedding"]
    assert all(r.bound == "memory" and r.model_flops == 0 for r in emb)
    # 547,840 B x 65,536 / 3.35 TB/s = 10.72 ms: more than the whole dense compute (6.37 ms at the peak)
    assert sum(r.time_s for r in emb) == pytest.approx(547_840 * B / W)
    assert sum(r.time_s for r in emb) == pytest.approx(10.7174e-3, rel=1e-4)


def test_the_step_splits_and_the_mfu_ceiling_by_hand(step):
    # model FLOPs: 3 x 32,060,928 per sample (the preset's forward count) x 65,536 = 6,303,434,932,224
    assert step.model_flops == 3 * 32_060_928 * B == model_flops("dlrm-dcnv2").training_per_sample * B
    # compute-bound rows: the six cross-layer matmuls and the top MLP's first three layers
    compute = 6 * _mm(B, 3456, 512)[0] + _mm(B, 3456, 1024)[0] + _mm(B, 1024, 1024)[0] + _mm(B, 1024, 512)[0]
    assert compute == 6_184_752_906_240
    assert {r.name for r in step.rows if r.bound == "compute"} == {
        *(f"cross layer {i} {d}" for i in (1, 2, 3) for d in ("down 3456→512", "up 512→3456")),
        "top MLP 3456→1024", "top MLP 1024→1024", "top MLP 1024→512"}
    assert step.compute_bound_s == pytest.approx(compute / P)  # 6.251 ms
    # memory-bound bytes: bottom MLP (3 layers), top MLP 512→256 and 256→1, embeddings 547,840 x B, and the
    # cross layers' x0 ⊙ y + x: 3 layers x 9 tensors x B x 3456 x 2 B = 12,230,590,464
    cross_ew = 3 * 9 * B * 3456 * 2
    assert cross_ew == 12_230_590_464
    memory = (_mm(B, 13, 512)[1] + _mm(B, 512, 256)[1] + _mm(B, 256, 128)[1] + _mm(B, 512, 256)[1]
              + _mm(B, 256, 1)[1] + 547_840 * B + cross_ew)
    assert memory == 49_198_113_280
    assert step.memory_bound_s == pytest.approx(memory / W)  # 14.686 ms
    # step ≥ 6.251 + 14.686 = 20.937 ms; ceiling = 6.3034e12 / (20.937 ms x 989.4 TFLOP/s) = 30.43 %
    assert step.step_s == pytest.approx(compute / P + memory / W)
    assert step.ceiling == pytest.approx(6_303_434_932_224 / ((compute / P + memory / W) * P))
    assert round(step.ceiling, 4) == 0.3043
    assert step.interconnect_s == 0 and step.link is None and "sharding not given" in step.alltoall_note
    # the same ops through the generic mfu_ceiling give the same number
    assert step.ceiling == pytest.approx(rl.mfu_ceiling(list(step.ops), P, W), rel=1e-12)
    assert "MFU ceiling 30.4%" in step.summary() and "memory-bound 14.69 ms (70.1%)" in step.summary()


def test_fused_cross_layers_and_a_measured_matmul_rate():
    # x0 ⊙ y + x fused away: step ≥ 6.251 + (49,198,113,280 − 12,230,590,464) / 3.35e12 = 17.286 ms → 36.86 %
    fused = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B, cross_elementwise=False)
    step_s = 6_184_752_906_240 / P + (49_198_113_280 - 12_230_590_464) / W
    assert fused.ceiling == pytest.approx(6_303_434_932_224 / (step_s * P))
    assert round(fused.ceiling, 4) == 0.3686
    # matmuls at 80 % of the peak: the compute-bound part takes 1/0.8 as long
    slow = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B, matmul_efficiency=0.8)
    assert slow.compute_bound_s == pytest.approx(6_184_752_906_240 / (0.8 * P))
    assert slow.ceiling == pytest.approx(rl.mfu_ceiling(list(slow.ops), P, W, matmul_efficiency=0.8), rel=1e-12)


def test_the_alltoall_of_table_wise_sharding_on_nvlink4():
    # 26 pooled vectors x 128 x 4 B, forward and backward: 26,624 B per sample; each of 8 ranks sends
    # 65,536 x 26,624 x 7/8 = 1,526,726,656 B one way over NVLink4 at 450 GB/s per direction
    # (interconnect.csv: 900 GB/s bidirectional per H100 SXM): 3.393 ms
    r = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B, sharding="table_wise", n_accelerators=8)
    a2a = _row(r, "all-to-all of pooled embeddings (table_wise, 8 ranks)")
    assert a2a.bytes == 26_624 * B * 7 / 8 == 1_526_726_656
    assert r.link == "NVLink4" and r.link_bytes_per_s == 450e9
    assert a2a.bound == "interconnect" and r.interconnect_s == pytest.approx(1_526_726_656 / 450e9)
    # the same floor as the Communication analysis' (nccl-tests convention, (N−1)/N of the per-rank size)
    from mfu_toolkit.analysis.communication import collective_time_floor

    assert r.interconnect_s == pytest.approx(collective_time_floor("alltoall", 26_624 * B, 8, "NVLink4"))
    # serial: 6.3034e12 / ((20.937 + 3.393) ms x 989.4 TFLOP/s) = 26.2 %; hidden behind the on-chip work: 30.4 %
    single = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B)
    assert r.step_s == pytest.approx(single.step_s + 1_526_726_656 / 450e9)
    assert round(r.ceiling, 3) == 0.262
    assert r.ceiling_comm_hidden == pytest.approx(single.ceiling)
    assert "all-to-all on NVLink4" in r.summary()
    # a NIC named instead: NDR InfiniBand, 400 Gb/s per direction per port = 50 GB/s
    ib = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B, sharding="column_wise", n_accelerators=16,
                                 link="NDR")
    assert ib.interconnect_s == pytest.approx(26_624 * B * 15 / 16 / 50e9)
    # replicated tables or one rank: nothing crosses
    for kw in ({"sharding": "data_parallel", "n_accelerators": 8}, {"sharding": "table_wise"}):
        none = rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B, **kw)
        assert none.interconnect_s == 0 and "nothing crosses ranks" in none.alltoall_note


def test_dot_interaction_full_rank_cross_and_optimizers():
    # the original DLRM (dot interaction, SGD): the Gram matrix of 27 vectors of 16 per sample is one row;
    # SGD keeps no state, so there is no optimizer-state row; the model FLOPs are the 3x training count
    r = rl.recsys_step_roofline("dlrm-criteo-kaggle", "A100 SXM", batch=128)
    gram = _row(r, "dot interaction (27 vectors of 16)")
    assert gram.flops == 3 * 128 * 2 * 27 * 27 * 16
    assert not any("optimizer state" in row.name for row in r.rows)
    assert r.model_flops == model_flops("dlrm-criteo-kaggle").training_per_sample * 128
    full = DLRMConfig(n_dense=4, bottom_mlp=(8,), n_sparse=2, embedding_dim=8, top_mlp=(4, 1), interaction="dcnv2",
                      cross_layers=2, cross_rank=None, optimizer="rowwise_adagrad")
    f = rl.recsys_step_roofline(full, "H100 SXM", batch=32)
    assert [row.name for row in f.rows if row.name.startswith("cross layer")] == [
        "cross layer 1 24→24", "cross layer 1 x0 ⊙ y + x", "cross layer 2 24→24", "cross layer 2 x0 ⊙ y + x"]
    assert f.model_flops == model_flops(full).training_per_sample * 32
    # row-wise Adagrad: one fp32 accumulator per row, read and written: 2 lookups x 4 B x 2 per sample
    assert _row(f, "embedding optimizer state (rowwise_adagrad)").bytes == 32 * 2 * 4 * 2
    # no optimizer stated: its state is left out and the conventions say so
    bare = rl.recsys_step_roofline(DLRMConfig(n_dense=4, bottom_mlp=(8,), n_sparse=2, embedding_dim=8,
                                              top_mlp=(1,)), "H100 SXM", batch=8)
    assert not any("optimizer state" in row.name for row in bare.rows)
    assert any("not stated: its state traffic is not counted" in c for c in bare.conventions)


def test_the_ceiling_rises_with_batch_and_saturates():
    # small batches leave the dense layers bound by their weights' traffic; past ~4k samples per GPU every
    # dense layer's weights are amortised and the embeddings' bytes, linear in the batch, cap the ceiling
    ceilings = [rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=b).ceiling
                for b in (256, 1024, 4096, 65_536, 262_144)]
    assert ceilings == sorted(ceilings)
    assert ceilings[0] < 0.25 < 0.30 < ceilings[2] and ceilings[-1] - ceilings[2] < 0.001
    # fp32 tensors run their matmuls at the TF32 peak (494.7 TFLOP/s dense on H100 SXM)
    assert rl.recsys_step_roofline("dlrm-dcnv2", "H100", batch=B, dtype="fp32").peak_flops == pytest.approx(494.7e12)


def test_table_and_dict_round_trip(step):
    table = step.table()
    assert [t["op"] for t in table] == [r.name for r in step.rows]
    assert math.isclose(sum(t["share"] for t in table), 1.0)
    d = step.to_dict()
    assert d["ceiling"] == step.ceiling and d["rows"] == table and d["model"] == "dlrm-dcnv2"
    assert "https://www.nvidia.com/en-us/data-center/h100/" in d["peak_source"]
    assert any(c.startswith("embedding bytes: embedding_traffic(): fp32 rows, 214 lookups") for c in step.conventions)


@pytest.mark.parametrize("call, match", [
    (lambda: rl.recsys_step_roofline("hstu", "H100 SXM", batch=8), "covers DLRM configurations"),
    (lambda: rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=0), "batch must be a whole number"),
    (lambda: rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=8, dtype="int8"), "dtype must be one of"),
    (lambda: rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=8, n_accelerators=0), "n_accelerators"),
    (lambda: rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=8, sharding="row_wise", n_accelerators=2),
     "sharding must be one of"),
    (lambda: rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=8, matmul_efficiency=0), "matmul_efficiency"),
])
def test_bad_inputs_name_what_is_wrong(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_a_link_without_a_per_direction_rate_is_refused():
    from mfu_toolkit.interconnect import Link

    vague = Link("vague", kind="ethernet", value=100, unit="GB/s", direction="unstated")
    with pytest.raises(ValueError, match="no per-direction rate"):
        rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=8, sharding="table_wise", n_accelerators=2,
                                link=vague)


def test_the_step_roofline_stays_pandas_free():
    code = ("import sys, mfu_toolkit.roofline as rl; "
            "rl.recsys_step_roofline('dlrm-dcnv2', 'H100 SXM', batch=8, sharding='table_wise', n_accelerators=8); "
            "print('pandas' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_the_roofline_widget_draws_the_step():
    from mfu_toolkit.widgets import roofline_figure, roofline_scenario, roofline_table

    r = roofline_scenario(model="dlrm-step", batch=B)
    assert r.ceiling == pytest.approx(rl.recsys_step_roofline("dlrm-dcnv2", "H100 SXM", batch=B).ceiling, rel=1e-12)
    assert "MFU ceiling 30.4%" in r.headline and "training step with its embedding traffic" in r.headline
    table = roofline_table(r)
    assert table.loc[table["op"] == "embedding optimizer state (adagrad)", "bound by"].item() == "memory"
    fig = roofline_figure(r)
    assert fig.axes and any("embedding sparse update" in t.get_text() for t in fig.axes[0].texts)
    with pytest.raises(ValueError, match="'dlrm-step'"):
        roofline_scenario(model="hstu")
