"""Reasons as data: the analyses say what is missing by code and field; front ends phrase the code.

Before, a "why unknown" sentence written in ``breakdown.py`` ("set meta.model_flops_per_step")
was read back by five regular expressions in ``inputs.speak`` to say it per interface; changing
the sentence silently broke the phrasing. These tests hold the codes, the fields and the rule
that phrasing never reads the sentence.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from mfu_toolkit.analysis import build_answer, mfu_summary, scorecard
from mfu_toolkit.analysis.reasons import (
    Missing,
    Reason,
    flops_unknown,
    hfu_unknown,
    peak_unknown,
    work_unknown,
)
from mfu_toolkit.render import answer_dict
from mfu_toolkit.render.vocabulary import phrase, phrase_error
from mfu_toolkit.run import LoadError, Run, RunMeta

PACKAGE = Path(__file__).resolve().parents[1] / "mfu_toolkit"


def _bare_run() -> Run:
    """Three timed steps of one rank, nothing else known: no FLOPs, no count, no peak."""
    steps = pd.DataFrame({"step": [0, 1, 2], "rank": [0, 0, 0], "start_s": [0.0, 1.0, 2.0],
                          "end_s": [1.0, 2.0, 3.0]})
    return Run.build(steps, None, RunMeta(name="bare"))


def test_a_bare_run_s_reasons_carry_codes_and_the_fields_they_ask_for():
    s = mfu_summary(_bare_run())
    why = s.reasons["steady_state_mfu"]
    assert isinstance(why, Reason) and why.code == "several"
    assert [r.code for r in why.each()] == ["flops_unknown", "peak_unknown"]
    assert [m.field for m in why.missing] == ["model_flops_per_step", "n_accelerators", "peak_flops_per_accelerator"]
    assert why.missing[0].unit == "step"
    assert s.reasons["cluster_peak_flops"].code == "peak_unknown"
    # the text is a sentence a Python reader can use, and names no attribute path to set
    assert str(why).startswith("model FLOPs per step unknown") and "meta." not in str(why)


def test_phrasing_reads_the_code_never_the_sentence():
    # A reason whose words say nothing of flags is still phrased from its code and field.
    odd = Reason("whatever words", code="flops_unknown", missing=(Missing("model_flops_per_token", unit="token"),))
    assert phrase(odd, "cli") == "model FLOPs per token unknown (give --preset NAME --seq-len N or --flops-per-token F)"
    assert phrase(odd, "make") == "model FLOPs per token unknown (give PRESET=NAME SEQ_LEN=N or FLOPS_PER_TOKEN=F)"
    # a sentence that looks like a hint but carries no code is left as written
    assert phrase("model FLOPs per step unknown (set meta.model_flops_per_step)", "cli") == (
        "model FLOPs per step unknown (set meta.model_flops_per_step)")


@pytest.mark.parametrize(("interface", "count", "peak"), [
    ("cli", "--gpus N", "--accelerator NAME, and --dtype DTYPE when not bf16"),
    ("make", "GPUS=N", "ACCELERATOR=NAME, and DTYPE=DTYPE when not bf16"),
    ("python", "n_accelerators=N", "accelerator=NAME, and dtype=DTYPE when not bf16"),
])
def test_each_code_is_phrased_per_interface(interface, count, peak):
    both = peak_unknown(count=True, peak=True)
    assert phrase(both, interface) == f"unknown accelerator count (give {count}) and peak (give {peak})"
    assert phrase(peak_unknown(count=True, peak=False), interface) == f"unknown accelerator count (give {count})"
    assert peak_unknown(count=False, peak=False) == ""
    assert "recomputation count" in phrase(hfu_unknown(), interface)
    batch = {"cli": "--global-batch N", "make": "GLOBAL_BATCH=N", "python": "global_batch=N"}[interface]
    assert phrase(work_unknown("sample", batch=True, seq_len=False), interface) == (
        f"samples per step unknown (give {batch})")


def test_joined_reasons_phrase_each_part_and_survive_pickling():
    joined = Reason.join(flops_unknown("sample"), "", peak_unknown(count=True, peak=False))
    assert joined.code == "several" and str(joined).count("; ") == 1
    assert phrase(joined, "cli") == ("model FLOPs per sample unknown (give --preset NAME --seq-len N or "
                                     "--flops-per-sample F); unknown accelerator count (give --gpus N)")
    back = pickle.loads(pickle.dumps(joined))
    assert back == joined and back.code == "several" and [r.code for r in back.each()] == ["flops_unknown",
                                                                                             "peak_unknown"]
    assert Reason.join("", "") == ""
    with pytest.raises(TypeError, match="Reason.join takes Reasons"):
        Reason.join("a plain sentence")
    with pytest.raises(ValueError, match="Reason code must be one of"):
        Reason("x", code="nope")


def test_the_json_carries_codes_and_fields_beside_the_phrased_text():
    doc = json.loads(json.dumps(answer_dict(build_answer(_bare_run()), interface="cli")))
    coded = doc["summary"]["reason_codes"]["steady_state_mfu"]
    assert coded["codes"] == ["flops_unknown", "peak_unknown"]
    assert {"field": "model_flops_per_step", "unit": "step"} in coded["missing"]
    assert "--flops-per-step F" in doc["summary"]["reasons"]["steady_state_mfu"]


def test_the_scorecard_keeps_its_notes_codes_for_the_answer():
    sc = scorecard(_bare_run())
    assert sc.attrs["reasons"]["steady_state_mfu"].code == "several"
    assert sc.attrs["reasons"]["samples_per_s_steady"].code == "work_unknown"
    a = build_answer(_bare_run())
    notes = dict(zip(a.scorecard["metric"], a.scorecard["note"], strict=True))
    assert notes["samples_per_s_steady"].code == "work_unknown"  # data: the front end phrases it
    assert phrase(notes["samples_per_s_steady"], "cli") == "samples per step unknown (give --global-batch N)"
    rows = answer_dict(a, interface="cli")["scorecard"]
    assert {r["metric"]: r["note"] for r in rows}["samples_per_s_steady"] == (
        "samples per step unknown (give --global-batch N)")
    assert notes["steady_state_mfu"] == "n/a: missing facts (listed above)"


def test_an_unrecognised_file_asks_for_the_format_in_each_interface(tmp_path):
    from mfu_toolkit.io import load_run

    odd = tmp_path / "odd.txt"
    odd.write_text("nothing any loader reads\n")
    with pytest.raises(LoadError) as info:
        load_run(odd)
    exc = info.value
    assert exc.hint == "choose_format" and "Pass format=<name> to choose one" in str(exc)
    assert phrase_error(exc, "cli").endswith("Give --format NAME to choose one, e.g. --format table with "
                                             "--columns SCHEMA:COLUMN,... for a generic CSV/JSONL/Parquet table")
    assert "FORMAT=table with COLUMN_MAP=" in phrase_error(exc, "make")
    # the command line says it in its own terms, end to end
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(odd)], capture_output=True, text=True,
                         check=False)
    assert out.returncode == 2 and "Give --format NAME" in out.stderr and "format=<name>" not in out.stderr


def test_no_library_sentence_is_read_back_by_a_regular_expression():
    # the sites that did so are gone: speak() and its patterns, the substring test of the answer
    import mfu_toolkit.render.vocabulary as vocabulary

    assert not hasattr(vocabulary, "speak")
    for path in (PACKAGE / "render" / "vocabulary.py", PACKAGE / "render" / "spoken.py"):
        assert "import re\n" not in path.read_text()
    for path in PACKAGE.rglob("*.py"):
        text = path.read_text()
        assert "set meta." not in text and "resolve it with meta." not in text, path
        assert ".split(\":\", 1)[0] for x in answer.missing" not in text, path  # the audit read the text back


def test_missing_facts_and_checks_carry_fields_in_the_json():
    doc = answer_dict(build_answer(_bare_run()), interface="make")
    fields = [(m["field"], m.get("unit")) for m in doc["missing_fields"]]
    assert fields == [("model_flops_per_step", "step"), ("n_accelerators", None), ("peak_flops_per_accelerator", None)]
    assert [m["text"] for m in doc["missing_fields"]] == doc["missing"]
    assert doc["missing_fields"][1]["text"].startswith("accelerator count: give GPUS=N")
    codes = {c["code"] for c in doc["checks"]}
    assert "accounting.sums" in codes and "facts.none_given" in codes


def test_a_check_without_a_known_code_is_refused():
    from mfu_toolkit.analysis.answer import Check

    with pytest.raises(ValueError, match="Check.code must be one of"):
        Check("x", "ok", "y", code="made.up")
