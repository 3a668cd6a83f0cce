"""Recommendation-model FLOPs: MLP towers, DLRM (dot or DCNv2 interaction) and HSTU.

Same conventions as ``transformer.py`` (2 FLOPs per multiply-add, matmuls and attention
products only, training = 3 x forward, recomputation only in hardware FLOPs). Embedding lookups
and their pooling count zero FLOPs, but these models are bound by embedding traffic, so every
result also reports the embedding bytes read per sample.

The MLPerf Training DLRM-DCNv2 reference configuration (``recommendation_v2/torchrec_dlrm``)
gives 32,060,928 forward FLOPs per sample under these conventions. That figure is this
project's derivation from the configuration's layer sizes; no MLPerf document states it. Only
the weight matmuls count: 2 x (13*512 + 512*256 + 256*128) for the bottom MLP,
3 x 2 x (3456*512 + 512*3456) for the low-rank cross layers (the U and V matmuls; the
``x0 * (...) + x`` products and additions are elementwise) and
2 x (3456*1024 + 1024*1024 + 1024*512 + 512*256 + 256*1) for the top MLP; biases, activations
and the sigmoid count zero. 2 x 16,030,464 multiply-adds = 32,060,928.

Embedding traffic (:func:`embedding_traffic`, the bytes side of these models): per sample, the rows
the lookups read, the rows the sparse update reads and writes back, the optimizer state it reads and
writes, and (for model-parallel tables) the pooled embeddings and their gradients the all-to-all moves.
Every result states its convention (row precision, pooling factors, optimizer) in ``conventions``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from .transformer import (
    Component,
    Conventions,
    FlopsConfigError,
    ModelFlops,
    ParamCounts,
    Recompute,
    check_blocks,
    check_bool,
    check_choice,
    check_int,
    check_number,
    check_recompute,
    fail,
    finish,
)

__all__ = [
    "INTERACTIONS",
    "MLPConfig",
    "DLRMConfig",
    "HSTUConfig",
    "linear",
    "custom_block",
    "mlp_flops",
    "dlrm_flops",
    "hstu_flops",
    "hstu_sequence_flops",
    "OPTIMIZERS",
    "ROW_DTYPES",
    "SHARDINGS",
    "ByteTerm",
    "EmbeddingTraffic",
    "canonical_optimizer",
    "embedding_traffic",
]

INTERACTIONS = ("dot", "dcnv2", "concat")


def _int_tuple(name: str, value: Any, *, allow_empty: bool = False, minimum: int = 1) -> tuple:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise fail(name, "a sequence of positive integers", value)
    out = tuple(value)
    if not out and not allow_empty:
        raise fail(name, "a non-empty sequence of positive integers", value)
    for i, v in enumerate(out):
        check_int(f"{name}[{i}]", v, minimum=minimum)
    return out


def _check_name(value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise fail("name", "a non-empty string", value)


# --------------------------------------------------------------------------------------------
# building blocks


def linear(
    name: str, in_features: int, out_features: int, *, times: int = 1, bias: bool = False
) -> Component:
    """A custom block of ``times`` dense layers ``in_features -> out_features`` (2*in*out each)."""
    check_int("in_features", in_features)
    check_int("out_features", out_features)
    check_int("times", times)
    params = (in_features * out_features + (out_features if bias else 0)) * times
    return Component(name, 2.0 * in_features * out_features * times, params=params)


def custom_block(
    name: str, forward_flops: float, *, params: int = 0, attention: bool = False, note: str = ""
) -> Component:
    """A custom block given by its forward FLOPs per unit (e.g. measured or hand-derived).

    The unit is a sample for recommendation models and a token for transformers.
    ``attention=True`` marks FLOPs that selective recomputation re-runs.
    """
    return Component(name, float(forward_flops), params=params, attention=attention, note=note)


def _mlp_matmuls(in_features: int, sizes: Sequence[int]) -> tuple[float, int]:
    """Forward FLOPs and weight count of a dense tower: sum of 2*in*out over its layers."""
    flops, weights, prev = 0.0, 0, in_features
    for out in sizes:
        flops += 2.0 * prev * out
        weights += prev * out
        prev = out
    return flops, weights


def _mlp_shape(in_features: int, sizes: Sequence[int]) -> str:
    return "->".join(str(x) for x in (in_features, *sizes))


def _conventions(
    backward_factor: float,
    recompute: str,
    *,
    causal: bool = False,
    attention: bool = False,
    notes: tuple[str, ...] = (),
) -> Conventions:
    return Conventions(
        backward_factor=check_number("backward_factor", backward_factor),
        include_attention=attention,
        causal=causal,
        recompute=check_recompute(recompute),
        notes=notes,
        has_attention=attention,
    )


_FIRST_LAYER_NOTE = (
    "the 3x training convention includes the input gradient of the first dense layer, which "
    "frameworks skip because dense features need no gradient"
)


# --------------------------------------------------------------------------------------------
# MLP


@dataclass(frozen=True)
class MLPConfig:
    """A dense tower ``in_features -> layer_sizes[0] -> ... -> layer_sizes[-1]``."""

    in_features: int
    layer_sizes: tuple[int, ...]
    bias: bool = True
    extra_blocks: tuple[Component, ...] = ()
    name: str = "custom-mlp"

    def __post_init__(self) -> None:
        check_int("in_features", self.in_features)
        object.__setattr__(self, "layer_sizes", _int_tuple("layer_sizes", self.layer_sizes))
        check_bool("bias", self.bias)
        object.__setattr__(self, "extra_blocks", check_blocks(self.extra_blocks))
        _check_name(self.name)


def mlp_flops(
    config: MLPConfig,
    *,
    batch: int = 1,
    recompute: Recompute = "none",
    backward_factor: float = 2.0,
    source: str = "",
) -> ModelFlops:
    """Forward/training FLOPs per sample of an MLP tower (one row per layer)."""
    check_int("batch", batch)
    rows, prev, params = [], config.in_features, 0
    for i, out in enumerate(config.layer_sizes):
        p = prev * out + (out if config.bias else 0)
        rows.append(Component(f"layer{i}", 2.0 * prev * out, params=p, note=f"{prev}->{out}"))
        params += p
        prev = out
    rows.extend(config.extra_blocks)
    params += sum(b.params for b in config.extra_blocks)
    return finish(
        name=config.name,
        kind="mlp",
        unit="sample",
        tokens_per_sample=None,
        batch=batch,
        breakdown=tuple(rows),
        params=ParamCounts(total=params, active=params, embedding=0),
        conventions=_conventions(backward_factor, recompute, notes=(_FIRST_LAYER_NOTE,)),
        source=source,
        config=config,
    )


# --------------------------------------------------------------------------------------------
# DLRM (Naumov et al. 2019, arXiv:1906.00091) with dot or DCNv2 interaction
# (Wang et al. 2021, "DCN V2", arXiv:2008.13535)


@dataclass(frozen=True)
class DLRMConfig:
    """DLRM: bottom MLP on dense features, one embedding per sparse feature, an interaction, top MLP.

    ``bottom_mlp`` / ``top_mlp`` are the output sizes of each layer; the top MLP's input width
    follows from the interaction:

    * ``"dot"``: pairwise dot products of the ``n_sparse + 1`` vectors (bottom output and
      embeddings, which must have the same width). The Gram matrix is one batched matmul,
      counted in full, ``2 * (n_sparse + 1)**2 * embedding_dim``, because that is what runs;
      the top MLP sees the bottom output plus the strictly-lower triangle (plus the diagonal
      with ``dot_self_interaction``).
    * ``"dcnv2"``: ``cross_layers`` DCNv2 cross layers on ``x0 = concat(bottom output,
      embeddings)``. Full rank (``cross_rank=None``) counts ``2 * D * D`` per layer; low rank
      counts the U and V matmuls, ``2 * 2 * D * r`` per layer. The ``x0 * (.) + x``
      products are elementwise (zero).
    * ``"concat"``: the concatenation, no FLOPs.

    ``embedding_rows`` (per table) only feeds parameter counts; ``pooling_factors`` (lookups
    per table per sample, 1 by default) and ``embedding_bytes`` give embedding bytes read.
    ``optimizer`` (one of ``OPTIMIZERS``, ``None`` when not stated) is the sparse optimizer of the
    tables, for the optimizer-state bytes of :func:`embedding_traffic`.
    ``bottom_mlp=()`` feeds the dense features into the interaction directly (not for dot).
    """

    n_dense: int
    bottom_mlp: tuple[int, ...]
    n_sparse: int
    embedding_dim: int
    top_mlp: tuple[int, ...]
    interaction: str = "dot"
    cross_layers: int = 3
    cross_rank: int | None = None
    dot_self_interaction: bool = False
    embedding_rows: tuple[int, ...] | None = None
    pooling_factors: tuple[int, ...] | None = None
    embedding_bytes: int = 4
    bias: bool = True
    extra_blocks: tuple[Component, ...] = ()
    name: str = "custom-dlrm"
    optimizer: str | None = None

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        check_int("n_dense", self.n_dense, minimum=0)
        set_(self, "bottom_mlp", _int_tuple("bottom_mlp", self.bottom_mlp, allow_empty=True))
        check_int("n_sparse", self.n_sparse)
        check_int("embedding_dim", self.embedding_dim)
        set_(self, "top_mlp", _int_tuple("top_mlp", self.top_mlp))
        check_choice("interaction", self.interaction, INTERACTIONS)
        check_int("cross_layers", self.cross_layers, minimum=0)
        if self.cross_rank is not None:
            check_int("cross_rank", self.cross_rank)
        check_bool("dot_self_interaction", self.dot_self_interaction)
        if self.interaction == "dot":
            if not self.bottom_mlp or self.bottom_mlp[-1] != self.embedding_dim:
                raise fail(
                    "bottom_mlp",
                    f"a tower ending in embedding_dim={self.embedding_dim} (dot interaction "
                    "needs equal widths)",
                    self.bottom_mlp,
                )
        if self.bottom_mlp and self.n_dense == 0:
            raise fail("n_dense", "an integer >= 1 when bottom_mlp is given", self.n_dense)
        for key in ("embedding_rows", "pooling_factors"):
            value = getattr(self, key)
            if value is not None:
                value = _int_tuple(key, value, minimum=0 if key == "pooling_factors" else 1)
                if len(value) != self.n_sparse:
                    raise fail(key, f"a sequence of n_sparse={self.n_sparse} integers", value)
                set_(self, key, value)
        check_int("embedding_bytes", self.embedding_bytes)
        check_bool("bias", self.bias)
        set_(self, "extra_blocks", check_blocks(self.extra_blocks))
        _check_name(self.name)
        if self.optimizer is not None:
            check_choice("optimizer", self.optimizer, OPTIMIZERS)

    @property
    def dense_width(self) -> int:
        """Width of the dense branch entering the interaction."""
        return self.bottom_mlp[-1] if self.bottom_mlp else self.n_dense

    @property
    def interaction_width(self) -> int:
        """Width ``D`` of ``x0 = concat(dense branch, embeddings)`` (dcnv2 / concat)."""
        return self.dense_width + self.n_sparse * self.embedding_dim

    @property
    def top_in(self) -> int:
        """Input width of the top MLP."""
        if self.interaction == "dot":
            n = self.n_sparse + 1
            pairs = n * (n + 1) // 2 if self.dot_self_interaction else n * (n - 1) // 2
            return self.embedding_dim + pairs
        return self.interaction_width

    @property
    def lookups_per_sample(self) -> int:
        return sum(self.pooling_factors) if self.pooling_factors else self.n_sparse


def _dlrm_rows(c: DLRMConfig) -> tuple[list[Component], int]:
    rows: list[Component] = []
    dense_params = 0
    d = c.embedding_dim
    table_params = sum(c.embedding_rows) * d if c.embedding_rows else 0
    rows.append(
        Component(
            "embedding_lookup",
            0.0,
            params=table_params,
            note=f"{c.lookups_per_sample} lookups of dim {d}: zero FLOPs",
        )
    )
    if c.bottom_mlp:
        f, w = _mlp_matmuls(c.n_dense, c.bottom_mlp)
        p = w + (sum(c.bottom_mlp) if c.bias else 0)
        rows.append(Component("bottom_mlp", f, params=p, note=_mlp_shape(c.n_dense, c.bottom_mlp)))
        dense_params += p
    if c.interaction == "dot":
        n = c.n_sparse + 1
        rows.append(
            Component("interaction_dot", 2.0 * n * n * d, note=f"Gram matrix of {n} vectors of {d}")
        )
    elif c.interaction == "dcnv2":
        D, L = c.interaction_width, c.cross_layers
        if c.cross_rank is None:
            f, p, note = 2.0 * D * D * L, (D * D + D) * L, f"{L} full-rank layers on {D}"
        else:
            r = c.cross_rank
            f = 2.0 * 2 * D * r * L
            p = (2 * D * r + D) * L
            note = f"{L} low-rank layers (rank {r}) on {D}"
        rows.append(Component("interaction_dcnv2", f, params=p, note=note))
        dense_params += p
    else:
        rows.append(Component("interaction_concat", 0.0, note=f"concat to {c.interaction_width}"))
    f, w = _mlp_matmuls(c.top_in, c.top_mlp)
    p = w + (sum(c.top_mlp) if c.bias else 0)
    rows.append(Component("top_mlp", f, params=p, note=_mlp_shape(c.top_in, c.top_mlp)))
    dense_params += p
    rows.extend(c.extra_blocks)
    dense_params += sum(b.params for b in c.extra_blocks)
    return rows, dense_params


def dlrm_flops(
    config: DLRMConfig,
    *,
    batch: int = 1,
    recompute: Recompute = "none",
    backward_factor: float = 2.0,
    source: str = "",
) -> ModelFlops:
    """Forward/training FLOPs per sample of a DLRM (dot, DCNv2 or concat interaction).

    Also reports embedding bytes read per sample (lookups x dim x bytes), and in the conventions'
    notes the whole embedding traffic per sample (:func:`embedding_traffic`: lookups, the sparse
    update, optimizer state, all-to-all). ``params.active`` is the dense parameters plus the
    embedding rows one sample reads.
    """
    check_int("batch", batch)
    rows, dense_params = _dlrm_rows(config)
    table_params = rows[0].params
    lookups = config.lookups_per_sample
    params = ParamCounts(
        total=dense_params + table_params,
        active=dense_params + lookups * config.embedding_dim,
        embedding=table_params,
    )
    notes = [_FIRST_LAYER_NOTE]
    if config.interaction == "dot":
        notes.append("dot interaction: the full Gram matrix is counted (that is what the bmm runs)")
    notes.append("embedding traffic (embedding_traffic()): " + embedding_traffic(config).summary())
    return finish(
        name=config.name,
        kind="dlrm",
        unit="sample",
        tokens_per_sample=None,
        batch=batch,
        breakdown=tuple(rows),
        params=params,
        conventions=_conventions(backward_factor, recompute, notes=tuple(notes)),
        embedding_bytes_per_sample=float(lookups * config.embedding_dim * config.embedding_bytes),
        source=source,
        config=config,
    )


# --------------------------------------------------------------------------------------------
# HSTU (Zhai et al. 2024, "Actions Speak Louder than Words", arXiv:2402.17152, Sec 3)


@dataclass(frozen=True)
class HSTUConfig:
    """Hierarchical Sequential Transduction Units over a user's action sequence.

    Per layer and position: one projection ``d -> H*(2*dv + 2*dqk)`` giving U, V, Q, K; pointwise
    attention (no softmax) over the sequence; ``norm(A V) * U`` (elementwise); output projection
    ``H*dv -> d``. ``seq_len`` is the *real* (unpadded) sequence length. ``n_negatives`` adds the
    sampled-softmax similarity ``2 * d * (1 + n_negatives)`` per position (0 leaves it out).
    ``n_items`` sizes the item embedding table (parameter counts only); ``optimizer`` is its sparse
    optimizer (``OPTIMIZERS``; ``None`` when not stated), for :func:`embedding_traffic`.
    """

    n_layers: int
    d_model: int
    n_heads: int
    dqk: int
    dv: int
    seq_len: int
    causal: bool = True
    n_negatives: int = 0
    n_items: int | None = None
    embedding_bytes: int = 4
    extra_blocks: tuple[Component, ...] = ()
    name: str = "custom-hstu"
    optimizer: str | None = None

    def __post_init__(self) -> None:
        for key in ("n_layers", "d_model", "n_heads", "dqk", "dv", "seq_len", "embedding_bytes"):
            check_int(key, getattr(self, key))
        check_bool("causal", self.causal)
        check_int("n_negatives", self.n_negatives, minimum=0)
        if self.n_items is not None:
            check_int("n_items", self.n_items)
        object.__setattr__(self, "extra_blocks", check_blocks(self.extra_blocks))
        _check_name(self.name)
        if self.optimizer is not None:
            check_choice("optimizer", self.optimizer, OPTIMIZERS)

    def layer_params(self) -> int:
        d, h = self.d_model, self.n_heads
        return d * h * (2 * self.dv + 2 * self.dqk) + h * self.dv * d + d


def hstu_sequence_flops(
    config: HSTUConfig, length: int, *, causal: bool | None = None
) -> tuple[Component, ...]:
    """Forward FLOPs of one sequence of ``length`` real positions, by component.

    Attention pairs are ``n * (n + 1) / 2`` when causal (the unmasked triangle), else ``n**2``;
    each pair costs ``2 * H * dqk`` (scores) and ``2 * H * dv`` (values).
    """
    c = config
    n = check_int("length", length)
    causal = c.causal if causal is None else check_bool("causal", causal)
    d, h, L = c.d_model, c.n_heads, c.n_layers
    pairs = n * (n + 1) / 2 if causal else float(n * n)
    rows = [
        Component(
            "item_embedding",
            0.0,
            params=(c.n_items or 0) * d,
            note=f"{n} lookups of dim {d}: zero FLOPs",
        ),
        Component(
            "uvqk_proj",
            2.0 * n * d * h * (2 * c.dv + 2 * c.dqk) * L,
            params=d * h * (2 * c.dv + 2 * c.dqk) * L,
        ),
        Component("attn_scores", 2.0 * pairs * h * c.dqk * L, attention=True, note="Q @ K^T"),
        Component("attn_values", 2.0 * pairs * h * c.dv * L, attention=True, note="A @ V"),
        Component("out_proj", 2.0 * n * h * c.dv * d * L, params=(h * c.dv * d + d) * L),
    ]
    if c.n_negatives:
        rows.append(
            Component(
                "loss_similarity",
                2.0 * n * d * (1 + c.n_negatives),
                note=f"dot with 1 positive + {c.n_negatives} sampled negatives per position",
            )
        )
    rows.extend(c.extra_blocks)
    return tuple(rows)


def hstu_flops(
    config: HSTUConfig,
    *,
    seq_len: int | None = None,
    lengths: Sequence[int] | None = None,
    batch: int | None = None,
    causal: bool | None = None,
    recompute: Recompute = "none",
    backward_factor: float = 2.0,
    source: str = "",
) -> ModelFlops:
    """HSTU FLOPs per sample (sequence), per token and per step.

    With ``lengths`` (the real lengths of the sequences in a batch) the per-sample values are
    means over those sequences and ``batch`` defaults to ``len(lengths)``; attention grows with
    the square of each length, so a mean length would undercount. ``extra_blocks`` are per
    sample. The ``breakdown`` is per sample (``unit="sample"``).
    """
    if seq_len is not None:
        config = replace(config, seq_len=check_int("seq_len", seq_len))
    causal = config.causal if causal is None else check_bool("causal", causal)
    if lengths is None:
        lens = (config.seq_len,)
    else:
        lens = _int_tuple("lengths", lengths)
    if batch is None:
        batch = len(lens) if lengths is not None else 1
    check_int("batch", batch)

    sums: dict[str, Component] = {}
    for n in lens:
        for comp in hstu_sequence_flops(config, n, causal=causal):
            prev = sums.get(comp.name)
            if prev is None:
                sums[comp.name] = comp
            else:
                sums[comp.name] = replace(
                    prev, forward_flops=prev.forward_flops + comp.forward_flops
                )
    k = len(lens)
    rows = tuple(replace(c, forward_flops=c.forward_flops / k) for c in sums.values())
    if lengths is not None:
        rows = tuple(
            replace(r, note=f"mean over {k} sequences") if r.name == "item_embedding" else r
            for r in rows
        )
    mean_len = sum(lens) / k
    layer_params = config.layer_params() * config.n_layers
    table = (config.n_items or 0) * config.d_model
    extra_params = sum(b.params for b in config.extra_blocks)
    params = ParamCounts(
        total=layer_params + table + extra_params,
        active=layer_params + extra_params + int(round(mean_len)) * config.d_model,
        embedding=table,
    )
    notes = ["HSTU attention is pointwise (SiLU), no softmax; both products are counted"]
    if lengths is not None:
        notes.append(f"per-sample values are means over {k} real sequence lengths")
    notes.append("embedding traffic (embedding_traffic()): " + embedding_traffic(config).summary())
    return finish(
        name=config.name,
        kind="hstu",
        unit="sample",
        tokens_per_sample=mean_len,
        batch=batch,
        breakdown=rows,
        params=params,
        conventions=_conventions(
            backward_factor, recompute, causal=causal, attention=True, notes=tuple(notes)
        ),
        embedding_bytes_per_sample=float(mean_len * config.d_model * config.embedding_bytes),
        source=source,
        config=config,
    )


# --------------------------------------------------------------------------------------------
# embedding traffic: the bytes a training step moves for the embedding tables

_FBGEMM = (
    "https://github.com/pytorch/FBGEMM/blob/00c10a03f55e1cd259853ca48f0a6bec99307e32/"
    "fbgemm_gpu/codegen/genscript/optimizers.py"
)

#: bytes per stored element of an embedding row, by precision
ROW_DTYPES: dict[str, int] = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}

#: sparse optimizer -> (state values per row element, state values per row, what it keeps, with its source)
OPTIMIZERS: dict[str, tuple[int, int, str]] = {
    "sgd": (0, 0, "plain SGD keeps no optimizer state"),
    "adagrad": (1, 0, f"Adagrad keeps one accumulator per element (FBGEMM adagrad(): momentum1[idx * D + d], "
                f"{_FBGEMM})"),
    "rowwise_adagrad": (0, 1, f"row-wise Adagrad keeps one accumulator per row (FBGEMM rowwise_adagrad(): "
                        f"momentum1[idx], {_FBGEMM})"),
    "adam": (2, 0, "Adam keeps two moments per element (Kingma & Ba 2015, arXiv:1412.6980, Algorithm 1)"),
}

#: how model-parallel tables are laid out, for the all-to-all bytes (row-wise sharding is not modelled)
SHARDINGS = ("table_wise", "column_wise", "data_parallel")

_OPTIMIZER_ALIASES = {
    "exactsgd": "sgd", "sgd": "sgd", "adagrad": "adagrad", "exactadagrad": "adagrad",
    "rowwiseadagrad": "rowwise_adagrad", "exactrowwiseadagrad": "rowwise_adagrad", "adam": "adam",
}


def canonical_optimizer(text: Any) -> str | None:
    """The ``OPTIMIZERS`` key a logged optimizer name means (``"adagrad"``, ``"EXACT_ROWWISE_ADAGRAD"``,
    ``"row-wise adagrad"``), else None (not a name this module knows: never guessed)."""
    if not isinstance(text, str):
        return None
    key = "".join(ch for ch in text.lower() if ch.isalnum())
    return _OPTIMIZER_ALIASES.get(key)


@dataclass(frozen=True)
class ByteTerm:
    """One part of the embedding traffic: its name, bytes per sample and how it is counted."""

    name: str
    bytes_per_sample: float
    note: str = ""


@dataclass(frozen=True)
class EmbeddingTraffic:
    """Bytes the embedding tables move per training sample, by term, under stated conventions.

    ``terms`` are memory traffic on the accelerators holding the tables (lookups, the sparse update,
    optimizer state); ``alltoall_per_sample`` is what model-parallel tables exchange per sample
    (pooled embeddings forward, their gradients backward) before the share that stays on a rank.
    ``complete`` is False when the optimizer is not stated (its state traffic is then left out).
    """

    name: str
    lookups_per_sample: float
    embedding_dim: int
    row_bytes: int
    optimizer: str | None
    state_bytes: int
    vectors_per_sample: float
    comm_bytes: int
    terms: tuple[ByteTerm, ...]
    conventions: tuple[str, ...]

    @property
    def per_sample(self) -> float:
        """Memory traffic per sample: the sum of ``terms``."""
        return float(sum(t.bytes_per_sample for t in self.terms))

    @property
    def complete(self) -> bool:
        return self.optimizer is not None

    def term(self, name: str) -> float:
        """Bytes per sample of one term (0 for a term this traffic has none of)."""
        return float(sum(t.bytes_per_sample for t in self.terms if t.name == name))

    @property
    def alltoall_per_sample(self) -> float:
        """Pooled embeddings forward plus their gradients backward, per sample, before the crossing share."""
        return 2.0 * self.vectors_per_sample * self.embedding_dim * self.comm_bytes

    def per_step(self, batch: float) -> float:
        return self.per_sample * check_number("batch", batch)

    def alltoall_per_step(self, batch: float, n_shards: int, sharding: str = "table_wise") -> float:
        """Bytes of one step's all-to-all that cross between ranks, all ranks together: the pooled
        embeddings (and gradients) of ``batch`` samples, of which ``(N - 1) / N`` leave their rank when
        tables and samples spread evenly over ``N`` shards; 0 for data-parallel (replicated) tables."""
        check_number("batch", batch)
        n = check_int("n_shards", n_shards)
        if check_choice("sharding", sharding, SHARDINGS) == "data_parallel":
            return 0.0
        return batch * self.alltoall_per_sample * (n - 1) / n

    def summary(self) -> str:
        """One line: precision, lookups, optimizer and the bytes per sample by part."""
        parts = {"lookups": "lookup_read", "update": "update_", "optimizer state": "state_"}
        split = " + ".join(f"{label} {sum(t.bytes_per_sample for t in self.terms if t.name.startswith(key)):,.0f}"
                           for label, key in parts.items() if any(t.name.startswith(key) for t in self.terms))
        opt = self.optimizer or "not stated (its state not counted)"
        return (f"{_dtype_name(self.row_bytes)} rows, {self.lookups_per_sample:,.6g} lookups per sample of dim "
                f"{self.embedding_dim}, optimizer {opt}: {self.per_sample:,.0f} B per sample ({split}); "
                f"all-to-all {self.alltoall_per_sample:,.0f} B per sample before the (N-1)/N crossing share")

    def describe(self) -> list[str]:
        return [self.summary(), *self.conventions]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name, "lookups_per_sample": self.lookups_per_sample,
            "embedding_dim": self.embedding_dim, "row_bytes": self.row_bytes, "optimizer": self.optimizer,
            "state_bytes": self.state_bytes, "vectors_per_sample": self.vectors_per_sample,
            "comm_bytes": self.comm_bytes, "bytes_per_sample": self.per_sample, "complete": self.complete,
            "alltoall_bytes_per_sample": self.alltoall_per_sample,
            "terms": [{"name": t.name, "bytes_per_sample": t.bytes_per_sample, "note": t.note} for t in self.terms],
            "conventions": list(self.conventions),
        }


def _dtype_name(nbytes: int) -> str:
    names = [k for k, v in ROW_DTYPES.items() if v == nbytes]
    return "/".join(names) if names else f"{nbytes}-byte"


def _element_bytes(name: str, value: Any) -> int:
    """Bytes per element from a precision name (``ROW_DTYPES``) or a whole number of bytes."""
    if isinstance(value, str):
        return ROW_DTYPES[check_choice(name, value.lower(), ROW_DTYPES)]
    return check_int(name, value)


def _lookup_shape(model: Any) -> tuple[Any, float, float, str]:
    """(config, lookups per sample, vectors exchanged per sample, what the lookups are)."""
    config = getattr(model, "config", None) if not isinstance(model, (DLRMConfig, HSTUConfig)) else model
    if isinstance(config, DLRMConfig):
        pf = config.pooling_factors
        how = (f"the multi-hot pooling factors summed over {config.n_sparse} tables ({', '.join(map(str, pf))})"
               if pf else f"one per table (pooling factor 1) over {config.n_sparse} tables")
        return config, float(config.lookups_per_sample), float(config.n_sparse), how
    if isinstance(config, HSTUConfig):
        n = getattr(model, "tokens_per_sample", None) if config is not model else None
        n = float(n) if n else float(config.seq_len)
        return config, n, n, f"one item-embedding row per sequence position ({n:,.6g}; no pooling)"
    raise FlopsConfigError(
        "embedding_traffic needs a DLRMConfig, an HSTUConfig or their model_flops(...) result; "
        f"got {type(model).__name__}"
    )


def _traffic_terms(n: float, d: int, b: int, optimizer: str | None, s: int) -> list[ByteTerm]:
    rows = n * d * b
    terms = [
        ByteTerm("lookup_read", rows, f"{n:,.6g} rows x {d} x {b} B read by the lookups"),
        ByteTerm("update_read", rows, "each looked-up row read again by the sparse update"),
        ByteTerm("update_write", rows, "each looked-up row written back by the sparse update"),
    ]
    if optimizer is not None:
        per_element, per_row, _ = OPTIMIZERS[optimizer]
        state = n * (per_element * d + per_row) * s
        if state:
            what = f"{per_element} per element" if per_element else f"{per_row} per row"
            terms.append(ByteTerm("state_read", state, f"{optimizer} state ({what}, {s} B each) read"))
            terms.append(ByteTerm("state_write", state, f"{optimizer} state ({what}, {s} B each) written"))
    return terms


def embedding_traffic(
    model: Any,
    *,
    optimizer: str | None = None,
    embedding_bytes: int | str | None = None,
    state_bytes: int | str = 4,
    comm_bytes: int | str | None = None,
) -> EmbeddingTraffic:
    """Bytes the embedding tables of ``model`` (a DLRMConfig, an HSTUConfig or a ``model_flops`` result
    of one) move per training sample, with the conventions stated in the result.

    ``optimizer`` (``OPTIMIZERS``; default the config's, else not stated: its state is left out),
    ``embedding_bytes`` (bytes per row element or a name, ``"fp32"``/``"fp16"``/``"bf16"``/``"int8"``;
    default the config's), ``state_bytes`` (per optimizer-state value, fp32 by default) and
    ``comm_bytes`` (per pooled-embedding element in the all-to-all; default the rows' precision).
    """
    config, n, vectors, how = _lookup_shape(model)
    opt = optimizer if optimizer is not None else config.optimizer
    if opt is not None:
        opt = check_choice("optimizer", opt, OPTIMIZERS)
    b = _element_bytes("embedding_bytes", config.embedding_bytes if embedding_bytes is None else embedding_bytes)
    s = _element_bytes("state_bytes", state_bytes)
    c = _element_bytes("comm_bytes", b if comm_bytes is None else comm_bytes)
    d = config.d_model if isinstance(config, HSTUConfig) else config.embedding_dim
    conventions = (
        f"rows: {_dtype_name(b)} ({b} B per element), dim {d}; int8 rows' quantisation scales not counted",
        f"lookups: {n:,.6g} per sample = {how}",
        "every lookup counted: a row hit twice in a batch is read twice (no de-duplication, no cache), so "
        "the update and state terms bound unique-row traffic from above",
        "sparse update: each looked-up row read and written back once (backward fused with the optimizer, "
        "as TorchRec/FBGEMM run it)",
        "optimizer: " + (f"{opt}: {OPTIMIZERS[opt][2]}; state values {s} B each" if opt else
                         "not stated: its state traffic is not counted (give optimizer=)"),
        "not counted: the input ids, pooled outputs and their gradients in memory, dense parameters",
        f"all-to-all (model-parallel tables, table- or column-wise): {vectors:,.6g} pooled vectors of {d} x "
        f"{c} B forward and their gradients backward per sample; (N-1)/N of it crosses between N shards; "
        "row-wise sharding and the ids' all-to-all are not modelled",
    )
    return EmbeddingTraffic(
        name=config.name, lookups_per_sample=n, embedding_dim=d, row_bytes=b, optimizer=opt, state_bytes=s,
        vectors_per_sample=vectors, comm_bytes=c, terms=tuple(_traffic_terms(n, d, b, opt, s)),
        conventions=conventions,
    )
