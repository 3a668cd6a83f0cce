"""SLURM ``sacct`` output: job-level submit/start/end, state and requeues.

Reads the default fixed-width table (header, a line of dashes that gives the column widths,
records) and the ``--parsable``/``--parsable2`` (``|``-separated) forms. Column names are
matched case-insensitively, so any ``--format`` works; the default format has no times, and
then only the ``jobs`` table is filled (``sacct --format=JobID,JobName,State,ExitCode,Submit,
Eligible,Start,End,Elapsed,AllocTRES --duplicates`` gives the times and the requeued records).

What it maps to a :class:`~mfu_toolkit.run.Run` (no step rows: sacct knows no training steps):

- every record goes to the ``jobs`` table (``job_id``, ``job_step`` — ``""`` for the allocation,
  ``batch``, ``extern``, ``0``, ... —, name, state, exit code, times in seconds, GPUs);
- allocation records of one job with a known start are its attempts, in start order (a requeued
  job has one per launch with ``--duplicates``); each has a ``queue`` event (eligible, or submit,
  to start) where both times are known; an attempt that ended in a failure state (``FAILED``,
  ``NODE_FAIL``, ``TIMEOUT``, ``PREEMPTED``, ``REQUEUED``, ``OUT_OF_MEMORY``, ``BOOT_FAIL``,
  ``DEADLINE``, ``CANCELLED``) gets a ``failure`` event from its end until the next attempt is
  eligible (or starts; zero length for the last one); later attempts start with a ``restart``
  event;
- ``AllocTRES`` ``gres/gpu=N`` of the allocation fills ``n_accelerators``.

Times are the cluster's local time (no zone); only differences are used.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader
from ..values import timestamp

NAME = "sacct"


@dataclass(frozen=True)
class Options:
    """The sacct format takes no options besides the RunMeta keywords."""


_FAIL_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT", "PREEMPTED", "REQUEUED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                "CANCELLED")
_JOBID_RE = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.(\S+))?$")
_GPU_RE = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_ELAPSED_RE = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+(?:\.\d+)?)$")
_NO_TIME = {"", "unknown", "none", "n/a"}


def sniff(path: Path, head: bytes) -> float:
    """0.9 when the first line is a sacct header (``JobID ...``) over dashes or ``|`` fields."""
    if Path(path).is_dir() or not head:
        return 0.0
    lines = [ln for ln in head.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    if len(lines) < 2:
        return 0.0
    first = lines[0].strip().lower()
    if not first.startswith("jobid"):
        return 0.0
    if set(lines[1].strip()) <= {"-", " "} and "-" in lines[1]:
        return 0.9
    if "|" in first:
        return 0.9
    return 0.0


def _parse_elapsed(text: str) -> float:
    m = _ELAPSED_RE.match(text.strip())
    if not m:
        return math.nan
    d, h, mi, s = m.groups()
    return int(d or 0) * 86400 + int(h or 0) * 3600 + int(mi) * 60 + float(s)


def _spans(dashes: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"-+", dashes)]


def _header(reader: Reader) -> tuple[list[str], list[tuple[int, int]], bool, list[tuple[int, str]]]:
    """Column names, fixed-width spans (empty for ``|`` output), parsable?, and the record lines."""
    raw = [(ln, t) for ln, t in reader.lines() if t.strip()]
    if not raw:
        reader.fail("empty file: nothing to load")
    hline, header_text = raw[0]
    if not header_text.strip().lower().startswith("jobid"):
        reader.fail("no sacct header line (expected it to start with 'JobID')", line=hline)
    parsable = "|" in header_text
    body = raw[1:]
    if parsable:
        names = [h.strip().lower() for h in header_text.strip().rstrip("|").split("|")]
        spans: list[tuple[int, int]] = []
    else:
        if not body or not (set(body[0][1].strip()) <= {"-", " "} and "-" in body[0][1]):
            reader.fail("fixed-width sacct output needs the line of dashes under the header", line=hline + 1)
        spans = _spans(body[0][1])
        names = [header_text[a:b].strip().lower() or header_text[a:].split()[0].lower() for a, b in spans]
        body = body[1:]
    if "jobid" not in names:
        reader.fail("header has no JobID column", line=hline, field="JobID")
    return names, spans, parsable, body


def _cells(text: str, names: list[str], spans: list[tuple[int, int]], parsable: bool) -> list[str] | None:
    if not parsable:
        return [text[a:b] if i < len(spans) - 1 else text[a:] for i, (a, b) in enumerate(spans)]
    parts = text.split("|")
    if len(parts) == len(names) + 1 and not parts[-1].strip():
        parts = parts[:-1]  # --parsable ends every line with '|'
    return parts if len(parts) == len(names) else None


def _record(reader: Reader, ln: int, text: str, rec: dict[str, str]) -> dict[str, Any] | None:
    """One job record as a ``jobs`` row (absolute times in ``*_abs``), or None when it is bad."""
    m = _JOBID_RE.match(rec.get("jobid", ""))
    if m is None:
        reader.bad("JobID is not a SLURM job id", line=ln, field="JobID", example=text)
        return None
    row: dict[str, Any] = {
        "line": ln,
        "job_id": m.group(1) + (f"_{m.group(2)}" if m.group(2) else ""),
        "job_step": m.group(4) or "",
        "name": rec.get("jobname", ""),
        "state": rec.get("state", ""),
        "exit_code": rec.get("exitcode", ""),
    }
    for col in ("submit", "eligible", "start", "end"):
        if col in rec:
            t = None  # Unknown, None, blank: no time
            if rec[col].strip().lower() not in _NO_TIME:
                t = timestamp(rec[col])  # YYYY-MM-DDTHH:MM:SS, naive local time (read as UTC)
                if t is None:
                    reader.bad(f"unreadable {col} time", line=ln, field=col.capitalize(), example=rec[col])
            row[f"{col}_abs"] = t
    if "elapsed" in rec:
        row["elapsed_s"] = _parse_elapsed(rec["elapsed"])
    for col in ("partition", "account", "alloccpus", "nnodes", "alloctres"):
        if col in rec:
            row[col] = rec[col]
    if "alloctres" in rec and (g := _GPU_RE.search(rec["alloctres"])):
        row["gpus"] = rules.as_count(g.group(1))
        if row["gpus"] is None:
            reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="AllocTRES", example=rec["alloctres"])
    if row.get("start_abs") is not None and row.get("end_abs") is not None and row["end_abs"] < row["start_abs"]:
        reader.bad(rules.end_before_start("job"), line=ln, field="End", example=text)
        return None
    return row


def _records(reader: Reader) -> list[dict[str, Any]]:
    names, spans, parsable, body = _header(reader)
    records: list[dict[str, Any]] = []
    for ln, text in body:
        reader.report.lines_read += 1
        parts = _cells(text, names, spans, parsable)
        if parts is None:
            reader.bad(f"{rules.WRONG_FIELD_COUNT} (expected {len(names)})", line=ln, example=text)
            continue
        row = _record(reader, ln, text, {n: v.strip() for n, v in zip(names, parts, strict=False)})
        if row is not None:
            records.append(row)
    if not records:
        reader.fail("no sacct records")
    if any(r["job_step"].endswith("+") or r["name"].endswith("+") for r in records):
        reader.note("some names or ids end in '+': sacct truncated them to the column width (use --format=JobName%40)")
    return records


def _attempt_events(timed: list[dict[str, Any]], t0: float) -> list[dict[str, Any]]:
    """queue / restart / failure events of the allocations with a known start, in start order."""
    events: list[dict[str, Any]] = []
    for a, r in enumerate(timed):
        r["attempt"] = a
        queued_from = r.get("eligible_abs") or (r.get("submit_abs") if a == 0 else None)
        if queued_from is not None and queued_from <= r["start_abs"]:
            events.append({"kind": "queue", "start_s": queued_from - t0, "end_s": r["start_abs"] - t0, "attempt": a,
                           "detail": f"job {r['job_id']}: eligible/submit to start"})
        if a > 0:
            events.append({"kind": "restart", "start_s": r["start_abs"] - t0, "end_s": r["start_abs"] - t0,
                           "attempt": a, "detail": f"job {r['job_id']} started again ({r['state']})"})
        state = r["state"].split()[0].upper() if r["state"] else ""
        if state in _FAIL_STATES and r.get("end_abs") is not None:
            nxt = r["end_abs"]
            if a + 1 < len(timed):  # down until the next attempt queues (or starts)
                n_r = timed[a + 1]
                nxt = min(n_r.get("eligible_abs") or n_r["start_abs"], n_r["start_abs"])
            end = max(nxt, r["end_abs"])
            events.append({"kind": "failure", "start_s": r["end_abs"] - t0, "end_s": end - t0, "attempt": a,
                           "detail": f"job {r['job_id']} {r['state']} (exit {r['exit_code']})"})
    return events


def _jobs_table(records: list[dict[str, Any]], t0: float) -> pd.DataFrame:
    jobs = pd.DataFrame(records)
    for col in ("submit", "eligible", "start", "end"):
        if f"{col}_abs" in jobs:
            jobs[f"{col}_s"] = pd.to_numeric(jobs.pop(f"{col}_abs"), errors="coerce") - t0
    if "attempt" not in jobs:
        jobs["attempt"] = pd.NA
    jobs["attempt"] = jobs["attempt"].astype("Int64")
    return jobs


def parse(reader: Reader, options: Options) -> Parsed:
    """Read sacct output; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the sacct loader reads one text file")
    records = _records(reader)
    allocs = [r for r in records if r["job_step"] == ""]
    timed = sorted((r for r in allocs if r.get("start_abs") is not None), key=lambda r: r["start_abs"])
    if len({r["job_id"] for r in allocs}) > 1:
        reader.note(f"{len({r['job_id'] for r in allocs})} different jobs in one file: "
                    "attempts are numbered across them in start order")
    if allocs and not timed:
        reader.note("no Start/End columns (or all Unknown): job-level times unavailable; only the jobs table is filled")
    abs_times = [r[k] for r in records for k in ("submit_abs", "eligible_abs", "start_abs", "end_abs")
                 if r.get(k) is not None]
    t0 = min(abs_times) if abs_times else 0.0
    events = _attempt_events(timed, t0)
    out = Parsed(events=events, tables={"jobs": _jobs_table(records, t0)}, timing="exact",
                 time_unit="epoch_s" if abs_times else None)
    first = allocs[0] if allocs else records[0]
    if first.get("name"):
        out.meta["name"] = first["name"]
    gpus = [r for r in allocs if r.get("gpus")]
    if gpus and len({r["gpus"] for r in gpus}) == 1:
        out.fact("n_accelerators", gpus[0]["gpus"], f"{reader.name}:{gpus[0]['line']}", gpus[0].get("alloctres", ""))
    out.extra.update({
        "job_ids": sorted({r["job_id"] for r in records}),
        "states": [r["state"] for r in allocs],
        "exit_codes": [r["exit_code"] for r in allocs],
    })
    if abs_times:
        out.extra["t0_wallclock"] = (datetime(1970, 1, 1) + timedelta(seconds=t0)).isoformat(sep=" ")
        out.extra["t0_timezone"] = "unknown (cluster local time)"
    return out


load = loader_for(NAME)
