"""The whole comparison (``check``): read the run, collect this machine's facts, compare them part by part,
and run the smoke when asked."""

from __future__ import annotations

from pathlib import Path

from pilot.env_check.compare_code import (
    compare_code,
    compare_distributions,
    compare_imports,
    compare_sources,
    compare_targets,
)
from pilot.env_check.compare_device import compare_attention, compare_device, compare_distributed, compare_numerics
from pilot.env_check.compare_stack import compare_stack
from pilot.env_check.difference import Difference
from pilot.env_check.run_dir import PilotRun, load_run, multi_gpu
from pilot.env_check.smoke import smoke
from pilot.environment.device import DeviceFacts
from pilot.environment.facts import collect
from pilot.errors import error_line


def check(
    run_dir: Path, run_smoke: bool = False, rtol: float | None = None
) -> tuple[list[Difference], list[str], PilotRun]:
    """(differences, informational lines, the run) for ``run_dir`` on this machine."""
    run = load_run(run_dir)
    here, installed = collect(run.cfg)
    campaign = {**run.facts.get("campaign_distributions", {}), **here["campaign_distributions"]}
    differences = _compare(run, here, installed, campaign)  # the facts it reads: checked by load_run
    lines = [
        f"env_check: {run.directory} (pilot on {DeviceFacts(**run.facts['device']).describe()}, torch "
        f"{run.facts['torch']['version']}) vs this machine ({DeviceFacts(**here['device']).describe()}, torch "
        f"{here['torch']['version']}); config {run.config_source}; {len(run.lock)} distributions locked"
    ]
    if run_smoke:
        _smoke(run, rtol, differences, lines)
    return differences, lines, run


def _compare(run: PilotRun, here: dict, installed: dict, campaign: dict) -> list[Difference]:
    return (
        compare_stack(run.facts, here, multi_gpu(run))
        + compare_device(run, here)
        + compare_numerics(run, here)
        + compare_attention(run, here)
        + compare_distributed(run, here)
        + compare_targets(run, installed)
        + compare_distributions(run, installed, campaign)
        + compare_imports(run.facts.get("campaign_modules"), installed)
        + compare_code(run.record)
        + compare_sources(run.facts.get("pilot_sources"), here["pilot_sources"])
        + _pilots_verdict(run.record)
    )


def _pilots_verdict(record: dict) -> list[Difference]:
    """A pilot that gave no verdict (stopped by a signal, crashed) or whose verdict is not pass: its stack
    still compares, but it cleared no campaign to run (env_check passed a pilot stopped before any step)."""
    status, verdicts = record.get("status"), record.get("verdicts") or {}
    if record.get("mode", "pilot") != "pilot" or (status == "ok" and verdicts):
        return []
    failing = [f"{step}: {verdict}" for step, verdict in verdicts.items() if verdict in ("fail", "oom")]
    outcome = f"verdicts {', '.join(failing)}" if failing else f"status {status}, no verdict"
    fix = "fix what the pilot's report names" if failing else "run the pilot to its end"
    return [
        Difference(
            "the pilot's outcome",
            outcome,
            "a campaign starts from a pilot that passed",
            f"the pilot did not pass: nothing it measured clears the campaign. Fix: {fix}, then compare with it",
            True,
        )
    ]


def _smoke(run: PilotRun, rtol: float | None, differences: list[Difference], lines: list[str]) -> None:
    """--smoke, unless a target does not import here (its line says so): its differences and lines added."""
    missing = [
        d for d in differences if d.severe and ("does not import" in str(d.here) or "has no attribute" in str(d.here))
    ]
    if missing:
        differences.append(
            Difference(
                "smoke",
                "one update and one evaluation",
                "not run",
                "a target does not import here (see its line)",
                True,
            )
        )
        return
    try:
        found, smoke_lines = smoke(run, rtol)
    except Exception as error:  # what the smoke exists to find: this machine cannot run the variant
        found = [Difference("smoke", "one update and one evaluation", "crashed", error_line(error), True)]
        smoke_lines = []
    differences += found
    lines += smoke_lines
