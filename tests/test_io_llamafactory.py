"""LLaMA-Factory trainer_log.jsonl: attempts from the elapsed_time reset, copies collapsed, claims, real logs.

The real-log numbers are computed here from the raw lines (json and plain arithmetic), not by the loader.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pytest
from _realdata import files, realdata  # noqa: F401

from mfu_toolkit.facts import LoaderArgumentError
from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.io.formats import llamafactory
from mfu_toolkit.run import LoadError, LoadWarning, save_run

RAMEY = "rameyjm7_SFT-Training-LLM_trainer_log.jsonl"
SYGOAT = "syGOAT_Mistral-v0.2-Translator-bf16_trainer_log.jsonl"


def hms(seconds: int) -> str:
    """Seconds as Python's str(timedelta) writes them (what LogCallback writes)."""
    days, rest = divmod(seconds, 86400)
    text = f"{rest // 3600}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"{days} day{'s' if days > 1 else ''}, {text}" if days else text


def seconds(text: str) -> int:
    days = 0
    if "day" in text:
        head, text = text.split(", ")
        days = int(head.split()[0])
    h, m, s = (int(x) for x in text.split(":"))
    return days * 86400 + h * 3600 + m * 60 + s


def line(step: int, t: int, total: int = 100, **kw) -> str:
    rec = {"current_steps": step, "total_steps": total, **kw, "epoch": round(step / total, 4),
           "percentage": round(step / total * 100, 2), "elapsed_time": hms(t), "remaining_time": "0:00:00"}
    return json.dumps(rec)


def write(folder: Path, lines: list[str], name: str = "trainer_log.jsonl") -> Path:
    p = Path(folder) / name
    p.write_text("\n".join(lines) + "\n")
    return p


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return llamafactory.load(p, **kw)


# --- made-up logs --------------------------------------------------------------------------------------------
def test_one_writer_v09_with_throughput_eval_and_final_line(tmp_path):
    lines = [line(s, 10 * s, loss=1.0, lr=1e-5, throughput=500.0 + s, total_tokens=1000 * s) for s in (10, 20)]
    lines.append(line(20, 230, eval_loss=0.9))  # evaluation at step 20, 30 s after the train line
    lines += [line(s, 10 * s + 30, loss=0.8, lr=1e-5, throughput=600.0, total_tokens=1000 * s) for s in (30, 40)]
    lines.append(line(40, 430))  # the final log: no loss, same step
    p = write(tmp_path, lines)
    assert detect_format(p) == "llamafactory"
    run = load_quiet(p)
    st = run.steps
    assert st["step"].tolist() == list(range(1, 41)) and run.n_attempts == 1
    assert st["end_s"].iloc[-1] == 430.0 and st["start_s"].iloc[0] == 0.0
    ev = run.events
    assert ev[["kind", "start_s", "end_s"]].values.tolist() == [["eval", 200.0, 230.0]]
    assert st.loc[st["step"] == 21, "start_s"].item() == 230.0  # the interval after the evaluation starts at its end
    assert np.allclose(st.loc[st["step"] == 30, "end_s"], 330.0)
    claim = run.meta.claims[0]
    assert (claim["metric"], claim["value"], claim["basis"]) == ("tokens_per_s", 600.0, "end_to_end")
    assert claim["where"].endswith(":5")  # the last measured line of the first launch
    assert run.meta.extra["schema"].startswith("lr (LLaMA-Factory v0.9.2")
    assert run.meta.extra["collapsed_lines"] == 1 and run.meta.extra["log_interval"] == 10
    assert run.meta.report.total_skipped == 0 and run.meta.report.lines_read == 6
    assert list(run.tables["log"]["kind"]) == ["train", "train", "eval", "train", "train", "end"]


def test_relaunch_opens_an_attempt_and_redone_steps_repeat(tmp_path):
    first = [line(s, 100 * s, loss=1.0, learning_rate=1e-5) for s in range(10, 60, 10)]  # to 5,000 s
    again = [line(s, 100 * (s - 30) + 40, loss=1.0, learning_rate=1e-5, throughput=9.0, total_tokens=5)
             for s in range(40, 110, 10)]  # resumed from step 30, its clock from zero
    run = load_quiet(write(tmp_path, first + again))
    assert run.n_attempts == 2
    st = run.steps
    assert st.groupby("attempt")["step"].agg(["min", "max"]).values.tolist() == [[1, 50], [31, 100]]
    ev = run.events.sort_values(["start_s", "kind"])
    assert ev[["kind", "start_s", "end_s", "attempt"]].values.tolist() == [
        ["failure", 5000.0, 5000.0, 0], ["restart", 5000.0, 5000.0, 1]]
    assert "line 6" in ev.iloc[1]["detail"] and "1:23:20 -> 0:17:20" in ev.iloc[1]["detail"]
    assert st["end_s"].max() == 5000.0 + 100 * 70 + 40  # back to back: the wall time is a lower bound
    assert run.meta.claims == []  # throughput logged only after the relaunch: not claimed
    notes = " ".join(run.meta.report.notes)
    assert "only after a relaunch" in notes and "placed back to back" in notes
    redone = set(st.loc[st["attempt"] == 0, "step"]) & set(st.loc[st["attempt"] == 1, "step"])
    assert redone == set(range(31, 51))


def test_two_writers_out_of_order_are_collapsed_not_restarted(tmp_path):
    # writer B falls behind writer A; lines interleave in wall-clock order, B's clock 2 s behind A's
    a = {s: 10 * s for s in range(10, 110, 10)}
    b = {s: 12 * s - 2 for s in range(10, 110, 10)}
    merged = sorted([(t, s, "a") for s, t in a.items()] + [(t, s, "b") for s, t in b.items()])
    lines = [line(s, t, loss=1.0, lr=1e-5) for t, s, _ in merged]
    run = load_quiet(write(tmp_path, lines))
    assert run.n_attempts == 1 and run.meta.extra["collapsed_lines"] == 10
    logged = run.steps[run.steps["logged"]]
    assert logged["end_s"].tolist() == [float(min(a[s], b[s])) for s in range(10, 110, 10)]
    notes = " ".join(run.meta.report.notes)
    assert "10 training lines repeat a step" in notes and "2.0 lines per logged step" in notes
    assert "up to 198 s apart" in notes


def test_a_later_step_reported_sooner_moves_an_earlier_record(tmp_path):
    lines = [line(10, 100, loss=1.0), line(30, 290, loss=1.0), line(20, 300, loss=1.0)]  # 20 only from a slow writer
    run = load_quiet(write(tmp_path, lines))
    logged = run.steps[run.steps["logged"]]
    assert logged[["step", "end_s"]].values.tolist() == [[10, 100.0], [20, 290.0], [30, 290.0]]
    assert (np.diff(run.steps["start_s"]) >= 0).all()
    assert "1 records take an earlier time" in " ".join(run.meta.report.notes)


def test_duration_spellings():
    from mfu_toolkit.io.values import duration

    assert [duration(t) for t in ("0:02:38", "22:08:06", "1 day, 0:08:23", "2 days, 1:00:00.5", "05:26",
                                  "1-02:03:04")] == [158.0, 79686.0, 86903.0, 176400.5, 326.0, 93784.0]
    assert [duration(t) for t in ("-1 day, 23:59:59", "0:60:00", "1 day, 24:00:00", "1-05:00", "x", 5)] == [None] * 6


def test_elapsed_time_with_days(tmp_path):
    run = load_quiet(write(tmp_path, [line(10, 86_000, loss=1.0), line(20, 86_903, loss=1.0)]))
    assert run.steps["end_s"].iloc[-1] == 86_903.0
    assert json.loads(line(20, 86_903))["elapsed_time"] == "1 day, 0:08:23"


def test_bad_lines_are_counted_with_their_line(tmp_path):
    lines = [line(10, 100, loss=1.0), "not json", "[1, 2]", json.dumps({"current_steps": 20}),
             json.dumps({"current_steps": -1, "elapsed_time": "0:05:00"}),
             json.dumps({"current_steps": 30, "elapsed_time": "yesterday"}),
             line(40, 400, loss="n/a"), line(50, 500, loss=0.5)]
    with pytest.warns(LoadWarning):
        run = llamafactory.load(write(tmp_path, lines))
    first = run.meta.report.first_lines
    assert first["record is not a JSON object"] == [3]
    assert first["required field missing"] == [4]
    assert first["step is not a non-negative integer"] == [5]
    assert first["time is missing, NaN or infinite"] == [6]
    assert run.meta.report.examples["time is missing, NaN or infinite"].startswith("not H:MM:SS: ")
    assert first["non-numeric value (left missing, record kept)"] == [7]
    assert [k for k in first if k.startswith("malformed JSON")] and run.meta.report.lines_read == 8
    assert run.steps.loc[run.steps["logged"], "step"].tolist() == [10, 40, 50]
    with pytest.raises(LoadError) as info:
        llamafactory.load(write(tmp_path, lines), strict=True)
    assert info.value.line == 2


def test_files_beside_the_log_belong_to_its_run(tmp_path):
    lines = [line(s, 10 * s, loss=1.0, lr=1e-5) for s in (5, 10, 15, 20)]
    write(tmp_path, lines)
    (tmp_path / "all_results.json").write_text(json.dumps(
        {"epoch": 1.0, "train_runtime": 201.5, "train_samples_per_second": 3.2, "train_steps_per_second": 0.1,
         "total_flos": 2.5e15, "effective_tokens_per_sec": 812.5}, indent=2))
    (tmp_path / "trainer_state.json").write_text(json.dumps(
        {"global_step": 20, "logging_steps": 5, "train_batch_size": 4, "log_history": []}, indent=2))
    assert detect_format(tmp_path) == "hf_trainer"  # the output folder stays hf_trainer's
    run = load_run(tmp_path, format="llamafactory")
    claims = {c["metric"]: c["value"] for c in run.meta.claims}
    assert claims == {"samples_per_s": 3.2, "steps_per_s": 0.1, "tokens_per_s_per_accelerator": 812.5,
                      "total_flos": 2.5e15}
    lines_of = [c["where"].rsplit(":", 1)[1] for c in run.meta.claims]
    assert lines_of == ["4", "5", "7", "6"] and all("all_results.json" in c["where"] for c in run.meta.claims)
    assert run.meta.extra["results"]["all_results.json"]["train_runtime"] == 201.5
    mb = [f for f in run.meta.facts if f["name"] == "micro_batch"]
    assert mb[0]["value"] == 4 and mb[0]["where"].endswith("trainer_state.json:4")
    assert run.meta.extra["log_interval"] == 5


def test_results_of_a_relaunched_run_are_not_claimed(tmp_path):
    lines = [line(10, 100, loss=1.0), line(20, 200, loss=1.0), line(20, 50, loss=1.0), line(30, 150, loss=1.0)]
    log = write(tmp_path, lines, name="x_trainer_log.jsonl")
    (tmp_path / "x_all_results.json").write_text(json.dumps({"train_runtime": 150.0, "train_samples_per_second": 3.0}))
    (tmp_path / "all_results.json").write_text(json.dumps({"train_samples_per_second": 99.0}))  # not this log's
    run = load_quiet(log)
    assert run.n_attempts == 2 and run.meta.claims == []
    assert run.meta.extra["results"] == {"all_results.json": {"train_runtime": 150.0, "train_samples_per_second": 3.0}}
    assert "spans the last of the 2 launches" in " ".join(run.meta.report.notes)


def test_prediction_only_progress_is_no_training_log(tmp_path):
    lines = [json.dumps({"current_steps": s, "total_steps": 20, "percentage": s * 5, "elapsed_time": hms(s),
                         "remaining_time": "0:00:01"}) for s in (5, 10)]
    with pytest.raises(LoadError, match="no training lines"):
        llamafactory.load(write(tmp_path, lines))


def test_options_are_checked(tmp_path):
    p = write(tmp_path, [line(10, 100, loss=1.0)])
    with pytest.raises(LoaderArgumentError, match="reset_tolerance_s"):
        llamafactory.load(p, reset_tolerance_s=-1)
    assert llamafactory.load(p, log_interval=5).steps["step"].tolist() == [6, 7, 8, 9, 10]


def test_sniff_does_not_claim_other_json_lines(tmp_path):
    other = write(tmp_path, [json.dumps({"step": 1, "loss": 2.0, "elapsed_time": "0:00:01"})], name="x.jsonl")
    assert llamafactory.sniff(other, other.read_bytes()) == 0.0
    assert llamafactory.sniff(tmp_path, b"") == 0.0


# --- real logs ------------------------------------------------------------------------------------------------
def _raw(path: Path) -> list[dict]:
    return [json.loads(t) for t in path.read_text().splitlines() if t.strip()]


def test_real_resumed_log_two_writers(realdata):  # noqa: F811
    path = realdata / "llamafactory" / RAMEY
    raw = _raw(path)
    el = [seconds(r["elapsed_time"]) for r in raw]
    reset = next(i for i in range(1, len(el)) if el[i] < el[i - 1] - 60)
    assert (reset + 1, raw[reset - 1]["current_steps"], raw[reset]["current_steps"]) == (1047, 5220, 5010)
    segs = [raw[:reset], raw[reset:]]
    span = [max(seconds(r["elapsed_time"]) for r in seg) for seg in segs]
    run = load_quiet(path)
    assert run.meta.source_format == "llamafactory" and run.n_attempts == 2
    assert run.meta.report.lines_read == len(raw) == 1360 and run.meta.report.total_skipped == 0
    st = run.steps
    reached = [max(r["current_steps"] for r in seg) for seg in segs]
    assert st.groupby("attempt")["step"].max().tolist() == reached == [5240, 6565]
    assert st.groupby("attempt")["step"].min().tolist() == [1, segs[1][0]["current_steps"] - 9]
    assert len(st) == reached[0] + reached[1] - (segs[1][0]["current_steps"] - 10)  # every step once per attempt
    wall = st["end_s"].max() - st["start_s"].min()
    assert wall == sum(span) >= 28.7 * 3600
    redone = set(st.loc[st["attempt"] == 0, "step"]) & set(st.loc[st["attempt"] == 1, "step"])
    assert len(redone) == reached[0] - (segs[1][0]["current_steps"] - 10) == 240
    keys = {(k, r["current_steps"]) for k, seg in enumerate(segs) for r in seg}
    assert run.meta.extra["collapsed_lines"] == len(raw) - len(keys)
    ev = run.events.sort_values(["start_s", "kind"])
    assert ev["kind"].tolist() == ["failure", "restart"] and ev["start_s"].tolist() == [span[0], span[0]]
    for k, seg in enumerate(segs):  # each logged step ends at the earliest time it or a later step is reported
        origin = sum(span[:k])
        for s in (seg[0]["current_steps"], 2000 + 4000 * k, reached[k]):
            want = min(seconds(r["elapsed_time"]) for r in seg if r["current_steps"] >= s)
            got = st.loc[(st["attempt"] == k) & (st["step"] == s), "end_s"].item()
            assert got == origin + want, (k, s)
    assert "lr (" in run.meta.extra["schema"] and run.meta.claims == []
    assert (run.meta.extra["total_steps"], run.meta.extra["epochs"]) == (6566, 7.0)
    assert len(run.tables["log"]) == 1360


def test_real_clean_log_steps_epochs_interval(realdata):  # noqa: F811
    path = realdata / "llamafactory" / SYGOAT
    raw = _raw(path)
    run = load_quiet(path)
    assert run.n_attempts == 1 and len(run.events) == 0
    steps = [r["current_steps"] for r in raw]
    assert run.steps["step"].tolist() == list(range(1, max(steps) + 1)) and max(steps) == 8660
    gaps = np.diff(sorted(set(steps)))
    assert run.meta.extra["log_interval"] == int(np.bincount(gaps).argmax()) == 10
    assert run.meta.extra["epochs"] == max(r["epoch"] for r in raw) == 4.0
    assert run.meta.extra["total_steps"] == raw[0]["total_steps"] == 8660
    assert run.steps["end_s"].max() == seconds(raw[-1]["elapsed_time"]) == 20386
    assert run.meta.claims == [] and all(r["throughput"] == "0.00" for r in raw)
    assert f"{len(raw)} lines write throughput 0.00" in " ".join(run.meta.report.notes)
    assert run.meta.extra["collapsed_lines"] == 1 and "loss" not in raw[-1]
    logged = run.steps[run.steps["logged"]]
    assert logged["loss"].tolist()[:3] == [r["loss"] for r in raw[:3]]
    assert [f["value"] for f in run.meta.facts if f["name"] == "framework"] == ["LLaMA-Factory"]


def test_real_logs_detect_and_round_trip(realdata, tmp_path):  # noqa: F811
    for path in files(realdata / "llamafactory", "*trainer_log.jsonl"):
        assert detect_format(path) == "llamafactory"
        run = load_quiet(path)
        assert load_run(save_run(run, tmp_path / "r.parquet")) == run
    for path in files(realdata / "hf_trainer"):  # the Trainer's own logs stay hf_trainer's
        assert detect_format(path) == "hf_trainer", path


@pytest.mark.parametrize("name", [RAMEY, SYGOAT])
def test_damaged_copies_of_real_logs_load_or_fail_cleanly(realdata, tmp_path, name):  # noqa: F811
    data = (realdata / "llamafactory" / name).read_bytes()
    rng = np.random.default_rng(7)
    for k in range(6):
        cut = bytearray(data[: int(len(data) * (k + 1) / 7)])  # cut inside a line
        for i in rng.integers(0, len(cut), size=20):
            cut[i] = int(rng.integers(0, 256))
        p = tmp_path / f"{k}_trainer_log.jsonl"
        p.write_bytes(bytes(cut))
        try:
            run = load_quiet(p)
        except LoadError:
            continue
        assert run.meta.report.total_skipped >= 1 and (np.diff(run.steps["start_s"]) >= -1e-9).all()
