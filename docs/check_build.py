"""Fail ``make docs`` on real errors in Sphinx's warning file, after printing a summary of them all.

Sphinx exits 0 on most problems. Among its warnings, these make a broken site and fail the build:

- docutils ``ERROR`` / ``SEVERE`` / ``CRITICAL`` messages (markup that did not render: a page or
  docstring shows the raw text or loses a part);
- a module autodoc could not import (``autodoc.import_object``): an API or format page with no content;
- a toctree naming a missing page, or a page in no toctree (``toc.*``): unreachable pages;
- a link to a page or file that is not in the site (``myst.xref_missing``) or a missing image;
- a docutils ``WARNING`` in a docstring of ``mfu_toolkit`` (an inline literal or emphasis that did
  not close: the page shows the raw marks);
- with the built site's folder as a second argument, a page whose text shows a double backquote
  outside code (an inline literal docutils did not see, e.g. ``a``→``b``, which warns nothing).

Other warnings are printed and pass. ``known_errors.txt`` lists the errors of docstrings in
``mfu_toolkit`` that are known and reported for a fix (module and message, no line number, so a new
error in the same docstring still fails); each is printed as such.

    python docs/check_build.py build/docs/warnings.txt [build/docs/html]
"""

from __future__ import annotations

import re
import sys
from html.parser import HTMLParser
from pathlib import Path

HERE = Path(__file__).resolve().parent
LEVEL = re.compile(r": (ERROR|SEVERE|CRITICAL): ")
FATAL_TYPES = ("[autodoc.import_object]", "[autodoc]", "[toc.", "[myst.xref_missing]", "[image.not_readable]")
DOCSTRING_WARNING = re.compile(r"docstring of mfu_toolkit[\w.]*(?::\d+)?: WARNING: .*\[docutils\]$")
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
        if LEVEL.search(line) or any(t in line for t in FATAL_TYPES) or DOCSTRING_WARNING.search(line):
            m = DOCSTRING.search(line)
            (known_hits if m and (m.group(1), m.group(2)) in known else errors).append(line)
        else:
            other.append(line)
    return errors, known_hits, other


class _Text(HTMLParser):
    """The text a reader sees on a page, outside code blocks, scripts and styles."""

    _CODE = ("pre", "script", "style", "textarea")
    _VOID = ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr")

    def __init__(self) -> None:
        super().__init__()
        self.open: list[bool] = []
        self.chunks: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._VOID:
            return
        cls = dict(attrs).get("class") or ""
        self.open.append(tag in self._CODE or "highlight" in cls.split())

    def handle_endtag(self, tag: str) -> None:
        if tag not in self._VOID and self.open:
            self.open.pop()

    def handle_data(self, data: str) -> None:
        if not any(self.open):
            self.chunks.append(data)


def visible_backquotes(html_dir: Path) -> list[str]:
    """``page: text`` for each place a built page shows a double backquote outside code."""
    out = []
    for page in sorted(html_dir.rglob("*.html")):
        parser = _Text()
        parser.feed(page.read_text(encoding="utf-8", errors="replace"))
        text = " ".join(" ".join(parser.chunks).split())
        for m in re.finditer(r"``", text):
            out.append(f"{page.relative_to(html_dir).as_posix()}: ...{text[max(m.start() - 40, 0):m.end() + 40]}...")
    return out


def main(argv: list[str]) -> int:
    """Print the summary; exit 1 when there is an error that is not a known one."""
    if len(argv) not in (1, 2):
        print("usage: python docs/check_build.py WARNINGS_FILE [HTML_DIR]", file=sys.stderr)
        return 2
    path = Path(argv[0])
    if not path.is_file():
        print(f"check_build: {path}: no such file (did sphinx-build run with -w?)", file=sys.stderr)
        return 2
    errors, known_hits, other = classify(path.read_text().splitlines(), known_errors())
    if len(argv) == 2:
        errors += [f"raw double backquotes on {hit}" for hit in visible_backquotes(Path(argv[1]))]
    print(f"docs: {len(errors)} errors, {len(known_hits)} known docstring errors (docs/known_errors.txt), "
          f"{len(other)} other warnings (all in {path})")
    for line in known_hits:
        print(f"  known: {line}")
    for line in errors:
        print(f"  error: {line}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
