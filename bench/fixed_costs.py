"""Benchmark: the fixed costs a user feels (issue 17 item 2), this tree against an earlier commit.

    python bench/fixed_costs.py [--before REV]   # writes bench/results/fixed_costs.json, < 2 min

1. the default pilot, ``python -m pilot`` as the README runs it (its default threads: since
   2026-12-05 the cores are shared with its checks' process, 1 each on 2 cores; run.json's count is
   in the results): wall time of the whole process, and its ``reload_check`` and ``resume_check``
   rows (each runs in a new process);
2. a default ``mode=train`` job (200 updates), as a sweep runs each of its jobs: wall time of the
   whole process, and its fixed cost = wall - updates x the run's own ``seconds_per_update``
   (imports, set-up, final validation, checkpoint, closing: what a sweep pays per job).

``REV`` (default: the commit before the checks' process was started early) runs from a git
worktree, interleaved with this tree: after, before, after again (the A/A control). The train job at 2
threads (``run.threads=2``). Targets: the pilot <= 8 s on 2 idle cores; fixed cost per job
<= 10% of the job.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BEFORE = "cf70b4e"  # the last commit that started the reload and resume checks' processes on demand


def run_pilot(tree: Path, run_dir: Path, *overrides: str) -> float:
    """``python -m pilot <overrides>`` from ``tree``: its wall time."""
    env = {k: v for k, v in os.environ.items() if k not in ("PILOT_FAULT", "RANK", "WORLD_SIZE")}
    env["PYTHONPATH"] = str(tree)  # the tree's own pilot package, whatever is installed
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pilot", f"hydra.run.dir={run_dir}", *overrides],
        cwd=tree,
        env=env,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def pilot_once(tree: Path, work: Path) -> dict:
    run_dir = work / f"pilot-{time.monotonic_ns()}"
    seconds = run_pilot(tree, run_dir)
    with (run_dir / "phases.csv").open() as handle:
        rows = {row["phase"]: float(row["duration_s"]) for row in csv.DictReader(handle)}
    threads = json.loads((run_dir / "run.json").read_text()).get("threads", {}).get("count")
    return {
        "wall_s": seconds,
        "reload_check_s": rows["reload_check"],
        "resume_check_s": rows["resume_check"],
        "threads": threads,
    }


def job_once(tree: Path, work: Path) -> dict:
    run_dir = work / f"job-{time.monotonic_ns()}"
    seconds = run_pilot(tree, run_dir, "mode=train", "run.threads=2")
    record = json.loads((run_dir / "run.json").read_text())
    training = record["updates_done"] * record["seconds_per_update"]
    return {
        "wall_s": seconds,
        "training_s": training,
        "fixed_s": seconds - training,
        "fixed_share": 1 - training / seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare with (default %(default)s)")
    args = parser.parse_args()
    results: dict = {"before": args.before, "threads": "the pilot's default; the train job 2"}
    with tempfile.TemporaryDirectory(prefix="pilot-fixed-") as scratch:
        work, before = Path(scratch) / "runs", Path(scratch) / "before"
        subprocess.run(
            ["git", "worktree", "add", "--detach", str(before), args.before], cwd=REPO, check=True, capture_output=True
        )
        try:
            for name, measure in (("pilot", pilot_once), ("train_job", job_once)):
                results[name] = {
                    "after": measure(REPO, work),
                    "before": measure(before, work),
                    "after (A/A)": measure(REPO, work),
                }
                print(name, json.dumps(results[name], indent=1), flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(before)], cwd=REPO, capture_output=True)
    out = REPO / "bench" / "results" / "fixed_costs.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
