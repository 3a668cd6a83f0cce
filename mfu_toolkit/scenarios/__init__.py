"""What-if scenarios and synthetic runs: what a job would do, not an analysis of what one did.

- ``simulate``     synthetic runs in the Run schema (:func:`simulate`, :class:`SimConfig`); its
  public name is :mod:`mfu_toolkit.simulate`
- ``replay``       dependency-aware what-if replay of per-operation traces
  (:func:`straggler_whatif`, :func:`slowed_replay`, :class:`WhatIfResult`)
- ``order_stats``  order statistics of a synchronous step: E[slowest of N ranks]
  (:func:`expected_max`, :func:`sync_step_time`, :func:`expected_sync_step`)
- ``whatif``       the explorers' scenarios (:func:`gap_scenario`, :func:`straggler_scenario`,
  :func:`checkpoint_scenario`, :func:`gem_scenario`)

Floors (``tests/test_layering.py`` holds them): ``simulate``, ``replay`` and ``order_stats`` stand
on :mod:`mfu_toolkit.run` (or on numpy and pandas alone) and import nothing from
:mod:`mfu_toolkit.analysis`, so the analyses may use them (``analysis.answer`` replays a trace,
``analysis.stragglers`` re-exports the order statistics). ``whatif`` stands above the analyses
(it uses the accounting, the breakdown and the checkpoint model), so nothing in ``analysis``
imports it. This package's ``__init__`` therefore imports none of its modules (each loads when
first used): importing ``order_stats`` from ``analysis`` must not pull ``whatif`` in.
"""

from __future__ import annotations

__all__ = ["order_stats", "replay", "simulate", "whatif"]


def __getattr__(name: str) -> object:
    """Each module of the package as an attribute, imported on first use."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return importlib.import_module(f"{__name__}.{name}")
