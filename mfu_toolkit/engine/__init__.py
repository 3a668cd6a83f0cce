"""Engines that reduce per-rank step rows to what the analyses need, without holding the rows.

- ``pandas``: the Run's rows in memory; the analyses reduce them themselves (the reference path).
- ``duckdb``: embedded and out of core over a Parquet dataset (:mod:`.duck`); the default past
  a size threshold.
- ``spark``: the same queries on a Spark cluster or a local session (:mod:`.spark`).

The queries are written once (:mod:`.queries`, DuckDB's SQL; sqlglot transpiles them for Spark);
:class:`~.reductions.Reductions` holds the per-step result and computes per-rank statistics on
demand. A Run read out of core carries them in ``run.reductions``; the breakdown and the straggler
scores consume them and agree with the in-memory path to float rounding.
"""

from __future__ import annotations

from .reductions import JOB_COLUMNS, RankStats, Reductions, compute_reductions

__all__ = ["ENGINES", "JOB_COLUMNS", "RankStats", "Reductions", "compute_reductions", "check_engine"]

ENGINES: tuple[str, ...] = ("auto", "pandas", "duckdb", "spark")


def check_engine(engine: object) -> str:
    """``engine`` if it names an engine; else a ValueError naming the allowed values."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINES))}; got {engine!r}")
    return str(engine)
