"""``analysis.answer``: the one answer every front end renders, against hand computations."""

from __future__ import annotations

import json
import math

import pytest

from mfu_toolkit.analysis.answer import CHECK_CODES, Answer, Check, build_answer
from mfu_toolkit.facts import InputError
from mfu_toolkit.formulas import MFUAbove100Error
from mfu_toolkit.inputs import apply_inputs
from mfu_toolkit.render import answer_dict, answer_sections, answer_text
from mfu_toolkit.render.spoken import advice_text, missing_text
from mfu_toolkit.run import Run, RunMeta

H100_BF16 = 989.4e12  # H100 SXM bf16 dense, https://www.nvidia.com/en-us/data-center/h100/


def _steps(n: int = 4, step_s: float = 2.0) -> dict:
    return {"attempt": [0] * n, "step": list(range(1, n + 1)), "rank": [-1] * n,
            "start_s": [i * step_s for i in range(n)], "end_s": [(i + 1) * step_s for i in range(n)]}


def _hand_run(*, claims=(), facts=(), extra=None, **inputs) -> Run:
    """4 job-level steps of 2 s, then a 2 s evaluation: wall 10 s."""
    events = [{"kind": "eval", "start_s": 8.0, "end_s": 10.0, "attempt": 0, "rank": -1, "detail": ""}]
    meta = RunMeta(name="hand", source_path="/logs/hand.log", source_format="table", claims=list(claims),
                   facts=list(facts), extra=dict(extra or {}))
    run = Run.build(_steps(), events, meta)
    kw = dict(accelerator="H100", dtype="bf16", n_accelerators=4, flops_per_step=1e15)
    kw.update(inputs)
    return apply_inputs(run, interface="cli", **{k: v for k, v in kw.items() if v is not None})


def test_the_headline_matches_the_hand_computation():
    a = build_answer(_hand_run())
    h = a.headline
    # steady MFU = FLOPs per step / ideal step / (N × P) = 1e15 / 2 s / (4 × 989.4 TFLOP/s)
    assert h["steady_state_mfu"] == pytest.approx(1e15 / 2.0 / (4 * H100_BF16), rel=1e-12)
    # end to end = useful FLOPs / wall = 4e15 / 10 s / (4 × 989.4 TFLOP/s)
    assert h["end_to_end_mfu"] == pytest.approx(4e15 / 10.0 / (4 * H100_BF16), rel=1e-12)
    assert h["numerator"]["model_flops_per_step"] == pytest.approx(1e15)
    assert h["numerator"]["source"] == "command line --flops-per-step"
    assert h["denominator"]["cluster_peak_flops"] == pytest.approx(4 * H100_BF16)
    assert h["denominator"]["peak_source"] == "https://www.nvidia.com/en-us/data-center/h100/"
    # the only loss: the 2 s evaluation, 20 % of the 10 s wall time
    assert a.losses == ({"category": "eval", "seconds": pytest.approx(2.0), "share": pytest.approx(0.2)},)
    text = answer_text(a)
    assert "Steady-state MFU: 12.63% (ideal step)" in text and "End-to-end MFU: 10.11% (whole wall time)" in text
    assert "denominator: 4 × 989.4 TFLOP/s = 3.958 PFLOP/s (H100 SXM bf16 dense" in text
    assert "1. eval: 2.000 s (20.00% of wall time)" in text


def test_facts_used_say_where_each_came_from():
    a = build_answer(_hand_run())
    where = {f["name"]: f["where"] for f in a.facts}
    assert where["accelerator"] == "command line --accelerator"
    assert where["n_accelerators"] == "command line --gpus"
    assert where["dtype"] == "command line --dtype"
    assert where["model_flops_per_step"] == "command line --flops-per-step"
    stated = {"name": "seq_len", "value": 2048, "source": "stated", "where": "/logs/hand.log:7", "text": "seq 2048"}
    a = build_answer(_hand_run(facts=[stated], seq_len=None))
    assert not [f for f in a.facts if f["name"] == "seq_len"]  # the fact is stated but never applied here
    run = _hand_run(facts=[stated])
    run = run.replace(meta=run.meta.replace(seq_len=2048))
    assert {f["name"]: f["where"] for f in build_answer(run).facts}["seq_len"] == "stated in the log at hand.log:7"


def test_claims_are_checked_with_the_ratio_and_the_peak_the_framework_used():
    # ours: 1e15 FLOPs / 2 s / 4 GPUs = 125 TFLOP/s per GPU. The log claims 125 TFLOP/s (agrees) and
    # an MFU of 6.32 %: its peak is 125 / 0.0632 = 1,977.8 TFLOP/s, the H100's fp8 dense 1,978.9.
    claims = [{"metric": "tflops_per_accelerator", "value": 125.0, "unit": "TFLOP/s per GPU", "counts": "",
               "where": "/logs/hand.log:3", "n": 1, "statistic": "value"},
              {"metric": "mfu", "value": 0.0632, "unit": "fraction", "counts": "", "where": "/logs/hand.log:3",
               "n": 1, "statistic": "value"}]
    a = build_answer(_hand_run(claims=claims))
    by = {c.name: c for c in a.checks}
    assert by["claim tflops_per_accelerator"].status == "ok"
    assert "ours 125 (ratio 1.00): agrees within 10%" in by["claim tflops_per_accelerator"].message
    mfu = by["claim mfu"]
    ratio = (1e15 / 2.0 / (4 * H100_BF16)) / 0.0632
    assert mfu.status == "warn" and f"(ratio {ratio:.2f})" in mfu.message
    assert (mfu.code, mfu.field) == ("claim.mismatch", "mfu")
    assert "its TFLOP/s over its MFU is 1,977.85 TFLOP/s, the registry's H100 SXM fp8 dense" in mfu.message
    assert mfu in a.warnings and all(c.status == "warn" for c in a.warnings)


def test_a_given_accelerator_is_compared_with_the_stated_one_through_the_registry():
    same = {"name": "accelerator", "value": "NVIDIA H100 80GB HBM3", "source": "stated", "where": "/logs/hand.log:1",
            "text": ""}
    a = build_answer(_hand_run(facts=[same]))
    assert [c.status for c in a.checks if c.name.startswith("fact")] == ["ok"]
    other = {"name": "platform", "value": "tpu-v5p", "source": "stated", "where": "/logs/hand.log:4", "text": ""}
    a = build_answer(_hand_run(facts=[other], accelerator="TPU v6e"))
    conflict = [c for c in a.checks if c.name == "fact accelerator"]
    assert len(conflict) == 1 and conflict[0].status == "warn"
    assert (conflict[0].code, conflict[0].field) == ("facts.conflict", "accelerator")
    assert conflict[0].message == ("accelerator given as 'TPU v6e' (command line --accelerator), but the log "
                                   "states 'tpu-v5p' at hand.log:4; the given value is used")


def test_missing_facts_are_asked_for_once_in_the_interface_s_terms():
    run = Run.build(_steps(), None, RunMeta(name="bare"))
    for interface, want in (("cli", ["model FLOPs per step: give --preset NAME --seq-len N --global-batch N or "
                                     "--flops-per-step F", "accelerator count: give --gpus N (or --packages N)",
                                     "accelerator: give --accelerator NAME (and --dtype DTYPE when not bf16)"]),
                            ("make", ["model FLOPs per step: give PRESET=NAME SEQ_LEN=N GLOBAL_BATCH=N or "
                                      "FLOPS_PER_STEP=F", "accelerator count: give GPUS=N (or PACKAGES=N)",
                                      "accelerator: give ACCELERATOR=NAME (and DTYPE=DTYPE when not bf16)"])):
        a = build_answer(run)
        assert [m["field"] for m in a.missing] == ["model_flops_per_step", "n_accelerators",
                                                   "peak_flops_per_accelerator"]
        assert [missing_text(m, interface) for m in a.missing] == want
        text = answer_text(a, interface=interface)
        assert text.count(want[1].split("give ")[1]) == 1, "asked for once"
        assert "meta." not in text and "with_accelerator" not in text
        assert a.headline["reasons"]["steady_state_mfu"] == "needs the missing facts listed below"


def test_a_log_without_timed_steps_reports_what_it_holds():
    events = [{"kind": "init", "start_s": 0.0, "end_s": 5.0, "attempt": 0, "rank": -1, "detail": ""}]
    run = Run.build(None, events, RunMeta(name="no steps"))
    a = build_answer(run)
    assert not a.timed and a.missing == () and a.losses == ()
    text = answer_text(a)
    assert "Wall time: 0.000 s" not in text and "Waterfall" not in text
    assert "MFU: not measurable: the log has no timed steps" in text
    assert "What the log holds" in text and "Events: init × 1" in text
    assert a.warnings[0].name == "load" and "no timed steps" in a.warnings[0].message
    assert [h for h, _ in answer_sections(a)] == ["The answer", "Stragglers", "Checks", "Facts used",
                                                  "What the log holds"]


def test_straggler_verdict_names_the_rank():
    # 4 ranks, 4 steps; rank 2 takes 1.3 s where the others take 1.0 s
    rows = {"attempt": [], "step": [], "rank": [], "start_s": [], "end_s": []}
    for k in range(4):
        for r in range(4):
            rows["attempt"].append(0)
            rows["step"].append(k + 1)
            rows["rank"].append(r)
            rows["start_s"].append(2.0 * k)
            rows["end_s"].append(2.0 * k + (1.3 if r == 2 else 1.0))
    a = build_answer(Run.build(rows, None, RunMeta(name="ranks")))
    s = a.stragglers
    assert s["culprit"] == "rank 2" and "persistent straggler: rank 2" in s["verdict"]
    # waited 0.3 s per step (max 1.3 − median 1.0) over a wall of 7.3 s
    assert s["seconds"] == pytest.approx(4 * 0.3) and s["share"] == pytest.approx(1.2 / 7.3)
    assert "assumes no pipeline" in s["basis"]
    assert "Culprit: rank 2" in answer_text(a)
    # the slow rank rotates: nobody is slowest in most steps
    rows["end_s"] = [2.0 * (i // 4) + (1.3 if (i % 4) == (i // 4) else 1.0) for i in range(16)]
    s = build_answer(Run.build(rows, None, RunMeta(name="rotating"))).stragglers
    assert s["culprit"] == "no single culprit" and s["kind"] == "spread"


def test_checkpoint_advice_follows_young_and_daly():
    a = build_answer(_hand_run(), checkpoint_write_s=10.0, checkpoint_every_steps=50, mtbf_hours=1)
    c = a.checkpoint
    d, m = 10.0, 3600.0
    young = math.sqrt(2 * d * m)  # Young 1974
    daly = young * (1 + math.sqrt(d / (2 * m)) / 3 + (d / (2 * m)) / 9) - d  # Daly 2006, δ < 2M
    assert c["young_interval_s"] == pytest.approx(young, rel=1e-12)
    assert c["daly_interval_s"] == pytest.approx(daly, rel=1e-12)
    # the run checkpoints every 50 steps of 2 s: 100 s of compute + 10 s write, 0.38 × Daly's 261.7 s
    assert c["interval_s"] == pytest.approx(110.0) and c["interval_vs_daly"] == pytest.approx(100.0 / daly)
    assert "checkpoint less often" in c["advice"]
    missing = build_answer(_hand_run(), checkpoint_write_s=10.0).checkpoint
    assert missing["needs"] == ["mtbf_hours"] and missing["advice"] == "interval advice needs the job's MTBF"
    assert advice_text(missing, "make").endswith("needs the job's MTBF: give MTBF_HOURS=H")
    assert build_answer(_hand_run()).checkpoint is None  # no checkpoint events, nothing given


def test_time_to_train_is_shown_where_the_run_states_it():
    a = build_answer(_hand_run(extra={"time_to_train_s": 2986.5}))
    assert a.headline["time_to_train_s"] == 2986.5
    assert "Time to train (MLPerf run_start to run_stop): 2,986.5 s" in answer_text(a)


def test_the_json_has_the_contracted_keys_and_check_schema():
    a = build_answer(_hand_run())
    doc = json.loads(json.dumps(answer_dict(a), allow_nan=False))
    for key in ("headline", "losses", "stragglers", "checkpoint", "checks", "facts", "missing", "breakdown",
                "scorecard", "window", "load"):
        assert key in doc
    # every check carries its code (and the field it is about, or None) beside the phrased message
    assert doc["checks"] and all(set(c) - {"ratio"} == {"name", "code", "field", "status", "message"}
                                 for c in doc["checks"])
    assert all(c["code"] in CHECK_CODES for c in doc["checks"])
    assert {c["status"] for c in doc["checks"]} <= {"ok", "warn", "info"}
    assert math.isclose(sum(r["seconds"] for r in doc["breakdown"]), 10.0, rel_tol=1e-12)


@pytest.mark.parametrize("width", [100, 60])
def test_the_text_fits_its_width(width):
    claims = [{"metric": "mfu", "value": 0.0632, "unit": "fraction", "counts": "", "where": "/a/very/long/" * 9
               + "hand.log:3", "n": 1, "statistic": "value"}]
    text = answer_text(build_answer(_hand_run(claims=claims)), width=width)
    assert max(len(line) for line in text.splitlines()) <= width
    assert "e-0" not in text and "nan" not in text.lower().replace("n/a", "")


def test_sections_are_in_reading_order():
    heads = [h for h, _ in answer_sections(build_answer(_hand_run()))]
    assert heads == ["The answer", "Largest losses", "Stragglers", "Checks", "Facts used", "Waterfall",
                     "Scorecard", "Steady-state window"]


def test_bad_options_and_impossible_mfu():
    with pytest.raises(InputError, match=r"^checkpoint_write_s=-1: expected a finite number > 0") as bad:
        build_answer(_hand_run(), checkpoint_write_s=-1)
    assert (bad.value.field, bad.value.value) == ("checkpoint_write_s", -1)  # a front end says it in its terms
    with pytest.raises(InputError, match=r"^warmup_steps=-2: expected a whole number >= 0"):
        build_answer(_hand_run(), warmup_steps=-2)
    with pytest.raises(ValueError, match="interface must be one of"):
        answer_text(build_answer(_hand_run()), interface="web")
    with pytest.warns(DeprecationWarning, match=r"build_answer\(interface=...\) is ignored"):
        build_answer(_hand_run(), interface="cli")
    with pytest.raises(TypeError, match="must be a Run or an Accounting"):
        build_answer("run.log")
    with pytest.raises(MFUAbove100Error):  # 1e18 FLOPs per 2 s step on 4 H100s
        build_answer(_hand_run(flops_per_step=1e18))
    with pytest.raises(ValueError, match="Check.status must be one of ok, warn, info"):
        Check("x", "error", "y")
    assert isinstance(build_answer(_hand_run()), Answer)


# --------------------------------------------------------------------------------------------
# every message in the interface's terms; where each part of the denominator came from


def _bare_run() -> Run:
    """The hand run with no FLOPs, no accelerator and no count: what the answer must ask for."""
    events = [{"kind": "eval", "start_s": 8.0, "end_s": 10.0, "attempt": 0, "rank": -1, "detail": ""}]
    return Run.build(_steps(), events, RunMeta(name="hand", source_path="/logs/hand.log", source_format="table"))


@pytest.mark.parametrize(("interface", "flops", "count"), [
    ("cli", "--flops-per-step F", "--gpus N"),
    ("make", "FLOPS_PER_STEP=F", "GPUS=N"),
    ("python", "flops_per_step=F", "n_accelerators=N"),
])
def test_the_json_asks_in_the_interfaces_terms(interface, flops, count):
    # Before, summary.reasons carried "set meta.model_flops_per_step" and
    # "resolve it with meta.with_accelerator(name, dtype)" in every front end.
    doc = answer_dict(build_answer(_bare_run()), interface=interface)
    text = json.dumps(doc)
    for internal in ("meta.", "set meta", "with_accelerator", "resolve it with"):
        assert internal not in text, internal
    reason = doc["summary"]["reasons"]["steady_state_mfu"]
    assert "model FLOPs per step unknown (give " in reason and flops in reason
    assert f"unknown accelerator count (give {count})" in reason


def test_an_undated_log_is_titled_with_the_date_passed():
    run = _hand_run()
    assert build_answer(run, report_date="2026-01-31").title == "MFU report: hand.log (table log), report of 2026-01-31"
    # the builder reads no clock: without a date it says so, and the same log gives the same title
    assert build_answer(run).title == "MFU report: hand.log (table log), undated"
    import datetime

    assert build_answer(run, report_date=datetime.date(2026, 2, 1)).title.endswith("report of 2026-02-01")
    dated = run.replace(meta=run.meta.replace(extra={**run.meta.extra, "t0_wallclock": "2024-10-02T19:13:51Z"}))
    assert build_answer(dated, report_date="2026-01-31").title.endswith("run of 2024-10-02")
    with pytest.raises(ValueError, match=r"report_date must be a date as YYYY-MM-DD .*; got '31/01/2026'"):
        build_answer(run, report_date="31/01/2026")


def test_the_denominator_says_where_each_part_came_from():
    a = build_answer(_hand_run(dtype=None))  # --accelerator given, no dtype: bf16 assumed
    src = answer_dict(a, interface="make")["headline"]["denominator"]["sources"]
    assert src == {"accelerator": "command line --accelerator", "count": "command line --gpus",
                   "dtype": "default (bf16 assumed; give DTYPE=DTYPE)",
                   "peak": "https://www.nvidia.com/en-us/data-center/h100/"}
    dtype = {f["name"]: f for f in a.facts}["dtype"]
    assert (dtype["where"], dtype["give"], dtype["assumed"]) == ("default (bf16 assumed)", "dtype", True)
    assert "dtype default (bf16 assumed; give DTYPE=DTYPE)" in " ".join(answer_text(a, interface="make").split())


def _per_rank_run(n_ranks: int) -> Run:
    rows = {k: [] for k in ("attempt", "step", "rank", "start_s", "end_s")}
    for step in range(1, 5):
        for rank in range(n_ranks):
            for k, v in zip(rows, (0, step, rank, 2.0 * (step - 1), 2.0 * step), strict=True):
                rows[k].append(v)
    return Run.build(rows, None, RunMeta(name="ranks", source_path="/logs/ranks.csv", source_format="table"))


def test_a_per_rank_log_without_a_world_size_is_asked_for_its_count():
    run = apply_inputs(_per_rank_run(4), interface="cli", accelerator="H100", flops_per_step=1e15)
    a = build_answer(run)
    assert a.headline["denominator"]["n_accelerators"] is None  # 4 ranks seen are not taken as the job's size
    count = {m["field"]: m for m in a.missing}["n_accelerators"]
    assert (count["n_ranks"], count["ranks_text"]) == (4, "4 ranks (0–3)")
    assert missing_text(count, "cli") == (
        "accelerator count: the log holds steps of 4 ranks (0–3) but states no world size; give --gpus N "
        "(--gpus 4 if those are all of the job's ranks) (or --packages N)")
    given = build_answer(apply_inputs(run, interface="make", n_accelerators=64))
    check = {c.name: c for c in given.checks}["accelerator count"]
    assert check.status == "info" and check.message == (
        "MFU divides by 64 accelerators (make variable GPUS); the log holds steps of 4 ranks (0–3) only, "
        "a sample of the job's ranks")
    same = build_answer(apply_inputs(run, interface="cli", n_accelerators=4))
    assert {c.name: c.status for c in same.checks}["accelerator count"] == "ok"
