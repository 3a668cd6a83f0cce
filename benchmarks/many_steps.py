"""Peak memory of `mfu analyze DATASET --engine duckdb` as the step count grows, against its limit.

The same number of rows is written as few ranks x many steps and many ranks x few steps
(``mfu simulate --dataset``), then each is analysed in a fresh process with ``--memory-limit``.
Prints each run's peak RSS over the limit (target <= 1.0: the whole process within the limit,
whatever the step count) or the refusal it gave instead, and the bare DuckDB job-step query over
the same rows in one piece, for comparison (it holds every step's group at once).

    .venv/bin/python benchmarks/many_steps.py [--rows 30000000] [--ranks 8,64,512] [--limit 3GB]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mfu_toolkit.engine.duck import memory_bytes  # noqa: E402


def _measure(cmd: list[str]) -> tuple[float, float, int, str]:
    """Wall seconds, peak RSS (bytes) and exit status of one child, and its last stderr line."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    err = proc.stderr.read().strip().splitlines() if proc.stderr else []
    return time.perf_counter() - t, usage.ru_maxrss * 1024.0, os.waitstatus_to_exitcode(status), (err or [""])[-1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=30_000_000)
    ap.add_argument("--ranks", default="8,64,512", help="comma-separated rank counts (steps = rows / ranks)")
    ap.add_argument("--limit", default="3GB", help="the --memory-limit given to mfu analyze")
    ap.add_argument("--folder", default=None, help="where the datasets are written (kept when given)")
    a = ap.parse_args()
    limit = memory_bytes(a.limit)
    mfu = str(Path(sys.executable).with_name("mfu"))
    root = Path(a.folder or tempfile.mkdtemp(prefix="many_steps_"))
    print(f"{a.rows:,} rows each; --memory-limit {a.limit} ({limit / 1e9:.2f} GB)\n")
    print(f"{'ranks':>6} {'steps':>11} {'seconds':>8} {'peak GB':>8} {'peak/limit':>10}  verdict")
    for ranks in (int(r) for r in a.ranks.split(",")):
        steps = a.rows // ranks
        folder = root / f"{ranks}x{steps}"
        if not folder.exists():
            subprocess.run([mfu, "simulate", "--ranks", str(ranks), "--steps", str(steps), "--jitter", "0.03",
                            "--dataset", str(folder)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        secs, peak, code, last = _measure([mfu, "analyze", str(folder), "--engine", "duckdb",
                                           "--memory-limit", a.limit])
        verdict = "answered" if code in (0, 1) else f"refused: {last[-160:]}"
        print(f"{ranks:>6} {steps:>11,} {secs:>8.1f} {peak / 1e9:>8.2f} {peak / limit:>10.2f}  {verdict}")
    print("\npeak/limit: the whole process's peak resident memory over --memory-limit (target <= 1.00)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
