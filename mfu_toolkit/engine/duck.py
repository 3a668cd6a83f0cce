"""DuckDB: the embedded engine, out of core over a Parquet dataset (a folder of part files or
one large file). Queries run one step range at a time so DuckDB's exact medians hold one range's
values, never the whole dataset; ``memory_limit`` caps the rest (DuckDB spills beyond it).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from . import row_rules

__all__ = ["DuckBackend", "FILE_COLUMN", "STEP_SOURCE_COLUMNS", "literal_path", "source_type"]

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
    rows one query reads. :meth:`check_rows` applies the row rules (:mod:`.row_rules`) and learns
    the step range the batches split from the data itself (never from footers alone).
    """

    dialect = "duckdb"
    name = "duckdb"

    def __init__(self, files: Sequence[Path], columns: set[str], *, n_rows: int,
                 batch_rows: int = 25_000_000, memory_limit: str | None = "3GB", threads: int | None = None,
                 int_columns: set[str] = frozenset()) -> None:
        import duckdb

        self.con = duckdb.connect(config={"preserve_insertion_order": False})
        if memory_limit:
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        listing = "[" + ", ".join("'" + literal_path(p).replace("'", "''") + "'" for p in files) + "]"
        self.source = f"read_parquet({listing}, union_by_name = true, filename = '{FILE_COLUMN}')"
        self.columns, self.int_columns = set(columns), set(int_columns)
        self.n_rows, self.batch_rows = n_rows, batch_rows
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
        """WHERE clauses over step ranges of about ``batch_rows`` rows each (steps spread evenly)."""
        if self.step_range is None:
            return ["TRUE"]
        lo, hi = self.step_range
        n = max(1, math.ceil(self.n_rows / max(self.batch_rows, 1)))
        edges = np.unique(np.linspace(lo, hi + 1, n + 1).astype(np.int64))
        if len(edges) < 2:
            return ["TRUE"]
        return [f"step >= {a} AND step < {b}" for a, b in zip(edges[:-1], edges[1:], strict=True)]

    def run(self, sql: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, np.ndarray]:
        for name, df in tables.items():
            self.con.register(name, df)
        try:
            t = self.con.sql(sql).to_arrow_table()
        finally:
            for name in tables:
                self.con.unregister(name)
        return {c: _numpy(t.column(c)) for c in t.column_names}

    def close(self) -> None:
        self.con.close()


def _numpy(col: object) -> np.ndarray:
    """An Arrow column as numpy; NULLs become NaN (integers with NULLs widen to float)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if col.null_count and pa.types.is_integer(col.type):
        col = pc.cast(col, pa.float64())
    return col.to_numpy(zero_copy_only=False)
