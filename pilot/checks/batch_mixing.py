"""Part of ``inspect``: is each example's output its own? In evaluation mode a correct model gives an
example the same output whatever else shares its micro-batch. A collate and a model that disagree on
the order of rows mix examples (multiple choice flattened choice-major, ``[c0 of every example, c1
of every example, ...]``, then viewed example-major ``view(B, 4)``): every loss and count still adds
up, and each example is trained on scores of other examples' candidates. Inspect's row checks cannot
see it where rows are not one per example (``[B x 4, T]``).

On a fresh model, without gradient: the first micro-batch of the training split, each example's
output row against the same example collated alone, where the output holds one row per example of
the same shape either way (class scores, a value, a score per candidate; per-position outputs change
width with the padding: the padding probe's). The limit is the padding probe's (a share of how far
apart different examples' outputs are, never under the float noise). Said once: a model that reads
the padding is the padding probe's finding, not repeated here.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.collated import collate_is_random
from pilot.checks.loss_probe import row_items
from pilot.checks.padding import (
    REPEAT_RTOL,
    RTOL,
    judged_limit,
    model_inputs,
    output_difference,
    spread_of,
)
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of


def batch_mixing_findings(
    task: TaskData, model: torch.nn.Module, encoded: list[dict[str, Any]], micro_batch: int, split: str = "train"
) -> tuple[list[Finding], dict[str, Any]]:
    chunk = encoded[: max(2, int(micro_batch))]
    if len(chunk) < 2:
        return [], {"judged": False}
    if collate_is_random(task, chunk):  # masks or crops drawn per call: alone, the example is another input
        return [], {"judged": False, "why": "collate is random (two calls differ)"}
    with untouched(model), torch.no_grad():
        model.eval()
        batch = task.collate(chunk)
        output = logits_of(task.forward(model, batch)).detach().float()
        if output.dim() == 0 or output.shape[0] != len(chunk):
            return [], {"judged": False, "why": "the output has no row per example"}
        own, differences = [], []
        for row, at in enumerate(row_items(batch, chunk)):
            alone_batch = task.collate([chunk[at]])
            alone = logits_of(task.forward(model, alone_batch)).detach().float()
            again = logits_of(task.forward(model, alone_batch)).detach().float()
            if alone.shape != (1, *output.shape[1:]):
                return [], {"judged": False, "why": "an example's output row changes shape with its micro-batch"}
            repeat = output_difference(again[0], alone[0])
            if repeat is None or repeat > REPEAT_RTOL:
                return [], {"judged": False, "why": "the model does not repeat its output"}
            own.append((alone[0], model_inputs(alone_batch)))
            differences.append((output_difference(output[row], alone[0]), row))
    spread = spread_of(own)
    limit = judged_limit(RTOL, spread)
    worst, row = max(differences, key=lambda pair: pair[0] if pair[0] is not None else -1.0)
    details = {"examples_compared": len(own), "largest_relative_difference": worst, "limit": limit}
    if worst is None or worst <= limit:
        return [], details
    padded = _padded_keys(batch, task.collate([chunk[row_items(batch, chunk)[row]]]))
    cause = (
        f"its output depends on the padding its micro-batch adds ({padded}): a model that reads the padded "
        "positions — a mean or sum over every frame or token, attention or a recurrent layer given no mask or length — does this. Fix: "
        "leave the padding out of the model's reductions (a mask or the lengths), so an example's output is its "
        "own whatever pads it"
        if padded
        else "the batch mixes examples, so each is trained on scores computed from others. A collate and a model "
        "that order rows differently do this (candidates flattened choice-major, [c0 of "
        "every example, c1 of every example, ...], then viewed example-major with view(B, choices)). Fix: "
        "flatten example-major (for each example, its candidates) or reshape as the collate ordered the rows"
    )
    return [
        Finding(
            f"this example's output in its micro-batch of {len(chunk)} is {worst:.3g} of its scale away from its "
            f"output collated alone (different examples' outputs differ by {spread if spread is not None else 0:.3g}): "
            + cause,
            split,
            int(batch["index"][row]) if torch.is_tensor(batch.get("index")) and len(batch["index"]) > row else None,
        )
    ], details


def _padded_keys(batch: dict[str, Any], alone: dict[str, Any]) -> str:
    """The batch's tensors longer than the same example's collated alone (the batch padded it), said with
    their lengths; "" where none is."""
    grown = []
    for key, value in batch.items():
        single = alone.get(key)
        if torch.is_tensor(value) and torch.is_tensor(single) and value.dim() == single.dim() >= 2:
            if value.shape[1:] != single.shape[1:]:
                grown.append(f"'{key}' {list(single.shape[1:])} alone, {list(value.shape[1:])} in the batch")
    return "; ".join(grown[:3])
