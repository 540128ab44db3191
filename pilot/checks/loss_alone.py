"""Part of ``inspect``: is each example's loss its own? ``loss_sum`` of an example's row as its micro-batch
padded it (the row cut from the batch, run through the model on its own: no other row, its padding kept),
must equal its loss collated alone (no padding), on a fresh model in evaluation mode without gradient. The padding and batch-mixing
probes compare outputs where the batch says where its padding is and the output keeps its shape; a task
with its own padding (candidates padded with zero vectors and a ``cand_mask`` of its own, scores of every
candidate in the softmax) passes both, while the padded candidates enter each example's loss: an
example's loss, and its gradient, then depends on what it is batched with.

Judged on the first ``BATCHES`` training micro-batches (``MOST_ROWS`` examples at most) where the output holds one row per example and the
labels one per example, whether or not the batch says where its padding is (an ``attention_mask``, an
``info["pad_id"]``, a mask of the task's own): a loss divided by the padded width, padded steps in a mean,
CTC input lengths that count padded frames all reach the loss where the model's outputs are each example's
own; not for scores over the batch's positions (transformers' question-answering heads score every
position, the padded ones too, by their own convention), where collate draws at random (alone, the example
is another input) or the model does not repeat its own loss. Run after the padding and batch-mixing
probes, and only when neither found anything (a model that reads the padding changes the loss too: said
once, by them).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.collated import collate_is_random
from pilot.checks.label_kinds import as_number
from pilot.checks.loss_probe import batch_size, micro_batches, padding_mask, row_items, sub_batch
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData, logits_of

BATCHES = 2
MOST_ROWS = 8  # examples compared at most (3 forwards for the first, 2 for each other)
RTOL = 1e-3  # of the example's loss alone: float32 sums over another width differ by ~1e-6
LOW_PRECISION_RTOL = 5e-2  # a bf16/fp16 model's rounding alone


def loss_alone_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int, split: str = "train"
) -> tuple[list[Finding], dict[str, Any]]:
    size = max(2, int(micro_batch))
    chunks = [encoded[start : start + size] for start in range(0, min(len(encoded), size * BATCHES), size)]
    chunks = [chunk for chunk in chunks if len(chunk) >= 2]
    if not chunks:
        return [], {"judged": False, "why": "no micro-batch of two examples or more"}
    first = task.collate(chunks[0])
    if (mask := padding_mask(task, first)) is not None and _scored_over_positions(task, model, first, mask):
        return [], {"judged": False, "why": "scores over the batch's positions (question answering's start and end "
                    "logits): padded positions in that softmax are transformers' own convention"}  # fmt: skip
    if collate_is_random(task, chunks[0]):
        return [], {"judged": False, "why": "collate is random (two calls differ)"}
    compared, worst = 0, (0.0, None, None, None)
    with untouched(model), torch.no_grad():
        model.eval()
        for chunk in chunks:
            _, batch = next(micro_batches(task, chunk, len(chunk)))
            rows, labels = batch_size(batch), batch.get("labels")
            output = task.forward(model, batch)
            scores = logits_of(output)
            if (
                scores.dim() == 0
                or scores.shape[0] != rows
                or (torch.is_tensor(labels) and labels.shape[:1] != (rows,))
            ):
                return [], {"judged": False, "why": "the output or the labels have no row per example"}
            if scored_over_the_batch(task, model, scores, chunk[0], rows):
                return [], {"judged": False, "why": "each row is scored against the batch's own examples (in-batch "
                            "negatives): its loss depends on its batch by design"}  # fmt: skip
            limit = RTOL if scores.dtype in (torch.float32, torch.float64) else LOW_PRECISION_RTOL
            for row, at in enumerate(row_items(batch, chunk)):
                if compared >= MOST_ROWS:  # a large model's forward on a CPU: a few seconds each
                    break
                alone = task.collate([chunk[at]])
                own_output = task.forward(model, alone)
                own = as_number(task.loss_sum(own_output, alone))
                again = as_number(task.loss_sum(task.forward(model, alone), alone)) if not compared else own
                padded = sub_batch(batch, [row])  # its row as the batch padded it, run alone: no other row
                cut_output = task.forward(model, padded)
                cut = as_number(task.loss_sum(cut_output, padded))
                if not all(map(math.isfinite, (own, again, cut))) or abs(own - again) > 1e-6 * max(abs(own), 1e-6):
                    return [], {"judged": False, "why": "the loss alone is not finite or not repeated"}
                compared += 1
                gap = abs(cut - own) / max(abs(own), 1e-6)
                if gap > worst[0]:
                    reads = _outputs_apart((cut_output, padded), (own_output, alone), limit)
                    worst = (gap, batch, row, (cut, own), reads)
    gap, batch, row, losses, reads = worst
    details = {"examples_compared": compared, "largest_relative_difference": gap, "limit": limit}
    if gap <= limit:
        return [], details
    return [_depends_on_its_batch(batch, row, gap, losses, split, reads)], details


def _outputs_apart(padded: tuple[Any, dict[str, Any]], alone: tuple[Any, dict[str, Any]], limit: float) -> bool | None:
    """Whether the model's scores at the positions the labels count differ between the example's row as its
    batch padded it and the example alone (the model reads the padding: an RNN's state after padded steps, a
    mean over every position); None where the two cannot be set side by side (other counts of positions)."""
    (mine, mine_batch), (own, own_batch) = padded, alone
    mine, own = logits_of(mine), logits_of(own)
    labels, own_labels = mine_batch.get("labels"), own_batch.get("labels")
    if not (torch.is_tensor(mine) and torch.is_tensor(own) and torch.is_tensor(labels) and torch.is_tensor(own_labels)):
        return None
    if mine.dim() == labels.dim() + 1 == own.dim() and labels.dim() >= 2 and mine.shape[:-1] == labels.shape:
        if own.shape[:-1] != own_labels.shape:
            return None
        mine, own = mine[labels != IGNORE_INDEX], own[own_labels != IGNORE_INDEX]  # the counted positions
    if mine.shape != own.shape:
        return None
    scale = float(own.abs().max()) if own.numel() else 0.0
    return bool((mine.float() - own.float()).abs().max() > limit * max(scale, 1e-6)) if mine.numel() else None


def in_batch_scores(task: TaskData, model: torch.nn.Module, pair: tuple[Any, dict[str, Any]], item: dict) -> bool:
    """``scored_over_the_batch`` for one (output, batch) pair computed already (``objective``): a positive a
    fresh encoder already scores well (a paraphrase sharing the query's words) starts such a loss below
    ln(width) by design, so its initial loss is not compared."""
    output, batch = pair
    scores = logits_of(output)
    with torch.no_grad():
        return torch.is_tensor(scores) and scored_over_the_batch(task, model, scores, item, batch_size(batch))


def one_positive_for_every_row(
    task: TaskData, model: torch.nn.Module, outputs: list[tuple[Any, dict[str, Any]]], item: dict
) -> list[Finding]:
    """Scores over the batch's own examples (``scored_over_the_batch``) beside labels that name the same column
    for every row of every probed batch: each query trained towards one row's document (labels = zeros(B),
    MoCo's recipe for a [B, 1+K] matrix whose positive is column 0, given a [B, B] one)."""
    labels = [batch.get("labels") for _, batch in outputs]
    if not labels or not all(
        torch.is_tensor(t) and t.dim() == 1 and len(t) > 1 and not t.is_floating_point() and bool((t == t[0]).all())
        for t in labels
    ):
        return []
    if not in_batch_scores(task, model, outputs[0], item):
        return []
    column = int(labels[0][0])
    return [
        Finding(
            f"every row's label is {column} in every probed micro-batch, over scores whose columns are the batch's own "
            "examples (an in-batch contrastive loss): each query is trained towards the same row's example, not its "
            "own positive. labels = zeros(B) is MoCo's layout, a [B, 1+K] matrix with the positive first. Fix: "
            "labels = torch.arange(B) for a [B, B] matrix (row i's positive is column i)"
        )
    ]


def scored_over_the_batch(task: TaskData, model: torch.nn.Module, scores: torch.Tensor, item: dict, rows: int) -> bool:
    """Scores whose width follows the batch: k columns per example of the batch, k for an example alone (a
    contrastive loss over the batch's passages, hard negatives beside positives). Padding does not do that."""
    if scores.dim() != 2 or scores.shape[1] % rows:
        return False
    alone = logits_of(task.forward(model, task.collate([item])))
    return alone.dim() == 2 and alone.shape[1] * rows == scores.shape[1]


def _scored_over_positions(task: TaskData, model: torch.nn.Module, batch: dict[str, Any], mask: torch.Tensor) -> bool:
    """Scores over the positions of the batch's width (their last axis: [rows, width], or [rows, 2, width] for a
    span's start and end) where the labels are no row of positions: a softmax over positions, where
    transformers' question-answering heads score the padded ones too (trained so; not this check's)."""
    with torch.no_grad():
        scores = logits_of(task.forward(model, batch))
    labels, width = batch.get("labels"), mask.shape[1]
    per_position_labels = torch.is_tensor(labels) and labels.dim() >= 2 and labels.shape[-1] == width  # tags
    return torch.is_tensor(scores) and scores.dim() >= 2 and scores.shape[-1] == width and not per_position_labels


def _depends_on_its_batch(
    batch: dict[str, Any], row: int, gap: float, losses: tuple, split: str, reads: bool | None = None
) -> Finding:
    cut, own = losses
    if reads:  # the scores at its counted positions differ already: the model, not loss_sum, reads the padding
        return Finding(
            f"an example's loss depends on its micro-batch: loss_sum of its row in a micro-batch of {batch_size(batch)} "
            f"is {cut:.6g}, of the example collated alone {own:.6g} ({gap:.3g} of it apart), and the model's scores at "
            "the positions its labels count differ too: the model reads the padding its batch adds (an RNN's state "
            "or last output taken after padded steps, a mean or attention over every position, a seq2seq decoder "
            "started from an encoder state that ran over the source's padding). Fix: pack the sequences "
            "(pack_padded_sequence) or take each row's state at its last real position, and mask the padding in "
            "every pooling and attention",
            split,
            int(batch["index"][row]) if torch.is_tensor(batch.get("index")) and len(batch["index"]) > row else None,
        )
    return Finding(
        f"an example's loss depends on its micro-batch: loss_sum of its row in a micro-batch of {batch_size(batch)} "
        f"is {cut:.6g}, of the example collated alone {own:.6g} ({gap:.3g} of it apart), while each example's loss "
        "must be its own. The padding the batch adds reaches the loss: padded candidates or classes scored in a "
        "softmax, padded steps in a mean, a division by the padded width, CTC input lengths that count padded frames, a mask of the task's own that loss_sum does not apply. Fix: mask the "
        "padding in loss_sum (scores.masked_fill(~mask, float('-inf')) before the softmax; padded positions out of "
        "the sum) and in forward",
        split,
        int(batch["index"][row]) if torch.is_tensor(batch.get("index")) and len(batch["index"]) > row else None,
    )
