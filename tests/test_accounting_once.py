"""The accounting is the one place options enter, and it is computed once per answer.

Before, ``mfu analyze --html`` ran ``account`` twice and the MFU summary four times, and options
passed with an ``Accounting`` were ignored without a word (``mfu_summary(acc, warmup_steps=k)``
answered for ``acc``'s own window).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from mfu_toolkit.analysis import account, breakdown, build_answer, mfu_summary, scorecard
from mfu_toolkit.analysis.compare import major_variables
from mfu_toolkit.cli import main
from mfu_toolkit.run import Run, RunMeta

bd = sys.modules["mfu_toolkit.analysis.waterfall"]
accounting = sys.modules["mfu_toolkit.analysis.accounting"]
SAMPLE = Path(__file__).resolve().parents[1] / "data" / "samples" / "megatron_train.log"


def _run() -> Run:
    """40 steps on 4 ranks, the first 5 slow (warm-up), then slowly longer, with FLOPs and a peak."""
    rows = []
    t = 0.0
    for step in range(40):
        dt = 2.0 if step < 5 else 1.0 + 0.002 * step
        rows += [{"step": step, "rank": r, "start_s": t, "end_s": t + dt - 0.001 * r} for r in range(4)]
        t += dt
    meta = RunMeta(name="hand", n_accelerators=4, model_flops_per_step=1e15).with_accelerator("H100 SXM", "bf16")
    return Run.build(pd.DataFrame(rows), None, meta)


def test_options_given_with_an_accounting_raise_instead_of_being_ignored():
    run = _run()
    acc = account(run)
    for call in (lambda: mfu_summary(acc, warmup_steps=10), lambda: breakdown(acc, step_range=(10, 30)),
                 lambda: build_answer(acc, warmup_steps=10), lambda: major_variables(acc, step_range=(10, 30))):
        with pytest.raises(TypeError, match=r"cannot be applied to an Accounting .* account\(run, \.\.\.\)"):
            call()
    # the same option given with the Run is applied (a different window, so a different MFU)
    assert mfu_summary(run, warmup_steps=10).steady_state_mfu != pytest.approx(mfu_summary(acc).steady_state_mfu,
                                                                              rel=1e-12)
    assert (mfu_summary(account(run, warmup_steps=10)).steady_state_mfu
            == mfu_summary(run, warmup_steps=10).steady_state_mfu)
    with pytest.raises(TypeError, match="run must be a mfu_toolkit.run.Run or an Accounting; got str"):
        scorecard("run.log")


def test_the_summary_is_computed_once_per_accounting(monkeypatch):
    calls = []
    real = bd.summary_of
    monkeypatch.setattr(bd, "summary_of", lambda acc: calls.append(1) or real(acc))
    acc = account(_run())
    s = mfu_summary(acc)
    assert breakdown(acc).attrs["steady_state_mfu"] == s.steady_state_mfu
    scorecard(acc)
    build_answer(acc)
    assert len(calls) == 1 and mfu_summary(acc) is s
    assert np.isfinite(s.steady_state_mfu)


def test_mfu_analyze_html_accounts_once_and_summarises_once(monkeypatch, tmp_path):
    counts = {"account": 0, "summary": 0}
    real_account, real_summary = accounting.account, bd.summary_of

    def account_once(*a, **k):
        counts["account"] += 1
        return real_account(*a, **k)

    def summary_once(acc):
        counts["summary"] += 1
        return real_summary(acc)

    monkeypatch.setattr(accounting, "account", account_once)
    monkeypatch.setattr(bd, "summary_of", summary_once)
    out = tmp_path / "r.html"
    assert main(["analyze", str(SAMPLE), "--gpus", "8", "--accelerator", "H100 SXM", "--html", str(out)]) == 0
    assert out.stat().st_size > 10_000
    assert counts == {"account": 1, "summary": 1}


def test_the_waterfall_and_scorecard_are_views_computed_once(monkeypatch):
    sc_mod = sys.modules["mfu_toolkit.analysis.scorecard"]
    counts = {"waterfall": 0, "scorecard": 0}
    real_w, real_s = bd.waterfall_of, sc_mod.scorecard_of
    monkeypatch.setattr(bd, "waterfall_of", lambda acc: counts.__setitem__("waterfall", counts["waterfall"] + 1)
                        or real_w(acc))
    monkeypatch.setattr(sc_mod, "scorecard_of",
                        lambda acc, **k: counts.__setitem__("scorecard", counts["scorecard"] + 1)
                        or real_s(acc, **k))
    acc = account(_run())
    first = breakdown(acc)
    first.loc[0, "seconds"] = -1.0  # the caller's copy: the accounting's view is unchanged
    again = breakdown(acc)
    assert again.loc[0, "seconds"] == acc.seconds["ideal_compute"] > 0
    assert scorecard(acc).equals(scorecard(acc))
    build_answer(acc)
    assert counts == {"waterfall": 1, "scorecard": 1}
    # a scorecard against other runs is its own table, not the cached one
    scorecard(acc, others=[_run()])
    assert counts["scorecard"] == 2
