"""Step 3: can the loop learn a handful of examples? The mechanism, not generalisation.

Train on K training examples (every update sees all of them) for at most M
updates with the run's model, optimizer, learning rate and precision. Pass
when every loss and gradient norm is finite, the loss falls by the declared
factor, and the declared share of examples has its targets predicted exactly
(every answer token for generation, the class id for classification). A
label pipeline that scrambles labels, or a learning rate of zero, fails.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Dict, List

import numpy as np
import torch
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf

from pilot.checks.result import CheckResult
from pilot.data.task import IGNORE_INDEX, TaskData, move_to
from pilot.engine.trainer import Trainer

STEP = "tiny_subset"


@torch.no_grad()
def exact_match_rate(trainer: Trainer, items: List[Dict]) -> float:
    """Share of examples whose every target is predicted exactly (teacher forcing)."""
    task, model = trainer.task, trainer.raw_model
    model.eval()
    hits = 0
    step = int(trainer.cfg.batch.eval_micro_batch)
    for start in range(0, len(items), step):
        batch = move_to(task.collate(items[start:start + step]), trainer.device)
        with trainer.autocast():
            output = task.forward(model, batch)
        predicted, labels = task.predict(output, batch), batch["labels"]
        correct = (predicted == labels) | (labels == IGNORE_INDEX)
        if correct.dim() > 1:
            correct = correct.flatten(1).all(dim=1)
        hits += int(correct.sum())
    return hits / max(1, len(items))


def tiny_config(cfg: DictConfig, n_examples: int, max_updates: int) -> DictConfig:
    tiny = OmegaConf.create(OmegaConf.to_container(cfg, resolve=True))
    micro = min(int(cfg.batch.micro_batch), n_examples)
    tiny.batch.micro_batch = micro
    tiny.batch.accumulation = -(-n_examples // micro)  # one update = the whole subset
    tiny.batch.drop_last = False
    tiny.budget.fixed, tiny.budget.value = "updates", max_updates
    tiny.distributed.replicas = 1
    return tiny


def tiny_subset_check(cfg: DictConfig, task: TaskData, device: torch.device) -> CheckResult:
    settings = cfg.pilot.tiny
    n_examples = min(int(settings.examples), len(task.splits["train"]))
    order = np.random.default_rng([int(cfg.seed), 7]).permutation(len(task.splits["train"]))
    subset = [task.splits["train"][i] for i in sorted(order[:n_examples])]
    tiny_task = replace(task, splits={"train": subset, "val": subset, "test": []})
    tiny_cfg = tiny_config(cfg, n_examples, int(settings.max_updates))
    torch.manual_seed(int(cfg.seed))
    trainer = Trainer(tiny_cfg, tiny_task, instantiate(cfg.model, _convert_="all"), device)
    items = trainer.train_items
    initial_loss = trainer.evaluate("train", items)["loss"]
    loss_target = initial_loss / float(settings.loss_drop)
    final_loss, recovery, finite = initial_loss, exact_match_rate(trainer, items), True
    while trainer.updates_done < trainer.plan.total_updates:
        record = trainer.train_step()
        if not (math.isfinite(record.loss) and math.isfinite(record.grad_norm)):
            finite = False
            break
        if trainer.updates_done % int(settings.check_every) == 0 \
                or trainer.updates_done == trainer.plan.total_updates:
            final_loss = trainer.evaluate("train", items)["loss"]
            recovery = exact_match_rate(trainer, items)
            if final_loss <= loss_target and recovery >= float(settings.min_recovery):
                break
    details = {"examples": n_examples, "updates": trainer.updates_done, "initial_loss": initial_loss,
               "final_loss": final_loss, "loss_drop": initial_loss / final_loss if final_loss > 0 else math.inf,
               "declared_loss_drop": float(settings.loss_drop), "recovered": recovery,
               "declared_recovery": float(settings.min_recovery), "all_finite": finite,
               "example_indices": [e.index for e in subset]}
    numbers = (f"loss {initial_loss:.3g} -> {final_loss:.3g} ({details['loss_drop']:.3g}x, declared "
               f">= {float(settings.loss_drop):g}x), {recovery:.0%} of {n_examples} examples recovered "
               f"exactly (declared >= {float(settings.min_recovery):.0%}) after {trainer.updates_done} updates")
    if not finite:
        return CheckResult(STEP, "fail", f"non-finite loss or gradient at update {trainer.updates_done}", [], details)
    passed = final_loss <= loss_target and recovery >= float(settings.min_recovery)
    return CheckResult(STEP, "pass" if passed else "fail",
                       ("learns the subset: " if passed else "cannot learn the subset: ") + numbers, [], details)
