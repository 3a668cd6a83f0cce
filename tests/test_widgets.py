"""The widgets' pure functions: the MFU calculator and the model-FLOPs explorer.

Expected values are computed by hand from the formula or the published shape each test names,
or taken from the flops API where the test is about the explorer's plumbing (then it says so).
"""

from __future__ import annotations

import subprocess
import sys

import matplotlib.pyplot as plt
import pytest

from mfu_toolkit.flops import FlopsConfigError, model_flops
from mfu_toolkit.widgets import (
    CalculatorInputs,
    calculator_html,
    calculator_result,
    explorer_flops,
    explorer_seq_len,
    flops_explorer,
    flops_explorer_figure,
    flops_explorer_headline,
    flops_explorer_html,
    flops_explorer_seq_note,
    flops_explorer_table,
    mfu_calculator,
    si_flops,
)

# Llama 3 8B (arXiv:2407.21783 Table 3; HF config.json): L=32, d=4096, H=32 query heads of
# Q=128, 8 KV heads, SwiGLU d_ff=14336, vocabulary 128256.
L, D, H, Q, HKV, DFF, VOCAB = 32, 4096, 32, 128, 8, 14336, 128_256


def llama_forward_per_token(T: int, *, causal: bool = False) -> float:
    """PaLM Appendix B per-token forward FLOPs, written out by hand for Llama 3 8B."""
    keys = (T + 1) / 2 if causal else T
    qkv = 2 * D * (H + 2 * HKV) * Q * L
    attn = 2 * (2 * keys * H * Q * L)  # scores + values
    out = 2 * H * Q * D * L
    ffn = 2 * 3 * D * DFF * L
    logits = 2 * D * VOCAB
    return qkv + attn + out + ffn + logits


# Mixtral 8x7B (arXiv:2401.04088 Table 1) and Mistral 7B (arXiv:2310.06825 Table 1) share this
# shape: L=32, d=4096, 32 query heads of 128, 8 KV heads, SwiGLU width 14336, vocabulary 32000.
# Neither paper states a training sequence length, so every count here passes one.
ML, MD, MH, MQ, MKV, MFF, MVOCAB = 32, 4096, 32, 128, 8, 14336, 32_000


def mistral_forward_per_token(T: int, *, experts: int = 0, top_k: int = 1) -> float:
    """Per-token forward FLOPs, non-causal, by hand: Mistral 7B (``experts=0``; its 4096-key
    window does not bind at T <= 4096) or Mixtral with ``experts`` routed, ``top_k`` used."""
    qkv = 2 * MD * (MH + 2 * MKV) * MQ * ML
    attn = 2 * (2 * T * MH * MQ * ML)
    out = 2 * MH * MQ * MD * ML
    router = 2 * MD * experts * ML
    ffn = (top_k if experts else 1) * 2 * 3 * MD * MFF * ML
    return qkv + attn + out + router + ffn + 2 * MD * MVOCAB


# --------------------------------------------------------------------------------------------
# calculator


def test_calculator_mfu_by_hand():
    # 2.4e15 FLOP / 1.2 s = 2e15 FLOP/s against 128 x 989.4e12 (H100 SXM bf16 dense, datasheet).
    r = calculator_result(CalculatorInputs("H100 SXM", "bf16", 128, 2.4e15, 1.2))
    assert r.mfu == pytest.approx(2e15 / (128 * 989.4e12), rel=1e-12)
    page = calculator_html(CalculatorInputs("H100 SXM", "bf16", 128, 2.4e15, 1.2))
    assert "MFU: 1.58%" in page
    assert "2,000.00 TFLOP/s" in page and "128 × 989.4 TFLOP/s" in page


def test_calculator_sparse_peak_halves_mfu():
    # The 2:4 sparse peak is twice the dense one, so the same job reads half the MFU.
    dense = calculator_result(CalculatorInputs("H100 SXM", "bf16", 64, 1.5e16, 2.0))
    sparse = calculator_result(CalculatorInputs("H100 SXM", "bf16", 64, 1.5e16, 2.0, sparse=True))
    assert sparse.mfu == pytest.approx(dense.mfu / 2, rel=1e-3)
    assert "sparse" in calculator_html(CalculatorInputs("H100 SXM", "bf16", 64, 1.5e16, 2.0, sparse=True))


def test_calculator_refuses_impossible_and_unknown_inputs():
    # 1e19 FLOP in 0.05 s on one H100 is 2e20 FLOP/s: ~200,000x its peak.
    assert "impossible" in calculator_html(CalculatorInputs("H100 SXM", "bf16", 1, 1e19, 0.05))
    no_bf16 = calculator_html(CalculatorInputs("V100 SXM2", "bf16", 8, 1e15, 1.0))
    assert "No MFU" in no_bf16 and "bf16" in no_bf16
    assert "No MFU" in calculator_html(CalculatorInputs("H1OO", "bf16", 8, 1e15, 1.0))


def test_calculator_widget_recomputes_on_slider_change():
    box = mfu_calculator(n_accelerators=128)
    n = box.children[1]
    out = box.children[-1]
    assert "MFU: 1.58%" in out.value
    n.value = 64  # half the GPUs: twice the MFU
    assert out.value == calculator_html(CalculatorInputs("H100 SXM", "bf16", 64, 2.4e15, 1.2))
    assert "MFU: 3.16%" in out.value
    assert "mfu-calculator" in box._dom_classes


# --------------------------------------------------------------------------------------------
# explorer: pure functions


def test_si_flops():
    assert si_flops(57_912_852_480) == "57.91 GFLOP"
    assert si_flops(32_060_928) == "32.06 MFLOP"
    assert si_flops(2.4e18) == "2.4 EFLOP"
    assert si_flops(0) == "0 FLOP"


def test_explorer_table_llama3_8b_by_hand():
    t = flops_explorer_table("llama3-8b", seq_len=8192, batch=512).set_index("component")
    f = t["forward_flops"]
    assert f["embedding"] == 0
    assert f["qkv_proj"] == 2 * D * (H + 2 * HKV) * Q * L
    assert f["attn_scores"] == f["attn_values"] == 2 * 8192 * H * Q * L
    assert f["attn_out_proj"] == 2 * H * Q * D * L
    assert f["ffn"] == 2 * 3 * D * DFF * L == 11_274_289_152
    assert f["logits"] == 2 * D * VOCAB
    assert f.sum() == llama_forward_per_token(8192)
    assert t["share"].sum() == pytest.approx(1.0)
    assert set(t["unit"]) == {"token"}
    # training per step = forward per token x 3 x tokens per sequence x sequences per step
    assert t["training_flops_per_step"].sum() == pytest.approx(
        3 * llama_forward_per_token(8192) * 8192 * 512, rel=1e-12)


def test_explorer_seq_len_moves_only_attention():
    a = flops_explorer_table("llama3-8b", seq_len=8192).set_index("component")["forward_flops"]
    b = flops_explorer_table("llama3-8b", seq_len=16384).set_index("component")["forward_flops"]
    attention = ["attn_scores", "attn_values"]
    assert (b[attention] == 2 * a[attention]).all()
    assert b.drop(attention).equals(a.drop(attention))


def test_explorer_causal_halving():
    # With a causal mask a query sees (T + 1) / 2 keys on average (PaLM does not halve).
    t = flops_explorer_table("llama3-8b", seq_len=4096, causal=True).set_index("component")
    assert t.loc["attn_scores", "forward_flops"] == 2 * (4097 / 2) * H * Q * L
    assert t["forward_flops"].sum() == pytest.approx(llama_forward_per_token(4096, causal=True))


def test_explorer_headline_by_hand():
    # 3 x forward = 57,912,852,480 FLOPs per token; x 8192 tokens x 512 sequences = 242.9 PFLOP.
    per_token = 3 * llama_forward_per_token(8192)
    assert per_token == 57_912_852_480
    headline = flops_explorer_headline("llama3-8b", seq_len=8192, batch=512)
    assert headline == "Training: 57.91 GFLOP per token · 242.9 PFLOP per step of 512 sequences"
    assert f"{per_token * 8192 * 512 / 1e15:.1f} PFLOP" == "242.9 PFLOP"
    one = flops_explorer_headline("llama3-8b", seq_len=8192, batch=1)
    assert one.endswith("per step of 1 sequence")


def test_explorer_mixtral_top_k_and_experts():
    # Mixtral 8x7B (arXiv:2401.04088 Table 1): 32 layers, d=4096, SwiGLU experts of width 14336.
    # The paper states no training length (32768 is the context window): T = 4096 is chosen here.
    expert = 2 * 3 * 4096 * 14336 * 32
    for k in (1, 2, 4):
        t = flops_explorer_table("mixtral-8x7b", seq_len=4096, top_k=k).set_index("component")["forward_flops"]
        assert t["moe_routed_experts"] == k * expert
        assert t["attn_scores"] == 2 * 4096 * 32 * 128 * 32  # 2·T·H·Q per layer, 32 layers
        assert t.sum() == mistral_forward_per_token(4096, experts=8, top_k=k)
    # More experts at the same top-k: only the router (2 x d x E per layer) grows ...
    e8 = flops_explorer_table("mixtral-8x7b", seq_len=4096, experts=8).set_index("component")["forward_flops"]
    e64 = flops_explorer_table("mixtral-8x7b", seq_len=4096, experts=64).set_index("component")["forward_flops"]
    assert e64["moe_router"] - e8["moe_router"] == 2 * 4096 * (64 - 8) * 32
    assert e64.drop("moe_router").equals(e8.drop("moe_router"))
    # ... while the parameters grow by 56 experts of 3 x 4096 x 14336 in each of 32 layers.
    p8 = explorer_flops("mixtral-8x7b", seq_len=4096, experts=8).params.total
    p64 = explorer_flops("mixtral-8x7b", seq_len=4096, experts=64).params.total
    assert p64 - p8 == 56 * 3 * 4096 * 14336 * 32 + 4096 * 56 * 32
    assert "active per token" in flops_explorer_html("mixtral-8x7b", seq_len=4096)
    # Without a length the pure functions refuse, naming seq_len (the widget gives one).
    with pytest.raises(FlopsConfigError, match="seq_len"):
        explorer_flops("mixtral-8x7b", top_k=1)
    page = flops_explorer_html("mixtral-8x7b")
    assert "No FLOPs" in page and "seq_len" in page


def test_explorer_dlrm_matches_mlperf_and_reports_bytes():
    # MLPerf DLRM-DCNv2 reference: 32,060,928 forward FLOPs per sample (shared/DESIGN.md).
    t = flops_explorer_table("dlrm-dcnv2", batch=2)
    assert t["forward_flops"].sum() == 32_060_928
    assert set(t["unit"]) == {"sample"}
    assert t["training_flops_per_step"].sum() == 3 * 32_060_928 * 2
    page = flops_explorer_html("dlrm-dcnv2")
    # 214 multi-hot lookups x 128 dims x 4 bytes (fp32) = 109,568 bytes; 32,060,928 / 109,568 = 293.
    assert "109,568" in page and "293 forward FLOPs per byte" in page
    assert "Attention" not in page  # no attention in a DLRM


def test_explorer_hstu_is_causal_by_default():
    # HSTU (arXiv:2402.17152) attends causally; the explorer keeps the preset's default.
    default = explorer_flops("hstu-ml-20m-large")
    assert default.conventions.causal is True
    assert default.forward_per_sample == model_flops("hstu-ml-20m-large").forward_per_sample  # same API
    off = explorer_flops("hstu-ml-20m-large", causal=False)
    assert off.forward_per_sample > default.forward_per_sample


def test_explorer_recompute_changes_hardware_flops_only():
    # Model FLOPs never move with recomputation; hardware FLOPs add, per token, by hand for
    # Llama 3 8B at its published T = 8192 (model = 3 x forward):
    #   full (Megatron, Narayanan et al. 2021 eq. 3): every layer's forward again, not the
    #     logits: (3F + F - 2·d·V) / 3F = 1.315, a little under 4/3;
    #   selective (Korthikanti et al. 2022, Sec 5): the attention products once more,
    #     A = 2·2·T·H·Q·L: (3F + A) / 3F = 1.074;
    #   selective-eq8 (their eq. 8): 3 A: (3F + 3A) / 3F = 1.222.
    F = llama_forward_per_token(8192)
    logits, A = 2 * D * VOCAB, 2 * 2 * 8192 * H * Q * L
    ratios = {"full": (4 * F - logits) / (3 * F), "selective": (3 * F + A) / (3 * F),
              "selective-eq8": (3 * F + 3 * A) / (3 * F)}
    assert [f"{ratios[m]:.3f}" for m in ("full", "selective", "selective-eq8")] == ["1.315", "1.074", "1.222"]
    none = flops_explorer_table("llama3-8b", seq_len=8192)
    for mode, ratio in ratios.items():
        assert none.equals(flops_explorer_table("llama3-8b", seq_len=8192, recompute=mode))
        r = explorer_flops("llama3-8b", recompute=mode)
        assert r.hardware_per_token == pytest.approx(ratio * 3 * F, rel=1e-12)
        page = flops_explorer_html("llama3-8b", recompute=mode)
        assert f"= {ratio:.3f} × model" in page
        assert f"recompute {mode}" in page  # the conventions line names the mode
    assert "recompute full: layers, not logits" in flops_explorer_html("llama3-8b", recompute="full")
    assert "the logits (output) layer not" in flops_explorer_html("llama3-8b", recompute="full")
    assert "= 1.000 × model" in flops_explorer_html("llama3-8b")


@pytest.mark.parametrize(
    ("preset", "options", "named"),
    [
        ("llama3-8b", {"experts": 4}, "experts"),
        ("dlrm-dcnv2", {"seq_len": 512}, "seq_len"),
        ("mixtral-8x7b", {"experts": 4, "top_k": 5}, "top_k"),
        ("llama3-8b", {"batch": 0}, "batch"),
        ("no-such-model", {}, "no-such-model"),
    ],
)
def test_explorer_errors_name_the_parameter(preset, options, named):
    with pytest.raises(FlopsConfigError, match=named):
        explorer_flops(preset, **options)
    page = flops_explorer_html(preset, **options)
    assert "No FLOPs" in page and named in page


def test_explorer_figure_is_a_bare_figure():
    before = plt.get_fignums()
    fig = flops_explorer_figure("llama3-8b", seq_len=8192)
    assert plt.get_fignums() == before  # not registered with pyplot: redraws never pile up
    (ax,) = fig.axes
    assert len(ax.patches) == 7  # one bar per component
    assert ax.get_xlabel() == "forward GFLOP per token"
    widths = sorted(p.get_width() for p in ax.patches)
    assert widths[-1] == pytest.approx(2 * 3 * D * DFF * L / 1e9)  # the FFN bar, in GFLOP


# --------------------------------------------------------------------------------------------
# explorer: the widget layer


def _parts(box):
    pick, rec, cau = box.children[0].children
    seq, _note = box.children[1].children
    bat = box.children[2]
    n_exp, k = box.children[3].children
    return pick, rec, cau, seq, bat, n_exp, k, box.children[4]


def test_explorer_widget_follows_its_controls(capsys):
    box = flops_explorer("llama3-8b", batch=512)
    pick, rec, cau, seq, bat, n_exp, k, head = _parts(box)
    assert "flops-explorer" in box._dom_classes
    assert head.value == flops_explorer_html("llama3-8b", seq_len=8192, batch=512, causal=False)
    assert n_exp.disabled and k.disabled and not seq.disabled
    seq.value = 16384
    assert head.value == flops_explorer_html("llama3-8b", seq_len=16384, batch=512, causal=False)
    pick.value = "mixtral-8x7b"  # no published training length: the slider starts at 4096
    assert (seq.value, n_exp.value, k.value, n_exp.disabled) == (4096, 8, 2, False)
    n_exp.value = 1  # top-k is clamped to the number of experts
    assert (k.max, k.value) == (1, 1)
    assert head.value == flops_explorer_html("mixtral-8x7b", seq_len=4096, batch=512, experts=1,
                                             top_k=1, causal=False)
    # One routed expert of top-1 at T = 4096, by hand: 3 x 16,368,533,504 = 49.11 GFLOP per
    # token; x 4096 tokens x 512 sequences = 103.0 PFLOP per step.
    per_token = 3 * mistral_forward_per_token(4096, experts=1, top_k=1)
    assert per_token == 49_105_600_512
    assert "Training: 49.11 GFLOP per token · 103 PFLOP per step of 512 sequences" in head.value
    pick.value = "dlrm-dcnv2"
    assert seq.disabled and cau.disabled and n_exp.disabled
    assert head.value == flops_explorer_html("dlrm-dcnv2", batch=512)
    pick.value = "hstu-ml-20m-large"
    assert seq.value == 200 and cau.value is True
    chart, table = box.children[-1].outputs  # one chart and one table, replaced in place
    assert chart["data"]["image/png"] and "loss_similarity" in table["data"]["text/plain"]  # HSTU's rows
    assert capsys.readouterr().out == ""  # nothing printed into the Output (see show_outputs)


def test_explorer_presets_without_a_training_length(capsys):
    # mixtral-8x7b, mistral-7b and gemma-2-9b publish a context window, not a training length:
    # the explorer starts them at 4096 and says the value is the user's choice.
    for name in ("mixtral-8x7b", "mistral-7b", "gemma-2-9b"):
        assert explorer_seq_len(name) == 4096
        assert flops_explorer_seq_note(name) == (f"{name} publishes no training length: the sequence "
                                                 "length is your choice (starts at 4,096)")
    assert explorer_seq_len("llama3-8b") == 8192  # published lengths are kept
    assert flops_explorer_seq_note("llama3-8b") == "llama3-8b's published training length: 8,192 tokens"
    assert explorer_seq_len("dlrm-dcnv2") is None

    box = flops_explorer("mistral-7b", batch=512)  # no TraitError, no seq_len error
    pick, rec, cau, seq, bat, n_exp, k, head = _parts(box)
    note = box.children[1].children[1]
    assert seq.value == 4096 and not seq.disabled
    assert "publishes no training length" in note.value and "your choice" in note.value
    assert head.value == flops_explorer_html("mistral-7b", seq_len=4096, batch=512, causal=False)
    assert "Sequence length 4,096: your choice (mistral-7b publishes no training length)" in head.value
    # Mistral 7B at T = 4096 by hand (its 4096-key window does not bind): 3 x 16,368,271,360 =
    # 49.10 GFLOP per token; x 4096 x 512 = 103.0 PFLOP per step.
    assert 3 * mistral_forward_per_token(4096) == 49_104_814_080
    assert "Training: 49.1 GFLOP per token · 103 PFLOP per step of 512 sequences" in head.value
    assert "No FLOPs" not in head.value
    chart, table = box.children[-1].outputs
    assert chart["data"]["image/png"] and "attn_scores" in table["data"]["text/plain"]

    # The recompute dropdown offers every mode, selective-eq8 with a readable label.
    assert ("selective-eq8: 3 × attention", "selective-eq8") in rec.options
    assert [v for _, v in rec.options] == ["none", "selective", "selective-eq8", "full"]
    rec.value = "selective-eq8"
    # Hardware adds 3 x the attention products A = 2·2·T·H·Q·L: (3F + 3A) / 3F = 1.131.
    F, A = mistral_forward_per_token(4096), 2 * 2 * 4096 * MH * MQ * ML
    assert f"{(3 * F + 3 * A) / (3 * F):.3f}" == "1.131"
    assert "= 1.131 × model" in head.value and "recompute selective-eq8 (HFU only)" in head.value
    cau.value = True  # the conventions line follows the causal checkbox
    assert "causal on" in head.value and "Attention: causal" in head.value
    assert head.value == flops_explorer_html("mistral-7b", seq_len=4096, batch=512, causal=True,
                                             recompute="selective-eq8")
    seq.value = 8192  # the user's choice moves; the label still says it is one
    assert "Sequence length 8,192: your choice" in head.value

    # Switching presets keeps published lengths and gives the others the labelled 4096.
    pick.value = "llama3-8b"
    assert seq.value == 8192 and "published training length: 8,192" in note.value
    assert "your choice" not in head.value
    pick.value = "gemma-2-9b"
    assert seq.value == 4096 and "your choice" in note.value and "No FLOPs" not in head.value
    assert capsys.readouterr().out == ""


def test_widgets_import_without_pandas():
    code = "import sys, mfu_toolkit.widgets; print('pandas' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_calculator_takes_exact_step_times():
    # The workshop's first question: the step time at which 128 H100s reach 20 % MFU with 2.4e15
    # FLOP per step is 2.4e15 / (0.2 × 128 × 989.4e12) = 0.094763 s (hand computation); 0.0948 s,
    # its four-digit rounding, gives 2.4e15 / 0.0948 / 126,643.2e12 = 19.990 %.
    box = mfu_calculator(n_accelerators=128)
    secs = box.children[3].children[0]
    out = box.children[-1]
    secs.value = 0.094763
    assert secs.value == 0.094763  # the field keeps what was typed (the old slider snapped to 0.05 s steps)
    assert "MFU: 20.00%" in out.value
    secs.value = 0.0948
    assert out.value == calculator_html(CalculatorInputs("H100 SXM", "bf16", 128, 2.4e15, 0.0948))
    assert "MFU: 19.99%" in out.value and "step time used: 0.0948 s" in out.value
    secs.value = 0.095
    assert "step time used: 0.095 s" in out.value and "0.10 s" not in out.value


def test_calculator_drag_writes_into_the_exact_field():
    box = mfu_calculator(n_accelerators=128)
    secs, drag = box.children[3].children
    drag.value = 2.5
    assert secs.value == 2.5
    flops, flops_drag = box.children[2].children
    flops.value = 3.3e15  # a typed FLOP count moves the slider but is used as typed
    assert flops_drag.value == pytest.approx(3.3e15)
    assert "3.3e+15 FLOP" in box.children[-1].value
