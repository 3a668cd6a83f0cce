"""The answer as JSON-able data: codes and fields beside the phrased text (NaN and infinities as None)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from ..analysis.answer import Answer
from .spoken import advice_text, denominator_sources, missing_text, point_text, spoken_summary, where_text
from .vocabulary import check_interface

__all__ = ["answer_dict", "jsonable"]


def answer_dict(answer: Answer, *, interface: str = "python") -> dict[str, Any]:
    """The answer as JSON-able data (NaN and infinities as None): every check and missing fact
    with its ``code``/``field``, the text phrased for ``interface`` beside it."""
    check_interface(interface)
    h = answer.headline
    headline = {**h, "reasons": {k: point_text(v, interface) for k, v in h["reasons"].items()},
                "denominator": {**h["denominator"], "sources": denominator_sources(answer.facts, interface)}}
    missing = [missing_text(m, interface) for m in answer.missing]
    checkpoint = None if answer.checkpoint is None else {**answer.checkpoint,
                                                         "advice": advice_text(answer.checkpoint, interface)}
    doc = {
        "title": answer.title, "log_name": answer.log_name, "date": answer.date, "interface": interface,
        "conflict": answer.conflict, "headline": headline, "losses": list(answer.losses),
        "stragglers": answer.stragglers, "checkpoint": checkpoint,
        "checks": [{**c.to_dict(), "message": point_text(c.message, interface)} for c in answer.checks],
        "facts": [{**f, "where": where_text(f, interface)} for f in answer.facts], "missing": missing,
        "missing_fields": [{**m, "text": t} for m, t in zip(answer.missing, missing, strict=True)],
        "breakdown": answer.breakdown.to_dict(orient="records"),
        "scorecard": answer.scorecard.assign(note=[point_text(n, interface) for n in answer.scorecard["note"]])
        .to_dict(orient="records"),
        "window": answer.window, "load": answer.load, "holds": answer.holds,
        "summary": spoken_summary(answer.summary, interface),
        "hang": list(answer.hang),
        "communication": _spoken_communication(answer.communication, interface),
        "exposed_comm": dict(answer.breakdown.attrs.get("exposed_comm") or {}),
        "downtime": list(answer.downtime),
        "recsys": _spoken_recsys(answer.recsys, interface),
    }
    return jsonable(doc)


def _spoken_communication(comm: dict[str, Any], interface: str) -> dict[str, Any]:
    """The communication part with each collective's reason phrased for ``interface`` (a request for the
    link asks for ``--nic NAME``, ``NIC=NAME`` or ``nic=NAME``)."""
    if not comm.get("collectives"):
        return comm
    rows = [{**r, "reason": point_text(r.get("reason"), interface)} for r in comm["collectives"]]
    return {**comm, "collectives": rows}


def _spoken_recsys(recsys: dict[str, Any], interface: str) -> dict[str, Any]:
    """The recommendation part with the all-to-all's reason phrased for ``interface`` (a request for the link
    asks for ``--link NAME``, ``LINK=NAME`` or ``link=NAME``)."""
    a2a = recsys.get("alltoall") if recsys else None
    if not a2a or not a2a.get("reason"):
        return recsys
    return {**recsys, "alltoall": {**a2a, "reason": point_text(a2a["reason"], interface)}}


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
