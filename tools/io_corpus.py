"""Load thousands of damaged copies of every real log and sample; print what went wrong.

    python tools/io_corpus.py [--per-file N] [--seed S] [--realdata DIR]

Each variant is loaded with format="auto" in a forked child capped at 1 GiB over its baseline and
60 s (see tests/_corpus.py). Prints a tally by mutation kind and every failure: a foreign
exception, an internal error of a format, a memory error, a hang, or a saved Run that reads back
different. Exit status 1 when anything failed.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _corpus import check, materialise, mutations, sources  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-file", type=int, default=40, help="mutations per source file (default 40)")
    ap.add_argument("--seed", default="0")
    ap.add_argument("--realdata", default=os.environ.get("MFU_REALDATA", ""))
    args = ap.parse_args()
    real = Path(args.realdata) if args.realdata else None
    files = sources(real, ROOT / "data" / "samples")
    tally: Counter[str] = Counter()
    failures: list[str] = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        for src in files:
            rng = random.Random(f"{args.seed}:{src}")
            data = src.read_bytes()
            for i in range(args.per_file):
                for kind, variant in mutations(data, rng):
                    if rng.random() > 1 / 12 and i:
                        continue
                    verdict = check(materialise(src, f"{kind}-{i}", variant, Path(d)))
                    tally[kind] += 1
                    if verdict != "ok":
                        failures.append(f"{src.relative_to(src.parents[1])} [{kind}]: {verdict}")
    n = sum(tally.values())
    print(f"{n} inputs from {len(files)} files in {time.perf_counter() - t0:.0f} s; {len(failures)} failed")
    for kind, count in sorted(tally.items()):
        print(f"  {kind:16s} {count}")
    for line in failures:
        print("FAIL", line[:600])
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
