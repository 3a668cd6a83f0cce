"""Format detection by content: every loader sniffs the file, then the evidence of the head decides.

Each format module (``mfu_toolkit.io.formats.<name>``, see :mod:`mfu_toolkit.io.base`) has
``NAME``, ``sniff(path, head) -> float`` (0..1) and ``parse(reader, options)``. ``head`` is the
first 8 KiB (decompressed when gzipped), ``b""`` for a directory.

1. **Markers.** Every format sniffs the 8 KiB head. A format that scores at least 0.5 is a
   candidate. Exactly one certain format (1.0: a signature only it writes, such as a saved Run's
   metadata key or NeMo's ``train_step_timing in s`` field) wins outright.
2. **A wider look.** In a text file (no NUL byte in its head) longer than 8 KiB, the formats that
   saw nothing in 8 KiB sniff its first :data:`EVIDENCE_BYTES` (a fixed head: detection stays
   bounded), so records that start after a long preamble still make their format a candidate.
3. **Evidence.** With two or more candidates, each one's own parser reads that head (a copy of
   it, cut at the last line end) and the records it finds there (step rows, events, table rows)
   rank it: a format that read records beats one that could not judge (it refused a head cut
   from a longer file, as a JSON document cut short is refused), which beats one that read only
   facts (a launcher line stating the world size), which beats one that read nothing. One marker
   line no longer outweighs a hundred records of another format. Within a rank the best score
   wins; two scores within 0.1 of each other are an ambiguity that names the candidates (and what
   each read), unless exactly one of them is certain.

No score of 0.5 is an error that lists what was tried and advises ``format=``. The generic
``table`` loader is a fallback: it is considered only when no specific format claims the file.
:func:`rank_formats` gives the whole ranking (``load_run`` tries the next candidate when the first
finds no records in the whole file, and notes why); :func:`detect_format` the winner's name.

Format modules are imported lazily. A format that fails to import, or whose ``sniff`` raises,
is an error naming the format and the cause: a broken format never silently drops out of the
candidates (which would turn its files into "could not recognise the file's format").
"""

from __future__ import annotations

import importlib
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..run import LoadError
from .reading import read_head

__all__ = [
    "FORMATS",
    "FALLBACK_FORMATS",
    "REGISTRY",
    "FormatInfo",
    "EVIDENCE_BYTES",
    "Candidate",
    "Ranking",
    "available_formats",
    "get_loader",
    "sniff_all",
    "rank_formats",
    "detect_format",
]

@dataclass(frozen=True)
class FormatInfo:
    """One row of the format registry: the name ``load_run(format=...)`` takes, the module that
    reads it (``sniff`` and ``parse``, see :mod:`mfu_toolkit.io.base`) and a one-line summary."""

    name: str
    module: str
    summary: str


def _row(name: str, summary: str) -> FormatInfo:
    return FormatInfo(name, f"mfu_toolkit.io.formats.{name}", summary)


# The registry, in detection order (the first confident sniff wins ties; the fallback last).
REGISTRY: dict[str, FormatInfo] = {r.name: r for r in (
    _row("run_parquet", "a Run saved by save_run: one Parquet file, its meta in the file's metadata"),
    _row("mlperf", "MLPerf Training result logs: :::MLLOG JSON lines and :::SYSJSON"),
    _row("megatron", "Megatron-LM and Megatron-DeepSpeed stdout: iteration lines, timers, the argument banner"),
    _row("megatron_json", "Megatron CI per-step golden-values JSON, in its two layouts"),
    _row("tensorboard", "TensorBoard event files (as Megatron-LM writes them), read without TensorFlow"),
    _row("sacct", "Slurm sacct output, text or --json: jobs, steps, states, exit codes and requeues"),
    _row("goodput", "job event logs of Google's ml-goodput-measurement library"),
    _row("gpu_goodput", "GPU goodput event logs of Google's resiliency library: job starts, checkpoints"),
    _row("torchtitan", "torchtitan stdout: step lines (loss, tps, mfu) and the start-up lines"),
    _row("hf_trainer", "Hugging Face Trainer logs: trainer_state.json, results JSON, stdout dict lines"),
    _row("llamafactory", "LLaMA-Factory trainer_log.jsonl: steps, elapsed time, relaunches, copies collapsed"),
    _row("lightning", "PyTorch Lightning CSVLogger output: metrics.csv and hparams.yaml, version_N folders"),
    _row("wandb", "Weights & Biases exports: history and system CSV, wandb-summary.json, wandb-metadata.json"),
    _row("kineto", "PyTorch profiler (Kineto) Chrome traces: per-rank steps, GPU busy time, compute vs NCCL"),
    _row("nsys", "Nsight Systems SQLite (or parquetdir) exports: kernels per GPU, NCCL, NVTX step ranges"),
    _row("xplane", "JAX/XLA profiles: .xplane.pb (XSpace protobuf) and XLA trace JSON; device time, steps"),
    _row("straggler_ops", "per-rank operation traces in the StragglerAnalysis columnar form (Parquet or CSV)"),
    _row("parquet_dataset",
         "per-rank step logs at scale: a Parquet dataset, reduced in memory, out of core or on Spark"),
    _row("maxtext", "MaxText (JAX) stdout: completed step lines with seconds and TFLOP/s/device"),
    _row("dcgm", "NVIDIA DCGM: dcgm-exporter /metrics text and dcgmi dmon tables"),
    _row("nemo", "NeMo 2, NeMo-Run and Megatron-Bridge stdout: global_step and train_step_timing lines"),
    _row("deepspeed", "DeepSpeed engine and DeepSpeed-Chat training logs"),
    _row("nccl", "NCCL Inspector dumps (JSON lines, Prometheus) and NCCL_DEBUG=INFO logs: collectives, comms"),
    _row("recorded", "a folder written by mfu_toolkit.record.StepRecorder"),
    _row("flight_recorder", "PyTorch NCCL Flight Recorder dumps (pickle or JSON, per rank): collectives, groups"),
    _row("table", "generic step tables: CSV or TSV, JSON lines or Parquet, with a column mapping"),
)}
FORMATS: tuple[str, ...] = tuple(REGISTRY)
FALLBACK_FORMATS: frozenset[str] = frozenset({"table"})

THRESHOLD = 0.5
MARGIN = 0.1
# The head the wider look sniffs and the candidates' parsers read: a fixed size keeps detection
# bounded (a few parses of 256 KiB, tens of milliseconds) whatever the input's size.
EVIDENCE_BYTES = 256 << 10

_modules: dict[str, ModuleType] = {}
_import_errors: dict[str, str] = {}


def _import(name: str) -> ModuleType | None:
    """The registry row's module, or None with the reason kept (a broken installation)."""
    if name in _modules:
        return _modules[name]
    try:
        mod = importlib.import_module(REGISTRY[name].module)
    except Exception as exc:  # a module that fails to import is a broken format, said so on use
        _import_errors[name] = f"{type(exc).__name__}: {exc}"
        return None
    if not (hasattr(mod, "sniff") and hasattr(mod, "parse")):
        _import_errors[name] = "module has no sniff()/parse()"
        return None
    _import_errors.pop(name, None)
    _modules[name] = mod
    return mod


def _broken(name: str) -> LoadError:
    return LoadError(
        f"format {name!r} is broken in this installation ({_import_errors.get(name, 'module missing')}); "
        "reinstall mfu_toolkit, or pass format=<another format>",
        field="format",
    )


def available_formats() -> list[str]:
    """The registered formats whose loader module imports in this installation."""
    return [n for n in FORMATS if _import(n) is not None]


def get_loader(name: str) -> ModuleType:
    """The loader module for ``name``; a wrong name is an error listing the valid ones."""
    if name not in FORMATS:
        raise LoadError(
            f"unknown format {name!r}; valid formats: {', '.join(FORMATS)} (or 'auto')",
            field="format",
        )
    mod = _import(name)
    if mod is None:
        raise LoadError(
            f"format {name!r} is not available in this installation "
            f"({_import_errors.get(name, 'module missing')}); available: "
            f"{', '.join(available_formats())}",
            field="format",
        )
    return mod


def _check_path(path: Path) -> bytes:
    """Head bytes of a readable, non-empty file or b'' for a directory with entries."""
    if not path.exists():
        raise LoadError("no such file or directory", path=path)
    if path.is_dir():
        try:
            next(path.iterdir())
        except StopIteration:
            raise LoadError("empty directory: no logs to load", path=path) from None
        except OSError as exc:
            raise LoadError(f"cannot list directory ({exc})", path=path) from None
        return b""
    try:
        if path.stat().st_size == 0:
            raise LoadError("empty file: nothing to load", path=path)
        head = read_head(path)
    except OSError as exc:
        raise LoadError(f"cannot read file ({exc})", path=path) from None
    if not head:
        raise LoadError("empty file (or an empty/corrupt gzip stream): nothing to load", path=path)
    return head


def sniff_all(path: str | Path) -> dict[str, float]:
    """Every format's confidence for ``path``; a format that cannot import or sniff is an error."""
    p = Path(path)
    return _sniff(p, _check_path(p))


def _sniff(p: Path, head: bytes, names: tuple[str, ...] | None = None) -> dict[str, float]:
    """Every format's (or those in ``names``) confidence that ``p`` holds it, judged from ``head``."""
    scores: dict[str, float] = {}
    for name in FORMATS if names is None else names:
        mod = _import(name)
        if mod is None:
            raise _broken(name)
        try:
            s = float(mod.sniff(p, head))
        except LoadError:
            raise
        except Exception as exc:
            raise LoadError(
                f"the {name} format's sniffer failed on this input ({type(exc).__name__}: {exc}); "
                "this is a bug in mfu_toolkit; pass format=<name> to bypass detection",
                path=p,
            ) from exc
        scores[name] = s if s == s else 0.0  # NaN -> 0
    return scores


# --- evidence: what each candidate reads from the head --------------------------------------


@dataclass(frozen=True)
class Candidate:
    """One format that claims the input: its sniff score and what it read from the evidence head.

    ``tier`` orders candidates before their scores: 3 read records (steps, events or table rows)
    there, 2 could not judge (it refused a head cut from a longer file, as a JSON document cut
    short is refused), 1 read facts or claims but no record, 0 refused the whole file or read
    nothing; ``None`` when no evidence was needed (one candidate, or one certain signature).
    """

    name: str
    score: float
    tier: int | None = None
    records: int = 0
    evidence: str = ""

    def describe(self) -> str:
        """``deepspeed (score 0.60; read no records in the first 256 KiB: ...)``."""
        return f"{self.name} (score {self.score:.2f}" + (f"; {self.evidence}" if self.evidence else "") + ")"


@dataclass(frozen=True)
class Ranking:
    """The formats that claim an input, best first, and notes on how evidence reordered them."""

    path: Path
    scores: dict[str, float]
    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()

    @property
    def best(self) -> str:
        return self.candidates[0].name


def _head_text(n: int) -> str:
    return f"{n // 1024} KiB" if n % 1024 == 0 else f"{n:,} bytes"


def _count(parsed: Any) -> tuple[int, str]:
    """Records a format's ``Parsed`` holds (step rows, events, table rows) and how they split."""
    steps = parsed.steps
    if isinstance(steps, Mapping):
        n_steps = len(next(iter(steps.values()), ()))
    else:
        n_steps = 0 if steps is None else len(steps)
    if parsed.reductions is not None:
        n_steps += int(parsed.reductions.n_rows)
    if parsed.restored is not None:
        n_steps += len(parsed.restored.steps)
    n_events = 0 if parsed.events is None else len(parsed.events)
    n_tables = sum(len(t) for t in parsed.tables.values())
    parts = [f"{n} {what}" for n, what in ((n_steps, "step rows"), (n_events, "events"), (n_tables, "table rows")) if n]
    return n_steps + n_events + n_tables, ", ".join(parts)


def message_of(exc: BaseException) -> str:
    """A LoadError's message without its path prefix (said once where it is quoted)."""
    text = str(exc)
    path = getattr(exc, "path", None)
    if path and text.startswith(path):
        text = text[len(path):].lstrip(",: ")
    return text.strip()[:240]


def _parse_head(name: str, src: Path, display: str) -> Any:
    """Run format ``name``'s parser over ``src`` (a copy of the head) with its default options."""
    from . import base, rules
    from .reading import Limits, Reader

    mod = get_loader(name)
    reader = Reader(src, name, limits=Limits(), display=display)
    token = rules.start_row_budget(EVIDENCE_BYTES)
    try:
        return mod.parse(reader, base.options_of(mod)())
    finally:
        rules.end_row_budget(token)


def _evidence(name: str, score: float, src: Path, display: str, whole: bool) -> Candidate:
    """What format ``name`` reads from the head copied to ``src`` (``whole``: the head is the file)."""
    where = "in the file" if whole else f"in the first {_head_text(EVIDENCE_BYTES)}"
    try:
        parsed = _parse_head(name, src, display)
    except LoadError as exc:
        tier = 0 if whole else 2
        return Candidate(name, score, tier, 0, f"refused {where}: {message_of(exc)}")
    except Exception as exc:  # noqa: BLE001 - a parser's bug is its load's error, not detection's
        return Candidate(name, score, 2, 0, f"its parser failed {where} ({type(exc).__name__}: {exc})"[:240])
    n, split = _count(parsed)
    if n:
        return Candidate(name, score, 3, n, f"read {split} {where}")
    if parsed.facts or parsed.claims:
        stated = sorted({f.name for f in parsed.facts} | {c.metric for c in parsed.claims})
        return Candidate(name, score, 1, 0, f"read no records {where}, only what it states ({', '.join(stated)})")
    return Candidate(name, score, 0, 0, f"read nothing {where}")


def _weigh(p: Path, pool: dict[str, float], head: bytes) -> list[Candidate]:
    """Each candidate of ``pool`` with the evidence of ``head`` (the evidence head of ``p``)."""
    whole = len(head) < EVIDENCE_BYTES
    if not whole:  # a line cut in two is no record of anyone's
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        head = head[: cut + 1] if cut > 0 else head
    name = p.name[:-3] if p.name.endswith(".gz") else p.name  # the copy is already inflated
    with tempfile.TemporaryDirectory(prefix="mfu-detect-") as tmp:
        src = Path(tmp) / (name or "head")
        src.write_bytes(head)
        return [_evidence(n, s, src, str(p), whole) for n, s in pool.items()]


def _pool(scores: dict[str, float]) -> dict[str, float]:
    """The candidates: specific formats at or above the threshold, else the fallbacks that are."""
    specific = {n: s for n, s in scores.items() if n not in FALLBACK_FORMATS and s >= THRESHOLD}
    return specific or {n: s for n, s in scores.items() if n in FALLBACK_FORMATS and s >= THRESHOLD}


def _unrecognised(p: Path, scores: dict[str, float]) -> LoadError:
    what = "directory" if p.is_dir() else "file"
    return LoadError(
        f"could not recognise the {what}'s format (scores: {_fmt_scores(scores)}); "
        f"candidates: {', '.join(scores)}.",
        path=p, hint="choose_format",
    )


def _fmt_scores(scores: dict[str, float]) -> str:
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    shown = [f"{n} ({s:.2f})" for n, s in ranked if s > 0] or ["none scored above 0"]
    return ", ".join(shown)


def _order(cands: list[Candidate]) -> list[Candidate]:
    """Best first: by evidence tier, then score, then registry order."""
    return sorted(cands, key=lambda c: (-(c.tier or 0), -c.score, FORMATS.index(c.name) if c.name in FORMATS else 0))


def _check_ambiguity(p: Path, ranked: list[Candidate]) -> None:
    """Two candidates of the best tier within MARGIN of each other, and no certain one: an error."""
    top = [c for c in ranked if c.tier == ranked[0].tier]
    if [c.score >= 1.0 for c in top].count(True) == 1 or len(top) < 2:
        return
    if top[0].score - top[1].score < MARGIN - 1e-9:
        close = [c for c in top if top[0].score - c.score < MARGIN - 1e-9]
        names = tuple(c.name for c in close)
        raise LoadError(
            f"ambiguous format: {', '.join(f'{c.name} ({c.score:.2f})' for c in close)} fit almost "
            f"equally well" + (f" ({'; '.join(c.describe() for c in close)})" if close[0].evidence else ""),
            path=p, asks=("format",), examples=(names,), python=f"pass format=<one of {list(names)}>",
        )


def _weighed(ranked: list[Candidate]) -> tuple[str, ...]:
    """A note saying what each candidate read from the head when the evidence was weighed."""
    if len(ranked) < 2 or ranked[0].tier is None:
        return ()
    best = ranked[0]
    over = [c.name for c in ranked[1:] if c.score > best.score]
    return (
        "format detection: " + "; ".join(c.describe() for c in ranked) + f"; read as {best.name}"
        + (f", ahead of {', '.join(over)} (scored higher by its markers)" if over else ""),
    )


def rank_formats(path: str | Path) -> Ranking:
    """The formats that claim ``path``, best first, judged by content (see the module docstring)."""
    p = Path(path)
    scores = sniff_all(p)
    pool = _pool(scores)
    certain = [n for n, s in pool.items() if s >= 1.0]
    if len(certain) == 1:  # a signature only its format writes (see the module docstring)
        rest = [Candidate(n, s) for n, s in pool.items() if n != certain[0]]
        return Ranking(p, scores, (Candidate(certain[0], pool[certain[0]]), *_order(rest)))
    head = b""
    first = _check_path(p) if p.is_file() else b""
    if len(first) >= 8192 and b"\0" not in first:  # a text longer than the sniffers' head: a wider look
        head = read_head(p, EVIDENCE_BYTES)
        # only formats that saw nothing in 8 KiB look again (the others judged already, some over
        # more than 8 KiB of their own)
        wider = _sniff(p, head, tuple(n for n, s in scores.items() if s <= 0.0))
        scores = {n: max(s, wider.get(n, 0.0)) for n, s in scores.items()}
        pool = _pool(scores)
    if not pool:
        raise _unrecognised(p, scores)
    if len(pool) == 1 or not p.is_file():
        ranked = _order([Candidate(n, s) for n, s in pool.items()])
    else:
        ranked = _order(_weigh(p, pool, head or read_head(p, EVIDENCE_BYTES)))
    _check_ambiguity(p, ranked)
    return Ranking(p, scores, tuple(ranked), _weighed(ranked))


def detect_format(path: str | Path) -> str:
    """The name of the format ``path`` holds, judged by content (see the module docstring)."""
    return rank_formats(path).best
