"""Run a benchmark's measurement in a fresh process: ``script --child ARGS...`` prints one JSON line.

A fresh process per figure keeps one measurement's imports, caches and heap out of the next one's.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def run_child(script: str, *args: Any) -> dict:
    """The JSON dict that ``script --child *args`` prints last (run from the project's root)."""
    proc = subprocess.run([sys.executable, script, "--child", *map(str, args)], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True)
    if proc.returncode:
        raise SystemExit(f"child {' '.join(map(str, args))} of {Path(script).name} failed (exit {proc.returncode})")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def best_of(script: str, runs: list[tuple[Any, ...]], repeat: int) -> list[dict]:
    """The fastest (``seconds``) of ``repeat`` fresh processes for each child's arguments, taken in turn
    (a, b, c, a, b, c, ...), so that a busy spell of a shared machine falls on every measurement alike."""
    best: list[dict | None] = [None] * len(runs)
    for _ in range(repeat):
        for i, args in enumerate(runs):
            r = run_child(script, *args)
            if best[i] is None or r["seconds"] < best[i]["seconds"]:
                best[i] = r
    return best  # type: ignore[return-value]
