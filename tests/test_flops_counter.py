"""The PyTorch FlopCounterMode cross-check: tiny GPT and DLRM/DCNv2 models vs the estimators.

PyTorch is optional. Without it these tests skip with a reason, except when
``MFU_REQUIRE_TORCH=1`` (CI), where a missing torch is a failure.

Convention differences, stated where they matter:

* FlopCounterMode's backward only computes gradients something needs: the first dense layer on
  raw features gets no input gradient, so the counted backward of a DLRM is ``2 x forward``
  minus ``2 * n_dense * width * batch``. The analytic 3x convention keeps it.
* Fused attention backward (``F.scaled_dot_product_attention``) recomputes ``Q @ K^T``; torch
  counts it, so the counted backward exceeds ``2 x forward`` by the attention-score forward.
  The tiny GPT below writes attention with plain matmuls to compare like with like, and a
  separate test checks the SDPA difference exactly.
* The counter never halves causal attention, so the analytic side uses ``causal=False``.
"""

from __future__ import annotations

import math
import os
import sys

import pytest

from mfu_toolkit.flops import (
    CounterComparison,
    DLRMConfig,
    TransformerConfig,
    compare_with_counter,
    count_training_step,
    dlrm_flops,
    transformer_flops,
)

REQUIRE_ENV = "MFU_REQUIRE_TORCH"


def require_torch():
    """Import torch; skip with a reason when absent, or fail when ``MFU_REQUIRE_TORCH=1``."""
    try:
        import torch
    except ImportError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but PyTorch cannot be imported: {exc}", pytrace=False)
        pytest.skip(
            "PyTorch is not installed (optional extra: pip install 'mfu_toolkit[torch]'); "
            f"set {REQUIRE_ENV}=1 to make its absence a failure"
        )
    return torch


@pytest.fixture(scope="module")
def torch():
    return require_torch()


# --- the helper itself (runs with or without torch) -------------------------------------------


def test_missing_torch_skips_by_default(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # makes `import torch` raise ImportError
    monkeypatch.delenv(REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="PyTorch is not installed"):
        require_torch()


def test_missing_torch_fails_when_required(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    monkeypatch.setenv(REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="MFU_REQUIRE_TORCH=1"):
        require_torch()


def test_counter_without_torch_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(ImportError, match=r"mfu_toolkit\[torch\]"):
        count_training_step(object(), None)


# --- tiny models -------------------------------------------------------------------------------


def tiny_gpt(torch, cfg: TransformerConfig, *, sdpa: bool = False):
    """A GPT-style decoder that mirrors ``cfg`` (learned positions, no biases, untied head)."""
    nn, F = torch.nn, torch.nn.functional
    d, h, hkv, q = cfg.d_model, cfg.n_heads, cfg.n_kv_heads, cfg.head_dim

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv = nn.Linear(d, (h + 2 * hkv) * q, bias=False)
            self.proj = nn.Linear(h * q, d, bias=False)
            if cfg.ffn_type == "swiglu":
                self.gate = nn.Linear(d, cfg.d_ff, bias=False)
            self.up = nn.Linear(d, cfg.d_ff, bias=False)
            self.down = nn.Linear(cfg.d_ff, d, bias=False)

        def attend(self, x):
            b, t, _ = x.shape
            qs, ks, vs = self.qkv(x).split([h * q, hkv * q, hkv * q], dim=-1)
            qs = qs.view(b, t, h, q).transpose(1, 2)
            ks = ks.view(b, t, hkv, q).transpose(1, 2).repeat_interleave(h // hkv, dim=1)
            vs = vs.view(b, t, hkv, q).transpose(1, 2).repeat_interleave(h // hkv, dim=1)
            if sdpa:
                y = F.scaled_dot_product_attention(qs, ks, vs, is_causal=True)
            else:
                att = (qs @ ks.transpose(-2, -1)) / math.sqrt(q)
                mask = torch.ones(t, t, dtype=torch.bool).tril()
                att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
                y = att @ vs
            return self.proj(y.transpose(1, 2).reshape(b, t, h * q))

        def forward(self, x):
            x = x + self.attend(self.ln1(x))
            z = self.ln2(x)
            if cfg.ffn_type == "swiglu":
                z = F.silu(self.gate(z)) * self.up(z)
            else:
                z = F.gelu(self.up(z))
            return x + self.down(z)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab_size, d)
            self.pos = nn.Embedding(cfg.seq_len, d)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, cfg.vocab_size, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1]))
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return GPT()


def tiny_dlrm(torch, cfg: DLRMConfig, rows: int = 50):
    """A DLRM with ``cfg``'s towers, sum-pooled multi-hot EmbeddingBags and its interaction."""
    nn = torch.nn

    def tower(n_in, sizes, last_plain):
        layers, prev = [], n_in
        for i, out in enumerate(sizes):
            layers.append(nn.Linear(prev, out))
            if not (last_plain and i == len(sizes) - 1):
                layers.append(nn.ReLU())
            prev = out
        return nn.Sequential(*layers)

    class Cross(nn.Module):
        # DCN-V2 low-rank cross layer (Wang et al. 2021): x_{l+1} = x0 * V(U x_l) + x_l
        def __init__(self, width, rank):
            super().__init__()
            self.u = nn.Linear(width, rank, bias=False)
            self.v = nn.Linear(rank, width)

        def forward(self, x0, x):
            return x0 * self.v(self.u(x)) + x

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.bottom = tower(cfg.n_dense, cfg.bottom_mlp, last_plain=False)
            self.tables = nn.ModuleList(
                nn.EmbeddingBag(rows, cfg.embedding_dim, mode="sum") for _ in range(cfg.n_sparse)
            )
            if cfg.interaction == "dcnv2":
                self.cross = nn.ModuleList(
                    Cross(cfg.interaction_width, cfg.cross_rank) for _ in range(cfg.cross_layers)
                )
            self.top = tower(cfg.top_in, cfg.top_mlp, last_plain=True)

        def forward(self, dense, sparse):
            x = self.bottom(dense)
            embs = [bag(idx) for bag, idx in zip(self.tables, sparse, strict=True)]
            if cfg.interaction == "dcnv2":
                x0 = torch.cat([x, *embs], dim=1)
                xl = x0
                for layer in self.cross:
                    xl = layer(x0, xl)
                return self.top(xl)
            z = torch.stack([x, *embs], dim=1)
            gram = torch.bmm(z, z.transpose(1, 2))
            i, j = torch.tril_indices(z.shape[1], z.shape[1], offset=-1)
            return self.top(torch.cat([x, gram[:, i, j]], dim=1))

    return DLRM()


def dlrm_batch(torch, cfg: DLRMConfig, batch: int, rows: int = 50):
    g = torch.Generator().manual_seed(0)
    dense = torch.randn(batch, cfg.n_dense, generator=g)
    pools = cfg.pooling_factors or (1,) * cfg.n_sparse
    sparse = [torch.randint(0, rows, (batch, p), generator=g) for p in pools]
    labels = torch.randint(0, 2, (batch, 1), generator=g).float()
    return dense, sparse, labels


GPT_CASES = {
    "gelu-mha": TransformerConfig(
        n_layers=2, d_model=64, n_heads=4, vocab_size=97, seq_len=32, pos_embedding="learned"
    ),
    "swiglu-gqa": TransformerConfig(
        n_layers=2,
        d_model=64,
        n_heads=8,
        n_kv_heads=2,
        d_ff=96,
        ffn_type="swiglu",
        vocab_size=97,
        seq_len=24,
        pos_embedding="learned",
    ),
}


# --- comparisons ---------------------------------------------------------------------------------


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(GPT_CASES))
def test_tiny_gpt_analytic_within_2_percent_of_counter(torch, case):
    cfg, batch = GPT_CASES[case], 3
    torch.manual_seed(0)
    model = tiny_gpt(torch, cfg)
    idx = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    targets = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))

    def loss_fn(logits):
        return torch.nn.functional.cross_entropy(
            logits.reshape(-1, cfg.vocab_size), targets.reshape(-1)
        )

    # causal=False: the counter counts the full T x T score matrix even under a causal mask.
    analytic = transformer_flops(cfg, batch=batch, causal=False)
    cmp = compare_with_counter(model, idx, analytic, loss_fn)
    assert isinstance(cmp, CounterComparison)
    assert abs(cmp.forward_ratio - 1) < 0.02
    assert abs(cmp.training_ratio - 1) < 0.02
    # With attention written as matmuls the match is exact: same matmuls, backward = 2 x forward.
    assert cmp.counted.forward == pytest.approx(analytic.forward_per_step, rel=1e-9)
    assert cmp.counted.backward == pytest.approx(2 * analytic.forward_per_step, rel=1e-9)
    frame = cmp.to_frame()
    assert list(frame.stage) == ["forward", "backward", "training"]
    assert "ratio" in cmp.summary()


@pytest.mark.torch
def test_tiny_gpt_with_fused_attention_counts_the_recomputed_scores(torch):
    cfg, batch = GPT_CASES["gelu-mha"], 2
    torch.manual_seed(0)
    model = tiny_gpt(torch, cfg, sdpa=True)
    idx = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    analytic = transformer_flops(cfg, batch=batch)
    cmp = compare_with_counter(model, idx, analytic)  # default loss: sum of the output
    scores = next(c for c in analytic.breakdown if c.name == "attn_scores")
    recomputed = scores.forward_flops * cfg.seq_len * batch
    # Forward matches exactly (the CPU fused kernel is mapped to torch's attention formula) ...
    assert cmp.counted.forward == pytest.approx(analytic.forward_per_step, rel=1e-9)
    # ... and backward exceeds 2 x forward by exactly one recomputed Q @ K^T (hardware FLOPs).
    assert cmp.counted.backward == pytest.approx(2 * analytic.forward_per_step + recomputed)
    assert any("recomputes Q @ K^T" in n for n in cmp.notes)
    assert abs(cmp.training_ratio - 1) < 0.02


DLRM_CASES = {
    "dcnv2-low-rank": DLRMConfig(
        n_dense=13,
        bottom_mlp=(64, 32),
        n_sparse=8,
        embedding_dim=32,
        top_mlp=(64, 1),
        interaction="dcnv2",
        cross_layers=3,
        cross_rank=16,
        pooling_factors=(1, 2, 3, 1, 1, 4, 1, 2),
    ),
    "dot": DLRMConfig(
        n_dense=13,
        bottom_mlp=(64, 64),
        n_sparse=16,
        embedding_dim=64,
        top_mlp=(256, 64, 1),
        interaction="dot",
    ),
}


@pytest.mark.torch
@pytest.mark.parametrize("case", sorted(DLRM_CASES))
def test_tiny_dlrm_analytic_within_2_percent_of_counter(torch, case):
    cfg, batch = DLRM_CASES[case], 16
    torch.manual_seed(0)
    model = tiny_dlrm(torch, cfg)
    dense, sparse, labels = dlrm_batch(torch, cfg, batch)

    def loss_fn(logits):
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, labels)

    analytic = dlrm_flops(cfg, batch=batch)
    cmp = compare_with_counter(model, (dense, sparse), analytic, loss_fn)
    assert cmp.counted.forward == pytest.approx(analytic.forward_per_step, rel=1e-9)
    # The only difference: no input gradient for the first bottom layer (raw dense features).
    skipped = 2 * cfg.n_dense * cfg.bottom_mlp[0] * batch
    assert cmp.counted.backward == pytest.approx(2 * analytic.forward_per_step - skipped)
    assert abs(cmp.training_ratio - 1) < 0.02


@pytest.mark.torch
def test_count_training_step_restores_gradients_and_accepts_kwargs(torch):
    lin = torch.nn.Linear(4, 3)
    lin.weight.grad = torch.ones_like(lin.weight)

    class Wrapper(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = lin

        def forward(self, *, x):
            return self.lin(x)

    counted = count_training_step(Wrapper(), {"x": torch.randn(5, 4)})
    assert counted.forward == 2 * 5 * 4 * 3
    assert counted.backward == 2 * 5 * 4 * 3  # weight gradient only: x needs no gradient
    assert counted.backward_to_forward == 1.0
    assert torch.equal(lin.weight.grad, torch.ones_like(lin.weight))
    assert lin.bias.grad is None
    assert counted.to_dict()["training"] == counted.training


@pytest.mark.torch
def test_count_training_step_needs_a_loss_for_non_tensor_outputs(torch):
    class Dicty(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)

        def forward(self, x):
            return {"y": self.lin(x)}

    with pytest.raises(TypeError, match="loss_fn is required"):
        count_training_step(Dicty(), torch.randn(1, 2))
    counted = count_training_step(Dicty(), torch.randn(1, 2), lambda out: out["y"].sum())
    assert counted.forward == 2 * 2 * 2


def test_compare_with_counter_needs_model_flops():
    with pytest.raises(TypeError, match="analytic must be a ModelFlops"):
        compare_with_counter(object(), None, "llama3-8b")  # type: ignore[arg-type]


def tiny_mla_gpt(torch, cfg: TransformerConfig):
    """A decoder with DeepSeek-V2-style multi-head latent attention (arXiv:2405.04434, Sec 2.1)
    written with plain matmuls: q through a low-rank latent, k/v from one shared latent plus a
    decoupled RoPE key shared by all heads (rotation left out: elementwise), SwiGLU FFN."""
    nn, F = torch.nn, torch.nn.functional
    d, h = cfg.d_model, cfg.n_heads
    rq, rkv = cfg.q_lora_rank, cfg.kv_lora_rank
    nope, rope, dv = cfg.qk_nope_head_dim, cfg.qk_rope_head_dim, cfg.v_head_dim

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.q_a, self.q_norm = nn.Linear(d, rq, bias=False), nn.LayerNorm(rq)
            self.q_b = nn.Linear(rq, h * (nope + rope), bias=False)
            self.kv_a, self.kv_norm = nn.Linear(d, rkv + rope, bias=False), nn.LayerNorm(rkv)
            self.kv_b = nn.Linear(rkv, h * (nope + dv), bias=False)
            self.o = nn.Linear(h * dv, d, bias=False)
            self.gate = nn.Linear(d, cfg.d_ff, bias=False)
            self.up = nn.Linear(d, cfg.d_ff, bias=False)
            self.down = nn.Linear(cfg.d_ff, d, bias=False)

        def attend(self, x):
            b, t, _ = x.shape
            qs = self.q_b(self.q_norm(self.q_a(x))).view(b, t, h, nope + rope).transpose(1, 2)
            latent, k_rope = self.kv_a(x).split([rkv, rope], dim=-1)
            kv = self.kv_b(self.kv_norm(latent)).view(b, t, h, nope + dv).transpose(1, 2)
            k_nope, vs = kv.split([nope, dv], dim=-1)
            k_rope = k_rope.unsqueeze(1).expand(b, h, t, rope)
            ks = torch.cat([k_nope, k_rope], dim=-1)
            att = (qs @ ks.transpose(-2, -1)) / math.sqrt(nope + rope)
            mask = torch.ones(t, t, dtype=torch.bool).tril()
            y = att.masked_fill(~mask, float("-inf")).softmax(dim=-1) @ vs
            return self.o(y.transpose(1, 2).reshape(b, t, h * dv))

        def forward(self, x):
            x = x + self.attend(self.ln1(x))
            z = self.ln2(x)
            return x + self.down(F.silu(self.gate(z)) * self.up(z))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok = nn.Embedding(cfg.vocab_size, d)
            self.blocks = nn.ModuleList(Block() for _ in range(cfg.n_layers))
            self.ln_f = nn.LayerNorm(d)
            self.head = nn.Linear(d, cfg.vocab_size, bias=False)

        def forward(self, idx):
            x = self.tok(idx)
            for block in self.blocks:
                x = block(x)
            return self.head(self.ln_f(x))

    return GPT()


@pytest.mark.torch
def test_tiny_mla_decoder_matches_the_counter_exactly(torch):
    cfg = TransformerConfig(
        n_layers=2,
        d_model=64,
        n_heads=4,
        d_ff=96,
        ffn_type="swiglu",
        vocab_size=97,
        seq_len=20,
        q_lora_rank=24,
        kv_lora_rank=16,
        qk_nope_head_dim=8,
        qk_rope_head_dim=4,
        v_head_dim=12,
    )
    batch = 3
    torch.manual_seed(0)
    model = tiny_mla_gpt(torch, cfg)
    idx = torch.randint(0, cfg.vocab_size, (batch, cfg.seq_len))
    # causal=False: the counter counts the whole score matrix under a causal mask.
    analytic = transformer_flops(cfg, batch=batch, causal=False)
    counted = count_training_step(model, idx)
    assert counted.forward == pytest.approx(analytic.forward_per_step, rel=1e-9)
    assert counted.backward == pytest.approx(2 * analytic.forward_per_step, rel=1e-9)
