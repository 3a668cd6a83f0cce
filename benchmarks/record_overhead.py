"""Cost of recording a step with ``StepRecorder``, against an empty loop of the same steps.

Measured in the same run: an empty ``for`` loop over the steps (the baseline), then the same loop
with ``with rec.step(step=s, samples=32):`` around each step, then with a ``data_wait`` and a
``comm`` block inside it as well, and with a ``torch.distributed.all_reduce`` of one float on a
one-process gloo group, plain and with ``time_collectives=True`` (where PyTorch is installed).
Printed: µs per recorded step above the baseline (target: under 20) and, under ``tracemalloc``,
the memory the recorder holds after 10 % and after 100 % of the steps (target: no growth).

    .venv/bin/python benchmarks/record_overhead.py [--steps 1000000]
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
import tracemalloc
from pathlib import Path

from mfu_toolkit.record import StepRecorder


def _empty(n: int) -> float:
    t = time.perf_counter()
    for _s in range(n):
        pass
    return time.perf_counter() - t


def _steps(rec: StepRecorder, n: int, inner: bool) -> float:
    step, wait, comm = rec.step, rec.data_wait, rec.comm
    t = time.perf_counter()
    if inner:
        for s in range(n):
            with step(step=s, samples=32):
                with wait():
                    pass
                with comm():
                    pass
    else:
        for s in range(n):
            with step(step=s, samples=32):
                pass
    return time.perf_counter() - t


def _collective(rec: StepRecorder | None, n: int, all_reduce, x) -> float:
    t = time.perf_counter()
    if rec is None:
        for _ in range(n):
            all_reduce(x)
    else:
        for s in range(n):
            with rec.step(step=s):
                all_reduce(x)
    return time.perf_counter() - t


def _growth(folder: Path, n: int) -> tuple[float, float]:
    """KiB traced after 10 % and after 100 % of ``n`` recorded steps (same recorder)."""
    rec = StepRecorder(folder, attempt=99)
    tracemalloc.start()
    _steps(rec, n // 10, inner=True)
    gc.collect()
    early = tracemalloc.get_traced_memory()[0] / 1024
    _steps(rec, n - n // 10, inner=True)
    gc.collect()
    late = tracemalloc.get_traced_memory()[0] / 1024
    tracemalloc.stop()
    rec.close()
    return early, late


def _torch_rows(folder: Path, n: int, base: float) -> list[tuple[str, float]]:
    try:
        import torch
        import torch.distributed as dist
    except ImportError:
        print("(PyTorch not installed: collective timing not measured)")
        return []
    dist.init_process_group("gloo", store=dist.FileStore(str(folder / "store"), 1), rank=0, world_size=1)
    x = torch.ones(1)
    try:
        plain = _collective(None, n, dist.all_reduce, x)
        rec = StepRecorder(folder / "plain", attempt=0)
        recorded = _collective(rec, n, dist.all_reduce, x)
        rec.close()
        rec = StepRecorder(folder / "patched", attempt=0, time_collectives=True)
        patched = _collective(rec, n, dist.all_reduce, x)
        rec.close()
    finally:
        dist.destroy_process_group()
    return [("all_reduce alone (baseline for the next two)", (plain - base) / n),
            ("step around an all_reduce", (recorded - plain) / n),
            ("step + time_collectives around an all_reduce", (patched - plain) / n)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1_000_000)
    ap.add_argument("--collective-steps", type=int, default=20_000)
    a = ap.parse_args()
    n = a.steps
    with tempfile.TemporaryDirectory(prefix="mfu-record-bench-") as tmp:
        folder = Path(tmp)
        base = _empty(n)
        rec = StepRecorder(folder / "a", attempt=0)
        only_step = _steps(rec, n, inner=False)
        rec.close()
        rec = StepRecorder(folder / "b", attempt=0)
        with_inner = _steps(rec, n, inner=True)
        rec.close()
        size = (folder / "b" / "rank00000.attempt000.jsonl").stat().st_size
        print(f"{n:,} steps; empty loop {base:.3f} s ({base / n * 1e6:.3f} µs/step)")
        rows = [("step", (only_step - base) / n), ("step + data_wait + comm", (with_inner - base) / n)]
        nc = a.collective_steps
        rows += _torch_rows(folder, nc, _empty(nc))
        for name, per in rows:
            verdict = "" if "alone" in name else ("  ok (< 20 µs)" if per * 1e6 < 20 else "  OVER the 20 µs target")
            print(f"{name:<46} {per * 1e6:8.3f} µs per step above its baseline{verdict}")
        print(f"file: {size / n:.1f} bytes per step record")
        early, late = _growth(folder / "c", n)
        print(f"tracemalloc: {early:.2f} KiB held after {n // 10:,} steps, {late:.2f} KiB after {n:,}: "
              f"growth {late - early:+.2f} KiB over {n - n // 10:,} more steps "
              f"({(late - early) * 1024 / (n - n // 10):.4f} bytes per step; 0 = no growth)")


if __name__ == "__main__":
    main()
