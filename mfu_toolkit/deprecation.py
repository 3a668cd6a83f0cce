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

__all__ = ["renamed"]


def renamed(**old_to_new: str) -> Callable[[F], F]:
    """Accept each old keyword name (``renamed(gpus="n_accelerators")``) with a warning."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            for old, new in old_to_new.items():
                if old not in kwargs:
                    continue
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got both {old}= (its old name) and {new}=; give {new}= only")
                warnings.warn(f"{fn.__name__}({old}=...) is renamed {new}=; the old name goes in the next release",
                              DeprecationWarning, stacklevel=2)
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap
