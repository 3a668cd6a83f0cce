"""The documentation site (``make docs``) and the offline HTML export, read with no network.

The site is built the way CI builds it (``make docs`` into a temporary folder, from the committed
notebooks and the package), served on loopback, and every page is opened in headless Chromium with
every request that is not to the local site aborted and recorded: none may be attempted, no page may
log a console error, every explorer of a notebook page must be drawn from the widget state the
notebook saved (each widget of each saved view, counted by the CSS class ipywidgets gives its view),
and every formula typeset by the bundled MathJax. The report template (``docs/nbconvert/offline``)
is checked the same way on notebooks with explorers and math.

The fast tests pin the web assets: their integrity strings, what ``tools/web_assets.py`` refuses,
and the versions against the installed ipywidgets (an independent source: its own version module
and the JupyterLab widget manager it ships).
"""

from __future__ import annotations

import base64
import importlib.util
import io
import json
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from _scripts import load_script

ROOT = Path(__file__).resolve().parents[1]
STATE = "application/vnd.jupyter.widget-state+json"
VIEW = "application/vnd.jupyter.widget-view+json"
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
# The CSS class ipywidgets 8 gives the element of each view (read in the widget CSS of
# @jupyter-widgets/controls 5 and checked on the rendered pages by hand).
VIEW_CLASS = {
    "VBoxView": "widget-vbox", "HBoxView": "widget-hbox", "HTMLView": "widget-html", "OutputView": "widget-output",
    "DropdownView": "widget-dropdown", "CheckboxView": "widget-checkbox", "ToggleButtonsView": "widget-toggle-buttons",
    "IntSliderView": "widget-slider", "FloatSliderView": "widget-slider", "FloatLogSliderView": "widget-slider",
    "SelectionSliderView": "widget-slider", "FloatTextView": "widget-text", "IntTextView": "widget-text",
}
BENIGN = ("favicon",)  # Chromium asks every site for /favicon.ico; the site has none


web_assets = load_script("tools/web_assets.py")
check_build = load_script("docs/check_build.py")
generate = load_script("docs/generate.py")


def _assets_or_skip() -> Path:
    """The unpacked assets (fetched once; CI has the npm registry). Without them the test skips,
    unless MFU_REQUIRE_BROWSER=1 (CI), where it fails."""
    import os

    try:
        return web_assets.fetch_assets()
    except web_assets.AssetError as exc:
        if os.environ.get("MFU_REQUIRE_BROWSER") == "1":
            pytest.fail(str(exc), pytrace=False)
        pytest.skip(str(exc))


def expected_widgets(nb: dict) -> tuple[int, dict[str, int]]:
    """The views a notebook's outputs show and, per CSS class, the widgets their saved trees hold."""
    state = (nb["metadata"].get("widgets") or {}).get(STATE, {}).get("state", {})
    views = [o["data"][VIEW]["model_id"] for c in nb["cells"] for o in c.get("outputs", [])
             if VIEW in o.get("data", {})]
    seen: set[str] = set()
    todo = list(views)
    while todo:
        mid = todo.pop()
        if mid in seen:
            continue
        assert mid in state, f"a view names model {mid}, which the saved state lacks"
        seen.add(mid)
        todo += re.findall(r"IPY_MODEL_([\w-]+)", json.dumps(state[mid]["state"]))
    counts: dict[str, int] = {}
    for mid in seen:
        name = state[mid]["state"].get("_view_name")
        if name in (None, "StyleView", "LayoutView"):
            continue
        assert name in VIEW_CLASS, f"no CSS class known for {name}: add it to VIEW_CLASS"
        counts[VIEW_CLASS[name]] = counts.get(VIEW_CLASS[name], 0) + 1
    return len(views), counts


# --- the web assets: integrity, refusals, versions ------------------------------------------


def test_integrity_is_npm_sha512_format():
    # the published SHA-512 of the empty input, in hex; npm writes it as base64 after "sha512-"
    empty = ("cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce"
             "47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e")
    assert web_assets.sri(b"") == "sha512-" + base64.b64encode(bytes.fromhex(empty)).decode()
    for asset in web_assets.ASSETS:
        assert re.fullmatch(r"sha512-[A-Za-z0-9+/]{86}==", asset.integrity), asset


def _fake_tarball(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, body in files.items():
            info = tarfile.TarInfo(f"package/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def _fake_registry(monkeypatch, tarball: bytes, published: str) -> list[str]:
    urls: list[str] = []

    def get(url, limit, what):
        urls.append(url)
        if url.endswith(".tgz"):
            return tarball
        tarball_url = "https://registry.example/x/-/x-1.0.0.tgz"
        return json.dumps({"dist": {"tarball": tarball_url, "integrity": published}}).encode()

    monkeypatch.setattr(web_assets, "_get", get)
    return urls


def test_a_tarball_is_kept_only_when_registry_pin_and_bytes_agree(tmp_path, monkeypatch):
    body = _fake_tarball({"dist/a.js": b"console.log(1)", "dist/f.woff2": b"font", "dist/sub/g.woff2": b"no"})
    asset = web_assets.Asset("x", "1.0.0", web_assets.sri(body), "x", {"dist/a.js": "a.js"},
                             suffixes=(".woff2",), suffix_dir="dist/")
    monkeypatch.setattr(web_assets, "ASSETS", (asset,))
    urls = _fake_registry(monkeypatch, body, asset.integrity)
    static = web_assets.fetch_assets(tmp_path)
    assert sorted(p.name for p in (static / "x").iterdir()) == ["a.js", "f.woff2"]  # a nested font is not the manager's
    assert (static / "x" / "a.js").read_bytes() == b"console.log(1)"
    assert urls[0].endswith("/x/1.0.0") and len(urls) == 2
    # a damaged cache entry is fetched again; an intact one is used without the network
    (tmp_path / "manifest.json").unlink()
    (tmp_path / "cache" / "x-1.0.0.tgz").write_bytes(b"damaged")
    web_assets.fetch_assets(tmp_path)
    assert len(urls) == 4
    (tmp_path / "manifest.json").unlink()
    web_assets.fetch_assets(tmp_path, offline=True)
    assert len(urls) == 4


def test_a_tarball_that_differs_from_the_pin_is_refused(tmp_path, monkeypatch):
    body = _fake_tarball({"dist/a.js": b"x"})
    pinned = web_assets.sri(b"something else")
    monkeypatch.setattr(web_assets, "ASSETS", (web_assets.Asset("x", "1.0.0", pinned, "x", {"dist/a.js": "a.js"}),))
    _fake_registry(monkeypatch, body, pinned)  # the registry agrees with the pin, the bytes do not
    with pytest.raises(web_assets.AssetError, match=r"x@1\.0\.0: the tarball .* has sha512-.*not the pinned"):
        web_assets.fetch_assets(tmp_path)
    _fake_registry(monkeypatch, body, web_assets.sri(body))  # the registry publishes another digest
    with pytest.raises(web_assets.AssetError, match=r"x@1\.0\.0: the registry publishes integrity"):
        web_assets.fetch_assets(tmp_path)
    assert not (tmp_path / "cache" / "x-1.0.0.tgz").exists()


def test_offline_without_the_cache_says_what_to_run(tmp_path):
    with pytest.raises(web_assets.AssetError, match=r"not in .* and --offline was given; run python tools/web_assets"):
        web_assets.fetch_assets(tmp_path, offline=True)
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "web_assets.py"), "--offline", "--dest", str(tmp_path)],
                       capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.startswith("web_assets: ") and r.stderr.count("\n") == 1, r.stderr


def test_what_an_export_needs():
    assert web_assets.needs(ROOT / "notebooks" / "08_team_report.ipynb") == []  # the report: no state, no math
    assert web_assets.needs(ROOT / "notebooks" / "01_mfu_basics.ipynb") == ["widgets", "math"]
    assert web_assets.needs(ROOT / "notebooks" / "11_roofline.ipynb") == ["widgets"]


def test_saved_widget_models_are_the_versions_ipywidgets_writes():
    import ipywidgets._version as v

    known = {("@jupyter-widgets/base", v.__jupyter_widgets_base_version__),
             ("@jupyter-widgets/controls", v.__jupyter_widgets_controls_version__),
             ("@jupyter-widgets/output", v.__jupyter_widgets_output_version__)}
    for path in NOTEBOOKS:
        state = (json.loads(path.read_text())["metadata"].get("widgets") or {}).get(STATE, {}).get("state", {})
        found = {(m["model_module"], m["model_module_version"]) for m in state.values()}
        assert found <= known, (path.name, found - known)


def _major(caret: str) -> int:
    assert re.fullmatch(r"\^\d+\.\d+\.\d+", caret), caret
    return int(caret[1:].split(".")[0])


def _caret_allows(caret: str, version: str) -> bool:
    """npm's ``^M.m.p`` for M >= 1: the same major version, at least M.m.p."""
    low = tuple(int(x) for x in caret[1:].split("."))
    got = tuple(int(x) for x in version.split("."))
    return _major(caret) >= 1 and got[0] == low[0] and got >= low


def test_the_pinned_manager_matches_the_installed_ipywidgets():
    """The pin satisfies the html-manager range ipywidgets asks for (``^1.0.1`` in its version module), and
    is built on the same major versions of the widget packages as the JupyterLab manager that
    jupyterlab_widgets ships (its package.json, installed with it)."""
    import ipywidgets._version as v

    static = _assets_or_skip()
    pin = next(a for a in web_assets.ASSETS if a.package == "@jupyter-widgets/html-manager")
    assert _caret_allows(v.__html_manager_version__, pin.version), (v.__html_manager_version__, pin.version)
    manager = json.loads((static / "html-manager" / "package.json").read_text())
    assert manager["version"] == pin.version
    lab = json.loads(next(Path(sys.prefix).glob("share/jupyter/labextensions/@jupyter-widgets/jupyterlab-manager/"
                                                "package.json")).read_text())
    for dep in ("@jupyter-widgets/base", "@jupyter-widgets/controls", "@jupyter-widgets/output"):
        # caret ranges of one major version: the same widget package line, the same model versions
        assert _major(manager["dependencies"][dep]) == _major(lab["dependencies"][dep]), dep
    mathjax = json.loads((static / "mathjax" / "package.json").read_text())
    assert mathjax["version"] == "3.2.2"


# --- the generated pages and the build check --------------------------------------------------


def test_a_format_page_per_registry_row(tmp_path, monkeypatch):
    from mfu_toolkit.io import REGISTRY, detect

    names = generate.format_pages(tmp_path)
    assert names == list(REGISTRY)
    assert sorted(p.stem for p in tmp_path.glob("*.rst")) == sorted([*REGISTRY, "index"])
    page = (tmp_path / "mlperf.rst").read_text()
    assert REGISTRY["mlperf"].summary in page and ".. automodule:: mfu_toolkit.io.formats.mlperf" in page
    # a new registry row gets its page and its index row with no edit to the docs
    extra = detect.FormatInfo("brand_new", "mfu_toolkit.io.formats.table", "a format added later")
    monkeypatch.setattr(detect, "REGISTRY", {**REGISTRY, "brand_new": extra})
    monkeypatch.setattr(sys.modules["mfu_toolkit.io"], "REGISTRY", detect.REGISTRY)
    generate.format_pages(tmp_path)
    assert "a format added later" in (tmp_path / "brand_new.rst").read_text()
    assert ":doc:`brand_new`" in (tmp_path / "index.rst").read_text()


def test_notebook_pages_are_the_curated_notebooks(tmp_path):
    names = generate.notebook_pages(tmp_path / "nb", ROOT)
    assert names == [p.stem for p in NOTEBOOKS]
    assert all((tmp_path / "nb" / p.name).resolve() == p.resolve() for p in NOTEBOOKS)


def test_check_build_fails_on_errors_and_passes_known_ones():
    lines = [
        "/x/a.py:docstring of mfu_toolkit.a:3: ERROR: Unexpected indentation. [docutils]",
        "/x/b.py:docstring of mfu_toolkit.b:9: ERROR: Unexpected indentation. [docutils]",
        "/x/c.py:docstring of mfu_toolkit.c.f:1: WARNING: Inline literal start-string without end-string. [docutils]",
        "/d/index.md:28: WARNING: toctree contains reference to nonexisting document 'x' [toc.not_readable]",
        "WARNING: autodoc: failed to import module 'gone' from module 'mfu_toolkit'; the following exception "
        "was raised: [autodoc.import_object]",
        "/d/readme.md:3: WARNING: Lexing literal_block 'x' as \"bash\" resulted in an error. "
        "[misc.highlighting_failure]",
    ]
    errors, known, other = check_build.classify(lines, {("mfu_toolkit.a", "Unexpected indentation.")})
    assert known == lines[:1] and other == lines[5:] and errors == lines[1:5]


def test_check_build_finds_backquotes_a_page_shows(tmp_path):
    # ``a``→``b`` is not an inline literal to docutils (→ may not follow one) and warns nothing: the
    # page shows the marks. Code blocks and literals that did render are not counted.
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "x.html").write_text(
        "<html><head><meta charset='utf-8'><style>p::before{content:'``'}</style></head><body><p>"
        "<code class='literal'><span class='pre'>init_start``→``init_stop</span></code> and <br> "
        "<code class='literal'><span class='pre'>fine</span></code></p>"
        "<div class='highlight'><pre>x = ``literal``</pre></div></body></html>")
    (tmp_path / "ok.html").write_text("<p><code>run_start</code> → <code>run_stop</code></p>")
    hits = check_build.visible_backquotes(tmp_path)
    assert len(hits) == 2 and all(h.startswith("api/x.html: ...init_start``→``init_stop") for h in hits), hits
    assert check_build.main([str(tmp_path / "none.txt")]) == 2


def test_known_docstring_errors_name_objects_that_exist():
    for obj, _ in check_build.known_errors():
        module = obj
        while module and importlib.util.find_spec(module) is None:
            module = module.rpartition(".")[0]
        assert module.startswith("mfu_toolkit"), obj


# --- the built site and the offline export in Chromium, with the network blocked ---------------


def report_html_flags() -> list[str]:
    """The nbconvert options of ``make report``'s HTML (the Makefile's REPORT_HTML), for this checkout."""
    import shlex

    text = (ROOT / "Makefile").read_text()
    m = re.search(r"^REPORT_HTML = ((?:.*\\\n)*.*)$", text, flags=re.M)
    assert m, "the Makefile defines no REPORT_HTML"
    return shlex.split(m.group(1).replace("\\\n", " ").replace("$(CURDIR)", str(ROOT)))


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """``make docs`` into a temporary folder, as CI runs it (the virtual environment is never rebuilt here)."""
    import shutil

    from _browser import require_browser

    require_browser()
    if shutil.which("make") is None:
        pytest.skip("needs GNU make")
    out = tmp_path_factory.mktemp("docs")
    r = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "docs", f"PY={sys.executable}",
                        f"DOCS_OUT={out}"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-4000:]
    assert "make docs: open" in r.stdout and "docs: 0 errors" in r.stdout, r.stdout[-2000:]
    return out / "html"


def _watch(page, where: list[str]) -> list[str]:
    """Console errors, page errors and failed local responses of ``page``, each with the page it was on."""
    problems: list[str] = []
    page.on("console", lambda m: problems.append(f"{where[-1]}: console: {m.text}")
            if m.type == "error" and not any(b in m.text for b in BENIGN) else None)
    page.on("pageerror", lambda e: problems.append(f"{where[-1]}: pageerror: {e}"))
    page.on("response", lambda r: problems.append(f"{where[-1]}: HTTP {r.status} {r.url}")
            if r.status >= 400 and not any(b in r.url for b in BENIGN) else None)
    return problems


def _check_drawn(page, nb: dict, label: str) -> None:
    """Every saved view drawn, and in it every widget of its tree (counted per CSS class); every formula typeset."""
    from playwright.sync_api import expect

    views, counts = expected_widgets(nb)
    expect(page.locator(".widget-subarea"), label).to_have_count(views, timeout=30_000)
    for cls, n in counts.items():
        expect(page.locator(f".widget-subarea .{cls}"), f"{label}: .{cls}").to_have_count(n, timeout=10_000)
    if views:
        assert "VBox(children=" not in page.inner_text("body"), f"{label}: an explorer shown as text"


@pytest.mark.browser
def test_every_page_opens_offline_with_its_explorers_drawn(site, browser):
    from _browser import StaticSite, block_network
    from playwright.sync_api import expect

    from mfu_toolkit.io import REGISTRY

    pages = sorted(p.relative_to(site).as_posix() for p in site.rglob("*.html"))
    assert {f"formats/{n}.html" for n in REGISTRY} | {f"notebooks/{p.stem}.html" for p in NOTEBOOKS} \
        | {"index.html", "readme.html", "api/index.html", "search.html"} <= set(pages)
    books = {f"notebooks/{p.stem}.html": json.loads(p.read_text()) for p in NOTEBOOKS}
    server = StaticSite(site)
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    attempted = block_network(context, (server.url, site.as_uri() + "/"))
    where = ["-"]
    drawn = 0
    try:
        page = context.new_page()
        problems = _watch(page, where)
        for rel in pages:
            where.append(rel)
            page.goto(server.url + rel, wait_until="load")
            if rel in books:
                _check_drawn(page, books[rel], rel)
                drawn += expected_widgets(books[rel])[0]
            formulas = page.locator("span.math, div.math").count()
            if formulas:
                expect(page.locator("mjx-container"), rel).to_have_count(formulas, timeout=30_000)
        # the same site opened from disk (file://), as the README says: an explorer, math, search
        for base in (server.url, site.as_uri() + "/"):
            where.append(f"{base}search.html?q=straggler")
            page.goto(f"{base}search.html?q=straggler", wait_until="load")
            expect(page.locator("#search-results li").first).to_be_visible(timeout=30_000)
        for rel in ("notebooks/01_mfu_basics.html", "notebooks/05_stragglers.html"):
            where.append(f"file: {rel}")
            page.goto((site / rel).as_uri(), wait_until="load")
            _check_drawn(page, books[rel], f"file: {rel}")
            expect(page.locator("mjx-container"), rel).to_have_count(page.locator("span.math, div.math").count())
        page.close()
    finally:
        context.close()
        server.stop()
    assert drawn == sum(expected_widgets(nb)[0] for nb in books.values()) > 0
    assert not attempted, f"requests that would leave the machine: {attempted[:20]}"
    assert not problems, problems[:20]


def _export(notebook: Path, out: Path) -> Path:
    """``jupyter nbconvert --to html --no-input`` with make report's offline options."""
    subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--to", "html", "--no-input", "--log-level=ERROR",
                    *report_html_flags(), "--output-dir", str(out), str(notebook)], check=True, cwd=ROOT, timeout=300)
    return out / notebook.with_suffix(".html").name


@pytest.mark.browser
def test_the_offline_export_draws_explorers_and_math_from_one_file(browser, tmp_path):
    from _browser import block_network, require_browser
    from playwright.sync_api import expect

    require_browser()
    _assets_or_skip()
    cases = {name: json.loads((ROOT / "notebooks" / name).read_text())
             for name in ("01_mfu_basics.ipynb", "03_loading_logs.ipynb")}  # explorer and math; neither
    context = browser.new_context(viewport={"width": 1300, "height": 900})
    attempted = block_network(context, ("file:", "data:"))
    where = ["-"]
    try:
        page = context.new_page()
        problems = _watch(page, where)
        for name, nb in cases.items():
            html = _export(ROOT / "notebooks" / name, tmp_path)
            text = html.read_text()
            assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?:", text), name  # nothing linked
            assert ("data:text/javascript;base64," in text) == bool(web_assets.needs(ROOT / "notebooks" / name))
            where.append(name)
            page.goto(html.as_uri(), wait_until="load")
            _check_drawn(page, nb, name)
            formulas = "$" in "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
            if formulas:
                expect(page.locator("mjx-container").first).to_be_visible(timeout=30_000)
        page.close()
    finally:
        context.close()
    assert not attempted, attempted[:20]
    assert not problems, problems[:20]
