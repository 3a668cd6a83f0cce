"""mfu_toolkit: measure and explain the Model FLOPs Utilization (MFU) of training jobs.

Public map (each room has one job; dependencies point one way):

- ``mfu_toolkit.formulas``   MFU, HFU, throughput and scaling arithmetic (no pandas).
- ``mfu_toolkit.hardware``   the peak-FLOPs registry, with sources (no pandas).
- ``mfu_toolkit.flops``      model FLOPs of transformers and recommendation models.
- ``mfu_toolkit.run``        the ``Run`` schema every loader returns and every analysis takes.
- ``mfu_toolkit.io``         loaders for real training logs (``load_run``).
- ``mfu_toolkit.analysis``   breakdown, stragglers, checkpoints, scaling, scorecard, compare.
- ``mfu_toolkit.simulate``   synthetic runs for what-ifs.
- ``mfu_toolkit.plots`` / ``mfu_toolkit.widgets``  seaborn figures and ipywidgets explorers.
- ``mfu_toolkit.cli``        the ``mfu`` command.

Importing the package is cheap: the pandas-based rooms load only when first used.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .formulas import (  # noqa: F401  (re-exported; pure Python + numpy)
    MFUAbove100Error,
    MFUResult,
    compute_mfu,
    hfu,
    mfu,
)
