"""Downtime of a run with restarts: the resiliency library's goodput figure, reproduced.

:func:`goodput_like_library` computes the figure of Google's AI-Hypercomputer resiliency library
(``resiliency/goodput_measure/calculator.py``, ``GoodputCalculator.calculate_goodput``, read at
AI-Hypercomputer/resiliency@ef69c85) from a Run, with its parts: job starts (runs of consecutive
``job_started`` lines, one attempt each as the ``gpu_goodput`` loader reads them), checkpoints loaded (of a
step above 0) and saved, the smallest loaded step, the largest saved step, their difference times the
reference step time (effective computation) over the total runtime (first event to last: the Run's wall
time). Its rule, kept: no goodput without a loaded checkpoint, a saved step above 0 and a positive step
difference. The waterfall (:func:`~mfu_toolkit.analysis.breakdown`) splits the same wall time by cause;
with the loader's ``reference_step_s`` its ``ideal_compute`` is the library's effective computation.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from ..run import Run

__all__ = ["LibraryGoodput", "goodput_like_library"]

_STEP = re.compile(r"\bstep (\d+)\b")


@dataclass(frozen=True)
class LibraryGoodput:
    """The library's goodput (``goodput_pct``, a percentage as it prints it) and its parts; ``reason`` says
    why it is 0 where it is."""

    reference_step_s: float
    job_starts: int
    checkpoints_loaded: int
    checkpoints_saved: int
    min_loaded_step: int | None
    max_saved_step: int | None
    step_diff: int | None
    effective_s: float
    total_runtime_s: float
    goodput_pct: float
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def lines(self) -> list[str]:
        """The figure and its parts, one per line."""
        out = [f"goodput {self.goodput_pct:.5f} % (the resiliency library's rule, reference step "
               f"{self.reference_step_s:g} s)",
               f"job starts {self.job_starts}, checkpoints loaded {self.checkpoints_loaded}, saved "
               f"{self.checkpoints_saved}",
               f"min loaded step {self.min_loaded_step}, max saved step {self.max_saved_step}, step diff "
               f"{self.step_diff}",
               f"effective computation {self.effective_s:,.6g} s of {self.total_runtime_s:,.6f} s total runtime"]
        return out + ([f"0 because {self.reason}"] if self.reason else [])


def _checkpoints(run: Run) -> pd.DataFrame:
    """``kind`` (load/save) and ``step`` per checkpoint: the loader's ``checkpoints`` table, else the
    checkpoint events whose detail names ``step N``."""
    table = run.tables.get("checkpoints")
    if table is not None and {"kind", "step"} <= set(table.columns):
        return table[["kind", "step"]]
    ev = run.events[run.events["kind"].isin(["checkpoint_load", "checkpoint_save"])]
    steps = ev["detail"].astype(str).str.extract(_STEP, expand=False)
    kind = ev["kind"].map({"checkpoint_load": "load", "checkpoint_save": "save"})
    out = pd.DataFrame({"kind": kind.to_numpy(), "step": pd.to_numeric(steps).to_numpy()})
    return out.dropna()


def _job_starts(run: Run) -> int:
    starts = run.tables.get("starts")
    if starts is not None:
        return len(starts)
    return int(run.events["kind"].isin(["init", "restart"]).groupby(run.events["attempt"]).any().sum())


def goodput_like_library(run: Run, reference_step_s: float) -> LibraryGoodput:
    """The resiliency library's goodput of ``run`` at ``reference_step_s`` seconds per step, with its parts.

    ``(max saved step - min loaded step) * reference_step_s / total runtime * 100``, as
    ``GoodputCalculator.calculate_goodput`` computes it (module docstring).
    """
    if not isinstance(run, Run):
        raise TypeError(f"run must be a mfu_toolkit.run.Run; got {type(run).__name__}")
    ref = float(reference_step_s)
    if not (math.isfinite(ref) and ref > 0):
        raise ValueError(f"reference_step_s must be a finite number of seconds > 0; got {reference_step_s!r}")
    ck = _checkpoints(run)
    loads = ck.loc[ck["kind"] == "load", "step"].astype(int)
    saves = ck.loc[ck["kind"] == "save", "step"].astype(int)
    lo = int(loads.min()) if len(loads) else None
    hi = int(saves.max()) if len(saves) and int(saves.max()) > 0 else None
    total = run.t1 - run.t0
    diff = hi - lo if lo is not None and hi is not None else None
    effective = diff * ref if diff is not None and diff > 0 else 0.0
    reason = ("no checkpoint was loaded" if lo is None else "no checkpoint of a step above 0 was saved"
              if hi is None else "the largest saved step is not above the smallest loaded one" if not effective
              else "the run has no wall time" if total <= 0 else "")
    return LibraryGoodput(ref, _job_starts(run), int((loads > 0).sum()), len(saves), lo, hi, diff, effective,
                          total, effective / total * 100 if not reason else 0.0, reason)
