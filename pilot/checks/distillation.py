"""Part of ``alignment``: a loss that follows soft targets beside the labels (knowledge distillation: a
teacher's logits in the batch, ``0.9 * KL(teacher || student) + 0.1 * CE``). Where the teacher's top class
differs from the label, such a loss pushes the output towards the teacher's: not a misaligned target. What
is judged instead is the teacher itself: its top class must agree with the labels far more often than
chance over the training split. Teacher outputs attached by position to a dump in another order (sorted by
class) agree only by chance, and every example is then distilled from another example's teacher.

Applies where the positions the loss does not push towards their label are pushed, nearly all of them,
towards the top class of one float tensor of the batch shaped like the model's scores, which the model does
not read (a tensor forward reads is an input of the model, however wide).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import CheckResult
from pilot.data.task import TaskData, logits_of

FOLLOWS = 0.9  # of the positions pushed away from their label, pushed towards the soft target's top class
ABOVE_CHANCE = 0.15  # a teacher's agreement with the labels at most this far above chance: another example's
EXAMPLES = 256  # training examples whose soft targets are compared with their labels


def _agreement(task: TaskData, key: str, split: str) -> tuple[float, float, int] | None:
    """How often the soft target's top class is the label over the split's first ``EXAMPLES`` examples, what
    chance alone gives with the same class frequencies, and how many were compared."""
    items = [task.encode(e) for e in task.splits[split][:EXAMPLES]]
    tops, labels = [], []
    for start in range(0, len(items), 64):
        batch = task.collate(items[start : start + 64])
        soft, label = batch.get(key), batch.get("labels")
        if not (torch.is_tensor(soft) and torch.is_tensor(label) and soft.shape[:-1] == label.shape):
            return None
        soft, label = soft.reshape(-1, soft.shape[-1]), label.reshape(-1)  # [B, 1] labels beside [B, 1, K]
        kept = label >= 0  # -100, or a loss's own ignore value (-1)
        tops.append(soft.argmax(-1)[kept])
        labels.append(label[kept])
    top, label = torch.cat(tops), torch.cat(labels)
    if not len(label):
        return None
    classes = int(max(int(top.max()), int(label.max())) + 1)
    chance = (
        float((torch.bincount(top, minlength=classes) * torch.bincount(label, minlength=classes)).sum())
        / len(label) ** 2
    )
    return float((top == label).float().mean()), chance, len(label)


def _read_by_forward(task: TaskData, model: torch.nn.Module, batch: dict[str, Any], key: str) -> bool:
    """Whether the model's output changes with batch[key] (an input of the model, not a teacher's output)."""
    with torch.no_grad():
        first = logits_of(task.forward(model, batch))
        other = logits_of(task.forward(model, {**batch, key: torch.zeros_like(batch[key])}))
    return first.shape != other.shape or not torch.equal(first, other)


def distillation_verdict(
    task: TaskData, model: torch.nn.Module, batch: dict[str, Any], found: dict[str, Any], split: str, details: dict
) -> CheckResult | None:
    """Alignment's verdict for a loss that follows a soft target where it departs from the labels, or None;
    ``batch``: one of the probed batches (a tensor forward reads is an input, not a teacher's output)."""
    pushed, reference = found["pushed"], found["reference"]
    away = pushed != reference
    for key, top in (found.get("soft") or {}).items():
        if not away.any() or float((top[away] == pushed[away]).float().mean()) < FOLLOWS:
            continue
        if _read_by_forward(task, model, batch, key):
            continue
        measured = _agreement(task, key, split)
        if measured is None:
            return None
        agreement, chance, compared = measured
        details["distillation"] = {"key": key, "agreement": agreement, "chance": chance, "examples": compared}
        said = (
            f"batch[{key!r}]'s top class agrees with the label on {agreement:.0%} of {compared} training examples "
            f"(chance: {chance:.0%})"
        )
        if agreement <= chance + ABOVE_CHANCE:
            return CheckResult(
                "alignment",
                "fail",
                f"the loss trains towards batch[{key!r}] where it departs from the labels (soft targets: a teacher's), "
                f"and {said}: the soft targets belong to other examples (teacher outputs attached by position to a "
                "dump in another order). Fix: look each example's teacher output up by its id",
                [],
                details,
            )
        return CheckResult(
            "alignment",
            "pass",
            f"the loss trains {int((~away).sum())} of {len(pushed)} positions towards their label and the others "
            f"towards batch[{key!r}]'s top class (distillation; {said})",
            [],
            details,
        )
    return None
