"""DuckDB: the embedded engine, out of core over a Parquet dataset (a folder of part files or
one large file). Queries run one step range at a time so DuckDB's exact medians hold one range's
values, never the whole dataset; ``memory_limit`` caps the rest (DuckDB spills beyond it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["DuckBackend", "STEP_SOURCE_COLUMNS", "source_type"]

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


class DuckBackend:
    """Runs :mod:`.queries` in an in-process DuckDB over ``files``.

    ``columns``: the columns the files have (the union over files); ``step_range``: the smallest
    and largest step number (from the files' statistics), which the batches split; ``batch_rows``:
    about how many rows one query reads.
    """

    dialect = "duckdb"
    name = "duckdb"

    def __init__(self, files: Sequence[Path], columns: set[str], *, n_rows: int, step_range: tuple[int, int],
                 batch_rows: int = 25_000_000, memory_limit: str | None = "3GB", threads: int | None = None) -> None:
        import duckdb

        self.con = duckdb.connect(config={"preserve_insertion_order": False})
        if memory_limit:
            self.con.execute(f"SET memory_limit = '{memory_limit}'")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        select = ", ".join(
            (f'CAST("{c}" AS {source_type(c)}) AS {c}' if c in columns else f"{default} AS {c}")
            for c, default in STEP_SOURCE_COLUMNS.items()
        )
        listing = "[" + ", ".join(_quote(p) for p in files) + "]"
        self.con.execute(f"CREATE VIEW steps AS SELECT {select} FROM read_parquet({listing}, union_by_name = true)")
        self.n_rows, self.step_range, self.batch_rows = n_rows, step_range, batch_rows

    def step_batches(self) -> list[str]:
        """WHERE clauses over step ranges of about ``batch_rows`` rows each (steps spread evenly)."""
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
