"""A self-contained HTML report: scorecard, waterfall and step times, figures as base64 PNG.

The figure functions here are small and local (``matplotlib.figure.Figure``, no pyplot state,
so they work under any backend, Agg included); each takes the analysis output and returns a
Figure.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from ..run import Run
from .breakdown import Accounting, account, breakdown, mfu_summary
from .scorecard import scorecard

__all__ = ["waterfall_figure", "step_time_figure", "rank_score_figure", "figure_to_base64", "html_report"]


def waterfall_figure(table: pd.DataFrame) -> Figure:
    """Horizontal bars: seconds per category of a :func:`breakdown` table, largest first."""
    import seaborn as sns

    t = table[table["seconds"].abs() > 0].copy()
    fig = Figure(figsize=(7, 0.45 * max(len(t), 2) + 1.2))
    ax = fig.add_subplot()
    if len(t):
        t["label"] = [f"{s:.1%}" for s in t["share"]]
        sns.barplot(data=t, y="category", x="seconds", hue="category", dodge=False, legend=False,
                    palette="crest", ax=ax)
        for i, (sec, lab) in enumerate(zip(t["seconds"], t["label"], strict=True)):
            ax.text(sec, i, f" {lab}", va="center", fontsize=8)
    ax.set_xlabel("seconds of wall time")
    ax.set_ylabel("")
    ax.set_title("Where the wall time went")
    fig.tight_layout()
    return fig


def step_time_figure(acc: Accounting) -> Figure:
    """Job-level step time over the run, steady-state window highlighted, lost steps marked."""
    import seaborn as sns

    s = acc.steps.copy()
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    if len(s):
        s["status"] = np.where(s["lost"], "lost", np.where(s["in_window"], "steady window", "outside window"))
        sns.scatterplot(data=s, x="start_s", y="span_s", hue="status", s=10, linewidth=0, ax=ax)
        if acc.ideal_step_s:
            ax.axhline(acc.ideal_step_s, color="k", lw=0.8, ls="--", label="ideal step")
    ax.set_xlabel("time since first event (s)")
    ax.set_ylabel("step time (s)")
    ax.set_title("Step time")
    fig.tight_layout()
    return fig


def rank_score_figure(scores: pd.DataFrame, *, top: int = 20) -> Figure:
    """Bars of the ``top`` worst ranks' scores (from :func:`stragglers.rank_scores`)."""
    import seaborn as sns

    t = scores.head(top).copy()
    t["rank"] = t["rank"].astype(str)
    fig = Figure(figsize=(7, 3.2))
    ax = fig.add_subplot()
    sns.barplot(data=t, x="rank", y="score", hue="kind", dodge=False, ax=ax)
    ax.set_ylabel("slower than fastest rank")
    ax.set_title(f"Worst {len(t)} ranks")
    fig.tight_layout()
    return fig


def figure_to_base64(fig: Figure) -> str:
    """PNG bytes of a figure, base64-encoded for an ``<img src="data:image/png;base64,...">``."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def html_report(run: Run | Accounting, *, path: str | Path | None = None, title: str | None = None) -> str:
    """The HTML report as a string (also written to ``path`` when given)."""
    acc = run if isinstance(run, Accounting) else account(run)
    r = acc.run
    bd = breakdown(acc)
    sc = scorecard(acc)
    summ = mfu_summary(acc)
    figs = [("Waterfall", waterfall_figure(bd)), ("Step time", step_time_figure(acc))]
    if (r.steps["rank"] >= 0).any() and r.steps["rank"].nunique() > 1:
        from .stragglers import rank_scores

        figs.append(("Ranks", rank_score_figure(rank_scores(r))))
    name = title or f"MFU report: {r.meta.name or r.meta.source_path or 'run'}"
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>{html.escape(name)}</title>",
        "<style>body{font-family:sans-serif;max-width:980px;margin:2em auto}"
        "table{border-collapse:collapse;font-size:13px}td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>",
        "</head><body>",
        f"<h1>{html.escape(name)}</h1>",
        "<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in summ.lines()) + "</ul>",
        "<h2>Waterfall</h2>",
        bd.to_html(index=False, float_format=lambda v: f"{v:.6g}"),
        "<h2>Scorecard</h2>",
        sc.to_html(index=False, float_format=lambda v: f"{v:.6g}"),
        "<h2>Figures</h2>",
    ]
    for cap, fig in figs:
        parts.append(f"<figure><img alt='{html.escape(cap)}' src='data:image/png;base64,{figure_to_base64(fig)}'>"
                     f"<figcaption>{html.escape(cap)}</figcaption></figure>")
    parts.append(f"<p><small>Window: {html.escape(acc.window.reason)}. {html.escape(acc.window.rule)}</small></p>")
    parts.append("</body></html>")
    text = "\n".join(parts)
    if path is not None:
        Path(path).write_text(text, encoding="utf-8")
    return text
