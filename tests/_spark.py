"""One local Spark session for a test module (module-scoped fixtures yield from it)."""

from __future__ import annotations

import os
import shutil

import pytest


def local_spark():
    """A local[2] session, stopped after the module; skips where PySpark or Java is missing."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None:
        pytest.skip("Spark needs Java (openjdk-17-jre-headless)")
    from mfu_toolkit.engine.spark import local_session

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    s = local_session("local[2]")
    yield s
    s.stop()
