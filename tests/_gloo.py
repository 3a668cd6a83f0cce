"""PyTorch with a gloo backend for the tests that record a job, or a skip that says what is missing.

``MFU_REQUIRE_TORCH=1`` (CI) makes a missing PyTorch a failure instead of a skip.
"""

from __future__ import annotations

import os
from types import ModuleType

import pytest

REQUIRE_ENV = "MFU_REQUIRE_TORCH"


def require_gloo_torch() -> ModuleType:
    """``torch``, once it imports and its ``torch.distributed`` has gloo; otherwise skip (or fail)."""
    try:
        import torch
        import torch.distributed as dist
    except ImportError as exc:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{REQUIRE_ENV}=1 but PyTorch cannot be imported: {exc}", pytrace=False)
        pytest.skip("PyTorch is not installed (pip install 'mfu_toolkit[record]'); "
                    f"set {REQUIRE_ENV}=1 to fail instead")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("this PyTorch build has no gloo backend for torch.distributed")
    return torch
