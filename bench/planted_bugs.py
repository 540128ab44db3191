"""Detection table of the pilot's checks over the planted-bug suite (tests/planted_tasks/).

    python bench/planted_bugs.py            # every task, one process per CPU; writes bench/results/planted_bugs.json
    python bench/planted_bugs.py --tiny-subset   # correct tasks also train their tiny subset, as the
                                                 # full pilot does (about 10 min); planted_bugs_tiny.json

Every planted bug must be flagged by the check that names its cause (``EXPECTED`` in its module);
every correct task must pass every check. Prints one row per task and the totals
("flagged x/N, false alarms y/M"). Checks are called directly on each task (no Hydra run).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from tests.planted_tasks import runner  # noqa: E402


def _one(name: str, tiny_subset: bool, threads: int) -> dict:
    torch.set_num_threads(threads)
    return runner.run_all([name], tiny_subset=tiny_subset)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tasks", nargs="*", help="task module names (default: every one)")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads (tiny models: 1 is fastest)")
    parser.add_argument("--tiny-subset", action="store_true", help="correct tasks run tiny_subset too")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1, help="processes, one task each at a time")
    parser.add_argument("--out", default=None, help="default: bench/results/planted_bugs[_tiny].json")
    args = parser.parse_args()
    out = args.out or str(ROOT / "bench" / "results" / f"planted_bugs{'_tiny' if args.tiny_subset else ''}.json")
    torch.set_num_threads(args.threads)
    started = time.perf_counter()
    names = args.tasks or runner.task_names()
    if args.workers > 1 and len(names) > 1:  # forked before any torch operation started a thread pool
        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("fork")) as pool:
            rows = list(pool.map(partial(_one, tiny_subset=args.tiny_subset, threads=args.threads), names))
    else:
        rows = runner.run_all(names, tiny_subset=args.tiny_subset)
    seconds = time.perf_counter() - started
    totals = runner.summary(rows)
    print(f"{'task':38} {'expected':34} {'got':6} {'ok':4} reason")
    for row in rows:
        if row["planted"]:
            print(
                f"{row['task']:38} {row['expected']:34} {row['got']:6} {'yes' if row['ok'] else 'NO':4} "
                f"{row['reason'][:110]}"
            )
        else:
            alarms = "; ".join(f"{step}: {reason[:60]}" for step, reason in row["alarms"].items())
            print(
                f"{row['task']:38} {'every check: pass':34} {'pass' if row['ok'] else 'ALARM':6} "
                f"{'yes' if row['ok'] else 'NO':4} {alarms}"
            )
    line = (
        f"flagged {totals['flagged']}/{totals['planted']} planted bugs, "
        f"false alarms {totals['false_alarms']}/{totals['correct']} correct tasks, {seconds:.1f} s"
    )
    print(line)
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(
        json.dumps(
            {
                "summary": {**totals, "seconds": round(seconds, 2)},
                "line": line,
                "tasks": rows,
                "machine": {
                    "python": platform.python_version(),
                    "torch": torch.__version__,
                    "threads": args.threads,
                    "platform": platform.platform(),
                },
            },
            indent=2,
            default=str,
        )
    )
    return 0 if totals["flagged"] == totals["planted"] and totals["false_alarms"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
