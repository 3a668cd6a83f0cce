"""Communication stragglers: named with onset and duration, told apart from compute stragglers.

Synthetic per-rank tables built here (8 ranks × 200 steps with noise unless said otherwise): a rank
slow only in communication, a compute straggler whose waiting peers show long communication, a slow
host, noise only (the false-positive rate over 200 seeds), the recovery by hand; then the real
multi-rank traces of ``MFU_REALDATA`` (the ``straggler_ops`` jobs, the two-rank Kineto sample).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _realdata import realdata  # noqa: F401  (the fixture)

from mfu_toolkit.analysis.comm_stragglers import (
    COMM_KINDS,
    CommStragglerReport,
    change_segments,
    comm_stragglers,
    cusum_threshold,
    slow_episodes,
)
from mfu_toolkit.run import Run

BASE_COMPUTE, BASE_COMM = 1.0, 0.5


def _run(compute: np.ndarray, comm: np.ndarray, *, exposed: np.ndarray | None = None,
         hosts: list[str] | None = None, stage: list[int] | None = None) -> Run:
    """A synchronous job from steps × ranks compute and comm seconds: every rank starts a step when
    the slowest rank ended the previous one, and ends it with the slowest (the others wait idle)."""
    n_steps, n_ranks = compute.shape
    own = compute + (comm if exposed is None else exposed)
    span = own.max(axis=1)
    start = np.concatenate([[0.0], np.cumsum(span)[:-1]])
    cols = {
        "attempt": 0, "step": np.repeat(np.arange(n_steps), n_ranks), "rank": np.tile(np.arange(n_ranks), n_steps),
        "start_s": np.repeat(start, n_ranks), "end_s": np.repeat(start + span, n_ranks),
        "compute_s": compute.ravel(), "comm_s": comm.ravel(),
    }
    if exposed is not None:
        cols["exposed_comm_s"] = exposed.ravel()
    if hosts is not None:
        cols["host"] = np.tile(np.array(hosts, dtype=object), n_steps)
    if stage is not None:
        cols["stage"] = np.tile(np.array(stage), n_steps)
    return Run.build(pd.DataFrame(cols))


def _noise(seed: int, n_steps: int = 200, n_ranks: int = 8, cv: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    compute = BASE_COMPUTE * np.exp(rng.normal(0.0, cv, (n_steps, n_ranks)))
    comm = BASE_COMM * np.exp(rng.normal(0.0, 2 * cv, (n_steps, n_ranks)))  # communication is the noisier
    return compute, comm


def _quiet(fn, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*args, **kw)


# --------------------------------------------------------------------------------------------
# the change-point method


def test_cusum_threshold_is_the_union_bound():
    lam = cusum_threshold(200, 1e-4)
    assert lam == pytest.approx(5.025, abs=0.001)  # Φ⁻¹(1 − 1e-4 / 398)
    assert cusum_threshold(1000, 1e-4) > lam > cusum_threshold(200, 1e-3)


def test_change_segments_finds_a_pulse_and_leaves_noise_whole():
    rng = np.random.default_rng(0)
    x = rng.normal(0.0, 0.05, 200)
    assert change_segments(x) == [0, 200]
    x[80:140] += 0.3
    cuts = change_segments(x)
    assert cuts[0] == 0 and cuts[-1] == 200 and len(cuts) == 4
    assert abs(cuts[1] - 80) <= 2 and abs(cuts[2] - 140) <= 2
    (a, b), = slow_episodes(x, threshold=0.10)
    assert (a, b) == (cuts[1], cuts[2])
    assert slow_episodes(x, threshold=0.5) == []  # log(1.5) = 0.41 > the 0.3 shift


def test_a_persistent_excess_is_one_episode_from_start_to_end():
    x = np.full(50, np.log(1.3)) + np.random.default_rng(1).normal(0, 0.02, 50)
    assert slow_episodes(x) == [(0, 50)]


# --------------------------------------------------------------------------------------------
# synthetic jobs


@pytest.mark.parametrize("seed", range(10))
def test_a_rank_slow_only_in_communication_is_named_with_onset_and_end(seed):
    compute, comm = _noise(seed)
    comm[80:140, 5] *= 1.4  # steps 80..139: rank 5's comm +40 %, its compute normal
    r = comm_stragglers(_run(compute, comm))
    assert isinstance(r, CommStragglerReport) and r.kind == "comm"
    assert len(r.table) == 1, r.table
    row = r.culprits.iloc[0]
    assert (row["level"], row["rank"], row["kind"]) == ("rank", 5, "comm")
    assert abs(row["onset_step"] - 80) <= 2
    assert abs(row["end_step"] + 1 - 140) <= 2 and not row["to_end"]  # the last slow step is 139
    assert row["steps"] == row["end_step"] - row["onset_step"] + 1
    assert row["comm_excess"] == pytest.approx(0.4, abs=0.06)
    assert abs(row["compute_excess"]) < 0.03
    assert row["excess_comm_s"] == pytest.approx(0.2 * 60, rel=0.2)  # 0.5 s × 40 % over 60 steps
    steps = r.steps.set_index("step")
    assert row["seconds"] == pytest.approx(steps.loc[row["onset_step"]:row["end_step"], "step_s"].sum())
    assert "rank 5" in r.verdict and "Communication straggler" in r.verdict


def _compute_straggler(seed: int, waiting: tuple[int, ...]) -> Run:
    """Rank 3's compute +40 % over steps 80..139; the ``waiting`` ranks' comm grows by that delay."""
    compute, comm = _noise(seed)
    delay = 0.4 * compute[80:140, 3]
    compute[80:140, 3] += delay
    for j in waiting:
        comm[80:140, j] += delay
    return _run(compute, comm)


@pytest.mark.parametrize("waiting", [(0, 1, 2, 4, 5, 6, 7), (0, 1, 2)], ids=["all-wait", "some-wait"])
def test_a_compute_straggler_is_not_a_comm_straggler(waiting):
    r = comm_stragglers(_compute_straggler(11, waiting))
    assert r.kind == "compute" and r.culprits.empty
    comp = r.table[r.table["kind"] == "compute"]
    assert comp["rank"].tolist() == [3]
    assert abs(comp.iloc[0]["onset_step"] - 80) <= 2 and abs(comp.iloc[0]["end_step"] - 139) <= 2
    assert comp.iloc[0]["comm_excess"] < 0  # the slow rank arrives last and waits for no one
    wait = r.table[r.table["kind"] == "waiting"]
    if len(waiting) < 7:  # a subset waits: their comm stands out, and it is named as waiting for rank 3
        assert sorted(wait["rank"]) == [0, 1, 2]
        assert all(w == [3] for w in wait["waits_for"])
        assert (wait["compute_excess"].abs() < 0.03).all() and (wait["comm_excess"] > 0.5).all()
        assert (wait["recovered_s"] == 0).all() and "waiting for it" in r.verdict
    else:  # everyone else waits: the peers' median carries the wait, and no rank's comm stands out
        assert wait.empty
    assert "No communication straggler: compute straggler rank 3" in r.verdict


def test_a_slow_host_is_named_not_its_ranks():
    compute, comm = _noise(21, n_ranks=16)
    comm[60:150, 4:8] *= 1.4  # every rank of the second host, steps 60..149
    hosts = [f"node{j // 4}" for j in range(16)]
    r = comm_stragglers(_run(compute, comm, hosts=hosts))
    assert r.kind == "comm" and r.hosts_from == "run.steps column 'host'"
    (row,) = r.culprits.to_dict("records")
    assert (row["level"], row["host"], row["ranks"]) == ("host", "node1", [4, 5, 6, 7])
    assert abs(row["onset_step"] - 60) <= 2 and abs(row["end_step"] - 149) <= 2
    ranks = r.table[(r.table["level"] == "rank") & (r.table["kind"] == "comm")]
    assert sorted(ranks["rank"]) == [4, 5, 6, 7] and (ranks["in_host"] == "node1").all()
    assert "host node1 (ranks 4–7)" in r.verdict
    # the same from ranks per host, and from a table of (rank, host)
    plain = _run(compute, comm)
    assert comm_stragglers(plain, hosts=4).culprits.iloc[0]["host"] == "host1"
    table = pd.DataFrame({"rank": range(16), "host": hosts, "nranks": 16})
    r2 = comm_stragglers(plain.replace(tables={"communicators": table}))
    assert r2.culprits.iloc[0]["host"] == "node1" and r2.hosts_from == "run.tables['communicators'] (rank, host)"


def test_one_slow_rank_on_a_host_is_named_as_the_rank():
    compute, comm = _noise(22, n_ranks=16)
    comm[60:150, 6] *= 1.4
    r = comm_stragglers(_run(compute, comm), hosts=4)
    (row,) = r.culprits.to_dict("records")
    assert (row["level"], row["rank"], row["host"]) == ("rank", 6, "host1")


def test_pipeline_stages_are_compared_within_their_stage():
    compute, comm = _noise(23)
    comm[:, 4:] *= 2.0  # stage 1 communicates twice as long as stage 0, by design
    stage = [0, 0, 0, 0, 1, 1, 1, 1]
    r = comm_stragglers(_run(compute, comm, stage=stage))
    assert r.kind == "none" and r.compared_with == "peers of the same pipeline stage"
    # without the stage column every stage-1 rank is "persistently" slow: why stages matter
    flat = comm_stragglers(_run(compute, comm))
    assert sorted(flat.culprits["rank"]) == [4, 5, 6, 7] and flat.culprits["to_end"].all()


def test_noise_only_names_nothing():
    named = []
    for seed in range(200):
        compute, comm = _noise(1000 + seed)
        r = comm_stragglers(_run(compute, comm))
        if r.kind != "none" or len(r.table):
            named.append(seed)
    assert len(named) <= 2, named  # false-positive rate <= 1 % over 200 jobs of 8 ranks × 200 steps
    assert r.verdict.startswith("No communication straggler") and r.recovered_s == 0.0


# --------------------------------------------------------------------------------------------
# what fixing it recovers, by hand


def _flat(n_steps: int = 20, n_ranks: int = 4) -> tuple[np.ndarray, np.ndarray]:
    return np.full((n_steps, n_ranks), BASE_COMPUTE), np.full((n_steps, n_ranks), BASE_COMM)


def test_recovery_by_hand_all_comm_exposed():
    compute, comm = _flat()
    comm[5:15, 2] = 0.8  # rank 2: 0.3 s more comm than its peers' 0.5 s, steps 5..14
    r = comm_stragglers(_run(compute, comm))
    row = r.culprits.iloc[0]
    assert (row["rank"], row["onset_step"], row["end_step"], row["steps"]) == (2, 5, 14, 10)
    assert row["comm_excess"] == pytest.approx(0.6) and row["excess_comm_s"] == pytest.approx(3.0)
    assert row["seconds"] == pytest.approx(10 * 1.8)
    # per step the exposed excess 0.3 s goes: 10 × 0.3 = 3.0 s of a 10 × 1.5 + 10 × 1.8 = 33 s job
    assert r.recovered_s == pytest.approx(3.0) and r.wall_s == pytest.approx(33.0)
    assert r.wall_share == pytest.approx(3.0 / 33.0)
    fixed = r.steps.set_index("step")["fixed_step_s"]
    assert np.allclose(fixed, 1.5)
    assert r.recovery_method.startswith("step table") and "all communication taken as exposed" in r.source


def test_recovery_by_hand_exposed_part_only():
    compute, comm = _flat()
    comm[5:15, 2] = 0.8
    exposed = comm.copy()
    exposed[5:15, 2] = 0.7  # 0.1 s of its comm runs beside compute
    r = comm_stragglers(_run(compute, comm, exposed=exposed))
    assert r.culprits.iloc[0]["rank"] == 2
    assert r.recovered_s == pytest.approx(10 * 0.2)  # exposed 0.7 against the peers' 0.5
    assert r.wall_s == pytest.approx(10 * 1.5 + 10 * 1.7)
    assert "exposed_comm_s" in r.source


def test_a_slow_link_beside_a_compute_straggler_by_hand():
    compute, comm = _flat(n_ranks=8)
    compute[5:15, 3] = 1.2  # rank 3 computes 0.2 s longer
    comm[5:15, [0, 1]] = 0.7  # ranks 0 and 1 wait 0.2 s for it
    comm[5:15, 6] = 0.9  # rank 6: 0.4 s more comm; 0.2 s of it could be waiting, 0.2 s cannot
    r = comm_stragglers(_run(compute, comm))
    assert r.kind == "comm"
    (row,) = r.culprits.to_dict("records")
    assert row["rank"] == 6 and row["waiting_s"] == pytest.approx(10 * 0.2)
    assert row["recovered_s"] == pytest.approx(10 * 0.2) and r.recovered_s == pytest.approx(2.0)
    kinds = r.table.set_index("rank")["kind"].to_dict()
    assert kinds == {6: "comm", 3: "compute", 0: "waiting", 1: "waiting"}
    assert "also compute straggler rank 3" in r.verdict
    assert r.wall_s == pytest.approx(10 * 1.5 + 10 * 1.9)


# --------------------------------------------------------------------------------------------
# refusals


def test_refuses_what_it_cannot_judge():
    compute, comm = _noise(0, n_steps=30)
    run = _run(compute, comm)
    job_level = run.replace(steps=run.steps.assign(rank=-1).drop_duplicates("step"))
    with pytest.raises(ValueError, match="no per-rank steps"):
        comm_stragglers(job_level)
    with pytest.raises(ValueError, match="no comm_s values"):
        comm_stragglers(run.replace(steps=run.steps.drop(columns="comm_s")))
    with pytest.raises(ValueError, match="at least 10 steps"):
        comm_stragglers(_run(compute[:6], comm[:6]))
    with pytest.raises(ValueError, match="one rank"):
        comm_stragglers(_run(compute[:, :1], comm[:, :1]))
    with pytest.raises(ValueError, match=r"threshold must be a number in \(0, 100\); got -0.1"):
        comm_stragglers(run, threshold=-0.1)
    with pytest.raises(ValueError, match="hosts must be"):
        comm_stragglers(run, hosts="node")
    assert set(COMM_KINDS) == {"comm", "compute", "waiting"}


# --------------------------------------------------------------------------------------------
# real multi-rank traces (MFU_REALDATA)


def _load(path: Path) -> Run:
    from mfu_toolkit.io import load_run

    return _quiet(load_run, path)


def _ops(folder: Path, job: str) -> pd.DataFrame:
    path = folder / "straggler_ops" / f"trace-{job}.parquet"
    if not path.is_file():
        pytest.fail(f"{path} is missing from MFU_REALDATA")
    return pd.read_parquet(path)


def test_real_slow_worker_job_is_a_compute_straggler_with_a_waiting_rank(realdata):  # noqa: F811
    ops = _ops(realdata, "AR")
    # what the raw ops say: rank 0 (dp 0, stage 0) computes 2.3× its stage's median in every step;
    # rank 48 (dp 0, stage 3: the end of rank 0's pipeline) spends > 10× its stage's median in
    # communication ops while its compute is within 2 % of its stage's
    stage = ops.groupby("rank")["stage"].first()
    comp = ops[ops["optype"].isin(["forward-compute", "backward-compute", "optimizer"])]
    comp = comp.groupby(["step", "rank"])["duration"].sum().unstack()
    comm = ops[ops["optype"].str.endswith(("send", "recv", "all-reduce", "all-gather", "reduce-scatter"))]
    comm = comm.groupby(["step", "rank"])["duration"].sum().unstack()
    s0, s3 = stage.index[stage == 0], stage.index[stage == 3]
    assert (comp[0] / comp[s0].median(axis=1)).min() > 2.3
    assert (comm[48] / comm[s3].median(axis=1)).min() > 10
    assert ((comp[48] / comp[s3].median(axis=1)) - 1).abs().max() < 0.02
    # a naive rule (long comm, normal compute) would name rank 48; the physics names rank 0
    r = comm_stragglers(_load(realdata / "straggler_ops" / "trace-AR.parquet"))
    assert r.kind == "compute" and r.culprits.empty
    rows = r.table.set_index("rank")
    assert rows.loc[0, "kind"] == "compute" and rows.loc[0, "to_end"] and rows.loc[0, "onset_step"] == ops["step"].min()
    assert rows.loc[0, "compute_excess"] == pytest.approx(1.35, abs=0.05)
    assert rows.loc[48, "kind"] == "waiting" and rows.loc[48, "waits_for"] == [0]
    assert set(rows.index) == {0, 48}
    assert r.compared_with == "peers of the same pipeline stage"


@pytest.mark.parametrize("job", ["ST", "SE"])
def test_real_jobs_without_a_persistent_culprit_name_nothing(realdata, job):  # noqa: F811
    r = comm_stragglers(_load(realdata / "straggler_ops" / f"trace-{job}.parquet"))
    assert r.kind == "none" and r.table.empty, r.table


def test_real_trace_with_a_slowed_link_recovers_by_replay(realdata, tmp_path):  # noqa: F811
    ops = _ops(realdata, "SE")
    steps = np.sort(ops["step"].unique())
    window = steps[15:35]
    slow = (ops["dp_rank"] == 5) & (ops["stage"] == 1) & ops["step"].isin(window)
    rank = int(ops.loc[slow, "rank"].iloc[0])
    ops.loc[slow & (ops["optype"] == "grads-reduce-scatter"), "duration"] += 1.0  # its reduce-scatter 1 s slower
    ops.to_parquet(tmp_path / "trace-SEx.parquet")
    run = _load(tmp_path / "trace-SEx.parquet")
    r = comm_stragglers(run)
    (row,) = r.culprits.to_dict("records")
    assert (row["rank"], row["onset_step"], row["end_step"]) == (rank, window[0], window[-1])
    assert r.recovery_method.startswith("replay")
    bound = comm_stragglers(run, replay=False)
    assert bound.recovery_method.startswith("step table")
    # the replay puts the slowed transfer back to its type's median: about the injected 1 s a step
    assert 0.9 * 20 < r.recovered_s <= bound.recovered_s + 1e-9
    assert row["recovered_s"] == pytest.approx(r.recovered_s)


def test_real_two_rank_kineto_sample_is_too_short(realdata):  # noqa: F811
    from mfu_toolkit.io.formats.kineto import load_traces

    files = sorted((realdata / "kineto").glob("HTA_trace_filter_sampled_rank-*.json.gz"))
    assert len(files) == 2, files
    run = _quiet(load_traces, files)
    assert run.steps["step"].nunique() == 2 and run.steps["rank"].nunique() == 2
    with pytest.raises(ValueError, match="2 step"):
        comm_stragglers(run)


def test_the_answer_names_the_comm_straggler_and_what_fixing_it_recovers():
    # the hand case above through build_answer and the text: 3.0 s of a 33 s job (9.09 %)
    from mfu_toolkit.analysis import build_answer
    from mfu_toolkit.render import answer_dict, answer_text

    compute, comm = _flat()
    comm[5:15, 2] = 0.8
    a = build_answer(_run(compute, comm))
    slow = a.communication["stragglers"]
    assert slow["kind"] == "comm" and slow["recovered_s"] == pytest.approx(3.0)
    assert [(r["rank"], r["onset_step"], r["end_step"]) for r in slow["rows"]] == [(2, 5, 14)]
    text = " ".join(answer_text(a).split())
    assert "Stragglers in communication: Communication straggler" in text and "rank 2" in text
    assert "Fixing them recovers 3.000 s (9.09% of wall time)" in text
    assert answer_dict(a)["communication"]["stragglers"]["rows"][0]["rank"] == 2
