"""Soft targets smoothed a second time by the loss (a warning of the objective check).

A batch that carries class distributions as targets (mixup, distillation, labels already smoothed in the
data: a float tensor of the logits' shape whose rows sum to 1) is trained towards them by a cross-entropy
whose lowest value is their entropy: no output does better than predicting them. A loss that smooths
again (``cross_entropy(..., label_smoothing=0.1)`` copied onto targets the data pipeline already
smoothed) trains towards a flatter distribution, and its floor rises above that entropy. Measured, not
derived: ``loss_floor`` minimises ``loss_sum`` over free logits, and the floor per target is compared
with the targets' mean entropy. A temperature (distillation at ``T``: ``softmax(logits / T)`` against
the targets) moves the logits, not the floor, and is not warned about.

Hard labels (class ids) under a loss whose floor is most of a uniform guess (``ln(classes)``): whatever the
model outputs, the loss barely falls, and it trains towards nearly uniform predictions. ``label_smoothing=0.9``
typed for a confidence of 90% does this (the share moved off the label, 0.1 is typical), and every check
passed it: warned (a distillation loss written as a cross-entropy against a hot teacher's soft targets beside
the labels has a high floor too, by design).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pilot.checks.loss_floor import loss_floor
from pilot.checks.result import Finding
from pilot.data.task import Batch, TaskData, logits_of

ABOVE = 0.05  # nats per target, at least, of floor above the targets' entropy (and 10% of it)


def _soft_key(batch: Batch, logits: torch.Tensor) -> str | None:
    """The batch key holding class distributions of the logits' shape (not all one-hot), if any."""
    for key, value in batch.items():
        if not (torch.is_tensor(value) and value.is_floating_point() and value.shape == logits.shape):
            continue
        if value.dim() < 2 or value.shape[-1] < 2 or bool((value < 0).any()):
            continue
        rows = value.detach().double()
        if torch.allclose(rows.sum(-1), torch.ones_like(rows.sum(-1)), atol=1e-3) and bool(
            (rows.max(-1).values < 0.999).any()
        ):
            return key
    return None


MOSTLY_A_GUESS = 0.75  # a floor at least this share of ln(classes): the loss can barely fall


def flat_floor_findings(task: TaskData, outputs: list[tuple[Any, Batch]]) -> list[Finding]:
    """Class-id labels whose loss cannot go far below a uniform guess, whatever the output."""
    for output, batch in outputs[:1]:
        labels = batch.get("labels")
        try:
            logits = logits_of(output)
        except Exception:  # noqa: BLE001 - an output without logits: not judged
            return []
        if not (torch.is_tensor(labels) and torch.is_tensor(logits) and logits.is_floating_point()):
            return []
        classes = int(logits.shape[-1]) if logits.dim() >= 2 else 0
        if labels.is_floating_point() or classes < 2 or tuple(labels.shape) != tuple(logits.shape[:-1]):
            return []
        guess = math.log(classes)
        floor = loss_floor(task, [(output, batch)])
        if floor is None or floor < MOSTLY_A_GUESS * guess:
            return []
        return [
            Finding(
                f"loss_sum cannot go below {floor:.3g} per target on this batch, {floor / guess:.0%} of a uniform "
                f"guess over the {classes} classes (ln {classes} = {guess:.3g}), whatever the model outputs: the loss "
                "can barely fall and trains towards nearly uniform predictions. label_smoothing is the share of "
                "probability moved off the label (0.1 typical): 0.9 typed for a 90% confidence does this. Fix: "
                "label_smoothing=0.1 or less (or a loss whose best output predicts the label)"
            )
        ]
    return []


def soft_target_findings(task: TaskData, outputs: list[tuple[Any, Batch]]) -> tuple[list[Finding], dict[str, Any]]:
    for output, batch in outputs[:1]:
        try:
            logits = logits_of(output)
        except Exception:  # noqa: BLE001 - an output without logits holds no class distribution
            return [], {}
        key = _soft_key(batch, logits) if torch.is_tensor(logits) else None
        if key is None:
            return [], {}
        targets = batch[key].detach().double().clamp_min(1e-12)
        entropy = float(-(targets * targets.log()).sum(-1).mean())
        floor = loss_floor(task, [(output, batch)])
        details = {"soft_targets": key, "targets_entropy": entropy, "loss_floor": floor}
        if floor is None or floor <= entropy + max(ABOVE, 0.1 * entropy):
            return [], details
        return [
            Finding(
                f"loss_sum cannot go below {floor:.3g} per target on this batch, above the entropy of the soft "
                f"targets it holds in batch['{key}'] ({entropy:.3g}): a cross-entropy against them would reach "
                "that entropy by predicting them, so the loss trains towards a flatter distribution than the "
                "targets: smoothing applied twice (in the data and again by label_smoothing), or a term added to "
                "the loss. Fix: smooth once (label_smoothing=0 on targets already smoothed)"
            )
        ], details
    return [], {}
