"""Part of ``objective``: does ``predict`` read something the loss never trains?

A loss that depends only on differences between a row's logits (softmax cross-entropy: adding one
constant to every logit of a row changes nothing) leaves the row's level where the initialisation put
it: its gradient summed over the row is 0 at every update. A ``predict`` that reads the level
(``logits > 0`` per tag, a threshold on one logit) then decides by the fresh model's initialisation,
whatever the training does: multi-hot tags trained with ``cross_entropy`` and predicted by a threshold,
the classic case. On each probed batch of a fresh model: the loss with every row's logits shifted by
one constant must equal the loss (within float32's rounding) for the probe to apply, and ``predict``
on the shifted logits must then give the same predictions (``correct_count`` where the task gives one:
accuracy reads it, not ``predict``; a ranking task whose predict returns the scores themselves was failed)."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_floor import with_logits
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of

RTOL = 1e-4  # a shift-invariant loss moves by float32 rounding only (logsumexp is computed stably)


def loss_reads_logits(task: TaskData, output: Any, batch: dict[str, Any]) -> bool:
    """Does ``loss_sum`` read the output's logits? Not when it returns the model's own loss, computed
    inside its forward (transformers' ``out.loss``): logits changed afterwards leave it as it was, and a
    probe that changes them says nothing about the loss. Judged by a change that moves any loss that
    reads them: a ramp over the last dimension. True where it cannot be judged."""
    logits = logits_of(output)
    if not torch.is_tensor(logits) or not logits.is_floating_point() or logits.dim() < 1 or logits.shape[-1] < 2:
        return True
    ramp = torch.linspace(0.0, 1.0 + float(logits.detach().abs().max()), logits.shape[-1], dtype=logits.dtype)
    try:
        with torch.no_grad():
            loss, moved = (
                float(task.loss_sum(o, batch).detach()) for o in (output, with_logits(output, logits + ramp))
            )
    except Exception:  # noqa: BLE001 - an output that cannot take other logits: as if it read them
        return True
    return abs(moved - loss) > RTOL * max(abs(loss), 1e-12)


def prediction_outside_the_loss(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]]) -> Finding | None:
    """A finding when the loss ignores a shift of each row's logits that changes ``predict``."""
    for output, batch in outputs:
        logits = logits_of(output)
        if not torch.is_tensor(logits) or not logits.is_floating_point() or logits.dim() < 2 or logits.shape[-1] < 2:
            continue
        if not loss_reads_logits(task, output, batch):
            return None  # the model's own loss: logits changed afterwards cannot move it, not judged
        # in half precision the sum's rounding makes and breaks ties that argmax reads (fp16: 60 of 20,000 rows
        # changed their argmax, fp32 none): both outputs probed in float32, where shifting keeps every order
        if logits.dtype in (torch.float16, torch.bfloat16):
            logits = logits.detach().float()
            output = with_logits(output, logits)
        shift = 1.0 + float(logits.detach().abs().max())  # past every logit: a threshold anywhere is crossed
        shifted = with_logits(output, logits + shift)
        try:
            with torch.no_grad():
                loss, moved = (float(task.loss_sum(o, batch).detach()) for o in (output, shifted))
                counted = getattr(task, "correct_count", None)  # what accuracy reads, where the task gives it
                scored = task.predict if counted is None else counted
                before, after = (torch.as_tensor(scored(o, batch)) for o in (output, shifted))
        except Exception:  # noqa: BLE001 - an output or predict that cannot take other logits: not judged
            return None
        if abs(moved - loss) > RTOL * max(abs(loss), 1e-12):
            return None  # the loss trains the level: nothing to say
        if torch.is_tensor(before) and torch.is_tensor(after) and before.shape == after.shape:
            if changed := _changed(before, after):
                return Finding(
                    f"predict reads what the loss never trains: adding {shift:.3g} to every logit of each row "
                    f"leaves loss_sum as it was ({loss:.6g}) but changes {changed} of {before.numel()} "
                    "predictions. The loss depends only on differences between a row's logits (softmax "
                    "cross-entropy), so their level stays where the initialisation put it, and a predict that "
                    "thresholds it (logits > 0) decides by the initialisation. Fix: a loss that trains each "
                    "output on its own (binary_cross_entropy_with_logits for independent tags), or a predict "
                    "that compares the logits with each other (argmax)"
                )
    return None


def _changed(before: torch.Tensor, after: torch.Tensor) -> int:
    """Predictions that differ: exactly for classes, beyond float rounding for a distribution (a softmax of
    logits shifted by 2.5 differs from the first by 6e-8: 12 of 16 soft-label predictions were said changed)."""
    if not before.is_floating_point():
        return int((before != after).sum())
    before, after = before.double(), after.double()
    scale = float(before.abs().max()) if before.numel() else 0.0
    return int(((before - after).abs() > 1e-4 * max(scale, 1e-12)).sum())
