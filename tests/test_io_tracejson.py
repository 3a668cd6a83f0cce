"""The Chrome-trace JSON reader (mfu_toolkit.io.tracejson) on small hand-written traces.

Each trace below is written out line by line, so the expected events, counts and lines can be read
off the text: the selection keeps the complete (``"X"``) events of category ``kernel`` (any case) and
those whose name holds ``Step#``, as ``(name, ts, dur)``; a negative duration is a Bad event.
"""

from __future__ import annotations

import gzip

import pytest

from mfu_toolkit.io import rules, tracejson
from mfu_toolkit.io.reading import Limits, Reader
from mfu_toolkit.run import LoadError, LoadReport

_TRACE = """{"meta": {"host": "a"},
"traceEvents": [
{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10, "dur": 5},
{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 0, "tid": 1, "ts": 11, "dur": 2},
{"ph": "X", "cat": "user_annotation", "name": "Step#1", "ts": 0, "dur": 100},
{"ph": "i", "cat": "Kernel", "name": "marker", "ts": 3},
{"ph": "X", "cat": "KERNEL", "name": "copy", "ts": 40, "dur": -1}
]}
"""
_KEPT = [("gemm", 10.0, 5.0), ("Step#1", 0.0, 100.0)]  # lines 3 and 5; line 7 is the bad one


def _hook(d: dict) -> object:
    if "ph" not in d:
        return d  # not an event (the meta object)
    name = d.get("name", "")
    if d["ph"] != "X" or (d.get("cat", "").lower() != "kernel" and "Step#" not in name):
        return None
    if d["dur"] < 0:
        return tracejson.Bad("dur", "negative duration")
    return (name, float(d["ts"]), float(d["dur"]))


def _quick(cat: bytes, name: bytes, ts: float, dur: float) -> tuple:
    return (name.decode(), ts, dur)


SEL = tracejson.Selection(hook=_hook, categories=("kernel",), mark=b"Step#", quick=_quick,
                          doc_keys=("meta",), line_keys=("meta",))


def _read(path, *, strict=False, selective=True):
    reader = Reader(path, "test", strict=strict, report=LoadReport(), limits=Limits())
    return tracejson.read_events(reader, SEL, selective=selective), reader.report


def test_events_are_picked_by_category_and_name_in_file_order():
    ev = tracejson.scan_bytes(_TRACE.encode(), SEL, chunk=7)
    assert ev is not None  # a whole, well-formed document: read selectively
    assert ev.kept == _KEPT
    assert ev.bad == [(7, tracejson.Bad("dur", "negative duration"))]
    assert ev.doc == {"meta": {"host": "a"}}
    assert ev.n_events == 5 and ev.lines == {"meta": 1}


@pytest.mark.parametrize("selective", [True, False])
def test_both_reads_give_the_same_events_and_count_the_bad_one_with_its_line(tmp_path, selective):
    path = tmp_path / "t.json"
    path.write_text(_TRACE)
    ev, report = _read(path, selective=selective)
    assert ev.kept == _KEPT and ev.doc == {"meta": {"host": "a"}} and ev.n_events == 5
    assert ev.lines == {"meta": 1}
    assert report.skipped == {"negative duration": 1} and report.first_lines == {"negative duration": [7]}


def test_a_gzip_trace_reads_as_the_plain_one(tmp_path):
    path = tmp_path / "t.json.gz"
    path.write_bytes(gzip.compress(_TRACE.encode()))
    ev, report = _read(path)
    assert ev.kept == _KEPT and report.skipped == {"negative duration": 1}


def test_a_truncated_trace_is_read_up_to_its_last_whole_event(tmp_path):
    cut = _TRACE[: _TRACE.index('{"ph": "X", "cat": "cpu_op"') + 20]  # line 4 ends inside "cat"
    path = tmp_path / "t.json"
    path.write_text(cut)
    assert tracejson.scan_bytes(cut.encode(), SEL) is None  # not whole: the full parse reads it
    ev, report = _read(path)
    assert ev.kept == [("gemm", 10.0, 5.0)]
    [(reason, n)] = report.skipped.items()
    assert reason == rules.JSON_REST_UNREAD and report.examples[reason].startswith("truncated or broken:") and n == 1
    assert report.first_lines[reason] == [4]
    with pytest.raises(LoadError) as exc:
        _read(path, strict=True)
    assert "t.json" in str(exc.value) and "traceEvents" in str(exc.value)


def test_a_number_too_long_is_damage_named_with_its_line(tmp_path):
    long = "1" * 5000  # more digits than Python turns into an int (4300)
    text = _TRACE.replace('"ts": 0, "dur": 100', f'"ts": {long}, "dur": 100')  # the Step#1 event, line 5
    path = tmp_path / "t.json"
    path.write_text(text)
    ev, report = _read(path)
    assert ev.kept == [("gemm", 10.0, 5.0)]  # read up to the broken event
    [(reason, n)] = report.skipped.items()
    assert reason == rules.JSON_REST_UNREAD and "digits" in report.examples[reason] and n == 1
    assert report.first_lines[reason] == [5]
    with pytest.raises(LoadError):
        _read(path, strict=True)


def test_an_empty_file_and_a_file_without_trace_events_are_errors(tmp_path):
    empty, other = tmp_path / "empty.json", tmp_path / "other.json"
    empty.write_text("  \n")
    other.write_text('{"meta": 1}')
    with pytest.raises(LoadError, match="empty file"):
        _read(empty)
    with pytest.raises(LoadError, match="not a Chrome trace: no traceEvents list"):
        _read(other)
