"""The browser scripts that let the docs site and the team report draw explorers and math offline.

A notebook's explorers (ipywidgets) are saved as widget state in its metadata; a static page draws
them with the widget manager of the npm package ``@jupyter-widgets/html-manager``. Its math is
typeset by ``mathjax``. The Python packages ship neither, and nbconvert and myst-nb link both from
CDNs by default, so a page opened without a network shows neither. This script fetches them once
from the npm registry, as the tarball of a pinned version, and keeps them under ``build/web_assets/``
(ignored by git): nothing is vendored into the repository.

Each tarball's sha512 must equal the ``integrity`` pinned below, which must also be what the
registry publishes for that version (checked on every download); a cached tarball is checked again
before it is unpacked. The registry is ``$npm_config_registry`` (as npm reads it), else
https://registry.npmjs.org.

Pins (compatibility, checked by tests/test_docs_site.py):

- ``@jupyter-widgets/html-manager`` 1.0.15: ipywidgets 8.1.5 (pinned) and 8.1.9 ask for ``^1.0.1``
  (``ipywidgets._version.__html_manager_version__``); 1.0.15 is built on ``@jupyter-widgets/base``
  6, ``controls`` 5 and ``output`` 6, the major versions of the JupyterLab manager that
  jupyterlab_widgets 3.0 ships (3.0.13: base ^6.0.10; 3.0.17: ^6.0.12), and reads the model versions
  both save (base 2.0.0, controls 2.0.0, output 1.0.0; protocol 2.1.0). Its standalone build
  ``dist/embed.js`` draws the core widgets without require.js; the Font Awesome fonts its CSS names
  are copied beside it (woff2 and woff: every browser that runs the manager's code reads them; the
  eot, ttf and svg fallbacks are for browsers that cannot).
- ``mathjax`` 3.2.2, ``es5/tex-svg-full.js``: every TeX extension and the SVG output in one
  file, so typesetting loads no font file and no further component.

    python tools/web_assets.py            # fetch once, unpack; prints each file with its size
    python tools/web_assets.py --offline  # the same from the cache only (exit 2 if it is missing)
    python tools/web_assets.py --for X.ipynb  # only if X's HTML export needs them (make report)

``--for`` applies the rule of the report's template (docs/nbconvert/offline/index.html.j2): the
widget manager is embedded when the notebook saved widget state, MathJax when a Markdown cell holds
``$``, ``\\(``, ``\\[`` or ``\\begin{``, or an output holds LaTeX or Markdown with ``$``. A notebook
that needs neither (the team report) needs no fetch, so ``make report`` works with no network.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DIR = ROOT / "build" / "web_assets"
REGISTRY = "https://registry.npmjs.org"
MAX_TARBALL_BYTES = 64 << 20  # the pinned tarballs are 5.1 MB and 6.1 MB
MAX_METADATA_BYTES = 4 << 20
TIMEOUT_S = 60


@dataclass(frozen=True)
class Asset:
    """One pinned npm package: its tarball's integrity and the members copied out of it.

    ``files`` maps a member path inside the tarball (below ``package/``) to its name in the
    unpacked folder; ``suffixes`` copies every member of ``folder`` whose name ends so."""

    package: str
    version: str
    integrity: str
    folder: str
    files: dict[str, str]
    suffixes: tuple[str, ...] = ()
    suffix_dir: str = ""


ASSETS: tuple[Asset, ...] = (
    Asset("@jupyter-widgets/html-manager", "1.0.15",
          "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
          "html-manager", {"dist/embed.js": "embed.js", "dist/embed.js.LICENSE.txt": "embed.js.LICENSE.txt",
                           "package.json": "package.json"},
          suffixes=(".woff2", ".woff"), suffix_dir="dist/"),
    Asset("mathjax", "3.2.2",
          "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
          "mathjax", {"es5/tex-svg-full.js": "tex-svg-full.js", "LICENSE": "LICENSE", "package.json": "package.json"}),
)
# What pages load, as paths below the unpacked folder (``static/``).
WIDGET_MANAGER = "html-manager/embed.js"
MATHJAX = "mathjax/tex-svg-full.js"


WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
MATH_MARKS = ("$", "\\(", "\\[", "\\begin{")


class AssetError(RuntimeError):
    """An asset that could not be fetched or did not verify; the message names it and what to do."""


def sri(data: bytes) -> str:
    """The subresource-integrity string npm publishes: ``sha512-`` and the base64 digest."""
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _registry() -> str:
    return os.environ.get("npm_config_registry", os.environ.get("NPM_CONFIG_REGISTRY", REGISTRY)).rstrip("/")


def _get(url: str, limit: int, what: str) -> bytes:
    """The body of ``url``, at most ``limit`` bytes; an error names ``what`` and the URL."""
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as resp:
            data = resp.read(limit + 1)
    except (urllib.error.URLError, OSError) as exc:
        raise AssetError(f"{what}: cannot fetch {url}: {exc}. The docs and offline reports need it once, "
                         "from a machine with access to the npm registry (python tools/web_assets.py); "
                         "or copy build/web_assets/ from such a machine") from exc
    if len(data) > limit:
        raise AssetError(f"{what}: {url} is larger than {limit} bytes; refusing it")
    return data


def _download(asset: Asset) -> bytes:
    """The tarball of ``asset``, checked against the registry's record and the pinned integrity."""
    what = f"{asset.package}@{asset.version}"
    url = f"{_registry()}/{urllib.parse.quote(asset.package, safe='@/')}/{asset.version}"
    try:
        dist = json.loads(_get(url, MAX_METADATA_BYTES, what))["dist"]
    except (ValueError, KeyError, TypeError) as exc:
        raise AssetError(f"{what}: the registry's record at {url} has no dist field: {exc}") from exc
    if dist.get("integrity") != asset.integrity:
        raise AssetError(f"{what}: the registry publishes integrity {dist.get('integrity')!r}, "
                         f"tools/web_assets.py pins {asset.integrity!r}; refusing the tarball")
    data = _get(dist["tarball"], MAX_TARBALL_BYTES, what)
    if sri(data) != asset.integrity:
        raise AssetError(f"{what}: the tarball from {dist['tarball']} has {sri(data)}, not the pinned "
                         f"{asset.integrity}; refusing it")
    return data


def _tarball(asset: Asset, cache: Path, offline: bool) -> bytes:
    """The verified tarball, from ``cache`` when it is there and intact, else downloaded into it."""
    path = cache / f"{asset.folder}-{asset.version}.tgz"
    if path.is_file():
        data = path.read_bytes()
        if sri(data) == asset.integrity:
            return data
        path.unlink()  # a damaged or stale cache entry is fetched again
    if offline:
        raise AssetError(f"{asset.package}@{asset.version}: not in {cache} and --offline was given; "
                         "run python tools/web_assets.py once with access to the npm registry")
    data = _download(asset)
    cache.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".part")
    tmp.write_bytes(data)
    tmp.replace(path)
    return data


def _members(asset: Asset, data: bytes) -> dict[str, bytes]:
    """The files ``asset`` names, read out of its tarball (npm puts them below ``package/``)."""
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        for member in tar.getmembers():
            if not member.isfile() or not member.name.startswith("package/"):
                continue
            rel = member.name[len("package/"):]
            name = asset.files.get(rel)
            if name is None and asset.suffixes and rel.startswith(asset.suffix_dir) \
                    and "/" not in rel[len(asset.suffix_dir):] and rel.endswith(asset.suffixes):
                name = rel[len(asset.suffix_dir):]
            if name is not None:
                out[name] = tar.extractfile(member).read()  # type: ignore[union-attr]
    missing = [m for m, n in asset.files.items() if n not in out]
    if missing:
        raise AssetError(f"{asset.package}@{asset.version}: the tarball has no {', '.join(missing)}")
    return out


def fetch_assets(dest: Path = DEFAULT_DIR, *, offline: bool = False) -> Path:
    """Fetch (once), verify and unpack every pinned asset; returns the folder pages load them from
    (``dest/static``), which also holds ``manifest.json``: each package, version, integrity and file sizes."""
    static = dest / "static"
    manifest_path = dest / "manifest.json"
    wanted = [{"package": a.package, "version": a.version, "integrity": a.integrity} for a in ASSETS]
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text())
        if [{k: p[k] for k in ("package", "version", "integrity")} for p in manifest["packages"]] == wanted \
                and all((static / a.folder / f).is_file() for a in ASSETS for f in a.files.values()):
            return static
    if static.exists():
        shutil.rmtree(static)
    packages = []
    for asset in ASSETS:
        files = _members(asset, _tarball(asset, dest / "cache", offline))
        folder = static / asset.folder
        folder.mkdir(parents=True, exist_ok=True)
        for name, body in sorted(files.items()):
            (folder / name).write_bytes(body)
        packages.append({"package": asset.package, "version": asset.version, "integrity": asset.integrity,
                         "files": {f"{asset.folder}/{n}": len(b) for n, b in sorted(files.items())}})
    manifest_path.write_text(json.dumps({"packages": packages}, indent=1) + "\n")
    return static


def needs(notebook: Path) -> list[str]:
    """What the HTML export of ``notebook`` embeds: ``"widgets"`` (saved widget state), ``"math"``."""
    try:
        nb = json.loads(Path(notebook).read_text(encoding="utf-8"))
        cells = nb["cells"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise AssetError(f"{notebook}: not a readable notebook ({exc})") from exc
    out = []
    if ((nb.get("metadata") or {}).get("widgets") or {}).get(WIDGET_STATE, {}).get("state"):
        out.append("widgets")
    for cell in cells:
        text = "".join(cell.get("source", ""))
        if cell.get("cell_type") == "markdown" and any(m in text for m in MATH_MARKS):
            out.append("math")
            break
        data = [o.get("data", {}) for o in cell.get("outputs", [])]
        if any("text/latex" in d or "$" in "".join(d.get("text/markdown", "")) for d in data):
            out.append("math")
            break
    return out


def main(argv: list[str] | None = None) -> int:
    """Command line: fetch and unpack, then print each package and file with its size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DIR, help="cache and unpack here (build/web_assets)")
    parser.add_argument("--offline", action="store_true", help="use the cache only; fail if an asset is missing")
    parser.add_argument("--for", dest="notebook", type=Path, help="only if this notebook's HTML export needs them")
    args = parser.parse_args(argv)
    try:
        if args.notebook is not None and not needs(args.notebook):
            print(f"{args.notebook}: no widget state and no math; nothing to fetch")
            return 0
        static = fetch_assets(args.dest, offline=args.offline)
    except AssetError as exc:
        print(f"web_assets: {exc}", file=sys.stderr)
        return 2
    for pkg in json.loads((args.dest / "manifest.json").read_text())["packages"]:
        total = sum(pkg["files"].values())
        print(f"{pkg['package']}@{pkg['version']} ({total:,} bytes in {len(pkg['files'])} files)")
        for name, size in pkg["files"].items():
            print(f"  {static / name} {size:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
