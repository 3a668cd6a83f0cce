"""Write ``tests/slow_tests.txt``: the tests that take at least ``--threshold`` seconds.

A module is listed whole (as its file) where its first test (in run order) takes at least
``--first-threshold`` seconds, or its tests together at least ``--module-threshold``: a first test
that slow mostly pays for a fixture the module shares (a JupyterLab, notebooks run once, a
process group, a Spark session), which the next test would pay for once it is left out.

``make unit`` runs the rest (``-m "not browser and not slow"``); ``tests/conftest.py`` marks
every test listed here ``slow``. Measure with ``pytest --junitxml=run.xml`` (a full run on the
machine the target is for), then::

    .venv/bin/python tools/slow_tests.py run.xml [--threshold 0.2]

It prints what the unit run would take by the same measurement. A test added since is not
listed: it runs in ``make unit`` until the list is regenerated.
"""

from __future__ import annotations

import argparse
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "tests" / "slow_tests.txt"


def node_id(classname: str, name: str) -> str:
    """pytest's node id of a junit testcase (``tests.test_x.TestY`` -> ``tests/test_x.py::TestY::name``)."""
    parts = classname.split(".")
    for i in range(len(parts), 0, -1):
        path = Path(*parts[:i]).with_suffix(".py")
        if (ROOT / path).is_file():
            return "::".join([path.as_posix(), *parts[i:], name])
    raise SystemExit(f"no test file for junit classname {classname!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("junit", nargs="+", help="junit XML file(s) of a pytest run")
    ap.add_argument("--threshold", type=float, default=0.2, help="seconds (default 0.2)")
    ap.add_argument("--first-threshold", type=float, default=2.0, help="seconds (default 2.0)")
    ap.add_argument("--module-threshold", type=float, default=20.0, help="seconds (default 20)")
    a = ap.parse_args()
    times: dict[str, float] = {}
    first: dict[str, float] = {}  # per module, the time of its first test in run order
    total: dict[str, float] = {}
    for f in a.junit:
        for tc in ET.parse(f).getroot().iter("testcase"):
            if tc.find("skipped") is not None or tc.get("classname", "").startswith("notebooks."):
                continue  # make unit runs tests/ only: nbval's notebook cells are not listed
            nid = node_id(tc.get("classname", ""), tc.get("name", ""))
            t = float(tc.get("time", 0.0))
            module = nid.split("::")[0]
            first.setdefault(module, t)
            total[module] = total.get(module, 0.0) + t
            times[nid] = max(times.get(nid, 0.0), t)
    modules = sorted(m for m in first if first[m] >= a.first_threshold or total[m] >= a.module_threshold)

    def listed(n: str) -> bool:
        return n.split("::")[0] in modules or times[n] >= a.threshold

    slow = modules + sorted(n for n in times if listed(n) and n.split("::")[0] not in modules)
    OUT.write_text(f"# tests of at least {a.threshold:.2f} s, and whole modules (a first test of at least "
                   f"{a.first_threshold:.1f} s, or {a.module_threshold:.0f} s in all) (tools/slow_tests.py); "
                   "marked slow, left out of make unit\n"
                   + "\n".join(slow) + "\n")
    rest = sum(t for n, t in times.items() if not listed(n))
    n_slow = sum(1 for n in times if listed(n))
    print(f"{n_slow} of {len(times)} tests ({len(modules)} whole modules) listed in {OUT.relative_to(ROOT)}; "
          f"the others took {rest:.1f} s")


if __name__ == "__main__":
    main()
