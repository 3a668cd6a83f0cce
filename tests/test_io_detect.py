"""Format detection by content, the registry, and load_run's errors."""

from __future__ import annotations

import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401
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

import mfu_toolkit.io as io
from mfu_toolkit.io import FORMATS, detect, detect_format, load_run, sniff_all
from mfu_toolkit.run import LoadError, Run, RunMeta, save_run

MINE = ("run_parquet", "mlperf", "megatron", "megatron_json", "tensorboard", "sacct", "goodput", "table")


def test_registry_is_the_agreed_list():
    # One module per format under io/formats, in detection order; the generic table last.
    from pathlib import Path

    assert FORMATS == (
        "run_parquet", "mlperf", "megatron", "megatron_json", "tensorboard", "sacct", "goodput", "gpu_goodput",
        "torchtitan", "hf_trainer", "llamafactory", "lightning", "wandb", "kineto", "nsys", "xplane", "straggler_ops",
        "parquet_dataset", "maxtext", "dcgm", "nemo", "deepspeed", "nccl", "recorded", "flight_recorder", "table",
    )
    folder = Path(io.__file__).parent / "formats"
    assert sorted(FORMATS) == sorted(p.stem for p in folder.glob("*.py") if not p.stem.startswith("_"))
    for name in FORMATS:
        mod = detect.get_loader(name)
        assert mod.NAME == name and callable(mod.sniff) and callable(mod.parse) and callable(mod.load)
        assert mod.__name__ == f"mfu_toolkit.io.formats.{name}"


def test_every_registered_loader_imports():
    # a loader that fails to import drops out of detection silently; say so here instead
    assert detect.available_formats() == list(FORMATS), detect._import_errors


def _samples(tmp_path):
    tb = write_tensorboard(tmp_path)
    run = Run.build({"step": [1], "start_s": [0.0], "end_s": [1.0]}, meta=RunMeta(name="r"))
    return {
        "mlperf": write_mlperf(tmp_path, name="a.csv"),  # content wins over the file name
        "megatron": write_megatron(tmp_path, name="b.json"),
        "megatron_json": write_megatron_json(tmp_path, name="c.txt"),
        "tensorboard": tb,
        "sacct": write_sacct(tmp_path, SACCT_TIMES, name="d.log"),
        "goodput": write_goodput_log(tmp_path, goodput_payloads(), name="e.txt"),
        "run_parquet": save_run(run, tmp_path / "f.bin"),
        "table": write_table(tmp_path, "step,start_s,end_s\n1,0,1\n", name="g.dat"),
    }


def test_each_format_is_recognised_by_content(tmp_path):
    for fmt, path in _samples(tmp_path).items():
        assert detect_format(path) == fmt, (fmt, sniff_all(path))


def test_each_sample_loads_through_load_run(tmp_path):
    import warnings

    for fmt, path in _samples(tmp_path).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(path)
        assert isinstance(run, Run)
        assert run.meta.timing in ("exact", "duration_only", "interval_mean")
        if fmt == "run_parquet":  # a saved Run comes back as it was saved, meta included
            assert run.meta.name == "r" and run.meta.source_format is None
            continue
        assert run.meta.source_format == fmt and run.meta.report.format == fmt
        assert run.meta.source_path == str(path)


def test_plain_parquet_is_a_table_not_a_run(tmp_path):
    p = tmp_path / "t.parquet"
    pd.DataFrame({"step": [1], "start_s": [0.0], "end_s": [1.0]}).to_parquet(p)
    scores = sniff_all(p)
    assert scores["run_parquet"] == 0.0 and detect_format(p) == "table"


def test_ambiguity_lists_the_candidates(tmp_path, monkeypatch):
    p = write_table(tmp_path)
    monkeypatch.setattr(detect, "sniff_all", lambda path: {"mlperf": 0.9, "megatron": 0.85, "table": 0.3})
    with pytest.raises(LoadError, match=r"ambiguous format: mlperf \(0\.90\), megatron \(0\.85\).*format="):
        detect_format(p)
    monkeypatch.setattr(detect, "sniff_all", lambda path: {"mlperf": 0.9, "megatron": 0.7})
    assert detect_format(p) == "mlperf"


def test_ambiguity_asks_for_a_format_in_each_interface(tmp_path, monkeypatch):
    from mfu_toolkit.render.vocabulary import phrase_error

    p = write_table(tmp_path)
    monkeypatch.setattr(detect, "sniff_all", lambda path: {"mlperf": 0.9, "megatron": 0.85, "table": 0.3})
    with pytest.raises(LoadError) as info:
        detect_format(p)
    exc = info.value
    stem = exc.stem  # what each candidate read, then the request
    assert stem.startswith(f"{p}: ambiguous format: mlperf (0.90), megatron (0.85) fit almost equally well (")
    assert str(exc) == f"{stem}; pass format=<one of ['mlperf', 'megatron']>" == phrase_error(exc, "python")
    assert phrase_error(exc, "cli") == f"{stem}; give --format NAME (e.g. --format mlperf or --format megatron)"
    assert phrase_error(exc, "make") == f"{stem}; give FORMAT=NAME (e.g. FORMAT=mlperf or FORMAT=megatron)"


def test_table_is_only_a_fallback(tmp_path, monkeypatch):
    p = write_table(tmp_path)
    monkeypatch.setattr(detect, "sniff_all", lambda path: {"lightning": 0.6, "table": 0.8})
    assert detect_format(p) == "lightning"


def test_unrecognised_file_lists_candidates_and_advises_format(tmp_path):
    p = tmp_path / "notes.txt"
    p.write_text("just some words\nnothing to see\n")
    with pytest.raises(LoadError) as info:
        load_run(p)
    msg = str(info.value)
    assert str(p) in msg and "format=" in msg and "candidates:" in msg
    for name in MINE:
        assert name in msg


def test_wrong_explicit_format_lists_the_valid_ones(tmp_path):
    with pytest.raises(LoadError, match=r"unknown format 'mlperff'; valid formats: run_parquet, mlperf, megatron"):
        load_run(write_table(tmp_path), format="mlperff")


def test_explicit_format_skips_detection(tmp_path):
    p = write_table(tmp_path, "iter,a,b\n1,0,1\n")
    run = load_run(p, format="table", columns={"step": "iter", "start_s": "a", "end_s": "b"})
    assert run.steps["end_s"].tolist() == [1.0]


def test_empty_missing_and_dirs_without_logs(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    with pytest.raises(LoadError, match="empty file") as info:
        load_run(empty)
    assert info.value.path == str(empty)
    with pytest.raises(LoadError, match="no such file or directory") as info:
        load_run(tmp_path / "nope.log")
    assert "nope.log" in str(info.value)
    with pytest.raises(LoadError, match="no such file"):
        load_run(tmp_path / "nope.log", format="mlperf")
    d = tmp_path / "emptydir"
    d.mkdir()
    with pytest.raises(LoadError, match="empty directory"):
        load_run(d)
    (d / "readme.txt").write_text("no logs here")
    with pytest.raises(LoadError, match="could not recognise the directory's format") as info:
        load_run(d)
    assert str(d) in str(info.value)


def test_meta_keywords_override_and_unknown_keywords_fail(tmp_path):
    p = write_mlperf(tmp_path)
    run = load_run(p, name="mine", n_accelerators=64, model_flops_per_sample=1e12)
    assert (run.meta.name, run.meta.n_accelerators, run.meta.model_flops_per_sample) == ("mine", 64, 1e12)
    with pytest.raises(TypeError, match="unexpected keyword argument"):
        load_run(p, favourite_colour="blue")


def test_unexpected_loader_failures_are_internal_errors_not_damage(tmp_path, monkeypatch):
    # A bug of ours on an input is a LoadError (the contract) that says it is ours, naming the
    # format and the foreign exception: never passed off as "could not read" the log.
    from mfu_toolkit.io.base import InternalLoadError

    p = write_mlperf(tmp_path)
    mod = detect.get_loader("mlperf")

    def broken(*args, **kw):
        raise KeyError("boom")

    monkeypatch.setattr(mod, "parse" if hasattr(mod, "parse") else "load", broken)
    with pytest.raises(InternalLoadError, match=r"internal error in the mlperf format \(KeyError: 'boom'") as info:
        load_run(p)
    assert str(p) in str(info.value) and "bug in mfu_toolkit" in str(info.value)


def test_a_missing_format_module_is_an_error_naming_it(tmp_path, monkeypatch):
    # Before, a format that failed to import silently dropped out of the candidates and its
    # files became "could not recognise the file's format".
    row = detect.FormatInfo("not_written_yet", "mfu_toolkit.io.formats.not_written_yet", "a row without a module")
    monkeypatch.setitem(detect.REGISTRY, "not_written_yet", row)
    monkeypatch.setattr(detect, "FORMATS", (*detect.FORMATS, "not_written_yet"))
    assert "not_written_yet" not in detect.available_formats()
    with pytest.raises(LoadError, match="format 'not_written_yet' is broken in this installation "
                                        "\\(ModuleNotFoundError: No module named "
                                        "'mfu_toolkit.io.formats.not_written_yet'\\)"):
        sniff_all(write_mlperf(tmp_path))
    with pytest.raises(LoadError, match="format 'not_written_yet' is not available"):
        detect.get_loader("not_written_yet")


def test_a_format_that_fails_to_import_names_the_cause(tmp_path, monkeypatch):
    import sys
    import types

    bad = types.ModuleType("mfu_toolkit.io.formats.half_written")
    monkeypatch.setitem(sys.modules, "mfu_toolkit.io.formats.half_written", None)  # import fails
    monkeypatch.setitem(detect.REGISTRY, "half_written",
                        detect.FormatInfo("half_written", "mfu_toolkit.io.formats.half_written", "a broken module"))
    monkeypatch.setattr(detect, "FORMATS", (*detect.FORMATS, "half_written"))
    del bad
    with pytest.raises(LoadError, match=r"format 'half_written' is broken in this installation \(ModuleNotFoundError: "
                                        r"import of mfu_toolkit\.io\.formats\.half_written halted"):
        detect_format(write_mlperf(tmp_path))


def test_a_sniffer_that_raises_is_an_error_naming_the_format(tmp_path, monkeypatch):
    mod = detect.get_loader("megatron")

    def bad_sniff(path, head):
        raise RuntimeError("oops")

    monkeypatch.setattr(mod, "sniff", bad_sniff)
    with pytest.raises(LoadError, match=r"the megatron format's sniffer failed on this input \(RuntimeError: oops\)"):
        sniff_all(write_mlperf(tmp_path))
    # Naming the format bypasses detection.
    assert load_run(write_mlperf(tmp_path), format="mlperf").meta.source_format == "mlperf"


def test_load_table_and_write_goodput_are_exported():
    assert callable(io.load_table) and callable(io.write_goodput)


def test_every_real_file_of_my_formats_loads_with_auto(realdata):  # noqa: F811
    import warnings

    expected = {"mlperf": {"mlperf"}, "megatron": {"megatron", "megatron_json"}, "tensorboard": {"tensorboard"},
                "slurm": {"sacct"}}
    for folder, fmts in expected.items():  # `sacct --json` output included: the sacct format reads both forms
        entries = sorted((realdata / folder).iterdir())
        assert entries, folder
        for path in entries:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = load_run(path)
            assert run.meta.source_format in fmts, path


@pytest.mark.parametrize("fmt", MINE)
def test_each_loader_rejects_an_empty_file_naming_it(tmp_path, fmt):
    p = tmp_path / "empty.log"
    p.write_bytes(b"")
    with pytest.raises(LoadError) as info:
        detect.get_loader(fmt).load(p)
    assert str(p) in str(info.value)


def test_accelerator_keyword_resolves_the_peak(tmp_path):
    p = write_mlperf(tmp_path)
    run = load_run(p, accelerator="H100", dtype="bf16")
    assert run.meta.peak_flops_per_accelerator and run.meta.peak_source
    with pytest.raises(Exception) as info:  # the registry's own error, not a file error
        load_run(p, accelerator="no-such-chip", dtype="bf16")
    assert not isinstance(info.value, LoadError) and "no-such-chip" in str(info.value)


def test_samples_round_trip_through_run_parquet(tmp_path):
    import warnings

    for fmt, path in _samples(tmp_path).items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run = load_run(path)
        assert load_run(save_run(run, tmp_path / f"{fmt}.parquet")) == run, fmt


def test_real_runs_round_trip_through_run_parquet(realdata, tmp_path):  # noqa: F811
    import warnings

    for folder in ("mlperf", "megatron", "tensorboard", "slurm"):
        for path in sorted((realdata / folder).iterdir()):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                run = load_run(path)
            assert load_run(save_run(run, tmp_path / "r.parquet")) == run, path


def test_records_after_a_long_preamble_are_still_found(tmp_path):
    from _samples import megatron_line, mlperf_lines

    noise = [f"+ echo setting up node {i} ................................" for i in range(400)]
    p = write_mlperf(tmp_path, name="slurm.out", lines=noise + mlperf_lines())
    assert p.stat().st_size > 8192 and detect_format(p) == "mlperf"
    banner = ["------------------------ arguments ------------------------"]
    args = [f"  arg_{i} ........................................ {i}" for i in range(400)]
    q = write_megatron(tmp_path, name="megatron.out", lines=banner + args + [megatron_line(1, 1000.0)])
    assert q.stat().st_size > 8192 and detect_format(q) == "megatron"
