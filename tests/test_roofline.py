"""mfu_toolkit.roofline against hand computations, the DESIGN reference count and datasheets."""

from __future__ import annotations

import math

import pytest

from mfu_toolkit import hardware as hw
from mfu_toolkit import roofline as rl


def test_square_matmul_by_hand():
    # 2·n³ FLOPs; bytes = 3 n² elements × 2 B (bf16): intensity n/3 FLOP/B.
    op = rl.matmul("A·B", 4096, 4096, 4096, dtype="bf16")
    assert op.flops == 137_438_953_472
    assert op.bytes == 100_663_296
    assert op.intensity == pytest.approx(4096 / 3)
    assert op.model_flops == op.flops


def test_ridge_point_of_h100_sxm_from_its_datasheet():
    # 989.4 TFLOP/s dense bf16 (half the datasheet's 1,979 sparse) / 3.35 TB/s = 295.3 FLOP/B.
    peak = hw.get_peak("H100 SXM", "bf16").flops
    bw = hw.get_memory_bandwidth("H100 SXM").bytes_per_s
    assert rl.ridge_point(peak, bw) == pytest.approx(989.4 / 3.35, rel=1e-9)
    # Below the ridge the roof is the bandwidth line, above it the peak.
    assert rl.attainable_flops(1.0, peak, bw) == pytest.approx(3.35e12)
    assert rl.attainable_flops(1000.0, peak, bw) == peak


def test_layernorm_is_far_below_every_ridge_point():
    # 5 FLOPs per element over 2 B read + 2 B written: 1.25 FLOP/B.
    op = rl.elementwise("LN", 1e6, flops_per_element=rl.LAYERNORM_FLOPS, dtype="bf16")
    assert op.intensity == 1.25 and op.model_flops == 0
    for name in ("H100 SXM", "A100 SXM", "MI300X", "TPU v5e", "L4"):
        ridge = rl.ridge_point(hw.get_peak(name, "bf16").flops, hw.get_memory_bandwidth(name).bytes_per_s)
        assert ridge > 50 * op.intensity, name


def test_transformer_layer_model_flops_match_megatron_formula():
    # Narayanan et al. 2021 (Megatron-LM, eq. 2 per layer, forward): 24·B·s·h² + 4·B·s²·h.
    b, s, h = 2, 2048, 1024
    ops = rl.transformer_layer_ops(seq_len=s, batch=b, hidden=h)
    assert sum(o.model_flops for o in ops) == 24 * b * s * h * h + 4 * b * s * s * h
    unfused = rl.transformer_layer_ops(seq_len=s, batch=b, hidden=h, heads=16, fused_attention=False)
    assert sum(o.model_flops for o in unfused) == sum(o.model_flops for o in ops)
    # Unfused attention writes and re-reads the b·heads·s² scores: more bytes, same FLOPs.
    assert sum(o.bytes for o in unfused) > sum(o.bytes for o in ops) + 2 * b * 16 * s * s * 2


def test_dlrm_forward_model_flops_match_the_design_reference():
    # DESIGN.md: MLPerf DLRM-DCNv2 forward = 32,060,928 FLOPs per sample; lookups count zero.
    ops = rl.dlrm_ops(batch=1)
    assert sum(o.model_flops for o in ops) == 32_060_928
    emb = next(o for o in ops if o.kind == "embedding")
    # one-hot: 26 tables × (1 row read + 1 written) × 128 × 4 B, no adds
    assert (emb.flops, emb.bytes) == (0, 26 * 2 * 128 * 4)
    assert emb.intensity == 0
    pooled = rl.embedding_bag("e", batch=1, tables=1, dim=128, pooling=10, dtype="fp32")
    assert pooled.flops == 9 * 128 and pooled.bytes == 11 * 128 * 4  # intensity 9/44 FLOP/B


def test_mfu_ceiling_by_hand():
    # A matmul taking 1 s at the peak and an elementwise op taking 1 s at the bandwidth: MFU ≤ 1/2.
    peak, bw = 1e15, 1e12
    n = round((peak / 2) ** (1 / 3))
    mm = rl.Op("mm", "matmul", 2.0 * n**3, 1.0, 2.0 * n**3)
    ew = rl.Op("ew", "elementwise", 1.0, bw * (2.0 * n**3 / peak), 0.0)
    assert rl.mfu_ceiling([mm, ew], peak, bw) == pytest.approx(0.5)
    # An achievable matmul rate of 80 % of the peak: 1 / (1/0.8 + 1) = 0.444…
    assert rl.mfu_ceiling([mm, ew], peak, bw, matmul_efficiency=0.8) == pytest.approx(1 / (1.25 + 1))
    assert rl.mfu_ceiling([mm], peak, bw) == pytest.approx(1.0)


def test_a_large_layer_on_h100_is_bounded_below_one():
    peak = hw.get_peak("H100 SXM", "bf16").flops
    bw = hw.get_memory_bandwidth("H100 SXM").bytes_per_s
    ops = rl.transformer_layer_ops(seq_len=4096, batch=1, hidden=4096)
    ceiling = rl.mfu_ceiling(ops, peak, bw)
    assert 0.85 < ceiling < 0.95  # elementwise ops alone cost ~8 % of the layer's time
    times = {o.name: rl.op_time(o, peak, bw) for o in ops}
    ln = next(o for o in ops if o.name == "LayerNorm (attention)")
    assert times[ln.name] == pytest.approx(ln.bytes / bw)  # memory-bound: time = bytes / W


@pytest.mark.parametrize("kwargs, match", [
    ({"seq_len": 0, "batch": 1, "hidden": 8}, "seq_len must be a positive"),
    ({"seq_len": 8, "batch": 1, "hidden": 8, "dtype": "int4"}, "dtype must be one of"),
])
def test_bad_inputs_name_the_parameter(kwargs, match):
    with pytest.raises(ValueError, match=match):
        rl.transformer_layer_ops(**kwargs)
    with pytest.raises(ValueError, match="matmul_efficiency must be in"):
        rl.mfu_ceiling([rl.matmul("m", 2, 2, 2)], 1.0, 1.0, matmul_efficiency=1.5)
    assert math.isinf(rl.Op("x", "matmul", 1.0, 0.0, 1.0).intensity)


def test_roofline_imports_no_pandas():
    import subprocess
    import sys

    code = "import sys, mfu_toolkit.roofline; print('pandas' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


# --- the roofline explorer's pure functions and widget ------------------------------------------

def test_roofline_scenario_headline_by_hand():
    from mfu_toolkit.widgets import roofline_scenario, roofline_table

    r = roofline_scenario(accelerator="H100 SXM", dtype="bf16", seq_len=4096, batch=1, hidden=4096)
    ops = rl.transformer_layer_ops(seq_len=4096, batch=1, hidden=4096, heads=32)
    expected = rl.mfu_ceiling(ops, 989.4e12, 3.35e12)
    assert r.ceiling == pytest.approx(expected, rel=1e-12)
    assert f"MFU ceiling {expected:.1%}" in r.headline and "ridge 295 FLOP/B" in r.headline
    table = roofline_table(r)
    ln = table[table["op"] == "LayerNorm (attention)"].iloc[0]
    # 4096 × 4096 elements, read and written in bf16: 67.11 MB; at 3.35 TB/s: 20.0 µs
    assert (ln["MB moved"], ln["bound by"], ln["time (µs)"]) == ("67.11", "memory", "20.0")
    # fp32 tensors run their matmuls at the TF32 peak (494.7 TFLOP/s dense on H100 SXM)
    assert roofline_scenario(dtype="fp32").peak_flops == pytest.approx(494.7e12)


def test_roofline_scenario_refuses_what_it_cannot_source():
    from mfu_toolkit.widgets import roofline_scenario

    with pytest.raises(ValueError, match="no memory bandwidth with a source for 'RTX 4090'"):
        roofline_scenario(accelerator="RTX 4090")
    with pytest.raises(ValueError, match="dtype must be one of bf16, fp16, fp8, fp32; got 'int8'"):
        roofline_scenario(dtype="int8")


def test_roofline_explorer_recomputes_on_slider_change():
    from mfu_toolkit.widgets import roofline_explorer, roofline_scenario

    box = roofline_explorer()
    headline = box.children[-2]
    seq, bat, hid = box.children[0].children[0].children
    assert roofline_scenario().headline in headline.value
    seq.value = 512
    assert roofline_scenario(seq_len=512).headline in headline.value
    assert "roofline-explorer" in box._dom_classes
