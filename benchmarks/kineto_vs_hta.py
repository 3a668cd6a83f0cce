"""Our Kineto loader against HolisticTraceAnalysis (HTA) on the real traces of ``$MFU_REALDATA/kineto``.

Both sides read the same trace files, each in its own fresh child process, one measurement per
process, the two sides interleaved:

- ours: ``mfu_toolkit.io.load_run(path, format="kineto")`` (per-rank step spans, GPU busy/idle,
  compute vs NCCL per step, the validated Run). The format is named because HTA detects none;
  ``format="auto"`` adds the sniffers' reads (the MLPerf sniffer alone reads up to 4 MiB of a
  trace, since a Kineto head has no ``:::MLLOG``);
- HTA: ``hta.common.trace.Trace(trace_files=...).load_traces(use_multiprocessing=False)``, which
  is what ``TraceAnalysis(...)`` runs before any analysis (parse, align the ranks, filter), in
  one process (HTA would otherwise fork a pool for several ranks, and a pool's memory is not
  the child's own).

Time: wall time of that one call after the imports (the best of ``--repeat`` fresh processes, so
that other load on the machine inflates neither side). Memory, two figures per call, each from
its own fresh process: the peak of ``tracemalloc`` during the call (Python objects and numpy /
pandas buffers; allocations by C libraries that do not report to tracemalloc are not seen),
and the growth of the process's peak resident set during the call (the peak is reset through
``/proc/self/clear_refs`` just before the call and read as ``VmHWM`` after it, minus the resident
set before; the child's whole peak, as ``os.wait4`` reports it to the parent, is printed too). \
Ratios are ours / HTA: the targets are
time ratio ≤ 0.2 (≥ 5× faster) and memory ratio ≤ 0.5.

HTA is not a dependency of the toolkit; install it into the venv for this benchmark only:

    .venv/bin/pip install HolisticTraceAnalysis
    MFU_REALDATA=../shared/realdata .venv/bin/python benchmarks/kineto_vs_hta.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _peak import peak_since_start, start_peak  # noqa: E402  (beside this script)

ROOT = Path(__file__).resolve().parents[1]


# --- child: one measurement ---------------------------------------------------------------------
def _child(side: str, mode: str, files: list[str]) -> dict:
    import logging
    import warnings

    warnings.simplefilter("ignore")
    logging.disable(logging.CRITICAL)  # HTA logs every parse at WARNING
    if side == "ours":
        from mfu_toolkit.io import available_formats, load_run

        available_formats()  # import every loader module now, as HTA's import does its parser

        if len(files) == 1:
            target = files[0]
        else:  # one job's rank files: a folder of links, as a user would point at
            folder = Path(tempfile.mkdtemp(prefix="kineto_job_"))
            for f in files:
                (folder / Path(f).name).symlink_to(f)
            target = str(folder)

        def call():
            run = load_run(target, format="kineto")
            return {"steps": len(run.steps), "ranks": len(run.ranks)}
    else:
        from hta.common.trace import Trace

        def call():
            t = Trace(trace_files={i: f for i, f in enumerate(files)}, trace_dir=str(Path(files[0]).parent))
            t.load_traces(include_last_profiler_step=True, use_multiprocessing=False)
            return {"events": int(sum(len(df) for df in t.traces.values())),
                    "steps": int(sum(len(t.get_iterations(r)) for r in t.traces)), "ranks": len(t.traces)}

    import tracemalloc

    before = start_peak()
    if mode == "mem":
        tracemalloc.start()
    t0 = time.perf_counter()
    facts = call()
    seconds = time.perf_counter() - t0
    traced = tracemalloc.get_traced_memory()[1] if mode == "mem" else 0
    after = peak_since_start()
    again = float("nan")
    if mode == "time":  # the same call once more in this process: no first-use costs left
        t0 = time.perf_counter()
        call()
        again = time.perf_counter() - t0
    return {"seconds": seconds, "again_seconds": again, "traced_mib": traced / 2**20,
            "rss_growth_mib": after - before, **facts}


# --- parent ---------------------------------------------------------------------------------------
def _measure(side: str, mode: str, files: list[Path]) -> dict:
    """Run one measurement in a fresh child, reaped with os.wait4 for its own peak resident set."""
    cmd = [sys.executable, __file__, "--child", side, mode, *map(str, files)]
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode:
            raise RuntimeError(f"{side} child failed on {[f.name for f in files]}:\n{err.read()[-2000:]}")
        res = json.loads(out.read().strip().splitlines()[-1])
    res["child_peak_rss_mib"] = usage.ru_maxrss / 1024  # Linux: KiB
    return res


def _cases(folder: Path) -> list[tuple[str, list[Path]]]:
    files = sorted(folder.glob("*.json.gz")) + sorted(folder.glob("*.json"))
    cases = [(f.name.replace(".json.gz", "").replace(".json", ""), [f]) for f in files]
    job = sorted(f for f in files if "sampled_rank-" in f.name)
    if len(job) > 1:
        cases.append((f"one job: {len(job)} ranks (sampled_rank-*)", job))
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3, help="fresh processes per side for the time (best is kept)")
    ap.add_argument("--traces", type=Path, default=None, help="folder of traces (default: $MFU_REALDATA/kineto)")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        side, mode, *files = a.child
        print(json.dumps(_child(side, mode, files)))
        return 0

    if importlib.util.find_spec("hta") is None:
        print("HolisticTraceAnalysis is not installed, so there is nothing to compare against.\n"
              "Install it into the venv for this benchmark only (it is not a toolkit dependency):\n"
              "    .venv/bin/pip install HolisticTraceAnalysis")
        return 0
    folder = a.traces
    if folder is None:
        real = os.environ.get("MFU_REALDATA", "").strip()
        if not real:
            print("MFU_REALDATA is not set: point it at the real logs (e.g. MFU_REALDATA=../shared/realdata)"
                  " or pass --traces DIR.")
            return 0
        folder = Path(real) / "kineto"
    if not folder.is_dir():
        print(f"no trace folder at {folder}")
        return 1
    cases = _cases(folder)
    if not cases:
        print(f"no .json / .json.gz traces in {folder}")
        return 1

    from importlib.metadata import version

    print(f"Kineto traces: ours (load_run, format='kineto') vs HTA {version('HolisticTraceAnalysis')} "
          f"(Trace.load_traces, one process); time = best of {a.repeat} fresh processes")
    hdr = (f"{'trace':<40} {'MB':>5} | {'first call ms':^22} | {'repeat call ms':^22} | "
           f"{'tracemalloc MiB':^19} | {'RSS growth MiB':^19}")
    sub = (f"{'':<40} {'':>5} | {'ours':>6} {'HTA':>6} {'faster':>7} | {'ours':>6} {'HTA':>6} {'faster':>7} | "
           f"{'ours':>5} {'HTA':>5} {'x':>5} | {'ours':>5} {'HTA':>5} {'x':>5}")
    print(hdr)
    print(sub)
    print("-" * len(sub))
    keys = ("first", "again", "tm", "rss")
    tot = {(k, side): 0.0 for k in keys for side in ("ours", "hta")}
    peaks = {"ours": 0.0, "hta": 0.0}
    for label, files in cases:
        size = 0
        for f in files:
            with gzip.open(f) if f.suffix == ".gz" else f.open("rb") as fh:
                size += len(fh.read())
        val = {(k, side): float("inf") for k in ("first", "again") for side in ("ours", "hta")}
        facts = {}
        for _ in range(a.repeat):
            for side in ("ours", "hta"):
                r = _measure(side, "time", files)
                val["first", side] = min(val["first", side], r["seconds"])
                val["again", side] = min(val["again", side], r["again_seconds"])
                facts[side] = r
                peaks[side] = max(peaks[side], r["child_peak_rss_mib"])
        for side in ("ours", "hta"):
            r = _measure(side, "mem", files)
            val["tm", side] = r["traced_mib"]
            val["rss", side] = facts[side]["rss_growth_mib"]
        for k in keys:
            for side in ("ours", "hta"):
                tot[k, side] += val[k, side]
        print(_row(label, f"{size / 1e6:5.2f}", val))
        print(f"{'':<40} {'':>5}   steps read: ours {facts['ours']['steps']}, HTA {facts['hta']['steps']}; "
              f"HTA keeps {facts['hta']['events']:,} events as DataFrame rows")
    print("-" * len(sub))
    print(_row("all cases (sums)", "", tot))
    print("\nMB: decompressed trace size. first call: the load right after the imports, in a fresh process;"
          " repeat call: the same load again in that process. tracemalloc: peak during the first call"
          " (own fresh process). RSS growth: peak resident set after minus before the first call."
          " faster = HTA / ours; x = ours / HTA.")
    print(f"Whole-process peak RSS of the children (interpreter and imports included, from os.wait4): "
          f"ours {peaks['ours']:.0f} MiB, HTA {peaks['hta']:.0f} MiB.")
    first_x = tot["first", "hta"] / tot["first", "ours"]
    again_x = tot["again", "hta"] / tot["again", "ours"]
    tm_x = tot["tm", "ours"] / tot["tm", "hta"]
    rss_x = tot["rss", "ours"] / tot["rss", "hta"] if tot["rss", "hta"] else float("nan")
    print(f"Target ≥ 5× faster: {'met' if first_x >= 5 else 'MISSED'} on first calls ({first_x:.1f}×), "
          f"{'met' if again_x >= 5 else 'MISSED'} on repeat calls ({again_x:.1f}×).")
    print(f"Target ≤ ½ the memory: {'met' if tm_x <= 0.5 else 'MISSED'} by tracemalloc peak ({tm_x:.2f}), "
          f"{'met' if rss_x <= 0.5 else 'MISSED'} by resident-set growth ({rss_x:.2f}).")
    return 0


def _row(label: str, size: str, v: dict) -> str:
    def x(k: str, inverse: bool) -> str:
        o, h = v[k, "ours"], v[k, "hta"]
        if not (o and h):
            return "-"
        return f"{h / o:.1f}x" if inverse else f"{o / h:.2f}"

    return (f"{label[:40]:<40} {size:>5} | {v['first', 'ours'] * 1e3:>6.1f} {v['first', 'hta'] * 1e3:>6.1f} "
            f"{x('first', True):>7} | {v['again', 'ours'] * 1e3:>6.1f} {v['again', 'hta'] * 1e3:>6.1f} "
            f"{x('again', True):>7} | {v['tm', 'ours']:>5.1f} {v['tm', 'hta']:>5.1f} {x('tm', False):>5} | "
            f"{v['rss', 'ours']:>5.1f} {v['rss', 'hta']:>5.1f} {x('rss', False):>5}")


if __name__ == "__main__":
    sys.exit(main())
