"""Bounded, streamed gzip reading against ``gzip.decompress`` of the same file.

Three inputs, each measured in its own fresh process (time of the call after the imports, and
the growth of the peak resident set during it, see ``_peak.py``):

- the real 9.8 MB Kineto trace (``MFU_REALDATA``/kineto, 0.75 MB gzipped), or a generated trace
  of the same shape when ``MFU_REALDATA`` is unset: ``reading.read_bytes`` against
  ``gzip.decompress(path.read_bytes())`` (the baseline); target: within 1.3× the time, and
  about the same peak (both hold the inflated bytes once);
- a gzip bomb (1 GiB of zeros in about 1 MB): the baseline inflates all of it; the reader
  refuses at its limit (64× the compressed size, at least 64 MiB), so its peak stays near the
  limit and its time is a fraction of the baseline's;
- a forged trailer (a small stream whose size field claims 4 GiB): both refuse it at the length
  check, holding a few KB.

Measured on a 2-core machine (``--repeat 2``): real trace 19.4 vs 19.2 ms (ratio 1.01), peak
ratio 0.97; bomb refused in 62 ms at +68 MiB against 1.8 s and +2,050 MiB for the baseline.

    .venv/bin/python benchmarks/inflate.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import gzip, json, sys, time
sys.path.insert(0, {bench!r})
from _peak import peak_since_start, start_peak
from mfu_toolkit.io.reading import read_bytes
from mfu_toolkit.run import LoadError
path, how = sys.argv[1], sys.argv[2]
base = start_peak()
t = time.perf_counter()
try:
    n = len(read_bytes(path)) if how == "reader" else len(gzip.decompress(open(path, "rb").read()))
    outcome = f"{{n:,}} bytes"
except (LoadError, OSError, EOFError, MemoryError) as exc:
    outcome = type(exc).__name__
dt = time.perf_counter() - t
print(json.dumps({{"s": dt, "peak_mib": peak_since_start() - base, "outcome": outcome}}))
"""


def _measure(path: Path, how: str, repeat: int) -> dict:
    code = _CHILD.format(bench=str(Path(__file__).parent))
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", code, str(path), how], capture_output=True, text=True, check=True)
        runs.append(json.loads(out.stdout))
    best = min(runs, key=lambda r: r["s"])
    return best


def _inputs(folder: Path) -> list[tuple[str, Path]]:
    real = os.environ.get("MFU_REALDATA", "")
    trace = Path(real) / "kineto" / "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz" if real else None
    if trace is None or not trace.exists():
        trace = folder / "trace.json.gz"
        events = ",".join(f'{{"ph":"X","name":"k{i % 50}","ts":{i * 7},"dur":5,"pid":0,"tid":7}}'
                          for i in range(120_000))
        trace.write_bytes(gzip.compress(f'{{"traceEvents":[{events}]}}'.encode()))
    bomb = folder / "bomb.json.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        block = b"\0" * (16 << 20)
        for _ in range(64):
            f.write(block)
    forged = folder / "forged.json.gz"
    body = gzip.compress(b'{"traceEvents": []}\n' * 150)
    forged.write_bytes(body[:-4] + struct.pack("<I", 0xFFFFFFFF))
    return [("real trace" if "HTA" in trace.name else "generated trace", trace), ("gzip bomb (1 GiB)", bomb),
            ("forged trailer", forged)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        for label, path in _inputs(Path(d)):
            base = _measure(path, "gzip", args.repeat)
            mine = _measure(path, "reader", args.repeat)
            ratio = mine["s"] / base["s"] if base["s"] else float("nan")
            print(f"{label} ({path.stat().st_size:,} bytes gzipped)")
            print(f"  gzip.decompress: {base['s'] * 1e3:8.1f} ms, peak +{base['peak_mib']:7.1f} MiB, {base['outcome']}")
            print(f"  reading:         {mine['s'] * 1e3:8.1f} ms, peak +{mine['peak_mib']:7.1f} MiB, {mine['outcome']}")
            print(f"  time ratio {ratio:.2f}, peak ratio {mine['peak_mib'] / max(base['peak_mib'], 0.1):.2f}")


if __name__ == "__main__":
    main()
