"""Import floors of ``mfu_toolkit.scenarios`` against ``mfu_toolkit.analysis``, and the old paths.

``scenarios.simulate``, ``scenarios.replay`` and ``scenarios.order_stats`` stand on the Run (or on
numpy and pandas alone), so the analyses may import them; ``scenarios.whatif`` stands above the
analyses, so nothing in ``analysis`` imports it. Every import is checked, inside functions too.
The moved modules' old paths resolve for one release, with a ``DeprecationWarning``.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import mfu_toolkit

PACKAGE = Path(mfu_toolkit.__file__).parent
# module -> the mfu_toolkit modules it may import (a prefix allows its submodules)
FLOORS = {
    "scenarios/order_stats.py": set(),
    "scenarios/replay.py": {"mfu_toolkit.run"},
    "scenarios/simulate.py": {"mfu_toolkit.run"},
}
ABOVE_ANALYSIS = ("mfu_toolkit.plots", "mfu_toolkit.widgets", "mfu_toolkit.report", "mfu_toolkit.render",
                  "mfu_toolkit.cli")
# the deprecated old paths of the moved modules: they import their new homes by design
OLD_PATHS = {"analysis/whatif.py", "analysis/replay.py"}


def _imports(rel: str) -> set[str]:
    """Every module ``rel`` imports, as an absolute name (relative imports resolved)."""
    path = PACKAGE / rel
    parts = ["mfu_toolkit", *Path(rel).with_suffix("").parts]
    if parts[-1] == "__init__":
        parts.append("")
    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(parts[: len(parts) - node.level]) if node.level else ""
            mod = ".".join(p for p in (base, node.module or "") if p)
            names |= {mod} if node.module else {f"{mod}.{a.name}" for a in node.names}
    return names


def _ours(names: set[str]) -> set[str]:
    return {n for n in names if n == "mfu_toolkit" or n.startswith("mfu_toolkit.")}


@pytest.mark.parametrize("rel", sorted(FLOORS))
def test_the_floor_modules_of_scenarios_import_nothing_above_the_run(rel):
    allowed = FLOORS[rel]
    bad = {n for n in _ours(_imports(rel)) if not any(n == a or n.startswith(a + ".") for a in allowed)}
    assert not bad, f"{rel} may import only {sorted(allowed) or 'numpy, pandas and the standard library'}: {bad}"


def test_whatif_stands_on_the_analyses_and_below_the_front_ends():
    names = _ours(_imports("scenarios/whatif.py"))
    assert any(n.startswith("mfu_toolkit.analysis.") for n in names)  # above analysis
    assert not {n for n in names if n.startswith(ABOVE_ANALYSIS)}


def test_analysis_imports_only_the_floor_modules_of_scenarios():
    folder = PACKAGE / "analysis"
    for path in sorted(folder.glob("*.py")):
        rel = f"analysis/{path.name}"
        if rel in OLD_PATHS:
            continue
        for name in _ours(_imports(rel)):
            if name.startswith("mfu_toolkit.scenarios"):
                assert name.startswith(("mfu_toolkit.scenarios.replay", "mfu_toolkit.scenarios.order_stats")), (
                    rel, name)


def _loaded_after(statement: str) -> list[str]:
    code = f"import sys\n{statement}\nprint(' '.join(sorted(m for m in sys.modules if m.startswith('mfu_toolkit'))))"
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True,
                         text=True, check=True, cwd=PACKAGE.parent)
    return out.stdout.split()


def test_importing_the_analyses_does_not_load_whatif_or_the_simulator():
    loaded = _loaded_after("import mfu_toolkit.analysis")
    assert "mfu_toolkit.scenarios.order_stats" in loaded and "mfu_toolkit.scenarios.replay" in loaded
    assert "mfu_toolkit.scenarios.whatif" not in loaded
    assert "mfu_toolkit.scenarios.simulate" not in loaded


@pytest.mark.parametrize("module", ["order_stats", "replay"])
def test_the_floor_modules_load_no_analysis(module):
    loaded = _loaded_after(f"import mfu_toolkit.scenarios.{module}")
    assert not [m for m in loaded if m.startswith("mfu_toolkit.analysis")]


def test_public_names_resolve_to_the_new_homes_without_a_warning():
    from mfu_toolkit.scenarios import order_stats, replay, simulate, whatif

    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        import mfu_toolkit.simulate as public_simulate
        from mfu_toolkit import analysis
        from mfu_toolkit.analysis import stragglers

        assert public_simulate.SimConfig is simulate.SimConfig and public_simulate.simulate is simulate.simulate
        assert public_simulate.write_dataset is simulate.write_dataset
        assert mfu_toolkit.SimConfig is simulate.SimConfig
        assert analysis.straggler_whatif is replay.straggler_whatif and analysis.WhatIfResult is replay.WhatIfResult
        assert analysis.slowed_replay is replay.slowed_replay
        assert analysis.expected_max is stragglers.expected_max is order_stats.expected_max
        assert analysis.sync_step_time is stragglers.sync_step_time is order_stats.sync_step_time
        assert whatif.expected_sync_step is order_stats.expected_sync_step


@pytest.mark.parametrize(("old", "new", "name"), [
    ("mfu_toolkit.analysis.whatif", "mfu_toolkit.scenarios.whatif", "gap_scenario"),
    ("mfu_toolkit.analysis.replay", "mfu_toolkit.scenarios.replay", "straggler_whatif"),
])
def test_the_old_module_paths_warn_and_resolve(old, new, name):
    import importlib

    new_mod = importlib.import_module(new)
    old_mod = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=f"{old}.{name} moved to {new}.{name}"):
        value = getattr(old_mod, name)
    assert value is getattr(new_mod, name)
    with pytest.warns(DeprecationWarning, match=new):
        assert importlib.import_module("mfu_toolkit.analysis").__getattr__(old.rsplit(".", 1)[-1]) is new_mod
    with pytest.raises(AttributeError):
        old_mod.no_such_name  # noqa: B018


def test_private_names_stay_inside_their_module():
    # a name with a leading underscore is its module's own; another module that needs it gets a
    # public name (rank_matrix, missing_numbers, arrow_numpy, check_int were private and shared)
    leaks = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module != "__future__":
                leaks += [f"{path.relative_to(PACKAGE)}:{node.lineno} {a.name}" for a in node.names
                          if a.name.startswith("_") and not a.name.startswith("__")]
    assert not leaks, leaks


def test_the_waterfall_module_no_longer_hides_the_waterfall_function():
    # analysis.breakdown is the function; its code lives in analysis.waterfall. The old module path
    # resolves each name it held for one release, with a warning, and importing it (first or after
    # the package) leaves the function in place: a submodule import binds its name on the package.
    code = (
        "import warnings\n"
        "with warnings.catch_warnings(record=True) as w:\n"
        "    warnings.simplefilter('always')\n"
        "    from mfu_toolkit.analysis.breakdown import MFUSummary, account\n"
        "    import mfu_toolkit.analysis.breakdown\n"
        "import mfu_toolkit.analysis as a\n"
        "from mfu_toolkit.analysis import accounting, waterfall\n"
        "assert callable(a.breakdown) and a.breakdown is waterfall.breakdown, a.breakdown\n"
        "assert MFUSummary is waterfall.MFUSummary and account is accounting.account\n"
        "print(sorted({str(x.message).split(' moved to ')[1].rsplit('.', 1)[0] for x in w\n"
        "              if issubclass(x.category, DeprecationWarning)}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=PACKAGE.parent)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[0] == "['mfu_toolkit.analysis.accounting', 'mfu_toolkit.analysis.waterfall']"
    assert not (PACKAGE / "analysis" / "breakdown.py").read_text().count("def ")  # a pointer, no code
