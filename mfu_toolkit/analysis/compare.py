"""Side-by-side comparison of two runs, with the rule: change one thing at a time.

:func:`compare` puts two scorecards next to each other and checks the *major variables* —
global batch, precision, recomputation, parallelism, model configuration, data range and the
steady-state window. When more than one of them differs, a difference in MFU or throughput
cannot be pinned on any single change, so the comparison carries a warning (and issues a
:class:`ConfoundedComparisonWarning`).

The steady-state window is detected per run, and two detections of the same setup can land a
step or two apart. Windows therefore count as the same within a tolerance
(:func:`same_window`: first and last step each within ``max(5 steps, 5 %)`` of the longer
window), and ``compare(..., step_range=(first, last))`` applies one window to both runs so that
they match by construction.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..run import Run
from .accounting import Accounting, account, accounted
from .scorecard import scorecard

__all__ = [
    "MAJOR_VARIABLES",
    "WINDOW_TOLERANCE_FRACTION",
    "WINDOW_TOLERANCE_STEPS",
    "Comparison",
    "ConfoundedComparisonWarning",
    "compare",
    "major_variables",
    "same_window",
]

MAJOR_VARIABLES = (
    "global_batch",
    "precision",
    "recomputation",
    "parallelism",
    "model_config",
    "data_range",
    "window",
)

_PARALLEL_KEYS = (
    "tp", "pp", "dp", "cp", "ep", "sp", "vpp", "dsp",
    "tp_size", "pp_size", "dp_size", "cp_size", "ep_size", "vpp_size", "dsp_size",
    "tensor_parallel", "pipeline_parallel", "data_parallel", "context_parallel", "expert_parallel",
    "tensor_model_parallel_size", "pipeline_model_parallel_size", "world_size", "parallelism",
)
_MODEL_KEYS = ("model", "model_config", "num_layers", "hidden_size", "n_layers", "d_model", "preset")
_DATA_KEYS = ("data", "data_range", "data_path", "dataset", "data_split")
_RECOMPUTE_KEYS = ("recompute", "recomputation", "activation_checkpointing", "recompute_granularity")

#: Two steady-state windows are the same when their first steps and their last steps each differ
#: by at most ``max(WINDOW_TOLERANCE_STEPS, WINDOW_TOLERANCE_FRACTION × longer window)`` steps,
#: the window's length being ``last - first + 1``.
WINDOW_TOLERANCE_STEPS = 5
WINDOW_TOLERANCE_FRACTION = 0.05


class ConfoundedComparisonWarning(UserWarning):
    """More than one major variable differs between the compared runs."""


def _pick(extra: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any] | None:
    found = {k: extra[k] for k in keys if k in extra}
    return found or None


def major_variables(run: Run | Accounting, *, step_range: tuple[int, int] | None = None) -> dict[str, Any]:
    """The values of the major variables for one run (``None`` where the run does not say).

    ``window`` is the steady-state window's ``(first_step, last_step)``, as detected by
    :func:`~mfu_toolkit.analysis.account`, or within ``step_range=(first, last)`` when given
    (keyword-only, passed to ``account``). An :class:`~mfu_toolkit.analysis.accounting.Accounting`
    is used as it is (``step_range`` given with one raises ``TypeError``: the window is already chosen).
    """
    acc = accounted(run, step_range=step_range)
    run = acc.run
    m = run.meta
    extra = m.extra or {}
    recompute: Any = _pick(extra, _RECOMPUTE_KEYS)
    if recompute is None and m.hardware_flops_per_step and m.model_flops_per_step:
        recompute = round(float(m.hardware_flops_per_step) / float(m.model_flops_per_step), 4)
    par = _pick(extra, _PARALLEL_KEYS) or {}
    if m.n_accelerators:
        par = {"n_accelerators": int(m.n_accelerators), **par}
    model: dict[str, Any] = {}
    for k in ("model_flops_per_sample", "model_flops_per_token", "seq_len"):
        v = getattr(m, k)
        if v is not None:
            model[k] = float(f"{float(v):.6g}")
    model.update(_pick(extra, _MODEL_KEYS) or {})
    window = (acc.window.first_step, acc.window.last_step) if acc.window.n_steps else None
    return {
        "global_batch": m.global_batch,
        "precision": m.dtype,
        "recomputation": recompute,
        "parallelism": par or None,
        "model_config": model or None,
        "data_range": _pick(extra, _DATA_KEYS),
        "window": window,
    }


@dataclass(frozen=True)
class Comparison:
    """Two runs side by side: the metric table, the major variables and the warning if any."""

    table: pd.DataFrame
    variables: pd.DataFrame
    differing: list[str]
    warning: str | None
    names: tuple[str, str] = field(default=("a", "b"))

    def lines(self) -> list[str]:
        out = [f"Differing major variables: {', '.join(self.differing) or 'none'}"]
        if self.warning:
            out.append("WARNING: " + self.warning)
        return out


def same_window(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Whether two steady-state windows ``(first_step, last_step)`` are the same, within tolerance.

    Same when ``|first_a - first_b|`` and ``|last_a - last_b|`` are both at most
    ``max(WINDOW_TOLERANCE_STEPS, WINDOW_TOLERANCE_FRACTION × L)`` where ``L`` is the length
    (``last - first + 1``) of the longer window: 5 steps for windows up to 100 steps long, 5 % of
    the window beyond that. A warm-up detection that ends two steps later is not a different
    window; a window that starts after a long warm-up or stops at half the run is.
    """
    (fa, la), (fb, lb) = (tuple(int(v) for v in a), tuple(int(v) for v in b))
    longer = max(la - fa + 1, lb - fb + 1)
    tol = max(float(WINDOW_TOLERANCE_STEPS), WINDOW_TOLERANCE_FRACTION * longer)
    return abs(fa - fb) <= tol and abs(la - lb) <= tol


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b


def compare(
    run_a: Run,
    run_b: Run,
    *,
    names: tuple[str, str] = ("a", "b"),
    warn: bool = True,
    step_range: tuple[int, int] | None = None,
) -> Comparison:
    """Scorecards of two runs side by side, with ``ratio`` = b / a, and a confounding check.

    ``variables`` lists each major variable with both values and ``status`` (``same``,
    ``differs`` or ``unknown`` when either run does not record it). When more than one differs,
    ``warning`` explains why the comparison is confounded (and, with ``warn=True``, a
    :class:`ConfoundedComparisonWarning` is issued).

    The ``window`` variable is compared with a tolerance (:func:`same_window`): first and last
    steady-state steps each within ``max(5 steps, 5 % of the longer window)``. With
    ``step_range=(first, last)`` both runs are analysed over those trainer steps only (passed to
    :func:`~mfu_toolkit.analysis.account`), so the steady-state metrics and the window come from
    the same steps in both runs by construction.
    """
    for p, r in (("run_a", run_a), ("run_b", run_b)):
        if not isinstance(r, Run):
            raise TypeError(f"{p} must be a Run; got {type(r).__name__}")
    if not (isinstance(names, tuple) and len(names) == 2 and all(isinstance(n, str) for n in names)
            and names[0] != names[1]):
        raise ValueError(f"names must be a pair of two different strings; got {names!r}")
    na, nb = names
    acc_a = account(run_a, step_range=step_range)
    acc_b = account(run_b, step_range=step_range)
    sa = scorecard(acc_a)
    sb = scorecard(acc_b)
    t = sa[["family", "metric", "unit", "value"]].rename(columns={"value": na})
    t = t.merge(sb[["family", "metric", "value"]].rename(columns={"value": nb}), on=["family", "metric"], how="outer")
    a_v = t[na].to_numpy(float)
    b_v = t[nb].to_numpy(float)
    t["ratio"] = np.divide(b_v, a_v, out=np.full(len(t), np.nan), where=np.isfinite(a_v) & (a_v != 0))
    va, vb = major_variables(acc_a), major_variables(acc_b)
    rows = []
    differing = []
    for k in MAJOR_VARIABLES:
        a, b = va[k], vb[k]
        if a is None or b is None:
            status = "unknown"
        elif same_window(a, b) if k == "window" else _same(a, b):
            status = "same"
        else:
            status = "differs"
            differing.append(k)
        rows.append({"variable": k, na: a, nb: b, "status": status})
    variables = pd.DataFrame(rows)
    msg = None
    if len(differing) > 1:
        msg = (
            f"{len(differing)} major variables differ ({', '.join(differing)}): a change in MFU or "
            "throughput cannot be attributed to any one of them. Change one thing at a time."
        )
        if warn:
            warnings.warn(msg, ConfoundedComparisonWarning, stacklevel=2)
    return Comparison(t, variables, differing, msg, (na, nb))
