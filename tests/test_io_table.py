"""Generic step tables: CSV / JSONL / Parquet, column mapping, units, and every bad-row case."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from _samples import TABLE_CSV, write_table

from mfu_toolkit.io import load_run, load_table
from mfu_toolkit.run import LoadError, LoadWarning, read_run, save_run

MAP = {"step": "iter", "start_s": "t0", "end_s": "t1", "rank": "gpu"}


def test_csv_with_mapping_and_ms(tmp_path):
    run = load_table(write_table(tmp_path), columns=MAP, time_unit="ms", name="demo", n_accelerators=2)
    s = run.steps
    assert len(s) == 4 and run.ranks == [0, 1]
    r1 = s[(s["rank"] == 1) & (s["step"] == 1)].iloc[0]
    assert r1["start_s"] == 0.0 and r1["end_s"] == pytest.approx(1.1)
    assert "loss" in s.columns  # other numeric columns kept
    m = run.meta
    assert (m.name, m.n_accelerators, m.time_unit, m.timing, m.source_format) == ("demo", 2, "ms", "exact", "table")
    assert m.report.rows_kept == 4 and m.report.lines_read == 4 and not m.report.skipped


def test_identity_mapping_and_duration_column(tmp_path):
    text = "step,start_s,duration,samples\n1,0,2,32\n2,2,3,32\n"
    run = load_run(write_table(tmp_path, text, "plain.csv"))  # detected as the table fallback
    assert run.meta.source_format == "table"
    assert list(run.steps["end_s"]) == [2.0, 5.0]
    assert list(run.steps["samples"]) == [32.0, 32.0]


def test_duration_only_is_placed_back_to_back(tmp_path):
    text = "step,dur\n2,1.5\n1,1.0\n3,2.0\n"
    run = load_table(write_table(tmp_path, text), columns={"step": "step", "duration": "dur"}, time_unit="min")
    s = run.steps.sort_values("step")
    assert list(s["start_s"]) == [0.0, 60.0, 150.0]
    assert list(s["end_s"]) == [60.0, 150.0, 270.0]
    assert run.meta.timing == "duration_only"
    assert any("back to back" in n for n in run.meta.report.notes)


@pytest.mark.parametrize("unit,factor", [("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9), ("min", 60.0),
                                         ("h", 3600.0)])
def test_relative_units(tmp_path, unit, factor):
    run = load_table(write_table(tmp_path, "step,start_s,end_s,compute_s\n1,10,20,5\n"), time_unit=unit)
    row = run.steps.iloc[0]
    assert row["start_s"] == pytest.approx(10 * factor)
    assert row["end_s"] == pytest.approx(20 * factor)
    assert row["compute_s"] == pytest.approx(5 * factor)


def test_epoch_units_are_shifted_to_the_first_start(tmp_path):
    text = "step,start_s,end_s\n1,1700000000000,1700000001500\n2,1700000001500,1700000003000\n"
    run = load_table(write_table(tmp_path, text), time_unit="epoch_ms")
    assert list(run.steps["start_s"]) == [0.0, 1.5]
    assert run.meta.extra["t0_epoch_s"] == 1_700_000_000.0
    assert run.meta.extra["t0_wallclock"].startswith("2023-11-14T22:13:20")
    assert run.meta.time_unit == "epoch_ms"


def test_unknown_unit_lists_the_known_ones(tmp_path):
    with pytest.raises(LoadError, match="unknown time unit 'fortnight'; expected one of s, ms, us"):
        load_table(write_table(tmp_path), columns=MAP, time_unit="fortnight")


def test_jsonl(tmp_path):
    lines = [json.dumps({"step": i, "start_s": i, "end_s": i + 1, "rank": 0}) for i in range(3)]
    lines.insert(1, '{"step": 9, "start_s": ')  # truncated record
    lines.append("[1, 2]")  # valid JSON, not an object
    p = tmp_path / "steps.jsonl"
    p.write_text("\n".join(lines) + "\n")
    with pytest.warns(LoadWarning):
        run = load_table(p)
    assert list(run.steps["step"]) == [0, 1, 2]
    rep = run.meta.report
    assert rep.skipped == {"malformed JSON record": 1, "record is not a JSON object": 1}
    assert rep.first_lines == {"malformed JSON record": [2], "record is not a JSON object": [5]}


def test_parquet_table_and_row_numbers(tmp_path):
    p = tmp_path / "steps.parquet"
    pd.DataFrame({"it": [1, 2, 3], "a": [0.0, 1.0, np.nan], "b": [1.0, 2.0, 3.0]}).to_parquet(p)
    with pytest.warns(LoadWarning):
        run = load_table(p, columns={"step": "it", "start_s": "a", "end_s": "b"})
    assert len(run.steps) == 2
    assert run.meta.report.first_lines == {"required field missing": [3]}
    assert run.meta.report.examples["required field missing"].startswith("'a': ")


def test_parquet_table_is_not_a_run_file(tmp_path):
    p = tmp_path / "steps.parquet"
    pd.DataFrame({"step": [1], "start_s": [0.0], "end_s": [1.0]}).to_parquet(p)
    assert load_run(p).meta.source_format == "table"


def test_each_bad_row_is_counted_with_its_line(tmp_path):
    text = (
        "iter,t0,t1,gpu\n"
        "1,0,1,0\n"  # 2 ok
        "2,abc,2,0\n"  # 3 non-numeric
        "3,2,1,0\n"  # 4 end before start
        "4,3\n"  # 5 wrong field count
        "5,,5,0\n"  # 6 missing value
        "6,5,6,0\n"  # 7 ok
        "7,1,7.5,0\n"  # 8 start goes backwards (step 6 started at 5)
        "8,7.5,8,0.5\n"  # 9 non-integer rank
        "8,7.5,8,0\n"  # 10 ok
        "8,8,9,0\n"  # 11 repeated (attempt, step, rank)
        "\x00\x01\x02\n"  # 12 binary garbage
        "9,8,nan,0\n"  # 13 NaN
        "10,9,10,0\n"  # 14 ok
        "11,10"  # 15 half-written last line
    )
    p = write_table(tmp_path, text)
    with pytest.warns(LoadWarning) as caught:
        run = load_table(p, columns=MAP)
    assert len([w for w in caught if w.category is LoadWarning]) == 1
    assert list(run.steps["step"]) == [1, 6, 8, 10]
    rep = run.meta.report
    assert rep.first_lines == {
        "not a finite number": [3, 13],  # 't0', then 't1'
        "interval end before its start": [4],
        "wrong number of fields": [5, 15],
        "required field missing": [6],
        "non-monotonic timestamp": [8],
        "attempt or rank is not an integer": [9],
        "duplicate record (kept the first)": [11],
        "binary garbage (NUL bytes)": [12],
    }
    for reason, detail in (("not a finite number", "'t0'"), ("interval end before its start", "step"),
                           ("wrong number of fields", "expected 4"), ("required field missing", "'t0'"),
                           ("non-monotonic timestamp", "start earlier than the previous step's"),
                           ("attempt or rank is not an integer", "'gpu'"),
                           ("duplicate record (kept the first)", "attempt, step, rank")):
        assert rep.examples[reason].startswith(f"{detail}: "), reason
    assert rep.total_skipped == 10 and rep.rows_kept == 4
    assert "skipped 10" in rep.summary()


def test_negative_duration_and_negative_optional(tmp_path):
    text = "step,start_s,duration,data_wait_s\n1,0,-1,0\n2,0,1,-0.5\n3,1,1,0.2\n"
    with pytest.warns(LoadWarning):
        run = load_table(write_table(tmp_path, text))
    assert list(run.steps["step"]) == [3]
    assert run.meta.report.skipped == {"negative duration": 1, "value out of range": 1}
    assert run.meta.report.examples["value out of range"].startswith("negative 'data_wait_s': ")


def test_strict_raises_on_the_first_bad_row_in_file_order(tmp_path):
    text = "iter,t0,t1,gpu\n1,0,1,0\n2,abc,2,0\n\x00garbage\n"
    with pytest.raises(LoadError) as info:
        load_table(write_table(tmp_path, text), columns=MAP, strict=True)
    e = info.value
    assert (e.line, e.field) == (3, "t0")
    assert "steps.csv" in str(e) and "line 3" in str(e) and "not a finite number" in str(e)


def test_missing_column_lists_what_the_file_has(tmp_path):
    with pytest.raises(LoadError,
                       match=r"missing column 'iteration' \(mapped to 'step'\); the file has: iter, t0, t1, gpu, loss"):
        load_table(write_table(tmp_path), columns={"step": "iteration", "start_s": "t0", "end_s": "t1"})
    with pytest.raises(LoadError, match="missing column 'step'"):
        load_table(write_table(tmp_path), columns={"start_s": "t0", "end_s": "t1"})
    with pytest.raises(LoadError, match="missing time columns"):
        load_table(write_table(tmp_path), columns={"step": "iter"})
    with pytest.raises(LoadError, match="unknown schema name 'begin'"):
        load_table(write_table(tmp_path), columns={"step": "iter", "begin": "t0"})


def test_empty_and_header_only_files(tmp_path):
    with pytest.raises(LoadError, match="empty file"):
        load_table(write_table(tmp_path, "", "empty.csv"))
    with pytest.raises(LoadError, match="no data rows"):
        load_table(write_table(tmp_path, "step,start_s,end_s\n", "header.csv"))
    with pytest.raises(LoadError, match="binary content"):
        load_table(write_table(tmp_path, "\x00\x01\x02\x03", "bin.csv"))


def test_semicolon_and_tab_separated(tmp_path):
    for sep, name in ((";", "a.csv"), ("\t", "a.tsv")):
        text = sep.join(["step", "start_s", "end_s"]) + "\n" + sep.join(["1", "0", "2"]) + "\n"
        assert load_table(write_table(tmp_path, text, name)).steps["end_s"].tolist() == [2.0]


def test_attempts_column(tmp_path):
    text = "attempt,step,start_s,end_s\n0,1,0,1\n0,2,1,2\n1,2,5,6\n"
    run = load_table(write_table(tmp_path, text))
    assert run.n_attempts == 2


def test_round_trip_through_run_parquet(tmp_path):
    run = load_table(write_table(tmp_path, TABLE_CSV), columns=MAP, time_unit="ms")
    back = load_run(save_run(run, tmp_path / "r.parquet"))
    assert back == run and back.meta.source_format == "table"
    assert read_run(tmp_path / "r.parquet") == run


def test_unknown_keyword_is_a_type_error(tmp_path):
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        load_table(write_table(tmp_path), columns=MAP, colour="blue")


# --- fixes: BOM, integers that do not fit, a bad CSV row, overflow, bombs, wide tables --------
def test_a_byte_order_mark_before_the_header_is_not_part_of_the_first_name(tmp_path):
    p = tmp_path / "bom.csv"
    p.write_bytes(b"\xef\xbb\xbfstep,start_s,end_s\n1,0,1\n2,1,2\n")
    run = load_table(p)
    assert run.steps["step"].tolist() == [1, 2]
    j = tmp_path / "bom.jsonl"  # a BOM before JSON lines: still JSON lines
    j.write_bytes(b'\xef\xbb\xbf{"step": 1, "start_s": 0, "end_s": 1}\n')
    assert load_run(j, format="table").steps["step"].tolist() == [1]


def test_steps_ranks_and_attempts_that_do_not_fit_are_counted_not_wrapped(tmp_path):
    text = (
        "attempt,step,start_s,end_s,rank\n"
        "0,1,0,1,0\n"  # 2 ok
        "0,1e308,1,2,0\n"  # 3 a step beyond int64 (it wrapped to -9223372036854775808)
        "0,-1,1,2,0\n"  # 4 a negative step
        "0,1.5,1,2,0\n"  # 5 a fractional step
        "0,2,1,2,3e9\n"  # 6 a rank of 3e9
        "1e12,2,1,2,0\n"  # 7 an attempt of 1e12 (validating it listed every missing attempt)
        "0,3,2,3,0\n"  # 8 ok
    )
    with pytest.warns(LoadWarning):
        run = load_table(write_table(tmp_path, text))
    rep = run.meta.report
    assert rep.first_lines == {
        "step is not a non-negative integer": [3, 4, 5],
        "value out of range": [7, 6],  # 'attempt' is checked before 'rank' (both above 10,000,000)
    }
    assert rep.examples["value out of range"].startswith("'attempt' above 10,000,000: ")
    assert run.steps["step"].tolist() == [1, 3] and run.steps["rank"].tolist() == [0, 0]
    # the largest int64 step, in a column of integers (CSV text or Parquet int64), is exact
    top = 2**63 - 1
    assert load_table(write_table(tmp_path, f"step,start_s,end_s\n1,0,1\n{top},1,2\n",
                                  "top.csv")).steps["step"].tolist() == [1, top]
    exact = tmp_path / "exact.parquet"
    pd.DataFrame({"step": np.array([1, top]), "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]}).to_parquet(exact)
    assert load_table(exact).steps["step"].tolist() == [1, top]


def test_times_that_overflow_in_seconds_are_counted(tmp_path):
    # 1e306 h is finite, but 3.6e309 s is not: the row is counted, the others load
    text = "step,start_s,duration\n1,0,1\n2,1,1e306\n3,2,1\n"
    with pytest.warns(LoadWarning):
        run = load_table(write_table(tmp_path, text), time_unit="h")
    assert run.meta.report.first_lines == {"time is missing, NaN or infinite": [3]}
    assert run.steps["step"].tolist() == [1, 3]


def test_a_row_the_csv_module_cannot_read_skips_that_row_only(tmp_path):
    huge = "x" * 200_000  # above the csv module's field size limit (131072)
    text = f"step,start_s,end_s,note\n1,0,1,a\n2,1,2,{huge}\n3,2,3,b\n4,3,4,c\n"
    with pytest.warns(LoadWarning):
        run = load_table(write_table(tmp_path, text))
    (reason,) = run.meta.report.skipped
    assert reason == "unreadable CSV row"
    assert run.meta.report.examples[reason].startswith("field larger than field limit")
    assert run.meta.report.first_lines[reason] == [3]
    assert run.steps["step"].tolist() == [1, 3, 4]


def test_a_gzip_bomb_is_refused_naming_the_file(tmp_path):
    import zlib

    c = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    member = c.compress(b"step,start_s,end_s\n") + c.compress(b"0" * (64 << 20)) + c.flush()
    p = tmp_path / "bomb.csv.gz"
    p.write_bytes(member * (6_000_000 // len(member) + 1))  # about 6 MB inflating to about 6 GB
    assert 6_000_000 < p.stat().st_size < 6_200_000
    with pytest.raises(LoadError, match="inflates past") as exc:
        load_table(p)
    assert exc.value.path == str(p)


def test_wide_tables_load_in_work_linear_in_their_columns(tmp_path):
    import cProfile
    import pstats

    def calls(n_cols: int) -> int:
        """Python function calls made to load a 3-row table of ``n_cols`` extra columns (deterministic,
        unlike a clock on a shared machine)."""
        names = ["step", "start_s", "end_s"] + [f"c{i}" for i in range(n_cols)]
        rows = [",".join(names)] + [",".join([str(s), str(s), str(s + 1)] + ["1.5"] * n_cols) for s in range(3)]
        p = write_table(tmp_path, "\n".join(rows) + "\n", f"wide{n_cols}.csv")
        prof = cProfile.Profile()
        run = prof.runcall(load_table, p)
        assert run.steps.shape == (3, 5 + n_cols)
        return pstats.Stats(prof).total_calls

    # 4x the columns: about 4x the calls when the work per column is constant, 16x when quadratic
    # (a per-column scan of all columns took 18 s for 4,000 columns once)
    assert calls(8000) / calls(2000) < 6


@pytest.mark.parametrize("char", ["[", "0", " ", "{", "|", ",", '"', "-"])
def test_an_80_kb_line_of_one_character_is_quick(tmp_path, char):
    from _timing import explain, growth, linear_bound

    forms = {"t.csv": ("step,start_s,end_s\n", "{s},{s},{e}\n"),
             "t.jsonl": ("", '{{"step": {s}, "start_s": {s}, "end_s": {e}}}\n')}
    for name, (header, row) in forms.items():
        runs = {}

        def load(n: int, name: str = name, header: str = header, row: str = row, runs: dict = runs):
            (tmp_path / str(n)).mkdir(exist_ok=True)
            p = write_table(tmp_path / str(n),
                            header + row.format(s=1, e=2) + char * n + "\n" + row.format(s=2, e=3), name)

            def work():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LoadWarning)
                    runs[n] = load_table(p)
            return work

        # a line of 30 KB and of 120 KB: under the CSV reader's field limit (128 KiB),
        # past which a row is refused unread
        ratio = growth(load, 30_000)
        assert ratio < linear_bound(), (name, explain(ratio))
        for run in runs.values():
            assert run.steps["step"].tolist() == [1, 2]
            # a line of spaces (or, in a CSV, of empty fields) holds no record; any other is one bad record
            blank = char == " " or (char == "," and name == "t.csv")
            assert run.meta.report.total_skipped == (0 if blank else 1), name
        # both sizes take the same path
        assert runs[30_000].meta.report.skipped.keys() == runs[120_000].meta.report.skipped.keys()


def _loads_or_refuses(path, **kw) -> str:
    import warnings

    from mfu_toolkit.io.base import InternalLoadError
    from mfu_toolkit.run import Run, SchemaError

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            run = load_run(path, format="table", **kw)
        except InternalLoadError as exc:
            pytest.fail(f"{path}: internal error: {exc}")
        except (LoadError, SchemaError):
            return "refused"
    assert isinstance(run, Run)
    return "run"


def test_seeded_mutations_load_or_fail_cleanly(tmp_path):
    """Truncation, byte flips, NaN/inf/huge numbers, NUL, CRLF/CR, BOM, non-UTF-8, an 80 KB line
    and gzip damage, of a CSV, its gzip, a JSON-lines and a Parquet sample."""
    import gzip
    import random

    from _corpus import mutations

    csv_text = "step,start_s,end_s,rank,loss,data_wait_s\n" + "".join(
        f"{s},{s}.0,{s}.9,{r},{2.0 - s / 10},0.01\n" for s in range(1, 6) for r in range(2))
    jsonl = "".join(json.dumps({"step": s, "start_s": s, "end_s": s + 0.9, "rank": 0, "loss": 1.0}) + "\n"
                    for s in range(5))
    pq_path = tmp_path / "src.parquet"
    pd.read_csv(write_table(tmp_path, csv_text, "src.csv")).to_parquet(pq_path)
    sources = {"t.csv": csv_text.encode(), "t.csv.gz": gzip.compress(csv_text.encode()), "t.jsonl": jsonl.encode(),
               "t.parquet": pq_path.read_bytes()}
    outcomes = []
    for name, data in sources.items():
        rng = random.Random(name)  # the same corpus every run
        for kind, body in mutations(data, rng):
            p = tmp_path / kind / name
            p.parent.mkdir(exist_ok=True)
            p.write_bytes(body)
            outcomes.append(_loads_or_refuses(p))
            outcomes.append(_loads_or_refuses(p, time_unit="h", strict=True))
    assert "run" in outcomes and "refused" in outcomes


def test_flag_column_is_kept_as_text_and_steers_the_window(tmp_path):
    from mfu_toolkit.analysis import account

    # by hand: the window is steps 1, 2, 4, 5 (2 s each; 0 and 3 flagged), the ideal step 2 s;
    # the outlier's 7 − 2 = 5 s is stall, the compile step's 10 − 2 = 8 s jitter; wall 25 s
    text = ("step,start_s,end_s,flag\n0,0,10,compile\n1,10,12,\n2,12,14,\"  \"\n3,14,21, outlier \n"
            "4,21,23,\n5,23,25,\n")
    run = load_table(write_table(tmp_path, text, "flags.csv"), model_flops_per_step=1.0, n_accelerators=1,
                     peak_flops_per_accelerator=1.0)
    assert list(run.steps["flag"]) == ["compile", "", "", "outlier", "", ""]
    assert not run.meta.report.skipped and not run.meta.report.notes  # not "holds no numbers; left out"
    acc = account(run)
    assert list(acc.window.steps["in_window"]) == [False, True, True, False, True, True]
    assert acc.seconds["stall"] == pytest.approx(5.0, abs=1e-12)
    assert acc.seconds["jitter"] == pytest.approx(8.0, abs=1e-12)
    # the same file without its flag column: the outlier is in the window, no stall
    plain = load_table(write_table(tmp_path, "\n".join(r.rsplit(",", 1)[0] for r in text.splitlines()) + "\n",
                                   "plain.csv"), model_flops_per_step=1.0, n_accelerators=1,
                       peak_flops_per_accelerator=1.0)
    assert "flag" not in plain.steps.columns and account(plain).seconds["stall"] == 0.0


def test_flag_column_mapped_and_typed_values(tmp_path):
    # a mapped column; JSON true is "flagged", false, 0 and null none, a number its text, a
    # nested value counted at its line and left empty (the row stays)
    recs = [{"step": 0, "start_s": 0, "end_s": 1, "note": True}, {"step": 1, "start_s": 1, "end_s": 2, "note": False},
            {"step": 2, "start_s": 2, "end_s": 3, "note": 0}, {"step": 3, "start_s": 3, "end_s": 4, "note": None},
            {"step": 4, "start_s": 4, "end_s": 5, "note": 2}, {"step": 5, "start_s": 5, "end_s": 6, "note": ["x"]},
            {"step": 6, "start_s": 6, "end_s": 7, "note": "async_dispatch"}]
    path = write_table(tmp_path, "".join(json.dumps(r) + "\n" for r in recs), "flags.jsonl")
    with pytest.warns(LoadWarning, match="flag is not text"):
        run = load_table(path, columns={"flag": "note"})
    assert list(run.steps["flag"]) == ["flagged", "", "", "", "2", "", "async_dispatch"]
    rep = run.meta.report
    assert rep.first_lines["flag is not text (left empty, record kept)"] == [6] and rep.rows_kept == 7
    assert rep.examples["flag is not text (left empty, record kept)"].startswith("'note': ")
    with pytest.raises(LoadError, match="line 6"):
        load_table(path, columns={"flag": "note"}, strict=True)
