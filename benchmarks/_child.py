"""Run a benchmark's measurement in a fresh process: ``script --child ARGS...`` prints one JSON line.

A fresh process per figure keeps one measurement's imports, caches and heap out of the next one's.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def parse_or_serve(ap: argparse.ArgumentParser, child: Callable[[str, str], dict]) -> argparse.Namespace | None:
    """The script's arguments, with ``--repeat``; in a child process (``--child MODE PATH``, as :func:`run_child`
    starts it) run ``child(mode, path)``, print its JSON and return None."""
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes per measurement (best kept)")
    ap.add_argument("--child", nargs=2, metavar=("MODE", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(*a.child)))
        return None
    return a


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
