"""The pipeline's own rules: what assemble keeps in meta (see mfu_toolkit.io.base)."""

from __future__ import annotations

import math

from mfu_toolkit.io.base import Claim, Parsed, assemble
from mfu_toolkit.io.reading import Reader
from mfu_toolkit.run import save_run


def test_non_finite_facts_claims_and_extra_never_reach_meta(tmp_path):
    # meta is JSON and a saved Run must read back equal: NaN never equals itself.
    out = Parsed(steps={"step": [0], "start_s": [0.0], "end_s": [1.0]})
    out.fact("global_batch", math.nan, "x:1")
    out.fact("n_accelerators", 8, "x:2")
    out.claim(Claim("mfu", math.inf, "fraction", "test", "x:3"))
    out.claim(Claim("mfu", 0.4, "fraction", "test", "x:4"))
    out.extra = {"a": math.nan, "b": [1.0, math.inf], "c": {"d": -math.inf, "e": 2}}
    run = assemble(out, Reader(tmp_path / "log.txt", "test"))
    assert [f["name"] for f in run.meta.facts] == ["n_accelerators"]
    assert [c["value"] for c in run.meta.claims] == [0.4]
    assert run.meta.extra == {"a": None, "b": [1.0, None], "c": {"d": None, "e": 2}}
    from mfu_toolkit.io import load_run

    assert load_run(save_run(run, tmp_path / "r.parquet")) == run


def test_a_given_value_that_contradicts_a_stated_one_is_noted_and_the_given_one_used(tmp_path):
    import warnings

    out = Parsed(steps={"step": [0], "start_s": [0.0], "end_s": [1.0]})
    out.fact("n_accelerators", 8, "log.txt:12", "using world size: 8")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = assemble(out, Reader(tmp_path / "log.txt", "test"), {"n_accelerators": 16})
    assert run.meta.n_accelerators == 16
    assert [(f["value"], f["source"]) for f in run.meta.facts] == [(8, "stated"), (16, "given")]
    note = next(n for n in run.meta.report.notes if n.startswith("conflict"))
    assert "given as 16" in note and "states 8 at log.txt:12" in note
    assert len(caught) == 1 and "conflict" in str(caught[0].message)
