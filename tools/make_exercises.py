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
6. **Answers check themselves.** A question listed in ``CHECKS`` names the variable its answer goes
   in (set to ``None`` in its cell) and gets a check cell after it: plain asserts against a value
   worked out by hand (the working is in ``CHECKS``), each with a hint. An unanswered question
   prints that it is unanswered, so the notebook still runs top to bottom.

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
CHECK_CELL = "# Check question {n}: run this after your answer cell\n"
# notebook stem -> question number -> [(variable, expected value, tolerance, what it is, hint)].
# Each expected value is a hand computation from figures the question or the notebook states.
CHECKS: dict[str, dict[int, list[tuple[str, float, float, str, str]]]] = {
    "01_mfu_basics": {2: [
        # T = F / (MFU × N × P) = 2.4e15 / (0.20 × 128 × 989.4e12) = 0.094763 s
        ("step_s", 0.094763, 5e-4, "the step time in seconds",
         "MFU = F / (T × N × P); solve for T with MFU 0.20, F 2.4e15, N 128, P = 989.4e12 (H100 SXM bf16 "
         "dense) — in the calculator, type the step time instead of dragging"),
    ]},
    "02_model_flops": {1: [
        # 4·T·d·L = 2·3·d·d_ff·L  ->  T = 3·d_ff / 2 = 3 × 14,336 / 2 = 21,504 tokens (Llama 3 8B, SwiGLU)
        ("crossover_tokens", 21504, 220, "the sequence length, non-causal",
         "set 4·T·H·Q·L equal to 2·m·d·d_ff·L with m = 3 (SwiGLU) and d_ff = 14,336; H·Q = d cancels"),
    ]},
    "05_stragglers": {2: [
        # P(a rank has ≥ 1 hiccup in 300 steps) = 1 − (1 − 0.0005)^300 = 0.1393; × 64 ranks = 8.9
        ("ranks_with_hiccup", 8.92, 0.3, "the expected number of the 64 ranks with at least one hiccup",
         "a rank escapes all 300 steps with probability (1 − p)^300; multiply the complement by the ranks"),
    ]},
    "06_checkpoints_and_failures": {2: [
        # 16,384 / 8 = 2,048 nodes; M = 2,000 h / 2,048 = 0.97656 h = 3,515.6 s
        ("job_mtbf_s", 3515.625, 1.0, "the job MTBF in seconds",
         "the job fails when any of its 2,048 nodes does: M_job = M_node / nodes"),
        # Daly: √(2δM)·[1 + ⅓√(δ/2M) + (δ/2M)/9] − δ with δ = 60 s, M = 3,515.6 s: 649.5 × 1.03174 − 60
        ("daly_s", 610.1, 2.0, "Daly's interval in seconds",
         "τ = √(2δM)·[1 + ⅓√(δ/2M) + (1/9)(δ/2M)] − δ with δ = 60 s and the job MTBF above"),
    ]},
    "11_roofline": {
        1: [("ridge_a100", 153.02, 0.1, "FLOP per byte",  # 312e12 / 2.039e12
             "the ridge point is peak / bandwidth, both in per-second units")],
        2: [("n_min", 887, 0, "a whole number",  # n / 3 > 989.4 / 3.35 = 295.34  ->  n > 886.03
             "solve n / 3 > ridge with the H100 SXM ridge 989.4e12 / 3.35e12 and round up")],
        3: [("ln_us", 80.13, 0.3, "microseconds",  # 2 × 8192² × 2 B / 3.35e12 B/s = 80.13 µs
             "a LayerNorm reads and writes every bf16 element once: 2 × 8,192² × 2 bytes at 3.35 TB/s")],
    },
    "12_check_a_claim": {
        1: [("mfu_mi355x", 0.18844, 0.001, "a fraction (0.2 = 20 %)",  # 1.52 × 312 / 2516.6
             "the achieved rate is 1.52 × 312 TFLOP/s; divide by the MI355X's 2,516.6")],
        2: [("mfu_fms", 0.48514, 0.001, "a fraction",  # 9600 × 0.05 / 989.4
             "480 TFLOP/s over the dense bf16 peak, 989.4 — not the 1,979 with sparsity")],
        3: [("printed_mfu", 0.82645, 0.001, "a fraction", "the substring table gives the L40 the L4's 121"),  # 100/121
            ("true_mfu", 0.55233, 0.001, "a fraction", "the L40's own dense bf16 peak is 181.05")],  # 100/181.05
    },
    "13_communication_and_downtime": {
        # S × (n−1)/n / peak = 4e9 × 7/8 / 450e9 = 7.7778 ms (NVLink4: 900 GB/s both ways, 450 each)
        1: [("allgather_ms", 7.7778, 0.01, "milliseconds",
             "floor = S × (n−1)/n / the per-direction peak; NVLink4 prints 900 GB/s with both directions added")],
        # 2,360,832 × 2(3−1)/3 / 50e9 = 62.955 µs; 62.955 / 5,663 = 0.011117, the efficiency against NDR
        2: [("floor_us", 62.955, 0.05, "microseconds",
             "floor = S × 2(n−1)/n / 50 GB/s (NDR: 400 Gb/s each way)"),
            ("floor_share", 0.011117, 0.0002, "a fraction of the measured 5,663 µs",
             "divide the floor by the measured time")],
        # 0.40 × 2 / (2 + e) ≥ 0.39 -> e ≤ 0.051282 s; 1 − 0.051282 / 0.630 = 0.91860
        3: [("min_overlap", 0.9186, 0.002, "a fraction (0.5 = half overlapped)",
             "solve 0.40 × 2 / (2 + exposed) = 0.39 for the exposed time, then exposed = 0.630 s × (1 − overlap)")],
        # 1,920 steps × 9 s / 35,364.285491 s = 48.8629 %
        7: [("goodput_9s", 48.8629, 0.01, "percent, as the library prints it",
             "(max saved step − min loaded step) × reference step / total runtime × 100, with 1,920 steps")],
        # 3,632 s / 240 steps = 15.1333 s per redone step; 5,240 − 5,200 = 40 steps -> 605.33 s
        9: [("recompute_s", 605.33, 2.0, "seconds",
             "the steps after the last checkpoint are redone: 5,240 − 5,200 of them, at 3,632 s / 240 each")],
    },
    "14_recsys_at_gem_scale": {
        # 214 × 128 × 4 B × 3 (lookup, update read and write) + 214 rows × 4 B × 2 (state read and written) = 330,416
        1: [("rowwise_bytes", 330416, 0.5, "bytes per sample",
             "the rows are touched three times as before (214 × 128 × 4 B each); the state is one 4-byte accumulator "
             "per row, read and written")],
        # (F / P) / (bytes / W) = 96,182,784 × 8e12 / (2.25e15 × 547,840) = 0.62424
        2: [("ratio_b200", 0.62424, 0.001, "a ratio",
             "dense MFU / embedding bandwidth utilisation = (F / P) / (bytes / W) with F = 96,182,784, "
             "P = 2.25e15, bytes = 547,840 and W = 8e12")],
        # 0.2618592 × (1 − s) = 0.20  ->  s = 1 − 0.20 / 0.2618592 = 0.23623
        3: [("input_share_20", 0.23623, 0.002, "a fraction of the step",
             "dense MFU = ceiling × (1 − input share); solve 0.2619 × (1 − s) = 0.20 for s")],
        # 65,536 × 26,624 B × 63/64 / 50e9 B/s = 34.351 ms
        4: [("alltoall_ms", 34.351, 0.05, "milliseconds",
             "(N − 1)/N of 65,536 × 26,624 B leaves each GPU, one way, at 50 GB/s")],
        # steady state = end to end / goodput = 0.20 / 0.85 = 0.23529
        5: [("steady_mfu", 0.23529, 0.001, "a fraction (0.2 = 20 %)",
             "end-to-end MFU = steady-state MFU × goodput: divide 0.20 by 0.85")],
    },
}
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
                checks = CHECKS.get(stem, {})
                for n, text in items:
                    cells.append(_with_id(new_markdown_cell(f"**Question {n}.** {text}"), None, new_id))
                    answer = QUESTION_CELL.format(n=n) + "".join(
                        f"{var} = None  # your answer: {what}\n" for var, _, _, what, _ in checks.get(n, []))
                    cells.append(_with_id(new_code_cell(answer), None, new_id))
                    if n in checks:
                        cells.append(_with_id(new_code_cell(_check_source(n, checks[n])), None, new_id))
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


def _check_source(n: int, checks: list[tuple[str, float, float, str, str]]) -> str:
    """A check cell: plain asserts with a hint, or a note that the answer is still missing."""
    lines = [CHECK_CELL.format(n=n)]
    for var, expected, tol, _what, hint in checks:
        lines += [
            f"if {var} is None:\n",
            f"    print(\"Question {n}: `{var}` is not answered yet - set it above, then run this cell again.\")\n",
            "else:\n",
            f"    assert abs({var} - {expected!r}) <= {tol!r}, f\"{var} = {{{var}!r}} is not it yet. Hint: {hint}.\"\n",
            f"    print(f\"Question {n}: {var} = {{{var}!r}} - right.\")\n",
        ]
    return "".join(lines)


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
