"""torchtitan stdout loader: prefixes, colours, duplicates, field drift, bad lines, real logs."""

from __future__ import annotations

import math
import random
import re
import statistics
import tempfile
import warnings
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from _realdata_b import realdata_dir
from _timing import explain, growth, linear_bound
from hypothesis import given, settings
from hypothesis import strategies as st

from mfu_toolkit.io import rules, torchtitan
from mfu_toolkit.io.base import InternalLoadError
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning, SchemaError

ESC = "\x1b"


def line(step: int, t: str, *, prefix: str = "", tps: str = "tps: 10,000", mfu: str = "mfu: 40.00%",
         loss: float = 3.0) -> str:
    return (
        f"{prefix}[titan] 2025-01-01 00:00:{t} - root - INFO - {ESC}[31mstep: {step:2d}{ESC}[39m  "
        f"loss: {loss:.4f}  memory: 10.00GiB(12.50%)  {tps}  tflops: 300.00  {mfu}\n"
    )


def write(tmp_path: Path, text: str, name: str = "train.log") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def load_quiet(p: Path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return torchtitan.load(p, **kw)


def test_prefixed_ranks_keep_their_rows_and_intervals_are_shared(tmp_path):
    text = "[rank0]:[titan] 2025-01-01 00:00:00,000 - root - INFO - Training starts at step 1.\n"
    text += "[rank1]:[titan] 2025-01-01 00:00:00,000 - root - INFO - Training starts at step 1.\n"
    text += line(1, "02,000", prefix="[rank0]:") + line(1, "02,500", prefix="[rank1]:")
    text += line(11, "12,000", prefix="[rank0]:", tps="wps: 12,000") + line(11, "12,500", prefix="[rank1]:")
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert run.meta.timing == "interval_mean"
    assert sorted(s["rank"].unique()) == [0, 1]
    r0 = s[s["rank"] == 0].sort_values("step")
    assert r0["step"].tolist() == list(range(1, 12))
    # step 1: from "Training starts" (0 s) to its line (2 s); steps 2..11 share 10 s.
    assert r0["start_s"].iloc[0] == pytest.approx(0.0) and r0["end_s"].iloc[0] == pytest.approx(2.0)
    assert np.diff(r0["end_s"].to_numpy()[1:]) == pytest.approx(np.full(9, 1.0))
    assert r0["end_s"].iloc[-1] == pytest.approx(12.0)
    assert r0["interval_steps"].iloc[-1] == 10 and r0["interval_known"].all()
    # wps (older name) read as tps; rates repeated over the interval, loss only on logged steps.
    assert r0["tps"].iloc[5] == 12000.0 and r0["mfu_pct"].iloc[5] == 40.0
    assert math.isnan(r0["loss"].iloc[5]) and r0["loss"].iloc[-1] == 3.0
    assert r0["memory_gib"].iloc[-1] == 10.0 and r0["memory_pct"].iloc[-1] == 12.5
    assert run.meta.extra["field_aliases"] == ["wps->tps"]
    assert run.meta.report.total_skipped == 0


def test_unprefixed_copies_collapse_into_one_job_level_row(tmp_path):
    text = "".join(line(s, f"{s:02d},000") for s in (5, 6, 7) for _ in range(4))
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert s["step"].tolist() == [5, 6, 7]
    assert (s["rank"] == -1).all()
    assert s["n_reports"].tolist() == [4, 4, 4]
    assert run.meta.extra["max_copies_per_step"] == 4
    assert any("duplicate step lines collapsed" in n for n in run.meta.report.notes)
    # First logged step: no start in the log -> zero-width, flagged; never a guessed duration.
    assert s["start_s"].iloc[0] == s["end_s"].iloc[0] and not s["interval_known"].iloc[0]
    assert (s["end_s"] - s["start_s"]).iloc[1:].tolist() == pytest.approx([1.0, 1.0])


def test_srun_label_prefix_and_mfu_not_available(tmp_path):
    text = line(1, "01,000", prefix="0: ", mfu="mfu: N/A") + line(1, "01,000", prefix="1: ", mfu="mfu: N/A")
    text += line(2, "02,000", prefix="0: ", mfu="mfu: N/A") + line(2, "02,100", prefix="1: ", mfu="mfu: N/A")
    run = torchtitan.load(write(tmp_path, text))
    assert sorted(run.steps["rank"].unique()) == [0, 1]
    assert run.steps["mfu_pct"].isna().all()  # withheld by torchtitan, kept missing
    assert run.steps["tflops"].notna().all()


def test_step_going_back_opens_a_new_attempt(tmp_path):
    text = line(1, "01,000") + line(2, "02,000") + line(3, "03,000")
    text += line(2, "50,000") + line(3, "51,000")  # relaunched 47 s after step 3
    run = torchtitan.load(write(tmp_path, text))
    s = run.steps
    assert run.n_attempts == 2
    assert s.loc[s["attempt"] == 1, "step"].tolist() == [2, 3]
    # The first step of the new attempt has no start in the log: zero-width.
    first = s[(s["attempt"] == 1) & (s["step"] == 2)].iloc[0]
    assert first["start_s"] == first["end_s"] == pytest.approx(49.0)


def test_half_written_last_line_is_counted_or_raised(tmp_path):
    text = line(1, "01,000") + line(2, "02,000")
    text += "[titan] 2025-01-01 00:00:03,000 - root - INFO - step:  3  loss: 2.9"  # no newline
    p = write(tmp_path, text)
    with pytest.warns(LoadWarning) as rec:
        run = torchtitan.load(p)
    assert len([w for w in rec if issubclass(w.category, LoadWarning)]) == 1
    assert run.steps["step"].tolist() == [1, 2]
    assert run.meta.report.skipped == {"half-written last line": 1}
    assert run.meta.report.first_lines["half-written last line"] == [3]
    with pytest.raises(LoadError) as exc:
        torchtitan.load(p, strict=True)
    assert exc.value.line == 3 and "train.log" in str(exc.value)


def test_non_monotonic_time_and_bad_values_are_skipped_with_lines(tmp_path):
    text = line(1, "05,000") + line(2, "04,000") + line(3, "06,000")
    text += line(4, "07,000", tps="tps: lots")
    p = write(tmp_path, text)
    run = load_quiet(p)
    rep = run.meta.report
    assert rep.skipped == {rules.NON_MONOTONIC: 1, rules.NON_NUMERIC: 1}
    assert rep.first_lines[rules.NON_MONOTONIC] == [2]
    assert rep.first_lines[rules.NON_NUMERIC] == [4]
    # step 2 is covered by step 3's interval; step 4 is kept with its tps missing, its time intact
    assert run.steps["step"].tolist() == [1, 2, 3, 4]
    last = run.steps.iloc[-1]
    assert math.isnan(last["tps"]) and last["tflops"] == 300.0 and last["end_s"] - last["start_s"] == pytest.approx(1.0)
    with pytest.raises(LoadError) as exc:
        torchtitan.load(p, strict=True)
    assert exc.value.line == 2 and exc.value.field == "timestamp"


def test_empty_garbage_and_directory_inputs_raise_load_error(tmp_path):
    with pytest.raises(LoadError, match="no torchtitan step lines"):
        torchtitan.load(write(tmp_path, "", "empty.log"))
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(bytes(range(256)) * 20)
    with pytest.raises(LoadError, match="no torchtitan step lines"):
        torchtitan.load(garbage)
    with pytest.raises(LoadError):
        torchtitan.load(tmp_path)


def test_sniff_by_content_never_raises(tmp_path):
    p = write(tmp_path, line(1, "01,000"), "x.txt")
    assert torchtitan.sniff(p, read_head(p)) >= 0.9
    assert torchtitan.sniff(tmp_path, b"") == 0.0
    assert torchtitan.sniff(p, b"iteration 10/ 100 | elapsed time per iteration (ms): 5.0") == 0.0
    assert torchtitan.sniff(Path("/does/not/exist"), b"\xff\x00step:") == 0.0


@settings(max_examples=40, deadline=None)
@given(st.binary(max_size=400))
def test_random_bytes_raise_only_load_error(data):
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "x.log"
        p.write_bytes(data)
        try:
            load_quiet(p)
        except LoadError:
            pass


# --- real logs --------------------------------------------------------------------------------
_STEP = re.compile(r"step:\s*(\d+)")


def _raw_steps(p: Path) -> list[tuple[str, int]]:
    out = []
    for ln in p.read_text().splitlines():
        m = _STEP.search(ln)
        if m:
            pre = re.match(r"\[rank(\d+)\]:", ln)
            out.append((pre.group(1) if pre else "", int(m.group(1))))
    return out


@pytest.mark.realdata
def test_real_logs_load_with_auto_detection_and_match_the_raw_lines():
    from mfu_toolkit.io import load_run

    folder = realdata_dir("torchtitan")
    files = sorted(folder.glob("*.log"))
    assert len(files) == 3
    for p in files:
        run = load_run(p)
        assert run.meta.source_format == "torchtitan"
        raw = _raw_steps(p)
        # One row per (rank, step): duplicates printed by several ranks are not double counted.
        assert len(run.steps) == len(set(raw))
        assert sorted(run.steps["step"].unique()) == sorted({s for _, s in raw})
        prefixed = all(r for r, _ in raw)
        assert set(run.steps["rank"]) == ({int(r) for r, _ in raw} if prefixed else {-1})
        copies = Counter(raw)
        assert run.steps["n_reports"].tolist() == [copies[(r if prefixed else "", s)] for r, s in zip(
            [str(x) if prefixed else "" for x in run.steps["rank"]], run.steps["step"], strict=True)]
        # Field values as printed, on the logged rows (first copy for collapsed duplicates).
        first = {}
        for ln in p.read_text().splitlines():
            m = _STEP.search(ln)
            if m and int(m.group(1)) not in first:
                first[int(m.group(1))] = ln
        for _, row in run.steps.iterrows():
            ln = first[int(row["step"])]
            tps = float(re.search(r"tps:\s*([\d,]+)", ln).group(1).replace(",", ""))
            mfu = float(re.search(r"mfu:\s*([\d.]+)%", ln).group(1))
            assert row["tps"] == tps and row["mfu_pct"] == mfu
        # Wall time: last timestamp minus first, to the millisecond.
        stamps = re.findall(r"\d{2}:(\d{2}):(\d{2}),(\d{3})", p.read_text())
        secs = [int(m) * 60 + int(s) + int(ms) / 1000 for m, s, ms in stamps]
        assert run.wall_seconds == pytest.approx(max(secs) - min(secs), abs=1e-6)


def test_caller_states_what_the_log_does_not_carry(tmp_path):
    p = write(tmp_path, line(1, "01,000") + line(2, "02,000"))
    run = torchtitan.load(p, name="llama-8b", n_accelerators=8, global_batch=64.0)
    assert (run.meta.name, run.meta.n_accelerators, run.meta.global_batch) == ("llama-8b", 8, 64.0)
    with pytest.raises(TypeError, match="unexpected keyword"):
        torchtitan.load(p, not_a_field=1)


# --- progress-bar redraws: a lone \r ends a line ----------------------------------------------
@pytest.mark.realdata
def test_a_real_log_redrawn_with_carriage_returns_keeps_every_step(tmp_path):
    # The real step lines joined by '\r' (a progress bar redrawing one terminal line) instead of
    # '\n': the text before each '\r' is a line of its own, so no step is lost.
    src = realdata_dir("torchtitan", "pytorch-torchtitan_pr1437_rank0_prefixed.log")
    lines = src.read_text().splitlines()
    assert len(lines) == 8
    p = tmp_path / "redrawn.log"
    p.write_bytes(("\r".join(lines) + "\n").encode())
    run = torchtitan.load(p)
    steps = [int(_STEP.search(ln).group(1)) for ln in lines]
    assert run.steps["step"].tolist() == list(range(steps[0], steps[-1] + 1)) == [3, 4, 5, 6, 7, 8, 9, 10]
    assert run.steps.equals(torchtitan.load(src).steps)
    assert run.meta.report.lines_read == len(lines) + 1  # the 8 lines and the empty text after the final newline


# --- facts --------------------------------------------------------------------------------------
STARTUP = [
    "Building 3-D device mesh with ['pp', 'dp_shard', 'ep'], [4, 16, 4]",
    # the older spelling, as a Lingua log quotes it (with the device index in parentheses)
    "GPU capacity: NVIDIA A100-SXM4-80GB (0) with 79.33GiB memory",
    "Float8 tensorwise scaled training active",
    "Model llama3 8B size: 8,030,261,248 total parameters",
    "Peak FLOPS used for computing MFU: 3.120e+14",
    "Trainer is initialized with local batch size 2, global batch size 128, gradient accumulation steps 1, "
    "sequence length 8192, total steps 1000 (warmup 200)",
]


def test_start_up_lines_are_facts_with_their_lines(tmp_path):
    text = "".join(f"[rank0]:[titan] 2025-01-01 00:00:0{k},000 - root - INFO - {s}\n" for k, s in enumerate(STARTUP))
    text += line(1, "10,000", prefix="[rank0]:") + line(2, "11,000", prefix="[rank0]:")
    p = write(tmp_path, text)
    run = torchtitan.load(p)
    facts = {f["name"]: f for f in run.meta.facts}
    expect = {"n_accelerators": (256, 1), "parallelism": ({"pp": 4, "dp_shard": 16, "ep": 4}, 1),  # 4 * 16 * 4
              "accelerator": ("NVIDIA A100-SXM4-80GB", 2), "dtype": ("fp8", 3),
              "micro_batch": (2, 6), "global_batch": (128.0, 6), "seq_len": (8192, 6)}
    assert {k: (f["value"], int(f["where"].rsplit(":", 1)[1])) for k, f in facts.items()} == expect
    assert all(f["where"].startswith(str(p)) and f["source"] == "stated" for f in facts.values())
    assert facts["accelerator"]["text"].endswith(STARTUP[1])
    assert (run.meta.n_accelerators, run.meta.global_batch, run.meta.seq_len) == (256, 128.0, 8192)
    # the stated accelerator is used, but the stated fp8 has no A100 peak (the A100 datasheet lists none):
    # the peak stays unknown and a note says why
    assert (run.meta.accelerator, run.meta.dtype, run.meta.peak_flops_per_accelerator) == ("A100 SXM", None, None)
    assert any(n.startswith("peak unknown") and "fp8" in n for n in run.meta.report.notes)
    x = run.meta.extra
    assert (x["n_parameters"], x["peak_flops_assumed"], x["accelerator_memory_gib"]) == (8_030_261_248, 3.12e14, 79.33)
    # what the caller gives wins, and a contradiction is said, not resolved silently
    with pytest.warns(LoadWarning, match=r"conflict: n_accelerators given as 8, but the log states 256 at .*:1"):
        assert torchtitan.load(p, n_accelerators=8).meta.n_accelerators == 8


@pytest.mark.realdata
def test_real_start_up_excerpt_is_a_run_with_facts_and_no_steps():
    p = realdata_dir("accelerator_info",
                     "pytorch_torchtitan_issue1570_deepseek_v3_671b_256gpu_cuda_capacity.excerpt.log")
    raw = p.read_text().splitlines()
    assert not any(_STEP.search(ln) for ln in raw)
    at = {k: n for n, ln in enumerate(raw, start=1) for k in ("CUDA capacity", "Building", "Total parameter")
          if k in ln}
    name = re.search(r"CUDA capacity: (.+) with ([\d.]+)GiB memory", raw[at["CUDA capacity"] - 1])
    model = re.search(r"Building (\S+) (\S+) with", raw[at["Building"] - 1])
    seq = re.search(r"max_seq_len=(\d+)", raw[at["Building"] - 1])
    active = re.search(r"active ([\d,]+)", raw[at["Total parameter"] - 1]).group(1).replace(",", "")
    stamps = [int(h) * 3600 + int(m) * 60 + int(s) + int(ms) / 1000
              for h, m, s, ms in re.findall(r" (\d{2}):(\d{2}):(\d{2}),(\d{3}) ", "\n".join(raw))]
    run = load_run_tt(p)
    assert run.steps.empty
    facts = {f["name"]: (f["value"], f["where"]) for f in run.meta.facts}
    assert facts == {
        "accelerator": (name.group(1), f"{p}:{at['CUDA capacity']}"),  # "NVIDIA H100 80GB HBM3"
        "model": (f"{model.group(1)} {model.group(2)}", f"{p}:{at['Building']}"),
        "seq_len": (int(seq.group(1)), f"{p}:{at['Building']}"),
    }
    assert run.meta.seq_len == 4096 and run.meta.n_accelerators is None  # no mesh line in the excerpt
    assert run.meta.extra["parameters"]["active"] == int(active) == 37_552_282_624
    assert run.meta.extra["accelerator_memory_gib"] == float(name.group(2))
    assert run.meta.extra["model_args_dtype"] == "fp8"  # DeepSeek's inference weight format, not a dtype fact
    (init,) = run.events.itertuples()
    assert init.kind == "init" and init.end_s - init.start_s == pytest.approx(max(stamps) - min(stamps), abs=1e-6)


def load_run_tt(p: Path):
    from mfu_toolkit.io import load_run

    return load_run(p, format="torchtitan")


def test_a_file_with_neither_step_nor_start_up_lines_is_refused(tmp_path):
    p = write(tmp_path, "2025-01-01 00:00:00,000 hello\nno titan here\n")
    with pytest.raises(LoadError, match="no torchtitan step lines"):
        torchtitan.load(p)


# --- claims -------------------------------------------------------------------------------------
def test_mfu_claim_is_a_fraction(tmp_path):
    run = torchtitan.load(write(tmp_path, line(1, "01,000", mfu="mfu: 13.99%")))
    claims = {c["metric"]: c for c in run.meta.claims}
    assert claims["mfu"]["value"] == pytest.approx(0.1399) and claims["mfu"]["unit"] == "fraction"
    assert claims["mfu"]["statistic"] == "value" and claims["mfu"]["n"] == 1
    assert claims["tflops_per_accelerator"]["value"] == 300.0
    assert claims["tokens_per_s_per_accelerator"]["value"] == 10_000.0
    na = torchtitan.load(write(tmp_path, line(1, "01,000", mfu="mfu: N/A"), "na.log"))
    assert "mfu" not in {c["metric"] for c in na.meta.claims}  # withheld under FP8: no claim


@pytest.mark.realdata
def test_real_logs_claims_are_medians_of_the_printed_values():
    for p in sorted(realdata_dir("torchtitan").glob("*.log")):
        first: dict[tuple[str, int], tuple[int, str]] = {}  # (rank prefix, step) -> first line
        for n, ln in enumerate(p.read_text().splitlines(), start=1):
            m = re.search(r"step:\s*(\d+)", ln)
            if m:
                pre = re.match(r"\[rank(\d+)\]:", ln)
                first.setdefault((pre.group(1) if pre else "", int(m.group(1))), (n, ln))
        kept = sorted(first.values())

        def values(rx: str, kept=kept) -> list[float]:
            return [float(re.search(rx, ln).group(1).replace(",", "")) for _, ln in kept]

        claims = {c["metric"]: c for c in torchtitan.load(p).meta.claims}
        for metric, rx, scale in (("tflops_per_accelerator", r"tflops:\s*([\d.]+)", 1.0),
                                  ("mfu", r"mfu:\s*([\d.]+)%", 0.01),
                                  ("tokens_per_s_per_accelerator", r"tps:\s*([\d,]+)", 1.0)):
            c = claims[metric]
            assert c["value"] == pytest.approx(statistics.median(values(rx)) * scale), (p.name, metric)
            assert c["n"] == len(kept) and c["where"] == f"{p}:{kept[0][0]}"
    # the all-ranks log: 13.99 % on step 4 (first copy) and 13.93 % on step 5
    p = realdata_dir("torchtitan", "pytorch-torchtitan_pr2389_all_ranks_unprefixed.log")
    mfu = next(c for c in torchtitan.load(p).meta.claims if c["metric"] == "mfu")
    assert mfu["value"] == pytest.approx((0.1399 + 0.1393) / 2)


# --- bounds -------------------------------------------------------------------------------------
def test_a_step_gap_too_long_to_expand_stays_one_row(tmp_path):
    p = write(tmp_path, line(1, "01,000") + line(10**12, "11,000"))
    with pytest.warns(LoadWarning):
        run = torchtitan.load(p)
    s = run.steps
    assert s["step"].tolist() == [1, 10**12]
    assert s["interval_steps"].tolist() == [1, 10**12 - 1]
    assert s["end_s"].iloc[-1] == pytest.approx(10.0)
    assert s["end_s"].iloc[-1] - s["start_s"].iloc[-1] == pytest.approx(10.0 / (10**12 - 1))  # one step's share
    assert run.meta.report.skipped == {rules.INTERVAL_TOO_LONG: 1}
    assert run.meta.report.first_lines[rules.INTERVAL_TOO_LONG] == [2]


def test_steps_and_ranks_that_do_not_fit_are_counted_not_crashed(tmp_path):
    huge = "9" * 5000
    text = line(1, "01,000") + line(2, "02,000")
    text += line(3, "03,000").replace("step:  3", "step: 99999999999999999999")  # > int64
    text += line(4, "04,000").replace("step:  4", f"step: {huge}")  # past Python's int() digit limit
    text += line(5, "05,000", prefix=f"[rank{huge}]:")
    with pytest.warns(LoadWarning):
        run = torchtitan.load(write(tmp_path, text))
    assert run.meta.report.skipped == {rules.BAD_STEP: 2}
    assert run.meta.report.first_lines[rules.BAD_STEP] == [3, 4]
    assert run.steps["step"].tolist() == [1, 2, 3, 4, 5]  # step 5's interval covers 3..4


@pytest.mark.parametrize("body", ["[", "0", " ", "a", ":", "a:"])
def test_long_lines_of_one_character_read_in_linear_time(tmp_path, body):
    def log(n: int) -> Path:
        filler = body * (n // len(body))
        stamp = "[titan] 2025-01-01 00:00:01,000 - root - INFO - "
        text = filler + "\n" + stamp + "step: 1 " + filler + "\n" + stamp + "capacity: " + filler + "\n"
        text += stamp + "Building " + filler + "\n" + line(2, "02,000") + filler + "\n"
        return write(tmp_path, text, f"train{n}.log")

    runs = {}

    def load(n: int):
        p = log(n)
        return lambda: runs.__setitem__(n, load_quiet(p))

    # lines of 80 KB and of 320 KB: 4x the input
    ratio = growth(load, 80_000)
    assert ratio < linear_bound(), explain(ratio)
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()
    # the sniff, on a head of 8 KB (as detection reads it) and of 32 KB: one long line of the filler
    p = log(80_000)
    data = p.read_bytes()
    ratio = growth(lambda n: lambda: torchtitan.sniff(p, data[:n]), 8192)
    assert ratio < linear_bound(), explain(ratio, what="the head")


# --- no foreign exception from any input --------------------------------------------------------
def _mutate_text(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    """One seeded damage to a text log."""
    kind = rng.choice(["truncate", "flip", "dup", "reorder", "number", "nul", "crlf", "cr", "bom",
                       "latin1", "long"])
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    if kind == "truncate":
        return kind, data[: rng.randrange(len(data))]
    if kind == "flip":
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] ^= rng.randint(1, 255)
        return kind, bytes(b)
    if kind == "dup":
        lines.insert(rng.randrange(len(lines)), lines[i])
    elif kind == "reorder":
        rng.shuffle(lines)
    elif kind == "number":
        repl = rng.choice([b"nan", b"inf", b"-inf", b"1e308", b"-1", b"9" * 30, b"9" * 5000, b"0"])
        lines[i] = re.sub(rb"\d[\d,.]*", lambda m: repl if rng.random() < 0.5 else m.group(0), lines[i])
    elif kind == "nul":
        lines[i] = lines[i][: len(lines[i]) // 2] + b"\x00" * rng.randint(1, 5) + lines[i][len(lines[i]) // 2:]
    elif kind == "crlf":
        return kind, data.replace(b"\n", b"\r\n")
    elif kind == "cr":
        return kind, data.replace(b"\n", b"\r")
    elif kind == "bom":
        return kind, b"\xef\xbb\xbf" + data
    elif kind == "latin1":
        lines[i] += "\u00e9\u00ff".encode("latin-1") + b"\xc3\x28"
    else:
        lines[i] += rng.choice([b"[", b"0", b" ", b"a"]) * 80_000
    return kind, b"\n".join(lines)


@pytest.mark.realdata
def test_mutations_of_a_real_log_give_a_run_or_a_load_error(tmp_path):
    src = realdata_dir("torchtitan", "pytorch-torchtitan_pr2389_all_ranks_unprefixed.log").read_bytes()
    src += realdata_dir("accelerator_info",
                        "pytorch_torchtitan_issue1570_deepseek_v3_671b_256gpu_cuda_capacity.excerpt.log").read_bytes()
    failures = []
    for seed in range(80):
        rng = random.Random(seed)
        kind, data = _mutate_text(rng, src)
        for _ in range(rng.randint(0, 2)):  # sometimes two or three damages at once
            more, data = _mutate_text(rng, data)
            kind += "+" + more
        p = tmp_path / f"m{seed}.log"
        p.write_bytes(data)
        for strict in (False, True):
            try:
                load_quiet(p, strict=strict)
            except InternalLoadError as exc:
                failures.append(f"seed {seed} ({kind}, strict={strict}): {exc}")
            except (LoadError, SchemaError):
                pass
    assert not failures, failures


def test_made_up_field_names_do_not_grow_the_table_as_lines_times_names(tmp_path):
    # 200 lines with 50 new names each: 10,000 names would be 10,000 columns of 200+ rows
    text = "".join(
        line(k, f"{k // 10:02d},{k % 10}00").rstrip("\n") + "".join(f"  f{k}_{j}: 1" for j in range(50)) + "\n"
        for k in range(1, 201))
    with pytest.warns(LoadWarning):
        run = torchtitan.load(write(tmp_path, text))
    kept = [c for c in run.steps.columns if c.startswith("f")]
    known = {"loss", "memory_gib", "memory_pct", "tps", "tflops", "mfu_pct"}
    assert known <= set(run.steps.columns) and len(kept) == torchtitan.MAX_FIELD_COLUMNS - len(known)
    reason = f"field not kept (over {torchtitan.MAX_FIELD_COLUMNS} distinct field names)"
    assert run.meta.report.skipped == {reason: 200 * 50 - len(kept)}
    assert len(run.steps) == 200
