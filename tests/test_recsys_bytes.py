"""Embedding traffic of recommendation models: bytes per sample by term, hand-counted, and the counter check."""

from __future__ import annotations

import dataclasses
import math

import pytest

from mfu_toolkit.flops import DLRMConfig, FlopsConfigError, HSTUConfig, get_preset, model_flops
from mfu_toolkit.flops.recsys import (
    OPTIMIZERS,
    ROW_DTYPES,
    canonical_optimizer,
    embedding_traffic,
)

# The MLPerf Training reference DLRM-DCNv2, read at mlcommons/training@aa344c7fb900e82ed19fb94aebfed50c63ab2204,
# recommendation_v2/torchrec_dlrm/README.MD line 161 (--num_embeddings_per_feature) and line 200
# (--multi_hot_sizes): https://github.com/mlcommons/training/blob/aa344c7fb900e82ed19fb94aebfed50c63ab2204/
# recommendation_v2/torchrec_dlrm/README.MD
REFERENCE_ROWS = (40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63, 40000000, 3067956, 405282, 10, 2209,
                  11938, 155, 4, 976, 14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36)
REFERENCE_MULTI_HOT = (3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1, 6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1)


def test_the_preset_holds_the_reference_table_sizes_and_its_optimizer():
    cfg = get_preset("dlrm-dcnv2").config
    assert cfg.embedding_rows == REFERENCE_ROWS and len(REFERENCE_ROWS) == 26
    assert cfg.pooling_factors == REFERENCE_MULTI_HOT and sum(REFERENCE_MULTI_HOT) == 214
    assert cfg.embedding_dim == 128 and cfg.embedding_bytes == 4
    assert cfg.optimizer == "adagrad"  # --adagrad: EXACT_ADAGRAD (dlrm_main.py lines 786-789)
    assert sum(REFERENCE_ROWS) == 204_184_588  # rows of all 26 tables
    assert "aa344c7fb900e82ed19fb94aebfed50c63ab2204" in get_preset("dlrm-dcnv2").source


def test_dlrm_dcnv2_traffic_by_hand():
    t = embedding_traffic(get_preset("dlrm-dcnv2").config)
    rows = 214 * 128 * 4  # 214 lookups of 128 fp32 values = 109,568 B
    assert t.term("lookup_read") == rows == 109_568
    assert t.term("update_read") == t.term("update_write") == rows
    # Adagrad: one fp32 accumulator per element, read and written for each looked-up row
    assert t.term("state_read") == t.term("state_write") == 214 * 128 * 4
    assert t.per_sample == 5 * rows == 547_840 == get_preset("dlrm-dcnv2").derived["embedding_bytes_per_sample"]
    # all-to-all: 26 pooled vectors of 128 fp32 forward, their gradients backward
    assert t.alltoall_per_sample == 2 * 26 * 128 * 4 == 26_624
    assert t.complete and t.optimizer == "adagrad"


@pytest.mark.parametrize(("optimizer", "state"), [
    ("sgd", 0),
    ("adagrad", 2 * 214 * 128 * 4),
    ("rowwise_adagrad", 2 * 214 * 1 * 4),  # one fp32 per row, read + written
    ("adam", 2 * 214 * 128 * 2 * 4),  # two moments per element
])
def test_optimizer_state_bytes_by_hand(optimizer, state):
    t = embedding_traffic(get_preset("dlrm-dcnv2").config, optimizer=optimizer)
    assert t.term("state_read") + t.term("state_write") == state
    assert t.per_sample == 3 * 214 * 128 * 4 + state
    assert optimizer in " ".join(t.conventions)


@pytest.mark.parametrize(("dtype", "b"), [("fp32", 4), ("fp16", 2), ("bf16", 2), ("int8", 1), (2, 2)])
def test_row_precision_scales_rows_not_state(dtype, b):
    t = embedding_traffic(get_preset("dlrm-dcnv2").config, embedding_bytes=dtype, optimizer="rowwise_adagrad")
    assert t.term("lookup_read") == 214 * 128 * b
    assert t.term("state_read") == 214 * 4  # fp32 state whatever the rows
    assert t.alltoall_per_sample == 2 * 26 * 128 * b  # the pooled outputs travel in the rows' precision
    assert embedding_traffic(get_preset("dlrm-dcnv2").config, embedding_bytes=dtype,
                             comm_bytes="bf16").alltoall_per_sample == 2 * 26 * 128 * 2
    assert ROW_DTYPES["fp32"] == 4


def test_an_unstated_optimizer_leaves_state_out_and_says_so():
    cfg = dataclasses.replace(get_preset("dlrm-dcnv2").config, optimizer=None)
    t = embedding_traffic(cfg)
    assert not t.complete and t.term("state_read") == 0
    assert t.per_sample == 3 * 214 * 128 * 4
    assert "not stated" in t.summary() and any("give optimizer=" in c for c in t.conventions)


def test_one_hot_tables_and_the_conventions_text():
    cfg = DLRMConfig(n_dense=13, bottom_mlp=(64,), n_sparse=8, embedding_dim=64, top_mlp=(1,), interaction="dot",
                     optimizer="sgd")
    t = embedding_traffic(cfg)
    assert t.lookups_per_sample == 8 and t.per_sample == 3 * 8 * 64 * 4
    text = " ".join(t.describe())
    for needle in ("fp32", "pooling factor 1", "no de-duplication", "sgd", "(N-1)/N"):
        assert needle in text


def test_model_flops_results_state_the_byte_counts():
    r = model_flops("dlrm-dcnv2", batch=55296)
    note = next(n for n in r.conventions.notes if n.startswith("embedding traffic"))
    assert "547,840 B per sample" in note and "adagrad" in note and "fp32" in note and "214 lookups" in note
    assert r.to_dict()["conventions"]["notes"][-1] == note
    t = embedding_traffic(r)  # a result works as well as its config
    assert t.per_step(r.batch) == 547_840 * 55296


def test_alltoall_per_step_crossing_share():
    t = embedding_traffic(get_preset("dlrm-dcnv2").config)
    assert t.alltoall_per_step(1000, 8) == 1000 * 26_624 * 7 / 8
    assert t.alltoall_per_step(1000, 1) == 0.0  # one shard: nothing crosses
    assert t.alltoall_per_step(1000, 8, "data_parallel") == 0.0
    with pytest.raises(FlopsConfigError, match="sharding"):
        t.alltoall_per_step(1000, 8, "row_wise")


def test_hstu_traffic_is_per_position():
    cfg = HSTUConfig(n_layers=2, d_model=64, n_heads=2, dqk=32, dv=32, seq_len=100, optimizer="rowwise_adagrad")
    t = embedding_traffic(cfg)
    assert t.lookups_per_sample == 100 and t.vectors_per_sample == 100
    assert t.term("lookup_read") == 100 * 64 * 4 and t.term("state_write") == 100 * 4
    r = model_flops(cfg, lengths=[50, 150])  # the mean real length
    assert embedding_traffic(r).lookups_per_sample == 100
    assert any(n.startswith("embedding traffic") for n in r.conventions.notes)


def test_bad_inputs_name_the_parameter():
    cfg = get_preset("dlrm-dcnv2").config
    with pytest.raises(FlopsConfigError, match="optimizer"):
        embedding_traffic(cfg, optimizer="lamb")
    with pytest.raises(FlopsConfigError, match="embedding_bytes"):
        embedding_traffic(cfg, embedding_bytes="fp64")
    with pytest.raises(FlopsConfigError, match="optimizer"):
        dataclasses.replace(cfg, optimizer="adamw")
    with pytest.raises(FlopsConfigError, match="DLRMConfig"):
        embedding_traffic(model_flops("llama3-8b"))


def test_logged_optimizer_names():
    assert canonical_optimizer("adagrad") == "adagrad"  # MLPerf opt_name
    assert canonical_optimizer("EXACT_ROWWISE_ADAGRAD") == "rowwise_adagrad"
    assert canonical_optimizer("row-wise Adagrad") == "rowwise_adagrad"
    assert canonical_optimizer("lamb") is None and canonical_optimizer(None) is None
    assert set(OPTIMIZERS) == {"sgd", "adagrad", "rowwise_adagrad", "adam"}


def test_toml_config_takes_the_optimizer(tmp_path):
    from mfu_toolkit.flops import load_model_config

    p = tmp_path / "m.toml"
    p.write_text('[model]\nkind = "dlrm"\nn_dense = 4\nbottom_mlp = [8]\nn_sparse = 2\nembedding_dim = 8\n'
                 'top_mlp = [1]\ninteraction = "dot"\npooling_factors = [3, 5]\noptimizer = "rowwise_adagrad"\n')
    t = embedding_traffic(load_model_config(str(p)))
    assert t.per_sample == 8 * 8 * 4 * 3 + 2 * 8 * 4


# --- the counter: EmbeddingBag modules against the analytic count --------------------------------------------


def _bag_model(torch, dims=8):
    class Bags(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.EmbeddingBag(100, dims, mode="sum")
            self.b = torch.nn.EmbeddingBag(50, dims, mode="sum", sparse=True)
            self.c = torch.nn.Embedding(30, dims)  # one-hot via a plain Embedding
            self.top = torch.nn.Linear(3 * dims + 4, 1)

        def forward(self, dense, ia, ib, ic):
            return self.top(torch.cat([dense, self.a(ia), self.b(ib), self.c(ic)], 1))

    return Bags()


def test_embeddingbag_bytes_match_the_analytic_count():
    torch = pytest.importorskip("torch")
    from mfu_toolkit.flops.counter import compare_embedding_bytes

    torch.manual_seed(0)
    batch = 6
    cfg = DLRMConfig(n_dense=4, bottom_mlp=(), n_sparse=3, embedding_dim=8, top_mlp=(1,), interaction="concat",
                     pooling_factors=(3, 5, 1), embedding_rows=(100, 50, 30), optimizer="rowwise_adagrad")
    inputs = (torch.randn(batch, 4), torch.randint(0, 100, (batch, 3)), torch.randint(0, 50, (batch, 5)),
              torch.randint(0, 30, (batch,)))
    c = compare_embedding_bytes(_bag_model(torch), inputs, model_flops(cfg, batch=batch))
    assert c.counted.lookups == batch * 9 and c.counted.gradient_rows == batch * 9
    assert c.counted.lookup_bytes == batch * 9 * 8 * 4 == c.analytic_lookup
    assert c.lookup_ratio == 1.0 and c.gradient_ratio == 1.0
    assert {r["term"] for r in c.records()} == {"lookup_read", "update_write"}
    assert "optimizer state" in c.summary()


def test_the_counter_sees_half_precision_rows_and_a_wrong_pooling_factor():
    torch = pytest.importorskip("torch")
    from mfu_toolkit.flops.counter import compare_embedding_bytes, count_embedding_bytes

    bag = torch.nn.EmbeddingBag(40, 16, mode="sum").to(torch.bfloat16)
    idx = torch.randint(0, 40, (4, 7))
    counted = count_embedding_bytes(bag, idx, loss_fn=lambda out: out.float().sum())
    assert counted.lookup_bytes == 4 * 7 * 16 * 2
    cfg = DLRMConfig(n_dense=0, bottom_mlp=(), n_sparse=1, embedding_dim=16, top_mlp=(1,), interaction="concat",
                     pooling_factors=(5,), embedding_bytes=2)  # the analytic count says 5, the model looks up 7
    c = compare_embedding_bytes(bag, idx, embedding_traffic(cfg), batch=4, loss_fn=lambda out: out.float().sum())
    assert math.isclose(c.lookup_ratio, 5 / 7)
    with pytest.raises(TypeError, match="batch"):
        compare_embedding_bytes(bag, idx, embedding_traffic(cfg))


# --- mfu calc: dense MFU beside embedding bandwidth -----------------------------------------------------------


def _calc(capsys, *argv: str) -> tuple[int, str, str]:
    from mfu_toolkit.cli import main

    try:
        code = main(["calc", *argv])
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_calc_prints_embedding_bandwidth_for_a_recsys_preset(capsys):
    code, out, _ = _calc(capsys, "--preset", "dlrm-dcnv2", "--samples-per-second", "1e7", "--gpus", "8",
                         "--accelerator", "H100")
    assert code == 0
    # 1e7 samples/s x 547,840 B = 5.4784 TB/s against 8 x 3.35 TB/s (H100 SXM, memory_bandwidth.csv) = 20.44 %
    assert "Embedding bandwidth utilisation: 20.44% (5.478 TB/s of 8 x 3.35 TB/s;" in out
    assert "https://www.nvidia.com/en-us/data-center/h100/" in out
    assert "547,840 B per sample" in out and "optimizer adagrad" in out and "fp32 rows" in out
    assert "Dense MFU: the MFU above" in out


def test_calc_json_and_options(capsys):
    import json

    code, out, _ = _calc(capsys, "--preset", "dlrm-dcnv2", "--samples-per-second", "1e7", "--gpus", "8",
                         "--accelerator", "H100", "--optimizer", "rowwise_adagrad", "--embedding-dtype", "fp16",
                         "--json")
    d = json.loads(out)
    per_sample = 3 * 214 * 128 * 2 + 2 * 214 * 4  # fp16 rows, one fp32 accumulator per row
    assert d["model_embedding_traffic"]["bytes_per_sample"] == per_sample
    assert d["embedding_bandwidth_utilisation"] == pytest.approx(1e7 * per_sample / (8 * 3.35e12))
    assert d["memory_bandwidth_per_accelerator"] == 3.35e12
    code, out, _ = _calc(capsys, "--preset", "dlrm-dcnv2", "--samples-per-second", "1e7", "--gpus", "8",
                         "--peak-tflops-per-gpu", "989.4")
    assert code == 0 and "Embedding bandwidth utilisation: unknown" in out and "--accelerator" in out
    code, _, err = _calc(capsys, "--preset", "llama3-8b", "--tokens-per-second", "1e5", "--gpus", "8",
                         "--accelerator", "H100", "--optimizer", "adam")
    assert code == 2 and "recommendation models" in err


def test_calc_choices_match_the_flops_tables():
    from mfu_toolkit.cli import calc

    assert set(calc._OPTIMIZERS) == set(OPTIMIZERS) and set(calc._ROW_DTYPES) == set(ROW_DTYPES)


def test_a_run_counting_steps_gets_its_samples_from_the_global_batch():
    # 10 job-level steps of 2 s with a global batch of 128 (a recorded run without model FLOPs counts
    # its work in steps): 128 / 2 s = 64 samples/s steady, and 10 × 128 / 20 s = 64 end to end
    from mfu_toolkit.analysis import embedding_bandwidth
    from mfu_toolkit.run import Run, RunMeta

    n = 10
    steps = {"attempt": [0] * n, "step": list(range(1, n + 1)), "rank": [-1] * n,
             "start_s": [2.0 * i for i in range(n)], "end_s": [2.0 * (i + 1) for i in range(n)]}
    run = Run.build(steps, None, RunMeta(name="steps", global_batch=128))
    steady = embedding_bandwidth(run, model="dlrm-dcnv2", accelerator="H100 SXM", n_accelerators=4)
    assert steady.samples_per_s == 64.0 and steady.reason == ""
    assert embedding_bandwidth(run, model="dlrm-dcnv2", accelerator="H100 SXM", n_accelerators=4,
                               basis="end_to_end").samples_per_s == 64.0
    bare = Run.build(steps, None, RunMeta(name="steps"))
    unknown = embedding_bandwidth(bare, model="dlrm-dcnv2", accelerator="H100 SXM", n_accelerators=4)
    assert unknown.samples_per_s != unknown.samples_per_s and "give the global batch" in unknown.reason
