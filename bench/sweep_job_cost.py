"""Benchmark: what one more job costs a sweep run one job after another, beyond its updates (issue 17 item 2).

    python bench/sweep_job_cost.py      # writes bench/results/sweep_job_cost.json, < 2 min

A sweep of 1 job and one of 5 jobs (``mode=train budget.value=20 run.threads=1``, seeds 0..4),
launched as a user does (``python -m pilot ... -m``, Hydra's basic launcher: every job in the
sweep's process). The marginal cost of a job: (wall of 5 - wall of 1 - the 4 extra jobs' updates x
their own seconds per update) / 4: set-up, Hydra composing its config, checkpoints, final
validation, closing. Measured with pilot's sweeper (``hydra/sweeper=compose_once``, the default:
each job's config composed once) and with Hydra's own (``hydra/sweeper=basic``: composed twice),
interleaved after / before / after; the second "after" is the A/A control. Target (issue 17): a
job's fixed cost <= 10% of a 200-update default job.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
JOB = ["mode=train", "budget.value=20", "run.threads=1"]


def sweep(work: Path, sweeper: str, seeds: str) -> dict:
    sweep_dir = work / f"sweep-{time.monotonic_ns()}"
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "RANK", "WORLD_SIZE")}
    command = [sys.executable, "-m", "pilot", *JOB, f"seed={seeds}", f"hydra/sweeper={sweeper}"]
    started = time.perf_counter()
    subprocess.run([*command, f"hydra.sweep.dir={sweep_dir}", "-m"], cwd=REPO, env=env, check=True, capture_output=True)
    wall = time.perf_counter() - started
    records = [json.loads(path.read_text()) for path in sorted(sweep_dir.glob("*/run.json"))]
    assert all(r["status"] == "ok" for r in records), [r["status"] for r in records]
    return {"wall_s": wall, "training_s": sum(r["updates_done"] * r["seconds_per_update"] for r in records)}


def marginal(work: Path, sweeper: str) -> dict:
    one, five = sweep(work, sweeper, "0"), sweep(work, sweeper, "0,1,2,3,4")
    extra = (five["wall_s"] - one["wall_s"] - (five["training_s"] - one["training_s"])) / 4
    return {"sweeper": sweeper, "one_job": one, "five_jobs": five, "seconds_per_extra_job": round(extra, 2)}


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pilot-job-cost-") as scratch:
        work = Path(scratch)
        after = marginal(work, "compose_once")
        before = marginal(work, "basic")
        after_again = marginal(work, "compose_once")
    results = {
        "sweep": " ".join(JOB) + ", 1 job vs 5 jobs (seeds 0..4), one after another in one process",
        "after (compose_once)": after,
        "before (basic: composed twice)": before,
        "after (A/A)": after_again,
        "saved_s_per_job": round(before["seconds_per_extra_job"] - after["seconds_per_extra_job"], 2),
        "aa_difference_s_per_job": round(after_again["seconds_per_extra_job"] - after["seconds_per_extra_job"], 2),
    }
    out = REPO / "bench" / "results" / "sweep_job_cost.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
