"""``mode=estimate`` and the pilot's ``estimate`` step: memory at scale, choice sheet, campaign plan.

``python -m pilot mode=estimate <scale overrides>`` estimates the configured
variant on fake tensors (no allocation, no training, no data checks: run the
pilot at a size this machine can train first), writes the choice sheet and the
campaign plan into the run directory, prints them and journals the plan.

In the pilot (``python -m pilot``) the same sheet is built with the pilot's
measurements, after checking the estimator against the same tracker on real
tensors at the pilot's size: the step fails when they differ by more than
``estimate.tolerance``, because the sheet's numbers would then mislead.
"""

from __future__ import annotations

import json
import logging
import math
import os
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.checks.result import CheckResult
from pilot.config.values import enum_value, resolve_device
from pilot.data.task import TaskData
from pilot.engine.preemption import SignalsStopAtOnce
from pilot.engine.sharding import is_sharded
from pilot.environment import read_requirements, record_attention_calls
from pilot.environment.device import free_bytes
from pilot.errors import no_space_left
from pilot.estimate.checkpointing_effect import CheckpointingIneffective, checkpointing_effect
from pilot.estimate.dependencies import building, record_imports
from pilot.estimate.fake_tensor import EstimateRefused, MemoryEstimate, estimate_memory
from pilot.estimate.inputs import LONGER_THAN_THE_DATA
from pilot.estimate.reachable import reachable_batches
from pilot.estimate.stored import CACHE_ENV, from_store, min_store_seconds, store_dir, stored_estimate, uses_your_code
from pilot.faults import fault_point
from pilot.finished_runs import taken_unless_reused
from pilot.rental.campaign_plan import Plan
from pilot.rental.catalog import load_catalog
from pilot.rental.choice_sheet import Measured
from pilot.rental.estimate_cache import EstimateCache
from pilot.rental.estimate_table import checked_against
from pilot.rental.parallel_estimates import fill
from pilot.rental.requirements import Requirement, campaign_requirements
from pilot.rental.sheet import build_and_write, print_sheet, remove_sheet
from pilot.run_record import RunRecord, record_interrupted
from pilot.text_table import byte_size
from pilot.validation import validate

log = logging.getLogger("pilot")


def compare(estimate: MemoryEstimate, measured: MemoryEstimate, tolerance: float) -> tuple[bool, float, list[str]]:
    """Per phase: estimated vs measured peak bytes. Returns (every phase within ``tolerance``,
    the largest relative difference, one line per phase)."""
    lines, worst = [], 0.0
    for est, real in zip(estimate.phases, measured.phases):
        error = abs(est.peak_bytes - real.peak_bytes) / max(1, real.peak_bytes)
        worst = max(worst, error)
        lines.append(
            f"- {est.phase}: estimated {est.peak_bytes:,} B, measured {real.peak_bytes:,} B "
            f"({error:.2%} apart; tolerance {tolerance:.0%})"
        )
    return worst <= tolerance, worst, lines


def over_only(estimate: MemoryEstimate, measured: MemoryEstimate, tolerance: float) -> list[str]:
    """The phases estimated more than ``tolerance`` above their measurement when that is all that is off:
    every other phase within it, none below it, and the run's peak (the largest phase, what the sheet's
    need is made of) within it. Then the estimate only errs on the safe side of a phase that does not set
    the need (activation checkpointing's first update, measured below its later ones); else []."""
    over, peak_error = [], abs(estimate.peak_bytes - measured.peak_bytes) / max(1, measured.peak_bytes)
    for est, real in zip(estimate.phases, measured.phases):
        error = abs(est.peak_bytes - real.peak_bytes) / max(1, real.peak_bytes)
        if error > tolerance and est.peak_bytes < real.peak_bytes:
            return []
        if error > tolerance:
            over.append(est.phase)
    return over if peak_error <= tolerance else []


def drift_explains(estimate: MemoryEstimate, measured: MemoryEstimate, tolerance: float) -> int:
    """The measurement's drift per micro-batch (``PhaseEstimate.tracker_drift_bytes``) when it accounts for
    every phase off by more than ``tolerance``: each below its measurement by no more than the drift the
    micro-batches run so far add up to; else 0."""
    drift, added = 0, 0
    for est, real in zip(estimate.phases, measured.phases):
        drift = max(drift, real.tracker_drift_bytes)
        added += real.tracker_drift_bytes * real.micro_batches
        gap = real.peak_bytes - est.peak_bytes
        if abs(gap) > tolerance * max(1, real.peak_bytes) and not 0 < gap <= added:
            return 0
    return drift


def measured_from_phases(rows: list[dict[str, Any]], steady_steps: int) -> Measured:
    """The pilot's own timings (rank 0): steady update, one longest-evaluation batch, closing."""

    def duration(phase: str) -> float | None:
        row = next(
            (r for r in rows if r["phase"] == phase and r.get("rank", 0) in (0, None) and r["verdict"] == "pass"), None
        )
        value = row.get("duration_s") if row else None
        return float(value) if value is not None and math.isfinite(float(value)) else None

    steady = duration("steady_steps")
    export, reload = duration("export"), duration("reload_check")
    name = torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    peaks = [
        int(r["mem_peak_allocated_bytes"])
        for r in rows
        if r.get("mem_peak_allocated_bytes") is not None
        and r["phase"] in ("first_step", "steady_steps", "eval_longest")
    ]
    return Measured(
        name,
        steady / steady_steps if steady is not None and steady_steps else None,
        duration("eval_longest"),
        export + reload if export is not None and reload is not None else None,
        max(peaks) if peaks else None,
    )


def allocator_lines(estimate: MemoryEstimate, measured: MemoryEstimate) -> list[str]:
    """CUDA: the allocator's peak per phase next to the estimate (informative, never gated)."""
    lines = []
    for est, measured_phase in zip(estimate.phases, measured.phases):
        if measured_phase.allocator_peak_bytes:
            off = est.peak_bytes / measured_phase.allocator_peak_bytes - 1
            lines.append(
                f"- {est.phase}: torch.cuda.max_memory_allocated {measured_phase.allocator_peak_bytes:,} B "
                f"on {torch.cuda.get_device_name()} (estimate {off:+.1%}; includes cuBLAS workspaces, "
                "not gated)"
            )
    return lines


def _plan_in_brief(plan: Plan | None, pinned: str | None = None) -> str:
    """The campaign plan in a few words, for the step's reason."""
    if not plan:
        return f"the chosen hardware ({pinned}) does not fit" if pinned else "no GPU fits"
    return f"plan: {plan.count} x {plan.gpu}, {plan.package_days}-day package" + (
        "" if plan.fits_all else f", {len(plan.left_out)} job(s) do not fit"
    )


MEASURED_ON_RANKS = ".estimate-measured-rank0.json"  # FSDP: rank 0's measurement, written by the pilot's ranks


def save_measured(measured: MemoryEstimate, path: Path) -> None:
    Path(path).write_text(json.dumps(asdict(measured), default=str))


def read_measured(path: Path) -> MemoryEstimate:
    data = json.loads(Path(path).read_text())
    return MemoryEstimate.from_dict(data)


def _measured(cfg: DictConfig, task: TaskData, run_dir: Path, device: torch.device) -> MemoryEstimate:
    """The same tracker on real tensors: here, or (FSDP over N ranks) what the pilot's ranks measured."""
    if not (is_sharded(cfg) and int(cfg.distributed.replicas) > 1):
        return estimate_memory(cfg, task, fake=False, device=str(device))  # on the pilot's own device
    path = Path(run_dir) / MEASURED_ON_RANKS
    if not path.is_file():
        raise EstimateUnchecked(
            f"the {cfg.distributed.replicas} ranks did not measure the sharded update (see the log), so the "
            "per-rank estimate cannot be checked"
        )
    measured = read_measured(path)
    path.unlink()
    return measured


def _beyond_memory(cfg: DictConfig, estimate: MemoryEstimate, device: torch.device) -> str:
    """Why the estimate is not measured on real tensors here, or "": its peak is above half of what the device
    has free (data.max_len=100000 on a CPU: the measurement grew the process until the host swapped and it was
    killed, run.json left "running"). Sharded runs measure on their ranks, each its share."""
    if is_sharded(cfg) and int(cfg.distributed.replicas) > 1:
        return ""
    room = free_bytes(device)
    if room is None or estimate.peak_bytes <= room // 2:
        return ""
    return (
        f"its peak ({byte_size(estimate.peak_bytes)} in {estimate.peak_phase.phase}) is above half of the "
        f"{byte_size(room)} free on {device}: measured on real tensors, it would exhaust this machine"
    )


def _unmeasured(result, why: str) -> CheckResult:
    """The warning for a choice sheet (``result``) written from the estimate alone: not checked against a measurement."""
    return CheckResult(
        "estimate",
        "warn",
        f"the estimate is not checked against a measurement: {why}. Fix: check the estimator at a size this machine "
        f"holds (a shorter data.max_len or a smaller batch.micro_batch), or run the pilot where it fits; "
        f"{_plan_in_brief(result.plan, result.pinned)}; see choice_sheet.md",
        details={"plan": result.plan_lines(), "not_measured": why},
    )


def _pilot_sheet(
    cfg: DictConfig,
    task: TaskData,
    run_dir: Path,
    estimate: MemoryEstimate,
    rows: list[dict[str, Any]],
    sweep_params: dict[str, str] | None,
    lines: list[str],
):
    """The pilot's choice sheet with its own timings and what checked the estimate (``lines``), printed."""
    result = build_and_write(
        cfg,
        run_dir,
        task,
        estimate,
        sweep_params,
        measured_from_phases(rows, int(cfg.pilot.steady_steps)),
        validation=lines,
        journal=False,
        requirements=read_requirements(run_dir),
    )
    fault_point("sheet")  # tests: a signal once the pilot's choice sheet is written, before its verdicts
    print_sheet(result, estimate)
    return result


class EstimateUnchecked(Exception):
    """The measurement the estimate is checked against is missing."""


def estimate_step(
    cfg: DictConfig,
    task: TaskData,
    run_dir: Path,
    rows: list[dict[str, Any]],
    sweep_params: dict[str, str] | None = None,
) -> CheckResult:
    """The pilot's step: validate the estimator here, then write the choice sheet with measurements."""
    tolerance = float(cfg.estimate.tolerance)
    device = resolve_device(cfg)
    cfg, cut = reachable_batches(cfg, task)
    try:
        estimate = estimate_memory(cfg, task)
        checkpointing = checkpointing_effect(cfg, task, estimate)
        if too_large := _beyond_memory(cfg, estimate, device):  # measured, it would exhaust the machine
            said = [f"- not measured: {too_large}"] + ([f"- {cut}"] if cut else [])
            sheet = _pilot_sheet(cfg, task, run_dir, estimate, rows, sweep_params, said)
            return _unmeasured(sheet, too_large)
        real = _measured(cfg, task, run_dir, device)
    except (CheckpointingIneffective, EstimateUnchecked) as error:
        return CheckResult("estimate", "fail", str(error))
    except EstimateRefused as error:
        return CheckResult("estimate", "warn", f"no memory estimate: {error}")
    ok, worst, lines = compare(estimate, real, tolerance)
    lines += allocator_lines(estimate, real) + ([f"- {checkpointing}"] if checkpointing else [])
    lines += [f"- {cut}"] if cut else []
    result = _pilot_sheet(cfg, task, run_dir, estimate, rows, sweep_params, lines)
    details = {"plan": result.plan_lines()}
    where = _plan_in_brief(result.plan, result.pinned)
    if not ok:
        return CheckResult("estimate", *_off(estimate, real, tolerance, worst, where), details=details)
    return CheckResult(
        "estimate",
        "pass",
        f"estimate within {worst:.2%} of {checked_against(real, device.type)} (tolerance {tolerance:.0%}); {where}; "
        "see choice_sheet.md",
        details=details,
    )


def _off(estimate: MemoryEstimate, real: MemoryEstimate, tolerance: float, worst: float, where: str) -> tuple[str, str]:
    """The verdict and reason of an estimate outside ``tolerance``: on the safe side of a phase that does
    not set the need, or below by no more than the tracker's own growth (warnings), else a failure."""
    if above := over_only(estimate, real, tolerance):
        return "warn", (
            f"the fake-tensor estimate of {', '.join(above)} is {worst:.1%} above the same tracker on real tensors "
            f"(tolerance {tolerance:.0%}), on the safe side, and the run's peak, which the need is made of, is "
            f"within {abs(estimate.peak_bytes / max(1, real.peak_bytes) - 1):.2%}; {where}"
        )
    if drift := drift_explains(estimate, real, tolerance):
        return "warn", (
            f"the fake-tensor estimate is {worst:.1%} below the same tracker on real tensors (tolerance "
            f"{tolerance:.0%}), no more than the tracker's own growth: on real tensors its activations and "
            f"temporaries grew by {drift:,} B after every micro-batch, each of which should end where the one before "
            "it did (PyTorch's MemTracker does so under activation checkpointing of a frozen base with LoRA, where "
            "the process's memory does not grow: README, 'From pilot to rental'), so the comparison is not exact; "
            f"{where}"
        )
    return "fail", (
        f"the fake-tensor estimate is {worst:.1%} off the same tracker on real "
        f"tensors (tolerance {tolerance:.0%}): the choice sheet would mislead; {where}"
    )


def requirements_at_scale(cfg: DictConfig, task: TaskData) -> list[Requirement]:
    """mode=estimate: the config's requirements of a GPU, the attention calls recorded on the meta device."""
    precision = enum_value(cfg.precision.dtype)
    model_dtype = str(OmegaConf.select(cfg, "model.dtype", default=None) or "") or None
    try:
        calls, _ = record_attention_calls(cfg, task, meta=True)
    except Exception as error:  # a model that does not run on meta tensors: the precision's requirements only
        log.warning("attention requirements not examined (the model does not run on the meta device: %s)", error)
        return campaign_requirements(precision, model_dtype=model_dtype)
    return campaign_requirements(precision, calls, model_dtype=model_dtype)


def run_estimate(
    cfg: DictConfig, run_dir: Path, overrides: Iterable[str] = (), sweep_params: dict[str, str] | None = None
) -> int:
    if store_dir() is not None and uses_your_code(cfg):
        record_imports()  # what your modules read at their top level, for the stored estimates (dependencies.py)
    validate(cfg)
    if store_dir() is not None:
        min_store_seconds()  # a setting of the store that means nothing: refused before anything is computed
    run_dir = Path(run_dir)
    with taken_unless_reused("estimate", run_dir, cfg), SignalsStopAtOnce() as signals:
        record = None
        try:
            record = RunRecord.start(run_dir, cfg, overrides, mode="estimate")
            signals.stop_if_noted()
            return _estimate(cfg, run_dir, record, sweep_params)
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: an estimate is not resumable, stop now and say so
            name = signals.received or "SIGINT"
            log.warning("estimate interrupted by %s; its record says so (no choice sheet)", name)
            if removed := remove_sheet(run_dir):
                log.warning(
                    "%s: removed (written before the signal; no verdict stands behind its plan)", ", ".join(removed)
                )
            return record_interrupted(run_dir, record, name, "estimate (no choice sheet)")
        except Exception as error:  # recorded, then said by the entry point (a full disk: one message)
            if record is not None:  # run.json itself may not fit: finish then says so, naming the first file
                full = no_space_left(error)
                cause = str(full or f"{type(error).__name__}: {error}")
                record.finish("failed", "disk_full" if full else "exception", error=cause)
            raise


def _estimate(cfg: DictConfig, run_dir: Path, record: RunRecord, sweep_params: dict[str, str] | None) -> int:
    """The estimate, the choice sheet and the plan, recorded in ``record``; 1 when the estimate is refused."""
    with building():  # what your task's code reads as it is built counts for the stored estimates
        task = instantiate(cfg.data, _convert_="all")
    cfg, cut = reachable_batches(cfg, task)
    if cut:
        log.warning("estimate: %s", cut)
        record.update(batches_estimated=cut)
    micro, checkpointing_on = int(cfg.batch.micro_batch), bool(cfg.memory.activation_checkpointing)
    try:
        estimate = stored_estimate(cfg, task, micro, checkpointing_on)  # every estimate through the store
        cache = EstimateCache(cfg, task, estimate, stored=True)
        without = cache.get(micro, False) if checkpointing_on else None
        checkpointing = checkpointing_effect(cfg, task, estimate, without)
    except EstimateRefused as error:
        print(f"pilot: estimate refused: {error}")
        record.finish("failed", f"estimate refused: {error}")
        return 1
    if checkpointing:
        log.info("memory: %s", checkpointing)
    for note in (n for n in estimate.notes if n.startswith(LONGER_THAN_THE_DATA)):
        log.warning("estimate: %s", note)
    filled = fill(cfg, cache, load_catalog(cfg.rental))  # the rows' estimates, side by side where they can be
    result = build_and_write(
        cfg, run_dir, task, estimate, sweep_params, requirements=requirements_at_scale(cfg, task), cache=cache
    )
    print_sheet(result, estimate)
    stored = sum(from_store(e) for e in result.estimates)
    workers = f" ({filled.in_workers} in {filled.started} worker processes)" if filled.in_workers else ""
    where = (
        f"{store_dir()}; the same config, data, code, versions and what each read"
        if store_dir()
        else f"off: {CACHE_ENV}={os.environ.get(CACHE_ENV, '')}"
    )
    print(
        f"estimates: {len(result.estimates) - stored} computed{workers}, {stored} read from the estimate store ({where})"
    )
    plan = result.plan
    record.finish(
        "ok",
        "estimate_complete",
        estimate_seconds=estimate.seconds,
        estimates_computed=len(result.estimates) - stored,
        estimates_from_store=stored,
        estimates_in_workers=filled.in_workers,
        peak_bytes=estimate.peak_bytes,
        chosen=result.chosen.as_dict() if result.chosen else None,
        package_days=plan.package_days if plan else None,
        plan_fits=plan.fits_all if plan else False,
    )
    return 0
