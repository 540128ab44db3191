"""Part of ``inspect``: does padding reach scores computed over the batch (in-batch negatives)?

A bi-encoder trained with in-batch InfoNCE returns ``[rows, rows]`` scores (every query against every
passage of its micro-batch): a row has no output of its own to compare with the example collated alone,
so the padding check (``pilot.checks.padding``) cannot judge it. Here the padding itself is changed and
nothing else: the same examples, collated with one longer training example whose row is then left out,
hold the same tokens and only a longer padding (the task's own collate pads them, with its own pad id and
mask). Every score must stay as it was; a mean pool over every position (``h.mean(1)``: the pads counted
in the sentence's embedding), an encoder not given its mask, or positions counted from the padding move
them, and the model trains on embeddings of the padding.

On a fresh model in evaluation mode, without gradient: the first ``BATCHES`` training micro-batches
whose output is scored over the batch (``loss_alone.scored_over_the_batch``). Judged as the padding check
judges (``RTOL`` of the scores' scale, less where the batch's rows of scores lie closer, ``judged_limit``);
not judged where no longer example widens the batch, where the rows' tokens are not the same once widened
(a collate that reorders or draws), or where the model does not repeat its own scores.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.loss_alone import scored_over_the_batch
from pilot.checks.loss_probe import batch_size, micro_batches, sub_batch
from pilot.checks.padding import LOW_PRECISION_RTOL, REPEAT_RTOL, RTOL, judged_limit, output_difference
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of

BATCHES = 2  # micro-batches compared
LOOKED_AT = 64  # training examples looked at: batches among them, and for one that widens a batch's padding


def _widths(batch: dict[str, Any]) -> dict[str, int]:
    return {k: int(v.shape[1]) for k, v in batch.items() if torch.is_tensor(v) and v.dim() >= 2}


def _same_tokens(batch: dict[str, Any], wider: dict[str, Any]) -> bool:
    """Whether ``wider`` holds ``batch``'s tensors, each as it is or with columns added on one side only."""
    for key, value in batch.items():
        other = wider.get(key)
        if not torch.is_tensor(value):
            continue
        if not torch.is_tensor(other) or other.dim() != value.dim() or other.shape[0] != value.shape[0]:
            return False
        if value.dim() < 2 or other.shape[1] == value.shape[1]:
            if not torch.equal(value, other):
                return False
            continue
        width = value.shape[1]
        if other.shape[1] < width or other.shape[2:] != value.shape[2:]:
            return False
        if not (torch.equal(other[:, :width], value) or torch.equal(other[:, -width:], value)):
            return False
    return True


def widened(task: TaskData, chunk: list[dict[str, Any]], batch: dict[str, Any], pool: list[dict[str, Any]]):
    """``batch``'s examples, collated with the example of ``pool`` that widens its padding most, that
    example's row left out: the same rows and tokens, longer padding; None where none widens it or the rows
    change otherwise."""
    widths, best, grown = _widths(batch), None, 0
    for item in pool[:LOOKED_AT]:
        together = task.collate([*chunk, item])
        extra = sum(max(0, w - widths.get(k, w)) for k, w in _widths(together).items())
        if extra > grown:
            best, grown = together, extra
    index, wider_index = batch.get("index"), best.get("index") if best is not None else None
    if not torch.is_tensor(index) or not torch.is_tensor(wider_index):
        return None
    at = {int(v): row for row, v in enumerate(wider_index.tolist())}
    if any(int(v) not in at for v in index.tolist()):
        return None
    wider = sub_batch(best, [at[int(v)] for v in index.tolist()])
    return wider if _same_tokens(batch, wider) else None


def _scores(task: TaskData, model: torch.nn.Module, batch: dict[str, Any]) -> torch.Tensor:
    return logits_of(task.forward(model, batch)).detach().float()


def _rows_spread(scores: torch.Tensor) -> float | None:
    """How far apart the batch's rows of scores are (different queries): the largest difference of a pair."""
    differences = [output_difference(scores[i], scores[j]) for i in range(len(scores)) for j in range(i)]
    known = [d for d in differences if d is not None]
    return max(known) if known else None


def batch_padding_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int, split: str = "train"
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding where scores over the batch move when only the batch's padding grows; the numbers."""
    details: dict[str, Any] = {"batches_compared": 0}
    with untouched(model), torch.no_grad():
        model.eval()
        for looked, (start, batch) in enumerate(micro_batches(task, encoded, micro_batch)):
            if details["batches_compared"] >= BATCHES or looked >= LOOKED_AT // micro_batch:
                break
            rows, chunk = batch_size(batch), encoded[start : start + micro_batch]
            scores = _scores(task, model, batch)
            if rows < 2 or not scored_over_the_batch(task, model, scores, chunk[0], rows):
                continue
            wider = widened(task, chunk, batch, encoded[:start] + encoded[start + micro_batch :])
            if wider is None or output_difference(_scores(task, model, batch), scores) > REPEAT_RTOL:
                continue  # nothing pads it longer, or its scores do not repeat: not judged
            moved = output_difference(_scores(task, model, wider), scores)
            limit = RTOL if scores.dtype in (torch.float32, torch.float64) else LOW_PRECISION_RTOL
            limit = judged_limit(limit, _rows_spread(scores))
            details.update(batches_compared=details["batches_compared"] + 1, limit=limit)
            details["largest_relative_difference"] = max(details.get("largest_relative_difference", 0), moved)
            if moved is not None and moved > limit:
                return [_finding(batch, wider, moved, split)], details
    return [], details


def _finding(batch: dict[str, Any], wider: dict[str, Any], moved: float, split: str) -> Finding:
    grown = ", ".join(f"{k} {w} -> {_widths(wider)[k]}" for k, w in _widths(batch).items() if _widths(wider)[k] != w)
    return Finding(
        f"the scores over the batch read the padding: the same {batch_size(batch)} examples, collated with a longer "
        f"example whose row is then left out (the same tokens, only more padding: {grown}), give scores "
        f"{moved:.3g} of their scale away from their own. Every embedding then depends on how long its batch's "
        "longest example is: a mean pool over every position (h.mean(1)) counts the pads, an encoder not given "
        "its attention mask reads them. Fix: pool over the real positions only, (h * mask[..., None]).sum(1) / "
        "mask.sum(1, keepdim=True) (or the first token's state), and pass each sequence's own attention mask to "
        "its encoder",
        split,
    )
