"""Per-rank op-trace loader: step rows, compute/comm split, op table dtypes, bad rows, real traces."""

from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import straggler_ops
from mfu_toolkit.io._common import read_head
from mfu_toolkit.run import LoadError, LoadWarning

HEADER = "dp_rank,stage,rank,step,optype,start_ts,duration,seq_id,mc,mb_id,gmc\n"
ROWS = [
    # rank 0 (stage 0), step 5: fwd 0.0-1.0, fused send+recv logged twice over 1.0-1.5, bwd, optimizer.
    "0,0,0,5,forward-compute,0.0,1.0,0,0,0,0",
    "0,0,0,5,forward-send,1.0,0.5,0,-1,-1,-1",
    "0,0,0,5,backward-recv,1.0,0.5,0,-1,-1,-1",
    "0,0,0,5,backward-compute,1.5,2.0,0,0,0,0",
    "0,0,0,5,grads-reduce-scatter,3.5,0.25,0,0,-1,-1",
    "0,0,0,5,optimizer,3.75,0.25,0,-1,-1,-1",
    "0,0,0,5,gc,4.0,0.0,0,-1,0,-1",
    # rank 1 (stage 1), step 5: waits, then computes; ends at 4.2 (the step's slowest rank).
    "0,1,1,5,forward-recv,0.0,1.2,0,-1,-1,-1",
    "0,1,1,5,forward-compute,1.2,1.0,0,0,0,0",
    "0,1,1,5,backward-compute,2.2,2.0,0,0,0,0",
    # step 9 (sampled later), both ranks.
    "0,0,0,9,forward-compute,0.1,1.0,0,0,0,0",
    "0,1,1,9,forward-compute,0.0,1.5,0,0,0,0",
]
META = "trial_name: TOY\ndp_size: 1\npp_size: 2\ntp_size: 1\nworld_size: 2\n"


def write_csv(tmp_path: Path, rows=ROWS, name: str = "trace-TOY.csv", meta: bool = True) -> Path:
    p = tmp_path / name
    p.write_text(HEADER + "\n".join(rows) + "\n")
    if meta:
        (tmp_path / "meta-TOY.yaml").write_text(META)
    return p


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return straggler_ops.load(p, **kw)


def test_step_rows_compute_comm_and_timeline(tmp_path):
    p = write_csv(tmp_path)
    assert straggler_ops.sniff(p, read_head(p)) >= 0.9
    run = straggler_ops.load(p)
    s = run.steps.set_index(["step", "rank"])
    assert run.meta.timing == "duration_only" and run.meta.n_accelerators == 2
    assert run.meta.name == "TOY" and run.meta.extra["parallelism"]["pp_size"] == 2
    assert s.loc[(5, 0), "compute_s"] == pytest.approx(1.0 + 2.0 + 0.25)
    # The fused send+recv is one 0.5 s interval logged twice: counted once (union), + 0.25 s.
    assert s.loc[(5, 0), "comm_s"] == pytest.approx(0.75)
    assert s.loc[(5, 0), "other_s"] == 0.0 and s.loc[(5, 0), "n_ops"] == 7
    assert s.loc[(5, 1), ["compute_s", "comm_s"]].tolist() == pytest.approx([3.0, 1.2])
    assert s.loc[(5, 1), "stage"] == 1
    # Step 5 lasts 4.2 s (slowest rank); sampled step 9 is laid right after it.
    assert s.loc[(5, 1), "end_s"] == pytest.approx(4.2)
    assert s.loc[(9, 0), ["start_s", "end_s"]].tolist() == pytest.approx([4.3, 5.3])
    assert s.loc[(9, 1), ["start_s", "end_s"]].tolist() == pytest.approx([4.2, 5.7])
    assert any("sample" in n for n in run.meta.report.notes)
    ops = run.tables["ops"]
    assert len(ops) == len(ROWS)
    assert str(ops["optype"].dtype) == "category" and str(ops["category"].dtype) == "category"
    assert ops["duration"].dtype == np.float32 and ops["rank"].dtype == np.int32 and ops["mc"].dtype == np.int16
    assert ops.groupby("category", observed=True).size().to_dict() == {"compute": 7, "comm": 4, "other": 1}
    assert ops.loc[ops["optype"] == "gc", "category"].tolist() == ["other"]


def test_parquet_gives_the_same_run_as_csv(tmp_path):
    p = write_csv(tmp_path)
    df = pd.read_csv(p)
    df["optype"] = df["optype"].astype("category")
    q = tmp_path / "trace-TOY.parquet"
    df.to_parquet(q)
    a = straggler_ops.load(p)
    b = straggler_ops.load(q)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    assert straggler_ops.sniff(q, read_head(q)) >= 0.9
    # The meta YAML names its trace: loading it loads the run.
    assert straggler_ops.sniff(tmp_path / "meta-TOY.yaml", b"trial_name: TOY\n") >= 0.6


def test_bad_rows_are_counted_with_lines_or_raised(tmp_path):
    rows = list(ROWS)
    rows.insert(1, "0,0,0,5,forward-compute,0.5,nan,0,0,0,0")  # line 3
    rows.insert(3, "0,0,0,5,forward-compute,0.5,-1.0,0,0,0,0")  # line 5
    rows.insert(5, "0,0,0,5,forward-compute,0.5")  # line 7: too few fields
    rows.append("0,0,0,x,forward-compute,0.5,1.0,0,0,0,0")  # last line: step not a number
    p = write_csv(tmp_path, rows)
    with pytest.warns(LoadWarning) as rec:
        run = straggler_ops.load(p)
    assert len([w for w in rec if issubclass(w.category, LoadWarning)]) == 1
    rep = run.meta.report
    assert rep.skipped == {
        "missing, NaN or non-numeric value": 2,
        "negative duration": 1,
        "wrong number of fields": 1,
    }
    assert rep.first_lines["missing, NaN or non-numeric value"] == [3, len(rows) + 1]
    assert rep.first_lines["negative duration"] == [5]
    assert rep.first_lines["wrong number of fields"] == [7]
    assert len(run.tables["ops"]) == len(ROWS)
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(p, strict=True)
    assert exc.value.line == 7 and "trace-TOY.csv" in str(exc.value)
    ok = write_csv(tmp_path, [r for i, r in enumerate(rows) if i != 5], name="trace-B.csv", meta=False)
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(ok, strict=True)
    assert exc.value.line == 3 and exc.value.field == "duration"



def test_unreadable_meta_yaml_is_counted_or_named_in_strict_mode(tmp_path):
    p = write_csv(tmp_path)
    (tmp_path / "meta-TOY.yaml").write_text("trial_name: [TOY\n")
    run = load_quiet(p)
    (reason,) = run.meta.report.skipped
    assert reason.startswith("unreadable metadata YAML") and run.meta.report.first_lines[reason] == []
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(p, strict=True)
    assert exc.value.path == str(tmp_path / "meta-TOY.yaml") and exc.value.field == "meta"  # the YAML, not the trace

def test_missing_columns_empty_and_folders(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("rank,step,optype,start_ts\n0,1,forward-compute,0.0\n")
    assert straggler_ops.sniff(p, read_head(p)) == 0.0
    with pytest.raises(LoadError, match="missing column") as exc:
        straggler_ops.load(p)
    assert exc.value.field == "duration"
    p.write_text("")
    with pytest.raises(LoadError, match="empty"):
        straggler_ops.load(p)
    d = tmp_path / "d"
    d.mkdir()
    with pytest.raises(LoadError, match="no op-trace"):
        straggler_ops.load(d)
    write_csv(d, name="trace-A.csv", meta=False)
    write_csv(d, name="trace-B.csv", meta=False)
    with pytest.raises(LoadError, match="several op traces"):
        straggler_ops.load(d)
    g = tmp_path / "garbage.parquet"
    g.write_bytes(b"PAR1" + bytes(range(256)))
    with pytest.raises(LoadError):
        straggler_ops.load(g)


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=300))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "t.csv"
        p.write_bytes(HEADER.encode() + data)
        try:
            load_quiet(p)
        except LoadError:
            pass


@pytest.mark.realdata
def test_real_traces_match_pyarrow_counts():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import yaml

    from mfu_toolkit.io import load_run

    folder = realdata_dir("straggler_ops")
    files = sorted(folder.glob("trace-*.parquet"))
    assert [f.name for f in files] == ["trace-AR.parquet", "trace-SE.parquet", "trace-ST.parquet"]
    # optimizer-clip-main-grad holds the gradient-norm all-reduce (mostly waiting): not compute.
    compute_ops = {"forward-compute", "backward-compute", "optimizer"}
    for p in files:
        t = pq.read_table(p)
        pairs = t.group_by(["step", "rank"]).aggregate([]).num_rows
        n_steps = len(pc.unique(t["step"]))
        n_ranks = len(pc.unique(t["rank"]))
        opt = pc.cast(t["optype"], "string")
        compute_total = pc.sum(pc.filter(t["duration"], pc.is_in(opt, value_set=pa.array(sorted(compute_ops))))).as_py()
        meta = yaml.safe_load((folder / p.name.replace("trace-", "meta-").replace(".parquet", ".yaml")).read_text())
        run = load_run(p)
        assert run.meta.source_format == "straggler_ops" and run.meta.report.total_skipped == 0
        assert len(run.steps) == pairs
        assert run.steps["step"].nunique() == n_steps and run.steps["rank"].nunique() == n_ranks
        assert len(run.tables["ops"]) == t.num_rows
        assert run.meta.n_accelerators == meta["world_size"]
        assert run.meta.extra["parallelism"] == meta
        assert run.steps["compute_s"].sum() == pytest.approx(compute_total, rel=1e-6)
        # Synchronous training: every rank of a step ends within a few ms of the slowest.
        span = run.steps.groupby("step")["end_s"].agg(lambda x: x.max() - x.min())
        assert (span < 0.05).all()
        # Per step, the laid-out duration equals the slowest rank's last op end in the raw file.
        df = t.select(["step", "start_ts", "duration"]).to_pandas()
        raw_wall = (df["start_ts"].astype(float) + df["duration"].astype(float)).groupby(df["step"]).max()
        laid = run.steps.groupby("step")["end_s"].max().diff().dropna()
        assert laid.to_numpy() == pytest.approx(raw_wall.iloc[1:].to_numpy(), rel=1e-5)
