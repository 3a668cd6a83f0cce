"""Fail ``make docs`` on real errors in Sphinx's warning file, after printing a summary of them all.

Sphinx exits 0 on most problems. Among its warnings, these make a broken site and fail the build:

- docutils ``ERROR`` / ``SEVERE`` / ``CRITICAL`` messages (markup that did not render: a page or
  docstring shows the raw text or loses a part);
- a module autodoc could not import (``autodoc.import_object``): an API or format page with no content;
- a toctree naming a missing page, or a page in no toctree (``toc.*``): unreachable pages;
- a link to a page or file that is not in the site (``myst.xref_missing``) or a missing image.

Other warnings are printed and pass. ``known_errors.txt`` lists the errors of docstrings in
``mfu_toolkit`` that are known and reported for a fix (module and message, no line number, so a new
error in the same docstring still fails); each is printed as such.

    python docs/check_build.py build/docs/warnings.txt
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEVEL = re.compile(r": (ERROR|SEVERE|CRITICAL): ")
FATAL_TYPES = ("[autodoc.import_object]", "[autodoc]", "[toc.", "[myst.xref_missing]", "[image.not_readable]")
DOCSTRING = re.compile(r"docstring of ([\w.]+?)(?::\d+)?: (?:ERROR|SEVERE|CRITICAL): (.*?)(?: \[\w+\])?$")


def known_errors(path: Path = HERE / "known_errors.txt") -> set[tuple[str, str]]:
    """The (object, message) pairs of ``known_errors.txt``: ``object: message`` per line, ``#`` comments."""
    out = set()
    for n, line in enumerate(path.read_text().splitlines() if path.is_file() else [], 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        obj, sep, msg = line.partition(": ")
        if not sep:
            raise SystemExit(f"{path}:{n}: expected 'module.object: message', got {line!r}")
        out.add((obj.strip(), msg.strip()))
    return out


def classify(lines: list[str], known: set[tuple[str, str]]) -> tuple[list[str], list[str], list[str]]:
    """Split warning lines into (errors, known errors, other warnings)."""
    errors, known_hits, other = [], [], []
    for line in lines:
        if not line.strip() or line.startswith((" ", "\t")):  # a message's continuation lines
            continue
        if LEVEL.search(line) or any(t in line for t in FATAL_TYPES):
            m = DOCSTRING.search(line)
            (known_hits if m and (m.group(1), m.group(2)) in known else errors).append(line)
        else:
            other.append(line)
    return errors, known_hits, other


def main(argv: list[str]) -> int:
    """Print the summary; exit 1 when there is an error that is not a known one."""
    if len(argv) != 1:
        print("usage: python docs/check_build.py WARNINGS_FILE", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"check_build: {path}: no such file (did sphinx-build run with -w?)", file=sys.stderr)
        return 2
    errors, known_hits, other = classify(path.read_text().splitlines(), known_errors())
    print(f"docs: {len(errors)} errors, {len(known_hits)} known docstring errors (docs/known_errors.txt), "
          f"{len(other)} other warnings (all in {path})")
    for line in known_hits:
        print(f"  known: {line}")
    for line in errors:
        print(f"  error: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
