"""``sacct --json``: the v0.0.39 real file, v0.0.40+ variants written from the data_parser schema, requeues,
failed steps, start from end - elapsed, missing keys, sentinels and lines outside the document.

The newer form follows ``src/plugins/data_parser/v0.0.41/parsers.c`` (``PARSER_ARRAY(JOB)``, ``PARSER_ARRAY(STEP)``,
``PROCESS_EXIT_CODE_VERBOSE``): ``state.current`` and ``exit_code.status`` are lists, ``return_code`` and a step's
``time.start``/``end`` are ``{set, infinite, number}``, ``signal`` is ``{id: {...}, name}``, ``step.id`` a string.
"""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest
from _realdata import realdata  # noqa: F401

from mfu_toolkit.io import detect_format, load_run
from mfu_toolkit.io.formats import sacct
from mfu_toolkit.run import LoadError, LoadWarning

REAL = "meekrob_slurmdog_sacct_json_slurm23.02_cpu_job.json"
T0 = 1_700_000_000


def wrap(n: int | None, *, infinite: bool = False) -> dict:
    return {"set": n is not None and not infinite, "infinite": infinite, "number": n or 0}


def exit_code(rc: int = 0, signal: int = 0, status: str | None = None) -> dict:
    """``status`` is one string (a single flag); ``signal`` ``{id: {set, infinite, number}, name}``."""
    status = status or ("SIGNALED" if signal else "ERROR" if rc else "SUCCESS")
    return {"status": status, "return_code": wrap(rc), "signal": {"id": wrap(signal or None), "name": ""}}


def gpu_tres(gpus: int, nodes: int) -> list[dict]:
    return [{"type": "cpu", "name": "", "id": 1, "count": 32 * nodes}, {"type": "node", "name": "", "id": 4,
            "count": nodes}, {"type": "gres", "name": "gpu", "id": 1001, "count": gpus},
            {"type": "gres", "name": "gpu:h100", "id": 1002, "count": gpus}]


def step(job_id: int, name: str, start: int, end: int, *, state: str = "COMPLETED", tasks: int = 1,
         code: dict | None = None, nodes: str = "gpu[001-002]") -> dict:
    return {"time": {"elapsed": end - start, "end": wrap(end), "start": wrap(start), "suspended": 0},
            "exit_code": code or exit_code(), "nodes": {"count": 2, "range": nodes, "list": []},
            "tasks": {"count": tasks}, "state": [state], "step": {"id": f"{job_id}.{name}", "name": name},
            "tres": {"allocated": gpu_tres(16, 2)}}


def job(job_id: int, submit: int, eligible: int, start: int, end: int, *, state: list[str], code: dict,
        steps: list[dict], limit: int = 1440) -> dict:
    """A job record in the data_parser v0.0.41 form (the fields the loader reads, plus a few it passes over)."""
    return {"account": "proj", "allocation_nodes": 2,
            "array": {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}, "task_id": wrap(None), "task": ""},
            "cluster": "c1", "derived_exit_code": exit_code(), "exit_code": code, "het": {"job_id": 0,
            "job_offset": wrap(None)}, "job_id": job_id, "name": "pretrain", "nodes": "gpu[001-002]",
            "partition": "gpu", "required": {"CPUs": 64, "memory_per_cpu": wrap(None), "memory": wrap(None)},
            "state": {"current": state, "reason": "None"}, "steps": steps,
            "time": {"elapsed": end - start, "eligible": eligible, "end": end, "start": start, "submission": submit,
                     "suspended": 0, "limit": wrap(limit), "planned": wrap(start - eligible)},
            "tres": {"allocated": gpu_tres(16, 2), "requested": gpu_tres(16, 2)}}


def requeued() -> dict:
    """A GPU job requeued after a node failure: two allocation records of job 4242 (``sacct -D``)."""
    first = job(4242, T0, T0, T0 + 300, T0 + 7200, state=["NODE_FAIL"], code=exit_code(signal=9),
                steps=[step(4242, "batch", T0 + 300, T0 + 7200, state="CANCELLED", code=exit_code(signal=15)),
                       step(4242, "0", T0 + 310, T0 + 7200, state="NODE_FAIL", tasks=16, code=exit_code(signal=9))])
    second = job(4242, T0, T0 + 7260, T0 + 7800, T0 + 36000, state=["COMPLETED"], code=exit_code(),
                 steps=[step(4242, "batch", T0 + 7800, T0 + 36000), step(4242, "0", T0 + 7810, T0 + 36000, tasks=16)])
    return {"jobs": [first, second], "meta": {"plugin": {"data_parser": "data_parser/v0.0.41"},
            "command": ["sacct", "-D", "-j", "4242", "--json"], "slurm": {"release": "24.05.3"}},
            "errors": [], "warnings": []}


def write(folder: Path, doc, name: str = "sacct.json", before: str = "", after: str = "") -> Path:
    p = Path(folder) / name
    p.write_text(before + json.dumps(doc, indent=2).replace("/", "\\/") + "\n" + after)
    return p


def quiet(p, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LoadWarning)
        return sacct.load(p, **kw)


# --- the real v0.0.39 file -----------------------------------------------------------------------------------
def test_real_cpu_array_task(realdata):  # noqa: F811
    path = realdata / "slurm" / REAL
    raw = json.loads(path.read_text())["jobs"][0]
    t = raw["time"]
    assert detect_format(path) == "sacct"
    run = load_run(path)
    assert run.meta.report.total_skipped == 0 and len(run.steps) == 0
    jobs = run.tables["jobs"]
    assert jobs["job_step"].tolist() == ["", "batch", "extern"]
    assert set(jobs["job_id"]) == {f"{raw['array']['job_id']}_{raw['array']['task_id']['number']}"} == {"12078642_6"}
    alloc = jobs.iloc[0]
    assert alloc["elapsed_s"] == t["elapsed"] == t["end"] - t["start"] == 326
    assert alloc["alloccpus"] == raw["required"]["CPUs"] == 10
    assert alloc["time_limit_s"] == t["limit"]["number"] * 60 == 90 * 60
    assert alloc["end_s"] - alloc["start_s"] == 326 and alloc["submit_s"] == 0.0
    assert jobs["state"].tolist() == ["COMPLETED"] * 3 and jobs["exit_code"].tolist() == ["0:0"] * 3
    assert not any("gres" in tres for tres in jobs["alloctres"]) and jobs["gpus"].isna().all()
    ev = run.events
    assert ev[["kind", "start_s", "end_s"]].values.tolist() == [
        ["queue", t["eligible"] - t["submission"], t["start"] - t["submission"]]]
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts == {"n_nodes": raw["allocation_nodes"]} and run.meta.n_accelerators is None
    assert run.meta.extra["data_parser"] == "data_parser/v0.0.39" and run.meta.extra["slurm_release"] == "23.02.8"
    assert run.meta.extra["nodes"] == [raw["nodes"]] and run.meta.name == raw["name"]
    lines = path.read_text().splitlines()
    assert lines[int(alloc["line"]) - 1].strip() == f'"job_id": {raw["job_id"]},'
    assert '"step_id": "extern"' in lines[int(jobs.iloc[2]["line"]) - 1]


# --- newer forms -----------------------------------------------------------------------------------------------
def test_requeued_gpu_job_v0041_two_attempts(tmp_path):
    p = write(tmp_path, requeued())
    assert detect_format(p) == "sacct"
    run = quiet(p)
    assert run.n_attempts == 2 and run.meta.n_accelerators == 16
    facts = {f["name"]: f["value"] for f in run.meta.facts}
    assert facts == {"n_accelerators": 16, "accelerator": "h100", "n_nodes": 2, "n_ranks": 16}
    ev = run.events.sort_values(["start_s", "kind"]).reset_index(drop=True)
    assert ev[["kind", "start_s", "end_s", "attempt"]].values.tolist() == [
        ["queue", 0.0, 300.0, 0],
        ["failure", 7200.0, 7260.0, 0],  # NODE_FAIL until the requeued job is eligible again
        ["queue", 7260.0, 7800.0, 1],
        ["restart", 7800.0, 7800.0, 1],
    ]
    assert "NODE_FAIL" in ev.loc[1, "detail"] and "exit 0:9" in ev.loc[1, "detail"]
    jobs = run.tables["jobs"]
    assert jobs["job_step"].tolist() == ["", "batch", "0", "", "batch", "0"]
    assert jobs["exit_code"].tolist()[:3] == ["0:9", "0:15", "0:9"] and jobs["state"].tolist()[0] == "NODE_FAIL"
    assert jobs["start_s"].tolist() == [300.0, 300.0, 310.0, 7800.0, 7800.0, 7810.0]
    assert jobs["time_limit_s"].tolist()[0] == 1440 * 60 and jobs["ntasks"].tolist()[2] == 16
    assert run.meta.extra["data_parser"] == "data_parser/v0.0.41"


def test_a_failed_step_inside_a_running_allocation_is_a_failure_and_a_relaunch(tmp_path):
    doc = requeued()
    second = doc["jobs"][1]
    second["steps"] = [step(4242, "batch", T0 + 7800, T0 + 36000),
                       step(4242, "0", T0 + 7810, T0 + 9000, state="FAILED", tasks=16,
                            code={**exit_code(rc=1), "status": ["ERROR"]}),  # a list, as early v0.0.40 builds wrote
                       step(4242, "1", T0 + 9100, T0 + 36000, tasks=16)]
    run = quiet(write(tmp_path, doc))
    ev = run.events.sort_values(["start_s", "kind"])
    steps_ev = ev[ev["detail"].str.contains("step 4242")]
    assert steps_ev[["kind", "start_s", "end_s", "attempt"]].values.tolist() == [
        ["failure", 9000.0, 9100.0, 1], ["restart", 9100.0, 9100.0, 1]]
    assert "FAILED (exit 1:0)" in steps_ev.iloc[0]["detail"]


def test_v0039_strings_and_v0040_lists_read_the_same(tmp_path):
    newer = requeued()
    older = copy.deepcopy(newer)
    older["meta"] = {"plugins": {"data_parser": "data_parser/v0.0.39"}, "Slurm": {"release": "23.02.8"}}
    for j in older["jobs"]:
        j["state"]["current"] = j["state"]["current"][0]
        j["exit_code"] = {"status": j["exit_code"]["status"], "return_code": j["exit_code"]["return_code"]["number"],
                          **({"signal": {"signal_id": 9, "name": "Killed"}} if j["state"]["current"] == "NODE_FAIL"
                             else {})}
        j["time"]["limit"] = {"set": True, "infinite": False, "number": 1440}
        for s in j["steps"]:
            s["state"] = s["state"][0]
            name = s["step"]["id"].split(".")[1]
            s["step"]["id"] = {"job_id": j["job_id"], "step_id": name}
            s["time"]["start"], s["time"]["end"] = s["time"]["start"]["number"], s["time"]["end"]["number"]
            s["exit_code"] = {"status": s["exit_code"]["status"], "return_code": 0,
                              **({"signal": {"signal_id": s["exit_code"]["signal"]["id"]["number"], "name": "x"}}
                                 if s["exit_code"]["signal"]["id"]["set"] else {})}
    a, b = quiet(write(tmp_path, newer, "new.json")), quiet(write(tmp_path, older, "old.json"))
    cols = ["job_id", "job_step", "state", "exit_code", "start_s", "end_s", "elapsed_s", "gpus", "ntasks"]
    assert a.tables["jobs"][cols].equals(b.tables["jobs"][cols])
    assert a.events.equals(b.events)
    assert [(f["name"], f["value"]) for f in a.meta.facts] == [(f["name"], f["value"]) for f in b.meta.facts]


def test_start_is_derived_from_end_minus_elapsed_where_they_disagree(tmp_path):
    doc = requeued()
    doc["jobs"][1]["time"]["start"] = T0 + 100  # a start the record kept from its first launch
    run = quiet(write(tmp_path, doc))
    alloc = run.tables["jobs"].iloc[3]
    assert (alloc["start_s"], alloc["start_stated_s"]) == (7800.0, 100.0)
    note = " ".join(run.meta.report.notes)
    assert "1 records: start taken as end - elapsed - suspended" in note and "4242 (line" in note
    doc["jobs"][1]["time"]["suspended"] = 600  # suspended time is not elapsed
    doc["jobs"][1]["time"]["elapsed"] = 36000 - 7800 - 600
    doc["jobs"][1]["time"]["start"] = T0 + 7800
    run = quiet(write(tmp_path, doc))
    assert run.tables["jobs"].iloc[3]["start_s"] == 7800.0 and "start taken" not in " ".join(run.meta.report.notes)


def test_missing_keys_sentinels_and_unlimited(tmp_path):
    doc = requeued()
    j = doc["jobs"][0]
    for key in ("tres", "steps", "array", "het", "exit_code"):
        del j[key]
    j["time"]["limit"] = wrap(None, infinite=True)
    j["required"]["CPUs"] = 4294967294  # NO_VAL
    j["required"]["memory"] = -9223372036854771968
    del doc["jobs"][1]["time"]
    doc["jobs"].append({"name": "no id"})
    doc["jobs"].append("not an object")
    with pytest.warns(LoadWarning):
        run = sacct.load(write(tmp_path, doc))
    assert run.meta.report.skipped == {"required field missing": 1, "record is not a JSON object": 1}
    jobs = run.tables["jobs"]
    assert jobs["time_limit_s"].tolist()[0] == float("inf") and jobs["alloccpus"].isna().tolist()[0]
    assert jobs["start_s"].isna().tolist()[1] and run.n_attempts == 1
    assert jobs["exit_code"].tolist()[0] == "" and jobs["gpus"].isna().tolist()[0]


def test_lines_outside_the_document_are_counted(tmp_path):
    p = write(tmp_path, requeued(), before="sacct: warning: Unable to resolve host\n\n", after="$ \n")
    with pytest.warns(LoadWarning):
        run = sacct.load(p)
    last = len(p.read_text().splitlines())
    assert run.meta.report.first_lines == {"line outside the JSON document": [1, last]}
    assert run.n_attempts == 2 and run.tables["jobs"]["line"].tolist()[0] > 3
    with pytest.raises(LoadError) as info:
        sacct.load(p, strict=True)
    assert info.value.line == 1


def test_malformed_and_foreign_json_are_refused(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"jobs": [{"derived_exit_code": {}, "job_id": 1,\n')
    with pytest.raises(LoadError, match="invalid JSON"):
        sacct.load(bad)
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"jobs": 3, "derived_exit_code": 1}))
    with pytest.raises(LoadError, match='no "jobs" list'):
        sacct.load(other)
    assert sacct.sniff(other, b'{"jobs": [], "step": 1}') == 0.0


def test_cut_copies_of_the_real_file_fail_cleanly(realdata, tmp_path):  # noqa: F811
    text = (realdata / "slurm" / REAL).read_text()
    for k in range(1, 8):
        p = tmp_path / f"cut{k}.json"
        p.write_text(text[: len(text) * k // 8])
        with pytest.raises(LoadError, match="invalid JSON"):
            sacct.load(p)
