"""DuckDB: the embedded engine, out of core over a Parquet dataset (a folder of part files or
one large file). Queries run one step range at a time so DuckDB's exact medians hold one range's
values, never the whole dataset; ``memory_limit`` caps the rest (DuckDB spills beyond it).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import queries, row_rules

__all__ = ["DuckBackend", "FILE_COLUMN", "MemoryBudgetError", "STEP_SOURCE_COLUMNS", "literal_path", "memory_bytes",
           "source_type"]

# The column that names each row's part file in the rule check (a name no dataset column has).
FILE_COLUMN = "mfu_part_file__"

# The columns the queries read, with what stands in for an optional one a dataset lacks. ``flag``
# is the text a loader set on a step row (MaxText: ``compile``, ``async_dispatch``, ``outlier``);
# a dataset without it has no flagged steps.
STEP_SOURCE_COLUMNS: dict[str, str] = {
    "attempt": "CAST(0 AS BIGINT)", "step": "", "rank": "CAST(-1 AS BIGINT)", "start_s": "", "end_s": "",
    "data_wait_s": "CAST(NULL AS DOUBLE)", "compute_s": "CAST(NULL AS DOUBLE)",
    "samples": "CAST(NULL AS DOUBLE)", "tokens": "CAST(NULL AS DOUBLE)", "flag": "CAST(NULL AS VARCHAR)",
}


def source_type(column: str) -> str:
    """The SQL type a step source column is read as: BIGINT, VARCHAR (``flag``) or DOUBLE."""
    if column in ("attempt", "step", "rank"):
        return "BIGINT"
    return "VARCHAR" if column == "flag" else "DOUBLE"


# What the process holds per job-level step beyond the engine: the reductions' columns (19 of
# 8 bytes) while they are read, and what the breakdown, the window and the straggler scores
# build from them (measured with benchmarks/many_steps.py: 3.75M steps grew the peak by 1.1 GB
# after loading, about 300 bytes a step; rounded up).
JOB_BYTES_PER_STEP = 160
ANALYSIS_BYTES_PER_STEP = 400
# The least DuckDB is given for one query; below it the limit is too small to read the dataset.
_MIN_ENGINE_BYTES = 256 * 2**20
_UNITS = {"b": 1, "kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12,
          "kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([a-z]*)\s*", re.IGNORECASE)


class MemoryBudgetError(RuntimeError):
    """The memory limit cannot hold the run: what it needs, beside what the process holds."""


def memory_bytes(limit: str | int) -> int:
    """``limit`` ("3GB", "512MiB", a number of bytes) in bytes, read as DuckDB reads it (KB = 1000
    bytes, KiB = 1024); a ValueError names the value otherwise."""
    if isinstance(limit, int) and not isinstance(limit, bool) and limit > 0:
        return limit
    m = _SIZE.fullmatch(limit) if isinstance(limit, str) else None
    unit = (m.group(2).lower() or "b") if m else ""
    if not m or unit not in _UNITS or float(m.group(1)) <= 0:
        raise ValueError(f"memory_limit must be a size such as '3GB' or '512MiB' (units {', '.join(_UNITS)}); "
                         f"got {limit!r}")
    return int(float(m.group(1)) * _UNITS[unit])


def _resident_bytes() -> int | None:
    """This process's resident memory now (Linux ``/proc``); None where it cannot be read."""
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _gb(n: float) -> str:
    return f"{n / 1e9:.2f} GB"


def _quote(path: Path) -> str:
    return "'" + str(path).replace("'", "''") + "'"


# DuckDB expands ``*``, ``?`` and ``[...]`` (and ``{a,b}`` in some versions) in every path of
# ``read_parquet([...])``; a character inside brackets stands for itself ("we need to escape the
# paths ... data/[[]1].parquet", https://github.com/duckdb/duckdb/pull/15722). Backslashes are
# not special to it. Which file each row came from is checked against the footers' row counts
# (:func:`.row_rules.validation_sql` groups by file), so an expansion never goes unnoticed.
_DUCK_GLOB = re.compile(r"([*?\[\]{}])")


def literal_path(path: Path) -> str:
    """``path`` as DuckDB reads it literally: each glob character escaped in brackets."""
    return _DUCK_GLOB.sub(r"[\1]", str(path))


class DuckBackend:
    """Runs :mod:`.queries` in an in-process DuckDB over ``files`` (read literally, never as globs).

    ``columns``: the columns the files have (the union over files), ``int_columns`` those every
    file stores as integers (:data:`.row_rules.INTEGER_TYPES`); ``batch_rows``: about how many
    rows one query reads; ``batch_steps``: at most how many step numbers one query groups (a
    grouped median holds every group's values and state at once: 3.75M steps in one query took
    10x the time of four queries of 1M and past the memory limit). :meth:`check_rows` applies
    the row rules (:mod:`.row_rules`) and learns the step range the batches split from the data
    itself (never from footers alone).

    ``memory_limit`` holds the whole process, not DuckDB alone: before each query DuckDB is given
    the limit less what the process holds (the step reductions grow with the step count), and
    :meth:`check_headroom` refuses a run whose steps the analysis cannot hold within it
    (:class:`MemoryBudgetError`, naming the figures) before the memory is spent.
    """

    dialect = "duckdb"
    name = "duckdb"

    def __init__(self, files: Sequence[Path], columns: set[str], *, n_rows: int,
                 batch_rows: int = 25_000_000, batch_steps: int = 1_000_000, memory_limit: str | None = "3GB",
                 threads: int | None = None, int_columns: set[str] = frozenset()) -> None:
        import duckdb

        self.con = duckdb.connect(config={"preserve_insertion_order": False})
        # freed memory goes back to the system between queries (else the allocator keeps the
        # peak of the job-step queries, 1.6 GB at 3.75M steps, for the rest of the run)
        self.con.execute("SET allocator_background_threads = true")
        # isnan() over a column whose footer statistics leave NaN out (as pyarrow writes them,
        # per the Parquet spec) is folded to false by the statistics optimizer
        # (https://github.com/duckdb/duckdb/issues/25521): a NaN time would pass as a valid row
        self.con.execute("SET disabled_optimizers = 'statistics_propagation'")
        self.limit = memory_bytes(memory_limit) if memory_limit else None
        if self.limit:
            self.con.execute(f"SET memory_limit = '{self.limit}B'")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        listing = "[" + ", ".join("'" + literal_path(p).replace("'", "''") + "'" for p in files) + "]"
        self.source = f"read_parquet({listing}, union_by_name = true, filename = '{FILE_COLUMN}')"
        self.columns, self.int_columns = set(columns), set(int_columns)
        self.n_rows, self.batch_rows, self.batch_steps = n_rows, batch_rows, batch_steps
        self.step_range: tuple[int, int] | None = None
        self._view("TRUE")

    def _view(self, keep: str) -> None:
        # TRY_CAST: DuckDB may cast a row before the filter leaves it out (a NaN step would stop
        # the query); a row the filter keeps breaks no rule, so its cast is exact
        select = ", ".join(
            (f'TRY_CAST("{c}" AS {source_type(c)}) AS {c}' if c in self.columns else f"{default} AS {c}")
            for c, default in STEP_SOURCE_COLUMNS.items()
        )
        self.con.execute(f"CREATE OR REPLACE VIEW steps AS SELECT {select} FROM {self.source} WHERE {keep}")

    def check_rows(self) -> dict[tuple[str, int], tuple[int, float, float]]:
        """Per (part file, rule code): rows, smallest and largest step, in one scan (see
        :func:`.row_rules.validation_sql`); code 0 holds the valid rows."""
        got = self.run(row_rules.validation_sql(self.source, FILE_COLUMN, self.columns, self.int_columns), {})
        return {(str(f), int(c)): (int(n), float(lo), float(hi))
                for f, c, n, lo, hi in zip(got["f"], got["code"], got["n"], got["step_min"], got["step_max"],
                                           strict=True)}

    def keep_valid(self, step_range: tuple[int, int] | None, any_bad: bool) -> None:
        """Read only the rows that break no rule (when ``any_bad``); batch over ``step_range``."""
        self.step_range = step_range
        if any_bad:
            self._view(row_rules.keep_sql(self.columns, self.int_columns))

    def step_batches(self) -> list[str]:
        """WHERE clauses over step ranges of about ``batch_rows`` rows and at most ``batch_steps``
        steps each (steps spread evenly; a step count is at most the rows, whatever the span
        of step numbers)."""
        if self.step_range is None:
            return ["TRUE"]
        lo, hi = self.step_range
        steps = min(hi - lo + 1, self.n_rows)
        n = max(1, math.ceil(self.n_rows / max(self.batch_rows, 1)), math.ceil(steps / max(self.batch_steps, 1)))
        return queries.range_clauses("step", lo, hi, n)

    def _fit_memory(self) -> None:
        """Give DuckDB the limit less what the rest of the process holds now."""
        held = _resident_bytes()
        if not self.limit or held is None:
            return
        (engine_held,) = self.con.execute("SELECT coalesce(sum(memory_usage_bytes), 0) FROM duckdb_memory()").fetchone()
        room = self.limit - (held - int(engine_held))
        if room < _MIN_ENGINE_BYTES:
            raise MemoryBudgetError(
                f"memory_limit {_gb(self.limit)} leaves {_gb(max(room, 0))} for DuckDB beside the "
                f"{_gb(held - int(engine_held))} this process holds; raise it (memory_limit=..., "
                "mfu analyze --memory-limit)")
        self.con.execute(f"SET memory_limit = '{int(room)}B'")

    def query_budget(self) -> int | None:
        """Bytes one query may hold now: the limit less what the process holds (None: no limit)."""
        held = _resident_bytes()
        if not self.limit or held is None:
            return None
        return max(self.limit - held, _MIN_ENGINE_BYTES)

    def check_headroom(self, n_steps: int, *, n_held: int = 0) -> None:
        """Refuse, before reading them all, ``n_steps`` job-level steps (``n_held`` of them read
        already) whose reductions and analysis would not fit the limit beside what is held."""
        held = _resident_bytes()
        if not self.limit or held is None:
            return
        need = (n_steps - n_held) * JOB_BYTES_PER_STEP + n_steps * ANALYSIS_BYTES_PER_STEP
        if held + need > self.limit:
            raise MemoryBudgetError(
                f"about {n_steps:,} steps need about {_gb(need)} for their analysis beside the {_gb(held)} this "
                f"process holds, over memory_limit {_gb(self.limit)}; raise it (memory_limit=..., "
                "mfu analyze --memory-limit) or analyse a sub-folder")

    def run(self, sql: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, np.ndarray]:
        self._fit_memory()
        for name, df in tables.items():
            self.con.register(name, df)
        try:
            t = self.con.sql(sql).to_arrow_table()
        finally:
            for name in tables:
                self.con.unregister(name)
        return {c: arrow_numpy(t.column(c)) for c in t.column_names}

    def close(self) -> None:
        self.con.close()


def arrow_numpy(col: object) -> np.ndarray:
    """An Arrow column as numpy; NULLs become NaN (integers with NULLs widen to float)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count and pa.types.is_integer(col.type):
        col = pc.cast(col, pa.float64())
    return col.to_numpy(zero_copy_only=False)
