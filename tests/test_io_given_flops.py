"""FLOPs the caller gives replace the FLOPs a log states (one source, the caller's, named as such)."""

from __future__ import annotations

import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit.io import load_run

V5P = "maxtext/AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md"


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_the_logs_own_flops_are_the_numerator_until_the_caller_gives_some(realdata):  # noqa: F811
    path = realdata / V5P
    text = path.read_text()
    assert "764.67" in text  # the doc's own "Per train step" TFLOPs per device
    m = load_run(path).meta
    assert m.model_flops_per_step == pytest.approx(764.67e12 * 4) and "the log's own claim" in m.model_flops_source
    per_token = load_run(path, model_flops_per_token=1e10).meta
    assert per_token.model_flops_per_token == 1e10
    assert per_token.model_flops_per_step is None and per_token.model_flops_per_sample is None
    assert per_token.model_flops_source == "given: load_run(model_flops_per_token=)"
    per_step = load_run(path, model_flops_per_step=1e15, model_flops_source="my count").meta
    assert per_step.model_flops_per_step == 1e15 and per_step.model_flops_source == "my count"
