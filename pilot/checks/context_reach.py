"""How far back a next-token model's output reads: its context reach, measured on the fresh model.

A transformer's output at position t reads every token before it; a causal convolution, an n-gram
model or a bigram table reads only the last few. The tiny subset judges which targets a perfect
learner can predict from their context (``subset_scorer``): for a model that reads 5 tokens, two
targets after the same 5 tokens cannot both be learnt, however long their prefixes differ, and a
rule that counted the whole prefix failed a correct convolutional language model.

Measured without gradient in evaluation mode, on the subset's longest example collated alone: the
output at its last real position, with every real token before the last ``k`` replaced by another id,
against the output as it is (``causality.output_moved``: the same comparison, the same limit). The
smallest ``k`` that leaves it unchanged is the reach (found by bisection: a model that reads a token
reads the ones after it too); None when the output reads the whole example, or nothing can be judged.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.causality import LIMIT, output_moved, real_scores
from pilot.checks.loss_probe import input_ids_key, input_ids_of, padding_mask
from pilot.data.task import NEXT_TOKEN, TaskData, move_to

SHORTEST = 4  # real tokens an example needs for a reach to be measured


def _longest(task: TaskData, items: list[dict[str, Any]]) -> tuple[dict[str, Any], list[int]] | None:
    """The longest example (collated alone) whose ids line up with its labels, and its real columns."""
    best: tuple[dict[str, Any], list[int]] | None = None
    for item in items:
        batch = task.collate([item])
        ids, labels = input_ids_of(batch), batch.get("labels")
        if ids is None or not torch.is_tensor(labels) or labels.shape != ids.shape or ids.shape[0] != 1:
            return None
        real = padding_mask(task, batch)
        columns = torch.nonzero(real[0] if real is not None else torch.ones_like(ids[0], dtype=torch.bool))
        columns = columns.flatten().tolist()
        if best is None or len(columns) > len(best[1]):
            best = batch, columns
    return best if best is not None and len(best[1]) >= SHORTEST else None


def _earlier_replaced(task: TaskData, batch: dict[str, Any], columns: list[int]) -> dict[str, Any]:
    """The batch with the tokens at ``columns`` replaced by the next id (never the pad id)."""
    ids = input_ids_of(batch)
    vocab = max(int(task.info.get("vocab_size", int(ids.max()) + 3)), 3)
    pad = task.info.get("pad_id")
    replaced = ids.clone()
    for column in columns:
        new = (int(ids[0, column]) + 1) % vocab
        replaced[0, column] = (new + 1) % vocab if new == pad else new
    return {**batch, input_ids_key(batch): replaced}


def context_reach(task: TaskData, model: torch.nn.Module | None, items: list[dict[str, Any]]) -> int | None:
    """The tokens (ending at its own) the fresh model's output at a position reads, when fewer than the
    subset's longest example holds; None otherwise or when not judged."""
    if model is None or task.convention != NEXT_TOKEN:
        return None
    try:
        found = _longest(task, items)
        if found is None:
            return None
        batch, columns = found
        device = next(model.parameters(), torch.empty(0)).device
        batch = move_to(batch, device)
        pick = real_scores(task, batch, slice(-1, None))  # the output at the last real position

        def reads_only(kept: int) -> bool | None:
            moved = output_moved(task, model, batch, _earlier_replaced(task, batch, columns[:-kept]), pick)
            return None if moved is None else moved <= LIMIT

        low, high = 1, len(columns)  # reads_only(len(columns)): nothing replaced
        if reads_only(high - 1) is not True:
            return None  # reads the whole example (or not judged)
        while low < high:
            middle = (low + high) // 2
            answer = reads_only(middle)
            if answer is None:
                return None
            low, high = (low, middle) if answer else (middle + 1, high)
        return low
    except Exception:  # noqa: BLE001 - a model this probe cannot run: the whole prefix, as before
        return None
