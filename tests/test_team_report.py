"""The team report (``make report LOG=...``, notebook 08) and the workshop app (``make app``).

A small per-rank step log is written here (its facts are known by construction), the report is
run on it through the Makefile, and the executed notebook and its HTML must carry that log's
numbers under the right headings, answer first. A wrong value stops before papermill starts with
one line naming the make variable; a log with no timed steps still gets a report of what it
holds; a file name is never run as a command. ``make app`` culls the kernels of closed pages.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from _browser import free_port
from _procs import stop_process_group
from _realdata import realdata  # noqa: F401  (fixture)
from _scripts import load_script
from _steplog import N_RANKS, SLOW_RANK, write_step_log

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_team_report.ipynb"
# The sections of a report on a log with timed steps, in reading order (the answer first).
SECTIONS = ["The answer", "Largest losses", "Stragglers", "Checks", "Facts used", "Waterfall", "Scorecard",
            "Steady-state window", "Figures"]
# Words of the template's own cells (tagged template) that must never reach a report.
TEMPLATE_PROSE = ("Three ways to run", "sample-reading", "Questions to try", "Cells tagged", "The setup cell",
                  "Nothing below needs editing", "The template behind")

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _make(*args: str, target: str = "report", cwd: Path = ROOT) -> subprocess.CompletedProcess:
    # -o: never rebuild the virtual environment here; PY: the interpreter running the tests.
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", target, f"PY={sys.executable}", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def _own_lines(stderr: str) -> list[str]:
    """stderr without make's own trailer ('make: *** [Makefile:N: report] Error 2')."""
    return [line for line in stderr.splitlines() if line.strip() and not line.startswith("make: ***")]


def _outputs(nb: dict) -> str:
    text = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text.append("".join(out["text"]))
            elif out.get("output_type") == "error":
                text.append(f"{out['ename']}: {out['evalue']}")
            else:
                data = out.get("data", {})
                text.append("".join(data.get("text/html", "")) or "".join(data.get("text/plain", "")))
    return "\n".join(text)


def _headings(html_text: str, level: int = 2) -> list[str]:
    return [re.sub(r"<[^>]+>", "", h).strip()
            for h in re.findall(rf"<h{level}[^>]*>(.*?)</h{level}>", html_text, flags=re.S)]


def _visible_text(html_text: str) -> str:
    body = re.sub(r"<(script|style)\b.*?</\1>", "", html_text, flags=re.S | re.I)
    return html.unescape(re.sub(r"<[^>]+>", " ", body))


@needs_make
def test_make_report_on_a_team_log(tmp_path):
    # A folder and a file name with a space and a quote: names, not shell syntax.
    (tmp_path / "team runs").mkdir()
    log = write_step_log(tmp_path / "team runs" / "team's steps.csv")
    out = tmp_path / "reports"
    r = _make(f"LOG={log}", f"REPORTS={out}", "ACCELERATOR=A100 SXM", "DTYPE=bf16", f"GPUS={N_RANKS}",
              "FLOPS_PER_SAMPLE=1.5e12", "GLOBAL_BATCH=256")
    assert r.returncode == 0, r.stdout + r.stderr
    nb_path, page = out / "team's steps-report.ipynb", out / "team's steps-report.html"
    assert nb_path.exists() and page.exists(), sorted(p.name for p in out.iterdir())
    nb = json.loads(nb_path.read_text())
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in nb["cells"])
    assert not any(o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))
    body = page.read_text()
    # the title names the log and dates the report (the CSV states no date of its own)
    [title] = _headings(body, 1)
    assert re.fullmatch(r"MFU report: team's steps\.csv \(table log\), report of \d{4}-\d{2}-\d{2}",
                        html.unescape(title)), title
    assert _headings(body) == SECTIONS
    text = _visible_text(body)
    # By construction: one step is 256 samples × 1.5e12 FLOPs = 3.84e14 FLOPs; the median rank
    # takes 0.5 s, so 7.68e14 FLOP/s on 4 × 312 TFLOP/s (A100 SXM bf16 dense, NVIDIA's A100
    # datasheet) is 61.54 %. Rank 3 holds every step 0.1 s: 3.7 s of 26.2 s wall time (36 steps
    # of 0.6 s, the 4 s gap, the last 0.6 s step) is 14.12 %; the gap is 4.0 s = 15.27 %.
    assert "Steady-state MFU: 61.54%" in text
    assert "1. unaccounted: 4.000 s (15.27% of wall time)" in text
    assert "2. stragglers: 3.700 s (14.12% of wall time)" in text
    assert f"Culprit: rank {SLOW_RANK}" in text
    assert "wall time 26.200 s" in text
    assert "skipped 1: 1 × not a finite number ('rank'; first at line 31" in text  # the column is the detail
    assert "make variable GPUS" in text and "A100 SXM" in text
    assert "<img" in body
    # the answer comes before the detail: the MFU line precedes the waterfall table
    assert text.index("Steady-state MFU") < text.index("Waterfall") < text.index("Scorecard")
    for prose in TEMPLATE_PROSE:
        assert prose not in body, prose
    assert "Traceback" not in body


def test_headings_are_printed_with_their_content():
    """Every heading of the committed report is an output of the cell that prints its content.

    The old notebook had each heading in a markdown cell *after* the output it named, so once the
    sample's commentary was stripped, the MFU sat under "What was read" and "Findings, in order"
    had nothing under it.
    """
    nb = json.loads(NOTEBOOK.read_text())
    for cell in nb["cells"]:
        if cell["cell_type"] == "markdown":
            assert "template" in cell["metadata"].get("tags", []), "".join(cell["source"])[:80]
    html_outputs = ["".join(o.get("data", {}).get("text/html", "")) for c in nb["cells"]
                    for o in c.get("outputs", [])]
    sections = [h for h in html_outputs if "<h2>" in h]
    # the sample's facts are all given, so nothing is missing; its checkpoint advice comes
    # from checkpoint_write_s and checkpoint_every_steps, and its failure and restart from its events
    assert [_headings(h)[0] for h in sections] == [*SECTIONS[:3], "Checkpoint interval", "Downtime by cause",
                                                    *SECTIONS[3:]]
    for h in sections:  # each heading has its content below it, in the same output
        after = h.split("</h2>", 1)[1]
        assert re.search(r"<(p|table|ul)\b", after), h[:200]
    # the sample: 16 × H100 SXM bf16 (989.4 TFLOP/s, NVIDIA's H100 page), Llama 3 8B at 8,192
    # tokens (474.4 TFLOP per sample), 32 samples per step, a 2.401 s ideal step
    # (data/make_sample_team_log.py): 32 × 474.4e12 / 2.401 / (16 × 989.4e12) = 39.94 %
    assert "Steady-state MFU: 39.94%" in sections[0]
    assert "Culprit: rank 11" in _outputs(nb)


@needs_make
@pytest.mark.parametrize(("args", "named"), [
    (["ACCELERATOR=H10O"], "ACCELERATOR=H10O"),
    (["ACCELERATOR=A100 SXM", "DTYPE=fp8"], "DTYPE=fp8"),
    (["PRESET=mixtral-8x7", "SEQ_LEN=4096"], "PRESET=mixtral-8x7"),
    (["CHECKPOINT_S=-1"], "CHECKPOINT_S"),
    # argparse used to answer these itself: "argument --gpus: invalid int value: 'abc'"
    (["GPUS=abc"], "GPUS=abc: expected a whole number >= 1"),
    (["PRESET=llama3-8b", "SEQ_LEN=x"], "SEQ_LEN=x: expected a whole number >= 1"),
    (["NIC=XDR9"], "NIC=XDR9: not a link of the interconnect table"),
], ids=["accelerator-typo", "fp8-on-a100", "preset-typo", "negative-checkpoint", "gpus-not-a-number",
        "seq-len-not-a-number", "nic-typo"])
def test_a_wrong_value_is_one_line_before_papermill(tmp_path, args, named):
    # Before, papermill ran and printed an 80-98 line traceback with the useful line at the bottom.
    log = write_step_log(tmp_path / "steps.csv")
    out = tmp_path / "reports"
    r = _make(f"LOG={log}", f"REPORTS={out}", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    lines = _own_lines(r.stderr)
    assert len(lines) == 1 and named in lines[0], r.stderr
    assert "Traceback" not in r.stdout + r.stderr
    assert not out.exists(), "papermill must not start"


@needs_make
def test_a_home_grown_table_with_its_column_map(tmp_path):
    """The README's COLUMN_MAP/TIME_UNIT example: a CSV of its own column names, in milliseconds."""
    log = tmp_path / "steps.csv"
    # 5 steps of 500 ms back to back, logged by a team's own script
    log.write_text("iter,t0,t1\n" + "".join(f"{i},{500 * i},{500 * i + 500}\n" for i in range(5)))
    out = tmp_path / "reports"
    bad = _make(f"LOG={log}", f"REPORTS={out}", "FORMAT=table", "COLUMN_MAP=step:iter,start_s", "TIME_UNIT=ms")
    assert bad.returncode == 2 and len(_own_lines(bad.stderr)) == 1 and "COLUMN_MAP" in bad.stderr, bad.stderr
    assert not out.exists()
    r = _make(f"LOG={log}", f"REPORTS={out}", "FORMAT=table", "COLUMN_MAP=step:iter,start_s:t0,end_s:t1",
              "TIME_UNIT=ms", "GPUS=8", "ACCELERATOR=H100 SXM", "FLOPS_PER_STEP=1e15")
    assert r.returncode == 0, r.stdout + r.stderr
    text = _visible_text((out / "steps-report.html").read_text())
    # 1e15 FLOPs per 0.5 s step on 8 × 989.4 TFLOP/s (H100 SXM bf16 dense, NVIDIA's H100 page) = 25.27 %
    assert "Steady-state MFU: 25.27%" in text and "ideal 500.000 ms" in text, text[:1500]


@needs_make
def test_the_nic_reaches_the_report(tmp_path, realdata):  # noqa: F811
    """NIC=NDR reaches the report's communication section as --nic does mfu analyze."""
    log = realdata / "nccl" / "DataDog_datadog-agent_nccl_inspector_v4.0_real_payload_3rank.excerpt.jsonl"
    out = tmp_path / "reports"
    r = _make(f"LOG={log}", f"REPORTS={out}", "NIC=NDR")
    assert r.returncode == 0, r.stdout + r.stderr
    text = _visible_text(next(out.glob("*-report.html")).read_text())
    # the Inspector line: 2,360,832 B in 5.663 ms among 3 ranks, busbw x 2(3-1)/3 = 555.8 MB/s; NDR 50 GB/s each way
    assert "1.11% of InfiniBand NDR" in text and "give NIC=NAME" not in text


@needs_make
def test_a_log_with_no_timed_steps_gets_a_report(tmp_path, realdata):  # noqa: F811
    """The real sacct output has job steps but no training steps: the report says what it holds."""
    log = realdata / "slurm" / "llnl-maestrowf_pr405_sacct_default_output.txt"
    out = tmp_path / "reports"
    r = _make(f"LOG={log}", f"REPORTS={out}")
    assert r.returncode == 0, r.stdout + r.stderr  # before: a 51-line traceback, "no timed steps to plot"
    body = (out / "llnl-maestrowf_pr405_sacct_default_output-report.html").read_text()
    assert _headings(body) == ["The answer", "Stragglers", "Checks", "Facts used", "What the log holds"]
    text = _visible_text(body)
    assert "MFU: not measurable: the log has no timed steps" in text
    assert "no timed steps" in text.split("Checks", 1)[1]  # the load note, as a check
    assert "Traceback" not in body and "Error" not in text


@needs_make
def test_make_report_never_runs_what_a_file_name_says(tmp_path):
    # LOG used to be pasted inside double quotes, so backticks and $(...) in it ran.
    marker = tmp_path / "PWNED"
    for name in (f"x`touch {marker}`.log", 'x"; touch ' + str(marker) + '; ".log', f"x$(touch {marker}).log"):
        r = _make(f"LOG={name}", f"REPORTS={tmp_path / 'reports'}")
        assert r.returncode == 2, r.stdout + r.stderr
        assert not marker.exists(), name
        if "$(" not in name:  # make itself reads $(...) as a (here empty) make variable
            assert f"LOG={name}: no such file or directory" in r.stderr


@needs_make
def test_make_report_without_the_log_fails_clearly(tmp_path):
    missing = tmp_path / "no_such_log.csv"
    r = _make(f"LOG={missing}", f"REPORTS={tmp_path / 'reports'}")
    assert r.returncode == 2
    assert _own_lines(r.stderr) == [f"make report: LOG={missing}: no such file or directory"]
    assert not (tmp_path / "reports").exists()


@needs_make
def test_a_run_that_fails_says_why_in_one_line(tmp_path):
    """A failure inside the notebook: its error in one line and the notebook that keeps it.

    An interpreter wrapper makes papermill inject a parameter the checks never see
    (n_accelerators='abc'), so the notebook itself raises.
    """
    wrapper = tmp_path / "py"
    wrapper.write_text(f'#!/bin/sh\nif [ "$2" = papermill ]; then '
                       f'exec {sys.executable} "$@" -p n_accelerators abc; fi\n'
                       f'exec {sys.executable} "$@"\n')
    wrapper.chmod(0o755)
    log, out = write_step_log(tmp_path / "steps.csv"), tmp_path / "reports"
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", "report", f"PY={wrapper}", f"LOG={log}",
           f"REPORTS={out}"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2, r.stdout + r.stderr  # make's own status for a failed recipe
    nb = out / "steps-report.ipynb"
    assert _own_lines(r.stderr) == [f"make report: the report failed (ValueError: invalid literal for int() with "
                                    f"base 10: 'abc'); the error is in {nb}"], r.stderr
    errors = [o for c in json.loads(nb.read_text())["cells"] for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert [e["ename"] for e in errors] == ["ValueError"]


def test_a_failed_run_keeps_its_error_cell(tmp_path):
    out = tmp_path / "failed.ipynb"
    cmd = [sys.executable, "-m", "papermill", str(NOTEBOOK), str(out), "--cwd", str(NOTEBOOK.parent),
           "--no-progress-bar", "-r", "log_path", str(tmp_path / "gone.csv")]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0
    errors = [o for c in json.loads(out.read_text())["cells"] for o in c.get("outputs", [])
              if o.get("output_type") == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "FileNotFoundError"
    assert "no such file or directory" in errors[0]["evalue"] and "make report LOG=" in errors[0]["evalue"]


def test_sample_log_is_what_its_generator_writes():
    mod = load_script("data/make_sample_team_log.py")
    assert mod.csv_text() == (ROOT / "data" / "sample_team_log.csv").read_text(), (
        "data/sample_team_log.csv is stale: run data/make_sample_team_log.py")


def test_parameters_cell_is_tagged_and_reads_the_environment():
    nb = json.loads(NOTEBOOK.read_text())
    tagged = [c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", [])]
    assert len(tagged) == 1
    src = "".join(tagged[0]["source"])
    assert 'log_path = os.environ.get("MFU_REPORT_LOG", "")' in src
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code[1] is tagged[0], "the parameters cell comes right after the setup cell"


# --- make app: the workshop app culls the kernels of closed pages ---------------------------


def test_make_app_culls_by_default():
    out = subprocess.run(["make", "-pn", "-o", ".venv/.installed", "app"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert re.search(r"^CULL_IDLE_S = 600$", out, flags=re.M), "10 minutes idle without a page"
    assert re.search(r"^CULL_INTERVAL_S = 60$", out, flags=re.M)


@needs_make
def test_make_app_culls_a_kernel_whose_page_is_gone(tmp_path):
    """A page load starts a kernel; with no browser to keep it connected it is shut down when idle.

    Voila 0.5 takes jupyter-server's MappingKernelManager settings; the culling lines come from
    its log, so they prove the settings reached the running server.
    """
    port = free_port()
    log = tmp_path / "voila.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(
            ["make", "--no-print-directory", "-o", ".venv/.installed", "app", f"PY={sys.executable}",
             f"PORT={port}", "CULL_IDLE_S=2", "CULL_INTERVAL_S=1"],
            cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        deadline = time.monotonic() + 90
        while True:
            try:  # the page render runs the notebook in a fresh kernel
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=120) as resp:
                    assert resp.status == 200
                break
            except (urllib.error.URLError, ConnectionError):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.5)
        deadline = time.monotonic() + 60
        while "Kernel shutdown" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.5)
        text = log.read_text()
        assert "Culling kernels with idle durations > 2 seconds at 1 second intervals" in text, text[-2000:]
        assert re.search(r"Culling 'idle' kernel 'python3' \(([0-9a-f-]+)\) with 0 connections", text), text[-2000:]
        kernel = re.search(r"Culling 'idle' kernel 'python3' \(([0-9a-f-]+)\)", text).group(1)
        assert f"Kernel shutdown: {kernel}" in text
    finally:
        stop_process_group(proc)
