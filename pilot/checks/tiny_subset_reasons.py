"""The tiny-subset check's reasons, in words: why a subset was not learnt, or learnt by a loss that is wrong."""

from __future__ import annotations

import torch

from pilot.checks.subset_scorer import SubsetScorer
from pilot.data.task import IGNORE_INDEX, TaskData


def zero_floored(task: TaskData, scorer: SubsetScorer) -> bool:
    """Labels whose loss is >= 0 for any output: 0/1 targets (BCE, two-class cross-entropy), or class ids of a
    task that names its classes (cross-entropy). Counts (a Poisson loss, which can be negative) are neither, nor
    is a regression's target that happens to be 0 or 1 (a Gaussian likelihood of it can be negative)."""
    labels = [batch.get("labels") for batch in scorer.batches]
    if scorer.regression or not labels or not all(torch.is_tensor(t) and t.numel() for t in labels):
        return False
    if all(bool(((t == 0) | (t == 1) | (t == IGNORE_INDEX)).all()) for t in labels):
        return True
    named = bool(task.class_names) or bool(task.info.get("num_classes"))
    return named and not any(t.is_floating_point() for t in labels)


def below_zero(numbers: str) -> str:
    """The loss of class ids or 0/1 targets went below 0 during training, the subset not recovered: no floor."""
    return (
        f"cannot learn the subset: {numbers}. The loss went below 0: over class ids or 0/1 targets, cross-entropy "
        "and BCE are >= 0 for every output, so a loss_sum that falls below 0 has no floor and training drives it "
        "down for ever instead of towards the labels: its arguments are swapped "
        "(binary_cross_entropy_with_logits(labels, logits): the target is the second argument), nll_loss is given "
        "raw logits, or a sign is flipped. Fix: loss(output, labels), in the order the loss documents."
    )


def random_targets(drop: float) -> str:
    """Why a random collate's subset not learnt in time is a warning: its targets move at every update."""
    return (
        f" The collate is random (two calls on the same examples differ: masking or augmentation drawn per call), "
        f"so the subset's inputs and targets change at every update and it is learnt slower than a fixed one; its "
        f"loss fell {drop:.3g}x, so the loop learns: a warning, not a failure. Fix: raise pilot.tiny.max_updates "
        "or the learning rate to see it learnt, or fix the collate's random draws for the check"
    )


def cannot_fall(numbers: str, own_floor: float, initial_loss: float, stuck: float) -> str:
    """The lowest loss any logits give is where the loss starts: the targets barely reach it."""
    return (
        f"cannot learn the subset: {numbers}. The loss cannot fall: the lowest value loss_sum reaches on "
        f"this subset over free logits is {own_floor:.3g}, within {stuck:.0%} of where it starts "
        f"({initial_loss:.3g}), so whatever the model outputs the targets barely move it: they do not reach "
        "the loss as the logits are shaped (e.g. a target broadcast against logits of another shape, a [B, 2] "
        "one-hot against a [B, 1] logit), or loss_sum does not read them. Fix: give loss_sum targets of the "
        "logits' shape."
    )


def slow_drop(numbers: str, max_updates: int, key: str = "pilot.tiny.max_updates") -> str:
    """Every example recovered, the loss not down as far as declared: what that means and what to change
    (``key``: the setting the last attempt's schedule ran over)."""
    return (
        f"recovers the subset, but its loss fell less than declared: {numbers}. The loop learns; slower than "
        f"declared (the learning rate, its schedule over {key}={max_updates}), or loss_sum has "
        f"a term the logits do not set (a regulariser; label smoothing's floor is already measured). Fix: raise "
        f"{key} or the learning rate, or lower pilot.tiny.loss_drop to what this loss can reach."
    )
