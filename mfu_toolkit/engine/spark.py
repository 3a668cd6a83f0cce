"""Spark: the same reduction queries (transpiled from DuckDB's SQL by sqlglot) on a cluster.

A team points it at its cluster by passing its own session (``spark=``, e.g. one built with
``SparkSession.builder.remote("sc://host:15002")`` or by ``spark-submit``) or by setting
``SPARK_REMOTE`` (Spark Connect); otherwise a local session is started (``local[*]``, bound to
the loopback interface).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .duck import STEP_SOURCE_COLUMNS, _numpy, source_type

__all__ = ["SparkBackend", "local_session"]


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


class SparkBackend:
    """Runs :mod:`.queries` as Spark SQL over ``paths`` (part files or folders Spark can read)."""

    dialect = "spark"
    name = "spark"

    def __init__(self, paths: Sequence[Path], columns: set[str], *, spark: Any = None) -> None:
        from pyspark.sql import functions as F

        self.spark = _session(spark)
        df = self.spark.read.option("mergeSchema", "true").parquet(*[str(p) for p in paths])
        cols = []
        for c in STEP_SOURCE_COLUMNS:
            kind = {"BIGINT": "bigint", "VARCHAR": "string"}.get(source_type(c), "double")
            if c in columns:
                cols.append(F.col(f"`{c}`").cast(kind).alias(c))
            else:
                fill = {"attempt": 0, "rank": -1}.get(c)
                cols.append(F.lit(fill).cast(kind).alias(c))
        self.steps = df.select(*cols)

    def step_batches(self) -> list[str]:
        return ["TRUE"]  # Spark distributes one query itself

    def run(self, sql: str, tables: Mapping[str, pd.DataFrame]) -> dict[str, np.ndarray]:
        import pyarrow as pa

        self.steps.createOrReplaceTempView("steps")
        for name, df in tables.items():
            self.spark.createDataFrame(pa.Table.from_pandas(df, preserve_index=False)).createOrReplaceTempView(name)
        t = self.spark.sql(sql).toArrow()
        return {c: _numpy(t.column(c)) for c in t.column_names}
