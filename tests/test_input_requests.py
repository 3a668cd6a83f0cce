"""A loader's note that asks for an input (``run.InputRequest``) is said in each interface's terms:
``pass step_pattern=`` in Python, ``--step-pattern REGEX`` on the command line, ``STEP_PATTERN=REGEX``
under make, in the answer's text and JSON alike, without the library's sentence being read back."""

from __future__ import annotations

import json
import pickle
import warnings

import pytest
from _realdata import realdata  # noqa: F401  (fixture)

from mfu_toolkit.analysis import build_answer
from mfu_toolkit.io import load_run
from mfu_toolkit.render import answer_dict, answer_text
from mfu_toolkit.render.vocabulary import phrase
from mfu_toolkit.run import InputRequest


def test_a_request_is_its_python_sentence_and_asks_per_interface():
    r = InputRequest("the GPU is unknown", ("accelerator",), "pass accelerator= to state it")
    assert r == "the GPU is unknown; pass accelerator= to state it" and phrase(r, "python") == r
    assert phrase(r, "cli") == "the GPU is unknown; give --accelerator NAME"
    assert phrase(r, "make") == "the GPU is unknown; give ACCELERATOR=NAME"
    back = pickle.loads(pickle.dumps(r))  # a saved LoadReport keeps the request
    assert isinstance(back, InputRequest) and back == r and back.asks == ("accelerator",)
    with pytest.raises(ValueError, match=r"field must be one of .*; got 'not_an_input'"):  # a request for no input
        phrase(InputRequest("x", ("not_an_input",), "pass it"), "cli")


def test_an_nsys_capture_without_steps_asks_for_the_step_pattern(realdata):  # noqa: F811
    # the real capture names no NVTX step range (and no GPU): both notes ask for what would supply them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = build_answer(load_run(realdata / "nsys" / "GindaChen_nsys-ai_mfu_2gpu_after.sqlite"))
    flat = {i: " ".join(answer_text(answer, interface=i).split()) for i in ("python", "cli", "make")}
    assert "pass step_pattern= to name the ranges that mark steps" in flat["python"]
    assert "tables['kernels']; give --step-pattern REGEX" in flat["cli"] and "pass step_pattern=" not in flat["cli"]
    assert "give STEP_PATTERN=REGEX" in flat["make"] and "give --accelerator NAME" in flat["cli"]
    doc = json.loads(json.dumps(answer_dict(answer, interface="cli")))
    notes = [c["message"] for c in doc["checks"] if c["code"] == "load.note"]
    assert any(n.endswith("give --step-pattern REGEX") for n in notes)
    assert not any("pass " in n and "=" in n.split("pass ", 1)[1][:20] for n in notes)


def test_the_facts_notes_ask_in_the_interfaces_terms_too(tmp_path):
    # a V100 has no bf16 peak (fp64, fp32, fp16 in the registry, from NVIDIA's V100 datasheet): without a
    # dtype the peak stays unknown, and the note asks for the dtype as each interface spells it
    log = tmp_path / "steps.csv"
    log.write_text("step,start_s,end_s\n" + "".join(f"{i},{i},{i + 1}\n" for i in range(4)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        answer = build_answer(load_run(log, accelerator="V100"))
    flat = {i: " ".join(answer_text(answer, interface=i).split()) for i in ("python", "cli", "make")}
    assert "V100 has no bf16 peak (it has fp64, fp32, fp16); pass dtype=" in flat["python"]
    assert "(it has fp64, fp32, fp16); give --dtype" in flat["cli"] and "pass dtype=" not in flat["cli"]
    assert "(it has fp64, fp32, fp16); give DTYPE=" in flat["make"]
