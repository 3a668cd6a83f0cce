"""Skip reasons are constants: the keys of ``LoadReport.skipped`` are a closed set, the detail goes with the example.

Two halves of one rule (see :mod:`mfu_toolkit.io.rules`):

- in the source: every ``X.bad(...)`` / ``X.skip(...)`` call under ``mfu_toolkit/io`` names its reason with a
  constant: ``rules.NAME`` (one of ``rules.REASONS``), an UPPER_CASE module-level str of its own module, a
  choice (``a if c else b``) between two such, or a variable or attribute handed on from elsewhere (a producer's
  :class:`~mfu_toolkit.io.rules.SkipReason`, a row rule's ``reason``) that its function does not build. No
  f-string, concatenation or ``%``-format anywhere under ``io/`` embeds a reason constant, so a producer cannot
  build a per-record key either.
- at run time: loading every real log under ``MFU_REALDATA``, seeded damaged copies of them
  (``_corpus.mutations``) and hand-made broken logs of several formats gives only keys of that set; the
  detail each conversion moved out of the key is in the report's example for the reason and in the
  strict-mode ``LoadError`` message.
"""

from __future__ import annotations

import ast
import gzip
import importlib
import json
import random
import warnings
from pathlib import Path

import pytest
from _corpus import materialise, mutations, sources
from _realdata import files, realdata  # noqa: F401  (fixture: MFU_REALDATA)

import mfu_toolkit.io as io_pkg
from mfu_toolkit.engine import row_rules
from mfu_toolkit.io import load_run, rules
from mfu_toolkit.run import LoadError

IO = Path(io_pkg.__file__).parent
IO_FILES = sorted(IO.rglob("*.py"))
SAMPLES = Path(__file__).resolve().parents[1] / "data" / "samples"
SKIP_CALLS = ("bad", "skip")


def _module(path: Path) -> str:
    rel = path.relative_to(IO.parent.parent).with_suffix("")
    return ".".join(rel.parts)


def _own_constants(path: Path) -> dict[str, str]:
    """The module's UPPER_CASE names bound at module level to a str (``X = "..."`` or ``X = rules.Y``)."""
    mod = importlib.import_module(_module(path))
    return {n: v for n, v in vars(mod).items() if n.isupper() and isinstance(v, str)}


def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _enclosing_function(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> ast.AST | None:
    while node in parents:
        node = parents[node]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    return None


def _builds_text(value: ast.AST) -> bool:
    """Whether an expression builds a string: an f-string, ``+``, ``%`` or ``.format``/``.join`` of one."""
    for node in ast.walk(value):
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in ("format", "join"):
            return True
    return False


def _part(value: ast.AST, i: int) -> ast.AST:
    """The ``i``-th element ``value`` gives a tuple target (``a, b = x, y`` and ``a, b = (x, y) if c else (z, w)``)."""
    if isinstance(value, ast.Tuple) and i < len(value.elts):
        return value.elts[i]
    if isinstance(value, ast.IfExp):
        return ast.IfExp(value.test, _part(value.body, i), _part(value.orelse, i))
    return value


def _assigned_values(func: ast.AST, name: str) -> list[ast.AST]:
    """What the function assigns to the variable ``name`` (the element of a tuple assignment that binds it)."""
    out = []
    for node in ast.walk(func):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) else []
        for t in targets:
            if isinstance(t, ast.Name) and t.id == name and node.value is not None:
                out.append(node.value)
            elif isinstance(t, ast.Tuple):
                out += [_part(node.value, i) for i, e in enumerate(t.elts) if isinstance(e, ast.Name) and e.id == name]
    return out


def _problem(arg: ast.AST | None, own: dict[str, str], func: ast.AST | None) -> str | None:
    """Why ``arg`` (a skip call's first argument) is not a constant reason, or None when it is."""
    if isinstance(arg, ast.IfExp):
        return _problem(arg.body, own, func) or _problem(arg.orelse, own, func)
    if isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Name) and arg.value.id == "rules":
        return None if getattr(rules, arg.attr, None) in rules.REASONS else f"rules.{arg.attr} is not in rules.REASONS"
    if isinstance(arg, ast.Name) and arg.id.isupper():
        return None if arg.id in own else f"{arg.id} is not a module-level str constant"
    if isinstance(arg, (ast.Name, ast.Attribute)):  # handed on: its function must not build it
        if isinstance(arg, ast.Name) and func is not None:
            if any(_builds_text(v) for v in _assigned_values(func, arg.id)):
                return f"{arg.id} is built as text in its function"
        return None
    return f"a {type(arg).__name__} ({ast.unparse(arg) if arg is not None else 'no argument'})"


def _skip_calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SKIP_CALLS:
            yield node


def _source_problems() -> list[str]:
    out = []
    for path in IO_FILES:
        tree = ast.parse(path.read_text())
        own, parents = _own_constants(path), _parents(tree)
        for call in _skip_calls(tree):
            why = _problem(call.args[0] if call.args else None, own, _enclosing_function(call, parents))
            if why:
                out.append(f"{path.relative_to(IO)}:{call.lineno}: {why}")
    return out


def _reason_names(path: Path) -> set[str]:
    """The constants a module's skip calls name (its own reasons), by name."""
    names = set()
    for call in _skip_calls(ast.parse(path.read_text())):
        for node in ast.walk(call.args[0]) if call.args else ():
            if isinstance(node, ast.Name) and node.id.isupper():
                names.add(node.id)
    return names


def _text_with_reason() -> list[str]:
    """f-strings and ``+``/``%`` expressions under io/ that put a reason constant into a longer text."""
    out = []
    for path in IO_FILES:
        own = _reason_names(path)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.JoinedStr):
                parts = [v.value for v in node.values if isinstance(v, ast.FormattedValue)]
            elif isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
                parts = [node.left, node.right]
            else:
                continue
            for part in parts:
                shared = (isinstance(part, ast.Attribute) and isinstance(part.value, ast.Name)
                          and part.value.id == "rules" and getattr(rules, part.attr, None) in rules.REASONS)
                if shared or (isinstance(part, ast.Name) and part.id in own):
                    out.append(f"{path.relative_to(IO)}:{node.lineno}: {ast.unparse(node)[:100]}")
    return out


def all_reasons() -> set[str]:
    """Every key a load may count under: ``rules.REASONS``, the row rules' reasons, and the module-level
    UPPER_CASE str constants of the io modules (a format's own reasons are among them)."""
    out = set(rules.REASONS) | {r.reason for r in row_rules.ROW_RULES}
    for path in IO_FILES:
        out |= set(_own_constants(path).values())
    return out


def test_every_skip_call_names_a_constant_reason():
    assert _source_problems() == []


def test_no_text_under_io_is_built_around_a_reason():
    assert _text_with_reason() == []


def test_the_reason_set_is_closed_and_short():
    reasons = all_reasons()
    assert set(rules.REASONS) <= reasons
    assert all(isinstance(r, str) and r for r in reasons)
    assert not [r for r in rules.REASONS if r.startswith(("(", ";"))]  # no suffix is a reason of its own


# --- at run time -------------------------------------------------------------------------------
def _load(path: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return load_run(path, **kw)


def _strict_message(path: Path, **kw) -> str:
    with pytest.raises(LoadError) as info:
        load_run(path, strict=True, **kw)
    return str(info.value)


def _edit_line(src: Path, dst: Path, match: str, old: str, new: str, nth: int = 0) -> Path:
    """A copy of ``src`` whose ``nth`` line containing ``match`` has ``old`` replaced by ``new``."""
    lines = src.read_text().split("\n")
    hits = [i for i, t in enumerate(lines) if match in t]
    assert old in lines[hits[nth]], (src, match, old)
    lines[hits[nth]] = lines[hits[nth]].replace(old, new, 1)
    dst.write_text("\n".join(lines))
    return dst


def test_every_real_log_gives_constant_keys(realdata):  # noqa: F811
    """Every real log and sample under MFU_REALDATA and data/samples loads with skip keys from the closed set."""
    reasons, seen, loaded = all_reasons(), set(), 0
    for path in sources(realdata, SAMPLES):
        try:
            run = _load(path)
        except LoadError:  # not a log a format reads on its own (a README, a YAML beside a trace)
            continue
        loaded += 1
        seen |= set(run.meta.report.skipped)
    assert loaded >= 60
    assert seen and seen <= reasons, sorted(seen - reasons)


def test_damaged_copies_give_constant_keys(realdata, tmp_path):  # noqa: F811
    """One seeded damaged copy (``_corpus.mutations``: truncation, byte flips, bad numbers, NUL bytes, ...) of
    every real log and sample: whatever is skipped is counted under a key of the closed set."""
    reasons, seen = all_reasons(), set()
    for src in sources(realdata, SAMPLES):
        rng = random.Random(f"skip keys {src.parent.name}/{src.name}")  # one seed per file: the same copies every run
        kind, data = rng.choice(list(mutations(src.read_bytes(), rng)))
        try:
            run = _load(materialise(src, kind, data, tmp_path / src.parent.name))
        except LoadError:
            continue
        seen |= set(run.meta.report.skipped)
    assert len(seen) >= 10 and seen <= reasons, sorted(seen - reasons)


@pytest.fixture(scope="module")
def broken(realdata, tmp_path_factory) -> dict[str, Path]:  # noqa: F811
    """Broken copies of real logs in several formats, each damaged by hand in one known way."""
    d = tmp_path_factory.mktemp("broken")
    meg = files(realdata / "megatron", "NVIDIA-Megatron-LM_issue756_*.log")[0]
    mlp = files(realdata / "mlperf", "v4.1_NVIDIA_h200_ngc24.09_nemo_llama2_70b_lora_result_0.txt")[0]
    out = {
        "megatron": _edit_line(meg, d / "megatron.log", "elapsed time per iteration", "(ms): ", "(ms): abc"),
        "mlperf_rank": _edit_line(mlp, d / "rank.txt", '"key": "init_start"', '"metadata": {',
                                  '"metadata": {"rank": -3, '),
        "mlperf_key": _edit_line(mlp, d / "key.txt", ":::MLLOG", '"key": ', '"nokey": ', nth=3),
    }
    text = mlp.read_text().split("\n")
    at = [i for i, t in enumerate(text) if t.startswith(":::MLLOG")][5]
    (d / "json.txt").write_text("\n".join(text[:at] + [text[at][:60]] + text[at + 1:]))
    out["mlperf_json"] = d / "json.txt"
    stop = [i for i, t in enumerate(text) if '"key": "block_stop"' in t][-1]
    (d / "ends.txt").write_text("\n".join(text[:stop]))  # the log ends inside the last training block
    out["mlperf_ends"] = d / "ends.txt"
    state = (realdata / "hf_trainer" / "Jaong_Checkpoint-of-CPT_trainer_state.json").read_text()
    out["hf_state"] = d / "trainer_state.json"
    out["hf_state"].write_text(state[: len(state) * 2 // 3])  # half-written inside log_history
    folder = d / "hf_run"
    folder.mkdir()
    (folder / "trainer_state.json").write_text(state)
    (folder / "all_results.json").write_text('{"train_runtime": 12.5, ')  # a results file cut short
    out["hf_folder"] = folder
    trace = json.loads(gzip.decompress((realdata / "kineto" / "HTA_trace_filter_sampled_rank-1_ws128.json.gz")
                                       .read_bytes()))
    trace["distributedInfo"]["rank"] = 999
    out["kineto"] = d / "rank.json"
    out["kineto"].write_text(json.dumps(trace))
    out["table"] = SAMPLES / "messy_steps.jsonl"
    rows = [{"step": s, "rank": 0, "start_s": t, "duration_s": 1.0} for s, t in ((1, 10.0), (2, 11.5), (3, 2.0))]
    out["table_back"] = d / "steps.jsonl"
    out["table_back"].write_text("".join(json.dumps(r) + "\n" for r in rows))  # step 3 starts before step 2
    lines = meg.read_text().split("\n")
    (d / "long.log").write_text("\n".join(lines[:2] + ["x" * 5000] + lines[2:]))
    out["long_line"] = d / "long.log"
    return out


# Each damage, the key it is counted under and the detail that tells the record apart: which field, which rank,
# the decoder's message, an interval's kind and what became of the rest of the log, which file was left out.
CASES = [
    ("megatron", rules.NON_FINITE_TIME, "elapsed time per iteration", {}),
    ("mlperf_rank", rules.VALUE_OUT_OF_RANGE, "metadata.rank", {}),
    ("mlperf_key", rules.MISSING_FIELD, "key", {}),
    ("mlperf_json", rules.MALFORMED_JSON, "Unterminated string starting at", {}),
    ("mlperf_ends", rules.START_WITHOUT_END, "block; the log ends", {}),
    ("hf_state", rules.JSON_REST_UNREAD, "truncated or broken:", {}),
    ("hf_folder", rules.FILE_LEFT_OUT, "results file: malformed JSON record (Expecting", {}),
    ("kineto", rules.VALUE_OUT_OF_RANGE, "distributedInfo.rank is not below world_size", {"format": "kineto"}),
    ("table", rules.MISSING_FIELD, "'duration_s'", {}),
    ("table_back", rules.NON_MONOTONIC, "start earlier than the previous step's", {}),
    ("long_line", rules.LINE_TOO_LONG, "over 1,000 bytes; max_line_bytes= raises the limit", {"max_line_bytes": 1000}),
]


@pytest.mark.parametrize(("name", "reason", "detail", "kw"), CASES, ids=[f"{c[0]}-{c[1][:20]}" for c in CASES])
def test_the_detail_goes_with_the_example(broken, name, reason, detail, kw):
    """The key is the constant; the detail opens the report's example and sits in the strict-mode message."""
    report = _load(broken[name], **kw).meta.report
    assert reason in report.skipped and set(report.skipped) <= all_reasons()
    example = report.examples.get(reason, "")
    assert example.startswith(detail), example
    message = _strict_message(broken[name], **kw)  # strict mode raises on the first bad record: this one
    assert f"{reason} ({detail}" in message, message


def test_strict_message_shape(broken):
    """Strict: ``<file>, line <n>, field <f>: <reason> (<detail>): '<example>'`` (the message says what it said
    when the detail was part of the key)."""
    message = _strict_message(broken["mlperf_rank"])
    assert f"{rules.VALUE_OUT_OF_RANGE} (metadata.rank): '-3'" in message and "field 'rank'" in message


def test_reason_carries_its_detail():
    why = rules.SkipReason(rules.MALFORMED_JSON, "Expecting value")
    assert why == rules.MALFORMED_JSON and type(str(why)) is str and why.detail == "Expecting value"
    assert rules.in_full(why) == "malformed JSON record (Expecting value)"
    assert rules.with_detail("rank 3", "line text") == "rank 3: line text"
    assert rules.with_detail(None, "line text") == "line text" and rules.with_detail("rank 3", None) == "rank 3"
    import pickle
    assert pickle.loads(pickle.dumps(why)).detail == "Expecting value"
