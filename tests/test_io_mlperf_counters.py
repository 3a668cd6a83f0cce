"""MLPerf steps take their samples from the log's own counters (``epoch_num`` x ``train_samples``),
the first block may lack its ``block_start``, and a throughput logged at ``run_stop`` is a rate of the
timed run. Synthetic variants by hand, then every real DLRM result file, checked against its raw bytes."""

from __future__ import annotations

import json
import math
import re

import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import T0_MS, mllog, write_mlperf

from mfu_toolkit.analysis import build_answer
from mfu_toolkit.io import load_run

TRAIN = 1_000_000  # samples in one epoch, as the log states with train_samples


def _dlrm(*, train: int | None = TRAIN, marks=(0.0, 0.25, 0.5), stop_epoch=0.75, throughput: float | None = None,
          benchmark: str = "dlrm_dcnv2") -> list[str]:
    """epoch 0..; evaluations at each mark after the first (1 s each), 10 s of training before each."""
    out = [mllog("submission_benchmark", T0_MS, benchmark), mllog("global_batch_size", T0_MS, 1000)]
    if train is not None:
        out.append(mllog("train_samples", T0_MS, train, epoch_num=0.0))
    out += [mllog("run_start", T0_MS, event_type="INTERVAL_START"),
            mllog("epoch_start", T0_MS, event_type="INTERVAL_START", epoch_num=marks[0])]
    t = T0_MS
    for m in [*marks[1:], stop_epoch]:
        t += 10_000
        out += [mllog("eval_start", t, event_type="INTERVAL_START", epoch_num=m),
                mllog("eval_stop", t + 1000, event_type="INTERVAL_END", epoch_num=m)]
        t += 1000
    out += [mllog("run_stop", t, event_type="INTERVAL_END", status="success", epoch_num=stop_epoch),
            mllog("epoch_stop", t, event_type="INTERVAL_END", epoch_num=stop_epoch)]
    if throughput is not None:
        out.append(mllog("tracked_stats", t, {"throughput": throughput}, step=stop_epoch))
    return out


def test_fractional_epoch_positions_times_train_samples_give_each_step_its_samples(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=_dlrm()))
    # hand: each 10 s segment trains a quarter epoch of 1,000,000 samples
    assert run.steps["samples"].tolist() == [250_000.0, 250_000.0, 250_000.0]
    assert run.meta.extra["samples_from"] == "epoch_num x train_samples"
    assert any("from the log's own counters" in n and "1,000,000" in n for n in run.meta.report.notes)


def test_whole_epoch_positions_are_no_evidence_of_epochs(tmp_path):
    # BERT logs epoch_num as a sample count (a whole number): never multiplied by train_samples
    run = load_run(write_mlperf(tmp_path, lines=_dlrm(marks=(0, 150336, 300672), stop_epoch=450000)))
    assert "samples" not in run.steps or run.steps["samples"].isna().all()
    assert "samples_from" not in run.meta.extra


def test_without_train_samples_the_counters_give_no_samples(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=_dlrm(train=None)))
    assert "samples" not in run.steps or run.steps["samples"].isna().all()


def test_token_counted_benchmarks_are_left_to_their_own_rule(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=_dlrm(benchmark="gpt3")))
    assert "samples" not in run.steps or run.steps["samples"].isna().all()


def test_a_step_missing_a_position_at_one_end_is_counted_not_guessed(tmp_path):
    lines = _dlrm()
    # the second evaluation states no position: the steps that end or start there have no count
    i = next(k for k, x in enumerate(lines) if '"eval_start"' in x and '"epoch_num": 0.5' in x)
    j = i + 1
    for k in (i, j):
        rec = json.loads(lines[k].split(" ", 1)[1])
        del rec["metadata"]["epoch_num"]
        rec["metadata"]["samples_count"] = 7  # another counter: the eval is still told apart
        lines[k] = ":::MLLOG " + json.dumps(rec)
    run = load_run(write_mlperf(tmp_path, lines=lines))
    s = run.steps["samples"].tolist()
    assert s[0] == 250_000.0 and math.isnan(s[1]) and math.isnan(s[2])
    assert any("2 step(s) lack an epoch_num" in n for n in run.meta.report.notes)


def test_clashing_positions_at_one_time_state_none(tmp_path):
    lines = _dlrm()
    # an epoch_stop at the run's end stating another position than run_stop does
    lines = [x.replace('"epoch_num": 0.75}', '"epoch_num": 0.8}') if '"epoch_stop"' in x else x for x in lines]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    # the last step ends at an evaluation (0.75 stated once there), so it keeps its count
    assert run.steps["samples"].tolist()[:2] == [250_000.0, 250_000.0]


def test_the_first_block_without_block_start_starts_at_run_start(tmp_path):
    lines = [mllog("run_start", T0_MS, event_type="INTERVAL_START"),
             mllog("block_stop", T0_MS + 5000, event_type="INTERVAL_END", first_epoch_num=0, samples_count=64),
             mllog("block_start", T0_MS + 6000, event_type="INTERVAL_START", first_epoch_num=1, samples_count=64),
             mllog("block_stop", T0_MS + 11000, event_type="INTERVAL_END", first_epoch_num=1, samples_count=128),
             mllog("run_stop", T0_MS + 12000, event_type="INTERVAL_END", status="success")]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert run.steps[["start_s", "end_s"]].values.tolist() == [[0.0, 5.0], [6.0, 11.0]]
    assert any("has no block_start" in n and "run_start" in n for n in run.meta.report.notes)
    assert not run.meta.report.skipped


def test_a_block_stop_without_any_start_before_the_run_is_still_a_bad_record(tmp_path):
    lines = [mllog("block_stop", T0_MS, event_type="INTERVAL_END", first_epoch_num=0),
             mllog("run_start", T0_MS + 1000, event_type="INTERVAL_START"),
             mllog("block_start", T0_MS + 2000, event_type="INTERVAL_START", first_epoch_num=1),
             mllog("block_stop", T0_MS + 3000, event_type="INTERVAL_END", first_epoch_num=1),
             mllog("run_stop", T0_MS + 4000, event_type="INTERVAL_END")]
    run = load_run(write_mlperf(tmp_path, lines=lines), strict=False)
    assert sum(run.meta.report.skipped.values()) == 1 and len(run.steps) == 1


def test_a_throughput_logged_at_run_stop_is_a_timed_run_rate_and_agrees(tmp_path):
    # hand: 750,000 samples over the 33 s from run_start to run_stop
    run = load_run(write_mlperf(tmp_path, lines=_dlrm(throughput=750_000 / 33)), n_accelerators=1,
                   accelerator="H100 SXM", model_flops_per_sample=1e9)
    (claim,) = run.meta.claims
    assert claim["basis"] == "run" and "run_start to run_stop" in claim["counts"]
    check = next(c for c in build_answer(run).checks if c.name == "claim samples_per_s")
    assert check.status == "ok" and "ratio 1.00" in check.message and "timed-run rate" in check.message


def test_a_throughput_off_by_half_still_warns(tmp_path):
    run = load_run(write_mlperf(tmp_path, lines=_dlrm(throughput=2 * 750_000 / 33)), n_accelerators=1,
                   accelerator="H100 SXM", model_flops_per_sample=1e9)
    check = next(c for c in build_answer(run).checks if c.name == "claim samples_per_s")
    assert check.status == "warn" and "ratio 0.50" in check.message


# --- the real DLRM-DCNv2 results of several submitters ------------------------------------------

_REC = re.compile(r":::MLLOG (\{.*\})")


def _records(path):
    return [json.loads(m.group(1)) for m in map(_REC.search, path.read_text().splitlines()) if m]


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_real_dlrm_steps_are_the_raw_positions_times_train_samples(realdata):  # noqa: F811
    for path in files(realdata / "mlperf", "*dlrm*"):
        recs = _records(path)
        train = next(r["value"] for r in recs if r["key"] == "train_samples")
        evals = [r["metadata"]["epoch_num"] for r in recs if r["key"] == "eval_start"]
        run = load_run(path)
        got = run.steps["samples"].tolist()
        # from the raw records: a step runs from the previous evaluation (epoch 0 at the start) to the next
        want = [round((b - a) * train) for a, b in zip([0.0, *evals], evals, strict=False)]
        assert got[: len(want)] == pytest.approx(want, abs=0.5), path.name
        assert all(not math.isnan(x) for x in got), path.name


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_real_dlrm_throughput_is_reproduced_over_the_timed_run(realdata):  # noqa: F811
    for path in files(realdata / "mlperf", "*dlrm*"):
        recs = _records(path)
        claimed = next(r["value"]["throughput"] for r in recs if r["key"] == "tracked_stats")
        # the samples/s claim does not depend on the count; 1,024 keeps every MFU below 100 %
        run = load_run(path, n_accelerators=1024, accelerator="H100 SXM", model_flops_per_sample=96.18e6)
        check = next(c for c in build_answer(run).checks if c.name == "claim samples_per_s")
        assert check.status == "ok", (path.name, check.message)
        # our timed-run rate from the raw records: samples up to the last evaluation over run_start..run_stop
        t = {r["key"]: r["time_ms"] for r in recs if r["key"] in ("run_start", "run_stop")}
        train = next(r["value"] for r in recs if r["key"] == "train_samples")
        last = [r["metadata"]["epoch_num"] for r in recs if r["key"] == "eval_start"][-1]
        ours = last * train / ((t["run_stop"] - t["run_start"]) / 1000)
        assert ours / claimed == pytest.approx(1.0, abs=2e-3), path.name


# --- records out of file order, and shell traces ------------------------------------------------


def _short_run(t_ms: int) -> list[str]:
    return [mllog("init_start", t_ms, event_type="INTERVAL_START"),
            mllog("init_stop", t_ms + 1000, event_type="INTERVAL_END"),
            mllog("run_start", t_ms + 1000, event_type="INTERVAL_START"),
            mllog("block_start", t_ms + 1000, event_type="INTERVAL_START", first_epoch_num=0, samples_count=0),
            mllog("block_stop", t_ms + 5000, event_type="INTERVAL_END", first_epoch_num=0, samples_count=64),
            mllog("run_stop", t_ms + 5000, event_type="INTERVAL_END", status="success")]


def test_a_stream_appended_at_the_end_but_earlier_is_placed_by_its_time(tmp_path):
    # the launcher's cache_clear records (3 s and 2.9 s before init) written after the training output
    tail = [mllog("cache_clear", T0_MS - 3000, True), mllog("cache_clear", T0_MS - 2900, True)]
    run = load_run(write_mlperf(tmp_path, lines=_short_run(T0_MS) + tail))
    assert not run.meta.report.skipped
    ev = run.events.set_index("kind")
    assert ev.loc["other", "start_s"] == 0.0 and ev.loc["init", "start_s"] == 3.0  # the wall starts at the first record
    assert any("lines 7-8, the file's last" in n for n in run.meta.report.notes)


def test_early_records_followed_by_the_main_timeline_are_bad_records(tmp_path):
    lines = _short_run(T0_MS)
    lines.insert(2, mllog("cache_clear", T0_MS - 60_000, True))  # a minute back, then the run goes on
    run = load_run(write_mlperf(tmp_path, lines=lines), strict=False)
    assert run.meta.report.first_lines == {"non-monotonic timestamp": [3]}
    assert run.meta.report.examples["non-monotonic timestamp"].startswith("more than 1 s before an earlier record")


def test_shell_trace_lines_are_not_malformed_records(tmp_path):
    # bash -x prints the echo of a record, quotes and all, before the record itself
    sysjson = json.dumps({"number_of_nodes": "1", "accelerators_per_node": "4", "accelerator_model_name": "H100"})
    lines = [f"+ echo ':::SYSJSON {sysjson}'", f":::SYSJSON {sysjson}", "++ echo ':::MLLOG {\"x\": 1}'",
             *_short_run(T0_MS)]
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert not run.meta.report.skipped and run.meta.n_accelerators == 4
    assert any("2 lines are commands the shell traced" in n for n in run.meta.report.notes)


def test_whole_positions_ending_at_train_samples_count_samples(tmp_path):
    # BERT's form: epoch_num is the samples trained so far, and train_samples (logged at the end) is
    # the last of them; the 1 ms after the last evaluation trains nothing and is no step
    lines = _dlrm(train=450_000, marks=(0, 150_336, 299_889), stop_epoch=450_000)
    run = load_run(write_mlperf(tmp_path, lines=lines))
    assert run.steps["samples"].tolist() == [150_336.0, 149_553.0, 150_111.0]  # hand: the differences
    assert run.meta.extra["samples_from"].startswith("epoch_num (a sample count")


@pytest.mark.filterwarnings("ignore::mfu_toolkit.run.LoadWarning")
def test_real_bert_steps_are_the_raw_sample_positions(realdata):  # noqa: F811
    path = realdata / "mlperf" / "v4.1_NVIDIA_h200_ngc23.09_pytorch_bert_result_0.txt"
    recs = _records(path)
    train = next(r["value"] for r in recs if r["key"] == "train_samples")
    evals = [r["metadata"]["epoch_num"] for r in recs if r["key"] == "eval_start"]
    assert evals[-1] == train  # the log's own evidence that epoch_num counts samples
    run = load_run(path)
    assert run.steps["samples"].tolist() == [float(b - a) for a, b in zip([0, *evals], evals, strict=False)]
    # the log's throughput records (samples between records over the time between them) agree with ours
    run = load_run(path, model_flops_per_sample=1e9, accelerator="H200 SXM", n_accelerators=8)
    check = next(c for c in build_answer(run).checks if c.name == "claim samples_per_s")
    assert check.status == "ok", check.message
