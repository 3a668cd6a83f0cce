"""Scale: `mfu analyze DATASET --engine duckdb` against the bare DuckDB reductions, same run.

Writes a simulated dataset (``mfu simulate --dataset``, in chunks) unless it exists, then runs,
each in a fresh process: the bare reductions (the job-step query over every row at once and the
per-rank exact medians, in one DuckDB connection with its defaults), and the toolkit's analysis of
the same dataset. Prints wall time and peak RSS of each and the ratios (targets: time <= 1.25x the
bare reductions, peak RSS <= 2 GB at 4,096 ranks x 100,000 steps; the bare reductions hold no memory
bound, ours hold DuckDB's memory_limit for the whole process).

    .venv/bin/python benchmarks/scale.py --ranks 4096 --steps 100000 --folder ../gem_4096x100k
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BARE = """
import sys, duckdb
from mfu_toolkit.engine import queries
files = sys.argv[1]
con = duckdb.connect()
if len(sys.argv) > 2:
    con.execute(f"SET memory_limit='{sys.argv[2]}'")
con.execute(f"CREATE VIEW steps AS SELECT attempt, step, rank, start_s, end_s, data_wait_s, compute_s, "
            f"CAST(NULL AS DOUBLE) AS samples, CAST(NULL AS DOUBLE) AS tokens, CAST(NULL AS VARCHAR) AS flag "
            f"FROM read_parquet('{files}')")
con.sql(queries.render(queries.JOB_STEPS, "duckdb")).to_arrow_table()
con.sql("SELECT rank, median(busy) FROM (" + queries.ROWS.format(where="rank >= 0") + \
") GROUP BY rank").to_arrow_table()
"""


def _measure(cmd: list[str], *, may_fail: bool = False) -> tuple[float, float] | None:
    """Wall seconds and peak RSS (GB) of one child process (os.wait4 gives that child's own);
    None where a child that ``may_fail`` exits with an error (DuckDB out of memory)."""
    import os

    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL if may_fail else None)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t
    if status != 0 and may_fail:
        return None
    if status != 0:
        raise SystemExit(f"{cmd[0]} failed with status {status}")
    return wall, usage.ru_maxrss / 2**20  # ru_maxrss is in KiB on Linux


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=2_000)
    ap.add_argument("--folder", default=None)
    ap.add_argument("--bare-limit", default="2GB",
                    help="also run the bare reductions under this DuckDB memory_limit (ours hold 3GB by default "
                         "for the whole process); '' to skip")
    a = ap.parse_args()
    folder = Path(a.folder or Path(tempfile.gettempdir()) / f"mfu_scale_{a.ranks}x{a.steps}")
    mfu = str(Path(sys.executable).with_name("mfu"))
    if not folder.exists():
        t = time.perf_counter()
        subprocess.run([mfu, "simulate", "--ranks", str(a.ranks), "--steps", str(a.steps), "--jitter", "0.03",
                        "--slow-ranks", "17", "--slow-factor", "1.25", "--dataset", str(folder)], check=True)
        print(f"wrote {a.ranks:,} x {a.steps:,} = {a.ranks * a.steps:,} rows in {time.perf_counter() - t:.1f} s")
    bare_t, bare_m = _measure([sys.executable, "-c", BARE, str(folder / "part-*.parquet")])
    ours_t, ours_m = _measure([mfu, "analyze", str(folder), "--engine", "duckdb"])
    print(f"bare DuckDB reductions: {bare_t:8.1f} s, peak RSS {bare_m:5.2f} GB")
    if a.bare_limit:
        bounded = _measure([sys.executable, "-c", BARE, str(folder / "part-*.parquet"), a.bare_limit], may_fail=True)
        print(f"bare DuckDB reductions under memory_limit {a.bare_limit}: "
              + ("out of memory" if bounded is None else f"{bounded[0]:8.1f} s, peak RSS {bounded[1]:5.2f} GB"))
    print(f"mfu analyze --engine duckdb: {ours_t:8.1f} s, peak RSS {ours_m:5.2f} GB (target <= 2)")
    print(f"time ratio {ours_t / bare_t:.2f} (target <= 1.25)")


if __name__ == "__main__":
    main()
