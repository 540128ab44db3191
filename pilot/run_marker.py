"""Which directory holds a pilot run: the nearest one at or above a path with pilot's run.json. A run's
directory holds that run alone (directory_keys refuses a new one inside it), and a path a user gives for a
run (its checkpoints/, a checkpoint file) names the run that holds it."""

from __future__ import annotations

import json
import os
from pathlib import Path


def enclosing_run(path: Path) -> Path | None:
    """The nearest directory at or above ``path`` that holds a pilot run (a run.json naming its run_id and
    status), or None: a run directory holds one run, and anything written inside it is taken for that run's."""
    for folder in (Path(os.path.abspath(path)), *Path(os.path.abspath(path)).parents):
        record = folder / "run.json"
        try:
            if record.is_file() and record.stat().st_size < 1 << 24:
                data = json.loads(record.read_bytes())
                if isinstance(data, dict) and "run_id" in data and "status" in data:
                    return folder
        except (OSError, ValueError):
            continue  # unreadable or not a record of pilot's: a user's own run.json
    return None


def run_mode(run: Path) -> str | None:
    """The ``mode`` the run at ``run`` records (train, pilot, estimate), None when its run.json says none."""
    try:
        mode = json.loads((run / "run.json").read_bytes()).get("mode")
    except (OSError, ValueError, AttributeError):
        return None
    return mode if isinstance(mode, str) else None
