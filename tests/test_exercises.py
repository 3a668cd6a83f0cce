"""The exercise notebooks: generated from the curated ones, never edited by hand, and they run.

- Regenerating them (``tools/make_exercises.py``) into a temporary folder gives exactly the
  committed files, so they never drift from their curated notebooks.
- Each runs top to bottom in a fresh kernel without an error.
- The rules of the generator hold on every one (outputs cleared, readings replaced by prompts,
  one answer cell per question) and, on a small notebook written here, each rule does what its
  docstring says.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import nbformat
import pytest
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
EXERCISES = ROOT / "notebooks" / "exercises"
COMMITTED = sorted(EXERCISES.glob("[0-9][0-9]_*.ipynb"))


def _generator():
    return load_script("tools/make_exercises.py")


def test_every_teaching_notebook_has_an_exercise_version():
    gen = _generator()
    names = [p.name for p in gen.teaching_notebooks()]
    assert {"04_steady_state_vs_end_to_end.ipynb", "05_stragglers.ipynb", "06_checkpoints_and_failures.ipynb",
            "07_scaling_and_the_gem_story.ipynb", "13_communication_and_downtime.ipynb",
            "14_recsys_at_gem_scale.ipynb"} <= set(names)
    assert "08_team_report.ipynb" not in names
    assert [p.name for p in COMMITTED] == names, "run `make exercises` (tools/make_exercises.py)"


def test_committed_exercises_equal_a_fresh_generation(tmp_path):
    written = _generator().generate(tmp_path)
    assert [p.name for p in written] == [p.name for p in COMMITTED]
    for fresh in written:
        committed = EXERCISES / fresh.name
        assert fresh.read_bytes() == committed.read_bytes(), (
            f"{committed.relative_to(ROOT)} has drifted from its curated notebook: run `make exercises`")


@pytest.fixture(scope="module")
def executed():
    """Every committed exercise, executed in a fresh kernel from notebooks/exercises/.

    One after the other: run two at a time, one run in a few stalled for minutes."""
    from nbclient import NotebookClient

    results = {}
    for path in COMMITTED:
        nb = nbformat.read(path, as_version=4)
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": str(path.parent)}}).execute()
        results[path.name] = [
            {"index": i, "ran": c.execution_count is not None or not c.source.strip(),
             "errors": [f"{o['ename']}: {o['evalue']}" for o in c.outputs if o.output_type == "error"]}
            for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    return results


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_exercise_runs_without_errors(path, executed):
    cells = executed[path.name]
    errors = [f"cell {c['index']}: {e}" for c in cells for e in c["errors"]]
    assert not errors, errors
    assert all(c["ran"] for c in cells), "some code cells did not run"


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: p.name)
def test_exercise_shape(path):
    ex = json.loads(path.read_text())
    curated = json.loads((ROOT / "notebooks" / path.name).read_text())
    cells = ex["cells"]
    assert cells[0]["source"][0].rstrip().endswith("— exercises")
    assert "Exercise version" in "".join(cells[1]["source"])
    code = [c for c in cells if c["cell_type"] == "code"]
    assert all(not c["outputs"] and c["execution_count"] is None for c in code), "outputs must be cleared"
    assert "widgets" not in ex["metadata"]
    # every question to try has its own answer cell
    last = "".join(curated["cells"][-1]["source"])
    questions = re.findall(r"^(\d+)\.\s", last.split("Questions to try", 1)[1], flags=re.M)
    answers = [c for c in code if "".join(c["source"]).startswith("# Question ")]
    assert len(answers) == len(questions) >= 3
    # the readings are gone: the first sentence of each curated reading no longer appears
    text = "\n".join("".join(c["source"]) for c in cells)
    prompts = sum("Your reading." in "".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert prompts >= len([c for c in curated["cells"] if c["cell_type"] == "code"]) // 2
    for i, cell in enumerate(curated["cells"][:-1]):
        nxt = curated["cells"][i + 1]
        if i > 1 and cell["cell_type"] == "code" and nxt["cell_type"] == "markdown":
            first = "".join(nxt["source"]).split("\n\n")[0]
            if not first.lstrip().startswith("#") and not first.rstrip().endswith(":"):
                assert first[:80] not in text, f"a reading of {path.name} survived: {first[:80]!r}"
    # code is the curated code (paths one folder deeper; marked answers blanked)
    ours = ["".join(c["source"]) for c in code
            if not "".join(c["source"]).startswith(("# Question ", "# Check question "))]
    theirs = [re.sub(r"""(["'])\.\./data(?=[/"'])""", r"\1../../data", "".join(c["source"]))
              for c in curated["cells"] if c["cell_type"] == "code"]
    assert len(ours) == len(theirs)
    assert all(a == b or a.startswith("# TODO:") for a, b in zip(ours, theirs, strict=True))


def _md(text):
    return nbformat.v4.new_markdown_cell(text)


def _code(text, tags=None):
    cell = nbformat.v4.new_code_cell(text)
    if tags:
        cell.metadata["tags"] = tags
    return cell


def test_rules_on_a_small_notebook():
    gen = _generator()
    nb = nbformat.v4.new_notebook(cells=[
        _md("# 99 · A title\n\nWhy it matters."),
        _code("%matplotlib inline\nSEED = 0"),
        _md("The setup pins the seed.\n\n## 1. First"),
        _code('x = open("../data/example.csv").read()\nd = Path(\'../data\')\ny = "../database"'),
        _md("x has 12 rows, so the answer is 12.\n\nThat is many. Now the mean:"),
        _code("# ANSWER: the mean of x\nm = len(x) / 3", tags=None),
        _md("The mean is 4.\n\n$$\na = b\n\nc = d\n$$\n\n## 2. Second\n\nIntro text."),
        _code("y = 2", tags=["answer"]),
        _md("Lead-in only:"),
        _code("print(1)"),
        _md("It printed 1.\n\n## Questions to try\n\n1. Why 1?\n   Think.\n2. Why not 2?"),
    ])
    ex = gen.exercise(nb, "99_small.ipynb")
    src = [c.source for c in ex.cells]
    assert src[0] == "# 99 · A title — exercises\n\nWhy it matters."
    assert "Exercise version" in src[1] and "../99_small.ipynb" in src[1]
    assert src[3] == "The setup pins the seed.\n\n## 1. First"                    # setup prose kept
    assert src[4] == 'x = open("../../data/example.csv").read()\nd = Path(\'../../data\')\ny = "../database"'  # paths
    assert src[5].startswith("> ✏️ **Your reading.**") and "12" not in src[5]     # reading removed
    assert src[5].endswith("\n\nNow the mean:")                                   # its lead-in kept
    assert src[6].startswith("# TODO: the mean of x\n") and "len(x)" not in src[6]  # # ANSWER blanked
    assert "The mean is 4" not in src[7] and "a = b\n\nc = d" not in src[7]       # $$ block is one paragraph
    assert src[7].endswith("## 2. Second\n\nIntro text.")
    assert src[8].startswith("# TODO: compute this step yourself") and "y = 2" not in src[8]  # tagged
    assert src[9] == "Lead-in only:"                                              # nothing to remove
    assert "It printed 1" not in src[11] and src[11].endswith("## Questions to try")
    assert src[12:] == ["**Question 1.** Why 1? Think.", "# Question 1: your answer — code, or comments "
                        "with your reasoning\n", "**Question 2.** Why not 2?",
                        "# Question 2: your answer — code, or comments with your reasoning\n"]
    assert all(not c.outputs for c in ex.cells if c.cell_type == "code")
    assert len({c.id for c in ex.cells}) == len(ex.cells)
    nbformat.validate(ex)



def test_questions_with_checks_check_themselves():
    """Rule 6: an answer cell names its variable; the check after it passes a right answer, refuses a
    wrong one with a hint, and only reports an unanswered one (so the notebook still runs)."""
    gen = _generator()
    assert {"01_mfu_basics", "02_model_flops", "06_checkpoints_and_failures", "11_roofline",
            "12_check_a_claim", "13_communication_and_downtime", "14_recsys_at_gem_scale"} <= set(gen.CHECKS)
    for path in COMMITTED:
        ex = json.loads(path.read_text())
        checks = gen.CHECKS.get(path.stem, {})
        sources = ["".join(c["source"]) for c in ex["cells"] if c["cell_type"] == "code"]
        for n, specs in checks.items():
            answer = next(i for i, t in enumerate(sources) if t.startswith(f"# Question {n}:"))
            assert all(f"{var} = None" in sources[answer] for var, *_ in specs)
            assert sources[answer + 1].startswith(f"# Check question {n}:"), f"{path.name}: question {n}"
    n, specs = 2, gen.CHECKS["01_mfu_basics"][2]
    check = gen._check_source(n, specs)
    env = {"step_s": None}
    exec(check, env)  # unanswered: prints, does not raise
    env["step_s"] = 2.4e15 / (0.20 * 128 * 989.4e12)  # the hand computation of the answer
    exec(check, env)
    env["step_s"] = 0.10  # what the old 0.05 s slider offered
    with pytest.raises(AssertionError, match="Hint: MFU = F"):
        exec(check, env)
