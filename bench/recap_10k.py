"""Benchmark: build the recap over 10,000 synthetic run directories.

    python bench/recap_10k.py                    # writes bench/results/recap_10k.json, about 1 min
    python bench/recap_10k.py --before 190d6b2   # and the same runs recapped by that revision's pilot

Each synthetic run has a run.json and a metrics.jsonl of 200 updates and 4 validation points
(what an lr_sweep job writes; its run.json with the stamp of metrics.jsonl a run's end writes, which
the tables read while the file is unchanged; measured again with the stamps removed, as runs killed
before their end leave them), over 3 variants x many seeds, all of one sweep (one sweep_id, as
one multirun launch writes it); 1% are diverged, 1% have a corrupt run.json. Measured against the
read floor: a plain Python read of every file, taken right before each recap (the A/A control:
how far that read alone moves), with the files in the page cache, as right after a sweep. Each
recap runs in a new process, as ``python -m pilot.recap`` does (the picture pays for importing
matplotlib), timed inside it from before ``build_recap`` to after; one thread (BLAS, OpenMP).
Repeated (3 times; 2 for --before): the median of each recap over the plain read right before it,
and of the picture over the tables of the same repeat, is what the targets are checked on (issue 17:
tables <= 2x the plain read, the picture <= 1.5 s on top of the tables); the fastest of each beside.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path

THREADS = {name: "1" for name in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
from pilot.metrics_reading import metrics_stamp  # noqa: E402 - the stamp a run's end writes, as it writes it

RECAP = """
import json, sys, time
from pathlib import Path
from pilot.recap import build_recap
root, out, plot = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3] == "1"
started = time.perf_counter()
frame = build_recap([root], out, control="optim.lr=1e-4", plot=plot)
seconds = time.perf_counter() - started
print(json.dumps({"seconds": seconds, "rows": len(frame), "unreadable": int((frame["status"] == "unreadable").sum())}))
"""


TRAIN_LINE = '{"kind": "train", "update": %d, "loss": %r, "lr": %r, "examples_seen": %d, "seconds": 0.04}'
VAL_LINE = '{"kind": "val", "update": %d, "loss": %s}'


def make_runs(root: Path, count: int, updates: int, stamped: bool = True) -> None:
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
        lines = []
        loss = 5.0
        for update in range(1, updates + 1):  # as json.dumps writes each dict (floats by repr), 5x faster
            loss *= 0.99 + rng.random() * 0.01
            lines.append(TRAIN_LINE % (update, loss, float(lr), 16 * update))
            if update % 50 == 0:
                lines.append(VAL_LINE % (update, "NaN" if status == "diverged" else repr(loss * 1.1)))
        (run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
        if stamped:  # as a run's end records it (run_record.RunRecord.finish)
            record["metrics_file"] = metrics_stamp(run / "metrics.jsonl")
        (run / "run.json").write_text("{broken" if index % 100 == 13 else json.dumps(record))


def without_stamps(root: Path) -> None:
    """Every run.json as a run killed before its end, or written before the stamp existed, leaves it."""
    for path in root.glob("*/*/run.json"):
        text = path.read_text()
        if text != "{broken":
            record = json.loads(text)
            record.pop("metrics_file", None)
            path.write_text(json.dumps(record))


def plain_read(root: Path) -> float:
    """Seconds to read every file under ``root`` as text: the floor any recap stands on."""
    started = time.perf_counter()
    for current, _, files in os.walk(root):
        for name in files:
            Path(current, name).read_text()
    return time.perf_counter() - started


def recap(code: Path, root: Path, out: Path, plot: bool) -> dict:
    """One build_recap in a new process running the pilot package found in ``code``."""
    env = {**os.environ, **THREADS, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", RECAP, str(root), str(out), "1" if plot else "0"],
        cwd=code,  # the working directory comes first on sys.path
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def export(revision: str, into: Path) -> Path:
    """The pilot package as it was at ``revision`` (git archive), unpacked under ``into``."""
    archive = subprocess.run(["git", "archive", revision, "pilot"], cwd=REPO, capture_output=True, check=True)
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(into, filter="data")
    return into


def measure(code: Path, root: Path, repeats: int, pictures: bool = True) -> dict[str, list]:
    """Interleaved: a plain read, the tables, a plain read, tables and picture; ``repeats`` times
    (``pictures=False``: the tables alone)."""
    seconds: dict[str, list] = {"plain_read": [], "tables": [], "with_picture": []}
    for repeat in range(repeats):
        for plot in (False, True) if pictures else (False,):
            seconds["plain_read"].append(plain_read(root))
            done = recap(code, root, root.parent / f"out-{repeat}-{int(plot)}", plot)
            seconds["with_picture" if plot else "tables"].append(done["seconds"])
    return {**seconds, "rows": done["rows"], "unreadable": done["unreadable"]}


def summary(seconds: dict[str, list]) -> dict:
    """Each recap against the plain read taken right before it (the median over repeats: one
    unlucky or lucky read moves it little), and the fastest of each."""
    plain, tables, picture = seconds["plain_read"], seconds["tables"], seconds["with_picture"]
    if not picture:
        return {
            "seconds_plain_read": [round(s, 2) for s in plain],
            "seconds_tables_only": [round(s, 2) for s in tables],
            "tables_over_plain_read": round(statistics.median(t / p for t, p in zip(tables, plain)), 2),
        }
    return {
        "seconds_plain_read": [round(s, 2) for s in plain],  # A/A: the same read, before each recap
        "plain_read_spread": round(max(plain) / min(plain), 2),  # slowest / fastest
        "seconds_tables_only": [round(s, 2) for s in tables],
        "seconds_with_picture": [round(s, 2) for s in picture],
        "tables_over_plain_read": round(statistics.median(t / p for t, p in zip(tables, plain[::2])), 2),
        "tables_over_plain_read_fastest": round(min(tables) / min(plain), 2),
        "picture_seconds_over_tables": round(statistics.median(w - t for w, t in zip(picture, tables)), 2),
        "picture_seconds_over_tables_fastest": round(min(picture) - min(tables), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--updates", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--before", default=None, help="a git revision to time on the same runs (2 repeats)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "runs"
        started = time.perf_counter()
        make_runs(root, args.runs, args.updates)
        made = time.perf_counter() - started
        plain_read(root)  # into the page cache
        now = measure(REPO, root, args.repeats)
        before = measure(export(args.before, Path(tmp) / "before"), root, 2) if args.before else None
        without_stamps(root)  # runs killed before their end, or written before the stamp existed
        plain_read(root)
        unstamped = measure(REPO, root, 2, pictures=False)
    result = {
        "runs": args.runs,
        "updates_per_run": args.updates,
        "rows": now["rows"],
        "unreadable_rows": now["unreadable"],
        "threads": 1,
        **summary(now),
        "runs_without_their_end_stamp": summary(unstamped),  # every metrics.jsonl read and checked line by line
        "seconds_to_create_synthetic_runs": round(made, 1),
        "targets": {"tables_over_plain_read": 2.0, "picture_seconds_over_tables": 1.5},
    }
    result["meets_targets"] = result["tables_over_plain_read"] <= 2.0 and result["picture_seconds_over_tables"] <= 1.5
    if before:
        result["before"] = {"revision": args.before, **summary(before)}
    out = REPO / "bench" / "results" / "recap_10k.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
