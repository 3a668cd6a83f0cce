"""Load + validate a 10M-row per-rank step log against a bare ``pandas.read_parquet`` of the same file.

A per-rank step log of 1,024 ranks × 10,000 steps (10,240,000 rows: ``step, rank, start_s,
end_s, data_wait_s``, written step by step, ranks in order, as a job-wide logger would) is
generated into a temporary folder as Parquet, twice:

- ``steps.parquet``: the plain table; ``load_run`` detects it as ``table`` and checks every row
  (numbers, end ≥ start, per-rank order, repeats), then puts the rows in the Run's order;
- ``run.parquet``: the same rows as a Run saved by ``save_run`` (how the toolkit keeps large
  logs between sessions); ``load_run`` detects ``run_parquet``, reads and validates.

Each measurement runs in its own fresh process: the time of the one call after the imports,
and the growth of the process's peak resident set during it (the peak, reset through
``/proc/self/clear_refs`` just before the call and read as ``VmHWM`` after it, minus the resident
set before; without ``/proc``, ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after minus before). \
Targets: load + validate within 2× the time of the
bare read, and a peak within 2× the size of the loaded frame (``memory_usage(deep=True)``).
``load_run`` runs with its default ``progress=None``: files of 64 MiB and more show a
``tqdm.auto`` bar (on stderr here, a widget in Jupyter).

The machine this was written on has 2 cores and shares its memory: the defaults run each
measurement once.

    .venv/bin/python benchmarks/big_steps.py [--ranks 1024] [--steps 10000] [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from _child import parse_or_serve, run_child  # noqa: E402  (beside this script)
from _peak import peak_since_start, start_peak  # noqa: E402


def _generate(folder: Path, ranks: int, steps: int) -> Path:
    """The plain per-rank step table: step-major rows, seeded, about 1 s per step."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    n = ranks * steps
    step = np.repeat(np.arange(1, steps + 1, dtype=np.int64), ranks)
    rank = np.tile(np.arange(ranks, dtype=np.int64), steps)
    # Each step starts when the slowest rank of the previous one is done, plus launch jitter.
    start = (step - 1) * 1.05 + rng.gamma(2.0, 0.002, n)
    end = start + 0.95 + rng.normal(0.0, 0.01, n).clip(-0.03, 0.03)
    wait = rng.exponential(0.004, n)
    table = pa.table({"step": step, "rank": rank, "start_s": start, "end_s": end, "data_wait_s": wait})
    path = folder / "steps.parquet"
    pq.write_table(table, path)
    return path


def _child(mode: str, path: str) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    import pandas as pd

    from mfu_toolkit.io import available_formats, detect_format, load_run
    from mfu_toolkit.run import save_run

    available_formats()  # import the loader modules before the clock starts
    before = start_peak()
    t0 = time.perf_counter()
    if mode == "read":
        df = pd.read_parquet(path)
        fmt = "pandas.read_parquet"
    elif mode == "load":
        run = load_run(path)
        df = run.steps
        fmt = None
    elif mode == "save":  # prepare the Run file from the table, outside any measurement
        run = load_run(path, progress=False)
        out = Path(path).with_name("run.parquet")
        save_run(run, out)
        return {"path": str(out), "rows": len(run.steps), "skipped": run.meta.report.total_skipped}
    else:
        raise SystemExit(f"unknown mode {mode}")
    seconds = time.perf_counter() - t0
    fmt = fmt or detect_format(path)  # what format="auto" chose (the Run's meta keeps the original)
    return {
        "seconds": seconds,
        "rss_growth_mib": peak_since_start() - before,
        "frame_mib": float(df.memory_usage(deep=True).sum()) / 2**20,
        "rows": len(df),
        "columns": len(df.columns),
        "format": fmt,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=10_000)
    if (a := parse_or_serve(ap, _child)) is None:
        return 0

    with tempfile.TemporaryDirectory(prefix="big_steps_") as tmp:
        t0 = time.perf_counter()
        table = _generate(Path(tmp), a.ranks, a.steps)
        made = run_child(__file__, "save", table)
        run_file = Path(made["path"])
        print(f"{a.ranks:,} ranks × {a.steps:,} steps = {a.ranks * a.steps:,} rows; generated in "
              f"{time.perf_counter() - t0:.0f} s: steps.parquet {table.stat().st_size / 2**20:.0f} MiB, "
              f"run.parquet {run_file.stat().st_size / 2**20:.0f} MiB")
        print(f"best of {a.repeat} fresh process(es) per figure; memory = peak RSS growth during the call\n")
        hdr = (f"{'file':<14} {'loader':<12} {'read s':>7} {'load s':>7} {'time x':>7} {'frame MiB':>10} "
               f"{'read peak':>10} {'load peak':>10} {'mem x':>6}")
        print(hdr)
        print("-" * len(hdr))
        verdicts = []
        for path in (table, run_file):
            read = load = None
            for _ in range(a.repeat):
                r = run_child(__file__, "read", path)
                m = run_child(__file__, "load", path)
                read = r if read is None or r["seconds"] < read["seconds"] else read
                load = m if load is None or m["seconds"] < load["seconds"] else load
            tx = load["seconds"] / read["seconds"]
            mx = load["rss_growth_mib"] / load["frame_mib"]
            print(f"{path.name:<14} {load['format']:<12} {read['seconds']:>7.2f} {load['seconds']:>7.2f} "
                  f"{tx:>7.2f} {load['frame_mib']:>10.0f} {read['rss_growth_mib']:>10.0f} "
                  f"{load['rss_growth_mib']:>10.0f} {mx:>6.2f}")
            verdicts.append((path.name, load["format"], tx, mx))
        print("\ntime x = load_run / pandas.read_parquet (target ≤ 2); mem x = load_run's peak growth / "
              "the loaded steps frame (target ≤ 2). 'read peak' is the bare read's own peak growth, for "
              "comparison (its frame has no attempt column).")
        for name, fmt, tx, mx in verdicts:
            t_ok, m_ok = tx <= 2, mx <= 2
            print(f"{name} ({fmt}): time {'met' if t_ok else 'MISSED'} ({tx:.2f}×), "
                  f"memory {'met' if m_ok else 'MISSED'} ({mx:.2f}×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
