"""TensorBoard event files (as written by Megatron-LM), read without TensorFlow or TensorBoard.

A minimal reader: TFRecord framing (length, masked CRC-32C of the length, payload, masked
CRC-32C of the payload) and the few protobuf messages needed (``Event``, ``Summary``,
``Summary.Value``, ``TensorProto``). Scalars come from ``simple_value`` or from one-element
float/double/int tensors; text summaries (Megatron writes its arguments as ``<arg>/text_summary``)
from string tensors. Nothing is executed or unpickled.

What it maps to a :class:`~mfu_toolkit.run.Run`:

- A directory's event files are launches of the job: files of one process (same host and pid
  in the name) are one launch, and each launch is an attempt, in time order.
- Event files in different directories are different runs, as TensorBoard shows them (restarts
  of one job write new files into the same directory). A directory that holds event files is
  loaded with its own files (run folders below it are named in a note, not merged); a folder
  whose event files all sit in one subfolder loads that subfolder; a folder with several run
  subfolders is a ``LoadError`` that lists them, like a Kineto folder of several jobs.
- ``iteration-time`` (seconds; Megatron's mean over the log interval) at step N, written at wall
  time T, gives the interval ending at T: ``interval_steps`` rows (one per step, each as long as
  the mean), ``logged`` on step N. ``meta.timing`` is ``"interval_mean"`` when the log interval
  (the ``log_interval`` argument, or the most common step gap) exceeds 1, else ``"duration_only"``.
  ``lm loss``, ``grad-norm``, ``learning-rate``, ``loss-scale``, ``batch-size`` (→ ``samples``) and
  ``throughput`` sit on the logged row; every scalar is kept in the ``scalars`` table.
- Events per launch: ``init`` from the launch's first record to its first step; a launch that
  logged no step is an ``init`` event (died during setup) or, if it logged scalars, an ``other``
  event; between launches a ``failure`` event spans the gap from the last record of one to the
  first record of the next.
- ``world_size``, ``global_batch_size`` and ``seq_length`` arguments fill ``n_accelerators``,
  ``global_batch`` and ``seq_len``; all text arguments go to ``meta.extra['args']``.
- Damaged input: a half-written last record, a checksum mismatch or an unparsable protobuf is
  skipped and counted (line numbers in the report are record numbers within the file).
"""

from __future__ import annotations

import math
import re
import struct
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from ..run import Run
from ._build import finish, split_kwargs, wallclock
from ._common import Reader, open_bytes

NAME = "tensorboard"

_NAME_RE = re.compile(r"tfevents\.(\d+)\.(.+?)(?:\.(\d+))?$")
_STEP_TAGS = {
    "lm loss": "loss",
    "grad-norm": "grad_norm",
    "learning-rate": "learning_rate",
    "loss-scale": "loss_scale",
    "batch-size": "batch_size",
    "throughput": "tflops_per_gpu",
}
_TEXT_SUFFIX = "/text_summary"

# --- CRC-32C (Castagnoli), as TFRecord uses it ------------------------------------------------
_CRC_TABLE: list[int] = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (pure Python; fine for the sizes event files have)."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC: rotate right by 15 and add a constant."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF



# --- protobuf wire format -----------------------------------------------------------------------
class ProtoError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def _varint(b: bytes, i: int) -> tuple[int, int]:
    result = 0
    shift = 0
    n = len(b)
    while True:
        if i >= n:
            raise ProtoError("varint runs past the end")
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def proto_fields(b: bytes) -> list[tuple[int, int, Any]]:
    """(field number, wire type, value) for each field; bytes for length-delimited/fixed."""
    out = []
    i, n = 0, len(b)
    while i < n:
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            if i + 8 > n:
                raise ProtoError("fixed64 runs past the end")
            v, i = b[i : i + 8], i + 8
        elif wt == 2:
            ln, i = _varint(b, i)
            if i + ln > n:
                raise ProtoError("length-delimited field runs past the end")
            v, i = b[i : i + ln], i + ln
        elif wt == 5:
            if i + 4 > n:
                raise ProtoError("fixed32 runs past the end")
            v, i = b[i : i + 4], i + 4
        else:
            raise ProtoError(f"unsupported wire type {wt}")
        out.append((num, wt, v))
    return out


_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_STRING, _DT_INT64, _DT_BOOL = 1, 2, 3, 7, 9, 10


def _tensor_value(b: bytes) -> tuple[str, Any] | None:
    """('scalar', float) for a one-element numeric tensor, ('text', str) for a string tensor."""
    dtype = 0
    content = b""
    floats: list[float] = []
    strings: list[bytes] = []
    for num, wt, v in proto_fields(b):
        if num == 1 and wt == 0:
            dtype = v
        elif num == 4 and wt == 2:
            content = v
        elif num == 5:  # float_val, packed or not
            if wt == 2:
                if len(v) % 4:
                    raise ProtoError("packed float_val length")
                floats.extend(struct.unpack(f"<{len(v) // 4}f", v))
            elif wt == 5:
                floats.append(struct.unpack("<f", v)[0])
        elif num == 6:  # double_val
            if wt == 2:
                if len(v) % 8:
                    raise ProtoError("packed double_val length")
                floats.extend(struct.unpack(f"<{len(v) // 8}d", v))
            elif wt == 1:
                floats.append(struct.unpack("<d", v)[0])
        elif num in (7, 10) and wt == 0:  # int_val / int64_val (not packed)
            floats.append(float(v))
        elif num in (7, 10) and wt == 2:  # packed varints
            j = 0
            while j < len(v):
                x, j = _varint(v, j)
                floats.append(float(x - (1 << 64) if x >= 1 << 63 else x))
        elif num == 8 and wt == 2:
            strings.append(v)
    if dtype == _DT_STRING:
        return ("text", strings[0].decode("utf-8", errors="replace")) if strings else None
    if dtype in (_DT_FLOAT, _DT_DOUBLE, _DT_INT32, _DT_INT64) or (dtype == 0 and floats):
        if content:
            size = {_DT_FLOAT: 4, _DT_DOUBLE: 8, _DT_INT32: 4, _DT_INT64: 8}.get(dtype)
            if size and len(content) == size:
                fmt = {_DT_FLOAT: "<f", _DT_DOUBLE: "<d", _DT_INT32: "<i", _DT_INT64: "<q"}[dtype]
                return ("scalar", float(struct.unpack(fmt, content)[0]))
            return None
        if len(floats) == 1:
            return ("scalar", float(floats[0]))
    return None


def parse_event(payload: bytes) -> dict[str, Any]:
    """An Event as a dict: wall_time, step, file_version, values [(tag, kind, value)]."""
    ev: dict[str, Any] = {"wall_time": math.nan, "step": 0, "file_version": None, "values": []}
    for num, wt, v in proto_fields(payload):
        if num == 1 and wt == 1:
            ev["wall_time"] = struct.unpack("<d", v)[0]
        elif num == 2 and wt == 0:
            ev["step"] = v - (1 << 64) if v >= 1 << 63 else v
        elif num == 3 and wt == 2:
            ev["file_version"] = v.decode("utf-8", errors="replace")
        elif num == 5 and wt == 2:
            for snum, swt, sv in proto_fields(v):
                if snum != 1 or swt != 2:
                    continue
                tag, value = "", None
                for vnum, vwt, vv in proto_fields(sv):
                    if vnum == 1 and vwt == 2:
                        tag = vv.decode("utf-8", errors="replace")
                    elif vnum == 2 and vwt == 5:
                        value = ("scalar", float(struct.unpack("<f", vv)[0]))
                    elif vnum == 8 and vwt == 2 and value is None:
                        value = _tensor_value(vv)
                if value is not None:
                    ev["values"].append((tag, value[0], value[1]))
    return ev


def read_events(path: Path, reader: Reader, *, verify_crc: bool = True) -> list[dict[str, Any]]:
    """All readable events of one file; damaged records are skipped and counted."""
    data = open_bytes(path)
    out = []
    pos, n, rec_no = 0, len(data), 0
    while pos < n:
        rec_no += 1
        reader.report.lines_read += 1
        if n - pos < 12:
            reader.bad("truncated record header (half-written end of file)", line=rec_no, field="length")
            break
        head = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", head)
        (len_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if masked_crc(head) != len_crc:
            reader.bad("corrupt record header (length checksum mismatch); rest of file unreadable", line=rec_no, field="length")
            break
        if length > n - pos - 16:
            reader.bad("truncated record (half-written end of file)", line=rec_no, field="data")
            break
        payload = data[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])
        pos += 16 + length
        if verify_crc and masked_crc(payload) != data_crc:
            reader.bad("record checksum mismatch", line=rec_no, field="data")
            continue
        try:
            ev = parse_event(payload)
        except (ProtoError, struct.error, UnicodeDecodeError) as exc:
            reader.bad(f"malformed Event protobuf ({exc})", line=rec_no, field="data")
            continue
        if not math.isfinite(ev["wall_time"]):
            reader.bad("event without a finite wall_time", line=rec_no, field="wall_time")
            continue
        ev["record"] = rec_no
        out.append(ev)
    return out


# --- sniffing ---------------------------------------------------------------------------------
def _run_dirs(path: Path) -> dict[Path, list[Path]]:
    """Event files under ``path`` by directory: each directory is one run (a file: its own)."""
    if path.is_file():
        return {path.parent: [path]}
    runs: dict[Path, list[Path]] = {}
    for f in sorted(path.rglob("*tfevents*")):
        if f.is_file():
            runs.setdefault(f.parent, []).append(f)
    return runs


def _describe_runs(root: Path, runs: dict[Path, list[Path]], limit: int = 10) -> str:
    """'sub/dir (N event files, first 2026-03-25T11:17:24+00:00)' for each run folder."""
    out = []
    for d, fs in list(runs.items())[:limit]:
        stamps = [int(m.group(1)) for f in fs if (m := _NAME_RE.search(f.name))]
        when = f", first {wallclock(min(stamps))}" if stamps else ""
        out.append(f"{d.relative_to(root).as_posix() or '.'} ({len(fs)} event files{when})")
    if len(runs) > limit:
        out.append(f"and {len(runs) - limit} more")
    return "; ".join(out)


def _valid_frame_start(head: bytes) -> bool:
    if len(head) < 12:
        return False
    return masked_crc(head[:8]) == struct.unpack("<I", head[8:12])[0]


def sniff(path: Path, head: bytes) -> float:
    """0.95 for an event file (valid TFRecord header) or a directory holding ``*tfevents*`` files."""
    p = Path(path)
    try:
        if p.is_dir():
            return 0.95 if any(f.is_file() for f in p.rglob("*tfevents*")) else 0.0
        if _valid_frame_start(head):
            return 0.95 if (b"brain.Event" in head[:200] or "tfevents" in p.name) else 0.7
        return 0.0
    except Exception:
        return 0.0


# --- loading ----------------------------------------------------------------------------------
def _launch_key(f: Path) -> tuple[str, str]:
    m = _NAME_RE.search(f.name)
    if not m:
        return (f.name, f.name)
    return (m.group(2), m.group(1))  # (host.pid, timestamp)


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Load an event file or a directory of them; see the module docstring for the mapping."""
    opts, overrides = split_kwargs(kwargs, ("time_tag", "log_interval", "verify_crc"), fmt=NAME)
    time_tag = str(opts.get("time_tag", "iteration-time"))
    p = Path(path)
    reader = Reader(p, NAME, strict=strict)
    rep = reader.report
    runs = _run_dirs(p) if p.exists() else {}
    if not runs:
        reader.fail("no TensorBoard event files (*tfevents*) found")
    if p.is_dir() and p not in runs and len(runs) > 1:
        n_other = sum(1 for f in p.rglob("*") if f.is_file() and "tfevents" not in f.name)
        reader.fail(
            f"{len(runs)} TensorBoard runs in subfolders, not one: event files in different folders are "
            f"different runs (restarts of one job write into one folder). Candidates: {_describe_runs(p, runs)}. "
            f"Load one folder, e.g. load_run({str(next(iter(runs)))!r})"
            + (f". The folder also holds {n_other} other file(s), not TensorBoard: load each log by its own path" if n_other else "")
        )
    home = p.parent if p.is_file() else (p if p in runs else next(iter(runs)))
    files = runs[home]
    others = {d: fs for d, fs in runs.items() if d != home}
    if others:
        rep.note(f"{len(others)} other run folder(s) below, not loaded (each is its own run): {_describe_runs(p, others)}")

    # one launch per (host.pid); launches ordered by their first wall time
    if len(files) > 1:  # several event files: each skipped record carries its file (relative to p)
        reader.root = p
    per_file: list[tuple[Path, list[dict[str, Any]]]] = []
    for f in files:
        sub = reader.for_file(f)  # strict errors name the event file, not the folder
        evs = read_events(f, sub, verify_crc=bool(opts.get("verify_crc", True)))
        for e in evs:
            e["reader"] = sub
        if evs:
            per_file.append((f, evs))
        else:
            rep.note(f"{f.name}: no readable events")
    if not per_file:
        why = "; ".join(f"{n} × {r}" for r, n in rep.skipped.items())
        reader.fail(
            "no readable TensorBoard events in "
            + (f"{len(files)} file(s)" if p.is_dir() else "the file")
            + (f" ({why})" if why else "")
        )
    groups: dict[str, list[tuple[Path, list[dict[str, Any]]]]] = {}
    for f, evs in per_file:
        groups.setdefault(_launch_key(f)[0], []).append((f, evs))
    launches = sorted(groups.values(), key=lambda g: min(e["wall_time"] for _, evs in g for e in evs))
    if len(per_file) > len(launches):
        rep.note(f"{len(per_file)} event files from {len(launches)} processes: files of one process merged")

    args: dict[str, str] = {}
    scalars: list[dict[str, Any]] = []
    timed: list[dict[str, Any]] = []  # iteration-time records
    bounds: list[tuple[float, float, int, int]] = []  # first wall, last wall, n scalars, n files
    for a, group in enumerate(launches):
        evs = sorted((e for _, g in group for e in g), key=lambda e: e["wall_time"])
        first, last = evs[0]["wall_time"], evs[-1]["wall_time"]
        n_scalar = 0
        launch_args: dict[str, str] = {}
        seen_steps: set[int] = set()
        last_t = -math.inf
        for e in evs:
            for tag, kind, value in e["values"]:
                if kind == "text":
                    if tag.endswith(_TEXT_SUFFIX):
                        launch_args[tag[: -len(_TEXT_SUFFIX)]] = value
                    continue
                n_scalar += 1
                scalars.append({"attempt": a, "step": int(e["step"]), "tag": tag, "value": value, "wall_s": e["wall_time"]})
                if tag != time_tag:
                    continue
                if not math.isfinite(value) or value < 0:
                    e["reader"].bad(f"{time_tag} is NaN, infinite or negative", line=e["record"], field=time_tag, example=f"step {e['step']}: {value}")
                    continue
                if e["step"] in seen_steps:
                    e["reader"].bad(f"{time_tag} logged twice for one step", line=e["record"], field=time_tag, example=f"step {e['step']}")
                    continue
                if e["wall_time"] < last_t:
                    e["reader"].bad("non-monotonic wall_time", line=e["record"], field="wall_time")
                    continue
                last_t = e["wall_time"]
                seen_steps.add(e["step"])
                timed.append({"attempt": a, "step": int(e["step"]), "end": e["wall_time"], "dur": value})
        if launch_args:
            args = launch_args
        bounds.append((first, last, n_scalar, len(group)))

    # --- log interval and steps ------------------------------------------------------------
    timed.sort(key=lambda r: (r["attempt"], r["step"]))
    gaps = Counter(b["step"] - a["step"] for a, b in zip(timed, timed[1:], strict=False) if a["attempt"] == b["attempt"])
    li_arg = args.get("log_interval", "")
    if "log_interval" in opts:
        log_interval = int(opts["log_interval"])
    elif li_arg.strip().isdigit():
        log_interval = int(li_arg)
    elif gaps:
        top = max(gaps.values())
        log_interval = min(g for g, c in gaps.items() if c == top)
    else:
        log_interval = 1
    log_interval = max(1, log_interval)
    point = {(s["attempt"], s["step"], s["tag"]): s["value"] for s in scalars if s["tag"] in _STEP_TAGS}
    rows: list[dict[str, Any]] = []
    prev: dict[str, Any] | None = None
    first_start: dict[int, float] = {}
    for r in timed:
        if prev is not None and prev["attempt"] == r["attempt"]:
            n = min(max(1, r["step"] - prev["step"]), log_interval)
        else:
            n = min(log_interval, max(1, r["step"]))
        start = r["end"] - n * r["dur"]
        first_start.setdefault(r["attempt"], start)
        for j in range(n):
            logged = j == n - 1
            row = {
                "attempt": r["attempt"],
                "step": r["step"] - n + 1 + j,
                "start_s": start + j * r["dur"],
                "end_s": start + (j + 1) * r["dur"],
                "interval_steps": n,
                "logged": logged,
            }
            for tag, col in _STEP_TAGS.items():
                v = point.get((r["attempt"], r["step"], tag))
                if v is not None and (logged or col == "tflops_per_gpu"):
                    row[col] = v
            rows.append(row)
        prev = r
    if not timed:
        rep.note(f"no '{time_tag}' scalars (Megatron writes them with --log-timers-to-tensorboard): no step rows")
    overlap = sum(1 for a, b in zip(rows, rows[1:], strict=False) if a["attempt"] == b["attempt"] and b["start_s"] < a["end_s"] - 1e-6)
    if overlap:
        rep.note(
            f"{overlap} steps start before the previous step ends: their {time_tag} covers more than "
            "the time since the previous log (e.g. the first timed iteration includes warm-up)"
        )

    # --- events ------------------------------------------------------------------------------
    events: list[dict[str, Any]] = []
    ends: list[float] = []
    for a, (first, last, n_scalar, _files) in enumerate(bounds):
        step_ends = [r["end_s"] for r in rows if r["attempt"] == a]
        end_a = max([last, *step_ends])
        ends.append(end_a)
        if a in first_start:
            if first_start[a] > first:
                events.append({"kind": "init", "start_s": first, "end_s": first_start[a], "attempt": a, "detail": f"launch {a}: first record to the first timed step"})
        elif n_scalar:
            events.append({"kind": "other", "start_s": first, "end_s": last, "attempt": a, "detail": f"launch {a}: {n_scalar} scalars but no {time_tag}; time not attributable"})
        else:
            events.append({"kind": "init", "start_s": first, "end_s": last, "attempt": a, "detail": f"launch {a}: ended during setup (no scalar logged)"})
        if a > 0:
            prev_end, start_a = ends[a - 1], first
            if start_a >= prev_end:
                events.append({"kind": "failure", "start_s": prev_end, "end_s": start_a, "attempt": a - 1, "detail": f"launch {a - 1} stopped; launch {a} started {start_a - prev_end:.1f} s later"})
            else:
                rep.note(f"launch {a} starts before launch {a - 1} ends (overlapping processes)")
    if len(bounds) > 1:
        rep.note(f"{len(bounds)} launches (attempts); {sum(1 for b in bounds if b[2] == 0)} logged no scalar")

    t0 = min([b[0] for b in bounds] + [r["start_s"] for r in rows])
    for r in rows:
        r["start_s"] -= t0
        r["end_s"] -= t0
    for e in events:
        e["start_s"] -= t0
        e["end_s"] -= t0
    steps = pd.DataFrame(rows, columns=["attempt", "step", "start_s", "end_s", "interval_steps", "logged", *_STEP_TAGS.values()])
    steps["rank"] = -1
    if len(steps):
        steps["samples"] = steps["batch_size"]
    steps = steps[[c for c in steps.columns if c in ("attempt", "step", "rank", "start_s", "end_s", "interval_steps", "logged") or steps[c].notna().any()]]
    tables: dict[str, pd.DataFrame] = {}
    if scalars:
        sc = pd.DataFrame(scalars)
        sc["wall_s"] = sc["wall_s"] - t0
        tables["scalars"] = sc
    found: dict[str, Any] = {}
    ws = args.get("world_size", "").strip()
    if ws.isdigit() and int(ws) > 0:
        found["n_accelerators"] = int(ws)
    gb = args.get("global_batch_size", "").strip()
    if gb.isdigit() and int(gb) > 0:
        found["global_batch"] = float(gb)
    sl = args.get("seq_length", "").strip()
    if sl.isdigit() and int(sl) > 0:
        found["seq_len"] = int(sl)
    extra: dict[str, Any] = {
        "t0_epoch_s": t0,
        "t0_wallclock": wallclock(t0),
        "log_interval": log_interval,
        "launches": [{"files": n, "first_s": f - t0, "last_s": la - t0, "scalars": s} for f, la, s, n in bounds],
    }
    if args:
        extra["args"] = args
    return finish(
        reader,
        fmt=NAME,
        steps=steps,
        events=events,
        tables=tables,
        timing="interval_mean" if log_interval > 1 else "duration_only",
        time_unit="s",
        found=found,
        overrides=overrides,
        extra=extra,
    )
