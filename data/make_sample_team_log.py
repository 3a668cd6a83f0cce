"""Write ``data/sample_team_log.csv``: the per-rank step log that notebook 08 reports on by default.

It stands in for the log a team would point the report at: one CSV row per (attempt, step,
rank) with ``start_s``/``end_s`` (seconds since the job started), the rank's input wait
(``data_wait_s``) and its own compute time (``compute_s``). The run behind it is a seeded
:func:`mfu_toolkit.simulate.simulate` of Llama 3 8B (8,192-token sequences, 32 per step, so
``llama3-8b`` FLOPs × 32 per step) on 16 H100 SXM GPUs in bf16 at 40 % steady-state MFU, with
what real jobs have: a warm-up, jitter, one slow rank (11, 6 % slower), rare transient slowdowns,
input stalls, evaluations every 50 steps, blocking checkpoints every 40 steps, and one failure
at step 130 (the job resumes from the step-120 checkpoint, so steps 121-130 are redone).

Like many home-grown step logs it records steps only: initialisation, evaluations, checkpoints
and the failure are not written as events, so the report has to find them as gaps. Three
defects of the kind such logs have are planted, so the loader's report has something to say:
a header line written again when the job was relaunched, a row that one rank flushed twice,
and a last line cut off when the job was killed.

Deterministic: running it again rewrites the same bytes (``tests/test_report.py`` checks).

    .venv/bin/python data/make_sample_team_log.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from mfu_toolkit.flops import model_flops
from mfu_toolkit.simulate import SimConfig, simulate

HERE = Path(__file__).resolve().parent
OUT = HERE / "sample_team_log.csv"

# What the CSV does not say about itself; notebook 08 states the same facts for the sample.
FACTS = {"preset": "llama3-8b", "seq_len": 8192, "global_batch": 32, "accelerator": "H100 SXM",
         "dtype": "bf16", "n_accelerators": 16, "checkpoint_write_s": 15.0}
COLUMNS = ["attempt", "step", "rank", "start_s", "end_s", "data_wait_s", "compute_s"]


def sample_config() -> SimConfig:
    flops_per_step = model_flops(FACTS["preset"], seq_len=FACTS["seq_len"]).training_per_sample * FACTS["global_batch"]
    return SimConfig(
        n_ranks=16, n_steps=160, step_time_s=2.4, jitter=0.02, slow_ranks=(11,), slow_factor=1.06,
        transient_prob=0.002, transient_factor=1.6, data_stall_prob=0.04, data_stall_s=0.9,
        warmup_steps=6, warmup_factor=2.5, init_s=60.0, eval_every=50, eval_s=20.0,
        checkpoint_every=40, checkpoint_s=FACTS["checkpoint_write_s"], checkpoint_load_s=20.0,
        fail_at_steps=(130,), fail_fraction=0.5, restart_s=60.0,
        samples_per_step=float(FACTS["global_batch"]), seq_len=FACTS["seq_len"],
        model_flops_per_step=flops_per_step, seed=2024, name="sample-team-run",
    )


def csv_text() -> str:
    steps = simulate(sample_config()).steps
    rows = [",".join(COLUMNS)]
    for a, s, r, t0, t1, w, c in steps[COLUMNS].itertuples(index=False):
        rows.append(f"{a},{s},{r},{t0:.4f},{t1:.4f},{w:.4f},{c:.4f}")
    # Plant the three defects (see the docstring). Row i of `steps` is line i + 2 of the file.
    relaunch = int(steps.index[steps["attempt"] == 1][0]) + 1  # first row of the second attempt
    rows.insert(relaunch, rows[0])                              # the header, written again
    rows.insert(1000, rows[999])                                # one row flushed twice
    last = rows[-1].split(",")
    rows[-1] = ",".join(last[:4])                               # the killed job's last line
    return "\n".join(rows) + "\n"


def main() -> int:
    OUT.write_text(csv_text())
    print(f"wrote {OUT.name}: {OUT.stat().st_size:,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
