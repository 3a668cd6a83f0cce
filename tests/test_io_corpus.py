"""A seeded corpus of damaged real logs and samples: every load ends in a Run or the toolkit's error.

For each real file under ``MFU_REALDATA`` and each sample in ``data/samples``, a few seeded
mutations (see ``_corpus.mutations``) are loaded with ``format="auto"`` in a forked child capped
at 1 GiB over its baseline and 60 s. A load may give a Run (which must read back equal from
``save_run``), a ``LoadError`` or a ``SchemaError``; never a foreign exception, an internal error of
a format, a memory error, or a hang. ``tools/io_corpus.py`` runs the same check on thousands.
``MFU_CORPUS_PER_FILE`` (default 2) sets the mutations per file here.
"""

from __future__ import annotations

import os
import random
import sys
from pathlib import Path

import pytest
from _corpus import check, materialise, mutations, sources

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"
PER_FILE = int(os.environ.get("MFU_CORPUS_PER_FILE", "2"))

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the corpus check forks and reads /proc")


def _realdata() -> Path | None:
    value = os.environ.get("MFU_REALDATA", "").strip()
    return Path(value) if value else None


@pytest.mark.parametrize("src", sources(_realdata(), SAMPLES), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_damaged_copies_load_or_fail_cleanly(src, tmp_path):
    rng = random.Random(f"{src.parent.name}/{src.name}")  # one seed per file: the same corpus every run
    variants = list(mutations(src.read_bytes(), rng))
    problems = []
    for kind, data in rng.sample(variants, min(PER_FILE, len(variants))):
        path = materialise(src, kind, data, tmp_path)
        verdict = check(path)
        if verdict != "ok":
            problems.append(f"{kind}: {verdict}")
    assert not problems, f"{src}: " + "; ".join(problems)
