"""Part of ``objective``: does ``loss_sum`` train the head of the classes the task declares?

A multi-task model returns several heads ({"logits": 2-wide sentiment, "nli_logits": 3-wide}); a task whose
``loss_sum`` (and ``predict``) read another head than its own trains that head towards its labels while its
own head, the one ``logits`` names and the class names describe, never trains: every check passed, the
initial loss judged against ln(3) for a 2-class task. Judged where the task declares its classes by name,
the output's ``logits`` are that many wide, and the loss trains one other tensor of another width.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import trained_head_widths
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of


def other_head_finding(task: TaskData, outputs: list[tuple[Any, dict[str, Any]]]) -> Finding | None:
    classes = len(task.names()) if callable(getattr(task, "names", None)) else 0
    for output, batch in outputs[:1]:
        if classes < 2 or torch.is_tensor(output):
            return None
        logits = logits_of(output)
        if not torch.is_tensor(logits) or logits.dim() < 2 or int(logits.shape[-1]) != classes:
            return None
        try:
            widths = trained_head_widths(task, output, batch)
        except Exception:  # noqa: BLE001 - a loss the probe cannot differentiate: not judged here
            return None
        if len(widths) != 1 or widths[0] == classes:
            return None
        return Finding(
            f"loss_sum trains a {widths[0]}-wide output while the task declares {classes} classes "
            f"({', '.join(map(str, task.names()[:4]))}) and the model's logits are {classes} wide: the loss reads "
            "another head's output (a multi-task model's other head), so this task's own head never trains. Fix: "
            "read the head of this task's classes in loss_sum and predict (output['logits'])"
        )
    return None
