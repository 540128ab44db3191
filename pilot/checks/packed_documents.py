"""Part of ``inspect``: documents packed into one row that read each other. A batch whose
``position_ids`` restart inside a row (0 again after a document: packing for padding-free training,
each document from position 0) says the row holds separate documents. A model that still attends
across them (a plain causal mask: SDPA and most hand-written models ignore position-id boundaries)
lets each document read the ones packed before it, text the run never meant to be its context.

On a fresh model in evaluation mode, without gradient: the first training example (collated alone)
whose position ids restart, and the same example with every token before the restart replaced; the
outputs from the restart on must stay as they were (a block-diagonal mask leaves them bit for bit).
A warning, not a failure: packing that keeps cross-document attention on purpose exists (GPT-style
pre-training, Megatron's ``reset_position_ids`` without ``reset_attention_mask``).
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.causality import LIMIT, output_moved, real_scores, with_token_replaced
from pilot.checks.loss_probe import input_ids_of, padding_mask
from pilot.checks.result import Finding
from pilot.data.task import TaskData


def _restart(batch: dict[str, Any], real: torch.Tensor) -> int | None:
    """The column where the first row's position ids restart (a later real position back at or below
    the one before it), with a real token before it; None without position ids or a restart."""
    ids, positions = input_ids_of(batch), batch.get("position_ids")
    if ids is None or not torch.is_tensor(positions) or positions.shape != ids.shape or positions.is_floating_point():
        return None
    columns = torch.nonzero(real).flatten().tolist()
    row = positions[0].tolist()
    for before, after in zip(columns, columns[1:]):
        if row[after] <= row[before]:
            return after
    return None


def packed_documents_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A warning when the outputs after a position-id restart change with the tokens before it."""
    for item in encoded[:20]:
        batch = task.collate([item])
        real = padding_mask(task, batch)
        real = real[0] if real is not None else None
        if input_ids_of(batch) is None:
            return [], {"judged": False}
        if real is None:
            real = torch.ones(input_ids_of(batch).shape[1], dtype=torch.bool)
        if (start := _restart(batch, real)) is not None:
            break
    else:
        return [], {"judged": False}
    changed = batch
    for column in torch.nonzero(real[:start]).flatten().tolist():
        changed = with_token_replaced(task, changed, column)
    after = int(real[:start].sum())  # real positions before the restart: the outputs from it on are compared
    difference = output_moved(task, model, batch, changed, real_scores(task, batch, slice(after, None)))
    if difference is None:
        return [], {"judged": False}
    details = {"judged": True, "restart_column": start, "largest_relative_difference": difference}
    if difference <= LIMIT:
        return [], details
    return [
        Finding(
            f"documents packed in one row read each other: position_ids restart at column {start} (a new "
            f"document), but changing the tokens before it changes the outputs after it ({difference:.3g} of "
            "their scale), so each document attends to the ones packed before it. If they are meant to be "
            "independent, give the model a block-diagonal causal mask (a mask per document; transformers: "
            "no attention_mask and use_cache=False, so that it builds one from position_ids — with a cache it "
            "does not — or flash_attention_2's padding-free packing); if cross-document "
            "attention is intended (GPT-style packing), this can be ignored",
            "train",
            int(batch["index"][0]) if "index" in batch else None,
        )
    ], details
