"""MLPerf Training result logs: ``:::MLLOG {json}`` lines (``time_ms`` = epoch ms) and ``:::SYSJSON``.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- ``init_start`` → ``init_stop`` (or ``run_start`` when ``init_stop`` is missing) is an ``init``
  event; ``run_start`` → ``run_stop`` is the timed run (``meta.extra['run_duration_s']``, the
  benchmark's time-to-train, and ``run_status``).
- ``block_start`` → ``block_stop`` are the training blocks between evaluations; each becomes one
  step row (``step`` = block ordinal, ``rank = -1``, ``meta.timing = "exact"``). ``samples`` is
  the ``samples_count`` difference across the block where the log gives it. ``epoch_count`` is
  kept as logged: its unit differs between benchmarks (epochs, samples, or tokens: MLPerf GPT-3
  counts tokens, so there it fills ``tokens``). Where a block contains evaluations (BERT) the
  block is split around them, so no second is counted twice. Without blocks, the epochs (or the
  run) minus the evaluations are the training segments (DLRM logs only epochs).
- ``eval_start`` → ``eval_stop`` are ``eval`` events; ``eval_accuracy`` values go to the ``evals``
  table and into the event's detail. ``epoch_start``/``epoch_stop`` go to the ``epochs`` table;
  ``tracked_stats`` and other per-step values (``train_loss``) to the ``metrics`` table.
- Per-rank duplicates (the GPT-3 log has ``init_start`` 512 times) are collapsed to one record
  and reported in ``meta.report.notes``; they are not skipped records and not double counted.
- Records out of time order are skipped by the shared clock rule (:class:`~mfu_toolkit.io.rules.Clock`,
  tolerance ``clock_tolerance_s``); a lone garbled ``time_ms`` far ahead is the one skipped.

The submission fields (benchmark, org, division, status, platform) and the parameters logged once
go to ``meta.extra``; the Run is named "benchmark org platform".

Facts (each with ``file:line`` and the line as printed):

- ``submission_platform`` is the ``platform`` fact (``"64xNVIDIA DGX H100"``); its ``N x SYSTEM``
  form also states ``n_nodes`` = N. ``submission_benchmark`` is the ``model``;
  ``global_batch_size`` the ``global_batch``; ``max_sequence_length`` (or ``seq_len``-type keys)
  the ``seq_len``.
- ``submission_division`` ``closed`` with a ``submission_benchmark`` states the ``reference_model`` (MLPerf
  Training rules, "Divisions"); :func:`mfu_toolkit.facts.resolve` turns it into model FLOPs where it can.
- ``:::SYSJSON`` gives ``n_nodes`` (``number_of_nodes``), ``accelerators_per_node``, their
  product as ``n_accelerators``, ``accelerator`` (``accelerator_model_name``, exactly as printed)
  and ``framework``. Only SYSJSON states the accelerator count.
- ``n_ranks``: the number of distinct ``metadata.rank`` values of the ``init_start`` records
  where they carry one; otherwise, when ``init_start`` is logged more than once, the number of
  copies (each rank logs it once). MLPerf jobs usually run one rank per accelerator, but the log
  does not say so: this is an ``n_ranks`` fact, never an ``n_accelerators`` one, and its text
  says how it was counted. A single ``init_start`` (a log written by one process) states none.

Claims: ``tracked_stats`` ``throughput`` values are a ``samples_per_s`` claim (the median), or
``tokens_per_s`` for GPT-3, which counts training in tokens. The log names no unit; in the NVIDIA
logs they are samples (tokens) per second of the whole job (BERT, Llama 2 LoRA: over the time between
records; GPT-3: since the first block).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ...run import InputRequest
from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, read_head
from ..values import number, numeral

NAME = "mlperf"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """Besides the RunMeta keywords: ``clock_tolerance_s`` (default 1.0), a record more than this many seconds
    earlier than one already read is skipped as non-monotonic; smaller offsets (ranks' clocks) are accepted."""

    clock_tolerance_s: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "clock_tolerance_s", rules.clock_tolerance(self.clock_tolerance_s))


_MLLOG = ":::MLLOG"
_KINDS = ("init", "run", "block", "eval", "epoch")  # the start/stop intervals MLPerf logs
_SYSJSON = ":::SYSJSON"
_SCAN_BYTES = 4 << 20
# key -> (interval kind, whether it starts one): init_start -> ("init", True), ..., epoch_stop -> ("epoch", False)
_PAIRS = {f"{kind}_{end}": (kind, end == "start") for kind in _KINDS for end in ("start", "stop")}
_ID_KEYS = ("samples_count", "epoch_num", "first_epoch_num", "epoch_count")
# Benchmarks whose epoch counters are in tokens (MLPerf GPT-3 rules count training in tokens).
_TOKEN_COUNTED = {"gpt3"}
_PLATFORM_RE = re.compile(r"(\d+)\s*[xX]\s*(.+)", re.S)  # matched on the stripped value
_SEQ_KEYS = ("max_sequence_length", "sequence_length", "seq_len", "seq_length", "max_seq_length")
# Keys that state the training precision (MLPerf has no standard key): a dtype name, or True for an "fp8" flag.
_DTYPE_KEYS = ("precision", "dtype", "compute_dtype", "training_precision")
_FP8_FLAGS = ("fp8", "use_fp8", "fp8_training")
_TEXT_KEYS = frozenset({"submission_platform", "submission_benchmark", "global_batch_size", *_SEQ_KEYS, *_DTYPE_KEYS,
                        *_FP8_FLAGS})
_MAX_TIME_MS = 253_402_300_800_000  # time_ms after the year 9999 is not a time a log was written at
# A line bash's xtrace (set -x) prints for a command it runs: one or more "+" then a space.
_XTRACE = re.compile(r"\+{1,16} ")
_MAX_RANK = 10_000_000
_NOT_PARAMS = ("cache_clear", "tracked_stats", "eval_accuracy", "train_loss", "weights_initialization")
_JSON_START = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:\{\s*[\"}]|\[\s*[\[{\"\]])")


def sniff(path: Path, head: bytes) -> float:
    """0.95 when ``:::MLLOG {`` records appear in the head, or in the first 4 MiB after a long preamble
    (launcher or shell output) where the head is text (``rules.looks_like_text``) and not a JSON document
    (a trace, a metrics dump): anything else is rejected from its head alone, without reading further."""
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    if b":::MLLOG {" in head or b":::MLLOG{" in head:
        return 0.95
    if b":::SYSJSON" in head:
        return 0.9
    if not rules.looks_like_text(head) or _JSON_START.match(head):
        return 0.0
    try:
        # more to read: a full head (a gzipped file's head is decompressed), or a longer file
        if len(head) >= 8192 or p.stat().st_size > len(head):
            data = read_head(p, _SCAN_BYTES)
            if b":::MLLOG {" in data:
                return 0.9
    except Exception:
        return 0.0
    return 0.0


# --- reading the records ---------------------------------------------------------------------
@dataclass
class _Rec:
    line: int
    key: str
    t: float  # seconds since the first valid record
    value: Any
    meta: dict[str, Any] = field(default_factory=dict)
    text: str = ""  # the line as printed, for the keys in _TEXT_KEYS


@dataclass
class _Log:
    recs: list[_Rec] = field(default_factory=list)
    sysjson: list[tuple[int, dict[str, Any], str]] = field(default_factory=list)
    other: int = 0
    base_ms: float | None = None
    init_starts: list[_Rec] = field(default_factory=list)
    ranks: set[int] = field(default_factory=set)
    # Records earlier than the log's first record, read after it: a stream appended after the
    # training output (the launcher's cache_clear records), kept only if nothing follows them.
    early: list[_Rec] = field(default_factory=list)
    xtrace: int = 0


def _sysjson(reader: Reader, log: _Log, ln: int, text: str) -> None:
    j = text.find(_SYSJSON)
    if j < 0:
        log.other += 1
        return
    d, ok = reader.json(text[j + len(_SYSJSON) :].strip(), line=ln)
    if ok and isinstance(d, dict):
        log.sysjson.append((ln, d, text))
    elif ok:
        reader.bad(rules.NOT_AN_OBJECT, line=ln, example=text, detail="SYSJSON")


def _mllog(reader: Reader, ln: int, text: str, payload: str) -> tuple[dict[str, Any], str, float] | None:
    """The record, its key and ``time_ms``, or None after counting it as bad."""
    d, ok = reader.json(payload, line=ln)
    if not ok:
        return None
    if not isinstance(d, dict):
        reader.bad(rules.NOT_AN_OBJECT, line=ln, example=text)
        return None
    key = d.get("key")
    if not isinstance(key, str) or not key:
        reader.bad(rules.MISSING_FIELD, line=ln, field="key", example=text, detail="key")
        return None
    t_ms = rules.as_number(d.get("time_ms"))
    if math.isnan(t_ms):
        reader.bad(rules.NON_FINITE_TIME, line=ln, field="time_ms", example=text, detail="time_ms")
        return None
    if not 0 <= t_ms <= _MAX_TIME_MS:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="time_ms", example=text,
                   detail="time_ms before 1970 or after 9999")
        return None
    return d, key, t_ms


def _init_rank(reader: Reader, log: _Log, rec: _Rec) -> None:
    """Remember an ``init_start`` record and the rank it names, if any."""
    log.init_starts.append(rec)
    if "rank" not in rec.meta:
        return
    rank = rules.as_step(rec.meta["rank"])
    if rank is None or rank >= _MAX_RANK:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=rec.line, field="rank", example=str(rec.meta["rank"])[:80],
                   detail="metadata.rank")
        return
    log.ranks.add(rank)


def _read(reader: Reader, tol_s: float) -> _Log:
    """Records with times in seconds relative to the first valid record (kept exact in ms)."""
    log = _Log()
    clock = rules.Clock(tol_s)
    for ln, text in reader.lines():
        if not text.strip():
            continue
        reader.report.lines_read += 1
        if _XTRACE.match(text):  # the shell printing a command (set -x), e.g. + echo ':::SYSJSON {...}'
            log.xtrace += 1
            continue
        i = text.find(_MLLOG)
        if i < 0:
            _sysjson(reader, log, ln, text)
            continue
        got = _mllog(reader, ln, text, text[i + len(_MLLOG) :].strip())
        if got is None:
            continue
        d, key, t_ms = got
        if log.base_ms is None:
            log.base_ms = t_ms
        t = (t_ms - log.base_ms) / 1000.0
        meta = d.get("metadata")
        rec = _Rec(ln, key, t, d.get("value"), meta if isinstance(meta, dict) else {},
                   text if key in _TEXT_KEYS else "")
        if _early(log, rec, tol_s):
            continue
        _drop_early(reader, log, tol_s)
        verdict = clock.check(t)
        if verdict == "late":
            _late(reader, ln, tol_s, text)
            continue
        if verdict == "retract":
            bad = log.recs.pop()
            if log.init_starts and log.init_starts[-1] is bad:
                log.init_starts.pop()
            reader.bad(rules.NON_MONOTONIC, line=bad.line, field="time_ms",
                       detail="far ahead of the records before and after it")
        log.recs.append(rec)
        if key == "init_start":
            _init_rank(reader, log, rec)
    _keep_early(reader, log)
    return log


def _early(log: _Log, rec: _Rec, tol_s: float) -> bool:
    """Hold ``rec`` if it lies before every record of the log so far (by more than ``tol_s``) and
    in time order after the records held before it: the start of a stream appended late."""
    if not log.recs or rec.t >= log.recs[0].t - tol_s or (log.early and rec.t < log.early[-1].t - tol_s):
        return False
    log.early.append(rec)
    return True


def _drop_early(reader: Reader, log: _Log, tol_s: float) -> None:
    """Records held as an early stream that the timeline then went on after: each is out of order."""
    for r in log.early:
        _late(reader, r.line, tol_s)
    log.early.clear()


def _late(reader: Reader, line: int, tol_s: float, example: str | None = None) -> None:
    reader.bad(rules.NON_MONOTONIC, line=line, field="time_ms", example=example,
               detail=f"more than {tol_s:g} s before an earlier record")


def _keep_early(reader: Reader, log: _Log) -> None:
    """An early stream at the end of the file is placed by its time_ms, with a note."""
    if not log.early:
        return
    a, b = log.early[0].line, log.early[-1].line
    reader.note(f"{len(log.early)} record(s) at lines {a}-{b}, the file's last, are earlier than its first record: a "
                "stream appended after the training output; placed by their time_ms")
    log.recs[:0] = log.early
    for r in log.early:
        if r.key == "init_start":
            _init_rank(reader, log, r)
    log.early.clear()


# --- intervals ---------------------------------------------------------------------------------
@dataclass
class _Interval:
    kind: str
    t0: float
    line: int
    meta0: dict[str, Any]
    t1: float = math.nan
    meta1: dict[str, Any] = field(default_factory=dict)
    line1: int = 0


@dataclass
class _Timeline:
    closed: dict[str, list[_Interval]]
    open_: dict[str, _Interval]
    copies: dict[str, int]
    points: dict[str, list[_Rec]]


def _ident(meta: dict[str, Any]) -> tuple:
    return tuple((k, str(meta[k])) for k in _ID_KEYS if k in meta)


def _start(reader: Reader, tl: _Timeline, kind: str, r: _Rec) -> None:
    cur = tl.open_.get(kind)
    if cur is not None and _ident(cur.meta0) == _ident(r.meta):
        tl.copies[r.key] = tl.copies.get(r.key, 0) + 1
        cur.t0 = min(cur.t0, r.t)
        return
    if cur is not None:
        reader.bad(rules.START_WITHOUT_END, line=cur.line, field="key", detail=kind)
    tl.open_[kind] = _Interval(kind, r.t, r.line, r.meta)


def _first_block_from_run(reader: Reader, tl: _Timeline, kind: str, r: _Rec) -> _Interval | None:
    """The first training block of a log that has no ``block_start`` for it: it starts at
    ``run_start`` (MLPerf's timed training begins there), said in a note; else None."""
    run = tl.open_.get("run")
    if kind != "block" or tl.closed["block"] or run is None or run.t0 > r.t:
        return None
    reader.note(f"the first block_stop (line {r.line}) has no block_start: the block is taken to start at "
                f"run_start (line {run.line})")
    return _Interval("block", run.t0, run.line, dict(r.meta))


def _stop(reader: Reader, tl: _Timeline, kind: str, r: _Rec) -> None:
    cur = tl.open_.pop(kind, None)
    if cur is None:
        last = tl.closed[kind][-1] if tl.closed[kind] else None
        if last is not None and _ident(last.meta1) == _ident(r.meta):
            tl.copies[r.key] = tl.copies.get(r.key, 0) + 1
            return
        if (cur := _first_block_from_run(reader, tl, kind, r)) is None:
            reader.bad(rules.END_WITHOUT_START, line=r.line, field="key", detail=kind)
            return
    if r.t < cur.t0:
        reader.bad(rules.END_BEFORE_START, line=r.line, field="time_ms", detail=kind)
        return
    cur.t1 = r.t
    cur.meta1 = r.meta
    cur.line1 = r.line
    tl.closed[kind].append(cur)


def _timeline(reader: Reader, recs: list[_Rec]) -> _Timeline:
    """Start/stop pairs as intervals (per-rank copies collapsed), the other records as points."""
    tl = _Timeline({k: [] for k in _KINDS}, {}, {}, {})
    for r in recs:
        pair = _PAIRS.get(r.key)
        if pair is None:
            tl.points.setdefault(r.key, []).append(r)
        elif pair[1]:
            _start(reader, tl, pair[0], r)
        else:
            _stop(reader, tl, pair[0], r)
    for key, n in sorted(tl.copies.items()):
        reader.note(f"{key} logged {n + 1} times (per-rank copies); collapsed to one record")
    return tl


def _run_and_init(reader: Reader, tl: _Timeline) -> tuple[_Interval | None, float | None]:
    """The timed run (first run_start/run_stop pair) and its start; an open init ends at run_start."""
    init_open = tl.open_.pop("init", None)
    run_open = tl.open_.pop("run", None)
    for kind, iv in tl.open_.items():
        reader.bad(rules.START_WITHOUT_END, line=iv.line, field="key", detail=f"{kind}; the log ends")
    runs = tl.closed["run"]
    run_iv = runs[0] if runs else None
    if len(runs) > 1:
        reader.note(f"{len(runs)} run_start/run_stop pairs; the first is the timed run")
    run_start_t = run_iv.t0 if run_iv else (run_open.t0 if run_open else None)
    if run_iv is None:
        reader.note("no run_stop: the run did not finish, or the log is truncated")
    if init_open is not None:
        if run_start_t is not None and run_start_t >= init_open.t0:
            init_open.t1 = run_start_t
            tl.closed["init"].append(init_open)
            reader.note("no init_stop: init taken to end at run_start")
        else:
            reader.bad(rules.START_WITHOUT_END, line=init_open.line, field="key", detail="init; no end or run_start")
    return run_iv, run_start_t


# --- facts and claims --------------------------------------------------------------------------
def _first(tl: _Timeline, key: str) -> _Rec | None:
    lst = tl.points.get(key)
    return lst[0] if lst else None


def _platform(tl: _Timeline) -> _Rec | None:
    """The ``submission_platform`` record, when it names a platform (a non-blank text)."""
    plat = _first(tl, "submission_platform")
    return plat if plat is not None and isinstance(plat.value, str) and plat.value.strip() else None


def _count_fact(out: Parsed, reader: Reader, r: _Rec | None, name: str) -> int | None:
    """A positive count stated by record ``r`` as fact ``name``; a bad value is counted, not used."""
    if r is None or r.value is None:
        return None
    n = rules.as_count(r.value)
    if n is None:
        # a number at all (NaN, infinity, a numeral too long to read included) is out of range
        is_number = number(r.value, nonfinite="keep") is not None or numeral(r.value)
        why = rules.VALUE_OUT_OF_RANGE if is_number else rules.NON_NUMERIC
        reader.bad(why, line=r.line, field=r.key, example=str(r.value)[:80], detail=r.key)
        return None
    out.fact(name, n, f"{reader.name}:{r.line}", r.text)
    return n


def _point_facts(out: Parsed, reader: Reader, tl: _Timeline, extra: dict[str, Any]) -> None:
    """Platform, nodes, benchmark, global batch and sequence length as the submission states them."""
    if (plat := _platform(tl)) is not None:
        where = f"{reader.name}:{plat.line}"
        out.fact("platform", plat.value, where, plat.text)
        if m := _PLATFORM_RE.fullmatch(plat.value.strip()):
            nodes = rules.as_count(m.group(1))
            if nodes is None:
                reader.bad(rules.VALUE_OUT_OF_RANGE, line=plat.line, field="submission_platform",
                           example=plat.value[:80], detail="submission_platform node count")
            else:
                out.fact("n_nodes", nodes, where, plat.text)
                extra["platform_nodes"] = nodes
                extra["platform_system"] = m.group(2).strip()
        _dtype_fact(out, reader, tl)
    bench = _first(tl, "submission_benchmark")
    if bench is not None and isinstance(bench.value, str) and bench.value.strip():
        out.fact("model", bench.value, f"{reader.name}:{bench.line}", bench.text)
        _reference_fact(out, reader, tl, bench)
    _count_fact(out, reader, _first(tl, "global_batch_size"), "global_batch")
    for key in _SEQ_KEYS:
        if _count_fact(out, reader, _first(tl, key), "seq_len") is not None:
            break


def _reference_fact(out: Parsed, reader: Reader, tl: _Timeline, bench: _Rec) -> None:
    """The benchmark's reference model, where the log states the closed division (which trains it)."""
    div = _first(tl, "submission_division")
    if div is None or not isinstance(div.value, str) or div.value.strip().lower() != "closed":
        return
    name = bench.value.strip()
    out.fact("reference_model", name, f"{reader.name}:{bench.line}",
             f"the MLPerf closed-division rule: benchmark {name[:60]!r} is the reference model "
             f"(submission_division {div.value.strip()[:20]!r} at line {div.line})")


def _dtype_fact(out: Parsed, reader: Reader, tl: _Timeline) -> None:
    """The training precision, where a record states it (see ``_DTYPE_KEYS``); never guessed."""
    for key in _DTYPE_KEYS:
        r = _first(tl, key)
        if r is not None and isinstance(r.value, str) and r.value.strip():
            out.fact("dtype", r.value.strip(), f"{reader.name}:{r.line}", r.text)
            return
    for key in _FP8_FLAGS:
        r = _first(tl, key)
        if r is not None and r.value is True:
            out.fact("dtype", "fp8", f"{reader.name}:{r.line}", r.text)
            return


def _platform_facts(out: Parsed, reader: Reader, tl: _Timeline, extra: dict[str, Any]) -> None:
    """The accelerator a submission platform names (``"64xNVIDIA DGX H100"``, ``"XE9680x8H100-SXM-80GB"``)
    and its accelerators per node, as ``hardware.resolve_system`` reads them (the sourced system table
    mfu_toolkit/systems.csv, counts the name embeds, the peak registry); only for what a SYSJSON line did
    not already state. The system is never taken for the accelerator, and a system the table does not know
    (HGX boards come with 4 or 8 GPUs) states no per-node count."""
    from ... import hardware

    if (plat := _platform(tl)) is None:
        return
    where = f"{reader.name}:{plat.line}"
    system = str(extra.get("platform_system") or plat.value.strip())
    found = hardware.resolve_system(plat.value) if len(system) <= 200 else None  # a longer string names no system
    stated = {f.name for f in out.facts if f.where != where}
    acc = found.accelerator if found is not None else None
    per = found.per_system if found is not None else None
    if found is not None:
        source = f" ({found.source})" if found.source else ""
        text = (f"{plat.value!r}: {per if per is not None else 'an unknown count of'} x "
                f"{acc or 'an unnamed accelerator'} per {system}{source}")
    if "accelerator" not in stated and acc is not None:
        out.fact("accelerator", acc, where, text)
    elif "accelerator" not in stated:
        why = found.note if found is not None else "neither the system table nor the peak registry knows it"
        reader.note(InputRequest(f"peak unknown: the platform {plat.value!r} at {where} names {system!r}, not an "
                                 f"accelerator the registry resolves ({why})", ("accelerator",),
                                 "pass accelerator= to set it"))
    if per is not None and "accelerators_per_node" not in stated:
        out.fact("accelerators_per_node", per, where, text)
        if "platform_nodes" in extra:
            extra["platform_accelerators"] = extra["platform_nodes"] * per
    elif "accelerators_per_node" not in stated and "platform_nodes" in extra:
        reader.note(InputRequest(f"n_accelerators unknown: the platform {plat.value!r} at {where} names "
                                 f"{extra['platform_nodes']} x {system!r}, a system whose accelerators per node the "
                                 f"loader has no source for ({found.note if found else 'not in systems.csv'})",
                                 ("n_accelerators",), "pass n_accelerators= for the job's count"))


def _check_ranks(out: Parsed, reader: Reader) -> None:
    """Nodes x accelerators per node against the per-rank record count: a disagreement is noted."""
    first: dict[str, Any] = {}
    for f in out.facts:
        first.setdefault(f.name, f)
    nodes, per, ranks = (first.get(k) for k in ("n_nodes", "accelerators_per_node", "n_ranks"))
    if nodes is None or per is None or ranks is None:
        return
    total = nodes.value * per.value
    if total != ranks.value:
        reader.note(f"the platform states {nodes.value} nodes x {per.value} accelerators = {total} ({per.where}), but "
                    f"{ranks.value} ranks logged init_start ({ranks.where}); one rank per accelerator does not hold "
                    "here, or the log is incomplete: n_accelerators is taken from the platform, not from the ranks")
    else:
        reader.note(f"{nodes.value} nodes x {per.value} accelerators = {total} ({per.where}) matches the {ranks.value} "
                    f"ranks that logged init_start ({ranks.where})")


def _snippet(raw: str, key: str) -> str:
    """``"key":"value"`` as printed in a SYSJSON line (the key's own text), else ``key``."""
    m = re.search(r'"' + re.escape(key) + r'"\s*:\s*(?:"[^"]{0,200}"|[^,}]{0,200})', raw)
    return m.group(0) if m else key


def _sysjson_facts(out: Parsed, reader: Reader, sysjson: list[tuple[int, dict[str, Any], str]],
                   extra: dict[str, Any]) -> None:
    """Nodes, accelerators per node (and their product), accelerator name and framework."""
    ln0, sysd, raw = sysjson[0]
    differing = sum(1 for _, d, _ in sysjson[1:] if d != sysd)
    if len(sysjson) > 1:
        reader.note(f"SYSJSON logged {len(sysjson)} times; collapsed to one"
                    + (f" ({differing} copies differ; the first kept)" if differing else ""))
    keys = ("system_name", "number_of_nodes", "accelerators_per_node", "accelerator_model_name", "framework")
    extra["system"] = {k: sysd.get(k) for k in keys if k in sysd}
    where = f"{reader.name}:{ln0}"
    for key, name in (("accelerator_model_name", "accelerator"), ("framework", "framework")):
        v = sysd.get(key)
        if isinstance(v, str) and v.strip():
            out.fact(name, v, where, _snippet(raw, key))
    if "number_of_nodes" not in sysd and "accelerators_per_node" not in sysd:
        return
    nodes, per = rules.as_count(sysd.get("number_of_nodes")), rules.as_count(sysd.get("accelerators_per_node"))
    if nodes is not None:
        out.fact("n_nodes", nodes, where, _snippet(raw, "number_of_nodes"))
    if per is not None:
        out.fact("accelerators_per_node", per, where, _snippet(raw, "accelerators_per_node"))
    total = rules.as_count(nodes * per) if nodes is not None and per is not None else None
    if total is None:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln0, field="accelerators_per_node",
                   detail="SYSJSON number_of_nodes/accelerators_per_node not positive integers")
        return
    text = f"{_snippet(raw, 'number_of_nodes')} x {_snippet(raw, 'accelerators_per_node')}"
    out.fact("n_accelerators", total, where, text)


def _rank_facts(out: Parsed, reader: Reader, log: _Log, tl: _Timeline, extra: dict[str, Any]) -> None:
    """``n_ranks`` from the ``init_start`` records (see the module docstring for the rule)."""
    if not log.init_starts:
        return
    copies = tl.copies.get("init_start", 0) + 1
    if copies > 1:
        extra["init_start_copies"] = copies
    where = f"{reader.name}:{log.init_starts[0].line}"
    if log.ranks:
        out.fact("n_ranks", len(log.ranks), where,
                 f"{len(log.ranks)} distinct metadata.rank values in {len(log.init_starts)} init_start records")
    elif copies > 1:
        out.fact("n_ranks", copies, where, f"init_start logged {copies} times with no rank ids, each copy counted as "
                 "one rank (one rank per accelerator is usual in MLPerf, not stated here)")


def _claims(out: Parsed, reader: Reader, tl: _Timeline, token_counted: bool, run_iv: _Interval | None = None) -> None:
    """``tracked_stats`` ``throughput`` as a claim about the whole job: tokens/s where the
    benchmark counts training in tokens (GPT-3), else samples/s.

    Throughput records logged through training are rates over the time between records (the
    steady steps, evaluations aside); a log whose only throughput records are logged when the
    timed run stops (DLRM: one record, at ``run_stop``) states the rate of the timed run, from
    ``run_start`` to ``run_stop`` with its evaluations, and the claim says so (basis ``run``)."""
    recs = [r for r in tl.points.get("tracked_stats", []) if isinstance(r.value, dict) and "throughput" in r.value]
    if not recs:
        return
    unit = "tokens" if token_counted else "samples"
    at_stop = run_iv is not None and all(abs(r.t - run_iv.t1) <= 1.0 for r in recs)
    if at_stop:
        counts = (f"{unit} per second of the timed run (tracked_stats 'throughput' logged at run_stop, line "
                  f"{run_iv.line1}: the {unit} trained from run_start to run_stop over that time, "
                  "evaluations included)")
    else:
        counts = (f"{unit} per second of the whole job (tracked_stats 'throughput'; the log states no unit: in the "
                  f"NVIDIA logs it is the {unit} trained over the time between records)")
    out.claim(Claim.summarise(f"{unit}_per_s", [rules.as_number(r.value["throughput"]) for r in recs], unit=f"{unit}/s",
                              counts=counts, where=f"{reader.name}:{recs[0].line}",
                              basis="run" if at_stop else "steady"))


def _submission_extra(tl: _Timeline, extra: dict[str, Any]) -> str | None:
    """Submission fields and single-valued parameters for ``meta.extra``; returns the run's name."""
    for key, label in (("submission_benchmark", "benchmark"), ("submission_org", "org"),
                       ("submission_division", "division"), ("submission_status", "status"),
                       ("submission_platform", "platform")):
        r = _first(tl, key)
        if r is not None and r.value is not None:
            extra[label] = str(r.value)
    params: dict[str, Any] = {}
    for key, lst in tl.points.items():
        if key.startswith("submission_") or key in _NOT_PARAMS:
            continue
        v = lst[0].value
        if len(lst) == 1 and (v is None or isinstance(v, (str, int, float, bool))):
            params[key] = v if not (isinstance(v, float) and not math.isfinite(v)) else str(v)
    if params:
        extra["params"] = params
    return " ".join(extra[k] for k in ("benchmark", "org", "platform") if k in extra) or None


def _time_extra(reader: Reader, tl: _Timeline, run_iv: _Interval | None, run_start_t: float | None, t0: float,
                base_ms: float, extra: dict[str, Any]) -> None:
    extra["t0_epoch_s"] = (base_ms + t0 * 1000.0) / 1000.0
    extra["t0_wallclock"] = rules.wallclock(extra["t0_epoch_s"])
    if run_start_t is not None:
        extra["run_start_s"] = run_start_t - t0
    if run_iv is not None:
        extra["run_stop_s"] = run_iv.t1 - t0
        # MLPerf's score: time to train is run_start to run_stop (MLPerf Training rules, "Timing")
        extra["run_duration_s"] = extra["time_to_train_s"] = run_iv.t1 - run_iv.t0
        extra["time_to_train_where"] = f"{reader.name}:{run_iv.line}-{run_iv.line1}"
        if (status := run_iv.meta1.get("status")) is not None:
            extra["run_status"] = str(status)
    if tl.closed["init"]:
        extra["init_duration_s"] = tl.closed["init"][0].t1 - tl.closed["init"][0].t0
    for key in ("train_samples", "eval_samples", "trained_samples"):
        r = _first(tl, key)
        v = rules.as_number(r.value) if r is not None else math.nan
        if not math.isnan(v):
            extra[key] = v


# --- events, steps, tables ---------------------------------------------------------------------
def _accuracy_for(evals: list[_Interval], accs: list[_Rec]) -> list[_Rec | None]:
    """The ``eval_accuracy`` record of each evaluation, each used once.

    An evaluation takes the unused accuracy that lies inside it in time (the earliest such:
    ``timeline.Points``) or, if one comes earlier in the log, the first unused one that names the
    same counters (``samples_count``, ``epoch_num``, ...: a pointer per counter value). Linear.
    """
    points = timeline.Points([a.t for a in accs])
    by_ident: dict[tuple, list[int]] = {}
    for i, a in enumerate(accs):
        if _ident(a.meta):
            by_ident.setdefault(_ident(a.meta), []).append(i)
    ptr = dict.fromkeys(by_ident, 0)
    used = [False] * len(accs)
    out: list[_Rec | None] = []
    for iv in evals:
        by_time = points.first_in(iv.t0 - 1e-9, iv.t1 + 1e-9)
        ident, by_id = _ident(iv.meta0), None
        if ident in by_ident:
            lst = by_ident[ident]
            while ptr[ident] < len(lst) and used[lst[ptr[ident]]]:
                ptr[ident] += 1
            by_id = lst[ptr[ident]] if ptr[ident] < len(lst) else None
        pick = min((i for i in (by_time, by_id) if i is not None), default=None)
        if pick is not None:
            used[pick] = True
            points.take(pick)
        out.append(accs[pick] if pick is not None else None)
    return out


def _cache_clear(tl: _Timeline, t0: float) -> list[dict[str, Any]]:
    """The job's start before init: from the first ``cache_clear`` record to init_start (or
    run_start) as one ``other`` event, so that the wall time starts at the job's first record.

    The launch scripts clear the caches (one record per node) and then start the training
    processes, whose first record is init_start: the time between is the job's start-up, which the
    log states nothing else about (MLPerf's timed run only begins at run_start)."""
    starts = [iv for kind in ("init", "run") for iv in tl.closed[kind][:1]]
    first = min(starts, key=lambda iv: iv.t0) if starts else None
    recs = [r for r in tl.points.get("cache_clear", []) if first is None or r.t <= first.t0]
    if not recs:
        return []
    a = min(r.t for r in recs)
    b, until = (first.t0, f"; then the launch until {first.kind}_start at line {first.line}") if first else (
        max(r.t for r in recs), "")
    return [{"kind": "other", "start_s": a - t0, "end_s": b - t0,
             "detail": f"cache_clear: {len(recs)} records, lines {recs[0].line}-{recs[-1].line}{until}"}]


def _events(reader: Reader, tl: _Timeline, t0: float) -> list[dict[str, Any]]:
    """The init event and one eval event per eval_start/eval_stop, with its accuracy."""
    events: list[dict[str, Any]] = _cache_clear(tl, t0)
    for iv in tl.closed["init"][:1]:
        events.append({"kind": "init", "start_s": iv.t0 - t0, "end_s": iv.t1 - t0, "detail": "init_start to init_stop"})
    accs = tl.points.get("eval_accuracy", [])
    for iv, a in zip(tl.closed["eval"], _accuracy_for(tl.closed["eval"], accs), strict=True):
        acc_txt = f"; eval_accuracy={a.value}" if a is not None else ""
        at = ", ".join(f"{k}={v}" for k, v in _ident(iv.meta0))
        events.append({"kind": "eval", "start_s": iv.t0 - t0, "end_s": iv.t1 - t0,
                       "detail": f"eval_start to eval_stop{(' at ' + at) if at else ''}{acc_txt}"})
    if accs and not tl.closed["eval"]:
        reader.note(f"{len(accs)} eval_accuracy records but no eval_start/eval_stop: "
                    "evaluation time is not logged separately")
    return events


def _bases(reader: Reader, tl: _Timeline, run_iv: _Interval | None) -> tuple[list[_Interval], str]:
    if tl.closed["block"]:
        return tl.closed["block"], "block"
    if tl.closed["epoch"]:
        reader.note("no block_start/block_stop: steps are the epochs' training time between evaluations")
        return tl.closed["epoch"], "epoch"
    if run_iv is not None:
        reader.note("no blocks or epochs: steps are the run's time between evaluations")
        return [run_iv], "run"
    return [], "none"


def _epoch_marks(tl: _Timeline, extra: dict[str, Any], token_counted: bool) -> tuple[dict[float, float], float]:
    """Where the log states its position in training: time -> ``epoch_num`` on the records that bound
    training segments (eval, epoch, block and run start/stop), and the samples one unit of it is; ({}, nan)
    when the log does not say what the position counts.

    ``epoch_num`` counts epochs in some benchmarks (DLRM: 0.04998 at the first evaluation) and samples in
    others (BERT: 150336); the log itself shows which. A fractional position is a fraction of an epoch (one
    unit is ``train_samples``, the samples of one epoch); whole positions whose last one equals
    ``train_samples`` count samples (one unit is one sample). Anything else states no count; two records at
    one time that state different positions state none there."""
    train = extra.get("train_samples")
    if token_counted or not isinstance(train, float) or not train > 0:
        return {}, math.nan
    marks: dict[float, float] = {}
    clash: set[float] = set()
    for kind in ("eval", "epoch", "block", "run"):
        for iv in tl.closed[kind]:
            for t, meta in ((iv.t0, iv.meta0), (iv.t1, iv.meta1)):
                v = rules.as_number(meta.get("epoch_num"))
                if not (math.isfinite(v) and v >= 0):
                    continue
                if t in marks and marks[t] != v:
                    clash.add(t)
                marks.setdefault(t, v)
    for t in clash:
        del marks[t]
    if not marks:
        return {}, math.nan
    if any(v != math.floor(v) for v in marks.values()):
        return marks, train
    if marks[max(marks)] == train:
        extra["epoch_num_counts"] = "samples"
        return marks, 1.0
    return {}, math.nan


def _counter_samples(marks: dict[float, float], a: float, b: float, unit: float) -> float:
    """Samples trained in [a, b] from the positions stated at both ends (``unit`` samples each), else NaN."""
    if a not in marks or b not in marks or marks[b] < marks[a]:
        return math.nan
    return float(round((marks[b] - marks[a]) * unit))


def _steps(reader: Reader, tl: _Timeline, run_iv: _Interval | None, t0: float, token_counted: bool,
           extra: dict[str, Any], seq_len: int | None = None) -> pd.DataFrame:
    """One step row per training segment: blocks (or epochs, or the run) minus evaluations."""
    bases, base_kind = _bases(reader, tl, run_iv)
    holes = timeline.Holes([(iv.t0, iv.t1) for iv in tl.closed["eval"]])  # training is the blocks minus these
    marks, unit = _epoch_marks(tl, extra, token_counted)
    rows, from_counters, split_any = [], 0, False
    for b_i, iv in enumerate(bases):
        segs = holes.subtract(iv.t0, iv.t1) if holes.spans and iv.t1 != iv.t0 else [(iv.t0, iv.t1)]
        whole = len(segs) == 1 and segs[0] == (iv.t0, iv.t1)
        split_any |= not whole
        s0, s1 = rules.as_number(iv.meta0.get("samples_count")), rules.as_number(iv.meta1.get("samples_count"))
        samples = s1 - s0 if whole and not math.isnan(s0) and not math.isnan(s1) and s1 >= s0 else math.nan
        ec = rules.as_number(iv.meta0.get("epoch_count", iv.meta1.get("epoch_count")))
        first = rules.as_number(iv.meta0.get("first_epoch_num", iv.meta0.get("epoch_num")))
        if token_counted and whole and seq_len and not math.isnan(ec) and ec % seq_len == 0:
            samples = ec / seq_len  # a block's tokens over the sequence length: its sequences
        for a, b in segs:
            seg_samples = samples
            if math.isnan(seg_samples) and marks:
                seg_samples = _counter_samples(marks, a, b, unit)
                if seg_samples == 0.0:  # the counters say nothing was trained here: no step
                    extra["untrained_segments"] = extra.get("untrained_segments", 0) + 1
                    continue
                from_counters += not math.isnan(seg_samples)
            rows.append({
                "attempt": 0, "step": len(rows), "rank": -1, "start_s": a - t0, "end_s": b - t0,
                "samples": seg_samples, "tokens": ec if (whole and token_counted) else math.nan, "block": b_i,
                "epoch_count": ec if whole else math.nan, "first_epoch_num": first,
            })
    extra["steps_from"] = base_kind
    if from_counters:
        _note_counters(reader, rows, from_counters, extra, unit)
    if split_any:
        reader.note(f"evaluations inside a training {base_kind}: it is split around them (no time counted twice)")
    if token_counted and any(not math.isnan(r["tokens"]) for r in rows):
        reader.note("MLPerf GPT-3 counts epoch_count in tokens: block epoch_count fills tokens"
                    + (f", and tokens / max_sequence_length {seq_len} the samples (sequences) of each block"
                       if seq_len else
                       "; the log states no sequence length, so samples per block are unknown"))
        _batches_per_step(reader, tl, rows, extra)
    if not rows:
        reader.note("no training blocks, epochs or finished run: no step rows")
    steps = pd.DataFrame(rows)
    if len(steps):
        steps = steps.drop(columns=[c for c in ("samples", "tokens", "epoch_count", "first_epoch_num")
                                    if steps[c].isna().all()])
    return steps


def _note_counters(reader: Reader, rows: list[dict[str, Any]], n: int, extra: dict[str, Any], unit: float) -> None:
    """Say where the samples of each step came from (the log's own counters), and how many lack them."""
    missing = len(rows) - n
    if unit == 1.0:
        extra["samples_from"] = "epoch_num (a sample count: its last value is train_samples)"
        how = (f"the epoch_num stated at both ends of the step, a count of samples (its last value is "
               f"train_samples {extra['train_samples']:,.0f})")
    else:
        extra["samples_from"] = "epoch_num x train_samples"
        how = f"the epoch_num stated at both ends of the step x train_samples {extra['train_samples']:,.0f}"
    empty = extra.get("untrained_segments", 0)
    reader.note(f"samples of {n} step(s) from the log's own counters: {how} (a step here is a training interval "
                "between evaluations, many global batches, not one optimizer step)"
                + (f"; {missing} step(s) lack an epoch_num at an end and have no sample count" if missing else "")
                + (f"; {empty} interval(s) in which the counters did not move are no steps (their time stays on "
                   "the timeline, unlabelled)" if empty else ""))


def _batches_per_step(reader: Reader, tl: _Timeline, rows: list[dict[str, Any]], extra: dict[str, Any]) -> None:
    """A step row here is a block of several global batches: say how many, from the raw counts."""
    gbs = _first(tl, "global_batch_size")
    gb = rules.as_number(gbs.value) if gbs is not None else math.nan
    per = {r["samples"] / gb for r in rows if not math.isnan(r["samples"])} if gb > 0 else set()
    if len(per) == 1:
        (n,) = per
        extra["global_batches_per_step"] = n
        reader.note(f"a step here is a block of {n:g} global batches ({n * gb:g} sequences = {n:g} x "
                    f"global_batch_size {gb:g}), not one optimizer step")


def _tables(tl: _Timeline, t0: float) -> dict[str, pd.DataFrame]:
    tables: dict[str, pd.DataFrame] = {}
    evals = [{"time_s": a.t - t0, "accuracy": rules.as_number(a.value),
              **{k: rules.as_number(a.meta[k]) for k in _ID_KEYS if k in a.meta}}
             for a in tl.points.get("eval_accuracy", [])]
    if evals:
        tables["evals"] = pd.DataFrame(evals)
    if tl.closed["epoch"]:
        tables["epochs"] = pd.DataFrame([{"epoch_num": rules.as_number(iv.meta0.get("epoch_num")),
                                          "start_s": iv.t0 - t0, "end_s": iv.t1 - t0} for iv in tl.closed["epoch"]])
    rows = []
    for key in ("tracked_stats", "train_loss"):
        for r in tl.points.get(key, []):
            counter = next(((k, rules.as_number(r.meta[k])) for k in ("step", "samples_count", "epoch_num")
                            if k in r.meta), ("", math.nan))
            values = r.value.items() if isinstance(r.value, dict) else [(key, r.value)]
            for name, v in values:
                rows.append({"time_s": r.t - t0, "name": str(name), "value": rules.as_number(v),
                             "counter_name": counter[0], "counter": counter[1]})
    if rows:
        tables["metrics"] = pd.DataFrame(rows)
    return tables


def parse(reader: Reader, options: Options) -> Parsed:
    """Read one MLPerf result log; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the MLPerf loader reads one result_*.txt file")
    log = _read(reader, options.clock_tolerance_s)
    if not log.recs:
        reader.fail(f"no valid {_MLLOG} records found")
    if log.other:
        reader.note(f"{log.other} lines hold no MLLOG record (other program output); ignored")
    if log.xtrace:
        reader.note(f"{log.xtrace} lines are commands the shell traced (set -x, a leading '+ '), not records; ignored")
    tl = _timeline(reader, log.recs)
    run_iv, run_start_t = _run_and_init(reader, tl)
    out = Parsed(timing="exact", time_unit="epoch_ms")
    extra = out.extra
    if name := _submission_extra(tl, extra):
        out.meta["name"] = name
    _point_facts(out, reader, tl, extra)
    if log.sysjson:
        _sysjson_facts(out, reader, log.sysjson, extra)
    _rank_facts(out, reader, log, tl, extra)
    _platform_facts(out, reader, tl, extra)
    _check_ranks(out, reader)
    bench = _first(tl, "submission_benchmark")
    token_counted = bench is not None and str(bench.value).lower() in _TOKEN_COUNTED
    _claims(out, reader, tl, token_counted, run_iv)
    t0 = min(r.t for r in log.recs)
    _time_extra(reader, tl, run_iv, run_start_t, t0, log.base_ms or 0.0, extra)
    out.events = _events(reader, tl, t0)
    seq = next((f.value for f in out.facts if f.name == "seq_len"), None)
    out.steps = _steps(reader, tl, run_iv, t0, token_counted, extra, seq)
    out.tables = _tables(tl, t0)
    return out


load = loader_for(NAME)
