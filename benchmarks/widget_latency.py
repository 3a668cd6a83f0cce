"""Callback latency of the what-if explorers at their default sizes, against a baseline.

One explorer update is what the widget's callback runs: the pure function
(``mfu_toolkit.scenarios.whatif``), ``widgets.render_explorer`` (headline HTML, the figure rendered
to PNG once, the small table), then ``widgets.show_outputs`` (the PNG base64-encoded and the table
as HTML, assigned to an ``ipywidgets.Output``) and the headline assigned to an ``HTML`` widget. \
The baseline, measured in the
same run and interleaved with the explorers so that both see the same machine load, renders an
empty seaborn-styled figure of the same size to PNG the same way: the least any update with a
figure must spend. Target: at most 100 ms per update (issue 6). Not a timed test.

    .venv/bin/python benchmarks/widget_latency.py [--calls 20]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable

os.environ.setdefault("MPLBACKEND", "Agg")

TARGET_MS = 100.0


def _cases() -> dict[str, Callable[[], object]]:
    import ipywidgets
    import seaborn as sns

    from mfu_toolkit import widgets as w
    from mfu_toolkit.scenarios.whatif import (
        checkpoint_scenario,
        gap_scenario,
        gem_scenario,
        straggler_scenario,
    )

    def baseline() -> object:
        fig, ax = w._figure()
        sns.despine(ax=ax)
        return w.figure_png(fig)

    def update(scenario: Callable[[], object], figure: Callable, table: Callable) -> Callable[[], object]:
        out, headline = ipywidgets.Output(), ipywidgets.HTML()

        def call() -> object:
            head, png, tab = w.render_explorer(scenario(), figure, table)
            w.show_outputs(out, png, tab)
            headline.value = head
            return out.outputs

        return call

    return {
        "baseline (empty figure)": baseline,
        "gap_explorer": update(gap_scenario, w.gap_figure, w.gap_table),
        "straggler_explorer": update(straggler_scenario, w.straggler_figure, w.straggler_table),
        "checkpoint_explorer": update(checkpoint_scenario, w.checkpoint_figure, w.checkpoint_table),
        "gem_explorer": update(gem_scenario, w.gem_figure, w.gem_table),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20, help="timed calls per explorer (default 20)")
    args = parser.parse_args(argv)
    cases = _cases()
    for call in cases.values():  # warm-up: imports, font cache, first-call set-up
        call()
        call()
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.calls):
        for name, call in cases.items():  # interleaved: every case sees the same load
            t = time.perf_counter()
            call()
            times[name].append((time.perf_counter() - t) * 1000.0)
    base = statistics.median(times["baseline (empty figure)"])
    print(f"median over {args.calls} calls; baseline = empty {'×'.join(map(str, _figsize()))} in figure "
          f"rendered to PNG; target <= {TARGET_MS:.0f} ms")
    print(f"{'case':<26}{'median ms':>10}{'min ms':>9}{'× baseline':>12}  target")
    for name, ts in times.items():
        med = statistics.median(ts)
        verdict = "" if name.startswith("baseline") else ("ok" if med <= TARGET_MS else "OVER")
        print(f"{name:<26}{med:>10.1f}{min(ts):>9.1f}{med / base:>12.2f}  {verdict}")
    return 0


def _figsize() -> tuple[float, float]:
    from mfu_toolkit.widgets import EXPLORER_FIGSIZE

    return EXPLORER_FIGSIZE


if __name__ == "__main__":
    raise SystemExit(main())
