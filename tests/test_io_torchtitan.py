"""torchtitan stdout loader: prefixes, colours, duplicates, field drift, bad lines, real logs."""

from __future__ import annotations

import math
import re
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import torchtitan
from mfu_toolkit.io._common import read_head
from mfu_toolkit.run import LoadError, LoadWarning

ESC = "\x1b"


def line(step: int, t: str, *, prefix: str = "", tps: str = "tps: 10,000", mfu: str = "mfu: 40.00%", loss: float = 3.0) -> str:
    return (
        f"{prefix}[titan] 2025-01-01 00:00:{t} - root - INFO - {ESC}[31mstep: {step:2d}{ESC}[39m  "
        f"loss: {loss:.4f}  memory: 10.00GiB(12.50%)  {tps}  tflops: 300.00  {mfu}\n"
    )


def write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def load_quiet(p: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return torchtitan.load(p, **kw)


def test_prefixed_ranks_keep_their_rows_and_intervals_are_shared(tmp_path):
    text = "[rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - Training starts at step 1.\n"
    text += "[rank1]:[titan] 2025-01-01 00:00:00,000 - root - INFO - Training starts at step 1.\n"
    text += line(1, "02,000", prefix="[rank0]:") + line(1, "02,500", prefix="[rank1]:")
    text += line(11, "12,000", prefix="[rank0]:", tps="wps: 12,000") + line(11, "12,500", prefix="[rank1]:")
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert run.meta.timing == "interval_mean"
    assert sorted(s["rank"].unique()) == [0, 1]
    r0 = s[s["rank"] == 0].sort_values("step")
    assert r0["step"].tolist() == list(range(1, 12))
    # step 1: from "Training starts" (0 s) to its line (2 s); steps 2..11 share 10 s.
    assert r0["start_s"].iloc[0] == pytest.approx(0.0) and r0["end_s"].iloc[0] == pytest.approx(2.0)
    assert np.diff(r0["end_s"].to_numpy()[1:]) == pytest.approx(np.full(9, 1.0))
    assert r0["end_s"].iloc[-1] == pytest.approx(12.0)
    assert r0["interval_steps"].iloc[-1] == 10 and r0["interval_known"].all()
    # wps (older name) read as tps; rates repeated over the interval, loss only on logged steps.
    assert r0["tps"].iloc[5] == 12000.0 and r0["mfu_pct"].iloc[5] == 40.0
    assert math.isnan(r0["loss"].iloc[5]) and r0["loss"].iloc[-1] == 3.0
    assert r0["memory_gib"].iloc[-1] == 10.0 and r0["memory_pct"].iloc[-1] == 12.5
    assert run.meta.extra["field_aliases"] == ["wps->tps"]
    assert run.meta.report.total_skipped == 0


def test_unprefixed_copies_collapse_into_one_job_level_row(tmp_path):
    text = "".join(line(s, f"{s:02d},000") for s in (5, 6, 7) for _ in range(4))
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert s["step"].tolist() == [5, 6, 7]
    assert (s["rank"] == -1).all()
    assert s["n_reports"].tolist() == [4, 4, 4]
    assert run.meta.extra["max_copies_per_step"] == 4
    assert any("duplicate step lines collapsed" in n for n in run.meta.report.notes)
    # First logged step: no start in the log -> zero-width, flagged; never a guessed duration.
    assert s["start_s"].iloc[0] == s["end_s"].iloc[0] and not s["interval_known"].iloc[0]
    assert (s["end_s"] - s["start_s"]).iloc[1:].tolist() == pytest.approx([1.0, 1.0])


def test_srun_label_prefix_and_mfu_not_available(tmp_path):
    text = line(1, "01,000", prefix="0: ", mfu="mfu: N/A") + line(1, "01,000", prefix="1: ", mfu="mfu: N/A")
    text += line(2, "02,000", prefix="0: ", mfu="mfu: N/A") + line(2, "02,100", prefix="1: ", mfu="mfu: N/A")
    run = torchtitan.load(write(tmp_path, text))
    assert sorted(run.steps["rank"].unique()) == [0, 1]
    assert run.steps["mfu_pct"].isna().all()  # withheld by torchtitan, kept missing
    assert run.steps["tflops"].notna().all()


def test_step_going_back_opens_a_new_attempt(tmp_path):
    text = line(1, "01,000") + line(2, "02,000") + line(3, "03,000")
    text += line(2, "50,000") + line(3, "51,000")  # relaunched 47 s after step 3
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert run.n_attempts == 2
    assert s.loc[s["attempt"] == 1, "step"].tolist() == [2, 3]
    # The first step of the new attempt has no start in the log: zero-width.
    first = s[(s["attempt"] == 1) & (s["step"] == 2)].iloc[0]
    assert first["start_s"] == first["end_s"] == pytest.approx(49.0)


def test_half_written_last_line_is_counted_or_raised(tmp_path):
    text = line(1, "01,000") + line(2, "02,000")
    text += "[titan] 2025-01-01 00:00:03,000 - root - INFO - step:  3  loss: 2.9"  # no newline
    p = write(tmp_path, text)
    with pytest.warns(LoadWarning) as rec:
        run = torchtitan.load(p)
    assert len([w for w in rec if issubclass(w.category, LoadWarning)]) == 1
    assert run.steps["step"].tolist() == [1, 2]
    assert run.meta.report.skipped == {"half-written last line": 1}
    assert run.meta.report.first_lines["half-written last line"] == [3]
    with pytest.raises(LoadError) as exc:
        torchtitan.load(p, strict=True)
    assert exc.value.line == 3 and "train.log" in str(exc.value)


def test_non_monotonic_time_and_bad_values_are_skipped_with_lines(tmp_path):
    text = line(1, "05,000") + line(2, "04,000") + line(3, "06,000")
    text += line(4, "07,000", tps="tps: lots")
    p = write(tmp_path, text)
    run = load_quiet(p)
    rep = run.meta.report
    assert rep.skipped == {"non-monotonic timestamp": 1, "unparseable field value": 1}
    assert rep.first_lines["non-monotonic timestamp"] == [2]
    assert rep.first_lines["unparseable field value"] == [4]
    assert run.steps["step"].tolist() == [1, 2, 3]  # step 2 is covered by step 3's interval
    with pytest.raises(LoadError) as exc:
        torchtitan.load(p, strict=True)
    assert exc.value.line == 2 and exc.value.field == "timestamp"


def test_empty_garbage_and_directory_inputs_raise_load_error(tmp_path):
    with pytest.raises(LoadError, match="no torchtitan step lines"):
        torchtitan.load(write(tmp_path, "", "empty.log"))
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(LoadError, match="no torchtitan step lines"):
        torchtitan.load(garbage)
    with pytest.raises(LoadError):
        torchtitan.load(tmp_path)


def test_sniff_by_content_never_raises(tmp_path):
    p = write(tmp_path, line(1, "01,000"), "x.txt")
    assert torchtitan.sniff(p, read_head(p)) >= 0.9
    assert torchtitan.sniff(tmp_path, b"") == 0.0
    assert torchtitan.sniff(p, b"iteration 10/ 100 | elapsed time per iteration (ms): 5.0") == 0.0
    assert torchtitan.sniff(Path("/does/not/exist"), b"\xff\x00step:") == 0.0


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        try:
            load_quiet(p)
        except LoadError:
            pass


# --- real logs --------------------------------------------------------------------------------
_STEP = re.compile(r"step:\s*(\d+)")


def _raw_steps(p: Path) -> list[tuple[str, int]]:
    out = []
    for ln in p.read_text().splitlines():
        m = _STEP.search(ln)
        if m:
            pre = re.match(r"\[rank(\d+)\]:", ln)
            out.append((pre.group(1) if pre else "", int(m.group(1))))
    return out


@pytest.mark.realdata
def test_real_logs_load_with_auto_detection_and_match_the_raw_lines():
    from mfu_toolkit.io import load_run

    folder = realdata_dir("torchtitan")
    files = sorted(folder.glob("*.log"))
    assert len(files) == 3
    for p in files:
        run = load_run(p)
        assert run.meta.source_format == "torchtitan"
        raw = _raw_steps(p)
        # One row per (rank, step): duplicates printed by several ranks are not double counted.
        assert len(run.steps) == len(set(raw))
        assert sorted(run.steps["step"].unique()) == sorted({s for _, s in raw})
        prefixed = all(r for r, _ in raw)
        assert set(run.steps["rank"]) == ({int(r) for r, _ in raw} if prefixed else {-1})
        copies = Counter(raw)
        assert run.steps["n_reports"].tolist() == [copies[(r if prefixed else "", s)] for r, s in zip(
            [str(x) if prefixed else "" for x in run.steps["rank"]], run.steps["step"], strict=True)]
        # Field values as printed, on the logged rows (first copy for collapsed duplicates).
        first = {}
        for ln in p.read_text().splitlines():
            m = _STEP.search(ln)
            if m and int(m.group(1)) not in first:
                first[int(m.group(1))] = ln
        for _, row in run.steps.iterrows():
            ln = first[int(row["step"])]
            tps = float(re.search(r"tps:\s*([\d,]+)", ln).group(1).replace(",", ""))
            mfu = float(re.search(r"mfu:\s*([\d.]+)%", ln).group(1))
            assert row["tps"] == tps and row["mfu_pct"] == mfu
        # Wall time: last timestamp minus first, to the millisecond.
        stamps = re.findall(r"\d{2}:(\d{2}):(\d{2}),(\d{3})", p.read_text())
        secs = [int(m) * 60 + int(s) + int(ms) / 1000 for m, s, ms in stamps]
        assert run.wall_seconds == pytest.approx(max(secs) - min(secs), abs=1e-6)


def test_caller_states_what_the_log_does_not_carry(tmp_path):
    p = write(tmp_path, line(1, "01,000") + line(2, "02,000"))
    run = torchtitan.load(p, name="llama-8b", n_accelerators=8, global_batch=64.0)
    assert (run.meta.name, run.meta.n_accelerators, run.meta.global_batch) == ("llama-8b", 8, 64.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        torchtitan.load(p, not_a_field=1)
