"""``mfu analyze --example [NAME]``: the sample logs shipped inside the package.

- the shipped files are what ``python -m mfu_toolkit.examples.make`` writes (byte for byte), and
  they are small;
- each example prints exactly what ``mfu analyze PATH INPUTS`` prints on its file, with a full
  answer (no missing fact), and says on stderr which example and inputs it ran;
- ``--example`` without NAME is the default, ``--examples`` and ``--example list`` list them; a
  flag the user gives wins over the example's; a bad name, or a PATH with ``--example``, is a
  one-line usage error;
- the README's quick start shows ``mfu analyze --example`` first, and its commands run as written.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from mfu_toolkit import examples
from mfu_toolkit.cli import main
from mfu_toolkit.examples.make import FILES

ROOT = Path(__file__).resolve().parents[1]
NAMES = ("megatron", "kineto", "recorded")


def _mfu(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_shipped_examples_are_what_the_generator_writes(tmp_path):
    # the documented command in a fresh interpreter: the recorder's header names the framework only where this
    # process has imported torch already (other tests do), and the command is how the examples are made
    done = subprocess.run([sys.executable, "-m", "mfu_toolkit.examples.make", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for name in FILES:
        assert (tmp_path / name).read_bytes() == (examples.HERE / name).read_bytes(), name
    shipped = {p.relative_to(examples.HERE).as_posix() for p in examples.HERE.rglob("*")
               if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}
    assert shipped == set(FILES)


def test_the_examples_are_small_and_named_once():
    total = sum((examples.HERE / name).stat().st_size for name in FILES)
    assert total < 200_000, total
    assert tuple(examples.names()) == NAMES and examples.names()[0] == examples.DEFAULT
    for ex in examples.EXAMPLES.values():
        assert ex.path.exists() and "\n" not in ex.summary and ex.args
        assert ex.command().startswith(f"mfu analyze {ex.path}")


def test_an_unknown_example_is_a_lookup_error_naming_the_known_ones():
    with pytest.raises(LookupError, match="megatron, kineto, recorded"):
        examples.get("nope")


@pytest.mark.slow
@pytest.mark.parametrize("name", NAMES)
def test_an_example_prints_what_the_same_command_prints_on_its_file(capsys, name):
    ex = examples.get(name)
    code, out, err = _mfu(capsys, "analyze", "--example", name)
    same = _mfu(capsys, "analyze", str(ex.path), *ex.args)
    assert (code, out) == same[:2] and code == 0
    assert same[2] == ""
    assert err.splitlines() == [f"example {name!r}: {ex.summary}; given as {' '.join(ex.args)}",
                                f"  the same as: {ex.command()}"]
    assert re.search(r"^Steady-state MFU: \d+\.\d+% ", out, re.M) and "Missing facts" not in out


def test_the_default_example_as_json_is_the_full_answer(capsys):
    code, out, _ = _mfu(capsys, "analyze", "--example", "--json")
    same = _mfu(capsys, "analyze", str(examples.path()), *examples.get().args, "--json")
    assert code == 0 and out == same[1]
    doc = json.loads(out)
    assert doc["log_name"] == "megatron_train.log" and not doc["missing"]


def test_a_flag_the_user_gives_wins_over_the_examples(capsys):
    code, out, err = _mfu(capsys, "analyze", "--example", "--accelerator", "B200", "--validate")
    assert code == 0, err
    assert "accelerator = B200 (from command line --accelerator)" in out and "H100" not in out
    assert "(yours replace --accelerator H100)" in err and "  without yours: mfu analyze " in err
    # --flops-per-step replaces the example's --preset (the two exclude each other)
    code, out, err = _mfu(capsys, "analyze", "--example", "kineto", "--flops-per-step", "9.5e14", "--validate")
    assert code == 0, err
    assert "command line --flops-per-step" in out and "preset" not in out
    assert "(yours replace --preset llama3-8b)" in err


@pytest.mark.parametrize("argv", [("--examples",), ("--example", "list")])
def test_the_examples_are_listed_with_their_inputs(capsys, argv):
    code, out, _ = _mfu(capsys, "analyze", *argv)
    assert code == 0 and out.strip() == examples.listing()
    for ex in examples.EXAMPLES.values():
        assert ex.summary in out and f"given as {' '.join(ex.args)}" in out


@pytest.mark.parametrize("argv, fragment", [
    (("--example", "nope"), "no example 'nope'; the examples are megatron, kineto, recorded"),
    (("some.log", "--example"), "give a log PATH or --example, not both"),
    ((), "give a log PATH (or --example"),
])
def test_misuse_is_a_one_line_usage_error(capsys, argv, fragment):
    code, out, err = _mfu(capsys, "analyze", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and fragment in err and err.startswith("mfu analyze: error: ")


def _quick_start() -> str:
    text = (ROOT / "README.md").read_text()
    return text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]


def _commands(block: str) -> list[list[str]]:
    """The ``mfu analyze --example`` commands of a README block, as a shell splits them (comments dropped)."""
    lines = [line for line in block.splitlines() if re.match(r"mfu analyze --examples?\b", line.strip())]
    return [shlex.split(line, comments=True) for line in lines]


def test_the_readme_quick_start_opens_with_an_example():
    first_block = _quick_start().split("```", 2)[1]
    commands = _commands(first_block)
    assert commands and commands[0] == ["mfu", "analyze", "--example"]


@pytest.mark.slow
def test_the_readme_example_commands_run_as_written(capsys):
    commands = _commands((ROOT / "README.md").read_text())
    assert len(commands) >= 2
    for words in commands:
        code, out, err = _mfu(capsys, *words[1:])
        assert code == 0, (words, err)
        assert out.strip()
