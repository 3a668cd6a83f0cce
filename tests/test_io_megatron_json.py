"""Megatron CI golden-values JSON (Megatron-LM and Megatron-Bridge layouts): samples, then real files."""

from __future__ import annotations

import json
import math
import random
import re
import statistics
import warnings

import pytest
from _corpus import mutations
from _realdata import files, realdata  # noqa: F401
from _samples import RESUME_CONFIG, write_megatron_json
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import load_run, rules
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.formats import megatron_json
from mfu_toolkit.run import LoadError, LoadWarning, SchemaError

BRIDGE = "NVIDIA-NeMo_Megatron-Bridge_golden_values_deepseek_pretrain_fsdp_gb200.json"


# --- Megatron-LM layout: samples -----------------------------------------------------------------
def test_golden_values_steps_and_nan(tmp_path):
    p = write_megatron_json(tmp_path)
    with pytest.warns(LoadWarning):
        run = load_run(p)
    assert run.meta.source_format == "megatron_json" and run.meta.timing == "duration_only"
    assert run.steps["step"].tolist() == list(range(2, 11))
    assert run.steps["end_s"].iloc[-1] == pytest.approx(4.5)
    assert run.meta.report.skipped == {"nan iteration-time": 1}
    lines = p.read_text().splitlines()
    (ln,) = run.meta.report.first_lines["nan iteration-time"]
    assert '"1": "nan"' in lines[ln - 1]
    assert run.tables["metrics"]["lm loss"].notna().all()


def test_resume_from_config(tmp_path):
    p = write_megatron_json(tmp_path, config=RESUME_CONFIG)
    with pytest.warns(LoadWarning):
        run = load_run(p)
    assert run.n_attempts == 2
    assert run.steps.groupby("attempt")["step"].min().tolist() == [2, 6]
    kinds = run.events.sort_values("start_s")["kind"].tolist()
    assert kinds == ["checkpoint_save", "restart"]
    assert run.meta.global_batch == 32.0 and run.meta.seq_len == 1024
    assert any("resume at step 6" in n for n in run.meta.report.notes)
    # the caller can switch the config off, or say where the resume is
    with pytest.warns(LoadWarning):
        assert load_run(p, config=False).n_attempts == 1
    with pytest.warns(LoadWarning):
        assert load_run(p, config=False, resume_at=[4, 8]).n_attempts == 3


def test_options_are_checked_when_given():
    assert megatron_json.Options(resume_at=[8, 4, 8]).resume_at == (4, 8)
    for bad in ({"resume_at": -1}, {"resume_at": [1.5]}, {"config": True}, {"config": 3}):
        with pytest.raises(ValueError):
            megatron_json.Options(**bad)


def test_list_values_and_bad_values(tmp_path):
    # steps 0, 2, 4, 6, 8: "x" (step 2) is not a number, -1.0 (step 6) is negative
    doc = {"iteration-time": {"start_step": 0, "end_step": 8, "step_interval": 2, "values": [1.0, "x", 2.0, -1.0, 3.0]}}
    p = tmp_path / "g.json"
    p.write_text(json.dumps(doc))
    with pytest.warns(LoadWarning):
        run = megatron_json.load(p)
    assert run.steps["step"].tolist() == [0, 4, 8]
    # each bad value is one skipped record (the old loader counted "x" twice: non-numeric and nan)
    assert run.meta.report.skipped == {rules.NON_NUMERIC: 1, rules.NEGATIVE_DURATION: 1}
    assert run.meta.report.examples[rules.NEGATIVE_DURATION].startswith("iteration-time: ")
    assert any("sampled every 2 steps" in n for n in run.meta.report.notes)
    assert math.isnan(run.tables["metrics"].set_index("step").loc[2, "iteration-time"])


def test_truncated_json_names_the_line(tmp_path):
    p = write_megatron_json(tmp_path)
    text = p.read_text()
    p.write_text(text[: len(text) // 2])
    with pytest.raises(LoadError, match="not valid JSON") as info:
        megatron_json.load(p)
    assert info.value.line is not None


def test_config_yaml_loads_its_values(tmp_path):
    p = write_megatron_json(tmp_path, config=RESUME_CONFIG)
    with pytest.warns(LoadWarning):
        run = load_run(tmp_path / "model_config.yaml")
    assert run.meta.source_format == "megatron_json" and run.n_attempts == 2
    assert run.meta.extra["values_file"] == str(p) and run.meta.name == p.name


# --- one bad value never refuses the file ----------------------------------------------------------
def _lm(tmp_path, values, name="g.json"):
    p = tmp_path / name
    p.write_text(json.dumps({"iteration-time": {"start_step": 1, "end_step": 3, "step_interval": 1, "values": values}},
                            indent=4))
    return p


def test_step_keys_that_are_not_steps_are_counted(tmp_path):
    # the old loader made step rows of "-1" and of a step past int64
    p = _lm(tmp_path, {"-1": 1.0, "99999999999999999999999": 1.0, "1" * 5000: 1.0, "2": 1.0})
    with pytest.warns(LoadWarning):
        run = load_run(p, format="megatron_json")
    assert run.steps["step"].tolist() == [2]
    assert run.meta.report.skipped == {rules.BAD_STEP: 3}


def test_a_huge_iteration_time_is_counted_not_a_schema_error(tmp_path):
    # two steps of 1e308 s summed to inf: the old loader's Run failed validation as a whole
    p = _lm(tmp_path, {"1": 1e308, "2": 1e308, "3": 1.5})
    with pytest.warns(LoadWarning):
        run = load_run(p, format="megatron_json")
    assert run.steps[["step", "start_s", "end_s"]].values.tolist() == [[3, 0.0, 1.5]]
    lines = p.read_text().split("\n")
    at = [i for i, line in enumerate(lines, start=1) if "1e+308" in line]  # the two values, as written
    assert len(at) == 2
    assert run.meta.report.first_lines == {rules.VALUE_OUT_OF_RANGE: at}
    assert run.meta.report.examples[rules.VALUE_OUT_OF_RANGE].startswith("iteration-time over 30 days: ")


def test_deep_nesting_is_the_toolkits_error(tmp_path):
    p = tmp_path / "g.json"
    p.write_text('{"iteration-time": {"values": {"1": 1.0}}, "x": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(LoadError, match="nested too deeply") as info:  # was an InternalLoadError
        load_run(p, format="megatron_json")
    assert not isinstance(info.value, InternalLoadError)


def test_line_numbers_are_found_in_one_pass(tmp_path):
    # 3000 metrics: the old loader scanned the whole file once per metric (30 s here); now one pass.
    # 750 and 3000 metrics: 4x the metrics (and the file)
    runs = {}

    def load(n: int):
        doc = {f"m{k}": {"start_step": 1, "end_step": 5, "step_interval": 1,
                         "values": {str(s): 1.0 for s in range(1, 6)}} for k in range(n)}
        doc["iteration-time"] = {"start_step": 1, "end_step": 5, "step_interval": 1,
                                 "values": {str(s): 0.5 for s in range(1, 6)}}
        p = tmp_path / str(n) / "g.json"
        p.parent.mkdir()
        p.write_text(json.dumps(doc, indent=4))
        return lambda: runs.__setitem__(n, load_run(p, format="megatron_json"))

    ratio = growth(load, 750)
    assert ratio < linear_bound(), explain(ratio, what="the metrics")
    run = runs[3000]
    assert len(run.tables["metrics"].columns) == 3002 and len(run.steps) == 5


@pytest.mark.parametrize("char", ["[", "0", " "])
def test_long_lines_of_one_character_are_quick(tmp_path, char):
    runs = {}

    def load(n: int):
        text = char * n
        (tmp_path / str(n)).mkdir()
        cfg = tmp_path / str(n) / "g_model_config.yaml"  # a config line that a backtracking regex would take minutes on
        cfg.write_text(f"MODEL_ARGS:\n  --global-batch-size: {text}x\n  --{text}\n")
        p = tmp_path / str(n) / "g_values.json"
        p.write_text('{\n"iteration-time": {"values": {\n"' + text + '": 1.0,\n"2": 1.0}}}\n')

        def work():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", LoadWarning)
                runs[n] = load_run(p, format="megatron_json")
        return work

    ratio = growth(load, 80_000)  # lines of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    for run in runs.values():
        assert run.steps["step"].tolist() == [2] and run.meta.fact("global_batch") is None
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


# --- Megatron-LM layout: the real files ---------------------------------------------------------
def test_real_golden_values(realdata):  # noqa: F811
    for path in files(realdata / "megatron", "*.json"):
        doc = json.loads(path.read_text())
        vals = doc["iteration-time"]["values"]
        finite = {int(k): float(v) for k, v in vals.items() if not (isinstance(v, str) or math.isnan(v))}
        with pytest.warns(LoadWarning) if len(finite) < len(vals) else warnings.catch_warnings():
            if len(finite) == len(vals):
                warnings.simplefilter("error", LoadWarning)
            run = load_run(path)
        assert run.meta.source_format == "megatron_json" and run.meta.time_unit == "s"
        assert run.steps["step"].tolist() == sorted(finite)
        assert (run.steps["end_s"] - run.steps["start_s"]).sum() == pytest.approx(sum(finite.values()))
        assert run.meta.report.skipped.get("nan iteration-time", 0) == len(vals) - len(finite)
        # no metric of these files is a throughput, so the files make no claim
        assert not any("flop" in k.lower() or "throughput" in k.lower() or "utilization" in k.lower() for k in doc)
        assert run.meta.claims == []


def test_real_resume_case_counts_the_restart(realdata):  # noqa: F811
    (path,) = files(realdata / "megatron", "*resume*.json")
    (cfg,) = files(realdata / "megatron", "*resume*model_config.yaml")
    save = int(re.search(r"--save-interval:\s*(\d+)", cfg.read_text()).group(1))
    assert "ckpt-resume" in cfg.read_text()
    with pytest.warns(LoadWarning):
        run = load_run(path)
    assert run.n_attempts == 2
    first_of_1 = run.steps.loc[run.steps["attempt"] == 1, "step"].min()
    last_of_0 = run.steps.loc[run.steps["attempt"] == 0, "step"].max()
    assert (last_of_0, first_of_1) == (save, save + 1)
    assert (run.events["kind"] == "restart").sum() == 1 and (run.events["kind"] == "checkpoint_save").sum() == 1
    gbs = int(re.search(r"--global-batch-size:\s*(\d+)", cfg.read_text()).group(1))
    assert run.meta.global_batch == gbs
    # loading the config file itself gives the same Run
    with pytest.warns(LoadWarning):
        assert load_run(cfg).steps.equals(run.steps)


def test_real_fp8_run_warmup_is_kept(realdata):  # noqa: F811
    (path,) = files(realdata / "megatron", "*fp8*.json")
    vals = json.loads(path.read_text())["iteration-time"]["values"]
    run = load_run(path)
    first = min(vals, key=int)
    assert run.steps.iloc[0]["end_s"] - run.steps.iloc[0]["start_s"] == pytest.approx(float(vals[first]))
    assert run.n_attempts == 1 and len(run.steps) == len(vals)


def _config_line(cfg, key):
    """(line number, value, line) of ``key: value`` in the raw config, read here with re."""
    for ln, line in enumerate(cfg.read_text().split("\n"), start=1):
        m = re.match(rf"\s*{re.escape(key)}:\s*(\S+)", line)
        if m:
            return ln, m.group(1), line
    raise AssertionError(f"{key} not in {cfg}")


@pytest.mark.parametrize(("pattern", "dtype_key", "dtype"),
                         [("*fp8*", "--fp8-format", "fp8"), ("*resume*", "--fp16", "fp16")])
def test_real_config_facts(realdata, pattern, dtype_key, dtype):  # noqa: F811
    (path,) = files(realdata / "megatron", pattern + ".json")
    (cfg,) = files(realdata / "megatron", pattern + "model_config.yaml")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        run = load_run(path)
    for key, name in (("--global-batch-size", "global_batch"), ("--seq-length", "seq_len"),
                      ("--micro-batch-size", "micro_batch")):
        ln, value, line = _config_line(cfg, key)
        fact = run.meta.fact(name)
        assert (fact["value"], fact["where"], fact["text"]) == (int(value), f"{cfg}:{ln}", line), name
    tp_ln, tp, tp_line = _config_line(cfg, "--tensor-model-parallel-size")
    _, pp, pp_line = _config_line(cfg, "--pipeline-model-parallel-size")
    par = run.meta.fact("parallelism")
    assert par["value"] == {"tp": int(tp), "pp": int(pp)} and par["where"] == f"{cfg}:{tp_ln}"
    assert par["text"] == f"{tp_line.strip()}; {pp_line.strip()}"
    ln, _, line = _config_line(cfg, dtype_key)
    assert run.meta.fact("dtype") == {"name": "dtype", "value": dtype, "source": "stated", "where": f"{cfg}:{ln}",
                                      "text": line}
    assert run.meta.fact("n_accelerators") is None  # the config does not say how many GPUs


# --- Megatron-Bridge layout: the real file ----------------------------------------------------------
def _bridge_raw(path):
    """Per step, each metric's value and line, and the top-level numbers: read with re from the raw
    text (4-space indent for a step, 8 for its metrics), not with the loader."""
    steps: dict[int, dict[str, tuple[float, int]]] = {}
    top: dict[str, float] = {}
    step = None
    for ln, line in enumerate(path.read_text().split("\n"), start=1):
        if m := re.fullmatch(r' {4}"(\d+)": \{', line):
            step = int(m.group(1))
            steps[step] = {}
        elif (m := re.fullmatch(r' {8}"([^"]+)": ([-0-9.eE]+),?', line)) and step is not None:
            steps[step][m.group(1)] = (float(m.group(2)), ln)
        elif m := re.fullmatch(r' {4}"([a-z_]+)": ([-0-9.eE]+),?', line):
            top[m.group(1)] = float(m.group(2))
    return steps, top


def test_real_bridge_golden_values(realdata):  # noqa: F811
    path = realdata / "nemo" / BRIDGE
    raw, top = _bridge_raw(path)
    assert sorted(raw) == list(range(50))
    run = load_run(path)  # detected by content
    m = run.meta
    assert (m.source_format, m.timing, m.time_unit) == ("megatron_json", "duration_only", "ms")
    assert m.report.total_skipped == 0
    # steps: 'elapsed time per iteration (ms)' in ms, back to back; step 0 ~53 s of warm-up, then ~227 ms
    ms = [raw[s]["elapsed time per iteration (ms)"][0] for s in range(50)]
    assert run.steps["step"].tolist() == list(range(50))
    assert (run.steps["end_s"] - run.steps["start_s"]).tolist() == pytest.approx([x / 1000 for x in ms])
    assert run.steps["start_s"].iloc[1] == pytest.approx(ms[0] / 1000)
    assert ms[0] == 53048.6 and 0.220 < statistics.median(ms[1:]) / 1000 < 0.235
    # 'GPU utilization' is TFLOP/s per GPU (~270), a claim; not a percentage
    tf = [raw[s]["GPU utilization"][0] for s in range(50)]
    (claim,) = m.claims
    assert claim["metric"] == "tflops_per_accelerator" and claim["unit"] == "TFLOP/s"
    assert claim["value"] == pytest.approx(statistics.median(tf)) and 260 < claim["value"] < 285
    assert (claim["n"], claim["statistic"]) == (50, "median")
    assert "TFLOP/s per GPU" in claim["counts"] and "not a percentage" in claim["counts"]
    assert claim["where"] == f"{path}:{raw[0]['GPU utilization'][1]}"
    metrics = run.tables["metrics"].set_index("step")
    assert metrics["lm loss"].tolist() == [raw[s]["lm loss"][0] for s in range(50)]
    assert metrics["GPU utilization"].tolist() == tf
    # alloc / max_alloc: GB at the top level
    assert (m.extra["totals"] == {"alloc": top["alloc"], "max_alloc": top["max_alloc"]}
            == {"alloc": 81.904, "max_alloc": 93.2})
    assert m.fact("n_accelerators") is None and m.facts == []  # the file states no GPU count


def test_bridge_bad_values_are_counted_with_their_line(tmp_path):
    p = tmp_path / "b.json"
    p.write_text(json.dumps({
        "0": {"elapsed time per iteration (ms)": 1000.0, "GPU utilization": 100.0},
        "1": {"elapsed time per iteration (ms)": "fast", "GPU utilization": 200.0},
        "2": {"elapsed time per iteration (ms)": 500.0, "GPU utilization": "n/a"},
        "x": [1, 2],
        "alloc": 5.0,
    }, indent=4))
    with pytest.warns(LoadWarning):
        run = load_run(p)
    lines = p.read_text().split("\n")
    assert run.steps["step"].tolist() == [0, 2] and run.steps["end_s"].tolist() == [1.0, 1.5]
    rep = run.meta.report
    assert rep.skipped == {rules.NON_NUMERIC: 2, "top-level entry is neither a step's metrics nor a number": 1}
    assert [lines[i - 1].strip() for i in rep.first_lines[rules.NON_NUMERIC]] == [
        '"elapsed time per iteration (ms)": "fast",', '"GPU utilization": "n/a"']
    assert run.meta.claims[0]["value"] == 150.0 and run.meta.claims[0]["n"] == 2


# --- damaged copies of the real files ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["megatron/megatron_golden_values_gpt3_tp4_pp1_resume_torch_dist_dgx_h100.json",
                                  f"nemo/{BRIDGE}"])
def test_damaged_real_files_load_or_fail_cleanly(realdata, tmp_path, name):  # noqa: F811
    src = realdata / name
    for seed in range(2):
        for kind, data in mutations(src.read_bytes(), random.Random(f"{name}:{seed}")):
            p = tmp_path / src.name
            p.write_bytes(data)
            for strict in (False, True):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", LoadWarning)
                    try:
                        run = load_run(p, format="megatron_json", strict=strict)
                    except InternalLoadError as exc:
                        pytest.fail(f"{kind} (seed {seed}, strict={strict}): {exc}")
                    except (LoadError, SchemaError):
                        continue
                assert len(run.steps) <= 100, kind
