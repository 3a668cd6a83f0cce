"""Analyses of a Run: pure functions, DataFrames in and out.

- ``breakdown``   where the wall time goes (:func:`breakdown`, :func:`mfu_summary`,
  :func:`steady_state_window`, :func:`account`, :func:`job_steps`)
- ``stragglers``  per-rank and per-operation stragglers, and order-statistics theory
- ``replay``      dependency-aware what-if replay of per-operation traces (:func:`straggler_whatif`)
- ``checkpoint``  Young/Daly intervals, expected overhead, reference failure records, Run report
- ``scaling``     scaling efficiency from a table or from runs
- ``scorecard``   the four families of acceptance metrics
- ``compare``     two runs side by side, warning when more than one major variable differs
- ``inputs``      the user's inputs applied to a Run (:func:`apply_inputs`), asked for in each
  interface's terms (:func:`ask`)
- ``answer``      the one answer every front end renders (:func:`build_answer`, :class:`Answer`)
- ``cli``         the ``analyze``/``simulate`` commands (the HTML report lives in ``mfu_toolkit.report``)
"""

from __future__ import annotations

from .accounting import (
    CATEGORIES,
    Accounting,
    SteadyWindow,
    account,
    job_steps,
    steady_state_window,
)
from .answer import Answer, Check, build_answer, straggler_verdict
from .breakdown import MFUSummary, breakdown, mfu_summary
from .checkpoint import (
    LLAMA3_405B,
    REFERENCE_SCENARIOS,
    CheckpointReport,
    ReferenceScenario,
    checkpoint_overhead,
    checkpoint_report,
    daly_interval,
    interval_table,
    job_mtbf,
    reference_scenarios,
    young_interval,
)
from .compare import Comparison, ConfoundedComparisonWarning, compare, major_variables
from .inputs import INTERFACES, InputError, apply_inputs, ask
from .replay import WhatIfResult, slowed_replay, straggler_whatif
from .scaling import run_throughput, scaling_from_runs, scaling_table
from .scorecard import gpu_idle_share, scorecard
from .stragglers import (
    STRAGGLER_KINDS,
    OpStragglerVerdict,
    StragglerSummary,
    classify_op_stragglers,
    expected_max,
    op_time_by_type,
    op_worker_compute,
    rank_scores,
    step_spread,
    straggler_summary,
    sync_step_time,
    without_worst_ranks,
)

__all__ = [
    "Answer",
    "Check",
    "build_answer",
    "straggler_verdict",
    "INTERFACES",
    "InputError",
    "apply_inputs",
    "ask",
    "CATEGORIES",
    "Accounting",
    "MFUSummary",
    "SteadyWindow",
    "account",
    "breakdown",
    "job_steps",
    "mfu_summary",
    "steady_state_window",
    "LLAMA3_405B",
    "REFERENCE_SCENARIOS",
    "CheckpointReport",
    "ReferenceScenario",
    "checkpoint_overhead",
    "checkpoint_report",
    "daly_interval",
    "interval_table",
    "job_mtbf",
    "reference_scenarios",
    "young_interval",
    "Comparison",
    "ConfoundedComparisonWarning",
    "compare",
    "major_variables",
    "run_throughput",
    "scaling_from_runs",
    "scaling_table",
    "gpu_idle_share",
    "scorecard",
    "STRAGGLER_KINDS",
    "OpStragglerVerdict",
    "StragglerSummary",
    "classify_op_stragglers",
    "expected_max",
    "op_time_by_type",
    "op_worker_compute",
    "rank_scores",
    "step_spread",
    "straggler_summary",
    "sync_step_time",
    "without_worst_ranks",
    "WhatIfResult",
    "slowed_replay",
    "straggler_whatif",
]
