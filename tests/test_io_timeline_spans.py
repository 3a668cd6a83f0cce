"""The interval helpers the MLPerf format moved into io (``timeline.Holes``, ``timeline.Points``) and the
text-head rule of sniffing (``rules.looks_like_text``), each checked by hand."""

from __future__ import annotations

import gzip

from mfu_toolkit.io import rules, timeline


def test_holes_cut_spans_out_of_an_interval():
    holes = timeline.Holes([(5.0, 6.0), (1.0, 2.0), (1.5, 3.0)])  # unsorted, two overlapping
    assert holes.spans == [(1.0, 2.0), (1.5, 3.0), (5.0, 6.0)]
    assert holes.subtract(0.0, 10.0) == [(0.0, 1.0), (3.0, 5.0), (6.0, 10.0)]
    assert holes.subtract(2.5, 5.5) == [(3.0, 5.0)]
    assert holes.subtract(1.2, 2.8) == []  # covered whole
    assert holes.subtract(3.0, 5.0) == [(3.0, 5.0)]  # touching spans cut nothing
    assert timeline.Holes([]).subtract(1.0, 2.0) == [(1.0, 2.0)] and not timeline.Holes([]).spans


def test_points_are_taken_once_earliest_first():
    points = timeline.Points([3.0, 1.0, 2.0, 1.0])
    assert points.first_in(0.5, 1.5) == 1  # two at t=1.0: the lower index first
    points.take(1)
    assert points.first_in(0.5, 1.5) == 3
    points.take(3)
    assert points.first_in(0.5, 1.5) is None  # none left inside
    assert points.first_in(0.5, 2.5) == 2 and points.first_in(3.5, 9.0) is None
    points.take(2)
    points.take(0)
    assert points.first_in(-1.0, 9.0) is None


def test_a_text_head_is_text():
    log = b"[2024-01-01 00:00:00,000] [INFO] step=1, skipped=0\n" * 20
    assert rules.looks_like_text(log) and rules.looks_like_text("héllo wörld\n".encode() * 50)
    assert not rules.looks_like_text(gzip.compress(log))  # compressed again inside the stream
    assert not rules.looks_like_text(b"PK\x03\x04" + log)
    assert not rules.looks_like_text(log[:900] + b"\x00" * 20)  # over 1 % NUL bytes
    assert not rules.looks_like_text(log[:900] + b"\xff" * 60)  # over 5 % not UTF-8
