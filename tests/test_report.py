"""The team report: ``make report LOG=...`` runs notebook 08 headless on a team's own log.

A small per-rank step log is written here (its facts are known by construction), the report is
run on it with papermill through the Makefile, and the executed notebook must carry the log's
facts; the HTML export must exist. A log that does not exist fails with a clear message, and a
failed run keeps its error cell. The sample log the notebook uses by default must be exactly
what its generator writes.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_team_report.ipynb"
N_STEPS, N_RANKS, SLOW_RANK = 37, 4, 3

needs_make = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")


def _write_log(path: Path) -> Path:
    """37 steps × 4 ranks of 0.5 s (rank 3 takes 0.6 s), a checkpoint gap after step 20, one bad row."""
    lines = ["attempt,step,rank,start_s,end_s,compute_s"]
    t = 0.0
    for step in range(1, N_STEPS + 1):
        for rank in range(N_RANKS):
            compute = 0.6 if rank == SLOW_RANK else 0.5
            lines.append(f"0,{step},{rank},{t:.3f},{t + compute:.3f},{compute}")
        t += 0.6 + (4.0 if step == 20 else 0.0)
    lines.insert(30, "0,7,oops,3.600,4.100,0.5")  # line 31: a rank that is not a number
    path.write_text("\n".join(lines) + "\n")
    return path


def _make(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    # -o: never rebuild the virtual environment here; PY: the interpreter running the tests.
    cmd = ["make", "--no-print-directory", "-o", ".venv/.installed", "report", f"PY={sys.executable}", *args]
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=300)


def _outputs(nb: dict) -> str:
    text = []
    for cell in nb["cells"]:
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream":
                text.append("".join(out["text"]))
            elif out.get("output_type") == "error":
                text.append(f"{out['ename']}: {out['evalue']}")
            else:
                text.append("".join(out.get("data", {}).get("text/plain", "")))
    return "\n".join(text)


@needs_make
def test_make_report_on_a_team_log(tmp_path):
    # A folder and a file name with a space and a quote: names, not shell syntax.
    (tmp_path / "team runs").mkdir()
    log = _write_log(tmp_path / "team runs" / "team's steps.csv")
    out = tmp_path / "reports"
    r = _make(f"LOG={log}", f"REPORTS={out}", "ACCELERATOR=A100 SXM", "DTYPE=bf16",
              "FLOPS_PER_SAMPLE=1.5e12", "GLOBAL_BATCH=256")
    assert r.returncode == 0, r.stdout + r.stderr
    nb_path, html = out / "team's steps-report.ipynb", out / "team's steps-report.html"
    assert nb_path.exists() and html.exists(), sorted(p.name for p in out.iterdir())
    nb = json.loads(nb_path.read_text())
    assert any("injected-parameters" in c["metadata"].get("tags", []) for c in nb["cells"])
    text = _outputs(nb)
    assert not any(o.get("output_type") == "error" for c in nb["cells"] for o in c.get("outputs", []))
    body = html.read_text()
    assert ("team's steps.csv" in body or "team&#x27;s steps.csv" in body or "team&#39;s steps.csv" in body)
    # the log's facts, as the shared answer states them: its steps, the slow rank by name, the bad row
    # skipped with its line number, the peak asked for
    seen = body + text
    assert f"{N_STEPS} useful steps" in seen, "the answer counts the log's steps"
    assert f"Culprit: rank {SLOW_RANK}" in seen
    assert "1 × not a finite number in &#x27;rank&#x27; (first at line 31)" in seen or \
        "1 × not a finite number in 'rank' (first at line 31)" in seen
    assert "A100 SXM bf16" in seen and "<img" in body
    # the commentary written for the sample is left out of a team's report
    prose = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert not any("sample-reading" in c["metadata"].get("tags", []) for c in nb["cells"])
    for sample_fact in ("2,722 records", "39.94", "loses 46 %", "first attempt ran until"):
        assert sample_fact not in prose and sample_fact not in body, sample_fact


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
    assert r.returncode != 0
    assert f"LOG={missing}: no such file or directory" in r.stderr
    assert not (tmp_path / "reports").exists()


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
    spec = importlib.util.spec_from_file_location("make_sample_team_log", ROOT / "data" / "make_sample_team_log.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
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


# --------------------------------------------------------------------------------------------
# mfu_toolkit.report.html_report: the same Answer as `mfu analyze`, with figures


def _team_run(tmp_path: Path):
    from mfu_toolkit.analysis import apply_inputs
    from mfu_toolkit.io import load_run

    log = _write_log(tmp_path / "team.csv")
    with pytest.warns(Warning):  # the bad row is skipped with a warning
        run = load_run(log)
    return apply_inputs(run, accelerator="A100 SXM", dtype="bf16", n_accelerators=N_RANKS, flops_per_sample=1.5e12,
                        global_batch=256)


def _h2(body: str) -> list[str]:
    return re.findall(r"<h2>(.*?)</h2>", body)


def test_html_report_renders_the_answer_first_with_its_numerator(tmp_path):
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.report import html_report

    run = _team_run(tmp_path)
    body = html_report(run, path=tmp_path / "r.html")
    assert (tmp_path / "r.html").read_text() == body
    assert _h2(body) == ["The answer", "Largest losses", "Stragglers", "Checks", "Facts used", "Waterfall",
                         "Scorecard", "Figures", "Steady-state window"]
    title = re.search(r"<title>(.*?)</title>", body).group(1)
    assert title.startswith("MFU report: team.csv (table), report of ")
    # the same text as the terminal answer, section by section
    answer = build_answer(run)
    for heading, fragment in answer.sections():
        assert fragment in body, heading
    # 1.5e12 FLOPs per sample × 256 samples per step = 384 TFLOP per step
    assert "numerator: 384 TFLOP model FLOPs per step, from apply_inputs(flops_per_sample=...)" in body
    assert f"Culprit: rank {SLOW_RANK}" in body
    assert body.count("data:image/png;base64,") == 4  # waterfall, timeline, step times, rank heatmap
    assert body.index("Waterfall: from steady-state") > body.index("<h2>Waterfall</h2>")


def test_html_report_of_a_log_without_timed_steps_says_what_it_holds(tmp_path):
    from mfu_toolkit.report import html_report
    from mfu_toolkit.run import Run, RunMeta

    events = [{"kind": "init", "start_s": 0.0, "end_s": 5.0, "attempt": 0, "rank": -1, "detail": ""}]
    body = html_report(Run.build(None, events, RunMeta(name="no steps")))
    assert _h2(body) == ["The answer", "Stragglers", "Checks", "Facts used", "What the log holds"]
    assert "no timed steps" in body and "<img" not in body and "Wall time: 0.000 s" not in body


def test_html_report_refuses_what_is_not_an_answer(tmp_path):
    from mfu_toolkit.report import html_report

    with pytest.raises(TypeError, match="answer must be an Answer"):
        html_report(_team_run(tmp_path), answer="text")
