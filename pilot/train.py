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
import os
import random
from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.config.validate import validate, resolve_device
from pilot.data.task import enum_value
from pilot.engine.distributed import (DistContext, init_from_env, launched_externally, spawn)
from pilot.engine.trainer import Trainer, record_dict
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


def _worker(cfg: DictConfig, run_dir: str, overrides: list) -> None:
    if not logging.getLogger().handlers:
        logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s] %(message)s")
    ctx = (init_from_env(enum_value(cfg.distributed.backend), resolve_device(cfg))
           if launched_externally() else DistContext())
    # run.json exists (status "running") before anything can fail, so a failure is recorded
    record = RunRecord(Path(run_dir), cfg, overrides) if ctx.is_main else None
    trainer = None
    status, stop_cause, error = "ok", None, None

    def on_update(row) -> Optional[str]:
        if record is not None:
            record.log_metrics({"kind": "train", **record_dict(row)})
        return None

    try:
        if ctx.world_size != cfg.distributed.replicas:
            raise ValueError(f"distributed.replicas={cfg.distributed.replicas} but the launcher "
                             f"started {ctx.world_size} process(es). Fix: make them agree.")
        threads = configure_threads(cfg)
        trainer = build_trainer(cfg, ctx)
        if record is not None:
            _record_setup(cfg, trainer, record, Path(run_dir), threads)
        stop_cause = trainer.train(on_update=on_update)
        if stop_cause == "non_finite_loss":
            status = "diverged"
        evaluation = trainer.evaluate("val")
        if record is not None:
            record.log_metrics({"kind": "val", "update": trainer.updates_done, **evaluation})
            log.info("validation after %d updates: loss %.4f, accuracy %.3f", trainer.updates_done,
                     evaluation["loss"], evaluation["accuracy"])
    except Exception as exc:  # recorded, then re-raised: the failure must stay visible
        status, stop_cause, error = "failed", "exception", f"{type(exc).__name__}: {exc}"
        raise
    finally:
        if record is not None:
            record.finish(status, stop_cause, error=error,
                          **(trainer.position() if trainer is not None else {}))


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
    record.update(batch_plan=summary)


def train(cfg: DictConfig, run_dir: Path, overrides: Iterable[str] = ()) -> dict:
    """Validate, run (spawning replicas when needed) and return the final run.json.

    Under torchrun only rank 0 writes the run directory; the other ranks return {}.
    """
    validate(cfg)
    run_dir = Path(run_dir)
    overrides = list(overrides)
    replicas = int(cfg.distributed.replicas)
    if replicas > 1 and not launched_externally():
        spawn(_worker, (cfg, str(run_dir), overrides), replicas, int(cfg.distributed.master_port))
    else:
        _worker(cfg, str(run_dir), overrides)
        if int(os.environ.get("RANK", "0")) > 0:
            return {}
    return json.loads((run_dir / "run.json").read_text())

