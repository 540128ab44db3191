"""Part of ``inspect``: padding an example brings with it. An example that holds padding even collated
alone (a validation set tokenised once with ``padding="max_length"`` and ``padding_side="left"`` by an
older script, while training's examples are padded by collate) must give, at its real positions, the
output of the same example with that padding taken out. The padding check compares rows of a
micro-batch with each example alone, so it cannot see padding that is already in the example alone.

On a fresh model in evaluation mode, without gradient: per later split, where training's examples hold
no padding alone (a task that pads every split to one width trains as it evaluates: the padding check on
its batches judges it), the first ``EXAMPLES`` examples whose collated form holds padding, against the same batch with every padded position left out of each
tensor as wide as its mask. Judged as the padding check judges (``judged_limit``); not where the model
cannot run the example without its padding (a model built for one fixed width), nor where it does not
repeat its own output. Only where the collated example says where its padding is (an
``attention_mask``) and holds it in one run at its start or its end: real tokens that equal the pad id
are not padding.
"""

from __future__ import annotations

from typing import Any

import torch

from pilot.checks.batch_edges import untouched
from pilot.checks.leaks.model_views import ordered_splits
from pilot.checks.loss_probe import batch_size, padding_mask
from pilot.checks.padding import (
    LOW_PRECISION_RTOL,
    REPEAT_RTOL,
    RTOL,
    judged_limit,
    model_inputs,
    output_difference,
    row_scores,
    spread_of,
)
from pilot.checks.result import Finding
from pilot.data.task import TaskData, logits_of

EXAMPLES = 3  # per split
LOOKED_AT = 64  # examples of a split looked at for ones that hold their own padding


def without_padding(batch: dict[str, Any], real: torch.Tensor) -> dict[str, Any]:
    """The one-row ``batch`` with its padded positions (``real`` False) left out of every tensor as wide as
    the mask (dimension 1)."""
    return {
        key: value[:, real] if torch.is_tensor(value) and value.dim() >= 2 and value.shape[1] == len(real) else value
        for key, value in batch.items()
    }


def _one_side(real: torch.Tensor) -> bool:
    """Padding in one run at the start or at the end of the row, real positions between: what tokenising
    with ``padding="max_length"`` gives (a mask of zeros between real tokens is something else)."""
    edges = int((real[1:] != real[:-1]).sum()) if len(real) > 1 else 0
    return edges == 1


def _padded_alone(task: TaskData, items: list[dict[str, Any]]) -> bool:
    """Whether half or more of these examples hold padding collated alone (every split padded to one width)."""
    padded = 0
    for item in items:
        alone = task.collate([item])
        real = padding_mask(task, alone) if torch.is_tensor(alone.get("attention_mask")) else None
        padded += real is not None and batch_size(alone) == 1 and _one_side(real[0])
    return bool(items) and padded >= len(items) / 2


def _compared(task: TaskData, model: torch.nn.Module, item: dict[str, Any]) -> tuple | None:
    """(the example's output at its real positions, its output without its padding, its inputs), or None
    where it holds no padding, cannot be compared or does not repeat."""
    alone = task.collate([item])
    real = padding_mask(task, alone) if torch.is_tensor(alone.get("attention_mask")) else None
    if real is None or batch_size(alone) != 1 or not _one_side(real[0]):
        return None
    first, again = task.forward(model, alone), task.forward(model, alone)
    own = row_scores(task, first, alone, 0)
    repeat = output_difference(own, row_scores(task, again, alone, 0))
    if repeat is None or repeat > REPEAT_RTOL:
        return None
    stripped = without_padding(alone, real[0])
    try:
        bare = row_scores(task, task.forward(model, stripped), stripped, 0)
    except Exception:  # noqa: BLE001 - a model built for one width: not comparable
        return None
    limit = RTOL if logits_of(first).dtype in (torch.float32, torch.float64) else LOW_PRECISION_RTOL
    return own, bare, real[0], model_inputs(alone), limit, alone


def own_padding_findings(
    task: TaskData, model: torch.nn.Module, encoded: dict[str, list[dict[str, Any]]]
) -> tuple[list[Finding], dict[str, Any]]:
    """A finding per split (the first example judged) whose own padding moves its output; the numbers."""
    compared: dict[str, list] = {}
    if _padded_alone(task, encoded.get("train", [])[:LOOKED_AT]):  # trained as every split is read: consistent
        return [], {"training_examples_padded_alone": True}
    with untouched(model), torch.no_grad():
        model.eval()
        for split in ordered_splits(encoded):
            for item in encoded[split][:LOOKED_AT] if split != "train" else ():
                if len(compared.setdefault(split, [])) >= EXAMPLES:
                    break
                if (done := _compared(task, model, item)) is not None:
                    compared[split].append(done)
    pairs = [c for done in compared.values() for c in done]
    spread = spread_of([(own, inputs) for own, _, _, inputs, _, _ in pairs])
    details: dict[str, Any] = {"examples_compared": {s: len(c) for s, c in compared.items() if c}}
    findings = []
    for split, done in compared.items():
        for own, bare, real, _, limit, alone in done:
            difference = output_difference(own, bare)
            if difference is not None and difference > judged_limit(limit, spread):
                details[f"{split}_relative_difference"] = difference
                findings.append(_finding(split, alone, real, difference))
                break
    return findings, details


def _finding(split: str, alone: dict[str, Any], real: torch.Tensor, difference: float) -> Finding:
    left = not bool(real[0]) and bool(real[-1])
    side = "on the left" if left else "at its end" if bool(real[0]) else "around its tokens"
    fix = (
        "Its padding is on the left and the batch holds no position_ids: a model that numbers positions from "
        "the first column (GPT-2 and most transformers models) reads its real tokens at other positions. Fix: "
        "encode this split as training's examples are encoded (collate pads them), or pass position_ids = "
        "(attention_mask.cumsum(-1) - 1).clamp(min=0)"
        if left and "position_ids" not in alone
        else "Fix: encode this split as training's examples are encoded (collate pads them), and pass a mask the "
        "model obeys"
    )
    index = alone.get("index")
    return Finding(
        f"{split} examples arrive padded even alone ({int((~real).sum())} padding position(s) {side}, as encode "
        f"gives them), and the model reads that padding: this example's output at its real positions lies "
        f"{difference:.3g} of its scale away from its output without the padding. {fix}",
        split,
        int(index[0]) if torch.is_tensor(index) and index.numel() == 1 else None,
    )
