"""Benchmark: a sweep in parallel on this machine against the same sweep one job after another (issue 17 item 2).

    python bench/sweep_parallel.py      # writes bench/results/sweep_parallel.json, < 2 min

The sweep: two default ``mode=train`` jobs (200 updates each, seeds 0 and 1), launched as a user
does (``python -m pilot mode=train -m seed=0,1``), once with Hydra's basic launcher (one job after
the other, each with the default thread count) and twice with ``hydra/launcher=local_parallel``
(both at once, one thread each: ``cpus_per_task: 1``), the second time as the A/A control.
Interleaved: parallel, sequential, parallel. Target: parallel <= 0.6x the sequential wall time on
2 cores. Each sweep's fixed cost per job: (wall - the jobs' updates x their own seconds per update) /
jobs (target: <= 10% of the job). The floor: the parallel wall if each job's own start, set-up and
closing cost nothing (the launching process before its first job is submitted, the longest job's
training, the sequential sweep's time after its last job's record: the recap), over the sequential wall: no launcher, however it
starts its jobs (forked from a process that imported torch, say), gets below it.
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
JOBS = "seed=0,1"


def sweep(work: Path, *launcher: str) -> dict:
    sweep_dir = work / f"sweep-{time.monotonic_ns()}"
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "RANK", "WORLD_SIZE")}
    started, started_clock = time.perf_counter(), time.time()
    subprocess.run(
        [sys.executable, "-m", "pilot", "mode=train", JOBS, *launcher, f"hydra.sweep.dir={sweep_dir}", "-m"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    ended_clock = started_clock + wall
    records = [json.loads(path.read_text()) for path in sorted(sweep_dir.glob("*/run.json"))]
    submitted = [path.stat().st_mtime for path in sweep_dir.glob(".submitit/*/*_submitted.pkl")]
    last_record = max(path.stat().st_mtime for path in sweep_dir.glob("*/run.json"))
    training = sum(r["updates_done"] * r["seconds_per_update"] for r in records)
    one_after_another = not launcher  # side by side, the jobs' training times overlap
    return {
        "wall_s": wall,
        "training_s": training,  # updates x each job's own seconds per update
        # one after another, what a job pays besides its updates: imports (once per launcher
        # process), set-up, final validation, checkpoint, closing, the closing's child
        "fixed_s_per_job": (wall - training) / len(records) if one_after_another else None,
        "fixed_share": (wall - training) / wall if one_after_another else None,
        "jobs": len(records),
        "statuses": [r["status"] for r in records],
        "threads": [r["threads"]["count"] for r in records],
        # side by side: what the launching process spends before its first job is submitted
        # (imports, composing, validating every job) and after the last job's record (the recap)
        "launcher_before_jobs_s": min(submitted) - started_clock if submitted else None,
        "launcher_after_jobs_s": ended_clock - last_record,
        "longest_job_training_s": max(r["updates_done"] * r["seconds_per_update"] for r in records),
    }


def floor(parallel: dict, sequential: dict) -> dict:
    """The parallel sweep's wall if each job's own start (a new process importing torch, Hydra and
    pilot), set-up and closing cost nothing, and the launcher heard of their end at once: the
    launching process before its first job is submitted, the longest job's training, and what the
    sequential sweep spends after its last job's record (the recap: any launcher writes it), over the
    sequential wall. A ratio above the target here cannot be brought to it by any launcher."""
    least = (
        parallel["launcher_before_jobs_s"] + parallel["longest_job_training_s"] + sequential["launcher_after_jobs_s"]
    )
    return {
        "least_parallel_wall_s": least,
        "least_ratio": least / sequential["wall_s"],
        # the most jobs forked from a process that imported everything could save: each job's start,
        # set-up and closing (side by side) and submitit noticing their end
        "jobs_own_cost_s": parallel["wall_s"] - least,
    }


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pilot-sweep-") as scratch:
        work = Path(scratch)
        parallel = sweep(work, "hydra/launcher=local_parallel")
        sequential = sweep(work)
        parallel_again = sweep(work, "hydra/launcher=local_parallel")
    results = {
        "sweep": f"mode=train {JOBS} (2 jobs x 200 updates)",
        "sequential": sequential,
        "parallel": parallel,
        "parallel (A/A)": parallel_again,
        "parallel_vs_sequential": parallel["wall_s"] / sequential["wall_s"],
        "aa_control": parallel_again["wall_s"] / parallel["wall_s"],
        "floor": floor(parallel, sequential),
        "floor (A/A)": floor(parallel_again, sequential),
    }
    out = REPO / "bench" / "results" / "sweep_parallel.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
