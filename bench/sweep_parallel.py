"""Benchmark: a sweep in parallel on this machine against the same sweep one job after another (issue 17 item 2).

    python bench/sweep_parallel.py      # writes bench/results/sweep_parallel.json, < 2 min

The sweep: two default ``mode=train`` jobs (200 updates each, seeds 0 and 1), launched as a user
does (``python -m pilot mode=train -m seed=0,1``), once with Hydra's basic launcher (one job after
the other, each with the default thread count) and twice with ``hydra/launcher=local_parallel``
(both at once, one thread each: ``cpus_per_task: 1``), the second time as the A/A control.
Interleaved: parallel, sequential, parallel. Target: parallel <= 0.6x the sequential wall time on
2 cores. Each sweep's fixed cost per job: (wall - the jobs' updates x their own seconds per update) /
jobs (target: <= 10% of the job).
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
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pilot", "mode=train", JOBS, *launcher, f"hydra.sweep.dir={sweep_dir}", "-m"],
        cwd=REPO,
        env=env,
        check=True,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    records = [json.loads(path.read_text()) for path in sorted(sweep_dir.glob("*/run.json"))]
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
    }
    out = REPO / "bench" / "results" / "sweep_parallel.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(results, indent=1))
    print(f"written {out}")


if __name__ == "__main__":
    main()
