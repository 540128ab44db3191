"""Where ``predict`` and ``loss_sum`` draw the line between the two classes of a one-score binary task
(``decision_boundary_findings``): a sigmoid's logit trained with BCE favours class 1 above 0, yet a
``predict`` written ``logits > 0.5`` (the probability's threshold applied to the logit) calls class 1 only
above 0.5 — p > 0.62 — and every metric counts the rows between as wrong. Measured, not assumed: the
output is set to one value t at a time for every row; ``loss_sum`` with every label 1 against every
label 0 says which class the loss favours at t, ``predict`` says which it calls; the two crossings must
agree. An output that is a probability (MSE on [0, 1]) crosses at 0.5 both ways and passes. Only a loss
that crosses where an unweighted one does (0, or 0.5) is judged: a weighted loss (BCE's ``pos_weight``)
moves its own crossing on purpose, and predict's 0 is then the usual call.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.label_kinds import as_number
from pilot.checks.loss_floor import with_logits
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of

GRID = torch.linspace(-3.0, 3.0, 121)  # output values tried: 0.05 apart
APART = 0.2  # the two crossings further apart than this (in output units): they disagree
NATURAL = (0.0, 0.5)  # where an unweighted loss favours neither class: a logit's 0, a probability's 0.5


def decision_boundary_findings(task: TaskData, output: Any, batch: dict[str, Any]) -> list[Finding]:
    labels, scores = batch.get("labels"), logits_of(output)
    if not (torch.is_tensor(labels) and torch.is_tensor(scores) and task.predict is not None):
        return []
    if scores.numel() != labels.numel() or labels.numel() == 0 or not bool(((labels == 0) | (labels == 1)).all()):
        return []  # not one score per binary label
    try:
        loss_says, predict_says = _crossing(task, output, batch, scores, labels)
    except Exception:  # noqa: BLE001 - a loss or predict that cannot take such outputs: not judged
        return []
    if loss_says is None or predict_says is None or abs(loss_says - predict_says) <= APART:
        return []
    if min(abs(loss_says - natural) for natural in NATURAL) > APART / 2:
        return []  # a weighted loss (BCE's pos_weight) moves its own crossing: predict at 0 is then still right
    if abs(loss_says) <= APART / 2 and bool(((scores >= 0) & (scores <= 1)).all()) and scores.numel() > 1:
        return [_probabilities_as_logits(scores, loss_says, predict_says)]  # predict is right for these outputs
    return [
        Finding(
            f"predict and loss_sum split the two classes at different outputs: loss_sum favours class 1 above "
            f"{loss_says:.3g}, predict calls class 1 only above {predict_says:.3g}, so every row scored between is "
            "trained one way and counted the other (a probability's threshold, 0.5, applied to a logit?). Fix: "
            f"threshold the output where the loss does (logits > {loss_says:.3g}, or sigmoid(logits) > 0.5)"
        )
    ]


def _probabilities_as_logits(scores: torch.Tensor, loss_says: float, predict_says: float) -> Finding:
    """The fresh model's every output lies in [0, 1] (a sigmoid in forward) while the loss splits the classes
    at 0, as it does for logits: the sigmoid is applied twice, not predict's threshold wrong."""
    low, high = float(scores.min()), float(scores.max())
    return Finding(
        f"every output of the fresh model lies in [0, 1] ({low:.3g} to {high:.3g}: probabilities, a sigmoid in "
        f"forward?) while loss_sum splits the two classes at {loss_says:.3g}, as it does for logits (predict calls "
        f"class 1 above {predict_says:.3g}): a loss that applies the sigmoid itself (binary_cross_entropy_with_logits,"
        " BCEWithLogitsLoss) applies it a second time, and no output can go below 0 to favour class 0. Fix: return "
        "the logits from forward (drop its sigmoid) and threshold them at 0, or keep the sigmoid and use "
        "binary_cross_entropy"
    )


@torch.no_grad()
def _crossing(task: TaskData, output: Any, batch: dict[str, Any], scores: torch.Tensor, labels: torch.Tensor):
    """(the output value above which the loss favours class 1, the one above which predict calls it)."""
    ones, zeros = {**batch, "labels": torch.ones_like(labels)}, {**batch, "labels": torch.zeros_like(labels)}
    loss_side, predict_side = [], []
    for t in GRID:
        filled = with_logits(output, torch.full_like(scores, float(t)))
        loss_side.append(as_number(task.loss_sum(filled, ones)) < as_number(task.loss_sum(filled, zeros)))
        called = task.predict(filled, batch)
        if not torch.is_tensor(called) or called.numel() != labels.numel():
            return None, None
        predict_side.append(bool((called.reshape(-1).float() > 0.5).all()))
    return _first_true(loss_side), _first_true(predict_side)


def _first_true(sides: list[bool]) -> float | None:
    """The last grid value before ``sides`` turns true for good (true above it), or None without a crossing."""
    if not sides[-1] or sides[0]:
        return None
    last_false = max(i for i, side in enumerate(sides) if not side)
    return round(float(GRID[last_false]), 3) + 0.0 if last_false + 1 < len(GRID) else None  # -0.0 said as 0
