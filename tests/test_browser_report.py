"""The team report's HTML, on one real log of every format, read in headless Chromium.

Each report is made the way ``make report`` makes it (papermill runs notebook 08 with the
parameters the Makefile passes, the template's own cells are stripped, nbconvert writes the HTML
without code), called in-process to save an interpreter start per log. Every page must open with
a title that names its log, then the answer, then the other sections in the builder's reading
order, each heading with content under it; no traceback, no error text, no template prose; and a
log with timed steps shows its figures. Logs with no timed steps (Lightning's metrics.csv, sacct,
the TensorBoard dummy) get "What the log holds" instead of figures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from _browser import collect_console_errors
from _realdata import realdata  # noqa: F401  (fixture)

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "notebooks" / "08_team_report.ipynb"
# One real log per format under MFU_REALDATA, with the make variables a team would add.
CASES = {
    "megatron": ("megatron/NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log",
                 {"preset": "mixtral-8x7b", "seq_len": 4096, "n_accelerators": 16, "accelerator": "H100 SXM"}),
    "megatron_json": ("megatron/megatron_golden_values_gpt3_tp4_pp1_resume_torch_dist_dgx_h100.json", {}),
    "mlperf": ("mlperf/v4.1_NVIDIA_eos_n64_ngc24.09_nemo_gpt3_result_0.txt", {}),
    "torchtitan": ("torchtitan/pytorch-torchtitan_pr2389_all_ranks_unprefixed.log", {}),
    "kineto": ("kineto/HTA_nccl_parser_config_nccl_data_rank0_ws2_A100.json.gz", {}),
    "hf_trainer": ("hf_trainer/Jaong_Checkpoint-of-CPT_trainer_state.json", {}),
    "lightning": ("lightning/0Xero7_slm_training_version_12_metrics.csv", {}),
    "sacct": ("slurm/llnl-maestrowf_pr405_sacct_default_output.txt", {}),
    "tensorboard": ("tensorboard/megatron_deepseek_mtp_dummy", {}),
    "wandb": ("wandb/alpaca7b_fsdp8xA100_run-v7i3k2p0_history_from_dotwandb.csv", {}),
    "deepspeed": ("deepspeed/deepspeedai_DeepSpeedExamples_dschat_step1_sft_opt-1.3b_gbs128.log", {}),
    "nemo": ("nemo/NVIDIA_NeMo_resiliency-demo_cell22_crash_and_injob_restart.extracted.log", {}),
    "maxtext": ("maxtext/AI-Hypercomputer_maxtext_run_gpt3_1node_h100x8.sh", {}),
    "straggler_ops": ("straggler_ops/trace-ST.parquet", {}),
    "dcgm": ("dcgm/NVIDIA_DCGM_issue244_dcgmi_dmon_8gpu_NA_multiplexing.excerpt.txt", {}),
}
NO_TIMED_STEPS = {"lightning", "sacct", "tensorboard", "dcgm"}
# The reading order of the answer's blocks (mfu_toolkit.render.blocks.blocks), then the figures.
ORDER = ["The answer", "Dense MFU and embedding bandwidth", "Hang (Flight Recorder)", "Missing facts",
         "Largest losses", "Stragglers", "Checkpoint interval", "Downtime by cause", "Communication", "Checks",
         "Facts used", "What the log holds", "Waterfall", "Scorecard", "Steady-state window", "Figures"]
TEMPLATE_PROSE = ("Three ways to run", "sample-reading", "Questions to try", "Cells tagged", "The setup cell",
                  "Nothing below needs editing", "The template behind", "text between the cells")

_PAGE = """() => {
  const h1 = Array.from(document.querySelectorAll('h1')).map(h => h.textContent.replace(/\\u00b6/g, '').trim());
  const h2 = Array.from(document.querySelectorAll('h2')).map(h => {
    const next = h.nextElementSibling;
    return {text: h.textContent.replace(/\\u00b6/g, '').trim(), followed: !!next && next.tagName !== 'H2'};
  });
  const imgs = Array.from(document.querySelectorAll('img')).map(i => i.naturalWidth);
  return {h1, h2, imgs, text: document.body.innerText};
}"""


def _report(log: Path, params: dict, out: Path) -> Path:
    """What make report does: papermill with the Makefile's parameters, strip, HTML without code."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter
    from nbconvert.preprocessors import TagRemovePreprocessor

    nb_path = out / f"{log.name}-report.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(nb_path), cwd=str(NOTEBOOK.parent), progress_bar=False,
                               parameters={"log_path": str(log), "interface": "make", "log_format": "auto",
                                           "report_date": "2026-01-31", **params})
    nb = nbformat.read(nb_path, as_version=4)
    strip = TagRemovePreprocessor(remove_cell_tags={"template"}, enabled=True)
    nb, _ = strip.preprocess(nb, {})
    body, _ = HTMLExporter(exclude_input=True).from_notebook_node(nb)
    page = nb_path.with_suffix(".html")
    page.write_text(body)
    return page


@pytest.fixture(scope="module")
def pages(tmp_path_factory, realdata):  # noqa: F811
    out = tmp_path_factory.mktemp("reports")
    return {fmt: _report(realdata / rel, params, out) for fmt, (rel, params) in CASES.items()}


@pytest.fixture(scope="module")
def context(browser):
    ctx = browser.new_context(viewport={"width": 1200, "height": 900})
    # nbconvert's page links require.js and MathJax from CDNs: offline, answer nothing at once
    ctx.route(re.compile(r"^https?://"), lambda route: route.abort())
    yield ctx
    ctx.close()


@pytest.mark.parametrize("fmt", list(CASES))
def test_report_reads_in_order(pages, context, fmt):
    page = context.new_page()
    errors = collect_console_errors(page)
    try:
        page.goto(pages[fmt].as_uri(), wait_until="domcontentloaded")
        got = page.evaluate(_PAGE)
    finally:
        page.close()
    log_name = Path(CASES[fmt][0]).name
    assert got["h1"] == [got["h1"][0]] and got["h1"][0].startswith(f"MFU report: {log_name} ("), got["h1"]
    headings = [h["text"] for h in got["h2"]]
    assert headings and headings[0] == "The answer", headings
    assert all(h in ORDER for h in headings), headings
    assert [ORDER.index(h) for h in headings] == sorted(ORDER.index(h) for h in headings), headings
    assert all(h["followed"] for h in got["h2"]), f"a heading with nothing under it: {got['h2']}"
    text = got["text"]
    for bad in ("Traceback", "Error", *TEMPLATE_PROSE):
        assert bad not in text, f"{fmt}: {bad!r} in the report"
    if fmt in NO_TIMED_STEPS:
        assert "What the log holds" in headings and "Figures" not in headings, headings
        assert "MFU: not measurable: the log has no timed steps" in text
        assert "no timed steps" in text.split("Checks", 1)[1], "the load note, among the checks"
    else:
        assert {"Largest losses", "Waterfall", "Figures"} <= set(headings), headings
        assert "Steady-state MFU" in text and "denominator" in text and "numerator" in text
        assert got["imgs"] and all(w > 0 for w in got["imgs"]), got["imgs"]
    assert not [e for e in errors if "net::ERR_FAILED" not in e], errors


def test_make_report_html_is_one_file_that_loads_nothing(browser, tmp_path):
    """``make report`` (the sample log) writes an HTML file that opens from disk with the network blocked:
    the lab template's CDN scripts (require.js, MathJax) are gone, and since the report notebook saves no
    widget state and holds no math, nothing needs embedding: no request but the file itself."""
    import json
    import shutil
    import subprocess
    import sys

    from _browser import block_network

    if shutil.which("make") is None:
        pytest.skip("needs GNU make")
    r = subprocess.run(["make", "--no-print-directory", "-o", ".venv/.installed", "report", f"PY={sys.executable}",
                        f"REPORTS={tmp_path}"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    nb = json.loads((tmp_path / "sample-report.ipynb").read_text())
    assert "widgets" not in nb["metadata"], "the report saves widget state: its explorers must be embedded"
    html = tmp_path / "sample-report.html"
    text = html.read_text()
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=\"https?:", text), "the report links a remote file"
    assert "require.min.js" not in text and "MathJax" not in text
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    attempted = block_network(context, ("file:", "data:"))
    requested: list[str] = []
    try:
        page = context.new_page()
        errors = collect_console_errors(page)
        page.on("request", lambda req: requested.append(req.url))
        page.goto(html.as_uri(), wait_until="load")
        got = page.evaluate(_PAGE)
        page.close()
    finally:
        context.close()
    assert not attempted and not errors, (attempted, errors)
    assert [u for u in requested if not u.startswith("data:")] == [html.as_uri()], requested
    assert got["h1"] and got["h1"][0].startswith("MFU report: "), got["h1"]
    assert got["imgs"] and all(w > 0 for w in got["imgs"]), got["imgs"]
