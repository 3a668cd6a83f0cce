"""Synthetic training runs for what-ifs: the public name of :mod:`mfu_toolkit.scenarios.simulate`.

``from mfu_toolkit.simulate import SimConfig, simulate`` is the documented import; the code lives
with the other scenarios in :mod:`mfu_toolkit.scenarios`.
"""

from __future__ import annotations

from .scenarios.simulate import CHECKPOINT_MODES, SimConfig, SimConfigError, simulate, write_dataset

__all__ = ["SimConfig", "SimConfigError", "simulate", "write_dataset", "CHECKPOINT_MODES"]
