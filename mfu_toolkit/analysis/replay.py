"""Moved to :mod:`mfu_toolkit.scenarios.replay`; its names resolve here for one release, with a
``DeprecationWarning``."""

from ..deprecation import moved
from ..scenarios import replay as _new

__all__ = list(_new.__all__)
__getattr__ = moved(__name__, dict.fromkeys(_new.__all__, _new.__name__))
