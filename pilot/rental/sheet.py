"""From estimate to rental: build, write and print the choice sheet and the campaign plan.

Writes into the run directory ``memory_estimate.json``, ``choice_sheet.md``,
``choice_sheet.csv`` (one row per GPU and count) and ``campaign_plan.csv``, and
appends the plan chosen to the campaign's journal. Used by ``mode=estimate``
(any scale, nothing allocated) and by the pilot's ``estimate`` step (with the
pilot's measurements).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass, field, fields
from pathlib import Path

from omegaconf import DictConfig

from pilot.data.task import TaskData
from pilot.engine.batch_plan import plan_from_config
from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.rental.campaign_plan import Plan, as_dict, plan_campaign, plan_rows, sweep_jobs, time_jobs
from pilot.rental.catalog import find, load_catalog
from pilot.rental.choice_sheet import (
    ChoiceRow,
    Measured,
    candidates,
    choice_rows,
    compute_precision,
    recommended,
    row_overrides,
)
from pilot.rental.estimate_cache import EstimateCache
from pilot.rental.estimate_table import breakdown_rows, estimate_lines, whose
from pilot.rental.journal import append_entry, journal_problem
from pilot.rental.plan_text import duration as _duration
from pilot.rental.plan_text import plan_lines
from pilot.rental.requirements import Requirement
from pilot.run_record import write_text_atomic
from pilot.text_table import csv_text, markdown_table

log = logging.getLogger("pilot")


@dataclass
class SheetResult:
    rows: list[ChoiceRow]
    plan: Plan | None
    chosen: ChoiceRow | None
    paths: dict[str, Path]
    estimates: list[MemoryEstimate] = field(default_factory=list)  # every one the rows used
    pinned: str | None = None  # the hardware rental.gpu / rental.gpu_count pinned, in words
    reasons: list[str] = field(default_factory=list)  # of the rows that could have been chosen and do not fit
    overrides: list[str] | None = None  # what makes the config run as the chosen row says
    utilisation: float | None = None  # rental.utilisation: what a time per update not measured assumes

    def plan_lines(self, brief: bool = True) -> list[str]:
        lines = plan_lines(self.plan, self.chosen, brief=brief, pinned=self.pinned, reasons=self.reasons)
        if self.overrides is None:
            return lines
        said = (
            f"Run as planned with: {' '.join(self.overrides)} (added to your command line)"
            if self.overrides
            else "The config runs as planned as it is (no override)"
        )
        return lines[:1] + [f"- {said}." if brief else f"{said}."] + lines[1:]


def _row_cells(r: ChoiceRow) -> list:
    return [
        r.gpu,
        r.count,
        f"{r.memory_gib:g}",
        r.strategy,
        "yes" if r.fits else "no",
        "" if r.need_gib is None else f"{r.need_gib:.1f}",
        "" if r.headroom_gib is None else f"{r.headroom_gib:+.1f}",
        "" if r.micro_batch is None else f"{r.micro_batch} x {r.accumulation}",
        r.precision,
        "" if r.activation_checkpointing is None else ("on" if r.activation_checkpointing else "off"),
        _duration(r.seconds_per_update),
        ("measured" if r.time_source.startswith("measured") else ("estimate" if r.time_source else "")),
        "" if r.cost_per_update is None else f"{r.cost_per_update:.4g}",
        r.requirements,
        r.reason,
    ]


ROW_HEADER = [
    "GPU",
    "n",
    "GiB",
    "strategy",
    "fits",
    "need GiB",
    "headroom",
    "micro x accum",
    "precision",
    "ckpt",
    "per update",
    "time",
    "cost / update",
    "requirements",
    "reason / notes",
]

SHEET_COLUMNS = [f.name for f in fields(ChoiceRow)]  # choice_sheet.csv
PLAN_COLUMNS = [  # campaign_plan.csv
    "status",
    "job",
    "updates",
    "validations",
    "train_h",
    "eval_h",
    "closing_h",
    "hours",
    "gpu",
    "gpus",
    "package_days",
    "note",
    "sources",
]


def build_and_write(
    cfg: DictConfig,
    run_dir: Path,
    task: TaskData,
    estimate: MemoryEstimate,
    sweep_params: dict[str, str] | None = None,
    measured: Measured | None = None,
    validation: list[str] | None = None,
    journal: bool = True,
    requirements: list[Requirement] | None = None,
    cache: EstimateCache | None = None,
) -> SheetResult:
    """``cache``: the estimates already made (``estimate`` is its base), else a new cache from ``estimate``."""
    run_dir = Path(run_dir)
    catalog = load_catalog(cfg.rental)
    cache = cache if cache is not None else EstimateCache(cfg, task, estimate)
    rows = choice_rows(cfg, cache, catalog, measured, requirements)
    chosen = recommended(rows, cfg.rental.gpu, cfg.rental.gpu_count, compute_precision(cfg))
    plan = None
    train_examples = len(task.splits["train"])
    jobs = sweep_jobs(cfg, sweep_params, train_examples)
    if chosen is not None:
        gpu = find(catalog, chosen.gpu)
        chosen_estimate = cache.get(chosen.micro_batch, chosen.activation_checkpointing, chosen.ranks)
        plan = plan_campaign(
            time_jobs(cfg, jobs, chosen, gpu, chosen_estimate, measured, len(task.splits.get("val") or [])),
            list(cfg.rental.packages_days),
            chosen.gpu,
            chosen.count,
        )
    examples_per_update = plan_from_config(cfg, train_examples).examples_per_update
    result = SheetResult(rows, plan, chosen, {}, list(cache.estimates.values()), _pinned(cfg), [])
    result.utilisation = float(cfg.rental.utilisation)
    if chosen is not None:
        result.overrides = row_overrides(cfg, chosen)
    else:  # why not: the reasons of the rows that could have been chosen
        result.reasons = [
            r.reason if not r.fits else r.requirements
            for r in rows
            if (cfg.rental.gpu is None or r.gpu == cfg.rental.gpu)
            and (cfg.rental.gpu_count is None or r.count == cfg.rental.gpu_count)
        ]
    lines = _sheet_lines(cfg, len(jobs), examples_per_update, estimate, validation, result)
    result.paths = _write_files(run_dir, lines, rows, plan, chosen, estimate, cache, validation)
    if journal:
        try:
            result.paths["journal"] = append_entry(
                Path(cfg.campaign.journal), f"plan chosen ({run_dir})", result.plan_lines()
            )
        except OSError as error:  # the sheet and plan are written: say what the journal lacks
            log.warning("%s", journal_problem(cfg.campaign.journal, error))
    return result


def _pinned(cfg: DictConfig) -> str | None:
    """The hardware the user pinned (rental.gpu, rental.gpu_count), in words; None when pilot picks."""
    return (
        f"{cfg.rental.gpu_count or 'any number of'} x {cfg.rental.gpu}"
        if cfg.rental.gpu
        else (f"{cfg.rental.gpu_count} GPU(s)" if cfg.rental.gpu_count else None)
    )


def _prices_line(cfg: DictConfig, rows: list[ChoiceRow]) -> str:
    """What the catalog's prices allow among the rows the plan chooses from (``candidates``): a cost per
    update on every one (the plan takes the cheapest), on some (not compared), or none."""
    among = candidates(rows, cfg.rental.gpu, cfg.rental.gpu_count, compute_precision(cfg))
    unpriced = sorted({r.gpu for r in among if r.cost_per_update is None})
    if not among or len(unpriced) == len({r.gpu for r in among}):
        return "Prices are not in the catalog: add price_per_hour to compare costs."
    if unpriced:
        return (
            f"price_per_hour is missing for {', '.join(unpriced)}: rentals are compared by cost only when every "
            "GPU the plan chooses among has one, so the plan takes the smallest rental."
        )
    return (
        "Cost per update = price_per_hour x GPUs x time per update (the time's source as in its column); the "
        "plan takes the cheapest per update."
    )


def estimated_time(utilisation: float) -> str:
    """How a time per update that was not measured is made (choice_sheet.md and the console say the same)."""
    return (
        f"from counted FLOPs at {utilisation:g} of the datasheet peak (rental.utilisation, declared), plus the gradient "
        "communication over the catalog's link bandwidth, not overlapped with compute; data loading is not "
        "included, and for a small model kernel-launch overhead dominates, which no FLOP count sees"
    )


def _time_caveat(result: SheetResult) -> str | None:
    """The console's line under the times it prints: what an estimated one (``~ est.``) is, and that the plan's
    hours rest on them where the chosen row's time is one; None when every time shown was measured."""
    shown = [r for r in result.rows if r.seconds_per_update is not None]
    if all(r.time_source.startswith("measured") for r in shown) or result.utilisation is None:
        return None
    plan = result.chosen is not None and not result.chosen.time_source.startswith("measured")
    return f"- ~ est.: computed, not measured: {estimated_time(result.utilisation)}." + (
        " The plan's hours below are made of such estimates." if plan else ""
    )


def _sheet_lines(
    cfg: DictConfig,
    jobs: int,
    examples_per_update: int,
    estimate: MemoryEstimate,
    validation: list[str] | None,
    result: SheetResult,
) -> list[str]:
    """choice_sheet.md: the campaign, the memory estimate, the rows per GPU and count, the plan."""
    lines = [
        "# Choice sheet",
        "",
        f"Campaign: {jobs} job(s); {examples_per_update} examples per update (kept on every row); "
        f"need = estimated peak per GPU x {1 + float(cfg.rental.margin):g} + {cfg.rental.reserve_gib:g} GiB "
        "reserve (both declared in conf/rental/default.yaml, not measured). Enough memory is chosen only "
        "after the software passed the pilot.",
        "",
        "## Memory estimate",
        "",
        *estimate_lines(estimate),
    ]
    if validation:
        lines += ["## Estimate vs measured (same tracker, real tensors, this machine)", "", *validation, ""]
    lines += [
        "## Per GPU and count",
        "",
        markdown_table(ROW_HEADER, [_row_cells(r) for r in result.rows]),
        "",
        "Time per update: *measured* only where the pilot ran on that GPU model with that setup; "
        f"otherwise an *estimate* {estimated_time(float(cfg.rental.utilisation))}. " + _prices_line(cfg, result.rows),
        "",
    ]
    lines += ["## Campaign plan", "", *result.plan_lines(brief=False), ""]
    return lines


SHEET_FILES = ("choice_sheet.md", "choice_sheet.csv", "campaign_plan.csv", "memory_estimate.json")


def remove_sheet(run_dir: Path) -> list[str]:
    """Take away the choice sheet's files of a pilot or estimate stopped by a signal before it ended: a
    sheet whose plan rests on verdicts never given ("the config runs as planned") claims what did not
    happen. The names of those removed."""
    removed = []
    for name in SHEET_FILES:
        with contextlib.suppress(FileNotFoundError):
            (Path(run_dir) / name).unlink()
            removed.append(name)
    return removed


def _write_files(
    run_dir: Path,
    lines: list[str],
    rows: list[ChoiceRow],
    plan: Plan | None,
    chosen: ChoiceRow | None,
    estimate: MemoryEstimate,
    cache: EstimateCache,
    validation: list[str] | None,
) -> dict[str, Path]:
    """choice_sheet.md, choice_sheet.csv, campaign_plan.csv and memory_estimate.json; their paths (no
    space for one: a DiskFull naming it)."""
    write_text_atomic(run_dir / "choice_sheet.md", "\n".join(lines))  # a full disk: one message naming
    write_text_atomic(run_dir / "choice_sheet.csv", csv_text(SHEET_COLUMNS, [r.as_dict() for r in rows]))
    plan_text = csv_text(PLAN_COLUMNS, plan_rows(plan) if plan else [])
    write_text_atomic(run_dir / "campaign_plan.csv", plan_text)  # the file, none left cut
    data = {
        "estimate": estimate.to_dict(),
        "other_estimates": {
            f"micro{k[0]}_ckpt{int(k[1])}_ranks{k[2]}": v.to_dict()
            for k, v in cache.estimates.items()
            if k != cache.base_key
        },
        "choice": [r.as_dict() for r in rows],
        "chosen": chosen.as_dict() if chosen else None,
        "plan": as_dict(plan) if plan else None,
        "validation": validation,
    }
    write_text_atomic(run_dir / "memory_estimate.json", json.dumps(data, indent=1, default=str))
    return {
        "sheet": run_dir / "choice_sheet.md",
        "table": run_dir / "choice_sheet.csv",
        "plan": run_dir / "campaign_plan.csv",
        "estimate": run_dir / "memory_estimate.json",
    }


def print_sheet(result: SheetResult, estimate: MemoryEstimate) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=min(120, max(80, Console().width)))
    unit, scale = next(
        (u, f) for u, f in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10), ("B", 1)) if estimate.peak_bytes >= f
    )
    how = "fake tensors" if estimate.fake else "measured"
    phases = Table(title=f"memory estimate, {whose(estimate)} ({how}; {unit})")
    for name in ("phase", "part", "peak", "params", "grads", "optim", "activ", "temp"):
        phases.add_column(name, no_wrap=True)
    short = {"forward/backward": "fwd/bwd", "optimizer step": "step", "forward": "fwd"}
    for p, part, b in breakdown_rows(estimate):
        phases.add_row(
            p.phase,
            short.get(part, part),
            *(
                f"{b[k] / scale:.1f}"
                for k in ("total", "parameters", "gradients", "optimizer_state", "activations", "temporaries")
            ),
        )
    console.print(phases)
    table = Table(title="choice sheet: per GPU, the fewest GPUs that fit (every count in choice_sheet.csv)")
    for name in ("GPU", "GiB", "fits", "need GiB", "setup", "per update"):
        table.add_column(name, no_wrap=True)
    reasons: dict[str, list[str]] = {}
    for gpu in dict.fromkeys(r.gpu for r in result.rows):
        rows = [r for r in result.rows if r.gpu == gpu]
        r = next((r for r in rows if r.fits), rows[0])
        cells = _row_cells(r)
        seconds = (
            ""
            if r.seconds_per_update is None
            else (cells[10] if r.time_source.startswith("measured") else f"~{cells[10]} est.")
        )
        setup = f"{cells[7]} {r.precision}{' ckpt' if r.activation_checkpointing else ''}" if r.fits else ""
        table.add_row(
            cells[0], cells[2], f"[green]{r.count} GPU[/]" if r.fits else "[red]no[/]", cells[5], setup, seconds
        )
        if not r.fits:
            reasons.setdefault(r.reason, []).append(gpu)
        elif r.requirements_met is False:
            reasons.setdefault(r.requirements, []).append(gpu)
    console.print(table)
    if caveat := _time_caveat(result):
        console.print(caveat, markup=False, highlight=False)
    for reason, gpus in reasons.items():
        console.print(f"- {', '.join(gpus)}: {reason}", markup=False, highlight=False)
    for line in result.plan_lines():
        console.print(line, markup=False, highlight=False)
    console.print(f"choice sheet: {result.paths['sheet']}", markup=False, highlight=False)
