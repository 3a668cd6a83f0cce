"""Renamed keyword arguments, accepted for one release with a ``DeprecationWarning``.

The public signatures speak one vocabulary (``n_accelerators`` for a count of accelerators,
``n_ranks`` for processes, ``*_s`` for seconds). A keyword renamed to it keeps working under its
old name for one release: the call warns, naming the new keyword, and passes the value on;
giving both names is a ``TypeError``.
"""

from __future__ import annotations

import functools
import warnings

TYPE_CHECKING = False  # typing is not imported at run time: `mfu calc` must start fast
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["moved", "renamed"]


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Accept each old keyword name (``renamed(gpus="n_accelerators")``) with a warning."""

    def wrap(fn: F) -> F:
        # a class's __init__ is called by the class's name
        name = fn.__qualname__[:-len(".__init__")] if fn.__qualname__.endswith(".__init__") else fn.__name__

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{name}() got both {old}= (its old name) and {new}=; give {new}= only")
                warnings.warn(f"{name}({old}=...) is renamed {new}=; the old name goes in the next release",
                              DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def moved(old_module: str, new_homes: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that finds each moved name in its new module, with a warning.

    ``__getattr__ = moved(__name__, {"apply_inputs": "mfu_toolkit.inputs"})`` keeps
    ``from mfu_toolkit.analysis import apply_inputs`` working for one release; the new module is
    imported only when the old name is used, so the old one does not depend on it.
    """

    def getattr_(name: str) -> Any:
        if name not in new_homes:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}")
        import importlib

        warnings.warn(f"{old_module}.{name} moved to {new_homes[name]}.{name}; the old name goes in the next "
                      "release", DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(new_homes[name]), name)

    return getattr_
