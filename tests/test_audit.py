"""``mfu audit``: the peak a framework's own TFLOP/s and MFU imply, matched to the registry, and the cause.

Real logs (``MFU_REALDATA``) pin every number to the raw file with a regex; small torchtitan-format
logs written here cover the causes the real ones do not show (sparse as dense, another dtype, per
package vs per device, another device's peak), a log without claims and a file that is not a log.
"""

from __future__ import annotations

import csv
import json
import re
import statistics
from pathlib import Path

import pytest
from _realdata_b import realdata_dir

from mfu_toolkit.audit import (
    audit_frame,
    audit_paths,
    audit_text,
    exit_status,
    implied_peak,
)
from mfu_toolkit.cli import main

CSV = Path(__file__).resolve().parents[1] / "mfu_toolkit" / "accelerators.csv"


def _registry_dense(name: str, dtype: str) -> float:
    """A dense peak read from the shipped CSV's raw text (its own datasheet column), not the API."""
    m = re.search(rf"^{re.escape(name)},[^,]+,{dtype},([\d.]+),", CSV.read_text(), re.M)
    assert m, f"{name} {dtype} not in {CSV}"
    return float(m.group(1))


def _titan(path: Path, device: str | None, tflops: str, mfu: str, steps: int = 4) -> Path:
    """A torchtitan-format log: an optional capacity line, then ``steps`` step lines."""
    lines = ([f"[titan] 2025-01-01 00:00:00,000 - root - INFO - CUDA capacity: {device} with 79.10GiB memory"]
             if device else [])
    for s in range(1, steps + 1):
        lines.append(f"[titan] 2025-01-01 00:00:{s:02d},000 - root - INFO - step: {s:2d}  loss:  {8 - s * 0.1:.4f}  "
                     f"memory: 10.00GiB(12.63%)  tps: 1,000  tflops: {tflops}  mfu: {mfu}")
    path.write_text("\n".join(lines) + "\n")
    return path


def _one(path: Path, **kw):
    rows = audit_paths([path], **kw)
    assert len(rows) == 1
    return rows[0]


# --------------------------------------------------------------------------------------------
# the causes, on logs written here (each number computed by hand in the comment)


def test_sparse_peak_as_dense(tmp_path):
    # 100.00 / 16.03 % = 623.8 TFLOP/s = the A100's bf16 2:4-sparse peak (624), twice its dense 312
    row = _one(_titan(tmp_path / "a.log", "NVIDIA A100-SXM4-80GB", "100.00", "16.03%"))
    assert row.device_printed == "NVIDIA A100-SXM4-80GB" and row.device_registry == "A100 SXM"
    assert row.implied_peak_tflops == pytest.approx(100 / 0.1603)
    assert row.kind == "mismatch" and row.cause == "sparse peak as dense"
    assert row.peak_match.startswith("A100 SXM bf16 sparse")


def test_another_dtypes_peak_fp8_run_divided_by_bf16(tmp_path):
    # an fp8 run on H100: 500.00 / 50.54 % = 989.3, the bf16 (= fp16) dense peak, not fp8's 1,978.9
    row = _one(_titan(tmp_path / "a.log", "NVIDIA H100 80GB HBM3", "500.00", "50.54%"), dtype="fp8")
    assert row.dtype == "fp8"
    assert row.cause == "another dtype's peak (bf16/fp16 vs fp8)" and row.kind == "mismatch"


def test_equal_peaks_are_named_together(tmp_path):
    # a bf16 run on H100 at 1,979: the bf16 sparse peak and the fp8 dense peak are both 1,978.9
    row = _one(_titan(tmp_path / "a.log", "NVIDIA H100 80GB HBM3", "400.00", "20.21%"))
    assert "sparse peak as dense" in row.cause and "another dtype's peak (fp8 vs bf16)" in row.cause


def test_per_package_vs_per_device(tmp_path):
    # MI250X: 383 TFLOP/s bf16 per package of 2 GCDs; a per-GCD count divided by 383: 100 / 26.11 % = 383.0
    row = _one(_titan(tmp_path / "a.log", "AMD Instinct MI250X", "100.00", "26.11%"))
    assert row.device_registry == "MI250X"
    assert row.cause == "per-package vs per-device"


def test_fallback_peak_of_another_device(tmp_path):
    # an L4 (121 TFLOP/s bf16) divided by the A100's 312: 31.20 / 10.00 % = 312
    row = _one(_titan(tmp_path / "a.log", "NVIDIA L4", "31.20", "10.00%"))
    assert row.device_registry == "L4" and row.kind == "mismatch"
    assert row.cause.startswith("fallback peak of another device (A100")
    assert "312" in row.cause


def test_own_dense_peak_agrees(tmp_path):
    # 494.70 / 50.00 % = 989.4 = H100 SXM bf16 dense
    row = _one(_titan(tmp_path / "a.log", "NVIDIA H100 80GB HBM3", "494.70", "50.00%"))
    assert row.kind == "agrees" and row.cause == "agrees"
    assert row.their_mfu_on_registry_peak == pytest.approx(494.7 / _registry_dense("H100 SXM", "bf16"))


def test_peak_of_no_row_is_a_mismatch(tmp_path):
    # 100 / 7 % = 1,428.6: no registry row within 1.5 %
    row = _one(_titan(tmp_path / "a.log", "NVIDIA H100 80GB HBM3", "100.00", "7.00%"))
    assert row.kind == "mismatch" and row.cause.startswith("peak matches no registry row (1,428.57")


def test_no_device_is_not_comparable_but_names_the_peak(tmp_path):
    row = _one(_titan(tmp_path / "a.log", None, "494.70", "50.00%"))
    assert row.kind == "not comparable"
    assert row.cause.startswith("not comparable: no device stated or given; its peak 989.4 is H100 SXM bf16 dense")
    # the device given as a fact settles it
    assert _one(tmp_path / "a.log", accelerator="H100").kind == "agrees"


def test_log_without_claims(tmp_path):
    p = tmp_path / "old.log"
    p.write_text("[titan] 2025-01-01 00:00:01,000 - root - INFO - step:  1  loss:  8.0000  wps: 1,000\n"
                 "[titan] 2025-01-01 00:00:02,000 - root - INFO - step:  2  loss:  7.0000  wps: 1,000\n")
    row = _one(p)
    assert row.format == "torchtitan" and row.claimed_tflops is None and row.claimed_mfu is None
    assert row.cause == "not comparable: the log prints no TFLOP/s or MFU of its own"


def test_file_that_is_not_a_log_is_one_row(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("shopping list\neggs\n")
    row = _one(p)
    assert row.kind == "error" and row.error and "\n" not in row.error and str(p) in row.error
    assert exit_status([row]) == 2


def test_implied_peak_refuses_non_positive():
    with pytest.raises(ValueError, match="must be > 0"):
        implied_peak(100.0, 0.0)


# --------------------------------------------------------------------------------------------
# folders, output, exit status


def test_folder_takes_detected_files_and_says_what_it_left_out(tmp_path):
    _titan(tmp_path / "a.log", "NVIDIA A100-SXM4-80GB", "100.00", "16.03%")
    (tmp_path / "notes.txt").write_text("not a log\n")
    sub = tmp_path / "sub"
    sub.mkdir()
    _titan(sub / "b.log", "NVIDIA H100 80GB HBM3", "494.70", "50.00%")
    with pytest.warns(UserWarning, match=r"1 file\(s\) no format detects, left out: notes.txt"):
        rows = audit_paths(tmp_path)
    assert [Path(r.file).name for r in rows] == ["a.log"]
    with pytest.warns(UserWarning):
        rows = audit_paths(tmp_path, recursive=True)
    assert sorted(Path(r.file).name for r in rows) == ["a.log", "b.log"]


def test_exit_status():
    from mfu_toolkit.audit import AuditRow

    ok, bad, err = AuditRow("a", kind="agrees"), AuditRow("b", kind="mismatch"), AuditRow("c", kind="error")
    assert exit_status([ok, bad]) == 0 and exit_status([ok, bad], strict=True) == 1
    assert exit_status([ok, err]) == 1 and exit_status([err]) == 2 and exit_status([]) == 2
    assert exit_status([ok, AuditRow("d", kind="not comparable")], strict=True) == 0


def test_cli_table_json_csv_and_status(tmp_path, capsys):
    _titan(tmp_path / "sparse.log", "NVIDIA A100-SXM4-80GB", "100.00", "16.03%")
    _titan(tmp_path / "fine.log", "NVIDIA A100-SXM4-80GB", "156.00", "50.00%")  # 312 = A100 bf16 dense
    assert main(["audit", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "sparse peak as dense" in out and "2 log(s): 1 agrees, 1 mismatch" in out
    assert main(["audit", str(tmp_path), "--strict"]) == 1
    capsys.readouterr()
    out_csv = tmp_path / "out" / "audit.csv"
    out_csv.parent.mkdir()
    assert main(["audit", str(tmp_path / "sparse.log"), "--json", "--csv", str(out_csv)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc[0]["cause"] == "sparse peak as dense" and isinstance(doc[0]["notes"], list)
    for key in ("file", "format", "framework", "device_printed", "device_registry", "claimed_tflops",
                "claimed_mfu", "implied_peak_tflops", "peak_match", "our_mfu", "ratio", "claim_checks"):
        assert key in doc[0]
    rec = list(csv.DictReader(out_csv.open()))
    assert rec[0]["cause"] == "sparse peak as dense" and float(rec[0]["claimed_mfu"]) == pytest.approx(0.1603)


def test_cli_user_errors(tmp_path, capsys):
    (tmp_path / "x.txt").write_text("nothing\n")
    assert main(["audit", str(tmp_path / "x.txt")]) == 2
    assert "no log loads" in capsys.readouterr().err
    assert main(["audit", str(tmp_path / "missing.log")]) == 2
    assert "no such file" in capsys.readouterr().err
    _titan(tmp_path / "a.log", None, "1.00", "1.00%")
    assert main(["audit", str(tmp_path / "a.log"), "--accelerator", "H999"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("mfu audit: error: unknown accelerator 'H999'") and "Traceback" not in err


# --------------------------------------------------------------------------------------------
# real logs: every expected number parsed from the raw file here


def _fields(path: Path, pattern: str) -> list[float]:
    return [float(m.group(1).replace(",", "")) for m in re.finditer(pattern, path.read_text(errors="replace"))]


def _titan_steps(path: Path) -> tuple[list[float], list[float]]:
    """torchtitan's tflops and mfu per step, the first line of each step (every rank prints the same step)."""
    seen: dict[int, tuple[float, float]] = {}
    for m in re.finditer(r"step:\s*(\d+)\s.*?tflops: ([\d.,]+)\s+mfu: ([\d.]+)%", path.read_text()):
        seen.setdefault(int(m.group(1)), (float(m.group(2).replace(",", "")), float(m.group(3)) / 100))
    return [t for t, _ in seen.values()], [u for _, u in seen.values()]


@pytest.mark.realdata
def test_torchtitan_pr2389_divides_by_the_b200_peak():
    src = realdata_dir("torchtitan", "pytorch-torchtitan_pr2389_all_ranks_unprefixed.log")
    t_steps, m_steps = _titan_steps(src)
    assert len(t_steps) == 2  # steps 4 and 5, step 4 printed by 7 ranks
    tflops, mfu = statistics.median(t_steps), statistics.median(m_steps)
    b200 = _registry_dense("B200", "bf16")  # 2,250 TFLOP/s, HGX B200 datasheet per GPU
    assert tflops / mfu == pytest.approx(2249.5, abs=0.1)
    assert abs(tflops / mfu / b200 - 1) < 0.015
    row = _one(src)
    assert row.claimed_tflops == pytest.approx(tflops) and row.claimed_mfu == pytest.approx(mfu)
    assert row.implied_peak_tflops == pytest.approx(tflops / mfu)
    assert row.peak_match.startswith("B200 bf16 dense") and row.kind == "not comparable"
    # with the device given as H100, the audit names the other device's peak
    row = _one(src, accelerator="H100")
    assert row.kind == "mismatch" and row.cause.startswith("fallback peak of another device (B200's 2,250")
    assert row.their_mfu_on_registry_peak == pytest.approx(tflops / _registry_dense("H100 SXM", "bf16"))


@pytest.mark.realdata
def test_torchtitan_pr1437_and_pr3393_peaks():
    folder = realdata_dir("torchtitan")
    rows = {Path(r.file).name: r for r in audit_paths(folder, accelerator="H100")}
    assert len(rows) == 3
    for name, peak in (("pytorch-torchtitan_pr1437_rank0_prefixed.log", ("H100 SXM", "agrees")),
                       ("pytorch-torchtitan_pr3393_rank0_steps22-29.log", ("A100 SXM", "mismatch"))):
        src = folder / name
        t_steps, m_steps = _titan_steps(src)
        t, m = statistics.median(t_steps), statistics.median(m_steps)
        row = rows[name]
        assert row.implied_peak_tflops == pytest.approx(t / m)
        assert row.peak_match.startswith(f"{peak[0]} bf16 dense") and row.kind == peak[1]
        assert abs(t / m / _registry_dense(peak[0], "bf16") - 1) < 0.015
        assert row.format == "torchtitan" and row.framework is None  # torchtitan lines name no framework


@pytest.mark.realdata
def test_megatron_tflops_per_gpu_on_the_registry_peak():
    src = realdata_dir("megatron", "NVIDIA-Megatron-LM_issue756_mixtral8x7b_16xH100_iterations.log")
    tflops = statistics.median(_fields(src, r"throughput per GPU \(TFLOP/s/GPU\): ([\d.]+)"))
    row = _one(src, accelerator="H100")
    assert row.framework == "Megatron-LM" and row.format == "megatron"
    assert row.claimed_tflops == pytest.approx(tflops) and row.claimed_mfu is None
    assert row.implied_peak_tflops is None  # no MFU printed, no implied peak
    assert row.their_mfu_on_registry_peak == pytest.approx(tflops / _registry_dense("H100 SXM", "bf16"))
    assert row.kind == "not comparable" and "model FLOPs" in row.cause


@pytest.mark.realdata
def test_maxtext_tflops_per_device_against_ours():
    src = realdata_dir("maxtext", "AI-Hypercomputer_maxtext_understand_logs_and_metrics_v5p8.md")
    steady = _fields(src, r"completed step: (?:[2-9]|\d\d+), seconds: [\d.]+, TFLOP/s/device: ([\d.]+)")
    row = _one(src)
    assert re.search(r"TFRT (TPU v5)\b", src.read_text()).group(1) == row.device_printed
    assert row.device_registry == "TPU v5p" and row.framework == "MaxText"
    assert row.claimed_tflops == pytest.approx(statistics.median(steady), rel=1e-3)
    assert row.claim_checks["tflops_per_accelerator"]["status"] == "ok"
    assert row.our_mfu is not None and row.kind == "agrees"
    assert row.ratio == pytest.approx(row.claim_checks["tflops_per_accelerator"]["ratio"])


@pytest.mark.realdata
def test_real_folders_table_fits_and_every_row_loads():
    rows = audit_paths([realdata_dir("torchtitan"), realdata_dir("megatron"), realdata_dir("maxtext")])
    assert rows and all(r.kind != "error" for r in rows) and exit_status(rows) == 0
    text = audit_text(rows)
    assert max(len(line) for line in text.splitlines()) <= 100
    frame = audit_frame(rows)
    assert len(frame) == len(rows) and {"cause", "implied_peak_tflops", "our_mfu"} <= set(frame.columns)
