"""The answer as JSON-able data: codes and fields beside the phrased text (NaN and infinities as None)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.answer import Answer

__all__ = ["answer_dict", "jsonable"]


def answer_dict(answer: Answer) -> dict[str, Any]:
    """The answer as JSON-able data (NaN and infinities as None)."""
    doc = {
        "title": answer.title, "log_name": answer.log_name, "date": answer.date, "interface": answer.interface,
        "conflict": answer.conflict, "headline": answer.headline, "losses": list(answer.losses),
        "stragglers": answer.stragglers,
        "checkpoint": answer.checkpoint, "checks": [c.to_dict() for c in answer.checks],
        "facts": list(answer.facts), "missing": list(answer.missing), "missing_fields": list(answer.missing_fields),
        "breakdown": answer.breakdown.to_dict(orient="records"),
        "scorecard": answer.scorecard.to_dict(orient="records"),
        "window": answer.window, "load": answer.load, "holds": answer.holds, "summary": answer.summary,
    }
    return jsonable(doc)


def jsonable(v: Any) -> Any:
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, np.generic):
        return jsonable(v.item())
    if isinstance(v, pd.Timestamp):
        return v.isoformat()
    return v
