"""Every command in README.md is run by a test, as written.

The commands are read from the README itself: every line of a ```` ```bash ````, ```` ```sh ```` or
```` ```shell ```` block that is not a comment, and every ``$ `` line of a ```` ```console ```` block
(a line ending in ``\\`` continues on the next); a trailing ``# ...`` is a comment, not part of the
command. Lines of a console block that are neither commands nor comments are the output the README
shows for the command above them, and the command must print them as shown. Each command is

- **run here as written**, through bash, in a fresh folder that holds the inputs it names;
- **completed here** where the README writes ``...`` for "the other flags" (or sizes that take hours):
  the command run keeps every word the README wrote, in order, and only fills in the elision (or
  makes the sizes smaller), as ``COMPLETED`` lists;
- **run elsewhere**: by the named test (``file::function``, which must exist), or by CI (``.ci/run``
  runs ``make venv`` and ``make test``, whose recipes hold the README's command).

A command in none of these fails ``test_every_readme_command_has_a_way_to_run``: a new README command
comes with its way to run. The ```` ```python ```` blocks run too, in README order in one
interpreter (a later block uses the ``run`` an earlier one loaded), except the lines ``PY_NOT_RUN``
lists with the reason.

Inputs, by rule (the names the README uses, never fitted to a command's output):

- ``run.log`` and ``train.log`` are the package's sample Megatron-LM log
  (``mfu_toolkit/examples/megatron_train.log``: Llama 3 8B on 8 H100s), the log the quick start analyses;
- ``logs/`` holds the package's sample logs (``mfu_toolkit/examples/``), and ``logs/result_0.txt`` a
  real MLPerf result log (``$MFU_REALDATA/mlperf``); ``trace-AR.parquet`` is the straggler artifact's
  AR trace (``$MFU_REALDATA/straggler_ops``); ``traces/`` the package's two Kineto ranks;
- ``my_model.toml`` is ``data/example_model.toml`` (the README points to it);
- ``gem_4096x100k`` and ``s3-export/steps/`` are Parquet datasets ``mfu simulate --dataset`` writes;
- ``notebooks/`` is a copy of the curated notebooks; ``.venv`` and ``benchmarks`` link to the project's.

Exit status 0, unless the README states another outcome for the command: ``--strict`` exits 1 on a
check that warns (the sample log states 8 H100s, the command gives 16), ``--validate`` 0 or 2.
No command may print a traceback. Jupyter's and pip's folders are in the test's tmp folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from _browser import free_port
from _procs import read_until, stop_process_group

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
VENV_BIN = Path(sys.executable).parent
EXAMPLES = ROOT / "mfu_toolkit" / "examples"
SHELL_BLOCK = re.compile(r"^```(bash|sh|shell|console)\n(.*?)^```", re.S | re.M)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)

# README command -> the test that runs it (or ".ci/run", with the make target whose recipe runs it).
ELSEWHERE: dict[str, str] = {
    "pip install .": "tests/test_wheel.py::test_the_commands_run_from_the_wheel",  # builds and installs this tree
    "make test": ".ci/run::make test",
    "make lab": "tests/test_make_lab.py::test_make_lab_starts_and_prints_its_url",
    ".venv/bin/pip install -c constraints.txt -e '.[test,lab]'": ".ci/run::make venv",
    ".venv/bin/python -m pytest --nbval --nbval-current-env --nbval-cell-timeout=120 tests notebooks":
        ".ci/run::make test",
    "mfu analyze gem_4096x100k --engine spark": "tests/test_spark.py::test_ten_million_rows",  # a JVM start
    "make docs": "tests/test_docs_site.py::test_every_page_opens_offline_with_its_explorers_drawn",  # its fixture
}
# For ".ci/run::make T": the Makefile line (a regex) of T's recipe, or of the venv rule it depends on, that
# runs the README's command; a named group "extras" must hold the README command's extras (make may add more).
MAKE_RECIPE = {
    ".venv/bin/pip install -c constraints.txt -e '.[test,lab]'":
        r"\$\(PY\) -m pip install --quiet -c constraints\.txt -e '\.\[(?P<extras>[\w,]+)\]'",
    ".venv/bin/python -m pytest --nbval --nbval-current-env --nbval-cell-timeout=120 tests notebooks":
        r"\$\(PY\) -m pytest \$\(NBVAL\) -p no:cacheprovider tests notebooks",
    "make test": r"\$\(PY\) -m pytest \$\(NBVAL\) -p no:cacheprovider tests notebooks",
}
NBVAL_FLAGS = "--nbval --nbval-current-env --nbval-cell-timeout=120"  # the Makefile's NBVAL, as the README writes it
MFU_CALC = "mfu calc --model-flops-per-step 2.4e15 --step-seconds 1.2"
# README command -> the command run: the README's words in order, the elision filled in (or sizes made
# smaller: 409.6M simulated rows take hours, 8.2M rows take seconds).
COMPLETED: dict[str, str] = {
    "mfu calc ... --json": f'{MFU_CALC} --gpus 128 --accelerator "NVIDIA H100 80GB HBM3" --dtype bf16 --json',
    "mfu calc --preset llama3-405b --seq-len 131072 --causal ...":
        "mfu calc --preset llama3-405b --seq-len 131072 --causal --tokens-per-second 2e6 --gpus 16384 "
        "--accelerator H100",
    "mfu analyze run.log --accelerator MI250X --packages 256 ...":
        "mfu analyze run.log --accelerator MI250X --packages 256 --preset llama3-70b --seq-len 8192",
    "MFU_INTERFACE=make mfu analyze ...": "MFU_INTERFACE=make mfu analyze run.log --validate",
    "mfu simulate --ranks 4096 --steps 100000 --jitter 0.03 --slow-ranks 17 --slow-factor 1.25 --dataset gem_4096x100k":
        "mfu simulate --ranks 64 --steps 500 --jitter 0.03 --slow-ranks 17 --slow-factor 1.25 --dataset gem_4096x100k",
    ".venv/bin/python benchmarks/scale.py --ranks 4096 --steps 100000":
        ".venv/bin/python benchmarks/scale.py --ranks 64 --steps 500",
}
SMALLER = {"--ranks", "--steps"}  # the only words a completion may change (their numbers)
# Python shown, not run, and why: a block (by its first line), or one line (with the lines indented under it).
PY_NOT_RUN: dict[str, str] = {
    "from mfu_toolkit.record import StepRecorder": "a training loop to copy: loader, all_reduce_gradients and save "
                                                   "are the reader's (tests/test_record.py runs StepRecorder)",
    'run = kineto.load_traces(["/nfs/a/rank0.json.gz", "/nfs/b/rank1.json.gz"], engine="spark", spark=spark)  '
    "# from mfu_toolkit.io import kineto":
        "paths on a cluster's file system and a Spark session (tests/test_kineto_ranks.py runs load_traces)",
}
# Exit statuses the README states for a command's flags; 0 otherwise.
STATED_EXITS = {"--strict": {0, 1}, "--validate": {0, 2}}


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a shell comment (outside quotes, after a blank)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i].rstrip()
    return line.rstrip()


def _logical_lines(body: str) -> list[str]:
    """The block's lines with ``\\`` continuations joined."""
    out: list[str] = []
    pending = ""
    for raw in body.splitlines():
        text = pending + (" " + raw.strip() if pending else raw)
        if _without_comment(text).endswith("\\"):
            pending = _without_comment(text)[:-1].rstrip()
            continue
        pending = ""
        out.append(text)
    return out


def readme_commands(text: str) -> list[tuple[int, str, list[str]]]:
    """(README line, command, output lines shown under it) for every command of a shell block."""
    found: list[tuple[int, str, list[str]]] = []
    for m in SHELL_BLOCK.finditer(text):
        lang, body = m.group(1), m.group(2)
        first = text[:m.start(2)].count("\n") + 1
        for n, line in enumerate(_logical_lines(body)):
            code = _without_comment(line)
            if lang == "console":
                if line.startswith("$ "):
                    found.append((first + n, " ".join(code[2:].split()), []))
                elif code.strip() and found:
                    found[-1][2].append(re.sub(r"\s{2,}#.*$", "", line).rstrip())
            elif code.strip():
                found.append((first + n, " ".join(code.split()), []))
    return found


def python_blocks(text: str) -> list[tuple[int, str]]:
    return [(text[:m.start(1)].count("\n") + 1, m.group(1)) for m in PYTHON_BLOCK.finditer(text)]


COMMANDS = readme_commands(README.read_text())
RUN_HERE = [(n, c, out) for n, c, out in COMMANDS if c not in ELSEWHERE]


def test_every_readme_command_has_a_way_to_run():
    """Each command is run here (as written or completed) or elsewhere, and every table row is a README
    command (a row for a command the README dropped is stale)."""
    commands = {c for _, c, _ in COMMANDS}
    assert len(COMMANDS) >= 30, f"found only {len(COMMANDS)} commands: the README's blocks changed shape"
    elided = [c for c in commands if "..." in c.split() and c not in COMPLETED and c not in ELSEWHERE]
    assert not elided, f"README commands with '...' that nothing completes: {elided}"
    for table in (ELSEWHERE, COMPLETED, MAKE_RECIPE):
        assert set(table) <= commands, f"rows for commands the README no longer has: {set(table) - commands}"
    lines = README.read_text().splitlines()
    for line in PY_NOT_RUN:
        assert line in lines, f"PY_NOT_RUN names a line the README no longer has: {line!r}"


@pytest.mark.parametrize("command", sorted(ELSEWHERE))
def test_the_test_that_runs_a_command_exists(command):
    where = ELSEWHERE[command]
    path, name = where.split("::")
    source = (ROOT / path).read_text()
    if path == ".ci/run":
        assert re.search(rf"(?m)^{re.escape(name)}$", source), f".ci/run does not run `{name}`"
        target = name.split()[1]
        makefile = (ROOT / "Makefile").read_text()
        assert re.search(rf"(?m)^{target}:", makefile), f"the Makefile has no target {target}"
        m = re.search(MAKE_RECIPE[command], makefile) if command in MAKE_RECIPE else None
        assert command not in MAKE_RECIPE or m, f"`make {target}` no longer runs {command!r}"
        if m and "extras" in m.groupdict():
            wanted = set(re.search(r"\.\[([\w,]+)\]", command).group(1).split(","))
            assert wanted <= set(m.group("extras").split(",")), f"make installs {m.group('extras')}, README {wanted}"
        if "$(NBVAL)" in MAKE_RECIPE.get(command, ""):
            assert f"NBVAL  := {NBVAL_FLAGS}" in makefile, "the Makefile's nbval flags are not the README's"
    else:
        assert re.search(rf"(?m)^def {name}\(", source), f"{where} does not exist"


@pytest.mark.parametrize("command", sorted(COMPLETED), ids=lambda c: " ".join(c.split()[:4]))
def test_a_completion_keeps_every_word_the_readme_wrote(command):
    """The README's words, in order, are a subsequence of the command run ( ``...`` aside); a size flag's
    number may be smaller."""
    import shlex

    written = [w for w in shlex.split(command) if w != "..."]
    run = shlex.split(COMPLETED[command])
    i = 0
    for j, word in enumerate(run):
        if i < len(written) and (word == written[i] or (j and run[j - 1] in SMALLER and written[i - 1] in SMALLER
                                                        and float(word) <= float(written[i]))):
            i += 1
    assert i == len(written), f"{COMPLETED[command]!r} drops or changes words of {command!r}"


# --- the folder a command runs in ------------------------------------------------------------------


def _inputs(folder: Path, command: str, realdata: Path | None) -> None:
    """Put into ``folder`` what ``command`` names, by the rules of the module docstring."""
    words = set(re.findall(r"[\w./*-]+", command))
    for name in ("run.log", "train.log"):
        if name in words:
            shutil.copy(EXAMPLES / "megatron_train.log", folder / name)
    if "logs/" in words or any(w.startswith("logs/") for w in words):
        shutil.copytree(EXAMPLES, folder / "logs", ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        mlperf = realdata and sorted((realdata / "mlperf").glob("*gpt3_result_0.txt"))
        if mlperf:
            shutil.copy(mlperf[0], folder / "logs" / "result_0.txt")
    if "my_model.toml" in words:
        shutil.copy(ROOT / "data" / "example_model.toml", folder / "my_model.toml")
    if "trace-AR.parquet" in words and realdata:
        for name in ("trace-AR.parquet", "meta-AR.yaml"):
            shutil.copy(realdata / "straggler_ops" / name, folder / name)
    if "traces/" in words:
        shutil.copytree(EXAMPLES / "kineto", folder / "traces")
    if any(w.startswith("notebooks") for w in words):
        shutil.copytree(ROOT / "notebooks", folder / "notebooks", ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for dataset in ("gem_4096x100k", "s3-export/steps/"):
        if dataset in words and not command.startswith("mfu simulate"):
            _sh(folder, f"mfu simulate --ranks 64 --steps 200 --slow-ranks 17 --dataset {dataset}", check=True)
    if command.startswith(".venv/"):
        (folder / ".venv").symlink_to(ROOT / ".venv")
    if "benchmarks/scale.py" in words:
        (folder / "benchmarks").symlink_to(ROOT / "benchmarks")


def _env(folder: Path) -> dict[str, str]:
    return {**os.environ, "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "JUPYTER_CONFIG_DIR": str(folder / ".jupyter-cfg"), "JUPYTER_DATA_DIR": str(folder / ".jupyter-data"),
            "JUPYTER_RUNTIME_DIR": str(folder / ".jupyter-run"), "PIP_NO_INPUT": "1"}


def _sh(folder: Path, command: str, check: bool = False) -> subprocess.CompletedProcess:
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=_env(folder), capture_output=True, text=True,
                          timeout=300)
    if check:
        assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr[-2000:]}"
    return done


def _serve(folder: Path, command: str) -> None:
    """A server command (``jupyter lab``): it starts and prints its URL on the port chosen here."""
    port = free_port()
    env = {**_env(folder), "JUPYTER_PORT": str(port), "JUPYTER_TOKEN": "readme"}
    proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=folder, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        m, text = read_until(proc, rf":{port}/lab", timeout_s=120)
        assert m, f"{command}: no URL on port {port}\n{text[-2000:]}"
    finally:
        stop_process_group(proc)


def _check_run(command: str, run: str, done: subprocess.CompletedProcess, shown: list[str]) -> None:
    allowed = set().union(*[codes for flag, codes in STATED_EXITS.items() if flag in run.split()]) or {0}
    assert done.returncode in allowed, (f"{run}: exit {done.returncode} (the README's outcomes: {sorted(allowed)})\n"
                                        f"{done.stderr[-3000:]}")
    assert "Traceback" not in done.stderr, f"{run}: traceback\n{done.stderr[-3000:]}"
    printed = [line.rstrip() for line in done.stdout.splitlines()]
    missing = [line for line in shown if line not in printed]
    assert not missing, f"{command}: the README shows {missing}, the command printed:\n{done.stdout[-3000:]}"


@pytest.mark.slow  # a process per command: about a minute in all (the 8.2M-row simulate is 12 s of it)
@pytest.mark.parametrize("line, command, shown", RUN_HERE, ids=[f"README.md:{n}" for n, _, _ in RUN_HERE])
def test_the_readme_command_runs(line, command, shown, tmp_path, request):
    run = COMPLETED.get(command, command)
    realdata = Path(os.environ["MFU_REALDATA"]) if os.environ.get("MFU_REALDATA") else None
    if "--allow-root" in run.split() and os.geteuid() != 0:
        pytest.skip("the README runs it as root only ('# as root'); the line above it is the one for others")
    if run.startswith(".venv/bin/jupyter lab") and "--allow-root" not in run.split() and os.geteuid() == 0:
        pytest.skip("as root the README runs the --allow-root line below it (Jupyter refuses root without it)")
    _inputs(tmp_path, run, realdata)
    if run.startswith(".venv/bin/jupyter lab"):
        _serve(tmp_path, run)
        return
    done = _sh(tmp_path, run)
    _check_run(command, run, done, shown)
    if "--html" in run.split() or "--csv" in run.split():
        written = run.split()[run.split().index("--html" if "--html" in run.split() else "--csv") + 1]
        assert (tmp_path / written).stat().st_size > 0, f"{run}: wrote no {written}"
    if run.startswith(".venv/bin/jupyter trust"):
        assert done.stdout.count("Signing notebook") + done.stderr.count("Signing notebook") >= 14, done.stderr


@pytest.mark.slow
def test_the_readme_python_blocks_run(tmp_path):
    """The ```python blocks in README order in one interpreter, in a folder with their inputs; the lines of
    ``PY_NOT_RUN`` (a whole block, or a line and the statement it opens) are left out."""
    realdata = Path(os.environ["MFU_REALDATA"]) if os.environ.get("MFU_REALDATA") else None
    if realdata is None:
        pytest.skip("the README's load_run examples read real logs: set MFU_REALDATA")
    code: list[str] = []
    for _, block in python_blocks(README.read_text()):
        if block.splitlines()[0] in PY_NOT_RUN:
            continue
        skipping = False
        for raw in block.splitlines():
            if raw in PY_NOT_RUN or (skipping and raw.startswith((" ", "\t"))):
                skipping = True  # the line left out, and the statement it opens
                continue
            skipping = False
            code.append(raw)
    program = "\n".join(code) + "\n"
    _inputs(tmp_path, program, realdata)
    (tmp_path / "readme_blocks.py").write_text(program)
    done = subprocess.run([sys.executable, "readme_blocks.py"], cwd=tmp_path, env=_env(tmp_path),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "run.parquet").stat().st_size > 0  # the block's last line writes it
