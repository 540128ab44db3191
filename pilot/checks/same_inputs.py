"""Every example reaching the model as the same input (``same_input_findings``): ``encode`` reads the
source under a key the raw example does not have (a default fills it), so every encoder input is the
same prompt. A seq2seq decoder still learns the targets' own distribution from its teacher-forced
prefix, and the tiny subset's floor, read from that prefix, is met: every check that trains passed.

Seen from the data: training examples, each collated alone, whose tensors other than the labels (and a
decoder's inputs made from them: the labels themselves, or shifted right by one) hold the same values
in every example, while their labels differ and so do two or more of their raw fields (a source and its
target). A ``fail`` naming the keys and the fields.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

ROWS = 32  # training examples compared
MIN_ROWS = 4


def same_input_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    items = encoded[:ROWS]
    batches = [task.collate([item]) for item in items]
    if len(batches) < MIN_ROWS or not all(torch.is_tensor(b.get("labels")) for b in batches):
        return [], {}
    if len({_signature(b["labels"]) for b in batches}) == 1:
        return [], {"judged": False, "why": "the labels are the same in every example"}
    keys = [k for k, v in batches[0].items() if k not in ("labels", "index") and torch.is_tensor(v)]
    inputs = [k for k in keys if not all(fed_from_labels(b.get(k), b["labels"]) for b in batches)]
    same = [k for k in inputs if len({_signature(b.get(k)) for b in batches}) == 1]
    raw = _differing_fields(task, [item.get("index") for item in items])
    details = {"rows_judged": len(batches), "inputs": inputs, "same_in_every_row": same, "raw_fields_differing": raw}
    if not inputs or same != inputs or len(raw) < 2:
        return [], details
    return [
        Finding(
            f"every training example reaches the model as the same input: {', '.join(inputs)} hold the same values "
            f"in all {len(batches)} examples collated alone, while their raw fields {', '.join(raw)} differ, and so "
            "do their labels: the model can only learn the labels' own distribution (a decoder from its teacher-forced "
            "prefix), whatever the input says. Fix: encode must read the input field under its name (a key the "
            "example does not have, filled by a default, gives every example the same input)",
            "train",
            items[0].get("index"),
        )
    ], details


def _signature(value: Any) -> tuple:
    if not torch.is_tensor(value):
        return (repr(value),)
    return tuple(value.shape), str(value.dtype), value.detach().cpu().contiguous().numpy().tobytes()


def fed_from_labels(value: Any, labels: torch.Tensor) -> bool:
    """``value`` is the labels fed to a decoder: equal to them, or shifted right by one, where they count."""
    if not torch.is_tensor(value) or value.shape != labels.shape or value.is_floating_point() or labels.dim() != 2:
        return False
    counted = labels != IGNORE_INDEX
    if bool((value[counted] == labels[counted]).all()):
        return True
    shifted = counted[:, :-1]
    return bool(shifted.any()) and bool((value[:, 1:][shifted] == labels[:, :-1][shifted]).all())


def _differing_fields(task: TaskData, indices: list[Any]) -> list[str]:
    """The raw fields whose values are not the same in every one of these training examples."""
    by_index = {e.index: e for e in task.splits.get("train", [])}
    examples = [by_index[i] for i in indices if i in by_index]
    names = sorted({name for e in examples for name in e.fields})
    return [n for n in names if len({repr(e.fields.get(n)) for e in examples}) > 1]
