"""Generate the exercise versions of the teaching notebooks into ``notebooks/exercises/``.

The exercise version of ``notebooks/NN_name.ipynb`` is ``notebooks/exercises/NN_name.ipynb``. It
is made from the curated notebook as committed — nothing has to be marked in it — by these rules:

1. **Outputs are cleared** (and execution counts, widget state, timestamps): a learner predicts,
   then runs the cell.
2. **Readings become prompts.** Every code cell in a curated notebook is followed by prose that
   interprets the numbers it printed: that reading is the answer. In the markdown cell after each
   code cell (the setup cell excepted), the paragraphs before the first heading are replaced by a
   prompt to write one's own reading. The last sentence of a reading that ends with ``:``
   introduces the next cell and is kept, and so is everything from the first heading on (the
   next section).
3. **Each question gets a cell.** The numbered items under "Questions to try" become one markdown
   cell each, followed by an empty code cell for the answer.
4. **Marked answers are blanked.** A code cell whose first line is ``# ANSWER`` or that is tagged
   ``answer`` keeps only a ``# TODO`` comment (a comment-only cell still runs). Later cells must
   not use its names: ``tests/test_exercises.py`` executes every exercise notebook.
5. **Paths**: quoted paths in code that start with ``../data`` start with ``../../data`` instead
   (the exercises live one folder deeper).

Code cells are otherwise unchanged, so every exercise runs exactly as its curated notebook does.
The output is deterministic (cell ids are kept or derived from the position), so the committed
exercises can be compared with a fresh generation (``tests/test_exercises.py`` does, so they
never drift from their notebooks). Run with the project's venv after changing a notebook:

    .venv/bin/python tools/make_exercises.py            # or: make exercises
    .venv/bin/python tools/make_exercises.py --out DIR  # somewhere else
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
OUT = NOTEBOOKS / "exercises"
# The teaching notebooks: every numbered notebook except the report template.
NOT_TEACHING = {"08_team_report.ipynb"}

PROMPT = ("> ✏️ **Your reading.** What did the cell above compute or show? Write down the numbers "
          "that matter and what they mean before you read on. *(`../{name}` has the worked reading.)*")
QUESTION_CELL = "# Question {n}: your answer — code, or comments with your reasoning\n"
TODO = ("# TODO: {hint}\n"
        "# Write your own code here; ../{name} has one answer.\n")
_ITEM = re.compile(r"^(\d+)\.\s+(.*)$")
_DATA = re.compile(r"""(["'])\.\./data(?=[/"'])""")  # a quoted path that starts with ../data
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z(*`_])")  # a sentence end: ". " before a capital


def teaching_notebooks(folder: Path = NOTEBOOKS) -> list[Path]:
    return [p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb")) if p.name not in NOT_TEACHING]


def _blocks(text: str) -> list[str]:
    """Paragraphs separated by blank lines, never splitting a fenced code or $$ math block."""
    blocks, cur, fence, math = [], [], False, False
    for line in text.split("\n"):
        s = line.strip()
        if s.startswith("```"):
            fence = not fence
        elif s.startswith("$$") and not (len(s) > 2 and s.endswith("$$")):
            math = not math
        if not s and not fence and not math:
            if cur:
                blocks.append("\n".join(cur))
                cur = []
            continue
        cur.append(line)
    if cur:
        blocks.append("\n".join(cur))
    return blocks


def _reading_removed(text: str, name: str) -> str:
    """Rule 2: the paragraphs before the first heading give way to a prompt (lead-in kept)."""
    blocks = _blocks(text)
    first_heading = next((i for i, b in enumerate(blocks) if b.lstrip().startswith("#")), len(blocks))
    reading, rest = blocks[:first_heading], blocks[first_heading:]
    if not reading:
        return text
    last = reading[-1].rstrip()
    lead_in = [_SENTENCE.split(last)[-1]] if last.endswith(":") else []
    if lead_in and len(reading) == 1 and lead_in[0] == last:
        return text  # only a lead-in to the next cell: nothing to remove
    return "\n\n".join([PROMPT.format(name=name), *lead_in, *rest])


def _split_questions(text: str) -> tuple[str, list[tuple[int, str]]] | None:
    """The text up to the numbered list under "Questions to try", and the items (number, text)."""
    lines = text.split("\n")
    head = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("#") and "Questions to try" in ln), None)
    if head is None:
        return None
    items: list[tuple[int, list[str]]] = []
    intro = lines[: head + 1]
    for ln in lines[head + 1:]:
        m = _ITEM.match(ln)
        if m:
            items.append((int(m.group(1)), [m.group(2)]))
        elif items:
            items[-1][1].append(ln.strip())
        else:
            intro.append(ln)
    return "\n".join(intro).rstrip(), [(n, " ".join(x for x in body if x).strip()) for n, body in items]


def _is_answer(cell) -> bool:
    src = cell.source.lstrip()
    return "answer" in cell.metadata.get("tags", []) or src.split("\n", 1)[0].strip().upper().startswith("# ANSWER")


def exercise(nb: nbformat.NotebookNode, name: str) -> nbformat.NotebookNode:
    """The exercise version of one curated notebook (see the module docstring)."""
    out = nbformat.v4.new_notebook()
    out.metadata = {k: v for k, v in nb.metadata.items() if k in ("kernelspec", "language_info")}
    stem = Path(name).stem
    counter = iter(range(10_000))

    def new_id() -> str:
        return f"{stem[:2]}-ex-{next(counter)}"

    cells = []
    seen_code = 0
    after_code = False
    for cell in nb.cells:
        src = _DATA.sub(r"\1../../data", cell.source) if cell.cell_type == "code" else cell.source
        meta = {k: v for k, v in cell.metadata.items() if k in ("tags",)}
        if cell.cell_type == "code":
            if _is_answer(cell):
                first = src.lstrip().split("\n", 1)[0].strip()
                hint = re.sub(r"(?i)^answer:?\s*", "", first.lstrip("#").strip()) if first.startswith("#") else ""
                hint = hint or "compute this step yourself"
                src = TODO.format(hint=hint, name=name)
            new = new_code_cell(src, metadata=meta)
            seen_code += 1
            after_code = seen_code > 1  # the setup cell's prose is kept as it is
        elif cell.cell_type == "markdown":
            if after_code:
                src = _reading_removed(src, name)
            after_code = False
            split = _split_questions(src)
            if split and split[1]:
                intro, items = split
                cells.append(_with_id(new_markdown_cell(intro, metadata=meta), cell, new_id))
                for n, text in items:
                    cells.append(_with_id(new_markdown_cell(f"**Question {n}.** {text}"), None, new_id))
                    cells.append(_with_id(new_code_cell(QUESTION_CELL.format(n=n)), None, new_id))
                continue
            new = new_markdown_cell(src, metadata=meta)
        else:
            new = nbformat.v4.new_raw_cell(src, metadata=meta)
        cells.append(_with_id(new, cell, new_id))
    title = cells[0]
    if title.cell_type == "markdown" and title.source.startswith("# "):
        first, _, rest = title.source.partition("\n")
        title.source = f"{first} — exercises\n{rest}".rstrip()
        note = new_markdown_cell(
            f"> **Exercise version** of [`{name}`](../{name}), generated by `tools/make_exercises.py` "
            "(do not edit it by hand: `make exercises` rewrites it). Outputs are cleared, the readings "
            "of each result are replaced by prompts, and every question at the end has a cell for your "
            "answer. Run the cells in order, predict each result before you run it, then compare your "
            "readings with the curated notebook.")
        cells.insert(1, _with_id(note, None, new_id))
    out.cells = cells
    return out


def _with_id(new, original, new_id):
    new["id"] = original["id"] if original is not None and original.get("id") else new_id()
    if new.cell_type == "code":
        new.outputs = []
        new.execution_count = None
    return new


def generate(out_dir: Path = OUT, sources: list[Path] | None = None) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for path in sources or teaching_notebooks():
        nb = nbformat.read(path, as_version=4)
        ex = exercise(nb, path.name)
        nbformat.validate(ex)
        target = out_dir / path.name
        nbformat.write(ex, target)
        written.append(target)
    for stale in sorted(set(out_dir.glob("[0-9][0-9]_*.ipynb")) - set(written)):
        stale.unlink()  # its curated notebook is gone
    return written


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=OUT, help="folder for the exercise notebooks")
    args = p.parse_args(argv)
    for path in generate(args.out):
        shown = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
        print(f"wrote {shown}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
