"""A headline the log's own throughput contradicts says so beside the number, in every front end:
the terminal's first MFU line, ``--json``'s top level, the HTML report's title block."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from _samples import T0_MS, mllog, write_mlperf

from mfu_toolkit.analysis import build_answer
from mfu_toolkit.io import load_run
from mfu_toolkit.render import answer_dict, answer_text
from mfu_toolkit.report import html_report


def _log(tmp_path, claimed: float):
    """Three 10 s training intervals of 250,000 samples (a quarter epoch of 1,000,000 each), 1 s
    evaluations between them, and a throughput record at run_stop claiming ``claimed`` samples/s."""
    lines = [mllog("train_samples", T0_MS, 1_000_000), mllog("run_start", T0_MS, event_type="INTERVAL_START"),
             mllog("epoch_start", T0_MS, event_type="INTERVAL_START", epoch_num=0.0)]
    t = T0_MS
    for m in (0.25, 0.5, 0.75):
        t += 10_000
        lines += [mllog("eval_start", t, event_type="INTERVAL_START", epoch_num=m),
                  mllog("eval_stop", t + 1000, event_type="INTERVAL_END", epoch_num=m)]
        t += 1000
    lines += [mllog("run_stop", t, event_type="INTERVAL_END", status="success", epoch_num=0.75),
              mllog("epoch_stop", t, event_type="INTERVAL_END", epoch_num=0.75),
              mllog("tracked_stats", t, {"throughput": claimed}, step=0.75)]
    return write_mlperf(tmp_path, lines=lines)


FACTS = {"n_accelerators": 1, "accelerator": "H100 SXM", "model_flops_per_sample": 1e9}
TRUE_RATE = 750_000 / 33  # hand: the samples of the timed run over its 33 s


def test_a_claim_off_by_2x_puts_the_conflict_beside_the_first_mfu(tmp_path):
    ans = build_answer(load_run(_log(tmp_path, 2 * TRUE_RATE), **FACTS))
    assert ans.conflict is not None and ans.conflict["ratios"] == [pytest.approx(0.5)]
    text = answer_text(ans).splitlines()
    first = next(i for i, line in enumerate(text) if line.startswith("Steady-state MFU"))
    assert "in conflict with the log's own claim" in " ".join(text[first:first + 2])
    assert "samples_per_s ours/log 0.50" in " ".join(x.strip() for x in text[first:first + 2])


def test_an_agreeing_claim_leaves_the_headline_plain(tmp_path):
    ans = build_answer(load_run(_log(tmp_path, TRUE_RATE), **FACTS))
    assert ans.conflict is None and "conflict" not in answer_text(ans)
    assert answer_dict(ans)["conflict"] is None


def test_the_html_title_block_carries_the_conflict(tmp_path):
    page = html_report(load_run(_log(tmp_path, 2 * TRUE_RATE), **FACTS), report_date="2026-01-01")
    h1_end = page.index("</h1>")
    nxt = page.index("<h2>", h1_end)
    assert "in conflict with the log&#x27;s own claim" in page[h1_end:nxt]


def test_mfu_analyze_json_has_the_conflict_at_its_top_level(tmp_path):
    path = _log(tmp_path, 2 * TRUE_RATE)
    cmd = [sys.executable, "-m", "mfu_toolkit", "analyze", str(path), "--gpus", "1", "--accelerator", "H100 SXM",
           "--flops-per-sample", "1e9", "--json"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    doc = json.loads(out.stdout)
    assert doc["conflict"]["checks"] == ["claim samples_per_s"]
    assert doc["conflict"]["ratios"][0] == pytest.approx(0.5)
    check = next(c for c in doc["checks"] if c["name"] == "claim samples_per_s")
    assert check["status"] == "warn" and check["ratio"] == pytest.approx(0.5)
    # the terminal's answer: the same conflict on the first MFU line
    text = subprocess.run(cmd[:-1], capture_output=True, text=True, timeout=120).stdout
    assert "Steady-state MFU" in text and "in conflict" in text.split("Steady-state MFU", 1)[1].split("End-to-end")[0]


def test_a_stall_loss_names_the_steps_it_came_from(tmp_path):
    # 10 steps of 1 s and one that a loader flagged as an outlier, 50 s long (as MaxText's loader does)
    log = tmp_path / "steps.csv"
    rows, t = [], 0.0
    for i in range(11):
        dur = 50.0 if i == 5 else 1.0
        rows.append(f"{i},{t},{t + dur}")
        t += dur
    log.write_text("step,start_s,end_s\n" + "\n".join(rows) + "\n")
    run = load_run(log, n_accelerators=1, accelerator="H100 SXM", model_flops_per_step=1e14)
    run = run.replace(steps=run.steps.assign(flag=["outlier" if s == 5 else "" for s in run.steps["step"]]))
    ans = build_answer(run)
    (stall,) = [x for x in ans.losses if x["category"] == "stall"]
    assert stall["seconds"] == pytest.approx(49.0) and "step 5" in stall["detail"]  # 50 s less the 1 s ideal
    assert "stall: 49" in answer_text(ans)


def test_a_ratio_thousands_off_is_never_shown_as_zero(tmp_path):
    # hand: 3,000x the true rate claimed -> ours/log = 1/3,000 = 0.000333
    ans = build_answer(load_run(_log(tmp_path, 3000 * TRUE_RATE), **FACTS))
    assert "ours/log 0.000333" in ans.conflict["text"]
    check = next(c for c in ans.checks if c.name == "claim samples_per_s")
    assert "(ratio 0.000333)" in check.message
