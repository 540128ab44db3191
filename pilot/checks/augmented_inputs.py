"""Why evaluation numbers would move when ``collate`` draws random inputs (``augmented_inputs``): one
collate serves every split, so an augmentation in it augments every validation batch too."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.collate_mutation import changed_by_collate
from pilot.data.task import TaskData


def _by_index(batch: dict[str, Any]) -> dict[str, Any]:
    """The batch's rows in the order of their ``index`` (each tensor of one row per index reordered)."""
    index = batch.get("index")
    if not (torch.is_tensor(index) and index.dim() == 1 and len(index) > 1):
        return batch
    order = index.argsort()
    rows = len(index)
    return {k: v[order] if torch.is_tensor(v) and v.dim() >= 1 and v.shape[0] == rows else v for k, v in batch.items()}


def augmented_inputs(task: TaskData, items: list[dict[str, Any]], batch: dict[str, Any]) -> str | None:
    """Why evaluation numbers would move, when ``collate`` draws random inputs: the same examples
    collated again give other inputs but the same labels (augmentation, noise — applied to every
    validation batch too, since one collate serves every split). A collate that also draws its
    labels (masked language modelling picks the masked positions per call) is a way of training
    whose evaluation is random by design: not said. One that changes the examples it is given is
    named as such (``collate_mutation``): nothing random moves its batches."""
    if changed := changed_by_collate(task, items):
        return changed[0].problem
    with torch.random.fork_rng(devices=[]):  # the caller's random stream stays as it was
        again = task.collate(items)
    batch, again = _by_index(batch), _by_index(again)  # a collate may order its rows anew each call
    labels, other = batch.get("labels"), again.get("labels")
    if not (torch.is_tensor(labels) and torch.is_tensor(other)) or labels.shape != other.shape:
        return None
    if not torch.equal(labels.cpu(), other.cpu()):
        return None
    moved = [
        key
        for key, value in batch.items()
        if key not in ("labels", "index")
        and torch.is_tensor(value)
        and torch.is_tensor(again.get(key))
        and (value.shape != again[key].shape or not torch.equal(value.cpu(), again[key].cpu()))
    ]
    if not moved:
        return None
    return (
        f"collate draws random inputs ({', '.join(repr(k) for k in moved[:3])} differ between two collations of "
        "the same validation examples, their labels equal): every validation batch is augmented too, so "
        "validation metrics move between evaluations of the same model. Fix: augment only what trains (in "
        "forward under model.training, or in encode for the training split)"
    )
