"""Positions the labels leave out that the loss trains anyway, towards the input's own tokens.

The labels say which positions are targets (-100 elsewhere: the instruction, the padding), and the row
checks read them. A ``loss_sum`` that reads ``batch["input_ids"]`` instead of ``batch["labels"]`` (a key
renamed in one place) trains every position, instruction and padding included, while the labels, the
counts and examples.txt still show the answer alone. The loss's own gradient on the output tells: at
an output whose label is -100, a class pushed up (a negative gradient entry, as cross-entropy gives its
target) that is the very input token the labels' layout would put there. A term that reads no label (a
z-loss) pushes no class up; a teacher's soft targets over the prompt push the teacher's classes, not the
input's: neither is flagged.
"""

from __future__ import annotations

import torch

from pilot.checks.loss_probe import input_ids_of, prediction_offset, spans
from pilot.checks.result import Finding
from pilot.data.task import Batch, TaskData

SHARE = 0.9  # of the unlabelled outputs the loss pushes, the share pushed towards the input's token


def inputs_trained(task: TaskData, batch: Batch, grad: torch.Tensor, shift: int) -> torch.Tensor | None:
    """[rows, output positions]: True where no label counts (-100, or past the labels) and the loss pushes the
    output towards the input token that a label at that position would name; None when not told (no 2-D
    integer labels and input ids of the output's width, or too few such positions to call it a pattern)."""
    labels, ids = batch.get("labels"), input_ids_of(batch)
    if not (torch.is_tensor(labels) and torch.is_tensor(ids)) or labels.dim() != 2 or labels.is_floating_point():
        return None
    if tuple(grad.shape[:2]) != tuple(labels.shape) or ids.shape != labels.shape:
        return None
    labels, ids, width, classes = labels.cpu().long(), ids.cpu().long(), grad.shape[1], grad.shape[-1]
    at = torch.arange(width) - shift  # output o scores label o - shift, which names input token + offset
    token_at = at + prediction_offset(task)
    inside = (at >= 0) & (at < width) & (token_at >= 0) & (token_at < width)
    label = torch.full((len(labels), width), -100, dtype=torch.long)
    label[:, inside] = labels[:, at[inside]]
    token = torch.full((len(labels), width), -1, dtype=torch.long)
    token[:, inside] = ids[:, token_at[inside]]
    unlabelled = inside & ((label < 0) | (label >= classes))
    pushed = grad.min(dim=-1).values < 0
    towards = grad.argmin(dim=-1) == token
    candidates = unlabelled & pushed
    if int(candidates.sum()) < 2 or float(towards[candidates].float().mean()) < SHARE:
        return None
    return candidates & towards


def inputs_trained_finding(trained: list[tuple[str, int, list[int]]]) -> list[Finding]:
    """One failure naming how many positions the labels leave out are trained towards the inputs' tokens."""
    if not trained:
        return []
    split, example, positions = trained[0]
    count = sum(len(p) for _, _, p in trained)
    return [
        Finding(
            f"loss_sum trains {count} position(s) of {len(trained)} example(s) that the labels leave out (-100: the "
            f"instruction, the padding), each towards the input's own next token (first: {split} example {example}, "
            f"output positions {spans(positions)}): it reads the inputs (input_ids) where it should read the labels, "
            "so the whole sequence is trained while the labels, the counts and examples.txt show the answer alone. "
            "Fix: compute loss_sum and target_count from batch['labels']",
            split,
            example,
        )
    ]
