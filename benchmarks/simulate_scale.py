"""Time and peak memory of ``simulate`` at 1K, 4K and 16K ranks, against a bare-numpy baseline.

Each measurement runs in a fresh child process so its peak resident memory is its own. The
baseline, measured in the same run, allocates and fills the same steps table as bare numpy
columns (7 columns × ranks × steps, the size of the Run's ``steps``): the least any simulator
must spend. Printed ratios are simulator / baseline.

    .venv/bin/python benchmarks/simulate_scale.py [--steps 2000] [--ranks 1024 4096 16384]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _child(kind: str, ranks: int, steps: int) -> dict[str, float]:
    import numpy as np

    if kind != "baseline":
        from mfu_toolkit.simulate import SimConfig, simulate

        cfg = SimConfig(n_ranks=ranks, n_steps=steps, jitter=0.05, slow_ranks=(7,), slow_factor=1.1,
                        transient_prob=0.001, checkpoint_every=500, checkpoint_s=20.0, eval_every=1000,
                        eval_s=30.0, warmup_steps=10, warmup_factor=3.0, fail_at_steps=(steps // 2 + 7,),
                        restart_s=100.0)
    before = _peak_mib()
    t = time.perf_counter()
    if kind in ("simulate", "simulate_unchecked"):
        run = simulate(cfg, validate=kind == "simulate")
        rows = len(run.steps)
    else:
        n = ranks * steps
        cols = [np.repeat(np.arange(steps, dtype=np.int64), ranks) for _ in range(3)]
        cols += [np.random.default_rng(0).random(n) for _ in range(4)]
        rows = len(cols[0])
    elapsed = time.perf_counter() - t
    return {"seconds": elapsed, "peak_mib": _peak_mib(), "start_mib": before, "rows": rows}


def _measure(kind: str, ranks: int, steps: int) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--child", kind, str(ranks), str(steps)],
        capture_output=True, text=True, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=2000)
    ap.add_argument("--ranks", type=int, nargs="+", default=[1024, 4096, 16384])
    ap.add_argument("--child", nargs=3, metavar=("KIND", "RANKS", "STEPS"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, ranks, steps = a.child
        print(json.dumps(_child(kind, int(ranks), int(steps))))
        return
    print(f"simulate(): {a.steps} steps; baseline = bare numpy allocation of the same steps table")
    print("(sim = simulate() with its schema check; unchecked = validate=False)")
    print(f"{'ranks':>7} {'rows':>12} {'sim s':>8} {'unchk s':>8} {'base s':>8} {'time x':>7} "
          f"{'sim MiB':>9} {'base MiB':>9} {'mem x':>6}")
    for r in a.ranks:
        base = _measure("baseline", r, a.steps)
        sim = _measure("simulate", r, a.steps)
        fast = _measure("simulate_unchecked", r, a.steps)
        # memory: the peak added on top of the interpreter and imports
        sm = sim["peak_mib"] - sim["start_mib"]
        bm = base["peak_mib"] - base["start_mib"]
        print(f"{r:>7} {int(sim['rows']):>12,} {sim['seconds']:>8.2f} {fast['seconds']:>8.2f} {base['seconds']:>8.2f} "
              f"{sim['seconds'] / base['seconds']:>7.1f} {sm:>9.0f} {bm:>9.0f} {sm / bm:>6.1f}")


if __name__ == "__main__":
    main()
