"""Part of ``inspect``: does ``forward`` read the labels? A model given ``batch["labels"]`` that uses
them for its output (embeds them, adds them to its input, picks a head by them) sees the answer: the
loss falls, the tiny subset is learned, validation accuracy is high, and the model predicts nothing
without them. transformers' models take ``labels`` only to compute their loss: their logits do not
change with them.

On a fresh model in evaluation mode, without gradient: the first training example collated alone,
and the same example with one label changed — the label of an example with one label, the last
counted label of a sequence. The outputs the label cannot legitimately reach must stay as they were:
every output for a label per example; for a sequence, every position up to the changed label's own
(teacher forcing, as an encoder-decoder shifting labels into its decoder, reaches only the positions
after it). A model that does not repeat its own output is not judged (eval_determinism's business),
nor are outputs that do not line up with the labels.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.causality import LIMIT
from pilot.checks.padding import REPEAT_RTOL, output_difference
from pilot.checks.result import Finding
from pilot.data.task import IGNORE_INDEX, TaskData, logits_of


def _changed_labels(labels: torch.Tensor, width: int) -> tuple[torch.Tensor, int | None] | None:
    """Labels with one changed, and the position changed (None: a label per example); None when
    nothing can be changed (no counted label)."""
    changed = labels.clone()
    if labels.is_floating_point():  # soft or multi-hot labels: one row per example
        changed[0] = 1 - labels[0]
        return changed, None
    if labels.dim() == 1:
        changed[0] = (int(labels[0]) + 1) % max(width, 2)
        return changed, None
    counted = torch.nonzero(labels[0] != IGNORE_INDEX)
    if labels.dim() != 2 or not len(counted):
        return None
    last = int(counted[-1])
    changed[0, last] = (int(labels[0, last]) + 1) % max(width, 2)
    return changed, last


def _reachable(logits: torch.Tensor, position: int | None, width: int) -> torch.Tensor | None:
    """The outputs the changed label must not reach: all of them (a label per example), or those at
    positions up to its own (None when the outputs have no positions lining up with the labels)."""
    if position is None:
        return logits
    if logits.dim() < 3 or logits.shape[1] != width:
        return None
    return logits[:, : position + 1]


def label_reading_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding when the model's output moves with a label it must not read; what was compared."""
    if not encoded:
        return [], {"judged": False}
    batch = task.collate(encoded[:1])
    labels = batch.get("labels")
    with untouched(model), torch.no_grad():
        model.eval()
        first, again = task.forward(model, batch), task.forward(model, batch)
        outputs = [logits_of(first).detach().float(), logits_of(again).detach().float()]
        change = _changed_labels(labels, int(outputs[0].shape[-1])) if torch.is_tensor(labels) else None
        if change is None:
            return [], {"judged": False}
        outputs.append(logits_of(task.forward(model, {**batch, "labels": change[0]})).detach().float())
    seen = [_reachable(output, change[1], labels.shape[-1] if labels.dim() > 1 else 0) for output in outputs]
    if seen[0] is None or (repeat := output_difference(seen[1], seen[0])) is None or repeat > REPEAT_RTOL:
        return [], {"judged": False}
    difference = output_difference(seen[2], seen[0])
    details = {"judged": True, "largest_relative_difference": difference}
    if difference is None or difference <= LIMIT:
        return [], details
    where = (
        "the model's output"
        if change[1] is None
        else f"the outputs at positions up to {change[1]} (the changed label's own; teacher forcing reaches only later ones)"
    )
    return [
        Finding(
            f"forward reads the labels: changing {'this example' + chr(39) + 's label' if change[1] is None else f'its label at position {change[1]}'} "
            f"changes {where} by {difference:.3g} of their scale. The model sees the answer: the loss, the tiny "
            "subset and validation accuracy all read it, and nothing is predicted without it. Fix: forward must "
            "not give the model batch['labels'] for its output (a loss computed from them inside the model, as "
            "transformers computes it, is fine: its logits do not change)",
            "train",
            int(batch["index"][0]) if "index" in batch else None,
        )
    ], details
