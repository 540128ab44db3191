"""The numbers a refactor must not change: run the pilot, a short training run and a short LR
sweep with the same seed, and write every number that does not depend on the clock.

    python scripts/numbers_snapshot.py before.json     # on the old code
    python scripts/numbers_snapshot.py after.json      # on the new code
    python scripts/numbers_snapshot.py after.json before.json   # also compare: exit 1 on a difference

Times, memory read from the process and paths are left out (they differ between two runs of the
same code); losses, learning rates, gradient norms, counts, verdicts and the memory estimate stay.
"""

from __future__ import annotations

import csv
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CLOCK_KEYS = {"seconds", "duration_s", "started_at", "finished_at", "wall_s", "elapsed_s"}
CLOCK_PARTS = ("seconds", "rss", "_h", "wall", "_at")  # hours, process memory, timestamps: differ run to run


def _without_clock(value):
    """The value with every key that measures the clock or the process dropped, at any depth."""
    if isinstance(value, dict):
        return {
            k: _without_clock(v)
            for k, v in value.items()
            if k not in CLOCK_KEYS and not any(part in k for part in CLOCK_PARTS)
        }
    if isinstance(value, list):
        return [_without_clock(v) for v in value]
    return value


def _metrics(path: Path) -> list[dict]:
    return [_without_clock(json.loads(line)) for line in path.read_text().splitlines()]


def _phase_losses(path: Path) -> dict:
    with path.open() as handle:
        return {row["phase"]: [row["verdict"], row["loss"]] for row in csv.DictReader(handle)}


def _run(args: list[str], cwd: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "pilot", *args], cwd=cwd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(
            f"python -m pilot {' '.join(args)} exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        )


def snapshot(work: Path) -> dict:
    _run(["hydra.run.dir=pilot_run"], work)
    _run(["mode=train", "budget.value=40", "hydra.run.dir=train_run"], work)
    _run(
        [
            "+experiment=lr_sweep",
            "budget.value=20",
            "loop.eval_every=10",
            "checkpoint.every=10",
            "hydra.sweep.dir=sweep",
            "-m",
        ],
        work,
    )
    pilot = work / "pilot_run"
    estimate = json.loads((pilot / "memory_estimate.json").read_text())
    return {
        "pilot": {
            "verdicts": json.loads((pilot / "run.json").read_text())["verdicts"],
            "phase_losses": _phase_losses(pilot / "phases.csv"),
            "memory_estimate": _without_clock(estimate),
        },
        "train": _metrics(work / "train_run" / "metrics.jsonl"),
        # job directories end in a random suffix: keyed by the job number before it
        "sweep": {
            job.name.split("-")[0]: _metrics(job / "metrics.jsonl") for job in sorted((work / "sweep").glob("[0-9]*"))
        },
    }


def differences(old, new, path: str = "") -> list[str]:
    """Where two snapshots differ, one line per leaf."""
    if isinstance(old, dict) and isinstance(new, dict):
        return [
            line
            for key in sorted(set(old) | set(new))
            for line in differences(old.get(key), new.get(key), f"{path}/{key}")
        ]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [line for i, (a, b) in enumerate(zip(old, new)) for line in differences(a, b, f"{path}[{i}]")]
    return [] if old == new else [f"{path}: {old!r} -> {new!r}"]


def main() -> None:
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    with tempfile.TemporaryDirectory() as tmp:
        numbers = snapshot(Path(tmp))
    Path(sys.argv[1]).write_text(json.dumps(numbers, indent=1, sort_keys=True) + "\n")
    print(f"wrote {sys.argv[1]}: pilot, {len(numbers['train'])} training rows, {len(numbers['sweep'])} sweep jobs")
    if len(sys.argv) == 3:
        found = differences(json.loads(Path(sys.argv[2]).read_text()), numbers)
        print("\n".join(found[:50]) or f"same numbers as {sys.argv[2]}")
        sys.exit(1 if found else 0)


if __name__ == "__main__":
    main()
