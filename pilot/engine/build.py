"""The one place a run's model and trainer are built: ``mode=train``, the pilot's phases and
checks, the resume check, the estimate and the reload check all call these, so they start from
the same seed and the same instantiation."""

from __future__ import annotations

import random

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig

from pilot.config.values import enum_value, resolve_device
from pilot.cpu_budget import busy_elsewhere
from pilot.engine.distributed import DistContext
from pilot.engine.sharding import full_model_state
from pilot.engine.threads import ThreadChoice, choose_threads, launcher_cpus
from pilot.engine.trainer import Trainer
from pilot.models.adapter import apply_adapter


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


BUSY_SINCE_AT_MOST_S = 60.0  # an older sample says little about the machine now: a new 0.25 s window


def configure_threads(cfg: DictConfig) -> ThreadChoice:
    """CPU threads per process (``engine/threads.py``): replicas and parallel sweep jobs share the
    cores instead of oversubscribing them."""
    replicas, configured = int(cfg.distributed.replicas), int(cfg.run.threads)
    # since the process started (or the sweep's previous job measured), else over 0.25 s; the pilot reports it
    busy = busy_elsewhere(reuse_s=BUSY_SINCE_AT_MOST_S) if replicas == 1 else None
    choice = choose_threads(configured, replicas, launcher_cpus(), busy)
    torch.set_num_threads(choice.count)
    return choice


def build_model(cfg: DictConfig, adapter: bool = True) -> torch.nn.Module:
    """A freshly initialised ``cfg.model``: torch seeded with ``cfg.seed`` first, so every caller
    starts from the same weights; wrapped by ``cfg.adapter`` (its base frozen) unless ``adapter``
    is false (the reload check applies the exported adapter itself)."""
    torch.manual_seed(int(cfg.seed))
    model = instantiate(cfg.model, _convert_="all")
    return apply_adapter(model, cfg) if adapter else model


def build_trainer(cfg: DictConfig, ctx: DistContext = DistContext()) -> Trainer:
    """Task, model and engine for ``cfg`` (already validated)."""
    device = resolve_device(cfg)
    if device.type == "cuda":
        device = torch.device("cuda", ctx.local_rank)
        torch.cuda.set_device(device)
    task = instantiate(cfg.data, _convert_="all")
    seed_everything(int(cfg.seed))  # same initial weights on every replica
    trainer = Trainer(cfg, task, build_model(cfg), device, ctx)
    if trainer.plan.total_updates == 0:
        raise ValueError(
            f"budget.value={cfg.budget.value} ({enum_value(cfg.budget.fixed)}) buys no update: "
            f"{trainer.plan.train_examples} training examples, {trainer.plan.examples_per_update} "
            "per update. Fix: raise budget.value, lower batch.micro_batch/accumulation, or set "
            "batch.drop_last=false."
        )
    return trainer


def whole_model(trainer: Trainer) -> torch.nn.Module | None:
    """The trained model unsharded, for what runs on rank 0 alone (predictions, the closing's export
    and reload): under FSDP gathered from every rank (a collective) into a fresh copy built from the
    config on rank 0 (None on the others); without FSDP the model itself."""
    if not getattr(trainer, "sharded", False):
        return trainer.raw_model
    state = full_model_state(trainer.raw_model)
    if trainer.ctx.rank != 0:
        return None
    model = build_model(trainer.cfg)
    model.load_state_dict(state)
    return model.to(trainer.device)
