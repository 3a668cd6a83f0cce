"""Interconnect table: peak link rates of NVLink, NVSwitch, PCIe, InfiniBand, Ethernet, TPU ICI and AMD Infinity
Fabric, each with its unit, its direction convention and its source (the numbers live in ``interconnect.csv``).

A collective's bus bandwidth (NCCL's ``busbw``) is a one-direction rate (nccl-tests ``doc/PERFORMANCE.md``: "The
measurement is of a unidirectional bandwidth"), while vendors print NVLink, PCIe and ICI figures with both
directions added ("NVLink is a 1.8TB/s bidirectional, direct GPU-to-GPU interconnect") and network port rates
each way. So every row says how its figure counts, and :attr:`Link.per_direction_bytes_per_s` is the number a bus
bandwidth is compared with. The rules follow the peak-FLOPs registry (:mod:`mfu_toolkit.hardware`):

1. Every row carries its value as printed, its unit (``GB/s`` = 1e9 bytes/s, ``Gb/s`` = 1e9 bits/s), the
   sentence or table cells it comes from (``quote``), a source URL and the date it was read; a row without them
   is refused at load time, naming file, line and field.
2. ``direction`` is ``bidirectional``, ``per_direction`` or ``unstated``. An unstated direction gives no
   per-direction peak (``None``), never a guessed half.
3. ``per`` says what one figure covers: one accelerator (``gpu``, ``chip``), one PCIe x16 slot, one NIC ``port``,
   or one ``link`` of several (not a per-accelerator figure: AMD prints Infinity Fabric per link).
4. ``accelerators`` names the registry accelerators whose intra-node link a row is; :func:`link_for_accelerator`
   resolves any registry name or alias. PCIe cards that may or may not be NVLink-bridged map to nothing.
5. Nothing falls back to a default: an unknown name raises :class:`UnknownLinkError` with close matches, an
   accelerator without a mapped link raises :class:`InterconnectError` saying how to give the link.

Left out for want of a source figure: TPU v4 ICI (Google's v4 page prints no per-chip ICI bandwidth), NVLink of
the export parts (A800, H800), GH200 and Blackwell Ultra NVLink. Only the standard library is imported.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field

from . import hardware

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable, Mapping
    from typing import Any

__all__ = [
    "BUILTIN_CSV",
    "DIRECTIONS",
    "PERS",
    "SCOPES",
    "UNITS",
    "InterconnectError",
    "NoListedLinkError",
    "Link",
    "UnknownLinkError",
    "add_links_csv",
    "get_link",
    "link_for_accelerator",
    "link_table",
    "links",
    "load_links_csv",
    "normalise_link_name",
]

BUILTIN_CSV = os.path.join(os.path.dirname(os.path.realpath(__file__)), "interconnect.csv")
UNITS: dict[str, float] = {"GB/s": 1e9, "Gb/s": 1e9 / 8}  # bytes per second per unit (decimal, as printed)
DIRECTIONS: tuple[str, ...] = ("bidirectional", "per_direction", "unstated")
PERS: tuple[str, ...] = ("gpu", "chip", "x16", "port", "link")
SCOPES: tuple[str, ...] = ("intra_node", "inter_node", "pod")
KINDS: tuple[str, ...] = ("nvlink", "nvswitch", "pcie", "infiniband", "ethernet", "ici", "xgmi")
COLUMNS: tuple[str, ...] = ("name", "kind", "aliases", "value", "unit", "direction", "per", "scope", "accelerators",
                            "quote", "source", "read_on", "note")
_REQUIRED = ("name", "kind", "value", "unit", "direction", "per", "scope", "quote", "source", "read_on")
_URL = re.compile(r"https?://[^\s/]+\.[^\s]+")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


class InterconnectError(ValueError):
    """Any problem with the interconnect table: bad data, an unknown name, an accelerator without a link.
    ``field`` names the Link field a bad value was given for (None for other problems)."""

    field: str | None = None


class NoListedLinkError(InterconnectError):
    """A known accelerator whose intra-node link the table does not fix. Its text asks in Python's terms
    (``give the link by name, e.g. link='NVLink4'``); ``stem`` (the text before the request), ``python``
    (the request), ``asks`` (``("link",)``), ``examples`` and ``detail`` (per asked field) let a front end
    ask in its own (``--link NAME``, ``LINK=NAME``), as an :class:`~mfu_toolkit.run.InputRequest` does."""

    asks = ("link",)
    examples = (("PCIe Gen5 x16", "NVLink4"),)

    def __init__(self, *, accelerator: str, listed: Iterable[str]) -> None:
        self.accelerator, self.listed = accelerator, tuple(listed)
        self.stem = (f"no intra-node link with a source is listed for {accelerator!r} (its link depends on how the "
                     "system is built, or no sourced figure was found)")
        names = " or ".join(f"link={e!r}" for e in self.examples[0])
        self.python = f"give the link by name, e.g. {names}. Accelerators with a listed link: {', '.join(self.listed)}"
        self.detail = (f". Accelerators with a listed link: {', '.join(self.listed)}",)
        super().__init__(f"{self.stem}; {self.python}")

    def __reduce__(self) -> tuple[Any, ...]:
        return (_no_listed_link, (self.accelerator, self.listed))


def _no_listed_link(accelerator: str, listed: tuple[str, ...]) -> NoListedLinkError:
    return NoListedLinkError(accelerator=accelerator, listed=listed)


class UnknownLinkError(InterconnectError):
    """The name matches no link of the table; ``suggestions`` holds close names."""

    def __init__(self, message: str, *, name: str, suggestions: Iterable[str] = ()) -> None:
        super().__init__(message)
        self.name = name
        self.suggestions = tuple(suggestions)


def _bad_field(field: str, message: str) -> InterconnectError:
    exc = InterconnectError(message)
    exc.field = field
    return exc


def _check_choice(value: str, allowed: tuple[str, ...], what: str) -> str:
    if value not in allowed:
        raise _bad_field(what, f"{what} must be one of {', '.join(allowed)}; got {value!r}")
    return value


@dataclass(frozen=True)
class Link:
    """One link rate as its source prints it, with what it counts; build one yourself to state a rate the table
    lacks (``Link("MI300X 7 links", kind="xgmi", value=448, unit="GB/s", direction="per_direction", ...)``)."""

    name: str
    kind: str
    value: float
    unit: str
    direction: str
    per: str = "gpu"
    scope: str = "intra_node"
    aliases: tuple[str, ...] = ()
    accelerators: tuple[str, ...] = ()
    quote: str = ""
    source: str = ""
    read_on: str = ""
    note: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        _check_choice(self.unit, tuple(UNITS), "unit")
        _check_choice(self.direction, DIRECTIONS, "direction")
        _check_choice(self.per, PERS, "per")
        _check_choice(self.scope, SCOPES, "scope")
        if isinstance(self.value, bool) or not isinstance(self.value, (int, float)) or not (
                math.isfinite(self.value) and self.value > 0):
            raise _bad_field("value", f"value must be a positive finite number; got {self.value!r}")

    @property
    def stated_bytes_per_s(self) -> float:
        """The printed figure in bytes/s, counted as the source counts it (see ``direction``)."""
        return float(self.value) * UNITS[self.unit]

    @property
    def per_direction_bytes_per_s(self) -> float | None:
        """Peak one way, in bytes/s: what a bus bandwidth is compared with; None when the source does not say
        whether its figure is one direction or both."""
        if self.direction == "unstated":
            return None
        return self.stated_bytes_per_s / (2.0 if self.direction == "bidirectional" else 1.0)

    @property
    def bidirectional_bytes_per_s(self) -> float | None:
        """Both directions added, in bytes/s (None when the direction is unstated)."""
        one = self.per_direction_bytes_per_s
        return None if one is None else 2.0 * one

    @property
    def per_accelerator(self) -> bool:
        """Whether one figure is what one rank has (an accelerator's aggregate, its x16 slot, one NIC port)."""
        return self.per != "link"

    def describe(self) -> str:
        """One line: the figure as printed, what it counts, the per-direction peak and the source."""
        one = self.per_direction_bytes_per_s
        each = "per direction not stated" if one is None else f"{one / 1e9:,.6g} GB/s per direction"
        return (f"{self.name}: {self.value:,.6g} {self.unit} {self.direction.replace('_', ' ')} per {self.per} "
                f"({each}; source: {self.source or 'not given'}{', read ' + self.read_on if self.read_on else ''})")


def normalise_link_name(name: str) -> str:
    """Lowercase with every separator removed: ``'NVLink-4'``, ``'nvlink 4'`` and ``'NVLink4'`` are one key."""
    return _NON_ALNUM.sub("", name.lower())


# --- reading the CSV -----------------------------------------------------------------------------------------


def _is_iso_date(text: str) -> bool:
    import datetime

    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return len(text) == 10


def _parse_row(raw: Mapping[str, str], origin: str) -> Link:
    """Validate one row; every error names ``origin`` (file:line) and the field."""

    def get(column: str) -> str:
        return (raw.get(column) or "").strip()

    def fail(column: str, message: str) -> InterconnectError:
        return InterconnectError(f"{origin}: field {column!r}: {message}")

    for column in _REQUIRED:
        if not get(column):
            raise fail(column, "missing: every link needs its name, value, unit, direction, what it is per, "
                               "scope, the sentence it comes from, a source URL and the date it was read")
    try:
        value = float(get("value"))
    except ValueError:
        raise fail("value", f"{get('value')!r} is not a number") from None
    if not _URL.fullmatch(get("source")):
        raise fail("source", f"{get('source')!r} is not an http(s) URL: no link rate without its source")
    if not _is_iso_date(get("read_on")):
        raise fail("read_on", f"{get('read_on')!r} is not an ISO date (YYYY-MM-DD)")
    if get("kind") not in KINDS:
        raise fail("kind", f"{get('kind')!r} is not one of {', '.join(KINDS)}")
    accelerators = []
    for text in (a.strip() for a in get("accelerators").split("|") if a.strip()):
        try:
            accelerators.append(hardware.resolve(text).name)
        except hardware.UnknownAcceleratorError as exc:
            raise fail("accelerators", f"{text!r} is not in the peak registry ({exc})") from None
    try:
        return Link(name=get("name"), kind=get("kind"), value=value, unit=get("unit"), direction=get("direction"),
                    per=get("per"), scope=get("scope"),
                    aliases=tuple(a.strip() for a in get("aliases").split("|") if a.strip()),
                    accelerators=tuple(accelerators), quote=get("quote"), source=get("source"),
                    read_on=get("read_on"), note=get("note"))
    except InterconnectError as exc:
        raise fail(exc.field or "value", str(exc)) from None


def load_links_csv(path: str | os.PathLike[str]) -> list[Link]:
    """The rows of an interconnect CSV in the shipped format (``#`` lines are comments); every error names file,
    line and field."""
    return hardware.read_sourced_csv(path, columns=COLUMNS, required=_REQUIRED, parse_row=_parse_row,
                                     error=InterconnectError, what="interconnect CSV")


# --- the table ------------------------------------------------------------------------------------------------


class _Table:
    """Links by canonical name, a key for every name and alias, and the link of each accelerator."""

    def __init__(self) -> None:
        self.links: dict[str, Link] = {}
        self.keys: dict[str, str] = {}
        self.by_accelerator: dict[str, str] = {}

    def add(self, new: list[Link], *, origin: str, replace: bool = False) -> list[str]:
        """Add links atomically: every name, alias and accelerator is checked before any is kept."""
        keys, by_acc, links = dict(self.keys), dict(self.by_accelerator), dict(self.links)
        for link in new:
            owner = keys.get(normalise_link_name(link.name))
            if owner is not None and not replace:
                raise InterconnectError(f"{origin}: link {link.name!r} already exists (as {owner!r}); "
                                        "pass replace=True to replace it")
            for label in (link.name, *link.aliases):
                key = normalise_link_name(label)
                if not key:
                    raise InterconnectError(f"{origin}: {label!r} of {link.name!r} has no letters or digits")
                if keys.get(key, link.name) not in (link.name, owner):
                    raise InterconnectError(f"{origin}: {label!r} of {link.name!r} already names {keys[key]!r}")
                keys[key] = link.name
            for acc in link.accelerators:
                if by_acc.get(acc, link.name) not in (link.name, owner):
                    raise InterconnectError(f"{origin}: accelerator {acc!r} already has link {by_acc[acc]!r}")
                by_acc[acc] = link.name
            links[link.name] = link
        self.keys, self.by_accelerator, self.links = keys, by_acc, links
        return [link.name for link in new]


_TABLE: _Table | None = None


def _table() -> _Table:
    global _TABLE
    if _TABLE is None:
        table = _Table()
        table.add(load_links_csv(BUILTIN_CSV), origin=BUILTIN_CSV)
        _TABLE = table
    return _TABLE


def _reset_table() -> None:
    """Forget the loaded table; the next lookup reads the shipped CSV again."""
    global _TABLE
    _TABLE = None


def add_links_csv(path: str | os.PathLike[str], *, replace: bool = False) -> list[str]:
    """Add the links of a CSV in the shipped format (a team's own NICs or systems); returns their names. An
    existing name raises :class:`InterconnectError` unless ``replace=True``."""
    return _table().add(load_links_csv(path), origin=str(path), replace=replace)


def links(*, kind: str | None = None) -> list[Link]:
    """Every link of the table in file order, or only one ``kind`` (``nvlink``, ``pcie``, ``infiniband``, ...)."""
    if kind is not None:
        _check_choice(kind, KINDS, "kind")
    return [link for link in _table().links.values() if kind is None or link.kind == kind]


def _close_names(key: str, table: _Table, n: int = 5) -> list[str]:
    import difflib

    found = [table.keys[k] for k in difflib.get_close_matches(key, list(table.keys), n=2 * n, cutoff=0.5)]
    found += [name for k, name in table.keys.items() if key and (key in k or k in key)]
    return list(dict.fromkeys(found))[:n]


def get_link(name: str | Link) -> Link:
    """The link a name or alias refers to (case and separators ignored: ``'nvlink-4'``, ``'NDR'``, ``'400GbE'``);
    a :class:`Link` is returned as given. Raises :class:`UnknownLinkError` naming close matches."""
    if isinstance(name, Link):
        return name
    if not isinstance(name, str):
        raise UnknownLinkError(f"a link is named by a string or given as a Link; got {name!r}", name=repr(name))
    table = _table()
    key = normalise_link_name(name)
    if key in table.keys:
        return table.links[table.keys[key]]
    close = _close_names(key, table)
    hint = (f"close matches: {', '.join(map(repr, close))}" if close
            else f"kinds listed: {', '.join(sorted({link.kind for link in table.links.values()}))}")
    raise UnknownLinkError(f"unknown link {name!r} ({hint}). No rate is assumed: name one of interconnect.csv, "
                           "add a CSV with add_links_csv(...), or pass a Link(...) you state yourself",
                           name=name, suggestions=close)


def link_for_accelerator(accelerator: str) -> Link:
    """The intra-node link of an accelerator (any name or alias the peak registry resolves, including
    ``torch.cuda.get_device_name()`` strings). Raises ``hardware.UnknownAcceleratorError`` for an unknown name and
    :class:`InterconnectError` for a known one whose link the table does not fix (PCIe cards that may be
    NVLink-bridged, parts without a sourced figure)."""
    canonical = hardware.resolve(accelerator).name
    table = _table()
    name = table.by_accelerator.get(canonical)
    if name is None:
        raise NoListedLinkError(accelerator=canonical, listed=sorted(table.by_accelerator))
    return table.links[name]


def link_table(*, kind: str | None = None) -> list[dict[str, object]]:
    """One dict per link (name, kind, value, unit, direction, per, scope, per-direction GB/s, accelerators, quote,
    source, read_on, note), for printing or a DataFrame."""
    rows: list[dict[str, object]] = []
    for link in links(kind=kind):
        one = link.per_direction_bytes_per_s
        rows.append({"name": link.name, "kind": link.kind, "value": link.value, "unit": link.unit,
                     "direction": link.direction, "per": link.per, "scope": link.scope,
                     "per_direction_gb_per_s": None if one is None else one / 1e9,
                     "accelerators": "|".join(link.accelerators), "quote": link.quote, "source": link.source,
                     "read_on": link.read_on, "note": link.note})
    return rows
