"""The line-table dispatcher (mfu_toolkit.io.lines): the rows' order, the needle tested before any regex,
errors that name file, line and field, time linear in the input (same-run ratios, see _timing.py), and the
pieces a table fills (Stated, Columns, claims, the shared timer rows)."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from _timing import explain, growth, linear_bound, slowdown

from mfu_toolkit.io import rules
from mfu_toolkit.io.base import Parsed
from mfu_toolkit.io.lines import At, Columns, Line, Stated, claim, read, states
from mfu_toolkit.io.reading import Reader
from mfu_toolkit.io.timers import TIMER_LINES, Timers
from mfu_toolkit.run import LoadError


def _reader(tmp_path, lines: list[str], *, strict: bool = False, name: str = "log.txt") -> Reader:
    p = tmp_path / name
    p.write_text("\n".join(lines) + "\n")
    return Reader(p, "test", strict=strict)


class _State:
    def __init__(self) -> None:
        self.calls: list[tuple[str, int, str | None]] = []
        self.stated = Stated()
        self.timers = Timers()


def _handler(tag: str, result: object = True):
    def handler(state, at, m):
        state.calls.append((tag, at.ln, m.group(0) if m else None))
        return result

    return handler


# --- dispatch ---------------------------------------------------------------------------------------------
def test_the_first_row_that_reads_a_line_ends_its_dispatch(tmp_path):
    table = (Line("alpha", None, _handler("a")), Line("alpha", None, _handler("a2")), Line("beta", None, _handler("b")))
    st = _State()
    unread = read(_reader(tmp_path, ["alpha beta", "beta", "gamma"]), table, st)
    assert st.calls == [("a", 1, None), ("b", 2, None)]  # line 1 stops at its first row, though 'beta' is in it
    assert unread == 1  # 'gamma': no row read it


def test_a_false_result_passes_the_line_on_and_more_lets_later_rows_read_it(tmp_path):
    table = (Line("x", None, _handler("declines", result=False)), Line("x", None, _handler("marks"), more=True),
             Line(None, None, _handler("every line that gets here", result=None), more=True),
             Line("x", None, _handler("reads")), Line("x", None, _handler("never")))
    st = _State()
    unread = read(_reader(tmp_path, ["x", "", "   ", "y"]), table, st)
    assert [c[0] for c in st.calls if c[1] == 1] == ["declines", "marks", "every line that gets here", "reads"]
    assert st.calls[-1] == ("every line that gets here", 4, None)  # a row without needle or regex sees it
    assert unread == 1  # 'y': the row that saw it read nothing (None)


def test_blank_lines_are_passed_over_and_the_rest_counted(tmp_path):
    reader = _reader(tmp_path, ["a", "", " \t ", "b", "c"])
    assert read(reader, (Line("a", None, _handler("a")),), _State()) == 2
    assert reader.report.lines_read == 3


def test_the_regex_is_searched_after_the_needle_and_its_match_given(tmp_path):
    table = (Line("iteration", re.compile(r"iteration (\d+)"), _handler("it")), Line(None, None, _handler("rest")))
    st = _State()
    read(_reader(tmp_path, ["[x] iteration 12 | loss", "iteration twelve", "nothing"]), table, st)
    # line 2 holds the needle but not the pattern: the next row reads it
    assert st.calls == [("it", 1, "iteration 12"), ("rest", 2, None), ("rest", 3, None)]


def test_several_needles_any_of_them(tmp_path):
    table = (Line(("banner", "launch"), None, _handler("marker")),
             Line(("size:", "world="), re.compile(r"(\d+)"), _handler("size")))
    st = _State()
    unread = read(_reader(tmp_path, ["-- banner --", "launch 2", "size: 8", "world=4", "world", "other 5"]), table, st)
    assert st.calls == [("marker", 1, None), ("marker", 2, None), ("size", 3, "8"), ("size", 4, "4")]
    assert unread == 2


def test_a_line_without_the_needle_never_reaches_the_regex(tmp_path):
    # (a+)+b backtracks exponentially on 'aaa...c': searched, these three lines would take about a second;
    # behind a needle that is not in them they cost what a cheap pattern costs.
    lines = ["a" * 22 + "c"] * 3
    reader = _reader(tmp_path, lines)
    slow = (Line("needle", re.compile(r"(a+)+b"), _handler("x")),)
    cheap = (Line("needle", re.compile(r"b"), _handler("x")),)
    ratio = slowdown(lambda: read(reader, slow, _State()), lambda: read(reader, cheap, _State()))
    assert ratio < 5, ratio


def test_rows_are_checked_when_declared():
    with pytest.raises(ValueError, match="needle"):
        Line("", None, _handler("x"))
    with pytest.raises(ValueError, match="needle"):
        Line(("a", 3), None, _handler("x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="compiled pattern"):
        Line("a", r"a+", _handler("x"))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="callable"):
        Line("a", None, "not a function")  # type: ignore[arg-type]


# --- errors name the file, the line and the field --------------------------------------------------------------
def _bad_field(state, at, m):
    if (value := m.group(1)) != "ok":
        at.bad(rules.NON_NUMERIC, "loss", f"loss: {value}")
    return True


def test_a_damaged_field_is_counted_with_its_line(tmp_path):
    reader = _reader(tmp_path, ["loss: ok", "loss: abc", "loss: ok", "loss: x"])
    read(reader, (Line("loss", re.compile(r"loss: (\S+)"), _bad_field),), _State())
    rep = reader.report
    assert rep.skipped == {rules.NON_NUMERIC: 2} and rep.first_lines == {rules.NON_NUMERIC: [2, 4]}
    assert rep.examples[rules.NON_NUMERIC] == "loss: abc"


def test_strict_mode_raises_naming_file_line_and_field(tmp_path):
    reader = _reader(tmp_path, ["loss: ok", "", "loss: abc"], strict=True, name="train.log")
    with pytest.raises(LoadError) as info:
        read(reader, (Line("loss", re.compile(r"loss: (\S+)"), _bad_field),), _State())
    err = info.value
    assert (err.line, err.field) == (3, "loss") and err.path == str(tmp_path / "train.log")
    assert str(err).startswith(f"{tmp_path / 'train.log'}, line 3, field 'loss': {rules.NON_NUMERIC}: 'loss: abc'")


@pytest.mark.parametrize("value, missing, reason, detail", [
    (None, False, rules.NON_NUMERIC, None),
    (None, True, rules.NON_FINITE_TIME, "step time"),
    (math.nan, False, rules.NON_FINITE_TIME, "step time"),
    (-1.0, False, rules.NEGATIVE_DURATION, "step time"),
    (2e4, False, rules.VALUE_OUT_OF_RANGE, "step time over 10 s"),
])
def test_a_time_value_is_checked_against_the_shared_reasons(tmp_path, value, missing, reason, detail):
    reader = _reader(tmp_path, ["x"])
    at = At(reader, 7, "x")
    assert at.time("t", value, what="step time", scale=1e-3, limit=10.0, text_missing=missing) is None
    assert reader.report.first_lines == {reason: [7]}
    assert reader.report.examples.get(reason) == detail  # the detail, no example given
    assert at.time("t", 9999.0, what="step time", scale=1e-3, limit=10.0) == 9999.0  # 9.999 s: kept


# --- what a table fills ------------------------------------------------------------------------------------------
def test_stated_values_become_facts_only_when_one_value_is_printed(tmp_path):
    reader = _reader(tmp_path, ["x"])
    stated = Stated()
    stated.add("world", 8, 3, "  world_size .... 8  ")
    stated.add("world", 8, 9, "world_size=8")  # the same value again: its first line stays
    stated.add("batch", 16, 4, "batch 16")
    stated.add("batch", 32, 12, "batch 32")
    out = Parsed()
    assert stated.state(out, reader, "world", "the world size", "n_accelerators", "n_ranks") == (
        8, 3, "world_size .... 8")
    assert [(f.name, f.value, f.where) for f in out.facts] == [
        ("n_accelerators", 8, f"{reader.name}:3"), ("n_ranks", 8, f"{reader.name}:3")]
    assert stated.one(reader, "batch", "the batch") is None and stated.one(reader, "nothing", "x") is None
    assert reader.report.notes == [
        "the batch is printed with different values: 16 (line 4), 32 (line 12) (several launches?); "
        "not stated as a fact"]


def test_a_row_that_states_a_count(tmp_path):
    def count(text):
        return rules.as_count(text)

    table = (Line("NGPUS", re.compile(r"NGPUS=(\d+)"), states("world", count, field="NGPUS")),
             Line("MODEL", re.compile(r"MODEL=(\S+)"), states("model")))
    st = _State()
    reader = _reader(tmp_path, ["NGPUS=0", "NGPUS=24", "MODEL=llama"])
    assert read(reader, table, st) == 0
    assert st.stated.get("world") == {24: (2, "NGPUS=24")} and st.stated.get("model") == {"llama": (3, "MODEL=llama")}
    assert reader.report.first_lines == {rules.VALUE_OUT_OF_RANGE: [1]}
    with pytest.raises(LoadError) as info:
        read(_reader(tmp_path, ["NGPUS=0"], strict=True), table, _State())
    assert (info.value.line, info.value.field) == (1, "NGPUS")


def test_columns_keep_records_and_sparse_fields():
    c = Columns(2, line="q", name="O", value="d")
    assert c.add(1, "a", 0.5, fields={"loss": 2.0}) == 0
    assert c.add(2, "b", 1.5) == 1
    assert c.add(3, "c", 2.5, fields={"loss": 3.0, "lr": 1e-4, "extra": 7.0}) == 2  # a third field name: refused
    assert len(c) == 3 and list(c.line) == [1, 2, 3] and c.name == ["a", "b", "c"]
    assert c.dense("loss").tolist()[::2] == [2.0, 3.0] and math.isnan(c.dense("loss")[1])
    assert list(c.fields) == ["loss", "lr"] and c.refused == 1


def test_a_claim_is_the_median_or_the_last_value_and_notes_what_is_not_finite(tmp_path):
    reader = _reader(tmp_path, ["x"])
    out = Parsed()
    claim(reader, out, "tflops_per_accelerator", [(100.0, 5), (math.nan, 6), (300.0, 7), (200.0, 9)],
          "TFLOP/s per GPU", "what it counts", label="TFLOPs")
    claim(reader, out, "samples_per_s", [(1.0, 2), (3.0, 4)], "samples/s", "a running average", label="avg", last=True)
    claim(reader, out, "mfu", [(math.inf, 3)], "fraction", "nothing finite", label="MFU")
    assert [(c.metric, c.value, c.n, c.statistic, c.where) for c in out.claims] == [
        ("tflops_per_accelerator", 200.0, 3, "median", f"{reader.name}:5"),
        ("samples_per_s", 3.0, 2, "last", f"{reader.name}:2")]
    assert reader.report.notes == ["1 values of TFLOPs are not finite numbers: left out of its claim",
                                   "1 values of MFU are not finite numbers: left out of its claim"]


# --- the shared timer rows -----------------------------------------------------------------------------------------
def _record(state, at, m):
    """A stand-in record line: 'step N' is record N-1 of attempt 0."""
    state.timers.block = None
    state.timers.give(at, int(m.group(1)) - 1, 0)
    return True


def test_timer_rows_fill_any_table_that_holds_them(tmp_path):
    lines = [
        "[Rank 0] time (ms) | fwd: 10.0 | bwd_inner: 20.0 | bwd_allreduce: 5.0",  # DeepSpeed's: before its line
        "step 1",
        "(min, max) time across ranks (ms):",
        "    forward-compute .........................: (1.00, 3.00)",
        "    forward-compute .........................: (1.00, 3.00)",  # a repeat within the interval
        "    grads-all-reduce ........................: (4.00, 6.00)",
        "step 2",
        "    batch-generator .........................: (7.00, nan)",  # a header-less block line
    ]
    reader = _reader(tmp_path, lines)
    st = _State()
    table = (Line("step", re.compile(r"step (\d+)"), _record), *TIMER_LINES)
    assert read(reader, table, st) == 0
    cols = st.timers.columns(2)
    # Megatron's own compute (3 ms) and communication (6 ms) win over DeepSpeed's (30 ms, 5 ms) for record 0
    assert cols["compute_s"][0] == pytest.approx(0.003) and cols["comm_s"][0] == pytest.approx(0.006)
    assert math.isnan(cols["compute_s"][1]) and cols["data_wait_s"][1] == pytest.approx(0.007)
    t = st.timers.table(np.array([1, 2]), np.array([1, 1]))
    assert t["timer"].tolist() == ["fwd", "bwd_inner", "bwd_allreduce", "forward-compute", "grads-all-reduce",
                                   "batch-generator"]
    assert t["step"].tolist() == [1, 1, 1, 1, 1, 2] and t["source"].iloc[0] == "deepspeed"
    assert reader.report.first_lines == {rules.DUPLICATE: [5], rules.NON_FINITE_TIME: [8]}
    assert reader.report.examples[rules.NON_FINITE_TIME].startswith("timer")
    assert st.timers.first == {"deepspeed": (1, lines[0]), "megatron": (3, lines[2])}
    assert st.timers.spread() == {"forward-compute": 2.0, "grads-all-reduce": 2.0}


# --- linear time -------------------------------------------------------------------------------------------------
_MIX = ["iteration 10 | loss: 2.0 | lr: 1e-4", "world_size=8", "some warning printed by a library",
        "    forward-compute ......: (1.0, 2.0)", "", "checkpoint saved"]


def _table() -> tuple[Line, ...]:
    noop = _handler("x", result=None)
    return (Line("iteration", re.compile(r"iteration (\d+)"), noop), Line("world_size", re.compile(r"=(\d+)"), noop),
            Line(("checkpoint", "banner"), None, noop, more=True),
            Line(":", re.compile(r"\(([^,()]*), ([^()]*)\)"), noop), Line(None, None, noop, more=True))


def test_dispatch_time_grows_linearly_with_the_number_of_lines(tmp_path):
    def make(n):
        reader = _reader(tmp_path, _MIX * n, name=f"lines_{n}.log")
        table = _table()
        return lambda: read(reader, table, _State())

    ratio = growth(make, 2_000)
    assert ratio < linear_bound(), explain(ratio, what="the lines")


def test_dispatch_time_grows_linearly_with_the_length_of_a_line(tmp_path):
    def make(n):
        lines = [ch * n for ch in "iw:( ."] + ["iteration " + "9" * n, "world_size=" + "1" * n, ":" + "(" * n]
        reader = _reader(tmp_path, lines, name=f"long_{n}.log")
        table = _table()
        return lambda: read(reader, table, _State())

    ratio = growth(make, 50_000)
    assert ratio < linear_bound(), explain(ratio, what="each line")


def test_the_timer_rows_regex_is_linear_on_long_lines():
    (rx,) = [row.regex for row in TIMER_LINES if row.regex is not None]

    def make(n):
        texts = [pre + ch * n + "\x01" for pre in ("", "name .", "name ....: (", "x ") for ch in " .:(a"]
        return lambda: [rx.search(t) for t in texts]

    ratio = growth(make, 40_000)
    assert ratio < linear_bound(), explain(ratio, what="the line")
