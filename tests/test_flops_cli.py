"""`mfu flops` and TOML model configs."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_toolkit.cli.flops import add_parser
from mfu_toolkit.flops import (
    ConfigFileError,
    DLRMConfig,
    HSTUConfig,
    MLPConfig,
    TransformerConfig,
    flops_per_unit,
    load_model_config,
    model_flops,
)

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="mfu")
    sub = parser.add_subparsers()
    add_parser(sub)
    args = parser.parse_args(["flops", *argv])
    rc = args.func(args)
    out, err = capsys.readouterr()
    return rc, out, err


def write(tmp_path: Path, text: str, name: str = "model.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# --- the subcommand --------------------------------------------------------------------------


def test_preset_report_has_breakdown_totals_and_conventions(capsys):
    rc, out, err = run_cli(capsys, "--preset", "PaLM-540B")
    assert rc == 0 and err == ""
    # PaLM Table 22: 3.28 TFLOP per token.
    assert "training (model FLOPs)     3.278 TFLOP" in out
    for word in ("component", "FLOPs/token", "share", "attn_scores", "ffn", "Conventions:"):
        assert word in out
    assert "causal: off" in out and "recomputation: none" in out
    assert "arXiv:2204.02311" in out


def test_dlrm_report_is_per_sample_with_embedding_bytes(capsys):
    rc, out, _ = run_cli(capsys, "--preset", "dlrm-dcnv2", "--batch", "65536")
    assert rc == 0
    assert "FLOPs/token" not in out
    assert "32.06 M" in out  # 32,060,928 forward FLOPs per sample (shared/DESIGN.md)
    assert "Embedding bytes read per sample" in out
    assert "attention: none in this model" in out


def test_json_output(capsys):
    rc, out, _ = run_cli(
        capsys, "--preset", "llama3-8b", "--seq-len", "2048", "--batch", "4", "--causal", "--json"
    )
    assert rc == 0
    data = json.loads(out)
    expected = model_flops("llama3-8b", seq_len=2048, batch=4, causal=True)
    assert data["training_per_token"] == pytest.approx(expected.training_per_token)
    assert data["training_per_step"] == pytest.approx(expected.training_per_step)
    assert data["conventions"]["causal"] is True
    assert data["tokens_per_sample"] == 2048 and data["batch"] == 4
    assert {row["component"] for row in data["breakdown"]} >= {"qkv_proj", "logits"}


def test_recompute_and_no_attention_flags(capsys):
    rc, out, _ = run_cli(capsys, "--preset", "palm-540b", "--recompute", "full", "--json")
    assert rc == 0
    data = json.loads(out)
    # Megatron's full recomputation: layers 4 x forward, logits (2 * 18432 * 256000) 3 x.
    logits = 2 * 18432 * 256_000
    forward = data["forward_per_token"]
    assert data["hardware_per_token"] == pytest.approx(4 * (forward - logits) + 3 * logits)
    assert "logits (output) layer not" in data["conventions"]["recompute_convention"]
    rc, out, _ = run_cli(capsys, "--preset", "palm-540b", "--no-attention", "--json")
    data = json.loads(out)
    assert data["conventions"]["include_attention"] is False


def test_list_presets(capsys):
    rc, out, _ = run_cli(capsys, "--list")
    assert rc == 0
    assert "llama3-405b" in out and "hstu-ml-20m-large" in out


@pytest.mark.parametrize(
    "argv, fragment",
    [
        ((), "give exactly one of --preset NAME or --config FILE"),
        (("--preset", "palm-8b", "--config", "x.toml"), "give exactly one"),
        (("--preset", "lama3-8b"), "Did you mean 'llama3-8b'"),
        (("--preset", "dlrm-dcnv2", "--causal"), "causal applies to sequence models"),
        (("--preset", "dlrm-dcnv2", "--seq-len", "10"), "seq_len applies to sequence models"),
        (("--config", "no/such/file.toml"), "no such file"),
    ],
)
def test_user_errors_are_one_line_and_exit_2(capsys, argv, fragment):
    rc, out, err = run_cli(capsys, *argv)
    assert rc == 2 and out == ""
    assert err.startswith("mfu flops: error: ") and fragment in err
    assert err.count("\n") == 1


def test_config_file_report(capsys):
    rc, out, _ = run_cli(capsys, "--config", str(DATA / "example_model.toml"))
    assert rc == 0
    assert "Model: example-7b (transformer)" in out
    assert "config file" in out


def test_bad_argument_values_are_argparse_errors(capsys):
    with pytest.raises(SystemExit) as exc:
        run_cli(capsys, "--preset", "palm-8b", "--seq-len", "0")
    assert exc.value.code == 2
    with pytest.raises(SystemExit):
        run_cli(capsys, "--preset", "palm-8b", "--recompute", "partial")


def test_python_m_mfu_toolkit_flops():
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "mfu_toolkit", "flops", "--preset", "palm-62b", "--json"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    # PaLM Table 22: 0.388 TFLOP per token for 62B.
    assert round(json.loads(done.stdout)["training_per_token"] / 1e12, 3) == 0.388
    bad = subprocess.run(
        [sys.executable, "-m", "mfu_toolkit", "flops", "--preset", "nope"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )
    assert bad.returncode == 2
    assert bad.stderr.startswith("mfu flops: error: unknown preset 'nope'")


# --- TOML configs ----------------------------------------------------------------------------


def test_example_configs_load():
    cfg = load_model_config(DATA / "example_model.toml")
    assert isinstance(cfg, TransformerConfig)
    assert (cfg.name, cfg.n_layers, cfg.ffn_type) == ("example-7b", 32, "swiglu")
    # Llama 2 7B shape: 6.74B parameters (Touvron et al. 2023, arXiv:2307.09288).
    assert round(model_flops(cfg).params.total / 1e9, 2) == 6.74
    rec = load_model_config(str(DATA / "example_recsys.toml"))
    assert isinstance(rec, DLRMConfig) and rec.interaction == "dcnv2"
    assert rec.extra_blocks[0].name == "multitask_heads"
    assert model_flops(rec).forward_per_sample == 32_060_928 + 2048


def test_each_kind_loads(tmp_path):
    hstu = write(
        tmp_path,
        '[model]\nkind = "hstu"\nn_layers = 2\nd_model = 16\nn_heads = 2\ndqk = 4\ndv = 4\n'
        "seq_len = 10\n",
        "h.toml",
    )
    mlp = write(
        tmp_path, '[model]\nkind = "mlp"\nin_features = 8\nlayer_sizes = [4, 1]\n', "m.toml"
    )
    dlrm = write(
        tmp_path,
        '[model]\nkind = "dlrm"\nn_dense = 4\nbottom_mlp = [8]\nn_sparse = 2\nembedding_dim = 8\n'
        "top_mlp = [1]\n",
        "d.toml",
    )
    assert isinstance(load_model_config(hstu), HSTUConfig)
    assert isinstance(load_model_config(mlp), MLPConfig)
    loaded = load_model_config(dlrm)
    assert isinstance(loaded, DLRMConfig) and loaded.interaction == "dot"
    assert loaded.name == "d"  # defaults to the file's stem
    # the one-call API and the calc hook take the path directly
    assert model_flops(str(mlp)).forward_per_sample == 2 * (8 * 4 + 4)
    r = flops_per_unit(config_path=str(mlp))
    assert r.source == f"config file {mlp}" and r.training_per_unit == 3 * 2 * (8 * 4 + 4)


def test_unknown_key_names_file_key_and_expected_keys(tmp_path):
    path = write(tmp_path, '[model]\nkind = "mlp"\nin_features = 8\nlayer_sizes = [1]\nwidth = 3\n')
    with pytest.raises(ConfigFileError) as err:
        load_model_config(path)
    msg = str(err.value)
    assert str(path) in msg and "'width'" in msg
    assert "expected keys: kind, in_features, layer_sizes" in msg
    assert err.value.key == "width" and err.value.path == str(path)


def test_missing_key_names_it(tmp_path):
    path = write(tmp_path, '[model]\nkind = "transformer"\nn_layers = 2\nd_model = 64\n')
    with pytest.raises(ConfigFileError, match=r"key 'n_heads': missing required key"):
        load_model_config(path)


@pytest.mark.parametrize(
    "text, key, fragment",
    [
        ("[model]\nn_layers = 2\n", "kind", "missing required key"),
        ('[model]\nkind = "cnn"\n', "kind", "must be one of transformer, dlrm, dcnv2, hstu, mlp"),
        ('[other]\nx = 1\n[model]\nkind = "mlp"\n', "other", "expected only a [model] table"),
        ("x = 1\n", "x", "expected only a [model] table"),
        (
            '[model]\nkind = "transformer"\nn_layers = 2\nd_model = 64\nn_heads = 5\n',
            "n_heads",
            "n_heads must be a divisor of d_model=64",
        ),
        (
            '[model]\nkind = "mlp"\nin_features = 8\nlayer_sizes = [4, 0]\n',
            "layer_sizes",
            "layer_sizes[1] must be an integer >= 1; got 0",
        ),
        (
            '[model]\nkind = "mlp"\nin_features = 8\nlayer_sizes = [4]\n'
            '[[model.extra_blocks]]\nname = "x"\nflops = 3\n',
            "extra_blocks[0].flops",
            "unknown key; expected keys: name, forward_flops",
        ),
    ],
)
def test_invalid_configs(tmp_path, text, key, fragment):
    path = write(tmp_path, text)
    with pytest.raises(ConfigFileError) as err:
        load_model_config(path)
    assert err.value.key == key
    assert fragment in str(err.value) and str(path) in str(err.value)


def test_invalid_toml_and_missing_file(tmp_path):
    with pytest.raises(ConfigFileError, match="not valid TOML"):
        load_model_config(write(tmp_path, "[model\n"))
    with pytest.raises(ConfigFileError, match="no such file"):
        load_model_config(tmp_path / "absent.toml")


# --- FLOPs conventions on every FLOPs-taking command -----------------------------------------


def run_mfu(capsys, *argv: str) -> tuple[int, str, str]:
    from mfu_toolkit.cli import main

    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse usage errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


LLAMA_405B_128K = [
    "calc", "--preset", "llama3-405b", "--seq-len", "131072", "--tokens-per-second", "1000",
    "--gpus", "16384", "--peak-tflops-per-gpu", "989.4",
]  # fmt: skip


def test_calc_takes_causal_and_says_which_convention_it_used(capsys):
    # Llama 3.1 405B config.json (126 layers, d 16384, 8 KV heads of 128, FFN 53248, vocabulary
    # 128256, untied): per token 6N + 12*L*d*T non-causal, 6N + 12*L*d*(T + 1)/2 causal.
    L, d, T = 126, 16384, 131072
    N = L * (2 * d * d + 2 * d * 1024 + 3 * d * 53248) + d * 128256
    code, out, _ = run_mfu(capsys, *LLAMA_405B_128K, "--json")
    off = json.loads(out)
    code2, out2, _ = run_mfu(capsys, *LLAMA_405B_128K, "--causal", "--json")
    on = json.loads(out2)
    assert code == code2 == 0
    assert off["model_flops_per_sample"] == pytest.approx(T * (6 * N + 12 * L * d * T), rel=1e-12)
    assert on["model_flops_per_sample"] == pytest.approx(
        T * (6 * N + 6 * L * d * (T + 1)), rel=1e-12
    )
    assert round(off["mfu"] / on["mfu"], 2) == 1.40
    assert off["model_conventions"]["causal"] is False
    assert on["model_conventions"]["causal"] is True
    _, text_off, _ = run_mfu(capsys, *LLAMA_405B_128K)
    _, text_on, _ = run_mfu(capsys, *LLAMA_405B_128K, "--causal")
    assert "FLOPs conventions:" in text_off and "causal off" in text_off
    assert "causal on" in text_on


def test_calc_reproduces_korthikanti_table_5_hfu_with_eq8(capsys, tmp_path):
    # Korthikanti et al. 2022 (arXiv:2205.05198) Tables 3 and 5: GPT-3 175B with V = 51200,
    # 64 sequences of 2048 per 13.75 s iteration on 64 A100s (312 TFLOP/s): MFU 51.4 %,
    # HFU 52.8 % (their eq. 8).
    path = write(
        tmp_path,
        '[model]\nkind = "transformer"\nname = "gpt3-175b-v51200"\nn_layers = 96\n'
        "d_model = 12288\nn_heads = 96\nvocab_size = 51200\ntied_embeddings = true\n"
        'seq_len = 2048\npos_embedding = "learned"\nbias = true\n',
    )
    argv = ["calc", "--config", str(path), "--step-seconds", "13.75", "--batch", "64",
            "--gpus", "64", "--peak-tflops-per-gpu", "312", "--json"]  # fmt: skip
    code, out, _ = run_mfu(capsys, *argv, "--recompute", "selective-eq8")
    d = json.loads(out)
    assert code == 0
    assert (round(100 * d["mfu"], 1), round(100 * d["hfu"], 1)) == (51.4, 52.8)
    assert d["model_conventions"]["recompute"] == "selective-eq8"


def test_calc_recompute_choices_are_the_flops_modes():
    from mfu_toolkit.cli.calc import _RECOMPUTE_MODES
    from mfu_toolkit.flops import RECOMPUTE_MODES

    assert _RECOMPUTE_MODES == RECOMPUTE_MODES


@pytest.mark.parametrize(
    "argv, fragment",
    [
        (["calc", "--preset", "mixtral-8x7b", "--tokens-per-second", "1e5", "--gpus", "8",
          "--peak-tflops-per-gpu", "989"], "--seq-len"),
        (["calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8",
          "--peak-tflops-per-gpu", "989", "--causal"], "--causal applies to model FLOPs"),
        (["flops", "--preset", "mixtral-8x7b"], "--seq-len"),
        (["flops", "--preset", "mistral-7b", "--json"], "give --seq-len N"),  # the flag, not Python's seq_len=
    ],
)  # fmt: skip
def test_a_preset_without_a_training_length_is_a_usage_error(capsys, argv, fragment):
    code, out, err = run_mfu(capsys, *argv)
    assert code == 2 and out == ""
    assert fragment in err and err.count("\n") == 1


def test_flops_report_of_deepseek_v3_states_mtp_and_mla(capsys):
    rc, out, _ = run_cli(capsys, "--preset", "deepseek-v3")
    assert rc == 0
    assert "mtp_logits" in out and "kv_up_proj" in out
    assert "MTP module(s) counted in model FLOPs (they are trained)" in out
    assert "Sequence length 4096" in out
    assert "MTP modules 11,610,067,968 more (trained, outside the total)" in out
