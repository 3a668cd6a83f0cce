"""The rules a step row of a dataset must keep, written once as data and applied by every engine.

Each :class:`RowRule` names a column, a test (:data:`TESTS`) and the skip reason a row that fails
it is counted under. A row is counted under the first rule it breaks (the order of :data:`ROW_RULES`),
so every engine counts it alike: ``pandas`` evaluates the tests with numpy (:func:`rule_codes`);
DuckDB and Spark run the query :func:`validation_sql` generates from the same table (one scan: per
part file and rule, the rows and the smallest and largest valid step), and read the rows through
:func:`keep_sql` when any is bad.

The tests are those of the Run schema (``run.validate``): a step is a non-negative integer that
fits int64; ``attempt`` a non-negative integer and ``rank`` an integer >= -1 (-1: job-level);
``start_s``/``end_s`` finite with ``end_s >= start_s``; ``data_wait_s``, ``compute_s``,
``samples`` and ``tokens`` missing (NULL/NaN: not logged) or finite and >= 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..io import rules

__all__ = ["INTEGER_TYPES", "RowRule", "ROW_RULES", "TESTS", "rule_codes", "rules_for", "validation_sql", "keep_sql"]

_TWO_63 = 9223372036854775808.0  # 2**63: the first integer past int64
_MAX_DOUBLE = 1.7976931348623157e308  # above it: infinite


@dataclass(frozen=True)
class RowRule:
    """A row breaks this rule when ``test`` holds for ``column`` (or, for ``end_before_start``, for
    ``end_s`` against ``start_s``); it is counted under ``reason`` (a skip-reason constant), with
    ``detail`` saying which test it broke."""

    column: str
    test: str
    reason: str
    detail: str | None = None


BAD_ATTEMPT = "attempt is not an integer >= 0"
BAD_RANK = "rank is not an integer >= -1"
_INTEGER_REASONS = {"step": rules.BAD_STEP, "attempt": BAD_ATTEMPT, "rank": BAD_RANK}


def _integer_rules(column: str, low: int) -> list[RowRule]:
    why = _INTEGER_REASONS[column]
    return [RowRule(column, "missing", why, "missing"), RowRule(column, "not_finite", why, "NaN or infinite"),
            RowRule(column, f"below:{low}", why, f"below {low}"),
            RowRule(column, "past_int64", why, "past the int64 range"),
            RowRule(column, "fractional", why, "fractional")]


ROW_RULES: tuple[RowRule, ...] = (
    *_integer_rules("step", 0), *_integer_rules("attempt", 0), *_integer_rules("rank", -1),
    RowRule("start_s", "missing", rules.NON_FINITE_TIME, "start_s"),
    RowRule("start_s", "not_finite", rules.NON_FINITE_TIME, "start_s"),
    RowRule("end_s", "missing", rules.NON_FINITE_TIME, "end_s"),
    RowRule("end_s", "not_finite", rules.NON_FINITE_TIME, "end_s"),
    RowRule("end_s", "end_before_start", rules.END_BEFORE_START, "step"),
    *(RowRule(c, t, rules.VALUE_OUT_OF_RANGE, f"{c}: {why}")
      for c in ("data_wait_s", "compute_s", "samples", "tokens")
      for t, why in (("infinite", "infinite"), ("below:0", "negative"))),
)


# --- the tests, in SQL (DuckDB's dialect; sqlglot writes Spark's) and in numpy -----------------
def _sql_test(test: str, x: str) -> str:
    """The SQL condition of ``test`` on the DOUBLE expression ``x`` (true: the row breaks it)."""
    if test == "missing":
        return f"{x} IS NULL"
    if test == "not_finite":
        return f"(isnan({x}) OR abs({x}) > {_MAX_DOUBLE!r})"
    if test == "infinite":
        return f"(NOT isnan({x}) AND abs({x}) > {_MAX_DOUBLE!r})"
    if test.startswith("below:"):
        return f"{x} < {float(test.split(':')[1])!r}"
    if test == "past_int64":
        return f"{x} >= {_TWO_63!r}"
    if test == "fractional":
        return f"{x} % 1.0 <> 0.0"
    raise ValueError(f"unknown row test {test!r}")


def _np_test(test: str, x: np.ndarray) -> np.ndarray:
    """``test`` on a float array whose NULLs are NaN, with ``null`` the mask of NULLs (see rule_codes)."""
    with np.errstate(invalid="ignore"):
        if test == "infinite":
            return np.isinf(x)
        if test.startswith("below:"):
            return x < float(test.split(":")[1])
        if test == "past_int64":
            return x >= _TWO_63
        if test == "fractional":
            return np.mod(x, 1.0) != 0.0
    raise ValueError(f"unknown row test {test!r}")


TESTS: tuple[str, ...] = ("missing", "not_finite", "infinite", "below:<n>", "past_int64", "fractional",
                          "end_before_start")


# Tests no value of an integer column can pass (int8 ... int64, uint8 ... uint32: no NaN, no
# fraction, nothing past int64): left out of the check where every part stores the column so.
_NEVER_ON_INTEGERS = ("not_finite", "past_int64", "fractional")
INTEGER_TYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32")


def rules_for(columns: set[str], int_columns: set[str] = frozenset()) -> list[tuple[int, RowRule]]:
    """The rules (with their code: position in ROW_RULES + 1) that apply to a dataset with ``columns``,
    of which ``int_columns`` hold integers (:data:`INTEGER_TYPES`) in every part."""
    return [(i + 1, r) for i, r in enumerate(ROW_RULES)
            if r.column in columns and (r.test != "end_before_start" or "start_s" in columns)
            and not (r.column in int_columns and r.test in _NEVER_ON_INTEGERS)]


def _sql_condition(rule: RowRule) -> str:
    x = f'CAST("{rule.column}" AS DOUBLE)'
    if rule.test == "end_before_start":
        return 'CAST("end_s" AS DOUBLE) < CAST("start_s" AS DOUBLE)'
    return _sql_test(rule.test, x)


def code_sql(columns: set[str], int_columns: set[str] = frozenset()) -> str:
    """A SQL expression: the code of the first rule a row breaks (0: none), over the raw columns."""
    arms = " ".join(f"WHEN {_sql_condition(r)} THEN {code}" for code, r in rules_for(columns, int_columns))
    return f"CASE {arms} ELSE 0 END" if arms else "0"


def validation_sql(source: str, file_column: str, columns: set[str], int_columns: set[str] = frozenset()) -> str:
    """Per part file and rule code: the rows, and the smallest and largest step (of the valid rows,
    code 0), in one scan of ``source`` (a relation with the raw columns and ``file_column``)."""
    return (f"SELECT f, code, count(*) AS n, min(s) AS step_min, max(s) AS step_max "
            f"FROM (SELECT {file_column} AS f, {code_sql(columns, int_columns)} AS code, "
            f'CAST("step" AS DOUBLE) AS s FROM {source}) AS v GROUP BY f, code')


def keep_sql(columns: set[str], int_columns: set[str] = frozenset()) -> str:
    """A SQL condition that keeps the rows that break no rule."""
    return f"({code_sql(columns, int_columns)}) = 0"


def rule_codes(table: Mapping[str, np.ndarray], columns: set[str], int_columns: set[str] = frozenset()) -> np.ndarray:
    """Per row, the code of the first rule it breaks (0: none), the numpy twin of :func:`code_sql`.

    ``table``: column → float array with NULLs as NaN, and ``null:<column>`` → the NULL mask
    (a column of ``columns`` a part lacks is all NULL, as the engines read it by name)."""
    n = len(next(iter(table.values()))) if table else 0
    code = np.zeros(n, np.int64)
    for c, rule in rules_for(columns, int_columns):
        x = table[rule.column]
        null = table[f"null:{rule.column}"]
        if rule.test == "missing":
            hit = null
        elif rule.test == "not_finite":
            hit = ~null & ~np.isfinite(x)
        elif rule.test == "end_before_start":
            with np.errstate(invalid="ignore"):
                hit = x < table["start_s"]
        else:
            hit = ~null & _np_test(rule.test, x)
        code = np.where((code == 0) & hit, c, code)
    return code

