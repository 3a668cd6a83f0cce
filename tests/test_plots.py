"""plots and report: the artists carry the analyses' numbers; options fail with their names."""

from __future__ import annotations

import ast
import importlib.util
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402

from mfu_toolkit import plots  # noqa: E402
from mfu_toolkit.analysis import (  # noqa: E402
    breakdown,
    checkpoint_overhead,
    daly_interval,
    job_steps,
    mfu_summary,
    scaling_table,
    steady_state_window,
    step_spread,
    sync_step_time,
    young_interval,
)
from mfu_toolkit.report import html_report  # noqa: E402
from mfu_toolkit.simulate import SimConfig, simulate  # noqa: E402

CFG = SimConfig(
    n_ranks=16, n_steps=120, jitter=0.05, slow_ranks=(3,), slow_factor=1.15, checkpoint_every=30,
    checkpoint_s=5, eval_every=50, eval_s=8, init_s=20, fail_at_steps=(70,), restart_s=30,
    checkpoint_load_s=6, warmup_steps=5, warmup_factor=2, seed=1,
)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def run():
    return simulate(CFG)


@pytest.fixture(scope="module")
def table(run):
    return breakdown(run)


def _no_flops(r):
    return r.with_meta(model_flops_per_step=None, model_flops_per_sample=None, model_flops_per_token=None)


def _with_util(r, pct=90.0):
    t = np.arange(0.0, r.t1, 5.0)
    g = pd.DataFrame({"time_s": np.r_[t, t], "gpu": np.repeat([0, 1], len(t)), "util_pct": pct})
    return r.replace(tables={"gpu_util": g})


# ------------------------------------------------------------------------------------ waterfall


def test_waterfall_bars_follow_the_table(table):
    ax = plots.waterfall(table)
    steady, e2e = table.attrs["steady_state_mfu"], table.attrs["end_to_end_mfu"]
    losses = table.iloc[1:][table["seconds"].iloc[1:] != 0]
    bars = ax.patches
    assert len(bars) == len(losses) + 1  # one per non-zero category, ideal compute last
    np.testing.assert_allclose([b.get_height() for b in bars[:-1]], steady * losses["share"], rtol=1e-12)
    assert bars[0].get_y() + bars[0].get_height() == pytest.approx(steady)  # the walk starts at S
    assert bars[-2].get_y() == pytest.approx(e2e)  # ... and the losses end at end-to-end MFU
    assert bars[-1].get_height() == pytest.approx(e2e)
    assert bars[-1].get_height() == pytest.approx(table["mfu_after"].iloc[0])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0] == "init" and labels[-1] == "ideal compute"
    assert "MFU" in ax.get_ylabel() and ax.get_title()
    texts = " ".join(t.get_text() for t in ax.texts)
    assert f"steady-state MFU\n{steady:.1%}" in texts and f"end-to-end MFU\n{e2e:.1%}" in texts
    assert f"{losses['share'].iloc[0]:.1%}" in texts  # the largest loss's share, as its bar label
    assert len(plots.waterfall(table, show_zero=True).patches) == len(table)


def test_waterfall_without_flops_falls_back_to_efficiency(run):
    t = breakdown(_no_flops(run))
    assert t["mfu_after"].isna().all()
    ax = plots.waterfall(t)
    assert "efficiency" in ax.get_ylabel() and "MFU unknown" in ax.get_ylabel()
    assert ax.patches[0].get_height() == pytest.approx(t["share"].iloc[1])
    assert ax.patches[-1].get_height() == pytest.approx(t["share"].iloc[0])
    with pytest.raises(ValueError, match="metric='mfu'"):
        plots.waterfall(t, metric="mfu")


def test_waterfall_rejects_bad_input(table, run):
    with pytest.raises(ValueError, match=r"metric must be one of 'auto', 'mfu', 'efficiency'; got 'bogus'"):
        plots.waterfall(table, metric="bogus")
    with pytest.raises(ValueError, match=r"table must have columns .*missing \['mfu_after'\]"):
        plots.waterfall(table.drop(columns="mfu_after"))
    with pytest.raises(ValueError, match="first row is 'ideal_compute'"):
        plots.waterfall(table.iloc[::-1])
    with pytest.raises(TypeError, match="table must be a DataFrame"):
        plots.waterfall([1, 2])
    assert len(plots.waterfall(run).patches) == len(plots.waterfall(table).patches)


# ------------------------------------------------------------------------------------- timeline


def _collection(ax, gid):
    found = [c for c in ax.collections if c.get_gid() == gid]
    assert len(found) == 1, gid
    return found[0]


def test_timeline_lanes_and_collapsed_steps(run):
    ax = plots.timeline(run, time_unit="s")
    lanes = [t.get_text() for t in ax.get_yticklabels()]
    assert lanes == ["attempts", "init", "checkpoint load", "training steps", "steps redone later", "eval",
                     "checkpoint save", "failure / downtime"]
    # 240 rank-steps → spans broken only by checkpoints and evals: 3 per attempt; 1 redone span
    steps = _collection(ax, "steps").get_paths()
    assert len(steps) == 6
    assert len(_collection(ax, "lost_steps").get_paths()) == 1
    assert len(_collection(ax, "attempts").get_paths()) == 2
    assert len(_collection(ax, "eval").get_paths()) == 2
    first = steps[0].vertices[:, 0]
    js = job_steps(run)
    assert first.min() == pytest.approx(js["start_s"].min() - run.t0)  # after init
    assert "time" in ax.get_xlabel() and "(s)" in ax.get_xlabel() and "2 attempts" in ax.get_title()
    with pytest.raises(ValueError, match="time_unit must be one of 'auto', 's', 'min', 'h', 'd'; got 'weeks'"):
        plots.timeline(run, time_unit="weeks")
    with pytest.raises(TypeError, match="run must be a Run"):
        plots.timeline(js)


# ----------------------------------------------------------------------------------- step times


def _window_spans(ax):
    return sorted((p.get_x(), p.get_x() + p.get_width()) for p in ax.patches if p.get_gid() == "steady_window")


def test_step_times_shades_the_window(run):
    ax = plots.step_times(run, time_unit="s")
    w = steady_state_window(run).steps
    expected = [(g["start_s"].min() - run.t0, g["end_s"].max() - run.t0)
                for _a, g in w[w["in_window"]].groupby("attempt")]
    np.testing.assert_allclose(_window_spans(ax), expected)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert {"steady-state window", "in window", "warm-up", "redone after a restart"} <= set(legend)
    assert any(s.startswith("window median") for s in legend)
    assert ax.get_ylabel() == "step time (s)"
    # a (first, last) override shades exactly that range
    ax2 = plots.step_times(run, window=(40, 60), time_unit="s")
    js = job_steps(run)
    sel = js[(js["attempt"] == 0) & js["step"].between(40, 60)]
    np.testing.assert_allclose(_window_spans(ax2), [(sel["start_s"].min(), sel["end_s"].max())])
    with pytest.raises(ValueError, match="window must be a SteadyWindow"):
        plots.step_times(run, window="last half")
    with pytest.raises(ValueError, match="first_step <= last_step"):
        plots.step_times(run, window=(60, 40))


# ---------------------------------------------------------------------------------- rank heatmap


def test_rank_heatmap_shape_values_and_downsampling(run):
    ax = plots.rank_heatmap(run)
    full = np.ma.filled(ax.images[0].get_array(), np.nan)
    assert full.shape == (16, 120)  # ranks × useful steps
    row_means = np.nanmean(full, axis=1)
    assert int(np.argmax(row_means)) == 3 and row_means[3] > 0.1  # the injected 15 % straggler
    assert len(ax.figure.axes) == 2  # the colour bar
    small = np.ma.filled(plots.rank_heatmap(run, max_ranks=5, max_steps=60).images[0].get_array(), np.nan)
    assert small.shape == (5, 60)
    blocks = [full[a:b, :2] for a, b in zip([0, 3, 6, 9, 12], [3, 6, 9, 12, 16], strict=True)]
    np.testing.assert_allclose(small[:, 0], [blk.mean() for blk in blocks])
    big = np.ma.filled(plots.rank_heatmap(run, max_steps=7, agg="max").images[0].get_array(), np.nan)
    assert big.shape == (16, 7) and big[0, 0] == pytest.approx(np.nanmax(full[0, :17]))
    assert "binned" not in plots.rank_heatmap(run).get_xlabel()
    assert "per column" in plots.rank_heatmap(run, max_steps=7).get_xlabel()
    with pytest.raises(ValueError, match="max_ranks must be an integer >= 1; got 0"):
        plots.rank_heatmap(run, max_ranks=0)
    with pytest.raises(ValueError, match="agg must be one of 'mean', 'max'; got 'median'"):
        plots.rank_heatmap(run, agg="median")
    with pytest.raises(ValueError, match="per-rank"):
        plots.rank_heatmap(simulate(CFG.replace(per_rank=False, fail_at_steps=())))


# ------------------------------------------------------------------------------- spread, theory


def test_spread_distribution_counts_steps_and_marks_quantiles(run):
    sp = step_spread(run)
    ax = plots.spread_distribution(run)
    assert sum(p.get_height() for p in ax.patches) == len(sp)
    marks = [ln.get_xdata()[0] for ln in ax.lines]
    np.testing.assert_allclose(marks, np.percentile(sp["spread_s"], [50, 99]))
    assert ax.get_ylabel() == "steps" and "(s)" in ax.get_xlabel()
    rel = plots.spread_distribution(sp, relative=True)
    assert rel.lines[0].get_xdata()[0] == pytest.approx(np.median(sp["rel_spread"]))
    with pytest.raises(ValueError, match=r"run_or_table must have columns \['spread_s'\]"):
        plots.spread_distribution(sp.drop(columns="spread_s"))
    with pytest.raises(ValueError, match="bins must be"):
        plots.spread_distribution(sp, bins=0)


def test_expected_step_time_is_the_order_statistic():
    ax = plots.expected_step_time(n_ranks=1024, mean=1.0, std=0.1)
    line = ax.lines[0]
    ref = sync_step_time([2**k for k in range(11)], mean=1.0, std=0.1)
    np.testing.assert_allclose(line.get_xdata(), ref["n_ranks"])
    np.testing.assert_allclose(line.get_ydata(), ref["expected_step_s"])
    assert ax.get_xscale() == "log" and "ranks" in ax.get_xlabel()
    assert ax.lines[1].get_ydata()[0] == pytest.approx(1.0)  # one rank's mean
    lognormal = plots.expected_step_time(n_ranks=[8, 100], mean=2.0, std=0.2, dist="lognormal")
    np.testing.assert_allclose(lognormal.lines[0].get_xdata(), [8, 100])
    with pytest.raises(ValueError, match="dist must be one of 'normal', 'lognormal', 'exponential'; got 'cauchy'"):
        plots.expected_step_time(n_ranks=8, mean=1.0, std=0.1, dist="cauchy")
    with pytest.raises(ValueError, match="n_ranks must be an integer >= 1"):
        plots.expected_step_time(n_ranks=0, mean=1.0, std=0.1)
    with pytest.raises(ValueError, match="std must be a finite number >= 0"):
        plots.expected_step_time(n_ranks=8, mean=1.0, std=-1)


def test_checkpoint_curve_marks_young_daly_and_the_chosen_point():
    kw = {"checkpoint_s": 60.0, "mtbf_s": 3 * 3600.0, "restart_s": 600.0}
    ax = plots.checkpoint_overhead_curve(**kw, chosen_interval_s=3600.0)
    by_gid = {ln.get_gid(): ln for ln in ax.lines if ln.get_gid()}
    assert by_gid["young"].get_xdata()[0] == pytest.approx(young_interval(checkpoint_s=60.0, mtbf_s=10800.0))
    assert by_gid["daly"].get_xdata()[0] == pytest.approx(daly_interval(checkpoint_s=60.0, mtbf_s=10800.0))
    chosen = by_gid["chosen"]
    assert chosen.get_xdata()[0] == 3600.0
    assert chosen.get_ydata()[0] == pytest.approx(checkpoint_overhead(interval_s=3600.0, **kw)["total"])
    total = ax.lines[0]
    i = int(np.argmin(total.get_ydata()))
    assert total.get_xdata()[i] == pytest.approx(daly_interval(checkpoint_s=60.0, mtbf_s=10800.0), rel=0.05)
    assert ax.get_xscale() == "log" and "overhead" in ax.get_ylabel()
    async_ax = plots.checkpoint_overhead_curve(**kw, mode="async", write_s=120.0)
    assert "async" in async_ax.get_title()
    with pytest.raises(ValueError, match="mode must be one of 'blocking', 'async'; got 'lazy'"):
        plots.checkpoint_overhead_curve(**kw, mode="lazy")
    with pytest.raises(ValueError, match="checkpoint_s must be a finite number > 0"):
        plots.checkpoint_overhead_curve(checkpoint_s=-1, mtbf_s=100.0)
    with pytest.raises(ValueError, match="chosen_interval_s must be"):
        plots.checkpoint_overhead_curve(**kw, chosen_interval_s=0)


def test_scaling_efficiency_plots_the_table():
    raw = pd.DataFrame({"n_accelerators": [8, 16, 32, 64], "throughput": [100.0, 190.0, 360.0, 640.0]})
    ref = scaling_table(raw)
    ax = plots.scaling_efficiency(raw)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), ref["scaling_efficiency"])
    np.testing.assert_allclose(ax.lines[0].get_xdata(), ref["n_accelerators"])
    assert ax.lines[1].get_ydata()[0] == 1.0 and "efficiency" in ax.get_ylabel()
    tp = plots.scaling_efficiency(ref, kind="throughput")
    np.testing.assert_allclose(tp.lines[1].get_ydata(), ref["ideal_throughput"])
    assert tp.get_yscale() == "log"
    with pytest.raises(ValueError, match="kind must be one of 'efficiency', 'throughput'; got 'speed'"):
        plots.scaling_efficiency(raw, kind="speed")
    with pytest.raises(ValueError, match=r"table must have columns \['gpus', 'throughput'\]"):
        plots.scaling_efficiency(raw, n="gpus")


# ---------------------------------------------------------------------------- GPU util vs MFU


def test_gpu_util_table_mean_mfu_is_end_to_end(run):
    r = _with_util(run)
    t = plots.gpu_util_mfu_table(r)
    e2e = mfu_summary(r).end_to_end_mfu
    assert np.sum(t["mfu"] * t["bin_s"]) / np.sum(t["bin_s"]) == pytest.approx(e2e, rel=1e-9)
    assert t["bin_s"].sum() == pytest.approx(r.wall_seconds)
    assert np.nanmax(np.abs(t["gpu_util"] - 0.9)) < 1e-12 and t.attrs["source"] == "gpu_util"
    ax = plots.mfu_vs_gpu_util(r)
    labels = [x.get_text() for x in ax.get_legend().get_texts()]
    assert any(s.startswith("GPU utilisation (nvidia-smi), mean 90%") for s in labels)
    assert any(s.startswith(f"MFU, mean {e2e:.1%}") for s in labels)
    with pytest.raises(ValueError, match="no GPU utilisation"):
        plots.gpu_util_mfu_table(run)
    with pytest.raises(ValueError, match="no MFU"):
        plots.gpu_util_mfu_table(_with_util(_no_flops(run)))
    with pytest.raises(ValueError, match="source must be one of 'auto', 'gpu_util', 'gpu_busy'; got 'smi'"):
        plots.gpu_util_mfu_table(r, source="smi")


def test_gpu_busy_from_profiler_columns_and_tidy_input(run):
    steps = run.steps.assign(gpu_busy_s=run.steps["compute_s"] * 0.75, gpu_idle_s=run.steps["compute_s"] * 0.25)
    t = plots.gpu_util_mfu_table(run.replace(steps=steps), bin_s=20.0)
    assert t.attrs["source"] == "gpu_busy" and np.nanmax(np.abs(t["gpu_util"] - 0.75)) < 1e-12
    assert (t["bin_s"].iloc[:-1] == 20.0).all()
    ax = plots.mfu_vs_gpu_util(run.replace(steps=steps), bin_s=20.0)
    assert any("GPU busy (profiler)" in x.get_text() for x in ax.get_legend().get_texts())
    tidy = pd.DataFrame({"time_s": [0.0, 10.0, 20.0], "gpu_util": [95.0, 97.0, 10.0], "mfu": [0.3, 0.35, 0.0]})
    ax2 = plots.mfu_vs_gpu_util(tidy, time_unit="s")
    util_line = [ln for ln in ax2.lines if "utilisation" in ln.get_label()][0]
    np.testing.assert_allclose(util_line.get_ydata()[:3], [0.95, 0.97, 0.10])
    with pytest.raises(ValueError, match=r"run_or_table must have columns \['time_s', 'gpu_util', 'mfu'\]"):
        plots.mfu_vs_gpu_util(tidy.drop(columns="mfu"))


# ------------------------------------------------------------------------------------ all plots


def _calls(run):
    r = _with_util(run)
    return {
        "waterfall": lambda ax: plots.waterfall(run, ax=ax),
        "timeline": lambda ax: plots.timeline(run, ax=ax),
        "step_times": lambda ax: plots.step_times(run, ax=ax),
        "rank_heatmap": lambda ax: plots.rank_heatmap(run, ax=ax),
        "spread_distribution": lambda ax: plots.spread_distribution(run, ax=ax),
        "expected_step_time": lambda ax: plots.expected_step_time(n_ranks=64, mean=1.0, std=0.1, ax=ax),
        "checkpoint_overhead_curve": lambda ax: plots.checkpoint_overhead_curve(
            checkpoint_s=30.0, mtbf_s=7200.0, restart_s=60.0, ax=ax),
        "scaling_efficiency": lambda ax: plots.scaling_efficiency(
            pd.DataFrame({"n_accelerators": [8, 64], "throughput": [1.0, 7.0]}), ax=ax),
        "mfu_vs_gpu_util": lambda ax: plots.mfu_vs_gpu_util(r, ax=ax),
    }


def test_every_plot_draws_into_the_given_axes_and_checks_ax(run):
    for name, call in _calls(run).items():
        fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4))
        out = call(right)
        assert out is right, name
        assert right.get_title() and right.get_xlabel(), name
        assert not left.has_data() and not left.get_title(), name  # nothing leaked next door
        fig.tight_layout()  # the layout engine copes with what was drawn
        with pytest.raises(TypeError, match="ax must be a matplotlib Axes or None; got str"):
            call("left")
        plt.close(fig)
    n_before = len(plt.get_fignums())
    ax = plots.waterfall(run)
    assert len(plt.get_fignums()) == n_before + 1 and ax.figure.number in plt.get_fignums()


# --------------------------------------------------------------------------------------- report


def test_html_report_embeds_the_figures(run, tmp_path):
    out = tmp_path / "r.html"
    text = html_report(_with_util(run), path=out, title="Team <run>")
    assert out.read_text(encoding="utf-8") == text
    alts = re.findall(r"<img alt='([^']*)' src='data:image/png;base64,", text)
    assert [a.split(":")[0].split(",")[0] for a in alts] == [
        "Waterfall", "Timeline", "Step time", "Per-rank time relative to the step median (red",
        "GPU utilisation (what monitoring shows) vs MFU over time"]
    assert "<h1>Team &lt;run&gt;</h1>" in text and "Steady-state MFU" in text
    # the answer first, then the detail: the restarts' downtime by cause, checks, facts used, waterfall
    # and scorecard are the tables (the simulated run fails and restarts)
    assert re.findall(r"<h2>(.*?)</h2>", text)[:2] == ["The answer", "Largest losses"]
    assert text.count("<table>") == 5 and "<h2>Downtime by cause</h2>" in text
    assert "stragglers" in text and "end_to_end_mfu" in text
    job = html_report(simulate(CFG.replace(per_rank=False, n_steps=40, fail_at_steps=())))
    assert job.count("data:image/png;base64,") == 3
    assert "Per-rank heatmap left out" in job and "GPU utilisation vs MFU left out" in job


def test_analysis_does_not_depend_on_plots():
    assert importlib.util.find_spec("mfu_toolkit.analysis.report") is None
    folder = Path(plots.__file__).parent / "analysis"
    for path in folder.glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        # every import, inside functions too: the command line lives in mfu_toolkit.cli, with no exception here
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                names = [f"{'.' * node.level}{node.module or ''}"]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            for name in names:
                assert not re.search(r"(^|\.)(plots|report|render|cli|widgets|inputs|audit)(\.|$)|"
                                     r"^(seaborn|matplotlib)|scenarios\.whatif", name), (path.name, name)


def _breakdown_table(seconds: dict[str, float], steady: float = 0.4) -> pd.DataFrame:
    wall = sum(seconds.values())
    t = pd.DataFrame({"category": list(seconds), "seconds": list(seconds.values())})
    t["share"] = t["seconds"] / wall
    t["mfu_after"] = steady
    t["efficiency_after"] = 1.0
    t.attrs["steady_state_mfu"] = steady
    return t


def _texts(ax) -> list[str]:
    return [t.get_text() for t in ax.texts]


def test_waterfall_reads_float_noise_as_zero_and_keeps_one_unit():
    # 600 s of ideal compute, 120 s of checkpoints, 2.71e-9 s of "jitter" left by a subtraction.
    from mfu_toolkit.plots import waterfall

    table = _breakdown_table({"ideal_compute": 600.0, "checkpoint_save": 120.0, "jitter": 2.71e-9})
    ax = waterfall(table)
    labels = " ".join(_texts(ax))
    assert "e-0" not in labels and "2.71" not in labels  # no "2.71e-06 ms" bar
    assert [lbl.get_text() for lbl in ax.get_xticklabels()] == ["checkpoint save", "ideal compute"]
    # one unit for every bar of the figure (the old labels mixed "2 min" and "600 s"):
    # 120 / 720 = 16.7 %, 600 / 720 = 83.3 %
    assert "120 s\n16.7%" in _texts(ax) and "600 s\n83.3%" in _texts(ax)
    long = waterfall(_breakdown_table({"ideal_compute": 6000.0, "checkpoint_save": 120.0}))
    assert "2 min\n2.0%" in _texts(long) and "100 min\n98.0%" in _texts(long)
    shown = waterfall(table, show_zero=True)
    assert "0 s\n0.0%" in _texts(shown)
    plt.close("all")


def test_room_style_is_for_a_projector():
    from mfu_toolkit.plots import ROOM_STYLE

    assert ROOM_STYLE["figure.dpi"] >= 100 and ROOM_STYLE["font.size"] >= 12


def test_roofline_puts_each_op_on_its_roof():
    # H100 SXM: 989.4e12 FLOP/s, 3.35e12 B/s (datasheets) -> ridge 295 FLOP/B; an op of intensity
    # 1.25 (LayerNorm in bf16) attains 1.25 × 3.35 = 4.19 TFLOP/s, one of 1365 (a 4096³ matmul) the peak.
    from mfu_toolkit.plots import roofline

    data = pd.DataFrame({"name": ["LayerNorm", "matmul 4096³", "lookup"], "kind": ["elementwise", "matmul",
                                                                                  "embedding"],
                         "intensity": [1.25, 4096 / 3, 0.0]})
    ax = roofline(data, peak_flops=989.4e12, bandwidth=3.35e12, accelerator="H100 SXM", matmul_peak=797.5e12)
    ys = sorted(float(y) for c in ax.collections for y in c.get_offsets()[:, 1])
    assert ys[1] == pytest.approx(4.1875) and ys[2] == pytest.approx(989.4)
    texts = _texts(ax)
    assert "ridge 295 FLOP/B" in texts
    # the points are numbered in order of intensity (lookup, LayerNorm, matmul) and named in a key
    # beside the axes, so no name is printed over another or over the roof; the lookup is drawn at
    # the left edge (x = 1), a tenth of a decade from LayerNorm, so the two share one label
    assert {"1-2", "3"} <= set(texts)
    key = next(t for t in texts if "lookup" in t)
    assert key.splitlines() == ["1  lookup (0 FLOP)", "2  LayerNorm", "3  matmul 4096³"]
    assert ax.get_xscale() == "log" and "TFLOP/s" in ax.get_ylabel()
    with pytest.raises(ValueError, match="peak_flops must be a finite number > 0 FLOP/s; got -1"):
        roofline(data, peak_flops=-1, bandwidth=1e12)
    plt.close("all")
