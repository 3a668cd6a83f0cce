"""Megatron-LM stdout logs: synthetic cases, then the real files \
(the CI golden-values JSON: test_io_megatron_json.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import megatron_line, write_megatron

from mfu_toolkit.io import load_run, megatron
from mfu_toolkit.run import LoadError, LoadWarning


# --- stdout: synthetic ----------------------------------------------------------------------------
def test_timestamped_interval_means(tmp_path):
    run = load_run(write_megatron(tmp_path))
    m = run.meta
    assert (m.source_format, m.timing, m.time_unit) == ("megatron", "interval_mean", "ms")
    assert m.extra["log_interval"] == 10
    s = run.steps
    assert len(s) == 30 and s["step"].tolist() == list(range(1, 31))
    assert (s["interval_steps"] == 10).all() and s["logged"].sum() == 3
    assert s.loc[s["logged"], "step"].tolist() == [10, 20, 30]
    assert (s["end_s"] - s["start_s"]).round(9).eq(1.0).all()
    # interval ends at the line's timestamp: 02:00:15 is 15 s after the first datetime line
    assert s.loc[s["step"] == 10, "end_s"].item() == 15.0
    assert s.loc[s["step"] == 1, "start_s"].item() == 5.0
    assert s.loc[s["logged"], "loss"].notna().all() and s.loc[~s["logged"], "loss"].isna().all()
    assert (s["samples"] == 16).all() and m.global_batch == 16.0


def test_init_and_checkpoint_events(tmp_path):
    run = load_run(write_megatron(tmp_path))
    ev = run.events.set_index("kind")
    assert (ev.loc["init", "start_s"], ev.loc["init", "end_s"]) == (0.0, 5.0)
    # step 20 ends at 25 s; step 21 starts at 37 - 10 = 27 s: the save fills the gap
    assert (ev.loc["checkpoint_save", "start_s"], ev.loc["checkpoint_save", "end_s"]) == (25.0, 27.0)
    assert "gap to the next logged step" in ev.loc["checkpoint_save", "detail"]


def test_checkpoint_timer_gives_the_duration(tmp_path):
    lines = [
        megatron_line(1, 1000.0),
        "saving checkpoint at iteration       1 to /ckpt",
        "(min, max) time across ranks (ms):",
        "    save-checkpoint ................................: (2500.00, 2600.00)",
        "  successfully saved checkpoint from iteration       1 to /ckpt",
        megatron_line(2, 1000.0),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines))
    save = run.events[run.events["kind"] == "checkpoint_save"].iloc[0]
    assert (save["start_s"], save["end_s"]) == (1.0, 3.6)
    # without timestamps, the next step is placed after the save
    assert run.steps.loc[run.steps["step"] == 2, "start_s"].item() == pytest.approx(3.6)


def test_old_format_without_timestamps_is_back_to_back(tmp_path):
    lines = [megatron_line(i, 2000.0 + i) for i in (5, 6, 7)]
    run = load_run(write_megatron(tmp_path, lines=lines))
    s = run.steps
    assert s["start_s"].tolist() == [0.0, 2.005, 4.011]
    assert run.meta.timing == "duration_only"
    assert any("no timestamps" in n for n in run.meta.report.notes)


def test_skipped_and_nan_iterations_are_counted(tmp_path):
    lines = [megatron_line(1, 1000.0), megatron_line(2, 1000.0, skipped=1), megatron_line(3, 1000.0, nan=1)]
    run = load_run(write_megatron(tmp_path, lines=lines))
    assert len(run.steps) == 3  # they took time: kept
    assert run.steps["skipped_iterations"].tolist() == [0, 1, 0]
    assert "Megatron reported 1 skipped and 1 nan iterations; kept as steps (they took time)" in run.meta.report.notes


def test_restart_opens_a_new_attempt(tmp_path):
    lines = [
        megatron_line(1, 1000.0, ts="2024-01-01 00:00:01"),
        megatron_line(2, 1000.0, ts="2024-01-01 00:00:02"),
        megatron_line(3, 1000.0, ts="2024-01-01 00:00:03"),
        "------------------------ arguments ------------------------",
        "  successfully loaded checkpoint from /ckpt [ t 1/1, p 1/1 ] at iteration 2",
        megatron_line(3, 1000.0, ts="2024-01-01 00:01:00"),
        megatron_line(4, 1000.0, ts="2024-01-01 00:01:01"),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines))
    assert run.n_attempts == 2
    assert run.steps.groupby("attempt")["step"].apply(list).tolist() == [[1, 2, 3], [3, 4]]
    assert run.meta.extra["resumed_from_iterations"] == [2]


def test_iteration_number_going_back_is_a_restart(tmp_path):
    lines = [megatron_line(i, 1000.0) for i in (1, 2, 3, 2, 3)]
    run = load_run(write_megatron(tmp_path, lines=lines))
    assert run.n_attempts == 2


def test_malformed_lines_are_skipped_and_counted(tmp_path):
    lines = [
        megatron_line(1, 1000.0, ts="2024-01-01 00:00:01"),  # 1
        megatron_line(2, 1000.0, ts="2024-01-01 00:00:02").replace("(ms)", "(fortnights)"),  # 2 unknown unit
        megatron_line(3, 1000.0, ts="2024-01-01 00:00:03").replace("1000.0", "nan"),  # 3 NaN
        megatron_line(4, 1000.0, ts="2024-01-01 00:00:04").replace("1000.0", "-5.0"),  # 4 negative
        megatron_line(5, 1000.0, ts="2023-12-31 23:00:00"),  # 5 time goes back an hour
        "\x00\x01\x02\x03 binary garbage \xff",  # 6 (not an iteration line: ignored, noted)
        megatron_line(6, 1000.0, ts="2024-01-01 00:00:06"),  # 7
        " [2024-01-01 00:00:07] iteration        7/     100 | consumed samples:          112 | elapsed ti",  # 8
    ]
    with pytest.warns(LoadWarning) as caught:
        run = load_run(write_megatron(tmp_path, lines=lines), log_interval=1)
    assert sum(w.category is LoadWarning for w in caught) == 1
    assert run.steps["step"].tolist() == [1, 6]
    assert run.meta.report.first_lines == {
        "unknown time unit": [2],
        "time is missing, NaN or infinite": [3],
        "negative duration": [4],
        "non-monotonic timestamp": [5],
        "required field missing": [8],
    }
    examples = run.meta.report.examples  # the detail opens each reason's example
    assert examples["unknown time unit"].startswith("'fortnights' in elapsed time per iteration: ")
    assert examples["time is missing, NaN or infinite"].startswith("elapsed time per iteration: ")
    assert examples["non-monotonic timestamp"].startswith("earlier than the previous iteration line: ")
    assert examples["required field missing"].startswith("elapsed time per iteration; truncated?: ")


def test_strict_raises_with_line_and_field(tmp_path):
    lines = [megatron_line(1, 1000.0), megatron_line(2, 1000.0).replace("1000.0", "nan")]
    p = write_megatron(tmp_path, lines=lines)
    with pytest.raises(LoadError) as info:
        megatron.load(p, strict=True)
    assert info.value.line == 2 and info.value.field == "elapsed time per iteration (ms)"
    assert str(p) in str(info.value)


def test_straggler_and_memory_lines_are_tables(tmp_path):
    lines = [
        "0: INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | "
        "MnUtl/Rnk: 97%/8 | MxUtl/Rnk: 100%/6",
        "[Rank 1] (after 1 iterations) memory (MB) | allocated: 100.5 | max allocated: 200.0 | reserved: 300.0 | "
        "max reserved: 300.0",
        megatron_line(1, 1000.0, ts="2024-03-14 23:08:00"),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines))
    st = run.tables["straggler"].set_index("metric")
    assert st.loc["Rtt", ["min", "min_rank", "max", "max_rank"]].tolist() == [3453.08, 8, 3468.2, 0]
    assert st.loc["Utl", "unit"] == "%" and st.loc["Rtt", "time_s"] == 0.0
    assert run.tables["memory"].loc[0, "max_allocated_mb"] == 200.0


def test_no_iteration_lines_is_an_error(tmp_path):
    with pytest.raises(LoadError, match="no Megatron iteration lines"):
        megatron.load(write_megatron(tmp_path, lines=["hello", "world"]))


def test_repeated_lines_from_several_ranks_are_counted_duplicates(tmp_path):
    line = megatron_line(1, 1000.0)
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=[line, line, megatron_line(2, 1000.0)]))
    assert len(run.steps) == 2
    # The copy on line 2 gave no row: it is in the skip counts, not only in a note.
    assert run.meta.report.first_lines == {"duplicate record (kept the first)": [2]}


# --- real files -------------------------------------------------------------------------------------
_ITER = re.compile(r"iteration\s+(\d+)\s*/\s*\d+\s*\|.*elapsed time per iteration \(ms\):\s*([0-9.]+)")


def test_real_stdout_logs(realdata):  # noqa: F811
    for path in files(realdata / "megatron", "*.log"):
        found = [(int(a), float(b)) for a, b in _ITER.findall(path.read_text())]
        run = load_run(path)
        assert run.meta.source_format == "megatron"
        logged = run.steps[run.steps["logged"]] if len(run.steps) else run.steps
        assert len(logged) == len(found), path.name  # one logged row per iteration line
        assert logged["step"].tolist() == [it for it, _ in found]
        # ms -> s
        assert (logged["end_s"] - logged["start_s"]).tolist() == pytest.approx([ms / 1000 for _, ms in found])


def test_real_timestamped_log_places_steps_at_their_timestamps(realdata):  # noqa: F811
    path = realdata / "megatron" / "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log"
    text = path.read_text()
    stamps = re.findall(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] iteration", text)
    durations = [float(x) / 1000 for x in re.findall(r"elapsed time per iteration \(ms\): ([0-9.]+)", text)]
    from datetime import datetime

    secs = [datetime.fromisoformat(s).timestamp() - datetime.fromisoformat(stamps[0]).timestamp() for s in stamps]
    # each end = max(timestamp, previous end + duration), by hand from the raw lines
    want = [secs[0]]
    for t, d in zip(secs[1:], durations[1:], strict=True):
        want.append(max(t, want[-1] + d))
    run = load_run(path)
    ends = run.steps["end_s"].tolist()
    assert [e - ends[0] for e in ends] == pytest.approx(want)
    # steps 3 and 44 end later than their whole-second stamps (02:55:50 is 5 s after 02:55:45, step 3 took 5.4106 s)
    assert [round(e - ends[0] - t, 4) for e, t in zip(ends, secs, strict=True)] == [0.0, 0.4106, 0.0, 0.5338, 0.2524]
    its = [int(x) for x in re.findall(r"iteration\s+(\d+)/", path.read_text())]
    missing = sum(b - a - 1 for a, b in zip(its, its[1:], strict=False))
    assert (f"{missing} iterations between logged lines are not in the log (an excerpt, or lost lines)"
            in run.meta.report.notes)
    assert run.meta.global_batch == float(re.search(r"global batch size:\s+(\d+)", path.read_text()).group(1))


def test_real_mixtral_steps_never_overlap_and_keep_their_durations(realdata):  # noqa: F811
    # before: step 3 started 0.41 s before step 2 ended (both anchored on whole-second timestamps),
    # so the window MFU came out above the ideal-step MFU
    path = realdata / "megatron" / "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log"
    text = path.read_text()
    logged = [(int(it), float(ms)) for it, ms in re.findall(
        r"iteration\s+(\d+)/\s*\d+ \|.*?elapsed time per iteration \(ms\): ([0-9.]+)", text)]
    assert logged[:2] == [(2, 5630.1), (3, 5410.6)]
    s = load_run(path).steps
    assert s["step"].tolist() == [it for it, _ in logged]
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([ms / 1000 for _, ms in logged])
    assert (s["start_s"].to_numpy()[1:] >= s["end_s"].to_numpy()[:-1] - 1e-9).all()
    assert s["start_s"].iloc[1] == pytest.approx(s["end_s"].iloc[0])  # step 3 starts where step 2 ends


def test_real_straggler_line(realdata):  # noqa: F811
    path = realdata / "megatron" / "NVIDIA-Megatron-LM_README_STRAGGLER_example.log"
    text = path.read_text()
    run = load_run(path)
    metrics = set(re.findall(r"M[nx]([A-Za-z]+)/Rnk", text))
    assert set(run.tables["straggler"]["metric"]) == metrics
    mn_rtt = re.search(r"MnRtt/Rnk: ([0-9.]+)ms/(\d+)", text)
    row = run.tables["straggler"].set_index("metric").loc["Rtt"]
    assert (row["min"], row["min_rank"]) == (float(mn_rtt.group(1)), int(mn_rtt.group(2)))


def test_checkpoint_at_an_unlogged_step_is_placed_after_it(tmp_path):
    lines = [
        megatron_line(10, 1000.0),
        "saving checkpoint at iteration      15 to /ckpt",
        "0: (min, max) time across ranks (ms):",
        "0:     save-checkpoint ................................: (1500.00, 2000.00)",
        megatron_line(20, 1000.0),
    ]
    run = load_run(write_megatron(tmp_path, lines=lines), log_interval=10)
    save = run.events[run.events["kind"] == "checkpoint_save"].iloc[0]
    step15 = run.steps.loc[run.steps["step"] == 15, "end_s"].item()
    assert (save["start_s"], save["end_s"]) == (step15, step15 + 2.0)
    assert "no 'successfully saved' line" in save["detail"]


# --- the loader shape -------------------------------------------------------------------------------
def test_megatron_is_a_format_module_with_options(tmp_path):
    from mfu_toolkit import hardware
    from mfu_toolkit.io.formats import megatron as fmt

    assert fmt.Options().log_interval is None and fmt.Options().clock_tolerance_s == 1.0
    p = write_megatron(tmp_path)
    run = load_run(p, log_interval=10, accelerator="H100")
    # the given name, as the peak registry resolves it
    assert run.meta.extra["log_interval"] == 10 and run.meta.accelerator == hardware.resolve("H100").name
    with pytest.raises(TypeError, match="log_interval"):  # an unknown keyword names the accepted ones
        load_run(p, log_intervall=10)


def test_megatron_reads_its_lines_through_one_table():
    from mfu_toolkit.io.formats import megatron as fmt
    from mfu_toolkit.io.lines import Line
    from mfu_toolkit.io.timers import TIMER_LINES

    assert all(isinstance(row, Line) for row in fmt.LINES)
    assert fmt.LINES[0].needle == "iteration"  # most lines of a log are iteration lines: tried first
    assert set(TIMER_LINES) <= set(fmt.LINES)  # the shared timer rows, before the rows that read ':' lines
    first_timer = fmt.LINES.index(TIMER_LINES[0])
    assert all(row.needle != ":" for row in fmt.LINES[:first_timer])


# --- bounded intervals --------------------------------------------------------------------------------
def test_two_lines_a_billion_steps_apart_are_two_rows(tmp_path):
    # The old loader took the billion-step gap as the log interval and built a row per step
    # (MemoryError at 2.6 GB). The gap is no log interval: each line stays one row, counted.
    lines = [megatron_line(1, 1000.0), megatron_line(1_000_000_001, 1000.0)]
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=lines), format="megatron")
    assert run.steps["step"].tolist() == [1, 1_000_000_001]
    assert (run.steps["interval_steps"] == 1).all()
    assert run.meta.report.first_lines == {
        "step gap too long to be one log interval (record kept as one step)": [2]}
    assert ("999999999 iterations between logged lines are not in the log (an excerpt, or lost lines)"
            in run.meta.report.notes)


def test_a_long_gap_among_short_ones_keeps_the_interval(tmp_path):
    # gaps 10, 10, then 200,000 (over rules.MAX_LOG_INTERVAL = 100,000): interval 10, the far line one row
    lines = [megatron_line(i, 1000.0) for i in (10, 20, 30, 200_030)]
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=lines))
    s = run.steps
    assert run.meta.extra["log_interval"] == 10
    assert len(s) == 31 and s["step"].iloc[-1] == 200_030 and s["interval_steps"].iloc[-1] == 1
    assert run.meta.report.first_lines == {
        "step gap too long to be one log interval (record kept as one step)": [4]}


def test_log_interval_too_large_or_not_a_count_is_a_load_error(tmp_path):
    p = write_megatron(tmp_path)
    for bad in (10**6, 0, -3, 2.5, "ten", True):
        with pytest.raises(LoadError) as info:
            load_run(p, log_interval=bad)
        assert info.value.field == "log_interval" and str(p) in str(info.value)
    with pytest.raises(LoadError, match="clock_tolerance_s"):
        load_run(p, clock_tolerance_s=float("nan"))


def test_intervals_beyond_the_row_budget_stay_one_row_per_line(tmp_path):
    # 600 lines at an interval of 100,000 would be 60,000,000 rows, over this load's budget of
    # rows it may invent (at least 2,000,000, else 2 per input byte; the file is about 180 KB):
    # one row per line, the steps it stands for in interval_steps, and a note saying so.
    lines = [megatron_line(i * 100_000, 1.0) for i in range(1, 601)]
    run = load_run(write_megatron(tmp_path, lines=lines), log_interval=100_000)
    s = run.steps
    assert len(s) == 600 and s["logged"].all() and (s["interval_steps"] == 100_000).all()
    assert s["step"].tolist() == [i * 100_000 for i in range(1, 601)]
    assert (s["end_s"] - s["start_s"]).tolist() == pytest.approx([0.001] * 600, abs=1e-9)  # the interval's last step
    assert s["start_s"].iloc[1] == pytest.approx(2 * 100_000 * 0.001 - 0.001)  # intervals still back to back
    assert any(n.startswith("log intervals not expanded: one row per logged record") for n in run.meta.report.notes)


# --- silent drops ------------------------------------------------------------------------------------
def test_a_damaged_step_number_is_counted(tmp_path):
    lines = [megatron_line(1, 1000.0), megatron_line(2, 1000.0).replace("iteration        2/", "iteration      1x2/"),
             megatron_line(3, 1000.0)]
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=lines), log_interval=1)
    assert run.steps["step"].tolist() == [1, 3]
    assert run.meta.report.first_lines == {"step is not a non-negative integer": [2]}
    with pytest.raises(LoadError) as info:
        load_run(write_megatron(tmp_path, lines=lines), log_interval=1, strict=True)
    assert (info.value.line, info.value.field) == (2, "iteration")


def test_huge_skipped_iteration_counts_are_no_internal_error(tmp_path):
    # 1e308 + 1e308 overflows to infinity; the old loader's int() of the total raised OverflowError
    lines = [megatron_line(i, 1000.0).replace("number of skipped iterations:   0",
                                              "number of skipped iterations: 1e308")
             for i in (1, 2)]
    run = load_run(write_megatron(tmp_path, lines=lines))
    assert "Megatron reported inf skipped and 0 nan iterations; kept as steps (they took time)" in run.meta.report.notes


def test_a_step_number_beyond_int64_is_counted(tmp_path):
    big = "9" * 30  # more digits than an int64 holds; never wrapped to a negative step
    lines = [megatron_line(1, 1000.0), megatron_line(2, 1000.0).replace("iteration        2/", f"iteration {big}/")]
    with pytest.warns(LoadWarning):
        run = load_run(write_megatron(tmp_path, lines=lines))
    assert run.steps["step"].tolist() == [1]
    assert run.meta.report.first_lines == {"step is not a non-negative integer": [2]}


def test_progress_bar_redraws_lose_no_line_and_count_none_twice(tmp_path):
    a = megatron_line(1, 1000.0, ts="2024-01-01 00:00:01")
    b = megatron_line(2, 1000.0, ts="2024-01-01 00:00:02")
    c = megatron_line(3, 1000.0, ts="2024-01-01 00:00:03")
    # 'b' shares a physical line with a bar drawn over it, 'c' is redrawn once after a '\r'.
    p = tmp_path / "train.log"
    p.write_bytes((a + "\n" + " 45%|####      |\r" + b + "\n" + c + "\r" + c + "\n").encode())
    with pytest.warns(LoadWarning):
        run = load_run(p)
    assert run.steps["step"].tolist() == [1, 2, 3]
    # the reader numbers the segments 1, 2, 3, 4, 5: the second copy of 'c' is segment 5
    assert run.meta.report.first_lines == {"duplicate record (kept the first)": [5]}


# --- linear on long lines and long logs -------------------------------------------------------------
_FILLERS = "[0 .:|="
_PREFIXES = ("", "iteration ", "iteration 5/", "MnA/Rnk:", "[x] datetime:", "x ...", "name ....: (", "save-checkpoint ")


def _best_of(fn, repeat: int = 3) -> float:
    import time

    best = float("inf")
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        best = min(best, time.process_time() - t0)
    return best


def _module_patterns() -> dict[str, re.Pattern]:
    """Every compiled pattern of the megatron format module, read from the module itself, and the regexes of
    its line table (the shared timer rows among them)."""
    found = {}
    for name, value in vars(megatron).items():
        if isinstance(value, re.Pattern):
            found[name] = value
        elif isinstance(value, dict):
            found.update({f"{name}[{k}]": v for k, v in value.items() if isinstance(v, re.Pattern)})
        elif isinstance(value, tuple):  # (name, pattern) pairs and the LINES rows
            found.update({f"{name}[{i}]": p for i, item in enumerate(value)
                          for p in (item if isinstance(item, tuple) else (getattr(item, "regex", None),))
                          if isinstance(p, re.Pattern)})
    return found


def test_every_pattern_is_linear_on_long_lines():
    # An 80 KB line of one repeated character (after each prefix a record line can start with)
    # must cost about twice a 40 KB one: a pattern that backtracks costs four times (or more)
    # and seconds (the old date pattern took 22 s on 80 KB of '['). The sums over all cases
    # keep the machine's noise out of the ratio.
    patterns = _module_patterns()
    assert len(patterns) >= 10  # the module's patterns were found
    totals = {}
    for n in (40_000, 80_000):
        cases = [(rx, (pre + ch * n + "\x01").encode() if isinstance(rx.pattern, bytes) else pre + ch * n + "\x01")
                 for rx in patterns.values() for pre in _PREFIXES for ch in _FILLERS]
        totals[n] = _best_of(lambda cases=cases: [rx.search(s) for rx, s in cases], 2)
    assert totals[80_000] < 3.0 * totals[40_000] + 0.05, totals


def _long_line_log(tmp_path, n: int) -> Path:
    lines = [megatron_line(1, 1000.0)]
    for ch in "[0 .:|":
        lines.append(ch * n)
        lines.append(" iteration 2/" + ch * n)
    lines.append(megatron_line(2, 1000.0))
    p = tmp_path / f"long_{n}.log"
    p.write_text("\n".join(lines) + "\n")
    return p


def test_a_log_of_long_lines_loads_in_linear_time(tmp_path):
    import warnings

    def load(p):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return load_run(p, format="megatron")

    small, large = _long_line_log(tmp_path, 40_000), _long_line_log(tmp_path, 80_000)
    assert load(large).steps["step"].tolist() == [1, 2]
    t_small, t_large = _best_of(lambda: load(small), 2), _best_of(lambda: load(large), 2)
    assert t_large < 3.0 * t_small + 0.2, (t_small, t_large)


def test_load_time_grows_linearly_with_the_number_of_steps(tmp_path):
    # The old loader built a full-length default list per row (40k / 80k / 160k steps took
    # 4.0 / 16.9 / 59.6 s). Eight times the lines must cost about eight times, not 64; the
    # bound (16) is twice the linear ratio, far below the old one. CPU time, best of two.
    def write(n: int) -> Path:
        p = tmp_path / f"steps_{n}.log"
        p.write_text("\n".join(megatron_line(i, 1000.0) for i in range(1, n + 1)) + "\n")
        return p

    small, large = write(5_000), write(40_000)
    assert len(load_run(large).steps) == 40_000
    t_small, t_large = _best_of(lambda: load_run(small), 2), _best_of(lambda: load_run(large), 2)
    assert t_large < 16 * t_small, (t_small, t_large)


# --- facts and claims ---------------------------------------------------------------------------------
_BANNER = [
    "using world size: 16, data-parallel-size: 2, context-parallel size: 1, tensor-model-parallel size: 4, "
    "pipeline-model-parallel size: 2 ",
    "------------------------ arguments ------------------------",
    "  bf16 ............................................ True",
    "  fp16 ............................................ False",
    "  fp8 ............................................. None",
    "  global_batch_size ............................... 64",
    "  micro_batch_size ................................ 2",
    "  params_dtype .................................... torch.bfloat16",
    "  pipeline_model_parallel_size .................... 2",
    "  seq_length ...................................... 4096",
    "  tensor_model_parallel_size ...................... 4",
    "  data_parallel_size .............................. 2",
    "  world_size ...................................... 16",
    "-------------------- end of arguments ---------------------",
]


def _tflops_line(it: int, tflops: float) -> str:
    return megatron_line(it, 1000.0, gbs=64).replace(
        "| learning rate:", f"| throughput per GPU (TFLOP/s/GPU): {tflops:.1f} | learning rate:")


def test_banner_facts_name_their_lines(tmp_path):
    p = write_megatron(tmp_path, lines=[*_BANNER, _tflops_line(1, 100.0), _tflops_line(2, 300.0),
                                        _tflops_line(3, 200.0)])
    run = load_run(p)
    facts = {f["name"]: f for f in run.meta.facts}
    # line numbers: the banner above, counted from 1
    expected = {
        "n_accelerators": (16, 1), "n_ranks": (16, 1), "parallelism": ({"tp": 4, "pp": 2, "dp": 2, "cp": 1}, 1),
        "global_batch": (64.0, 6), "micro_batch": (2, 7), "seq_len": (4096, 10), "dtype": ("bf16", 3),
        "framework": ("Megatron-LM", 15),
    }
    assert {k: (f["value"], int(f["where"].rsplit(":", 1)[1])) for k, f in facts.items()} == expected
    assert all(f["where"].startswith(f"{p}:") and f["source"] == "stated" for f in facts.values())
    assert facts["dtype"]["text"] == "bf16 ............................................ True"
    assert (run.meta.n_accelerators, run.meta.global_batch, run.meta.seq_len) == (16, 64.0, 4096)
    (claim,) = run.meta.claims
    # median of 100, 300, 200
    assert ((claim["metric"], claim["value"], claim["n"], claim["statistic"])
            == ("tflops_per_accelerator", 200.0, 3, "median"))
    assert claim["unit"] == "TFLOP/s per GPU" and "Megatron's own formula" in claim["counts"]
    assert claim["where"] == f"{p}:15"


def test_fp8_wins_over_bf16_and_a_given_value_that_disagrees_is_noted(tmp_path):
    lines = [line.replace("fp8 ............................................. None",
                          "fp8 ............................................. hybrid") for line in _BANNER]
    p = write_megatron(tmp_path, lines=[*lines, megatron_line(1, 1000.0, gbs=64)])
    with pytest.warns(LoadWarning, match="conflict: n_accelerators given as 8"):
        run = load_run(p, n_accelerators=8)
    assert run.meta.fact("dtype")["value"] == "fp8" and run.meta.fact("dtype")["where"] == f"{p}:5"
    assert run.meta.n_accelerators == 8 and run.meta.fact("n_accelerators", source="stated")["value"] == 16


def test_values_that_differ_between_launches_are_noted_not_stated(tmp_path):
    lines = ["  world_size ...................................... 16", megatron_line(1, 1000.0),
             "------------------------ arguments ------------------------",
             "  world_size ...................................... 8", megatron_line(1, 1000.0)]
    run = load_run(write_megatron(tmp_path, lines=lines))
    assert run.meta.fact("n_accelerators") is None and run.n_attempts == 2
    assert ("the world size is printed with different values: 16 (line 1), 8 (line 4) (several launches?); "
            "not stated as a fact" in run.meta.report.notes)


def _line_no(text: str, pattern: str) -> tuple[int, re.Match]:
    m = re.search(pattern, text, re.M)
    assert m is not None, pattern
    return text[: m.start()].count("\n") + 1, m


def _median(values):
    import statistics

    return statistics.median(float(v) for v in values)


def test_real_mixtral_log_claims_its_throughput(realdata):  # noqa: F811
    path = realdata / "megatron" / "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log"
    text = path.read_text()
    printed = re.findall(r"throughput per GPU \(TFLOP/s/GPU\): ([0-9.]+)", text)
    assert min(map(float, printed)) == 228.4 and max(map(float, printed)) == 241.4
    claim = load_run(path).meta.claim("tflops_per_accelerator")
    first, _ = _line_no(text, r"throughput per GPU")
    assert (claim["value"], claim["n"]) == (pytest.approx(_median(printed)), len(printed))
    assert claim["where"] == f"{path}:{first}"
    assert load_run(path).meta.fact("framework")["value"] == "Megatron-LM"


def test_real_megatron_deepspeed_log_states_its_job(realdata):  # noqa: F811
    path = realdata / "deepspeed" / "HaibaraAiChan_megatron-deepspeed-moe-bak_gpt-0.125B-gpus-4-MoE-64.log"
    text = path.read_text()
    run = load_run(path)
    facts = {f["name"]: f for f in run.meta.facts}
    ln, m = _line_no(text, r"^using world size: (\d+), data-parallel-size: (\d+), tensor-model-parallel size: (\d+), "
                           r"pipeline-model-parallel size: (\d+)")
    _, ep = _line_no(text, r"^  moe_expert_parallel_size \.+ (\d+)$")
    assert (facts["n_accelerators"]["value"] == int(m.group(1)) == 4
            and facts["n_accelerators"]["where"] == f"{path}:{ln}")
    assert facts["parallelism"]["value"] == {"dp": int(m.group(2)), "tp": int(m.group(3)), "pp": int(m.group(4)),
                                             "ep": int(ep.group(1))}
    for fact, arg in (("global_batch", "global_batch_size"), ("micro_batch", "micro_batch_size"),
                      ("seq_len", "seq_length")):
        ln, m = _line_no(text, rf"^  {arg} \.+ (\d+)$")
        assert (facts[fact]["value"], facts[fact]["where"]) == (int(m.group(1)), f"{path}:{ln}"), fact
    ln, _ = _line_no(text, r"^  fp16 \.+ True$")
    assert (facts["dtype"]["value"], facts["dtype"]["where"]) == ("fp16", f"{path}:{ln}")
    fw = facts["framework"]
    assert fw["value"] == "Megatron-DeepSpeed" and "deepspeed" in fw["text"].lower()
    tflops = re.findall(r"\| TFLOPs: ([0-9.]+) \|", text)
    megatron_sps = re.findall(r"\| samples per second: ([0-9.]+) \|", text)
    ds_sps = re.findall(r"RunningAvgSamplesPerSec=([0-9.]+),", text)
    ds_curr = re.findall(r"CurrSamplesPerSec=([0-9.]+),", text)
    claims = run.meta.claims
    # TFLOPs, and samples/s counted three ways: Megatron-DeepSpeed's, DeepSpeed's current and running rates
    assert len(claims) == 4
    (tf,) = [c for c in claims if c["metric"] == "tflops_per_accelerator"]
    (mg,) = [c for c in claims if c["metric"] == "samples_per_s" and "Megatron-DeepSpeed prints" in c["counts"]]
    (ds,) = [c for c in claims if c["metric"] == "samples_per_s" and "running average" in c["counts"]]
    (cur,) = [c for c in claims if c["metric"] == "samples_per_s" and c["counts"].startswith("CurrSamplesPerSec")]
    assert ((tf["value"], tf["n"]) == (pytest.approx(_median(tflops)), len(tflops))
            and "throughput calculator" in tf["counts"])
    assert (mg["value"], mg["n"]) == (pytest.approx(_median(megatron_sps)), len(megatron_sps))
    assert (ds["value"], ds["n"], ds["statistic"]) == (float(ds_sps[-1]), len(ds_sps), "last")  # a running average
    assert (cur["value"], cur["n"]) == (pytest.approx(_median(ds_curr)), len(ds_curr))
    # the data README's remark: DeepSpeed's 28.4 against Megatron's 32.1 for the same first interval
    assert round(float(ds_sps[0]), 1) == 28.4 and round(float(megatron_sps[0]), 1) == 32.1


def test_real_alcf_logs_claim_both_flop_counts(realdata):  # noqa: F811
    path = realdata / "deepspeed" / "argonne-lcf_Megatron-DeepSpeed_deprecated_aurora_sunspot_polaris.md"
    text = path.read_text()
    run = load_run(path)
    for label, word in (("LM", "[LM]-TFLOPs"), ("DS", "[DS]-TFLOPs")):
        values = re.findall(rf"\[{label}\]-TFLOPs=([0-9.]+)", text)
        (claim,) = [c for c in run.meta.claims if c["counts"].startswith(word)]
        assert claim["metric"] == "tflops_per_accelerator" and claim["value"] == pytest.approx(_median(values))
    # Three launches on two machines: the world sizes differ, so none is stated
    sizes = {int(v) for v in re.findall(r"NGPUS[=:] (\d+)", text)}
    assert sizes == {24, 8} and run.meta.fact("n_accelerators") is None and run.n_attempts == 3
    assert any(n.startswith("the world size is printed with different values") for n in run.meta.report.notes)
    cool = realdata / "megatron_timers" / "argonne-lcf_Megatron-DeepSpeed_cooldown_aurora_3072xpu.md"
    ctext = cool.read_text()
    ln, m = _line_no(ctext, r"world_size = (\d+)")
    crun = load_run(cool)
    assert crun.meta.fact("n_accelerators")["value"] == int(m.group(1)) == 3072
    assert crun.meta.fact("n_accelerators")["where"] == f"{cool}:{ln}"
    tf = crun.meta.claim("tflops_per_accelerator")
    assert tf["value"] == pytest.approx(_median(re.findall(r"\| TFLOPs=([0-9.]+) \|", ctext)))


def test_real_readme_logs_claims_and_generic_fields(realdata):  # noqa: F811
    gpt3 = realdata / "megatron_timers" / "DeepLink-org_AIChipBenchmark_GPT3_README_megatron_deepspeed_tgs.md"
    text = gpt3.read_text()
    run = load_run(gpt3)
    tgs = re.findall(r"tokens per gpu per second \(tgs\): ([0-9.]+)", text)
    assert run.meta.claim("tokens_per_s_per_accelerator")["value"] == pytest.approx(_median(tgs))
    assert run.meta.fact("framework")["value"] == "Megatron-DeepSpeed"
    assert run.meta.fact("seq_len")["value"] == int(re.search(r"actual seqlen:\s+(\d+)", text).group(1))
    qwen = realdata / "megatron_timers" / "DeepLink-org_AIChipBenchmark_QwenVL_README_log_throughput.md"
    text = qwen.read_text()
    run = load_run(qwen)
    printed = [float(v) for v in re.findall(r"tokens/sec/gpu: ([0-9.]+) \|", text)]
    assert run.steps.loc[run.steps["logged"], "tokens_sec_gpu"].tolist() == printed  # '--log-throughput' field
    assert run.meta.claim("tokens_per_s_per_accelerator")["value"] == pytest.approx(_median(printed))


# --- damaged input: only the toolkit's own errors, and no silent drop ------------------------------------
_ANY_ITERATION = re.compile(r"iteration\s+\d+\s*/\s*\d+\s*\|")  # what counts as an iteration line here
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def _mutants(data: bytes, rng) -> list[tuple[str, bytes]]:
    lines = data.split(b"\n")
    out = [("truncated", data[: rng.randrange(1, len(data))]), ("bom", b"\xef\xbb\xbf" + data),
           ("crlf", data.replace(b"\n", b"\r\n")), ("cr", data.replace(b"\n", b"\r")),
           ("latin1", data.replace(b"iteration", "itération".encode("latin-1"), 3)),
           ("long line", data + b"[" * 80_000 + b"\n" + b"0" * 80_000 + b"\n")]
    for _ in range(12):
        b = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        out.append(("flips", bytes(b)))
    for _ in range(4):
        i = rng.randrange(len(lines))
        dup = lines[:i] + [lines[i]] * rng.randrange(2, 4) + lines[i:]
        shuffled = lines[:]
        rng.shuffle(shuffled)
        out += [("duplicated", b"\n".join(dup)), ("reordered", b"\n".join(shuffled))]
    for value in (b"nan", b"inf", b"-inf", b"1e308", b"-1", b"\x00", b"99999999999999999999999"):
        every = rng.randrange(1, 4)  # every first, second or third numeric value of the log
        count = iter(range(10**9))
        out.append((f"value {value!r}", re.sub(rb"(:\s*)([0-9][0-9.E+-]*)", lambda m, v=value, e=every, c=count:
                                               m.group(1) + (v if next(c) % e == 0 else m.group(2)), data)))
    out.append(("nul bytes", data.replace(b" | ", b" |\x00 ", 5)))
    return out


def _iteration_lines(data: bytes) -> list[int]:
    """Line numbers (as the reader counts them: \\r\\n, \\r, \\n) of lines that look like records."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    found = []
    for i, raw in enumerate(re.split(rb"\r\n|\r|\n", data), start=1):
        if _ANY_ITERATION.search(_ANSI.sub("", raw.decode("utf-8", errors="replace"))):
            found.append(i)
    return found


def test_mutated_logs_give_a_run_or_a_load_error_and_count_every_dropped_line(
        tmp_path, monkeypatch, realdata):  # noqa: F811
    import random
    import warnings

    from mfu_toolkit.io.base import InternalLoadError
    from mfu_toolkit.run import LoadReport, Run, SchemaError

    skipped_at: list[int] = []
    real_skip = LoadReport.skip

    def skip(self, reason, line=None, *args, **kwargs):  # every line, not only the first five
        if line is not None:
            skipped_at.append(int(line))
        return real_skip(self, reason, line, *args, **kwargs)

    monkeypatch.setattr(LoadReport, "skip", skip)
    sources = [(realdata / "megatron" / "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log").read_bytes(),
               write_megatron(tmp_path).read_bytes()]
    rng = random.Random(20240406)
    checked = 0
    for k, data in enumerate(sources):
        for n, (kind, mutant) in enumerate(_mutants(data, rng)):
            p = tmp_path / f"m{k}_{n}.log"
            p.write_bytes(mutant)
            skipped_at.clear()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    run = load_run(p, format="megatron")
            except InternalLoadError as exc:
                pytest.fail(f"{kind}: {exc}")
            except (LoadError, SchemaError):
                continue
            assert isinstance(run, Run)
            lines = _iteration_lines(mutant)
            logged = int(run.steps["logged"].sum()) if len(run.steps) else 0
            dropped_counted = len(set(lines) & set(skipped_at))
            # every line that looks like a record gave a row or is in the skip counts
            assert len(lines) <= logged + dropped_counted, (kind, lines, logged, sorted(set(skipped_at)))
            checked += 1
    assert checked > 40


# --- every real file this format reads -----------------------------------------------------------------
_ANY_RECORD = re.compile(r"iteration(?:\s+|=\s*)(\d+)\s*/\s*\d+\s*\|.*?"
                         r"elapsed[ _]time[ _]per[ _]iteration(?: \(ms\):|_ms=)\s*([0-9.]+)")


def _my_real_files(realdata):  # noqa: F811
    return [*files(realdata / "megatron", "*.log"), *files(realdata / "megatron_timers"),
            *files(realdata / "deepspeed", "HaibaraAiChan_*.log"),
            realdata / "deepspeed" / "argonne-lcf_Megatron-DeepSpeed_deprecated_aurora_sunspot_polaris.md"]


def test_every_real_file_gives_a_row_per_iteration_line(realdata):  # noqa: F811
    import warnings

    from mfu_toolkit.io.formats import megatron as fmt
    from mfu_toolkit.io.reading import read_head

    for path in _my_real_files(realdata):
        found = [(int(a), float(b)) for a, b in _ANY_RECORD.findall(path.read_text())]
        if found:  # Megatron iteration lines, in a log or quoted in a README: the sniffer is sure
            assert fmt.sniff(path, read_head(path)) >= 0.9, path.name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(path)
        assert run.meta.source_format == "megatron", path.name
        logged = run.steps[run.steps["logged"]] if len(run.steps) else run.steps
        assert logged["step"].tolist() == [it for it, _ in found], path.name
        assert (logged["end_s"] - logged["start_s"]).tolist() == pytest.approx(
            [ms / 1000 for _, ms in found]), path.name
        assert run.meta.report.skipped == {}, (path.name, run.meta.report.skipped)
