"""NeMo 2 / NeMo-Run / Megatron-Bridge stdout: ``global_step: N | train_step_timing in s: t`` lines.

What the format reads and how it maps to a :class:`~mfu_toolkit.run.Run`:

- Step lines, one per printed step: ``Training epoch E, iteration I/M | lr: ... |
  global_batch_size: B | global_step: N | reduced_train_loss: x | train_step_timing in s: t |
  consumed_samples: c | ...`` (NeMo 2), and the older progress-bar form ``Epoch 0: ... [...,
  global_step=2e+3, consumed_samples=1.28e+6, train_step_timing in s=1.900, ...]`` (floats such
  as ``2e+3`` for integers). The step is ``global_step``: the ``iteration`` counter restarts
  every epoch. ``train_step_timing in s`` is that one step's wall time in seconds (not a mean).
- Prefixes are stripped, in any order: indentation and ``>`` quotes of a document, ISO
  timestamps (``[2025-11-20T14:55:23+08:00]``, also one that lost its ``[``), a NeMo-Run job
  name cut to its last characters (``ining-demo/0``), ``[defaultN]:`` / ``[rankN]:`` launcher
  prefixes, ``(pretraining, pid=4112)`` (SkyPilot/Ray) and ``0:`` (``srun -l``).
- Timing: with a timestamp on every step line the step ends at its line's time
  (``timing="exact"``; the timestamps have the resolution NeMo-Run prints, 1 s); otherwise
  steps are placed back to back from their durations (``timing="duration_only"``): time spent
  outside steps (validation, checkpoint waits, start-up) and between attempts is then not in
  the timeline. Step 0 (warm-up) is kept. ``rank = -1``: NeMo prints steps from rank 0 only.
- Attempts (:func:`~mfu_toolkit.io.timeline.attempts`): a ``global_step`` that does not increase
  starts a new attempt (an in-job restart by the fault-tolerance launcher resumes from the last
  checkpoint, so steps repeat; the first attempt's repeated rows are the lost work). A line that
  repeats the previous step line exactly (a document quoting it twice, two ranks printing it) is a
  duplicate, counted and left out first. A jump of ``global_step`` is kept as one row (steps NeMo
  did not print have no time); a jump past :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` is counted.
- Columns besides the schema: ``loss`` (``reduced_train_loss``), ``lr``, ``consumed_samples``,
  ``global_batch_size`` (also ``samples``), ``epoch``, ``iteration``, ``tokens_per_sec_per_gpu``,
  ``tflops_per_gpu`` (``TFLOPS_per_GPU``), other numeric fields by their snake-case name, and
  ``val_loss`` on the first line that shows a new value only (NeMo repeats the last validation
  loss on every line until the next validation). ``loss: nan`` stays NaN on a kept step.
- Events (zero length: step lines carry no times of their own): ``failure`` where a traceback,
  ``Worker group FAILED`` or a preemption signal follows the last step of an attempt, with the
  message in ``detail``; ``restart`` at the first step of each later attempt; ``other`` where the
  straggler detector terminates training.
- Tables: ``straggler_scores`` from the straggler detector's ``GPU relative performance`` /
  ``GPU individual performance`` reports (``report``, ``kind``, ``rank``, ``node``, ``score``,
  ``after_step``, ``line``).

Facts: ``global_batch`` (``global_batch_size`` of the first step line, else the config dump's
``global_batch_size=``), ``n_ranks`` (the first statement of, in order of trust: Lightning's
``Starting with N processes``, ``GLOBAL_RANK: r, MEMBER: m/N``, ``WORLD_SIZE=N``,
torchelastic's ``global_world_sizes``, ``nproc_per_node`` / ``--nproc-per-node``, the
``[defaultN]`` ranks seen, the devices in ``CUDA_VISIBLE_DEVICES``; a visible-device count that
disagrees with the world size is noted), ``seq_len`` and ``micro_batch`` (config dump), ``model``
(the config dump's ``model`` row), ``dtype`` (``bf16=True`` / ``fp16=True`` / an fp8 recipe in
a printed config), ``framework`` (``Megatron-Bridge``, ``NeMo 2`` for the ``global_step:`` form,
``NeMo`` for the progress bar), ``platform`` (``NeMo-Run``, ``SkyPilot``) and, from SkyPilot's
job queue (``1x[L40S:4]``), ``accelerator``, ``n_nodes`` and ``accelerators_per_node``.
Claims: the median ``tokens_per_sec_per_gpu`` and ``TFLOPS_per_GPU`` over the steps.

Notebooks (``.ipynb``, read as JSON, never executed): the stream outputs of each code cell are
read as one log, their line numbers those of the notebook file. A notebook in which several code
cells print step lines holds several runs (each cell launched its own job): loading it is an
error listing them, and ``cell=`` picks one (``load_run(path, cell=22)``; cells are counted from
0 in file order). A notebook with one such cell loads without ``cell=``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import ANSI_RE, Reader, read_head
from ..values import number, timestamp

NAME = "nemo"
BAD_NOTEBOOK_OUTPUT = "malformed notebook output (stream text is not a string or a list of strings)"
TIMESTAMPS_NOT_USED = "non-monotonic timestamp (records kept, their timestamps not used)"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """Options of the nemo format.

    ``cell``: in a notebook, the index of the code cell whose outputs to load (0-based, in file
    order, as ``cell22`` in a file name extracted from it); needed when several cells print
    step lines (several runs). ``None``: the notebook's only cell with step lines.
    """

    cell: int | None = None

    def __post_init__(self) -> None:
        if self.cell is not None and (isinstance(self.cell, bool) or not isinstance(self.cell, int) or self.cell < 0):
            raise ValueError(f"cell must be a non-negative integer (a code cell's index) or None; got {self.cell!r}")


# --- sniffing --------------------------------------------------------------------------------

_SNIFF_SCAN = 8 << 20
_SNIFF_MARK = re.compile(rb"NeMo|nemo_run|nemo\.|megatron\.bridge|\"nbformat\"|\"cells\"")
_SNIFF_STEP = re.compile(rb"global_step\s{0,4}[:=]\s{0,4}[0-9]")
_TIMING_KEY = b"train_step_timing in s"



def _went(prev: int, step: int) -> str:
    """How a step number that opens a new attempt moved: back, or not at all."""
    return f"went back from {prev} to {step}" if step < prev else f"repeated {step} (it did not increase)"

def _has_step_line(data: bytes, limit: int = 200) -> bool:
    """A ``train_step_timing in s:`` (or ``=``) with ``global_step:`` on the same line, nearby."""
    i = data.find(_TIMING_KEY)
    while i >= 0 and limit > 0:
        limit -= 1
        after = data[i + len(_TIMING_KEY): i + len(_TIMING_KEY) + 4].lstrip()
        if after[:1] in (b":", b"="):
            lo = max(0, i - 4000)
            lo = max(lo, data.rfind(b"\n", lo, i) + 1)
            hi = data.find(b"\n", i, i + 4000)
            table_row = data[lo:i].lstrip()[:1] == b"|"  # a Markdown table quoting a line, not a log
            if not table_row and _SNIFF_STEP.search(data, lo, hi if hi >= 0 else min(len(data), i + 4000)):
                return True
        i = data.find(_TIMING_KEY, i + 1)
    return False


def sniff(path: Path, head: bytes) -> float:
    """1.0 when a NeMo step line is in the head or, in a longer file with NeMo markers, its first 8 MiB.

    ``train_step_timing in s`` is NeMo's own timing key, so a file with it beside ``global_step``
    is NeMo's even when its lines also read ``iteration N/M |`` like Megatron-LM's: the score
    stays a clear margin (0.1) above the megatron format's 0.9 for a log that holds both.
    """
    p = Path(path)
    if not head or p.is_dir() or b"\x00" in head:  # NUL bytes: a binary file (a saved run's Parquet), no text log
        return 0.0
    try:
        if _has_step_line(head):
            return 1.0
        if not _SNIFF_MARK.search(head) or p.stat().st_size <= len(head):
            return 0.0
        return 1.0 if _has_step_line(read_head(p, _SNIFF_SCAN)) else 0.0
    except OSError:
        return 0.0


# --- one line: prefixes ----------------------------------------------------------------------

# One alternation, tried in this order at each position: indentation/quotes, an ISO timestamp
# (its '[' may be lost), a SkyPilot/Ray task, [defaultN]:/[rankN]:, a NeMo-Run job name, srun -l.
_PREFIX = re.compile(
    r"(?P<space>[ \t>]+)"
    r"|\[?(?P<ts>\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?)\] ?"
    r"|(?P<ray>\([^()\n]{1,80}, pid=\d{1,10}\)) ?"
    r"|\[(?P<rank_kind>default|rank)(?P<rank>\d{1,7})\]: ?"
    r"|(?P<job>[^\s\d\[\](){}|:=,][^\s\[\](){}|:=,]{0,63}/\d{1,6}) "
    r"|\d{1,6}: "
)


def _strip(raw: str) -> tuple[str, dict[str, Any]]:
    """The line's body without launcher prefixes, and what the prefixes said."""
    pos, info = 0, {}
    for _ in range(16):
        m = _PREFIX.match(raw, pos)
        if m is None or m.end() == pos:
            break
        kind = m.lastgroup
        if m.group("ts") is not None:
            info.setdefault("ts", m.group("ts"))
        elif m.group("rank") is not None:
            info.setdefault(m.group("rank_kind"), int(m.group("rank")))
        elif kind in ("ray", "job"):
            info[kind] = True
        pos = m.end()
    return raw[pos:].rstrip(), info


# --- one line: a step ------------------------------------------------------------------------

_STEP_HINT = re.compile(r"\bglobal_step\s{0,4}[:=]\s{0,4}[^\s'\"}]|train_step_timing in s\s{0,4}[:=]")
_LEAD = re.compile(r"(?:Training epoch \d|Epoch \d{1,9}:)")
_BAR_FORM = re.compile(r"(?:\bglobal_step|train_step_timing in s)=")
_EPOCH = re.compile(r"[Ee]poch (\d{1,9}), iteration (\d{1,18})/(\d{1,18})")
_KEY_OK = re.compile(r"[A-Za-z_][A-Za-z0-9_ ./()-]{0,63}")
_KNOWN = {
    "global_step": "step",
    "train_step_timing in s": "step_time_s",
    "reduced_train_loss": "loss",
    "lr": "lr",
    "consumed_samples": "consumed_samples",
    "global_batch_size": "global_batch_size",
    "val_loss": "val_loss",
    "tokens_per_sec_per_gpu": "tokens_per_sec_per_gpu",
    "TFLOPS_per_GPU": "tflops_per_gpu",
    "epoch": "epoch",
}
_RESERVED = {"attempt", "step", "rank", "start_s", "end_s", "samples", "tokens", "data_wait_s", "compute_s",
             "comm_s", "line", "iteration"}
_MAX_EXTRA_COLUMNS = 32
_MAX_STEP_S = 1e7  # a step longer than ~4 months is no step time


def _fields(body: str) -> tuple[dict[str, str], tuple[int, int] | None]:
    """``{key: raw value}`` of a step line (first occurrence wins) and its (epoch, iteration)."""
    if _BAR_FORM.search(body):
        at = min(i for i in (body.find("global_step="), body.find("train_step_timing in s=")) if i >= 0)
        lo = body.rfind("[", 0, at) + 1
        hi = body.find("]", at)
        items, sep = body[lo: hi if hi >= 0 else len(body)].split(","), "="
    else:
        items, sep = body.split("|"), ":"
    out: dict[str, str] = {}
    epoch_it = None
    for item in items:
        key, found, value = item.partition(sep)
        if not found:
            if epoch_it is None and (m := _EPOCH.search(item)):
                epoch_it = (int(m.group(1)), int(m.group(2)))
            continue
        key, value = key.strip(), value.strip()
        if value and _KEY_OK.fullmatch(key) and key not in out:
            out[key] = value
    return out, epoch_it


def _column(st: _State, key: str) -> str | None:
    """The column a field goes to (None past the cap on extra columns)."""
    name = _KNOWN.get(key)
    if name is not None:
        return name
    name = re.sub(r"[^0-9a-zA-Z]+", "_", key).strip("_").lower() or "field"
    name = f"log_{name}" if name in _RESERVED or name in _KNOWN.values() else name
    if name not in st.extra_cols:
        if len(st.extra_cols) >= _MAX_EXTRA_COLUMNS:
            if len(st.dropped_keys) < 8:
                st.dropped_keys.add(key[:40])
            return None
        st.extra_cols.add(name)
    return name


def _step_time(reader: Reader, ln: int, fields: dict[str, str], body: str) -> float | None:
    key = "train_step_timing in s"
    if key not in fields:
        reader.bad(rules.MISSING_FIELD, line=ln, field=key, example=body, detail="step dropped")
        return None
    dur = number(fields[key], nonfinite="keep")
    if dur is None or not math.isfinite(dur):
        reader.bad(rules.NON_FINITE_TIME, line=ln, field=key, example=body, detail="step dropped")
    elif dur < 0:
        reader.bad(rules.NEGATIVE_DURATION, line=ln, field=key, example=body, detail="step dropped")
    elif dur > _MAX_STEP_S:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field=key, example=body, detail="step dropped")
    else:
        return dur
    return None


def _step_record(reader: Reader, st: _State, ln: int, body: str, info: dict[str, Any]) -> dict[str, Any] | None:
    """One step line as a record, or None (counted) when it has no usable step or time."""
    fields, epoch_it = _fields(body)
    if "global_step" not in fields:
        reader.bad(rules.MISSING_FIELD, line=ln, field="global_step", example=body, detail="step dropped")
        return None
    step = rules.as_step(fields["global_step"])
    if step is None:
        reader.bad(rules.BAD_STEP, line=ln, field="global_step", example=body)
        return None
    dur = _step_time(reader, ln, fields, body)
    if dur is None:
        return None
    cols: dict[str, float] = {}
    for key, value in fields.items():
        if key in ("global_step", "train_step_timing in s"):
            continue
        x = number(value, nonfinite="keep")
        if x is None:
            if key in _KNOWN:
                reader.bad(rules.NON_NUMERIC, line=ln, field=key, example=body)
            elif len(st.text_keys) < 8:
                st.text_keys.add(key[:40])
            continue
        if (name := _column(st, key)) is not None:
            cols[name] = x
    if epoch_it is not None:
        cols.setdefault("epoch", float(epoch_it[0]))
        cols["iteration"] = float(epoch_it[1])
    st.form = st.form or ("bar" if _BAR_FORM.search(body) else "nemo2")
    return {"line": ln, "step": step, "dur": dur, "text": body, "ts": info.get("ts"), "cols": cols}


def _add(reader: Reader, st: _State, rec: dict[str, Any]) -> None:
    """Append a record: a duplicate is counted, a jump of global_step counted (attempts: :func:`_attempts`)."""
    prev = st.records[-1] if st.records else None
    text = rec.pop("text")  # kept only while it is the last one: the records stay small
    if prev is not None:
        if text == st.last_text:
            reader.bad(rules.DUPLICATE, line=rec["line"], field="global_step", example=text)
            return
        if rec["step"] - prev["step"] > 1:
            st.gaps += 1
            if not rules.interval_ok(rec["step"] - prev["step"]):
                reader.bad(rules.INTERVAL_TOO_LONG, line=rec["line"], field="global_step", example=text)
    st.records.append(rec)
    st.last_text = text
    if not st.texts:
        st.texts["first"] = text[:300]
    if "gbs" not in st.texts and rules.as_count(rec["cols"].get("global_batch_size")):
        st.texts["gbs"] = text[:300]


# --- one line: everything else ---------------------------------------------------------------

_PROCS = re.compile(r"Starting with (\d{1,9}) processes")
_MEMBER = re.compile(r"GLOBAL_RANK: \d{1,9}, MEMBER: \d{1,9}/(\d{1,9})")
_WORLD = re.compile(r"\bWORLD_SIZE\s{0,4}[=:]\s{0,4}(\d{1,9})\b")
_GWS = re.compile(r"global_world_sizes=\[(\d{1,9})")
_NPROC = re.compile(r"nproc[-_]per[-_]node(?:\s{0,8}[=:])?\s{0,8}(\d{1,9})\b")
_CVD = re.compile(r"CUDA_VISIBLE_DEVICES\s{0,4}[=:]\s{0,4}\[?(\d{1,4}(?:\s{0,2},\s{0,2}\d{1,4}){0,255})")
_CFG_INT = re.compile(r"\b(seq_length|global_batch_size|micro_batch_size|GPUS_PER_NODE)\s{0,4}=\s{0,4}(\d{1,12})\b")
_FP8 = re.compile(r"\bfp8\s{0,4}=\s{0,4}['\"]?(hybrid|e4m3|e5m2)")
_SCORE = re.compile(r"Rank=(\S{1,20})\s{1,8}Node=(\S{1,200})\s{1,8}Score=(\S{1,40})")
_EXC = re.compile(r"((?:[A-Za-z_][\w.]{0,80})?(?:Error|Exception|Interrupt)): (.{0,200})")
_JOB_NAME = re.compile(r"(?:Waiting for job|Entering Experiment) (\S{1,200}) (?:to finish|with id)")
_SKY = re.compile(r"\b(\d{1,4})x\[([A-Za-z][\w-]{0,40}):(\d{1,4})\]")
_WORLD_KINDS = ("processes", "member", "world_size", "global_world_sizes", "nproc_per_node")


@dataclass
class _State:
    """What one pass over the lines has gathered."""

    records: list[dict[str, Any]] = field(default_factory=list)
    restarts: list[tuple[int, int, int, int]] = field(default_factory=list)  # (record, previous step, step, line)
    last_text: str = ""
    texts: dict[str, str] = field(default_factory=dict)  # the first step line, the first with a batch size
    gaps: int = 0
    form: str = ""
    extra_cols: set[str] = field(default_factory=set)
    dropped_keys: set[str] = field(default_factory=set)
    text_keys: set[str] = field(default_factory=set)
    seen: dict[str, tuple[Any, int, str]] = field(default_factory=dict)  # first statement of each kind
    local_ranks: set[int] = field(default_factory=set)
    stops: dict[int, dict[str, Any]] = field(default_factory=dict)  # records before it -> event
    traceback: bool = False
    strag: list[dict[str, Any]] = field(default_factory=list)
    strag_kind: str | None = None
    strag_report: int = -1
    strag_kinds: set[str] = field(default_factory=set)
    model_row: int | None = None

    def first(self, kind: str, value: Any, ln: int, text: str) -> None:
        if value is not None and kind not in self.seen:
            self.seen[kind] = (value, ln, text.strip()[:300])


def _stop(st: _State, kind: str, detail: str, ln: int, *, soft: bool = False) -> None:
    """A failure/termination marker after the last step seen so far (one event per position).

    A ``soft`` one (an exception's traceback) counts only where the attempt ends: a traceback
    logged while training goes on was handled.
    """
    ev = st.stops.setdefault(len(st.records), {"kind": kind, "details": [], "line": ln, "soft": soft})
    ev["soft"] = ev["soft"] and soft
    if kind == "failure":
        ev["kind"] = "failure"
    if detail not in ev["details"] and len(ev["details"]) < 3:
        ev["details"].append(detail[:200])


def _straggler(reader: Reader, st: _State, ln: int, body: str) -> bool:
    """Straggler-report lines; True when the line was one."""
    if "GPU relative performance" in body or "GPU individual performance" in body:
        kind = "relative" if "relative" in body else "individual"
        if st.strag_report < 0 or kind in st.strag_kinds:
            st.strag_report, st.strag_kinds = st.strag_report + 1, set()
        st.strag_kinds.add(kind)
        st.strag_kind = kind
        return True
    if st.strag_kind is None:
        return False
    m = _SCORE.search(body) if "Rank=" in body else None
    if m is None:
        st.strag_kind = None
        return False
    rank, score = rules.as_step(m.group(1)), number(m.group(3), nonfinite="keep")
    if rank is None or rank > 10_000_000:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="Rank", example=body)
        return True
    if score is None:
        reader.bad(rules.NON_NUMERIC, line=ln, field="Score", example=body)
        score = math.nan
    after = st.records[-1]["step"] if st.records else None
    st.strag.append({"report": st.strag_report, "kind": st.strag_kind, "rank": rank, "node": m.group(2),
                     "score": score, "after_step": after, "line": ln})
    return True


def _world(st: _State, ln: int, body: str, raw: str) -> None:
    """Statements of the world size, each kind kept at its first occurrence."""
    checks = (("processes", "processes", _PROCS), ("MEMBER:", "member", _MEMBER), ("WORLD_SIZE", "world_size", _WORLD),
              ("global_world_sizes", "global_world_sizes", _GWS), ("nproc", "nproc_per_node", _NPROC))
    for needle, kind, pat in checks:
        if needle in body and kind not in st.seen and (m := pat.search(body)):
            st.first(kind, rules.as_count(m.group(1)), ln, raw)
    if "CUDA_VISIBLE_DEVICES" in body and "cuda_visible_devices" not in st.seen and (m := _CVD.search(body)):
        st.first("cuda_visible_devices", len(m.group(1).split(",")), ln, raw)


def _config(st: _State, ln: int, body: str, raw: str) -> None:
    """Config dump values: batch sizes, sequence length, model row, dtype, and markers."""
    if "=" in body:
        for m in _CFG_INT.finditer(body):
            st.first(m.group(1), rules.as_count(m.group(2), upper=10**12), ln, raw)
        if "bf16=True" in body:
            st.first("dtype", "bf16", ln, raw)
        elif "fp16=True" in body:
            st.first("dtype", "fp16", ln, raw)
        if "fp8" in body and (m := _FP8.search(body)):
            st.first("fp8", "fp8", ln, raw)
    if "│" in body:
        cells = [c.strip() for c in body.split("│")]
        if "model" in cells and (i := cells.index("model")) + 1 < len(cells):
            name = cells[i + 1].split("(", 1)[0].strip()
            if name.isidentifier():
                st.first("model", name, ln, raw)
                st.model_row = ln
        elif st.model_row is not None and "model" in st.seen and (m := re.search(r"config=(\w{1,80})\(", body)):
            value, at, text = st.seen["model"]
            if at == st.model_row and st.model_row == ln - 1:
                st.seen["model"] = (f"{value} ({m.group(1)})", at, text)


def _markers(st: _State, ln: int, body: str, raw: str, info: dict[str, Any]) -> None:
    """Framework and platform markers, the job's name, SkyPilot resources, stop markers."""
    low = body.lower()
    if "megatron.bridge" in low or "megatron-bridge" in low:
        st.first("bridge", "Megatron-Bridge", ln, raw)
    if "nemo_run" in low or "entering experiment" in low or info.get("job"):
        st.first("nemo_run", "NeMo-Run", ln, raw)
    if info.get("ray") or "skypilot" in low or "sky logs" in low or "job queue of cluster" in low:
        st.first("skypilot", "SkyPilot", ln, raw)
    if ("Waiting for job" in body or "Entering Experiment" in body) and (m := _JOB_NAME.search(body)):
        st.first("job_name", m.group(1), ln, raw)
    if "x[" in body and (m := _SKY.search(body)):
        st.first("sky", (m.group(2), int(m.group(1)), int(m.group(3))), ln, raw)
    if "Traceback (most recent call last)" in body:
        st.traceback = True
    elif st.traceback and ("Error" in body or "Exception" in body or "Interrupt" in body) and (m := _EXC.search(body)):
        _stop(st, "failure", f"{m.group(1)}: {m.group(2)}".strip(), ln, soft=True)
        st.traceback = False
    if "Worker group FAILED" in body:
        _stop(st, "failure", body[body.find("Worker group FAILED"):], ln)
    elif "Received signal" in body or "Preemption detected" in body:
        _stop(st, "failure", "preemption: " + body[body.find("]") + 1:].strip(), ln)
    elif "Detected stragglers. Terminating training" in body:
        _stop(st, "other", "the straggler detector terminated training", ln)


def _is_step_line(body: str) -> bool:
    """A NeMo step line: ``global_step`` or ``train_step_timing in s`` with a value, on a line that
    also reads like one (a timing, a loss or the ``Training epoch``/``Epoch N:`` lead), so prose that
    quotes ``global_step: 99`` (or a Markdown table row quoting a whole line) is not taken for a
    damaged step line."""
    if ("global_step" not in body and "train_step_timing" not in body) or body.startswith("|"):
        return False  # a Markdown table row quotes a line; it is no log line
    if not _STEP_HINT.search(body):
        return False
    return "train_step_timing in s" in body or "reduced_train_loss" in body or bool(_LEAD.match(body))


def _line(reader: Reader, st: _State, ln: int, raw: str) -> None:
    body, info = _strip(raw)
    if not body:
        return
    if "default" in info:
        st.local_ranks.add(info["default"])
    if _is_step_line(body):
        rec = _step_record(reader, st, ln, body, info)
        if rec is not None:
            _add(reader, st, rec)
            st.traceback = False
        if info.get("job"):
            st.first("job_prefix", "NeMo-Run", ln, raw)
        if info.get("ray"):
            st.first("skypilot", "SkyPilot", ln, raw)
        return
    if _straggler(reader, st, ln, body):
        return
    _world(st, ln, body, raw)
    _config(st, ln, body, raw)
    _markers(st, ln, body, raw, info)


# --- notebooks -------------------------------------------------------------------------------

_BREAK = re.compile(r"\r\n|\r|\n")


class _LineFinder:
    """The notebook file's line of each output string, searched forward only (linear overall).

    nbformat writes each string of an output's ``text`` list on its own line; a notebook written
    otherwise (minified) falls back to the last line found.
    """

    def __init__(self, text: str) -> None:
        self.lines = text.split("\n")
        self.pos = 0
        self.ok = True

    def find(self, piece: str) -> int:
        if self.ok:
            wanted = {json.dumps(piece, ensure_ascii=False), json.dumps(piece)}
            for i in range(self.pos, len(self.lines)):
                s = self.lines[i].strip()
                if (s[:-1] if s.endswith(",") else s) in wanted:
                    self.pos = i + 1
                    return i + 1
            self.ok = False
        return max(self.pos, 1)


def _stream_pieces(reader: Reader, outputs: Any) -> list[tuple[str, str]]:
    """``(stream name, text piece)`` of a code cell's stream outputs, in order."""
    pieces: list[tuple[str, str]] = []
    for out in outputs if isinstance(outputs, list) else []:
        if not isinstance(out, dict) or out.get("output_type") != "stream":
            continue
        text = out.get("text", "")
        parts = [text] if isinstance(text, str) else text if isinstance(text, list) else None
        if parts is None or not all(isinstance(p, str) for p in parts):
            reader.bad(BAD_NOTEBOOK_OUTPUT, field="text")
            continue
        pieces.extend((str(out.get("name", "")), p) for p in parts)
    return pieces


def _cell_lines(reader: Reader, finder: _LineFinder, pieces: list[tuple[str, str]]) -> list[tuple[int, str]]:
    """A cell's output pieces joined into lines, each with the file line its text starts on."""
    lines: list[tuple[int, str]] = []
    buf, buf_line, stream = "", 0, None
    cap = reader.limits.max_line_bytes
    for name, piece in pieces:
        at = finder.find(piece)
        if name != stream and buf:
            lines.append((buf_line, buf))
            buf = ""
        stream = name
        parts = _BREAK.split(piece)
        for part in parts[:-1]:
            lines.append((buf_line if buf else at, buf + part))
            buf = ""
        if parts[-1]:
            buf_line = buf_line if buf else at
            buf += parts[-1]
    if buf:
        lines.append((buf_line, buf))
    out = []
    for ln, text in lines:
        if len(text) > cap:
            reader.bad(rules.LINE_TOO_LONG, line=ln, detail=f"over {cap:,} bytes; max_line_bytes= raises the limit")
            continue
        out.append((ln, ANSI_RE.sub("", text) if "\x1b" in text else text))
    return out


def _summary(lines: list[tuple[int, str]]) -> dict[str, Any] | None:
    """Step count, first/last global_step and restarts of a cell's lines (None: no step lines)."""
    steps = []
    for _, text in lines:
        if "global_step" in text and "train_step_timing in s" in text and (m := _FIRST_STEP.search(text)):
            s = rules.as_step(m.group(1))
            if s is not None:
                steps.append(s)
    if not steps:
        return None
    back = int(timeline.attempts(np.array(steps, dtype=np.int64), resets="not_increasing")[-1])
    return {"n": len(steps), "first": steps[0], "last": steps[-1], "restarts": back}


_FIRST_STEP = re.compile(r"global_step\s{0,4}[:=]\s{0,4}([0-9][0-9.eE+]{0,30})")


def _describe(runs: dict[int, dict[str, Any]]) -> str:
    parts = []
    for i, s in runs.items():
        extra = f", {s['restarts']} restart(s)" if s["restarts"] else ""
        parts.append(f"cell {i} ({s['n']} step lines, global_step {s['first']}–{s['last']}{extra})")
    return "; ".join(parts)


def _notebook(reader: Reader, cell: int | None) -> tuple[list[tuple[int, str]], dict[str, Any]]:
    """The lines of the chosen code cell's stream outputs (see the module docstring)."""
    text = reader.text()
    nb, ok = reader.json(text)
    if not ok:
        reader.fail("the notebook's JSON does not parse (see the skip reason in the report)")
    cells = nb.get("cells") if isinstance(nb, dict) else None
    if not isinstance(cells, list):
        reader.fail("a notebook without a 'cells' list", field="cells")
    finder = _LineFinder(text)
    runs: dict[int, dict[str, Any]] = {}
    chosen: list[tuple[int, str]] = []
    for i, c in enumerate(cells):
        if not isinstance(c, dict) or c.get("cell_type") != "code":
            continue
        lines = _cell_lines(reader, finder, _stream_pieces(reader, c.get("outputs")))
        summary = _summary(lines)
        if summary is not None:
            summary["execution_count"] = c.get("execution_count")
            runs[i] = summary
            if cell == i or (cell is None and len(runs) == 1):
                chosen = lines
    if not runs:
        reader.fail("no NeMo step lines (global_step: N | train_step_timing in s: t) in the notebook's outputs")
    if cell is not None and cell not in runs:
        reader.fail(f"cell={cell} is not a code cell whose outputs hold step lines; those are: {_describe(runs)}",
                    field="cell")
    if cell is None and len(runs) > 1:
        first = next(iter(runs))
        reader.fail(f"{len(runs)} runs in this notebook, one per code cell that printed step lines: "
                    f"{_describe(runs)}. Pass cell=<index> to load one, e.g. load_run(path, cell={first}) "
                    "(cells counted from 0 in file order)", field="cell")
    pick = cell if cell is not None else next(iter(runs))
    return chosen, {"cell": pick, "execution_count": runs[pick]["execution_count"], "runs_in_notebook": len(runs)}


def _is_notebook(reader: Reader) -> bool:
    head = reader.head(4096).lstrip(b"\xef\xbb\xbf \t\r\n")
    return head[:1] == b"{" and (b'"cells"' in head or b'"nbformat"' in head or reader.path.suffix == ".ipynb")


# --- records to a Run ------------------------------------------------------------------------


def _attempts(st: _State) -> None:
    """Each record's attempt (``timeline.attempts``: a global_step that does not increase opens one)
    and the restarts, one per record that opens an attempt after the first."""
    att = timeline.attempts(np.array([r["step"] for r in st.records], dtype=np.int64), resets="not_increasing")
    for r, a in zip(st.records, att.tolist(), strict=True):
        r["attempt"] = a
    recs = st.records
    st.restarts = [(p, recs[p - 1]["step"], recs[p]["step"], recs[p]["line"])
                   for p in (np.flatnonzero(att[1:] != att[:-1]) + 1).tolist()]


def _exact_ends(reader: Reader, records: list[dict[str, Any]]) -> list[float] | None:
    """Each step's end from its line's timestamp, or None when they cannot all be used."""
    if not records or any(r["ts"] is None for r in records):
        if any(r["ts"] is not None for r in records):
            reader.note("only some step lines carry a timestamp: steps are placed back to back from their durations")
        return None
    # All stamps with a zone (UTC), else all without one (naive local time read as UTC).
    ends = [timestamp(r["ts"], offset="required") for r in records]
    if any(t is None for t in ends):
        ends = [timestamp(r["ts"], offset="forbidden") for r in records]
    if any(t is None for t in ends):
        reader.note("step-line timestamps unreadable or mixed with and without a zone: steps placed back to back")
        return None
    back = [r for r, a, b in zip(records[1:], ends, ends[1:], strict=False) if b < a]
    for r in back:
        reader.bad(TIMESTAMPS_NOT_USED, line=r["line"], field="timestamp", example=r["ts"])
    return None if back else ends


def _timeline(reader: Reader, records: list[dict[str, Any]]) -> tuple[list[float], list[float], str]:
    ends = _exact_ends(reader, records)
    durs = [r["dur"] for r in records]
    if ends is not None:
        # Relative to the first stamp before subtracting durations (an epoch time has no room for
        # 12.22 s exactly), then rounded to the nanosecond: the first step starts at 0.0.
        rel = [e - ends[0] for e in ends]
        t0 = min(r - d for r, d in zip(rel, durs, strict=True))
        end = [round(r - t0, 9) for r in rel]
        return [max(0.0, round(e - d, 9)) for e, d in zip(end, durs, strict=True)], end, "exact"
    start, end, t = [], [], 0.0
    for d in durs:
        start.append(t)
        t += d
        end.append(t)
    return start, end, "duration_only"


def _steps(records: list[dict[str, Any]], start: list[float], end: list[float],
           gbs: float | None) -> dict[str, list[Any]]:
    names = sorted({k for r in records for k in r["cols"]})
    cols: dict[str, list[Any]] = {"attempt": [], "step": [], "rank": [], "start_s": [], "end_s": [], "samples": [],
                                  "line": []}
    cols.update({n: [] for n in names})
    last_val: dict[int, float] = {}
    for r, a, b in zip(records, start, end, strict=True):
        c = r["cols"]
        batch = c.get("global_batch_size")
        ok = batch is not None and math.isfinite(batch) and batch > 0
        for k, v in (("attempt", r["attempt"]), ("step", r["step"]), ("rank", -1), ("start_s", a), ("end_s", b),
                     ("samples", batch if ok else (gbs or math.nan)), ("line", r["line"])):
            cols[k].append(v)
        for n in names:
            v = c.get(n, math.nan)
            if n == "val_loss" and not math.isnan(v):
                if last_val.get(r["attempt"]) == v:
                    v = math.nan
                else:
                    last_val[r["attempt"]] = v
            cols[n].append(v)
    return cols


def _events(st: _State, start: list[float], end: list[float], timing: str) -> list[dict[str, Any]]:
    events = []
    recs = st.records
    ends_attempt = {len(recs)} | {pos for pos, *_ in st.restarts}
    for pos, ev in sorted(st.stops.items()):
        if ev["soft"] and pos not in ends_attempt:
            continue
        if pos == 0:
            t, attempt = 0.0, 0
        else:
            t, attempt = end[pos - 1], recs[pos - 1]["attempt"]
        events.append({"kind": ev["kind"], "start_s": t, "end_s": t, "attempt": attempt,
                       "detail": f"line {ev['line']}: " + "; ".join(ev["details"])})
    for pos, prev, step, ln in st.restarts:
        t = start[pos]
        events.append({"kind": "restart", "start_s": t, "end_s": t, "attempt": recs[pos]["attempt"],
                       "detail": f"line {ln}: global_step {_went(prev, step)}: a new attempt"
                                 + (" (time between attempts not logged)" if timing == "duration_only" else "")})
    return events


def _n_ranks(out: Parsed, reader: Reader, st: _State) -> None:
    """The n_ranks fact from the most trusted statement; a disagreeing device count is noted."""
    for kind in _WORLD_KINDS:
        if kind in st.seen:
            value, ln, text = st.seen[kind]
            break
    else:
        if st.local_ranks:
            value, ln, text = max(st.local_ranks) + 1, 0, f"[default0]..[default{max(st.local_ranks)}] prefixes"
        elif "cuda_visible_devices" in st.seen:
            value, ln, text = st.seen["cuda_visible_devices"]
        else:
            return
    out.fact("n_ranks", value, f"{reader.name}:{ln}" if ln else reader.name, text)
    if "cuda_visible_devices" in st.seen and st.seen["cuda_visible_devices"][0] != value:
        n_vis, vln, _ = st.seen["cuda_visible_devices"]
        reader.note(f"CUDA_VISIBLE_DEVICES lists {n_vis} device(s) (line {vln}) but the job states {value} rank(s) "
                    f"(line {ln}): visible devices are not the ranks that ran")


def _facts(out: Parsed, reader: Reader, st: _State) -> None:
    def fact(name: str, kind: str, value: Any = None) -> None:
        if kind in st.seen:
            v, ln, text = st.seen[kind]
            out.fact(name, v if value is None else value, f"{reader.name}:{ln}", text)

    first_gbs = next((r for r in st.records if rules.as_count(r["cols"].get("global_batch_size"))), None)
    if first_gbs is not None:
        gbs = rules.as_count(first_gbs["cols"]["global_batch_size"])
        out.fact("global_batch", gbs, f"{reader.name}:{first_gbs['line']}", st.texts["gbs"])
        if "global_batch_size" in st.seen and st.seen["global_batch_size"][0] != gbs:
            reader.note(f"the step lines' global_batch_size {gbs} differs from the config's "
                        f"{st.seen['global_batch_size'][0]} (line {st.seen['global_batch_size'][1]}); "
                        "the step lines' is used")
    else:
        fact("global_batch", "global_batch_size")
    _n_ranks(out, reader, st)
    fact("seq_len", "seq_length")
    fact("micro_batch", "micro_batch_size")
    if "sky" not in st.seen:
        fact("accelerators_per_node", "GPUS_PER_NODE")
    fact("model", "model")
    fact("dtype", "fp8" if "fp8" in st.seen else "dtype")
    framework = "Megatron-Bridge" if "bridge" in st.seen else ("NeMo" if st.form == "bar" else "NeMo 2")
    where = st.seen["bridge"] if "bridge" in st.seen else (None, st.records[0]["line"], st.texts["first"])
    out.fact("framework", framework, f"{reader.name}:{where[1]}", where[2])
    platforms = [k for k in ("nemo_run", "job_prefix", "skypilot") if k in st.seen]
    if platforms:
        names = list(dict.fromkeys(st.seen[k][0] for k in platforms))
        v, ln, text = st.seen[platforms[0]]
        out.fact("platform", " on ".join(names), f"{reader.name}:{ln}", text)
    if "sky" in st.seen:
        (acc, nodes, per), ln, text = st.seen["sky"]
        for name, v in (("accelerator", acc), ("n_nodes", nodes), ("accelerators_per_node", per)):
            out.fact(name, v, f"{reader.name}:{ln}", text)


def _claims(out: Parsed, reader: Reader, records: list[dict[str, Any]]) -> None:
    for col, metric, unit, counts in (
        ("tokens_per_sec_per_gpu", "tokens_per_s_per_accelerator", "tokens/s per GPU",
         "tokens per second per GPU as NeMo prints them on each step line: global batch × sequence "
         "length ÷ train_step_timing ÷ GPUs"),
        ("tflops_per_gpu", "tflops_per_accelerator", "TFLOP/s per GPU",
         "model TFLOP/s per GPU as NeMo's FLOPs measurement callback counts them (its own formula for "
         "the model family) over train_step_timing"),
    ):
        rows = [r for r in records if col in r["cols"]]
        if rows:
            out.claim(Claim.summarise(metric, [r["cols"][col] for r in rows], unit=unit, counts=counts,
                                      where=f"{reader.name}:{rows[0]['line']}"))


def _notes(reader: Reader, st: _State) -> None:
    if st.gaps:
        reader.note(f"global_step jumps {st.gaps} time(s): the steps in between were not printed, so their time "
                    "is not in the timeline")
    for _, prev, step, ln in st.restarts:
        reader.note(f"line {ln}: global_step {_went(prev, step)} (a restart from a checkpoint): "
                    f"steps {step}–{prev} of the earlier attempt were done twice")
    if st.text_keys:
        reader.note(f"step-line fields with text values left out: {', '.join(sorted(st.text_keys))}")
    if st.dropped_keys:
        reader.note(f"more than {_MAX_EXTRA_COLUMNS} distinct step-line fields; "
                    f"left out: {', '.join(sorted(st.dropped_keys))}")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read NeMo stdout, a document quoting it, or a notebook's outputs; see the module docstring."""
    if reader.path.is_dir():
        reader.fail("is a directory; the nemo format reads one log, document or notebook")
    extra: dict[str, Any] = {}
    if _is_notebook(reader):
        lines, extra = _notebook(reader, options.cell)
        lines = reader.text_lines(lines)  # the cell's outputs, through the stage every text log goes through
    elif options.cell is not None:
        reader.fail("cell= picks a code cell of a notebook; this input is a text log", field="cell")
    else:
        lines = reader.lines()
    st = _State()
    for ln, raw in lines:
        reader.report.lines_read += 1
        _line(reader, st, ln, raw)
    if not st.records:
        reader.fail("no usable NeMo step lines (global_step: N | train_step_timing in s: t)")
    _attempts(st)
    start, end, timing = _timeline(reader, st.records)
    if timing == "duration_only":
        reader.note("no timestamp on the step lines: steps are placed back to back from 'train_step_timing in s'; "
                    "time outside steps (validation, checkpoint waits, restarts) is not in the timeline")
    out = Parsed(timing=timing, time_unit="s", extra=extra)
    _facts(out, reader, st)
    gbs = next((f.value for f in out.facts if f.name == "global_batch"), None)
    out.steps = _steps(st.records, start, end, gbs)
    out.events = _events(st, start, end, timing)
    if st.strag:
        out.tables["straggler_scores"] = pd.DataFrame(st.strag)
    _claims(out, reader, st.records)
    _notes(reader, st)
    if "job_name" in st.seen:
        out.meta["name"] = st.seen["job_name"][0] + (f" (cell {extra['cell']})" if "cell" in extra else "")
    return out


load = loader_for(NAME)
