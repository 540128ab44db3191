"""What a training run records about itself once it is built (rank 0).

The batch arithmetic (logged, and kept in batch_plan.json), the resolved config (config.yaml),
what defines the task it learns, and, with ``estimate.in_runs``, its memory estimate.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import torch
from omegaconf import DictConfig, OmegaConf

from pilot.closing.export import control_count
from pilot.config.values import enum_value
from pilot.engine.threads import ThreadChoice
from pilot.engine.trainer import Trainer
from pilot.estimate.fake_tensor import EstimateRefused, estimate_memory
from pilot.models.adapter import adapter_settings, built_adapter, wants_adapter
from pilot.models.base_files import recorded
from pilot.run_record import RunRecord, write_json_atomic, write_resolved_config

log = logging.getLogger("pilot")


def record_setup(cfg: DictConfig, trainer: Trainer, record: RunRecord, run_dir: Path, threads: ThreadChoice) -> None:
    """Log the batch arithmetic once and keep it, with the resolved config, in the run directory."""
    plan = trainer.plan
    summary = {
        **plan.summary(),
        "targets_seen": trainer.planned_targets(),
        "target_unit": trainer.task.info.get("target_unit", "target"),
    }
    lines = plan.describe() + [
        f"{summary['target_unit']}s in the loss over the budget = "
        f"{summary['targets_seen']} (counted from the data stream)"
    ]
    for line in lines:  # an update the split cannot fill is a warning: a sweep over batch sizes compares none
        (log.warning if line.startswith("no update reaches") else log.info)("batch arithmetic: %s", line)
    learning_rate_reached(cfg, plan.total_updates, summary)
    declared, available = int(cfg.loop.eval_examples), len(trainer.task.splits["val"])
    summary["eval_examples"] = min(declared, available)  # what every validation of the run evaluates
    if available < declared:
        log.warning(
            "loop.eval_examples=%d but the validation split holds %d: every validation uses those %d "
            "(recorded as batch_plan.eval_examples). Fix: loop.eval_examples=%d to declare it, or a larger split.",
            declared,
            available,
            available,
            available,
        )
    declared, held = int(cfg.closing.control_examples), control_count(trainer.task, cfg)
    if 0 < held < declared:
        log.warning(
            "closing.control_examples=%d but its split holds %d: the closing's control batch holds those %d "
            "(recorded in phases.csv). Fix: closing.control_examples=%d to declare it.",
            *(declared, held, held, held),
        )
    log.info(
        "device %s, %d replica(s), %d CPU thread(s) per process (%s), precision %s",
        trainer.device,
        trainer.ctx.world_size,
        threads.count,
        threads.reason,
        enum_value(cfg.precision.dtype),
    )
    write_resolved_config(run_dir, cfg)  # never left truncated
    write_json_atomic(run_dir / "batch_plan.json", summary)
    record.update(
        batch_plan=summary,
        task=task_summary(cfg, trainer.task, trainer.train_items),
        threads=threads.as_dict(),
        parameters=parameter_counts(trainer.raw_model, cfg),
    )
    if (folder := recorded(cfg, trainer.files_read or {})) is not None:  # what model.path held: a rerun compares
        record.update(model_path=folder)
    if cfg.estimate.in_runs:  # off by default: the first estimate in a process costs seconds of set-up
        record.update(memory_estimate=estimate_summary(cfg, trainer.task))


def parameter_counts(model: torch.nn.Module, cfg: DictConfig) -> dict[str, Any]:
    """What the run trains, as run.json keeps it: the model's parameters (shared tensors once), those that
    train, and the adapter's settings where one wraps a frozen base (they were only in config.yaml)."""
    params = list(model.parameters())
    counts: dict[str, Any] = {
        "total": sum(p.numel() for p in params),
        "trained": sum(p.numel() for p in params if p.requires_grad),
    }
    if wants_adapter(cfg):  # what was asked, and what peft built of it
        counts["adapter"] = {**adapter_settings(cfg), **built_adapter(model)}
    return counts


def learning_rate_reached(cfg: DictConfig, total_updates: int, summary: dict | None = None) -> None:
    """The highest learning rate the run's updates use, recorded in ``summary`` when given; a warning when
    it is not optim.lr (a warm-up longer than the run) or is 0 (no update changes a weight)."""
    lr, warmup = float(cfg.optim.lr), int(cfg.optim.warmup_updates)
    reached = lr * min(1.0, total_updates / warmup) if warmup > 0 else lr
    if summary is not None:
        summary["peak_lr_reached"] = reached
    if reached == 0:
        log.warning("optim.lr=%g: no update changes a weight. Fix: a learning rate > 0.", lr)
    elif reached < lr:
        log.warning(
            "optim.warmup_updates=%d is longer than the run's %d updates: the learning rate only reaches %.3g "
            "(optim.lr=%g). Fix: optim.warmup_updates=%d (or fewer).",
            warmup,
            total_updates,
            reached,
            lr,
            total_updates,
        )


CUT_TARGETS_SAID = 0.05  # a share of the training targets truncation removes that a run says at its start


def task_summary(cfg: DictConfig, task, train_items: list) -> dict:
    """What defines the task a run learns: the data settings and the share of target tokens
    truncation removed (the recap marks a variant whose task differs from the control's)."""
    cut = sum(int(item.get("truncated_target_tokens", 0)) for item in train_items)
    total = sum(int(item["answer_tokens"]) for item in train_items if "answer_tokens" in item)
    truncated = [int(item["truncated_tokens"]) for item in train_items if "truncated_tokens" in item]
    tokens = sum(truncated) + sum(len(item["input_ids"]) for item in train_items if "truncated_tokens" in item)
    if total and cut / total >= CUT_TARGETS_SAID:
        longest = max(len(item["input_ids"]) + int(item.get("truncated_tokens", 0)) for item in train_items)
        log.warning(
            "data.max_len=%s cuts %.0f%% of the training targets (truncation; recorded as "
            "task.targets_truncated_share): the run learns a shorter task than the data's. Fix: data.max_len >= %d "
            "(the longest training example).",
            OmegaConf.select(cfg, "data.max_len"),
            100 * cut / total,
            longest,
        )
    return {
        "data": OmegaConf.to_container(cfg.data, resolve=True),
        "targets_truncated_share": cut / total if total else None,
        "examples_truncated_share": sum(n > 0 for n in truncated) / len(truncated) if truncated else None,
        "tokens_truncated_share": sum(truncated) / tokens if tokens else None,
    }


def estimate_summary(cfg: DictConfig, task) -> dict:
    """This variant's peak tensor memory per phase on fake tensors (nothing allocated): comparable
    between variants even on a CPU, where the process's RSS is mostly PyTorch itself."""
    try:
        estimate = estimate_memory(cfg, task)
    except EstimateRefused as error:
        return {"refused": str(error)}
    return {
        "peak_bytes": estimate.peak_bytes,
        "fake": True,
        "phases": {p.phase: p.peak_bytes for p in estimate.phases},
        "flops_per_micro_batch": estimate.flops_per_micro_batch,
    }
