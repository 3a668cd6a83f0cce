"""NCCL's own output: NCCL Inspector dumps (JSON lines and Prometheus textfiles) and ``NCCL_DEBUG=INFO`` logs.

**Inspector JSON lines** (the profiler plugin ``plugins/profiler/inspector``, formerly
``ext-profiler/inspector``; one file ``<host>-pid<pid>.log`` per process in
``NCCL_INSPECTOR_DUMP_DIR``): one object per completed collective (``inspector_json.cc``):
``header{id, [comm_name], rank, n_ranks, nnodes}``, ``metadata{inspector_output_format_version,
git_rev, [rec_mechanism], dump_timestamp_us, hostname, pid}`` and ``coll_perf{coll, coll_sn,
coll_msg_size_bytes, coll_exec_time_us, [coll_timing_source], coll_algobw_gbs, coll_busbw_gbs,
[event_trace_sn, event_trace_ts]}``, or ``p2p_perf{p2p, p2p_sn, p2p_peer, p2p_msg_size_bytes, …}``.
The rank is inside ``header``; ``n_ranks`` and ``nnodes`` are the communicator's. Times are µs,
bandwidths GB/s with GB = 1e9 bytes (``inspector.cc``, ``inspectorComputeOpBw``: ``trafficSize /
1.0E9 / timeInSec``). Pretty-printed objects one after another (as the plugin's README shows them)
are read too. → the ``collectives`` table (``rank``, ``n_ranks``, ``nnodes``, ``hostname``, ``pid``,
``comm_id``, ``comm_name``, ``kind`` ``coll``/``p2p``, ``coll``, ``coll_sn``, ``peer``,
``msg_size_bytes``, ``exec_time_s``, ``timing_source``, ``algbw_bytes_per_s``,
``busbw_bytes_per_s``, ``dump_s`` — when the record was written —, ``kernel_start_s`` /
``kernel_end_s`` from a verbose dump's kernel events, ``format_version``, ``file``, ``line``) and an
``inspector_comms`` table (one row per communicator and rank).

**Inspector Prometheus textfiles** (``NCCL_INSPECTOR_PROM_DUMP=1``, ``nccl_inspector_metrics_<GPU
UUID>.prom``; ``inspector_prom.cc``). NCCL 2.28–2.29 wrote one sample set per collective
(``nccl_algorithm_bandwidth_gbs``, ``nccl_bus_bandwidth_gbs``,
``nccl_collective_exec_time_microseconds`` with labels ``comm_id, hostname, rank, nranks, n_nodes,
gpu_device_id, collective, coll_sn, timestamp, message_size``): rows of ``collectives`` (the message
size only as its rounded label). Later versions write per-bucket aggregates (labels ``version,
slurm_job_id, node, gpu, comm_name, n_nodes, nranks, collective|p2p_operation, message_size`` — a
range such as ``4-5GB`` — ``algo_proto``; the value is the mean execution time and the geometric
mean bus bandwidth, and ``nccl_p2p_*`` for point-to-point): the ``collective_buckets`` table.

**NCCL_DEBUG=INFO logs** (a file of NCCL's lines): read by :mod:`mfu_toolkit.io.nccl_info` into the
``communicators`` (rank → host → GPU → NIC), ``init_timings`` (seconds), ``connections``,
``nics`` and ``networks`` tables. Facts: ``n_ranks`` only where a root communicator states the world
size (a split communicator's ``nranks`` is its group's), ``n_nodes`` of that communicator. The NCCL
version, networks, transports, channel and tree counts go to ``meta.extra['nccl']``; a fallback to
sockets is a note in the LoadReport and an entry of ``meta.extra['nccl_facts']``.

A folder is read file by file (Inspector dumps, textfiles and INFO logs alike; other files are
named in a note). No format here times training steps: the Run has tables, facts and notes, no
steps. Every malformed record is counted in the LoadReport (``strict=True`` raises on the first).
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..nccl_info import NEEDLE, NcclInfo, NcclScanner
from ..reading import Reader, parse_json, read_head
from ..values import number, timestamp

NAME = "nccl"


@dataclass(frozen=True)
class Options:
    """The nccl format takes no options besides the RunMeta keywords."""


GB = 1e9  # NCCL's GB: bytes / 1.0E9 (plugins/profiler/inspector/inspector.cc, inspectorComputeOpBw)
US = 1e-6
MAX_FILES = 10_000  # files of a folder read at most (a note says when there were more)
MAX_KERNEL_EVENTS = 4096  # kernel events of one verbose record looked at (one per channel in NCCL)
_PROM_METRICS = {  # Inspector's metric names (inspector_prom.cc) -> (field, kind)
    "nccl_algorithm_bandwidth_gbs": ("algbw", "coll"),
    "nccl_bus_bandwidth_gbs": ("busbw", "coll"),
    "nccl_collective_exec_time_microseconds": ("exec", "coll"),
    "nccl_p2p_bus_bandwidth_gbs": ("busbw", "p2p"),
    "nccl_p2p_exec_time_microseconds": ("exec", "p2p"),
}
_PROM_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?\s*$")
_LABEL = re.compile(r'([a-zA-Z_]\w*)\s*=\s*"((?:[^"\\]|\\.)*)"')
_UNESCAPE = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_BAD_PROM = "malformed Prometheus sample line"
_BAD_INSPECTOR = "not an NCCL Inspector record (no header and coll_perf/p2p_perf)"


# --- what a file holds -------------------------------------------------------------------------


def _kind(head: bytes, *, in_folder: bool = False) -> str | None:
    """``inspector``, ``prom`` or ``info`` from a file's head; None when it is none of them.

    An INFO log is one whose non-blank lines are (nearly) all NCCL's: a training log that holds
    NCCL lines among its own is its framework's format (in a folder, any NCCL line will do)."""
    if not head or not rules.looks_like_text(head):
        return None
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln.strip() for ln in text.splitlines()[:400] if ln.strip()]
    if not lines:
        return None
    if lines[0].startswith("{") and b'"header"' in head and (b'"coll_perf"' in head or b'"p2p_perf"' in head):
        return "inspector"
    for ln in lines:
        name = ln.split("{", 1)[0].split(" ", 1)[0]
        if name in _PROM_METRICS and not ln.startswith("#"):
            return "prom"
    n = sum(1 for ln in lines if NEEDLE in ln)
    if in_folder and n:
        return "info"
    return "info" if n >= 2 and n >= 0.9 * len(lines) else None


def _folder_files(folder: Path) -> tuple[list[Path], bool]:
    """Regular files under ``folder`` (hidden ones left out), sorted, at most MAX_FILES; and whether
    there were more."""
    found: list[Path] = []
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for name in sorted(names):
            if name.startswith("."):
                continue
            if len(found) >= MAX_FILES:
                return sorted(found), True
            p = Path(root) / name
            if p.is_file():
                found.append(p)
    return sorted(found), False


def sniff(path: Path, head: bytes) -> float:
    """1.0 for an Inspector JSON record or Inspector metric names (signatures only NCCL writes); 0.55
    for a file of NCCL INFO lines (a framework's log that holds them scores above it); 0.9 for a
    folder with an Inspector dump among its first 64 files."""
    p = Path(path)
    if not p.is_dir():
        return {"inspector": 1.0, "prom": 1.0, "info": 0.55}.get(_kind(head) or "", 0.0)
    try:
        with os.scandir(p) as it:
            names = sorted(e.name for _, e in zip(range(1000), it, strict=False))
    except OSError:
        return 0.0
    files = [p / n for n in names if not n.startswith(".") and (p / n).is_file()][:64]
    for f in files:
        try:
            if _kind(read_head(f, 4096)) in ("inspector", "prom"):
                return 0.9
        except OSError:
            continue
    return 0.0


# --- what one load gathers ---------------------------------------------------------------------


@dataclass
class _Acc:
    """Rows and details gathered over the files of one load."""

    colls: list[dict[str, Any]] = field(default_factory=list)
    buckets: list[dict[str, Any]] = field(default_factory=list)
    infos: list[tuple[Reader, NcclInfo]] = field(default_factory=list)
    seen: set[tuple[Any, ...]] = field(default_factory=set)
    versions: Counter = field(default_factory=Counter)
    git_revs: Counter = field(default_factory=Counter)
    other_metrics: Counter = field(default_factory=Counter)
    other_lines: int = 0  # non-blank lines of INFO logs that are not NCCL's
    not_nccl: list[str] = field(default_factory=list)  # files of a folder that hold no NCCL output


def _where(reader: Reader, line: int) -> str:
    return f"{reader.name}:{line}"


# --- Inspector JSON ------------------------------------------------------------------------------


def _records(reader: Reader) -> Any:
    """``(line, value)`` per Inspector record: JSON lines, or pretty-printed objects one after another.

    A line that is not JSON is counted (``half-written last line`` when it is the file's last and
    the file does not end with a line break)."""
    lines = reader.lines()
    first = next(((ln, t) for ln, t in lines if t.strip()), None)
    if first is None:
        return
    if first[1].strip() == "{":
        yield from _stream(reader)
        return
    pending, last_raw = first, first
    for ln, text in lines:
        item = last_raw = (ln, text)
        if not text.strip():
            continue
        yield from _decode(reader, pending, half=False)
        pending = item
    yield from _decode(reader, pending, half=pending is last_raw)


def _decode(reader: Reader, item: tuple[int, str], *, half: bool) -> Any:
    ln, text = item
    reader.report.lines_read += 1
    value, why, _ = parse_json(text.strip())
    if why is None:
        yield ln, value
    elif half:
        reader.bad(rules.HALF_WRITTEN, line=ln, example=text[:160])
    else:
        reader.bad(why, line=ln, example=text[:160])


def _stream(reader: Reader) -> Any:
    """Objects written one after another (pretty-printed), each with the line it starts on."""
    text = reader.text()
    dec = json.JSONDecoder()
    pos, line, counted = 0, 1, 0
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text):
            return
        line += text.count("\n", counted, pos)
        counted = pos
        reader.report.lines_read += 1
        try:
            value, end = dec.raw_decode(text, pos)
        except (ValueError, RecursionError) as exc:
            reader.bad(rules.JSON_REST_UNREAD, line=line, example=text[pos:pos + 160],
                       detail=getattr(exc, "msg", type(exc).__name__))
            return
        yield line, value
        pos = end


def _measure(perf: dict[str, Any], key: str, bad: list[str]) -> float:
    """A non-negative number of ``perf`` (NaN, with the field named in ``bad``, when it is none)."""
    v = number(perf.get(key))
    if v is None or v < 0:
        if key in perf:
            bad.append(key)
        return math.nan
    return v


def _kernel_span(perf: dict[str, Any]) -> tuple[float, float]:
    """Earliest kernel start and latest kernel stop (epoch µs, as written) of a verbose record, NaN when absent."""
    ts = perf.get("event_trace_ts")
    events = ts.get("kernel_events") if isinstance(ts, dict) else None
    if not isinstance(events, list):
        return math.nan, math.nan
    starts = [number(e.get("kernel_start_ts")) for e in events[:MAX_KERNEL_EVENTS] if isinstance(e, dict)]
    stops = [number(e.get("kernel_stop_ts")) for e in events[:MAX_KERNEL_EVENTS] if isinstance(e, dict)]
    starts = [v for v in starts if v is not None and 0 < v * US <= rules.MAX_EPOCH_S]
    stops = [v for v in stops if v is not None and 0 < v * US <= rules.MAX_EPOCH_S]
    return (min(starts) if starts else math.nan), (max(stops) if stops else math.nan)


def _header(reader: Reader, ln: int, rec: Any) -> tuple[dict, dict, dict, str] | None:
    """``(header, metadata, perf, kind)`` of a record, or None after counting it."""
    if not isinstance(rec, dict):
        reader.bad(rules.NOT_AN_OBJECT, line=ln, example=type(rec).__name__)
        return None
    hdr, meta = rec.get("header"), rec.get("metadata")
    kind = "coll" if isinstance(rec.get("coll_perf"), dict) else "p2p"
    perf = rec.get(f"{kind}_perf")
    if not isinstance(hdr, dict) or not isinstance(perf, dict):
        reader.bad(_BAD_INSPECTOR, line=ln, field="header" if not isinstance(hdr, dict) else "coll_perf",
                   example="{" + ", ".join(str(k)[:30] for k in list(rec)[:6]) + "}")
        return None
    return hdr, meta if isinstance(meta, dict) else {}, perf, kind


def _inspector_row(reader: Reader, ln: int, rec: Any, acc: _Acc) -> dict[str, Any] | None:
    """One ``collectives`` row from an Inspector record (absolute times in ``*_abs``), or None when bad."""
    got = _header(reader, ln, rec)
    if got is None:
        return None
    hdr, meta, perf, kind = got
    rank, n_ranks = rules.as_step(hdr.get("rank")), rules.as_count(hdr.get("n_ranks"))
    if rank is None or n_ranks is None or rank >= n_ranks:
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="header.rank",
                   detail=f"rank {hdr.get('rank')!r} of n_ranks {hdr.get('n_ranks')!r}")
        return None
    op, sn = perf.get(kind), rules.as_step(perf.get(f"{kind}_sn"))
    if not isinstance(op, str) or not op or sn is None:
        reader.bad(rules.MISSING_FIELD, line=ln, field=f"{kind}_perf.{kind if sn is not None else kind + '_sn'}")
        return None
    exec_us = number(perf.get(f"{kind}_exec_time_us"))
    if exec_us is not None and exec_us < 0:  # counted and skipped: a negative time is no measurement
        reader.bad(rules.NEGATIVE_DURATION, line=ln, field=f"{kind}_perf.{kind}_exec_time_us")
        return None
    key = (_str(hdr.get("id")), rank, kind, sn)
    if key in acc.seen:
        reader.bad(rules.DUPLICATE, line=ln, field=f"{kind}_perf.{kind}_sn", example=f"{op} #{sn} rank {rank}")
        return None
    acc.seen.add(key)
    row = _measures(reader, ln, perf, kind, meta)
    acc.versions[row["format_version"]] += 1
    acc.git_revs[str(meta.get("git_rev", ""))[:80]] += 1
    row.update(file=reader.file, line=ln, rank=rank, n_ranks=n_ranks, nnodes=rules.as_count(hdr.get("nnodes")),
               hostname=_str(meta.get("hostname")), pid=rules.as_step(meta.get("pid")), comm_id=_str(hdr.get("id")),
               comm_name=_str(hdr.get("comm_name")), kind=kind, coll=op[:64], coll_sn=sn,
               peer=rules.as_step(perf.get("p2p_peer")) if kind == "p2p" else None)
    return row


def _measures(reader: Reader, ln: int, perf: dict[str, Any], kind: str, meta: dict[str, Any]) -> dict[str, Any]:
    """Size, time, bandwidths (bytes/s) and times of a record; a value that is no number is left
    missing and the record counted once under NON_NUMERIC, naming the fields."""
    bad: list[str] = []
    size = rules.as_step(perf.get(f"{kind}_msg_size_bytes"))
    if size is None and f"{kind}_msg_size_bytes" in perf:
        bad.append(f"{kind}_msg_size_bytes")
    exec_s = _measure(perf, f"{kind}_exec_time_us", bad) / 1e6
    dump = number(meta.get("dump_timestamp_us"))
    k0, k1 = _kernel_span(perf)
    row = {"msg_size_bytes": size, "exec_time_s": exec_s, "timing_source": _str(perf.get(f"{kind}_timing_source")),
           "algbw_bytes_per_s": _measure(perf, f"{kind}_algobw_gbs", bad) * GB,
           "busbw_bytes_per_s": _measure(perf, f"{kind}_busbw_gbs", bad) * GB,
           "dump_abs": dump if dump is not None and 0 < dump * US <= rules.MAX_EPOCH_S else math.nan,
           "kernel_start_abs": k0, "kernel_end_abs": k1,
           "format_version": str(meta.get("inspector_output_format_version", ""))[:40] or None}
    if bad:
        reader.bad(rules.NON_NUMERIC, line=ln, field=f"{kind}_perf.{bad[0]}", example=", ".join(bad))
    return row


def _str(value: Any) -> str | None:
    """A JSON scalar as text (at most 200 characters); None for null, objects and lists."""
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value)[:200]
    return None


def _inspector(reader: Reader, acc: _Acc) -> None:
    for ln, rec in _records(reader):
        row = _inspector_row(reader, ln, rec, acc)
        if row is not None:
            acc.colls.append(row)


# --- Inspector Prometheus textfiles ---------------------------------------------------------------


def _labels(text: str) -> dict[str, str] | None:
    """``name="value"`` pairs of a sample (escapes ``\\\\``, ``\\"``, ``\\n`` undone); None when malformed."""
    out: dict[str, str] = {}
    pos = 0
    for m in _LABEL.finditer(text):
        if text[pos:m.start()].strip(" ,"):
            return None
        out[m.group(1)] = re.sub(r'\\[\\"n]', lambda e: _UNESCAPE[e.group(0)], m.group(2))
        pos = m.end()
    return out if not text[pos:].strip(" ,") else None


def _prom_samples(reader: Reader, acc: _Acc) -> dict[str, dict[str, Any]]:
    """The Inspector samples of a textfile, one entry per label set (the metrics of one collective or
    bucket share it): ``{labels, line, algbw, busbw, exec, kind}``."""
    groups: dict[str, dict[str, Any]] = {}
    for ln, text in reader.lines():
        s = text.strip()
        if not s or s.startswith("#"):
            continue
        reader.report.lines_read += 1
        m = _PROM_LINE.match(s)
        labels = _labels(m.group(2) or "") if m else None
        if m is None or labels is None:
            reader.bad(_BAD_PROM, line=ln, example=s[:160])
            continue
        if m.group(1) not in _PROM_METRICS:
            acc.other_metrics[m.group(1)[:80]] += 1
            continue
        what, kind = _PROM_METRICS[m.group(1)]
        value = number(m.group(3), plain=True)
        if value is None or value < 0:
            reader.bad(rules.NON_NUMERIC if value is None else rules.VALUE_OUT_OF_RANGE, line=ln,
                       field=m.group(1), example=s[:160])
            value = math.nan
        g = groups.setdefault(f"{kind}|{m.group(2)}", {"labels": labels, "line": ln, "kind": kind})
        g[what] = value
    return groups


def _prom(reader: Reader, acc: _Acc) -> None:
    """Rows of ``collectives`` (one sample set per collective, with ``coll_sn``) or ``collective_buckets``."""
    for g in _prom_samples(reader, acc).values():
        lab, kind = g["labels"], g["kind"]
        op = lab.get("collective") or lab.get("p2p_operation")
        common = {"file": reader.file, "line": g["line"], "hostname": lab.get("hostname") or lab.get("node"),
                  "gpu": lab.get("gpu_device_id") or lab.get("gpu"), "comm_name": lab.get("comm_name"),
                  "n_ranks": rules.as_count(lab.get("nranks", lab.get("n_ranks"))),
                  "nnodes": rules.as_count(lab.get("n_nodes")), "kind": kind, "coll": op}
        exec_s, busbw = g.get("exec", math.nan) / 1e6, g.get("busbw", math.nan) * GB
        if "coll_sn" not in lab:
            acc.versions[lab.get("version")] += 1
            acc.buckets.append({**common, "msg_size_bucket": lab.get("message_size"),
                                "algo_proto": lab.get("algo_proto"), "exec_time_mean_s": exec_s,
                                "busbw_geomean_bytes_per_s": busbw, "slurm_job_id": lab.get("slurm_job_id"),
                                "version": lab.get("version")})
            continue
        rank, sn = rules.as_step(lab.get("rank")), rules.as_step(lab.get("coll_sn"))
        if rank is None or sn is None:
            reader.bad(rules.MISSING_FIELD, line=g["line"], field="rank" if rank is None else "coll_sn")
            continue
        stamp = timestamp(lab.get("timestamp", ""))
        acc.colls.append({**common, "rank": rank, "pid": rules.as_step(lab.get("pid")), "comm_id": lab.get("comm_id"),
                          "coll_sn": sn, "msg_size_label": lab.get("message_size"), "exec_time_s": exec_s,
                          "timing_source": lab.get("coll_timing_source"),
                          "algbw_bytes_per_s": g.get("algbw", math.nan) * GB, "busbw_bytes_per_s": busbw,
                          "dump_abs": math.nan if stamp is None else stamp / US, "format_version": "prometheus"})


# --- NCCL INFO logs -----------------------------------------------------------------------------


def _info(reader: Reader, acc: _Acc) -> None:
    """Scan a text file's NCCL lines (other non-blank lines are counted, not read)."""
    scanner = NcclScanner()
    for ln, text in reader.lines():
        if not text.strip():
            continue
        reader.report.lines_read += 1
        if not scanner.feed(ln, text):
            acc.other_lines += 1
    info = scanner.result()
    if info:
        acc.infos.append((reader, info))
    elif reader.file is not None:
        acc.not_nccl.append(reader.file)


def _one_file(reader: Reader, acc: _Acc, *, in_folder: bool) -> None:
    kind = _kind(reader.head(), in_folder=in_folder)
    if kind == "inspector":
        _inspector(reader, acc)
    elif kind == "prom":
        _prom(reader, acc)
    elif kind == "info" or not in_folder:
        _info(reader, acc)
    else:
        acc.not_nccl.append(reader.file or reader.path.name)


def _folder(reader: Reader, acc: _Acc) -> None:
    files, more = _folder_files(reader.path)
    if not files:
        reader.fail("the folder holds no files")
    if more:
        reader.note(f"the folder holds more than {MAX_FILES:,} files: the first {MAX_FILES:,} (sorted) were read")
    for f in files:
        _one_file(reader.for_file(f, root=reader.path), acc, in_folder=True)


# --- the Run's parts ------------------------------------------------------------------------------

_COLL_COLUMNS = ("file", "line", "rank", "n_ranks", "nnodes", "hostname", "pid", "gpu", "comm_id", "comm_name", "kind",
                 "coll", "coll_sn", "peer", "msg_size_bytes", "msg_size_label", "exec_time_s", "timing_source",
                 "algbw_bytes_per_s", "busbw_bytes_per_s", "dump_s", "kernel_start_s", "kernel_end_s",
                 "format_version")
_COUNTS = ("line", "rank", "n_ranks", "nnodes", "pid", "coll_sn", "peer", "msg_size_bytes")


def _collectives(acc: _Acc, out: Parsed) -> None:
    """The ``collectives`` and ``inspector_comms`` tables; absolute times (epoch µs, exact in a float up to
    2**53) made relative to the first, then seconds."""
    df = pd.DataFrame(acc.colls)
    stamps = [c for c in ("dump_abs", "kernel_start_abs", "kernel_end_abs") if c in df]
    values = pd.concat([pd.to_numeric(df[c], errors="coerce") for c in stamps]) if stamps else pd.Series(dtype=float)
    t0 = float(values.min()) if values.notna().any() else math.nan
    for c in stamps:
        shift = t0 if math.isfinite(t0) else 0.0
        df[c.replace("_abs", "_s")] = (pd.to_numeric(df.pop(c), errors="coerce") - shift) / 1e6
    if math.isfinite(t0):
        out.extra["t0_wallclock"] = rules.wallclock(t0 * US)
        out.time_unit = "us" if (df.get("format_version") != "prometheus").any() else "epoch_s"
    if "file" in df and df["file"].isna().all():
        df = df.drop(columns="file")
    df = df[[c for c in _COLL_COLUMNS if c in df]]
    for c in set(_COUNTS) & set(df.columns):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype("Int64")
    out.tables["collectives"] = df.reset_index(drop=True)
    keys = [k for k in ("comm_id", "rank", "hostname", "pid") if k in df]
    comms = df.groupby(keys, dropna=False, sort=True).agg(
        n_ranks=("n_ranks", "max"), nnodes=("nnodes", "max"), n_records=("coll_sn", "size"),
        first_sn=("coll_sn", "min"), last_sn=("coll_sn", "max")).reset_index()
    out.tables["inspector_comms"] = comms
    ops = df.groupby(["kind", "coll"], dropna=False).size()
    biggest = comms.sort_values("n_ranks", ascending=False, kind="stable").iloc[0]
    out.extra["nccl_inspector"] = {
        "format_versions": {str(k): int(v) for k, v in acc.versions.items()},
        "git_revs": {str(k): int(v) for k, v in acc.git_revs.items() if k},
        "hosts": sorted(str(h) for h in df["hostname"].dropna().unique()) if "hostname" in df else [],
        "n_records": int(len(df)), "ops": {f"{k}:{c}": int(n) for (k, c), n in ops.items()},
        "largest_communicator": {"comm_id": _jsonable(biggest.get("comm_id")),
                                 "n_ranks": _jsonable(biggest.get("n_ranks")),
                                 "nnodes": _jsonable(biggest.get("nnodes"))},
        "units": "exec_time_s from µs; algbw/busbw bytes/s from GB/s with GB = 1e9 bytes (NCCL's, inspector.cc)",
    }


def _jsonable(value: Any) -> Any:
    """A pandas scalar as a JSON value (NA as None)."""
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return value.item() if hasattr(value, "item") else value


def _infos(reader: Reader, acc: _Acc, out: Parsed) -> None:
    """Tables, facts, extra and notes of the INFO logs read (one per file of a folder)."""
    frames: dict[str, list[pd.DataFrame]] = {}
    summaries: dict[str, Any] = {}
    facts: list[dict[str, Any]] = []
    stated: dict[str, tuple[Any, str]] = {}
    for sub, info in acc.infos:
        for name, df in info.frames().items():
            if sub.file is not None:
                df.insert(0, "file", sub.file)
            frames.setdefault(name, []).append(df)
        summaries[sub.file or sub.path.name] = info.summary()
        for f in info.facts():
            facts.append({"name": f["name"], "value": f["value"], "where": _where(sub, f["line"]), "text": f["text"]})
        for name, got in (("n_ranks", info.world()), ("n_nodes", info.n_nodes())):
            if got is None:
                continue
            if name not in stated:
                stated[name] = (got["value"], _where(sub, got["line"]))
                out.fact(name, got["value"], _where(sub, got["line"]), got["text"])
            elif stated[name][0] != got["value"]:
                reader.note(f"{name}: {stated[name][1]} says {stated[name][0]}, {_where(sub, got['line'])} says "
                            f"{got['value']}; the first is stated")
        _info_notes(sub, info)
    for name, parts in frames.items():
        out.tables[name] = pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
    out.extra["nccl"] = next(iter(summaries.values())) if len(summaries) == 1 else summaries
    out.extra["nccl_facts"] = facts
    if out.time_unit is None and any(info.init_timings for _, info in acc.infos):
        out.time_unit = "s"


def _info_notes(sub: Reader, info: NcclInfo) -> None:
    """What a reader of the tables should know (:meth:`NcclInfo.notes`), each note naming its file."""
    where = sub.file or sub.name
    for text in info.notes():
        sub.note(f"{where}: {text}")


def _notes(reader: Reader, acc: _Acc) -> None:
    if acc.other_lines and acc.infos and reader.file is None and not reader.path.is_dir():
        reader.note(f"{acc.other_lines:,} non-blank line(s) are not NCCL's: if this is a training log written with "
                    "NCCL_DEBUG=INFO, its framework's format reads its steps (format=<name>)")
    if acc.not_nccl:
        shown = ", ".join(acc.not_nccl[:5]) + (f" and {len(acc.not_nccl) - 5} more" if len(acc.not_nccl) > 5 else "")
        reader.note(f"{len(acc.not_nccl)} file(s) hold no NCCL output and were not read: {shown}")
    if acc.other_metrics:
        reader.note(f"{sum(acc.other_metrics.values()):,} sample(s) of metrics other than NCCL Inspector's were "
                    f"passed over ({', '.join(sorted(acc.other_metrics)[:5])})")
    if acc.colls:
        largest = max(int(c.get("n_ranks") or 0) for c in acc.colls) if acc.colls else 0
        reader.note("Inspector records: n_ranks and nnodes are each communicator's, so the world size is not "
                    f"stated (the largest communicator seen has {largest} ranks)")
    if acc.buckets:
        reader.note("Inspector Prometheus buckets: exec_time_mean_s is the mean and busbw_geomean_bytes_per_s "
                    "the geometric mean over the collectives of each bucket (inspector_prom.cc)")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read NCCL Inspector dumps or an NCCL INFO log (a file or a folder); see the module docstring."""
    acc = _Acc()
    if reader.path.is_dir():
        _folder(reader, acc)
    else:
        _one_file(reader, acc, in_folder=False)
    if not (acc.colls or acc.buckets or acc.infos):
        skipped = sum(reader.report.skipped.values())
        reader.fail("no NCCL output: no Inspector record, Inspector metric or NCCL INFO line"
                    + (f" could be read ({skipped:,} record(s) skipped as malformed)" if skipped else ""))
    out = Parsed(timing="exact")
    if acc.colls:
        _collectives(acc, out)
    if acc.buckets:
        out.tables["collective_buckets"] = pd.DataFrame(acc.buckets).drop(columns="file", errors="ignore")
    if acc.infos:
        _infos(reader, acc, out)
    _notes(reader, acc)
    return out


load = loader_for(NAME)
