"""Benchmark: the default thread count against explicit ones, idle and beside a busy process (issue 17 item 1).

    python bench/threads_default.py        # writes bench/results/threads_default.json, < 2 min

Each measurement is a new process that builds the default task and model through pilot
(``engine.build.build_trainer``, after ``configure_threads``: the count ``run.threads`` gives
it) and times 20 updates after 2 warm-up ones. Settings: ``run.threads=0`` (the default),
1 and 2, and the default again as the A/A control; conditions: the machine idle, and one other
process spinning on a core. Interleaved, repeated; the median of each is compared with the best
explicit count of the same condition. Also the default pilot, ``python -m pilot`` as the README
types it, whole process, idle (once per setting: a pilot takes 6-9 s), whose checks' process works
beside it. Target: the default within 10% of the best.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
UPDATES, REPEATS = 20, 2
SETTINGS = {"default": 0, "1 thread": 1, "2 threads": 2, "default (A/A)": 0}
CHILD = """
import sys, time, torch
from tests.conftest import compose_config
from pilot.engine.build import build_trainer, configure_threads
cfg = compose_config(["run.threads=" + sys.argv[1], "budget.value=100"])
choice = configure_threads(cfg)
trainer = build_trainer(cfg)
for _ in range(2):
    trainer.train_step()
start = time.perf_counter()
for _ in range(int(sys.argv[2])):
    trainer.train_step()
print(time.perf_counter() - start, choice.count)
"""


def measure(threads: int) -> tuple[float, int]:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(threads), str(UPDATES)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    seconds, count = done.stdout.split()[-2:]
    return float(seconds), int(count)


def condition(busy: bool) -> dict:
    spinner = (
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) if busy else None
    )  # one other process on one core
    try:
        times: dict[str, list[float]] = {name: [] for name in SETTINGS}
        counts: dict[str, int] = {}
        for _ in range(REPEATS):
            for name, threads in SETTINGS.items():  # interleaved: drift hits every setting alike
                seconds, counts[name] = measure(threads)
                times[name].append(seconds)
    finally:
        if spinner is not None:
            spinner.kill()
    median = {name: statistics.median(values) for name, values in times.items()}
    best = min(median["1 thread"], median["2 threads"])
    return {
        "seconds_per_update": {name: value / UPDATES for name, value in median.items()},
        "threads_chosen": counts,
        "default_vs_best": median["default"] / best,
        "aa_control": median["default (A/A)"] / median["default"],
        "runs": times,
    }


def pilot_seconds(threads: int, scratch: Path) -> tuple[float, int]:
    """The README's ``python -m pilot`` (``run.threads`` added unless 0): wall seconds, threads recorded."""
    run_dir = scratch / f"pilot-{threads}-{time.monotonic_ns()}"
    command = [sys.executable, "-m", "pilot", f"hydra.run.dir={run_dir}"] + (
        [f"run.threads={threads}"] if threads else []
    )
    started = time.perf_counter()
    subprocess.run(command, cwd=REPO, capture_output=True, check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    seconds = time.perf_counter() - started
    return seconds, json.loads((run_dir / "run.json").read_text())["threads"]["count"]


def pilot_condition() -> dict:
    with tempfile.TemporaryDirectory(prefix="pilot-threads-") as scratch:
        measured = {name: pilot_seconds(threads, Path(scratch)) for name, threads in SETTINGS.items()}
    seconds = {name: value for name, (value, _) in measured.items()}
    best = min(seconds["1 thread"], seconds["2 threads"])
    return {
        "seconds": seconds,
        "threads_chosen": {name: count for name, (_, count) in measured.items()},
        "default_vs_best": seconds["default"] / best,
        "aa_control": seconds["default (A/A)"] / seconds["default"],
    }


def main() -> None:
    sys.path.insert(0, str(REPO))  # this tree's pilot, whatever is installed
    from pilot.cpu_budget import busy_elsewhere

    busy = busy_elsewhere(window_s=2.0)  # the "idle" rows are idle only if nothing else runs (measured, said)
    if busy is not None and busy > 0.3:
        print(f"warning: other processes keep {busy:.1f} core(s) busy: the 'idle' rows below are not idle")
    results = {
        "machine": f"{os.cpu_count()} CPUs, usable {len(os.sched_getaffinity(0))}",
        "busy_elsewhere_at_start": busy,  # cores other processes kept busy over 2 s before the first row
        "updates": UPDATES,
        "repeats": REPEATS,
        "idle": condition(busy=False),
        "one_busy_process": condition(busy=True),
        "pilot_idle": pilot_condition(),
        "target": "default within 10% of the best explicit count (default_vs_best <= 1.10)",
    }
    out = REPO / "bench" / "results" / "threads_default.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    for name in ("idle", "one_busy_process"):
        r = results[name]
        per = ", ".join(f"{k} {v * 1000:.1f} ms" for k, v in r["seconds_per_update"].items())
        print(f"{name}: {per}; default/best {r['default_vs_best']:.2f} (A/A {r['aa_control']:.2f})")
    r = results["pilot_idle"]
    per = ", ".join(f"{k} {v:.1f} s ({r['threads_chosen'][k]} thread(s))" for k, v in r["seconds"].items())
    print(f"the default pilot, idle: {per}; default/best {r['default_vs_best']:.2f} (A/A {r['aa_control']:.2f})")
    print(f"-> {out}")


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
