"""Many per-rank trace files: a memory-bounded process pool, a Parquet cache per file, Spark.

A job's Kineto traces are one file per rank, hundreds of MB each. The format module
(:mod:`mfu_toolkit.io.formats.kineto`) reduces one file to a :class:`RankPart` (its per-step
table, a few facts, and what its reading counted); this module runs that per-file function
over many files and keeps each result:

- **Memory budget.** Files are parsed in worker processes, never more than ``budget`` bytes of
  estimated cost in flight. A file's cost is :data:`COST_FACTOR` × its inflated size (plain
  file: its size; gzip: the size its trailer states, taken modulo 2**32 as gzip writes it and
  raised by 2**32 until it is no smaller than the compressed file; capped by the reading
  limit) plus :data:`COST_FLOOR` for the worker itself. A file costlier than the whole budget
  runs alone. The default budget is half of the memory available now (``MemAvailable``).
- **Cache.** Each file's RankPart is written as Parquet in the user cache directory
  (``$MFU_CACHE_DIR``, else ``$XDG_CACHE_HOME/mfu_toolkit``, else ``~/.cache/mfu_toolkit``; under
  ``kineto/``, named by the trace's full path); nothing is written beside the trace unless asked
  (``cache="beside"``: ``.mfu_cache/<file>.parquet`` beside it, else the user cache directory
  where that folder cannot be written; a folder whose mode has no write bit counts as read-only,
  for root too). An entry is keyed by the trace's size, modification time and content fingerprint
  (:func:`mfu_toolkit.io.cache.fingerprint`: a rewrite with the same size and mtime is seen) and
  the parse settings. An entry whose key differs, that cannot be read, or whose columns, rows or
  footer record do not match what was written is ignored and rewritten; a re-analysis reads no
  JSON. ``mfu cache info|clear`` shows and empties the user cache directory.
- **Spark.** :func:`spark_map` runs the same per-file function as a Spark job over the paths
  (one task per file) with :mod:`mfu_toolkit.engine.spark`'s session handling.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import numpy as np

from ..run import LoadError, LoadReport
from .cache import cache_dir, fingerprint
from .tracejson import inflated_size as inflated_size  # the inflated bytes: the cost rule's input

__all__ = ["COST_FACTOR", "COST_FLOOR", "RankPart", "default_budget", "estimated_cost", "map_files",
           "merge_report", "parse_budget", "read_cache", "spark_map", "write_cache"]

# peak bytes per inflated byte of the full parse (the selective read needs ~1.2; benchmarks/kineto_ranks.py)
COST_FACTOR = 2.5
COST_FLOOR = 200 * 2**20  # a worker process with numpy and pandas imported
CACHE_VERSION = 2  # 2: keyed by a content fingerprint; the footer records its columns and a digest
_META_KEY = b"mfu_toolkit.rank_part"
_UNITS = {"": 1, "b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30, "t": 2**40,
          "tb": 2**40}


@dataclass
class RankPart:
    """One file's parse: a table of equal-length columns, JSON-able facts, its report's counts."""

    path: str
    columns: dict[str, np.ndarray] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    report: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the file could not be read at all (LoadError text)


# --- reports ---------------------------------------------------------------------------------------
def report_dict(r: LoadReport) -> dict[str, Any]:
    """What one file's reading added to its (fresh) report, as plain JSON-able values."""
    return {"lines_read": r.lines_read, "skipped": dict(r.skipped),
            "first_lines": {k: list(v) for k, v in r.first_lines.items()},
            "examples": dict(r.examples), "details": dict(r.details), "notes": list(r.notes)}


def merge_report(into: LoadReport, part: dict[str, Any]) -> None:
    """Add one file's counts to the load's report, as if that file had been read in place."""
    into.merge(LoadReport(**part))


# --- memory budget -------------------------------------------------------------------------------------
def parse_budget(value: int | str | None) -> int:
    """A budget in bytes from ``None`` (the default), an int, or text such as ``"8GB"``."""
    if value is None:
        return default_budget()
    if isinstance(value, str):
        t = value.strip().lower().replace(" ", "").replace("i", "")
        num = t.rstrip("kmgtb")
        unit = t[len(num):]
        try:
            n = int(float(num) * _UNITS[unit])
        except (ValueError, KeyError):
            n = -1
        value = n
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"memory_budget must be a positive number of bytes or text like '8GB'; got {value!r}")
    return value


def default_budget() -> int:
    """Half of the memory available now (``/proc/meminfo`` MemAvailable; else half of RAM; else 4 GiB)."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024 // 2
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return 4 * 2**30


def estimated_cost(inflated: int) -> int:
    """Peak memory one file's parse is expected to need: COST_FACTOR × inflated size + COST_FLOOR."""
    return int(COST_FACTOR * inflated) + COST_FLOOR


# --- the pool --------------------------------------------------------------------------------------------
def map_files(fn: Callable[..., RankPart], paths: Sequence[Path], *, args: tuple = (), workers: int = 1,
              budget: int, costs: Sequence[int]) -> list[RankPart]:
    """``fn(path, *args)`` for every path, in order; in ``workers`` processes within ``budget``."""
    if workers <= 1 or len(paths) <= 1:
        return [fn(str(p), *args) for p in paths]
    out: list[RankPart | None] = [None] * len(paths)
    running: dict[Future, tuple[int, int]] = {}
    nxt, in_flight = 0, 0
    with ProcessPoolExecutor(max_workers=min(workers, len(paths)), mp_context=_context()) as pool:
        while nxt < len(paths) or running:
            while nxt < len(paths) and len(running) < workers and (not running or in_flight + costs[nxt] <= budget):
                running[pool.submit(fn, str(paths[nxt]), *args)] = (nxt, costs[nxt])
                in_flight += costs[nxt]
                nxt += 1
            done, _ = wait(running, return_when=FIRST_COMPLETED)
            for fut in done:
                i, cost = running.pop(fut)
                in_flight -= cost
                try:
                    out[i] = fut.result()  # a LoadError (strict) is raised here, naming its file
                except BrokenProcessPool:
                    raise LoadError(f"a worker process died while parsing (out of memory? lower memory_budget= "
                                    f"or workers=; in flight: {paths[i]})", path=paths[i]) from None
    return out  # type: ignore[return-value]


def _context() -> Any:
    """``fork`` where the platform has it (workers inherit the imports; no ``__main__`` guard is
    needed in a user's script), else ``spawn``."""
    from multiprocessing import get_all_start_methods

    return get_context("fork" if "fork" in get_all_start_methods() else "spawn")


def default_workers(n_files: int) -> int:
    return max(1, min(n_files, os.cpu_count() or 1))


# --- the cache ----------------------------------------------------------------------------------------------
def _where(where: bool | str) -> str:
    if where is True or where == "user":
        return "user"
    if where == "beside":
        return "beside"
    raise ValueError(f"cache must be True (the user cache directory), 'beside' (beside the trace) or False; "
                     f"got {where!r}")


def cache_locations(trace: Path, where: bool | str = True, user_dir: str | None = None) -> list[Path]:
    """Where ``trace``'s cache may be: the user cache directory (named by the trace's full path);
    with ``where="beside"``, ``.mfu_cache/`` beside the trace first. ``user_dir``: the user cache
    directory as the caller resolved it (a pool or Spark worker may not share the caller's
    environment), else :func:`cache_dir` here."""
    full = trace.resolve()
    digest = hashlib.sha256(str(full).encode()).hexdigest()[:16]
    user = (Path(user_dir) if user_dir else cache_dir()) / "kineto" / f"{digest}-{full.name}.parquet"
    return [full.parent / ".mfu_cache" / (full.name + ".parquet"), user] if _where(where) == "beside" else [user]


def _writable(folder: Path) -> bool:
    """The nearest existing folder up from ``folder`` may be written: access allowed and a write
    bit set in its mode (so a folder marked read-only stays untouched even for root)."""
    p = folder
    while not p.exists():
        if p.parent == p:
            return False
        p = p.parent
    try:
        mode = p.stat().st_mode
    except OSError:
        return False
    return p.is_dir() and os.access(p, os.W_OK) and bool(mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def cache_key(trace: Path, settings: str) -> dict[str, Any]:
    """The key a cache entry must match: the trace's size, mtime and content fingerprint, the settings."""
    st = trace.stat()
    return {"version": CACHE_VERSION, "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            "content": fingerprint(trace), "settings": settings}


def _digest(meta: dict[str, Any]) -> str:
    body = {k: v for k, v in meta.items() if k != "digest"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def read_cache(trace: Path, key: dict[str, Any], where: bool | str = True,
               user_dir: str | None = None) -> RankPart | None:
    """The cached RankPart of ``trace`` if one with this key reads back whole; else None.

    Whole: the footer's record (key, facts, counts, column names, row count) matches its digest,
    and the table holds exactly the recorded columns and rows. Anything less is a miss, and the
    trace is parsed again (and the entry rewritten)."""
    import pyarrow.parquet as pq

    for loc in cache_locations(trace, where, user_dir):
        try:
            t = pq.read_table(loc)
            meta = json.loads(t.schema.metadata[_META_KEY])
            if meta.get("key") != key or meta.get("digest") != _digest(meta):
                continue
            if sorted(t.column_names) != sorted(meta["columns"]) or t.num_rows != meta["rows"]:
                continue
            cols = {c: t.column(c).to_numpy(zero_copy_only=False) for c in meta["columns"]}
            return RankPart(str(trace), cols, meta["info"], meta["report"], meta.get("error"))
        except Exception:  # absent, unreadable, truncated, foreign, damaged: ignored (and rewritten)
            continue
    return None


def write_cache(trace: Path, key: dict[str, Any], part: RankPart, where: bool | str = True,
                user_dir: str | None = None) -> Path | None:
    """Write ``part`` to the first writable cache location (atomically); None if none is."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.table({c: pa.array(v) for c, v in part.columns.items()})
    meta = {"key": key, "info": part.info, "report": part.report, "error": part.error,
            "columns": list(part.columns), "rows": table.num_rows}
    meta = json.loads(json.dumps(meta))  # as it will read back (tuples as lists, keys as text)
    meta["digest"] = _digest(meta)
    table = table.replace_schema_metadata({_META_KEY: json.dumps(meta)})
    for loc in cache_locations(trace, where, user_dir):
        if not _writable(loc.parent):
            continue
        tmp = loc.with_name(f".{loc.name}.{os.getpid()}.tmp")
        try:
            loc.parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(table, tmp)
            os.replace(tmp, loc)
            return loc
        except OSError:
            try:
                tmp.unlink(missing_ok=True)
            except OSError:
                pass
    return None


# --- Spark ------------------------------------------------------------------------------------------------------
def _spark_session(spark: Any) -> Any:
    """The session passed in, else the active one, else Spark Connect at ``SPARK_REMOTE``, else local."""
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    from ..engine.spark import local_session

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if os.environ.get("SPARK_REMOTE"):
        return SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
    return local_session()


def _local_python(s: Any) -> None:
    """In local mode the tasks run on this machine: with this interpreter (and its packages),
    unless ``PYSPARK_PYTHON`` names another."""
    try:
        sc = s.sparkContext
    except Exception:  # Spark Connect: the cluster's own Python runs the tasks
        return
    if str(sc.master).startswith("local") and not os.environ.get("PYSPARK_PYTHON"):
        sc.pythonExec = sys.executable


_PART_KEY = b"mfu_toolkit.rank_part"


def part_to_bytes(part: RankPart) -> bytes:
    """A RankPart as Arrow IPC bytes: its columns as a table, the rest as JSON in the schema's
    metadata. What a Spark task sends back: data only, never a pickle (a pickle from an executor
    could run code on the driver)."""
    import pyarrow as pa

    table = pa.table({c: pa.array(v) for c, v in part.columns.items()})
    meta = {"path": part.path, "info": part.info, "report": part.report, "error": part.error,
            "columns": list(part.columns)}
    table = table.replace_schema_metadata({_PART_KEY: json.dumps(meta)})
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def part_from_bytes(data: bytes) -> RankPart:
    """The RankPart :func:`part_to_bytes` wrote (a ValueError for anything else)."""
    import pyarrow as pa

    try:
        table = pa.ipc.open_stream(pa.py_buffer(data)).read_all()
        meta = json.loads(table.schema.metadata[_PART_KEY])
        cols = {c: table.column(c).to_numpy(zero_copy_only=False) for c in meta["columns"]}
    except (pa.ArrowInvalid, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a Spark task returned something that is not a rank's parse ({exc})") from None
    return RankPart(str(meta["path"]), cols, meta["info"], meta["report"], meta.get("error"))


def _spark_task(fn: Callable[..., RankPart], args: tuple) -> Callable[[Any], Any]:
    def run(batches: Any) -> Any:
        import pandas as pd

        for df in batches:
            parts = [part_to_bytes(fn(p, *args)) for p in df["path"]]
            yield pd.DataFrame({"i": df["i"].to_numpy(), "part": parts})

    return run


def spark_map(fn: Callable[..., RankPart], paths: Sequence[Path], *, args: tuple = (),
              spark: Any = None) -> list[RankPart]:
    """``fn(path, *args)`` for every path as one Spark job (a task per file), results in order.

    DataFrame API only (``mapInPandas``), so a Spark Connect session works too. The executors
    must see the paths (a shared file system) and have ``mfu_toolkit`` installed.
    """
    names = [str(p) for p in paths]
    if not names:
        return []
    s = _spark_session(spark)
    _local_python(s)
    df = s.createDataFrame([(i, p) for i, p in enumerate(names)], "i long, path string").repartition(len(names))
    try:
        rows = df.mapInPandas(_spark_task(fn, args), schema="i long, part binary").collect()
    except Exception as exc:  # a task's LoadError (strict) arrives inside Spark's own error
        for line in str(exc).splitlines():
            if "LoadError:" in line:
                raise LoadError(line.split("LoadError:", 1)[1].strip()) from None
        raise
    return [part_from_bytes(bytes(r["part"])) for r in sorted(rows, key=lambda r: r["i"])]
