"""The `mfu` command: the classic calculator's flags and output, the registry, clean errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from mfu_toolkit.cli import main

SEED = ["calc", "--model-flops-per-step", "2.4e15", "--step-seconds", "1.2", "--gpus", "128",
        "--peak-tflops-per-gpu", "80", "--samples-per-step", "8192"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse exits on usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def test_seed_flags_print_the_seed_lines(capsys):
    # Hand computation in tests/test_formulas.py: 2,000 / 10,240 TFLOP/s = 19.53 %.
    code, out, err = run(capsys, *SEED)
    assert code == 0 and err == ""
    assert out.splitlines() == [
        "Model throughput: 2,000.00 TFLOP/s",
        "Cluster peak: 10,240.00 TFLOP/s",
        "MFU: 19.53%",
        "Sample throughput: 6,826.67 samples/s",
    ]


def test_seed_example_as_printed_is_refused(capsys):
    argv = [a if a != "2.4e15" else "2.4e18" for a in SEED]
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert "Model throughput: 2,000,000.00 TFLOP/s" in out
    assert "19531.25%" in out and "above 100%" in out
    assert "1000x" in err and "sparse" in err and "recomputation" in err


def test_json_has_every_denominator(capsys):
    code, out, _ = run(capsys, *SEED, "--json")
    d = json.loads(out)
    assert code == 0
    for key in ("mfu", "model_flops_per_step", "step_seconds", "n_accelerators",
                "peak_flops_per_accelerator", "cluster_peak_flops", "achieved_flops_per_second"):
        assert key in d
    assert d["mfu"] == pytest.approx(0.1953125)
    assert d["peak_flops_per_accelerator"] == 80e12


def test_seed_example_json_is_machine_readable_failure(capsys):
    argv = [a if a != "2.4e15" else "2.4e18" for a in SEED]
    code, out, _ = run(capsys, *argv, "--json")
    d = json.loads(out)
    assert code == 1 and d["ok"] is False and d["value"] == pytest.approx(195.3125)


def test_accelerator_from_registry_prints_its_source(capsys):
    # H100 SXM bf16 dense = 989.4 TFLOP/s (NVIDIA H100 datasheet: 1,979 with sparsity).
    code, out, _ = run(capsys, "calc", "--model-flops-per-step", "2.4e15", "--step-seconds", "1.2",
                       "--gpus", "128", "--accelerator", "NVIDIA H100 80GB HBM3", "--dtype", "bf16")
    assert code == 0
    assert "Cluster peak: 126,643.20 TFLOP/s" in out  # 128 x 989.4
    assert "MFU: 1.58%" in out  # 2,000 / 126,643.2
    assert "https://" in out and "dense" in out


def test_sparse_is_explicit_and_said(capsys):
    code, out, _ = run(capsys, "calc", "--model-flops-per-step", "2.4e15", "--step-seconds", "1.2",
                       "--gpus", "128", "--accelerator", "H100", "--sparse", "--json")
    d = json.loads(out)
    assert code == 0 and d["sparse"] is True
    assert d["peak_flops_per_accelerator"] == pytest.approx(1978.9e12, rel=2e-3)


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["calc", "--model-flops-per-step", "-5", "--step-seconds", "1", "--gpus", "8", "--peak-tflops-per-gpu", "1"],
         "--model-flops-per-step"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "0", "--peak-tflops-per-gpu", "1"],
         "--gpus"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8"], "peak is missing"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8", "--accelerator", "H1OO"],
         "H100"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8", "--accelerator", "V100",
          "--dtype", "bf16"], "fp16"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8", "--accelerator", "H100",
          "--peak-tflops-per-gpu", "1"], "not both"),
        (["calc", "--model-flops-per-step", "abc", "--step-seconds", "1", "--gpus", "8", "--peak-tflops-per-gpu", "1"],
         "expected a number"),
    ],
)
def test_user_errors_are_one_line_exit_2(capsys, argv, fragment):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert len(err.strip().splitlines()) == 1, err
    assert fragment in err
    assert "Traceback" not in err + out


def test_accelerators_lists_registry_with_sources(capsys):
    code, out, _ = run(capsys, "accelerators", "--dtype", "bf16", "--vendor", "AMD")
    assert code == 0
    assert "MI300X" in out and "MI355X" in out and "H100" not in out
    assert out.count("https://") >= 4


def test_accelerators_unknown_dtype_is_a_usage_error(capsys):
    code, _, err = run(capsys, "accelerators", "--dtype", "fp7")
    assert code == 2 and "fp7" in err


def test_calc_imports_no_heavy_modules():
    # `mfu calc` must start as fast as a bare script: no pandas, seaborn, ipywidgets, numpy.
    code = (
        "import sys\nfrom mfu_toolkit.cli import main\n"
        "main(['calc','--model-flops-per-step','2.4e15','--step-seconds','1.2','--gpus','128',"
        "'--accelerator','H100'])\n"
        "print(sorted(m for m in ('pandas','seaborn','ipywidgets','matplotlib','numpy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"


def test_module_entry_point_matches_console_script():
    out = subprocess.run([sys.executable, "-m", "mfu_toolkit", *SEED], capture_output=True, text=True)
    assert out.returncode == 0
    assert "MFU: 19.53%" in out.stdout


def test_calc_with_a_preset_reproduces_palm_540b(capsys):
    # PaLM Appendix B: 238.3K tokens/s on 6144 TPU v4 (275 TFLOP/s) -> 46.2 % with attention.
    code, out, _ = run(capsys, "calc", "--preset", "palm-540b", "--tokens-per-second", "238300",
                       "--gpus", "6144", "--accelerator", "TPU v4", "--dtype", "bf16")
    assert code == 0
    assert "MFU: 46.2" in out
    assert "Token throughput: 238,300.00 tokens/s" in out


def test_calc_with_a_preset_and_recompute_reports_hfu_json(capsys):
    code, out, _ = run(capsys, "calc", "--preset", "palm-540b", "--tokens-per-second", "238300",
                       "--gpus", "6144", "--accelerator", "TPU v4", "--recompute", "full", "--json")
    d = json.loads(out)
    assert code == 0
    assert d["hfu"] > d["mfu"] == pytest.approx(0.462, abs=5e-4)
    # Full recomputation as Megatron counts it (Narayanan et al. 2021, eq. 3): every layer's
    # forward is re-run once, the logits layer's is not. By hand from PaLM 540B (arXiv:2204.02311
    # Table 1, Sec 2 and 5): L = 118, d_model = 18432, 48 query heads and 1 KV head (multi-query) of
    # 256, SwiGLU d_ff = 73728, vocabulary 256000, T = 2048, non-causal (PaLM Appendix B).
    L, dm, H, KV, Q, FF, V, T = 118, 18432, 48, 1, 256, 73728, 256_000, 2048
    forward = (2 * dm * (H + 2 * KV) * Q * L  # QKV projections
               + 2 * 2 * T * H * Q * L        # attention scores + values
               + 2 * H * Q * dm * L           # attention output projection
               + 2 * 3 * dm * FF * L          # SwiGLU FFN
               + 2 * dm * V)                  # logits
    logits = 2 * dm * V
    assert forward == 1_092_586_831_872
    # model = 3 x forward; hardware = model + (forward - logits): a little under 4/3.
    ratio = (3 * forward + forward - logits) / (3 * forward)
    assert f"{ratio:.5f}" == "1.33045"
    assert d["hfu"] / d["mfu"] == pytest.approx(ratio, rel=1e-12)
    assert d["model_conventions"]["recompute"] == "full"


def test_calc_preset_with_step_time_needs_a_batch(capsys):
    code, _, err = run(capsys, "calc", "--preset", "llama3-8b", "--step-seconds", "2", "--gpus", "8",
                       "--accelerator", "H100")
    assert code == 2 and "--batch" in err


def test_calc_preset_with_step_time_and_batch(capsys):
    # Llama 3 8B by hand from Meta's config.json (d 4096, 32 layers, 8 KV heads of 128, FFN 14336,
    # vocabulary 128256) with PaLM's convention (appendix B): 6 × matmul weights + 12·L·d·T per
    # token, non-causal. Weights: 32 × (2·4096² + 2·4096·1024 + 3·4096·14336) + 4096·128256
    # = 7,504,658,432; per sample at T = 8192: 8192 × (6 × 7,504,658,432 + 12·32·4096·8192)
    # = 474.4 TFLOP. 16 samples per 10 s step on 64 H100s (989.4 TFLOP/s bf16 dense): 1.20 %.
    weights = 32 * (2 * 4096**2 + 2 * 4096 * 1024 + 3 * 4096 * 14336) + 4096 * 128256
    per_sample = 8192 * (6 * weights + 12 * 32 * 4096 * 8192)
    code, out, _ = run(capsys, "calc", "--preset", "llama3-8b", "--seq-len", "8192", "--step-seconds", "10",
                       "--batch", "16", "--gpus", "64", "--accelerator", "H100", "--json")
    d = json.loads(out)
    assert code == 0
    assert d["model_flops_per_sample"] == pytest.approx(per_sample, rel=1e-9)
    assert d["mfu"] == pytest.approx(per_sample * 16 / 10 / (64 * 989.4e12), rel=1e-9)
    assert d["mfu"] == pytest.approx(0.0120, abs=5e-4)


def test_unknown_preset_is_a_usage_error(capsys):
    code, _, err = run(capsys, "calc", "--preset", "llama-9000", "--tokens-per-second", "1", "--gpus", "8",
                       "--accelerator", "H100")
    assert code == 2 and "llama" in err and "Traceback" not in err


def test_flops_subcommand_is_wired(capsys):
    code, out, _ = run(capsys, "flops", "--preset", "dlrm-dcnv2")
    assert code == 0
    assert "32,060,928" in out or "32.06 M" in out or "32060928" in out


def test_output_into_a_closed_pipe_is_quiet():
    # `mfu accelerators | head -1`: once the reader has gone, the command stops with no
    # BrokenPipeError traceback. The table (~60 KB) overfills the closed pipe.
    import subprocess
    import sys

    cmd = [sys.executable, "-m", "mfu_toolkit", "accelerators"]
    r = subprocess.run(f"{' '.join(cmd)} | head -c 10 > /dev/null", shell=True, capture_output=True, text=True,
                       timeout=120, executable="/bin/bash")
    assert "Traceback" not in r.stderr and "BrokenPipe" not in r.stderr, r.stderr


# --------------------------------------------------------------------------------------------
# the command table


def test_every_command_is_a_row_of_the_table_with_its_own_module():
    import importlib

    from mfu_toolkit import cli

    parser = cli.build_parser()
    shown = parser._subparsers._group_actions[0].choices  # the subcommands argparse was given
    assert list(shown) == list(cli.COMMANDS)
    for name, info in cli.COMMANDS.items():
        assert info.module == f"mfu_toolkit.cli.{name}" and info.summary
        assert callable(importlib.import_module(info.module).add_parser)


def test_a_command_module_that_fails_to_import_is_an_error_not_a_command_left_out(monkeypatch):
    from mfu_toolkit import cli

    monkeypatch.setitem(cli.COMMANDS, "broken", cli.CommandInfo("mfu_toolkit.cli.no_such_module", "x"))
    with pytest.raises(ModuleNotFoundError, match="mfu_toolkit.cli.no_such_module"):
        cli.build_parser()
    # the other commands still run alone: only the one asked for is imported
    assert cli.main(["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8",
                     "--peak-tflops-per-gpu", "989"]) == 0
