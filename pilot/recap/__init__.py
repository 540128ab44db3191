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

from pilot.lazy import attribute_getter

_HOMES = {  # each name's module, imported on first use: Hydra imports this package for RecapCallback in
    # every run, and a single run's process never needs pandas (~0.3 s of its start)
    "Unreadable": "pilot.record_damage",
    "RecapCallback": "pilot.recap.entry",
    "main": "pilot.recap.entry",
    "read_metrics": "pilot.metrics_reading",
    "build_recap": "pilot.recap.outputs",
    "declared_campaign": "pilot.recap.declared",
    "earlier_job_results": "pilot.recap.declared",
    "other_launches_runs": "pilot.recap.declared",
    "phase_tables": "pilot.recap.outputs",
    "plot_curves": "pilot.recap.picture",
    "NOT_RUNS": "pilot.recap.reading",
    "PILOTS_AND_ESTIMATES": "pilot.recap.reading",
    "RUN_MARKERS": "pilot.recap.reading",
    "RecapRefused": "pilot.recap.reading",
    "collect": "pilot.recap.reading",
    "find_run_dirs": "pilot.recap.reading",
    "read_run": "pilot.recap.reading",
    "STATUSES": "pilot.recap.run_json",
    "METRIC": "pilot.recap.summary",
    "one_value_per_seed": "pilot.recap.summary",
    "summarise": "pilot.recap.summary",
    "summarise_sweeps": "pilot.recap.summary",
    "task_change": "pilot.recap.summary",
    "matches": "pilot.variant",
    "parse_overrides": "pilot.variant",
}
__all__ = sorted(_HOMES)


__getattr__ = attribute_getter(__name__, _HOMES)
