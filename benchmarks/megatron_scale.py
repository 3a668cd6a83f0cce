"""Megatron stdout loads in time linear in the log: load time against reading the same lines.

For each size (40,000, 160,000 and 1,000,000 steps by default) a Megatron-LM log is generated
into a temporary folder: one timestamped ``iteration N/ M | ... |`` line per step (log interval
1, every field a real log prints), and with ``--timers`` also a ``(min, max) time across ranks
(ms):`` block of five timers after each line. Each measurement runs in its own fresh process:

- ``lines``: the baseline, iterating the file's lines with ``mfu_toolkit.io.reading.iter_lines``
  (the bounded reader every text format reads through), doing nothing with them;
- ``load``: ``load_run(path, format="megatron")``, the whole load (parse, expand, validate).

It prints both times, their ratio (load / lines) and the ratio's growth from the smallest size:
a load linear in the input keeps the ratio flat (growth about 1.0×), a quadratic one grows it with
the size (the loader this replaced took 4.0 / 16.9 / 59.6 s for 40k / 80k / 160k steps, and did
not finish 1M in 10 minutes). It also prints each load's peak resident-memory growth (see
``_peak.py``). Nothing is asserted: the machine it runs on is shared and wall-clock is noisy.

    .venv/bin/python benchmarks/megatron_scale.py [--sizes 40000 160000 1000000] [--timers] [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from _child import best_of, parse_or_serve  # noqa: E402  (beside this script)
from _peak import peak_since_start, start_peak  # noqa: E402

_TIMERS = (("forward-backward", 5164.84, 5177.15), ("forward-compute", 2584.92, 2735.66),
           ("backward-compute", 2423.13, 2586.40), ("batch-generator", 408.98, 817.78),
           ("grads-all-reduce", 193.33, 193.63))


def _generate(folder: Path, steps: int, timers: bool) -> Path:
    """A timestamped Megatron-LM log of ``steps`` iteration lines (and timer blocks)."""
    t0 = datetime(2024, 4, 6, 2, 0, 0)
    path = folder / f"megatron_{steps}.log"
    with path.open("w") as f:
        f.write("------------------------ arguments ------------------------\n")
        f.write("  world_size ...................................... 16\n")
        f.write("-------------------- end of arguments ---------------------\n")
        for i in range(1, steps + 1):
            ts = (t0 + timedelta(seconds=5.5 * i)).strftime("%Y-%m-%d %H:%M:%S")
            f.write(
                f" [{ts}] iteration {i:8d}/{steps:8d} | consumed samples: {i * 128:12d} | "
                f"elapsed time per iteration (ms): {5400 + i % 300:.1f} | throughput per GPU (TFLOP/s/GPU): "
                f"{231.9 + i % 10:.1f} | learning rate: 4.000000E-07 | global batch size:   128 | "
                f"lm loss: 2.021530E+00 | loss scale: 1.0 | grad norm: 6.895 | num zeros: 0.0 | "
                "number of skipped iterations:   0 | number of nan iterations:   0 |\n"
            )
            if timers:
                f.write("(min, max) time across ranks (ms):\n")
                for name, lo, hi in _TIMERS:
                    f.write(f"    {(name + ' ').ljust(48, '.')}: ({lo:.2f}, {hi:.2f})\n")
    return path


def _child(mode: str, path: str) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.formats import megatron  # noqa: F401  (imported before the clock starts)
    from mfu_toolkit.io.reading import iter_lines

    before = start_peak()
    t0 = time.perf_counter()
    if mode == "lines":
        rows = sum(1 for _ in iter_lines(path))
    elif mode == "load":
        rows = len(load_run(path, format="megatron").steps)
    else:
        raise SystemExit(f"unknown mode {mode}")
    return {"seconds": time.perf_counter() - t0, "rss_growth_mib": peak_since_start() - before, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[40_000, 160_000, 1_000_000])
    ap.add_argument("--timers", action="store_true", help="a (min, max) timer block after each line")
    if (a := parse_or_serve(ap, _child)) is None:
        return 0

    print(f"Megatron-LM stdout, one timestamped line per step{' + a 5-timer block' if a.timers else ''}; "
          f"best of {a.repeat} fresh process(es) per figure\n")
    hdr = (f"{'steps':>10} {'MiB':>7} {'lines s':>8} {'load s':>8} {'ratio':>7} "
           f"{'growth':>7} {'rows':>10} {'load peak MiB':>14}")
    print(hdr)
    print("-" * len(hdr))
    first = None
    with tempfile.TemporaryDirectory(prefix="megatron_scale_") as tmp:
        for steps in a.sizes:
            path = _generate(Path(tmp), steps, a.timers)
            lines, load = best_of(__file__, [("lines", path), ("load", path)], a.repeat)
            ratio = load["seconds"] / lines["seconds"]
            first = ratio if first is None else first
            print(f"{steps:>10,} {path.stat().st_size / 2**20:>7.0f} {lines['seconds']:>8.2f} {load['seconds']:>8.2f} "
                  f"{ratio:>7.1f} {ratio / first:>6.2f}x {load['rows']:>10,} {load['rss_growth_mib']:>14.0f}")
            path.unlink()
    print("\nratio = load_run / iter_lines over the same file; growth = the ratio / the smallest size's ratio "
          "(about 1.0x when the load is linear in the log).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
