"""``mfu audit``: one row per log, the framework's own MFU claim refereed.

A framework that prints both TFLOP/s per accelerator and an MFU has divided one by a peak; their
quotient is that peak. :func:`implied_peak` matches it to a registry row (dense or sparse, per
package or per device, any dtype, within 1.5 %) and :func:`audit_run` names what that row says
about the claim: the run's own dense peak at its dtype ("agrees"), its sparse peak used as dense,
another dtype's peak, the per-package peak for a per-device count (or the reverse), or another
device's peak altogether (torchtitan assumes the A100's 312 TFLOP/s for a GPU it does not know:
``get_peak_flops`` in https://github.com/pytorch/torchtitan/blob/main/torchtitan/tools/utils.py).
Beside it stands our MFU (:func:`~mfu_toolkit.analysis.answer.build_answer`'s steady state, with
the facts the user gives) and the answer's claim checks.

>>> rows = audit_paths(["logs/"], accelerator="H100")
>>> audit_frame(rows)            # a DataFrame, one row per log
>>> print(audit_text(rows))      # the table ``mfu audit`` prints
"""

from __future__ import annotations

import csv
import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .facts import STATED

__all__ = ["KINDS", "AuditRow", "PeakMatch", "audit_frame", "audit_json", "audit_paths", "audit_run",
           "audit_files", "audit_text", "exit_status", "implied_peak", "log_files", "write_csv"]

MATCH_TOLERANCE = 0.015  # an implied peak within 1.5 % of a registry row is that row
# Dtypes a training framework divides by; int8 is an inference format and fp64 a simulation one, so
# a peak that happens to equal theirs names nothing a training log would use.
_TRAINING_DTYPES = ("bf16", "fp16", "fp8", "tf32", "fp32", "fp4")
# verdict kinds: "mismatch" a named cause; "differs" ours and theirs disagree, cause not named
KINDS: tuple[str, ...] = ("agrees", "mismatch", "differs", "not comparable", "error")


@dataclass(frozen=True)
class PeakMatch:
    """A registry row a peak equals: ``deviations`` lists how it differs from the run's own peak."""

    accelerator: str
    dtype: str
    kind: str  # "dense" or "sparse"
    per: str  # "package" or "device"
    tflops: float
    deviations: tuple[str, ...]

    def describe(self) -> str:
        """``B200 bf16 dense, 2,250 TFLOP/s per package``."""
        return f"{self.accelerator} {self.dtype} {self.kind}, {self.tflops:,.6g} TFLOP/s per {self.per}"


@dataclass
class AuditRow:
    """One log's audit; ``kind`` is one of :data:`KINDS`, ``cause`` the phrase shown."""

    file: str
    format: str | None = None
    framework: str | None = None
    device_printed: str | None = None
    device_registry: str = "unknown"
    accelerator: str | None = None  # the registry name our MFU divides by (stated or given)
    dtype: str | None = None
    claimed_tflops: float | None = None
    claimed_mfu: float | None = None
    implied_peak_tflops: float | None = None
    peak_match: str | None = None
    peak_also: list[str] = field(default_factory=list)
    their_mfu_on_registry_peak: float | None = None
    our_mfu: float | None = None
    ratio: float | None = None  # ours / theirs
    claim_checks: dict[str, dict[str, Any]] = field(default_factory=dict)
    kind: str = "not comparable"
    cause: str = "not comparable"
    error: str | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The row as JSON-able data (NaN as None)."""
        out = asdict(self)
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


# --------------------------------------------------------------------------------------------
# the peak a claim implies


def _own_peak(row: Any, dtype: str, per: str) -> float | None:
    """The run's own dense peak at ``dtype`` in TFLOP/s per ``per``, or None where the registry has none."""
    if dtype not in row.dense:
        return None
    return row.dense[dtype] / (row.devices_per_package if per == "device" else 1)


def _candidates(tflops: float, tolerance: float) -> list[tuple[Any, str, str, str, float]]:
    """Every registry (accelerator, dtype, kind, per, value) of a training dtype within ``tolerance`` of ``tflops``."""
    from . import hardware

    return [m for m in hardware.peaks_near(tflops, tolerance=tolerance) if m[1] in _TRAINING_DTYPES]


def implied_peak(tflops: float, mfu: float, *, accelerator: str | None = None, dtype: str = "bf16",
                 per: str = "device", tolerance: float = MATCH_TOLERANCE) -> tuple[float, list[PeakMatch]]:
    """The peak (TFLOP/s) a framework divided by, ``tflops / mfu``, and the registry rows it equals,
    fewest deviations from the run's own peak (``accelerator`` at ``dtype``, dense, per ``per``) first.

    A row of another device is one deviation more than any row of the run's own; where the run's
    device is unknown (``accelerator`` None) every row counts as the same device.
    """
    from . import hardware

    if not (tflops > 0 and mfu > 0):
        raise ValueError(f"tflops and mfu must be > 0; got {tflops!r} and {mfu!r}")
    peak = tflops / mfu
    own = hardware.resolve(accelerator).name if accelerator else None
    matches = []
    for a, d, kind, p, value in _candidates(peak, tolerance):
        devs = []
        if own is not None and a.name != own:
            devs.append("device")
        if kind == "sparse":
            devs.append("sparse")
        if d != dtype:
            devs.append("dtype")
        if a.devices_per_package > 1 and p != per:
            devs.append("per")
        matches.append(PeakMatch(a.name, d, kind, p, value, tuple(devs)))
    matches.sort(key=lambda m: (len(m.deviations), "device" in m.deviations, abs(m.tflops / peak - 1.0)))
    return peak, matches


def _phrase(group: list[PeakMatch], dtype: str, per: str) -> str:
    """The cause a group of matches with the same deviations names, in the words the audit prints
    (dtypes whose peaks are equal, bf16 and fp16 on most parts, are named together)."""
    m = group[0]
    if "device" in m.deviations:
        return f"fallback peak of another device ({m.accelerator}'s {m.tflops:,.6g} {m.dtype} {m.kind})"
    parts = []
    if "sparse" in m.deviations:
        parts.append("sparse peak as dense")
    if "dtype" in m.deviations:
        parts.append(f"another dtype's peak ({'/'.join(dict.fromkeys(x.dtype for x in group))} vs {dtype})")
    if "per" in m.deviations:
        parts.append(f"per-{m.per} vs per-{per}")
    return " and ".join(parts)


def _peak_cause(peak: float, matches: list[PeakMatch], own: Any, dtype: str, per: str) -> tuple[str, str]:
    """(kind, cause) from the implied peak and its matches, for a run on ``own`` (a registry row)."""
    if not matches:
        expected = _own_peak(own, dtype, per)
        if expected and abs(peak / expected - 1.0) <= MATCH_TOLERANCE:
            return "agrees", "agrees"
        return "mismatch", (f"peak matches no registry row ({peak:,.6g} TFLOP/s; {own.name} {dtype} dense is "
                            f"{expected:,.6g})" if expected else f"peak matches no registry row ({peak:,.6g} TFLOP/s)")
    best = [m for m in matches if len(m.deviations) == len(matches[0].deviations)
            and ("device" in m.deviations) == ("device" in matches[0].deviations)]
    if not best[0].deviations:
        return "agrees", "agrees"
    if "device" in best[0].deviations:  # one device named; the others with that peak go to peak_also
        return "mismatch", _phrase(best[:1], dtype, per)
    groups: dict[tuple[tuple[str, ...], str], list[PeakMatch]] = {}
    for m in best:
        groups.setdefault((m.deviations, m.per), []).append(m)
    return "mismatch", ", or ".join(_phrase(g, dtype, per) for g in groups.values())


# --------------------------------------------------------------------------------------------
# one log


def _claim_value(meta: Any, metric: str) -> tuple[float | None, dict[str, Any] | None]:
    c = next((c for c in meta.claims if c.get("metric") == metric), None)
    v = c.get("value") if c else None
    ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0
    return (float(v), c) if ok else (None, c)


def _registry_name(name: Any) -> str:
    from . import hardware

    if not name:
        return "unknown"
    try:
        return hardware.resolve(str(name)).name
    except hardware.RegistryError:
        return "unknown"


def _where(claim: dict[str, Any] | None) -> str:
    """``file:line`` of a claim, the file as its name only, with the claim's statistic."""
    if not claim:
        return ""
    where = str(claim.get("where", "")).rsplit("/", 1)[-1]
    n = claim.get("n", 1)
    return f"{where}" + (f" ({claim.get('statistic', 'value')} of {n} lines)" if n and n > 1 else "")


def _describe_log(row: AuditRow, run: Any) -> None:
    """The row's columns that come from the log alone: format, framework, device, claims."""
    m = run.meta
    row.format = m.source_format
    fw = m.fact("framework", source=STATED)
    row.framework = str(fw["value"]) if fw else None
    dev = m.fact("accelerator", source=STATED)
    row.device_printed = str(dev["value"]) if dev else None
    row.device_registry = _registry_name(row.device_printed)
    row.claimed_tflops, tf = _claim_value(m, "tflops_per_accelerator")
    row.claimed_mfu, mf = _claim_value(m, "mfu")
    for label, c in (("TFLOP/s", tf), ("MFU", mf)):
        if c:
            row.notes.append(f"claimed {label} at {_where(c)}: {c.get('counts', '')}".rstrip(": "))
    if not m.claims:
        row.notes.append("the log prints no throughput claim of its own")
    elif not (tf or mf):
        row.notes.append("the log claims " + ", ".join(sorted({str(c.get('metric')) for c in m.claims}))
                         + " but neither TFLOP/s per accelerator nor MFU")


def _one_line(exc: BaseException | str) -> str:
    text = str(exc)
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), type(exc).__name__)


def _ours(row: AuditRow, run: Any, inputs: dict[str, Any], interface: str) -> tuple[Any, str | None]:
    """Apply the user's facts and fill our MFU and the answer's claim checks; (run, why ours is unknown)."""
    from .analysis.answer import build_answer
    from .formulas import MFUAbove100Error
    from .inputs import apply_inputs

    try:
        run = apply_inputs(run, interface=interface, **inputs)
    except (ValueError, TypeError, LookupError) as exc:
        return run, f"the facts given do not apply: {_one_line(exc)}"
    m = run.meta
    row.accelerator = _registry_name(m.accelerator) if m.accelerator else None
    row.dtype = m.dtype
    try:
        answer = build_answer(run)
    except MFUAbove100Error as exc:
        return run, f"our MFU is above 100 %: {_one_line(exc)}"
    except (ValueError, TypeError, LookupError) as exc:
        return run, f"our MFU could not be computed: {_one_line(exc)}"
    ours = answer.headline.get("steady_state_mfu")
    row.our_mfu = float(ours) if isinstance(ours, (int, float)) and math.isfinite(ours) else None
    for c in answer.checks:
        if c.code.startswith("claim."):
            row.claim_checks[c.field] = {"status": c.status, "ratio": c.ratio, "message": c.message}
    if row.our_mfu is not None:
        return run, None
    needs = [_NEEDS.get(m["field"], f"model FLOPs per {m.get('unit')}") for m in answer.missing
             if m["field"] != "peak_flops_per_accelerator" or m.get("accelerator")]  # no device: said once
    if not answer.timed:
        return run, "the log has no timed steps"
    return run, "our MFU needs " + (", ".join(needs) if needs else "facts the log does not state")


_NEEDS = {"n_accelerators": "accelerator count", "peak_flops_per_accelerator": "peak"}


def _own_row(name: str | None) -> Any:
    from . import hardware

    if not name:
        return None
    try:
        return hardware.resolve(name)
    except hardware.RegistryError:
        return None


def _judge_peak(row: AuditRow, own: Any, dtype: str, per: str) -> tuple[str, str] | None:
    """(kind, cause) from the peak the claims imply, or None where they imply none."""
    if own is not None and row.claimed_tflops:
        peak = _own_peak(own, dtype, per)
        row.their_mfu_on_registry_peak = row.claimed_tflops / peak if peak else None
    if not (row.claimed_tflops and row.claimed_mfu):
        return None
    peak, matches = implied_peak(row.claimed_tflops, row.claimed_mfu,
                                 accelerator=own.name if own is not None else None, dtype=dtype, per=per)
    row.implied_peak_tflops = peak
    if matches:
        row.peak_match = matches[0].describe()
        row.peak_also = [m.describe() for m in matches[1:8]]
    if own is None:
        said = f"; its peak {peak:,.6g} is {matches[0].describe()}" if matches else ""
        return "not comparable", f"not comparable: no device stated or given{said}"
    return _peak_cause(peak, matches, own, dtype, per)


def _judge(row: AuditRow, run: Any, why_not: str | None) -> None:
    """Set the row's kind and cause from the implied peak, then the answer's claim checks."""
    m = run.meta
    own = _own_row(m.accelerator)
    dtype = m.dtype or "bf16"
    if not m.dtype:
        row.notes.append("dtype not stated or given: bf16 assumed for the peak")
    by_peak = _judge_peak(row, own, dtype, m.peak_per or "device")
    if row.our_mfu is not None and row.claimed_mfu:
        row.ratio = row.our_mfu / row.claimed_mfu
    elif (row.claim_checks.get("tflops_per_accelerator") or {}).get("ratio"):
        row.ratio = row.claim_checks["tflops_per_accelerator"]["ratio"]
    if by_peak and by_peak[0] == "mismatch":
        row.kind, row.cause = by_peak
        return
    warn = [(k, v) for k, v in row.claim_checks.items() if v["status"] == "warn" and v.get("ratio")]
    if warn:
        metric, check = warn[0]
        row.kind = "differs"
        row.cause = f"ours/theirs {check['ratio']:.2f} on {metric}: FLOPs count or step time, cause not named"
        return
    if (by_peak and by_peak[0] == "agrees") or any(v["status"] == "ok" for v in row.claim_checks.values()):
        row.kind, row.cause = "agrees", "agrees"
        if why_not:
            row.notes.append(why_not)
        return
    if by_peak:
        row.kind, row.cause = by_peak[0], by_peak[1] + (f"; {why_not}" if why_not else "")
        return
    if not (row.claimed_tflops or row.claimed_mfu):
        why = "the log prints no TFLOP/s or MFU of its own"
    elif own is None and m.accelerator is None:
        why = "no device stated or given" + (f"; {why_not}" if why_not else "")
    else:
        why = why_not or "no claim could be compared"
    row.kind, row.cause = "not comparable", f"not comparable: {why}"


def audit_run(run: Any, *, path: str | Path | None = None, interface: str = "python",
              **inputs: Any) -> AuditRow:
    """The audit row of one loaded Run; ``inputs`` are :func:`~mfu_toolkit.analysis.inputs.apply_inputs`'s
    keywords (``accelerator``, ``dtype``, ``n_accelerators``, ``preset``, ``seq_len`` ...)."""
    name = str(path) if path is not None else (run.meta.source_path or run.meta.name or "run")
    row = AuditRow(file=name)
    _describe_log(row, run)
    given = {k: v for k, v in inputs.items() if v is not None}
    run, why_not = _ours(row, run, given, interface)
    _judge(row, run, why_not)
    return row


# --------------------------------------------------------------------------------------------
# many logs


def log_files(paths: list[str | Path], *, recursive: bool = False) -> tuple[list[Path], list[str]]:
    """The files to audit and notes on what was left out: a file named is always audited (a row, even
    when it fails to load); a folder gives every file in it that a format detects (recursive with
    ``recursive``), the others are listed in the notes, never dropped silently."""
    from .io import detect_format
    from .run import LoadError

    out: list[Path] = []
    notes: list[str] = []
    for raw in paths:
        p = Path(raw)
        if not p.is_dir():
            out.append(p)
            continue
        found = sorted(q for q in (p.rglob("*") if recursive else p.iterdir())
                       if q.is_file() and not q.name.startswith("."))
        skipped = []
        for q in found:
            try:
                detect_format(q)
                out.append(q)
            except (LoadError, OSError, ValueError):
                skipped.append(q.name)
        if skipped:
            notes.append(f"{p}: {len(skipped)} file(s) no format detects, left out: " + ", ".join(skipped[:10])
                         + (" ..." if len(skipped) > 10 else ""))
        if not found:
            notes.append(f"{p}: no files" + ("" if recursive else " (subfolders need --recursive)"))
    return out, notes


def _load(path: Path) -> Any:
    from .io import load_run
    from .run import LoadWarning

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return load_run(path)


def audit_files(files: list[Path], *, interface: str = "python", **inputs: Any) -> list[AuditRow]:
    """One :class:`AuditRow` per file; a file that fails to load is a row whose ``error`` is the
    error's first line (never a traceback)."""
    from .run import LoadError, SchemaError

    rows = []
    for f in files:
        try:
            run = _load(f)
        except (LoadError, SchemaError, OSError, ValueError, TypeError, LookupError) as exc:
            rows.append(AuditRow(file=str(f), kind="error", cause="not comparable: the log does not load",
                                 error=_one_line(exc)))
            continue
        rows.append(audit_run(run, path=f, interface=interface, **inputs))
    return rows


def audit_paths(paths: list[str | Path] | str | Path, *, recursive: bool = False, interface: str = "python",
                accelerator: str | None = None, dtype: str | None = None, n_accelerators: int | None = None,
                preset: str | None = None, seq_len: int | None = None) -> list[AuditRow]:
    """One :class:`AuditRow` per log under ``paths`` (see :func:`log_files`; what a folder leaves out
    is said in one warning); the facts given apply to every log, as ``mfu analyze`` applies them."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    files, notes = log_files(list(paths), recursive=recursive)
    if notes:
        warnings.warn("; ".join(notes), UserWarning, stacklevel=2)
    return audit_files(files, interface=interface, accelerator=accelerator, dtype=dtype,
                       n_accelerators=n_accelerators, preset=preset, seq_len=seq_len)


def exit_status(rows: list[AuditRow], *, strict: bool = False) -> int:
    """0 every row loads; 2 none does (or there is none); 1 some do not, or with ``strict`` a row
    whose claim mismatches ("mismatch" or "differs")."""
    failed = sum(r.kind == "error" for r in rows)
    if not rows or failed == len(rows):
        return 2
    if failed or (strict and any(r.kind in ("mismatch", "differs") for r in rows)):
        return 1
    return 0


# --------------------------------------------------------------------------------------------
# output

_COLUMNS = ("file", "format", "framework", "device_printed", "device_registry", "accelerator", "dtype",
            "claimed_tflops", "claimed_mfu", "implied_peak_tflops", "peak_match", "their_mfu_on_registry_peak",
            "our_mfu", "ratio", "claims", "kind", "cause", "error", "notes")


def _claims_status(row: AuditRow) -> str:
    """The claim checks in one word: warn before ok before info; "-" where there is none."""
    statuses = {v["status"] for v in row.claim_checks.values()}
    return next((s for s in ("warn", "ok", "info") if s in statuses), "-")


def audit_frame(rows: list[AuditRow]) -> pd.DataFrame:
    """The audit as a DataFrame, one row per log (``claims`` is the claim checks in one word)."""
    records = []
    for r in rows:
        d = r.to_dict()
        d["file"] = Path(r.file).name
        d["claims"] = _claims_status(r)
        d["notes"] = "; ".join(r.notes)
        records.append({k: d.get(k) for k in _COLUMNS})
    return pd.DataFrame.from_records(records, columns=list(_COLUMNS))


def audit_json(rows: list[AuditRow]) -> str:
    """``--json``: a list of row objects with every field, notes included."""
    return json.dumps([r.to_dict() for r in rows], indent=2)


def write_csv(rows: list[AuditRow], path: str | Path) -> None:
    """``--csv PATH``: one line per log, the columns of :func:`audit_frame`."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(_COLUMNS))
        writer.writeheader()
        for rec in audit_frame(rows).to_dict("records"):
            writer.writerow({k: ("" if v is None or (isinstance(v, float) and math.isnan(v)) else v)
                             for k, v in rec.items()})


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


# (header, width) of the first line of each row; the cause and detail follow, indented and wrapped
_HEAD = (("log", 30), ("format", 11), ("device", 11), ("TFLOP/s", 8), ("MFU", 7), ("peak", 8),
         ("ours", 7), ("o/t", 5))


def _first_line(r: AuditRow) -> list[str]:
    device = r.accelerator or (r.device_registry if r.device_registry != "unknown" else (r.device_printed or "-"))
    return [Path(r.file).name, r.format or "-", device, _fmt(r.claimed_tflops, ",.1f"),
            _fmt(r.claimed_mfu, ".2%"), _fmt(r.implied_peak_tflops, ",.0f"), _fmt(r.our_mfu, ".2%"),
            _fmt(r.ratio, ".2f")]


def _detail(r: AuditRow) -> str:
    parts = [r.cause if r.kind != "error" else f"does not load: {r.error}"]
    if r.peak_match:
        parts.append(f"peak = {r.peak_match}")
    if r.their_mfu_on_registry_peak is not None and r.claimed_mfu is None:
        parts.append(f"their TFLOP/s over the registry's {r.accelerator} {r.dtype or 'bf16'} peak: "
                     f"{r.their_mfu_on_registry_peak:.2%} MFU")
    if r.device_printed:
        parts.append(f"device printed {r.device_printed!r} = {r.device_registry}")
    if r.framework:
        parts.append(f"framework {r.framework}")
    if r.claim_checks:
        parts.append("claim checks " + ", ".join(f"{k} {v['status']}" for k, v in r.claim_checks.items()))
    return "; ".join(parts)


def audit_text(rows: list[AuditRow], *, width: int = 100) -> str:
    """The table ``mfu audit`` prints: one line of numbers per log, then its cause and detail."""
    import textwrap

    line = " ".join(f"{h:<{w}}" if i < 3 else f"{h:>{w}}" for i, (h, w) in enumerate(_HEAD)).rstrip()
    out = [line, "-" * min(width, len(line))]
    for r in rows:
        cells = _first_line(r)
        out.append(" ".join(_cut(c, w).ljust(w) if i < 3 else _cut(c, w).rjust(w)
                            for i, (c, (_h, w)) in enumerate(zip(cells, _HEAD, strict=True))).rstrip())
        out += textwrap.wrap(_detail(r), width=width, initial_indent="    -> ", subsequent_indent="       ")
    counts = {k: sum(r.kind == k for r in rows) for k in KINDS}
    out.append("")
    out.append(f"{len(rows)} log(s): " + ", ".join(f"{n} {k}" for k, n in counts.items() if n))
    out.append("peak = the log's TFLOP/s / its MFU; o/t = our MFU / theirs (or our TFLOP/s / theirs)")
    return "\n".join(out)
