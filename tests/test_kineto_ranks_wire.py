"""What a Spark task sends back for a rank file is data (Arrow IPC with JSON metadata), never a
pickle: the driver reads it back whole and refuses anything else."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from mfu_toolkit.io import kineto_ranks as kr
from mfu_toolkit.io.formats import kineto

TRACE = Path(__file__).resolve().parents[1] / "data" / "samples" / "kineto" / "rank0.pt.trace.json.gz"


def test_a_real_rank_parse_round_trips_through_the_wire_format():
    part = kineto.read_rank(str(TRACE), cache=False)
    back = kr.part_from_bytes(kr.part_to_bytes(part))
    assert back.path == part.path and back.error == part.error and back.report == part.report
    assert list(back.columns) == list(part.columns)
    for c, v in part.columns.items():
        np.testing.assert_array_equal(back.columns[c], v)
    # info as JSON carries it (tuples as lists), as a cache hit reads it
    assert back.info["rank"] == part.info["rank"] and back.info["devices"] == list(part.info["devices"])


@pytest.mark.parametrize("payload", [pickle.dumps({"a": 1}), b"", b"PAR1garbage"])
def test_anything_else_is_refused(payload):
    with pytest.raises(ValueError, match="not a rank's parse"):
        kr.part_from_bytes(payload)


def test_the_driver_never_unpickles():
    import ast

    tree = ast.parse(Path(kr.__file__).read_text())
    imported = {a.name for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}
    modules = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not ({"pickle", "cloudpickle", "dill"} & (imported | modules))
