"""Analyses of a Run: pure functions, DataFrames in and out.

- ``breakdown``   where the wall time goes (:func:`breakdown`, :func:`mfu_summary`,
  :func:`steady_state_window`, :func:`account`, :func:`job_steps`)
- ``stragglers``  per-rank and per-operation stragglers, and order-statistics theory
- ``checkpoint``  Young/Daly intervals, expected overhead, reference failure records, Run report
- ``scaling``     scaling efficiency from a table or from runs
- ``scorecard``   the four families of acceptance metrics
- ``compare``     two runs side by side, warning when more than one major variable differs
- ``utilisation`` GPU utilisation (what monitoring shows) beside MFU, bin by bin
- ``answer``      the one answer every front end renders (:func:`build_answer`, :class:`Answer`)
- ``recsys``      dense MFU beside embedding bandwidth utilisation (:func:`embedding_bandwidth`), MLPerf DLRM
  from every submitter (:func:`mlperf_dlrm_table`)

The user's inputs (:func:`mfu_toolkit.inputs.apply_inputs`), ``mfu audit`` (:mod:`mfu_toolkit.audit`)
and the spellings every interface asks for them in (:mod:`mfu_toolkit.render.vocabulary`) sit
above this package; the old names here resolve to them for one release, with a warning.

What-if scenarios and synthetic runs are not analyses of a run: they live in
:mod:`mfu_toolkit.scenarios` (``simulate``, ``replay``, ``order_stats``, ``whatif``). The replay's
names (:func:`straggler_whatif`, :func:`slowed_replay`, :class:`WhatIfResult`) and the order
statistics (:func:`expected_max`, :func:`sync_step_time`) are re-exported here, since those modules
import nothing from this package; ``mfu_toolkit.analysis.whatif`` and ``.replay`` resolve to their
new homes for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from ..deprecation import moved
from ..scenarios.replay import WhatIfResult, slowed_replay, straggler_whatif
from . import breakdown as _old_breakdown_module  # noqa: F401  (loaded first: the function keeps the name)
from .accounting import (
    CATEGORIES,
    Accounting,
    SteadyWindow,
    account,
    job_steps,
    steady_state_window,
)
from .answer import Answer, Check, build_answer, straggler_verdict
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
from .comm_stragglers import COMM_KINDS, CommStragglerReport, comm_stragglers
from .communication import busbw_factor, collective_time_floor, comm_efficiency, exposed_comm_share
from .compare import Comparison, ConfoundedComparisonWarning, compare, major_variables
from .downtime import LibraryGoodput, downtime_by_cause, downtime_totals, goodput_like_library
from .hang import hang_culprits
from .recsys import (
    MLPERF_SYSTEM_DESCRIPTIONS,
    EmbeddingBandwidth,
    embedding_bandwidth,
    mlperf_dlrm_table,
    recsys_answer,
)
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
from .utilisation import gpu_util_mfu_table
from .waterfall import MFUSummary, breakdown, mfu_summary  # after the old module of that name was imported

__all__ = [
    "Answer",
    "Check",
    "build_answer",
    "straggler_verdict",
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
    "busbw_factor",
    "collective_time_floor",
    "comm_efficiency",
    "exposed_comm_share",
    "COMM_KINDS",
    "CommStragglerReport",
    "comm_stragglers",
    "Comparison",
    "ConfoundedComparisonWarning",
    "compare",
    "major_variables",
    "LibraryGoodput",
    "goodput_like_library",
    "downtime_by_cause",
    "downtime_totals",
    "hang_culprits",
    "MLPERF_SYSTEM_DESCRIPTIONS",
    "EmbeddingBandwidth",
    "embedding_bandwidth",
    "mlperf_dlrm_table",
    "recsys_answer",
    "run_throughput",
    "scaling_from_runs",
    "scaling_table",
    "gpu_idle_share",
    "gpu_util_mfu_table",
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

# moved to the front ends (the user's inputs and their spellings are not analyses), and the what-if
# modules to mfu_toolkit.scenarios (scenarios are not analyses of a run)
__getattr__ = moved(__name__, {"apply_inputs": "mfu_toolkit.inputs", "InputError": "mfu_toolkit.facts",
                               "INTERFACES": "mfu_toolkit.render.vocabulary", "ask": "mfu_toolkit.render.vocabulary",
                               "whatif": "mfu_toolkit.scenarios", "replay": "mfu_toolkit.scenarios"})
