"""The protobuf wire reader and TFRecord framing of ``mfu_toolkit.io.protobuf``.

Every input is a hand-encoded byte string; every expected decoding is worked out here from the
encoding guide (https://protobuf.dev/programming-guides/encoding/) or from the published CRC-32C
check values (the CRC catalogue's "123456789", RFC 3720 appendix B.4), never from the reader itself.
"""

from __future__ import annotations

import pytest

from mfu_toolkit.io import protobuf as pb
from mfu_toolkit.io.formats import tensorboard
from mfu_toolkit.io.protobuf import ProtoError


# --- varints -----------------------------------------------------------------------------------------
def test_varint_150_is_two_bytes_low_group_first():
    # 150 = 0b1_0010110: low 7 bits 0010110 with the continuation bit (0x96), then 0000001 (0x01)
    assert pb.varint(b"\x96\x01", 0) == (150, 2)
    assert pb.varint(b"\x00\x01", 0) == (0, 1) and pb.varint(b"\x00\x01", 1) == (1, 2)
    assert pb.varint(b"\x7f", 0) == (127, 1) and pb.varint(b"\x80\x01", 0) == (128, 2)


def test_the_largest_varints():
    # 2**64 - 1: nine bytes of seven 1-bits with continuation (0xff), then the last bit (0x01)
    assert pb.varint(b"\xff" * 9 + b"\x01", 0) == (2**64 - 1, 10)
    # a tenth byte carries seven bits at shift 63: all kept, so it is told apart from any int64
    assert pb.varint(b"\xff" * 9 + b"\x7f", 0) == (2**70 - 1, 10)
    with pytest.raises(ProtoError, match="varint too long"):
        pb.varint(b"\xff" * 10 + b"\x01", 0)
    with pytest.raises(ProtoError, match="varint runs past the end"):
        pb.varint(b"\x96", 0)


def test_signed_and_zigzag():
    # int32 -2 is written as the 64-bit two's complement: 2**64 - 2, ten bytes (fe ff .. ff 01)
    v, _ = pb.varint(b"\xfe" + b"\xff" * 8 + b"\x01", 0)
    assert v == 2**64 - 2 and pb.signed(v) == -2
    assert pb.signed(150) == 150 and pb.signed(2**63 - 1) == 2**63 - 1 and pb.signed(2**63) == -(2**63)
    # sint32/sint64 (the guide's table): 0 -> 0, -1 -> 1, 1 -> 2, -2 -> 3, 2**31 - 1 -> 0xfffffffe, -2**31 -> 0xffffffff
    assert [pb.zigzag(n) for n in (0, 1, 2, 3)] == [0, -1, 1, -2]
    assert pb.zigzag(0xFFFFFFFE) == 0x7FFFFFFF and pb.zigzag(0xFFFFFFFF) == -0x80000000


# --- fields ------------------------------------------------------------------------------------------
def test_the_guides_three_small_messages():
    # Test1 {int32 a = 1}, a = 150: key (1 << 3) | 0 = 0x08, then the varint
    assert pb.fields(b"\x08\x96\x01") == [(1, 0, 150)]
    # Test2 {string b = 2}, b = "testing": key (2 << 3) | 2 = 0x12, length 7, the bytes
    msg = b"\x12\x07\x74\x65\x73\x74\x69\x6e\x67"
    assert pb.fields(msg) == [(2, 2, b"testing")] and pb.string(b"testing") == "testing"
    # Test3 {Test1 c = 3}: key 0x1a, length 3, Test1's bytes; read again as a submessage
    [(num, wt, sub)] = pb.fields(b"\x1a\x03\x08\x96\x01")
    assert (num, wt, sub) == (3, 2, b"\x08\x96\x01") and pb.fields(sub, depth=1) == [(1, 0, 150)]


def test_fixed_width_fields():
    # double 1.5 = 0x3FF8000000000000, little-endian; key (1 << 3) | 1 = 0x09
    one_and_half = b"\x00\x00\x00\x00\x00\x00\xf8\x3f"
    assert pb.fields(b"\x09" + one_and_half) == [(1, 1, one_and_half)] and pb.fixed(one_and_half, "d") == 1.5
    # float 1.0 = 0x3F800000; key (2 << 3) | 5 = 0x15
    one = b"\x00\x00\x80\x3f"
    assert pb.fields(b"\x15" + one) == [(2, 5, one)] and pb.fixed(one, "f") == 1.0
    assert pb.fixed(b"\xff\xff\xff\xff", "i") == -1 and pb.fixed(b"\xff\xff\xff\xff", "I") == 2**32 - 1
    assert pb.fixed(b"\xfe" + b"\xff" * 7, "q") == -2
    with pytest.raises(ProtoError):
        pb.fixed(one, "d")


def test_packed_repeated_values():
    # the guide's packed example: repeated int32 f = 6 [3, 270, 86942] -> 32 06 03 8e 02 9e a7 05
    # (270 = 0b10_0001110 -> 8e 02; 86942 = 0b101_0100111_0011110 -> 9e a7 05)
    [(num, wt, body)] = pb.fields(bytes.fromhex("3206038e029ea705"))
    assert (num, wt) == (6, 2) and pb.packed_varints(body) == [3, 270, 86942]
    # packed floats 1.0 and 1.5 (4 bytes each, little-endian)
    assert pb.packed(b"\x00\x00\x80\x3f\x00\x00\xc0\x3f", "f") == [1.0, 1.5]
    assert pb.packed(b"", "d") == [] and pb.packed_varints(b"") == []
    with pytest.raises(ProtoError, match="packed f values of 3 bytes"):
        pb.packed(b"\x00\x00\x80", "f")
    with pytest.raises(ProtoError, match="varint runs past the end"):
        pb.packed_varints(b"\x03\x8e")


def test_fields_in_order_repeated_and_unknown_alike():
    # field 1 twice, then field 15 (key 0x78, the largest number whose key fits one byte), then
    # field 16 (key (16 << 3) | 0 = 128: two bytes, 80 01)
    msg = b"\x08\x01\x08\x02\x78\x05\x80\x01\x07"
    assert pb.fields(msg) == [(1, 0, 1), (1, 0, 2), (15, 0, 5), (16, 0, 7)]
    assert pb.fields(b"") == []
    # a window of a larger buffer, read in place: the second field alone
    assert pb.fields(msg, 2, 4) == [(1, 0, 2)]
    # a field may not run past the window's end into the bytes after it
    with pytest.raises(ProtoError, match="varint runs past the end"):
        pb.fields(b"\x08\x96\x01", 0, 2)
    with pytest.raises(ProtoError, match="length-delimited field runs past the end"):
        pb.fields(b"\x12\x02ab", 0, 3)


@pytest.mark.parametrize(("data", "why"), [
    (b"\x00\x01", "field number 0"),
    (b"\x0b", "unsupported wire type 3"),  # start group
    (b"\x0c", "unsupported wire type 4"),  # end group
    (b"\x0e", "unsupported wire type 6"),
    (b"\x12\x07test", "length-delimited field runs past the end"),
    (b"\x09\x00\x00\x00", "fixed64 runs past the end"),
    (b"\x0d\x00\x00", "fixed32 runs past the end"),
    (b"\x08", "varint runs past the end"),
    (b"\x08\x96", "varint runs past the end"),
])
def test_malformed_messages_are_proto_errors(data, why):
    with pytest.raises(ProtoError, match=why):
        pb.fields(data)
    assert issubclass(ProtoError, ValueError)


def test_nesting_and_size_are_bounded():
    assert pb.fields(b"\x08\x01", depth=pb.MAX_DEPTH) == [(1, 0, 1)]
    with pytest.raises(ProtoError, match="nested deeper"):
        pb.fields(b"\x08\x01", depth=pb.MAX_DEPTH + 1)
    assert pb.MAX_MESSAGE_BYTES == 2**31 - 1  # the encoding's 2 GiB limit on one message


def test_string_replaces_bytes_that_are_not_utf8():
    assert pb.string("é".encode()) == "é" and pb.string(b"a\xffb") == "a\ufffdb"


# --- walking by offsets ----------------------------------------------------------------------------------------
def test_text_map_entries_and_first_varint_read_spans():
    # a map<int64, message> field 4: entries {key 1: 7, value 2: {1: 150}} and {key 1: -1 (ten bytes), value absent}
    entry1 = b"\x08\x07" + b"\x12\x03" + b"\x08\x96\x01"
    entry2 = b"\x08" + b"\xff" * 9 + b"\x01"
    msg = b"\x22" + bytes([len(entry1)]) + entry1 + b"\x22" + bytes([len(entry2)]) + entry2 + b"\x2a\x02h\xff"
    spans = list(pb.spans(msg))
    got = pb.map_entries(msg, [(a, z) for num, _, a, z in spans if num == 4], depth=1)
    assert [k for k, _ in got] == [7, -1] and msg[slice(*got[0][1])] == b"\x08\x96\x01"
    assert got[1][1][0] == got[1][1][1]  # no value: an empty span
    a, z = got[0][1]
    assert pb.first_varint(msg, a, z, 1) == 150 and pb.first_varint(msg, a, z, 2) is None
    assert pb.text(msg, spans[-1][2], spans[-1][3]) == "h\ufffd"


def test_collect_checks_the_wire_types_a_schema_gives():
    msg = b"\x08\x96\x01" + b"\x12\x02hi" + b"\x12\x00" + b"\x18\x05" + b"\x25" + b"\x00" * 4
    assert pb.collect(msg, 0, len(msg), {1: 0, 2: 2}) == {1: [150], 2: [(5, 7), (9, 9)]}  # 3 and 4 passed over
    with pytest.raises(ProtoError, match="XThing field 3 with wire type 0"):
        pb.collect(msg, 0, len(msg), {3: 2}, what="XThing")
    kept: dict = {}
    with pytest.raises(ProtoError, match="runs past the end"):
        pb.collect(msg + b"\x12\x05ab", 0, len(msg) + 4, {2: 2}, into=kept)
    assert kept == {2: [(5, 7), (9, 9)]}  # the fields before the damage


# --- CRC-32C and TFRecord framing ---------------------------------------------------------------------
def test_crc32c_check_values():
    assert pb.crc32c(b"123456789") == 0xE3069283  # the CRC catalogue's check value for CRC-32C
    # RFC 3720 (iSCSI) appendix B.4: 32 bytes of 0x00, of 0xff, ascending 0..31, descending 31..0
    assert pb.crc32c(bytes(32)) == 0x8A9136AA
    assert pb.crc32c(b"\xff" * 32) == 0x62A8AB43
    assert pb.crc32c(bytes(range(32))) == 0x46DD794E
    assert pb.crc32c(bytes(range(31, -1, -1))) == 0x113FDB5C
    assert pb.crc32c(b"") == 0


def test_masked_crc_rotates_and_adds_the_constant():
    # rotate 0xE3069283 right by 15: 0xE3069283 >> 15 = 0x1C60D, (0xE3069283 << 17) mod 2**32 = 0x25060000,
    # together 0x2507C60D; plus 0xA282EAD8 = 0xC78AB0E5 (no carry past 32 bits)
    assert pb.masked_crc(b"123456789") == 0xC78AB0E5


def _frame(payload: bytes) -> bytes:
    """A TFRecord frame by hand: uint64 length, masked CRC of it, payload, masked CRC of the payload."""
    head = len(payload).to_bytes(8, "little")
    return head + pb.masked_crc(head).to_bytes(4, "little") + payload + pb.masked_crc(payload).to_bytes(4, "little")


def test_tfrecord_frames_in_order():
    data = _frame(b"abc") + _frame(b"") + _frame(b"\x08\x96\x01")
    assert len(data) == 3 * 16 + 6
    assert list(pb.tfrecords(data)) == [(1, b"abc", None, None), (2, b"", None, None), (3, b"\x08\x96\x01", None, None)]
    assert list(pb.tfrecords(b"")) == []
    assert pb.is_tfrecord(data) and not pb.is_tfrecord(data[:11]) and not pb.is_tfrecord(b"\x04" + data[1:])


def test_damaged_frames_say_what_and_where():
    good, bad = _frame(b"abc"), bytearray(_frame(b"xyz"))
    bad[13] ^= 0xFF  # a payload byte: its checksum fails, the next frame is still read
    frames = list(pb.tfrecords(bytes(bad) + good))
    assert frames == [(1, None, pb.CHECKSUM_MISMATCH, "data"), (2, b"abc", None, None)]
    assert list(pb.tfrecords(bytes(bad), verify_crc=False)) == [(1, b"x\x86z", None, None)]
    assert list(pb.tfrecords(good + good[:11])) == [(1, b"abc", None, None), (2, None, pb.TRUNCATED_HEADER, "length")]
    assert list(pb.tfrecords(good + good[:17]))[-1] == (2, None, pb.TRUNCATED_RECORD, "data")
    header = bytearray(good)
    header[8] ^= 0x01  # the length's checksum: nothing after it can be found
    assert list(pb.tfrecords(bytes(header) + good)) == [(1, None, pb.CORRUPT_HEADER, "length")]


def test_tensorboard_still_exposes_its_old_names():
    assert tensorboard.crc32c is pb.crc32c and tensorboard.masked_crc is pb.masked_crc
    assert tensorboard.proto_fields is pb.fields and tensorboard.ProtoError is ProtoError
