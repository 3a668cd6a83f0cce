"""Spark: the same reduction queries (transpiled from DuckDB's SQL by sqlglot) on a cluster.

A team points it at its cluster by passing its own session (``spark=``, e.g. one built with
``SparkSession.builder.remote("sc://host:15002")`` or by ``spark-submit``) or by setting
``SPARK_REMOTE`` (Spark Connect); otherwise a local session is started (``local[*]``, bound to
the loopback interface).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np
import pandas as pd

from . import queries, row_rules
from .duck import FILE_COLUMN, STEP_SOURCE_COLUMNS, arrow_numpy, source_type

__all__ = ["SparkBackend", "literal_path", "local_session"]


def local_session(master: str = "local[*]") -> Any:
    """A local SparkSession that listens on the loopback interface only, without the web UI.

    Shuffles use as many partitions as the session has cores (``local[N]``; Spark's default of
    200 is for clusters): the reductions shuffle one row per step, not the data."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession

    cores = master.removeprefix("local[").removesuffix("]").split(",")[0] if master.startswith("local[") else "1"
    if cores == "*":
        n = os.cpu_count() or 1
    else:
        n = int(cores) if cores.isdigit() else 1
    return (SparkSession.builder.master(master).appName("mfu_toolkit")
            .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
            .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(max(n, 1)))
            .getOrCreate())


def _session(spark: Any) -> Any:
    if spark is not None:
        return spark
    from pyspark.sql import SparkSession

    if os.environ.get("SPARK_REMOTE"):
        return SparkSession.builder.remote(os.environ["SPARK_REMOTE"]).getOrCreate()
    active = SparkSession.getActiveSession()
    return active if active is not None else local_session()


# Spark reads paths through Hadoop's glob (``FileSystem.globStatus``), where ``\\c`` removes the
# special meaning of the character c (see
# https://hadoop.apache.org/docs/stable/api/org/apache/hadoop/fs/FileSystem.html#globStatus-org.apache.hadoop.fs.Path-):
# every glob character and the backslash itself are escaped, so a path names one file and no
# folder is listed (a sibling named ``c:d`` in a listed folder is a URISyntaxException in Hadoop).
_HADOOP_GLOB = re.compile(r"([\\*?\[\]{}])")


def literal_path(path: Path) -> str:
    """``path`` as Spark reads it literally: each glob character escaped with a backslash."""
    return _HADOOP_GLOB.sub(r"\\\1", str(path))


def _local_file(uri: str) -> str:
    """The local path of a ``file:`` URI as Spark's ``input_file_name()`` gives it (percent-decoded)."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme in ("file", "") else uri


class SparkBackend:
    """Runs :mod:`.queries` as Spark SQL over ``paths`` (part files, read literally, never as globs)."""

    dialect = "spark"
    name = "spark"

    def __init__(self, paths: Sequence[Path], columns: set[str], *, spark: Any = None,
                 int_columns: set[str] = frozenset(), groups: Sequence[Sequence[Path]] | None = None) -> None:
        """``groups``: the part files split by schema (columns and types; default: one group).
        Spark's ``mergeSchema`` refuses an integer column that another part stores as double, so
        each group is read on its own, its columns cast to one type (BIGINT where every part
        stores integers, ``int_columns``, else DOUBLE) and the groups unioned by name."""
        from pyspark.sql import functions as F

        self.spark = _session(spark)
        self.columns, self.int_columns = set(columns), set(int_columns)
        raw = None
        for group in groups or [paths]:
            df = self.spark.read.option("mergeSchema", "true").parquet(*[literal_path(p) for p in group])
            have = set(df.columns)
            df = df.select(*[F.col(f"`{c}`").cast(self._raw_type(c)).alias(c)
                             for c in STEP_SOURCE_COLUMNS if c in columns and c in have],
                           F.input_file_name().alias(FILE_COLUMN))
            raw = df if raw is None else raw.unionByName(df, allowMissingColumns=True)
        self.raw = raw
        cols = []
        for c in STEP_SOURCE_COLUMNS:
            kind = {"BIGINT": "bigint", "VARCHAR": "string"}.get(source_type(c), "double")
            if c in columns:
                cols.append(F.col(f"`{c}`").try_cast(kind).alias(c))  # see DuckBackend._view
            else:
                fill = {"attempt": 0, "rank": -1}.get(c)
                cols.append(F.lit(fill).cast(kind).alias(c))
        self._cols = cols
        self.steps = raw.select(*cols)

    def _raw_type(self, column: str) -> str:
        if column == "flag":
            return "string"
        return "bigint" if column in self.int_columns else "double"

    def check_rows(self) -> dict[tuple[str, int], tuple[int, float, float]]:
        """Per (part file, rule code): rows, smallest and largest step (see DuckBackend.check_rows)."""
        self.raw.createOrReplaceTempView("mfu_raw_steps")
        sql = queries.transpile(row_rules.validation_sql("mfu_raw_steps", FILE_COLUMN, self.columns, self.int_columns),
                                self.dialect)
        got = self.spark.sql(sql).toArrow()
        cols = {c: arrow_numpy(got.column(c)) for c in got.column_names}
        return {(_local_file(str(f)), int(c)): (int(n), float(lo), float(hi))
                for f, c, n, lo, hi in zip(cols["f"], cols["code"], cols["n"], cols["step_min"], cols["step_max"],
                                           strict=True)}

    def keep_valid(self, step_range: tuple[int, int] | None, any_bad: bool) -> None:
        """Read only the rows that break no rule (when ``any_bad``); Spark needs no step range."""
        if any_bad:
            from pyspark.sql import functions as F

            self.steps = self.raw.where(F.expr(queries.transpile(row_rules.keep_sql(self.columns, self.int_columns),
                                                                 self.dialect))).select(*self._cols)

    def step_batches(self) -> list[str]:
        return ["TRUE"]  # Spark distributes one query itself

    def run(self, sql: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, np.ndarray]:
        import pyarrow as pa

        self.steps.createOrReplaceTempView("steps")
        for name, df in tables.items():
            self.spark.createDataFrame(pa.Table.from_pandas(df, preserve_index=False)).createOrReplaceTempView(name)
        t = self.spark.sql(sql).toArrow()
        return {c: arrow_numpy(t.column(c)) for c in t.column_names}
