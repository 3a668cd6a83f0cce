"""NCCL's own lines inside a text log: load time with them against without them, on the same log.

For each size (20,000, 80,000 and 320,000 steps by default) a Megatron-LM log is generated into a
temporary folder: one timestamped ``iteration N/ M | ... |`` line per step. Its copy ``mixed`` has
NCCL ``NCCL_DEBUG=INFO`` lines interleaved, ``--per-step`` of them after each iteration line (1 by
default: as many NCCL lines as the framework's own), cycling through the kinds a real job prints
(version, network, communicator init, init timings, channel connections, a split), with ``[rankN]:``
and ``N:`` launcher prefixes. Each measurement runs in its own fresh process:

- ``plain``: ``load_run(plain, format="megatron")``, the log as the framework wrote it;
- ``mixed``: ``load_run(mixed, format="megatron")``, NCCL's lines read by the shared stage
  (``mfu_toolkit.io.nccl_info.NcclStage``) and the framework's by the format;
- ``bare``: the plain log with the stage switched off (the format's ``TEXT_LOG`` set False), so
  ``plain / bare`` is what the stage's needle test costs a log that holds no NCCL line.

It prints the times, ``mixed / plain`` (the price of the NCCL lines, which are half the lines
here), ``plain / bare`` and the growth of ``mixed / plain`` from the smallest size: about 1.0x when
reading NCCL's lines is linear in the log. Nothing is asserted: the machine it runs on is shared and
wall-clock is noisy.

    .venv/bin/python benchmarks/nccl_lines.py [--sizes 20000 80000 320000] [--per-step 1] [--repeat 1]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

from _child import best_of, parse_or_serve  # noqa: E402  (beside this script)

_NCCL = (  # NCCL's spellings (src/init.cc, src/transport/*.cc); {r} the rank, {h} its host
    "{h}:{p}:{t} [{d}] NCCL INFO NCCL version 2.22.3+cuda12.4",
    "{h}:{p}:{t} [{d}] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB ib0:10.0.{d}.1<0>",
    "{h}:{p}:{t} [{d}] NCCL INFO Using network IB",
    "{h}:{p}:{t} [{d}] NCCL INFO ncclCommInitRank comm 0x7f{r:04x} rank {r} nranks 64 cudaDev {d} nvmlDev {d} "
    "busId {d}0000 commId 0x1a2b3c4d - Init COMPLETE",
    "{h}:{p}:{t} [{d}] NCCL INFO Init timings - ncclCommInitRank: rank {r} nranks 64 total 1.{d}5 (kernels 0.20, "
    "alloc 0.01, bootstrap 0.50, allgathers 0.01, topo 0.30, graphs 0.02, connections 0.20, rest 0.01)",
    "{h}:{p}:{t} [{d}] NCCL INFO Channel 0{d}/0 : {r}[{d}] -> {n}[{e}] via P2P/IPC/read",
    "{h}:{p}:{t} [{d}] NCCL INFO ncclCommSplit comm 0x8f{r:04x} rank {d} nranks 8 cudaDev {d} nvmlDev {d} "
    "busId {d}0000 parent 0x7f{r:04x} splitCount 1 color {k} key {d} - Init COMPLETE",
)


def _nccl_line(i: int) -> str:
    r = i % 64
    d, k = r % 8, r // 8
    body = _NCCL[i % len(_NCCL)].format(h=f"node{k}", p=1000 + r, t=2000 + r, d=d, r=r, n=(r + 1) % 64,
                                        e=(d + 1) % 8, k=k)
    return f"[rank{r}]:{body}" if i % 2 else f"{r}: {body}"


def _generate(folder: Path, steps: int, per_step: int) -> tuple[Path, Path, int]:
    """The plain Megatron-LM log of ``steps`` iteration lines, its copy with NCCL lines interleaved, and how many
    NCCL lines that copy holds."""
    t0 = datetime(2024, 4, 6, 2, 0, 0)
    plain, mixed = folder / f"plain_{steps}.log", folder / f"mixed_{steps}.log"
    k = 0
    with plain.open("w") as f, mixed.open("w") as g:
        for i in range(1, steps + 1):
            ts = (t0 + timedelta(seconds=5.5 * i)).strftime("%Y-%m-%d %H:%M:%S")
            line = (f" [{ts}] iteration {i:8d}/{steps:8d} | consumed samples: {i * 128:12d} | "
                    f"elapsed time per iteration (ms): {5400 + i % 300:.1f} | learning rate: 4.000000E-07 | "
                    "global batch size:   128 | lm loss: 2.021530E+00 | loss scale: 1.0 | grad norm: 6.895 | "
                    "number of skipped iterations:   0 | number of nan iterations:   0 |\n")
            f.write(line)
            g.write(line)
            for _ in range(per_step):
                g.write(_nccl_line(k) + "\n")
                k += 1
    return plain, mixed, k


def _child(mode: str, path: str) -> dict:
    import warnings

    warnings.simplefilter("ignore")
    from mfu_toolkit.io import load_run
    from mfu_toolkit.io.formats import megatron

    if mode == "bare":
        megatron.TEXT_LOG = False
    elif mode not in ("plain", "mixed"):
        raise SystemExit(f"unknown mode {mode}")
    t0 = time.perf_counter()
    run = load_run(path, format="megatron")
    seconds = time.perf_counter() - t0
    return {"seconds": seconds, "rows": len(run.steps), "lines_read": run.meta.report.lines_read}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 80_000, 320_000])
    ap.add_argument("--per-step", type=int, default=1, help="NCCL lines after each iteration line")
    if (a := parse_or_serve(ap, _child)) is None:
        return 0
    print(f"Megatron-LM stdout, {a.per_step} NCCL line(s) after each iteration line in 'mixed'; "
          f"best of {a.repeat} fresh process(es) per figure, modes in turn\n")
    hdr = (f"{'steps':>9} {'bare s':>7} {'plain s':>8} {'mixed s':>8} {'mixed/plain':>12} {'plain/bare':>11} "
           f"{'growth':>7} {'NCCL lines':>11}")
    print(hdr)
    print("-" * len(hdr))
    first = None
    with tempfile.TemporaryDirectory(prefix="nccl_lines_") as tmp:
        for steps in a.sizes:
            plain, mixed, n_nccl = _generate(Path(tmp), steps, a.per_step)
            bare, p, m = best_of(__file__, [("bare", plain), ("plain", plain), ("mixed", mixed)], a.repeat)
            if not (bare["rows"] == p["rows"] == m["rows"] and m["lines_read"] == p["lines_read"] + n_nccl):
                raise SystemExit(f"the loads disagree: {bare}, {p}, {m}")
            ratio = m["seconds"] / p["seconds"]
            first = ratio if first is None else first
            print(f"{steps:>9,} {bare['seconds']:>7.2f} {p['seconds']:>8.2f} {m['seconds']:>8.2f} {ratio:>12.2f} "
                  f"{p['seconds'] / bare['seconds']:>11.2f} {ratio / first:>6.2f}x {n_nccl:>11,}")
            plain.unlink()
            mixed.unlink()
    print("\nmixed/plain = the load with NCCL's lines / the same log without them (steps equal, checked); "
          "plain/bare = the stage's cost on a log without NCCL lines; growth = mixed/plain / the smallest size's.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
