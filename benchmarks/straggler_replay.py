"""Speed of the what-if replay (mfu_toolkit.analysis.straggler_whatif).

Prints, measured in the same run:

1. the replay of each real trace (``$MFU_REALDATA/straggler_ops``) against the artifact's own
   ``analyzer/wia.py`` on the same trace, when ``--artifact DIR`` (a checkout of
   ByteDance-Seed/StragglerAnalysis) and ``--artifact-python`` (an interpreter with its
   requirements) are given;
2. the time per replayed op of one replay of a synthetic 1F1B pipeline at two sizes (512 and
   4,096 workers): a ratio near 1 means linear in ops.

    .venv/bin/python benchmarks/straggler_replay.py \
[--artifact ../StragglerAnalysis --artifact-python ../sa-venv/bin/python]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from mfu_toolkit.analysis import straggler_whatif
from mfu_toolkit.scenarios.replay import _prepare


def synthetic(dp: int, pp: int, mbs: int, steps: int, seed: int = 0) -> pd.DataFrame:
    """A 1F1B trace of ``dp × pp`` workers: forward/backward per microbatch, p2p pairs, optimizer."""
    rng = np.random.default_rng(seed)
    rows: list[tuple] = []
    for stage in range(pp):
        warm = min(pp - 1 - stage, mbs)
        order = [("F", i) for i in range(warm)]
        f, b = warm, 0
        while b < mbs:
            if f < mbs:
                order.append(("F", f))
                f += 1
            order.append(("B", b))
            b += 1
        for t, (kind, i) in enumerate(order):
            name = "forward" if kind == "F" else "backward"
            rows.append((stage, f"{name}-compute", i, float(t)))
            if (kind == "F" and stage < pp - 1) or (kind == "B" and stage > 0):
                rows.append((stage, f"{name}-send", i, t + 0.5))
            if (kind == "F" and stage > 0) or (kind == "B" and stage < pp - 1):
                rows.append((stage, f"{name}-recv", i, t - 0.5))
        rows.append((stage, "optimizer-clip-main-grad", 0, len(order) + 1.0))
        rows.append((stage, "optimizer", 0, len(order) + 2.0))
    tmpl = pd.DataFrame(rows, columns=["stage", "optype", "seq_id", "start_ts"])
    n = len(tmpl)
    full = tmpl.loc[np.tile(np.arange(n), dp * steps)].reset_index(drop=True)
    full["dp_rank"] = np.repeat(np.tile(np.arange(dp), steps), n)
    full["step"] = np.repeat(np.arange(steps), dp * n)
    full["rank"] = full["dp_rank"] * pp + full["stage"]
    full["duration"] = rng.lognormal(-3.0, 0.1, len(full)) * np.where(full["optype"].str.endswith("compute"), 10, 1)
    full["start_ts"] = full["start_ts"] + 1.0
    return full


def time_real(folder: Path, artifact: Path | None, art_python: str | None) -> None:
    print("Real traces: this replay (load excluded; all add-backs included) vs the artifact's wia.py")
    from mfu_toolkit.io import load_run

    for t in ("AR", "ST", "SE"):
        trace = folder / f"trace-{t}.parquet"
        if not trace.is_file():
            continue
        ops = load_run(trace).tables["ops"]
        t0 = time.perf_counter()
        r = straggler_whatif(ops)
        ours = time.perf_counter() - t0
        line = f"  {t}: {len(ops):,} ops, S = {r.slowdown:.4f}, replay {ours:.2f} s"
        if artifact is not None and art_python:
            with tempfile.TemporaryDirectory() as out:
                env = {**os.environ, "PYTHONPATH": str(artifact)}
                t0 = time.perf_counter()
                subprocess.run([art_python, "analyzer/wia.py", "--metadata", str(folder / f"meta-{t}.yaml"),
                                "--trace", str(trace), "--dump-dir", out], cwd=artifact, env=env,
                               check=True, capture_output=True)
                theirs = time.perf_counter() - t0
            line += f", artifact {theirs:.2f} s (ratio ours/artifact {ours / theirs:.2f})"
        print(line)


def time_synthetic() -> None:
    print("Synthetic 1F1B pipelines, one replay of the actual durations (the graph built once):")
    per_op = []
    for dp, pp in ((128, 4), (1024, 4)):
        ops = synthetic(dp, pp, mbs=8, steps=2)
        rp = _prepare(ops, [])
        t0 = time.perf_counter()
        reps = 3
        for _ in range(reps):
            rp.step_times(rp.actual)
        dt = (time.perf_counter() - t0) / reps
        per_op.append(dt / len(ops))
        print(f"  {dp * pp:,} workers, {len(ops):,} ops: {dt * 1e3:.1f} ms per replay, "
              f"{per_op[-1] * 1e9:.1f} ns per op")
    print(f"  time per op, 4,096 vs 512 workers: {per_op[1] / per_op[0]:.2f} (1.0 = linear in ops)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--artifact", type=Path, help="checkout of ByteDance-Seed/StragglerAnalysis")
    ap.add_argument("--artifact-python", help="Python with the artifact's requirements")
    a = ap.parse_args()
    real = os.environ.get("MFU_REALDATA")
    if real:
        time_real(Path(real) / "straggler_ops", a.artifact, a.artifact_python)
    else:
        print("MFU_REALDATA not set: real traces skipped", file=sys.stderr)
    time_synthetic()


if __name__ == "__main__":
    main()
