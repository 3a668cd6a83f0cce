"""NVIDIA DCGM: dcgm-exporter ``/metrics`` text and ``dcgmi dmon`` tables.

Expected values come from the files themselves, read here with plain ``re`` (or quoted line by
line), and from hand counts written next to each assertion; never from the loader's own output.
"""

from __future__ import annotations

import math
import random
import re
import warnings
from pathlib import Path

import pandas as pd
import pytest
from _realdata import files, realdata  # noqa: F401
from _samples import (
    SACCT_TIMES,
    goodput_payloads,
    write_goodput_log,
    write_megatron,
    write_megatron_json,
    write_mlperf,
    write_sacct,
    write_table,
    write_tensorboard,
)
from _timing import explain, growth, linear_bound

from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.io.base import InternalLoadError, LoaderArgumentError
from mfu_toolkit.io.formats import dcgm
from mfu_toolkit.io.reading import read_head
from mfu_toolkit.run import LoadError, LoadWarning, Run, SchemaError

DOC = "NVIDIA_cloud-native-docs_gpu-telemetry_dcgm-exporter_DOC_EXAMPLE.rst"
I68 = "NVIDIA_dcgm-exporter_issue68_a30_mig_before_after_tf-benchmark.excerpt.txt"
I151 = "NVIDIA_DCGM_issue151_dcgmi_dmon_mig_gpu-i_entities.excerpt.txt"
I244 = "NVIDIA_DCGM_issue244_dcgmi_dmon_8gpu_NA_multiplexing.excerpt.txt"
I272 = "NVIDIA_dcgm-exporter_issue272_lowercase_names_pod_labels.excerpt.txt"
I512 = "NVIDIA_dcgm-exporter_issue512_h100_mig_full_labels.excerpt.txt"
I166 = "kubernetes-sigs_dra-driver-nvidia-gpu_issue166_a100_mig_inference.excerpt.txt"

# A sample line as the files print it: optional quote/indent, NAME{labels} value.
SAMPLE = re.compile(r"^[> ]*(DCGM_FI_\w+)\{([^}]*)\}\s+(\S+)\s*$", re.IGNORECASE)
LABEL = re.compile(r'(\w+)\s*=\s*"([^"]*)"')


def _samples_of(path: Path) -> list[tuple[int, str, dict[str, str], str]]:
    """(line, NAME, labels, value text) of every sample line, by a regex of this test."""
    out = []
    for ln, text in enumerate(path.read_text().splitlines(), 1):
        m = SAMPLE.match(text)
        if m:
            out.append((ln, m.group(1), dict(LABEL.findall(m.group(2))), m.group(3)))
    return out


def _load(path: Path, **kw) -> Run:
    with warnings.catch_warnings():
        warnings.simplefilter("error", LoadWarning)  # the real files load without a skip
        return load_run(path, **kw)


def _write(tmp_path: Path, text: str, name: str = "metrics.txt") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


# --- the real files ------------------------------------------------------------------------


def test_every_real_file_is_detected_and_loads_as_dcgm(realdata):  # noqa: F811
    for path in files(realdata / "dcgm"):
        assert detect_format(path) == "dcgm", path.name
        run = _load(path)
        assert run.meta.source_format == "dcgm"
        assert len(run.steps) == 0 and len(run.events) == 0  # DCGM knows no training steps
        assert run.meta.report.skipped == {}
        assert set(run.tables) == {"gpu_metrics", "gpu_summary"}
        assert run.meta.claims == []  # DCGM measures; it claims no model throughput


def test_doc_example_values_sentinel_and_scrapes(realdata):  # noqa: F811
    path = realdata / "dcgm" / DOC
    raw = _samples_of(path)
    # 3 lines in the first code block, 17 + 4 in the MIG block (counted by the regex above)
    assert len(raw) == 24
    run = _load(path)
    m = run.tables["gpu_metrics"]
    # one cell per sample line, except the blank sentinel of DCGM_FI_DEV_MEMORY_TEMP
    sentinels = [r for r in raw if float(r[3]) >= 9.2e18]
    assert [(r[1], r[3]) for r in sentinels] == [("DCGM_FI_DEV_MEMORY_TEMP", "9223372036854775794")]
    metric_cols = [c for c in m.columns if c in run.meta.extra["metrics"]]
    assert int(m[metric_cols].notna().sum().sum()) == len(raw) - len(sentinels)
    # the loaded whole A100 (Hostname ub20-a100-k8s, no GPU_I_ID); values as printed
    whole = {r[1]: float(r[3]) for r in raw if "GPU_I_ID" not in r[2] and r[2].get("Hostname") == "ub20-a100-k8s"}
    row = m[(m["hostname"] == "ub20-a100-k8s") & (m["kind"] == "gpu")]
    assert len(row) == 1
    row = row.iloc[0]
    assert (row["gr_engine_active"] == whole["DCGM_FI_PROF_GR_ENGINE_ACTIVE"]
            and round(row["gr_engine_active"], 3) == 0.996)
    assert row["tensor_active"] == whole["DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"] and round(row["tensor_active"], 3) == 0.929
    assert row["dram_active"] == whole["DCGM_FI_PROF_DRAM_ACTIVE"] and round(row["dram_active"], 2) == 0.69
    assert row["power_w"] == whole["DCGM_FI_DEV_POWER_USAGE"] and round(row["power_w"], 1) == 409.7
    assert row["sm_clock_mhz"] == whole["DCGM_FI_DEV_SM_CLOCK"] == 1215
    assert row["memory_used_mib"] == whole["DCGM_FI_DEV_FB_USED"]
    assert row["dev_total_energy_consumption"] == whole["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    # the first code block (another GPU, UUID GPU-604ac76c...) is its own scrape; the sentinel
    # there is missing, never a temperature of 9.2e18 °C
    first = m[m["uuid"] == "GPU-604ac76c-d9cf-fef3-62e9-d92044ab6e52"].iloc[0]
    assert first["sample"] == 1 and first["sm_clock_mhz"] == 139 and first["mem_clock_mhz"] == 405
    assert math.isnan(first["memory_temperature_c"])
    assert "blank sentinel" in " ".join(run.meta.report.notes)
    # the MIG slice 1g.5gb, GPU_I_ID 13, is an entity of its own in the same scrape
    mig = m[m["gpu_instance"] == 13].iloc[0]
    assert mig["kind"] == "mig" and mig["mig_profile"] == "1g.5gb" and mig["sample"] == row["sample"] == 2
    assert mig["tensor_active"] == 0.930433  # "...GPU_I_ID="13"...} 0.930433"
    # whole GPUs are the UUIDs printed without GPU_I_ID: two (the doc shows two machines)
    uuids = {r[2]["UUID"] for r in raw if "GPU_I_ID" not in r[2]}
    assert len(uuids) == 2 and run.meta.n_accelerators == 2
    assert run.meta.extra["n_mig_instances"] == 1
    assert "upper bound" in run.meta.extra["hardware_view"]


def test_issue68_two_scrapes_across_prose_and_a_quote_prefix(realdata):  # noqa: F811
    path = realdata / "dcgm" / I68
    text = path.read_text()
    quoted = re.search(r"^> DCGM_FI_PROF_GR_ENGINE_ACTIVE\{.*\} (\S+)$", text, re.M).group(1)
    tensors = re.findall(r"^DCGM_FI_PROF_PIPE_TENSOR_ACTIVE\{.*\} (\S+)$", text, re.M)
    assert quoted == "0.381124" and tensors == ["0.000000", "0.022137"]
    run = _load(path)
    m = run.tables["gpu_metrics"].sort_values("sample")
    assert m["sample"].tolist() == [1, 2]  # idle scrape, then the one after the pod started
    s2 = m.iloc[1]
    assert s2["gr_engine_active"] == float(quoted) and round(s2["gr_engine_active"], 3) == 0.381
    assert s2["tensor_active"] == float(tensors[1]) and round(s2["tensor_active"], 3) == 0.022
    assert m.iloc[0]["tensor_active"] == 0.0 and math.isnan(m.iloc[0]["gr_engine_active"])
    # container/namespace/pod are printed empty: not labelled
    assert "pod" not in m.columns or m["pod"].isna().all()
    assert m["mig_profile"].tolist() == ["2g.12gb", "2g.12gb"] and m["kind"].tolist() == ["mig", "mig"]
    facts = {f["name"]: f for f in run.meta.facts}
    # only a MIG slice was sampled: the device is the slice, which the registry refuses (never the whole A30's peak)
    profile = re.search(r'GPU_I_PROFILE="([^"]+)"', text).group(1)
    model = re.search(r'modelName="([^"]+)"', text).group(1)
    assert facts["accelerator"]["value"] == f"{model} MIG {profile}"
    assert facts["accelerator"]["value"] == "NVIDIA A30 MIG 2g.12gb"
    assert run.meta.accelerator is None and run.meta.peak_flops_per_accelerator is None
    assert any(n.startswith("peak unknown") and "MIG slice 2g.12gb" in n for n in run.meta.report.notes)
    first = next(i for i, ln in enumerate(text.splitlines(), 1) if 'modelName="NVIDIA A30"' in ln)
    assert first == 4 and facts["accelerator"]["where"] == f"{path}:{first}"
    assert "n_accelerators" not in facts and run.meta.n_accelerators is None  # a MIG slice only
    assert run.meta.extra["mig_profiles"] == ["2g.12gb"]
    assert any("only MIG instances" in n for n in run.meta.report.notes)


def test_issue151_mig_gpu_instances_are_not_gpus(realdata):  # noqa: F811
    path = realdata / "dcgm" / I151
    rows = re.findall(r"^GPU-I (\d+)\s+(.*)$", path.read_text(), re.M)
    assert len(rows) == 7
    tenso = {int(i): float(v.split()[3]) for i, v in rows}  # TENSO is the 4th field of the header
    assert tenso[28] == 0.940
    run = _load(path)
    m = run.tables["gpu_metrics"]
    assert sorted(m["gpu_instance"].tolist()) == sorted(tenso) and (m["kind"] == "mig").all()
    assert dict(zip(m["gpu_instance"], m["tensor_active"], strict=True)) == tenso
    assert m["gpu"].isna().all()  # a GPU-I entity id is not a GPU index
    assert run.meta.n_accelerators is None
    assert run.meta.extra["n_mig_instances"] == 7 and run.meta.extra["whole_gpus"] == 0
    assert run.meta.extra["dmon_commands"] == ["dcgmi dmon -e 1001,1002,1003,1004 -g 35"]  # line 1


def test_issue244_na_is_missing_and_multiplexed_rows_repeat(realdata):  # noqa: F811
    path = realdata / "dcgm" / I244
    lines = path.read_text().splitlines()
    rows = [ln.split() for ln in lines if ln.startswith("GPU ")]
    assert len(rows) == 10 and all(r[2:] == ["N/A"] * 8 for r in rows[:8])  # first sample all N/A
    run = _load(path)
    m = run.tables["gpu_metrics"]
    metrics = ["gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active", "fp64_active",
               "fp32_active", "fp16_active"]
    assert len(m) == 10 and m["sample"].tolist() == [1] * 8 + [2] * 2
    assert m.iloc[:8][metrics].isna().all().all()
    # "GPU 0      0.888        N/A          N/A          0.178        N/A          N/A          N/A          0.001"
    g0 = m.iloc[8]
    assert (g0["gpu"], g0["gr_engine_active"], g0["tensor_active"], g0["fp16_active"]) == (0, 0.888, 0.178, 0.001)
    assert int(g0[metrics].notna().sum()) == 8 - rows[8].count("N/A") == 3
    # "GPU 1      N/A          0.777        N/A          N/A          N/A          0.000        0.046        N/A"
    g1 = m.iloc[9]
    assert (g1["sm_active"], g1["fp64_active"], g1["fp32_active"]) == (0.777, 0.0, 0.046)
    assert run.meta.n_accelerators == len({r[1] for r in rows}) == 8
    # the prompt and "dmon was stopped due to receiving a signal" are noise, not bad records
    assert run.meta.report.skipped == {}


def test_issue272_lower_case_names_and_label_aliases(realdata):  # noqa: F811
    path = realdata / "dcgm" / I272
    raw = _samples_of(path)
    assert [r[1] for r in raw] == ["dcgm_fi_prof_gr_engine_active"] * 2
    run = _load(path)
    m = run.tables["gpu_metrics"].set_index("gpu")
    assert m.loc[4, "uuid"] == raw[1][2]["uuid"] and m.loc[4, "gr_engine_active"] == float(raw[1][3]) == 0.008246
    assert (m.loc[4, "pod"], m.loc[4, "namespace"], m.loc[4, "container"]) == (
        raw[1][2]["pod_name"], raw[1][2]["pod_namespace"], raw[1][2]["container_name"]) == (
        "d85np-t6mdg", "ai-1", "-grpc-pod")
    assert m.loc[3, "kind"] == "mig" and m.loc[3, "mig_profile"] == raw[0][2]["GPU_I_PROFILE"] == "4g.40gb"
    assert run.meta.n_accelerators == 1  # gpu 4 is whole; gpu 3 is seen only through MIG instance 1
    assert {f["name"]: f["value"] for f in run.meta.facts}["accelerator"] == "NVIDIA A100 80GB PCIe"


def test_issue512_and_166_mig_series_keyed_by_gpu_instance(realdata):  # noqa: F811
    path = realdata / "dcgm" / I512
    raw = _samples_of(path)
    ids = [r[2]["GPU_I_ID"] for r in raw]
    assert ids == ["7", "8", "9"] and len({r[2]["UUID"] for r in raw}) == 1  # one GPU, three slices
    run = _load(path)
    m = run.tables["gpu_metrics"].set_index("gpu_instance")
    assert sorted(m.index) == [7, 8, 9] and (m["kind"] == "mig").all() and m["sample"].eq(1).all()
    assert m.loc[7, "pod"] == raw[0][2]["pod"] and pd.isna(m.loc[8, "pod"])  # instance 8 has no pod labels
    assert run.meta.n_accelerators is None and run.meta.extra["n_mig_instances"] == 3
    assert run.meta.extra["driver_versions"] == [raw[0][2]["DCGM_FI_DRIVER_VERSION"]]

    path = realdata / "dcgm" / I166
    raw = _samples_of(path)
    run = _load(path)
    m = run.tables["gpu_metrics"]
    assert m["gr_engine_active"].tolist() == [float(r[3]) for r in raw] == [0.029399, 0.033893, 0.0]
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts["platform"] == raw[0][2]["Hostname"] == "k8s-dra-driver-cluster-worker" and facts["n_nodes"] == 1


def test_no_other_real_log_is_taken_for_dcgm(realdata):  # noqa: F811
    others = [p for p in sorted(realdata.rglob("*")) if p.is_file() and "dcgm" not in p.relative_to(realdata).parts]
    assert len(others) > 50
    for p in others:
        assert dcgm.sniff(p, read_head(p)) < 0.5, p
        try:
            assert detect_format(p) != "dcgm", p
        except LoadError:
            pass  # not recognised (or ambiguous between other formats): not dcgm either


def test_no_sample_of_another_format_is_taken_for_dcgm(tmp_path):
    paths = [
        write_mlperf(tmp_path), write_megatron(tmp_path), write_megatron_json(tmp_path),
        write_sacct(tmp_path, SACCT_TIMES), write_goodput_log(tmp_path, goodput_payloads()), write_table(tmp_path),
    ]
    tb = write_tensorboard(tmp_path)
    paths += sorted(tb.rglob("*")) if tb.is_dir() else [tb]
    for p in paths:
        head = b"" if p.is_dir() else read_head(p)
        assert dcgm.sniff(p, head) < 0.5, p


# --- generated inputs -----------------------------------------------------------------------

LBL = 'gpu="{g}",UUID="GPU-{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="node1"'


def _scrape(clocks: list[float], power: list[float], tensor: float = 0.5) -> str:
    out = ["# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).", "# TYPE DCGM_FI_DEV_SM_CLOCK gauge"]
    out += [f"DCGM_FI_DEV_SM_CLOCK{{{LBL.format(g=g)}}} {c}" for g, c in enumerate(clocks)]
    out += [f"DCGM_FI_DEV_POWER_USAGE{{{LBL.format(g=g)}}} {p}" for g, p in enumerate(power)]
    out += [f"DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{{LBL.format(g=g)}}} {tensor}" for g in range(len(clocks))]
    return "\n".join(out) + "\n"


def test_concatenated_scrapes_are_distinct_samples_and_facts(tmp_path):
    p = _write(tmp_path, _scrape([1980] * 4, [700] * 4) + _scrape([1980] * 4, [690] * 4, tensor=0.7))
    run = _load(p)
    m = run.tables["gpu_metrics"]
    assert len(m) == 8 and m["sample"].tolist() == [1] * 4 + [2] * 4  # the repeated series starts scrape 2
    s = run.tables["gpu_summary"].set_index("gpu")
    assert s.loc[0, "n_samples"] == 2 and s.loc[0, "power_w_mean"] == 695.0  # (700 + 690) / 2
    assert s.loc[0, "tensor_active_mean"] == pytest.approx(0.6)  # (0.5 + 0.7) / 2
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts == {"accelerator": "NVIDIA H100 80GB HBM3", "n_accelerators": 4, "platform": "node1",
                     "n_nodes": 1, "accelerators_per_node": 4}
    assert (s["apart"] == "").all()


def test_hardware_straggler_is_flagged_apart(tmp_path):
    # GPU 2 runs at 1400 MHz while its peers run at 1980: (1400 - 1980) / 1980 = -29 %
    run = _load(_write(tmp_path, _scrape([1980, 1980, 1400, 1980], [700, 700, 700, 700])))
    s = run.tables["gpu_summary"].set_index("gpu")
    assert s.loc[2, "apart"].startswith("SM clock 1400 MHz is 29% below the median 1980 MHz of 4")
    assert (s.drop(index=2)["apart"] == "").all()
    assert any("hardware stragglers" in n for n in run.meta.report.notes)
    # with two GPUs neither can be told apart from the other: nothing flagged
    run = _load(_write(tmp_path, _scrape([1980, 1400], [700, 700]), "two.txt"))
    assert (run.tables["gpu_summary"]["apart"] == "").all()
    # the threshold is an option; 0.5 lets the 29 % pass
    run = _load(_write(tmp_path, _scrape([1980, 1980, 1400, 1980], [700] * 4), "opt.txt"), apart_fraction=0.5)
    assert (run.tables["gpu_summary"]["apart"] == "").all()
    with pytest.raises(LoaderArgumentError, match="apart_fraction"):
        load_run(_write(tmp_path, _scrape([1980], [700]), "bad.txt"), apart_fraction=2.0)


def test_sentinels_and_na_are_missing_not_numbers(tmp_path):
    text = (
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-a"} 9223372036854775794\n'
        'DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-a"} 9.3e18\n'
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a"} 140737488355328.000000\n'
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a"} N/A\n'
        'DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-a"} 1593\n'
    )
    run = _load(_write(tmp_path, text))
    row = run.tables["gpu_metrics"].iloc[0]
    for col in ("memory_temperature_c", "temperature_c", "power_w", "sm_clock_mhz"):
        assert math.isnan(row[col]), col
    assert row["mem_clock_mhz"] == 1593
    assert run.meta.report.skipped == {}  # a blank is DCGM saying "no value", not damage
    assert any(n.startswith("3 value(s) were DCGM's blank sentinel") for n in run.meta.report.notes)


def test_mig_instances_never_count_as_whole_gpus(tmp_path):
    text = (
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a"} 0.9\n'
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-b",GPU_I_PROFILE="3g.40gb",GPU_I_ID="1"} 0.5\n'
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-b",GPU_I_PROFILE="3g.40gb",GPU_I_ID="2"} 0.4\n'
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="2",UUID="GPU-c",GPU_I_PROFILE="",GPU_I_ID=""} 0.3\n'
    )
    run = _load(_write(tmp_path, text))
    assert run.meta.n_accelerators == 2  # GPU 0 and GPU 2 (empty GPU_I_ID: whole); GPU 1 only as slices
    m = run.tables["gpu_metrics"]
    assert m["kind"].tolist() == ["gpu", "mig", "mig", "gpu"] and len(m) == 4 and m["sample"].eq(1).all()
    only_mig = "\n".join(text.splitlines()[1:3]) + "\n"
    run = _load(_write(tmp_path, only_mig, "mig.txt"))
    assert run.meta.n_accelerators is None and run.meta.extra["n_mig_instances"] == 2
    assert run.meta.extra["mig_profiles"] == ["3g.40gb"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert load_run(_write(tmp_path, only_mig, "mig2.txt"), n_accelerators=1,
                        accelerator="H100").meta.n_accelerators == 1


def test_lower_case_names_aliases_and_timestamps(tmp_path):
    text = (
        'dcgm_fi_prof_sm_active{gpu="0",uuid="GPU-a",pod_name="p",pod_namespace="ns",container_name="c"} '
        '0.25 1700000000000\n'
        'Dcgm_Fi_Dev_Gpu_Util{gpu="0",UUID="GPU-a"} 97 1700000000000\n'
        'dcgm_fi_prof_sm_active{gpu="0",uuid="GPU-a"} 0.5 1700000015000\n'
    )
    run = _load(_write(tmp_path, text))
    m = run.tables["gpu_metrics"]
    assert m["sm_active"].tolist() == [0.25, 0.5] and m.loc[0, "gpu_util"] == 97
    assert m["time_s"].tolist() == [0.0, 15.0]  # (1700000015000 - 1700000000000) ms
    assert (m.loc[0, "pod"], m.loc[0, "namespace"], m.loc[0, "container"]) == ("p", "ns", "c")
    assert run.meta.time_unit == "epoch_ms" and run.meta.extra["t0_epoch_s"] == 1_700_000_000.0


def test_damaged_lines_are_counted_with_line_and_field(tmp_path):
    text = (
        "# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).\n"  # 1
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a"} 1410\n'  # 2
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a" 300\n'  # 3: no closing brace
        'DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-a"} 1x3\n'  # 4: not a number, row kept
        'DCGM_FI_DEV_GPU_TEMP{gpu="zero",UUID="GPU-a"} 40\n'  # 5: not a GPU index
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a"} -3\n'  # 6: a negative utilisation
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a"} +Inf\n'  # 7
        'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a"} 12\n'  # 8
        'DCGM_FI_DEV_FB_TOTAL{gpu="0",UU'  # 9: the file ends inside it: half-written
    )
    p = _write(tmp_path, text)
    with pytest.warns(LoadWarning):
        run = load_run(p)
    rep = run.meta.report
    assert rep.first_lines == {
        "unreadable DCGM metric sample": [3],
        "non-numeric value (left missing, record kept)": [4],
        "entity id is not a non-negative integer": [5],
        "value out of range": [6, 7],  # negative, then infinite: the detail goes with the example
        "half-written last line": [9],
    }
    assert rep.examples["value out of range"].startswith("negative: ")
    row = run.tables["gpu_metrics"].iloc[0]
    assert row["sm_clock_mhz"] == 1410 and math.isnan(row["mem_clock_mhz"]) and row["memory_free_mib"] == 12
    with pytest.raises(LoadError) as info:
        load_run(p, strict=True)
    err = info.value
    assert err.line == 3 and err.field == "DCGM_FI_DEV_POWER_USAGE" and str(p) in str(err)


def test_dmon_headers_short_rows_and_passes(tmp_path):
    text = (
        "#Entity   POWER    SMCLK    TENSO\n"  # 1
        "ID\n"  # 2
        "GPU 0     300.5    1980     0.400\n"  # 3
        "GPU 1     299.0    1980     N/A\n"  # 4
        "GPU 0     301.0    1975\n"  # 5: a value short
        "GPU 1     298.0    1970     0.410\n"  # 6: GPU 1 again: pass 2 (GPU 0's row was dropped)
        "#Entity   POWER    SMCLK    TENSO\n"  # 7: a new table
        "GPU 0     302.0    1980     0.420\n"  # 8
    )
    with pytest.warns(LoadWarning):
        run = load_run(_write(tmp_path, text, "dmon.txt"))
    assert run.meta.report.first_lines == {"wrong number of fields": [5]}
    assert run.meta.report.examples["wrong number of fields"].startswith("expected 3 values after the entity: ")
    m = run.tables["gpu_metrics"]
    assert m["line"].tolist() == [3, 4, 6, 8] and m["sample"].tolist() == [1, 1, 2, 3]
    assert m["power_w"].tolist() == [300.5, 299.0, 298.0, 302.0] and math.isnan(m.loc[1, "tensor_active"])
    assert run.meta.n_accelerators == 2


def test_not_dcgm(tmp_path):
    with pytest.raises(LoadError, match="no DCGM samples"):
        load_run(_write(tmp_path, "# HELP DCGM_FI_DEV_SM_CLOCK SM clock\nhello\n"), format="dcgm")
    with pytest.raises(LoadError, match="directory"):
        load_run(tmp_path, format="dcgm")


def _long_lines(n: int) -> dict[str, str]:
    """Lines of about ``n`` characters, by name."""
    return {
        "bracket": "[" * n, "zeros": "0" * n, "spaces": " " * n, "quote": ">" * n,
        "name": "DCGM_" + "A" * n, "open label": "DCGM_FI_X{" + 'a="' * (n // 3),
        "many labels": "DCGM_FI_X{" + 'a="",' * (n // 5) + "} 1", "backslashes": 'DCGM_FI_X{gpu="' + "\\" * n,
        "long value": 'DCGM_FI_X{gpu="0"} ' + "0" * n + "x", "long index": 'DCGM_FI_X{gpu="' + "9" * n + '"} 1',
        "dmon header": "#Entity " + "A " * (n // 2), "dmon id": "#Entity A\nGPU " + "0" * n + " 1",
        "dmon row": "#Entity A\nGPU 0 " + "0 " * (n // 2),
    }


@pytest.mark.parametrize("name", sorted(_long_lines(1)))
def test_long_lines_are_linear(tmp_path, name):
    # regression: a header of 40,000 equal names took cubic time, and an 80,000-digit GPU index
    # made int() raise inside the loader (an internal error)
    runs = {}

    def load(n: int):
        p = _write(tmp_path, (_long_lines(n)[name] + "\n") * 2 + 'DCGM_FI_DEV_SM_CLOCK{gpu="0"} 1\n', f"metrics{n}.txt")

        def work():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                runs[n] = load_run(p, format="dcgm")
                dcgm.sniff(p, p.read_bytes())  # the whole file as the head: the sniff's cost grows with n too
        return work

    ratio = growth(load, 80_000)  # lines of 80 KB and of 320 KB
    assert ratio < linear_bound(), explain(ratio)
    assert runs[320_000].tables["gpu_metrics"]["sm_clock_mhz"].tolist()[-1] == 1
    # both sizes take the same path
    assert runs[80_000].meta.report.skipped.keys() == runs[320_000].meta.report.skipped.keys()


# --- damage: seeded mutations of two real files ------------------------------------------------

NASTY = [b"NaN", b"+Inf", b"-Inf", b"1e999", b"9" * 400, b"-0", b"\x00", b"\xff\xfe", b"N/A", b"\xc3\x28"]


def _mutate(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(10)
    if kind == 0:
        return data[: rng.randrange(len(data) + 1)]
    if kind == 1:
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    lines = data.split(b"\n")
    if kind == 2:
        i = rng.randrange(len(lines))
        lines[i:i] = [lines[i]] * rng.randint(1, 3)
    elif kind == 3:
        rng.shuffle(lines)
    elif kind == 4:
        i = rng.randrange(len(lines))
        lines[i] = re.sub(rb"\d+\.?\d*", lambda _: rng.choice(NASTY), lines[i], count=rng.randint(1, 4))
    elif kind == 5:
        return data.replace(b"\n", rng.choice([b"\r\n", b"\r"]))
    elif kind == 6:
        return b"\xef\xbb\xbf" + data
    elif kind == 7:
        return data.decode("utf-8").encode("utf-16") if rng.random() < 0.5 else data.replace(b"a", b"\xe9")
    elif kind == 8:
        lines.insert(rng.randrange(len(lines) + 1),
                     rng.choice([b"x", b"DCGM_FI_X{gpu=\"0\"} ", b"GPU 0 "]) * rng.randint(1, 20_000))
    else:
        lines.insert(rng.randrange(len(lines) + 1), b"\x00" * rng.randint(1, 50))
    return b"\n".join(lines)


@pytest.mark.parametrize("name", [DOC, I244])
def test_seeded_mutations_never_break_the_loader(realdata, tmp_path, name):  # noqa: F811
    data = (realdata / "dcgm" / name).read_bytes()
    rng = random.Random(f"dcgm-{name}")
    p = tmp_path / "mutated.txt"
    outcomes = {"run": 0, "error": 0}
    for _ in range(150):
        p.write_bytes(_mutate(data, rng))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                run = load_run(p, format="dcgm")
            except InternalLoadError as exc:  # a LoadError too: check it first
                pytest.fail(f"internal error on a mutated {name}: {exc}")
            except (LoadError, SchemaError):
                outcomes["error"] += 1
                continue
        assert isinstance(run, Run) and "gpu_metrics" in run.tables
        outcomes["run"] += 1
    assert outcomes["run"] > 50  # most damage still leaves something to read


def test_too_sparse_a_table_is_refused_not_built(tmp_path):
    # 3,000 one-value samples over 500 metric names would be a 3,000 × 500 table of 1.5 M cells
    # for 3,000 values; the limit is 16 × 3,000 + 1,000,000 = 1,048,000 cells
    text = "".join(f'DCGM_FI_M{i % 500}{{gpu="0"}} 1\nprose between scrapes\n' for i in range(3000))
    with pytest.raises(LoadError, match="too sparse"):
        load_run(_write(tmp_path, text))
    # the same values over 5 metric names make a small dense table: 3,000 rows × 5
    text = "".join(f'DCGM_FI_M{i % 5}{{gpu="0"}} 1\nprose between scrapes\n' for i in range(3000))
    assert load_run(_write(tmp_path, text, "ok.txt")).tables["gpu_metrics"].shape[0] == 3000


def test_gzip_and_a_saved_run_read_back_equal(realdata, tmp_path):  # noqa: F811
    import gzip

    from mfu_toolkit.run import read_run, save_run

    src = realdata / "dcgm" / I244
    gz = tmp_path / "dmon.txt.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain, packed = _load(src), _load(gz)
    assert plain.tables["gpu_metrics"].equals(packed.tables["gpu_metrics"])
    for path in files(realdata / "dcgm"):
        run = _load(path)
        assert read_run(save_run(run, tmp_path / "run.parquet")) == run, path.name
