"""Requests that end by asking for an input carry what they ask for as data, keep their Python text as
``str()``, and are said in each front end's terms (``--per device``, ``GPUS=N``, ``--link NAME``) through
``render/vocabulary.py``.

The pinned Python texts and the link requests' cli/make phrasings are the ones the previous release printed
(copied from its ``str()`` and ``phrase()`` output, byte for byte): folding the link request into
``run.InputRequest`` must not change a character of them.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import warnings

import pandas as pd
import pytest

from mfu_toolkit import hardware, interconnect
from mfu_toolkit.analysis import build_answer, comm_efficiency
from mfu_toolkit.analysis.communication import LINK_ASKS, link_request
from mfu_toolkit.cli import main
from mfu_toolkit.facts import InputError
from mfu_toolkit.render import answer_text
from mfu_toolkit.render.vocabulary import phrase, phrase_error
from mfu_toolkit.run import InputRequest, Run

GCD_STEM = "'MI250X GCD' names one GCD, one of the 2 devices of a MI250X package, so its peak is per device"
GCD_PYTHON = f"{GCD_STEM}: pass per='device', or name the package ('MI250X') for per='package'"
GCD_CLI = (f"{GCD_STEM}: count devices (--gpus N --per device), or name the package (--accelerator MI250X) "
           "for --per package")
GCD_MAKE = f"{GCD_STEM}: count devices (GPUS=N), or name the package (ACCELERATOR=MI250X) for PACKAGES=N"


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def _gcd_error() -> hardware.DeviceNameError:
    with pytest.raises(hardware.DeviceNameError) as info:
        hardware.get_peak("MI250X GCD", "bf16", per="package")
    return info.value


# --------------------------------------------------------------------------------------------
# a device's name given a per-package peak


def test_a_device_name_for_a_package_peak_keeps_its_python_text_and_carries_its_fields():
    exc = _gcd_error()
    assert isinstance(exc, hardware.RegistryError) and str(exc) == GCD_PYTHON
    assert (exc.name, exc.device, exc.package, exc.devices_per_package) == ("MI250X GCD", "GCD", "MI250X", 2)
    assert (exc.field, exc.value, exc.asks, exc.stem) == ("per", "package", ("per", "accelerator"), GCD_STEM)
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is hardware.DeviceNameError and str(back) == GCD_PYTHON and back.package == "MI250X"
    assert [phrase_error(exc, i) for i in ("python", "cli", "make")] == [GCD_PYTHON, GCD_CLI, GCD_MAKE]


def test_mfu_calc_asks_for_the_per_flag_not_the_keyword(capsys):
    code, out, err = _cli(capsys, "calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "2",
                          "--accelerator", "MI250X GCD", "--per", "package")
    assert code == 2 and out == "" and err == f"mfu calc: error: {GCD_CLI}\n"
    assert "per='" not in err


def test_mfu_analyze_and_make_ask_in_their_own_terms(capsys, monkeypatch):
    args = ("analyze", "data/sample_team_log.csv", "--packages", "2", "--accelerator", "MI250X GCD", "--validate")
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code, _, err = _cli(capsys, *args)
    assert code == 2 and err == f"mfu analyze: error: --accelerator MI250X GCD: {GCD_CLI}\n"
    monkeypatch.setenv("MFU_INTERFACE", "make")  # as make report's check runs it
    code, _, err = _cli(capsys, *args)
    assert code == 2 and err == f"mfu analyze: error: ACCELERATOR=MI250X GCD: {GCD_MAKE}\n"
    assert "PER" not in err  # make report takes no PER: what GPUS= or PACKAGES= counts is what the peak is per


def test_apply_inputs_keeps_the_python_text_and_says_make_for_the_report():
    from mfu_toolkit.inputs import apply_inputs

    run = Run.build(steps=pd.DataFrame({"step": [1, 2], "start_s": [0.0, 1.0], "end_s": [1.0, 2.0]}))
    for interface, text in (("python", f"accelerator='MI250X GCD': {GCD_PYTHON}"),
                            ("make", f"ACCELERATOR=MI250X GCD: {GCD_MAKE}")):
        with pytest.raises(InputError) as info:
            apply_inputs(run, accelerator="MI250X GCD", packages=2, interface=interface)
        assert str(info.value) == text


def test_calc_phrasing_the_request_loads_no_pandas():
    code = ("import sys\nfrom mfu_toolkit.cli import main\n"
            "main(['calc','--model-flops-per-step','1e15','--step-seconds','1','--gpus','2',"
            "'--accelerator','MI250X GCD','--per','package'])\n")
    probe = code + "print(sorted(m for m in ('pandas','numpy') if m in sys.modules), file=sys.stderr)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.stderr.strip().splitlines() == [f"mfu calc: error: {GCD_CLI}", "[]"]


# --------------------------------------------------------------------------------------------
# link requests: one request type, every phrasing as before

# (code, link given) -> (str and python, cli, make), as the previous release printed them
LINK_TEXTS = {
    ("nic", False): ("why; give nic=NAME (e.g. nic='NDR' or nic='400GbE')",
                     "why; give --nic NAME (e.g. --nic NDR or --nic 400GbE)",
                     "why; give NIC=NAME (e.g. NIC=NDR or NIC=400GbE)"),
    ("nic", True): ("why; give nic=NAME (e.g. nic='NDR' or nic='400GbE'); link= is intra-node only",
                    "why; give --nic NAME (e.g. --nic NDR or --nic 400GbE); --link is intra-node only",
                    "why; give NIC=NAME (e.g. NIC=NDR or NIC=400GbE); LINK= is intra-node only"),
    ("link_or_nic", False): ("why; give link=NAME (intra-node) or nic=NAME with the node count",
                             "why; give --link NAME (intra-node) or --nic NAME with the node count",
                             "why; give LINK=NAME (intra-node) or NIC=NAME with the node count"),
    ("link_or_nic", True): (
        "why; give link=NAME (intra-node) or nic=NAME with the node count; link= is intra-node only",
        "why; give --link NAME (intra-node) or --nic NAME with the node count; --link is intra-node only",
        "why; give LINK=NAME (intra-node) or NIC=NAME with the node count; LINK= is intra-node only"),
    ("link", False): ("why; give link=NAME", "why; give --link NAME", "why; give LINK=NAME"),
    ("link", True): ("why; give link=NAME; link= is intra-node only",
                     "why; give --link NAME; --link is intra-node only",
                     "why; give LINK=NAME; LINK= is intra-node only"),
    ("link_rate", False): ("why; give link=NAME of a per-GPU rate (in Python, a Link you state)",
                           "why; give --link NAME of a per-GPU rate", "why; give LINK=NAME of a per-GPU rate"),
    ("link_rate", True): (
        "why; give link=NAME of a per-GPU rate (in Python, a Link you state); link= is intra-node only",
        "why; give --link NAME of a per-GPU rate; --link is intra-node only",
        "why; give LINK=NAME of a per-GPU rate; LINK= is intra-node only"),
}
FIELDS = {"nic": ("nic",), "link_or_nic": ("link", "nic"), "link": ("link",), "link_rate": ("link",)}


@pytest.mark.parametrize(("code", "given"), sorted(LINK_TEXTS))
def test_a_link_request_is_an_input_request_said_as_before(code, given):
    request = link_request("why", code, link_given=given)
    python, cli, make = LINK_TEXTS[code, given]
    assert type(request) is InputRequest and request.asks == FIELDS[code] and request.stem == "why"
    assert request.unused == ((("link", "is intra-node only"),) if given else ())
    assert (str(request), phrase(request, "python"), phrase(request, "cli"), phrase(request, "make")) == (
        python, python, cli, make)
    back = pickle.loads(pickle.dumps(request))
    assert type(back) is InputRequest and back == request
    assert (back.asks, back.python, back.detail, back.examples, back.unused) == (
        request.asks, request.python, request.detail, request.examples, request.unused)
    assert phrase(back, "cli") == cli


def test_every_link_code_is_pinned():
    assert {code for code, _ in LINK_TEXTS} == set(LINK_ASKS)


def test_the_old_link_request_name_warns_and_still_builds_and_recognises_requests():
    from mfu_toolkit.analysis import communication

    with pytest.warns(DeprecationWarning, match="LinkRequest is now mfu_toolkit.run.InputRequest"):
        old = communication.LinkRequest
    built = old("why", "nic", link_given=True)
    assert type(built) is InputRequest and str(built) == LINK_TESTS_NIC_GIVEN
    assert isinstance(link_request("why", "link"), old) and not isinstance(InputRequest("x", ("dtype",), "y"), old)
    assert "LinkRequest" not in communication.__all__


LINK_TESTS_NIC_GIVEN = LINK_TEXTS["nic", True][0]


def test_an_input_request_refuses_data_that_does_not_match_its_fields():
    with pytest.raises(ValueError, match=r"^detail must give one entry per asked field \(1\); got 2$"):
        InputRequest("x", ("link",), "give link=NAME", ("a", "b"))


def test_a_load_note_request_pickled_before_the_new_fields_still_loads():
    # the previous release pickled an InputRequest as InputRequest(stem, asks, python)
    old = pickle.dumps(InputRequest("the GPU is unknown", ("accelerator",), "pass accelerator= to state it"))
    back = pickle.loads(old)
    assert phrase(back, "make") == "the GPU is unknown; give ACCELERATOR=NAME" and back.unused == ()


# --------------------------------------------------------------------------------------------
# an accelerator whose intra-node link the table does not fix

NO_LINK_STEM = ("no intra-node link with a source is listed for 'L40S' (its link depends on how the system is "
                "built, or no sourced figure was found)")


def test_no_listed_link_keeps_its_text_and_carries_its_request():
    with pytest.raises(interconnect.NoListedLinkError) as info:
        interconnect.link_for_accelerator("L40S")
    exc = info.value
    assert isinstance(exc, interconnect.InterconnectError) and exc.stem == NO_LINK_STEM
    assert str(exc).startswith(f"{NO_LINK_STEM}; give the link by name, e.g. link='PCIe Gen5 x16' or "
                               "link='NVLink4'. Accelerators with a listed link: A100 SXM, ")
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)
    assert phrase_error(exc, "cli").startswith(f"{NO_LINK_STEM}; give --link NAME (e.g. --link PCIe Gen5 x16 or "
                                               "--link NVLink4). Accelerators with a listed link: A100 SXM, ")


def test_a_collective_inside_a_node_of_an_unlisted_accelerator_asks_for_link_in_each_interface():
    table = pd.DataFrame({"coll": ["AllReduce"], "comm_name": ["c0"], "rank": [0], "n_ranks": [8], "nnodes": [1],
                          "msg_size_bytes": [2_360_832.0], "exec_time_s": [5.663e-3]})
    run = Run.build(tables={"collectives": table})
    run = Run(run.steps, run.events, run.meta.replace(accelerator="L40S"), run.tables)
    reason = comm_efficiency(run)["reason"].iloc[0]
    prefix = "no intra-node link for the run's accelerator: "
    assert isinstance(reason, InputRequest) and reason.asks == ("link",) and reason.stem == prefix + NO_LINK_STEM
    assert str(reason) == prefix + str(_no_link_error())  # the text as before: the prefix and the error
    said = {i: " ".join(answer_text(build_answer(run), interface=i).split()) for i in ("python", "cli", "make")}
    assert "give the link by name, e.g. link='PCIe Gen5 x16'" in said["python"]
    assert "give --link NAME (e.g. --link PCIe Gen5 x16 or --link NVLink4)" in said["cli"]
    assert "give LINK=NAME (e.g. LINK=PCIe Gen5 x16 or LINK=NVLink4)" in said["make"]
    assert "link='" not in said["cli"] + said["make"]


def _no_link_error() -> interconnect.NoListedLinkError:
    try:
        interconnect.link_for_accelerator("L40S")
    except interconnect.NoListedLinkError as exc:
        return exc
    raise AssertionError("L40S has a listed link")


# --------------------------------------------------------------------------------------------
# FLOPs requests: a sequence length, a convention

SEQ_STEM = ("seq_len must be given for mistral-7b: its source states no training sequence length (a context "
            "window is not one)")


def test_a_missing_sequence_length_keeps_its_python_text_and_mfu_flops_asks_with_the_flag(capsys):
    from mfu_toolkit.flops import model_flops
    from mfu_toolkit.flops.transformer import SeqLenRequiredError

    with pytest.raises(SeqLenRequiredError) as info:
        model_flops("mistral-7b")
    assert str(info.value) == f"{SEQ_STEM}; pass seq_len=N in Python or --seq-len N on the command line"
    assert str(pickle.loads(pickle.dumps(info.value))) == str(info.value)
    assert phrase_error(info.value, "make") == f"{SEQ_STEM}; give SEQ_LEN=N"
    code, _, err = _cli(capsys, "flops", "--preset", "mistral-7b")
    assert code == 2 and err == f"mfu flops: error: {SEQ_STEM}; give --seq-len N\n"
    code, _, err = _cli(capsys, "calc", "--preset", "mistral-7b", "--tokens-per-second", "1e5", "--gpus", "8",
                        "--accelerator", "H100")
    assert code == 2 and err == f"mfu calc: error: {SEQ_STEM}; give --seq-len N\n"


def test_a_convention_without_a_term_asks_for_another_with_the_flag(capsys):
    from mfu_toolkit.flops import model_flops
    from mfu_toolkit.flops.transformer import FlopsConfigError

    with pytest.raises(FlopsConfigError) as info:
        model_flops("deepseek-v3", seq_len=4096, convention="megatron-2024")
    text = str(info.value)
    assert text.endswith("(the 2024 closed form counts every layer alike); use convention='megatron' for deepseek-v3")
    code, _, err = _cli(capsys, "flops", "--preset", "deepseek-v3", "--seq-len", "4096",
                        "--convention", "megatron-2024")
    assert code == 2 and err.endswith("(the 2024 closed form counts every layer alike); give --convention NAME "
                                      "(e.g. --convention megatron)\n")
    assert "convention='" not in err
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert phrase_error(info.value, "python") == text


def test_the_all_to_all_of_sharded_tables_asks_for_a_per_rank_link_as_a_request():
    from mfu_toolkit.analysis import embedding_bandwidth

    bw = embedding_bandwidth("dlrm-dcnv2", samples_per_s=1e6, accelerator="MI250", n_accelerators=8,
                             sharding="table_wise", global_batch=65_536, link="Infinity Fabric MI250")
    stem = ("no link to set it against: Infinity Fabric MI250: the table gives 50 GB/s per link, not per accelerator: "
            "a rank's collective bandwidth depends on how many of its links the collective uses")
    reason = bw.alltoall_reason
    assert isinstance(reason, InputRequest) and reason.stem == stem and reason.asks == ("link",)
    assert reason == f"{stem}; give link=NAME of a per-GPU rate (in Python, a Link you state)"  # as before
    assert phrase(reason, "cli") == f"{stem}; give --link NAME of a per-GPU rate"
    assert phrase(reason, "make") == f"{stem}; give LINK=NAME of a per-GPU rate"


# --------------------------------------------------------------------------------------------
# a MIG slice: its share is stated in a registry CSV from a front end, with register_accelerator in Python

MIG_REASON = ("'H100 MIG 3g.40gb' is a MIG slice 3g.40gb (3 of H100 SXM's 7 compute slices, 40 GB) of 'H100 SXM', "
              "not the whole GPU: its peak is a share of the GPU's, which the registry does not assume (the "
              "whole-GPU peak would understate its MFU about 2.3x)")  # 7 slices / 3 used = 2.33


def test_a_mig_slice_keeps_its_python_text_and_each_front_end_names_a_csv(capsys, monkeypatch):
    with pytest.raises(hardware.SliceRefusedError) as info:
        hardware.get_peak("H100 MIG 3g.40gb")
    exc = info.value
    assert isinstance(exc, hardware.RefusedNameError) and exc.reason == MIG_REASON
    assert str(exc) == (f"{MIG_REASON}. State the slice's share yourself: register_accelerator('H100 MIG 3g.40gb', "
                        "vendor=..., peaks={dtype: your share of the GPU's peak}, ...) under your own name (a slice "
                        "gets roughly its fraction of the SMs, not exactly), or give the peak directly "
                        "(peak_flops_per_accelerator=... in the Python API, --peak-tflops-per-gpu for mfu calc)")
    assert str(pickle.loads(pickle.dumps(exc))) == str(exc)
    csv = ("State the slice's share yourself: a row under your own name, with your share of the GPU's peak, in a "
           "CSV listed in MFU_ACCELERATORS_CSV (a slice gets roughly its fraction of the SMs, not exactly)")
    code, _, err = _cli(capsys, "calc", "--model-flops-per-step", "1e15", "--step-seconds", "1", "--gpus", "8",
                        "--accelerator", "H100 MIG 3g.40gb")
    assert code == 2 and err == f"mfu calc: error: {MIG_REASON}. {csv}, or give the peak directly (mfu calc " \
                                "--peak-tflops-per-gpu)\n"
    monkeypatch.chdir(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    monkeypatch.setenv("MFU_INTERFACE", "make")
    code, _, err = _cli(capsys, "analyze", "data/sample_team_log.csv", "--accelerator", "H100 MIG 3g.40gb",
                        "--validate")
    assert code == 2 and err == f"mfu analyze: error: ACCELERATOR=H100 MIG 3g.40gb: {MIG_REASON}. {csv}\n"
    assert "register_accelerator" not in err and "peak_flops_per_accelerator=" not in err
