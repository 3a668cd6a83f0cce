"""Hugging Face ``Trainer`` logs: ``trainer_state.json`` and the stdout dict lines.

Neither source has per-step timestamps. What they carry, and how it becomes a Run:

- ``train_runtime`` (seconds of ``Trainer.train``, evaluation and checkpoint saves included),
  the number of optimizer steps (``global_step``, or inferred for stdout, below) and the
  duration of every evaluation (``eval_runtime``; also ``predict_runtime`` etc.).
- So the training time is ``train_runtime`` minus the logged evaluation runtimes, spread evenly
  over the steps (``meta.timing = "duration_only"``: the total is exact, the individual step
  durations are a run-wide mean). Evaluations become ``eval`` events placed after the step at
  which they ran; checkpoint saves are not logged separately and stay inside the step time
  (a note says so). Without ``train_runtime`` (a run that died) no time can be derived: the
  steps table stays empty and the logged values are still in ``tables["log_history"]``.
- Logged values (``loss``, ``grad_norm``, ``learning_rate``, ``epoch``) are columns on the
  logged steps only; ``logged`` marks them. ``tables["log_history"]`` keeps every entry.
- ``all_results.json`` / ``train_results.json`` / ``eval_results.json`` beside the state (same
  name prefix or same folder) go to ``meta.extra["results"]``. ``total_flos`` is kept in
  ``meta.extra`` only: it is HF's 6·params·tokens estimate and under FSDP/sharding it counts
  the local shard's parameters, so it is not used as model FLOPs. A results file that is not a
  readable JSON object is counted (file and line of the JSON error) and left out.
- stdout lines look like Python dicts (``{'loss': 1.2, 'learning_rate': 1e-05, 'epoch': 0.01}``);
  they are read by a converter that accepts literals only (numbers, strings, ``nan``/``inf``,
  ``tensor(x, ...)`` wrappers) and never evaluates code. They carry no step number: the
  logging interval is inferred from ``train_runtime × train_steps_per_second`` ÷ the number of
  loss lines (recorded in ``meta.extra["logging_steps_inferred"]``). Each ``train_runtime`` line
  closes an attempt; lines after it open the next.
- Bad entries are counted with their line (the entry's first line in ``trainer_state.json``)
  and field, or raise with ``strict=True``: an entry with a bad step or runtime is skipped; a
  non-numeric ``loss``/``grad_norm``/``learning_rate``/``epoch`` is left missing and the entry
  (its step) kept; a non-integer ``global_step`` is ignored.
"""

from __future__ import annotations

import ast
import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..run import LoadError, Run, RunMeta
from ._build import _apply_overrides, split_kwargs
from ._common import Reader, iter_lines, open_bytes, read_head

NAME = "hf_trainer"

_DICT_START_RE = re.compile(r"\{['\"]")
_SNIFF_TEXT_RE = re.compile(
    rb"\{'(?:loss|train_runtime|eval_loss|learning_rate|grad_norm|eval_runtime)'\s*:"
)
_MAX_DICT_CHARS = 200_000
_NAMED_CONSTANTS = {
    "nan": math.nan,
    "NaN": math.nan,
    "inf": math.inf,
    "Infinity": math.inf,
    "None": None,
    "True": True,
    "False": False,
}
_RESULT_FILES = ("all_results.json", "train_results.json", "eval_results.json")
_POINT_FIELDS = ("loss", "grad_norm", "learning_rate", "epoch")
_NUMERIC_FIELDS = (*_POINT_FIELDS, "train_steps_per_second")  # read as numbers: checked per entry


# --- safe reading of Python-dict-looking lines ---------------------------------------------
def _literal(node: ast.AST) -> Any:
    """Convert an AST of literals to Python values; anything else is a ValueError."""
    if isinstance(node, ast.Constant) and isinstance(node.value, (str, int, float, bool, type(None))):
        return node.value
    if isinstance(node, ast.Dict):
        if any(k is None for k in node.keys):
            raise ValueError("dict unpacking is not a literal")
        return {_literal(k): _literal(v) for k, v in zip(node.keys, node.values, strict=True)}  # type: ignore[arg-type]
    if isinstance(node, (ast.List, ast.Tuple)):
        return [_literal(e) for e in node.elts]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _literal(node.operand)
        if not isinstance(v, (int, float)) or isinstance(v, bool):
            raise ValueError("sign on a non-number")
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.Name) and node.id in _NAMED_CONSTANTS:
        return _NAMED_CONSTANTS[node.id]
    if (  # tensor(0.52, device='cuda:0') as printed for grad_norm by some versions
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Name)
        and node.func.id == "tensor"
        and node.args
    ):
        return _literal(node.args[0])
    raise ValueError(f"not a literal: {type(node).__name__}")


def parse_dict_line(text: str) -> dict[str, Any]:
    """Parse one ``{'key': value, ...}`` line without evaluating anything."""
    if len(text) > _MAX_DICT_CHARS:
        raise ValueError("line too long for a log dict")
    try:
        tree = ast.parse(text.strip(), mode="eval")
        value = _literal(tree.body)
    except (SyntaxError, RecursionError, MemoryError, TypeError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None
    if not isinstance(value, dict):
        raise ValueError("not a dict")
    return value


# --- sniffing -------------------------------------------------------------------------------
def sniff(path: Path, head: bytes) -> float:
    """Confidence that ``path`` is HF Trainer output (state JSON, results JSON, stdout, dir)."""
    try:
        p = Path(path)
        if p.is_dir():
            if (p / "trainer_state.json").is_file():
                return 0.9
            if any(p.glob("checkpoint-*/trainer_state.json")):
                return 0.85
            if len(list(p.glob("*trainer_state.json"))) == 1:
                return 0.8
            if any((p / f).is_file() for f in _RESULT_FILES):
                return 0.6
            return 0.0
        h = head.lstrip()
        if h[:1] == b"{" and b'"log_history"' in head:
            return 0.95
        if h[:1] == b"{" and b'"train_runtime"' in head and b'"train_samples_per_second"' in head:
            return 0.8
        hits = len(_SNIFF_TEXT_RE.findall(head))
        if hits:
            return 0.9 if hits >= 2 else 0.7
        return 0.0
    except Exception:
        return 0.0


# --- entries → timeline ---------------------------------------------------------------------
def _entry_kind(e: dict[str, Any]) -> str:
    if "train_runtime" in e:
        return "final"
    if any(k.endswith("_runtime") for k in e):
        return "eval"
    if "loss" in e or "learning_rate" in e or "grad_norm" in e:
        return "train"
    return "other"


def _eval_runtime(e: dict[str, Any]) -> tuple[str, Any]:
    for k, v in e.items():
        if k.endswith("_runtime") and k != "train_runtime":
            return k, v
    return "", None


def _num(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return math.nan
    return float(v)


def _is_count(v: Any) -> bool:
    """A non-negative integer (an int, or a float with no fraction)."""
    return not isinstance(v, bool) and isinstance(v, (int, float)) and math.isfinite(v) and v >= 0 and v == int(v)


def _check_entry(reader: Reader, e: Any, line: int | None, *, need_step: bool) -> dict[str, Any] | None:
    """Validate one log entry (dict, finite non-negative runtimes, integer step)."""
    if not isinstance(e, dict):
        reader.bad("log entry is not a dict", line=line, example=repr(e)[:120])
        return None
    e = {str(k): v for k, v in e.items()}
    if need_step and _entry_kind(e) == "train" and "step" not in e:
        reader.bad("training log entry without a step", line=line, field="step", example=repr(e)[:160])
        return None
    for k, v in e.items():
        if k.endswith("_runtime"):
            f = _num(v)
            if not math.isfinite(f):
                reader.bad("runtime is not a finite number", line=line, field=k, example=repr(e)[:160])
                return None
            if f < 0:
                reader.bad("negative duration", line=line, field=k, example=repr(e)[:160])
                return None
    if "step" in e and not _is_count(e["step"]):
        reader.bad("step is not a non-negative integer", line=line, field="step", example=repr(e)[:160])
        return None
    for k in _NUMERIC_FIELDS:  # a bad value is left missing; the entry (its step) stays
        v = e.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            reader.bad("non-numeric value (left missing, entry kept)", line=line, field=k, example=repr(v)[:120])
            e[k] = None
    return e


def _timeline(
    segments: list[list[tuple[int | None, dict[str, Any]]]],
    reader: Reader,
    *,
    global_step: int | None,
    stdout: bool,
) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
    """Lay out steps and eval events from entry segments (one per attempt)."""
    rep = reader.report
    cols: dict[str, list[Any]] = {k: [] for k in ("attempt", "step", "start_s", "end_s", "logged")}
    for f in _POINT_FIELDS:
        cols[f] = []
    events: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    t = 0.0
    for attempt, seg in enumerate(segments):
        finals = [e for _, e in seg if _entry_kind(e) == "final"]
        train = [e for _, e in seg if _entry_kind(e) == "train"]
        evals = [e for _, e in seg if _entry_kind(e) == "eval"]
        final = finals[-1] if finals else None
        if final is not None:
            facts.setdefault("final", []).append({k: v for k, v in final.items() if _num(v) == _num(v)})
        # Step numbers: logged ones (trainer_state) or inferred (stdout).
        k_interval = 1
        if stdout:
            n_logs = len(train)
            if final is not None and n_logs:
                sps = _num(final.get("train_steps_per_second"))
                rt = _num(final.get("train_runtime"))
                if math.isfinite(sps) and math.isfinite(rt) and sps > 0:
                    k_interval = max(1, round(rt * sps / n_logs))
            facts.setdefault("logging_steps_inferred", []).append(k_interval)
            for i, e in enumerate(train, start=1):
                e.setdefault("step", i * k_interval)
            n_steps = n_logs * k_interval
        else:
            logged_steps = [int(e["step"]) for _, e in seg if "step" in e]
            n_steps = max(logged_steps, default=0)
            if global_step is not None and attempt == len(segments) - 1:
                n_steps = max(n_steps, global_step)
        runtime = _num(final.get("train_runtime")) if final is not None else math.nan
        if not math.isfinite(runtime) or n_steps <= 0:
            if seg:
                rep.note(
                    f"attempt {attempt}: no train_runtime (or no steps) logged, so no step times can "
                    "be derived; the logged values are in tables['log_history']"
                )
            continue
        eval_total = sum(_num(_eval_runtime(e)[1]) for e in evals)
        train_time = runtime - eval_total
        if train_time <= 0:
            rep.note(
                f"attempt {attempt}: logged evaluation runtimes ({eval_total:.1f} s) exceed "
                f"train_runtime ({runtime:.1f} s); evaluations not subtracted nor placed"
            )
            train_time, place_evals = runtime, False
        else:
            place_evals = True
        tau = train_time / n_steps
        facts.setdefault("step_time_s_mean", []).append(tau)
        values: dict[int, dict[str, Any]] = {int(e["step"]): e for e in train}
        # Evaluations in log order, each after the step it names (or the previous one).
        afters: list[int] = []
        runtimes: list[float] = []
        keys: list[str] = []
        done = 0
        for _line, e in seg:
            if _entry_kind(e) == "train":
                done = max(done, min(int(e["step"]), n_steps))
            elif _entry_kind(e) == "eval" and place_evals:
                if "step" in e:
                    done = max(done, min(int(e["step"]), n_steps))
                key, rt = _eval_runtime(e)
                afters.append(done)
                runtimes.append(float(rt))
                keys.append(key)
        cum = np.concatenate([[0.0], np.cumsum(runtimes)])
        idx = np.arange(n_steps)
        step_start = t + idx * tau + cum[np.searchsorted(np.asarray(afters, dtype=np.int64), idx, side="right")]
        for j, (after, rt, key) in enumerate(zip(afters, runtimes, keys, strict=True)):
            start = t + after * tau + cum[j]
            events.append(
                {
                    "kind": "eval",
                    "start_s": start,
                    "end_s": start + rt,
                    "attempt": attempt,
                    "rank": -1,
                    "detail": f"{key}={rt:.3f}s after step {after}",
                }
            )
        t = t + n_steps * tau + cum[-1]
        steps = np.arange(1, n_steps + 1)
        cols["attempt"].extend([attempt] * n_steps)
        cols["step"].extend(steps.tolist())
        cols["start_s"].extend(step_start.tolist())
        cols["end_s"].extend((step_start + tau).tolist())
        cols["logged"].extend([int(s) in values for s in steps])
        for f in _POINT_FIELDS:
            cols[f].extend([_num(values[s].get(f)) if s in values else math.nan for s in steps.tolist()])
    return cols, events, facts


def _history_table(segments: list[list[tuple[int | None, dict[str, Any]]]]) -> pd.DataFrame:
    rows = []
    for attempt, seg in enumerate(segments):
        for line, e in seg:
            row: dict[str, Any] = {"attempt": attempt, "line": line, "kind": _entry_kind(e)}
            for k, v in e.items():
                if isinstance(v, (int, float, str)) or v is None:
                    row[k] = v
            rows.append(row)
    df = pd.DataFrame(rows)
    if "line" in df:
        df["line"] = df["line"].astype("Int64")
    return df


# --- trainer_state.json -------------------------------------------------------------------
def _scan_log_history(text: str, reader: Reader) -> tuple[list[tuple[int, Any]], bool]:
    """Entries of ``log_history`` with their line numbers; stops at a truncation (counted)."""
    m = re.search(r'"log_history"\s*:\s*\[', text)
    if not m:
        return [], False
    dec = json.JSONDecoder()
    pos = m.end()
    out: list[tuple[int, Any]] = []
    ws = re.compile(r"[\s,]*")
    while True:
        pos = ws.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            line = text.count("\n", 0, pos) + 1
            reader.bad("truncated JSON", line=line, field="log_history", example=text[-80:])
            return out, True
        if text[pos] == "]":
            return out, False
        try:
            obj, end = dec.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            line = text.count("\n", 0, pos) + 1
            reader.bad(f"truncated or malformed JSON ({exc.msg})", line=line, field="log_history", example=text[pos : pos + 80])
            return out, True
        out.append((text.count("\n", 0, pos) + 1, obj))
        pos = end


def _result_files(path: Path) -> list[Path]:
    """all_results.json & friends beside the state file (same name prefix, or same folder)."""
    name = path.name
    out: list[Path] = []
    for rf in _RESULT_FILES:
        cands = [path.parent / rf]
        if name.endswith("trainer_state.json"):
            cands.insert(0, path.with_name(name[: -len("trainer_state.json")] + rf))
        for c in cands:
            if c.is_file() and c.resolve() != path.resolve() and c.name not in {o.name for o in out}:
                out.append(c)
    return out


def _read_results(files: list[Path], reader: Reader) -> dict[str, Any]:
    """The scalar facts of each results file, by file name.

    One that is not a JSON object is counted (its file, and the line of the JSON error) and
    left out; ``strict=True`` raises naming it.
    """
    found: dict[str, Any] = {}
    for c in files:
        sub = reader.for_file(c, root=c.parent)
        try:
            d = json.loads(open_bytes(c))
        except (ValueError, LoadError) as exc:
            js = exc if isinstance(exc, json.JSONDecodeError) else None
            why = js.msg if js else str(exc)
            at = js.doc[max(0, js.pos - 60) : js.pos + 20] if js else None
            sub.bad(f"unreadable results JSON, left out ({why})", line=js.lineno if js else None, field=c.name, example=at)
            continue
        if not isinstance(d, dict):
            sub.bad("results JSON is not an object, left out", line=1, field=c.name)
            continue
        found[c.name] = {k: v for k, v in d.items() if isinstance(v, (int, float, str))}
    return found


def _load_state(path: Path, reader: Reader) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    text = open_bytes(path).decode("utf-8", errors="replace")
    rep = reader.report
    doc: dict[str, Any] = {}
    try:
        parsed = json.loads(text)
        if isinstance(parsed, dict):
            doc = parsed
    except json.JSONDecodeError as exc:
        if reader.strict:
            raise LoadError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno, field="log_history") from None
        # Salvage what a half-written file still holds.
        for key in ("global_step", "train_batch_size", "logging_steps", "max_steps"):
            m = re.search(rf'"{key}"\s*:\s*(\d+)', text)
            if m:
                doc[key] = int(m.group(1))
    gs = doc.get("global_step")
    if gs is not None and not _is_count(gs):
        m = re.search(r'"global_step"\s*:', text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        reader.bad("global_step is not a non-negative integer (ignored)", line=line, field="global_step", example=repr(gs)[:120])
        del doc["global_step"]
    entries, _ = _scan_log_history(text, reader)
    rep.lines_read = text.count("\n") + 1
    if not doc and not entries:
        reader.fail("no JSON object with a log_history or train_runtime")
    return doc, entries


def _results_run(path: Path, reader: Reader, overrides: dict[str, Any]) -> Run:
    """An ``all_results.json`` alone: facts only, no steps (it holds no step times)."""
    try:
        doc = json.loads(open_bytes(path))
    except json.JSONDecodeError as exc:
        raise LoadError(f"invalid JSON ({exc.msg})", path=path, line=exc.lineno) from None
    if not isinstance(doc, dict):
        reader.fail("expected a JSON object of results")
    reader.report.lines_read = 1
    reader.report.note("a results file holds totals only: no steps; facts in meta.extra['results']")
    meta = RunMeta(
        name=path.stem,
        source_path=str(path),
        source_format=NAME,
        time_unit="s",
        timing="duration_only",
        extra={"results": {path.name: {k: v for k, v in doc.items() if isinstance(v, (int, float, str))}}},
        report=reader.report,
    )
    meta = _apply_overrides(meta, overrides)
    return Run.build(None, None, meta)


def _pick_state(path: Path) -> Path | None:
    if (path / "trainer_state.json").is_file():
        return path / "trainer_state.json"
    ckpts = []
    for c in path.glob("checkpoint-*/trainer_state.json"):
        m = re.search(r"checkpoint-(\d+)$", c.parent.name)
        if m:
            ckpts.append((int(m.group(1)), c))
    if ckpts:
        return max(ckpts)[1]
    named = sorted(path.glob("*trainer_state.json"))
    return named[0] if len(named) == 1 else None


def _note_left_out(folder: Path, read: list[Path], reader: Reader) -> None:
    """Name the Trainer logs in ``folder`` (and its checkpoint states) that this load left out, and why."""
    done = {f.resolve() for f in read}
    left: list[str] = []
    for f in sorted(folder.iterdir()):
        if not f.is_file() or f.name.startswith(".") or f.resolve() in done:
            continue
        try:
            head = read_head(f)
        except OSError:
            continue
        if sniff(f, head) <= 0:
            continue  # not a Trainer log (model weights, configs, tokenizer files, ...)
        h = head.lstrip()
        if h[:1] == b"{" and b'"log_history"' in head:
            why = "another trainer_state.json: one state per load"
        elif h[:1] == b"{" and b'"train_runtime"' in head and b"'" not in h[:200]:
            why = "a results JSON not paired with the file read"
        else:
            why = "Trainer stdout dict lines: a log of its own, possibly of another run"
        left.append(f"{f.name} ({why})")
    if left:
        reader.report.note(
            f"{len(left)} other Trainer file(s) in {folder.name}/ not read (load each by its own path): " + "; ".join(left)
        )
    states = sorted(
        (c for c in folder.glob("checkpoint-*/trainer_state.json") if c.resolve() not in done),
        key=lambda c: (len(c.parent.name), c.parent.name),
    )
    if states:
        shown = ", ".join(c.relative_to(folder).as_posix() for c in states[:3]) + (", ..." if len(states) > 3 else "")
        reader.report.note(
            f"{len(states)} checkpoint state(s) not read ({shown}): the state read holds the latest history of the run"
        )


def _segments(entries: list[tuple[int | None, Any]]) -> list[list[tuple[int | None, dict[str, Any]]]]:
    segs: list[list[tuple[int | None, dict[str, Any]]]] = [[]]
    for line, e in entries:
        segs[-1].append((line, e))
        if _entry_kind(e) == "final":
            segs.append([])
    if not segs[-1] and len(segs) > 1:
        segs.pop()
    return segs


def load(path: str | Path, *, strict: bool = False, **kwargs: Any) -> Run:
    """Read ``trainer_state.json``, a results JSON, an output folder, or stdout dict lines."""
    # Keywords naming RunMeta fields state what the log does not carry; others are an error.
    _, overrides = split_kwargs(kwargs, (), fmt=NAME)
    path = Path(path)
    src = path
    if path.is_dir():
        state = _pick_state(path)
        if state is None:
            res = [path / f for f in _RESULT_FILES if (path / f).is_file()]
            if res:
                sub = Reader(res[0], NAME, strict=strict)
                _note_left_out(path, [res[0]], sub)
                return _results_run(res[0], sub, overrides)
            raise LoadError(
                "no trainer_state.json (nor checkpoint-*/trainer_state.json, nor results JSON) here",
                path=path,
            )
        path = state
    reader = Reader(path, NAME, strict=strict)
    rep = reader.report
    head = open_bytes(path)[:4096].lstrip()
    stdout = not head.startswith(b"{") or b'"log_history"' not in open_bytes(path)
    if not stdout:
        doc, raw_entries = _load_state(path, reader)
    elif head.startswith(b"{") and b"\"train_runtime\"" in head and b"'" not in head[:200]:
        return _results_run(path, reader, overrides)
    else:
        doc, raw_entries = {}, []
        n = 0
        for ln, text in iter_lines(path):
            n += 1
            if "{" not in text:
                continue
            m = _DICT_START_RE.search(text)
            if not m:
                continue
            try:
                raw_entries.append((ln, parse_dict_line(text[m.start() :].rstrip())))
            except ValueError as exc:
                reader.bad("malformed dict line", line=ln, field="dict", example=f"{text[:100]} ({exc})")
        rep.lines_read = n
        if not raw_entries:
            reader.fail(
                "no Trainer dict lines ({'loss': ...} / {'train_runtime': ...}) found"
                + (f"; {rep.total_skipped} malformed" if rep.total_skipped else "")
            )
    entries: list[tuple[int | None, dict[str, Any]]] = []
    for line, e in raw_entries:
        ok = _check_entry(reader, e, line, need_step=not stdout)
        if ok is not None:
            entries.append((line, ok))
    segments = _segments(entries)
    gs = doc.get("global_step")
    global_step = int(gs) if _is_count(gs) and gs > 0 else None
    cols, events, facts = _timeline(segments, reader, global_step=global_step, stdout=stdout)
    steps = cols if cols["step"] else None
    if steps is None and not entries:
        reader.fail("no usable log entries")
    if steps is not None:
        rep.note(
            "no per-step timestamps: train_runtime minus logged evaluation runtimes is spread "
            "evenly over the steps (checkpoint saves stay inside the step time)"
        )
    extra: dict[str, Any] = {k: v for k, v in doc.items() if k != "log_history" and isinstance(v, (int, float, str, bool))}
    extra.update(facts)
    result_files = _result_files(path) if not stdout else []
    results = _read_results(result_files, reader)
    if results:
        extra["results"] = results
    if src.is_dir():
        _note_left_out(src, [path, *result_files], reader)
    for f in facts.get("final", []):
        if "total_flos" in f:
            extra.setdefault("total_flos", f["total_flos"])
    if "total_flos" in extra:
        rep.note("total_flos kept in meta.extra only (HF's 6·params·tokens estimate; shard-local under FSDP)")
    rep.rows_kept = len(cols["step"])
    meta = RunMeta(
        name=src.name.split(".")[0] if src.is_file() else src.name,
        source_path=str(src),
        source_format=NAME,
        time_unit="s",
        timing="duration_only",
        extra=extra,
        report=rep,
    )
    meta = _apply_overrides(meta, overrides)
    tables = {"log_history": _history_table(segments)}
    try:
        run = Run.build(steps, events or None, meta, tables)
    except ValueError as exc:
        raise LoadError(f"log entries do not fit the Run schema: {exc}", path=path) from None
    rep.warn_if_skipped()
    return run


__all__ = ["NAME", "sniff", "load", "parse_dict_line"]
