"""LLaMA-Factory ``trainer_log.jsonl``: one JSON line per Trainer log, with its step and elapsed time.

LLaMA-Factory's ``LogCallback`` (``src/llamafactory/train/callbacks.py``; ``extras/callbacks.py`` before
v0.8.3, under ``src/llmtuner`` before v0.8.0) appends a line to ``<output_dir>/trainer_log.jsonl`` on every
``on_log`` of the Hugging Face Trainer: ``current_steps`` (the Trainer's ``global_step``), ``total_steps``
(``max_steps``), ``loss``, ``eval_loss``/``predict_loss``, the learning rate, ``epoch``, ``percentage``,
``elapsed_time`` and ``remaining_time``. ``elapsed_time`` is ``str(timedelta(seconds=int(now - start_time)))``:
whole seconds (truncated) since the launch's ``on_train_begin``, spelled ``H:MM:SS`` or ``1 day, 0:08:23``.
The keys drifted (checked against the project's history): the learning rate is ``learning_rate`` up to v0.9.1
and ``lr`` from v0.9.2 (commit 647c51a, 2025-01); ``throughput``/``total_tokens`` came in v0.8.0 as the *text*
``"{:.2f}"`` of ``num_input_tokens_seen / elapsed``, written on every line (``"0.00"`` and 0 when the Trainer
counts no tokens), and since v0.9.0 as a number written only when tokens were counted. A line with no
``loss`` and no ``eval_loss`` but an ``epoch`` is the Trainer's final log (the ``train_runtime`` entry) and
still carries the step reached; a line with no ``epoch`` is evaluation-only progress (every 5 prediction
steps) and no training step.

What becomes of it (a :class:`~mfu_toolkit.run.Run`, ``meta.timing = "interval_mean"``):

- **Attempts**: a launch's clock starts at zero, so a line whose ``elapsed_time`` falls below the largest of
  its attempt by more than ``max(5, min(reset_tolerance_s, that largest / 2))`` seconds opens the next attempt
  (``timeline.attempts`` with these launch marks): another process's copy of a line is seconds apart,
  a relaunch starts again near zero. Nothing in the file says when a launch began on the wall clock, so the
  attempts are placed back to back, each as long as its largest ``elapsed_time`` (the wall time is a lower
  bound, noted); each later attempt opens with a zero-length ``restart`` event and each earlier one ends with
  a zero-length ``failure`` event (the log stops before the last step; it does not say why). Steps a later
  attempt logs again were computed, then redone: the accounting counts them as lost work.
- **Copies**: with more than one writer every step is written more than once, out of order: up to v0.7.0
  the local rank 0 of every node wrote (``is_local_process_zero``, then ``should_log``; commit 1fea917 made it
  ``should_save``), and two jobs sharing an output folder both write. Per attempt and step one record is kept,
  at the earliest time any line reports it; a step is also done no later than any later step is reported,
  so each record's time is the least over itself and the later steps (a suffix minimum: monotone by
  construction, never a dropped line). The copies are counted (``extra['collapsed_lines']``, a note with the
  largest spread between copies of one step); ``tables['log']`` keeps every line.
- **Steps**: each kept record ends a log interval (``timeline.log_interval``, ``interval_rows``, ``expand``):
  the steps since the previous record share its time evenly, an evaluation logged in between cut out first
  (``eval`` event from the record at the evaluated step to the ``eval_loss`` line). ``loss``, ``lr`` and
  ``epoch`` sit on the logged row. ``rank = -1``: the file is job-level.
- **Facts**: ``framework`` (the LogCallback's keys). ``extra``: ``total_steps``, ``epochs`` (the largest
  ``epoch``), ``log_interval``, the key schema, ``wall_s_lower_bound``.
- **Claims**: ``throughput`` where it was measured (a positive number with ``total_tokens`` above 0; the
  v0.8 text ``"0.00"`` with ``total_tokens`` 0 is a placeholder, noted, no claim): ``tokens_per_s``,
  ``basis="end_to_end"``, the value on the first attempt's last line (a cumulative mean since that launch's
  ``on_train_begin``; a resumed launch divides tokens counted since the first launch by its own clock, so no
  later attempt is claimed).
- **Beside it**: LLaMA-Factory's workflows call ``trainer.save_metrics("train", ...)`` and
  ``trainer.save_state()`` on the same ``output_dir`` (``src/llamafactory/train/sft/workflow.py``), so
  ``all_results.json``/``train_results.json`` and ``trainer_state.json`` in the log's folder belong to its run
  when the log is named ``trainer_log.jsonl`` (a log named ``<prefix>trainer_log.jsonl`` pairs only with the files
  of the same prefix). They go to ``extra['results']`` and ``extra['trainer_state']``; ``train_batch_size`` is a
  ``micro_batch`` fact, ``logging_steps`` the log interval. The results' rates (``train_samples_per_second``,
  ``train_steps_per_second``, LLaMA-Factory's ``effective_tokens_per_sec``) and ``total_flos`` are end-to-end
  claims, for a run of one attempt only: ``train_runtime`` spans the last launch, the rates its planned totals.

Bad lines (not JSON, not an object, no ``current_steps`` or ``elapsed_time``, a step that is no count) are
counted with their line, or raise with ``strict=True``; a non-numeric ``loss``/learning rate is left missing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader, parse_json
from ..values import duration, number

NAME = "llamafactory"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)
LOG_NAME = "trainer_log.jsonl"


@dataclass(frozen=True)
class Options:
    """What the llamafactory format accepts besides the RunMeta keywords.

    ``reset_tolerance_s``: an ``elapsed_time`` at least this far (seconds; less for a launch shorter than
    twice this) below the largest of its attempt opens a new attempt. ``log_interval``: steps per logged
    line (the Trainer's ``logging_steps``); ``None`` takes ``trainer_state.json``'s, else the most common gap.
    """

    reset_tolerance_s: float = 60.0
    log_interval: int | None = None

    def __post_init__(self) -> None:
        tol = self.reset_tolerance_s
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not math.isfinite(tol) or tol <= 0:
            raise ValueError(f"reset_tolerance_s must be a finite number of seconds > 0; got {tol!r}")


_KEYS = (b'"current_steps"', b'"elapsed_time"', b'"total_steps"')
_RESULT_FILES = ("all_results.json", "train_results.json")
_CALLBACK = "LLaMA-Factory LogCallback (src/llamafactory/train/callbacks.py)"


def sniff(path: Path, head: bytes) -> float:
    """0.95 when the first record is a JSON object with LogCallback's keys; folders are left to hf_trainer."""
    if Path(path).is_dir():
        return 0.0
    first = head.lstrip(b"\xef\xbb\xbf \t\r\n").split(b"\n", 1)[0]
    if first.startswith(b"{") and all(k in first for k in _KEYS):
        return 0.95
    return 0.0


# --- lines ---------------------------------------------------------------------------------------------------
def _kind(d: dict[str, Any]) -> str:
    """``train`` (a training log), ``eval``, ``end`` (the final log: an epoch, no loss) or ``progress``."""
    if "eval_loss" in d or "predict_loss" in d:
        return "eval"
    if any(k in d for k in ("loss", "lr", "learning_rate", "reward")):
        return "train"
    return "end" if "epoch" in d else "progress"


def _value(reader: Reader, d: dict[str, Any], key: str, ln: int) -> float:
    """A numeric field (a JSON number, or a numeric text as v0.8 wrote ``throughput``), NaN when absent."""
    if key not in d or d[key] is None:
        return math.nan
    v = number(d[key], nonfinite="keep")
    if v is None:
        reader.bad(rules.NON_NUMERIC, line=ln, field=key, example=repr(d[key])[:80])
        return math.nan
    return v


def _record(reader: Reader, ln: int, d: Any) -> dict[str, Any] | None:
    """One line as a record, or None after counting it."""
    if not isinstance(d, dict):
        reader.bad(rules.NOT_AN_OBJECT, line=ln, example=repr(d)[:120])
        return None
    for key in ("current_steps", "elapsed_time"):
        if key not in d:
            reader.bad(rules.MISSING_FIELD, line=ln, field=key, example=repr(d)[:160])
            return None
    step = rules.as_step(d["current_steps"]) if not isinstance(d["current_steps"], str) else None
    if step is None:
        reader.bad(rules.BAD_STEP, line=ln, field="current_steps", example=repr(d["current_steps"])[:80])
        return None
    t = duration(d["elapsed_time"])
    if t is None:
        reader.bad(rules.NON_FINITE_TIME, line=ln, field="elapsed_time", example=repr(d["elapsed_time"])[:80],
                   detail="not H:MM:SS")
        return None
    lr_key = "lr" if "lr" in d else "learning_rate"
    return {"line": ln, "step": step, "t": t, "kind": _kind(d), "loss": _value(reader, d, "loss", ln),
            "eval_loss": _value(reader, d, "eval_loss", ln), "lr": _value(reader, d, lr_key, ln),
            "epoch": _value(reader, d, "epoch", ln), "total_steps": rules.as_step(d.get("total_steps")),
            "throughput": _value(reader, d, "throughput", ln), "total_tokens": _value(reader, d, "total_tokens", ln),
            "throughput_text": isinstance(d.get("throughput"), str), "keys": frozenset(d)}


def _read(reader: Reader) -> list[dict[str, Any]]:
    """The well-formed lines, in file order."""
    recs: list[dict[str, Any]] = []
    for ln, text in reader.lines():
        if not text.strip():
            continue
        reader.report.lines_read += 1
        d, ok = reader.json(text, line=ln)
        if ok and (rec := _record(reader, ln, d)) is not None:
            recs.append(rec)
    if not recs:
        reader.fail("no trainer_log.jsonl records (JSON lines with current_steps and elapsed_time)")
    if not any(r["kind"] in ("train", "end") for r in recs):
        reader.fail("no training lines (only evaluation or prediction progress): no steps to time")
    return recs


# --- attempts, copies and times ------------------------------------------------------------------------------
def _launches(t: np.ndarray, cap: float) -> np.ndarray:
    """Where the elapsed clock starts again: below its attempt's largest by more than
    ``max(5, min(cap, largest / 2))`` seconds (copies of other writers differ by seconds)."""
    marks = np.zeros(len(t), dtype=bool)
    hi = -math.inf
    for i, x in enumerate(t.tolist()):
        if hi - x > max(5.0, min(cap, hi / 2)):
            marks[i], hi = True, x
        else:
            hi = max(hi, x)
    return marks


@dataclass
class _Kept:
    """One record per (attempt, step) of the training and final lines, sorted by attempt then step."""

    idx: np.ndarray  # index into the line records of the line kept
    att: np.ndarray
    step: np.ndarray
    t: np.ndarray  # elapsed seconds after the suffix minimum
    collapsed: int  # lines that repeated a kept (attempt, step)
    spread: float  # the largest spread of elapsed between lines of one step
    lowered: int  # records whose time the suffix minimum moved earlier


def _keep(recs: list[dict[str, Any]], att: np.ndarray) -> _Kept:
    """The record kept per (attempt, step): its earliest line; then the suffix minimum per attempt."""
    idx = np.array([i for i, r in enumerate(recs) if r["kind"] in ("train", "end")], dtype=np.int64)
    step = np.array([recs[i]["step"] for i in idx], dtype=np.int64)
    t = np.array([recs[i]["t"] for i in idx], dtype=float)
    order = np.lexsort((idx, t, step, att[idx]))
    a, s, tt = att[idx][order], step[order], t[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = (a[1:] != a[:-1]) | (s[1:] != s[:-1])
    starts = np.flatnonzero(first)
    spread = float((np.maximum.reduceat(tt, starts) - tt[starts]).max()) if len(starts) else 0.0
    kept_t = tt[first].copy()
    ka = a[first]
    bounds = [0, *(np.flatnonzero(ka[1:] != ka[:-1]) + 1).tolist(), len(ka)]
    for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):  # attempts are contiguous: one pass in all
        kept_t[lo:hi] = np.minimum.accumulate(kept_t[lo:hi][::-1])[::-1]
    lowered = int((kept_t < tt[first]).sum())
    return _Kept(idx[order][first], ka, s[first], kept_t, int(len(order) - len(starts)), spread, lowered)


def _spans(recs: list[dict[str, Any]], att: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each attempt's origin on the run's clock and its length (its largest elapsed_time), back to back."""
    t = np.array([r["t"] for r in recs], dtype=float)
    n = int(att.max()) + 1
    span = np.zeros(n)
    np.maximum.at(span, att, t)
    origin, _ = timeline.back_to_back(span, np.zeros(n))
    return origin, span


def _evals(recs: list[dict[str, Any]], att: np.ndarray, kept: _Kept, origin: np.ndarray) -> list[dict[str, Any]]:
    """An ``eval`` event per evaluated (attempt, step): from the record at that step (or the latest one before
    the evaluation ended) to the earliest eval line of that step."""
    first: dict[tuple[int, int], int] = {}
    for i, r in enumerate(recs):
        if r["kind"] == "eval":
            key = (int(att[i]), r["step"])
            if key not in first or r["t"] < recs[first[key]]["t"]:
                first[key] = i
    events = []
    for (a, step), i in sorted(first.items()):
        lo, hi = np.searchsorted(kept.att, a, "left"), np.searchsorted(kept.att, a, "right")
        j = lo + int(np.searchsorted(kept.step[lo:hi], step, "right")) - 1
        end = recs[i]["t"]
        start = min(float(kept.t[j]), end) if j >= lo else 0.0
        events.append({"kind": "eval", "start_s": origin[a] + start, "end_s": origin[a] + end, "attempt": a,
                       "rank": -1, "detail": f"evaluation at step {step} (eval_loss line {recs[i]['line']})"})
    return events


def _steps(reader: Reader, recs: list[dict[str, Any]], kept: _Kept, origin: np.ndarray, given: int | None,
           evals: list[dict[str, Any]]) -> tuple[pd.DataFrame, int]:
    """One row per step: each kept record's interval (from the previous record, or from its launch's start,
    and after any evaluation logged in between) shared evenly by its steps."""
    lines = np.array([recs[i]["line"] for i in kept.idx], dtype=np.int64)
    interval = timeline.interval_or_one(reader, kept.step, kept.att, given)
    n = timeline.interval_rows(reader, kept.step, kept.att, interval, lines, field="current_steps")
    end = origin[kept.att] + kept.t
    begin = np.empty(len(end))
    if len(end):
        begin[0] = origin[kept.att[0]]
        new = np.ones(len(end), dtype=bool)
        new[1:] = kept.att[1:] != kept.att[:-1]
        begin[1:] = end[:-1]
        begin[new] = origin[kept.att[new]]
    if evals:  # an evaluation that ended inside an interval starts it (the accounting carves it out anyway)
        ev_end = np.sort(np.array([e["end_s"] for e in evals]))
        j = np.searchsorted(ev_end, end, "right") - 1
        inside = (j >= 0) & (ev_end[np.maximum(j, 0)] > begin)
        begin[inside] = ev_end[j[inside]]
    rows = timeline.within_budget(n, reader)
    ex = timeline.expand(kept.step, n, rows, begin, place="even", end=end)
    fields = {k: (np.arange(len(kept.idx)), [recs[i][k] for i in kept.idx]) for k in ("loss", "lr", "epoch")}
    cols: dict[str, Any] = {
        "attempt": kept.att[ex.record], "step": ex.step, "rank": -1, "start_s": ex.start,
        "end_s": ex.start + ex.share, "interval_steps": n[ex.record], "logged": ex.logged,
        **timeline.on_rows(ex, rows, fields),
        "line": np.where(ex.logged, lines[ex.record], -1),
    }
    steps = pd.DataFrame(cols)
    return steps.drop(columns=[c for c in ("loss", "lr", "epoch") if steps[c].isna().all()]), interval


def _fmt(seconds: float) -> str:
    """Seconds as the log spells them (``22:08:06``, ``1 day, 0:08:23``)."""
    days, rest = divmod(int(seconds), 86400)
    h, rest = divmod(rest, 3600)
    text = f"{h}:{rest // 60:02d}:{rest % 60:02d}"
    return f"{days} day{'s' if days > 1 else ''}, {text}" if days else text


def _attempt_events(recs: list[dict[str, Any]], att: np.ndarray, origin: np.ndarray, span: np.ndarray,
                    total: int | None) -> list[dict[str, Any]]:
    """A ``failure`` where a launch stops before the last one, a ``restart`` where the next one starts."""
    last: dict[int, dict[str, Any]] = {}  # per attempt: its latest line, the largest step, its first line
    for r, a in zip(recs, att.tolist(), strict=True):
        got = last.setdefault(a, {"latest": r, "reached": r["step"], "first": r})
        got["reached"] = max(got["reached"], r["step"])
        if r["t"] > got["latest"]["t"]:
            got["latest"] = r
    events: list[dict[str, Any]] = []
    of = f" of {total:,}" if total else ""
    for a in range(1, len(origin)):
        prev, first = last[a - 1], last[a]["first"]
        stop = prev["latest"]
        events.append({"kind": "failure", "start_s": origin[a - 1] + span[a - 1], "end_s": origin[a],
                       "attempt": a - 1, "rank": -1,
                       "detail": f"attempt {a - 1} stops logging at step {prev['reached']:,}{of} (elapsed "
                                 f"{_fmt(stop['t'])}, line {stop['line']}); the log does not say why"})
        events.append({"kind": "restart", "start_s": origin[a], "end_s": origin[a], "attempt": a, "rank": -1,
                       "detail": f"line {first['line']}: elapsed_time starts again ({_fmt(stop['t'])} -> "
                                 f"{_fmt(first['t'])}): a new launch, logging step {first['step']:,} first"})
    return events


# --- claims, files beside the log ------------------------------------------------------------------------------
def _throughput_claim(out: Parsed, reader: Reader, recs: list[dict[str, Any]], att: np.ndarray) -> None:
    """The LogCallback's throughput where it was measured; the v0.8 placeholder is noted, never claimed."""
    measured = [(r, int(a)) for r, a in zip(recs, att.tolist(), strict=True)
                if math.isfinite(r["throughput"]) and r["throughput"] > 0 and not r["total_tokens"] <= 0]
    placeholder = sum(1 for r in recs if r["throughput"] == 0 and not r["total_tokens"] > 0)
    if placeholder:
        reader.note(f"{placeholder} lines write throughput 0.00 with total_tokens 0: "
                    "LLaMA-Factory v0.8 writes that text on every line when the Trainer counts no input tokens "
                    "(include_num_input_tokens_seen off), a placeholder, not a measured zero: no throughput claim")
    first = [r for r, a in measured if a == 0]
    if measured and not first:
        reader.note("throughput is logged only after a relaunch, where it divides the tokens counted since the "
                    "first launch by the new launch's clock: not claimed")
    if first:
        r = max(first, key=lambda x: (x["step"], x["t"]))
        out.claim(Claim("tokens_per_s", r["throughput"], "tokens/s", where=f"{reader.name}:{r['line']}",
                        basis="end_to_end", counts=(
                            f"{_CALLBACK} throughput: the Trainer's num_input_tokens_seen (input tokens of all "
                            "processes, padding included) / seconds since the launch's on_train_begin (evaluation "
                            f"and checkpoint saves included): a running mean, here at its last line (step "
                            f"{r['step']:,}) of the first launch")))


_RESULT_CLAIMS = (
    ("train_samples_per_second", "samples_per_s", "samples/s",
     "HF Trainer's train_samples_per_second ({src}): the run's planned samples, all processes together, / "
     "train_runtime (the whole Trainer.train call, evaluation and checkpoint saves included)"),
    ("train_steps_per_second", "steps_per_s", "steps/s",
     "HF Trainer's train_steps_per_second ({src}): max_steps / train_runtime (evaluation and saves included)"),
    ("effective_tokens_per_sec", "tokens_per_s_per_accelerator", "tokens/s per device",
     "LLaMA-Factory's effective_tokens_per_sec ({src}; extras/misc.py calculate_tps): the dataset's tokens "
     "(no padding) × epochs / train_runtime / world size"),
    ("total_flos", "total_flos", "FLOP",
     "HF Trainer's own estimate of the run's floating-point operations ({src}; 6 × parameters × tokens, "
     "shard-local under FSDP); never used as model FLOPs"),
)


def _siblings(path: Path) -> dict[str, Path]:
    """The results and state files the log's run wrote beside it (see the module docstring)."""
    if not path.name.endswith(LOG_NAME):
        return {}
    prefix = path.name[: -len(LOG_NAME)]
    found = {rf: path.with_name(prefix + rf) for rf in (*_RESULT_FILES, "trainer_state.json")}
    return {rf: p for rf, p in found.items() if p.is_file()}


def _json_object(reader: Reader, path: Path) -> tuple[dict[str, Any], str] | None:
    """A JSON object file's scalar values and its text; anything else is counted and left out."""
    sub = reader.for_file(path, root=path.parent)
    text = sub.text()
    doc, why, at = parse_json(text)
    if why is not None or not isinstance(doc, dict):
        sub.bad(rules.FILE_LEFT_OUT, line=at or 1, field=path.name,
                detail=f"{path.name}: {rules.in_full(why or rules.NOT_AN_OBJECT)}")
        return None
    return {k: v for k, v in doc.items() if isinstance(v, (int, float, str, bool)) and k != "log_history"}, text


def _beside(out: Parsed, reader: Reader, path: Path, n_attempts: int) -> int | None:
    """Read the results and state files of the log's run; return ``logging_steps`` where stated."""
    files = _siblings(path)
    results = next((rf for rf in _RESULT_FILES if rf in files), None)
    interval = None
    if results is not None and (got := _json_object(reader, files[results])) is not None:
        values, text = got
        out.extra["results"] = {results: values}
        src = f"{files[results].name}, beside the log in the run's output_dir"
        for key, metric, unit, counts in _RESULT_CLAIMS:
            v = number(values.get(key), text=False)
            if v is None or v <= 0:
                continue
            if n_attempts > 1:
                reader.note(f"{key} {v:g} in {files[results].name} is not claimed: train_runtime spans the last of "
                            f"the {n_attempts} launches only")
                continue
            line = text.count("\n", 0, max(text.find(f'"{key}"'), 0)) + 1
            out.claim(Claim(metric, v, unit, counts.format(src=src), f"{files[results]}:{line}", basis="end_to_end"))
    if "trainer_state.json" in files and (got := _json_object(reader, files["trainer_state.json"])) is not None:
        state, text = got
        out.extra["trainer_state"] = state
        if (mb := rules.as_count(state.get("train_batch_size"))) is not None:
            line = text.count("\n", 0, max(text.find('"train_batch_size"'), 0)) + 1
            out.fact("micro_batch", mb, f"{files['trainer_state.json']}:{line}", "train_batch_size (per device)")
        logging = rules.as_count(state.get("logging_steps"))
        interval = logging if logging is not None and rules.interval_ok(logging) else None
    if files:
        reader.note(f"read beside the log (the same run's output_dir): {', '.join(sorted(files))}")
    return interval


# --- parse -----------------------------------------------------------------------------------------------------
def _schema(recs: list[dict[str, Any]]) -> str:
    keys = frozenset().union(*(r["keys"] for r in recs))
    lr = "lr (LLaMA-Factory v0.9.2 or later)" if "lr" in keys else "learning_rate (LLaMA-Factory v0.9.1 or earlier)"
    if any(r["throughput_text"] for r in recs):
        return lr + "; throughput as text on every line (v0.8)"
    return lr + ("; throughput as a number (v0.9 or later)" if "throughput" in keys else "")


def _log_table(recs: list[dict[str, Any]], att: np.ndarray, kept: _Kept) -> pd.DataFrame:
    keep = np.zeros(len(recs), dtype=bool)
    keep[kept.idx] = True
    cols = ("line", "kind", "step", "t", "loss", "eval_loss", "lr", "epoch", "throughput", "total_tokens")
    table = pd.DataFrame({c: [r[c] for r in recs] for c in cols}).rename(
        columns={"step": "current_steps", "t": "elapsed_s"})
    table.insert(1, "attempt", att)
    table["kept"] = keep
    return table


def _notes(reader: Reader, recs: list[dict[str, Any]], att: np.ndarray, kept: _Kept, span: np.ndarray) -> None:
    kinds = pd.Series([r["kind"] for r in recs]).value_counts().to_dict()
    reader.note("no per-step times: each line's elapsed_time (whole seconds since its launch's on_train_begin) "
                "ends a log interval whose steps share it evenly; the time before on_train_begin (loading) is not "
                "in the file")
    if kept.collapsed:
        train = [(a, r["step"]) for r, a in zip(recs, att.tolist(), strict=True) if r["kind"] == "train"]
        unique = len(set(train))
        copies = len(train) - unique
        per = ""
        if unique and copies * 2 >= unique:
            per = f" (about {len(train) / unique:.1f} lines per logged step: as many writers)"
        reader.note(f"{copies} training lines repeat a step already logged in their attempt{per}, and "
                    f"{kept.collapsed - copies} final lines (no loss) a step already reached; copies of one step "
                    f"are up to {kept.spread:,.0f} s apart: one record per step, at the earliest time any line reports "
                    "it; tables['log'] keeps every line")
    if kept.lowered:
        reader.note(f"{kept.lowered} records take an earlier time than their own line: a later step was reported "
                    "finished sooner (by another process)")
    if len(span) > 1:
        reader.note(f"{len(span)} launches (elapsed_time starts again): placed back to back, each as long as its "
                    f"largest elapsed_time; the time between launches is not in the file, so the wall time is at "
                    f"least {span.sum():,.0f} s ({span.sum() / 3600:.2f} h)")
    if kinds.get("progress"):
        reader.note(f"{kinds['progress']} evaluation-only progress lines (no epoch): not training steps")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read a ``trainer_log.jsonl`` (or the output folder holding one); see the module docstring."""
    given = timeline.checked_interval(reader, options.log_interval)
    path = reader.path
    if path.is_dir():
        if not (path / LOG_NAME).is_file():
            reader.fail(f"no {LOG_NAME} in this folder")
        path = path / LOG_NAME
    sub = reader if path == reader.path else reader.for_file(path)
    recs = _read(sub)
    t = np.array([r["t"] for r in recs], dtype=float)
    att = timeline.attempts(launches=_launches(t, float(options.reset_tolerance_s)), resets=None)
    kept = _keep(recs, att)
    origin, span = _spans(recs, att)
    out = Parsed(timing="interval_mean", time_unit="s")
    stated = _beside(out, reader, path, len(span))
    evals = _evals(recs, att, kept, origin)
    steps, interval = _steps(sub, recs, kept, origin, given or stated, evals)
    totals = [r["total_steps"] for r in recs if r["total_steps"]]
    out.steps = steps
    out.events = _attempt_events(recs, att, origin, span, max(totals, default=None)) + evals
    out.tables["log"] = _log_table(recs, att, kept)
    out.fact("framework", "LLaMA-Factory", f"{sub.name}:{recs[0]['line']}",
             "trainer_log.jsonl keys current_steps, total_steps, elapsed_time (LogCallback)")
    epochs = [r["epoch"] for r in recs if math.isfinite(r["epoch"])]
    out.extra.update({"total_steps": max(totals, default=None), "epochs": max(epochs, default=None),
                      "log_interval": interval, "schema": _schema(recs), "attempts": len(span),
                      "wall_s_lower_bound": float(span.sum()), "collapsed_lines": kept.collapsed})
    out.meta["name"] = path.name.removesuffix(".jsonl")
    _throughput_claim(out, reader, recs, att)
    _notes(reader, recs, att, kept, span)
    return out


load = loader_for(NAME)

__all__ = ["NAME", "Options", "sniff", "parse", "load"]
