"""Load thousands of damaged copies of every real log and sample; print what went wrong.

    python tools/io_corpus.py [--per-file N] [--seed S] [--realdata DIR]
    python tools/io_corpus.py --datasets N [--spark-every K] [--recorded N] [--seed S]

Each variant is loaded with format="auto" in a forked child capped at 1 GiB over its baseline and
60 s (see tests/_corpus.py). Prints a tally by mutation kind and every failure: a foreign
exception, an internal error of a format, a memory error, a hang, or a saved Run that reads back
different. Exit status 1 when anything failed.

``--datasets N``: N seeded damaged Parquet dataset folders (one to three mutations of
tests/_dataset_corpus.py each), loaded on pandas and DuckDB, and every K-th also on a local Spark
session (``--spark-every K``, 0: never): the engines must agree (same answer to float rounding, or
same refusal). ``--recorded N``: N seeds of damaged recorder folders (byte-level damage of each
rank file and folder-level damage), each loaded with format="recorded". With either, the log
corpus runs only when ``--per-file`` is given too.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from _corpus import check, materialise, mutations, sources  # noqa: E402


def _datasets(n: int, seed: str, spark_every: int, tally: Counter[str], failures: list[str]) -> None:
    """``n`` seeded damaged datasets, each checked on pandas and DuckDB (and Spark every ``spark_every``)."""
    import _dataset_corpus as dc

    spark = None
    if spark_every:
        from mfu_toolkit.engine.spark import local_session

        spark = local_session("local[2]")
    kinds = sorted(dc.DATASET_MUTATIONS)
    with tempfile.TemporaryDirectory() as d:
        clean = dc.clean_dataset(Path(d) / "clean" / "ds")
        for i in range(n):
            rng = random.Random(f"{seed}:dataset:{i}")
            chosen = rng.sample(kinds, rng.choice([1, 2, 3]))
            folder = dc.mutate_dataset(clean, Path(d) / "m", chosen, rng)
            on_spark = spark if spark_every and i % spark_every == 0 else None
            _, problems = dc.check_dataset(folder, spark=on_spark)
            tally["dataset:" + "+".join(chosen[:1])] += 1
            failures += [f"dataset {i} {chosen}: {p}" for p in problems]
    if spark is not None:
        spark.stop()


def _recorded(n: int, seed: str, tally: Counter[str], failures: list[str]) -> None:
    """``n`` seeds of damaged recorder folders, each variant loaded with format="recorded"."""
    import _dataset_corpus as dc

    with tempfile.TemporaryDirectory() as d:
        clean = dc.clean_recorded(Path(d) / "clean" / "job")
        for i in range(n):
            for kind, folder in dc.recorded_variants(clean, Path(d) / f"s{i}", random.Random(f"{seed}:recorded:{i}")):
                verdict = check(folder, "recorded")
                tally["recorded:" + kind.split(":")[-1]] += 1
                if verdict != "ok":
                    failures.append(f"recorded seed {i} [{kind}]: {verdict}")
            shutil.rmtree(Path(d) / f"s{i}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-file", type=int, default=None, help="mutations per source file (default 40)")
    ap.add_argument("--seed", default="0")
    ap.add_argument("--realdata", default=os.environ.get("MFU_REALDATA", ""))
    ap.add_argument("--datasets", type=int, default=0, help="damaged dataset folders to check on every engine")
    ap.add_argument("--spark-every", type=int, default=0, help="check every K-th dataset on Spark too (0: never)")
    ap.add_argument("--recorded", type=int, default=0, help="seeds of damaged recorder folders")
    args = ap.parse_args()
    tally: Counter[str] = Counter()
    failures: list[str] = []
    t0 = time.perf_counter()
    if args.per_file is not None or not (args.datasets or args.recorded):
        _logs(args, tally, failures)
    if args.datasets:
        _datasets(args.datasets, args.seed, args.spark_every, tally, failures)
    if args.recorded:
        _recorded(args.recorded, args.seed, tally, failures)
    n = sum(tally.values())
    print(f"{n} inputs in {time.perf_counter() - t0:.0f} s; {len(failures)} failed")
    for kind, count in sorted(tally.items()):
        print(f"  {kind:24s} {count}")
    for line in failures:
        print("FAIL", line[:600])
    return 1 if failures else 0


def _logs(args: argparse.Namespace, tally: Counter[str], failures: list[str]) -> None:
    """Damaged copies of every real log and sample, ``--per-file`` each."""
    per_file = 40 if args.per_file is None else args.per_file
    real = Path(args.realdata) if args.realdata else None
    files = sources(real, ROOT / "data" / "samples")
    with tempfile.TemporaryDirectory() as d:
        for src in files:
            rng = random.Random(f"{args.seed}:{src}")
            data = src.read_bytes()
            for i in range(per_file):
                for kind, variant in mutations(data, rng):
                    if rng.random() > 1 / 12 and i:
                        continue
                    verdict = check(materialise(src, f"{kind}-{i}", variant, Path(d)))
                    tally[kind] += 1
                    if verdict != "ok":
                        failures.append(f"{src.relative_to(src.parents[1])} [{kind}]: {verdict}")
    print(f"{len(files)} log files")


if __name__ == "__main__":
    raise SystemExit(main())
