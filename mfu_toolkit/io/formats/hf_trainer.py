"""Hugging Face ``Trainer`` logs: ``trainer_state.json``, results JSON and the stdout dict lines.

Neither source has per-step timestamps. What they carry, and how it becomes a Run:

- ``train_runtime`` (seconds of ``Trainer.train``, evaluation and checkpoint saves included),
  the number of optimizer steps (``global_step``, or inferred for stdout, below) and the
  duration of every evaluation (``eval_runtime``; also ``predict_runtime`` etc.).
- So the training time is ``train_runtime`` minus the logged evaluation runtimes, spread evenly
  over the steps (``meta.timing = "duration_only"``: the total is exact, the individual step
  durations are a run-wide mean; rows by :func:`~mfu_toolkit.io.timeline.expand`). Evaluations
  become ``eval`` events placed after the step at which they ran; checkpoint saves are not
  logged separately and stay inside the step time (a note says so). Without ``train_runtime`` (a
  run that died) no time can be derived: the steps table stays empty and the logged values are
  still in ``tables["log_history"]``. A gap between logged steps longer than
  :data:`~mfu_toolkit.io.rules.MAX_LOG_INTERVAL` is not expanded into rows: it is counted
  (``step gap too long ...``, with its line) and that attempt gets no step rows; nor is an
  attempt whose rows would pass the load's row budget (``rules.take_rows``; a note says so).
- Logged values (``loss``, ``grad_norm``, ``learning_rate``, ``epoch``) are columns on the
  logged steps only; ``logged`` marks them. ``tables["log_history"]`` keeps every entry.
- ``all_results.json`` / ``train_results.json`` / ``eval_results.json`` beside the state (same
  name prefix or same folder) go to ``meta.extra["results"]``. A results file that is not a
  readable JSON object is counted (file and line of the JSON error) and left out; bytes in it
  that are not UTF-8 are counted (line and key) and replaced, the file kept.
- stdout lines look like Python dicts (``{'loss': 1.2, 'learning_rate': 1e-05, 'epoch': 0.01}``);
  they are read by a converter that accepts literals only (numbers, strings, ``nan``/``inf``,
  ``tensor(x, ...)`` wrappers) and never evaluates code. They carry no step number: the
  logging interval is inferred from ``train_runtime × train_steps_per_second`` ÷ the number of
  loss lines (recorded in ``meta.extra["logging_steps_inferred"]``). Each ``train_runtime`` entry
  closes an attempt; entries after it open the next (:func:`~mfu_toolkit.io.timeline.attempts`).
- Bad entries are counted with their line (the entry's first line in ``trainer_state.json``)
  and field, or raise with ``strict=True``: an entry with a bad step or runtime is skipped; a
  non-numeric ``loss``/``grad_norm``/``learning_rate``/``epoch`` is left missing and the entry
  (its step) kept; a non-integer ``global_step`` is ignored; an entry nested too deeply to read
  is counted and passed over, the entries after it still read.

Claims (what the Trainer says about its own speed, each with the file and line it came from).
The Trainer computes its rates once, at the end of training, in ``speed_metrics``
(transformers ``src/transformers/trainer_utils.py``, called from ``Trainer._inner_training_loop``
in ``trainer.py``): the run's planned amount divided by ``train_runtime``, which spans the whole
training loop, evaluation and checkpoint saves included. So every rate claim has
``basis="end_to_end"``:

- ``samples_per_s`` is ``train_samples_per_second``: all processes together (``max_steps`` ×
  per-device batch × gradient accumulation × world size, or the dataset size × epochs);
- ``tokens_per_s_per_accelerator`` is ``train_tokens_per_second`` (written with
  ``include_tokens_per_second``): the tokens of one process's dataloader, per device;
- ``train_steps_per_second`` (``max_steps`` / ``train_runtime``) has no claim metric of its own:
  the samples claim's text quotes it.

A rate that is not a positive finite number is no rate: a note names it, no claim. ``total_flos``
is HF's own estimate of the run's FLOPs (6 · parameters · tokens; under FSDP/sharding it counts
the local shard's parameters, so it is never used as model FLOPs). A ``total_flos`` of 0.0 means
the Trainer did not compute it (FSDP), not zero work: no claim then, a note instead.
``total_flos`` is also kept in ``meta.extra``.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, parse_json, read_head
from ..values import number

NAME = "hf_trainer"
INTERVAL_NO_ROWS = "step gap too long to be one log interval (no step rows for this attempt)"
MALFORMED_DICT_LINE = "malformed dict line"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """The HF Trainer format takes no options besides the RunMeta keywords."""


_DICT_START_RE = re.compile(r"\{['\"]")
_SNIFF_TEXT_RE = re.compile(
    rb"\{'(?:loss|train_runtime|eval_loss|learning_rate|grad_norm|eval_runtime)'\s*:"
)
_LOG_HISTORY_RE = re.compile(r'"log_history"\s*:\s*\[')
_WS_RE = re.compile(r"[\s,]*")
_SPECIAL_RE = re.compile(r'[\[\]{}"]')
_IN_STRING_RE = re.compile(r'["\\]')
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
# Read as numbers: checked per entry.
_NUMERIC_FIELDS = (*_POINT_FIELDS, "train_steps_per_second", "train_samples_per_second", "train_tokens_per_second",
                   "total_flos")
_STATE_KEYS = ("global_step", "train_batch_size", "logging_steps", "max_steps")


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
    except (SyntaxError, RecursionError, MemoryError, TypeError, OverflowError) as exc:
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
        if b'"_wandb"' in head or b'"_timestamp"' in head or b'"_runtime"' in head:
            return 0.0  # a W&B summary that holds the Trainer's final values
        if h[:1] == b"{" and b'"train_runtime"' in head and b'"train_samples_per_second"' in head:
            return 0.8
        hits = len(_SNIFF_TEXT_RE.findall(head))
        if hits:
            return 0.9 if hits >= 2 else 0.7
        return 0.0
    except Exception:
        return 0.0


# --- values and entries -----------------------------------------------------------------------
# A value of the JSON log: a JSON number (a quoted "12" is no number; NaN and infinity, which
# Python's json writes, kept), else NaN.
_JSON_NUMBER: dict[str, Any] = {"text": False, "nonfinite": "keep", "default": math.nan}


def _count(v: Any) -> int | None:
    """A step number (a non-negative integer, or a float with no fraction, that fits int64)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return rules.as_step(v)


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


def _check_entry(reader: Reader, e: Any, line: int | None, *, need_step: bool) -> dict[str, Any] | None:
    """Validate one log entry (dict, finite non-negative runtimes, integer step)."""
    if not isinstance(e, dict):
        reader.bad(rules.NOT_AN_OBJECT, line=line, example=repr(e)[:120])
        return None
    e = {str(k): v for k, v in e.items()}
    if need_step and _entry_kind(e) == "train" and "step" not in e:
        reader.bad(rules.MISSING_FIELD, line=line, field="step", example=repr(e)[:160],
                   detail="a training entry without its step")
        return None
    for k, v in e.items():
        if k.endswith("_runtime"):
            f = number(v, **_JSON_NUMBER)
            if not math.isfinite(f):
                reader.bad(rules.NON_FINITE_TIME, line=line, field=k, example=repr(e)[:160])
                return None
            if f < 0:
                reader.bad(rules.NEGATIVE_DURATION, line=line, field=k, example=repr(e)[:160])
                return None
    if "step" in e:
        step = _count(e["step"])
        if step is None:
            reader.bad(rules.BAD_STEP, line=line, field="step", example=repr(e)[:160])
            return None
        e["step"] = step
    for k in _NUMERIC_FIELDS:  # a bad value is left missing; the entry (its step) stays
        v = e.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            reader.bad(rules.NON_NUMERIC, line=line, field=k, example=repr(v)[:120])
            e[k] = None
    return e


# --- entries → timeline ---------------------------------------------------------------------
_Segment = list[tuple[int | None, dict[str, Any]]]


def _too_long(reader: Reader, line: int | None, field: str, gap: float) -> None:
    reader.bad(INTERVAL_NO_ROWS, line=line, field=field,
               example=f"a gap of {gap:.6g} steps (at most {rules.MAX_LOG_INTERVAL:,} are expanded)")


def _n_steps(seg: _Segment, reader: Reader, *, global_step: tuple[int, int | None] | None, stdout: bool,
             facts: dict[str, Any]) -> int:
    """How many optimizer steps one attempt ran (-1 when its gaps are too long to expand: counted)."""
    train = [(ln, e) for ln, e in seg if _entry_kind(e) == "train"]
    finals = [(ln, e) for ln, e in seg if _entry_kind(e) == "final"]
    if stdout:
        k = 1.0
        if finals and train:
            final = finals[-1][1]
            rt = number(final.get("train_runtime"), **_JSON_NUMBER)
            sps = number(final.get("train_steps_per_second"), **_JSON_NUMBER)
            if math.isfinite(sps) and math.isfinite(rt) and sps > 0:
                k = max(1.0, rt * sps / len(train))
        if not (math.isfinite(k) and rules.interval_ok(round(k))):
            _too_long(reader, finals[-1][0], "train_steps_per_second", k)
            return -1
        facts.setdefault("logging_steps_inferred", []).append(round(k))
        for i, (_, e) in enumerate(train, start=1):
            e.setdefault("step", i * round(k))
        return len(train) * round(k)
    marks = sorted((e["step"], ln, "step") for ln, e in seg if "step" in e)
    if global_step is not None:
        marks.append((global_step[0], global_step[1], "global_step"))
    prev = 0
    for step, ln, fld in sorted(marks, key=lambda m: m[0]):
        if step - prev > rules.MAX_LOG_INTERVAL:
            _too_long(reader, ln, fld, step - prev)
            return -1
        prev = step
    return prev


def _eval_places(seg: _Segment, n_steps: int) -> tuple[list[int], list[float], list[str]]:
    """Each evaluation, in log order, after the step it names (or the previous one)."""
    afters: list[int] = []
    runtimes: list[float] = []
    keys: list[str] = []
    done = 0
    for _line, e in seg:
        kind = _entry_kind(e)
        if kind == "train" or (kind == "eval" and "step" in e):
            done = max(done, min(int(e["step"]), n_steps))
        if kind == "eval":
            key, rt = _eval_runtime(e)
            afters.append(done)
            runtimes.append(number(rt, **_JSON_NUMBER))
            keys.append(key)
    return afters, runtimes, keys


def _attempt_rows(seg: _Segment, attempt: int, t: float, n_steps: int, reader: Reader,
                  cols: dict[str, list[Any]], events: list[dict[str, Any]], facts: dict[str, Any]) -> float:
    """Append one attempt's step rows and eval events; return the time its last one ends."""
    if n_steps < 0:  # not expanded (counted or noted already)
        return t
    final = next((e for _, e in reversed(seg) if _entry_kind(e) == "final"), None)
    runtime = number(final.get("train_runtime"), **_JSON_NUMBER) if final is not None else math.nan
    if not math.isfinite(runtime) or n_steps <= 0:
        if seg:
            reader.note(
                f"attempt {attempt}: no train_runtime (or no steps) logged, so no step times can "
                "be derived; the logged values are in tables['log_history']"
            )
        return t
    afters, runtimes, keys = _eval_places(seg, n_steps)
    eval_total = float(sum(runtimes))
    train_time = runtime - eval_total
    if not train_time > 0:
        reader.note(
            f"attempt {attempt}: logged evaluation runtimes ({eval_total:.1f} s) exceed "
            f"train_runtime ({runtime:.1f} s); evaluations not subtracted nor placed"
        )
        train_time, afters, runtimes, keys = runtime, [], [], []
    tau = train_time / n_steps
    facts.setdefault("step_time_s_mean", []).append(tau)
    cum = np.concatenate([[0.0], np.cumsum(runtimes)])
    # the attempt is one record of n_steps steps from t, each tau long; evaluations then push later steps on
    ex = timeline.expand(np.array([n_steps]), np.array([n_steps]), np.array([n_steps]), np.array([t]),
                         place="duration", share=np.array([tau]))
    step_start = ex.start + cum[np.searchsorted(np.asarray(afters, dtype=np.int64), ex.step - 1, side="right")]
    for j, (after, rt, key) in enumerate(zip(afters, runtimes, keys, strict=True)):
        start = t + after * tau + cum[j]
        events.append({"kind": "eval", "start_s": start, "end_s": start + rt, "attempt": attempt, "rank": -1,
                       "detail": f"{key}={rt:.3f}s after step {after}"})
    values = {int(e["step"]): e for _, e in seg if _entry_kind(e) == "train"}
    steps = ex.step.tolist()
    cols["attempt"].extend([attempt] * n_steps)
    cols["step"].extend(steps)
    cols["start_s"].extend(step_start.tolist())
    cols["end_s"].extend((step_start + tau).tolist())
    cols["logged"].extend([s in values for s in steps])
    for f in _POINT_FIELDS:
        cols[f].extend([number(values[s].get(f), **_JSON_NUMBER) if s in values else math.nan for s in steps])
    return t + n_steps * tau + float(cum[-1])


def _timeline(
    segments: list[_Segment], reader: Reader, *, global_step: tuple[int, int | None] | None, stdout: bool
) -> tuple[dict[str, list[Any]], list[dict[str, Any]], dict[str, Any]]:
    """Lay out steps and eval events from entry segments (one per attempt)."""
    cols: dict[str, list[Any]] = {k: [] for k in ("attempt", "step", "start_s", "end_s", "logged", *_POINT_FIELDS)}
    events: list[dict[str, Any]] = []
    facts: dict[str, Any] = {}
    t = 0.0
    for attempt, seg in enumerate(segments):
        for _, e in seg:
            if _entry_kind(e) == "final":
                facts.setdefault("final", []).append({k: v for k, v in e.items()
                                                      if not math.isnan(number(v, **_JSON_NUMBER))})
                break
        last = attempt == len(segments) - 1
        n = _n_steps(seg, reader, global_step=global_step if last else None, stdout=stdout, facts=facts)
        logged = sum(1 for _, e in seg if _entry_kind(e) == "train")
        if n > logged and not rules.take_rows(n - logged):  # the load's budget of invented rows (see rules)
            reader.note(f"attempt {attempt}: {n:,} step rows would pass this load's budget of rows; not "
                        "expanded, so no step rows for it; the logged values are in tables['log_history']")
            n = -1
        before = (len(cols["step"]), len(events))
        t = _attempt_rows(seg, attempt, t, n, reader, cols, events, facts)
        if (len(cols["step"]), len(events)) == before:  # a Run keeps an attempt without rows as an event
            events.append({"kind": "other", "start_s": t, "end_s": t, "attempt": attempt, "rank": -1,
                           "detail": f"attempt {attempt}: no step rows (the note says why)"})
    return cols, events, facts


def _history_table(segments: list[_Segment]) -> pd.DataFrame:
    rows = []
    for attempt, seg in enumerate(segments):
        for line, e in seg:
            row: dict[str, Any] = {"attempt": attempt, "line": line, "kind": _entry_kind(e)}
            for k, v in e.items():
                if isinstance(v, (int, float, str)) or v is None:
                    row.setdefault(k, v)
            rows.append(row)
    df = pd.DataFrame(rows)
    if "line" in df:
        df["line"] = df["line"].astype("Int64")
    return df


def _segments(entries: list[tuple[int | None, dict[str, Any]]]) -> list[_Segment]:
    """The entries of each attempt: a ``train_runtime`` entry closes one, so the entry after it opens the
    next (its launch marker for ``timeline.attempts``; step numbers open none). No entries: one empty attempt."""
    if not entries:
        return [[]]
    after_final = [False] + [_entry_kind(e) == "final" for _, e in entries[:-1]]
    att = timeline.attempts(launches=np.array(after_final, dtype=bool), resets=None)
    segs: list[_Segment] = [[] for _ in range(int(att[-1]) + 1)]
    for a, entry in zip(att.tolist(), entries, strict=True):
        segs[a].append(entry)
    return segs


# --- trainer_state.json -------------------------------------------------------------------
def _skip_value(text: str, pos: int) -> int | None:
    """Where the JSON array or object starting at ``pos`` ends (brackets balanced outside
    strings), or None when the text ends first. Linear, and without recursion."""
    depth = 0
    while True:
        m = _SPECIAL_RE.search(text, pos)
        if m is None:
            return None
        pos = m.end()
        c = m.group()
        if c == '"':
            while True:
                s = _IN_STRING_RE.search(text, pos)
                if s is None:
                    return None
                pos = s.end() + (s.group() == "\\")  # an escape: the next character is plain
                if s.group() == '"':
                    break
        elif c in "[{":
            depth += 1
        else:
            depth -= 1
        if depth <= 0:
            return pos


def _scan_log_history(text: str, reader: Reader, spans: dict[int, tuple[int, int]]) -> list[tuple[int, Any]]:
    """Entries of ``log_history`` with their first line (``spans``: line -> the entry's text span);
    stops at a truncation (counted), passes over (and counts) an entry nested too deeply or
    holding an unreadable number."""
    m = _LOG_HISTORY_RE.search(text)
    if not m:
        return []
    from json import JSONDecodeError, JSONDecoder

    dec = JSONDecoder()
    pos, line, counted = m.end(), 1, 0
    out: list[tuple[int, Any]] = []
    while True:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        line, counted = line + text.count("\n", counted, pos), pos
        if pos >= len(text):
            reader.bad(rules.JSON_REST_UNREAD, line=line, field="log_history", example=text[-80:],
                       detail="truncated: the file ends inside log_history")
            return out
        if text[pos] == "]":
            return out
        try:
            obj, end = dec.raw_decode(text, pos)
        except JSONDecodeError as exc:
            reader.bad(rules.JSON_REST_UNREAD, line=line, field="log_history", example=text[pos : pos + 80],
                       detail=f"truncated or broken: {exc.msg}")
            return out
        except (RecursionError, ValueError) as exc:  # too deep, or an integer with too many digits
            why, detail = ((rules.JSON_TOO_DEEP, "entry passed over") if isinstance(exc, RecursionError)
                           else (rules.MALFORMED_JSON, f"{exc}; entry passed over"))
            reader.bad(why, line=line, field="log_history", example=text[pos : pos + 80], detail=detail)
            end = _skip_value(text, pos) if text[pos] in "[{" else None
            if end is None:
                return out
            pos = end
            continue
        out.append((line, obj))
        spans[line] = (pos, end)
        pos = end


def _salvage_keys(text: str) -> dict[str, Any]:
    """The top-level counts a half-written or unreadable state still shows."""
    doc: dict[str, Any] = {}
    for key in _STATE_KEYS:
        m = re.search(rf'"{key}"\s*:\s*(\d{{1,18}})(?![\d.eE])', text)
        if m:
            doc[key] = int(m.group(1))
    return doc


def _read_state(reader: Reader, text: str,
                spans: dict[int, tuple[int, int]]) -> tuple[dict[str, Any], list[tuple[int, Any]]]:
    """The state's top-level scalars and its ``log_history`` entries (with their lines)."""
    reader.report.lines_read += text.count("\n") + 1
    parsed, why, at = parse_json(text)
    entries = _scan_log_history(text, reader, spans)
    if why is not None:
        if reader.strict:
            reader.fail(f"invalid JSON ({rules.in_full(why)})", line=at, field="log_history")
        doc = _salvage_keys(text)  # what a half-written file still holds
    else:
        doc = parsed if isinstance(parsed, dict) else {}
    gs = doc.get("global_step")
    if gs is not None and _count(gs) is None:
        m = re.search(r'"global_step"\s*:', text)
        line = text.count("\n", 0, m.start()) + 1 if m else None
        reader.bad(rules.BAD_STEP, line=line, field="global_step", example=repr(gs)[:120], detail="global_step ignored")
        del doc["global_step"]
    if "global_step" in doc:
        m = re.search(r'"global_step"\s*:', text)
        doc["_global_step_line"] = text.count("\n", 0, m.start()) + 1 if m else None
    if not doc and not entries:
        reader.fail("no JSON object with a log_history or train_runtime")
    return doc, entries


# --- results files ----------------------------------------------------------------------------
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


def _utf8_text(sub: Reader) -> str:
    """The file's text; bytes that are not UTF-8 are counted (line and key) and replaced."""
    raw = sub.bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = raw.decode("utf-8", errors="replace")
        line = raw.count(b"\n", 0, exc.start) + 1
        before = raw[raw.rfind(b"\n", 0, exc.start) + 1 : exc.start].decode("utf-8", errors="replace")
        key = re.findall(r'"([^"\n]{1,80})"\s*:', before)  # the key whose value holds the byte
        sub.bad(rules.NOT_UTF8, line=line, field=key[-1] if key else sub.path.name,
                example=repr(raw[max(0, exc.start - 40) : exc.start + 20])[:120])
    return text[1:] if text.startswith("\ufeff") else text


def _read_results(files: list[Path], reader: Reader) -> dict[str, tuple[dict[str, Any], str]]:
    """The scalar values of each results file (and its text), by file name.

    One that is not a JSON object is counted (its file, and the line of the JSON error) and
    left out; ``strict=True`` raises naming it.
    """
    found: dict[str, tuple[dict[str, Any], str]] = {}
    for c in files:
        sub = reader.for_file(c, root=c.parent)
        text = _utf8_text(sub)
        d, why, at = parse_json(text)
        if why is not None:
            sub.bad(rules.FILE_LEFT_OUT, line=at, field=c.name, detail=f"results file: {rules.in_full(why)}")
            continue
        if not isinstance(d, dict):
            sub.bad(rules.FILE_LEFT_OUT, line=1, field=c.name, detail="results file: not a JSON object")
            continue
        found[c.name] = ({k: v for k, v in d.items() if isinstance(v, (int, float, str))}, text)
    return found


# --- claims -----------------------------------------------------------------------------------
@dataclass
class _Final:
    """The final values of one attempt (or of a results file), and where they are written."""

    file: str
    line: int | None
    values: dict[str, Any]
    text: str | None = None  # the JSON text holding them, to find each key's line
    span: tuple[int, int] | None = None

    def where(self, key: str) -> str:
        line = self.line
        if self.text is not None:
            a, b = self.span or (0, len(self.text))
            i = self.text.find(f'"{key}"', a, b)
            if i >= 0:
                line = (self.line or 1) + self.text.count("\n", a, i)
        return f"{self.file}:{line or 1}"


# What the Trainer's rates count: transformers computes them in speed_metrics,
# https://github.com/huggingface/transformers/blob/main/src/transformers/trainer_utils.py
# (num / (time.time() - start_time), rounded to 3 decimals), with the amounts set up in
# Trainer._inner_training_loop,
# https://github.com/huggingface/transformers/blob/main/src/transformers/trainer.py
# 1. num_train_samples = max_steps × total_train_batch_size (per-device batch × gradient accumulation
#    × world size), or the dataset size × num_train_epochs: the planned run, all processes together;
# 2. num_train_tokens (include_tokens_per_second) comes from one process's dataloader: "the number of
#    tokens per second per device" (TrainingArguments, include_tokens_per_second);
# 3. start_time is taken before the loop and speed_metrics runs after it, so train_runtime holds every
#    evaluation and checkpoint save (and, on resume, the batches skipped to reach the checkpoint).
_SPEED = "transformers trainer_utils.speed_metrics"
_RATES = (
    ("train_samples_per_second", "samples_per_s", "samples/s",
     "HF Trainer's train_samples_per_second ({src}): the run's planned training samples, all processes together "
     "(max_steps × per-device batch × gradient accumulation × world size, or dataset size × epochs), / "
     "train_runtime ({rt}: the whole Trainer.train call, evaluation and checkpoint saves included); a launch "
     "resumed from a checkpoint still counts the steps it skipped{steps}"),
    ("train_steps_per_second", "steps_per_s", "steps/s",
     "HF Trainer's train_steps_per_second ({src}): the run's planned optimizer steps (max_steps) / train_runtime "
     "({rt}: the whole Trainer.train call, evaluation and checkpoint saves included)"),
    ("train_tokens_per_second", "tokens_per_s_per_accelerator", "tokens/s per device",
     "HF Trainer's train_tokens_per_second ({src}, include_tokens_per_second): the tokens one process's dataloader "
     "yields over the planned run (per device, padding included) / train_runtime ({rt}: the whole Trainer.train "
     "call, evaluation and checkpoint saves included)"),
)


def _final_values(finals: list[_Final], key: str) -> list[tuple[float, str]]:
    """``key``'s values, each with where it is written, from the log's own final entries, else from the
    first results file that holds a finite one."""
    got = [f for f in finals if f.values.get(key) is not None]
    if not got:
        return []
    finite = [f for f in got if number(f.values[key], text=False) is not None]
    first = (finite or got)[0]
    return [(number(f.values[key], **_JSON_NUMBER), f.where(key)) for f in got if f.file == first.file]


def _is_rate(v: float) -> bool:
    return math.isfinite(v) and v > 0


def _rate_claims(out: Parsed, finals: list[_Final], reader: Reader) -> None:
    """The Trainer's end-to-end rates; one that is not a positive finite number is noted, not claimed."""
    rts = [v for v, _ in _final_values(finals, "train_runtime")]
    rt = f"{rts[0]:.10g} s" if len(rts) == 1 else "each attempt's own"
    steps = [v for v, _ in _final_values(finals, "train_steps_per_second") if _is_rate(v)]
    steps_text = f"; train_steps_per_second {steps[0]:g} (max_steps / train_runtime)" if len(steps) == 1 else ""
    for key, metric, unit, counts in _RATES:
        values = _final_values(finals, key)
        good = [(v, w) for v, w in values if _is_rate(v)]
        for v, w in values:
            if not _is_rate(v):
                reader.note(f"{key} {v:g} at {w} is no rate (speed_metrics writes a positive finite one, or none): "
                            "left out of the claim")
        if good:
            out.claim(Claim.summarise(metric, [v for v, _ in good], unit=unit, where=good[0][1], basis="end_to_end",
                                      counts=counts.format(src=_SPEED, rt=rt, steps=steps_text)))


def _claims(out: Parsed, finals: list[_Final], reader: Reader) -> None:
    """The end-to-end rates and total_flos from the final log entries, else from a results file."""
    _rate_claims(out, finals, reader)
    found = [(v, w) for v, w in _final_values(finals, "total_flos") if math.isfinite(v)]
    flos, where = [v for v, _ in found], (found[0][1] if found else "")
    if flos and all(f == 0.0 for f in flos):
        reader.note(f"total_flos is 0.0 at {where}: the Trainer did not compute it (as under FSDP), "
                    "not zero work; no total_flos claim")
        return
    if any(f < 0 for f in flos):
        reader.note(f"a negative total_flos at {where} is no estimate: left out of the claim")
    out.claim(Claim.summarise("total_flos", [f for f in flos if f > 0], unit="FLOP", where=where, counts=(
        "HF Trainer's own estimate of the whole run's floating-point operations (6 × parameters × "
        "tokens; under FSDP/sharding the local shard's parameters); never used as model FLOPs")))


# --- folders --------------------------------------------------------------------------------
def _pick_state(path: Path) -> Path | None:
    if (path / "trainer_state.json").is_file():
        return path / "trainer_state.json"
    ckpts = []
    for c in path.glob("checkpoint-*/trainer_state.json"):
        m = re.search(r"checkpoint-(\d{1,18})$", c.parent.name)
        if m:
            ckpts.append((int(m.group(1)), c))
    if ckpts:
        return max(ckpts)[1]
    named = sorted(path.glob("*trainer_state.json"))
    return named[0] if len(named) == 1 else None


def _left_out_why(head: bytes) -> str:
    h = head.lstrip()
    if h[:1] == b"{" and b'"log_history"' in head:
        return "another trainer_state.json: one state per load"
    if h[:1] == b"{" and b'"train_runtime"' in head and b"'" not in h[:200]:
        return "a results JSON not paired with the file read"
    return "Trainer stdout dict lines: a log of its own, possibly of another run"


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
        if sniff(f, head) > 0:  # else not a Trainer log (model weights, configs, tokenizer files, ...)
            left.append(f"{f.name} ({_left_out_why(head)})")
    if left:
        reader.note(
            f"{len(left)} other Trainer file(s) in {folder.name}/ not read (load each by its own path): "
            + "; ".join(left)
        )
    states = sorted(
        (c for c in folder.glob("checkpoint-*/trainer_state.json") if c.resolve() not in done),
        key=lambda c: (len(c.parent.name), c.parent.name),
    )
    if states:
        shown = ", ".join(c.relative_to(folder).as_posix() for c in states[:3]) + (", ..." if len(states) > 3 else "")
        reader.note(
            f"{len(states)} checkpoint state(s) not read ({shown}): the state read holds the latest history of the run"
        )


# --- the three inputs -------------------------------------------------------------------------
def _results_only(sub: Reader, top: Reader) -> Parsed:
    """An ``all_results.json`` alone: facts only, no steps (it holds no step times)."""
    text = _utf8_text(sub)
    doc, why, at = parse_json(text)
    if why is not None:
        sub.fail(f"invalid JSON ({rules.in_full(why)})", line=at)
    if not isinstance(doc, dict):
        sub.fail("expected a JSON object of results")
    sub.report.lines_read += 1  # one record: the results object
    top.note("a results file holds totals only: no steps; facts in the run's metadata (extra['results'])")
    values = {k: v for k, v in doc.items() if isinstance(v, (int, float, str))}
    out = Parsed(timing="duration_only", time_unit="s", extra={"results": {sub.path.name: values}})
    out.meta["name"] = sub.path.stem
    _claims(out, [_Final(sub.name, 1, values, text)], top)
    return out


def _stdout_entries(reader: Reader) -> list[tuple[int, Any]]:
    entries: list[tuple[int, Any]] = []
    n = 0
    for ln, text in reader.lines():
        n += 1
        m = _DICT_START_RE.search(text) if "{" in text else None
        if not m:
            continue
        try:
            entries.append((ln, parse_dict_line(text[m.start() :].rstrip())))
        except ValueError as exc:
            reader.bad(MALFORMED_DICT_LINE, line=ln, field="dict", example=f"{text[:100]} ({exc})")
    reader.report.lines_read = n
    if not entries:
        reader.fail(
            "no Trainer dict lines ({'loss': ...} / {'train_runtime': ...}) found"
            + (f"; {reader.report.total_skipped} malformed" if reader.report.total_skipped else "")
        )
    return entries


def _finals(segments: list[_Segment], sub: Reader, text: str | None,
            spans: dict[int, tuple[int, int]]) -> list[_Final]:
    """The final entry of each attempt, with where its keys are written."""
    return [_Final(sub.name, ln, e, text, spans.get(ln) if ln is not None else None)
            for seg in segments for ln, e in seg if _entry_kind(e) == "final"]


def parse(reader: Reader, options: Options) -> Parsed:
    """Read ``trainer_state.json``, a results JSON, an output folder, or stdout dict lines."""
    src = reader.path
    path = src
    if src.is_dir():
        state = _pick_state(src)
        if state is None:
            res = [src / f for f in _RESULT_FILES if (src / f).is_file()]
            if not res:
                reader.fail("no trainer_state.json (nor checkpoint-*/trainer_state.json, nor results JSON) here")
            _note_left_out(src, [res[0]], reader)
            return _results_only(reader.for_file(res[0]), reader)
        path = state
    sub = reader if path == src else reader.for_file(path)
    head = sub.head(4096).lstrip(b"\xef\xbb\xbf \t\r\n")  # a BOM or blank lines before the JSON
    text = sub.text() if head.startswith(b"{") else None
    if text is not None and '"log_history"' in text:
        spans: dict[int, tuple[int, int]] = {}
        doc, raw_entries = _read_state(sub, text, spans)
        return _from_entries(reader, sub, doc, raw_entries, text=text, spans=spans)
    if head.startswith(b"{") and b'"train_runtime"' in head and b"'" not in head[:200]:
        return _results_only(sub, reader)
    return _from_entries(reader, sub, {}, _stdout_entries(sub), text=None, spans={})


def _from_entries(reader: Reader, sub: Reader, doc: dict[str, Any], raw: list[tuple[int, Any]],
                  *, text: str | None, spans: dict[int, tuple[int, int]]) -> Parsed:
    """Steps, events, results, claims and notes from the checked log entries."""
    stdout = text is None
    entries = [(ln, ok) for ln, e in raw if (ok := _check_entry(sub, e, ln, need_step=not stdout)) is not None]
    segments = _segments(entries)
    gs = _count(doc.get("global_step"))
    global_step = (gs, doc.get("_global_step_line")) if gs else None
    cols, events, facts = _timeline(segments, sub, global_step=global_step, stdout=stdout)
    if not cols["step"] and not entries:
        sub.fail("no usable log entries")
    if cols["step"]:
        reader.note("no per-step timestamps: train_runtime minus logged evaluation runtimes is spread "
                    "evenly over the steps (checkpoint saves stay inside the step time)")
    extra: dict[str, Any] = {k: v for k, v in doc.items() if k not in ("log_history", "_global_step_line")
                             and isinstance(v, (int, float, str, bool))}
    extra.update(facts)
    result_files = _result_files(sub.path) if not stdout else []
    results = _read_results(result_files, reader)
    if results:
        extra["results"] = {k: v for k, (v, _) in results.items()}
    if reader.path.is_dir():
        _note_left_out(reader.path, [sub.path, *result_files], reader)
    finals = _finals(segments, sub, text, spans)
    for f in finals:
        if not math.isnan(number(f.values.get("total_flos"), **_JSON_NUMBER)):  # a number, not NaN
            extra.setdefault("total_flos", f.values["total_flos"])
    finals += [_Final(str(sub.path.parent / name), 1, values, rtext) for name, (values, rtext) in results.items()]
    if "total_flos" in extra:
        reader.note("total_flos is HF's 6·params·tokens estimate (shard-local under FSDP): "
                    "a claim, kept in the run's metadata (extra['total_flos']) too, never used as model FLOPs")
    out = Parsed(steps=cols if cols["step"] else None, events=events or None, timing="duration_only",
                 time_unit="s", extra=extra, tables={"log_history": _history_table(segments)})
    out.meta["name"] = reader.path.name.split(".")[0] if not reader.path.is_dir() else reader.path.name
    _claims(out, finals, reader)
    return out


load = loader_for(NAME)

__all__ = ["NAME", "Options", "sniff", "parse", "load", "parse_dict_line"]
