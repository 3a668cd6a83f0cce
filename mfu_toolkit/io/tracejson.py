"""Chrome-trace JSON (``{"traceEvents": [...]}``): the events a loader wants, read selectively and bounded.

The format PyTorch's profiler (Kineto), Perfetto's JSON export and JAX write: one JSON object whose
``traceEvents`` array holds every event (``ph``, ``cat``, ``name``, ``ts``, ``dur``, ...), beside a few
top-level keys. A loader usually needs a small part of it (the GPU kernels and step spans, a tenth of a
typical trace's events), and a trace may be gigabytes. This module reads it once, as a stream, and hands
back only the events a :class:`Selection` names, each already compacted by the selection's ``hook``
into a small tuple, plus the top-level keys asked for and the lines where they stand.

How (see :func:`read_events`): a thread inflates the file chunk by chunk through the shared bounded
reader (:func:`mfu_toolkit.io.reading.iter_chunks`; zlib releases the GIL) into one buffer, preallocated
to the size gzip's trailer states when that is within the reading limits, so a gzip bomb or a trailer
that claims gigabytes is a LoadError naming the file, never an allocation of that size. The reading
thread meanwhile checks each chunk with numpy word compares (NUL bytes, UTF-8, brace balance, each
top-level key at most once, the ``"ph"`` count, and where a ``"cat"`` may hold a wanted category),
matches those places and the selection's ``mark``, reads the complete (``"X"``) events written in the
profiler's own layout straight from the bytes (the selection's ``quick``), and decodes the others one
by one from a small window with the selection's ``hook``. A match is taken only once the bytes after
it cannot change it, so events cut by chunk boundaries read the same. The other events are never
decoded, and the file is never held as text: the peak is about 1.2x the inflated size.

The selective read applies only to a complete, well-formed document (a JSON object, valid UTF-8
without NUL bytes, balanced braces, one ``traceEvents`` key, every located event decoding to an event
that contains its match); anything else, and a strict reader, takes the full parse of the same buffer:
the standard library's decoder with the ``hook`` as ``object_hook``, so the full event dicts never live
together. Damage there (a truncated file, a broken value, nesting too deep, an integer with too many
digits) is counted on the reader with its line and field, and the file is read up to its last complete
event; a strict reader raises instead. Damage inside events the selection does not use is noticed only
by the full parse.
"""

from __future__ import annotations

import json
import math
import os
import queue
import re
import struct
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from . import rules
from .reading import GZIP_MAGIC, Limits, Reader, iter_chunks
from .values import number

__all__ = ["Bad", "Events", "Selection", "Threads", "inflated_size", "read_events", "scan_bytes", "threads"]


class Bad(NamedTuple):
    """What a selection's ``hook`` returns for a wanted event with a bad value: counted, not kept.

    ``field`` is the event's key (``"ts"``), ``why`` the skip reason (a :mod:`mfu_toolkit.io.rules` constant, or a
    :class:`~mfu_toolkit.io.rules.SkipReason` that carries the detail).
    """

    field: str
    why: str


class Events(NamedTuple):
    """The events read from one trace, and what it states at its top level."""

    doc: dict[str, Any]  # the top-level keys (all but traceEvents after a full parse; doc_keys after a selective one)
    kept: list[tuple]  # the hook's tuples of the wanted events, in file order
    bad: list[tuple[int, Bad]]  # (line, Bad) of the selective read, counted by read_events; [] after a full parse
    n_events: int  # the events in traceEvents (the ``"ph"`` texts, for the selective read)
    lines: dict[str, int]  # the line of each of the selection's line_keys / inner_lines found


_NUM = rb"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"


@dataclass(frozen=True, kw_only=True)
class Selection:
    """Which events of ``traceEvents`` a loader wants, and what each becomes.

    ``hook``: the ``object_hook`` every decoded object goes through: for an event (a dict with ``"ph"``)
    it returns a tuple to keep, a :class:`Bad` to count, or None to drop; any other object it returns as
    it is (or as it likes). It must keep no event the selective read would not locate: only events of
    ``categories`` or holding ``mark``, else the two reads differ.
    ``categories``: the ``cat`` values (any case) whose events are located by their category.
    ``mark``: a text (``b"ProfilerStep#"``) whose every occurrence in traceEvents locates its event.
    ``quick``: ``(cat, name, ts, dur) -> tuple | None``, the kept tuple of a complete event of a category
    written in the profiler's own layout (``{"ph": "X", "cat": ..., "name": ..., "pid": ..., "tid": ...,
    "ts": ..., "dur": ...``; finite times, ``dur >= 0``), read from its bytes without decoding; None (or
    no ``quick``) decodes it with ``hook``. It must agree with ``hook``.
    ``doc_keys``: the top-level keys wanted besides ``traceEvents`` (each is there at most once).
    ``line_keys``: those of ``doc_keys`` whose line is wanted; ``inner_lines``: ``(key, after)`` pairs, the
    line of the first ``"key"`` after the ``"after"`` key (one of ``line_keys``).
    """

    hook: Callable[[dict[str, Any]], Any]
    categories: tuple[str, ...] = ()
    mark: bytes = b""
    quick: Callable[[bytes, bytes, float, float], tuple | None] | None = None
    doc_keys: tuple[str, ...] = ()
    line_keys: tuple[str, ...] = ()
    inner_lines: tuple[tuple[str, str], ...] = ()
    cat_re: re.Pattern[bytes] = field(init=False, repr=False, compare=False)
    letters: np.ndarray = field(init=False, repr=False, compare=False)
    counted: tuple[bytes, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not set(self.line_keys) <= set(self.doc_keys) or not {a for _, a in self.inner_lines} <= set(self.line_keys):
            raise ValueError("line_keys must be doc_keys, and each inner_lines' 'after' one of line_keys")
        alt = b"|".join(re.escape(c.encode()) for c in self.categories)
        # a wanted category; then, optionally, the rest of the profiler's own layout up to "dur" (no
        # escapes in the name, plain numbers), read without decoding the event
        cat_re = re.compile(
            rb'"cat"\s*:\s*"((?i:' + alt + rb'))"'
            rb'(?:\s*,\s*"name"\s*:\s*"([^"\\]*)"\s*,'
            rb'\s*"pid"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,\s*"tid"\s*:\s*(?:-?\d+|"[^"\\]*")\s*,'
            rb'\s*"ts"\s*:\s*(' + _NUM + rb')\s*,\s*"dur"\s*:\s*(' + _NUM + rb')\s*[,}])?'
        ) if self.categories else re.compile(rb"(?!)")
        object.__setattr__(self, "cat_re", cat_re)
        # the categories' first bytes, ORed with 32 (ASCII letters in lower case): a superset test
        object.__setattr__(self, "letters", np.array(sorted({c.encode()[0] | 32 for c in self.categories if c}),
                                                     dtype=np.uint8))
        # texts counted over the whole file: "ph" counts the events; then the top-level keys
        object.__setattr__(self, "counted", (b'"ph"', b'"traceEvents"', *(f'"{k}"'.encode() for k in self.doc_keys)))


def inflated_size(path: Path, limits: Limits) -> int:
    """The bytes a file holds once inflated: its size, or for gzip the size its trailer states (modulo
    2**32, so raised by 2**32 while below the compressed size), at most the reading limits allow."""
    try:
        size = path.stat().st_size
        with path.open("rb") as f:
            if f.read(2) != GZIP_MAGIC or size < 18:
                return size
            f.seek(-4, os.SEEK_END)
            est = struct.unpack("<I", f.read(4))[0]
    except OSError:  # unreadable: its parse reports it; it costs nothing to schedule
        return 0
    while est < size:
        est += 2**32
    return min(est, limits.inflate_limit(size))


def read_events(reader: Reader, selection: Selection, *, selective: bool = True) -> Events:
    """The selected events of the trace at ``reader.path``, read selectively when that applies
    (``selective`` and the reader not strict), else by the full parse. Bad events and damage are
    counted on ``reader`` (file, line, field); an empty file, or one that is not a Chrome trace, and
    any damage under a strict reader, raise its LoadError."""
    sc = _scanned(reader, selection, selective and not reader.strict)
    raw = sc.bytes()
    if not raw or raw.isspace():
        reader.fail("empty file")
    del raw
    picked = sc.result()
    if picked is not None:
        for line, e in picked.bad:
            reader.bad(e.why, line=line, field=f"traceEvents.{e.field}")
        return picked
    raw = sc.bytes()
    lines = _key_lines(raw, selection)
    doc, kept, n = _parse_all(reader, raw, selection)
    return Events(doc, kept, [], n, lines)


class Threads(NamedTuple):
    """A trace's complete events per thread, and the names its metadata events give processes and threads."""

    processes: dict[str, str]  # pid -> the process_name metadata's name
    names: dict[tuple[str, str], str]  # (pid, tid) -> the thread_name metadata's name
    events: dict[tuple[str, str], list[tuple]]  # (pid, tid) -> (ts, dur, name, *pick(args)) per X event, file order


def threads(reader: Reader, pick: Callable[[dict[str, Any]], tuple] = lambda args: ()) -> Threads:
    """The complete (``X``) events of the trace at ``reader.path`` per thread, by the full parse.

    Each event is compacted as it is decoded: a ``process_name`` or ``thread_name`` metadata (``M``) event
    names its process or thread (names cut at 300 characters; ``pid``/``tid`` kept as text of at most 64);
    an ``X`` event becomes ``(ts, dur, name, *pick(args))`` (``name`` cut at 2,000 characters, ``args`` an
    empty dict where it is none), one whose ``ts`` or ``dur`` is no finite number, or whose ``dur`` is
    negative, a bad record counted on the reader; every other event is dropped. Threads come in the order
    of their first complete event; the reader's ``lines_read`` counts the trace's events.
    """
    def hook(d: dict[str, Any]) -> Any:
        ph = d.get("ph")
        if ph is None:
            return d
        if ph == "M":
            args, kind = d.get("args"), d.get("name")
            if kind in ("process_name", "thread_name") and isinstance(args, dict) and isinstance(args.get("name"), str):
                return ("M", kind, str(d.get("pid"))[:64], str(d.get("tid"))[:64], args["name"][:300])
            return None
        if ph != "X":
            return None
        ts, dur = number(d.get("ts")), number(d.get("dur"))
        if ts is None:
            return Bad("ts", rules.SkipReason(rules.NON_FINITE_TIME, "ts"))
        if dur is None:
            return Bad("dur", rules.SkipReason(rules.NON_FINITE_TIME, "dur"))
        if dur < 0:
            return Bad("dur", rules.NEGATIVE_DURATION)
        args = d.get("args") if isinstance(d.get("args"), dict) else {}
        name = d.get("name") if isinstance(d.get("name"), str) else ""
        return ("X", str(d.get("pid"))[:64], str(d.get("tid"))[:64], ts, dur, name[:2000], *pick(args))

    ev = read_events(reader, Selection(hook=hook), selective=False)
    reader.report.lines_read += ev.n_events
    out = Threads({}, {}, {})
    for e in ev.kept:
        if e[0] == "X":
            out.events.setdefault((e[1], e[2]), []).append(e[3:])
        elif e[1] == "process_name":
            out.processes[e[2]] = e[4]
        else:
            out.names[(e[2], e[3])] = e[4]
    del ev.kept[:]
    return out


def scan_bytes(data: bytes, selection: Selection, *, chunk: int = 1 << 16) -> Events | None:
    """The selective read of a file's inflated bytes fed in ``chunk``-byte pieces, bad events not
    counted; None when it does not apply (the full parse would read the file). For tests and tools."""
    guards = _Guards(selection)
    sc = _Scan(guards, selection)
    for i in range(0, len(data), chunk):
        guards.feed(data[i : i + chunk])
        sc.feed(data[i : i + chunk])
    return sc.result()


# --- the selective read -------------------------------------------------------------------------
_TRACE_EVENTS_B_RE = re.compile(rb'"traceEvents"\s*:\s*\[')
_COLON_B_RE = re.compile(rb"\s*:\s*")
_CAT = b'"cat"'
_CAT_GRAM = int.from_bytes(b'cat"', "little")
_EVENT_HEAD_RE = re.compile(rb'\{\s*"ph"\s*:\s*"X"\s*,\s*')
_HEAD = b'{"ph": "X", '  # the profiler's own event head (json.dumps spacing), checked without a regex
_WINDOW = 4096  # bytes first decoded around an event; quadrupled while the value runs past it


def _quick(buf: bytearray, s: int, h: int, g: re.Match[bytes], read: Any) -> tuple | None:
    """The kept tuple of a complete event in the profiler's own layout, read from its bytes by ``read``."""
    cat, name, ts, dur = g.groups()
    if read is None or dur is None or (h - s != len(_HEAD) and not _EVENT_HEAD_RE.fullmatch(buf, s, h)):
        return None
    t, d = float(ts), float(dur)
    if not (math.isfinite(t) and math.isfinite(d) and d >= 0):
        return None
    return read(cat, name, t, d)


def _decode_value(buf: bytearray, n: int, at: int, dec: json.JSONDecoder) -> tuple[Any, int]:
    """The JSON value starting at byte ``at`` of ``buf[:n]`` and the byte where it ends.

    Only a window around it is decoded (UTF-8 is checked for the whole file beforehand, so
    ``ignore`` drops at most a character cut at the window's end); a value running past the
    window is decoded again from a window four times larger.
    """
    w = _WINDOW
    while True:
        e = min(n, at + w)
        text = buf[at:e].decode("utf-8", errors="ignore")
        try:
            obj, end = dec.raw_decode(text)
        except json.JSONDecodeError:
            if e >= n:
                raise
            w *= 4
            continue
        if end >= len(text) and e < n:  # a number may go on past the window
            w *= 4
            continue
        return obj, at + (end if text.isascii() else len(text[:end].encode("utf-8")))


class _Guards:
    """What the selective read requires of the whole file, checked chunk by chunk as inflated.

    No NUL byte, UTF-8, braces balanced, ``"traceEvents"`` and each top-level fact key at most
    once (their first offsets kept), the count of ``"ph"`` (the events read), and where a
    ``"cat"`` may hold a wanted category. Each chunk is checked in the reading thread before the
    selective read takes it (in the inflating thread it waited for the GIL between numpy calls,
    and the whole read was slower).
    """

    def __init__(self, selection: Selection) -> None:
        self.ok, self.n, self.braces, self.tail = True, 0, 0, b""  # braces: opening minus closing
        self.counted, self.letters = selection.counted, selection.letters
        self.grams = tuple(int.from_bytes(k[-4:], "little") for k in self.counted)
        self.counts = dict.fromkeys(self.counted, 0)
        self.first: dict[bytes, int] = {}
        self.utf8: Any = None  # an incremental decoder, once a byte is not ASCII
        self.cands: list[list[int]] = []  # per chunk: offsets of "cat" that may be a wanted event's

    def feed(self, chunk: bytes) -> None:
        try:
            if self.ok:
                self._check(chunk)
        except Exception:  # not UTF-8, or any surprise: the full parse decides
            self.ok = False
        self.n += len(chunk)
        self.tail = (self.tail + chunk)[-32:]

    def _check(self, chunk: bytes) -> None:
        if b"\x00" in chunk:
            self.ok = False
            return
        byte = np.frombuffer(chunk, np.uint8)
        self.braces += int(np.count_nonzero(byte == 123)) - int(np.count_nonzero(byte == 125))
        del byte
        seg = self.tail + chunk  # a text may end in this chunk but start before it
        base, t = self.n - len(self.tail), len(self.tail)
        cats = []
        for k in range(min(4, len(seg) - 3)):
            words = np.frombuffer(seg, "<u4", count=(len(seg) - k) // 4, offset=k)
            new = max(0, (t - k - 4) // 4 + 1)  # the first word that ends in this chunk
            for pat, gram in zip(self.counted, self.grams, strict=True):
                if pat == b'"ph"':
                    self.counts[pat] += int(np.count_nonzero(words[new:] == gram))
                    continue
                for j in np.flatnonzero(words == gram).tolist():
                    at = k + 4 * j + 4 - len(pat)  # where the text starts in seg
                    if at >= 0 and j >= new and seg.startswith(pat, at):
                        self.counts[pat] += 1
                        self.first[pat] = min(self.first.get(pat, base + at), base + at)
            cats.append(np.flatnonzero(words[new:] == _CAT_GRAM) * 4 + (k + 4 * new))
            del words
        if cats:
            self._candidates(np.frombuffer(seg, np.uint8), np.sort(np.concatenate(cats)), base)
        if any(self.counts[p] > 1 for p in self.counted[1:]):
            self.ok = False
        if self.utf8 is not None or not chunk.isascii():
            if self.utf8 is None:
                import codecs

                self.utf8 = codecs.getincrementaldecoder("utf-8")()
            self.utf8.decode(chunk)

    def _candidates(self, a: np.ndarray, i: np.ndarray, base: int) -> None:
        """Offsets of the ``"cat"`` texts whose value may be a wanted category (a superset: the
        value's first letter, any case, is one of the categories' first letters, or the spacing is
        not ``: "`` / ``:"``)."""
        i = i[(i > 0) & (a[np.maximum(i - 1, 0)] == 34)] - 1  # the opening quote of "cat"
        if not len(i):
            return
        end = len(a)
        after = [a[np.minimum(i + d, end - 1)] for d in (5, 6, 7)]
        fits = i + 9 <= end  # the bytes up to the value's first letter are in this chunk
        spaced = fits & (after[0] == 58) & (after[1] == 32) & (after[2] == 34)  # : "
        tight = fits & (after[0] == 58) & (after[1] == 34)  # :"
        first = np.where(spaced, a[np.minimum(i + 8, end - 1)], after[2]) | 32
        letter = np.isin(first, self.letters)
        keep = ~(spaced | tight) | letter
        self.cands.append((i[keep] + base).tolist())

    def whole(self) -> bool:
        """Every chunk passed, and the last one ends the UTF-8 text."""
        if self.ok and self.utf8 is not None:
            try:
                self.utf8.decode(b"", True)
            except UnicodeDecodeError:
                self.ok = False
        return self.ok and self.braces == 0


class _Scan:
    """The selective read over a trace's inflated bytes, fed chunk by chunk as they are inflated.

    The bytes are kept in one buffer (``buf[:n]``; grown in place, or preallocated to the size
    gzip's trailer states), which the full parse reads when the selective read does not apply.
    While chunks arrive, the guard texts are counted and the events the loader needs are located
    and, in the profiler's own layout, read; the others are decoded at the end (:meth:`result`).
    A match is taken only once the bytes after it cannot change it: a GPU category before the
    last ``"cat"`` seen (a category's text cannot hold another), a step mark whole.
    """

    def __init__(self, guards: _Guards, selection: Selection, size: int = 0, scan: bool = True) -> None:
        self.buf, self.n, self.ok, self.guards, self.sel = bytearray(size), 0, scan, guards, selection
        self.chunk = self.at = 0  # the next of the guards' candidates
        self.pos = self.step_pos = 0  # categories / marks before these are located
        self.steps: list[int] = []
        self.prev_h = self.prev_s = -1
        self.starts: dict[int, int] = {}  # event start -> its last match
        self.quick: dict[int, tuple] = {}  # event start -> tuple read without decoding

    def feed(self, chunk: bytes) -> None:
        old, end = self.n, self.n + len(chunk)
        if end <= len(self.buf):
            self.buf[old:end] = chunk
        else:
            del self.buf[old:]
            self.buf += chunk
        self.n = end
        if self.ok and not self.guards.ok:
            self.ok = False
        if self.ok:
            try:
                self._locate(final=False)
            except Exception:  # any surprise: the full parse decides
                self.ok = False

    def bytes(self) -> bytearray:
        """The whole inflated file (the buffer trimmed to its length)."""
        del self.buf[self.n:]
        return self.buf

    def _locate(self, final: bool) -> None:
        """Match the wanted categories and marks that are decided, and read their events.

        A category before the last ``"cat"`` in the buffer is decided (a category's text cannot
        hold another); a mark, once whole. Matches are read in file order."""
        buf, n, mark, cat_re = self.buf, self.n, self.sel.mark, self.sel.cat_re
        lim = n if final else n - len(mark) + 1  # a mark starting before lim is whole
        r = buf.rfind(_CAT, self.pos, n)
        cut = n if final else min(lim, r if r >= 0 else max(self.pos, n - len(_CAT) + 1))
        if mark:
            at = buf.find(mark, self.step_pos, n)
            while at != -1:
                self.steps.append(at)
                self.step_pos = at + len(mark)
                at = buf.find(mark, self.step_pos, n)
            self.step_pos = max(self.step_pos, n - len(mark) + 1)  # a mark may start after this
        steps, si = self.steps, 0
        cands = self.guards.cands  # offsets in file order, found by the guards
        while self.chunk < len(cands) and self.ok:
            todo = cands[self.chunk]
            while self.at < len(todo) and todo[self.at] < cut and self.ok:
                x = todo[self.at]
                self.at += 1
                g = cat_re.match(buf, x, n) if x >= self.pos else None
                if g is not None:
                    while si < len(steps) and steps[si] < x:
                        self._hit(steps[si], None)
                        si += 1
                    self._hit(x, g)
                    self.pos = g.end()
            if self.at < len(todo):
                break
            self.chunk, self.at = self.chunk + 1, 0
        while si < len(steps) and steps[si] < cut:
            self._hit(steps[si], None)
            si += 1
        self.steps = steps[si:]
        self.pos = max(self.pos, cut)

    def _hit(self, h: int, g: re.Match[bytes] | None) -> None:
        """A match at ``h`` to the event (``{``) that holds it: the profiler's own head
        (``{"ph": "X", "cat": ...``) is recognised in place; otherwise the last brace since the
        previous match (linear: each search goes back to the previous match only)."""
        if self.prev_h < 0 and not self._begin(h):
            return
        buf, head = self.buf, _HEAD
        if h - len(head) >= self.prev_h and buf.startswith(head, h - len(head)):
            s = h - len(head)
        else:
            s = buf.rfind(b"{", self.prev_h, h)
            if s < 0:
                s = self.prev_s  # no brace since the previous match: the same event
            if s < 0:
                self.ok = False
                return
        self.prev_h = h
        if s == self.prev_s:
            self.quick.pop(s, None)  # two matches in one event: decode it
            self.starts[s] = max(self.starts[s], h)
            return
        self.prev_s = s
        self.starts[s] = h
        q = _quick(buf, s, h, g, self.sel.quick) if g is not None else None
        if q is not None:
            self.quick[s] = q

    def _begin(self, first_hit: int) -> bool:
        """Matches are searched for from the end of the ``"traceEvents"`` key, which comes first."""
        key = self.guards.first.get(b'"traceEvents"')
        if key is None or first_hit < key:
            self.ok = False  # a match before traceEvents: the full parse decides
            return False
        self.prev_h = key + len(b'"traceEvents"')
        return True

    def result(self) -> Events | None:
        """The selective read's events, facts and counts; None when it does not apply."""
        if not self.ok:
            return None
        try:
            self._locate(final=True)
            if not self.ok or not self._whole():
                return None
            doc = self._doc_keys()
            return None if doc is None else self._events(doc)
        except Exception:  # any surprise: the full parse decides
            return None

    def _whole(self) -> bool:
        """A complete document: one object, braces balanced, one traceEvents array, UTF-8."""
        buf, n = self.buf, self.n
        if not self.guards.whole():
            return False
        first = 3 if buf.startswith(b"\xef\xbb\xbf") else 0
        while first < n and buf[first] in b" \t\r\n,":
            first += 1
        last = n - 1
        while last > first and buf[last] in b" \t\r\n":
            last -= 1
        if first >= n or buf[first] != ord("{") or buf[last] != ord("}"):
            return False
        key = self.guards.first.get(b'"traceEvents"')
        return key is not None and _TRACE_EVENTS_B_RE.match(buf, key, n) is not None

    def _doc_keys(self) -> dict[str, Any] | None:
        """The wanted top-level keys decoded alone (each key is there once)."""
        plain = json.JSONDecoder()
        doc: dict[str, Any] = {}
        for key in self.sel.doc_keys:
            at = self.guards.first.get(f'"{key}"'.encode())
            if at is None:
                continue
            at += len(key) + 2
            colon = _COLON_B_RE.match(self.buf, at, self.n)
            if colon is None or colon.end() == at:
                return None
            doc[key], _ = _decode_value(self.buf, self.n, colon.end(), plain)
        return doc

    def _events(self, doc: dict[str, Any]) -> Events | None:
        """The located events in file order: read ones as they are, the others decoded."""
        dec = json.JSONDecoder(object_hook=self.sel.hook)
        kept: list[tuple] = []
        bad: list[tuple[int, Bad]] = []
        line, counted_to = 1, 0  # line numbers of bad events, counted forward once
        for s in sorted(self.starts):
            q = self.quick.get(s)
            if q is not None:
                kept.append(q)
                continue
            obj, end = _decode_value(self.buf, self.n, s, dec)
            if end <= self.starts[s] or not (obj is None or isinstance(obj, tuple)):
                return None  # the match was not inside the event found: the layout is unusual
            if obj is None:
                continue
            if isinstance(obj, Bad):
                line += self.buf.count(b"\n", counted_to, s)
                counted_to = s
                bad.append((line, obj))
            else:
                kept.append(obj)
        return Events(doc, kept, bad, self.guards.counts[b'"ph"'], self._key_lines())

    def _key_lines(self) -> dict[str, int]:
        """Line of each of the selection's line_keys and inner_lines found."""
        first, buf = self.guards.first, self.buf
        pos = {k: first[f'"{k}"'.encode()] for k in self.sel.line_keys if f'"{k}"'.encode() in first}
        for key, after in self.sel.inner_lines:
            if after in pos:
                at = buf.find(f'"{key}"'.encode(), pos[after], self.n)
                if at >= 0:
                    pos[key] = at
        return {k: buf.count(b"\n", 0, i) + 1 for k, i in pos.items()}


# --- the full parse -----------------------------------------------------------------------------
_TRACE_EVENTS_RE = re.compile(r'"traceEvents"\s*:\s*\[')
_COLON_RE = re.compile(r"\s*:\s*")
_WS_RE = re.compile(r"[\s,]*")


def _line_at(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _decode_at(dec: json.JSONDecoder, text: str, pos: int) -> tuple[Any, int, str | None]:
    """``(value, end, None)`` or ``(None, pos, why)``: a broken or too deeply nested value."""
    try:
        obj, end = dec.raw_decode(text, pos)
    except json.JSONDecodeError as exc:
        return None, pos, rules.SkipReason(rules.JSON_REST_UNREAD, f"truncated or broken: {exc.msg}")
    except RecursionError:
        return None, pos, rules.SkipReason(rules.JSON_REST_UNREAD, rules.JSON_TOO_DEEP)
    except ValueError as exc:  # an integer with too many digits
        return None, pos, rules.SkipReason(rules.JSON_REST_UNREAD, str(exc))
    return obj, end, None


def _salvage_array(text: str, pos: int, dec: json.JSONDecoder, reader: Reader) -> tuple[list[Any], int, bool]:
    """The events of a ``[`` ... array up to its end or its first broken event (counted)."""
    out: list[Any] = []
    pos += 1
    while True:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text):
            reader.bad(rules.JSON_REST_UNREAD, line=_line_at(text, pos), field="traceEvents",
                       detail="truncated: the trace ends inside traceEvents")
            return out, pos, False
        if text[pos] == "]":
            return out, pos + 1, True
        obj, pos, why = _decode_at(dec, text, pos)
        if why is not None:
            reader.bad(why, line=_line_at(text, pos), field="traceEvents", example=text[pos : pos + 80])
            return out, pos, False
        out.append(obj)


def _salvage(text: str, reader: Reader, hook: Callable[[dict[str, Any]], Any]) -> Any:
    """Read a damaged trace object up to its first broken value (counted, with its line)."""
    dec = json.JSONDecoder(object_hook=hook)
    pos = _WS_RE.match(text, 0).end()  # type: ignore[union-attr]
    if pos >= len(text) or text[pos] not in "{[":
        reader.fail("not a Chrome trace: the file does not start with a JSON object or array", line=_line_at(text, pos))
    if text[pos] == "[":
        return _salvage_array(text, pos, dec, reader)[0]
    doc: dict[str, Any] = {}
    pos += 1
    while True:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text) or text[pos] == "}":
            if pos >= len(text):
                reader.bad(rules.JSON_REST_UNREAD, line=_line_at(text, pos),
                           detail="truncated: the trace object is not closed")
            return doc
        key, end, why = _decode_at(dec, text, pos)
        colon = _COLON_RE.match(text, end) if why is None else None
        if why is None and (not isinstance(key, str) or colon is None or ":" not in colon.group()):
            why = rules.SkipReason(rules.JSON_REST_UNREAD, "expected a key and ':'")
        if why is not None:
            reader.bad(why, line=_line_at(text, pos), example=text[pos : pos + 80])
            return doc
        pos = colon.end()  # type: ignore[union-attr]
        if key == "traceEvents" and text[pos : pos + 1] == "[":
            doc[key], pos, ok = _salvage_array(text, pos, dec, reader)
            if not ok:
                return doc
            continue
        doc[key], pos, why = _decode_at(dec, text, pos)
        if why is not None:
            reader.bad(why, line=_line_at(text, pos), field=str(key)[:80], example=text[pos : pos + 80])
            return doc


def _event_lines(text: str, wanted: list[int]) -> dict[int, int]:
    """Line numbers of the events at the given traceEvents indices (error path only)."""
    out: dict[int, int] = {}
    m = _TRACE_EVENTS_RE.search(text) if wanted else None
    if not m:
        return out
    dec = json.JSONDecoder()
    pos, i, last = m.end(), 0, max(wanted)
    want = set(wanted)
    line, counted_to = 1, 0
    while i <= last:
        pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= len(text) or text[pos] == "]":
            break
        if i in want:
            line += text.count("\n", counted_to, pos)
            counted_to = pos
            out[i] = line
        _, pos, why = _decode_at(dec, text, pos)
        if why is not None:
            break
        i += 1
    return out


def _parse_all(reader: Reader, raw: bytes, selection: Selection) -> tuple[dict[str, Any], list[tuple], int]:
    """The full parse: every event decoded (through the hook), damage salvaged or raised."""
    try:
        doc = json.loads(raw, object_hook=selection.hook)
    except (ValueError, RecursionError) as exc:  # JSON or UTF-8 damage, or nesting too deep
        text = raw.decode("utf-8", errors="replace")
        if reader.strict:
            line = exc.lineno if isinstance(exc, json.JSONDecodeError) else None
            why = rules.JSON_TOO_DEEP if isinstance(exc, RecursionError) else f"invalid or truncated JSON ({exc})"
            reader.fail(why, line=line, field="traceEvents")
        doc = _salvage(text, reader, selection.hook)
        del text
    if isinstance(doc, list):
        doc = {"traceEvents": doc}
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        reader.fail("not a Chrome trace: no traceEvents list", field="traceEvents")
    events = doc.pop("traceEvents")
    bad = [(i, e) for i, e in enumerate(events) if isinstance(e, Bad)]
    if bad:
        need = [i for i, _ in bad[:5]] if not reader.strict else [bad[0][0]]
        lines = _event_lines(raw.decode("utf-8", errors="replace"), need)
        for i, e in bad:
            reader.bad(e.why, line=lines.get(i), field=f"traceEvents[{i}].{e.field}")
    kept = [e for e in events if isinstance(e, tuple) and not isinstance(e, Bad)]
    return doc, kept, len(events)


def _key_lines(raw: bytes | bytearray, selection: Selection) -> dict[str, int]:
    """Line of the first of each of the selection's line_keys and inner_lines (anywhere in the file)."""
    pos = {}
    for key in selection.line_keys:
        i = raw.find(f'"{key}"'.encode())
        if i >= 0:
            pos[key] = i
    for key, after in selection.inner_lines:
        start = raw.find(f'"{after}"'.encode())
        i = raw.find(f'"{key}"'.encode(), start) if start >= 0 else -1
        if i >= 0:
            pos[key] = i
    return {k: raw.count(b"\n", 0, i) + 1 for k, i in pos.items()}


# --- reading a file -----------------------------------------------------------------------------
_END = object()  # the end of the inflated chunks


def _inflated_ahead(reader: Reader) -> Iterator[bytes]:
    """The file's bytes in chunks, inflated (within the reading limits) by a thread one chunk
    ahead of the caller: zlib releases the GIL while it inflates, so the selective read of one
    chunk overlaps the inflation of the next. A LoadError of the reading is raised here."""
    q: queue.Queue[Any] = queue.Queue(maxsize=2)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                q.put(item, timeout=0.05)
                return True
            except queue.Full:
                continue
        return False

    def run() -> None:
        try:
            for chunk in iter_chunks(reader.path, reader.limits):
                if not put(chunk):
                    return
            put(_END)
        except BaseException as exc:  # handed to the caller, raised there
            put(exc)

    worker = threading.Thread(target=run, name="mfu-trace-inflate", daemon=True)
    worker.start()
    try:
        while (item := q.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item
    finally:
        stop.set()
        worker.join()


def _scanned(reader: Reader, selection: Selection, selective: bool) -> _Scan:
    """The file inflated into one buffer, read selectively as it arrives (when ``selective``)."""
    size = inflated_size(reader.path, reader.limits)
    trusted = 0 < size < reader.limits.inflate_limit(reader.path.stat().st_size)  # else a trailer's claim
    guards = _Guards(selection)
    sc = _Scan(guards, selection, size if trusted else 0, scan=selective)
    for chunk in _inflated_ahead(reader):
        if selective:
            guards.feed(chunk)
        sc.feed(chunk)
    return sc
