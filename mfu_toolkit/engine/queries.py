"""The reduction queries, written once in DuckDB's SQL and transpiled for Spark with sqlglot.

Every query reads a relation ``steps`` with the Run's step columns (``attempt, step, rank,
start_s, end_s, data_wait_s, compute_s, samples, tokens``, and ``flag``, the text a loader set on
a row; an engine supplies NULL for optional columns a dataset lacks) and small side tables the caller
registers (``useful``: the useful
job-level steps with their median busy time; ``grid``: per-rank value ranges to histogram;
``worst``: ranks to set apart, with their position; ``rank_bins``: each rank's heatmap row).

A rank's busy time and data wait follow ``analysis.accounting.busy_and_wait``: the wait is
``data_wait_s`` with NULL/NaN as 0; busy is ``compute_s`` where logged (not NULL/NaN), else
``max(end_s − start_s − wait, 0)``.
"""

from __future__ import annotations

from functools import lru_cache

__all__ = ["range_clauses", "DIALECTS", "ROWS", "JOB_STEPS", "RANK_HISTOGRAM", "RANK_MEDIANS", "RANK_REFINE",
           "RANK_VALUES", "WORST_RANKS", "RANK_HEATMAP", "render", "transpile"]

DIALECTS = ("duckdb", "spark")

# Each rank-step row with its wait and busy time; {where} restricts the scan (a step range).
ROWS = """
SELECT attempt, step, rank, start_s, end_s, samples, tokens, wait,
       CASE WHEN compute_s IS NULL OR isnan(compute_s)
            THEN greatest(end_s - start_s - wait, CAST(0.0 AS DOUBLE)) ELSE compute_s END AS busy
FROM (SELECT attempt, step, rank, start_s, end_s, samples, tokens, compute_s,
             CASE WHEN data_wait_s IS NULL OR isnan(data_wait_s)
                  THEN CAST(0.0 AS DOUBLE) ELSE data_wait_s END AS wait
      FROM steps WHERE {where}) AS base
"""

# One row per (attempt, step): the span over ranks, exact medians, the slowest rank. Ties of the
# slowest rank go to the earliest start, then the lowest rank (the Run's row order);
# slowest_by_rank breaks ties by the lowest rank alone (as an argmax over sorted ranks).
# The distinct ranks per step are counted in their own grouping and joined: a count(DISTINCT) in
# the main aggregate makes Spark group by (attempt, step, rank) first, with a median buffer per
# rank-step (10M rows: 326 s against 50 s on 2 cores), and DuckDB is faster this way too.
# ``flag``: the distinct non-empty flags of the step's rows joined with "," (NULL: none), read
# from the flagged rows alone and in their own grouping for the same reason; the order of the
# joined values is the engine's (Reductions splits and sorts them).
JOB_STEPS = """
SELECT j.*, d.n_distinct, f.flag
FROM (SELECT attempt, step, min(start_s) AS start_s, max(end_s) AS end_s, count(*) AS n_ranks,
             median(busy) AS busy_median_s, max(busy) AS busy_max_s, min(busy) AS busy_min_s,
             arg_max(rank, struct_pack(b := busy, s := -start_s, r := -rank)) AS slowest_rank,
             arg_max(rank, struct_pack(b := busy, r := -rank)) FILTER (WHERE rank >= 0) AS slowest_by_rank,
             count(*) FILTER (WHERE rank >= 0) AS n_rank_rows,
             count(*) FILTER (WHERE end_s - start_s > 0) AS n_timed,
             median(wait) AS data_wait_s, max(samples) AS samples, max(tokens) AS tokens,
             min(rank) AS rank_min, max(rank) AS rank_max
      FROM ({rows}) AS r
      GROUP BY attempt, step) AS j
JOIN (SELECT attempt, step, count(*) AS n_distinct
      FROM (SELECT attempt, step, rank FROM ({rows}) AS q GROUP BY attempt, step, rank) AS dr
      GROUP BY attempt, step) AS d
  ON j.attempt = d.attempt AND j.step = d.step
LEFT JOIN (SELECT attempt, step, string_agg(flag, ',') AS flag
           FROM (SELECT attempt, step, flag FROM steps
                 WHERE ({where}) AND flag IS NOT NULL AND flag <> ''
                 GROUP BY attempt, step, flag) AS fr
           GROUP BY attempt, step) AS f
  ON j.attempt = f.attempt AND j.step = f.step
"""

# Per rank and value bin over the useful steps: counts, the bin's min and max, and the rank-steps
# above (1 + threshold) x the step's median busy time.
RANK_HISTOGRAM = """
SELECT r.rank AS rank,
       least(greatest(CAST(floor((r.busy - CAST({lo} AS DOUBLE)) * CAST({inv} AS DOUBLE)) AS BIGINT),
                      CAST(0 AS BIGINT)), CAST({last_bin} AS BIGINT)) AS bin,
       count(*) AS n, min(r.busy) AS lo, max(r.busy) AS hi,
       sum(CASE WHEN r.busy > CAST({factor} AS DOUBLE) * u.busy_median_s THEN 1 ELSE 0 END) AS slow
FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
WHERE r.rank >= 0
GROUP BY r.rank, bin
"""

# Per rank over the useful steps: rows, rows above (1 + threshold) x the step's median busy time,
# and the exact median busy time, by the engine's own median (its values held per rank: the
# caller bounds the ranks of one query with {where}).
RANK_MEDIANS = """
SELECT r.rank AS rank, count(*) AS n, median(r.busy) AS median_s,
       sum(CASE WHEN r.busy > CAST({factor} AS DOUBLE) * u.busy_median_s THEN 1 ELSE 0 END) AS slow
FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
WHERE r.rank >= 0
GROUP BY r.rank
"""

# The same histogram within each (rank, target) value range of ``grid``, to find one order
# statistic's bin at finer resolution.
RANK_REFINE = """
SELECT r.rank AS rank, g.tid AS tid,
       least(CAST(floor((r.busy - g.lo) * g.inv) AS BIGINT), CAST({last_bin} AS BIGINT)) AS bin,
       count(*) AS n, min(r.busy) AS lo, max(r.busy) AS hi
FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
     JOIN grid AS g ON r.rank = g.rank
WHERE r.rank >= 0 AND r.busy >= g.lo AND r.busy <= g.hi
GROUP BY r.rank, g.tid, bin
"""

# The values themselves within each (rank, target) range, once few enough are left.
RANK_VALUES = """
SELECT r.rank AS rank, g.tid AS tid, r.busy AS busy
FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
     JOIN grid AS g ON r.rank = g.rank
WHERE r.rank >= 0 AND r.busy >= g.lo AND r.busy <= g.hi
"""

# Per useful step, the max busy time of each rank of ``worst`` (``pos`` 0, 1, ...) and of all the
# other ranks together (``pos`` = -1): what the step's max becomes once some of them are removed.
WORST_RANKS = """
SELECT r.attempt AS attempt, r.step AS step, coalesce(w.pos, CAST(-1 AS BIGINT)) AS pos, max(r.busy) AS busy_max_s
FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
     LEFT JOIN worst AS w ON r.rank = w.rank
WHERE r.rank >= 0
GROUP BY r.attempt, r.step, coalesce(w.pos, CAST(-1 AS BIGINT))
"""

# The per-rank heatmap binned by the engine: each rank's busy time relative to the step's median
# (``useful.busy_median_s``), averaged (and maxed) over the ranks of a ``rank_bins.rbin`` within
# each step, then over the steps of a ``useful.sbin`` (the in-memory figure's order of reduction).
RANK_HEATMAP = """
SELECT rbin, sbin, avg(v_mean) AS v_mean, max(v_max) AS v_max
FROM (SELECT g.rbin AS rbin, u.sbin AS sbin, u.pos AS pos,
             avg(r.busy / u.busy_median_s - CAST(1.0 AS DOUBLE)) AS v_mean,
             max(r.busy / u.busy_median_s - CAST(1.0 AS DOUBLE)) AS v_max
      FROM ({rows}) AS r JOIN useful AS u ON r.attempt = u.attempt AND r.step = u.step
           JOIN rank_bins AS g ON r.rank = g.rank
      WHERE r.rank >= 0 AND u.busy_median_s > 0 AND NOT isnan(r.busy)
      GROUP BY g.rbin, u.sbin, u.pos) AS per_step
GROUP BY rbin, sbin
"""


def range_clauses(column: str, lo: int, hi: int, n: int) -> list[str]:
    """WHERE clauses splitting the integers ``lo..hi`` of ``column`` into at most ``n`` ranges of
    about equal width, in exact integer arithmetic; the first range has no lower bound and the
    last no upper one, so every row falls in exactly one whatever its value."""
    lo, hi, n = int(lo), int(hi), max(1, int(n))
    width = hi - lo + 1
    edges = sorted({lo + width * i // n for i in range(1, n)} - {lo})
    if not edges:
        return ["TRUE"]
    out = [f"{column} < {edges[0]}"]
    out += [f"{column} >= {a} AND {column} < {b}" for a, b in zip(edges[:-1], edges[1:], strict=True)]
    return [*out, f"{column} >= {edges[-1]}"]


def render(template: str, dialect: str = "duckdb", *, where: str = "TRUE", **params: object) -> str:
    """The query text for ``dialect``: the template filled in, transpiled when not DuckDB's.

    ``where`` restricts the scan (a step range) of ``{rows}`` and of ``{where}`` in a template;
    parameters are numbers written with ``repr`` (which reads back as the same double).
    """
    if dialect not in DIALECTS:
        raise ValueError(f"dialect must be one of {', '.join(DIALECTS)}; got {dialect!r}")
    rows = ROWS.format(where=where)
    text = template.format(rows=rows, where=where, **{k: repr(v) for k, v in params.items()})
    return text if dialect == "duckdb" else _transpile(text, dialect)


def transpile(text: str, dialect: str) -> str:
    """DuckDB's SQL ``text`` (a query or an expression) in ``dialect``."""
    return text if dialect == "duckdb" else _transpile(text, dialect)


@lru_cache(maxsize=64)
def _transpile(text: str, dialect: str) -> str:
    import sqlglot

    return sqlglot.transpile(text, read="duckdb", write=dialect)[0]
