"""The jobs a sweep declared (its ``multirun.yaml``) that none of its run directories holds: the
launch stopped before them (Ctrl-C, SIGTERM, the launcher killed) or they never started. A recap of
the directories alone would read as if the sweep had been that small."""

from __future__ import annotations

import json
import os
from collections.abc import Collection
from pathlib import Path

import pandas as pd
from omegaconf import OmegaConf

from pilot.recap.reading import NOT_RUNS, collect, find_run_dirs, within
from pilot.variant import is_defining, parse_overrides, same_value, sweep_combinations


def declared_jobs(multirun: Path) -> list[list[str]] | None:
    """The overrides of every job the launch declared (the sweeper's params, then the command line's,
    expanded as Hydra's basic sweeper does); None when multirun.yaml cannot be read."""
    try:
        config = OmegaConf.load(multirun)
        params = OmegaConf.select(config, "hydra.sweeper.params")
        task = OmegaConf.select(config, "hydra.overrides.task") or []
        axes = {str(key): str(value) for key, value in (params or {}).items()}
        for override in task:
            key, _, value = str(override).partition("=")
            axes[key] = value
        return sweep_combinations(axes)
    except Exception:  # noqa: BLE001 - an unreadable or foreign multirun.yaml declares nothing we can tell
        return None


def _holds(row: pd.Series, job: dict[str, str]) -> bool:
    """Whether the run of ``row`` is the job: its overrides hold the job's, now or before a forced resume
    changed them."""
    before = row.get("_overrides_before")
    if isinstance(before, str):
        for overrides in json.loads(before):
            if _matches(parse_overrides(overrides), job):
                return True
    return _holds_now(row, job)


def _compared(key: str) -> bool:
    """Whether a job's override tells its run apart: the keys that define a run, its seed and its mode;
    not ``run.threads`` or ``checkpoint.every`` (a relaunch that changes them continues or keeps the same
    run), nor hydra.* and hydra/launcher=... (not recorded per run)."""
    return not key.startswith("hydra") and (is_defining(key) or key in ("seed", "mode"))


def _holds_now(row: pd.Series, job: dict[str, str]) -> bool:
    for key, value in job.items():
        if not _compared(key):
            continue
        have = row.get("seed") if key == "seed" else row.get(f"set:{key}")
        if have is None or (isinstance(have, float) and pd.isna(have)) or not same_value(str(have), value):
            return False
    return True


def _pilots_and_estimates(sweep_dir: Path) -> list[dict[str, str]]:
    """The overrides of each run directory in ``sweep_dir`` whose run.json is a pilot's or an estimate's
    (``mode=pilot``, ``mode=estimate``: jobs that started and ran, left out of a recap of training runs)."""
    held = []
    for run_dir in find_run_dirs([sweep_dir]):
        try:
            record = json.loads((run_dir / "run.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(record, dict) and record.get("mode") in NOT_RUNS and isinstance(record.get("overrides"), list):
            held.append(parse_overrides([str(o) for o in record["overrides"]]))
    return held


def _not_a_pilot(sweep_dir: Path, jobs: list) -> list:
    """Of ``jobs``, those no pilot or estimate run in ``sweep_dir`` holds (read only when some job lacks a
    training run: a sweep of training runs pays nothing)."""
    held = _pilots_and_estimates(sweep_dir)
    return [job for job in jobs if not any(_matches(one, parse_overrides(job)) for one in held)]


def _matches(settings: dict[str, str], job: dict[str, str]) -> bool:
    """Whether overrides ``settings`` hold the ``job``'s (``_compared`` keys only)."""
    return all(not _compared(key) or same_value(settings.get(key, "\0"), value) for key, value in job.items())


def never_started(frame: pd.DataFrame, roots: list[Path] = (), started_elsewhere: Collection[Path] = ()) -> list[str]:
    """One line per multirun.yaml that declares jobs no run beside it holds (readable or not). By the
    file, not by the runs' sweep: a job's directory whose run.json is missing has no sweep_id, and
    counted as a sweep of its own it made the jobs its neighbours ran look never started. Only for a
    sweep directory the recap reads whole (one of ``roots`` or under one: a recap of some of its jobs
    says nothing of the others); a job held by a run left out of this recap (``started_elsewhere``: another
    launch's, in the same directory) started."""
    lines: list[str] = []
    elsewhere = collect(list(started_elsewhere)) if started_elsewhere else None
    whole = [os.path.abspath(root) for root in roots]
    multiruns: dict[Path, list[int]] = {  # a recap of a sweep stopped before any job: its own multirun.yaml
        Path(os.path.abspath(root), "multirun.yaml"): []
        for root in roots
        if os.path.isfile(os.path.join(root, "multirun.yaml"))
    }
    groups = frame.groupby("sweep", sort=True) if not frame.empty and "sweep" in frame else []
    for _, rows in groups:
        parents = sorted({os.path.dirname(os.path.abspath(str(d))) for d in rows["run_dir"]})  # strings: faster
        found = next(
            (Path(p, "multirun.yaml") for p in parents if os.path.isfile(os.path.join(p, "multirun.yaml"))), None
        )
        if found is not None and (not whole or any(within(str(found.parent), root) for root in whole)):
            multiruns.setdefault(found, []).extend(rows.index)
    for found, index in sorted(multiruns.items()):
        declared = declared_jobs(found)
        if not declared or len(declared) <= 1:
            continue
        if not index:  # no training run at all: every declared job that no pilot or estimate holds is missing
            if missing := _not_a_pilot(found.parent, declared):
                lines.append(_never_started_line(found, declared, missing, 0))
            continue
        rows = frame.loc[index]
        readable = rows[rows["status"] != "unreadable"]
        if elsewhere is not None and not elsewhere.empty:
            readable = pd.concat([readable, elsewhere[elsewhere["status"] != "unreadable"]])
        missing = [
            job for job in declared if not any(_holds(row, parse_overrides(job)) for _, row in readable.iterrows())
        ]
        missing = _not_a_pilot(found.parent, missing) if missing else missing
        unreadable = len(rows) - len(readable)
        if len(missing) <= unreadable:  # the unreadable runs may be those jobs
            continue
        lines.append(_never_started_line(found, declared, missing, unreadable))
    return lines


def earlier_job_results(sweep_dir: Path, earlier_runs: Collection[Path]) -> set[Path]:
    """Of the run directories that were in ``sweep_dir`` before a launch, those that hold a job this
    launch declares (its multirun.yaml) and for which the launch made no new directory: with a fixed
    ``hydra.sweep.subdir`` a relaunch resumes an interrupted job, or finds a finished one, in its old
    directory, and that run is the job's result (the newest, when several hold it). With the default,
    unique subdirectories every job makes a new one and the earlier runs stay out."""
    jobs = declared_jobs(sweep_dir / "multirun.yaml") if earlier_runs else None
    if not jobs:
        return set()
    frame = collect([sweep_dir])
    earlier = frame["run_dir"].isin({os.fspath(Path(p)) for p in earlier_runs})
    new, old = frame[~earlier], frame[earlier & (frame["status"] != "unreadable")]
    kept: set[Path] = set()
    for job in jobs:
        wanted = parse_overrides(job)
        if any(_holds(row, wanted) for _, row in new.iterrows()):
            continue
        holders = [row for _, row in old.iterrows() if _holds(row, wanted)]
        if holders:
            kept.add(Path(max(holders, key=lambda row: str(row.get("run_id") or ""))["run_dir"]))
    return kept


def other_launches_runs(sweep_dir: Path, earlier_runs: Collection[Path], launch_id: str | None) -> set[Path]:
    """The run directories made in ``sweep_dir`` since this launch started by another launch into the same
    directory at the same time (their run.json names another ``sweep_id``): judged apart already, they
    are left out of this launch's recap and journal entry too."""
    if not launch_id:
        return set()
    earlier = {os.fspath(Path(p)) for p in earlier_runs}
    others = set()
    for run_dir in find_run_dirs([sweep_dir]):
        if os.fspath(run_dir) in earlier:
            continue
        try:
            sweep_id = json.loads((run_dir / "run.json").read_text()).get("sweep_id")
        except (OSError, ValueError, AttributeError):
            continue  # unreadable: its row says so, in this launch's recap
        if sweep_id and sweep_id != launch_id:
            others.add(run_dir)
    return others


def _never_started_line(found: Path, declared: list, missing: list, unreadable: int) -> str:
    shown = "; ".join(" ".join(job) for job in missing[:10]) + (" ..." if len(missing) > 10 else "")
    maybe = f" ({unreadable} unreadable run(s) may be some of them)" if unreadable else ""
    return (
        f"Never started: {len(missing)} of the {len(declared)} jobs {found} declares have no run directory"
        f"{maybe}: {shown}. The launch stopped before them: start each with python -m pilot and its overrides "
        "(or -m over these values alone)."
    )


def declared_campaign(paths: Collection[Path]) -> tuple[str, float | None, str]:
    """The control and quality tolerance the sweeps under ``paths`` declared (``campaign.control`` and
    ``campaign.quality_tolerance`` in each one's multirun.yaml), and where they were read: a recap run on a
    sweep directory judges it as its launch did, not "no control declared". Sweeps that declare different
    ones give none (the note says so)."""
    found: dict[tuple[str, float | None], list[str]] = {}
    for path in paths:
        multirun = Path(path) / "multirun.yaml"
        try:
            config = OmegaConf.load(multirun)
            control = str(OmegaConf.select(config, "campaign.control", default="") or "")
            tolerance = OmegaConf.select(config, "campaign.quality_tolerance", default=None)
            tolerance = None if tolerance is None else float(tolerance)
        except Exception:  # noqa: BLE001 - no multirun.yaml, or one that cannot be read: nothing declared there
            continue
        if control or tolerance is not None:
            found.setdefault((control, tolerance), []).append(str(multirun))
    if len(found) == 1:
        (control, tolerance), where = next(iter(found.items()))
        return control, tolerance, ", ".join(where)
    if found:
        said = "; ".join(f"campaign.control={c!r} in {', '.join(w)}" for (c, _), w in found.items())
        return "", None, f"the sweeps declare different controls ({said}): none is taken, give --control"
    return "", None, ""
