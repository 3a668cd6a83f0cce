"""Detection by the evidence of the head, and load_run's next candidate when the first reads nothing.

The motivating log: a torchtitan run launched through DeepSpeed's launcher. Its first 8 KiB hold
the launcher's lines and every rank's start-up lines, so the sniffers see DeepSpeed markers and no
torchtitan step line. The logs are built from real lines (torchtitan PR #3393's step lines and
issue #1570's start-up lines, DeepSpeedExamples' launcher lines), read from MFU_REALDATA.
"""

from __future__ import annotations

import re
import warnings
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from _realdata_b import realdata_dir

import mfu_toolkit.io as io
from mfu_toolkit.io import detect, detect_format, load_run, rank_formats, sniff_all
from mfu_toolkit.run import LoadError

TITAN = ("torchtitan", "pytorch-torchtitan_pr3393_rank0_steps22-29.log")
STARTUP = ("accelerator_info", "pytorch_torchtitan_issue1570_deepseek_v3_671b_256gpu_cuda_capacity.excerpt.log")
DS_LOG = ("deepspeed", "deepspeedai_DeepSpeedExamples_dschat_step2_dpo_opt-350M_gbs32.log")
STEP_RE = re.compile(r"step:\s*(\d+)")
STAMP_RE = re.compile(r"(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d),(\d{3})")


def _real_lines(parts: tuple[str, str]) -> list[str]:
    return realdata_dir(*parts).read_text().splitlines()


def _launcher(kind: str) -> list[str]:
    """Real DeepSpeed launcher lines: ``cmd`` + ``WORLD INFO DICT`` + ``dist_world_size`` (facts), or
    only the accelerator line (a marker DeepSpeed's parser has no record for)."""
    lines = _real_lines(DS_LOG)
    if kind == "accelerator":
        return [next(x for x in lines if "Setting ds_accelerator to" in x)]
    return [x for x in lines[:12] if "cmd = " in x or "WORLD INFO DICT" in x or "dist_world_size=" in x]


def _steps(n: int, *, first: int = 22, prefix: str = "[rank0]:") -> list[str]:
    """``n`` step lines cloned from the real rank-0 line of step 22, one per step, 1.17 s apart."""
    line = _real_lines(TITAN)[0]
    m = STAMP_RE.search(line)
    t0 = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S") + timedelta(milliseconds=int(m.group(2)))
    out = []
    for i in range(n):
        t = t0 + timedelta(milliseconds=1170 * i)
        stamp = t.strftime("%Y-%m-%d %H:%M:%S") + f",{t.microsecond // 1000:03d}"
        text = STEP_RE.sub(f"step: {first + i:2d}", STAMP_RE.sub(stamp, line, count=1), count=1)
        out.append(prefix + text.removeprefix("[rank0]:"))
    return out


def _titan_under_launcher(tmp_path: Path, *, kind: str = "facts", ranks: int = 8, n_steps: int = 105,
                          prefix: str = "[rank0]:", name: str = "train.log", newline: str = "\n") -> Path:
    startup = _real_lines(STARTUP)
    preamble = [x.replace("[rank0]:", f"[rank{r}]:") for r in range(ranks) for x in startup]
    p = tmp_path / name
    p.write_text(newline.join(_launcher(kind) + preamble + _steps(n_steps, prefix=prefix)) + newline)
    return p


@pytest.mark.parametrize("kind", ["facts", "accelerator"])
def test_a_launcher_line_does_not_outweigh_a_hundred_step_lines(tmp_path, kind):
    p = _titan_under_launcher(tmp_path, kind=kind)
    head = sniff_all(p)  # the premise: the 8 KiB head has DeepSpeed markers and no step line
    assert head["deepspeed"] >= detect.THRESHOLD and head["torchtitan"] == 0.0
    assert b"step:" not in p.read_bytes()[:8192]
    ranking = rank_formats(p)
    assert [c.name for c in ranking.candidates] == ["torchtitan", "deepspeed"]
    assert ranking.candidates[0].records == 105 and ranking.candidates[1].records == 0
    run = load_run(p)
    # 105 step lines written above, steps 22..126 (the real line's number counted up)
    assert run.meta.source_format == "torchtitan" and run.steps["step"].tolist() == list(range(22, 127))
    note = next(n for n in run.meta.report.notes if n.startswith("format detection:"))
    assert "torchtitan (score 0.95; read 105 step rows" in note and "deepspeed (score" in note
    assert (("only what it states" in note) if kind == "facts"
            else ("refused" in note and "no DeepSpeed records" in note))


@pytest.mark.parametrize("variant", [
    {"prefix": ""}, {"ranks": 2}, {"ranks": 64}, {"n_steps": 3}, {"newline": "\r\n"}, {"name": "train.log.1"},
])
def test_variants_of_the_launched_log(tmp_path, variant):
    # other rank counts (a preamble of 2.6 KB to 83 KB), no rank prefix, few steps, CRLF, another name
    p = _titan_under_launcher(tmp_path, **variant)
    assert detect_format(p) == "torchtitan"
    assert len(load_run(p).steps) == variant.get("n_steps", 105)


def test_the_gzipped_log_is_judged_on_its_inflated_head(tmp_path):
    import gzip

    p = _titan_under_launcher(tmp_path)
    z = tmp_path / "train.log.gz"
    z.write_bytes(gzip.compress(p.read_bytes()))
    assert detect_format(z) == "torchtitan" and len(load_run(z).steps) == 105


def test_records_past_the_evidence_head_are_not_looked_for(tmp_path, monkeypatch):
    # Detection is bounded: with step lines only after the evidence head, torchtitan is no
    # candidate and DeepSpeed reads its launcher facts (a Run without steps, noted), as before.
    monkeypatch.setattr(detect, "EVIDENCE_BYTES", 16 << 10)
    p = _titan_under_launcher(tmp_path, ranks=24)  # a 31 KB preamble
    assert p.read_bytes().index(b"step:") > 16 << 10
    assert detect_format(p) == "deepspeed"
    assert _titan_under_launcher(tmp_path, ranks=8).read_bytes().index(b"step:") < 16 << 10
    assert detect_format(_titan_under_launcher(tmp_path, ranks=8)) == "torchtitan"


def test_the_parsers_see_no_more_than_the_evidence_head(tmp_path, monkeypatch):
    seen: list[int] = []
    real = detect._parse_head

    def spy(name, src, display):
        seen.append(src.stat().st_size)
        return real(name, src, display)

    monkeypatch.setattr(detect, "_parse_head", spy)
    p = _titan_under_launcher(tmp_path, n_steps=20_000)  # about 4 MB
    assert p.stat().st_size > 10 * detect.EVIDENCE_BYTES
    ranking = rank_formats(p)
    assert ranking.best == "torchtitan" and "first 256 KiB" in ranking.candidates[0].evidence
    assert len(seen) == 2 and max(seen) <= detect.EVIDENCE_BYTES
    # the copy is cut at a line end: every record counted is a whole line of the head
    assert ranking.candidates[0].records == p.read_bytes()[: detect.EVIDENCE_BYTES].count(b"step: ")


def _forced(monkeypatch, p: Path, order: list[str]) -> None:
    ranking = rank_formats(p)
    by_name = {c.name: c for c in ranking.candidates}
    cands = tuple(by_name.get(n) or detect.Candidate(n, 0.6) for n in order)
    monkeypatch.setattr(io, "rank_formats", lambda path: detect.Ranking(Path(path), ranking.scores, cands))


@pytest.mark.parametrize("kind", ["facts", "accelerator"])
def test_load_run_tries_the_next_candidate_and_says_why(tmp_path, monkeypatch, kind):
    p = _titan_under_launcher(tmp_path, kind=kind)
    _forced(monkeypatch, p, ["deepspeed", "torchtitan"])  # as detection by markers alone ranked them
    run = load_run(p)
    assert run.meta.source_format == "torchtitan" and len(run.steps) == 105
    note = next(n for n in run.meta.report.notes if n.startswith("format: "))
    assert note.startswith("format: deepspeed (score") and "was tried first and passed over" in note
    assert note.endswith("read as torchtitan")
    why = ("it read no records, only what the log states" if kind == "facts"
           else "it refused the input: no DeepSpeed records")
    assert why in note


def test_when_none_reads_records_the_first_that_read_facts_is_kept(tmp_path, monkeypatch):
    p = tmp_path / "launch.log"
    p.write_text("\n".join(_launcher("facts")) + "\n")
    _forced(monkeypatch, p, ["torchtitan", "deepspeed"])
    run = load_run(p)
    assert run.meta.source_format == "deepspeed" and len(run.steps) == 0
    assert run.meta.n_accelerators == 8  # WORLD INFO DICT: {'localhost': [0, ..., 7]} in the real line
    note = next(n for n in run.meta.report.notes if n.startswith("format: "))
    assert "torchtitan" in note and "was tried first and passed over: it refused the input" in note
    assert "none read records" in note


def test_the_refusal_names_each_candidate_and_why(tmp_path, monkeypatch):
    p = tmp_path / "launch.log"
    p.write_text("\n".join(_launcher("accelerator") + ["setting up the node ..."]) + "\n")
    _forced(monkeypatch, p, ["deepspeed", "torchtitan"])
    with pytest.raises(LoadError) as info:
        load_run(p)
    msg = str(info.value)
    assert msg.startswith(str(p)) and "no detected format could read it" in msg
    assert "deepspeed (score" in msg and "no DeepSpeed records found" in msg
    assert "torchtitan (score" in msg and "no torchtitan step lines" in msg and "format=" in msg


def test_a_single_candidates_refusal_is_its_own(tmp_path):
    p = tmp_path / "launch.log"
    p.write_text("\n".join(_launcher("accelerator") + ["setting up the node ..."]) + "\n")
    with pytest.raises(LoadError, match="no DeepSpeed records found") as info:
        load_run(p)
    assert "no detected format" not in str(info.value)


def test_strict_errors_of_the_first_candidate_are_raised_not_passed_over(tmp_path, monkeypatch):
    p = _titan_under_launcher(tmp_path)
    text = p.read_text().replace("grad_norm:  0.5926", "grad_norm:  oops", 1)
    p.write_text(text)
    _forced(monkeypatch, p, ["torchtitan", "deepspeed"])
    with pytest.raises(LoadError, match="grad_norm") as info:
        load_run(p, strict=True)
    assert info.value.line is not None and "no detected format" not in str(info.value)
    with warnings.catch_warnings(record=True) as caught:  # not strict: kept, the warning still issued
        warnings.simplefilter("always")
        run = load_run(p)
    assert run.meta.source_format == "torchtitan" and len(run.steps) == 105
    assert [w for w in caught if "non-numeric" in str(w.message).lower() or "skipped" in str(w.message)]
    assert caught[0].filename == __file__  # the warning points at the caller, as every load's does


def test_a_json_document_cut_short_cannot_judge_and_keeps_its_score(monkeypatch):
    # The real A100 trace (9.8 MB inflated): a head cut from it is no whole JSON document.
    p = realdata_dir("kineto", "HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz")
    from mfu_toolkit.io.reading import read_head

    head = read_head(p, detect.EVIDENCE_BYTES)
    weighed = {c.name: c for c in detect._weigh(p, {"kineto": 0.95, "deepspeed": 0.6}, head)}
    assert weighed["kineto"].tier == 2 and weighed["kineto"].evidence.startswith("refused in the first 256 KiB")
    assert detect._order(list(weighed.values()))[0].name == "kineto"


def test_two_candidates_that_both_read_records_are_still_ambiguous(tmp_path, monkeypatch):
    p = _titan_under_launcher(tmp_path)
    ranking = detect._order([detect.Candidate("torchtitan", 0.9, 3, 105, "read 105 step rows"),
                             detect.Candidate("nemo", 0.85, 3, 3, "read 3 step rows")])
    with pytest.raises(LoadError, match=r"ambiguous format: torchtitan \(0\.90\), nemo \(0\.85\).*read 105 step rows"):
        detect._check_ambiguity(p, ranking)


def test_a_saved_run_reads_back_equal_when_its_bytes_quote_another_formats_signature(tmp_path):
    # A saved NeMo Run quotes NeMo's certain signature ("train_step_timing in s") in its report; the
    # NeMo sniffer refuses a binary head (NUL bytes), and the run reads back equal, with no note added
    # to the saved report (once, two formats were certain of the file: an ambiguity error).
    from mfu_toolkit.run import save_run

    src = realdata_dir("nemo", "NVIDIA_NeMo_resiliency-demo_cell14_baseline.extracted.log")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run = load_run(src)
    saved = save_run(run, tmp_path / "r.parquet")
    scores = sniff_all(saved)
    assert scores["run_parquet"] == 1.0 and scores["nemo"] == 0.0
    assert rank_formats(saved).best == "run_parquet" and load_run(saved) == run
