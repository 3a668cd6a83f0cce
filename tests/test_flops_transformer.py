"""Transformer FLOPs: published PaLM numbers, shortcuts, options and properties."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit import formulas
from mfu_toolkit.flops import (
    FlopsConfigError,
    TransformerConfig,
    get_preset,
    model_flops,
    palm_flops_per_token,
    six_n,
    transformer_flops,
)

# PaLM 540B training throughput and hardware (Chowdhery et al. 2022, arXiv:2204.02311, Sec 4.1
# and Appendix B): 238.3K tokens/s on 6144 TPU v4 chips of 275 TFLOP/s (bf16) each.
PALM_TOKENS_PER_S = 238.3e3
PALM_CHIPS = 6144
TPU_V4_PEAK = 275e12


def palm_mfu(flops_per_token: float) -> float:
    return formulas.mfu_from_tokens(
        flops_per_token=flops_per_token,
        tokens_per_second=PALM_TOKENS_PER_S,
        n_accelerators=PALM_CHIPS,
        peak_flops_per_accelerator=TPU_V4_PEAK,
    )


def small(**kw) -> TransformerConfig:
    base = dict(n_layers=2, d_model=64, n_heads=4, vocab_size=100, seq_len=32)
    base.update(kw)
    return TransformerConfig(**base)


# --- published numbers -------------------------------------------------------------------


@pytest.mark.parametrize(
    "preset, tflop_per_token, digits",
    [
        # PaLM Table 22 (arXiv:2204.02311, Appendix B): model FLOPs per token, 6N + 12LHQT.
        ("palm-540b", 3.28, 2),
        ("palm-62b", 0.388, 3),
        ("palm-8b", 0.0550, 4),
    ],
)
def test_palm_table22_flops_per_token(preset, tflop_per_token, digits):
    r = model_flops(preset)
    assert round(r.training_per_token / 1e12, digits) == pytest.approx(tflop_per_token)


def test_palm_detailed_count_equals_appendix_b_formula():
    # Appendix B: 6N + 12*L*H*Q*T, where N counts matmul weights and the (shared) embedding.
    r = model_flops("palm-540b")
    n_matmul = sum(c.params for c in r.breakdown)
    assert n_matmul == pytest.approx(540.35e9, rel=1e-5)  # PaLM: N = 540.35e9
    expected = palm_flops_per_token(n_matmul, 118, 48, 256, 2048)
    assert r.training_per_token == pytest.approx(expected, rel=1e-12)


def test_palm_540b_mfu_without_attention_is_45_7_percent():
    # PaLM Appendix B: 6N only, N = 540e9 -> 45.7% MFU.
    assert round(100 * palm_mfu(six_n(540e9)), 1) == 45.7


def test_palm_540b_mfu_with_attention_is_46_2_percent():
    # PaLM Sec 4.1 / Appendix B: 6N + 12LHQT with N = 540.35e9, L=118, H=48, Q=256, T=2048.
    shortcut = palm_flops_per_token(540.35e9, 118, 48, 256, 2048)
    assert round(100 * palm_mfu(shortcut), 1) == 46.2
    # ... and the component-by-component estimate of the preset gives the same figure.
    assert round(100 * palm_mfu(model_flops("palm-540b").training_per_token), 1) == 46.2


def test_palm_540b_hfu_from_published_hardware_flops_is_57_8_percent():
    # PaLM Sec 4.1: 4.10 TFLOP per token with rematerialisation -> 57.8% HFU.
    hfu = formulas.hfu(
        hardware_flops_per_step=4.10e12 * PALM_TOKENS_PER_S,
        step_s=1.0,
        n_accelerators=PALM_CHIPS,
        peak_flops_per_accelerator=TPU_V4_PEAK,
    )
    assert round(100 * hfu, 1) == 57.8


def test_palm_540b_hfu_lies_between_selective_and_full_recomputation():
    # Neither textbook recomputation mode reproduces PaLM's 4.10 TFLOP/token: selective
    # (attention products only) gives 3.29 TFLOP/token (46.4% HFU) and full (one more forward of
    # the layers, not of the logits) gives 4.36 TFLOP/token (61.5% HFU). By hand for full: model
    # FLOPs 3.2778 T + forward 1.0926 T - logits forward 2 * 18432 * 256000 = 9.44 G. 4.10 is
    # model FLOPs plus ~75% of one forward pass: PaLM rematerialised most, not all, of the
    # forward (its exact remat policy is not published).
    base = model_flops("palm-540b")
    sel = model_flops("palm-540b", recompute="selective")
    full = model_flops("palm-540b", recompute="full")
    assert round(sel.hardware_per_token / 1e12, 2) == 3.29
    logits = 2 * 18432 * 256_000
    assert full.hardware_per_token == pytest.approx(
        base.training_per_token + base.forward_per_token - logits, rel=1e-12
    )
    assert round(full.hardware_per_token / 1e12, 2) == 4.36
    assert round(100 * palm_mfu(sel.hardware_per_token), 1) == 46.4
    assert round(100 * palm_mfu(full.hardware_per_token), 1) == 61.5
    fraction = (4.10e12 - full.training_per_token) / full.forward_per_token
    assert fraction == pytest.approx(0.75, abs=0.01)


def test_learned_position_table_counts_zero_flops_and_says_so():
    # GPT-3 175B (arXiv:2005.14165 Table 2.1): 96 layers, d 12288, T 2048, a learned 2048 x 12288
    # position table, tied 50257 x 12288 embedding. Matmul weights by hand: 96 x 12 d^2 per layer
    # and the tied logits d x V; the position table is a lookup and an add, 0 FLOPs. llm-foundry
    # (MPT flops_per_batch: 2 x n_active_params per token, x 3) would add 6 x 2048 x 12288.
    L, d, T, V = 96, 12288, 2048, 50257
    weights = L * 12 * d * d + d * V
    r = model_flops("gpt3-175b")
    assert r.training_per_token == pytest.approx(6 * weights + 12 * L * d * T, rel=1e-12)
    embedding = next(c for c in r.breakdown if c.name == "embedding")
    assert embedding.forward_flops == 0 and embedding.params == V * d + T * d
    text = "\n".join(r.conventions.describe())
    assert "learned position" in text and "llm-foundry" in text and "6 x every parameter" in text


def test_six_n_and_palm_shortcuts():
    # Kaplan et al. 2020 (6N); PaLM Appendix B (6N + 12LHQT).
    assert six_n(1e9) == 6e9
    assert palm_flops_per_token(1e9, 2, 4, 8, 16) == 6e9 + 12 * 2 * 4 * 8 * 16
    with pytest.raises(FlopsConfigError, match="seq_len"):
        palm_flops_per_token(1e9, 2, 4, 8, 0)
    with pytest.raises(FlopsConfigError, match="n_params"):
        six_n(-1)


# --- conventions and options -------------------------------------------------------------


def test_training_is_three_forward_and_recompute_changes_hardware_only():
    cfg = small()
    base = transformer_flops(cfg)
    assert base.training_per_token == pytest.approx(3 * base.forward_per_token)
    assert base.hardware_per_token == base.training_per_token
    # Hand count for small(): attention products 2 * 2 * T * d * L = 4 * 32 * 64 * 2 per token,
    # logits 2 * d * V = 2 * 64 * 100.
    attn, logits = 4 * 32 * 64 * 2, 2 * 64 * 100
    assert sum(c.forward_flops for c in base.breakdown if c.attention) == attn
    modes = {m: transformer_flops(cfg, recompute=m) for m in ("selective", "selective-eq8", "full")}
    for r in modes.values():
        assert r.training_per_token == base.training_per_token  # model FLOPs never change
    assert modes["selective"].hardware_per_token == pytest.approx(base.training_per_token + attn)
    assert modes["selective-eq8"].hardware_per_token == pytest.approx(
        base.training_per_token + 3 * attn
    )
    # Megatron's full recomputation: the layers 4 x forward, the logits 3 x.
    assert modes["full"].hardware_per_token == pytest.approx(
        4 * (base.forward_per_token - logits) + 3 * logits
    )
    assert {m: r.conventions.recompute for m, r in modes.items()} == {m: m for m in modes}


def test_causal_halving_is_off_by_default_and_stated():
    cfg = small(seq_len=100)
    off = transformer_flops(cfg)
    on = transformer_flops(cfg, causal=True)
    assert off.conventions.causal is False and on.conventions.causal is True
    get = {c.name: c.forward_flops for c in off.breakdown}
    got = {c.name: c.forward_flops for c in on.breakdown}
    assert got["attn_scores"] == pytest.approx(get["attn_scores"] * 101 / 200)
    assert got["qkv_proj"] == get["qkv_proj"]
    assert any("causal: on" in line for line in on.conventions.describe())


def test_attention_term_can_be_left_out():
    r = transformer_flops(small(), include_attention=False)
    assert sum(c.forward_flops for c in r.breakdown if c.attention) == 0
    n = sum(c.params for c in r.breakdown)  # matmul weights + embedding (untied: + head)
    emb = 100 * 64
    assert r.training_per_token == pytest.approx(6 * (n - emb))  # 6N without the lookup table
    assert "attention term: excluded" in r.conventions.describe()


def test_backward_factor_option():
    r = transformer_flops(small(), backward_factor=1.0)
    assert r.training_per_token == pytest.approx(2 * r.forward_per_token)
    assert r.conventions.backward_factor == 1.0


def test_per_token_sample_step_relations():
    r = model_flops("llama3-8b", seq_len=4096, batch=8)
    assert r.tokens_per_sample == 4096 and r.batch == 8
    assert r.forward_per_sample == pytest.approx(r.forward_per_token * 4096)
    assert r.training_per_step == pytest.approx(r.training_per_sample * 8)
    assert r.training_per_unit == r.training_per_token
    assert r.unit == "token"


def test_breakdown_frame_is_tidy_and_shares_sum_to_one():
    r = model_flops("mixtral-8x7b", seq_len=4096)
    frame = r.to_frame()
    assert list(frame.columns[:4]) == [
        "model",
        "component",
        "forward_flops_per_token",
        "forward_flops_per_sample",
    ]
    assert "share" in frame.columns
    assert frame["share"].sum() == pytest.approx(1.0)
    assert frame["forward_flops_per_token"].sum() == pytest.approx(r.forward_per_token)
    assert {"moe_router", "moe_routed_experts", "logits", "attn_scores"} <= set(frame.component)
    totals = r.totals_frame()
    assert set(totals.stage) == {"forward", "training", "hardware"}
    assert set(totals["per"]) == {"token", "sample", "step"}


def test_to_dict_is_json_serialisable():
    import json

    d = json.loads(json.dumps(model_flops("palm-8b").to_dict()))
    assert d["conventions"]["causal"] is False
    assert d["params"]["total"] > 0
    assert d["breakdown"][0]["component"] == "embedding"


def test_importing_flops_does_not_import_pandas():
    code = "import sys, mfu_toolkit.flops, mfu_toolkit.cli.flops; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- validation --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "changes, param, fragment",
    [
        ({"n_heads": 5}, "n_heads", "divisor of d_model=64"),
        ({"n_kv_heads": 3}, "n_kv_heads", "divisor of n_heads=4"),
        ({"n_kv_heads": 8}, "n_kv_heads", "[1, 4]"),
        ({"n_layers": 0}, "n_layers", ">= 1"),
        ({"d_model": -64}, "d_model", ">= 1"),
        ({"ffn_type": "relu"}, "ffn_type", "'gelu', 'swiglu'"),
        ({"n_experts": 4, "top_k": 5}, "top_k", "[1, 4]"),
        ({"n_layers": 2, "n_experts": 4, "n_dense_layers": 3}, "n_dense_layers", "[0, 2]"),
        ({"seq_len": 1.5}, "seq_len", "integer"),
        ({"tied_embeddings": "yes"}, "tied_embeddings", "True or False"),
    ],
)
def test_invalid_config_names_parameter_range_and_value(changes, param, fragment):
    with pytest.raises(FlopsConfigError) as err:
        small(**changes)
    msg = str(err.value)
    assert msg.startswith(param) and fragment in msg
    assert repr(changes[param]) in msg  # the value received
    assert isinstance(err.value, ValueError)


def test_invalid_options_are_errors():
    with pytest.raises(FlopsConfigError, match="recompute must be one of 'none', 'selective'"):
        transformer_flops(small(), recompute="partial")
    with pytest.raises(FlopsConfigError, match="batch"):
        transformer_flops(small(), batch=0)


def test_config_is_frozen_and_with_rederives_defaults():
    cfg = small()
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.n_layers = 3  # type: ignore[misc]
    assert (cfg.head_dim, cfg.n_kv_heads, cfg.d_ff) == (16, 4, 256)
    wider = cfg.with_(d_model=128, n_heads=8)
    assert (wider.head_dim, wider.n_kv_heads, wider.d_ff) == (16, 8, 512)
    kept = dataclasses.replace(cfg, d_model=128)  # replace keeps resolved values
    assert kept.d_ff == 256


def test_head_dim_may_differ_from_width_over_heads():
    # PaLM 540B: 48 heads of 256 = 12288 != d_model 18432 (arXiv:2204.02311, Table 1).
    cfg = get_preset("palm-540b").config
    assert cfg.head_dim * cfg.n_heads != cfg.d_model


# --- properties --------------------------------------------------------------------------

configs = st.builds(
    lambda layers, heads, hd, kv_div, ffn, vocab, seq, tied: TransformerConfig(
        n_layers=layers,
        d_model=heads * hd,
        n_heads=heads,
        n_kv_heads=max(1, heads // kv_div),
        ffn_type=ffn,
        vocab_size=vocab,
        seq_len=seq,
        tied_embeddings=tied,
    ),
    st.integers(1, 8),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from([8, 16, 32]),
    st.sampled_from([1, 2, 4]),
    st.sampled_from(["gelu", "swiglu"]),
    st.integers(1, 5000),
    st.integers(1, 4096),
    st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(configs, st.integers(1, 4))
def test_flops_monotone_in_layers(cfg, extra):
    a = transformer_flops(cfg)
    b = transformer_flops(cfg.with_(n_layers=cfg.n_layers + extra))
    assert b.forward_per_token > a.forward_per_token
    assert b.params.total > a.params.total


@settings(max_examples=60, deadline=None)
@given(configs)
def test_flops_monotone_in_width_and_sequence(cfg):
    a = transformer_flops(cfg)
    wider = cfg.with_(d_model=cfg.d_model * 2, head_dim=cfg.head_dim * 2)
    assert transformer_flops(wider).forward_per_token > a.forward_per_token
    longer = transformer_flops(cfg, seq_len=cfg.seq_len + 1)
    assert longer.forward_per_token > a.forward_per_token


@settings(max_examples=60, deadline=None)
@given(configs)
def test_gqa_with_kv_heads_equal_to_heads_is_mha(cfg):
    mha = cfg.with_(n_kv_heads=None)
    gqa = cfg.with_(n_kv_heads=cfg.n_heads)
    assert transformer_flops(mha) == transformer_flops(gqa)


@settings(max_examples=60, deadline=None)
@given(configs)
def test_moe_with_one_expert_top1_is_dense_plus_router(cfg):
    dense = transformer_flops(cfg)
    moe = transformer_flops(cfg.with_(n_experts=1, top_k=1))
    router = 2 * cfg.d_model * 1 * cfg.n_layers  # a 1-wide router per layer
    assert moe.forward_per_token == pytest.approx(dense.forward_per_token + router)
    assert moe.params.total == dense.params.total + cfg.d_model * cfg.n_layers
    assert moe.params.active == moe.params.total


@settings(max_examples=60, deadline=None)
@given(configs, st.integers(2, 16), st.integers(1, 4))
def test_moe_active_params_and_flops_grow_with_top_k_not_experts(cfg, experts, k):
    k = min(k, experts)
    a = transformer_flops(cfg.with_(n_experts=experts, top_k=k))
    more = transformer_flops(cfg.with_(n_experts=experts * 2, top_k=k))
    assert a.params.active <= a.params.total
    assert more.params.total > a.params.total
    assert more.params.active == a.params.active + cfg.d_model * experts * cfg.n_layers
    assert more.forward_per_token == pytest.approx(
        a.forward_per_token + 2 * cfg.d_model * experts * cfg.n_layers
    )


@settings(max_examples=60, deadline=None)
@given(configs, st.sampled_from(["none", "selective", "selective-eq8", "full"]), st.booleans())
def test_breakdown_sums_and_ordering(cfg, recompute, causal):
    r = transformer_flops(cfg, recompute=recompute, causal=causal)
    assert sum(c.forward_flops for c in r.breakdown) == pytest.approx(r.forward_per_token)
    assert r.forward_per_token < r.training_per_token <= r.hardware_per_token
    # At most one more forward (eq. 8: three more attention forwards, at most 3 forwards).
    bound = 2.0 if recompute == "selective-eq8" else 4 / 3
    assert r.hardware_per_token <= bound * r.training_per_token * (1 + 1e-12)
