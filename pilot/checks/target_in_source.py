"""The answer written into the encoder's input (a seq2seq task): a warning from the data alone.

A source built with the target in it (``f"{document} TL;DR: {summary}"``, a field joined twice, a
template that echoes the reference) lets an encoder-decoder copy what it should produce: the loss
falls, every check that reads the loss passes, and at inference time, with no target to copy, the
model has learned nothing. Seen without a model: each training row's counted target tokens (the first and the
end token aside: a word of a BPE vocabulary tokenised mid-text merges with the space before it) found, in order and side by side, in its source ``input_ids`` as training collates them — in most rows, and only for
targets of several tokens (a one-word answer may well appear in its question). Tasks that rewrite a
source (grammar correction: a correct sentence comes back unchanged) copy it in some rows, not most; and
a row whose source is the target itself, give or take ``MIN_EXTRA`` tokens (a copy task, a sentence a
corrector leaves as it is), is not judged: the answer is not *added* to its source.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import SEQ2SEQ, input_ids_of, micro_batches, padding_mask, row_items
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData

MIN_ROWS = 10
ROWS = 512  # first training examples read
BATCH = 8
MIN_TOKENS = 3  # a target this long or longer, its first and end tokens aside
SHARE = 0.8  # of the judged rows whose source holds the whole target
MIN_EXTRA = 3  # source tokens beyond the target (and its first and end tokens) for the target to be added


def _holds(source: list[int], target: list[int]) -> bool:
    width = len(target)
    return any(source[i : i + width] == target for i in range(len(source) - width + 1))


def target_in_source_findings(task: TaskData, encoded: list[dict[str, Any]]) -> tuple[list[Finding], dict[str, Any]]:
    if task.kind != SEQ2SEQ or not encoded:
        return [], {}
    judged, holding, itself = 0, [], 0
    for start, batch in micro_batches(task, encoded[:ROWS], BATCH):  # as training collates them
        source, labels = input_ids_of(batch), batch.get("labels")
        if source is None or not torch.is_tensor(labels) or labels.dim() != 2 or labels.shape[0] != source.shape[0]:
            continue
        real = padding_mask(task, batch)
        for row, item in enumerate(row_items(batch, encoded[start : start + BATCH])):
            # the first token aside (a BPE word tokenised mid-text merges with the space before it), and the end token
            target = [t for t in labels[row].tolist() if t >= 0 and t != IGNORE_INDEX][1:-1]
            if len(target) < MIN_TOKENS:
                continue
            length = int(real[row].sum()) if real is not None else source.shape[1]
            if length - len(target) - 2 < MIN_EXTRA:  # the source is the target itself: copied, not added
                itself += 1
                continue
            judged += 1
            if _holds(source[row].tolist(), target):
                holding.append(start + item)
    details = {
        "rows_judged": judged,
        "rows_whose_source_holds_the_target": len(holding),
        "rows_whose_source_is_the_target": itself,
    }
    if judged < MIN_ROWS or len(holding) < SHARE * judged:
        return [], details
    example = holding[0]
    return [
        Finding(
            f"the target is written into the source: in {len(holding)} of {judged} training rows the encoder's "
            "input_ids hold the whole target, token for token, so the model learns to copy it from there and has "
            "nothing to copy at inference time. Fix: build the source from the input fields only (the target goes "
            "in labels and the decoder's inputs)",
            "train",
            example,
        )
    ], details
