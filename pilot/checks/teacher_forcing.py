"""Part of ``inspect``: does a decoder given its own inputs read the target so far?

An encoder-decoder trained with teacher forcing predicts the label at position t from the labels
before it: its ``decoder_input_ids`` are the labels shifted one position right (transformers'
``shift_tokens_right``, ``model.prepare_decoder_input_ids_from_labels``), so the decoder input at
t+1 is the label at t. A task that builds them itself from something else (the source shifted, as
a denoising collator does where source and target are one text) trains a decoder that reads, at
each step, tokens it will not have when it generates: every loss and count still adds up, and the
model learns something else. Read on the collated batches: at the counted positions whose next
decoder position exists, the share where ``decoder_input_ids[t + 1] == labels[t]``. A decoder fed
its labels unshifted is ``copied_labels``' finding, not repeated here.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import micro_batches, row_items
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

DECODER_KEY = "decoder_input_ids"
MIN_POSITIONS = 20  # counted positions with a next decoder position, before anything is judged
REQUIRED_SHARE = 0.5  # of them holding the label as the next decoder input; a shifted target gives ~1
MAX_ITEMS = 256


def teacher_forcing_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when the decoder inputs a task collates are not its labels shifted right."""
    fed = compared = unshifted = 0
    for _, batch in micro_batches(task, encoded[:MAX_ITEMS], micro_batch):
        decoder, labels = batch.get(DECODER_KEY), batch.get("labels")
        if not _comparable(decoder, labels):
            return [], {}
        counted = labels[:, :-1] != IGNORE_INDEX  # positions t whose t+1 exists in the decoder's input
        compared += int(counted.sum())
        fed += int(((decoder[:, 1:] == labels[:, :-1]) & counted).sum())
        unshifted += int(((decoder[:, :-1] == labels[:, :-1]) & counted).sum())
    details = {"positions": compared, "next_input_is_the_label": fed}
    if compared < MIN_POSITIONS or fed >= REQUIRED_SHARE * compared or unshifted >= REQUIRED_SHARE * compared:
        return [], details
    return [
        Finding(
            f"the decoder is not fed its target: at {compared - fed} of {compared} counted positions of the "
            f"collated training batches, {DECODER_KEY}[t+1] is not labels[t], so at each step the decoder reads "
            "tokens other than the target so far, which it will not have when it generates (teacher forcing "
            f"feeds the labels shifted one position right). Fix: build {DECODER_KEY} from the labels "
            "(transformers' shift_tokens_right(labels, pad_token_id, decoder_start_token_id), or "
            "model.prepare_decoder_input_ids_from_labels(labels)), or leave the key out and let the model do it"
        )
    ], details


def _comparable(decoder: Any, labels: Any) -> bool:
    """Class-id labels and decoder token ids of the same [rows, positions] shape."""
    return (
        torch.is_tensor(decoder)
        and torch.is_tensor(labels)
        and decoder.dim() == 2
        and decoder.shape == labels.shape
        and not labels.is_floating_point()
        and not decoder.is_floating_point()
    )


def _first_counted(labels: torch.Tensor) -> int | None:
    counted = torch.nonzero(labels != IGNORE_INDEX).flatten()
    return int(counted[0]) if counted.numel() else None


def label_padding_findings(
    task: TaskData, encoded: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when collate pads a decoder's labels on the left (``kind="seq2seq"``): the model's decoder
    inputs are its labels shifted right, so a row's first target then follows a run of padding in a batch,
    right after the start token alone (and at generation), and moves with the row's neighbours."""
    if task.kind != "seq2seq" or int(micro_batch) < 2:
        return [], {}
    moved, rows = [], 0
    items = encoded[:MAX_ITEMS]
    for start, batch in micro_batches(task, items, micro_batch):
        labels = batch.get("labels")
        if not torch.is_tensor(labels) or labels.dim() != 2 or labels.is_floating_point():
            return [], {}
        chunk = items[start : start + int(micro_batch)]
        for row, item in enumerate(row_items(batch, chunk)):
            alone = task.collate([chunk[item]]).get("labels")
            in_batch, by_itself = (
                _first_counted(labels[row]),
                _first_counted(alone[0]) if torch.is_tensor(alone) else None,
            )
            rows += 1
            if in_batch is not None and by_itself is not None and in_batch > by_itself:
                moved.append((start + item, in_batch - by_itself))
    details = {"rows": rows, "first_target_moved_right": len(moved)}
    if not moved:
        return [], details
    example, shift = moved[0]
    return [
        Finding(
            f"collate pads the labels on the left: in {len(moved)} of {rows} collated training rows the first "
            f"target sits further right than in the example collated alone (training item {example}: {shift} "
            "position(s)), so the decoder, fed the labels shifted right, reads padding before the first target, "
            "which it never does when it generates. Fix: pad labels on the right (with -100), as "
            "DataCollatorForSeq2Seq does"
        )
    ], details
