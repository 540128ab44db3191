"""Part of ``inspect``: a target scored exactly like another candidate (a fresh model, evaluation mode).

Scores per candidate in a row (``[B, C]``: classes, or in-batch documents with ``labels = arange(B)``)
tie exactly only where two candidates are the same input: a fresh model's random weights give
different inputs different scores. A batch that holds the same document in two columns (three queries
of one answer kept together) asks the loss to pick one of identical columns, a false negative that
caps what it can learn. Rows whose scores are all equal (a head initialised at zero) say nothing.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.loss_probe import micro_batches
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData, logits_of

MAX_ITEMS = 64
SHARE = 0.1  # of the judged rows, and at least MIN_ROWS of them
MIN_ROWS = 2
PRECISE = (torch.float32, torch.float64)
WIDEST = 4096  # candidates per row: more, and float32 scores tie by chance often enough to matter


def tied_target_findings(
    task: TaskData, model: torch.nn.Module, train: list[dict[str, Any]], micro_batch: int
) -> tuple[list[Finding], dict[str, Any]]:
    tied, judged, example = 0, 0, None
    was_training = model.training
    model.eval()
    try:
        for _, batch in micro_batches(task, train[:MAX_ITEMS], max(2, int(micro_batch))):
            with torch.no_grad():
                scores = logits_of(task.forward(model, batch))
            labels = batch.get("labels")
            if not (
                torch.is_tensor(labels) and labels.dim() == 1 and scores.dim() == 2 and 2 < scores.shape[1] <= WIDEST
            ):
                return [], {}
            if labels.is_floating_point() or scores.shape[0] != labels.shape[0] or scores.dtype not in PRECISE:
                return [], {}  # bf16 scores tie by rounding alone
            for row, label in enumerate(labels.tolist()):
                if (
                    label == IGNORE_INDEX
                    or not 0 <= label < scores.shape[1]
                    or bool((scores[row] == scores[row, 0]).all())
                ):
                    continue
                judged += 1
                if int((scores[row] == scores[row, label]).sum()) > 1:
                    tied += 1
                    example = example if example is not None else int(batch["index"][row]) if "index" in batch else row
    finally:
        model.train(was_training)
    details = {"rows": judged, "target_tied": tied}
    if tied < max(MIN_ROWS, SHARE * judged):
        return [], details
    return [
        Finding(
            f"the target scores exactly like another candidate in {tied} of {judged} rows of a fresh model (first: "
            f"training example {example}): two candidates of those rows are the same input (a document twice in "
            "a batch of in-batch negatives), so the loss must pick one of identical columns. Fix: one candidate per "
            "document in a micro-batch (deduplicate, or mask the duplicates' columns out of the loss)"
        )
    ], details
