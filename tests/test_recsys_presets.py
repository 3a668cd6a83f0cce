"""Recommendation presets pinned to the config text they come from, and their per-sample FLOPs and bytes by hand.

Each quoted line below is copied from the file the preset's source names, at the commit in its URL:
meta-recsys/generative-recommenders@db1bf8f2e8f6a92a738dafd52a245eafb25a222b (configs/*/*.gin) and
facebookresearch/dlrm@090956ee2319ddd349a42232958aefccfe3f7b0a (bench/*.sh, dlrm_s_pytorch.py). The test parses
the quoted text, so a preset that drifts from its config fails here.
"""

from __future__ import annotations

import re

import pytest

from mfu_toolkit.flops import get_preset, list_presets, model_flops
from mfu_toolkit.flops.recsys import embedding_traffic

GR = "https://github.com/meta-recsys/generative-recommenders/blob/db1bf8f2e8f6a92a738dafd52a245eafb25a222b/configs/"
DLRM = "https://github.com/facebookresearch/dlrm/blob/090956ee2319ddd349a42232958aefccfe3f7b0a/"

# preset -> (gin file under configs/, {line number: the line as the file has it})
GIN = {
    "hstu-ml-3b-large": ("ml-3b/hstu-sampled-softmax-n96-seqlen500-large-final.gin", {
        8: "train_fn.max_sequence_length = 500", 16: "train_fn.item_embedding_dim = 256",
        18: "hstu_encoder.num_blocks = 16", 19: "hstu_encoder.num_heads = 8", 20: "hstu_encoder.dv = 32",
        21: "hstu_encoder.dqk = 32", 32: "train_fn.num_negatives = 128"}),
    "hstu-ml-3b": ("ml-3b/hstu-sampled-softmax-n96-seqlen500-final.gin", {
        8: "train_fn.max_sequence_length = 500", 16: "train_fn.item_embedding_dim = 256",
        18: "hstu_encoder.num_blocks = 4", 19: "hstu_encoder.num_heads = 4", 20: "hstu_encoder.dv = 64",
        21: "hstu_encoder.dqk = 64", 32: "train_fn.num_negatives = 128"}),
    "hstu-ml-20m": ("ml-20m/hstu-sampled-softmax-n128-final.gin", {
        12: "train_fn.max_sequence_length = 200", 19: "train_fn.item_embedding_dim = 256",
        21: "hstu_encoder.num_blocks = 4", 22: "hstu_encoder.num_heads = 4", 23: "hstu_encoder.dv = 64",
        24: "hstu_encoder.dqk = 64", 35: "train_fn.num_negatives = 128"}),
    "hstu-ml-1m": ("ml-1m/hstu-sampled-softmax-n128-final.gin", {
        12: "train_fn.max_sequence_length = 200", 19: "train_fn.item_embedding_dim = 50",
        21: "hstu_encoder.num_blocks = 2", 22: "hstu_encoder.num_heads = 1", 23: "hstu_encoder.dqk = 50",
        24: "hstu_encoder.dv = 50", 35: "train_fn.num_negatives = 128"}),
    "hstu-amzn-books": ("amzn-books/hstu-sampled-softmax-n512-final.gin", {
        12: "train_fn.max_sequence_length = 50", 19: "train_fn.item_embedding_dim = 64",
        21: "hstu_encoder.num_blocks = 4", 22: "hstu_encoder.num_heads = 4", 23: "hstu_encoder.dv = 16",
        24: "hstu_encoder.dqk = 16", 37: "train_fn.num_negatives = 512"}),
    # the three HSTU-large presets that were there before, against the same files
    "hstu-ml-20m-large": ("ml-20m/hstu-sampled-softmax-n128-large-final.gin", {
        12: "train_fn.max_sequence_length = 200", 19: "train_fn.item_embedding_dim = 256",
        21: "hstu_encoder.num_blocks = 16", 22: "hstu_encoder.num_heads = 8", 23: "hstu_encoder.dv = 32",
        24: "hstu_encoder.dqk = 32", 35: "train_fn.num_negatives = 128"}),
    "hstu-ml-1m-large": ("ml-1m/hstu-sampled-softmax-n128-large-final.gin", {
        12: "train_fn.max_sequence_length = 200", 19: "train_fn.item_embedding_dim = 50",
        21: "hstu_encoder.num_blocks = 8", 22: "hstu_encoder.num_heads = 2", 23: "hstu_encoder.dqk = 25",
        24: "hstu_encoder.dv = 25", 35: "train_fn.num_negatives = 128"}),
    "hstu-amzn-books-large": ("amzn-books/hstu-sampled-softmax-n512-large-final.gin", {
        12: "train_fn.max_sequence_length = 50", 19: "train_fn.item_embedding_dim = 64",
        21: "hstu_encoder.num_blocks = 16", 22: "hstu_encoder.num_heads = 8", 23: "hstu_encoder.dv = 8",
        24: "hstu_encoder.dqk = 8", 37: "train_fn.num_negatives = 512"}),
}
GIN_FIELDS = {"max_sequence_length": "seq_len", "item_embedding_dim": "d_model", "num_blocks": "n_layers",
              "num_heads": "n_heads", "dv": "dv", "dqk": "dqk", "num_negatives": "n_negatives"}
NEW_HSTU = ("hstu-ml-3b-large", "hstu-ml-3b", "hstu-ml-20m", "hstu-ml-1m", "hstu-amzn-books")

# preset -> (run script, line, the flags of that line that fix the architecture)
SCRIPTS = {
    "dlrm-criteo-kaggle": ("bench/dlrm_s_criteo_kaggle.sh", 24,
                           '--arch-sparse-feature-size=16 --arch-mlp-bot="13-512-256-64-16" '
                           '--arch-mlp-top="512-256-1"'),
    "dlrm-criteo-terabyte": ("bench/dlrm_s_criteo_terabyte.sh", 24,
                             '--arch-sparse-feature-size=64 --arch-mlp-bot="13-512-256-64" '
                             '--arch-mlp-top="512-512-256-1" --max-ind-range=10000000'),
    "dlrm-criteo-terabyte-mlperf": ("bench/run_and_time.sh", 17,
                                    '--arch-sparse-feature-size=128 --arch-mlp-bot="13-512-256-128" '
                                    '--arch-mlp-top="1024-1024-512-256-1" --max-ind-range=40000000'),
}
# dlrm_s_pytorch.py line 972, and lines 1159-1160 (no --arch-interaction-itself): the top MLP's input
OPTIMIZER_LINE = 'parser.add_argument("--optimizer", type=str, default="sgd")'
NUM_INT_LINE = "num_int = (num_fea * (num_fea - 1)) // 2 + m_den_out"


def _gin(lines: dict[int, str]) -> dict[str, int]:
    out = {}
    for text in lines.values():
        key, value = (part.strip() for part in text.split("="))
        out[GIN_FIELDS[key.split(".")[-1]]] = int(value)
    return out


@pytest.mark.parametrize("name", sorted(GIN))
def test_hstu_presets_match_their_gin_files(name):
    path, lines = GIN[name]
    preset = get_preset(name)
    c = preset.config
    for field, value in _gin(lines).items():
        assert getattr(c, field) == value, (name, field)
    assert c.causal is True and c.optimizer is None and c.n_items is None  # the gin files state neither
    assert path in preset.source
    if name in NEW_HSTU:
        assert GR + path in preset.source  # the file at a fixed commit
        # the source names the lines it quotes ("lines 12, 19, 21-24, 35") and quotes each value
        spec = re.search(r"\(lines ([\d, -]+):", preset.source.split(path)[1]).group(1)
        named = set()
        for part in spec.split(","):
            lo, _, hi = part.strip().partition("-")
            named |= set(range(int(lo), int(hi or lo) + 1))
        assert named == set(lines), name
        for text in lines.values():
            assert text.split("=")[1].strip() in preset.source


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_dlrm_reference_presets_match_their_run_scripts(name):
    script, line, flags = SCRIPTS[name]
    preset = get_preset(name)
    c = preset.config
    dim = int(re.search(r"--arch-sparse-feature-size=(\d+)", flags).group(1))
    bot = [int(x) for x in re.search(r'--arch-mlp-bot="([\d-]+)"', flags).group(1).split("-")]
    top = [int(x) for x in re.search(r'--arch-mlp-top="([\d-]+)"', flags).group(1).split("-")]
    assert (c.embedding_dim, c.n_dense, list(c.bottom_mlp), list(c.top_mlp)) == (dim, bot[0], bot[1:], top)
    # NUM_INT_LINE with num_fea = 26 sparse + 1 dense = 27: 351 pairs + the bottom MLP's output
    num_fea, m_den_out = c.n_sparse + 1, bot[-1]
    assert NUM_INT_LINE.endswith("(num_fea * (num_fea - 1)) // 2 + m_den_out")
    assert c.top_in == (num_fea * (num_fea - 1)) // 2 + m_den_out
    assert c.interaction == "dot" and c.dot_self_interaction is False
    assert c.optimizer == re.search(r'default="(\w+)"', OPTIMIZER_LINE).group(1)
    assert (c.embedding_bytes, c.pooling_factors, c.embedding_rows) == (4, None, None)
    assert f"{DLRM}{script} line {line}" in preset.source and flags in preset.source


def test_the_kaggle_dlrm_by_hand():
    # bottom 13→512→256→64→16: 2 x (6,656 + 131,072 + 16,384 + 1,024) = 310,272
    # dot: the Gram matrix of 27 vectors of 16, counted in full: 2 x 27² x 16 = 23,328
    # top 367→512→256→1 (367 = 16 + 27·26/2): 2 x (187,904 + 131,072 + 256) = 638,464
    r = model_flops("dlrm-criteo-kaggle")
    assert r.forward_per_sample == 310_272 + 23_328 + 638_464 == 972_064
    assert r.training_per_sample == 3 * 972_064
    # embedding bytes: 26 one-hot lookups x 16 x 4 B = 1,664 read, read again and written back by the sparse
    # update; SGD keeps no state: 3 x 1,664 = 4,992 B per sample, complete (the optimizer is stated)
    t = embedding_traffic(get_preset("dlrm-criteo-kaggle").config)
    assert (t.term("lookup_read"), t.per_sample, t.complete) == (1_664, 4_992, True)
    assert get_preset("dlrm-criteo-kaggle").derived == {"forward_flops_per_sample": 972_064,
                                                        "embedding_bytes_per_sample": 4_992}
    # the MLPerf-era configuration: bottom 2 x 164,352, dot 2 x 27² x 128, top (479 in) 2 x 2,197,760
    assert model_flops("dlrm-criteo-terabyte-mlperf").forward_per_sample == 2 * (
        13 * 512 + 512 * 256 + 256 * 128) + 2 * 27 * 27 * 128 + 2 * (
        479 * 1024 + 1024 * 1024 + 1024 * 512 + 512 * 256 + 256)


def test_the_ml_20m_hstu_by_hand():
    # hstu-ml-20m: 4 blocks, 4 heads, dqk = dv = 64, d 256, 200 positions (causal), 128 sampled negatives
    n, d, h, L = 200, 256, 4, 4
    uvqk = 2 * n * d * h * (2 * 64 + 2 * 64) * L   # 419,430,400
    pairs = n * (n + 1) // 2                        # 20,100 causal pairs
    scores = values = 2 * pairs * h * 64 * L        # 41,164,800 each
    out = 2 * n * h * 64 * d * L                    # 104,857,600
    loss = 2 * n * d * (1 + 128)                    # 13,209,600
    r = model_flops("hstu-ml-20m")
    assert r.forward_per_sample == uvqk + scores + values + out + loss == 619_827_200
    # embedding bytes: 200 item rows x 256 x 4 B = 204,800 read, read and written by the update: 614,400 B;
    # the gin file states no optimizer, so the count is marked incomplete
    t = embedding_traffic(get_preset("hstu-ml-20m").config)
    assert (t.per_sample, t.complete) == (614_400, False)


def test_the_new_presets_are_listed_by_kind_and_keep_the_aliases():
    assert {"dlrm-criteo-kaggle", "dlrm-criteo-terabyte", "dlrm-criteo-terabyte-mlperf"} <= set(list_presets("dlrm"))
    assert set(NEW_HSTU) <= set(list_presets("hstu"))
    assert get_preset("HSTU").name == "hstu-ml-20m-large"  # the alias still names the large configuration
    assert get_preset("hstu_ml_20m").name == "hstu-ml-20m"
    assert "SASRec" in get_preset("hstu-ml-20m").description
