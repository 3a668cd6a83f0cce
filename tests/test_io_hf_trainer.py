"""HF Trainer loader: trainer_state.json, results files, stdout dict lines, bad records, real logs."""

from __future__ import annotations

import ast
import json
import math
import re
import tempfile
import warnings
from pathlib import Path

import pytest
from _realdata_b import realdata_dir
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import hf_trainer, load_run, rules
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning


def state(log_history: list[dict], **top) -> str:
    doc = {"global_step": 100, "logging_steps": 50, "train_batch_size": 4, **top, "log_history": log_history}
    return json.dumps(doc, indent=2)


HISTORY = [
    {"epoch": 0.5, "loss": 2.0, "learning_rate": 1e-4, "grad_norm": 1.5, "step": 50},
    {"epoch": 1.0, "eval_loss": 1.9, "eval_runtime": 30.0, "step": 50},
    {"epoch": 1.0, "loss": 1.5, "learning_rate": 5e-5, "step": 100},
    {"epoch": 1.0, "eval_loss": 1.7, "eval_runtime": 20.0, "step": 100},
    {"epoch": 1.0, "step": 100, "train_runtime": 250.0, "total_flos": 1e15, "train_steps_per_second": 0.4},
]


def load_quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return hf_trainer.load(p, **kw)


# --- the safe dict-line reader ------------------------------------------------------------------
def test_dict_lines_are_read_as_literals_only():
    d = hf_trainer.parse_dict_line("{'loss': nan, 'grad_norm': tensor(0.52, device='cuda:0'), 'lr': -1e-05, 'x': inf}")
    assert math.isnan(d["loss"]) and d["grad_norm"] == 0.52 and d["lr"] == -1e-05 and d["x"] == math.inf
    for evil in (
        "{'loss': __import__('os').system('touch /tmp/pwned_by_log')}",
        "{'loss': [x for x in range(3)]}",
        "{'loss': (lambda: 1)()}",
        "{**{'a': 1}}",
        "{'loss': open('/etc/passwd').read()}",
    ):
        with pytest.raises(ValueError):
            hf_trainer.parse_dict_line(evil)
    assert not Path("/tmp/pwned_by_log").exists()
    with pytest.raises(ValueError):
        hf_trainer.parse_dict_line("{'a': " * 10_000 + "1" + "}" * 10_000)  # deep nesting


# --- trainer_state.json -------------------------------------------------------------------------
def test_state_steps_share_train_time_and_evals_are_placed(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text(state(HISTORY))
    run = hf_trainer.load(p)
    s, e = run.steps, run.events
    assert run.meta.timing == "duration_only"
    assert s["step"].tolist() == list(range(1, 101))
    tau = (250.0 - 30.0 - 20.0) / 100  # train_runtime minus evaluations, over global_step
    assert (s["end_s"] - s["start_s"]).to_numpy() == pytest.approx([tau] * 100)
    assert e["kind"].tolist() == ["eval", "eval"]
    assert e["start_s"].iloc[0] == pytest.approx(50 * tau)  # after step 50
    assert e["end_s"].iloc[0] == pytest.approx(50 * tau + 30.0)
    assert s.loc[s["step"] == 51, "start_s"].iloc[0] == pytest.approx(50 * tau + 30.0)
    assert run.wall_seconds == pytest.approx(250.0)  # W = train_runtime exactly
    assert s["logged"].sum() == 2 and s.loc[s["step"] == 50, "loss"].iloc[0] == 2.0
    assert run.meta.extra["total_flos"] == 1e15 and run.meta.model_flops_per_step is None
    assert len(run.tables["log_history"]) == 5


def test_results_beside_the_state_and_checkpoint_folders(tmp_path):
    ck = tmp_path / "checkpoint-50"
    ck.mkdir()
    (ck / "trainer_state.json").write_text(state(HISTORY[:2], global_step=50))
    ck2 = tmp_path / "checkpoint-100"
    ck2.mkdir()
    (ck2 / "trainer_state.json").write_text(state(HISTORY))
    (ck2 / "all_results.json").write_text(json.dumps({"train_runtime": 250.0, "epoch": 1.0}))
    assert hf_trainer.sniff(tmp_path, b"") >= 0.8
    run = hf_trainer.load(tmp_path)
    assert len(run.steps) == 100  # the latest checkpoint's state
    assert run.meta.extra["results"]["all_results.json"]["train_runtime"] == 250.0
    only = hf_trainer.load(ck2 / "all_results.json")
    assert only.steps.empty and only.meta.extra["results"]["all_results.json"]["epoch"] == 1.0



def test_an_unreadable_results_file_is_counted_with_file_and_line(tmp_path):
    p = tmp_path / "run_trainer_state.json"
    p.write_text(state(HISTORY))
    (tmp_path / "run_all_results.json").write_text('{\n  "epoch": 1.0,\n  "train_runtime": 250.0,\n')  # half-written
    (tmp_path / "eval_results.json").write_text("[1, 2]")
    reason = "unreadable file left out"  # which file, and why, is the detail: it opens the example
    with pytest.warns(LoadWarning, match="unreadable file left out"):
        run = hf_trainer.load(p)
    rep = run.meta.report
    assert rep.skipped == {reason: 2}
    assert rep.examples[reason] == ("results file: malformed JSON record (Expecting property name enclosed in "
                                    "double quotes)")
    assert rep.first_lines[reason] == ["run_all_results.json:4", "eval_results.json:1"]
    assert "results" not in run.meta.extra
    assert len(run.steps) == 100  # the state itself loads as before
    with pytest.raises(LoadError) as exc:
        hf_trainer.load(p, strict=True)
    err = exc.value
    assert (err.line, err.field) == (4, "run_all_results.json") and str(tmp_path / "run_all_results.json") in str(err)


def test_a_folder_load_names_the_trainer_files_it_left_out(tmp_path):
    (tmp_path / "trainer_state.json").write_text(state(HISTORY))
    (tmp_path / "all_results.json").write_text(json.dumps({"train_runtime": 250.0}))  # read with the state
    (tmp_path / "other_run_stdout.txt").write_text(stdout_text())
    (tmp_path / "config.json").write_text(json.dumps({"hidden_size": 8}))  # not a Trainer log: not named
    (tmp_path / "checkpoint-50").mkdir()
    (tmp_path / "checkpoint-50" / "trainer_state.json").write_text(state(HISTORY[:2], global_step=50))
    notes = load_quiet(tmp_path).meta.report.notes
    (left,) = [n for n in notes if "not read (load each by its own path)" in n]
    assert "other_run_stdout.txt (Trainer stdout dict lines" in left and left.startswith("1 other Trainer file(s)")
    assert "all_results.json" not in left and "config.json" not in left
    assert any(n.startswith("1 checkpoint state(s) not read (checkpoint-50/trainer_state.json)") for n in notes)
    # a results-only folder: the stdout log beside it is named too
    (tmp_path / "trainer_state.json").unlink()
    (tmp_path / "checkpoint-50" / "trainer_state.json").unlink()
    notes = load_quiet(tmp_path).meta.report.notes
    assert any("other_run_stdout.txt (Trainer stdout dict lines" in n for n in notes)
    # a single file loads as before: no such note
    assert not any("not read" in n for n in load_quiet(tmp_path / "other_run_stdout.txt").meta.report.notes)

def test_state_without_train_runtime_has_no_invented_times(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_text(state(HISTORY[:4]))
    run = hf_trainer.load(p)
    assert run.steps.empty
    assert len(run.tables["log_history"]) == 4
    assert any("no train_runtime" in n for n in run.meta.report.notes)


def test_truncated_state_is_salvaged_or_raised(tmp_path):
    text = state(HISTORY)
    cut = text[: text.index('"eval_runtime": 20.0')]  # the writer died inside the 4th entry
    p = tmp_path / "trainer_state.json"
    p.write_text(cut)
    run = load_quiet(p)
    assert len(run.tables["log_history"]) == 3
    assert run.steps.empty  # no train_runtime survived
    (reason,) = run.meta.report.skipped
    assert reason == rules.JSON_REST_UNREAD and run.meta.report.examples[reason].startswith("truncated")
    line = cut[: cut.rindex("{")].count("\n") + 1  # the broken entry's first line
    assert run.meta.report.first_lines[reason] == [line]
    with pytest.raises(LoadError) as exc:
        hf_trainer.load(p, strict=True)
    assert exc.value.line is not None and exc.value.field == "log_history"


def test_negative_or_nan_runtimes_are_bad_records(tmp_path):
    hist = [dict(h) for h in HISTORY]
    hist[1]["eval_runtime"] = -3.0
    p = tmp_path / "trainer_state.json"
    p.write_text(state(hist).replace('"eval_runtime": 20.0', '"eval_runtime": NaN'))
    run = load_quiet(p)
    assert run.meta.report.skipped == {"negative duration": 1, "time is missing, NaN or infinite": 1}
    assert run.events.empty and run.wall_seconds == pytest.approx(250.0)
    with pytest.raises(LoadError, match="negative duration") as exc:
        hf_trainer.load(p, strict=True)
    assert exc.value.field == "eval_runtime" and exc.value.line is not None


# --- stdout dict lines --------------------------------------------------------------------------
def stdout_text(n: int = 6, every: int = 5) -> str:
    lines = ["Some launcher banner", "  0%|          | 0/30 [00:00<?, ?it/s]"]
    for i in range(1, n + 1):
        lines.append(f" 10%|█         | {i * every}/30 [00:10<00:50]{{'loss': {2.0 - i / 10:.2f}, "
                     f"'learning_rate': 1e-05, 'epoch': {i / n:.2f}}}")
        if i == 3:
            lines.append("{'eval_loss': 1.2, 'eval_runtime': 12.5, 'eval_samples_per_second': 8.0, 'epoch': 0.5}")
    lines.append(f"{{'train_runtime': 72.5, 'train_samples_per_second': 3.3, "
                 f"'train_steps_per_second': {n * every / 72.5:.3f}, 'train_loss': 1.6, 'epoch': 1.0}}")
    return "\n".join(lines) + "\n"


def test_stdout_interval_inferred_and_eval_placed(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text(stdout_text())
    assert hf_trainer.sniff(p, read_head(p)) >= 0.9
    run = hf_trainer.load(p)
    s = run.steps
    assert run.meta.extra["logging_steps_inferred"] == [5]
    assert len(s) == 30 and s.loc[s["logged"], "step"].tolist() == [5, 10, 15, 20, 25, 30]
    tau = (72.5 - 12.5) / 30
    assert (s["end_s"] - s["start_s"]).to_numpy() == pytest.approx([tau] * 30)
    (ev,) = run.events.itertuples()
    assert ev.start_s == pytest.approx(15 * tau) and ev.end_s - ev.start_s == pytest.approx(12.5)
    assert run.wall_seconds == pytest.approx(72.5)


def test_stdout_half_written_line_and_garbage(tmp_path):
    p = tmp_path / "out.txt"
    text = stdout_text() + "{'loss': 0.5, 'learning_ra"
    p.write_text(text)
    run = load_quiet(p)
    assert run.meta.report.skipped == {"malformed dict line": 1}
    assert run.meta.report.first_lines["malformed dict line"] == [text.count("\n") + 1]
    with pytest.raises(LoadError) as exc:
        hf_trainer.load(p, strict=True)
    assert exc.value.line == text.count("\n") + 1
    g = tmp_path / "garbage.bin"
    g.write_bytes(b"\x00\xff{'" * 500)
    with pytest.raises(LoadError):
        load_quiet(g)
    e = tmp_path / "empty.txt"
    e.write_text("")
    with pytest.raises(LoadError):
        hf_trainer.load(e)
    empty_dir = tmp_path / "nothing_here"
    empty_dir.mkdir()
    with pytest.raises(LoadError, match="no trainer_state.json"):
        hf_trainer.load(empty_dir)


def test_two_trainings_in_one_stdout_are_two_attempts(tmp_path):
    p = tmp_path / "out.txt"
    p.write_text(stdout_text(3, 1) + stdout_text(2, 1))
    run = load_quiet(p)
    assert run.n_attempts == 2
    assert run.steps.groupby("attempt")["step"].max().tolist() == [3, 2]


@settings(max_examples=40, deadline=None)
@given(st.one_of(st.binary(max_size=400),
                 st.text(alphabet="{}'\":,0123456789.e- abnlos_[]()", max_size=300).map(str.encode)))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.txt"
        p.write_bytes(data)
        try:
            load_quiet(p)
        except LoadError:
            pass


# --- real logs ----------------------------------------------------------------------------------
@pytest.mark.realdata
def test_real_trainer_state_matches_the_raw_json():
    from mfu_toolkit.io import load_run

    p = realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_trainer_state.json")
    raw = json.loads(p.read_text())
    run = load_run(p)
    assert run.meta.source_format == "hf_trainer"
    assert len(run.steps) == raw["global_step"] == run.steps["step"].max()
    final = next(e for e in raw["log_history"] if "train_runtime" in e)
    assert run.wall_seconds == pytest.approx(final["train_runtime"])
    evals = [e for e in raw["log_history"] if any(k.endswith("_runtime") and k != "train_runtime" for k in e)]
    assert len(run.events) == len(evals)
    ev_total = sum(v for e in evals for k, v in e.items() if k.endswith("_runtime"))
    assert (run.events["end_s"] - run.events["start_s"]).sum() == pytest.approx(ev_total)
    assert (run.steps["end_s"] - run.steps["start_s"]).sum() == pytest.approx(final["train_runtime"] - ev_total)
    logged = [e["step"] for e in raw["log_history"] if "loss" in e]
    assert run.steps.loc[run.steps["logged"], "step"].tolist() == logged
    results = json.loads(realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_all_results.json").read_text())
    assert run.meta.extra["results"]["Jaong_Checkpoint-of-CPT_all_results.json"] == results
    only = load_run(realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_all_results.json"))
    assert only.steps.empty and only.meta.source_format == "hf_trainer"



@pytest.mark.realdata
def test_real_folder_names_the_stdout_log_it_does_not_read():
    from mfu_toolkit.io import load_run

    d = realdata_dir("hf_trainer")
    run = load_run(d)
    assert run.meta.source_format == "hf_trainer"
    assert len(run.steps) == json.loads((d / "Jaong_Checkpoint-of-CPT_trainer_state.json").read_text())["global_step"]
    (left,) = [n for n in run.meta.report.notes if "not read" in n]
    assert "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt (Trainer stdout dict lines" in left
    assert "Jaong_Checkpoint-of-CPT" not in left  # the state and its results were read

@pytest.mark.realdata
def test_real_stdout_dict_lines_match_the_raw_text():
    from mfu_toolkit.io import load_run

    p = realdata_dir("hf_trainer", "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt")
    lines = p.read_text().splitlines()
    losses = [ast.literal_eval(x)["loss"] for x in lines if x.startswith("{'loss'")]
    final = ast.literal_eval(next(x for x in lines if "train_runtime" in x))
    run = load_run(p)
    assert run.meta.source_format == "hf_trainer"
    assert run.meta.report.total_skipped == 0
    # Logged every step: train_runtime × steps/s ≈ the number of loss lines.
    assert abs(final["train_runtime"] * final["train_steps_per_second"] - len(losses)) < 2
    assert len(run.steps) == len(losses)
    assert run.steps["loss"].tolist() == losses
    assert run.wall_seconds == pytest.approx(final["train_runtime"])
    assert run.meta.extra["final"][0]["train_loss"] == final["train_loss"]
    assert re.search(r"evenly", " ".join(run.meta.report.notes))


# --- claims -------------------------------------------------------------------------------------
def _first(pattern: str, text: str) -> tuple[float, int]:
    """The number matched by ``pattern`` in the raw text, and its line."""
    m = re.search(pattern, text)
    return float(m.group(1)), text.count("\n", 0, m.start()) + 1


@pytest.mark.realdata
def test_real_claims_match_the_raw_bytes():
    from mfu_toolkit.io import load_run

    p = realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_trainer_state.json")
    text = p.read_text()
    run = load_run(p)
    sps, line = _first(r'"train_samples_per_second": ([0-9.e+-]+)', text)  # in the final log entry
    c = run.meta.claim("samples_per_s")
    assert (c["value"], c["where"], c["unit"]) == (sps, f"{p}:{line}", "samples/s") and sps == 0.511
    runtime, _ = _first(r'"train_runtime": ([0-9.e+-]+)', text)
    assert f"train_runtime ({runtime:.10g} s" in c["counts"] and runtime == 64358.151
    flos, line = _first(r'"total_flos": ([0-9.e+-]+)', text)  # the final entry's, before the top-level copy
    c = run.meta.claim("total_flos")
    assert (c["value"], c["where"], c["unit"]) == (flos, f"{p}:{line}", "FLOP") and flos == 3.718809382109184e16
    assert "never used as model FLOPs" in c["counts"] and run.meta.model_flops_per_step is None

    r = realdata_dir("hf_trainer", "Jaong_Checkpoint-of-CPT_all_results.json")
    sps, line = _first(r'"train_samples_per_second": ([0-9.e+-]+)', r.read_text())
    c = load_run(r).meta.claim("samples_per_s")
    assert (c["value"], c["where"]) == (sps, f"{r}:{line}")

    s = realdata_dir("hf_trainer", "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt")
    text = s.read_text()
    sps, line = _first(r"'train_samples_per_second': ([0-9.e+-]+)", text)
    run = load_run(s)
    c = run.meta.claim("samples_per_s")
    assert (c["value"], c["where"]) == (sps, f"{s}:{line}") and (sps, line) == (28.711, 1219)
    assert "total_flos" not in text and run.meta.claim("total_flos") is None  # stdout does not print it


def test_total_flos_of_zero_is_a_note_not_a_claim(tmp_path):
    hist = [dict(h) for h in HISTORY]
    hist[-1].update(total_flos=0.0, train_samples_per_second=3.2)  # what FSDP runs log
    p = tmp_path / "trainer_state.json"
    p.write_text(state(hist, total_flos=0.0))
    run = hf_trainer.load(p)
    assert run.meta.claim("total_flos") is None
    assert any(n.startswith("total_flos is 0.0 at") and "not zero work" in n for n in run.meta.report.notes)
    assert run.meta.claim("samples_per_s")["value"] == 3.2


# --- one bad record no longer refuses the file ------------------------------------------------------
RESULTS_BYTES = (b'{\n  "epoch": 1.0,\n  "run_tag": "fsdp\xff8",\n  "train_runtime": 250.0,\n'
                 b'  "train_samples_per_second": 6.4\n}\n')


def test_a_non_utf8_byte_in_a_results_file_is_counted_and_the_file_kept(tmp_path):
    p = tmp_path / "all_results.json"
    p.write_bytes(RESULTS_BYTES)  # 0xFF on line 3, in the value of "run_tag"
    run = load_quiet(p)
    rep = run.meta.report
    assert rep.skipped == {"bytes that are not UTF-8 (replaced, record kept)": 1}
    assert rep.first_lines["bytes that are not UTF-8 (replaced, record kept)"] == [3]
    assert run.meta.extra["results"]["all_results.json"]["train_runtime"] == 250.0
    assert run.meta.claim("samples_per_s")["value"] == 6.4
    with pytest.raises(LoadError) as exc:
        hf_trainer.load(p, strict=True)
    assert (exc.value.line, exc.value.field) == (3, "run_tag") and str(p) in str(exc.value)
    (tmp_path / "trainer_state.json").write_text(state(HISTORY))  # beside a state: still read
    run = load_quiet(tmp_path / "trainer_state.json")
    assert run.meta.report.first_lines["bytes that are not UTF-8 (replaced, record kept)"] == ["all_results.json:3"]
    assert run.meta.extra["results"]["all_results.json"]["train_samples_per_second"] == 6.4


def test_an_entry_nested_too_deeply_is_passed_over(tmp_path):
    text = state(HISTORY).replace(
        '"log_history": [', '"log_history": [\n  {"deep": ' + "[" * 100_000 + "]" * 100_000 + "},", 1)
    p = tmp_path / "trainer_state.json"
    p.write_text(text)
    run = load_quiet(p)
    reason = "JSON nested too deeply to read"
    assert run.meta.report.skipped == {reason: 1}
    assert run.meta.report.examples[reason].startswith("entry passed over: ")
    assert run.meta.report.first_lines[reason] == [text.count("\n", 0, text.index('{"deep"')) + 1]
    assert len(run.tables["log_history"]) == len(HISTORY) and len(run.steps) == 100  # the rest read
    with pytest.raises(LoadError, match="nested too deeply"):
        hf_trainer.load(p, strict=True)


def test_a_step_gap_too_long_to_expand_is_counted(tmp_path):
    reason = "step gap too long to be one log interval (no step rows for this attempt)"
    p = tmp_path / "trainer_state.json"
    text = state(HISTORY, global_step=10**12)  # a damaged global_step: 10^12 rows if expanded
    p.write_text(text)
    run = load_quiet(p)
    assert run.meta.report.skipped == {reason: 1}
    assert run.meta.report.first_lines[reason] == [text.count("\n", 0, text.index('"global_step"')) + 1]
    assert run.steps.empty and len(run.tables["log_history"]) == len(HISTORY)
    hist = [dict(h) for h in HISTORY]
    hist[2]["step"] = 3e19  # beyond int64
    p.write_text(state(hist))
    assert load_quiet(p).meta.report.skipped == {"step is not a non-negative integer": 1}
    out = tmp_path / "out.txt"  # stdout: the interval inferred from a damaged steps/s
    out.write_text(stdout_text().replace("'train_steps_per_second': 0.414", "'train_steps_per_second': 1e300"))
    run = load_quiet(out)
    assert run.meta.report.skipped == {reason: 1} and run.steps.empty


def test_an_attempt_past_the_row_budget_is_not_expanded(tmp_path):
    # 30 entries 100 000 steps apart (each gap allowed) would invent 3 million rows from a 3 KB
    # file: past the load's budget (rules.MIN_EXPANDED_ROWS, 2 million), so none are invented.
    hist = [{"loss": 1.0, "step": 100_000 * i} for i in range(1, 31)]
    hist.append({"step": 3_000_000, "train_runtime": 3e5, "train_steps_per_second": 10.0})
    p = tmp_path / "trainer_state.json"
    p.write_text(state(hist, global_step=3_000_000))
    run = hf_trainer.load(p)
    assert run.steps.empty and run.meta.report.skipped == {}
    assert any("would pass this load's budget of rows" in n for n in run.meta.report.notes)
    assert len(run.tables["log_history"]) == 31


def test_many_entries_are_read_in_linear_time(tmp_path):
    from _timing import explain, growth, linear_bound

    runs, paths = {}, {}

    def load(n: int):
        hist = [{"loss": 1.0, "learning_rate": 1e-5, "epoch": i / n, "step": i} for i in range(1, n + 1)]
        hist.append({"step": n, "train_runtime": 600.0, "train_steps_per_second": 100.0})
        p = paths[n] = tmp_path / str(n) / "trainer_state.json"
        p.parent.mkdir()
        p.write_text(state(hist, global_step=n))
        return lambda: runs.__setitem__(n, hf_trainer.load(p))

    # 5,000 and 20,000 entries: counting lines from the start for each entry took minutes (for 60,000)
    ratio = growth(load, 5_000)
    assert ratio < linear_bound(), explain(ratio, what="the entries")
    n = 20_000
    run, text = runs[n], paths[n].read_text()
    assert (len(run.steps) == n
            and run.tables["log_history"]["line"].iloc[-1] == text.count("\n", 0, text.rindex("{")) + 1)


# --- saved Runs and damaged copies --------------------------------------------------------------------
@pytest.mark.realdata
def test_every_real_file_reads_back_equal_after_save_run(tmp_path):
    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    folder = realdata_dir("hf_trainer")
    for p in [*sorted(folder.iterdir()), folder]:
        run = load_run(p)
        assert load_run(save_run(run, tmp_path / "run.parquet"), format="run_parquet") == run, p.name


@pytest.mark.realdata
@pytest.mark.parametrize("name", ["Jaong_Checkpoint-of-CPT_trainer_state.json",
                                  "alpaca7b_fsdp8xA100_run-v7i3k2p0_trainer_stdout_dicts.txt"])
def test_damaged_copies_of_real_logs_load_or_fail_cleanly(tmp_path, name):
    import random

    from _corpus import check, materialise, mutations

    from mfu_toolkit.io import load_run
    from mfu_toolkit.run import save_run

    src = realdata_dir("hf_trainer", name)
    save_run(load_run(src), tmp_path / "undamaged.parquet")  # the children fork with pyarrow ready
    rng = random.Random(f"hf_trainer:{name}")
    problems = []
    for kind, data in mutations(src.read_bytes(), rng):  # truncation, flips, NaN/huge numbers, NUL, CR, BOM, ...
        verdict = check(materialise(src, kind, data, tmp_path), "hf_trainer")
        if verdict != "ok":
            problems.append(f"{kind}: {verdict}")
    assert not problems, problems


# --- regexes ------------------------------------------------------------------------------------------
ANCHORED = {"_WS_RE"}  # applied with match at one position only


@pytest.mark.parametrize("ch", list('[0 {"\\,:a\n-'))
def test_the_format_regexes_take_linear_time_on_an_80_kb_line(ch):
    from _corpus import assert_regexes_linear

    prefixes = ("", '"cat": "kernel", "name": "', '"log_history": ', "{'loss': ", "gpu.0.", "rank")
    assert_regexes_linear(hf_trainer, ch, prefixes=prefixes, anchored=ANCHORED)


def test_a_state_after_a_byte_order_mark_is_read_as_the_state(tmp_path):
    p = tmp_path / "trainer_state.json"
    p.write_bytes(b"\xef\xbb\xbf" + state(HISTORY).encode())  # as some Windows editors save it
    run = hf_trainer.load(p)
    assert len(run.steps) == 100 and len(run.tables["log_history"]) == len(HISTORY)


def test_a_log_opening_with_an_earlier_trainings_summary_keeps_that_attempt_as_an_event(tmp_path):
    # The first line closes a training whose step lines are not in the file: attempt 0 has no step
    # rows. It stays in the Run as a zero-length "other" event (a Run never skips an attempt number);
    # before, the load failed with "attempt numbers must start at 0; the first is 1".
    p = tmp_path / "train.log"
    p.write_text("{'train_runtime': 10.0, 'train_samples_per_second': 3.0, 'train_steps_per_second': 0.5, "
                 "'epoch': 1.0}\n{'loss': 1.0, 'learning_rate': 1e-05, 'epoch': 0.1}\n"
                 "{'train_runtime': 20.0, 'train_samples_per_second': 3.0, 'train_steps_per_second': 0.5, "
                 "'epoch': 1.0}\n")
    run = load_run(p, "hf_trainer")
    assert set(run.steps["attempt"]) == {1} and len(run.steps) == 10  # 20 s × 0.5 steps/s
    zero = run.events[run.events["attempt"] == 0]
    assert zero["kind"].tolist() == ["other"] and (zero["end_s"] == zero["start_s"]).all()
    assert any(n.startswith("attempt 0: no train_runtime (or no steps)") for n in run.meta.report.notes)
