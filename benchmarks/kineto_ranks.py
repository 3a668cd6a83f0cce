"""Kineto traces of many ranks: one large rank against ``gzip.decompress``, and a job of ranks against HTA.

The input is made from a real trace: the events of ``$MFU_REALDATA/kineto``'s A100 rank (9.8 MB
raw) repeated, each copy shifted past the previous one in time and its ``ProfilerStep#N``
renumbered, until the JSON is about ``--mb`` MB (103 by default), then gzipped (level 1) under
``--tmp``. For the job, the same trace is written once per rank with its ``distributedInfo.rank``.

Every figure comes from a fresh process, measured from the parent: wall time of the call after
the imports, and the peak of the summed resident set of the process and all its children
(sampled every 10 ms with psutil, so a process pool's workers count), minus the resident set
before the call. Ratios, each against a baseline measured in this run:

1. one rank: ours (``load_run(..., format="kineto", cache=False)``) / ``gzip.decompress`` of the
   same file — target ≤ 2× the time; our peak / the raw (inflated) size — target ≤ 2×;
2. ``--ranks`` ranks (16 by default): HTA's ``TraceAnalysis(trace_dir=...)`` / ours (process pool,
   cache off) — target ≥ 10× faster; our peak / HTA's peak — target ≤ 0.5; and ours again
   with the Parquet caches current (re-analysis).

HTA is not a toolkit dependency: install it into a separate venv and name its interpreter:

    python3 -m venv ../hta-venv && ../hta-venv/bin/pip install HolisticTraceAnalysis
    MFU_REALDATA=../shared/realdata .venv/bin/python benchmarks/kineto_ranks.py \
--hta-python ../hta-venv/bin/python [--ranks 16]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz"

_CHILD = {
    "gzip": "import gzip,sys,time; from pathlib import Path; d=Path(sys.argv[1]).read_bytes(); "
            "print('GO',flush=True); sys.stdin.readline(); t=time.perf_counter(); n=len(gzip.decompress(d)); "
            "print(time.perf_counter()-t, n, flush=True)",
    "ours": "import sys,time,warnings; warnings.simplefilter('ignore'); from mfu_toolkit.io import load_run; "
            "import mfu_toolkit.io.formats.kineto; import pyarrow.parquet; print('GO',flush=True); "
            "sys.stdin.readline(); "
            "t=time.perf_counter(); r=load_run(sys.argv[1], format='kineto', cache=sys.argv[2]=='1'); "
            "print(time.perf_counter()-t, len(r.steps), flush=True)",
    "hta": "import sys,time,logging,warnings; warnings.simplefilter('ignore'); logging.disable(logging.CRITICAL); "
           "from hta.trace_analysis import TraceAnalysis; print('GO',flush=True); sys.stdin.readline(); "
           "t=time.perf_counter(); a=TraceAnalysis(trace_dir=sys.argv[1]); "
           "print(time.perf_counter()-t, sum(len(d) for d in a.t.traces.values()), flush=True)",
}


def make_trace(src: Path, out: Path, mb: float, rank: int = 0, world: int = 1) -> int:
    """The real trace's events repeated to ``mb`` MB of JSON (shifted, steps renumbered); gzipped."""
    doc = json.loads(gzip.decompress(src.read_bytes()))
    events = doc.pop("traceEvents")
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    span = max(ts) - min(ts) + 1000.0
    steps = [int(e["name"][13:]) for e in events if str(e.get("name", "")).startswith("ProfilerStep#")]
    n_steps = max(steps) - min(steps) + 1 if steps else 0
    doc["distributedInfo"] = {**doc.get("distributedInfo", {}), "rank": rank, "world_size": world}
    head = json.dumps(doc)[:-1] + ', "traceEvents": [\n'
    lines = [json.dumps(e) for e in events]
    copies = max(1, round(mb * 1e6 / sum(len(s) + 2 for s in lines)))
    written = 0
    with gzip.open(out, "wt", compresslevel=1) as f:
        f.write(head)
        for k in range(copies):
            for i, e in enumerate(events):
                if k == 0:
                    text = lines[i]
                else:
                    e2 = dict(e)
                    if isinstance(e2.get("ts"), (int, float)):
                        e2["ts"] = e2["ts"] + k * span
                    if str(e2.get("name", "")).startswith("ProfilerStep#"):
                        e2["name"] = f"ProfilerStep#{int(e2['name'][13:]) + k * n_steps}"
                    text = json.dumps(e2)
                sep = ",\n" if (k, i) != (copies - 1, len(events) - 1) else "\n"
                f.write(text + sep)
                written += len(text) + len(sep)
        f.write("]}\n")
    return written + len(head) + 3


def measure(python: str, side: str, *args: str) -> tuple[float, float, str]:
    """(seconds, peak MiB of the process tree above its start, the child's count) in a fresh process."""
    import psutil

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([python, "-c", _CHILD[side], *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, cwd=ROOT, env=env)
    assert proc.stdout.readline().strip() == "GO", f"{side} failed to start"
    me = psutil.Process(proc.pid)

    def tree_rss() -> int:
        total = 0
        for p in [me, *me.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    base = tree_rss()
    proc.stdin.write("\n")
    proc.stdin.flush()
    peak = base
    while proc.poll() is None:
        peak = max(peak, tree_rss())
        time.sleep(0.01)
    out = proc.stdout.read().split()
    if proc.returncode or len(out) < 2:
        raise RuntimeError(f"{side} child failed (exit {proc.returncode})")
    return float(out[0]), (peak - base) / 2**20, out[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mb", type=float, default=103.0, help="raw (inflated) MB of each rank's trace")
    ap.add_argument("--ranks", type=int, default=16, help="ranks in the job compared with HTA (0: skip)")
    ap.add_argument("--hta-python", default=None, help="an interpreter with HolisticTraceAnalysis installed")
    ap.add_argument("--tmp", type=Path, default=Path(tempfile.gettempdir()) / "mfu_kineto_ranks",
                    help="where the traces are written")
    ap.add_argument("--repeat", type=int, default=1, help="fresh processes per figure (the best time is kept)")
    a = ap.parse_args()
    real = os.environ.get("MFU_REALDATA", "").strip()
    src = Path(real) / "kineto" / SOURCE if real else None
    if src is None or not src.is_file():
        print("MFU_REALDATA is not set (or has no kineto/ traces): point it at the real logs, "
              "e.g. MFU_REALDATA=../shared/realdata")
        return 0
    a.tmp.mkdir(parents=True, exist_ok=True)
    one = a.tmp / "one" / "rank0.json.gz"
    one.parent.mkdir(exist_ok=True)
    raw = make_trace(src, one, a.mb)
    print(f"one rank: {raw / 1e6:.1f} MB raw, {one.stat().st_size / 1e6:.1f} MB gzipped ({one})")

    def best(python: str, side: str, *args: str) -> tuple[float, float, str]:
        runs = [measure(python, side, *args) for _ in range(a.repeat)]
        return min(r[0] for r in runs), min(r[1] for r in runs), runs[0][2]

    gz_t, gz_m, _ = best(sys.executable, "gzip", str(one))
    our_t, our_m, n = best(sys.executable, "ours", str(one), "0")
    print(f"  gzip.decompress      {gz_t:7.3f} s  peak +{gz_m:7.1f} MiB")
    print(f"  ours (load_run)      {our_t:7.3f} s  peak +{our_m:7.1f} MiB  ({n} steps)")
    print(f"  time / inflate time: {our_t / gz_t:.2f}  (target <= 2: {'met' if our_t <= 2 * gz_t else 'MISSED'})")
    print(f"  peak / raw size:     {our_m * 2**20 / raw:.2f}  "
          f"(target <= 2: {'met' if our_m * 2**20 <= 2 * raw else 'MISSED'})")
    if a.ranks <= 0:
        return 0
    job = a.tmp / f"job{a.ranks}"
    shutil.rmtree(job, ignore_errors=True)
    job.mkdir()
    for r in range(a.ranks):
        make_trace(src, job / f"rank{r}.json.gz", a.mb, rank=r, world=a.ranks)
    print(f"job: {a.ranks} ranks of {raw / 1e6:.1f} MB raw in {job}")
    our_t, our_m, n = best(sys.executable, "ours", str(job), "0")
    print(f"  ours (pool, no cache)     {our_t:7.2f} s  peak +{our_m:8.1f} MiB  ({n} steps)")
    best(sys.executable, "ours", str(job), "1")  # writes the caches
    c_t, c_m, _ = best(sys.executable, "ours", str(job), "1")
    print(f"  ours (Parquet caches)     {c_t:7.2f} s  peak +{c_m:8.1f} MiB")
    if not a.hta_python:
        print("  HTA: not measured (pass --hta-python, an interpreter with HolisticTraceAnalysis)")
        return 0
    h_t, h_m, hn = best(a.hta_python, "hta", str(job))
    print(f"  HTA TraceAnalysis         {h_t:7.2f} s  peak +{h_m:8.1f} MiB  ({hn} events as rows)")
    print(f"  HTA time / ours:  {h_t / our_t:.1f}x  (target >= 10: {'met' if h_t >= 10 * our_t else 'MISSED'}); "
          f"with caches {h_t / c_t:.1f}x")
    print(f"  our peak / HTA's: {our_m / h_m:.2f}  (target <= 0.5: {'met' if our_m <= 0.5 * h_m else 'MISSED'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
