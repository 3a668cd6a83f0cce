"""`make lab`, one of the two commands the README promises, starts JupyterLab — as root too.

Jupyter refuses to run as root without ``--allow-root`` ("Running as root is not recommended"),
which is how containers and dev VMs run it. The Makefile adds the flag only for root and says so.
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from _procs import read_until, stop_process_group

ROOT = Path(__file__).resolve().parents[1]
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(shutil.which("make") is None or not (ROOT / ".venv" / "bin" / "python").exists(),
                                 reason="needs make and the project's .venv (make venv)")]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_dry_run_adds_allow_root_only_for_root():
    out = subprocess.run(["make", "-n", "lab"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    command = [line for line in out.splitlines() if "jupyter lab" in line]
    assert command, out
    assert ("--allow-root" in command[0]) == (os.geteuid() == 0)


def test_make_lab_starts_and_prints_its_url(tmp_path):
    port = _free_port()
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR": str(tmp_path / "cfg")}
    proc = subprocess.Popen(["make", "lab", f"PORT={port}"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        _, text = read_until(proc, re.escape(f"127.0.0.1:{port}/lab"), timeout_s=90)
        assert f"127.0.0.1:{port}/lab" in text, text[-2000:]
        assert "Running as root is not recommended" not in text
        if os.geteuid() == 0:
            assert "running as root, so JupyterLab starts with --allow-root" in text
    finally:
        stop_process_group(proc)
