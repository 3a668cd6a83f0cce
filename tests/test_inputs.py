"""``mfu_toolkit.inputs`` and ``render.vocabulary``: the user's inputs applied to a Run, asked for in each
interface's terms."""

from __future__ import annotations

import pytest

from mfu_toolkit.facts import InputError
from mfu_toolkit.flops import preset_family
from mfu_toolkit.inputs import apply_inputs
from mfu_toolkit.render.vocabulary import INTERFACES, ask, input_name
from mfu_toolkit.run import Run, RunMeta

H100_BF16 = 989.4e12  # H100 SXM bf16 dense, https://www.nvidia.com/en-us/data-center/h100/
H100_FP8 = 1978.9e12  # the same datasheet, fp8 dense


def _run(**meta) -> Run:
    steps = {"attempt": [0] * 4, "step": [1, 2, 3, 4], "rank": [-1] * 4,
             "start_s": [0.0, 2.0, 4.0, 6.0], "end_s": [2.0, 4.0, 6.0, 8.0]}
    return Run.build(steps, None, RunMeta(name="hand", **meta))


@pytest.mark.parametrize(("field", "interface", "expected"), [
    ("seq_len", "make", "SEQ_LEN=N"),
    ("seq_len", "cli", "--seq-len N"),
    ("seq_len", "python", "seq_len=N"),
    ("n_accelerators", "cli", "--gpus N"),
    ("n_accelerators", "make", "GPUS=N"),
    ("accelerator", "make", "ACCELERATOR=NAME"),
    ("causal", "cli", "--causal"),
    ("mtbf_hours", "cli", "--mtbf-hours H"),
    ("model_flops", "cli", "--preset NAME --seq-len N or --flops-per-sample F"),
    ("model_flops", "make", "PRESET=NAME SEQ_LEN=N or FLOPS_PER_SAMPLE=F"),
])
def test_ask_names_the_input_in_the_interface_s_terms(field, interface, expected):
    assert ask(field, interface) == expected


def test_ask_refuses_an_unknown_interface_or_field():
    assert INTERFACES == ("python", "cli", "make")
    with pytest.raises(ValueError, match="interface must be one of 'python', 'cli', 'make'; got 'web'"):
        ask("seq_len", "web")
    with pytest.raises(ValueError, match="field must be one of .*; got 'seqlen'"):
        input_name("seqlen", "cli")


def test_apply_inputs_resolves_the_peak_and_records_given_facts():
    run = apply_inputs(_run(), interface="cli", accelerator="H100", n_accelerators=4, flops_per_step=1e15)
    m = run.meta
    assert m.accelerator == "H100 SXM" and m.peak_flops_per_accelerator == pytest.approx(H100_BF16)
    assert m.n_accelerators == 4 and m.model_flops_per_step == 1e15
    assert m.model_flops_source == "command line --flops-per-step"
    given = {f["name"]: f for f in m.facts if f["source"] == "given"}
    assert given["accelerator"]["value"] == "H100" and given["accelerator"]["where"] == "command line --accelerator"
    assert given["n_accelerators"]["where"] == "command line --gpus"
    # no dtype given and none in the run: bf16, recorded as a default (not as given)
    assert m.dtype == "bf16" and "dtype" not in given and m.extra["defaults"] == ["dtype"]


def test_apply_inputs_keeps_the_runs_dtype_when_only_the_accelerator_is_given():
    run = apply_inputs(_run(dtype="fp8"), accelerator="H100")
    assert run.meta.dtype == "fp8" and run.meta.peak_flops_per_accelerator == pytest.approx(H100_FP8)
    assert "defaults" not in run.meta.extra


@pytest.mark.parametrize(("kwargs", "interface", "message"), [
    (dict(accelerator="H10O"), "make", "ACCELERATOR=H10O: unknown accelerator 'H10O' (close matches: 'H100 SXM'"),
    (dict(accelerator="H10O"), "cli", "--accelerator H10O: unknown accelerator 'H10O'"),
    (dict(accelerator="A100", dtype="fp8"), "make", "DTYPE=fp8: A100 SXM has no published fp8 peak"),
    (dict(preset="lama3-8b"), "make", "PRESET=lama3-8b: unknown preset 'lama3-8b'. Did you mean 'llama3-8b'"),
    (dict(preset="mixtral-8x7b"), "make", "PRESET=mixtral-8x7b: its source states no training sequence length"),
    (dict(n_accelerators=0), "make", "GPUS=0: expected a whole number >= 1"),
    (dict(n_accelerators=2, packages=1), "cli", "give one of --gpus (devices) or --packages (packages), not both"),
    (dict(preset="llama3-8b", flops_per_step=1e15), "cli",
     "give one source of model FLOPs, not --flops-per-step and --preset"),
    (dict(causal=True), "python", "causal applies to the FLOPs count of preset=NAME"),
    (dict(flops_per_sample=float("nan")), "cli", "--flops-per-sample nan: expected a finite number > 0"),
    (dict(seq_len=-4), "python", "seq_len=-4: expected a whole number >= 1"),
    (dict(per="chip"), "cli", "--per must be 'device' or 'package'; got 'chip'"),
])
def test_a_wrong_input_is_one_line_in_the_interface_s_terms(kwargs, interface, message):
    with pytest.raises(InputError) as info:
        apply_inputs(_run(), interface=interface, **kwargs)
    text = str(info.value)
    assert text.startswith(message) and "\n" not in text


def test_the_mixtral_preset_asks_for_seq_len_in_make_terms():
    with pytest.raises(InputError, match=r"give SEQ_LEN=N$"):
        apply_inputs(_run(), interface="make", preset="mixtral-8x7b")


def test_a_preset_counts_at_the_given_seq_len():
    from mfu_toolkit.flops import model_flops

    run = apply_inputs(_run(global_batch=8.0), preset="mixtral-8x7b", seq_len=4096)
    expected = model_flops("mixtral-8x7b", seq_len=4096).training_per_sample
    assert run.meta.model_flops_per_sample == pytest.approx(expected)
    assert run.meta.model_flops_source.startswith("preset 'mixtral-8x7b' at seq_len 4096 (given as seq_len=4096)")
    assert run.meta.extra["preset"] == "mixtral-8x7b" and run.meta.seq_len == 4096


def test_preset_family_for_the_plausibility_figures():
    # Mixtral 8x7B: 8 experts (arXiv:2401.04088); Llama 3 8B is dense; DLRM is no transformer
    assert preset_family("mixtral-8x7b") == "moe-transformer"
    assert preset_family("llama3-8b") == "dense-transformer"
    assert preset_family("dlrm-dcnv2") is None and preset_family("no-such") is None and preset_family(None) is None


def test_the_old_import_paths_work_for_one_release_with_a_warning():
    import mfu_toolkit.analysis as analysis
    import mfu_toolkit.analysis.inputs as old

    with pytest.warns(DeprecationWarning, match=r"analysis.inputs.apply_inputs moved to mfu_toolkit.inputs"):
        assert old.apply_inputs is apply_inputs
    with pytest.warns(DeprecationWarning, match=r"analysis.ask moved to mfu_toolkit.render.vocabulary.ask"):
        assert analysis.ask is ask
    with pytest.raises(AttributeError, match="has no attribute 'speak'"):
        old.speak  # noqa: B018
