"""A slow link named as a link: in a rail-optimised cluster (rank i of each host on rail i), a congested
rail spans hosts, so no host shows it, while the median over the rail's ranks does. Self-made runs with
the congestion injected (its ranks, steps and size known), and the map given or read from a column."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from mfu_toolkit.analysis import comm_stragglers
from mfu_toolkit.run import Run

N_STEPS, HOSTS, PER_HOST = 120, 2, 4  # 8 ranks; rank r is on host r // 4 and rail r % 4
SLOW_RAIL, FIRST, LAST = 3, 50, 89  # rail 3 (ranks 3 and 7) is congested over steps 50-89


def _run(*, column: str | None = None, seed: int = 0) -> Run:
    rng = np.random.default_rng(seed)
    n = HOSTS * PER_HOST
    compute = 1.0 * np.exp(rng.normal(0.0, 0.03, (N_STEPS, n)))
    comm = 0.4 * np.exp(rng.normal(0.0, 0.06, (N_STEPS, n)))
    exposed = 0.5 * comm
    steps, ranks = np.arange(N_STEPS)[:, None], np.arange(n)[None, :]
    slow = (steps >= FIRST) & (steps <= LAST) & (ranks % PER_HOST == SLOW_RAIL)
    comm = np.where(slow, 1.6 * comm, comm)  # the rail's transfers take 1.6x as long
    exposed = np.where(slow, comm - 0.2, exposed)
    span = (compute + exposed).max(axis=1)
    start = np.concatenate([[0.0], np.cumsum(span)[:-1]])
    frame = pd.DataFrame({
        "attempt": 0, "step": np.repeat(np.arange(N_STEPS), n), "rank": np.tile(np.arange(n), N_STEPS),
        "start_s": np.repeat(start, n), "end_s": np.repeat(start + span, n), "compute_s": compute.ravel(),
        "comm_s": comm.ravel(), "exposed_comm_s": exposed.ravel(),
        "host": np.tile(np.array([f"node{r // PER_HOST}" for r in range(n)], dtype=object), N_STEPS)})
    if column:
        frame[column] = np.tile(np.array([f"rail{r % PER_HOST}" for r in range(n)], dtype=object), N_STEPS)
    return Run.build(frame)


def test_a_congested_rail_is_named_as_its_link_not_as_a_host():
    rails = {r: f"rail{r % PER_HOST}" for r in range(HOSTS * PER_HOST)}
    rep = comm_stragglers(_run(), links=rails)
    top = rep.culprits
    assert len(top) == 1 and top.loc[0, "level"] == "link" and top.loc[0, "link"] == "rail3"
    assert list(top.loc[0, "ranks"]) == [3, 7] and top.loc[0, "kind"] == "comm"
    # the injected episode: steps 50-89 and +60 % on the rail's transfers (the median of its two ranks)
    assert (top.loc[0, "onset_step"], top.loc[0, "end_step"]) == (FIRST, LAST)
    assert top.loc[0, "comm_excess"] == pytest.approx(0.6, abs=0.06)
    t = rep.table
    assert not (t["level"] == "host").any()  # one rank in four per host: no host's median moves
    inside = t[(t["level"] == "rank") & (t["kind"] == "comm")]
    assert set(inside["rank"]) == {3, 7} and set(inside["in_link"]) == {"rail3"}
    assert rep.verdict.startswith("Communication straggler") and "link rail3 (ranks 3, 7)" in rep.verdict
    assert rep.links_from == "links= (given)" and "links from links= (given)" in "\n".join(rep.lines())


@pytest.mark.parametrize("column", ["nic", "link"])
def test_the_map_is_read_from_a_steps_column(column):
    rep = comm_stragglers(_run(column=column))
    assert rep.links_from == f"run.steps column {column!r}" and list(rep.culprits["link"]) == ["rail3"]


def test_without_a_map_the_ranks_are_named_and_no_link_is_guessed():
    rep = comm_stragglers(_run())
    assert rep.links_from is None and sorted(rep.culprits["rank"]) == [3, 7]
    assert rep.culprits["link"].isna().all()
    with pytest.raises(ValueError, match="links must be a mapping rank -> link"):
        comm_stragglers(_run(), links=4)
