"""torchtitan stdout: the ``step: N  loss: ...  tps: ...  mfu: ...`` lines and the start-up lines.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- Each step line is printed at the end of a logging interval; its timestamp (the logger's
  ``YYYY-mm-dd HH:MM:SS,mmm``, local time, no zone) ends the interval, and the previous step
  line of the same rank starts it. The throughput fields (``tps``, ``tflops``, ``mfu``) are
  means over the interval, so every step of the interval gets one row with an equal share of
  the interval's wall time, and ``meta.timing = "interval_mean"``. The first step line of an
  attempt has no start in the log unless a ``Training starts at step N`` line precedes it;
  without one its row is zero-width (``interval_known = False``), never a guessed duration.
  An interval longer than :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` steps is not expanded:
  its line stays one row (the logged step, one step's share of the time, ``interval_steps``
  holding the count) and is counted under ``INTERVAL_TOO_LONG``.
- Launcher prefixes identify ranks: ``[rank3]:``, ``[default3]:`` (torchrun) and ``3:``
  (``srun --label``). With a prefix each rank keeps its own rows (``rank`` = the prefix). Without
  one the lines of different ranks cannot be told apart, so the copies of a step that every rank
  printed collapse into one job-level row (``rank = -1``) holding the first copy's values;
  ``n_reports`` says how many lines were collapsed. Nothing is double counted.
- Field drift: ``wps`` (older releases) is read as ``tps``; ``mfu: N/A`` (torchtitan withholds
  MFU e.g. under FP8) stays missing. Columns added to the steps table: ``loss``, ``grad_norm``,
  ``memory_gib``, ``memory_pct``, ``tps`` (tokens/s per device), ``tflops`` (per device),
  ``mfu_pct`` (percent, as printed), plus any other numeric ``name: value`` field; and
  ``interval_steps``, ``logged`` (this step printed the line), ``interval_known``, ``n_reports``.
  Interval means (``tps``, ``tflops``, ``mfu_pct``) are repeated on every step of the interval;
  point values (``loss``, ``grad_norm``, memory) only on the logged step. A value that is not a
  number is counted under ``NON_NUMERIC`` and left missing; the line is kept. At most
  :data:`MAX_FIELD_COLUMNS` distinct names become columns; values of further names are counted.
- Restarts: a ``Training starts at step`` line after logged steps, or a step number that goes
  back, opens a new attempt. A step printed again within 30 s of its first print is a copy from
  another rank, not a restart.

Facts, each with its file and line: ``CUDA capacity: NVIDIA H100 80GB HBM3 with 79.10GiB memory``
(older releases: ``GPU capacity: NAME (0) with ...``) → ``accelerator``, the name as printed
without the device index (the memory goes to ``extra['accelerator_memory_gib']``);
``Building 3-D device mesh with ['pp', 'dp_shard', 'ep'], [4, 16, 4]`` → ``parallelism`` (the
dimensions) and ``n_accelerators`` (their product, the world size: torchtitan runs one rank per
device and builds its mesh over every rank, so the mesh size is the device count an MFU needs);
``Trainer is initialized with local batch size A, global batch size B, ..., sequence length S``
→ ``micro_batch``, ``global_batch``, ``seq_len``; ``Building llama3 8B with ...ModelArgs(...)``
→ ``model`` (and ``seq_len`` from ``max_seq_len=``, which torchtitan sets from the training
sequence length before it prints the line, when no Trainer line states it); ``Float8 ... training
active`` / ``MX training active`` → ``dtype`` ``fp8``. Parameter counts (``Model ... size: N total
parameters``, ``Total parameter count: dense, sparse, active`` of an MoE model, whose active
count is the N of 6·N·T) and the peak torchtitan assumes for its MFU go to ``extra``. The
``dtype=`` inside DeepSeek's ModelArgs is the inference reference's weight format, not the
training dtype, and is kept as ``extra['model_args_dtype']`` only.

Claims (medians over the step lines kept: one per rank and step, copies collapsed):
``tflops`` → ``tflops_per_accelerator``, ``mfu`` → ``mfu`` (a fraction: 13.99% → 0.1399),
``tps``/``wps`` → ``tokens_per_s_per_accelerator``.

A log with start-up lines but no step line (a job that died in set-up, or an excerpt of its
start) is a Run with its facts, no steps and one ``init`` event from its first to its last
timestamp; a file with neither is a ``LoadError``. Detection looks for step lines only, so such a
log is read with ``load_run(path, format="torchtitan")``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import ANSI_RE, Reader
from ..values import number, timestamp

NAME = "torchtitan"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """The torchtitan format takes no options besides the RunMeta keywords."""


_PREFIX_RE = re.compile(r"^\s*(?:\[(?:rank|default)(\d{1,9})\]:|(\d{1,9}):\s)")
_TS_RE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:[,.]\d{1,6})?")
_STEP_RE = re.compile(r"\bstep:\s*(\d+)\s+(.*)$")
# The lookbehind keeps a name from starting inside a longer word (linear on any line).
_FIELD_RE = re.compile(r"(?<![A-Za-z0-9_])([A-Za-z_][A-Za-z0-9_]*):\s*(\S+)")
_MEM_RE = re.compile(r"^([0-9.eE+-]+)\s*GiB\(([0-9.eE+-]+)%\)$")
_START_RE = re.compile(r"Training starts at step (\d{1,19})\b")
_SNIFF_STEP = re.compile(r"\bstep:\s*\d+\s+loss:")
_SNIFF_FIELDS = ("tps:", "wps:", "tflops:", "mfu:", "memory:")

_CAPACITY_RE = re.compile(r"\b([A-Z]{2,6}) capacity: ")
_MEMORY_TAIL_RE = re.compile(r"\s*([0-9.]{1,12})\s*GiB memory")
_DEVICE_INDEX_RE = re.compile(r" \(\d{1,4}\)$")
_MESH_RE = re.compile(r"Building (\d{1,3})-D device mesh with \[([^\]]{0,2000})\], \[([0-9, ]{0,2000})\]")
_TRAINER_RE = re.compile(
    r"Trainer is initialized with local batch size (\d{1,12}), global batch size (\d{1,12}), "
    r"gradient accumulation steps (\d{1,12}), sequence length (\d{1,12})"
)
_MODEL_RE = re.compile(r"Building (\S{1,100}) (\S{1,100}) with ([A-Za-z0-9_]{1,100})\(")
_MAX_SEQ_RE = re.compile(r"\bmax_seq_len=(\d{1,12})\b")
_ARGS_DTYPE_RE = re.compile(r"\bdtype='([A-Za-z0-9_]{1,20})'")
_PARAMS_RE = re.compile(r"Model (\S{1,100}) (\S{1,100}) size: ([0-9,]{1,30}) total parameters")
_MOE_PARAMS_RE = re.compile(
    r"Total parameter count: dense ([0-9,]{1,30}), sparse ([0-9,]{1,30}), active ([0-9,]{1,30})")
_LOW_PRECISION_RE = re.compile(r"\b(?:Float8|MXFP8|MX)\b[^\n]{0,80}?\btraining active")
_PEAK_RE = re.compile(r"Peak FLOPS used for computing MFU: ([0-9.eE+-]{1,30})")

# Distinct ``name: value`` fields kept as step columns; more (a line of thousands of made-up
# names) would make the table grow as lines × names, so their values are counted, not kept.
MAX_FIELD_COLUMNS = 64
FIELD_NOT_KEPT = f"field not kept (over {MAX_FIELD_COLUMNS} distinct field names)"
_RENAME = {"wps": "tps", "mfu": "mfu_pct"}
# A repeated step within this many seconds of its first print is a copy from another rank;
# later, it is a relaunch that resumed from a checkpoint (which takes far longer than this).
_DUP_WINDOW_S = 30.0
_RATE_FIELDS = ("tps", "tflops", "mfu_pct")  # interval means: valid for every step of it
_MISSING = {"n/a", "na", "nan", "-", "none"}
_CLAIMS = (
    ("tflops", "tflops_per_accelerator", "TFLOP/s per GPU",
     "model FLOPs per GPU per second by torchtitan's 6N + attention estimate", 1.0),
    ("mfu_pct", "mfu", "fraction", "torchtitan's tflops over the peak it assumes for the GPU", 0.01),
    ("tps", "tokens_per_s_per_accelerator", "tokens/s per GPU",
     "tokens per second per GPU as torchtitan counts them (its tps field; wps in older releases)", 1.0),
)


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is a torchtitan stdout log (by its step lines)."""
    if not head or Path(path).is_dir():
        return 0.0
    text = head.decode("utf-8", errors="replace")
    if "\x1b" in text:
        text = ANSI_RE.sub("", text)
    for line in text.splitlines():
        if _SNIFF_STEP.search(line) and any(f in line for f in _SNIFF_FIELDS):
            return 0.95 if "[titan]" in text else 0.85
    return 0.0


def _parse_fields(rest: str) -> tuple[dict[str, float], list[str]]:
    """``name: value`` pairs → floats, and the names whose value is not a number (left NaN)."""
    out: dict[str, float] = {}
    bad: list[str] = []
    for key, raw in _FIELD_RE.findall(rest):
        key = _RENAME.get(key, key)
        val = raw.strip().rstrip(",")
        missing = val.lower() in _MISSING
        if key == "memory":
            m = None if missing else _MEM_RE.match(val)
            gib = number(m.group(1), nonfinite="keep") if m else None
            pct = number(m.group(2), nonfinite="keep") if m else None
            out["memory_gib"] = math.nan if gib is None else gib
            out["memory_pct"] = math.nan if pct is None else pct
            if not missing and math.isnan(out["memory_gib"]):
                bad.append(key)
            continue
        # A rate with thousands separators (``tps: 12,345``), a percentage (``mfu: 45.2%``): the
        # trailing ``%`` and commas go, the other commas are thousands separators.
        num = None if missing else number(val.rstrip("%,"), thousands=True, nonfinite="keep")
        out[key] = math.nan if num is None else num
        if num is None and not missing:
            bad.append(key)
    return out, bad


# --- facts ------------------------------------------------------------------------------------
def _int(text: str) -> int | None:
    return rules.as_count(text.replace(",", ""), upper=rules.MAX_INT64)


def _capacity(out: Parsed, where: str, text: str) -> None:
    m = _CAPACITY_RE.search(text)
    if not m:
        return
    name, sep, tail = text[m.end():].rpartition(" with ")
    mem = _MEMORY_TAIL_RE.match(tail) if sep else None
    if not mem or not name.strip():
        return
    name = _DEVICE_INDEX_RE.sub("", name.strip())
    out.fact("accelerator", name, where, text.strip())
    out.extra.setdefault("accelerator_memory_gib", number(mem.group(1), nonfinite="keep"))


def _mesh(out: Parsed, where: str, text: str) -> None:
    m = _MESH_RE.search(text)
    if not m:
        return
    names = [n.strip().strip("'\"") for n in m.group(2).split(",") if n.strip()]
    dims = [_int(d) for d in m.group(3).split(",") if d.strip()]
    if len(names) != len(dims) or None in dims:
        return
    world = math.prod(dims)  # type: ignore[arg-type]
    out.fact("parallelism", dict(zip(names, dims, strict=True)), where, text.strip())
    if rules.as_count(world) is not None:
        out.fact("n_accelerators", world, where, text.strip())


def _model(out: Parsed, where: str, text: str) -> None:
    m = _MODEL_RE.search(text)
    if m and m.group(3).endswith("Args"):
        out.fact("model", f"{m.group(1)} {m.group(2)}", where, text.strip()[:200])
        seq = _MAX_SEQ_RE.search(text)
        if seq and _int(seq.group(1)) is not None:
            out.extra.setdefault("model_args_max_seq_len", (_int(seq.group(1)), where, seq.group(0)))
        dt = _ARGS_DTYPE_RE.search(text)
        if dt:
            out.extra.setdefault("model_args_dtype", dt.group(1))


def _counts(out: Parsed, where: str, text: str) -> None:
    if (m := _PARAMS_RE.search(text)) and _int(m.group(3)) is not None:
        out.extra.setdefault("n_parameters", _int(m.group(3)))
    if m := _MOE_PARAMS_RE.search(text):
        dense, sparse, active = (_int(g) for g in m.groups())
        out.extra.setdefault("parameters", {"dense": dense, "sparse": sparse, "active": active, "where": where})
    if m := _PEAK_RE.search(text):
        out.extra.setdefault("peak_flops_assumed", number(m.group(1), nonfinite="keep"))


def _trainer(out: Parsed, where: str, text: str) -> None:
    m = _TRAINER_RE.search(text)
    if not m:
        return
    local, glob, _accum, seq = (_int(g) for g in m.groups())
    out.fact("micro_batch", local, where, text.strip())
    out.fact("global_batch", None if glob is None else float(glob), where, text.strip())
    out.fact("seq_len", seq, where, text.strip())


def _startup_facts(out: Parsed, where: str, text: str) -> bool:
    """Read the facts one non-step line states; True when it was a torchtitan start-up line."""
    n = len(out.facts) + len(out.extra)
    if "capacity:" in text:
        _capacity(out, where, text)
    if "device mesh" in text:
        _mesh(out, where, text)
    if "Trainer is initialized" in text:
        _trainer(out, where, text)
    if "Building " in text:
        _model(out, where, text)
    if "parameter" in text or "Peak FLOPS" in text:
        _counts(out, where, text)
    if "training active" in text and _LOW_PRECISION_RE.search(text):
        out.fact("dtype", "fp8", where, text.strip())
    return len(out.facts) + len(out.extra) > n or "[titan]" in text


# --- step lines -------------------------------------------------------------------------------
@dataclass
class _Scanner:
    """Walks the lines once: step records per rank key, attempts, duplicates, start-up facts."""

    reader: Reader
    out: Parsed
    attempt: dict[int | None, int] = field(default_factory=dict)
    last: dict[int | None, tuple[int, float] | None] = field(default_factory=dict)
    started_at: dict[int | None, tuple[int, float] | None] = field(default_factory=dict)
    logged: dict[int | None, bool] = field(default_factory=dict)
    seen: dict[tuple[int | None, int, int], dict[str, Any]] = field(default_factory=dict)
    records: list[dict[str, Any]] = field(default_factory=list)
    t0: float | None = None
    t_last: float | None = None
    t0_text: str = ""
    aliases: set[str] = field(default_factory=set)
    names: dict[str, None] = field(default_factory=dict)  # field columns, in order of appearance
    other_lines: int = 0
    startup_lines: int = 0

    def line(self, ln: int, text: str, final_unterminated: bool) -> None:
        if not text.strip():
            return
        pm = _PREFIX_RE.match(text)
        key = int(pm.group(1) or pm.group(2)) if pm else None
        tm = _TS_RE.search(text)  # the logger's local time (naive, read as UTC: only differences matter)
        ts = timestamp(tm.group(0)) if tm else None
        if ts is not None:
            if self.t0 is None:
                self.t0, self.t0_text = ts, tm.group(0)
            self.t_last = ts if self.t_last is None else max(self.t_last, ts)
        sm = _START_RE.search(text)
        if sm and "step:" not in text:
            self._training_starts(key, int(sm.group(1)), ts)
            return
        m = _STEP_RE.search(text)
        if not m:
            self.other_lines += 1
            if _startup_facts(self.out, f"{self.reader.name}:{ln}", text) and ts is not None:
                self.startup_lines += 1
            return
        self._step(ln, text, key, ts, m, final_unterminated)

    def _training_starts(self, key: int | None, step: int, ts: float | None) -> None:
        a = self.attempt.setdefault(key, 0)
        if self.logged.get(key):
            self.attempt[key] = a + 1
            self.last[key] = None
            self.logged[key] = False
        if ts is not None:
            self.started_at[key] = (step, ts)

    def _fields(self, ln: int, text: str, rest: str, final_unterminated: bool) -> dict[str, float] | None:
        if "wps:" in rest:
            self.aliases.add("wps->tps")
        fields, bad = _parse_fields(rest)
        if final_unterminated and self.records and not set(fields) >= set(self.records[-1]["fields"]):
            self.reader.bad(rules.HALF_WRITTEN, line=ln, field="step", example=text)
            return None
        for name in bad:
            self.reader.bad(rules.NON_NUMERIC, line=ln, field=name, example=text)
        return fields

    def _keep_columns(self, ln: int, fields: dict[str, float]) -> None:
        """Register the record's field names as columns, up to MAX_FIELD_COLUMNS; count the rest."""
        for name in [f for f in fields if f not in self.names]:
            if len(self.names) < MAX_FIELD_COLUMNS:
                self.names[name] = None
            else:
                del fields[name]
                self.reader.bad(FIELD_NOT_KEPT, line=ln, field=name)

    def _step(self, ln: int, text: str, key: int | None, ts: float | None, m: re.Match, final: bool) -> None:
        step = rules.as_step(m.group(1)) if len(m.group(1)) <= 20 else None
        if step is None:
            self.reader.bad(rules.BAD_STEP, line=ln, field="step", example=text)
            return
        fields = self._fields(ln, text, m.group(2), final)
        if fields is None:
            return
        if ts is None:
            self.reader.bad(rules.MISSING_FIELD, line=ln, field="timestamp", example=text, detail="timestamp")
            return
        a = self.attempt.setdefault(key, 0)
        prev = self.last.get(key)
        dup = self.seen.get((key, a, step))
        if dup is not None and abs(ts - dup["end"]) <= _DUP_WINDOW_S:
            dup["n_reports"] += 1
            return
        if prev is not None and step <= prev[0]:  # the step number went back: a new launch
            a = self.attempt[key] = a + 1
            prev = None
            self.started_at[key] = None
        if prev is not None and ts < prev[1]:
            self.reader.bad(rules.NON_MONOTONIC, line=ln, field="timestamp", example=text)
            return
        self._record(ln, key, a, step, ts, prev, fields)

    def _record(self, ln: int, key: int | None, a: int, step: int, ts: float,
                prev: tuple[int, float] | None, fields: dict[str, float]) -> None:
        if prev is None:
            st = self.started_at.get(key)
            known = st is not None and st[0] <= step and st[1] <= ts
            first_step, start_t = (st[0], st[1]) if known else (step, ts)  # type: ignore[index]
        else:
            first_step, start_t, known = prev[0] + 1, prev[1], True
        self._keep_columns(ln, fields)
        rec = {"key": key, "attempt": a, "step": step, "first_step": first_step, "start": start_t,
               "end": ts, "known": known, "fields": fields, "n_reports": 1, "line": ln}
        self.records.append(rec)
        self.seen[(key, a, step)] = rec
        self.last[key] = (step, ts)
        self.logged[key] = True
        self.started_at[key] = None


# --- rows -------------------------------------------------------------------------------------
def _interval_counts(records: list[dict[str, Any]], reader: Reader) -> tuple[np.ndarray, np.ndarray]:
    """Steps each line's interval covers, and the rows it becomes (1 for one too long)."""
    n = np.empty(len(records), np.int64)
    rows = np.empty(len(records), np.int64)
    for i, r in enumerate(records):
        k = r["step"] - r["first_step"] + 1
        ok = rules.interval_ok(k)
        if not ok:
            reader.bad(rules.INTERVAL_TOO_LONG, line=r["line"], field="step",
                       example=f"step {r['step']}: {k:,} steps since the previous line")
        n[i] = min(k, rules.MAX_INT64)
        rows[i] = k if ok else 1
    return n, rows


def _columns(records: list[dict[str, Any]], names: dict[str, None], t_origin: float,
             reader: Reader) -> dict[str, np.ndarray]:
    """One row per step of each logged interval, with an equal share of its wall time."""
    n, rows = _interval_counts(records, reader)
    rows = timeline.within_budget(rows, reader)

    def rep(values: list[Any], dtype: Any = None) -> np.ndarray:
        return np.repeat(np.array(values, dtype=dtype), rows)

    ex = timeline.expand(np.array([r["step"] for r in records], np.int64), n, rows,
                         np.array([r["start"] for r in records], float), place="even",
                         end=np.array([r["end"] for r in records], float), origin=t_origin)
    is_logged = ex.logged
    cols: dict[str, np.ndarray] = {
        "attempt": rep([r["attempt"] for r in records], np.int64),
        "rank": rep([-1 if r["key"] is None else r["key"] for r in records], np.int64),
        "interval_steps": np.repeat(n, rows),
        "interval_known": rep([r["known"] for r in records], bool),
        "n_reports": rep([r["n_reports"] for r in records], np.int64),
        "step": ex.step,
        "start_s": ex.start,
        "logged": is_logged,
    }
    cols["end_s"] = cols["start_s"] + ex.share
    for f in names:
        vals = rep([r["fields"].get(f, math.nan) for r in records], float)
        if f not in _RATE_FIELDS:
            vals[~is_logged] = math.nan
        cols[f] = vals
    return cols


def _claims(out: Parsed, sc: _Scanner) -> None:
    for col, metric, unit, counts, scale in _CLAIMS:
        with_value = [r for r in sc.records if math.isfinite(r["fields"].get(col, math.nan))]
        if with_value:
            out.claim(Claim.summarise(metric, [r["fields"][col] * scale for r in with_value], unit=unit,
                                      counts=counts, where=f"{sc.reader.name}:{with_value[0]['line']}"))


def _notes(reader: Reader, sc: _Scanner) -> None:
    keys = {r["key"] for r in sc.records}
    if None in keys and len(keys) > 1:
        reader.note("some step lines have a rank prefix and some do not; unprefixed ones kept as rank -1")
    n_dup = sum(r["n_reports"] - 1 for r in sc.records)
    if n_dup:
        reader.note(
            f"{n_dup} duplicate step lines collapsed (the same step printed by several ranks "
            "without a rank prefix): one job-level row per step"
        )
    if not all(r["known"] for r in sc.records):
        reader.note("the first logged step of an attempt has no start time in the log: zero-width row")
    if sc.other_lines:
        reader.note(f"{sc.other_lines} lines are not step records (config, warnings, ...)")


def _scan(reader: Reader, out: Parsed) -> _Scanner:
    sc = _Scanner(reader, out)
    pending: tuple[int, str] | None = None
    for ln, text in reader.lines():
        reader.report.lines_read += 1
        if pending is not None:
            sc.line(*pending, False)
        pending = (ln, text)
    if pending is not None:  # the text after the last newline: non-empty means no final newline
        sc.line(pending[0], pending[1], bool(pending[1].strip()))
    seq = out.extra.pop("model_args_max_seq_len", None)
    if seq is not None and not any(f.name == "seq_len" for f in out.facts):
        out.fact("seq_len", seq[0], seq[1], seq[2])
    return sc


def _startup_only(reader: Reader, out: Parsed, sc: _Scanner) -> Parsed:
    """A log of start-up lines only: its facts and one init event, no steps."""
    if not sc.startup_lines or sc.t0 is None or sc.t_last is None:
        reader.fail(
            "no torchtitan step lines ('step: N  loss: ...') found"
            + (f"; {reader.report.total_skipped} malformed" if reader.report.total_skipped else "")
        )
    reader.note("no step lines: the log holds torchtitan's start-up lines only (a job that ended in "
                "set-up, or an excerpt of its start); its facts are kept, no step is invented")
    out.events = [{"kind": "init", "start_s": 0.0, "end_s": sc.t_last - sc.t0, "attempt": 0,
                   "detail": "start-up lines only, no step line"}]
    out.extra.update({"t0_wallclock": sc.t0_text, "t0_timezone": "unknown (logger local time)"})
    return out


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a torchtitan stdout log (see the module docstring for the mapping)."""
    if reader.path.is_dir():
        reader.fail("torchtitan logs are single files; got a directory")
    out = Parsed(timing="interval_mean", time_unit="ms")  # logger stamps, millisecond resolution
    out.meta["name"] = reader.path.name.split(".")[0]
    sc = _scan(reader, out)
    if not sc.records:
        return _startup_only(reader, out, sc)
    _notes(reader, sc)
    out.steps = _columns(sc.records, sc.names, float(sc.t0 if sc.t0 is not None else sc.records[0]["start"]), reader)
    _claims(out, sc)
    counts = out.steps["interval_steps"][out.steps["logged"] & out.steps["interval_known"]]
    prefixed = any(r["key"] is not None for r in sc.records)
    out.extra.update({
        "t0_wallclock": sc.t0_text,
        "t0_timezone": "unknown (logger local time)",
        "rank_prefixed": prefixed,
        "field_aliases": sorted(sc.aliases),
        "log_interval_steps": int(np.median(counts)) if len(counts) else None,
    })
    if not prefixed:
        out.extra["max_copies_per_step"] = int(max(r["n_reports"] for r in sc.records))
    return out


load = loader_for(NAME)
