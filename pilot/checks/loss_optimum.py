"""Part of ``alignment``: where the loss itself puts each example's class first, found by minimising
``loss_sum`` over the output's scores alone (the model left out). The gradient at a fresh model's even
outputs says which class a loss pushes up first; a loss that weighs the classes inside a smoothed target
(``cross_entropy(weight=..., label_smoothing=0.1)``: the smoothing term weighed by class too) pushes a rare
class's score up first from there, while its minimum still ranks the label first. Judged only where the
gradient's rule would fail: a loss whose minimum ranks the label first is not trained towards another class."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_floor import with_logits
from pilot.data.task import TaskData, logits_of

STEPS = 300  # Adam steps on the scores alone: a cross-entropy's minimum is found to the class in far fewer
LEARNING_RATE = 0.1


def loss_minimum_classes(task: TaskData, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor | None:
    """Per row, the class the loss's minimum over the scores ranks first ([rows]); None where the output has
    no scores of one row each or the loss cannot be minimised over them."""
    with torch.no_grad():
        output = task.forward(model, batch)
    scores = logits_of(output)
    labels = batch.get("labels")
    if not (torch.is_tensor(scores) and torch.is_tensor(labels)) or scores.dim() != 2 or labels.dim() != 1:
        return None
    free = scores.detach().float().clone().requires_grad_(True)
    optimiser = torch.optim.Adam([free], lr=LEARNING_RATE)
    try:
        with torch.enable_grad():
            for _ in range(STEPS):
                optimiser.zero_grad()
                loss = task.loss_sum(with_logits(output, free), batch)
                if not (torch.is_tensor(loss) and loss.requires_grad):
                    return None
                loss.float().backward()
                optimiser.step()
    except Exception:  # noqa: BLE001 - a loss that cannot take other scores: the gradient's verdict stands
        return None
    return free.detach().argmax(-1)


def minimum_ranks_the_labels(
    task: TaskData, model: torch.nn.Module, batches: list[dict[str, Any]], required: float
) -> tuple[int, int] | None:
    """(labels the loss's minimum ranks first, labels compared) when at least ``required`` of them are;
    None otherwise or where it cannot be told."""
    right = compared = 0
    for batch in batches:
        classes = loss_minimum_classes(task, model, batch)
        if classes is None:
            return None
        labels = batch["labels"].to(classes.device)
        kept = labels >= 0
        right += int((classes[kept] == labels[kept]).sum())
        compared += int(kept.sum())
    return (right, compared) if compared and right >= required * compared else None
