"""Recommendation-model FLOPs: MLPerf DLRM-DCNv2, DLRM dot interaction, HSTU, MLP, custom blocks."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.flops import (
    DLRMConfig,
    FlopsConfigError,
    HSTUConfig,
    MLPConfig,
    custom_block,
    dlrm_flops,
    get_preset,
    hstu_flops,
    hstu_sequence_flops,
    linear,
    mlp_flops,
    model_flops,
)

# --- MLPerf DLRM-DCNv2 ---------------------------------------------------------------------


def test_mlperf_dlrm_dcnv2_forward_is_32_060_928_flops_per_sample():
    # MLPerf Training reference recommendation_v2/torchrec_dlrm, README.MD
    # (https://github.com/mlcommons/training/tree/master/recommendation_v2/torchrec_dlrm):
    # --dense_arch_layer_sizes 512,256,128 on 13 dense features, 26 sparse features with
    # --embedding_dim 128, --interaction_type=dcn --dcn_num_layers=3 --dcn_low_rank_dim=512 on
    # x0 = 128 + 26 * 128 = 3456 inputs, --over_arch_layer_sizes 1024,1024,512,256,1.
    # No MLPerf document states a FLOPs count; this one is derived by hand from those sizes,
    # counting weight matmuls only (2 FLOPs per MAC): the cross layers' U (3456 -> 512) and
    # V (512 -> 3456) matmuls; no biases, no elementwise x0 * (.) + x, no sigmoid.
    bottom = 2 * (13 * 512 + 512 * 256 + 256 * 128)  # 360,448
    cross = 3 * 2 * (3456 * 512 + 512 * 3456)  # 21,233,664
    top = 2 * (3456 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256 * 1)  # 10,466,816
    assert bottom + cross + top == 32_060_928
    r = model_flops("dlrm-dcnv2")
    assert r.forward_per_sample == bottom + cross + top
    parts = {c.name: c.forward_flops for c in r.breakdown}
    assert (parts["bottom_mlp"], parts["interaction_dcnv2"], parts["top_mlp"]) == (
        bottom,
        cross,
        top,
    )
    assert parts["embedding_lookup"] == 0
    assert r.training_per_sample == 3 * 32_060_928
    preset = get_preset("dlrm-dcnv2")
    # A derivation, not a published figure: kept out of `published` and said in the source.
    assert "forward_flops_per_sample" not in preset.published
    assert preset.derived["forward_flops_per_sample"] == bottom + cross + top
    assert "not a number any MLPerf document states" in preset.source
    assert "https://github.com/mlcommons/training/tree/master/recommendation_v2" in preset.source


def test_mlperf_dlrm_dcnv2_other_conventions_do_not_give_the_reference():
    cfg = get_preset("dlrm-dcnv2").config
    full_rank = dlrm_flops(dataclasses.replace(cfg, cross_rank=None))
    assert full_rank.forward_per_sample != 32_060_928
    assert full_rank.forward_per_sample == pytest.approx(32_060_928 - 21_233_664 + 6 * 3456**2)


def test_mlperf_dlrm_dcnv2_embedding_bytes_and_params():
    # Multi-hot sizes and table rows from the MLPerf reference README (recommendation_v2).
    r = model_flops("dlrm-dcnv2", batch=65536)
    assert r.embedding_bytes_per_sample == 214 * 128 * 4  # 214 lookups of 128 fp32
    rows = sum(get_preset("dlrm-dcnv2").config.embedding_rows)
    assert r.params.embedding == rows * 128
    assert r.params.non_embedding == r.params.total - r.params.embedding
    assert r.params.active == r.params.non_embedding + 214 * 128
    assert r.forward_per_step == 32_060_928 * 65536
    assert r.tokens_per_sample is None and r.forward_per_token is None
    assert r.unit == "sample" and r.forward_per_unit == r.forward_per_sample


# --- DLRM with dot interaction (Naumov et al. 2019, arXiv:1906.00091) ------------------------


def dot_dlrm(**kw) -> DLRMConfig:
    base = dict(
        n_dense=13,
        bottom_mlp=(512, 256, 64),
        n_sparse=26,
        embedding_dim=64,
        top_mlp=(512, 256, 1),
        interaction="dot",
    )
    base.update(kw)
    return DLRMConfig(**base)


def test_dot_interaction_counts_the_gram_matrix_and_sizes_the_top_mlp():
    cfg = dot_dlrm()
    assert cfg.top_in == 64 + 27 * 26 // 2  # bottom output + strictly lower triangle
    assert dot_dlrm(dot_self_interaction=True).top_in == 64 + 27 * 28 // 2
    parts = {c.name: c.forward_flops for c in dlrm_flops(cfg).breakdown}
    assert parts["interaction_dot"] == 2 * 27 * 27 * 64
    assert parts["top_mlp"] == 2 * (cfg.top_in * 512 + 512 * 256 + 256)
    notes = " ".join(dlrm_flops(cfg).conventions.notes)
    assert "Gram" in notes


def test_dot_interaction_needs_equal_widths():
    with pytest.raises(
        FlopsConfigError, match=r"bottom_mlp must be a tower ending in embedding_dim=64"
    ):
        dot_dlrm(bottom_mlp=(512, 32))


@pytest.mark.parametrize(
    "changes, param",
    [
        ({"n_sparse": 0}, "n_sparse"),
        ({"top_mlp": ()}, "top_mlp"),
        ({"top_mlp": (10, -1)}, "top_mlp[1]"),
        ({"interaction": "cross"}, "interaction"),
        ({"cross_rank": 0, "interaction": "dcnv2"}, "cross_rank"),
        ({"pooling_factors": (1, 2)}, "pooling_factors"),
        ({"embedding_rows": "big"}, "embedding_rows"),
    ],
)
def test_dlrm_validation_names_the_parameter(changes, param):
    with pytest.raises(FlopsConfigError) as err:
        dot_dlrm(**changes)
    assert str(err.value).startswith(param + " must be")


def test_dlrm_without_bottom_mlp_feeds_dense_features_to_the_cross_network():
    # DCN-V2 paper layout (Wang et al. 2021, arXiv:2008.13535): x0 = [dense, embeddings].
    cfg = DLRMConfig(
        n_dense=13,
        bottom_mlp=(),
        n_sparse=2,
        embedding_dim=8,
        top_mlp=(4, 1),
        interaction="dcnv2",
        cross_layers=2,
    )
    assert cfg.interaction_width == 13 + 16
    parts = {c.name: c.forward_flops for c in dlrm_flops(cfg).breakdown}
    assert parts["interaction_dcnv2"] == 2 * 29 * 29 * 2
    assert "bottom_mlp" not in parts


def test_concat_interaction_is_free():
    cfg = dot_dlrm(interaction="concat")
    parts = {c.name: c.forward_flops for c in dlrm_flops(cfg).breakdown}
    assert parts["interaction_concat"] == 0
    assert cfg.top_in == 64 + 26 * 64


# --- HSTU (Zhai et al. 2024, arXiv:2402.17152) ----------------------------------------------


def hstu(**kw) -> HSTUConfig:
    base = dict(n_layers=2, d_model=16, n_heads=2, dqk=4, dv=8, seq_len=10)
    base.update(kw)
    return HSTUConfig(**base)


def test_hstu_sequence_flops_by_hand():
    cfg = hstu()
    n, d, h, L = 10, 16, 2, 2
    parts = {c.name: c.forward_flops for c in hstu_sequence_flops(cfg, n)}
    assert parts["uvqk_proj"] == 2 * n * d * h * (2 * 8 + 2 * 4) * L
    pairs = n * (n + 1) / 2  # causal: the unmasked triangle of real (not padded) positions
    assert parts["attn_scores"] == 2 * pairs * h * 4 * L
    assert parts["attn_values"] == 2 * pairs * h * 8 * L
    assert parts["out_proj"] == 2 * n * h * 8 * d * L
    non_causal = {c.name: c.forward_flops for c in hstu_sequence_flops(cfg, n, causal=False)}
    assert non_causal["attn_scores"] == 2 * n * n * h * 4 * L


def test_hstu_variable_lengths_sum_real_sequences():
    cfg = hstu()
    r = hstu_flops(cfg, lengths=[5, 15, 25])
    each = [sum(c.forward_flops for c in hstu_sequence_flops(cfg, n)) for n in (5, 15, 25)]
    assert r.batch == 3
    assert r.forward_per_step == pytest.approx(sum(each))
    assert r.forward_per_sample == pytest.approx(sum(each) / 3)
    assert r.tokens_per_sample == 15
    # Attention grows with n^2: the mean length (15) undercounts the real batch.
    assert r.forward_per_sample > hstu_flops(cfg, seq_len=15).forward_per_sample
    assert any("real sequence lengths" in n for n in r.conventions.notes)


def test_hstu_preset_config_matches_the_repository():
    # generative-recommenders configs/ml-20m/hstu-sampled-softmax-n128-large-final.gin
    cfg = get_preset("hstu").config
    assert (cfg.n_layers, cfg.n_heads, cfg.dqk, cfg.dv, cfg.d_model) == (16, 8, 32, 32, 256)
    assert (cfg.seq_len, cfg.n_negatives, cfg.causal) == (200, 128, True)
    r = model_flops("hstu-ml-20m-large")
    assert r.conventions.causal is True
    assert r.embedding_bytes_per_sample == 200 * 256 * 4
    assert "2402.17152" in get_preset("hstu").source


def test_hstu_selective_recompute_adds_attention_forward():
    r = hstu_flops(hstu(), recompute="selective")
    attn = sum(c.forward_flops for c in r.breakdown if c.attention)
    assert attn > 0
    assert r.hardware_per_sample == pytest.approx(r.training_per_sample + attn)


def test_hstu_negatives_add_a_similarity_row():
    parts = {c.name for c in hstu_sequence_flops(hstu(n_negatives=0), 10)}
    assert "loss_similarity" not in parts
    with_neg = {c.name: c.forward_flops for c in hstu_sequence_flops(hstu(n_negatives=7), 10)}
    assert with_neg["loss_similarity"] == 2 * 10 * 16 * 8


def test_hstu_validation():
    with pytest.raises(FlopsConfigError, match=r"^dqk must be an integer >= 1; got 0"):
        hstu(dqk=0)
    with pytest.raises(FlopsConfigError, match="lengths"):
        hstu_flops(hstu(), lengths=[3, 0])


# --- MLP and custom blocks -------------------------------------------------------------------


def test_mlp_flops_and_params():
    cfg = MLPConfig(in_features=10, layer_sizes=[20, 5])
    r = mlp_flops(cfg, batch=4)
    assert r.forward_per_sample == 2 * (10 * 20 + 20 * 5)
    assert r.params.total == 10 * 20 + 20 + 20 * 5 + 5
    assert r.forward_per_step == 4 * r.forward_per_sample
    assert cfg.layer_sizes == (20, 5)  # lists are frozen into tuples
    assert "attention: none in this model" in r.conventions.describe()


def test_custom_blocks_join_the_breakdown():
    extra = (linear("tower_b", 64, 32, times=2), custom_block("gating", 1000.0, params=7))
    cfg = dot_dlrm(extra_blocks=extra)
    base = dlrm_flops(dot_dlrm())
    r = dlrm_flops(cfg)
    assert r.forward_per_sample == base.forward_per_sample + 2 * 64 * 32 * 2 + 1000
    assert r.params.total == base.params.total + 64 * 32 * 2 + 7
    assert {"tower_b", "gating"} <= {c.name for c in r.breakdown}
    with pytest.raises(FlopsConfigError, match="extra_blocks"):
        dot_dlrm(extra_blocks=("nope",))


def test_recsys_frame():
    frame = model_flops("dlrm-dcnv2").to_frame()
    assert frame["forward_flops_per_token"].isna().all()
    assert frame["forward_flops_per_sample"].sum() == 32_060_928
    assert frame["share"].sum() == pytest.approx(1.0)


def test_sequence_options_are_refused_for_dlrm():
    for kw in ({"seq_len": 10}, {"causal": True}, {"lengths": [3]}, {"include_attention": False}):
        with pytest.raises(FlopsConfigError, match="applies to sequence models"):
            model_flops("dlrm-dcnv2", **kw)


# --- properties ------------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 6),
    st.one_of(st.none(), st.integers(1, 256)),
    st.integers(1, 8),
    st.sampled_from([8, 16, 32]),
)
def test_dcnv2_flops_monotone_in_cross_layers(layers, rank, n_sparse, dim):
    cfg = DLRMConfig(
        n_dense=4,
        bottom_mlp=(dim,),
        n_sparse=n_sparse,
        embedding_dim=dim,
        top_mlp=(8, 1),
        interaction="dcnv2",
        cross_layers=layers,
        cross_rank=rank,
    )
    a = dlrm_flops(cfg)
    b = dlrm_flops(dataclasses.replace(cfg, cross_layers=layers + 1))
    assert b.forward_per_sample > a.forward_per_sample
    assert a.training_per_sample == pytest.approx(3 * a.forward_per_sample)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 300), min_size=1, max_size=8))
def test_hstu_mean_of_lengths_never_undercounts(lengths):
    # Attention is convex in length (Jensen): FLOPs of real lengths >= FLOPs of the mean length,
    # with equality when all lengths are equal; and FLOPs grow with length.
    cfg = hstu(seq_len=1)
    real = hstu_flops(cfg, lengths=lengths).forward_per_sample
    mean_len = sum(lengths) / len(lengths)
    per_seq = {n: sum(c.forward_flops for c in hstu_sequence_flops(cfg, n)) for n in lengths}
    assert real == pytest.approx(sum(per_seq[n] for n in lengths) / len(lengths))
    lo, hi = min(lengths), max(lengths)
    assert per_seq[lo] <= real * (1 + 1e-12) and real <= per_seq[hi] * (1 + 1e-12)
    if mean_len == int(mean_len):
        at_mean = sum(c.forward_flops for c in hstu_sequence_flops(cfg, int(mean_len)))
        assert real >= at_mean * (1 - 1e-12)
