"""A small per-rank step log for the report tests, written by the test (its facts are known by construction).

37 steps × 4 ranks of 0.5 s (rank 3 takes 0.6 s), a 4 s checkpoint gap after step 20, and one
bad row: line 31 has a rank that is not a number.
"""

from __future__ import annotations

from pathlib import Path

N_STEPS, N_RANKS, SLOW_RANK = 37, 4, 3


def write_step_log(path: Path) -> Path:
    """Write the step log described above to ``path`` and return it."""
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
