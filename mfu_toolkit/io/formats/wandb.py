"""Weights & Biases exports: history CSV, system-stats CSV, ``wandb-summary.json``, ``wandb-metadata.json``.

What the files carry and how they become one Run (a folder holding them loads as one Run; the
files are told apart by their content, not their names):

- History CSV (``run.history()`` / ``scan_history`` export): ``_step``, ``_runtime`` (s since
  ``wandb.init``), ``_timestamp`` (epoch s) and the logged metrics. A row with a trainer step
  (``train/global_step``, ``trainer/global_step``, ``global_step``, ``step``; else ``_step``)
  ends a logging interval that began at the previous step row; the steps of the interval share
  it evenly (``timing = "interval_mean"``); the first step row of an attempt is zero-width
  (``interval_known = False``) since its start is not logged. A gap longer than
  :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` steps is not expanded (counted), nor are
  intervals past the load's row budget (``rules.take_rows``, noted): such an interval stays one
  row, its last step, as long as the interval's mean step, ``interval_steps`` holding the gap. Rows with
  ``<prefix>/runtime`` (HF ``eval/runtime``) become ``eval`` events ending at their timestamp,
  and the steps after them start when they end. The final HF row (``train/train_runtime``) goes
  to ``meta.extra["final"]``. Numeric metrics become step columns (``train/`` prefix dropped
  when no name clashes), on the logged step only. A step number that goes back opens an
  attempt (:func:`~mfu_toolkit.io.timeline.attempts`). A history without any step column is
  counted (line 1, field ``_step``) and gives no steps.
- System-stats CSV (about every 30 s): per GPU ``gpu.N.gpu`` (SM utilisation %), ``.memory``
  (memory-controller busy %), ``.memoryAllocated`` (% of memory allocated),
  ``.memoryAllocatedBytes``, ``.powerWatts``, ``.powerPercent``, ``.temp`` (a ``system.``
  prefix is accepted). Kept as the tidy table ``tables["gpu_util"]``: ``time_s, gpu, util_pct,
  memory_pct, memory_bytes, mem_busy_pct, power_w, power_pct, temp_c``. ``gpu.process.N.*``
  repeats GPU N for the logging process and is left out.
- ``wandb-summary.json``: last values, to ``meta.extra["summary"]``. One that is not a JSON
  object is counted with the line of the JSON error (``strict=True`` raises).
- ``wandb-metadata.json`` (a run folder keeps it under ``files/``): the facts ``accelerator``
  (the GPU name as printed: ``gpu`` in the older schema, ``gpu_nvidia[].name`` in the newer)
  and ``n_accelerators`` (``gpu_count``, else the number of listed devices), each with its file
  and line. W&B counts the GPUs of the host that ran ``wandb.init``: a multi-node job has more
  (a note says so). A metadata file without GPU fields leaves both unknown, never 0. A few
  scalar fields (os, python, program, args, CPU counts) go to ``meta.extra["metadata"]``.
- ``config.yaml`` holds the run's configuration, no times nor GPU facts: loading it alone is an
  error that says what to load instead; in a folder it is passed over.
- A history CSV loaded alone reads the system-stats CSV of the same run beside it (a load note names
  the file and why it is the same run): both names carry one W&B run id (``run-v7i3k2p0``), or the
  names differ only in the kind word (``…_history_…`` / ``…_system_stats_…``), or the folder is the
  run's own (``run-20231102_033502-v7i3k2p0/``); and its samples fall in the history's run (within
  60 s). A file naming another run id, or of another time, is never read; two candidates, neither.
  (The history and system-stats exports carry no run id in their content, so names are the id.)
- A file named ``<prefix>wandb-summary.json`` loaded alone reads the ``<prefix>wandb-metadata.json``
  beside it, and the other way round (the pair a run folder's ``files/`` holds, or flat copies
  of it with a common prefix). A folder with the files of several runs is an error listing them.
- Claims: HF Trainer's final values logged to W&B (summary, else the history's final row):
  ``train_samples_per_second`` → ``samples_per_s``, ``total_flos`` → ``total_flos`` (0.0, as
  under FSDP, means not computed: a note, no claim).
- A non-numeric cell in a numeric column is a bad value (line and column in the report;
  ``strict=True`` raises): left missing, its row kept. A column with no number at all (text)
  is left out, with a note; a row without a number in ``_timestamp`` is skipped.

Times are seconds since the earliest of: the run start (``_timestamp − _runtime``), the first
system sample.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ...run import InputRequest
from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, parse_json, read_head
from ..values import number

NAME = "wandb"
NO_STEP_COLUMN = "no step column (_step, train/global_step, ...): no steps read"


@dataclass(frozen=True)
class Options:
    """The W&B format takes no options besides the RunMeta keywords."""


_STEP_KEYS = ("train/global_step", "trainer/global_step", "global_step", "train/step", "step")
_GPU_RE = re.compile(r"^(?:system\.)?gpu\.(\d{1,4})\.([A-Za-z]+)$")
_GPU_PROC_RE = re.compile(r"^(?:system\.)?gpu\.process\.\d+\.")
_RUNTIME_COL_RE = re.compile(r"[A-Za-z0-9_]+/runtime")
_PAIR_RE = re.compile(r"^(.*)wandb-(summary|metadata)\.json$")
# A W&B run id in a file or folder name: ``run-<id>`` or a run folder's ``run-<date>_<time>-<id>``.
_RUN_ID_RE = re.compile(r"(?<![A-Za-z0-9])run-(?:\d{8}_\d{6}-)?([A-Za-z0-9]{8})(?![A-Za-z0-9])")
_HISTORY_WORD_RE = re.compile(r"history", re.IGNORECASE)
_SYSTEM_WORD_RE = re.compile(r"system(?:[_-]?(?:stats|metrics))?", re.IGNORECASE)
_BESIDE_SLACK_S = 60.0  # s: two of W&B's 30 s system-stats samples
_META_KEY_RE = re.compile(r'"(gpu|gpu_count|gpu_devices|gpu_nvidia)"\s*:')
_GPU_FIELDS = {
    "gpu": "util_pct",
    "memoryAllocated": "memory_pct",
    "memoryAllocatedBytes": "memory_bytes",
    "memory": "mem_busy_pct",
    "powerWatts": "power_w",
    "powerPercent": "power_pct",
    "temp": "temp_c",
}
_GPU_COLS = ["util_pct", "memory_pct", "memory_bytes", "mem_busy_pct", "power_w", "power_pct", "temp_c"]
_META_EXTRA = ("os", "python", "startedAt", "program", "cuda", "cudaVersion", "cpu_count", "cpu_count_logical", "args")
_MAX_GPUS = 100_000  # gpu_count above this is not one host's


# --- which file is which ----------------------------------------------------------------------
def _header(head: bytes) -> list[str]:
    first = head.split(b"\n", 1)[0].decode("utf-8", errors="replace").strip().lstrip("\ufeff")
    return [c.strip().strip('"') for c in first.split(",")]


def _kind_of(head: bytes) -> str | None:
    """'history', 'system', 'summary', 'metadata', 'config' or None, from a file's first bytes."""
    h = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if h[:1] == b"{":
        if b'"_wandb"' in head or (b'"_runtime"' in head and (b'"_timestamp"' in head or b'"_step"' in head)):
            return "summary"
        if b'"startedAt"' in head and (b'"program"' in head or b'"executable"' in head or b'"python"' in head):
            return "metadata"
        return None
    if h.startswith(b"wandb_version:"):
        return "config"
    if b"\x00" in head:
        return None
    cols = _header(head)
    if "_timestamp" not in cols:
        return None
    if any(_GPU_RE.match(c) for c in cols):
        return "system"
    if "_step" in cols or "_runtime" in cols:
        return "history"
    return None


def _classify_dir(path: Path) -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    cands = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in (".csv", ".json", ".gz"))
    files_dir = path / "files"  # a local wandb run folder keeps summary and metadata under files/
    if files_dir.is_dir():
        cands += sorted(p for p in files_dir.iterdir() if p.name in ("wandb-summary.json", "wandb-metadata.json"))
    for p in cands[:200]:
        try:
            k = _kind_of(read_head(p))
        except OSError:
            continue
        if k and k != "config":
            found.setdefault(k, []).append(p)
    return found


def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is a W&B export (a file by its columns, a folder by its files)."""
    try:
        p = Path(path)
        if p.is_dir():
            kinds = _classify_dir(p)
            if "history" in kinds or "system" in kinds:
                return 0.85
            return 0.6 if "summary" in kinds or "metadata" in kinds else 0.0
        k = _kind_of(head)
        return {"history": 0.9, "system": 0.9, "summary": 0.8, "metadata": 0.8, "config": 0.6}.get(k or "", 0.0)
    except Exception:
        return 0.0


def _several_runs(kinds: dict[str, list[Path]], reader: Reader) -> None:
    """Refuse a folder holding several files of one kind, naming the runs when the names tell them."""
    for k, fs in kinds.items():
        if len(fs) < 2:
            continue
        prefixes = [m.group(1) for f in fs if (m := _PAIR_RE.match(f.name))]
        if k in ("summary", "metadata") and len(prefixes) == len(fs):
            reader.fail(
                f"the W&B files of {len(fs)} runs are here (named {', '.join(p + '…' for p in prefixes)}); "
                "load one folder per run, or one run's <prefix>wandb-metadata.json or "
                "<prefix>wandb-summary.json, which reads the other beside it"
            )
        reader.fail(f"several W&B {k} files here ({', '.join(f.name for f in fs)}); load one folder per run")


def _files(reader: Reader) -> tuple[dict[str, Path], str | None]:
    """The export files of this load by kind (a folder's, or one file and its pair or its run's
    system stats), and why a system-stats file beside a history file is its run's."""
    path = reader.path
    if path.is_dir():
        kinds = _classify_dir(path)
        if not kinds:
            reader.fail("no W&B history, system-stats, summary or metadata files here")
        _several_runs(kinds, reader)
        return {k: fs[0] for k, fs in kinds.items()}, None
    k = _kind_of(reader.head())
    if k is None:
        reader.fail("not a W&B export: no _timestamp/_step columns nor summary or metadata keys")
    if k == "config":
        reader.fail(
            "a W&B config.yaml holds the run's configuration only (no times, no GPU facts); load the "
            "run's folder, its history export, or its wandb-metadata.json / wandb-summary.json"
        )
    files = {k: path}
    m = _PAIR_RE.match(path.name)
    if m:
        other = "metadata" if m.group(2) == "summary" else "summary"
        twin = path.with_name(f"{m.group(1)}wandb-{other}.json")
        if twin.is_file() and _kind_of(read_head(twin)) == other:
            files[other] = twin
    beside = _system_beside(path, reader) if k == "history" else None
    if beside is not None:
        files["system"] = beside[0]
    return files, None if beside is None else beside[1]


# --- the system stats beside a history file ------------------------------------------------
def _run_ids(name: str) -> set[str]:
    """W&B run ids a name carries (``run-v7i3k2p0``, ``run-20231102_033502-v7i3k2p0``)."""
    return {m.group(1) for m in _RUN_ID_RE.finditer(name)}


def _same_run(history: Path, other: Path) -> str | None:
    """Why ``other`` holds the same run as ``history`` (judged by names), or None.

    Both names carry one W&B run id: it must be the same. Otherwise the names must be the same but
    for the kind word (``…_history_…`` / ``…_system_stats_…``), or the folder must be a run's own
    (its name carries a run id, and neither file names another).
    """
    ids_h, ids_o = _run_ids(history.name), _run_ids(other.name)
    if ids_h and ids_o:
        return f"run id {', '.join(sorted(ids_h))} in both names" if ids_h == ids_o else None
    kh, ko = _HISTORY_WORD_RE.search(history.name), _SYSTEM_WORD_RE.search(other.name)
    if kh and ko and ((history.name[: kh.start()], history.name[kh.end():])
                      == (other.name[: ko.start()], other.name[ko.end():])):
        return f"the names differ only in {kh.group(0)!r} / {ko.group(0)!r}"
    folder = _run_ids(history.parent.name)
    if folder and not (ids_h - folder) and not (ids_o - folder):
        return f"both are in run {', '.join(sorted(folder))}'s folder"
    return None


def _system_beside(path: Path, reader: Reader) -> tuple[Path, str] | None:
    """The system-stats CSV of the same run beside a history CSV, with why it is the same run."""
    try:
        near = sorted(p for p in path.parent.iterdir() if p.is_file() and p != path and p.suffix in (".csv", ".gz"))
    except OSError:
        return None
    systems = [p for p in near[:200] if _kind_of(read_head(p)) == "system"]
    same = [(p, why) for p in systems if (why := _same_run(path, p)) is not None]
    if len(same) == 1:
        return same[0]
    if same:
        reader.note(f"{len(same)} system-stats files beside the history could be its run's "
                    f"({', '.join(p.name for p, _ in same[:5])}): none read; load one run's folder")
    elif systems:
        reader.note(f"system-stats file(s) beside the history ({', '.join(p.name for p in systems[:5])}) show no sign "
                    "of being its run's (no common run id, names that differ beyond the kind word): not read")
    return None


# --- CSV --------------------------------------------------------------------------------------
def _finite(v: float | None) -> bool:
    return v is not None and math.isfinite(v)


def _unique(header: list[str], sub: Reader) -> list[str]:
    """The header with repeated names made unique (``name~2``), noted."""
    seen: set[str] = set()
    out = []
    for h in header:
        name, n = h, 1
        while name in seen:
            n += 1
            name = f"{h}~{n}"
        seen.add(name)
        out.append(name)
    if out != header:
        sub.note(f"{sub.path.name}: repeated column names; the later ones renamed name~2, ...")
    return out


def _read_csv(path: Path, reader: Reader, required: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Numeric table + 1-based line numbers; bad rows and values counted with their line and field.

    A row without a number in the ``required`` column is skipped. A non-numeric cell elsewhere
    is a bad value: counted, left missing, its row kept. A column holding no number at all
    (text, media references) is left out, with a note.
    """
    sub = reader.for_file(path)  # errors name this file; in a folder load, skips carry its name
    rows = sub.csv_rows(sub.text())
    header = _unique(rows.header, sub)
    if required not in header:
        sub.fail(f"missing column {required!r} (a W&B export has it)", line=1, field=required)
    idx = header.index(required)
    data: list[list[float]] = []
    lines: list[int] = []
    has_num = [False] * len(header)
    pending: dict[int, list[tuple[int, str]]] = {}  # bad cells of columns with no number yet

    def bad_value(ln: int, j: int, cell: str) -> None:
        sub.bad(rules.NON_NUMERIC, line=ln, field=header[j], example=cell.strip()[:160])

    for ln, row in rows:
        # A cell: NaN when empty, else a number (NaN and infinity kept), None when it is none.
        vals = [number(c, nonfinite="keep") if c.strip() else math.nan for c in row]
        if not _finite(vals[idx]):
            sub.bad(rules.NON_FINITE_TIME, line=ln, field=required, example=",".join(row)[:160], detail=required)
            continue
        for j, v in enumerate(vals):
            if v is None:
                if has_num[j]:
                    bad_value(ln, j, row[j])
                else:
                    pending.setdefault(j, []).append((ln, row[j]))
            elif not has_num[j] and math.isfinite(v):
                has_num[j] = True  # a number column after all: its earlier text cells were bad
                for pl, pc in pending.pop(j, []):
                    bad_value(pl, j, pc)
        data.append([math.nan if v is None else v for v in vals])
        lines.append(ln)
    reader.report.lines_read += rows.n_rows + 1
    if pending:
        names = ", ".join(repr(header[j]) for j in sorted(pending))
        reader.note(f"{path.name}: column(s) {names} hold text, not numbers; left out")
    return pd.DataFrame(data, columns=header, dtype=float), np.asarray(lines, dtype=np.int64)


# --- JSON files -------------------------------------------------------------------------------
def _json_file(path: Path, reader: Reader, kind: str) -> tuple[dict[str, Any], str] | None:
    """A summary or metadata object and its text; a broken one is counted (with its line) and
    gives None. Bytes that are not UTF-8 are counted and replaced."""
    sub = reader.for_file(path)
    raw = sub.bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        sub.bad(rules.NOT_UTF8, line=raw.count(b"\n", 0, exc.start) + 1, field=kind,
                example=repr(raw[max(0, exc.start - 40) : exc.start + 20])[:120])
    text = text[1:] if text.startswith("\ufeff") else text
    doc, why, at = parse_json(text)
    if why is not None:
        sub.bad(rules.FILE_LEFT_OUT, line=at, field=kind, example=text[:80], detail=f"{kind}: {rules.in_full(why)}")
        return None
    if not isinstance(doc, dict):
        sub.bad(rules.FILE_LEFT_OUT, line=1, field=kind, detail=f"{kind}: not a JSON object")
        return None
    return doc, text


def _summary(path: Path, reader: Reader) -> tuple[dict[str, Any], str]:
    """The summary's scalar values and its text (none when it is unreadable)."""
    got = _json_file(path, reader, "summary")
    if got is None:
        return {}, ""
    out: dict[str, Any] = {}
    for k, v in got[0].items():
        if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 2**63:  # past int64: a float, if it fits
            big = number(v, text=False)
            if big is None:
                reader.note(f"summary value {k!r} is an integer of {v.bit_length():,} bits, beyond the float "
                            "range; left out")
                continue
            v = big
        if isinstance(v, (int, float, str, bool)) and not (isinstance(v, float) and not math.isfinite(v)):
            out[k] = v
        elif k == "_wandb" and isinstance(v, dict) and number(v.get("runtime"), text=False) is not None:
            out["_wandb.runtime"] = v["runtime"]
    return out, got[1]


def _plain(v: Any) -> bool:
    """A value that reads back from JSON as itself: a string, an exact finite number, a list of strings."""
    if isinstance(v, str):
        return True
    if isinstance(v, list):
        return all(isinstance(x, str) for x in v)
    x = number(v, text=False)  # a JSON number, finite
    return x is not None and abs(x) < 2**53


def _line_text(text: str, pos: int) -> tuple[int, str]:
    """Line number of ``pos`` and that line's text, stripped."""
    a = text.rfind("\n", 0, pos) + 1
    b = text.find("\n", pos)
    return text.count("\n", 0, pos) + 1, text[a : b if b >= 0 else len(text)].strip()[:200]


def _gpu_names(doc: dict[str, Any]) -> tuple[str, list[str]]:
    """Which field lists the GPUs, and their names."""
    for key, name_key in (("gpu_nvidia", "name"), ("gpu_devices", "name")):
        devs = doc.get(key)
        if isinstance(devs, list) and devs:
            return key, [d[name_key] for d in devs if isinstance(d, dict) and isinstance(d.get(name_key), str)]
    gpu = doc.get("gpu")
    return ("gpu", [gpu]) if isinstance(gpu, str) and gpu.strip() else ("", [])


def _gpu_count(doc: dict[str, Any], sub: Reader, at: dict[str, tuple[int, str]]) -> int | None:
    """``gpu_count`` as a count; 0 is a note (no GPU seen), a bad value is counted."""
    v = doc.get("gpu_count")
    if v is None:
        return None
    n = rules.as_step(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None
    if n == 0:
        sub.note(f"{sub.path.name}: gpu_count 0 (wandb saw no GPU); n_accelerators left unknown")
        return None
    if n is None or n > _MAX_GPUS:
        sub.bad(rules.VALUE_OUT_OF_RANGE, line=at.get("gpu_count", (None, ""))[0], field="gpu_count",
                example=repr(v)[:80])
        return None
    return n


def _metadata(path: Path, reader: Reader, out: Parsed) -> None:
    """accelerator and n_accelerators facts (and a few scalars) from ``wandb-metadata.json``."""
    got = _json_file(path, reader, "metadata")
    if got is None:
        return
    doc, text = got
    sub = reader.for_file(path)
    at: dict[str, tuple[int, str]] = {}
    for m in _META_KEY_RE.finditer(text):
        at.setdefault(m.group(1), _line_text(text, m.start()))
    out.extra["metadata"] = {k: doc[k] for k in _META_EXTRA if _plain(doc.get(k))}
    key, names = _gpu_names(doc)
    if len(set(names)) == 1:
        line, raw = at.get("gpu", at.get(key, (1, "")))
        if key == "gpu_nvidia":
            i = text.find('"name"', text.find('"gpu_nvidia"'))
            line, raw = _line_text(text, i) if i >= 0 else (line, raw)
        out.fact("accelerator", names[0], f"{sub.name}:{line}", raw)
    elif names:
        reader.note(f"{path.name}: {key} names {len(set(names))} kinds of GPU ({', '.join(sorted(set(names)))}): "
                    "no accelerator stated")
    n = _gpu_count(doc, sub, at)
    if n is None and names and "gpu_count" not in doc and key != "gpu":
        n = len(names)
        at["gpu_count"] = (at.get(key, (1, ""))[0], f"{key} lists {n} devices")
    if n is not None:
        line, raw = at.get("gpu_count", (1, ""))
        out.fact("n_accelerators", n, f"{sub.name}:{line}", raw)
        reader.note(InputRequest(f"n_accelerators {n} from {path.name}: the GPUs of the host that ran wandb.init; "
                                 "a multi-node job has more", ("n_accelerators",),
                                 "pass n_accelerators= for the job's count"))
    elif not names:
        reader.note(f"{path.name}: no GPU fields (gpu, gpu_count, gpu_nvidia); accelerator and count unknown")


# --- system stats ---------------------------------------------------------------------------
def _gpu_table(df: pd.DataFrame, t0: float, reader: Reader) -> tuple[pd.DataFrame, int]:
    """Wide system stats → tidy per-GPU rows."""
    per_gpu: dict[int, dict[str, str]] = {}
    proc = 0
    for c in df.columns:
        if _GPU_PROC_RE.match(c):
            proc += 1
            continue
        m = _GPU_RE.match(c)
        if m and m.group(2) in _GPU_FIELDS:
            per_gpu.setdefault(int(m.group(1)), {})[_GPU_FIELDS[m.group(2)]] = c
    if proc:
        reader.note(f"{proc} gpu.process.N.* columns (the logging process's GPU, repeated) left out")
    time_s = df["_timestamp"].to_numpy(float) - t0
    parts = []
    for g in sorted(per_gpu):
        cols = per_gpu[g]
        part = {"time_s": time_s, "gpu": np.full(len(df), g, dtype=np.int16)}
        for name in _GPU_COLS:
            part[name] = df[cols[name]].to_numpy(float) if name in cols else np.full(len(df), np.nan)
        parts.append(pd.DataFrame(part))
    if not parts:
        return pd.DataFrame(columns=["time_s", "gpu", *_GPU_COLS]), 0
    out = pd.concat(parts, ignore_index=True).sort_values(["time_s", "gpu"], kind="stable")
    return out.reset_index(drop=True), len(per_gpu)


# --- history --------------------------------------------------------------------------------
def _eval_events(df: pd.DataFrame, lines: np.ndarray, ts: np.ndarray,
                 reader: Reader) -> tuple[list[dict[str, Any]], np.ndarray, list[str]]:
    """Evaluations: a '<prefix>/runtime' value (HF logs eval/runtime) ends at the row's time."""
    rt_cols = [c for c in df.columns if _RUNTIME_COL_RE.fullmatch(c) and not c.startswith("train/")]
    events: list[dict[str, Any]] = []
    is_eval = np.zeros(len(df), bool)
    for c in rt_cols:
        v = df[c].to_numpy(float)
        for i in np.flatnonzero(np.isfinite(v)):
            if v[i] < 0:
                reader.bad(rules.NEGATIVE_DURATION, line=int(lines[i]), field=c)
                continue
            is_eval[i] = True
            events.append({"kind": "eval", "start_s": max(ts[i] - v[i], 0.0), "end_s": ts[i], "attempt": 0,
                           "rank": -1, "detail": f"{c}={v[i]:.3f}s", "_row": int(i)})
    return events, is_eval, rt_cols


def _final_row(df: pd.DataFrame, lines: np.ndarray) -> tuple[dict[str, float], np.ndarray, int | None]:
    """The HF final row (``train/train_runtime``): its finite values, which rows are final, its line."""
    if "train/train_runtime" not in df.columns:
        return {}, np.zeros(len(df), bool), None
    fin = np.isfinite(df["train/train_runtime"].to_numpy(float))
    idx = np.flatnonzero(fin)
    if not len(idx):
        return {}, fin, None
    i = int(idx[-1])
    row = df.iloc[i]
    return {c: float(v) for c, v in row.items() if math.isfinite(v)}, fin, int(lines[i])


def _step_rows(df: pd.DataFrame, lines: np.ndarray, ts: np.ndarray, step_key: str, cand: np.ndarray,
               reader: Reader) -> tuple[list[tuple[int, int, int]], np.ndarray]:
    """(attempt, step, row) of each kept step row in file order, and each row's kept step row.

    A row of the step just kept is another metric row of it (merged); a later step whose time goes
    back is counted and left out. Attempts: ``timeline.attempts`` over the kept rows, a step number
    that goes back opening one (the time check above starts afresh there: such a row is kept).
    """
    step_vals = df[step_key].to_numpy(float)
    kept: list[tuple[int, int]] = []
    grp = np.full(len(df), -1)  # which kept step row each history row belongs to
    last_step: int | None = None
    last_t = -math.inf
    for i in np.flatnonzero(cand):
        s = rules.as_step(float(step_vals[i]))
        if s is None:
            reader.bad(rules.BAD_STEP, line=int(lines[i]), field=step_key)
            continue
        if last_step is not None and s == last_step:
            grp[i] = len(kept) - 1  # another metric row of the same step (merged below)
            continue
        if last_step is not None and s > last_step and ts[i] < last_t:
            reader.bad(rules.NON_MONOTONIC, line=int(lines[i]), field="_timestamp")
            continue
        kept.append((s, int(i)))
        grp[i] = len(kept) - 1
        last_step, last_t = s, ts[i]
    att = timeline.attempts(np.array([s for s, _ in kept], dtype=np.int64), resets="back")
    return [(a, s, i) for a, (s, i) in zip(att.tolist(), kept, strict=True)], grp


def _expand(rows: list[tuple[int, int, int]], ts: np.ndarray, events: list[dict[str, Any]], lines: np.ndarray,
            step_key: str, reader: Reader) -> dict[str, np.ndarray]:
    """One row per step: each logged interval shared evenly by its steps. An interval too long to
    expand (or past the load's row budget) stays one row, its last step, as long as the mean step."""
    att = np.array([r[0] for r in rows])
    stp = np.array([r[1] for r in rows], dtype=np.int64)
    idx = np.array([r[2] for r in rows])
    end = ts[idx]
    new_att = np.concatenate([[True], att[1:] != att[:-1]])
    first = np.where(new_att, stp, np.concatenate([[0], stp[:-1] + 1]))
    first = np.minimum(first, stp)
    gap = stp - first + 1
    long = gap > rules.MAX_LOG_INTERVAL
    for k in np.flatnonzero(long):
        reader.bad(rules.INTERVAL_TOO_LONG, line=int(lines[idx[k]]), field=step_key,
                   example=f"steps {int(stp[k - 1])} to {int(stp[k])}: {int(gap[k]):,} steps in one interval")
    counts = np.where(long, 1, gap)
    extra = int(counts.sum()) - len(counts)
    if extra and not rules.take_rows(extra):  # the load's budget of invented rows (see rules)
        counts = np.ones_like(counts)
        reader.note(f"log intervals not expanded: one row per logged step (the steps between are counted in "
                    f"interval_steps) — expanding them would add {extra:,} rows, over this load's budget")
    start = np.where(new_att, end, np.concatenate([[0.0], end[:-1]]))
    if events:  # steps after an evaluation start when it ends
        ev_end = np.sort(np.array([e["end_s"] for e in events]))
        k = np.searchsorted(ev_end, end, side="right") - 1
        last_eval_end = np.where(k >= 0, ev_end[np.maximum(k, 0)], -np.inf)
        start = np.where(~new_att & (last_eval_end > start) & (last_eval_end <= end), last_eval_end, start)
    mean = (end - start) / gap  # the interval's mean step
    start = np.where(counts < gap, end - mean, start)  # an interval kept as one row: its last step
    first = np.where(counts < gap, stp, first)
    within = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    share = np.repeat(mean, counts)
    st = np.repeat(start, counts) + within * share
    return {
        "attempt": np.repeat(att, counts),
        "step": np.repeat(first, counts) + within,
        "start_s": st,
        "end_s": st + share,
        "interval_steps": np.repeat(gap, counts),
        "interval_known": np.repeat(~new_att, counts),
        "logged": within == np.repeat(counts - 1, counts),
    }


def _metric_columns(df: pd.DataFrame, metric_cols: list[str], grp: np.ndarray, n_rows: int,
                    out: dict[str, np.ndarray]) -> None:
    """Metric values on the logged steps: the first finite value among the rows of each step."""
    names: dict[str, str] = {}
    used = set(df.columns)
    for c in metric_cols:
        short = c[len("train/") :] if c.startswith("train/") else c
        names[c] = short if short != c and short not in used else c
        used.add(names[c])
    sel = grp >= 0
    vals = df.loc[sel, metric_cols].groupby(grp[sel]).first()
    pos_logged = np.flatnonzero(out["logged"])
    for c in metric_cols:
        if not vals[c].notna().any():
            continue  # a metric never logged on a step row (e.g. only in the final row)
        col = np.full(len(out["step"]), np.nan)
        col[pos_logged] = vals[c].reindex(np.arange(n_rows)).to_numpy(float)
        out[names[c]] = col


def _history_steps(
    df: pd.DataFrame, lines: np.ndarray, t0: float, reader: Reader
) -> tuple[pd.DataFrame | None, list[dict[str, Any]], dict[str, Any], int | None]:
    """Step rows, eval events, the final row and its line from a history export."""
    ts = df["_timestamp"].to_numpy(float) - t0
    events, is_eval, rt_cols = _eval_events(df, lines, ts, reader)
    final, is_final, final_line = _final_row(df, lines)
    step_key = next((k for k in (*_STEP_KEYS, "_step") if k in df.columns), None)
    if step_key is None:
        reader.bad(NO_STEP_COLUMN, line=1, field="_step")
        return None, events, final, final_line
    cand = np.isfinite(df[step_key].to_numpy(float)) & ~is_eval & ~is_final
    rows, grp = _step_rows(df, lines, ts, step_key, cand, reader)
    kept = np.array([r[2] for r in rows], dtype=np.int64)
    for e in events:  # attribute each evaluation to the attempt running when it ended
        k = int(np.searchsorted(kept, e.pop("_row"), side="right")) - 1
        e["attempt"] = rows[k][0] if k >= 0 else 0
    if not rows:
        return None, events, final, final_line
    out = _expand(rows, ts, events, lines, step_key, reader)
    skip = {"_step", "_runtime", "_timestamp", step_key, *rt_cols}
    metric_cols = [c for c in df.columns if c not in skip and not c.startswith("train/train_")]
    _metric_columns(df, metric_cols, grp, len(rows), out)
    return pd.DataFrame(out), events, final, final_line


def _edge_events(steps: pd.DataFrame, hist: pd.DataFrame, summary: dict[str, Any], t0: float,
                 events: list[dict[str, Any]]) -> None:
    """Time before the first and after the last logged step, where the export bounds it."""
    if "_runtime" not in hist:
        return
    starts = (hist["_timestamp"] - hist["_runtime"]).to_numpy(float)
    starts = starts[np.isfinite(starts)]
    if not len(starts):
        return
    run_start = float(starts.min()) - t0
    first_end = float(steps["end_s"].iloc[0])
    if first_end > run_start:
        events.append(
            {"kind": "other", "start_s": run_start, "end_s": first_end, "attempt": 0, "rank": -1,
             "detail": "run start to the first logged step (setup and the first logging interval; "
             "the log does not separate them)"}
        )
    run_end = number(summary.get("_wandb.runtime"), text=False, default=math.nan)
    last_end = float(steps["end_s"].max())
    if math.isfinite(run_start + run_end) and run_start + run_end > last_end:
        events.append(
            {"kind": "other", "start_s": last_end, "end_s": run_start + run_end,
             "attempt": int(steps["attempt"].max()), "rank": -1,
             "detail": "last logged step to the end of the run (summary _wandb.runtime): saving, teardown"}
        )


# --- claims ---------------------------------------------------------------------------------
def _claims(out: Parsed, sources: list[tuple[dict[str, Any], str]], reader: Reader) -> None:
    """HF Trainer's samples/s and total_flos as logged to W&B (summary first, then the final row).

    ``sources``: ``(values, where)``; ``where`` ends in ``:<line>`` or is a function of the key.
    """
    def first(*keys: str) -> tuple[float, str] | None:
        for values, where in sources:
            for k in keys:
                v = number(values.get(k), text=False)
                if v is not None:
                    return v, where(k) if callable(where) else where
        return None

    sps = first("train/train_samples_per_second", "train_samples_per_second")
    if sps is not None:
        out.claim(Claim.summarise("samples_per_s", [sps[0]], unit="samples/s", where=sps[1], counts=(
            "HF Trainer's train_samples_per_second as logged to W&B: training samples per second, all "
            "processes together, over the whole train_runtime (evaluation and checkpoint saves included)"),
            basis="end_to_end"))
    flos = first("train/total_flos", "total_flos")
    if flos is not None and flos[0] == 0.0:
        reader.note(f"total_flos is 0.0 at {flos[1]}: the Trainer did not compute it (as under FSDP), not zero work; "
                    "no total_flos claim")
    elif flos is not None and flos[0] < 0:
        reader.note(f"total_flos {flos[0]:g} at {flos[1]} is negative, no estimate: no total_flos claim")
    elif flos is not None:
        out.claim(Claim.summarise("total_flos", [flos[0]], unit="FLOP", where=flos[1], counts=(
            "HF Trainer's own estimate of the whole run's floating-point operations (6 × parameters × tokens; "
            "under FSDP/sharding the local shard's parameters); never used as model FLOPs")))


# --- the load -------------------------------------------------------------------------------
def _origin(hist: tuple[pd.DataFrame, np.ndarray] | None, syst: tuple[pd.DataFrame, np.ndarray] | None) -> float:
    """The earliest of the run start (timestamp − runtime) and the first system sample."""
    origins = []
    if hist is not None and len(hist[0]):
        h = hist[0]
        t = h["_timestamp"].to_numpy(float)
        if "_runtime" in h:
            origins.append(float(np.min(t - h["_runtime"].fillna(0).to_numpy(float))))
        origins.append(float(t.min()))
    if syst is not None and len(syst[0]):
        origins.append(float(syst[0]["_timestamp"].min()))
    finite = [o for o in origins if math.isfinite(o)]
    return min(finite) if finite else 0.0


def _span(df: pd.DataFrame, *, with_runtime: bool) -> tuple[float, float] | None:
    """First and last epoch second of an export (a history's from its run start: timestamp − runtime)."""
    t = df["_timestamp"].to_numpy(float)
    if not len(t):
        return None
    start = t - df["_runtime"].fillna(0).to_numpy(float) if with_runtime and "_runtime" in df else t
    lo, hi = float(np.nanmin(start)), float(np.nanmax(t))
    return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None


def _beside_in_time(files: dict[str, Path], hist: tuple[pd.DataFrame, np.ndarray],
                    syst: tuple[pd.DataFrame, np.ndarray], why: str,
                    reader: Reader) -> tuple[pd.DataFrame, np.ndarray] | None:
    """The system stats picked up beside a history, if their samples fall in the history's run (noted either way).

    W&B samples system stats every 2-30 s from ``wandb.init`` to the run's end, so a file of the
    same run has samples within the history's span, give or take :data:`_BESIDE_SLACK_S`.
    """
    h, s = _span(hist[0], with_runtime=True), _span(syst[0], with_runtime=False)
    name = files["system"].name
    if h is None or s is None or s[0] > h[1] + _BESIDE_SLACK_S or s[1] < h[0] - _BESIDE_SLACK_S:
        reader.note(f"the system stats beside the history ({name}: {why}) were not read: their samples "
                    + ("are missing" if h is None or s is None else
                       f"({s[0]:.0f}-{s[1]:.0f} epoch s) lie outside the history's run ({h[0]:.0f}-{h[1]:.0f})"))
        return None
    reader.note(f"read the system stats beside the history: {name} (the same run: {why}; its samples "
                f"{s[0]:.0f}-{s[1]:.0f} epoch s fall in the history's run {h[0]:.0f}-{h[1]:.0f})")
    return syst


def _key_where(text: str, name: str) -> Any:
    """``key -> "<file>:<line of the key>"`` in a JSON text."""

    def where(key: str) -> str:
        i = text.find(f'"{key}"')
        return f"{name}:{text.count(chr(10), 0, i) + 1 if i >= 0 else 1}"
    return where


def _history_part(
    files: dict[str, Path], reader: Reader, out: Parsed, summary: dict[str, Any],
    t0: float, hist: tuple[pd.DataFrame, np.ndarray],
) -> tuple[pd.DataFrame | None, list[dict[str, Any]], str | None]:
    sub = reader.for_file(files["history"])
    steps, events, final, final_line = _history_steps(hist[0], hist[1], t0, sub)
    if final:
        out.extra["final"] = final
    if steps is None:
        reader.note("history has no step rows")
    else:
        _edge_events(steps, hist[0], summary, t0, events)
        if not steps["interval_known"].all():
            reader.note("the first logged step of an attempt has no start time in the log: zero-width row")
    return steps, events, f"{sub.name}:{final_line}" if final_line else None


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a W&B history/system-stats CSV, a summary or metadata JSON, or a folder holding them."""
    files, beside = _files(reader)
    if len(files) > 1:  # several exports: each skipped line carries its file name
        reader.root = reader.path if reader.path.is_dir() else reader.path.parent
    hist = _read_csv(files["history"], reader, "_timestamp") if "history" in files else None
    syst = _read_csv(files["system"], reader, "_timestamp") if "system" in files else None
    if beside is not None and hist is not None and syst is not None:
        syst = _beside_in_time(files, hist, syst, beside, reader)
        if syst is None:
            del files["system"]
    summary, summary_text = _summary(files["summary"], reader) if "summary" in files else ({}, "")
    t0 = _origin(hist, syst)
    out = Parsed(timing="interval_mean", time_unit="epoch_s",
                 extra={"files": {k: str(v) for k, v in files.items()}, "t0_epoch_s": t0})
    if "metadata" in files:
        _metadata(files["metadata"], reader, out)
    steps, events, final_where = None, [], None
    if hist is not None:
        steps, events, final_where = _history_part(files, reader, out, summary, t0, hist)
    if syst is not None:
        out.tables["gpu_util"], out.extra["gpus_in_system_stats"] = _gpu_table(syst[0], t0, reader)
    if summary:
        out.extra["summary"] = summary
    if hist is None and syst is None and not summary and "metadata" not in out.extra:
        reader.fail("nothing readable in the W&B files")
    sources: list[tuple[dict[str, Any], Any]] = []
    if summary:
        sources.append((summary, _key_where(summary_text, reader.for_file(files["summary"]).name)))
    if final_where:
        sources.append((out.extra["final"], final_where))
    _claims(out, sources, reader)
    out.steps, out.events = steps, events or None
    out.meta["name"] = reader.path.name.split(".")[0]
    return out


load = loader_for(NAME)
