"""Protobuf wire format and TFRecord framing, read without generated code or a protobuf library.

A protobuf message (https://protobuf.dev/programming-guides/encoding/) is a run of fields, each a key
varint (``field number << 3 | wire type``) and its value: wire type 0 a varint, 1 eight little-endian
bytes (``fixed64``, ``sfixed64``, ``double``), 2 a length varint and that many bytes (a string, bytes,
a submessage or packed repeated numbers), 5 four bytes (``fixed32``, ``sfixed32``, ``float``). The
deprecated groups (3, 4) and the unused types 6 and 7 are refused. The reader knows no schema: a
format says what its field numbers mean and decodes a submessage by reading its bytes again.

- :func:`fields`: ``(number, wire type, value)`` per field of a message, ``value`` an int
  for a varint and bytes otherwise. A varint keeps every bit it carries (up to 70 in ten bytes), so
  a value past 64 bits stays distinguishable from any int64.
- :func:`spans`: the same walk as :func:`fields`, lazily and without copies: each value as its
  offsets in the buffer (a varint: its value), for messages too long to copy field by field.
- :func:`signed` (a varint as ``int64``/``int32``, two's complement), :func:`zigzag` (``sint32``,
  ``sint64``), :func:`fixed` (one fixed-width number), :func:`packed` and :func:`packed_varints`
  (packed repeated numbers), :func:`string` (UTF-8, damage replaced).
- Walking by offsets (with :func:`spans`): :func:`text` (a string field's text at ``b[a:z]``),
  :func:`map_entries` (the key and value span of each entry of a ``map<int64, message>`` field),
  :func:`first_varint` (a field's varint when it is the message's first field, the rest unread),
  :func:`collect` (the fields a schema names, by number, their wire types checked).
- Bounds: a message over :data:`MAX_MESSAGE_BYTES` (the encoding's own 2 GiB limit) or nested
  deeper than :data:`MAX_DEPTH` (the ``depth`` a format passes when it descends into a submessage)
  is a :class:`ProtoError`, as is any field that runs past the end of its message. Nothing is
  decoded that the caller did not ask for, so the work is linear in the bytes read.
- :func:`crc32c` / :func:`masked_crc` and :func:`tfrecords`: TFRecord framing (a ``uint64`` length,
  the masked CRC-32C of those 8 bytes, the payload, the masked CRC-32C of the payload), the
  container TensorBoard event files use. Damage is reported per frame, with the skip reasons here.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any, NamedTuple

__all__ = [
    "MAX_DEPTH",
    "MAX_MESSAGE_BYTES",
    "ProtoError",
    "Frame",
    "fields",
    "spans",
    "varint",
    "signed",
    "zigzag",
    "fixed",
    "packed",
    "packed_varints",
    "string",
    "text",
    "map_entries",
    "first_varint",
    "collect",
    "crc32c",
    "masked_crc",
    "is_tfrecord",
    "tfrecords",
    "TRUNCATED_HEADER",
    "CORRUPT_HEADER",
    "TRUNCATED_RECORD",
    "CHECKSUM_MISMATCH",
]

MAX_MESSAGE_BYTES = (1 << 31) - 1  # the encoding's limit on one serialized message
MAX_DEPTH = 100  # submessages nested deeper than this are refused (the common parsers' default)
_SIZES = {1: 8, 5: 4}  # fixed-width wire types: bytes of their value


class ProtoError(ValueError):
    """Bytes that are not a well-formed protobuf message."""


def varint(b: bytes, i: int, end: int | None = None) -> tuple[int, int]:
    """The varint at ``b[i]`` (ending before ``end``, default the end of ``b``) and the index after it:
    7 bits a byte, low group first (150 = ``96 01``)."""
    result = 0
    shift = 0
    n = len(b) if end is None else end
    while True:
        if i >= n:
            raise ProtoError("varint runs past the end")
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7
        if shift > 63:
            raise ProtoError("varint too long")


def fields(b: bytes, start: int = 0, end: int | None = None, *, depth: int = 0) -> list[tuple[int, int, Any]]:
    """``(field number, wire type, value)`` for each field of the message in ``b[start:end]``, in order.

    ``depth``: how deep this message sits below the one the format started from; a caller that
    descends into a submessage passes its own depth + 1, and past :data:`MAX_DEPTH` it is refused.
    """
    return [(num, wt, a if wt == 0 else b[a:z]) for num, wt, a, z in spans(b, start, end, depth=depth)]


def spans(b: bytes | bytearray | memoryview, start: int = 0, end: int | None = None, *,
          depth: int = 0) -> Iterator[tuple[int, int, int, int]]:
    """``(field number, wire type, a, z)`` for each field of the message in ``b[start:end]``, in order,
    without copying any value: a varint's value and the index after it (``a``, ``z``); any other field's
    value as the slice ``b[a:z]`` (a submessage is read by calling ``spans(b, a, z, depth=depth + 1)``).

    The same checks as :func:`fields` (size, ``depth``, fields running past the end, wire types), raised
    as :class:`ProtoError` when reached: the fields before a damaged one are yielded first, so a reader
    can keep what precedes damage. Memory stays constant whatever the message's length.
    """
    n = len(b) if end is None else min(end, len(b))
    if n - start > MAX_MESSAGE_BYTES:
        raise ProtoError(f"message of {n - start:,} bytes, over the {MAX_MESSAGE_BYTES:,} bytes protobuf allows")
    if depth > MAX_DEPTH:
        raise ProtoError(f"messages nested deeper than {MAX_DEPTH}")
    i = start
    while i < n:
        key = b[i]
        if key < 0x80:
            i += 1
        else:
            key, i = varint(b, i, n)
        num, wt = key >> 3, key & 7
        if num == 0:
            raise ProtoError("field number 0")
        if wt == 0:
            if i < n and b[i] < 0x80:  # one-byte values (most ids and small numbers): no call
                v, j = b[i], i + 1
            else:
                v, j = varint(b, i, n)
            yield num, 0, v, j
            i = j
            continue
        if wt == 2:
            if i < n and b[i] < 0x80:
                ln, i = b[i], i + 1
            else:
                ln, i = varint(b, i, n)
            if i + ln > n:
                raise ProtoError("length-delimited field runs past the end")
            j = i + ln
        elif wt in _SIZES:
            j = i + _SIZES[wt]
            if j > n:
                raise ProtoError(f"fixed{_SIZES[wt] * 8} runs past the end")
        else:
            raise ProtoError(f"unsupported wire type {wt}")
        yield num, wt, i, j
        i = j


def signed(v: int) -> int:
    """A varint read as ``int64``/``int32`` (two's complement: ``2**64 - 1`` is -1); wider values stay out of range."""
    return v - (1 << 64) if v >= 1 << 63 else v


def zigzag(v: int) -> int:
    """A ``sint32``/``sint64`` varint: 0, 1, 2, 3 stand for 0, -1, 1, -2."""
    return (v >> 1) ^ -(v & 1)


def fixed(v: bytes, fmt: str) -> Any:
    """One little-endian fixed-width value: ``fmt`` ``"f"``/``"i"``/``"I"`` (4 bytes) or ``"d"``/``"q"``/``"Q"`` (8)."""
    if len(v) != struct.calcsize(fmt):
        raise ProtoError(f"{fmt} value of {len(v)} bytes")
    return struct.unpack("<" + fmt, v)[0]


def packed(v: bytes, fmt: str) -> list[Any]:
    """The values of a packed repeated fixed-width field (``fmt`` as in :func:`fixed`)."""
    size = struct.calcsize(fmt)
    if len(v) % size:
        raise ProtoError(f"packed {fmt} values of {len(v)} bytes")
    return list(struct.unpack(f"<{len(v) // size}{fmt}", v))


def packed_varints(v: bytes) -> list[int]:
    """The values of a packed repeated varint field, unsigned (see :func:`signed`, :func:`zigzag`)."""
    out, j = [], 0
    while j < len(v):
        x, j = varint(v, j)
        out.append(x)
    return out


def string(v: bytes) -> str:
    """A ``string`` field's text (bytes that are not UTF-8 replaced)."""
    return v.decode("utf-8", errors="replace")


# --- walking by offsets: helpers for formats that read with spans() ------------------------------------
def text(b: bytes | bytearray | memoryview, a: int, z: int) -> str:
    """The text of the string field at ``b[a:z]`` (a span of :func:`spans`; bytes that are not UTF-8 replaced)."""
    return bytes(b[a:z]).decode("utf-8", errors="replace")


def map_entries(b: bytes | bytearray | memoryview, entries: list[tuple[int, int]], *,
                depth: int = 0) -> list[tuple[int, tuple[int, int]]]:
    """``(key, (a, z))`` per entry of a ``map<int64, message>`` field: each entry (its span in ``b``, one of
    ``entries``) is a message {key 1, value 2} (the encoding guide, "Maps"); the key read as ``int64``, the
    value as its span (empty at the entry's start when absent). ``depth``: that of the entries."""
    out = []
    for a, z in entries:
        key, val = 0, (a, a)
        for num, wt, x, y in spans(b, a, z, depth=depth):
            if num == 1 and wt == 0:
                key = signed(x)
            elif num == 2 and wt == 2:
                val = (x, y)
        out.append((key, val))
    return out


def first_varint(b: bytes | bytearray | memoryview, a: int, z: int, number: int) -> int | None:
    """The varint of field ``number`` (at most 15: a one-byte key) when it is the first field of the message at
    ``b[a:z]``, read as ``int64``; else None. The rest of the message is not read: a quick look at an id that
    serializers write first."""
    if a < z and b[a] == (number << 3):
        v, _ = varint(b, a + 1, z)
        return signed(v)
    return None


def collect(b: bytes | bytearray | memoryview, start: int, end: int, kinds: dict[int, int], *, depth: int = 0,
            what: str = "message", into: dict[int, list[Any]] | None = None) -> dict[int, list[Any]]:
    """The fields of the message at ``b[start:end]`` that ``kinds`` names, by number, each in order: a varint's
    value (unsigned), any other field's span ``(a, z)`` in ``b``. ``kinds[number]`` is the wire type the schema
    gives the field: a named field of another wire type is a :class:`ProtoError` (``"<what> field N with wire
    type W"``), fields not named are passed over. ``into``: a dict filled as the walk goes, so that a caller
    catching the error keeps the fields before the damage."""
    out: dict[int, list[Any]] = {} if into is None else into
    for num, wt, x, y in spans(b, start, end, depth=depth):
        want = kinds.get(num)
        if want is None:
            continue
        if wt != want:
            raise ProtoError(f"{what} field {num} with wire type {wt}")
        out.setdefault(num, []).append(x if wt == 0 else (x, y))
    return out


# --- CRC-32C (Castagnoli, reflected polynomial 0x82F63B78) and TFRecord framing -------------------
_CRC_TABLE: list[int] = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    """CRC-32C of ``data`` (pure Python, a byte at a time; fine for the sizes of event files)."""
    crc = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked_crc(data: bytes) -> int:
    """TFRecord's masked CRC: the CRC-32C rotated right by 15 bits plus ``0xA282EAD8`` (mod 2**32)."""
    crc = crc32c(data)
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


TRUNCATED_HEADER = "truncated record header (half-written end of file)"
CORRUPT_HEADER = "corrupt record header (length checksum mismatch); rest of file unreadable"
TRUNCATED_RECORD = "truncated record (half-written end of file)"
CHECKSUM_MISMATCH = "record checksum mismatch"


class Frame(NamedTuple):
    """One TFRecord frame: its number (from 1), its payload, or why it cannot be read and which part."""

    number: int
    payload: bytes | None
    problem: str | None = None
    field: str | None = None  # "length" (the header) or "data" (the payload)


def is_tfrecord(head: bytes) -> bool:
    """Whether ``head`` starts with a TFRecord frame header whose length checksum holds."""
    return len(head) >= 12 and masked_crc(head[:8]) == struct.unpack("<I", head[8:12])[0]


def tfrecords(data: bytes, *, verify_crc: bool = True) -> Iterator[Frame]:
    """The frames of ``data`` in order. A payload whose checksum fails is a frame with ``problem``
    :data:`CHECKSUM_MISMATCH` (none when ``verify_crc`` is false) and reading goes on; a truncated or
    corrupt header or a truncated payload is a last frame with its ``problem``, as nothing after it
    can be found."""
    pos, n, number = 0, len(data), 0
    while pos < n:
        number += 1
        if n - pos < 12:
            yield Frame(number, None, TRUNCATED_HEADER, "length")
            return
        head = data[pos : pos + 8]
        (length,) = struct.unpack("<Q", head)
        (len_crc,) = struct.unpack("<I", data[pos + 8 : pos + 12])
        if masked_crc(head) != len_crc:
            yield Frame(number, None, CORRUPT_HEADER, "length")
            return
        if length > n - pos - 16:
            yield Frame(number, None, TRUNCATED_RECORD, "data")
            return
        payload = data[pos + 12 : pos + 12 + length]
        (data_crc,) = struct.unpack("<I", data[pos + 12 + length : pos + 16 + length])
        pos += 16 + length
        if verify_crc and masked_crc(payload) != data_crc:
            yield Frame(number, None, CHECKSUM_MISMATCH, "data")
        else:
            yield Frame(number, payload)
