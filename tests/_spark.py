"""One local Spark session for a test module (module-scoped fixtures yield from it).

Where PySpark or Java is missing the Spark tests skip, saying why; under ``MFU_REQUIRE_SPARK=1``
(CI) that is a failure instead, so a CI run cannot pass with the Spark engine untested.
"""

from __future__ import annotations

import os
import shutil

import pytest

REQUIRE_ENV = "MFU_REQUIRE_SPARK"


def require_spark() -> None:
    """Skip (or, under MFU_REQUIRE_SPARK=1, fail) where PySpark or Java is missing."""
    reason = None
    try:
        import pyspark  # noqa: F401
    except ImportError as exc:
        reason = f"PySpark is not installed (pip install 'mfu_toolkit[spark]'): {exc}"
    else:
        if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
            reason = "Spark needs Java (openjdk-17-jre-headless)"
    if reason is None:
        return
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1)", pytrace=False)
    pytest.skip(f"{reason}; set {REQUIRE_ENV}=1 to fail instead")


def local_spark():
    """A local[2] session, stopped after the module; see :func:`require_spark`."""
    require_spark()
    from mfu_toolkit.engine.spark import local_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = local_session("local[2]")
    yield s
    s.stop()
