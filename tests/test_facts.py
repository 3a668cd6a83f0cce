"""mfu_toolkit.facts: the one path for given, stated and assumed facts.

The values are made up here, one per rule: a log stating 4 nodes x 8 accelerators per node is
32 accelerators; a given value beats a stated one and the conflict is noted; the H100 peak at bf16
is NVIDIA's 989.4 TFLOP/s dense (H100 SXM datasheet), per device.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mfu_toolkit import facts
from mfu_toolkit.facts import Fact
from mfu_toolkit.run import RunMeta

PACKAGE = Path(__file__).resolve().parent.parent / "mfu_toolkit"


def _resolve(stated: list[Fact], given: dict | None = None, fields: dict | None = None):
    notes: list[str] = []
    res = facts.resolve(stated, fields or {}, given or {}, where="test keyword", note=notes.append)
    return res, notes


def test_nodes_times_accelerators_per_node_fill_the_count():
    res, notes = _resolve([Fact("n_nodes", 4, "log:3"), Fact("accelerators_per_node", "8", "log:4")])
    assert res.fields["n_accelerators"] == 32
    derived = [f for f in res.facts if f["name"] == "n_accelerators"]
    assert derived == [{"name": "n_accelerators", "value": 32, "source": "stated", "where": "log:3 and log:4",
                        "text": "n_nodes 4 x accelerators_per_node 8"}]
    assert any("n_accelerators 32 = n_nodes 4 x accelerators_per_node 8" in n for n in notes)


def test_a_given_value_wins_and_a_contradiction_is_a_conflict():
    res, notes = _resolve([Fact("n_accelerators", 64, "log:1", "world size 64")], {"n_accelerators": 128},
                          {"n_accelerators": 64})
    assert [f["source"] for f in res.facts] == ["stated", "given"]
    assert res.facts[1]["where"] == "test keyword"
    assert len(res.conflicts) == 1 and "given as 128, but the log states 64 at log:1" in res.conflicts[0]
    assert res.conflicts[0] in notes


def test_a_given_value_that_agrees_is_no_conflict():
    # "NVIDIA H100 80GB HBM3" and "H100" are one accelerator to the registry
    res, _ = _resolve([Fact("accelerator", "NVIDIA H100 80GB HBM3", "log:2")], {"accelerator": "H100"})
    assert res.conflicts == []


def test_a_stated_accelerator_resolves_the_peak_and_says_where():
    res, notes = _resolve([Fact("accelerator", "NVIDIA H100 80GB HBM3", "log:2"), Fact("dtype", "bfloat16", "log:5")])
    assert res.fields["accelerator"] == "H100 SXM" and res.fields["dtype"] == "bf16"
    meta = facts.trace_peak(RunMeta(**res.fields), res)
    assert meta.peak_flops_per_accelerator == pytest.approx(989.4e12, rel=1e-3)
    assert "log:2" in meta.peak_source and "log:5" in meta.peak_source


def test_no_stated_dtype_assumes_bf16_and_says_so():
    res, _ = _resolve([Fact("accelerator", "H100", "log:2")])
    assert res.fields["dtype"] == "bf16"
    assert any("bf16 assumed" in p for p in res.peak_from)
    assert res.defaults == ["dtype"]  # recorded as data (RunMeta.extra["defaults"]), not read back from the text
    stated, _ = _resolve([Fact("accelerator", "H100", "log:2"), Fact("dtype", "bf16", "log:3")])
    assert stated.defaults == []


def test_an_unknown_accelerator_is_a_note_not_a_peak():
    res, notes = _resolve([Fact("accelerator", "Imaginary X9", "log:2")])
    assert "accelerator" not in res.fields
    assert any(n.startswith("peak unknown: accelerator 'Imaginary X9'") for n in notes)


def test_compare_and_source_of():
    rows = [Fact("accelerator", "NVIDIA H100 80GB HBM3", "log:2").to_dict(), Fact("seq_len", 4096, "log:9").to_dict(),
            facts.given("seq_len", 2048, "command line --seq-len"), facts.given("accelerator", "H100", "kw")]
    compared, conflicts = facts.compare_given(rows)
    assert compared == 2
    assert [(g["name"], s["value"]) for g, s in conflicts] == [("seq_len", 4096)]
    assert facts.source_of(rows, "seq_len", 2048) == ("given", "command line --seq-len")
    assert facts.source_of(rows[:2], "accelerator", "H100 SXM") == ("stated", "log:2")
    assert facts.source_of(rows[:2], "dtype", "bf16") is None
    assert facts.comparable("accelerator", "H100", "Imaginary X9") is None


def test_given_facts_are_built_in_one_module():
    """Every ``RunMeta.facts`` entry marked given is made by facts.given (the one given-facts path)."""
    pattern = re.compile(r"""["']source["']\s*:\s*(["']given["']|GIVEN\b|facts\.GIVEN)""")
    hits = [str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py") if pattern.search(p.read_text())]
    assert hits == ["facts.py"]
