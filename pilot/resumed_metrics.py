"""metrics.jsonl when a run resumes: the rows after its checkpoint set aside (``set_aside_metrics_after``),
and where an attempt killed before its record said stood (``logged_position``)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pilot.errors import disk_full_guard
from pilot.run_record import parse_row


def logged_position(run_dir: Path) -> dict | None:
    """Where an attempt killed before its record said stood: its last whole training line in metrics.jsonl."""
    path = Path(run_dir) / "metrics.jsonl"
    lines = path.read_text(errors="replace").splitlines() if path.is_file() else []
    for line in reversed(lines):
        row = parse_row(line)
        if row is not None and row.get("kind") == "train" and isinstance(row.get("update"), int):
            counts = {key: row[key] for key in ("examples_seen", "targets_seen") if isinstance(row.get(key), int)}
            return {"updates_done": row["update"], **counts, "read_from": LOGGED_POSITION}
    return None


LOGGED_POSITION = (
    "metrics.jsonl's last training line: the attempt ended before its record said where it stood (killed, or its "
    "record could not be written: a full disk, a directory made read-only)"
)


def set_aside_metrics_after(run_dir: Path, update: int) -> str:
    """Rows written after the checkpoint are redone: move them to metrics.discarded.jsonl
    (kept, never deleted), so metrics.jsonl reads as one uninterrupted run; so are rows of an update
    already read (a row twice). The updates up to the checkpoint without a training row, as spans
    ("21-30"; "" when none): a file cut or removed since cannot be written again."""
    path = Path(run_dir) / "metrics.jsonl"
    if not path.exists():
        return _spans(range(1, update + 1))
    kept, discarded, seen = [], [], set()
    for line in path.read_text().splitlines():
        row = parse_row(line)
        keep = row is not None and isinstance(row.get("update"), int) and row["update"] <= update
        key = (row.get("kind"), row.get("update")) if keep else None
        keep = keep and key not in seen
        seen.add(key)
        (kept if keep else discarded).append(line)  # a line cut by the kill is discarded too
    if discarded:
        aside = Path(run_dir) / "metrics.discarded.jsonl"
        with disk_full_guard(aside), aside.open("a") as handle:
            handle.write("".join(line + "\n" for line in discarded))
    tmp = path.with_name(".metrics.jsonl.tmp")
    with disk_full_guard(path, tmp):
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, path)
    return _spans(u for u in range(1, update + 1) if ("train", u) not in seen)


def _spans(updates: Iterable[int]) -> str:
    """1, 2, 3, 7 -> '1-3, 7'."""
    spans: list[list[int]] = []
    for u in updates:
        if spans and spans[-1][1] == u - 1:
            spans[-1][1] = u
        else:
            spans.append([u, u])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)
