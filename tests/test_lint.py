"""The code style is held, not only declared: ``ruff check`` (pyproject's rules, lines of at most
120 characters, E501 included) passes over the package, tests, benchmarks and tools."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_passes_with_the_line_length_enforced():
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff)] if ruff.exists() else [shutil.which("ruff") or "ruff"]
    r = subprocess.run([*cmd, "check", "--no-cache", "mfu_toolkit", "tests", "benchmarks", "tools"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    settings = (ROOT / "pyproject.toml").read_text()
    assert "line-length = 120" in settings and "E501" not in settings  # declared and not ignored
