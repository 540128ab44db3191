"""``train(cfg, run_dir)``: one training run of a composed variant, start to finish.

1. validate the whole config (one error listing every problem);
2. start the replicas (spawned, or joined from torchrun/SLURM variables);
3. build the task and the model from their ``_target_``;
4. log the batch arithmetic once; train to the budget; evaluate;
5. write run.json and metrics.jsonl (rank 0).
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import time
from pathlib import Path
from typing import Iterable, Optional, Tuple

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.checkpoint import (clean_temporary_files, defining_config, differing_keys, fault_point,
                              latest_valid_checkpoint, restore_training_state, save_checkpoint)
from pilot.closing import close_run, write_reproduce
from pilot.config.validate import validate, resolve_device
from pilot.data.task import enum_value
from pilot.engine.distributed import (DistContext, init_from_env, launched_externally, spawn)
from pilot.engine.preemption import PreemptionWatch
from pilot.engine.trainer import Trainer, record_dict
from pilot.errors import ResumeRefused
from pilot.phases.memory import peak_memory
from pilot.phases.train_phases import TrainPhases
from pilot.predictions import write_predictions
from pilot.run_record import RunRecord, write_json_atomic

log = logging.getLogger("pilot")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def configure_threads(cfg: DictConfig) -> int:
    """CPU threads per process; replicas share the cores instead of oversubscribing them."""
    threads = int(cfg.run.threads)
    if threads <= 0 and cfg.distributed.replicas > 1:
        threads = max(1, (os.cpu_count() or 1) // int(cfg.distributed.replicas))
    if threads > 0:
        torch.set_num_threads(threads)
    return torch.get_num_threads()


def build_trainer(cfg: DictConfig, ctx: DistContext = DistContext()) -> Trainer:
    """Task, model and engine for ``cfg`` (already validated)."""
    device = resolve_device(cfg)
    if device.type == "cuda":
        device = torch.device("cuda", ctx.local_rank)
        torch.cuda.set_device(device)
    task = instantiate(cfg.data, _convert_="all")
    seed_everything(int(cfg.seed))  # same initial weights on every replica
    model = instantiate(cfg.model, _convert_="all")
    trainer = Trainer(cfg, task, model, device, ctx)
    if trainer.plan.total_updates == 0:
        raise ValueError(
            f"budget.value={cfg.budget.value} ({enum_value(cfg.budget.fixed)}) buys no update: "
            f"{trainer.plan.train_examples} training examples, {trainer.plan.examples_per_update} "
            "per update. Fix: raise budget.value, lower batch.micro_batch/accumulation, or set "
            "batch.drop_last=false.")
    return trainer


def find_resume_state(cfg: DictConfig, run_dir: Path, is_main: bool) -> Tuple[Optional[dict], dict]:
    """The newest valid checkpoint's state (or None) and what to record about the resume."""
    if not cfg.checkpoint.resume:
        return None, {}
    ckpt_dir = run_dir / "checkpoints"
    cleaned = clean_temporary_files(ckpt_dir) if is_main else []
    if cleaned:
        log.warning("removed %d leftover temporary checkpoint file(s) of an interrupted save: %s",
                    len(cleaned), ", ".join(cleaned))
    found = latest_valid_checkpoint(ckpt_dir)
    if found is None:
        note = {"from_update": 0, "cleaned_temporary_files": cleaned}
        if (run_dir / "run.json").exists():
            note["note"] = "no valid checkpoint: restarted from the beginning"
            return None, note
        return None, {}
    path, state = found
    differences = differing_keys(state["defining_config"], defining_config(cfg))
    if differences and not cfg.checkpoint.force_resume:
        raise ResumeRefused(
            f"{path} was written under another config; resuming would mix two runs. Differing keys:\n  "
            + "\n  ".join(differences) + "\nFix: use a new run directory, restore these values, or "
            "set checkpoint.force_resume=true to continue anyway (recorded in run.json).")
    note = {"from_update": int(state["position"]["updates_done"]), "checkpoint": path.name,
            "cleaned_temporary_files": cleaned}
    if state.get("torch_threads") not in (None, torch.get_num_threads()):
        note["threads_changed"] = (f"{state['torch_threads']} -> {torch.get_num_threads()} CPU threads: "
                                   "the run continues correctly but not bit-identically")
    if differences:
        note["forced_despite"] = differences
    log.info("resuming from %s (update %d)", path, note["from_update"])
    return state, note


class StopRules:
    """The stop causes declared in ``cfg.loop`` before the run: divergence and early stopping."""

    def __init__(self, cfg: DictConfig, first_loss: Optional[float] = None):
        self.factor = float(cfg.loop.divergence_factor)
        self.patience = int(cfg.loop.early_stop_patience)
        self.first_loss = first_loss
        self.best = math.inf
        self.since_best = 0

    def after_update(self, loss: float, update: int) -> Optional[str]:
        if self.first_loss is None:
            self.first_loss = loss
        if not math.isfinite(loss):
            return f"diverged: non-finite loss {loss} at update {update}"
        if self.factor > 0 and loss > self.factor * self.first_loss:
            return (f"diverged: loss {loss:.4g} > {self.factor:g} x first loss {self.first_loss:.4g} "
                    f"at update {update}")
        return None

    def after_validation(self, loss: float, update: int) -> Optional[str]:
        if loss < self.best:
            self.best, self.since_best = loss, 0
            return None
        self.since_best += 1
        if self.patience and self.since_best >= self.patience:
            return (f"early_stop: no validation improvement for {self.since_best} points "
                    f"(best {self.best:.4g}) at update {update}")
        return None


def _first_loss(run_path: Path) -> Optional[float]:
    """The first update's loss of a resumed run (the divergence rule is relative to it)."""
    try:
        with (run_path / "metrics.jsonl").open() as handle:
            for line in handle:
                row = json.loads(line)
                if row.get("kind") == "train":
                    return float(row["loss"])
    except (OSError, ValueError, KeyError):
        pass
    return None


def _worker(cfg: DictConfig, run_dir: str, overrides: list, sweep_dir: Optional[str] = None) -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s] %(message)s")
    ctx = (init_from_env(enum_value(cfg.distributed.backend), resolve_device(cfg))
           if launched_externally() else DistContext())
    run_path = Path(run_dir)
    threads = configure_threads(cfg)  # before the resume: the thread count is compared with the checkpoint's
    state, resume_note = find_resume_state(cfg, run_path, ctx.is_main)
    # run.json exists (status "running") before anything can fail, so a failure is recorded
    record = (RunRecord(run_path, cfg, overrides, resume=resume_note or None,
                        sweep_dir=Path(sweep_dir) if sweep_dir else None) if ctx.is_main else None)
    trainer = None
    status, stop_cause, error = "ok", None, None
    ckpt_dir = run_path / "checkpoints"
    every, keep = int(cfg.checkpoint.every), int(cfg.checkpoint.keep_last)
    eval_every = int(cfg.loop.eval_every)
    rules = StopRules(cfg, _first_loss(run_path) if state is not None else None)
    watch = PreemptionWatch().install()
    hand_over = False
    eval_items: list = []
    phases = TrainPhases(resolve_device(cfg), ctx.rank, {
        "micro_batch": int(cfg.batch.micro_batch), "accumulation": int(cfg.batch.accumulation),
        "replicas": int(cfg.distributed.replicas), "precision": enum_value(cfg.precision.dtype),
        "activation_checkpointing": bool(cfg.memory.activation_checkpointing)})
    update_seconds: list = []

    def validate_now() -> dict:
        evaluation = trainer.evaluate("val", eval_items)
        if record is not None:
            record.log_metrics({"kind": "val", "update": trainer.updates_done, **evaluation})
        return evaluation

    def on_update(row) -> Optional[str]:
        if phases.open_phase == "first_step":
            phases.end(detail=f"update {row.update}: loss {row.loss:.4g}, {row.seconds:.3g} s",
                       examples=row.examples)
            phases.begin("steady_steps")
        else:
            update_seconds.append(row.seconds)
        if record is not None:
            record.log_metrics({"kind": "train", **record_dict(row)})
            if every and trainer.updates_done % every == 0:
                save_checkpoint(trainer, cfg, ckpt_dir, keep)
        fault_point("update", trainer.updates_done)
        if watch.requested:
            return "preempted"
        cause = rules.after_update(row.loss, row.update)
        if cause is None and eval_every and row.update % eval_every == 0 \
                and row.update < trainer.plan.total_updates:
            cause = rules.after_validation(validate_now()["loss"], row.update)
        return cause

    try:
        if ctx.world_size != cfg.distributed.replicas:
            raise ValueError(f"distributed.replicas={cfg.distributed.replicas} but the launcher "
                             f"started {ctx.world_size} process(es). Fix: make them agree.")
        phases.begin("build_model")
        trainer = build_trainer(cfg, ctx)
        eval_items = trainer.task.encoded("val")[: int(cfg.loop.eval_examples)]
        if state is not None:
            restore_training_state(trainer, state)
        parameters = sum(p.numel() for p in trainer.raw_model.parameters())
        phases.end(detail=f"{parameters:,} parameters" + (f"; resumed at update {trainer.updates_done}"
                                                           if state is not None else ""))
        if record is not None:
            _record_setup(cfg, trainer, record, run_path, threads)
        phases.begin("first_step", examples=trainer.plan.examples_per_update)
        stop_cause = trainer.train(on_update=on_update)
        diverged = stop_cause == "non_finite_loss" or stop_cause.startswith("diverged")
        if phases.open_phase == "steady_steps":
            phases.end("fail" if diverged else "pass", f"{_steady_detail(update_seconds)}; stop: {stop_cause}",
                       examples=len(update_seconds) * trainer.plan.examples_per_update)
        phases.end("fail" if diverged else "pass", f"stop: {stop_cause}")  # a first step that ended the run
        if stop_cause == "preempted":
            status, hand_over = _on_preemption(cfg, trainer, record, ckpt_dir, keep)
            if hand_over:
                return
        if stop_cause == "non_finite_loss" or stop_cause.startswith("diverged"):
            status = "diverged"
        if record is not None and not (ckpt_dir / f"ckpt-{trainer.updates_done:08d}.pt").exists():
            phases.begin("checkpoint_save")
            path = save_checkpoint(trainer, cfg, ckpt_dir, keep)
            phases.end(detail=f"{path.name}, {path.stat().st_size:,} bytes")
        phases.begin("eval", examples=len(eval_items), micro_batch=int(cfg.batch.eval_micro_batch))
        evaluation = validate_now()
        phases.end(detail=f"loss {evaluation['loss']:.4g} on {len(eval_items)} validation examples")
        if record is not None and status == "preempted":
            return
        if record is not None:
            log.info("stop: %s; validation after %d updates: loss %.4f, accuracy %.3f", stop_cause,
                     trainer.updates_done, evaluation["loss"], evaluation["accuracy"])
            write_predictions(trainer, eval_items, run_path / "predictions.jsonl")
            if status == "ok" and int(cfg.closing.control_examples) > 0:
                phases.begin("export", examples=int(cfg.closing.control_examples))
                closing = close_run(trainer.raw_model, trainer.task, cfg, run_path)
                phases.end(closing["verdict"], closing["reason"][:300])
                record.update(closing=closing)
                write_reproduce(run_path, record.data)
                (log.info if closing["verdict"] == "pass" else log.error)("closing: %s", closing["reason"])
    except torch.OutOfMemoryError as exc:
        status, stop_cause = "oom", f"out of memory at update {trainer.updates_done + 1 if trainer else 0}"
        error = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300]}"
        phases.end("oom", f"out of memory in {phases.open_phase}: {error}")
        raise
    except Exception as exc:  # recorded, then re-raised: the failure must stay visible
        status, stop_cause, error = "failed", "exception", f"{type(exc).__name__}: {exc}"
        phases.end("fail", error[:300])
        raise
    finally:
        if not hand_over:
            watch.uninstall()
        if record is not None:
            phases.end("fail" if status not in ("ok",) else "pass", f"run ended: {status}")
            phases.write(run_path)
        if record is not None and not hand_over:
            record.finish(status, stop_cause, error=error, peak_memory=phases.peaks() or peak_memory(),
                          seconds_per_update=(sum(update_seconds) / len(update_seconds)) if update_seconds else None,
                          **(trainer.position() if trainer is not None else {}))
        if hand_over:
            watch.hand_over()  # submitit requeues the job and exits this process


def _steady_detail(seconds: list) -> str:
    if not seconds:
        return "no update after the first"
    return (f"{len(seconds)} updates, {sum(seconds) / len(seconds):.3g} s/update (updates alone; the phase's "
            "wall time also holds validations and checkpoints)")


def _on_preemption(cfg: DictConfig, trainer: Trainer, record: Optional[RunRecord], ckpt_dir: Path,
                   keep: int) -> Tuple[str, bool]:
    """Save a complete checkpoint, record the interruption; requeue unless requeues are used up."""
    if record is None:  # non-zero ranks: rank 0 saves and decides
        return "preempted", True
    save_checkpoint(trainer, cfg, ckpt_dir, keep)
    interruptions = record.data.setdefault("interruptions", [])
    interruptions.append({"at_update": trainer.updates_done, "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                          "signal": "USR2"})
    requeue = len(interruptions) <= int(cfg.checkpoint.max_requeues)
    record.update(interruptions=interruptions, status="requeued" if requeue else "preempted")
    log.warning("preempted at update %d: checkpoint saved; %s", trainer.updates_done,
                "requeueing" if requeue else f"max_requeues={cfg.checkpoint.max_requeues} used up, ending")
    if requeue:
        record.metrics.close()
    return "preempted", requeue


def _record_setup(cfg: DictConfig, trainer: Trainer, record: RunRecord, run_dir: Path,
                  threads: int) -> None:
    """Log the batch arithmetic once and keep it, with the resolved config, in the run directory."""
    plan = trainer.plan
    summary = {**plan.summary(), "targets_seen": trainer.planned_targets(),
               "target_unit": trainer.task.info.get("target_unit", "target")}
    lines = plan.describe() + [f"{summary['target_unit']}s in the loss over the budget = "
                               f"{summary['targets_seen']} (counted from the data stream)"]
    for line in lines:
        log.info("batch arithmetic: %s", line)
    log.info("device %s, %d replica(s), %d CPU thread(s) per process, precision %s",
             trainer.device, trainer.ctx.world_size, threads, enum_value(cfg.precision.dtype))
    OmegaConf.save(cfg, run_dir / "config.yaml", resolve=True)
    write_json_atomic(run_dir / "batch_plan.json", summary)
    record.update(batch_plan=summary, task=task_summary(cfg, trainer.task, trainer.train_items))
    if cfg.estimate.in_runs:  # off by default: the first estimate in a process costs seconds of set-up
        record.update(memory_estimate=estimate_summary(cfg, trainer.task))


def task_summary(cfg: DictConfig, task, train_items: list) -> dict:
    """What defines the task a run learns: the data settings and the share of target tokens
    truncation removed (the recap marks a variant whose task differs from the control's)."""
    cut = sum(int(item.get("truncated_target_tokens", 0)) for item in train_items)
    total = sum(int(item["answer_tokens"]) for item in train_items if "answer_tokens" in item)
    truncated = [int(item["truncated_tokens"]) for item in train_items if "truncated_tokens" in item]
    tokens = sum(truncated) + sum(len(item["input_ids"]) for item in train_items if "truncated_tokens" in item)
    return {"data": OmegaConf.to_container(cfg.data, resolve=True),
            "targets_truncated_share": cut / total if total else None,
            "examples_truncated_share": sum(n > 0 for n in truncated) / len(truncated) if truncated else None,
            "tokens_truncated_share": sum(truncated) / tokens if tokens else None}


def estimate_summary(cfg: DictConfig, task) -> dict:
    """This variant's peak tensor memory per phase on fake tensors (nothing allocated): comparable
    between variants even on a CPU, where the process's RSS is mostly PyTorch itself."""
    from pilot.estimate.memory import EstimateRefused, estimate_memory
    try:
        estimate = estimate_memory(cfg, task)
    except EstimateRefused as error:
        return {"refused": str(error)}
    return {"peak_bytes": estimate.peak_bytes, "fake": True,
            "phases": {p.phase: p.peak_bytes for p in estimate.phases},
            "flops_per_micro_batch": estimate.flops_per_micro_batch}


def train(cfg: DictConfig, run_dir: Path, overrides: Iterable[str] = (),
          sweep_dir: Optional[Path] = None) -> dict:
    """Validate, run (spawning replicas when needed) and return the final run.json.

    Under torchrun only rank 0 writes the run directory; the other ranks return {}.
    """
    validate(cfg)
    run_dir = Path(run_dir)
    overrides = list(overrides)
    replicas = int(cfg.distributed.replicas)
    sweep = str(sweep_dir) if sweep_dir else None
    if replicas > 1 and not launched_externally():
        spawn(_worker, (cfg, str(run_dir), overrides, sweep), replicas, int(cfg.distributed.master_port))
    else:
        _worker(cfg, str(run_dir), overrides, sweep)
        if int(os.environ.get("RANK", "0")) > 0:
            return {}
    return json.loads((run_dir / "run.json").read_text())

