"""A self-contained HTML report of one run: the same answer as ``mfu analyze``, with figures.

The figures come from :mod:`mfu_toolkit.plots`, drawn on ``matplotlib.figure.Figure`` objects
(no pyplot state, so any backend works, Agg included) and embedded as base64 PNG, so the file
can be mailed or attached to a ticket without its images. It lives outside
:mod:`mfu_toolkit.analysis` because the analyses must not depend on the plots.
"""

from __future__ import annotations

import base64
import datetime
import html
import io
from collections.abc import Callable
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from . import plots
from .analysis.accounting import Accounting, accounted
from .analysis.answer import Answer, build_answer
from .analysis.reasons import Reason
from .analysis.utilisation import gpu_util_mfu_table
from .analysis.waterfall import breakdown
from .render import answer_sections
from .render.vocabulary import check_interface, phrase
from .run import Run

__all__ = ["figure_to_base64", "report_figures", "html_report"]

_STYLE = (
    ".check-warn td:first-child{color:#b00;font-weight:bold}.check-ok td:first-child{color:#070}"
    "body{font-family:system-ui,sans-serif;max-width:1000px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;font-size:13px;margin:0.5em 0 1.5em}"
    "td,th{padding:3px 10px;border-bottom:1px solid #ddd;text-align:left}"
    "td.num{text-align:right;font-variant-numeric:tabular-nums}"
    "figure{margin:1.5em 0}img{max-width:100%}figcaption{color:#555;font-size:13px}"
    ".note{color:#777;font-size:13px}"
)


def figure_to_base64(fig: Figure, *, dpi: int = 96) -> str:
    """PNG bytes of a figure, base64-encoded for ``<img src="data:image/png;base64,...">``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _draw(draw: Callable[[Axes], Axes], size: tuple[float, float]) -> Figure:
    fig = Figure(figsize=size)
    draw(fig.add_subplot())
    fig.tight_layout()
    return fig


def report_figures(run: Run | Accounting, *, interface: str = "python") -> tuple[list[tuple[str, Figure]], list[str]]:
    """The report's figures as ``(caption, Figure)`` pairs, and notes on the ones left out.

    Always: waterfall, timeline, step times. When the run has several ranks: the per-rank
    heatmap. When it carries GPU utilisation and its MFU is known: utilisation vs MFU. The
    notes ask for what is missing in the terms of ``interface`` ("python", "cli", "make").
    """
    acc = accounted(run)
    r = acc.run
    bd = breakdown(acc)
    figs: list[tuple[str, Figure]] = []
    notes: list[str] = []
    n_tl = r.n_attempts
    wanted: list[tuple[str, Callable[[Axes], Axes], tuple[float, float]]] = [
        ("Waterfall: from steady-state to end-to-end MFU, one bar per category",
         lambda ax: plots.waterfall(bd, ax=ax), (9.0, 4.6)),
        ("Timeline: attempts, steps, evaluations, checkpoints, failures",
         lambda ax: plots.timeline(acc, ax=ax), (10.0, 3.0 + 0.1 * min(n_tl, 10))),
        ("Step time, steady-state window shaded", lambda ax: plots.step_times(acc, ax=ax), (10.0, 3.8)),
    ]
    if sum(1 for k in r.ranks if k >= 0) > 1:  # the rows' ranks, or those a dataset's reductions saw
        wanted.append(("Per-rank time relative to the step median (red: slower)",
                       lambda ax: plots.rank_heatmap(r, ax=ax), (10.0, 4.8)))
    else:
        notes.append("Per-rank heatmap left out: the run has no per-rank steps.")
    no_mfu = Reason.join(acc.flops_reason, acc.peak_reason)
    try:
        if no_mfu:  # said in the interface's terms, not the table's Python ones
            raise ValueError(f"run has no MFU to compare with: {phrase(no_mfu, interface)}")
        util = gpu_util_mfu_table(acc)
    except ValueError as exc:
        notes.append(f"GPU utilisation vs MFU left out: {exc}")
    else:
        wanted.append(("GPU utilisation (what monitoring shows) vs MFU over time",
                       lambda ax: plots.mfu_vs_gpu_util(util, ax=ax), (10.0, 3.8)))
    for caption, draw, size in wanted:
        try:
            figs.append((caption, _draw(draw, size)))
        except ValueError as exc:  # a figure the data cannot support: say so, keep the report
            notes.append(f"{caption.split(':')[0]} left out: {exc}")
    return figs, notes


def _img(caption: str, fig: Figure) -> str:
    return (f"<figure><img alt='{html.escape(caption, quote=True)}' "
            f"src='data:image/png;base64,{figure_to_base64(fig)}'>"
            f"<figcaption>{html.escape(caption)}</figcaption></figure>")


def html_report(run: Run | Accounting, *, path: str | Path | None = None, title: str | None = None,
                answer: Answer | None = None, interface: str = "python",
                report_date: str | datetime.date | None = None) -> str:
    """The HTML report as a string (also written to ``path`` when given).

    It renders the same :class:`~mfu_toolkit.analysis.answer.Answer` as ``mfu analyze`` (built
    here unless ``answer`` is given), section by section in its reading order: the answer first
    (both MFUs with numerator and denominator), the largest losses, stragglers, checkpoint
    advice, checks, facts used; then the waterfall with its figure, the scorecard, the other
    figures and the steady-state window. A run without timed steps gets the answer's account of
    what the log holds and no figures. An undated log's title carries ``report_date`` (default:
    today). Missing facts are asked for in ``interface``'s terms ("python", "cli" or "make").
    """
    if not isinstance(run, (Run, Accounting)):
        raise TypeError(f"run must be a Run or an Accounting; got {type(run).__name__}")
    acc = accounted(run)
    if answer is None:
        day = datetime.date.today() if report_date is None else report_date
        answer = build_answer(acc, title=title, report_date=day)
    elif not isinstance(answer, Answer):
        raise TypeError(f"answer must be an Answer (analysis.build_answer) or None; got {type(answer).__name__}")
    check_interface(interface)
    name = title or answer.title
    figs: list[tuple[str, Figure]] = []
    notes: list[str] = []
    if answer.timed:
        figs, notes = report_figures(acc, interface=interface)
    first = figs[:1] if figs and figs[0][0].startswith("Waterfall") else []
    rest = figs[len(first):]
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(name)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>{html.escape(name)}</h1>",
        *([f"<p class='conflict'><strong>{html.escape(answer.conflict['text'])}</strong></p>"]
          if answer.conflict else []),
    ]
    for heading, fragment in answer_sections(answer, interface=interface):
        if heading == "Steady-state window" and (rest or notes):
            parts.append("<h2>Figures</h2>")
            parts += [_img(c, f) for c, f in rest]
            parts += [f"<p class='note'>{html.escape(n)}</p>" for n in notes]
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        if heading == "Waterfall":
            parts += [_img(c, f) for c, f in first]
        parts.append(fragment)
    parts.append("</body></html>")
    text = "\n".join(parts)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
