"""PyTorch NCCL Flight Recorder dumps: the per-rank ring buffer of collectives a hung job leaves.

PyTorch's ProcessGroupNCCL keeps the last ``TORCH_FR_BUFFER_SIZE`` (default 2,000) collectives of
each rank and, on a timeout, writes them to ``<TORCH_FR_DUMP_TEMP_FILE><rank>`` (``_dump_<rank>``
by default): a **pickle** (protocol 2) of plain dicts, lists, strings and numbers, or the same keys
as JSON (``dump_nccl_trace_json``). Top-level keys: ``version``, ``pg_config`` (``{pg_name: {name,
desc, ranks}}``, ``ranks`` a *string* ``"[0, 1, ...]"``), ``pg_status`` (``{local pg id:
{last_enqueued_collective, last_started_collective, last_completed_collective}}``),
``nccl_version`` (``comm_lib_version`` from version 2.10) and ``entries``, one per collective or
point-to-point op: ``record_id, pg_id`` (the rank's *local* group id), ``process_group``
(``[name, desc]``; the name is the job-wide id), ``collective_seq_id, p2p_seq_id, op_id,
profiling_name`` (``nccl:all_to_all``, ``nccl:send 0->3`` with group-local ranks),
``time_created_ns`` (epoch ns), ``input_sizes/output_sizes``, ``input_dtypes/output_dtypes``,
``state`` (``scheduled``, ``started``, ``completed``), ``time_discovered_started_ns`` /
``..._completed_ns``, ``retired``, ``timeout_ms``, ``is_p2p`` (keys from PyTorch's
``FlightRecorder.hpp``).

**Nothing from a dump is executed.** A pickle is first scanned opcode by opcode: only the opcodes
that build containers and scalars pass; a global, a ``REDUCE``/``BUILD``/``NEWOBJ``, a persistent
id or an extension code is a :class:`~mfu_toolkit.run.LoadError` naming the file and the opcode.
It is then read by an unpickler whose ``find_class`` refuses every global as well. A dump larger
than ``max_dump_bytes`` (gzip inflation bounded by the reading limits too) or nested deeper than
``max_depth`` is refused before any of it is used.

What it maps to a :class:`~mfu_toolkit.run.Run` (no steps: the dumps time no training step):

- ``collectives``: one row per entry per rank — rank, local ``pg_id``, ``pg_name``, ``pg_desc``,
  ``record_id``, ``collective_seq_id``, ``p2p_seq_id``, ``op_id``, ``profiling_name``, ``op`` (the
  name without its ``nccl:`` prefix), ``is_p2p``, ``peer_rank`` (the global rank at the other end
  of a send/recv, from the group's rank list), ``state``, ``time_created_s`` (seconds after the
  earliest entry of all dumps; that instant is ``meta.extra["t0_wallclock"]``, ISO 8601 UTC),
  ``time_started_s`` / ``time_completed_s`` (when discovered, else NaN), sizes (``4096x5120``, one
  shape per tensor joined by a comma and a space) and dtypes as text, ``timeout_ms``, ``retired``, ``thread_name``;
- ``process_groups``: job-wide name, desc, ``ranks`` (a list, parsed from the string), size;
- ``pg_status``: per rank and local group id the last enqueued, started and completed sequence
  ids, with the job-wide name the local id belongs to (``name_from``: ``entries`` when an entry of
  that rank names it, ``creation order`` when inferred by pairing the rank's local ids and its
  ``pg_config`` names in numeric order — both count groups in creation order —, else empty).

The rank of a dump is the ``rank`` it states, else the number its file name ends with
(``meta.extra["rank_from"]`` says which). In a folder, files that are no dump (a README, a log)
are passed over and named in a note. Facts: ``n_ranks`` (the default group's size when a dump
lists it, else the number of dumps read), ``framework`` ``pytorch``. An entry without a required
key, with a bad sequence id or time is skipped and counted; an unknown state is counted and kept.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .. import rules
from ..base import Parsed, loader_for
from ..reading import Reader, iter_chunks, parse_json, read_head

NAME = "flight_recorder"


@dataclass(frozen=True)
class Options:
    """What the Flight Recorder format accepts besides the RunMeta keywords.

    ``max_dump_bytes`` (default 256 MiB): a dump larger than this (after gunzip) is refused; FR's
    ring buffer holds 2,000 entries by default, a few MB even with stack frames.
    ``max_depth`` (default 32): containers nested deeper are refused (a dump nests 5 deep).
    ``max_entries`` (default 1,000,000): a dump with more entries is refused.
    """

    max_dump_bytes: int = 256 << 20
    max_depth: int = 32
    max_entries: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("max_dump_bytes", "max_depth", "max_entries"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")


STATES = ("scheduled", "started", "completed")
_REQUIRED = ("pg_id", "process_group", "collective_seq_id", "profiling_name", "state", "time_created_ns")
_MARKERS = (b"pg_config", b"pg_status", b"collective_seq_id")
_ENTRY_KEYS = (b'"entries"', b'"collective_seq_id"', b'"time_created_ns"', b'"profiling_name"')
# opcodes that build only containers and scalars (pickletools' names); every other one is refused
_SAFE_OPS = frozenset(
    "PROTO FRAME STOP MARK POP POP_MARK DUP NONE NEWTRUE NEWFALSE INT BININT BININT1 BININT2 LONG LONG1 "
    "LONG4 FLOAT BINFLOAT STRING BINSTRING SHORT_BINSTRING UNICODE SHORT_BINUNICODE BINUNICODE BINUNICODE8 "
    "BINBYTES SHORT_BINBYTES BINBYTES8 BYTEARRAY8 EMPTY_LIST APPEND APPENDS LIST EMPTY_TUPLE TUPLE TUPLE1 "
    "TUPLE2 TUPLE3 EMPTY_DICT DICT SETITEM SETITEMS EMPTY_SET ADDITEMS FROZENSET GET BINGET LONG_BINGET PUT "
    "BINPUT LONG_BINPUT MEMOIZE".split())
_P2P_RE = re.compile(r"^(send|recv)\s+(\d+)\s*(->|<-)\s*(\d+)")
_RANK_RE = re.compile(r"(\d+)(?:\.[A-Za-z]\w*)*$")
_MAX_FILES = 100_000
UNREADABLE = "unreadable dump (damaged pickle or JSON, or not a Flight Recorder dump; file left out)"
ENTRY_NOT_MAPPING = "entry is not a mapping"
BAD_ID = "id is not a non-negative integer"
PG_CONFIG_NOT_MAPPING = "pg_config is not a mapping"
UNREADABLE_PG_RANKS = "unreadable pg_config ranks (group left out)"
PG_LISTED_TWICE = "process group listed differently by two dumps (kept the first)"
PG_STATUS_NOT_MAPPING = "pg_status is not a mapping"
UNREADABLE_PG_STATUS = "unreadable pg_status record"
UNKNOWN_STATE = "unknown entry state (record kept)"
PG_ID_TWO_NAMES = "one local pg_id names two process groups (record kept)"
NO_RANK = "no rank: the dump states none and its file name ends in no number"


def _sniff_head(head: bytes) -> float:
    if head[:1] == b"\x80" and head[1:2] in (b"\x02", b"\x03", b"\x04", b"\x05"):
        return 0.95 if any(m in head for m in _MARKERS) else 0.0
    h = head.lstrip()
    if h[:1] != b"{" or b'"traceEvents"' in head or b'"schemaVersion"' in head:
        return 0.0  # a Kineto trace's distributedInfo has a pg_config too
    if (b'"pg_config"' in head and b'"pg_status"' in head) or all(k in head for k in _ENTRY_KEYS):
        return 0.9
    return 0.0


def _folder_files(path: Path) -> list[Path]:
    files = []
    for i, p in enumerate(path.iterdir()):
        if i >= _MAX_FILES:
            break
        if p.is_file() and not p.name.startswith("."):
            files.append(p)
    return sorted(files, key=lambda p: ("_dump_" not in p.name, p.name))


def sniff(path: Path, head: bytes) -> float:
    """0.95 for a pickle holding FR keys, 0.9 for the JSON form or a folder holding such dumps."""
    try:
        p = Path(path)
        if p.is_dir():
            return 0.9 if any(_sniff_head(read_head(f, 4096)) >= 0.5 for f in _folder_files(p)[:8]) else 0.0
        return _sniff_head(head)
    except OSError:
        return 0.0


# --- reading one dump, safely ------------------------------------------------------------------


class _Refused(pickle.UnpicklingError):
    """A pickle asks for something other than containers and scalars."""


class _PlainUnpickler(pickle.Unpickler):
    """An unpickler that builds containers and scalars only: every global is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise _Refused(f"the pickle asks for the global {module}.{name}; only plain containers and scalars "
                       "are read from a Flight Recorder dump")

    def persistent_load(self, pid: Any) -> Any:
        raise _Refused("the pickle holds a persistent id; only plain containers and scalars are read")


def _bounded_bytes(sub: Reader, options: Options) -> bytes:
    """The dump's bytes (gunzipped within the reading limits), refused past ``max_dump_bytes``."""
    parts, total = [], 0
    for chunk in iter_chunks(sub.path, sub.limits):
        total += len(chunk)
        if total > options.max_dump_bytes:
            sub.fail(f"the dump is larger than max_dump_bytes={options.max_dump_bytes:,} bytes; "
                     "raise max_dump_bytes= if it is genuine")
        parts.append(chunk)
    return b"".join(parts)


def _unpickle(raw: bytes, sub: Reader) -> tuple[Any, str | None]:
    """``(value, None)`` or ``(None, why it is damaged)``; a forbidden opcode or global is a LoadError."""
    try:
        bad = next(((op.name, pos) for op, _arg, pos in pickletools.genops(raw) if op.name not in _SAFE_OPS), None)
    except (ValueError, EOFError, OverflowError, UnicodeDecodeError) as exc:
        return None, f"damaged pickle: {exc}"
    if bad is not None:
        sub.fail(f"refused: the pickle holds opcode {bad[0]} at byte {bad[1]} (it would build or call an "
                 "object); a Flight Recorder dump holds only containers and scalars")
    try:
        return _PlainUnpickler(io.BytesIO(raw)).load(), None
    except _Refused as exc:
        refused = str(exc)
    except Exception as exc:  # noqa: BLE001 - any failure of a damaged pickle is the file's, said so
        return None, f"damaged pickle: {type(exc).__name__}: {exc}"
    sub.fail(f"refused: {refused}")
    return None, refused


def _too_deep(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit`` (iterative; shared and cyclic ones visited once)."""
    seen: set[int] = set()
    stack = [(value, 1)]
    while stack:
        obj, depth = stack.pop()
        if not isinstance(obj, (dict, list, tuple, set, frozenset)) or id(obj) in seen:
            continue
        if depth > limit:
            return True
        seen.add(id(obj))
        items = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else obj
        stack.extend((x, depth + 1) for x in items)
    return False


def _read_dump(sub: Reader, options: Options) -> dict[str, Any] | None:
    """The dump as a dict, or None after counting it as unreadable."""
    raw = _bounded_bytes(sub, options)
    if raw[:1] == b"\x80":
        data, why = _unpickle(raw, sub)
    else:
        data, why, _ = parse_json(raw.decode("utf-8", errors="replace"))
    if why is None and _too_deep(data, options.max_depth):
        sub.fail(f"refused: containers nest deeper than max_depth={options.max_depth} (a dump nests 5 deep)")
    if why is None and not (isinstance(data, dict) and isinstance(data.get("entries", []), list)):
        why = "no top-level mapping with an entries list"
    if why is not None:
        sub.bad(UNREADABLE, example=f"{sub.path.name}: {rules.in_full(why)}")
        return None
    if len(data.get("entries") or []) > options.max_entries:
        sub.fail(f"the dump holds more than max_entries={options.max_entries:,} entries; raise max_entries= "
                 "if it is genuine")
    return data


def _rank_of(data: dict[str, Any], path: Path) -> tuple[int | None, str]:
    stated = data.get("rank")
    if isinstance(stated, int) and not isinstance(stated, bool) and stated >= 0:
        return stated, "dump content"
    m = _RANK_RE.search(path.name)
    return (int(m.group(1)), "file name") if m else (None, "")


# --- records --------------------------------------------------------------------------------------


def _shapes(value: Any) -> str:
    """``[[4096, 5120], [8]]`` as ``4096x5120, 8``; a 0-d tensor is ``scalar``."""
    if not isinstance(value, (list, tuple)):
        return "" if value is None else str(value)[:80]
    out = []
    for shape in value[:64]:
        if isinstance(shape, (list, tuple)) and all(isinstance(d, int) for d in shape):
            out.append("x".join(str(d) for d in shape) or "scalar")
        else:
            out.append(f"<{type(shape).__name__}>")
    return ", ".join(out)


def _names(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v)[:40] for v in value[:64])
    return "" if value is None else str(value)[:80]


def _pg_ranks(text: Any) -> list[int] | None:
    """A group's ranks from ``"[0, 1, 2]"`` (or a list); None when unreadable."""
    items = text if isinstance(text, (list, tuple)) else str(text).strip().strip("[]").split(",")
    ranks = [rules.as_step(x) for x in items if str(x).strip()]
    return None if any(r is None for r in ranks) else ranks  # type: ignore[return-value]


def _entry(e: Any, rank: int, groups: dict[str, list[int]]) -> tuple[dict[str, Any] | None, str]:
    """One entry as a ``collectives`` row, or ``(None, why it is skipped)``."""
    if not isinstance(e, dict):
        return None, ENTRY_NOT_MAPPING
    for key in _REQUIRED:
        if key not in e or e[key] is None:
            return None, rules.SkipReason(rules.MISSING_FIELD, key)
    seqs = {k: rules.as_step(e.get(k, 0)) for k in ("pg_id", "collective_seq_id", "p2p_seq_id", "op_id")}
    bad = [k for k, v in seqs.items() if v is None]
    if bad:
        return None, rules.SkipReason(BAD_ID, bad[0])
    t_ns = rules.as_step(e["time_created_ns"])
    if t_ns is None:
        return None, rules.SkipReason(rules.NON_FINITE_TIME, "time_created_ns")
    pg = e["process_group"]
    pg = (list(pg) if isinstance(pg, (list, tuple)) else [pg]) + ["", ""]
    name, desc = str(pg[0]), str(pg[1])
    prof = str(e["profiling_name"])
    op = prof.split(":", 1)[1] if ":" in prof.split(" ", 1)[0] else prof
    m = _P2P_RE.match(op)
    is_p2p = bool(e["is_p2p"]) if isinstance(e.get("is_p2p"), bool) else m is not None
    peer = None
    if m:
        b = int(m.group(4))  # group-local ranks: "send a->b", "recv a<-b": the peer is b
        members = groups.get(name, [])
        peer = members[b] if b < len(members) else None
    return {
        "rank": rank, "pg_id": seqs["pg_id"], "pg_name": name, "pg_desc": desc,
        "record_id": rules.as_step(e.get("record_id")), "collective_seq_id": seqs["collective_seq_id"],
        "p2p_seq_id": seqs["p2p_seq_id"], "op_id": seqs["op_id"], "profiling_name": prof, "op": op,
        "is_p2p": is_p2p, "peer_rank": peer, "state": str(e["state"]), "t_ns": t_ns,
        "started_ns": rules.as_step(e.get("time_discovered_started_ns")),
        "completed_ns": rules.as_step(e.get("time_discovered_completed_ns")),
        "input_sizes": _shapes(e.get("input_sizes")), "input_dtypes": _names(e.get("input_dtypes")),
        "output_sizes": _shapes(e.get("output_sizes")), "output_dtypes": _names(e.get("output_dtypes")),
        "timeout_ms": rules.as_number(e.get("timeout_ms")), "retired": bool(e.get("retired", False)),
        "thread_name": str(e.get("thread_name") or ""),
    }, ""


def _groups(data: dict[str, Any], sub: Reader, found: dict[str, dict[str, Any]]) -> dict[str, list[int]]:
    """This dump's ``pg_config`` merged into ``found`` (job-wide); returns its own groups' rank lists."""
    own: dict[str, list[int]] = {}
    config = data.get("pg_config") or {}
    if not isinstance(config, dict):
        sub.bad(PG_CONFIG_NOT_MAPPING, example=sub.path.name)
        return own
    for key, cfg in config.items():
        ranks = _pg_ranks(cfg.get("ranks", "")) if isinstance(cfg, dict) else None
        if ranks is None:
            sub.bad(UNREADABLE_PG_RANKS, example=f"{key}: {str(cfg)[:120]}")
            continue
        name, desc = str(cfg.get("name", key)), str(cfg.get("desc", ""))
        own[name] = ranks
        seen = found.setdefault(name, {"pg_name": name, "pg_desc": desc, "ranks": ranks, "size": len(ranks),
                                       "n_dumps": 0})
        seen["n_dumps"] += 1
        if (seen["pg_desc"], seen["ranks"]) != (desc, ranks):
            sub.bad(PG_LISTED_TWICE, example=f"{name}: {desc} {ranks}")
    return own


def _status(data: dict[str, Any], rank: int, sub: Reader, rows: list[dict[str, Any]],
            names: dict[int, str]) -> None:
    """Append this dump's ``pg_status`` rows; ``names`` maps local ids to job-wide names (from entries)."""
    status = data.get("pg_status") or {}
    if not isinstance(status, dict):
        sub.bad(PG_STATUS_NOT_MAPPING, example=sub.path.name)
        return
    local = sorted(i for i in (rules.as_step(k) for k in status) if i is not None)
    config = [str(k) for k in (data.get("pg_config") or {})]
    order: dict[int, str] = {}
    if len(local) == len(config) and all(c.isdigit() for c in config):  # both count groups in creation order
        order = dict(zip(local, sorted(config, key=int), strict=True))
        if any(order[i] != n for i, n in names.items() if i in order):
            order = {}  # the pairing contradicts an entry: trust only the entries
    for key, st in status.items():
        lid = rules.as_step(key)
        if lid is None or not isinstance(st, dict):
            sub.bad(UNREADABLE_PG_STATUS, example=f"{key}: {str(st)[:120]}")
            continue
        name, src = (names[lid], "entries") if lid in names else (order.get(lid, ""), "creation order")
        rows.append({"rank": rank, "pg_id": lid, "pg_name": name, "name_from": src if name else "",
                     **{k: _seq(st.get(f"last_{k}_collective")) for k in ("enqueued", "started", "completed")}})


def _seq(value: Any) -> int:
    """A status sequence id (``-1`` when none: FR's own value for 'nothing yet')."""
    n = rules.as_step(value)
    return -1 if n is None else n


# --- the whole load -------------------------------------------------------------------------------


def _dump_files(reader: Reader) -> list[Path]:
    if not reader.path.is_dir():
        return [reader.path]
    files, others = [], []
    for f in _folder_files(reader.path):
        (files if _sniff_head(read_head(f, 4096)) >= 0.5 else others).append(f)
    if others:
        shown = ", ".join(p.name for p in others[:5]) + (", ..." if len(others) > 5 else "")
        reader.note(f"passed over {len(others)} file(s) that are not Flight Recorder dumps: {shown}")
    if not files:
        reader.fail("no Flight Recorder dumps in this folder (pickles or JSON with pg_config/entries)")
    return files


def _read_entries(data: dict[str, Any], rank: int, sub: Reader, own: dict[str, list[int]],
                  rows: list[dict[str, Any]]) -> dict[int, str]:
    """Append the dump's entries as rows; returns local pg id -> job-wide name, as its entries say."""
    names: dict[int, str] = {}
    for i, e in enumerate(data.get("entries") or [], start=1):
        sub.report.lines_read += 1
        row, why = _entry(e, rank, own)
        if row is None:
            sub.bad(why, line=i, example=str(e)[:160])
            continue
        if row["state"] not in STATES:
            sub.bad(UNKNOWN_STATE, line=i, example=row["state"][:80])
        if names.setdefault(row["pg_id"], row["pg_name"]) != row["pg_name"]:
            sub.bad(PG_ID_TWO_NAMES, line=i, example=row["pg_name"])
        rows.append(row)
    return names


def _read_all(reader: Reader, options: Options) -> tuple[list[dict], dict[str, dict], list[dict], dict[int, Any]]:
    files = _dump_files(reader)
    root = reader.path if reader.path.is_dir() else None
    entries: list[dict[str, Any]] = []
    groups: dict[str, dict[str, Any]] = {}
    status: list[dict[str, Any]] = []
    dumps: dict[int, Any] = {}  # rank -> (file, data, how the rank was found)
    for f in files:
        sub = reader.for_file(f, root=root) if root is not None else reader
        data = _read_dump(sub, options)
        if data is None:
            continue
        rank, how = _rank_of(data, f)
        if rank is None:
            sub.bad(NO_RANK, example=f.name)
            continue
        if rank in dumps:
            sub.bad(rules.DUPLICATE, example=f.name, detail=f"a second dump of rank {rank}")
            continue
        dumps[rank] = (f, data, how)
        own = _groups(data, sub, groups)
        names = _read_entries(data, rank, sub, own, entries)
        _status(data, rank, sub, status, names)
    if not dumps:
        why = reader.report.examples.get(UNREADABLE)
        reader.fail("no readable Flight Recorder dump" + (f" ({why})" if why else ""))
    return entries, groups, status, dumps


def _collectives(rows: list[dict[str, Any]]) -> tuple[pd.DataFrame, int | None]:
    df = pd.DataFrame(rows)
    if df.empty:
        return df, None
    t0 = int(df["t_ns"].min())
    for src, dst in (("t_ns", "time_created_s"), ("started_ns", "time_started_s"),
                     ("completed_ns", "time_completed_s")):
        ns = pd.to_numeric(df.pop(src), errors="coerce")
        df[dst] = (ns - t0) / 1e9
    for col in ("record_id", "peer_rank"):
        df[col] = df[col].astype("Int64")
    return df.sort_values(["rank", "time_created_s"], kind="stable").reset_index(drop=True), t0


def parse(reader: Reader, options: Options) -> Parsed:
    """Read one dump or a folder of per-rank dumps; see the module docstring for the mapping."""
    entries, groups, status, dumps = _read_all(reader, options)
    coll, t0 = _collectives(entries)
    pgs = pd.DataFrame(list(groups.values()), columns=["pg_name", "pg_desc", "ranks", "size", "n_dumps"])
    out = Parsed(tables={"collectives": coll, "process_groups": pgs, "pg_status": pd.DataFrame(status)},
                 time_unit="ns")
    ranks = sorted(dumps)
    first_file, first, _ = dumps[ranks[0]]
    hows = sorted({how for _, _, how in dumps.values()})
    out.extra.update({
        "flight_recorder_version": str(first.get("version", "")),
        "nccl_version": str(first.get("nccl_version", first.get("comm_lib_version", ""))),
        "ranks": ranks, "rank_from": hows[0] if len(hows) == 1 else "mixed: " + ", ".join(hows),
    })
    if t0 is not None:
        out.extra["t0_wallclock"] = rules.wallclock(t0 / 1e9)
    reader.note(f"read {len(ranks)} dump(s); the rank of each from its {out.extra['rank_from']}")
    default = next((g for g in groups.values() if g["pg_desc"] == "default_pg" or g["pg_name"] == "0"), None)
    where = reader.display or str(reader.path)
    if default is not None:
        out.fact("n_ranks", default["size"], f"{where}: pg_config {default['pg_name']!r}",
                 f"the default process group ({default['pg_desc'] or 'name 0'}) lists {default['size']} ranks")
        missing = sorted(set(default["ranks"]) - set(ranks))
        if missing:
            out.extra["ranks_without_dump"] = missing
            reader.note(f"no dump for {len(missing)} of {default['size']} ranks: {missing[:20]}")
    else:
        out.fact("n_ranks", len(ranks), where, f"{len(ranks)} dumps read (no dump lists the default group)")
    version = out.extra["flight_recorder_version"]
    out.fact("framework", "pytorch", first_file.name, f"Flight Recorder dump version {version}")
    return out


load = loader_for(NAME)
