"""The recorder imports no framework until one is used: ``import mfu_toolkit.record``, its public
names and a recorded step leave ``torch``, Lightning, ``transformers``, ``accelerate`` (and
pandas) unimported, so a job pays for nothing it does not use and the ``[record]`` extra is needed
only for the framework callbacks. Each check runs in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

FRAMEWORKS = ("torch", "lightning", "pytorch_lightning", "transformers", "accelerate", "pandas")

_CHECK = textwrap.dedent("""
    import json, sys
    import mfu_toolkit.record as record
    names = [n for n in record.__all__ if n not in record._LAZY]  # the framework callbacks load on use
    values = {n: getattr(record, n) for n in names}
    import mfu_toolkit.record.collectives, mfu_toolkit.record.demo, mfu_toolkit.record.folder  # noqa: E401
    rec = values["StepRecorder"](sys.argv[1], rank=0, n_ranks=1)
    with rec.step(step=0, samples=8):
        with rec.data_wait():
            pass
        with rec.comm():
            pass
    with rec.event("checkpoint_save"):
        pass
    rec.close()
    loaded = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
    print(json.dumps({"names": names, "loaded": loaded, "lazy": sorted(record._LAZY)}))
""")


def test_the_recorder_imports_no_framework_until_used(tmp_path):
    r = subprocess.run([sys.executable, "-c", _CHECK, str(tmp_path / "run"), ",".join(FRAMEWORKS)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    assert got["loaded"] == [], got
    assert {"StepRecorder", "launch_info", "next_attempt", "file_name"} <= set(got["names"])
    assert got["lazy"] == ["RecorderCallback", "RecorderTrainerCallback"]
    assert len(list((tmp_path / "run").glob("rank00000.attempt000.jsonl"))) == 1
