"""Part of ``inspect``: does the answer reach the model through another input? An encoder-decoder
whose collate gives the decoder the labels themselves (``decoder_input_ids = labels``, the shift
right behind ``<bos>`` forgotten) feeds the output trained towards the label at t the very label at
t: the loss falls, every check that reads the loss passes, and nothing is predicted without it.
``label_reading`` changes ``batch["labels"]`` only; here the copy is found in any other key.

For the first training example collated alone: an integer input of the labels' shape that holds,
at the position of the output trained towards each counted label, that label itself — at half or
more of the counted positions where the label differs from the one before it (a correctly shifted
input holds the previous label there, which such positions tell apart; a masked LM's input holds a
mask token at the positions it labels) — and that the output reads: changing the copy there changes
the output at that position (fresh model, evaluation mode). A masked LM whose labels keep every token
(``-100`` forgotten outside the masked ones) is found the same way, in its own input ids.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.causality import LIMIT
from pilot.checks.loss_probe import decoder_side, input_ids_key, spans
from pilot.checks.padding import REPEAT_RTOL, output_difference
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, NEXT_TOKEN, Batch, TaskData, logits_of

SHARE = 0.5  # of the judged positions where the input holds the label itself: a copy, not a coincidence
# (a shifted decoder input holds none there; a masked LM labelling every token, ~85%)
JUDGED = 3  # judged positions needed (a label that differs from the one before it)
NOT_INPUTS = ("labels", "index", "attention_mask")


def _output_position(task: TaskData) -> int:
    """Output position trained towards the label at p is p + this: next-token labels not shifted by
    collate are predicted from the position before theirs (transformers' convention)."""
    return -1 if task.convention == NEXT_TOKEN and not task.labels_shifted else 0


def _copies(task: TaskData, batch: Batch) -> list[tuple[str, list[int]]]:
    """(key, output positions) of each input that holds the label at the output trained towards it."""
    labels = batch.get("labels")
    if not torch.is_tensor(labels) or labels.dim() != 2 or labels.is_floating_point() or labels.shape[0] != 1:
        return []
    row, offset = labels[0].tolist(), _output_position(task)
    counted = [p for p, v in enumerate(row) if v != IGNORE_INDEX]
    judged = [p for k, p in enumerate(counted) if k > 0 and row[p] != row[counted[k - 1]] and 0 <= p + offset]
    if len(judged) < JUDGED:
        return []
    found = []
    decoder = decoder_side(batch)
    for key, value in batch.items():
        if key in NOT_INPUTS or not torch.is_tensor(value) or value.is_floating_point() or value.dim() != 2:
            continue
        if value.shape[0] != 1 or value.shape[1] <= max(judged) + offset:
            continue
        if decoder and not key.startswith("decoder_"):
            continue  # an encoder's positions do not line up with the decoder's labels
        held = [p + offset for p in judged if int(value[0, p + offset]) == row[p]]
        if len(held) >= SHARE * len(judged) and len({int(value[0, p]) for p in held}) >= 2:
            found.append((key, held))  # (one value held everywhere, token_type_ids' 0, matches by chance)
    return found


def copied_label_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when an input holding the labels at their own outputs' positions is read there."""
    if not encoded:
        return [], {"judged": False}
    batch = task.collate(encoded[:1])
    copies = _copies(task, batch)
    if not copies:
        return [], {"judged": False}
    with untouched(model), torch.no_grad():
        model.eval()
        base, again = (logits_of(task.forward(model, batch)).detach().float() for _ in range(2))
        if base.dim() < 3 or (repeat := output_difference(again, base)) is None or repeat > REPEAT_RTOL:
            return [], {"judged": False}
        for key, held in copies:
            position = held[-1]
            changed = batch[key].clone()
            changed[0, position] = (int(changed[0, position]) + 1) % max(int(base.shape[-1]), 2)
            moved = logits_of(task.forward(model, {**batch, key: changed})).detach().float()
            if position >= base.shape[1] or position >= moved.shape[1]:
                continue
            difference = output_difference(moved[:, position], base[:, position])
            if difference is not None and difference > LIMIT:
                details = {"judged": True, "key": key, "positions": held, "main_input": key == input_ids_key(batch)}
                return [_finding(key, held, difference, batch)], details
    return [], {"judged": True}


def _finding(key: str, held: list[int], difference: float, batch: Batch) -> Finding:
    fix = (
        "A masked LM labels only the tokens it masked: the others are in the input, and the loss on them is a copy "
        "(fix: labels -100 wherever the input was not masked or replaced). A denoising task (spelling or grammar "
        "correction as tagging), whose input is mostly its answer by design, may ignore this warning"
        if key == input_ids_key(batch)
        else "Teacher forcing gives the decoder the labels shifted right (<bos> + labels[:-1]), never the labels "
        f"themselves. Fix: shift '{key}' right by one position behind the start token"
    )
    return Finding(
        f"the answer reaches the model through '{key}': at position(s) {spans(held)} it holds the very label the "
        f"output there is trained towards, and that output reads it (changing it moves the output by {difference:.3g} "
        f"of its scale). {fix}",
        "train",
        int(batch["index"][0]) if "index" in batch else None,
    )
