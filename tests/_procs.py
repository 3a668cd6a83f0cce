"""Stopping the servers the tests start (``make lab``, ``make app``) with everything they spawned."""

from __future__ import annotations

import os
import signal
import subprocess


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group started with ``start_new_session=True``; SIGKILL after 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except ProcessLookupError:
        pass  # the group already ended
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
