"""One vocabulary in the public signatures (DESIGN.md, "Conventions"): a count of accelerators is
``n_accelerators``, of processes ``n_ranks``, a duration ``*_s``. An AST scan of every public function and
method of ``mfu_toolkit`` holds it: no parameter spelled ``*gpu*``, ``world_size``, ``*_sec``, ``*_ms``,
``seconds``, ``*_seconds``, ``num_*`` or ``*_time`` outside the allow-list below, each entry with its reason.
Renamed keywords keep their old name for one release with a ``DeprecationWarning``.
"""

from __future__ import annotations

import ast
import re
import warnings
from pathlib import Path

import pytest

import mfu_toolkit

PACKAGE = Path(mfu_toolkit.__file__).parent
OFF_VOCABULARY = re.compile(r"gpu|^world_size$|_secs?$|_ms$|^seconds$|_seconds$|^num_|_time$")

# "module:Qualified.name(parameter)" -> why the spelling stays
ALLOWED: dict[str, str] = {
    "analysis/scaling.py:run_throughput(step_time)":
        "names which step time to divide by ('typical' or 'actual'): a choice, not a duration",
    "analysis/scaling.py:scaling_from_runs(step_time)":
        "names which step time to divide by ('typical' or 'actual'): a choice, not a duration",
    "record/recorder.py:StepRecorder.add_data_wait(seconds)":
        "the amount itself, given positionally (rec.add_data_wait(0.3)); the name is its unit",
    "record/folder.py:RankFile.gpu(seconds)":
        "the amount itself, given positionally with the step; the name is its unit",
    "scenarios/whatif.py:format_duration(seconds)":
        "a formatter's one positional value; the name is its unit",
}


def _public_functions(tree: ast.Module) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """(qualified name, node) of each function and method a user can call: public names in public classes."""
    found: list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]] = []

    def walk(body: list[ast.stmt], prefix: str) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                if not node.name.startswith("_") or node.name in ("__init__", "__new__", "__call__"):
                    found.append((prefix + node.name, node))
            elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                walk(node.body, f"{prefix}{node.name}.")

    walk(tree.body, "")
    return found


def _off_vocabulary() -> set[str]:
    hits = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        if any(part.startswith("_") and part != "__init__.py" for part in rel.parts):
            continue  # a private module is no one's signature
        for name, fn in _public_functions(ast.parse(path.read_text(encoding="utf-8"))):
            a = fn.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
            hits |= {f"{rel.as_posix()}:{name}({p.arg})" for p in params if OFF_VOCABULARY.search(p.arg)}
    return hits


def test_public_parameters_speak_the_projects_vocabulary():
    hits = _off_vocabulary()
    assert sorted(hits - set(ALLOWED)) == []
    assert sorted(set(ALLOWED) - hits) == []  # an entry whose parameter was renamed goes too


def test_the_scan_sees_a_spelling_it_refuses():
    tree = ast.parse("def f(*, n_gpus=1, step_ms=2.0, n_accelerators=1, step_s=1.0):\n    pass\n")
    ((_, fn),) = _public_functions(tree)
    assert [p.arg for p in fn.args.kwonlyargs if OFF_VOCABULARY.search(p.arg)] == ["n_gpus", "step_ms"]


def test_recsys_scenario_takes_n_accelerators_and_its_old_name_for_one_release():
    from mfu_toolkit.widgets_recsys import recsys_scenario

    new = recsys_scenario(n_accelerators=64, link="NDR")
    with pytest.warns(DeprecationWarning, match=r"recsys_scenario\(n_gpus=\.\.\.\) is renamed n_accelerators="):
        old = recsys_scenario(n_gpus=64, link="NDR")
    assert old == new and new.n_accelerators == 64
    with pytest.warns(DeprecationWarning, match="RecsysScenario.n_gpus is renamed n_accelerators"):
        assert new.n_gpus == 64
    with pytest.raises(TypeError, match="got both n_gpus= .* and n_accelerators="):
        recsys_scenario(n_gpus=8, n_accelerators=8)
    with pytest.raises(ValueError, match=r"^n_accelerators must be a whole number in \[1, 1000000\]; got 0$"):
        recsys_scenario(n_accelerators=0)


def test_recsys_explorer_takes_n_accelerators_and_its_old_name_for_one_release():
    pytest.importorskip("ipywidgets")
    from mfu_toolkit.widgets_recsys import recsys_explorer

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        recsys_explorer(n_accelerators=64, link="InfiniBand NDR")
    with pytest.warns(DeprecationWarning, match=r"recsys_explorer\(n_gpus=\.\.\.\)"):
        recsys_explorer(n_gpus=64, link="InfiniBand NDR")
