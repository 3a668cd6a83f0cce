"""Seeded damage to Parquet dataset folders and recorder folders, and the checks every load must pass.

Datasets (format ``parquet_dataset``): :func:`clean_dataset` writes a small simulated run as a
few part files plus the ``_mfu_run.parquet`` sidecar; :data:`DATASET_MUTATIONS` damages a copy
in place (statistics dropped, column types changed, NULLs, NaN/inf, huge values, fractional
steps, duplicated rows or parts, truncated or damaged parts, an empty part, extra or missing
columns, foreign files, odd names). :func:`outcome` loads one folder on one engine and says what
a user would read: the answer (useful steps, MFU figures, the breakdown's seconds, the rows
skipped by reason) or the refusal (exception class and the dataset's files its message names).
:func:`differ` compares the engines' outcomes: the same answer to float rounding, or the same
refusal, else a problem; a foreign exception, an internal error, or a pandas Run that does not
read back equal from ``save_run`` is a problem on its own. ``pandas`` and ``duckdb`` run in a
forked child under the memory cap and time limit of ``_corpus.check``; Spark runs in the caller's
process on the session it is given (a local session is slow to start: one for many checks).

Recorder folders (format ``recorded``): :func:`clean_recorded` writes a small job with
:class:`mfu_toolkit.record.StepRecorder` itself, on a fake clock so the bytes are the same every
run; :func:`recorded_variants` yields damaged copies (each file through ``_corpus.mutations``,
and folder-level damage: a rank file missing or duplicated, headers missing or damaged, a second
attempt, absurd clock fields); ``_corpus.check(path, "recorded")`` loads each.

Used by ``tests/test_dataset_corpus.py`` (a small seeded corpus) and ``tools/io_corpus.py``
(``--datasets N``, ``--recorded N``).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import random
import resource
import shutil
import signal
import traceback
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from _corpus import MEMORY_CAP, TIME_LIMIT_S, mutations

ENGINES_IN_CHILD = ("pandas", "duckdb")
# A small run with every kind of step row: 4 ranks, a slow rank, warm-up, data stalls,
# checkpoints and a failure with a restart (redone steps), so every breakdown category can move.
SIM = dict(n_ranks=4, n_steps=36, step_time_s=1.0, jitter=0.05, slow_ranks=(2,), slow_factor=1.2, warmup_steps=3,
           init_s=2.0, mtbf_s=25.0, checkpoint_every=10, checkpoint_s=1.0, data_stall_prob=0.1, data_stall_s=0.3,
           restart_s=4.0, seed=7)
N_PARTS = 3
REL_TOL = 1e-9  # engines sum and take medians in other orders: figures agree to float rounding


# --- a clean dataset ------------------------------------------------------------------------------
def clean_dataset(folder: Path, *, n_parts: int = N_PARTS) -> Path:
    """``simulate(**SIM)`` written by ``write_dataset`` (steps and sidecar), its steps re-split
    into ``n_parts`` part files ``part-00000.parquet``, ... of consecutive rows."""
    from mfu_toolkit.simulate import write_dataset

    write_dataset(folder=folder, **SIM)
    whole = folder / "part-00000.parquet"
    table = _read(whole)
    whole.unlink()
    edges = [round(i * table.num_rows / n_parts) for i in range(n_parts + 1)]
    for i in range(n_parts):
        _write(table.slice(edges[i], edges[i + 1] - edges[i]), folder / f"part-{i:05d}.parquet")
    return folder


def part_files(folder: Path) -> list[Path]:
    """The folder's ``*.parquet`` files below it (the sidecar and hidden files excluded), sorted."""
    return sorted(p for p in folder.rglob("*.parquet")
                  if not any(s.startswith(("_", ".")) for s in p.relative_to(folder).parts))


class _NoPart(Exception):
    """An earlier mutation left no part file to damage."""


def _readable(path: Path) -> bool:
    import pyarrow as pa

    try:
        _read(path)
    except (pa.ArrowException, OSError):
        return False
    return True


def _pick(folder: Path, rng: random.Random) -> Path:
    """A part file an earlier mutation left readable (a truncated or foreign one is not damaged twice)."""
    parts = [p for p in part_files(folder) if _readable(p)]
    if not parts:
        raise _NoPart
    return rng.choice(parts)


# Arrow reads and writes bytes in memory here, never through a Python file object: Arrow's
# threads would call into Python, and a fork while one of them holds the interpreter's thread
# lock leaves the child hung in os.fork itself. (In memory, a name with a colon is never a URI.)
def _read(path: Path) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.read_table(pa.BufferReader(path.read_bytes()), use_threads=False)


def _write(table: Any, path: Path, **kw: Any) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, **kw)
    path.write_bytes(sink.getvalue().to_pybytes())


def _rewrite(path: Path, fn: Callable[[Any], Any], **kw: Any) -> None:
    _write(fn(_read(path)), path, **kw)


def _set(table: Any, name: str, array: Any) -> Any:
    i = table.schema.get_field_index(name)
    return table.set_column(i, name, array) if i >= 0 else table.append_column(name, array)


def _rows(table: Any, rng: random.Random, k: int = 3) -> list[int]:
    return sorted(rng.sample(range(table.num_rows), min(k, table.num_rows))) if table.num_rows else []


def _with_values(table: Any, col: str, rows: list[int], values: list[Any], type_: Any = None) -> Any:
    """``table`` with ``col`` at ``rows`` set to ``values`` (None: NULL), stored as ``type_``."""
    import pyarrow as pa

    old = table.column(col).to_pylist() if col in table.column_names else [None] * table.num_rows
    for r, v in zip(rows, values, strict=False):
        old[r] = v
    t = type_ or (table.schema.field(col).type if col in table.column_names else pa.float64())
    return _set(table, col, pa.array(old, t))


INT_COLUMNS = ("attempt", "step", "rank")
FLOAT_COLUMNS = ("start_s", "end_s", "data_wait_s", "compute_s")
TIME_COLUMNS = ("start_s", "end_s")


# --- damage to a dataset (each in place; returns the dataset's folder) ----------------------------
def _stats_one(folder: Path, rng: random.Random) -> Path:
    _rewrite(_pick(folder, rng), lambda t: t, write_statistics=False)
    return folder


def _stats_all(folder: Path, rng: random.Random) -> Path:
    for p in filter(_readable, part_files(folder)):
        _rewrite(p, lambda t: t, write_statistics=False)
    return folder


def _retype(to: str) -> Callable[[Path, random.Random], Path]:
    """One part stores a column as another type (``int64`` → double/string/uint64/int32,
    double → float32/decimal/string, either → timestamp)."""
    def mutate(folder: Path, rng: random.Random) -> Path:
        import pyarrow as pa
        import pyarrow.compute as pc

        p = _pick(folder, rng)
        t = _read(p)
        col = rng.choice(INT_COLUMNS if to in ("double", "uint64", "int32", "int-string") else FLOAT_COLUMNS)
        if col not in t.column_names:
            return folder
        c = t.column(col)
        if to == "timestamp-of-float":
            new = pa.array([round(v * 1e6) if v is not None and math.isfinite(v) and abs(v) < 1e12 else None
                            for v in c.to_pylist()], pa.timestamp("us"))
        elif to in ("int-string", "float-string"):
            new = pc.cast(c, pa.string())
        else:
            target = {"double": pa.float64(), "uint64": pa.uint64(), "int32": pa.int32(), "float32": pa.float32(),
                      "decimal": pa.decimal128(18, 6)}[to]
            new = pc.cast(c, target, safe=False)
        _write(_set(t, col, new), p)
        return folder
    return mutate


def _nulls(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    t = _read(p)
    col = rng.choice(INT_COLUMNS + FLOAT_COLUMNS)
    rows = _rows(t, rng)
    _write(_with_values(t, col, rows, [None] * len(rows)), p)
    return folder


def _nan_inf(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    t = _read(p)
    col = rng.choice(FLOAT_COLUMNS)
    rows = _rows(t, rng)
    _write(_with_values(t, col, rows, [rng.choice([math.nan, math.inf, -math.inf]) for _ in rows]), p)
    return folder


HUGE = (1e300, -1e300, 2**62, -(2**63), 2**63 - 1, 2**53 + 1)


def _huge(folder: Path, rng: random.Random) -> Path:
    import pyarrow as pa

    p = _pick(folder, rng)
    t = _read(p)
    col = rng.choice(INT_COLUMNS + FLOAT_COLUMNS)
    value = rng.choice(HUGE)
    rows = _rows(t, rng, rng.choice([1, 2]))
    is_int = pa.types.is_integer(t.schema.field(col).type)
    if is_int and isinstance(value, float):
        t = _set(t, col, t.column(col).cast(pa.float64()))
    elif not is_int:
        value = float(value)
    _write(_with_values(t, col, rows, [value] * len(rows)), p)
    return folder


def _fractional_steps(folder: Path, rng: random.Random) -> Path:
    import pyarrow as pa

    p = _pick(folder, rng)
    t = _read(p)
    t = _set(t, "step", t.column("step").cast(pa.float64()))
    rows = _rows(t, rng)
    steps = t.column("step").to_pylist()
    _write(_with_values(t, "step", rows, [steps[r] + rng.choice([0.5, 1e-9, 0.25]) for r in rows]), p)
    return folder


def _end_before_start(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    t = _read(p)
    rows = _rows(t, rng)
    start, end = t.column("start_s").to_pylist(), t.column("end_s").to_pylist()
    t = _with_values(t, "start_s", rows, [end[r] for r in rows])
    _write(_with_values(t, "end_s", rows, [start[r] for r in rows]), p)
    return folder


def _duplicate_rows(folder: Path, rng: random.Random) -> Path:
    import pyarrow as pa

    p = _pick(folder, rng)
    t = _read(p)
    rows = _rows(t, rng, rng.choice([1, 3]))
    _write(pa.concat_tables([t, t.take(rows)]), p)
    return folder


def _duplicate_part(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    shutil.copyfile(p, p.with_name(f"part-copy-{rng.randrange(1000):03d}.parquet"))
    return folder


def _truncate_part(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    data = p.read_bytes()
    p.write_bytes(data[: rng.randrange(len(data))])
    return folder


def _damage_pages(folder: Path, rng: random.Random) -> Path:
    """Bytes inside the column chunks changed; the footer (its last 8 bytes name its length) kept."""
    p = _pick(folder, rng)
    data = bytearray(p.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    body = len(data) - footer
    for _ in range(rng.choice([1, 4, 16])):
        if body > 5:
            data[rng.randrange(4, body)] = rng.randrange(256)
    p.write_bytes(bytes(data))
    return folder


def _empty_part(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    _write(_read(p).slice(0, 0), p.with_name("part-empty.parquet"))
    return folder


def _extra_column(folder: Path, rng: random.Random) -> Path:
    import pyarrow as pa

    p = _pick(folder, rng)
    t = _read(p)
    name, array = rng.choice([("host", pa.array(["h"] * t.num_rows)), ("loss", pa.array([1.5] * t.num_rows)),
                              ("samples", pa.array([8] * t.num_rows, pa.int64())),
                              ("tokens", pa.array([4096.0] * t.num_rows)),
                              ("flag", pa.array([rng.choice(["", None, "compile", "outlier"])
                                                 for _ in range(t.num_rows)],
                                                pa.string())),
                              ("flag", pa.array([1] * t.num_rows, pa.int64()))])
    _write(_set(t, name, array), p)
    return folder


def _drop_column(required: bool) -> Callable[[Path, random.Random], Path]:
    def mutate(folder: Path, rng: random.Random) -> Path:
        p = _pick(folder, rng)
        t = _read(p)
        col = rng.choice(("step", "start_s", "end_s") if required else ("attempt", "rank", "data_wait_s", "compute_s"))
        if col in t.column_names:
            _write(t.drop_columns([col]), p)
        return folder
    return mutate


def _foreign_file(folder: Path, rng: random.Random) -> Path:
    name, data = rng.choice([("part-99999.parquet", b"not parquet at all\n"), ("part-x.parquet", b""),
                             ("PAR1.parquet", b"PAR1" + bytes(40) + b"PAR1"), ("notes.txt", b"hello"),
                             ("_SUCCESS", b""), (".part-00000.parquet.crc", b"crc")])
    (folder / name).write_bytes(data)
    return folder


ODD_NAMES = ("run?1", "a*b", "p[1]", "x{a,b}", "c:d", "with space", "naïve-é", "数据", "q'uote")


def _odd_part_name(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    p.rename(p.with_name(f"part {rng.choice(ODD_NAMES)}.parquet"))
    return folder


def _odd_folder_name(folder: Path, rng: random.Random) -> Path:
    """The dataset moved into a folder with an odd name, beside decoys a glob of it would match
    (other ranks: read by mistake, they change every figure)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    name = rng.choice(ODD_NAMES)
    target = folder / name
    while target.exists():  # an odd sub-folder of that name is already there
        target = target.with_name(target.name + "+")
    target.mkdir()
    for entry in list(folder.iterdir()):
        if entry != target:
            entry.rename(target / entry.name)
    decoys = {"run?1": ["runX1"], "a*b": ["ab", "a-b"], "p[1]": ["p1"], "x{a,b}": ["xa", "xb"]}.get(name, [])
    for d in decoys:
        (folder / d).mkdir()
        for p in filter(_readable, part_files(target)):
            t = _read(p)
            if "rank" in t.column_names and pa.types.is_integer(t.schema.field("rank").type):
                _write(_set(t, "rank", pc.add(t.column("rank"), 100)), folder / d / p.name)
    return target


def _odd_subfolder(folder: Path, rng: random.Random) -> Path:
    p = _pick(folder, rng)
    sub = folder / rng.choice(ODD_NAMES)
    sub.mkdir(exist_ok=True)
    p.rename(sub / p.name)
    return folder


def _row_groups(folder: Path, rng: random.Random) -> Path:
    _rewrite(_pick(folder, rng), lambda t: t, row_group_size=rng.choice([1, 5]))
    return folder


def _all_bad(folder: Path, rng: random.Random) -> Path:
    import pyarrow.compute as pc

    for p in filter(_readable, part_files(folder)):
        _rewrite(p, lambda t: _set(t, "end_s", pc.subtract(t.column("start_s"), 1.0)))
    return folder


def _no_parts(folder: Path, rng: random.Random) -> Path:
    for p in part_files(folder):
        p.unlink()
    return folder


def _sidecar(folder: Path, rng: random.Random) -> Path:
    side = folder / "_mfu_run.parquet"
    if side.exists():
        data = side.read_bytes()
        side.write_bytes(rng.choice([b"", data[: len(data) // 2], data[:-20] + bytes(20)]))
    return folder


DATASET_MUTATIONS: dict[str, Callable[[Path, random.Random], Path]] = {
    "stats-one": _stats_one, "stats-all": _stats_all,
    "int-to-double": _retype("double"), "int-to-string": _retype("int-string"), "int-to-uint64": _retype("uint64"),
    "int-to-int32": _retype("int32"), "double-to-float32": _retype("float32"), "double-to-decimal": _retype("decimal"),
    "double-to-string": _retype("float-string"), "timestamp": _retype("timestamp-of-float"),
    "nulls": _nulls, "nan-inf": _nan_inf, "huge": _huge, "fractional-steps": _fractional_steps,
    "end-before-start": _end_before_start, "duplicate-rows": _duplicate_rows, "duplicate-part": _duplicate_part,
    "truncate-part": _truncate_part, "damage-pages": _damage_pages, "empty-part": _empty_part,
    "extra-column": _extra_column, "drop-optional": _drop_column(False), "drop-required": _drop_column(True),
    "foreign-file": _foreign_file, "odd-part-name": _odd_part_name, "odd-folder-name": _odd_folder_name,
    "odd-subfolder": _odd_subfolder, "row-groups": _row_groups, "all-bad": _all_bad, "no-parts": _no_parts,
    "sidecar-damaged": _sidecar,
}


def mutate_dataset(clean: Path, root: Path, kinds: list[str], rng: random.Random) -> Path:
    """A copy of the dataset ``clean`` under ``root`` with ``kinds`` applied in order; its folder."""
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    folder = root / "ds"
    shutil.copytree(clean, folder)
    import pyarrow as pa

    # a mutation an earlier one left nothing to apply to (no part, a column dropped or text) is skipped
    for kind in kinds:
        with contextlib.suppress(_NoPart, pa.ArrowException, KeyError):
            folder = DATASET_MUTATIONS[kind](folder, rng)
    return folder


# --- what a user reads from one load, and the comparison of engines -------------------------------
def _figures(run: Any) -> dict[str, Any]:
    """The answer: rows, useful steps, the MFU figures and the breakdown's seconds (or the
    analysis's refusal, by class, when it refuses the Run)."""
    from mfu_toolkit.analysis import breakdown, mfu_summary

    out: dict[str, Any] = {"rows": int(run.n_step_rows)}
    try:
        s = mfu_summary(run)
        b = breakdown(run)
    except ValueError as exc:  # the toolkit's refusals are ValueErrors that name the cause
        out["analysis_refused"] = type(exc).__name__
        return out
    out.update(useful_steps=int(s.useful_steps), wall_s=float(s.wall_s), goodput=float(s.goodput),
               steady_state_mfu=s.steady_state_mfu, end_to_end_mfu=s.end_to_end_mfu,
               breakdown={str(c): float(x) for c, x in zip(b["category"], b["seconds"], strict=True)})
    return out


def _round_trip(run: Any) -> str:
    """'' when ``save_run`` then ``load_run`` gives an equal Run, else what went wrong."""
    import tempfile

    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import LoadError, SchemaError, save_run

    try:
        with tempfile.TemporaryDirectory() as d:
            back = load_run(save_run(run, Path(d) / "r.parquet"))
    except (LoadError, SchemaError) as exc:
        return f"save_run/load_run refused: {type(exc).__name__}: {exc}"
    return "" if back == run else "saved Run reads back different"


def outcome(folder: Path, engine: str, *, spark: Any = None, round_trip: bool = True) -> dict[str, Any]:
    """Load ``folder`` as ``parquet_dataset`` on ``engine`` in this process; what came of it.

    ``{"kind": "ok", "answer": ..., "skipped": {reason: n}}``, ``{"kind": "refused", "cls", "msg"}``,
    or a problem: ``internal`` (a format's internal error), ``memory``, ``foreign`` (any other
    exception, with its traceback's end), ``analysis`` (the Run loads but an analysis crashes)."""
    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.base import InternalLoadError
    from mfu_toolkit.run import LoadError, SchemaError

    kw = {"spark": spark} if spark is not None else {}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(folder, format="parquet_dataset", engine=engine, progress=False, **kw)
            answer = _figures(run)
    except InternalLoadError as exc:
        return {"kind": "internal", "cls": type(exc).__name__, "msg": str(exc)}
    except (LoadError, SchemaError) as exc:
        kind = "memory" if "ran out of memory" in str(exc) else "refused"
        return {"kind": kind, "cls": type(exc).__name__, "msg": str(exc)}
    except MemoryError:
        return {"kind": "memory", "cls": "MemoryError", "msg": ""}
    except BaseException as exc:  # noqa: BLE001 - the point is to catch everything
        where = "analysis" if "run" in locals() else "foreign"
        return {"kind": where, "cls": type(exc).__name__, "msg": f"{exc} | {traceback.format_exc(limit=-3)}"}
    got = {"kind": "ok", "answer": answer, "skipped": dict(run.meta.report.skipped)}
    if round_trip and run.reductions is None:
        got["round_trip"] = _round_trip(run)
    return got


def _child(folder: Path, engine: str, out_fd: int) -> None:
    import duckdb  # noqa: F401 - loaded before the cap, as pyarrow is (see _corpus._child)
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1]}), os.devnull)
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as f:
        vm = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (vm + MEMORY_CAP, hard))
    signal.alarm(TIME_LIMIT_S)
    os.write(out_fd, json.dumps(outcome(folder, engine)).encode())


def _read_within(fd: int, seconds: float) -> str | None:
    """Everything written to pipe ``fd`` until its writer closes it; None past ``seconds``."""
    import select
    import time

    chunks, end = [], time.monotonic() + seconds
    with os.fdopen(fd, "rb", buffering=0) as f:
        while True:
            ready, _, _ = select.select([f], [], [], max(0.0, end - time.monotonic()))
            if not ready:
                return None
            chunk = f.read(65536)
            if not chunk:
                return b"".join(chunks).decode(errors="replace")
            chunks.append(chunk)


def forked_outcome(folder: Path, engine: str) -> dict[str, Any]:
    """:func:`outcome` in a forked child capped like ``_corpus.check`` (1 GiB over its baseline, 60 s)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        os.close(r)
        try:
            _child(folder, engine, w)
        finally:
            os._exit(0)
    os.close(w)
    text = _read_within(r, TIME_LIMIT_S + 30)
    if text is None:  # hung before the child's own alarm was set (e.g. in os.fork itself)
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        hang = sig == signal.SIGALRM or text is None
        return {"kind": "hang" if hang else "killed", "cls": f"signal {sig}", "msg": ""}
    try:
        return json.loads(text or "")
    except ValueError:
        return {"kind": "foreign", "cls": "no verdict", "msg": text[:500]}


def named_files(msg: str, folder: Path) -> list[str]:
    """The files of the dataset (its part files, the sidecar, anything else in it) a message names."""
    names = set()
    for p in folder.rglob("*"):
        if p.is_file():
            names |= {p.name, p.relative_to(folder).as_posix()}
    found = {n for n in names if n in msg}
    return sorted(n for n in found if not any(n != m and n in m for m in found))


def _close(a: Any, b: Any, scale: float = 0.0) -> bool:
    """Equal to float rounding: within REL_TOL of the larger value, or of ``scale`` (the wall time,
    for seconds: a category of 1e-15 s on one engine and -1e-15 s on another is one figure)."""
    if isinstance(a, float) and isinstance(b, float):
        return (a == b or (math.isnan(a) and math.isnan(b))
                or abs(a - b) <= REL_TOL * max(abs(a), abs(b), abs(scale), 1e-300))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k], scale) for k in a)
    return a == b


def _differing(a: dict[str, Any], b: dict[str, Any]) -> list[str]:
    scale = a.get("wall_s", 0.0)
    return [k for k in a.keys() | b.keys()
            if not _close(a.get(k), b.get(k), scale if k == "breakdown" else 0.0)]


def _summary(o: dict[str, Any]) -> str:
    if o["kind"] == "ok":
        a = o["answer"]
        return (f"ok rows={a['rows']} useful={a.get('useful_steps')} steady={a.get('steady_state_mfu')} "
                f"skipped={o['skipped']}")
    return f"{o['kind']} {o['cls']}: {o['msg'][:300]}"


def differ(outcomes: dict[str, dict[str, Any]], folder: Path) -> list[str]:
    """What is wrong with the engines' outcomes on one dataset: a problem on any engine, or two
    engines that disagree (answer figure by figure, skip counts by reason, refusal class and the
    files its message names). Empty: all agree and none failed."""
    problems = [f"{e}: {_summary(o)}" for e, o in outcomes.items() if o["kind"] not in ("ok", "refused")]
    problems += [f"{e}: {o['round_trip']}" for e, o in outcomes.items() if o.get("round_trip")]
    (ref_engine, ref), *others = outcomes.items()
    for engine, o in others:
        why = ""
        if o["kind"] != ref["kind"]:
            why = "one answers, the other refuses"
        elif o["kind"] == "ok":
            bad = sorted(_differing(ref["answer"], o["answer"]))
            why = f"figures differ: {bad}" if bad else ""
            if ref["skipped"] != o["skipped"]:
                why += " skipped rows differ"
        elif o["kind"] == "refused":
            if o["cls"] != ref["cls"]:
                why = "refused with another class"
            elif named_files(o["msg"], folder) != named_files(ref["msg"], folder):
                why = "refusals name other files"
        if why:
            problems.append(f"{ref_engine} vs {engine}: {why.strip()}; {ref_engine}: {_summary(ref)}; "
                            f"{engine}: {_summary(o)}")
    return problems


def check_dataset(folder: Path, *, spark: Any = None) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Every engine's outcome on ``folder`` and what :func:`differ` finds wrong. pandas and DuckDB
    run forked; with a Spark session (``spark``) all three run in this process, since a fork beside
    the session's Python threads (py4j) can hang in ``os.fork`` itself."""
    if spark is None:
        outcomes = {e: forked_outcome(folder, e) for e in ENGINES_IN_CHILD}
    else:
        outcomes = {e: outcome(folder, e) for e in ENGINES_IN_CHILD}
        outcomes["spark"] = outcome(folder, "spark", spark=spark)
    return outcomes, differ(outcomes, folder)


# --- recorder folders ------------------------------------------------------------------------------
class _Clock:
    """A clock the recorder reads instead of the machine's: ``perf_counter``/``monotonic`` read
    ``t`` (from 100 s), ``time`` a fixed epoch + ``t``; the writer sets ``t`` (the same bytes every run)."""

    EPOCH = 1_700_000_000.0

    def __init__(self) -> None:
        self.t = 100.0

    def perf_counter(self) -> float:
        return self.t

    def monotonic(self) -> float:
        return self.t

    def time(self) -> float:
        return self.EPOCH + self.t


@contextlib.contextmanager
def _fake_clock() -> Iterator[_Clock]:
    from mfu_toolkit.record import folder as folder_mod
    from mfu_toolkit.record import recorder as recorder_mod

    clock = _Clock()
    saved = folder_mod.time, recorder_mod._now
    folder_mod.time, recorder_mod._now = clock, clock.perf_counter  # type: ignore[assignment]
    try:
        yield clock
    finally:
        folder_mod.time, recorder_mod._now = saved


def clean_recorded(folder: Path, *, world_size: int = 2, n_steps: int = 12, attempt: int = 0) -> Path:
    """A job of ``world_size`` ranks recorded by ``StepRecorder`` on a fake clock: an init event,
    steps with samples and data waits (rank 1 a little slower), a checkpoint, beats, a close."""
    from mfu_toolkit.record import StepRecorder

    with _fake_clock() as clock:
        recs = [StepRecorder(folder, rank=r, n_ranks=world_size, attempt=attempt, heartbeat_s=3.0,
                             header={"host": f"node{r}", "pid": 1000 + r, "boot_id": f"boot-{r}"})
                for r in range(world_size)]
        t = clock.t
        for rec in recs:
            rec.add_event("init", t, t + 2.0, detail="model built")
        t += 2.0
        for s in range(n_steps):
            for r, rec in enumerate(recs):
                rec.begin_step(step=s, samples=8, start=t)
                rec.add_data_wait(0.05 if s % 4 == 0 else 0.0)
                clock.t = t + 1.0 + 0.1 * r  # the recorder writes a step as it ends (beats read the clock)
                rec.end_step(end=clock.t)
            t += 1.2
            if s == n_steps // 2:
                clock.t = t + 0.5
                for rec in recs:
                    rec.add_event("checkpoint_save", t, t + 0.5)
                t += 0.5
        clock.t = t
        for rec in recs:
            rec.close()
    return folder


def _edit_lines(path: Path, fn: Callable[[list[bytes]], list[bytes]]) -> None:
    path.write_bytes(b"\n".join(fn(path.read_bytes().split(b"\n"))))


def _edit_header(path: Path, **fields: Any) -> None:
    def edit(lines: list[bytes]) -> list[bytes]:
        head = json.loads(lines[0])
        for k, v in fields.items():
            if v is _DROP:
                head.pop(k, None)
            else:
                head[k] = v
        return [json.dumps(head).encode(), *lines[1:]]
    _edit_lines(path, edit)


_DROP = object()
ABSURD = (1e308, -1e308, 1e18, -5.0, 0.0, None, "soon", True)


def _folder_damage(folder: Path, rng: random.Random) -> Iterator[tuple[str, Callable[[Path], None]]]:
    """Folder-level damage, each a function of a fresh copy of the folder."""
    files = sorted(folder.glob("rank*.jsonl"))
    f = rng.choice(files).name
    yield "rank-missing", lambda d: (d / f).unlink()
    yield "rank-duplicated", lambda d: shutil.copyfile(d / f, d / f.replace("attempt000", "attempt007"))
    yield "rank-copied-as-other", lambda d: shutil.copyfile(d / files[0].name, d / files[-1].name)
    yield "header-missing", lambda d: _edit_lines(d / f, lambda ls: ls[1:])
    yield "header-damaged", lambda d: _edit_lines(d / f, lambda ls: [ls[0][: rng.randrange(len(ls[0]))], *ls[1:]])
    field = rng.choice(["rank", "world_size", "attempt", "t0_unix", "format", "version", "mono0", "heartbeat_s",
                        "boot_id", "host"])
    yield "header-field", lambda d: _edit_header(d / f, **{field: rng.choice([*ABSURD, _DROP])})
    yield "rank-past-world", lambda d: _edit_header(d / f, rank=5)
    yield "second-attempt", lambda d: clean_recorded(d, attempt=1, n_steps=rng.randrange(1, 8))
    yield "attempt-twice", lambda d: _second_copy(d, rng)
    yield "clock-absurd", lambda d: _absurd_clock(d / f, rng)
    yield "foreign-file", lambda d: (d / rng.choice(["rank00000.attempt000.json", "notes.txt", "rank1.jsonl"])
                                     ).write_bytes(b"{}\n")
    yield "empty-file", lambda d: (d / f).write_bytes(b"")


def _second_copy(folder: Path, rng: random.Random) -> None:
    """Two files of one rank both naming attempt 1 in their headers (two processes, one rank)."""
    for p in sorted(folder.glob("rank*.attempt000.jsonl")):
        shutil.copyfile(p, p.with_name(p.name.replace("attempt000", "attempt001")))
        _edit_header(p.with_name(p.name.replace("attempt000", "attempt001")), attempt=rng.choice([0, 1]))


def _absurd_clock(path: Path, rng: random.Random) -> None:
    """A clock field of one record set absurd: a step's or event's time, a beat, the close's wall."""
    def edit(lines: list[bytes]) -> list[bytes]:
        i = rng.randrange(1, max(2, len([x for x in lines if x.strip()])))
        rec = json.loads(lines[i]) if lines[i].strip() else {}
        key = rng.choice([k for k in rec if k in ("start", "end", "beat", "wall", "close", "data_wait")] or ["end"])
        rec[key] = rng.choice(ABSURD)
        lines[i] = json.dumps(rec).encode()
        return lines
    _edit_lines(path, edit)


def recorded_variants(clean: Path, root: Path, rng: random.Random,
                      per_file: int = 2) -> Iterator[tuple[str, Path]]:
    """Damaged copies of the recorded folder ``clean`` under ``root``: ``per_file`` byte-level
    mutations (``_corpus.mutations``) of each file, then each folder-level damage."""
    n = 0

    def fresh(kind: str) -> Path:
        nonlocal n
        n += 1
        d = root / f"{n:04d}-{kind}" / "job"
        shutil.copytree(clean, d)
        return d

    for p in sorted(clean.glob("rank*.jsonl")):
        variants = list(mutations(p.read_bytes(), rng))
        for kind, data in rng.sample(variants, min(per_file, len(variants))):
            d = fresh(kind)
            (d / p.name).write_bytes(data)
            yield f"{p.name}:{kind}", d
    for kind, damage in _folder_damage(clean, rng):
        d = fresh(kind)
        damage(d)
        yield kind, d
