"""``run_pilot(cfg, run_dir)``: the pilot, each step with a verdict and a one-line reason.

1. inspect what the loss sees (collated batches), which target the loss's gradient trains each
position towards (alignment), and the objective's contract (a sum over targets, their count);
2. audit the split;  3. learn a tiny subset;
4. run every phase of the campaign once, measured (the smallest micro-batch and a twice-run evaluation
included);  5. estimate its memory without allocating, check the estimate against the measurement,
and write the choice sheet and campaign plan;  6. write the report.
A step that crashes is a ``fail`` with the error, and the later steps still
run, so the report is always complete. Returns the exit code: 1 when any
verdict is fail or oom, else 0.
"""

from __future__ import annotations

import json
import logging
import traceback
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.checks.alignment import alignment_check
from pilot.checks.contract import STEP as CONTRACT_STEP
from pilot.checks.contract import check_contract, model_settings
from pilot.checks.inspect_examples import inspect_task
from pilot.checks.objective import objective_check
from pilot.checks.result import GATING, CheckResult, worst
from pilot.checks.split_audit import audit_split
from pilot.checks.tiny_subset import tiny_subset_check
from pilot.child_process import ChildProcess, Finished, JobRunner
from pilot.closing import write_run_reproduce
from pilot.config.values import enum_value, resolve_device
from pilot.cpu_budget import cpu_budget
from pilot.data.task import ContractError
from pilot.engine.batch_plan import plan_from_config
from pilot.engine.build import build_model, configure_threads, untrained_positions_in
from pilot.engine.distributed import init_from_env, launched_externally, spawn
from pilot.engine.preemption import SignalsStopAtOnce
from pilot.engine.sharding import is_sharded
from pilot.engine.threads import BESIDE_THE_PILOT, load_note
from pilot.environment import environment_step
from pilot.environment import journal_lines as environment_journal_lines
from pilot.errors import (
    DISK_FULL,
    OUT_OF_MEMORY_FIX,
    DiskFull,
    built_with_error,
    in_one_line,
    no_space_left,
    out_of_memory,
    out_of_memory_line,
    user_error,
)
from pilot.estimate.fake_tensor import estimate_memory
from pilot.estimate_run import MEASURED_ON_RANKS, estimate_step, save_measured
from pilot.faults import fault_point
from pilot.finished_runs import taken_unless_reused
from pilot.host_memory_cap import cap_host_memory, release_host_memory_cap
from pilot.models.base_files import base_files_fingerprint, read_through
from pilot.phases.gates import PhaseRunner
from pilot.phases.rows import write_phases_csv
from pilot.rental.journal import append_entry, journal_problem
from pilot.rental.sheet import remove_sheet
from pilot.report import print_console, write_report
from pilot.run_record import RunRecord, record_interrupted, write_resolved_config
from pilot.run_summary import learning_rate_reached
from pilot.still_running import still_running
from pilot.validation import validate

log = logging.getLogger("pilot")


def _guarded(step: str, work: Callable[[], CheckResult], error_dir: Path | None = None) -> CheckResult:
    """``work``'s result; a step that raised fails, said in one line naming where the error was raised, its
    whole traceback in ``<step>.error.txt`` of ``error_dir`` (on the console when it cannot be written).
    A step still running after a minute says so every minute (a large model's checks on a CPU)."""
    try:
        with still_running(f"step {step}"):
            return work()
    except Exception as error:
        if no_space_left(error) is not None:  # not the step's fault: the pilot stops at the first file (run_pilot)
            raise
        if out_of_memory(error):  # its batches do not fit: not a crash of the check (pilot.host_memory_cap)
            detail = f"out of memory: {out_of_memory_line(error)}. {OUT_OF_MEMORY_FIX}"
            log.error("step %s %s", step, detail)
            return CheckResult(step, "fail", detail)
        whole = ""
        try:
            if error_dir is not None:
                (error_dir / f"{step}.error.txt").write_text(traceback.format_exc())
                whole = f" (whole error: {step}.error.txt)"
        except OSError:
            pass
        if whole:
            log.error("step %s crashed: %s%s", step, in_one_line(error), whole)
        else:
            log.error("step %s crashed:\n%s", step, traceback.format_exc())
        return CheckResult(step, "fail", f"crashed: {in_one_line(error)}{whole}")


def phase_worker(cfg: DictConfig, run_dir: str) -> None:
    """One replica's phase rows (spawned when distributed.replicas > 1)."""
    device = resolve_device(cfg)
    ctx = init_from_env(enum_value(cfg.distributed.backend), device)
    if device.type == "cuda":
        device = torch.device("cuda", ctx.local_rank)
        torch.cuda.set_device(device)
    configure_threads(cfg)
    task = instantiate(cfg.data, _convert_="all")
    rows = PhaseRunner(cfg, task, device, Path(run_dir), ctx, cfg.pilot.oom_in_phase).run()
    (Path(run_dir) / f".phases-rank{ctx.rank}.json").write_text(json.dumps(rows, default=str))
    if is_sharded(cfg):  # the estimate step checks the per-rank estimate against rank 0 of real ranks
        try:
            measured = estimate_memory(cfg, task, fake=False, device=str(device))
        except Exception:  # the estimate step then fails, saying the measurement is missing
            log.error("rank %d could not measure the sharded update:\n%s", ctx.rank, traceback.format_exc())
            return
        if ctx.is_main:
            save_measured(measured, Path(run_dir) / MEASURED_ON_RANKS)


def run_phases(
    cfg: DictConfig, task, device: torch.device, run_dir: Path, runner: JobRunner | None = None
) -> list[dict[str, Any]]:
    """Every rank's phase rows; one replica runs them here (its reload and resume checks in
    ``runner``'s process), more are spawned (or were launched) as a process group."""
    replicas = int(cfg.distributed.replicas)
    if replicas == 1:
        return PhaseRunner(cfg, task, device, run_dir, oom_in_phase=cfg.pilot.oom_in_phase, runner=runner).run()
    if launched_externally():  # torchrun or a multi-task SLURM job: every rank is already running
        dist.barrier()  # ranks > 0 waited here while rank 0 ran the checks
        phase_worker(cfg, str(run_dir))
        dist.barrier()  # every rank's rows are on disk
    else:
        spawn(phase_worker, (cfg, str(run_dir)), replicas, int(cfg.distributed.master_port))
    rows = []
    for rank in range(replicas):
        path = run_dir / f".phases-rank{rank}.json"
        rows += json.loads(path.read_text())
        path.unlink()
    return rows


def _other_rank(cfg: DictConfig, run_dir: Path) -> bool:
    """Ranks > 0 of an externally launched group only measure their phases; rank 0 does the rest."""
    if int(cfg.distributed.replicas) == 1 or not launched_externally():
        return False
    ctx = init_from_env(enum_value(cfg.distributed.backend), resolve_device(cfg))
    if ctx.rank == 0:
        return False
    dist.barrier()  # until rank 0 has run inspect, split audit and tiny subset
    phase_worker(cfg, str(run_dir))
    dist.barrier()
    return True


def _journal(cfg: DictConfig, run_dir: Path, results: list[CheckResult], verdict: str, device: str) -> None:
    """One entry per pilot: its verdict (what failed, if anything) and the plan it proposes."""
    estimate = next((r for r in results if r.step == "estimate"), None)
    lines = [f"- pilot verdict: {verdict} on {device}"]
    environment = next((r for r in results if r.step == "environment"), None)
    lines += environment_journal_lines(environment) if environment is not None else []
    lines += [f"- {r.step}: {r.verdict} — {r.reason}" for r in results if r.verdict != "pass"]
    lines += estimate.details.get("plan", []) if estimate is not None else []
    try:
        append_entry(Path(cfg.campaign.journal), f"pilot ({run_dir})", lines)
    except OSError as error:  # the journal is a notebook: it never fails the pilot
        log.warning("%s", journal_problem(cfg.campaign.journal, error))


def run_pilot(
    cfg: DictConfig,
    run_dir: Path,
    overrides: Iterable[str] = (),
    sweep_params: dict[str, str] | None = None,
    searchpath: list[str] | None = None,
) -> int:
    validate(cfg)
    run_dir = Path(run_dir)
    if _other_rank(cfg, run_dir):
        return 0
    with taken_unless_reused("pilot", run_dir, cfg), SignalsStopAtOnce() as signals:
        record = None
        try:
            record = RunRecord.start(run_dir, cfg, overrides, mode="pilot")
            write_resolved_config(run_dir, cfg)  # what config_hash is of (env_check compares it elsewhere)
            signals.stop_if_noted()
            exit_code = _pilot(cfg, run_dir, record, sweep_params, signals)
            write_run_reproduce(run_dir, record.data, cfg, searchpath)
            signals.stop_if_deferred(record)
            return exit_code
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the pilot's steps are not resumable, stop now
            name = signals.received or "SIGINT"
            log.warning("pilot interrupted by %s; its record says so (no verdict)", name)
            if removed := remove_sheet(run_dir):
                log.warning(
                    "%s: removed (written before the signal; no verdict stands behind its plan)", ", ".join(removed)
                )
            return record_interrupted(run_dir, record, name, "pilot (no verdict)")
        except Exception as error:  # no space left: stopped at the first file that did not fit, no verdict
            if (full := no_space_left(error)) is not None and record is not None and record.data["status"] == "running":
                record.finish("failed", "disk_full", error=str(full))  # run.json may not fit either: it says so
            raise
        finally:
            release_host_memory_cap()


def _data_checks(
    cfg: DictConfig, task, device: torch.device, results: list[CheckResult], shown: list[dict[str, Any]], run_dir: Path
) -> None:
    """Inspect what the loss sees, which targets it trains towards, its contract; audit the
    split; learn a tiny subset. Each appends its result; the examples shown go to ``shown``."""
    fresh: dict[str, torch.nn.Module] = {}

    def fresh_model() -> torch.nn.Module:
        """One freshly initialised model for the checks below; none of them changes its parameters."""
        if "model" not in fresh:
            fresh["model"] = build_model(cfg)
        return fresh["model"]

    def inspect() -> CheckResult:
        result, examples = inspect_task(task, int(cfg.pilot.show_examples), int(cfg.batch.micro_batch), fresh_model())
        shown.extend(examples)
        return result

    micro_batch = int(cfg.batch.micro_batch)
    results.append(_guarded("inspect", inspect, run_dir))
    results.append(_guarded("alignment", lambda: alignment_check(task, fresh_model(), micro_batch), run_dir))
    by_hand = {"accumulation": int(cfg.batch.accumulation), "replicas": int(cfg.distributed.replicas)}
    results.append(_guarded("objective", lambda: objective_check(task, fresh_model(), micro_batch, **by_hand), run_dir))
    fresh.clear()
    split_by = enum_value(OmegaConf.select(cfg, "data.split.by"))  # None: the task's config declares no split
    results.append(_guarded("split_audit", lambda: audit_split(task, split_by), run_dir))
    results.append(_guarded("tiny_subset", lambda: tiny_subset_check(cfg, task, device), run_dir))


def _phases_step(
    cfg: DictConfig, task, device: torch.device, run_dir: Path, runner: JobRunner | None
) -> tuple[CheckResult, list[dict[str, Any]]]:
    """Every phase of the campaign once, measured: one verdict over the rows, and the rows."""
    rows: list[dict[str, Any]] = []
    try:
        with still_running("step phases"):
            rows = run_phases(cfg, task, device, run_dir, runner)
        phase_verdict = worst([r["verdict"] for r in rows if r["verdict"] != "skipped"])
        failing = [
            f"{r['phase']} (rank {r['rank']}): {r['verdict']}" + (f" ({r['detail']})" if r["verdict"] == "warn" else "")
            for r in rows
            if r["verdict"] in (*GATING, "warn") or (r["verdict"] == "skipped" and r["phase"] != "resume_check")
        ]
        reason = f"{len(rows)} phase rows, all pass" if not failing else "; ".join(failing)  # warn rows named too
        return CheckResult("phases", phase_verdict, reason), rows
    except Exception as error:
        if no_space_left(error) is not None:
            raise
        log.error("phases crashed:\n%s", traceback.format_exc())
        return CheckResult("phases", "fail", f"crashed: {type(error).__name__}: {error}"), rows


def _has_checks_child(cfg: DictConfig) -> bool:
    """One replica only: more run their phases in processes of their own."""
    return int(cfg.distributed.replicas) == 1


def _checks_child(cfg: DictConfig) -> AbstractContextManager[ChildProcess | None]:
    """The new process for the reload and resume checks, started now so that its imports (and the
    first optimizer's ``torch._dynamo``) overlap the steps before them (``_has_checks_child``)."""
    if not _has_checks_child(cfg):
        return nullcontext(None)
    return ChildProcess(warm=("pilot.closing.cli", "pilot.phases.resume_check", "pilot.report"), optimizer=True)


def _memory_note(device: torch.device) -> str:
    return (
        "CUDA columns: allocated and reserved separately, never summed; peaks reset at each phase start."
        if device.type == "cuda"
        else "CPU run: CUDA columns are empty (not measured); memory is the process's RSS "
        "after the phase and its peak RSS during the phase (rss_peak_scope)."
    )


def _pilot(
    cfg: DictConfig,
    run_dir: Path,
    record: RunRecord,
    sweep_params: dict[str, str] | None,
    signals: SignalsStopAtOnce | None = None,
) -> int:
    """The pilot's steps, each with a verdict, then the report, the journal and the record."""
    model_files = base_files_fingerprint(cfg)  # before any step reads model.path (run.json's model_path)
    threads = configure_threads(cfg, beside=BESIDE_THE_PILOT if _has_checks_child(cfg) else "")
    busy = load_note(threads.busy_elsewhere, cpu_budget()[0])  # the measured times are only as good as the machine
    record.update(threads=threads.as_dict())
    if busy:
        log.warning("%s", busy)
    device = resolve_device(cfg)
    cap = cap_host_memory(device.type, int(cfg.distributed.replicas))  # before the checks' process: inherited
    if cap is not None:
        record.update(host_memory_cap=cap)
    results: list[CheckResult] = []
    shown: list[dict[str, Any]] = []
    with _checks_child(cfg) as child:
        rows, arithmetic, drawn = _guarded_steps(cfg, run_dir, device, child, sweep_params, results, shown)
        verdict = worst([r.verdict for r in results])
        if signals is not None:  # final: a signal from here is noted, the report and record finished first
            signals.defer()
        fault_point("verdicts")  # tests: a signal once the verdicts are final
        header = {
            "run_id": record.data["run_id"],
            "variant": record.data["variant"],
            "device": str(device),
            "verdict": verdict,
            "memory_note": _memory_note(device) + (f" Warning: {busy}" if busy else ""),
        }
        paths = write_report(run_dir, results, rows, shown, arithmetic, header, drawn)
    print_console(results, rows, shown, paths["report"], verdict)
    _journal(cfg, run_dir, results, verdict, str(device))
    failed = verdict in GATING
    first_bad = next((r for r in results if r.verdict in GATING), None)
    full = next(
        (t for t in [r.reason for r in results] + [str(r["detail"]) for r in rows] if t.startswith(DISK_FULL)), ""
    )
    record.update(**read_through(cfg, model_files))
    record.finish(  # no space stopped a step: the disk, not the task, is what failed (one message, exit 2)
        "oom" if verdict == "oom" else ("failed" if failed else "ok"),
        "disk_full" if full else (f"{first_bad.step}: {first_bad.reason}" if first_bad else "pilot_complete"),
        verdicts={r.step: r.verdict for r in results},
        **({"error": full.removeprefix(DISK_FULL)} if full else {}),
    )
    if full:
        raise DiskFull(full.removeprefix(DISK_FULL))
    return 1 if failed else 0


def _guarded_steps(
    cfg: DictConfig,
    run_dir: Path,
    device: torch.device,
    child: ChildProcess | None,
    sweep_params: dict[str, str] | None,
    results: list[CheckResult],
    shown: list[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[str], Future[Finished] | None]:
    """Build the task; the contract (a model or batch that cannot be read stops here: the one failing result,
    as a task that cannot be built), the stack and device, the data checks, phases, estimate: each a result.
    Returns the phase rows, the batch arithmetic and phases.png being drawn in ``child`` (from
    phases.csv, while the estimate runs here)."""
    rows: list[dict[str, Any]] = []
    arithmetic: list[str] = []
    drawn = None
    try:
        task = instantiate(cfg.data, _convert_="all")
        plan = plan_from_config(cfg, len(task.splits["train"]))
        arithmetic = plan.describe()
        for line in arithmetic:
            log.info("batch arithmetic: %s", line)
        learning_rate_reached(cfg, plan.total_updates)  # a warm-up the campaign's runs never finish: said
        with torch.random.fork_rng(devices=[]):  # leaves the random state of the steps below as it was
            model = build_model(cfg)
            log.info("contract: %s", check_contract(task, model, model_settings(cfg)).reason)  # a failure raises
        if beyond := untrained_positions_in(cfg, model):  # a row of the report, not a log line alone
            results.append(CheckResult(CONTRACT_STEP, "warn", beyond))
        results.append(_guarded("environment", lambda: environment_step(cfg, run_dir, task=task), run_dir))
        _data_checks(cfg, task, device, results, shown, run_dir)
        phases, rows = _phases_step(cfg, task, device, run_dir, child)
        results.append(phases)
        if child is not None and rows:
            write_phases_csv(run_dir, rows)  # write_report writes the same rows again
            drawn = child.submit("pilot.report", [str(run_dir)], timeout_s=300)
        results.append(_guarded("estimate", lambda: estimate_step(cfg, task, run_dir, rows, sweep_params), run_dir))
    except ContractError as error:  # refused before any step: every later one would fail the same way
        results.append(CheckResult(CONTRACT_STEP, "fail", str(error)))
    except Exception as error:  # the task itself could not be built
        if no_space_left(error) is not None:
            raise
        if (said := user_error(error)) is not None:  # a refusal with its fix (a model type, an attention kernel)
            results.append(CheckResult("setup", "fail", str(said)))
        else:  # the task's or the model's own code raised while built: one line, the traceback in a file
            said = _built_with_error(error, run_dir)
            log.error("pilot: %s", said)
            results.append(CheckResult("setup", "fail", said))
    return rows, arithmetic, drawn


SETUP_ERROR = "setup.error.txt"


def _built_with_error(error: BaseException, run_dir: Path) -> str:
    """What could not be built, the error of its own code and where (``built_with_error``); the whole
    traceback goes to ``setup.error.txt``."""
    (run_dir / SETUP_ERROR).write_text(traceback.format_exc())
    return f"{built_with_error(error)}; the whole traceback: {SETUP_ERROR}"
