"""Where a hung job stopped, from Flight Recorder dumps: the collective some ranks never joined.

The rule, in three steps (the ``collectives``, ``process_groups`` and ``pg_status`` tables of the
``flight_recorder`` loader):

1. **Each group's first blocking point.** A rank's last enqueued collective in a group is the
   largest ``collective_seq_id`` of its entries there (a send/recv entry carries the group's
   collective counter too), else its ``pg_status`` ``last_enqueued_collective`` (used only in
   groups without send/recv, where that counter counts collectives alone). Walking the group's
   pending (not ``completed``) collectives in sequence order, the first sequence id that some
   members have no entry for and have not passed is the group's blocking point (``not reached``):
   those members are *missing*, the others *reached* it and wait for them. Sequence ids are
   shared by every member, so this match is exact. A group whose members all reached it has
   ``not completed`` at its first pending collective when some members completed it and others
   did not (a rank whose GPU stopped), ``stuck`` when none did. Send/recv carry per-rank counters
   that do not align across ranks, so they are paired in order per (sender, receiver): a pending
   send or recv without its counterpart (``p2p unmatched``) means its owner waits for the peer.
2. **The culprits.** A rank waits when it reached a ``not reached`` point or owns an unmatched
   send/recv. The missing ranks that wait for nobody are the culprits (the ranks the rest of the
   job waits on, directly or through others); when every missing rank waits (a cycle: ranks issued
   collectives in different orders), every missing rank is one.
3. **Each culprit's row** is its earliest blocking point: a ``not reached`` collective before an
   unmatched send/recv (a pipeline sender normally runs ahead of its receiver, so a pending send
   says only that the receiver has not got there *yet*), before ``not completed``; within a kind,
   the earliest creation time. Rows are ordered by that time: the earliest blocking point first.

On NVIDIA's two published scenarios (nvidia-resiliency-ext ``tests/attribution/unit``) this gives
their reference answers: rank 12 in group 74 at ``all_to_all`` 4027x5120 (rank 14, injected too,
reached it and waits on 12), and ranks 9 and 14 in group 72 at ``all_to_all`` 2048x5120 (the
pending pipeline sends to stage 1 are consequences). A member without a dump is missing wherever
its entry would be needed (its state is unknown; ``no_dump_ranks`` says so).
"""

from __future__ import annotations

import pandas as pd

from ..run import Run

__all__ = ["HANG_COLUMNS", "hang_culprits"]

HANG_COLUMNS = ["pg_name", "pg_desc", "kind", "seq_id", "profiling_name", "op", "size", "dtype",
                "missing_ranks", "no_dump_ranks", "reached_ranks", "time_s"]
KINDS = ("not reached", "p2p unmatched", "not completed", "stuck")


def _last_enqueued(run: Run, coll: pd.DataFrame) -> dict[tuple[int, str], int]:
    """(rank, group) -> last enqueued collective sequence id, where known (see step 1)."""
    last = {(int(r), str(g)): int(s) for (r, g), s in coll.groupby(["rank", "pg_name"])["collective_seq_id"].max()
            .items()}
    status = run.tables.get("pg_status", pd.DataFrame())
    p2p_groups = set(coll.loc[coll["is_p2p"], "pg_name"])
    for r, g, e in status[["rank", "pg_name", "enqueued"]].itertuples(index=False) if len(status) else ():
        if g and g not in p2p_groups:
            last.setdefault((int(r), str(g)), int(e))
    return last


def _row(pg: str, desc: str, kind: str, at: pd.DataFrame, missing: list[int], reached: list[int]) -> dict:
    """A blocking point; its sizes are those the lowest-numbered rank with an entry recorded."""
    first = at.sort_values(["rank", "time_created_s"]).iloc[0]
    seq = first["p2p_seq_id"] if kind == "p2p unmatched" else first["collective_seq_id"]
    return {"pg_name": pg, "pg_desc": desc, "kind": kind, "seq_id": int(seq), "profiling_name": first["profiling_name"],
            "op": first["op"], "size": first["input_sizes"], "dtype": first["input_dtypes"],
            "missing_ranks": sorted(missing), "reached_ranks": sorted(reached),
            "time_s": float(at["time_created_s"].min())}


def _group_point(pg: str, g: pd.DataFrame, members: list[int], last: dict, dumped: set[int]) -> dict:
    """The first blocking point of one group's pending collectives (step 1)."""
    desc = str(g["pg_desc"].iloc[0])
    by_seq = list(g.groupby("collective_seq_id"))
    for s, at in by_seq:
        have = set(at["rank"])
        reached = [r for r in members if r in have or last.get((r, pg), -1) >= s]
        if len(reached) < len(members):
            return _row(pg, desc, "not reached", at, [r for r in members if r not in reached], reached)
    s, at = by_seq[0]
    pending = sorted(set(at["rank"]))
    done = [r for r in members if r in dumped and r not in pending]
    return _row(pg, desc, "not completed" if done else "stuck", at, pending if done else [], members)


def _p2p_points(pend: pd.DataFrame) -> list[dict]:
    """Per group, the pending sends/recvs left over when each (sender, receiver) pair is matched in order."""
    out = []
    p2p = pend[pend["is_p2p"] & pend["peer_rank"].notna()].sort_values("time_created_s")
    for pg, g in p2p.groupby("pg_name"):
        is_send = g["op"].str.startswith("send")
        src = g["rank"].where(is_send, g["peer_rank"]).astype(int)
        dst = g["peer_rank"].where(is_send, g["rank"]).astype(int)
        left = []
        for _, pair in g.groupby([src, dst]):
            sends, recvs = pair[pair["op"].str.startswith("send")], pair[pair["op"].str.startswith("recv")]
            n = min(len(sends), len(recvs))
            left += [sends.iloc[n:], recvs.iloc[n:]]
        left = pd.concat(left)
        if len(left):
            owners, peers = set(left["rank"].astype(int)), set(left["peer_rank"].astype(int))
            out.append(_row(str(pg), str(g["pg_desc"].iloc[0]), "p2p unmatched", left.sort_values("time_created_s"),
                            list(peers), list(owners)))
    return out


def _points(run: Run) -> pd.DataFrame:
    """Every group's first blocking point, with a ``culprit`` column (steps 1-3)."""
    coll = run.tables.get("collectives")
    if coll is None:
        raise ValueError("the run has no 'collectives' table: load Flight Recorder dumps (format='flight_recorder')")
    if coll.empty:
        return pd.DataFrame(columns=[*HANG_COLUMNS, "culprit"])
    groups = run.tables.get("process_groups", pd.DataFrame(columns=["pg_name", "ranks"]))
    members = {str(n): [int(r) for r in rs] for n, rs in groups[["pg_name", "ranks"]].itertuples(index=False)}
    dumped = set(run.meta.extra.get("ranks") or coll["rank"].unique())
    last = _last_enqueued(run, coll)
    pend = coll[coll["state"] != "completed"]
    rows = [_group_point(str(pg), g, members.get(str(pg)) or sorted(g["rank"].unique()), last, dumped)
            for pg, g in pend[~pend["is_p2p"]].groupby("pg_name")] + _p2p_points(pend)
    pts = pd.DataFrame(rows, columns=HANG_COLUMNS)
    pts["no_dump_ranks"] = [sorted(set(m) - dumped) for m in pts["missing_ranks"]]
    pts["culprit"] = _culprits(pts)
    return pts.sort_values(["time_s", "pg_name"], kind="stable").reset_index(drop=True)


def _culprits(pts: pd.DataFrame) -> list[bool]:
    """Which rows are a culprit's earliest blocking point (steps 2 and 3)."""
    waits = pts["kind"].isin(KINDS[:2])
    waiting = {r for rs in pts.loc[waits, "reached_ranks"] for r in rs}
    missing = {r for rs in pts["missing_ranks"] for r in rs}
    roots = (missing - waiting) or {r for rs in pts.loc[waits, "missing_ranks"] for r in rs}
    order = sorted(pts.index, key=lambda i: (KINDS.index(pts.at[i, "kind"]), pts.at[i, "time_s"]))
    chosen = {next(i for i in order if r in pts.at[i, "missing_ranks"]) for r in roots}
    return [i in chosen for i in pts.index]


def hang_culprits(run: Run, *, every_group: bool = False) -> pd.DataFrame:
    """The collective each culprit of a hang never joined, earliest first (see the module docstring).

    One row per blocking point: ``pg_name`` (the job-wide group id, which NVIDIA's and PyTorch's
    analyzers print as the PG id), ``pg_desc``, ``kind``, ``seq_id`` (the collective sequence id,
    or the p2p one for send/recv), ``profiling_name``, ``op``, ``size``, ``dtype``,
    ``missing_ranks``, ``no_dump_ranks`` (those of them without a dump: missing for want of one),
    ``reached_ranks``, ``time_s`` (seconds after the dumps' first entry).
    ``every_group=True`` gives every group's first blocking point, with a ``culprit`` column.
    Empty when nothing is pending or every member of every group completed what it enqueued.
    """
    pts = _points(run)
    return pts if every_group else pts.loc[pts["culprit"].astype(bool)].drop(columns="culprit").reset_index(drop=True)
