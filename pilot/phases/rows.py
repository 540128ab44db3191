"""phases.csv: its columns, the frame every reader builds from rows, and its one writer.

A row is one phase on one device and rank (``pilot.phases.measure``): what it ran with
(``INPUT_COLUMNS``), its duration after synchronisation, verdict and detail, and the memory
counters of ``pilot.phases.probe`` (``CUDA_COLUMNS`` empty on a CPU, never zero).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from pilot.errors import disk_full_guard

CUDA_COLUMNS = (
    "mem_baseline_bytes",
    "mem_allocated_bytes",
    "mem_reserved_bytes",
    "mem_peak_allocated_bytes",
    "mem_peak_reserved_bytes",
)
CPU_COLUMNS = ("rss_baseline_bytes", "rss_bytes", "rss_peak_bytes", "rss_peak_scope")
INPUT_COLUMNS = (
    "micro_batch",
    "accumulation",
    "replicas",
    "seq_len",
    "examples",
    "precision",
    "activation_checkpointing",
)
COLUMNS = (
    "phase",
    "device",
    "rank",
    "duration_s",
    "verdict",
    "detail",
    "loss",
    *INPUT_COLUMNS,
    *CUDA_COLUMNS,
    *CPU_COLUMNS,
)
INTEGER_COLUMNS = ("rank", "micro_batch", "accumulation", "replicas", "seq_len", "examples")


def phases_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    """The rows in phases.csv's columns and types (counts and bytes as nullable integers)."""
    frame = pd.DataFrame(list(rows), columns=list(COLUMNS))
    for column in INTEGER_COLUMNS + tuple(c for c in COLUMNS if c.endswith("_bytes")):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    frame["duration_s"] = pd.to_numeric(frame["duration_s"], errors="coerce")
    return frame


def write_phases_csv(run_dir: Path, rows: Sequence[dict[str, Any]], keep_earlier: bool = False) -> Path:
    """Write ``run_dir/phases.csv`` (atomically: a temporary file, then a rename).

    ``keep_earlier``: a resumed run appends its rows to the file's; nothing a run wrote is
    replaced (an unreadable file is kept as phases.unreadable.csv).
    """
    path = Path(run_dir) / "phases.csv"
    frame = phases_frame(rows)
    if keep_earlier and path.exists():
        try:
            frame = phases_frame(pd.concat([pd.read_csv(path), frame], ignore_index=True).to_dict("records"))
        except (OSError, ValueError, pd.errors.ParserError):
            path.rename(path.with_name("phases.unreadable.csv"))
    tmp = path.with_name(".phases.csv.tmp")
    with disk_full_guard(path, tmp, needed_bytes=64 * 1024):
        frame.to_csv(tmp, index=False)
        tmp.replace(path)
    return path
