"""SLURM ``sacct`` output, as text or as ``sacct --json``: jobs, steps, states, exit codes and requeues.

Two input forms of one format, read into the same kind of Run:

- **Text**: the default fixed-width table (header, a line of dashes that gives the column widths,
  records) and the ``--parsable``/``--parsable2`` (``|``-separated) forms. Column names are matched
  case-insensitively, so any ``--format`` works; the default format has no times, and then only the
  ``jobs`` table is filled (``sacct --format=JobID,JobName,State,ExitCode,Submit,Eligible,Start,End,
  Elapsed,AllocTRES --duplicates`` gives the times and the requeued records). Times are the cluster's
  local time (no zone); only differences are used.
- **JSON** (``sacct --json``, Slurm 23.02 and later; ``data_parser/v0.0.39`` to ``v0.0.4x``, the schema of
  https://slurm.schedmd.com/rest_api.html and of ``src/plugins/data_parser/v0.0.NN/parsers.c``,
  ``PARSER_ARRAY(JOB)`` and ``PARSER_ARRAY(STEP)``): ``jobs[]``, each with ``steps[]``. Times are epoch
  seconds (``time.submission``, ``eligible``, ``start``, ``end``; 0 is "not yet"), ``time.elapsed`` and
  ``suspended`` seconds, ``time.limit`` minutes. Numbers come plain or in Slurm's ``{set, infinite,
  number}`` wrapper (v0.0.39 on some fields, v0.0.40+ on more, e.g. a step's ``time.start``), or as
  ``null``/``"Infinity"`` in the complex mode; unset, negative and ``NO_VAL``/``INFINITE`` sentinels are
  missing (``required.memory`` holds ``NO_VAL64`` with a flag bit; it is not read). ``state.current`` (and a
  step's ``state``) is a string in v0.0.39 and a list (a base state plus flags such as ``REQUEUED``) from
  v0.0.40; ``exit_code.status`` is one string in the released forms (a list in v0.0.40 builds before Slurm
  commit 4870e3c, 2023-08, read too), ``signal`` ``{signal_id, name}`` in v0.0.39 and ``{id, name}`` later;
  a step's ``step.id`` is ``{job_id, step_id}`` in v0.0.39 and ``"<job>.<step>"`` later; ``meta.plugins``
  became ``meta.plugin`` and ``meta.Slurm`` ``meta.slurm``. In v0.0.39 ``exit_code`` reads ``SUCCESS``/0 for
  every process that exited normally, whatever its code (``DUMP_FUNC(JOB_EXIT_CODE)``): there the state is
  the evidence of a failure. Lines before or after the JSON document (a shell prompt, a warning on stderr)
  are counted and passed over.

What it maps to a :class:`~mfu_toolkit.run.Run` (no step rows: sacct knows no training steps):

- every job and job step goes to the ``jobs`` table (``job_id`` as sacct prints it, ``12078642_6`` for an
  array task; ``job_step`` — ``""`` for the allocation, ``batch``, ``extern``, ``0``, ... —, name, state,
  exit code ``return:signal``, times in seconds from the first time in the file, elapsed and, from JSON,
  ``suspended_s``, ``time_limit_s``, nodes, tasks, CPUs, TRES, GPUs);
- a record's start is ``end - elapsed - suspended`` where the two disagree by more than a second (Slurm's
  accounting computes ``elapsed = end - start - suspended``, ``as_mysql_jobacct_process.c``; a record whose
  start was reset keeps another), the start written kept as ``start_stated_s`` and a note saying so;
- allocation records of one job with a known start are its attempts, in start order (a requeued
  job has one per launch with ``--duplicates``); each has a ``queue`` event (eligible, or submit,
  to start) where both times are known; an attempt that ended in a failure state (``FAILED``,
  ``NODE_FAIL``, ``TIMEOUT``, ``PREEMPTED``, ``REQUEUED``, ``OUT_OF_MEMORY``, ``BOOT_FAIL``,
  ``DEADLINE``, ``CANCELLED``) or with a non-zero exit code gets a ``failure`` event from its end until
  the next attempt is eligible (or starts; zero length for the last one); later attempts start with a
  ``restart`` event; the ``detail`` names the job, its state and exit code;
- a step that failed inside an allocation that did not (the script went on) gets a ``failure`` event from
  its end to the next numbered step's start, and that step a ``restart`` event (a relaunch inside the
  allocation);
- the runs of jobs and steps stay in the ``jobs`` table, not in the events: an event covering a whole
  allocation would hide the time inside it that nothing explains;
- facts: ``n_accelerators`` from the allocations' ``gres/gpu`` TRES (``AllocTRES`` text, ``tres.allocated``
  JSON) where they agree, ``accelerator`` from a typed ``gres/gpu:<type>``, ``n_nodes`` from the allocation
  (``NNodes``, ``allocation_nodes``), ``n_ranks`` from the tasks of the largest numbered step where they
  equal the GPUs (one task per GPU; a launcher per node, as ``torchrun`` under ``srun``, states no world
  size); the node lists, CPUs and time limit go to ``extra``.
"""

from __future__ import annotations

import json
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
from ..values import duration, number, timestamp

NAME = "sacct"
BAD_JOB_ID = "JobID is not a SLURM job id"
UNREADABLE_TIME = "unreadable time (left missing, record kept)"
OUTSIDE_JSON = "line outside the JSON document"


@dataclass(frozen=True)
class Options:
    """The sacct format takes no options besides the RunMeta keywords."""


_FAIL_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT", "PREEMPTED", "REQUEUED", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE",
                "CANCELLED")
_JOBID_RE = re.compile(r"^(\d+)(?:_(\d+|\[[^\]]*\]))?(?:\+(\d+))?(?:\.(\S+))?$")
_GPU_RE = re.compile(r"gres/gpu(?::[^=,]+)?=(\d+)")
_NO_TIME = {"", "unknown", "none", "n/a"}
_JSON_MARK = re.compile(rb'"derived_exit_code"|"command"\s*:\s*\[\s*"sacct"')
_TOKENS = re.compile(r"[\s,]+")
_BAD_EXIT = {"ERROR", "SIGNALED", "CORE_DUMPED"}


def sniff(path: Path, head: bytes) -> float:
    """0.9 when the first line is a sacct header (``JobID ...``) over dashes or ``|`` fields, or the head
    holds a ``"jobs"`` list with a mark only ``sacct --json`` writes (``derived_exit_code``, its command)."""
    if Path(path).is_dir() or not head:
        return 0.0
    if b'"jobs"' in head and _JSON_MARK.search(head):
        return 0.9
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
    got = duration(text)  # [D-][HH:]MM:SS, as sacct prints Elapsed
    return math.nan if got is None else got


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
        reader.bad(BAD_JOB_ID, line=ln, field="JobID", example=text)
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
                    reader.bad(UNREADABLE_TIME, line=ln, field=col.capitalize(), example=rec[col], detail=col)
            row[f"{col}_abs"] = t
    if "elapsed" in rec:
        row["elapsed_s"] = _parse_elapsed(rec["elapsed"])
    for col in ("partition", "account", "alloccpus", "nnodes", "ntasks", "alloctres"):
        if col in rec:
            row[col] = rec[col]
    if "alloctres" in rec and (g := _GPU_RE.search(rec["alloctres"])):
        row["gpus"] = rules.as_count(g.group(1))
        if row["gpus"] is None:
            reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="AllocTRES", example=rec["alloctres"])
    if row.get("start_abs") is not None and row.get("end_abs") is not None and row["end_abs"] < row["start_abs"]:
        reader.bad(rules.END_BEFORE_START, line=ln, field="End", example=text, detail="job")
        return None
    return row


def _records(reader: Reader) -> list[dict[str, Any]]:
    names, spans, parsable, body = _header(reader)
    records: list[dict[str, Any]] = []
    for ln, text in body:
        reader.report.lines_read += 1
        parts = _cells(text, names, spans, parsable)
        if parts is None:
            reader.bad(rules.WRONG_FIELD_COUNT, line=ln, example=text, detail=f"expected {len(names)}")
            continue
        row = _record(reader, ln, text, {n: v.strip() for n, v in zip(names, parts, strict=False)})
        if row is not None:
            records.append(row)
    if not records:
        reader.fail("no sacct records")
    if any(r["job_step"].endswith("+") or r["name"].endswith("+") for r in records):
        reader.note("some names or ids end in '+': sacct truncated them to the column width (use --format=JobName%40)")
    return records


# --- sacct --json ------------------------------------------------------------------------------------------------
_NO_VAL = 0xFFFFFFFE  # Slurm's NO_VAL; INFINITE (0xFFFFFFFF) and the 64-bit sentinels are larger still


def _num(value: Any) -> float | None:
    """A Slurm number: plain, ``{set, infinite, number}``, ``null`` or ``"Infinity"``; unset, negative and
    sentinel values are None, an infinite one ``math.inf``."""
    if isinstance(value, dict):
        if value.get("infinite") is True:
            return math.inf
        if value.get("set") is False:
            return None
        value = value.get("number")
    if isinstance(value, str) and value.strip().lower() in ("infinity", "unlimited"):
        return math.inf
    x = number(value, text=False)
    return None if x is None or x < 0 or x >= _NO_VAL else x


def _time(value: Any) -> float | None:
    """An epoch-seconds time; 0 ("not yet") and infinite are None."""
    x = _num(value)
    return x if x and math.isfinite(x) else None


def _words(value: Any) -> str:
    """A state or status: a string (v0.0.39) or a list of strings (v0.0.40+), as ``A,B``."""
    if isinstance(value, list):
        return ",".join(str(v) for v in value if isinstance(v, (str, int)))
    return str(value) if isinstance(value, (str, int)) else ""


def _exit(value: Any) -> tuple[str, str, bool]:
    """``(return:signal, status, non-zero?)`` of an ``exit_code`` object (``signal.id`` from v0.0.40,
    ``signal.signal_id`` in v0.0.39)."""
    if not isinstance(value, dict):
        return "", "", False
    status = _words(value.get("status"))
    sig = value.get("signal")
    sig_id = _num(sig.get("id", sig.get("signal_id"))) if isinstance(sig, dict) else None
    rc = _num(value.get("return_code"))
    code = [int(x) if x is not None and math.isfinite(x) else 0 for x in (rc, sig_id)]
    return f"{code[0]}:{code[1]}", status, any(code) or bool(set(status.split(",")) & _BAD_EXIT)


def _tres(value: Any) -> tuple[str, int | None, str | None]:
    """A TRES list (``[{type, name, count}]``) as sacct's text (``cpu=10,gres/gpu=8``), its GPUs (``gres/gpu``,
    else the sum of the typed ``gres/gpu:<type>``) and the GPU type where one is named."""
    items = [t for t in value if isinstance(t, dict)] if isinstance(value, list) else []
    parts, plain, typed = [], None, {}
    for t in items:
        kind, name, count = str(t.get("type") or ""), str(t.get("name") or ""), _num(t.get("count"))
        if count is None or not math.isfinite(count):
            continue
        parts.append(f"{kind}/{name}={int(count)}" if name else f"{kind}={int(count)}")
        if kind == "gres" and name == "gpu":
            plain = int(count)
        elif kind == "gres" and name.startswith("gpu:"):
            typed[name[4:]] = int(count)
    gpus = plain if plain is not None else (sum(typed.values()) if typed else None)
    return ",".join(parts), (gpus or None), (next(iter(typed)) if len(typed) == 1 else None)


def _common(row: dict[str, Any], rec: dict[str, Any]) -> dict[str, Any]:
    """The fields a job and a step share: state, exit code, times, nodes, TRES."""
    t = rec.get("time") if isinstance(rec.get("time"), dict) else {}
    code, status, bad = _exit(rec.get("exit_code"))
    tres = rec.get("tres") if isinstance(rec.get("tres"), dict) else {}
    text, gpus, gpu_type = _tres(tres.get("allocated"))
    row.update({"exit_code": code, "exit_status": status, "exit_bad": bad, "start_abs": _time(t.get("start")),
                "end_abs": _time(t.get("end")), "elapsed_s": _num(t.get("elapsed")),
                "suspended_s": _num(t.get("suspended")) or 0.0, "alloctres": text, "gpus": gpus, "gpu_type": gpu_type})
    if row["elapsed_s"] is None:
        row["elapsed_s"] = math.nan
    return row


def _job_id(job: dict[str, Any]) -> str | None:
    """The id sacct prints: ``12078642_6`` for an array task, ``77+1`` for a het component, else the job id."""
    jid = _num(job.get("job_id"))
    if jid is None or not math.isfinite(jid):
        return None
    array = job.get("array") if isinstance(job.get("array"), dict) else {}
    het = job.get("het") if isinstance(job.get("het"), dict) else {}
    aj, task = _num(array.get("job_id")), _num(array.get("task_id"))
    hj, off = _num(het.get("job_id")), _num(het.get("job_offset"))
    if aj and task is not None and math.isfinite(task):
        return f"{int(aj)}_{int(task)}"
    if hj and off is not None and math.isfinite(off):
        return f"{int(hj)}+{int(off)}"
    return str(int(jid))


def _job_row(job: dict[str, Any], jid: str, line: int) -> dict[str, Any]:
    """An allocation record of ``jobs[]``."""
    t = job.get("time") if isinstance(job.get("time"), dict) else {}
    req = job.get("required") if isinstance(job.get("required"), dict) else {}
    limit = _num(t.get("limit"))
    row = {"line": line, "job_id": jid, "job_step": "", "name": str(job.get("name") or ""),
           "state": _words((job.get("state") or {}).get("current") if isinstance(job.get("state"), dict) else None),
           "submit_abs": _time(t.get("submission")), "eligible_abs": _time(t.get("eligible"))}
    _common(row, job)
    cpus = next((int(c) for c in [_num(req.get("CPUs"))] if c is not None and math.isfinite(c)), None)
    nodes = _num(job.get("allocation_nodes"))
    row.update({"partition": str(job.get("partition") or ""), "account": str(job.get("account") or ""),
                "alloccpus": cpus, "nnodes": int(nodes) if nodes and math.isfinite(nodes) else None,
                "nodes": str(job.get("nodes") or ""), "cluster": str(job.get("cluster") or ""),
                "time_limit_s": limit * 60.0 if limit is not None else None,
                "db_job_id": int(_num(job["job_id"]) or 0)})
    return row


def _step_row(step: dict[str, Any], jid: str, line: int) -> dict[str, Any] | None:
    """A step record of ``jobs[].steps[]``; None without a step id."""
    ident = step.get("step") if isinstance(step.get("step"), dict) else {}
    sid = ident.get("id")
    name = sid.get("step_id") if isinstance(sid, dict) else (sid.split(".", 1)[-1] if isinstance(sid, str) else None)
    if name is None or isinstance(name, (dict, list, bool)):
        return None
    row = {"line": line, "job_id": jid, "job_step": str(name), "name": str(ident.get("name") or ""),
           "state": _words(step.get("state"))}
    _common(row, step)
    nodes = step.get("nodes") if isinstance(step.get("nodes"), dict) else {}
    tasks = step.get("tasks") if isinstance(step.get("tasks"), dict) else {}
    n_nodes, n_tasks = _num(nodes.get("count")), _num(tasks.get("count"))
    row.update({"nnodes": int(n_nodes) if n_nodes and math.isfinite(n_nodes) else None,
                "ntasks": int(n_tasks) if n_tasks and math.isfinite(n_tasks) else None,
                "nodes": str(nodes.get("range") or "")})
    return row


class _Lines:
    """Line numbers of positions in a text, found going forward (one pass over the text in all)."""

    def __init__(self, text: str, first_line: int) -> None:
        self.text, self.pos, self.line = text, 0, first_line

    def find(self, pattern: str, default: int) -> int:
        m = re.compile(pattern).search(self.text, self.pos)
        if m is None:
            return default
        self.line += self.text.count("\n", self.pos, m.start())
        self.pos = m.start()
        return self.line


def _json_document(reader: Reader) -> tuple[Any, str, int]:
    """The JSON document, its text and the line it starts on; lines before or after it are counted."""
    text = reader.text()
    lines = text.split("\n")
    first = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("{")), None)
    if first is None:
        reader.fail("no JSON document (a line starting with '{') in this sacct --json output")
    for i in range(first):
        if lines[i].strip():
            reader.bad(OUTSIDE_JSON, line=i + 1, example=lines[i][:120])
    start = sum(len(ln) + 1 for ln in lines[:first])
    try:
        doc, end = json.JSONDecoder().raw_decode(text, start + len(lines[first]) - len(lines[first].lstrip()))
    except json.JSONDecodeError as exc:
        reader.fail(f"invalid JSON ({exc.msg})", line=exc.lineno)
    except (RecursionError, ValueError) as exc:
        reader.fail(f"invalid JSON ({type(exc).__name__})")
    tail_line = text.count("\n", 0, end) + 1
    for i, ln in enumerate(text[end:].split("\n")):
        if ln.strip():
            reader.bad(OUTSIDE_JSON, line=tail_line + i, example=ln[:120])
    return doc, text[start:end], first + 1


def _json_records(reader: Reader) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The allocation and step records of ``sacct --json`` output, and what its ``meta`` says."""
    doc, text, first_line = _json_document(reader)
    if not isinstance(doc, dict) or not isinstance(doc.get("jobs"), list):
        reader.fail('not sacct --json output: no "jobs" list at the top level')
    at = _Lines(text, first_line)
    records: list[dict[str, Any]] = []
    for job in doc["jobs"]:
        reader.report.lines_read += 1
        if not isinstance(job, dict):
            reader.bad(rules.NOT_AN_OBJECT, line=at.line, field="jobs[]", example=repr(job)[:120])
            continue
        jid = _job_id(job)
        if jid is None:
            reader.bad(rules.MISSING_FIELD, line=at.line, field="job_id", example=str(job.get("name", ""))[:120])
            continue
        line = at.find(rf'"job_id"\s*:\s*{int(_num(job["job_id"]) or 0)}\b', at.line)
        records.append(_job_row(job, jid, line))
        for step in job.get("steps") if isinstance(job.get("steps"), list) else []:
            reader.report.lines_read += 1
            row = _step_row(step, jid, at.line) if isinstance(step, dict) else None
            if row is None:
                reader.bad(rules.MISSING_FIELD, line=at.line, field="steps[].step.id", example=repr(step)[:120])
                continue
            row["line"] = at.find(rf'"step_id"\s*:\s*"?{re.escape(row["job_step"])}\b|\.{re.escape(row["job_step"])}"',
                                  at.line)
            records.append(row)
    if not records:
        reader.fail("no sacct records (jobs[] is empty)")
    return records, _json_meta(doc)


def _json_meta(doc: dict[str, Any]) -> dict[str, Any]:
    """Parser version, Slurm release and command of the ``meta`` object (strings only, bounded)."""
    meta = doc.get("meta") if isinstance(doc.get("meta"), dict) else {}
    plugins = meta.get("plugins", meta.get("plugin"))  # v0.0.39 "plugins", v0.0.40+ "plugin"
    plugins = plugins if isinstance(plugins, dict) else {}
    slurm = meta.get("Slurm", meta.get("slurm"))
    release = slurm.get("release") if isinstance(slurm, dict) else None
    command = meta.get("command")
    out = {"data_parser": plugins.get("data_parser"), "slurm_release": release,
           "command": " ".join(str(c) for c in command[:64]) if isinstance(command, list) else None}
    return {k: str(v)[:400] for k, v in out.items() if v}


def _failed(r: dict[str, Any]) -> bool:
    """A failure state (``CANCELLED by 0``, ``PENDING,REQUEUED``: any word) or a non-zero exit code."""
    words = set(_TOKENS.split(str(r.get("state", "")).upper()))
    code = [int(c) if c.isdigit() else 0 for c in str(r.get("exit_code", "")).split(":")]
    return bool(words & set(_FAIL_STATES)) or any(code) or r.get("exit_bad", False)


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
        if _failed(r) and r.get("end_abs") is not None:
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
    jobs = jobs.drop(columns=[c for c in ("exit_bad",) if c in jobs])
    for col in ("submit", "eligible", "start", "end", "start_stated"):
        if f"{col}_abs" in jobs:
            jobs[f"{col}_s"] = pd.to_numeric(jobs.pop(f"{col}_abs"), errors="coerce") - t0
    if "attempt" not in jobs:
        jobs["attempt"] = pd.NA
    jobs["attempt"] = jobs["attempt"].astype("Int64")
    return jobs


def _derive_starts(reader: Reader, records: list[dict[str, Any]]) -> None:
    """Start = end - elapsed - suspended where the start written differs by more than a second (or is missing)."""
    moved = []
    for r in records:
        end, elapsed = r.get("end_abs"), r.get("elapsed_s", math.nan)
        if end is None or elapsed is None or not math.isfinite(elapsed):
            continue
        derived = end - elapsed - (r.get("suspended_s") or 0.0)
        if r.get("start_abs") is None or abs(derived - r["start_abs"]) > 1.0:
            r["start_stated_abs"], r["start_abs"] = r.get("start_abs"), derived
            moved.append(r)
    if moved:
        r = moved[0]
        was = ("missing" if r["start_stated_abs"] is None
               else f"{r['end_abs'] - r['start_stated_abs']:,.0f} s before its end")
        reader.note(f"{len(moved)} records: start taken as end - elapsed - suspended (Slurm computes elapsed = end - "
                    f"start - suspended), not the start written (e.g. {r['job_id']}{'.' if r['job_step'] else ''}"
                    f"{r['job_step']} (line {r['line']}): elapsed {r['elapsed_s']:,.0f} s, start written {was})")


def _step_events(records: list[dict[str, Any]], t0: float) -> list[dict[str, Any]]:
    """A failed step inside an allocation that went on: ``failure`` to the next numbered step, which restarts."""
    by_job: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in records:
        if r.get("start_abs") is not None:
            group = by_job.setdefault(r["job_id"], {"allocs": [], "steps": []})
            group["steps" if r["job_step"] else "allocs"].append(r)
    events: list[dict[str, Any]] = []
    for group in by_job.values():
        steps = sorted(group["steps"], key=lambda r: r["start_abs"])
        for i, r in enumerate(steps):
            home = next((a for a in group["allocs"] if a["start_abs"] <= r["start_abs"]
                         and (a.get("end_abs") is None or r["start_abs"] <= a["end_abs"])), None)
            if home is None or _failed(home) or not _failed(r) or r.get("end_abs") is None:
                continue
            nxt = next((n for n in steps[i + 1:] if n["job_step"].isdigit() and n["start_abs"] >= r["end_abs"]), None)
            stop, a = (nxt["start_abs"] if nxt is not None else r["end_abs"]), home.get("attempt", 0)
            events.append({"kind": "failure", "start_s": r["end_abs"] - t0, "end_s": stop - t0, "attempt": a,
                           "detail": f"step {r['job_id']}.{r['job_step']} {r['state']} (exit {r['exit_code']}) "
                                     "inside an allocation that went on"})
            if nxt is not None:
                events.append({"kind": "restart", "start_s": stop - t0, "end_s": stop - t0, "attempt": a,
                               "detail": f"step {nxt['job_id']}.{nxt['job_step']} started after step "
                                         f"{r['job_id']}.{r['job_step']} failed: a relaunch inside the allocation"})
    return events


def _one(values: list[Any]) -> Any:
    """The value when every record agrees on one, else None."""
    got = {v for v in values if v is not None}
    return next(iter(got)) if len(got) == 1 else None


def _facts(out: Parsed, reader: Reader, records: list[dict[str, Any]], allocs: list[dict[str, Any]]) -> None:
    """n_accelerators, accelerator, n_nodes and n_ranks where the allocations agree on them."""
    gpus = [r for r in allocs if r.get("gpus")]
    if gpus and len({r["gpus"] for r in gpus}) == 1:
        out.fact("n_accelerators", gpus[0]["gpus"], f"{reader.name}:{gpus[0]['line']}", gpus[0].get("alloctres", ""))
    if (kind := _one([r.get("gpu_type") for r in allocs])) is not None:
        out.fact("accelerator", kind, f"{reader.name}:{allocs[0]['line']}", f"gres/gpu:{kind}")
    if (nodes := _one([rules.as_count(r.get("nnodes")) for r in allocs])) is not None:
        out.fact("n_nodes", nodes, f"{reader.name}:{allocs[0]['line']}", f"{nodes} allocated (NNodes/allocation_nodes)")
    launched = [r for r in records if r["job_step"].isdigit() and rules.as_count(r.get("ntasks"))]
    if launched:
        big = max(launched, key=lambda r: rules.as_count(r["ntasks"]) or 0)
        tasks = rules.as_count(big["ntasks"])
        if gpus and tasks == gpus[0]["gpus"]:
            out.fact("n_ranks", tasks, f"{reader.name}:{big['line']}",
                     f"step {big['job_id']}.{big['job_step']}: {tasks} tasks on {tasks} GPUs")
        else:
            reader.note(f"step {big['job_id']}.{big['job_step']} ran {tasks} tasks"
                        + (f" on {gpus[0]['gpus']} GPUs" if gpus else "") + ": no world size is stated (a launcher "
                        "per node, as torchrun under srun, starts the ranks itself)")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read sacct output, text or ``--json``; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the sacct loader reads one file")
    head = reader.head(8192)
    form = "json" if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] == b"{" or _JSON_MARK.search(head) else "text"
    records, meta = _json_records(reader) if form == "json" else (_records(reader), {})
    _derive_starts(reader, records)
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
    events += _step_events(records, t0)
    out = Parsed(events=events, tables={"jobs": _jobs_table(records, t0)}, timing="exact",
                 time_unit="epoch_s" if abs_times else None)
    first = allocs[0] if allocs else records[0]
    if first.get("name"):
        out.meta["name"] = first["name"]
    _facts(out, reader, records, allocs)
    out.extra.update({
        "job_ids": sorted({r["job_id"] for r in records}),
        "states": [r["state"] for r in allocs],
        "exit_codes": [r["exit_code"] for r in allocs],
    })
    if form == "json":
        jobs = out.tables["jobs"]
        for col in ("alloccpus", "nnodes", "ntasks", "gpus", "db_job_id"):
            if col in jobs:
                jobs[col] = pd.to_numeric(jobs[col], errors="coerce").astype("Int64")
        out.extra.update({"form": "json", **meta, "nodes": [r.get("nodes", "") for r in allocs],
                          "cpus": [r.get("alloccpus") for r in allocs],
                          "time_limit_s": [r.get("time_limit_s") for r in allocs]})
    if abs_times:
        out.extra["t0_wallclock"] = (datetime(1970, 1, 1) + timedelta(seconds=t0)).isoformat(sep=" ")
        out.extra["t0_timezone"] = "UTC (epoch seconds)" if form == "json" else "unknown (cluster local time)"
    return out


load = loader_for(NAME)
