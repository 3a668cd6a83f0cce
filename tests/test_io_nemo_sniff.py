"""A binary file that quotes NeMo's step lines (a saved Run's Parquet keeps the load notes) is no
NeMo log: the NeMo sniffer gives it nothing, and the saved run reads back as itself."""

from __future__ import annotations

from pathlib import Path

from mfu_toolkit.io import load_run
from mfu_toolkit.io.formats import nemo
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import save_run

SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"


def test_a_saved_nemo_run_is_not_sniffed_as_a_nemo_log(tmp_path):
    run = load_run(SAMPLES / "nemo_train.log")
    out = tmp_path / "saved.parquet"
    save_run(run, out)
    head = read_head(out, 8192)
    assert head.startswith(b"PAR1") and b"\x00" in head
    assert nemo.sniff(out, head) == 0.0
    assert nemo.sniff(SAMPLES / "nemo_train.log", read_head(SAMPLES / "nemo_train.log", 8192)) == 1.0
    back = load_run(out)
    assert back.meta.source_format == "nemo" and len(back.steps) == len(run.steps)
