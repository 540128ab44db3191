"""Part of ``inspect``, for a collate that draws at random: does each row keep its own example's inputs?

A random collate (masking, augmentation) cannot be compared row by row with the example collated
alone, so inspect skips that comparison. Where the labels and ``index`` come out the same on two calls
and only an input moves, a row whose input is, exactly, *another* example's (as that one collates
alone) beside its own labels is a collate that shuffles the inputs and not the rest ("shuffle within
the micro-batch": ``inputs[randperm(n)]``): every input meets another row's target. Noise or
augmentation gives inputs equal to no example's, which is not judged here."""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.result import Finding
from pilot.data.task import TaskData

KEPT = ("labels", "index")  # what must come out the same on two calls for rows to be paired by them
MAIN_INPUTS = ("input_ids", "inputs", "pixel_values", "input_values", "input_features")  # an example's own input
# (a key such as 'negatives' may hold other examples' inputs by design: triplets, in-batch negatives)


def rows_of_other_examples(task: TaskData, items: list[dict[str, Any]], split: str = "train") -> list[Finding]:
    """One finding for the first row that holds another example's input beside its own labels and index."""
    if len(items) < 2:
        return []
    first, second = task.collate(list(items)), task.collate(list(items))  # a collate may reorder the list it is given
    for key in KEPT:
        if not (torch.is_tensor(first.get(key)) and torch.is_tensor(second.get(key))):
            return []
        if first[key].shape != second[key].shape or not torch.equal(first[key], second[key]):
            return []  # the labels move too (masked language modelling): a way of training, not judged
    alone = [task.collate([item]) for item in items]
    by_index = {int(a["index"][0]): j for j, a in enumerate(alone) if torch.is_tensor(a.get("index"))}
    for key, value in ((k, v) for batch in (first, second) for k, v in batch.items()):  # both calls' rows
        if key not in MAIN_INPUTS or not torch.is_tensor(value) or value.dim() < 1 or value.shape[0] != len(items):
            continue
        singles = [a.get(key) for a in alone]
        if not all(torch.is_tensor(s) and s.dim() == value.dim() and s.shape[0] == 1 for s in singles):
            continue
        for row, index in enumerate(int(i) for i in first["index"]):
            own = by_index.get(index)
            if own is None or _holds(value[row], singles[own][0]):
                continue
            other = next((j for j, s in enumerate(singles) if j != own and _holds(value[row], s[0])), None)
            if other is not None:
                return [
                    Finding(
                        f"collate pairs a row with another example's input: row {row} holds example {index}'s "
                        f"labels and index but '{key}' of example {int(alone[other]['index'][0])} (as that "
                        "example collates alone), and another call pairs them otherwise: every input meets "
                        "another row's target. Fix: permute every key of the batch together (inputs, labels, "
                        "index), or not at all (the sampler already shuffles)",
                        split,
                        index,
                    )
                ]
    return []


def _holds(row: torch.Tensor, single: torch.Tensor) -> bool:
    """Whether a batch row holds exactly the example's tensor (a padded row: at the example's own width)."""
    if row.shape == single.shape:
        return torch.equal(row, single)
    if (
        row.dim() >= 1
        and single.dim() == row.dim()
        and single.shape[1:] == row.shape[1:]
        and single.shape[0] <= row.shape[0]
    ):
        return torch.equal(row[: single.shape[0]], single)
    return False
