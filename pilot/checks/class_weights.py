"""Part of ``objective``: a loss that weights the classes, told from a fresh model's losses at even logits
(every logit 0), where class weights give every example of a class the same loss and the classes different
ones; said with each class's weight, and suspect where the most frequent class weighs most (balancing
weights indexed in another order than the class ids, or written counts / total)."""

from __future__ import annotations

from typing import Any

import torch

from pilot.data.task import TaskData


def losses_by_class(batch: dict[str, Any], numbers: dict[str, Any] | None, per_class: dict[int, list[float]]) -> None:
    """Each single example's loss per target, under its class id (one class id per example only)."""
    labels = batch.get("labels")
    if numbers is None or not torch.is_tensor(labels) or labels.dim() != 1 or labels.is_floating_point():
        return
    if numbers["single_losses"] is None:  # rows that are not one per example
        return
    for label, loss, count in zip(labels.tolist(), numbers["single_losses"], numbers["single_counts"]):
        if count > 0:
            per_class.setdefault(int(label), []).append(loss / count)


def majority_weighs_most(said: str, per_class: dict[int, list[float]]) -> bool:
    """The class weights give the most frequent class the most weight, with classes of unequal frequency
    (the most frequent at least 1.5x the rarest): balancing weights inverted, whatever the initial loss."""
    counts = [len(v) for v in per_class.values()]
    return "the most frequent class weighs most" in said and max(counts) >= 1.5 * min(counts)


SAME_WITHIN_CLASS = 0.02  # relative spread of one class's losses at even logits that float rounding allows


def class_weights_said(per_class: dict[int, list[float]], expected: float, task: TaskData) -> str:
    """With every logit 0 (``per_class``: each example's loss then, by class) a loss weighted by class gives
    every example of a class the same loss, and the classes different ones. One that differs within a class
    adds a term of each example's own (a teacher's soft targets scaled by T², example weights): not class
    weights. Said with each class's weight (its loss over the expected) and share of the probed examples;
    where the most frequent class weighs most, the weights' order is suspect (inverse-frequency weights
    indexed in another order than the class ids)."""
    if len(per_class) < 2 or expected <= 0:
        return ""
    weight = {c: sum(v) / len(v) / expected for c, v in sorted(per_class.items())}
    even = all(max(v) - min(v) <= SAME_WITHIN_CLASS * sum(v) / len(v) for v in per_class.values())
    if not even or max(weight.values()) < 2 * min(weight.values()):
        return ""
    names = task.names()
    total = sum(len(v) for v in per_class.values())

    def name(c: int) -> str:
        return f"{c} ({names[c]})" if 0 <= c < len(names) else str(c)

    listed = ", ".join(f"class {name(c)} x{w:.2g} ({len(per_class[c]) / total:.0%})" for c, w in weight.items())
    common = max(per_class, key=lambda c: len(per_class[c]))
    suspect = (
        ": the most frequent class weighs most, where inverse-frequency weights give it the least. Class "
        "weights computed in another order than the class ids (sorted names, first-seen order), or as "
        "counts / total instead of total / counts? Fix: weigh each class by total / (classes x its count), "
        "indexed by class id"
        if weight[common] == max(weight.values())
        else ""
    )
    return f"loss_sum weights the classes (each class's loss over the expected, share of probed examples: {listed}){suspect}"
