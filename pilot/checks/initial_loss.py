"""The objective's third rule: a fresh model's loss per target against ln of the output's width (of
each head's, added), and what a start elsewhere says — a loss divided by a batch setting, weights by class,
a loss other than cross-entropy (its own value at even logits), or every example's output leaning towards a
rare class (``even_logits.constant_lean``). See ``pilot.checks.objective``."""

from __future__ import annotations

import math
from typing import Any

from pilot.checks.class_weights import class_weights_said, majority_weighs_most
from pilot.checks.even_logits import constant_lean, even_loss_per_target
from pilot.checks.label_kinds import binary_targets
from pilot.checks.loss_probe import trained_head_widths
from pilot.checks.result import Finding
from pilot.data.task import TaskData


def initial_loss_findings(
    task: TaskData,
    outputs: list[tuple[Any, dict[str, Any]]],
    per_target: float,
    width: int,
    per_class: dict[int, list[float]],
    details: dict[str, Any],
) -> list[Finding]:
    """The fresh model's loss per target against ln of the output's width (of each head's, added)."""
    output, batch = outputs[-1]
    heads = trained_head_widths(task, output, batch)  # several heads' terms per target: ln of each, added
    widths = heads if len(heads) > 1 else [2] if binary_targets(task, outputs) else [width]
    counted = [(b.get("count"), b.get("examples")) for b in details.get("batches", [])]
    each_head = len(heads) > 1 and bool(counted) and all(c == len(heads) * e for c, e in counted)
    weighted = class_weights_said(per_class, sum(math.log(w) for w in widths) / (len(widths) if each_head else 1), task)
    warnings = initial_loss_warnings(task, per_target, widths, details, cause=weighted, each_head=each_head)
    if not warnings and majority_weighs_most(weighted, per_class):  # wrong on its own, whatever the start
        return [Finding(weighted)]
    if not warnings or weighted:
        return warnings
    even, expected = even_loss_per_target(task, outputs), details["expected_initial_loss"]
    if even is None:
        return warnings
    details["even_logits_loss_per_target"] = even
    if abs(even - expected) <= details["tolerance"] * expected:
        # the loss is a plain per-target one: a high start comes from the fresh model's logits (a learned
        # temperature started high, as CLIP's 1/0.07): no warning, the numbers in ``details``
        if len(widths) == 1 and per_target > expected:
            lean = constant_lean(task, outputs, per_target)
            named = details["expected_from"]
            start = f"initial loss per target {per_target:.4g}, {per_target / expected:.3g} x {named} = {expected:.4g}"
            return [Finding(f"{start} (the loss at even logits) on a fresh model: {lean}")] if lean else []
        return warnings
    said = (
        f"; with every logit 0 the loss itself is {even:.4g} per target, not {details['expected_from']}: a loss "
        "other than cross-entropy (focal, a margin, a weighted variant, a teacher's soft targets beside the labels) starts elsewhere, and then "
        "initial_loss_tolerance=None in the task skips this comparison"
    )
    return [Finding(warnings[0].problem + said)]


def negative_loss(per_target: float, soft: bool = False) -> str:
    """Class-id labels: the loss is -log of a probability, never below 0; soft labels (class distributions):
    a cross-entropy or KL divergence against them, never below 0 either."""
    if soft:
        return (
            f"the loss per target is negative ({per_target:.4g}) on a fresh model: against soft labels (rows of "
            "class probabilities) a cross-entropy or KL divergence is never below 0. kl_div given probabilities "
            "(softmax) where it takes log-probabilities? Fix: F.kl_div(F.log_softmax(logits, -1), target, "
            "reduction='sum'), or cross_entropy(logits, target) with the probabilities as target"
        )
    return (
        f"the loss per target is negative ({per_target:.4g}) on a fresh model: a loss over class ids is -log of a "
        "probability, never below 0. nll_loss given raw logits instead of log-probabilities? Fix: cross_entropy on "
        "the logits, or nll_loss on log_softmax(logits)"
    )


def initial_loss_warnings(
    task: TaskData,
    per_target: float,
    widths: list[int],
    details: dict[str, Any],
    cause: str = "",
    each_head: bool = False,
) -> list[Finding]:
    """The fresh model's loss per target against ln(width) — added over the heads when the loss trains
    several (two classifiers' cross-entropies summed), their mean where ``target_count`` counts each
    head's term as a target (``each_head``) — within the task's declared tolerance; the numbers go
    into ``details``."""
    expected = sum(math.log(width) for width in widths) / (len(widths) if each_head else 1)
    named = " + ".join(f"ln({width})" for width in widths)
    named = f"({named}) / {len(widths)} (each head's term a target)" if each_head else named
    tolerance = float(task.initial_loss_tolerance)
    details.update(
        initial_loss_per_target=per_target, expected_initial_loss=expected, tolerance=tolerance, expected_from=named
    )
    if abs(per_target - expected) > tolerance * expected:
        return [
            Finding(
                f"initial loss per target {per_target:.4g}, expected near {named} = "
                f"{expected:.4g} for a fresh model (declared tolerance "
                f"+-{tolerance:.0%}): {per_target / expected:.3g} x that"
                + (
                    f"; {cause}"
                    if cause
                    else " (a loss divided by the batch? a model that is not fresh?)"
                    if per_target < expected
                    else " (a loss that adds several terms per target, e.g. two heads? an initialisation far "
                    "from even outputs, e.g. large logits? a model that is not fresh?)"
                )
            )
        ]
    return []
