"""Stopping the servers the tests start (``make lab``, ``make app``) with everything they spawned."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time


def stop_process_group(proc: subprocess.Popen) -> None:
    """SIGTERM to the process group started with ``start_new_session=True``; SIGKILL after 20 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(20)
    except ProcessLookupError:
        pass  # the group already ended
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def read_until(proc: subprocess.Popen, pattern: str, *, timeout_s: float) -> tuple[re.Match | None, str]:
    """Read ``proc``'s text stdout line by line until a line matches ``pattern`` (regex), it ends, or
    ``timeout_s`` passes; returns the match (None if none) and the text read."""
    seen: list[str] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        m = re.search(pattern, line)
        if m:
            return m, "".join(seen)
    return None, "".join(seen)
