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
