"""The batches a run can make from its data: an estimate is for those, not for a declared size no
batch reaches.

A micro-batch larger than the training split (its share per replica) never happens: the loader's
batches hold the whole split at most, and an update holds no more than the split (the batch
arithmetic says so, ``BatchPlan.largest_update``). Estimated as declared, ``batch.micro_batch=1000000``
on 573 examples built a million-example batch, sized the choice sheet for it and recommended
``batch.accumulation=8000000``; the evaluation micro-batch likewise against the validation split.
"""

from __future__ import annotations

import copy

from omegaconf import DictConfig, open_dict

from pilot.data.task import TaskData
from pilot.engine.batch_plan import ceil_div


def reachable_batches(cfg: DictConfig, task: TaskData) -> tuple[DictConfig, str | None]:
    """``cfg`` with its micro-batch, accumulation and evaluation micro-batch cut to what its splits can
    fill, and a line saying what was cut (None and ``cfg`` itself when nothing was)."""
    replicas = max(1, int(cfg.distributed.replicas))
    micro, accumulation = int(cfg.batch.micro_batch), int(cfg.batch.accumulation)
    eval_micro = int(cfg.batch.eval_micro_batch)
    train, val = len(task.splits.get("train", [])), len(task.splits.get("val", []))
    new_micro = min(micro, ceil_div(train, replicas)) if train else micro
    update = min(micro * accumulation * replicas, train) if train else micro * accumulation * replicas
    new_accumulation = ceil_div(update, new_micro * replicas)
    new_eval = min(eval_micro, val) if val else eval_micro
    if (new_micro, new_accumulation, new_eval) == (micro, accumulation, eval_micro):
        return cfg, None
    cut = copy.deepcopy(cfg)
    with open_dict(cut):
        cut.batch.micro_batch, cut.batch.accumulation, cut.batch.eval_micro_batch = (
            new_micro,
            new_accumulation,
            new_eval,
        )
    said = []
    if (new_micro, new_accumulation) != (micro, accumulation):
        said.append(
            f"batch.micro_batch={micro} x batch.accumulation={accumulation}"
            + (f" x {replicas} replicas" if replicas > 1 else "")
            + f" but the training split holds {train} examples: no batch of the run holds more, so this is for "
            f"micro-batches of {new_micro} x accumulation {new_accumulation}, what its batches hold"
        )
    if new_eval != eval_micro:
        said.append(
            f"batch.eval_micro_batch={eval_micro} but the validation split holds {val}: evaluation batches of {new_eval}"
        )
    return cut, "; ".join(said) + ". To size the declared batches, give the task the campaign's data."
