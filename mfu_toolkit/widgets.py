"""ipywidgets explorers. Each is a thin layer over a pure function that is tested on its own.

The pure functions take plain values and return HTML (or a DataFrame/figure); the widget only
wires sliders to them and replaces one Output's content in place, so nothing piles up.
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Any

from . import formulas, hardware
from .deprecation import renamed

__all__ = ["CalculatorInputs", "calculator_html", "calculator_result", "mfu_calculator"]


@dataclass(frozen=True)
class CalculatorInputs:
    accelerator: str
    dtype: str
    gpus: int
    flops_per_step: float
    step_seconds: float
    sparse: bool = False
    per: str = "device"  # what ``gpus`` counts: framework devices (default) or packages


def calculator_result(inputs: CalculatorInputs) -> formulas.MFUResult:
    """MFU for the calculator's inputs, the peak taken from the registry (never a fallback),
    per device (``gpus`` counts framework devices: two per MI250X) unless ``per="package"``."""
    peak = hardware.get_peak(inputs.accelerator, inputs.dtype, sparse=inputs.sparse, per=inputs.per)
    return formulas.compute_mfu(
        model_flops_per_step=inputs.flops_per_step,
        step_s=inputs.step_seconds,
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
    dpp = hardware.resolve(inputs.accelerator).devices_per_package
    package, device = (peak * dpp, peak) if inputs.per == "device" else (peak, peak / dpp)
    both = (f"; {package:,.6g} TFLOP/s per package = {device:,.6g} per device × {dpp}" if dpp > 1
            else "; 1 device per package")
    return (
        '<div class="mfu-result">'
        f'<span class="mfu-value" style="font-size:1.4em"><b>MFU: {r.mfu:.2%}</b></span><br>'
        f"Model throughput: {r.model_tflops_per_second:,.2f} TFLOP/s "
        f"= {r.model_flops_per_step:.6g} FLOP / {r.step_seconds:.6g} s "
        f"(step time used: {r.step_seconds:.6g} s)<br>"
        f"Cluster peak: {r.cluster_peak_tflops:,.2f} TFLOP/s "
        f"= {r.n_accelerators:,} × {peak:,.1f} TFLOP/s per {inputs.per} "
        f"({html.escape(r.accelerator or '')} {r.dtype} {kind}{both})<br>"
        f'<small>Peak source: <a href="{html.escape(r.peak_source or "")}" target="_blank">'
        f"{html.escape(r.peak_source or '')}</a></small></div>"
    )


@renamed(gpus="n_accelerators", step_seconds="step_s")
def mfu_calculator(
    *,
    accelerator: str = "H100 SXM",
    dtype: str = "bf16",
    n_accelerators: int = 128,
    flops_per_step: float = 2.4e15,
    step_s: float = 1.2,
) -> Any:
    """A calculator: accelerator and dtype from the registry, GPU count (framework devices, or
    packages), FLOPs per step, step time."""
    import ipywidgets as w

    names = [a.name for a in hardware.accelerators()]
    acc = w.Dropdown(options=names, value=hardware.resolve(accelerator).name, description="Accelerator")
    dt = w.Dropdown(options=hardware.resolve(accelerator).dtypes(), value=dtype, description="dtype")
    sparse = w.Checkbox(value=False, description="sparse peak (2:4)")
    per = w.Dropdown(options=[("devices", "device"), ("packages", "package")], value="device",
                     description="GPUs count")
    n = w.IntSlider(value=n_accelerators, min=1, max=16384, step=1, description="GPUs",
                    continuous_update=False, style={"description_width": "initial"})
    # Exact values are typed; the sliders beside them are for dragging and write into the fields.
    # The field's value is the one used, and the result repeats it, so 0.0948 s is 0.0948 s.
    flops = w.BoundedFloatText(value=flops_per_step, min=1.0, max=1e24, description="FLOPs/step",
                               layout=w.Layout(width="260px"))
    flops_drag = w.FloatLogSlider(value=flops_per_step, base=10, min=12, max=19, step=0.001, description="",
                                  readout=False, continuous_update=False)
    secs = w.BoundedFloatText(value=step_s, min=1e-6, max=1e6, step=0.0001, description="step s",
                              layout=w.Layout(width="260px"))
    secs_drag = w.FloatLogSlider(value=step_s, base=10, min=-2, max=1.5, step=0.001, description="",
                                 readout=False, continuous_update=False)
    out = w.HTML()

    def refresh(_: Any = None) -> None:
        out.value = calculator_html(CalculatorInputs(acc.value, dt.value, n.value, flops.value, secs.value,
                                                     sparse.value, per.value))

    def linked(field: Any, drag: Any) -> None:
        def from_drag(change: Any) -> None:
            field.value = float(f"{change['new']:.4g}")  # a dragged value, rounded to what a slider resolves

        def from_field(change: Any) -> None:
            lo, hi = drag.base ** drag.min, drag.base ** drag.max
            drag.unobserve(from_drag, "value")
            drag.value = min(max(change["new"], lo), hi)
            drag.observe(from_drag, "value")

        drag.observe(from_drag, "value")
        field.observe(from_field, "value")

    linked(flops, flops_drag)
    linked(secs, secs_drag)

    def on_accelerator(_: Any = None) -> None:
        options = hardware.resolve(acc.value).dtypes()
        keep = dt.value if dt.value in options else ("bf16" if "bf16" in options else options[0])
        dt.unobserve(refresh, "value")
        dt.options = options
        dt.value = keep
        dt.observe(refresh, "value")
        refresh()

    acc.observe(on_accelerator, "value")
    for widget in (dt, sparse, per, n, flops, secs):
        widget.observe(refresh, "value")
    refresh()
    box = w.VBox([w.HBox([acc, dt, sparse, per]), n, w.HBox([flops, flops_drag]), w.HBox([secs, secs_drag]), out])
    box.add_class("mfu-calculator")
    return box


# --------------------------------------------------------------------------------------------
# Model-FLOPs explorer: pick a preset, change sequence length / batch / experts, watch the
# breakdown move. Pure functions first (tested without a browser), then the thin widget.

EXPLORER_SEQ_LENS = tuple(2**k for k in range(6, 18))  # 64 .. 131,072 tokens
EXPLORER_BATCHES = tuple(2**k for k in range(0, 17))  # 1 .. 65,536 samples per step
# Where a preset's source states no training length (mixtral-8x7b, mistral-7b, gemma-2-9b) the
# explorer's sequence-length control starts here, labelled as the user's choice.
EXPLORER_UNPUBLISHED_SEQ_LEN = 4096
# The recompute dropdown's labels (the values are mfu_toolkit.flops.RECOMPUTE_MODES).
EXPLORER_RECOMPUTE_LABELS = {
    "none": "none",
    "selective": "selective: attention re-run",
    "selective-eq8": "selective-eq8: 3 × attention",
    "full": "full: layers, not logits",
}
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


def explorer_seq_len(preset: str) -> int | None:
    """The sequence length the explorer starts ``preset`` at: the training length its source
    states, else ``EXPLORER_UNPUBLISHED_SEQ_LEN`` (the user's choice, and labelled so by
    ``flops_explorer_seq_note``); ``None`` for models without sequences (DLRM, MLP)."""
    from .flops import get_preset

    config = get_preset(preset).config
    if not hasattr(config, "seq_len"):
        return None
    return config.seq_len if config.seq_len is not None else EXPLORER_UNPUBLISHED_SEQ_LEN


def flops_explorer_seq_note(preset: str) -> str:
    """The label beside the explorer's sequence-length control: the preset's published training
    length, or that it publishes none and the value is the user's choice."""
    from .flops import get_preset

    p = get_preset(preset)
    if not hasattr(p.config, "seq_len"):
        return f"{p.name}: no sequence (not a sequence model)"
    if p.config.seq_len is None:
        return (f"{p.name} publishes no training length: the sequence length is your choice "
                f"(starts at {EXPLORER_UNPUBLISHED_SEQ_LEN:,})")
    return f"{p.name}'s published training length: {p.config.seq_len:,} tokens"


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
    """What the explorer prints above its chart: headline, sizes, where the sequence length comes
    from (the preset's published training length, or the user's choice where it publishes none),
    hardware FLOPs, and the conventions used (causal or not, the recompute mode)."""
    from .flops import get_preset

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
    conv = r.conventions
    recompute = EXPLORER_RECOMPUTE_LABELS.get(conv.recompute, conv.recompute)
    lines = [
        f'<span class="flops-value" style="font-size:1.2em"><b>{html.escape(headline)}</b></span>',
        f"{html.escape(r.name)} ({r.kind}): {sizes}",
    ]
    published = getattr(get_preset(preset).config, "seq_len", None)
    if r.tokens_per_sample and published is None:
        lines.append(f"Sequence length {r.tokens_per_sample:,.0f}: your choice "
                     f"({html.escape(r.name)} publishes no training length)")
    elif r.tokens_per_sample and r.tokens_per_sample != published:
        lines.append(f"Sequence length {r.tokens_per_sample:,.0f} "
                     f"(published training length {published:,})")
    lines.append(
        f"Hardware FLOPs per step (recompute {html.escape(recompute)}): "
        f"{si_flops(r.hardware_per_step)} = {r.hardware_per_step / r.training_per_step:.3f} × model"
    )
    if r.embedding_bytes_per_sample is not None:
        lines.append(
            f"Embedding bytes read per sample: {r.embedding_bytes_per_sample:,.0f} "
            f"({r.forward_per_sample / r.embedding_bytes_per_sample:,.0f} forward FLOPs per byte)"
        )
    if conv.has_attention:
        lines.append("Attention: " + ("causal ((T + 1) / 2 keys per query)" if conv.causal
                                      else "non-causal (all T keys, as in PaLM)"))
    lines.append(f"<small>Conventions: {html.escape(conv.summary())}<br>"
                 f"Recomputation: {html.escape(conv.to_dict()['recompute_convention'])}</small>")
    return '<div class="flops-summary">' + "<br>".join(lines) + "</div>"


def room_dpi() -> float:
    """The explorers' resolution: ``plots.ROOM_STYLE``'s, chosen for a projector."""
    from .plots import ROOM_STYLE

    return float(ROOM_STYLE["figure.dpi"])


def in_room_style(draw: Any) -> Any:
    """Draw an explorer's figure under ``plots.ROOM_STYLE`` (dpi and font sizes for a room),
    whatever the notebook's own rcParams: text sizes are read when each artist is made, so the
    whole drawing runs inside the style."""
    import functools

    @functools.wraps(draw)
    def drawn(*args: Any, **kwargs: Any) -> Any:
        import matplotlib as mpl

        from .plots import ROOM_STYLE

        with mpl.rc_context(ROOM_STYLE):
            return draw(*args, **kwargs)

    return drawn


@in_room_style
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
    fig = Figure(figsize=(8.5, 4.0), dpi=room_dpi(), layout="constrained")
    ax = fig.add_subplot()
    sns.barplot(data=data, y="component", x="value", hue="component", legend=False, ax=ax,
                palette="viridis")
    for bars, share in zip(ax.containers, data["share"], strict=True):
        ax.bar_label(bars, labels=[f"{share:.1%}"], padding=3, fontsize="small")
    ax.set_xlim(0, float(data["value"].max()) * 1.18 or 1.0)
    ax.set_xlabel(f"forward {prefix}FLOP per {r.unit}")
    ax.set_ylabel("")
    seq = f", T = {r.tokens_per_sample:,.0f}" if r.tokens_per_sample else ""
    ax.set_title(f"{r.name}{seq}: forward FLOPs by component")
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
    halving and recomputation (every mode of ``RECOMPUTE_MODES``). The headline is
    ``flops_explorer_html``; the chart (``flops_explorer_figure``) and table
    (``flops_explorer_table``) replace the content of one ``Output`` (see :func:`show_outputs`).
    The sequence length starts at the preset's published training length, or at
    ``EXPLORER_UNPUBLISHED_SEQ_LEN`` where its source states none; the label beside the slider
    (``flops_explorer_seq_note``) says which. The box has the CSS class ``flops-explorer``."""
    from .flops import get_preset

    first = get_preset(preset)
    c = _flops_controls(first.name, seq_len, batch, recompute)
    state = {"busy": False}

    def refresh(_: Any = None) -> None:
        if state["busy"]:
            return
        _flops_refresh(c)

    def load_preset(name: str, *, seq_value: int | None = None, experts_value: int | None = None,
                    k_value: int | None = None, causal_value: bool | None = None) -> None:
        config, sequence, moe = _flops_preset_kind(name)
        state["busy"] = True
        try:
            _flops_set_sequence(c, name, config, sequence, seq_value, causal_value)
            _flops_set_experts(c, config, moe, experts_value, k_value)
        finally:
            state["busy"] = False
        refresh()

    def on_preset(change: Any) -> None:
        load_preset(change["new"])

    def on_experts(_: Any = None) -> None:
        state["busy"] = True
        try:
            c.k.max = c.n_exp.value  # an IntSlider clamps its value to the new maximum
        finally:
            state["busy"] = False
        refresh()

    c.pick.observe(on_preset, "value")
    c.n_exp.observe(on_experts, "value")
    for widget in (c.seq, c.bat, c.k, c.cau, c.rec):
        widget.observe(refresh, "value")
    load_preset(first.name, seq_value=seq_len, experts_value=experts, k_value=top_k,
                causal_value=causal)
    return _flops_box(c)


@dataclass(frozen=True)
class _FlopsControls:
    """The FLOPs explorer's widgets, shared by its callbacks and its layout."""

    pick: Any
    seq: Any
    seq_note: Any  # the preset's published training length, or that the value is a choice
    bat: Any
    n_exp: Any
    k: Any
    cau: Any
    rec: Any
    headline: Any
    out: Any


def _explorer_seq_options(default: int | None, extra: int | None = None) -> list[int]:
    """The sequence-length slider's stops: the standard lengths plus the preset's and the caller's."""
    return sorted(set(EXPLORER_SEQ_LENS) | {v for v in (default, extra) if v})


def _flops_controls(first: str, seq_len: int | None, batch: int, recompute: str) -> _FlopsControls:
    """Make the explorer's widgets for preset ``first``; ``flops_explorer`` then loads the preset into them."""
    import ipywidgets as w

    from .flops import RECOMPUTE_MODES, list_presets

    pick = w.Dropdown(options=list_presets(), value=first, description="Preset")
    seq = w.SelectionSlider(options=_explorer_seq_options(explorer_seq_len(first), seq_len),
                            description="seq len", continuous_update=False)
    seq_note = w.HTML()
    bat = w.SelectionSlider(options=sorted(set(EXPLORER_BATCHES) | {batch}), value=batch,
                            description="batch", continuous_update=False)
    n_exp = w.IntSlider(value=8, min=1, max=64, description="experts", continuous_update=False)
    k = w.IntSlider(value=2, min=1, max=8, description="top-k", continuous_update=False)
    cau = w.Checkbox(value=False, description="causal halving")
    rec = w.Dropdown(options=[(EXPLORER_RECOMPUTE_LABELS.get(m, m), m) for m in RECOMPUTE_MODES],
                     value=recompute, description="recompute", layout=w.Layout(width="330px"))
    return _FlopsControls(pick, seq, seq_note, bat, n_exp, k, cau, rec, w.HTML(), w.Output())


def _flops_preset_kind(name: str) -> tuple[Any, bool, bool]:
    """A preset's config, whether it has a sequence length (and causal halving) and whether it is MoE."""
    from .flops import TransformerConfig, get_preset

    config = get_preset(name).config
    sequence = hasattr(config, "seq_len")
    moe = isinstance(config, TransformerConfig) and config.is_moe
    return config, sequence, moe


def _flops_inputs(c: _FlopsControls) -> dict[str, Any]:
    """The options the controls stand for; those the preset has no use for are None."""
    _config, sequence, moe = _flops_preset_kind(c.pick.value)
    return {
        "seq_len": c.seq.value if sequence else None,
        "batch": c.bat.value,
        "experts": c.n_exp.value if moe else None,
        "top_k": c.k.value if moe else None,
        "causal": c.cau.value if sequence else None,
        "recompute": c.rec.value,
    }


def _flops_refresh(c: _FlopsControls) -> None:
    """Redraw the chart and table (cleared when the options are invalid), then the headline that says why."""
    opts = _flops_inputs(c)
    try:
        table = flops_explorer_table(c.pick.value, **opts)
        png = figure_png(flops_explorer_figure(c.pick.value, **opts))
    except ValueError:
        show_outputs(c.out)  # the headline says why
    else:
        show_outputs(c.out, png, _explorer_display_table(table))
    c.headline.value = flops_explorer_html(c.pick.value, **opts)


def _flops_set_sequence(c: _FlopsControls, name: str, config: Any, sequence: bool, seq_value: int | None,
                        causal_value: bool | None) -> None:
    """Point the sequence-length slider, its note and causal halving at preset ``name`` (disabled without one)."""
    if sequence:
        start = explorer_seq_len(name)  # published, else the labelled choice
        c.seq.options = _explorer_seq_options(start, seq_value)
        c.seq.value = seq_value or start
        default_causal = bool(getattr(config, "causal", False))  # HSTU: on; transformers: off
        c.cau.value = default_causal if causal_value is None else bool(causal_value)
    c.seq_note.value = html.escape(flops_explorer_seq_note(name))
    c.seq.disabled = c.cau.disabled = not sequence


def _flops_set_experts(c: _FlopsControls, config: Any, moe: bool, experts_value: int | None,
                       k_value: int | None) -> None:
    """Set the experts and top-k sliders from an MoE preset (top-k at most the experts); disable them otherwise."""
    if moe:
        c.n_exp.value = experts_value or config.n_experts
        c.k.max = c.n_exp.value
        c.k.value = min(k_value or config.top_k, c.n_exp.value)
    c.n_exp.disabled = c.k.disabled = not moe


def _flops_box(c: _FlopsControls) -> Any:
    """Lay the explorer out: controls, headline, then the Output with the chart and table."""
    import ipywidgets as w

    box = w.VBox([w.HBox([c.pick, c.rec, c.cau]), w.HBox([c.seq, c.seq_note]), c.bat, w.HBox([c.n_exp, c.k]),
                  c.headline, c.out])
    box.add_class("flops-explorer")
    return box


# --------------------------------------------------------------------------------------------
# What-if explorers: the gap, stragglers, checkpoints and the GEM story. Each wraps a pure
# function of mfu_toolkit.scenarios.whatif; the headline is that result's ``.headline`` verbatim
# (a browser test can compare it), and the figure and table replace one Output's content.

__all__ += [
    "explorer_headline_html",
    "figure_png",
    "show_outputs",
    "render_explorer",
    "gap_explorer",
    "gap_figure",
    "gap_table",
    "straggler_explorer",
    "straggler_figure",
    "straggler_table",
    "checkpoint_explorer",
    "checkpoint_figure",
    "checkpoint_table",
    "gem_explorer",
    "gem_figure",
    "gem_table",
]

EXPLORER_FIGSIZE = (8.5, 4.0)  # inches; at plots.ROOM_STYLE's 110 dpi 935 × 440 px
STRAGGLER_RANK_OPTIONS = tuple(2**k for k in range(3, 15))  # 8 .. 16,384 ranks
CHECKPOINT_GPU_OPTIONS = tuple(2**k for k in range(6, 16))  # 64 .. 32,768 GPUs
GEM_GPU_OPTIONS = tuple(2**k for k in range(9, 15))  # 512 .. 16,384 GPUs
LEGEND_RIGHT = {"loc": "upper left", "bbox_to_anchor": (1.01, 1.0), "frameon": False, "fontsize": "small"}



def explorer_headline_html(text: str, *, error: bool = False) -> str:
    """The headline every explorer shows, in a ``.mfu-headline`` div (``.mfu-error`` on failure).

    ``text`` is the pure function's ``.headline``; it is only HTML-escaped, never reformatted."""
    cls = "mfu-headline mfu-error" if error else "mfu-headline"
    return f'<div class="{cls}" style="font-size:1.15em"><b>{html.escape(text)}</b></div>'


def explorer_figure(*, left: float = 0.09, right: float = 0.97, bottom: float = 0.14, top: float = 0.9):
    """A bare matplotlib Figure and its Axes, with fixed margins.

    Bare (never registered with pyplot), so redraws cannot pile up open figures; fixed margins
    rather than a layout engine or a tight bounding box, each of which adds a second drawing
    pass to every redraw."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=EXPLORER_FIGSIZE, dpi=room_dpi())
    fig.subplots_adjust(left=left, right=right, bottom=bottom, top=top)
    return fig, fig.add_subplot()


def figure_png(fig) -> bytes:
    """Render a figure to PNG bytes once, as the explorers display it.

    A bare figure (no pyplot window) is drawn on an Agg canvas that shares its renderer with
    the other bare figures of the same size drawn in this thread (see ``_shared_agg_canvas``).
    """
    import io

    from matplotlib.backend_bases import FigureCanvasBase

    buf = io.BytesIO()
    bare = fig.canvas
    if type(bare) is FigureCanvasBase:  # a bare Figure: no window or pyplot manager to keep
        _shared_agg_canvas(fig)
    try:
        fig.savefig(buf, format="png", dpi="figure", pil_kwargs={"compress_level": 1})
    finally:
        if fig.canvas is not bare:
            fig.set_canvas(bare)  # as savefig leaves it
    return buf.getvalue()


def show_outputs(out: Any, png: bytes | None = None, table: Any = None) -> None:
    """Replace what the ``ipywidgets.Output`` ``out`` shows with a PNG chart and a table.

    The new content is assigned to ``out.outputs`` in one state update, so the browser swaps
    the old chart for the new one without an empty frame between them. Nothing is printed into
    the Output while a cell runs (no ``with out:``): when Voila, papermill or nbconvert execute
    a notebook, nbclient answers each output captured that way with a message on the kernel's
    shell channel while it waits there for the cell's reply, and now and then it never sees
    that reply and the execution hangs (jupyter/nbclient#312)."""
    import base64

    items: list[dict[str, Any]] = []
    if png is not None:
        data = {"image/png": base64.b64encode(png).decode("ascii"), "text/plain": "<chart>"}
        items.append({"output_type": "display_data", "data": data, "metadata": {}})
    if table is not None:
        data = {"text/html": table._repr_html_(), "text/plain": table.to_string()}
        items.append({"output_type": "display_data", "data": data, "metadata": {}})
    out.outputs = tuple(items)


_SHARED_CANVAS: list[Any] = []  # the canvas class, made on first use (matplotlib stays unimported)


def _shared_agg_canvas(fig) -> Any:
    """Give ``fig`` an Agg canvas whose renderer is shared by every figure of the same pixel
    size and dpi drawn this way in this thread.

    Matplotlib caches text measurements per renderer, and a figure's first draw otherwise
    creates a new renderer, so every redraw of an explorer measured each label, tick and title
    again. With one renderer (cleared before each draw, as usual) the measurements of the text
    that repeats from one update to the next are reused: about an eighth of a redraw. At most
    four renderers are kept per thread; pixels and PNG bytes are the same as before.
    """
    if not _SHARED_CANVAS:
        import threading

        from matplotlib.backends.backend_agg import FigureCanvasAgg, RendererAgg

        local = threading.local()

        class SharedRendererCanvas(FigureCanvasAgg):
            def get_renderer(self):
                w, h = self.get_width_height(physical=True)
                key = (w, h, self.figure.dpi)
                renderers = local.__dict__.setdefault("renderers", {})
                if key not in renderers:
                    if len(renderers) >= 4:
                        del renderers[next(iter(renderers))]  # the oldest size
                    renderers[key] = RendererAgg(w, h, self.figure.dpi)
                return renderers[key]

        _SHARED_CANVAS.append(SharedRendererCanvas)
    return _SHARED_CANVAS[0](fig)


def _pct(v: float, digits: int = 1) -> str:
    return f"{v:.{digits}%}"


def style_axes(ax) -> None:
    import seaborn as sns

    ax.grid(alpha=0.3)
    ax.set_axisbelow(True)
    sns.despine(ax=ax)


@in_room_style
def gap_figure(result):  # -> matplotlib.figure.Figure
    """The gap explorer's chart: the waterfall of ``result.table`` (a ``GapResult``), drawn by
    ``plots.waterfall``."""
    from .plots import waterfall

    # fixed margins: rotated category labels below, both MFUs named in the right margin
    fig, ax = explorer_figure(left=0.085, right=0.8, bottom=0.3, top=0.92)
    waterfall(result.table, ax=ax)
    return fig


def gap_table(result):  # -> pandas.DataFrame of strings
    """The gap explorer's table: seconds, share of wall time and MFU after removing each loss."""
    import numpy as np
    import pandas as pd

    t = result.table
    cats = t["category"].to_numpy()
    seconds = t["seconds"].to_numpy(float)
    rows = np.flatnonzero((np.abs(seconds) > 1e-3 * result.wall_s) | (cats == "ideal_compute"))
    return pd.DataFrame(
        {
            "seconds": [f"{v:,.1f}" for v in seconds[rows]],
            "share": [_pct(v) for v in t["share"].to_numpy(float)[rows]],
            "mfu_after": [_pct(v, 2) for v in t["mfu_after"].to_numpy(float)[rows]],
        },
        index=pd.Index(cats[rows], name="category"),
    )


@in_room_style
def straggler_figure(result):  # -> matplotlib.figure.Figure
    """Expected synchronous step time vs job size, with and without the slow ranks; the chosen
    size marked. Drawn here (``plots.expected_step_time`` has no slow ranks) with matplotlib
    primitives in seaborn's style: ``sns.lineplot`` alone would take a quarter of the budget."""
    import seaborn as sns

    t = result.table
    fig, ax = explorer_figure(right=0.72)
    deep = sns.color_palette("deep")
    ax.plot(t["n_ranks"], t["expected_step_s"], marker="o", ms=4, color=deep[3], label="jitter + slow ranks")
    ax.plot(t["n_ranks"], t["jitter_only_step_s"], marker="x", ms=4, color=deep[0], label="jitter only")
    ax.axhline(result.base_step_s, color="0.3", lw=1.0, ls="--", label=f"one rank's mean {result.base_step_s:g} s")
    ax.scatter([result.ranks], [result.expected_step_s], s=90, color=deep[3], zorder=5, edgecolor="black",
               label=f"{result.ranks:,} ranks: {result.lost_share:.1%} lost")
    ax.set_xscale("log", base=2)
    ticks = [1, 8, 64, 512, 4096, 16384]
    ax.set_xticks(ticks, [f"{v:,}" for v in ticks])  # plain labels: log-axis mathtext is slow
    ax.minorticks_off()
    ax.set_xlabel("ranks in the synchronous job (log scale)")
    ax.set_ylabel("expected step time (s)")
    ax.set_title("A synchronous step waits for the slowest rank")
    ax.legend(**LEGEND_RIGHT)
    style_axes(ax)
    return fig


def straggler_table(result):  # -> pandas.DataFrame of strings
    """Expected step and lost share at a few job sizes (and the chosen one)."""
    import numpy as np
    import pandas as pd

    t = result.table
    n = t["n_ranks"].to_numpy()
    rows = np.flatnonzero(np.isin(n, [8, 64, 512, 4096, 16384, result.ranks]))
    return pd.DataFrame(
        {
            "expected_step": [f"{v:.3f} s" for v in t["expected_step_s"].to_numpy(float)[rows]],
            "lost_share": [_pct(v) for v in t["lost_share"].to_numpy(float)[rows]],
            "jitter_only": [_pct(v) for v in t["lost_share_jitter_only"].to_numpy(float)[rows]],
        },
        index=pd.Index([f"{v:,}" for v in n[rows].tolist()], name="ranks"),
    )


@in_room_style
def checkpoint_figure(result):  # -> matplotlib.figure.Figure
    """Expected overhead vs checkpoint interval with Young's and Daly's optima and the chosen
    interval (``plots.checkpoint_overhead_curve``); for an asynchronous checkpoint whose optimum
    is the write time, that optimum is marked too."""
    import seaborn as sns

    from .plots import checkpoint_overhead_curve

    fig, ax = explorer_figure(left=0.1, right=0.62, bottom=0.14, top=0.86)
    checkpoint_overhead_curve(checkpoint_s=result.blocking_s, mtbf_s=result.mtbf_s, restart_s=result.restart_s,
                              mode=result.mode, write_s=result.write_s if result.mode == "async" else None,
                              chosen_interval_s=result.interval_s, ax=ax)
    if result.mode == "async":
        lo, hi = ax.get_xlim()
        if result.write_s > lo:  # shorter intervals would start a snapshot mid-write
            ax.axvspan(lo, min(result.write_s, hi), color="0.5", alpha=0.15, lw=0,
                       label="shorter than the write time")
            ax.set_xlim(lo, hi)
    if result.optimum_s != result.daly_s:
        ax.plot([result.optimum_s], [result.optimum_overhead], marker="D", color=sns.color_palette("deep")[2],
                linestyle="none", markersize=8, zorder=7,
                label=f"optimum: write time ({result.optimum_overhead:.2%})")
    ax.legend(**LEGEND_RIGHT)
    return fig


def checkpoint_table(result):  # -> pandas.DataFrame of strings
    """Young, Daly, the optimum and the chosen interval with their overhead parts."""
    import pandas as pd

    from .scenarios.whatif import format_duration

    t = result.table
    markers = t["marker"].to_numpy()
    rows, seen = [], set()
    for i, m in enumerate(markers):  # each marker's first row, in table order
        if m != "" and m not in seen:
            seen.add(m)
            rows.append(i)
    cols = {"interval": [format_duration(v) for v in t["interval_s"].to_numpy(float)[rows]]}
    for part in ("checkpoint", "lost_work", "restart", "total"):
        cols[part] = [_pct(v, 2) for v in t[part].to_numpy(float)[rows]]
    return pd.DataFrame(cols, index=pd.Index(markers[rows], name="marker"))


@in_room_style
def gem_figure(result):  # -> matplotlib.figure.Figure
    """Paid GPU-hours of the baseline and scaled jobs, split into useful and idle parts."""
    import seaborn as sns

    t = result.table
    fig, ax = explorer_figure(left=0.1, right=0.6)
    gh = t["gpu_hours"].to_numpy(float) / 1e6
    useful = t["end_to_end_mfu"].to_numpy(float)
    in_steps = t["idle_in_steps_share"].to_numpy(float)
    parts = [("useful (model FLOPs)", useful), ("idle inside steady-state steps", in_steps),
             ("idle outside them (init, stalls,\ncheckpoints, failures, ...)", 1.0 - useful - in_steps)]
    deep = sns.color_palette("deep")
    left = [0.0] * len(t)
    for (label, share), color in zip(parts, (deep[2], deep[1], deep[3]), strict=True):
        width = share * gh
        ax.barh(list(t["job"]), width, left=left, color=color, label=label, height=0.6)
        left = [a + b for a, b in zip(left, width, strict=True)]
    for y, (total, days, idle) in enumerate(zip(gh, t["training_days"], t["idle_share"], strict=True)):
        ax.text(total, y, f" {total:,.2f} M GPU-h\n {days:,.1f} days, {idle:.0%} idle", va="center", fontsize="small")
    ax.set_xlim(0, float(gh.max()) * 1.4)
    ax.invert_yaxis()
    ax.set_xlabel("GPU-hours (millions)")
    ax.set_title(f"{result.flops_multiplier:g}× training FLOPs at {result.efficiency_multiplier:g}× end-to-end "
                 f"efficiency: {result.gpu_hours_ratio:.2f}× GPU-hours")
    ax.legend(**LEGEND_RIGHT)
    style_axes(ax)
    ax.grid(axis="y", visible=False)
    return fig


def gem_table(result):  # -> pandas.DataFrame of strings
    """Baseline and scaled job side by side: FLOPs, MFUs, days, GPU-hours, idle share."""
    import pandas as pd

    t = result.table.set_index("job")
    rows = {
        "training FLOPs": t["training_flops"].map("{:.3g}".format),
        "GPUs": t["gpus"].map("{:,}".format),
        "steady-state MFU": t["steady_state_mfu"].map(_pct),
        "end-to-end MFU": t["end_to_end_mfu"].map(_pct),
        "training days": t["training_days"].map("{:,.1f}".format),
        "GPU-hours": t["gpu_hours"].map("{:,.0f}".format),
        "idle share": t["idle_share"].map(_pct),
    }
    return pd.DataFrame(rows).T


def render_explorer(result: Any, figure: Any, table: Any) -> tuple[str, bytes, Any]:
    """What one explorer update shows: headline HTML, the figure as PNG bytes, the table.

    The widgets' callbacks are ``compute()`` followed by this; ``benchmarks/widget_latency.py``
    times the same path."""
    return explorer_headline_html(result.headline), figure_png(figure(result)), table(result)


def live_explorer(controls: list[Any], compute: Any, figure: Any, table: Any, css: str, layout: list[Any]) -> Any:
    """Wire ``controls`` to ``compute() -> result``; show ``result.headline`` and replace the
    figure and table in one Output (:func:`show_outputs`: no flicker, no pile-up)."""
    import ipywidgets as w

    headline = w.HTML()
    out = w.Output()

    def refresh(_: Any = None) -> None:
        try:
            result = compute()
        except ValueError as exc:
            show_outputs(out)
            headline.value = explorer_headline_html(f"No result: {exc}", error=True)
            return
        # Render first, then swap the Output's content in one update. The headline changes last,
        # so whoever sees the new headline (a reader, a browser test) sees the chart beside it.
        head, png, tab = render_explorer(result, figure, table)
        show_outputs(out, png, tab)
        headline.value = head

    for c in controls:
        c.observe(refresh, "value")
    refresh()
    box = w.VBox([*layout, headline, out])
    box.add_class(css)
    box.add_class("mfu-explorer")
    return box


def slider_style() -> dict[str, str]:
    return {"description_width": "initial"}


def gap_explorer(**defaults: Any) -> Any:
    """Simulator knobs → live waterfall and end-to-end MFU (``scenarios.whatif.gap_scenario``).

    Keyword arguments override :func:`~mfu_toolkit.scenarios.whatif.gap_scenario`'s defaults for
    the knobs that have sliders. The box has the CSS class ``gap-explorer``."""
    import inspect

    import ipywidgets as w

    from .scenarios.whatif import gap_scenario

    d = {k: p.default for k, p in inspect.signature(gap_scenario).parameters.items()}
    unknown = sorted(set(defaults) - set(d))
    if unknown:
        raise TypeError(f"gap_explorer got unknown parameters {unknown}; gap_scenario takes {sorted(d)}")
    d.update(defaults)
    st = slider_style()

    def fs(name: str, lo: float, hi: float, step: float, desc: str, fmt: str = ".2f") -> Any:
        return w.FloatSlider(value=d[name], min=lo, max=hi, step=step, description=desc, readout_format=fmt,
                             continuous_update=False, style=st)

    def is_(name: str, lo: int, hi: int, step: int, desc: str) -> Any:
        return w.IntSlider(value=d[name], min=lo, max=hi, step=step, description=desc,
                           continuous_update=False, style=st)

    ranks = w.SelectionSlider(options=sorted({4, 8, 16, 32, 64, d["ranks"]}), value=d["ranks"], description="ranks",
                              continuous_update=False, style=st)
    steps = is_("steps", 100, 600, 50, "steps")
    jitter = fs("jitter", 0.0, 0.3, 0.01, "jitter (σ)")
    strag = is_("stragglers", 0, 4, 1, "slow ranks")
    slow = fs("slowdown", 1.0, 2.0, 0.05, "slowdown ×")
    stall = fs("data_stall", 0.0, 0.2, 0.01, "input stall prob.")
    ev = is_("eval_every", 0, 300, 25, "eval every (steps)")
    ck = is_("checkpoint_every", 0, 300, 10, "checkpoint every (steps)")
    ck_s = fs("checkpoint_s", 0.0, 120.0, 5.0, "checkpoint write (s)", ".0f")
    asy = w.Checkbox(value=bool(d["async_checkpoint"]), description="async checkpoint")
    fail = w.Checkbox(value=d["mtbf_hours"] is not None, description="failures")
    mtbf = w.FloatLogSlider(value=d["mtbf_hours"] or 0.2, base=10, min=-1.5, max=1.0, step=0.05,
                            description="job MTBF (h)", readout_format=".2f", continuous_update=False, style=st)
    restart = fs("restart_s", 0.0, 600.0, 10.0, "restart (s)", ".0f")
    seed = w.IntSlider(value=d["seed"], min=0, max=9, description="seed", continuous_update=False, style=st)
    controls = [ranks, steps, jitter, strag, slow, stall, ev, ck, ck_s, asy, fail, mtbf, restart, seed]

    def compute() -> Any:
        mtbf.disabled = not fail.value
        return gap_scenario(
            ranks=ranks.value, steps=steps.value, jitter=jitter.value, stragglers=strag.value,
            slowdown=slow.value, data_stall=stall.value, eval_every=ev.value, checkpoint_every=ck.value,
            checkpoint_s=ck_s.value, async_checkpoint=asy.value, mtbf_hours=mtbf.value if fail.value else None,
            restart_s=restart.value, seed=seed.value,
            **{k: v for k, v in defaults.items() if k in ("step_s", "data_stall_s", "eval_s", "init_s", "target_mfu")},
        )

    layout = [
        w.HBox([w.VBox([ranks, steps, jitter, strag, slow, stall, seed]),
                w.VBox([ev, ck, ck_s, w.HBox([asy, fail]), mtbf, restart])]),
    ]
    return live_explorer(controls, compute, gap_figure, gap_table, "gap-explorer", layout)


def straggler_explorer(
    *, ranks: int = 1024, jitter_cv: float = 0.05, slow_ranks: int = 0, slowdown: float = 1.2
) -> Any:
    """Ranks (8 … 16,384, log-scaled), jitter, slow-rank count and slowdown → expected step time
    and lost share (``scenarios.whatif.straggler_scenario``). CSS class ``straggler-explorer``."""
    import ipywidgets as w

    from .scenarios.whatif import straggler_scenario

    st = slider_style()
    options = sorted(set(STRAGGLER_RANK_OPTIONS) | {ranks})
    n = w.SelectionSlider(options=[(f"{v:,}", v) for v in options], value=ranks, description="ranks",
                          continuous_update=False, style=st)
    cv = w.FloatSlider(value=jitter_cv, min=0.0, max=0.3, step=0.005, description="jitter (CV)",
                       readout_format=".3f", continuous_update=False, style=st)
    k = w.IntSlider(value=slow_ranks, min=0, max=16, description="slow ranks", continuous_update=False, style=st)
    s = w.FloatSlider(value=slowdown, min=1.0, max=2.0, step=0.01, description="slowdown ×",
                      readout_format=".2f", continuous_update=False, style=st)

    def compute() -> Any:
        return straggler_scenario(ranks=n.value, jitter_cv=cv.value, slow_ranks=k.value, slowdown=s.value)

    layout = [w.HBox([w.VBox([n, cv]), w.VBox([k, s])])]
    return live_explorer([n, cv, k, s], compute, straggler_figure, straggler_table, "straggler-explorer", layout)


@renamed(gpus="n_accelerators", failures_per_gpu_per_year="failures_per_accelerator_per_year")
def checkpoint_explorer(
    *,
    n_accelerators: int = 16384,
    failures_per_accelerator_per_year: float | None = None,
    checkpoint_s: float = 60.0,
    blocking: bool = True,
    restart_s: float = 600.0,
    interval_min: float | None = None,
) -> Any:
    """Job size, failure rate, checkpoint write time (blocking vs async), restart time and
    interval → the overhead curve with the optimum and the chosen point
    (``scenarios.whatif.checkpoint_scenario``; the failure rate defaults to Llama 3 405B's).
    The interval starts at the optimum. CSS class ``checkpoint-explorer``."""
    import ipywidgets as w

    from .scenarios.whatif import LLAMA3_FAILURES_PER_GPU_YEAR, checkpoint_scenario

    st = slider_style()
    rate0 = (LLAMA3_FAILURES_PER_GPU_YEAR if failures_per_accelerator_per_year is None
             else failures_per_accelerator_per_year)
    if interval_min is None:
        first = checkpoint_scenario(n_accelerators=n_accelerators, failures_per_accelerator_per_year=rate0,
                                    checkpoint_s=checkpoint_s, blocking=blocking, restart_s=restart_s)
        interval_min = round(first.optimum_s / 60.0, 1)
    g = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(CHECKPOINT_GPU_OPTIONS) | {n_accelerators})],
                          value=n_accelerators, description="GPUs", continuous_update=False, style=st)
    rate = w.FloatLogSlider(value=rate0, base=10, min=-2.0, max=0.5, step=0.01,
                            description="failures / GPU / year", readout_format=".3f",
                            continuous_update=False, style=st)
    write = w.FloatLogSlider(value=checkpoint_s, base=10, min=0.5, max=3.5, step=0.01,
                             description="checkpoint write (s)", readout_format=".0f",
                             continuous_update=False, style=st)
    mode = w.ToggleButtons(options=[("blocking", True), ("async", False)], value=blocking,
                           description="checkpoint", style=st)
    restart = w.FloatLogSlider(value=restart_s, base=10, min=1.0, max=4.0, step=0.01,
                               description="restart (s)", readout_format=".0f",
                               continuous_update=False, style=st)
    interval = w.FloatLogSlider(value=interval_min, base=10, min=0.0, max=3.5, step=0.01,
                                description="interval (min)", readout_format=".1f",
                                continuous_update=False, style=st)

    def compute() -> Any:
        return checkpoint_scenario(n_accelerators=g.value, failures_per_accelerator_per_year=rate.value,
                                   checkpoint_s=write.value, blocking=mode.value, restart_s=restart.value,
                                   interval_s=interval.value * 60.0)

    layout = [w.HBox([w.VBox([g, rate, restart]), w.VBox([write, interval])]), mode]
    return live_explorer([g, rate, write, mode, restart, interval], compute, checkpoint_figure, checkpoint_table,
                 "checkpoint-explorer", layout)


@renamed(gpus="n_accelerators")
def gem_explorer(
    *,
    base_flops: float = 1e24,
    flops_multiplier: float = 4.0,
    efficiency_multiplier: float = 2.0,
    n_accelerators: int = 4096,
    mfu: float = 0.225,
    base_end_to_end_efficiency: float = 0.10,
    accelerator: str = "H100 SXM",
    dtype: str = "bf16",
) -> Any:
    """Training FLOPs ×, end-to-end efficiency ×, GPUs and MFU → training days, GPU-hours and the
    idle share (``scenarios.whatif.gem_scenario``). CSS class ``gem-explorer``."""
    import ipywidgets as w

    from .scenarios.whatif import gem_scenario

    st = slider_style()
    fm = w.FloatSlider(value=flops_multiplier, min=1.0, max=10.0, step=0.5, description="training FLOPs ×",
                       readout_format=".1f", continuous_update=False, style=st)
    em = w.FloatSlider(value=efficiency_multiplier, min=1.0, max=4.0, step=0.1,
                       description="end-to-end efficiency ×", readout_format=".1f",
                       continuous_update=False, style=st)
    g = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(GEM_GPU_OPTIONS) | {n_accelerators})],
                          value=n_accelerators,
                          description="GPUs", continuous_update=False, style=st)
    ss = w.FloatSlider(value=mfu, min=0.05, max=0.6, step=0.005, description="steady-state MFU",
                       readout_format=".1%", continuous_update=False, style=st)
    e0 = w.FloatSlider(value=base_end_to_end_efficiency, min=0.01, max=0.6, step=0.005,
                       description="baseline end-to-end MFU", readout_format=".1%",
                       continuous_update=False, style=st)
    f0 = w.FloatLogSlider(value=base_flops, base=10, min=21, max=27, step=0.1, description="baseline FLOPs",
                          readout_format=".2g", continuous_update=False, style=st)

    def compute() -> Any:
        return gem_scenario(base_flops=f0.value, flops_multiplier=fm.value, efficiency_multiplier=em.value,
                            n_accelerators=g.value, mfu=ss.value, base_end_to_end_efficiency=e0.value,
                            accelerator=accelerator, dtype=dtype)

    layout = [w.HBox([w.VBox([fm, em, g]), w.VBox([ss, e0, f0])])]
    return live_explorer([fm, em, g, ss, e0, f0], compute, gem_figure, gem_table, "gem-explorer", layout)


# --------------------------------------------------------------------------------------------
# Roofline explorer: one transformer layer (or the DLRM) on one accelerator, op by op.

ROOFLINE_SEQ_LENS = tuple(2**k for k in range(8, 18))  # 256 .. 131,072 tokens
ROOFLINE_BATCHES = tuple(2**k for k in range(0, 7))  # 1 .. 64 sequences
ROOFLINE_HIDDEN = (1024, 2048, 4096, 5120, 8192, 12288, 16384)
# The dtype of the tensors, and the registry peak their matmuls run at (fp32 matmuls on tensor
# cores run as TF32).
ROOFLINE_DTYPES: dict[str, str] = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "fp32": "tf32"}


@dataclass(frozen=True)
class RooflineResult:
    accelerator: str
    dtype: str
    ops: tuple  # tuple[roofline.Op, ...]
    peak_flops: float
    bandwidth: float
    peak_source: str
    bandwidth_source: str
    ceiling: float
    headline: str


def roofline_scenario(*, accelerator: str = "H100 SXM", dtype: str = "bf16", seq_len: int = 4096, batch: int = 1,
                      hidden: int = 4096, model: str = "transformer") -> RooflineResult:
    """One layer's ops (``model="transformer"``) or the DLRM's (``"dlrm"``, ``batch`` samples) on
    ``accelerator``: peak from the registry for ``dtype`` (fp32 → the TF32 peak), bandwidth from
    the registry's datasheet table, and the MFU ceiling of the ops at their roofline.
    ``model="dlrm-step"``: a whole training step of the ``dlrm-dcnv2`` preset, its embedding lookups,
    sparse update and optimizer state beside the dense layers (``roofline.recsys_step_roofline``)."""
    from . import roofline as rl

    if dtype not in ROOFLINE_DTYPES:
        raise ValueError(f"dtype must be one of {', '.join(ROOFLINE_DTYPES)}; got {dtype!r}")
    if model not in ("transformer", "dlrm", "dlrm-step"):
        raise ValueError(f"model must be 'transformer', 'dlrm' or 'dlrm-step'; got {model!r}")
    try:
        peak = hardware.get_peak(accelerator, ROOFLINE_DTYPES[dtype])
        bw = hardware.get_memory_bandwidth(accelerator)
    except hardware.RegistryError as exc:
        raise ValueError(str(exc)) from None
    if model == "transformer":
        ops = rl.transformer_layer_ops(seq_len=seq_len, batch=batch, hidden=hidden, heads=max(1, hidden // 128),
                                       dtype=dtype)
    elif model == "dlrm":
        ops = rl.dlrm_ops(batch=batch, dtype=dtype)
    else:
        ops = rl.recsys_step_ops("dlrm-dcnv2", batch=batch, dtype=dtype)
    ceiling = rl.mfu_ceiling(ops, peak.flops, bw.bytes_per_s)
    ridge = rl.ridge_point(peak.flops, bw.bytes_per_s)
    times = [rl.op_time(o, peak.flops, bw.bytes_per_s) for o in ops]
    memory_share = sum(t for o, t in zip(ops, times, strict=True) if o.intensity < ridge) / sum(times)
    what = (f"one layer, {batch:,} × {seq_len:,} tokens, hidden {hidden:,}" if model == "transformer"
            else f"DLRM-DCNv2, {batch:,} samples" if model == "dlrm"
            else f"DLRM-DCNv2 training step with its embedding traffic, {batch:,} samples")
    headline = (f"MFU ceiling {ceiling:.1%} at the roofline ({what}, {dtype}) · ridge {ridge:,.0f} FLOP/B · "
                f"memory-bound ops {memory_share:.1%} of the time")
    return RooflineResult(peak.accelerator, dtype, tuple(ops), peak.flops, bw.bytes_per_s, peak.source, bw.source,
                          ceiling, headline)


def roofline_table(result: RooflineResult):  # -> pandas.DataFrame of strings
    """One row per op: FLOPs, bytes, intensity, what bounds it, its time and share at the roofline."""
    import pandas as pd

    from . import roofline as rl

    ridge = rl.ridge_point(result.peak_flops, result.bandwidth)
    times = [rl.op_time(o, result.peak_flops, result.bandwidth) for o in result.ops]
    total = sum(times)
    return pd.DataFrame({
        "op": [o.name for o in result.ops],
        "GFLOP": [f"{o.flops / 1e9:,.3f}" for o in result.ops],
        "MB moved": [f"{o.bytes / 1e6:,.2f}" for o in result.ops],
        "FLOP/B": [f"{o.intensity:,.1f}" for o in result.ops],
        "bound by": ["memory" if o.intensity < ridge else "compute" for o in result.ops],
        "time (µs)": [f"{t * 1e6:,.1f}" for t in times],
        "share of time": [f"{t / total:.1%}" for t in times],
    })


@in_room_style
def roofline_figure(result: RooflineResult):  # -> matplotlib.figure.Figure
    import pandas as pd

    from .plots import roofline

    fig, ax = explorer_figure(left=0.1, right=0.64, bottom=0.14, top=0.88)
    data = pd.DataFrame({"name": [o.name for o in result.ops], "kind": [o.kind for o in result.ops],
                         "intensity": [o.intensity for o in result.ops]})
    roofline(data, peak_flops=result.peak_flops, bandwidth=result.bandwidth, accelerator=result.accelerator, ax=ax)
    return fig


def roofline_explorer(*, accelerator: str = "H100 SXM", dtype: str = "bf16", seq_len: int = 4096, batch: int = 1,
                      hidden: int = 4096) -> Any:
    """Sequence length, batch, hidden size, dtype and accelerator → one transformer layer's ops
    on the roofline, the time each takes and the MFU ceiling (``roofline_scenario``). CSS class
    ``roofline-explorer``."""
    import ipywidgets as w

    st = slider_style()
    with_bw = [a.name for a in hardware.accelerators() if _has_bandwidth(a.name)]
    acc = w.Dropdown(options=with_bw, value=hardware.resolve(accelerator).name, description="accelerator", style=st)
    dt = w.Dropdown(options=list(ROOFLINE_DTYPES), value=dtype, description="dtype", style=st)
    seq = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(ROOFLINE_SEQ_LENS) | {seq_len})],
                            value=seq_len, description="sequence length", continuous_update=False, style=st)
    bat = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(ROOFLINE_BATCHES) | {batch})], value=batch,
                            description="batch", continuous_update=False, style=st)
    hid = w.SelectionSlider(options=[(f"{v:,}", v) for v in sorted(set(ROOFLINE_HIDDEN) | {hidden})], value=hidden,
                            description="hidden size", continuous_update=False, style=st)

    def compute() -> Any:
        return roofline_scenario(accelerator=acc.value, dtype=dt.value, seq_len=seq.value, batch=bat.value,
                                 hidden=hid.value)

    layout = [w.HBox([w.VBox([seq, bat, hid]), w.VBox([acc, dt])])]
    return live_explorer([seq, bat, hid, acc, dt], compute, roofline_figure, roofline_table, "roofline-explorer",
                         layout)


def _has_bandwidth(name: str) -> bool:
    try:
        hardware.get_memory_bandwidth(name)
    except hardware.RegistryError:
        return False
    return True


# --------------------------------------------------------------------------------------------
# Replay explorer: one worker or one stage of a replayed per-operation trace made slower.

REPLAY_TARGETS = ("worker", "stage")


@dataclass(frozen=True)
class ReplayScenario:
    job: str
    target: str  # "worker" or "stage"
    dp_rank: int | None
    stage: int
    factor: float
    slowdown: float  # S of the what-if, against the job's own ideal step
    base_slowdown: float  # S of the job as traced
    actual_step_s: float
    base_step_s: float
    ideal_step_s: float
    waterfall: Any  # pandas.DataFrame: component, seconds, share_of_step (slowed_replay's)
    base_waterfall: Any  # the same for the job as traced
    headline: str


def replay_scenario(result: Any, *, job: str = "job", target: str = "worker", dp_rank: int | None = None,
                    stage: int = 0, factor: float = 1.0) -> ReplayScenario:
    """The compute of one worker ``(dp_rank, stage)`` or of one ``stage`` of a replayed job
    (a :class:`~mfu_toolkit.analysis.WhatIfResult`) ``factor``× its traced time, replayed through
    the step's dependency graph by :func:`~mfu_toolkit.analysis.slowed_replay`: the new S against
    the same ideal step, and the waterfall beside the job as traced. ``factor`` 1 is the job as
    traced; below 1 the chosen ops run faster than they did."""
    from .scenarios.replay import slowed_replay

    if target not in REPLAY_TARGETS:
        raise ValueError(f"target must be one of {', '.join(REPLAY_TARGETS)}; got {target!r}")
    if not getattr(result, "available", False):
        raise ValueError("result must be a replayed trace (straggler_whatif(...).available); "
                         f"got {type(result).__name__} without a replay")
    if target == "worker":
        if dp_rank is None:
            raise ValueError("dp_rank must be given for target='worker'; got None")
        new = slowed_replay(result, worker=(int(dp_rank), int(stage)), factor=factor)
        what = f"worker dp_rank {int(dp_rank)}, stage {int(stage)}"
    else:
        new = slowed_replay(result, stage=int(stage), factor=factor)
        what = f"stage {int(stage)} (all its workers)"
    s, s0 = float(new["slowdown"]), float(result.slowdown)
    t, t0 = float(new["actual_step_s"]), float(result.actual_step_s)
    headline = (f"{job}: {what} at {factor:.2f}× its traced compute → replayed step {t:.4g} s vs ideal "
                f"{float(new['ideal_step_s']):.4g} s: S = {s:.3f} (as traced {s0:.3f}; step {t / t0 - 1:+.1%})")
    return ReplayScenario(job, target, None if target == "stage" else int(dp_rank), int(stage), float(factor),
                          s, s0, t, t0, float(new["ideal_step_s"]), new["waterfall"], result.waterfall(),
                          headline)


def replay_table(result: ReplayScenario):  # -> pandas.DataFrame of strings
    """The waterfall's parts in seconds per step: as traced, in the what-if, and the change."""
    import pandas as pd

    base = result.base_waterfall["seconds"].to_numpy(float)
    new = result.waterfall["seconds"].to_numpy(float)
    names = [*map(str, result.waterfall["component"]), "replayed step", "S (replayed / ideal)"]
    rows_b = [*base, base.sum(), result.base_slowdown]
    rows_n = [*new, new.sum(), result.slowdown]
    fmt = [*(["{:,.4g} s"] * (len(names) - 1)), "{:.3f}"]
    return pd.DataFrame(
        {"as traced": [f.format(v) for f, v in zip(fmt, rows_b, strict=True)],
         f"what-if ({result.factor:.2f}×)": [f.format(v) for f, v in zip(fmt, rows_n, strict=True)],
         "change": [("{:+,.4g} s" if i < len(names) - 1 else "{:+.3f}").format(n - b)
                    for i, (b, n) in enumerate(zip(rows_b, rows_n, strict=True))]},
        index=pd.Index(names, name="part"),
    )


@in_room_style
def replay_figure(result: ReplayScenario):  # -> matplotlib.figure.Figure
    """The what-if's waterfall (``plots.replay_waterfall``) beside the job as traced, hollow."""
    from .plots import replay_waterfall

    fig, ax = explorer_figure(left=0.09, right=0.97, bottom=0.22, top=0.9)
    replay_waterfall(result.waterfall, baseline=result.base_waterfall, label=f"what-if ({result.factor:.2f}×)",
                     ax=ax)
    ax.set_title(f"{result.job}: the step replayed, ideal → actual")
    return fig


def replay_explorer(results: Any, *, job: str | None = None, target: str = "worker", dp_rank: int | None = None,
                    stage: int | None = None, factor: float = 1.0) -> Any:
    """Job, worker or stage, and a slowdown factor (0.25 … 4×) → S and the waterfall of the
    replayed step (:func:`replay_scenario`). ``results`` maps a job name to its
    :class:`~mfu_toolkit.analysis.WhatIfResult`; the worker and stage start on the job's slowest
    worker unless given. CSS class ``replay-explorer``."""
    import ipywidgets as w

    jobs = {str(k): v for k, v in dict(results).items() if getattr(v, "available", False)}
    if not jobs:
        raise ValueError("results must map job names to replayed traces (straggler_whatif(...).available); "
                         "got none that replayed")
    job = next(iter(jobs)) if job is None else job
    if job not in jobs:
        raise ValueError(f"job must be one of {', '.join(jobs)}; got {job!r}")
    if target not in REPLAY_TARGETS:
        raise ValueError(f"target must be one of {', '.join(REPLAY_TARGETS)}; got {target!r}")
    st = slider_style()

    def options(name: str) -> tuple[list[int], list[int], tuple[int, int]]:
        wk = jobs[name].by_worker
        return (sorted({int(v) for v in wk["dp_rank"]}), sorted({int(v) for v in wk["stage"]}),
                tuple(jobs[name].slowest_workers[0]))

    dps, stages, slowest = options(job)
    fac = w.FloatLogSlider(value=factor, base=2, min=-2.0, max=2.0, step=0.05, description="compute time ×",
                           readout_format=".2f", continuous_update=False, style=st)
    jb = w.Dropdown(options=list(jobs), value=job, description="job", style=st)
    tg = w.ToggleButtons(options=list(REPLAY_TARGETS), value=target, description="slow down one", style=st)
    dp = w.Dropdown(options=dps, value=slowest[0] if dp_rank is None else dp_rank, description="dp_rank", style=st)
    sg = w.Dropdown(options=stages, value=slowest[1] if stage is None else stage, description="stage", style=st)
    headline, out = w.HTML(), w.Output()
    switching: list[bool] = []

    def refresh(_: Any = None) -> None:
        if switching:  # the job changed: its worker and stage lists are being replaced
            return
        dp.disabled = tg.value == "stage"
        try:
            result = replay_scenario(jobs[jb.value], job=jb.value, target=tg.value, dp_rank=dp.value,
                                     stage=sg.value, factor=fac.value)
        except ValueError as exc:
            show_outputs(out)
            headline.value = explorer_headline_html(f"No result: {exc}", error=True)
            return
        head, png, tab = render_explorer(result, replay_figure, replay_table)
        show_outputs(out, png, tab)  # as live_explorer does: chart and table in one update, headline last
        headline.value = head

    def on_job(_: Any = None) -> None:
        switching.append(True)
        try:
            d, s, (d0, s0) = options(jb.value)
            dp.options, sg.options = d, s
            dp.value, sg.value = d0, s0
        finally:
            switching.pop()
        refresh()

    jb.observe(on_job, "value")
    for c in (fac, tg, dp, sg):
        c.observe(refresh, "value")
    refresh()
    box = w.VBox([w.HBox([w.VBox([fac, tg]), w.VBox([jb, dp, sg])]), headline, out])
    box.add_class("replay-explorer")
    box.add_class("mfu-explorer")
    return box
