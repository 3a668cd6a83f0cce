"""ipywidgets explorers. Each is a thin layer over a pure function that is tested on its own.

The pure functions take plain values and return HTML (or a DataFrame/figure); the widget only
wires sliders to them and replaces one Output's content in place, so nothing piles up.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from . import formulas, hardware

__all__ = ["CalculatorInputs", "calculator_html", "calculator_result", "mfu_calculator"]


@dataclass(frozen=True)
class CalculatorInputs:
    accelerator: str
    dtype: str
    gpus: int
    flops_per_step: float
    step_seconds: float
    sparse: bool = False


def calculator_result(inputs: CalculatorInputs) -> formulas.MFUResult:
    """MFU for the calculator's inputs, the peak taken from the registry (never a fallback)."""
    peak = hardware.get_peak(inputs.accelerator, inputs.dtype, sparse=inputs.sparse)
    return formulas.compute_mfu(
        model_flops_per_step=inputs.flops_per_step,
        step_seconds=inputs.step_seconds,
        n_accelerators=inputs.gpus,
        peak_flops_per_accelerator=peak.flops,
        accelerator=peak.accelerator,
        dtype=inputs.dtype,
        sparse=inputs.sparse,
        peak_source=peak.source,
    )


def calculator_html(inputs: CalculatorInputs) -> str:
    """What the calculator shows: MFU with its denominators, or the reason there is none."""
    try:
        r = calculator_result(inputs)
    except formulas.MFUAbove100Error as exc:
        return (
            '<div class="mfu-result mfu-error"><b>MFU above 100% — impossible.</b>'
            f"<pre>{html.escape(str(exc))}</pre></div>"
        )
    except (hardware.RegistryError, ValueError) as exc:
        return f'<div class="mfu-result mfu-error"><b>No MFU:</b> {html.escape(str(exc))}</div>'
    peak = r.peak_flops_per_accelerator / formulas.TERA
    kind = "sparse" if r.sparse else "dense"
    return (
        '<div class="mfu-result">'
        f'<span class="mfu-value" style="font-size:1.4em"><b>MFU: {r.mfu:.2%}</b></span><br>'
        f"Model throughput: {r.model_tflops_per_second:,.2f} TFLOP/s "
        f"= {r.model_flops_per_step:.3g} FLOP / {r.step_seconds:g} s<br>"
        f"Cluster peak: {r.cluster_peak_tflops:,.2f} TFLOP/s "
        f"= {r.n_accelerators:,} × {peak:,.1f} TFLOP/s ({html.escape(r.accelerator or '')} {r.dtype} {kind})<br>"
        f'<small>Peak source: <a href="{html.escape(r.peak_source or "")}" target="_blank">'
        f"{html.escape(r.peak_source or '')}</a></small></div>"
    )


def mfu_calculator(
    *,
    accelerator: str = "H100 SXM",
    dtype: str = "bf16",
    gpus: int = 128,
    flops_per_step: float = 2.4e15,
    step_seconds: float = 1.2,
) -> Any:
    """A calculator: accelerator and dtype from the registry, GPU count, FLOPs per step, step time."""
    import ipywidgets as w

    names = [a.name for a in hardware.accelerators()]
    acc = w.Dropdown(options=names, value=hardware.resolve(accelerator).name, description="Accelerator")
    dt = w.Dropdown(options=hardware.resolve(accelerator).dtypes(), value=dtype, description="dtype")
    sparse = w.Checkbox(value=False, description="sparse peak (2:4)")
    n = w.IntSlider(value=gpus, min=1, max=16384, step=1, description="GPUs",
                    continuous_update=False, style={"description_width": "initial"})
    flops = w.FloatLogSlider(value=flops_per_step, base=10, min=12, max=19, step=0.01,
                             description="FLOPs/step", readout_format=".3g", continuous_update=False)
    secs = w.FloatSlider(value=step_seconds, min=0.05, max=30.0, step=0.05, description="step s",
                         readout_format=".2f", continuous_update=False)
    out = w.HTML()

    def refresh(_: Any = None) -> None:
        out.value = calculator_html(CalculatorInputs(acc.value, dt.value, n.value, flops.value, secs.value, sparse.value))

    def on_accelerator(_: Any = None) -> None:
        options = hardware.resolve(acc.value).dtypes()
        keep = dt.value if dt.value in options else ("bf16" if "bf16" in options else options[0])
        dt.unobserve(refresh, "value")
        dt.options = options
        dt.value = keep
        dt.observe(refresh, "value")
        refresh()

    acc.observe(on_accelerator, "value")
    for widget in (dt, sparse, n, flops, secs):
        widget.observe(refresh, "value")
    refresh()
    box = w.VBox([w.HBox([acc, dt, sparse]), n, flops, secs, out])
    box.add_class("mfu-calculator")
    return box


# --------------------------------------------------------------------------------------------
# Model-FLOPs explorer: pick a preset, change sequence length / batch / experts, watch the
# breakdown move. Pure functions first (tested without a browser), then the thin widget.

EXPLORER_SEQ_LENS = tuple(2**k for k in range(6, 18))  # 64 .. 131,072 tokens
EXPLORER_BATCHES = tuple(2**k for k in range(0, 17))  # 1 .. 65,536 samples per step
_SI = ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))


def si_flops(value: float, unit: str = "FLOP") -> str:
    """``57912852480`` -> ``'57.91 GFLOP'``: four significant figures, decimal prefix."""
    value = float(value)
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return f"{value / scale:,.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def _count(n: float) -> str:
    """``8030261248`` -> ``'8.03 B'``; ``16071937`` -> ``'16.1 M'``."""
    for scale, suffix in ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= scale:
            return f"{n / scale:,.3g} {suffix}"
    return f"{n:,.0f}"


def _prefix_for(value: float) -> tuple[float, str]:
    for scale, prefix in _SI:
        if abs(value) >= scale:
            return scale, prefix
    return 1.0, ""


def explorer_flops(
    preset: str,
    *,
    seq_len: int | None = None,
    batch: int = 1,
    experts: int | None = None,
    top_k: int | None = None,
    causal: bool | None = None,
    recompute: str = "none",
):  # -> mfu_toolkit.flops.ModelFlops
    """Model FLOPs of a preset with the explorer's overrides applied.

    ``seq_len`` and ``causal`` apply to sequence models (transformers, HSTU; ``None`` keeps the
    preset's value: non-causal for transformers as in PaLM, causal for HSTU). ``experts`` and
    ``top_k`` change the number of routed experts and how many each token uses, for
    mixture-of-experts presets only (e.g. ``mixtral-8x7b``); the expert width stays as published.
    ``batch`` is samples (sequences) per step. ``recompute`` changes hardware FLOPs only.
    Raises ``FlopsConfigError`` (a ``ValueError``) naming the offending parameter.
    """
    import dataclasses

    from .flops import FlopsConfigError, TransformerConfig, get_preset, model_flops

    p = get_preset(preset)
    config = p.config
    if experts is not None or top_k is not None:
        if not (isinstance(config, TransformerConfig) and config.is_moe):
            raise FlopsConfigError(
                f"experts and top_k apply to mixture-of-experts presets only; {p.name} has no "
                f"experts (got experts={experts!r}, top_k={top_k!r})"
            )
        changes: dict[str, Any] = {}
        if experts is not None:
            changes["n_experts"] = experts
        if top_k is not None:
            changes["top_k"] = top_k
        config = dataclasses.replace(config, **changes)
        p = dataclasses.replace(p, config=config)
    return model_flops(p, seq_len=seq_len, batch=batch, causal=causal, recompute=recompute)


_TABLE_COLUMNS = ["component", "forward_flops", "unit", "share", "training_flops_per_step", "note"]


def flops_explorer_table(preset: str, **options: Any):  # -> pandas.DataFrame
    """The explorer's breakdown: one row per component of ``explorer_flops(preset, **options)``.

    Columns: ``component``; ``forward_flops`` per ``unit`` (``token`` for transformers, ``sample``
    for recommendation models); ``share`` of the forward FLOPs; ``training_flops_per_step``
    (forward + backward of the whole batch, model FLOPs); ``note``.
    """
    import pandas as pd

    r = explorer_flops(preset, **options)
    train = 1.0 + r.conventions.backward_factor
    to_sample = float(r.tokens_per_sample) if r.unit == "token" else 1.0
    total = sum(c.forward_flops for c in r.breakdown)
    rows = [
        {
            "component": c.name,
            "forward_flops": c.forward_flops,
            "unit": r.unit,
            "share": c.forward_flops / total if total else 0.0,
            "training_flops_per_step": c.forward_flops * to_sample * train * r.batch,
            "note": c.note,
        }
        for c in r.breakdown
    ]
    return pd.DataFrame(rows, columns=_TABLE_COLUMNS)


def flops_explorer_headline(preset: str, **options: Any) -> str:
    """The explorer's headline: training (model) FLOPs per token or sample, and per step."""
    r = explorer_flops(preset, **options)
    per_unit = f"{si_flops(r.training_per_unit)} per {r.unit}"
    samples = ("sequence" if r.tokens_per_sample else "sample") + ("" if r.batch == 1 else "s")
    return f"Training: {per_unit} · {si_flops(r.training_per_step)} per step of {r.batch:,} {samples}"


def flops_explorer_html(preset: str, **options: Any) -> str:
    """What the explorer prints above its chart: headline, sizes, hardware FLOPs, conventions."""
    try:
        r = explorer_flops(preset, **options)
        headline = flops_explorer_headline(preset, **options)
    except ValueError as exc:
        return (
            '<div class="flops-summary flops-error"><b>No FLOPs:</b> '
            f"{html.escape(str(exc))}</div>"
        )
    params = r.params
    sizes = f"{_count(params.total)} parameters"
    if params.active != params.total:
        sizes += f", {_count(params.active)} active per {r.unit}"
    if r.tokens_per_sample:
        sizes += f"; {r.tokens_per_sample:,.0f} tokens per sample"
    lines = [
        f'<span class="flops-value" style="font-size:1.2em"><b>{html.escape(headline)}</b></span>',
        f"{html.escape(r.name)} ({r.kind}): {sizes}",
        f"Hardware FLOPs per step (recompute {html.escape(r.conventions.recompute)}): "
        f"{si_flops(r.hardware_per_step)} = {r.hardware_per_step / r.training_per_step:.3f} × model",
    ]
    if r.embedding_bytes_per_sample is not None:
        lines.append(
            f"Embedding bytes read per sample: {r.embedding_bytes_per_sample:,.0f} "
            f"({r.forward_per_sample / r.embedding_bytes_per_sample:,.0f} forward FLOPs per byte)"
        )
    if r.conventions.has_attention:
        lines.append("Attention: " + ("causal ((T + 1) / 2 keys per query)" if r.conventions.causal
                                      else "non-causal (all T keys, as in PaLM)"))
    return '<div class="flops-summary">' + "<br>".join(lines) + "</div>"


def flops_explorer_figure(preset: str, **options: Any):  # -> matplotlib.figure.Figure
    """A seaborn bar chart of forward FLOPs per token/sample by component, each bar labelled
    with its share. Built on a bare ``Figure`` (not pyplot), so repeated redraws never pile up
    open figures; ``plt.close`` is not needed."""
    import seaborn as sns
    from matplotlib.figure import Figure

    table = flops_explorer_table(preset, **options)
    r = explorer_flops(preset, **options)
    scale, prefix = _prefix_for(float(table["forward_flops"].max()))
    data = table.assign(value=table["forward_flops"] / scale)
    fig = Figure(figsize=(7.0, 3.6), dpi=80, layout="constrained")
    ax = fig.add_subplot()
    sns.barplot(data=data, y="component", x="value", hue="component", legend=False, ax=ax,
                palette="viridis")
    for bars, share in zip(ax.containers, data["share"], strict=True):
        ax.bar_label(bars, labels=[f"{share:.1%}"], padding=3, fontsize=9)
    ax.set_xlim(0, float(data["value"].max()) * 1.18 or 1.0)
    ax.set_xlabel(f"forward {prefix}FLOP per {r.unit}")
    ax.set_ylabel("")
    seq = f", T = {r.tokens_per_sample:,.0f}" if r.tokens_per_sample else ""
    ax.set_title(f"{r.name}{seq}: forward FLOPs by component", fontsize=10)
    return fig


def _explorer_display_table(table):  # -> pandas.DataFrame of strings, for the widget
    unit = table["unit"].iloc[0]
    return table.assign(
        **{
            f"forward per {unit}": table["forward_flops"].map(si_flops),
            "share": table["share"].map("{:.1%}".format),
            "training per step": table["training_flops_per_step"].map(si_flops),
        }
    )[["component", f"forward per {unit}", "share", "training per step", "note"]]


def flops_explorer(
    preset: str = "llama3-8b",
    *,
    seq_len: int | None = None,
    batch: int = 512,
    experts: int | None = None,
    top_k: int | None = None,
    causal: bool | None = None,
    recompute: str = "none",
) -> Any:
    """Explore a preset's FLOPs: preset, sequence length, batch, experts / top-k (MoE), causal
    halving and recomputation. The headline is ``flops_explorer_html``; the chart
    (``flops_explorer_figure``) and table (``flops_explorer_table``) are redrawn in place in one
    ``Output``. The box has the CSS class ``flops-explorer``."""
    import ipywidgets as w
    from IPython.display import display

    from .flops import RECOMPUTE_MODES, TransformerConfig, get_preset, list_presets

    def seq_options(default: int | None, extra: int | None = None) -> list[int]:
        return sorted(set(EXPLORER_SEQ_LENS) | {v for v in (default, extra) if v})

    first = get_preset(preset)
    pick = w.Dropdown(options=list_presets(), value=first.name, description="Preset")
    seq = w.SelectionSlider(options=seq_options(getattr(first.config, "seq_len", None), seq_len),
                            description="seq len", continuous_update=False)
    bat = w.SelectionSlider(options=sorted(set(EXPLORER_BATCHES) | {batch}), value=batch,
                            description="batch", continuous_update=False)
    n_exp = w.IntSlider(value=8, min=1, max=64, description="experts", continuous_update=False)
    k = w.IntSlider(value=2, min=1, max=8, description="top-k", continuous_update=False)
    cau = w.Checkbox(value=False, description="causal halving")
    rec = w.Dropdown(options=list(RECOMPUTE_MODES), value=recompute, description="recompute")
    headline = w.HTML()
    out = w.Output()
    state = {"busy": False}

    def inputs() -> dict[str, Any]:
        config = get_preset(pick.value).config
        sequence = hasattr(config, "seq_len")
        moe = isinstance(config, TransformerConfig) and config.is_moe
        return {
            "seq_len": seq.value if sequence else None,
            "batch": bat.value,
            "experts": n_exp.value if moe else None,
            "top_k": k.value if moe else None,
            "causal": cau.value if sequence else None,
            "recompute": rec.value,
        }

    def refresh(_: Any = None) -> None:
        if state["busy"]:
            return
        opts = inputs()
        headline.value = flops_explorer_html(pick.value, **opts)
        with out:
            out.clear_output(wait=True)
            try:
                table = flops_explorer_table(pick.value, **opts)
                fig = flops_explorer_figure(pick.value, **opts)
            except ValueError:
                return  # the headline says why
            display(fig)
            display(_explorer_display_table(table))

    def load_preset(name: str, *, seq_value: int | None = None, experts_value: int | None = None,
                    k_value: int | None = None, causal_value: bool | None = None) -> None:
        config = get_preset(name).config
        sequence = hasattr(config, "seq_len")
        moe = isinstance(config, TransformerConfig) and config.is_moe
        state["busy"] = True
        try:
            if sequence:
                seq.options = seq_options(config.seq_len, seq_value)
                seq.value = seq_value or config.seq_len
                default_causal = bool(getattr(config, "causal", False))  # HSTU: on; transformers: off
                cau.value = default_causal if causal_value is None else bool(causal_value)
            seq.disabled = cau.disabled = not sequence
            if moe:
                n_exp.value = experts_value or config.n_experts
                k.max = n_exp.value
                k.value = min(k_value or config.top_k, n_exp.value)
            n_exp.disabled = k.disabled = not moe
        finally:
            state["busy"] = False
        refresh()

    def on_preset(change: Any) -> None:
        load_preset(change["new"])

    def on_experts(_: Any = None) -> None:
        state["busy"] = True
        try:
            k.max = n_exp.value  # an IntSlider clamps its value to the new maximum
        finally:
            state["busy"] = False
        refresh()

    pick.observe(on_preset, "value")
    n_exp.observe(on_experts, "value")
    for widget in (seq, bat, k, cau, rec):
        widget.observe(refresh, "value")
    load_preset(first.name, seq_value=seq_len, experts_value=experts, k_value=top_k,
                causal_value=causal)
    box = w.VBox([w.HBox([pick, rec, cau]), seq, bat, w.HBox([n_exp, k]), headline, out])
    box.add_class("flops-explorer")
    return box
