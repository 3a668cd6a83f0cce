"""Format detection by content: every loader sniffs the file, the most confident one wins.

Each format module (``mfu_toolkit.io.formats.<name>``, see :mod:`mfu_toolkit.io.base`) has
``NAME``, ``sniff(path, head) -> float`` (0..1) and ``parse(reader, options)``. ``head`` is the
first 8 KiB (decompressed when gzipped), ``b""`` for a directory. The best score
of at least 0.5 wins; two scores within 0.1 of each other are an ambiguity that names the
candidates, unless exactly one format is certain (1.0: a signature only it writes, such as a
saved Run's metadata key or NeMo's ``train_step_timing in s`` field); no score
of 0.5 is an error that lists what was tried and advises ``format=``.
The generic ``table`` loader is a fallback: it is considered only when no specific format
claims the file.

Format modules are imported lazily. A format that fails to import, or whose ``sniff`` raises,
is an error naming the format and the cause: a broken format never silently drops out of the
candidates (which would turn its files into "could not recognise the file's format").
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from ..run import LoadError
from .reading import read_head

__all__ = ["FORMATS", "FALLBACK_FORMATS", "available_formats", "get_loader", "sniff_all", "detect_format"]

# Registry: module names under mfu_toolkit.io, in detection order.
FORMATS: tuple[str, ...] = (
    "run_parquet",
    "mlperf",
    "megatron",
    "megatron_json",
    "tensorboard",
    "sacct",
    "goodput",
    "torchtitan",
    "hf_trainer",
    "lightning",
    "wandb",
    "kineto",
    "straggler_ops",
    "parquet_dataset",
    "maxtext",
    "dcgm",
    "nemo",
    "deepspeed",
    "recorded",
    "table",
)
FALLBACK_FORMATS: frozenset[str] = frozenset({"table"})

THRESHOLD = 0.5
MARGIN = 0.1

_modules: dict[str, ModuleType] = {}
_import_errors: dict[str, str] = {}


def _import(name: str) -> ModuleType | None:
    if name in _modules:
        return _modules[name]
    mod = None
    for qual in (f"{__package__}.formats.{name}", f"{__package__}.{name}"):
        try:
            mod = importlib.import_module(qual)
            break
        except ModuleNotFoundError as exc:
            if exc.name != qual:  # the module exists but imports something missing
                _import_errors[name] = f"{type(exc).__name__}: {exc}"
                return None
        except Exception as exc:
            _import_errors[name] = f"{type(exc).__name__}: {exc}"
            return None
    if mod is None:
        _import_errors[name] = "module missing"
        return None
    if not (hasattr(mod, "sniff") and (hasattr(mod, "parse") or hasattr(mod, "load"))):
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
    head = _check_path(p)
    scores: dict[str, float] = {}
    for name in FORMATS:
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


def _fmt_scores(scores: dict[str, float]) -> str:
    ranked = sorted(scores.items(), key=lambda kv: -kv[1])
    shown = [f"{n} ({s:.2f})" for n, s in ranked if s > 0] or ["none scored above 0"]
    return ", ".join(shown)


def detect_format(path: str | Path) -> str:
    """The name of the format ``path`` holds, judged by content (see module docstring)."""
    p = Path(path)
    scores = sniff_all(p)
    specific = {n: s for n, s in scores.items() if n not in FALLBACK_FORMATS and s >= THRESHOLD}
    pool = specific or {n: s for n, s in scores.items() if n in FALLBACK_FORMATS and s >= THRESHOLD}
    if not pool:
        what = "directory" if p.is_dir() else "file"
        raise LoadError(
            f"could not recognise the {what}'s format (scores: {_fmt_scores(scores)}); "
            f"candidates: {', '.join(scores)}. Pass format=<name> to choose one, e.g. "
            f"format='table' with columns={{...}} for a generic CSV/JSONL/Parquet table",
            path=p,
        )
    certain = [n for n, s in pool.items() if s >= 1.0]
    if len(certain) == 1:  # a signature only its format writes (see the module docstring)
        return certain[0]
    ranked = sorted(pool.items(), key=lambda kv: -kv[1])
    if len(ranked) > 1 and ranked[0][1] - ranked[1][1] < MARGIN - 1e-9:
        close = [n for n, s in ranked if ranked[0][1] - s < MARGIN - 1e-9]
        raise LoadError(
            f"ambiguous format: {', '.join(f'{n} ({pool[n]:.2f})' for n in close)} fit almost "
            f"equally well; pass format=<one of {close}>",
            path=p,
        )
    return ranked[0][0]
