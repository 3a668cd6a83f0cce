"""Megatron-LM stdout logs: synthetic cases, then the real files (the CI golden-values JSON: test_io_megatron_json.py)."""

from __future__ import annotations

import re

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
        "unknown time unit 'fortnights' in elapsed time per iteration": [2],
        "time is missing, NaN or infinite (elapsed time per iteration)": [3],
        "negative duration (elapsed time per iteration)": [4],
        "non-monotonic timestamp (earlier than the previous iteration line)": [5],
        "required field missing (elapsed time per iteration; truncated?)": [8],
    }


def test_strict_raises_with_line_and_field(tmp_path):
    lines = [megatron_line(1, 1000.0), megatron_line(2, 1000.0).replace("1000.0", "nan")]
    p = write_megatron(tmp_path, lines=lines)
    with pytest.raises(LoadError) as info:
        megatron.load(p, strict=True)
    assert info.value.line == 2 and info.value.field == "elapsed time per iteration (ms)"
    assert str(p) in str(info.value)


def test_straggler_and_memory_lines_are_tables(tmp_path):
    lines = [
        "0: INFO:megatron.core.utils:[2024-03-14 23:07:56] | MnRtt/Rnk: 3453.08ms/8 | MxRtt/Rnk: 3468.20ms/0 | MnUtl/Rnk: 97%/8 | MxUtl/Rnk: 100%/6",
        "[Rank 1] (after 1 iterations) memory (MB) | allocated: 100.5 | max allocated: 200.0 | reserved: 300.0 | max reserved: 300.0",
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
    stamps = re.findall(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\] iteration", path.read_text())
    from datetime import datetime

    secs = [datetime.fromisoformat(s).timestamp() for s in stamps]
    run = load_run(path)
    ends = run.steps["end_s"].tolist()
    assert [e - ends[0] for e in ends] == pytest.approx([s - secs[0] for s in secs])
    its = [int(x) for x in re.findall(r"iteration\s+(\d+)/", path.read_text())]
    missing = sum(b - a - 1 for a, b in zip(its, its[1:], strict=False))
    assert f"{missing} iterations between logged lines are not in the log (an excerpt, or lost lines)" in run.meta.report.notes
    assert run.meta.global_batch == float(re.search(r"global batch size:\s+(\d+)", path.read_text()).group(1))


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
