"""``mfu analyze`` and ``mfu simulate``: parser, exit codes, one-line errors, JSON and HTML output."""

from __future__ import annotations

import argparse
import json
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_toolkit.cli import analyze, audit, simulate
from mfu_toolkit.run import read_run

ROOT = Path(__file__).resolve().parents[1]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="mfu")
    sub = p.add_subparsers(dest="command", required=True)
    for command in (analyze, audit, simulate):
        command.add_parser(sub)
    return p


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return args.func(args)


@pytest.fixture(scope="module")
def sim_file(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "sim.parquet"
    code = _run(["simulate", "-o", str(out), "--ranks", "8", "--steps", "40", "--jitter", "0.03",
                 "--slow-ranks", "3", "--slow-factor", "1.2", "--checkpoint-every", "10",
                 "--checkpoint-s", "2", "--fail-at-steps", "25", "--restart-s", "10", "--seed", "5"])
    assert code == 0
    return out


def test_simulate_writes_a_run(sim_file, capsys):
    run = read_run(sim_file)
    assert run.meta.n_accelerators == 8 and run.n_attempts == 2
    assert run.meta.extra["simulated"]["slow_ranks"] == [3]


def test_simulate_user_error_is_one_line(tmp_path, capsys):
    code = _run(["simulate", "-o", str(tmp_path / "x.parquet"), "--ranks", "0"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1
    assert err == "mfu simulate: error: --ranks 0: expected an integer >= 1\n"  # the flag, not SimConfig's field


@pytest.mark.parametrize(("args", "said"), [
    (["--slow-ranks", "9", "--ranks", "4"], "--slow-ranks 9: expected comma-separated integers in [0, 3]"),
    (["--jitter", "nan"], "--jitter nan: expected a finite number >= 0.0 and <= 3.0"),
    # a failure every second against a checkpoint every 1,000 steps: the job cannot finish
    (["--mtbf-s", "1", "--checkpoint-every", "1000", "--steps", "5000", "--ranks", "2"],
     "the job did not finish within 1000 attempts: failures come too often for its checkpoints "
     "(raise --mtbf-s, or lower --checkpoint-every)"),
])
def test_simulate_errors_name_the_flags(tmp_path, capsys, args, said):
    assert _run(["simulate", "-o", str(tmp_path / "x.parquet"), *args]) == 2
    assert capsys.readouterr().err == f"mfu simulate: error: {said}\n"
    assert not (tmp_path / "x.parquet").exists()


def test_analyze_text(sim_file, capsys):
    assert _run(["analyze", str(sim_file)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"Steady-state MFU: (39|40)\.\d\d% \(ideal step\)", out)
    assert "Scorecard" in out and "Waterfall" in out
    assert "lost_work" in out and "stragglers" in out


def test_analyze_json(sim_file, capsys):
    assert _run(["analyze", str(sim_file), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    total = sum(r["seconds"] for r in doc["breakdown"])
    assert math.isclose(total, doc["summary"]["wall_s"], rel_tol=1e-9)
    assert doc["summary"]["steady_state_mfu"] == pytest.approx(0.4, abs=0.01)
    assert {r["family"] for r in doc["scorecard"]} == {"model_progress", "compute_efficiency",
                                                       "scaling_efficiency", "reliability"}


def test_analyze_html_embeds_png_figures(sim_file, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert _run(["analyze", str(sim_file), "--html", str(out)]) == 0
    text = out.read_text()
    assert text.count("data:image/png;base64,") == 4  # waterfall, timeline, step time, rank heatmap
    assert "<table" in text and "Steady-state MFU" in text
    assert f"wrote {out}" in capsys.readouterr().out


def test_analyze_meta_overrides(sim_file, capsys):
    assert _run(["analyze", str(sim_file), "--flops-per-step", "1e15", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["model_flops_source"] == "command line --flops-per-step"
    assert doc["summary"]["model_flops_per_unit"] == 1e15


def test_analyze_preset_and_accelerator_replace_the_logs_flops(tmp_path, capsys):
    from mfu_toolkit import flops, hardware

    sim = tmp_path / "llama.parquet"
    assert _run(["simulate", "-o", str(sim), "--ranks", "64", "--steps", "20", "--global-batch", "64",
                 "--seq-len", "8192"]) == 0
    capsys.readouterr()
    assert _run(["analyze", str(sim), "--accelerator", "H100", "--dtype", "bf16", "--preset", "llama3-8b",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)["summary"]
    per_token = flops.model_flops("llama3-8b", seq_len=8192).training_per_token
    peak = hardware.get_peak("H100", "bf16").flops
    assert doc["model_flops_source"].startswith("preset 'llama3-8b'")
    assert doc["steady_state_mfu"] == pytest.approx(64 * 8192 * per_token / 1.0 / (64 * peak), rel=1e-9)
    assert _run(["analyze", str(sim), "--accelerator", "no-such-gpu"]) == 2
    assert "unknown accelerator" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["analyze", "/no/such/log.txt"], "no such file or directory"),
        (["analyze", "{sim}", "--n-accelerators", "0"], "--gpus 0: expected a whole number >= 1"),
        (["analyze", "{sim}", "--warmup-steps", "-3"], "--warmup-steps -3: expected a whole number >= 0"),
    ],
)
def test_analyze_user_errors_are_one_line(sim_file, capsys, argv, fragment):
    argv = [a.replace("{sim}", str(sim_file)) for a in argv]
    assert _run(argv) == 2  # usage errors; MFU above 100 % is 1 (the test below)
    err = capsys.readouterr().err
    assert err.startswith("mfu analyze: error: ") and err.count("\n") == 1
    assert fragment in err


def test_main_cli_wires_the_subcommands(sim_file):
    """Through ``python -m mfu_toolkit`` once the main CLI registers ``analyze``/``simulate``."""
    help_out = subprocess.run([sys.executable, "-m", "mfu_toolkit", "--help"], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
    assert "analyze" in help_out.stdout, help_out.stdout + help_out.stderr
    r = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(sim_file), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["summary"]["useful_steps"] == 40
    r = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", "/no/such/file"], cwd=ROOT,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith("mfu analyze: error:")


def test_analyze_dtype_alone_looks_the_peak_up_again(sim_file, capsys):
    # `--dtype` without `--accelerator` keeps the run's accelerator and takes its peak for that
    # dtype. H100 SXM datasheet (dense): 989.4 TFLOP/s bf16, 1,978.9 TFLOP/s fp8, so the same
    # run reads half the MFU in fp8.
    assert _run(["analyze", str(sim_file), "--json"]) == 0
    bf16 = json.loads(capsys.readouterr().out)["summary"]
    assert _run(["analyze", str(sim_file), "--dtype", "fp8", "--json"]) == 0
    fp8 = json.loads(capsys.readouterr().out)["summary"]
    assert fp8["steady_state_mfu"] == pytest.approx(bf16["steady_state_mfu"] * 989.4 / 1978.9, rel=1e-9)
    assert _run(["analyze", str(sim_file), "--dtype", "fp8"]) == 0
    assert re.search(r"denominator: 8 × 1,?978\.9 TFLOP/s = 15\.83 PFLOP/s \(H100 SXM fp8 dense",
                     capsys.readouterr().out)


def test_dtype_without_any_accelerator_is_refused():
    from mfu_toolkit.run import RunMeta

    # a peak from elsewhere (a log, a number) cannot be looked up for another dtype
    with pytest.raises(ValueError, match="names no accelerator"):
        RunMeta(peak_flops_per_accelerator=1e15, dtype="bf16").with_dtype("fp8")
    assert RunMeta().with_dtype("fp8").dtype == "fp8"  # no peak yet: nothing to mislabel
    # an MI250X counted per device (2 per package) stays per device: 383 TFLOP/s bf16 and fp16
    # per package on AMD's datasheet, so 191.5 per device
    mi = RunMeta().with_accelerator("MI250X", "bf16", per="device").with_dtype("fp16")
    assert mi.peak_flops_per_accelerator == pytest.approx(191.5e12)


# --------------------------------------------------------------------------------------------
# --preset: the sequence length it is counted at, and --causal

H100_BF16 = 989.4e12  # H100 SXM bf16 dense, https://www.nvidia.com/en-us/data-center/h100/


def _forward_per_token(T: int, *, L: int, d: int, H: int, KV: int, Q: int, FF: int, V: int,
                       experts: int = 0, top_k: int = 1, causal: bool = False) -> float:
    """Per-token forward FLOPs written out (PaLM Appendix B): QKV, scores + values over T keys
    ((T + 1) / 2 when causal), output projection, SwiGLU FFN (``top_k`` of ``experts`` plus a
    2·d·E router for MoE), logits."""
    keys = (T + 1) / 2 if causal else T
    ffn = (top_k if experts else 1) * 2 * 3 * d * FF * L
    return (2 * d * (H + 2 * KV) * Q * L + 2 * 2 * keys * H * Q * L + 2 * H * Q * d * L
            + 2 * d * experts * L + ffn + 2 * d * V)


# Llama 3 8B (arXiv:2407.21783 Table 3, HF config.json); Mixtral 8x7B (arXiv:2401.04088 Table 1)
# and Mistral 7B (arXiv:2310.06825 Table 1; its 4096-key window does not bind at T <= 4096).
LLAMA3_8B = dict(L=32, d=4096, H=32, KV=8, Q=128, FF=14336, V=128_256)
MISTRAL = dict(L=32, d=4096, H=32, KV=8, Q=128, FF=14336, V=32_000)


def _sim(tmp_path: Path, name: str, *extra: str) -> Path:
    path = tmp_path / f"{name}.parquet"
    assert _run(["simulate", "-o", str(path), "--ranks", "64", "--steps", "20", "--global-batch", "16",
                 *extra]) == 0
    return path


def _analyze(capsys, *argv: str) -> dict:
    capsys.readouterr()
    assert _run(["analyze", *argv, "--accelerator", "H100", "--dtype", "bf16", "--json"]) == 0
    return json.loads(capsys.readouterr().out)["summary"]


def test_analyze_preset_causal_counts_the_mask(tmp_path, capsys):
    sim = _sim(tmp_path, "llama", "--seq-len", "8192")
    plain = _analyze(capsys, str(sim), "--preset", "llama3-8b")
    causal = _analyze(capsys, str(sim), "--preset", "llama3-8b", "--causal")
    # 16 sequences of 8192 tokens per 1 s step on 64 H100s; training = 3 x forward.
    for doc, is_causal in ((plain, False), (causal, True)):
        per_token = 3 * _forward_per_token(8192, **LLAMA3_8B, causal=is_causal)
        assert doc["steady_state_mfu"] == pytest.approx(16 * 8192 * per_token / (64 * H100_BF16), rel=1e-9)
    # Causal: 8192 keys per query become 4096.5 in scores and values: 2·2·4095.5·32·128·32 fewer.
    drop = 3 * 2 * 2 * (8192 - 8193 / 2) * 32 * 128 * 32 * 16 * 8192 / (64 * H100_BF16)
    assert plain["steady_state_mfu"] - causal["steady_state_mfu"] == pytest.approx(drop, rel=1e-6)
    assert "causal on" in causal["model_flops_source"] and "causal off" in plain["model_flops_source"]
    assert causal["model_flops_source"].startswith("preset 'llama3-8b' at seq_len 8192 (the run's own sequence length)")


def test_analyze_preset_counts_at_the_logs_seq_len(tmp_path, capsys):
    # Mixtral 8x7B states no training length; the run's own (4096) is used.
    sim = _sim(tmp_path, "mixtral", "--seq-len", "4096")
    doc = _analyze(capsys, str(sim), "--preset", "mixtral-8x7b")
    per_token = 3 * _forward_per_token(4096, **MISTRAL, experts=8, top_k=2)
    assert doc["steady_state_mfu"] == pytest.approx(16 * 4096 * per_token / (64 * H100_BF16), rel=1e-9)
    assert doc["model_flops_source"].startswith("preset 'mixtral-8x7b' at seq_len 4096 (the run's own sequence length)")
    # --seq-len wins over the log's.
    doc = _analyze(capsys, str(sim), "--preset", "mixtral-8x7b", "--seq-len", "2048")
    per_token = 3 * _forward_per_token(2048, **MISTRAL, experts=8, top_k=2)
    assert doc["steady_state_mfu"] == pytest.approx(16 * 2048 * per_token / (64 * H100_BF16), rel=1e-9)
    assert "at seq_len 2048 (given as --seq-len 2048)" in doc["model_flops_source"]


def test_analyze_preset_counts_at_a_stated_seq_len_fact(tmp_path, capsys):
    from mfu_toolkit.run import save_run

    run = read_run(_sim(tmp_path, "plain"))
    assert run.meta.seq_len is None
    fact = {"name": "seq_len", "value": 2048, "source": "stated", "where": "train.log:12",
            "text": "--seq-length 2048"}
    path = tmp_path / "fact.parquet"
    save_run(run.replace(meta=run.meta.replace(facts=[fact])), path)
    doc = _analyze(capsys, str(path), "--preset", "mistral-7b")
    per_token = 3 * _forward_per_token(2048, **MISTRAL)
    assert doc["steady_state_mfu"] == pytest.approx(16 * 2048 * per_token / (64 * H100_BF16), rel=1e-9)
    assert "at seq_len 2048 (stated in the log at train.log:12)" in doc["model_flops_source"]


def test_analyze_preset_without_any_seq_len_names_the_flag(tmp_path, capsys):
    sim = _sim(tmp_path, "bare")
    capsys.readouterr()
    assert _run(["analyze", str(sim), "--preset", "gemma-2-9b"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mfu analyze: error: --preset gemma-2-9b: its source states no training sequence")
    assert err.count("\n") == 1
    assert "give --seq-len N" in err
    # a preset with a published length still counts at it (Llama 3 8B: 8192)
    doc = _analyze(capsys, str(sim), "--preset", "llama3-8b")
    assert doc["model_flops_source"].startswith("preset 'llama3-8b' at seq_len 8192 "
                                                "(the preset's published training length)")
    assert _run(["analyze", str(sim), "--causal"]) == 2
    assert "--causal applies to the FLOPs count of --preset" in capsys.readouterr().err


def test_an_mfu_above_100_percent_exits_1_as_the_readme_says(capsys):
    # README, "Exit status": 1 for inconsistent inputs (MFU or HFU above 100 %), 2 for usage errors.
    # 1e18 FLOPs per sample on one H100 is far above its 989.4 TFLOP/s peak.
    sample = Path(__file__).resolve().parents[1] / "data" / "samples" / "megatron_train.log"
    code = _run(["analyze", str(sample), "--accelerator", "H100", "--gpus", "1", "--flops-per-sample", "1e18"])
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("mfu analyze: error: MFU = ") and err.count("\n") == 1 and "is above 100%" in err


# --------------------------------------------------------------------------------------------
# the answer: --strict, --validate, MFU_INTERFACE, width, no traceback


def _claiming_run(tmp_path: Path, sim_file: Path) -> Path:
    """The simulated run, saved with an MFU claim a quarter of ours: its check warns."""
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.run import save_run

    run = read_run(sim_file)
    ours = build_answer(run).headline["window_mfu"]
    claim = {"metric": "mfu", "value": ours / 4, "unit": "fraction", "counts": "", "where": "train.log:9",
             "n": 1, "statistic": "value"}
    path = tmp_path / "claiming.parquet"
    save_run(run.replace(meta=run.meta.replace(claims=[claim])), path)
    return path


def test_strict_exits_1_on_a_warning_and_0_without(sim_file, tmp_path, capsys):
    assert _run(["analyze", str(sim_file), "--strict"]) == 0  # every check of the simulated run is ok/info
    path = _claiming_run(tmp_path, sim_file)
    capsys.readouterr()
    assert _run(["analyze", str(path)]) == 0  # a warning alone does not fail
    out = capsys.readouterr().out
    assert re.search(r"WARN\s+claim mfu\s+the log claims [\d.]+% at train\.log:9; ours [\d.]+% \(ratio 4\.00\)", out)
    assert _run(["analyze", str(path), "--strict"]) == 1
    assert capsys.readouterr().err == "mfu analyze: --strict: 1 check(s) warn\n"
    assert _run(["analyze", str(path), "--strict", "--json"]) == 1
    checks = json.loads(capsys.readouterr().out)["checks"]
    assert [c["status"] for c in checks if c["name"] == "claim mfu"] == ["warn"]


def test_validate_prints_the_facts_and_what_is_missing(tmp_path, capsys, monkeypatch):
    sim = _sim(tmp_path, "v")
    capsys.readouterr()
    assert _run(["analyze", str(sim), "--validate", "--gpus", "64"]) == 0
    out = capsys.readouterr().out
    assert "n_accelerators = 64 (from command line --gpus)" in out
    assert "missing: nothing" in out and "Waterfall" not in out
    monkeypatch.setenv("MFU_INTERFACE", "make")
    assert _run(["analyze", str(sim), "--validate", "--preset", "mixtral-8x7b"]) == 2
    err = capsys.readouterr().err
    assert err == ("mfu analyze: error: PRESET=mixtral-8x7b: its source states no training sequence length and "
                   "the run states none (no seq_len in the log); give SEQ_LEN=N\n")


def test_the_terminal_answer_fits_100_columns(sim_file, capsys):
    assert _run(["analyze", str(sim_file), "--checkpoint-s", "2", "--mtbf-hours", "1"]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert out.index("The answer") < out.index("Checks") < out.index("Waterfall") < out.index("Scorecard")
    assert "Culprit: rank 3" in out  # the simulated slow rank, named as a rank
    assert "Daly's optimum" in out
    assert not re.search(r"\de-0\d", out) and " nan" not in out.lower()


@pytest.mark.parametrize(("argv", "interface", "line"), [
    (["--accelerator", "H10O"], "make", "ACCELERATOR=H10O: unknown accelerator 'H10O' (close matches: 'H100 SXM'"),
    (["--accelerator", "A100", "--dtype", "fp8"], "cli", "--dtype fp8: A100 SXM has no published fp8 peak"),
    (["--preset", "lama3-8b"], "cli", "--preset lama3-8b: unknown preset 'lama3-8b'. Did you mean 'llama3-8b'"),
    (["--gpus", "0"], "make", "GPUS=0: expected a whole number >= 1"),
    (["--mtbf-hours", "-1"], "make", "MTBF_HOURS=-1: expected a finite number > 0"),
    # not numbers at all: argparse used to answer "argument --seq-len: invalid int value: 'x'"
    (["--gpus", "abc"], "make", "GPUS=abc: expected a whole number >= 1"),
    (["--seq-len", "x"], "make", "SEQ_LEN=x: expected a whole number >= 1"),
    (["--seq-len", "2.5"], "cli", "--seq-len 2.5: expected a whole number >= 1"),
    (["--flops-per-step", "lots"], "cli", "--flops-per-step lots: expected a finite number > 0"),
    (["--checkpoint-every", "inf"], "make", "CHECKPOINT_EVERY=inf: expected a finite number > 0"),
])
def test_a_bad_input_is_one_line_without_traceback(sim_file, argv, interface, line):
    env = {**__import__("os").environ, "MFU_INTERFACE": interface}
    r = subprocess.run([sys.executable, "-m", "mfu_toolkit", "analyze", str(sim_file), *argv], cwd=ROOT,
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"mfu analyze: error: {line}") and r.stderr.count("\n") == 1


def test_columns_and_time_unit_reach_the_table_loader(tmp_path, capsys):
    log = tmp_path / "t.csv"
    log.write_text("iter,t0,t1\n1,0,1500\n2,1500,3000\n3,3000,4500\n")  # three 1.5 s steps, in ms
    assert _run(["analyze", str(log), "--format", "table", "--columns", "step:iter,start_s:t0,end_s:t1",
                 "--time-unit", "ms", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["headline"]["wall_s"] == pytest.approx(4.5) and doc["headline"]["useful_steps"] == 3
    assert _run(["analyze", str(log), "--format", "table", "--columns", "step"]) == 2
    assert capsys.readouterr().err == ("mfu analyze: error: --columns must be schema:column pairs separated by "
                                       "commas (step:iter,start_s:t0); got 'step' ('step' is not a pair)\n")


# --------------------------------------------------------------------------------------------
# --link, --nic and --step-pattern


def _collectives_run(tmp_path: Path) -> Path:
    """A Run of one AllReduce over 3 ranks on 3 nodes (the sizes of the real NCCL Inspector line that
    notebook 13 reads: 2,360,832 B in 5,663 µs), saved as Parquet."""
    import pandas as pd

    from mfu_toolkit.run import Run, save_run

    table = pd.DataFrame({"coll": ["AllReduce"], "comm_name": ["c0"], "rank": [0], "n_ranks": [3], "nnodes": [3],
                          "msg_size_bytes": [2_360_832.0], "exec_time_s": [5.663e-3]})
    path = tmp_path / "coll.parquet"
    save_run(Run.build(tables={"collectives": table}), path)
    return path


def test_nic_and_link_flags_reach_the_collectives(tmp_path, capsys, monkeypatch):
    path = _collectives_run(tmp_path)
    assert _run(["analyze", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "give --nic NAME (e.g. --nic NDR or --nic 400GbE)" in out and "nic=" not in out
    assert _run(["analyze", str(path), "--link", "NVLink4"]) == 0
    assert "; --link is intra-node only" in " ".join(capsys.readouterr().out.split())  # wrapped at 100 columns
    assert _run(["analyze", str(path), "--nic", "NDR", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["communication"]["collectives"][0]
    # by hand: busbw = 2,360,832 B / 5.663 ms x 2(3-1)/3 = 555.8 MB/s; NDR 400 Gb/s = 50 GB/s each way
    assert row["link"] == "InfiniBand NDR" and row["reason"] == ""
    assert row["comm_efficiency"] == pytest.approx(2_360_832 / 5.663e-3 * 4 / 3 / 50e9, rel=1e-9)
    monkeypatch.setenv("MFU_INTERFACE", "make")
    assert _run(["analyze", str(path), "--json"]) == 0
    reason = json.loads(capsys.readouterr().out)["communication"]["collectives"][0]["reason"]
    assert reason.endswith("give NIC=NAME (e.g. NIC=NDR or NIC=400GbE)")


@pytest.mark.parametrize(("argv", "interface", "line"), [
    (["--nic", "XDR9"], "cli", "--nic XDR9: not a link of the interconnect table (mfu_toolkit/interconnect.csv); "
                               "close matches: InfiniBand XDR"),
    (["--link", "nvlink"], "make", "LINK=nvlink: not a link of the interconnect table "
                                   "(mfu_toolkit/interconnect.csv); close matches: NVLink5, NVLink4"),
    (["--step-pattern", "("], "cli", "--step-pattern (: not a regular expression (missing ), unterminated"),
    (["--step-pattern", "ProfilerStep#(\\d+)"], "make", "STEP_PATTERN=ProfilerStep#(\\d+): only the nsys and "
                                                         "xplane formats take a step pattern"),
])
def test_a_bad_link_or_step_pattern_is_one_line(sim_file, capsys, monkeypatch, argv, interface, line):
    monkeypatch.setenv("MFU_INTERFACE", interface)
    assert _run(["analyze", str(sim_file), *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mfu analyze: error: {line}") and err.count("\n") == 1


def test_step_pattern_cuts_an_nsys_export_into_steps(capsys):
    from _realdata_b import realdata_dir

    path = realdata_dir("nsys") / "GindaChen_nsys-ai_mfu_2gpu_before.sqlite"
    assert _run(["analyze", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["exposed_comm"]["stated"] is False  # no step ranges: no steps
    assert _run(["analyze", str(path), "--step-pattern", r"aten::to, op_id = (\d+)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["exposed_comm"]["stated"] is True and doc["exposed_comm"]["seconds"] > 0
    assert math.isclose(sum(r["seconds"] for r in doc["breakdown"]), doc["headline"]["wall_s"], rel_tol=1e-12)
