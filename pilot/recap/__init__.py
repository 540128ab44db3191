"""The recap: one row per run, every status, and a per-variant summary over seeds, sweep by sweep.

    python -m pilot.recap DIR [DIR ...] [--out DIR] [--control "optim.lr=0.0001"] [--pool]

DIRs are run or sweep directories (searched recursively for runs); one that does not
exist is refused by name (exit 2) before anything is written. Every run directory is a
row; one the recap cannot read is an ``unreadable`` row whose stop_cause names the file,
the line and what was wrong — never a crash. Runs are judged only against runs of their
own sweep (run.json ``sweep_id``, else the parent directory) unless pooled (``--pool``),
and a seed run twice counts once. Built automatically when a multirun ends
(``RecapCallback``, a Hydra callback) over that multirun's runs, as recap.csv, recap.md
and recap.png in the sweep directory.

Modules, each one concern: ``reading`` (the recap's one reader of run.json and
metrics.jsonl), ``summary`` (seeds, control, verdicts, sweeps), ``outputs`` (the files),
``picture`` (recap.png), ``entry`` (the command line and the callback).
"""

from pilot.recap.damage import Unreadable
from pilot.recap.entry import RecapCallback, main
from pilot.recap.metrics_jsonl import read_metrics
from pilot.recap.outputs import build_recap, phase_tables
from pilot.recap.picture import plot_curves
from pilot.recap.reading import NOT_RUNS, RUN_MARKERS, RecapRefused, collect, find_run_dirs, read_run
from pilot.recap.run_json import STATUSES
from pilot.recap.summary import METRIC, one_value_per_seed, summarise, summarise_sweeps, task_change
from pilot.variant import matches, parse_overrides

__all__ = [
    "METRIC",
    "NOT_RUNS",
    "RUN_MARKERS",
    "STATUSES",
    "RecapCallback",
    "RecapRefused",
    "Unreadable",
    "build_recap",
    "collect",
    "find_run_dirs",
    "main",
    "matches",
    "one_value_per_seed",
    "parse_overrides",
    "phase_tables",
    "plot_curves",
    "read_metrics",
    "read_run",
    "summarise",
    "summarise_sweeps",
    "task_change",
]
