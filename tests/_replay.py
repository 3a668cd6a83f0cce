"""A hand-made pipeline trace for the what-if replay tests, small enough to replay by hand.

One data-parallel replica: two pipeline stages, two microbatches in 1F1B order, transfers of zero
length. stage 0: F0 F1 B0 B1 (F 1 s, B 2 s); stage 1: F0 B0 F1 B1 (F 2 s, B 4 s). Each op starts
when its dependencies end:
  s0 F0 [0,1] F1 [1,2]; s1 F0 [1,3] B0 [3,7]; s0 B0 [7,9]; s1 F1 [7,9] B1 [9,13]; s0 B1 [13,15]
so a step takes 15 s.
"""

from __future__ import annotations

import pandas as pd

HAND_ROWS = [  # stage, optype, seq_id, start, end
    (0, "forward-compute", 0, 0, 1), (0, "forward-send", 0, 1, 1),
    (0, "forward-compute", 1, 1, 2), (0, "forward-send", 1, 2, 3),
    (0, "backward-recv", 0, 1, 7), (0, "backward-compute", 0, 7, 9),
    (0, "backward-recv", 1, 9, 13), (0, "backward-compute", 1, 13, 15),
    (1, "forward-recv", 0, 0, 1), (1, "forward-compute", 0, 1, 3),
    (1, "backward-compute", 0, 3, 7), (1, "backward-send", 0, 7, 7),
    (1, "forward-recv", 1, 3, 3), (1, "forward-compute", 1, 7, 9),
    (1, "backward-compute", 1, 9, 13), (1, "backward-send", 1, 13, 13),
]


def hand_trace(*, steps: tuple[int, ...] = (1, 2), dp: int = 1) -> pd.DataFrame:
    """The hand trace repeated for each step and each of ``dp`` identical replicas."""
    df = pd.DataFrame(HAND_ROWS, columns=["stage", "optype", "seq_id", "start_ts", "end"]).astype(
        {"start_ts": float, "end": float})
    df["duration"] = df["end"] - df["start_ts"]
    df = df.drop(columns="end")
    parts = [df.assign(step=s, dp_rank=d, rank=d * 2 + df["stage"]) for s in steps for d in range(dp)]
    return pd.concat(parts, ignore_index=True)
