"""What a task's labels are, read from its batches: binary targets, values (a regression), class ids.

The objective check compares a fresh model's loss with ln(outputs) only where the outputs are class
scores; these tell which labels those are."""

from __future__ import annotations

import math
from typing import Any

import torch

from pilot.checks.loss_floor import with_logits
from pilot.data.task import TaskData, logits_of


def as_number(value: Any) -> float:
    """A loss or count as a float (a loss that still carries gradient, from a weighted loss's own
    parameters, without torch's warning about converting it)."""
    return float(value.detach()) if torch.is_tensor(value) else float(value)


def binary_targets(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]]) -> bool:
    """Floating-point labels of the logits' own shape whose loss, at even outputs (every logit 0), is ln(2)
    per target: each target is one yes/no decision (multi-hot tags with a sigmoid loss, some of them masked
    out), whose fresh loss is ln(2), not ln of the output's width."""
    if not all(torch.is_tensor(b.get("labels")) and b["labels"].is_floating_point() for _, b in outputs):
        return False
    if any(b["labels"].shape != logits_of(o).shape for o, b in outputs):
        return False
    try:
        with torch.no_grad():
            even = sum(as_number(task.loss_sum(with_logits(o, torch.zeros_like(logits_of(o))), b)) for o, b in outputs)
            count = sum(as_number(task.target_count(b)) for _, b in outputs)
    except Exception:  # noqa: BLE001 - an output whose logits cannot be replaced: judged by its width
        return False
    return count > 0 and abs(even / count - math.log(2)) <= 1e-3 * math.log(2)


def regression(task: TaskData, batches: list[dict[str, Any]] = ()) -> bool:
    """A regression: declared (its kind names it), or float labels that are values, not classes (some
    neither 0 nor 1, rows that are no class distributions: a 7-day forecast). Its outputs are values, not
    class scores, and ln(outputs) says nothing of its fresh loss."""
    if "regression" in str(task.kind).lower():
        return True
    labels = [batch.get("labels") for batch in batches]
    if not labels or not all(torch.is_tensor(t) and t.is_floating_point() and t.numel() for t in labels):
        return False
    values = any(bool(((t != 0) & (t != 1)).any()) for t in labels)
    distributions = all(
        t.dim() >= 2 and bool((t >= 0).all()) and torch.allclose(t.sum(-1), torch.ones(())) for t in labels
    )
    return values and not distributions


def class_distributions(batches: list[dict[str, Any]]) -> bool:
    """Soft labels: float rows of class probabilities (a teacher's, annotators' votes), each summing to 1. A
    prediction of such a row never equals it exactly (a softmax of the logits): its most likely class is
    compared with the label's (a correct soft-label task failed, "0% of 8 examples recovered exactly")."""
    labels = [batch.get("labels") for batch in batches]
    return bool(labels) and all(
        torch.is_tensor(t) and t.is_floating_point() and t.dim() >= 2 and t.shape[-1] > 1 and t.numel() > 0
        and bool((t >= 0).all()) and torch.allclose(t.float().sum(-1), torch.ones(()), atol=1e-3)
        and bool(((t != 0) & (t != 1)).any())
        for t in labels
    )  # fmt: skip


def class_ids(batches: list[dict[str, Any]]) -> bool:
    labels = [batch.get("labels") for batch in batches]
    return all(torch.is_tensor(t) and not t.is_floating_point() for t in labels)


def ordinal_head(task: TaskData, output: Any, batch: dict[str, Any]) -> bool:
    """Class-id labels scored by a head narrower than the classes whose ``loss_sum`` gives every class its own
    finite loss (every label set to that class, in turn): an ordinal head of K-1 cumulative logits (CORAL:
    P(y > k), a BCE per threshold), whose outputs are thresholds, not one score per class. A loss that clamps
    the labels to the head (``clamp(max=width-1)``, ``% width``) or a CORAL target off by one gives two
    classes one loss; cross_entropy on a narrower head raises. Probed on CPU copies (an out-of-range index on
    a GPU is a device-side assert, not an exception)."""
    labels, scores = batch.get("labels"), logits_of(output)
    classes = int(task.info.get("num_classes", len(task.names())))
    if not torch.is_tensor(labels) or labels.is_floating_point() or scores.dim() == 0:
        return False
    if not 1 < int(scores.shape[-1]) < classes:
        return False
    output, batch = _on_cpu(output), _on_cpu(batch)
    losses = []
    try:
        with torch.no_grad():
            for label in range(classes):
                every = torch.where(batch["labels"] >= 0, torch.full_like(batch["labels"], label), batch["labels"])
                losses.append(float(task.loss_sum(output, {**batch, "labels": every})))
    except Exception:  # noqa: BLE001 - the loss cannot score some class: not an ordinal head
        return False
    distinct = all(
        abs(a - b) > 1e-6 * max(abs(a), abs(b), 1e-12) for i, a in enumerate(losses) for b in losses[i + 1 :]
    )
    return all(math.isfinite(loss) for loss in losses) and distinct


def _on_cpu(value: Any) -> Any:
    """``value`` with every tensor in it (dicts, lists, tuples, transformers' outputs) copied to the CPU."""
    if torch.is_tensor(value):
        return value.detach().cpu()
    if isinstance(value, dict):
        moved = {k: _on_cpu(v) for k, v in value.items()}
        return type(value)(**moved) if type(value) is not dict and hasattr(value, "to_tuple") else moved
    if isinstance(value, (list, tuple)):
        return (
            type(value)(_on_cpu(v) for v in value)
            if not hasattr(value, "_fields")
            else type(value)(*map(_on_cpu, value))
        )
    return value
