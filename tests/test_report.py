"""The HTML report (:func:`mfu_toolkit.report.html_report`): the shared answer with figures.

A small per-rank step log is written here (its facts are known by construction); the report
must render the same answer as ``mfu analyze``, section by section, answer first. The
``make report`` tests (notebook 08 through papermill) live in ``test_team_report.py``.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _steplog import N_RANKS, SLOW_RANK, write_step_log

from mfu_toolkit.render import answer_sections

# --------------------------------------------------------------------------------------------
# mfu_toolkit.report.html_report: the same Answer as `mfu analyze`, with figures


def _team_run(tmp_path: Path):
    from mfu_toolkit.inputs import apply_inputs
    from mfu_toolkit.io import load_run

    log = write_step_log(tmp_path / "team.csv")
    with pytest.warns(Warning):  # the bad row is skipped with a warning
        run = load_run(log)
    return apply_inputs(run, accelerator="A100 SXM", dtype="bf16", n_accelerators=N_RANKS, flops_per_sample=1.5e12,
                        global_batch=256)


def _h2(body: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", body)


def test_html_report_renders_the_answer_first_with_its_numerator(tmp_path):
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.report import html_report

    run = _team_run(tmp_path)
    body = html_report(run, path=tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == body
    assert _h2(body) == ["The answer", "Largest losses", "Stragglers", "Checks", "Facts used", "Waterfall",
                         "Scorecard", "Figures", "Steady-state window"]
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    assert title.startswith("MFU report: team.csv (table log), report of ")
    # the same text as the terminal answer, section by section
    answer = build_answer(run)
    for heading, fragment in answer_sections(answer):
        assert fragment in body, heading
    # 1.5e12 FLOPs per sample × 256 samples per step = 384 TFLOP per step
    assert "numerator: 384 TFLOP model FLOPs per step, from apply_inputs(flops_per_sample=...)" in body
    assert f"Culprit: rank {SLOW_RANK}" in body
    assert body.count("data:image/png;base64,") == 4  # waterfall, timeline, step times, rank heatmap
    assert body.index("Waterfall: from steady-state") > body.index("<h2>Waterfall</h2>")


def test_html_report_of_a_log_without_timed_steps_says_what_it_holds(tmp_path):
    from mfu_toolkit.report import html_report
    from mfu_toolkit.run import Run, RunMeta

    events = [{"kind": "init", "start_s": 0.0, "end_s": 5.0, "attempt": 0, "rank": -1, "detail": ""}]
    body = html_report(Run.build(None, events, RunMeta(name="no steps")))
    assert _h2(body) == ["The answer", "Stragglers", "Checks", "Facts used", "What the log holds"]
    assert "no timed steps" in body and "<img" not in body and "Wall time: 0.000 s" not in body


def test_html_report_refuses_what_is_not_an_answer(tmp_path):
    from mfu_toolkit.report import html_report

    with pytest.raises(TypeError, match="answer must be an Answer"):
        html_report(_team_run(tmp_path), answer="text")
