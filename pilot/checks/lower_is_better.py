"""Part of ``alignment``: a head whose lowest score is its pick (a distance, an energy).

A metric-learning head returns distances and its loss is cross-entropy on their negation: the loss
pushes the declared target's score *down*, and ``predict`` takes the lowest (argmin). Read as logits,
every position looked trained away from its label ("0 of 8 positions"), a ``fail`` for a correct
model. When the class the loss pushes down most is the declared target at nearly every position, the
head is judged by what it must then be: ``predict`` picks the lowest score. A loss whose sign is
flipped by mistake pushes the target down too; with an argmax ``predict`` it still fails, named.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import CheckResult
from pilot.data.task import TaskData, logits_of

STEP = "alignment"
REQUIRED_SHARE = 0.99


def lower_is_better_verdict(
    task: TaskData, model: torch.nn.Module, batches: list[dict[str, Any]], found: dict[str, Any], details: dict
) -> CheckResult | None:
    """pass when the loss pushes each row's declared target down and ``predict`` picks the lowest score;
    fail, said as such, when it picks another; None when the target is not the class pushed down."""
    pulled, reference = found.get("pulled"), found["reference"]
    if pulled is None or not len(pulled) or int((pulled == reference).sum()) < REQUIRED_SHARE * len(reference):
        return None
    lowest = agreeing = 0
    for batch in batches:
        with torch.no_grad():
            output = task.forward(model, batch)
            try:
                picked = task.predict(output, batch)
            except Exception:  # noqa: BLE001 - a predict that cannot run here: the contract check says it
                return None
        scores = logits_of(output)
        if not torch.is_tensor(picked) or not torch.is_tensor(scores) or picked.shape != scores.shape[:-1]:
            return None
        lowest += int(picked.numel())
        agreeing += int((picked == scores.argmin(dim=-1)).sum())
    details.update(lower_is_better=True, predict_picks_lowest=agreeing, rows=lowest)
    trained = len(reference)
    if agreeing >= REQUIRED_SHARE * lowest:
        return CheckResult(
            STEP,
            "pass",
            f"the loss pushes the declared target's score down at {trained} of {trained} rows and predict picks the "
            f"lowest score at {agreeing} of {lowest}: a head whose lowest score is its pick (a distance, an energy)",
            [],
            details,
        )
    return CheckResult(
        STEP,
        "fail",
        f"the loss pushes the declared target's score down at {trained} of {trained} rows (lower is better: a "
        f"distance, or a loss whose sign is flipped), but predict picks the lowest score at only {agreeing} of "
        f"{lowest}: it reads the opposite of what the loss trains. Fix: predict takes the argmin of a distance, "
        "or the loss is cross_entropy on logits (not on their negation, not negated)",
        [],
        details,
    )
