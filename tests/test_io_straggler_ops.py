"""Per-rank op-trace loader: step rows, compute/comm split, op table dtypes, bad rows, facts, real traces."""

from __future__ import annotations

import gzip
import random
import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _corpus import mutations
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import load_run, rules
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.formats import straggler_ops
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning, Run, SchemaError

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


def test_meta_yaml_states_world_size_and_parallelism_as_facts(tmp_path):
    run = straggler_ops.load(write_csv(tmp_path))
    yaml_path = tmp_path / "meta-TOY.yaml"
    # META above: world_size on line 5, the sizes on lines 2-4
    world = run.meta.fact("n_accelerators")
    assert (world["value"], world["where"], world["text"]) == (2, f"{yaml_path}:5", "world_size: 2")
    assert run.meta.fact("n_ranks")["value"] == 2
    par = run.meta.fact("parallelism")
    assert par["value"] == {"dp": 1, "pp": 2, "tp": 1} and par["where"] == f"{yaml_path}:2"
    assert run.meta.claims == []  # a trace prints no throughput of its own


def test_parquet_gives_the_same_run_as_csv(tmp_path):
    p = write_csv(tmp_path)
    df = pd.read_csv(p)
    df["optype"] = df["optype"].astype("category")
    q = tmp_path / "trace-TOY.parquet"
    df.to_parquet(q)
    a = straggler_ops.load(p)
    b = straggler_ops.load(q)
    pd.testing.assert_frame_equal(a.steps, b.steps)
    pd.testing.assert_frame_equal(a.tables["ops"], b.tables["ops"])
    assert straggler_ops.sniff(q, read_head(q)) >= 0.9
    # The meta YAML names its trace: loading it loads the run.
    assert straggler_ops.sniff(tmp_path / "meta-TOY.yaml", b"trial_name: TOY\n") >= 0.6
    assert load_run(tmp_path / "meta-TOY.yaml", format="straggler_ops").steps.equals(a.steps)


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
    assert rep.first_lines == {
        "time is missing, NaN or infinite": [3],
        "negative duration": [5],
        "wrong number of fields": [7],
        "step is not a non-negative integer": [len(rows) + 1],
    }
    assert sum(rep.skipped.values()) == 4
    assert len(run.tables["ops"]) == len(ROWS)
    # strict mode stops at the first bad row in file order: line 3, before the short line 7
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(p, strict=True)
    assert (exc.value.line, exc.value.field) == (3, "duration") and "trace-TOY.csv" in str(exc.value)
    short_first = write_csv(tmp_path, [r for i, r in enumerate(rows) if i not in (1, 3)], name="trace-B.csv",
                            meta=False)
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(short_first, strict=True)
    assert (exc.value.line, exc.value.field) == (5, "row")


def test_lines_after_a_blank_line_are_reported_where_they_are(tmp_path):
    # lines: 1 header, 2-3 rows, 4 blank, 5 a row with a negative duration, 6 a short row
    rows = [ROWS[0], ROWS[1], "", "0,0,0,5,forward-compute,0.5,-1.0,0,0,0,0", "0,0,0,5", *ROWS[2:]]
    run = load_quiet(write_csv(tmp_path, rows, meta=False))
    assert run.meta.report.first_lines == {"negative duration": [5], "wrong number of fields": [6]}
    crlf = tmp_path / "trace-crlf.csv"
    crlf.write_bytes((HEADER + "\n".join(rows) + "\n").replace("\n", "\r\n").encode())
    assert load_quiet(crlf).meta.report.first_lines == {"negative duration": [5], "wrong number of fields": [6]}


@pytest.mark.parametrize("char", ["[", "0", " ", "{", "|", ",", '"', "-"])
def test_an_80_kb_line_of_one_character_is_quick(tmp_path, char):
    from _timing import explain, growth, linear_bound

    runs = {}

    def load(n: int):
        (tmp_path / str(n)).mkdir()
        p = write_csv(tmp_path / str(n), [ROWS[0], char * n, *ROWS[1:]], meta=False)
        return lambda: runs.__setitem__(n, load_quiet(p))

    ratio = growth(load, 80_000)  # a line of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    for run in runs.values():
        assert len(run.tables["ops"]) == len(ROWS)  # the long line is one bad row, counted
        assert run.meta.report.total_skipped == 1
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


def test_huge_negative_or_fractional_integers_are_counted_not_wrapped(tmp_path):
    # One bad cell per row; each line below is 1 + its index + 1 (the header is line 1).
    # the strict message says "<reason> (<detail>)": what the key said before the detail moved to the example
    bad = {
        "0,0,0,1e308,forward-compute,0.0,1.0,0,0,0,0": ("step is not a non-negative integer", "step"),
        "0,0,0,99999999999999999999,forward-compute,0.0,1.0,0,0,0,0": ("step is not a non-negative integer", "step"),
        "0,0,0,-1,forward-compute,0.0,1.0,0,0,0,0": ("step is not a non-negative integer", "step"),
        "0,0,3e9,5,forward-compute,0.0,1.0,0,0,0,0": ("value out of range (rank above 10,000,000)", "rank"),
        "0,0,2.5,5,forward-compute,0.0,1.0,0,0,0,0": ("index is not a non-negative integer (rank)", "rank"),
        "0,1e308,0,5,forward-compute,0.0,1.0,0,0,0,0": ("value out of range (stage above 10,000,000)", "stage"),
        "-1,0,0,5,forward-compute,0.0,1.0,0,0,0,0": ("index is not a non-negative integer (dp_rank)", "dp_rank"),
        "0,0,0,5,forward-compute,0.0,1.0,0,1.5,0,0": ("index is not an integer of -1 or more (mc)", "mc"),
        "0,0,0,5,forward-compute,0.0,1e39,0,0,0,0": ("value out of range (beyond float32)", "duration"),
    }
    rows = list(bad) + ROWS
    p = write_csv(tmp_path, rows, meta=False)
    run = load_quiet(p)
    expected: dict[str, list[int]] = {}
    for i, (reason, _) in enumerate(bad.values()):
        expected.setdefault(reason.split(" (")[0], []).append(i + 2)  # the key: the reason without its detail
    assert run.meta.report.first_lines == expected
    assert len(run.tables["ops"]) == len(ROWS)  # every bad row dropped, every good one kept
    assert run.steps["step"].min() == 5 and run.steps["rank"].max() == 1  # nothing wrapped
    for row, (reason, fld) in bad.items():
        q = write_csv(tmp_path, [row, *ROWS], name="trace-one.csv", meta=False)
        with pytest.raises(LoadError) as exc:
            straggler_ops.load(q, strict=True)
        assert (exc.value.line, exc.value.field) == (2, fld) and reason in str(exc.value)


def test_the_largest_int64_step_is_kept_exactly_and_text_in_an_optional_column_is_counted(tmp_path):
    top = 2**63 - 1  # rules.MAX_INT64: a step may be as large as int64 allows
    rows = [f"0,0,0,{top},forward-compute,0.0,1.0,0,0,0,0", "0,0,0,9,forward-compute,0.0,1.0,0,0,x,0"]
    run = load_quiet(write_csv(tmp_path, rows, meta=False))
    assert sorted(run.steps["step"].tolist()) == [9, top]
    assert run.tables["ops"]["step"].dtype == np.int64  # widened from int32, never wrapped
    # the 'x' in mb_id (line 3) is counted and left missing; its row stays
    assert run.meta.report.first_lines == {rules.NON_NUMERIC: [3]}
    mb = run.tables["ops"]["mb_id"]
    assert str(mb.dtype) == "Float32" and mb.isna().sum() == 1


def test_huge_integers_in_a_parquet_trace_are_counted_by_row(tmp_path):
    df = pd.read_csv(write_csv(tmp_path, meta=False))
    df["rank"] = df["rank"].astype(np.int64)
    df.loc[2, "rank"] = 3_000_000_000  # row 3
    df["step"] = df["step"].astype(float)
    df.loc[4, "step"] = 1e308  # row 5
    q = tmp_path / "trace-big.parquet"
    df.to_parquet(q)
    run = load_quiet(q)
    assert run.meta.report.first_lines == {
        "step is not a non-negative integer": [5],
        "value out of range": [3],
    }
    assert run.meta.report.examples["value out of range"].startswith("rank above 10,000,000: ")
    assert len(run.tables["ops"]) == len(ROWS) - 2 and run.steps["step"].min() == 5


def test_unreadable_meta_yaml_is_counted_or_named_in_strict_mode(tmp_path):
    p = write_csv(tmp_path)
    (tmp_path / "meta-TOY.yaml").write_text("trial_name: [TOY\n")
    run = load_quiet(p)
    (reason,) = run.meta.report.skipped
    assert reason.startswith("unreadable metadata YAML") and run.meta.report.first_lines[reason] == []
    with pytest.raises(LoadError) as exc:
        straggler_ops.load(p, strict=True)
    assert exc.value.path == str(tmp_path / "meta-TOY.yaml") and exc.value.field == "meta"  # the YAML, not the trace


def test_meta_yaml_with_an_impossible_date_or_nested_values(tmp_path):
    p = write_csv(tmp_path)
    # PyYAML raises ValueError (not YAMLError) building a date of month 13
    (tmp_path / "meta-TOY.yaml").write_text("trial_name: TOY\nstarted: 2024-13-45\nworld_size: 2\n")
    run = load_quiet(p)
    assert list(run.meta.report.skipped) == ["unreadable metadata YAML"]
    assert run.meta.report.examples["unreadable metadata YAML"].startswith("ValueError: ")
    (tmp_path / "meta-TOY.yaml").write_text("- world_size: 2\n")  # a list, not names and values
    listed = load_quiet(p).meta.report
    assert list(listed.skipped) == ["metadata YAML is not names and values"]
    assert listed.examples["metadata YAML is not names and values"].startswith("a list: ")
    # aliases nest a value many times over; only plain values are kept, the rest noted
    bomb = "a: &a [x, x, x, x]\nb: &b [*a, *a, *a, *a]\nc: [*b, *b, *b, *b]\nworld_size: true\ntrial_name: TOY\n"
    (tmp_path / "meta-TOY.yaml").write_text(bomb)
    run = load_quiet(p)
    assert set(run.meta.extra["parallelism"]) == {"world_size", "trial_name"}
    assert any("meta-TOY.yaml" in n and "left out" in n for n in run.meta.report.notes)
    # a world size of `true` is no count of ranks: counted, not read as 1
    assert run.meta.n_accelerators is None
    assert run.meta.report.first_lines == {"value out of range": [4]}


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
    assert straggler_ops.sniff(d, b"") == 0.8 and len(straggler_ops.load(d).steps) == 4
    write_csv(d, name="trace-B.csv", meta=False)
    with pytest.raises(LoadError, match="several op traces"):
        straggler_ops.load(d)
    g = tmp_path / "garbage.parquet"
    g.write_bytes(b"PAR1" + bytes(range(256)))
    with pytest.raises(LoadError):
        straggler_ops.load(g)


def test_a_trace_column_of_dates_is_refused_by_name(tmp_path):
    df = pd.read_csv(write_csv(tmp_path, meta=False))
    df["start_ts"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(df["start_ts"], unit="s")
    q = tmp_path / "trace-dates.parquet"
    df.to_parquet(q)
    with pytest.raises(LoadError, match="column 'start_ts' holds timestamp") as exc:
        straggler_ops.load(q)
    assert exc.value.field == "start_ts"


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


def _loads_or_refuses(path: Path) -> str:
    """'run' or 'refused' (LoadError/SchemaError); an internal error or a foreign exception fails."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run = load_run(path, format="straggler_ops")
        except InternalLoadError as exc:
            pytest.fail(f"{path.name}: internal error: {exc}")
        except (LoadError, SchemaError):
            return "refused"
    assert isinstance(run, Run)
    return "run"


def _mutated_values(df: pd.DataFrame, rng: random.Random) -> pd.DataFrame:
    """``df`` with a few cells of one column set to NaN, inf, huge or negative numbers."""
    out = df.copy()
    col = rng.choice([c for c in out.columns if c != "optype"])
    out[col] = out[col].astype(float)
    rows = rng.sample(range(len(out)), min(len(out), rng.randint(1, 5)))
    out.loc[rows, col] = rng.choice([np.nan, np.inf, -np.inf, 1e308, -1.0, 3e9, 2.0**63, 0.5])
    return out


def test_seeded_mutations_load_or_fail_cleanly(tmp_path):
    """Truncation, byte flips, NaN/inf/huge numbers, NUL, CRLF/CR, BOM, non-UTF-8, an 80 KB line
    and gzip damage, of a CSV sample, its gzip and one real-shaped Parquet trace."""
    csv_path = write_csv(tmp_path, meta=False)
    sources = {"trace-s.csv": csv_path.read_bytes(), "trace-s.csv.gz": gzip.compress(csv_path.read_bytes())}
    df = pd.read_csv(csv_path)
    df["optype"] = df["optype"].astype("category")
    q = tmp_path / "trace-q.parquet"
    df.to_parquet(q)
    sources["trace-q.parquet"] = q.read_bytes()
    outcomes = []
    for name, data in sources.items():
        rng = random.Random(name)  # the same corpus every run
        for kind, body in mutations(data, rng):
            p = tmp_path / kind / name
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(body)
            outcomes.append(_loads_or_refuses(p))
    rng = random.Random("values")
    for i in range(20):
        p = tmp_path / f"trace-v{i}.parquet"
        _mutated_values(df, rng).to_parquet(p)
        outcomes.append(_loads_or_refuses(p))
    assert "run" in outcomes and "refused" in outcomes  # the corpus holds both kinds


@pytest.mark.realdata
def test_seeded_value_mutations_of_a_real_trace(tmp_path):
    real = realdata_dir("straggler_ops") / "trace-ST.parquet"
    df = pd.read_parquet(real)
    rng = random.Random("trace-ST")
    for i in range(12):
        p = tmp_path / f"trace-m{i}.parquet"
        _mutated_values(df, rng).to_parquet(p)
        _loads_or_refuses(p)
    data = real.read_bytes()
    for kind, body in mutations(data, random.Random("trace-ST.parquet")):
        p = tmp_path / kind / real.name
        p.parent.mkdir()
        p.write_bytes(body)
        _loads_or_refuses(p)


@pytest.mark.realdata
def test_real_traces_match_pyarrow_counts():
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq
    import yaml

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


@pytest.mark.realdata
@pytest.mark.parametrize("job", ["AR", "SE", "ST"])
def test_real_traces_state_their_world_size_and_parallel_sizes(job):
    folder = realdata_dir("straggler_ops")
    yaml_path = folder / f"meta-{job}.yaml"
    # what the YAML says, read with plain Python: "key: value" lines and their numbers
    said = {}
    for i, line in enumerate(yaml_path.read_text().splitlines(), start=1):
        m = re.fullmatch(r"(\w+): (\S+)", line)
        if m:
            said[m.group(1)] = (m.group(2), i, line)
    run = load_run(folder / f"trace-{job}.parquet")
    value, line, text = said["world_size"]
    for name in ("n_accelerators", "n_ranks"):
        fact = run.meta.fact(name)
        assert ((fact["value"], fact["where"], fact["text"], fact["source"])
                == (int(value), f"{yaml_path}:{line}", text, "stated"))
    parallel = {k: v for k, v in said.items() if k.endswith("_size") and k != "world_size"}
    par = run.meta.fact("parallelism")
    assert par["value"] == {k.removesuffix("_size"): int(v) for k, (v, _, _) in parallel.items()}
    assert par["where"] == f"{yaml_path}:{min(i for _, i, _ in parallel.values())}"
    assert run.meta.n_accelerators == int(value)
