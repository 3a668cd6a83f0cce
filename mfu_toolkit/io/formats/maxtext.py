"""MaxText (JAX) stdout: ``completed step: N, seconds: s, TFLOP/s/device: x, ...`` lines.

What the format carries and how it maps to a :class:`~mfu_toolkit.run.Run`:

- One line per step: ``completed step: N, seconds: s, TFLOP/s/device: x, Tokens/s/device: y,
  total_weights: w, loss: l`` (newer releases) or ``completed step: N, seconds: s, TFLOP/s: x,
  loss: l`` (2023; the ``TFLOP/s`` there is per device too). ``seconds`` is the step's own wall
  time, so steps are placed back to back from their durations (``timing="duration_only"``,
  ``rank = -1``); the glog or Cloud Logging timestamps a line may carry are when the metrics were
  written, not when the step ran, and are not used as step times.
- Prefixes are stripped: glog (``I0317 10:00:17.579063 <tid> metric_logger.py:181]``), the
  ``#`` of a log pasted into a shell script's comments, indentation of a quoted block.
- ``loss: nan`` is kept as a missing loss on a kept step: a diverged run still ran its steps.
- Flags (``flag`` column, never dropped): ``compile`` on the first step of an attempt when it
  takes over three times the attempt's median (it includes XLA compilation), ``async_dispatch`` on a
  step whose ``seconds`` is under a fifth of the
  attempt's median (JAX dispatches asynchronously, so a step can report before its work is done:
  the documented v5p run's step 1 reads 0.319 s and 2,400 TFLOP/s/device), ``outlier`` on one over
  three times the median (e.g. a profiler capture).
- A step number that does not increase starts a new attempt (:func:`~mfu_toolkit.io.timeline.attempts`);
  a line that repeats the previous record exactly (a document quoting a step twice) is a duplicate,
  counted and left out first.

Facts: ``Num_devices: N`` (JAX devices: one per TPU v4/v5/v6 chip or GPU), the accelerator from
``TFRT TPU v5``-style lines, ``Config param`` values (``model_name``, ``dtype``,
``max_target_length`` → seq_len, ``per_device_batch_size``), the global batch as
per-device batch × devices × gradient-accumulation steps. Claims: the median ``TFLOP/s/device``
and ``Tokens/s/device``, and ``Per train step, total TFLOPs will be X`` (or ``Per train step:`` /
``Total TFLOPs: X``) as the model FLOPs per step *per device* that MaxText counts.

Numerator: that claim × ``Num_devices`` is the run's ``model_flops_per_step``, with
``model_flops_source`` naming both lines, so ``mfu analyze`` needs no preset: the MFU is then
the log's own TFLOP/s/device over the peak (MaxText computes TFLOP/s/device as this per-device
count ÷ the step's seconds, ``metric_logger.py``). A log that states no device count gets no
numerator and a note. A preset or FLOPs the user gives (``--preset``, ``--flops-per-step``)
replace it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

import numpy as np

from .. import rules, timeline
from ..base import Claim, Parsed, loader_for
from ..reading import Reader
from ..values import number

NAME = "maxtext"
TEXT_LOG = True  # read line by line: NCCL's own lines are read by the shared stage (io.nccl_info)


@dataclass(frozen=True)
class Options:
    """The maxtext format takes no options besides the RunMeta keywords."""


_GLOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ +[^\s\]]+\] ?")
_STEP = re.compile(r"completed step: *(\S+?),(.*)$")
_FIELD = re.compile(r"^ *([A-Za-z_][A-Za-z0-9_/ ]*?) *: *(\S+) *$")
_PER_STEP = re.compile(r"Per train step, total TFLOPs will be ([0-9.eE+-]+)")
_TOTAL = re.compile(r"^ *Total TFLOPs: *([0-9.eE+-]+)")
_DEVICES = re.compile(r"Num_devices: *(\d+)")
_TFRT = re.compile(r"^TFRT (TPU[ \w]*?) *$")
_CONFIG = re.compile(r"^Config param ([A-Za-z0-9_]+): *(.*?) *$")
_SNIFF = re.compile(rb"completed step: *\d+, *seconds: *[0-9.]+")
_FIELDS = {
    "seconds": "step_seconds",
    "TFLOP/s/device": "tflops_per_device",
    "TFLOP/s": "tflops_per_device",
    "Tokens/s/device": "tokens_per_s_per_device",
    "total_weights": "total_weights",
    "loss": "loss",
}
_MAX_STEP_S = 1e7  # no training step lasts 116 days
_CONFIG_KEYS = ("model_name", "dtype", "max_target_length", "per_device_batch_size", "gradient_accumulation_steps",
                "hardware")


def sniff(path: Path, head: bytes) -> float:
    """0.9 when MaxText step lines appear in the first 8 KiB or, for a longer file, its first 4 MiB."""
    if Path(path).is_dir() or not head:
        return 0.0
    if _SNIFF.search(head):
        return 0.9
    if b"MaxText" in head or b"maxtext" in head or b"Config param" in head:
        from ..reading import read_head

        if _SNIFF.search(read_head(path, 4 << 20)):
            return 0.9
    return 0.0


def _clean(text: str) -> str:
    """The line without glog prefix, shell-comment ``# `` and leading indentation."""
    t = text.lstrip()
    if t.startswith("#"):
        t = t[1:].lstrip()
    m = _GLOG.match(t)
    return t[m.end():] if m else t


def _step_record(reader: Reader, ln: int, body: str, raw: str) -> dict[str, Any] | None:
    m = _STEP.search(body)
    step = rules.as_step(m.group(1)) if m else None
    if m is None or step is None:
        reader.bad(rules.BAD_STEP, line=ln, field="completed step", example=raw)
        return None
    rec: dict[str, Any] = {"step": step, "line": ln, "text": body[m.start():].strip()}
    for part in m.group(2).split(","):
        f = _FIELD.match(part)
        if not f:
            if part.strip():
                reader.bad(rules.NON_NUMERIC, line=ln, field=part.strip()[:40], example=raw)
            continue
        key, value = f.group(1), number(f.group(2), nonfinite="keep")
        name = _FIELDS.get(key, re.sub(r"[^0-9a-z]+", "_", key.lower()).strip("_"))
        if value is None:
            reader.bad(rules.NON_NUMERIC, line=ln, field=key, example=raw)
            continue
        rec[name] = value
    secs = rec.get("step_seconds")
    if secs is None or not math.isfinite(secs) or secs < 0:
        reader.bad(rules.NEGATIVE_DURATION if secs is not None and secs < 0 else rules.NON_FINITE_TIME,
                   line=ln, field="seconds", example=raw)
        return None
    if secs > _MAX_STEP_S:  # a garbled number, not a step: kept, it would put every later step at inf
        reader.bad(rules.VALUE_OUT_OF_RANGE, line=ln, field="seconds", example=raw)
        return None
    return rec


def _header_line(out: Parsed, state: dict[str, Any], reader: Reader, ln: int, body: str, raw: str) -> None:
    """Facts and claims from a non-step line."""
    where = f"{reader.name}:{ln}"
    if m := _PER_STEP.search(body):
        state.setdefault("tflop_step", (number(m.group(1), nonfinite="keep"), where, raw))
    elif state.get("per_step_next") == ln - 1 and (m := _TOTAL.match(body)):
        state.setdefault("tflop_step", (number(m.group(1), nonfinite="keep"), where, raw))
    elif body.startswith("Per train step:"):
        state["per_step_next"] = ln
    elif m := _DEVICES.search(body):
        n = rules.as_count(m.group(1))
        if n is not None and "devices" not in state:
            state["devices"], state["devices_where"] = n, where
            out.fact("n_accelerators", n, where, raw.strip())
    elif m := _TFRT.match(body):
        if "accelerator" not in state:
            state["accelerator"] = m.group(1)
            out.fact("accelerator", m.group(1), where, raw.strip())
    elif (m := _CONFIG.match(body)) and m.group(1) in _CONFIG_KEYS:
        state.setdefault("config", {}).setdefault(m.group(1), (m.group(2), where, raw.strip()))


def _config_facts(out: Parsed, state: dict[str, Any]) -> None:
    cfg = state.get("config", {})
    if "model_name" in cfg and cfg["model_name"][0] not in ("", "default"):
        out.fact("model", cfg["model_name"][0], cfg["model_name"][1], cfg["model_name"][2])
    if "dtype" in cfg:
        out.fact("dtype", cfg["dtype"][0], cfg["dtype"][1], cfg["dtype"][2])
    if "max_target_length" in cfg and (n := rules.as_count(cfg["max_target_length"][0])):
        out.fact("seq_len", n, cfg["max_target_length"][1], cfg["max_target_length"][2])
    if "per_device_batch_size" in cfg:
        # A config value may end in a comma (a printed list's separator): it is no part of the number.
        per = number(cfg["per_device_batch_size"][0].rstrip(","), nonfinite="keep")
        out.fact("micro_batch", per, cfg["per_device_batch_size"][1], cfg["per_device_batch_size"][2])
        accum = number(cfg.get("gradient_accumulation_steps", ("1",))[0].rstrip(","), nonfinite="keep") or 1.0
        if per and per > 0 and state.get("devices") and math.isfinite(accum) and accum > 0:
            gbs = per * state["devices"] * accum
            text = (f"per_device_batch_size {per:g} × Num_devices {state['devices']} "
                    f"× gradient_accumulation_steps {accum:g}")
            out.fact("global_batch", gbs, cfg["per_device_batch_size"][1], text)


def _attempts(reader: Reader, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Drop repeats of the previous record's text (counted), then number the attempts of the rest
    (``timeline.attempts``: a step that does not increase starts one)."""
    kept: list[dict[str, Any]] = []
    for rec in records:
        if kept and rec["text"] == kept[-1]["text"]:
            reader.bad(rules.DUPLICATE, line=rec["line"], field="completed step")
            continue
        kept.append(rec)
    att = timeline.attempts(np.array([r["step"] for r in kept], dtype=np.int64), resets="not_increasing")
    for rec, a in zip(kept, att.tolist(), strict=True):
        rec["attempt"] = a
    return kept


def _flags(records: list[dict[str, Any]]) -> None:
    by_attempt: dict[int, list[dict[str, Any]]] = {}
    for rec in records:
        by_attempt.setdefault(rec["attempt"], []).append(rec)
    for recs in by_attempt.values():
        rest = [r["step_seconds"] for r in recs[1:]]
        mid = median(rest) if rest else None
        for i, r in enumerate(recs):
            flag = ""
            if i == 0 and (mid is None or r["step_seconds"] > 3.0 * mid):
                flag = "compile"
            elif mid and r["step_seconds"] < 0.2 * mid:
                flag = "async_dispatch"
            elif mid and r["step_seconds"] > 3.0 * mid:
                flag = "outlier"
            r["flag"] = flag


def _steps(records: list[dict[str, Any]], gbs: float | None) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {"attempt": [], "step": [], "rank": [], "start_s": [], "end_s": [], "samples": [],
                                  "flag": []}
    extra = sorted({k for r in records for k in r} - set(cols) - {"line", "text", "step_seconds"})
    for k in extra:
        cols[k] = []
    t = 0.0
    for r in records:
        cols["attempt"].append(r["attempt"])
        cols["step"].append(r["step"])
        cols["rank"].append(-1)
        cols["start_s"].append(t)
        t += r["step_seconds"]
        cols["end_s"].append(t)
        cols["samples"].append(gbs if gbs else math.nan)
        cols["flag"].append(r["flag"])
        for k in extra:
            cols[k].append(r.get(k, math.nan))
    return cols


def _claims(out: Parsed, reader: Reader, records: list[dict[str, Any]], state: dict[str, Any]) -> None:
    first = f"{reader.name}:{records[0]['line']}"
    steady = [r for r in records if r["flag"] == ""] or records
    tf = [r["tflops_per_device"] for r in steady if "tflops_per_device" in r]
    out.claim(Claim.summarise("tflops_per_accelerator", tf, unit="TFLOP/s per device", where=first,
                              counts="MaxText's model TFLOP per device per step ÷ the step's seconds "
                                     "(flagged steps left out)"))
    tok = [r["tokens_per_s_per_device"] for r in steady if "tokens_per_s_per_device" in r]
    out.claim(Claim.summarise("tokens_per_s_per_accelerator", tok, unit="tokens/s per device", where=first,
                              counts="per-device batch × max target length ÷ the step's seconds, padding included "
                                     "(flagged steps left out)"))
    if (tflop := state.get("tflop_step")) and tflop[0] and math.isfinite(tflop[0]) and tflop[0] > 0:
        out.claim(Claim("model_flops_per_step", tflop[0] * 1e12, "FLOP per step per device", where=tflop[1],
                        counts="MaxText's analytic model FLOPs of one training step on one device "
                               "(learnable-weight matmuls + attention), as printed"))
        _numerator(out, reader, state, tflop[0], tflop[1])


def _numerator(out: Parsed, reader: Reader, state: dict[str, Any], tflop: float, where: str) -> None:
    """The job's model FLOPs per step from the log's own per-device claim × its ``Num_devices``.

    MaxText's ``Per train step ... total TFLOPs`` counts one device's share of a step, so the job's
    step is that × the devices the log states; with no device count there is no numerator, and a
    note says why. A preset or FLOPs the user gives replace it (they are applied after loading).
    """
    devices = state.get("devices")
    if not devices:
        reader.note(f"model FLOPs per step not set: the log claims {tflop:g} TFLOP per device per step at {where}, "
                    "but states no device count (no 'Num_devices:' line), so the job's FLOPs per step are unknown; "
                    f"give the FLOPs per step ({tflop:g}e12 × the number of devices) or a preset")
        return
    out.meta["model_flops_per_step"] = tflop * 1e12 * devices
    out.meta["model_flops_source"] = (
        f"the log's own claim: {tflop:g} TFLOP per device per step × Num_devices {devices} "
        f"(MaxText's count; {where}, {state['devices_where']})")


def parse(reader: Reader, options: Options) -> Parsed:
    """Read MaxText stdout; see the module docstring for the mapping."""
    if reader.path.is_dir():
        reader.fail("is a directory; the maxtext format reads one stdout log")
    out = Parsed(timing="duration_only", time_unit="s")
    state: dict[str, Any] = {}
    records: list[dict[str, Any]] = []
    for ln, raw in reader.lines():
        reader.report.lines_read += 1
        body = _clean(raw)
        if "completed step:" in body:
            rec = _step_record(reader, ln, body, raw)
            if rec is not None:
                records.append(rec)
        elif body:
            _header_line(out, state, reader, ln, body, raw)
    if not records:
        reader.fail("no MaxText 'completed step: N, seconds: ...' lines")
    _config_facts(out, state)
    records = _attempts(reader, records)
    _flags(records)
    gbs = next((f.value for f in out.facts if f.name == "global_batch"), None)
    out.steps = _steps(records, gbs)
    _claims(out, reader, records, state)
    out.fact("framework", "MaxText", f"{reader.name}:{records[0]['line']}", "completed step lines")
    flagged = {f: sum(r["flag"] == f for r in records) for f in ("compile", "async_dispatch", "outlier")}
    if flagged["async_dispatch"] or flagged["outlier"]:
        reader.note(f"flagged, not dropped: {flagged['compile']} compile, {flagged['async_dispatch']} async-dispatch "
                    f"and {flagged['outlier']} outlier step(s) (see the 'flag' column)")
    gaps = sum(1 for a, b in zip(records, records[1:], strict=False)
               if a["attempt"] == b["attempt"] and b["step"] > a["step"] + 1)
    if gaps:
        reader.note(f"{gaps} gap(s) in the step numbers: steps between logged lines are not in the log "
                    "(elided or not printed)")
    return out


load = loader_for(NAME)
