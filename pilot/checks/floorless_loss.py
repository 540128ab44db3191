"""Part of ``objective``: a loss over discrete targets that falls without end.

Cross-entropy, binary cross-entropy, a KL divergence, a margin: over class ids or two-valued targets each is
bounded below, and training drives the logits towards that bound. Given targets it does not take
(``binary_cross_entropy_with_logits`` fed -1/+1 labels, SVM-style data: the -1 rows' loss is
``log sigmoid(x) - 2 log(1 - sigmoid(x))``, which runs to minus infinity as the logit falls) the loss has no
floor: every update pushes the logits further, and a ``predict`` that thresholds them still gets the sign
right, so nothing else notices. Measured on the fresh model's logits: moved along the loss's own descent
direction by 10, 100 and 1000, a bounded loss settles near its floor; one without a floor keeps falling,
about ten times as far for each step ten times as long.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_floor import with_logits
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of

PUSHES = (10.0, 100.0, 1000.0)
KEEPS_FALLING = 3.0  # the fall from 100 to 1000 at least this many times the fall from 10 to 100


def discrete_targets(labels: Any) -> bool:
    """Class ids, or float labels of at most two values (a binary task's, whatever the two are)."""
    if not torch.is_tensor(labels) or labels.numel() == 0:
        return False
    if not labels.is_floating_point():
        return True
    return labels.dim() >= 1 and len(torch.unique(labels)) <= 2


def floorless_finding(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]]) -> Finding | None:
    """A finding when ``loss_sum`` of discrete targets keeps falling as the logits move along its descent."""
    for output, batch in outputs:
        labels = batch.get("labels")
        logits = logits_of(output)
        if not discrete_targets(labels) or not torch.is_tensor(logits) or not logits.is_floating_point():
            continue
        losses = _along_descent(task, output, batch, logits.detach().float())
        if losses is None:
            return None
        start, *pushed = losses
        fall_near, fall_far = pushed[0] - pushed[1], pushed[1] - pushed[2]
        count = float(task.target_count(batch))
        if count <= 0 or not (fall_near > 0 and fall_far > KEEPS_FALLING * fall_near and pushed[2] < 0):
            continue  # this batch's targets may all be ones the loss takes (every label +1)
        values = sorted({round(float(v), 4) for v in torch.unique(labels)[:5]})
        per = [round(v / count, 3) for v in (start, *pushed)]
        return Finding(
            f"loss_sum has no floor: moving the fresh model's logits along the loss's own descent by "
            f"{', '.join(f'{p:g}' for p in PUSHES)} takes the loss per target from {per[0]:g} to "
            f"{', '.join(f'{v:g}' for v in per[1:])}, falling without end, so training pushes the logits for ever "
            f"instead of towards the labels (labels take {values}). A loss over such targets (cross-entropy, "
            "binary cross-entropy, a margin) is bounded below: binary_cross_entropy_with_logits given -1/+1 "
            "targets (it takes 0/1), arguments swapped, or a sign flipped. Fix: targets of the values the loss "
            "takes ((labels + 1) / 2 for -1/+1), loss(output, labels) in the documented order"
        )
    return None


def _along_descent(task: TaskData, output: Any, batch: dict[str, Any], logits: torch.Tensor) -> list[float] | None:
    """The loss at the logits, then at the logits moved by each of ``PUSHES`` along -sign(gradient)."""
    try:
        free = logits.clone().requires_grad_(True)
        with torch.enable_grad():
            loss = task.loss_sum(with_logits(output, free), batch)
            if not torch.is_tensor(loss) or not loss.requires_grad:
                return None
            (grad,) = torch.autograd.grad(loss.float(), free)
        step = -torch.sign(grad)
        if not bool(step.any()):
            return None
        with torch.no_grad():
            losses = [float(loss.detach())]
            losses += [float(task.loss_sum(with_logits(output, logits + push * step), batch)) for push in PUSHES]
    except Exception:  # noqa: BLE001 - an output that cannot take other logits: not judged
        return None
    return losses if all(torch.isfinite(torch.tensor(losses))) else None
