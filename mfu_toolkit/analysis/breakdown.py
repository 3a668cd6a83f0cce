"""Moved: the MFU summary and the waterfall table are :mod:`mfu_toolkit.analysis.waterfall`, the
accounting's names :mod:`mfu_toolkit.analysis.accounting`. ``mfu_toolkit.analysis.breakdown`` is
the waterfall function (the module of the same name hid it); importing a name from this module
works for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from ..deprecation import moved

_WATERFALL = ("MFUSummary", "breakdown", "exposed_comm_note", "mfu_summary", "summary_of", "waterfall_of")
_ACCOUNTING = ("CATEGORIES", "TIMELINE_PRIORITY", "Accounting", "SteadyWindow", "account", "accounted", "job_steps",
               "steady_state_window")

__getattr__ = moved(__name__, {**dict.fromkeys(_WATERFALL, "mfu_toolkit.analysis.waterfall"),
                               **dict.fromkeys(_ACCOUNTING, "mfu_toolkit.analysis.accounting")})
