"""Benchmark: build the recap over 10,000 synthetic run directories.

    python bench/recap_10k.py            # writes bench/results/recap_10k.json

Each synthetic run has a run.json and a metrics.jsonl of 200 updates and 4
validation points (what an lr_sweep job writes), over 3 variants x many seeds,
all of one sweep (one sweep_id, as one multirun launch writes it);
1% are diverged, 1% have a corrupt run.json. Measured against the read floor: a plain
Python read of every file (twice: the A/A control), each recap right after one (files in
the page cache, as right after a sweep). Targets (issue 17): tables <= 2x the plain read,
the picture <= 1.5 s on top of the tables.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pilot.recap import build_recap  # noqa: E402


def make_runs(root: Path, count: int, updates: int) -> None:
    rng = random.Random(0)
    lrs = ["0.0001", "5e-05", "0.0002"]
    for index in range(count):
        run = root / f"{index // 1000:02d}" / f"{index:05d}"
        run.mkdir(parents=True)
        lr = lrs[index % 3]
        status = "diverged" if index % 100 == 7 else "ok"
        record = {
            "run_id": f"run-{index:05d}",
            "parent_id": None,
            "sweep_id": "bench",
            "variant": f"optim.lr={lr}",
            "seed": index // 3,
            "status": status,
            "stop_cause": "budget_reached",
            "mode": "train",
            "overrides": [f"optim.lr={lr}", f"seed={index // 3}"],
            "started_at": "2026-11-30T01:00:00+0000",
            "finished_at": "2026-11-30T01:00:30+0000",
            "peak_memory": {"rss_peak_bytes": 400_000_000},
        }
        (run / "run.json").write_text("{broken" if index % 100 == 13 else json.dumps(record))
        lines = []
        loss = 5.0
        for update in range(1, updates + 1):
            loss *= 0.99 + rng.random() * 0.01
            lines.append(
                json.dumps(
                    {
                        "kind": "train",
                        "update": update,
                        "loss": loss,
                        "lr": float(lr),
                        "examples_seen": 16 * update,
                        "seconds": 0.04,
                    }
                )
            )
            if update % 50 == 0:
                lines.append(
                    json.dumps(
                        {"kind": "val", "update": update, "loss": math.nan if status == "diverged" else loss * 1.1}
                    )
                )
        (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")


def plain_read(root: Path) -> float:
    """Seconds to read every file under ``root`` as text: the floor any recap stands on."""
    started = time.perf_counter()
    for current, _, files in os.walk(root):
        for name in files:
            Path(current, name).read_text()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--updates", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        make_runs(root, args.runs, args.updates)
        made = time.perf_counter() - started
        timings, floors = {}, []
        plain_read(root)  # into the page cache
        for plot in (False, True):
            floors.append(plain_read(root))
            started = time.perf_counter()
            frame = build_recap([root], root / f"recap-plot{int(plot)}", control="optim.lr=1e-4", plot=plot)
            timings["with_picture" if plot else "tables_only"] = time.perf_counter() - started
    floor = min(floors)
    result = {
        "runs": args.runs,
        "updates_per_run": args.updates,
        "rows": len(frame),
        "unreadable_rows": int((frame["status"] == "unreadable").sum()),
        "seconds_plain_read": [round(f, 2) for f in floors],  # A/A: the same read twice
        "seconds_tables_only": round(timings["tables_only"], 2),
        "seconds_with_picture": round(timings["with_picture"], 2),
        "tables_over_plain_read": round(timings["tables_only"] / floor, 2),
        "picture_seconds_over_tables": round(timings["with_picture"] - timings["tables_only"], 2),
        "seconds_to_create_synthetic_runs": round(made, 1),
        "targets": {"tables_over_plain_read": 2.0, "picture_seconds_over_tables": 1.5},
    }
    result["meets_targets"] = result["tables_over_plain_read"] <= 2.0 and result["picture_seconds_over_tables"] <= 1.5
    out = REPO / "bench" / "results" / "recap_10k.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
