"""The campaign plan: the sweep's jobs, in priority order, packed into 3-, 7- or 30-day packages.

Jobs come from the sweep the config would launch with ``-m`` (the experiment's
``hydra.sweeper.params``, control first as written), or the single configured
variant. Each job's time on the chosen hardware = updates x time per update +
validation points x evaluation time + closing (export, reload, control rerun).
Evaluation and closing are the pilot's measurements when it measured them,
otherwise a FLOP estimate (evaluation) or the declared
``rental.closing_reserve_minutes``. Jobs run one after another on the
package's GPUs. The plan takes the shortest package that holds every job;
when even the longest does not, it fills the longest in priority order and
lists what does not fit.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field

from omegaconf import DictConfig, OmegaConf, open_dict

from pilot.engine.batch_plan import plan_from_config
from pilot.estimate.fake_tensor import MemoryEstimate
from pilot.rental.catalog import Gpu
from pilot.rental.choice_sheet import ChoiceRow, Measured
from pilot.variant import sweep_combinations


@dataclass
class Job:
    overrides: list[str]
    updates: int
    validations: int
    note: str = ""


@dataclass
class JobTime:
    job: Job
    train_h: float
    eval_h: float
    closing_h: float
    sources: str

    @property
    def hours(self) -> float:
        return self.train_h + self.eval_h + self.closing_h


@dataclass
class Plan:
    gpu: str
    count: int
    package_days: int | None  # the package chosen (the longest when nothing fits whole)
    fits_all: bool
    planned: list[JobTime] = field(default_factory=list)
    left_out: list[JobTime] = field(default_factory=list)
    capacity_h: float = 0.0

    @property
    def planned_h(self) -> float:
        return sum(j.hours for j in self.planned)


def validations(updates: int, eval_every: int) -> int:
    """Validation points of a run: every ``eval_every`` updates before the last, and after the last."""
    return (max(0, (updates - 1) // eval_every) if eval_every > 0 else 0) + 1


# swept settings that leave an update's memory and time as they are (the plan counts the updates and validations
# a job's own budget and loop give); any other changes what an update computes: the model, precision, batch, ...
UPDATE_NEUTRAL = ("seed", "optim.lr", "optim.weight_decay", "optim.warmup_updates", "optim.schedule",
                  "optim.min_lr_ratio", "optim.betas", "optim.grad_clip", "budget.", "loop.", "checkpoint.",
                  "closing.", "campaign.", "run.", "pilot.", "estimate.", "rental.")  # fmt: skip
NOT_ITS_OWN = "sized and timed as the base config (not estimated on its own)"


def _same(cfg: DictConfig, job_cfg: DictConfig, key: str) -> bool:
    """The job's value of ``key`` is the base config's (the control's own line, written out)."""
    return OmegaConf.select(cfg, key, default=None) == OmegaConf.select(job_cfg, key, default=None)


def sweep_jobs(cfg: DictConfig, sweep_params: dict[str, str] | None, train_examples: int) -> list[Job]:
    jobs = []
    for combo in sweep_combinations(dict(sweep_params or {})):
        job_cfg, notes = copy.deepcopy(cfg), []
        for override in combo:
            key, value = override.split("=", 1)
            key = key.lstrip("+~")
            if (
                OmegaConf.select(job_cfg, key, default="__absent__") == "__absent__"
                or "/" in key
                or isinstance(OmegaConf.select(job_cfg, key), DictConfig)
            ):
                notes.append(f"{override}: a config group, {NOT_ITS_OWN}")
                continue
            with open_dict(job_cfg):
                OmegaConf.update(job_cfg, key, _parse(value))
            if not key.startswith(UPDATE_NEUTRAL) and not _same(cfg, job_cfg, key):
                notes.append(f"{override}: changes what an update computes, {NOT_ITS_OWN}")
        updates = plan_from_config(job_cfg, train_examples).total_updates
        jobs.append(Job(combo, updates, validations(updates, int(job_cfg.loop.eval_every)), "; ".join(notes)))
    return jobs


def _parse(value: str):
    import yaml

    try:
        return yaml.safe_load(value)
    except yaml.YAMLError:
        return value


def time_jobs(
    cfg: DictConfig,
    jobs: list[Job],
    row: ChoiceRow,
    gpu: Gpu,
    estimate: MemoryEstimate,
    measured: Measured | None,
    val_examples: int | None = None,
) -> list[JobTime]:
    """Each job's hours on ``row``; a validation evaluates ``loop.eval_examples``, at most the ``val_examples``
    its split holds (as a run does: batch_plan.json's eval_examples)."""
    utilisation = float(cfg.rental.utilisation)
    peak = gpu.peak_tflops(row.precision) or gpu.fp32_tflops
    evaluated = min(
        int(cfg.loop.eval_examples), val_examples if val_examples is not None else int(cfg.loop.eval_examples)
    )
    eval_batches = math.ceil(evaluated / max(1, int(cfg.batch.eval_micro_batch)) / row.count)
    on_this_gpu = measured is not None and gpu.matches(measured.device_name)
    if on_this_gpu and measured.eval_seconds_per_batch is not None:
        eval_s, eval_source = eval_batches * measured.eval_seconds_per_batch, "evaluation measured (longest examples)"
    else:
        eval_s = eval_batches * estimate.flops_per_eval_batch / (peak * 1e12 * utilisation)
        eval_source = "evaluation estimated from counted FLOPs"
    if measured is not None and measured.closing_seconds is not None:
        closing_s = measured.closing_seconds
        closing_source = f"closing measured in the pilot ({measured.device_name})"
    else:
        closing_s = float(cfg.rental.closing_reserve_minutes) * 60
        closing_source = f"closing: {cfg.rental.closing_reserve_minutes:g} min declared (not measured)"
    out = []
    for job in jobs:
        out.append(
            JobTime(
                job,
                job.updates * row.seconds_per_update / 3600,
                job.validations * eval_s / 3600,
                closing_s / 3600,
                f"{row.time_source}; {eval_source}; {closing_source}",
            )
        )
    return out


def plan_campaign(job_times: list[JobTime], packages_days: list[int], gpu: str, count: int) -> Plan:
    total = sum(j.hours for j in job_times)
    for days in sorted(int(d) for d in packages_days):
        if total <= days * 24:
            return Plan(gpu, count, days, True, list(job_times), [], days * 24.0)
    days = max(int(d) for d in packages_days)
    plan = Plan(gpu, count, days, False, [], [], days * 24.0)
    used = 0.0
    for job in job_times:  # priority order: as the sweep lists them, control first
        if used + job.hours <= plan.capacity_h:
            plan.planned.append(job)
            used += job.hours
        else:
            plan.left_out.append(job)
    return plan


def plan_rows(plan: Plan) -> list[dict]:
    rows = []
    for status, group in (("planned", plan.planned), ("does not fit", plan.left_out)):
        for j in group:
            rows.append(
                {
                    "status": status,
                    "job": " ".join(j.job.overrides) or "(the configured variant)",
                    "updates": j.job.updates,
                    "validations": j.job.validations,
                    "train_h": j.train_h,
                    "eval_h": j.eval_h,
                    "closing_h": j.closing_h,
                    "hours": j.hours,
                    "gpu": plan.gpu,
                    "gpus": plan.count,
                    "package_days": plan.package_days,
                    "note": j.job.note,
                    "sources": j.sources,
                }
            )
    return rows


def as_dict(plan: Plan) -> dict:
    data = asdict(plan)
    data["planned_h"] = plan.planned_h
    return data
