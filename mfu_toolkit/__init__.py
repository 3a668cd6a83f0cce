"""mfu_toolkit: measure and explain the Model FLOPs Utilization (MFU) of training jobs.

Public map (each room has one job; dependencies point one way):

- ``mfu_toolkit.formulas``   MFU, HFU, throughput and scaling arithmetic (no pandas).
- ``mfu_toolkit.hardware``   the peak-FLOPs registry, with sources (no pandas).
- ``mfu_toolkit.flops``      model FLOPs of transformers and recommendation models.
- ``mfu_toolkit.run``        the ``Run`` schema every loader returns and every analysis takes.
- ``mfu_toolkit.io``         loaders for real training logs (``load_run``).
- ``mfu_toolkit.analysis``   breakdown, stragglers, checkpoints, scaling, scorecard, compare.
- ``mfu_toolkit.scenarios``  what a job would do: synthetic runs (``simulate``, public name
  ``mfu_toolkit.simulate``), trace replay, order statistics and the explorers' what-ifs.
- ``mfu_toolkit.plots`` / ``mfu_toolkit.widgets``  seaborn figures and ipywidgets explorers.
- ``mfu_toolkit.cli``        the ``mfu`` command.

Importing the package is cheap: the pandas-based rooms load only when first used.
"""

from __future__ import annotations

from .formulas import (  # noqa: F401  (re-exported; pure Python + numpy)
    MFUAbove100Error,
    MFUResult,
    compute_mfu,
    hfu,
    mfu,
)

# Lazily re-exported names: attribute -> module that defines it. Importing ``mfu_toolkit``
# stays cheap; the pandas-based rooms load on first use.
_LAZY = {
    "hardware": "mfu_toolkit.hardware",
    "get_peak": "mfu_toolkit.hardware",
    "model_flops": "mfu_toolkit.flops",
    "list_presets": "mfu_toolkit.flops",
    "Run": "mfu_toolkit.run",
    "RunMeta": "mfu_toolkit.run",
    "LoadReport": "mfu_toolkit.run",
    "LoadError": "mfu_toolkit.run",
    "load_run": "mfu_toolkit.io",
    "load_table": "mfu_toolkit.io",
    "SimConfig": "mfu_toolkit.scenarios.simulate",
    "breakdown": "mfu_toolkit.analysis",
    "mfu_summary": "mfu_toolkit.analysis",
    "scorecard": "mfu_toolkit.analysis",
    "compare": "mfu_toolkit.analysis",
}


def _version() -> str:
    """The installed distribution's version (``version`` in pyproject.toml, the one place it is set)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("mfu_toolkit")
    except PackageNotFoundError:  # imported from a source tree that was never installed
        return "0+unknown"


def __getattr__(name: str):
    if name == "__version__":  # read on first use: importlib.metadata costs start-up time
        globals()[name] = value = _version()
        return value
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mfu_toolkit' has no attribute {name!r}")
    import importlib

    mod = importlib.import_module(module)
    value = mod if module.rsplit(".", 1)[-1] == name else getattr(mod, name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | {"__version__"})
