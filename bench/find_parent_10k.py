"""Benchmark: a relaunch's parent among 10,000 earlier runs (issue 17, item 3).

    python bench/find_parent_10k.py        # writes bench/results/find_parent_10k.json

Builds 10,000 run directories (run.json each, 3 variants x many seeds) under one root, then
times, interleaved and repeated: the full scan every job start paid before the index (read
every run.json), the indexed search (one index file + the chosen run.json), and the indexed
search again as an A/A control. Target: < 50 ms per job start at 10,000 runs.
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from pilot import run_index  # noqa: E402

RUNS, REPEATS = 10_000, 5
LRS = ["0.0001", "5e-05", "0.0002"]


def make_runs(root: Path) -> None:
    for index in range(RUNS):
        run = root / f"{index // 1000:02d}" / f"{index:05d}"
        run.mkdir(parents=True)
        record = {
            "run_id": f"run-{index:05d}",
            "variant": f"optim.lr={LRS[index % 3]}",
            "seed": index // 3,
            "mode": "train",
            "started_at": f"2026-01-01T{index // 3600:02d}:{index // 60 % 60:02d}:{index % 60:02d}",
            "status": "ok",
        }
        (run / "run.json").write_text(json.dumps(record))


def full_scan(root: Path, variant: str, seed: int) -> str | None:
    """What every job start did before the index: read every run.json under the root."""
    newest = None
    for path in root.glob("**/run.json"):
        data = json.loads(path.read_text())
        if data["variant"] == variant and data["seed"] == seed and data["mode"] != "pilot":
            stamp = (data["started_at"], data["run_id"])
            newest = max(newest or stamp, stamp)
    return newest[1] if newest else None


def timed(function, *args) -> tuple[float, object]:
    start = time.perf_counter()
    result = function(*args)
    return time.perf_counter() - start, result


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_runs(root)
        rebuild_s, _ = timed(run_index.rebuild, root)  # once per root, when the index is missing
        seconds = {"full_scan": [], "indexed": [], "indexed_again (A/A)": []}
        for repeat in range(REPEATS):
            variant, seed = f"optim.lr={LRS[repeat % 3]}", 1000 + repeat
            scan_s, expected = timed(full_scan, root, variant, seed)
            index_s, found = timed(run_index.find_parent, [root], variant, seed, None)
            again_s, found_again = timed(run_index.find_parent, [root], variant, seed, None)
            assert expected == found == found_again, (expected, found, found_again)
            for name, value in zip(seconds, (scan_s, index_s, again_s)):
                seconds[name].append(value)
    medians = {name: statistics.median(values) for name, values in seconds.items()}
    result = {
        "runs": RUNS,
        "repeats": REPEATS,
        "median_seconds": medians,
        "index_rebuild_seconds": rebuild_s,
        "speedup": medians["full_scan"] / medians["indexed"],
        "aa_ratio": medians["indexed_again (A/A)"] / medians["indexed"],
        "target_seconds": 0.05,
        "met": medians["indexed"] < 0.05,
    }
    out = REPO / "bench" / "results" / "find_parent_10k.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    from command_line import no_options  # bench/, beside this script

    no_options(__doc__)
    main()
