"""Per-rank step logs at scale: a Parquet dataset (a folder of part files, as Spark and
warehouse exports write them) or one large Parquet file with the Run's step columns.

Columns: ``step``, ``start_s``, ``end_s`` (seconds), and where known ``attempt`` (0 when absent),
``rank`` (-1 when absent), ``data_wait_s``, ``compute_s``, ``samples``, ``tokens``, and ``flag``
(text a loader set on a step row, e.g. MaxText's ``compile``, ``async_dispatch``, ``outlier``;
empty or null: none; the breakdown keeps flagged steps out of the steady-state window on every
engine); other columns are ignored. Part files are every ``*.parquet`` below the folder whose name does not start with
``_`` or ``.`` (Spark's ``_SUCCESS`` and metadata files); Hive-style folders (``attempt=0/``) are
read as plain folders, so the column must be in the files. A saved Run named ``_mfu_run.parquet``
beside the parts (``mfu simulate --dataset`` writes one) supplies the events and meta.

Engines (``engine=``): ``pandas`` reads the rows into memory; ``duckdb`` and ``spark`` reduce them
out of core (:mod:`mfu_toolkit.engine`) and the Run carries ``reductions`` instead of rows;
``auto`` (default) is ``pandas`` up to ``threshold_rows`` rows and ``duckdb`` beyond.

Bad input: a part file whose footer cannot be read, or whose columns lack a required one or hold
non-numbers, is skipped and counted (file named, its rows from its footer) and the rest is read;
``strict=True`` raises on it. A row that breaks a rule of ``mfu_toolkit.engine.row_rules`` (a
null, fractional or negative step, a NaN or infinite time, an end before its start, a negative
duration, ...) is left out and counted under the rule's reason with its part file named, alike on
every engine (``strict=True`` raises on the first). Step ranges come from the rows, never from
footer statistics alone; part paths are read literally (never as glob patterns). Steps that lack some ranks are
counted in the report's notes; rows that repeat an ``(attempt, step, rank)`` are a SchemaError on every
engine (the Run's schema check in memory), and a part whose footer reads but whose data does not is a
LoadError naming it on every engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ...engine import check_engine, compute_reductions, row_rules
from ...run import LoadError, SchemaError, read_run
from ..base import Parsed, loader_for
from ..reading import Reader

NAME = "parquet_dataset"
CORRUPT_PART = "corrupt part file (unreadable Parquet footer)"
OTHER_SCHEMA = "part file with a different schema"
SIDECAR = "_mfu_run.parquet"
_MAGIC = b"PAR1"
_REQUIRED = ("step", "start_s", "end_s")
_OPTIONAL = ("attempt", "rank", "data_wait_s", "compute_s", "samples", "tokens")
_TEXT = ("flag",)  # optional text columns
_MAX_FILES = 200_000
_NO_VALID_ROWS = "no step row of the dataset keeps the row rules (each part's bad rows are in the report)"
_META_FIELDS = ("name", "accelerator", "dtype", "n_accelerators", "peak_flops_per_accelerator", "peak_sparse",
                "peak_source", "model_flops_per_sample", "model_flops_per_token", "model_flops_per_step",
                "hardware_flops_per_step", "model_flops_source", "global_batch", "seq_len", "peak_per")


@dataclass(frozen=True)
class Options:
    """What the dataset loader accepts besides the RunMeta keywords.

    - ``engine``: ``"auto"``, ``"pandas"``, ``"duckdb"`` or ``"spark"`` (see the module docstring);
    - ``threshold_rows``: with ``"auto"``, the most rows read into memory (20M: about 1.5 GB);
    - ``spark``: a SparkSession to run on (else ``SPARK_REMOTE``, else a local session);
    - ``batch_rows``: rows per DuckDB query (its exact medians hold one batch's values);
    - ``batch_steps``: step numbers per DuckDB query at most (its groups' state is held at once);
    - ``memory_limit``: what the whole process may hold with DuckDB (which spills beyond its
      share); a run whose steps cannot be analysed within it is refused with the figures;
    - ``progress``: a progress bar; ``None`` shows one out of core.
    """

    engine: str = "auto"
    threshold_rows: int = 20_000_000
    spark: Any = None
    batch_rows: int = 25_000_000
    batch_steps: int = 1_000_000
    memory_limit: str | None = "3GB"
    progress: bool | None = None

    def __post_init__(self) -> None:
        check_engine(self.engine)
        for name in ("threshold_rows", "batch_rows", "batch_steps"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {v!r}")
        if self.memory_limit is not None:
            from ...engine.duck import memory_bytes

            memory_bytes(self.memory_limit)  # a ValueError naming the value


def _part_files(path: Path) -> list[Path]:
    """Every part file, as an absolute path (read literally by every engine)."""
    path = path.absolute()
    if path.is_file():
        return [path]
    out = []
    for p in sorted(path.rglob("*.parquet")):
        rel = p.relative_to(path).parts
        if any(part.startswith(("_", ".")) for part in rel):
            continue
        out.append(p)
        if len(out) > _MAX_FILES:
            raise LoadError(f"more than {_MAX_FILES:,} part files; point at a sub-folder", path=path)
    return out


def _columns_of(path: Path) -> dict[str, str] | None:
    """Column name → Arrow type of a Parquet file's footer (None when the footer is unreadable)."""
    import pyarrow.parquet as pq

    try:
        with open(path, "rb") as fh:  # an open file: a name with a colon is never read as a URI
            return {f.name: str(f.type) for f in pq.read_schema(fh)}
    except Exception:  # any damage to the footer: the caller reports the file
        return None


def sniff(path: Path, head: bytes) -> float:
    """A folder: 0.9 when every sampled part file has the step columns, 0.8 when at least half do
    (the others are reported file by file when it is read), else 0; the sample is up to
    :data:`_SNIFF_PARTS` part files spread evenly over the sorted names, first and last included,
    so one foreign file, wherever it sorts, neither decides nor hides the folder. A Parquet file:
    0.9 with the step columns (not a saved Run) and more than ``threshold_rows`` rows;
    ``format="parquet_dataset"`` reads any."""
    path = Path(path)
    if path.is_file() and not head.startswith(_MAGIC):
        return 0.0
    files = [path] if path.is_file() else _sample_parts(path)
    if not files:
        return 0.0
    fit = sum(1 for f in files if (c := _columns_of(f)) is not None and set(_REQUIRED) <= set(c))
    if fit == 0 or 2 * fit < len(files):
        return 0.0
    if path.is_file():  # a single file: only past the in-memory threshold (the table loader reads the rest)
        import pyarrow.parquet as pq

        with open(path, "rb") as fh:
            md = pq.read_metadata(fh)
        if b"mfu_toolkit.meta" in (md.metadata or {}) or md.num_rows <= Options().threshold_rows:
            return 0.0
    return 0.9 if fit == len(files) else 0.8


_SNIFF_PARTS = 64  # part files whose footers detection reads at most


def _sample_parts(path: Path, n: int = _SNIFF_PARTS) -> list[Path]:
    """Up to ``n`` part files of a folder, evenly spread over the sorted names (first and last included)."""
    parts = [p for p in sorted(path.rglob("*.parquet"))
             if not any(part.startswith(("_", ".")) for part in p.relative_to(path).parts)]
    if len(parts) <= n:
        return parts
    return [parts[round(i * (len(parts) - 1) / (n - 1))] for i in range(n)]


def _is_number(arrow_type: str) -> bool:
    return arrow_type.startswith(("int", "uint", "double", "float", "halffloat", "decimal"))


def _is_text(arrow_type: str) -> bool:
    """Text, dictionary-encoded text, or a column of nulls only (Arrow's ``null`` type)."""
    return (arrow_type in ("string", "large_string", "string_view", "null")
            or arrow_type.startswith(("dictionary<values=string,", "dictionary<values=large_string,")))


@dataclass
class _Parts:
    files: list[Path]
    columns: set[str]
    rows: int
    file_rows: dict[Path, int]
    int_columns: set[str]  # stored as integers in every part (row tests no integer can fail are not run)
    groups: list[list[Path]]  # the parts split by schema (columns and their types)


def _check_parts(reader: Reader, files: list[Path]) -> _Parts:
    """The readable part files with the step columns; the others reported (file, rows, why)."""
    import pyarrow.parquet as pq

    root = (reader.path if reader.path.is_dir() else reader.path.parent).absolute()
    good, cols, rows, file_rows, not_int, groups = [], set(), 0, {}, set(), {}
    for p in files:
        name = p.relative_to(root).as_posix()
        try:
            with open(p, "rb") as fh:  # an open file: a name with a colon is never read as a URI
                md = pq.read_metadata(fh)
        except Exception as exc:  # a damaged footer, or not Parquet at all
            reader.bad(CORRUPT_PART, example=f"{name}: rows unknown ({type(exc).__name__})")
            reader.note(f"{name}: corrupt part file left out (footer unreadable: {str(exc)[:120]}); "
                        "its rows are unknown")
            continue
        schema = {f.name: str(f.type) for f in md.schema.to_arrow_schema()}
        why = _schema_problem(schema)
        if why:
            reader.bad(OTHER_SCHEMA, example=f"{name}: {md.num_rows:,} rows; {why}")
            reader.note(f"{name}: {md.num_rows:,} rows left out: {why}")
            continue
        good.append(p)
        cols |= {c for c in schema if c in _REQUIRED or c in _OPTIONAL or c in _TEXT}
        rows += md.num_rows
        file_rows[p] = md.num_rows
        not_int |= {c for c, t in schema.items() if t not in row_rules.INTEGER_TYPES}
        groups.setdefault(tuple(sorted(schema.items())), []).append(p)
    reader.report.lines_read = rows
    return _Parts(good, cols, rows, file_rows, cols - not_int, list(groups.values()))


def _schema_problem(schema: dict[str, str]) -> str:
    missing = [c for c in _REQUIRED if c not in schema]
    if missing:
        return f"missing column(s) {missing} (has {sorted(schema)[:12]})"
    wrong = [f"{c}: {schema[c]}" for c in (*_REQUIRED, *_OPTIONAL) if c in schema and not _is_number(schema[c])]
    if wrong:
        return f"non-numeric column(s) {wrong}; expected numbers"
    wrong = [f"{c}: {schema[c]}" for c in _TEXT if c in schema and not _is_text(schema[c])]
    return f"column(s) {wrong} not text; expected strings (empty: no flag)" if wrong else ""


def _sidecar(reader: Reader, root: Path, out: Parsed) -> None:
    """Events, tables and meta from a saved Run beside the parts (``_mfu_run.parquet``)."""
    side = root / SIDECAR
    if not side.is_file():
        return
    saved = read_run(side)
    out.events = saved.events
    out.tables = dict(saved.tables)
    m = saved.meta
    out.meta.update({k: getattr(m, k) for k in _META_FIELDS if getattr(m, k) is not None})
    out.extra.update(m.extra)
    out.timing, out.time_unit = m.timing, m.time_unit
    reader.note(f"events and meta read from {SIDECAR}")


def _read_rows(reader: Reader, parts: _Parts) -> Any:
    """Every valid row of the good part files, in memory (the ``pandas`` engine); the rows that
    break a row rule are counted per part file, as the out-of-core engines count them."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    keep = [c for c in (*_REQUIRED, *_OPTIONAL, *_TEXT) if c in parts.columns]
    tables, counts = [], {}
    for p in parts.files:
        try:
            with open(p, "rb") as fh:  # an open file: pyarrow never reads a name with a colon as a URI
                pf = pq.ParquetFile(fh)
                t = pf.read(columns=[c for c in keep if c in pf.schema_arrow.names])
        except MemoryError:
            raise
        except Exception as exc:  # damage past the footer: a page or a column chunk
            _refuse_damaged(reader, p, exc)
        code = row_rules.rule_codes(_rule_table(t), parts.columns, parts.int_columns)
        for c, n in zip(*np.unique(code[code > 0], return_counts=True), strict=True):
            counts[(p, int(c))] = int(n)
        tables.append(t.filter(pa.array(code == 0)) if (code > 0).any() else t)
    _count_bad(reader, parts, counts)
    if not sum(t.num_rows for t in tables):
        reader.fail(_NO_VALID_ROWS)
    table = pa.concat_tables(_unify(tables), promote_options="permissive") if tables else None
    return table.to_pandas() if table is not None else None


def _unify(tables: list[Any]) -> list[Any]:
    """The parts' tables with each numeric column that some store as integers and others as
    floating point cast to double unsafely: an int64 past 2**53 rounds to the nearest double, as the
    engines' CAST does (Arrow's safe promotion refused it, and its union would fail)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kinds: dict[str, set[bool]] = {}
    for t in tables:
        for f in t.schema:
            if pa.types.is_integer(f.type) or pa.types.is_floating(f.type) or pa.types.is_decimal(f.type):
                kinds.setdefault(f.name, set()).add(pa.types.is_integer(f.type))
    mixed = {c for c, k in kinds.items() if len(k) > 1}
    if not mixed:
        return tables
    out = []
    for t in tables:
        for c in mixed & set(t.column_names):
            t = t.set_column(t.schema.get_field_index(c), c, pc.cast(t.column(c), pa.float64(), safe=False))
        out.append(t)
    return out


def _refuse_damaged(reader: Reader, part: Path, exc: BaseException) -> None:
    """Refuse the dataset: ``part`` has a readable footer but its data cannot be read (every
    engine refuses alike, naming the part; its row count is known, its rows are not)."""
    root = (reader.path if reader.path.is_dir() else reader.path.parent).absolute()
    name = part.relative_to(root).as_posix() if part != root else part.name
    why = " ".join(str(exc).split())[:200]
    reader.fail(f"part file {name} is damaged past its footer; its rows cannot be read "
                f"({type(exc).__name__}: {why})")


def _find_damaged(reader: Reader, parts: _Parts) -> None:
    """After an engine failed to read the dataset: refuse naming the first part whose data
    pyarrow cannot read either (as the ``pandas`` engine does); return when every part reads."""
    import pyarrow.parquet as pq

    keep = [c for c in (*_REQUIRED, *_OPTIONAL, *_TEXT) if c in parts.columns]
    for p in parts.files:
        try:
            with open(p, "rb") as fh:
                pf = pq.ParquetFile(fh)
                for i in range(pf.num_row_groups):  # one row group at a time: memory stays small
                    pf.read_row_group(i, columns=[c for c in keep if c in pf.schema_arrow.names])
        except MemoryError:
            raise
        except Exception as exc:  # the damage the engine met, as pyarrow reports it
            _refuse_damaged(reader, p, exc)


def _rule_table(t: Any) -> dict[str, np.ndarray]:
    """A part's numeric columns as floats (NULL: NaN) with their NULL masks, for the row rules; a
    column the part lacks is all NULL (the engines read the parts' union by name)."""
    import pyarrow.compute as pc

    out: dict[str, np.ndarray] = {}
    for c in (*_REQUIRED, *_OPTIONAL):
        if c in t.column_names:
            col = t.column(c)
            out[f"null:{c}"] = col.is_null().to_numpy(zero_copy_only=False)
            # unsafe: an int64 past 2**53 rounds to the nearest double, as the engines' CAST does
            out[c] = pc.cast(col, "float64", safe=False).to_numpy(zero_copy_only=False)
        else:
            out[f"null:{c}"] = np.ones(t.num_rows, bool)
            out[c] = np.full(t.num_rows, np.nan)
    return out


def _count_bad(reader: Reader, parts: _Parts, counts: dict[tuple[Path, int], int]) -> None:
    """Count the rows each rule left out, per part file (named); ``strict`` refuses the first."""
    root = (reader.path if reader.path.is_dir() else reader.path.parent).absolute()
    for (p, code), n in sorted(counts.items(), key=lambda kv: (str(kv[0][0]), kv[0][1])):
        rule = row_rules.ROW_RULES[code - 1]
        name = p.relative_to(root).as_posix() if p != root else p.name
        reader.bad(rule.reason, field=rule.column, example=f"{name}: {n:,} row(s)", detail=rule.detail, count=n)
        reader.note(f"{name}: {n:,} row(s) left out: {rule.reason} ({rule.detail})")


def _checked_backend(reader: Reader, parts: _Parts, be: Any) -> int:
    """Apply the row rules on the engine (one scan): count the bad rows per part, take the step
    range from the valid rows, and refuse a read of anything but the listed parts. Returns the
    number of valid rows."""
    got = be.check_rows()
    by_name = {str(p): p for p in parts.files}
    seen: dict[Path, int] = {}
    counts, lo, hi, valid = {}, None, None, 0
    for (f, code), (n, s_lo, s_hi) in got.items():
        p = by_name.get(f)
        if p is None:
            reader.fail(f"the {be.name} engine read {f!r}, which is not a part file of this dataset")
        seen[p] = seen.get(p, 0) + n
        if code:
            counts[(p, code)] = n
        elif n:
            valid += n
            lo = s_lo if lo is None else min(lo, s_lo)
            hi = s_hi if hi is None else max(hi, s_hi)
    wrong = [p for p in parts.files if seen.get(p, 0) != parts.file_rows[p]]
    if wrong:
        reader.fail(f"the {be.name} engine read {seen.get(wrong[0], 0):,} rows of {wrong[0].name!r}, whose footer "
                    f"states {parts.file_rows[wrong[0]]:,}")
    _count_bad(reader, parts, counts)
    if lo is None:
        reader.fail(_NO_VALID_ROWS)
    be.keep_valid((int(lo), int(hi)), bool(counts))
    return valid


def _backend(reader: Reader, parts: _Parts, engine: str, options: Options) -> tuple[Any, int]:
    """The engine over the parts, its rows checked (see _checked_backend), and the valid rows."""
    if engine == "spark":
        from ...engine.spark import SparkBackend

        be = SparkBackend(parts.files, parts.columns, spark=options.spark, int_columns=parts.int_columns,
                          groups=parts.groups)
    else:
        from ...engine.duck import DuckBackend

        be = DuckBackend(parts.files, parts.columns, n_rows=parts.rows, batch_rows=options.batch_rows,
                         batch_steps=options.batch_steps, memory_limit=options.memory_limit,
                         int_columns=parts.int_columns)
    return be, _checked_backend(reader, parts, be)


def parse(reader: Reader, options: Options) -> Parsed:
    """The rows (``pandas``) or their reductions (``duckdb``/``spark``); see the module docstring."""
    files = _part_files(reader.path)
    if not files:
        reader.fail("no Parquet part files (*.parquet) in this folder")
    parts = _check_parts(reader, files)
    if not parts.files:
        reader.fail(f"none of the {len(files)} part file(s) is readable with the step columns {list(_REQUIRED)}")
    root = reader.path if reader.path.is_dir() else reader.path.parent
    out = Parsed(time_unit="s")
    if reader.path.is_dir():
        _sidecar(reader, root, out)
    out.extra["dataset"] = {"files": len(parts.files), "rows": parts.rows, "left_out": len(files) - len(parts.files)}
    engine = options.engine
    if engine == "auto":
        engine = "pandas" if parts.rows <= options.threshold_rows else "duckdb"
    out.extra["dataset"]["engine"] = engine
    if engine == "pandas":
        out.steps = _read_rows(reader, parts)
        return out
    progress = options.progress if options.progress is not None else True
    try:
        backend, n_valid = _backend(reader, parts, engine, options)
        red = compute_reductions(backend, n_rows=n_valid, source=reader.name, progress=progress)
    except Exception as exc:  # a part file damaged past its footer, as the engine reports it
        if isinstance(exc, (LoadError, SchemaError, MemoryError, KeyboardInterrupt)):
            raise
        _find_damaged(reader, parts)
        raise LoadError(f"the {engine} engine could not read the dataset: {str(exc).splitlines()[0][:300]}",
                        path=reader.name) from None
    _note_incomplete(reader, red)
    _check_attempts(red, out.events)
    out.reductions = red
    return out


def _check_attempts(red: Any, events: Any) -> None:
    """Attempts numbered from 0 without gaps, as the Run's schema check asks of rows in memory
    (an attempt of 2**62 in one row is refused on every engine, not only by ``pandas``)."""
    from ...run import missing_numbers

    attempts = {int(a) for a in np.unique(red.job["attempt"])}
    if hasattr(events, "columns") and "attempt" in events.columns:
        attempts |= {int(a) for a in events["attempt"].unique()}
    ordered = sorted(attempts)
    if ordered and ordered[0] == 0 and ordered[-1] != len(ordered) - 1:
        raise SchemaError(f"attempt numbers must run 0, 1, 2, ... without gaps; missing {missing_numbers(ordered)}")
    if ordered and ordered[0] != 0:
        raise SchemaError(f"attempt numbers must start at 0; the first is {ordered[0]}")


def _note_incomplete(reader: Reader, red: Any) -> None:
    bad = red.incomplete_steps()
    if not len(bad):
        return
    full = int(red.job["n_distinct"].max())
    missing = int((full - bad["n_distinct"]).clip(lower=0).sum())
    repeated = int((bad["n_ranks"] - bad["n_distinct"]).sum())
    first = ", ".join(f"attempt {a} step {s}" for a, s in zip(bad["attempt"][:3], bad["step"][:3], strict=True))
    if missing:
        reader.note(f"{int((bad['n_distinct'] < full).sum()):,} steps lack some of the {full:,} ranks "
                    f"({missing:,} rank-steps missing; first: {first}); their reductions use the ranks present")
    if repeated:  # refused as the in-memory path's schema check refuses them
        rep = bad[bad["n_ranks"] > bad["n_distinct"]]
        first = ", ".join(f"attempt {a} step {s}" for a, s in zip(rep["attempt"][:3], rep["step"][:3], strict=True))
        raise SchemaError(f"steps: (attempt, step, rank) must be unique; {repeated:,} rows repeat one already "
                          f"seen (first: {first}) in {reader.name}")


load = loader_for(NAME)
