"""The task's loss at even outputs (every logit 0): what a plain per-target loss gives there (ln of the
classes, ln(2) per multi-hot target), measured exactly whatever the fresh model's logits; and a loss that
averages over each example's targets while ``target_count`` counts each of them (``averaged_per_example``),
or that is divided by a batch setting by hand (``divided_by_a_setting``)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

from pilot.checks.label_kinds import as_number
from pilot.checks.loss_floor import evened, with_logits
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of


def even_loss_per_target(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]]) -> float | None:
    """The task's loss per target with every logit 0 (even outputs), or None where the logits cannot be
    replaced or nothing is counted."""
    try:
        with torch.no_grad():
            even = sum(as_number(task.loss_sum(evened(o), b)) for o, b in outputs)
            count = sum(as_number(task.target_count(b)) for _, b in outputs)
    except Exception:  # noqa: BLE001 - an output whose logits cannot be replaced
        return None
    return even / count if count else None


def averaged_per_example(
    task: TaskData, outputs: list[tuple[Any, dict[str, Any]]], details: dict[str, Any], per_example: float
) -> list[Finding]:
    """``loss_sum`` a mean over each example's targets (``bce(...).mean(1).sum()``) while ``target_count``
    counts every target: with every logit 0 its loss per target is the expected one divided by the targets
    an example has — measured exactly, whatever the fresh model's logits. Each update is then that many
    times smaller than the engine's normalisation means."""
    references = {details.get("expected_from"): details.get("expected_initial_loss")}
    floats = all(torch.is_tensor(b.get("labels")) and b["labels"].is_floating_point() for _, b in outputs)
    if floats and all(b["labels"].shape == logits_of(o).shape for o, b in outputs):  # multi-hot: ln(2) each
        references["ln(2)"] = math.log(2)
    if per_example < 1.5 or not any(references.values()):
        return []
    even = details.get("even_logits_loss_per_target") or even_loss_per_target(task, outputs)
    matched = [
        (named, value)
        for named, value in references.items()
        if value
        and even is not None
        and abs(even * per_example - value) <= 0.02 * value
        and abs(even - value) >= 0.1 * value
    ]
    if not matched:
        return []
    (named, expected), *_ = matched
    return [
        Finding(
            f"loss_sum averages over each example's targets: with every logit 0 it gives {even:.4g} per target, "
            f"{named} = {expected:.4g} divided by the {per_example:.3g} targets an example has, "
            f"while target_count counts each of them, so every update is {per_example:.3g}x smaller than the loss's "
            "normalisation means. Fix: sum over every target (reduction='sum' without a mean per example), or "
            "count one target per example"
        )
    ]


def divided_by_a_setting(
    task: TaskData, outputs: list[tuple[Any, dict[str, Any]]], details: dict[str, Any], settings: dict[str, int]
) -> list[Finding]:
    """``loss_sum`` divided by a batch setting by hand — the accumulation steps, as a hand-written loop does
    (``loss / accumulation_steps``), the micro-batch or the replicas — while the engine already divides
    each update by its targets: with every logit 0 its loss per target is the expected one (ln of the
    classes) divided by exactly that number, measured whatever the fresh model's logits. Every update,
    and every recorded loss, is then that many times smaller. A task whose loss starts elsewhere by
    design declares ``initial_loss_tolerance=None`` and is not judged."""
    expected = details.get("expected_initial_loss")
    if not expected or task.initial_loss_tolerance is None:
        return []
    even = details.get("even_logits_loss_per_target") or even_loss_per_target(task, outputs)
    if even is None or abs(even - expected) < 0.1 * expected:
        return []
    heads = str(details.get("expected_from", "")).count(" + ") + 1  # several heads' losses averaged: by design
    for key, value in settings.items():
        if value >= 2 and value != heads and abs(even * value - expected) <= 1e-3 * expected:
            return [
                Finding(
                    f"loss_sum is divided by {value}, {key}: with every logit 0 it gives {even:.4g} per target, "
                    f"{details['expected_from']} = {expected:.4g} / {value}, so every update and every recorded loss "
                    f"is {value}x smaller (the engine already divides each update's loss by all its targets, "
                    "accumulation and replicas included). Fix: return the plain sum over targets"
                )
            ]
    return []


def loss_scaled(
    task: TaskData, outputs: list[tuple[Any, dict[str, Any]]], details: dict[str, Any], per_example: float, batch: dict
) -> list[Finding]:
    """A loss averaged over each example's targets, else one divided by a batch setting (``batch``:
    micro_batch, accumulation, replicas) by hand."""
    named = {f"distributed.{k}" if k == "replicas" else f"batch.{k}": int(v) for k, v in batch.items()}
    return averaged_per_example(task, outputs, details, per_example) or divided_by_a_setting(
        task, outputs, details, named
    )


RARE = 0.4  # a tag whose positives are under this share of the examples: rare positives
MIN_TAGS_JUDGED = 1


def inverted_positive_weights(
    task: TaskData, outputs: list[tuple[Any, dict[str, Any]]], positive_share: Callable[[], torch.Tensor | None]
) -> list[Finding]:
    """Multi-hot tags (0/1 float labels of the logits' shape [rows, tags]) whose loss weighs each rare tag's
    positives *less* than its negatives: a ``pos_weight`` written pos/neg instead of neg/pos, which pushes the
    rare tags to "no". Each tag's weight measured at even logits: ``loss_sum`` with that tag's column set to 1
    against every label 0 (BCE at logit 0 is ln 2 x the weight of the label's side). ``positive_share()``:
    each tag's share of positives in the training split (read only for such labels)."""
    output, batch = outputs[0]
    labels, logits = batch.get("labels"), logits_of(output)
    if not (torch.is_tensor(labels) and labels.is_floating_point() and labels.dim() == 2):
        return []
    if labels.shape != logits.shape or not bool(((labels == 0) | (labels == 1)).all()) or labels.shape[1] > 64:
        return []
    if (share := positive_share()) is None:
        return []
    try:
        with torch.no_grad():
            even = with_logits(output, torch.zeros_like(logits))
            negatives = as_number(task.loss_sum(even, {**batch, "labels": torch.zeros_like(labels)}))
            per_label = negatives / labels.numel()
            weights = []
            for tag in range(labels.shape[1]):
                one = torch.zeros_like(labels)
                one[:, tag] = 1
                column = as_number(task.loss_sum(even, {**batch, "labels": one}))
                weights.append((column - negatives) / (labels.shape[0] * per_label) + 1 if per_label > 0 else 1.0)
    except Exception:  # noqa: BLE001 - a loss that cannot take such labels: not judged
        return []
    rare = [t for t in range(len(weights)) if float(share[t]) < RARE]
    inverted = [t for t in rare if weights[t] < 0.9]
    if len(rare) < MIN_TAGS_JUDGED or len(inverted) < max(1, len(rare) * 0.5):
        return []
    shown = ", ".join(f"tag {t}: {float(share[t]):.0%} positives, weight {weights[t]:.2g}" for t in inverted[:4])
    return [
        Finding(
            f"the loss weighs rare tags' positives less than their negatives ({shown}): a pos_weight of pos/neg "
            "instead of neg/pos pushes the rare tags towards 'no'. Fix: pos_weight = negatives / positives per tag"
        )
    ]


LEANING = 0.7  # of the fresh loss: what the batch's mean logits alone must give for the start to be a constant lean
RARE = 0.5  # of an even share (1 / classes): a class this rare among the labels read is not where outputs should lean


def constant_lean(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]], per_target: float) -> str:
    """A fresh model far above even logits because every example's output leans the same way: the loss of
    the batch's mean logits alone (each class's mean over the examples) gives most of the fresh loss. A
    learned temperature started high (CLIP) over a fresh model's features, alike for every input, leans too,
    but towards any class: only a lean towards a class rare among the labels read (under ``RARE`` of an even
    share) is said, where labels are class ids. The words, or ""."""
    labels = [b.get("labels") for _, b in outputs]
    if not all(torch.is_tensor(y) and y.dim() == 1 and not y.is_floating_point() for y in labels):
        return ""  # the share of the favoured class is read from class ids
    try:
        with torch.no_grad():
            means = [logits_of(o).float().reshape(-1, logits_of(o).shape[-1]).mean(0) for o, _ in outputs]
            lean = sum(
                as_number(task.loss_sum(with_logits(o, mean.expand_as(logits_of(o)).to(logits_of(o))), b))
                for (o, b), mean in zip(outputs, means)
            )
            count = sum(as_number(task.target_count(b)) for _, b in outputs)
    except Exception:  # noqa: BLE001 - an output whose logits cannot be replaced
        return ""
    if not count or lean / count < LEANING * per_target:
        return ""
    mean = torch.stack(means).mean(0)
    favoured = int(mean.argmax()) if mean.numel() > 1 else int(mean.item() > 0)
    ids, classes = torch.cat(labels), max(int(mean.numel()), 2)
    if float((ids == favoured).float().mean()) > RARE / classes:
        return ""  # leaning towards a class as frequent as any: a scale on a fresh model's shared direction
    share = f" ({int((ids == favoured).sum())} of the {len(ids)} labels read)"
    return (
        f"every example's output leans the same way: the batch's mean logits alone give {lean / count:.4g} per target, "
        f"favouring class {favoured}{share}. An output bias initialised away from the classes' frequencies "
        "(log-priors in another order than the class ids, e.g. sorted by frequency)? Fix: initialise the output "
        "bias to the log of each class's own frequency, in class-id order, or to 0"
    )
