"""MLPerf Training result logs: ``:::MLLOG {json}`` lines (``time_ms`` = epoch ms) and ``:::SYSJSON``.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- ``init_start``→``init_stop`` (or ``run_start`` when ``init_stop`` is missing) is an ``init``
  event; ``run_start``→``run_stop`` is the timed run (``meta.extra['run_duration_s']``, the
  benchmark's time-to-train, and ``run_status``).
- ``block_start``→``block_stop`` are the training blocks between evaluations; each becomes one
  step row (``step`` = block ordinal, ``rank = -1``, ``meta.timing = "exact"``). ``samples`` is
  the ``samples_count`` difference across the block where the log gives it. ``epoch_count`` is
  kept as logged: its unit differs between benchmarks (epochs, samples, or tokens: MLPerf GPT-3
  counts tokens, so there it fills ``tokens``). Where a block contains evaluations (BERT) the
  block is split around them, so no second is counted twice. Without blocks, the epochs (or the
  run) minus the evaluations are the training segments (DLRM logs only epochs).
- ``eval_start``→``eval_stop`` are ``eval`` events; ``eval_accuracy`` values go to the ``evals``
  table and into the event's detail. ``epoch_start``/``epoch_stop`` go to the ``epochs`` table;
  ``tracked_stats`` and other per-step values (``train_loss``) to the ``metrics`` table.
- Platform (``submission_platform``), benchmark, organisation, global batch and sequence length
  go to meta; the accelerator count comes from ``:::SYSJSON`` (``number_of_nodes`` ×
  ``accelerators_per_node``) when present, never from a guess. Without it, the number of
  per-rank ``init_start`` copies is reported in ``meta.extra['init_start_copies']``.
- Per-rank duplicates (the GPT-3 log has ``init_start`` 512 times) are collapsed to one record
  and reported in ``meta.report.notes``; they are not skipped records and not double counted.
- Records more than ``clock_tolerance_s`` (default 1 s) earlier than a record already read are
  skipped as non-monotonic; smaller offsets between ranks are accepted.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..run import Run
from ._build import finish, num, split_kwargs, wallclock
from ._common import Reader, iter_lines, read_head

NAME = "mlperf"

_MLLOG = ":::MLLOG"
_SYSJSON = ":::SYSJSON"
_SCAN_BYTES = 4 << 20
_PAIRS = {
    "init_start": ("init", True),
    "init_stop": ("init", False),
    "run_start": ("run", True),
    "run_stop": ("run", False),
    "block_start": ("block", True),
    "block_stop": ("block", False),
    "eval_start": ("eval", True),
    "eval_stop": ("eval", False),
    "epoch_start": ("epoch", True),
    "epoch_stop": ("epoch", False),
}
_ID_KEYS = ("samples_count", "epoch_num", "first_epoch_num", "epoch_count")
# Benchmarks whose epoch counters are in tokens (MLPerf GPT-3 rules count training in tokens).
_TOKEN_COUNTED = {"gpt3"}
_PLATFORM_RE = re.compile(r"^\s*(\d+)\s*x\s*(.+?)\s*$")


# Compressed or binary containers (the head is already gunzipped, so gzip magic here means a
# file inside the gzip stream that is compressed again).
_BINARY_MAGIC = (b"\x1f\x8b", b"PK\x03\x04", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd", b"7z\xbc\xaf\x27\x1c", b"\x93NUMPY", b"\x89HDF")
# bytes a text log holds: printable, UTF-8 lead/continuation bytes, whitespace, ESC, backspace
_TEXT_BYTES = bytes(range(0x20, 0x100)) + b"\t\n\r\x0b\x0c\x1b\x08"
_JSON_START = re.compile(rb"\A(?:\xef\xbb\xbf)?\s*(?:\{\s*[\"}]|\[\s*[\[{\"\]])")


def _looks_like_text(head: bytes) -> bool:
    """Whether ``head`` reads as a text log: no binary magic, few NUL/control bytes, UTF-8."""
    if head.startswith(_BINARY_MAGIC):
        return False
    if head.count(0) > len(head) // 100:
        return False
    controls = len(head.translate(None, _TEXT_BYTES))
    undecodable = head.decode("utf-8", errors="replace").count("\ufffd")
    return controls + undecodable <= len(head) // 20


def sniff(path: Path, head: bytes) -> float:
    """0.95 when ``:::MLLOG {`` records appear (in the head, or in the first 4 MiB).

    Records after a long preamble (launcher or shell output) are searched for in the first
    4 MiB, but only when the head is text that is not a JSON document: a binary file (a
    compressed or binary container, NUL or other control bytes, bytes that are not UTF-8) or
    one that starts as a JSON object or array (a trace, a metrics dump) is rejected from its
    head alone, without reading further.
    """
    p = Path(path)
    if p.is_dir() or not head:
        return 0.0
    if b":::MLLOG {" in head or b":::MLLOG{" in head:
        return 0.95
    if b":::SYSJSON" in head:
        return 0.9
    if not _looks_like_text(head) or _JSON_START.match(head):
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


@dataclass
class _Rec:
    line: int
    key: str
    t: float  # seconds since the first valid record
    value: Any
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class _Interval:
    kind: str
    t0: float
    line: int
    meta0: dict[str, Any]
    t1: float = math.nan
    meta1: dict[str, Any] = field(default_factory=dict)


def _ident(meta: dict[str, Any]) -> tuple:
    return tuple((k, str(meta[k])) for k in _ID_KEYS if k in meta)


def _parse(path: Path, reader: Reader, tol_s: float) -> tuple[list[_Rec], list[tuple[int, dict]], int, float]:
    """Records with times in seconds relative to the first valid record (kept exact in ms)."""
    recs: list[_Rec] = []
    base_ms: float | None = None
    sysjson: list[tuple[int, dict]] = []
    other = 0
    t_max = -math.inf
    rep = reader.report
    for ln, text in iter_lines(path):
        if not text.strip():
            continue
        rep.lines_read += 1
        i = text.find(_MLLOG)
        if i < 0:
            j = text.find(_SYSJSON)
            if j < 0:
                other += 1
                continue
            payload = text[j + len(_SYSJSON) :].strip()
            try:
                d = json.loads(payload)
            except ValueError:
                reader.bad("malformed SYSJSON record", line=ln, example=text)
                continue
            if not isinstance(d, dict):
                reader.bad("SYSJSON record is not a JSON object", line=ln, example=text)
                continue
            sysjson.append((ln, d))
            continue
        payload = text[i + len(_MLLOG) :].strip()
        try:
            d = json.loads(payload)
        except ValueError:
            reader.bad("malformed JSON record (truncated or garbled)", line=ln, example=text)
            continue
        if not isinstance(d, dict):
            reader.bad("MLLOG record is not a JSON object", line=ln, example=text)
            continue
        key = d.get("key")
        if not isinstance(key, str) or not key:
            reader.bad("missing field 'key'", line=ln, field="key", example=text)
            continue
        t_ms = num(d.get("time_ms"))
        if math.isnan(t_ms):
            reader.bad("missing or non-numeric time_ms", line=ln, field="time_ms", example=text)
            continue
        if t_ms < 0:
            reader.bad("negative time_ms", line=ln, field="time_ms", example=text)
            continue
        if base_ms is None:
            base_ms = t_ms
        t = (t_ms - base_ms) / 1000.0
        if t < t_max - tol_s:
            reader.bad(
                f"non-monotonic timestamp (more than {tol_s:g} s before an earlier record)",
                line=ln,
                field="time_ms",
                example=text,
            )
            continue
        t_max = max(t_max, t)
        meta = d.get("metadata")
        recs.append(_Rec(ln, key, t, d.get("value"), meta if isinstance(meta, dict) else {}))
    return recs, sysjson, other, base_ms or 0.0


def _subtract(a: float, b: float, holes: list[tuple[float, float]]) -> list[tuple[float, float]]:
    """Parts of [a, b] not covered by ``holes`` (sorted)."""
    out = []
    cur = a
    for h0, h1 in holes:
        if h1 <= cur or h0 >= b:
            continue
        if h0 > cur:
            out.append((cur, h0))
        cur = max(cur, h1)
    if cur < b:
        out.append((cur, b))
    return out


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Load one MLPerf result log; see the module docstring for the mapping."""
    opts, overrides = split_kwargs(kwargs, ("clock_tolerance_s",), fmt=NAME)
    tol_s = float(opts.get("clock_tolerance_s", 1.0))
    p = Path(path)
    reader = Reader(p, NAME, strict=strict)
    rep = reader.report
    if p.is_dir():
        reader.fail("is a directory; the MLPerf loader reads one result_*.txt file")
    recs, sysjson, other, base_ms = _parse(p, reader, tol_s)
    if not recs:
        reader.fail(f"no valid {_MLLOG} records found")
    if other:
        rep.note(f"{other} lines hold no MLLOG record (other program output); ignored")

    # --- intervals, with per-rank copies collapsed -------------------------------------
    open_: dict[str, _Interval] = {}
    closed: dict[str, list[_Interval]] = {k: [] for k in ("init", "run", "block", "eval", "epoch")}
    copies: dict[str, int] = {}
    points: dict[str, list[_Rec]] = {}
    for r in recs:
        pair = _PAIRS.get(r.key)
        if pair is None:
            points.setdefault(r.key, []).append(r)
            continue
        kind, is_start = pair
        cur = open_.get(kind)
        if is_start:
            if cur is not None and _ident(cur.meta0) == _ident(r.meta):
                copies[r.key] = copies.get(r.key, 0) + 1
                cur.t0 = min(cur.t0, r.t)
                continue
            if cur is not None:
                reader.bad(f"{kind}_start without {kind}_stop", line=cur.line, field="key")
            open_[kind] = _Interval(kind, r.t, r.line, r.meta)
        else:
            if cur is None:
                last = closed[kind][-1] if closed[kind] else None
                if last is not None and _ident(last.meta1) == _ident(r.meta):
                    copies[r.key] = copies.get(r.key, 0) + 1
                    continue
                reader.bad(f"{kind}_stop without {kind}_start", line=r.line, field="key")
                continue
            if r.t < cur.t0:
                reader.bad(f"{kind}_stop before its {kind}_start", line=r.line, field="time_ms")
                del open_[kind]
                continue
            cur.t1 = r.t
            cur.meta1 = r.meta
            closed[kind].append(cur)
            del open_[kind]
    for key, n in sorted(copies.items()):
        rep.note(f"{key} logged {n + 1} times (per-rank copies); collapsed to one record")
    init_open = open_.pop("init", None)
    run_open = open_.pop("run", None)
    for kind, iv in open_.items():
        reader.bad(f"{kind}_start without {kind}_stop (log ends)", line=iv.line, field="key")

    run_iv = closed["run"][0] if closed["run"] else None
    if len(closed["run"]) > 1:
        rep.note(f"{len(closed['run'])} run_start/run_stop pairs; the first is the timed run")
    run_start_t = run_iv.t0 if run_iv else (run_open.t0 if run_open else None)
    if run_iv is None:
        rep.note("no run_stop: the run did not finish, or the log is truncated")
    if init_open is not None:
        if run_start_t is not None and run_start_t >= init_open.t0:
            init_open.t1 = run_start_t
            closed["init"].append(init_open)
            rep.note("no init_stop: init taken to end at run_start")
        else:
            reader.bad("init_start without init_stop or run_start", line=init_open.line, field="key")

    # --- meta facts --------------------------------------------------------------------
    def first_value(key: str) -> Any:
        lst = points.get(key)
        return lst[0].value if lst else None

    benchmark = first_value("submission_benchmark")
    platform = first_value("submission_platform")
    extra: dict[str, Any] = {}
    for key, label in (
        ("submission_benchmark", "benchmark"),
        ("submission_org", "org"),
        ("submission_division", "division"),
        ("submission_status", "status"),
        ("submission_platform", "platform"),
    ):
        v = first_value(key)
        if v is not None:
            extra[label] = str(v)
    if isinstance(platform, str):
        m = _PLATFORM_RE.match(platform)
        if m:
            extra["platform_nodes"] = int(m.group(1))
            extra["platform_system"] = m.group(2)
    params: dict[str, Any] = {}
    for key, lst in points.items():
        if key.startswith("submission_") or key in ("cache_clear", "tracked_stats", "eval_accuracy", "train_loss", "weights_initialization"):
            continue
        v = lst[0].value
        if len(lst) == 1 and (v is None or isinstance(v, (str, int, float, bool))):
            params[key] = v if not (isinstance(v, float) and not math.isfinite(v)) else str(v)
    if params:
        extra["params"] = params
    if "init_start" in copies:
        extra["init_start_copies"] = copies["init_start"] + 1
    found: dict[str, Any] = {}
    gbs = num(first_value("global_batch_size"))
    if gbs > 0:
        found["global_batch"] = gbs
    seq = num(first_value("max_sequence_length"))
    if seq > 0 and seq == int(seq):
        found["seq_len"] = int(seq)
    name_bits = [str(x) for x in (benchmark, first_value("submission_org"), platform) if x is not None]
    if name_bits:
        found["name"] = " ".join(name_bits)
    if sysjson:
        ln0, sysd = sysjson[0]
        differing = sum(1 for _, d in sysjson[1:] if d != sysd)
        if len(sysjson) > 1:
            rep.note(f"SYSJSON logged {len(sysjson)} times; collapsed to one" + (f" ({differing} copies differ; the first kept)" if differing else ""))
        system = {k: sysd.get(k) for k in ("system_name", "number_of_nodes", "accelerators_per_node", "accelerator_model_name", "framework") if k in sysd}
        extra["system"] = system
        nodes, per = num(sysd.get("number_of_nodes")), num(sysd.get("accelerators_per_node"))
        if nodes > 0 and per > 0 and nodes == int(nodes) and per == int(per):
            found["n_accelerators"] = int(nodes) * int(per)
        elif "number_of_nodes" in sysd or "accelerators_per_node" in sysd:
            reader.bad("SYSJSON number_of_nodes/accelerators_per_node not positive integers", line=ln0, field="accelerators_per_node")

    all_t = [r.t for r in recs]
    t0 = min(all_t)
    extra["t0_epoch_s"] = (base_ms + t0 * 1000.0) / 1000.0
    extra["t0_wallclock"] = wallclock(extra["t0_epoch_s"])
    if run_start_t is not None:
        extra["run_start_s"] = run_start_t - t0
    if run_iv is not None:
        extra["run_stop_s"] = run_iv.t1 - t0
        extra["run_duration_s"] = run_iv.t1 - run_iv.t0
        status = run_iv.meta1.get("status")
        if status is not None:
            extra["run_status"] = str(status)
    if closed["init"]:
        extra["init_duration_s"] = closed["init"][0].t1 - closed["init"][0].t0
    for key in ("train_samples", "eval_samples", "trained_samples"):
        v = num(first_value(key))
        if not math.isnan(v):
            extra[key] = v

    # --- events ------------------------------------------------------------------------
    events: list[dict[str, Any]] = []
    for iv in closed["init"][:1]:
        events.append({"kind": "init", "start_s": iv.t0 - t0, "end_s": iv.t1 - t0, "detail": "init_start to init_stop"})
    accs = points.get("eval_accuracy", [])
    eval_rows = []
    for a in accs:
        eval_rows.append({"time_s": a.t - t0, "accuracy": num(a.value), **{k: num(a.meta[k]) for k in _ID_KEYS if k in a.meta}})
    used_acc: set[int] = set()
    for iv in closed["eval"]:
        acc_txt = ""
        for j, a in enumerate(accs):
            if j in used_acc:
                continue
            if iv.t0 - 1e-9 <= a.t <= iv.t1 + 1e-9 or (_ident(a.meta) and _ident(a.meta) == _ident(iv.meta0)):
                used_acc.add(j)
                acc_txt = f"; eval_accuracy={a.value}"
                break
        at = ", ".join(f"{k}={v}" for k, v in _ident(iv.meta0))
        events.append({"kind": "eval", "start_s": iv.t0 - t0, "end_s": iv.t1 - t0, "detail": f"eval_start to eval_stop{(' at ' + at) if at else ''}{acc_txt}"})
    if accs and not closed["eval"]:
        rep.note(f"{len(accs)} eval_accuracy records but no eval_start/eval_stop: evaluation time is not logged separately")

    # --- training segments -> steps ---------------------------------------------------
    holes = sorted((iv.t0, iv.t1) for iv in closed["eval"])
    if closed["block"]:
        bases, base_kind = closed["block"], "block"
    elif closed["epoch"]:
        bases, base_kind = closed["epoch"], "epoch"
        rep.note("no block_start/block_stop: steps are the epochs' training time between evaluations")
    elif run_iv is not None:
        bases, base_kind = [run_iv], "run"
        rep.note("no blocks or epochs: steps are the run's time between evaluations")
    else:
        bases, base_kind = [], "none"
    token_counted = str(benchmark).lower() in _TOKEN_COUNTED
    rows = []
    split_any = False
    for b_i, iv in enumerate(bases):
        segs = _subtract(iv.t0, iv.t1, holes) if holes else [(iv.t0, iv.t1)]
        if iv.t1 == iv.t0:
            segs = [(iv.t0, iv.t1)]
        whole = len(segs) == 1 and segs[0] == (iv.t0, iv.t1)
        split_any |= not whole
        samples = math.nan
        s0, s1 = num(iv.meta0.get("samples_count")), num(iv.meta1.get("samples_count"))
        if whole and not math.isnan(s0) and not math.isnan(s1) and s1 >= s0:
            samples = s1 - s0
        ec = num(iv.meta0.get("epoch_count", iv.meta1.get("epoch_count")))
        for a, b in segs:
            rows.append(
                {
                    "attempt": 0,
                    "step": len(rows),
                    "rank": -1,
                    "start_s": a - t0,
                    "end_s": b - t0,
                    "samples": samples,
                    "tokens": ec if (whole and token_counted) else math.nan,
                    "block": b_i,
                    "epoch_count": ec if whole else math.nan,
                    "first_epoch_num": num(iv.meta0.get("first_epoch_num", iv.meta0.get("epoch_num"))),
                }
            )
    extra["steps_from"] = base_kind
    if split_any:
        rep.note(f"evaluations inside a training {base_kind}: it is split around them (no time counted twice)")
    if token_counted and any(not math.isnan(r["tokens"]) for r in rows):
        rep.note("MLPerf GPT-3 counts epoch_count in tokens: block epoch_count fills tokens")
    if not rows:
        rep.note("no training blocks, epochs or finished run: no step rows")
    steps = pd.DataFrame(rows)
    if len(steps):
        for c in ("samples", "tokens", "epoch_count", "first_epoch_num"):
            if steps[c].isna().all():
                steps = steps.drop(columns=c)

    # --- tables -------------------------------------------------------------------------
    tables: dict[str, pd.DataFrame] = {}
    if eval_rows:
        tables["evals"] = pd.DataFrame(eval_rows)
    if closed["epoch"]:
        tables["epochs"] = pd.DataFrame(
            [{"epoch_num": num(iv.meta0.get("epoch_num")), "start_s": iv.t0 - t0, "end_s": iv.t1 - t0} for iv in closed["epoch"]]
        )
    metric_rows = []
    for key in ("tracked_stats", "train_loss"):
        for r in points.get(key, []):
            counter = next(((k, num(r.meta[k])) for k in ("step", "samples_count", "epoch_num") if k in r.meta), ("", math.nan))
            values = r.value.items() if isinstance(r.value, dict) else [(key, r.value)]
            for name, v in values:
                metric_rows.append({"time_s": r.t - t0, "name": str(name), "value": num(v), "counter_name": counter[0], "counter": counter[1]})
    if metric_rows:
        tables["metrics"] = pd.DataFrame(metric_rows)
    return finish(
        reader,
        fmt=NAME,
        steps=steps,
        events=events,
        tables=tables,
        timing="exact",
        time_unit="epoch_ms",
        found=found,
        overrides=overrides,
        extra=extra,
    )
